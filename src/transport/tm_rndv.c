// SPDX-License-Identifier: MIT
/*
 * Tag matching's rendezvous (docs/architecture.md "Tag matching";
 * ibv_post_srq_ops(3), Documentation/infiniband/tag_matching.rst): a
 * matched RNDV names the sender's buffer in its RVH (va, rkey, length), and
 * the receiving QP fetches it into the tagged buffer with an RDMA READ of
 * its own, then tells the sender its buffer is free again with a FIN (a
 * SEND of one TMH: opcode FIN and the tag). The tagged buffer completes
 * twice into the QP's receive CQ: IBV_WC_TM_RECV with MATCH, the tag and
 * app_ctx when the RNDV arrives (tm_srq.c), then with DATA_VALID (and the
 * length read, no tag) once the READ is done, which is what mlx5 devices
 * do and rdma-core's test_tm_rndv expects.
 *
 * Neither is work the application posted (rdma-core's test creates the
 * receiving QP with max_send_wr = 0), so they are internal WQEs: private
 * WQEs (tp_swqe) that the QP queues itself behind whatever it has fetched
 * from the application's ring, in the same index and PSN order. The
 * requester, completer and every loss recovery walk (go-back-N, probes,
 * selective repeat) treat them as any other WQE; only their retirement
 * differs (comp.c calls rndv_retired): no ring slot to give back, no send
 * completion, the tagged buffer's completion instead, and after the READ
 * the FIN. A QP of a TM SRQ has XRXE_TM_RNDV_MAX private WQEs more than
 * its ring for them (qp.c); a rendezvous holds one at a time, so they never
 * run short, and an RNDV arriving while all are taken is answered RNR
 * (tm_srq.c), to come again.
 *
 * The RVH is hostile input: its length is checked against the tagged
 * buffer before any READ (too long: the buffer completes
 * IBV_WC_LOC_LEN_ERR, IBA's status for a message its receive buffer cannot
 * hold, and nothing is read or sent), and a bad va/rkey is the sender's
 * responder's to refuse (NAK Remote Access Error: the READ, hence the
 * tagged buffer, completes IBV_WC_REM_ACCESS_ERR and the connection goes
 * to Error, as any RC READ that fails; IBA 9.7.5.2.x). A READ that fails
 * completes the buffer in error and no FIN follows. Only RC rendezvous:
 * tm_caps offers IBV_TM_CAP_RC alone; elsewhere a matched RNDV completes
 * IBV_WC_TM_RNDV_INCOMPLETE (rdma-core's "software must fetch the data").
 */
#include <string.h>

#include "transport/tm.h"
#include "transport/tp_internal.h"

_Static_assert(XRXE_TP_TM_WQE_DATA >= XRXE_TM_TMH_LEN &&
		       XRXE_TP_TM_WQE_DATA >= XRXE_TM_MAX_SGE * sizeof(struct xrxe_sge),
	       "an internal WQE's data holds a FIN's TMH and a READ's scatter list");

static bool rndv_qp(const struct xrxe_tp_qp *qp)
{
	return qp->type == IBV_QPT_RC && qp->xrc == TP_XRC_NONE && qp->srq && qp->srq->tm;
}

uint32_t xrxe_tpi_tm_rndv_wqes(const struct xrxe_tp_srq *srq)
{
	return srq && srq->tm ? XRXE_TM_RNDV_MAX : 0;
}

bool xrxe_tpi_tm_rndv_room(const struct xrxe_tp_qp *qp)
{
	return !rndv_qp(qp) || qp->tm_rndv_out < XRXE_TM_RNDV_MAX;
}

/* A private WQE at the fetch position, behind every WQE fetched so far. */
static struct tp_swqe *internal_wqe(struct xrxe_tp_qp *qp, enum tp_tm_wqe kind, uint64_t tag)
{
	struct tp_swqe *w = xrxe_tpi_swqe(qp, qp->sq_fetch);
	uint8_t *data = w->data;

	memset(w, 0, sizeof(*w));
	w->data = data;
	w->state = TP_WQE_FETCHED;
	w->status = IBV_WC_SUCCESS;
	w->npkts = 1;
	w->tm_internal = (uint8_t)kind;
	w->tm_tag = tag;
	qp->sq_fetch++;
	xrxe_tpi_sched_kick(qp);
	return w;
}

