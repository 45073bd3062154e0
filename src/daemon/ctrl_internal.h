/* SPDX-License-Identifier: MIT */
/*
 * The control socket's internals, shared by ctrl.c (connections, dispatch),
 * ctrl_obj.c (the per-connection object table, rings, destroying objects),
 * ctrl_verbs.c and ctrl_ops.c (the verbs requests and the request table) and
 * ctrl_cm.c (the connection manager's requests and event channels).
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
#include "daemon/ring_slab.h"
#include "daemon/shm.h"

/* Handler result: the request is parked, no reply yet. */
#define CTRL_PARKED 1

enum obj_type {
	OBJ_NONE, OBJ_PD, OBJ_MR, OBJ_CQ, OBJ_QP, OBJ_AH, OBJ_CHANNEL, OBJ_SRQ, OBJ_MW,
	OBJ_CM_CHANNEL, OBJ_CM_ID, OBJ_XRCD, OBJ_FLOW, OBJ_WQ, OBJ_RWQ_IND_TBL, OBJ_TYPES
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
	/* an XRC target's handle (ctrl_xrc.c): the shared QP, its next holder */
	struct xrc_tgt *tgt;
	struct obj_qp *tgt_next;
	struct obj_rwq_ind_tbl *rss_tbl; /* an RSS QP's indirection table (ctrl_raw.c) */
};

