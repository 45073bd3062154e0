// SPDX-License-Identifier: MIT
/*
 * The SQ doorbell protocol of include/xrxe/ring.h, both sides in one thread:
 * a QP is pushed once until the daemon takes it, a post after the daemon's
 * clear pushes again (none lost), a full ring raises the overflow flag
 * instead of writing past the consumer, and the daemon's indices stay in the
 * ring whatever the application writes into the header (ring.h: the mask
 * and element size are the reader's own).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"
#include "xrxe/ring.h"

/* the daemon's side (src/daemon/ctrl_doorbell.c): take every handle */
static unsigned drain(struct xrxe_ring *db, uint32_t *cons, uint32_t *out, unsigned max)
{
	uint32_t prod = xrxe_ring_load_producer(db, XRXE_DOORBELL_MASK);
	unsigned n = 0;

	while (*cons != prod && n < max) {
		const struct xrxe_doorbell *e = xrxe_doorbell_slot(db, *cons);

		if (out)
			out[n] = e->qp_handle;
		n++;
		*cons = (*cons + 1) & XRXE_DOORBELL_MASK;
	}
	xrxe_ring_publish_consumer(db, *cons, XRXE_DOORBELL_MASK);
	return n;
}

Test(ring_doorbell, once_per_qp_until_taken_then_again)
{
	struct xrxe_ring *db = xrxe_tph_ring_alloc(XRXE_DOORBELL_SLOTS, sizeof(struct xrxe_doorbell));
	struct xrxe_ring *sq = xrxe_tph_ring_alloc(4, 128);
	uint32_t prod = 0, cons = 0, got[16];

	/* three posts before the daemon looks: one doorbell */
	for (int k = 0; k < 3; k++)
		if (xrxe_doorbell_claim(sq))
			xrxe_doorbell_push(db, &prod, 0x10007);
	cr_assert_eq(drain(db, &cons, got, 16), 1);
	cr_assert_eq(got[0], 0x10007);
	/* not cleared yet (the daemon clears before the transport reads the
	 * producer): a post now is covered by the doorbell in flight */
	cr_assert_not(xrxe_doorbell_claim(sq));
	xrxe_doorbell_clear(sq);
	/* after the clear, the next post rings again */
	cr_assert(xrxe_doorbell_claim(sq));
	xrxe_doorbell_push(db, &prod, 0x10007);
	cr_assert_eq(drain(db, &cons, got, 16), 1);
	cr_assert_eq(db->notify, 0, "no overflow");
	free(db);
	free(sq);
}

Test(ring_doorbell, full_ring_flags_overflow_and_never_overwrites)
{
	struct xrxe_ring *db = xrxe_tph_ring_alloc(XRXE_DOORBELL_SLOTS, sizeof(struct xrxe_doorbell));
	uint32_t prod = 0, cons = 0, got[4], cap = XRXE_DOORBELL_SLOTS - 1;

	for (uint32_t h = 1; h <= cap + 2; h++)
		xrxe_doorbell_push(db, &prod, h);
	cr_assert_eq(db->notify, 1, "overflow flagged");
	cr_assert_eq(drain(db, &cons, got, 1), 1);
	cr_assert_eq(got[0], 1);
	cr_assert_eq(drain(db, &cons, NULL, cap), cap - 1, "the rest of the ring, nothing past it");
	cr_assert_eq(xrxe_doorbell_slot(db, cap - 1)->qp_handle, cap, "the last one that fitted");
	/* room again: pushes land, wrapping the masked indices */
	for (uint32_t h = 6; h <= 8; h++)
		xrxe_doorbell_push(db, &prod, h);
	cr_assert_eq(drain(db, &cons, got, 4), 3);
	cr_assert_eq(got[0], 6);
	cr_assert_eq(got[2], 8);
	free(db);
}

Test(ring_doorbell, hostile_header_keeps_the_daemon_in_the_ring)
{
	struct xrxe_ring *db = xrxe_tph_ring_alloc(XRXE_DOORBELL_SLOTS, sizeof(struct xrxe_doorbell));
	uint32_t cons = 0;

	/* The application may write anything into the header it shares: a
	 * producer index, and a mask and element size that would point the
	 * daemon far outside the ring if it believed them. */
	db->producer = 0xfffffff3u;
	db->index_mask = 0xffffffffu;
	db->log2_elem_size = 31;
	cr_assert_leq(xrxe_ring_load_producer(db, XRXE_DOORBELL_MASK), XRXE_DOORBELL_MASK);
	cr_assert_eq((uint8_t *)xrxe_doorbell_slot(db, 0xfffffff3u) - db->data,
		     (ptrdiff_t)((0xfffffff3u & XRXE_DOORBELL_MASK) * sizeof(struct xrxe_doorbell)));
	/* a drain takes at most one ring's worth, every slot inside it */
	cr_assert_leq(drain(db, &cons, NULL, XRXE_DOORBELL_SLOTS), XRXE_DOORBELL_SLOTS);
	free(db);
}
