// SPDX-License-Identifier: MIT
/*
 * The verbs requests of the control socket (abi.h XRXE_CTRL_*): HELLO, PDs,
 * MRs, MWs, completion channels, CQs, QPs, AHs.
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
#include "xrxe/ring.h"

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

int xrxe_ctrli_op_hello(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_hello *h = req;
	struct xrxe_ctrl *ctrl = c->ctrl;
	struct epoll_event ev;
	int err, db;

	if (c->hello)
		return -EINVAL;
	if (h->abi_version != XRXE_ABI_VERSION) {
		xrxe_warn_rl("conn %u: ABI version %u, daemon speaks %u", c->id, h->abi_version,
			     XRXE_ABI_VERSION);
		return -EPROTO;
	}
	err = xrxe_ctrli_netns_check(c);
	if (err)
		return err;
	err = xrxe_shm_check_memfd(fds[0]);
	if (err)
		return err;
	err = pipe_writer_check(fds[1]);
	if (err)
		return err;
	/* the doorbell, the memfd and the async pipe stay open */
	err = xrxe_ctrli_charge(c, XRXE_Q_FDS, 3);
	if (err)
		return err;
	db = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (db < 0) {
		err = -errno;
		xrxe_ctrli_release(c, XRXE_Q_FDS, 3);
		return err;
	}
	c->db.fd = db;
	c->db.fn = doorbell_event;
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &c->db };
	if (epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_ADD, db, &ev) < 0) {
		err = -errno;
		close(db);
		c->db.fd = -1;
		xrxe_ctrli_release(c, XRXE_Q_FDS, 3);
		return err;
	}
	/* the SQ doorbell ring (xrxe/ring.h), within the connection's ring budget */
	err = xrxe_ctrli_conn_ring(c, "db", XRXE_DOORBELL_SLOTS, sizeof(struct xrxe_doorbell),
				   &c->dbring);
	if (err) {
		epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_DEL, db, NULL);
		close(db);
		c->db.fd = -1;
		xrxe_ctrli_release(c, XRXE_Q_FDS, 3);
		return err;
	}
	c->db_cons = 0;
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
	xrxe_ctrli_reply_fd(r, c->dbring.fd, true);
	c->dbring.fd = -1; /* closed once sent; the mapping stays */
	return 0;
}

int xrxe_ctrli_op_alloc_pd(struct conn *c, const void *req, int *fds, struct reply *r)
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
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_PD, 1);
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
	return xrxe_ctrli_destroy_obj(o);
}

#define DESTROY_OP(name, type)                                                           \
	int name(struct conn *c, const void *req, int *fds, struct reply *r)      \
	{                                                                                \
		(void)fds;                                                               \
		(void)r;                                                                 \
		return op_destroy(c, req, type);                                         \
	}
DESTROY_OP(xrxe_ctrli_op_dealloc_pd, OBJ_PD)
DESTROY_OP(xrxe_ctrli_op_dereg_mr, OBJ_MR)
DESTROY_OP(xrxe_ctrli_op_destroy_cq, OBJ_CQ)
DESTROY_OP(xrxe_ctrli_op_destroy_qp, OBJ_QP)
DESTROY_OP(xrxe_ctrli_op_destroy_ah, OBJ_AH)
DESTROY_OP(xrxe_ctrli_op_destroy_channel, OBJ_CHANNEL)
DESTROY_OP(xrxe_ctrli_op_destroy_srq, OBJ_SRQ)
DESTROY_OP(xrxe_ctrli_op_dealloc_mw, OBJ_MW)

int xrxe_ctrli_op_reg_mr(struct conn *c, const void *req, int *fds, struct reply *r)
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
	if (access & IBV_ACCESS_ON_DEMAND) /* nothing to map (odp.c) */
		return xrxe_ctrli_odp_reg_mr(c, pd, m, access, r);
	/* Length 0: an MR of no bytes (the shim allows it only over device
	 * memory, as mlx5 does); nothing to map or charge, keys that reach
	 * nothing. */
	if (m->iova + m->length < m->iova)
		return -EINVAL;
	mr = xrxe_ctrli_obj_new(c, OBJ_MR, sizeof(*mr), &err);
	if (!mr)
		return err;
	err = m->length ? xrxe_ctrli_mr_map(c, m->addr, m->length, (access & wr) != 0, &mr->map)
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
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_MR, 1);

	struct xrxe_ctrl_reg_mr_reply *rep = REPLY(r, struct xrxe_ctrl_reg_mr_reply);

	rep->handle = mr->o.handle;
	rep->lkey = mr->lkey;
	rep->rkey = mr->rkey;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;

err_unmap:
	xrxe_ctrli_mr_unmap(c, &mr->map);
