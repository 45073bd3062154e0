/* SPDX-License-Identifier: MIT */
/*
 * On-demand paging, the shim's side (docs/verbs-shim.md "On-demand paging").
 * A region registered with IBV_ACCESS_ON_DEMAND is not moved into the memfd
 * (mr.c skips mr_remap): the daemon reaches it through the process's own
 * /proc/self/mem, handed over once per context (ODP_OPEN), at the moment the
 * transport touches it, so memory that is mapped, unmapped or first touched
 * after registration works as on a NIC with ODP, and a page that is not
 * there gives an error completion (docs/architecture.md "On-demand paging").
 *
 * ibv_advise_mr is answered here: the regions named must be this context's
 * ODP regions in the PD (ENOENT otherwise, as mlx5 answers), the ranges
 * inside them (EFAULT); a prefetch faults the pages in with
 * MADV_POPULATE_READ / MADV_POPULATE_WRITE in the application itself (the
 * kernel's own prefetch, hugetlb pages included), which spares the daemon's
 * later accesses the fault. IBV_ADVISE_MR_FLAG_FLUSH waits for it and
 * reports a range that cannot be populated (EFAULT); without the flag the
 * advice is best effort, as on mlx5, and its failures are not reported.
 * PREFETCH_NO_FAULT maps nothing that is not there: there are no device page
 * tables to fill, so once checked it has nothing to do.
 */
#include "verbs/shim.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int xrxe_odp_open(struct xrxe_context *ctx)
{
	struct xrxe_ctrl_hdr req;
	int fd, ret = 0;

	pthread_mutex_lock(&ctx->obj_lock);
	if (ctx->odp_open)
		goto out;
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		shim_warn("on-demand paging needs /proc/self/mem: %s", strerror(errno));
		ret = ret == -ENOENT ? -EOPNOTSUPP : ret;
		goto out;
	}
	memset(&req, 0, sizeof(req));
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_ODP_OPEN, &req, sizeof(req), &fd, 1, NULL, 0,
			     NULL, NULL);
	close(fd); /* the daemon holds its own copy */
	/* An imported context shares its exporter's connection (import.c),
	 * which may have this process's memory already. */
	if (ret == -EEXIST && ctx->primary)
		ret = 0;
	if (!ret)
		ctx->odp_open = true;
out:
	pthread_mutex_unlock(&ctx->obj_lock);
	return ret;
}

void xrxe_odp_add(struct xrxe_context *ctx, struct xrxe_mr *mr)
{
	pthread_mutex_lock(&ctx->obj_lock);
	mr->odp_next = ctx->odp_mrs;
	ctx->odp_mrs = mr;
	pthread_mutex_unlock(&ctx->obj_lock);
}

void xrxe_odp_del(struct xrxe_context *ctx, struct xrxe_mr *mr)
{
	pthread_mutex_lock(&ctx->obj_lock);
	for (struct xrxe_mr **p = &ctx->odp_mrs; *p; p = &(*p)->odp_next) {
		if (*p == mr) {
			*p = mr->odp_next;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->obj_lock);
}

/* The ODP region of lkey in pd that the advice may use, and the SGE's range
 * inside it: 0, -ENOENT (no such ODP region in pd, or PREFETCH_WRITE on a
 * region without local write, as mlx5 refuses it) or -EFAULT. *app: where
 * the SGE's bytes are in this process (an SGE addresses the region by its
 * iova, which ibv_reg_mr_iova may have made differ). Under obj_lock. */
static int advise_check(struct xrxe_context *ctx, struct ibv_pd *pd, uint32_t advice,
			const struct ibv_sge *sge, uint64_t *app)
{
	struct xrxe_mr *mr;
	uint64_t start, len;

	for (mr = ctx->odp_mrs; mr; mr = mr->odp_next)
		if (mr->mr.lkey == sge->lkey && mr->mr.pd->handle == pd->handle)
			break;
	if (!mr)
		return -ENOENT;
	if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE && !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return -ENOENT;
	start = mr->iova;
	len = mr->mr.length;
	if (sge->addr < start || sge->length > len || sge->addr - start > len - sge->length)
		return -EFAULT;
	*app = (uint64_t)(uintptr_t)mr->mr.addr + (sge->addr - start);
	return 0;
}

/* Fault [addr, addr + len) in, readable or writable; 0 or -errno. */
static int populate(uint64_t addr, uint64_t len, bool write)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), start = addr & ~(pg - 1);
	uint64_t end = addr + len;

	if (!len)
		return 0;
	if (end < addr)
		return -EFAULT;
	end = (end + pg - 1) & ~(pg - 1);
	if (madvise((void *)(uintptr_t)start, end - start,
		    write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) < 0)
		return -errno;
	return 0;
}

int xrxe_advise_mr_op(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		      struct ibv_sge *sg_list, uint32_t num_sge)
{
	struct xrxe_context *ctx = to_xctx(pd->context);
	bool sync = flags & IBV_ADVISE_MR_FLAG_FLUSH;
	uint64_t app = 0;
	int ret = 0;

	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return EOPNOTSUPP;
	if (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH)
		return EOPNOTSUPP;
	if (!sg_list || !num_sge)
		return EINVAL;
	/* every SGE checked before anything is done */
	pthread_mutex_lock(&ctx->obj_lock);
	for (uint32_t i = 0; i < num_sge && !ret; i++)
		ret = advise_check(ctx, pd, advice, &sg_list[i], &app);
	pthread_mutex_unlock(&ctx->obj_lock);
	if (ret)
		return -ret;
	if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return 0;
	for (uint32_t i = 0; i < num_sge; i++) {
		int err;

		pthread_mutex_lock(&ctx->obj_lock);
		err = advise_check(ctx, pd, advice, &sg_list[i], &app);
		pthread_mutex_unlock(&ctx->obj_lock);
		/* a region deregistered meanwhile by another thread: its
		 * pages are no business of ours any more */
		if (!err)
			err = populate(app, sg_list[i].length,
				       advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
		if (err && sync)
			return EFAULT;
	}
	return 0;
}
