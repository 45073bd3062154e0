// SPDX-License-Identifier: MIT
/*
 * Selective repeat between xrxe peers (docs/selective-repeat.md): the
 * responder keeps request packets that arrive past a hole instead of
 * dropping them, and names what it holds in a SACK (opcode 0xE0, from the
 * IBA's manufacturer-specific range); the requester sends again only what
 * the SACKs, ACKs and READ responses say is missing.
 *
 * Only for RC QPs whose peer agreed (ECE in the CM's REQ/REP, or the
 * device setting for QPs connected without the CM, qp.c): go-back-N
 * peers never see a SACK, and nothing here changes what an xrxe QP
 * sends to them.
 *
 * Responder: a packet up to XRXE_TP_SR_WIN PSNs past the expected one is
 * copied into its slot (psn % SR_WIN) and executed, through the same code
 * and checks as any in-order packet (resp.c), once the hole before it is
 * filled: every operation keeps its IBA semantics (C9-x ordering, MSNs,
 * RNR, errors) because nothing executes out of order; only the copy of
 * the frame is extra, and only for packets that arrive past a hole.
 * A held packet is never executed twice: its slot is freed when it runs,
 * and one the in-order stream passed (a resend, or a READ's range) is
 * pruned.
 *
 * Requester: a scoreboard over the XRXE_TP_SR_RING PSNs from the oldest
 * unacknowledged one (bit per PSN): what the responder holds (SACK), which
 * READ/atomic responses were received (placed by their offset as they
 * come, in any order) and what was asked for again. A request packet is
 * lost when a SACK names a later PSN held but not it; a response when a
 * later response or acknowledgement came and it did not (the responder
 * answers in PSN order). Lost ones go on a short list (todo) that the
 * requester sends before new data (req.c): a SEND/WRITE packet again, or
 * a READ request for exactly the missing response packets. A resend that
 * is lost too is sent again once a SACK names held a PSN first sent after
 * it (the RACK idea, RFC 8985: no reordering on the path is assumed, only
 * tolerated, at the cost of a duplicate); anything else (a lost SACK
 * tail, a lost READ repair) falls to the loss probes and the Local ACK
 * Timeout (rto.c, comp.c), exactly as under go-back-N.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tp_internal.h"

#define WIN_MASK (XRXE_TP_SR_WIN - 1)
#define RING_MASK (XRXE_TP_SR_RING - 1)
/* A SACK at least every this many packets held (besides the one after
 * each new hole and one per AckReq packet): a lost SACK costs little. */
#define SACK_EVERY 16u

_Static_assert((XRXE_TP_SR_WIN & WIN_MASK) == 0, "SR window is a power of two");
_Static_assert((XRXE_TP_SR_RING & RING_MASK) == 0, "SR ring is a power of two");
_Static_assert(XRXE_TP_SR_WIN >= XRXE_TP_MAX_UNACKED_PSNS, "a window fits the hold slots");
_Static_assert(XRXE_TP_SR_SLOT <= UINT16_MAX, "hold_len is 16 bits");

int xrxe_tpi_sr_enable(struct xrxe_tp_qp *qp)
{
	if (!qp->srs) {
		struct tp_sr *s = calloc(1, sizeof(*s));

		if (!s)
			return -ENOMEM;
		s->frames = malloc((size_t)XRXE_TP_SR_WIN * XRXE_TP_SR_SLOT);
		if (!s->frames) {
			free(s);
			return -ENOMEM;
		}
		qp->srs = s;
	}
	xrxe_tpi_sr_reset(qp);
	qp->sr = true;
	return 0;
}

void xrxe_tpi_sr_reset(struct xrxe_tp_qp *qp)
{
	struct tp_sr *s = qp->srs;
	uint8_t *frames;

	if (!s)
		return;
	frames = s->frames;
	memset(s, 0, sizeof(*s));
	s->frames = frames;
}

void xrxe_tpi_sr_free(struct xrxe_tp_qp *qp)
{
	if (!qp->srs)
		return;
	free(qp->srs->frames);
	free(qp->srs);
	qp->srs = NULL;
	qp->sr = false;
}

/* --- responder --------------------------------------------------------- */

