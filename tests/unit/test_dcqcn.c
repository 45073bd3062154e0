// SPDX-License-Identifier: MIT
/*
 * DCQCN reaction point (src/transport/dcqcn.c), notification point limiter
 * (np.c) and pacer (pacer.c), fed event sequences; expected values are
 * worked out by hand from the equations in dcqcn.h / docs/facts/dcqcn.md §1.5-1.6
 * (the arithmetic is in the comments; integer division rounds down, the
 * increase average rounds up).
 */
#include <criterion/criterion.h>

#include "transport/dcqcn.h"

#define US 1000ull
#define MBPS 1000000ull
#define T0 (1000000ull * US) /* an arbitrary start: 1 s */

static struct xrxe_tp_cc_params base_params(void)
{
	struct xrxe_tp_cc_params p;

	xrxe_tp_cc_defaults(&p);
	return p;
}

Test(dcqcn_params, defaults_are_nvidia)
{
	struct xrxe_tp_cc_params p = base_params();

	/* docs/facts/dcqcn.md §1.6 table */
	cr_assert_eq(p.rp_dce_tcp_g, 1019);
	cr_assert_eq(p.rp_dce_tcp_rtt, 1);
	cr_assert_eq(p.rp_initial_alpha_value, 1023);
	cr_assert_eq(p.rp_rate_to_set_on_first_cnp, 0);
	cr_assert_eq(p.rp_min_dec_fac, 50);
	cr_assert_eq(p.rp_min_rate, 1);
	cr_assert_eq(p.rp_gd, 11);
	cr_assert_eq(p.rp_rate_reduce_monitor_period, 4);
	cr_assert_eq(p.rp_time_reset, 300);
	cr_assert_eq(p.rp_byte_reset, 32767);
	cr_assert_eq(p.rp_threshold, 1);
	cr_assert_eq(p.rp_ai_rate, 5);
	cr_assert_eq(p.rp_hai_rate, 50);
	cr_assert_eq(p.rp_max_rate, 0);
	cr_assert_eq(p.rp_clamp_tgt_rate, 0);
	cr_assert_eq(p.rp_clamp_tgt_rate_ati, 1);
	cr_assert_eq(p.np_cnp_dscp, 48);
	cr_assert_eq(p.np_cnp_prio, 6);
	cr_assert_eq(p.data_ecn, 2);
	cr_assert_eq(p.enabled, 1);
}

Test(dcqcn_params, parse_and_check)
{
	struct xrxe_tp_cc_params p = base_params();
	char err[160];

	cr_assert_eq(xrxe_cc_param_parse(&p, "rp_ai_rate=40", err, sizeof(err)), 0);
	cr_assert_eq(p.rp_ai_rate, 40);
	cr_assert_eq(xrxe_cc_param_parse(&p, "data_dscp=app", err, sizeof(err)), 0);
	cr_assert_eq(p.data_dscp, XRXE_CC_DSCP_APP);
	cr_assert_eq(xrxe_cc_param_parse(&p, "np_cnp_prio=3", err, sizeof(err)), 0);
	cr_assert_eq(p.np_cnp_prio_mode, 0, "mlx5 cong.c: writing the prio selects it");
	cr_assert_eq(xrxe_cc_param_parse(&p, "rp_clamp_tgt_rate=true", err, sizeof(err)), 0);
	cr_assert_eq(p.rp_clamp_tgt_rate, 1);
	cr_assert_eq(xrxe_cc_param_parse(&p, "nope=1", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "unknown parameter 'nope'"), "%s", err);
	cr_assert_eq(xrxe_cc_param_parse(&p, "rp_gd=16", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "from 1 to 15"), "%s", err);
	cr_assert_eq(xrxe_cc_param_parse(&p, "rp_gd=-1", err, sizeof(err)), -EINVAL);
	cr_assert_eq(xrxe_cc_param_parse(&p, "rp_gd=", err, sizeof(err)), -EINVAL);
	cr_assert_eq(xrxe_cc_param_parse(&p, "rp_gd=1x", err, sizeof(err)), -EINVAL);
	cr_assert_eq(xrxe_cc_param_parse(&p, "rp_gd", err, sizeof(err)), -EINVAL);
	cr_assert_eq(xrxe_cc_param_parse(&p, "data_ecn=3", err, sizeof(err)), -EINVAL,
		     "CE is not a codepoint a sender may use");
	cr_assert_eq(p.rp_gd, 11, "a rejected value changes nothing");
	p.rp_threshold = 0;
	cr_assert_eq(xrxe_cc_param_check(&p, err, sizeof(err)), -EINVAL);
}

