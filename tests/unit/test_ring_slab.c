// SPDX-License-Identifier: MIT
/*
 * The daemon's ring slabs (src/daemon/ring_slab.c): rings carved from shared
 * 2 MiB memfds per connection. Chunks never overlap and stay inside their
 * slab, freed space is reused before a new slab is made, 65 536 QPs' rings fit
 * in a few dozen slabs and all go when freed; and the hostile cases: a double
 * free or a wild offset is refused without changing anything, exhaustion
 * fails cleanly, and a ring header the application corrupts neither moves
 * the daemon's slot addresses out of the ring nor survives into the next
 * ring carved from the same chunk.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/ring_slab.h"
#include "daemon/shm.h"
#include "xrxe/ring.h"

/* Mappings of this process (/proc/self/maps lines). */
static unsigned maps_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned n = 0;
	int ch;

	cr_assert_not_null(f);
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

static struct xrxe_slab_chunk carve(struct xrxe_slab_pool *p, size_t bytes, bool *new_slab)
{
	struct xrxe_slab_chunk ch;
	bool ns;

	cr_assert_eq(xrxe_slab_alloc(p, bytes, &ch, new_slab ? new_slab : &ns), 0,
		     "carve %zu bytes", bytes);
	return ch;
}

static void give_back(struct xrxe_slab_pool *p, const struct xrxe_slab_chunk *ch)
{
	bool gone;

	cr_assert_eq(xrxe_slab_free(p, ch->slab, ch->offset, &gone), 0);
}

Test(ring_slab, chunks_disjoint_inside_the_slab_and_rounded_to_their_class)
{
	struct xrxe_slab_pool p = { 0 };
	static const size_t sizes[] = { 416, 512, 513, 896, 2432, 4096, 5000, 65536 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct xrxe_slab_chunk a = carve(&p, sizes[i], NULL);
		struct xrxe_slab_chunk b = carve(&p, sizes[i], NULL);

		cr_assert((a.slab->chunk >= sizes[i] && a.slab->chunk / 2 < sizes[i]) ||
				  a.slab->chunk == XRXE_SLAB_MIN_CHUNK,
			  "%zu bytes in a %u-byte chunk", sizes[i], a.slab->chunk);
		cr_assert_eq(a.offset % a.slab->chunk, 0);
		cr_assert_eq(a.offset % 128, 0, "ring header lines stay aligned");
		cr_assert_leq(a.offset + a.slab->chunk, XRXE_SLAB_BYTES);
		cr_assert_eq(a.ptr, a.slab->base + a.offset);
		cr_assert(a.slab != b.slab || a.offset != b.offset, "two rings, one chunk");
		/* both writable through the daemon's mapping */
		memset(a.ptr, 0xa5, sizes[i]);
		memset(b.ptr, 0x5a, sizes[i]);
		cr_assert_eq(((uint8_t *)a.ptr)[sizes[i] - 1], 0xa5);
	}
	/* classes 512 (416, 512), 1 Ki (513, 896), 4 Ki (2432, 4096), 8 Ki, 64 Ki */
	cr_assert_eq(p.nslabs, 5, "one slab per class used");
	bool ns;
	struct xrxe_slab_chunk big;

	cr_assert_eq(xrxe_slab_alloc(&p, XRXE_SLAB_MAX_CHUNK + 1, &big, &ns), -EINVAL,
		     "larger rings get a memfd of their own, not a slab chunk");
	cr_assert_eq(xrxe_slab_alloc(&p, 0, &big, &ns), -EINVAL);
	cr_assert_eq(xrxe_slab_pool_release(&p), 5);
	cr_assert_eq(p.nslabs, 0);
}

