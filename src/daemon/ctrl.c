// SPDX-License-Identifier: MIT
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

/* Per-daemon and per-connection ceilings: one application must not be able
 * to exhaust the daemon's descriptors, mappings or memory for the others. */
#define MAX_CONNS 1024
#define MAX_OBJS_PER_CONN 65535            /* handle index <= 0xfffe: never XRXE_NO_HANDLE */
#define MAX_RING_BYTES_PER_CONN (1ull << 30)
/* Requests served per wake-up of one connection before the others (and the
 * data path) get their turn. */
#define REQS_PER_WAKE 32
/* Neighbour resolution: answer -EHOSTUNREACH after this long, retrying at
 * this interval meanwhile (ARP answers on a LAN take well under 1 ms; the
 * kernel itself gives up after 3 probes 1 s apart). */
#define RESOLVE_TIMEOUT_NS (1000ull * 1000 * 1000)
#define RESOLVE_RETRY_NS (5ull * 1000 * 1000)

static const char *const obj_names[OBJ_TYPES] = {
	[OBJ_PD] = "PD", [OBJ_MR] = "MR",	    [OBJ_CQ] = "CQ",
	[OBJ_QP] = "QP", [OBJ_AH] = "AH", [OBJ_CHANNEL] = "channel",
	[OBJ_SRQ] = "SRQ", [OBJ_MW] = "MW", [OBJ_CM_CHANNEL] = "CM channel", [OBJ_CM_ID] = "CM ID",
};

uint64_t xrxe_ctrli_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t pow2_ceil(uint32_t v)
{
	return v <= 1 ? 1 : 1u << (32 - __builtin_clz(v - 1));
}

/* --- object table --------------------------------------------------------
 * handle = gen << 16 | index. Handles are only ever looked up in the table of
 * the connection that sent them, so naming another application's object is
 * impossible by construction; the generation (random per connection, bumped
 * on reuse) makes stale and foreign numbers miss instead of aliasing. */

static uint32_t make_handle(uint16_t gen, uint32_t idx)
{
	return (uint32_t)gen << 16 | idx;
}

struct obj *xrxe_ctrli_obj_lookup(struct conn *c, uint32_t handle, enum obj_type type)
{
	uint32_t idx = handle & 0xffff;
	struct slot *s;

	if (idx >= c->nslots)
		return NULL;
	s = &c->slots[idx];
	if (!s->obj || s->gen != handle >> 16 || s->obj->type != type)
		return NULL;
	return s->obj;
}

/* A zeroed object of size bytes with a handle reserved for it. */
void *xrxe_ctrli_obj_new(struct conn *c, enum obj_type type, size_t size, int *err)
{
	struct obj *o;
	uint32_t idx;

	if (c->nobjs >= MAX_OBJS_PER_CONN) {
		*err = -ENOSPC;
		return NULL;
	}
	if (c->nobjs == c->nslots) {
		uint32_t n = c->nslots ? c->nslots * 2 : 16;
		struct slot *s;
		uint32_t *f;

		if (n > MAX_OBJS_PER_CONN)
			n = MAX_OBJS_PER_CONN;
		s = realloc(c->slots, n * sizeof(*s));
		if (!s) {
			*err = -ENOMEM;
			return NULL;
		}
		c->slots = s;
		f = realloc(c->free_idx, n * sizeof(*f));
		if (!f) {
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
	uint32_t idx = o->handle & 0xffff;
	struct slot *s = &c->slots[idx];

	s->obj = NULL;
	s->gen++;
	c->nobjs--;
	c->free_idx[c->nslots - c->nobjs - 1] = idx;
	c->count[o->type]--;
	free(o);
}

/* Live-object totals of the whole daemon, for stats. */
static void count_adjust(struct xrxe_ctrl *ctrl, enum obj_type t, int d)
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

/* A ring for a connection, within its memory budget. */
static int conn_ring(struct conn *c, const char *kind, uint32_t nslots, uint32_t elem,
		     struct xrxe_shm *shm)
{
	char name[32];
	int err;

	if (c->ring_bytes + xrxe_ring_bytes(nslots, elem) > MAX_RING_BYTES_PER_CONN)
		return -ENOMEM;
	snprintf(name, sizeof(name), "xrxe-%s-%u", kind, ++c->ctrl->ring_seq);
	err = xrxe_shm_ring_create(name, nslots, elem, shm);
	if (!err)
		c->ring_bytes += shm->size;
	return err;
}

/* Give back a ring of conn_ring (its bytes return to the budget). */
static void conn_ring_free(struct conn *c, struct xrxe_shm *shm)
{
	c->ring_bytes -= shm->size;
	xrxe_shm_destroy(shm);
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

	/* Leave the groups only this QP was in (IBA 10.5: destroying a QP
	 * detaches it). The core stops the QP then: nothing reads the rings
	 * after this. */
	xrxe_tp_mcast_detach_all(c->ctrl->cfg.tp, q->qp, mcast_left, c->ctrl);
	xrxe_tp_qp_destroy(c->ctrl->cfg.tp, q->qp);
	conn_ring_free(c, &q->sq);
	conn_ring_free(c, &q->rq);
	count_adjust(c->ctrl, OBJ_QP, -1);
	xrxe_ctrli_obj_free(&q->o);
	return 0;
}

static int destroy_ah(struct obj_ah *a)
{
	struct conn *c = a->o.conn;
	int err = xrxe_tp_ah_destroy(c->ctrl->cfg.tp, a->ah);

	if (err)
		return err;
	count_adjust(c->ctrl, OBJ_AH, -1);
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
	xrxe_shm_unmap_mr(&m->map);
	count_adjust(c->ctrl, OBJ_MR, -1);
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
	conn_ring_free(c, &q->ring);
	count_adjust(c->ctrl, OBJ_CQ, -1);
	xrxe_ctrli_obj_free(&q->o);
	return 0;
}

static int destroy_srq(struct obj_srq *q)
{
	struct conn *c = q->o.conn;
	int err = xrxe_tp_srq_destroy(c->ctrl->cfg.tp, q->srq);

	if (err)
		return err; /* -EBUSY: a QP still uses it */
	conn_ring_free(c, &q->ring);
	count_adjust(c->ctrl, OBJ_SRQ, -1);
	xrxe_ctrli_obj_free(&q->o);
	return 0;
}

static int destroy_channel(struct obj_channel *ch)
{
	struct conn *c = ch->o.conn;

	if (ch->refs)
		return -EBUSY; /* as ibv_destroy_comp_channel with CQs attached */
	close(ch->fd);
	count_adjust(c->ctrl, OBJ_CHANNEL, -1);
	xrxe_ctrli_obj_free(&ch->o);
	return 0;
}

static int destroy_pd(struct obj_pd *p)
{
	struct conn *c = p->o.conn;
	int err = xrxe_tp_pd_free(c->ctrl->cfg.tp, p->pdn);

	if (err)
		return err; /* -EBUSY: MRs, QPs or AHs use it */
	count_adjust(c->ctrl, OBJ_PD, -1);
	xrxe_ctrli_obj_free(&p->o);
	return 0;
}

static int destroy_obj(struct obj *o)
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
	case OBJ_CM_ID:
	case OBJ_CM_CHANNEL:
		return xrxe_ctrli_destroy_cm_obj(o);
	}
	return -EINVAL;
}

/* --- connections --------------------------------------------------------- */

static void conn_set_events(struct conn *c, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = &c->ev };

	epoll_ctl(c->ctrl->cfg.epfd, EPOLL_CTL_MOD, c->ev.fd, &ev);
}

static void conn_unpark(struct conn *c)
{
	if (!c->park_msg)
		return;
	free(c->park_msg);
	c->park_msg = NULL;
	conn_set_events(c, EPOLLIN | EPOLLRDHUP);
}

/* Tear down everything the connection owns, dependents first: QPs (the
 * transport stops them; their peers then run into retry-exceeded), AHs, MRs,
 * CQs, channels, PDs; then the descriptors. One summary line. */
