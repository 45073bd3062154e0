// SPDX-License-Identifier: MIT
/*
 * Shared receive queues over the in-memory wire: several QPs take receive
 * WQEs from one SRQ (each WQE used once, completions on the QP that took
 * it), the SRQ limit event (IBA 11.5.2.4: armed by modify, fires once when
 * the WQE count drops below the limit, then disarmed), RNR when the SRQ is
 * empty, Last WQE Reached when an SRQ QP enters Error (its WQE in use is
 * flushed, the SRQ's are not), and the create/modify/destroy checks.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"

#define SEC 1000000000ull

static uint8_t abuf[1 << 16], bbuf[1 << 18];

/* Side 1: one SRQ of srq_slots and nqp RC (or UC) QPs on it, each connected
 * to its own QP on side 0. */
struct srq_env {
	struct xrxe_tph h;
	struct xrxe_tph_conn conn;
	struct xrxe_tph_cq *ca, *cb;
	struct xrxe_tph_srq *srq;
	struct xrxe_tph_qp *a[4], *b[4];
	uint32_t lka, lkb;
};

static void srq_env_init(struct srq_env *e, enum ibv_qp_type type, unsigned nqp,
			 uint32_t srq_slots)
{
	xrxe_tph_init(&e->h, 11, 4096);
	xrxe_tph_conn_default(&e->conn);
	e->ca = xrxe_tph_cq_create(&e->h.side[0], 256);
	e->cb = xrxe_tph_cq_create(&e->h.side[1], 256);
	e->srq = xrxe_tph_srq_create(&e->h.side[1], srq_slots);
	for (unsigned i = 0; i < nqp; i++) {
		e->a[i] = xrxe_tph_qp_create(&e->h.side[0], type, e->ca, e->ca, 64, 64, true);
		e->b[i] = xrxe_tph_qp_create_srq(&e->h.side[1], type, e->cb, e->cb, 64, e->srq,
						 true);
		cr_assert_eq(xrxe_tph_connect(e->a[i], e->b[i], &e->conn), 0);
	}
	/* no period: every message of the tests has distinct contents */
	for (unsigned i = 0, x = 12345; i < sizeof(abuf); i++) {
		x = x * 1103515245u + 12345u;
		abuf[i] = (uint8_t)(x >> 16);
	}
	memset(bbuf, 0, sizeof(bbuf));
	e->lka = xrxe_tph_mr(&e->h.side[0], abuf, sizeof(abuf), 0, 0);
	e->lkb = xrxe_tph_mr(&e->h.side[1], bbuf, sizeof(bbuf), IBV_ACCESS_LOCAL_WRITE, 0);
}

/* Receive WQE i: 4 KiB at bbuf + 4096 * i. */
static void srq_post(struct srq_env *e, uint32_t i)
{
	struct xrxe_sge s = { (uintptr_t)bbuf + 4096 * i, 4096, e->lkb };

	cr_assert_eq(xrxe_tph_post_srq_recv(e->srq, 1000 + i, &s, 1), 0);
}

static void send_from(struct srq_env *e, unsigned qp, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct xrxe_sge s = { (uintptr_t)abuf + off, len, e->lka };

	cr_assert_eq(xrxe_tph_post_send(e->a[qp], &(struct xrxe_tph_send){
		.wr_id = wr_id, .opcode = IBV_WR_SEND, .sge = &s, .nsge = 1 }), 0);
}

