// SPDX-License-Identifier: MIT
/*
 * The rdma_cm layer (the kernel's cma.c, as librdmacm applications see it):
 * IDs in port spaces, binding and ephemeral ports, listeners and their
 * backlog, address and route state, the QP attributes for each transition,
 * options, multicast on RoCE. The IB CM protocol underneath is ib_cm.c.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "cm/cm_internal.h"
#include "util/log.h"

static bool ps_valid(uint32_t ps)
{
	return ps == RDMA_PS_TCP || ps == RDMA_PS_UDP || ps == RDMA_PS_IB || ps == RDMA_PS_IPOIB;
}

static bool addr_any(const struct xrxe_cm_addr *a)
{
	static const uint8_t zero[16];

	return !memcmp(a->addr, zero, a->family == AF_INET ? 4 : 16);
}

static bool addr_eq(const struct xrxe_cm_addr *a, const struct xrxe_cm_addr *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16);
}

void xrxe_cmi_addr_to_gid(const struct xrxe_cm_addr *a, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (a->family == AF_INET) {
		/* RoCEv2 GID of an IPv4 address: ::ffff:a.b.c.d */
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, a->addr, 4);
	} else if (a->family == AF_INET6) {
		memcpy(gid->raw, a->addr, 16);
	}
}

/* Does a listener or binding at `bound` take traffic for `a`? An IPv6
 * wildcard takes IPv4 too unless AFONLY (the kernel's default bindv6only 0). */
static bool addr_covers(const struct xrxe_cm_id *id, const struct xrxe_cm_addr *a)
{
	const struct xrxe_cm_addr *b = &id->route.src;

	if (addr_any(b))
		return b->family == a->family || (b->family == AF_INET6 && id->afonly <= 0);
	return addr_eq(b, a);
}

/* The kernel's afonly (rdma_bind_addr): IPv4 IDs are always family-only,
 * IPv6 ones only with RDMA_OPTION_ID_AFONLY (bindv6only 0). */
static bool afonly(const struct xrxe_cm_id *id, unsigned family)
{
	return family == AF_INET || id->afonly > 0;
}

static bool port_conflict(struct xrxe_cm *cm, const struct xrxe_cm_id *self,
			  const struct xrxe_cm_addr *a, uint16_t port)
{
	for (const struct xrxe_cm_id *o = cm->ids; o; o = o->next) {
		if (o == self || !o->bound || !o->owner || o->ps != self->ps ||
		    o->route.src.port != port)
			continue;
		/* SO_REUSEADDR semantics (the kernel's cma_check_port): both
		 * ask for it and the other is not listening */
		if (self->reuseaddr && o->reuseaddr && o->cma != CMA_LISTEN)
			continue;
		/* two family-only bindings of different families never meet;
		 * otherwise a wildcard meets everything, an address itself */
		if (afonly(self, a->family) && afonly(o, o->route.src.family) &&
		    o->route.src.family != a->family)
			continue;
		if (addr_any(&o->route.src) || addr_any(a) || addr_eq(&o->route.src, a))
			return true;
	}
	return false;
}

int xrxe_cm_id_create(struct xrxe_cm *cm, uint32_t ps, enum ibv_qp_type qp_type, void *owner,
		      struct xrxe_cm_id **out)
{
	struct xrxe_cm_id *id;

	if (!ps_valid(ps) ||
	    (qp_type != IBV_QPT_RC && qp_type != IBV_QPT_UC && qp_type != IBV_QPT_UD) || !owner)
		return -EINVAL;
	id = xrxe_cmi_id_new(cm, ps, qp_type, owner);
	if (!id)
		return -ENOMEM;
	*out = id;
	return 0;
}

void xrxe_cm_id_set_owner(struct xrxe_cm_id *id, void *owner)
{
	if (owner)
		id->owner = owner;
}

void xrxe_cmi_child_settled(struct xrxe_cm_id *id)
{
	if (id->listener) {
		id->listener->pending--;
		id->listener = NULL;
	}
}

