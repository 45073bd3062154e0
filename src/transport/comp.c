// SPDX-License-Identifier: MIT
/*
 * Completer (rxe_comp.c's role): acknowledgements, NAKs, read and atomic
 * responses coming back to the requester; the local ACK timeout and RNR
 * waits; retries; send completions and flushes.
 *
 * Send WQEs retire strictly in order (IBA 10.8.3.x: completions of one work
 * queue are returned in the order the WRs were posted); a WQE's ring slot is
 * released (consumer store-release) when it retires.
 */
#include <errno.h>
#include <string.h>

#include "transport/tp_internal.h"
#include "util/log.h"

enum ibv_wc_opcode xrxe_tpi_wc_opcode(uint32_t wr_opcode)
{
	switch (wr_opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case XRXE_WR_FLUSH:
		return (enum ibv_wc_opcode)XRXE_WC_FLUSH;
	default:
		return IBV_WC_SEND;
	}
}

void xrxe_tpi_comp_reset_counters(struct xrxe_tp_qp *qp)
{
	qp->comp.retry_cnt = qp->attr.retry_cnt;
	qp->comp.rnr_retry = qp->attr.rnr_retry;
}

void xrxe_tpi_comp_retire(struct xrxe_tp_qp *qp, enum ibv_wc_status status)
{
	struct tp_swqe *w = xrxe_tpi_swqe(qp, qp->sq_cons);
	bool err = status != IBV_WC_SUCCESS;
	bool app = w->tm_internal == TP_TM_WQE_APP;
	int cqerr = 0;

	if (w->state == TP_WQE_ACTIVE && w->rd_atomic && qp->req.rd_atomic_out)
		qp->req.rd_atomic_out--;
	/* Which WQE was started is decided by state; once retired, its slot
	 * may be refilled, so forget it. */
	w->state = TP_WQE_FETCHED;
	qp->sq_cons++;
	if ((int32_t)(qp->req.wqe - qp->sq_cons) < 0) {
		qp->req.wqe = qp->sq_cons;
		qp->req.off = 0;
	}
	/* Release: our copy of the slot is done; the application may reuse
	 * it only after this store. A rendezvous's own READ or FIN has no
	 * slot and completes its tagged buffer instead (tm_rndv.c). */
	if (app)
		xrxe_ring_publish_consumer(qp->sq, ++qp->sq_ring_cons, qp->sq_mask);
	else
		cqerr = xrxe_tpi_tm_rndv_retired(qp, w, status);

	/* docs/facts/rxe.md §2.10, IBA 10.7.3.1: a CQE when signalled, and always on
	 * error (a flushed WR is an error completion too). */
	if (app && (err || qp->sq_sig_all || (w->wr.send_flags & IBV_SEND_SIGNALED))) {
		struct ibv_wc wc;

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w->wr.wr_id;
		wc.status = status;
		wc.opcode = xrxe_tpi_wc_opcode(w->wr.opcode);
		wc.byte_len = status == IBV_WC_WR_FLUSH_ERR ? 0 : w->length;
		wc.qp_num = qp->qpn;
		if (w->wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
		    w->wr.opcode == IBV_WR_SEND_WITH_IMM) {
			wc.wc_flags = IBV_WC_WITH_IMM;
			wc.imm_data = w->wr.ex;
		}
		cqerr = xrxe_tpi_cq_post(qp->send_cq, &wc, false);
	}
	if (cqerr)
		xrxe_tpi_qp_cq_overrun(qp);
	else if (err && status != IBV_WC_WR_FLUSH_ERR)
		xrxe_tpi_qp_sq_error(qp); /* docs/facts/rxe.md §2.10: error -> ERR, flush */
}

bool xrxe_tpi_comp_run(struct xrxe_tp_qp *qp)
{
	struct tp_swqe *w;

	if (qp->sq_cons == qp->sq_fetch)
		return false;
	w = xrxe_tpi_swqe(qp, qp->sq_cons);
	if (w->state != TP_WQE_BAD)
		return false;
	xrxe_tpi_comp_retire(qp, w->status);
	return true;
}

