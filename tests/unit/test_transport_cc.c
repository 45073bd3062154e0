// SPDX-License-Identifier: MIT
/*
 * Congestion control end to end over the in-memory wire (tp_harness): the
 * wire marks CE on data packets like a congested switch; the receiving QP
 * (notification point) answers with CNPs, at most one per
 * np_min_time_between_cnps; the sender (reaction point) cuts its rate and is
 * paced, recovers once the marks stop, and every byte arrives intact.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tp_harness.h"

#define US 1000ull
#define MS 1000000ull
#define MBPS 1000000ull
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

#define MSG 16384u
#define NMSG 32u

static uint8_t abuf[NMSG * MSG], bbuf[NMSG * MSG];

struct wire_watch {
	struct xrxe_tph *h;
	bool marking;
	uint64_t cnp_times[4096];
	unsigned ncnp;
	unsigned data_not_ect0, cnp_bad_marking, cnp_bad_format;
	uint32_t a_qpn;
};

static uint8_t pkt_tos(const struct xrxe_pkt *pkt)
{
	const uint8_t *ip = pkt->frag[0].data + pkt->l3_off;

	return pkt->ip_version == 4 ? ip[1] : (uint8_t)((ip[0] & 0x0f) << 4 | ip[1] >> 4);
}

/* Looks at every frame before it is delivered (never drops one). */
static bool watch(void *arg, int from, const struct xrxe_pkt *pkt)
{
	struct wire_watch *w = arg;
	uint8_t tos = pkt_tos(pkt);

	if (pkt->opcode == XRXE_OP_CNP) {
		const struct xrxe_bth *bth = xrxe_pkt_bth(pkt);
		uint8_t rsvd[XRXE_CNP_RSVD_LEN];
		const uint8_t *p = pkt->frag[0].data + pkt->bth_off + XRXE_BTH_LEN;

		memcpy(rsvd, p, sizeof(rsvd));
		if (w->ncnp < 4096)
			w->cnp_times[w->ncnp++] = w->h->now;
		/* DSCP 48 (np_cnp_dscp), ECT(0) */
		if (from != 1 || tos != (48 << 2 | 2))
			w->cnp_bad_marking++;
		/* Annex A17.9.3: BECN, DestQP = the sender's QPN, 16 zero bytes */
		if (!xrxe_bth_becn(bth) || xrxe_bth_qpn(bth) != w->a_qpn ||
		    xrxe_bth_pkey(bth) != 0xffff || memcmp(rsvd, (uint8_t[16]){ 0 }, 16))
			w->cnp_bad_format++;
	} else if (from == 0 && (tos & 3) != 2) {
		w->data_not_ect0++;
	}
	return false;
}

static bool mark(void *arg, int from, const struct xrxe_pkt *pkt)
{
	struct wire_watch *w = arg;

	return w->marking && from == 0 && pkt->payload_len > 0;
}

struct env {
	struct xrxe_tph_pair p;
	struct wire_watch w;
	uint32_t lka, lkb;
};

static void env_init(struct env *e, const struct xrxe_tp_cc_params *cc)
{
	memset(&e->w, 0, sizeof(e->w));
	cr_assert_eq(xrxe_tph_pair_init(&e->p, 7, IBV_QPT_RC, NULL, true), 0);
	for (unsigned i = 0; i < sizeof(abuf); i++) {
		abuf[i] = (uint8_t)(i * 31 + 7);
		bbuf[i] = 0;
	}
	e->lka = xrxe_tph_mr(&e->p.h.side[0], abuf, sizeof(abuf), RW, 0);
	e->lkb = xrxe_tph_mr(&e->p.h.side[1], bbuf, sizeof(bbuf), RW, 0);
	for (int s = 0; s < 2; s++)
		cr_assert_eq(xrxe_tp_cc_set(e->p.h.side[s].tp, cc), 0);
	e->w.h = &e->p.h;
	e->w.a_qpn = e->p.a->qpn;
	e->p.h.pol.filter = watch;
	e->p.h.pol.filter_arg = &e->w;
	e->p.h.pol.ce_mark = mark;
	e->p.h.pol.ce_mark_arg = &e->w;
}