void xrxe_cm_id_destroy(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now)
{
	if (!id->owner)
		return;
	if (id->cma == CMA_LISTEN) {
		cm->nlisteners--;
		id->cma = CMA_DESTROYING;
	}
	id->owner = NULL;
	id->bound = false;
	id->nmc = 0;
	cm->ndetached++;
	/* What the kernel's cm_destroy_id does in each state */
	switch (id->ib) {
	case IB_REQ_SENT:
	case IB_MRA_REQ_RCVD:
		xrxe_cmi_send_rej(cm, id, XRXE_CM_REJ_TIMEOUT, NULL, 0, now);
		break;
	case IB_REQ_RCVD:
	case IB_MRA_REQ_SENT:
	case IB_REP_RCVD:
	case IB_REP_SENT:
	case IB_MRA_REP_RCVD:
		xrxe_cmi_send_rej(cm, id, XRXE_CM_REJ_CONSUMER_DEFINED, NULL, 0, now);
		break;
	case IB_SIDR_REQ_RCVD:
		xrxe_cmi_send_sidr_rep(cm, id, XRXE_CM_SIDR_REJECT, 0, 0, NULL, 0);
		break;
	case IB_ESTABLISHED:
		xrxe_cmi_send_dreq(cm, id, now);
		return; /* lives on until DREP / TimeWait */
	case IB_DREQ_RCVD:
		xrxe_cmi_send_drep(cm, id, now);
		return;
	case IB_DREQ_SENT:
	case IB_TIMEWAIT:
		return;
	default:
		break;
	}
	xrxe_cmi_id_free(cm, id);
}

int xrxe_cm_bind(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_addr *addr)
{
	uint16_t port;

	if (id->bound || id->cma != CMA_IDLE)
		return -EINVAL;
	if (addr->family != AF_INET && addr->family != AF_INET6)
		return -EAFNOSUPPORT;
	port = addr->port;
	if (!port) {
		unsigned span = CMA_PORT_MAX - CMA_PORT_MIN + 1, i;

		for (i = 0; i < span; i++) {
			uint16_t p = (uint16_t)(CMA_PORT_MIN + (cm->next_port - CMA_PORT_MIN + i) % span);

			if (!port_conflict(cm, id, addr, htons(p))) {
				port = htons(p);
				cm->next_port = (uint16_t)(p + 1 > CMA_PORT_MAX ? CMA_PORT_MIN : p + 1);
				break;
			}
		}
		if (!port)
			return -EADDRNOTAVAIL;
	} else if (port_conflict(cm, id, addr, port)) {
		return -EADDRINUSE;
	}
	id->route.src = *addr;
	id->route.src.port = port;
	xrxe_cmi_addr_to_gid(&id->route.src, &id->route.sgid);
	id->bound = true;
	id->cma = CMA_ADDR_BOUND;
	return 0;
}

int xrxe_cm_addr_query(struct xrxe_cm *cm, struct xrxe_cm_id *id)
{
	(void)cm;
	/* rdma_resolve_addr may be repeated until the route is resolved */
	if (id->cma != CMA_IDLE && id->cma != CMA_ADDR_BOUND && id->cma != CMA_ADDR_RESOLVED)
		return -EINVAL;
	return 0;
}

int xrxe_cm_addr_resolved(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_addr *src,
			  const struct xrxe_cm_addr *dst, const struct xrxe_av *av)
{
	struct xrxe_cm_event_msg ev;
	int err;

	if (!id->bound) {
		struct xrxe_cm_addr s = *src;

		s.port = 0;
		err = xrxe_cm_bind(cm, id, &s);
		if (err)
			return err;
	} else if (id->route.src.family != dst->family) {
		return -EINVAL; /* the kernel's resolve_prepare_src */
	} else if (addr_any(&id->route.src)) {
		/* bound to a wildcard: the source is the address resolution
		 * chose, the port stays (the kernel's addr_handler); a REQ from
		 * 0.0.0.0 would reach no listener */
		memcpy(id->route.src.addr, src->addr, sizeof(id->route.src.addr));
		id->route.src.scope_id = src->scope_id;
		xrxe_cmi_addr_to_gid(&id->route.src, &id->route.sgid);
	}
	id->route.dst = *dst;
	xrxe_cmi_addr_to_gid(&id->route.dst, &id->route.dgid);
	id->av = *av;
	id->av_set = true;
	id->cma = CMA_ADDR_RESOLVED;
	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	xrxe_cmi_emit(cm, id, &ev);
	return 0;
}

