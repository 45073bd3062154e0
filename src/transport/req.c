// SPDX-License-Identifier: MIT
/*
 * Requester (rxe_req.c's role): copy send WQEs out of the SQ ring, validate
 * them, segment each message by the path MTU, assign PSNs and transmit,
 * within the limits of the send window, the rd_atomic slots and fences.
 *
 * Retransmission is go-back-N: the completer rewinds the requester to a PSN
 * (xrxe_tpi_req_rewind) and it simply sends again from there. WQEs keep the
 * PSNs they got the first time, so a resumed message continues at the right
 * offset: SEND/WRITE skip the packets already acknowledged, a READ asks for
 * the remaining bytes with an adjusted RETH (docs/facts/rxe.md §2.4). A loss probe
 * (rto.c) sends one packet of that kind again without moving the position.
 */
#include <errno.h>
#include <string.h>

#include "transport/tp_internal.h"

/* --- fetch: the WQE copied out of the ring and validated ---------------- */

static bool wr_allowed(enum ibv_qp_type t, uint32_t op)
{
	/* docs/facts/rxe.md §1.4 (rxe_wr_opcode_info); SEND_WITH_INV has wire
	 * opcodes only on RC (IBA table 38). */
	if (t == IBV_QPT_RAW_PACKET)
		return op == IBV_WR_SEND; /* a frame, nothing else (raw.c) */
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return t == IBV_QPT_RC || t == IBV_QPT_UC;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_WRITE:
	case XRXE_WR_FLUSH:
		return t == IBV_QPT_RC;
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		/* local operations: rxe_wr_opcode_info allows them on RC and UC */
		return t == IBV_QPT_RC || t == IBV_QPT_UC;
	default:
		return false;
	}
}

static void wqe_bad(struct tp_swqe *w, enum ibv_wc_status st)
{
	w->state = TP_WQE_BAD;
	w->status = (uint8_t)st;
}

static uint32_t qp_mtu(const struct xrxe_tp_qp *qp)
{
	/* UD uses the port MTU (rxe get_mtu, docs/facts/rxe.md §2.8) */
	return qp->type == IBV_QPT_UD ? qp->tp->cfg.max_path_mtu : qp->mtu;
}

/* Validate the private copy (never the ring slot: the application may be
 * rewriting it). Errors become completion statuses (docs/facts/rxe.md §2.10). */
