// SPDX-License-Identifier: MIT
/*
 * DCQCN reaction point: the per-QP rate machine (equations in dcqcn.h and
 * docs/facts/dcqcn.md §1.4-1.6). Pure: state, parameters, event, now.
 */
#include "transport/dcqcn.h"

#define NS_PER_US 1000ull
#define BPS_PER_MBPS 1000000ull
/* Timer events processed per call at most (a daemon that slept for seconds
 * must not loop for long); the timer then restarts from now. */
#define MAX_EVENTS_PER_CALL 4096u

static uint64_t us(uint32_t v)
{
	return (uint64_t)v * NS_PER_US;
}

static uint64_t mbps(uint32_t v)
{
	return (uint64_t)v * BPS_PER_MBPS;
}

/* now, or the latest time handled if now lies before it (dcqcn.h). */
static uint64_t tick(struct xrxe_dcqcn *s, uint64_t now)
{
	if (now < s->clock)
		return s->clock;
	s->clock = now;
	return now;
}

void xrxe_dcqcn_init(struct xrxe_dcqcn *s, uint64_t max_bps)
{
	*s = (struct xrxe_dcqcn){ .rc = max_bps, .rt = max_bps, .rc_min = max_bps };
}

/* One alpha update (docs/facts/dcqcn.md §1.6 DCE_TCP_G): g/1024 of the old value,
 * plus (1024-g)/1024 of 1.0 when a CNP came in the last period. */
static uint32_t alpha_step(uint32_t alpha, bool cnp, uint32_t g)
{
	uint32_t a = (uint32_t)(((uint64_t)g * alpha) >> 10) + (cnp ? 1024u - g : 0);

	return a > XRXE_DCQCN_ALPHA_MAX ? XRXE_DCQCN_ALPHA_MAX : a;
}

/* Apply the alpha updates due at or before t. */
static void alpha_advance(struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p, uint64_t t)
{
	uint64_t period = us(p->rp_dce_tcp_rtt);

	while (s->alpha_next <= t) {
		s->alpha = alpha_step(s->alpha, s->alpha_cnp, p->rp_dce_tcp_g);
		s->alpha_cnp = false;
		s->alpha_next += period;
		if (s->alpha == 0 && s->alpha_next <= t) {
			/* nothing left to decay: jump to the first update after t */
			s->alpha_next += (t - s->alpha_next) / period * period + period;
			break;
		}
	}
}

uint32_t xrxe_dcqcn_alpha(const struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p,
			  uint64_t now)
{
	struct xrxe_dcqcn c = *s;

	if (!c.limited)
		return c.alpha;
	alpha_advance(&c, p, now);
	return c.alpha;
}

static void release_if_recovered(struct xrxe_dcqcn *s, uint64_t max_bps)
{
	if (s->rc >= max_bps && s->rt >= max_bps) {
		s->rc = s->rt = max_bps;
		s->limited = false;
		s->dec_owed = false;
	}
}

static void decrease(struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p, uint64_t t)
{
	uint64_t cut, floor_fac, rc;

	alpha_advance(s, p, t);
	/* Target clamp (docs/facts/dcqcn.md §1.4 "per clamp flags", §1.6
	 * CLAMP_TGT_RATE / _AFTER_TIME_INC) */
	if (p->rp_clamp_tgt_rate || s->byte_stage || (p->rp_clamp_tgt_rate_ati && s->time_stage))
		s->rt = s->rc;
	cut = (s->rc * s->alpha) >> p->rp_gd;
	rc = s->rc - cut;
	floor_fac = s->rc * p->rp_min_dec_fac / 100; /* RPG_MIN_DEC_FAC */
	if (rc < floor_fac)
		rc = floor_fac;
	if (rc < mbps(p->rp_min_rate))
		rc = mbps(p->rp_min_rate);
	if (rc < s->rc) /* a floor above the current rate never raises it */
		s->rc = rc;
	if (s->rc < s->rc_min)
		s->rc_min = s->rc;
	s->time_stage = s->byte_stage = 0;
	s->bytes_left = p->rp_byte_reset;
	s->inc_next = t + us(p->rp_time_reset);
	s->dec_owed = false;
	s->dec_allowed = t + us(p->rp_rate_reduce_monitor_period);
	s->decreases++;
}

enum inc_kind { INC_TIMER, INC_BYTES };

