/* SPDX-License-Identifier: MIT */
/*
 * Ring slabs: the small rings of one control connection (QP, CQ and SRQ
 * rings) carved from a few large shared memfds instead of one memfd and one
 * mapping each (issue 16: 65 536 QPs are 131 072 rings, and the kernel's
 * default vm.max_map_count is 65 530 mappings per process).
 *
 * A pool belongs to one connection, so a slab is only ever shared between the
 * daemon and that connection's application: no two applications see each
 * other's rings. Each slab holds chunks of one size class (a power of two
 * from XRXE_SLAB_MIN_CHUNK to XRXE_SLAB_MAX_CHUNK); a ring takes the smallest
 * class that holds it, and anything larger gets its own memfd (shm.c) as
 * before. Slabs are numbered per pool from 1, never reused, so the shim can
 * tell a new slab from one it has mapped (abi.h struct xrxe_ring_loc).
 *
 * Freed space is reused: a freed chunk of a page or more is punched out of
 * the file (its memory returns to the system and it reads as zeros again),
 * and a slab whose last chunk is freed is unmapped and closed, except the one
 * slab a class keeps in reserve so that create/destroy loops do not create a
 * memfd each time.
 *
 * Nothing here trusts the slab's contents: the application writes into them
 * freely. The allocator's bookkeeping (bitmaps, lists) lives in the daemon's
 * private memory, and a ring is (re)initialised by the caller when carved.
 */
#ifndef XRXE_DAEMON_RING_SLAB_H
#define XRXE_DAEMON_RING_SLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XRXE_SLAB_BYTES (2u << 20)       /* one slab: 2 MiB of memfd */
#define XRXE_SLAB_MIN_CHUNK 512u         /* smallest class (a ring of 2 x 16 B is 416 B) */
#define XRXE_SLAB_MAX_CHUNK (64u << 10)  /* larger rings: a memfd of their own */
#define XRXE_SLAB_CLASSES 8              /* 512 B .. 64 KiB */
#define XRXE_SLAB_MAX_CHUNKS (XRXE_SLAB_BYTES / XRXE_SLAB_MIN_CHUNK)

struct xrxe_ring_slab {
	struct xrxe_ring_slab *next, *prev; /* the pool's list of its class: partial slabs first */
	int fd;           /* kept open: passed with every ring carved from it */
	uint8_t *base;    /* the daemon's mapping, XRXE_SLAB_BYTES */
	uint32_t id;      /* >= 1, unique within the pool */
	uint32_t cls;     /* size class */
	uint32_t chunk;   /* bytes per chunk */
	uint32_t nchunks;
	uint32_t used;
	uint32_t hint;    /* bitmap word to start the next search at */
	uint64_t inuse[XRXE_SLAB_MAX_CHUNKS / 64]; /* bit set: chunk carved */
};

struct xrxe_slab_pool {
	struct xrxe_ring_slab *cls[XRXE_SLAB_CLASSES]; /* partial slabs before full ones */
	uint32_t nslabs;  /* live slabs (each one mapping in the daemon) */
	uint32_t next_id;
	uint64_t punch_failures; /* fallocate refused a hole: memory kept until the slab goes */
	bool closing; /* connection teardown: freed chunks are not punched (the slabs go) */
};

/* A carved ring: where it lives and what the application maps. */
struct xrxe_slab_chunk {
	struct xrxe_ring_slab *slab;
	uint64_t offset; /* within the slab */
	void *ptr;       /* slab->base + offset, in the daemon */
};

/* bytes fits a slab: 0 < bytes <= XRXE_SLAB_MAX_CHUNK. */
bool xrxe_slab_fits(size_t bytes);

/* Carve bytes (xrxe_slab_fits) from the pool, creating a slab when every slab
 * of the class is full. *new_slab: a slab was created (one more mapping).
 * 0, -EINVAL (does not fit) or -errno from memfd/mmap (logged). */
int xrxe_slab_alloc(struct xrxe_slab_pool *p, size_t bytes, struct xrxe_slab_chunk *out,
		    bool *new_slab);

/* Give a chunk back. *slab_gone: the slab was unmapped and closed (one
 * mapping fewer). -EINVAL, and nothing changed, for an offset that is not the
 * start of a carved chunk of slab (a double free or a wild offset: a bug in
 * the caller, logged). */
int xrxe_slab_free(struct xrxe_slab_pool *p, struct xrxe_ring_slab *slab, uint64_t offset,
		   bool *slab_gone);

/* Unmap and close every slab (connection teardown; the chunks need not have
 * been freed). Returns the number of slabs released. */
uint32_t xrxe_slab_pool_release(struct xrxe_slab_pool *p);

#endif /* XRXE_DAEMON_RING_SLAB_H */
