// SPDX-License-Identifier: MIT
/*
 * Adaptive retransmission: an RC requester that is recovering from a loss,
 * or has only a tail outstanding, and hears nothing for a few round trips
 * resends from the oldest unacknowledged PSN without waiting out the Local
 * ACK Timeout.
 *
 * Why: a lost request is normally repaired by the responder's PSN sequence
 * NAK. When the retransmitted packet is lost as well the responder stays
 * silent -- it "must not return any other NAK" until the expected PSN
 * arrives (IBA 9.7.5.1.x, ref/rxe.md §2.3) -- and a lost last packet draws
 * no NAK at all, so only the Local ACK Timeout recovers: 67 ms at the usual timeout 14, hundreds of round trips of an
 * idle QP. At 1 % random loss that was 9 stalls in 4 s, 15 % of the link
 * (docs/cc/README.md, "Fourth round"). NVIDIA's ConnectX NICs retransmit
 * early too (Adaptive Retransmission, roce_adp_retrans_en).
 *
 * When: while recovering (comp.retrying: a NAK, a skipped READ or a timeout
 * made us go back, and the position has not moved since) -- there the
 * responder's silence is what the spec prescribes -- or when at most
 * XRXE_TP_RTO_TAIL_PSNS PSNs are outstanding: a lost last packet (tail
 * loss: an atomic, a small message, the end of a burst) draws no NAK at all.
 * Not otherwise: with a window in flight silence is usually a late ACK -- a
 * QEMU/TCG guest running kernel rxe answers tens of ms late at times -- and
 * an early go-back-N resends the whole window into it (armed on every
 * AckReq packet, the interop suite's 1 % loss rows drew 2.4-4x rxe's
 * duplicate_request). The tail rule bounds a needless retry to a few
 * packets.
 *
 * How: one AckReq packet at a time is timed (Karn: never one that was sent
 * again), giving srtt and rttvar as TCP does (RFC 6298 §2); the fast timer
 * runs while an AckReq packet is outstanding, for
 * rto = max(srtt + 4 rttvar, XRXE_TP_RTO_MIN_NS), doubled after each fast
 * retry until the next progress, and is only armed while that is at most
 * half the Local ACK Timeout and ends before the running one.
 * Packets without AckReq draw no ACK, so the timer starts when an AckReq
 * packet leaves, not when progress stops: a paced QP that sends its next
 * AckReq packet 5 ms after the last ACK is not "silent".
 *
 * Fast retries do not use the retry budget (retry_cnt): the Local ACK Timeout
 * keeps running untouched beside them and alone charges it, so a dead peer
 * still fails the WR with IBV_WC_RETRY_EXC_ERR exactly when the spec says.
 * A fast retry that was not needed (a slow responder) costs a resend of what
 * is outstanding -- a tail, or what a recovery resends anyway -- which the
 * responder treats as duplicates (IBA 9.7.5.1.x).
 */
#include "transport/tp_internal.h"

/* RFC 6298 gains: 1/8 for srtt, 1/4 for rttvar; rto = srtt + 4 rttvar. */
#define SRTT_SHIFT 3
#define RTTVAR_SHIFT 2
#define RTTVAR_MULT 4
/* Double at most this often (2^6 x 2 ms = 128 ms: past any ACK timeout the
 * fast timer could still undercut is pointless). */
#define BACKOFF_MAX 6

static bool rto_enabled(const struct xrxe_tp_qp *qp)
{
	return qp->type == IBV_QPT_RC && !qp->tp->cfg.fixed_ack_timeout;
}

/* Recovering, or only a tail outstanding (above). */
static bool fast_allowed(const struct xrxe_tp_qp *qp)
{
	return qp->comp.retrying ||
	       xrxe_psn_sub(qp->req.psn_hi, qp->comp.psn) <= XRXE_TP_RTO_TAIL_PSNS;
}

static uint64_t rto_ns(const struct xrxe_tp_qp *qp)
{
	uint64_t rto = qp->comp.srtt_ns + RTTVAR_MULT * qp->comp.rttvar_ns;

	return rto < XRXE_TP_RTO_MIN_NS ? XRXE_TP_RTO_MIN_NS : rto;
}

/* An AckReq packet is out and not yet acknowledged: PSN in [comp.psn,
 * req.psn). After a rewind req.psn = comp.psn and none is. */