Test(ring_slab, freed_space_is_reused_before_a_new_slab)
{
	struct xrxe_slab_pool p = { 0 };
	uint32_t per = XRXE_SLAB_BYTES / 1024;
	struct xrxe_slab_chunk *c = calloc(per, sizeof(*c)), extra, again;
	bool ns;

	for (uint32_t i = 0; i < per; i++) {
		c[i] = carve(&p, 1024, &ns);
		cr_assert_eq(ns, i == 0, "only the first ring makes a slab");
	}
	extra = carve(&p, 1024, &ns);
	cr_assert(ns, "a full slab: the next ring makes another");
	cr_assert_neq(extra.slab, c[0].slab);
	give_back(&p, &c[per / 2]);
	again = carve(&p, 1024, &ns);
	cr_assert(!ns);
	cr_assert_eq(again.slab, c[0].slab, "the freed chunk's slab has room again");
	cr_assert_eq(again.offset, c[per / 2].offset, "and the freed chunk is the one reused");
	cr_assert_eq(p.nslabs, 2);
	xrxe_slab_pool_release(&p);
	free(c);
}

Test(ring_slab, double_free_and_wild_offsets_refused_without_change)
{
	struct xrxe_slab_pool p = { 0 };
	struct xrxe_slab_chunk a = carve(&p, 2048, NULL), b = carve(&p, 2048, NULL);
	uint32_t used = a.slab->used;
	bool gone;

	give_back(&p, &a);
	cr_assert_eq(a.slab->used, used - 1);
	cr_assert_eq(xrxe_slab_free(&p, a.slab, a.offset, &gone), -EINVAL, "double free");
	cr_assert(!gone);
	cr_assert_eq(a.slab->used, used - 1, "a double free changes nothing");
	cr_assert_eq(xrxe_slab_free(&p, b.slab, b.offset + 128, &gone), -EINVAL, "not a chunk start");
	cr_assert_eq(xrxe_slab_free(&p, b.slab, XRXE_SLAB_BYTES, &gone), -EINVAL, "past the slab");
	cr_assert_eq(xrxe_slab_free(&p, b.slab, UINT64_MAX - 2047, &gone), -EINVAL, "wrapping");
	cr_assert_eq(b.slab->used, used - 1);
	/* the live ring is still there and still freeable once */
	give_back(&p, &b);
	cr_assert_eq(xrxe_slab_free(&p, b.slab, b.offset, &gone), -EINVAL);
	xrxe_slab_pool_release(&p);
}

Test(ring_slab, exhaustion_fails_cleanly)
{
	struct xrxe_slab_pool p = { 0 };
	uint32_t per = XRXE_SLAB_BYTES / XRXE_SLAB_MAX_CHUNK;
	struct xrxe_slab_chunk ch;
	bool ns;

	for (uint32_t i = 0; i < per; i++)
		carve(&p, XRXE_SLAB_MAX_CHUNK, NULL);
	/* slab numbers are never reused: once they run out, no new slab */
	p.next_id = UINT32_MAX;
	cr_assert_eq(xrxe_slab_alloc(&p, XRXE_SLAB_MAX_CHUNK, &ch, &ns), -ENOSPC);
	cr_assert_eq(p.nslabs, 1, "nothing half-made");
	/* other classes with room, or none: the same answer, no crash */
	cr_assert_eq(xrxe_slab_alloc(&p, 512, &ch, &ns), -ENOSPC);
	cr_assert_eq(xrxe_slab_pool_release(&p), 1);
}

