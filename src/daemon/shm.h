/* SPDX-License-Identifier: MIT */
/*
 * Shared memory between the daemon and applications (abi.h, docs/architecture.md "Shared
 * memory"): memfd-backed rings the daemon creates and passes to the shim, and
 * windows of the application's registered-memory memfd the daemon maps to
 * reach registered buffers without a bounce copy.
 *
 * Everything an application can do to a shared file is assumed hostile: the
 * daemon's own memfds are sealed against resizing (a shrunk file would turn
 * the daemon's next access into SIGBUS), and the application's memfd must
 * carry F_SEAL_SHRINK for the same reason.
 */
#ifndef XRXE_DAEMON_SHM_H
#define XRXE_DAEMON_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xrxe/abi.h"

struct xrxe_ring_slab;

/* A daemon-created shared region: fd (to pass, then close) and the daemon's
 * RW mapping. A ring carved from a slab (ring_slab.h) has slab set: base
 * points into the slab's mapping at offset, and fd is the slab's (not the
 * ring's to close). */
struct xrxe_shm {
	int fd;
	void *base;
	size_t size;
	uint64_t quota_bytes; /* charged to the owner's quota (daemon/quota.h) */
	struct xrxe_ring_slab *slab; /* NULL: a memfd of its own */
	uint64_t offset;             /* within slab */
};

/* A sealed memfd of size bytes (never resized) mapped RW: 0 or -errno
 * (logged); on failure *fd is -1. */
int xrxe_shm_region_create(const char *name, size_t size, int *fd, void **base);
/* nslots a power of two >= 2, elem_size a power of two >= 16. */
bool xrxe_shm_ring_geometry_ok(uint32_t nslots, uint32_t elem_size);
/* Write a fresh ring header at base (zero indices, notify and flags; the
 * geometry): for memory that may hold an old ring. */
void xrxe_shm_ring_init(void *base, uint32_t nslots, uint32_t elem_size);
/* Create a ring memfd named name ("xrxe-cq-7"): nslots (power of two, >= 2)
 * elements of elem_size (power of two, >= 16) bytes, header initialised per
 * abi.h (masked indices 0, notify 0, flags 0), size page-rounded, sealed
 * against shrink/grow. 0 or -errno (logged). */
int xrxe_shm_ring_create(const char *name, uint32_t nslots, uint32_t elem_size,
			 struct xrxe_shm *shm);
/* A sealed memfd holding len bytes of data (the STATS reply); base is NULL
 * (not kept mapped). */
int xrxe_shm_blob_create(const char *name, const void *data, size_t len, struct xrxe_shm *shm);
/* Close the fd once it has been passed; the mapping stays. */
void xrxe_shm_close_fd(struct xrxe_shm *shm);
/* Unmap and close. A zeroed struct with fd -1 is a no-op. */
void xrxe_shm_destroy(struct xrxe_shm *shm);

static inline struct xrxe_ring *xrxe_shm_ring(const struct xrxe_shm *shm)
{
	return (struct xrxe_ring *)shm->base;
}

/* --- Registered memory ----------------------------------------------------- */

/* Highest application address a registration may reach (x86-64 user space). */
#define XRXE_SHM_ADDR_LIMIT (1ull << 47)

/* Check an application's registered-memory memfd (HELLO fd 0): a regular
 * shmem file opened read-write that carries F_SEAL_SHRINK, which is added
 * here when the memfd allows sealing. 0 or -EINVAL (the reason is logged at
 * debug level: it is the application's fault, not the daemon's). */
int xrxe_shm_check_memfd(int fd);

/* The daemon's view of one registered region. */
struct xrxe_mr_map {
	void *base;  /* mapping of [page_floor(addr), page_ceil(addr + len)) */
	size_t size;
	void *host;  /* base + (addr - page_floor(addr)): the byte at addr */
	uint64_t quota_bytes; /* charged to the owner's quota (daemon/quota.h) */
};

/* Map the memfd window behind [addr, addr + length): length > 0, no overflow,
 * addr + length <= XRXE_SHM_ADDR_LIMIT, the file large enough. writable:
 * PROT_WRITE too (the MR grants local or remote write/atomic access).
 * 0, -EINVAL (bad range, file too small), or -errno from mmap (-ENOMEM). */
int xrxe_shm_map_mr(int memfd, uint64_t addr, uint64_t length, int writable,
		    struct xrxe_mr_map *map);
void xrxe_shm_unmap_mr(struct xrxe_mr_map *map);

#endif /* XRXE_DAEMON_SHM_H */
