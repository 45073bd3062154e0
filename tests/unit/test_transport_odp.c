// SPDX-License-Identifier: MIT
/*
 * On-demand paging in the core (src/transport/odp.c): a region registered
 * with xrxe_tp_mr_reg_odp is reached only through ops->odp_rw, here a
 * simulated address space of 64 pages at an address nothing is mapped at in
 * this process (so a stray dereference would crash the test), with pages
 * that can be taken away. Each access point: the responder's WRITE
 * placement, READ source and atomics, the requester's gather, receive
 * placement; a page that is not there gives the IBA's error (remote access
 * error NAK, local protection error), never a crash; the implicit region.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"

#define PG 4096u
#define NPG 64u
#define APP 0x7e5500000000ull /* where the simulated application's pages are */
#define ALL                                                                                \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |       \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND)

struct space {
	struct xrxe_tph_odp odp;
	uint8_t mem[NPG * PG];
	bool gone[NPG]; /* page unmapped */
	unsigned reads, writes;
};

static int space_rw(struct xrxe_tph_odp *o, uint64_t addr, void *buf, uint32_t n, bool write)
{
	struct space *s = (struct space *)o;
	uint64_t off = addr - APP;

	if (addr < APP || off > sizeof(s->mem) || n > sizeof(s->mem) - off)
		return -EFAULT;
	for (uint64_t pg = off / PG; pg <= (off + n - 1) / PG; pg++)
		if (s->gone[pg])
			return -EFAULT;
	if (write) {
		memcpy(s->mem + off, buf, n);
		s->writes++;
	} else {
		memcpy(buf, s->mem + off, n);
		s->reads++;
	}
	return 0;
}

struct env {
	struct xrxe_tph_pair p;
	struct space sp[2];
	uint8_t plain[2][NPG * PG];
	uint32_t odp_key[2], plain_key[2];
	uint64_t iova[2]; /* where each side's ODP region starts for its peers */
};

/* Each side: one ODP region over its whole space at iova (differing from the
 * application's address on side 1) and one plain region. */
static struct env *env_new(void)
{
	struct env *e = calloc(1, sizeof(*e));

	cr_assert(e);
	cr_assert_eq(xrxe_tph_pair_init(&e->p, 11, IBV_QPT_RC, NULL, true), 0);
	for (int i = 0; i < 2; i++) {
		struct xrxe_tph_side *s = &e->p.h.side[i];
		uint32_t rkey;

		e->sp[i].odp.rw = space_rw;
		e->iova[i] = i ? 0x10000 : APP;
		cr_assert_eq(xrxe_tp_mr_reg_odp(s->tp, s->pdn, &e->sp[i].odp, APP, e->iova[i],
						NPG * PG, ALL, &e->odp_key[i], &rkey),
			     0);
		e->plain_key[i] = xrxe_tph_mr(s, e->plain[i], sizeof(e->plain[i]),
					      ALL & ~(uint32_t)IBV_ACCESS_ON_DEMAND, 0);
	}
	return e;
}

static void env_free(struct env *e)
{
	xrxe_tph_pair_fini(&e->p);
	free(e);
}

static struct ibv_wc run_one(struct env *e, struct xrxe_tph_cq *cq)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	xrxe_tph_run(&e->p.h, 2000000000ull);
	cr_assert_eq(xrxe_tph_poll_cq(cq, &wc, 1), 1, "no completion");
	return wc;
}

static void post_rdma(struct env *e, uint32_t op, const struct xrxe_sge *sge, uint64_t raddr,
		      uint32_t rkey)
{
	struct xrxe_tph_send w = { .wr_id = 1, .opcode = op, .sge = sge, .nsge = 1,
				   .raddr = raddr, .rkey = rkey, .flags = IBV_SEND_SIGNALED };

	cr_assert_eq(xrxe_tph_post_send(e->p.a, &w), 0);
}

static struct xrxe_tp_stats stats(struct env *e, int side)
{
	struct xrxe_tp_stats st;

	xrxe_tp_get_stats(e->p.h.side[side].tp, &st);
	return st;
}