static bool ackreq_outstanding(const struct xrxe_tp_qp *qp)
{
	return qp->req.ackreq_sent &&
	       xrxe_psn_cmp(qp->req.ackreq_psn, qp->comp.psn) >= 0 &&
	       xrxe_psn_cmp(qp->req.ackreq_psn, qp->req.psn) < 0;
}

static void fast_arm(struct xrxe_tp_qp *qp)
{
	uint64_t t, limit = xrxe_tpi_ack_timeout_ns(qp->attr.timeout);

	qp->comp.fast_deadline = XRXE_TP_NO_DEADLINE;
	if (!rto_enabled(qp) || !fast_allowed(qp))
		return;
	if (!qp->comp.srtt_ns) /* no sample: nothing to adapt to */
		return;
	/* Never on a QP without a Local ACK Timeout (timeout 0: the
	 * application asked to wait forever), and only while the fast timer
	 * is at most half of it: later, the timeout itself is as good. */
	t = rto_ns(qp) << qp->comp.fast_backoff;
	if (limit == XRXE_TP_NO_DEADLINE || t > limit / 2)
		return;
	/* Nor where the running Local ACK Timeout comes first. */
	if (qp->comp.rexmit_deadline != XRXE_TP_NO_DEADLINE &&
	    qp->tp->now + t >= qp->comp.rexmit_deadline)
		return;
	qp->comp.fast_deadline = qp->tp->now + t;
}

void xrxe_tpi_rto_sent(struct xrxe_tp_qp *qp, uint32_t psn, bool ackreq)
{
	/* The round trip is measured with --rexmit fixed too (xrxe qp) */
	if (!ackreq || qp->type != IBV_QPT_RC)
		return;
	qp->req.ackreq_psn = psn;
	qp->req.ackreq_sent = true;
	if (!qp->comp.rtt_timing) {
		qp->comp.rtt_timing = true;
		qp->comp.rtt_psn = psn;
		qp->comp.rtt_sent_ns = qp->tp->now;
	}
	if (qp->comp.fast_deadline == XRXE_TP_NO_DEADLINE)
		fast_arm(qp);
}

static void rtt_sample(struct xrxe_tp_qp *qp, uint64_t r)
{
	struct tp_comp *c = &qp->comp;

	if (!c->srtt_ns) { /* RFC 6298 (2.2) */
		c->srtt_ns = r;
		c->rttvar_ns = r / 2;
		return;
	}
	/* (2.3): rttvar first, with the old srtt */
	uint64_t d = r > c->srtt_ns ? r - c->srtt_ns : c->srtt_ns - r;

	c->rttvar_ns = c->rttvar_ns - (c->rttvar_ns >> RTTVAR_SHIFT) + (d >> RTTVAR_SHIFT);
	c->srtt_ns = c->srtt_ns - (c->srtt_ns >> SRTT_SHIFT) + (r >> SRTT_SHIFT);
}

void xrxe_tpi_rto_progress(struct xrxe_tp_qp *qp)
{
	if (qp->type != IBV_QPT_RC)
		return;
	if (qp->comp.rtt_timing && xrxe_psn_cmp(qp->comp.psn, qp->comp.rtt_psn) > 0) {
		uint64_t r = qp->tp->now - qp->comp.rtt_sent_ns;

		qp->comp.rtt_timing = false;
		rtt_sample(qp, r ? r : 1); /* srtt 0 means "no sample" */
	}
	qp->comp.fast_backoff = 0;
	if (ackreq_outstanding(qp))
		fast_arm(qp);
	else
		qp->comp.fast_deadline = XRXE_TP_NO_DEADLINE;
}

void xrxe_tpi_rto_rewound(struct xrxe_tp_qp *qp)
{
	/* Karn: the packet being timed will be sent again; its ACK could
	 * answer either copy. The fast timer restarts with the next AckReq
	 * packet of the resend. */
	qp->comp.rtt_timing = false;
	qp->comp.fast_deadline = XRXE_TP_NO_DEADLINE;
}

bool xrxe_tpi_rto_expired(struct xrxe_tp_qp *qp)
{
	qp->comp.fast_deadline = XRXE_TP_NO_DEADLINE;
	/* More was sent since it was armed: no longer a tail. Progress or
	 * the next AckReq packet looks again. */
	if (!fast_allowed(qp))
		return false;
	if (qp->comp.fast_backoff < BACKOFF_MAX)
		qp->comp.fast_backoff++;
	return true;
}
