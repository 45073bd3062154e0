// SPDX-License-Identifier: MIT
/*
 * The CM device: the ID table, comm IDs, MAD transmission and
 * retransmission, timers, events, statistics.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_internal.h"
#include "util/log.h"

#define DEFAULT_MAX_IDS 65536

static const char *const cma_state_names[CMA_STATE_COUNT] = {
	[CMA_IDLE] = "idle",
	[CMA_ADDR_QUERY] = "addr_query",
	[CMA_ADDR_RESOLVED] = "addr_resolved",
	[CMA_ROUTE_QUERY] = "route_query",
	[CMA_ROUTE_RESOLVED] = "route_resolved",
	[CMA_CONNECT] = "connect",
	[CMA_DISCONNECT] = "disconnect",
	[CMA_ADDR_BOUND] = "addr_bound",
	[CMA_LISTEN] = "listen",
	[CMA_DEVICE_REMOVAL] = "device_removal",
	[CMA_DESTROYING] = "destroying",
};

static const char *const ib_state_names[IB_STATE_COUNT] = {
	[IB_IDLE] = "idle",
	[IB_REQ_SENT] = "req_sent",
	[IB_REQ_RCVD] = "req_rcvd",
	[IB_MRA_REQ_SENT] = "mra_req_sent",
	[IB_MRA_REQ_RCVD] = "mra_req_rcvd",
	[IB_REP_SENT] = "rep_sent",
	[IB_REP_RCVD] = "rep_rcvd",
	[IB_MRA_REP_RCVD] = "mra_rep_rcvd",
	[IB_ESTABLISHED] = "established",
	[IB_DREQ_SENT] = "dreq_sent",
	[IB_DREQ_RCVD] = "dreq_rcvd",
	[IB_TIMEWAIT] = "timewait",
	[IB_SIDR_REQ_SENT] = "sidr_req_sent",
	[IB_SIDR_REQ_RCVD] = "sidr_req_rcvd",
};

const char *xrxe_cmi_cma_state_name(enum cma_state s)
{
	return (unsigned)s < CMA_STATE_COUNT ? cma_state_names[s] : "?";
}

const char *xrxe_cmi_ib_state_name(enum ib_state s)
{
	return (unsigned)s < IB_STATE_COUNT ? ib_state_names[s] : "?";
}

uint64_t xrxe_cmi_timeout_ns(unsigned t)
{
	return 4096ull << (t > 31 ? 31 : t);
}

int xrxe_cm_create(const struct xrxe_cm_config *cfg, struct xrxe_cm **out)
{
	struct xrxe_cm *cm;

	if (!cfg || !cfg->ops || !cfg->ops->send_mad || !cfg->ops->event || !cfg->ops->new_child ||
	    !cfg->ops->gid_index || !cfg->ops->random)
		return -EINVAL;
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return -ENOMEM;
	cm->cfg = *cfg;
	if (!cm->cfg.max_ids)
		cm->cfg.max_ids = DEFAULT_MAX_IDS;
	if (cm->cfg.max_path_mtu < IBV_MTU_256 || cm->cfg.max_path_mtu > IBV_MTU_4096)
		cm->cfg.max_path_mtu = IBV_MTU_1024;
	cm->next_port = (uint16_t)(CMA_PORT_MIN + cfg->ops->random(cfg->user) %
						  (CMA_PORT_MAX - CMA_PORT_MIN + 1));
	cm->next_tid = (uint64_t)cfg->ops->random(cfg->user) << 32;
	*out = cm;
	return 0;
}

void xrxe_cm_destroy(struct xrxe_cm *cm)
{
	if (!cm)
		return;
	while (cm->ids)
		xrxe_cmi_id_free(cm, cm->ids);
	free(cm);
}

struct xrxe_cm_id *xrxe_cmi_id_new(struct xrxe_cm *cm, uint32_t ps, enum ibv_qp_type qpt,
				   void *owner)
{
	struct xrxe_cm_id *id;

	if (cm->nids >= cm->cfg.max_ids)
		return NULL;
	id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	id->cm = cm;
	id->owner = owner;
	id->ps = ps;
	id->qp_type = qpt;
	id->afonly = -1;
	id->deadline = UINT64_MAX;
	id->route.pkey = htobe16(0xffff);
	/* The kernel draws each ID's starting PSN at random (cma.c seq_num):
	 * a stale packet of an earlier connection on the same QPN then falls
	 * outside the new PSN window. */
	id->seq_num = cm->cfg.ops->random(cm->cfg.user) & 0xffffff;
	id->next = cm->ids;
	if (cm->ids)
		cm->ids->prev = id;
	cm->ids = id;
	cm->nids++;
	return id;
}

