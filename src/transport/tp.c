// SPDX-License-Identifier: MIT
/*
 * The device object: creation, packet dispatch (rxe_recv.c's hdr_check,
 * docs/facts/rxe.md §1.1 "RX validation order"), polling, deadlines, statistics.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tp_internal.h"

/* Per QP and poll: packets the requester / responder may send before the
 * next QP gets its turn (fairness; the caller keeps polling while true). */
#define TP_POLL_BUDGET 64u

/* Per xrxe_tp_poll call: once the QPs served have sent this many packets,
 * the rest of the round waits for the next call, at the head of the run
 * queue (the round goes on where it stopped, so fairness is the same).
 * Between two calls the caller reads its receive ring (xrxed reads at most
 * RX_BURST = 64 frames per pass, src/daemon/xrxed.h). A round over every
 * queued QP in one call sent up to run_len * TP_POLL_BUDGET packets --
 * 262 144 with 4 096 active QPs, a second or more of CPU on a loaded 2-core
 * box -- while the ACKs for them waited unread: the receive ring (4 096
 * frames) overflowed and dropped them, those of the QPs late in the round
 * each time, and the Local ACK Timeout (67 ms for perftest's timeout 14) of
 * every QP whose ACK sat unread expired at its next turn. The same QPs
 * retried round after round without progress until IBV_WC_RETRY_EXC_ERR
 * (IBA 9.7.6.1.3 / 11.2.4.2 Retry Count: retries without progress). Four RX
 * bursts' worth keeps the receive side ahead of the ACKs and responses it
 * is owed (tests/unit/test_transport_sched.c
 * many_active_qps_no_spurious_timeout). */
#define TP_POLL_CALL_BUDGET (4 * TP_POLL_BUDGET)

static uint32_t mtu_enum_for(uint32_t bytes)
{
	uint32_t e = IBV_MTU_4096;

	while (e > IBV_MTU_256 && xrxe_tpi_mtu_bytes(e) > bytes)
		e--;
	return e;
}

int xrxe_tp_create(const struct xrxe_tp_config *cfg, struct xrxe_tp **out)
{
	struct xrxe_tp *tp;

	if (!cfg || !cfg->ops || !cfg->ops->tx_reserve || !cfg->ops->tx_submit ||
	    cfg->max_path_mtu < 256 || cfg->max_qp == 0 || cfg->max_mr == 0 ||
	    cfg->max_qp > (1u << 24) - XRXE_TP_QPN_BASE || cfg->max_mr >= (1u << 24))
		return -EINVAL;
	tp = calloc(1, sizeof(*tp));
	if (!tp)
		return -ENOMEM;
	tp->cfg = *cfg;
	tp->max_mtu_enum = mtu_enum_for(cfg->max_path_mtu);
	/* the port MTU as UD uses it: a supported IB MTU */
	tp->cfg.max_path_mtu = xrxe_tpi_mtu_bytes(tp->max_mtu_enum);
	tp->npds = cfg->max_qp + 64;
	tp->nahs = cfg->max_qp + 256;
	tp->qpt = calloc(cfg->max_qp, sizeof(*tp->qpt));
	tp->mrs = calloc((size_t)cfg->max_mr + 1, sizeof(*tp->mrs));
	/* As many windows as regions (rxe splits its key space the same
	 * way), within the 24-bit key index. */
	tp->key_rng = cfg->key_seed ? cfg->key_seed : 0x6a09e667f3bcc909ull;
	tp->mw_base = cfg->max_mr + 1;
	tp->nmws = cfg->max_mr < (1u << 24) - tp->mw_base ? cfg->max_mr : (1u << 24) - tp->mw_base;
	tp->key_ib = xrxe_tpi_key_index_bits(tp);
	tp->mws = calloc(tp->nmws ? tp->nmws : 1, sizeof(*tp->mws));
	tp->pds = calloc(tp->npds, sizeof(*tp->pds));
	tp->ahs = calloc(tp->nahs, sizeof(*tp->ahs));
	/* one timer-heap slot per QP, 1-based (sched.c) */
	tp->theap = calloc((size_t)cfg->max_qp + 1, sizeof(*tp->theap));
	if (!tp->qpt || !tp->theap || !tp->mrs || !tp->mws || !tp->pds || !tp->ahs) {
		xrxe_tp_destroy(tp);
		return -ENOMEM;
	}
	xrxe_tpi_cc_init(tp); /* CC hook: DCQCN defaults, pacer (cc.c) */
	*out = tp;
	return 0;
}

