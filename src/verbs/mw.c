/* SPDX-License-Identifier: MIT */
/*
 * Memory windows (IBA 10.6.7) in the shim: allocation and deallocation go to
 * the daemon; binding goes through the send queue like every other work
 * request (IBV_WR_BIND_MW), where the transport checks the IBA rules and
 * reports IBV_WC_MW_BIND_ERR.
 *
 * ibv_bind_mw (type 1) is rdma-core's rxe provider's: it posts a BIND_MW WQE
 * with the next R_Key (ibv_inc_rkey). Type 2 windows are bound by the
 * application's own BIND_MW work request, which names the new R_Key itself.
 * Either way, once the WQE is built mw->rkey holds the new R_Key.
 */
#include "verbs/shim.h"

#include <stdlib.h>
#include <string.h>

struct ibv_mw *xrxe_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct xrxe_context *ctx = to_xctx(pd->context);
	struct xrxe_ctrl_alloc_mw req;
	struct xrxe_ctrl_alloc_mw_reply rep;
	struct ibv_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return xrxe_null_errno(EINVAL);
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return xrxe_null_errno(ENOMEM);
	memset(&req, 0, sizeof(req));
	req.pd = pd->handle;
	req.type = type;
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_ALLOC_MW, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret) {
		free(mw);
		return xrxe_null_errno(-ret);
	}
	mw->context = pd->context;
	mw->pd = pd;
	mw->rkey = rep.rkey;
	mw->handle = rep.handle;
	mw->type = type;
	return mw;
}

int xrxe_dealloc_mw(struct ibv_mw *mw)
{
	int ret = xrxe_ctrl_destroy(to_xctx(mw->context), XRXE_CTRL_DEALLOC_MW, mw->handle);

	if (ret)
		return -ret;
	free(mw);
	return 0;
}

int xrxe_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	/* the WQE builder stores the new R_Key in mw->rkey once posted */
	return xrxe_post_send(qp, &wr, &bad);
}