enum ibv_wc_status xrxe_tpi_tm_rndv_start(struct xrxe_tp_qp *qp)
{
	const struct tp_resp *r = &qp->resp;
	const struct tp_tm_rx *t = &r->tm;
	struct xrxe_sge sge;
	struct tp_swqe *w;

	if (!rndv_qp(qp))
		return IBV_WC_TM_RNDV_INCOMPLETE;
	if (qp->tm_rndv_out >= XRXE_TM_RNDV_MAX) /* tm_recv refused it: not reached */
		return IBV_WC_TM_RNDV_INCOMPLETE;
	/* The RVH's length against the tagged buffer (one SGE at most,
	 * XRXE_TM_MAX_SGE), before anything is read */
	if (t->rndv_len > r->rwqe_len || (t->rndv_len && r->rwqe_nsge != 1)) {
		qp->tp->stats.tm_rndv_bad++;
		return IBV_WC_LOC_LEN_ERR;
	}
	memset(&sge, 0, sizeof(sge));
	if (t->rndv_len) {
		sge = r->rsge[0];
		sge.length = t->rndv_len;
		/* The READ's responses will land there: check it now rather
		 * than fail the QP when they come (IBA 10.7.2.x, as req.c
		 * checks an application's READ) */
		if (!xrxe_tpi_mr_check(qp->tp, sge.lkey, r->rwqe_pdn, sge.addr, sge.length,
				       IBV_ACCESS_LOCAL_WRITE)) {
			qp->tp->stats.tm_rndv_bad++;
			return IBV_WC_LOC_PROT_ERR;
		}
	}
	w = internal_wqe(qp, TP_TM_WQE_READ, t->tag);
	w->wr.opcode = IBV_WR_RDMA_READ;
	w->wr.wr_id = r->rwqe_id;
	w->wr.ex = t->priv;
	w->wr.num_sge = t->rndv_len ? 1 : 0;
	w->wr.wr.rdma.remote_addr = t->rndv_va;
	w->wr.wr.rdma.rkey = t->rndv_rkey;
	memcpy(w->data, &sge, sizeof(sge));
	w->is_read = w->rd_atomic = true;
	w->length = t->rndv_len;
	if (w->length > qp->mtu)
		w->npkts = (w->length + qp->mtu - 1) / qp->mtu;
	qp->tm_rndv_out++;
	qp->tp->stats.tm_rndv++;
	return IBV_WC_SUCCESS;
}

/* The FIN: a SEND of one TMH (opcode FIN, the tag and app_ctx of the RNDV),
 * inline, unsignalled. */
static void queue_fin(struct xrxe_tp_qp *qp, const struct tp_swqe *rd)
{
	uint64_t tag = rd->tm_tag;
	uint32_t app_ctx = rd->wr.ex;
	struct tp_swqe *w = internal_wqe(qp, TP_TM_WQE_FIN, tag);

	w->wr.opcode = IBV_WR_SEND;
	w->wr.send_flags = IBV_SEND_INLINE;
	w->wr.inline_len = XRXE_TM_TMH_LEN;
	xrxe_tm_build_tmh(w->data, XRXE_TMH_FIN, app_ctx, tag);
	w->length = XRXE_TM_TMH_LEN;
}

int xrxe_tpi_tm_rndv_retired(struct xrxe_tp_qp *qp, const struct tp_swqe *w,
			     enum ibv_wc_status status)
{
	struct ibv_wc wc;

	if (w->tm_internal == TP_TM_WQE_FIN) {
		/* The sender has its buffer back: the rendezvous is over. A
		 * FIN that failed took the QP to Error (comp.c), which the
		 * application sees on everything after. */
		if (qp->tm_rndv_out)
			qp->tm_rndv_out--;
		return 0;
	}
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr.wr_id;
	wc.status = status;
	wc.opcode = IBV_WC_TM_RECV;
	wc.qp_num = qp->qpn;
	wc.src_qp = qp->attr.dest_qp_num;
	/* Neither tag nor app_ctx: the MATCH completion had them, and this
	 * one carries none, as mlx5's (rdma-core's test_tm_rndv expects tag
	 * 0 here) */
	if (status == IBV_WC_SUCCESS) {
		wc.wc_flags = IBV_WC_TM_DATA_VALID;
		wc.byte_len = w->length;
		queue_fin(qp, w); /* holds the rendezvous slot on */
	} else if (qp->tm_rndv_out) {
		qp->tm_rndv_out--;
	}
	return xrxe_tpi_cq_post_tm(qp->recv_cq, &wc, false, 0);
}
