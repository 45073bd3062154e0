// SPDX-License-Identifier: MIT
/*
 * Tag matching SRQs (IBV_SRQT_TM, ibv_post_srq_ops(3)): the wiring of the
 * matching core (tm.c) to an SRQ, its CQ and the responder.
 *
 * A TM SRQ is an ordinary SRQ (srq.c: its ring holds the receives for
 * unexpected and untagged messages) plus a list of tagged buffers. The list
 * operations arrive one by one from the control socket (the daemon's one
 * thread serialises them with the receive path, so no locking) and complete
 * into the SRQ's CQ (IBV_WC_TM_ADD/DEL/SYNC). A SEND that reaches a QP of a
 * TM SRQ is matched at its first packet (xrxe_tpi_tm_recv, called by
 * resp.c): an EAGER message whose tag matches lands in the tagged buffer
 * without its TMH and completes IBV_WC_TM_RECV with MATCH | DATA_VALID and
 * the tag; any other message takes an SRQ WQE as a plain receive and lands
 * whole (TMH included), completing IBV_WC_TM_NO_TAG for a NO_TAG TMH,
 * IBV_WC_TM_RECV without flags when it was unexpected (counted: software
 * synchronises with IBV_OPS_TM_SYNC), IBV_WC_RECV without a valid TMH.
 *
 * Rendezvous (a matched RNDV: the data is in the sender's memory, named by
 * the RVH): the tagged buffer completes IBV_WC_TM_RECV with MATCH and the
 * tag at once, nothing placed, and the QP fetches the data itself
 * (tm_rndv.c: its own READ, then a FIN), completing the buffer a second
 * time with DATA_VALID.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tm.h"
#include "transport/tp_internal.h"

_Static_assert(XRXE_TP_TM_MAX_TAGS == XRXE_TM_MAX_TAGS, "one list size");

int xrxe_tp_srq_create_tm(struct xrxe_tp *tp, uint32_t pdn, struct xrxe_tp_cq *cq,
			  uint32_t max_tags, struct xrxe_ring *ring, uint32_t nslots,
			  uint32_t max_sge, void *user, struct xrxe_tp_srq **out)
{
	struct xrxe_tm_list *l;
	struct xrxe_tp_srq *srq;
	int err;

	if (!cq || max_tags == 0 || max_tags > XRXE_TM_MAX_TAGS)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	err = xrxe_tm_list_init(l, max_tags);
	if (err)
		goto fail;
	err = xrxe_tp_srq_create(tp, pdn, ring, nslots, max_sge, user, &srq);
	if (err)
		goto fail_list;
	srq->tm = l;
	srq->cq = cq;
	cq->refs++;
	*out = srq;
	return 0;

fail_list:
	xrxe_tm_list_fini(l);
fail:
	free(l);
	return err;
}

void xrxe_tpi_tm_srq_free(struct xrxe_tp_srq *srq)
{
	if (!srq->tm)
		return;
	xrxe_tm_list_fini(srq->tm);
	free(srq->tm);
	srq->tm = NULL;
	srq->cq->refs--;
	srq->cq = NULL;
}

/* A list operation's completion (IBV_OPS_SIGNALED) into the SRQ's CQ */
static void op_complete(struct xrxe_tp_srq *srq, uint64_t wr_id, enum ibv_wc_opcode opcode,
			enum ibv_wc_status status, unsigned int flags)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = status;
	wc.opcode = opcode;
	wc.wc_flags = flags;
	(void)xrxe_tpi_cq_post(srq->cq, &wc, false); /* an overrun CQ reports itself */
}

int xrxe_tp_srq_op(struct xrxe_tp *tp, struct xrxe_tp_srq *srq,
		   const struct xrxe_ctrl_srq_op *op, uint32_t *handle)
{
	bool signaled = op->flags & IBV_OPS_SIGNALED;
	struct xrxe_tm_list *l = srq->tm;
	struct xrxe_tm_entry e;
	bool sync_req = false;
	int err;

	(void)tp;
	*handle = 0;
	if (!l || op->flags & ~(uint32_t)(IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC))
		return -EINVAL;
	switch (op->op) {
	case IBV_WR_TAG_ADD:
		if (op->num_sge > XRXE_TM_MAX_SGE)
			return -EINVAL;
		memset(&e, 0, sizeof(e));
		e.tag = op->tag & op->mask; /* bits outside the mask never compare */
		e.mask = op->mask;
		e.wr_id = op->recv_wr_id;
		e.nsge = op->num_sge;
		if (e.nsge)
			e.sge[0] = op->sge; /* lkey and range: checked when data lands */
		err = xrxe_tm_add(l, &e, op->unexp_cnt, handle, &sync_req);
		if (err)
			return err;
		if (op->flags & IBV_OPS_TM_SYNC)
			sync_req = !xrxe_tm_sync(l, op->unexp_cnt) || sync_req;
		if (signaled)
			op_complete(srq, op->wr_id, IBV_WC_TM_ADD, IBV_WC_SUCCESS,
				    sync_req ? IBV_WC_TM_SYNC_REQ : 0);
		return 0;
	case IBV_WR_TAG_DEL:
		err = xrxe_tm_del(l, op->handle);
		/* TAG_DEL of a buffer a message took: IBV_WC_TM_ERR (man page) */
		if (signaled || err)
			op_complete(srq, op->wr_id, IBV_WC_TM_DEL,
				    err ? IBV_WC_TM_ERR : IBV_WC_SUCCESS, 0);
		return 0;
	case IBV_WR_TAG_SYNC:
		(void)xrxe_tm_sync(l, op->unexp_cnt);
		if (signaled)
			op_complete(srq, op->wr_id, IBV_WC_TM_SYNC, IBV_WC_SUCCESS, 0);
		return 0;
	default:
		return -EINVAL;
	}
}

