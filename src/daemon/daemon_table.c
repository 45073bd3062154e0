// SPDX-License-Identifier: MIT
/*
 * The daemon's side of the host daemon table (include/xrxe/daemon_table.h).
 */
#include "daemon/daemon_table.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

struct xrxe_daemon_entry {
	int fd; /* holds the OFD lock on our slot */
	unsigned index;
	struct xrxe_daemon_table *table;
	struct xrxe_daemon_slot *slot;
};

/* Only a file that no one but us can write may tell shims where daemons
 * run: a regular file (O_NOFOLLOW refused symlinks), ours, not group- or
 * world-writable. */
static int check_file(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	if (st.st_size < (off_t)sizeof(struct xrxe_daemon_table) &&
	    ftruncate(fd, sizeof(struct xrxe_daemon_table)) < 0)
		return -errno;
	return 0;
}

/* Every daemon that finds the header unset writes the same values, so two
 * starting at once agree; magic goes last, with release, for readers. */
static void init_header(struct xrxe_daemon_table *t)
{
	if (__atomic_load_n(&t->hdr.magic, __ATOMIC_ACQUIRE) == XRXE_DAEMON_TABLE_MAGIC &&
	    t->hdr.version == XRXE_DAEMON_TABLE_VERSION && t->hdr.nslots == XRXE_DAEMON_SLOTS)
		return;
	t->hdr.version = XRXE_DAEMON_TABLE_VERSION;
	t->hdr.nslots = XRXE_DAEMON_SLOTS;
	__atomic_store_n(&t->hdr.magic, XRXE_DAEMON_TABLE_MAGIC, __ATOMIC_RELEASE);
}

/* The first slot no live daemon holds: its OFD write lock is ours until
 * close (or death). */
static int claim_slot(int fd)
{
	for (unsigned i = 0; i < XRXE_DAEMON_SLOTS; i++) {
		struct flock fl = {
			.l_type = F_WRLCK,
			.l_whence = SEEK_SET,
			.l_start = (off_t)xrxe_daemon_slot_offset(i),
			.l_len = sizeof(struct xrxe_daemon_slot),
		};

		if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
			return (int)i;
		if (errno != EAGAIN && errno != EACCES)
			return -errno;
	}
	return -ENOSPC;
}

static void raise_used(struct xrxe_daemon_table *t, unsigned index)
{
	uint32_t used = __atomic_load_n(&t->hdr.used, __ATOMIC_RELAXED);

	while (used <= index &&
	       !__atomic_compare_exchange_n(&t->hdr.used, &used, index + 1, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

int xrxe_daemon_entry_open(const char *dir, struct xrxe_daemon_entry **out)
{
	char path[PATH_MAX];
	struct xrxe_daemon_entry *e;
	void *map;
	int fd, ret;

	if (snprintf(path, sizeof(path), "%s/%s", dir, XRXE_DAEMON_TABLE_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = check_file(fd);
	if (ret)
		goto err_close;
	map = mmap(NULL, sizeof(struct xrxe_daemon_table), PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_close;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		ret = -ENOMEM;
		goto err_unmap;
	}
	ret = claim_slot(fd);
	if (ret < 0)
		goto err_free;
	e->fd = fd;
	e->index = (unsigned)ret;
	e->table = map;
	e->slot = &e->table->slot[e->index];
	init_header(e->table);
	/* A dead owner's values: not ours. Inert until the loop publishes. */
	__atomic_store_n(&e->slot->cpu, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->slot->sleeping, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->slot->heartbeat_ns, 0, __ATOMIC_RELAXED);
	raise_used(e->table, e->index);
	*out = e;
	return 0;

err_free:
	free(e);
err_unmap:
	munmap(map, sizeof(struct xrxe_daemon_table));
err_close:
	close(fd);
	return ret;
}

void xrxe_daemon_entry_close(struct xrxe_daemon_entry *e)
{
	if (!e)
		return;
	__atomic_store_n(&e->slot->cpu, 0, __ATOMIC_RELAXED);
	munmap(e->table, sizeof(struct xrxe_daemon_table));
	close(e->fd); /* drops the lock: the slot is free */
	free(e);
}

unsigned xrxe_daemon_entry_index(const struct xrxe_daemon_entry *e)
{
	return e->index;
}

void xrxe_daemon_entry_set_cpu(struct xrxe_daemon_entry *e, int cpu)
{
	if (e && cpu >= 0)
		__atomic_store_n(&e->slot->cpu, (uint32_t)cpu + 1, __ATOMIC_RELAXED);
}

void xrxe_daemon_entry_set_sleeping(struct xrxe_daemon_entry *e, bool sleeping, uint64_t now)
{
	if (!e)
		return;
	if (!sleeping)
		__atomic_store_n(&e->slot->heartbeat_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&e->slot->sleeping, sleeping, __ATOMIC_RELAXED);
}

void xrxe_daemon_entry_heartbeat(struct xrxe_daemon_entry *e, uint64_t now)
{
	if (e)
		__atomic_store_n(&e->slot->heartbeat_ns, now, __ATOMIC_RELAXED);
}