static void wqe_validate(struct xrxe_tp_qp *qp, struct tp_swqe *w, const uint8_t *slot)
{
	struct xrxe_tp *tp = qp->tp;
	uint32_t op = w->wr.opcode, i, mtu = qp_mtu(qp);
	uint64_t len = 0;

	w->state = TP_WQE_FETCHED;
	w->status = IBV_WC_SUCCESS;
	w->is_read = op == IBV_WR_RDMA_READ;
	w->is_atomic = op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	w->is_local = op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV;
	w->rsp_read0 = op == IBV_WR_ATOMIC_WRITE || op == XRXE_WR_FLUSH;
	w->rd_atomic = w->is_read || w->is_atomic || w->rsp_read0;
	w->length = 0;
	w->npkts = 1;
	w->av = NULL;

	if (!wr_allowed(qp->type, op) || !xrxe_tpi_xrc_wr_ok(qp, op))
		return wqe_bad(w, IBV_WC_LOC_QP_OP_ERR);
	if (w->is_local || op == XRXE_WR_FLUSH) {
		/* no data: no SGEs, no inline (rdma-core's rxe provider) */
		if (w->wr.num_sge || (w->wr.send_flags & IBV_SEND_INLINE))
			return wqe_bad(w, IBV_WC_LOC_QP_OP_ERR);
		return;
	}
	if (op == IBV_WR_ATOMIC_WRITE) {
		/* the 8-byte value travels inline in the WQE (the shim puts it
		 * there: ibv_wr_atomic_write passes a pointer); the target is
		 * a naturally aligned 64-bit word (IBA A19 as o9-20) */
		if (!(w->wr.send_flags & IBV_SEND_INLINE) || w->wr.inline_len != 8 ||
		    (w->wr.wr.rdma.remote_addr & 7) || qp->sq_data_cap < 8)
			return wqe_bad(w, IBV_WC_LOC_QP_OP_ERR);
		memcpy(w->data, slot + sizeof(struct xrxe_send_wqe), 8);
		w->length = 8;
		return;
	}

	if (w->wr.send_flags & IBV_SEND_INLINE) {
		if (w->rd_atomic)
			return wqe_bad(w, IBV_WC_LOC_QP_OP_ERR); /* no inline for READ/atomic */
		if (w->wr.inline_len > qp->cap.max_inline_data ||
		    w->wr.inline_len > qp->sq_data_cap)
			return wqe_bad(w, IBV_WC_LOC_LEN_ERR);
		memcpy(w->data, slot + sizeof(struct xrxe_send_wqe), w->wr.inline_len);
		len = w->wr.inline_len;
	} else {
		const struct xrxe_sge *sge = (const struct xrxe_sge *)w->data;
		uint32_t access = w->rd_atomic ? IBV_ACCESS_LOCAL_WRITE : 0;

		if (w->wr.num_sge > qp->cap.max_send_sge)
			return wqe_bad(w, IBV_WC_LOC_LEN_ERR);
		memcpy(w->data, slot + sizeof(struct xrxe_send_wqe),
		       w->wr.num_sge * sizeof(struct xrxe_sge));
		for (i = 0; i < w->wr.num_sge; i++) {
			len += sge[i].length;
			/* IBA 10.7.2.x: every SGE names a valid key in the QP's PD
			 * with the access the operation needs; zero-length
			 * SGEs carry no data and are not looked up. READ
			 * and atomic results are written locally. */
			if (sge[i].length && !xrxe_tpi_mr_check(tp, sge[i].lkey, qp->pdn, sge[i].addr,
								 sge[i].length, access))
				return wqe_bad(w, IBV_WC_LOC_PROT_ERR);
		}
	}
	if (len > XRXE_TP_MAX_MSG)
		return wqe_bad(w, IBV_WC_LOC_LEN_ERR);
	w->length = (uint32_t)len;
	if (w->is_atomic && w->length != 8)
		return wqe_bad(w, IBV_WC_LOC_LEN_ERR); /* atomics: one 8-byte operand */

	if (qp->type == IBV_QPT_UD) {
		const struct tp_ah *ah = xrxe_tpi_ah_get(tp, w->wr.wr.ud.ah, qp->pdn);

		if (!ah)
			return wqe_bad(w, IBV_WC_LOC_QP_OP_ERR);
		w->av = &ah->av;
		w->dest_qpn = w->wr.wr.ud.remote_qpn & XRXE_QPN_MASK;
		/* IBA 10.2.4.x (Q_Key): a Q_Key with the high bit set in a WR
		 * means "use the QP's own Q_Key". */
		w->qkey = (w->wr.wr.ud.remote_qkey & 0x80000000u) ? qp->attr.qkey
								  : w->wr.wr.ud.remote_qkey;
		/* C10-93.1.1 leaves this to the CI; rxe completes it with
		 * success without sending (docs/facts/rxe.md §5.4). We report it. */
		if (w->length > mtu)
			return wqe_bad(w, IBV_WC_LOC_LEN_ERR);
	}
	if (qp->type == IBV_QPT_RAW_PACKET) {
		/* one whole frame, within what the wire carries (raw.c) */
		if (!xrxe_tpi_raw_len_ok(tp, w->length)) {
			tp->stats.raw_tx_bad_len++;
			wqe_bad(w, IBV_WC_LOC_LEN_ERR);
		}
		return;
	}
	if (!w->is_atomic && w->length > mtu)
		w->npkts = (w->length + mtu - 1) / mtu;
}

bool xrxe_tpi_sq_has_new(const struct xrxe_tp_qp *qp)
{
	/* Acquire: pairs with the application's store-release of the producer
	 * after it wrote the element. */
	uint32_t prod = xrxe_ring_load_producer(qp->sq, qp->sq_mask);

	return prod != (qp->sq_ring_fetch & qp->sq_mask);
}

