/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs: create/modify/query/destroy through the daemon; the data path
 * (post_send, post_recv, the ibv_wr_* builders) writes WQEs straight into the
 * shared rings (abi.h) and never makes a syscall except the SQ doorbell when
 * the daemon sleeps.
 *
 * Posting follows rdma-core providers: a bad work request stops the list,
 * *bad_wr points at it and the return value is a positive errno (ENOMEM when
 * the queue is full, EINVAL for a malformed request); the requests before it
 * are posted. Every QP is a struct ibv_qp_ex so ibv_qp_to_qp_ex() can hand it
 * out when it was created with send ops.
 */
#include "verbs/shim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define XRXE_SEND_OPS_SUPPORTED                                                            \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND | \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                             \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |             \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV |    \
	 IBV_QP_EX_WITH_ATOMIC_WRITE | XRXE_QP_EX_WITH_FLUSH)

#define WQE_HDR sizeof(struct xrxe_send_wqe)
#define XRXE_MAX_MSG_LEN (1u << 31) /* port max_msg_sz */

static inline struct xrxe_qp *qpx_to_xqp(struct ibv_qp_ex *q)
{
	return (struct xrxe_qp *)(void *)q;
}

/* --- validation shared by post_send and the wr_* builders -------------------------- */

/* Is this opcode legal on this QP type (IBA 9.7 / 10.8.2: UD sends only, UC no
 * reads or atomics)? Opcodes the transport does not implement are EINVAL, as
 * a provider without them reports. */
static int check_opcode(enum ibv_qp_type type, unsigned int op)
{
	/* XRC_SEND sends RC's operations (src/transport/xrc.c) but FLUSH and
	 * ATOMIC WRITE; XRC_RECV sends nothing */
	if (type == IBV_QPT_XRC_SEND)
		type = op == IBV_WR_ATOMIC_WRITE || op == XRXE_WR_FLUSH ? IBV_QPT_UD : IBV_QPT_RC;
	else if (type == IBV_QPT_XRC_RECV)
		return EINVAL;
	if (type == IBV_QPT_RAW_PACKET) /* one whole frame (src/transport/raw.c) */
		return op == IBV_WR_SEND ? 0 : EINVAL;
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return 0;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return type == IBV_QPT_UD ? EINVAL : 0;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV: /* the transport has its wire opcodes on RC only */
	case IBV_WR_ATOMIC_WRITE:
	case XRXE_WR_FLUSH:
		return type == IBV_QPT_RC ? 0 : EINVAL;
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		/* local operations: RC and UC, as rdma-core's rxe provider */
		return type == IBV_QPT_RC || type == IBV_QPT_UC ? 0 : EINVAL;
	default:
		return EINVAL;
	}
}

/* Operations without local data: SGE and inline setters leave them alone. */
static bool no_local_data(unsigned int op)
{
	return op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV || op == IBV_WR_ATOMIC_WRITE ||
	       op == XRXE_WR_FLUSH;
}

/* The WQE of a BIND_MW (abi.h wr.bind). rdma-core's rxe provider refuses
 * zero-based windows; the rest of IBA 10.6.7.2 is checked by the transport
 * (IBV_WC_MW_BIND_ERR). */
static int fill_bind(struct xrxe_send_wqe *w, struct ibv_mw *mw, uint32_t rkey,
		     const struct ibv_mw_bind_info *info)
{
	if (!mw || !info || (info->mw_access_flags & IBV_ACCESS_ZERO_BASED))
		return EINVAL;
	w->wr.bind.mw_rkey = mw->rkey;
	w->wr.bind.new_rkey = rkey;
	w->wr.bind.mr_lkey = info->mr ? info->mr->lkey : 0;
	w->wr.bind.addr = info->addr;
	w->wr.bind.length = info->length;
	w->wr.bind.access = info->mw_access_flags;
	/* As ibv_bind_mw does for type 1: mw->rkey names the window's R_Key
	 * from now on (the WQE carries the old one, so binds posted back to
	 * back chain correctly). */
	mw->rkey = rkey;
	return 0;
}

