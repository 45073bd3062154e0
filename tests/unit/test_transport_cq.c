// SPDX-License-Identifier: MIT
/*
 * Completion queues: ibv_resize_cq in the core (xrxe_tp_cq_resize). The
 * unpolled CQEs move to the new ring in order; a resize below them fails with
 * EINVAL and leaves the CQ as it was; and the CQEs counted include those of
 * UD sends the application posted before the resize but the core had not
 * taken in yet (on rxe they are in the CQ when ibv_post_send returns;
 * rdma-core's test_cq.test_resize_cq depends on it).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "tp_harness.h"

#define SEC 1000000000ull

static uint8_t abuf[4096], bbuf[8192];

struct ud_env {
	struct xrxe_tph_pair p;
	uint32_t ah, lka, lkb;
};

static void ud_env_init(struct ud_env *e)
{
	struct xrxe_av av;

	cr_assert_eq(xrxe_tph_pair_init(&e->p, 11, IBV_QPT_UD, NULL, true), 0);
	xrxe_tph_av(&e->p.h, 0, &av);
	cr_assert_eq(xrxe_tp_ah_create(e->p.h.side[0].tp, e->p.h.side[0].pdn, &av, &e->ah), 0);
	e->lka = xrxe_tph_mr(&e->p.h.side[0], abuf, sizeof(abuf), 0, 0);
	e->lkb = xrxe_tph_mr(&e->p.h.side[1], bbuf, sizeof(bbuf), IBV_ACCESS_LOCAL_WRITE, 0);
}

/* n signaled UD sends from A to B (posted only: nothing runs). */
static void post_ud_sends(struct ud_env *e, uint64_t first_id, unsigned n)
{
	struct xrxe_sge sa = { (uintptr_t)abuf, 64, e->lka };

	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(xrxe_tph_post_send(e->p.a, &(struct xrxe_tph_send){
				     .wr_id = first_id + i, .opcode = IBV_WR_SEND,
				     .flags = IBV_SEND_SIGNALED, .sge = &sa, .nsge = 1,
				     .ah = e->ah, .rqpn = e->p.b->qpn, .rqkey = e->p.conn.qkey }),
			     0);
}

/* The unpolled CQEs move in order; growing and shrinking down to them works,
 * below them is EINVAL and the CQ keeps its ring and CQEs. */
Test(cq, resize_moves_unpolled_cqes_and_refuses_below_them)
{
	struct ud_env e;
	struct ibv_wc wc[8];

	ud_env_init(&e);
	post_ud_sends(&e, 100, 5);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.p.ca, wc, 2), 2, "two polled before the resize");
	cr_assert_eq(wc[0].wr_id, 100);
	cr_assert_eq(xrxe_tph_cq_resize(e.p.ca, 2), -EINVAL, "3 CQEs do not fit in 1");
	cr_assert_eq(xrxe_tph_cq_resize(e.p.ca, 4), 0, "3 CQEs fit in 3");
	cr_assert_eq(xrxe_tph_cq_resize(e.p.ca, 2), -EINVAL);
	cr_assert_eq(xrxe_tph_cq_resize(e.p.ca, 16), 0, "grow");
	cr_assert_eq(xrxe_tph_poll_cq(e.p.ca, wc, 8), 3, "the three CQEs survived both moves");
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(wc[i].wr_id, 102u + (unsigned)i, "in order");
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
	}
	/* the CQ works on its new ring */
	post_ud_sends(&e, 200, 1);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.p.ca, wc, 8), 1);
	cr_assert_eq(wc[0].wr_id, 200);
	xrxe_tph_pair_fini(&e.p);
}

/* UD sends posted but not yet taken in by the core count: the resize lets
 * the send queue catch up first, as rxe's post_send would have. */
Test(cq, resize_counts_sends_posted_before_it)
{
	struct ud_env e;
	struct ibv_wc wc[8];

	ud_env_init(&e);
	cr_assert_eq(xrxe_tph_cq_resize(e.p.ca, 8), 0);
	post_ud_sends(&e, 1, 6); /* no run: the core has not seen them */
	cr_assert_eq(xrxe_tph_cq_resize(e.p.ca, 2), -EINVAL,
		     "6 sends posted, the CQ cannot shrink to 1");
	cr_assert_eq(xrxe_tph_poll_cq(e.p.ca, wc, 8), 6, "their CQEs are there");
	for (int i = 0; i < 6; i++)
		cr_assert_eq(wc[i].wr_id, 1u + (unsigned)i);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.p.cb, wc, 8), 0, "B posted no receives: dropped");
	cr_assert_eq(xrxe_tph_cq_resize(e.p.ca, 2), 0, "all polled: shrinking works");
	xrxe_tph_pair_fini(&e.p);
}
