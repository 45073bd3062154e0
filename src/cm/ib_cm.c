// SPDX-License-Identifier: MIT
/*
 * The IB CM protocol (IBA chapter 12): the MADs a connection exchanges, in
 * and out, and the state changes they make (IBA 12.9, figures 162-165).
 *
 * Active side:  REQ -> (MRA) -> REP -> [application: QP to RTR/RTS] -> RTU.
 * Passive side: REQ -> [application: accept] -> REP -> (MRA) -> RTU.
 * Release:      DREQ -> DREP, then TimeWait on both sides (IBA 12.9.8.3.2).
 * UD:           SIDR_REQ -> SIDR_REP (IBA 12.11).
 *
 * Starting PSNs follow the kernel (cm.c, cma.c), which every Linux peer
 * expects: each side draws its own (seq_num) and uses it as the PSN its
 * receive queue expects; it sends it as the "starting PSN" of its REQ or REP,
 * and the other side takes that as its send queue's first PSN.
 *
 * Every message keeps the transaction ID the connection started with (the
 * REQ's, or the DREQ's for a DREP); a reply to a message that has no
 * connection takes the TID of what it answers.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "cm/cm_internal.h"
#include "util/log.h"

/* The QP's Local ACK Timeout for a path (the kernel's cm_ack_timeout): the
 * packet's round trip plus the CA's ACK delay, both as 4.096 us * 2^t, added
 * in log form (IBA 12.7.34, o9-...): 2^(plt+1) + 2^delay. */
static uint8_t ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time)
{
	int t = packet_life_time + 1;

	if (t >= ca_ack_delay)
		t += (ca_ack_delay >= t - 1);
	else
		t = ca_ack_delay + (t >= ca_ack_delay - 1);
	return (uint8_t)(t > 31 ? 31 : t);
}

static enum xrxe_cm_msg_ref ref_of(enum ib_state s)
{
	switch (s) {
	case IB_REQ_RCVD:
	case IB_MRA_REQ_SENT:
		return XRXE_CM_REF_REQ;
	case IB_REP_RCVD:
		return XRXE_CM_REF_REP;
	default:
		return XRXE_CM_REF_OTHER;
	}
}

static void ud_param(struct xrxe_cm *cm, struct xrxe_cm_id *id, struct xrxe_cm_event_msg *ev,
		     const void *priv, size_t len)
{
	ev->flags |= XRXE_CM_EV_UD;
	xrxe_cmi_ah_attr(cm, id, &ev->param.ud.ah_attr);
	if (len > XRXE_CM_PRIVATE_DATA_MAX)
		len = XRXE_CM_PRIVATE_DATA_MAX;
	memcpy(ev->param.ud.private_data, priv, len);
	ev->param.ud.private_data_len = (uint8_t)len;
}

static void conn_param(struct xrxe_cm_id *id, struct xrxe_cm_event_msg *ev, const void *priv,
		       size_t len)
{
	struct xrxe_cm_conn_param *c = &ev->param.conn;

	ev->flags |= XRXE_CM_EV_CONN;
	if (len > XRXE_CM_PRIVATE_DATA_MAX)
		len = XRXE_CM_PRIVATE_DATA_MAX;
	memcpy(c->private_data, priv, len);
	c->private_data_len = (uint8_t)len;
	c->responder_resources = id->responder_resources;
	c->initiator_depth = id->initiator_depth;
	c->flow_control = id->flow_control;
	c->retry_count = id->retry_count;
	c->rnr_retry_count = id->rnr_retry_count;
	c->srq = id->srq;
	c->qp_num = id->remote_qpn;
	c->qp_type = (uint8_t)id->conn_qp_type;
	if (id->ece_remote_set) {
		ev->flags |= XRXE_CM_EV_ECE;
		ev->ece = id->ece_remote;
		/* xrxe's own ECE (selective repeat) is the transport's
		 * business, settled between the two daemons (cma.c): the
		 * application sees a peer without ECE. librdmacm refuses a
		 * REP whose vendor ID is not the one it sent (its
		 * ucma_process_conn_resp_ece; src/rdmacm/conn.c does the
		 * same), and a passive librdmacm would echo the vendor ID
		 * back in its accept. */
		if (ev->ece.vendor_id == XRXE_ECE_VENDOR_ID)
			ev->ece = (struct xrxe_cm_ece){ 0 };
	}
}

/* --- active side ------------------------------------------------------------ */