/* NMSG WRITEs of abuf into bbuf, message i from even_qp or odd_qp. */
static void post_writes_from(struct env *e, struct xrxe_tph_qp *even_qp,
			     struct xrxe_tph_qp *odd_qp)
{
	for (unsigned i = 0; i < NMSG; i++) {
		struct xrxe_sge s = { (uintptr_t)abuf + i * MSG, MSG, e->lka };
		struct xrxe_tph_send wr = {
			.wr_id = i, .opcode = IBV_WR_RDMA_WRITE, .sge = &s, .nsge = 1,
			.raddr = (uintptr_t)bbuf + i * MSG, .rkey = e->lkb,
		};

		cr_assert_eq(xrxe_tph_post_send(i % 2 ? odd_qp : even_qp, &wr), 0);
	}
}

static void post_writes(struct env *e)
{
	post_writes_from(e, e->p.a, e->p.a);
}

/* xrxe_tph_run for a slice of virtual time: when the next deadline lies
 * beyond the slice the harness stops without moving its clock, so move it
 * to the slice's end. */
static void run_slice(struct xrxe_tph *h, uint64_t ns)
{
	uint64_t end = h->now + ns;

	if (!xrxe_tph_run(h, ns) && h->now < end)
		h->now = end;
}

static struct xrxe_tp_cc_params test_params(void)
{
	struct xrxe_tp_cc_params cc;

	xrxe_tp_cc_defaults(&cc);
	/* 10 Gb/s ceiling and big increase steps: recovery within a few ms
	 * of virtual time; everything else NVIDIA's defaults */
	cc.rp_max_rate = 10000;
	cc.rp_ai_rate = 500;
	cc.rp_hai_rate = 2000;
	return cc;
}

Test(transport_cc, ce_marks_cnps_rate_drop_recovery_data_intact)
{
	struct xrxe_tp_cc_params cc = test_params();
	struct xrxe_tp_qp_info ia, ib;
	struct xrxe_tp_stats sa, sb;
	struct ibv_wc wc[64];
	uint64_t min_rate = UINT64_MAX, t0;
	unsigned done = 0, k;
	struct env e;

	env_init(&e, &cc);
	e.w.marking = true;
	t0 = e.p.h.now;
	post_writes(&e);
	/* run in 20 us slices, watching the sender's rate */
	for (k = 0; k < 100000 && done < NMSG; k++) {
		int n;

		run_slice(&e.p.h, 20 * US);
		xrxe_tph_info(e.p.a, &ia);
		if (ia.cc_rate_bps < min_rate)
			min_rate = ia.cc_rate_bps;
		while ((n = xrxe_tph_poll_cq(e.p.ca, wc, 64)) > 0)
			for (int i = 0; i < n; i++, done++)
				cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
	}
	cr_assert_eq(done, NMSG, "all WRITEs complete under marking");
	cr_assert_eq(memcmp(abuf, bbuf, sizeof(abuf)), 0, "data intact");

	xrxe_tph_info(e.p.a, &ia);
	xrxe_tph_info(e.p.b, &ib);
	xrxe_tp_get_stats(e.p.h.side[0].tp, &sa);
	xrxe_tp_get_stats(e.p.h.side[1].tp, &sb);

	/* NP: every CE reached the QP; CNPs rate-limited to one per 4 us */
	cr_assert_gt(e.p.h.ce_marked, 0);
	cr_assert_eq(ib.ecn_marked, e.p.h.ce_marked);
	cr_assert_eq(sb.ecn_ce_qp, e.p.h.ce_marked);
	cr_assert_gt(ib.cnps_sent, 1);
	cr_assert_lt(ib.cnps_sent, e.p.h.ce_marked, "marks within the interval send nothing");
	cr_assert_eq(sb.cnp_sent, ib.cnps_sent);
	cr_assert_eq(sb.cnp_suppressed, e.p.h.ce_marked - ib.cnps_sent);
	cr_assert_eq(e.p.h.opcode_count[1][XRXE_OP_CNP], ib.cnps_sent);
	cr_assert_eq(e.w.ncnp, ib.cnps_sent);
	for (unsigned i = 1; i < e.w.ncnp; i++)
		cr_assert_geq(e.w.cnp_times[i] - e.w.cnp_times[i - 1], 4 * US,
			      "CNPs %u and %u only %lu ns apart", i - 1, i,
			      (unsigned long)(e.w.cnp_times[i] - e.w.cnp_times[i - 1]));
	cr_assert_eq(e.w.cnp_bad_marking, 0);
	cr_assert_eq(e.w.cnp_bad_format, 0);
	cr_assert_eq(e.w.data_not_ect0, 0, "data leaves ECT(0)");

	/* RP: every CNP handled, the rate dropped and the QP was paced */
	cr_assert_eq(sa.cnp_rcvd, ib.cnps_sent);
	cr_assert_eq(ia.cnps_handled, ib.cnps_sent);
	cr_assert_lt(min_rate, 10000 * MBPS / 2, "rate cut at least in half");
	cr_assert_gt(sa.paced, 0);
	/* paced transfer took time: 512 KiB at <= 10 Gb/s is >= 419 us */
	cr_assert_geq(e.p.h.now - t0, 419 * US);

	cr_log_info("CE marks %lu, CNPs %lu, min rate %lu Mb/s, paced %lu, %lu us",
		    (unsigned long)e.p.h.ce_marked, (unsigned long)ib.cnps_sent,
		    (unsigned long)(min_rate / MBPS), (unsigned long)sa.paced,
		    (unsigned long)((e.p.h.now - t0) / US));
	/* marks stop: the timer brings the rate back to line rate, the
	 * limiter is released and nothing is pending any more */
	e.w.marking = false;
	cr_assert(xrxe_tph_run(&e.p.h, 1000 * MS), "idle once recovered");
	xrxe_tph_info(e.p.a, &ia);
	cr_assert(!ia.cc_limited);
	cr_assert_eq(ia.cc_rate_bps, 10000 * MBPS);
	cr_assert_eq(ia.cc_target_bps, 10000 * MBPS);
	xrxe_tph_pair_fini(&e.p);
}