bool xrxe_tpi_sq_fetch(struct xrxe_tp_qp *qp)
{
	const uint8_t *slot;
	struct tp_swqe *w;

	/* Capacity nslots - 1 (abi.h): never hold more than that, whatever the
	 * application wrote into its producer index. */
	if (qp->sq_ring_fetch - qp->sq_ring_cons >= qp->sq_mask)
		return false;
	if (!qp->req.sq_avail) {
		/* Acquire: pairs with the application's store-release of the
		 * producer after it wrote the elements. */
		uint32_t prod = xrxe_ring_load_producer(qp->sq, qp->sq_mask);

		qp->req.sq_avail = (prod - qp->sq_ring_fetch) & qp->sq_mask;
		if (!qp->req.sq_avail)
			return false;
	}
	qp->req.sq_avail--;
	slot = qp->sq->data + ((size_t)(qp->sq_ring_fetch & qp->sq_mask) << qp->sq_log2);
	w = xrxe_tpi_swqe(qp, qp->sq_fetch);
	memcpy(&w->wr, slot, sizeof(w->wr));
	w->tm_internal = TP_TM_WQE_APP;
	wqe_validate(qp, w, slot);
	qp->sq_fetch++;
	qp->sq_ring_fetch++;
	return true;
}

/* --- rewind (go-back-N) ------------------------------------------------- */

/* Point the requester at psn: the WQE that holds it and the offset in it. */
static void req_seek(struct xrxe_tp_qp *qp, uint32_t psn)
{
	uint32_t idx;

	for (idx = qp->sq_cons; idx != qp->sq_fetch; idx++) {
		struct tp_swqe *w = xrxe_tpi_swqe(qp, idx);

		if (w->state != TP_WQE_ACTIVE)
			break;
		if (xrxe_psn_cmp(psn, w->last_psn) <= 0) {
			uint32_t k = xrxe_psn_cmp(psn, w->first_psn) > 0
					     ? xrxe_psn_sub(psn, w->first_psn)
					     : 0;

			qp->req.wqe = idx;
			qp->req.off = w->is_atomic ? 0 : k * qp_mtu(qp);
			qp->req.psn = xrxe_psn_add(w->first_psn, k);
			return;
		}
	}
	qp->req.wqe = idx;
	qp->req.off = 0;
	qp->req.psn = psn;
}

void xrxe_tpi_req_rewind(struct xrxe_tp_qp *qp, uint32_t psn)
{
	xrxe_tpi_rto_rewound(qp);
	/* Probes not sent yet: the resend from psn asks the same and more
	 * (a probe past it would only draw a NAK for what is on its way). */
	qp->req.probes_owed = 0;
	req_seek(qp, psn);
}

/* The ACTIVE WQE whose PSNs include psn, or NULL. */
static const struct tp_swqe *wqe_of_psn(const struct xrxe_tp_qp *qp, uint32_t psn)
{
	uint32_t idx;

	for (idx = qp->sq_cons; idx != qp->sq_fetch; idx++) {
		const struct tp_swqe *w = xrxe_tpi_swqe(qp, idx);

		if (w->state != TP_WQE_ACTIVE)
			return NULL;
		if (xrxe_psn_cmp(psn, w->first_psn) >= 0 && xrxe_psn_cmp(psn, w->last_psn) <= 0)
			return w;
	}
	return NULL;
}

void xrxe_tpi_req_probe(struct xrxe_tp_qp *qp)
{
	/* The newest packet in flight: after a rewind the packets beyond
	 * req.psn are being sent again anyway, and a probe past the resend
	 * would draw a NAK for what is only still on its way. */
	uint32_t last = xrxe_psn_sub(qp->req.psn, 1);
	const struct tp_swqe *w;

	if (!xrxe_tpi_outstanding(qp))
		return;
	qp->req.probe_psn[0] = qp->comp.psn;
	qp->req.probes_owed = 1;
	if (xrxe_psn_cmp(last, qp->comp.psn) <= 0)
		return;
	/* Only a SEND or WRITE packet: a READ request resumed past the
	 * oldest PSN makes kernel rxe's responder narrow its resource to
	 * what that request asks for (rxe_resp.c duplicate_request resets
	 * va_org), after which it silently drops a retry of the earlier
	 * bytes, until retry_cnt runs out. Resending from the oldest PSN,
	 * as go-back-N does, only ever moves forward. (Atomics, ATOMIC_WRITE
	 * and FLUSH are left out too: a duplicate of one is answered by a
	 * replayed response, more than a SEND/WRITE packet's ACK.) */
	w = wqe_of_psn(qp, last);
	if (w && !w->rd_atomic)
		qp->req.probe_psn[qp->req.probes_owed++] = last;
}

