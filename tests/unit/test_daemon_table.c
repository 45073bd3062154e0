// SPDX-License-Identifier: MIT
/*
 * The host's daemon table (include/xrxe/daemon_table.h,
 * src/daemon/daemon_table.c): each daemon gets a slot of its own, held by an
 * OFD lock and free again when it closes; a shim-side reader sees a daemon
 * awake on a CPU only while it is awake, on that CPU and not stale; and the
 * hostile cases: a file others can write, or a symlink, is refused, and a
 * corrupt header does not take the reader outside the table.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon_table.h"

static char dir[64];
static char path[128];

static void make_dir(void)
{
	strcpy(dir, "/tmp/xrxe-dtable-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, XRXE_DAEMON_TABLE_FILE);
}

static void remove_dir(void)
{
	unlink(path);
	rmdir(dir);
}

/* What a shim maps: the file, read-only. */
static const struct xrxe_daemon_table *reader_map(void)
{
	int fd = open(path, O_RDONLY);
	void *m;

	cr_assert_geq(fd, 0);
	m = mmap(NULL, sizeof(struct xrxe_daemon_table), PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(m, MAP_FAILED);
	close(fd);
	return m;
}

TestSuite(daemon_table, .init = make_dir, .fini = remove_dir);

Test(daemon_table, each_daemon_gets_its_own_slot_and_a_closed_one_is_reused)
{
	struct xrxe_daemon_entry *a, *b, *c;
	const struct xrxe_daemon_table *t;
	struct stat st;

	cr_assert_eq(xrxe_daemon_entry_open(dir, &a), 0);
	cr_assert_eq(xrxe_daemon_entry_open(dir, &b), 0);
	cr_assert_eq(xrxe_daemon_entry_index(a), 0);
	cr_assert_eq(xrxe_daemon_entry_index(b), 1, "an open slot is locked: the next one");
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0644, "mode %o", st.st_mode & 0777);
	t = reader_map();
	cr_assert_eq(t->hdr.magic, XRXE_DAEMON_TABLE_MAGIC);
	cr_assert_eq(t->hdr.nslots, XRXE_DAEMON_SLOTS);
	cr_assert_eq(t->hdr.used, 2);

	xrxe_daemon_entry_set_cpu(a, 5);
	xrxe_daemon_entry_close(a);
	cr_assert_eq(t->slot[0].cpu, 0, "a closed slot is inert");
	cr_assert_eq(xrxe_daemon_entry_open(dir, &c), 0);
	cr_assert_eq(xrxe_daemon_entry_index(c), 0, "the closed daemon's slot is free again");
	cr_assert_eq(t->hdr.used, 2);
	xrxe_daemon_entry_close(b);
	xrxe_daemon_entry_close(c);
	munmap((void *)t, sizeof(*t));
}

Test(daemon_table, awake_only_while_awake_on_that_cpu_and_fresh)
{
	struct xrxe_daemon_entry *a;
	const struct xrxe_daemon_table *t;
	const uint64_t now = 5000000000ull;

	cr_assert_eq(xrxe_daemon_entry_open(dir, &a), 0);
	t = reader_map();
	cr_assert_not(xrxe_daemon_table_awake_on(t, 3, now), "no CPU published yet");
	xrxe_daemon_entry_set_cpu(a, 3);
	xrxe_daemon_entry_set_sleeping(a, false, now);
	cr_assert(xrxe_daemon_table_awake_on(t, 3, now));
	cr_assert(xrxe_daemon_table_awake_on(t, 3, now - 4000000),
		  "a coarse clock a tick behind the heartbeat still sees it");
	cr_assert_not(xrxe_daemon_table_awake_on(t, 2, now), "another CPU");
	cr_assert_not(xrxe_daemon_table_awake_on(t, 3, now + XRXE_DAEMON_STALE_NS),
		      "a heartbeat a second old is a dead daemon's");
	xrxe_daemon_entry_heartbeat(a, now + XRXE_DAEMON_STALE_NS);
	cr_assert(xrxe_daemon_table_awake_on(t, 3, now + XRXE_DAEMON_STALE_NS));
	xrxe_daemon_entry_set_sleeping(a, true, now);
	cr_assert_not(xrxe_daemon_table_awake_on(t, 3, now), "asleep in epoll: not runnable");
	xrxe_daemon_entry_set_cpu(a, 1);
	xrxe_daemon_entry_set_sleeping(a, false, now);
	cr_assert_not(xrxe_daemon_table_awake_on(t, 3, now), "it moved");
	cr_assert(xrxe_daemon_table_awake_on(t, 1, now));
	xrxe_daemon_entry_close(a);
	cr_assert_not(xrxe_daemon_table_awake_on(t, 1, now), "closed");
	munmap((void *)t, sizeof(*t));
}

Test(daemon_table, a_file_others_can_write_or_a_symlink_is_refused)
{
	struct xrxe_daemon_entry *a;
	char target[160];
	int fd;

	fd = open(path, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fchmod(fd, 0666), 0);
	close(fd);
	cr_assert_eq(xrxe_daemon_entry_open(dir, &a), -EPERM, "world-writable");
	cr_assert_eq(chmod(path, 0664), 0);
	cr_assert_eq(xrxe_daemon_entry_open(dir, &a), -EPERM, "group-writable");
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	cr_assert_eq(rename(path, target), 0);
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_eq(xrxe_daemon_entry_open(dir, &a), -ELOOP, "a symlink is not followed");
	unlink(target);
}

Test(daemon_table, a_corrupt_used_count_keeps_the_reader_inside)
{
	struct xrxe_daemon_entry *a;
	struct xrxe_daemon_table *w;
	int fd;

	cr_assert_eq(xrxe_daemon_entry_open(dir, &a), 0);
	fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	w = mmap(NULL, sizeof(*w), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(w, MAP_FAILED);
	close(fd);
	w->hdr.used = 0xffffffffu;
	cr_assert_not(xrxe_daemon_table_awake_on(w, 7, 1), "every slot scanned, none awake");
	w->hdr.magic = 0;
	xrxe_daemon_entry_set_cpu(a, 7);
	xrxe_daemon_entry_set_sleeping(a, false, 1);
	cr_assert_not(xrxe_daemon_table_awake_on(w, 7, 1), "no magic: not a table");
	munmap(w, sizeof(*w));
	xrxe_daemon_entry_close(a);
}
