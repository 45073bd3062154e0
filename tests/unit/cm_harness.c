// SPDX-License-Identifier: MIT
/*
 * CM test harness (see cm_harness.h).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "cm_harness.h"

/* --- PRNG (splitmix64, as tp_harness) ------------------------------------- */

uint64_t xrxe_cmh_rand(struct xrxe_cmh *h)
{
	uint64_t z = (h->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* --- queues ---------------------------------------------------------------- */

static void q_push(struct xrxe_cmh_queue *q, const struct xrxe_cmh_msg *m)
{
	if (q->len == q->cap) {
		size_t ncap = q->cap ? q->cap * 2 : 64;
		struct xrxe_cmh_msg *nv = calloc(ncap, sizeof(*nv));

		if (!nv)
			abort();
		for (size_t i = 0; i < q->len; i++)
			nv[i] = q->v[(q->head + i) % q->cap];
		free(q->v);
		q->v = nv;
		q->head = 0;
		q->cap = ncap;
	}
	q->v[(q->head + q->len) % q->cap] = *m;
	q->len++;
}

static bool q_pop(struct xrxe_cmh_queue *q, struct xrxe_cmh_msg *m)
{
	if (!q->len)
		return false;
	*m = q->v[q->head];
	q->head = (q->head + 1) % q->cap;
	q->len--;
	return true;
}

static void q_free(struct xrxe_cmh_queue *q)
{
	free(q->v);
	memset(q, 0, sizeof(*q));
}

/* --- host lookup ------------------------------------------------------------ */

static int host_of(const struct xrxe_cmh *h, const struct xrxe_av *av, bool daddr)
{
	for (unsigned i = 0; i < h->nhosts; i++) {
		const struct xrxe_cmh_host *s = &h->host[i];

		if (av->ip_version == 4 &&
		    !memcmp(daddr ? &av->daddr.v4 : &av->saddr.v4, &s->v4, 4))
			return (int)i;
		if (av->ip_version == 6 &&
		    !memcmp(daddr ? &av->daddr.v6 : &av->saddr.v6, &s->v6, 16))
			return (int)i;
	}
	return -1;
}

static void reply_av_of(const struct xrxe_av *av, struct xrxe_av *r)
{
	/* the packet's addresses swapped (the daemon's xrxe_ctrl_cm_rx) */
	memset(r, 0, sizeof(*r));
	r->ip_version = av->ip_version;
	r->saddr = av->daddr;
	r->daddr = av->saddr;
	memcpy(r->smac, av->dmac, sizeof(r->smac));
	memcpy(r->dmac, av->smac, sizeof(r->dmac));
	r->tclass = av->tclass & ~3u;
	r->hop_limit = 64;
}

/* --- CM ops ------------------------------------------------------------------ */

static bool rule_fires(struct xrxe_cmh_rule *r, int from, uint16_t attr)
{
	if ((r->from >= 0 && r->from != from) || (r->attr && r->attr != attr))
		return false;
	r->seen++;
	if (r->seen <= r->skip || (r->count && r->seen > r->skip + r->count))
		return false;
	r->hits++;
	return true;
}

static void h_send_mad(void *user, const struct xrxe_av *av, const uint8_t *mad)
{
	struct xrxe_cmh_host *s = user;
	struct xrxe_cmh *h = s->h;
	struct xrxe_cmh_msg m = { .from = s->idx, .av = *av, .seq = h->sent, .time = h->now };
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);
	enum xrxe_cmh_action act = 0;

	memcpy(m.mad, mad, XRXE_MAD_SIZE);
	m.to = host_of(h, av, true);
	if (host_of(h, av, false) != s->idx)
		h->bad_src++; /* a MAD must leave from one of the sender's addresses */
	h->sent++;
	if (attr < 32)
		h->sent_by[s->idx][attr]++;
	if (!h->no_log) {
		if (h->nlog == h->logcap) {
			size_t ncap = h->logcap ? h->logcap * 2 : 256;
			struct xrxe_cmh_msg *nl = realloc(h->log, ncap * sizeof(*nl));

			if (!nl)
				abort();
			h->log = nl;
			h->logcap = ncap;
		}
		h->log[h->nlog++] = m;
	}
	for (unsigned i = 0; i < h->nrules && !act; i++)
		if (rule_fires(&h->rules[i], s->idx, attr))
			act = h->rules[i].action;
	switch (act) {
	case XRXE_CMH_DROP:
		h->dropped++;
		return;
	case XRXE_CMH_HOLD:
		q_push(&h->held, &m);
		return;
	case XRXE_CMH_DUP:
		h->duplicated++;
		q_push(&h->q, &m);
		break;
	default:
		break;
	}
	q_push(&h->q, &m);
}

static void h_event(void *user, void *owner, void *listener, struct xrxe_cm_event_msg *ev)
{
	struct xrxe_cmh_host *s = user;
	struct xrxe_cmh_owner *o = owner;
	struct xrxe_cmh_event *e;

	if (!o || o->host != s) {
		s->bad_events++;
		return;
	}
	if (o->destroyed)
		s->events_after_destroy++;
	/* the listener's owner comes with CONNECT_REQUEST and nothing else */
	if ((ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) != (listener != NULL))
		s->bad_events++;
	if (o->nev == o->cap) {
		unsigned ncap = o->cap ? o->cap * 2 : 8;
		struct xrxe_cmh_event *n = realloc(o->ev, ncap * sizeof(*n));

		if (!n)
			abort();
		o->ev = n;
		o->cap = ncap;
	}
	e = &o->ev[o->nev++];
	e->ev = *ev;
	e->listener = listener;
	e->time = s->h->now;
	if (ev->event < XRXE_CMH_EVENT_TYPES)
		o->count[ev->event]++;
}

static void *h_new_child(void *user, void *listener, struct xrxe_cm_id *child)
{
	struct xrxe_cmh_host *s = user;
	struct xrxe_cmh_owner *o;

	s->new_child_calls++;
	if (s->refuse_children)
		return NULL;
	o = xrxe_cmh_owner_new(s);
	o->id = child;
	o->parent = listener;
	return o;
}

static int h_gid_index(void *user, const union ibv_gid *gid)
{
	struct xrxe_cmh_host *s = user;

	for (int i = 0; i < XRXE_CMH_GIDS; i++)
		if (!memcmp(&s->gid[i], gid, sizeof(*gid)))
			return i;
	return -1;
}

static uint32_t h_random(void *user)
{
	struct xrxe_cmh_host *s = user;

	if (s->script_pos < s->nscript)
		return s->script[s->script_pos++];
	return (uint32_t)xrxe_cmh_rand(s->h);
}

static int h_qp_sr(void *user, void *owner, uint32_t qpn, bool on)
{
	struct xrxe_cmh_host *s = user;

	(void)owner;
	s->sr_calls++;
	s->sr_qpn = qpn;
	if (on && s->sr_fail)
		return -ENOMEM;
	s->sr_on = on;
	return 0;
}

static const struct xrxe_cm_ops h_ops = {
	.send_mad = h_send_mad,
	.event = h_event,
	.new_child = h_new_child,
	.gid_index = h_gid_index,
	.random = h_random,
	.qp_sr = h_qp_sr,
};

/* --- setup ------------------------------------------------------------------ */

int xrxe_cmh_init(struct xrxe_cmh *h, uint64_t seed, unsigned nhosts,
		  const struct xrxe_cmh_hostcfg *cfg)
{
	memset(h, 0, sizeof(*h));
	h->rng = seed;
	h->now = XRXE_CMH_T0;
	h->nhosts = nhosts > XRXE_CMH_MAX_HOSTS ? XRXE_CMH_MAX_HOSTS : nhosts;
	for (unsigned i = 0; i < h->nhosts; i++) {
		struct xrxe_cmh_host *s = &h->host[i];
		const struct xrxe_cmh_hostcfg *c = cfg ? &cfg[i] : NULL;
		static const uint8_t zero[6];
		char buf[64];
		struct xrxe_cm_config cc = {
			.ops = &h_ops,
			.user = s,
			.max_path_mtu = IBV_MTU_1024,
			.ca_ack_delay = 15, /* rxe's local_ca_ack_delay, as xrxed reports */
			.selective_repeat = c && c->selective_repeat,
		};
		int err;

		s->h = h;
		s->idx = (int)i;
		snprintf(buf, sizeof(buf), "10.0.0.%u", i + 1);
		inet_pton(AF_INET, c && c->v4 ? c->v4 : buf, &s->v4);
		snprintf(buf, sizeof(buf), "fd00::%u", i + 1);
		inet_pton(AF_INET6, c && c->v6 ? c->v6 : buf, &s->v6);
		if (c && memcmp(c->mac, zero, 6))
			memcpy(s->mac, c->mac, 6);
		else
			memcpy(s->mac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, (uint8_t)(i + 1) }, 6);
		/* EUI-64 with the U/L bit flipped, as rxe makes its node GUID */
		s->guid = (uint64_t)(s->mac[0] ^ 2) << 56 | (uint64_t)s->mac[1] << 48 |
			  (uint64_t)s->mac[2] << 40 | 0xfffeull << 24 | (uint64_t)s->mac[3] << 16 |
			  (uint64_t)s->mac[4] << 8 | s->mac[5];
		s->gid[0].raw[0] = 0xfe;
		s->gid[0].raw[1] = 0x80;
		for (int k = 0; k < 8; k++)
			s->gid[0].raw[8 + k] = (uint8_t)(s->guid >> (56 - 8 * k));
		s->gid[1].raw[10] = s->gid[1].raw[11] = 0xff;
		memcpy(s->gid[1].raw + 12, &s->v4, 4);
		memcpy(s->gid[2].raw, &s->v6, 16);
		/* the daemon passes the device page's __be64 */
		cc.node_guid = htobe64(s->guid);
		err = xrxe_cm_create(&cc, &s->cm);
		if (err) {
			xrxe_cmh_fini(h);
			return err;
		}
	}
	return 0;
}

