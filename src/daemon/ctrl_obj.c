// SPDX-License-Identifier: MIT
/*
 * The control socket's object table (connection-local handles), the
 * shared-memory rings within each connection's budget, and destroying
 * objects (explicit DESTROY_* and connection teardown).
 */
#include "daemon/ctrl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ctrl_internal.h"
#include "daemon/ctrl_msg.h"
#include "daemon/evsrc.h"
#include "daemon/shm.h"
#include "util/log.h"


const char *const xrxe_ctrli_obj_names[OBJ_TYPES] = {
	[OBJ_PD] = "PD", [OBJ_MR] = "MR",	    [OBJ_CQ] = "CQ",
	[OBJ_QP] = "QP", [OBJ_AH] = "AH", [OBJ_CHANNEL] = "channel",
	[OBJ_SRQ] = "SRQ", [OBJ_MW] = "MW", [OBJ_CM_CHANNEL] = "CM channel", [OBJ_CM_ID] = "CM ID",
	[OBJ_XRCD] = "XRCD", [OBJ_FLOW] = "flow", [OBJ_WQ] = "WQ", [OBJ_RWQ_IND_TBL] = "RWQ ind table",
};

uint64_t xrxe_ctrli_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t xrxe_ctrli_pow2_ceil(uint32_t v)
{
	return v <= 1 ? 1 : 1u << (32 - __builtin_clz(v - 1));
}

/* --- object table --------------------------------------------------------
 * handle = gen << HANDLE_IDX_BITS | index. Handles are only ever looked up in
 * the table of the connection that sent them, so naming another
 * application's object is impossible by construction; the generation (random
 * per connection, bumped on reuse) makes stale and foreign numbers miss
 * instead of aliasing. 18 index bits: one connection holds 65 536 QPs with
 * their CQs, PD and MRs (issue 16; 16 bits stopped at 65 535 objects). */

static uint32_t make_handle(uint16_t gen, uint32_t idx)
{
	return (uint32_t)(gen & HANDLE_GEN_MASK) << HANDLE_IDX_BITS | idx;
}

struct obj *xrxe_ctrli_obj_lookup(struct conn *c, uint32_t handle, enum obj_type type)
{
	uint32_t idx = handle & HANDLE_IDX_MASK;
	struct slot *s;

	if (idx >= c->nslots)
		return NULL;
	s = &c->slots[idx];
	if (!s->obj || (s->gen & HANDLE_GEN_MASK) != handle >> HANDLE_IDX_BITS ||
	    s->obj->type != type)
		return NULL;
	return s->obj;
}

/* The quota each object type counts against; objects that hold a
 * descriptor in the daemon also count against "fds". */
static const int8_t obj_res[OBJ_TYPES] = {
	[OBJ_NONE] = -1, [OBJ_PD] = XRXE_Q_PD, [OBJ_MR] = XRXE_Q_MR, [OBJ_CQ] = XRXE_Q_CQ,
	[OBJ_QP] = XRXE_Q_QP, [OBJ_AH] = XRXE_Q_AH, [OBJ_CHANNEL] = XRXE_Q_CHANNEL,
	[OBJ_SRQ] = XRXE_Q_SRQ, [OBJ_MW] = XRXE_Q_MW, [OBJ_CM_CHANNEL] = XRXE_Q_CM_CHANNEL,
	[OBJ_CM_ID] = XRXE_Q_CM_ID, [OBJ_FLOW] = XRXE_Q_QP, /* a flow: part of its QP */
	[OBJ_WQ] = XRXE_Q_QP, [OBJ_RWQ_IND_TBL] = XRXE_Q_QP, /* RSS: its QPs' parts */
	[OBJ_XRCD] = XRXE_Q_PD, /* an XRC domain: a domain, like a PD */
};

static bool obj_holds_fd(enum obj_type t)
{
	return t == OBJ_CHANNEL || t == OBJ_CM_CHANNEL;
}

int xrxe_ctrli_charge(struct conn *c, enum xrxe_quota_res res, uint64_t n)
{
	if (!c->ctrl->cfg.quota)
		return 0;
	return xrxe_quota_charge(c->ctrl->cfg.quota, c->uid, res, n);
}

