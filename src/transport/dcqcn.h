/* SPDX-License-Identifier: MIT */
/*
 * DCQCN as pure functions of (state, parameters, event, now): the reaction
 * point's rate machine (dcqcn.c), the notification point's CNP limiter (np.c)
 * and the pacer, a timing wheel of per-QP release times (pacer.c). Nothing
 * here knows a QP, a packet or a clock; cc.c wires them into the transport.
 *
 * Units: times in ns (parameters in us are converted here), rates in b/s
 * (parameters in Mb/s), alpha in the mlx5 10-bit fixed point (1023 ~ 1.0).
 */
#ifndef XRXE_TRANSPORT_DCQCN_H
#define XRXE_TRANSPORT_DCQCN_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/transport.h"

#define XRXE_DCQCN_NO_DEADLINE UINT64_MAX
#define XRXE_DCQCN_ALPHA_MAX 1023u

/* ---------------------------------------------------------------------------
 * Reaction point, the "Mellanox version" (docs/facts/dcqcn.md §1.5) with NVIDIA's
 * byte counter and clamp flags (§1.4, §1.6):
 *
 *   CNP:       first one: alpha = rp_initial_alpha_value, Rc = Rt =
 *              rp_rate_to_set_on_first_cnp (if set); alpha timer starts.
 *              Every one: a decrease is owed; it happens now if the last one
 *              was >= rp_rate_reduce_monitor_period ago, else when the
 *              period ends (at most one decrease per period).
 *   alpha:     every rp_dce_tcp_rtt from the first CNP:
 *              alpha = g*alpha/1024 + (CNP since the last update ? 1024-g : 0)
 *   decrease:  Rt = Rc if rp_clamp_tgt_rate, or an increase since the last
 *              decrease was byte-driven, or (rp_clamp_tgt_rate_ati) timer-
 *              driven; Rc -= Rc*alpha >> rp_gd, kept >= Rc*rp_min_dec_fac/100
 *              and >= rp_min_rate; both stages = 0; timer and byte counter
 *              restart.
 *   increase:  each rp_time_reset (timer stage T++) and each rp_byte_reset
 *              bytes sent (byte stage B++); F = rp_threshold:
 *              max(T,B) < F: fast recovery (Rt unchanged)
 *              min(T,B) < F: additive, Rt += rp_ai_rate
 *              else:         hyper, Rt += rp_hai_rate * (min(T,B) - F + 1)
 *              Rt <= max; Rc = ceil((Rc + Rt) / 2).
 *   release:   Rc and Rt back at the maximum: the limiter is off (no pacing,
 *              no timers); the next CNP is a first CNP again.
 *
 * Times never run backwards: an event timed before the latest one handled
 * (a CNP is timed by its arrival, and read after a send at a later time)
 * is handled at that latest time.
 *
 * alpha is kept lazily: its timer only matters when a decrease reads alpha,
 * so the updates due since the last look are applied then (bounded: alpha
 * reaches 0 within ~1500 updates), never as wake-ups every microsecond.
 * ------------------------------------------------------------------------- */
struct xrxe_dcqcn {
	bool limited;
	uint64_t rc, rt;         /* current and target rate, b/s */
	uint64_t rc_min;         /* lowest rc so far (a cut recovers within ms: samples miss it) */
	uint32_t alpha;          /* as of alpha_next - period */
	bool alpha_cnp;          /* a CNP since the last alpha update */
	bool dec_owed;           /* a CNP since the last decrease */
	uint64_t alpha_next;     /* next alpha update */
	uint64_t dec_allowed;    /* earliest next decrease */
	uint64_t inc_next;       /* next timer increase */
	uint32_t time_stage, byte_stage;
	int64_t bytes_left;      /* byte counter */
	uint64_t cnps, decreases, increases;
	uint64_t clock;          /* latest time an event was handled at */
};

void xrxe_dcqcn_init(struct xrxe_dcqcn *s, uint64_t max_bps);
void xrxe_dcqcn_cnp(struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p, uint64_t max_bps,
		    uint64_t now);
/* bytes sent by the QP (its byte counter). */
void xrxe_dcqcn_sent(struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p, uint64_t max_bps,
		     uint32_t bytes, uint64_t now);
/* Run every timer event due at or before now, in time order. */
void xrxe_dcqcn_timers(struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p, uint64_t max_bps,
		       uint64_t now);