void xrxe_cmh_fini(struct xrxe_cmh *h)
{
	for (unsigned i = 0; i < h->nhosts; i++) {
		struct xrxe_cmh_host *s = &h->host[i];

		xrxe_cm_destroy(s->cm);
		s->cm = NULL;
		while (s->owners) {
			struct xrxe_cmh_owner *o = s->owners;

			s->owners = o->all_next;
			free(o->ev);
			free(o);
		}
	}
	q_free(&h->q);
	q_free(&h->held);
	free(h->log);
	h->log = NULL;
	h->nlog = h->logcap = 0;
}

/* --- IDs ---------------------------------------------------------------------- */

struct xrxe_cmh_owner *xrxe_cmh_owner_new(struct xrxe_cmh_host *s)
{
	struct xrxe_cmh_owner *o = calloc(1, sizeof(*o));

	if (!o)
		abort();
	o->host = s;
	o->all_next = s->owners;
	s->owners = o;
	return o;
}

int xrxe_cmh_create_id(struct xrxe_cmh_host *s, uint32_t ps, enum ibv_qp_type qpt,
		       struct xrxe_cmh_owner **out)
{
	struct xrxe_cmh_owner *o = xrxe_cmh_owner_new(s);
	int err = xrxe_cm_id_create(s->cm, ps, qpt, o, &o->id);