void xrxe_cm_addr_error(struct xrxe_cm *cm, struct xrxe_cm_id *id, int status)
{
	struct xrxe_cm_event_msg ev;

	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_ADDR_ERROR, status);
	xrxe_cmi_emit(cm, id, &ev);
}

/* The path record rdma_cm builds for RoCE (the kernel's
 * cma_resolve_iboe_route): the GIDs, P_Key 0xffff, the port's MTU, the
 * packet lifetime 16, hop limit and traffic class of the route. */
void xrxe_cmi_fill_path(struct xrxe_cm *cm, struct xrxe_cm_id *id)
{
	struct ibv_sa_path_rec *p = &id->route.path;
	uint8_t tos = id->tos_set ? id->tos : 0;

	memset(p, 0, sizeof(*p));
	p->dgid = id->route.dgid;
	p->sgid = id->route.sgid;
	p->pkey = htobe16(0xffff);
	p->hop_limit = id->av_set && id->av.hop_limit ? id->av.hop_limit : 64;
	p->traffic_class = tos;
	p->sl = tos >> 5;
	p->reversible = 1;
	p->numb_path = 1;
	p->mtu_selector = 2; /* exactly */
	p->mtu = cm->cfg.max_path_mtu;
	p->rate_selector = 2;
	/* IB_RATE_PORT_CURRENT: the kernel's iboe_get_rate for a link below
	 * 10 Gb/s or of unknown speed (rxe-cm.pcap's REQs); we are not told
	 * the link's speed, and the port's current rate is always right */
	p->rate = 0;
	p->packet_life_time_selector = 2;
	p->packet_life_time = CMA_IBOE_PACKET_LIFETIME;
	id->route.num_paths = 1;
	if (id->av_set && !id->tos_set)
		p->traffic_class = id->av.tclass & ~3u;
}

int xrxe_cm_resolve_route(struct xrxe_cm *cm, struct xrxe_cm_id *id)
{
	struct xrxe_cm_event_msg ev;

	if (id->cma != CMA_ADDR_RESOLVED && id->cma != CMA_ROUTE_RESOLVED)
		return -EINVAL;
	xrxe_cmi_fill_path(cm, id);
	/* RoCEv2 (the kernel's cma_get_roce_udp_flow_label, no IPv6 flow
	 * info given): a hash of the IP ports, so each connection gets its
	 * own UDP source port for ECMP; the REQ hands it to the peer */
	id->route.path.flow_label = htobe32(((uint32_t)ntohs(id->route.src.port) * 31 +
					     ntohs(id->route.dst.port)) & 0xfffff);
	id->cma = CMA_ROUTE_RESOLVED;
	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	xrxe_cmi_emit(cm, id, &ev);
	return 0;
}

int xrxe_cm_listen(struct xrxe_cm *cm, struct xrxe_cm_id *id, int backlog)
{
	if (backlog <= 0 || backlog > XRXE_CM_MAX_BACKLOG)
		backlog = XRXE_CM_MAX_BACKLOG;
	if (id->cma == CMA_LISTEN) {
		/* the kernel lets a listener change its backlog */
		id->backlog = backlog;
		return 0;
	}
	if (id->cma != CMA_ADDR_BOUND)
		return -EINVAL;
	/* a listener needs its port to itself (SO_REUSEADDR does not share
	 * listening ports) */
	if (id->reuseaddr) {
		id->reuseaddr = false;
		if (port_conflict(cm, id, &id->route.src, id->route.src.port)) {
			id->reuseaddr = true;
			return -EADDRINUSE;
		}
	}
	id->backlog = backlog;
	id->cma = CMA_LISTEN;
	cm->nlisteners++;
	return 0;
}