int xrxe_cmi_send_req(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_conn_param *p,
		      uint64_t now)
{
	struct xrxe_cm_msg m;
	struct xrxe_cm_req *r = &m.req;
	struct xrxe_cma_hdr h = { .cma_version = XRXE_CMA_VERSION };
	const struct ibv_sa_path_rec *path = &id->route.path;

	id->local_comm_id = xrxe_cmi_new_comm_id(cm);
	id->service_id = xrxe_cma_service_id(id->ps, be16toh(id->route.dst.port));
	id->local_qpn = p->qp_num & 0xffffff;
	id->responder_resources = p->responder_resources;
	id->initiator_depth = p->initiator_depth;
	id->flow_control = p->flow_control;
	id->retry_count = p->retry_count > 7 ? 7 : p->retry_count;
	id->rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	id->srq = p->srq;
	id->conn_qp_type = id->qp_type;
	id->path_mtu = path->mtu;
	id->max_cm_retries = CMA_MAX_CM_RETRIES;
	id->remote_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT;
	id->local_ack_timeout = ack_timeout(cm->cfg.ca_ack_delay, path->packet_life_time);

	xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_REQ, xrxe_cmi_own_tid(cm, id));
	id->tid = m.hdr.tid;
	m.hdr.attr_mod = id->ece_local.options;
	r->local_comm_id = id->local_comm_id;
	r->vendor_id = id->ece_local.vendor_id & 0xffffff;
	r->service_id = id->service_id;
	/* the codec takes the GUID as a number; the config holds the
	 * device's __be64 */
	r->local_ca_guid = be64toh(cm->cfg.node_guid);
	r->local_qpn = id->local_qpn;
	r->responder_resources = id->responder_resources;
	r->initiator_depth = id->initiator_depth;
	r->remote_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT;
	r->transport_type = id->qp_type == IBV_QPT_UC ? XRXE_CM_TRANSPORT_UC : XRXE_CM_TRANSPORT_RC;
	r->flow_control = id->flow_control;
	r->starting_psn = id->seq_num;
	r->local_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT;
	r->retry_count = id->retry_count;
	r->pkey = 0xffff;
	r->path_mtu = path->mtu;
	r->rnr_retry_count = id->rnr_retry_count;
	r->max_cm_retries = CMA_MAX_CM_RETRIES;
	r->srq = id->srq;
	/* RoCE: no LIDs (permissive), the IP addresses as GIDs */
	r->primary.local_lid = 0xffff;
	r->primary.remote_lid = 0xffff;
	r->primary.local_gid = id->route.sgid;
	r->primary.remote_gid = id->route.dgid;
	r->primary.flow_label = be32toh(path->flow_label) & 0xfffff;
	r->primary.packet_rate = path->rate;
	r->primary.traffic_class = path->traffic_class;
	r->primary.hop_limit = path->hop_limit;
	r->primary.sl = path->sl;
	/* IBA 12.7.11: set when the path stays in the subnet, i.e. needs no
	 * router; the kernel's cm_format_req derives it from the hop limit
	 * (0 for RoCE's 64, as every REQ in rxe-cm.pcap shows) */
	r->primary.subnet_local = path->hop_limit <= 1;
	r->primary.local_ack_timeout = id->local_ack_timeout;

	h.ip_version = id->route.src.family == AF_INET6 ? 6 : 4;
	h.port = be16toh(id->route.src.port);
	memcpy(h.src_addr, id->route.src.addr, 16);
	memcpy(h.dst_addr, id->route.dst.addr, 16);
	xrxe_cma_hdr_build(&h, r->private_data);
	memcpy(r->private_data + XRXE_CMA_HDR_SIZE, p->private_data, p->private_data_len);

	id->ib = IB_REQ_SENT;
	id->cma = CMA_CONNECT;
	xrxe_cmi_send(cm, id, &m, true, now);
	return 0;
}

int xrxe_cmi_send_sidr_req(struct xrxe_cm *cm, struct xrxe_cm_id *id,
			   const struct xrxe_cm_conn_param *p, uint64_t now)
{
	struct xrxe_cm_msg m;
	struct xrxe_cma_hdr h = { .cma_version = XRXE_CMA_VERSION };

	id->local_comm_id = xrxe_cmi_new_comm_id(cm);
	id->service_id = xrxe_cma_service_id(id->ps, be16toh(id->route.dst.port));
	id->max_cm_retries = CMA_MAX_CM_RETRIES;
	id->remote_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT;
	xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_SIDR_REQ, xrxe_cmi_own_tid(cm, id));
	id->tid = m.hdr.tid;
	m.sidr_req.request_id = id->local_comm_id;
	m.sidr_req.pkey = 0xffff;
	m.sidr_req.service_id = id->service_id;
	h.ip_version = id->route.src.family == AF_INET6 ? 6 : 4;
	h.port = be16toh(id->route.src.port);
	memcpy(h.src_addr, id->route.src.addr, 16);
	memcpy(h.dst_addr, id->route.dst.addr, 16);
	xrxe_cma_hdr_build(&h, m.sidr_req.private_data);
	memcpy(m.sidr_req.private_data + XRXE_CMA_HDR_SIZE, p->private_data, p->private_data_len);
	id->ib = IB_SIDR_REQ_SENT;
	id->cma = CMA_CONNECT;
	xrxe_cmi_send(cm, id, &m, true, now);
	/* not a REQ's response timeout: the kernel's fixed SIDR wait */
	id->timeout_ns = CMA_SIDR_TIMEOUT_NS;
	id->deadline = now + id->timeout_ns;
	return 0;
}

