/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events: the daemon writes struct xrxe_async_event records into
 * the pipe handed over at HELLO; context->async_fd is its read end, so the
 * application can poll it. Handles are mapped back to the application's
 * objects here. When the daemon disappears (end of file on the pipe), the
 * application gets one IBV_EVENT_DEVICE_FATAL, as it would when a real device
 * is removed, and ENODEV afterwards.
 */
#include "verbs/shim.h"

#include <unistd.h>

static int event_target(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
		return XRXE_OBJ_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return XRXE_OBJ_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return XRXE_OBJ_SRQ;
	default:
		return 0; /* port and device events */
	}
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct xrxe_context *ctx = to_xctx(context);

	for (;;) {
		struct xrxe_async_event ev;
		ssize_t r = read(context->async_fd, &ev, sizeof(ev));
		int type;
		void *obj;

		if (r == 0) {
			atomic_store_explicit(&ctx->conn.gone, true, memory_order_relaxed);
			if (ctx->fatal_reported) {
				errno = ENODEV;
				return -1;
			}
			ctx->fatal_reported = true;
			event->event_type = IBV_EVENT_DEVICE_FATAL;
			event->element.port_num = 0;
			return 0;
		}
		if (r != (ssize_t)sizeof(ev)) {
			if (r > 0)
				errno = EIO;
			return -1;
		}
		event->event_type = (enum ibv_event_type)ev.event_type;
		type = event_target(event->event_type);
		if (!type) {
			if (ev.event_type == IBV_EVENT_WQ_FATAL)
				continue; /* no WQs here */
			event->element.port_num = (int)ev.handle;
			return 0;
		}
		/* An object destroyed since the event was queued: drop it. */
		obj = xrxe_obj_find(ctx, (uint32_t)type, ev.handle);
		if (!obj)
			continue;
		if (type == XRXE_OBJ_CQ)
			event->element.cq = ibv_cq_ex_to_cq(&((struct xrxe_cq *)obj)->cqx);
		else if (type == XRXE_OBJ_QP)
			event->element.qp = &((struct xrxe_qp *)obj)->qpx.qp_base;
		else
			event->element.srq = &((struct xrxe_srq *)obj)->srq;
		return 0;
	}
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *m = NULL;
	pthread_cond_t *c = NULL;
	uint32_t *count = NULL;

	switch (event_target(event->event_type)) {
	case XRXE_OBJ_CQ:
		m = &event->element.cq->mutex;
		c = &event->element.cq->cond;
		count = &event->element.cq->async_events_completed;
		break;
	case XRXE_OBJ_QP:
		m = &event->element.qp->mutex;
		c = &event->element.qp->cond;
		count = &event->element.qp->events_completed;
		break;
	case XRXE_OBJ_SRQ:
		m = &event->element.srq->mutex;
		c = &event->element.srq->cond;
		count = &event->element.srq->events_completed;
		break;
	default:
		return;
	}
	pthread_mutex_lock(m);
	++*count;
	pthread_cond_broadcast(c);
	pthread_mutex_unlock(m);
}
