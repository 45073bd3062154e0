/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues: a receive ring like a QP's RQ, created by the
 * daemon. Resizing (IBV_SRQ_MAX_WR) is not offered yet.
 */
#include "verbs/shim.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	return xrxe_srq_create(pd, init, XRXE_NO_HANDLE, XRXE_NO_HANDLE);
}

/* A basic SRQ (xrcd XRXE_NO_HANDLE), or an XRC SRQ of that domain handle
 * completing into the CQ handle cq (verbs/xrc.c). */
static struct ibv_srq *srq_create(struct ibv_pd *pd, struct ibv_srq_init_attr *init,
				  uint32_t xrcd, uint32_t cq, uint32_t tm_tags);

struct ibv_srq *xrxe_srq_create(struct ibv_pd *pd, struct ibv_srq_init_attr *init, uint32_t xrcd,
				uint32_t cq)
{
	return srq_create(pd, init, xrcd, cq, 0);
}

struct ibv_srq *xrxe_srq_create_tm(struct ibv_pd *pd, struct ibv_srq_init_attr *init,
				   uint32_t cq, uint32_t max_tags)
{
	return srq_create(pd, init, XRXE_NO_HANDLE, cq, max_tags);
}

/* tm_tags: a TM SRQ (CREATE_TM_SRQ) with a list that size */
static struct ibv_srq *srq_create(struct ibv_pd *pd, struct ibv_srq_init_attr *init,
				  uint32_t xrcd, uint32_t cq, uint32_t tm_tags)
{
	struct xrxe_context *ctx = to_xctx(pd->context);
	struct xrxe_ctrl_create_xrc_srq xreq;
	struct xrxe_ctrl_create_tm_srq treq;
	struct xrxe_ctrl_srq *req = &xreq.srq;
	struct xrxe_ctrl_srq_reply rep;
	struct xrxe_srq *srq;
	unsigned int nfd = 1;
	int fd, ret;

	if (init->attr.max_wr == 0 || init->attr.max_wr > XRXE_MAX_QP_WR ||
	    init->attr.max_sge > XRXE_MAX_SGE)
		return xrxe_null_errno(EINVAL);
	srq = xrxe_domain_alloc(pd, sizeof(*srq), XRXE_DOMAIN_RES_SRQ);
	if (!srq)
		return xrxe_null_errno(ENOMEM);
	memset(&xreq, 0, sizeof(xreq));
	req->pd = pd->handle;
	req->handle = XRXE_NO_HANDLE;
	req->attr = init->attr;
	xreq.xrcd = xrcd;
	xreq.cq = cq;
	if (tm_tags) {
		memset(&treq, 0, sizeof(treq));
		treq.srq = *req;
		treq.cq = cq;
		treq.max_num_tags = tm_tags;
		ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_CREATE_TM_SRQ, &treq, sizeof(treq),
				     NULL, 0, &rep, sizeof(rep), &fd, &nfd);
	} else if (xrcd == XRXE_NO_HANDLE)
		ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_CREATE_SRQ, req, sizeof(*req), NULL, 0,
				     &rep, sizeof(rep), &fd, &nfd);
	else
		ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_CREATE_XRC_SRQ, &xreq, sizeof(xreq), NULL,
				     0, &rep, sizeof(rep), &fd, &nfd);
	if (ret)
		goto fail;
	if (nfd != 1 || rep.attr.max_sge > XRXE_MAX_SGE) {
		if (nfd)
			close(fd);
		ret = -EPROTO;
		goto fail_destroy;
	}
	ret = xrxe_wq_map(ctx, &srq->rq, fd, &rep.ring,
			  (uint32_t)(sizeof(struct xrxe_recv_wqe) +
				     rep.attr.max_sge * sizeof(struct xrxe_sge)));
	if (ret)
		goto fail_destroy;
	srq->rq.max_sge = rep.attr.max_sge;
	srq->srq_limit = rep.attr.srq_limit;
	srq->srq_num = rep.srq_num;
	srq->srq.context = pd->context;
	srq->srq.srq_context = init->srq_context;
	srq->srq.pd = pd;
	srq->srq.handle = rep.handle;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	init->attr = rep.attr; /* granted capacities, as rdma-core reports */
	xrxe_obj_add(ctx, &srq->obj, XRXE_OBJ_SRQ, rep.handle, srq);
	return &srq->srq;

fail_destroy:
	xrxe_ctrl_destroy(ctx, XRXE_CTRL_DESTROY_SRQ, rep.handle);
fail:
	xrxe_domain_free(pd, srq, XRXE_DOMAIN_RES_SRQ);
	return xrxe_null_errno(-ret);
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask)
{
	struct xrxe_ctrl_srq req;

	if (attr_mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP; /* would need a new ring */
	memset(&req, 0, sizeof(req));
	req.pd = XRXE_NO_HANDLE;
	req.handle = srq->handle;
	req.attr_mask = (uint32_t)attr_mask;
	req.attr = *attr;
	return -xrxe_conn_call(&to_xctx(srq->context)->conn, XRXE_CTRL_MODIFY_SRQ, &req, sizeof(req),
			       NULL, 0, NULL, 0, NULL, NULL);
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct xrxe_ctrl_srq req;
	struct xrxe_ctrl_srq_reply rep;
	int ret;

	memset(&req, 0, sizeof(req));
	req.pd = XRXE_NO_HANDLE;
	req.handle = srq->handle;
	ret = xrxe_conn_call(&to_xctx(srq->context)->conn, XRXE_CTRL_QUERY_SRQ, &req, sizeof(req),
			     NULL, 0, &rep, sizeof(rep), NULL, NULL);
	if (ret)
		return -ret;
	*attr = rep.attr;
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct xrxe_srq *srq = xrxe_container_of(ibsrq, struct xrxe_srq, srq);
	int ret;

	ret = xrxe_ctrl_destroy(to_xctx(ibsrq->context), XRXE_CTRL_DESTROY_SRQ, ibsrq->handle);
	if (ret)
		return -ret;
	xrxe_obj_del(to_xctx(ibsrq->context), &srq->obj);
	xrxe_wq_unmap(to_xctx(ibsrq->context), &srq->rq);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	xrxe_domain_free(ibsrq->pd, srq, XRXE_DOMAIN_RES_SRQ);
	return 0;
}

int xrxe_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	if (xrxe_conn_dead(&to_xctx(ibsrq->context)->conn)) {
		*bad = wr;
		return EIO; /* device fatal: the daemon is gone */
	}
	return xrxe_post_recv_ring(&xrxe_container_of(ibsrq, struct xrxe_srq, srq)->rq, wr, bad);
}
