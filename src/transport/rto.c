// SPDX-License-Identifier: MIT
/*
 * Loss recovery beside go-back-N: loss probes, the send window under loss,
 * round-trip estimation. Nothing here puts on the wire anything a go-back-N
 * responder (kernel rxe, a NIC) does not already accept: a probe is a
 * packet sent before, sent again with AckReq set.
 *
 * Why probes: a lost request is normally repaired by the responder's PSN
 * sequence NAK. When that NAK is lost, or the resend it asked for is lost,
 * the responder stays silent -- it "must not return any other NAK" until the
 * expected PSN arrives (IBA 9.7.5.1.x, docs/facts/rxe.md §2.3) -- and a lost last
 * packet draws no NAK at all, so only the Local ACK Timeout recovers: 67 ms
 * at the usual timeout 14, hundreds of round trips. At 1 % loss each way
 * that was ~1.9 s of stall per 10 s (issue 19). An earlier version resent
 * from the oldest unacknowledged PSN on a fast timer (go-back-N of whatever
 * was outstanding), which drew 29-42 k duplicates per 10 s where the
 * Local ACK Timeout alone drew ~300: silence with a window in flight is
 * often just a late ACK.
 *
 * How: after rto = max(srtt + 4 rttvar, XRXE_TP_RTO_MIN_NS) without an
 * answer to an AckReq packet (doubled per probe until the next progress),
 * the requester sends two probes (req.c): the oldest unacknowledged PSN and
 * the newest PSN in flight (if a SEND/WRITE packet: req.c says why not a
 * READ), both with AckReq. Whatever state the responder is in, its answer
 * says what it lacks, at the cost of at most two duplicates:
 *   - it has everything (the ACKs were lost or late): both are duplicates,
 *     re-acknowledged with its last PSN (C9-105 for SEND/WRITE; READ and
 *     atomics replay their responses): the WQEs complete, nothing is resent;
 *   - it waits for the oldest one (a lost NAK, a lost resend): the first
 *     probe is that packet (accepted, so the responder may NAK again) and
 *     the second draws a sequence NAK for the next PSN: go-back-N from
 *     exactly there;
 *   - it waits for a later one whose NAK it did not send yet (a lost tail):
 *     the first probe is a duplicate, re-acknowledged up to the hole, and
 *     the second draws the NAK for the hole;
 *   - it waits for a later one and its NAK was lost: the first probe's ACK
 *     moves the requester up to the hole, the next probe (one rto later)
 *     is case two.
 * Only a NAK (or a READ response gap, or the Local ACK Timeout) rewinds the
 * requester; ACKs never do, so a late ACK after a probe costs nothing.
 * The Local ACK Timeout keeps running beside the probes and alone charges
 * retry_cnt, so a dead peer still fails the WR with IBV_WC_RETRY_EXC_ERR
 * exactly when the spec says (IBA 9.7.6.1.3).
 *
 * Round trips: one AckReq packet at a time is timed (Karn: never one sent
 * again), giving srtt and rttvar as TCP does (RFC 6298 §2). The probe timer
 * runs while an AckReq packet is outstanding and is only armed while rto is
 * at most half the Local ACK Timeout and ends before the running one.
 * Packets without AckReq draw no ACK, so the timer starts when an AckReq
 * packet leaves, not when progress stops: a paced QP that sends its next
 * AckReq packet 5 ms after the last ACK is not "silent".
 *
 * The send window: with a go-back-N responder every packet in flight behind
 * a lost one is dropped and sent again, so a loss costs the whole window in
 * flight (at 1 % loss and 128 PSNs: more than one packet resent per packet
 * delivered). While the path loses packets the window is halved once per
 * recovery episode (not below XRXE_TP_CWND_MIN) and grows back by one PSN
 * per window acknowledged, as TCP's congestion avoidance does (RFC 5681
 * §3.1); on a clean path it stays at XRXE_TP_MAX_UNACKED_PSNS. With
 * --rexmit fixed there are no probes and the window stays fixed, as in rxe.
 */
#include "transport/tp_internal.h"

/* RFC 6298 gains: 1/8 for srtt, 1/4 for rttvar; rto = srtt + 4 rttvar. */
#define SRTT_SHIFT 3
#define RTTVAR_SHIFT 2
#define RTTVAR_MULT 4
/* Double at most this often (2^6 x 2 ms = 128 ms: past any ACK timeout the
 * fast timer could still undercut is pointless). */
#define BACKOFF_MAX 6
/* Needless probe rounds double the probe timer at most this often. */
#define SLACK_MAX 3

static bool rto_enabled(const struct xrxe_tp_qp *qp)
{
	return qp->type == IBV_QPT_RC && !qp->tp->cfg.fixed_ack_timeout;
}

