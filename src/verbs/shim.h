/* SPDX-License-Identifier: MIT */
/*
 * Internals of the verbs shim (libibverbs.so.1 for xrxe).
 *
 * Visibility: the shim is compiled with -fvisibility=hidden. <infiniband/
 * verbs.h> is included with default visibility pushed, so every verbs API
 * function we define with the header's own prototype is exported (and typed
 * by the header); the version script then puts each name in its node.
 * Symbols that verbs.h does not declare (sysfs helpers, kernel-ABI copies,
 * PRIVATE_34 provider entry points) are declared below with XRXE_API, and
 * the compat aliases (name@IBVERBS_1.0) with XRXE_COMPAT.
 */
#ifndef XRXE_VERBS_SHIM_H
#define XRXE_VERBS_SHIM_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(default)
#include <infiniband/verbs.h>
#include <infiniband/sa.h>
#pragma GCC visibility pop

/* verbs.h turns these into macros around inline helpers; we define the real
 * exported functions (docs/facts/verbs-abi.md §5.3 pitfall 5). */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_get_device_list

#include "xrxe/abi.h"
#include "xrxe/ring.h"

#define XRXE_API __attribute__((visibility("default")))
/* A non-default version of an exported name: the C symbol stays local (the
 * version script's "local: *"), only name@VER is exported. */
#define XRXE_COMPAT(sym) __attribute__((visibility("default"), symver(sym)))

#define xrxe_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* --- logging and the control connection: src/shim/ctrl.h (shared with the
 * RDMA CM shim) ------------------------------------------------------------- */
#include "shim/ctrl.h"

/* --- devices (device.c) ---------------------------------------------------------- */
struct xrxe_device {
	struct ibv_device dev;
	/* Where rdma-core's struct verbs_device keeps its ops pointer: the real
	 * libmlx5/libefa compare it with their own (§5.3 pitfall 2). */
	const void *verbs_ops;
	char ifname[32];
	char sock_path[108];
	int index;
	bool present;
	_Atomic uint64_t guid_be; /* 0 until learnt from a device page */
};
_Static_assert(offsetof(struct xrxe_device, verbs_ops) == 664, "verbs_device ops at +664");

static inline struct xrxe_device *to_xdev(struct ibv_device *d)
{
	return xrxe_container_of(d, struct xrxe_device, dev);
}

/* --- context (context.c) ---------------------------------------------------------- */
enum xrxe_obj_type { XRXE_OBJ_CQ = 1, XRXE_OBJ_QP, XRXE_OBJ_SRQ };

/* Handle -> object, for completion and async events. */
struct xrxe_obj {
	struct xrxe_obj *next, *prev; /* ctx->objs (O(1) removal: 65 536 QPs) */
	struct xrxe_obj *hnext;       /* ctx->obj_tab bucket */
	uint32_t type, handle;
	void *ptr;
};

/* Buckets of ctx->obj_tab: by the handle's low 16 bits (daemon handles are
 * gen << 18 | index, index unique within the connection: a bucket holds one
 * object up to 65 536 of them, a few beyond). */
#define XRXE_OBJ_TAB 65536u

struct xrxe_context {
	struct xrxe_device *dev;
	struct xrxe_conn conn;
	const struct xrxe_dev_page *page;
	size_t page_len;
	int doorbell_fd;
	/* the SQ doorbell ring (xrxe/ring.h): threads share it */
	struct xrxe_ring *db_ring;
	size_t db_ring_len;
	uint32_t db_prod;
	pthread_spinlock_t db_lock;
	pthread_mutex_t obj_lock;
	struct xrxe_obj *objs;
	struct xrxe_obj **obj_tab; /* XRXE_OBJ_TAB buckets, allocated on first use */
	bool fatal_reported; /* the daemon went away: one IBV_EVENT_DEVICE_FATAL */
	_Atomic uint64_t dm_bytes; /* device memory held (dm.c) */
	/* on-demand paging (odp.c): ODP_OPEN done; the ODP regions, for
	 * ibv_advise_mr's checks (under obj_lock) */
	bool odp_open;
	struct xrxe_mr *odp_mrs;
	/* import.c: an imported context's exporter (whose connection state,
	 * device page and doorbell ring it uses), NULL for an opened one; an
	 * opened one's place in the process's list of contexts (its socket's
	 * inode, the importers holding it, closed by the application while
	 * they do), and its device memory by handle (dm.c) */
	struct xrxe_context *primary;
	int async_wr; /* an imported context's own (silent) async pipe */
	struct xrxe_context *reg_next;
	uint64_t sock_dev, sock_ino;
	int pid;
	uint32_t importers;
	struct xrxe_context *imports, *imp_next; /* the contexts imported from it */
	bool closed;
	struct xrxe_dm *dms;
	uint32_t dm_next_handle;
	/* the daemon's ring slabs this context maps (ring_slab.c), by number */
	pthread_mutex_t slab_lock;
	struct xrxe_slab_map *slabs;
	uint32_t nslabs, slabs_cap;
	/* UD QPs with an RQ by QPN (ud_l3.c; under obj_lock) */
	struct xrxe_ud_l3 **ud_tab;
	uint32_t ud_tab_size, ud_count;
	struct verbs_context vctx; /* &vctx.context is what the application sees */
};

