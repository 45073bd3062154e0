// SPDX-License-Identifier: MIT
/*
 * Tag matching's verbs (docs/architecture.md "Tag matching"): TM SRQs are
 * created through ibv_create_srq_ex (verbs/xrc.c, IBV_SRQT_TM), their list
 * operations (ibv_post_srq_ops) go to the daemon one request each: the
 * daemon's thread matches arriving messages against the same list, so it
 * owns it, and an ADD's handle is known when the call returns.
 *
 * tm_caps offers RC tag matching, eager and rendezvous (the transport's
 * tm_rndv.c issues a matched RNDV's READ and FIN itself).
 */
#include "verbs/shim.h"

#include <errno.h>
#include <string.h>

#include "transport/transport.h"

void xrxe_tm_caps(struct ibv_tm_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	caps->flags = IBV_TM_CAP_RC;
	caps->max_num_tags = XRXE_TP_TM_MAX_TAGS;
	caps->max_ops = XRXE_TP_TM_MAX_TAGS; /* operations are synchronous: none outstanding */
	caps->max_sge = 1;                   /* tm.h XRXE_TM_MAX_SGE */
	/* TMH + RVH + 32 bytes (mlx5's size); what follows the RVH in an
	 * RNDV message is not placed (tm_srq.c), any size is taken */
	caps->max_rndv_hdr_size = 64;
}

static int post_one(struct xrxe_context *ctx, struct ibv_srq *srq, struct ibv_ops_wr *wr)
{
	struct xrxe_ctrl_srq_op req;
	struct xrxe_ctrl_srq_op_reply rep;
	int ret;

	memset(&req, 0, sizeof(req));
	req.srq = srq->handle;
	req.op = (uint32_t)wr->opcode;
	req.flags = (uint32_t)wr->flags;
	req.unexp_cnt = wr->tm.unexpected_cnt;
	req.handle = wr->tm.handle;
	req.wr_id = wr->wr_id;
	if (wr->opcode == IBV_WR_TAG_ADD) {
		if (wr->tm.add.num_sge < 0 || wr->tm.add.num_sge > 1 ||
		    (wr->tm.add.num_sge && !wr->tm.add.sg_list))
			return EINVAL;
		req.num_sge = (uint32_t)wr->tm.add.num_sge;
		if (req.num_sge) {
			req.sge.addr = wr->tm.add.sg_list[0].addr;
			req.sge.length = wr->tm.add.sg_list[0].length;
			req.sge.lkey = wr->tm.add.sg_list[0].lkey;
		}
		req.recv_wr_id = wr->tm.add.recv_wr_id;
		req.tag = wr->tm.add.tag;
		req.mask = wr->tm.add.mask;
	}
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_SRQ_OP, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret)
		return -ret;
	if (wr->opcode == IBV_WR_TAG_ADD)
		wr->tm.handle = rep.handle;
	return 0;
}

static int tm_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *wr, struct ibv_ops_wr **bad)
{
	struct xrxe_context *ctx = to_xctx(srq->context);
	int ret;

	for (; wr; wr = wr->next) {
		ret = post_one(ctx, srq, wr);
		if (ret) {
			*bad = wr;
			return ret;
		}
	}
	return 0;
}

void xrxe_tm_install(struct verbs_context *vctx)
{
	vctx->post_srq_ops = tm_post_srq_ops;
}