bool xrxe_tpi_comp_flush(struct xrxe_tp_qp *qp)
{
	bool did = false;

	while (qp->sq_cons != qp->sq_fetch) {
		xrxe_tpi_comp_retire(qp, IBV_WC_WR_FLUSH_ERR);
		did = true;
	}
	/* WRs posted but never fetched flush too (and any posted later:
	 * xrxe_tp_poll calls this while the QP is in ERR/SQE). */
	while (xrxe_tpi_sq_fetch(qp)) {
		xrxe_tpi_comp_retire(qp, IBV_WC_WR_FLUSH_ERR);
		did = true;
	}
	qp->req.wqe = qp->sq_cons;
	qp->req.off = 0;
	qp->req.rd_atomic_out = 0;
	qp->req.psn = qp->comp.psn = qp->req.psn_hi;
	return did;
}

/* Move the oldest unacknowledged PSN forward. Selective repeat's
 * scoreboard is indexed by PSN from here: what falls behind is cleared at
 * once (sr.c). */
static void comp_set_psn(struct xrxe_tp_qp *qp, uint32_t psn)
{
	uint32_t old = qp->comp.psn;

	qp->comp.psn = psn;
	if (qp->sr)
		xrxe_tpi_sr_advanced(qp, old);
}

/* The oldest WQE with PSNs, or NULL. */
static struct tp_swqe *comp_head(const struct xrxe_tp_qp *qp)
{
	struct tp_swqe *w;

	if (qp->sq_cons == qp->sq_fetch)
		return NULL;
	w = xrxe_tpi_swqe(qp, qp->sq_cons);
	return w->state == TP_WQE_ACTIVE ? w : NULL;
}

static void comp_error(struct xrxe_tp_qp *qp, enum ibv_wc_status st)
{
	if (comp_head(qp))
		xrxe_tpi_comp_retire(qp, st);
	else
		xrxe_tpi_qp_error(qp);
}

/* Retry from comp.psn: go-back-N (IBA 9.7.5.2.x). The local ACK timeout,
 * a NAK-sequence error, an implicitly passed READ/atomic and a gap in a
 * read response stream all charge the same transport retry counter.
 *
 * A retry triggered by a response (not the timer) happens once per
 * position: until comp.psn moves, more evidence of the same loss (the rest
 * of a response burst still in flight, responses to later requests) is
 * ignored, or one loss would burn the whole retry budget (rxe has the same
 * guard, comp.started_retry). The timer always retries. */
static void comp_retry(struct xrxe_tp_qp *qp, bool timer)
{
	if (!comp_head(qp))
		return;
	if (!timer && qp->comp.retrying && qp->comp.retry_psn == qp->comp.psn)
		return;
	qp->comp.retrying = true;
	qp->comp.retry_psn = qp->comp.psn;
	/* IBA 9.7.6.1.3 / 11.2.4.2 (Retry Count): the 3-bit count is the
	 * number of retries, 0..7. Unlike rnr_retry it has no "infinite"
	 * encoding, so 7 means 7 retries. rxe treats 7 as infinite
	 * (docs/facts/rxe.md §2.4 caution); we follow the spec. */
	if (qp->comp.retry_cnt == 0) {
		comp_error(qp, IBV_WC_RETRY_EXC_ERR);
		return;
	}
	qp->comp.retry_cnt--;
	qp->info.retransmits++;
	xrxe_tpi_rto_loss(qp);
	xrxe_tpi_timer_stop_rexmit(qp);
	xrxe_tpi_req_rewind(qp, qp->comp.psn);
}

/* The probe timer expired (rto.c): send the loss probes. Neither charges
 * retry_cnt nor touches the Local ACK Timeout, which keeps running and
 * still decides when the WR fails; nor rewinds: the responder's answer to
 * the probes (a NAK, or ACKs) says what, if anything, to resend. */
static void comp_probe(struct xrxe_tp_qp *qp)
{
	if (!comp_head(qp))
		return;
	qp->info.fast_retransmits++;
	xrxe_tpi_req_probe(qp);
}

enum { ACK_OK, ACK_NEED_RETRY };

/* Selective repeat: the highest PSN acknowledged so far, which the WQEs
 * behind an incomplete READ or atomic complete up to once it completes. */
static void sr_note_cum(struct xrxe_tp_qp *qp, uint32_t psn)
{
	struct tp_sr *s = qp->srs;

	if (!s->cum_valid || xrxe_psn_cmp(psn, s->cum) > 0) {
		s->cum = psn;
		s->cum_valid = true;
	}
}