void xrxe_ctrli_release(struct conn *c, enum xrxe_quota_res res, uint64_t n)
{
	if (c->ctrl->cfg.quota)
		xrxe_quota_release(c->ctrl->cfg.quota, c->uid, res, n);
}

static int obj_charge(struct conn *c, enum obj_type type)
{
	int err = xrxe_ctrli_charge(c, (enum xrxe_quota_res)obj_res[type], 1);

	if (err || !obj_holds_fd(type))
		return err;
	err = xrxe_ctrli_charge(c, XRXE_Q_FDS, 1);
	if (err)
		xrxe_ctrli_release(c, (enum xrxe_quota_res)obj_res[type], 1);
	return err;
}

static void obj_uncharge(struct conn *c, enum obj_type type)
{
	xrxe_ctrli_release(c, (enum xrxe_quota_res)obj_res[type], 1);
	if (obj_holds_fd(type))
		xrxe_ctrli_release(c, XRXE_Q_FDS, 1);
}

/* A zeroed object of size bytes with a handle reserved for it, within the
 * connection's table and the user's quota. */
void *xrxe_ctrli_obj_new(struct conn *c, enum obj_type type, size_t size, int *err)
{
	struct obj *o;
	uint32_t idx;

	if (type <= OBJ_NONE || type >= OBJ_TYPES) {
		*err = -EINVAL;
		return NULL;
	}
	if (c->nobjs >= MAX_OBJS_PER_CONN) {
		*err = -ENOSPC;
		return NULL;
	}
	*err = obj_charge(c, type);
	if (*err)
		return NULL;
	if (c->nobjs == c->nslots) {
		uint32_t n = c->nslots ? c->nslots * 2 : 16;
		struct slot *s;
		uint32_t *f;

		if (n > MAX_OBJS_PER_CONN)
			n = MAX_OBJS_PER_CONN;
		s = realloc(c->slots, n * sizeof(*s));
		if (!s) {
			obj_uncharge(c, type);
			*err = -ENOMEM;
			return NULL;
		}
		c->slots = s;
		f = realloc(c->free_idx, n * sizeof(*f));
		if (!f) {
			obj_uncharge(c, type);
			*err = -ENOMEM;
			return NULL;
		}
		c->free_idx = f;
		/* Highest first, so the stack hands out low indices first. */
		for (uint32_t i = n; i-- > c->nslots;) {
			s[i] = (struct slot){ .gen = (uint16_t)(c->gen_base + i * 0x9e37u) };
			f[n - 1 - i] = i;
		}
		c->nslots = n;
	}
	o = calloc(1, size);
	if (!o) {
		obj_uncharge(c, type);
		*err = -ENOMEM;
		return NULL;
	}
	/* nslots - nobjs free indices sit on the stack, the last one on top. */
	idx = c->free_idx[c->nslots - c->nobjs - 1];
	o->type = (uint8_t)type;
	o->conn = c;
	o->handle = make_handle(c->slots[idx].gen, idx);
	c->slots[idx].obj = o;
	c->nobjs++;
	c->count[type]++;
	return o;
}

void xrxe_ctrli_obj_free(struct obj *o)
{
	struct conn *c = o->conn;
	uint32_t idx = o->handle & HANDLE_IDX_MASK;
	struct slot *s = &c->slots[idx];

	s->obj = NULL;
	s->gen++;
	c->nobjs--;
	c->free_idx[c->nslots - c->nobjs - 1] = idx;
	c->count[o->type]--;
	obj_uncharge(c, (enum obj_type)o->type);
	free(o);
}

/* Live-object totals of the whole daemon, for stats. */
void xrxe_ctrli_count_adjust(struct xrxe_ctrl *ctrl, enum obj_type t, int d)
{
	uint32_t *p[OBJ_TYPES] = {
		[OBJ_PD] = &ctrl->st.pds, [OBJ_MR] = &ctrl->st.mrs,	     [OBJ_CQ] = &ctrl->st.cqs,
		[OBJ_QP] = &ctrl->st.qps, [OBJ_AH] = &ctrl->st.ahs, [OBJ_CHANNEL] = &ctrl->st.channels,
		[OBJ_SRQ] = &ctrl->st.srqs,
	};

	if (p[t])
		*p[t] = (uint32_t)((int)*p[t] + d);
}