void xrxe_tp_destroy(struct xrxe_tp *tp)
{
	if (!tp)
		return;
	while (tp->qps)
		xrxe_tp_qp_destroy(tp, tp->qps);
	while (tp->srqs) {
		struct xrxe_tp_srq *srq = tp->srqs;

		tp->srqs = srq->next;
		free(srq);
	}
	while (tp->cqs) {
		struct xrxe_tp_cq *cq = tp->cqs;

		tp->cqs = cq->next;
		free(cq);
	}
	free(tp->qpt);
	free(tp->theap);
	free(tp->mrs);
	free(tp->mws);
	free(tp->pds);
	free(tp->ahs);
	xrxe_tpi_xrc_fini(tp);
	free(tp);
}

/* --- receive ---------------------------------------------------------------- */

static bool addr_matches(const struct xrxe_pkt *pkt, const struct xrxe_av *av)
{
	const uint8_t *ip = pkt->frag[0].data + pkt->l3_off;

	if (pkt->ip_version != av->ip_version)
		return false;
	/* the packet comes from the peer (av->daddr) to us (av->saddr) */
	if (pkt->ip_version == 4)
		return !memcmp(ip + 12, &av->daddr.v4, 4) && !memcmp(ip + 16, &av->saddr.v4, 4);
	return !memcmp(ip + 8, &av->daddr.v6, 16) && !memcmp(ip + 24, &av->saddr.v6, 16);
}

void xrxe_tp_rx(struct xrxe_tp *tp, const struct xrxe_pkt *pkt, uint64_t now_ns)
{
	const struct xrxe_bth *bth = xrxe_pkt_bth(pkt);
	uint32_t qpn = xrxe_bth_qpn(bth), fl;
	struct xrxe_tp_qp *qp;

	tp->now = now_ns;
	tp->stats.rx_packets++;
	if (!pkt->op) {
		tp->stats.rx_drop_bad_opcode++;
		return;
	}
	fl = pkt->op->flags;
	/* QPN 0xFFFFFF is multicast (IBA 10.5.2): UD requests only, copied to
	 * every QP attached to the destination group (mcast.c); each copy
	 * then goes through the checks below as if it were addressed to it. */
	if (qpn == XRXE_MCAST_QPN) {
		if ((pkt->opcode & XRXE_TRANSPORT_MASK) != XRXE_TRANSPORT_UD ||
		    !(fl & XRXE_OPF_REQUEST)) {
			tp->stats.rx_drop_bad_opcode++;
			return;
		}
		xrxe_tpi_mcast_rx(tp, pkt);
		return;
	}
	if (qpn == XRXE_GSI_QPN) {
		xrxe_tpi_gsi_rx(tp, pkt);
		return;
	}
	qp = xrxe_tpi_qp_lookup(tp, qpn);
	xrxe_tpi_qp_rx(tp, qp, pkt);
}