void xrxe_cmi_send_rtu(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now)
{
	struct xrxe_cm_msg m;

	xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_RTU, id->tid);
	m.rtu.local_comm_id = id->local_comm_id;
	m.rtu.remote_comm_id = id->remote_comm_id;
	id->ib = IB_ESTABLISHED;
	/* kept in id->mad: a repeated REP (our RTU was lost) is answered with it */
	xrxe_cmi_send(cm, id, &m, false, now);
}

static void rx_rep(struct xrxe_cm *cm, const struct xrxe_cm_msg *msg, uint64_t now)
{
	const struct xrxe_cm_rep *rep = &msg->rep;
	struct xrxe_cm_id *id = xrxe_cmi_find_local(cm, rep->remote_comm_id);
	struct xrxe_cm_event_msg ev;
	bool sr;

	if (!id) {
		cm->stats.drop_unknown_id++;
		return;
	}
	switch (id->ib) {
	case IB_REQ_SENT:
	case IB_MRA_REQ_RCVD:
		break;
	case IB_ESTABLISHED:
		/* our RTU was lost: the peer repeats its REP (IBA 12.9.5.1) */
		if (rep->local_comm_id == id->remote_comm_id) {
			cm->stats.drop_duplicate++;
			xrxe_cmi_resend(cm, id);
			return;
		}
		/* fall through */
	default:
		cm->stats.drop_duplicate += id->ib == IB_REP_RCVD;
		cm->stats.drop_bad_state += id->ib != IB_REP_RCVD;
		return;
	}
	xrxe_cmi_stop_retry(id);
	id->remote_comm_id = rep->local_comm_id;
	id->remote_ca_guid = rep->local_ca_guid;
	id->remote_qpn = rep->local_qpn;
	id->sq_psn = rep->starting_psn;
	/* the REP speaks for the passive side: its responder resources are our
	 * initiator depth and the other way round (the kernel's cm_rep_handler) */
	id->initiator_depth = rep->responder_resources;
	id->responder_resources = rep->initiator_depth;
	id->rnr_retry_count = rep->rnr_retry_count;
	id->flow_control = rep->flow_control;
	id->srq = rep->srq;
	id->ece_remote.vendor_id = rep->vendor_id;
	id->ece_remote.options = msg->hdr.attr_mod;
	id->ece_remote_set = true;
	/* Selective repeat only if our REQ offered it and the REP took it
	 * (cma.c); otherwise go-back-N. Before the application hears of the
	 * REP, so before its QP sends anything. The passive side switched
	 * before its REP: if ours cannot (no memory, the QP already carried
	 * a packet or went away), the two ends would disagree -- a SACK our
	 * QP drops, a hole it never fills but by go-back-N -- so the
	 * connection is refused instead (REJ, and the application hears
	 * REJECTED, as for any REJ). */
	sr = id->sr_offered && rep->vendor_id == XRXE_ECE_VENDOR_ID &&
	     (msg->hdr.attr_mod & XRXE_ECE_OPT_SR);
	if (id->qp_type == IBV_QPT_RC && cm->cfg.ops->qp_sr &&
	    cm->cfg.ops->qp_sr(cm->cfg.user, id->owner, id->local_qpn, sr) && sr) {
		xrxe_cmi_send_rej(cm, id, XRXE_CM_REJ_NO_RESOURCES, NULL, 0, now);
		xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_NO_RESOURCES);
		xrxe_cmi_emit(cm, id, &ev);
		return;
	}
	id->ib = IB_REP_RCVD;
	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	conn_param(id, &ev, rep->private_data, XRXE_CM_REP_PRIVATE);
	xrxe_cmi_emit(cm, id, &ev);
}

static void rx_sidr_rep(struct xrxe_cm *cm, const struct xrxe_cm_msg *msg)
{
	const struct xrxe_cm_sidr_rep *rep = &msg->sidr_rep;
	struct xrxe_cm_id *id = xrxe_cmi_find_local(cm, rep->request_id);
	struct xrxe_cm_event_msg ev;

	if (!id) {
		cm->stats.drop_unknown_id++;
		return;
	}
	if (id->ib != IB_SIDR_REQ_SENT) {
		cm->stats.drop_bad_state++;
		return;
	}
	xrxe_cmi_stop_retry(id);
	id->ib = IB_IDLE;
	if (rep->status != XRXE_CM_SIDR_SUCCESS) {
		/* the kernel reports the SIDR status as it came */
		xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_UNREACHABLE, rep->status);
	} else if (rep->qkey != CMA_UDP_QKEY) {
		xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_UNREACHABLE, -EINVAL);
	} else {
		id->remote_qpn = rep->qpn;
		id->remote_qkey = rep->qkey;
		xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_ESTABLISHED, 0);
		ud_param(cm, id, &ev, rep->private_data, XRXE_CM_SIDR_REP_PRIVATE);
		ev.param.ud.qp_num = rep->qpn;
		ev.param.ud.qkey = rep->qkey;
	}
	xrxe_cmi_emit(cm, id, &ev);
}

/* --- passive side ----------------------------------------------------------- */

