/* SPDX-License-Identifier: MIT */
/*
 * Connections: connect, accept, reject, disconnect, establish, and the QP
 * transitions around them. As in stock librdmacm the library moves the
 * application's QP itself (ibv_modify_qp through libibverbs) with the
 * attributes the daemon computes for each state (CM_INIT_QP_ATTR: the path,
 * PSNs, MTU, timeouts and the values negotiated in REQ/REP); the daemon only
 * speaks the protocol. Calls on a synchronous ID (no channel) then wait for
 * the event they cause, as stock's ucma_complete does.
 */
#include "rdmacm/cm.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

int cm_complete(struct cm_id *id)
{
	struct rdma_cm_event *ev;
	int ret;

	if (!id->sync)
		return 0;
	if (id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	ret = rdma_get_cm_event(id->id.channel, &id->id.event);
	if (ret)
		return ret;
	ev = id->id.event;
	/* The daemon went away while we waited (status 0 in that event). */
	if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
		return cm_err(ENODEV);
	if (!ev->status)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return cm_err(ECONNREFUSED);
	return cm_err(ev->status < 0 ? -ev->status : ev->status);
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	int ret = ibv_modify_qp(qp, attr, mask);

	return ret ? cm_err(ret) : 0;
}

int cm_qp_to_err(struct rdma_cm_id *id)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (!id->qp)
		return 0;
	return modify(id->qp, &attr, IBV_QP_STATE);
}

int rdma_init_qp_attr(struct rdma_cm_id *rid, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	struct xrxe_ctrl_cm_qp_attr_reply rep;
	struct xrxe_ctrl_cm_handle_arg req;
	struct cm_attach *a;
	int ret;

	if (!rid || !qp_attr || !qp_attr_mask || !(a = cm_id_att(to_cm_id(rid))))
		return cm_err(EINVAL);
	req = (struct xrxe_ctrl_cm_handle_arg){ .handle = a->handle, .arg = qp_attr->qp_state };
	ret = cm_call(a->dev, XRXE_CTRL_CM_INIT_QP_ATTR, &req, sizeof(req), NULL, 0, &rep,
		      sizeof(rep));
	if (ret)
		return cm_err(-ret);
	*qp_attr = rep.attr;
	*qp_attr_mask = (int)rep.attr_mask;
	return 0;
}

/* INIT again (the attributes may have changed since rdma_create_qp: a
 * connect request's P_Key, port), then RTR; resp_res overrides the daemon's
 * max_dest_rd_atomic unless RDMA_MAX_RESP_RES. */
static int qp_rtr(struct rdma_cm_id *id, uint8_t resp_res)
{
	struct ibv_qp_attr attr;
	int mask, ret;

	if (!id->qp)
		return 0;
	attr.qp_state = IBV_QPS_INIT;
	ret = rdma_init_qp_attr(id, &attr, &mask);
	if (!ret)
		ret = modify(id->qp, &attr, mask);
	if (ret)
		return ret;
	attr.qp_state = IBV_QPS_RTR;
	ret = rdma_init_qp_attr(id, &attr, &mask);
	if (ret)
		return ret;
	if (resp_res != RDMA_MAX_RESP_RES)
		attr.max_dest_rd_atomic = resp_res;
	return modify(id->qp, &attr, mask);
}

static int qp_rts(struct rdma_cm_id *id, uint8_t init_depth)
{
	struct ibv_qp_attr attr;
	int mask, ret;

	if (!id->qp)
		return 0;
	attr.qp_state = IBV_QPS_RTS;
	ret = rdma_init_qp_attr(id, &attr, &mask);
	if (ret)
		return ret;
	if (init_depth != RDMA_MAX_INIT_DEPTH)
		attr.max_rd_atomic = init_depth;
	return modify(id->qp, &attr, mask);
}

/* Stock's ucma_valid_param: RDMA_PS_TCP needs a QP or parameters, and
 * the depths cannot exceed the device's. */
static int valid_param(struct cm_id *id, const struct rdma_conn_param *p)
{
	if (id->id.ps != RDMA_PS_TCP)
		return 0;
	if (!id->id.qp && !p)
		return -EINVAL;
	if (!p)
		return 0;
	if (p->responder_resources != RDMA_MAX_RESP_RES &&
	    p->responder_resources > id->dev->max_resp_res)
		return -EINVAL;
	if (p->initiator_depth != RDMA_MAX_INIT_DEPTH && p->initiator_depth > id->dev->max_init_depth)
		return -EINVAL;
	return 0;
}

