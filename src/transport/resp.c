// SPDX-License-Identifier: MIT
/*
 * Responder (rxe_resp.c's role): requests coming in. PSN checks, duplicates,
 * receive WQEs, RNR and the NAKs of docs/facts/rxe.md §2.3, data placement, READ
 * responses and atomics, receive completions.
 *
 * Everything the responder sends back goes through a queue in PSN order
 * (ACKs, NAKs, read response streams, atomic acknowledgements): a READ's
 * responses must precede the ACK of a later SEND, or the requester would
 * take the READ as passed and retry it. Consecutive ACKs coalesce into the
 * newest one (IBA 9.7.5.1.x: an ACK acknowledges every earlier PSN).
 */
#include <errno.h>
#include <string.h>

#include "transport/tp_internal.h"

#define RSPQ_MASK (r->qslots - 1) /* r: the struct tp_resp at hand */

void xrxe_tpi_resp_reset(struct xrxe_tp_qp *qp)
{
	struct tp_resp *r = &qp->resp;

	r->nak_sent = false;
	r->drop_msg = false;
	r->msg = TP_MSG_NONE;
	r->have_rwqe = false;
	r->rq_avail = 0; /* the ring indices restart (qp.c qp_reset_state) */
	r->rcv_off = 0;
	r->w_left = r->w_len = 0;
	memset(r->res, 0, sizeof(*r->res) * r->nres);
	r->res_next = 0;
	r->qhead = r->qtail = 0;
	xrxe_tpi_sr_drop_held(qp);
}

/* --- the response queue ------------------------------------------------- */

static bool rspq_full(const struct tp_resp *r)
{
	return r->qtail - r->qhead >= r->qslots;
}

static void rsp_ack(struct xrxe_tp_qp *qp, uint32_t psn, uint8_t syndrome)
{
	struct tp_resp *r = &qp->resp;
	struct tp_rspq_ent *e;

	if (syndrome == XRXE_AETH_ACK_UNLIMITED && r->qtail != r->qhead) {
		e = &r->q[(r->qtail - 1) & RSPQ_MASK];
		if (e->kind == TP_RSP_ACK && e->syndrome == XRXE_AETH_ACK_UNLIMITED) {
			/* coalesce: the newer ACK covers the older one */
			if (xrxe_psn_cmp(psn, e->psn) >= 0) {
				e->psn = psn;
				e->msn = r->msn;
			}
			return;
		}
	}
	if (rspq_full(r))
		return; /* the requester's timeout recovers */
	e = &r->q[r->qtail++ & RSPQ_MASK];
	e->kind = TP_RSP_ACK;
	e->syndrome = syndrome;
	e->psn = psn;
	e->msn = r->msn;
	e->res = 0;
}

static void rsp_res(struct xrxe_tp_qp *qp, struct tp_res *res)
{
	struct tp_resp *r = &qp->resp;
	struct tp_rspq_ent *e = &r->q[r->qtail++ & RSPQ_MASK];

	e->kind = res->type == TP_RES_READ ? TP_RSP_READ : TP_RSP_ATOMIC;
	e->syndrome = XRXE_AETH_ACK_UNLIMITED;
	e->psn = res->first_psn;
	e->msn = res->msn;
	e->res = (uint16_t)(res - r->res);
	if (res->type == TP_RES_READ)
		res->queued = true;
}

/* An ACK, NAK or RNR NAK. With selective repeat, an ACK while packets are
 * held past a hole goes out as a SACK (sr.c): the same acknowledgement,
 * plus the bitmap of what is held after it, as of now. */
static int send_ack(struct xrxe_tp_qp *qp, const struct tp_rspq_ent *e)
{
	struct xrxe_pkt_spec spec;
	struct tp_tx tx;
	uint8_t bitmap[XRXE_SACK_LEN];
	bool sack = qp->sr && qp->srs && qp->srs->nheld &&
		    e->syndrome == XRXE_AETH_ACK_UNLIMITED;
	int err;

	xrxe_tpi_spec_init(qp, &qp->av, &spec);
	spec.opcode = sack ? XRXE_OP_XRXE_SACK : xrxe_tpi_qp_class(qp) | XRXE_OP_ACKNOWLEDGE;
	spec.psn = e->psn;
	spec.aeth.syndrome = e->syndrome;
	spec.aeth.msn = e->msn;
	if (sack) {
		xrxe_tpi_sr_bitmap(qp, e->psn, bitmap);
		spec.payload_len = XRXE_SACK_LEN;
	}
	err = xrxe_tpi_tx_begin(qp->tp, &spec, &tx);
	if (err)
		return err;
	if (sack)
		xrxe_tpi_tx_put(&tx, bitmap, XRXE_SACK_LEN);
	xrxe_tpi_tx_finish(qp->tp, qp, &tx);
	return 0;
}

static int send_atomic_ack(struct xrxe_tp_qp *qp, const struct tp_res *res)
{
	struct xrxe_pkt_spec spec;
	struct tp_tx tx;
	int err;

	xrxe_tpi_spec_init(qp, &qp->av, &spec);
	spec.opcode = xrxe_tpi_qp_class(qp) | XRXE_OP_ATOMIC_ACKNOWLEDGE;
	spec.psn = res->first_psn;
	spec.aeth.syndrome = XRXE_AETH_ACK_UNLIMITED;
	spec.aeth.msn = res->msn;
	spec.atmack_orig = res->orig;
	err = xrxe_tpi_tx_begin(qp->tp, &spec, &tx);
	if (err)
		return err;
	xrxe_tpi_tx_finish(qp->tp, qp, &tx);
	return 0;
}

/* The responder's fatal error path for a request it cannot serve. */
static void resp_fatal(struct xrxe_tp_qp *qp, uint32_t psn, uint8_t nak, enum ibv_wc_status st,
		       enum ibv_event_type ev);

/* One READ response packet (docs/facts/rxe.md §2.5): FIRST/MIDDLE/LAST or ONLY at
 * consecutive PSNs; FIRST, LAST and ONLY carry an AETH, MIDDLE does not
 * (IBA 9.3, the opcode table). n bytes from va, checked against the R_Key
 * now. 0, -ENOBUFS, or -EACCES (the region went away). */
static int send_read_pkt(struct xrxe_tp_qp *qp, const struct tp_res *res, uint32_t psn,
			 uint64_t va, uint32_t n, bool first, bool last)
{
	struct xrxe_pkt_spec spec;
	struct tp_tx tx;
	struct tp_mr *mr = NULL;
	const uint8_t *src = NULL;
	int err;

	/* The region is checked again for every packet (rxe_recheck_mr): it
	 * may have been deregistered or invalidated since the request. A
	 * zero-length read names no memory (C9-88). An ODP region's bytes
	 * are read now, before the frame (odp.c): a page not there is a
	 * remote access error too. */
	if (n) {
		mr = xrxe_tpi_rkey_check(qp, res->rkey, va, n, IBV_ACCESS_REMOTE_READ, false);
		if (!mr)
			return -EACCES;
		src = xrxe_tpi_mr_src(qp->tp, mr, va, n);
		if (!src)
			return -EACCES;
	}
	xrxe_tpi_spec_init(qp, &qp->av, &spec);
	/* RC's opcodes, or XRC's (xrc.c) */
	spec.opcode = xrxe_tpi_qp_class(qp) |
		      (first ? (last ? XRXE_OP_RDMA_READ_RESPONSE_ONLY : XRXE_OP_RDMA_READ_RESPONSE_FIRST)
			     : (last ? XRXE_OP_RDMA_READ_RESPONSE_LAST
				     : XRXE_OP_RDMA_READ_RESPONSE_MIDDLE));
	spec.psn = psn;
	/* C9-148: the MSN in a read response is the MSN of the READ */
	spec.aeth.syndrome = XRXE_AETH_ACK_UNLIMITED;
	spec.aeth.msn = res->msn;
	spec.payload_len = n;
	err = xrxe_tpi_tx_begin(qp->tp, &spec, &tx);
	if (err)
		return err;
	if (n)
		xrxe_tpi_tx_put(&tx, src, n);
	xrxe_tpi_tx_finish(qp->tp, qp, &tx);
	return 0;
}