/* --- shared-memory rings, within each connection's budget ------------- */

/* A ring for a connection, within its memory budget. Small rings are carved
 * from the connection's slabs (ring_slab.h: a few hundred mappings for 65 536
 * QPs instead of one each); a larger one gets a memfd of its own. Mappings
 * are charged per slab, not per ring. */
int xrxe_ctrli_conn_ring(struct conn *c, const char *kind, uint32_t nslots, uint32_t elem,
		     struct xrxe_shm *shm)
{
	struct xrxe_slab_chunk ch;
	bool new_slab, gone;
	char name[32];
	int err;

	uint64_t bytes = xrxe_ring_bytes(nslots, elem);

	*shm = (struct xrxe_shm){ .fd = -1 };
	if (!xrxe_shm_ring_geometry_ok(nslots, elem))
		return -EINVAL;
	if (c->ring_bytes + bytes > MAX_RING_BYTES_PER_CONN)
		return -ENOMEM;
	err = xrxe_ctrli_charge(c, XRXE_Q_RING_BYTES, bytes);
	if (err)
		return err;
	if (xrxe_slab_fits(bytes)) {
		err = xrxe_slab_alloc(&c->slabs, bytes, &ch, &new_slab);
		if (!err && new_slab && (err = xrxe_ctrli_charge(c, XRXE_Q_MAPS, 1)))
			xrxe_slab_free(&c->slabs, ch.slab, ch.offset, &gone);
		if (err) {
			xrxe_ctrli_release(c, XRXE_Q_RING_BYTES, bytes);
			return err;
		}
		xrxe_shm_ring_init(ch.ptr, nslots, elem);
		*shm = (struct xrxe_shm){
			.fd = ch.slab->fd, .base = ch.ptr, .size = ch.slab->chunk,
			.slab = ch.slab, .offset = ch.offset,
		};
	} else {
		err = xrxe_ctrli_charge(c, XRXE_Q_MAPS, 1);
		if (err) {
			xrxe_ctrli_release(c, XRXE_Q_RING_BYTES, bytes);
			return err;
		}
		snprintf(name, sizeof(name), "xrxe-%s-%u", kind, ++c->ctrl->ring_seq);
		err = xrxe_shm_ring_create(name, nslots, elem, shm);
		if (err) {
			xrxe_ctrli_release(c, XRXE_Q_RING_BYTES, bytes);
			xrxe_ctrli_release(c, XRXE_Q_MAPS, 1);
			return err;
		}
	}
	/* the quota counts what was asked; give back exactly that */
	shm->quota_bytes = bytes;
	c->ring_bytes += shm->size;
	return 0;
}

/* Give back a ring of xrxe_ctrli_conn_ring (its bytes return to the budget). */
void xrxe_ctrli_conn_ring_free(struct conn *c, struct xrxe_shm *shm)
{
	bool gone;

	if (!shm->base)
		return;
	c->ring_bytes -= shm->size;
	xrxe_ctrli_release(c, XRXE_Q_RING_BYTES, shm->quota_bytes);
	if (shm->slab) {
		/* -EINVAL (a double free) is logged there and changes nothing */
		if (!xrxe_slab_free(&c->slabs, shm->slab, shm->offset, &gone) && gone)
			xrxe_ctrli_release(c, XRXE_Q_MAPS, 1);
	} else {
		xrxe_ctrli_release(c, XRXE_Q_MAPS, 1);
		xrxe_shm_destroy(shm);
	}
	*shm = (struct xrxe_shm){ .fd = -1 };
}

/* Where the application finds a ring (abi.h struct xrxe_ring_loc), and its
 * fd in the reply: a slab's stays open in the daemon (it is passed again
 * with the slab's next ring), a ring's own is closed once sent. */
