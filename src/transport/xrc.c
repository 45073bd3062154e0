// SPDX-License-Identifier: MIT
/*
 * XRC, the extended reliable connected transport (IBA 9.x XRC, 10.2.x XRC
 * domains; docs/xrc.md): RC's transport between an initiator QP
 * (IBV_QPT_XRC_SEND) and a target QP (IBV_QPT_XRC_RECV), where every request
 * carries an XRCETH naming the XRC SRQ at the target that serves it. One
 * initiator reaches every SRQ of the target's XRC domain through one
 * connection, which is what makes XRC scale for MPI: a process needs one
 * connection per remote node, not per remote process.
 *
 * An XRC QP is an RC QP to the rest of the core (qp->type IBV_QPT_RC: the
 * same PSNs, ACKs, retries, responder resources) with a role in qp->xrc.
 * What differs lives here:
 *  - opcodes: the XRC class (0xa0) instead of RC's (xrxe_tpi_qp_class);
 *  - an initiator only sends (responses are all it accepts) and puts the
 *    WQE's xrc_srqn in every request's XRCETH (req.c);
 *  - a target only responds: it has no send queue (an empty private ring, so
 *    the requester and completer need no special case), no CQ and no PD of
 *    its own. The XRCETH of each message picks the SRQ: it must be an XRC
 *    SRQ of the target's domain, else NAK Invalid Request (the request is
 *    hostile or stale); the target then borrows that SRQ's receive WQEs, CQ
 *    and PD (R_Keys and receive buffers are checked against the SRQ's PD) for
 *    the message (xrxe_tpi_xrc_bind).
 *
 * XRC SRQs have numbers (what ibv_get_srq_num returns and peers put in the
 * XRCETH), looked up in a table here, never trusted otherwise.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tp_internal.h"

struct tp_xrcd {
	bool used;
	uint32_t refs; /* XRC SRQs and target QPs */
};

struct tp_xrc {
	struct tp_xrcd xrcd[XRXE_TP_MAX_XRCD];           /* by number; 0 is never used */
	struct xrxe_tp_srq *srqt[XRXE_TP_MAX_XRC_SRQ];   /* by SRQ number - 1 */
	uint32_t srq_next; /* allocation cursor: numbers rotate, so a stale one
			    * rarely names a new SRQ */
};

static struct tp_xrc *xrc_state(struct xrxe_tp *tp)
{
	if (!tp->xrc)
		tp->xrc = calloc(1, sizeof(*tp->xrc));
	return tp->xrc;
}

static struct tp_xrcd *xrcd_get(struct xrxe_tp *tp, uint32_t xrcdn)
{
	if (!tp->xrc || xrcdn == 0 || xrcdn >= XRXE_TP_MAX_XRCD || !tp->xrc->xrcd[xrcdn].used)
		return NULL;
	return &tp->xrc->xrcd[xrcdn];
}

void xrxe_tpi_xrc_fini(struct xrxe_tp *tp)
{
	free(tp->xrc);
	tp->xrc = NULL;
}

/* --- domains --------------------------------------------------------------- */

int xrxe_tp_xrcd_alloc(struct xrxe_tp *tp, uint32_t *xrcdn)
{
	struct tp_xrc *x = xrc_state(tp);
	uint32_t i;

	if (!x)
		return -ENOMEM;
	for (i = 1; i < XRXE_TP_MAX_XRCD; i++) {
		if (!x->xrcd[i].used) {
			x->xrcd[i].used = true;
			x->xrcd[i].refs = 0;
			*xrcdn = i;
			return 0;
		}
	}
	return -ENOMEM;
}

int xrxe_tp_xrcd_free(struct xrxe_tp *tp, uint32_t xrcdn)
{
	struct tp_xrcd *d = xrcd_get(tp, xrcdn);

	if (!d)
		return -EINVAL;
	if (d->refs)
		return -EBUSY; /* as ib_dealloc_xrcd with SRQs or QPs in it */
	d->used = false;
	return 0;
}

/* --- XRC SRQs -------------------------------------------------------------- */

int xrxe_tp_srq_create_xrc(struct xrxe_tp *tp, uint32_t pdn, uint32_t xrcdn,
			   struct xrxe_tp_cq *cq, struct xrxe_ring *ring, uint32_t nslots,
			   uint32_t max_sge, void *user, struct xrxe_tp_srq **out)
{
	struct tp_xrcd *d = xrcd_get(tp, xrcdn);
	struct tp_xrc *x = tp->xrc;
	struct xrxe_tp_srq *srq;
	uint32_t i, idx = 0;
	int err;

	if (!d || !cq)
		return -EINVAL;
	for (i = 0; i < XRXE_TP_MAX_XRC_SRQ; i++) {
		idx = (x->srq_next + i) % XRXE_TP_MAX_XRC_SRQ;
		if (!x->srqt[idx])
			break;
	}
	if (i == XRXE_TP_MAX_XRC_SRQ)
		return -ENOMEM;
	err = xrxe_tp_srq_create(tp, pdn, ring, nslots, max_sge, user, &srq);
	if (err)
		return err;
	srq->xrcdn = xrcdn;
	srq->srqn = idx + 1;
	srq->cq = cq;
	cq->refs++;
	d->refs++;
	x->srqt[idx] = srq;
	x->srq_next = (idx + 1) % XRXE_TP_MAX_XRC_SRQ;
	*out = srq;
	return 0;
}