static struct xrxe_cm_id *find_remote(struct xrxe_cm *cm, uint32_t remote_comm_id, uint64_t guid)
{
	for (struct xrxe_cm_id *id = cm->ids; id; id = id->next)
		if (id->ib != IB_IDLE && id->remote_comm_id == remote_comm_id &&
		    id->remote_ca_guid == guid)
			return id;
	return NULL;
}

static struct xrxe_cm_id *find_remote_qpn(struct xrxe_cm *cm, uint32_t qpn, uint64_t guid)
{
	for (struct xrxe_cm_id *id = cm->ids; id; id = id->next)
		if ((id->ib == IB_ESTABLISHED || id->ib == IB_REP_SENT || id->ib == IB_MRA_REP_RCVD) &&
		    id->remote_qpn == qpn && id->remote_ca_guid == guid)
			return id;
	return NULL;
}

/* REJ for a REQ that gets no connection (IBA 12.6.7: the rejected
 * message's comm ID as the remote one, ours 0). */
static void reject_req(struct xrxe_cm *cm, const struct xrxe_av *av, const struct xrxe_cm_msg *msg,
		       uint16_t reason)
{
	struct xrxe_cm_msg m;

	xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_REJ, msg->hdr.tid);
	m.rej.remote_comm_id = msg->req.local_comm_id;
	m.rej.message_rejected = XRXE_CM_REF_REQ;
	m.rej.reason = reason;
	xrxe_cmi_send_once(cm, av, &m);
}

static void rx_dup_req(struct xrxe_cm *cm, struct xrxe_cm_id *id)
{
	cm->stats.drop_duplicate++;
	switch (id->ib) {
	case IB_MRA_REQ_SENT:
	case IB_REP_SENT:
	case IB_MRA_REP_RCVD:
		/* our answer was lost: say it again (IBA 12.9.5.2) */
		xrxe_cmi_resend(cm, id);
		break;
	default:
		break; /* still deciding (REQ_RCVD), or long past it */
	}
}