/* The next packet of a READ's response stream. 1 when the stream is done,
 * 0 when more follow, -ENOBUFS. */
static int send_read_one(struct xrxe_tp_qp *qp, struct tp_res *res)
{
	uint32_t mtu = qp->mtu, n = res->cur_left < mtu ? res->cur_left : mtu;
	bool last = res->cur_left <= mtu;
	int err = send_read_pkt(qp, res, res->cur_psn, res->cur_va, n, res->cur_first, last);

	if (err == -EACCES) {
		res->queued = false;
		qp->resp.qhead++;
		resp_fatal(qp, res->cur_psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
			   IBV_EVENT_QP_ACCESS_ERR);
		return 1;
	}
	if (err)
		return err;
	res->cur_psn = xrxe_psn_add(res->cur_psn, 1);
	res->cur_va += n;
	res->cur_left -= n;
	res->cur_first = false;
	return last ? 1 : 0;
}

/* Selective repeat: send again the response packets [e->psn, e->end) of a
 * READ the requester lacks, each exactly as it was first sent (its place
 * in the READ decides FIRST/MIDDLE/LAST). 1 when done, 0 when more
 * follow, -ENOBUFS, 2 when the entry was dropped (popped here): the
 * resource was reused, or the region went away (fatal, as for the
 * stream). */
static int send_read_part(struct xrxe_tp_qp *qp, struct tp_rspq_ent *e)
{
	struct tp_res *res = &qp->resp.res[e->res];
	uint32_t mtu = qp->mtu, n;
	uint64_t off;
	int err;

	if (res->type != TP_RES_READ || res->first_psn != e->res_psn ||
	    xrxe_psn_cmp(e->psn, res->first_psn) < 0 || xrxe_psn_cmp(e->psn, res->last_psn) > 0) {
		qp->resp.qhead++;
		return 2;
	}
	off = (uint64_t)xrxe_psn_sub(e->psn, res->first_psn) * mtu;
	n = res->len - off < mtu ? (uint32_t)(res->len - off) : mtu;
	err = send_read_pkt(qp, res, e->psn, res->va + off, n, e->psn == res->first_psn,
			    e->psn == res->last_psn);
	if (err == -EACCES) {
		qp->resp.qhead++;
		resp_fatal(qp, e->psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
			   IBV_EVENT_QP_ACCESS_ERR);
		return 2;
	}
	if (err)
		return err;
	qp->info.resent_packets++;
	e->psn = xrxe_psn_add(e->psn, 1);
	return e->psn == e->end ? 1 : 0;
}

bool xrxe_tpi_resp_drain(struct xrxe_tp_qp *qp, unsigned budget)
{
	struct tp_resp *r = &qp->resp;
	bool did = false;

	while (r->qhead != r->qtail && budget) {
		struct tp_rspq_ent *e = &r->q[r->qhead & RSPQ_MASK];
		struct tp_res *res = &r->res[e->res];
		int ret;

		/* In ERR only the NAK that caused it still goes out (packets
		 * are sent for a QP >= RTR, docs/facts/rxe.md §2.11; the terminal
		 * NAK is queued just before the QP moves to ERR). */
		if (qp->state == IBV_QPS_ERR && e->kind != TP_RSP_ACK) {
			if (e->kind == TP_RSP_READ)
				res->queued = false;
			r->qhead++;
			continue;
		}
		/* CC hook: READ responses are the QP's data, paced (cc.c) */
		if ((e->kind == TP_RSP_READ || e->kind == TP_RSP_READ_PART) &&
		    !xrxe_tpi_cc_may_send(qp))
			break;
		switch (e->kind) {
		case TP_RSP_ACK:
			ret = send_ack(qp, e);
			if (ret == 0)
				ret = 1;
			break;
		case TP_RSP_ATOMIC:
			ret = send_atomic_ack(qp, res);
			if (ret == 0)
				ret = 1;
			break;
		case TP_RSP_READ_PART:
			ret = send_read_part(qp, e);
			if (ret == 2) {
				did = true;
				continue;
			}
			break;
		default:
			ret = send_read_one(qp, res);
			if (ret == 1 && res->queued) {
				res->queued = false;
			} else if (ret == 1) {
				/* send_read_one failed the QP and popped */
				did = true;
				continue;
			}
			break;
		}
		if (ret < 0)
			break;
		did = true;
		budget--;
		if (ret == 1)
			r->qhead++;
	}
	return did;
}

/* --- receive WQEs -------------------------------------------------------- */

/* No receive WQE for a request that needs one (docs/facts/rxe.md §2.3): RNR NAK with
 * our min_rnr_timer, PSN = this request. The rest of the message is still in
 * flight: no sequence NAKs for it (the requester resends from here anyway). */
static void rsp_rnr_nak(struct xrxe_tp_qp *qp, uint32_t psn)
{
	rsp_ack(qp, psn, XRXE_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f));
	qp->resp.nak_sent = true;
	qp->info.rnr_naks_sent++;
}

/* Copy the next receive WQE out of the RQ ring. -EAGAIN: none posted;
 * -EINVAL: malformed (it is still taken, to complete it in error). */