/*
 * Trace 1: CNPs and the rate-increase timer, clamp_tgt_rate = 1.
 * g = 768 (alpha' = 0.75 alpha [+ 256]), alpha period 10 us, Gd = 2^11,
 * monitor period 4 us, timer 100 us, F = 2, AI 10 Mb/s, max 2048 Mb/s,
 * byte counter out of reach, min_dec_fac 1 % (never binds here).
 *
 *  t=0   first CNP: alpha = 1023, Rt = Rc = 2048e6, decrease now:
 *        cut = 2048e6*1023 >> 11 = 1023e6 -> Rc = 1025e6
 *  t=2   CNP: within 4 us of the last decrease -> owed, Rc unchanged
 *  t=4   owed decrease: Rt = Rc = 1025e6 (clamp);
 *        cut = 1025e6*1023 >> 11 = 1048575e9/2048 = 511999511 -> Rc = 513000489
 *  alpha updates: t=10 (CNPs since): 768*1023>>10 = 767, +256 = 1023
 *                 t=20: 768*1023>>10 = 767;  t=30: 768*767>>10 = 575
 *  t=35  CNP: alpha 575; Rt = Rc = 513000489;
 *        cut = 513000489*575 >> 11 = 144030899 -> Rc = 368969590
 *  t=40  alpha (CNP at 35): 768*575>>10 = 431, +256 = 687
 *  t=135 timer T=1 (B=0): max(T,B) = 1 < F: fast recovery, Rt unchanged:
 *        Rc = ceil((368969590 + 513000489)/2) = 440985040
 *  t=235 timer T=2: max = 2 >= F, min = 0 < F: additive, Rt = 523000489,
 *        Rc = ceil((440985040 + 523000489)/2) = 481992765
 */
Test(dcqcn_rp, trace_cnps_timer_fast_recovery_additive)
{
	struct xrxe_tp_cc_params p = base_params();
	const uint64_t max = 2048 * MBPS;
	struct xrxe_dcqcn s;

	p.rp_dce_tcp_g = 768;
	p.rp_dce_tcp_rtt = 10;
	p.rp_rate_reduce_monitor_period = 4;
	p.rp_time_reset = 100;
	p.rp_byte_reset = 0xffffffffu;
	p.rp_threshold = 2;
	p.rp_ai_rate = 10;
	p.rp_min_dec_fac = 1;
	p.rp_clamp_tgt_rate = 1;
	xrxe_dcqcn_init(&s, max);
	cr_assert(!s.limited);
	cr_assert_eq(xrxe_dcqcn_deadline(&s), XRXE_DCQCN_NO_DEADLINE);

	xrxe_dcqcn_cnp(&s, &p, max, T0);
	cr_assert(s.limited);
	cr_assert_eq(s.rc, 1025 * MBPS);
	cr_assert_eq(s.rt, 2048 * MBPS);
	cr_assert_eq(xrxe_dcqcn_alpha(&s, &p, T0), 1023);

	xrxe_dcqcn_cnp(&s, &p, max, T0 + 2 * US);
	cr_assert_eq(s.rc, 1025 * MBPS, "one decrease per monitor period");
	cr_assert_eq(xrxe_dcqcn_deadline(&s), T0 + 4 * US);
	xrxe_dcqcn_timers(&s, &p, max, T0 + 4 * US - 1);
	cr_assert_eq(s.rc, 1025 * MBPS);
	xrxe_dcqcn_timers(&s, &p, max, T0 + 4 * US);
	cr_assert_eq(s.rt, 1025 * MBPS);
	cr_assert_eq(s.rc, 513000489);
	cr_assert_eq(s.decreases, 2);

	cr_assert_eq(xrxe_dcqcn_alpha(&s, &p, T0 + 10 * US), 1023);
	cr_assert_eq(xrxe_dcqcn_alpha(&s, &p, T0 + 20 * US), 767);
	cr_assert_eq(xrxe_dcqcn_alpha(&s, &p, T0 + 30 * US), 575);

	xrxe_dcqcn_cnp(&s, &p, max, T0 + 35 * US);
	cr_assert_eq(s.rt, 513000489);
	cr_assert_eq(s.rc, 368969590);
	cr_assert_eq(xrxe_dcqcn_alpha(&s, &p, T0 + 40 * US), 687);
	cr_assert_eq(xrxe_dcqcn_deadline(&s), T0 + 135 * US);

	xrxe_dcqcn_timers(&s, &p, max, T0 + 135 * US);
	cr_assert_eq(s.time_stage, 1);
	cr_assert_eq(s.rt, 513000489, "fast recovery keeps the target");
	cr_assert_eq(s.rc, 440985040);

	xrxe_dcqcn_timers(&s, &p, max, T0 + 235 * US);
	cr_assert_eq(s.rt, 523000489);
	cr_assert_eq(s.rc, 481992765);
}

