/* SPDX-License-Identifier: MIT */
/*
 * Thread domains and parent domains (ibv_alloc_td, ibv_alloc_parent_domain).
 *
 * A parent domain is "completely interchangeable with the struct ibv_pd used
 * to create it" (ibv_alloc_parent_domain(3)): it carries the PD's daemon
 * handle, so every verb that takes a PD (QPs, SRQs, MRs, AHs, MWs, and CQs
 * through IBV_CQ_INIT_ATTR_MASK_PD) works unchanged with it, and the daemon
 * never sees the difference. What it adds:
 *  - allocators: the shim allocates the memory of the QPs, CQs and SRQs
 *    created through a parent domain with the application's alloc()/free()
 *    (xrxe_domain_alloc). Their rings are not included: those are memory the
 *    daemon shares (a memfd it hands over), which no application allocator
 *    can provide; that is the memory a NIC provider would take from it, and
 *    the reason this is documented in docs/verbs-shim.md.
 *  - a thread domain: a hint that one thread uses the objects. Posting and
 *    polling in the shim take no lock a thread domain could remove (the
 *    rings are single-producer per queue already), so it is recorded only.
 * Deallocation follows the kernel's reference rules: a PD with parent
 * domains over it, and a TD a parent domain uses, answer EBUSY.
 */
#include "verbs/shim.h"

#include <stdlib.h>
#include <string.h>

struct xrxe_td {
	struct ibv_td td;
	_Atomic uint32_t users; /* parent domains using it */
};

struct ibv_td *xrxe_alloc_td_op(struct ibv_context *context, struct ibv_td_init_attr *attr)
{
	struct xrxe_td *t;

	if (attr->comp_mask)
		return xrxe_null_errno(EINVAL);
	t = calloc(1, sizeof(*t));
	if (!t)
		return xrxe_null_errno(ENOMEM);
	t->td.context = context;
	return &t->td;
}

int xrxe_dealloc_td_op(struct ibv_td *td)
{
	struct xrxe_td *t = xrxe_container_of(td, struct xrxe_td, td);

	if (atomic_load(&t->users))
		return EBUSY;
	free(t);
	return 0;
}

struct ibv_pd *xrxe_alloc_parent_domain_op(struct ibv_context *context,
					   struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct xrxe_pd *base, *pd;

	if (!attr->pd || attr->pd->context != context || (attr->comp_mask & ~known))
		return xrxe_null_errno(EINVAL);
	base = xrxe_container_of(attr->pd, struct xrxe_pd, pd);
	if (base->protection) /* a parent domain of a parent domain */
		return xrxe_null_errno(EINVAL);
	if (attr->td && attr->td->context != context)
		return xrxe_null_errno(EINVAL);
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!attr->alloc || !attr->free))
		return xrxe_null_errno(EINVAL);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return xrxe_null_errno(ENOMEM);
	pd->pd.context = context;
	pd->pd.handle = base->pd.handle;
	pd->protection = base;
	pd->td = attr->td;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	atomic_fetch_add(&base->parents, 1);
	if (attr->td)
		atomic_fetch_add(&xrxe_container_of(attr->td, struct xrxe_td, td)->users, 1);
	return &pd->pd;
}

/* ibv_dealloc_pd of a parent domain: only the wrapper goes, once no object
 * allocated through its allocator is left (their free needs it). */
int xrxe_dealloc_parent_domain(struct xrxe_pd *pd)
{
	if (atomic_load(&pd->objects))
		return EBUSY;
	atomic_fetch_sub(&pd->protection->parents, 1);
	if (pd->td)
		atomic_fetch_sub(&xrxe_container_of(pd->td, struct xrxe_td, td)->users, 1);
	free(pd);
	return 0;
}

/* Before each object allocated here: which allocator gave it, so that free
 * goes back to the same one (an allocator may answer USE_DEFAULT for some
 * sizes and not others). 64 bytes keep the object 64-byte aligned when the
 * allocator honours the alignment asked for. */
struct domain_hdr {
	bool custom;
	uint8_t pad[63];
};

void *xrxe_domain_alloc(struct ibv_pd *ibpd, size_t size, uint32_t resource)
{
	struct xrxe_pd *pd = ibpd ? xrxe_container_of(ibpd, struct xrxe_pd, pd) : NULL;
	struct domain_hdr *h = IBV_ALLOCATOR_USE_DEFAULT;

	if (size > SIZE_MAX - sizeof(*h))
		return NULL;
	if (pd && pd->alloc)
		h = pd->alloc(ibpd, pd->pd_context, sizeof(*h) + size, sizeof(*h),
			      XRXE_DOMAIN_RESOURCE(resource));
	if (h == IBV_ALLOCATOR_USE_DEFAULT) {
		h = calloc(1, sizeof(*h) + size);
		if (!h)
			return NULL;
		h->custom = false;
		return h + 1;
	}
	if (!h)
		return NULL;
	/* The allocator is to hand back zeroed memory; not every one does
	 * (posix_memalign does not). */
	memset(h, 0, sizeof(*h) + size);
	h->custom = true;
	atomic_fetch_add(&pd->objects, 1);
	return h + 1;
}

void xrxe_domain_free(struct ibv_pd *ibpd, void *p, uint32_t resource)
{
	struct xrxe_pd *pd = ibpd ? xrxe_container_of(ibpd, struct xrxe_pd, pd) : NULL;
	struct domain_hdr *h;

	if (!p)
		return;
	h = (struct domain_hdr *)p - 1;
	if (h->custom) {
		pd->free(ibpd, pd->pd_context, h, XRXE_DOMAIN_RESOURCE(resource));
		atomic_fetch_sub(&pd->objects, 1);
	} else
		free(h);
}