static int get_rwqe(struct xrxe_tp_qp *qp)
{
	struct tp_resp *r = &qp->resp;
	struct xrxe_tp_srq *srq = qp->srq;
	struct xrxe_ring *ring = srq ? srq->ring : qp->rq;
	uint32_t mask = srq ? srq->mask : qp->rq_mask;
	uint32_t log2 = srq ? srq->log2 : qp->rq_log2;
	uint32_t cons = srq ? srq->cons : qp->rq_cons;
	uint32_t max_sge = srq ? srq->max_sge : qp->cap.max_recv_sge;
	const uint8_t *slot;
	struct xrxe_recv_wqe hdr;
	uint64_t len = 0;
	uint32_t prod, i, nsge;

	if (srq) {
		/* Acquire: pairs with the application's store-release of the
		 * producer after writing the WQE (abi.h ordering rules). */
		prod = xrxe_ring_load_producer(ring, mask);
		if (prod == (cons & mask))
			return -EAGAIN;
	} else if (!r->rq_avail) {
		/* The same acquire, only when the WQEs seen last time are used
		 * up: one read of the application's producer line per burst
		 * of posts, not per message. */
		prod = xrxe_ring_load_producer(ring, mask);
		r->rq_avail = (prod - cons) & mask;
		if (!r->rq_avail)
			return -EAGAIN;
	}
	if (!srq)
		r->rq_avail--;
	slot = xrxe_ring_slot(ring, cons, mask, log2);
	memcpy(&hdr, slot, sizeof(hdr));
	nsge = hdr.num_sge <= max_sge ? hdr.num_sge : 0;
	memcpy(r->rsge, slot + sizeof(hdr), nsge * sizeof(struct xrxe_sge));
	/* An SRQ WQE belongs to this QP from now on (srq.c): the consumer
	 * moves at once, so no other QP takes it. */
	if (srq)
		xrxe_tpi_srq_taken(srq);
	r->have_rwqe = true;
	r->rwqe_id = hdr.wr_id;
	/* Receive buffers are checked against the QP's PD, also for SRQ WQEs,
	 * as rxe does (it uses the SRQ's PD only for XRC targets). */
	r->rwqe_pdn = qp->pdn;
	r->rcv_off = 0;
	r->rwqe_nsge = 0;
	r->rwqe_len = 0;
	if (hdr.num_sge > max_sge)
		return -EINVAL;
	r->rwqe_nsge = nsge;
	for (i = 0; i < nsge; i++)
		len += r->rsge[i].length;
	r->rwqe_len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	return 0;
}

/* Retire the receive WQE in use with wc (wr_id, qp_num filled here). */
static void complete_rwqe(struct xrxe_tp_qp *qp, struct ibv_wc *wc, bool solicited)
{
	struct tp_resp *r = &qp->resp;

	wc->wr_id = r->rwqe_id;
	wc->qp_num = qp->qpn;
	r->have_rwqe = false;
	/* Release: the slot was copied out; the application may reuse it
	 * after this store. Advanced before the CQE so that a failing CQ
	 * (overrun -> ERR -> flush) does not flush this WQE a second time.
	 * (An SRQ's consumer moved when the WQE was taken.) */
	if (!qp->srq) {
		qp->rq_cons++;
		xrxe_ring_publish_consumer(qp->rq, qp->rq_cons, qp->rq_mask);
	}
	if (xrxe_tpi_tm_cq_post(qp, wc, solicited)) /* tag matching's opcodes (tm_srq.c) */
		xrxe_tpi_qp_cq_overrun(qp); /* docs/facts/rxe.md §2.3 class G: recv CQ full */
	else if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
		xrxe_tpi_qp_error(qp);
}

static void complete_rwqe_status(struct xrxe_tp_qp *qp, enum ibv_wc_status st)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.status = st;
	wc.opcode = IBV_WC_RECV;
	complete_rwqe(qp, &wc, true);
}

int xrxe_tpi_resp_take_rwqe(struct xrxe_tp_qp *qp)
{
	int err = qp->resp.have_rwqe ? 0 : get_rwqe(qp);

	if (err == -EINVAL)
		complete_rwqe_status(qp, IBV_WC_LOC_QP_OP_ERR);
	return err;
}

void xrxe_tpi_resp_complete_rwqe(struct xrxe_tp_qp *qp, struct ibv_wc *wc)
{
	complete_rwqe(qp, wc, false);
}

bool xrxe_tpi_resp_flush(struct xrxe_tp_qp *qp)
{
	bool did = false;

	if (qp->resp.have_rwqe) {
		complete_rwqe_status(qp, IBV_WC_WR_FLUSH_ERR);
		did = true;
	}
	/* The SRQ's WQEs are not this QP's to flush: other QPs take them
	 * (IBA 10.3.1 Error state applies to the QP's own receive queue). */
	while (!qp->srq && qp->rq && get_rwqe(qp) != -EAGAIN) {
		complete_rwqe_status(qp, IBV_WC_WR_FLUSH_ERR);
		did = true;
	}
	qp->resp.msg = TP_MSG_NONE;
	return did;
}

/* --- errors ---------------------------------------------------------------- */

static void resp_fatal(struct xrxe_tp_qp *qp, uint32_t psn, uint8_t nak, enum ibv_wc_status st,
		       enum ibv_event_type ev)
{
	if (qp->type != IBV_QPT_RC) {
		/* UC (docs/facts/rxe.md §2.3 class D): drop the rest of the message */
		qp->resp.msg = TP_MSG_NONE;
		qp->resp.drop_msg = true;
		qp->resp.rcv_off = 0;
		qp->resp.psn = xrxe_psn_add(psn, 1);
		return;
	}
	/* RC class C: NAK, complete the receive WQE in use (if any) with the
	 * error, else report the affiliated asynchronous error (IBA 11.6.3.x:
	 * Invalid Request / Local Access Violation WQ error), then ERR. */
	if (nak)
		rsp_ack(qp, psn, nak);
	if (qp->resp.have_rwqe)
		complete_rwqe_status(qp, st); /* moves the QP to ERR */
	else
		xrxe_tpi_qp_async(qp, ev);
	xrxe_tpi_qp_error(qp);
	/* In ERR the queue still sends its ACK/NAK entries (the NAK last),
	 * and drops pending read/atomic responses. */
	xrxe_tpi_resp_drain(qp, qp->resp.qslots);
}

/* --- data placement ------------------------------------------------------- */

static void recv_wc_init(struct xrxe_tp_qp *qp, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->status = IBV_WC_SUCCESS;
	wc->opcode = IBV_WC_RECV;
	wc->src_qp = qp->attr.dest_qp_num;
}

/* Take the receive WQE a message needs (from the SRQ or the RQ) at the packet
 * of PSN psn (flags fl). Without one, RC answers an RNR NAK and UC drops the
 * rest of the message (docs/facts/rxe.md §2.3 class D); a malformed WQE is fatal:
 * NAK remote operational error, local LOC_QP_OP_ERR (§2.3). false: the
 * packet is done with. */
static bool resp_take_rwqe(struct xrxe_tp_qp *qp, uint32_t psn, uint32_t fl)
{
	struct tp_resp *r = &qp->resp;
	int err = get_rwqe(qp);

	if (err == -EAGAIN) {
		if (qp->type == IBV_QPT_RC) {
			rsp_rnr_nak(qp, psn);
		} else {
			r->drop_msg = !(fl & XRXE_OPF_LAST);
			r->msg = TP_MSG_NONE;
			r->psn = xrxe_psn_add(psn, 1);
		}
		return false;
	}
	if (err) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_REM_OP, IBV_WC_LOC_QP_OP_ERR,
			   IBV_EVENT_QP_REQ_ERR);
		return false;
	}
	return true;
}