/* An open of an XRC domain (ctrl_xrc.c). */
struct obj_xrcd {
	struct obj o;
	struct xrcd_ent *xrcd;
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
	struct xrxe_shm dbring; /* its SQ doorbell ring (xrxe/ring.h; base NULL before HELLO) */
	uint32_t db_cons;       /* private consumer of dbring */
	struct xrxe_ctrl *ctrl;
	struct conn *next, *prev;
	unsigned id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool hello;
	bool cm_open; /* CM_OPEN seen: a librdmacm connection */
	uint64_t hello_deadline; /* closed at this time unless hello or cm_open */
	int memfd;    /* registered memory (HELLO fd 0) */
	int async_fd; /* async event pipe (HELLO fd 1) */
	struct xrxe_odp *odp; /* on-demand paging (odp.c): NULL before ODP_OPEN */
	struct slot *slots;
	uint32_t *free_idx; /* stack of free slot indices, nslots - nobjs of them */
	uint32_t nslots, nobjs;
	uint16_t gen_base;
	uint32_t count[OBJ_TYPES];
	uint64_t ring_bytes;
	struct xrxe_slab_pool slabs; /* its small rings (ring_slab.h) */
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
	int netns_fd;     /* XRXE_NETNS_MARKER name held (-1: could not) */
	dev_t netns_dev;  /* our network namespace (stat of /proc/self/ns/net) */
	ino_t netns_ino;
	struct conn *conns;
	unsigned next_id;
	uint32_t ring_seq;
	struct xrxe_ctrl_stats st;
	uint64_t accept_resume; /* listening paused until then (0: listening) */
	union msgbuf rx;
	/* the connection manager (ctrl_cm.c) */
	struct xrxe_cm *cm;
	struct obj_cm_id *cm_resolving; /* IDs waiting for a neighbour */
	uint64_t cm_events, cm_event_drops, cm_mad_tx_fail;
	/* XRC domains by inode and shared target QPs (ctrl_xrc.c) */
	struct xrcd_ent *xrcds;
	struct xrc_tgt *tgts;
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

/* Per-daemon and per-connection ceilings: one application must not be able
 * to exhaust the daemon's descriptors, mappings or memory for the others. */
#define MAX_CONNS XRXE_CTRL_MAX_CONNS
/* Handles: gen << HANDLE_IDX_BITS | index (ctrl_obj.c). */
#define HANDLE_IDX_BITS 18
#define HANDLE_IDX_MASK ((1u << HANDLE_IDX_BITS) - 1)
#define HANDLE_GEN_MASK ((1u << (32 - HANDLE_IDX_BITS)) - 1)
/* index <= HANDLE_IDX_MASK - 1: a handle is never XRXE_NO_HANDLE */
#define MAX_OBJS_PER_CONN (HANDLE_IDX_MASK)
#define MAX_RING_BYTES_PER_CONN (1ull << 30)
/* Requests served per wake-up of one connection before the others (and the
 * data path) get their turn. */
#define REQS_PER_WAKE 32
/* Neighbour resolution: answer -EHOSTUNREACH after this long, retrying at
 * this interval meanwhile (ARP answers on a LAN take well under 1 ms; the
 * kernel itself gives up after 3 probes 1 s apart). */
#define RESOLVE_TIMEOUT_NS (1000ull * 1000 * 1000)
#define RESOLVE_RETRY_NS (5ull * 1000 * 1000)
/* A connection that has not said HELLO (or CM_OPEN) by then is closed: idle
 * connections must not hold the daemon's connection slots. */
#define HELLO_TIMEOUT_NS (5000ull * 1000 * 1000)
/* accept() ran out of descriptors: stop listening this long (the socket is
 * level-triggered, so retrying at once would spin). */
#define ACCEPT_PAUSE_NS (100ull * 1000 * 1000)

struct op_desc {
	const char *name;
	uint32_t len;      /* exact request size */
	uint8_t nfds;      /* exact fd count */
	bool before_hello; /* allowed as the first request */
	int (*fn)(struct conn *c, const void *req, int *fds, struct reply *r);
};
/* Every request, indexed by abi.h XRXE_CTRL_* (ctrl_ops.c). */
extern const struct op_desc xrxe_ctrli_ops[XRXE_CTRL_OP_COUNT];
extern const char *const xrxe_ctrli_obj_names[OBJ_TYPES];

uint32_t xrxe_ctrli_pow2_ceil(uint32_t v);
/* Live-object totals of the whole daemon, for stats. */
void xrxe_ctrli_count_adjust(struct xrxe_ctrl *ctrl, enum obj_type t, int d);
/* A ring for a connection, within its memory budget; and giving it back. */
int xrxe_ctrli_conn_ring(struct conn *c, const char *kind, uint32_t nslots, uint32_t elem,
			 struct xrxe_shm *shm);
void xrxe_ctrli_conn_ring_free(struct conn *c, struct xrxe_shm *shm);
/* Locate a ring in a reply (abi.h struct xrxe_ring_loc) and add its fd. */
void xrxe_ctrli_reply_ring(struct reply *r, struct xrxe_shm *shm, struct xrxe_ring_loc *loc);
/* Connection close: the slabs left once its objects are gone (kept when an
 * object leaked: its ring may still be in use). */
void xrxe_ctrli_conn_slabs_release(struct conn *c, bool leaked);
/* Map / unmap an MR window within the user's quota (mr_bytes, maps). */
int xrxe_ctrli_mr_map(struct conn *c, uint64_t addr, uint64_t length, int writable,
		      struct xrxe_mr_map *map);
void xrxe_ctrli_mr_unmap(struct conn *c, struct xrxe_mr_map *map);
/* Charge / release the user's quota (quota.h). */
int xrxe_ctrli_charge(struct conn *c, enum xrxe_quota_res res, uint64_t n);
void xrxe_ctrli_release(struct conn *c, enum xrxe_quota_res res, uint64_t n);
/* 0 when the peer of c lives in the daemon's network namespace, or is
 * root; else -EPERM (HELLO and CM_OPEN refuse it: a device belongs to its
 * interface's namespace). */
int xrxe_ctrli_netns_check(struct conn *c);
/* Destroy one object (explicit DESTROY_* and connection teardown). */
int xrxe_ctrli_destroy_obj(struct obj *o);

/* The verbs requests (ctrl_verbs.c, ctrl_ops.c) */
#define VERBS_OP(name) int xrxe_ctrli_op_##name(struct conn *c, const void *req, int *fds, struct reply *r)
VERBS_OP(hello);
VERBS_OP(alloc_pd);
VERBS_OP(dealloc_pd);
VERBS_OP(reg_mr);
VERBS_OP(rereg_mr);
VERBS_OP(dereg_mr);
VERBS_OP(alloc_mw);
VERBS_OP(dealloc_mw);
VERBS_OP(create_channel);
VERBS_OP(destroy_channel);
VERBS_OP(create_cq);
VERBS_OP(resize_cq);
VERBS_OP(destroy_cq);
VERBS_OP(create_qp);
VERBS_OP(modify_qp);
VERBS_OP(query_qp);
VERBS_OP(destroy_qp);
VERBS_OP(create_ah);
VERBS_OP(destroy_ah);
VERBS_OP(create_srq);
VERBS_OP(modify_srq);
VERBS_OP(query_srq);
VERBS_OP(destroy_srq);
VERBS_OP(mcast);
VERBS_OP(stats);
VERBS_OP(cc);
VERBS_OP(open_xrcd);
VERBS_OP(close_xrcd);
VERBS_OP(create_xrc_srq);
VERBS_OP(create_xrc_tgt);
VERBS_OP(open_qp);
VERBS_OP(odp_open);
VERBS_OP(import); /* ctrl_import.c */
VERBS_OP(create_flow);
VERBS_OP(destroy_flow);
VERBS_OP(create_wq);
VERBS_OP(modify_wq);
VERBS_OP(destroy_wq);
VERBS_OP(create_rwq_ind_tbl);
VERBS_OP(destroy_rwq_ind_tbl);
VERBS_OP(create_rss_qp);
VERBS_OP(create_tm_srq); /* ctrl_tm.c */
VERBS_OP(srq_op);
#undef VERBS_OP
/* ctrl_raw.c: raw packet QPs. 0 when the peer may create one (CAP_NET_RAW),
 * else -EPERM; a flow, a WQ, an indirection table go; an RSS QP lets go of
 * its table. */
int xrxe_ctrli_raw_permitted(struct conn *c);
int xrxe_ctrli_destroy_flow(struct obj *o);
int xrxe_ctrli_destroy_wq(struct obj *o);
int xrxe_ctrli_destroy_rwq_ind_tbl(struct obj *o);
void xrxe_ctrli_rss_qp_gone(struct obj_qp *qp);
/* CREATE_SRQ, CREATE_XRC_SRQ and CREATE_TM_SRQ (xrcdn 0, tm_tags 0 and cq
 * NULL: a basic SRQ; tm_tags: a TM SRQ's list size, cq its CQ) */
int xrxe_ctrli_srq_create(struct conn *c, const struct xrxe_ctrl_srq *q, uint32_t xrcdn,
			  uint32_t tm_tags, struct xrxe_tp_cq *cq, int *fds, struct reply *r);
/* ctrl_xrc.c: an XRC domain's open, a target QP's handle go */
int xrxe_ctrli_destroy_xrcd(struct obj_xrcd *o);
int xrxe_ctrli_xrc_tgt_put(struct obj_qp *qp);
void xrxe_ctrli_xrc_gc(struct xrxe_ctrl *ctrl);

/* odp.c: on-demand paging. The application's memory for xrxe_tp_mr_reg_odp
 * (NULL: no ODP_OPEN yet), and closing it at the connection's end (after its
 * regions are gone). */
void *xrxe_ctrli_odp_mem(struct conn *c);
void xrxe_ctrli_odp_close(struct conn *c);
/* REG_MR / REREG_MR of an ODP region (IBV_ACCESS_ON_DEMAND): the rest of
 * those requests once the handles are looked up and access computed. */
int xrxe_ctrli_odp_reg_mr(struct conn *c, struct obj_pd *pd, const struct xrxe_ctrl_reg_mr *m,
			  uint32_t access, struct reply *r);
int xrxe_ctrli_odp_rereg_mr(struct conn *c, struct obj_mr *mr, const struct xrxe_ctrl_rereg_mr *m,
			    uint32_t pdn, uint32_t access, struct reply *r);

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
