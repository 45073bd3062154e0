/* SPDX-License-Identifier: MIT */
/*
 * Multicast on a UD ID (cm_abi.h CM_JOIN_MCAST): the daemon joins the IP
 * group on its interface and reports MULTICAST_JOIN with the group's address
 * vector; the library attaches the ID's QP to the MGID itself (unless the
 * join was send-only) and hands the join's context to the application in
 * param.ud.private_data, as stock does. A join is named in its events by a
 * cookie the library chooses.
 */
#include "rdmacm/cm.h"

#include <stdlib.h>
#include <string.h>

static _Atomic uint64_t next_cookie = 1;

struct cm_mc *cm_mc_get_for_event(struct cm_id *id, uint64_t cookie)
{
	struct cm_mc *mc;

	pthread_mutex_lock(&id->mut);
	for (mc = id->mc_list; mc; mc = mc->next)
		if (mc->cookie == cookie)
			break;
	if (mc)
		mc->delivered++;
	pthread_mutex_unlock(&id->mut);
	return mc;
}

void cm_mc_free_all(struct cm_id *id)
{
	struct cm_mc *mc, *next;

	for (mc = id->mc_list; mc; mc = next) {
		next = mc->next;
		pthread_cond_destroy(&mc->cond);
		free(mc);
	}
	id->mc_list = NULL;
}

static void mc_unlink(struct cm_id *id, struct cm_mc *mc)
{
	pthread_mutex_lock(&id->mut);
	for (struct cm_mc **p = &id->mc_list; *p; p = &(*p)->next) {
		if (*p == mc) {
			*p = mc->next;
			break;
		}
	}
	pthread_mutex_unlock(&id->mut);
}

static int join(struct rdma_cm_id *rid, struct sockaddr *addr, socklen_t addrlen,
		uint16_t join_flags, void *context)
{
	struct xrxe_ctrl_cm_mcast req = { .join_flags = join_flags };
	struct cm_attach *a;
	struct cm_id *id = to_cm_id(rid);
	struct cm_mc *mc;
	int ret;

	/* The kernel needs the ID's device (bound or address-resolved). */
	if (!(a = cm_id_att(id)))
		return cm_err(EINVAL);
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return cm_err(ENOMEM);
	mc->id = id;
	mc->context = context;
	mc->join_flags = join_flags;
	mc->addrlen = addrlen;
	memcpy(&mc->addr, addr, addrlen);
	mc->cookie = atomic_fetch_add(&next_cookie, 1);
	pthread_cond_init(&mc->cond, NULL);
	pthread_mutex_lock(&id->mut);
	mc->next = id->mc_list;
	id->mc_list = mc;
	pthread_mutex_unlock(&id->mut);

	req.handle = a->handle;
	req.mc_cookie = mc->cookie;
	ret = cm_addr_from_sa(&req.addr, addr);
	if (!ret)
		ret = cm_call(a->dev, XRXE_CTRL_CM_JOIN_MCAST, &req, sizeof(req), NULL, 0, NULL, 0);
	if (ret) {
		mc_unlink(id, mc);
		pthread_cond_destroy(&mc->cond);
		free(mc);
		return cm_err(-ret);
	}
	return cm_complete(id);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	socklen_t len;

	if (!id || !mc_join_attr)
		return cm_err(EINVAL);
	if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return cm_err(ENOTSUP);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS))
		return cm_err(EINVAL);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return cm_err(EINVAL);
	len = cm_sa_len(mc_join_attr->addr);
	if (!len)
		return cm_err(EINVAL);
	return join(id, mc_join_attr->addr, len, (uint16_t)mc_join_attr->join_flags, context);
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	socklen_t len = cm_sa_len(addr);

	if (!id || !len)
		return cm_err(EINVAL);
	return join(id, addr, len, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

int rdma_leave_multicast(struct rdma_cm_id *rid, struct sockaddr *addr)
{
	struct xrxe_ctrl_cm_mcast req = { 0 };
	socklen_t len = cm_sa_len(addr);
	struct cm_attach *a;
	struct cm_mc *mc;
	struct cm_id *id;
	int ret;

	if (!rid || !len)
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	pthread_mutex_lock(&id->mut);
	for (struct cm_mc **p = &id->mc_list; (mc = *p); p = &mc->next) {
		if (!memcmp(&mc->addr, addr, len)) {
			*p = mc->next;
			break;
		}
	}
	pthread_mutex_unlock(&id->mut);
	if (!mc)
		return cm_err(EADDRNOTAVAIL);
	if (rid->qp && mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		ibv_detach_mcast(rid->qp, &mc->mgid, mc->mlid);
	ret = 0;
	a = cm_id_att(id);
	if (a) {
		req.handle = a->handle;
		req.join_flags = mc->join_flags;
		req.mc_cookie = mc->cookie;
		cm_addr_from_sa(&req.addr, addr);
		ret = cm_call(a->dev, XRXE_CTRL_CM_LEAVE_MCAST, &req, sizeof(req), NULL, 0, NULL, 0);
		if (ret == -ENODEV)
			ret = 0; /* the daemon is gone, and the group with it */
	}
	/* Events of this join already handed out must be acknowledged first. */
	pthread_mutex_lock(&id->mut);
	while (mc->completed < mc->delivered)
		pthread_cond_wait(&mc->cond, &id->mut);
	pthread_mutex_unlock(&id->mut);
	pthread_cond_destroy(&mc->cond);
	free(mc);
	return cm_ret(ret);
}
