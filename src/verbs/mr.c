/* SPDX-License-Identifier: MIT */
/*
 * Memory registration. The pages are first moved into the process's memfd
 * (mr_remap.c: the daemon maps the same file window and reaches them without
 * a copy), then the daemon is told about the region and hands out the keys.
 * Deregistration runs in the opposite order: the daemon lets go first, then
 * the pages go back to private memory. A region registered with
 * IBV_ACCESS_ON_DEMAND moves nothing: the daemon reaches it through the
 * process's /proc/self/mem when the transport touches it (odp.c).
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
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |           \
	 XRXE_ACCESS_FLUSH_GLOBAL | XRXE_ACCESS_FLUSH_PERSISTENT | IBV_ACCESS_ON_DEMAND |    \
	 IBV_ACCESS_HUGETLB)

/* Access as the daemon takes it; -errno (0 when fine). HUGETLB says the
 * pages are hugetlb pages, which only on-demand paging can reach (the memfd
 * takes no hugetlb pages): EOPNOTSUPP without ON_DEMAND, as before ODP.
 * FLUSH to persistence is accepted here and refused by the daemon with
 * EINVAL (no persistence domain), as rxe does on non-pmem memory. */
static int check_access(unsigned int *access)
{
	*access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (*access & ~(unsigned int)XRXE_ACCESS_SUPPORTED)
		return -EOPNOTSUPP;
	if ((*access & IBV_ACCESS_HUGETLB) && !(*access & IBV_ACCESS_ON_DEMAND))
		return -EOPNOTSUPP;
	/* IBA o10-36.2.1: remote write or atomic access requires local write. */
	if ((*access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(*access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/* IBV_ACCESS_ZERO_BASED: remote peers address the region from 0 (the iova
 * of the registration is 0), the application keeps its virtual addresses. */
static uint64_t reg_iova(unsigned int access, uint64_t iova)
{
	return (access & IBV_ACCESS_ZERO_BASED) ? 0 : iova;
}

struct ibv_mr *xrxe_reg_mr_common(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				  unsigned int access)
{
	/* The kernel's ib_umem_get refuses a region of no pages. */
	if (length == 0)
		return xrxe_null_errno(EINVAL);
	return xrxe_reg_mr_region(pd, addr, length, iova, access);
}

struct ibv_mr *xrxe_reg_mr_region(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				  unsigned int access)
{
	struct xrxe_context *ctx = to_xctx(pd->context);
	struct xrxe_ctrl_reg_mr req;
	struct xrxe_ctrl_reg_mr_reply rep;
	struct xrxe_mr *mr;
	int ret;

	ret = check_access(&access);
	if (ret)
		return xrxe_null_errno(-ret);

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return xrxe_null_errno(ENOMEM);
	mr->odp = access & IBV_ACCESS_ON_DEMAND;
	mr->access = access;
	if (mr->odp) {
		/* nothing moves; the implicit region (NULL, SIZE_MAX) is the
		 * whole address space at iova 0 */
		ret = xrxe_odp_open(ctx);
		if (ret) {
			free(mr);
			return xrxe_null_errno(-ret);
		}
	}
	ret = length && !mr->odp ? xrxe_remap_acquire(addr, length) : 0;
	if (ret) {
		free(mr);
		return xrxe_null_errno(-ret);
	}
	memset(&req, 0, sizeof(req));
	req.pd = pd->handle;
	req.access = access;
	req.addr = (uintptr_t)addr;
	req.length = length;
	req.iova = reg_iova(access, iova);
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_REG_MR, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret) {
		if (length && !mr->odp)
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
	mr->remap_len = mr->odp ? 0 : length;
	mr->iova = req.iova;
	if (mr->odp)
		xrxe_odp_add(ctx, mr);
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
	if (mr->odp)
		xrxe_odp_del(to_xctx(ibmr->context), mr);
	if (mr->remap_len)
		xrxe_remap_release(mr->remap_addr, mr->remap_len);
	if (mr->dm_mrs)
		atomic_fetch_sub(mr->dm_mrs, 1);
	free(mr);
	return 0;
}

/* ibv_rereg_mr with libibverbs' own argument checks and return codes
 * (IBV_REREG_MR_ERR_INPUT for bad arguments, _DONT_FORK_NEW when the new
 * range cannot be taken over, _CMD when the daemon refuses, _DO_FORK_OLD when
 * the old range cannot be given back), errno set on every failure. The new
 * range is moved into the memfd before the daemon maps it; the old one goes
 * back to private memory only after the daemon let go of it. Keys stay. */
int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access)
{
	struct xrxe_mr *mr = xrxe_container_of(ibmr, struct xrxe_mr, mr);
	struct xrxe_context *ctx = to_xctx(ibmr->context);
	bool trans = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	struct xrxe_ctrl_rereg_mr req;
	struct xrxe_ctrl_reg_mr_reply rep;
	unsigned int acc = (unsigned int)access;
	int ret;

	if (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED || (trans && (!length || !addr)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != ibmr->context))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	/* A device-memory MR has no application address to move to. */
	if (trans && mr->dm_mrs) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (!flags) { /* the kernel answers EINVAL for "change nothing" */
		errno = EINVAL;
		return IBV_REREG_MR_ERR_CMD;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		ret = check_access(&acc);
		if (ret) {
			errno = -ret;
			return IBV_REREG_MR_ERR_CMD;
		}
		/* a region stays on demand or stays in the memfd: its pages
		 * would have to move under its peers (the daemon refuses it) */
		if (!(acc & IBV_ACCESS_ON_DEMAND) != !mr->odp) {
			errno = EOPNOTSUPP;
			return IBV_REREG_MR_ERR_CMD;
		}
	}
	if (trans && !mr->odp) {
		ret = xrxe_remap_acquire(addr, length);
		if (ret) {
			errno = -ret;
			return IBV_REREG_MR_ERR_DONT_FORK_NEW;
		}
	}
	memset(&req, 0, sizeof(req));
	req.handle = ibmr->handle;
	req.flags = (uint32_t)flags;
	req.pd = (flags & IBV_REREG_MR_CHANGE_PD) ? pd->handle : 0;
	req.access = acc;
	req.addr = (uintptr_t)addr;
	req.length = length;
	req.iova = reg_iova(acc, (uintptr_t)addr);
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_REREG_MR, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret) {
		if (trans && !mr->odp)
			xrxe_remap_release(addr, length);
		errno = -ret;
		return IBV_REREG_MR_ERR_CMD;
	}
	ibmr->lkey = rep.lkey;
	ibmr->rkey = rep.rkey;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = acc;
	if (flags & IBV_REREG_MR_CHANGE_PD)
		ibmr->pd = pd;
	if (trans && mr->odp) {
		ibmr->addr = addr;
		ibmr->length = length;
		mr->iova = req.iova;
	} else if (trans) {
		void *old = mr->remap_addr;
		size_t old_len = mr->remap_len;

		ibmr->addr = addr;
		ibmr->length = length;
		mr->remap_addr = addr;
		mr->remap_len = length;
		mr->iova = req.iova;
		ret = xrxe_remap_release(old, old_len);
		if (ret) {
			errno = -ret;
			return IBV_REREG_MR_ERR_DO_FORK_OLD;
		}
	}
	return 0;
}
