/* SPDX-License-Identifier: MIT */
/*
 * The endpoint helpers on top of the core calls, with stock's semantics:
 * rdma_create_ep (a synchronous ID, bound for RAI_PASSIVE, else address and
 * route resolved with a 2 s timeout, with a QP when asked), rdma_destroy_ep,
 * rdma_get_request (the next connect request of a synchronous listener, with
 * the QP the listener's rdma_create_ep asked for).
 */
#include "rdmacm/cm.h"

#include <stdlib.h>
#include <string.h>

/* stock's timeout for the resolutions rdma_create_ep does */
#define CM_EP_TIMEOUT_MS 2000

static int passive_ep(struct rdma_cm_id *rid, struct rdma_addrinfo *res, struct ibv_pd *pd,
		      struct ibv_qp_init_attr *qp_init_attr)
{
	struct cm_id *id = to_cm_id(rid);
	int ret;

	ret = rdma_bind_addr(rid, res->ai_src_addr);
	if (ret)
		return ret;
	if (pd)
		rid->pd = pd;
	if (qp_init_attr) {
		id->qp_init_attr = malloc(sizeof(*id->qp_init_attr));
		if (!id->qp_init_attr)
			return cm_err(ENOMEM);
		*id->qp_init_attr = *qp_init_attr;
		id->qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	}
	return 0;
}

int rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *rid;
	struct cm_id *id;
	int ret, saved;

	if (!out || !res)
		return cm_err(EINVAL);
	ret = cm_create_id(NULL, &rid, NULL, (enum rdma_port_space)res->ai_port_space,
			   (enum ibv_qp_type)res->ai_qp_type);
	if (ret)
		return cm_err(-ret);
	id = to_cm_id(rid);
	if (res->ai_flags & RAI_PASSIVE) {
		ret = passive_ep(rid, res, pd, qp_init_attr);
		if (ret)
			goto err;
		*out = rid;
		return 0;
	}
	ret = rdma_resolve_addr(rid, res->ai_src_addr, res->ai_dst_addr, CM_EP_TIMEOUT_MS);
	if (ret)
		goto err;
	if (res->ai_route_len) {
		ret = rdma_set_option(rid, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, res->ai_route,
				      res->ai_route_len);
		if (!ret)
			ret = cm_complete(id);
	} else {
		ret = rdma_resolve_route(rid, CM_EP_TIMEOUT_MS);
	}
	if (ret)
		goto err;
	if (qp_init_attr) {
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		ret = rdma_create_qp(rid, pd, qp_init_attr);
		if (ret)
			goto err;
	}
	if (res->ai_connect_len) {
		id->connect = malloc(res->ai_connect_len);
		if (!id->connect) {
			ret = cm_err(ENOMEM);
			goto err;
		}
		memcpy(id->connect, res->ai_connect, res->ai_connect_len);
		id->connect_len = res->ai_connect_len;
	}
	*out = rid;
	return 0;
err:
	saved = errno;
	rdma_destroy_ep(rid);
	errno = saved;
	return ret;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cm_id *lis;
	struct rdma_cm_event *event;
	int ret;

	if (!listen || !id)
		return cm_err(EINVAL);
	lis = to_cm_id(listen);
	if (!lis->sync)
		return cm_err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	ret = rdma_get_cm_event(listen->channel, &event);
	if (ret)
		return ret;
	if (event->event == RDMA_CM_EVENT_REJECTED) {
		ret = cm_err(ECONNREFUSED);
		goto err;
	}
	if (event->status) {
		ret = cm_err(event->status < 0 ? -event->status : event->status);
		goto err;
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		ret = cm_err(event->event == RDMA_CM_EVENT_DEVICE_REMOVAL ? ENODEV : EINVAL);
		goto err;
	}
	if (lis->qp_init_attr) {
		struct ibv_qp_init_attr attr = *lis->qp_init_attr;

		ret = rdma_create_qp(event->id, listen->pd, &attr);
		if (ret)
			goto err;
	}
	*id = event->id;
	(*id)->event = event;
	return 0;
err:
	listen->event = event;
	return ret;
}