static void conn_close(struct conn *c, const char *why)
{
	/* windows before regions: a region with bound windows refuses to go */
	static const enum obj_type order[] = { OBJ_CM_ID, OBJ_CM_CHANNEL, OBJ_QP, OBJ_SRQ,
					       OBJ_AH,	  OBJ_MW,	  OBJ_MR, OBJ_CQ,
					       OBJ_CHANNEL, OBJ_PD };
	struct xrxe_ctrl *ctrl = c->ctrl;
	uint32_t destroyed[OBJ_TYPES] = { 0 };
	unsigned leaked = 0;

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		for (uint32_t i = 0; i < c->nslots; i++) {
			struct obj *o = c->slots[i].obj;
			int err;

			if (!o || o->type != order[k])
				continue;
			err = destroy_obj(o);
			if (err) {
				/* Only a core bug gets here (everything that could
				 * hold this object is gone): keep its memory rather
				 * than free what the core may still use. */
				xrxe_err("conn %u: %s %#x: destroy failed: %s", c->id,
					 obj_names[order[k]], o->handle, strerror(-err));
				c->slots[i].obj = NULL;
				leaked++;
				continue;
			}
			destroyed[order[k]]++;
		}
	}
	xrxe_info("conn %u (pid %d uid %u) closed (%s): %u requests; destroyed %u QP, %u AH, "
		  "%u MR, %u CQ, %u channel, %u PD, %u SRQ, %u CM ID, %u CM channel%s",
		  c->id, (int)c->pid, (unsigned)c->uid, why, (unsigned)c->requests,
		  destroyed[OBJ_QP], destroyed[OBJ_AH], destroyed[OBJ_MR], destroyed[OBJ_CQ],
		  destroyed[OBJ_CHANNEL], destroyed[OBJ_PD], destroyed[OBJ_SRQ], destroyed[OBJ_CM_ID],
		  destroyed[OBJ_CM_CHANNEL],
		  leaked ? "; SOME LEAKED" : "");

	epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_DEL, c->ev.fd, NULL);
	close(c->ev.fd);
	if (c->db.fd >= 0) {
		epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_DEL, c->db.fd, NULL);
		close(c->db.fd);
	}
	if (c->memfd >= 0)
		close(c->memfd);
	if (c->async_fd >= 0)
		close(c->async_fd);
	free(c->park_msg);
	free(c->slots);
	free(c->free_idx);
	if (c->prev)
		c->prev->next = c->next;
	else
		ctrl->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	ctrl->st.conns--;
	ctrl->st.closed++;
	free(c);
}

static void write_async(struct conn *c, enum ibv_event_type type, uint32_t handle)
{
	struct xrxe_async_event ev = { .event_type = (uint32_t)type, .handle = handle };
	struct xrxe_ctrl *ctrl = c->ctrl;

	if (c->async_fd < 0)
		return;
	/* At most PIPE_BUF bytes: atomic, never a torn record. Nonblocking: an
	 * application that does not read its events loses them, nothing else. */
	if (write(c->async_fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev))
		ctrl->st.async_events++;
	else
		ctrl->st.async_drops++;
}

/* --- request handlers ----------------------------------------------------
 * Each gets the validated request (exact length, exact fd count) and the
 * received fds; it takes ownership of an fd by setting its entry to -1 (the
 * dispatcher closes the rest). Returns 0 (r->u / r->len filled), -errno,
 * or CTRL_PARKED. */

void xrxe_ctrli_reply_len(struct reply *r, size_t len)
{
	r->len = len;
}

void xrxe_ctrli_reply_fd(struct reply *r, int fd, bool owned)
{
	if (owned)
		r->owned |= 1u << r->nfds;
	r->fds[r->nfds++] = fd;
}

static int pipe_writer_check(int fd)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
		return -EINVAL;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
		return -EINVAL;
	/* The event loop must never block on an application's pipe. This
	 * changes the file description the application shares, but it only
	 * reads the other end. */
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static void doorbell_event(struct xrxe_evsrc *src, uint32_t events)
{
	uint64_t v;

	(void)events;
	/* Only a wake-up: the loop polls the transport after every epoll round. */
	if (read(src->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		xrxe_dbg("doorbell read: %s", strerror(errno));
}

static int op_hello(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_hello *h = req;
	struct xrxe_ctrl *ctrl = c->ctrl;
	struct epoll_event ev;
	int err, db;

	if (c->hello)
		return -EINVAL;
	if (h->abi_version != XRXE_ABI_VERSION) {
		xrxe_warn("conn %u: ABI version %u, daemon speaks %u", c->id, h->abi_version,
			  XRXE_ABI_VERSION);
		return -EPROTO;
	}
	err = xrxe_shm_check_memfd(fds[0]);
	if (err)
		return err;
	err = pipe_writer_check(fds[1]);
	if (err)
		return err;
	db = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (db < 0)
		return -errno;
	c->db.fd = db;
	c->db.fn = doorbell_event;
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &c->db };
	if (epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_ADD, db, &ev) < 0) {
		err = -errno;
		close(db);
		c->db.fd = -1;
		return err;
	}
	c->memfd = fds[0];
	c->async_fd = fds[1];
	fds[0] = fds[1] = -1;
	c->hello = true;

	struct xrxe_ctrl_hello_reply *rep = REPLY(r, struct xrxe_ctrl_hello_reply);

	rep->abi_version = XRXE_ABI_VERSION;
	rep->dev_page_size = xrxe_devpage_size(ctrl->cfg.dp);
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	xrxe_ctrli_reply_fd(r, xrxe_devpage_fd(ctrl->cfg.dp), false);
	xrxe_ctrli_reply_fd(r, db, false);
	return 0;
}

static int op_alloc_pd(struct conn *c, const void *req, int *fds, struct reply *r)
{
	struct obj_pd *p;
	int err;

	(void)req;
	(void)fds;
	p = xrxe_ctrli_obj_new(c, OBJ_PD, sizeof(*p), &err);
	if (!p)
		return err;
	err = xrxe_tp_pd_alloc(c->ctrl->cfg.tp, &p->pdn);
	if (err) {
		xrxe_ctrli_obj_free(&p->o);
		return err;
	}
	count_adjust(c->ctrl, OBJ_PD, 1);
	REPLY(r, struct xrxe_ctrl_handle)->handle = p->o.handle;
	xrxe_ctrli_reply_len(r, sizeof(struct xrxe_ctrl_handle));
	return 0;
}

/* DEALLOC_PD, DEREG_MR, DESTROY_CQ/QP/AH/CHANNEL: look the handle up as the
 * op's type and destroy it. */
static int op_destroy(struct conn *c, const void *req, enum obj_type type)
{
	const struct xrxe_ctrl_handle *h = req;
	struct obj *o = xrxe_ctrli_obj_lookup(c, h->handle, type);

	if (!o)
		return -EBADF;
	return destroy_obj(o);
}

#define DESTROY_OP(name, type)                                                           \
	static int name(struct conn *c, const void *req, int *fds, struct reply *r)      \
	{                                                                                \
		(void)fds;                                                               \
		(void)r;                                                                 \
		return op_destroy(c, req, type);                                         \
	}
DESTROY_OP(op_dealloc_pd, OBJ_PD)
DESTROY_OP(op_dereg_mr, OBJ_MR)
DESTROY_OP(op_destroy_cq, OBJ_CQ)
DESTROY_OP(op_destroy_qp, OBJ_QP)
DESTROY_OP(op_destroy_ah, OBJ_AH)
DESTROY_OP(op_destroy_channel, OBJ_CHANNEL)
DESTROY_OP(op_destroy_srq, OBJ_SRQ)
DESTROY_OP(op_dealloc_mw, OBJ_MW)

