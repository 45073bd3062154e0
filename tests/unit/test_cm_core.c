// SPDX-License-Identifier: MIT
/*
 * The CM core (src/cm/cm.c, ib_cm.c, cma.c) end to end: two or three CMs over
 * the in-memory wire of cm_harness.h with a virtual clock.
 *
 *   cm_conn     RC connect / accept / establish over IPv4 and IPv6, the QP
 *               attributes each side computes, disconnect from either side,
 *               TimeWait (IBA 12.9.8.3.2) and its exit
 *   cm_rej      REJ: nobody listens, the application rejects, the backlog
 *   cm_loss     every CM message lost once, a dead peer, a missing RTU
 *   cm_destroy  rdma_destroy_id in every state: DREQ / REJ on the wire, no
 *               event after it, nothing kept after TimeWait
 *   cm_sidr     UD: SIDR_REQ / SIDR_REP (IBA 12.11)
 *   cm_bind     ports: ephemeral, in use, wildcards, REUSEADDR, AFONLY
 *   cm_hostile  malformed, unexpected and random MADs, a REQ flood
 *   cm_kernel   against the kernel's own frames (tests/golden/rxe-cm.pcap):
 *               our REQ/REP/RTU/DREQ/DREP/REJ/SIDR_REQ/SIDR_REP for the same
 *               connections, field by field
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "cm_harness.h"
#include "golden.h"
#include "xrxe/wire.h"

#ifndef XRXE_GOLDEN_CM
#define XRXE_GOLDEN_CM "rxe-cm.pcap"
#endif

#define SEC 1000000000ull
#define MS 1000000ull

#define A 0
#define B 1
#define C 2

/* The kernel's rdma_cm values for RoCE as tests/golden/rxe-cm.pcap shows
 * them (Linux 6.1): CM response timeout 20, 15 retries, packet lifetime 18
 * (REQ Local ACK Timeout 19 with rxe's CA ACK delay 15). */
#define K_RESPONSE_TIMEOUT 20
#define K_RETRIES 15
#define K_PLT 18
#define K_ACK_TIMEOUT 19

static uint64_t iba_ns(unsigned t)
{
	return 4096ull << t;
}

/* One try of a REQ/REP/DREQ: the peer's response timeout plus the way there
 * and back (IBA 12.7.33/12.7.35, the kernel's timeout_ms). */
static __attribute__((unused)) uint64_t try_ns(void)
{
	return iba_ns(K_RESPONSE_TIMEOUT) + 2 * iba_ns(K_PLT);
}

/* TimeWait: the connection's Local ACK Timeout. */
static uint64_t timewait_ns(void)
{
	return iba_ns(K_ACK_TIMEOUT);
}

static struct xrxe_cmh h;

static struct xrxe_cmh_host *H(int i)
{
	return &h.host[i];
}

static const char *evn(unsigned t)
{
	static const char *const n[] = {
		"ADDR_RESOLVED", "ADDR_ERROR",   "ROUTE_RESOLVED",  "ROUTE_ERROR",
		"CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE",
		"REJECTED",      "ESTABLISHED",  "DISCONNECTED",    "DEVICE_REMOVAL",
		"MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE",  "TIMEWAIT_EXIT",
	};

	return t < sizeof(n) / sizeof(n[0]) ? n[t] : "?";
}

static void setup(void)
{
	cr_assert_eq(xrxe_cmh_init(&h, 0x5eedcafe, 3, NULL), 0);
}

/* LeakSanitizer's own check at exit never runs in criterion's workers (they
 * leave with _exit), and what .fini asserts does not count: every test ends
 * with no_faults(), which destroys the CMs and asks LSan itself (the symbol
 * is there only in the sanitizer build). */
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static void teardown(void)
{
	xrxe_cmh_fini(&h); /* a second fini is harmless */
}

/* The end of every test: nothing the harness counts as a fault happened,
 * and once both CMs are destroyed, with whatever IDs they still hold, no
 * memory is left unreachable. */
static void no_faults(void)
{
	for (unsigned i = 0; i < h.nhosts; i++) {
		cr_expect_eq(H(i)->events_after_destroy, 0, "host %u: event after destroy", i);
		cr_expect_eq(H(i)->bad_events, 0, "host %u: malformed event", i);
	}
	cr_expect_eq(h.bad_src, 0, "a MAD left from an address not the sender's");
	xrxe_cmh_fini(&h);
	if (__lsan_do_recoverable_leak_check)
		cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "LeakSanitizer found leaks");
}

static struct xrxe_cmh_event *expect_ev(struct xrxe_cmh_owner *o, unsigned type, int status)
{
	struct xrxe_cmh_event *e = xrxe_cmh_take(o);

	cr_assert_not_null(e, "no event, want %s", evn(type));
	cr_assert_eq(e->ev.event, type, "event %s (status %d), want %s", evn(e->ev.event),
		     e->ev.status, evn(type));
	cr_assert_eq(e->ev.status, status, "%s: status %d, want %d", evn(type), e->ev.status,
		     status);
	cr_assert(e->ev.flags & XRXE_CM_EV_ROUTE);
	return e;
}

static void expect_none(struct xrxe_cmh_owner *o)
{
	struct xrxe_cmh_event *e = xrxe_cmh_peek(o);

	cr_assert_null(e, "unexpected %s (status %d)", e ? evn(e->ev.event) : "",
		       e ? e->ev.status : 0);
}

/* The n-th (0-based) child new_child gave listener l. */
static struct xrxe_cmh_owner *child_of(struct xrxe_cmh_owner *l, unsigned n)
{
	struct xrxe_cmh_owner *v[4096];
	unsigned k = 0;

	/* host owner lists are newest first */
	for (struct xrxe_cmh_owner *o = l->host->owners; o && k < 4096; o = o->all_next)
		if (o->parent == l)
			v[k++] = o;
	cr_assert_lt(n, k, "listener has %u children, want #%u", k, n);
	return v[k - 1 - n];
}

static unsigned children_of(struct xrxe_cmh_owner *l)
{
	unsigned k = 0;

	for (struct xrxe_cmh_owner *o = l->host->owners; o; o = o->all_next)
		k += o->parent == l;
	return k;
}

static bool addr_eq(const struct xrxe_cm_addr *a, const struct xrxe_cm_addr *b)
{
	return a->family == b->family && a->port == b->port &&
	       !memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16);
}

static bool gid_eq(const union ibv_gid *a, const union ibv_gid *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static struct xrxe_cm_route route_of(struct xrxe_cmh_owner *o)
{
	struct xrxe_cm_route r;

	xrxe_cm_query(o->id, &r);
	return r;
}

static const char *ib_state(struct xrxe_cmh_owner *o)
{
	static struct xrxe_cm_id_info in;

	if (!xrxe_cmh_info(o, &in))
		return "(gone)";
	return in.ib_state;
}

static uint32_t local_comm_id(struct xrxe_cmh_owner *o);

static int bind_new_ud(int host, struct xrxe_cm_addr a, struct xrxe_cmh_owner **out)
{
	cr_assert_eq(xrxe_cmh_create_id(H(host), RDMA_PS_UDP, IBV_QPT_UD, out), 0);
	return xrxe_cm_bind(H(host)->cm, (*out)->id, &a);
}

static struct xrxe_cmh_owner *make_listener(int host, uint32_t ps, enum ibv_qp_type t,
					    struct xrxe_cm_addr a, int backlog)
{
	struct xrxe_cmh_owner *l;

	cr_assert_eq(xrxe_cmh_create_id(H(host), ps, t, &l), 0);
	cr_assert_eq(xrxe_cm_bind(H(host)->cm, l->id, &a), 0);
	cr_assert_eq(xrxe_cm_listen(H(host)->cm, l->id, backlog), 0);
	return l;
}

/* An ID on host that resolved `to`:port of family (ADDR_RESOLVED and
 * ROUTE_RESOLVED taken). */
static struct xrxe_cmh_owner *make_active(int host, int to, int fam, uint32_t ps,
					  enum ibv_qp_type t, uint16_t port)
{
	struct xrxe_cmh_owner *a;
	struct xrxe_cmh_event *e;
	union ibv_gid sg, dg;
	struct xrxe_cm_addr s = xrxe_cmh_addr(H(host), fam, 0), d = xrxe_cmh_addr(H(to), fam, port);

	cr_assert_eq(xrxe_cmh_create_id(H(host), ps, t, &a), 0);
	cr_assert_eq(xrxe_cmh_resolve(a, H(to), fam, port), 0);
	e = expect_ev(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	cr_assert(addr_eq(&e->ev.route.dst, &d));
	e = expect_ev(a, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	xrxe_cmh_gid(&s, &sg);
	xrxe_cmh_gid(&d, &dg);
	cr_assert_eq(e->ev.route.src.family, fam);
	cr_assert_eq(memcmp(e->ev.route.src.addr, s.addr, 16), 0);
	cr_assert_geq(ntohs(e->ev.route.src.port), 32768, "an ephemeral port");
	cr_assert(gid_eq(&e->ev.route.sgid, &sg));
	cr_assert(gid_eq(&e->ev.route.dgid, &dg));
	cr_assert_eq(e->ev.route.num_paths, 1);
	cr_assert_eq(e->ev.route.path.mtu, IBV_MTU_1024);
	cr_assert_eq(e->ev.route.path.pkey, htobe16(0xffff));
	cr_assert_eq(e->ev.route.path.hop_limit, 64);
	cr_assert(gid_eq(&e->ev.route.path.sgid, &sg));
	cr_assert(gid_eq(&e->ev.route.path.dgid, &dg));
	return a;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static struct xrxe_cm_conn_param param(uint32_t qpn, uint8_t resp, uint8_t init, uint8_t retry,
				       uint8_t rnr, uint8_t priv_seed, uint8_t priv_len)
{
	struct xrxe_cm_conn_param p = {
		.qp_num = qpn,
		.responder_resources = resp,
		.initiator_depth = init,
		.retry_count = retry,
		.rnr_retry_count = rnr,
		.private_data_len = priv_len,
	};

	fill(p.private_data, priv_len, priv_seed);
	return p;
}

/* A connection A -> B, established, everything checked on the way. */
struct conn {
	int fam;
	uint16_t port;
	struct xrxe_cmh_owner *l, *a, *b;
	struct xrxe_cm_conn_param ap, bp;
};

static void conn_request(struct conn *c, int fam, uint16_t port)
{
	struct xrxe_cmh_event *e;
	struct xrxe_cm_route ar;
	uint64_t nreq = h.sent_by[A][XRXE_CM_ATTR_REQ];

	memset(c, 0, sizeof(*c));
	c->fam = fam;
	c->port = port;
	c->l = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC, xrxe_cmh_addr(H(B), fam, port), 8);
	c->a = make_active(A, B, fam, RDMA_PS_TCP, IBV_QPT_RC, port);
	/* one QP per connection: a QPN already connected is a stale
	 * connection (IBA 12.9.8.3.1) */
	c->ap = param(0x000123 + (uint32_t)(port - 7174) * 0x1000, 4, 2, 6, 5, 0x11, 56);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, c->a->id, &c->ap, NULL, h.now), 0);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], nreq + 1);
	xrxe_cmh_flush(&h);
	cr_assert_eq(children_of(c->l), 1);
	c->b = child_of(c->l, 0);
	e = expect_ev(c->b, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	cr_assert_eq(e->listener, c->l, "CONNECT_REQUEST names the listener's owner");
	cr_assert(e->ev.flags & XRXE_CM_EV_CONN);
	/* what follows the 36-byte cma header: the whole 56-byte field */
	cr_assert_eq(e->ev.param.conn.private_data_len, 56);
	cr_assert_eq(memcmp(e->ev.param.conn.private_data, c->ap.private_data, 56), 0);
	cr_assert_eq(e->ev.param.conn.qp_num, c->ap.qp_num);
	/* seen from B: A's initiator depth is what B must answer reads for */
	cr_assert_eq(e->ev.param.conn.responder_resources, 2);
	cr_assert_eq(e->ev.param.conn.initiator_depth, 4);
	cr_assert_eq(e->ev.param.conn.retry_count, 6);
	cr_assert_eq(e->ev.param.conn.rnr_retry_count, 5);
	cr_assert_eq(e->ev.param.conn.qp_type, IBV_QPT_RC);
	/* the route from B's side */
	ar = route_of(c->a);
	{
		struct xrxe_cm_addr bs = xrxe_cmh_addr(H(B), fam, port);
		union ibv_gid ag, bg;

		cr_assert(addr_eq(&e->ev.route.src, &bs));
		cr_assert(addr_eq(&e->ev.route.dst, &ar.src), "the active side's address and port");
		xrxe_cmh_gid(&bs, &bg);
		xrxe_cmh_gid(&ar.src, &ag);
		cr_assert(gid_eq(&e->ev.route.sgid, &bg));
		cr_assert(gid_eq(&e->ev.route.dgid, &ag));
		cr_assert_eq(e->ev.route.num_paths, 1);
		cr_assert_eq(e->ev.route.path.mtu, IBV_MTU_1024);
	}
	expect_none(c->l);
	expect_none(c->a);
}

