/* SPDX-License-Identifier: MIT */
/*
 * The control socket /run/xrxe/IFACE.sock (abi.h "Control protocol"): accepts
 * applications (SOCK_SEQPACKET, SO_PEERCRED recorded), answers their verbs
 * requests against the transport core, and owns what each connection
 * creates. Handles are connection-local indices into a per-connection object
 * table, so an application can only ever name its own objects; when the
 * connection closes (exit or crash) every QP, AH, MR, CQ, channel and PD it
 * owns is destroyed and every fd and mapping released.
 *
 * Everything runs on the daemon's event-loop thread; nothing blocks: a
 * MODIFY_QP / CREATE_AH whose neighbour is being resolved parks its
 * connection (no further requests are read from it) and is retried from
 * xrxe_ctrl_tick() until it resolves or ~1 s has passed.
 */
#ifndef XRXE_DAEMON_CTRL_H
#define XRXE_DAEMON_CTRL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#include "daemon/devpage.h"
#include "daemon/netlink.h"
#include "daemon/quota.h"
#include "transport/transport.h"

struct xrxe_ctrl;

struct xrxe_ctrl_config {
	const char *ifname;
	int epfd; /* the event loop's epoll: registrations carry struct xrxe_evsrc * */
	struct xrxe_tp *tp;
	struct xrxe_devpage *dp;
	struct xrxe_nl *nl;
	uint32_t max_cq; /* CQs of all connections together (the core has no limit) */
	uint32_t max_srq; /* SRQs of all connections together (0: no limit) */
	bool cm_selective_repeat; /* the CM offers/accepts selective repeat (ECE) */
	/* Per-user quotas (quota.h), created and destroyed by the caller. */
	struct xrxe_quota *quota;
	/* STATS: write the report (abi.h XRXE_STATS_F_* flags) to out for the
	 * user uid (the per-QP report shows an ordinary user its own QPs only,
	 * xrxe_ctrl_qp_visible). */
	void (*stats)(void *user, FILE *out, unsigned flags, uid_t uid);
	void *user;
};

/* Create /run/xrxe (0755), take the interface's lock, replace a stale socket
 * of a crashed daemon, bind and listen (0666: every connection is isolated).
 * -EADDRINUSE if another daemon serves the interface. 0 or -errno (logged). */
int xrxe_ctrl_open(const struct xrxe_ctrl_config *cfg, struct xrxe_ctrl **out);
/* Close every connection (full cleanup), remove the socket file. */
void xrxe_ctrl_close(struct xrxe_ctrl *ctrl);

/* Parked requests (neighbour resolution): when to call xrxe_ctrl_tick next
 * (UINT64_MAX: nothing parked), and the retry itself. */
uint64_t xrxe_ctrl_next_deadline(const struct xrxe_ctrl *ctrl);
/* SQ doorbells (xrxe/ring.h, ctrl_doorbell.c): hand every QP named in the
 * connections' doorbell rings to the transport (xrxe_tp_qp_doorbell).
 * Returns the QPs handed over. pending: true while some ring holds one (for
 * the sleep protocol, checked after publishing daemon_sleeping). */
unsigned xrxe_ctrl_doorbells(struct xrxe_ctrl *ctrl);
bool xrxe_ctrl_doorbells_pending(const struct xrxe_ctrl *ctrl);
void xrxe_ctrl_tick(struct xrxe_ctrl *ctrl, uint64_t now_ns);

/* Transport callbacks (struct xrxe_tp_ops): cq_user / obj_user are the user
 * pointers ctrl gave the core. */
void xrxe_ctrl_cq_event(struct xrxe_ctrl *ctrl, void *cq_user);
void xrxe_ctrl_async_event(struct xrxe_ctrl *ctrl, enum ibv_event_type type, void *obj_user);
/* Port events (PORT_ACTIVE, PORT_ERR, GID_CHANGE) to every connection. */
void xrxe_ctrl_port_event(struct xrxe_ctrl *ctrl, enum ibv_event_type type);
/* ops->odp_rw (odp.c): an on-demand-paging region's bytes, read or written
 * in the application's address space through its /proc/self/mem. */
int xrxe_daemon_odp_rw(void *user, void *mem, uint64_t addr, void *buf, uint32_t n, bool write);

/* The connection manager (ctrl_cm.c). A MAD that arrived on QP1 (the
 * transport's gsi_rx); DEVICE_REMOVAL to every CM ID (the daemon stops);
 * `xrxe cm`'s report of IDs and counters. */
void xrxe_ctrl_cm_rx(struct xrxe_ctrl *ctrl, const struct xrxe_pkt *pkt, uint64_t now);
void xrxe_ctrl_cm_device_removal(struct xrxe_ctrl *ctrl);
/* An ordinary uid sees the counters and its own IDs only. */
void xrxe_ctrl_cm_report(struct xrxe_ctrl *ctrl, FILE *out, bool json, uid_t uid);

/* Connections of all users together (root keeps a quarter, quota.h). */
#define XRXE_CTRL_MAX_CONNS 1024

/* May uid see QP qpn in `xrxe qp`? Root sees every QP, an ordinary user the
 * QPs of its own connections: QPNs and PSNs are what a forged packet needs. */
bool xrxe_ctrl_qp_visible(const struct xrxe_ctrl *ctrl, uint32_t qpn, uid_t uid);

/* Shown by `xrxe stats` through one table (xrxed_stats.c CTRL_STATS): a
 * field added here and not there fails the build. No padding: the table's
 * check sums the field sizes. */
struct xrxe_ctrl_stats {
	uint64_t accepted, closed, refused;
	uint64_t hello_timeouts; /* closed: no HELLO or CM_OPEN in time */
	uint64_t accept_paused;  /* accept() hit EMFILE/ENFILE: listening paused */
	uint64_t requests, failed_requests, bad_requests; /* bad: malformed or bad handle */
	uint64_t cq_events, cq_event_drops, async_events, async_drops;
	/* SQ doorbells taken (ctrl_doorbell.c); of them naming no QP of the
	 * connection (destroyed meanwhile, or made up); ring overflows */
	uint64_t doorbells, doorbell_bad, doorbell_overflows;
	uint32_t conns;
	uint32_t pds, mrs, cqs, qps, ahs, channels, srqs; /* live objects, all connections */
};
void xrxe_ctrl_get_stats(const struct xrxe_ctrl *ctrl, struct xrxe_ctrl_stats *st);

#endif /* XRXE_DAEMON_CTRL_H */
