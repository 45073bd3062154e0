// SPDX-License-Identifier: MIT
/*
 * Raw packet QPs on the control socket: who may create one, and their flows
 * (CREATE_FLOW / DESTROY_FLOW; src/transport/raw.c does the matching).
 *
 * A raw packet QP sends frames the application writes and receives frames
 * of other hosts' traffic, so like the kernel (ib_uverbs: CAP_NET_RAW in the
 * device's network namespace's user namespace) the daemon wants the process
 * at the other end of the connection to hold CAP_NET_RAW in the daemon's user
 * namespace. The process is the one SO_PEERCRED names (its credentials at
 * connect). Its effective capabilities are read from /proc/PID/status; a
 * pidfd of the peer (SO_PEERPIDFD, Linux 6.5) then proves that PID still
 * names that process, so a PID reused after the peer exited cannot lend its
 * capabilities. Without SO_PEERPIDFD the connection itself keeps the
 * process, or one it passed the socket to, alive.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/ctrl_internal.h"
#include "daemon/shm.h"
#include "transport/transport.h"
#include "util/log.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

#define CAP_NET_RAW_BIT 13 /* linux/capability.h */

struct obj_flow {
	struct obj o;
	uint32_t id; /* the core's flow */
};

/* The capability bits of a process's CapEff line, or 0. */
static uint64_t cap_eff(pid_t pid)
{
	char path[64], line[256];
	uint64_t caps = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "CapEff:", 7)) {
			caps = strtoull(line + 7, NULL, 16);
			break;
		}
	}
	fclose(f);
	return caps;
}