/*
 * Trace 2: byte counter, hyper increase, the target clamp after a
 * byte-driven increase, rate_to_set_on_first_cnp and min_dec_fac.
 * F = 1, byte counter 10000 B, timer 1000 us, AI 10, HAI 100 Mb/s,
 * alpha period 2000 us (alpha stays 1023 throughout), clamp 0 / ati 1.
 *
 *  t=0    first CNP: Rc = Rt = 1000e6 (rate_to_set_on_first_cnp), decrease:
 *         cut = 1000e6*1023 >> 11 = 499511718 -> Rc = 500488282, Rt = 1000e6
 *  t=10   10000 B sent: B=1, T=0: max 1 >= F, min 0 < F: additive,
 *         Rt = 1010e6, Rc = ceil((500488282 + 1010e6)/2) = 755244141
 *  t=1000 timer: T=1, B=1: min 1 >= F: hyper, Rt += 100e6 * (1 - 1 + 1):
 *         Rt = 1110e6, Rc = ceil((755244141 + 1110e6)/2) = 932622071
 *  t=1001 10000 B: B=2, T=1: hyper x (min(1,2) - 1 + 1 = 1): Rt = 1210e6,
 *         Rc = ceil((932622071 + 1210e6)/2) = 1071311036
 *  t=1002 CNP: B > 0 -> Rt = Rc = 1071311036 (a byte-driven increase
 *         always clamps); cut = 1071311036*1023 >> 11 -> 536178620, but
 *         min_dec_fac, now set to 60 %: Rc = 1071311036*60/100 = 642786621
 */
Test(dcqcn_rp, trace_byte_counter_hyper_clamp_min_dec_fac)
{
	struct xrxe_tp_cc_params p = base_params();
	const uint64_t max = 2048 * MBPS;
	struct xrxe_dcqcn s;

	p.rp_threshold = 1;
	p.rp_byte_reset = 10000;
	p.rp_time_reset = 1000;
	p.rp_ai_rate = 10;
	p.rp_hai_rate = 100;
	p.rp_dce_tcp_rtt = 2000;
	p.rp_rate_to_set_on_first_cnp = 1000;
	xrxe_dcqcn_init(&s, max);

	xrxe_dcqcn_cnp(&s, &p, max, T0);
	cr_assert_eq(s.rc, 500488282);
	cr_assert_eq(s.rt, 1000 * MBPS);

	xrxe_dcqcn_sent(&s, &p, max, 9999, T0 + 10 * US);
	cr_assert_eq(s.rc, 500488282, "byte counter not yet run out");
	xrxe_dcqcn_sent(&s, &p, max, 1, T0 + 10 * US);
	cr_assert_eq(s.byte_stage, 1);
	cr_assert_eq(s.rt, 1010 * MBPS);
	cr_assert_eq(s.rc, 755244141);

	xrxe_dcqcn_timers(&s, &p, max, T0 + 1000 * US);
	cr_assert_eq(s.time_stage, 1);
	cr_assert_eq(s.rt, 1110 * MBPS);
	cr_assert_eq(s.rc, 932622071);

	xrxe_dcqcn_sent(&s, &p, max, 10000, T0 + 1001 * US);
	cr_assert_eq(s.rt, 1210 * MBPS);
	cr_assert_eq(s.rc, 1071311036);

	p.rp_min_dec_fac = 60; /* from here on (at 50 it never binds: alpha/2 < 50 %) */
	xrxe_dcqcn_cnp(&s, &p, max, T0 + 1002 * US);
	cr_assert_eq(s.rt, 1071311036);
	cr_assert_eq(s.rc, 642786621);
	cr_assert_eq(s.time_stage + s.byte_stage, 0);
}