uint32_t xrxe_tpi_rto_cwnd(const struct xrxe_tp_qp *qp)
{
	return qp->comp.cwnd ? qp->comp.cwnd : XRXE_TP_MAX_UNACKED_PSNS;
}

/* A probe round closes once everything outstanding when it opened is
 * acknowledged. Without a loss learnt in between it was probably needless
 * -- the responder was only late (a QEMU/TCG guest stalls for tens of ms)
 * -- and the next probes wait twice as long, up to SLACK_MAX doublings, so
 * a slow peer is not fed duplicates every few ms (Eifel's and F-RTO's idea,
 * RFC 3522 / 5682: undo what a spurious timeout taught). A round that finds
 * a loss, and every window acknowledged without a needless round, take one
 * doubling back. (A round whose newest-PSN probe was itself the lost last
 * packet finds the loss without learning it: counted needless, at worst
 * one doubling until the next window.) */
static void probe_close(struct xrxe_tp_qp *qp, bool found_loss)
{
	struct tp_comp *c = &qp->comp;

	if (!c->probe_open)
		return;
	c->probe_open = false;
	c->slack_acc = 0;
	if (found_loss) {
		if (c->slack)
			c->slack--;
	} else if (c->slack < SLACK_MAX) {
		c->slack++;
	}
}

static void slack_ack(struct xrxe_tp_qp *qp, uint32_t acked)
{
	struct tp_comp *c = &qp->comp;

	if (!c->slack)
		return;
	c->slack_acc += acked;
	if (c->slack_acc >= XRXE_TP_MAX_UNACKED_PSNS) {
		c->slack_acc = 0;
		c->slack--;
	}
}

void xrxe_tpi_rto_loss(struct xrxe_tp_qp *qp)
{
	struct tp_comp *c = &qp->comp;
	uint32_t w = xrxe_tpi_rto_cwnd(qp);

	if (qp->type != IBV_QPT_RC)
		return;
	probe_close(qp, true);
	if (c->recovery)
		return;
	/* One episode per loss event: the losses of packets already in
	 * flight when it was learnt are part of it. */
	c->recovery = true;
	c->recovery_hi = qp->req.psn_hi;
	qp->info.recoveries++;
	/* With selective repeat a loss costs only what was lost, not the
	 * window behind it (sr.c): the window stays (but see
	 * xrxe_tpi_rto_timeout). */
	if (!rto_enabled(qp) || qp->sr)
		return;
	w /= 2;
	c->cwnd = w < XRXE_TP_CWND_MIN ? XRXE_TP_CWND_MIN : w;
	c->cwnd_acc = 0;
}

/* The Local ACK Timeout ran out: for a whole timeout nothing came back,
 * not even a SACK. That is not a random loss but a peer (or path) that
 * stopped keeping up -- on a loaded machine a daemon that does not run for
 * tens of milliseconds, whose receive ring then overflows. Go-back-N halves
 * its window once per episode anyway (xrxe_tpi_rto_loss); selective repeat,
 * which keeps its window through random losses, halves it here, at every
 * timeout (TCP cuts its window on a retransmission timeout too, RFC 5681
 * §3.1): else each timeout sends a whole window again into the peer that
 * could not take the last one, and in a run at load average 13 that ended
 * in IBV_WC_RETRY_EXC_ERR with no loss at all, where go-back-N QPs came
 * through. The window grows back by one PSN per window acknowledged. */
void xrxe_tpi_rto_timeout(struct xrxe_tp_qp *qp)
{
	struct tp_comp *c = &qp->comp;
	uint32_t w = xrxe_tpi_rto_cwnd(qp) / 2;

	if (!rto_enabled(qp) || !qp->sr)
		return;
	c->cwnd = w < XRXE_TP_CWND_MIN ? XRXE_TP_CWND_MIN : w;
	c->cwnd_acc = 0;
}

/* comp.psn moved forward by acked PSNs: the episode ends once everything
 * sent before it is acknowledged; outside one the window grows. */
static void cwnd_ack(struct xrxe_tp_qp *qp, uint32_t acked)
{
	struct tp_comp *c = &qp->comp;
	uint32_t w = xrxe_tpi_rto_cwnd(qp);

	if (c->recovery) {
		if (xrxe_psn_cmp(c->psn, c->recovery_hi) < 0)
			return;
		c->recovery = false;
	}
	if (!c->cwnd || w >= XRXE_TP_MAX_UNACKED_PSNS) {
		c->cwnd = 0; /* back to the full window (selective repeat's too) */
		return;
	}
	c->cwnd_acc += acked;
	if (c->cwnd_acc >= w) {
		c->cwnd_acc -= w;
		c->cwnd = w + 1;
	}
}