struct xrxe_cm_id *xrxe_cmi_find_listener(struct xrxe_cm *cm, uint64_t service_id,
					  const struct xrxe_cma_hdr *hdr)
{
	uint32_t ps = (uint32_t)(service_id >> 16) & 0xffff;
	uint16_t port = htons((uint16_t)service_id);
	struct xrxe_cm_addr dst = { .family = hdr->ip_version == 6 ? AF_INET6 : AF_INET };
	struct xrxe_cm_id *wild = NULL;

	if ((service_id & XRXE_CMA_PS_MASK) != xrxe_cma_service_id(ps, 0))
		return NULL;
	memcpy(dst.addr, hdr->dst_addr, 16);
	for (struct xrxe_cm_id *id = cm->ids; id; id = id->next) {
		if (id->cma != CMA_LISTEN || !id->owner || id->ps != ps || id->route.src.port != port)
			continue;
		if (!addr_any(&id->route.src) && addr_eq(&id->route.src, &dst))
			return id; /* a specific address wins over a wildcard */
		if (addr_any(&id->route.src) && addr_covers(id, &dst) && !wild)
			wild = id;
	}
	return wild;
}

struct xrxe_cm_id *xrxe_cmi_new_child(struct xrxe_cm *cm, struct xrxe_cm_id *listener,
				      const struct xrxe_av *reply_av, const struct xrxe_cma_hdr *hdr,
				      uint16_t *rej_reason)
{
	struct xrxe_cm_id *id;
	int fam = hdr->ip_version == 6 ? AF_INET6 : AF_INET;

	if (listener->pending >= (unsigned)listener->backlog) {
		/* the kernel's ucma refuses beyond the backlog; the IB CM then
		 * rejects as the consumer */
		cm->stats.rej_backlog++;
		*rej_reason = XRXE_CM_REJ_CONSUMER_DEFINED;
		return NULL;
	}
	id = xrxe_cmi_id_new(cm, listener->ps, listener->qp_type, NULL);
	if (!id) {
		*rej_reason = XRXE_CM_REJ_NO_RESOURCES;
		return NULL;
	}
	id->route.src.family = (uint16_t)fam;
	id->route.src.port = listener->route.src.port;
	memcpy(id->route.src.addr, hdr->dst_addr, 16);
	id->route.dst.family = (uint16_t)fam;
	id->route.dst.port = htons(hdr->port);
	memcpy(id->route.dst.addr, hdr->src_addr, 16);
	xrxe_cmi_addr_to_gid(&id->route.src, &id->route.sgid);
	xrxe_cmi_addr_to_gid(&id->route.dst, &id->route.dgid);
	id->av = *reply_av;
	id->av_set = true;
	id->tos = listener->tos;
	id->tos_set = listener->tos_set;
	id->ack_timeout = listener->ack_timeout;
	id->ack_timeout_set = listener->ack_timeout_set;
	id->cma = CMA_CONNECT;
	id->owner = cm->cfg.ops->new_child(cm->cfg.user, listener->owner, id);
	if (!id->owner) {
		cm->ndetached++; /* freed detached */
		xrxe_cmi_id_free(cm, id);
		*rej_reason = XRXE_CM_REJ_CONSUMER_DEFINED;
		return NULL;
	}
	id->listener = listener;
	listener->pending++;
	return id;
}

int xrxe_cm_connect(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_conn_param *p,
		    const struct xrxe_cm_ece *ece, uint64_t now)
{
	size_t max;

	if (id->cma != CMA_ROUTE_RESOLVED || !id->av_set)
		return -EINVAL;
	if (ece)
		id->ece_local = *ece;
	/* Offer selective repeat unless the application set ECE values of
	 * its own (rdma_set_local_ece): the REP says whether the peer took
	 * it (ib_cm.c). */
	id->sr_offered = id->qp_type == IBV_QPT_RC && cm->cfg.selective_repeat &&
			 !id->ece_local.vendor_id;
	if (id->sr_offered) {
		id->ece_local.vendor_id = XRXE_ECE_VENDOR_ID;
		id->ece_local.options = XRXE_ECE_OPT_SR;
	}
	if (id->qp_type == IBV_QPT_UD) {
		max = XRXE_CM_SIDR_REQ_PRIVATE - XRXE_CMA_HDR_SIZE;
		if (p->private_data_len > max)
			return -EINVAL;
		return xrxe_cmi_send_sidr_req(cm, id, p, now);
	}
	max = XRXE_CM_REQ_PRIVATE - XRXE_CMA_HDR_SIZE;
	if (p->private_data_len > max)
		return -EINVAL;
	return xrxe_cmi_send_req(cm, id, p, now);
}

