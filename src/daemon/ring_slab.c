// SPDX-License-Identifier: MIT
#include "daemon/ring_slab.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/shm.h"
#include "util/log.h"

_Static_assert(XRXE_SLAB_MIN_CHUNK << (XRXE_SLAB_CLASSES - 1) == XRXE_SLAB_MAX_CHUNK,
	       "classes span MIN..MAX chunk");
_Static_assert(XRXE_SLAB_MAX_CHUNKS % 64 == 0, "whole bitmap words");

bool xrxe_slab_fits(size_t bytes)
{
	return bytes && bytes <= XRXE_SLAB_MAX_CHUNK;
}

/* Smallest class whose chunk holds bytes (xrxe_slab_fits). */
static uint32_t class_of(size_t bytes)
{
	uint32_t cls = 0;

	while ((size_t)XRXE_SLAB_MIN_CHUNK << cls < bytes)
		cls++;
	return cls;
}

/* --- the class lists: partial slabs first, so the head has room if any has -- */

static void list_del(struct xrxe_slab_pool *p, struct xrxe_ring_slab *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		p->cls[s->cls] = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
}

static void list_push_head(struct xrxe_slab_pool *p, struct xrxe_ring_slab *s)
{
	s->prev = NULL;
	s->next = p->cls[s->cls];
	if (s->next)
		s->next->prev = s;
	p->cls[s->cls] = s;
}

/* A full slab goes behind the partial ones. Finding the tail walks the list,
 * but a slab only fills once per XRXE_SLAB_BYTES / chunk allocations, and a
 * connection has a few hundred slabs at most. */
static void list_push_tail(struct xrxe_slab_pool *p, struct xrxe_ring_slab *s)
{
	struct xrxe_ring_slab *t = p->cls[s->cls];

	if (!t) {
		list_push_head(p, s);
		return;
	}
	while (t->next)
		t = t->next;
	t->next = s;
	s->prev = t;
	s->next = NULL;
}

/* --- slabs ------------------------------------------------------------------ */

static struct xrxe_ring_slab *slab_new(struct xrxe_slab_pool *p, uint32_t cls, int *err)
{
	struct xrxe_ring_slab *s;
	char name[32];
	void *base;

	if (p->next_id == UINT32_MAX) { /* 4 billion slabs in one connection */
		*err = -ENOSPC;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	snprintf(name, sizeof(name), "xrxe-slab-%u", p->next_id + 1);
	*err = xrxe_shm_region_create(name, XRXE_SLAB_BYTES, &s->fd, &base);
	if (*err) {
		free(s);
		return NULL;
	}
	s->base = base;
	s->id = ++p->next_id;
	s->cls = cls;
	s->chunk = XRXE_SLAB_MIN_CHUNK << cls;
	s->nchunks = XRXE_SLAB_BYTES / s->chunk;
	p->nslabs++;
	list_push_head(p, s);
	return s;
}

static void slab_release(struct xrxe_slab_pool *p, struct xrxe_ring_slab *s)
{
	list_del(p, s);
	munmap(s->base, XRXE_SLAB_BYTES);
	close(s->fd);
	p->nslabs--;
	free(s);
}

/* First clear bit from the hint on (the slab is not full). */
static uint32_t take_chunk(struct xrxe_ring_slab *s)
{
	uint32_t words = (s->nchunks + 63) / 64;

	for (uint32_t n = 0; n < words; n++) {
		uint32_t w = (s->hint + n) % words;
		uint64_t freebits = ~s->inuse[w];

		if (w == words - 1 && s->nchunks % 64)
			freebits &= (1ull << (s->nchunks % 64)) - 1;
		if (freebits) {
			uint32_t bit = (uint32_t)__builtin_ctzll(freebits);

			s->inuse[w] |= 1ull << bit;
			s->hint = w;
			return w * 64 + bit;
		}
	}
	return UINT32_MAX; /* unreachable while used < nchunks */
}

int xrxe_slab_alloc(struct xrxe_slab_pool *p, size_t bytes, struct xrxe_slab_chunk *out,
		    bool *new_slab)
{
	struct xrxe_ring_slab *s;
	uint32_t cls, idx;
	int err;

	*new_slab = false;
	if (!xrxe_slab_fits(bytes))
		return -EINVAL;
	cls = class_of(bytes);
	s = p->cls[cls];
	if (!s || s->used == s->nchunks) {
		s = slab_new(p, cls, &err);
		if (!s)
			return err;
		*new_slab = true;
	}
	idx = take_chunk(s);
	if (idx == UINT32_MAX)
		return -EIO;
	if (++s->used == s->nchunks && s->next) {
		list_del(p, s);
		list_push_tail(p, s);
	}
	out->slab = s;
	out->offset = (uint64_t)idx * s->chunk;
	out->ptr = s->base + out->offset;
	return 0;
}

/* Another slab of the class with nothing carved: the reserve. */
static bool class_has_other_empty(const struct xrxe_slab_pool *p, const struct xrxe_ring_slab *s)
{
	for (const struct xrxe_ring_slab *t = p->cls[s->cls]; t && t->used < t->nchunks;
	     t = t->next)
		if (t != s && !t->used)
			return true;
	return false;
}

/* Give the pages of a freed chunk back to the system (the application's
 * mapping reads zeros there too, so a later ring starts clean). A chunk
 * smaller than a page shares its page with its neighbours: the page goes once
 * they are all free. Failure only costs memory until the slab goes. */
static void punch_free_span(struct xrxe_slab_pool *p, struct xrxe_ring_slab *s, uint64_t idx)
{
	uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE);
	uint32_t span = s->chunk > page ? s->chunk : page;
	uint32_t per = span / s->chunk; /* chunks in the span: a power of two <= 64 */
	uint64_t first = idx & ~(uint64_t)(per - 1);
	uint64_t bits = per == 64 ? ~0ull : ((1ull << per) - 1) << (first % 64);

	if (p->closing || (s->inuse[first / 64] & bits))
		return;
	if (fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(first * s->chunk), span) < 0)
		p->punch_failures++;
}

int xrxe_slab_free(struct xrxe_slab_pool *p, struct xrxe_ring_slab *s, uint64_t offset,
		   bool *slab_gone)
{
	uint64_t idx;
	bool was_full;

	*slab_gone = false;
	if (offset % s->chunk || offset / s->chunk >= s->nchunks) {
		xrxe_err("ring slab %u: free of offset %#llx, not a chunk start", s->id,
			 (unsigned long long)offset);
		return -EINVAL;
	}
	idx = offset / s->chunk;
	if (!(s->inuse[idx / 64] & (1ull << (idx % 64)))) {
		xrxe_err("ring slab %u: double free of chunk %llu", s->id, (unsigned long long)idx);
		return -EINVAL;
	}
	s->inuse[idx / 64] &= ~(1ull << (idx % 64));
	was_full = s->used == s->nchunks;
	s->used--;
	punch_free_span(p, s, idx);
	if (!s->used && class_has_other_empty(p, s)) {
		slab_release(p, s);
		*slab_gone = true;
		return 0;
	}
	if (was_full) { /* room again: among the partial slabs */
		list_del(p, s);
		list_push_head(p, s);
	}
	return 0;
}

uint32_t xrxe_slab_pool_release(struct xrxe_slab_pool *p)
{
	uint32_t n = 0;

	for (uint32_t c = 0; c < XRXE_SLAB_CLASSES; c++)
		while (p->cls[c]) {
			slab_release(p, p->cls[c]);
			n++;
		}
	return n;
}
