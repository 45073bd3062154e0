/* SPDX-License-Identifier: MIT */
/*
 * The librdmacm shim <-> daemon contract for connection management: the CM
 * requests on the control socket (ops XRXE_CTRL_CM_* of abi.h) and the event
 * records the daemon writes into an event channel.
 *
 * The split follows stock librdmacm and the kernel's ucma
 * (docs/rdmacm.md): the library keeps struct rdma_cm_id, drives the
 * application's QP through INIT/RTR/RTS with ibv_modify_qp using the
 * attributes CM_INIT_QP_ATTR computes, and the daemon -- which owns the
 * port's QP1 (GSI) as the kernel's ib_cm does -- runs the IB CM protocol, the
 * rdma_cm port spaces and listeners, and address and route resolution.
 *
 * Connections. The library opens one control connection per daemon (per xrxe
 * device) it uses; its first request is CM_OPEN (no verbs HELLO, no fds).
 * Every CM ID and event channel belongs to the connection that created it:
 * when the connection closes (exit, crash) its IDs are destroyed as if by
 * rdma_destroy_id -- connected peers get a DREQ, pending requests a REJ --
 * and its listeners release their service IDs.
 *
 * Event channels. rdma_create_event_channel() makes a SOCK_SEQPACKET
 * socketpair: channel->fd is one end (pollable, O_NONBLOCK as the
 * application sets it), the other end goes to each daemon the channel is used
 * with (CM_CREATE_CHANNEL, fd [0]), tagged with a cookie the library chooses.
 * The daemon writes one struct xrxe_cm_event_msg per event, non-blocking; a
 * full socket queues the event in the daemon (bounded per channel,
 * XRXE_CM_CHANNEL_BACKLOG; beyond it the channel is marked overrun and the
 * event dropped and counted), so nothing is lost while the application reads.
 * An event names its ID by (channel cookie, ID handle); the library maps that
 * back to its rdma_cm_id. Handles carry a generation that changes when a slot
 * is reused, so an event still queued for a destroyed ID names no live one
 * and is dropped by the library. The daemon sets O_NONBLOCK on the channel
 * end it receives; the library keeps its own end (to register the channel
 * with further daemons), so it never sees end of file there. When the daemon
 * stops cleanly it sends RDMA_CM_EVENT_DEVICE_REMOVAL for every ID first;
 * when it dies, the library sees its control connection fail (it watches
 * those while it waits for events) and reports DEVICE_REMOVAL itself.
 */
#ifndef XRXE_CM_ABI_H
#define XRXE_CM_ABI_H

#include <stdint.h>

#include <infiniband/sa.h>
#include <infiniband/verbs.h>

/* Private data an event can carry: REP's 196 and RTU's 224 are the largest
 * (IBA 12.6; docs/rdmacm.md has every message's limit). */
#define XRXE_CM_PRIVATE_DATA_MAX 224
/* Per channel: events queued in the daemon while the socket is full. */
#define XRXE_CM_CHANNEL_BACKLOG 4096
/* Largest listen backlog the daemon grants (rdma_listen(id, 0) means this). */
#define XRXE_CM_MAX_BACKLOG 1024

/* An IPv4 or IPv6 socket address in a fixed 24-byte form (the library
 * converts to and from struct sockaddr_in / sockaddr_in6). family 0 = unset. */
struct xrxe_cm_addr {
	uint16_t family;   /* AF_INET, AF_INET6 or 0 */
	uint16_t port;     /* network order, as in sockaddr_in */
	uint32_t scope_id; /* IPv6 link-local scope (sin6_scope_id) */
	uint8_t addr[16];  /* IPv4: the first 4 bytes; IPv6: all 16 */
};
_Static_assert(sizeof(struct xrxe_cm_addr) == 24, "cm addr layout");

/* What the library fills id->route with (rdma_cm_id.route). */
struct xrxe_cm_route {
	struct xrxe_cm_addr src, dst;
	union ibv_gid sgid, dgid; /* route.addr.addr.ibaddr */
	uint16_t pkey;            /* network order (0xffff) */
	uint8_t num_paths;        /* 0 until ROUTE_RESOLVED (or a connect request), then 1 */
	uint8_t pad;
	uint32_t pad2;
	struct ibv_sa_path_rec path; /* valid when num_paths is 1 */
};

/* Connection parameters (struct rdma_conn_param), both directions. */
struct xrxe_cm_conn_param {
	uint8_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint8_t qp_type; /* CONNECT: enum ibv_qp_type of the QP (RC or UC) */
	uint32_t qp_num;
	uint32_t pad;
	uint8_t private_data[XRXE_CM_PRIVATE_DATA_MAX];
};