err_obj:
	xrxe_ctrli_obj_free(&mr->o);
	return err;
}

/* REREG_MR: a new mapping whenever the range or the access changes (a
 * read-only mapping must not serve a region that now grants write access),
 * swapped in only once the core accepted the change. */
int xrxe_ctrli_op_rereg_mr(struct conn *c, const void *req, int *fds, struct reply *r)
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
	if ((access | mr->access) & IBV_ACCESS_ON_DEMAND) /* odp.c */
		return xrxe_ctrli_odp_rereg_mr(c, mr, m, pdn, access, r);
	addr = trans ? m->addr : mr->addr;
	length = trans ? m->length : mr->length;
	iova = trans ? m->iova : mr->iova;
	if (trans && (!length || iova + length < iova))
		return -EINVAL;
	if (trans || acc) {
		err = xrxe_ctrli_mr_map(c, addr, length, (access & wr) != 0, &map);
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
			xrxe_ctrli_mr_unmap(c, &map);
		return err;
	}
	if (map.base) {
		xrxe_ctrli_mr_unmap(c, &mr->map);
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

int xrxe_ctrli_op_alloc_mw(struct conn *c, const void *req, int *fds, struct reply *r)
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

int xrxe_ctrli_op_create_channel(struct conn *c, const void *req, int *fds, struct reply *r)
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
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_CHANNEL, 1);
	REPLY(r, struct xrxe_ctrl_handle)->handle = ch->o.handle;
	xrxe_ctrli_reply_len(r, sizeof(struct xrxe_ctrl_handle));
	return 0;
}

int xrxe_ctrli_op_create_cq(struct conn *c, const void *req, int *fds, struct reply *r)
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
	nslots = xrxe_ctrli_pow2_ceil(q->cqe + 1); /* capacity is nslots - 1 */
	cq = xrxe_ctrli_obj_new(c, OBJ_CQ, sizeof(*cq), &err);
	if (!cq)
		return err;
	err = xrxe_ctrli_conn_ring(c, "cq", nslots, sizeof(struct xrxe_cqe), &cq->ring);
	if (err)
		goto err_obj;
	err = xrxe_tp_cq_create(c->ctrl->cfg.tp, xrxe_shm_ring(&cq->ring), nslots, &cq->o, &cq->cq);
	if (err)
		goto err_ring;
	cq->ch = ch;
	if (ch)
		ch->refs++;
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_CQ, 1);

	struct xrxe_ctrl_create_cq_reply *rep = REPLY(r, struct xrxe_ctrl_create_cq_reply);

	rep->handle = cq->o.handle;
	rep->cqe = nslots - 1;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	xrxe_ctrli_reply_ring(r, &cq->ring, &rep->ring);
	return 0;

err_ring:
	xrxe_ctrli_conn_ring_free(c, &cq->ring);
err_obj:
	xrxe_ctrli_obj_free(&cq->o);
	return err;
}

/* ibv_resize_cq: a new ring; the core moves the unpolled CQEs into it (the
 * shim holds its CQ lock across the call, abi.h). */
int xrxe_ctrli_op_resize_cq(struct conn *c, const void *req, int *fds, struct reply *r)
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
	nslots = xrxe_ctrli_pow2_ceil(q->cqe + 1);
	err = xrxe_ctrli_conn_ring(c, "cq", nslots, sizeof(struct xrxe_cqe), &ring);
	if (err)
		return err;
	err = xrxe_tp_cq_resize(c->ctrl->cfg.tp, cq->cq, xrxe_shm_ring(&ring), nslots);
	if (err) {
		xrxe_ctrli_conn_ring_free(c, &ring);
		return err;
	}
	/* The core no longer looks at the old ring. */
	xrxe_ctrli_conn_ring_free(c, &cq->ring);
	cq->ring = ring;

	struct xrxe_ctrl_create_cq_reply *rep = REPLY(r, struct xrxe_ctrl_create_cq_reply);

	rep->handle = cq->o.handle;
	rep->cqe = nslots - 1;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	xrxe_ctrli_reply_ring(r, &cq->ring, &rep->ring);
	return 0;
}