/* When xrxe_dcqcn_timers has work next (XRXE_DCQCN_NO_DEADLINE: none). */
uint64_t xrxe_dcqcn_deadline(const struct xrxe_dcqcn *s);
/* alpha as of now (the lazy updates applied to a copy). */
uint32_t xrxe_dcqcn_alpha(const struct xrxe_dcqcn *s, const struct xrxe_tp_cc_params *p,
			  uint64_t now);
/* Cap at a new maximum (parameters changed); release if at it. */
void xrxe_dcqcn_rescale(struct xrxe_dcqcn *s, uint64_t max_bps);

/* ---------------------------------------------------------------------------
 * Notification point limiter (docs/facts/dcqcn.md §1.2, NVIDIA
 * np_min_time_between_cnps): per QP, a CE mark produces a CNP if none was
 * sent in the last min_gap_ns (the first mark always does).
 * ------------------------------------------------------------------------- */
struct xrxe_np {
	bool sent;
	uint64_t last;
};
/* true: send a CNP now (and it is accounted as sent at now). */
bool xrxe_np_ce(struct xrxe_np *np, uint64_t min_gap_ns, uint64_t now);

/* ---------------------------------------------------------------------------
 * Pacer (docs/facts/dcqcn.md §5): earliest departure time per QP plus a timing wheel
 * (Carousel / eRPC) of the QPs waiting for theirs.
 *
 * EDT: after a frame of n bytes at rate R the next may leave at
 * base + n*8e9/R ns, base = the previous release, or now if the QP was idle
 * longer than XRXE_PACER_SLACK_NS or this frame's gap n*8e9/R, whichever is
 * longer (an idle QP banks no burst beyond one frame). The division
 * remainder is carried, so release times are exact, not rounded per frame.
 * ------------------------------------------------------------------------- */
#define XRXE_PACER_SLACK_NS 10000ull /* catch up after a late wake-up, no more */

struct xrxe_edt {
	uint64_t next;  /* earliest departure of the next frame */
	uint64_t frac;  /* remainder of bits*1e9 / rate carried to the next frame */
};
/* Account a frame of bytes sent at now at rate_bps. */
void xrxe_edt_sent(struct xrxe_edt *e, uint32_t bytes, uint64_t rate_bps, uint64_t now);
/* The rate changed while a gap is pending: stretch or shrink the rest of it
 * (docs/facts/dcqcn.md §5: "on a rate change the pending gap is re-scaled"). */
void xrxe_edt_rescale(struct xrxe_edt *e, uint64_t old_bps, uint64_t new_bps, uint64_t now);

struct xrxe_pacer_entry {
	struct xrxe_pacer_entry *next, *prev;
	uint64_t t;
	uint32_t slot;
	bool queued;
};

/* Slots of XRXE_PACER_SLOT_NS; entries beyond the horizon wait in the last
 * slot and are re-filed as the wheel turns. */
#define XRXE_PACER_SLOT_NS 1000ull
#define XRXE_PACER_SLOTS 1024u

struct xrxe_pacer {
	struct xrxe_pacer_entry slot[XRXE_PACER_SLOTS]; /* list heads (circular) */
	uint64_t bitmap[XRXE_PACER_SLOTS / 64];          /* non-empty slots */
	uint64_t cursor; /* slot number (time / SLOT_NS) of the wheel's present */
	uint32_t count;
};

void xrxe_pacer_init(struct xrxe_pacer *p, uint64_t now);
/* File e to be released at t (moves it if it is filed already). */
void xrxe_pacer_schedule(struct xrxe_pacer *p, struct xrxe_pacer_entry *e, uint64_t t);
void xrxe_pacer_cancel(struct xrxe_pacer *p, struct xrxe_pacer_entry *e);
/* Earliest release time filed, or XRXE_DCQCN_NO_DEADLINE. */
uint64_t xrxe_pacer_next(const struct xrxe_pacer *p);
/* Unfile every entry due at or before now, calling fn for each; returns how many. */
unsigned xrxe_pacer_expire(struct xrxe_pacer *p, uint64_t now,
			   void (*fn)(void *arg, struct xrxe_pacer_entry *e), void *arg);

#endif /* XRXE_TRANSPORT_DCQCN_H */