Test(ring_slab, a_corrupted_header_stays_in_its_ring_and_dies_with_it)
{
	struct xrxe_slab_pool p = { 0 };
	const uint32_t nslots = 4, elem = 128, mask = nslots - 1, log2 = 7;
	size_t bytes = xrxe_ring_bytes(nslots, elem);
	struct xrxe_slab_chunk a = carve(&p, bytes, NULL), n = carve(&p, bytes, NULL), again;
	struct xrxe_ring *r = a.ptr;
	uint8_t *lo = a.ptr, *hi = lo + a.slab->chunk;

	xrxe_shm_ring_init(r, nslots, elem);
	xrxe_shm_ring_init(n.ptr, nslots, elem);
	memset(((struct xrxe_ring *)n.ptr)->data, 0x77, (size_t)nslots * elem);
	/* the application writes whatever it likes into its header */
	r->index_mask = 0xffffffff;
	r->log2_elem_size = 31;
	r->notify = 0xdeadbeef;
	r->flags = 0xffffffff;
	for (uint32_t v = 0; v < 64; v++) {
		uint32_t hostile = v * 0x9e3779b9u;
		uint32_t idx;
		uint8_t *slot;

		__atomic_store_n(&r->producer, hostile, __ATOMIC_RELEASE);
		__atomic_store_n(&r->consumer, ~hostile, __ATOMIC_RELEASE);
		/* the daemon reads with its own mask and element size (ring.h) */
		idx = xrxe_ring_load_producer(r, mask);
		slot = xrxe_ring_slot(r, idx, mask, log2);
		cr_assert(slot >= r->data && slot + elem <= hi && slot >= lo,
			  "producer %#x: slot outside the ring", hostile);
		idx = xrxe_ring_load_consumer(r, mask);
		slot = xrxe_ring_slot(r, idx, mask, log2);
		cr_assert(slot + elem <= hi, "consumer %#x: slot outside the ring", ~hostile);
	}
	/* the neighbouring ring in the same slab is untouched */
	cr_assert_eq(((struct xrxe_ring *)n.ptr)->index_mask, mask);
	cr_assert_eq(((struct xrxe_ring *)n.ptr)->data[0], 0x77);
	/* the next ring carved from that chunk starts clean */
	give_back(&p, &a);
	again = carve(&p, bytes, NULL);
	cr_assert_eq(again.ptr, a.ptr, "the chunk is reused");
	xrxe_shm_ring_init(again.ptr, nslots, elem);
	r = again.ptr;
	cr_assert_eq(r->index_mask, mask);
	cr_assert_eq(r->log2_elem_size, log2);
	cr_assert_eq(r->notify, 0);
	cr_assert_eq(r->flags, 0);
	cr_assert_eq(r->producer, 0);
	cr_assert_eq(r->consumer, 0);
	xrxe_slab_pool_release(&p);
}

Test(ring_slab, a_freed_page_sized_chunk_returns_its_memory_as_zeros)
{
	struct xrxe_slab_pool p = { 0 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct xrxe_slab_chunk a = carve(&p, page, NULL), keep = carve(&p, page, NULL), again;

	memset(a.ptr, 0xee, page);
	give_back(&p, &a);
	cr_assert_eq(p.punch_failures, 0);
	again = carve(&p, page, NULL);
	cr_assert_eq(again.ptr, a.ptr);
	for (size_t i = 0; i < page; i++)
		cr_assert_eq(((uint8_t *)again.ptr)[i], 0, "byte %zu of a freed chunk kept", i);
	(void)keep;
	xrxe_slab_pool_release(&p);
}

/* 65 536 QPs as tests/verbs/rc_scale.c makes them (SQ 4 x 128 B, RQ 2 x 32 B)
 * plus one CQ: a few dozen slabs, not 131 073 mappings; all go once freed
 * (but the one empty slab each class keeps in reserve). */
Test(ring_slab, sixty_five_thousand_qps_in_a_few_dozen_mappings)
{
	struct xrxe_slab_pool p = { 0 };
	const uint32_t nqp = 65536;
	size_t sq = xrxe_ring_bytes(4, 128), rq = xrxe_ring_bytes(2, 32);
	struct xrxe_slab_chunk *c = calloc(2 * (size_t)nqp, sizeof(*c)), cq;
	unsigned maps0 = maps_count(), maps1;

	cr_assert_not_null(c);
	cq = carve(&p, xrxe_ring_bytes(256, 64), NULL);
	for (uint32_t i = 0; i < nqp; i++) {
		c[2 * i] = carve(&p, sq, NULL);
		c[2 * i + 1] = carve(&p, rq, NULL);
	}
	maps1 = maps_count();
	cr_assert_leq(p.nslabs, 100, "%u slabs for %u QPs", p.nslabs, nqp);
	cr_assert_leq(maps1 - maps0, p.nslabs + 2, "%u mappings for %u slabs", maps1 - maps0,
		      p.nslabs);
	for (uint32_t i = 0; i < 2 * nqp; i++)
		give_back(&p, &c[i]);
	give_back(&p, &cq);
	cr_assert_leq(p.nslabs, 3, "%u slabs left with every ring freed", p.nslabs);
	cr_assert_leq(maps_count(), maps0 + 3);
	xrxe_slab_pool_release(&p);
	cr_assert_eq(p.nslabs, 0);
	free(c);
}
