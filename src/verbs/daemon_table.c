// SPDX-License-Identifier: MIT
/*
 * The shim's read-only view of the host's daemon table
 * (include/xrxe/daemon_table.h): which CPUs an xrxe daemon is awake on.
 * cq.c asks it on an empty poll, to yield at once to a daemon whose work the
 * poller may be waiting for.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "xrxe/daemon_table.h"
#include "verbs/shim.h"

static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static const struct xrxe_daemon_table *table;

/* Trust only root's file (the daemons run as root) that no one else can
 * write: anyone else's could only make us yield for nothing, but there is
 * no reason to read it. */
static void map_table(void)
{
	char path[PATH_MAX];
	struct stat st;
	void *map;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", xrxe_run_dir(), XRXE_DAEMON_TABLE_FILE) >=
	    (int)sizeof(path))
		return;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & 022) &&
	    st.st_size >= (off_t)sizeof(struct xrxe_daemon_table)) {
		map = mmap(NULL, sizeof(struct xrxe_daemon_table), PROT_READ, MAP_SHARED, fd, 0);
		if (map != MAP_FAILED)
			table = map;
	}
	close(fd);
}

bool xrxe_daemon_awake_here(void)
{
	struct timespec ts;
	int cpu;

	pthread_once(&table_once, map_table);
	if (!table)
		return false;
	cpu = sched_getcpu();
	/* coarse: a heartbeat is stale after a second, a tick of error is nothing */
	if (cpu < 0 || clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) < 0)
		return false;
	return xrxe_daemon_table_awake_on(table, (unsigned)cpu,
					  (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}