void xrxe_cmi_id_free(struct xrxe_cm *cm, struct xrxe_cm_id *id)
{
	xrxe_cmi_child_settled(id);
	/* children still pending on a listener that goes away lose it */
	for (struct xrxe_cm_id *c = cm->ids; c; c = c->next)
		if (c->listener == id)
			c->listener = NULL;
	if (id->cma == CMA_LISTEN)
		cm->nlisteners--;
	if (!id->owner)
		cm->ndetached--;
	if (id->prev)
		id->prev->next = id->next;
	else
		cm->ids = id->next;
	if (id->next)
		id->next->prev = id->prev;
	cm->nids--;
	free(id);
}

struct xrxe_cm_id *xrxe_cmi_find_local(struct xrxe_cm *cm, uint32_t local_comm_id)
{
	for (struct xrxe_cm_id *id = cm->ids; id; id = id->next)
		if (id->local_comm_id == local_comm_id && id->ib != IB_IDLE)
			return id;
	return NULL;
}

uint32_t xrxe_cmi_new_comm_id(struct xrxe_cm *cm)
{
	for (;;) {
		uint32_t c = cm->cfg.ops->random(cm->cfg.user);

		if (c && !xrxe_cmi_find_local(cm, c))
			return c;
	}
}

uint64_t xrxe_cmi_own_tid(struct xrxe_cm *cm, struct xrxe_cm_id *id)
{
	while (!id->own_tid)
		id->own_tid = cm->next_tid++;
	return id->own_tid;
}

void xrxe_cmi_msg_init(struct xrxe_cm *cm, struct xrxe_cm_msg *msg, uint16_t attr, uint64_t tid)
{
	memset(msg, 0, sizeof(*msg));
	msg->hdr.base_version = XRXE_MAD_BASE_VERSION;
	msg->hdr.mgmt_class = XRXE_MGMT_CLASS_CM;
	msg->hdr.class_version = XRXE_CM_CLASS_VERSION;
	msg->hdr.method = XRXE_MAD_METHOD_SEND;
	msg->hdr.attr_id = attr;
	msg->hdr.tid = tid ? tid : cm->next_tid++;
}

static void count_sent(struct xrxe_cm *cm, const uint8_t *mad)
{
	unsigned a = (unsigned)(mad[16] << 8 | mad[17]) - XRXE_CM_ATTR_REQ;

	cm->stats.mad_sent++;
	if (a < 16)
		cm->stats.sent_by_attr[a]++;
}

void xrxe_cmi_send(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_msg *msg,
		   bool retry, uint64_t now)
{
	if (xrxe_cm_mad_build(msg, id->mad)) {
		xrxe_warn_rl("cm: cannot build %s", xrxe_cm_attr_name(msg->hdr.attr_id));
		return;
	}
	id->mad_valid = true;
	count_sent(cm, id->mad);
	cm->cfg.ops->send_mad(cm->cfg.user, &id->av, id->mad);
	if (retry) {
		id->retrying = true;
		id->retries_left = id->max_cm_retries ? id->max_cm_retries : CMA_MAX_CM_RETRIES;
		/* IBA 12.7.33/12.7.35: the peer has its CM response timeout, plus
		 * the packet's way there and back (the kernel's timeout_ms). */
		id->timeout_ns = xrxe_cmi_timeout_ns(id->remote_cm_response_timeout
							     ? id->remote_cm_response_timeout
							     : CMA_CM_RESPONSE_TIMEOUT) +
				 2 * xrxe_cmi_timeout_ns(CMA_IBOE_PACKET_LIFETIME);
		id->deadline = now + id->timeout_ns;
	}
}

void xrxe_cmi_resend(struct xrxe_cm *cm, struct xrxe_cm_id *id)
{
	if (!id->mad_valid)
		return;
	count_sent(cm, id->mad);
	cm->stats.mad_resent++;
	cm->cfg.ops->send_mad(cm->cfg.user, &id->av, id->mad);
}

void xrxe_cmi_send_once(struct xrxe_cm *cm, const struct xrxe_av *av, const struct xrxe_cm_msg *msg)
{
	uint8_t mad[XRXE_MAD_SIZE];

	if (xrxe_cm_mad_build(msg, mad))
		return;
	count_sent(cm, mad);
	cm->cfg.ops->send_mad(cm->cfg.user, av, mad);
}

void xrxe_cmi_stop_retry(struct xrxe_cm_id *id)
{
	id->retrying = false;
	if (id->ib != IB_TIMEWAIT)
		id->deadline = UINT64_MAX;
}

void xrxe_cmi_event_init(const struct xrxe_cm_id *id, struct xrxe_cm_event_msg *ev,
			 enum rdma_cm_event_type type, int status)
{
	memset(ev, 0, sizeof(*ev));
	ev->handle = XRXE_NO_HANDLE;
	ev->listen_handle = XRXE_NO_HANDLE;
	ev->event = type;
	ev->status = status;
	ev->flags = XRXE_CM_EV_ROUTE;
	ev->route = id->route;
}

