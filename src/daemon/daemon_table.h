/* SPDX-License-Identifier: MIT */
/*
 * This daemon's slot in the host's daemon table (include/xrxe/daemon_table.h):
 * where shims learn that an xrxe daemon is awake on the CPU they spin on.
 * Everything here is a hint; a daemon that cannot open the table runs as
 * before (warned once), and a NULL entry makes every setter a no-op.
 */
#ifndef XRXE_DAEMON_DAEMON_TABLE_H
#define XRXE_DAEMON_DAEMON_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "xrxe/daemon_table.h"

struct xrxe_daemon_entry;

/* Open (creating if needed) DIR/daemons and claim a free slot. 0, or -errno:
 * -EPERM when the file is not a regular file owned by us and writable only
 * by us (another user could then fake daemons), -ENOSPC when every slot is
 * held by a live daemon. */
int xrxe_daemon_entry_open(const char *dir, struct xrxe_daemon_entry **out);
/* Mark the slot inert and release it. NULL is fine. */
void xrxe_daemon_entry_close(struct xrxe_daemon_entry *e);

/* The slot's index (tests, logs). */
unsigned xrxe_daemon_entry_index(const struct xrxe_daemon_entry *e);

/* The loop's CPU (sched_getcpu()), when it moved. */
void xrxe_daemon_entry_set_cpu(struct xrxe_daemon_entry *e, int cpu);
/* Around the blocking wait of the doorbell protocol (abi.h daemon_sleeping). */
void xrxe_daemon_entry_set_sleeping(struct xrxe_daemon_entry *e, bool sleeping, uint64_t now);
/* While awake, at least every millisecond (XRXE_DAEMON_STALE_NS is far above). */
void xrxe_daemon_entry_heartbeat(struct xrxe_daemon_entry *e, uint64_t now);

#endif /* XRXE_DAEMON_DAEMON_TABLE_H */