static void conn_accept(struct conn *c)
{
	struct xrxe_cmh_event *e;

	c->bp = param(0x000456 + (uint32_t)(c->port - 7174) * 0x1000, 2, 3, 7, 3, 0x77, 196);
	cr_assert_eq(xrxe_cm_accept(H(B)->cm, c->b->id, &c->bp, NULL, 0, h.now), 0);
	xrxe_cmh_flush(&h);
	e = expect_ev(c->a, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	cr_assert(e->ev.flags & XRXE_CM_EV_CONN);
	cr_assert_eq(e->ev.param.conn.private_data_len, 196);
	cr_assert_eq(memcmp(e->ev.param.conn.private_data, c->bp.private_data, 196), 0);
	cr_assert_eq(e->ev.param.conn.qp_num, c->bp.qp_num);
	cr_assert_eq(e->ev.param.conn.responder_resources, 3, "B's initiator depth");
	cr_assert_eq(e->ev.param.conn.initiator_depth, 2, "B's responder resources");
	cr_assert_eq(e->ev.param.conn.rnr_retry_count, 3, "the REP's RNR retry count");
	expect_none(c->b);
}

/* INIT / RTR / RTS of both sides fit together. */
static void check_qp_attrs(struct conn *c)
{
	struct ibv_qp_attr ai, ar, as, bi, br, bs;
	int mai, mar, mas, mbi, mbr, mbs;
	union ibv_gid ag, bg;
	struct xrxe_cm_route ra = route_of(c->a), rb = route_of(c->b);
	uint8_t gidx = c->fam == AF_INET ? 1 : 2;
	uint32_t fl;

	cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, c->a->id, IBV_QPS_INIT, &ai, &mai), 0);
	cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, c->a->id, IBV_QPS_RTR, &ar, &mar), 0);
	cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, c->a->id, IBV_QPS_RTS, &as, &mas), 0);
	cr_assert_eq(xrxe_cm_init_qp_attr(H(B)->cm, c->b->id, IBV_QPS_INIT, &bi, &mbi), 0);
	cr_assert_eq(xrxe_cm_init_qp_attr(H(B)->cm, c->b->id, IBV_QPS_RTR, &br, &mbr), 0);
	cr_assert_eq(xrxe_cm_init_qp_attr(H(B)->cm, c->b->id, IBV_QPS_RTS, &bs, &mbs), 0);

	/* INIT: remote write, reads and atomics with responder resources */
	for (int s = 0; s < 2; s++) {
		struct ibv_qp_attr *i = s ? &bi : &ai;
		int m = s ? mbi : mai;

		cr_expect_eq(m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		cr_expect_eq(i->qp_state, IBV_QPS_INIT);
		cr_expect_eq(i->port_num, 1);
		cr_expect_eq(i->pkey_index, 0);
		cr_expect_eq(i->qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
							 IBV_ACCESS_REMOTE_ATOMIC);
	}
	/* RTR */
	cr_expect_eq(mar, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	cr_expect_eq(mbr, mar);
	cr_expect_eq(ar.dest_qp_num, c->bp.qp_num);
	cr_expect_eq(br.dest_qp_num, c->ap.qp_num);
	cr_expect_eq(ar.path_mtu, IBV_MTU_1024);
	cr_expect_eq(br.path_mtu, IBV_MTU_1024);
	cr_expect_lt(ar.rq_psn, 1u << 24);
	cr_expect_lt(br.rq_psn, 1u << 24);
	/* each side receives from the PSN the other sends from */
	cr_expect_eq(ar.rq_psn, bs.sq_psn);
	cr_expect_eq(br.rq_psn, as.sq_psn);
	cr_expect_neq(ar.rq_psn, br.rq_psn, "each side draws its own");
	/* reads: B takes A's initiator depth, A takes B's */
	cr_expect_eq(br.max_dest_rd_atomic, c->bp.responder_resources);
	cr_expect_eq(bs.max_rd_atomic, c->bp.initiator_depth);
	cr_expect_eq(ar.max_dest_rd_atomic, bs.max_rd_atomic);
	cr_expect_eq(as.max_rd_atomic, br.max_dest_rd_atomic);
	/* the AV: GIDs of both, the device's GID index of our own */
	xrxe_cmh_gid(&ra.src, &ag);
	xrxe_cmh_gid(&rb.src, &bg);
	cr_expect_eq(ar.ah_attr.is_global, 1);
	cr_expect_eq(br.ah_attr.is_global, 1);
	cr_expect(gid_eq(&ar.ah_attr.grh.dgid, &bg));
	cr_expect(gid_eq(&br.ah_attr.grh.dgid, &ag));
	cr_expect_eq(ar.ah_attr.grh.sgid_index, gidx);
	cr_expect_eq(br.ah_attr.grh.sgid_index, gidx);
	cr_expect_eq(ar.ah_attr.grh.hop_limit, 64);
	cr_expect_eq(br.ah_attr.grh.hop_limit, 64);
	cr_expect_eq(ar.ah_attr.port_num, 1);
	cr_expect_eq(br.ah_attr.port_num, 1);
	/* one flow label both ways, the kernel's hash of the IP ports (the
	 * RoCE UDP source port follows from it) */
	fl = ((uint32_t)ntohs(ra.src.port) * 31 + ntohs(ra.dst.port)) & 0xfffff;
	cr_expect_eq(ar.ah_attr.grh.flow_label, fl, "A's flow label %#x, want %#x",
		     ar.ah_attr.grh.flow_label, fl);
	cr_expect_eq(br.ah_attr.grh.flow_label, fl, "B's flow label %#x, want %#x",
		     br.ah_attr.grh.flow_label, fl);
	/* RTS */
	cr_expect_eq(mas, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	cr_expect_eq(mbs, mas);
	cr_expect_eq(as.timeout, K_ACK_TIMEOUT);
	cr_expect_eq(bs.timeout, K_ACK_TIMEOUT);
	/* transport retries: the REQ's count on both; RNR retries: each side
	 * uses what the other's message asked for (IBA 12.7.26, 12.7.28) */
	cr_expect_eq(as.retry_cnt, c->ap.retry_count);
	cr_expect_eq(bs.retry_cnt, c->ap.retry_count);
	cr_expect_eq(as.rnr_retry, c->bp.rnr_retry_count, "A: the REP's RNR retry count");
	cr_expect_eq(bs.rnr_retry, c->ap.rnr_retry_count, "B: the REQ's RNR retry count");
}

static void conn_establish(struct conn *c)
{
	cr_assert_eq(xrxe_cm_establish(H(A)->cm, c->a->id, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(c->b, RDMA_CM_EVENT_ESTABLISHED, 0);
	expect_none(c->a);
	cr_assert_str_eq(ib_state(c->a), "established");
	cr_assert_str_eq(ib_state(c->b), "established");
}

static void conn_up(struct conn *c, int fam, uint16_t port)
{
	conn_request(c, fam, port);
	conn_accept(c);
	conn_establish(c);
}

/* x disconnects, y answers: DREQ -> DISCONNECTED on y, DREP ->
 * DISCONNECTED on x, TimeWait on both. */
static void conn_down(struct xrxe_cmh_owner *x, struct xrxe_cmh_owner *y)
{
	unsigned dreq = h.sent_by[x->host->idx][XRXE_CM_ATTR_DREQ];
	unsigned drep = h.sent_by[y->host->idx][XRXE_CM_ATTR_DREP];

	cr_assert_eq(xrxe_cm_disconnect(x->host->cm, x->id, h.now), 0);
	cr_assert_eq(h.sent_by[x->host->idx][XRXE_CM_ATTR_DREQ], dreq + 1);
	xrxe_cmh_flush(&h);
	expect_ev(y, RDMA_CM_EVENT_DISCONNECTED, 0);
	expect_none(x);
	cr_assert_str_eq(ib_state(x), "dreq_sent");
	cr_assert_str_eq(ib_state(y), "dreq_rcvd");
	/* the application answers (rdma_disconnect), as rping does */
	cr_assert_eq(xrxe_cm_disconnect(y->host->cm, y->id, h.now), 0);
	cr_assert_eq(h.sent_by[y->host->idx][XRXE_CM_ATTR_DREP], drep + 1);
	xrxe_cmh_flush(&h);
	expect_ev(x, RDMA_CM_EVENT_DISCONNECTED, 0);
	expect_none(y);
	cr_assert_str_eq(ib_state(x), "timewait");
	cr_assert_str_eq(ib_state(y), "timewait");
}

/* ---- 1. connect, accept, establish, disconnect ------------------------------- */

static void rc_lifecycle(int fam, bool active_disconnects)
{
	struct conn c;
	struct xrxe_cm_id_info ia, ib;
	struct xrxe_cmh_owner *x, *y;
	uint64_t t_down;

	conn_request(&c, fam, 7174);
	cr_assert(xrxe_cmh_info(c.l, &ia));
	cr_assert_eq(ia.pending, 1);
	conn_accept(&c);
	cr_assert(xrxe_cmh_info(c.l, &ia));
	cr_assert_eq(ia.pending, 0, "an accepted request is no longer pending");
	check_qp_attrs(&c);
	conn_establish(&c);
	check_qp_attrs(&c);

	/* the two ends name each other */
	cr_assert(xrxe_cmh_info(c.a, &ia));
	cr_assert(xrxe_cmh_info(c.b, &ib));
	cr_assert_eq(ia.remote_comm_id, ib.local_comm_id);
	cr_assert_eq(ib.remote_comm_id, ia.local_comm_id);
	cr_assert_neq(ia.local_comm_id, 0);
	cr_assert_eq(ia.local_qpn, 0x123);
	cr_assert_eq(ia.remote_qpn, 0x456);
	cr_assert_eq(ib.local_qpn, 0x456);
	cr_assert_eq(ib.remote_qpn, 0x123);
	cr_assert_eq(ia.service_id, 0x0000000001061c06ull, "RDMA_PS_TCP, port 7174");
	cr_assert_eq(ib.service_id, ia.service_id);
	/* one transaction ID for REQ, REP and RTU */
	{
		struct xrxe_cm_msg q, p, u;

		cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REQ), &q), 0);
		cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, B, XRXE_CM_ATTR_REP), &p), 0);
		cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_RTU), &u), 0);
		cr_expect_eq(p.hdr.tid, q.hdr.tid);
		cr_expect_eq(u.hdr.tid, q.hdr.tid);
	}

	x = active_disconnects ? c.a : c.b;
	y = active_disconnects ? c.b : c.a;
	t_down = h.now;
	conn_down(x, y);
	{
		struct xrxe_cm_msg q, d, r;

		cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REQ), &q), 0);
		cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, x->host->idx, XRXE_CM_ATTR_DREQ), &d), 0);
		cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, y->host->idx, XRXE_CM_ATTR_DREP), &r), 0);
		/* the kernel's TIDs: the active side's DREQ keeps its REQ's, the
		 * passive side's is its own; the DREP echoes the DREQ's */
		if (active_disconnects)
			cr_expect_eq(d.hdr.tid, q.hdr.tid);
		else
			cr_expect_neq(d.hdr.tid, q.hdr.tid);
		cr_expect_eq(r.hdr.tid, d.hdr.tid);
		cr_expect_eq(d.dreq.remote_qpn, active_disconnects ? 0x456u : 0x123u,
			     "DREQ names the receiver's QP");
	}

	/* TimeWait ends after the Local ACK Timeout, not before */
	cr_assert_eq(xrxe_cmh_next_deadline(&h), t_down + timewait_ns());
	xrxe_cmh_run_until(&h, t_down + timewait_ns() - 1);
	expect_none(c.a);
	expect_none(c.b);
	xrxe_cmh_run_until(&h, t_down + timewait_ns());
	expect_ev(c.a, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	expect_ev(c.b, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	cr_assert_eq(xrxe_cmh_next_deadline(&h), UINT64_MAX, "nothing left to do");

	/* the IDs are the owners' until they destroy them */
	cr_assert_eq(xrxe_cmh_stats(H(A)).ids, 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 2);
	xrxe_cmh_destroy_id(c.a);
	xrxe_cmh_destroy_id(c.b);
	xrxe_cmh_destroy_id(c.l);
	for (int i = A; i <= B; i++) {
		struct xrxe_cm_stats st = xrxe_cmh_stats(H(i));

		cr_assert_eq(st.ids, 0);
		cr_assert_eq(st.detached, 0);
		cr_assert_eq(st.listeners, 0);
		cr_assert_eq(st.timeouts, 0);
		cr_assert_eq(st.mad_resent, 0);
		cr_assert_eq(st.drop_unknown_id + st.drop_bad_state + st.drop_duplicate, 0);
	}
	cr_assert_eq(h.sent, 5, "REQ, REP, RTU, DREQ, DREP");
	cr_assert_eq(h.delivered, 5);
	cr_assert_eq(h.sent, xrxe_cmh_stats(H(A)).mad_sent + xrxe_cmh_stats(H(B)).mad_sent);
	no_faults();
}

TestSuite(cm_conn, .init = setup, .fini = teardown);

Test(cm_conn, rc_ipv4_active_disconnects)
{
	rc_lifecycle(AF_INET, true);
}

Test(cm_conn, rc_ipv4_passive_disconnects)
{
	rc_lifecycle(AF_INET, false);
}

Test(cm_conn, rc_ipv6_active_disconnects)
{
	rc_lifecycle(AF_INET6, true);
}

Test(cm_conn, rc_ipv6_passive_disconnects)
{
	rc_lifecycle(AF_INET6, false);
}

/* Destroyed in TimeWait: gone from the owner at once, freed when TimeWait
 * ends; no TIMEWAIT_EXIT for it. */
Test(cm_conn, destroy_during_timewait_frees_everything)
{
	struct conn c;
	uint64_t t;

	conn_up(&c, AF_INET, 7174);
	t = h.now;
	conn_down(c.a, c.b);
	xrxe_cmh_destroy_id(c.a);
	xrxe_cmh_destroy_id(c.b);
	xrxe_cmh_destroy_id(c.l);
	for (int i = A; i <= B; i++) {
		cr_assert_eq(xrxe_cmh_stats(H(i)).ids, 0);
		cr_assert_eq(xrxe_cmh_stats(H(i)).detached, 1, "host %d: lives on in TimeWait", i);
	}
	xrxe_cmh_run_until(&h, t + timewait_ns());
	for (int i = A; i <= B; i++) {
		cr_assert_eq(xrxe_cmh_stats(H(i)).ids, 0);
		cr_assert_eq(xrxe_cmh_stats(H(i)).detached, 0, "host %d: freed after TimeWait", i);
	}
	cr_assert_eq(xrxe_cmh_next_deadline(&h), UINT64_MAX);
	cr_assert_eq(c.a->nev, c.a->next, "no event after destroy");
	no_faults();
}

/* Both ends disconnect at once (the kernel's frames 188-193 show it): each
 * answers the other's DREQ, each sees DISCONNECTED once. */
Test(cm_conn, crossing_dreqs)
{
	struct conn c;

	conn_up(&c, AF_INET6, 7174);
	cr_assert_eq(xrxe_cm_disconnect(H(A)->cm, c.a->id, h.now), 0);
	cr_assert_eq(xrxe_cm_disconnect(H(B)->cm, c.b->id, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(c.a, RDMA_CM_EVENT_DISCONNECTED, 0);
	expect_ev(c.b, RDMA_CM_EVENT_DISCONNECTED, 0);
	expect_none(c.a);
	expect_none(c.b);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_DREP], 1);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_DREP], 1);
	cr_assert_str_eq(ib_state(c.a), "timewait");
	cr_assert_str_eq(ib_state(c.b), "timewait");
	/* the DREP each gets in TimeWait is a repeat */
	cr_assert_eq(xrxe_cmh_stats(H(A)).drop_duplicate, 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_duplicate, 1);
	/* disconnecting again is harmless */
	cr_assert_eq(xrxe_cm_disconnect(H(A)->cm, c.a->id, h.now), 0);
	xrxe_cmh_advance(&h, 60 * SEC);
	expect_ev(c.a, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	expect_ev(c.b, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	cr_assert_eq(h.sent, 7, "REQ REP RTU, two DREQs, two DREPs; no retransmission");
	no_faults();
}

/* rdma_notify(COMM_EST): the first packet stands in for a lost RTU (IBA
 * 12.9.8.2.2); the late RTU is then a duplicate. */
Test(cm_conn, comm_est_before_rtu)
{
	struct conn c;

	conn_request(&c, AF_INET, 7174);
	conn_accept(&c);
	xrxe_cmh_rule(&h, A, XRXE_CM_ATTR_RTU, 0, 1, XRXE_CMH_HOLD);
	cr_assert_eq(xrxe_cm_establish(H(A)->cm, c.a->id, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_none(c.b);
	cr_assert_eq(xrxe_cm_notify(H(B)->cm, c.b->id, IBV_EVENT_COMM_EST, h.now), 0);
	expect_ev(c.b, RDMA_CM_EVENT_ESTABLISHED, 0);
	xrxe_cmh_release(&h, false);
	xrxe_cmh_flush(&h);
	expect_none(c.b);
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_duplicate, 1);
	/* and the REP is not sent again */
	xrxe_cmh_advance(&h, 60 * SEC);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REP], 1);
	no_faults();
}

/* An MRA (IBA 12.6.6) stretches the wait: the REQ is not resent before the
 * service timeout the peer asked for. */
Test(cm_conn, mra_delays_the_retry)
{
	struct conn c;
	struct xrxe_cm_id_info in;
	struct xrxe_cm_msg m = { 0 };
	uint8_t mad[XRXE_MAD_SIZE];
	uint64_t t0;

	conn_request(&c, AF_INET, 7174);
	cr_assert(xrxe_cmh_info(c.a, &in));
	t0 = h.now;
	m.hdr.base_version = 1;
	m.hdr.mgmt_class = XRXE_MGMT_CLASS_CM;
	m.hdr.class_version = 2;
	m.hdr.method = XRXE_MAD_METHOD_SEND;
	m.hdr.attr_id = XRXE_CM_ATTR_MRA;
	m.mra.local_comm_id = 0x1234;
	m.mra.remote_comm_id = in.local_comm_id;
	m.mra.message_mraed = XRXE_CM_REF_REQ;
	m.mra.service_timeout = 24; /* 68.7 s */
	cr_assert_eq(xrxe_cm_mad_build(&m, mad), 0);
	xrxe_cmh_inject(&h, B, A, AF_INET, mad, sizeof(mad));
	cr_assert_str_eq(ib_state(c.a), "mra_req_rcvd");
	xrxe_cmh_run_until(&h, t0 + iba_ns(24));
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 1, "no REQ again during the service timeout");
	/* the REP still completes it */
	conn_accept(&c);
	conn_establish(&c);
	no_faults();
}

/* ECE (rdma_set_local_ece / rdma_get_remote_ece): options in the attribute
 * modifier, the vendor ID in the REQ's and REP's own field, each side told
 * the other's. */
Test(cm_conn, ece_both_ways)
{
	struct xrxe_cmh_owner *l = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC,
						 xrxe_cmh_any(AF_INET, 7174), 8);
	struct xrxe_cmh_owner *a = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7174);
	struct xrxe_cm_conn_param p = param(0x31, 1, 1, 7, 7, 0, 0);
	struct xrxe_cm_ece ea = { .vendor_id = 0x15b3, .options = 0xabcd0001 };
	struct xrxe_cm_ece eb = { .vendor_id = 0x0002c9, .options = 0x00000003 };
	struct xrxe_cmh_event *e;
	struct xrxe_cm_msg q, r;

	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, &ea, h.now), 0);
	xrxe_cmh_flush(&h);
	e = expect_ev(child_of(l, 0), RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	cr_assert(e->ev.flags & XRXE_CM_EV_ECE);
	cr_assert_eq(e->ev.ece.vendor_id, ea.vendor_id);
	cr_assert_eq(e->ev.ece.options, ea.options);
	p.qp_num = 0x32;
	cr_assert_eq(xrxe_cm_accept(H(B)->cm, child_of(l, 0)->id, &p, &eb, 0, h.now), 0);
	xrxe_cmh_flush(&h);
	e = expect_ev(a, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	cr_assert(e->ev.flags & XRXE_CM_EV_ECE);
	cr_assert_eq(e->ev.ece.vendor_id, eb.vendor_id);
	cr_assert_eq(e->ev.ece.options, eb.options);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REQ), &q), 0);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, B, XRXE_CM_ATTR_REP), &r), 0);
	cr_assert_eq(q.hdr.attr_mod, ea.options);
	cr_assert_eq(q.req.vendor_id, ea.vendor_id);
	cr_assert_eq(r.hdr.attr_mod, eb.options);
	cr_assert_eq(r.rep.vendor_id, eb.vendor_id);
	no_faults();
}

/* rdma_set_option: TOS goes into the path (the REQ's traffic class), the
 * ACK timeout into the QP; both are inherited by a listener's children. */
Test(cm_conn, options_tos_and_ack_timeout)
{
	struct xrxe_cmh_owner *l, *a;
	struct xrxe_cm_conn_param p = param(0x41, 1, 1, 7, 7, 0, 0);
	struct xrxe_cm_msg q;
	struct ibv_qp_attr at;
	uint8_t tos = 0x68, to = 14;
	int m, bad = 5;

	cr_assert_eq(xrxe_cmh_create_id(H(B), RDMA_PS_TCP, IBV_QPT_RC, &l), 0);
	cr_assert_eq(xrxe_cm_set_option(H(B)->cm, l->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
					&to, 1), 0);
	cr_assert_eq(xrxe_cm_bind(H(B)->cm, l->id, &(struct xrxe_cm_addr){ .family = AF_INET,
								      .port = htons(7174) }), 0);
	cr_assert_eq(xrxe_cm_listen(H(B)->cm, l->id, 1), 0);
	cr_assert_eq(xrxe_cmh_create_id(H(A), RDMA_PS_TCP, IBV_QPT_RC, &a), 0);
	cr_assert_eq(xrxe_cm_set_option(H(A)->cm, a->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1),
		     0);
	cr_assert_eq(xrxe_cm_set_option(H(A)->cm, a->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 4),
		     -EINVAL);
	cr_assert_eq(xrxe_cm_set_option(H(A)->cm, a->id, RDMA_OPTION_ID, 99, &bad, sizeof(bad)),
		     -ENOSYS);
	cr_assert_eq(xrxe_cm_set_option(H(A)->cm, a->id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &bad,
					sizeof(bad)), -EINVAL);
	cr_assert_eq(xrxe_cmh_resolve(a, H(B), AF_INET, 7174), 0);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REQ), &q), 0);
	cr_assert_eq(q.req.primary.traffic_class, tos);
	xrxe_cmh_flush(&h);
	p.qp_num = 0x42;
	cr_assert_eq(xrxe_cm_accept(H(B)->cm, child_of(l, 0)->id, &p, NULL, 0, h.now), 0);
	xrxe_cmh_flush(&h);
	cr_assert_eq(xrxe_cm_init_qp_attr(H(B)->cm, child_of(l, 0)->id, IBV_QPS_RTS, &at, &m), 0);
	cr_assert_eq(at.timeout, to, "the listener's option");
	cr_assert_eq(xrxe_cm_init_qp_attr(H(B)->cm, child_of(l, 0)->id, IBV_QPS_RTR, &at, &m), 0);
	cr_assert_eq(at.ah_attr.grh.traffic_class, tos, "the REQ's path, seen from B");
	cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, a->id, IBV_QPS_RTR, &at, &m), 0);
	cr_assert_eq(at.ah_attr.grh.traffic_class, tos);
	cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, a->id, IBV_QPS_RTS, &at, &m), 0);
	cr_assert_eq(at.timeout, K_ACK_TIMEOUT, "A set none");
	/* before a connection: INIT only, without remote access */
	{
		struct xrxe_cmh_owner *x = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7174);

		cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, x->id, IBV_QPS_INIT, &at, &m), 0);
		cr_assert_eq(m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		cr_assert_eq(at.qp_access_flags, 0);
		cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, x->id, IBV_QPS_RTR, &at, &m), -EINVAL);
		cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, x->id, IBV_QPS_RTS, &at, &m), -EINVAL);
	}
	no_faults();
}

