/* SPDX-License-Identifier: MIT */
/*
 * Device memory (ibv_alloc_dm, ibv_memcpy_to_dm/from_dm, ibv_reg_dm_mr).
 *
 * A NIC's device memory is RAM on the NIC: the application cannot touch it
 * with loads and stores, only copy in and out, register it and let the device
 * read and write it. xrxe's "device" is the daemon, and the memory it reads
 * and writes is the process's registration memfd (mr_remap.h). A DM is an
 * anonymous mapping the application is never given a pointer to; ibv_reg_dm_mr
 * registers a window of it as a zero-based MR, which moves its pages into the
 * memfd the daemon maps, exactly as for any MR. So remote peers and the
 * transport address it from 0 (IBV_ACCESS_ZERO_BASED, required as on mlx5),
 * and the copy functions are plain memcpy into those pages.
 *
 * Limits: each context may hold XRXE_DM_MAX_BYTES of DM in all (the
 * max_dm_size of ibv_query_device_ex); copies must be 4-byte aligned in
 * offset and length (what rdma-core's tests require of every device: mlx5's
 * rule, tests/test_device.py). A DM with MRs registered over it cannot be
 * freed (EBUSY), as the kernel's uverbs refuses it.
 */
#include "verbs/shim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define DM_COPY_ALIGN 4u

struct xrxe_dm {
	struct ibv_dm dm;
	uint8_t *mem;   /* never handed to the application */
	size_t length;  /* what was asked for */
	size_t mapped;  /* length rounded up to pages */
	_Atomic uint32_t mrs; /* MRs registered over it (an import counts on its origin) */
	/* Sharing (ibv_import_dm): dm.handle names an allocated DM in the list
	 * of its connection's opened context (owner->dms, under
	 * owner->obj_lock) until it is freed; an import points at its origin,
	 * which keeps its memory while refs (itself and each import) last. */
	struct xrxe_context *owner;
	struct xrxe_dm *origin, *next;
	uint32_t refs;
	bool listed;
};

static struct xrxe_dm *to_xdm(struct ibv_dm *dm)
{
	return xrxe_container_of(dm, struct xrxe_dm, dm);
}

/* offset and length inside the DM and 4-byte aligned: 0 or EINVAL. */
static int dm_check_copy(const struct xrxe_dm *d, uint64_t offset, size_t length)
{
	if ((offset | length) & (DM_COPY_ALIGN - 1))
		return EINVAL;
	if (offset > d->length || length > d->length - offset)
		return EINVAL;
	return 0;
}

static int dm_memcpy_to(struct ibv_dm *dm, uint64_t dm_offset, const void *host, size_t length)
{
	struct xrxe_dm *d = to_xdm(dm);
	int ret = dm_check_copy(d, dm_offset, length);

	if (ret)
		return ret;
	memcpy(d->mem + dm_offset, host, length);
	return 0;
}

static int dm_memcpy_from(void *host, struct ibv_dm *dm, uint64_t dm_offset, size_t length)
{
	struct xrxe_dm *d = to_xdm(dm);
	int ret = dm_check_copy(d, dm_offset, length);

	if (ret)
		return ret;
	memcpy(host, d->mem + dm_offset, length);
	return 0;
}

struct ibv_dm *xrxe_alloc_dm_op(struct ibv_context *context, struct ibv_alloc_dm_attr *attr)
{
	struct xrxe_context *ctx = to_xctx(context);
	long page = sysconf(_SC_PAGESIZE);
	struct xrxe_dm *d;
	uint64_t held;