static bool is_atomic(unsigned int op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* Only sends and writes carry inline data. */
static bool inline_ok(unsigned int op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE ||
	       op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static size_t elem_size(const struct xrxe_wq *q)
{
	return (size_t)1 << q->log2_elem;
}

/* Room for one more WQE? Re-reads the consumer (acquire: the daemon is done
 * with the slot) only when the cached view says full. */
static bool sq_has_room(struct xrxe_wq *q, uint32_t prod, uint32_t *cons)
{
	uint32_t next = (prod + 1) & q->mask;

	if (next != *cons)
		return true;
	*cons = xrxe_ring_load_consumer(q->ring, q->mask);
	return next != *cons;
}

/* --- post_send ------------------------------------------------------------------- */

static int build_wqe(struct xrxe_qp *qp, const struct ibv_send_wr *wr, struct xrxe_send_wqe *w)
{
	const struct xrxe_wq *q = &qp->sq;
	enum ibv_qp_type type = qp->qpx.qp_base.qp_type;
	int ret = check_opcode(type, wr->opcode);

	if (ret)
		return ret;
	if (wr->num_sge < 0)
		return EINVAL;
	memset(w, 0, WQE_HDR);
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->ex = wr->imm_data; /* also invalidate_rkey: same union */
	if (type == IBV_QPT_XRC_SEND)
		w->xrc_srqn = wr->qp_type.xrc.remote_srqn;

	switch ((unsigned int)wr->opcode) {
	case IBV_WR_ATOMIC_WRITE:
	case XRXE_WR_FLUSH:
		/* no ibv_send_wr fields for them: ibv_wr_* only, as rxe */
		return EINVAL;
	case IBV_WR_BIND_MW:
		ret = fill_bind(w, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		if (ret)
			return ret;
		w->send_flags &= ~(uint32_t)IBV_SEND_INLINE;
		return 0; /* no SGEs */
	case IBV_WR_LOCAL_INV:
		w->send_flags &= ~(uint32_t)IBV_SEND_INLINE;
		return 0; /* ex = invalidate_rkey; no SGEs */
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		w->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		w->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		/* IBA o9-20: atomics operate on naturally aligned 64-bit words */
		if (wr->wr.atomic.remote_addr & 7)
			return EINVAL;
		if (wr->num_sge != 1 || wr->sg_list[0].length < 8)
			return EINVAL;
		w->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		w->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		w->wr.atomic.swap = wr->wr.atomic.swap;
		w->wr.atomic.rkey = wr->wr.atomic.rkey;
		break;
	default:
		break;
	}
	if (type == IBV_QPT_UD) {
		if (!wr->wr.ud.ah)
			return EINVAL;
		w->wr.ud.ah = xrxe_ah_num(wr->wr.ud.ah);
		w->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
		w->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
	}

	if ((wr->send_flags & IBV_SEND_INLINE) && wr->num_sge > 0) {
		size_t total = 0;

		if (!inline_ok(wr->opcode))
			return EINVAL;
		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > q->max_inline || WQE_HDR + total > elem_size(q))
			return EINVAL;
		/* The payload is captured now: the application may reuse the
		 * buffer as soon as ibv_post_send returns. */
		total = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(w->inline_data + total, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			total += wr->sg_list[i].length;
		}
		w->inline_len = (uint32_t)total;
		w->num_sge = 0;
	} else {
		if ((uint32_t)wr->num_sge > q->max_sge ||
		    WQE_HDR + (size_t)wr->num_sge * sizeof(struct xrxe_sge) > elem_size(q))
			return EINVAL;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct xrxe_sge));
		w->num_sge = (uint32_t)wr->num_sge;
		w->send_flags &= ~(uint32_t)IBV_SEND_INLINE;
	}
	return 0;
}

/* IBA 10.8.3 / C10-26: posting to the send queue in Reset, Init or RTR is an
 * immediate error; Error is allowed (the WQEs complete flushed). */
static bool sq_postable(enum ibv_qp_state s)
{
	return s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE || s == IBV_QPS_ERR;
}