static uint8_t *slot_of(struct tp_sr *s, uint32_t i)
{
	return s->frames + (size_t)i * XRXE_TP_SR_SLOT;
}

static void slot_free(struct tp_sr *s, uint32_t i)
{
	if (s->hold_len[i]) {
		s->hold_len[i] = 0;
		s->nheld--;
	}
}

int xrxe_tpi_sr_hold(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn, bool *sack)
{
	struct tp_sr *s = qp->srs;
	uint32_t d = xrxe_psn_sub(psn, qp->resp.psn), i = psn & WIN_MASK, prev, off = 0, f;
	uint32_t npsn = 1;

	*sack = false;
	if (!s || d == 0 || d >= XRXE_TP_SR_WIN || pkt->len > XRXE_TP_SR_SLOT)
		return -ENOSPC;
	if (s->hold_len[i] && s->hold_psn[i] == psn) {
		qp->info.duplicates++;
		return 0;
	}
	if (pkt->op->flags & XRXE_OPF_READ) {
		const struct xrxe_reth *reth = xrxe_pkt_hdr(pkt, XRXE_HDR_RETH);
		uint32_t len = reth ? xrxe_reth_len(reth) : 0;

		/* its responses take one PSN each (docs/facts/rxe.md §2.1); a length
		 * the responder will refuse is held as one PSN and refused
		 * when it runs */
		if (len > qp->mtu && len <= XRXE_TP_MAX_MSG)
			npsn = (len + qp->mtu - 1) / qp->mtu;
	}
	slot_free(s, i); /* a stale packet the stream passed, if any */
	for (f = 0; f < pkt->nfrags && off < pkt->len; f++) {
		uint32_t n = pkt->frag[f].len < pkt->len - off ? pkt->frag[f].len : pkt->len - off;

		memcpy(slot_of(s, i) + off, pkt->frag[f].data, n);
		off += n;
	}
	if (off != pkt->len)
		return -EINVAL; /* fragments shorter than the frame: not ours to guess */
	s->hold_psn[i] = psn;
	s->hold_npsn[i] = npsn;
	s->hold_len[i] = (uint16_t)pkt->len;
	s->nheld++;
	qp->info.ooo_held++;
	/* Tell the requester at once about a new hole (the PSN before this
	 * one is not held: nothing told it yet), and now and then after. */
	prev = xrxe_psn_sub(psn, 1);
	*sack = !(s->hold_len[prev & WIN_MASK] && s->hold_psn[prev & WIN_MASK] == prev) ||
		xrxe_bth_ackreq(xrxe_pkt_bth(pkt)) || s->nheld % SACK_EVERY == 0;
	return 1;
}

bool xrxe_tpi_sr_take(struct xrxe_tp_qp *qp, uint32_t psn, struct xrxe_pkt *out)
{
	struct tp_sr *s = qp->srs;
	uint32_t i = psn & WIN_MASK, len;

	if (!s || !s->nheld || !s->hold_len[i] || s->hold_psn[i] != psn)
		return false;
	len = s->hold_len[i];
	slot_free(s, i);
	/* Our own copy of a frame that passed every check when it arrived
	 * (the ICRC included): parsed again only to point into the copy. */
	return xrxe_parse(slot_of(s, i), len, XRXE_PARSE_SKIP_ICRC, out) == XRXE_PARSE_OK;
}

void xrxe_tpi_sr_passed(struct xrxe_tp_qp *qp, uint32_t psn)
{
	struct tp_sr *s = qp->srs;
	uint32_t i = psn & WIN_MASK;

	if (!s || !s->nheld)
		return;
	if (xrxe_psn_sub(qp->resp.psn, psn) > 1) {
		xrxe_tpi_sr_prune(qp); /* a READ's range */
		return;
	}
	if (s->hold_len[i] && s->hold_psn[i] == psn)
		slot_free(s, i); /* it came again in order before its turn */
}

void xrxe_tpi_sr_prune(struct xrxe_tp_qp *qp)
{
	struct tp_sr *s = qp->srs;

	if (!s || !s->nheld)
		return;
	for (uint32_t i = 0; i < XRXE_TP_SR_WIN; i++)
		if (s->hold_len[i] && xrxe_psn_cmp(s->hold_psn[i], qp->resp.psn) < 0)
			slot_free(s, i);
}

