/* SPDX-License-Identifier: MIT */
/*
 * QPs and SRQs on an rdma_cm_id, created through libibverbs as stock does:
 * CQs (each with its own completion channel) made for the ID when the caller
 * brings none, the ID's PD or the device's default one, and the new QP moved
 * to INIT with the daemon's attributes (UD all the way to RTS with the port
 * space's Q_Key, as stock's ucma_init_ud_qp). XRC IDs are not offered here
 * (the verbs have XRC, docs/xrc.md; the CM's XRC connection setup is not
 * built).
 */
#include "rdmacm/cm.h"

#include <string.h>

void cm_destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq) {
			ibv_destroy_cq(id->send_cq);
			id->send_cq = NULL;
		}
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel) {
			ibv_destroy_comp_channel(id->send_cq_channel);
			id->send_cq_channel = NULL;
		}
		id->recv_cq_channel = NULL;
	}
}

/* CQs of the sizes asked for (0: none), for the ID. -1/errno on failure. */
static int create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	int saved;

	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->recv_cq_channel)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (!id->recv_cq)
			goto err;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (!id->send_cq)
			goto err;
	}
	return 0;
err:
	saved = errno;
	cm_destroy_cqs(id);
	errno = saved;
	return -1;
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	int ret = ibv_modify_qp(qp, attr, mask);

	return ret ? cm_err(ret) : 0;
}

static int init_conn_qp(struct rdma_cm_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT };
	int mask, ret;

	ret = rdma_init_qp_attr(id, &attr, &mask);
	return ret ? ret : modify(qp, &attr, mask);
}

static int init_ud_qp(struct rdma_cm_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT };
	int mask, ret;

	ret = rdma_init_qp_attr(id, &attr, &mask);
	if (!ret)
		ret = modify(qp, &attr, mask);
	if (ret)
		return ret;
	attr.qp_state = IBV_QPS_RTR;
	ret = modify(qp, &attr, IBV_QP_STATE);
	if (ret)
		return ret;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return modify(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* The provider's ECE becomes ours; a QP made for a connect request takes
 * the requester's options when both sides are the same vendor (stock). */
static int init_ece(struct cm_id *cid, struct ibv_qp *qp)
{
	struct ibv_ece ece = { 0 };
	int ret = ibv_query_ece(qp, &ece);

	if (ret && ret != EOPNOTSUPP)
		return cm_err(ret);
	cid->local_ece.vendor_id = ece.vendor_id;
	cid->local_ece.options = ece.options;
	if (!cid->remote_ece.vendor_id)
		return 0;
	if (cid->remote_ece.vendor_id != cid->local_ece.vendor_id) {
		ece.vendor_id = cid->local_ece.vendor_id;
		ece.options = 0;
	} else {
		ece.vendor_id = cid->remote_ece.vendor_id;
		ece.options = cid->remote_ece.options;
	}
	ret = ibv_set_ece(qp, &ece);
	return ret && ret != EOPNOTSUPP ? cm_err(ret) : 0;
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id *cid;
	struct ibv_qp *qp;
	int ret, saved;

	if (!id || !attr || id->qp)
		return cm_err(EINVAL);
	cid = to_cm_id(id);
	/* The daemon computes the INIT attributes: the ID needs its device. */
	if (!id->verbs || !cm_id_att(cid))
		return cm_err(EINVAL);
	if (id->qp_type == IBV_QPT_XRC_RECV || id->qp_type == IBV_QPT_XRC_SEND)
		return cm_err(EOPNOTSUPP);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (attr->pd->context != id->verbs) {
		return cm_err(EINVAL);
	}
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return cm_err(EINVAL);
	ret = create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
			 attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr);
	if (ret)
		return ret;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		ret = -1;
		goto err_cqs;
	}
	ret = init_ece(cid, qp);
	if (!ret)
		ret = id->qp_type == IBV_QPT_UD ? init_ud_qp(id, qp) : init_conn_qp(id, qp);
	if (!ret && cid->remote_ece.vendor_id) {
		struct ibv_ece ece = { 0 };
		int r = ibv_query_ece(qp, &ece);

		if (r && r != EOPNOTSUPP)
			ret = cm_err(r);
		else
			cid->local_ece.options = ece.options;
	}
	if (ret)
		goto err_qp;
	id->pd = qp->pd;
	id->qp = qp;
	return 0;
err_qp:
	saved = errno;
	ibv_destroy_qp(qp);
	errno = saved;
err_cqs:
	saved = errno;
	cm_destroy_cqs(id);
	errno = saved;
	return ret;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (!id || !qp_init_attr)
		return cm_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &ex);
	memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
	return ret;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	cm_destroy_cqs(id);
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!id || !attr || !id->verbs)
		return cm_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return cm_err(EINVAL);
	if (attr->srq_type == IBV_SRQT_XRC)
		return cm_err(EOPNOTSUPP);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq)
		return -1;
	if (!id->pd)
		id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int ret;

	if (!id || !attr)
		return cm_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	ex.pd = pd;
	ret = rdma_create_srq_ex(id, &ex);
	memcpy(attr, &ex, sizeof(*attr));
	return ret;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id->srq)
		ibv_destroy_srq(id->srq);
	id->srq = NULL;
	cm_destroy_cqs(id);
}
