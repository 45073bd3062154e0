/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the CM's files: cm.c (device, ID table, timers,
 * statistics), ib_cm.c (the IB CM protocol: MADs in and out), cma.c (the
 * rdma_cm layer: addresses, ports, listeners, the application's requests).
 */
#ifndef XRXE_CM_INTERNAL_H
#define XRXE_CM_INTERNAL_H

#include "cm/cm.h"
#include "cm/mad.h"

#include <rdma/rdma_cma.h>

#define NS_PER_MS 1000000ull

/* The kernel's rdma_cm values for RoCE (cma.c; docs/rdmacm.md): CM response
 * timeout 20 (4.096 us * 2^20 = 4.3 s), 15 CM retries, packet lifetime 18.
 * 18, not the 16 of later kernels: the REQs of Linux 6.1 in
 * tests/golden/rxe-cm.pcap carry Local ACK Timeout 19, which is
 * cm_ack_timeout(rxe's CA ACK delay 15, 18); 16 would give 17. */
#define CMA_CM_RESPONSE_TIMEOUT 20
#define CMA_MAX_CM_RETRIES 15
#define CMA_IBOE_PACKET_LIFETIME 18
/* SIDR_REQ: the kernel's cma_resolve_ib_udp waits 1 << (20 - 8) ms a try. */
#define CMA_SIDR_TIMEOUT_NS ((1ull << (CMA_CM_RESPONSE_TIMEOUT - 8)) * NS_PER_MS)
/* RDMA_UDP_QKEY (rdma_cma.h): the Q_Key of UD IDs and multicast groups. */
#define CMA_UDP_QKEY 0x01234567u
/* Ephemeral ports, as the kernel's default ip_local_port_range. */
#define CMA_PORT_MIN 32768
#define CMA_PORT_MAX 60999
/* Multicast groups per ID (the device allows 20 memberships per port). */
#define CMA_MAX_MCAST 20

/* rdma_cm states (the kernel's enum rdma_cm_state). */
enum cma_state {
	CMA_IDLE,
	CMA_ADDR_QUERY,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_QUERY,
	CMA_ROUTE_RESOLVED,
	CMA_CONNECT,
	CMA_DISCONNECT,
	CMA_ADDR_BOUND,
	CMA_LISTEN,
	CMA_DEVICE_REMOVAL,
	CMA_DESTROYING,
	CMA_STATE_COUNT,
};

/* IB CM states (IBA 12.9 figures 162-165; the kernel's enum ib_cm_state). */
enum ib_state {
	IB_IDLE,
	IB_REQ_SENT,
	IB_REQ_RCVD,
	IB_MRA_REQ_SENT,
	IB_MRA_REQ_RCVD,
	IB_REP_SENT,
	IB_REP_RCVD,
	IB_MRA_REP_RCVD,
	IB_ESTABLISHED,
	IB_DREQ_SENT,
	IB_DREQ_RCVD,
	IB_TIMEWAIT,
	IB_SIDR_REQ_SENT,
	IB_SIDR_REQ_RCVD,
	IB_STATE_COUNT,
};

struct cm_mcast {
	struct xrxe_cm_addr group;
	uint64_t cookie;
};

struct xrxe_cm_id {
	struct xrxe_cm *cm;
	struct xrxe_cm_id *next, *prev; /* every ID, detached ones too */
	void *owner;                    /* NULL: detached */
	uint32_t ps;
	enum ibv_qp_type qp_type;
	enum cma_state cma;
	enum ib_state ib;

	/* rdma_cm */
	struct xrxe_cm_route route; /* src, dst, GIDs, path */
	struct xrxe_av av;          /* to the peer (valid from ADDR_RESOLVED / the REQ) */
	bool bound, av_set;
	bool reuseaddr;
	int afonly; /* -1: not set (IPv6 wildcard also takes IPv4, like the kernel's default) */
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout;
	bool ack_timeout_set;
	int backlog;           /* listeners */
	unsigned pending;      /* listeners: children not yet accepted/rejected */
	struct xrxe_cm_id *listener; /* children, while pending */
	struct cm_mcast mc[CMA_MAX_MCAST];
	unsigned nmc;

	/* IB CM connection */
	uint32_t local_comm_id, remote_comm_id;
	uint64_t remote_ca_guid;
	uint64_t service_id;
	uint64_t tid;      /* of the exchange in progress: the REQ's, or the last DREQ's */
	uint64_t own_tid;  /* of the messages this ID starts (REQ, SIDR_REQ, DREQ), 0 until then */
	uint32_t seq_num;  /* our starting PSN: our receive queue's (the kernel's seq_num) */
	uint32_t sq_psn;   /* the peer's starting PSN: our send queue's */
	uint32_t local_qpn, remote_qpn;
	uint32_t remote_qkey;
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count, flow_control, srq;
	uint8_t path_mtu;          /* enum ibv_mtu */
	uint8_t local_ack_timeout; /* QP timeout (IBA 12.7.34) */
	uint8_t max_cm_retries;
	uint8_t remote_cm_response_timeout;
	enum ibv_qp_type conn_qp_type;
	struct xrxe_cm_ece ece_local, ece_remote;
	bool ece_remote_set;
	bool sr_offered; /* our REQ offered selective repeat (ECE) */

	/* the last MAD sent, for retransmission and for answering repeats */
	uint8_t mad[XRXE_MAD_SIZE];
	bool mad_valid;
	bool retrying;        /* a response is awaited: resend at deadline */
	unsigned retries_left;
	uint64_t timeout_ns;  /* per try */
	uint64_t deadline;    /* UINT64_MAX: none (retransmission or TimeWait end) */
};

struct xrxe_cm {
	struct xrxe_cm_config cfg;
	struct xrxe_cm_id *ids;
	uint32_t nids, nlisteners, ndetached;
	uint16_t next_port; /* ephemeral port search start */
	uint64_t next_tid;
	struct xrxe_cm_stats stats;
};

/* cm.c */
const char *xrxe_cmi_cma_state_name(enum cma_state s);
const char *xrxe_cmi_ib_state_name(enum ib_state s);
struct xrxe_cm_id *xrxe_cmi_id_new(struct xrxe_cm *cm, uint32_t ps, enum ibv_qp_type qpt,
				   void *owner);
void xrxe_cmi_id_free(struct xrxe_cm *cm, struct xrxe_cm_id *id);
struct xrxe_cm_id *xrxe_cmi_find_local(struct xrxe_cm *cm, uint32_t local_comm_id);
uint32_t xrxe_cmi_new_comm_id(struct xrxe_cm *cm);
/* The ID's own transaction ID, drawn at its first request: the kernel's
 * cm_form_tid gives one per cm_id, so an active side's DREQ carries its
 * REQ's TID (tests/golden/rxe-cm.pcap frames 1 and 40). */
uint64_t xrxe_cmi_own_tid(struct xrxe_cm *cm, struct xrxe_cm_id *id);
/* Build msg into id->mad and send it; with retry, resend until answered
 * (max_cm_retries tries of timeout_ns each). */
void xrxe_cmi_send(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_msg *msg,
		   bool retry, uint64_t now);
/* Resend id->mad once (a repeat of what the peer already got). */
void xrxe_cmi_resend(struct xrxe_cm *cm, struct xrxe_cm_id *id);
/* Build and send without keeping it (answers for no connection). */
void xrxe_cmi_send_once(struct xrxe_cm *cm, const struct xrxe_av *av, const struct xrxe_cm_msg *msg);
void xrxe_cmi_stop_retry(struct xrxe_cm_id *id);
void xrxe_cmi_msg_init(struct xrxe_cm *cm, struct xrxe_cm_msg *msg, uint16_t attr, uint64_t tid);
/* A fresh event for id (route included); the caller adds params. */
void xrxe_cmi_event_init(const struct xrxe_cm_id *id, struct xrxe_cm_event_msg *ev,
			 enum rdma_cm_event_type type, int status);
void xrxe_cmi_emit(struct xrxe_cm *cm, struct xrxe_cm_id *id, struct xrxe_cm_event_msg *ev);
/* ns of 4.096 us * 2^t (IBA 12.7.x timeouts), capped at t = 31. */
uint64_t xrxe_cmi_timeout_ns(unsigned t);

/* ib_cm.c */
void xrxe_cmi_rx_msg(struct xrxe_cm *cm, const struct xrxe_av *reply_av,
		     const struct xrxe_cm_msg *msg, uint64_t now);
/* A try ran out: resend or give up (UNREACHABLE / TimeWait / free). */
void xrxe_cmi_timeout(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now);
int xrxe_cmi_send_req(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_conn_param *p,
		      uint64_t now);
int xrxe_cmi_send_sidr_req(struct xrxe_cm *cm, struct xrxe_cm_id *id,
			   const struct xrxe_cm_conn_param *p, uint64_t now);
int xrxe_cmi_send_rep(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_conn_param *p,
		      uint64_t now);
int xrxe_cmi_send_sidr_rep(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint8_t status,
			   uint32_t qpn, uint32_t qkey, const void *priv, uint8_t len);
void xrxe_cmi_send_rtu(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now);
void xrxe_cmi_send_rej(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint16_t reason,
		       const void *priv, uint8_t len, uint64_t now);
void xrxe_cmi_send_dreq(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now);
void xrxe_cmi_send_drep(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now);
void xrxe_cmi_enter_timewait(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now);

/* cma.c */
/* The listener for an incoming request: service ID -> port space and port,
 * then the cma header's destination address against bound addresses. */
struct xrxe_cm_id *xrxe_cmi_find_listener(struct xrxe_cm *cm, uint64_t service_id,
					  const struct xrxe_cma_hdr *hdr);
/* Child ID for a request on listener; NULL (and why) if refused. */
struct xrxe_cm_id *xrxe_cmi_new_child(struct xrxe_cm *cm, struct xrxe_cm_id *listener,
				      const struct xrxe_av *reply_av, const struct xrxe_cma_hdr *hdr,
				      uint16_t *rej_reason);
/* The child stops being a pending request of its listener. */
void xrxe_cmi_child_settled(struct xrxe_cm_id *id);
void xrxe_cmi_addr_to_gid(const struct xrxe_cm_addr *a, union ibv_gid *gid);
void xrxe_cmi_fill_path(struct xrxe_cm *cm, struct xrxe_cm_id *id);
void xrxe_cmi_ah_attr(struct xrxe_cm *cm, const struct xrxe_cm_id *id, struct ibv_ah_attr *ah);

#endif /* XRXE_CM_INTERNAL_H */