/* Without marks nothing changes: no CNP, no pacing, not a nanosecond of
 * virtual time spent waiting. */
Test(transport_cc, unmarked_qp_is_never_delayed)
{
	struct xrxe_tp_cc_params cc = test_params();
	struct xrxe_tp_qp_info ia;
	struct xrxe_tp_stats sa;
	struct ibv_wc wc[64];
	unsigned done = 0;
	uint64_t t0;
	struct env e;
	int n;

	env_init(&e, &cc);
	t0 = e.p.h.now;
	post_writes(&e);
	cr_assert(xrxe_tph_run(&e.p.h, 1000 * MS));
	while ((n = xrxe_tph_poll_cq(e.p.ca, wc, 64)) > 0)
		done += (unsigned)n;
	cr_assert_eq(done, NMSG);
	cr_assert_eq(memcmp(abuf, bbuf, sizeof(abuf)), 0);
	cr_assert_eq(e.p.h.now, t0, "no wait at all");
	xrxe_tph_info(e.p.a, &ia);
	xrxe_tp_get_stats(e.p.h.side[0].tp, &sa);
	cr_assert(!ia.cc_limited);
	cr_assert_eq(sa.paced, 0);
	cr_assert_eq(e.p.h.opcode_count[1][XRXE_OP_CNP], 0);
	cr_assert_eq(e.w.data_not_ect0, 0);
	xrxe_tph_pair_fini(&e.p);
}

/* line_rate_pacing: without a single mark the QP is paced at rp_max_rate, as
 * a port of that speed would serialise it: 512 KiB of WRITEs (plus headers)
 * at 1 Gb/s take at least 4.19 ms; DCQCN never engages; data intact. */