	if (err)
		o->destroyed = true;
	*out = o;
	return err;
}

void xrxe_cmh_destroy_id(struct xrxe_cmh_owner *o)
{
	if (o->destroyed)
		return;
	xrxe_cm_id_destroy(o->host->cm, o->id, o->host->h->now);
	o->destroyed = true;
	o->id = NULL;
}

struct xrxe_cmh_event *xrxe_cmh_peek(struct xrxe_cmh_owner *o)
{
	return o->next < o->nev ? &o->ev[o->next] : NULL;
}

struct xrxe_cmh_event *xrxe_cmh_take(struct xrxe_cmh_owner *o)
{
	return o->next < o->nev ? &o->ev[o->next++] : NULL;
}

unsigned xrxe_cmh_untaken(const struct xrxe_cmh_owner *o)
{
	return o->nev - o->next;
}

/* --- addresses --------------------------------------------------------------- */

struct xrxe_cm_addr xrxe_cmh_addr(const struct xrxe_cmh_host *s, int family, uint16_t port)
{
	struct xrxe_cm_addr a = { .family = (uint16_t)family, .port = htons(port) };

	if (family == AF_INET)
		memcpy(a.addr, &s->v4, 4);
	else
		memcpy(a.addr, &s->v6, 16);
	return a;
}