static int op_reg_mr(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_reg_mr *m = req;
	/* IBV_ACCESS_OPTIONAL_RANGE bits may be ignored by a provider (verbs.h). */
	uint32_t access = m->access & ~(uint32_t)IBV_ACCESS_OPTIONAL_RANGE;
	const uint32_t wr = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_ATOMIC;
	struct obj_pd *pd;
	struct obj_mr *mr;
	int err;

	(void)fds;
	pd = (struct obj_pd *)xrxe_ctrli_obj_lookup(c, m->pd, OBJ_PD);
	if (!pd)
		return -EBADF;
	/* IBA 10.6.3.1 (and ibv_reg_mr): remote write or atomic access needs
	 * local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	/* Length 0: an MR of no bytes (the shim allows it only over device
	 * memory, as mlx5 does); nothing to map, keys that reach nothing. */
	if (m->iova + m->length < m->iova)
		return -EINVAL;
	mr = xrxe_ctrli_obj_new(c, OBJ_MR, sizeof(*mr), &err);
	if (!mr)
		return err;
	err = m->length ? xrxe_shm_map_mr(c->memfd, m->addr, m->length, (access & wr) != 0,
					  &mr->map)
			: 0;
	if (err)
		goto err_obj;
	err = xrxe_tp_mr_reg(c->ctrl->cfg.tp, pd->pdn, mr->map.host, m->iova, m->length, access,
			     &mr->lkey, &mr->rkey);
	if (err)
		goto err_unmap;
	mr->addr = m->addr;
	mr->length = m->length;
	mr->iova = m->iova;
	mr->access = access;
	count_adjust(c->ctrl, OBJ_MR, 1);

	struct xrxe_ctrl_reg_mr_reply *rep = REPLY(r, struct xrxe_ctrl_reg_mr_reply);

	rep->handle = mr->o.handle;
	rep->lkey = mr->lkey;
	rep->rkey = mr->rkey;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;

err_unmap:
	xrxe_shm_unmap_mr(&mr->map);
err_obj:
	xrxe_ctrli_obj_free(&mr->o);
	return err;
}

/* REREG_MR: a new mapping whenever the range or the access changes (a
 * read-only mapping must not serve a region that now grants write access),
 * swapped in only once the core accepted the change. */
static int op_rereg_mr(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_rereg_mr *m = req;
	const uint32_t wr = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_ATOMIC;
	bool trans = m->flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	bool acc = m->flags & IBV_REREG_MR_CHANGE_ACCESS;
	uint32_t access, pdn = 0;
	uint64_t addr, length, iova;
	struct xrxe_mr_map map = { 0 };
	struct obj_mr *mr;
	int err;

	(void)fds;
	mr = (struct obj_mr *)xrxe_ctrli_obj_lookup(c, m->handle, OBJ_MR);
	if (!mr)
		return -EBADF;
	if (m->flags & IBV_REREG_MR_CHANGE_PD) {
		struct obj_pd *pd = (struct obj_pd *)xrxe_ctrli_obj_lookup(c, m->pd, OBJ_PD);

		if (!pd)
			return -EBADF;
		pdn = pd->pdn;
	}
	access = acc ? m->access & ~(uint32_t)IBV_ACCESS_OPTIONAL_RANGE : mr->access;
	addr = trans ? m->addr : mr->addr;
	length = trans ? m->length : mr->length;
	iova = trans ? m->iova : mr->iova;
	if (trans && (!length || iova + length < iova))
		return -EINVAL;
	if (trans || acc) {
		err = xrxe_shm_map_mr(c->memfd, addr, length, (access & wr) != 0, &map);
		if (err)
			return err;
	}
	/* a new mapping is a new translation for the core, whatever the
	 * application asked for */
	err = xrxe_tp_mr_rereg(c->ctrl->cfg.tp, mr->lkey,
			       m->flags | (map.base ? IBV_REREG_MR_CHANGE_TRANSLATION : 0), pdn,
			       map.base ? map.host : mr->map.host, iova, length, access);
	if (err) {
		if (map.base)
			xrxe_shm_unmap_mr(&map);
		return err;
	}
	if (map.base) {
		xrxe_shm_unmap_mr(&mr->map);
		mr->map = map;
	}
	mr->addr = addr;
	mr->length = length;
	mr->iova = iova;
	mr->access = access;

	struct xrxe_ctrl_reg_mr_reply *rep = REPLY(r, struct xrxe_ctrl_reg_mr_reply);

	rep->handle = mr->o.handle;
	rep->lkey = mr->lkey;
	rep->rkey = mr->rkey;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

static int op_alloc_mw(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_alloc_mw *m = req;
	struct xrxe_ctrl_alloc_mw_reply *rep;
	struct obj_pd *pd;
	struct obj_mw *w;
	uint32_t rkey;
	int err;

	(void)fds;
	pd = (struct obj_pd *)xrxe_ctrli_obj_lookup(c, m->pd, OBJ_PD);
	if (!pd)
		return -EBADF;
	w = xrxe_ctrli_obj_new(c, OBJ_MW, sizeof(*w), &err);
	if (!w)
		return err;
	err = xrxe_tp_mw_alloc(c->ctrl->cfg.tp, pd->pdn, m->type, &w->mw, &rkey);
	if (err) {
		xrxe_ctrli_obj_free(&w->o);
		return err;
	}
	rep = REPLY(r, struct xrxe_ctrl_alloc_mw_reply);
	rep->handle = w->o.handle;
	rep->rkey = rkey;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

static int op_create_channel(struct conn *c, const void *req, int *fds, struct reply *r)
{
	struct obj_channel *ch;
	int err;

	(void)req;
	err = pipe_writer_check(fds[0]);
	if (err)
		return err;
	ch = xrxe_ctrli_obj_new(c, OBJ_CHANNEL, sizeof(*ch), &err);
	if (!ch)
		return err;
	ch->fd = fds[0];
	fds[0] = -1;
	count_adjust(c->ctrl, OBJ_CHANNEL, 1);
	REPLY(r, struct xrxe_ctrl_handle)->handle = ch->o.handle;
	xrxe_ctrli_reply_len(r, sizeof(struct xrxe_ctrl_handle));
	return 0;
}

static int op_create_cq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_cq *q = req;
	struct obj_channel *ch = NULL;
	struct obj_cq *cq;
	uint32_t nslots;
	int err;

	(void)fds;
	if (q->cqe < 1 || q->cqe > XRXE_MAX_CQE)
		return -EINVAL;
	if (c->ctrl->cfg.max_cq && c->ctrl->st.cqs >= c->ctrl->cfg.max_cq)
		return -ENOMEM; /* as ib_create_cq beyond max_cq */
	if (q->channel != XRXE_NO_HANDLE) {
		ch = (struct obj_channel *)xrxe_ctrli_obj_lookup(c, q->channel, OBJ_CHANNEL);
		if (!ch)
			return -EBADF;
	}
	nslots = pow2_ceil(q->cqe + 1); /* capacity is nslots - 1 */
	cq = xrxe_ctrli_obj_new(c, OBJ_CQ, sizeof(*cq), &err);
	if (!cq)
		return err;
	err = conn_ring(c, "cq", nslots, sizeof(struct xrxe_cqe), &cq->ring);
	if (err)
		goto err_obj;
	err = xrxe_tp_cq_create(c->ctrl->cfg.tp, xrxe_shm_ring(&cq->ring), nslots, &cq->o, &cq->cq);
	if (err)
		goto err_ring;
	cq->ch = ch;
	if (ch)
		ch->refs++;
	count_adjust(c->ctrl, OBJ_CQ, 1);

	struct xrxe_ctrl_create_cq_reply *rep = REPLY(r, struct xrxe_ctrl_create_cq_reply);

	rep->handle = cq->o.handle;
	rep->cqe = nslots - 1;
	rep->ring_size = cq->ring.size;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	/* The mapping keeps the file alive: our fd goes with the reply. */
	xrxe_ctrli_reply_fd(r, cq->ring.fd, true);
	cq->ring.fd = -1;
	return 0;

err_ring:
	conn_ring_free(c, &cq->ring);
err_obj:
	xrxe_ctrli_obj_free(&cq->o);
	return err;
}

/* ibv_resize_cq: a new ring; the core moves the unpolled CQEs into it (the
 * shim holds its CQ lock across the call, abi.h). */
static int op_resize_cq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_cq *q = req;
	struct xrxe_shm ring;
	struct obj_cq *cq;
	uint32_t nslots;
	int err;

	(void)fds;
	cq = (struct obj_cq *)xrxe_ctrli_obj_lookup(c, q->handle, OBJ_CQ);
	if (!cq)
		return -EBADF;
	if (q->cqe < 1 || q->cqe > XRXE_MAX_CQE)
		return -EINVAL;
	nslots = pow2_ceil(q->cqe + 1);
	err = conn_ring(c, "cq", nslots, sizeof(struct xrxe_cqe), &ring);
	if (err)
		return err;
	err = xrxe_tp_cq_resize(c->ctrl->cfg.tp, cq->cq, xrxe_shm_ring(&ring), nslots);
	if (err) {
		conn_ring_free(c, &ring);
		return err;
	}
	/* The core no longer looks at the old ring. */
	conn_ring_free(c, &cq->ring);
	cq->ring = ring;

	struct xrxe_ctrl_create_cq_reply *rep = REPLY(r, struct xrxe_ctrl_create_cq_reply);

	rep->handle = cq->o.handle;
	rep->cqe = nslots - 1;
	rep->ring_size = cq->ring.size;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	xrxe_ctrli_reply_fd(r, cq->ring.fd, true);
	cq->ring.fd = -1;
	return 0;
}

