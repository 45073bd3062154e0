// SPDX-License-Identifier: MIT
/*
 * XRC's requests (abi.h XRXE_CTRL_OPEN_XRCD ... OPEN_QP; docs/xrc.md): XRC
 * domains named by files, XRC SRQs, and XRC target QPs shared by every
 * process of the domain.
 *
 * Domains follow the kernel's ib_uverbs_open_xrcd: the file's inode (device
 * and inode number, from fstat on the descriptor the application passed, so
 * it cannot name a file it has not opened) is the key; O_CREAT creates a
 * domain for an inode without one, O_EXCL refuses one that exists. The
 * daemon keeps a duplicate of the first opener's descriptor while the domain
 * lives: the inode stays allocated, so its number cannot come back as
 * another file's and name this domain. A domain lives while it is open or
 * XRC SRQs or target QPs use it (xrxe_ctrli_xrc_gc).
 *
 * A target QP is shared: its creator and every process that opens it
 * (OPEN_QP, by number, through the same domain) hold a handle; the QP is
 * destroyed with the last one. Asynchronous events go to one holder (the
 * oldest still open), as the core has one user pointer per QP.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/ctrl_internal.h"
#include "transport/transport.h"
#include "util/log.h"

#define XRCD_OPENS_PER_CONN 64

struct xrcd_ent {
	struct xrcd_ent *next;
	dev_t dev;
	ino_t ino;
	int fd;         /* pins the inode */
	uint32_t xrcdn; /* the core's domain */
	uint32_t opens; /* OBJ_XRCD handles, in any connection */
};

struct xrc_tgt {
	struct xrc_tgt *next;
	struct xrxe_tp_qp *qp;
	struct xrcd_ent *xrcd;
	struct obj_qp *holders; /* through obj_qp.tgt_next, oldest first */
};

static struct xrxe_tp *tp_of(struct conn *c)
{
	return c->ctrl->cfg.tp;
}

/* --- domains ------------------------------------------------------------- */

int xrxe_ctrli_op_open_xrcd(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_open_xrcd *q = req;
	struct xrxe_ctrl *ctrl = c->ctrl;
	struct xrcd_ent *x;
	struct obj_xrcd *o;
	struct stat st;
	int err;

	if (fstat(fds[0], &st) < 0)
		return -EBADF;
	/* Each new domain keeps a descriptor in the daemon: one application
	 * must not be able to spend the daemon's descriptors (the core's
	 * domain table, XRXE_TP_MAX_XRCD, bounds the total). */
	if (c->count[OBJ_XRCD] >= XRCD_OPENS_PER_CONN)
		return -ENOMEM;
	for (x = ctrl->xrcds; x; x = x->next)
		if (x->dev == st.st_dev && x->ino == st.st_ino)
			break;
	if (!x && !(q->oflags & O_CREAT))
		return -EAGAIN; /* the kernel's answer: no domain, and not asked to create one */
	if (x && (q->oflags & O_EXCL))
		return -EINVAL;
	o = xrxe_ctrli_obj_new(c, OBJ_XRCD, sizeof(*o), &err);
	if (!o)
		return err;
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x) {
			err = -ENOMEM;
			goto err_obj;
		}
		err = xrxe_tp_xrcd_alloc(tp_of(c), &x->xrcdn);
		if (err) {
			free(x);
			goto err_obj;
		}
		x->dev = st.st_dev;
		x->ino = st.st_ino;
		x->fd = fds[0];
		fds[0] = -1; /* kept: see the header comment */
		x->next = ctrl->xrcds;
		ctrl->xrcds = x;
	}
	x->opens++;
	o->xrcd = x;
	REPLY(r, struct xrxe_ctrl_handle)->handle = o->o.handle;
	xrxe_ctrli_reply_len(r, sizeof(struct xrxe_ctrl_handle));
	return 0;

err_obj:
	xrxe_ctrli_obj_free(&o->o);
	return err;
}

/* Domains nobody has open any more go once no SRQ or target QP uses them
 * (the kernel's XRCD lives on its use count the same way): called when an
 * open, an XRC SRQ or a target QP goes. */
void xrxe_ctrli_xrc_gc(struct xrxe_ctrl *ctrl)
{
	struct xrcd_ent **pp = &ctrl->xrcds, *x;

	while ((x = *pp)) {
		if (x->opens || xrxe_tp_xrcd_free(ctrl->cfg.tp, x->xrcdn)) {
			pp = &x->next;
			continue;
		}
		*pp = x->next;
		close(x->fd);
		free(x);
	}
}

int xrxe_ctrli_destroy_xrcd(struct obj_xrcd *o)
{
	struct xrxe_ctrl *ctrl = o->o.conn->ctrl;

	/* Closing always succeeds (as ibv_close_xrcd on a file's domain in
	 * the kernel): SRQs and target QPs still in the domain keep it, and
	 * the same file opened again finds it. */
	o->xrcd->opens--;
	xrxe_ctrli_obj_free(&o->o);
	xrxe_ctrli_xrc_gc(ctrl);
	return 0;
}