static void rx_req(struct xrxe_cm *cm, const struct xrxe_av *av, const struct xrxe_cm_msg *msg,
		   uint64_t now)
{
	const struct xrxe_cm_req *req = &msg->req;
	struct xrxe_cma_hdr h;
	struct xrxe_cm_id *id, *listener;
	struct xrxe_cm_event_msg ev;
	uint16_t reason = 0;

	(void)now;
	id = find_remote(cm, req->local_comm_id, req->local_ca_guid);
	if (id) {
		rx_dup_req(cm, id);
		return;
	}
	/* IBA 12.9.8.3.1: a REQ naming a QP that is still connected to us is
	 * a stale connection the peer has forgotten */
	if (find_remote_qpn(cm, req->local_qpn, req->local_ca_guid)) {
		cm->stats.rej_stale++;
		reject_req(cm, av, msg, XRXE_CM_REJ_STALE_CONN);
		return;
	}
	if (req->transport_type != XRXE_CM_TRANSPORT_RC && req->transport_type != XRXE_CM_TRANSPORT_UC) {
		reject_req(cm, av, msg, XRXE_CM_REJ_INVALID_TRANSPORT_TYPE);
		return;
	}
	if (xrxe_cma_hdr_parse(req->private_data, XRXE_CM_REQ_PRIVATE, &h) ||
	    !(listener = xrxe_cmi_find_listener(cm, req->service_id, &h))) {
		/* the kernel's answer when nobody listens (ref: rxe-cm.pcap) */
		cm->stats.rej_no_listener++;
		reject_req(cm, av, msg, XRXE_CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	/* a listener takes requests for its own QP type (the kernel's
	 * cma_ib_check_req_qp_type; its refusal becomes a consumer REJ) */
	if (listener->qp_type != (req->transport_type == XRXE_CM_TRANSPORT_UC ? IBV_QPT_UC
									  : IBV_QPT_RC)) {
		reject_req(cm, av, msg, XRXE_CM_REJ_CONSUMER_DEFINED);
		return;
	}
	id = xrxe_cmi_new_child(cm, listener, av, &h, &reason);
	if (!id) {
		reject_req(cm, av, msg, reason);
		return;
	}
	id->conn_qp_type = req->transport_type == XRXE_CM_TRANSPORT_UC ? IBV_QPT_UC : IBV_QPT_RC;
	id->local_comm_id = xrxe_cmi_new_comm_id(cm);
	id->remote_comm_id = req->local_comm_id;
	id->remote_ca_guid = req->local_ca_guid;
	id->service_id = req->service_id;
	id->tid = msg->hdr.tid;
	id->remote_qpn = req->local_qpn;
	id->sq_psn = req->starting_psn;
	/* seen from here (the kernel's cm_req_handler swaps them too) */
	id->initiator_depth = req->responder_resources;
	id->responder_resources = req->initiator_depth;
	id->path_mtu = req->path_mtu < cm->cfg.max_path_mtu ? req->path_mtu : cm->cfg.max_path_mtu;
	id->retry_count = req->retry_count;
	id->rnr_retry_count = req->rnr_retry_count;
	id->flow_control = req->flow_control;
	id->srq = req->srq;
	id->local_ack_timeout = req->primary.local_ack_timeout;
	id->max_cm_retries = req->max_cm_retries;
	id->remote_cm_response_timeout = req->local_cm_response_timeout;
	id->ece_remote.vendor_id = req->vendor_id;
	id->ece_remote.options = msg->hdr.attr_mod;
	id->ece_remote_set = true;
	id->route.sgid = req->primary.remote_gid;
	id->route.dgid = req->primary.local_gid;
	xrxe_cmi_fill_path(cm, id);
	id->route.path.mtu = id->path_mtu;
	/* the path is the REQ's, seen from here (the kernel's
	 * cm_format_paths_from_req): one flow label both ways, so both
	 * directions take the same RoCE UDP source port */
	id->route.path.flow_label = htobe32(req->primary.flow_label);
	id->route.path.traffic_class = req->primary.traffic_class;
	id->route.path.hop_limit = req->primary.hop_limit;
	id->route.path.sl = req->primary.sl;
	id->ib = IB_REQ_RCVD;

	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	/* the kernel hands over the whole field after the cma header */
	conn_param(id, &ev, req->private_data + XRXE_CMA_HDR_SIZE,
		   XRXE_CM_REQ_PRIVATE - XRXE_CMA_HDR_SIZE);
	cm->cfg.ops->event(cm->cfg.user, id->owner, listener->owner, &ev);
}

static void rx_sidr_req(struct xrxe_cm *cm, const struct xrxe_av *av, const struct xrxe_cm_msg *msg)
{
	const struct xrxe_cm_sidr_req *req = &msg->sidr_req;
	struct xrxe_cma_hdr h;
	struct xrxe_cm_id *id, *listener;
	struct xrxe_cm_event_msg ev;
	struct xrxe_cm_msg m;
	uint16_t reason = 0;

	/* a repeat while the application decides (IBA 12.11.1) */
	for (id = cm->ids; id; id = id->next)
		if (id->ib == IB_SIDR_REQ_RCVD && id->remote_comm_id == req->request_id &&
		    id->av.ip_version == av->ip_version &&
		    !memcmp(&id->av.daddr, &av->daddr, sizeof(av->daddr))) {
			cm->stats.drop_duplicate++;
			return;
		}
	id = NULL;
	if (!xrxe_cma_hdr_parse(req->private_data, XRXE_CM_SIDR_REQ_PRIVATE, &h) &&
	    (listener = xrxe_cmi_find_listener(cm, req->service_id, &h))) {
		/* SIDR is for UD listeners (cma_ib_check_req_qp_type): others
		 * reject it */
		if (listener->qp_type != IBV_QPT_UD)
			reason = XRXE_CM_REJ_CONSUMER_DEFINED;
		else
			id = xrxe_cmi_new_child(cm, listener, av, &h, &reason);
	}
	if (!id) {
		if (!reason)
			cm->stats.rej_no_listener++;
		xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_SIDR_REP, msg->hdr.tid);
		m.sidr_rep.request_id = req->request_id;
		m.sidr_rep.status = reason ? XRXE_CM_SIDR_REJECT : XRXE_CM_SIDR_UNSUPPORTED;
		m.sidr_rep.service_id = req->service_id;
		xrxe_cmi_send_once(cm, av, &m);
		return;
	}
	id->remote_comm_id = req->request_id;
	id->service_id = req->service_id;
	id->tid = msg->hdr.tid;
	xrxe_cmi_addr_to_gid(&id->route.src, &id->route.sgid);
	xrxe_cmi_addr_to_gid(&id->route.dst, &id->route.dgid);
	xrxe_cmi_fill_path(cm, id);
	id->ib = IB_SIDR_REQ_RCVD;
	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	ud_param(cm, id, &ev, req->private_data + XRXE_CMA_HDR_SIZE,
		 XRXE_CM_SIDR_REQ_PRIVATE - XRXE_CMA_HDR_SIZE);
	cm->cfg.ops->event(cm->cfg.user, id->owner, listener->owner, &ev);
}

int xrxe_cmi_send_rep(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_conn_param *p,
		      uint64_t now)
{
	struct xrxe_cm_msg m;
	struct xrxe_cm_rep *r = &m.rep;

	id->local_qpn = p->qp_num & 0xffffff;
	id->responder_resources = p->responder_resources;
	id->initiator_depth = p->initiator_depth;
	/* id->rnr_retry_count stays the REQ's: the RNR retry count a message
	 * carries is for its receiver's QP (IBA 12.7.26; the kernel's
	 * ib_send_cm_rep keeps cm_req_handler's) */
	xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_REP, id->tid);
	m.hdr.attr_mod = id->ece_local.options;
	r->local_comm_id = id->local_comm_id;
	r->remote_comm_id = id->remote_comm_id;
	r->local_qpn = id->local_qpn;
	r->vendor_id = id->ece_local.vendor_id & 0xffffff;
	r->starting_psn = id->seq_num;
	r->responder_resources = id->responder_resources;
	r->initiator_depth = id->initiator_depth;
	r->target_ack_delay = cm->cfg.ca_ack_delay;
	r->flow_control = p->flow_control;
	r->rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	r->srq = p->srq;
	r->local_ca_guid = be64toh(cm->cfg.node_guid);
	memcpy(r->private_data, p->private_data, p->private_data_len);
	xrxe_cmi_child_settled(id);
	id->ib = IB_REP_SENT;
	xrxe_cmi_send(cm, id, &m, true, now);
	return 0;
}

