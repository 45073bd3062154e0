/* SPDX-License-Identifier: MIT */
/*
 * The connection manager: the IB CM protocol on QP1 (IBA chapter 12) and the
 * rdma_cm layer above it (port spaces, IP service IDs, the cma header), as a
 * sans-I/O state machine like the transport (docs/architecture.md; docs/rdmacm.md).
 *
 * Inputs:  CM MADs received on QP1 (with the address vector to answer them
 *          on), the requests of the librdmacm shim (bind, listen, connect,
 *          accept, ...) as the daemon's control socket passes them on, the
 *          outcome of address resolution (the daemon does the netlink part),
 *          and the current time.
 * Outputs: MADs to send (ops->send_mad), events for the IDs' owners
 *          (ops->event, as the records the shim reads from its event channel),
 *          and the next deadline (MAD retransmission, TimeWait).
 *
 * One struct xrxe_cm per device. Single-threaded, like the transport.
 *
 * Two state machines per ID, each with a name table for logs and `xrxe cm`:
 * the rdma_cm state (idle, bound, resolving, listening, connecting, ...) and
 * the IB CM state of its connection (IBA 12.9: REQ sent, REP received,
 * established, DREQ sent, TimeWait, SIDR, ...). An ID the owner destroys
 * while connected leaves the owner at once but lives on inside the CM until
 * its DREQ is answered and TimeWait has passed (IBA 12.9.8.3.2), so late or
 * repeated MADs for that connection are still answered right.
 */
#ifndef XRXE_CM_H
#define XRXE_CM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

#include "transport/transport.h" /* struct xrxe_av */
#include "xrxe/abi.h"
#include "xrxe/cm_abi.h"

struct xrxe_cm;
struct xrxe_cm_id;

struct xrxe_cm_ops {
	/* Send one 256-byte MAD from QP1 to QP1 of the peer at av (UD SEND,
	 * Q_Key 0x80010000, P_Key 0xffff). Loss is the CM's business: it
	 * retransmits. */
	void (*send_mad)(void *user, const struct xrxe_av *av, const uint8_t *mad);
	/* An event for an ID whose owner is owner (the value given at
	 * create, or returned by new_child). ev is complete except cookie,
	 * handle and listen_handle, which the caller fills from its owner
	 * objects. For CONNECT_REQUEST, owner is the new ID's and listener
	 * the listener's owner; else listener is NULL. */
	void (*event)(void *user, void *owner, void *listener, struct xrxe_cm_event_msg *ev);
	/* A connect request reached the listener with owner listener: give the
	 * new ID an owner (NULL: no resources, the request is rejected). */
	void *(*new_child)(void *user, void *listener, struct xrxe_cm_id *child);
	/* The device's GID table index of gid, or -1. */
	int (*gid_index)(void *user, const union ibv_gid *gid);
	/* 32 random bits (comm IDs, starting PSNs). */
	uint32_t (*random)(void *user);
	/* Selective repeat for the RC QP qpn of the ID owned by owner, as the
	 * REQ/REP exchange decided it (on or off): before the passive side's
	 * REP goes out, when the active side's REP arrives. 0 or -errno (the
	 * passive side then does not agree). NULL: not asked. */
	int (*qp_sr)(void *user, void *owner, uint32_t qpn, bool on);
};

/* Enhanced Connection Establishment (ECE: the REQ's and REP's vendor ID and
 * the MAD header's attribute modifier, as the kernel's ib_cm carries
 * them; docs/selective-repeat.md). xrxe's vendor ID is a value of the
 * IEEE's locally assigned (CID) form, not an assignment: a peer that is not
 * xrxe never matches it and answers with its own, or none. */
#define XRXE_ECE_VENDOR_ID 0x5a5258u /* 0x5A: CID form; "ZRX" */
#define XRXE_ECE_OPT_SR (1u << 0)    /* selective repeat (src/transport/sr.c) */