Test(odp, write_and_read_through_odp_rw)
{
	struct env *e = env_new();
	const uint32_t len = 40 * 1024 + 17; /* 41 packets at MTU 1024 */
	struct xrxe_sge sge = { .addr = (uintptr_t)e->plain[0], .length = len,
				.lkey = e->plain_key[0] };
	struct ibv_wc wc;

	for (uint32_t i = 0; i < len; i++)
		e->plain[0][i] = (uint8_t)(i * 7 + 1);
	/* side 1's region at iova 0x10000: remote offset 3 pages + 5 */
	post_rdma(e, IBV_WR_RDMA_WRITE, &sge, e->iova[1] + 3 * PG + 5, e->odp_key[1]);
	wc = run_one(e, e->p.ca);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert(memcmp(e->sp[1].mem + 3 * PG + 5, e->plain[0], len) == 0,
		  "the WRITE landed at the application's address of the iova");
	cr_assert_eq(stats(e, 1).odp_write_bytes, len);
	memset(e->plain[0], 0, len);
	post_rdma(e, IBV_WR_RDMA_READ, &sge, e->iova[1] + 3 * PG + 5, e->odp_key[1]);
	wc = run_one(e, e->p.ca);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert(memcmp(e->sp[1].mem + 3 * PG + 5, e->plain[0], len) == 0, "READ back");
	cr_assert_eq(stats(e, 1).odp_read_bytes, len);
	/* and from ODP to ODP: gathered from side 0's space, placed in side 1's */
	for (uint32_t i = 0; i < len; i++)
		e->sp[0].mem[PG + i] = (uint8_t)(i ^ 0x5a);
	sge = (struct xrxe_sge){ .addr = APP + PG, .length = len, .lkey = e->odp_key[0] };
	post_rdma(e, IBV_WR_RDMA_WRITE, &sge, e->iova[1], e->odp_key[1]);
	wc = run_one(e, e->p.ca);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert(memcmp(e->sp[1].mem, e->sp[0].mem + PG, len) == 0, "ODP to ODP");
	cr_assert_eq(stats(e, 0).odp_faults + stats(e, 1).odp_faults, 0);
	env_free(e);
}

Test(odp, write_into_missing_page_is_remote_access_error)
{
	struct env *e = env_new();
	struct xrxe_sge sge = { .addr = (uintptr_t)e->plain[0], .length = 8 * PG,
				.lkey = e->plain_key[0] };
	struct ibv_wc wc;

	e->sp[1].gone[6] = true;
	post_rdma(e, IBV_WR_RDMA_WRITE, &sge, e->iova[1] + 2 * PG, e->odp_key[1]);
	wc = run_one(e, e->p.ca);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR, "status %d", wc.status);
	cr_assert_geq(stats(e, 1).odp_faults, 1);
	cr_assert_eq(xrxe_tph_state(e->p.b), IBV_QPS_ERR);
	cr_assert_eq(e->p.h.side[1].last_async, IBV_EVENT_QP_ACCESS_ERR);
	env_free(e);
}

Test(odp, read_of_missing_page_is_remote_access_error)
{
	struct env *e = env_new();
	struct xrxe_sge sge = { .addr = (uintptr_t)e->plain[0], .length = 8 * PG,
				.lkey = e->plain_key[0] };
	struct ibv_wc wc;

	e->sp[1].gone[9] = true; /* the response stops at its 8th packet */
	post_rdma(e, IBV_WR_RDMA_READ, &sge, e->iova[1] + 5 * PG, e->odp_key[1]);
	wc = run_one(e, e->p.ca);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR, "status %d", wc.status);
	env_free(e);
}

Test(odp, gather_from_missing_page_is_local_protection_error)
{
	struct env *e = env_new();
	struct xrxe_sge sge = { .addr = APP + 2 * PG, .length = 3 * PG, .lkey = e->odp_key[0] };
	struct ibv_wc wc;
	uint64_t sent;

	e->sp[0].gone[3] = true;
	post_rdma(e, IBV_WR_RDMA_WRITE, &sge, (uintptr_t)e->plain[1], e->plain_key[1]);
	wc = run_one(e, e->p.ca);
	cr_assert_eq(wc.status, IBV_WC_LOC_PROT_ERR, "status %d", wc.status);
	/* the first page went out (one packet per KiB), nothing of the hole */
	sent = e->p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_FIRST)] +
	       e->p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_MIDDLE)];
	cr_assert_eq(sent, 4, "%llu WRITE packets sent", (unsigned long long)sent);
	cr_assert_eq(e->p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_LAST)], 0);
	env_free(e);
}

Test(odp, receive_into_odp_and_into_missing_page)
{
	struct env *e = env_new();
	/* side 1's region: an lkey addresses it by its iova too */
	struct xrxe_sge rs = { .addr = e->iova[1] + 10 * PG + 3, .length = 4 * PG,
			       .lkey = e->odp_key[1] };
	struct xrxe_sge ss = { .addr = (uintptr_t)e->plain[0], .length = 3 * PG + 9,
			       .lkey = e->plain_key[0] };
	struct xrxe_tph_send w = { .wr_id = 1, .opcode = IBV_WR_SEND, .sge = &ss, .nsge = 1,
				   .flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	for (uint32_t i = 0; i < ss.length; i++)
		e->plain[0][i] = (uint8_t)(i * 3);
	cr_assert_eq(xrxe_tph_post_recv(e->p.b, 7, &rs, 1), 0);
	cr_assert_eq(xrxe_tph_post_send(e->p.a, &w), 0);
	wc = run_one(e, e->p.cb);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, ss.length);
	cr_assert(memcmp(e->sp[1].mem + 10 * PG + 3, e->plain[0], ss.length) == 0);
	cr_assert_eq(run_one(e, e->p.ca).status, IBV_WC_SUCCESS);
	/* the next receive buffer has a page missing */
	e->sp[1].gone[11] = true;
	cr_assert_eq(xrxe_tph_post_recv(e->p.b, 8, &rs, 1), 0);
	cr_assert_eq(xrxe_tph_post_send(e->p.a, &w), 0);
	wc = run_one(e, e->p.cb);
	cr_assert_eq(wc.status, IBV_WC_LOC_PROT_ERR, "receive status %d", wc.status);
	cr_assert_eq(run_one(e, e->p.ca).status, IBV_WC_REM_OP_ERR);
	env_free(e);
}