/* SEND FIRST/MIDDLE/LAST/ONLY (with IMM or INV) at the expected PSN. */
static void resp_send(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_resp *r = &qp->resp;
	uint32_t fl = pkt->op->flags, pl = pkt->payload_len;
	struct xrxe_tpi_pkt_src c = { .pkt = pkt, .off = 0 };
	int err;

	/* A TM SRQ matches the message's TMH first (tm_srq.c) */
	if (!r->have_rwqe && (fl & XRXE_OPF_FIRST) && qp->srq && qp->srq->tm &&
	    xrxe_tpi_tm_recv(qp, pkt)) {
		rsp_rnr_nak(qp, psn); /* no rendezvous slot free (tm_rndv.c) */
		return;
	}
	if (!r->have_rwqe && !resp_take_rwqe(qp, psn, fl)) {
		xrxe_tpi_tm_unwind(qp);
		return;
	}
	if (fl & XRXE_OPF_FIRST)
		r->rcv_off = 0;
	if (r->tm.verdict) {
		c.off = xrxe_tpi_tm_skip(qp, pl); /* the TMH is not data */
		pl -= c.off;
	}
	if (pl) {
		if (pl > r->rwqe_len - r->rcv_off) {
			/* message longer than the receive buffers: local
			 * length error here, invalid request for the
			 * requester (IBA 9.7.5.2.x / docs/facts/rxe.md §2.3) */
			resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_LOC_LEN_ERR,
				   IBV_EVENT_QP_REQ_ERR);
			return;
		}
		err = xrxe_tpi_sge_walk(qp->tp, r->rwqe_pdn, r->rsge, r->rwqe_nsge, r->rcv_off, pl,
					IBV_ACCESS_LOCAL_WRITE, xrxe_tpi_piece_from_pkt, &c);
		if (err) {
			/* bad lkey/range/access in our own receive WQE: local
			 * protection error, NAK remote operational error */
			resp_fatal(qp, psn, XRXE_AETH_NAK_REM_OP, IBV_WC_LOC_PROT_ERR,
				   IBV_EVENT_QP_ACCESS_ERR);
			return;
		}
		r->rcv_off += pl;
	}
	r->psn = xrxe_psn_add(psn, 1);
	if (fl & XRXE_OPF_LAST) {
		struct ibv_wc wc;

		r->msn = (r->msn + 1) & XRXE_MSN_MASK; /* one per message (IBA 9.7.5.1.x MSN) */
		r->msg = TP_MSG_NONE;
		recv_wc_init(qp, &wc);
		wc.byte_len = r->rcv_off;
		if (fl & XRXE_OPF_IMM) {
			const struct xrxe_immdt *imm = xrxe_pkt_hdr(pkt, XRXE_HDR_IMMDT);

			wc.wc_flags |= IBV_WC_WITH_IMM;
			wc.imm_data = xrxe_immdt_imm(imm);
		}
		if (fl & XRXE_OPF_INV) {
			const struct xrxe_ieth *ieth = xrxe_pkt_hdr(pkt, XRXE_HDR_IETH);
			uint32_t rkey = xrxe_ieth_rkey(ieth);

			if (xrxe_tpi_invalidate(qp, rkey)) {
				/* docs/facts/rxe.md §2.3 class J: the receive completes
				 * with REM_INV_REQ_ERR and the QP goes to ERR */
				wc.status = IBV_WC_REM_INV_REQ_ERR;
			} else {
				wc.wc_flags |= IBV_WC_WITH_INV;
				wc.invalidated_rkey = rkey;
			}
		}
		if (xrxe_bth_ackreq(xrxe_pkt_bth(pkt)) && qp->type == IBV_QPT_RC)
			rsp_ack(qp, psn, XRXE_AETH_ACK_UNLIMITED);
		complete_rwqe(qp, &wc, xrxe_bth_se(xrxe_pkt_bth(pkt)));
		return;
	}
	r->msg = TP_MSG_SEND;
	if (xrxe_bth_ackreq(xrxe_pkt_bth(pkt)) && qp->type == IBV_QPT_RC)
		rsp_ack(qp, psn, XRXE_AETH_ACK_UNLIMITED);
}

static void resp_write(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_resp *r = &qp->resp;
	uint32_t fl = pkt->op->flags, pl = pkt->payload_len;
	bool imm_last = (fl & XRXE_OPF_IMM) && (fl & XRXE_OPF_LAST);
	struct tp_mr *mr;

	/* WRITE_WITH_IMM consumes a receive WQE (IBA 9.4.3): make sure there
	 * is one before anything changes, so an RNR leaves no trace. */
	if (imm_last && !r->have_rwqe && !resp_take_rwqe(qp, psn, fl))
		return;
	if (fl & XRXE_OPF_FIRST) {
		const struct xrxe_reth *reth = xrxe_pkt_hdr(pkt, XRXE_HDR_RETH);
		uint32_t len = xrxe_reth_len(reth);

		if (len > XRXE_TP_MAX_MSG) {
			resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
				   IBV_EVENT_QP_REQ_ERR);
			return;
		}
		r->w_va = xrxe_reth_va(reth);
		r->w_rkey = xrxe_reth_rkey(reth);
		r->w_left = r->w_len = len;
		/* R_Key, range and access for the whole message (docs/facts/rxe.md
		 * §2.3: NAK remote access error). A zero-length WRITE names
		 * no memory (C9-88 reasoning, as rxe). */
		if (len && !xrxe_tpi_rkey_check(qp, r->w_rkey, r->w_va, len,
						IBV_ACCESS_REMOTE_WRITE, false)) {
			resp_fatal(qp, psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
				   IBV_EVENT_QP_ACCESS_ERR);
			return;
		}
	}
	if (pl > r->w_left || ((fl & XRXE_OPF_LAST) && pl != r->w_left)) {
		/* more or fewer bytes than the RETH announced (§2.3) */
		resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
			   IBV_EVENT_QP_REQ_ERR);
		return;
	}
	if (pl) {
		/* checked again per packet: the region may have gone away */
		mr = xrxe_tpi_rkey_check(qp, r->w_rkey, r->w_va, pl, IBV_ACCESS_REMOTE_WRITE,
					 false);
		if (!mr) {
			resp_fatal(qp, psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
				   IBV_EVENT_QP_ACCESS_ERR);
			return;
		}
		if (xrxe_tpi_mr_place_pkt(qp->tp, mr, r->w_va, pkt, pl)) {
			/* an ODP page that is not there (odp.c) */
			resp_fatal(qp, psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
				   IBV_EVENT_QP_ACCESS_ERR);
			return;
		}
		r->w_va += pl;
		r->w_left -= pl;
	}
	r->psn = xrxe_psn_add(psn, 1);
	if (fl & XRXE_OPF_LAST) {
		r->msn = (r->msn + 1) & XRXE_MSN_MASK;
		r->msg = TP_MSG_NONE;
		if (xrxe_bth_ackreq(xrxe_pkt_bth(pkt)) && qp->type == IBV_QPT_RC)
			rsp_ack(qp, psn, XRXE_AETH_ACK_UNLIMITED);
		if (imm_last) {
			struct ibv_wc wc;
			const struct xrxe_immdt *imm = xrxe_pkt_hdr(pkt, XRXE_HDR_IMMDT);

			recv_wc_init(qp, &wc);
			wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
			wc.byte_len = r->w_len; /* docs/facts/rxe.md §2.10: the RETH length */
			wc.wc_flags = IBV_WC_WITH_IMM;
			wc.imm_data = xrxe_immdt_imm(imm);
			complete_rwqe(qp, &wc, xrxe_bth_se(xrxe_pkt_bth(pkt)));
		}
		return;
	}
	r->msg = TP_MSG_WRITE;
	if (xrxe_bth_ackreq(xrxe_pkt_bth(pkt)) && qp->type == IBV_QPT_RC)
		rsp_ack(qp, psn, XRXE_AETH_ACK_UNLIMITED);
}