void xrxe_tpi_sr_drop_held(struct xrxe_tp_qp *qp)
{
	struct tp_sr *s = qp->srs;

	if (!s)
		return;
	memset(s->hold_len, 0, sizeof(s->hold_len));
	s->nheld = 0;
}

static void bitmap_set(uint8_t *out, uint32_t i)
{
	out[i / 8] |= (uint8_t)(1u << (i % 8));
}

void xrxe_tpi_sr_bitmap(const struct xrxe_tp_qp *qp, uint32_t cum, uint8_t out[XRXE_SACK_LEN])
{
	const struct tp_sr *s = qp->srs;
	uint32_t i, k;

	memset(out, 0, XRXE_SACK_LEN);
	if (!s)
		return;
	/* executed since the entry was queued */
	for (i = 0; i < XRXE_SACK_PSNS; i++) {
		if (xrxe_psn_cmp(xrxe_psn_add(cum, 1 + i), qp->resp.psn) >= 0)
			break;
		bitmap_set(out, i);
	}
	if (!s->nheld)
		return;
	for (i = 0; i < XRXE_TP_SR_WIN; i++) {
		uint32_t n = s->hold_npsn[i] < XRXE_SACK_PSNS ? s->hold_npsn[i] : XRXE_SACK_PSNS;

		if (!s->hold_len[i])
			continue;
		for (k = 0; k < n; k++) {
			uint32_t off = xrxe_psn_sub(xrxe_psn_add(s->hold_psn[i], k), cum);

			if (off >= 1 && off <= XRXE_SACK_PSNS)
				bitmap_set(out, off - 1);
		}
	}
}

/* --- requester ------------------------------------------------------------ */

static bool in_ring(const struct xrxe_tp_qp *qp, uint32_t psn)
{
	return xrxe_psn_sub(psn, qp->comp.psn) < XRXE_TP_SR_RING;
}

bool xrxe_tpi_sr_bit(const uint64_t *bits, const struct xrxe_tp_qp *qp, uint32_t psn)
{
	uint32_t i = psn & RING_MASK;

	return in_ring(qp, psn) && (bits[i / 64] >> (i % 64) & 1);
}

void xrxe_tpi_sr_set(uint64_t *bits, const struct xrxe_tp_qp *qp, uint32_t psn)
{
	uint32_t i = psn & RING_MASK;

	if (in_ring(qp, psn))
		bits[i / 64] |= 1ull << (i % 64);
}

/* READ/atomic response PSNs received in [comp.psn, req.psn): out of the
 * window's count, as they are no longer in flight (req.c window_full).
 * Bits in a circular bitmap, a word at a time. */
uint32_t xrxe_tpi_sr_received(const struct xrxe_tp_qp *qp)
{
	const struct tp_sr *s = qp->srs;
	uint32_t n = xrxe_psn_sub(qp->req.psn, qp->comp.psn), i = qp->comp.psn & RING_MASK;
	uint32_t count = 0;

	if (n > XRXE_TP_SR_RING)
		n = XRXE_TP_SR_RING;
	while (n) {
		uint32_t bit = i % 64, take = 64 - bit < n ? 64 - bit : n;
		uint64_t word = s->have[i / 64] >> bit;

		if (take < 64)
			word &= (1ull << take) - 1;
		count += (uint32_t)__builtin_popcountll(word);
		n -= take;
		i = (i + take) & RING_MASK;
	}
	return count;
}

static void bit_clear(uint64_t *bits, uint32_t psn)
{
	uint32_t i = psn & RING_MASK;

	bits[i / 64] &= ~(1ull << (i % 64));
}