void xrxe_cmi_emit(struct xrxe_cm *cm, struct xrxe_cm_id *id, struct xrxe_cm_event_msg *ev)
{
	if (!id->owner)
		return;
	cm->cfg.ops->event(cm->cfg.user, id->owner, NULL, ev);
}

void xrxe_cm_rx(struct xrxe_cm *cm, const struct xrxe_av *reply_av, const uint8_t *mad, size_t len,
		uint64_t now)
{
	struct xrxe_cm_msg msg;
	enum xrxe_mad_error err = xrxe_cm_mad_parse(mad, len, &msg);
	unsigned a;

	cm->stats.mad_rcvd++;
	if (err) {
		if ((unsigned)err < sizeof(cm->stats.drop_malformed) / sizeof(cm->stats.drop_malformed[0]))
			cm->stats.drop_malformed[err]++;
		xrxe_dbg("cm: drop MAD: %s", xrxe_mad_strerror(err));
		return;
	}
	a = (unsigned)msg.hdr.attr_id - XRXE_CM_ATTR_REQ;
	if (a < 16)
		cm->stats.rcvd_by_attr[a]++;
	xrxe_cmi_rx_msg(cm, reply_av, &msg, now);
}

void xrxe_cm_tick(struct xrxe_cm *cm, uint64_t now)
{
	struct xrxe_cm_id *id = cm->ids, *next;

	for (; id; id = next) {
		next = id->next;
		if (id->deadline <= now)
			xrxe_cmi_timeout(cm, id, now); /* may free id */
	}
}

uint64_t xrxe_cm_next_deadline(const struct xrxe_cm *cm)
{
	uint64_t d = UINT64_MAX;

	for (const struct xrxe_cm_id *id = cm->ids; id; id = id->next)
		if (id->deadline < d)
			d = id->deadline;
	return d;
}

void xrxe_cm_get_stats(const struct xrxe_cm *cm, struct xrxe_cm_stats *st)
{
	*st = cm->stats;
	st->ids = cm->nids - cm->ndetached;
	st->listeners = cm->nlisteners;
	st->detached = cm->ndetached;
}

void xrxe_cm_stats_foreach(const struct xrxe_cm_stats *st,
			   void (*fn)(void *arg, const char *name, uint64_t value), void *arg)
{
	static const char *const attrs[] = { "req", "mra", "rej", "rep", "rtu", "dreq",
					     "drep", "sidr_req", "sidr_rep", "lap", "apr" };
	char name[48];

	fn(arg, "ids", st->ids);
	fn(arg, "listeners", st->listeners);
	fn(arg, "closing", st->detached);
	fn(arg, "mad_sent", st->mad_sent);
	fn(arg, "mad_rcvd", st->mad_rcvd);
	fn(arg, "mad_resent", st->mad_resent);
	fn(arg, "timeouts", st->timeouts);
	for (unsigned i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		snprintf(name, sizeof(name), "sent_%s", attrs[i]);
		fn(arg, name, st->sent_by_attr[i]);
		snprintf(name, sizeof(name), "rcvd_%s", attrs[i]);
		fn(arg, name, st->rcvd_by_attr[i]);
	}
	for (unsigned e = 1; e < XRXE_MAD_ERROR_COUNT && e < 8; e++) {
		snprintf(name, sizeof(name), "drop_%s", xrxe_mad_strerror((enum xrxe_mad_error)e));
		for (char *p = name; *p; p++)
			if (*p == ' ' || *p == '-')
				*p = '_';
		fn(arg, name, st->drop_malformed[e]);
	}
	fn(arg, "drop_unknown_comm_id", st->drop_unknown_id);
	fn(arg, "drop_bad_state", st->drop_bad_state);
	fn(arg, "drop_duplicate", st->drop_duplicate);
	fn(arg, "drop_unsupported", st->drop_unsupported);
	fn(arg, "rej_no_listener", st->rej_no_listener);
	fn(arg, "rej_backlog_full", st->rej_backlog);
	fn(arg, "rej_stale_conn", st->rej_stale);
}

int xrxe_cm_id_foreach(struct xrxe_cm *cm, int (*fn)(void *arg, const struct xrxe_cm_id_info *),
		       void *arg)
{
	for (struct xrxe_cm_id *id = cm->ids; id; id = id->next) {
		struct xrxe_cm_id_info in = {
			.owner = id->owner,
			.ps = id->ps,
			.qp_type = id->qp_type,
			.cma_state = xrxe_cmi_cma_state_name(id->cma),
			.ib_state = xrxe_cmi_ib_state_name(id->ib),
			.src = id->route.src,
			.dst = id->route.dst,
			.local_comm_id = id->local_comm_id,
			.remote_comm_id = id->remote_comm_id,
			.local_qpn = id->local_qpn,
			.remote_qpn = id->remote_qpn,
			.service_id = id->service_id,
			.backlog = id->backlog,
			.pending = id->pending,
		};
		int r = fn(arg, &in);

		if (r)
			return r;
	}
	return 0;
}