/* Multicast on RoCE: no SA, MULTICAST_JOIN at once with the group's MGID. */
Test(cm_conn, multicast_join_leave)
{
	struct xrxe_cmh_owner *u, *r;
	struct xrxe_cm_addr g4 = { .family = AF_INET }, g6 = { .family = AF_INET6 };
	struct xrxe_cm_addr uni = xrxe_cmh_addr(H(B), AF_INET, 0);
	struct xrxe_cmh_event *e;
	union ibv_gid mgid;

	inet_pton(AF_INET, "239.1.2.3", g4.addr);
	inet_pton(AF_INET6, "ff0e::1234", g6.addr);
	cr_assert_eq(bind_new_ud(A, xrxe_cmh_addr(H(A), AF_INET, 0), &u), 0);
	cr_assert_eq(xrxe_cm_join_mcast(H(A)->cm, u->id, &g4, 0, 0xc00c1e), 0);
	e = expect_ev(u, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	cr_assert_eq(e->ev.mc_cookie, 0xc00c1e);
	cr_assert(e->ev.flags & XRXE_CM_EV_UD);
	xrxe_cmh_gid(&g4, &mgid);
	cr_assert(gid_eq(&e->ev.param.ud.ah_attr.grh.dgid, &mgid), "::ffff:239.1.2.3");
	cr_assert_eq(e->ev.param.ud.ah_attr.grh.sgid_index, 1);
	cr_assert_eq(e->ev.param.ud.qp_num, 0xffffff);
	cr_assert_eq(e->ev.param.ud.qkey, 0x01234567);
	cr_assert_eq(xrxe_cm_join_mcast(H(A)->cm, u->id, &g4, 0, 1), -EADDRINUSE);
	cr_assert_eq(xrxe_cm_join_mcast(H(A)->cm, u->id, &g6, 0, 2), 0);
	expect_ev(u, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	cr_assert_eq(xrxe_cm_join_mcast(H(A)->cm, u->id, &uni, 0, 3), -EINVAL, "not a group");
	cr_assert_eq(xrxe_cm_leave_mcast(H(A)->cm, u->id, &g4), 0);
	cr_assert_eq(xrxe_cm_leave_mcast(H(A)->cm, u->id, &g4), -EADDRNOTAVAIL);
	cr_assert_eq(xrxe_cm_join_mcast(H(A)->cm, u->id, &g4, 0, 4), 0, "again after leaving");
	expect_ev(u, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	/* RC IDs do not join */
	cr_assert_eq(xrxe_cmh_create_id(H(A), RDMA_PS_TCP, IBV_QPT_RC, &r), 0);
	cr_assert_eq(xrxe_cm_bind(H(A)->cm, r->id, &uni), 0);
	cr_assert_eq(xrxe_cm_join_mcast(H(A)->cm, r->id, &g4, 0, 5), -EINVAL);
	xrxe_cmh_destroy_id(u);
	cr_assert_eq(h.sent, 0, "no MAD for multicast on RoCE");
	no_faults();
}

/* The daemon stops: DEVICE_REMOVAL to every ID an owner holds, none to
 * detached ones. Address errors reach the owner; a migrated ID's events go
 * to its new owner. */
Test(cm_conn, device_removal_addr_error_migrate)
{
	struct conn c;
	struct xrxe_cmh_owner *x, *n;
	unsigned before;

	conn_up(&c, AF_INET, 7174);
	cr_assert_eq(xrxe_cmh_create_id(H(A), RDMA_PS_TCP, IBV_QPT_RC, &x), 0);
	cr_assert_eq(xrxe_cm_addr_query(H(A)->cm, x->id), 0);
	xrxe_cm_addr_error(H(A)->cm, x->id, -EHOSTUNREACH);
	expect_ev(x, RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH);
	/* rdma_migrate_id */
	n = xrxe_cmh_owner_new(H(A));
	n->id = c.a->id;
	xrxe_cm_id_set_owner(c.a->id, n);
	c.a->destroyed = true; /* the old owner must hear nothing more */
	c.a = n;
	xrxe_cm_id_destroy(H(B)->cm, c.b->id, h.now);
	c.b->destroyed = true;
	xrxe_cmh_flush(&h);
	expect_ev(n, RDMA_CM_EVENT_DISCONNECTED, 0);
	before = xrxe_cmh_stats(H(B)).detached;
	cr_assert_eq(before, 1);
	xrxe_cm_device_removal(H(A)->cm);
	xrxe_cm_device_removal(H(B)->cm);
	expect_ev(n, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	expect_ev(x, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	expect_ev(c.l, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	no_faults();
}

/* `xrxe cm`'s counters: one name per counter, the values as counted. */
static void count_fn(void *arg, const char *name, uint64_t value)
{
	struct {
		unsigned n;
		uint64_t sent_req, rcvd_rep, drop_truncated, ids;
		char names[64][48];
	} *c = arg;

	for (unsigned i = 0; i < c->n; i++)
		cr_assert_str_neq(c->names[i], name, "%s twice", name);
	cr_assert_lt(c->n, 64);
	snprintf(c->names[c->n++], sizeof(c->names[0]), "%s", name);
	if (!strcmp(name, "sent_req"))
		c->sent_req = value;
	if (!strcmp(name, "rcvd_rep"))
		c->rcvd_rep = value;
	if (!strcmp(name, "drop_truncated"))
		c->drop_truncated = value;
	if (!strcmp(name, "ids"))
		c->ids = value;
}

Test(cm_conn, stats_names)
{
	struct conn c;
	struct {
		unsigned n;
		uint64_t sent_req, rcvd_rep, drop_truncated, ids;
		char names[64][48];
	} cnt = { 0 };
	struct xrxe_cm_stats st;
	uint8_t junk[10] = { 0 };

	conn_up(&c, AF_INET, 7174);
	xrxe_cmh_inject(&h, B, A, AF_INET, junk, sizeof(junk));
	st = xrxe_cmh_stats(H(A));
	xrxe_cm_stats_foreach(&st, count_fn, &cnt);
	cr_assert_eq(cnt.sent_req, 1);
	cr_assert_eq(cnt.rcvd_rep, 1);
	cr_assert_eq(cnt.drop_truncated, 1);
	cr_assert_eq(cnt.ids, 1);
	cr_assert_geq(cnt.n, 7 + 22 + 6 + 7);
	no_faults();
}

/* ---- 2. REJ ---------------------------------------------------------------------- */

TestSuite(cm_rej, .init = setup, .fini = teardown);

/* Nobody listens: the kernel's answer, REJ "invalid service ID" (8) with no
 * comm ID of ours (rxe-cm.pcap frame 119). */
Test(cm_rej, nobody_listens)
{
	struct xrxe_cmh_owner *l = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC,
						 xrxe_cmh_addr(H(B), AF_INET, 7174), 8);
	struct xrxe_cmh_owner *a = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7175);
	struct xrxe_cm_conn_param p = param(0x42, 1, 1, 7, 7, 1, 10);
	struct xrxe_cmh_event *e;
	struct xrxe_cm_msg q, j;

	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	e = expect_ev(a, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_INVALID_SERVICE_ID);
	cr_assert(e->ev.flags & XRXE_CM_EV_CONN);
	cr_assert_eq(children_of(l), 0);
	cr_assert_eq(H(B)->new_child_calls, 0);
	cr_assert_eq(xrxe_cmh_stats(H(B)).rej_no_listener, 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 1, "the listener only: nothing kept");
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REQ), &q), 0);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, B, XRXE_CM_ATTR_REJ), &j), 0);
	cr_assert_eq(j.hdr.tid, q.hdr.tid);
	cr_assert_eq(j.rej.local_comm_id, 0);
	cr_assert_eq(j.rej.remote_comm_id, q.req.local_comm_id);
	cr_assert_eq(j.rej.message_rejected, XRXE_CM_REF_REQ);
	/* no retry: the REQ was answered */
	xrxe_cmh_advance(&h, 120 * SEC);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 1);
	expect_none(a);
	cr_assert_str_eq(ib_state(a), "idle");
	/* a port space nobody listens in either */
	{
		struct xrxe_cmh_owner *u = make_active(A, B, AF_INET, RDMA_PS_IB, IBV_QPT_RC, 7174);

		cr_assert_eq(xrxe_cm_connect(H(A)->cm, u->id, &p, NULL, h.now), 0);
		xrxe_cmh_flush(&h);
		expect_ev(u, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_INVALID_SERVICE_ID);
	}
	cr_assert_eq(xrxe_cmh_stats(H(B)).rej_no_listener, 2);
	no_faults();
}

/* rdma_reject with private data: REJ "consumer defined" (28) carrying it. */
Test(cm_rej, application_rejects)
{
	struct conn c;
	struct xrxe_cmh_event *e;
	struct xrxe_cm_id_info in;
	static const char why[] = "go away, come back later";

	conn_request(&c, AF_INET6, 7174);
	{
		uint8_t big[XRXE_CM_REJ_PRIVATE + 1] = { 0 };

		cr_assert_eq(xrxe_cm_reject(H(B)->cm, c.b->id, 0, big, sizeof(big), h.now), -EINVAL,
			     "more than a REJ holds");
		cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REJ], 0);
	}
	cr_assert_eq(xrxe_cm_reject(H(B)->cm, c.b->id, 0, why, sizeof(why), h.now), 0);
	xrxe_cmh_flush(&h);
	e = expect_ev(c.a, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	cr_assert(e->ev.flags & XRXE_CM_EV_CONN);
	cr_assert_eq(e->ev.param.conn.private_data_len, XRXE_CM_REJ_PRIVATE);
	cr_assert_eq(memcmp(e->ev.param.conn.private_data, why, sizeof(why)), 0);
	cr_assert_eq(e->ev.param.conn.private_data[sizeof(why)], 0);
	cr_assert(xrxe_cmh_info(c.l, &in));
	cr_assert_eq(in.pending, 0);
	/* the rejected child is the owner's to destroy; rejecting twice is
	 * refused */
	cr_assert_eq(xrxe_cm_reject(H(B)->cm, c.b->id, 0, NULL, 0, h.now), -EINVAL);
	cr_assert_eq(xrxe_cm_accept(H(B)->cm, c.b->id, &c.ap, NULL, 0, h.now), -EINVAL);
	xrxe_cmh_destroy_id(c.b);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).detached, 0);
	xrxe_cmh_advance(&h, 120 * SEC);
	cr_assert_eq(h.sent, 2, "REQ and REJ, nothing more");
	expect_none(c.a);
	no_faults();
}

/* listen(backlog 2): two requests wait, the third is refused; once one is
 * accepted there is room again. */
Test(cm_rej, backlog)
{
	struct xrxe_cmh_owner *l = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC,
						 xrxe_cmh_any(AF_INET, 7174), 2);
	struct xrxe_cmh_owner *a[4];
	struct xrxe_cm_conn_param p = param(0x100, 1, 1, 7, 7, 3, 8);
	struct xrxe_cm_id_info in;

	for (int i = 0; i < 3; i++) {
		a[i] = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7174);
		p.qp_num = 0x100 + (uint32_t)i;
		cr_assert_eq(xrxe_cm_connect(H(A)->cm, a[i]->id, &p, NULL, h.now), 0);
		xrxe_cmh_flush(&h);
	}
	cr_assert_eq(children_of(l), 2);
	expect_ev(child_of(l, 0), RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	expect_ev(child_of(l, 1), RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	expect_none(a[0]);
	expect_none(a[1]);
	expect_ev(a[2], RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	cr_assert_eq(xrxe_cmh_stats(H(B)).rej_backlog, 1);
	cr_assert(xrxe_cmh_info(l, &in));
	cr_assert_eq(in.pending, 2);
	cr_assert_eq(in.backlog, 2);

	cr_assert_eq(xrxe_cm_accept(H(B)->cm, child_of(l, 0)->id, &p, NULL, 0, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(a[0], RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	cr_assert(xrxe_cmh_info(l, &in));
	cr_assert_eq(in.pending, 1);
	a[3] = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7174);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a[3]->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	cr_assert_eq(children_of(l), 3);
	expect_ev(child_of(l, 2), RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	expect_none(a[3]);
	cr_assert_eq(xrxe_cmh_stats(H(B)).rej_backlog, 1);
	/* rdma_listen again changes the backlog */
	cr_assert_eq(xrxe_cm_listen(H(B)->cm, l->id, 5), 0);
	cr_assert(xrxe_cmh_info(l, &in));
	cr_assert_eq(in.backlog, 5);
	no_faults();
}

/* new_child has no resources (the daemon could not make an object). */
Test(cm_rej, no_owner_for_the_child)
{
	struct xrxe_cmh_owner *l = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC,
						 xrxe_cmh_any(AF_INET6, 7174), 8);
	struct xrxe_cmh_owner *a = make_active(A, B, AF_INET6, RDMA_PS_TCP, IBV_QPT_RC, 7174);
	struct xrxe_cm_conn_param p = param(0x100, 1, 1, 7, 7, 3, 8);

	H(B)->refuse_children = true;
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	cr_assert_eq(H(B)->new_child_calls, 1);
	expect_ev(a, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	expect_none(l);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).detached, 0);
	no_faults();
}

/* ---- 3. loss ----------------------------------------------------------------------- */

TestSuite(cm_loss, .init = setup, .fini = teardown);

Test(cm_loss, req_lost)
{
	struct conn c;
	struct xrxe_cmh_owner *l, *a;
	struct xrxe_cm_conn_param p = param(0x123, 4, 2, 6, 5, 0x11, 56);
	uint64_t t0;

	l = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC, xrxe_cmh_addr(H(B), AF_INET, 7174), 8);
	a = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7174);
	xrxe_cmh_rule(&h, A, XRXE_CM_ATTR_REQ, 0, 1, XRXE_CMH_DROP);
	t0 = h.now;
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	cr_assert_eq(children_of(l), 0);
	cr_assert_eq(xrxe_cmh_next_deadline(&h), t0 + try_ns());
	xrxe_cmh_run_until(&h, t0 + try_ns() - 1);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 1);
	xrxe_cmh_run_until(&h, t0 + try_ns());
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 2, "resent after one timeout");
	cr_assert_eq(xrxe_cmh_stats(H(A)).mad_resent, 1);
	cr_assert_eq(children_of(l), 1);
	memset(&c, 0, sizeof(c));
	c.fam = AF_INET;
	c.port = 7174;
	c.l = l;
	c.a = a;
	c.ap = p;
	c.b = child_of(l, 0);
	expect_ev(c.b, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	conn_accept(&c);
	conn_establish(&c);
	xrxe_cmh_advance(&h, 100 * SEC);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 2);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REP], 1);
	no_faults();
}

/* The REP is lost: the REQ's retry makes B say it again -- not a second
 * CONNECT_REQUEST. */
Test(cm_loss, rep_lost)
{
	struct conn c;
	uint64_t t0 = h.now;

	conn_request(&c, AF_INET, 7174);
	/* the application takes a second to accept, so B's own REP timer is
	 * later than A's REQ timer */
	xrxe_cmh_advance(&h, 1 * SEC);
	xrxe_cmh_rule(&h, B, XRXE_CM_ATTR_REP, 0, 1, XRXE_CMH_DROP);
	c.bp = param(0x456, 2, 3, 7, 3, 0x77, 196);
	cr_assert_eq(xrxe_cm_accept(H(B)->cm, c.b->id, &c.bp, NULL, 0, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_none(c.a);
	xrxe_cmh_run_until(&h, t0 + try_ns());
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 2);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REP], 2, "the repeated REQ is answered");
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_duplicate, 1);
	cr_assert_eq(H(B)->new_child_calls, 1);
	cr_assert_eq(children_of(c.l), 1);
	expect_none(c.b);
	expect_ev(c.a, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	expect_none(c.a);
	conn_establish(&c);
	xrxe_cmh_advance(&h, 100 * SEC);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REP], 2);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 2);
	no_faults();
}

/* The RTU is lost: B's REP retry makes A repeat its RTU; ESTABLISHED once. */
Test(cm_loss, rtu_lost)
{
	struct conn c;
	uint64_t t_rep;

	conn_request(&c, AF_INET6, 7174);
	t_rep = h.now;
	conn_accept(&c);
	xrxe_cmh_rule(&h, A, XRXE_CM_ATTR_RTU, 0, 1, XRXE_CMH_DROP);
	cr_assert_eq(xrxe_cm_establish(H(A)->cm, c.a->id, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_none(c.b);
	cr_assert_str_eq(ib_state(c.b), "rep_sent");
	xrxe_cmh_run_until(&h, t_rep + try_ns());
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REP], 2);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_RTU], 2);
	cr_assert_eq(xrxe_cmh_stats(H(A)).drop_duplicate, 1, "the repeated REP");
	cr_assert_eq(xrxe_cmh_stats(H(A)).mad_resent, 1);
	expect_ev(c.b, RDMA_CM_EVENT_ESTABLISHED, 0);
	expect_none(c.a);
	xrxe_cmh_advance(&h, 100 * SEC);
	expect_none(c.b);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REP], 2);
	no_faults();
}

Test(cm_loss, dreq_lost)
{
	struct conn c;
	uint64_t t;

	conn_up(&c, AF_INET, 7174);
	xrxe_cmh_rule(&h, A, XRXE_CM_ATTR_DREQ, 0, 1, XRXE_CMH_DROP);
	t = h.now;
	cr_assert_eq(xrxe_cm_disconnect(H(A)->cm, c.a->id, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_none(c.b);
	xrxe_cmh_run_until(&h, t + try_ns());
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_DREQ], 2);
	expect_ev(c.b, RDMA_CM_EVENT_DISCONNECTED, 0);
	cr_assert_eq(xrxe_cm_disconnect(H(B)->cm, c.b->id, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(c.a, RDMA_CM_EVENT_DISCONNECTED, 0);
	xrxe_cmh_advance(&h, 100 * SEC);
	expect_ev(c.a, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	expect_ev(c.b, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_DREQ], 2);
	no_faults();
}

/* The DREP is lost: a DREQ repeated during TimeWait gets the DREP again; one
 * repeated after it is still answered (the connection is gone). */
Test(cm_loss, drep_lost)
{
	struct conn c;
	struct xrxe_cm_msg d, r;
	const struct xrxe_cmh_msg *dreq;
	uint64_t t;

	conn_up(&c, AF_INET, 7174);
	xrxe_cmh_rule(&h, B, XRXE_CM_ATTR_DREP, 0, 1, XRXE_CMH_DROP);
	/* the DREQ arrives twice: once is news, then a repeat */
	xrxe_cmh_rule(&h, A, XRXE_CM_ATTR_DREQ, 0, 1, XRXE_CMH_DUP);
	t = h.now;
	cr_assert_eq(xrxe_cm_disconnect(H(A)->cm, c.a->id, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(c.b, RDMA_CM_EVENT_DISCONNECTED, 0);
	expect_none(c.b);
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_duplicate, 1);
	cr_assert_eq(xrxe_cm_disconnect(H(B)->cm, c.b->id, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_none(c.a);
	cr_assert_str_eq(ib_state(c.b), "timewait");
	/* a repeat while B is in TimeWait: the DREP again */
	dreq = xrxe_cmh_last(&h, A, XRXE_CM_ATTR_DREQ);
	cr_assert_not_null(dreq);
	xrxe_cmh_rule(&h, B, XRXE_CM_ATTR_DREP, 0, 1, XRXE_CMH_DROP);
	xrxe_cmh_inject(&h, A, B, AF_INET, dreq->mad, XRXE_MAD_SIZE);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_DREP], 2);
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_duplicate, 2);
	xrxe_cmh_flush(&h);
	expect_none(c.a);
	/* A's retry comes after B's TimeWait: answered all the same */
	xrxe_cmh_run_until(&h, t + try_ns());
	expect_ev(c.b, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_DREQ], 2);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_DREP], 3);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_DREQ), &d), 0);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, B, XRXE_CM_ATTR_DREP), &r), 0);
	cr_assert_eq(r.hdr.tid, d.hdr.tid);
	cr_assert_eq(r.drep.local_comm_id, d.dreq.remote_comm_id);
	cr_assert_eq(r.drep.remote_comm_id, d.dreq.local_comm_id);
	expect_ev(c.a, RDMA_CM_EVENT_DISCONNECTED, 0);
	xrxe_cmh_advance(&h, 100 * SEC);
	expect_ev(c.a, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	no_faults();
}