/* The ACTIVE WQE whose PSNs include psn, or NULL. */
static struct tp_swqe *sr_wqe_of_psn(const struct xrxe_tp_qp *qp, uint32_t psn)
{
	uint32_t idx;

	for (idx = qp->sq_cons; idx != qp->sq_fetch; idx++) {
		struct tp_swqe *w = xrxe_tpi_swqe(qp, idx);

		if (w->state != TP_WQE_ACTIVE || xrxe_psn_cmp(psn, w->first_psn) < 0)
			return NULL;
		if (xrxe_psn_cmp(psn, w->last_psn) <= 0)
			return w;
	}
	return NULL;
}

/* Selective repeat: complete, in order, what the responses received and
 * the acknowledgements say is done: a READ/atomic at the head once all its
 * response PSNs are here (comp.psn moving over those that are, so a probe
 * asks for the first missing one), SEND/WRITE up to the highest PSN
 * acknowledged. */
static void sr_advance(struct xrxe_tp_qp *qp)
{
	struct tp_sr *s = qp->srs;
	struct tp_swqe *w;

	while ((w = comp_head(qp))) {
		if (w->rd_atomic) {
			uint32_t p = qp->comp.psn;

			if (!xrxe_tpi_sr_read_tracked(w))
				break; /* go-back-N (comp_read_resp) */
			if (xrxe_psn_cmp(p, w->first_psn) < 0)
				p = w->first_psn;
			while (xrxe_psn_cmp(p, w->last_psn) <= 0 && xrxe_tpi_sr_bit(s->have, qp, p))
				p = xrxe_psn_add(p, 1);
			if (p != qp->comp.psn)
				comp_set_psn(qp, p);
			if (xrxe_psn_cmp(p, w->last_psn) <= 0)
				break;
			xrxe_tpi_comp_retire(qp, IBV_WC_SUCCESS);
			continue;
		}
		if (!s->cum_valid || xrxe_psn_cmp(s->cum, w->first_psn) < 0)
			break;
		if (xrxe_psn_cmp(s->cum, w->last_psn) >= 0) {
			comp_set_psn(qp, xrxe_psn_add(w->last_psn, 1));
			xrxe_tpi_comp_retire(qp, IBV_WC_SUCCESS);
			continue;
		}
		if (xrxe_psn_cmp(xrxe_psn_add(s->cum, 1), qp->comp.psn) > 0)
			comp_set_psn(qp, xrxe_psn_add(s->cum, 1));
		break;
	}
}

/* Selective repeat: a READ response (or the empty response of ATOMIC_WRITE
 * or FLUSH) for any READ in flight, placed by its offset as it comes
 * (IBA 9.7.5.1.x: a response implicitly acknowledges every earlier request,
 * and responses leave the responder in PSN order, so the ones before it
 * that did not come are lost). */
static void sr_read_resp(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_swqe *w = sr_wqe_of_psn(qp, psn);
	uint32_t mtu = qp->mtu, off, expect;
	bool last = pkt->op->flags & XRXE_OPF_LAST;
	struct xrxe_tpi_pkt_src c = { .pkt = pkt, .off = 0 };

	if (!w || !(w->is_read || w->rsp_read0) || !xrxe_tpi_sr_read_tracked(w))
		return;
	if (xrxe_tpi_sr_bit(qp->srs->have, qp, psn)) {
		qp->info.duplicates++;
		return;
	}
	off = xrxe_psn_sub(psn, w->first_psn) * mtu;
	expect = w->rsp_read0 ? 0 : w->length - off < mtu ? w->length - off : mtu;
	/* the opcode and length its place in the READ calls for (as
	 * comp_read_resp checks), else malformed and dropped */
	if (last != (psn == w->last_psn) ||
	    !!(pkt->op->flags & XRXE_OPF_FIRST) != (psn == w->first_psn) ||
	    pkt->payload_len != expect)
		return;
	if (expect && xrxe_tpi_sge_walk(qp->tp, qp->pdn, (const struct xrxe_sge *)w->data,
				       w->wr.num_sge, off, expect, IBV_ACCESS_LOCAL_WRITE,
				       xrxe_tpi_piece_from_pkt, &c)) {
		comp_error(qp, IBV_WC_LOC_PROT_ERR);
		return;
	}
	xrxe_tpi_sr_set(qp->srs->have, qp, psn);
	xrxe_tpi_sr_rsp_rx(qp, psn);
}