int xrxe_ctrli_op_close_xrcd(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_handle *h = req;
	struct obj *o = xrxe_ctrli_obj_lookup(c, h->handle, OBJ_XRCD);

	(void)fds;
	(void)r;
	if (!o)
		return -EBADF;
	return xrxe_ctrli_destroy_obj(o);
}

/* --- XRC SRQs ------------------------------------------------------------ */

int xrxe_ctrli_op_create_xrc_srq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_xrc_srq *q = req;
	struct obj_xrcd *x = (struct obj_xrcd *)xrxe_ctrli_obj_lookup(c, q->xrcd, OBJ_XRCD);
	struct obj_cq *cq = (struct obj_cq *)xrxe_ctrli_obj_lookup(c, q->cq, OBJ_CQ);

	if (!x || !cq)
		return -EBADF;
	/* the ring and the SRQ as CREATE_SRQ makes them (ctrl_ops.c), in the
	 * domain and with the CQ */
	return xrxe_ctrli_srq_create(c, &q->srq, x->xrcd->xrcdn, 0, cq->cq, fds, r);
}

/* --- target QPs ---------------------------------------------------------- */

static void tgt_reply(struct reply *r, const struct obj_qp *qp)
{
	struct xrxe_ctrl_create_qp_reply *rep = REPLY(r, struct xrxe_ctrl_create_qp_reply);

	rep->handle = qp->o.handle;
	rep->qpn = qp->qpn;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
}

static struct obj_qp *tgt_handle(struct conn *c, struct xrc_tgt *t, int *err)
{
	struct obj_qp *qp = xrxe_ctrli_obj_new(c, OBJ_QP, sizeof(*qp), err);
	struct obj_qp **pp;

	if (!qp)
		return NULL;
	qp->sq.fd = qp->rq.fd = -1;
	qp->qp = t->qp;
	qp->qpn = xrxe_tp_qp_num(t->qp);
	qp->tgt = t;
	for (pp = &t->holders; *pp; pp = &(*pp)->tgt_next)
		;
	*pp = qp;
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_QP, 1);
	return qp;
}

int xrxe_ctrli_op_create_xrc_tgt(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_xrc_qp *q = req;
	struct obj_xrcd *x = (struct obj_xrcd *)xrxe_ctrli_obj_lookup(c, q->xrcd, OBJ_XRCD);
	struct xrxe_tp_qp_init init = { .qp_type = IBV_QPT_XRC_RECV };
	struct xrc_tgt *t;
	struct obj_qp *qp;
	uint32_t qpn;
	int err;

	(void)fds;
	if (!x)
		return -EBADF;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	init.xrcdn = x->xrcd->xrcdn;
	err = xrxe_tp_qp_create(tp_of(c), &init, &qpn, &t->qp);
	if (err) {
		free(t);
		return err;
	}
	t->xrcd = x->xrcd;
	qp = tgt_handle(c, t, &err);
	if (!qp) {
		xrxe_tp_qp_destroy(tp_of(c), t->qp);
		free(t);
		return err;
	}
	xrxe_tp_qp_set_user(t->qp, &qp->o);
	t->next = c->ctrl->tgts;
	c->ctrl->tgts = t;
	tgt_reply(r, qp);
	return 0;
}

int xrxe_ctrli_op_open_qp(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_xrc_qp *q = req;
	struct obj_xrcd *x = (struct obj_xrcd *)xrxe_ctrli_obj_lookup(c, q->xrcd, OBJ_XRCD);
	struct xrxe_tp_qp *tq;
	struct xrc_tgt *t;
	struct obj_qp *qp;
	int err;

	(void)fds;
	if (!x)
		return -EBADF;
	/* only a target QP of a domain the caller has opened */
	tq = xrxe_tp_xrc_tgt_find(tp_of(c), q->qpn, x->xrcd->xrcdn);
	for (t = c->ctrl->tgts; t && t->qp != tq; t = t->next)
		;
	if (!tq || !t)
		return -ENOENT;
	qp = tgt_handle(c, t, &err);
	if (!qp)
		return err;
	tgt_reply(r, qp);
	return 0;
}

/* A handle to a target QP goes (DESTROY_QP, connection teardown). */
int xrxe_ctrli_xrc_tgt_put(struct obj_qp *qp)
{
	struct xrxe_ctrl *ctrl = qp->o.conn->ctrl;
	struct xrc_tgt *t = qp->tgt, **tp;
	struct obj_qp **pp;

	for (pp = &t->holders; *pp; pp = &(*pp)->tgt_next) {
		if (*pp == qp) {
			*pp = qp->tgt_next;
			break;
		}
	}
	if (t->holders) {
		/* events go to the oldest handle still open */
		xrxe_tp_qp_set_user(t->qp, &t->holders->o);
	} else {
		xrxe_tp_qp_destroy(ctrl->cfg.tp, t->qp);
		for (tp = &ctrl->tgts; *tp; tp = &(*tp)->next) {
			if (*tp == t) {
				*tp = t->next;
				break;
			}
		}
		free(t);
	}
	xrxe_ctrli_count_adjust(ctrl, OBJ_QP, -1);
	xrxe_ctrli_obj_free(&qp->o);
	xrxe_ctrli_xrc_gc(ctrl);
	return 0;
}