void xrxe_ctrli_reply_ring(struct reply *r, struct xrxe_shm *shm, struct xrxe_ring_loc *loc)
{
	if (shm->slab) {
		*loc = (struct xrxe_ring_loc){
			.slab = shm->slab->id, .slab_size = XRXE_SLAB_BYTES,
			.offset = shm->offset, .size = shm->size,
		};
		xrxe_ctrli_reply_fd(r, shm->fd, false);
	} else {
		*loc = (struct xrxe_ring_loc){ .slab = 0, .slab_size = shm->size, .offset = 0,
					       .size = shm->size };
		xrxe_ctrli_reply_fd(r, shm->fd, true);
		shm->fd = -1; /* closed once sent; the mapping stays */
	}
}

/* The slabs left at connection close (their rings were freed with their
 * objects; a ring the core may still use keeps its slab). */
void xrxe_ctrli_conn_slabs_release(struct conn *c, bool leaked)
{
	if (leaked)
		return;
	xrxe_ctrli_release(c, XRXE_Q_MAPS, xrxe_slab_pool_release(&c->slabs));
}

/* MR windows: the daemon maps every registered byte, so registered bytes
 * and mappings are the user's to spend, not the daemon's address space. */
int xrxe_ctrli_mr_map(struct conn *c, uint64_t addr, uint64_t length, int writable,
		      struct xrxe_mr_map *map)
{
	int err = xrxe_ctrli_charge(c, XRXE_Q_MR_BYTES, length);

	if (err)
		return err;
	err = xrxe_ctrli_charge(c, XRXE_Q_MAPS, 1);
	if (err) {
		xrxe_ctrli_release(c, XRXE_Q_MR_BYTES, length);
		return err;
	}
	err = xrxe_shm_map_mr(c->memfd, addr, length, writable, map);
	if (err) {
		xrxe_ctrli_release(c, XRXE_Q_MR_BYTES, length);
		xrxe_ctrli_release(c, XRXE_Q_MAPS, 1);
		return err;
	}
	map->quota_bytes = length;
	return 0;
}

void xrxe_ctrli_mr_unmap(struct conn *c, struct xrxe_mr_map *map)
{
	if (!map->base)
		return;
	xrxe_ctrli_release(c, XRXE_Q_MR_BYTES, map->quota_bytes);
	xrxe_ctrli_release(c, XRXE_Q_MAPS, 1);
	xrxe_shm_unmap_mr(map);
}

/* --- destroying objects (explicit DESTROY_* and connection teardown) ----- */

/* A multicast group no QP of this daemon is attached to any more. */
static void mcast_left(void *arg, const union ibv_gid *gid)
{
	struct xrxe_ctrl *ctrl = arg;

	xrxe_nl_mcast(ctrl->cfg.nl, gid, false);
}

static int destroy_qp(struct obj_qp *q)
{
	struct conn *c = q->o.conn;

	if (q->tgt) /* a shared XRC target: one holder fewer (ctrl_xrc.c) */
		return xrxe_ctrli_xrc_tgt_put(q);
	/* Leave the groups only this QP was in (IBA 10.5: destroying a QP
	 * detaches it). The core stops the QP then: nothing reads the rings
	 * after this. */
	xrxe_tp_mcast_detach_all(c->ctrl->cfg.tp, q->qp, mcast_left, c->ctrl);
	xrxe_tp_qp_destroy(c->ctrl->cfg.tp, q->qp);
	xrxe_ctrli_rss_qp_gone(q); /* an RSS QP's table (ctrl_raw.c) */
	xrxe_ctrli_conn_ring_free(c, &q->sq);
	xrxe_ctrli_conn_ring_free(c, &q->rq);
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_QP, -1);
	xrxe_ctrli_obj_free(&q->o);
	return 0;
}

static int destroy_ah(struct obj_ah *a)
{
	struct conn *c = a->o.conn;
	int err = xrxe_tp_ah_destroy(c->ctrl->cfg.tp, a->ah);

	if (err)
		return err;
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_AH, -1);
	xrxe_ctrli_obj_free(&a->o);
	return 0;
}