/* The original value of an atomic lands in the local 8-byte SGE of its WQE,
 * in host order (IBA 9.4.5: atomics operate on 64-bit integers). false (the
 * QP completed in error) if the SGE does not take it. */
static bool comp_place_atomic_orig(struct xrxe_tp_qp *qp, const struct tp_swqe *w,
				   const struct xrxe_atmack *ack)
{
	uint64_t orig = xrxe_atmack_orig(ack);
	struct xrxe_tpi_buf_src c = { .src = (const uint8_t *)&orig };

	if (xrxe_tpi_sge_walk(qp->tp, qp->pdn, (const struct xrxe_sge *)w->data, w->wr.num_sge, 0,
			      8, IBV_ACCESS_LOCAL_WRITE, xrxe_tpi_piece_from_buf, &c)) {
		comp_error(qp, IBV_WC_LOC_PROT_ERR);
		return false;
	}
	return true;
}

/* Selective repeat: an atomic's result for any atomic in flight. */
static void sr_atomic_ack(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_swqe *w = sr_wqe_of_psn(qp, psn);
	const struct xrxe_atmack *ack = xrxe_pkt_hdr(pkt, XRXE_HDR_ATMACK);

	if (!w || !w->is_atomic || psn != w->first_psn || !ack)
		return;
	if (xrxe_tpi_sr_bit(qp->srs->have, qp, psn)) {
		qp->info.duplicates++;
		return;
	}
	if (!comp_place_atomic_orig(qp, w, ack))
		return;
	xrxe_tpi_sr_set(qp->srs->have, qp, psn);
	xrxe_tpi_sr_rsp_rx(qp, psn);
}

/* Every PSN up to and including psn is acknowledged (IBA 9.7.5.1: an ACK
 * implicitly acknowledges all earlier requests, "coalesced" ACKs). WQEs whose last PSN
 * is covered complete; a READ or atomic covered by a plain acknowledgement
 * lost its response (the responder executes in order), so the requester
 * must retry it (docs/facts/rxe.md §2.2/§2.4). resp_psn: the PSN of the read/atomic
 * response being processed, whose own WQE is not "passed". */
static int comp_ack_upto(struct xrxe_tp_qp *qp, uint32_t psn, const uint32_t *resp_psn)
{
	struct tp_swqe *w;

	if (qp->sr)
		sr_note_cum(qp, psn);
	while ((w = comp_head(qp))) {
		if (xrxe_psn_cmp(psn, w->first_psn) < 0)
			break;
		if (w->rd_atomic) {
			if (resp_psn && xrxe_psn_cmp(*resp_psn, w->first_psn) >= 0 &&
			    xrxe_psn_cmp(*resp_psn, w->last_psn) <= 0)
				break;
			if (qp->sr && xrxe_tpi_sr_read_tracked(w)) {
				/* Selective repeat: its responses came before
				 * this acknowledgement; those that did not are
				 * asked for again, nothing else (sr.c). It
				 * completes when they are all here. */
				xrxe_tpi_sr_scan_lost(qp, psn);
				break;
			}
			return ACK_NEED_RETRY;
		}
		if (xrxe_psn_cmp(psn, w->last_psn) >= 0) {
			comp_set_psn(qp, xrxe_psn_add(w->last_psn, 1));
			xrxe_tpi_comp_retire(qp, IBV_WC_SUCCESS);
			continue;
		}
		if (xrxe_psn_cmp(xrxe_psn_add(psn, 1), qp->comp.psn) > 0)
			comp_set_psn(qp, xrxe_psn_add(psn, 1));
		break;
	}
	return ACK_OK;
}