/* Nobody answers: 1 + 15 REQs, then UNREACHABLE -ETIMEDOUT. */
Test(cm_loss, peer_dead)
{
	struct xrxe_cmh_owner *a = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7174);
	struct xrxe_cm_conn_param p = param(0x123, 1, 1, 7, 7, 0, 0);
	struct xrxe_cmh_event *e;
	uint64_t t0 = h.now;

	H(B)->deaf = true;
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_run_until(&h, t0 + (1 + K_RETRIES) * try_ns() - 1);
	expect_none(a);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 1 + K_RETRIES);
	xrxe_cmh_advance(&h, 1000 * SEC);
	e = expect_ev(a, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
	cr_assert_eq(e->time, t0 + (1 + K_RETRIES) * try_ns());
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 1 + K_RETRIES, "CMA_MAX_CM_RETRIES");
	cr_assert_eq(xrxe_cmh_stats(H(A)).timeouts, 1);
	cr_assert_eq(xrxe_cmh_stats(H(A)).mad_resent, K_RETRIES);
	cr_assert_eq(xrxe_cmh_next_deadline(&h), UINT64_MAX);
	cr_assert_str_eq(ib_state(a), "idle");
	no_faults();
}

/* The RTU never comes: B gives up after its retries. */
Test(cm_loss, rtu_never_comes)
{
	struct conn c;
	struct xrxe_cmh_event *e;
	uint64_t t;

	conn_request(&c, AF_INET, 7174);
	xrxe_cmh_rule(&h, A, XRXE_CM_ATTR_RTU, 0, 0, XRXE_CMH_DROP);
	t = h.now;
	conn_accept(&c);
	cr_assert_eq(xrxe_cm_establish(H(A)->cm, c.a->id, h.now), 0);
	xrxe_cmh_advance(&h, 1000 * SEC);
	e = expect_ev(c.b, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
	cr_assert_eq(e->time, t + (1 + K_RETRIES) * try_ns());
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REP], 1 + K_RETRIES);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_RTU], 1 + K_RETRIES, "every REP answered");
	cr_assert_eq(xrxe_cmh_stats(H(B)).timeouts, 1);
	expect_none(c.b);
	/* the child is the owner's, idle; destroying it sends nothing */
	xrxe_cmh_destroy_id(c.b);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).detached, 0);
	no_faults();
}

/* Reordered: the RTU overtakes nothing it should not; a REQ repeat that
 * arrives after the connection is up changes nothing. */
Test(cm_loss, late_duplicates)
{
	struct conn c;
	const struct xrxe_cmh_msg *req;

	conn_up(&c, AF_INET, 7174);
	req = xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REQ);
	xrxe_cmh_inject(&h, A, B, AF_INET, req->mad, XRXE_MAD_SIZE);
	xrxe_cmh_inject(&h, A, B, AF_INET, xrxe_cmh_last(&h, A, XRXE_CM_ATTR_RTU)->mad,
			XRXE_MAD_SIZE);
	xrxe_cmh_inject(&h, B, A, AF_INET, xrxe_cmh_last(&h, B, XRXE_CM_ATTR_REP)->mad,
			XRXE_MAD_SIZE);
	xrxe_cmh_flush(&h);
	expect_none(c.a);
	expect_none(c.b);
	cr_assert_eq(H(B)->new_child_calls, 1);
	/* the REQ, the RTU, and the RTU A sent again for the repeated REP */
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_duplicate, 3);
	/* the repeated REP is answered with the RTU again (IBA 12.9.5.1) */
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_RTU], 2);
	cr_assert_str_eq(ib_state(c.a), "established");
	cr_assert_str_eq(ib_state(c.b), "established");
	/* held and released in reverse order: DREQ then a stale RTU */
	xrxe_cmh_rule(&h, -1, 0, 0, 0, XRXE_CMH_HOLD);
	cr_assert_eq(xrxe_cm_disconnect(H(A)->cm, c.a->id, h.now), 0);
	cr_assert_eq(xrxe_cmh_held(&h), 1);
	xrxe_cmh_clear_rules(&h);
	xrxe_cmh_release(&h, true);
	xrxe_cmh_flush(&h);
	expect_ev(c.b, RDMA_CM_EVENT_DISCONNECTED, 0);
	no_faults();
}

/* ---- 4. destroy ---------------------------------------------------------------------- */

TestSuite(cm_destroy, .init = setup, .fini = teardown);

/* Destroying a connected ID: DREQ on the wire, the owner hears nothing more,
 * the ID lives on inside the CM until the DREP and TimeWait are over. */
Test(cm_destroy, connected_sends_dreq)
{
	struct conn c;
	unsigned nev;
	uint64_t t;

	conn_up(&c, AF_INET, 7174);
	nev = c.a->nev;
	t = h.now;
	xrxe_cmh_destroy_id(c.a);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_DREQ], 1);
	cr_assert_eq(xrxe_cmh_stats(H(A)).ids, 0);
	cr_assert_eq(xrxe_cmh_stats(H(A)).detached, 1);
	xrxe_cmh_flush(&h);
	expect_ev(c.b, RDMA_CM_EVENT_DISCONNECTED, 0);
	cr_assert_eq(xrxe_cm_disconnect(H(B)->cm, c.b->id, h.now), 0);
	xrxe_cmh_flush(&h);
	cr_assert_eq(xrxe_cmh_stats(H(A)).rcvd_by_attr[XRXE_CM_ATTR_DREP - XRXE_CM_ATTR_REQ], 1);
	cr_assert_eq(xrxe_cmh_stats(H(A)).drop_unknown_id, 0, "the DREP found its connection");
	cr_assert_eq(xrxe_cmh_stats(H(A)).detached, 1, "in TimeWait");
	xrxe_cmh_run_until(&h, t + timewait_ns());
	cr_assert_eq(xrxe_cmh_stats(H(A)).detached, 0);
	cr_assert_eq(xrxe_cmh_stats(H(A)).ids, 0);
	cr_assert_eq(c.a->nev, nev, "no event after destroy");
	expect_ev(c.b, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	cr_assert_eq(xrxe_cmh_next_deadline(&h), UINT64_MAX);
	no_faults();
}

/* The peer disconnected first: destroying answers its DREQ. */
Test(cm_destroy, after_peer_dreq_sends_drep)
{
	struct conn c;

	conn_up(&c, AF_INET6, 7174);
	cr_assert_eq(xrxe_cm_disconnect(H(B)->cm, c.b->id, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(c.a, RDMA_CM_EVENT_DISCONNECTED, 0);
	xrxe_cmh_destroy_id(c.a);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_DREP], 1);
	xrxe_cmh_flush(&h);
	expect_ev(c.b, RDMA_CM_EVENT_DISCONNECTED, 0);
	xrxe_cmh_advance(&h, 60 * SEC);
	expect_ev(c.b, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	cr_assert_eq(xrxe_cmh_stats(H(A)).detached, 0);
	cr_assert_eq(xrxe_cmh_stats(H(A)).ids, 0);
	no_faults();
}

/* Destroyed while the peer's DREQ is on its way: the detached ID answers it,
 * and the peer's own answer to our DREQ comes in TimeWait. */
Test(cm_destroy, dreqs_cross_after_destroy)
{
	struct conn c;
	struct xrxe_cm_msg r, d;

	conn_up(&c, AF_INET, 7174);
	xrxe_cmh_rule(&h, A, XRXE_CM_ATTR_DREQ, 0, 1, XRXE_CMH_HOLD);
	xrxe_cmh_destroy_id(c.a);
	cr_assert_eq(xrxe_cm_disconnect(H(B)->cm, c.b->id, h.now), 0);
	xrxe_cmh_flush(&h); /* B's DREQ reaches the detached A */
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_DREP], 1, "the detached ID answers");
	expect_ev(c.b, RDMA_CM_EVENT_DISCONNECTED, 0);
	cr_assert_str_eq(ib_state(c.b), "timewait");
	/* A's DREQ arrives late, at B in TimeWait: a DREP, not B's DREQ */
	xrxe_cmh_release(&h, false);
	xrxe_cmh_flush(&h);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_DREP], 1);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_DREQ], 1);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, B, XRXE_CM_ATTR_DREP), &r), 0);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_DREQ), &d), 0);
	cr_assert_eq(r.hdr.tid, d.hdr.tid, "the DREP answers A's DREQ");
	cr_assert_eq(r.drep.remote_comm_id, d.dreq.local_comm_id);
	cr_assert_eq(r.drep.local_comm_id, d.dreq.remote_comm_id);
	expect_none(c.b);
	xrxe_cmh_advance(&h, 60 * SEC);
	expect_ev(c.b, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	cr_assert_eq(xrxe_cmh_stats(H(A)).detached, 0);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_DREQ], 1, "answered: no retry");
	no_faults();
}

/* A request not yet accepted: destroying it rejects it (REJ 28). */
Test(cm_destroy, pending_child_sends_rej)
{
	struct conn c;
	struct xrxe_cm_id_info in;
	struct xrxe_cm_msg j;

	conn_request(&c, AF_INET, 7174);
	xrxe_cmh_destroy_id(c.b);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REJ], 1);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, B, XRXE_CM_ATTR_REJ), &j), 0);
	cr_assert_eq(j.rej.message_rejected, XRXE_CM_REF_REQ);
	cr_assert_eq(j.rej.local_comm_id, 0, "the kernel's: the REQ never saw ours");
	cr_assert_eq(j.rej.remote_comm_id, local_comm_id(c.a));
	cr_assert(xrxe_cmh_info(c.l, &in));
	cr_assert_eq(in.pending, 0);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).detached, 0);
	xrxe_cmh_flush(&h);
	expect_ev(c.a, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	xrxe_cmh_advance(&h, 100 * SEC);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 1);
	no_faults();
}

/* The listener goes while requests wait: they lose it, and stay usable. */
Test(cm_destroy, listener_with_pending_children)
{
	struct xrxe_cmh_owner *l = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC,
						 xrxe_cmh_any(AF_INET6, 7174), 8);
	struct xrxe_cmh_owner *a[3], *k[3];
	struct xrxe_cm_conn_param p = param(0x200, 1, 1, 7, 7, 9, 4);

	for (int i = 0; i < 3; i++) {
		a[i] = make_active(A, B, i == 2 ? AF_INET : AF_INET6, RDMA_PS_TCP, IBV_QPT_RC, 7174);
		p.qp_num = 0x200 + (uint32_t)i; /* one QP per connection (else: stale, IBA 12.9.8.3.1) */
		cr_assert_eq(xrxe_cm_connect(H(A)->cm, a[i]->id, &p, NULL, h.now), 0);
		xrxe_cmh_flush(&h);
		k[i] = child_of(l, (unsigned)i);
		expect_ev(k[i], RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	}
	xrxe_cmh_destroy_id(l);
	cr_assert_eq(xrxe_cmh_stats(H(B)).listeners, 0);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 3);
	/* accept one, reject one, destroy one */
	cr_assert_eq(xrxe_cm_accept(H(B)->cm, k[0]->id, &p, NULL, 0, h.now), 0);
	cr_assert_eq(xrxe_cm_reject(H(B)->cm, k[1]->id, 0, NULL, 0, h.now), 0);
	xrxe_cmh_destroy_id(k[2]);
	xrxe_cmh_flush(&h);
	expect_ev(a[0], RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	expect_ev(a[1], RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	expect_ev(a[2], RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	/* nobody listens now */
	{
		struct xrxe_cmh_owner *x = make_active(A, B, AF_INET6, RDMA_PS_TCP, IBV_QPT_RC, 7174);

		p.qp_num = 0x2ff;
		cr_assert_eq(xrxe_cm_connect(H(A)->cm, x->id, &p, NULL, h.now), 0);
		xrxe_cmh_flush(&h);
		expect_ev(x, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_INVALID_SERVICE_ID);
	}
	/* and the port is free again */
	{
		struct xrxe_cmh_owner *l2 = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC,
							  xrxe_cmh_any(AF_INET6, 7174), 8);

		cr_assert_eq(xrxe_cmh_stats(H(B)).listeners, 1);
		xrxe_cmh_destroy_id(l2);
	}
	xrxe_cmh_destroy_id(k[0]);
	xrxe_cmh_destroy_id(k[1]);
	xrxe_cmh_flush(&h);
	expect_ev(a[0], RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 0);
	cr_assert_eq(xrxe_cmh_stats(H(B)).detached, 0);
	no_faults();
}

/* The active side gives up while its REQ waits for an answer: REJ "timeout"
 * with our GUID as ARI (IBA 12.6.7.2), which the passive side finds its
 * request by (the kernel's cm_acquire_rejected_id). */
Test(cm_destroy, active_before_rep)
{
	struct conn c;
	struct xrxe_cm_msg j;
	uint64_t g;

	conn_request(&c, AF_INET, 7174);
	xrxe_cmh_destroy_id(c.a);
	cr_assert_eq(xrxe_cmh_stats(H(A)).ids, 0);
	cr_assert_eq(xrxe_cmh_stats(H(A)).detached, 0, "nothing to wait for");
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REJ), &j), 0);
	cr_assert_eq(j.rej.reason, XRXE_CM_REJ_TIMEOUT);
	cr_assert_eq(j.rej.ari_length, 8);
	memcpy(&g, j.rej.ari, 8);
	cr_assert_eq(be64toh(g), H(A)->guid, "the ARI is the GUID as on the wire");
	xrxe_cmh_flush(&h);
	expect_ev(c.b, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_TIMEOUT);
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_unknown_id, 0);
	xrxe_cmh_advance(&h, 1000 * SEC);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 1, "no retry after destroy");
	/* accepting now is refused */
	cr_assert_eq(xrxe_cm_accept(H(B)->cm, c.b->id, &c.ap, NULL, 0, h.now), -EINVAL);
	no_faults();
}

/* Destroyed after the REP came, instead of establishing: REJ 28 answering
 * the REP; the passive side stops repeating it. */
Test(cm_destroy, active_after_rep)
{
	struct conn c;
	struct xrxe_cm_msg j;

	conn_request(&c, AF_INET, 7174);
	conn_accept(&c);
	xrxe_cmh_destroy_id(c.a);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REJ), &j), 0);
	cr_assert_eq(j.rej.reason, XRXE_CM_REJ_CONSUMER_DEFINED);
	cr_assert_eq(j.rej.message_rejected, XRXE_CM_REF_REP);
	xrxe_cmh_flush(&h);
	expect_ev(c.b, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	xrxe_cmh_advance(&h, 1000 * SEC);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REP], 1);
	cr_assert_eq(xrxe_cmh_stats(H(A)).ids + xrxe_cmh_stats(H(A)).detached, 0);
	no_faults();
}

/* The passive side gives up before the RTU: REJ to the active side. */
Test(cm_destroy, passive_before_rtu)
{
	struct conn c;

	conn_request(&c, AF_INET6, 7174);
	conn_accept(&c);
	xrxe_cmh_destroy_id(c.b);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REJ], 1);
	xrxe_cmh_flush(&h);
	expect_ev(c.a, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	cr_assert_eq(xrxe_cm_establish(H(A)->cm, c.a->id, h.now), -EINVAL);
	xrxe_cmh_advance(&h, 1000 * SEC);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_REP], 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).detached, 0);
	no_faults();
}

/* Destroyed while connected to a dead peer: the DREQ is tried every time,
 * then TimeWait, then nothing is kept. */
Test(cm_destroy, connected_peer_dead)
{
	struct conn c;
	uint64_t t;

	conn_up(&c, AF_INET, 7174);
	H(B)->deaf = true;
	t = h.now;
	xrxe_cmh_destroy_id(c.a);
	xrxe_cmh_run_until(&h, t + (1 + K_RETRIES) * try_ns());
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_DREQ], 1 + K_RETRIES);
	cr_assert_eq(xrxe_cmh_stats(H(A)).detached, 1, "TimeWait after the last try");
	xrxe_cmh_run_until(&h, t + (1 + K_RETRIES) * try_ns() + timewait_ns());
	cr_assert_eq(xrxe_cmh_stats(H(A)).detached, 0);
	cr_assert_eq(xrxe_cmh_stats(H(A)).timeouts, 1);
	cr_assert_eq(xrxe_cmh_next_deadline(&h), UINT64_MAX);
	no_faults();
}

/* Connected, the owner still there, the peer dead: DISCONNECTED after the
 * DREQ's retries, with the kernel's status (cma.c: IB_CM_DREQ_ERROR is
 * DISCONNECTED with -ETIMEDOUT). */
Test(cm_destroy, disconnect_peer_dead)
{
	struct conn c;
	struct xrxe_cmh_event *e;
	uint64_t t;

	conn_up(&c, AF_INET, 7174);
	H(B)->deaf = true;
	t = h.now;
	cr_assert_eq(xrxe_cm_disconnect(H(A)->cm, c.a->id, h.now), 0);
	xrxe_cmh_run_until(&h, t + (1 + K_RETRIES) * try_ns());
	e = expect_ev(c.a, RDMA_CM_EVENT_DISCONNECTED, -ETIMEDOUT);
	cr_assert_eq(e->time, t + (1 + K_RETRIES) * try_ns());
	xrxe_cmh_advance(&h, timewait_ns());
	expect_ev(c.a, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	no_faults();
}

/* Everything at once: the CM is destroyed with IDs in every state (ASan /
 * LSan in the sanitizer build). */
Test(cm_destroy, cm_destroy_with_live_ids)
{
	struct conn c, d, e;

	conn_up(&c, AF_INET, 7174);
	conn_request(&d, AF_INET6, 7175);
	conn_up(&e, AF_INET, 7176);
	xrxe_cmh_destroy_id(e.a);
	cr_assert_eq(xrxe_cmh_stats(H(A)).detached, 1);
	cr_assert_gt(xrxe_cmh_stats(H(B)).ids, 4);
	/* teardown destroys both CMs with all of it */
	no_faults();
}

/* ---- 5. UD: SIDR -------------------------------------------------------------------- */

TestSuite(cm_sidr, .init = setup, .fini = teardown);

/* The kernel's SIDR_REQ timeout (cma.c: 1 << (CMA_CM_RESPONSE_TIMEOUT - 8)
 * ms), 15 retries. */
#define SIDR_TRY_NS (4096 * MS)

static struct xrxe_cmh_owner *sidr_request(int fam, struct xrxe_cmh_owner **lp,
					   struct xrxe_cmh_owner **ap)
{
	struct xrxe_cmh_owner *l = make_listener(B, RDMA_PS_UDP, IBV_QPT_UD,
						 xrxe_cmh_addr(H(B), fam, 7174), 8);
	struct xrxe_cmh_owner *a = make_active(A, B, fam, RDMA_PS_UDP, IBV_QPT_UD, 7174);
	struct xrxe_cm_conn_param p = param(0x55, 0, 0, 0, 0, 0x33, 20);
	struct xrxe_cmh_owner *k;
	struct xrxe_cmh_event *e;
	struct xrxe_cm_route ar = route_of(a);
	union ibv_gid ag;

	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_SIDR_REQ], 1);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_REQ], 0);
	xrxe_cmh_flush(&h);
	cr_assert_eq(children_of(l), 1);
	k = child_of(l, 0);
	e = expect_ev(k, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	cr_assert_eq(e->listener, l);
	cr_assert(e->ev.flags & XRXE_CM_EV_UD);
	cr_assert_eq(e->ev.param.ud.private_data_len, XRXE_CM_SIDR_REQ_PRIVATE - XRXE_CMA_HDR_SIZE);
	cr_assert_eq(memcmp(e->ev.param.ud.private_data, p.private_data, 20), 0);
	cr_assert_eq(e->ev.param.ud.private_data[20], 0);
	cr_assert(addr_eq(&e->ev.route.dst, &ar.src));
	xrxe_cmh_gid(&ar.src, &ag);
	cr_assert_eq(e->ev.param.ud.ah_attr.is_global, 1);
	cr_assert(gid_eq(&e->ev.param.ud.ah_attr.grh.dgid, &ag));
	cr_assert_eq(e->ev.param.ud.ah_attr.grh.sgid_index, fam == AF_INET ? 1 : 2);
	cr_assert_str_eq(ib_state(k), "sidr_req_rcvd");
	*lp = l;
	*ap = a;
	return k;
}

