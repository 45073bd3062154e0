/* SPDX-License-Identifier: MIT */
/*
 * XRC (docs/xrc.md): ibv_open_xrcd / ibv_close_xrcd, XRC SRQs through
 * ibv_create_srq_ex and ibv_get_srq_num, target QPs (ibv_create_qp_ex with
 * IBV_QPT_XRC_RECV) and ibv_open_qp. Initiator QPs (IBV_QPT_XRC_SEND) are
 * ordinary QPs without a receive side (qp.c), whose WQEs carry the target
 * SRQ number (wr.qp_type.xrc.remote_srqn, ibv_wr_set_xrc_srqn).
 *
 * The verbs reach these through the verbs_context ops that rdma-core's
 * inline wrappers call (open_xrcd, close_xrcd, create_srq_ex, get_srq_num,
 * open_qp), with rdma-core's argument checks and errno values.
 */
#include "verbs/shim.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct xrxe_xrcd {
	struct ibv_xrcd xrcd; /* first: what the application holds */
	uint32_t handle;
};

static struct xrxe_xrcd *to_xxrcd(struct ibv_xrcd *x)
{
	return (struct xrxe_xrcd *)(void *)x;
}

static struct ibv_xrcd *xrc_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *attr)
{
	struct xrxe_context *ctx = to_xctx(context);
	struct xrxe_ctrl_open_xrcd req;
	struct xrxe_ctrl_handle rep;
	struct xrxe_xrcd *x;
	int fd, ret;

	/* ibv_cmd_open_xrcd's checks */
	if (attr->comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED)
		return xrxe_null_errno(EOPNOTSUPP);
	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
		return xrxe_null_errno(EINVAL);
	memset(&req, 0, sizeof(req));
	req.oflags = (uint32_t)attr->oflags;
	if (attr->fd == -1) {
		/* the kernel's anonymous domain: a file nobody else can open */
		fd = memfd_create("xrxe-xrcd", MFD_CLOEXEC);
		if (fd < 0)
			return NULL;
		req.oflags = O_CREAT;
	} else {
		fd = attr->fd;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		ret = -ENOMEM;
		goto out;
	}
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_OPEN_XRCD, &req, sizeof(req), &fd, 1, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret) {
		free(x);
		x = NULL;
		goto out;
	}
	x->xrcd.context = context;
	x->handle = rep.handle;
out:
	if (attr->fd == -1)
		close(fd);
	return x ? &x->xrcd : xrxe_null_errno(-ret);
}

static int xrc_close_xrcd(struct ibv_xrcd *ibx)
{
	struct xrxe_xrcd *x = to_xxrcd(ibx);
	int ret = xrxe_ctrl_destroy(to_xctx(ibx->context), XRXE_CTRL_CLOSE_XRCD, x->handle);

	if (ret)
		return -ret;
	free(x);
	return 0;
}

static struct ibv_srq *xrc_create_srq_ex(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *a)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	struct ibv_srq_init_attr init;
	struct ibv_srq *srq;
	bool xrc = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type == IBV_SRQT_XRC;
	bool tm = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type == IBV_SRQT_TM;

	if (a->comp_mask & ~known)
		return xrxe_null_errno(EOPNOTSUPP);
	if ((a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type != IBV_SRQT_BASIC && !xrc &&
	    !tm)
		return xrxe_null_errno(EOPNOTSUPP);
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd || a->pd->context != context)
		return xrxe_null_errno(EINVAL);
	/* an XRC SRQ needs its domain and its CQ (receives on a target QP
	 * complete there) */
	if (xrc && (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !a->xrcd ||
		    !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !a->cq || a->xrcd->context != context ||
		    a->cq->context != context))
		return xrxe_null_errno(EINVAL);
	/* a TM SRQ needs its list's size and the CQ its operations complete into */
	if (tm && (!(a->comp_mask & IBV_SRQ_INIT_ATTR_TM) || !a->tm_cap.max_num_tags ||
		   !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !a->cq || a->cq->context != context))
		return xrxe_null_errno(EINVAL);
	memset(&init, 0, sizeof(init));
	init.srq_context = a->srq_context;
	init.attr = a->attr;
	if (tm) {
		srq = xrxe_srq_create_tm(a->pd, &init, a->cq->handle, a->tm_cap.max_num_tags);
		if (srq)
			a->attr = init.attr;
		return srq;
	}
	srq = xrxe_srq_create(a->pd, &init, xrc ? to_xxrcd(a->xrcd)->handle : XRXE_NO_HANDLE,
			      xrc ? a->cq->handle : XRXE_NO_HANDLE);
	if (srq)
		a->attr = init.attr;
	return srq;
}