int xrxe_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct xrxe_qp *qp = to_xqp(ibqp);
	struct xrxe_wq *q = &qp->sq;
	uint32_t prod, cons;
	bool posted = false;
	int ret = 0;

	if (!sq_postable(ibqp->state) || !q->ring) { /* no ring: an XRC target (verbs/xrc.c) */
		*bad = wr;
		return EINVAL;
	}
	/* The daemon is gone (device fatal): nothing would ever execute. */
	if (xrxe_conn_dead(&to_xctx(ibqp->context)->conn)) {
		*bad = wr;
		return EIO;
	}
	pthread_spin_lock(&q->lock);
	prod = q->prod;
	cons = q->cons;
	for (; wr; wr = wr->next) {
		if (!sq_has_room(q, prod, &cons)) {
			ret = ENOMEM;
			break;
		}
		ret = build_wqe(qp, wr, xrxe_wq_slot(q, prod));
		if (ret)
			break;
		prod = (prod + 1) & q->mask;
		posted = true;
	}
	if (posted) {
		q->prod = prod;
		q->cons = cons;
		/* release: the WQE contents are visible before the index */
		xrxe_ring_publish_producer(q->ring, prod, q->mask);
	}
	pthread_spin_unlock(&q->lock);
	if (posted)
		xrxe_ring_doorbell_qp(to_xctx(ibqp->context), q->ring, qp->obj.handle);
	if (ret)
		*bad = wr;
	return ret;
}

/* --- post_recv (RQ and SRQ share the ring format) -------------------------------- */

int xrxe_post_recv_ring(struct xrxe_wq *q, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	uint32_t prod, cons;
	bool posted = false;
	int ret = 0;

	pthread_spin_lock(&q->lock);
	prod = q->prod;
	cons = q->cons;
	for (; wr; wr = wr->next) {
		struct xrxe_recv_wqe *w;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->max_sge ||
		    sizeof(*w) + (size_t)wr->num_sge * sizeof(struct xrxe_sge) > elem_size(q)) {
			ret = EINVAL;
			break;
		}
		if (!sq_has_room(q, prod, &cons)) {
			ret = ENOMEM;
			break;
		}
		w = xrxe_wq_slot(q, prod);
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		w->pad = 0;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct xrxe_sge));
		prod = (prod + 1) & q->mask;
		posted = true;
	}
	if (posted) {
		q->prod = prod;
		q->cons = cons;
		/* release; no doorbell: the responder looks at the RQ when a
		 * request arrives (docs/facts/rxe.md §4.3) */
		xrxe_ring_publish_producer(q->ring, prod, q->mask);
	}
	pthread_spin_unlock(&q->lock);
	if (ret)
		*bad = wr;
	return ret;
}

int xrxe_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct xrxe_qp *qp = to_xqp(ibqp);

	/* IBA C10-49: no receive posting in Reset; with an SRQ there is no RQ. */
	if (!qp->has_rq || ibqp->state == IBV_QPS_RESET) {
		*bad = wr;
		return EINVAL;
	}
	if (xrxe_conn_dead(&to_xctx(ibqp->context)->conn)) {
		*bad = wr;
		return EIO; /* device fatal: the daemon is gone */
	}
	if (qp->ud_l3)
		xrxe_ud_l3_posting(qp, wr);
	return xrxe_post_recv_ring(&qp->rq, wr, bad);
}

/* --- ibv_wr_* builders (ibv_qp_ex) -------------------------------------------------- */

static void wr_start(struct ibv_qp_ex *qx)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_prod = qp->sq.prod;
	qp->wr_cur = NULL;
	qp->wr_err = sq_postable(qx->qp_base.state) ? 0 : EINVAL;
	if (!qp->wr_err && xrxe_conn_dead(&to_xctx(qx->qp_base.context)->conn))
		qp->wr_err = EIO; /* device fatal: wr_complete reports it */
}

/* Open the next WQE of the session; on any error the session is poisoned and
 * wr_complete reports it (the verbs contract: errors surface there). */
static struct xrxe_send_wqe *wr_next(struct ibv_qp_ex *qx, unsigned int op)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);
	struct xrxe_wq *q = &qp->sq;
	struct xrxe_send_wqe *w;

	qp->wr_cur = NULL;
	if (qp->wr_err)
		return NULL;
	if (!sq_has_room(q, qp->wr_prod, &q->cons)) {
		qp->wr_err = ENOMEM;
		return NULL;
	}
	qp->wr_err = check_opcode(qx->qp_base.qp_type, op);
	if (qp->wr_err)
		return NULL;
	w = xrxe_wq_slot(q, qp->wr_prod);
	memset(w, 0, WQE_HDR);
	w->wr_id = qx->wr_id;
	w->opcode = op;
	w->send_flags = qx->wr_flags & ~(uint32_t)IBV_SEND_INLINE;
	qp->wr_prod = (qp->wr_prod + 1) & q->mask;
	qp->wr_cur = w;
	return w;
}