static void shared_by_qps(enum ibv_qp_type type)
{
	struct srq_env e;
	struct ibv_wc wc[64];
	bool used[32] = { false };
	unsigned per_qp[3] = { 0 };
	int n, i;

	srq_env_init(&e, type, 3, 32);
	for (i = 0; i < 30; i++)
		srq_post(&e, (uint32_t)i);
	/* 30 messages, 10 from each QP, interleaved; 2000 bytes = 2 packets */
	for (i = 0; i < 30; i++)
		send_from(&e, (unsigned)i % 3, (uint64_t)i, (uint32_t)i * 2000, 2000);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.ca, wc, 64), 30);
	n = xrxe_tph_poll_cq(e.cb, wc, 64);
	cr_assert_eq(n, 30);
	for (i = 0; i < n; i++) {
		uint32_t slot = (uint32_t)wc[i].wr_id - 1000, k;
		unsigned q;

		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].byte_len, 2000);
		cr_assert_lt(slot, 30);
		cr_assert(!used[slot], "receive WQE %u completed twice", slot);
		used[slot] = true;
		for (q = 0; q < 3; q++)
			if (wc[i].qp_num == e.b[q]->qpn)
				break;
		cr_assert_lt(q, 3, "completion names a QP on the SRQ");
		per_qp[q]++;
		/* the buffer holds a whole message sent by the matching peer */
		for (k = 0; k < 30; k++)
			if (!memcmp(bbuf + 4096 * slot, abuf + k * 2000, 2000))
				break;
		cr_assert_lt(k, 30);
		cr_assert_eq(k % 3, q, "message %u arrived on the QP it was sent to", k);
	}
	cr_assert_eq(per_qp[0], 10);
	cr_assert_eq(per_qp[1], 10);
	cr_assert_eq(per_qp[2], 10);
	xrxe_tph_fini(&e.h);
}

Test(transport_srq, rc_qps_share_one_srq)
{
	shared_by_qps(IBV_QPT_RC);
}

Test(transport_srq, uc_qps_share_one_srq)
{
	shared_by_qps(IBV_QPT_UC);
}

Test(transport_srq, limit_event_fires_once_below_the_limit)
{
	struct srq_env e;
	struct ibv_srq_attr a = { .srq_limit = 4 };
	struct ibv_wc wc[16];
	int i;

	srq_env_init(&e, IBV_QPT_RC, 1, 16);
	for (i = 0; i < 8; i++)
		srq_post(&e, (uint32_t)i);
	/* limit above the capacity (15): refused, nothing armed */
	a.srq_limit = 16;
	cr_assert_eq(xrxe_tp_srq_modify(e.h.side[1].tp, e.srq->srq, &a, IBV_SRQ_LIMIT), -EINVAL);
	cr_assert_eq(xrxe_tp_srq_modify(e.h.side[1].tp, e.srq->srq, &a, IBV_SRQ_MAX_WR),
		     -EOPNOTSUPP);
	a.srq_limit = 4;
	cr_assert_eq(xrxe_tp_srq_modify(e.h.side[1].tp, e.srq->srq, &a, IBV_SRQ_LIMIT), 0);
	xrxe_tp_srq_query(e.srq->srq, &a);
	cr_assert_eq(a.srq_limit, 4);
	cr_assert_eq(a.max_wr, 15);
	cr_assert_eq(a.max_sge, 4);
	/* 8 -> 4 WQEs left: not below the limit yet */
	for (i = 0; i < 4; i++)
		send_from(&e, 0, (uint64_t)i, 0, 100);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(e.h.side[1].async_events, 0);
	/* 3 left: below 4 -> one event for the SRQ, and the limit is disarmed */
	send_from(&e, 0, 4, 0, 100);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(e.h.side[1].async_events, 1);
	cr_assert_eq(e.h.side[1].last_async, IBV_EVENT_SRQ_LIMIT_REACHED);
	cr_assert_eq(e.h.side[1].last_async_obj, e.srq);
	xrxe_tp_srq_query(e.srq->srq, &a);
	cr_assert_eq(a.srq_limit, 0, "fired: disarmed until armed again");
	/* further consumption: no second event */
	send_from(&e, 0, 5, 0, 100);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(e.h.side[1].async_events, 1);
	/* re-armed at 2 with 2 left: fires on the next take (1 < 2) */
	a.srq_limit = 2;
	cr_assert_eq(xrxe_tp_srq_modify(e.h.side[1].tp, e.srq->srq, &a, IBV_SRQ_LIMIT), 0);
	send_from(&e, 0, 6, 0, 100);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(e.h.side[1].async_events, 2);
	cr_assert_eq(e.h.side[1].last_async, IBV_EVENT_SRQ_LIMIT_REACHED);
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 16), 7);
	xrxe_tph_fini(&e.h);
}