/* No clamp when nothing increased since the last cut: the target stays the
 * rate before the first cut (fast recovery aims there). */
Test(dcqcn_rp, no_clamp_without_increase)
{
	struct xrxe_tp_cc_params p = base_params();
	const uint64_t max = 2048 * MBPS;
	struct xrxe_dcqcn s;

	p.rp_dce_tcp_rtt = 1000; /* alpha stays 1023 */
	xrxe_dcqcn_init(&s, max);
	xrxe_dcqcn_cnp(&s, &p, max, T0);
	/* t=4: Rt stays 2048e6; Rc = 1025e6 - (1025e6*1023 >> 11) = 513000489 */
	xrxe_dcqcn_cnp(&s, &p, max, T0 + 4 * US);
	cr_assert_eq(s.rt, 2048 * MBPS);
	cr_assert_eq(s.rc, 513000489);
}

/* A CNP every microsecond for 20 us, timers run every microsecond:
 * decreases at t = 0, 4, 8, 12, 16, 20 and never more (monitor period 4). */
Test(dcqcn_rp, at_most_one_decrease_per_period)
{
	struct xrxe_tp_cc_params p = base_params();
	const uint64_t max = 100000 * MBPS;
	struct xrxe_dcqcn s;
	uint64_t last = max;

	xrxe_dcqcn_init(&s, max);
	for (uint64_t t = 0; t <= 20; t++) {
		xrxe_dcqcn_timers(&s, &p, max, T0 + t * US);
		xrxe_dcqcn_cnp(&s, &p, max, T0 + t * US);
		if (t % 4 == 0)
			cr_assert_lt(s.rc, last, "t=%lu: decrease due", (unsigned long)t);
		else
			cr_assert_eq(s.rc, last, "t=%lu: no second decrease", (unsigned long)t);
		last = s.rc;
	}
	cr_assert_eq(s.decreases, 6);
	cr_assert_eq(s.cnps, 21);
}

/* Rate floor rp_min_rate, and recovery: with AI = HAI = 1000 Mb/s, Rt sits at
 * the maximum after the first increase and Rc halves the distance each
 * timer event (rounded up), so it reaches the maximum exactly; then the
 * limiter is released: no pacing, no deadline. */
Test(dcqcn_rp, min_rate_and_release_at_line_rate)
{
	struct xrxe_tp_cc_params p = base_params();
	const uint64_t max = 2048 * MBPS;
	struct xrxe_dcqcn s;
	unsigned n = 0;

	p.rp_min_rate = 1500;
	p.rp_ai_rate = 1000;
	p.rp_hai_rate = 1000;
	xrxe_dcqcn_init(&s, max);
	xrxe_dcqcn_cnp(&s, &p, max, T0);
	cr_assert_eq(s.rc, 1500 * MBPS, "1025e6 raised to the floor");
	while (s.limited && n < 100) {
		uint64_t d = xrxe_dcqcn_deadline(&s);

		cr_assert_neq(d, XRXE_DCQCN_NO_DEADLINE);
		xrxe_dcqcn_timers(&s, &p, max, d);
		n++;
	}
	cr_assert(!s.limited);
	cr_assert_eq(s.rc, max);
	cr_assert_eq(s.rt, max);
	/* 548e6 halved (rounded up) until 0: ceil(log2(548e6)) + 1 = 31 events */
	cr_assert_leq(n, 31);
	cr_assert_eq(xrxe_dcqcn_deadline(&s), XRXE_DCQCN_NO_DEADLINE);
	/* the next CNP is a first CNP again: alpha restarts at the initial value */
	xrxe_dcqcn_cnp(&s, &p, max, T0 + 1000000 * US);
	cr_assert_eq(xrxe_dcqcn_alpha(&s, &p, T0 + 1000000 * US), 1023);
}

/* Lazy alpha equals the eager recurrence, defaults g = 1019 every 1 us,
 * over a long quiet stretch (it decays to 0 and stays there). */