/* A responder resource slot for a new READ/atomic, used round-robin
 * (docs/facts/rxe.md §2.6). A READ still replying is not overwritten: the request
 * is dropped and the requester's retry finds room later. */
static struct tp_res *res_alloc(struct xrxe_tp_qp *qp)
{
	struct tp_resp *r = &qp->resp;
	struct tp_res *res = &r->res[r->res_next & (r->nres - 1)];

	if (res->queued || rspq_full(r))
		return NULL;
	r->res_next++;
	return res;
}

static void resp_read(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_resp *r = &qp->resp;
	const struct xrxe_reth *reth = xrxe_pkt_hdr(pkt, XRXE_HDR_RETH);
	uint32_t len = xrxe_reth_len(reth), rkey = xrxe_reth_rkey(reth), npkts = 1;
	uint64_t va = xrxe_reth_va(reth);
	struct tp_res *res;

	if (len > XRXE_TP_MAX_MSG) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
			   IBV_EVENT_QP_REQ_ERR);
		return;
	}
	/* C9-88: a zero-length READ may carry any R_Key */
	if (len && !xrxe_tpi_rkey_check(qp, rkey, va, len, IBV_ACCESS_REMOTE_READ, false)) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
			   IBV_EVENT_QP_ACCESS_ERR);
		return;
	}
	res = res_alloc(qp);
	if (!res)
		return;
	if (len > qp->mtu)
		npkts = (len + qp->mtu - 1) / qp->mtu;
	/* C9-148: the MSN counts the READ when it executes */
	r->msn = (r->msn + 1) & XRXE_MSN_MASK;
	res->type = TP_RES_READ;
	res->first_psn = psn;
	res->last_psn = xrxe_psn_add(psn, npkts - 1);
	res->va = va;
	res->rkey = rkey;
	res->len = len;
	res->msn = r->msn;
	res->cur_psn = psn;
	res->cur_va = va;
	res->cur_left = len;
	res->cur_first = true;
	rsp_res(qp, res);
	/* the READ takes one PSN per response packet (docs/facts/rxe.md §2.1) */
	r->psn = xrxe_psn_add(psn, npkts);
}

static void resp_atomic(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_resp *r = &qp->resp;
	const struct xrxe_atmeth *atm = xrxe_pkt_hdr(pkt, XRXE_HDR_ATMETH);
	uint64_t va = xrxe_atmeth_va(atm), orig, val;
	struct tp_mr *mr;
	struct tp_res *res;
	uint8_t *host;

	/* docs/facts/rxe.md §2.3: a misaligned atomic is an invalid request */
	if (va & 7) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
			   IBV_EVENT_QP_REQ_ERR);
		return;
	}
	mr = xrxe_tpi_rkey_check(qp, xrxe_atmeth_rkey(atm), va, 8, IBV_ACCESS_REMOTE_ATOMIC,
				 false);
	if (!mr) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
			   IBV_EVENT_QP_ACCESS_ERR);
		return;
	}
	res = res_alloc(qp);
	if (!res)
		return;
	host = xrxe_tpi_mr_host(mr, va);
	/* IBA 9.4.5: 64-bit operands in the responder's memory. Atomic with
	 * respect to the application's own CPU atomics when the host mapping
	 * is aligned (it is whenever iova and host share page offsets). */
	if (mr->odp) {
		/* a page not there: remote access error (odp.c) */
		if (xrxe_tpi_odp_atomic(qp->tp, mr, va, pkt->opcode == XRXE_OPCODE(RC, COMPARE_SWAP),
					false, xrxe_atmeth_comp(atm), xrxe_atmeth_swap_add(atm),
					&orig)) {
			resp_fatal(qp, psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
				   IBV_EVENT_QP_ACCESS_ERR);
			return;
		}
	} else if (((uintptr_t)host & 7) == 0) {
		uint64_t *p = (uint64_t *)(void *)host;

		if ((pkt->opcode & ~XRXE_TRANSPORT_MASK) == XRXE_OP_COMPARE_SWAP) {
			orig = xrxe_atmeth_comp(atm);
			/* on failure orig receives the current value; on
			 * success it already equals it */
			__atomic_compare_exchange_n(p, &orig, xrxe_atmeth_swap_add(atm), false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		} else {
			orig = __atomic_fetch_add(p, xrxe_atmeth_swap_add(atm), __ATOMIC_SEQ_CST);
		}
	} else {
		memcpy(&orig, host, 8);
		if ((pkt->opcode & ~XRXE_TRANSPORT_MASK) == XRXE_OP_COMPARE_SWAP)
			val = orig == xrxe_atmeth_comp(atm) ? xrxe_atmeth_swap_add(atm) : orig;
		else
			val = orig + xrxe_atmeth_swap_add(atm);
		memcpy(host, &val, 8);
	}
	r->msn = (r->msn + 1) & XRXE_MSN_MASK;
	res->type = TP_RES_ATOMIC;
	res->first_psn = res->last_psn = psn;
	res->va = va;
	res->rkey = xrxe_atmeth_rkey(atm);
	res->len = 8;
	res->msn = r->msn;
	res->orig = orig;
	res->queued = false;
	rsp_res(qp, res);
	r->psn = xrxe_psn_add(psn, 1);
}

/* --- ATOMIC_WRITE and FLUSH (IBA 1.5 annex A19; docs/facts/rxe.md §1.4) ----------
 * Both take a responder resource and are answered, like rxe, with a
 * zero-length RDMA READ response ONLY at the request's PSN: a READ resource
 * of length 0 (send_read_one sends it without touching memory), which a
 * duplicate replays without executing again. */

static void resp_read0(struct xrxe_tp_qp *qp, struct tp_res *res, uint32_t psn, uint32_t rkey)
{
	struct tp_resp *r = &qp->resp;

	r->msn = (r->msn + 1) & XRXE_MSN_MASK;
	res->type = TP_RES_READ;
	res->first_psn = res->last_psn = res->cur_psn = psn;
	res->va = res->cur_va = 0;
	res->rkey = rkey;
	res->len = res->cur_left = 0;
	res->cur_first = true;
	res->msn = r->msn;
	rsp_res(qp, res);
	r->psn = xrxe_psn_add(psn, 1);
}

/* ATOMIC_WRITE: 8 bytes placed as one aligned 64-bit store, so a reader on
 * the responder sees the old or the new value, never a mix. The rights are
 * rxe's: remote write on the QP (checked by the caller) and on the region. */
