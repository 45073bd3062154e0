// SPDX-License-Identifier: MIT
/*
 * Tag matching SRQs over the in-memory wire (tm_srq.c): a matched EAGER lands
 * in its tagged buffer without the TMH; an unexpected message that meets an
 * empty SRQ (RNR) is counted once, when it is delivered; the list
 * operations' checks and completions. Rendezvous (tm_rndv.c): a matched
 * RNDV completes MATCH, the receiving QP (no send queue of the
 * application's) READs the sender's buffer and completes DATA_VALID, then
 * sends the FIN; more rendezvous than it has slots for wait (RNR) and all
 * complete, also over a lossy wire; hostile RVHs (a length past the tagged
 * buffer, a bad rkey) fail the tagged buffer, never read or place more.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"
#include "transport/tm.h"

#define SEC 1000000000ull

static uint8_t abuf[1 << 14], bbuf[1 << 15];

struct tm_env {
	struct xrxe_tph h;
	struct xrxe_tph_conn conn;
	struct xrxe_tph_cq *ca, *cb;
	struct xrxe_tph_srq *srq;
	struct xrxe_tph_qp *a, *b;
	uint32_t lka, lkb;
	uint32_t rka; /* abuf's second half, remotely readable (the RVHs' target) */
};

static void tm_env_init(struct tm_env *e, uint32_t max_tags)
{
	struct xrxe_tph_srq *q = calloc(1, sizeof(*q));

	xrxe_tph_init(&e->h, 17, 4096);
	xrxe_tph_conn_default(&e->conn);
	e->ca = xrxe_tph_cq_create(&e->h.side[0], 256);
	e->cb = xrxe_tph_cq_create(&e->h.side[1], 256);
	/* as xrxe_tph_srq_create, a TM SRQ: the harness frees it */
	q->s = &e->h.side[1];
	q->slots = 16;
	q->elem = 128;
	q->ring = xrxe_tph_ring_alloc(q->slots, q->elem);
	cr_assert_eq(xrxe_tp_srq_create_tm(q->s->tp, q->s->pdn, e->cb->cq, max_tags, q->ring, q->slots, 4,
					   q, &q->srq), 0);
	e->h.srqs[e->h.nsrqs++] = q;
	e->srq = q;
	e->a = xrxe_tph_qp_create(&e->h.side[0], IBV_QPT_RC, e->ca, e->ca, 64, 64, true);
	/* b: the smallest send ring (2 slots), never posted to: its READs
	 * and FINs are its own (rdma-core's test: max_send_wr = 0) */
	e->b = xrxe_tph_qp_create_srq(&e->h.side[1], IBV_QPT_RC, e->cb, e->cb, 2, q, true);
	cr_assert_eq(xrxe_tph_connect(e->a, e->b, &e->conn), 0);
	for (unsigned i = 0; i < sizeof(abuf); i++)
		abuf[i] = (uint8_t)(i * 7 + 3);
	memset(bbuf, 0, sizeof(bbuf));
	e->lka = xrxe_tph_mr(&e->h.side[0], abuf, sizeof(abuf) / 2, IBV_ACCESS_LOCAL_WRITE, 0);
	e->rka = xrxe_tph_mr(&e->h.side[0], abuf + sizeof(abuf) / 2, sizeof(abuf) / 2,
			     IBV_ACCESS_REMOTE_READ, 0);
	e->lkb = xrxe_tph_mr(&e->h.side[1], bbuf, sizeof(bbuf), IBV_ACCESS_LOCAL_WRITE, 0);
}

static void tmh_at(uint8_t *p, uint8_t op, uint64_t tag)
{
	p[0] = op;
	for (int i = 0; i < 8; i++)
		p[8 + i] = (uint8_t)(tag >> (56 - 8 * i));
}

static int op_add(struct tm_env *e, uint64_t wr_id, uint64_t tag, uint32_t unexp, uint32_t off,
		  uint32_t len, uint32_t *handle)
{
	struct xrxe_ctrl_srq_op op = { .op = IBV_WR_TAG_ADD, .flags = IBV_OPS_SIGNALED,
				       .unexp_cnt = unexp, .num_sge = 1, .wr_id = wr_id,
				       .recv_wr_id = wr_id, .tag = tag, .mask = 0xffff };

	op.sge = (struct xrxe_sge){ (uintptr_t)bbuf + off, len, e->lkb };
	return xrxe_tp_srq_op(e->h.side[1].tp, e->srq->srq, &op, handle);
}

