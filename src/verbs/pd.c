/* SPDX-License-Identifier: MIT */
/* Protection domains: a daemon handle each (parent domains: domain.c). */
#include "verbs/shim.h"

#include <stdlib.h>

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct xrxe_context *ctx = to_xctx(context);
	struct xrxe_ctrl_hdr req; /* ALLOC_PD: the header alone */
	struct xrxe_ctrl_handle rep;
	struct xrxe_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return xrxe_null_errno(ENOMEM);
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_ALLOC_PD, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret) {
		free(pd);
		return xrxe_null_errno(-ret);
	}
	pd->pd.context = context;
	pd->pd.handle = rep.handle;
	return &pd->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct xrxe_pd *xpd = xrxe_container_of(pd, struct xrxe_pd, pd);
	int ret;

	if (xpd->protection)
		return xrxe_dealloc_parent_domain(xpd);
	/* As the kernel counts them: parent domains hold their PD. */
	if (atomic_load(&xpd->parents))
		return EBUSY;
	/* EBUSY from the daemon while MRs, QPs, AHs or SRQs still use it. */
	ret = xrxe_ctrl_destroy(to_xctx(pd->context), XRXE_CTRL_DEALLOC_PD, pd->handle);

	if (ret)
		return -ret;
	free(xrxe_container_of(pd, struct xrxe_pd, pd));
	return 0;
}