/* --- one packet ---------------------------------------------------------- */

static uint8_t req_opcode(const struct tp_swqe *w, bool first, bool last)
{
#define POS(F, M, L, O) (first && last ? XRXE_OP_##O : first ? XRXE_OP_##F : last ? XRXE_OP_##L : XRXE_OP_##M)
	switch (w->wr.opcode) {
	case IBV_WR_SEND:
		return POS(SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY);
	case IBV_WR_SEND_WITH_IMM:
		return POS(SEND_FIRST, SEND_MIDDLE, SEND_LAST_WITH_IMM, SEND_ONLY_WITH_IMM);
	case IBV_WR_SEND_WITH_INV:
		return POS(SEND_FIRST, SEND_MIDDLE, SEND_LAST_WITH_INVALIDATE,
			   SEND_ONLY_WITH_INVALIDATE);
	case IBV_WR_RDMA_WRITE:
		return POS(RDMA_WRITE_FIRST, RDMA_WRITE_MIDDLE, RDMA_WRITE_LAST, RDMA_WRITE_ONLY);
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return POS(RDMA_WRITE_FIRST, RDMA_WRITE_MIDDLE, RDMA_WRITE_LAST_WITH_IMM,
			   RDMA_WRITE_ONLY_WITH_IMM);
	case IBV_WR_RDMA_READ:
		return XRXE_OP_RDMA_READ_REQUEST;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return XRXE_OP_COMPARE_SWAP;
	case IBV_WR_ATOMIC_WRITE:
		return XRXE_OP_ATOMIC_WRITE;
	case XRXE_WR_FLUSH:
		return XRXE_OP_FLUSH;
	default:
		return XRXE_OP_FETCH_ADD;
	}
#undef POS
}

/* PSNs the window counts once npsn more are sent: those from the oldest
 * unacknowledged one on (docs/facts/rxe.md §2.1: at most 128 unacknowledged),
 * except, with selective repeat, READ/atomic responses already received
 * past a hole. Those are no longer in flight: counting them would stop
 * new requests while a lost response is asked for again, and the repair
 * waits behind every response the network still holds, so the responder
 * would run dry for a round trip per loss (docs/selective-repeat.md, "READ
 * under loss"). The span from the oldest is bounded by the scoreboard's. */
static bool window_reached(const struct xrxe_tp_qp *qp, uint32_t npsn)
{
	uint32_t span = xrxe_psn_sub(qp->req.psn, qp->comp.psn) + npsn;

	if (qp->type != IBV_QPT_RC)
		return false;
	if (!qp->sr)
		return span >= xrxe_tpi_rto_cwnd(qp);
	return span >= XRXE_TP_SR_SPAN || span - xrxe_tpi_sr_received(qp) >= xrxe_tpi_rto_cwnd(qp);
}

/* no new request starts: the window (fewer than 128 PSNs while the path
 * loses packets, rto.c) is full */
static bool window_full(const struct xrxe_tp_qp *qp)
{
	return window_reached(qp, 0);
}

/* docs/facts/rxe.md §2.2: an AckReq at least every XRXE_TP_MAX_PKT_PER_ACK
 * packets; twice per window when the window is smaller, so that ACKs keep
 * coming while it is open. */
static uint32_t ackreq_every(const struct xrxe_tp_qp *qp)
{
	uint32_t half = xrxe_tpi_rto_cwnd(qp) / 2;

	return half < XRXE_TP_MAX_PKT_PER_ACK ? half : XRXE_TP_MAX_PKT_PER_ACK;
}

/* The packet of npsn PSNs at req.psn fills the window: ask for the ACK that
 * opens it again (else only the Local ACK Timeout would). */
static bool window_edge(const struct xrxe_tp_qp *qp, uint32_t npsn)
{
	return window_reached(qp, npsn);
}

/* Build and send the packet at the requester's position. 0, -ENOBUFS (no
 * buffer: nothing changed, try later) or -EFAULT (the WQE went BAD). */