static void resp_atomic_write(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	const struct xrxe_reth *reth = xrxe_pkt_hdr(pkt, XRXE_HDR_RETH);
	uint64_t va = xrxe_reth_va(reth), val;
	uint32_t rkey = xrxe_reth_rkey(reth);
	struct tp_res *res;
	struct tp_mr *mr;
	uint8_t *host;

	/* the parser enforces the 8-byte payload (XRXE_PAYLOAD_8); an
	 * unaligned target is an invalid request, as for atomics */
	if (pkt->payload_len != 8 || (va & 7)) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
			   IBV_EVENT_QP_REQ_ERR);
		return;
	}
	mr = xrxe_tpi_rkey_check(qp, rkey, va, 8, IBV_ACCESS_REMOTE_WRITE, false);
	if (!mr) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
			   IBV_EVENT_QP_ACCESS_ERR);
		return;
	}
	res = res_alloc(qp);
	if (!res)
		return; /* the requester's retry finds room */
	xrxe_pkt_copy_payload(pkt, 0, &val, 8); /* the bytes as sent, no swap */
	host = xrxe_tpi_mr_host(mr, va);
	if (mr->odp) {
		if (xrxe_tpi_odp_atomic(qp->tp, mr, va, false, true, 0, val, &val)) {
			resp_fatal(qp, psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
				   IBV_EVENT_QP_ACCESS_ERR);
			return;
		}
	} else if (((uintptr_t)host & 7) == 0)
		__atomic_store_n((uint64_t *)(void *)host, val, __ATOMIC_SEQ_CST);
	else
		memcpy(host, &val, 8);
	resp_read0(qp, res, psn, rkey);
}

/* FLUSH: placement type (FETH PLT) global visibility and/or persistence,
 * selectivity (FETH SEL) the RETH range or the whole region. The QP must
 * enable each requested type (else invalid request) and the region must grant
 * it (else remote access error), as rxe checks them. Everything this
 * responder placed before is already in the application's memory (one copy,
 * no cache of ours); a full fence orders it before the response. Regions
 * never carry the persistence right (mr.c): there is no persistence domain. */
static void resp_flush(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	const struct xrxe_feth *feth = xrxe_pkt_hdr(pkt, XRXE_HDR_FETH);
	const struct xrxe_reth *reth = xrxe_pkt_hdr(pkt, XRXE_HDR_RETH);
	uint8_t plt = xrxe_feth_plt(feth), sel = xrxe_feth_sel(feth);
	uint32_t qpa = qp->attr.qp_access_flags, need = 0, rkey = xrxe_reth_rkey(reth);
	struct tp_res *res;

	if (plt & XRXE_FLUSH_GLOBAL)
		need |= XRXE_ACCESS_FLUSH_GLOBAL;
	if (plt & XRXE_FLUSH_PERSISTENT)
		need |= XRXE_ACCESS_FLUSH_PERSISTENT;
	/* reserved placement bits, no type at all, a reserved selectivity,
	 * or a type the QP does not enable: invalid request */
	if (!need || (plt & ~(XRXE_FLUSH_GLOBAL | XRXE_FLUSH_PERSISTENT)) ||
	    (sel != XRXE_FLUSH_RANGE && sel != XRXE_FLUSH_MR) || (need & ~qpa)) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
			   IBV_EVENT_QP_REQ_ERR);
		return;
	}
	if (!xrxe_tpi_rkey_check(qp, rkey, xrxe_reth_va(reth), xrxe_reth_len(reth), need,
				 sel == XRXE_FLUSH_MR)) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
			   IBV_EVENT_QP_ACCESS_ERR);
		return;
	}
	res = res_alloc(qp);
	if (!res)
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	resp_read0(qp, res, psn, rkey);
}

/* --- duplicates (docs/facts/rxe.md §2.6) ------------------------------------------ */

/* Selective repeat: a READ request again (the requester lacks some of its
 * response packets) asks for exactly those, [psn, psn + len), without
 * cutting the stream that may still be going: what the stream has not sent
 * yet is on its way, the rest is queued again (TP_RSP_READ_PART). */
static void resp_read_again(struct xrxe_tp_qp *qp, struct tp_res *res, uint32_t psn, uint32_t len)
{
	struct tp_resp *r = &qp->resp;
	uint32_t npkts = len > qp->mtu ? (len + qp->mtu - 1) / qp->mtu : 1;
	uint32_t end = xrxe_psn_add(psn, npkts);
	struct tp_rspq_ent *e;
	uint32_t k = 0, i;

	if (xrxe_psn_cmp(end, xrxe_psn_add(res->last_psn, 1)) > 0)
		end = xrxe_psn_add(res->last_psn, 1);
	if (res->queued && xrxe_psn_cmp(end, res->cur_psn) > 0)
		end = res->cur_psn;
	if (xrxe_psn_cmp(end, psn) <= 0 || rspq_full(r))
		return;
	/* Ahead of everything queued (up to a whole window of other READs'
	 * streams): the requester's oldest READ waits for it, and with
	 * selective repeat nothing takes a later ACK for a lost response.
	 * Behind the repairs queued before it, though: repairs go out in the
	 * order they were asked for, which is how the requester tells a lost
	 * repair (sr.c repairs_lost). */
	while (r->qhead + k != r->qtail && r->q[(r->qhead + k) & RSPQ_MASK].kind == TP_RSP_READ_PART)
		k++;
	r->qhead--;
	for (i = 0; i < k; i++)
		r->q[(r->qhead + i) & RSPQ_MASK] = r->q[(r->qhead + i + 1) & RSPQ_MASK];
	e = &r->q[(r->qhead + k) & RSPQ_MASK];
	e->kind = TP_RSP_READ_PART;
	e->syndrome = XRXE_AETH_ACK_UNLIMITED;
	e->res = (uint16_t)(res - r->res);
	e->psn = psn;
	e->end = end;
	e->res_psn = res->first_psn;
	e->msn = res->msn;
}

/* Go-back-N: a READ asked for again goes out in PSN order among what is
 * queued, ahead of the answers to later requests (a stream still queued
 * for one of them included), behind those to earlier ones. A requester
 * going back N sends this READ and then every request after it again;
 * were the streams still queued for those later READs answered first
 * (kept where they were, restarted), the requester, which takes responses
 * only in PSN order, would drop them all while it waits for this one, and
 * then wait for them, which nothing sends again, until its loss probe
 * (docs/selective-repeat.md has the measurements). A probe asks only for
 * the oldest: its answer goes first too. */
static void rspq_requeue_read(struct xrxe_tp_qp *qp, struct tp_res *res)
{
	struct tp_resp *r = &qp->resp;
	uint16_t idx = (uint16_t)(res - r->res);
	struct tp_rspq_ent e;
	uint32_t i, at;

	if (res->queued) {
		for (i = r->qhead; i != r->qtail; i++)
			if (r->q[i & RSPQ_MASK].kind == TP_RSP_READ && r->q[i & RSPQ_MASK].res == idx)
				break;
		if (i == r->qtail)
			return; /* not found: cannot be (queued), leave it */
		for (; i + 1 != r->qtail; i++)
			r->q[i & RSPQ_MASK] = r->q[(i + 1) & RSPQ_MASK];
		r->qtail--;
	}
	rsp_res(qp, res);
	e = r->q[(r->qtail - 1) & RSPQ_MASK];
	for (at = r->qtail - 1;
	     at != r->qhead && xrxe_psn_cmp(r->q[(at - 1) & RSPQ_MASK].psn, res->first_psn) > 0; at--)
		r->q[at & RSPQ_MASK] = r->q[(at - 1) & RSPQ_MASK];
	r->q[at & RSPQ_MASK] = e;
}