void xrxe_tpi_sr_advanced(struct xrxe_tp_qp *qp, uint32_t old)
{
	struct tp_sr *s = qp->srs;
	uint32_t n = xrxe_psn_sub(qp->comp.psn, old), k;

	if (!s || !n || n > XRXE_PSN_MASK / 2)
		return;
	if (n >= XRXE_TP_SR_RING) {
		memset(s->sacked, 0, sizeof(s->sacked));
		memset(s->have, 0, sizeof(s->have));
		memset(s->resent, 0, sizeof(s->resent));
		memset(s->repair, 0, sizeof(s->repair));
	} else {
		for (k = 0; k < n; k++) {
			uint32_t p = xrxe_psn_add(old, k);

			bit_clear(s->sacked, p);
			bit_clear(s->have, p);
			bit_clear(s->resent, p);
			bit_clear(s->repair, p);
		}
	}
	if (s->sack_valid && xrxe_psn_cmp(s->sack_top, qp->comp.psn) < 0)
		s->sack_valid = false;
	/* (before it can wrap round to look ahead of comp.psn) */
	if (s->scan_valid && xrxe_psn_cmp(s->scan_hi, qp->comp.psn) < 0)
		s->scan_valid = false;
}

bool xrxe_tpi_sr_todo_push(struct xrxe_tp_qp *qp, uint32_t psn, uint32_t n)
{
	struct tp_sr *s = qp->srs;
	struct tp_sr_todo *t;

	if (s->todo_tail - s->todo_head >= XRXE_TP_SR_TODO)
		return false; /* the probes will find it */
	t = &s->todo[s->todo_tail++ % XRXE_TP_SR_TODO];
	t->psn = psn;
	t->n = n;
	return true;
}

/* Ask for psn again (mark it) unless it was asked for and nothing sent
 * after that ask has been seen held yet. */
static bool ask_again(struct xrxe_tp_qp *qp, uint32_t psn)
{
	struct tp_sr *s = qp->srs;

	if (xrxe_tpi_sr_bit(s->resent, qp, psn) &&
	    !(s->sack_valid && xrxe_psn_cmp(s->sack_top, s->resend_hi[psn & RING_MASK]) >= 0))
		return false;
	xrxe_tpi_sr_set(s->resent, qp, psn);
	s->resend_hi[psn & RING_MASK] = qp->req.psn_hi;
	return true;
}

/* Push a run of n request PSNs from psn (SEND/WRITE packets) */
static bool push_run(struct xrxe_tp_qp *qp, uint32_t psn, uint32_t n)
{
	return n == 0 || xrxe_tpi_sr_todo_push(qp, psn, n);
}

void xrxe_tpi_sr_sack_rx(struct xrxe_tp_qp *qp, uint32_t cum, const uint8_t *bitmap)
{
	struct tp_sr *s = qp->srs;
	bool any = false, lost = false;
	uint32_t i, idx, top = 0;

	for (i = 0; i < XRXE_SACK_PSNS; i++) {
		uint32_t p = xrxe_psn_add(cum, 1 + i);

		if (xrxe_psn_cmp(p, qp->req.psn_hi) >= 0)
			break;
		if (!(bitmap[i / 8] >> (i % 8) & 1))
			continue;
		xrxe_tpi_sr_set(s->sacked, qp, p);
		top = p;
		any = true;
	}
	if (!any)
		return;
	if (!s->sack_valid || xrxe_psn_cmp(top, s->sack_top) > 0)
		s->sack_top = top;
	s->sack_valid = true;
	xrxe_tpi_rto_held(qp);

	/* Holes: request packets before the highest held one, neither held
	 * nor acknowledged. A READ or atomic is one request packet at its
	 * first PSN (the responder names all the PSNs of a READ it holds). */
	for (idx = qp->sq_cons; idx != qp->sq_fetch; idx++) {
		struct tp_swqe *w = xrxe_tpi_swqe(qp, idx);
		uint32_t p, from, run = 0, run_psn = 0;

		if (w->state != TP_WQE_ACTIVE || xrxe_psn_cmp(w->first_psn, s->sack_top) >= 0)
			break;
		from = w->first_psn;
		if (xrxe_psn_cmp(from, qp->comp.psn) < 0)
			from = qp->comp.psn;
		if (xrxe_psn_cmp(from, cum) <= 0)
			from = xrxe_psn_add(cum, 1);
		if (w->rd_atomic) {
			p = w->first_psn;
			if (xrxe_psn_cmp(p, from) < 0 || xrxe_tpi_sr_bit(s->sacked, qp, p))
				continue;
			if (ask_again(qp, p)) {
				/* the request was lost: ask for all of it */
				if (!xrxe_tpi_sr_todo_push(qp, p, w->npkts))
					break;
				lost = true;
			}
			continue;
		}
		for (p = from; xrxe_psn_cmp(p, w->last_psn) <= 0 && xrxe_psn_cmp(p, s->sack_top) < 0;
		     p = xrxe_psn_add(p, 1)) {
			if (!xrxe_tpi_sr_bit(s->sacked, qp, p) && ask_again(qp, p)) {
				if (!run)
					run_psn = p;
				run++;
				lost = true;
				continue;
			}
			if (!push_run(qp, run_psn, run))
				goto out;
			run = 0;
		}
		if (!push_run(qp, run_psn, run))
			break;
	}
out:
	if (lost)
		xrxe_tpi_rto_loss(qp);
}

