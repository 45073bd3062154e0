// SPDX-License-Identifier: MIT
/*
 * The rest of the control requests -- SRQs, multicast, STATS, CC -- and the
 * table that describes every request (size, fds, whether allowed before HELLO).
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

/* --- shared receive queues -------------------------------------------------- */

static void srq_reply(struct reply *r, const struct obj_srq *q)
{
	struct xrxe_ctrl_srq_reply *rep = REPLY(r, struct xrxe_ctrl_srq_reply);

	rep->handle = q->o.handle;
	rep->srq_num = xrxe_tp_srq_num(q->srq);
	xrxe_tp_srq_query(q->srq, &rep->attr);
	xrxe_ctrli_reply_len(r, sizeof(*rep));
}

int xrxe_ctrli_op_create_srq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	return xrxe_ctrli_srq_create(c, req, 0, 0, NULL, fds, r);
}

int xrxe_ctrli_srq_create(struct conn *c, const struct xrxe_ctrl_srq *q, uint32_t xrcdn,
			  uint32_t tm_tags, struct xrxe_tp_cq *cq, int *fds, struct reply *r)
{
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
	nslots = xrxe_ctrli_pow2_ceil(q->attr.max_wr + 1);
	elem = xrxe_ctrli_pow2_ceil((uint32_t)sizeof(struct xrxe_recv_wqe) +
			 (q->attr.max_sge ? q->attr.max_sge : 1) * 16);
	max_sge = (elem - (uint32_t)sizeof(struct xrxe_recv_wqe)) / 16;
	if (max_sge > XRXE_MAX_SGE)
		max_sge = XRXE_MAX_SGE;
	srq = xrxe_ctrli_obj_new(c, OBJ_SRQ, sizeof(*srq), &err);
	if (!srq)
		return err;
	srq->ring.fd = -1;
	err = xrxe_ctrli_conn_ring(c, "srq", nslots, elem, &srq->ring);
	if (err)
		goto err_obj;
	if (xrcdn)
		err = xrxe_tp_srq_create_xrc(c->ctrl->cfg.tp, pd->pdn, xrcdn, cq,
					     xrxe_shm_ring(&srq->ring), nslots, max_sge, &srq->o,
					     &srq->srq);
	else if (tm_tags)
		err = xrxe_tp_srq_create_tm(c->ctrl->cfg.tp, pd->pdn, cq, tm_tags,
					    xrxe_shm_ring(&srq->ring), nslots, max_sge, &srq->o,
					    &srq->srq);
	else
		err = xrxe_tp_srq_create(c->ctrl->cfg.tp, pd->pdn, xrxe_shm_ring(&srq->ring),
					 nslots, max_sge, &srq->o, &srq->srq);
	if (err)
		goto err_ring;
	/* The verbs man page says create ignores srq_limit; rxe arms it. Arm
	 * a sane one, as rxe; an out-of-range one is ignored (the modify
	 * refuses it and nothing is armed). */
	if (q->attr.srq_limit) {
		struct ibv_srq_attr a = { .srq_limit = q->attr.srq_limit };

		(void)xrxe_tp_srq_modify(c->ctrl->cfg.tp, srq->srq, &a, IBV_SRQ_LIMIT);
	}
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_SRQ, 1);
	srq_reply(r, srq);
	xrxe_ctrli_reply_ring(r, &srq->ring, &REPLY(r, struct xrxe_ctrl_srq_reply)->ring);
	return 0;

err_ring:
	xrxe_ctrli_conn_ring_free(c, &srq->ring);
err_obj:
	xrxe_ctrli_obj_free(&srq->o);
	return err;
}

int xrxe_ctrli_op_modify_srq(struct conn *c, const void *req, int *fds, struct reply *r)
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

int xrxe_ctrli_op_query_srq(struct conn *c, const void *req, int *fds, struct reply *r)
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

int xrxe_ctrli_op_mcast(struct conn *c, const void *req, int *fds, struct reply *r)
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

int xrxe_ctrli_op_stats(struct conn *c, const void *req, int *fds, struct reply *r)
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
		xrxe_ctrl_cm_report(ctrl, out, h->flags & XRXE_STATS_F_JSON, c->uid);
	else
		ctrl->cfg.stats(ctrl->cfg.user, out, h->flags, c->uid);
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
int xrxe_ctrli_op_cc(struct conn *c, const void *req, int *fds, struct reply *r)
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
				xrxe_info_rl("%s: cc set refused: %s", c->ctrl->cfg.ifname, err);
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