	if (attr->comp_mask)
		return xrxe_null_errno(EINVAL);
	/* Page-aligned memory satisfies any alignment up to a page. */
	if (attr->log_align_req > (uint32_t)__builtin_ctzl((unsigned long)page))
		return xrxe_null_errno(EINVAL);
	if (attr->length == 0 || attr->length > XRXE_DM_MAX_BYTES)
		return xrxe_null_errno(ENOMEM);
	held = atomic_fetch_add(&ctx->dm_bytes, attr->length);
	if (held + attr->length > XRXE_DM_MAX_BYTES) {
		atomic_fetch_sub(&ctx->dm_bytes, attr->length);
		return xrxe_null_errno(ENOMEM);
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		goto fail_budget;
	d->length = attr->length;
	d->mapped = (attr->length + (size_t)page - 1) & ~((size_t)page - 1);
	d->mem = mmap(NULL, d->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (d->mem == MAP_FAILED) {
		free(d);
		goto fail_budget;
	}
	d->dm.context = context;
	d->dm.memcpy_to_dm = dm_memcpy_to;
	d->dm.memcpy_from_dm = dm_memcpy_from;
	d->owner = xrxe_ctx_primary(ctx);
	d->refs = 1;
	pthread_mutex_lock(&d->owner->obj_lock);
	d->dm.handle = d->owner->dm_next_handle++;
	d->next = d->owner->dms;
	d->owner->dms = d;
	d->listed = true;
	pthread_mutex_unlock(&d->owner->obj_lock);
	return &d->dm;

fail_budget:
	atomic_fetch_sub(&ctx->dm_bytes, attr->length);
	return xrxe_null_errno(ENOMEM);
}

/* Off the owner's list: no import can find it any more (owner->obj_lock held). */
static void dm_unlist(struct xrxe_dm *d)
{
	for (struct xrxe_dm **p = &d->owner->dms; *p; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			break;
		}
	d->listed = false;
}

/* One reference to an allocated DM dropped: its memory goes with the last. */
static void dm_put(struct xrxe_dm *d)
{
	bool last;

	pthread_mutex_lock(&d->owner->obj_lock);
	last = --d->refs == 0;
	pthread_mutex_unlock(&d->owner->obj_lock);
	if (last) {
		munmap(d->mem, d->mapped);
		free(d);
	}
}

int xrxe_free_dm_op(struct ibv_dm *dm)
{
	struct xrxe_dm *d = to_xdm(dm), *o = d->origin ? d->origin : d;

	if (atomic_load(&o->mrs))
		return EBUSY;
	/* Freeing through an import destroys the shared object as the kernel's
	 * does: no further import finds it; the memory stays while the other
	 * holders have it. */
	pthread_mutex_lock(&o->owner->obj_lock);
	if (o->listed)
		dm_unlist(o);
	pthread_mutex_unlock(&o->owner->obj_lock);
	if (d->origin) {
		xrxe_unimport_dm(dm);
		return 0;
	}
	atomic_fetch_sub(&to_xctx(dm->context)->dm_bytes, d->length);
	dm_put(d);
	return 0;
}

struct ibv_dm *xrxe_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	struct xrxe_context *owner = xrxe_ctx_primary(to_xctx(context));
	struct xrxe_dm *d, *o;

	d = calloc(1, sizeof(*d));
	if (!d)
		return xrxe_null_errno(ENOMEM);
	pthread_mutex_lock(&owner->obj_lock);
	for (o = owner->dms; o && o->dm.handle != dm_handle; o = o->next)
		;
	if (o)
		o->refs++;
	pthread_mutex_unlock(&owner->obj_lock);
	if (!o) {
		free(d);
		return xrxe_null_errno(ENOENT); /* as the kernel's lookup of an unknown handle */
	}
	d->origin = o;
	d->owner = owner;
	d->mem = o->mem;
	d->length = o->length;
	d->mapped = o->mapped;
	d->dm.context = context;
	d->dm.memcpy_to_dm = dm_memcpy_to;
	d->dm.memcpy_from_dm = dm_memcpy_from;
	d->dm.handle = dm_handle;
	return &d->dm;
}

void xrxe_unimport_dm(struct ibv_dm *dm)
{
	struct xrxe_dm *d = to_xdm(dm);

	if (!d->origin)
		return; /* not an import: ibv_unimport_dm of an allocated DM does nothing */
	dm_put(d->origin);
	free(d);
}

struct ibv_mr *xrxe_reg_dm_mr_op(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t dm_offset,
				 size_t length, unsigned int access)
{
	struct xrxe_dm *d = to_xdm(dm);
	struct xrxe_mr *mr;
	struct ibv_mr *ibmr;

	/* Device memory has no virtual address of the application's: it is
	 * addressed from 0 (mlx5 refuses a DM MR without ZERO_BASED too). */
	if (!(access & IBV_ACCESS_ZERO_BASED) || dm->context != pd->context)
		return xrxe_null_errno(EINVAL);
	if (dm_offset > d->length || length > d->length - dm_offset)
		return xrxe_null_errno(EINVAL);
	ibmr = xrxe_reg_mr_region(pd, d->mem + dm_offset, length, 0, access);
	if (!ibmr)
		return NULL;
	mr = xrxe_container_of(ibmr, struct xrxe_mr, mr);
	mr->dm_mrs = d->origin ? &d->origin->mrs : &d->mrs;
	atomic_fetch_add(mr->dm_mrs, 1);
	/* The application's view: the region starts at 0, no pointer into
	 * the DM's pages leaks out. */
	ibmr->addr = NULL;
	return ibmr;
}