int xrxe_cmi_send_sidr_rep(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint8_t status,
			   uint32_t qpn, uint32_t qkey, const void *priv, uint8_t len)
{
	struct xrxe_cm_msg m;

	if (len > XRXE_CM_SIDR_REP_PRIVATE)
		return -EINVAL;
	xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_SIDR_REP, id->tid);
	m.sidr_rep.request_id = id->remote_comm_id;
	m.sidr_rep.status = status;
	m.sidr_rep.vendor_id = id->ece_local.vendor_id & 0xffffff;
	m.sidr_rep.service_id = id->service_id;
	if (status == XRXE_CM_SIDR_SUCCESS) {
		m.sidr_rep.qpn = qpn & 0xffffff;
		m.sidr_rep.qkey = qkey;
		id->local_qpn = qpn & 0xffffff;
	}
	if (len)
		memcpy(m.sidr_rep.private_data, priv, len);
	xrxe_cmi_child_settled(id);
	id->ib = IB_IDLE;
	xrxe_cmi_send_once(cm, &id->av, &m);
	return 0;
}

static void rx_rtu(struct xrxe_cm *cm, const struct xrxe_cm_msg *msg)
{
	struct xrxe_cm_id *id = xrxe_cmi_find_local(cm, msg->rtu.remote_comm_id);
	struct xrxe_cm_event_msg ev;

	if (!id) {
		cm->stats.drop_unknown_id++;
		return;
	}
	if (id->ib != IB_REP_SENT && id->ib != IB_MRA_REP_RCVD) {
		cm->stats.drop_duplicate += id->ib == IB_ESTABLISHED;
		cm->stats.drop_bad_state += id->ib != IB_ESTABLISHED;
		return;
	}
	xrxe_cmi_stop_retry(id);
	id->ib = IB_ESTABLISHED;
	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_ESTABLISHED, 0);
	xrxe_cmi_emit(cm, id, &ev);
}

/* --- both sides ------------------------------------------------------------- */

static void rx_mra(struct xrxe_cm *cm, const struct xrxe_cm_msg *msg, uint64_t now)
{
	const struct xrxe_cm_mra *mra = &msg->mra;
	struct xrxe_cm_id *id = xrxe_cmi_find_local(cm, mra->remote_comm_id);

	if (!id) {
		cm->stats.drop_unknown_id++;
		return;
	}
	if (mra->message_mraed == XRXE_CM_REF_REQ && id->ib == IB_REQ_SENT)
		id->ib = IB_MRA_REQ_RCVD;
	else if (mra->message_mraed == XRXE_CM_REF_REP && id->ib == IB_REP_SENT)
		id->ib = IB_MRA_REP_RCVD;
	else {
		cm->stats.drop_bad_state++;
		return;
	}
	/* IBA 12.6.6: wait the service timeout the peer asked for, then the
	 * retries start over */
	id->deadline = now + xrxe_cmi_timeout_ns(mra->service_timeout) +
		       2 * xrxe_cmi_timeout_ns(CMA_IBOE_PACKET_LIFETIME);
	id->retries_left = id->max_cm_retries ? id->max_cm_retries : CMA_MAX_CM_RETRIES;
}

static void rx_rej(struct xrxe_cm *cm, const struct xrxe_cm_msg *msg, uint64_t now)
{
	const struct xrxe_cm_rej *rej = &msg->rej;
	struct xrxe_cm_id *id = xrxe_cmi_find_local(cm, rej->remote_comm_id);
	struct xrxe_cm_event_msg ev;

	/* A REJ "timeout" comes from an active side that gave up before it
	 * learnt our comm ID (its remote comm ID is 0): it names itself by its
	 * own comm ID and, in the ARI, its CA GUID (IBA 12.6.7.2; the kernel's
	 * cm_acquire_rejected_id) */
	if (!id && rej->reason == XRXE_CM_REJ_TIMEOUT && rej->ari_length >= 8) {
		uint64_t guid;

		memcpy(&guid, rej->ari, sizeof(guid));
		id = find_remote(cm, rej->local_comm_id, be64toh(guid));
	}
	if (!id) {
		cm->stats.drop_unknown_id++;
		return;
	}
	switch (id->ib) {
	case IB_REQ_SENT:
	case IB_MRA_REQ_RCVD:
	case IB_REP_SENT:
	case IB_MRA_REP_RCVD:
	case IB_REQ_RCVD:
	case IB_MRA_REQ_SENT:
	case IB_REP_RCVD:
		break;
	case IB_ESTABLISHED:
		/* only a stale-connection REJ ends an established one */
		if (rej->reason == XRXE_CM_REJ_STALE_CONN)
			break;
		/* fall through */
	default:
		cm->stats.drop_bad_state++;
		return;
	}
	xrxe_cmi_stop_retry(id);
	xrxe_cmi_child_settled(id);
	if (rej->reason == XRXE_CM_REJ_STALE_CONN) {
		xrxe_cmi_enter_timewait(cm, id, now);
	} else {
		id->ib = IB_IDLE;
		if (!id->owner) {
			xrxe_cmi_id_free(cm, id);
			return;
		}
	}
	id->ece_remote.options = msg->hdr.attr_mod;
	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_REJECTED, rej->reason);
	conn_param(id, &ev, rej->private_data, XRXE_CM_REJ_PRIVATE);
	xrxe_cmi_emit(cm, id, &ev);
}