static bool same_userns(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	return !stat(path, &a) && !stat("/proc/self/ns/user", &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* The PID a pidfd names now (fdinfo "Pid:"), -1 when the process is gone. */
static long pidfd_pid(int pidfd)
{
	char path[64], line[128];
	long pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Pid:", 4)) {
			pid = strtol(line + 4, NULL, 10);
			break;
		}
	fclose(f);
	return pid;
}

int xrxe_ctrli_raw_permitted(struct conn *c)
{
	socklen_t len = sizeof(int);
	int pidfd = -1;
	bool ok;

	if (c->pid <= 0)
		return -EPERM; /* the peer is in a PID namespace we cannot see */
	if (getsockopt(c->ev.fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		pidfd = -1; /* an older kernel: see the comment at the top */
	ok = (cap_eff(c->pid) >> CAP_NET_RAW_BIT & 1) && same_userns(c->pid);
	if (pidfd >= 0) {
		ok = ok && pidfd_pid(pidfd) == c->pid;
		close(pidfd);
	}
	if (!ok) {
		xrxe_dbg("conn %u: pid %d uid %u: raw packet QP refused: no CAP_NET_RAW", c->id,
			 (int)c->pid, (unsigned)c->uid);
		return -EPERM;
	}
	return 0;
}

int xrxe_ctrli_op_create_flow(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_flow *m = req;
	struct obj_qp *qp;
	struct obj_flow *fl;
	int err;

	(void)fds;
	qp = (struct obj_qp *)xrxe_ctrli_obj_lookup(c, m->qp, OBJ_QP);
	if (!qp)
		return -EBADF;
	fl = xrxe_ctrli_obj_new(c, OBJ_FLOW, sizeof(*fl), &err);
	if (!fl)
		return err;
	err = xrxe_tp_flow_create(c->ctrl->cfg.tp, qp->qp, &m->rule, &fl->id);
	if (err) {
		xrxe_ctrli_obj_free(&fl->o);
		return err;
	}
	REPLY(r, struct xrxe_ctrl_handle)->handle = fl->o.handle;
	xrxe_ctrli_reply_len(r, sizeof(struct xrxe_ctrl_handle));
	return 0;
}

int xrxe_ctrli_destroy_flow(struct obj *o)
{
	struct obj_flow *fl = (struct obj_flow *)o;

	/* -ENOENT: its QP went first and took the flow with it */
	(void)xrxe_tp_flow_destroy(o->conn->ctrl->cfg.tp, fl->id);
	xrxe_ctrli_obj_free(o);
	return 0;
}

int xrxe_ctrli_op_destroy_flow(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_handle *h = req;
	struct obj *o = xrxe_ctrli_obj_lookup(c, h->handle, OBJ_FLOW);

	(void)fds;
	(void)r;
	if (!o)
		return -EBADF;
	return xrxe_ctrli_destroy_flow(o);
}

/* --- RSS: receive work queues, indirection tables, RSS QPs -------------------------
 *
 * In the core a WQ is a raw packet QP that only receives (its RQ is the WQ's
 * ring, RDY is RTR) and an RSS QP a raw packet QP whose frames go to the WQ
 * the hash picks (xrxe_tp_qp_set_rss). Neither has a send queue the
 * application sees: the core's QP wants one, so each gets a private ring of
 * two slots that stays empty. An indirection table holds its WQs and an RSS
 * QP its table (references), so neither can go while used, as the kernel
 * answers EBUSY then. */

struct obj_wq {
	struct obj o;
	struct xrxe_tp_qp *qp;
	uint32_t qpn;
	struct xrxe_shm sq, rq;
	struct obj_cq *cq;
	bool rdy;
	uint32_t refs; /* indirection tables holding it */
};

struct obj_rwq_ind_tbl {
	struct obj o;
	uint32_t n;
	uint32_t refs; /* RSS QPs using it */
	struct obj_wq *wq[1u << XRXE_MAX_RWQ_IND_LOG];
};

/* A receive-only raw packet QP of the core over rq_slots receive WQEs of
 * max_sge SGEs (0 slots: an RSS QP, no RQ of its own). */
static int recv_only_qp(struct conn *c, struct obj_pd *pd, struct xrxe_tp_cq *cq, uint32_t rq_slots,
			uint32_t max_sge, struct xrxe_shm *sq, struct xrxe_shm *rq, struct obj *user,
			struct xrxe_tp_qp **qp, uint32_t *qpn)
{
	uint32_t sq_elem = xrxe_ctrli_pow2_ceil((uint32_t)sizeof(struct xrxe_send_wqe));
	uint32_t rq_elem = xrxe_ctrli_pow2_ceil((uint32_t)sizeof(struct xrxe_recv_wqe) +
						max_sge * (uint32_t)sizeof(struct xrxe_sge));
	int err;

	sq->fd = rq->fd = -1;
	err = xrxe_ctrli_conn_ring(c, "sq", 2, sq_elem, sq);
	if (err)
		return err;
	err = xrxe_ctrli_conn_ring(c, "rq", rq_slots ? rq_slots : 2, rq_elem, rq);
	if (err) {
		xrxe_ctrli_conn_ring_free(c, sq);
		return err;
	}

	struct xrxe_tp_qp_init init = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.pdn = pd->pdn,
		.send_cq = cq,
		.recv_cq = cq,
		.sq = xrxe_shm_ring(sq),
		.sq_slots = 2,
		.rq = xrxe_shm_ring(rq),
		.rq_slots = rq_slots ? rq_slots : 2,
		.cap = { .max_send_wr = 1, .max_recv_wr = (rq_slots ? rq_slots : 2) - 1,
			 .max_recv_sge = max_sge },
		.user = user,
	};

	err = xrxe_tp_qp_create(c->ctrl->cfg.tp, &init, qpn, qp);
	if (err) {
		xrxe_ctrli_conn_ring_free(c, rq);
		xrxe_ctrli_conn_ring_free(c, sq);
		return err;
	}
	/* Private rings: mapped here, no descriptor kept for a ring of its own
	 * (a slab's descriptor belongs to the slab, ring_slab.h). In a slab the
	 * application that owns the WQ may reach them; the core only reads an
	 * SQ the doorbell names, and this SQ has no handle to ring it with. */
	if (!sq->slab)
		xrxe_shm_close_fd(sq);
	if (!rq_slots && !rq->slab)
		xrxe_shm_close_fd(rq);
	return 0;
}

int xrxe_ctrli_op_create_wq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_wq *m = req;
	struct obj_pd *pd = (struct obj_pd *)xrxe_ctrli_obj_lookup(c, m->pd, OBJ_PD);
	struct obj_cq *cq = (struct obj_cq *)xrxe_ctrli_obj_lookup(c, m->cq, OBJ_CQ);
	struct obj_wq *wq;
	uint32_t slots;
	int err;

	(void)fds;
	if (!pd || !cq)
		return -EBADF;
	err = xrxe_ctrli_raw_permitted(c);
	if (err)
		return err;
	if (m->max_wr > XRXE_MAX_QP_WR || m->max_sge > XRXE_MAX_SGE)
		return -EINVAL;
	slots = xrxe_ctrli_pow2_ceil((m->max_wr ? m->max_wr : 1) + 1);
	wq = xrxe_ctrli_obj_new(c, OBJ_WQ, sizeof(*wq), &err);
	if (!wq)
		return err;
	wq->cq = cq;
	err = recv_only_qp(c, pd, cq->cq, slots, m->max_sge ? m->max_sge : 1, &wq->sq, &wq->rq,
			   &wq->o, &wq->qp, &wq->qpn);
	if (err) {
		xrxe_ctrli_obj_free(&wq->o);
		return err;
	}

	struct xrxe_ctrl_create_wq_reply *rep = REPLY(r, struct xrxe_ctrl_create_wq_reply);

	rep->handle = wq->o.handle;
	rep->wq_num = wq->qpn;
	rep->max_wr = slots - 1;
	rep->max_sge = m->max_sge ? m->max_sge : 1;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	xrxe_ctrli_reply_ring(r, &wq->rq, &rep->ring);
	return 0;
}

int xrxe_ctrli_op_modify_wq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_modify_wq *m = req;
	struct obj_wq *wq = (struct obj_wq *)xrxe_ctrli_obj_lookup(c, m->handle, OBJ_WQ);
	struct xrxe_tp *tp = c->ctrl->cfg.tp;
	struct ibv_qp_attr a = { 0 };
	int err = 0;

	(void)fds;
	(void)r;
	if (!wq)
		return -EBADF;
	switch (m->state) {
	case IBV_WQS_RDY: /* RESET -> INIT -> RTR: receiving */
		if (wq->rdy)
			return 0;
		a.qp_state = IBV_QPS_RESET; /* from ERR too */
		err = xrxe_tp_qp_modify(tp, wq->qp, &a, IBV_QP_STATE, NULL);
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		if (!err)
			err = xrxe_tp_qp_modify(tp, wq->qp, &a, IBV_QP_STATE | IBV_QP_PORT, NULL);
		a.qp_state = IBV_QPS_RTR;
		if (!err)
			err = xrxe_tp_qp_modify(tp, wq->qp, &a, IBV_QP_STATE, NULL);
		wq->rdy = !err;
		return err;
	case IBV_WQS_RESET:
	case IBV_WQS_ERR:
		a.qp_state = m->state == IBV_WQS_RESET ? IBV_QPS_RESET : IBV_QPS_ERR;
		err = xrxe_tp_qp_modify(tp, wq->qp, &a, IBV_QP_STATE, NULL);
		if (!err)
			wq->rdy = false;
		return err;
	default:
		return -EINVAL;
	}
}