/* Passive side: agree to selective repeat when the REQ offered it, this
 * device offers it and the application set no ECE values of its own; the
 * QP switches before the REP (with our ECE) goes out. Any other RC
 * connection is go-back-N, whatever the device default for QPs connected
 * without the CM. */
static void cma_sr_accept(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint32_t qpn)
{
	const struct xrxe_cm_ops *ops = cm->cfg.ops;
	bool on = id->qp_type == IBV_QPT_RC && cm->cfg.selective_repeat &&
		  !id->ece_local.vendor_id && id->ece_remote_set &&
		  id->ece_remote.vendor_id == XRXE_ECE_VENDOR_ID &&
		  (id->ece_remote.options & XRXE_ECE_OPT_SR);

	if (id->qp_type != IBV_QPT_RC || !ops->qp_sr)
		return;
	if (on && ops->qp_sr(cm->cfg.user, id->owner, qpn, true) == 0) {
		id->ece_local.vendor_id = XRXE_ECE_VENDOR_ID;
		id->ece_local.options = XRXE_ECE_OPT_SR;
		return;
	}
	ops->qp_sr(cm->cfg.user, id->owner, qpn, false);
}

int xrxe_cm_accept(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_conn_param *p,
		   const struct xrxe_cm_ece *ece, uint32_t qkey, uint64_t now)
{
	if (ece)
		id->ece_local = *ece;
	if (id->ib == IB_SIDR_REQ_RCVD)
		return xrxe_cmi_send_sidr_rep(cm, id, XRXE_CM_SIDR_SUCCESS, p->qp_num,
					      qkey ? qkey : CMA_UDP_QKEY, p->private_data,
					      p->private_data_len);
	if (id->ib != IB_REQ_RCVD && id->ib != IB_MRA_REQ_SENT)
		return -EINVAL;
	if (p->private_data_len > XRXE_CM_REP_PRIVATE)
		return -EINVAL;
	cma_sr_accept(cm, id, p->qp_num & 0xffffff);
	return xrxe_cmi_send_rep(cm, id, p, now);
}

int xrxe_cm_establish(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now)
{
	if (id->ib != IB_REP_RCVD)
		return -EINVAL;
	xrxe_cmi_send_rtu(cm, id, now);
	return 0;
}

int xrxe_cm_reject(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint16_t reason, const void *priv,
		   uint8_t priv_len, uint64_t now)
{
	if (id->ib == IB_SIDR_REQ_RCVD)
		return xrxe_cmi_send_sidr_rep(cm, id, XRXE_CM_SIDR_REJECT, 0, 0, priv, priv_len);
	switch (id->ib) {
	case IB_REQ_RCVD:
	case IB_MRA_REQ_SENT:
	case IB_REP_RCVD:
		break;
	default:
		return -EINVAL;
	}
	if (priv_len > XRXE_CM_REJ_PRIVATE)
		return -EINVAL;
	xrxe_cmi_send_rej(cm, id, reason ? reason : XRXE_CM_REJ_CONSUMER_DEFINED, priv, priv_len,
			  now);
	return 0;
}

int xrxe_cm_disconnect(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now)
{
	switch (id->ib) {
	case IB_ESTABLISHED:
		xrxe_cmi_send_dreq(cm, id, now);
		break;
	case IB_DREQ_RCVD:
		xrxe_cmi_send_drep(cm, id, now);
		break;
	case IB_DREQ_SENT:
	case IB_TIMEWAIT:
	case IB_IDLE:
		/* already leaving, or never connected: the kernel answers 0 once
		 * the ID has been connected (its return value is the QP's) */
		if (id->cma != CMA_CONNECT && id->cma != CMA_DISCONNECT)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	id->cma = CMA_DISCONNECT;
	return 0;
}

int xrxe_cm_notify(struct xrxe_cm *cm, struct xrxe_cm_id *id, enum ibv_event_type event,
		   uint64_t now)
{
	struct xrxe_cm_event_msg ev;

	(void)now;
	if (event != IBV_EVENT_COMM_EST)
		return 0;
	/* IBA 12.9.8.2.2: the first packet on the QP stands in for a lost
	 * RTU */
	if (id->ib != IB_REP_SENT && id->ib != IB_MRA_REP_RCVD)
		return id->ib == IB_ESTABLISHED ? 0 : -EINVAL;
	xrxe_cmi_stop_retry(id);
	id->ib = IB_ESTABLISHED;
	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_ESTABLISHED, 0);
	xrxe_cmi_emit(cm, id, &ev);
	return 0;
}

