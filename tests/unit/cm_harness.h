/* SPDX-License-Identifier: MIT */
/*
 * CM test harness: two or three connection managers ("hosts" 0, 1, 2) joined
 * by an in-memory wire of CM MADs, with a virtual clock, like tp_harness.h
 * does for the transport.
 *
 * Host i has IPv4 10.0.0.(i+1), IPv6 fd00::(i+1), MAC 02:00:00:00:00:0(i+1)
 * and the node GUID rxe derives from that MAC (EUI-64), unless the caller
 * gives its own addresses (the golden tests use the capture's). Its GID
 * table: 0 fe80::EUI-64, 1 ::ffff:IPv4, 2 the IPv6 address.
 *
 * Every MAD a CM sends is logged (before any loss), then passes the wire's
 * rules (drop / duplicate / hold the Nth matching message) and is queued for
 * the host whose address is av->daddr; delivery calls xrxe_cm_rx with the
 * addresses swapped, as the daemon's QP1 does. Held messages wait until the
 * test releases them (in order or reversed: reordering). Time moves only when
 * the test asks: the clock jumps to the next CM deadline and ticks.
 *
 * Owners are harness objects (struct xrxe_cmh_owner); events are recorded
 * per owner, and an event for an owner whose ID was destroyed is counted as
 * a fault. All randomness comes from one seeded PRNG; a host can be given a
 * script of values its random op returns first.
 *
 * Symbols are xrxe_cmh_* (every helper here is linked into every unit test
 * binary). No criterion here: the tests assert.
 */
#ifndef XRXE_CM_HARNESS_H
#define XRXE_CM_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "cm/cm.h"
#include "cm/mad.h"

#define XRXE_CMH_MAX_HOSTS 3
#define XRXE_CMH_GIDS 3
#define XRXE_CMH_EVENT_TYPES 16 /* enum rdma_cm_event_type, ADDR_RESOLVED..TIMEWAIT_EXIT */
#define XRXE_CMH_MAX_RULES 8
#define XRXE_CMH_SCRIPT 16

struct xrxe_cmh;
struct xrxe_cmh_host;

struct xrxe_cmh_event {
	struct xrxe_cm_event_msg ev;
	struct xrxe_cmh_owner *listener; /* CONNECT_REQUEST: the listener's owner */
	uint64_t time;
};

struct xrxe_cmh_owner {
	struct xrxe_cmh_host *host;
	struct xrxe_cm_id *id;
	struct xrxe_cmh_owner *parent; /* new_child: the listener's owner */
	bool destroyed;
	struct xrxe_cmh_event *ev;
	unsigned nev, cap, next; /* next: the first event not yet taken */
	unsigned count[XRXE_CMH_EVENT_TYPES];
	struct xrxe_cmh_owner *all_next; /* the host's owners, freed by fini */
};

struct xrxe_cmh_hostcfg {
	const char *v4, *v6; /* NULL: the defaults */
	uint8_t mac[6];      /* all zero: the default */
	bool selective_repeat; /* the CM offers/accepts it (xrxe_cm_config) */
};

struct xrxe_cmh_host {
	struct xrxe_cmh *h;
	int idx;
	struct xrxe_cm *cm;
	struct in_addr v4;
	struct in6_addr v6;
	uint8_t mac[6];
	uint64_t guid; /* host order; the CM's config holds it big-endian */
	union ibv_gid gid[XRXE_CMH_GIDS];
	struct xrxe_cmh_owner *owners;
	bool refuse_children; /* new_child answers NULL */
	bool deaf;            /* MADs to this host are logged, never delivered */
	unsigned new_child_calls;
	/* ops->qp_sr calls: how many, the last QPN and decision */
	unsigned sr_calls;
	uint32_t sr_qpn;
	bool sr_on;
	bool sr_fail; /* ops->qp_sr fails (-ENOMEM) to switch a QP on */
	uint32_t script[XRXE_CMH_SCRIPT];
	unsigned nscript, script_pos;
	/* faults the tests check are zero */
	unsigned events_after_destroy, bad_events;
};

struct xrxe_cmh_msg {
	int from, to; /* host indexes; to -1: no host has av->daddr */
	struct xrxe_av av;
	uint8_t mad[XRXE_MAD_SIZE];
	uint64_t seq, time;
};

enum xrxe_cmh_action { XRXE_CMH_DROP = 1, XRXE_CMH_DUP, XRXE_CMH_HOLD };

/* Acts on the matching messages number skip+1 .. skip+count (count 0: all
 * from skip+1 on). */
struct xrxe_cmh_rule {
	int from;      /* -1: any host */
	uint16_t attr; /* 0: any */
	unsigned skip, count;
	enum xrxe_cmh_action action;
	unsigned seen, hits;
};

struct xrxe_cmh_queue {
	struct xrxe_cmh_msg *v;
	size_t head, len, cap;
};