static void comp_rnr(struct xrxe_tp_qp *qp, uint8_t code)
{
	qp->info.rnr_naks_rcvd++;
	if (!comp_head(qp))
		return;
	/* IBA 9.7.5.2.8 and the RNR Retry Count attribute (IBA 11.2.4.2):
	 * 7 means retry forever; otherwise each RNR NAK uses one retry and the
	 * WR fails with RNR_RETRY_EXC_ERR when none are left. */
	if (qp->comp.rnr_retry == 0) {
		comp_error(qp, IBV_WC_RNR_RETRY_EXC_ERR);
		return;
	}
	if (qp->comp.rnr_retry != 7)
		qp->comp.rnr_retry--;
	xrxe_tpi_timer_stop_rexmit(qp);
	qp->comp.rnr_deadline = qp->tp->now + xrxe_tpi_rnr_timeout_ns(code);
	xrxe_tpi_req_rewind(qp, qp->comp.psn);
}

static void comp_nak(struct xrxe_tp_qp *qp, uint8_t syn)
{
	switch (syn) {
	case XRXE_AETH_NAK_PSN_SEQ:
		qp->info.seq_naks_rcvd++;
		/* An RNR wait already rewinds; a sequence NAK for the same
		 * PSN (the rest of the message still in flight) must not
		 * cost a retry. */
		if (qp->comp.rnr_deadline != XRXE_TP_NO_DEADLINE)
			return;
		comp_retry(qp, false);
		return;
	case XRXE_AETH_NAK_INVALID_REQ:
		comp_error(qp, IBV_WC_REM_INV_REQ_ERR);
		return;
	case XRXE_AETH_NAK_REM_ACCESS:
		comp_error(qp, IBV_WC_REM_ACCESS_ERR);
		return;
	default:
		/* 0x63 remote operational error; the reserved codes are
		 * treated the same (a NAK we cannot recover from). */
		comp_error(qp, IBV_WC_REM_OP_ERR);
		return;
	}
}

static void comp_read_resp(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_swqe *w = comp_head(qp);
	uint32_t mtu = qp->mtu, off, expect;
	bool last = pkt->op->flags & XRXE_OPF_LAST;
	struct xrxe_tpi_pkt_src c = { .pkt = pkt, .off = 0 };

	/* ATOMIC_WRITE and FLUSH are answered by an empty READ response ONLY */
	if (!w || !(w->is_read || w->rsp_read0) || xrxe_psn_cmp(psn, w->first_psn) < 0 ||
	    xrxe_psn_cmp(psn, w->last_psn) > 0)
		return; /* not for the oldest WQE: stray or stale */
	if (psn != qp->comp.psn) {
		/* A response packet went missing (docs/facts/rxe.md §2.5): retry
		 * (once per position: comp_rx_read); the rest of this burst is
		 * dropped. */
		comp_retry(qp, false);
		return;
	}
	off = xrxe_psn_sub(psn, w->first_psn) * mtu;
	expect = w->rsp_read0 ? 0 : w->length - off < mtu ? w->length - off : mtu;
	/* LAST/ONLY exactly at the last PSN, with exactly the bytes left;
	 * anything else is malformed and dropped (the retry recovers). */
	if (last != (psn == w->last_psn) || pkt->payload_len != expect)
		return;
	if (expect && xrxe_tpi_sge_walk(qp->tp, qp->pdn, (const struct xrxe_sge *)w->data,
				       w->wr.num_sge, off, expect, IBV_ACCESS_LOCAL_WRITE,
				       xrxe_tpi_piece_from_pkt, &c)) {
		comp_error(qp, IBV_WC_LOC_PROT_ERR);
		return;
	}
	comp_set_psn(qp, xrxe_psn_add(psn, 1));
	if (last)
		xrxe_tpi_comp_retire(qp, IBV_WC_SUCCESS);
}

static void comp_atomic_ack(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_swqe *w = comp_head(qp);
	const struct xrxe_atmack *ack = xrxe_pkt_hdr(pkt, XRXE_HDR_ATMACK);

	if (!w || !w->is_atomic || psn != w->first_psn || !ack)
		return;
	if (!comp_place_atomic_orig(qp, w, ack))
		return;
	comp_set_psn(qp, xrxe_psn_add(psn, 1));
	xrxe_tpi_comp_retire(qp, IBV_WC_SUCCESS);
}