static void resp_duplicate(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_resp *r = &qp->resp;
	uint32_t i;

	qp->info.duplicates++;
	if (pkt->op->flags & XRXE_OPF_READ) {
		const struct xrxe_reth *reth = xrxe_pkt_hdr(pkt, XRXE_HDR_RETH);
		uint64_t va = xrxe_reth_va(reth);
		uint32_t len = xrxe_reth_len(reth);

		for (i = 0; i < r->nres; i++) {
			struct tp_res *res = &r->res[i];

			if (res->type != TP_RES_READ || xrxe_psn_cmp(psn, res->first_psn) < 0 ||
			    xrxe_psn_cmp(psn, res->last_psn) > 0)
				continue;
			/* the retried READ must ask for a subset of the
			 * original, with the same R_Key; else drop */
			if (xrxe_reth_rkey(reth) != res->rkey || va < res->va ||
			    len > res->len || va - res->va > res->len - len)
				return;
			if (qp->sr) {
				resp_read_again(qp, res, psn, len);
				return;
			}
			if (!res->queued && rspq_full(r))
				return;
			res->cur_psn = psn;
			res->cur_va = va;
			res->cur_left = len;
			res->cur_first = true;
			/* the response packets it asks for go out again */
			qp->info.resent_packets += len > qp->mtu ? (len + qp->mtu - 1) / qp->mtu : 1;
			rspq_requeue_read(qp, res);
			return;
		}
		return; /* not found: class D, drop */
	}
	if (pkt->op->flags & XRXE_OPF_ATOMIC) {
		for (i = 0; i < r->nres; i++) {
			struct tp_res *res = &r->res[i];

			/* replay the cached result, do not execute again */
			if (res->type == TP_RES_ATOMIC && res->first_psn == psn) {
				if (!rspq_full(r))
					rsp_res(qp, res);
				return;
			}
		}
		return;
	}
	if (pkt->op->flags & (XRXE_OPF_ATOMIC_WRITE | XRXE_OPF_FLUSH)) {
		/* replay the empty READ response, do not execute again */
		for (i = 0; i < r->nres; i++) {
			struct tp_res *res = &r->res[i];

			if (res->type == TP_RES_READ && res->len == 0 && res->first_psn == psn) {
				res->cur_psn = psn;
				res->cur_left = 0;
				res->cur_first = true;
				if (!res->queued && !rspq_full(r))
					rsp_res(qp, res);
				return;
			}
		}
		return;
	}
	/* SEND/WRITE: C9-105: ACK again with the last PSN accepted, so a
	 * requester whose ACK was lost makes progress; then drop. */
	rsp_ack(qp, xrxe_psn_sub(r->psn, 1), XRXE_AETH_ACK_UNLIMITED);
}

/* --- UD receive (docs/facts/rxe.md §2.9) ----------------------------------------- */

static void resp_ud(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt)
{
	struct tp_resp *r = &qp->resp;
	const struct xrxe_deth *deth = xrxe_pkt_hdr(pkt, XRXE_HDR_DETH);
	uint32_t pl = pkt->payload_len;
	uint8_t grh[40];
	struct xrxe_tpi_buf_src g = { .src = grh };
	struct xrxe_tpi_pkt_src c = { .pkt = pkt, .off = 0 };
	struct ibv_wc wc;
	int err;

	if (!deth || pl > qp->tp->cfg.max_path_mtu)
		return;
	if (!r->have_rwqe) {
		err = get_rwqe(qp);
		if (err == -EAGAIN) {
			qp->tp->stats.rx_drop_ud_no_wqe++; /* UD: no receive WQE, drop (§2.3) */
			return;
		}
		if (err) {
			complete_rwqe_status(qp, IBV_WC_LOC_QP_OP_ERR);
			return;
		}
	}
	/* the buffers must hold the 40-byte GRH area and the payload; else
	 * drop and keep the WQE for the next datagram (class D) */
	if (pl > r->rwqe_len || r->rwqe_len - pl < sizeof(grh)) {
		qp->tp->stats.rx_drop_ud_too_long++;
		return;
	}
	/* The GRH area as rxe fills it: IPv4 = 20 zero bytes + the IPv4
	 * header, IPv6 = the IPv6 header (Annex A17.4.5.2). */
	memset(grh, 0, sizeof(grh));
	if (pkt->ip_version == 4)
		memcpy(grh + 20, pkt->frag[0].data + pkt->l3_off, 20);
	else
		memcpy(grh, pkt->frag[0].data + pkt->l3_off, 40);
	err = xrxe_tpi_sge_walk(qp->tp, r->rwqe_pdn, r->rsge, r->rwqe_nsge, 0, sizeof(grh),
				IBV_ACCESS_LOCAL_WRITE, xrxe_tpi_piece_from_buf, &g);
	if (!err && pl)
		err = xrxe_tpi_sge_walk(qp->tp, r->rwqe_pdn, r->rsge, r->rwqe_nsge, sizeof(grh), pl,
					IBV_ACCESS_LOCAL_WRITE, xrxe_tpi_piece_from_pkt, &c);
	if (err) {
		complete_rwqe_status(qp, IBV_WC_LOC_PROT_ERR);
		return;
	}
	recv_wc_init(qp, &wc);
	wc.byte_len = pl + sizeof(grh);
	wc.wc_flags = IBV_WC_GRH;
	wc.src_qp = xrxe_deth_sqp(deth);
	if (pkt->op->flags & XRXE_OPF_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = xrxe_immdt_imm(xrxe_pkt_hdr(pkt, XRXE_HDR_IMMDT));
	}
	r->psn = xrxe_psn_add(xrxe_bth_psn(xrxe_pkt_bth(pkt)), 1);
	complete_rwqe(qp, &wc, xrxe_bth_se(xrxe_pkt_bth(pkt)));
}

/* --- entry ------------------------------------------------------------------ */

/* UC PSN handling (docs/facts/rxe.md §2.3, IBA 9.8.3): a gap, or a non-FIRST packet
 * while dropping, drops the rest of the message until the next FIRST/ONLY,
 * which resynchronises the expected PSN. UC never NAKs. false: drop. */
static bool uc_check_psn(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_resp *r = &qp->resp;
	bool first = pkt->op->flags & XRXE_OPF_FIRST;

	if (first) {
		/* a new message abandons a partial one; its receive WQE is
		 * reused (rxe: drop_msg) */
		r->psn = psn;
		r->drop_msg = false;
		r->msg = TP_MSG_NONE;
		r->rcv_off = 0;
		return true;
	}
	if (psn != r->psn || r->drop_msg) {
		r->drop_msg = true;
		r->msg = TP_MSG_NONE;
		r->rcv_off = 0;
		r->psn = xrxe_psn_add(psn, 1);
		return false;
	}
	return true;
}

static void resp_execute(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn);
static void resp_replay(struct xrxe_tp_qp *qp, uint32_t psn);

/* Selective repeat while packets are held past a hole: what is owed goes out
 * per packet, not per burst. Each SACK names what is held as of then, and
 * several of them make a lost one cheap (sr.c, SACK_EVERY). */