int xrxe_ctrli_destroy_wq(struct obj *o)
{
	struct obj_wq *wq = (struct obj_wq *)o;
	struct conn *c = o->conn;

	if (wq->refs)
		return -EBUSY;
	xrxe_tp_qp_destroy(c->ctrl->cfg.tp, wq->qp);
	xrxe_ctrli_conn_ring_free(c, &wq->sq);
	xrxe_ctrli_conn_ring_free(c, &wq->rq);
	xrxe_ctrli_obj_free(o);
	return 0;
}

int xrxe_ctrli_op_destroy_wq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_handle *h = req;
	struct obj *o = xrxe_ctrli_obj_lookup(c, h->handle, OBJ_WQ);

	(void)fds;
	(void)r;
	return o ? xrxe_ctrli_destroy_wq(o) : -EBADF;
}

int xrxe_ctrli_op_create_rwq_ind_tbl(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_rwq_ind_tbl *m = req;
	struct obj_wq *wqs[1u << XRXE_MAX_RWQ_IND_LOG];
	struct obj_rwq_ind_tbl *t;
	uint32_t n;
	int err;

	(void)fds;
	if (m->log_size > XRXE_MAX_RWQ_IND_LOG)
		return -EINVAL;
	n = 1u << m->log_size;
	for (uint32_t i = 0; i < n; i++) {
		wqs[i] = (struct obj_wq *)xrxe_ctrli_obj_lookup(c, m->wq[i], OBJ_WQ);
		if (!wqs[i])
			return -EBADF;
	}
	t = xrxe_ctrli_obj_new(c, OBJ_RWQ_IND_TBL, sizeof(*t), &err);
	if (!t)
		return err;
	t->n = n;
	for (uint32_t i = 0; i < n; i++) {
		t->wq[i] = wqs[i];
		wqs[i]->refs++;
	}

	struct xrxe_ctrl_create_rwq_ind_tbl_reply *rep =
		REPLY(r, struct xrxe_ctrl_create_rwq_ind_tbl_reply);

	rep->handle = t->o.handle;
	rep->ind_tbl_num = t->o.handle & 0xffff;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

int xrxe_ctrli_destroy_rwq_ind_tbl(struct obj *o)
{
	struct obj_rwq_ind_tbl *t = (struct obj_rwq_ind_tbl *)o;

	if (t->refs)
		return -EBUSY;
	for (uint32_t i = 0; i < t->n; i++)
		t->wq[i]->refs--;
	xrxe_ctrli_obj_free(o);
	return 0;
}

int xrxe_ctrli_op_destroy_rwq_ind_tbl(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_handle *h = req;
	struct obj *o = xrxe_ctrli_obj_lookup(c, h->handle, OBJ_RWQ_IND_TBL);

	(void)fds;
	(void)r;
	return o ? xrxe_ctrli_destroy_rwq_ind_tbl(o) : -EBADF;
}

int xrxe_ctrli_op_create_rss_qp(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_rss_qp *m = req;
	struct obj_pd *pd = (struct obj_pd *)xrxe_ctrli_obj_lookup(c, m->pd, OBJ_PD);
	struct obj_rwq_ind_tbl *t =
		(struct obj_rwq_ind_tbl *)xrxe_ctrli_obj_lookup(c, m->ind_tbl, OBJ_RWQ_IND_TBL);
	struct xrxe_tp_qp *wqs[1u << XRXE_MAX_RWQ_IND_LOG];
	struct obj_qp *qp;
	int err;

	(void)fds;
	if (!pd || !t)
		return -EBADF;
	err = xrxe_ctrli_raw_permitted(c);
	if (err)
		return err;
	if (m->key_len > XRXE_MAX_RSS_KEY)
		return -EINVAL;
	qp = xrxe_ctrli_obj_new(c, OBJ_QP, sizeof(*qp), &err);
	if (!qp)
		return err;
	for (uint32_t i = 0; i < t->n; i++)
		wqs[i] = t->wq[i]->qp;
	/* its private queues borrow the first WQ's CQ; nothing completes there */
	err = recv_only_qp(c, pd, t->wq[0]->cq->cq, 0, 1, &qp->sq, &qp->rq, &qp->o, &qp->qp,
			   &qp->qpn);
	if (err) {
		xrxe_ctrli_obj_free(&qp->o);
		return err;
	}
	err = xrxe_tp_qp_set_rss(c->ctrl->cfg.tp, qp->qp, wqs, t->n, m->key, m->key_len,
				 m->fields_mask);
	if (err) {
		xrxe_tp_qp_destroy(c->ctrl->cfg.tp, qp->qp);
		xrxe_ctrli_conn_ring_free(c, &qp->sq);
		xrxe_ctrli_conn_ring_free(c, &qp->rq);
		xrxe_ctrli_obj_free(&qp->o);
		return err;
	}
	qp->rss_tbl = t;
	t->refs++;
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_QP, 1);

	struct xrxe_ctrl_create_qp_reply *rep = REPLY(r, struct xrxe_ctrl_create_qp_reply);

	rep->handle = qp->o.handle;
	rep->qpn = qp->qpn;
	memset(&rep->cap, 0, sizeof(rep->cap)); /* no queues of its own */
	memset(&rep->sq, 0, sizeof(rep->sq));
	memset(&rep->rq, 0, sizeof(rep->rq));
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

void xrxe_ctrli_rss_qp_gone(struct obj_qp *qp)
{
	if (qp->rss_tbl)
		qp->rss_tbl->refs--;
	qp->rss_tbl = NULL;
}