static void comp_sqd_check(struct xrxe_tp_qp *qp)
{
	if (qp->state != IBV_QPS_SQD || qp->req.drained_sent || comp_head(qp))
		return;
	qp->req.drained_sent = true;
	/* IBA 11.6.3.x: SQ Drained, only when asked for at RTS->SQD */
	if (qp->attr.en_sqd_async_notify)
		xrxe_tpi_qp_async(qp, IBV_EVENT_SQ_DRAINED);
}

/* Bookkeeping after the completer moved comp.psn. */
static void comp_progress(struct xrxe_tp_qp *qp, uint32_t old)
{
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	if (qp->comp.retrying && qp->comp.psn != qp->comp.retry_psn)
		qp->comp.retrying = false;
	if (qp->comp.psn != old) {
		/* Forward progress restores the retry budgets, so they bound
		 * consecutive failures, not failures per connection. */
		xrxe_tpi_comp_reset_counters(qp);
		if (xrxe_tpi_outstanding(qp))
			xrxe_tpi_timer_arm_rexmit(qp);
		else
			xrxe_tpi_timer_stop_rexmit(qp);
		/* ACKs for packets sent before a rewind may overtake the
		 * requester: move it forward rather than resend them. */
		if (xrxe_psn_cmp(qp->comp.psn, qp->req.psn) > 0)
			xrxe_tpi_req_rewind(qp, qp->comp.psn);
		xrxe_tpi_rto_progress(qp, xrxe_psn_sub(qp->comp.psn, old));
	}
	while (xrxe_tpi_comp_run(qp))
		;
	comp_sqd_check(qp);
}

/* Selective repeat: a SACK acknowledges like an ACK, then names the PSNs
 * after it the responder holds (sr.c). */
static void comp_sack(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	uint8_t bitmap[XRXE_SACK_LEN];

	if (xrxe_pkt_copy_payload(pkt, 0, bitmap, XRXE_SACK_LEN))
		return;
	if (xrxe_psn_cmp(psn, qp->comp.psn) >= 0 &&
	    comp_ack_upto(qp, psn, NULL) == ACK_NEED_RETRY)
		comp_retry(qp, false);
	else
		sr_note_cum(qp, psn);
	if (qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD)
		xrxe_tpi_sr_sack_rx(qp, psn, bitmap);
}

/* A READ response: a response-triggered retry goes back once per position
 * (comp_retry), since the rest of what was in flight shows the same gap.
 * But a responder answers in PSN order (IBA 9.7.5.1.x), so a response not
 * after the last one starts it over: it answers requests sent again since,
 * the retry's own, and a gap in that answer (a response to a later request
 * first: the oldest one's request or response was lost) is a loss of its
 * own, to go back for at once rather than after a loss probe. */
static void comp_rx_read(struct xrxe_tp_qp *qp, uint32_t psn)
{
	if (xrxe_psn_cmp(psn, qp->comp.rsp_last) <= 0)
		qp->comp.retrying = false;
	qp->comp.rsp_last = psn;
}