Test(transport_srq, empty_srq_rnr_then_delivery)
{
	struct srq_env e;
	struct ibv_wc wc[8];
	struct xrxe_tp_qp_info info;

	srq_env_init(&e, IBV_QPT_RC, 1, 8);
	send_from(&e, 0, 1, 0, 3000);
	/* no WQE: RNR NAKs while the SRQ is empty */
	for (int i = 0; i < 20; i++)
		xrxe_tph_step(&e.h);
	xrxe_tph_info(e.b[0], &info);
	cr_assert_gt(info.rnr_naks_sent, 0);
	srq_post(&e, 0);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].byte_len, 3000);
	cr_assert(!memcmp(bbuf, abuf, 3000));
	cr_assert_eq(xrxe_tph_poll_cq(e.ca, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	xrxe_tph_fini(&e.h);
}

Test(transport_srq, last_wqe_reached_and_srq_survives)
{
	struct srq_env e;
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[8];
	struct ibv_srq_attr sa;

	srq_env_init(&e, IBV_QPT_RC, 2, 8);
	srq_post(&e, 0);
	srq_post(&e, 1);
	srq_post(&e, 2);
	/* b0 to ERR: Last WQE Reached for b0; no WQE of the SRQ is flushed */
	cr_assert_eq(xrxe_tp_qp_modify(e.h.side[1].tp, e.b[0]->qp, &at, IBV_QP_STATE, NULL), 0);
	cr_assert_eq(e.h.side[1].async_events, 1);
	cr_assert_eq(e.h.side[1].last_async, IBV_EVENT_QP_LAST_WQE_REACHED);
	cr_assert_eq(e.h.side[1].last_async_obj, e.b[0]);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_cq_count(e.cb), 0);
	/* b1 still receives, from the same SRQ */
	send_from(&e, 1, 1, 0, 500);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].qp_num, e.b[1]->qpn);
	cr_assert_eq(wc[0].wr_id, 1000);
	/* an SRQ in use cannot be destroyed */
	cr_assert_eq(xrxe_tp_srq_destroy(e.h.side[1].tp, e.srq->srq), -EBUSY);
	xrxe_tp_srq_query(e.srq->srq, &sa);
	cr_assert_eq(sa.max_wr, 7);
	xrxe_tph_fini(&e.h);
}

/* Passes side 0's first frame only. */
static bool only_first(void *arg, int from, const struct xrxe_pkt *pkt)
{
	unsigned *seen = arg;

	(void)pkt;
	return from == 0 && ++*seen > 1;
}

/* A QP in the middle of a message when it fails: the WQE it took is flushed
 * on that QP (FLUSH_ERR), then Last WQE Reached; the SRQ's other WQEs stay. */
Test(transport_srq, error_flushes_only_the_wqe_in_use)
{
	struct srq_env e;
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[8];
	unsigned seen = 0;

	srq_env_init(&e, IBV_QPT_UC, 2, 8);
	srq_post(&e, 0);
	srq_post(&e, 1);
	e.h.pol.filter = only_first;
	e.h.pol.filter_arg = &seen;
	send_from(&e, 0, 1, 0, 3000); /* FIRST arrives, MIDDLE and LAST do not */
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(e.h.filtered, 2);
	cr_assert_eq(xrxe_tph_cq_count(e.cb), 0);
	cr_assert_eq(xrxe_tp_qp_modify(e.h.side[1].tp, e.b[0]->qp, &at, IBV_QP_STATE, NULL), 0);
	cr_assert_eq(e.h.side[1].last_async, IBV_EVENT_QP_LAST_WQE_REACHED);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc[0].wr_id, 1000);
	cr_assert_eq(wc[0].qp_num, e.b[0]->qpn);
	/* WQE 1 is still in the SRQ, for b1 */
	e.h.pol.filter = NULL;
	send_from(&e, 1, 2, 4000, 700);
	cr_assert(xrxe_tph_run(&e.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].wr_id, 1001);
	cr_assert_eq(wc[0].qp_num, e.b[1]->qpn);
	cr_assert(!memcmp(bbuf + 4096, abuf + 4000, 700));
	xrxe_tph_fini(&e.h);
}
