/* SPDX-License-Identifier: MIT */
/*
 * rdma_get_cm_event: one struct xrxe_cm_event_msg from the channel becomes
 * one struct rdma_cm_event, after the work stock librdmacm does between the
 * kernel's event and the application:
 *   CONNECT_REQUEST   a new rdma_cm_id for the daemon's new ID (on the
 *                     listener's device and channel; a private channel when
 *                     the listener is synchronous), event->listen_id;
 *   CONNECT_RESPONSE  with a QP: RTR, RTS and the RTU, reported as
 *                     ESTABLISHED (CONNECT_ERROR and a REJ if that fails);
 *                     without: reported as it is, for rdma_establish;
 *   REJECTED          the QP to Error; after a CONNECT_ERROR, swallowed;
 *   MULTICAST_JOIN    the QP attached to the group, the join's context in
 *                     param.ud.private_data;
 *   any event with a route updates id->route.
 * Events for an ID that no longer exists are dropped, as the kernel drops
 * them with the ID.
 */
#include "rdmacm/cm.h"

#include <stdlib.h>
#include <string.h>

struct cm_event {
	struct rdma_cm_event event; /* what the application sees */
	uint8_t private_data[XRXE_CM_PRIVATE_DATA_MAX];
	struct cm_id *owner; /* whose delivered count it holds */
	struct cm_mc *mc;
};

static void copy_conn(struct cm_event *e, const struct xrxe_cm_event_msg *m)
{
	struct rdma_conn_param *d = &e->event.param.conn;
	const struct xrxe_cm_conn_param *s = &m->param.conn;

	if (!(m->flags & XRXE_CM_EV_CONN))
		return;
	d->private_data_len = s->private_data_len > sizeof(e->private_data) ?
				      sizeof(e->private_data) : s->private_data_len;
	if (d->private_data_len) {
		memcpy(e->private_data, s->private_data, d->private_data_len);
		d->private_data = e->private_data;
	}
	d->responder_resources = s->responder_resources;
	d->initiator_depth = s->initiator_depth;
	d->flow_control = s->flow_control;
	d->retry_count = s->retry_count;
	d->rnr_retry_count = s->rnr_retry_count;
	d->srq = s->srq;
	d->qp_num = s->qp_num;
}

static void copy_ud(struct cm_event *e, const struct xrxe_cm_event_msg *m)
{
	struct rdma_ud_param *d = &e->event.param.ud;
	const struct xrxe_cm_ud_param *s = &m->param.ud;

	if (!(m->flags & XRXE_CM_EV_UD))
		return;
	d->private_data_len = s->private_data_len > sizeof(e->private_data) ?
				      sizeof(e->private_data) : s->private_data_len;
	if (d->private_data_len) {
		memcpy(e->private_data, s->private_data, d->private_data_len);
		d->private_data = e->private_data;
	}
	d->ah_attr = s->ah_attr;
	d->qp_num = s->qp_num;
	d->qkey = s->qkey;
}

static void copy_param(struct cm_event *e, const struct cm_id *id,
		       const struct xrxe_cm_event_msg *m)
{
	if (id->id.qp_type == IBV_QPT_UD)
		copy_ud(e, m);
	else
		copy_conn(e, m);
}

/* A connect request: the new ID. false if it could not be made (the
 * request is then refused and the event swallowed). */
static bool conn_req(struct cm_event *e, struct cm_id *lis, struct cm_dev *dev,
		     const struct xrxe_cm_event_msg *m)
{
	struct cm_id *child;
	int err;

	copy_param(e, lis, m);
	child = cm_id_alloc(lis->id.channel, lis->id.context, lis->id.ps, lis->id.qp_type, &err);
	if (!child)
		goto fail;
	err = cm_id_adopt(child, dev, m->handle);
	if (err) {
		cm_id_free(child);
		goto fail;
	}
	child->initiator_depth = m->param.conn.initiator_depth;
	child->responder_resources = m->param.conn.responder_resources;
	if (m->flags & XRXE_CM_EV_ECE) {
		child->remote_ece.vendor_id = m->ece.vendor_id;
		child->remote_ece.options = m->ece.options;
	}
	if (m->flags & XRXE_CM_EV_ROUTE)
		err = cm_id_set_route(child, &m->route);
	/* rdma_get_request: the new ID waits on a channel of its own. */
	if (!err && lis->sync && rdma_migrate_id(&child->id, NULL))
		err = -errno;
	if (err) {
		rdma_destroy_id(&child->id); /* the daemon sends the REJ */
		goto out;
	}
	e->event.listen_id = &lis->id;
	e->event.id = &child->id;
	return true;
fail:
	cm_warn("cannot take a connect request: %s", strerror(-err));
	cm_call_handle(dev, XRXE_CTRL_CM_DESTROY_ID, m->handle, 0);
out:
	cm_id_complete_event(lis);
	return false;
}