/* UD parameters (struct rdma_ud_param): SIDR and multicast. */
struct xrxe_cm_ud_param {
	uint8_t private_data_len;
	uint8_t pad[3];
	uint32_t qp_num;
	uint32_t qkey;
	uint32_t pad2;
	struct ibv_ah_attr ah_attr;
	uint8_t private_data[XRXE_CM_PRIVATE_DATA_MAX];
};

/* Enhanced Connection Establishment (RDMACM_1.3, struct ibv_ece). */
struct xrxe_cm_ece {
	uint32_t vendor_id; /* 24 bits on the wire */
	uint32_t options;   /* the MAD's attribute modifier */
};

/* --- Requests (the header is struct xrxe_ctrl_hdr of abi.h) ---------------- */

/* CM_OPEN: the first request of a CM connection. -EPROTO on a version
 * mismatch. Reply: the same struct. */
struct xrxe_ctrl_cm_open {
	struct xrxe_ctrl_hdr hdr;
	uint32_t abi_version; /* XRXE_ABI_VERSION */
	uint32_t pad;
};

/* CM_CREATE_CHANNEL: fd [0] one end of a SOCK_SEQPACKET socketpair; events
 * for IDs of this channel carry cookie. Reply: struct xrxe_ctrl_handle.
 * CM_DESTROY_CHANNEL (struct xrxe_ctrl_handle): -EBUSY while IDs use it. */
struct xrxe_ctrl_cm_channel {
	struct xrxe_ctrl_hdr hdr;
	uint64_t cookie;
};

/* CM_CREATE_ID: ps enum rdma_port_space (TCP, UDP, IB, IPOIB), qp_type
 * enum ibv_qp_type (RC, UC, UD: rdma_create_id's choice by port space).
 * Reply: struct xrxe_ctrl_handle. CM_DESTROY_ID: struct xrxe_ctrl_handle;
 * a connected ID sends DREQ, a pending request REJ (as the kernel does). */
struct xrxe_ctrl_cm_create_id {
	struct xrxe_ctrl_hdr hdr;
	uint32_t channel; /* channel handle */
	uint32_t ps;
	uint32_t qp_type;
	uint32_t pad;
};

/* CM_BIND: addr is a local address of this daemon's interface or a wildcard
 * (INADDR_ANY / in6addr_any); port 0 takes an ephemeral port. -EADDRINUSE,
 * -EADDRNOTAVAIL (not our address), -EINVAL (bound already). Reply:
 * struct xrxe_ctrl_cm_query_reply (the bound address, port filled). */
struct xrxe_ctrl_cm_bind {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t pad;
	struct xrxe_cm_addr addr;
};

/* CM_RESOLVE_ADDR: src may be unset (family 0: the address the ID is bound
 * to, or the daemon picks its interface's address of dst's family); a src
 * given wins over a wildcard binding, whose port is kept. A loopback dst is
 * the library's to map to the device's own address. Answers at once; the
 * outcome is an event:
 * ADDR_RESOLVED (neighbour resolved, route filled with addresses and GIDs)
 * or ADDR_ERROR (status -EHOSTUNREACH, -ETIMEDOUT after timeout_ms). */
struct xrxe_ctrl_cm_resolve_addr {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t timeout_ms;
	struct xrxe_cm_addr src, dst;
};

/* CM_RESOLVE_ROUTE (struct xrxe_ctrl_cm_handle_arg, arg = timeout_ms):
 * ROUTE_RESOLVED (path filled) or ROUTE_ERROR. CM_LISTEN: arg = backlog
 * (0 or above XRXE_CM_MAX_BACKLOG: XRXE_CM_MAX_BACKLOG). CM_NOTIFY: arg =
 * enum ibv_event_type. CM_DISCONNECT, CM_ESTABLISH (rdma_establish: send
 * the RTU for an ID whose QP the application drives): arg unused.
 * CM_INIT_QP_ATTR: arg = enum ibv_qp_state, reply struct
 * xrxe_ctrl_cm_qp_attr_reply. CM_QUERY: reply struct
 * xrxe_ctrl_cm_query_reply. CM_MIGRATE_ID: arg = the new channel handle. */
struct xrxe_ctrl_cm_handle_arg {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t arg;
};

/* CM_CONNECT (REQ, or SIDR_REQ for UD IDs) and CM_ACCEPT (REP, or SIDR_REP).
 * private data limits (docs/rdmacm.md): connect 56 bytes on RDMA_PS_TCP/UDP
 * (92 minus the 36-byte cma header; 180 for SIDR), 92 on RDMA_PS_IB; accept
 * 196 (REP), 136 (SIDR_REP); larger is -EINVAL. ECE as rdma_set_local_ece
 * set it (vendor_id 0: none). */