void xrxe_cmi_enter_timewait(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now)
{
	(void)cm;
	id->ib = IB_TIMEWAIT;
	id->retrying = false;
	/* IBA 12.9.8.3.2: long enough for every packet of the connection to
	 * have left the fabric; the kernel waits the path's Local ACK
	 * Timeout */
	id->deadline = now + xrxe_cmi_timeout_ns(id->local_ack_timeout ? id->local_ack_timeout
								    : CMA_IBOE_PACKET_LIFETIME + 1);
}

void xrxe_cmi_send_dreq(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now)
{
	struct xrxe_cm_msg m;

	xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_DREQ, xrxe_cmi_own_tid(cm, id));
	id->tid = m.hdr.tid;
	m.dreq.local_comm_id = id->local_comm_id;
	m.dreq.remote_comm_id = id->remote_comm_id;
	m.dreq.remote_qpn = id->remote_qpn;
	id->ib = IB_DREQ_SENT;
	xrxe_cmi_send(cm, id, &m, true, now);
}

/* A DREP for the DREQ of TID id->tid; no state change. */
static void drep_out(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now)
{
	struct xrxe_cm_msg m;

	xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_DREP, id->tid);
	m.drep.local_comm_id = id->local_comm_id;
	m.drep.remote_comm_id = id->remote_comm_id;
	xrxe_cmi_send(cm, id, &m, false, now);
}

void xrxe_cmi_send_drep(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now)
{
	drep_out(cm, id, now);
	xrxe_cmi_enter_timewait(cm, id, now);
}

static void rx_dreq(struct xrxe_cm *cm, const struct xrxe_av *av, const struct xrxe_cm_msg *msg,
		    uint64_t now)
{
	const struct xrxe_cm_dreq *dreq = &msg->dreq;
	struct xrxe_cm_id *id = xrxe_cmi_find_local(cm, dreq->remote_comm_id);
	struct xrxe_cm_event_msg ev;
	struct xrxe_cm_msg m;

	/* IBA 12.9.8.3: a DREQ for a connection we do not have (anymore) is
	 * still answered, so the peer can leave */
	if (!id || id->remote_comm_id != dreq->local_comm_id) {
		cm->stats.drop_unknown_id++;
		xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_DREP, msg->hdr.tid);
		m.drep.local_comm_id = dreq->remote_comm_id;
		m.drep.remote_comm_id = dreq->local_comm_id;
		xrxe_cmi_send_once(cm, av, &m);
		return;
	}
	/* the QPN must be ours (the kernel drops it otherwise) */
	if (dreq->remote_qpn != id->local_qpn) {
		cm->stats.drop_bad_state++;
		return;
	}
	id->tid = msg->hdr.tid;
	switch (id->ib) {
	case IB_ESTABLISHED:
	case IB_REP_SENT:
	case IB_MRA_REP_RCVD:
		xrxe_cmi_stop_retry(id);
		id->ib = IB_DREQ_RCVD;
		if (!id->owner) {
			xrxe_cmi_send_drep(cm, id, now);
			return;
		}
		break;
	case IB_DREQ_SENT:
		/* both ended it at once: answer, and wait no longer for ours */
		xrxe_cmi_stop_retry(id);
		xrxe_cmi_send_drep(cm, id, now);
		break;
	case IB_TIMEWAIT:
		/* our DREP was lost, or we came here by our own DREQ and its
		 * DREP and this DREQ crossed them: either way a DREP answers it,
		 * built afresh as the kernel's cm_dreq_handler does (what we
		 * sent last may be our DREQ) */
		cm->stats.drop_duplicate++;
		drep_out(cm, id, now);
		cm->stats.mad_resent++;
		return;
	case IB_DREQ_RCVD:
		cm->stats.drop_duplicate++;
		return;
	default:
		cm->stats.drop_bad_state++;
		return;
	}
	id->cma = CMA_DISCONNECT;
	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_DISCONNECTED, 0);
	xrxe_cmi_emit(cm, id, &ev);
}