static void send_msg(struct tm_env *e, uint32_t len)
{
	struct xrxe_sge s = { (uintptr_t)abuf, len, e->lka };

	cr_assert_eq(xrxe_tph_post_send(e->a, &(struct xrxe_tph_send){
		.wr_id = 1, .opcode = IBV_WR_SEND, .sge = &s, .nsge = 1 }), 0);
}

Test(tm_srq, eager_match_unexpected_after_rnr_and_hostile_rndv)
{
	struct tm_env e;
	struct ibv_wc wc[8];
	uint32_t h1, h2;
	struct xrxe_sge s;

	tm_env_init(&e, 32);
	/* ADD tag 5: completes TM_ADD, no sync needed */
	cr_assert_eq(op_add(&e, 50, 5, 0, 0, 8192, &h1), 0);
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].opcode, IBV_WC_TM_ADD);
	cr_assert_eq(wc[0].wr_id, 50);
	cr_assert_eq(wc[0].wc_flags & IBV_WC_TM_SYNC_REQ, 0);
	/* EAGER tag 0x10005 (mask 0xffff) over 3 packets: the tagged buffer */
	tmh_at(abuf, 3, 0x10005);
	send_msg(&e, 3000);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].opcode, IBV_WC_TM_RECV);
	cr_assert_eq(wc[0].wr_id, 50);
	cr_assert_eq(wc[0].wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID),
		     IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID);
	cr_assert_eq(wc[0].byte_len, 3000 - 16);
	cr_assert_eq(memcmp(bbuf, abuf + 16, 3000 - 16), 0);
	cr_assert_eq(xrxe_tph_poll_cq(e.ca, wc, 8), 1);
	/* the entry was consumed: its DEL completes TM_ERR */
	struct xrxe_ctrl_srq_op del = { .op = IBV_WR_TAG_DEL, .flags = IBV_OPS_SIGNALED,
					.handle = h1, .wr_id = 51 };
	cr_assert_eq(xrxe_tp_srq_op(e.h.side[1].tp, e.srq->srq, &del, &h2), 0);
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].opcode, IBV_WC_TM_DEL);
	cr_assert_eq(wc[0].status, IBV_WC_TM_ERR);

	/* unexpected (no entry) with the SRQ empty: RNR, then delivered once a
	 * WQE is posted, whole, and counted once */
	tmh_at(abuf, 3, 77);
	send_msg(&e, 100);
	xrxe_tph_run(&e.h, SEC / 1000);
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 0);
	s = (struct xrxe_sge){ (uintptr_t)bbuf + 16384, 4096, e.lkb };
	cr_assert_eq(xrxe_tph_post_srq_recv(e.srq, 60, &s, 1), 0);
	cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].opcode, IBV_WC_TM_RECV);
	cr_assert_eq(wc[0].wr_id, 60);
	cr_assert_eq(wc[0].wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID), 0);
	cr_assert_eq(wc[0].byte_len, 100);
	cr_assert_eq(memcmp(bbuf + 16384, abuf, 100), 0);
	cr_assert_eq(xrxe_tph_poll_cq(e.ca, wc, 8), 1);
	/* software saw 0 unexpected: an ADD now waits for a sync; 1 is right */
	cr_assert_eq(op_add(&e, 52, 6, 0, 0, 8192, &h1), 0);
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].wc_flags & IBV_WC_TM_SYNC_REQ, IBV_WC_TM_SYNC_REQ);
	cr_assert_eq(op_add(&e, 53, 7, 1, 0, 8192, &h2), 0);
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].wc_flags & IBV_WC_TM_SYNC_REQ, 0, "counted once through the RNR");

	/* RNDV tag 7 whose RVH names nonsense (va, rkey, a 4 GiB length):
	 * matched, the tagged buffer fails its length before any READ,
	 * nothing placed, the QP lives */
	memset(bbuf, 0xee, 64);
	tmh_at(abuf, 1, 7);
	memset(abuf + 16, 0xff, 16);
	send_msg(&e, 64);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_LEN_ERR);
	cr_assert_eq(wc[0].wc_flags & IBV_WC_TM_MATCH, IBV_WC_TM_MATCH);
	cr_assert_eq(wc[0].opcode, IBV_WC_TM_RECV);
	cr_assert_eq(wc[0].wr_id, 53);
	cr_assert_eq(bbuf[0], 0xee);
	cr_assert_eq(xrxe_tph_poll_cq(e.ca, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(xrxe_tph_state(e.b), IBV_QPS_RTS);
	xrxe_tph_fini(&e.h);
}

Test(tm_srq, operations_from_the_application_are_checked)
{
	struct tm_env e;
	struct xrxe_ctrl_srq_op op;
	uint32_t h;

	tm_env_init(&e, 8);
	memset(&op, 0, sizeof(op));
	op.op = 99;
	cr_assert_eq(xrxe_tp_srq_op(e.h.side[1].tp, e.srq->srq, &op, &h), -EINVAL);
	op.op = IBV_WR_TAG_ADD;
	op.num_sge = 2;
	cr_assert_eq(xrxe_tp_srq_op(e.h.side[1].tp, e.srq->srq, &op, &h), -EINVAL);
	op.num_sge = 0;
	op.flags = 1u << 7;
	cr_assert_eq(xrxe_tp_srq_op(e.h.side[1].tp, e.srq->srq, &op, &h), -EINVAL);
	op.flags = 0;
	for (int i = 0; i < 8; i++)
		cr_assert_eq(xrxe_tp_srq_op(e.h.side[1].tp, e.srq->srq, &op, &h), 0);
	cr_assert_eq(xrxe_tp_srq_op(e.h.side[1].tp, e.srq->srq, &op, &h), -ENOSPC, "list of 8");
	/* an SRQ that is not a TM SRQ refuses every operation */
	struct xrxe_tph_srq *basic = xrxe_tph_srq_create(&e.h.side[1], 8);
	cr_assert_eq(xrxe_tp_srq_op(e.h.side[1].tp, basic->srq, &op, &h), -EINVAL);
	xrxe_tph_fini(&e.h);
}

/* --- rendezvous (tm_rndv.c) ------------------------------------------------ */

#define RNDV_SRC (sizeof(abuf) / 2) /* abuf offset of the remotely readable half */

/* An RNDV of tag and app_ctx naming len bytes at abuf + RNDV_SRC + off, 64
 * bytes long as max_rndv_hdr_size allows (its tail is not data). */
static void rndv_msg(struct tm_env *e, uint64_t tag, uint32_t app_ctx, uint64_t va, uint32_t rkey,
		     uint32_t len)
{
	uint8_t *p = abuf + 64 * (tag % 32); /* each message its own bytes */
	struct xrxe_sge s = { (uintptr_t)p, 64, e->lka };

	memset(p, 0xcc, 64);
	memset(p, 0, 16);
	tmh_at(p, 1, tag);
	for (int i = 0; i < 4; i++)
		p[4 + i] = (uint8_t)(app_ctx >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		p[16 + i] = (uint8_t)(va >> (56 - 8 * i));
	for (int i = 0; i < 4; i++) {
		p[24 + i] = (uint8_t)(rkey >> (24 - 8 * i));
		p[28 + i] = (uint8_t)(len >> (24 - 8 * i));
	}
	cr_assert_eq(xrxe_tph_post_send(e->a, &(struct xrxe_tph_send){
		.wr_id = 1000 + tag, .opcode = IBV_WR_SEND, .sge = &s, .nsge = 1 }), 0);
}

/* a's receive for a FIN, into abuf[4096 + 16 * i] */
static void post_fin_recv(struct tm_env *e, uint32_t i)
{
	struct xrxe_sge s = { (uintptr_t)abuf + 4096 + 16 * i, 16, e->lka };

	cr_assert_eq(xrxe_tph_post_recv(e->a, 700 + i, &s, 1), 0);
}

static uint64_t tmh_tag(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[8 + i];
	return v;
}

static void add_ok(struct tm_env *e, uint64_t wr_id, uint64_t tag, uint32_t off, uint32_t len)
{
	struct ibv_wc wc;
	uint32_t h;

	cr_assert_eq(op_add(e, wr_id, tag, 0, off, len, &h), 0);
	cr_assert_eq(xrxe_tph_poll_cq(e->cb, &wc, 1), 1);
	cr_assert_eq(wc.opcode, IBV_WC_TM_ADD);
}

static struct xrxe_tp_stats b_stats(struct tm_env *e)
{
	struct xrxe_tp_stats st;

	xrxe_tp_get_stats(e->h.side[1].tp, &st);
	return st;
}

Test(tm_srq, rndv_reads_the_senders_buffer_then_sends_fin)
{
	struct tm_env e;
	struct ibv_wc wc[8];
	uint64_t va;

	tm_env_init(&e, 32);
	va = (uintptr_t)abuf + RNDV_SRC + 100;
	add_ok(&e, 90, 9, 0, 8192);
	post_fin_recv(&e, 0);
	/* 6000 bytes: a READ of 6 responses at MTU 1024 */
	rndv_msg(&e, 9, 0xabcd, va, e.rka, 6000);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 2);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].opcode, IBV_WC_TM_RECV);
	cr_assert_eq(wc[0].wr_id, 90);
	cr_assert_eq(wc[0].wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID), IBV_WC_TM_MATCH);
	cr_assert_eq(wc[0].imm_data, 0xabcd, "app_ctx");
	cr_assert_eq(wc[1].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[1].opcode, IBV_WC_TM_RECV);
	cr_assert_eq(wc[1].wr_id, 90);
	cr_assert_eq(wc[1].wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID),
		     IBV_WC_TM_DATA_VALID);
	cr_assert_eq(wc[1].byte_len, 6000);
	cr_assert_eq(wc[1].imm_data, 0, "no app_ctx the second time, as mlx5's");
	cr_assert_eq(memcmp(bbuf, abuf + RNDV_SRC + 100, 6000), 0, "the sender's data");
	cr_assert_eq(bbuf[6000], 0, "nothing past it");
	/* a: the RNDV's send completion and the FIN (TMH opcode FIN, the tag) */
	cr_assert_eq(xrxe_tph_poll_cq(e.ca, wc, 8), 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		if (wc[i].opcode == IBV_WC_RECV) {
			cr_assert_eq(wc[i].wr_id, 700);
			cr_assert_eq(wc[i].byte_len, 16);
		} else {
			cr_assert_eq(wc[i].wr_id, 1009);
		}
	}
	cr_assert_eq(abuf[4096], 2, "FIN");
	cr_assert_eq(tmh_tag(abuf + 4096), 9);
	cr_assert_eq(xrxe_tph_state(e.b), IBV_QPS_RTS);
	cr_assert_eq(b_stats(&e).tm_rndv, 1);
	xrxe_tph_fini(&e.h);
}