struct xrxe_cmh {
	struct xrxe_cmh_host host[XRXE_CMH_MAX_HOSTS];
	unsigned nhosts;
	uint64_t now, rng;
	struct xrxe_cmh_queue q, held;
	struct xrxe_cmh_msg *log; /* every MAD sent, in order */
	size_t nlog, logcap;
	bool no_log; /* floods: count, but keep nothing */
	struct xrxe_cmh_rule rules[XRXE_CMH_MAX_RULES];
	unsigned nrules;
	uint64_t sent, delivered, dropped, duplicated, undeliverable, bad_src;
	uint64_t sent_by[XRXE_CMH_MAX_HOSTS][32]; /* per sending host and attribute ID */
};

/* Start time of the virtual clock (nonzero, so 0 is never a deadline). */
#define XRXE_CMH_T0 1000000000ull

/* cfg: NULL or one per host. 0 or -errno (from xrxe_cm_create). */
int xrxe_cmh_init(struct xrxe_cmh *h, uint64_t seed, unsigned nhosts,
		  const struct xrxe_cmh_hostcfg *cfg);
void xrxe_cmh_fini(struct xrxe_cmh *h);
uint64_t xrxe_cmh_rand(struct xrxe_cmh *h);

/* --- IDs and owners --- */
struct xrxe_cmh_owner *xrxe_cmh_owner_new(struct xrxe_cmh_host *s);
int xrxe_cmh_create_id(struct xrxe_cmh_host *s, uint32_t ps, enum ibv_qp_type qpt,
		       struct xrxe_cmh_owner **out);
void xrxe_cmh_destroy_id(struct xrxe_cmh_owner *o);
/* The next event not yet taken (NULL: none); take marks it taken. */
struct xrxe_cmh_event *xrxe_cmh_peek(struct xrxe_cmh_owner *o);
struct xrxe_cmh_event *xrxe_cmh_take(struct xrxe_cmh_owner *o);
unsigned xrxe_cmh_untaken(const struct xrxe_cmh_owner *o);

/* --- addresses --- */
/* port in host order */
struct xrxe_cm_addr xrxe_cmh_addr(const struct xrxe_cmh_host *s, int family, uint16_t port);
struct xrxe_cm_addr xrxe_cmh_any(int family, uint16_t port);
void xrxe_cmh_gid(const struct xrxe_cm_addr *a, union ibv_gid *gid);
void xrxe_cmh_av(const struct xrxe_cmh_host *from, const struct xrxe_cmh_host *to, int family,
		 struct xrxe_av *av);
/* addr_query + addr_resolved (from s's address of family to `to`:dport)
 * + resolve_route, as the daemon does; the first error. */
int xrxe_cmh_resolve(struct xrxe_cmh_owner *o, const struct xrxe_cmh_host *to, int family,
		     uint16_t dport);

/* --- the wire --- */
void xrxe_cmh_rule(struct xrxe_cmh *h, int from, uint16_t attr, unsigned skip, unsigned count,
		   enum xrxe_cmh_action action);
void xrxe_cmh_clear_rules(struct xrxe_cmh *h);
/* Deliver the first queued message; false if none. */
bool xrxe_cmh_deliver(struct xrxe_cmh *h);
/* Deliver until nothing is queued (answers included); no time passes. */
void xrxe_cmh_flush(struct xrxe_cmh *h);
/* Run until absolute time t: deliver, then jump to each deadline <= t and
 * tick; the clock ends at t. */
void xrxe_cmh_run_until(struct xrxe_cmh *h, uint64_t t);
void xrxe_cmh_advance(struct xrxe_cmh *h, uint64_t ns);
/* The earliest deadline of every host. */
uint64_t xrxe_cmh_next_deadline(const struct xrxe_cmh *h);
/* Held messages back onto the wire (reverse: last held first). */
void xrxe_cmh_release(struct xrxe_cmh *h, bool reverse);
size_t xrxe_cmh_held(const struct xrxe_cmh *h);
/* Hand a MAD to host `to` as if host `from` had sent it (family picks the
 * addresses); len may be anything. */
void xrxe_cmh_inject(struct xrxe_cmh *h, int from, int to, int family, const uint8_t *mad,
		     size_t len);
/* The same with an explicit way back. */
void xrxe_cmh_inject_av(struct xrxe_cmh *h, int to, const struct xrxe_av *reply_av,
			const uint8_t *mad, size_t len);

/* Logged MADs: how many host `from` (-1: any) sent of attr (0: any), and the
 * last one (NULL: none). */
unsigned xrxe_cmh_count(const struct xrxe_cmh *h, int from, uint16_t attr);
const struct xrxe_cmh_msg *xrxe_cmh_last(const struct xrxe_cmh *h, int from, uint16_t attr);
/* Parse a logged MAD (0 or the codec's error). */
int xrxe_cmh_parse(const struct xrxe_cmh_msg *m, struct xrxe_cm_msg *out);

struct xrxe_cm_stats xrxe_cmh_stats(const struct xrxe_cmh_host *s);
/* The CM's view of o's ID (xrxe_cm_id_foreach); false if the CM lists no ID
 * with that owner. */
bool xrxe_cmh_info(struct xrxe_cmh_owner *o, struct xrxe_cm_id_info *out);

#endif /* XRXE_CM_HARNESS_H */