/* import.c: the context whose connection, page and doorbell ring ctx uses */
static inline struct xrxe_context *xrxe_ctx_primary(struct xrxe_context *ctx)
{
	return ctx->primary ? ctx->primary : ctx;
}
/* context.c: the ops and fields every context has, opened or imported */
void xrxe_context_setup(struct xrxe_context *ctx, struct ibv_device *device, int async_fd);
/* import.c: list an opened context (so a duplicate of its socket can be
 * imported); on ibv_close_device of an opened one, true when importers still
 * use its state (it is freed with the last of them, xrxe_context_free) */
void xrxe_import_register(struct xrxe_context *ctx);
bool xrxe_import_close_primary(struct xrxe_context *ctx);
int xrxe_import_close_device(struct xrxe_context *ctx);
void xrxe_context_free(struct xrxe_context *ctx);

static inline struct xrxe_context *to_xctx(struct ibv_context *c)
{
	return xrxe_container_of(c, struct xrxe_context, vctx.context);
}

void xrxe_obj_add(struct xrxe_context *ctx, struct xrxe_obj *o, uint32_t type, uint32_t handle,
		  void *ptr);
void xrxe_obj_del(struct xrxe_context *ctx, struct xrxe_obj *o);
void *xrxe_obj_find(struct xrxe_context *ctx, uint32_t type, uint32_t handle);
/* ctx's own table only (xrxe_obj_find also asks the contexts imported from it) */
void *xrxe_obj_find_local(struct xrxe_context *ctx, uint32_t type, uint32_t handle);
void *xrxe_import_obj_find(struct xrxe_context *ctx, uint32_t type, uint32_t handle);

/* HELLO on a fresh connection: maps the device page, returns the doorbell
 * eventfd and hands the daemon async_wr (write end of the async pipe, or -1
 * for a probe that creates a throwaway pipe). 0 or -errno. */
int xrxe_hello(struct xrxe_conn *c, int async_wr, const struct xrxe_dev_page **page,
	       size_t *page_len, int *doorbell, struct xrxe_ring **db_ring, size_t *db_ring_len);

/* The SQ doorbell (abi.h xrxe_dev_page.daemon_sleeping): after publishing a
 * producer index. */
void xrxe_ring_doorbell(struct xrxe_context *ctx);
/* New WQEs on sq of the QP named handle: tell the daemon which QP
 * (xrxe/ring.h), then xrxe_ring_doorbell. */
void xrxe_ring_doorbell_qp(struct xrxe_context *ctx, struct xrxe_ring *sq, uint32_t handle);

/* Simple handle request (DEALLOC_PD, DEREG_MR, DESTROY_*): 0 or -errno;
 * 0 as well when the daemon is gone (its side of the object is gone too). */
int xrxe_ctrl_destroy(struct xrxe_context *ctx, uint16_t op, uint32_t handle);

/* --- device page (query.c) ----------------------------------------------------- */
/* Consistent copy of the port/GID part of the device page (seqlock). */
struct xrxe_page_snapshot {
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	struct xrxe_gid_slot gids[XRXE_GID_TABLE_LEN];
	uint64_t node_guid;
	char ifname[16];
};
int xrxe_page_read(const struct xrxe_context *ctx, struct xrxe_page_snapshot *s);
int xrxe_query_port_op(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		       size_t attr_len);
int xrxe_query_rt_values_op(struct ibv_context *context, struct ibv_values_ex *values);
int xrxe_query_device_ex_op(struct ibv_context *context, const struct ibv_query_device_ex_input *in,
			    struct ibv_device_attr_ex *attr, size_t attr_size);