struct xrxe_cm_config {
	const struct xrxe_cm_ops *ops;
	void *user;
	uint64_t node_guid;       /* as on the wire (big-endian bytes), the device page's */
	enum ibv_mtu max_path_mtu; /* the port's active MTU */
	uint8_t ca_ack_delay;     /* the device's local_ca_ack_delay */
	uint32_t max_ids;         /* IDs of all owners together (0: 65536) */
	bool selective_repeat;    /* offer and accept it (ECE) on RC connections */
};

int xrxe_cm_create(const struct xrxe_cm_config *cfg, struct xrxe_cm **out);
/* Frees every ID, detached ones included; sends nothing. */
void xrxe_cm_destroy(struct xrxe_cm *cm);

/* --- IDs (rdma_create_id ... rdma_destroy_id) ------------------------------
 * Every call returns 0 or -errno (-EINVAL in a state where the call makes no
 * sense, as the kernel answers). */
int xrxe_cm_id_create(struct xrxe_cm *cm, uint32_t ps, enum ibv_qp_type qp_type, void *owner,
		      struct xrxe_cm_id **out);
/* The owner lets go: no more events. A connected ID sends DREQ (and lives
 * on until TimeWait ends), a pending request is rejected, a listener stops. */
void xrxe_cm_id_destroy(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now);
/* Hand the ID to another owner (rdma_migrate_id). */
void xrxe_cm_id_set_owner(struct xrxe_cm_id *id, void *owner);

/* Bind to a local address (the caller checked it is one of the device's,
 * or a wildcard). Port 0: an ephemeral port (IANA 32768-60999 like the
 * kernel's ip_local_port_range). -EADDRINUSE, -EINVAL (bound already). */
int xrxe_cm_bind(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_addr *addr);
/* Address resolution: the caller resolved dst's next hop. src is the local
 * address to use (the ID is bound to it, ephemeral port, if not bound yet);
 * av reaches the peer. Emits ADDR_RESOLVED. */
int xrxe_cm_addr_resolved(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_addr *src,
			  const struct xrxe_cm_addr *dst, const struct xrxe_av *av);
/* Before resolution is attempted: marks the ID as resolving (-EINVAL if it
 * cannot resolve now). */
int xrxe_cm_addr_query(struct xrxe_cm *cm, struct xrxe_cm_id *id);
/* Resolution failed: ADDR_ERROR with status. */
void xrxe_cm_addr_error(struct xrxe_cm *cm, struct xrxe_cm_id *id, int status);
/* RoCE has no SA: the path comes from the resolved addresses. Emits
 * ROUTE_RESOLVED. */
int xrxe_cm_resolve_route(struct xrxe_cm *cm, struct xrxe_cm_id *id);
int xrxe_cm_listen(struct xrxe_cm *cm, struct xrxe_cm_id *id, int backlog);
/* REQ (RC/UC) or SIDR_REQ (UD). */
int xrxe_cm_connect(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_conn_param *p,
		    const struct xrxe_cm_ece *ece, uint64_t now);
/* Passive: REP (RC/UC) or SIDR_REP (UD, qkey 0: RDMA_UDP_QKEY). */
int xrxe_cm_accept(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_conn_param *p,
		   const struct xrxe_cm_ece *ece, uint32_t qkey, uint64_t now);
/* Active, after CONNECT_RESPONSE: RTU (the application's QP is at RTS). */
int xrxe_cm_establish(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now);
/* REJ (reason 0: consumer defined) or SIDR_REP "rejected". */
int xrxe_cm_reject(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint16_t reason, const void *priv,
		   uint8_t priv_len, uint64_t now);
/* DREQ, or DREP to a DREQ received. */
int xrxe_cm_disconnect(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint64_t now);
/* rdma_notify: IBV_EVENT_COMM_EST on the passive side before the RTU came
 * (the first packet arrived) establishes the connection (IBA 12.9.8.2.2). */
int xrxe_cm_notify(struct xrxe_cm *cm, struct xrxe_cm_id *id, enum ibv_event_type event,
		   uint64_t now);
