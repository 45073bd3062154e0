// SPDX-License-Identifier: MIT
/*
 * Selective repeat negotiated through ECE in the CM's REQ/REP (src/cm/cma.c,
 * ib_cm.c; docs/selective-repeat.md): two xrxe CMs that both offer it agree
 * and switch both QPs before any data; with a peer that does not offer it
 * (kernel rxe, a NIC, xrxed --selective-repeat off) or an application that
 * set ECE values of its own, both QPs stay go-back-N and nothing of ours is
 * claimed in the REP.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "cm_harness.h"

enum { A = 0, B = 1 };
static struct xrxe_cmh h;

static struct xrxe_cmh_owner *child(struct xrxe_cmh_owner *l)
{
	for (struct xrxe_cmh_owner *o = l->host->owners; o; o = o->all_next)
		if (o->parent == l)
			return o;
	cr_assert_fail("no connect request reached the listener");
	return NULL;
}

/* B listens on port 7174, A connects to it with P and ECE_A (the REQ is
 * flushed to B); *l is B's listening ID, *a A's. */
static void listen_and_connect(const struct xrxe_cm_conn_param *p, const struct xrxe_cm_ece *ece_a,
			       struct xrxe_cmh_owner **l, struct xrxe_cmh_owner **a)
{
	struct xrxe_cm_addr any = { .family = AF_INET, .port = htons(7174) };

	cr_assert_eq(xrxe_cmh_create_id(&h.host[B], RDMA_PS_TCP, IBV_QPT_RC, l), 0);
	cr_assert_eq(xrxe_cm_bind(h.host[B].cm, (*l)->id, &any), 0);
	cr_assert_eq(xrxe_cm_listen(h.host[B].cm, (*l)->id, 4), 0);
	cr_assert_eq(xrxe_cmh_create_id(&h.host[A], RDMA_PS_TCP, IBV_QPT_RC, a), 0);
	cr_assert_eq(xrxe_cmh_resolve(*a, &h.host[B], AF_INET, 7174), 0);
	cr_assert_eq(xrxe_cm_connect(h.host[A].cm, (*a)->id, p, ece_a, h.now), 0);
	xrxe_cmh_flush(&h);
}

/* One RC connection A -> B through the CM; ece_a/ece_b what the
 * applications set (NULL: nothing). Returns the REQ and REP sent. */
static void connect_rc(bool sr_a, bool sr_b, const struct xrxe_cm_ece *ece_a,
		       const struct xrxe_cm_ece *ece_b, struct xrxe_cm_msg *req,
		       struct xrxe_cm_msg *rep)
{
	struct xrxe_cmh_hostcfg cfg[2] = { { .selective_repeat = sr_a },
					   { .selective_repeat = sr_b } };
	struct xrxe_cm_conn_param p = { .qp_num = 0x31, .responder_resources = 1,
					.initiator_depth = 1, .retry_count = 7,
					.rnr_retry_count = 7 };
	struct xrxe_cmh_owner *l, *a;

	cr_assert_eq(xrxe_cmh_init(&h, 0x5e1ec7, 2, cfg), 0);
	listen_and_connect(&p, ece_a, &l, &a);
	p.qp_num = 0x32;
	cr_assert_eq(xrxe_cm_accept(h.host[B].cm, child(l)->id, &p, ece_b, 0, h.now), 0);
	cr_assert_eq(h.host[B].sr_calls, 1, "the passive side decided before its REP");
	xrxe_cmh_flush(&h);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REQ), req), 0);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, B, XRXE_CM_ATTR_REP), rep), 0);
	cr_assert_eq(h.host[A].sr_calls, 1, "the active side decided on the REP");
	cr_assert_eq(h.host[A].sr_qpn, 0x31);
	cr_assert_eq(h.host[B].sr_qpn, 0x32);
}

Test(cm_sr, xrxe_peers_agree)
{
	struct xrxe_cm_msg q, r;

	connect_rc(true, true, NULL, NULL, &q, &r);
	cr_assert_eq(q.req.vendor_id, XRXE_ECE_VENDOR_ID);
	cr_assert_eq(q.hdr.attr_mod, XRXE_ECE_OPT_SR);
	cr_assert_eq(r.rep.vendor_id, XRXE_ECE_VENDOR_ID);
	cr_assert_eq(r.hdr.attr_mod, XRXE_ECE_OPT_SR);
	cr_assert(h.host[A].sr_on && h.host[B].sr_on);
	xrxe_cmh_fini(&h);
}

/* The peer does not offer it (kernel rxe sends vendor ID 0): go-back-N on
 * both ends, and our REP claims nothing. */