/* READ response PSNs up to upto that did not come are lost (responses
 * leave the responder in PSN order): ask for them again. Called for every
 * response past a hole, so it looks only at the PSNs past scan_hi: one
 * looked at before was received then or asked for again then, and a PSN
 * asked for again is not asked twice here (a lost repair is
 * repairs_lost's). Without this a hole cost each later response a walk
 * of the whole window: O(window^2) per loss (docs/selective-repeat.md,
 * "What a response costs"). */
void xrxe_tpi_sr_scan_lost(struct xrxe_tp_qp *qp, uint32_t upto)
{
	struct tp_sr *s = qp->srs;
	bool lost = false, whole = true;
	uint32_t idx, stamp, start = qp->comp.psn;

	if (s->scan_valid && xrxe_psn_cmp(s->scan_hi, start) >= 0) {
		if (xrxe_psn_cmp(upto, s->scan_hi) <= 0)
			return; /* nothing new */
		start = xrxe_psn_add(s->scan_hi, 1);
	}
	stamp = ++s->rd_clock;
	for (idx = qp->sq_cons; idx != qp->sq_fetch; idx++) {
		struct tp_swqe *w = xrxe_tpi_swqe(qp, idx);
		uint32_t m, from, run = 0, run_psn = 0;

		if (xrxe_psn_cmp(w->first_psn, upto) > 0)
			break;
		if (w->state != TP_WQE_ACTIVE) {
			whole = false;
			break;
		}
		if (!w->rd_atomic || !xrxe_tpi_sr_read_tracked(w) ||
		    xrxe_psn_cmp(w->last_psn, start) < 0)
			continue;
		from = xrxe_psn_cmp(w->first_psn, start) < 0 ? start : w->first_psn;
		for (m = from; xrxe_psn_cmp(m, w->last_psn) <= 0 && xrxe_psn_cmp(m, upto) <= 0;
		     m = xrxe_psn_add(m, 1)) {
			if (!xrxe_tpi_sr_bit(s->have, qp, m) && !xrxe_tpi_sr_bit(s->resent, qp, m)) {
				xrxe_tpi_sr_set(s->resent, qp, m);
				xrxe_tpi_sr_set(s->repair, qp, m);
				s->resend_hi[m & RING_MASK] = qp->req.psn_hi;
				/* asked now: only a response to a request sent
				 * after this one can show the repair lost */
				s->rd_stamp[m & RING_MASK] = stamp;
				if (!s->repair_valid) {
					s->repair_valid = true;
					s->repair_oldest = stamp;
				}
				if (!run)
					run_psn = m;
				run++;
				continue;
			}
			if (run && !xrxe_tpi_sr_todo_push(qp, run_psn, run))
				goto out;
			lost |= run != 0;
			run = 0;
		}
		if (run && !xrxe_tpi_sr_todo_push(qp, run_psn, run))
			goto out;
		lost |= run != 0;
	}
	if (whole) {
		s->scan_valid = true;
		s->scan_hi = upto;
	}
out:
	if (lost)
		xrxe_tpi_rto_loss(qp);
}

/* rd_clock order: a before b */
static bool stamp_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

