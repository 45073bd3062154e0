// SPDX-License-Identifier: MIT
/*
 * dm_domain: device memory and parent/thread domains as an application sees
 * them, written against plain libibverbs (what rdma-core's suite does not
 * check: the limits, the reference rules, that the allocators really serve
 * the objects). One device, RC QPs looped back to its own GID. Prints TAP
 * lines; exit status 0 unless a check failed.
 *
 *   dm_domain DEVICE [GID_INDEX]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "loopback.h"

#define MSG 4096

/* --- a counting allocator for the parent domain ------------------------------ */

struct counts {
	int allocs, frees, defaults;
	int answer_default; /* answer IBV_ALLOCATOR_USE_DEFAULT */
};

static void *count_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
			 uint64_t resource_type)
{
	struct counts *c = pd_context;
	void *p;

	(void)pd, (void)resource_type;
	if (c->answer_default) {
		c->defaults++;
		return IBV_ALLOCATOR_USE_DEFAULT;
	}
	if (posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment, size))
		return NULL;
	c->allocs++;
	return p;
}

static void count_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type)
{
	struct counts *c = pd_context;

	(void)pd, (void)resource_type;
	c->frees++;
	free(ptr);
}

static struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(pd, &a);
}

/* --- device memory --------------------------------------------------------------- */

static void dm_limits(struct ibv_context *ctx, struct ibv_pd *pd, uint64_t max)
{
	struct ibv_alloc_dm_attr attr = { .length = max };
	struct ibv_dm *dm, *more;
	struct ibv_mr *mr;
	uint8_t b[8] = { 0 };

	dm = ibv_alloc_dm(ctx, &attr);
	check(dm != NULL, "DM: all of max_dm_size (%llu B) in one allocation",
	      (unsigned long long)max);
	if (!dm)
		return;
	attr.length = 4;
	more = ibv_alloc_dm(ctx, &attr);
	check(!more && errno == ENOMEM, "DM: beyond max_dm_size in all: ENOMEM (errno %d)", errno);
	check(ibv_memcpy_to_dm(dm, max - 4, b, 4) == 0, "DM: copy into its last 4 bytes");
	check(ibv_memcpy_to_dm(dm, max - 4, b, 8) == EINVAL, "DM: a copy running past its end: EINVAL");
	check(ibv_memcpy_to_dm(dm, UINT64_MAX - 3, b, 8) == EINVAL,
	      "DM: an offset that wraps: EINVAL");
	check(ibv_memcpy_from_dm(b, dm, 2, 4) == EINVAL, "DM: an unaligned offset: EINVAL");
	mr = ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_LOCAL_WRITE);
	check(!mr && errno == EINVAL, "DM MR without IBV_ACCESS_ZERO_BASED: EINVAL");
	mr = ibv_reg_dm_mr(pd, dm, max - 60, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
	check(!mr && errno == EINVAL, "DM MR past the DM's end: EINVAL");
	mr = ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
	check(mr != NULL, "DM MR over its first 64 bytes");
	check(ibv_free_dm(dm) == EBUSY, "DM with an MR over it cannot be freed: EBUSY");
	if (mr)
		check(ibv_dereg_mr(mr) == 0, "DM MR deregistered");
	check(ibv_free_dm(dm) == 0, "DM freed once its MR is gone");
	attr.length = max;
	dm = ibv_alloc_dm(ctx, &attr);
	check(dm != NULL, "DM: max_dm_size available again after the free");
	if (dm)
		ibv_free_dm(dm);
}

/* A WRITE from an ordinary MR into a DM MR (and a READ back) between two QPs
 * of the device: the transport places into and reads from device memory. */
