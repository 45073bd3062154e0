/* SPDX-License-Identifier: MIT */
/*
 * The rules of the shared rings (struct xrxe_ring, abi.h) in one place: every
 * index load and publish and every slot address of the shim (src/verbs), the
 * transport (src/transport) and the daemon (src/daemon) goes through these:
 *
 *   - capacity is nslots - 1: empty when producer == consumer, full when
 *     (producer + 1) & index_mask == consumer; indices are stored masked;
 *   - the producer writes the element, then store-releases the producer
 *     index; the consumer load-acquires the producer index, reads the
 *     element, then store-releases the consumer index (docs/facts/rxe.md §4.2);
 *   - an index read from shared memory is the other side's claim: it is
 *     masked before use, so a hostile value addresses a slot of the ring and
 *     nothing else; the mask and element size are the reader's own copies,
 *     never the header's (which the other side can write).
 *
 * And the SQ doorbell protocol built on them (issue 16): a post publishes its
 * WQEs, then tells the daemon which QP has them through the connection's
 * doorbell ring, so the daemon never scans send queues for new posts.
 */
#ifndef XRXE_RING_H
#define XRXE_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "xrxe/abi.h"

/* The index mask is always the caller's own copy (from the slot count it
 * created or was told), never the header's index_mask: the header lies in
 * memory the other side may write, so a daemon that took its mask or element
 * size from there would index wherever a hostile application pointed it. */
static inline uint32_t xrxe_ring_load_producer(const struct xrxe_ring *r, uint32_t mask)
{
	return __atomic_load_n(&r->producer, __ATOMIC_ACQUIRE) & mask;
}

static inline uint32_t xrxe_ring_load_consumer(const struct xrxe_ring *r, uint32_t mask)
{
	return __atomic_load_n(&r->consumer, __ATOMIC_ACQUIRE) & mask;
}

static inline void xrxe_ring_publish_producer(struct xrxe_ring *r, uint32_t prod, uint32_t mask)
{
	__atomic_store_n(&r->producer, prod & mask, __ATOMIC_RELEASE);
}

static inline void xrxe_ring_publish_consumer(struct xrxe_ring *r, uint32_t cons, uint32_t mask)
{
	__atomic_store_n(&r->consumer, cons & mask, __ATOMIC_RELEASE);
}

static inline bool xrxe_ring_full(uint32_t prod, uint32_t cons, uint32_t mask)
{
	return ((prod + 1) & mask) == (cons & mask);
}

/* elements of 1 << log2 bytes, log2 the caller's own too */
static inline void *xrxe_ring_slot(struct xrxe_ring *r, uint32_t idx, uint32_t mask, uint32_t log2)
{
	return r->data + ((size_t)(idx & mask) << log2);
}

/* ---------------------------------------------------------------------------
 * SQ doorbells
 *
 * Each connection has one doorbell ring (HELLO reply fd [2]): elements are
 * struct xrxe_doorbell, the shim produces, the daemon consumes. A send
 * queue's ring header uses its notify word (CQ rings only otherwise) as the
 * QP's "doorbell pending" flag:
 *
 *   shim, after publishing the SQ producer:
 *     if exchange(sq->notify, 1) was 0: push the QP's handle on the doorbell
 *     ring (under the context's doorbell lock: threads share the ring); if
 *     the ring is full, set the doorbell ring's notify (overflow) instead;
 *     then the wake-up of abi.h (fence, daemon_sleeping, eventfd).
 *   daemon, for each handle popped: exchange(sq->notify, 0), then the
 *     transport reads the SQ producer on its next poll (a post after the
 *     exchange sees 0 and pushes again: none is lost, and a QP is in the
 *     ring at most once, so the ring never needs more slots than QPs).
 *     On overflow (exchange(db->notify, 0) was 1) it visits every QP of the
 *     connection once.
 *
 * Everything here comes from the application: the daemon checks the handle
 * against the connection's own objects (a foreign or stale one misses), and a
 * flood of doorbells costs the daemon a lookup each, bounded by the ring's
 * size per pass.
 * ------------------------------------------------------------------------- */

#define XRXE_DOORBELL_SLOTS 8192u
#define XRXE_DOORBELL_MASK (XRXE_DOORBELL_SLOTS - 1)

struct xrxe_doorbell {
	uint32_t qp_handle; /* the QP's handle (CREATE_QP reply) */
	uint32_t pad[3];
};
_Static_assert(sizeof(struct xrxe_doorbell) == 16, "doorbell element");
#define XRXE_DOORBELL_LOG2 4u

static inline struct xrxe_doorbell *xrxe_doorbell_slot(struct xrxe_ring *db, uint32_t idx)
{
	return (struct xrxe_doorbell *)xrxe_ring_slot(db, idx, XRXE_DOORBELL_MASK,
						       XRXE_DOORBELL_LOG2);
}

/* Shim side: claim the QP's pending flag; true if the caller must push. */
static inline bool xrxe_doorbell_claim(struct xrxe_ring *sq)
{
	return __atomic_exchange_n(&sq->notify, 1, __ATOMIC_SEQ_CST) == 0;
}

/* Shim side, under the context's doorbell lock: push handle, or flag an
 * overflow when the ring is full. */
static inline void xrxe_doorbell_push(struct xrxe_ring *db, uint32_t *prod, uint32_t handle)
{
	uint32_t cons = xrxe_ring_load_consumer(db, XRXE_DOORBELL_MASK);

	if (xrxe_ring_full(*prod, cons, XRXE_DOORBELL_MASK)) {
		__atomic_store_n(&db->notify, 1, __ATOMIC_SEQ_CST);
		return;
	}
	xrxe_doorbell_slot(db, *prod)->qp_handle = handle;
	*prod = (*prod + 1) & XRXE_DOORBELL_MASK;
	xrxe_ring_publish_producer(db, *prod, XRXE_DOORBELL_MASK);
}

/* Daemon side: the QP's doorbell was taken; later posts ring again. */
static inline void xrxe_doorbell_clear(struct xrxe_ring *sq)
{
	__atomic_exchange_n(&sq->notify, 0, __ATOMIC_SEQ_CST);
}

#endif /* XRXE_RING_H */
