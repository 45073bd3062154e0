// SPDX-License-Identifier: MIT
/*
 * Event-driven scheduling (src/transport/sched.c): xrxe_tp_poll visits only
 * QPs with work. With thousands of idle connected QPs, or thousands of busy
 * ones, a QP whose application rings the doorbell sends in the very next
 * pass; no post and no timer is lost; idle QPs are on neither the run queue
 * nor the timer heap.
 *
 * One transport, no peer: frames are counted by destination QPN as they
 * leave (each QP's destination QPN is its index here). The idle QPs share
 * one SQ and one RQ ring (they never post: the core reads a send queue only
 * when its doorbell rings), which keeps thousands of QPs cheap.
 *
 * XRXE_SCHED_MEASURE=1 prints the time of an empty pass with 256 .. 65 536
 * idle QPs (a report, never an assertion: the machine may be loaded).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_harness.h"
#include "transport/tp_internal.h"

#define MAXQ 65600u

static uint8_t frame[4096];
static uint32_t *sent_to; /* frames per destination QPN */
static uint64_t frames;

static int cap_reserve(void *user, uint32_t len, struct xrxe_tp_txbuf *buf)
{
	(void)user;
	if (len > sizeof(frame))
		return -ENOBUFS;
	buf->frag[0].data = frame;
	buf->frag[0].len = sizeof(frame);
	buf->nfrags = 1;
	return 0;
}

static void cap_submit(void *user, struct xrxe_tp_txbuf *buf)
{
	/* Ethernet 14 + IPv4 20 + UDP 8, then the BTH: DestQP in bytes 5..7 */
	const uint8_t *bth = buf->frag[0].data + 42;
	uint32_t qpn = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];

	(void)user;
	frames++;
	if (qpn < MAXQ)
		sent_to[qpn]++;
}

static const struct xrxe_tp_ops cap_ops = { .tx_reserve = cap_reserve, .tx_submit = cap_submit };

struct env {
	struct xrxe_tp *tp;
	uint32_t pdn;
	struct xrxe_ring *cq_ring, *idle_sq, *idle_rq;
	struct xrxe_tp_cq *cq;
	uint64_t now;
	struct xrxe_tp_qp **qp;
	struct xrxe_ring **sq; /* own SQ rings (busy and target QPs), else NULL */
	uint32_t *sq_prod;
	uint32_t nqp;
};

#define SQ_ELEM 128u
#define RQ_ELEM 32u

static void env_init(struct env *e, uint32_t max_qp)
{
	struct xrxe_tp_config cfg = {
		.ops = &cap_ops, .max_path_mtu = 1024, .max_qp = max_qp, .max_mr = 64,
		/* retransmit on the Local ACK Timeout only: the test arms it */
		.fixed_ack_timeout = true,
	};

	memset(e, 0, sizeof(*e));
	sent_to = calloc(MAXQ, sizeof(*sent_to));
	frames = 0;
	cr_assert(sent_to);
	e->now = 1000000;
	cr_assert_eq(xrxe_tp_create(&cfg, &e->tp), 0);
	cr_assert_eq(xrxe_tp_pd_alloc(e->tp, &e->pdn), 0);
	e->cq_ring = xrxe_tph_ring_alloc(1024, sizeof(struct xrxe_cqe));
	cr_assert_eq(xrxe_tp_cq_create(e->tp, e->cq_ring, 1024, NULL, &e->cq), 0);
	e->idle_sq = xrxe_tph_ring_alloc(2, SQ_ELEM);
	e->idle_rq = xrxe_tph_ring_alloc(2, RQ_ELEM);
	e->qp = calloc(max_qp, sizeof(*e->qp));
	e->sq = calloc(max_qp, sizeof(*e->sq));
	e->sq_prod = calloc(max_qp, sizeof(*e->sq_prod));
	cr_assert(e->qp && e->sq && e->sq_prod);
}

/* An RC QP connected to destination QPN i (nobody answers), in RTS. own_sq:
 * a send queue of that many slots of its own (0: the shared idle ring).
 * timeout: the Local ACK Timeout exponent (0: none). */