static int xrc_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct xrxe_srq *srq = xrxe_container_of(ibsrq, struct xrxe_srq, srq);

	if (!srq->srq_num)
		return EOPNOTSUPP; /* a basic SRQ has no number */
	*srq_num = srq->srq_num;
	return 0;
}

/* A target QP handle: no rings, no CQs, no PD (the SRQ each message names
 * provides them, in the daemon). */
static struct ibv_qp *tgt_qp(struct ibv_context *context, uint16_t op, uint32_t xrcd, uint32_t qpn,
			     void *qp_context)
{
	struct xrxe_context *ctx = to_xctx(context);
	struct xrxe_ctrl_xrc_qp req = { .xrcd = xrcd, .qpn = qpn };
	struct xrxe_ctrl_create_qp_reply rep;
	struct ibv_qp *base;
	struct xrxe_qp *qp;
	int ret;

	qp = xrxe_domain_alloc(NULL, sizeof(*qp), XRXE_DOMAIN_RES_QP);
	if (!qp)
		return xrxe_null_errno(ENOMEM);
	ret = xrxe_conn_call(&ctx->conn, op, &req, sizeof(req), NULL, 0, &rep, sizeof(rep), NULL,
			     NULL);
	if (ret) {
		xrxe_domain_free(NULL, qp, XRXE_DOMAIN_RES_QP);
		return xrxe_null_errno(-ret);
	}
	base = &qp->qpx.qp_base;
	base->context = context;
	base->qp_context = qp_context;
	base->handle = rep.handle;
	base->qp_num = rep.qpn;
	base->state = IBV_QPS_RESET;
	base->qp_type = IBV_QPT_XRC_RECV;
	pthread_mutex_init(&base->mutex, NULL);
	pthread_cond_init(&base->cond, NULL);
	xrxe_obj_add(ctx, &qp->obj, XRXE_OBJ_QP, rep.handle, qp);
	return base;
}

struct ibv_qp *xrxe_create_xrc_tgt(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	/* the kernel's create_qp for XRC_TGT: the domain only */
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd || a->xrcd->context != context)
		return xrxe_null_errno(EINVAL);
	if (a->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_PD |
				       IBV_QP_INIT_ATTR_CREATE_FLAGS))
		return xrxe_null_errno(EOPNOTSUPP);
	memset(&a->cap, 0, sizeof(a->cap));
	return tgt_qp(context, XRXE_CTRL_CREATE_XRC_TGT, to_xxrcd(a->xrcd)->handle, 0,
		      a->qp_context);
}

static struct ibv_qp *xrc_open_qp(struct ibv_context *context, struct ibv_qp_open_attr *a)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;

	if (a->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED)
		return xrxe_null_errno(EOPNOTSUPP);
	if ((a->comp_mask & need) != need || !a->xrcd || a->xrcd->context != context)
		return xrxe_null_errno(EINVAL);
	if (a->qp_type != IBV_QPT_XRC_RECV)
		return xrxe_null_errno(EINVAL); /* only targets are shared */
	return tgt_qp(context, XRXE_CTRL_OPEN_QP, to_xxrcd(a->xrcd)->handle, a->qp_num,
		      a->qp_context);
}

void xrxe_xrc_install(struct verbs_context *vctx)
{
	vctx->open_xrcd = xrc_open_xrcd;
	vctx->close_xrcd = xrc_close_xrcd;
	vctx->create_srq_ex = xrc_create_srq_ex;
	vctx->get_srq_num = xrc_get_srq_num;
	vctx->open_qp = xrc_open_qp;
}