void xrxe_cmi_ah_attr(struct xrxe_cm *cm, const struct xrxe_cm_id *id, struct ibv_ah_attr *ah)
{
	int idx = cm->cfg.ops->gid_index(cm->cfg.user, &id->route.sgid);

	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = id->route.dgid;
	ah->grh.sgid_index = idx < 0 ? 0 : (uint8_t)idx;
	ah->grh.hop_limit = id->route.path.hop_limit ? id->route.path.hop_limit : 64;
	ah->grh.traffic_class = id->route.path.traffic_class;
	ah->grh.flow_label = be32toh(id->route.path.flow_label);
	ah->sl = id->route.path.sl;
	ah->port_num = 1;
}

static bool connected_state(enum ib_state s)
{
	switch (s) {
	case IB_REQ_RCVD:
	case IB_MRA_REQ_SENT:
	case IB_REP_RCVD:
	case IB_REP_SENT:
	case IB_MRA_REP_RCVD:
	case IB_ESTABLISHED:
		return true;
	default:
		return false;
	}
}

int xrxe_cm_init_qp_attr(struct xrxe_cm *cm, struct xrxe_cm_id *id, enum ibv_qp_state state,
			 struct ibv_qp_attr *attr, int *mask)
{
	bool conn = connected_state(id->ib);

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = state;
	*mask = IBV_QP_STATE;
	/* UD and not-yet-connected IDs: what rdma_cm knows before a REQ/REP
	 * (the kernel's cma_ib_init_qp_attr) */
	if (id->qp_type == IBV_QPT_UD || (state == IBV_QPS_INIT && !conn)) {
		if (state != IBV_QPS_INIT && id->qp_type != IBV_QPT_UD)
			return -EINVAL;
		attr->pkey_index = 0;
		attr->port_num = 1;
		*mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->qp_type == IBV_QPT_UD) {
			attr->qkey = CMA_UDP_QKEY;
			*mask |= IBV_QP_QKEY;
		} else {
			attr->qp_access_flags = 0;
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	}
	if (!conn)
		return -EINVAL;
	switch (state) {
	case IBV_QPS_INIT:
		/* the kernel's ib_cm_init_qp_attr */
		attr->pkey_index = 0;
		attr->port_num = 1;
		attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (id->conn_qp_type == IBV_QPT_RC && id->responder_resources)
			attr->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		*mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		return 0;
	case IBV_QPS_RTR:
		xrxe_cmi_ah_attr(cm, id, &attr->ah_attr);
		attr->path_mtu = (enum ibv_mtu)id->path_mtu;
		attr->dest_qp_num = id->remote_qpn;
		attr->rq_psn = id->seq_num;
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (id->conn_qp_type == IBV_QPT_RC) {
			attr->max_dest_rd_atomic = id->responder_resources;
			attr->min_rnr_timer = 0;
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		return 0;
	case IBV_QPS_RTS:
		attr->sq_psn = id->sq_psn;
		*mask |= IBV_QP_SQ_PSN;
		if (id->conn_qp_type == IBV_QPT_RC) {
			attr->timeout = id->ack_timeout_set ? id->ack_timeout : id->local_ack_timeout;
			attr->retry_cnt = id->retry_count;
			attr->rnr_retry = id->rnr_retry_count;
			attr->max_rd_atomic = id->initiator_depth;
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_MAX_QP_RD_ATOMIC;
		}
		return 0;
	default:
		return -EINVAL;
	}
}

int xrxe_cm_set_option(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint32_t level,
		       uint32_t optname, const void *val, uint32_t len)
{
	int v;

	(void)cm;
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
			if (len != sizeof(uint8_t))
				return -EINVAL;
			id->tos = *(const uint8_t *)val;
			id->tos_set = true;
			return 0;
		case RDMA_OPTION_ID_REUSEADDR:
		case RDMA_OPTION_ID_AFONLY:
			if (len != sizeof(int))
				return -EINVAL;
			memcpy(&v, val, sizeof(v));
			/* only before the ID is bound (the kernel: -EINVAL) */
			if (id->bound || id->cma != CMA_IDLE)
				return -EINVAL;
			if (optname == RDMA_OPTION_ID_REUSEADDR)
				id->reuseaddr = v != 0;
			else
				id->afonly = v != 0;
			return 0;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (len != sizeof(uint8_t))
				return -EINVAL;
			id->ack_timeout = *(const uint8_t *)val;
			id->ack_timeout_set = true;
			return 0;
		default:
			return -ENOSYS;
		}
	}
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
		return -EINVAL; /* RoCE: paths come from the IP route, not an SA */
	return -ENOSYS;
}

