/* SPDX-License-Identifier: MIT */
/*
 * Memory registration. The pages are first moved into the process's memfd
 * (mr_remap.c: the daemon maps the same file window and reaches them without
 * a copy), then the daemon is told about the region and hands out the keys.
 * Deregistration runs in the opposite order: the daemon lets go first, then
 * the pages go back to private memory.
 */
#include "verbs/shim.h"

#include <stdlib.h>
#include <string.h>

#include "verbs/mr_remap.h"

/* Access bits the transport implements. The optional range (1<<20..1<<29,
 * e.g. IBV_ACCESS_RELAXED_ORDERING, which perftest always sets) may be ignored
 * by definition. */
#define XRXE_ACCESS_SUPPORTED                                                         \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |      \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

struct ibv_mr *xrxe_reg_mr_common(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				  unsigned int access)
{
	struct xrxe_context *ctx = to_xctx(pd->context);
	struct xrxe_ctrl_reg_mr req;
	struct xrxe_ctrl_reg_mr_reply rep;
	struct xrxe_mr *mr;
	int ret;

	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (access & ~(unsigned int)XRXE_ACCESS_SUPPORTED)
		return xrxe_null_errno(EOPNOTSUPP); /* ODP, zero-based, hugetlb hints, ... */
	/* IBA o10-36.2.1: remote write or atomic access requires local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return xrxe_null_errno(EINVAL);
	if (length == 0)
		return xrxe_null_errno(EINVAL);

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return xrxe_null_errno(ENOMEM);
	ret = xrxe_remap_acquire(addr, length);
	if (ret) {
		free(mr);
		return xrxe_null_errno(-ret);
	}
	memset(&req, 0, sizeof(req));
	req.pd = pd->handle;
	req.access = access;
	req.addr = (uintptr_t)addr;
	req.length = length;
	req.iova = iova;
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_REG_MR, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret) {
		xrxe_remap_release(addr, length);
		free(mr);
		return xrxe_null_errno(-ret);
	}
	mr->mr.context = pd->context;
	mr->mr.pd = pd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.handle = rep.handle;
	mr->mr.lkey = rep.lkey;
	mr->mr.rkey = rep.rkey;
	mr->remap_addr = addr;
	mr->remap_len = length;
	return &mr->mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return xrxe_reg_mr_common(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access)
{
	return xrxe_reg_mr_common(pd, addr, length, iova, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	return xrxe_reg_mr_common(pd, addr, length, iova, access);
}

int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct xrxe_mr *mr = xrxe_container_of(ibmr, struct xrxe_mr, mr);
	int ret;

	ret = xrxe_ctrl_destroy(to_xctx(ibmr->context), XRXE_CTRL_DEREG_MR, ibmr->handle);
	if (ret)
		return -ret;
	xrxe_remap_release(mr->remap_addr, mr->remap_len);
	free(mr);
	return 0;
}

/* Changing a registration in place is not offered (pyverbs is the only
 * importer); rdma-core's code for "the command failed". */
int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access)
{
	(void)mr, (void)flags, (void)pd, (void)addr, (void)length, (void)access;
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_CMD;
}