struct xrxe_cm_addr xrxe_cmh_any(int family, uint16_t port)
{
	return (struct xrxe_cm_addr){ .family = (uint16_t)family, .port = htons(port) };
}

void xrxe_cmh_gid(const struct xrxe_cm_addr *a, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (a->family == AF_INET) {
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, a->addr, 4);
	} else {
		memcpy(gid->raw, a->addr, 16);
	}
}

void xrxe_cmh_av(const struct xrxe_cmh_host *from, const struct xrxe_cmh_host *to, int family,
		 struct xrxe_av *av)
{
	memset(av, 0, sizeof(*av));
	av->ip_version = family == AF_INET ? 4 : 6;
	if (family == AF_INET) {
		av->saddr.v4 = from->v4;
		av->daddr.v4 = to->v4;
	} else {
		av->saddr.v6 = from->v6;
		av->daddr.v6 = to->v6;
	}
	memcpy(av->smac, from->mac, 6);
	memcpy(av->dmac, to->mac, 6);
	av->hop_limit = 64;
}

int xrxe_cmh_resolve(struct xrxe_cmh_owner *o, const struct xrxe_cmh_host *to, int family,
		     uint16_t dport)
{
	struct xrxe_cmh_host *s = o->host;
	struct xrxe_cm_addr src = xrxe_cmh_addr(s, family, 0);
	struct xrxe_cm_addr dst = xrxe_cmh_addr(to, family, dport);
	struct xrxe_av av;
	int err;

	xrxe_cmh_av(s, to, family, &av);
	err = xrxe_cm_addr_query(s->cm, o->id);
	if (!err)
		err = xrxe_cm_addr_resolved(s->cm, o->id, &src, &dst, &av);
	if (!err)
		err = xrxe_cm_resolve_route(s->cm, o->id);
	return err;
}

/* --- the wire ------------------------------------------------------------------ */

void xrxe_cmh_rule(struct xrxe_cmh *h, int from, uint16_t attr, unsigned skip, unsigned count,
		   enum xrxe_cmh_action action)
{
	if (h->nrules == XRXE_CMH_MAX_RULES)
		abort();
	h->rules[h->nrules++] = (struct xrxe_cmh_rule){
		.from = from, .attr = attr, .skip = skip, .count = count, .action = action,
	};
}

void xrxe_cmh_clear_rules(struct xrxe_cmh *h)
{
	h->nrules = 0;
	memset(h->rules, 0, sizeof(h->rules));
}

void xrxe_cmh_inject_av(struct xrxe_cmh *h, int to, const struct xrxe_av *reply_av,
			const uint8_t *mad, size_t len)
{
	/* an exact-size heap copy: ASan sees any read past len */
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		abort();
	memcpy(copy, mad, len);
	xrxe_cm_rx(h->host[to].cm, reply_av, copy, len, h->now);
	free(copy);
}

void xrxe_cmh_inject(struct xrxe_cmh *h, int from, int to, int family, const uint8_t *mad,
		     size_t len)
{
	struct xrxe_av av;

	xrxe_cmh_av(&h->host[to], &h->host[from], family, &av);
	xrxe_cmh_inject_av(h, to, &av, mad, len);
}

