// SPDX-License-Identifier: MIT
/*
 * Congestion control in the transport: where DCQCN (dcqcn.c, np.c, pacer.c,
 * all pure) meets QPs and packets. docs/facts/dcqcn.md §1-2 and §5.
 *
 *   RX  CE-marked packet for a QP ─▶ NP limiter ─▶ CNP owed ─▶ sent on poll
 *       CNP for a QP ─▶ its reaction point (rate cut, at most one per period)
 *   TX  requester / READ responses ─▶ pacer gate (earliest departure time of
 *       the QP, and of the port with line_rate_pacing; the wheel holds
 *       waiting QPs and gives the next deadline)
 *       every frame the QP sends ─▶ EDT (QP and port) + byte counter
 *
 * A QP at line rate (never got a CNP, or recovered) is not limited: the gate
 * and the accounting are one test of rp.limited (and one of the port).
 */
#include <string.h>

#include "transport/tp_internal.h"

#define ECN_MASK 0x03u
#define ECN_CE 0x03u
#define ECN_ECT0 0x02u
#define NS_PER_US 1000ull
#define RX_TIME_MAX_AGE_NS 1000000000ull

uint64_t xrxe_tp_cc_max_bps(const struct xrxe_tp *tp)
{
	return tp->cc_max_bps;
}

static uint64_t max_bps_of(const struct xrxe_tp *tp, const struct xrxe_tp_cc_params *p)
{
	uint32_t mbps = p->rp_max_rate ? p->rp_max_rate : tp->cfg.line_rate_mbps;

	return (uint64_t)mbps * 1000000ull;
}

void xrxe_tpi_cc_init(struct xrxe_tp *tp)
{
	if (!tp->cfg.line_rate_mbps)
		tp->cfg.line_rate_mbps = 100000;
	xrxe_tp_cc_defaults(&tp->cc);
	tp->cc_max_bps = max_bps_of(tp, &tp->cc);
	xrxe_pacer_init(&tp->pacer, 0);
}

void xrxe_tpi_cc_qp_reset(struct xrxe_tp_qp *qp)
{
	xrxe_pacer_cancel(&qp->tp->pacer, &qp->cc.wait);
	xrxe_dcqcn_init(&qp->cc.rp, qp->tp->cc_max_bps);
	memset(&qp->cc.np, 0, sizeof(qp->cc.np));
	memset(&qp->cc.edt, 0, sizeof(qp->cc.edt));
	qp->cc.cnp_owed = false;
}

void xrxe_tpi_cc_qp_fini(struct xrxe_tp_qp *qp)
{
	xrxe_pacer_cancel(&qp->tp->pacer, &qp->cc.wait);
}

uint8_t xrxe_tpi_cc_tclass(const struct xrxe_tp *tp, uint8_t av_tclass)
{
	const struct xrxe_tp_cc_params *p = &tp->cc;
	uint8_t dscp = p->data_dscp == XRXE_CC_DSCP_APP ? av_tclass >> 2 : (uint8_t)p->data_dscp;

	/* ECN-capable only while someone reacts to the marks: an AQM marks
	 * ECT packets instead of dropping them (docs/facts/dcqcn.md §2.2). */
	return (uint8_t)(dscp << 2 | (p->enabled ? p->data_ecn : 0));
}

/* The rate a QP's own frames are paced to, 0 = not paced: its DCQCN rate
 * while limited. */
static uint64_t pace_bps(const struct xrxe_tp_qp *qp)
{
	return __builtin_expect(!qp->cc.rp.limited, 1) ? 0 : qp->cc.rp.rc;
}

/* line_rate_pacing: the port serialises the data of all QPs together at the
 * ceiling, as a NIC port of rp_max_rate does by itself. On a faster link
 * such as veth nothing else would: QPs released by DCQCN (or, on a busy
 * host, QPs catching up after their daemon was not scheduled) would leave
 * at the link's speed together, N times the ceiling for N QPs, into a
 * bottleneck of the port's speed. */
static bool port_paced(const struct xrxe_tp *tp)
{
	return tp->cc.enabled && tp->cc.line_rate_pacing;
}

/* The rate changed from old_bps (the QP's Rc before; the ceiling when it was
 * not limited): the pending gap follows (docs/facts/dcqcn.md §5); a QP no longer
 * paced leaves the wheel. */