static void sidr_accept(int fam)
{
	struct xrxe_cmh_owner *l, *a, *k = sidr_request(fam, &l, &a);
	struct xrxe_cm_conn_param p = param(0x777, 0, 0, 0, 0, 0x44, 10);
	struct xrxe_cmh_event *e;
	struct xrxe_cm_msg q, r;
	struct xrxe_cm_route br = route_of(k), ar = route_of(a);
	struct ibv_qp_attr at;
	struct xrxe_cm_id_info in;
	union ibv_gid bg;
	int m;

	cr_assert_eq(xrxe_cm_accept(H(B)->cm, k->id, &p, NULL, 0, h.now), 0);
	cr_assert_eq(h.sent_by[B][XRXE_CM_ATTR_SIDR_REP], 1);
	cr_assert(xrxe_cmh_info(l, &in));
	cr_assert_eq(in.pending, 0);
	xrxe_cmh_flush(&h);
	e = expect_ev(a, RDMA_CM_EVENT_ESTABLISHED, 0);
	cr_assert(e->ev.flags & XRXE_CM_EV_UD);
	cr_assert_eq(e->ev.param.ud.qp_num, 0x777);
	cr_assert_eq(e->ev.param.ud.qkey, 0x01234567, "RDMA_UDP_QKEY");
	cr_assert_eq(e->ev.param.ud.private_data_len, XRXE_CM_SIDR_REP_PRIVATE);
	cr_assert_eq(memcmp(e->ev.param.ud.private_data, p.private_data, 10), 0);
	xrxe_cmh_gid(&br.src, &bg);
	cr_assert_eq(e->ev.param.ud.ah_attr.is_global, 1);
	cr_assert(gid_eq(&e->ev.param.ud.ah_attr.grh.dgid, &bg));
	cr_assert_eq(e->ev.param.ud.ah_attr.grh.sgid_index, fam == AF_INET ? 1 : 2);
	cr_assert_eq(e->ev.param.ud.ah_attr.grh.hop_limit, 64);
	cr_assert_eq(e->ev.param.ud.ah_attr.port_num, 1);
	cr_assert_eq(e->ev.param.ud.ah_attr.grh.flow_label,
		     ((uint32_t)ntohs(ar.src.port) * 31 + 7174) & 0xfffff);
	expect_none(k);
	/* the SIDR_REP answers the SIDR_REQ */
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_SIDR_REQ), &q), 0);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, B, XRXE_CM_ATTR_SIDR_REP), &r), 0);
	cr_assert_eq(r.hdr.tid, q.hdr.tid);
	cr_assert_eq(r.sidr_rep.request_id, q.sidr_req.request_id);
	cr_assert_eq(r.sidr_rep.service_id, q.sidr_req.service_id);
	cr_assert_eq(q.sidr_req.service_id, 0x0000000001111c06ull, "RDMA_PS_UDP, port 7174");
	cr_assert_eq(r.sidr_rep.status, XRXE_CM_SIDR_SUCCESS);
	cr_assert_eq(r.sidr_rep.qpn, 0x777);
	cr_assert_eq(r.sidr_rep.qkey, 0x01234567);
	/* UD QP attributes: the Q_Key */
	cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, a->id, IBV_QPS_INIT, &at, &m), 0);
	cr_assert_eq(m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	cr_assert_eq(at.qkey, 0x01234567);
	cr_assert_eq(xrxe_cm_init_qp_attr(H(B)->cm, k->id, IBV_QPS_INIT, &at, &m), 0);
	cr_assert_eq(at.qkey, 0x01234567);
	/* done: no retry, nothing pending */
	xrxe_cmh_advance(&h, 1000 * SEC);
	cr_assert_eq(h.sent, 2);
	cr_assert_eq(xrxe_cmh_next_deadline(&h), UINT64_MAX);
	xrxe_cmh_destroy_id(a);
	xrxe_cmh_destroy_id(k);
	xrxe_cmh_destroy_id(l);
	cr_assert_eq(h.sent, 2, "destroying UD IDs sends nothing");
	cr_assert_eq(xrxe_cmh_stats(H(A)).ids + xrxe_cmh_stats(H(A)).detached, 0);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids + xrxe_cmh_stats(H(B)).detached, 0);
	no_faults();
}

Test(cm_sidr, accept_ipv4)
{
	sidr_accept(AF_INET);
}

Test(cm_sidr, accept_ipv6)
{
	sidr_accept(AF_INET6);
}

Test(cm_sidr, nobody_listens)
{
	struct xrxe_cmh_owner *a = make_active(A, B, AF_INET, RDMA_PS_UDP, IBV_QPT_UD, 7175);
	struct xrxe_cm_conn_param p = param(0, 0, 0, 0, 0, 0, 0);

	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(a, RDMA_CM_EVENT_UNREACHABLE, XRXE_CM_SIDR_UNSUPPORTED);
	cr_assert_eq(xrxe_cmh_stats(H(B)).rej_no_listener, 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 0);
	xrxe_cmh_advance(&h, 1000 * SEC);
	cr_assert_eq(h.sent, 2);
	no_faults();
}

Test(cm_sidr, application_rejects)
{
	struct xrxe_cmh_owner *l, *a, *k = sidr_request(AF_INET6, &l, &a);

	cr_assert_eq(xrxe_cm_reject(H(B)->cm, k->id, 0, "no", 2, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(a, RDMA_CM_EVENT_UNREACHABLE, XRXE_CM_SIDR_REJECT);
	/* and destroying a request not yet answered rejects it too */
	{
		struct xrxe_cmh_owner *a2 = make_active(A, B, AF_INET6, RDMA_PS_UDP, IBV_QPT_UD, 7174);
		struct xrxe_cm_conn_param p = param(0, 0, 0, 0, 0, 0, 0);

		cr_assert_eq(xrxe_cm_connect(H(A)->cm, a2->id, &p, NULL, h.now), 0);
		xrxe_cmh_flush(&h);
		expect_ev(child_of(l, 1), RDMA_CM_EVENT_CONNECT_REQUEST, 0);
		xrxe_cmh_destroy_id(child_of(l, 1));
		xrxe_cmh_flush(&h);
		expect_ev(a2, RDMA_CM_EVENT_UNREACHABLE, XRXE_CM_SIDR_REJECT);
	}
	no_faults();
}

Test(cm_sidr, request_lost_and_peer_dead)
{
	struct xrxe_cmh_owner *l = make_listener(B, RDMA_PS_UDP, IBV_QPT_UD,
						 xrxe_cmh_any(AF_INET, 7174), 8);
	struct xrxe_cmh_owner *a = make_active(A, B, AF_INET, RDMA_PS_UDP, IBV_QPT_UD, 7174);
	struct xrxe_cm_conn_param p = param(0, 0, 0, 0, 0, 0, 0);
	struct xrxe_cmh_event *e;
	uint64_t t0 = h.now;

	/* lost once: sent again after the kernel's SIDR timeout */
	xrxe_cmh_rule(&h, A, XRXE_CM_ATTR_SIDR_REQ, 0, 1, XRXE_CMH_DROP);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_run_until(&h, t0 + SIDR_TRY_NS - 1);
	cr_assert_eq(children_of(l), 0);
	xrxe_cmh_run_until(&h, t0 + SIDR_TRY_NS);
	cr_assert_eq(children_of(l), 1);
	cr_assert_eq(xrxe_cm_accept(H(B)->cm, child_of(l, 0)->id, &p, NULL, 0, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(a, RDMA_CM_EVENT_ESTABLISHED, 0);

	/* nobody there */
	H(B)->deaf = true;
	a = make_active(A, B, AF_INET, RDMA_PS_UDP, IBV_QPT_UD, 7174);
	t0 = h.now;
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_advance(&h, 1000 * SEC);
	e = expect_ev(a, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
	cr_assert_eq(e->time, t0 + (1 + K_RETRIES) * SIDR_TRY_NS);
	cr_assert_eq(h.sent_by[A][XRXE_CM_ATTR_SIDR_REQ], 2 + 1 + K_RETRIES);
	no_faults();
}

/* A request of the wrong kind for the listener: the kernel's
 * cma_ib_check_req_qp_type refuses it (REJ 28 / SIDR "rejected"). */
Test(cm_sidr, qp_type_mismatch)
{
	struct xrxe_cmh_owner *lu = make_listener(B, RDMA_PS_UDP, IBV_QPT_UD,
						  xrxe_cmh_any(AF_INET, 7174), 8);
	struct xrxe_cmh_owner *lr = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC,
						  xrxe_cmh_any(AF_INET, 7174), 8);
	struct xrxe_cm_conn_param p = param(0x66, 1, 1, 7, 7, 0, 0);
	struct xrxe_cmh_owner *a;

	/* RC REQ in the UDP port space */
	a = make_active(A, B, AF_INET, RDMA_PS_UDP, IBV_QPT_RC, 7174);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(a, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	/* SIDR_REQ in the TCP port space */
	a = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_UD, 7174);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(a, RDMA_CM_EVENT_UNREACHABLE, XRXE_CM_SIDR_REJECT);
	/* UC REQ to an RC listener */
	a = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_UC, 7174);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(a, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_CONSUMER_DEFINED);
	cr_assert_eq(children_of(lu) + children_of(lr), 0);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 2);
	no_faults();
}

/* ---- 6. binding ------------------------------------------------------------------- */

TestSuite(cm_bind, .init = setup, .fini = teardown);

static int bind_new(int host, uint32_t ps, struct xrxe_cm_addr a, int reuse, int afonly,
		    struct xrxe_cmh_owner **out)
{
	struct xrxe_cmh_owner *o;

	cr_assert_eq(xrxe_cmh_create_id(H(host), ps, IBV_QPT_RC, &o), 0);
	if (reuse >= 0)
		cr_assert_eq(xrxe_cm_set_option(H(host)->cm, o->id, RDMA_OPTION_ID,
						RDMA_OPTION_ID_REUSEADDR, &reuse, sizeof(reuse)), 0);
	if (afonly >= 0)
		cr_assert_eq(xrxe_cm_set_option(H(host)->cm, o->id, RDMA_OPTION_ID,
						RDMA_OPTION_ID_AFONLY, &afonly, sizeof(afonly)), 0);
	if (out)
		*out = o;
	return xrxe_cm_bind(H(host)->cm, o->id, &a);
}

Test(cm_bind, ephemeral_ports)
{
	static uint8_t seen[65536];
	struct xrxe_cmh_owner *o;

	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < 300; i++) {
		struct xrxe_cm_route r;
		uint16_t port;

		cr_assert_eq(bind_new(A, RDMA_PS_TCP, xrxe_cmh_any(i % 2 ? AF_INET6 : AF_INET, 0), -1, -1,
				      &o), 0);
		r = route_of(o);
		port = ntohs(r.src.port);
		cr_assert(port >= 32768 && port <= 60999, "port %u", port);
		cr_assert_eq(seen[port], 0, "port %u twice", port);
		seen[port] = 1;
	}
	/* resolving an unbound ID binds it the same way */
	for (int i = 0; i < 20; i++) {
		struct xrxe_cm_route r;
		uint16_t port;

		o = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7174);
		r = route_of(o);
		port = ntohs(r.src.port);
		cr_assert(port >= 32768 && port <= 60999, "port %u", port);
		cr_assert_eq(seen[port], 0, "port %u twice", port);
		seen[port] = 1;
	}
	/* an ID binds once */
	cr_assert_eq(xrxe_cm_bind(H(A)->cm, o->id, &(struct xrxe_cm_addr){ .family = AF_INET }),
		     -EINVAL);
	no_faults();
}

Test(cm_bind, in_use_and_wildcards)
{
	struct xrxe_cm_addr b4 = xrxe_cmh_addr(H(B), AF_INET, 7000);
	struct xrxe_cmh_owner *first;

	cr_assert_eq(bind_new(B, RDMA_PS_TCP, b4, -1, -1, &first), 0);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, b4, -1, -1, NULL), -EADDRINUSE);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET, 7000), -1, -1, NULL), -EADDRINUSE,
		     "a wildcard over a specific address");
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET6, 7000), -1, -1, NULL), -EADDRINUSE,
		     "an IPv6 wildcard takes IPv4 too");
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_addr(H(B), AF_INET6, 7000), -1, -1, NULL), 0,
		     "another address");
	cr_assert_eq(bind_new(B, RDMA_PS_UDP, b4, -1, -1, NULL), 0, "another port space");
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_addr(H(B), AF_INET, 7001), -1, -1, NULL), 0);
	/* the port is free again once its owner lets go */
	xrxe_cmh_destroy_id(first);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, b4, -1, -1, NULL), 0);

	/* a specific address over a wildcard */
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET, 7002), -1, -1, NULL), 0);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_addr(H(B), AF_INET, 7002), -1, -1, NULL),
		     -EADDRINUSE);
	/* an IPv4 wildcard and an IPv6 address meet, unless both are
	 * family-only (IPv4 always is; cma_check_port) */
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_addr(H(B), AF_INET6, 7002), -1, -1, NULL),
		     -EADDRINUSE);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_addr(H(B), AF_INET6, 7002), -1, 1, NULL), 0);
	/* IPv6 wildcard first */
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET6, 7003), -1, -1, NULL), 0);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET, 7003), -1, -1, NULL), -EADDRINUSE);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_addr(H(B), AF_INET, 7003), -1, -1, NULL),
		     -EADDRINUSE);
	/* AFONLY: the kernel binds IPv4 IDs address-family-only, so an IPv6
	 * AFONLY wildcard and IPv4 share a port (cma_check_port) */
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET6, 7004), -1, 1, NULL), 0);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET, 7004), -1, -1, NULL), 0);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET6, 7004), -1, 1, NULL), -EADDRINUSE);
	no_faults();
}

Test(cm_bind, reuseaddr)
{
	struct xrxe_cm_addr any = xrxe_cmh_any(AF_INET, 7010);
	struct xrxe_cmh_owner *x, *y;
	int one = 1;

	cr_assert_eq(bind_new(B, RDMA_PS_TCP, any, 1, -1, &x), 0);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, any, 1, -1, &y), 0, "both ask for REUSEADDR");
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, any, -1, -1, NULL), -EADDRINUSE, "one does not");
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_addr(H(B), AF_INET, 7010), 1, -1, NULL), 0);
	/* a listener needs the port to itself */
	cr_assert_eq(xrxe_cm_listen(H(B)->cm, x->id, 8), -EADDRINUSE);
	cr_assert_eq(xrxe_cmh_stats(H(B)).listeners, 0);
	xrxe_cmh_destroy_id(y);
	/* still shared with the specific one */
	cr_assert_eq(xrxe_cm_listen(H(B)->cm, x->id, 8), -EADDRINUSE);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET, 7011), 1, -1, &x), 0);
	cr_assert_eq(xrxe_cm_listen(H(B)->cm, x->id, 8), 0);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET, 7011), 1, -1, NULL), -EADDRINUSE,
		     "not onto a listener");
	/* options only before binding */
	cr_assert_eq(xrxe_cm_set_option(H(B)->cm, x->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
					&one, sizeof(one)), -EINVAL);
	cr_assert_eq(xrxe_cm_set_option(H(B)->cm, x->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
					&one, 1), -EINVAL);
	no_faults();
}

/* An IPv6 wildcard listener takes IPv4 requests unless AFONLY. */
Test(cm_bind, ipv6_wildcard_takes_ipv4)
{
	struct xrxe_cmh_owner *l = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC,
						 xrxe_cmh_any(AF_INET6, 7174), 8);
	struct xrxe_cmh_owner *lo, *a;
	struct xrxe_cm_conn_param p = param(0x10, 1, 1, 7, 7, 0, 0);
	struct xrxe_cmh_event *e;
	struct xrxe_cm_addr b4 = xrxe_cmh_addr(H(B), AF_INET, 7174);
	int one = 1;

	a = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7174);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	e = expect_ev(child_of(l, 0), RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	cr_assert(addr_eq(&e->ev.route.src, &b4), "the child is IPv4");

	cr_assert_eq(xrxe_cmh_create_id(H(B), RDMA_PS_TCP, IBV_QPT_RC, &lo), 0);
	cr_assert_eq(xrxe_cm_set_option(H(B)->cm, lo->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one,
					sizeof(one)), 0);
	cr_assert_eq(xrxe_cm_bind(H(B)->cm, lo->id, &(struct xrxe_cm_addr){ .family = AF_INET6,
								       .port = htons(7175) }), 0);
	cr_assert_eq(xrxe_cm_listen(H(B)->cm, lo->id, 8), 0);
	a = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7175);
	p.qp_num++;
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(a, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_INVALID_SERVICE_ID);
	a = make_active(A, B, AF_INET6, RDMA_PS_TCP, IBV_QPT_RC, 7175);
	p.qp_num++;
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	expect_ev(child_of(lo, 0), RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	no_faults();
}

/* Which listener a request reaches: the one bound to the address it was sent
 * to. A wildcard and a specific listener of one family cannot share a port
 * (as in the kernel: bind or listen says EADDRINUSE); across families they
 * can (an AFONLY IPv6 wildcard beside an IPv4 address), and each takes its
 * own. A request to an address no listener covers is refused. */
Test(cm_bind, listener_by_address)
{
	struct xrxe_cmh_owner *l4, *l6, *x, *a;
	struct xrxe_cm_conn_param p = param(0x10, 1, 1, 7, 7, 0, 0);
	struct xrxe_cm_msg m;
	uint8_t mad[XRXE_MAD_SIZE];
	int one = 1;

	l4 = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC, xrxe_cmh_addr(H(B), AF_INET, 7174), 8);
	cr_assert_eq(bind_new(B, RDMA_PS_TCP, xrxe_cmh_any(AF_INET, 7174), 1, -1, &x), -EADDRINUSE);
	cr_assert_eq(xrxe_cmh_create_id(H(B), RDMA_PS_TCP, IBV_QPT_RC, &l6), 0);
	cr_assert_eq(xrxe_cm_set_option(H(B)->cm, l6->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one,
					sizeof(one)), 0);
	cr_assert_eq(xrxe_cm_bind(H(B)->cm, l6->id, &(struct xrxe_cm_addr){ .family = AF_INET6,
								       .port = htons(7174) }), 0);
	cr_assert_eq(xrxe_cm_listen(H(B)->cm, l6->id, 8), 0);

	a = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7174);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	a = make_active(A, B, AF_INET6, RDMA_PS_TCP, IBV_QPT_RC, 7174);
	p.qp_num++;
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	cr_assert_eq(children_of(l4), 1);
	cr_assert_eq(children_of(l6), 1);
	cr_assert_eq(child_of(l4, 0)->ev[0].ev.route.src.family, AF_INET);
	cr_assert_eq(child_of(l6, 0)->ev[0].ev.route.src.family, AF_INET6);

	/* the REQ's cma header names an IPv4 address B's listener is not on */
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REQ), &m), 0);
	cr_assert_eq(xrxe_cmh_parse(h.log + 0, &m), 0); /* the IPv4 REQ */
	cr_assert_eq(m.req.private_data[1] >> 4, 4);
	m.req.private_data[35] ^= 0x40; /* 10.0.0.2 -> 10.0.0.66 */
	m.req.local_comm_id ^= 0x5a5a5a5a;
	m.req.local_qpn = 0x999;
	cr_assert_eq(xrxe_cm_mad_build(&m, mad), 0);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	cr_assert_eq(children_of(l4), 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).rej_no_listener, 1);
	no_faults();
}

