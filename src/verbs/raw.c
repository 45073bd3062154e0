// SPDX-License-Identifier: MIT
/*
 * RSS for raw packet QPs (docs/verbs-shim.md "Raw packet QPs"): receive work
 * queues (ibv_create_wq: a ring of receive WQEs the application posts to, as
 * to an RQ), indirection tables of them (ibv_create_rwq_ind_table), and the
 * RSS QP (ibv_create_qp_ex with IBV_QP_INIT_ATTR_RX_HASH and
 * IBV_QP_INIT_ATTR_IND_TABLE) that spreads the frames its flows match over
 * the table's WQs by a Toeplitz hash (src/transport/raw.c). Raw packet QPs
 * themselves are created by qp.c as any other QP.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs/shim.h"

struct xrxe_rwq {
	struct ibv_wq wq; /* first: the application's pointer */
	struct xrxe_wq rq;
};

static struct xrxe_rwq *to_xrwq(struct ibv_wq *wq)
{
	return (struct xrxe_rwq *)(void *)wq;
}

static int wq_post_recv(struct ibv_wq *wq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return xrxe_post_recv_ring(&to_xrwq(wq)->rq, wr, bad);
}

static struct ibv_wq *wq_create(struct ibv_context *context, struct ibv_wq_init_attr *a)
{
	struct xrxe_context *ctx = to_xctx(context);
	struct xrxe_ctrl_create_wq req;
	struct xrxe_ctrl_create_wq_reply rep;
	struct xrxe_rwq *w;
	unsigned int nfd = 1;
	int fd = -1, ret;

	if (a->wq_type != IBV_WQT_RQ || !a->pd || !a->cq || a->pd->context != context)
		return xrxe_null_errno(EINVAL);
	if (a->comp_mask || a->create_flags)
		return xrxe_null_errno(EOPNOTSUPP); /* cvlan stripping, scatter FCS, ... */
	if (a->max_wr > XRXE_MAX_QP_WR || a->max_sge > XRXE_MAX_SGE)
		return xrxe_null_errno(EINVAL);
	w = calloc(1, sizeof(*w));
	if (!w)
		return xrxe_null_errno(ENOMEM);
	memset(&req, 0, sizeof(req));
	req.pd = a->pd->handle;
	req.cq = a->cq->handle;
	req.max_wr = a->max_wr;
	req.max_sge = a->max_sge;
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_CREATE_WQ, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), &fd, &nfd);
	if (ret)
		goto fail;
	if (nfd != 1 || rep.max_sge > XRXE_MAX_SGE) {
		if (nfd)
			close(fd);
		ret = -EPROTO;
		goto fail_destroy;
	}
	ret = xrxe_wq_map(ctx, &w->rq, fd, &rep.ring,
			  (uint32_t)(sizeof(struct xrxe_recv_wqe) +
				     rep.max_sge * sizeof(struct xrxe_sge)));
	if (ret)
		goto fail_destroy;
	w->rq.max_sge = rep.max_sge;
	a->max_wr = rep.max_wr;
	a->max_sge = rep.max_sge;
	w->wq.context = context;
	w->wq.wq_context = a->wq_context;
	w->wq.pd = a->pd;
	w->wq.cq = a->cq;
	w->wq.wq_num = rep.wq_num;
	w->wq.handle = rep.handle;
	w->wq.state = IBV_WQS_RESET;
	w->wq.wq_type = IBV_WQT_RQ;
	w->wq.post_recv = wq_post_recv;
	pthread_mutex_init(&w->wq.mutex, NULL);
	pthread_cond_init(&w->wq.cond, NULL);
	return &w->wq;

fail_destroy:
	xrxe_ctrl_destroy(ctx, XRXE_CTRL_DESTROY_WQ, rep.handle);
fail:
	free(w);
	return xrxe_null_errno(-ret);
}

static int wq_modify(struct ibv_wq *wq, struct ibv_wq_attr *attr)
{
	struct xrxe_ctrl_modify_wq req;
	int ret;

	if (attr->attr_mask & ~(uint32_t)(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE))
		return EOPNOTSUPP; /* flags: cvlan stripping, ... */
	if ((attr->attr_mask & IBV_WQ_ATTR_CURR_STATE) && attr->curr_wq_state != wq->state)
		return EINVAL;
	if (!(attr->attr_mask & IBV_WQ_ATTR_STATE))
		return 0;
	memset(&req, 0, sizeof(req));
	req.handle = wq->handle;
	req.state = attr->wq_state;
	ret = xrxe_conn_call(&to_xctx(wq->context)->conn, XRXE_CTRL_MODIFY_WQ, &req, sizeof(req),
			     NULL, 0, NULL, 0, NULL, NULL);
	if (ret)
		return -ret;
	wq->state = attr->wq_state;
	return 0;
}

static int wq_destroy(struct ibv_wq *wq)
{
	struct xrxe_rwq *w = to_xrwq(wq);
	int ret = xrxe_ctrl_destroy(to_xctx(wq->context), XRXE_CTRL_DESTROY_WQ, wq->handle);

	if (ret && !xrxe_conn_gone(ret))
		return -ret;
	xrxe_wq_unmap(to_xctx(wq->context), &w->rq);
	pthread_mutex_destroy(&wq->mutex);
	pthread_cond_destroy(&wq->cond);
	free(w);
	return 0;
}

