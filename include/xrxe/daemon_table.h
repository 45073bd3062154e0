/* SPDX-License-Identifier: MIT */
/*
 * The host's daemon table: XRXE_RUN_DIR/daemons, one small file shared by
 * every xrxed of the host (read-write, each in its own slot) and every shim
 * (read-only). It answers one question for a shim whose application polls an
 * empty CQ: is some xrxe daemon runnable on the CPU I am spinning on?
 *
 * Why a host table and not only the device page's daemon_cpu: an application
 * waits for its completion on more than its own daemon. A requester's
 * completion needs the responder's ACK; when the responder's daemon runs on
 * the requester's CPU (another application's device, or the peer's daemon in
 * a one-host benchmark), every empty poll there delays the ACK being waited
 * for (docs/performance.md, "Why five runs differ"). The device page only
 * names the application's own daemon.
 *
 * Layout: a 64-byte header, then XRXE_DAEMON_SLOTS slots of one cache line
 * each, so that daemons on different CPUs never write the same line. A daemon
 * owns a slot while it holds an open-file-description lock (F_OFD_SETLK) on
 * the slot's bytes: the kernel drops it when the daemon dies, and the next
 * daemon reclaims the slot. A slot's fields are hints written with relaxed
 * stores; a reader that sees a torn or stale slot yields once too often or
 * too few times, nothing else. The file is root's, mode 0644 (a shim cannot
 * write it), and everything read from it is bounds-checked.
 */
#ifndef XRXE_DAEMON_TABLE_H
#define XRXE_DAEMON_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#define XRXE_DAEMON_TABLE_FILE "daemons" /* in XRXE_RUN_DIR */
#define XRXE_DAEMON_TABLE_MAGIC 0x78727864u /* "xrxd" */
#define XRXE_DAEMON_TABLE_VERSION 1u
#define XRXE_DAEMON_SLOTS 256u
/* A slot whose heartbeat is older than this is a daemon that died without
 * clearing it (its lock is gone, its slot not reclaimed yet): ignored. A
 * live daemon refreshes it at least every millisecond while awake. */
#define XRXE_DAEMON_STALE_NS 1000000000ull

struct xrxe_daemon_table_hdr {
	uint32_t magic;   /* written last when the file is initialised */
	uint32_t version;
	uint32_t nslots;  /* XRXE_DAEMON_SLOTS */
	uint32_t used;    /* one past the highest slot ever claimed: readers scan [0, used) */
	uint8_t pad[48];
};

struct xrxe_daemon_slot {
	uint32_t cpu;        /* the CPU its loop last ran on, plus one; 0: slot inert */
	uint32_t sleeping;   /* 1 while it blocks in epoll_wait (abi.h daemon_sleeping) */
	uint64_t heartbeat_ns; /* CLOCK_MONOTONIC of its last refresh while awake */
	uint8_t pad[48];
};

struct xrxe_daemon_table {
	struct xrxe_daemon_table_hdr hdr;
	struct xrxe_daemon_slot slot[XRXE_DAEMON_SLOTS];
};

_Static_assert(sizeof(struct xrxe_daemon_table_hdr) == 64, "header: one cache line");
_Static_assert(sizeof(struct xrxe_daemon_slot) == 64, "slot: one cache line");

/* Byte range of slot i in the file (what its owner locks). */
static inline uint64_t xrxe_daemon_slot_offset(unsigned i)
{
	return sizeof(struct xrxe_daemon_table_hdr) + (uint64_t)i * sizeof(struct xrxe_daemon_slot);
}

/* Is a daemon awake (not blocked in epoll) and last seen on cpu, as of now
 * (CLOCK_MONOTONIC or its coarse variant, ns)? Then it is running or
 * runnable there: a task spinning on cpu delays it. */
static inline bool xrxe_daemon_table_awake_on(const struct xrxe_daemon_table *t, unsigned cpu,
					      uint64_t now)
{
	uint32_t used = __atomic_load_n(&t->hdr.used, __ATOMIC_RELAXED);

	if (__atomic_load_n(&t->hdr.magic, __ATOMIC_ACQUIRE) != XRXE_DAEMON_TABLE_MAGIC)
		return false;
	if (used > XRXE_DAEMON_SLOTS)
		used = XRXE_DAEMON_SLOTS;
	for (uint32_t i = 0; i < used; i++) {
		const struct xrxe_daemon_slot *s = &t->slot[i];

		if (__atomic_load_n(&s->cpu, __ATOMIC_RELAXED) != cpu + 1 ||
		    __atomic_load_n(&s->sleeping, __ATOMIC_RELAXED))
			continue;
		/* signed: a coarse clock may read behind the heartbeat */
		if ((int64_t)(now - __atomic_load_n(&s->heartbeat_ns, __ATOMIC_RELAXED)) <
		    (int64_t)XRXE_DAEMON_STALE_NS)
			return true;
	}
	return false;
}

#endif /* XRXE_DAEMON_TABLE_H */