void xrxe_tpi_comp_rx(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt)
{
	uint32_t psn = xrxe_bth_psn(xrxe_pkt_bth(pkt)), old = qp->comp.psn;
	const struct xrxe_aeth *aeth = xrxe_pkt_hdr(pkt, XRXE_HDR_AETH);
	uint8_t op = pkt->opcode & 0x1f, syn = aeth ? xrxe_aeth_syndrome(aeth) : 0;
	uint32_t prev = xrxe_psn_sub(psn, 1);

	if (qp->type != IBV_QPT_RC)
		return;
	if (pkt->opcode == XRXE_OP_XRXE_SACK) {
		/* Selective repeat only (tp.c drops it on any other QP). It
		 * may acknowledge nothing new: cum one before the oldest. */
		if (!qp->sr || !xrxe_tpi_outstanding(qp) ||
		    xrxe_psn_cmp(psn, xrxe_psn_sub(qp->comp.psn, 1)) < 0 ||
		    xrxe_psn_cmp(psn, qp->req.psn_hi) >= 0 ||
		    (syn & XRXE_AETH_TYPE_MASK) != XRXE_AETH_ACK)
			return;
		comp_sack(qp, pkt, psn);
		sr_advance(qp);
		comp_progress(qp, old);
		return;
	}
	/* Only PSNs in [oldest unacked, highest sent] can be answered; older
	 * ones are echoes of retries, newer ones bogus (docs/facts/rxe.md §2.2). */
	if (!xrxe_tpi_outstanding(qp) || xrxe_psn_cmp(psn, qp->comp.psn) < 0 ||
	    xrxe_psn_cmp(psn, qp->req.psn_hi) >= 0)
		return;

	switch (op) {
	case XRXE_OP_ACKNOWLEDGE:
		switch (syn & XRXE_AETH_TYPE_MASK) {
		case XRXE_AETH_ACK:
			if (comp_ack_upto(qp, psn, NULL) == ACK_NEED_RETRY)
				comp_retry(qp, false);
			break;
		case XRXE_AETH_RNR_NAK:
			/* the NAK'd PSN was not executed; everything before
			 * it was (implicit ACK) */
			if (comp_ack_upto(qp, prev, &psn) == ACK_NEED_RETRY)
				comp_retry(qp, false);
			else
				comp_rnr(qp, syn & 0x1f);
			break;
		case XRXE_AETH_NAK:
			if (comp_ack_upto(qp, prev, &psn) == ACK_NEED_RETRY)
				comp_retry(qp, false);
			else
				comp_nak(qp, syn);
			break;
		default:
			break; /* 0x40: reserved syndrome */
		}
		break;
	case XRXE_OP_ATOMIC_ACKNOWLEDGE:
		if (comp_ack_upto(qp, prev, &psn) == ACK_NEED_RETRY)
			comp_retry(qp, false);
		else if (qp->sr)
			sr_atomic_ack(qp, pkt, psn);
		else
			comp_atomic_ack(qp, pkt, psn);
		break;
	case XRXE_OP_RDMA_READ_RESPONSE_FIRST:
	case XRXE_OP_RDMA_READ_RESPONSE_MIDDLE:
	case XRXE_OP_RDMA_READ_RESPONSE_LAST:
	case XRXE_OP_RDMA_READ_RESPONSE_ONLY:
		/* A read response implicitly acknowledges every earlier
		 * request (IBA 9.7.5.1.x). A NAK in the AETH of FIRST/LAST/ONLY
		 * is not allowed; MIDDLE has no AETH (IBA 9.3 opcode table). */
		comp_rx_read(qp, psn);
		if (comp_ack_upto(qp, prev, &psn) == ACK_NEED_RETRY) {
			comp_retry(qp, false);
		} else if (qp->sr) {
			const struct tp_swqe *w = sr_wqe_of_psn(qp, psn);

			/* a READ too large for the scoreboard: go-back-N */
			if (w && !xrxe_tpi_sr_read_tracked(w))
				comp_read_resp(qp, pkt, psn);
			else
				sr_read_resp(qp, pkt, psn);
		} else {
			comp_read_resp(qp, pkt, psn);
		}
		break;
	default:
		break;
	}
	if (qp->sr && qp->state != IBV_QPS_ERR)
		sr_advance(qp);
	comp_progress(qp, old);
}

bool xrxe_tpi_comp_timers(struct xrxe_tp_qp *qp)
{
	uint64_t now = qp->tp->now;
	uint32_t old = qp->comp.psn;
	bool did = false;

	if (qp->comp.rnr_deadline <= now) {
		/* RNR wait over: resend from the NAK'd PSN (already rewound) */
		qp->comp.rnr_deadline = XRXE_TP_NO_DEADLINE;
		xrxe_tpi_req_rewind(qp, qp->comp.psn);
		did = true;
	}
	if (qp->comp.rexmit_deadline <= now) {
		qp->comp.rexmit_deadline = XRXE_TP_NO_DEADLINE;
		if (xrxe_tpi_outstanding(qp)) {
			qp->info.timeouts++;
			xrxe_tpi_rto_timeout(qp);
			comp_retry(qp, true);
		}
		did = true;
	}
	/* After the Local ACK Timeout: its retry disarms this one. Not
	 * during an RNR wait (the responder asked us to hold off). */
	if (qp->comp.fast_deadline <= now && xrxe_tpi_rto_expired(qp)) {
		if (xrxe_tpi_outstanding(qp) && qp->comp.rnr_deadline == XRXE_TP_NO_DEADLINE)
			comp_probe(qp);
		did = true;
	}
	if (did)
		comp_progress(qp, old);
	return did;
}