/* Bound to a wildcard, then resolved: the ID takes the source address the
 * resolution found and keeps its port (the kernel's addr_handler); the REQ
 * carries that address, not 0.0.0.0. */
Test(cm_bind, wildcard_bound_then_resolved)
{
	struct xrxe_cmh_owner *l = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC,
						 xrxe_cmh_any(AF_INET, 7174), 8);
	struct xrxe_cmh_owner *a, *w;
	struct xrxe_cm_conn_param p = param(0x10, 1, 1, 7, 7, 0, 0);
	struct xrxe_cm_addr want = xrxe_cmh_addr(H(A), AF_INET, 5555);
	struct xrxe_cm_route r;
	struct xrxe_cmh_event *e;
	union ibv_gid g;

	cr_assert_eq(bind_new(A, RDMA_PS_TCP, xrxe_cmh_any(AF_INET, 5555), -1, -1, &a), 0);
	cr_assert_eq(xrxe_cmh_resolve(a, H(B), AF_INET, 7174), 0);
	r = route_of(a);
	cr_assert(addr_eq(&r.src, &want));
	xrxe_cmh_gid(&want, &g);
	cr_assert(gid_eq(&r.sgid, &g));
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &p, NULL, h.now), 0);
	xrxe_cmh_flush(&h);
	e = expect_ev(child_of(l, 0), RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	cr_assert(addr_eq(&e->ev.route.dst, &want));
	cr_assert(gid_eq(&e->ev.route.dgid, &g));
	/* resolving to another family than the binding's: -EINVAL (the
	 * kernel's resolve_prepare_src) */
	cr_assert_eq(bind_new(A, RDMA_PS_TCP, xrxe_cmh_any(AF_INET6, 0), -1, -1, &w), 0);
	cr_assert_eq(xrxe_cmh_resolve(w, H(B), AF_INET, 7174), -EINVAL);
	no_faults();
}

/* ---- 7. hostile input ----------------------------------------------------------------- */

TestSuite(cm_hostile, .init = setup, .fini = teardown);

/* B with a listener, a request pending on it, and an established
 * connection. */
struct scene {
	struct conn pend, up;
};

static void scene(struct scene *s)
{
	conn_request(&s->pend, AF_INET, 7174);
	conn_up(&s->up, AF_INET, 7175);
}

static unsigned events_of(int host)
{
	unsigned n = 0;

	for (struct xrxe_cmh_owner *o = H(host)->owners; o; o = o->all_next)
		n += o->nev;
	return n;
}

/* Only mad_rcvd and drop_malformed[err] moved, by n; nothing was sent, no
 * event raised. */
static void only_malformed(const struct xrxe_cm_stats *before, unsigned err, uint64_t n,
			   unsigned events_before, uint64_t sent_before)
{
	struct xrxe_cm_stats a = xrxe_cmh_stats(H(B)), b = *before;

	cr_assert_eq(a.mad_rcvd, b.mad_rcvd + n);
	cr_assert_eq(a.drop_malformed[err], b.drop_malformed[err] + n, "drop_malformed[%u] %" PRIu64
		     ", want %" PRIu64, err, a.drop_malformed[err], b.drop_malformed[err] + n);
	a.mad_rcvd = b.mad_rcvd;
	a.drop_malformed[err] = b.drop_malformed[err];
	cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0, "another counter moved");
	cr_assert_eq(events_of(B), events_before);
	cr_assert_eq(h.sent, sent_before);
}

static void build_mad(struct xrxe_cm_msg *m, uint16_t attr, uint8_t mad[XRXE_MAD_SIZE])
{
	m->hdr.base_version = XRXE_MAD_BASE_VERSION;
	m->hdr.mgmt_class = XRXE_MGMT_CLASS_CM;
	m->hdr.class_version = XRXE_CM_CLASS_VERSION;
	m->hdr.method = XRXE_MAD_METHOD_SEND;
	m->hdr.attr_id = attr;
	if (!m->hdr.tid)
		m->hdr.tid = 0x1234567890ull;
	cr_assert_eq(xrxe_cm_mad_build(m, mad), 0);
}

Test(cm_hostile, malformed_mads_change_nothing)
{
	struct scene s;
	struct xrxe_cmh_owner *a2;
	struct xrxe_cm_conn_param p = param(0x999, 1, 1, 7, 7, 1, 1);
	struct xrxe_cm_stats st;
	uint8_t req[XRXE_MAD_SIZE], bad[XRXE_MAD_SIZE];
	unsigned ev;
	uint64_t sent;
	static const struct {
		unsigned off;
		uint8_t val;
		unsigned err;
	} muts[] = {
		{ 0, 2, XRXE_MAD_ERR_BASE_VERSION },  { 0, 0, XRXE_MAD_ERR_BASE_VERSION },
		{ 1, 0x01, XRXE_MAD_ERR_CLASS },      { 1, 0x04, XRXE_MAD_ERR_CLASS },
		{ 2, 1, XRXE_MAD_ERR_CLASS_VERSION }, { 2, 3, XRXE_MAD_ERR_CLASS_VERSION },
		{ 3, 0x81, XRXE_MAD_ERR_METHOD },     { 3, 0x02, XRXE_MAD_ERR_METHOD },
		{ 3, XRXE_MAD_METHOD_GET, XRXE_MAD_ERR_METHOD },
		{ 17, 0x30, XRXE_MAD_ERR_ATTR },      { 17, 0x00, XRXE_MAD_ERR_ATTR },
		{ 16, 0x01, XRXE_MAD_ERR_ATTR },
	};

	scene(&s);
	/* a valid REQ B has not seen */
	a2 = make_active(A, B, AF_INET, RDMA_PS_TCP, IBV_QPT_RC, 7174);
	xrxe_cmh_rule(&h, A, XRXE_CM_ATTR_REQ, 0, 1, XRXE_CMH_DROP);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a2->id, &p, NULL, h.now), 0);
	memcpy(req, xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REQ)->mad, sizeof(req));
	xrxe_cmh_flush(&h);

	st = xrxe_cmh_stats(H(B));
	ev = events_of(B);
	sent = h.sent;
	for (size_t len = 0; len < XRXE_MAD_SIZE; len++)
		xrxe_cmh_inject(&h, A, B, AF_INET, req, len);
	only_malformed(&st, XRXE_MAD_ERR_TRUNCATED, XRXE_MAD_SIZE, ev, sent);

	for (size_t i = 0; i < sizeof(muts) / sizeof(muts[0]); i++) {
		st = xrxe_cmh_stats(H(B));
		memcpy(bad, req, sizeof(bad));
		bad[muts[i].off] = muts[i].val;
		xrxe_cmh_inject(&h, A, B, AF_INET, bad, sizeof(bad));
		only_malformed(&st, muts[i].err, 1, ev, sent);
	}

	/* a longer buffer is a UD receive buffer: fine */
	{
		uint8_t longer[300];

		memset(longer, 0xee, sizeof(longer));
		memcpy(longer, req, sizeof(req));
		xrxe_cmh_inject(&h, A, B, AF_INET, longer, sizeof(longer));
		cr_assert_eq(children_of(s.pend.l), 2);
	}
	no_faults();
}

/* Known, parseable, but nothing the CM does: counted as unsupported. */
Test(cm_hostile, lap_apr_classportinfo)
{
	struct scene s;
	uint8_t mad[XRXE_MAD_SIZE];
	struct xrxe_cm_stats st;
	uint64_t sent;

	scene(&s);
	st = xrxe_cmh_stats(H(B));
	sent = h.sent;
	memcpy(mad, xrxe_cmh_last(&h, A, XRXE_CM_ATTR_REQ)->mad, sizeof(mad));
	mad[17] = XRXE_CM_ATTR_LAP;
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	mad[17] = XRXE_CM_ATTR_APR;
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	mad[17] = XRXE_CM_ATTR_CLASS_PORT_INFO;
	mad[3] = XRXE_MAD_METHOD_GET;
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_unsupported, st.drop_unsupported + 3);
	cr_assert_eq(h.sent, sent);
	cr_assert_str_eq(ib_state(s.up.b), "established");
	no_faults();
}