static void increase(struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p, uint64_t max_bps,
		     enum inc_kind kind, uint64_t t)
{
	uint32_t f = p->rp_threshold, hi, lo;

	if (kind == INC_TIMER) {
		s->time_stage++;
		s->inc_next = t + us(p->rp_time_reset);
	} else {
		s->byte_stage++;
		s->bytes_left += p->rp_byte_reset;
	}
	hi = s->time_stage > s->byte_stage ? s->time_stage : s->byte_stage;
	lo = s->time_stage < s->byte_stage ? s->time_stage : s->byte_stage;
	if (hi < f) {
		/* fast recovery: towards the rate before the cut */
	} else if (lo < f) {
		s->rt += mbps(p->rp_ai_rate); /* additive increase */
	} else {
		s->rt += mbps(p->rp_hai_rate) * (lo - f + 1); /* hyper increase */
	}
	if (s->rt > max_bps)
		s->rt = max_bps;
	/* rounded up, so that Rc reaches Rt instead of stalling 1 b/s short */
	s->rc = (s->rc + s->rt + 1) / 2;
	if (s->rc > max_bps)
		s->rc = max_bps;
	s->increases++;
	release_if_recovered(s, max_bps);
}

void xrxe_dcqcn_cnp(struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p, uint64_t max_bps,
		    uint64_t now)
{
	now = tick(s, now);
	s->cnps++;
	if (!s->limited) {
		/* First CNP (docs/facts/dcqcn.md §1.5): alpha starts high, the alpha
		 * timer starts, the rate may jump to rate_to_set_on_first_cnp. */
		s->limited = true;
		if (s->rc > max_bps)
			s->rc = max_bps;
		s->alpha = p->rp_initial_alpha_value;
		s->alpha_next = now + us(p->rp_dce_tcp_rtt);
		if (p->rp_rate_to_set_on_first_cnp && mbps(p->rp_rate_to_set_on_first_cnp) < s->rc)
			s->rc = mbps(p->rp_rate_to_set_on_first_cnp);
		s->rt = s->rc;
		s->time_stage = s->byte_stage = 0;
		s->bytes_left = p->rp_byte_reset;
		s->inc_next = now + us(p->rp_time_reset);
		s->dec_allowed = now;
	} else {
		alpha_advance(s, p, now);
	}
	s->alpha_cnp = true;
	s->dec_owed = true;
	if (now >= s->dec_allowed)
		decrease(s, p, now);
}

void xrxe_dcqcn_sent(struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p, uint64_t max_bps,
		     uint32_t bytes, uint64_t now)
{
	unsigned n = 0;

	if (!s->limited)
		return;
	now = tick(s, now);
	s->bytes_left -= bytes;
	while (s->limited && s->bytes_left <= 0 && n++ < MAX_EVENTS_PER_CALL)
		increase(s, p, max_bps, INC_BYTES, now);
	if (s->bytes_left <= 0)
		s->bytes_left = p->rp_byte_reset;
}

void xrxe_dcqcn_timers(struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p, uint64_t max_bps,
		       uint64_t now)
{
	unsigned n = 0;

	now = tick(s, now);
	while (s->limited && n++ < MAX_EVENTS_PER_CALL) {
		bool dec = s->dec_owed && s->dec_allowed <= now;
		bool inc = s->inc_next <= now;

		if (!dec && !inc)
			return;
		/* in time order; a decrease due at the same time goes first */
		if (dec && (!inc || s->dec_allowed <= s->inc_next))
			decrease(s, p, s->dec_allowed);
		else
			increase(s, p, max_bps, INC_TIMER, s->inc_next);
	}
	if (s->limited && s->inc_next <= now)
		s->inc_next = now + us(p->rp_time_reset); /* gave up catching up */
}

uint64_t xrxe_dcqcn_deadline(const struct xrxe_dcqcn *s)
{
	uint64_t d;

	if (!s->limited)
		return XRXE_DCQCN_NO_DEADLINE;
	d = s->inc_next;
	if (s->dec_owed && s->dec_allowed < d)
		d = s->dec_allowed;
	return d;
}

void xrxe_dcqcn_rescale(struct xrxe_dcqcn *s, uint64_t max_bps)
{
	if (!s->limited) {
		s->rc = s->rt = max_bps;
		return;
	}
	if (s->rt > max_bps)
		s->rt = max_bps;
	if (s->rc > max_bps)
		s->rc = max_bps;
	release_if_recovered(s, max_bps);
}