static void wr_send(struct ibv_qp_ex *qx)
{
	wr_next(qx, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qx, __be32 imm)
{
	struct xrxe_send_wqe *w = wr_next(qx, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->ex = imm;
}

static void wr_rdma(struct ibv_qp_ex *qx, unsigned int op, uint32_t rkey, uint64_t addr,
		    __be32 imm)
{
	struct xrxe_send_wqe *w = wr_next(qx, op);

	if (!w)
		return;
	w->wr.rdma.remote_addr = addr;
	w->wr.rdma.rkey = rkey;
	w->ex = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qx, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, __be32 imm)
{
	wr_rdma(qx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qx, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void wr_atomic(struct ibv_qp_ex *qx, unsigned int op, uint32_t rkey, uint64_t addr,
		      uint64_t compare_add, uint64_t swap)
{
	struct xrxe_send_wqe *w;

	if (addr & 7) { /* IBA o9-20 */
		struct xrxe_qp *qp = qpx_to_xqp(qx);

		qp->wr_cur = NULL; /* later setters must not touch the previous WQE */
		if (!qp->wr_err)
			qp->wr_err = EINVAL;
		return;
	}
	w = wr_next(qx, op);
	if (!w)
		return;
	w->wr.atomic.remote_addr = addr;
	w->wr.atomic.compare_add = compare_add;
	w->wr.atomic.swap = swap;
	w->wr.atomic.rkey = rkey;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, uint64_t compare,
			      uint64_t swap)
{
	wr_atomic(qx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, uint64_t add)
{
	wr_atomic(qx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void wr_set_ud_addr(struct ibv_qp_ex *qx, struct ibv_ah *ah, uint32_t remote_qpn,
			   uint32_t remote_qkey)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);
	struct xrxe_send_wqe *w = qp->wr_cur;

	if (!w)
		return;
	if (!ah) {
		qp->wr_err = EINVAL;
		return;
	}
	w->wr.ud.ah = xrxe_ah_num(ah);
	w->wr.ud.remote_qpn = remote_qpn;
	w->wr.ud.remote_qkey = remote_qkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *qx, size_t num_sge, const struct ibv_sge *sg)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);
	struct xrxe_send_wqe *w = qp->wr_cur;

	if (!w || no_local_data(w->opcode))
		return;
	if (num_sge > qp->sq.max_sge ||
	    WQE_HDR + num_sge * sizeof(struct xrxe_sge) > elem_size(&qp->sq) ||
	    (is_atomic(w->opcode) && (num_sge != 1 || sg[0].length < 8))) {
		qp->wr_err = EINVAL;
		return;
	}
	if (num_sge)
		memcpy(w->sge, sg, num_sge * sizeof(struct xrxe_sge));
	w->num_sge = (uint32_t)num_sge;
	w->inline_len = 0;
}

static void wr_set_sge(struct ibv_qp_ex *qx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qx, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qx, size_t n, const struct ibv_data_buf *b)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);
	struct xrxe_send_wqe *w = qp->wr_cur;
	size_t total = 0;

	if (!w || no_local_data(w->opcode))
		return;
	for (size_t i = 0; i < n; i++)
		total += b[i].length;
	if (!inline_ok(w->opcode) || total > qp->sq.max_inline ||
	    WQE_HDR + total > elem_size(&qp->sq)) {
		qp->wr_err = EINVAL;
		return;
	}
	total = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy(w->inline_data + total, b[i].addr, b[i].length);
		total += b[i].length;
	}
	w->inline_len = (uint32_t)total;
	w->num_sge = 0;
	w->send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *qx, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	wr_set_inline_data_list(qx, 1, &b);
}