void xrxe_tpi_sr_rd_sent(struct xrxe_tp_qp *qp, uint32_t psn, uint32_t npsn)
{
	struct tp_sr *s = qp->srs;
	uint32_t stamp = ++s->rd_clock;

	for (uint32_t k = 0; k < npsn; k++) {
		uint32_t p = xrxe_psn_add(psn, k);

		if (!in_ring(qp, p))
			break;
		s->rd_stamp[p & RING_MASK] = stamp;
	}
}

/* READ response PSNs asked again by range (a repair) that have not come
 * back though a response to a request sent after the repair did: the
 * repair request or its response was lost. The responder answers a repair
 * ahead of the READ streams it has queued, repairs among themselves in
 * the order they came (resp.c resp_read_again), and every request after
 * the repair later still, so whatever answers a later request leaves it
 * after the repair (RFC 8985's idea again: no reordering on the path is
 * assumed, only tolerated at the cost of a duplicate). Without this, a lost
 * repair stalls the oldest READ, and with it the send window, until the
 * loss probes (at least XRXE_TP_RTO_MIN_NS). Atomics, ATOMIC_WRITE and
 * FLUSH are left out: the responder replays those behind its queue. */
static void repairs_lost(struct xrxe_tp_qp *qp, uint32_t than)
{
	struct tp_sr *s = qp->srs;
	uint32_t idx, k, stamp = 0, oldest = 0;
	bool any = false, lost = false, whole = true, seen = false;

	/* Every repair still missing was asked no earlier than
	 * repair_oldest: a response to a request sent before that shows
	 * nothing lost, and most responses during a repair's round trip
	 * answer such requests (the walk below is the window's length). */
	if (s->repair_valid && !stamp_before(s->repair_oldest, than))
		return;
	for (k = 0; k < XRXE_TP_SR_RING / 64; k++)
		any |= (s->repair[k] & ~s->have[k]) != 0;
	if (!any) {
		s->repair_valid = false;
		return;
	}
	for (idx = qp->sq_cons; idx != qp->sq_fetch; idx++) {
		struct tp_swqe *w = xrxe_tpi_swqe(qp, idx);
		uint32_t m, from, run = 0, run_psn = 0;

		if (w->state != TP_WQE_ACTIVE) {
			whole = false;
			break;
		}
		if (!w->is_read || !xrxe_tpi_sr_read_tracked(w))
			continue;
		from = xrxe_psn_cmp(w->first_psn, qp->comp.psn) < 0 ? qp->comp.psn : w->first_psn;
		for (m = from; xrxe_psn_cmp(m, w->last_psn) <= 0; m = xrxe_psn_add(m, 1)) {
			uint32_t i = m & RING_MASK;
			bool missing = xrxe_tpi_sr_bit(s->repair, qp, m) &&
				       !xrxe_tpi_sr_bit(s->have, qp, m);

			if (missing && stamp_before(s->rd_stamp[i], than)) {
				if (!stamp)
					stamp = ++s->rd_clock;
				s->rd_stamp[i] = stamp;
				s->resend_hi[i] = qp->req.psn_hi;
				if (!run)
					run_psn = m;
				run++;
			} else {
				if (!push_run(qp, run_psn, run))
					goto out;
				lost |= run != 0;
				run = 0;
			}
			if (missing && (!seen || stamp_before(s->rd_stamp[i], oldest))) {
				oldest = s->rd_stamp[i];
				seen = true;
			}
		}
		if (!push_run(qp, run_psn, run))
			goto out;
		lost |= run != 0;
	}
	/* stamps only grow, so the old bound holds if the walk stopped short */
	if (whole) {
		s->repair_valid = seen;
		s->repair_oldest = oldest;
	}
out:
	if (lost)
		xrxe_tpi_rto_loss(qp);
}

void xrxe_tpi_sr_rsp_rx(struct xrxe_tp_qp *qp, uint32_t psn)
{
	uint32_t than = qp->srs->rd_stamp[psn & RING_MASK];

	/* the ones before it in PSN order never came (first asks) */
	if (psn != qp->comp.psn)
		xrxe_tpi_sr_scan_lost(qp, xrxe_psn_sub(psn, 1));
	repairs_lost(qp, than);
}