static int fill_conn(struct cm_id *id, struct xrxe_cm_conn_param *dst,
		     const struct rdma_conn_param *src)
{
	size_t len = id->connect_len + (src && src->private_data ? src->private_data_len : 0);

	if (len > sizeof(dst->private_data))
		return -EINVAL;
	if (id->id.qp) {
		dst->qp_num = id->id.qp->qp_num;
		dst->srq = !!id->id.qp->srq;
		dst->qp_type = (uint8_t)id->id.qp->qp_type;
	} else {
		dst->qp_num = src ? src->qp_num : 0;
		dst->srq = src ? src->srq : 0;
		dst->qp_type = (uint8_t)id->id.qp_type;
	}
	dst->responder_resources = id->responder_resources;
	dst->initiator_depth = id->initiator_depth;
	if (id->connect_len)
		memcpy(dst->private_data, id->connect, id->connect_len);
	if (src) {
		dst->flow_control = src->flow_control;
		dst->retry_count = src->retry_count;
		dst->rnr_retry_count = src->rnr_retry_count;
		if (src->private_data && src->private_data_len)
			memcpy(dst->private_data + id->connect_len, src->private_data,
			       src->private_data_len);
	} else {
		dst->retry_count = 7;
		dst->rnr_retry_count = 7;
	}
	dst->private_data_len = (uint8_t)len;
	return 0;
}

int rdma_connect(struct rdma_cm_id *rid, struct rdma_conn_param *conn_param)
{
	struct xrxe_ctrl_cm_connect req = { 0 };
	struct cm_attach *a;
	struct cm_id *id;
	int ret;

	if (!rid || !(a = cm_id_att(to_cm_id(rid))))
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	ret = valid_param(id, conn_param);
	if (ret)
		return cm_err(-ret);
	if (conn_param && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
		id->initiator_depth = conn_param->initiator_depth;
	else
		id->initiator_depth = id->dev->max_init_depth;
	if (conn_param && conn_param->responder_resources != RDMA_MAX_RESP_RES)
		id->responder_resources = conn_param->responder_resources;
	else
		id->responder_resources = id->dev->max_resp_res;
	req.handle = a->handle;
	ret = fill_conn(id, &req.conn, conn_param);
	if (ret)
		return cm_err(-ret);
	req.ece.vendor_id = id->local_ece.vendor_id;
	req.ece.options = id->local_ece.options;
	cm_dbg("connect: handle %u, port %u to port %u", a->handle,
	       ntohs(rdma_get_src_port(rid)), ntohs(rdma_get_dst_port(rid)));
	ret = cm_call(a->dev, XRXE_CTRL_CM_CONNECT, &req, sizeof(req), NULL, 0, NULL, 0);
	if (ret)
		return cm_err(-ret);
	if (id->connect_len) {
		free(id->connect);
		id->connect = NULL;
		id->connect_len = 0;
	}
	return cm_complete(id);
}

int rdma_accept(struct rdma_cm_id *rid, struct rdma_conn_param *conn_param)
{
	struct xrxe_ctrl_cm_connect req = { 0 };
	struct cm_attach *a;
	struct cm_id *id;
	int ret;

	if (!rid || !(a = cm_id_att(to_cm_id(rid))))
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	/* Stock reads conn_param->qp_num without a QP: refuse instead. */
	if (!rid->qp && !conn_param)
		return cm_err(EINVAL);
	ret = valid_param(id, conn_param);
	if (ret)
		return cm_err(-ret);
	/* Without a choice, what the peer offered, within the device. */
	if (!conn_param || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH) {
		if (id->initiator_depth > id->dev->max_init_depth)
			id->initiator_depth = id->dev->max_init_depth;
	} else {
		id->initiator_depth = conn_param->initiator_depth;
	}
	if (!conn_param || conn_param->responder_resources == RDMA_MAX_RESP_RES) {
		if (id->responder_resources > id->dev->max_resp_res)
			id->responder_resources = id->dev->max_resp_res;
	} else {
		id->responder_resources = conn_param->responder_resources;
	}
	if (rid->qp_type != IBV_QPT_UD) {
		ret = qp_rtr(rid, id->responder_resources);
		if (!ret)
			ret = qp_rts(rid, id->initiator_depth);
		if (ret)
			return ret;
	}
	req.handle = a->handle;
	ret = fill_conn(id, &req.conn, conn_param);
	if (ret)
		return cm_err(-ret);
	/* The answer keeps the requester's vendor ID (stock's rule). */
	req.ece.vendor_id = id->remote_ece.vendor_id;
	req.ece.options = id->local_ece.options;
	cm_dbg("accept: handle %u", a->handle);
	ret = cm_call(a->dev, XRXE_CTRL_CM_ACCEPT, &req, sizeof(req), NULL, 0, NULL, 0);
	if (ret) {
		cm_qp_to_err(rid);
		return cm_err(-ret);
	}
	if (rid->qp_type == IBV_QPT_UD)
		return 0;
	return cm_complete(id);
}

static int reject(struct rdma_cm_id *rid, const void *private_data, uint8_t len, uint16_t reason)
{
	struct xrxe_ctrl_cm_reject req = { .reason = reason };
	struct cm_attach *a;

	if (!rid || !(a = cm_id_att(to_cm_id(rid))))
		return cm_err(EINVAL);
	if (private_data && len) {
		if (len > sizeof(req.private_data))
			return cm_err(EINVAL);
		memcpy(req.private_data, private_data, len);
		req.private_data_len = len;
	}
	req.handle = a->handle;
	return cm_ret(cm_call(a->dev, XRXE_CTRL_CM_REJECT, &req, sizeof(req), NULL, 0, NULL, 0));
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len, 0);
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	/* IBA: REJ reason 35, "vendor option not supported" */
	return reject(id, private_data, private_data_len, 35);
}