static int wr_complete(struct ibv_qp_ex *qx)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);
	struct xrxe_wq *q = &qp->sq;
	int err = qp->wr_err;
	bool posted = !err && qp->wr_prod != q->prod;

	/* On error nothing of the session is published: the slots written
	 * beyond the producer are simply reused. */
	if (posted) {
		q->prod = qp->wr_prod;
		xrxe_ring_publish_producer(q->ring, q->prod, q->mask);
	}
	qp->wr_cur = NULL;
	pthread_spin_unlock(&q->lock);
	if (posted)
		xrxe_ring_doorbell_qp(to_xctx(qx->qp_base.context), q->ring, qp->obj.handle);
	return err;
}

static void wr_abort(struct ibv_qp_ex *qx)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);

	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

/* Builders for operations the transport lacks: poison the session so that
 * wr_complete fails, rather than leaving NULL pointers to jump through. */
static void wr_unsupported(struct ibv_qp_ex *qx)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);

	qp->wr_cur = NULL;
	if (!qp->wr_err)
		qp->wr_err = EOPNOTSUPP;
}

static void wr_bind_mw(struct ibv_qp_ex *qx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct xrxe_send_wqe *w = wr_next(qx, IBV_WR_BIND_MW);
	struct xrxe_qp *qp = qpx_to_xqp(qx);

	if (w && fill_bind(w, mw, rkey, info))
		qp->wr_err = EINVAL;
}

static void wr_local_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	struct xrxe_send_wqe *w = wr_next(qx, IBV_WR_LOCAL_INV);

	if (w)
		w->ex = rkey;
}

static void wr_send_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	struct xrxe_send_wqe *w = wr_next(qx, IBV_WR_SEND_WITH_INV);

	if (w)
		w->ex = rkey;
}

static void wr_send_tso(struct ibv_qp_ex *qx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	wr_unsupported(qx);
}

/* XRC_SEND: the target SRQ of the WQE being built (the XRCETH's, docs/xrc.md) */
static void wr_set_xrc_srqn(struct ibv_qp_ex *qx, uint32_t srqn)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);

	if (qx->qp_base.qp_type != IBV_QPT_XRC_SEND) {
		wr_unsupported(qx);
		return;
	}
	if (qp->wr_cur)
		qp->wr_cur->xrc_srqn = srqn;
}

/* ATOMIC_WRITE: the 8 bytes at v travel inline in the WQE (captured now, as
 * the caller may reuse the buffer); the target must be 8-byte aligned. */
static void wr_atomic_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, const void *v)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);
	struct xrxe_send_wqe *w;

	if ((addr & 7) || !v) {
		qp->wr_cur = NULL;
		if (!qp->wr_err)
			qp->wr_err = EINVAL;
		return;
	}
	w = wr_next(qx, IBV_WR_ATOMIC_WRITE);
	if (!w)
		return;
	w->wr.rdma.remote_addr = addr;
	w->wr.rdma.rkey = rkey;
	memcpy(w->inline_data, v, 8);
	w->inline_len = 8;
	w->num_sge = 0;
	w->send_flags |= IBV_SEND_INLINE;
}

/* ibv_wr_flush (rdma-core >= 45): placement type and selectivity go to the
 * responder as they are; it answers invalid request for bad ones. */
static void wr_flush(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, size_t len, uint8_t type,
		     uint8_t level)
{
	struct xrxe_qp *qp = qpx_to_xqp(qx);
	struct xrxe_send_wqe *w;

	if (len > XRXE_MAX_MSG_LEN) {
		qp->wr_cur = NULL;
		if (!qp->wr_err)
			qp->wr_err = EINVAL;
		return;
	}
	w = wr_next(qx, XRXE_WR_FLUSH);
	if (!w)
		return;
	w->wr.flush.remote_addr = addr;
	w->wr.flush.rkey = rkey;
	w->wr.flush.length = (uint32_t)len;
	w->wr.flush.type = type;
	w->wr.flush.level = level;
}