static uint64_t rto_ns(const struct xrxe_tp_qp *qp)
{
	uint64_t rto = qp->comp.srtt_ns + RTTVAR_MULT * qp->comp.rttvar_ns;

	return (rto < XRXE_TP_RTO_MIN_NS ? XRXE_TP_RTO_MIN_NS : rto) << qp->comp.slack;
}

/* An AckReq packet is out and not yet acknowledged: PSN in [comp.psn,
 * psn_hi). (After a rewind, one sent before it still counts: the probe
 * answers for it too.) */
static bool ackreq_outstanding(const struct xrxe_tp_qp *qp)
{
	return qp->req.ackreq_sent &&
	       xrxe_psn_cmp(qp->req.ackreq_psn, qp->comp.psn) >= 0 &&
	       xrxe_psn_cmp(qp->req.ackreq_psn, qp->req.psn_hi) < 0;
}

static void fast_arm(struct xrxe_tp_qp *qp)
{
	uint64_t t, limit = xrxe_tpi_ack_timeout_ns(qp->attr.timeout);

	qp->comp.fast_deadline = XRXE_TP_NO_DEADLINE;
	if (!rto_enabled(qp))
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

void xrxe_tpi_rto_sent(struct xrxe_tp_qp *qp, uint32_t psn, uint32_t npsn, bool ackreq,
		       bool resent)
{
	/* A READ is answered up to the last PSN it takes; its first
	 * response packet times the round trip (the rest of the response
	 * is transfer time, and queued behind earlier READs' responses) */
	uint32_t last = xrxe_psn_add(psn, npsn - 1);

	if (resent)
		qp->info.resent_packets++;
	/* The round trip is measured with --rexmit fixed too (xrxe qp) */
	if (!ackreq || qp->type != IBV_QPT_RC)
		return;
	/* The newest AckReq packet (a probe may be an older PSN) */
	if (!qp->req.ackreq_sent || xrxe_psn_cmp(last, qp->req.ackreq_psn) > 0 ||
	    xrxe_psn_cmp(qp->req.ackreq_psn, qp->comp.psn) < 0)
		qp->req.ackreq_psn = last;
	qp->req.ackreq_sent = true;
	/* Karn: a packet sent before may be answered for either copy */
	if (!qp->comp.rtt_timing && !resent) {
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

void xrxe_tpi_rto_held(struct xrxe_tp_qp *qp)
{
	/* Selective repeat: a SACK naming the packet being timed held answers
	 * it as an ACK would (the first SACK after a loss at the start of a
	 * connection is the first answer at all: without a sample there are
	 * no probes) */
	if (qp->comp.rtt_timing && qp->srs &&
	    xrxe_tpi_sr_bit(qp->srs->sacked, qp, qp->comp.rtt_psn)) {
		uint64_t r = qp->tp->now - qp->comp.rtt_sent_ns;

		qp->comp.rtt_timing = false;
		rtt_sample(qp, r ? r : 1);
		if (qp->comp.fast_deadline == XRXE_TP_NO_DEADLINE && ackreq_outstanding(qp))
			fast_arm(qp);
	}
}

void xrxe_tpi_rto_progress(struct xrxe_tp_qp *qp, uint32_t acked)
{
	if (qp->type != IBV_QPT_RC)
		return;
	cwnd_ack(qp, acked);
	if (qp->comp.rtt_timing && xrxe_psn_cmp(qp->comp.psn, qp->comp.rtt_psn) > 0) {
		uint64_t r = qp->tp->now - qp->comp.rtt_sent_ns;

		qp->comp.rtt_timing = false;
		rtt_sample(qp, r ? r : 1); /* srtt 0 means "no sample" */
	}
	if (qp->comp.probe_open && xrxe_psn_cmp(qp->comp.psn, qp->comp.probe_hi) >= 0)
		probe_close(qp, qp->info.recoveries != qp->comp.probe_recov);
	else if (!qp->comp.probe_open)
		slack_ack(qp, acked);
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
	struct tp_comp *c = &qp->comp;

	c->fast_deadline = XRXE_TP_NO_DEADLINE;
	if (!c->probe_open && xrxe_tpi_outstanding(qp)) {
		c->probe_open = true;
		c->probe_recov = qp->info.recoveries;
	}
	c->probe_hi = qp->req.psn_hi;
	/* Karn: the probes may send the packet being timed again */
	c->rtt_timing = false;
	if (qp->comp.fast_backoff < BACKOFF_MAX)
		qp->comp.fast_backoff++;
	return true;
}