static struct ibv_rwq_ind_table *ind_tbl_create(struct ibv_context *context,
						struct ibv_rwq_ind_table_init_attr *a)
{
	struct xrxe_ctrl_create_rwq_ind_tbl req;
	struct xrxe_ctrl_create_rwq_ind_tbl_reply rep;
	struct ibv_rwq_ind_table *t;
	int ret;

	if (a->comp_mask)
		return xrxe_null_errno(EOPNOTSUPP);
	if (a->log_ind_tbl_size > XRXE_MAX_RWQ_IND_LOG || !a->ind_tbl)
		return xrxe_null_errno(EINVAL);
	memset(&req, 0, sizeof(req));
	req.log_size = a->log_ind_tbl_size;
	for (uint32_t i = 0; i < 1u << a->log_ind_tbl_size; i++) {
		if (!a->ind_tbl[i] || a->ind_tbl[i]->context != context)
			return xrxe_null_errno(EINVAL);
		req.wq[i] = a->ind_tbl[i]->handle;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return xrxe_null_errno(ENOMEM);
	ret = xrxe_conn_call(&to_xctx(context)->conn, XRXE_CTRL_CREATE_RWQ_IND_TBL, &req,
			     sizeof(req), NULL, 0, &rep, sizeof(rep), NULL, NULL);
	if (ret) {
		free(t);
		return xrxe_null_errno(-ret);
	}
	t->context = context;
	t->ind_tbl_handle = (int)rep.handle;
	t->ind_tbl_num = (int)rep.ind_tbl_num;
	return t;
}

static int ind_tbl_destroy(struct ibv_rwq_ind_table *t)
{
	int ret = xrxe_ctrl_destroy(to_xctx(t->context), XRXE_CTRL_DESTROY_RWQ_IND_TBL,
				    (uint32_t)t->ind_tbl_handle);

	if (ret && !xrxe_conn_gone(ret))
		return -ret;
	free(t);
	return 0;
}

struct ibv_qp *xrxe_rss_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	const uint32_t need = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_RX_HASH |
			      IBV_QP_INIT_ATTR_IND_TABLE;
	struct xrxe_context *ctx = to_xctx(context);
	struct xrxe_ctrl_create_rss_qp req;
	struct xrxe_ctrl_create_qp_reply rep;
	struct ibv_rx_hash_conf *h = &a->rx_hash_conf;
	struct ibv_qp *base;
	struct xrxe_qp *qp;
	int ret;

	if ((a->comp_mask & need) != need || a->qp_type != IBV_QPT_RAW_PACKET || !a->pd ||
	    a->pd->context != context || !a->rwq_ind_tbl || a->rwq_ind_tbl->context != context)
		return xrxe_null_errno(EINVAL);
	if ((a->comp_mask & ~(need | IBV_QP_INIT_ATTR_CREATE_FLAGS)) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags))
		return xrxe_null_errno(EOPNOTSUPP);
	/* Toeplitz over outer IPv4/IPv6 addresses and TCP/UDP ports */
	if (h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
	    h->rx_hash_key_len > XRXE_MAX_RSS_KEY || (h->rx_hash_key_len && !h->rx_hash_key) ||
	    (h->rx_hash_fields_mask & ~(uint64_t)0xff))
		return xrxe_null_errno(EOPNOTSUPP);
	memset(&req, 0, sizeof(req));
	req.pd = a->pd->handle;
	req.ind_tbl = (uint32_t)a->rwq_ind_tbl->ind_tbl_handle;
	req.fields_mask = h->rx_hash_fields_mask;
	req.key_len = h->rx_hash_key_len;
	if (h->rx_hash_key_len)
		memcpy(req.key, h->rx_hash_key, h->rx_hash_key_len);
	qp = xrxe_domain_alloc(a->pd, sizeof(*qp), XRXE_DOMAIN_RES_QP);
	if (!qp)
		return xrxe_null_errno(ENOMEM);
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_CREATE_RSS_QP, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret) {
		xrxe_domain_free(a->pd, qp, XRXE_DOMAIN_RES_QP);
		return xrxe_null_errno(-ret);
	}
	memset(&a->cap, 0, sizeof(a->cap)); /* no queues of its own */
	base = &qp->qpx.qp_base;
	base->context = context;
	base->qp_context = a->qp_context;
	base->pd = a->pd;
	base->handle = rep.handle;
	base->qp_num = rep.qpn;
	base->state = IBV_QPS_RESET;
	base->qp_type = IBV_QPT_RAW_PACKET;
	pthread_mutex_init(&base->mutex, NULL);
	pthread_cond_init(&base->cond, NULL);
	xrxe_obj_add(ctx, &qp->obj, XRXE_OBJ_QP, rep.handle, qp);
	return base;
}

void xrxe_rss_install(struct verbs_context *vctx)
{
	vctx->create_wq = wq_create;
	vctx->modify_wq = wq_modify;
	vctx->destroy_wq = wq_destroy;
	vctx->create_rwq_ind_table = ind_tbl_create;
	vctx->destroy_rwq_ind_table = ind_tbl_destroy;
}