static int op_create_qp(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_qp *q = req;
	struct ibv_qp_cap cap = q->cap, got;
	struct obj_cq *scq, *rcq;
	struct obj_srq *srq = NULL;
	struct obj_pd *pd;
	struct obj_qp *qp;
	uint32_t sq_slots, rq_slots, sq_elem, rq_elem, data;
	int err;

	(void)fds;
	pd = (struct obj_pd *)xrxe_ctrli_obj_lookup(c, q->pd, OBJ_PD);
	scq = (struct obj_cq *)xrxe_ctrli_obj_lookup(c, q->send_cq, OBJ_CQ);
	rcq = (struct obj_cq *)xrxe_ctrli_obj_lookup(c, q->recv_cq, OBJ_CQ);
	if (!pd || !scq || !rcq)
		return -EBADF;
	if (q->qp_type != IBV_QPT_RC && q->qp_type != IBV_QPT_UC && q->qp_type != IBV_QPT_UD)
		return -EOPNOTSUPP; /* as rxe_qp_chk_init for RD, XRC, raw */
	if (q->srq != XRXE_NO_HANDLE) {
		srq = (struct obj_srq *)xrxe_ctrli_obj_lookup(c, q->srq, OBJ_SRQ);
		if (!srq)
			return -EBADF;
		/* IBA 11.2.4.1: with an SRQ the receive queue attributes are
		 * ignored; there is no RQ ring. */
		cap.max_recv_wr = cap.max_recv_sge = 0;
	}
	if (cap.max_send_wr > XRXE_MAX_QP_WR || cap.max_recv_wr > XRXE_MAX_QP_WR ||
	    cap.max_send_sge > XRXE_MAX_SGE || cap.max_recv_sge > XRXE_MAX_SGE ||
	    cap.max_inline_data > XRXE_MAX_INLINE)
		return -EINVAL;

	/* abi.h element sizes: SQ 72 + max(sge[], inline), RQ 16 + sge[]; powers
	 * of two. What the rounding adds is granted (ibv_create_qp reports
	 * the actual capacities). */
	data = cap.max_send_sge * 16 > cap.max_inline_data ? cap.max_send_sge * 16
							   : cap.max_inline_data;
	sq_elem = pow2_ceil((uint32_t)sizeof(struct xrxe_send_wqe) + data);
	rq_elem = pow2_ceil((uint32_t)sizeof(struct xrxe_recv_wqe) + cap.max_recv_sge * 16);
	sq_slots = pow2_ceil((cap.max_send_wr ? cap.max_send_wr : 1) + 1);
	rq_slots = pow2_ceil((cap.max_recv_wr ? cap.max_recv_wr : 1) + 1);
	got.max_send_wr = sq_slots - 1;
	got.max_recv_wr = rq_slots - 1;
	got.max_send_sge = (sq_elem - (uint32_t)sizeof(struct xrxe_send_wqe)) / 16;
	if (got.max_send_sge > XRXE_MAX_SGE)
		got.max_send_sge = XRXE_MAX_SGE;
	got.max_recv_sge = (rq_elem - (uint32_t)sizeof(struct xrxe_recv_wqe)) / 16;
	if (got.max_recv_sge > XRXE_MAX_SGE)
		got.max_recv_sge = XRXE_MAX_SGE;
	got.max_inline_data = sq_elem - (uint32_t)sizeof(struct xrxe_send_wqe);
	if (got.max_inline_data > XRXE_MAX_INLINE)
		got.max_inline_data = XRXE_MAX_INLINE;

	qp = xrxe_ctrli_obj_new(c, OBJ_QP, sizeof(*qp), &err);
	if (!qp)
		return err;
	qp->sq.fd = qp->rq.fd = -1;
	err = conn_ring(c, "sq", sq_slots, sq_elem, &qp->sq);
	if (err)
		goto err_obj;
	if (!srq) {
		err = conn_ring(c, "rq", rq_slots, rq_elem, &qp->rq);
		if (err)
			goto err_sq;
	} else {
		got.max_recv_wr = got.max_recv_sge = 0;
	}

	struct xrxe_tp_qp_init init = {
		.qp_type = (enum ibv_qp_type)q->qp_type,
		.pdn = pd->pdn,
		.send_cq = scq->cq,
		.recv_cq = rcq->cq,
		.sq = xrxe_shm_ring(&qp->sq),
		.sq_slots = sq_slots,
		.rq = srq ? NULL : xrxe_shm_ring(&qp->rq),
		.rq_slots = rq_slots,
		.srq = srq ? srq->srq : NULL,
		.cap = got,
		.sq_sig_all = q->sq_sig_all != 0,
		.user = &qp->o,
	};

	err = xrxe_tp_qp_create(c->ctrl->cfg.tp, &init, &qp->qpn, &qp->qp);
	if (err)
		goto err_rq;
	count_adjust(c->ctrl, OBJ_QP, 1);

	struct xrxe_ctrl_create_qp_reply *rep = REPLY(r, struct xrxe_ctrl_create_qp_reply);

	rep->handle = qp->o.handle;
	rep->qpn = qp->qpn;
	rep->cap = got;
	rep->sq_size = qp->sq.size;
	rep->rq_size = srq ? 0 : qp->rq.size;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	xrxe_ctrli_reply_fd(r, qp->sq.fd, true);
	if (!srq)
		xrxe_ctrli_reply_fd(r, qp->rq.fd, true);
	qp->sq.fd = qp->rq.fd = -1;
	return 0;

err_rq:
	if (!srq) {
		conn_ring_free(c, &qp->rq);
	}
err_sq:
	conn_ring_free(c, &qp->sq);
err_obj:
	xrxe_ctrli_obj_free(&qp->o);
	return err;
}

/* Resolve an address, parking the request while the neighbour is unknown. */
static int resolve_av(struct conn *c, const struct ibv_ah_attr *ah, struct xrxe_av *av)
{
	uint64_t now = xrxe_ctrli_now_ns();
	int err = xrxe_nl_resolve(c->ctrl->cfg.nl, ah, now, av);

	if (err != -EAGAIN)
		return err;
	if (!c->park_msg) {
		c->park_deadline = now + RESOLVE_TIMEOUT_NS;
		return CTRL_PARKED;
	}
	return now >= c->park_deadline ? -EHOSTUNREACH : CTRL_PARKED;
}

static int op_modify_qp(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_modify_qp *m = req;
	struct ibv_qp_attr attr = m->attr;
	struct xrxe_av av, *avp = NULL;
	struct obj_qp *qp;
	int err;

	(void)fds;
	(void)r;
	qp = (struct obj_qp *)xrxe_ctrli_obj_lookup(c, m->handle, OBJ_QP);
	if (!qp)
		return -EBADF;
	/* One port; no alternate path (APM is not implemented). */
	if ((m->attr_mask & IBV_QP_PORT) && attr.port_num != 1)
		return -EINVAL;
	if (m->attr_mask & IBV_QP_ALT_PATH)
		return -EINVAL;
	if (m->attr_mask & IBV_QP_AV) {
		err = resolve_av(c, &attr.ah_attr, &av);
		if (err)
			return err;
		avp = &av;
	}
	return xrxe_tp_qp_modify(c->ctrl->cfg.tp, qp->qp, &attr, (int)m->attr_mask, avp);
}