Test(dcqcn_rp, lazy_alpha_matches_recurrence)
{
	struct xrxe_tp_cc_params p = base_params();
	const uint64_t max = 100000 * MBPS;
	struct xrxe_dcqcn s;
	uint32_t a = 1023;

	p.rp_time_reset = 1000000; /* keep the limiter on for the whole run */
	xrxe_dcqcn_init(&s, max);
	xrxe_dcqcn_cnp(&s, &p, max, T0);
	/* t=1: the first CNP counts: 1019*1023>>10 = 1018, + 5 = 1023 */
	a = ((1019u * a) >> 10) + 5;
	cr_assert_eq(xrxe_dcqcn_alpha(&s, &p, T0 + 1 * US), a);
	for (unsigned t = 2; t <= 5000; t++) {
		a = (1019u * a) >> 10;
		if (t % 250 == 0)
			cr_assert_eq(xrxe_dcqcn_alpha(&s, &p, T0 + t * US), a, "t=%u", t);
	}
	cr_assert_eq(a, 0);
	cr_assert_eq(xrxe_dcqcn_alpha(&s, &p, T0 + 900000 * US), 0);
}

/* CNPs timed by arrival (cc.c): a burst read at once, each handled at its
 * own arrival time after the timers due before it, leaves the RP exactly
 * where handling each as it arrived does -- here, CNPs every 60 us with
 * 5 us monitor/alpha periods make a cut each, where one instant would
 * allow one. */
Test(dcqcn_rp, cnps_by_arrival_time_match_live_handling)
{
	struct xrxe_tp_cc_params p = base_params();
	const uint64_t max = 10000 * MBPS;
	struct xrxe_dcqcn live, burst, once;

	p.rp_dce_tcp_rtt = 5;
	p.rp_rate_reduce_monitor_period = 5;
	p.rp_time_reset = 40;
	xrxe_dcqcn_init(&live, max);
	xrxe_dcqcn_init(&burst, max);
	xrxe_dcqcn_init(&once, max);
	for (unsigned i = 0; i < 10; i++) {
		uint64_t t = T0 + i * 60 * US;

		xrxe_dcqcn_timers(&live, &p, max, t);
		xrxe_dcqcn_cnp(&live, &p, max, t);
	}
	/* the daemon wakes 600 us after the first: ten CNPs in its RX ring */
	for (unsigned i = 0; i < 10; i++) {
		uint64_t t = T0 + i * 60 * US;

		xrxe_dcqcn_timers(&burst, &p, max, t);
		xrxe_dcqcn_cnp(&burst, &p, max, t);
		xrxe_dcqcn_cnp(&once, &p, max, T0 + 600 * US);
	}
	xrxe_dcqcn_timers(&live, &p, max, T0 + 600 * US);
	xrxe_dcqcn_timers(&burst, &p, max, T0 + 600 * US);
	cr_assert_eq(burst.rc, live.rc);
	cr_assert_eq(burst.rt, live.rt);
	cr_assert_eq(burst.alpha, live.alpha);
	cr_assert_eq(burst.decreases, 10);
	cr_assert_eq(once.decreases, 1, "all at one instant: one cut per monitor period");
	cr_assert_gt(once.rc, burst.rc);
}

/* Times never run backwards: a CNP timed before the latest event handled
 * (it arrived before a send that was accounted first) is handled at the
 * latest time -- no decrease "in the past" that would re-arm the timers
 * behind events already run. */
Test(dcqcn_rp, event_before_the_latest_is_handled_at_the_latest)
{
	struct xrxe_tp_cc_params p = base_params();
	const uint64_t max = 10000 * MBPS;
	struct xrxe_dcqcn s;

	xrxe_dcqcn_init(&s, max);
	xrxe_dcqcn_cnp(&s, &p, max, T0);
	xrxe_dcqcn_sent(&s, &p, max, 4096, T0 + 100 * US);
	cr_assert_eq(s.clock, T0 + 100 * US);
	xrxe_dcqcn_cnp(&s, &p, max, T0 + 50 * US);
	cr_assert_eq(s.clock, T0 + 100 * US);
	cr_assert_eq(s.dec_allowed, T0 + 100 * US + p.rp_rate_reduce_monitor_period * US,
		     "the second cut happened at the latest time");
	cr_assert_eq(s.inc_next, T0 + 100 * US + p.rp_time_reset * US);
}

