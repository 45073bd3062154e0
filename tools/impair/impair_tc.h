/* SPDX-License-Identifier: MIT */
/*
 * xrxe-impair's kernel side: load the tc program (bpf/xrxe_impair.bpf.c)
 * onto an interface's clsact egress hook with libbpf's bpf_tc_* API, find it
 * again by its fixed handle and priority, update its settings map in place,
 * read its counters, and remove exactly it. Every function logs its own
 * failure in one line and returns 0 or -errno.
 */
#ifndef XRXE_TOOLS_IMPAIR_TC_H
#define XRXE_TOOLS_IMPAIR_TC_H

#include <stdbool.h>
#include <stddef.h>

#include "xrxe/impair.h"

struct impair_handle {
	unsigned int ifindex;
	__u32 prog_id;
	int cfg_fd, queue_fd, stats_fd, flows_fd; /* -1 when closed */
};

struct impair_flow_sample {
	struct xrxe_impair_flow_key key;
	struct xrxe_impair_flow val; /* summed over CPUs */
};

struct impair_snapshot {
	struct xrxe_impair_cfg cfg;
	struct xrxe_impair_stat counters[XRXE_IMPAIR_COUNTER_COUNT]; /* summed over CPUs */
	__u64 backlog, max_backlog; /* phantom queue, bytes (backlog as of last_ns) */
	__u64 last_ns;
	struct impair_flow_sample *flows; /* with flows read: malloc'd, nflows of them */
	size_t nflows;
};

const char *impair_counter_name(enum xrxe_impair_counter c);

/* ifname to ifindex; -ENODEV for a name that is not an interface. */
int impair_ifindex(const char *ifname, unsigned int *ifindex);

/* Our filter on ifname's clsact egress: 0 and *h filled, -ENOENT when absent
 * (not logged), -EBUSY when somebody else's filter sits at our handle and
 * priority, other -errno on failure. */
int impair_find(const char *ifname, unsigned int ifindex, struct impair_handle *h);

/* Create clsact if missing, load, configure and attach. cfg->flags gets
 * XRXE_IMPAIR_F_OWN_CLSACT when the qdisc was created here. */
int impair_attach(const char *ifname, unsigned int ifindex, struct xrxe_impair_cfg *cfg,
		  struct impair_handle *h);

/* Replace the settings of an attached filter (keeps OWN_CLSACT). */
int impair_configure(const char *ifname, const struct impair_handle *h,
		     struct xrxe_impair_cfg *cfg);

/* Detach our filter; delete the clsact qdisc if we created it and no other
 * filter is left on it. *removed_qdisc tells which happened. */
int impair_clear(const char *ifname, const struct impair_handle *h, bool *removed_qdisc);

/* Counters, queue and settings; the flows too when with_flows. */
int impair_read(const struct impair_handle *h, bool with_flows, struct impair_snapshot *s);
void impair_snapshot_free(struct impair_snapshot *s);

/* The interface's root qdisc as `tc -s qdisc show` reports it: what it sent,
 * dropped and holds. kind is empty when the root is the default (noqueue). */
struct impair_qdisc_stats {
	char kind[16];
	__u64 bytes;
	__u32 packets, drops, backlog, qlen;
};
int impair_root_qdisc_stats(unsigned int ifindex, struct impair_qdisc_stats *st);

/* Zero the counters and flows, and empty the phantom queue (and its maximum). */
int impair_reset(const struct impair_handle *h);

void impair_close(struct impair_handle *h);

#endif /* XRXE_TOOLS_IMPAIR_TC_H */