static void add_qp(struct env *e, uint32_t own_sq, uint8_t timeout)
{
	uint32_t i = e->nqp++, qpn;
	struct xrxe_tp_qp_init init = {
		.qp_type = IBV_QPT_RC, .pdn = e->pdn, .send_cq = e->cq, .recv_cq = e->cq,
		.sq_slots = own_sq ? own_sq : 2, .rq = e->idle_rq, .rq_slots = 2,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a;
	struct xrxe_av av = { .ip_version = 4, .hop_limit = 64 };

	if (own_sq)
		e->sq[i] = xrxe_tph_ring_alloc(own_sq, SQ_ELEM);
	init.sq = own_sq ? e->sq[i] : e->idle_sq;
	cr_assert_eq(xrxe_tp_qp_create(e->tp, &init, &qpn, &e->qp[i]), 0);
	av.saddr.v4.s_addr = htonl(0x0a000001);
	av.daddr.v4.s_addr = htonl(0x0a000002);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	cr_assert_eq(xrxe_tp_qp_modify(e->tp, e->qp[i], &a,
				       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS, NULL), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = i;
	a.max_dest_rd_atomic = 1;
	cr_assert_eq(xrxe_tp_qp_modify(e->tp, e->qp[i], &a,
				       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					       IBV_QP_MIN_RNR_TIMER, &av), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	cr_assert_eq(xrxe_tp_qp_modify(e->tp, e->qp[i], &a,
				       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					       IBV_QP_MAX_QP_RD_ATOMIC, NULL), 0);
}

/* n zero-length SENDs on QP i's own ring; doorbell: ring it (the shim's
 * xrxe_ring_doorbell_qp, as the daemon passes it on) */
static void post(struct env *e, uint32_t i, uint32_t n, bool doorbell)
{
	struct xrxe_ring *r = e->sq[i];

	for (uint32_t k = 0; k < n; k++) {
		struct xrxe_send_wqe *w =
			(void *)(r->data + ((size_t)(e->sq_prod[i] & r->index_mask) << r->log2_elem_size));

		memset(w, 0, sizeof(*w));
		w->wr_id = k;
		w->opcode = IBV_WR_SEND;
		e->sq_prod[i]++;
	}
	__atomic_store_n(&r->producer, e->sq_prod[i] & r->index_mask, __ATOMIC_RELEASE);
	if (doorbell)
		xrxe_tp_qp_doorbell(e->tp, e->qp[i]);
}

static void env_fini(struct env *e)
{
	xrxe_tp_destroy(e->tp);
	for (uint32_t i = 0; i < e->nqp; i++)
		free(e->sq[i]);
	free(e->qp);
	free(e->sq);
	free(e->sq_prod);
	free(e->cq_ring);
	free(e->idle_sq);
	free(e->idle_rq);
	free(sent_to);
}

static bool poll_once(struct env *e)
{
	e->now += 1000;
	return xrxe_tp_poll(e->tp, e->now);
}

#define IDLE 4096u

/* Idle connected QPs are nowhere: no run queue, no timer; a pass with them
 * does nothing, and a QP that rings its doorbell sends in the next pass. */
Test(transport_sched, idle_qps_cost_nothing_and_never_delay_a_doorbell)
{
	struct env e;
	uint32_t t;

	env_init(&e, IDLE + 1);
	for (uint32_t i = 0; i < IDLE; i++)
		add_qp(&e, 0, 0);
	t = e.nqp;
	add_qp(&e, 4, 0);
	/* every modify queued its QP once: the first pass empties the queue */
	poll_once(&e);
	cr_assert_eq(e.tp->run_len, 0, "%u QPs still queued", e.tp->run_len);
	cr_assert_eq(e.tp->theap_n, 0);
	cr_assert_not(poll_once(&e), "an idle pass did something");
	cr_assert_eq(xrxe_tp_next_deadline(e.tp), UINT64_MAX);
	cr_assert_eq(frames, 0);
	/* a post with its doorbell: out in the next pass */
	post(&e, t, 1, true);
	cr_assert_eq(e.tp->run_len, 1);
	poll_once(&e);
	cr_assert_eq(sent_to[t], 1, "the posted SEND did not leave in the first pass");
	cr_assert_eq(frames, 1);
	/* a QP that did something has one more turn, then leaves the queue */
	poll_once(&e);
	cr_assert_eq(e.tp->run_len, 0);
	/* a post without a doorbell is not looked for (the daemon never scans) */
	post(&e, t, 1, false);
	for (int k = 0; k < 4; k++)
		poll_once(&e);
	cr_assert_eq(sent_to[t], 1);
	xrxe_tp_qp_doorbell(e.tp, e.qp[t]);
	poll_once(&e);
	cr_assert_eq(sent_to[t], 2);
	env_fini(&e);
}

/* Thousands of QPs with more work than one turn: a QP that rings its
 * doorbell gets its turn in the same round as they do -- never starved --
 * and every busy QP keeps getting its turns too. */
#define BUSY 2048u
#define BUSY_WQES 200u

Test(transport_sched, busy_qps_never_starve_a_new_one)
{
	struct env e;
	uint32_t t, rounds, passes;

	env_init(&e, BUSY + IDLE + 1);
	for (uint32_t i = 0; i < IDLE; i++)
		add_qp(&e, 0, 0);
	for (uint32_t i = 0; i < BUSY; i++)
		add_qp(&e, 256, 0);
	t = e.nqp;
	add_qp(&e, 4, 0);
	poll_once(&e);
	for (uint32_t i = IDLE; i < IDLE + BUSY; i++)
		post(&e, i, BUSY_WQES, true);
	post(&e, t, 1, true);
	/* one round: every QP with work has one turn of at most 64 packets,
	 * over as many passes as the packets a pass may send allow (tp.c
	 * TP_POLL_CALL_BUDGET: the caller reads its frames in between) */
	for (passes = 0; !sent_to[t] && passes < BUSY; passes++)
		poll_once(&e);
	cr_assert_eq(sent_to[t], 1, "the new QP waited behind %u busy ones", BUSY);
	cr_assert_leq(passes, BUSY * 64 / 256 + 1, "a round of %u busy QPs took %u passes", BUSY,
		      passes);
	/* every busy QP had its turn before it; the pass that served it may
	 * have gone on into the next round (at most 256 packets a pass) */
	for (uint32_t i = IDLE, again = 0; i < IDLE + BUSY; i++) {
		cr_assert(sent_to[i] == 64 || sent_to[i] == 128, "busy QP %u sent %u", i,
			  sent_to[i]);
		again += sent_to[i] == 128;
		cr_assert_leq(again, 256 / 64, "%u busy QPs had a second turn first", again);
	}
	for (uint32_t i = 0; i < IDLE; i++)
		cr_assert_eq(sent_to[i], 0);
	/* the busy ones go on: each reaches its send window (128 PSNs, no ACK
	 * comes) after two turns each */
	for (rounds = 0; rounds < 4 * passes && poll_once(&e); rounds++)
		;
	for (uint32_t i = IDLE; i < IDLE + BUSY; i++)
		cr_assert_eq(sent_to[i], XRXE_TP_MAX_UNACKED_PSNS, "busy QP %u sent %u", i,
			     sent_to[i]);
	/* blocked by the window with WQEs left: still queued (their ACK is a
	 * round trip away), and a newcomer still goes out in one pass */
	cr_assert(xrxe_tp_sq_pending(e.tp));
	post(&e, t, 1, true);
	poll_once(&e);
	cr_assert_eq(sent_to[t], 2);
	env_fini(&e);
}

/* Nothing is lost: posts in every order against doorbells (a doorbell for
 * a QP already queued, posts while it is queued, several posts per
 * doorbell), on many QPs -- every WQE leaves exactly once. */
Test(transport_sched, no_post_lost)
{
	enum { N = 512, ROUNDS = 200 };
	uint32_t posted[N] = { 0 };
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	struct env e;

	env_init(&e, N);
	for (uint32_t i = 0; i < N; i++)
		add_qp(&e, 64, 0);
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < 64; k++) {
			uint32_t i, n;

			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			i = (uint32_t)(rng % N);
			n = 1 + (uint32_t)((rng >> 20) % 3);
			/* nothing is acknowledged, so nothing retires: the
			 * ring's 63 slots are all a QP ever posts here */
			if (posted[i] + n > 63)
				continue;
			post(&e, i, n, true);
			posted[i] += n;
		}
		if (r % 3 == 0)
			poll_once(&e);
	}
	while (poll_once(&e))
		;
	for (uint32_t i = 0; i < N; i++)
		cr_assert_eq(sent_to[i], posted[i], "QP %u: %u posted, %u sent", i, posted[i],
			     sent_to[i]);
	env_fini(&e);
}

/* Timers live in the heap: with thousands of idle QPs, a QP's Local ACK
 * Timeout is the transport's next deadline and fires on time. */
Test(transport_sched, timers_fire_among_idle_qps)
{
	struct env e;
	uint64_t d;
	uint32_t t;

	env_init(&e, IDLE + 1);
	for (uint32_t i = 0; i < IDLE; i++)
		add_qp(&e, 0, 0);
	t = e.nqp;
	add_qp(&e, 4, 10); /* 4.096 us << 10 = 4.2 ms */
	poll_once(&e);
	post(&e, t, 1, true);
	poll_once(&e);
	cr_assert_eq(sent_to[t], 1);
	d = xrxe_tp_next_deadline(e.tp);
	cr_assert_eq(d, e.now + (4096ull << 10), "next deadline %llu", (unsigned long long)d);
	cr_assert_eq(e.tp->theap_n, 1);
	e.now = d - 1;
	xrxe_tp_poll(e.tp, e.now);
	cr_assert_eq(sent_to[t], 1, "retransmitted early");
	e.now = d;
	xrxe_tp_poll(e.tp, e.now);
	cr_assert_eq(sent_to[t], 2, "the timeout did not retransmit");
	cr_assert_eq(e.qp[t]->info.timeouts, 1);
	/* destroyed with its timer armed: out of the heap */
	xrxe_tp_qp_destroy(e.tp, e.qp[t]);
	e.qp[t] = NULL;
	cr_assert_eq(e.tp->theap_n, 0);
	cr_assert_eq(xrxe_tp_next_deadline(e.tp), UINT64_MAX);
	env_fini(&e);
}

/* The time of an empty pass by idle QP count (XRXE_SCHED_MEASURE=1). */
Test(transport_sched, measure_idle_pass)
{
	static const uint32_t counts[] = { 256, 1024, 4096, 65536 };
	const char *m = getenv("XRXE_SCHED_MEASURE");

	if (!m || strcmp(m, "1"))
		cr_skip_test("set XRXE_SCHED_MEASURE=1 to measure");
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		struct timespec a, b;
		struct env e;
		const int passes = 20000;
		double ns;

		env_init(&e, counts[c]);
		for (uint32_t i = 0; i < counts[c]; i++)
			add_qp(&e, 0, 0);
		poll_once(&e);
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int k = 0; k < passes; k++)
			poll_once(&e);
		clock_gettime(CLOCK_MONOTONIC, &b);
		ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / passes;
		fprintf(stderr, "# idle pass with %u idle RC QPs: %.1f ns; struct xrxe_tp_qp %zu bytes\n",
			counts[c], ns, sizeof(struct xrxe_tp_qp));
		env_fini(&e);
	}
}

