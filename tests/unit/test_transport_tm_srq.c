// SPDX-License-Identifier: MIT
/*
 * Tag matching SRQs over the in-memory wire (tm_srq.c): a matched EAGER lands
 * in its tagged buffer without the TMH; an unexpected message that meets an
 * empty SRQ (RNR) is counted once, when it is delivered; a RNDV whose RVH
 * names nonsense completes its tagged buffer IBV_WC_TM_RNDV_INCOMPLETE and
 * the QP carries on; the list operations' checks and completions.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"

#define SEC 1000000000ull

static uint8_t abuf[1 << 14], bbuf[1 << 15];

struct tm_env {
	struct xrxe_tph h;
	struct xrxe_tph_conn conn;
	struct xrxe_tph_cq *ca, *cb;
	struct xrxe_tph_srq *srq;
	struct xrxe_tph_qp *a, *b;
	uint32_t lka, lkb;
};

static void tm_env_init(struct tm_env *e)
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
	cr_assert_eq(xrxe_tp_srq_create_tm(q->s->tp, q->s->pdn, e->cb->cq, 8, q->ring, q->slots, 4,
					   q, &q->srq), 0);
	e->h.srqs[e->h.nsrqs++] = q;
	e->srq = q;
	e->a = xrxe_tph_qp_create(&e->h.side[0], IBV_QPT_RC, e->ca, e->ca, 64, 64, true);
	e->b = xrxe_tph_qp_create_srq(&e->h.side[1], IBV_QPT_RC, e->cb, e->cb, 64, q, true);
	cr_assert_eq(xrxe_tph_connect(e->a, e->b, &e->conn), 0);
	for (unsigned i = 0; i < sizeof(abuf); i++)
		abuf[i] = (uint8_t)(i * 7 + 3);
	memset(bbuf, 0, sizeof(bbuf));
	e->lka = xrxe_tph_mr(&e->h.side[0], abuf, sizeof(abuf), 0, 0);
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

	tm_env_init(&e);
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
	 * matched, completes RNDV_INCOMPLETE, nothing placed, the QP lives */
	memset(bbuf, 0xee, 64);
	tmh_at(abuf, 1, 7);
	memset(abuf + 16, 0xff, 16);
	send_msg(&e, 64);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_TM_RNDV_INCOMPLETE);
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

	tm_env_init(&e);
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
