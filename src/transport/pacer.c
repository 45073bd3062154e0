// SPDX-License-Identifier: MIT
/*
 * The pacer (docs/facts/dcqcn.md §5): per-QP earliest departure times and a timing
 * wheel of the QPs waiting for theirs (Carousel; eRPC's wheel is the
 * user-space template). The wheel answers "when is the next release?" for
 * xrxe_tp_next_deadline without a scan of every QP, and hands back the
 * entries that are due. Slots are XRXE_PACER_SLOT_NS wide, but each entry
 * keeps its exact time: a slot only groups, it never rounds a release.
 */
#include <string.h>

#include "transport/dcqcn.h"

#define NS_PER_S 1000000000ull

/* --- earliest departure time ------------------------------------------------ */

void xrxe_edt_sent(struct xrxe_edt *e, uint32_t bytes, uint64_t rate_bps, uint64_t now)
{
	uint64_t base = e->next, num, slack;

	if (!rate_bps)
		return;
	/* bytes * 8e9 < 2^64 for any frame (< 2^31 bytes), frac < rate */
	num = (uint64_t)bytes * 8 * NS_PER_S + e->frac;
	/* An idle QP starts from now: it banks no burst beyond the slack that
	 * absorbs a late wake-up of the caller. The slack is at least this
	 * frame's own gap: at low rates a wake-up that is late by less than one
	 * gap (tens of us on a loaded host) is caught up by one early frame
	 * instead of being lost for good, which held a QP ~15 % under its rate
	 * on the wire (docs/cc/README.md, E7). At most one frame leaves early,
	 * the same bound a token bucket one frame deep gives. */
	slack = num / rate_bps;
	if (slack < XRXE_PACER_SLACK_NS)
		slack = XRXE_PACER_SLACK_NS;
	if (base + slack < now) {
		base = now;
		num -= e->frac;
		e->frac = 0;
	}
	e->next = base + num / rate_bps;
	e->frac = num % rate_bps;
}

void xrxe_edt_rescale(struct xrxe_edt *e, uint64_t old_bps, uint64_t new_bps, uint64_t now)
{
	uint64_t left;

	if (!old_bps || !new_bps || old_bps == new_bps || e->next <= now)
		return;
	left = e->next - now;
	/* left * old / new without overflow for left < ~18 s at 1 Tb/s */
	e->next = now + (uint64_t)((unsigned __int128)left * old_bps / new_bps);
	e->frac = 0;
}

/* --- timing wheel ------------------------------------------------------------ */

static void list_init(struct xrxe_pacer_entry *h)
{
	h->next = h->prev = h;
}

void xrxe_pacer_init(struct xrxe_pacer *p, uint64_t now)
{
	memset(p, 0, sizeof(*p));
	for (unsigned i = 0; i < XRXE_PACER_SLOTS; i++)
		list_init(&p->slot[i]);
	p->cursor = now / XRXE_PACER_SLOT_NS;
}

static unsigned slot_of(uint64_t slotno)
{
	return (unsigned)(slotno % XRXE_PACER_SLOTS);
}

static void file(struct xrxe_pacer *p, struct xrxe_pacer_entry *e)
{
	uint64_t s = e->t / XRXE_PACER_SLOT_NS;
	unsigned i;

	/* late entries go into the present slot, far ones into the horizon's
	 * (re-filed when the wheel gets there) */
	if (s < p->cursor)
		s = p->cursor;
	if (s >= p->cursor + XRXE_PACER_SLOTS)
		s = p->cursor + XRXE_PACER_SLOTS - 1;
	i = slot_of(s);
	e->slot = i;
	e->next = &p->slot[i];
	e->prev = p->slot[i].prev;
	p->slot[i].prev->next = e;
	p->slot[i].prev = e;
	p->bitmap[i / 64] |= 1ull << (i % 64);
	e->queued = true;
	p->count++;
}

static void unfile(struct xrxe_pacer *p, struct xrxe_pacer_entry *e)
{
	struct xrxe_pacer_entry *h = &p->slot[e->slot];

	e->prev->next = e->next;
	e->next->prev = e->prev;
	if (h->next == h)
		p->bitmap[e->slot / 64] &= ~(1ull << (e->slot % 64));
	e->next = e->prev = NULL;
	e->queued = false;
	p->count--;
}

void xrxe_pacer_schedule(struct xrxe_pacer *p, struct xrxe_pacer_entry *e, uint64_t t)
{
	if (e->queued) {
		if (e->t == t)
			return;
		unfile(p, e);
	}
	e->t = t;
	file(p, e);
}

void xrxe_pacer_cancel(struct xrxe_pacer *p, struct xrxe_pacer_entry *e)
{
	if (e->queued)
		unfile(p, e);
}

/* Distance in slots from the cursor to the first non-empty slot
 * (XRXE_PACER_SLOTS: none): one bitmap word at a time. */
static unsigned first_slot(const struct xrxe_pacer *p)
{
	unsigned start = slot_of(p->cursor), k = 0;

	while (k < XRXE_PACER_SLOTS + 64) {
		unsigned i = (start + k) % XRXE_PACER_SLOTS;
		uint64_t w = p->bitmap[i / 64] >> (i % 64);

		if (w) {
			k += (unsigned)__builtin_ctzll(w);
			return k < XRXE_PACER_SLOTS ? k : XRXE_PACER_SLOTS;
		}
		k += 64 - i % 64;
	}
	return XRXE_PACER_SLOTS;
}

uint64_t xrxe_pacer_next(const struct xrxe_pacer *p)
{
	const struct xrxe_pacer_entry *h, *e;
	uint64_t best = XRXE_DCQCN_NO_DEADLINE;
	unsigned k;

	if (!p->count)
		return best;
	k = first_slot(p);
	if (k == XRXE_PACER_SLOTS)
		return best;
	/* entries keep exact times; the earliest slot holds the earliest one
	 * (a horizon entry shares the last slot only with later ones) */
	h = &p->slot[slot_of(p->cursor + k)];
	for (e = h->next; e != h; e = e->next)
		if (e->t < best)
			best = e->t;
	return best;
}

unsigned xrxe_pacer_expire(struct xrxe_pacer *p, uint64_t now,
			   void (*fn)(void *arg, struct xrxe_pacer_entry *e), void *arg)
{
	uint64_t target = now / XRXE_PACER_SLOT_NS;
	unsigned released = 0, steps = 0;

	for (;;) {
		struct xrxe_pacer_entry *h = &p->slot[slot_of(p->cursor)], *e, *nx, later;

		list_init(&later);
		for (e = h->next; e != h; e = nx) {
			nx = e->next;
			if (e->t <= now) {
				unfile(p, e);
				released++;
				if (fn)
					fn(arg, e);
			} else if (p->cursor < target) {
				/* a horizon entry: re-filed once the cursor moved */
				unfile(p, e);
				e->next = later.next;
				e->prev = &later;
				later.next->prev = e;
				later.next = e;
			}
		}
		if (p->cursor >= target) {
			p->cursor = target > p->cursor ? target : p->cursor;
			return released;
		}
		/* next slot; with nothing filed, or after a whole lap, straight
		 * to the present (every slot has been looked at) */
		if (!p->count || ++steps >= XRXE_PACER_SLOTS)
			p->cursor = target;
		else
			p->cursor++;
		for (e = later.next; e != &later; e = nx) {
			nx = e->next;
			file(p, e);
		}
	}
}