static int destroy_mr(struct obj_mr *m)
{
	struct conn *c = m->o.conn;
	int err = xrxe_tp_mr_dereg(c->ctrl->cfg.tp, m->lkey);

	/* Unmapping memory the core still points at would turn its next access
	 * into SIGSEGV: keep the mapping if the core refused. */
	if (err)
		return err;
	xrxe_ctrli_mr_unmap(m->o.conn, &m->map);
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_MR, -1);
	xrxe_ctrli_obj_free(&m->o);
	return 0;
}

static int destroy_mw(struct obj_mw *w)
{
	struct conn *c = w->o.conn;
	int err = xrxe_tp_mw_dealloc(c->ctrl->cfg.tp, w->mw);

	if (err)
		return err;
	xrxe_ctrli_obj_free(&w->o);
	return 0;
}

static int destroy_cq(struct obj_cq *q)
{
	struct conn *c = q->o.conn;
	int err = xrxe_tp_cq_destroy(c->ctrl->cfg.tp, q->cq);

	if (err)
		return err; /* -EBUSY: a QP still uses it */
	if (q->ch)
		q->ch->refs--;
	xrxe_ctrli_conn_ring_free(c, &q->ring);
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_CQ, -1);
	xrxe_ctrli_obj_free(&q->o);
	return 0;
}

static int destroy_srq(struct obj_srq *q)
{
	struct conn *c = q->o.conn;
	int err = xrxe_tp_srq_destroy(c->ctrl->cfg.tp, q->srq);

	if (err)
		return err; /* -EBUSY: a QP still uses it */
	xrxe_ctrli_conn_ring_free(c, &q->ring);
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_SRQ, -1);
	xrxe_ctrli_obj_free(&q->o);
	xrxe_ctrli_xrc_gc(c->ctrl); /* an XRC SRQ may have kept a closed domain (ctrl_xrc.c) */
	return 0;
}

static int destroy_channel(struct obj_channel *ch)
{
	struct conn *c = ch->o.conn;

	if (ch->refs)
		return -EBUSY; /* as ibv_destroy_comp_channel with CQs attached */
	close(ch->fd);
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_CHANNEL, -1);
	xrxe_ctrli_obj_free(&ch->o);
	return 0;
}

static int destroy_pd(struct obj_pd *p)
{
	struct conn *c = p->o.conn;
	int err = xrxe_tp_pd_free(c->ctrl->cfg.tp, p->pdn);

	if (err)
		return err; /* -EBUSY: MRs, QPs or AHs use it */
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_PD, -1);
	xrxe_ctrli_obj_free(&p->o);
	return 0;
}

int xrxe_ctrli_destroy_obj(struct obj *o)
{
	switch (o->type) {
	case OBJ_QP:
		return destroy_qp((struct obj_qp *)o);
	case OBJ_AH:
		return destroy_ah((struct obj_ah *)o);
	case OBJ_MR:
		return destroy_mr((struct obj_mr *)o);
	case OBJ_MW:
		return destroy_mw((struct obj_mw *)o);
	case OBJ_CQ:
		return destroy_cq((struct obj_cq *)o);
	case OBJ_CHANNEL:
		return destroy_channel((struct obj_channel *)o);
	case OBJ_PD:
		return destroy_pd((struct obj_pd *)o);
	case OBJ_SRQ:
		return destroy_srq((struct obj_srq *)o);
	case OBJ_XRCD:
		return xrxe_ctrli_destroy_xrcd((struct obj_xrcd *)o);
	case OBJ_FLOW:
		return xrxe_ctrli_destroy_flow(o);
	case OBJ_WQ:
		return xrxe_ctrli_destroy_wq(o);
	case OBJ_RWQ_IND_TBL:
		return xrxe_ctrli_destroy_rwq_ind_tbl(o);
	case OBJ_CM_ID:
	case OBJ_CM_CHANNEL:
		return xrxe_ctrli_destroy_cm_obj(o);
	}
	return -EINVAL;
}