Test(cm_sr, peer_without_it_stays_go_back_n)
{
	struct xrxe_cm_msg q, r;

	connect_rc(false, true, NULL, NULL, &q, &r);
	cr_assert_eq(q.req.vendor_id, 0);
	cr_assert_eq(r.rep.vendor_id, 0);
	cr_assert_eq(r.hdr.attr_mod, 0);
	cr_assert(!h.host[A].sr_on && !h.host[B].sr_on);
	xrxe_cmh_fini(&h);
}

/* We offer it, the peer does not take it (its REP has no ECE of ours). */
Test(cm_sr, peer_that_declines_stays_go_back_n)
{
	struct xrxe_cm_msg q, r;

	connect_rc(true, false, NULL, NULL, &q, &r);
	cr_assert_eq(q.req.vendor_id, XRXE_ECE_VENDOR_ID);
	cr_assert_eq(r.rep.vendor_id, 0);
	cr_assert(!h.host[A].sr_on && !h.host[B].sr_on);
	xrxe_cmh_fini(&h);
}

/* A REP with another vendor's ECE (an mlx5 peer answers with its own):
 * not an agreement, whatever its option bits. */
Test(cm_sr, other_vendor_is_no_agreement)
{
	struct xrxe_cm_msg q, r;
	struct xrxe_cm_ece mlx = { .vendor_id = 0x15b3, .options = XRXE_ECE_OPT_SR };

	connect_rc(true, true, NULL, &mlx, &q, &r);
	cr_assert_eq(r.rep.vendor_id, 0x15b3);
	cr_assert(!h.host[A].sr_on && !h.host[B].sr_on);
	xrxe_cmh_fini(&h);
}

/* The application set ECE values of its own (rdma_set_local_ece): they go
 * out as set, and selective repeat is not offered. */
Test(cm_sr, application_ece_wins)
{
	struct xrxe_cm_msg q, r;
	struct xrxe_cm_ece mine = { .vendor_id = 0x0002c9, .options = 3 };

	connect_rc(true, true, &mine, NULL, &q, &r);
	cr_assert_eq(q.req.vendor_id, 0x0002c9);
	cr_assert_eq(q.hdr.attr_mod, 3);
	cr_assert(!h.host[A].sr_on && !h.host[B].sr_on);
	xrxe_cmh_fini(&h);
}

/* The REP took selective repeat (the passive side's QP switched before it
 * sent it), but the active side cannot switch its QP (no memory, or the
 * QP already carried a packet): the two ends would disagree, so the
 * active side refuses the connection with a REJ and both applications
 * hear REJECTED. Before, the failure was ignored and the QPs disagreed. */
Test(cm_sr, failed_switch_on_rep_rejects)
{
	struct xrxe_cmh_hostcfg cfg[2] = { { .selective_repeat = true },
					   { .selective_repeat = true } };
	struct xrxe_cm_conn_param p = { .qp_num = 0x31, .responder_resources = 1,
					.initiator_depth = 1, .retry_count = 7,
					.rnr_retry_count = 7 };
	struct xrxe_cmh_owner *l, *a, *b;
	struct xrxe_cm_msg rej;

	cr_assert_eq(xrxe_cmh_init(&h, 0x5e1ec8, 2, cfg), 0);
	h.host[A].sr_fail = true;
	listen_and_connect(&p, NULL, &l, &a);
	b = child(l);
	p.qp_num = 0x32;
	cr_assert_eq(xrxe_cm_accept(h.host[B].cm, b->id, &p, NULL, 0, h.now), 0);
	cr_assert(h.host[B].sr_on, "the passive side switched before its REP");
	xrxe_cmh_flush(&h);
	cr_assert_eq(h.host[A].sr_calls, 1);
	cr_assert(!h.host[A].sr_on);
	cr_assert_not_null(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REJ), "the active side refused the connection");
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REJ), &rej), 0);
	cr_assert_eq(rej.rej.reason, XRXE_CM_REJ_NO_RESOURCES);
	cr_assert_eq(a->count[RDMA_CM_EVENT_REJECTED], 1);
	cr_assert_eq(a->count[RDMA_CM_EVENT_CONNECT_RESPONSE], 0);
	cr_assert_eq(b->count[RDMA_CM_EVENT_REJECTED], 1);
	cr_assert_eq(b->count[RDMA_CM_EVENT_ESTABLISHED], 0);
	cr_assert_eq(h.host[A].bad_events + h.host[B].bad_events, 0);
	xrxe_cmh_fini(&h);
}