/* MADs for connections that do not exist, or in the wrong state. */
Test(cm_hostile, unknown_ids_and_wrong_states)
{
	struct scene s;
	struct xrxe_cm_id_info pend, up;
	struct xrxe_cm_msg m;
	struct xrxe_cm_stats st;
	uint8_t mad[XRXE_MAD_SIZE];
	uint64_t sent;
	unsigned ev;

	scene(&s);
	cr_assert(xrxe_cmh_info(s.pend.b, &pend));
	cr_assert(xrxe_cmh_info(s.up.b, &up));
	st = xrxe_cmh_stats(H(B));
	ev = events_of(B);
	sent = h.sent;

	/* REP, RTU, DREP, MRA, REJ naming a comm ID B never gave */
	memset(&m, 0, sizeof(m));
	m.rep.local_comm_id = 0x11111111;
	m.rep.remote_comm_id = 0xdeadbeef;
	build_mad(&m, XRXE_CM_ATTR_REP, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	memset(&m, 0, sizeof(m));
	m.rtu.remote_comm_id = 0xdeadbeef;
	build_mad(&m, XRXE_CM_ATTR_RTU, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	memset(&m, 0, sizeof(m));
	m.drep.remote_comm_id = 0xdeadbeef;
	build_mad(&m, XRXE_CM_ATTR_DREP, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	memset(&m, 0, sizeof(m));
	m.mra.remote_comm_id = 0xdeadbeef;
	build_mad(&m, XRXE_CM_ATTR_MRA, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	memset(&m, 0, sizeof(m));
	m.rej.remote_comm_id = 0xdeadbeef;
	m.rej.reason = XRXE_CM_REJ_CONSUMER_DEFINED;
	build_mad(&m, XRXE_CM_ATTR_REJ, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	/* a REJ "timeout" for nothing either */
	m.rej.reason = XRXE_CM_REJ_TIMEOUT;
	m.rej.ari_length = 8;
	build_mad(&m, XRXE_CM_ATTR_REJ, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	memset(&m, 0, sizeof(m));
	m.sidr_rep.request_id = 0xdeadbeef;
	build_mad(&m, XRXE_CM_ATTR_SIDR_REP, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_unknown_id, st.drop_unknown_id + 7);
	cr_assert_eq(h.sent, sent);
	cr_assert_eq(events_of(B), ev);

	/* wrong state: a REP / RTU / MRA-of-a-REP for the request B has not
	 * answered; a REP for the established connection from elsewhere */
	st = xrxe_cmh_stats(H(B));
	memset(&m, 0, sizeof(m));
	m.rep.local_comm_id = 0x22222222;
	m.rep.remote_comm_id = pend.local_comm_id;
	build_mad(&m, XRXE_CM_ATTR_REP, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	memset(&m, 0, sizeof(m));
	m.rtu.local_comm_id = pend.remote_comm_id;
	m.rtu.remote_comm_id = pend.local_comm_id;
	build_mad(&m, XRXE_CM_ATTR_RTU, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	memset(&m, 0, sizeof(m));
	m.mra.local_comm_id = pend.remote_comm_id;
	m.mra.remote_comm_id = pend.local_comm_id;
	m.mra.message_mraed = XRXE_CM_REF_REP;
	build_mad(&m, XRXE_CM_ATTR_MRA, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	memset(&m, 0, sizeof(m));
	m.rep.local_comm_id = 0x33333333;
	m.rep.remote_comm_id = up.local_comm_id;
	build_mad(&m, XRXE_CM_ATTR_REP, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	/* a DREQ with the right comm IDs but another QPN */
	memset(&m, 0, sizeof(m));
	m.dreq.local_comm_id = up.remote_comm_id;
	m.dreq.remote_comm_id = up.local_comm_id;
	m.dreq.remote_qpn = up.local_qpn + 1;
	build_mad(&m, XRXE_CM_ATTR_DREQ, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_bad_state, st.drop_bad_state + 5);
	cr_assert_eq(h.sent, sent);
	cr_assert_eq(events_of(B), ev);
	cr_assert_str_eq(ib_state(s.pend.b), "req_rcvd");
	cr_assert_str_eq(ib_state(s.up.b), "established");
	/* a REJ that is not "stale connection" does not end an established
	 * connection */
	memset(&m, 0, sizeof(m));
	m.rej.local_comm_id = up.remote_comm_id;
	m.rej.remote_comm_id = up.local_comm_id;
	m.rej.reason = XRXE_CM_REJ_CONSUMER_DEFINED;
	build_mad(&m, XRXE_CM_ATTR_REJ, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	cr_assert_str_eq(ib_state(s.up.b), "established");

	/* a DREQ for a connection B does not have is answered (IBA 12.9.8.3),
	 * so the sender can leave */
	st = xrxe_cmh_stats(H(B));
	memset(&m, 0, sizeof(m));
	m.hdr.tid = 0xfeedfacecafe;
	m.dreq.local_comm_id = 0x44444444;
	m.dreq.remote_comm_id = 0x55555555;
	m.dreq.remote_qpn = 0x12;
	build_mad(&m, XRXE_CM_ATTR_DREQ, mad);
	xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
	cr_assert_eq(h.sent, sent + 1);
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_unknown_id, st.drop_unknown_id + 1);
	cr_assert_eq(xrxe_cmh_parse(xrxe_cmh_last(&h, B, XRXE_CM_ATTR_DREP), &m), 0);
	cr_assert_eq(m.hdr.tid, 0xfeedfacecafe);
	cr_assert_eq(m.drep.local_comm_id, 0x55555555);
	cr_assert_eq(m.drep.remote_comm_id, 0x44444444);
	cr_assert_eq(h.log[h.nlog - 1].to, A, "answered to where it came from");
	cr_assert_eq(events_of(B), ev);
	no_faults();
}

/* A flood of REQs nobody listens for: each answered, nothing kept. */
Test(cm_hostile, req_flood_without_listener)
{
	struct xrxe_cm_msg m;
	uint8_t mad[XRXE_MAD_SIZE];

	H(A)->deaf = true;
	h.no_log = true;
	for (uint32_t i = 0; i < 10000; i++) {
		memset(&m, 0, sizeof(m));
		m.hdr.tid = 0x100000000ull + i;
		m.req.local_comm_id = 0x10000 + i;
		m.req.service_id = xrxe_cma_service_id(RDMA_PS_TCP, 7174);
		m.req.local_ca_guid = H(A)->guid;
		m.req.local_qpn = 0x100 + i;
		m.req.path_mtu = IBV_MTU_1024;
		m.req.private_data[1] = 0x40;
		memcpy(m.req.private_data + 16, &H(A)->v4, 4);
		memcpy(m.req.private_data + 32, &H(C)->v4, 4);
		build_mad(&m, XRXE_CM_ATTR_REQ, mad);
		xrxe_cmh_inject(&h, A, C, AF_INET, mad, sizeof(mad));
		cr_assert_eq(xrxe_cmh_stats(H(C)).ids, 0);
	}
	xrxe_cmh_flush(&h);
	cr_assert_eq(h.sent_by[C][XRXE_CM_ATTR_REJ], 10000);
	cr_assert_eq(h.sent, 10000);
	cr_assert_eq(xrxe_cmh_stats(H(C)).rej_no_listener, 10000);
	cr_assert_eq(xrxe_cmh_stats(H(C)).ids, 0);
	cr_assert_eq(xrxe_cmh_stats(H(C)).detached, 0);
	cr_assert_eq(xrxe_cm_next_deadline(H(C)->cm), UINT64_MAX);
	no_faults();
}

/* With a listener: the backlog bounds what is kept. */
Test(cm_hostile, req_flood_with_listener)
{
	struct xrxe_cmh_owner *l = make_listener(C, RDMA_PS_TCP, IBV_QPT_RC,
						 xrxe_cmh_any(AF_INET, 7174), 16);
	struct xrxe_cm_msg m;
	uint8_t mad[XRXE_MAD_SIZE];

	H(A)->deaf = true;
	h.no_log = true;
	for (uint32_t i = 0; i < 10000; i++) {
		memset(&m, 0, sizeof(m));
		m.req.local_comm_id = 0x10000 + i;
		m.req.service_id = xrxe_cma_service_id(RDMA_PS_TCP, 7174);
		m.req.local_ca_guid = H(A)->guid;
		m.req.local_qpn = 0x100 + i;
		m.req.path_mtu = IBV_MTU_1024;
		m.req.private_data[1] = 0x40;
		memcpy(m.req.private_data + 16, &H(A)->v4, 4);
		memcpy(m.req.private_data + 32, &H(C)->v4, 4);
		build_mad(&m, XRXE_CM_ATTR_REQ, mad);
		xrxe_cmh_inject(&h, A, C, AF_INET, mad, sizeof(mad));
	}
	cr_assert_eq(children_of(l), 16);
	cr_assert_eq(xrxe_cmh_stats(H(C)).ids, 17);
	cr_assert_eq(xrxe_cmh_stats(H(C)).rej_backlog, 10000 - 16);
	cr_assert_eq(h.sent_by[C][XRXE_CM_ATTR_REJ], 10000 - 16);
	no_faults();
}

/* Random bytes never crash the CM (ASan/UBSan in the sanitizer build); nor
 * do well-formed MADs of every kind with random contents, half of them
 * naming live comm IDs, QPNs and GUIDs. */
Test(cm_hostile, random_input)
{
	struct scene s;
	uint8_t mad[XRXE_MAD_SIZE];
	uint32_t ids[8];
	unsigned nids = 0;
	static const uint16_t attrs[] = {
		XRXE_CM_ATTR_REQ,  XRXE_CM_ATTR_MRA,  XRXE_CM_ATTR_REJ,      XRXE_CM_ATTR_REP,
		XRXE_CM_ATTR_RTU,  XRXE_CM_ATTR_DREQ, XRXE_CM_ATTR_DREP,     XRXE_CM_ATTR_SIDR_REQ,
		XRXE_CM_ATTR_SIDR_REP,
	};

	scene(&s);
	make_listener(B, RDMA_PS_UDP, IBV_QPT_UD, xrxe_cmh_any(AF_INET6, 7174), 4);
	for (int k = 0; k < 2; k++) {
		struct xrxe_cm_id_info in;

		cr_assert(xrxe_cmh_info(k ? s.up.b : s.pend.b, &in));
		ids[nids++] = in.local_comm_id;
		ids[nids++] = in.remote_comm_id;
	}
	for (int i = 0; i < 10000; i++) {
		for (size_t k = 0; k < sizeof(mad); k += 8) {
			uint64_t r = xrxe_cmh_rand(&h);

			memcpy(mad + k, &r, 8);
		}
		xrxe_cmh_inject(&h, A, B, i % 2 ? AF_INET : AF_INET6, mad, sizeof(mad));
	}
	H(A)->deaf = true;
	for (int i = 0; i < 10000; i++) {
		struct xrxe_cm_msg m;
		uint64_t r = xrxe_cmh_rand(&h);

		for (size_t k = 0; k < sizeof(m); k += 8) {
			uint64_t v = xrxe_cmh_rand(&h);

			memcpy((uint8_t *)&m + k, &v, sizeof(m) - k < 8 ? sizeof(m) - k : 8);
		}
		m.hdr.attr_id = attrs[r % (sizeof(attrs) / sizeof(attrs[0]))];
		if (r & 0x100) {
			/* the comm IDs first in every body */
			m.req.local_comm_id = ids[(r >> 12) % nids];
			m.rep.remote_comm_id = ids[(r >> 20) % nids];
			m.req.local_ca_guid = H(A)->guid;
		}
		if (r & 0x200) {
			/* a cma header B's listeners take */
			m.req.private_data[0] = 0;
			m.req.private_data[1] = 0x40;
			m.req.service_id = xrxe_cma_service_id(r & 0x400 ? RDMA_PS_UDP : RDMA_PS_TCP,
							       7174);
			m.sidr_req.service_id = m.req.service_id;
		}
		build_mad(&m, m.hdr.attr_id, mad);
		xrxe_cmh_inject(&h, A, B, AF_INET, mad, sizeof(mad));
		if (i % 500 == 0)
			xrxe_cmh_advance(&h, 3 * SEC);
	}
	xrxe_cmh_advance(&h, 3600 * SEC);
	/* the CM's books balance */
	{
		struct xrxe_cm_stats st = xrxe_cmh_stats(H(B));
		uint64_t ids_seen = 0;

		for (struct xrxe_cmh_owner *o = H(B)->owners; o; o = o->all_next) {
			struct xrxe_cm_id_info in;

			ids_seen += !o->destroyed && xrxe_cmh_info(o, &in);
		}
		cr_assert_eq(st.ids, ids_seen);
	}
	no_faults();
}

/* ---- 8. against the kernel's frames ----------------------------------------------------
 *
 * tests/golden/rxe-cm.pcap: Linux 6.1 rdma_cm over rxe between 10.77.0.2 /
 * fd77::2 (the active side of every connection, MAC ..:0b) and 10.77.0.1 /
 * fd77::1 (passive, ..:0a). Host A of the harness takes the active host's
 * addresses and MAC (so its node GUID is the kernel's too), host B the
 * passive one's. One side at a time is ours: the kernel's MADs are fed to it
 * (comm IDs rewritten to ours where the kernel's name its peer), and what it
 * sends is compared with what the kernel sent, field by field through the
 * codec's tables. Comm IDs and starting PSNs are each side's own draws and
 * are left out; TIDs are checked by the kernel's rule instead (an answer
 * carries the TID of what it answers; an active side's DREQ its REQ's).
 */

static struct xrxe_golden kg;

struct kframe {
	bool is_mad;
	int fam;
	struct xrxe_cm_msg m;
	uint8_t mad[XRXE_MAD_SIZE];
};
static struct kframe *kf;

static const struct xrxe_cmh_hostcfg kcfg[2] = {
	{ .v4 = "10.77.0.2", .v6 = "fd77::2", .mac = { 0x52, 0x54, 0, 0, 0, 0x0b } },
	{ .v4 = "10.77.0.1", .v6 = "fd77::1", .mac = { 0x52, 0x54, 0, 0, 0, 0x0a } },
};

static void kload(void)
{
	cr_assert_eq(xrxe_golden_load(XRXE_GOLDEN_CM, &kg), 0, "cannot load %s/%s", xrxe_golden_dir(),
		     XRXE_GOLDEN_CM);
	kf = calloc(kg.count, sizeof(*kf));
	cr_assert_not_null(kf);
	for (size_t i = 0; i < kg.count; i++) {
		struct xrxe_pkt pkt;

		cr_assert_eq(xrxe_parse(kg.frames[i].data, kg.frames[i].len, 0, &pkt), XRXE_PARSE_OK,
			     "frame %zu", i + 1);
		/* a CM MAD: a UD SEND_ONLY to QP1 */
		if (pkt.opcode != XRXE_OPCODE(UD, SEND_ONLY) ||
		    xrxe_bth_qpn(xrxe_pkt_bth(&pkt)) != XRXE_GSI_QPN)
			continue;
		kf[i].is_mad = true;
		kf[i].fam = pkt.ip_version == 4 ? AF_INET : AF_INET6;
		cr_assert_eq(pkt.payload_len, XRXE_MAD_SIZE);
		cr_assert_eq(xrxe_pkt_copy_payload(&pkt, 0, kf[i].mad, XRXE_MAD_SIZE), 0);
		cr_assert_eq(xrxe_cm_mad_parse(kf[i].mad, XRXE_MAD_SIZE, &kf[i].m), XRXE_MAD_OK);
	}
	cr_assert_eq(xrxe_cmh_init(&h, 0x6b65726e656cull, 2, kcfg), 0);
	cr_assert_eq(H(A)->guid, 0x505400fffe00000bull, "rxe's GUID of the active host");
	cr_assert_eq(H(B)->guid, 0x505400fffe00000aull);
}

static void kunload(void)
{
	xrxe_cmh_fini(&h);
	free(kf);
	kf = NULL;
	xrxe_golden_free(&kg);
}

/* The kernel's MAD of 1-based frame no, which must be attr. */
static const struct kframe *K(unsigned no, uint16_t attr)
{
	cr_assert(no >= 1 && no <= kg.count, "frame %u", no);
	cr_assert(kf[no - 1].is_mad, "frame %u is not a CM MAD", no);
	cr_assert_eq(kf[no - 1].m.hdr.attr_id, attr, "frame %u is %s, want %s", no,
		     xrxe_cm_attr_name(kf[no - 1].m.hdr.attr_id), xrxe_cm_attr_name(attr));
	return &kf[no - 1];
}

/* The first frame after `after` that is attr and satisfies match. */
static unsigned kfind(unsigned after, uint16_t attr,
		      bool (*match)(const struct xrxe_cm_msg *m, const void *arg), const void *arg)
{
	for (size_t i = after; i < kg.count; i++)
		if (kf[i].is_mad && kf[i].m.hdr.attr_id == attr && match(&kf[i].m, arg))
			return (unsigned)i + 1;
	return 0;
}

static bool is_rep_for(const struct xrxe_cm_msg *m, const void *arg)
{
	return m->rep.remote_comm_id == ((const struct xrxe_cm_msg *)arg)->req.local_comm_id;
}

static bool is_rtu_for(const struct xrxe_cm_msg *m, const void *arg)
{
	return m->rtu.remote_comm_id == ((const struct xrxe_cm_msg *)arg)->rep.local_comm_id;
}

/* a DREQ of the connection of this REP, from either side */
static bool is_dreq_of(const struct xrxe_cm_msg *m, const void *arg)
{
	const struct xrxe_cm_rep *p = &((const struct xrxe_cm_msg *)arg)->rep;

	return (m->dreq.local_comm_id == p->remote_comm_id &&
		m->dreq.remote_comm_id == p->local_comm_id) ||
	       (m->dreq.local_comm_id == p->local_comm_id &&
		m->dreq.remote_comm_id == p->remote_comm_id);
}

static bool is_drep_for(const struct xrxe_cm_msg *m, const void *arg)
{
	const struct xrxe_cm_dreq *d = &((const struct xrxe_cm_msg *)arg)->dreq;

	return m->drep.local_comm_id == d->remote_comm_id && m->drep.remote_comm_id == d->local_comm_id;
}

static bool is_sidr_rep_for(const struct xrxe_cm_msg *m, const void *arg)
{
	return m->sidr_rep.request_id == ((const struct xrxe_cm_msg *)arg)->sidr_req.request_id;
}

static bool skipped(const char *const *skip, const char *name)
{
	for (; skip && *skip; skip++)
		if (!strcmp(*skip, name))
			return true;
	return false;
}

/* Every field of ours against the kernel's (header fields named "hdr.x");
 * each difference is reported by name. Returns how many differ. */
static unsigned kcompare(const char *what, const struct xrxe_cm_msg *ours,
			 const struct xrxe_cm_msg *kern, const char *const *skip)
{
	unsigned diffs = 0;

	cr_assert_eq(ours->hdr.attr_id, kern->hdr.attr_id);
	for (int body = 0; body < 2; body++) {
		size_t n;
		const struct xrxe_cm_field *f = body ? xrxe_cm_fields(kern->hdr.attr_id, &n)
						     : xrxe_mad_hdr_fields(&n);
		char name[64];

		for (size_t i = 0; i < n; i++) {
			const uint8_t *a = (const uint8_t *)ours + f[i].member;
			const uint8_t *b = (const uint8_t *)kern + f[i].member;
			size_t sz = f[i].is_bytes ? f[i].width / 8u : f[i].size;

			snprintf(name, sizeof(name), "%s%s", body ? "" : "hdr.", f[i].name);
			if (skipped(skip, name) || !memcmp(a, b, sz))
				continue;
			diffs++;
			if (f[i].is_bytes) {
				size_t k = 0;

				while (a[k] == b[k])
					k++;
				cr_expect_fail("%s: %s differs from byte %zu: ours %02x, the kernel's %02x",
					       what, name, k, a[k], b[k]);
			} else {
				uint64_t va = 0, vb = 0;

				memcpy(&va, a, sz);
				memcpy(&vb, b, sz);
				cr_expect_fail("%s: %s is %#" PRIx64 ", the kernel's %#" PRIx64, what, name,
					       va, vb);
			}
		}
	}
	return diffs;
}

/* The last MAD host sent, which must be attr. */
static struct xrxe_cm_msg ours_last(int host, uint16_t attr)
{
	struct xrxe_cm_msg m;
	const struct xrxe_cmh_msg *x = xrxe_cmh_last(&h, host, attr);

	cr_assert_not_null(x, "host %d sent no %s", host, xrxe_cm_attr_name(attr));
	cr_assert_eq(xrxe_cmh_parse(x, &m), 0);
	return m;
}

/* Feed the kernel's MAD to host `to` (from the other host), with fn
 * rewriting what names the peer. */
static void kfeed(int to, const struct kframe *k, void (*fix)(struct xrxe_cm_msg *m, uint32_t v),
		  uint32_t v)
{
	struct xrxe_cm_msg m = k->m;
	uint8_t mad[XRXE_MAD_SIZE];

	if (fix)
		fix(&m, v);
	cr_assert_eq(xrxe_cm_mad_build(&m, mad), 0);
	if (!fix)
		cr_assert_eq(memcmp(mad, k->mad, XRXE_MAD_SIZE), 0, "the codec rebuilds it");
	xrxe_cmh_inject(&h, to == A ? B : A, to, k->fam, mad, XRXE_MAD_SIZE);
	xrxe_cmh_flush(&h);
}

/* the comm ID that names the receiver is the second one in REP, RTU,
 * DREQ, DREP (and the REJ's) */
static void fix_remote(struct xrxe_cm_msg *m, uint32_t v)
{
	m->rep.remote_comm_id = v; /* same offset in every one of them */
}

_Static_assert(offsetof(struct xrxe_cm_msg, rep.remote_comm_id) ==
			       offsetof(struct xrxe_cm_msg, rtu.remote_comm_id) &&
		       offsetof(struct xrxe_cm_msg, rep.remote_comm_id) ==
			       offsetof(struct xrxe_cm_msg, dreq.remote_comm_id) &&
		       offsetof(struct xrxe_cm_msg, rep.remote_comm_id) ==
			       offsetof(struct xrxe_cm_msg, drep.remote_comm_id),
	       "remote comm IDs line up");

static uint32_t local_comm_id(struct xrxe_cmh_owner *o)
{
	struct xrxe_cm_id_info in;

	cr_assert(xrxe_cmh_info(o, &in));
	return in.local_comm_id;
}

/* One kernel connection, by its REQ frame: the rest of its frames. */
struct kconn {
	unsigned req, rep, rtu, dreq, drep; /* the first DREQ and its DREP */
	unsigned dreq2, drep2;              /* the other side's DREQ when they crossed */
	bool active_dreq;                   /* the first DREQ is the active side's */
};

static struct kconn kconn_of(unsigned req)
{
	struct kconn c = { .req = req };
	const struct xrxe_cm_msg *q = &K(req, XRXE_CM_ATTR_REQ)->m, *p, *d;

	c.rep = kfind(req, XRXE_CM_ATTR_REP, is_rep_for, q);
	cr_assert_neq(c.rep, 0, "no REP for frame %u", req);
	p = &kf[c.rep - 1].m;
	c.rtu = kfind(c.rep, XRXE_CM_ATTR_RTU, is_rtu_for, p);
	c.dreq = kfind(c.rtu, XRXE_CM_ATTR_DREQ, is_dreq_of, p);
	cr_assert(c.rtu && c.dreq, "frame %u: no RTU or DREQ", req);
	d = &kf[c.dreq - 1].m;
	c.active_dreq = d->dreq.local_comm_id == q->req.local_comm_id;
	c.drep = kfind(c.dreq, XRXE_CM_ATTR_DREP, is_drep_for, d);
	cr_assert_neq(c.drep, 0);
	c.dreq2 = kfind(c.dreq, XRXE_CM_ATTR_DREQ, is_dreq_of, p);
	if (c.dreq2)
		c.drep2 = kfind(c.dreq2, XRXE_CM_ATTR_DREP, is_drep_for, &kf[c.dreq2 - 1].m);
	return c;
}

static const unsigned kreqs[] = { 1, 42, 71, 72, 109, 123, 146 };

TestSuite(cm_kernel, .init = kload, .fini = kunload);

/* Our passive side answers the kernel's active side: REP, DREP (or DREQ)
 * as the kernel's passive side sent them. */
static void kernel_passive(unsigned reqno)
{
	struct kconn kc = kconn_of(reqno);
	const struct kframe *q = K(kc.req, XRXE_CM_ATTR_REQ), *p = K(kc.rep, XRXE_CM_ATTR_REP);
	const struct xrxe_cm_req *r = &q->m.req;
	struct xrxe_cmh_owner *l, *b;
	struct xrxe_cm_conn_param ap = { 0 };
	struct xrxe_cmh_event *e;
	struct xrxe_cm_msg m;
	static const char *const skip_ids[] = { "local_comm_id", "starting_psn", NULL };
	static const char *const skip_own[] = { "local_comm_id", NULL };
	static const char *const skip_own_tid[] = { "local_comm_id", "hdr.tid", NULL };
	char what[64];
	uint32_t lc;

	H(A)->deaf = true; /* the kernel's side is the capture */
	l = make_listener(B, RDMA_PS_TCP, IBV_QPT_RC,
			  xrxe_cmh_addr(H(B), q->fam, (uint16_t)r->service_id), 8);
	kfeed(B, q, NULL, 0);
	cr_assert_eq(children_of(l), 1, "frame %u reached the listener", kc.req);
	b = child_of(l, 0);
	e = expect_ev(b, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	cr_assert_eq(e->ev.param.conn.qp_num, r->local_qpn);
	cr_assert_eq(e->ev.param.conn.responder_resources, r->initiator_depth);
	cr_assert_eq(e->ev.param.conn.initiator_depth, r->responder_resources);
	cr_assert_eq(e->ev.param.conn.retry_count, r->retry_count);
	cr_assert_eq(e->ev.param.conn.rnr_retry_count, r->rnr_retry_count);
	cr_assert_eq(memcmp(e->ev.param.conn.private_data, r->private_data + XRXE_CMA_HDR_SIZE,
			    XRXE_CM_REQ_PRIVATE - XRXE_CMA_HDR_SIZE), 0);

	/* accept as the kernel's passive application did */
	ap.qp_num = p->m.rep.local_qpn;
	ap.responder_resources = p->m.rep.responder_resources;
	ap.initiator_depth = p->m.rep.initiator_depth;
	ap.flow_control = p->m.rep.flow_control;
	ap.rnr_retry_count = p->m.rep.rnr_retry_count;
	ap.srq = p->m.rep.srq;
	ap.private_data_len = XRXE_CM_REP_PRIVATE;
	memcpy(ap.private_data, p->m.rep.private_data, XRXE_CM_REP_PRIVATE);
	cr_assert_eq(xrxe_cm_accept(H(B)->cm, b->id, &ap, NULL, 0, h.now), 0);
	m = ours_last(B, XRXE_CM_ATTR_REP);
	snprintf(what, sizeof(what), "REP (frame %u)", kc.rep);
	cr_expect_eq(kcompare(what, &m, &p->m, skip_ids), 0);
	cr_expect_eq(m.hdr.tid, q->m.hdr.tid, "the REP keeps the REQ's TID");
	lc = local_comm_id(b);
	cr_expect_eq(m.rep.local_comm_id, lc);

	/* the QP this gives: what the kernel's passive QP did (test_cm_mad
	 * checks the capture's RC packets against these fields) */
	{
		struct ibv_qp_attr rtr, rts;
		int mask;

		cr_assert_eq(xrxe_cm_init_qp_attr(H(B)->cm, b->id, IBV_QPS_RTR, &rtr, &mask), 0);
		cr_assert_eq(xrxe_cm_init_qp_attr(H(B)->cm, b->id, IBV_QPS_RTS, &rts, &mask), 0);
		cr_expect_eq(rtr.dest_qp_num, r->local_qpn);
		cr_expect_eq(rtr.rq_psn, m.rep.starting_psn);
		cr_expect_eq(rts.sq_psn, r->starting_psn, "sends from the REQ's PSN");
		cr_expect_eq(rtr.path_mtu, r->path_mtu);
		cr_expect_eq(rtr.max_dest_rd_atomic, p->m.rep.responder_resources);
		cr_expect_eq(rts.max_rd_atomic, p->m.rep.initiator_depth);
		cr_expect_eq(rtr.ah_attr.grh.flow_label, r->primary.flow_label,
			     "one flow label both ways");
		cr_expect_eq(rtr.ah_attr.grh.hop_limit, r->primary.hop_limit);
		cr_expect(!memcmp(&rtr.ah_attr.grh.dgid, &r->primary.local_gid, 16));
		cr_expect_eq(rts.timeout, r->primary.local_ack_timeout);
		cr_expect_eq(rts.retry_cnt, r->retry_count);
		cr_expect_eq(rts.rnr_retry, r->rnr_retry_count, "the REQ's RNR retry count");
	}

	/* the kernel's RTU */
	kfeed(B, K(kc.rtu, XRXE_CM_ATTR_RTU), fix_remote, lc);
	expect_ev(b, RDMA_CM_EVENT_ESTABLISHED, 0);

	if (kc.active_dreq) {
		/* the kernel's active side disconnects; ours answers */
		const struct kframe *d = K(kc.dreq, XRXE_CM_ATTR_DREQ);

		if (kc.dreq2) {
			/* ... while ours disconnects too (frames 190-193) */
			const struct kframe *d2 = K(kc.dreq2, XRXE_CM_ATTR_DREQ);

			cr_assert_eq(xrxe_cm_disconnect(H(B)->cm, b->id, h.now), 0);
			m = ours_last(B, XRXE_CM_ATTR_DREQ);
			snprintf(what, sizeof(what), "passive DREQ (frame %u)", kc.dreq2);
			cr_expect_eq(kcompare(what, &m, &d2->m, skip_own_tid), 0);
			cr_expect_neq(m.hdr.tid, q->m.hdr.tid, "a passive side's DREQ has its own TID");
			cr_expect_neq(d2->m.hdr.tid, q->m.hdr.tid, "as the kernel's has");
		}
		kfeed(B, d, fix_remote, lc);
		expect_ev(b, RDMA_CM_EVENT_DISCONNECTED, 0);
		if (!kc.dreq2)
			cr_assert_eq(xrxe_cm_disconnect(H(B)->cm, b->id, h.now), 0);
		m = ours_last(B, XRXE_CM_ATTR_DREP);
		snprintf(what, sizeof(what), "DREP (frame %u)", kc.drep);
		cr_expect_eq(kcompare(what, &m, &K(kc.drep, XRXE_CM_ATTR_DREP)->m, skip_own), 0);
		cr_expect_eq(m.hdr.tid, d->m.hdr.tid);
		if (kc.dreq2) {
			/* the kernel's answer to our DREQ comes in TimeWait */
			kfeed(B, K(kc.drep2, XRXE_CM_ATTR_DREP), fix_remote, lc);
			cr_assert_eq(xrxe_cmh_stats(H(B)).drop_duplicate, 1);
		}
	} else {
		/* the passive side disconnects (ucmatose's server): ours */
		const struct kframe *d = K(kc.dreq, XRXE_CM_ATTR_DREQ);

		cr_assert_eq(xrxe_cm_disconnect(H(B)->cm, b->id, h.now), 0);
		m = ours_last(B, XRXE_CM_ATTR_DREQ);
		snprintf(what, sizeof(what), "passive DREQ (frame %u)", kc.dreq);
		cr_expect_eq(kcompare(what, &m, &d->m, skip_own_tid), 0);
		cr_expect_neq(m.hdr.tid, q->m.hdr.tid, "a passive side's DREQ has its own TID");
		cr_expect_neq(d->m.hdr.tid, q->m.hdr.tid, "as the kernel's has");
		{
			struct xrxe_cm_msg dr = K(kc.drep, XRXE_CM_ATTR_DREP)->m;
			uint8_t mad[XRXE_MAD_SIZE];

			/* the kernel's DREP answers the kernel's DREQ: give it
			 * ours's TID and comm ID */
			dr.hdr.tid = m.hdr.tid;
			dr.drep.remote_comm_id = lc;
			cr_assert_eq(xrxe_cm_mad_build(&dr, mad), 0);
			xrxe_cmh_inject(&h, A, B, q->fam, mad, sizeof(mad));
		}
		expect_ev(b, RDMA_CM_EVENT_DISCONNECTED, 0);
	}
	cr_assert_str_eq(ib_state(b), "timewait");
	xrxe_cmh_advance(&h, 60 * SEC);
	expect_ev(b, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	cr_assert_eq(xrxe_cmh_stats(H(B)).drop_unknown_id + xrxe_cmh_stats(H(B)).drop_bad_state, 0);
	no_faults();
}

/* Our active side speaks to the kernel's passive side: REQ, RTU, DREQ (or
 * DREP) as the kernel's active side sent them for the same connection. */
static void kernel_active(unsigned reqno)
{
	struct kconn kc = kconn_of(reqno);
	const struct kframe *q = K(kc.req, XRXE_CM_ATTR_REQ), *p = K(kc.rep, XRXE_CM_ATTR_REP);
	const struct xrxe_cm_req *r = &q->m.req;
	struct xrxe_cmh_owner *a;
	struct xrxe_cm_conn_param cp = { 0 };
	struct xrxe_cma_hdr ch;
	struct xrxe_cmh_event *e;
	struct xrxe_cm_msg m, ourreq;
	static const char *const skip_req[] = { "hdr.tid", "local_comm_id", "starting_psn", NULL };
	static const char *const skip_own_tid[] = { "hdr.tid", "local_comm_id", NULL };
	char what[64];
	uint32_t lc;

	H(B)->deaf = true;
	cr_assert_eq(xrxe_cma_hdr_parse(r->private_data, XRXE_CM_REQ_PRIVATE, &ch), 0);
	cr_assert_eq(xrxe_cmh_create_id(H(A), RDMA_PS_TCP, IBV_QPT_RC, &a), 0);
	{
		struct xrxe_cm_addr src = xrxe_cmh_addr(H(A), q->fam, ch.port);

		cr_assert_eq(xrxe_cm_bind(H(A)->cm, a->id, &src), 0);
	}
	cr_assert_eq(xrxe_cmh_resolve(a, H(B), q->fam, (uint16_t)r->service_id), 0);
	expect_ev(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	expect_ev(a, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	cp.qp_num = r->local_qpn;
	cp.responder_resources = r->responder_resources;
	cp.initiator_depth = r->initiator_depth;
	cp.retry_count = r->retry_count;
	cp.rnr_retry_count = r->rnr_retry_count;
	cp.flow_control = r->flow_control;
	cp.srq = r->srq;
	cp.private_data_len = XRXE_CM_REQ_PRIVATE - XRXE_CMA_HDR_SIZE;
	memcpy(cp.private_data, r->private_data + XRXE_CMA_HDR_SIZE, cp.private_data_len);
	cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &cp, NULL, h.now), 0);
	ourreq = ours_last(A, XRXE_CM_ATTR_REQ);
	snprintf(what, sizeof(what), "REQ (frame %u)", kc.req);
	cr_expect_eq(kcompare(what, &ourreq, &q->m, skip_req), 0);
	lc = local_comm_id(a);
	cr_expect_eq(ourreq.req.local_comm_id, lc);

	/* the kernel's REP */
	kfeed(A, p, fix_remote, lc);
	e = expect_ev(a, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	cr_assert_eq(e->ev.param.conn.qp_num, p->m.rep.local_qpn);
	cr_assert_eq(memcmp(e->ev.param.conn.private_data, p->m.rep.private_data, XRXE_CM_REP_PRIVATE),
		     0);
	{
		struct ibv_qp_attr rtr, rts;
		int mask;

		cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, a->id, IBV_QPS_RTR, &rtr, &mask), 0);
		cr_assert_eq(xrxe_cm_init_qp_attr(H(A)->cm, a->id, IBV_QPS_RTS, &rts, &mask), 0);
		cr_expect_eq(rtr.dest_qp_num, p->m.rep.local_qpn);
		cr_expect_eq(rtr.rq_psn, ourreq.req.starting_psn);
		cr_expect_eq(rts.sq_psn, p->m.rep.starting_psn, "sends from the REP's PSN");
		cr_expect_eq(rtr.path_mtu, r->path_mtu);
		cr_expect_eq(rtr.max_dest_rd_atomic, p->m.rep.initiator_depth);
		cr_expect_eq(rts.max_rd_atomic, p->m.rep.responder_resources);
		cr_expect_eq(rtr.ah_attr.grh.flow_label, r->primary.flow_label);
		cr_expect(!memcmp(&rtr.ah_attr.grh.dgid, &r->primary.remote_gid, 16));
		cr_expect_eq(rts.timeout, r->primary.local_ack_timeout);
		cr_expect_eq(rts.retry_cnt, r->retry_count);
		cr_expect_eq(rts.rnr_retry, p->m.rep.rnr_retry_count, "the REP's RNR retry count");
	}
	cr_assert_eq(xrxe_cm_establish(H(A)->cm, a->id, h.now), 0);
	m = ours_last(A, XRXE_CM_ATTR_RTU);
	snprintf(what, sizeof(what), "RTU (frame %u)", kc.rtu);
	cr_expect_eq(kcompare(what, &m, &K(kc.rtu, XRXE_CM_ATTR_RTU)->m, skip_own_tid), 0);
	cr_expect_eq(m.hdr.tid, ourreq.hdr.tid, "the RTU keeps the REQ's TID");

	if (kc.active_dreq) {
		const struct kframe *d = K(kc.dreq, XRXE_CM_ATTR_DREQ);

		cr_assert_eq(xrxe_cm_disconnect(H(A)->cm, a->id, h.now), 0);
		m = ours_last(A, XRXE_CM_ATTR_DREQ);
		snprintf(what, sizeof(what), "DREQ (frame %u)", kc.dreq);
		cr_expect_eq(kcompare(what, &m, &d->m, skip_own_tid), 0);
		cr_expect_eq(m.hdr.tid, ourreq.hdr.tid, "an active side's DREQ keeps its REQ's TID");
		cr_expect_eq(d->m.hdr.tid, q->m.hdr.tid, "as the kernel's does");
		if (kc.dreq2) {
			/* the kernel's passive side disconnects at once too
			 * (frames 190-193): ours answers its DREQ in DREQ_SENT */
			const struct kframe *d2 = K(kc.dreq2, XRXE_CM_ATTR_DREQ);

			kfeed(A, d2, fix_remote, lc);
			expect_ev(a, RDMA_CM_EVENT_DISCONNECTED, 0);
			m = ours_last(A, XRXE_CM_ATTR_DREP);
			snprintf(what, sizeof(what), "DREP (frame %u)", kc.drep2);
			cr_expect_eq(kcompare(what, &m, &K(kc.drep2, XRXE_CM_ATTR_DREP)->m,
					      (const char *const[]){ "local_comm_id", NULL }), 0);
			cr_expect_eq(m.hdr.tid, d2->m.hdr.tid);
			/* and the kernel's DREP to ours is a repeat now */
			{
				struct xrxe_cm_msg dr = K(kc.drep, XRXE_CM_ATTR_DREP)->m;
				uint8_t mad[XRXE_MAD_SIZE];

				dr.hdr.tid = ourreq.hdr.tid;
				dr.drep.remote_comm_id = lc;
				cr_assert_eq(xrxe_cm_mad_build(&dr, mad), 0);
				xrxe_cmh_inject(&h, B, A, q->fam, mad, sizeof(mad));
			}
			cr_assert_eq(xrxe_cmh_stats(H(A)).drop_duplicate, 1);
		} else {
			struct xrxe_cm_msg dr = K(kc.drep, XRXE_CM_ATTR_DREP)->m;
			uint8_t mad[XRXE_MAD_SIZE];

			dr.hdr.tid = ourreq.hdr.tid;
			dr.drep.remote_comm_id = lc;
			cr_assert_eq(xrxe_cm_mad_build(&dr, mad), 0);
			xrxe_cmh_inject(&h, B, A, q->fam, mad, sizeof(mad));
			expect_ev(a, RDMA_CM_EVENT_DISCONNECTED, 0);
		}
	} else {
		const struct kframe *d = K(kc.dreq, XRXE_CM_ATTR_DREQ);

		kfeed(A, d, fix_remote, lc);
		expect_ev(a, RDMA_CM_EVENT_DISCONNECTED, 0);
		cr_assert_eq(xrxe_cm_disconnect(H(A)->cm, a->id, h.now), 0);
		m = ours_last(A, XRXE_CM_ATTR_DREP);
		snprintf(what, sizeof(what), "DREP (frame %u)", kc.drep);
		cr_expect_eq(kcompare(what, &m, &K(kc.drep, XRXE_CM_ATTR_DREP)->m,
				      (const char *const[]){ "local_comm_id", NULL }), 0);
		cr_expect_eq(m.hdr.tid, d->m.hdr.tid);
	}
	cr_assert_str_eq(ib_state(a), "timewait");
	xrxe_cmh_advance(&h, 60 * SEC);
	expect_ev(a, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	cr_assert_eq(xrxe_cmh_stats(H(A)).drop_unknown_id + xrxe_cmh_stats(H(A)).drop_bad_state, 0);
	no_faults();
}

Test(cm_kernel, capture_has_the_connections)
{
	for (size_t i = 0; i < sizeof(kreqs) / sizeof(kreqs[0]); i++) {
		struct kconn c = kconn_of(kreqs[i]);

		cr_assert_eq(kf[kreqs[i] - 1].m.req.service_id >> 16, 0x0106, "RDMA_PS_TCP");
		if (kreqs[i] == 123) {
			cr_assert_neq(c.dreq2, 0, "frames 190-193: DREQs crossed");
			cr_assert_neq(c.drep2, 0);
		}
		if (kreqs[i] == 71 || kreqs[i] == 72)
			cr_assert(!c.active_dreq, "ucmatose's server disconnects");
	}
	no_faults();
}

Test(cm_kernel, rping_ipv4_passive) { kernel_passive(1); }
Test(cm_kernel, rping_ipv6_passive) { kernel_passive(42); }
Test(cm_kernel, ucmatose_passive) { kernel_passive(71); kunload(); kload(); kernel_passive(72); }
Test(cm_kernel, rdma_server_passive) { kernel_passive(109); }
Test(cm_kernel, ib_send_bw_passive) { kernel_passive(123); kunload(); kload(); kernel_passive(146); }
Test(cm_kernel, rping_ipv4_active) { kernel_active(1); }
Test(cm_kernel, rping_ipv6_active) { kernel_active(42); }
Test(cm_kernel, ucmatose_active) { kernel_active(71); kunload(); kload(); kernel_active(72); }
Test(cm_kernel, rdma_client_active) { kernel_active(109); }
Test(cm_kernel, ib_send_bw_active) { kernel_active(123); kunload(); kload(); kernel_active(146); }

/* udaddy: SIDR in the UDP port space, both sides. */
Test(cm_kernel, udaddy_sidr)
{
	for (unsigned k = 0; k < 2; k++) {
		if (k) {
			/* a fresh pair for the second one (before any frame
			 * pointer is taken: kload makes the table anew) */
			kunload();
			kload();
		}
		const struct kframe *q = K(97 + k, XRXE_CM_ATTR_SIDR_REQ);
		unsigned pno = kfind(97 + k, XRXE_CM_ATTR_SIDR_REP, is_sidr_rep_for, &q->m);
		const struct kframe *p = K(pno, XRXE_CM_ATTR_SIDR_REP);
		struct xrxe_cmh_owner *l, *b, *a;
		struct xrxe_cm_conn_param cp = { 0 };
		struct xrxe_cmh_event *e;
		struct xrxe_cma_hdr ch;
		struct xrxe_cm_msg m, ourreq;
		uint16_t port = (uint16_t)q->m.sidr_req.service_id;
		char what[64];

		/* ours passive */
		H(A)->deaf = true;
		l = make_listener(B, RDMA_PS_UDP, IBV_QPT_UD, xrxe_cmh_addr(H(B), q->fam, port), 8);
		kfeed(B, q, NULL, 0);
		cr_assert_eq(children_of(l), 1);
		b = child_of(l, 0);
		expect_ev(b, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
		cp.qp_num = p->m.sidr_rep.qpn;
		cp.private_data_len = XRXE_CM_SIDR_REP_PRIVATE;
		memcpy(cp.private_data, p->m.sidr_rep.private_data, XRXE_CM_SIDR_REP_PRIVATE);
		cr_assert_eq(xrxe_cm_accept(H(B)->cm, b->id, &cp, NULL, 0, h.now), 0);
		m = ours_last(B, XRXE_CM_ATTR_SIDR_REP);
		snprintf(what, sizeof(what), "SIDR_REP (frame %u)", pno);
		cr_expect_eq(kcompare(what, &m, &p->m, NULL), 0);

		/* ours active */
		H(A)->deaf = false;
		H(B)->deaf = true;
		cr_assert_eq(xrxe_cma_hdr_parse(q->m.sidr_req.private_data, XRXE_CM_SIDR_REQ_PRIVATE,
						&ch), 0);
		cr_assert_eq(xrxe_cmh_create_id(H(A), RDMA_PS_UDP, IBV_QPT_UD, &a), 0);
		{
			struct xrxe_cm_addr src = xrxe_cmh_addr(H(A), q->fam, ch.port);

			cr_assert_eq(xrxe_cm_bind(H(A)->cm, a->id, &src), 0);
		}
		cr_assert_eq(xrxe_cmh_resolve(a, H(B), q->fam, port), 0);
		expect_ev(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
		expect_ev(a, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
		memset(&cp, 0, sizeof(cp));
		cp.private_data_len = XRXE_CM_SIDR_REQ_PRIVATE - XRXE_CMA_HDR_SIZE;
		memcpy(cp.private_data, q->m.sidr_req.private_data + XRXE_CMA_HDR_SIZE,
		       cp.private_data_len);
		cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &cp, NULL, h.now), 0);
		ourreq = ours_last(A, XRXE_CM_ATTR_SIDR_REQ);
		snprintf(what, sizeof(what), "SIDR_REQ (frame %u)", 97 + k);
		cr_expect_eq(kcompare(what, &ourreq, &q->m,
				      (const char *const[]){ "hdr.tid", "request_id", NULL }), 0);
		{
			struct xrxe_cm_msg pr = p->m;
			uint8_t mad[XRXE_MAD_SIZE];

			pr.hdr.tid = ourreq.hdr.tid;
			pr.sidr_rep.request_id = ourreq.sidr_req.request_id;
			cr_assert_eq(xrxe_cm_mad_build(&pr, mad), 0);
			xrxe_cmh_inject(&h, B, A, q->fam, mad, sizeof(mad));
		}
		e = expect_ev(a, RDMA_CM_EVENT_ESTABLISHED, 0);
		cr_assert_eq(e->ev.param.ud.qp_num, p->m.sidr_rep.qpn);
		cr_assert_eq(e->ev.param.ud.qkey, p->m.sidr_rep.qkey);
	}
	no_faults();
}

/* rping to a port nobody listens on (frames 118-119). */
Test(cm_kernel, rej_nobody_listens)
{
	const struct kframe *q = K(118, XRXE_CM_ATTR_REQ), *j = K(119, XRXE_CM_ATTR_REJ);
	struct xrxe_cm_msg m;

	H(A)->deaf = true;
	kfeed(B, q, NULL, 0);
	m = ours_last(B, XRXE_CM_ATTR_REJ);
	cr_expect_eq(kcompare("REJ (frame 119)", &m, &j->m, NULL), 0);
	cr_assert_eq(xrxe_cmh_stats(H(B)).ids, 0);
	/* the active side: ours takes the kernel's REJ */
	{
		struct xrxe_cmh_owner *a;
		struct xrxe_cma_hdr ch;
		struct xrxe_cm_conn_param cp = { .qp_num = q->m.req.local_qpn };
		struct xrxe_cm_msg jr = j->m, ourreq;
		uint8_t mad[XRXE_MAD_SIZE];

		H(A)->deaf = false;
		H(B)->deaf = true;
		cr_assert_eq(xrxe_cma_hdr_parse(q->m.req.private_data, XRXE_CM_REQ_PRIVATE, &ch), 0);
		a = make_active(A, B, q->fam, RDMA_PS_TCP, IBV_QPT_RC, (uint16_t)q->m.req.service_id);
		cr_assert_eq(xrxe_cm_connect(H(A)->cm, a->id, &cp, NULL, h.now), 0);
		ourreq = ours_last(A, XRXE_CM_ATTR_REQ);
		jr.hdr.tid = ourreq.hdr.tid;
		jr.rej.remote_comm_id = ourreq.req.local_comm_id;
		cr_assert_eq(xrxe_cm_mad_build(&jr, mad), 0);
		xrxe_cmh_inject(&h, B, A, q->fam, mad, sizeof(mad));
		expect_ev(a, RDMA_CM_EVENT_REJECTED, XRXE_CM_REJ_INVALID_SERVICE_ID);
	}
	no_faults();
}