static void install_wr_ops(struct ibv_qp_ex *qx)
{
	qx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qx->wr_bind_mw = wr_bind_mw;
	qx->wr_local_inv = wr_local_inv;
	qx->wr_rdma_read = wr_rdma_read;
	qx->wr_rdma_write = wr_rdma_write;
	qx->wr_rdma_write_imm = wr_rdma_write_imm;
	qx->wr_send = wr_send;
	qx->wr_send_imm = wr_send_imm;
	qx->wr_send_inv = wr_send_inv;
	qx->wr_send_tso = wr_send_tso;
	qx->wr_set_ud_addr = wr_set_ud_addr;
	qx->wr_set_xrc_srqn = wr_set_xrc_srqn;
	qx->wr_set_inline_data = wr_set_inline_data;
	qx->wr_set_inline_data_list = wr_set_inline_data_list;
	qx->wr_set_sge = wr_set_sge;
	qx->wr_set_sge_list = wr_set_sge_list;
	qx->wr_start = wr_start;
	qx->wr_complete = wr_complete;
	qx->wr_abort = wr_abort;
	qx->wr_atomic_write = wr_atomic_write;
	qpx_to_xqp(qx)->wr_flush = wr_flush;
}

/* --- create / modify / query / destroy ---------------------------------------------- */

static struct ibv_qp *qp_create(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	struct xrxe_context *ctx = to_xctx(context);
	struct xrxe_ctrl_create_qp req;
	struct xrxe_ctrl_create_qp_reply rep;
	struct ibv_qp *base;
	struct xrxe_qp *qp;
	int fds[2] = { -1, -1 };
	unsigned int nfd = 2, want;
	int ret;

	bool xrc_send = a->qp_type == IBV_QPT_XRC_SEND;

	/* XRC_SEND: a send queue only, no receive side (verbs/xrc.c) */
	if (xrc_send) {
		a->recv_cq = NULL;
		a->srq = NULL;
		a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
	}
	if (!a->pd || a->pd->context != context || !a->send_cq || (!a->recv_cq && !xrc_send))
		return xrxe_null_errno(EINVAL);
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD &&
	    a->qp_type != IBV_QPT_RAW_PACKET && !xrc_send)
		return xrxe_null_errno(EOPNOTSUPP);
	if (a->cap.max_send_wr > XRXE_MAX_QP_WR || a->cap.max_recv_wr > XRXE_MAX_QP_WR ||
	    a->cap.max_send_sge > XRXE_MAX_SGE || a->cap.max_recv_sge > XRXE_MAX_SGE ||
	    a->cap.max_inline_data > XRXE_MAX_INLINE)
		return xrxe_null_errno(EINVAL);
	qp = xrxe_domain_alloc(a->pd, sizeof(*qp), XRXE_DOMAIN_RES_QP);
	if (!qp)
		return xrxe_null_errno(ENOMEM);

	memset(&req, 0, sizeof(req));
	req.pd = a->pd->handle;
	req.send_cq = a->send_cq->handle;
	req.recv_cq = a->recv_cq ? a->recv_cq->handle : XRXE_NO_HANDLE;
	req.srq = a->srq ? a->srq->handle : XRXE_NO_HANDLE;
	req.qp_type = a->qp_type;
	req.sq_sig_all = !!a->sq_sig_all;
	req.cap = a->cap;
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_CREATE_QP, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), fds, &nfd);
	if (ret)
		goto fail;
	want = a->srq || xrc_send ? 1 : 2;
	if (nfd != want || rep.cap.max_send_sge > XRXE_MAX_SGE ||
	    rep.cap.max_recv_sge > XRXE_MAX_SGE || rep.cap.max_inline_data > XRXE_MAX_INLINE) {
		for (unsigned int i = 0; i < nfd; i++)
			close(fds[i]);
		ret = -EPROTO;
		goto fail_destroy;
	}
	ret = xrxe_wq_map(ctx, &qp->sq, fds[0], &rep.sq,
			  (uint32_t)(WQE_HDR + (rep.cap.max_send_sge * sizeof(struct xrxe_sge) >
							rep.cap.max_inline_data
						? rep.cap.max_send_sge * sizeof(struct xrxe_sge)
						: rep.cap.max_inline_data)));
	if (ret) {
		if (want == 2)
			close(fds[1]);
		goto fail_destroy;
	}
	if (want == 2) {
		ret = xrxe_wq_map(ctx, &qp->rq, fds[1], &rep.rq,
				  (uint32_t)(sizeof(struct xrxe_recv_wqe) +
					     rep.cap.max_recv_sge * sizeof(struct xrxe_sge)));
		if (ret)
			goto fail_unmap;
		qp->has_rq = true;
		if (a->qp_type == IBV_QPT_UD &&
		    (ret = xrxe_ud_l3_create(ctx, qp, rep.qpn, qp->rq.mask + 1))) {
			xrxe_wq_unmap(ctx, &qp->rq);
			goto fail_unmap;
		}
	}
	qp->sq.max_sge = rep.cap.max_send_sge;
	qp->sq.max_inline = rep.cap.max_inline_data;
	qp->rq.max_sge = rep.cap.max_recv_sge;
	qp->cap = rep.cap;
	qp->sq_sig_all = req.sq_sig_all;

	base = &qp->qpx.qp_base;
	base->context = context;
	base->qp_context = a->qp_context;
	base->pd = a->pd;
	base->send_cq = a->send_cq;
	base->recv_cq = a->recv_cq;
	base->srq = a->srq;
	base->handle = rep.handle;
	base->qp_num = rep.qpn;
	base->state = IBV_QPS_RESET;
	base->qp_type = a->qp_type;
	pthread_mutex_init(&base->mutex, NULL);
	pthread_cond_init(&base->cond, NULL);
	install_wr_ops(&qp->qpx);
	/* rdma-core reports the granted capacities back to the caller */
	a->cap = rep.cap;
	xrxe_obj_add(ctx, &qp->obj, XRXE_OBJ_QP, rep.handle, qp);
	return base;