/* n rendezvous in a row (more than the QP's XRXE_TM_RNDV_MAX slots: the
 * rest wait, RNR), each into its own tagged buffer, data checked. */
static void rndv_many(struct tm_env *e, uint32_t n, uint32_t len)
{
	struct ibv_wc wc[64];
	uint32_t got = 0, valid = 0, fins = 0, sends = 0;

	for (uint32_t i = 0; i < n; i++) {
		add_ok(e, 100 + i, 20 + i, i * 1024, 1024);
		post_fin_recv(e, i);
	}
	for (uint32_t i = 0; i < n; i++)
		rndv_msg(e, 20 + i, i, (uintptr_t)abuf + RNDV_SRC + 37 * i, e->rka, len);
	cr_assert(xrxe_tph_run(&e->h, 60 * SEC));
	while ((got = (uint32_t)xrxe_tph_poll_cq(e->cb, wc, 64)) > 0) {
		for (uint32_t k = 0; k < got; k++) {
			cr_assert_eq(wc[k].status, IBV_WC_SUCCESS);
			cr_assert_eq(wc[k].opcode, IBV_WC_TM_RECV);
			if (wc[k].wc_flags & IBV_WC_TM_DATA_VALID) {
				uint32_t i = (uint32_t)wc[k].wr_id - 100;

				cr_assert_lt(i, n);
				cr_assert_eq(wc[k].byte_len, len);
				cr_assert_eq(memcmp(bbuf + i * 1024, abuf + RNDV_SRC + 37 * i, len),
					     0, "rendezvous %u's data", i);
				valid++;
			}
		}
	}
	cr_assert_eq(valid, n);
	while ((got = (uint32_t)xrxe_tph_poll_cq(e->ca, wc, 64)) > 0)
		for (uint32_t k = 0; k < got; k++) {
			cr_assert_eq(wc[k].status, IBV_WC_SUCCESS);
			if (wc[k].opcode == IBV_WC_RECV)
				fins++;
			else
				sends++;
		}
	cr_assert_eq(fins, n);
	cr_assert_eq(sends, n);
	cr_assert_eq(xrxe_tph_state(e->b), IBV_QPS_RTS);
}