bool xrxe_cmh_deliver(struct xrxe_cmh *h)
{
	struct xrxe_cmh_msg m;
	struct xrxe_av r;

	if (!q_pop(&h->q, &m))
		return false;
	if (m.to < 0 || h->host[m.to].deaf) {
		h->undeliverable++;
		return true;
	}
	reply_av_of(&m.av, &r);
	h->delivered++;
	xrxe_cmh_inject_av(h, m.to, &r, m.mad, XRXE_MAD_SIZE);
	return true;
}

void xrxe_cmh_flush(struct xrxe_cmh *h)
{
	while (xrxe_cmh_deliver(h))
		;
}

uint64_t xrxe_cmh_next_deadline(const struct xrxe_cmh *h)
{
	uint64_t d = UINT64_MAX;

	for (unsigned i = 0; i < h->nhosts; i++) {
		uint64_t t = xrxe_cm_next_deadline(h->host[i].cm);

		if (t < d)
			d = t;
	}
	return d;
}

void xrxe_cmh_run_until(struct xrxe_cmh *h, uint64_t t)
{
	xrxe_cmh_flush(h);
	for (;;) {
		uint64_t d = xrxe_cmh_next_deadline(h);

		if (d > t)
			break;
		if (d > h->now)
			h->now = d;
		for (unsigned i = 0; i < h->nhosts; i++)
			xrxe_cm_tick(h->host[i].cm, h->now);
		xrxe_cmh_flush(h);
	}
	if (t > h->now)
		h->now = t;
}

void xrxe_cmh_advance(struct xrxe_cmh *h, uint64_t ns)
{
	xrxe_cmh_run_until(h, h->now + ns);
}

void xrxe_cmh_release(struct xrxe_cmh *h, bool reverse)
{
	struct xrxe_cmh_msg m;

	if (!reverse) {
		while (q_pop(&h->held, &m))
			q_push(&h->q, &m);
		return;
	}
	while (h->held.len) {
		h->held.len--;
		q_push(&h->q, &h->held.v[(h->held.head + h->held.len) % h->held.cap]);
	}
	h->held.head = 0;
}

size_t xrxe_cmh_held(const struct xrxe_cmh *h)
{
	return h->held.len;
}

unsigned xrxe_cmh_count(const struct xrxe_cmh *h, int from, uint16_t attr)
{
	unsigned n = 0;

	for (size_t i = 0; i < h->nlog; i++) {
		const struct xrxe_cmh_msg *m = &h->log[i];

		if ((from < 0 || m->from == from) &&
		    (!attr || (uint16_t)(m->mad[16] << 8 | m->mad[17]) == attr))
			n++;
	}
	return n;
}

const struct xrxe_cmh_msg *xrxe_cmh_last(const struct xrxe_cmh *h, int from, uint16_t attr)
{
	for (size_t i = h->nlog; i-- > 0;) {
		const struct xrxe_cmh_msg *m = &h->log[i];

		if ((from < 0 || m->from == from) &&
		    (!attr || (uint16_t)(m->mad[16] << 8 | m->mad[17]) == attr))
			return m;
	}
	return NULL;
}

int xrxe_cmh_parse(const struct xrxe_cmh_msg *m, struct xrxe_cm_msg *out)
{
	return (int)xrxe_cm_mad_parse(m->mad, XRXE_MAD_SIZE, out);
}

struct xrxe_cm_stats xrxe_cmh_stats(const struct xrxe_cmh_host *s)
{
	struct xrxe_cm_stats st;

	xrxe_cm_get_stats(s->cm, &st);
	return st;
}

struct info_find {
	void *owner;
	struct xrxe_cm_id_info *out;
};

static int info_fn(void *arg, const struct xrxe_cm_id_info *in)
{
	struct info_find *f = arg;

	if (in->owner != f->owner)
		return 0;
	*f->out = *in;
	return 1;
}

bool xrxe_cmh_info(struct xrxe_cmh_owner *o, struct xrxe_cm_id_info *out)
{
	struct info_find f = { .owner = o, .out = out };

	return xrxe_cm_id_foreach(o->host->cm, info_fn, &f) == 1;
}