Test(odp, atomics_and_atomic_write)
{
	struct env *e = env_new();
	struct xrxe_sge sge = { .addr = (uintptr_t)e->plain[0], .length = 8,
				.lkey = e->plain_key[0] };
	struct xrxe_tph_send w = { .wr_id = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .sge = &sge,
				   .nsge = 1, .raddr = e->iova[1] + 40 * PG + 8,
				   .rkey = e->odp_key[1], .compare_add = 9,
				   .flags = IBV_SEND_SIGNALED };
	struct xrxe_send_wqe aw;
	uint64_t v = 100, got, val = 0x0102030405060708ull;

	memcpy(e->sp[1].mem + 40 * PG + 8, &v, 8);
	cr_assert_eq(xrxe_tph_post_send(e->p.a, &w), 0);
	cr_assert_eq(run_one(e, e->p.ca).status, IBV_WC_SUCCESS);
	memcpy(&got, e->plain[0], 8);
	cr_assert_eq(got, 100);
	memcpy(&got, e->sp[1].mem + 40 * PG + 8, 8);
	cr_assert_eq(got, 109);
	w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	w.compare_add = 108; /* no match: nothing written, and not even a write tried */
	w.swap = 1;
	e->sp[1].writes = 0;
	cr_assert_eq(xrxe_tph_post_send(e->p.a, &w), 0);
	cr_assert_eq(run_one(e, e->p.ca).status, IBV_WC_SUCCESS);
	memcpy(&got, e->sp[1].mem + 40 * PG + 8, 8);
	cr_assert_eq(got, 109);
	cr_assert_eq(e->sp[1].writes, 0);
	w.compare_add = 109;
	cr_assert_eq(xrxe_tph_post_send(e->p.a, &w), 0);
	cr_assert_eq(run_one(e, e->p.ca).status, IBV_WC_SUCCESS);
	memcpy(&got, e->sp[1].mem + 40 * PG + 8, 8);
	cr_assert_eq(got, 1);
	/* ATOMIC_WRITE (IBA annex A19) */
	memset(&aw, 0, sizeof(aw));
	aw.wr_id = 2;
	aw.opcode = IBV_WR_ATOMIC_WRITE;
	aw.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	aw.inline_len = 8;
	aw.wr.rdma.remote_addr = e->iova[1] + 41 * PG;
	aw.wr.rdma.rkey = e->odp_key[1];
	cr_assert_eq(xrxe_tph_post_send_raw(e->p.a, &aw, &val, 8), 0);
	cr_assert_eq(run_one(e, e->p.ca).status, IBV_WC_SUCCESS);
	memcpy(&got, e->sp[1].mem + 41 * PG, 8);
	cr_assert_eq(got, val);
	/* an atomic on a missing page */
	e->sp[1].gone[40] = true;
	cr_assert_eq(xrxe_tph_post_send(e->p.a, &w), 0);
	cr_assert_eq(run_one(e, e->p.ca).status, IBV_WC_REM_ACCESS_ERR);
	env_free(e);
}

Test(odp, implicit_region_spans_the_address_space)
{
	struct env *e = env_new();
	struct xrxe_tph_side *s = &e->p.h.side[1];
	struct xrxe_sge sge = { .addr = (uintptr_t)e->plain[0], .length = 2 * PG,
				.lkey = e->plain_key[0] };
	uint32_t lkey, rkey;

	cr_assert_eq(xrxe_tp_mr_reg_odp(s->tp, s->pdn, &e->sp[1].odp, 0, 0, UINT64_MAX, ALL,
					&lkey, &rkey),
		     0);
	memset(e->plain[0], 0x77, 2 * PG);
	post_rdma(e, IBV_WR_RDMA_WRITE, &sge, APP + 60 * PG, rkey);
	cr_assert_eq(run_one(e, e->p.ca).status, IBV_WC_SUCCESS);
	cr_assert_eq(e->sp[1].mem[60 * PG], 0x77);
	cr_assert_eq(e->sp[1].mem[62 * PG - 1], 0x77);
	/* an address outside the simulated process: nothing there */
	post_rdma(e, IBV_WR_RDMA_WRITE, &sge, APP - 2 * PG, rkey);
	cr_assert_eq(run_one(e, e->p.ca).status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(xrxe_tp_mr_dereg(s->tp, lkey), 0);
	env_free(e);
}