static void rate_changed(struct xrxe_tp_qp *qp, uint64_t old_bps)
{
	struct tp_cc *c = &qp->cc;
	uint64_t now_bps = pace_bps(qp);

	if (!now_bps) {
		xrxe_pacer_cancel(&qp->tp->pacer, &c->wait);
		return;
	}
	if (now_bps == old_bps)
		return;
	xrxe_edt_rescale(&c->edt, old_bps, now_bps, qp->tp->now);
	if (c->wait.queued)
		xrxe_pacer_schedule(&qp->tp->pacer, &c->wait, c->edt.next);
}

static uint8_t pkt_ecn(const struct xrxe_pkt *pkt)
{
	const uint8_t *ip = pkt->frag[0].data + pkt->l3_off;

	/* IPv4 TOS; IPv6 traffic class = low nibble of byte 0, high of byte 1 */
	return pkt->ip_version == 4 ? ip[1] & ECN_MASK : (ip[1] >> 4) & ECN_MASK;
}

/* When pkt reached the interface: the XDP program's stamp (xrxe/steer.h),
 * or now when there is none or it makes no sense (later than now, or more
 * than a second old). DCQCN runs on these times: a daemon that was not
 * scheduled for a while reads a burst of frames at once, and the CNPs in
 * it were spread over that while -- handled at one instant they would be
 * one alpha update and one rate cut (docs/facts/dcqcn.md §1.5: "a CNP in the last
 * period") where a NIC makes several. */
static uint64_t rx_time(const struct xrxe_tp *tp, const struct xrxe_pkt *pkt)
{
	if (!pkt->rx_ns || pkt->rx_ns > tp->now || tp->now - pkt->rx_ns > RX_TIME_MAX_AGE_NS)
		return tp->now;
	return pkt->rx_ns;
}

void xrxe_tpi_cc_rx(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt)
{
	struct xrxe_tp *tp = qp->tp;

	if (pkt_ecn(pkt) != ECN_CE)
		return;
	qp->cc.ecn_marked++;
	tp->stats.ecn_ce_qp++;
	/* A CNP names the peer QP: connected QPs only (a UD peer is not in
	 * the QP context, docs/facts/dcqcn.md §1.8). */
	if (!tp->cc.enabled || qp->type == IBV_QPT_UD || !qp->av_set)
		return;
	if (xrxe_np_ce(&qp->cc.np, (uint64_t)tp->cc.np_min_time_between_cnps * NS_PER_US,
		       rx_time(tp, pkt)))
		qp->cc.cnp_owed = true;
	else
		tp->stats.cnp_suppressed++;
}

void xrxe_tpi_cc_cnp_rx(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, bool from_peer)
{
	struct xrxe_tp *tp = qp->tp;
	uint64_t old = qp->cc.rp.rc, t;

	/* only a QP that sends (RTS, SQD) has a rate to cut */
	if (!from_peer || (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)) {
		tp->stats.cnp_rcvd_no_qp++;
		return;
	}
	tp->stats.cnp_rcvd++;
	if (!tp->cc.enabled)
		return;
	/* the RP's timers due before the CNP arrived come first */
	t = rx_time(tp, pkt);
	xrxe_dcqcn_timers(&qp->cc.rp, &tp->cc, tp->cc_max_bps, t);
	xrxe_dcqcn_cnp(&qp->cc.rp, &tp->cc, tp->cc_max_bps, t);
	rate_changed(qp, old);
}

/* CNP (RoCEv2 Annex A17.9.3, docs/facts/dcqcn.md §2.1): BTH opcode 0x81, BECN set,
 * P_Key 0xFFFF, DestQP = the peer's QPN, PSN 0, 16 reserved zero bytes, ICRC;
 * marked with np_cnp_dscp and ECT(0) as the software generator of
 * libconntrack-cm does (tos 0xc2). 0 or -ENOBUFS. */
static int send_cnp(struct xrxe_tp_qp *qp)
{
	struct xrxe_tp *tp = qp->tp;
	struct xrxe_pkt_spec spec;
	struct tp_tx tx;
	int err;

	xrxe_tpi_spec_init(qp, &qp->av, &spec);
	spec.tclass = (uint8_t)(tp->cc.np_cnp_dscp << 2 | ECN_ECT0);
	spec.opcode = XRXE_OP_CNP;
	spec.becn = true;
	spec.psn = 0;
	err = xrxe_tpi_tx_begin(tp, &spec, &tx);
	if (err)
		return err;
	/* not the QP's data: neither paced nor in its byte counter */
	xrxe_tpi_tx_finish(tp, NULL, &tx);
	qp->cc.cnps_sent++;
	tp->stats.cnp_sent++;
	return 0;
}

