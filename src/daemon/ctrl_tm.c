// SPDX-License-Identifier: MIT
/*
 * Tag matching's control operations (abi.h CREATE_TM_SRQ, SRQ_OP): the
 * request is the application's, checked here for its objects and by the
 * transport (tm_srq.c) for everything else.
 */
#include <errno.h>

#include "daemon/ctrl_internal.h"
#include "transport/transport.h"

int xrxe_ctrli_op_create_tm_srq(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_tm_srq *q = req;
	struct obj_cq *cq = (struct obj_cq *)xrxe_ctrli_obj_lookup(c, q->cq, OBJ_CQ);

	if (!cq)
		return -EBADF;
	if (q->max_num_tags == 0 || q->max_num_tags > XRXE_TP_TM_MAX_TAGS)
		return -EINVAL;
	return xrxe_ctrli_srq_create(c, &q->srq, 0, q->max_num_tags, cq->cq, fds, r);
}

int xrxe_ctrli_op_srq_op(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_srq_op *q = req;
	struct obj_srq *srq = (struct obj_srq *)xrxe_ctrli_obj_lookup(c, q->srq, OBJ_SRQ);
	struct xrxe_ctrl_srq_op_reply *rep = REPLY(r, struct xrxe_ctrl_srq_op_reply);
	int err;

	(void)fds;
	if (!srq)
		return -EBADF;
	err = xrxe_tp_srq_op(c->ctrl->cfg.tp, srq->srq, q, &rep->handle);
	if (err)
		return err;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}