/* Index of gid in the port's table, or -1. */
int xrxe_find_gid(struct ibv_context *context, uint8_t port, const union ibv_gid *gid);

/* --- rings (ring_slab.c) ------------------------------------------------------------ */
/* A slab of the daemon's (abi.h struct xrxe_ring_loc) mapped here once, for
 * every ring the context carves from it. */
struct xrxe_slab_map {
	uint32_t id;
	uint32_t refs; /* rings of this context in it */
	void *base;
	size_t size;
};

/* Map the ring the daemon located at loc, fd its memfd or its slab's
 * (closed here either way): *ring, or -errno. */
int xrxe_ring_map(struct xrxe_context *ctx, int fd, const struct xrxe_ring_loc *loc,
		  struct xrxe_ring **ring);
/* Undo xrxe_ring_map(ring) of loc.slab slab and loc.size len. */
void xrxe_ring_unmap(struct xrxe_context *ctx, uint32_t slab, struct xrxe_ring *ring, size_t len);
/* ibv_close_device: forget the slab table (the rings stay mapped). */
void xrxe_ring_slabs_forget(struct xrxe_context *ctx);

struct xrxe_wq {
	struct xrxe_ring *ring;
	size_t map_len;
	uint32_t slab; /* loc.slab of the ring (0: a mapping of its own) */
	uint32_t mask;
	uint32_t log2_elem;
	uint32_t prod; /* private producer (SQ/RQ/SRQ: the shim owns it) */
	/* the daemon's consumer as last read, under lock: it only lags, so
	 * posts re-read it (a line the daemon writes for every WQE it takes)
	 * only when the ring looks full by it (sq_has_room) */
	uint32_t cons;
	uint32_t max_sge;
	uint32_t max_inline;
	pthread_spinlock_t lock;
};

/* Map the ring at loc (fd closed here) and check its header against what the
 * daemon said: 0 or -errno. */
int xrxe_wq_map(struct xrxe_context *ctx, struct xrxe_wq *q, int fd,
		const struct xrxe_ring_loc *loc, uint32_t min_elem);
void xrxe_wq_unmap(struct xrxe_context *ctx, struct xrxe_wq *q);

static inline void *xrxe_wq_slot(const struct xrxe_wq *q, uint32_t idx)
{
	return xrxe_ring_slot(q->ring, idx, q->mask, q->log2_elem);
}