int xrxe_ctrli_op_create_qp(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_qp *q = req;
	struct ibv_qp_cap cap = q->cap, got;
	struct obj_cq *scq, *rcq;
	struct obj_srq *srq = NULL;
	struct obj_pd *pd;
	struct obj_qp *qp;
	uint32_t sq_slots, rq_slots, sq_elem, rq_elem, data;
	bool xrc_send, no_rq;
	int err;

	(void)fds;
	/* XRC_SEND (an XRC initiator, docs/xrc.md): a send queue only; its
	 * recv_cq is ignored and no RQ ring exists. Targets: CREATE_XRC_TGT. */
	xrc_send = q->qp_type == IBV_QPT_XRC_SEND;
	pd = (struct obj_pd *)xrxe_ctrli_obj_lookup(c, q->pd, OBJ_PD);
	scq = (struct obj_cq *)xrxe_ctrli_obj_lookup(c, q->send_cq, OBJ_CQ);
	rcq = xrc_send ? NULL : (struct obj_cq *)xrxe_ctrli_obj_lookup(c, q->recv_cq, OBJ_CQ);
	if (!pd || !scq || (!rcq && !xrc_send))
		return -EBADF;
	if (q->qp_type == IBV_QPT_RAW_PACKET) {
		err = xrxe_ctrli_raw_permitted(c); /* CAP_NET_RAW (ctrl_raw.c) */
		if (err)
			return err;
	} else if (q->qp_type != IBV_QPT_RC && q->qp_type != IBV_QPT_UC &&
		   q->qp_type != IBV_QPT_UD && !xrc_send) {
		return -EOPNOTSUPP; /* as rxe_qp_chk_init for RD */
	}
	if (xrc_send) {
		if (q->srq != XRXE_NO_HANDLE)
			return -EINVAL;
		cap.max_recv_wr = cap.max_recv_sge = 0;
	} else if (q->srq != XRXE_NO_HANDLE) {
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
	sq_elem = xrxe_ctrli_pow2_ceil((uint32_t)sizeof(struct xrxe_send_wqe) + data);
	rq_elem = xrxe_ctrli_pow2_ceil((uint32_t)sizeof(struct xrxe_recv_wqe) + cap.max_recv_sge * 16);
	sq_slots = xrxe_ctrli_pow2_ceil((cap.max_send_wr ? cap.max_send_wr : 1) + 1);
	rq_slots = xrxe_ctrli_pow2_ceil((cap.max_recv_wr ? cap.max_recv_wr : 1) + 1);
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

	no_rq = srq || xrc_send;
	qp = xrxe_ctrli_obj_new(c, OBJ_QP, sizeof(*qp), &err);
	if (!qp)
		return err;
	qp->sq.fd = qp->rq.fd = -1;
	err = xrxe_ctrli_conn_ring(c, "sq", sq_slots, sq_elem, &qp->sq);
	if (err)
		goto err_obj;
	if (!no_rq) {
		err = xrxe_ctrli_conn_ring(c, "rq", rq_slots, rq_elem, &qp->rq);
		if (err)
			goto err_sq;
	} else {
		got.max_recv_wr = got.max_recv_sge = 0;
	}

	struct xrxe_tp_qp_init init = {
		.qp_type = (enum ibv_qp_type)q->qp_type,
		.pdn = pd->pdn,
		.send_cq = scq->cq,
		.recv_cq = rcq ? rcq->cq : NULL,
		.sq = xrxe_shm_ring(&qp->sq),
		.sq_slots = sq_slots,
		.rq = no_rq ? NULL : xrxe_shm_ring(&qp->rq),
		.rq_slots = rq_slots,
		.srq = srq ? srq->srq : NULL,
		.cap = got,
		.sq_sig_all = q->sq_sig_all != 0,
		.user = &qp->o,
	};

	err = xrxe_tp_qp_create(c->ctrl->cfg.tp, &init, &qp->qpn, &qp->qp);
	if (err)
		goto err_rq;
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_QP, 1);

	struct xrxe_ctrl_create_qp_reply *rep = REPLY(r, struct xrxe_ctrl_create_qp_reply);

	rep->handle = qp->o.handle;
	rep->qpn = qp->qpn;
	rep->cap = got;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	xrxe_ctrli_reply_ring(r, &qp->sq, &rep->sq);
	if (!no_rq)
		xrxe_ctrli_reply_ring(r, &qp->rq, &rep->rq);
	return 0;

err_rq:
	if (!no_rq) {
		xrxe_ctrli_conn_ring_free(c, &qp->rq);
	}
err_sq:
	xrxe_ctrli_conn_ring_free(c, &qp->sq);
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

int xrxe_ctrli_op_modify_qp(struct conn *c, const void *req, int *fds, struct reply *r)
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

int xrxe_ctrli_op_query_qp(struct conn *c, const void *req, int *fds, struct reply *r)
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

int xrxe_ctrli_op_create_ah(struct conn *c, const void *req, int *fds, struct reply *r)
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
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_AH, 1);

	struct xrxe_ctrl_create_ah_reply *rep = REPLY(r, struct xrxe_ctrl_create_ah_reply);

	rep->handle = ah->o.handle;
	rep->ah_num = ah->ah;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