int xrxe_cm_init_qp_attr(struct xrxe_cm *cm, struct xrxe_cm_id *id, enum ibv_qp_state state,
			 struct ibv_qp_attr *attr, int *mask);
int xrxe_cm_set_option(struct xrxe_cm *cm, struct xrxe_cm_id *id, uint32_t level,
		       uint32_t optname, const void *val, uint32_t len);
/* Multicast on RoCE: no SA; MULTICAST_JOIN at once with the group's MGID. */
int xrxe_cm_join_mcast(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_addr *group,
		       uint32_t join_flags, uint64_t cookie);
int xrxe_cm_leave_mcast(struct xrxe_cm *cm, struct xrxe_cm_id *id, const struct xrxe_cm_addr *group);
void xrxe_cm_query(const struct xrxe_cm_id *id, struct xrxe_cm_route *route);
/* Device removal (the daemon stops): DEVICE_REMOVAL to every owned ID. */
void xrxe_cm_device_removal(struct xrxe_cm *cm);

/* --- QP1 and time ------------------------------------------------------------ */

/* A MAD received on QP1: payload (len bytes) of a UD SEND to QP 1 that
 * passed the transport's checks. reply_av is the way back to the sender
 * (the packet's addresses swapped). Malformed, unexpected or stale MADs are
 * counted and dropped, or answered as the IBA says. */
void xrxe_cm_rx(struct xrxe_cm *cm, const struct xrxe_av *reply_av, const uint8_t *mad, size_t len,
		uint64_t now);
/* Retransmissions, response timeouts, TimeWait. */
void xrxe_cm_tick(struct xrxe_cm *cm, uint64_t now);
uint64_t xrxe_cm_next_deadline(const struct xrxe_cm *cm);

/* --- Introspection (xrxe cm) ---------------------------------------------- */

struct xrxe_cm_stats {
	uint64_t mad_sent, mad_rcvd, mad_resent;
	uint64_t sent_by_attr[16], rcvd_by_attr[16]; /* attr_id - 0x10, REQ..APR */
	uint64_t drop_malformed[8]; /* by enum xrxe_mad_error */
	uint64_t drop_unknown_id;   /* no connection for the comm ID */
	uint64_t drop_bad_state;    /* the connection is in a state that takes no such MAD */
	uint64_t drop_duplicate;    /* a repeat answered or ignored */
	uint64_t drop_unsupported;  /* LAP, APR, ClassPortInfo, unknown SIDR */
	uint64_t rej_no_listener;   /* REJ "invalid service ID" / SIDR "unsupported" sent */
	uint64_t rej_backlog;       /* REJ: the listener's backlog was full */
	uint64_t rej_stale;         /* REJ "stale connection" */
	uint64_t timeouts;          /* MAD retries exhausted */
	uint64_t ids, listeners, detached; /* live now */
};
void xrxe_cm_get_stats(const struct xrxe_cm *cm, struct xrxe_cm_stats *st);
/* Counter names and values, in order, for text and JSON: fn per counter. */
void xrxe_cm_stats_foreach(const struct xrxe_cm_stats *st,
			   void (*fn)(void *arg, const char *name, uint64_t value), void *arg);

struct xrxe_cm_id_info {
	void *owner; /* NULL: detached (closing inside the CM) */
	uint32_t ps;
	enum ibv_qp_type qp_type;
	const char *cma_state, *ib_state;
	struct xrxe_cm_addr src, dst;
	uint32_t local_comm_id, remote_comm_id;
	uint32_t local_qpn, remote_qpn;
	uint64_t service_id;
	int backlog;        /* listeners */
	unsigned pending;   /* listeners: connect requests not yet accepted or rejected */
};
int xrxe_cm_id_foreach(struct xrxe_cm *cm, int (*fn)(void *arg, const struct xrxe_cm_id_info *),
		       void *arg);

#endif /* XRXE_CM_H */