/* Post receive WQEs on an RQ or SRQ ring (lock taken inside). */
int xrxe_post_recv_ring(struct xrxe_wq *q, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* --- objects ------------------------------------------------------------------------- */
struct xrxe_pd {
	struct ibv_pd pd;
	/* A parent domain (domain.c): the PD it wraps (whose handle it
	 * carries), its thread domain and allocators. NULL for a plain PD. */
	struct xrxe_pd *protection;
	struct ibv_td *td;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		       uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	void *pd_context;
	_Atomic uint32_t parents; /* a PD: parent domains over it */
	_Atomic uint32_t objects; /* a parent domain: objects from its allocator */
};

/* domain.c: the memory of a QP, CQ or SRQ, from its parent domain's
 * allocator when it has one (pd may be NULL or a plain PD: calloc). The
 * resource type passed to the allocator: rdma_driver_id in the upper 32 bits
 * (xrxe has none: RDMA_DRIVER_UNKNOWN, 0), ours below. */
enum { XRXE_DOMAIN_RES_QP = 1, XRXE_DOMAIN_RES_CQ = 2, XRXE_DOMAIN_RES_SRQ = 3 };
#define XRXE_DOMAIN_RESOURCE(r) ((uint64_t)(r))
void *xrxe_domain_alloc(struct ibv_pd *pd, size_t size, uint32_t resource);
void xrxe_domain_free(struct ibv_pd *pd, void *p, uint32_t resource);
int xrxe_dealloc_parent_domain(struct xrxe_pd *pd);
struct ibv_pd *xrxe_alloc_parent_domain_op(struct ibv_context *context,
					   struct ibv_parent_domain_init_attr *attr);
struct ibv_td *xrxe_alloc_td_op(struct ibv_context *context, struct ibv_td_init_attr *attr);
int xrxe_dealloc_td_op(struct ibv_td *td);

/* odp.c: on-demand paging. xrxe_odp_open: hand the daemon the process's
 * memory once per context (0 or -errno); xrxe_odp_add / _del: the context's
 * list of ODP regions; xrxe_advise_mr_op: verbs_context.advise_mr. */
int xrxe_odp_open(struct xrxe_context *ctx);
void xrxe_odp_add(struct xrxe_context *ctx, struct xrxe_mr *mr);
void xrxe_odp_del(struct xrxe_context *ctx, struct xrxe_mr *mr);
int xrxe_advise_mr_op(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		      struct ibv_sge *sg_list, uint32_t num_sge);

/* dm.c: device memory, at most this much per context (max_dm_size). */
#define XRXE_DM_MAX_BYTES (256u * 1024)
struct ibv_dm *xrxe_alloc_dm_op(struct ibv_context *context, struct ibv_alloc_dm_attr *attr);
int xrxe_free_dm_op(struct ibv_dm *dm);
/* ibv_import_dm / ibv_unimport_dm (dm.c: a DM's memory is the process's) */
struct ibv_dm *xrxe_import_dm(struct ibv_context *context, uint32_t dm_handle);
void xrxe_unimport_dm(struct ibv_dm *dm);
struct ibv_mr *xrxe_reg_dm_mr_op(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t dm_offset,
				 size_t length, unsigned int access);

struct xrxe_mr {
	struct ibv_mr mr;
	void *remap_addr; /* what mr_remap acquired */
	size_t remap_len;
	uint64_t iova;    /* the address remote peers use */
	_Atomic uint32_t *dm_mrs; /* over device memory: its MR count (dm.c) */
	bool odp;                 /* IBV_ACCESS_ON_DEMAND: nothing moved (odp.c) */
	uint32_t access;          /* as registered (ibv_advise_mr's checks) */
	struct xrxe_mr *odp_next; /* xrxe_context.odp_mrs */
};

struct xrxe_channel {
	struct ibv_comp_channel ch;
	uint32_t handle;
};

struct xrxe_cq {
	struct ibv_cq_ex cqx; /* first: ibv_cq_ex_to_cq() is a cast */
	struct xrxe_obj obj;
	struct xrxe_ring *ring;
	size_t map_len;
	uint32_t slab;               /* loc.slab of the ring (ring_slab.c) */
	uint32_t mask, log2_elem;
	uint32_t cons;               /* private consumer */
	pthread_spinlock_t lock;
	const struct xrxe_cqe *cur;  /* extended poll: the entry being read */
	uint8_t cur_sl;              /* its wc.sl as reported (ud_l3.c) */
	uint64_t wc_flags;
	uint32_t events_reported;
	uint32_t empty_polls; /* see daemon_gone() in cq.c */
	uint32_t empty_run;   /* consecutive empty polls: see idle_poll() in cq.c */
	bool gone_reported;   /* the "daemon is gone" line was printed */
	struct ibv_pd *domain; /* the parent domain its memory came from, or NULL */
};

static inline struct xrxe_cq *to_xcq(struct ibv_cq *cq)
{
	return (struct xrxe_cq *)(void *)cq;
}

/* rdma-core >= 45 appends wr_flush to struct ibv_qp_ex (after
 * wr_atomic_write); rdma-core 44's header, which the shim is built against,
 * ends before it. Programs built against a newer header find it here. */
typedef void (*xrxe_wr_flush_fn)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr,
				 size_t len, uint8_t type, uint8_t level);

struct xrxe_qp {
	struct ibv_qp_ex qpx; /* first: qp_base is what the application holds */
	xrxe_wr_flush_fn wr_flush; /* must follow qpx directly (see above) */
	struct xrxe_obj obj;
	struct xrxe_wq sq, rq;
	bool has_rq;
	bool ex;              /* created with send ops: ibv_qp_to_qp_ex() works */
	uint32_t sq_sig_all;
	struct ibv_qp_cap cap;
	/* ibv_wr_* session state (under sq.lock, between wr_start and
	 * wr_complete/wr_abort) */
	uint32_t wr_prod;
	struct xrxe_send_wqe *wr_cur;
	int wr_err;
	struct xrxe_ud_l3 *ud_l3; /* UD with its own RQ: ud_l3.c */
};

_Static_assert(offsetof(struct xrxe_qp, wr_flush) == sizeof(struct ibv_qp_ex),
	       "wr_flush directly after struct ibv_qp_ex, as in rdma-core >= 45");
static inline struct xrxe_qp *to_xqp(struct ibv_qp *qp)
{
	return (struct xrxe_qp *)(void *)qp;
}

struct xrxe_srq {
	struct ibv_srq srq;
	struct xrxe_obj obj;
	struct xrxe_wq rq;
	uint32_t srq_limit;
	uint32_t srq_num; /* XRC SRQs (verbs/xrc.c): what peers name; 0 for a basic SRQ */
};

