// SPDX-License-Identifier: MIT
#include "daemon/shm.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "util/log.h"

static size_t page_size(void)
{
	static size_t ps;

	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* A memfd of size bytes that nobody can resize any more: a ring's user maps
 * it, and a file shrunk under the daemon's mapping would SIGBUS the daemon. */
static int sealed_memfd(const char *name, size_t size, int *out)
{
	int fd, err;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		err = -errno;
		xrxe_err("memfd_create %s: %s", name, strerror(errno));
		return err;
	}
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err = -errno;
		xrxe_err("memfd %s (%zu bytes): %s", name, size, strerror(errno));
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

int xrxe_shm_region_create(const char *name, size_t size, int *fd, void **base)
{
	void *p;
	int err;

	err = sealed_memfd(name, size, fd);
	if (err)
		return err;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		xrxe_err("mmap %s (%zu bytes): %s", name, size, strerror(errno));
		close(*fd);
		*fd = -1;
		return err;
	}
	*base = p;
	return 0;
}

bool xrxe_shm_ring_geometry_ok(uint32_t nslots, uint32_t elem_size)
{
	return nslots >= 2 && is_pow2(nslots) && elem_size >= 16 && is_pow2(elem_size);
}

void xrxe_shm_ring_init(void *base, uint32_t nslots, uint32_t elem_size)
{
	struct xrxe_ring *ring = base;

	/* Indices, notify and flags start at 0: a fresh memfd reads as zeros,
	 * but a reused slab chunk holds whatever its last ring (or the
	 * application) left there. The shim maps the ring after it gets the
	 * reply, which is sent after these stores. */
	memset(ring, 0, sizeof(*ring));
	ring->log2_elem_size = (uint32_t)__builtin_ctz(elem_size);
	ring->index_mask = nslots - 1;
}

int xrxe_shm_ring_create(const char *name, uint32_t nslots, uint32_t elem_size,
			 struct xrxe_shm *shm)
{
	size_t size;
	void *base;
	int fd = -1, err;

	*shm = (struct xrxe_shm){ .fd = -1 };
	if (!xrxe_shm_ring_geometry_ok(nslots, elem_size))
		return -EINVAL;
	size = xrxe_ring_bytes(nslots, elem_size);
	size = (size + page_size() - 1) & ~(page_size() - 1);
	err = xrxe_shm_region_create(name, size, &fd, &base);
	if (err)
		return err;
	xrxe_shm_ring_init(base, nslots, elem_size);
	*shm = (struct xrxe_shm){ .fd = fd, .base = base, .size = size };
	return 0;
}

int xrxe_shm_blob_create(const char *name, const void *data, size_t len, struct xrxe_shm *shm)
{
	const char *p = data;
	size_t left = len;
	int fd, err;

	*shm = (struct xrxe_shm){ .fd = -1 };
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		err = -errno;
		xrxe_err("memfd_create %s: %s", name, strerror(errno));
		return err;
	}
	while (left) {
		ssize_t n = write(fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			xrxe_err("memfd %s: write: %s", name, strerror(-err));
			close(fd);
			return err;
		}
		p += n;
		left -= (size_t)n;
	}
	/* The reader gets a read-only snapshot: nothing it can change reaches us
	 * (we do not map it), but sealing makes the contract obvious. */
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	*shm = (struct xrxe_shm){ .fd = fd, .base = NULL, .size = len };
	return 0;
}

void xrxe_shm_close_fd(struct xrxe_shm *shm)
{
	if (shm->fd >= 0)
		close(shm->fd);
	shm->fd = -1;
}

void xrxe_shm_destroy(struct xrxe_shm *shm)
{
	if (shm->base)
		munmap(shm->base, shm->size);
	xrxe_shm_close_fd(shm);
	shm->base = NULL;
	shm->size = 0;
}

int xrxe_shm_check_memfd(int fd)
{
	struct statfs sfs;
	struct stat st;
	int seals, fl;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		xrxe_dbg("registered-memory fd: not a regular file");
		return -EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) != O_RDWR) {
		xrxe_dbg("registered-memory fd: not open read-write");
		return -EINVAL;
	}
	/* F_GET_SEALS works on shmem (memfd) and hugetlbfs files only: a plain
	 * file on disk would have its pages written back, and could be
	 * truncated by anyone with access to its path. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0) {
		xrxe_dbg("registered-memory fd: not a memfd");
		return -EINVAL;
	}
	/* Only shmem (tmpfs) memfds: a hugetlbfs memfd (MFD_HUGETLB) passes
	 * the checks above, but a hole punched in it, or an exhausted huge
	 * page pool, turns the daemon's next access into SIGBUS -- pages that
	 * can vanish. A hole punched in shmem reads back as zeros instead. */
	if (fstatfs(fd, &sfs) < 0 || sfs.f_type != TMPFS_MAGIC) {
		xrxe_dbg("registered-memory fd: not a shmem memfd (hugetlbfs or other: refused)");
		return -EINVAL;
	}
	/* A file that shrinks under our mapping SIGBUSes the daemon on its next
	 * access: seal it ourselves when the creator allowed sealing. */
	if (!(seals & F_SEAL_SHRINK) && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		xrxe_dbg("registered-memory fd: F_SEAL_SHRINK missing and cannot be added (%s)",
			 strerror(errno));
		return -EINVAL;
	}
	return 0;
}

int xrxe_shm_map_mr(int memfd, uint64_t addr, uint64_t length, int writable,
		    struct xrxe_mr_map *map)
{
	uint64_t ps = page_size(), first, end;
	struct stat st;
	void *base;

	*map = (struct xrxe_mr_map){ 0 };
	if (!length || addr >= XRXE_SHM_ADDR_LIMIT || length > XRXE_SHM_ADDR_LIMIT - addr)
		return -EINVAL;
	first = addr & ~(ps - 1);
	end = (addr + length + ps - 1) & ~(ps - 1); /* <= 2^47: no overflow */
	if (fstat(memfd, &st) < 0)
		return -errno;
	/* F_SEAL_SHRINK (checked at HELLO) keeps the size from dropping below
	 * what we check here. */
	if (st.st_size < 0 || (uint64_t)st.st_size < end)
		return -EINVAL;
	base = mmap(NULL, end - first, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, memfd,
		    (off_t)first);
	if (base == MAP_FAILED)
		return -errno;
	*map = (struct xrxe_mr_map){
		.base = base,
		.size = end - first,
		.host = (uint8_t *)base + (addr - first),
	};
	return 0;
}

void xrxe_shm_unmap_mr(struct xrxe_mr_map *map)
{
	if (map->base)
		munmap(map->base, map->size);
	*map = (struct xrxe_mr_map){ 0 };
}