/* --- notification point -------------------------------------------------------- */

Test(dcqcn_np, limiter_boundary)
{
	struct xrxe_np np = { 0 };
	const uint64_t gap = 4 * US; /* np_min_time_between_cnps = 4 */

	cr_assert(xrxe_np_ce(&np, gap, T0), "the first mark always makes a CNP");
	cr_assert(!xrxe_np_ce(&np, gap, T0 + 1));
	cr_assert(!xrxe_np_ce(&np, gap, T0 + gap - 1), "interval - 1 ns: no CNP");
	cr_assert(xrxe_np_ce(&np, gap, T0 + gap), "interval: CNP");
	cr_assert(!xrxe_np_ce(&np, gap, T0 + 2 * gap - 1));
	cr_assert(xrxe_np_ce(&np, gap, T0 + 2 * gap));
	/* a mark timed before the last CNP (arrival times, read out of order
	 * across queues) is inside the interval, not 2^64 ns after it */
	cr_assert(!xrxe_np_ce(&np, gap, T0 + 2 * gap - 1));
	/* 0: every CE packet */
	cr_assert(xrxe_np_ce(&np, 0, T0 + 2 * gap));
	cr_assert(xrxe_np_ce(&np, 0, T0 + 2 * gap));
}

/* --- pacer ------------------------------------------------------------------------ */

/* 1 Gb/s, 1000-byte frames: 8000 ns apiece; 1500 B: 12000 ns; 64 B: 512 ns. */
Test(dcqcn_pacer, release_times_exact)
{
	struct xrxe_edt e = { 0 };
	const uint64_t r = 1000 * MBPS;

	xrxe_edt_sent(&e, 1000, r, T0);
	cr_assert_eq(e.next, T0 + 8 * US);
	xrxe_edt_sent(&e, 1000, r, T0 + 8 * US);
	cr_assert_eq(e.next, T0 + 16 * US);
	xrxe_edt_sent(&e, 1500, r, T0 + 16 * US);
	cr_assert_eq(e.next, T0 + 28 * US);
	xrxe_edt_sent(&e, 64, r, T0 + 28 * US);
	cr_assert_eq(e.next, T0 + 28 * US + 512);
}

/* 3 Gb/s, 1000 B = 8000 bits: 2666.67 ns each. Carrying the remainder, the
 * third frame's release is exactly 8 us later: 2666, 5333, 8000. Over 3000
 * frames: exactly 8 ms (per-frame rounding would be 2 us off). */
Test(dcqcn_pacer, remainder_carried)
{
	struct xrxe_edt e = { 0 };
	const uint64_t r = 3000 * MBPS;

	xrxe_edt_sent(&e, 1000, r, T0);
	cr_assert_eq(e.next, T0 + 2666);
	xrxe_edt_sent(&e, 1000, r, e.next);
	cr_assert_eq(e.next, T0 + 5333);
	xrxe_edt_sent(&e, 1000, r, e.next);
	cr_assert_eq(e.next, T0 + 8000);
	for (unsigned i = 3; i < 3000; i++)
		xrxe_edt_sent(&e, 1000, r, e.next);
	cr_assert_eq(e.next, T0 + 8000 * US);
}

/* Idle longer than the slack: no banked burst, the gap starts at now.
 * Within the slack (a late wake-up): the schedule keeps its grid. */
Test(dcqcn_pacer, idle_and_slack)
{
	struct xrxe_edt e = { 0 };
	const uint64_t r = 1000 * MBPS;

	xrxe_edt_sent(&e, 1000, r, T0);
	xrxe_edt_sent(&e, 1000, r, T0 + 8 * US + 3 * US); /* 3 us late */
	cr_assert_eq(e.next, T0 + 16 * US);
	xrxe_edt_sent(&e, 1000, r, T0 + 1000 * US); /* idle for ~1 ms */
	cr_assert_eq(e.next, T0 + 1008 * US);
}

/* At a low rate the slack is the frame's own gap: 1000 B at 10 Mb/s = 800 us.
 * A wake-up 700 us late (longer than the 10 us floor, shorter than a gap)
 * keeps the grid, so the average rate holds; one 900 us late starts over. */