struct xrxe_ctrl_cm_connect {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t pad;
	struct xrxe_cm_conn_param conn;
	struct xrxe_cm_ece ece;
	uint32_t qkey; /* UD accept: the Q_Key to report (0: RDMA_UDP_QKEY) */
	uint32_t pad2;
};

/* CM_REJECT: REJ (reason IB_CM_REJ_CONSUMER_DEFINED 28, or
 * IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED 35 with rdma_reject_ece) or a
 * SIDR_REP with status "rejected". Valid on a connect request not yet
 * accepted, and on the active side after CONNECT_RESPONSE (the library could
 * not bring its QP to RTR/RTS: CONNECT_ERROR). */
struct xrxe_ctrl_cm_reject {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint16_t reason; /* 0: consumer defined */
	uint8_t private_data_len;
	uint8_t pad;
	uint8_t private_data[XRXE_CM_PRIVATE_DATA_MAX];
};

/* CM_INIT_QP_ATTR reply: what rdma_init_qp_attr returns (the library feeds
 * it to ibv_modify_qp): INIT: pkey_index, port_num, qp_access_flags (RC/UC)
 * or qkey (UD); RTR: path (AV with the GIDs, sgid_index from the device's
 * table), path MTU, dest QPN, rq_psn, max_dest_rd_atomic, min_rnr_timer;
 * RTS: sq_psn, timeout, retry_cnt, rnr_retry, max_rd_atomic. -EINVAL in a
 * state where the attributes are not known yet. */
struct xrxe_ctrl_cm_qp_attr_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t attr_mask; /* enum ibv_qp_attr_mask */
	uint32_t pad;
	struct ibv_qp_attr attr;
};

/* CM_QUERY reply (also CM_BIND's). */
struct xrxe_ctrl_cm_query_reply {
	struct xrxe_ctrl_hdr hdr;
	struct xrxe_cm_route route;
};

/* CM_SET_OPTION (rdma_set_option): level RDMA_OPTION_ID or RDMA_OPTION_IB,
 * optname and value as rdma_cma.h defines them (TOS u8, REUSEADDR int,
 * AFONLY int, ACK_TIMEOUT u8, IB_PATH struct ibv_path_data[]); -EINVAL for a
 * bad length, -ENOSYS for an option the kernel does not know either. */
struct xrxe_ctrl_cm_set_option {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t level;
	uint32_t optname;
	uint32_t optlen;
	uint8_t optval[128];
};

/* CM_JOIN_MCAST / CM_LEAVE_MCAST: an IP multicast group on a UD ID (bound or
 * address-resolved). The MGID is the group address (IPv4-mapped for IPv4),
 * as the kernel derives it on RoCE; the event MULTICAST_JOIN carries
 * mc_cookie and the UD parameters (MGID AV, QPN 0xFFFFFF, Q_Key
 * RDMA_UDP_QKEY); the library attaches the ID's QP itself. */
struct xrxe_ctrl_cm_mcast {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t join_flags; /* enum rdma_cm_mc_join_flags */
	uint64_t mc_cookie;
	struct xrxe_cm_addr addr;
};

/* --- Events: one per message on the channel socket ------------------------ */

enum xrxe_cm_event_flags {
	XRXE_CM_EV_ROUTE = 1u << 0, /* route is valid: the library updates id->route */
	XRXE_CM_EV_CONN = 1u << 1,  /* param.conn is valid */
	XRXE_CM_EV_UD = 1u << 2,    /* param.ud is valid */
	XRXE_CM_EV_ECE = 1u << 3,   /* ece is valid */
};

struct xrxe_cm_event_msg {
	uint64_t cookie;  /* the channel's cookie (CM_CREATE_CHANNEL) */
	uint32_t handle;  /* the ID; CONNECT_REQUEST: the new ID (of the listener's connection) */
	uint32_t listen_handle; /* CONNECT_REQUEST: the listener; else XRXE_NO_HANDLE */
	uint32_t event;   /* enum rdma_cm_event_type */
	int32_t status;   /* as the kernel reports it: -errno, or the REJ reason (> 0) */
	uint32_t flags;   /* XRXE_CM_EV_* */
	uint32_t pad;
	uint64_t mc_cookie; /* MULTICAST_JOIN / MULTICAST_ERROR */
	struct xrxe_cm_route route;
	union {
		struct xrxe_cm_conn_param conn;
		struct xrxe_cm_ud_param ud;
	} param;
	struct xrxe_cm_ece ece;
};

#endif /* XRXE_CM_ABI_H */
