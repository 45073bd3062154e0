/* SPDX-License-Identifier: MIT */
/*
 * Per-user (uid) quotas of the control socket: many users share one daemon,
 * so no ordinary user may take the device, the daemon's descriptors or its
 * mappings away from the others (docs/architecture.md "Security model").
 *
 * Two ceilings apply to every uid other than 0: its own limit (`xrxed --limit
 * NAME=VALUE`, defaults in quota.c) and a pool that all ordinary users share,
 * three quarters of what the device or the daemon has (the device tables,
 * vm.max_map_count, RLIMIT_NOFILE). The last quarter is root's reserve: root
 * is exempt from both, so ordinary users together can never exhaust a table.
 * A refusal is -EDQUOT (the user's own limit) or -EAGAIN (the shared pool is
 * full: it frees up as other users release), and is counted.
 */
#ifndef XRXE_DAEMON_QUOTA_H
#define XRXE_DAEMON_QUOTA_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum xrxe_quota_res {
	XRXE_Q_CONNS,
	XRXE_Q_PD,
	XRXE_Q_MR,
	XRXE_Q_MW,
	XRXE_Q_CQ,
	XRXE_Q_QP,
	XRXE_Q_SRQ,
	XRXE_Q_AH,
	XRXE_Q_CHANNEL,
	XRXE_Q_CM_CHANNEL,
	XRXE_Q_CM_ID,
	XRXE_Q_MR_BYTES,   /* registered bytes (the daemon maps all of them) */
	XRXE_Q_RING_BYTES, /* shared-memory rings the daemon created */
	XRXE_Q_MAPS,       /* the daemon's mappings: MR windows and rings */
	XRXE_Q_FDS,        /* the daemon's descriptors held for the user */
	XRXE_Q_COUNT
};

struct xrxe_quota;

/* Per-user limits (defaults from xrxe_quota_defaults, changed by --limit). */
struct xrxe_quota_limits {
	uint64_t user[XRXE_Q_COUNT];
};

void xrxe_quota_defaults(struct xrxe_quota_limits *l);
/* "NAME=VALUE" (VALUE may end in k, M, G for the byte limits). 0 or -EINVAL
 * with a message in err. */
int xrxe_quota_parse(struct xrxe_quota_limits *l, const char *arg, char *err, size_t errlen);
/* The names, defaults and meaning, for --help. */
void xrxe_quota_help(FILE *out);

/* capacity: what the device or the daemon has of each resource (the pool
 * is 3/4 of it); a user limit above the pool is lowered to it. */
int xrxe_quota_create(const struct xrxe_quota_limits *l, const uint64_t capacity[XRXE_Q_COUNT],
		      struct xrxe_quota **out);
void xrxe_quota_destroy(struct xrxe_quota *q);

/* Take n of res for uid: 0, -EDQUOT (uid's limit) or -EAGAIN (the ordinary
 * users' pool). Root (uid 0) always gets it. */
int xrxe_quota_charge(struct xrxe_quota *q, uid_t uid, enum xrxe_quota_res res, uint64_t n);
void xrxe_quota_release(struct xrxe_quota *q, uid_t uid, enum xrxe_quota_res res, uint64_t n);

/* For `xrxe stats` (sections "limits" and "quota"). */
struct xrxe_quota_stat {
	uint64_t limit;     /* per ordinary user */
	uint64_t pool;      /* all ordinary users together */
	uint64_t used;      /* by ordinary users now */
	uint64_t root_used; /* by root now */
	uint64_t refused;   /* requests refused (EDQUOT or EAGAIN) */
};
const char *xrxe_quota_name(enum xrxe_quota_res res);
void xrxe_quota_get(const struct xrxe_quota *q, enum xrxe_quota_res res,
		    struct xrxe_quota_stat *st);
/* Ordinary users holding anything now. */
unsigned xrxe_quota_users(const struct xrxe_quota *q);

#endif /* XRXE_DAEMON_QUOTA_H */
