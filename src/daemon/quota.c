// SPDX-License-Identifier: MIT
/*
 * Per-user quotas (quota.h). One table gives every resource its name, its
 * default per-user limit and what it means; parsing, --help and `xrxe stats`
 * all read it, so they cannot disagree.
 */
#include "daemon/quota.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define KiB 1024ull
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

static const struct {
	const char *name;
	uint64_t def;
	const char *what;
} res_table[XRXE_Q_COUNT] = {
	/* Defaults: a generous workload (an MPI rank per core, perftest with
	 * many QPs) fits; 16 users together stay inside the pool. */
	[XRXE_Q_CONNS] = { "conns", 64, "control connections (processes, contexts)" },
	[XRXE_Q_PD] = { "pds", 128, "protection domains" },
	[XRXE_Q_MR] = { "mrs", 2048, "memory regions" },
	[XRXE_Q_MW] = { "mws", 1024, "memory windows" },
	[XRXE_Q_CQ] = { "cqs", 512, "completion queues" },
	[XRXE_Q_QP] = { "qps", 256, "queue pairs" },
	[XRXE_Q_SRQ] = { "srqs", 128, "shared receive queues" },
	[XRXE_Q_AH] = { "ahs", 256, "address handles" },
	[XRXE_Q_CHANNEL] = { "channels", 128, "completion channels" },
	[XRXE_Q_CM_CHANNEL] = { "cm_channels", 64, "rdma_cm event channels" },
	[XRXE_Q_CM_ID] = { "cm_ids", 512, "rdma_cm IDs" },
	[XRXE_Q_MR_BYTES] = { "mr_bytes", 16 * GiB, "registered bytes (mapped by the daemon)" },
	[XRXE_Q_RING_BYTES] = { "ring_bytes", 256 * MiB, "bytes of queue rings" },
	[XRXE_Q_MAPS] = { "maps", 4096, "daemon mappings (one per MR and per ring)" },
	[XRXE_Q_FDS] = { "fds", 512, "daemon descriptors (sockets, pipes, memfds)" },
};

struct quota_user {
	uid_t uid;
	uint64_t used[XRXE_Q_COUNT];
	struct quota_user *next;
};

struct xrxe_quota {
	uint64_t limit[XRXE_Q_COUNT], pool[XRXE_Q_COUNT];
	uint64_t used[XRXE_Q_COUNT], root_used[XRXE_Q_COUNT], refused[XRXE_Q_COUNT];
	struct quota_user *users; /* ordinary users holding something */
	unsigned nusers;
};

void xrxe_quota_defaults(struct xrxe_quota_limits *l)
{
	for (int i = 0; i < XRXE_Q_COUNT; i++)
		l->user[i] = res_table[i].def;
}

const char *xrxe_quota_name(enum xrxe_quota_res res)
{
	return (unsigned)res < XRXE_Q_COUNT ? res_table[res].name : "?";
}

int xrxe_quota_parse(struct xrxe_quota_limits *l, const char *arg, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	unsigned long long v;
	char *end;

	for (int i = 0; eq && i < XRXE_Q_COUNT; i++) {
		if (strlen(res_table[i].name) != (size_t)(eq - arg) ||
		    strncmp(arg, res_table[i].name, (size_t)(eq - arg)))
			continue;
		errno = 0;
		v = strtoull(eq + 1, &end, 0);
		if (end == eq + 1 || errno || eq[1] == '-') {
			snprintf(err, errlen, "--limit %s: not a number", arg);
			return -EINVAL;
		}
		switch (*end) {
		case 'k': case 'K': v *= KiB; end++; break;
		case 'M': v *= MiB; end++; break;
		case 'G': v *= GiB; end++; break;
		default: break;
		}
		if (*end) {
			snprintf(err, errlen, "--limit %s: trailing characters", arg);
			return -EINVAL;
		}
		l->user[i] = v;
		return 0;
	}
	snprintf(err, errlen, "--limit %s: expected NAME=VALUE with NAME one of those `xrxed "
		 "--help` lists", arg);
	return -EINVAL;
}

void xrxe_quota_help(FILE *out)
{
	for (int i = 0; i < XRXE_Q_COUNT; i++)
		fprintf(out, "        %-11s %11" PRIu64 "  %s\n", res_table[i].name, res_table[i].def,
			res_table[i].what);
}

int xrxe_quota_create(const struct xrxe_quota_limits *l, const uint64_t capacity[XRXE_Q_COUNT],
		      struct xrxe_quota **out)
{
	struct xrxe_quota *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	for (int i = 0; i < XRXE_Q_COUNT; i++) {
		/* root keeps a quarter: ordinary users together never take
		 * the last of a table */
		q->pool[i] = capacity[i] - capacity[i] / 4;
		q->limit[i] = l->user[i] < q->pool[i] ? l->user[i] : q->pool[i];
	}
	*out = q;
	return 0;
}

void xrxe_quota_destroy(struct xrxe_quota *q)
{
	struct quota_user *u, *n;

	if (!q)
		return;
	for (u = q->users; u; u = n) {
		n = u->next;
		free(u);
	}
	free(q);
}

static struct quota_user *user_find(struct xrxe_quota *q, uid_t uid, struct quota_user ***prevp)
{
	struct quota_user **pp = &q->users;

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->uid == uid) {
			if (prevp)
				*prevp = pp;
			return *pp;
		}
	return NULL;
}

int xrxe_quota_charge(struct xrxe_quota *q, uid_t uid, enum xrxe_quota_res res, uint64_t n)
{
	struct quota_user *u;

	if (uid == 0) {
		q->root_used[res] += n;
		return 0;
	}
	u = user_find(q, uid, NULL);
	if ((u ? u->used[res] : 0) + n > q->limit[res]) {
		q->refused[res]++;
		return -EDQUOT;
	}
	if (q->used[res] + n > q->pool[res]) {
		q->refused[res]++;
		return -EAGAIN;
	}
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u) {
			q->refused[res]++;
			return -ENOMEM;
		}
		u->uid = uid;
		u->next = q->users;
		q->users = u;
		q->nusers++;
	}
	u->used[res] += n;
	q->used[res] += n;
	return 0;
}

void xrxe_quota_release(struct xrxe_quota *q, uid_t uid, enum xrxe_quota_res res, uint64_t n)
{
	struct quota_user *u, **pp;
	int i;

	if (uid == 0) {
		q->root_used[res] -= n < q->root_used[res] ? n : q->root_used[res];
		return;
	}
	u = user_find(q, uid, &pp);
	if (!u)
		return;
	n = n < u->used[res] ? n : u->used[res];
	u->used[res] -= n;
	q->used[res] -= n;
	for (i = 0; i < XRXE_Q_COUNT && !u->used[i]; i++)
		;
	if (i == XRXE_Q_COUNT) {
		*pp = u->next;
		free(u);
		q->nusers--;
	}
}

void xrxe_quota_get(const struct xrxe_quota *q, enum xrxe_quota_res res,
		    struct xrxe_quota_stat *st)
{
	*st = (struct xrxe_quota_stat){
		.limit = q->limit[res], .pool = q->pool[res], .used = q->used[res],
		.root_used = q->root_used[res], .refused = q->refused[res],
	};
}

unsigned xrxe_quota_users(const struct xrxe_quota *q)
{
	return q->nusers;
}