void xrxe_tpi_qp_rx(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt)
{
	uint16_t pkey = xrxe_bth_pkey(xrxe_pkt_bth(pkt));
	uint32_t fl = pkt->op->flags;

	/* a raw packet QP has no QPN on the wire: it takes frames through
	 * its flows only (raw.c) */
	if (!qp || qp->type == IBV_QPT_RAW_PACKET) {
		tp->stats.rx_drop_no_qp++;
		/* a CNP for a QP destroyed while it was on the way (an
		 * application that stops mid-stream): CNPs received still
		 * add up, cnp_rcvd + cnp_rcvd_no_qp */
		if (pkt->opcode == XRXE_OP_CNP)
			tp->stats.cnp_rcvd_no_qp++;
		return;
	}
	/* CC hook: a CNP goes to the QP's reaction point (cc.c), from the
	 * connected peer only (UD: any, it has no peer) */
	if (pkt->opcode == XRXE_OP_CNP) {
		xrxe_tpi_cc_cnp_rx(qp, pkt, qp->type == IBV_QPT_UD ||
						    (qp->av_set && addr_matches(pkt, &qp->av)));
		/* the rate cut moves the CC timers and the pacer's gap */
		xrxe_tpi_sched_kick(qp);
		xrxe_tpi_sched_rearm(qp);
		return;
	}
	/* the opcode class must be the QP's transport; xrxe's SACK (from the
	 * manufacturer-specific range) only for an RC QP that agreed to
	 * selective repeat (sr.c); an XRC initiator takes responses only, a
	 * target requests only (xrc.c) */
	if (pkt->opcode == XRXE_OP_XRXE_SACK ? !qp->sr
	    : (pkt->opcode & XRXE_TRANSPORT_MASK) != xrxe_tpi_qp_class(qp) ||
	      !(fl & (XRXE_OPF_REQUEST | XRXE_OPF_RESPONSE)) || !xrxe_tpi_xrc_rx_ok(qp, fl)) {
		tp->stats.rx_drop_bad_opcode++;
		return;
	}
	/* P_Key (IBA 10.9.3): the table holds 0xFFFF; a limited
	 * member key 0x7FFF matches it too (full-member comparison). */
	if ((pkey & 0x7fff) != 0x7fff) {
		tp->stats.rx_drop_bad_pkey++;
		return;
	}
	/* requests for QPs >= RTR, responses for QPs >= RTS (docs/facts/rxe.md §1.1) */
	if (fl & XRXE_OPF_REQUEST) {
		if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS &&
		    qp->state != IBV_QPS_SQD && qp->state != IBV_QPS_SQE) {
			tp->stats.rx_drop_bad_state++;
			return;
		}
	} else if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD) {
		tp->stats.rx_drop_bad_state++;
		return;
	}
	if (qp->type == IBV_QPT_UD) {
		const struct xrxe_deth *deth = xrxe_pkt_hdr(pkt, XRXE_HDR_DETH);

		/* IBA 10.2.4 (Q_Key violation): silently dropped */
		if (!deth || xrxe_deth_qkey(deth) != qp->attr.qkey) {
			tp->stats.rx_drop_bad_qkey++;
			return;
		}
	} else if (!qp->av_set || !addr_matches(pkt, &qp->av)) {
		/* RC/UC: only the connected peer (rxe hdr_check) */
		tp->stats.rx_drop_bad_av++;
		return;
	}
	qp->info.rx_packets++;
	qp->info.rx_bytes += pkt->payload_len;
	xrxe_tpi_cc_rx(qp, pkt); /* CC hook: CE mark -> CNP (cc.c) */
	if (fl & XRXE_OPF_REQUEST)
		xrxe_tpi_resp_rx(qp, pkt);
	else
		xrxe_tpi_comp_rx(qp, pkt);
	/* a response owed, the window opened, a retry, a CNP owed: the QP
	 * has work; its timers may have moved (sched.c) */
	xrxe_tpi_sched_kick(qp);
	xrxe_tpi_sched_rearm(qp);
}

/* --- poll ----------------------------------------------------------------- */

static bool qp_poll(struct xrxe_tp_qp *qp)
{
	bool did = false;

	/* CC hook: owed CNPs, DCQCN timers (cc.c) */
	if (qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD)
		did |= xrxe_tpi_cc_poll(qp);
	switch (qp->state) {
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
		did |= xrxe_tpi_comp_timers(qp);
		did |= xrxe_tpi_resp_drain(qp, TP_POLL_BUDGET);
		did |= xrxe_tpi_req_run(qp, TP_POLL_BUDGET);
		break;
	case IBV_QPS_RTR:
		did |= xrxe_tpi_resp_drain(qp, TP_POLL_BUDGET);
		break;
	case IBV_QPS_SQE:
	case IBV_QPS_ERR:
		did |= xrxe_tpi_resp_drain(qp, TP_POLL_BUDGET);
		did |= xrxe_tpi_qp_flush(qp);
		break;
	default:
		break;
	}
	return did;
}

/* After its turn a QP stays on the run queue only with work left: it did
 * something (it may have more: the budget ran out, a response arrived
 * meanwhile), TX buffers ran out (transport.h: the caller polls again), or it
 * has WQEs it may start but could not yet (window, rd_atomic slots: an ACK is
 * a round trip away, and the daemon keeps spinning for it, as
 * xrxe_tp_sq_pending reports). A QP the pacer holds waits on the wheel. */
static bool qp_has_new_work(const struct xrxe_tp_qp *qp)
{
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR && qp->state != IBV_QPS_SQE)
		return false;
	return xrxe_tpi_sq_has_new(qp) && !qp->cc.wait.queued;
}

/* A QP in Error flushes receive WQEs posted later (IBA 10.3.1), and a
 * receive post rings no doorbell (the responder looks at the RQ when a
 * request arrives, docs/facts/rxe.md §4.3): such a QP keeps its turn while it
 * is in Error. Only QPs an application left in Error pay this (one test per
 * pass each); connected and idle ones are not queued. */
static bool qp_flushes_rq(const struct xrxe_tp_qp *qp)
{
	return qp->state == IBV_QPS_ERR && qp->rq;
}