static int req_send_one(struct xrxe_tp_qp *qp, struct tp_swqe *w)
{
	struct xrxe_tp *tp = qp->tp;
	struct xrxe_pkt_spec spec;
	struct tp_tx tx;
	uint32_t mtu = qp_mtu(qp), off = qp->req.off, n = 0, npsn = 1;
	bool first = off == 0, last = true;
	bool rc = qp->type == IBV_QPT_RC;
	const struct xrxe_sge *sge = (const struct xrxe_sge *)w->data;
	bool inl = w->wr.send_flags & IBV_SEND_INLINE;
	const uint8_t *staged = NULL; /* the payload, when ODP memory had to be read first */
	int err;

	if (qp->type == IBV_QPT_RAW_PACKET)
		return xrxe_tpi_raw_send(qp, w);

	xrxe_tpi_spec_init(qp, w->av ? w->av : &qp->av, &spec);
	if (w->is_read) {
		/* A resumed READ asks for the rest (docs/facts/rxe.md §2.4) and
		 * takes one PSN per expected response packet (§2.1). */
		uint32_t left = w->length - off;

		/* selective repeat: only the response packets missing */
		if (qp->req.read_cap && left > (uint64_t)qp->req.read_cap * mtu)
			left = qp->req.read_cap * mtu;
		npsn = left > mtu ? (left + mtu - 1) / mtu : 1;
		spec.reth.va = w->wr.wr.rdma.remote_addr + off;
		spec.reth.rkey = w->wr.wr.rdma.rkey;
		spec.reth.len = left;
	} else if (w->wr.opcode == XRXE_WR_FLUSH) {
		spec.feth.plt = w->wr.wr.flush.type;
		spec.feth.sel = w->wr.wr.flush.level;
		spec.reth.va = w->wr.wr.flush.remote_addr;
		spec.reth.rkey = w->wr.wr.flush.rkey;
		spec.reth.len = w->wr.wr.flush.length;
	} else if (w->wr.opcode == IBV_WR_ATOMIC_WRITE) {
		n = 8;
		spec.reth.va = w->wr.wr.rdma.remote_addr;
		spec.reth.rkey = w->wr.wr.rdma.rkey;
		spec.reth.len = 8;
	} else if (w->is_atomic) {
		spec.atmeth.va = w->wr.wr.atomic.remote_addr;
		spec.atmeth.rkey = w->wr.wr.atomic.rkey;
		if (w->wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			spec.atmeth.swap_add = w->wr.wr.atomic.swap;
			spec.atmeth.comp = w->wr.wr.atomic.compare_add;
		} else {
			spec.atmeth.swap_add = w->wr.wr.atomic.compare_add;
		}
	} else {
		n = w->length - off < mtu ? w->length - off : mtu;
		last = off + n >= w->length;
		/* Only the first packet of a WRITE carries the RETH (IBA 9.3) */
		spec.reth.va = w->wr.wr.rdma.remote_addr;
		spec.reth.rkey = w->wr.wr.rdma.rkey;
		spec.reth.len = w->length;
		spec.imm_be = w->wr.ex;
		spec.ieth_rkey = w->wr.ex;
		if (n && !inl &&
		    xrxe_tpi_gather_stage(tp, qp->pdn, sge, w->wr.num_sge, off, n, &staged)) {
			/* The MR went away (or changed) since the WQE was
			 * fetched, or an ODP page is not there: a local
			 * protection error. */
			wqe_bad(w, IBV_WC_LOC_PROT_ERR);
			return -EFAULT;
		}
	}
	spec.opcode = xrxe_tpi_qp_class(qp) | req_opcode(w, first, last);
	spec.xrc_srqn = w->wr.xrc_srqn & XRXE_QPN_MASK; /* XRCETH (xrc.c) */
	spec.psn = qp->req.psn;
	spec.payload_len = n;
	/* docs/facts/rxe.md §2.2: AckReq on the last packet of every message and at
	 * least every XRXE_TP_MAX_PKT_PER_ACK packets; RC only. */
	spec.ackreq = rc && (last || qp->req.force_ackreq ||
			     qp->req.pkts_no_ackreq + 1 >= ackreq_every(qp) ||
			     window_edge(qp, npsn));
	/* SE only on the last packet of a SEND or WRITE_WITH_IMM (IBA 9.2.3) */
	spec.se = last && (w->wr.send_flags & IBV_SEND_SOLICITED) &&
		  (w->wr.opcode == IBV_WR_SEND || w->wr.opcode == IBV_WR_SEND_WITH_IMM ||
		   w->wr.opcode == IBV_WR_SEND_WITH_INV ||
		   w->wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
	if (qp->type == IBV_QPT_UD) {
		spec.dest_qp = w->dest_qpn;
		spec.deth.qkey = w->qkey;
		spec.deth.src_qp = qp->qpn;
	}
	spec.ip_id = qp->req.ip_id++;

	err = xrxe_tpi_tx_begin(tp, &spec, &tx);
	if (err)
		return err;
	if (n) {
		if (inl) /* ATOMIC_WRITE: its value is inline too */
			xrxe_tpi_tx_put(&tx, w->data + off, n);
		else if (staged)
			xrxe_tpi_tx_put(&tx, staged, n);
		else
			xrxe_tpi_sge_walk(tp, qp->pdn, sge, w->wr.num_sge, off, n, 0,
					  xrxe_tpi_tx_piece, &tx);
	}
	xrxe_tpi_tx_finish(tp, qp, &tx);

	qp->req.pkts_no_ackreq = spec.ackreq ? 0 : qp->req.pkts_no_ackreq + 1;
	if (qp->sr && w->rd_atomic)
		xrxe_tpi_sr_rd_sent(qp, spec.psn, npsn);
	xrxe_tpi_rto_sent(qp, spec.psn, npsn, spec.ackreq,
			  rc && xrxe_psn_cmp(spec.psn, qp->req.psn_hi) < 0);
	qp->req.psn = xrxe_psn_add(qp->req.psn, npsn);
	if (xrxe_psn_cmp(qp->req.psn, qp->req.psn_hi) > 0)
		qp->req.psn_hi = qp->req.psn;
	if (last) {
		qp->req.wqe++;
		qp->req.off = 0;
	} else {
		qp->req.off += n;
	}
	return 0;
}


/* Assign PSNs to a WQE that starts now; false if it must wait. */
static bool req_start(struct xrxe_tp_qp *qp, struct tp_swqe *w)
{
	if (qp->type == IBV_QPT_RC) {
		/* IBA 10.8.3.3 (fence): a fenced WR waits until every earlier
		 * READ and atomic has completed. */
		if ((w->wr.send_flags & IBV_SEND_FENCE) && qp->req.rd_atomic_out)
			return false;
		if (w->rd_atomic) {
			if (qp->attr.max_rd_atomic == 0) {
				/* An initiator depth of 0 would stall the queue
				 * forever; report it instead. */
				wqe_bad(w, IBV_WC_LOC_QP_OP_ERR);
				return false;
			}
			/* IBA 9.7.5.x / 11.2.4.2 (initiator depth): at most max_rd_atomic
			 * READ/atomic requests outstanding. Unlike rxe we do not
			 * round it up to a power of 2: the peer sized its
			 * responder resources for the number negotiated. */
			if (qp->req.rd_atomic_out >= qp->attr.max_rd_atomic)
				return false;
		}
		if (window_full(qp))
			return false;
	}
	w->state = TP_WQE_ACTIVE;
	w->first_psn = qp->req.psn;
	w->last_psn = xrxe_psn_add(qp->req.psn, w->npkts - 1);
	if (w->rd_atomic)
		qp->req.rd_atomic_out++;
	qp->req.off = 0;
	return true;
}

/* Send the owed loss probes (rto.c): each an exact copy of what was sent at
 * that PSN (a READ: the request for the rest of the response from there),
 * with AckReq, leaving the go-back-N position where it was. false: wait
 * (pacer, no buffer). IBA 9.7.5.1.x: a request the responder already
 * executed is a duplicate it answers again (ACK, READ response replay,
 * atomic result) without executing it twice. */
static bool req_send_probes(struct xrxe_tp_qp *qp)
{
	struct tp_req saved = qp->req;
	int err = 0;

	while (qp->req.probes_owed) {
		uint32_t psn = qp->req.probe_psn[0];
		struct tp_swqe *w;

		/* Acknowledged since it was queued: nothing to ask. */
		if (xrxe_psn_cmp(psn, qp->comp.psn) < 0 ||
		    xrxe_psn_cmp(psn, qp->req.psn_hi) >= 0)
			goto next;
		req_seek(qp, psn);
		if (qp->req.wqe == qp->sq_fetch)
			goto next;
		w = xrxe_tpi_swqe(qp, qp->req.wqe);
		if (w->state != TP_WQE_ACTIVE)
			goto next;
		if (!xrxe_tpi_cc_may_send(qp)) {
			err = -ENOBUFS;
			break;
		}
		qp->req.force_ackreq = true;
		err = req_send_one(qp, w);
		qp->req.force_ackreq = false;
		if (err == -ENOBUFS)
			break;
		if (!err)
			qp->info.probes++;
next:
		qp->req.psn = saved.psn;
		qp->req.wqe = saved.wqe;
		qp->req.off = saved.off;
		qp->req.probe_psn[0] = qp->req.probe_psn[1];
		qp->req.probes_owed--;
	}
	qp->req.psn = saved.psn;
	qp->req.wqe = saved.wqe;
	qp->req.off = saved.off;
	qp->req.pkts_no_ackreq = saved.pkts_no_ackreq;
	return err != -ENOBUFS;
}

/* Selective repeat (sr.c): send what the SACKs and responses say is lost,
 * before new data, each an exact copy of what was sent at that PSN with
 * AckReq (a READ: the request for just the missing response packets),
 * leaving the send position where it was. false: wait (pacer, no buffer). */
static bool req_send_sr(struct xrxe_tp_qp *qp)
{
	struct tp_sr *s = qp->srs;
	struct tp_req saved = qp->req;
	int err = 0;

	while (s->todo_head != s->todo_tail) {
		struct tp_sr_todo *t = &s->todo[s->todo_head % XRXE_TP_SR_TODO];
		struct tp_swqe *w;

		/* acknowledged (or answered) since it was queued */
		if (xrxe_psn_cmp(t->psn, qp->comp.psn) < 0 ||
		    xrxe_psn_cmp(t->psn, qp->req.psn_hi) >= 0)
			goto next;
		req_seek(qp, t->psn);
		if (qp->req.wqe == qp->sq_fetch)
			goto next;
		w = xrxe_tpi_swqe(qp, qp->req.wqe);
		if (w->state != TP_WQE_ACTIVE || qp->req.psn != t->psn)
			goto next;
		if (!w->rd_atomic && xrxe_tpi_sr_bit(s->sacked, qp, t->psn))
			goto next_psn; /* a SACK since says it is there */
		if (!xrxe_tpi_cc_may_send(qp)) {
			err = -ENOBUFS;
			break;
		}
		qp->req.force_ackreq = true;
		qp->req.read_cap = w->is_read ? t->n : 0;
		err = req_send_one(qp, w);
		qp->req.force_ackreq = false;
		qp->req.read_cap = 0;
		if (err == -ENOBUFS)
			break;
		/* IBA 9.7.6.1.3: the Local ACK Timeout times the oldest
		 * request sent and not acknowledged; a packet sent again
		 * is sent now (go-back-N restarts it the same way, comp.c
		 * comp_retry). A dead peer still sends no SACK, so nothing
		 * is sent again and the timeout runs out. */
		if (!err)
			xrxe_tpi_timer_arm_rexmit(qp);
		if (!w->rd_atomic)
			goto next_psn;
next:
		s->todo_head++;
		continue;
next_psn:
		/* a run of SEND/WRITE packets: one at a time */
		if (--t->n == 0) {
			s->todo_head++;
			continue;
		}
		t->psn = xrxe_psn_add(t->psn, 1);
	}
	qp->req.psn = saved.psn;
	qp->req.wqe = saved.wqe;
	qp->req.off = saved.off;
	qp->req.pkts_no_ackreq = saved.pkts_no_ackreq;
	return err != -ENOBUFS;
}

/* Selective repeat, going back N after a timeout or RNR NAK: a SEND/WRITE
 * packet the responder holds (SACK) is not sent again. true: skipped. */
static bool req_skip_held(struct xrxe_tp_qp *qp, struct tp_swqe *w)
{
	uint32_t mtu = qp_mtu(qp);

	if (!qp->sr || w->rd_atomic || xrxe_psn_cmp(qp->req.psn, qp->req.psn_hi) >= 0 ||
	    !xrxe_tpi_sr_bit(qp->srs->sacked, qp, qp->req.psn))
		return false;
	qp->req.psn = xrxe_psn_add(qp->req.psn, 1);
	if (w->length - qp->req.off <= mtu) {
		qp->req.wqe++;
		qp->req.off = 0;
	} else {
		qp->req.off += mtu;
	}
	return true;
}

/* BIND_MW and LOCAL_INV (IBA 10.6.7.2, 10.8.2.x): executed here, without a
 * packet, once every earlier WQE has completed (rxe fences LOCAL_INV the same
 * way; a bind waiting for earlier work is only stricter), then retired at
 * once. false: it must wait. */
static bool req_local_op(struct xrxe_tp_qp *qp, struct tp_swqe *w)
{
	int err;

	if (qp->sq_cons != qp->req.wqe)
		return false;
	if (w->wr.opcode == IBV_WR_BIND_MW)
		err = xrxe_tpi_mw_bind(qp, &w->wr);
	else
		err = xrxe_tpi_invalidate(qp, w->wr.ex);
	/* docs/facts/rxe.md §2.10: a failed bind is MW_BIND_ERR, a failed local
	 * invalidate LOC_QP_OP_ERR (rxe_do_local_ops) */
	xrxe_tpi_comp_retire(qp, !err ? IBV_WC_SUCCESS
				      : w->wr.opcode == IBV_WR_BIND_MW ? IBV_WC_MW_BIND_ERR
								       : IBV_WC_LOC_QP_OP_ERR);
	return true;
}

bool xrxe_tpi_req_run(struct xrxe_tp_qp *qp, unsigned budget)
{
	bool did = false;

	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return false;
	if (qp->comp.rnr_deadline != XRXE_TP_NO_DEADLINE)
		return false; /* waiting out an RNR NAK */
	if (qp->req.probes_owed) {
		if (!req_send_probes(qp))
			return true;
		did = true;
	}
	if (qp->sr && qp->srs->todo_head != qp->srs->todo_tail) {
		if (!req_send_sr(qp))
			return true;
		did = true;
	}
	while (budget) {
		struct tp_swqe *w;
		int err;

		if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
			break; /* an error completion moved the QP */
		if (qp->req.wqe == qp->sq_fetch) {
			/* SQD: no new WQE starts (IBA 10.3.1, Send Queue Drain) */
			if (qp->state == IBV_QPS_SQD || !xrxe_tpi_sq_fetch(qp))
				break;
		}
		w = xrxe_tpi_swqe(qp, qp->req.wqe);
		if (w->state == TP_WQE_BAD) {
			/* completes (in order) once it is the oldest */
			if (xrxe_tpi_comp_run(qp)) {
				did = true;
				continue;
			}
			break;
		}
		if (w->state == TP_WQE_FETCHED && w->is_local) {
			if (qp->state == IBV_QPS_SQD || !req_local_op(qp, w))
				break;
			did = true;
			continue;
		}
		if (w->state == TP_WQE_FETCHED) {
			if (qp->state == IBV_QPS_SQD || !req_start(qp, w)) {
				if (w->state == TP_WQE_BAD)
					continue;
				break;
			}
		} else if (window_full(qp)) {
			break;
		}
		if (req_skip_held(qp, w)) {
			did = true;
			continue;
		}
		/* CC hook: the pacer holds a rate-limited QP until its
		 * release time (cc.c; the wheel wakes the caller) */
		if (!xrxe_tpi_cc_may_send(qp))
			break;
		err = req_send_one(qp, w);
		if (err == -ENOBUFS)
			break;
		did = true;
		if (err)
			continue; /* BAD now: handled at the top */
		budget--;
		if (qp->type == IBV_QPT_RC) {
			/* IBA 9.7.6.1.3: the local ACK timer runs while
			 * requests are outstanding. */
			if (qp->comp.rexmit_deadline == XRXE_TP_NO_DEADLINE)
				xrxe_tpi_timer_arm_rexmit(qp);
		} else {
			/* UC/UD: no acknowledgements; a send WQE completes
			 * once its last packet is out (IBA 9.8.3 / 9.8.4). */
			qp->comp.psn = qp->req.psn;
			while (qp->sq_cons != qp->req.wqe)
				xrxe_tpi_comp_retire(qp, IBV_WC_SUCCESS);
		}
	}
	return did;
}