Test(tm_srq, rndv_more_than_its_slots_wait_and_all_complete)
{
	struct tm_env e;
	struct xrxe_tp_qp_info info;

	tm_env_init(&e, 32);
	rndv_many(&e, 2 * XRXE_TM_RNDV_MAX, 1000);
	xrxe_tph_info(e.b, &info);
	cr_assert_gt(info.rnr_naks_sent, 0, "the ninth RNDV waited for a slot");
	xrxe_tph_fini(&e.h);
}

Test(tm_srq, rndv_over_a_lossy_wire)
{
	struct tm_env e;

	tm_env_init(&e, 32);
	e.h.pol.drop_ppm = 50000; /* 5 % of frames, each way */
	rndv_many(&e, 12, 1000);
	cr_assert_gt(e.h.dropped, 0);
	xrxe_tph_fini(&e.h);
}

Test(tm_srq, rndv_hostile_rvh_fails_the_tag_only)
{
	struct tm_env e;
	struct ibv_wc wc[8];
	uint64_t va = (uintptr_t)abuf + RNDV_SRC;

	tm_env_init(&e, 32);
	memset(bbuf, 0xee, sizeof(bbuf));
	/* a length past the 4096-byte tagged buffer: refused before any
	 * READ, one completion, no FIN, the QP carries on */
	add_ok(&e, 90, 9, 0, 4096);
	post_fin_recv(&e, 0);
	rndv_msg(&e, 9, 1, va, e.rka, 4097);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_LEN_ERR);
	cr_assert_eq(wc[0].opcode, IBV_WC_TM_RECV);
	cr_assert_eq(wc[0].wr_id, 90);
	cr_assert_eq(bbuf[0], 0xee, "nothing placed");
	cr_assert_eq(xrxe_tph_poll_cq(e.ca, wc, 8), 1, "the RNDV's send, no FIN");
	cr_assert_eq(wc[0].opcode, IBV_WC_SEND);
	cr_assert_eq(e.h.opcode_count[1][XRXE_OP_RDMA_READ_REQUEST], 0, "no READ");
	cr_assert_eq(b_stats(&e).tm_rndv_bad, 1);
	cr_assert_eq(xrxe_tph_state(e.b), IBV_QPS_RTS);

	/* the same length fits: the QP still does rendezvous */
	add_ok(&e, 91, 10, 0, 4096);
	rndv_msg(&e, 10, 2, va, e.rka, 4096);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 2);
	cr_assert_eq(wc[1].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[1].wc_flags & IBV_WC_TM_DATA_VALID, IBV_WC_TM_DATA_VALID);
	cr_assert_eq(memcmp(bbuf, abuf + RNDV_SRC, 4096), 0);
	cr_assert_eq(xrxe_tph_poll_cq(e.ca, wc, 8), 2);

	/* a bad rkey: the sender's responder refuses the READ (NAK remote
	 * access), the tagged buffer completes in error, nothing placed, no
	 * FIN; the connection goes to Error as any failed RC READ's */
	memset(bbuf, 0xee, sizeof(bbuf));
	post_fin_recv(&e, 1);
	add_ok(&e, 92, 11, 0, 4096);
	rndv_msg(&e, 11, 3, va, e.rka ^ 0x5a5a0000u, 512);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 2);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].wc_flags & IBV_WC_TM_MATCH, IBV_WC_TM_MATCH);
	cr_assert_eq(wc[1].status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(wc[1].opcode, IBV_WC_TM_RECV);
	cr_assert_eq(wc[1].wr_id, 92);
	cr_assert_eq(bbuf[0], 0xee, "nothing placed");
	cr_assert_eq(xrxe_tph_state(e.b), IBV_QPS_ERR);
	xrxe_tph_fini(&e.h);
}
