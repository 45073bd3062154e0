// SPDX-License-Identifier: MIT
/*
 * The shim's side of the daemon's ring slabs (abi.h struct xrxe_ring_loc):
 * each slab is mapped once per context and shared by every ring carved from
 * it, so 65 536 QPs cost a few hundred mappings here too, not 131 072. A
 * slab is unmapped when the context destroys the last ring it mapped from
 * it; the daemon numbers slabs without reuse, so a number met again after
 * that is the same slab, which is simply mapped again.
 *
 * The table is a sorted array (a context has a few hundred slabs): binary
 * search, insertion and removal by memmove.
 */
#include "verbs/shim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Index of slab id in ctx->slabs, or where it would go (*found false). */
static uint32_t slab_find(const struct xrxe_context *ctx, uint32_t id, bool *found)
{
	uint32_t lo = 0, hi = ctx->nslabs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ctx->slabs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < ctx->nslabs && ctx->slabs[lo].id == id;
	return lo;
}

/* The slab's mapping with one more ring in it (under slab_lock); fd closed by
 * the caller. */
static int slab_get(struct xrxe_context *ctx, int fd, const struct xrxe_ring_loc *loc,
		    uint8_t **base)
{
	struct xrxe_slab_map *m;
	struct stat st;
	bool found;
	uint32_t i = slab_find(ctx, loc->slab, &found);
	void *p;

	if (found) {
		m = &ctx->slabs[i];
		if (m->size != loc->slab_size)
			return -EPROTO;
		m->refs++;
		*base = m->base;
		return 0;
	}
	if (fstat(fd, &st) < 0 || st.st_size < 0 || (uint64_t)st.st_size < loc->slab_size)
		return -EPROTO;
	if (ctx->nslabs == ctx->slabs_cap) {
		uint32_t cap = ctx->slabs_cap ? ctx->slabs_cap * 2 : 16;
		struct xrxe_slab_map *n = realloc(ctx->slabs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ctx->slabs = n;
		ctx->slabs_cap = cap;
	}
	p = mmap(NULL, loc->slab_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	memmove(&ctx->slabs[i + 1], &ctx->slabs[i], (ctx->nslabs - i) * sizeof(ctx->slabs[0]));
	ctx->slabs[i] = (struct xrxe_slab_map){
		.id = loc->slab, .refs = 1, .base = p, .size = loc->slab_size,
	};
	ctx->nslabs++;
	*base = p;
	return 0;
}

static void slab_put(struct xrxe_context *ctx, uint32_t id)
{
	bool found;
	uint32_t i = slab_find(ctx, id, &found);

	if (!found)
		return;
	if (--ctx->slabs[i].refs)
		return;
	munmap(ctx->slabs[i].base, ctx->slabs[i].size);
	ctx->nslabs--;
	memmove(&ctx->slabs[i], &ctx->slabs[i + 1], (ctx->nslabs - i) * sizeof(ctx->slabs[0]));
}

int xrxe_ring_map(struct xrxe_context *ctx, int fd, const struct xrxe_ring_loc *loc,
		  struct xrxe_ring **ring)
{
	uint8_t *base = NULL;
	void *p;
	int ret;

	/* the daemon's word, still: nothing outside the slab's mapping */
	if (loc->size < sizeof(struct xrxe_ring) || loc->slab_size > SIZE_MAX ||
	    loc->offset > loc->slab_size || loc->size > loc->slab_size - loc->offset ||
	    (loc->offset % 128) != 0 || (!loc->slab && loc->offset)) {
		close(fd);
		return -EPROTO;
	}
	if (!loc->slab) { /* a ring with a memfd of its own */
		p = mmap(NULL, loc->slab_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (p == MAP_FAILED)
			return -errno;
		*ring = p;
		return 0;
	}
	pthread_mutex_lock(&ctx->slab_lock);
	ret = slab_get(ctx, fd, loc, &base);
	pthread_mutex_unlock(&ctx->slab_lock);
	close(fd);
	if (ret)
		return ret;
	*ring = (struct xrxe_ring *)(base + loc->offset);
	return 0;
}

void xrxe_ring_unmap(struct xrxe_context *ctx, uint32_t slab, struct xrxe_ring *ring, size_t len)
{
	if (!ring)
		return;
	if (!slab) {
		munmap(ring, len);
		return;
	}
	pthread_mutex_lock(&ctx->slab_lock);
	slab_put(ctx, slab);
	pthread_mutex_unlock(&ctx->slab_lock);
}

void xrxe_ring_slabs_forget(struct xrxe_context *ctx)
{
	free(ctx->slabs);
	ctx->slabs = NULL;
	ctx->nslabs = ctx->slabs_cap = 0;
	pthread_mutex_destroy(&ctx->slab_lock);
}

/* --- send, receive and shared receive queues --------------------------------------- */

int xrxe_wq_map(struct xrxe_context *ctx, struct xrxe_wq *q, int fd,
		const struct xrxe_ring_loc *loc, uint32_t min_elem)
{
	struct xrxe_ring *r;
	uint32_t log2, mask;
	int ret = xrxe_ring_map(ctx, fd, loc, &r);

	if (ret)
		return ret;
	/* Written by the daemon before it sent the reply; still, a bad header
	 * must not send us outside the ring. */
	log2 = r->log2_elem_size;
	mask = r->index_mask;
	if (log2 > 20 || (1u << log2) < min_elem || (mask & (mask + 1)) != 0 || mask == 0 ||
	    sizeof(struct xrxe_ring) + ((size_t)mask + 1) * ((size_t)1 << log2) > loc->size) {
		shim_err("malformed ring from the daemon (elem 2^%u, mask %#x, %llu bytes)", log2,
			 mask, (unsigned long long)loc->size);
		xrxe_ring_unmap(ctx, loc->slab, r, loc->slab_size);
		return -EPROTO;
	}
	q->ring = r;
	q->map_len = loc->slab_size;
	q->slab = loc->slab;
	q->mask = mask;
	q->log2_elem = log2;
	q->prod = xrxe_ring_load_producer(r, mask);
	q->cons = xrxe_ring_load_consumer(r, mask);
	pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

void xrxe_wq_unmap(struct xrxe_context *ctx, struct xrxe_wq *q)
{
	if (q->ring) {
		xrxe_ring_unmap(ctx, q->slab, q->ring, q->map_len);
		pthread_spin_destroy(&q->lock);
	}
	q->ring = NULL;
}