static void rx_drep(struct xrxe_cm *cm, const struct xrxe_cm_msg *msg, uint64_t now)
{
	struct xrxe_cm_id *id = xrxe_cmi_find_local(cm, msg->drep.remote_comm_id);
	struct xrxe_cm_event_msg ev;

	if (!id) {
		cm->stats.drop_unknown_id++;
		return;
	}
	if (id->ib != IB_DREQ_SENT) {
		cm->stats.drop_duplicate += id->ib == IB_TIMEWAIT;
		cm->stats.drop_bad_state += id->ib != IB_TIMEWAIT;
		return;
	}
	xrxe_cmi_enter_timewait(cm, id, now);
	id->cma = CMA_DISCONNECT;
	xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_DISCONNECTED, 0);
	xrxe_cmi_emit(cm, id, &ev);
}

void xrxe_cmi_send_rej(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint16_t reason,
		       const void *priv, uint8_t len, uint64_t now)
{
	struct xrxe_cm_msg m;

	xrxe_cmi_msg_init(cm, &m, XRXE_CM_ATTR_REJ, id->tid);
	m.hdr.attr_mod = reason == XRXE_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED ? id->ece_local.options : 0;
	/* a request we never answered has not seen our comm ID: the kernel's
	 * cm_format_rej sends 0 then (the REJ is matched by the REQ's) */
	m.rej.local_comm_id = id->ib == IB_REQ_RCVD ? 0 : id->local_comm_id;
	m.rej.remote_comm_id = id->remote_comm_id;
	m.rej.message_rejected = ref_of(id->ib);
	m.rej.reason = reason;
	if (reason == XRXE_CM_REJ_TIMEOUT) {
		/* IBA 12.6.7.2: the ARI of a timeout REJ is our CA GUID */
		uint64_t g = cm->cfg.node_guid;

		memcpy(m.rej.ari, &g, 8);
		m.rej.ari_length = 8;
	}
	if (len > XRXE_CM_REJ_PRIVATE)
		len = XRXE_CM_REJ_PRIVATE;
	if (len)
		memcpy(m.rej.private_data, priv, len);
	xrxe_cmi_stop_retry(id);
	xrxe_cmi_child_settled(id);
	xrxe_cmi_send(cm, id, &m, false, now);
	id->ib = IB_IDLE;
}

void xrxe_cmi_timeout(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now)
{
	struct xrxe_cm_event_msg ev;

	if (id->ib == IB_TIMEWAIT) {
		id->deadline = UINT64_MAX;
		id->ib = IB_IDLE;
		if (!id->owner) {
			xrxe_cmi_id_free(cm, id);
			return;
		}
		xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		xrxe_cmi_emit(cm, id, &ev);
		return;
	}
	if (!id->retrying) {
		id->deadline = UINT64_MAX;
		return;
	}
	if (id->retries_left) {
		id->retries_left--;
		xrxe_cmi_resend(cm, id);
		id->deadline = now + id->timeout_ns;
		return;
	}
	/* IBA 12.9.x: no answer after every retry */
	cm->stats.timeouts++;
	id->retrying = false;
	id->deadline = UINT64_MAX;
	switch (id->ib) {
	case IB_DREQ_SENT:
		/* the peer is gone: leave anyway (the kernel's cma reports
		 * IB_CM_DREQ_ERROR as DISCONNECTED, -ETIMEDOUT) */
		xrxe_cmi_enter_timewait(cm, id, now);
		xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_DISCONNECTED, -ETIMEDOUT);
		break;
	case IB_REQ_SENT:
	case IB_MRA_REQ_RCVD:
	case IB_REP_SENT:
	case IB_MRA_REP_RCVD:
	case IB_SIDR_REQ_SENT:
		/* the kernel reports both as unreachable, -ETIMEDOUT */
		id->ib = IB_IDLE;
		xrxe_cmi_child_settled(id);
		if (!id->owner) {
			xrxe_cmi_id_free(cm, id);
			return;
		}
		xrxe_cmi_event_init(id, &ev, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	default:
		return;
	}
	xrxe_cmi_emit(cm, id, &ev);
}

void xrxe_cmi_rx_msg(struct xrxe_cm *cm, const struct xrxe_av *reply_av,
		     const struct xrxe_cm_msg *msg, uint64_t now)
{
	switch (msg->hdr.attr_id) {
	case XRXE_CM_ATTR_REQ:
		rx_req(cm, reply_av, msg, now);
		break;
	case XRXE_CM_ATTR_MRA:
		rx_mra(cm, msg, now);
		break;
	case XRXE_CM_ATTR_REJ:
		rx_rej(cm, msg, now);
		break;
	case XRXE_CM_ATTR_REP:
		rx_rep(cm, msg, now);
		break;
	case XRXE_CM_ATTR_RTU:
		rx_rtu(cm, msg);
		break;
	case XRXE_CM_ATTR_DREQ:
		rx_dreq(cm, reply_av, msg, now);
		break;
	case XRXE_CM_ATTR_DREP:
		rx_drep(cm, msg, now);
		break;
	case XRXE_CM_ATTR_SIDR_REQ:
		rx_sidr_req(cm, reply_av, msg);
		break;
	case XRXE_CM_ATTR_SIDR_REP:
		rx_sidr_rep(cm, msg);
		break;
	default:
		/* LAP/APR (alternate paths: RoCE has one path), ClassPortInfo */
		cm->stats.drop_unsupported++;
		break;
	}
}