static int mc_join(struct cm_event *e, struct cm_id *id)
{
	struct cm_mc *mc = e->mc;
	int ret;

	mc->mgid = e->event.param.ud.ah_attr.grh.dgid;
	mc->mlid = e->event.param.ud.ah_attr.dlid;
	if (!id->id.qp || mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return 0;
	ret = ibv_attach_mcast(id->id.qp, &mc->mgid, mc->mlid);
	return ret ? -ret : 0;
}

/* Turn the message into the event. false: swallowed (already acknowledged). */
static bool process(struct cm_event *e, struct cm_id *id, struct cm_dev *dev,
		    const struct xrxe_cm_event_msg *m)
{
	e->event.id = &id->id;
	e->event.event = (enum rdma_cm_event_type)m->event;
	e->event.status = m->status;
	if (m->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		if (dev)
			return conn_req(e, id, dev, m);
		cm_id_complete_event(id); /* the library never makes one */
		return false;
	}
	if ((m->flags & XRXE_CM_EV_ROUTE) && cm_id_set_route(id, &m->route)) {
		e->event.status = -ENOMEM;
		if (m->event == RDMA_CM_EVENT_ADDR_RESOLVED)
			e->event.event = RDMA_CM_EVENT_ADDR_ERROR;
		else if (m->event == RDMA_CM_EVENT_ROUTE_RESOLVED)
			e->event.event = RDMA_CM_EVENT_ROUTE_ERROR;
	}
	switch (m->event) {
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		copy_conn(e, m);
		if (!id->id.qp) {
			/* The application drives its QP: rdma_establish. */
			id->remote_ece.vendor_id = m->ece.vendor_id;
			id->remote_ece.options = m->ece.options;
			break;
		}
		if (!cm_conn_resp(id, &m->ece)) {
			e->event.event = RDMA_CM_EVENT_ESTABLISHED;
			break;
		}
		e->event.event = RDMA_CM_EVENT_CONNECT_ERROR;
		e->event.status = -errno;
		id->connect_error = 1;
		/* Tell the passive side at once rather than let its REP time out. */
		rdma_reject(&id->id, NULL, 0);
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DISCONNECTED:
		if (id->connect_error) {
			/* Already reported as CONNECT_ERROR. */
			cm_id_complete_event(id);
			return false;
		}
		copy_conn(e, m);
		if (m->event == RDMA_CM_EVENT_REJECTED)
			cm_qp_to_err(&id->id);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL: {
		bool dup;

		pthread_mutex_lock(&id->mut);
		dup = id->removal;
		id->removal = true;
		pthread_mutex_unlock(&id->mut);
		if (dup) {
			/* The daemon said so before it went; ours is late. */
			cm_id_complete_event(id);
			return false;
		}
		break;
	}
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		e->mc = cm_mc_get_for_event(id, m->mc_cookie);
		if (!e->mc) {
			/* A join left meanwhile. */
			cm_id_complete_event(id);
			return false;
		}
		if (m->event == RDMA_CM_EVENT_MULTICAST_JOIN) {
			int ret;

			copy_ud(e, m);
			ret = mc_join(e, id);
			if (ret) {
				e->event.event = RDMA_CM_EVENT_MULTICAST_ERROR;
				e->event.status = ret;
			}
		}
		e->event.param.ud.private_data = e->mc->context;
		break;
	default:
		copy_param(e, id, m);
		break;
	}
	return true;
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cm_channel *ch;
	struct cm_event *e;

	if (!channel || !event)
		return cm_err(EINVAL);
	ch = to_cm_channel(channel);
	e = malloc(sizeof(*e));
	if (!e)
		return cm_err(ENOMEM);
	for (;;) {
		struct xrxe_cm_event_msg m;
		struct cm_dev *dev = NULL;
		struct cm_id *id;
		int ret;

		memset(e, 0, sizeof(*e));
		ret = cm_channel_read(ch, &m);
		if (ret) {
			free(e);
			return cm_err(-ret);
		}
		cm_dbg("%s (status %d) for handle %u%s", rdma_event_str((enum rdma_cm_event_type)m.event),
		       m.status, m.event == RDMA_CM_EVENT_CONNECT_REQUEST ? m.listen_handle : m.handle,
		       m.cookie ? "" : " (the library's)");
		if (m.cookie == 0) {
			id = cm_id_get_by_lid(m.handle); /* one of ours */
		} else {
			struct cm_reg *reg = cm_channel_find_reg(ch, m.cookie);

			if (!reg) {
				cm_warn("discarding an event with an unknown cookie");
				continue;
			}
			dev = reg->dev;
			id = cm_id_get_for_event(dev, m.event == RDMA_CM_EVENT_CONNECT_REQUEST ?
							      m.listen_handle : m.handle);
			if (!id && m.event == RDMA_CM_EVENT_CONNECT_REQUEST)
				/* The listener is gone: refuse its request. */
				cm_call_handle(dev, XRXE_CTRL_CM_DESTROY_ID, m.handle, 0);
		}
		if (!id) {
			cm_dbg("dropping %s for a destroyed ID", rdma_event_str(m.event));
			continue;
		}
		e->owner = id;
		if (process(e, id, dev, &m)) {
			*event = &e->event;
			return 0;
		}
	}
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event *e;

	if (!event)
		return cm_err(EINVAL);
	e = cm_container_of(event, struct cm_event, event);
	if (e->mc) {
		struct cm_id *id = e->owner;

		pthread_mutex_lock(&id->mut);
		e->mc->completed++;
		pthread_cond_broadcast(&e->mc->cond);
		id->completed++;
		pthread_cond_broadcast(&id->cond);
		pthread_mutex_unlock(&id->mut);
	} else {
		cm_id_complete_event(e->owner);
	}
	free(e);
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < sizeof(names) / sizeof(names[0]) && names[event])
		return names[event];
	return "UNKNOWN EVENT";
}