static void dm_traffic(struct ibv_context *ctx, struct ibv_pd *pd, union ibv_gid *gid, int gidx)
{
	struct ibv_alloc_dm_attr attr = { .length = 2 * MSG };
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = cq ? rc_qp(pd, cq) : NULL, *b = cq ? rc_qp(pd, cq) : NULL;
	const unsigned acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ;
	static uint8_t src[MSG], back[MSG], got[MSG];
	struct ibv_dm *dm = ibv_alloc_dm(ctx, &attr);
	struct ibv_mr *smr = NULL, *bmr = NULL, *dmr = NULL;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;

	if (!cq || !a || !b || !dm) {
		check(0, "DM traffic: CQ, QPs and DM created");
		goto out;
	}
	for (int i = 0; i < MSG; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	smr = ibv_reg_mr(pd, src, MSG, acc);
	bmr = ibv_reg_mr(pd, back, MSG, acc);
	/* The DM MR covers its second half: remote address 0 is DM offset MSG. */
	dmr = ibv_reg_dm_mr(pd, dm, MSG, MSG, IBV_ACCESS_ZERO_BASED | acc);
	if (!smr || !bmr || !dmr || connect_qp(a, b->qp_num, gid, gidx, acc) ||
	    connect_qp(b, a->qp_num, gid, gidx, acc)) {
		check(0, "DM traffic: MRs registered and QPs connected");
		goto out;
	}
	check(dmr->addr == NULL, "DM MR: no address of the DM's pages reaches the application");
	memset(&wr, 0, sizeof(wr));
	sge = (struct ibv_sge){ .addr = (uintptr_t)src, .length = MSG, .lkey = smr->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = 0;
	wr.wr.rdma.rkey = dmr->rkey;
	check(ibv_post_send(a, &wr, &bad) == 0 && poll1(cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS,
	      "RDMA WRITE of %d B into device memory (remote address 0, zero-based)", MSG);
	memset(got, 0, sizeof(got));
	check(ibv_memcpy_from_dm(got, dm, MSG, MSG) == 0 && memcmp(got, src, MSG) == 0,
	      "ibv_memcpy_from_dm reads what the WRITE placed, at DM offset %d", MSG);
	check(ibv_memcpy_from_dm(got, dm, 0, MSG) == 0 && got[0] == 0 && got[MSG - 1] == 0,
	      "the DM's first half (outside the MR) untouched");
	sge = (struct ibv_sge){ .addr = (uintptr_t)back, .length = MSG, .lkey = bmr->lkey };
	wr.opcode = IBV_WR_RDMA_READ;
	check(ibv_post_send(a, &wr, &bad) == 0 && poll1(cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
		      memcmp(back, src, MSG) == 0,
	      "RDMA READ of the device memory back, byte for byte");
	wr.wr.rdma.remote_addr = MSG - 8;
	sge.length = 16;
	memset(&wc, 0, sizeof(wc));
	if (ibv_post_send(a, &wr, &bad) || poll1(cq, &wc) != 1)
		wc.status = IBV_WC_GENERAL_ERR;
	check(wc.status == IBV_WC_REM_ACCESS_ERR,
	      "a READ running past the DM MR's end: remote access error (status %d)", wc.status);
out:
	if (dmr)
		ibv_dereg_mr(dmr);
	if (bmr)
		ibv_dereg_mr(bmr);
	if (smr)
		ibv_dereg_mr(smr);
	if (dm)
		check(ibv_free_dm(dm) == 0, "DM freed after its traffic");
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (cq)
		ibv_destroy_cq(cq);
}

/* --- parent and thread domains --------------------------------------------------- */

static void domains(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_td_init_attr tda = { 0 };
	struct ibv_td *td = ibv_alloc_td(ctx, &tda);
	struct counts c = { 0 };
	struct ibv_parent_domain_init_attr pa = {
		.pd = pd,
		.td = td,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = count_alloc,
		.free = count_free,
		.pd_context = &c,
	};
	struct ibv_pd *parent, *nested;
	struct ibv_cq_init_attr_ex cqa = {
		.cqe = 16,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_cq_ex *cqx;
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	check(td != NULL, "ibv_alloc_td");
	parent = ibv_alloc_parent_domain(ctx, &pa);
	check(parent != NULL && parent->handle == pd->handle,
	      "ibv_alloc_parent_domain: a PD with its protection domain's handle");
	if (!parent)
		goto out;
	pa.pd = parent;
	nested = ibv_alloc_parent_domain(ctx, &pa);
	check(!nested && errno == EINVAL, "a parent domain of a parent domain: EINVAL");
	check(ibv_dealloc_pd(pd) == EBUSY, "the PD under a parent domain cannot go: EBUSY");
	check(td && ibv_dealloc_td(td) == EBUSY, "the TD of a parent domain cannot go: EBUSY");

	cqa.parent_domain = parent;
	cqx = ibv_create_cq_ex(ctx, &cqa);
	srq = ibv_create_srq(parent, &sa);
	qp = cqx ? rc_qp(parent, ibv_cq_ex_to_cq(cqx)) : NULL;
	check(cqx && srq && qp && c.allocs == 3,
	      "CQ, SRQ and QP through the parent domain: its allocator served all three (%d)",
	      c.allocs);
	check(qp && qp->pd == parent, "the QP's pd is the parent domain");
	check(ibv_dealloc_pd(parent) == EBUSY,
	      "a parent domain whose allocator holds objects cannot go: EBUSY");
	if (qp)
		ibv_destroy_qp(qp);
	if (srq)
		ibv_destroy_srq(srq);
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	check(c.frees == c.allocs, "destroying them gave each back to the allocator (%d of %d)",
	      c.frees, c.allocs);

	c.answer_default = 1;
	cqx = ibv_create_cq_ex(ctx, &cqa);
	qp = cqx ? rc_qp(parent, ibv_cq_ex_to_cq(cqx)) : NULL;
	check(qp && c.defaults == 2 && c.allocs == 3,
	      "an allocator answering IBV_ALLOCATOR_USE_DEFAULT: the default serves (%d asked)",
	      c.defaults);
	if (qp)
		ibv_destroy_qp(qp);
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	check(c.frees == 3, "... and those never reach its free (%d frees)", c.frees);

	cqa.parent_domain = pd;
	cqx = ibv_create_cq_ex(ctx, &cqa);
	check(!cqx && errno == EINVAL, "a CQ whose parent_domain is a plain PD: EINVAL");
	check(ibv_dealloc_pd(parent) == 0, "the parent domain deallocated");
out:
	if (td)
		check(ibv_dealloc_td(td) == 0, "the TD deallocated after its parent domain");
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	union ibv_gid gid;
	int gidx = argc > 2 ? atoi(argv[2]) : 1;

	if (argc < 2) {
		fprintf(stderr, "usage: dm_domain DEVICE [GID_INDEX]\n");
		return 2;
	}
	ctx = loopback_open_device(argv[1]);
	if (!ctx) {
		printf("not ok - device %s opened\n", argv[1]);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_device_ex(ctx, NULL, &attr) || ibv_query_gid(ctx, 1, gidx, &gid)) {
		printf("not ok - PD, device attributes and GID %d\n", gidx);
		return 1;
	}
	check(attr.max_dm_size > 0, "ibv_query_device_ex: max_dm_size %llu",
	      (unsigned long long)attr.max_dm_size);
	if (attr.max_dm_size >= 2 * MSG) {
		dm_limits(ctx, pd, attr.max_dm_size);
		dm_traffic(ctx, pd, &gid, gidx);
	}
	domains(ctx, pd);
	check(ibv_dealloc_pd(pd) == 0, "the PD deallocated at the end");
	ibv_close_device(ctx);
	return failed;
}