struct xrxe_ah {
	struct ibv_ah ah; /* ah.handle: the daemon handle, for DESTROY_AH */
	uint32_t ah_num;  /* what UD WQEs carry (abi.h CREATE_AH) */
};

static inline uint32_t xrxe_ah_num(const struct ibv_ah *ah)
{
	return xrxe_container_of(ah, struct xrxe_ah, ah)->ah_num;
}

/* The RoCE L3 type of UD receives in wc.sl, as mlx5 reports it (ud_l3.c):
 * create/destroy with a UD QP that has an RQ, record WRs before they are
 * posted, and the sl to report for a completion (called in CQ order). */
struct xrxe_ud_l3;
int xrxe_ud_l3_create(struct xrxe_context *ctx, struct xrxe_qp *qp, uint32_t qpn,
		      uint32_t rq_entries);
void xrxe_ud_l3_destroy(struct xrxe_qp *qp);
/* ibv_close_device: the QPN table (the QPs' own state stays with them). */
void xrxe_ud_l3_forget(struct xrxe_context *ctx);
void xrxe_ud_l3_posting(struct xrxe_qp *qp, const struct ibv_recv_wr *wr);
uint8_t xrxe_ud_l3_sl(struct xrxe_context *ctx, const struct ibv_wc *wc);

/* memory windows (mw.c), installed in ibv_context_ops */
struct ibv_mw *xrxe_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int xrxe_dealloc_mw(struct ibv_mw *mw);
int xrxe_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);

/* ops installed by context.c */
int xrxe_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int xrxe_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int xrxe_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int xrxe_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int xrxe_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_cq_ex *xrxe_create_cq_ex_op(struct ibv_context *context,
				       struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *xrxe_create_qp_ex_op(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
/* XRC (verbs/xrc.c) */
struct ibv_srq *xrxe_srq_create(struct ibv_pd *pd, struct ibv_srq_init_attr *init, uint32_t xrcd,
				uint32_t cq);
/* Tag matching (verbs/tm.c): a TM SRQ of max_tags tagged buffers whose
 * list operations complete into the CQ handle cq; ibv_post_srq_ops */
struct ibv_srq *xrxe_srq_create_tm(struct ibv_pd *pd, struct ibv_srq_init_attr *init,
				   uint32_t cq, uint32_t max_tags);
void xrxe_tm_install(struct verbs_context *vctx);
void xrxe_tm_caps(struct ibv_tm_caps *caps);
struct ibv_qp *xrxe_create_xrc_tgt(struct ibv_context *context, struct ibv_qp_init_attr_ex *a);
void xrxe_xrc_install(struct verbs_context *vctx);
/* flow.c: ibv_create_flow / ibv_destroy_flow (raw packet QPs) */
void xrxe_flow_install(struct verbs_context *vctx);
/* raw.c: RSS: WQs, indirection tables, and RSS QPs (create_qp_ex with
 * IBV_QP_INIT_ATTR_RX_HASH) */
void xrxe_rss_install(struct verbs_context *vctx);
struct ibv_qp *xrxe_rss_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *a);

/* --- exports verbs.h does not declare ---------------------------------------------- */
struct ib_uverbs_ah_attr;
struct ib_uverbs_qp_attr;
struct ib_user_path_rec;

XRXE_API const char *ibv_get_sysfs_path(void);
XRXE_API int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
XRXE_API void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
XRXE_API void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
XRXE_API void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
XRXE_API void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
XRXE_API int ibv_dontfork_range(void *base, size_t size);
XRXE_API int ibv_dofork_range(void *base, size_t size);
XRXE_API int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
				uint32_t *type);

/* Thin internal helpers shared by files. */
struct ibv_mr *xrxe_reg_mr_common(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				  unsigned int access);
/* The same without the refusal of length 0: a device-memory MR may be empty
 * (dm.c; rdma-core's tests register one, as mlx5 allows). */
struct ibv_mr *xrxe_reg_mr_region(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				  unsigned int access);
struct ibv_ah *xrxe_create_ah_common(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int xrxe_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, const struct ibv_wc *wc,
			 const struct ibv_grh *grh, struct ibv_ah_attr *ah_attr);

/* errno-style return helpers: the verbs API mixes three conventions. */
static inline void *xrxe_null_errno(int err)
{
	errno = err;
	return NULL;
}

#endif /* XRXE_VERBS_SHIM_H */
