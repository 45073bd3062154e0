/* SPDX-License-Identifier: MIT */
/*
 * The control socket's internals, shared by ctrl.c (connections, dispatch,
 * the verbs objects) and ctrl_cm.c (the connection manager's requests and
 * event channels): the per-connection object table and the reply builder.
 */
#ifndef XRXE_DAEMON_CTRL_INTERNAL_H
#define XRXE_DAEMON_CTRL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

#include "cm/cm.h"
#include "daemon/ctrl.h"
#include "daemon/evsrc.h"
#include "daemon/shm.h"

/* Handler result: the request is parked, no reply yet. */
#define CTRL_PARKED 1

enum obj_type {
	OBJ_NONE, OBJ_PD, OBJ_MR, OBJ_CQ, OBJ_QP, OBJ_AH, OBJ_CHANNEL, OBJ_SRQ, OBJ_MW,
	OBJ_CM_CHANNEL, OBJ_CM_ID, OBJ_TYPES
};


struct conn;
struct obj_cm_id;

/* Common head of every object; the core's user pointers point here. */
struct obj {
	uint8_t type; /* enum obj_type */
	uint32_t handle;
	struct conn *conn;
};

struct obj_pd {
	struct obj o;
	uint32_t pdn;
};

struct obj_mr {
	struct obj o;
	uint32_t lkey, rkey;
	uint64_t addr, length, iova; /* the application's range (for REREG_MR) */
	uint32_t access;
	struct xrxe_mr_map map;
};

struct obj_mw {
	struct obj o;
	uint32_t mw; /* the core's window handle */
};

struct obj_channel {
	struct obj o;
	int fd;        /* write end of the application's pipe */
	uint32_t refs; /* CQs using it */
};

struct obj_cq {
	struct obj o;
	struct xrxe_tp_cq *cq;
	struct xrxe_shm ring;
	struct obj_channel *ch;
};

struct obj_qp {
	struct obj o;
	struct xrxe_tp_qp *qp;
	uint32_t qpn;
	struct xrxe_shm sq, rq;
};

struct obj_ah {
	struct obj o;
	uint32_t ah;
};

struct obj_srq {
	struct obj o;
	struct xrxe_tp_srq *srq;
	struct xrxe_shm ring;
};

struct slot {
	struct obj *obj;
	uint16_t gen; /* bumped on reuse: a stale handle misses */
};

union msgbuf {
	struct xrxe_ctrl_hdr hdr;
	uint8_t raw[XRXE_MAX_CTRL_MSG + 1]; /* + 1: an oversized message shows as truncated */
	uint64_t align;
};

struct conn {
	struct xrxe_evsrc ev; /* the connection's socket */
	struct xrxe_evsrc db; /* its doorbell eventfd (fd -1 before HELLO) */
	struct xrxe_ctrl *ctrl;
	struct conn *next, *prev;
	unsigned id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool hello;
	bool cm_open; /* CM_OPEN seen: a librdmacm connection */
	int memfd;    /* registered memory (HELLO fd 0) */
	int async_fd; /* async event pipe (HELLO fd 1) */
	struct slot *slots;
	uint32_t *free_idx; /* stack of free slot indices, nslots - nobjs of them */
	uint32_t nslots, nobjs;
	uint16_t gen_base;
	uint32_t count[OBJ_TYPES];
	uint64_t ring_bytes;
	uint64_t requests;
	/* parked request (neighbour resolution) */
	union msgbuf *park_msg;
	size_t park_len;
	uint64_t park_deadline, park_retry;
};

struct xrxe_ctrl {
	struct xrxe_evsrc ev; /* listening socket */
	struct xrxe_ctrl_config cfg;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char lock_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
	int lock_fd;
	struct conn *conns;
	unsigned next_id;
	uint32_t ring_seq;
	struct xrxe_ctrl_stats st;
	union msgbuf rx;
	/* the connection manager (ctrl_cm.c) */
	struct xrxe_cm *cm;
	struct obj_cm_id *cm_resolving; /* IDs waiting for a neighbour */
	uint64_t cm_events, cm_event_drops, cm_mad_tx_fail;
};

struct reply {
	union {
		struct xrxe_ctrl_hdr hdr;
		uint8_t raw[XRXE_MAX_CTRL_MSG];
		uint64_t align;
	} u;
	size_t len;
	int fds[XRXE_MAX_CTRL_FDS];
	unsigned nfds;
	unsigned owned; /* bit i: fds[i] is closed once sent (or not) */
};

#define REPLY(r, type) ((type *)(r)->u.raw)

uint64_t xrxe_ctrli_now_ns(void);
struct obj *xrxe_ctrli_obj_lookup(struct conn *c, uint32_t handle, enum obj_type type);
/* A zeroed object of size bytes with a handle reserved for it (-ENOSPC past
 * the connection's object limit). */
void *xrxe_ctrli_obj_new(struct conn *c, enum obj_type type, size_t size, int *err);
void xrxe_ctrli_obj_free(struct obj *o);
void xrxe_ctrli_reply_len(struct reply *r, size_t len);
void xrxe_ctrli_reply_fd(struct reply *r, int fd, bool owned);

/* ctrl_cm.c: the CM requests (abi.h XRXE_CTRL_CM_*, include/xrxe/cm_abi.h) */
int xrxe_ctrli_cm_open(struct xrxe_ctrl *ctrl);
void xrxe_ctrli_cm_close(struct xrxe_ctrl *ctrl);
int xrxe_ctrli_destroy_cm_obj(struct obj *o);
uint64_t xrxe_ctrli_cm_deadline(const struct xrxe_ctrl *ctrl);
void xrxe_ctrli_cm_tick(struct xrxe_ctrl *ctrl, uint64_t now);
#define CM_OP(name) int xrxe_ctrli_op_cm_##name(struct conn *c, const void *req, int *fds, struct reply *r)
CM_OP(open);
CM_OP(create_channel);
CM_OP(destroy_channel);
CM_OP(create_id);
CM_OP(destroy_id);
CM_OP(bind);
CM_OP(resolve_addr);
CM_OP(resolve_route);
CM_OP(listen);
CM_OP(connect);
CM_OP(accept);
CM_OP(reject);
CM_OP(disconnect);
CM_OP(establish);
CM_OP(init_qp_attr);
CM_OP(notify);
CM_OP(set_option);
CM_OP(join_mcast);
CM_OP(leave_mcast);
CM_OP(migrate_id);
CM_OP(query);
#undef CM_OP

#endif /* XRXE_DAEMON_CTRL_INTERNAL_H */