bool xrxe_tp_poll(struct xrxe_tp *tp, uint64_t now_ns)
{
	struct xrxe_tp_qp *refile = NULL;
	uint64_t sent0 = tp->stats.tx_packets;
	bool did = false;
	uint32_t n;

	tp->now = now_ns;
	tp->tx_blocked = false;
	/* expired deadlines and pacer releases join the run queue (sched.c) */
	xrxe_tpi_sched_expire(tp, now_ns);
	/* One round over the QPs queued now (or its next TP_POLL_CALL_BUDGET
	 * packets); a QP that keeps work goes to the back, so QPs waiting for
	 * one shared thing -- the port pacer's next slot, TX buffers -- take
	 * turns. */
	for (n = tp->run_len; n; n--) {
		struct xrxe_tp_qp *qp;
		bool qdid;

		/* the rest of the round next call, after the caller's RX */
		if (tp->stats.tx_packets - sent0 >= TP_POLL_CALL_BUDGET) {
			did = true;
			break;
		}
		qp = xrxe_tpi_sched_pop(tp);
		if (!qp)
			break;
		uint64_t sent = qp->info.tx_packets;

		qdid = qp_poll(qp);
		did |= qdid;
		if (qdid || tp->tx_blocked || qp_has_new_work(qp) || qp_flushes_rq(qp))
			xrxe_tpi_sched_kick(qp);
		xrxe_tpi_sched_rearm(qp);
		if (qp->info.tx_packets != sent && qp->cc.wait.queued) {
			qp->refile_next = refile;
			refile = qp;
		}
	}
	/* QPs held by the port pacer (line_rate_pacing) are released together
	 * and the first one polled takes the slot. One that sent this pass
	 * goes behind those the pacer held back meanwhile (filed after it),
	 * so the slot goes round instead of to the same QP every time. */
	while (refile) {
		struct xrxe_tp_qp *qp = refile;
		uint64_t t = qp->cc.wait.t;

		refile = qp->refile_next;
		xrxe_pacer_cancel(&tp->pacer, &qp->cc.wait);
		xrxe_pacer_schedule(&tp->pacer, &qp->cc.wait, t);
	}
	/* Work held back for lack of TX buffers is pending work: the caller
	 * must poll again (transport.h), no timer will. */
	return did || tp->tx_blocked;
}

void xrxe_tp_qp_doorbell(struct xrxe_tp *tp, struct xrxe_tp_qp *qp)
{
	(void)tp;
	if (qp)
		xrxe_tpi_sched_kick(qp);
}

uint64_t xrxe_tp_next_deadline(const struct xrxe_tp *tp)
{
	/* CC hook: the pacer's next release (cc.c); the QPs' timers (sched.c) */
	uint64_t d = xrxe_pacer_next(&tp->pacer), q = xrxe_tpi_sched_next(tp);

	return q < d ? q : d;
}

bool xrxe_tp_sq_pending(const struct xrxe_tp *tp)
{
	const struct xrxe_tp_qp *qp;

	/* Only queued QPs can have posted WQEs the core knows of: a post
	 * reaches the core through xrxe_tp_qp_doorbell, which queues the QP.
	 * WQEs not started are work (keep spinning: the ACK or completion a
	 * blocked QP waits for is usually a round trip away, and a sleep
	 * there cost ~6 % of 64 KiB ib_write_bw) -- unless the pacer holds
	 * the QP, new posts included: nothing of it can leave before its
	 * release, a deadline the daemon sleeps until. Counting a paced
	 * backlog as work kept the daemon spinning at any rate (a whole core
	 * at 100 Mbit/s). */
	for (qp = tp->run_head; qp; qp = qp->run_next)
		if (qp_has_new_work(qp))
			return true;
	return false;
}

/* --- introspection ---------------------------------------------------------- */

int xrxe_tp_qp_foreach(struct xrxe_tp *tp, int (*fn)(void *arg, const struct xrxe_tp_qp_info *),
		       void *arg)
{
	struct xrxe_tp_qp *qp;
	int ret;

	for (qp = tp->qps; qp; qp = qp->next) {
		struct xrxe_tp_qp_info info = qp->info;

		info.qpn = qp->qpn;
		info.dest_qpn = qp->attr.dest_qp_num;
		info.qp_type = xrxe_tpi_qp_type(qp);
		info.state = qp->state;
		info.sq_psn = qp->req.psn;
		info.acked_psn = qp->comp.psn;
		info.rq_psn = qp->resp.psn;
		info.srtt_ns = qp->comp.srtt_ns;
		info.cwnd = qp->type == IBV_QPT_RC ? xrxe_tpi_rto_cwnd(qp) : 0;
		info.selective_repeat = qp->sr;
		xrxe_tpi_cc_info(qp, &info); /* CC hook (cc.c) */
		ret = fn(arg, &info);
		if (ret)
			return ret;
	}
	return 0;
}

void xrxe_tp_get_stats(const struct xrxe_tp *tp, struct xrxe_tp_stats *stats)
{
	*stats = tp->stats;
}