int rdma_disconnect(struct rdma_cm_id *rid)
{
	struct cm_attach *a;
	int ret;

	/* Stock's ucma_shutdown: an ID without a device cannot disconnect. */
	if (!rid || !rid->verbs || !(a = cm_id_att(to_cm_id(rid))))
		return cm_err(EINVAL);
	ret = cm_qp_to_err(rid);
	if (ret)
		return ret;
	ret = cm_call_handle(a->dev, XRXE_CTRL_CM_DISCONNECT, a->handle, 0);
	if (ret)
		return cm_err(-ret);
	return cm_complete(to_cm_id(rid));
}

int rdma_establish(struct rdma_cm_id *rid)
{
	struct cm_attach *a;

	/* Only for an ID whose QP the application drives itself. */
	if (!rid || rid->qp || !(a = cm_id_att(to_cm_id(rid))))
		return cm_err(EINVAL);
	return cm_ret(cm_call_handle(a->dev, XRXE_CTRL_CM_ESTABLISH, a->handle, 0));
}

int cm_conn_resp(struct cm_id *id, const struct xrxe_cm_ece *ece)
{
	struct rdma_cm_id *rid = &id->id;
	struct ibv_ece e = { .vendor_id = ece->vendor_id, .options = ece->options };
	struct cm_attach *a = cm_id_att(id);
	int ret;

	if (!ece->vendor_id) {
		/* The peer does not speak ECE: clear ours. */
		e.vendor_id = id->local_ece.vendor_id;
		e.options = 0;
	} else if (ece->vendor_id != id->local_ece.vendor_id) {
		/* An answer must carry our own vendor ID. */
		cm_qp_to_err(rid);
		return cm_err(EINVAL);
	}
	id->remote_ece.vendor_id = ece->vendor_id;
	ret = ibv_set_ece(rid->qp, &e);
	if (ret && ret != EOPNOTSUPP)
		return cm_err(ret);
	ret = qp_rtr(rid, RDMA_MAX_RESP_RES);
	if (!ret)
		ret = qp_rts(rid, RDMA_MAX_INIT_DEPTH);
	if (!ret && a) {
		int err = cm_call_handle(a->dev, XRXE_CTRL_CM_ESTABLISH, a->handle, 0);

		ret = err ? cm_err(-err) : 0;
	}
	if (ret) {
		int saved = errno;

		cm_qp_to_err(rid);
		errno = saved;
		return ret;
	}
	ret = ibv_query_ece(rid->qp, &e);
	id->local_ece.options = ret ? 0 : e.options;
	return 0;
}

int rdma_set_local_ece(struct rdma_cm_id *rid, struct ibv_ece *ece)
{
	struct cm_id *id;

	if (!rid || rid->qp || !ece || !ece->vendor_id || ece->comp_mask)
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	id->local_ece.vendor_id = ece->vendor_id;
	id->local_ece.options = ece->options;
	return 0;
}

int rdma_get_remote_ece(struct rdma_cm_id *rid, struct ibv_ece *ece)
{
	struct cm_id *id;

	if (!rid || rid->qp || !ece)
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	ece->vendor_id = id->remote_ece.vendor_id;
	ece->options = id->remote_ece.options;
	ece->comp_mask = 0;
	return 0;
}