const struct op_desc xrxe_ctrli_ops[XRXE_CTRL_OP_COUNT] = {
	[XRXE_CTRL_HELLO] = { "hello", sizeof(struct xrxe_ctrl_hello), 2, true, xrxe_ctrli_op_hello },
	[XRXE_CTRL_ALLOC_PD] = { "alloc_pd", sizeof(struct xrxe_ctrl_hdr), 0, false, xrxe_ctrli_op_alloc_pd },
	[XRXE_CTRL_DEALLOC_PD] = { "dealloc_pd", sizeof(struct xrxe_ctrl_handle), 0, false,
				   xrxe_ctrli_op_dealloc_pd },
	[XRXE_CTRL_REG_MR] = { "reg_mr", sizeof(struct xrxe_ctrl_reg_mr), 0, false, xrxe_ctrli_op_reg_mr },
	[XRXE_CTRL_DEREG_MR] = { "dereg_mr", sizeof(struct xrxe_ctrl_handle), 0, false,
				 xrxe_ctrli_op_dereg_mr },
	[XRXE_CTRL_CREATE_CHANNEL] = { "create_channel", sizeof(struct xrxe_ctrl_hdr), 1, false,
				       xrxe_ctrli_op_create_channel },
	[XRXE_CTRL_DESTROY_CHANNEL] = { "destroy_channel", sizeof(struct xrxe_ctrl_handle), 0,
					false, xrxe_ctrli_op_destroy_channel },
	[XRXE_CTRL_CREATE_CQ] = { "create_cq", sizeof(struct xrxe_ctrl_create_cq), 0, false,
				  xrxe_ctrli_op_create_cq },
	[XRXE_CTRL_DESTROY_CQ] = { "destroy_cq", sizeof(struct xrxe_ctrl_handle), 0, false,
				   xrxe_ctrli_op_destroy_cq },
	[XRXE_CTRL_RESIZE_CQ] = { "resize_cq", sizeof(struct xrxe_ctrl_create_cq), 0, false,
				  xrxe_ctrli_op_resize_cq },
	[XRXE_CTRL_CREATE_QP] = { "create_qp", sizeof(struct xrxe_ctrl_create_qp), 0, false,
				  xrxe_ctrli_op_create_qp },
	[XRXE_CTRL_MODIFY_QP] = { "modify_qp", sizeof(struct xrxe_ctrl_modify_qp), 0, false,
				  xrxe_ctrli_op_modify_qp },
	[XRXE_CTRL_QUERY_QP] = { "query_qp", sizeof(struct xrxe_ctrl_handle), 0, false,
				 xrxe_ctrli_op_query_qp },
	[XRXE_CTRL_DESTROY_QP] = { "destroy_qp", sizeof(struct xrxe_ctrl_handle), 0, false,
				   xrxe_ctrli_op_destroy_qp },
	[XRXE_CTRL_CREATE_AH] = { "create_ah", sizeof(struct xrxe_ctrl_create_ah), 0, false,
				  xrxe_ctrli_op_create_ah },
	[XRXE_CTRL_DESTROY_AH] = { "destroy_ah", sizeof(struct xrxe_ctrl_handle), 0, false,
				   xrxe_ctrli_op_destroy_ah },
	[XRXE_CTRL_CREATE_SRQ] = { "create_srq", sizeof(struct xrxe_ctrl_srq), 0, false,
				   xrxe_ctrli_op_create_srq },
	[XRXE_CTRL_MODIFY_SRQ] = { "modify_srq", sizeof(struct xrxe_ctrl_srq), 0, false,
				   xrxe_ctrli_op_modify_srq },
	[XRXE_CTRL_QUERY_SRQ] = { "query_srq", sizeof(struct xrxe_ctrl_srq), 0, false,
				  xrxe_ctrli_op_query_srq },
	[XRXE_CTRL_DESTROY_SRQ] = { "destroy_srq", sizeof(struct xrxe_ctrl_handle), 0, false,
				    xrxe_ctrli_op_destroy_srq },
	[XRXE_CTRL_ATTACH_MCAST] = { "attach_mcast", sizeof(struct xrxe_ctrl_mcast), 0, false,
				     xrxe_ctrli_op_mcast },
	[XRXE_CTRL_DETACH_MCAST] = { "detach_mcast", sizeof(struct xrxe_ctrl_mcast), 0, false,
				     xrxe_ctrli_op_mcast },
	[XRXE_CTRL_STATS] = { "stats", sizeof(struct xrxe_ctrl_hdr), 0, true, xrxe_ctrli_op_stats },
	[XRXE_CTRL_CC] = { "cc", sizeof(struct xrxe_ctrl_cc), 0, true, xrxe_ctrli_op_cc },
	[XRXE_CTRL_ALLOC_MW] = { "alloc_mw", sizeof(struct xrxe_ctrl_alloc_mw), 0, false,
				 xrxe_ctrli_op_alloc_mw },
	[XRXE_CTRL_DEALLOC_MW] = { "dealloc_mw", sizeof(struct xrxe_ctrl_handle), 0, false,
				   xrxe_ctrli_op_dealloc_mw },
	[XRXE_CTRL_REREG_MR] = { "rereg_mr", sizeof(struct xrxe_ctrl_rereg_mr), 0, false,
				 xrxe_ctrli_op_rereg_mr },
	[XRXE_CTRL_ODP_OPEN] = { "odp_open", sizeof(struct xrxe_ctrl_hdr), 1, false,
				 xrxe_ctrli_op_odp_open },
	/* raw packet QPs (ctrl_raw.c) */
	[XRXE_CTRL_CREATE_FLOW] = { "create_flow", sizeof(struct xrxe_ctrl_create_flow), 0, false,
				    xrxe_ctrli_op_create_flow },
	[XRXE_CTRL_DESTROY_FLOW] = { "destroy_flow", sizeof(struct xrxe_ctrl_handle), 0, false,
				     xrxe_ctrli_op_destroy_flow },
	[XRXE_CTRL_CREATE_WQ] = { "create_wq", sizeof(struct xrxe_ctrl_create_wq), 0, false,
				  xrxe_ctrli_op_create_wq },
	[XRXE_CTRL_MODIFY_WQ] = { "modify_wq", sizeof(struct xrxe_ctrl_modify_wq), 0, false,
				  xrxe_ctrli_op_modify_wq },
	[XRXE_CTRL_DESTROY_WQ] = { "destroy_wq", sizeof(struct xrxe_ctrl_handle), 0, false,
				   xrxe_ctrli_op_destroy_wq },
	[XRXE_CTRL_CREATE_RWQ_IND_TBL] = { "create_rwq_ind_tbl",
					   sizeof(struct xrxe_ctrl_create_rwq_ind_tbl), 0, false,
					   xrxe_ctrli_op_create_rwq_ind_tbl },
	[XRXE_CTRL_DESTROY_RWQ_IND_TBL] = { "destroy_rwq_ind_tbl", sizeof(struct xrxe_ctrl_handle),
					    0, false, xrxe_ctrli_op_destroy_rwq_ind_tbl },
	[XRXE_CTRL_CREATE_RSS_QP] = { "create_rss_qp", sizeof(struct xrxe_ctrl_create_rss_qp), 0,
				      false, xrxe_ctrli_op_create_rss_qp },
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
	/* XRC (ctrl_xrc.c) */
	[XRXE_CTRL_OPEN_XRCD] = { "open_xrcd", sizeof(struct xrxe_ctrl_open_xrcd), 1, false,
				  xrxe_ctrli_op_open_xrcd },
	[XRXE_CTRL_CLOSE_XRCD] = { "close_xrcd", sizeof(struct xrxe_ctrl_handle), 0, false,
				   xrxe_ctrli_op_close_xrcd },
	[XRXE_CTRL_CREATE_XRC_SRQ] = { "create_xrc_srq", sizeof(struct xrxe_ctrl_create_xrc_srq), 0,
				       false, xrxe_ctrli_op_create_xrc_srq },
	[XRXE_CTRL_CREATE_XRC_TGT] = { "create_xrc_tgt", sizeof(struct xrxe_ctrl_xrc_qp), 0, false,
				       xrxe_ctrli_op_create_xrc_tgt },
	[XRXE_CTRL_OPEN_QP] = { "open_qp", sizeof(struct xrxe_ctrl_xrc_qp), 0, false,
				xrxe_ctrli_op_open_qp },	/* ibv_import_pd / _mr (ctrl_import.c) */
	[XRXE_CTRL_IMPORT] = { "import", sizeof(struct xrxe_ctrl_import), 0, false,
			       xrxe_ctrli_op_import },
	/* tag matching (ctrl_tm.c) */
	[XRXE_CTRL_CREATE_TM_SRQ] = { "create_tm_srq", sizeof(struct xrxe_ctrl_create_tm_srq), 0,
				      false, xrxe_ctrli_op_create_tm_srq },
	[XRXE_CTRL_SRQ_OP] = { "srq_op", sizeof(struct xrxe_ctrl_srq_op), 0, false,
			       xrxe_ctrli_op_srq_op },
};