Test(transport_cc, line_rate_pacing_paces_an_unlimited_qp_at_the_ceiling)
{
	struct xrxe_tp_cc_params cc = test_params();
	struct xrxe_tp_qp_info ia;
	struct xrxe_tp_stats sa;
	struct ibv_wc wc[64];
	unsigned done = 0;
	uint64_t t0;
	struct env e;
	int n;

	cc.rp_max_rate = 1000;
	cc.line_rate_pacing = 1;
	env_init(&e, &cc);
	t0 = e.p.h.now;
	post_writes(&e);
	for (unsigned k = 0; k < 100000 && done < NMSG; k++) {
		run_slice(&e.p.h, 20 * US);
		while ((n = xrxe_tph_poll_cq(e.p.ca, wc, 64)) > 0)
			for (int i = 0; i < n; i++, done++)
				cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
	}
	cr_assert_eq(done, NMSG);
	cr_assert_eq(memcmp(abuf, bbuf, sizeof(abuf)), 0);
	cr_assert_geq(e.p.h.now - t0, NMSG * MSG * 8ull * 1000 / 1000 /* ns at 1 Gb/s */,
		      "paced at 1 Gb/s: %lu us", (unsigned long)((e.p.h.now - t0) / US));
	/* and not much slower: the pacer keeps the rate (headers < 2 %) */
	cr_assert_lt(e.p.h.now - t0, NMSG * MSG * 8ull * 1000 / 1000 * 11 / 10);
	xrxe_tph_info(e.p.a, &ia);
	xrxe_tp_get_stats(e.p.h.side[0].tp, &sa);
	cr_assert(!ia.cc_limited, "DCQCN never engaged");
	cr_assert_gt(sa.paced, 0);
	cr_assert_eq(e.p.h.opcode_count[1][XRXE_OP_CNP], 0);
	xrxe_tph_pair_fini(&e.p);
}

/* line_rate_pacing paces the port, not each QP: two unlimited QPs writing
 * at once share the 1 Gb/s ceiling -- together they take as long as one QP
 * with both loads (a QP-by-QP ceiling would let them leave at 2 Gb/s), and
 * xrxe_tp_poll's round robin gives them alternate slots, so their last
 * completions come within a few messages of each other. */
Test(transport_cc, line_rate_pacing_paces_the_port_and_shares_it)
{
	struct xrxe_tp_cc_params cc = test_params();
	struct xrxe_tph_qp *a2, *b2;
	struct xrxe_tph_cq *ca2;
	uint64_t t0, last[2] = { 0, 0 }, total = (uint64_t)NMSG * MSG;
	unsigned done[2] = { 0, 0 };
	struct ibv_wc wc[64];
	struct env e;
	int n;

	cc.rp_max_rate = 1000;
	cc.line_rate_pacing = 1;
	env_init(&e, &cc);
	ca2 = xrxe_tph_cq_create(&e.p.h.side[0], 256);
	a2 = xrxe_tph_qp_create(&e.p.h.side[0], IBV_QPT_RC, ca2, ca2, 64, 16, true);
	b2 = xrxe_tph_qp_create(&e.p.h.side[1], IBV_QPT_RC, e.p.cb, e.p.cb, 64, 16, true);
	cr_assert(a2 && b2 && ca2);
	cr_assert_eq(xrxe_tph_connect(a2, b2, &e.p.conn), 0);
	t0 = e.p.h.now;
	/* each QP writes half of the buffer: the same bytes as one QP's test */
	post_writes_from(&e, e.p.a, a2);
	for (unsigned k = 0; k < 100000 && done[0] + done[1] < NMSG; k++) {
		run_slice(&e.p.h, 20 * US);
		for (int q = 0; q < 2; q++) {
			while ((n = xrxe_tph_poll_cq(q ? ca2 : e.p.ca, wc, 64)) > 0) {
				for (int i = 0; i < n; i++)
					cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
				done[q] += (unsigned)n;
				last[q] = e.p.h.now;
			}
		}
	}
	cr_assert_eq(done[0], NMSG / 2);
	cr_assert_eq(done[1], NMSG / 2);
	cr_assert_eq(memcmp(abuf, bbuf, sizeof(abuf)), 0);
	/* the port's 1 Gb/s for both: >= 4.19 ms, < 10 % more (headers) */
	cr_assert_geq(e.p.h.now - t0, total * 8, "port paced: %lu us",
		      (unsigned long)((e.p.h.now - t0) / US));
	cr_assert_lt(e.p.h.now - t0, total * 8 * 11 / 10);
	/* shared, not one after the other: a 16 KiB message is 131 us at
	 * 1 Gb/s; the two QPs finish within four messages of each other
	 * (back to back, the first would be done 2.1 ms before the second) */
	cr_assert_lt(last[0] > last[1] ? last[0] - last[1] : last[1] - last[0], 4 * 131 * US,
		     "last completions %lu and %lu us", (unsigned long)((last[0] - t0) / US),
		     (unsigned long)((last[1] - t0) / US));
	xrxe_tph_pair_fini(&e.p);
}