uint32_t xrxe_tp_srq_num(const struct xrxe_tp_srq *srq)
{
	return srq->srqn;
}

static struct xrxe_tp_srq *srq_by_num(const struct xrxe_tp *tp, uint32_t srqn)
{
	if (!tp->xrc || srqn == 0 || srqn > XRXE_TP_MAX_XRC_SRQ)
		return NULL;
	return tp->xrc->srqt[srqn - 1];
}

/* The target stops using its SRQ (the SRQ's CQ and PD go with it). */
static void tgt_unbind(struct xrxe_tp_qp *qp)
{
	if (!qp->srq)
		return;
	qp->srq->refs--;
	qp->srq = NULL;
	qp->recv_cq = NULL;
	qp->pdn = 0; /* no PD: every R_Key and buffer check fails */
}

static bool tgt_mid_message(const struct xrxe_tp_qp *qp)
{
	return qp->resp.have_rwqe || qp->resp.msg != TP_MSG_NONE;
}

void xrxe_tpi_xrc_srq_detach(struct xrxe_tp_srq *srq)
{
	struct xrxe_tp_qp *qp;

	for (qp = srq->tp->qps; qp; qp = qp->next) {
		if (qp->xrc != TP_XRC_TGT || qp->srq != srq)
			continue;
		/* A message in progress cannot finish without its SRQ: the
		 * QP fails, its WQE in use flushed to the SRQ's CQ first. */
		if (tgt_mid_message(qp))
			xrxe_tpi_qp_error(qp);
		qp->resp.have_rwqe = false;
		qp->resp.msg = TP_MSG_NONE;
		tgt_unbind(qp);
	}
}

void xrxe_tpi_xrc_srq_release(struct xrxe_tp_srq *srq)
{
	struct xrxe_tp *tp = srq->tp;
	struct tp_xrcd *d = xrcd_get(tp, srq->xrcdn);

	if (srq_by_num(tp, srq->srqn) == srq)
		tp->xrc->srqt[srq->srqn - 1] = NULL;
	if (srq->cq)
		srq->cq->refs--;
	if (d && d->refs)
		d->refs--;
	srq->cq = NULL;
	srq->xrcdn = 0;
}

/* --- XRC QPs --------------------------------------------------------------- */

int xrxe_tpi_xrc_qp_check(struct xrxe_tp *tp, const struct xrxe_tp_qp_init *init)
{
	if (init->qp_type == IBV_QPT_XRC_SEND)
		return init->send_cq && init->sq && !init->rq && !init->srq ? 0 : -EINVAL;
	if (init->qp_type == IBV_QPT_XRC_RECV)
		return xrcd_get(tp, init->xrcdn) && !init->sq && !init->rq && !init->srq ? 0
											  : -EINVAL;
	return -EINVAL;
}

/* A target's send ring: two slots nobody produces into (the application
 * never sees it), so sq_fetch always finds it empty. */
struct xrxe_ring *xrxe_tpi_xrc_tgt_sq(uint32_t *slots)
{
	const uint32_t log2 = 7; /* >= sizeof(struct xrxe_send_wqe), no SGEs */
	struct xrxe_ring *ring = calloc(1, xrxe_ring_bytes(2, 1u << log2));

	if (!ring)
		return NULL;
	ring->log2_elem_size = log2;
	ring->index_mask = 1;
	*slots = 2;
	return ring;
}

void xrxe_tpi_xrc_qp_init(struct xrxe_tp_qp *qp, const struct xrxe_tp_qp_init *init,
			  struct xrxe_ring *tgt_sq)
{
	if (init->qp_type == IBV_QPT_XRC_SEND) {
		qp->xrc = TP_XRC_INI;
		qp->recv_cq = NULL; /* no receive side */
	} else if (init->qp_type == IBV_QPT_XRC_RECV) {
		qp->xrc = TP_XRC_TGT;
		qp->xrcdn = init->xrcdn;
		qp->xrc_sq = tgt_sq;
		qp->send_cq = qp->recv_cq = NULL;
		qp->srq = NULL;
		qp->pdn = 0;
		xrcd_get(qp->tp, init->xrcdn)->refs++;
	}
}