static void sr_send_now(struct xrxe_tp_qp *qp)
{
	if (qp->srs && qp->srs->nheld)
		xrxe_tpi_resp_drain(qp, XRXE_TP_MAX_PKT_PER_ACK);
}

/* One request packet. What it owes (ACK, NAK, READ response) is queued and
 * goes out when the QP is next served (xrxe_tp_poll), which the daemon does
 * after the whole receive burst: the ACKs of a burst coalesce into one for
 * its newest PSN (rsp_ack; the requester takes an ACK as completing every
 * older WQE, docs/facts/rxe.md §2.2) instead of one frame per message. */
void xrxe_tpi_resp_rx(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt)
{
	struct tp_resp *r = &qp->resp;
	uint32_t psn = xrxe_bth_psn(xrxe_pkt_bth(pkt));

	if (qp->type == IBV_QPT_UD) {
		resp_ud(qp, pkt);
		return;
	}
	if (qp->type == IBV_QPT_RC) {
		int32_t d = xrxe_psn_cmp(psn, r->psn);

		if (d > 0 && qp->sr) {
			/* selective repeat: keep it for its turn (sr.c) and
			 * tell the requester what is missing; no sequence
			 * NAK. Not during an RNR wait: the requester goes
			 * back to the NAK'd PSN anyway. */
			bool sack;
			int held = xrxe_tpi_sr_hold(qp, pkt, psn, &sack);

			if (held < 0)
				qp->info.out_of_sequence++;
			else if (held && sack && !r->nak_sent)
				rsp_ack(qp, xrxe_psn_sub(r->psn, 1), XRXE_AETH_ACK_UNLIMITED);
			sr_send_now(qp);
			return;
		}
		if (d > 0) {
			/* class B: NAK the expected PSN once, then drop
			 * silently until it arrives (docs/facts/rxe.md §2.3) */
			qp->info.out_of_sequence++;
			if (!r->nak_sent) {
				r->nak_sent = true;
				qp->info.seq_naks_sent++;
				rsp_ack(qp, r->psn, XRXE_AETH_NAK_PSN_SEQ);
			}
			return;
		}
		if (d < 0) {
			resp_duplicate(qp, pkt, psn);
			return;
		}
		r->nak_sent = false;
	} else if (!uc_check_psn(qp, pkt, psn)) {
		return;
	}
	resp_execute(qp, pkt, psn);
	if (qp->sr) {
		resp_replay(qp, psn);
		sr_send_now(qp);
	}
}

/* Selective repeat: the request at psn ran; run the held packets that are
 * now in turn (sr.c), through the same checks, in PSN order. Stops at the
 * next hole, at an RNR NAK (the requester resends from there) and on a
 * fatal error. */
static void resp_replay(struct xrxe_tp_qp *qp, uint32_t psn)
{
	struct tp_resp *r = &qp->resp;
	struct xrxe_pkt held;

	/* psn: the request that just ran; it moved resp.psn past itself
	 * unless it was refused (RNR, no resource) */
	while (xrxe_psn_cmp(r->psn, psn) > 0) {
		uint32_t next = r->psn;

		xrxe_tpi_sr_passed(qp, psn);
		if (qp->state == IBV_QPS_ERR || r->nak_sent || !xrxe_tpi_sr_take(qp, next, &held))
			break;
		resp_execute(qp, &held, next);
		psn = next;
	}
}

/* A request at the expected PSN: opcode sequence, access and length
 * checks, then the operation. */
static void resp_execute(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn)
{
	struct tp_resp *r = &qp->resp;
	uint32_t fl = pkt->op->flags, pl;
	uint32_t access = qp->attr.qp_access_flags;
	int err;

	/* XRC target: the XRCETH's SRQ serves the message (xrc.c) */
	err = xrxe_tpi_xrc_bind(qp, pkt);
	if (err == -EAGAIN)
		return;
	if (err) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
			   IBV_EVENT_QP_REQ_ERR);
		return;
	}
	/* Opcode sequence (IBA 9.7.5.1.x / docs/facts/rxe.md §2.3): FIRST or ONLY
	 * outside a message, MIDDLE/LAST of the same kind inside one. */
	if ((r->msg == TP_MSG_NONE && !(fl & XRXE_OPF_FIRST)) ||
	    (r->msg == TP_MSG_SEND && (!(fl & XRXE_OPF_SEND) || (fl & XRXE_OPF_FIRST))) ||
	    (r->msg == TP_MSG_WRITE && (!(fl & XRXE_OPF_WRITE) || (fl & XRXE_OPF_FIRST)))) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
			   IBV_EVENT_QP_REQ_ERR);
		return;
	}
	/* The operation must be enabled on the QP (IBA 10.2.x, QP access
	 * flags), and READ/atomic need responder resources (§2.3). */
	/* ATOMIC_WRITE needs remote write, as rxe; FLUSH types are checked in
	 * resp_flush. Both hold a responder resource like READ/atomics. */
	if (((fl & (XRXE_OPF_WRITE | XRXE_OPF_ATOMIC_WRITE)) && !(access & IBV_ACCESS_REMOTE_WRITE)) ||
	    ((fl & XRXE_OPF_READ) && !(access & IBV_ACCESS_REMOTE_READ)) ||
	    ((fl & XRXE_OPF_ATOMIC) && !(access & IBV_ACCESS_REMOTE_ATOMIC)) ||
	    ((fl & (XRXE_OPF_READ | XRXE_OPF_ATOMIC | XRXE_OPF_ATOMIC_WRITE | XRXE_OPF_FLUSH)) &&
	     qp->attr.max_dest_rd_atomic == 0)) {
		resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
			   IBV_EVENT_QP_REQ_ERR);
		return;
	}
	/* Packet lengths against the path MTU (IBA 9.7.5.1.x; docs/facts/rxe.md §2.3):
	 * FIRST/MIDDLE exactly one MTU, LAST 1..MTU, ONLY 0..MTU. */
	pl = pkt->payload_len;
	if ((fl & (XRXE_OPF_FIRST | XRXE_OPF_MIDDLE | XRXE_OPF_LAST)) &&
	    (fl & (XRXE_OPF_SEND | XRXE_OPF_WRITE))) {
		bool first = fl & XRXE_OPF_FIRST, last = fl & XRXE_OPF_LAST;
		bool bad = (!last && pl != qp->mtu) || (last && !first && (pl == 0 || pl > qp->mtu)) ||
			   (first && last && pl > qp->mtu);

		if (bad) {
			resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
				   IBV_EVENT_QP_REQ_ERR);
			return;
		}
	}

	if (fl & XRXE_OPF_SEND)
		resp_send(qp, pkt, psn);
	else if (fl & XRXE_OPF_WRITE)
		resp_write(qp, pkt, psn);
	else if (fl & XRXE_OPF_READ)
		resp_read(qp, pkt, psn);
	else if (fl & XRXE_OPF_ATOMIC)
		resp_atomic(qp, pkt, psn);
	else if (fl & XRXE_OPF_ATOMIC_WRITE)
		resp_atomic_write(qp, pkt, psn);
	else if (fl & XRXE_OPF_FLUSH)
		resp_flush(qp, pkt, psn);
	else
		resp_fatal(qp, psn, XRXE_AETH_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
			   IBV_EVENT_QP_REQ_ERR);
}