static int op_query_qp(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_handle *h = req;
	struct xrxe_ctrl_query_qp_reply *rep = REPLY(r, struct xrxe_ctrl_query_qp_reply);
	struct obj_qp *qp;
	int err;

	(void)fds;
	qp = (struct obj_qp *)xrxe_ctrli_obj_lookup(c, h->handle, OBJ_QP);
	if (!qp)
		return -EBADF;
	memset(&rep->attr, 0, sizeof(rep->attr));
	memset(&rep->init_attr, 0, sizeof(rep->init_attr));
	err = xrxe_tp_qp_query(c->ctrl->cfg.tp, qp->qp, &rep->attr, &rep->init_attr);
	if (err)
		return err;
	/* Daemon pointers mean nothing to the application (and must not leak). */
	rep->init_attr.qp_context = NULL;
	rep->init_attr.send_cq = NULL;
	rep->init_attr.recv_cq = NULL;
	rep->init_attr.srq = NULL;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

static int op_create_ah(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_ah *a = req;
	struct obj_pd *pd;
	struct obj_ah *ah;
	struct xrxe_av av;
	int err;

	(void)fds;
	pd = (struct obj_pd *)xrxe_ctrli_obj_lookup(c, a->pd, OBJ_PD);
	if (!pd)
		return -EBADF;
	err = resolve_av(c, &a->attr, &av);
	if (err)
		return err;
	ah = xrxe_ctrli_obj_new(c, OBJ_AH, sizeof(*ah), &err);
	if (!ah)
		return err;
	err = xrxe_tp_ah_create(c->ctrl->cfg.tp, pd->pdn, &av, &ah->ah);
	if (err) {
		xrxe_ctrli_obj_free(&ah->o);
		return err;
	}
	count_adjust(c->ctrl, OBJ_AH, 1);

	struct xrxe_ctrl_create_ah_reply *rep = REPLY(r, struct xrxe_ctrl_create_ah_reply);

	rep->handle = ah->o.handle;
	rep->ah_num = ah->ah;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

/* --- shared receive queues -------------------------------------------------- */

static void srq_reply(struct reply *r, const struct obj_srq *q)
{
	struct xrxe_ctrl_srq_reply *rep = REPLY(r, struct xrxe_ctrl_srq_reply);

	rep->handle = q->o.handle;
	xrxe_tp_srq_query(q->srq, &rep->attr);
	rep->ring_size = q->ring.size;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
}

static int op_create_srq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_srq *q = req;
	struct obj_pd *pd;
	struct obj_srq *srq;
	uint32_t nslots, elem, max_sge;
	int err;

	(void)fds;
	pd = (struct obj_pd *)xrxe_ctrli_obj_lookup(c, q->pd, OBJ_PD);
	if (!pd)
		return -EBADF;
	/* ibv_create_srq: max_wr and max_sge within the device limits. */
	if (q->attr.max_wr < 1 || q->attr.max_wr > XRXE_MAX_QP_WR || q->attr.max_sge > XRXE_MAX_SGE)
		return -EINVAL;
	if (c->ctrl->cfg.max_srq && c->ctrl->st.srqs >= c->ctrl->cfg.max_srq)
		return -ENOMEM;
	nslots = pow2_ceil(q->attr.max_wr + 1);
	elem = pow2_ceil((uint32_t)sizeof(struct xrxe_recv_wqe) +
			 (q->attr.max_sge ? q->attr.max_sge : 1) * 16);
	max_sge = (elem - (uint32_t)sizeof(struct xrxe_recv_wqe)) / 16;
	if (max_sge > XRXE_MAX_SGE)
		max_sge = XRXE_MAX_SGE;
	srq = xrxe_ctrli_obj_new(c, OBJ_SRQ, sizeof(*srq), &err);
	if (!srq)
		return err;
	srq->ring.fd = -1;
	err = conn_ring(c, "srq", nslots, elem, &srq->ring);
	if (err)
		goto err_obj;
	err = xrxe_tp_srq_create(c->ctrl->cfg.tp, pd->pdn, xrxe_shm_ring(&srq->ring), nslots,
				 max_sge, &srq->o, &srq->srq);
	if (err)
		goto err_ring;
	/* The verbs man page says create ignores srq_limit; rxe arms it. Arm
	 * a sane one, as rxe; an out-of-range one is ignored (the modify
	 * refuses it and nothing is armed). */
	if (q->attr.srq_limit) {
		struct ibv_srq_attr a = { .srq_limit = q->attr.srq_limit };

		(void)xrxe_tp_srq_modify(c->ctrl->cfg.tp, srq->srq, &a, IBV_SRQ_LIMIT);
	}
	count_adjust(c->ctrl, OBJ_SRQ, 1);
	srq_reply(r, srq);
	xrxe_ctrli_reply_fd(r, srq->ring.fd, true);
	srq->ring.fd = -1;
	return 0;

err_ring:
	conn_ring_free(c, &srq->ring);
err_obj:
	xrxe_ctrli_obj_free(&srq->o);
	return err;
}

static int op_modify_srq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_srq *q = req;
	struct obj_srq *srq;

	(void)fds;
	(void)r;
	srq = (struct obj_srq *)xrxe_ctrli_obj_lookup(c, q->handle, OBJ_SRQ);
	if (!srq)
		return -EBADF;
	return xrxe_tp_srq_modify(c->ctrl->cfg.tp, srq->srq, &q->attr, (int)q->attr_mask);
}

static int op_query_srq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_srq *q = req;
	struct obj_srq *srq;

	(void)fds;
	srq = (struct obj_srq *)xrxe_ctrli_obj_lookup(c, q->handle, OBJ_SRQ);
	if (!srq)
		return -EBADF;
	srq_reply(r, srq);
	return 0;
}

/* --- multicast ------------------------------------------------------------------ */

static int op_mcast(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_mcast *m = req;
	struct xrxe_tp *tp = c->ctrl->cfg.tp;
	struct obj_qp *qp;
	bool edge;
	int err;

	(void)fds;
	(void)r;
	qp = (struct obj_qp *)xrxe_ctrli_obj_lookup(c, m->qp, OBJ_QP);
	if (!qp)
		return -EBADF;
	if (m->hdr.op == XRXE_CTRL_DETACH_MCAST) {
		err = xrxe_tp_mcast_detach(tp, qp->qp, &m->gid, &edge);
		if (!err && edge)
			xrxe_nl_mcast(c->ctrl->cfg.nl, &m->gid, false);
		return err == -ENOENT ? -EINVAL : err; /* ib_detach_mcast: EINVAL */
	}
	err = xrxe_tp_mcast_attach(tp, qp->qp, &m->gid, &edge);
	if (err == -EEXIST)
		return 0; /* attaching twice is not an error (rxe_attach_mcast) */
	if (err || !edge)
		return err;
	/* The first QP of this daemon in the group: join it on the interface so
	 * the NIC accepts the group's MAC. */
	err = xrxe_nl_mcast(c->ctrl->cfg.nl, &m->gid, true);
	if (err) {
		xrxe_tp_mcast_detach(tp, qp->qp, &m->gid, &edge);
		/* the kernel's membership limit (igmp_max_memberships): as the
		 * device's max_mcast_grp would be */
		return err == -ENOBUFS ? -ENOMEM : err;
	}
	return 0;
}

static int op_stats(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_hdr *h = req;
	struct xrxe_ctrl *ctrl = c->ctrl;
	struct xrxe_shm blob;
	char *text = NULL;
	size_t len = 0;
	FILE *out;
	int err;

	(void)fds;
	if (h->flags & ~(XRXE_STATS_F_JSON | XRXE_STATS_F_QP | XRXE_STATS_F_CM))
		return -EINVAL;
	if (!ctrl->cfg.stats)
		return -EOPNOTSUPP;
	out = open_memstream(&text, &len);
	if (!out)
		return -ENOMEM;
	if (h->flags & XRXE_STATS_F_CM)
		xrxe_ctrl_cm_report(ctrl, out, h->flags & XRXE_STATS_F_JSON);
	else
		ctrl->cfg.stats(ctrl->cfg.user, out, h->flags);
	if (fclose(out)) {
		free(text);
		return -ENOMEM;
	}
	err = xrxe_shm_blob_create("xrxe-stats", text, len, &blob);
	free(text);
	if (err)
		return err;
	REPLY(r, struct xrxe_ctrl_stats_reply)->size = len;
	xrxe_ctrli_reply_len(r, sizeof(struct xrxe_ctrl_stats_reply));
	xrxe_ctrli_reply_fd(r, blob.fd, true);
	return 0;
}

/* XRXE_CTRL_CC: show or change the congestion-control parameters (the
 * transport validates every value; changes are root's, like mlx5 debugfs). */