void xrxe_tpi_xrc_qp_fini(struct xrxe_tp_qp *qp)
{
	struct tp_xrcd *d;

	if (qp->xrc != TP_XRC_TGT)
		return;
	tgt_unbind(qp);
	d = xrcd_get(qp->tp, qp->xrcdn);
	if (d && d->refs)
		d->refs--;
	free(qp->xrc_sq);
	qp->xrc_sq = NULL;
}

struct xrxe_tp_qp *xrxe_tp_xrc_tgt_find(struct xrxe_tp *tp, uint32_t qpn, uint32_t xrcdn)
{
	struct xrxe_tp_qp *qp = xrxe_tpi_qp_lookup(tp, qpn);

	return qp && qp->xrc == TP_XRC_TGT && qp->xrcdn == xrcdn ? qp : NULL;
}

void xrxe_tp_qp_set_user(struct xrxe_tp_qp *qp, void *user)
{
	qp->user = user;
}

uint32_t xrxe_tp_qp_num(const struct xrxe_tp_qp *qp)
{
	return qp->qpn;
}

uint8_t xrxe_tpi_qp_class(const struct xrxe_tp_qp *qp)
{
	if (qp->xrc)
		return XRXE_TRANSPORT_XRC;
	return qp->type == IBV_QPT_RC ? XRXE_TRANSPORT_RC
	       : qp->type == IBV_QPT_UC ? XRXE_TRANSPORT_UC
					: XRXE_TRANSPORT_UD;
}

enum ibv_qp_type xrxe_tpi_qp_type(const struct xrxe_tp_qp *qp)
{
	return qp->xrc == TP_XRC_INI   ? IBV_QPT_XRC_SEND
	       : qp->xrc == TP_XRC_TGT ? IBV_QPT_XRC_RECV
				       : qp->type;
}

bool xrxe_tpi_xrc_rx_ok(const struct xrxe_tp_qp *qp, uint32_t op_flags)
{
	if (qp->xrc == TP_XRC_INI)
		return op_flags & XRXE_OPF_RESPONSE;
	if (qp->xrc == TP_XRC_TGT)
		return op_flags & XRXE_OPF_REQUEST;
	return true;
}

bool xrxe_tpi_xrc_wr_ok(const struct xrxe_tp_qp *qp, uint32_t wr_opcode)
{
	if (qp->xrc == TP_XRC_TGT)
		return false; /* no send queue (the shim refuses posts too) */
	return qp->xrc != TP_XRC_INI ||
	       (wr_opcode != IBV_WR_ATOMIC_WRITE && wr_opcode != XRXE_WR_FLUSH);
}

int xrxe_tpi_xrc_bind(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt)
{
	const struct xrxe_xrceth *x = xrxe_pkt_hdr(pkt, XRXE_HDR_XRCETH);
	struct xrxe_tp_srq *srq;
	uint32_t i;

	if (qp->xrc != TP_XRC_TGT)
		return 0;
	srq = x ? srq_by_num(qp->tp, xrxe_xrceth_srqn(x)) : NULL;
	/* The SRQ must exist and belong to the target QP's XRC domain (IBA
	 * 10.2.x: a target QP serves only its domain's SRQs); anything else
	 * is an invalid request. */
	if (!srq || srq->xrcdn != qp->xrcdn)
		return -EINVAL;
	if (srq == qp->srq)
		return 0;
	/* Every packet of a message names the same SRQ. */
	if (tgt_mid_message(qp))
		return -EINVAL;
	/* READ responses still owed are checked against the PD they were
	 * accepted under; a new message for an SRQ of another PD waits for
	 * them (dropped now, the requester sends it again). */
	if (qp->srq && qp->srq->pdn != srq->pdn)
		for (i = 0; i < qp->resp.nres; i++)
			if (qp->resp.res[i].queued)
				return -EAGAIN;
	tgt_unbind(qp);
	srq->refs++;
	qp->srq = srq;
	qp->recv_cq = srq->cq;
	qp->pdn = srq->pdn;
	return 0;
}

#define A(x) IBV_QP_##x

uint32_t xrxe_tpi_xrc_not_required(const struct xrxe_tp_qp *qp, enum ibv_qp_state cur,
				   enum ibv_qp_state next)
{
	/* IBA table 91 with XRC's columns (the kernel's qp_state_table): an
	 * initiator has no responder resources or RNR timer to set, a target
	 * no retry counts or initiator depth. Given anyway they are taken as
	 * optional, as for RC. */
	if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR && qp->xrc == TP_XRC_INI)
		return A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER);
	if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS && qp->xrc == TP_XRC_TGT)
		return A(RETRY_CNT) | A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC);
	return 0;
}

#undef A