/* Thousands of active QPs between two daemons on two cores (issue 16; the
 * scale bench's `ib_write_bw -q 4096` ended in IBV_WC_RETRY_EXC_ERR). Each
 * daemon's loop reads at most 64 frames, then polls once, and every frame it
 * sends or receives costs it CPU time (tp_harness.h frame_cost_ns: 4 us, a
 * loaded 2-core box). A poll that served every queued QP in one go sent
 * ACT_QPS * ACT_WRITES frames (131 ms here) while the ACKs for them waited
 * unread, so the Local ACK Timeout (67 ms, perftest's timeout 14) of every
 * QP expired on a lossless wire and each one retried what had arrived. Now
 * a pass sends at most TP_POLL_CALL_BUDGET packets (tp.c): no QP's timer
 * fires and every WRITE lands exactly once, in order. (Fairness between
 * busy QPs: busy_qps_never_starve_a_new_one.) */
#define ACT_QPS 4096u
#define ACT_WRITES 8u
#define ACT_LEN 64u

Test(transport_sched, many_active_qps_no_spurious_timeout)
{
	static struct xrxe_tph h;
	static struct xrxe_tph_qp *qa[ACT_QPS], *qb[ACT_QPS];
	static uint32_t done[ACT_QPS];
	static uint8_t src[ACT_QPS][ACT_LEN], dst[ACT_QPS][ACT_WRITES][ACT_LEN];
	struct xrxe_tph_cq *ca, *cb;
	struct xrxe_tph_conn c;
	uint64_t timeouts = 0, retransmits = 0, seq_naks = 0;
	uint32_t lka, lkb, ncomp = 0;
	struct ibv_wc wc[64];
	int n;

	xrxe_tph_init_qps(&h, 7, 1024, ACT_QPS);
	h.pol.rx_burst = 64;
	h.pol.frame_cost_ns = 4000;
	ca = xrxe_tph_cq_create(&h.side[0], 65536);
	cb = xrxe_tph_cq_create(&h.side[1], 64);
	for (uint32_t i = 0; i < ACT_QPS; i++)
		for (uint32_t k = 0; k < ACT_LEN; k++)
			src[i][k] = (uint8_t)(i * 31 + k);
	lka = xrxe_tph_mr(&h.side[0], src, sizeof(src), IBV_ACCESS_LOCAL_WRITE, 0);
	lkb = xrxe_tph_mr(&h.side[1], dst, sizeof(dst),
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0);
	xrxe_tph_conn_default(&c);
	cr_assert_eq(c.timeout, 14); /* 67 ms, as perftest's */
	for (uint32_t i = 0; i < ACT_QPS; i++) {
		qa[i] = xrxe_tph_qp_create(&h.side[0], IBV_QPT_RC, ca, ca, 16, 2, true);
		qb[i] = xrxe_tph_qp_create(&h.side[1], IBV_QPT_RC, cb, cb, 2, 2, true);
		c.psn[0] = i * 977 & 0xffffff;
		cr_assert_eq(xrxe_tph_connect(qa[i], qb[i], &c), 0);
	}
	for (uint32_t i = 0; i < ACT_QPS; i++)
		for (uint32_t w = 0; w < ACT_WRITES; w++) {
			struct xrxe_sge sge = { .addr = (uintptr_t)src[i], .length = ACT_LEN,
						.lkey = lka };
			struct xrxe_tph_send s = {
				.wr_id = (uint64_t)i << 8 | w, .opcode = IBV_WR_RDMA_WRITE,
				.raddr = (uintptr_t)dst[i][w], .rkey = lkb, .sge = &sge, .nsge = 1,
			};

			cr_assert_eq(xrxe_tph_post_send(qa[i], &s), 0);
		}
	/* bounded in virtual time (the run returns when nothing is due) */
	for (int r = 0; r < 100 && ncomp < ACT_QPS * ACT_WRITES; r++) {
		xrxe_tph_run(&h, 50000000);
		while ((n = xrxe_tph_poll_cq(ca, wc, 64)) > 0)
			for (int k = 0; k < n; k++) {
				uint32_t i = (uint32_t)(wc[k].wr_id >> 8);

				cr_assert_eq(wc[k].status, IBV_WC_SUCCESS, "QP %u: status %d", i,
					     (int)wc[k].status);
				cr_assert_lt(i, ACT_QPS);
				cr_assert_eq(wc[k].wr_id & 0xff, done[i], "QP %u out of order", i);
				done[i]++;
				ncomp++;
			}
	}
	for (uint32_t i = 0; i < ACT_QPS; i++) {
		struct xrxe_tp_qp_info info;

		xrxe_tph_info(qa[i], &info);
		timeouts += info.timeouts;
		retransmits += info.retransmits + info.fast_retransmits;
		seq_naks += info.seq_naks_rcvd;
	}
	cr_assert_eq(ncomp, ACT_QPS * ACT_WRITES, "%u of %u WRITEs completed", ncomp,
		     ACT_QPS * ACT_WRITES);
	cr_assert_eq(h.dropped, 0);
	cr_assert_eq(timeouts, 0, "%llu Local ACK Timeouts fired on a lossless wire",
		     (unsigned long long)timeouts);
	cr_assert_eq(retransmits, 0, "%llu packets sent again", (unsigned long long)retransmits);
	cr_assert_eq(seq_naks, 0);
	/* exactly once: each WRITE's bytes in its own slot */
	cr_assert_eq(h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_ONLY)], ACT_QPS * ACT_WRITES);
	for (uint32_t i = 0; i < ACT_QPS; i++)
		for (uint32_t w = 0; w < ACT_WRITES; w++)
			cr_assert_eq(memcmp(dst[i][w], src[i], ACT_LEN), 0, "QP %u WRITE %u", i, w);
	for (uint32_t i = 0; i < ACT_QPS; i++) {
		xrxe_tph_qp_destroy(qa[i]);
		xrxe_tph_qp_destroy(qb[i]);
	}
	xrxe_tph_fini(&h);
}