bool xrxe_tpi_cc_poll(struct xrxe_tp_qp *qp)
{
	struct tp_cc *c = &qp->cc;
	bool did = false;

	if (c->cnp_owed && qp->av_set) {
		if (send_cnp(qp) == 0) {
			c->cnp_owed = false;
			did = true;
		}
	}
	if (c->rp.limited) {
		uint64_t old = c->rp.rc;
		uint64_t dec = c->rp.decreases, inc = c->rp.increases;

		xrxe_dcqcn_timers(&c->rp, &qp->tp->cc, qp->tp->cc_max_bps, qp->tp->now);
		rate_changed(qp, old);
		did |= dec != c->rp.decreases || inc != c->rp.increases;
	}
	return did;
}

bool xrxe_tpi_cc_may_send(struct xrxe_tp_qp *qp)
{
	struct xrxe_tp *tp = qp->tp;
	struct tp_cc *c = &qp->cc;

	uint64_t release = 0;

	if (pace_bps(qp) && c->edt.next > tp->now)
		release = c->edt.next;
	if (port_paced(tp) && tp->port_edt.next > tp->now && tp->port_edt.next > release)
		release = tp->port_edt.next;
	if (!release)
		return true;
	/* Every QP held by the port wakes at its next slot; xrxe_tp_poll's
	 * round robin decides which one takes it, the others wait again. */
	if (!c->wait.queued)
		tp->stats.paced++;
	xrxe_pacer_schedule(&tp->pacer, &c->wait, release);
	return false;
}

void xrxe_tpi_cc_sent(struct xrxe_tp_qp *qp, uint32_t bytes)
{
	struct xrxe_tp *tp = qp->tp;
	struct tp_cc *c = &qp->cc;
	uint64_t old = pace_bps(qp);

	if (port_paced(tp))
		xrxe_edt_sent(&tp->port_edt, bytes, tp->cc_max_bps, tp->now);
	if (!old)
		return; /* not limited: no DCQCN state to move */
	xrxe_edt_sent(&c->edt, bytes, old, tp->now);
	xrxe_dcqcn_sent(&c->rp, &tp->cc, tp->cc_max_bps, bytes, tp->now);
	rate_changed(qp, old);
}

uint64_t xrxe_tpi_cc_deadline(const struct xrxe_tp_qp *qp)
{
	return xrxe_dcqcn_deadline(&qp->cc.rp);
}

void xrxe_tpi_cc_info(const struct xrxe_tp_qp *qp, struct xrxe_tp_qp_info *info)
{
	const struct tp_cc *c = &qp->cc;

	info->cc_limited = c->rp.limited;
	info->cc_rate_bps = c->rp.rc;
	info->cc_target_bps = c->rp.rt;
	info->cc_rate_min_bps = c->rp.rc_min;
	info->cc_alpha = xrxe_dcqcn_alpha(&c->rp, &qp->tp->cc, qp->tp->now);
	info->cnps_sent = c->cnps_sent;
	info->cnps_handled = c->rp.cnps;
	info->ecn_marked = c->ecn_marked;
}

/* --- parameters ----------------------------------------------------------------- */

int xrxe_tp_cc_set(struct xrxe_tp *tp, const struct xrxe_tp_cc_params *p)
{
	char why[128];
	struct xrxe_tp_qp *qp;

	if (xrxe_cc_param_check(p, why, sizeof(why)))
		return -EINVAL;
	tp->cc = *p;
	tp->cc_max_bps = max_bps_of(tp, p);
	for (qp = tp->qps; qp; qp = qp->next) {
		uint64_t old = qp->cc.rp.rc;

		if (!p->enabled) {
			/* off: every limiter released at once, nothing owed */
			xrxe_dcqcn_init(&qp->cc.rp, tp->cc_max_bps);
			qp->cc.cnp_owed = false;
		} else {
			xrxe_dcqcn_rescale(&qp->cc.rp, tp->cc_max_bps);
		}
		rate_changed(qp, old);
		/* its DCQCN timers and pacing moved: filed again (sched.c) */
		xrxe_tpi_sched_kick(qp);
		xrxe_tpi_sched_rearm(qp);
	}
	return 0;
}

void xrxe_tp_cc_get(const struct xrxe_tp *tp, struct xrxe_tp_cc_params *p)
{
	*p = tp->cc;
}