Test(dcqcn_pacer, slack_is_one_gap_at_low_rates)
{
	struct xrxe_edt e = { 0 };
	const uint64_t r = 10 * MBPS;

	xrxe_edt_sent(&e, 1000, r, T0);
	cr_assert_eq(e.next, T0 + 800 * US);
	xrxe_edt_sent(&e, 1000, r, T0 + 1500 * US); /* 700 us late */
	cr_assert_eq(e.next, T0 + 1600 * US);
	xrxe_edt_sent(&e, 1000, r, T0 + 2500 * US); /* 900 us late */
	cr_assert_eq(e.next, T0 + 3300 * US);
}

Test(dcqcn_pacer, rescale_pending_gap)
{
	struct xrxe_edt e = { 0 };

	xrxe_edt_sent(&e, 1000, 1000 * MBPS, T0); /* next = T0 + 8 us */
	/* 2 us later the rate halves: the 6 us left become 12 us */
	xrxe_edt_rescale(&e, 1000 * MBPS, 500 * MBPS, T0 + 2 * US);
	cr_assert_eq(e.next, T0 + 14 * US);
	/* and doubles back at 6 us: 8 us left -> 4 */
	xrxe_edt_rescale(&e, 500 * MBPS, 1000 * MBPS, T0 + 6 * US);
	cr_assert_eq(e.next, T0 + 10 * US);
}

struct order {
	uint64_t t[8];
	unsigned n;
};

static void record(void *arg, struct xrxe_pacer_entry *e)
{
	struct order *o = arg;

	if (o->n < 8)
		o->t[o->n++] = e->t;
}

/* The wheel returns exact times (not slot-rounded), in order, including an
 * entry beyond the horizon (1024 slots of 1 us) and one moved and one
 * cancelled. */
Test(dcqcn_pacer, wheel_order_and_horizon)
{
	static struct xrxe_pacer p;
	struct xrxe_pacer_entry a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
	struct order o = { 0 };

	xrxe_pacer_init(&p, T0);
	cr_assert_eq(xrxe_pacer_next(&p), XRXE_DCQCN_NO_DEADLINE);
	xrxe_pacer_schedule(&p, &a, T0 + 5500);
	xrxe_pacer_schedule(&p, &b, T0 + 3200);
	xrxe_pacer_schedule(&p, &c, T0 + 2000 * US); /* beyond the horizon */
	xrxe_pacer_schedule(&p, &d, T0 + 4000);
	xrxe_pacer_cancel(&p, &d);
	cr_assert_eq(xrxe_pacer_next(&p), T0 + 3200);
	cr_assert_eq(xrxe_pacer_expire(&p, T0 + 3199, record, &o), 0);
	cr_assert_eq(xrxe_pacer_expire(&p, T0 + 3200, record, &o), 1);
	cr_assert(!b.queued);
	cr_assert_eq(xrxe_pacer_next(&p), T0 + 5500);
	xrxe_pacer_schedule(&p, &a, T0 + 7000); /* moved later */
	cr_assert_eq(xrxe_pacer_expire(&p, T0 + 6999, record, &o), 0);
	cr_assert_eq(xrxe_pacer_expire(&p, T0 + 7000, record, &o), 1);
	cr_assert_eq(xrxe_pacer_next(&p), T0 + 2000 * US);
	cr_assert_eq(xrxe_pacer_expire(&p, T0 + 1500 * US, record, &o), 0);
	cr_assert_eq(xrxe_pacer_next(&p), T0 + 2000 * US, "re-filed, still exact");
	cr_assert_eq(xrxe_pacer_expire(&p, T0 + 2000 * US - 1, record, &o), 0);
	cr_assert_eq(xrxe_pacer_expire(&p, T0 + 2000 * US, record, &o), 1);
	cr_assert_eq(o.n, 3);
	cr_assert_eq(o.t[0], T0 + 3200);
	cr_assert_eq(o.t[1], T0 + 7000);
	cr_assert_eq(o.t[2], T0 + 2000 * US);
	cr_assert_eq(p.count, 0);
	cr_assert_eq(xrxe_pacer_next(&p), XRXE_DCQCN_NO_DEADLINE);
	/* a late expire (the wheel left behind by far) still releases */
	xrxe_pacer_schedule(&p, &a, T0 + 2500 * US);
	cr_assert_eq(xrxe_pacer_expire(&p, T0 + 9000000 * US, NULL, NULL), 1);
}