static int op_cc(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cc *q = req;
	struct xrxe_ctrl_cc_reply *rep = REPLY(r, struct xrxe_ctrl_cc_reply);
	struct xrxe_tp *tp = c->ctrl->cfg.tp;
	struct xrxe_tp_cc_params p;
	char text[XRXE_CC_TEXT_MAX], err[160], *save = NULL, *tok;
	FILE *out;
	int ret;

	(void)fds;
	if (q->hdr.flags > XRXE_CC_DISABLE)
		return -EINVAL;
	if (q->hdr.flags != XRXE_CC_SHOW && c->uid != 0)
		return -EPERM;
	xrxe_tp_cc_get(tp, &p);
	switch (q->hdr.flags) {
	case XRXE_CC_SET:
		if (!memchr(q->text, 0, sizeof(q->text)))
			return -EINVAL;
		memcpy(text, q->text, sizeof(text));
		for (tok = strtok_r(text, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
			if (xrxe_cc_param_parse(&p, tok, err, sizeof(err))) {
				xrxe_info("%s: cc set refused: %s", c->ctrl->cfg.ifname, err);
				return -EINVAL;
			}
		}
		break;
	case XRXE_CC_ENABLE:
	case XRXE_CC_DISABLE:
		p.enabled = q->hdr.flags == XRXE_CC_ENABLE;
		break;
	default:
		break;
	}
	if (q->hdr.flags != XRXE_CC_SHOW) {
		ret = xrxe_tp_cc_set(tp, &p);
		if (ret)
			return ret;
		xrxe_info("%s: cc parameters changed by pid %d", c->ctrl->cfg.ifname, (int)c->pid);
	}
	out = fmemopen(rep->text, sizeof(rep->text), "w");
	if (!out)
		return -ENOMEM;
	xrxe_cc_param_format(&p, out);
	rep->len = (uint32_t)ftell(out);
	rep->pad = 0;
	fclose(out);
	if (rep->len >= sizeof(rep->text))
		return -EOVERFLOW;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

struct op_desc {
	const char *name;
	uint32_t len;      /* exact request size */
	uint8_t nfds;      /* exact fd count */
	bool before_hello; /* allowed as the first request */
	int (*fn)(struct conn *c, const void *req, int *fds, struct reply *r);
};

static const struct op_desc ops[XRXE_CTRL_OP_COUNT] = {
	[XRXE_CTRL_HELLO] = { "hello", sizeof(struct xrxe_ctrl_hello), 2, true, op_hello },
	[XRXE_CTRL_ALLOC_PD] = { "alloc_pd", sizeof(struct xrxe_ctrl_hdr), 0, false, op_alloc_pd },
	[XRXE_CTRL_DEALLOC_PD] = { "dealloc_pd", sizeof(struct xrxe_ctrl_handle), 0, false,
				   op_dealloc_pd },
	[XRXE_CTRL_REG_MR] = { "reg_mr", sizeof(struct xrxe_ctrl_reg_mr), 0, false, op_reg_mr },
	[XRXE_CTRL_DEREG_MR] = { "dereg_mr", sizeof(struct xrxe_ctrl_handle), 0, false,
				 op_dereg_mr },
	[XRXE_CTRL_CREATE_CHANNEL] = { "create_channel", sizeof(struct xrxe_ctrl_hdr), 1, false,
				       op_create_channel },
	[XRXE_CTRL_DESTROY_CHANNEL] = { "destroy_channel", sizeof(struct xrxe_ctrl_handle), 0,
					false, op_destroy_channel },
	[XRXE_CTRL_CREATE_CQ] = { "create_cq", sizeof(struct xrxe_ctrl_create_cq), 0, false,
				  op_create_cq },
	[XRXE_CTRL_DESTROY_CQ] = { "destroy_cq", sizeof(struct xrxe_ctrl_handle), 0, false,
				   op_destroy_cq },
	[XRXE_CTRL_RESIZE_CQ] = { "resize_cq", sizeof(struct xrxe_ctrl_create_cq), 0, false,
				  op_resize_cq },
	[XRXE_CTRL_CREATE_QP] = { "create_qp", sizeof(struct xrxe_ctrl_create_qp), 0, false,
				  op_create_qp },
	[XRXE_CTRL_MODIFY_QP] = { "modify_qp", sizeof(struct xrxe_ctrl_modify_qp), 0, false,
				  op_modify_qp },
	[XRXE_CTRL_QUERY_QP] = { "query_qp", sizeof(struct xrxe_ctrl_handle), 0, false,
				 op_query_qp },
	[XRXE_CTRL_DESTROY_QP] = { "destroy_qp", sizeof(struct xrxe_ctrl_handle), 0, false,
				   op_destroy_qp },
	[XRXE_CTRL_CREATE_AH] = { "create_ah", sizeof(struct xrxe_ctrl_create_ah), 0, false,
				  op_create_ah },
	[XRXE_CTRL_DESTROY_AH] = { "destroy_ah", sizeof(struct xrxe_ctrl_handle), 0, false,
				   op_destroy_ah },
	[XRXE_CTRL_CREATE_SRQ] = { "create_srq", sizeof(struct xrxe_ctrl_srq), 0, false,
				   op_create_srq },
	[XRXE_CTRL_MODIFY_SRQ] = { "modify_srq", sizeof(struct xrxe_ctrl_srq), 0, false,
				   op_modify_srq },
	[XRXE_CTRL_QUERY_SRQ] = { "query_srq", sizeof(struct xrxe_ctrl_srq), 0, false,
				  op_query_srq },
	[XRXE_CTRL_DESTROY_SRQ] = { "destroy_srq", sizeof(struct xrxe_ctrl_handle), 0, false,
				    op_destroy_srq },
	[XRXE_CTRL_ATTACH_MCAST] = { "attach_mcast", sizeof(struct xrxe_ctrl_mcast), 0, false,
				     op_mcast },
	[XRXE_CTRL_DETACH_MCAST] = { "detach_mcast", sizeof(struct xrxe_ctrl_mcast), 0, false,
				     op_mcast },
	[XRXE_CTRL_STATS] = { "stats", sizeof(struct xrxe_ctrl_hdr), 0, true, op_stats },
	[XRXE_CTRL_CC] = { "cc", sizeof(struct xrxe_ctrl_cc), 0, true, op_cc },
	[XRXE_CTRL_ALLOC_MW] = { "alloc_mw", sizeof(struct xrxe_ctrl_alloc_mw), 0, false,
				 op_alloc_mw },
	[XRXE_CTRL_DEALLOC_MW] = { "dealloc_mw", sizeof(struct xrxe_ctrl_handle), 0, false,
				   op_dealloc_mw },
	[XRXE_CTRL_REREG_MR] = { "rereg_mr", sizeof(struct xrxe_ctrl_rereg_mr), 0, false,
				 op_rereg_mr },
	/* The CM: no HELLO (a librdmacm connection has no memory or rings), but
	 * CM_OPEN first (ctrl_cm.c checks) */
	[XRXE_CTRL_CM_OPEN] = { "cm_open", sizeof(struct xrxe_ctrl_cm_open), 0, true,
				xrxe_ctrli_op_cm_open },
	[XRXE_CTRL_CM_CREATE_CHANNEL] = { "cm_create_channel", sizeof(struct xrxe_ctrl_cm_channel), 1, true,
				xrxe_ctrli_op_cm_create_channel },
	[XRXE_CTRL_CM_DESTROY_CHANNEL] = { "cm_destroy_channel", sizeof(struct xrxe_ctrl_handle), 0, true,
				xrxe_ctrli_op_cm_destroy_channel },
	[XRXE_CTRL_CM_CREATE_ID] = { "cm_create_id", sizeof(struct xrxe_ctrl_cm_create_id), 0, true,
				xrxe_ctrli_op_cm_create_id },
	[XRXE_CTRL_CM_DESTROY_ID] = { "cm_destroy_id", sizeof(struct xrxe_ctrl_handle), 0, true,
				xrxe_ctrli_op_cm_destroy_id },
	[XRXE_CTRL_CM_BIND] = { "cm_bind", sizeof(struct xrxe_ctrl_cm_bind), 0, true,
				xrxe_ctrli_op_cm_bind },
	[XRXE_CTRL_CM_RESOLVE_ADDR] = { "cm_resolve_addr", sizeof(struct xrxe_ctrl_cm_resolve_addr), 0, true,
				xrxe_ctrli_op_cm_resolve_addr },
	[XRXE_CTRL_CM_RESOLVE_ROUTE] = { "cm_resolve_route", sizeof(struct xrxe_ctrl_cm_handle_arg), 0, true,
				xrxe_ctrli_op_cm_resolve_route },
	[XRXE_CTRL_CM_LISTEN] = { "cm_listen", sizeof(struct xrxe_ctrl_cm_handle_arg), 0, true,
				xrxe_ctrli_op_cm_listen },
	[XRXE_CTRL_CM_CONNECT] = { "cm_connect", sizeof(struct xrxe_ctrl_cm_connect), 0, true,
				xrxe_ctrli_op_cm_connect },
	[XRXE_CTRL_CM_ACCEPT] = { "cm_accept", sizeof(struct xrxe_ctrl_cm_connect), 0, true,
				xrxe_ctrli_op_cm_accept },
	[XRXE_CTRL_CM_REJECT] = { "cm_reject", sizeof(struct xrxe_ctrl_cm_reject), 0, true,
				xrxe_ctrli_op_cm_reject },
	[XRXE_CTRL_CM_DISCONNECT] = { "cm_disconnect", sizeof(struct xrxe_ctrl_cm_handle_arg), 0, true,
				xrxe_ctrli_op_cm_disconnect },
	[XRXE_CTRL_CM_ESTABLISH] = { "cm_establish", sizeof(struct xrxe_ctrl_cm_handle_arg), 0, true,
				xrxe_ctrli_op_cm_establish },
	[XRXE_CTRL_CM_INIT_QP_ATTR] = { "cm_init_qp_attr", sizeof(struct xrxe_ctrl_cm_handle_arg), 0, true,
				xrxe_ctrli_op_cm_init_qp_attr },
	[XRXE_CTRL_CM_NOTIFY] = { "cm_notify", sizeof(struct xrxe_ctrl_cm_handle_arg), 0, true,
				xrxe_ctrli_op_cm_notify },
	[XRXE_CTRL_CM_SET_OPTION] = { "cm_set_option", sizeof(struct xrxe_ctrl_cm_set_option), 0, true,
				xrxe_ctrli_op_cm_set_option },
	[XRXE_CTRL_CM_JOIN_MCAST] = { "cm_join_mcast", sizeof(struct xrxe_ctrl_cm_mcast), 0, true,
				xrxe_ctrli_op_cm_join_mcast },
	[XRXE_CTRL_CM_LEAVE_MCAST] = { "cm_leave_mcast", sizeof(struct xrxe_ctrl_cm_mcast), 0, true,
				xrxe_ctrli_op_cm_leave_mcast },
	[XRXE_CTRL_CM_MIGRATE_ID] = { "cm_migrate_id", sizeof(struct xrxe_ctrl_cm_handle_arg), 0, true,
				xrxe_ctrli_op_cm_migrate_id },
	[XRXE_CTRL_CM_QUERY] = { "cm_query", sizeof(struct xrxe_ctrl_cm_handle_arg), 0, true,
				xrxe_ctrli_op_cm_query },
};

/* --- dispatch ------------------------------------------------------------- */

static void close_fds(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Serve one request. Returns false if the connection was closed. */
static bool handle_msg(struct conn *c, const union msgbuf *m, size_t n, int *fds, unsigned nfds,
		       bool truncated)
{
	struct xrxe_ctrl *ctrl = c->ctrl;
	const struct op_desc *d = NULL;
	struct reply r;
	bool bad = false;
	int ret, err;

	r.u.hdr = (struct xrxe_ctrl_hdr){ 0 };
	r.len = sizeof(struct xrxe_ctrl_hdr);
	r.nfds = 0;
	r.owned = 0;
	c->requests++;
	ctrl->st.requests++;

	if (n < sizeof(struct xrxe_ctrl_hdr) || truncated) {
		ret = -EINVAL;
		bad = true;
		if (n >= sizeof(struct xrxe_ctrl_hdr)) {
			r.u.hdr.op = m->hdr.op;
			r.u.hdr.seq = m->hdr.seq;
		}
		goto reply;
	}
	r.u.hdr.op = m->hdr.op;
	r.u.hdr.seq = m->hdr.seq;
	if (m->hdr.op < XRXE_CTRL_OP_COUNT && ops[m->hdr.op].fn)
		d = &ops[m->hdr.op];
	if (!d || m->hdr.length != n || n != d->len || nfds != d->nfds) {
		ret = -EINVAL;
		bad = true;
		goto reply;
	}
	if (!c->hello && !d->before_hello) {
		ret = -EPROTO;
		bad = true;
		goto reply;
	}
	ret = d->fn(c, m, fds, &r);
	if (ret == CTRL_PARKED) {
		close_fds(fds, nfds); /* none: only fd-less ops park */
		nfds = 0;
		if (!c->park_msg) {
			c->park_msg = malloc(sizeof(*c->park_msg));
			if (!c->park_msg) {
				ret = -ENOMEM;
				goto reply;
			}
			memcpy(c->park_msg, m, n);
			c->park_len = n;
			/* Stop reading this connection (requests are answered in
			 * order); a hang-up is still reported. */
			conn_set_events(c, EPOLLRDHUP);
			xrxe_dbg("conn %u: %s waits for neighbour resolution", c->id, d->name);
		}
		c->park_retry = xrxe_ctrli_now_ns() + RESOLVE_RETRY_NS;
		return true;
	}
	if (ret == -EBADF)
		bad = true;

reply:
	close_fds(fds, nfds);
	if (c->park_msg && ret != CTRL_PARKED)
		conn_unpark(c);
	if (ret) {
		/* A failed request's reply is the bare header. */
		for (unsigned i = 0; i < r.nfds; i++)
			if (r.owned & (1u << i))
				close(r.fds[i]);
		r.len = sizeof(struct xrxe_ctrl_hdr);
		r.nfds = 0;
		r.owned = 0;
		ctrl->st.failed_requests++;
		if (bad)
			ctrl->st.bad_requests++;
		xrxe_dbg("conn %u: %s: %s", c->id, d ? d->name : "bad request", strerror(-ret));
	}
	r.u.hdr.status = ret;
	r.u.hdr.length = (uint32_t)r.len;
	err = xrxe_ctrl_send(c->ev.fd, r.u.raw, r.len, r.fds, r.nfds, true);
	for (unsigned i = 0; i < r.nfds; i++)
		if (r.owned & (1u << i))
			close(r.fds[i]);
	if (err) {
		/* The application is not reading its replies (or is gone): the
		 * protocol is strictly request/reply, so this is fatal for it. */
		conn_close(c, err == -EAGAIN ? "not reading replies" : strerror(-err));
		return false;
	}
	return true;
}

static void conn_event(struct xrxe_evsrc *src, uint32_t events)
{
	struct conn *c = (struct conn *)src;
	struct xrxe_ctrl *ctrl = c->ctrl;

	if (c->park_msg) {
		if (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
			conn_close(c, "hang-up");
		return;
	}
	for (int i = 0; i < REQS_PER_WAKE; i++) {
		int fds[XRXE_MAX_CTRL_FDS];
		unsigned nfds;
		bool trunc;
		ssize_t n = xrxe_ctrl_recv(c->ev.fd, ctrl->rx.raw, sizeof(ctrl->rx.raw), fds, &nfds,
					   &trunc);

		if (n == -EAGAIN)
			return;
		if (n <= 0) {
			/* 0: end of stream (a zero-length message is no request
			 * either); the application exited or crashed. */
			close_fds(fds, nfds);
			conn_close(c, n == 0 ? "hang-up" : strerror((int)-n));
			return;
		}
		if (!handle_msg(c, &ctrl->rx, (size_t)n, fds, nfds, trunc))
			return;
		if (c->park_msg)
			return;
	}
}

static void accept_event(struct xrxe_evsrc *src, uint32_t events)
{
	struct xrxe_ctrl *ctrl = (struct xrxe_ctrl *)src;

	(void)events;
	for (;;) {
		struct ucred cred = { 0 };
		socklen_t clen = sizeof(cred);
		struct epoll_event ev;
		struct conn *c;
		int fd;

		fd = accept4(ctrl->ev.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				xrxe_warn("%s: accept: %s", ctrl->cfg.ifname, strerror(errno));
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			xrxe_warn("%s: SO_PEERCRED: %s", ctrl->cfg.ifname, strerror(errno));
			close(fd);
			continue;
		}
		if (ctrl->st.conns >= MAX_CONNS) {
			xrxe_warn("%s: refusing pid %d uid %u: %d connections already",
				  ctrl->cfg.ifname, (int)cred.pid, (unsigned)cred.uid, MAX_CONNS);
			ctrl->st.refused++;
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->ctrl = ctrl;
		c->ev.fd = fd;
		c->ev.fn = conn_event;
		c->db.fd = -1;
		c->memfd = c->async_fd = -1;
		c->id = ++ctrl->next_id;
		c->pid = cred.pid;
		c->uid = cred.uid;
		c->gid = cred.gid;
		if (getrandom(&c->gen_base, sizeof(c->gen_base), GRND_NONBLOCK) < 0)
			c->gen_base = (uint16_t)(c->id * 0x9e37u);
		ev = (struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP, .data.ptr = &c->ev };
		if (epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			xrxe_warn("%s: epoll: %s", ctrl->cfg.ifname, strerror(errno));
			close(fd);
			free(c);
			continue;
		}
		c->next = ctrl->conns;
		if (c->next)
			c->next->prev = c;
		ctrl->conns = c;
		ctrl->st.conns++;
		ctrl->st.accepted++;
		xrxe_info("conn %u: pid %d uid %u gid %u connected", c->id, (int)c->pid,
			  (unsigned)c->uid, (unsigned)c->gid);
	}
}

uint64_t xrxe_ctrl_next_deadline(const struct xrxe_ctrl *ctrl)
{
	uint64_t t = UINT64_MAX;

	uint64_t cm = xrxe_ctrli_cm_deadline(ctrl);

	for (const struct conn *c = ctrl->conns; c; c = c->next)
		if (c->park_msg && c->park_retry < t)
			t = c->park_retry;
	return cm < t ? cm : t;
}

void xrxe_ctrl_tick(struct xrxe_ctrl *ctrl, uint64_t now)
{
	struct conn *c, *next;

	for (c = ctrl->conns; c; c = next) {
		next = c->next;
		if (!c->park_msg || c->park_retry > now)
			continue;
		/* Run the parked request again; it replies (and unparks) once
		 * resolved or timed out. */
		/* A retry is not a new request. Once answered, requests that
		 * queued up meanwhile are served from the next epoll round
		 * (EPOLLIN is back on). */
		c->requests--;
		ctrl->st.requests--;
		handle_msg(c, c->park_msg, c->park_len, NULL, 0, false);
	}
	xrxe_ctrli_cm_tick(ctrl, now);
}

/* --- transport callbacks -------------------------------------------------- */

void xrxe_ctrl_cq_event(struct xrxe_ctrl *ctrl, void *cq_user)
{
	struct obj_cq *cq = cq_user;
	uint32_t h;

	if (!cq || cq->o.type != OBJ_CQ || !cq->ch)
		return;
	h = cq->o.handle;
	/* 4 bytes, atomic on a pipe; nonblocking: a full pipe drops the event
	 * (the application is not reading its channel). */
	if (write(cq->ch->fd, &h, sizeof(h)) == (ssize_t)sizeof(h))
		ctrl->st.cq_events++;
	else
		ctrl->st.cq_event_drops++;
}

void xrxe_ctrl_async_event(struct xrxe_ctrl *ctrl, enum ibv_event_type type, void *obj_user)
{
	struct obj *o = obj_user;

	(void)ctrl;
	if (!o)
		return;
	write_async(o->conn, type, o->handle);
}

void xrxe_ctrl_port_event(struct xrxe_ctrl *ctrl, enum ibv_event_type type)
{
	for (struct conn *c = ctrl->conns; c; c = c->next)
		write_async(c, type, 1);
}

void xrxe_ctrl_get_stats(const struct xrxe_ctrl *ctrl, struct xrxe_ctrl_stats *st)
{
	*st = ctrl->st;
}

/* --- socket setup ----------------------------------------------------------- */

/* Is a daemon answering on path? Only a refused connection proves the file
 * is a leftover of a crashed one. */
static bool socket_is_live(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, ret;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return true; /* cannot tell: do not touch it */
	ret = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	return ret == 0 || errno == EAGAIN; /* EAGAIN: alive, backlog full */
}

int xrxe_ctrl_open(const struct xrxe_ctrl_config *cfg, struct xrxe_ctrl **out)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct epoll_event ev;
	struct xrxe_ctrl *ctrl;
	struct stat st;
	int err;

	ctrl = calloc(1, sizeof(*ctrl));
	if (!ctrl)
		return -ENOMEM;
	ctrl->cfg = *cfg;
	ctrl->ev.fd = ctrl->lock_fd = -1;
	ctrl->ev.fn = accept_event;
	err = xrxe_ctrl_sock_path(cfg->ifname, ctrl->path, sizeof(ctrl->path));
	if (err) {
		xrxe_err("%s: no control socket path for this name", cfg->ifname);
		goto err_free;
	}
	if (mkdir(XRXE_RUN_DIR, 0755) < 0 && errno != EEXIST) {
		err = -errno;
		xrxe_err("mkdir %s: %s", XRXE_RUN_DIR, strerror(errno));
		goto err_free;
	}

	/* One daemon per interface: the lock settles races between two
	 * starting at once; the socket check below covers the rest. */
	snprintf(ctrl->lock_path, sizeof(ctrl->lock_path), "%s/%s.lock", XRXE_RUN_DIR, cfg->ifname);
	ctrl->lock_fd = open(ctrl->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (ctrl->lock_fd < 0) {
		err = -errno;
		xrxe_err("%s: %s", ctrl->lock_path, strerror(errno));
		goto err_free;
	}
	if (flock(ctrl->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
		xrxe_err("%s: another xrxed serves this interface (%s is locked)", cfg->ifname,
			 ctrl->lock_path);
		goto err_lock;
	}
	if (lstat(ctrl->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			err = -EEXIST;
			xrxe_err("%s exists and is not a socket; not touching it", ctrl->path);
			goto err_lock;
		}
		if (socket_is_live(ctrl->path)) {
			err = -EADDRINUSE;
			xrxe_err("%s: another daemon answers on %s", cfg->ifname, ctrl->path);
			goto err_lock;
		}
		xrxe_info("%s: replacing stale socket %s", cfg->ifname, ctrl->path);
		unlink(ctrl->path);
	}

	ctrl->ev.fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctrl->ev.fd < 0) {
		err = -errno;
		xrxe_err("control socket: %s", strerror(errno));
		goto err_lock;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", ctrl->path);
	if (bind(ctrl->ev.fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = -errno;
		xrxe_err("bind %s: %s", ctrl->path, strerror(errno));
		goto err_sock;
	}
	/* Any user may connect: each connection only reaches its own objects
	 * and memory, and SO_PEERCRED names who it is. */
	if (chmod(ctrl->path, 0666) < 0 || listen(ctrl->ev.fd, 64) < 0) {
		err = -errno;
		xrxe_err("%s: %s", ctrl->path, strerror(errno));
		goto err_unlink;
	}
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &ctrl->ev };
	if (epoll_ctl(cfg->epfd, EPOLL_CTL_ADD, ctrl->ev.fd, &ev) < 0) {
		err = -errno;
		xrxe_err("epoll: %s", strerror(errno));
		goto err_unlink;
	}
	err = xrxe_ctrli_cm_open(ctrl);
	if (err) {
		xrxe_err("connection manager: %s", strerror(-err));
		epoll_ctl(cfg->epfd, EPOLL_CTL_DEL, ctrl->ev.fd, NULL);
		goto err_unlink;
	}
	*out = ctrl;
	return 0;

err_unlink:
	unlink(ctrl->path);
err_sock:
	close(ctrl->ev.fd);
err_lock:
	close(ctrl->lock_fd);
err_free:
	free(ctrl);
	return err;
}

void xrxe_ctrl_close(struct xrxe_ctrl *ctrl)
{
	if (!ctrl)
		return;
	/* librdmacm applications hear it before their connections go */
	xrxe_ctrl_cm_device_removal(ctrl);
	while (ctrl->conns)
		conn_close(ctrl->conns, "daemon stopping");
	xrxe_ctrli_cm_close(ctrl);
	epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_DEL, ctrl->ev.fd, NULL);
	close(ctrl->ev.fd);
	unlink(ctrl->path);
	/* Remove the lock while still holding it. A daemon that opened the old
	 * file a moment ago may still lock the unlinked inode after us, and a
	 * third the new file, but the third then finds the second's live socket
	 * and refuses (socket_is_live). */
	unlink(ctrl->lock_path);
	close(ctrl->lock_fd);
	free(ctrl);
}