int xrxe_cm_join_mcast(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_addr *group,
		       uint32_t join_flags, uint64_t cookie)
{
	struct xrxe_cm_event_msg ev;
	union ibv_gid mgid;
	int idx;

	if (id->qp_type != IBV_QPT_UD || !id->bound || addr_any(&id->route.src))
		return -EINVAL;
	if (join_flags > RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return -EINVAL;
	if (group->family != AF_INET && group->family != AF_INET6)
		return -EAFNOSUPPORT;
	xrxe_cmi_addr_to_gid(group, &mgid);
	if (!xrxe_tp_gid_is_mcast(&mgid))
		return -EINVAL;
	for (unsigned i = 0; i < id->nmc; i++)
		if (addr_eq(&id->mc[i].group, group))
			return -EADDRINUSE;
	if (id->nmc == CMA_MAX_MCAST)
		return -ENOMEM;
	id->mc[id->nmc].group = *group;
	id->mc[id->nmc].cookie = cookie;
	id->nmc++;

	/* RoCE (the kernel's cma_iboe_join_multicast): no SA; the MGID is the
	 * group address, the Q_Key RDMA_UDP_QKEY, QPN 0xFFFFFF */
	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	ev.mc_cookie = cookie;
	ev.flags |= XRXE_CM_EV_UD;
	idx = cm->cfg.ops->gid_index(cm->cfg.user, &id->route.sgid);
	ev.param.ud.ah_attr.is_global = 1;
	ev.param.ud.ah_attr.grh.dgid = mgid;
	ev.param.ud.ah_attr.grh.sgid_index = idx < 0 ? 0 : (uint8_t)idx;
	ev.param.ud.ah_attr.grh.hop_limit = 64;
	ev.param.ud.ah_attr.grh.traffic_class = id->tos_set ? id->tos : 0;
	ev.param.ud.ah_attr.port_num = 1;
	ev.param.ud.qp_num = 0xffffff;
	ev.param.ud.qkey = CMA_UDP_QKEY;
	xrxe_cmi_emit(cm, id, &ev);
	return 0;
}

int xrxe_cm_leave_mcast(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_addr *group)
{
	(void)cm;
	for (unsigned i = 0; i < id->nmc; i++)
		if (addr_eq(&id->mc[i].group, group)) {
			id->mc[i] = id->mc[--id->nmc];
			return 0;
		}
	return -EADDRNOTAVAIL;
}

void xrxe_cm_query(const struct xrxe_cm_id *id, struct xrxe_cm_route *route)
{
	*route = id->route;
}

void xrxe_cm_device_removal(struct xrxe_cm *cm)
{
	struct xrxe_cm_event_msg ev;

	for (struct xrxe_cm_id *id = cm->ids; id; id = id->next) {
		if (!id->owner)
			continue;
		id->cma = CMA_DEVICE_REMOVAL;
		xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
		xrxe_cmi_emit(cm, id, &ev);
	}
}