fail_unmap:
	xrxe_wq_unmap(ctx, &qp->sq);
fail_destroy:
	xrxe_ctrl_destroy(ctx, XRXE_CTRL_DESTROY_QP, rep.handle);
fail:
	xrxe_domain_free(a->pd, qp, XRXE_DOMAIN_RES_QP);
	return xrxe_null_errno(-ret);
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp = qp_create(pd->context, &a);

	if (qp)
		attr->cap = a.cap;
	return qp;
}

struct ibv_qp *xrxe_create_qp_ex_op(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD;
	struct ibv_qp *qp;

	if (a->qp_type == IBV_QPT_XRC_RECV) /* a target: its XRC domain only (verbs/xrc.c) */
		return xrxe_create_xrc_tgt(context, a);
	if (a->comp_mask & (IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE))
		return xrxe_rss_create_qp(context, a); /* RSS (verbs/raw.c) */
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD))
		return xrxe_null_errno(EINVAL);
	if ((a->comp_mask & ~known) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (a->send_ops_flags & ~(uint64_t)XRXE_SEND_OPS_SUPPORTED)))
		return xrxe_null_errno(EOPNOTSUPP);
	qp = qp_create(context, a);
	if (qp && (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
		to_xqp(qp)->ex = true;
		to_xqp(qp)->qpx.comp_mask = 0;
	}
	return qp;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	/* rdma-core: only QPs created with send ops have the extended API */
	return to_xqp(qp)->ex ? &to_xqp(qp)->qpx : NULL;
}

/* The QP's CQ locks, the lower address first (one lock when both are the
 * same CQ), so that two threads resetting QPs never wait on each other. */
static void cq_pair(struct ibv_qp *ibqp, struct xrxe_cq **a, struct xrxe_cq **b)
{
	struct xrxe_cq *s = to_xcq(ibqp->send_cq);
	struct xrxe_cq *r = ibqp->recv_cq ? to_xcq(ibqp->recv_cq) : s;

	*a = (uintptr_t)s <= (uintptr_t)r ? s : r;
	*b = s == r ? NULL : (*a == s ? r : s);
}

static void lock_cqs(struct ibv_qp *ibqp)
{
	struct xrxe_cq *a, *b;

	cq_pair(ibqp, &a, &b);
	pthread_spin_lock(&a->lock);
	if (b)
		pthread_spin_lock(&b->lock);
}