/* CC disabled: data is not ECN-capable, CE marks are counted but answered
 * with nothing. */
Test(transport_cc, disabled_sends_no_cnp)
{
	struct xrxe_tp_cc_params cc = test_params();
	struct xrxe_tp_qp_info ib;
	unsigned done = 0;
	struct ibv_wc wc[64];
	struct env e;
	int n;

	cc.enabled = 0;
	env_init(&e, &cc);
	e.w.marking = true;
	post_writes(&e);
	cr_assert(xrxe_tph_run(&e.p.h, 1000 * MS));
	while ((n = xrxe_tph_poll_cq(e.p.ca, wc, 64)) > 0)
		done += (unsigned)n;
	cr_assert_eq(done, NMSG);
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_eq(ib.ecn_marked, e.p.h.ce_marked);
	cr_assert_eq(ib.cnps_sent, 0);
	cr_assert_eq(e.p.h.opcode_count[1][XRXE_OP_CNP], 0);
	cr_assert_eq(e.w.data_not_ect0, e.p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_FIRST)] +
						 e.p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_MIDDLE)] +
						 e.p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_LAST)] +
						 e.p.h.opcode_count[0][XRXE_OPCODE(RC, ACKNOWLEDGE)],
		     "Not-ECT while disabled");
	xrxe_tph_pair_fini(&e.p);
}

/* A CNP must come from the QP's peer: one from another address is counted
 * and ignored; one for no QP (destroyed while the CNP was on the way) is a
 * no-QP drop and counted as ignored too, so that cnp_rcvd + cnp_rcvd_no_qp
 * is every CNP that arrived. */
Test(transport_cc, cnp_from_stranger_ignored)
{
	struct xrxe_tp_cc_params cc = test_params();
	struct xrxe_pkt_spec spec;
	struct xrxe_tp_qp_info ia;
	struct xrxe_tp_stats sa;
	struct env e;

	env_init(&e, &cc);
	xrxe_tph_spec(&e.p.h, 1, e.p.a->qpn, &spec);
	spec.opcode = XRXE_OP_CNP;
	spec.becn = true;
	spec.saddr.v4.s_addr ^= htonl(0x00000100); /* not the peer */
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 0, &spec), 0);
	xrxe_tph_spec(&e.p.h, 1, e.p.a->qpn, &spec);
	spec.opcode = XRXE_OP_CNP;
	spec.becn = true;
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 0, &spec), 0);
	xrxe_tph_info(e.p.a, &ia);
	xrxe_tp_get_stats(e.p.h.side[0].tp, &sa);
	cr_assert_eq(sa.cnp_rcvd_no_qp, 1);
	cr_assert_eq(sa.cnp_rcvd, 1);
	cr_assert_eq(ia.cnps_handled, 1);
	cr_assert(ia.cc_limited);
	cr_assert_lt(ia.cc_rate_bps, 10000 * MBPS);

	xrxe_tph_spec(&e.p.h, 1, e.p.a->qpn + 0x1000, &spec); /* no such QP */
	spec.opcode = XRXE_OP_CNP;
	spec.becn = true;
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 0, &spec), 0);
	xrxe_tp_get_stats(e.p.h.side[0].tp, &sa);
	cr_assert_eq(sa.rx_drop_no_qp, 1);
	cr_assert_eq(sa.cnp_rcvd_no_qp, 2);
	cr_assert_eq(sa.cnp_rcvd, 1);
	xrxe_tph_pair_fini(&e.p);
}