/* --- the receive side (resp.c) -------------------------------------------- */

bool xrxe_tpi_tm_recv(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt)
{
	struct tp_resp *r = &qp->resp;
	uint8_t head[XRXE_TM_TMH_LEN + XRXE_TM_RVH_LEN];
	uint32_t n = pkt->payload_len < sizeof(head) ? pkt->payload_len : sizeof(head);
	struct xrxe_tm_entry e;
	struct xrxe_tm_hdr h;
	uint64_t len = 0;

	memset(&r->tm, 0, sizeof(r->tm));
	xrxe_pkt_copy_payload(pkt, 0, head, n);
	/* Every rendezvous slot busy: the RNDV waits (RNR) rather than be
	 * matched with nowhere to put its READ (an unexpected RNDV, which
	 * needs none, waits too: no list operation here). */
	if (!xrxe_tpi_tm_rndv_room(qp) && !xrxe_tm_parse(head, n, &h) && h.op == XRXE_TMH_RNDV)
		return true;
	r->tm.verdict = (uint8_t)xrxe_tm_match(qp->srq->tm, head, n, &h, &e);
	switch (r->tm.verdict) {
	case XRXE_TM_EXPECTED:
	case XRXE_TM_RNDV:
		/* The tagged buffer is this message's receive WQE */
		r->have_rwqe = true;
		r->rwqe_id = e.wr_id;
		r->rwqe_pdn = qp->pdn; /* as SRQ WQEs (resp.c get_rwqe) */
		r->rcv_off = 0;
		r->rwqe_nsge = e.nsge;
		memcpy(r->rsge, e.sge, e.nsge * sizeof(e.sge[0])); /* rsge has >= 1 entry */
		for (uint32_t i = 0; i < e.nsge; i++)
			len += e.sge[i].length;
		r->rwqe_len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
		r->tm.first = true;
		r->tm.tag = h.tag;
		r->tm.priv = h.app_ctx;
		r->tm.rndv_va = h.rndv_va;
		r->tm.rndv_rkey = h.rndv_rkey;
		r->tm.rndv_len = h.rndv_len;
		break;
	default:
		break; /* an SRQ WQE: resp.c takes it */
	}
	return false;
}

void xrxe_tpi_tm_unwind(struct xrxe_tp_qp *qp)
{
	/* Not delivered after all: it is not unexpected yet */
	if (qp->resp.tm.verdict == XRXE_TM_UNEXPECTED && qp->srq && qp->srq->tm)
		qp->srq->tm->hw_unexp--;
	memset(&qp->resp.tm, 0, sizeof(qp->resp.tm));
}

uint32_t xrxe_tpi_tm_skip(struct xrxe_tp_qp *qp, uint32_t pl)
{
	struct tp_tm_rx *t = &qp->resp.tm;
	uint32_t skip = 0;

	if (t->verdict == XRXE_TM_RNDV)
		return pl; /* the data is the sender's to be read: nothing placed */
	if (t->verdict == XRXE_TM_EXPECTED && t->first)
		skip = XRXE_TM_TMH_LEN; /* parsed from this packet: pl >= 16 */
	t->first = false;
	return skip < pl ? skip : pl;
}

int xrxe_tpi_tm_cq_post(struct xrxe_tp_qp *qp, struct ibv_wc *wc, bool solicited)
{
	struct tp_tm_rx *t = &qp->resp.tm;
	struct ibv_wc rndv;
	uint64_t tag = 0;

	switch (t->verdict) {
	case XRXE_TM_EXPECTED:
		wc->opcode = IBV_WC_TM_RECV;
		wc->wc_flags |= IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID;
		wc->imm_data = t->priv;
		tag = t->tag;
		break;
	case XRXE_TM_RNDV:
		wc->opcode = IBV_WC_TM_RECV;
		wc->wc_flags |= IBV_WC_TM_MATCH;
		wc->imm_data = t->priv;
		wc->byte_len = 0;
		tag = t->tag;
		if (wc->status != IBV_WC_SUCCESS)
			break;
		/* MATCH now, the READ queued behind it (tm_rndv.c). A
		 * rendezvous that cannot start (bad RVH) fails the tagged
		 * buffer, not the QP: the caller (resp.c) still sees the
		 * SEND's own success. */
		rndv = *wc;
		rndv.status = xrxe_tpi_tm_rndv_start(qp);
		memset(t, 0, sizeof(*t));
		return xrxe_tpi_cq_post_tm(qp->recv_cq, &rndv, solicited, tag);
	case XRXE_TM_NO_TAG:
		wc->opcode = IBV_WC_TM_NO_TAG;
		break;
	case XRXE_TM_UNEXPECTED:
		wc->opcode = IBV_WC_TM_RECV;
		break;
	default:
		break;
	}
	memset(t, 0, sizeof(*t));
	return xrxe_tpi_cq_post_tm(qp->recv_cq, wc, solicited, tag);
}