static void unlock_cqs(struct ibv_qp *ibqp)
{
	struct xrxe_cq *a, *b;

	cq_pair(ibqp, &a, &b);
	if (b)
		pthread_spin_unlock(&b->lock);
	pthread_spin_unlock(&a->lock);
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct xrxe_qp *qp = to_xqp(ibqp);
	struct xrxe_ctrl_modify_qp req;
	bool to_reset;
	int ret;

	memset(&req, 0, sizeof(req));
	req.handle = ibqp->handle;
	req.attr_mask = (uint32_t)attr_mask;
	req.attr = *attr;
	/* The daemon validates the transition (IBA 10.3.1) and resolves the
	 * path; to Reset it empties the rings and removes the QP's unpolled
	 * CQEs from its CQs before it replies: nobody may consume from those
	 * meanwhile (src/transport/cq.c). */
	/* an XRC target has no CQs and no rings of its own */
	to_reset = (attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET &&
		   ibqp->send_cq;
	if (to_reset)
		lock_cqs(ibqp);
	ret = xrxe_conn_call(&to_xctx(ibqp->context)->conn, XRXE_CTRL_MODIFY_QP, &req, sizeof(req),
			     NULL, 0, NULL, 0, NULL, NULL);
	if (to_reset)
		unlock_cqs(ibqp);
	if (ret)
		return -ret;
	if (attr_mask & IBV_QP_STATE) {
		if (attr->qp_state == IBV_QPS_RESET && qp->sq.ring) {
			pthread_spin_lock(&qp->sq.lock);
			qp->sq.prod = xrxe_ring_load_producer(qp->sq.ring, qp->sq.mask);
			qp->sq.cons = xrxe_ring_load_consumer(qp->sq.ring, qp->sq.mask);
			pthread_spin_unlock(&qp->sq.lock);
			if (qp->has_rq) {
				pthread_spin_lock(&qp->rq.lock);
				qp->rq.prod = xrxe_ring_load_producer(qp->rq.ring, qp->rq.mask);
				qp->rq.cons = xrxe_ring_load_consumer(qp->rq.ring, qp->rq.mask);
				pthread_spin_unlock(&qp->rq.lock);
			}
		}
		ibqp->state = attr->qp_state;
	}
	return 0;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct xrxe_qp *qp = to_xqp(ibqp);
	struct xrxe_ctrl_handle req = { .handle = ibqp->handle };
	struct xrxe_ctrl_query_qp_reply rep;
	int ret;

	(void)attr_mask; /* everything is returned */
	ret = xrxe_conn_call(&to_xctx(ibqp->context)->conn, XRXE_CTRL_QUERY_QP, &req, sizeof(req),
			     NULL, 0, &rep, sizeof(rep), NULL, NULL);
	if (ret)
		return -ret;
	*attr = rep.attr;
	*init_attr = rep.init_attr;
	/* What the shim knows first-hand wins: pointers, type, capacities. */
	attr->cap = qp->cap;
	init_attr->cap = qp->cap;
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->sq_sig_all = (int)qp->sq_sig_all;
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct xrxe_qp *qp = to_xqp(ibqp);
	int ret;

	ret = xrxe_ctrl_destroy(to_xctx(ibqp->context), XRXE_CTRL_DESTROY_QP, ibqp->handle);
	if (ret)
		return -ret;
	xrxe_obj_del(to_xctx(ibqp->context), &qp->obj);
	xrxe_wq_unmap(to_xctx(ibqp->context), &qp->sq);
	if (qp->has_rq)
		xrxe_wq_unmap(to_xctx(ibqp->context), &qp->rq);
	xrxe_ud_l3_destroy(qp);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	xrxe_domain_free(ibqp->pd, qp, XRXE_DOMAIN_RES_QP);
	return 0;
}

/* Without provider support rdma-core answers "not guaranteed". */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp, (void)op, (void)flags;
	return 0;
}

/* --- multicast (UD) ------------------------------------------------------------------- */

static int mcast(struct ibv_qp *qp, uint16_t op, const union ibv_gid *gid, uint16_t lid)
{
	struct xrxe_ctrl_mcast req;

	memset(&req, 0, sizeof(req));
	req.qp = qp->handle;
	req.lid = lid;
	req.gid = *gid;
	return -xrxe_conn_call(&to_xctx(qp->context)->conn, op, &req, sizeof(req), NULL, 0, NULL, 0,
			       NULL, NULL);
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcast(qp, XRXE_CTRL_ATTACH_MCAST, gid, lid);
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcast(qp, XRXE_CTRL_DETACH_MCAST, gid, lid);
}
