// SPDX-License-Identifier: MIT
/*
 * Completion queues: CQEs are written straight into the CQ ring the
 * application maps (abi.h, docs/facts/rxe.md §4.2): write the element, then
 * store-release the producer index. The CQ is armed by the application
 * writing ring->notify; we clear it with an atomic exchange (compare-exchange
 * here, so that a SOLICITED arm survives an unsolicited CQE) and call
 * ops->cq_event.
 *
 * Overrun (IBA 11.4.2.1 and the CQ error of 11.6.3: a CQ overrun is an affiliated asynchronous
 * error, IBV_EVENT_CQ_ERR; the CQ is unusable afterwards): the ring gets
 * XRXE_RING_F_OVERRUN, the event is raised once, and every later CQE is
 * dropped; the caller moves the QP that could not complete to ERR.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tp_internal.h"

int xrxe_tp_cq_create(struct xrxe_tp *tp, struct xrxe_ring *ring, uint32_t nslots, void *user,
		      struct xrxe_tp_cq **out)
{
	struct xrxe_tp_cq *cq;

	if (!ring || nslots < 2 || (nslots & (nslots - 1)))
		return -EINVAL;
	/* The ring header is ours (written by the daemon at creation); check
	 * it agrees with nslots before relying on our private copy. */
	if (ring->index_mask != nslots - 1 || ring->log2_elem_size > 12 ||
	    (1u << ring->log2_elem_size) < sizeof(struct xrxe_cqe))
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->tp = tp;
	cq->ring = ring;
	cq->mask = nslots - 1;
	cq->log2 = ring->log2_elem_size;
	cq->prod = xrxe_ring_load_producer(ring, cq->mask);
	cq->cons_seen = xrxe_ring_load_consumer(ring, cq->mask);
	cq->user = user;
	cq->next = tp->cqs;
	cq->prev = NULL;
	if (tp->cqs)
		tp->cqs->prev = cq;
	tp->cqs = cq;
	tp->stats.cqs++;
	*out = cq;
	return 0;
}

int xrxe_tp_cq_destroy(struct xrxe_tp *tp, struct xrxe_tp_cq *cq)
{
	if (cq->refs)
		return -EBUSY;
	/* unlinked in O(1): tearing down 65 536 CQs must not walk the list
	 * once per CQ */
	if (cq->prev)
		cq->prev->next = cq->next;
	else
		tp->cqs = cq->next;
	if (cq->next)
		cq->next->prev = cq->prev;
	tp->stats.cqs--;
	free(cq);
	return 0;
}

/*
 * rxe's ibv_post_send runs the requester before it returns, so the completions
 * of work that needs no answer from a peer -- UD and UC sends, local
 * operations (BIND_MW, LOCAL_INV), the flush of a QP in error -- are in the
 * CQ by the time the application asks for a resize, and a resize below them
 * fails (rdma-core's test_cq.test_resize_cq posts UD sends and counts on
 * that). Here the core takes posted WQEs in on its next poll, which the
 * resize request can overtake; so a resize first lets the queues completing
 * into this CQ catch up, and counts what the application posted before it.
 * Bounded: at most one packet per send queue slot of each QP.
 */
static void cq_catch_up(struct xrxe_tp *tp, const struct xrxe_tp_cq *cq)
{
	struct xrxe_tp_qp *qp;

	for (qp = tp->qps; qp; qp = qp->next) {
		if (qp->send_cq == cq)
			xrxe_tpi_req_run(qp, qp->sq_mask + 1);
		if (qp->send_cq == cq || qp->recv_cq == cq) {
			xrxe_tpi_qp_flush(qp);
			/* served outside a poll: timers may be armed now, and
			 * what is left goes on in the next poll (sched.c) */
			xrxe_tpi_sched_kick(qp);
			xrxe_tpi_sched_rearm(qp);
		}
	}
}

int xrxe_tp_cq_resize(struct xrxe_tp *tp, struct xrxe_tp_cq *cq, struct xrxe_ring *ring,
		      uint32_t nslots)
{
	struct xrxe_ring *old = cq->ring;
	uint32_t cons, n, log2;

	if (!ring || nslots < 2 || (nslots & (nslots - 1)) || ring->index_mask != nslots - 1 ||
	    ring->log2_elem_size > 12 || (1u << ring->log2_elem_size) < sizeof(struct xrxe_cqe))
		return -EINVAL;
	cq_catch_up(tp, cq);
	log2 = ring->log2_elem_size;
	/* Acquire pairs with the application's consumer store-release, as in
	 * post: the CQEs it has not released yet are the ones to move.
	 * Masked: it may have written anything (it only loses its own CQEs). */
	cons = xrxe_ring_load_consumer(old, cq->mask);
	n = (cq->prod - cons) & cq->mask;
	if (n > nslots - 1)
		return -EINVAL; /* ibv_resize_cq below the CQEs outstanding */
	for (uint32_t i = 0; i < n; i++)
		memcpy(xrxe_ring_slot(ring, i, nslots - 1, log2),
		       xrxe_ring_slot(old, cons + i, cq->mask, cq->log2), sizeof(struct xrxe_cqe));
	atomic_store_explicit((_Atomic uint32_t *)&ring->notify,
			      atomic_load_explicit((_Atomic uint32_t *)&old->notify,
						   memory_order_relaxed),
			      memory_order_relaxed);
	if (cq->overrun)
		atomic_fetch_or_explicit((_Atomic uint32_t *)&ring->flags, XRXE_RING_F_OVERRUN,
					 memory_order_relaxed);
	xrxe_ring_publish_consumer(ring, 0, nslots - 1);
	/* Release: the copied CQEs are visible before the producer index. */
	xrxe_ring_publish_producer(ring, n, nslots - 1);
	cq->ring = ring;
	cq->mask = nslots - 1;
	cq->log2 = log2;
	cq->prod = n;
	cq->cons_seen = 0;
	return 0;
}

/*
 * A QP modified to RESET leaves no CQE behind: its entries not yet polled are
 * removed from the CQ (qp.c calls this for its send and receive CQs), as
 * rdma-core's mlx4 and mlx5 providers clean the CQ on that transition. IBA
 * 10.3.1 has Reset empty the work queues; a QP taken from Error back to RTS
 * must not hand the poller of its new work the flush completions of its old
 * life (rdma-core's test_mr rereg tests restate QPs so and expect success;
 * rxe, which keeps the CQEs, skips those tests for want of rereg). The shim
 * holds the CQ's lock across the modify call, so nobody consumes meanwhile:
 * the other QPs' CQEs move down over the removed ones, in order, and the
 * producer index moves back by as many.
 */
void xrxe_tpi_cq_purge_qp(struct xrxe_tp_cq *cq, uint32_t qpn)
{
	struct xrxe_ring *ring = cq->ring;
	uint32_t cons, n, keep, removed = 0;

	if (cq->overrun)
		return; /* unusable anyway (IBA 11.4.2.1): leave it as it is */
	cons = xrxe_ring_load_consumer(ring, cq->mask);
	n = (cq->prod - cons) & cq->mask;
	keep = cons;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t from = (cons + i) & cq->mask;
		struct xrxe_cqe *e = xrxe_ring_slot(ring, from, cq->mask, cq->log2);

		if (e->wc.qp_num == qpn) {
			removed++;
			continue;
		}
		if (keep != from)
			memcpy(xrxe_ring_slot(ring, keep, cq->mask, cq->log2), e, sizeof(*e));
		keep = (keep + 1) & cq->mask;
	}
	if (!removed)
		return;
	cq->prod -= removed;
	xrxe_ring_publish_producer(ring, cq->prod, cq->mask);
}

static void cq_notify(struct xrxe_tp_cq *cq, bool solicited)
{
	_Atomic uint32_t *notify = (_Atomic uint32_t *)&cq->ring->notify;
	uint32_t armed;

	/* Dekker with the shim's ibv_req_notify_cq: it stores notify, fences,
	 * then polls the producer; we stored the producer (release), fence,
	 * then read notify. Without this full fence the producer store can
	 * still sit in the store buffer when we read notify (x86 reorders a
	 * store with a later load): we read "not armed", the application
	 * reads the old producer, and both wait forever. */
	atomic_thread_fence(memory_order_seq_cst);
	armed = atomic_load_explicit(notify, memory_order_relaxed);

	/* NEXT fires on any CQE, SOLICITED only on solicited or error CQEs
	 * (IBA 11.4.2.2, request completion notification). The
	 * compare-exchange clears exactly the arm we act on: if the shim
	 * re-arms concurrently we either see its new value or fail and
	 * re-evaluate. Acquire/release is not needed for the value itself;
	 * the CQE was already published by the producer store-release. */
	while (armed == XRXE_CQ_NOTIFY_NEXT || (armed == XRXE_CQ_NOTIFY_SOLICITED && solicited)) {
		if (atomic_compare_exchange_weak_explicit(notify, &armed, XRXE_CQ_NOTIFY_NONE,
							  memory_order_acq_rel,
							  memory_order_relaxed)) {
			if (cq->tp->cfg.ops->cq_event)
				cq->tp->cfg.ops->cq_event(cq->tp->cfg.user, cq->user);
			return;
		}
	}
}

int xrxe_tpi_cq_post(struct xrxe_tp_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	return xrxe_tpi_cq_post_tm(cq, wc, solicited, 0);
}

int xrxe_tpi_cq_post_tm(struct xrxe_tp_cq *cq, const struct ibv_wc *wc, bool solicited,
			uint64_t tag)
{
	struct xrxe_ring *ring = cq->ring;
	uint32_t cons, slot;
	struct xrxe_cqe *cqe;

	if (cq->overrun)
		return -EOVERFLOW;
	/* The consumer last read says there is room: it only lags the
	 * application's, so there is (one read of the application's consumer
	 * line per ring's worth of CQEs, not per CQE). Otherwise re-read it.
	 * Acquire: pairs with the application's store-release of the consumer
	 * after it copied the CQE out, so we never overwrite a CQE still being
	 * read. Masked: the application may write anything. */
	slot = cq->prod & cq->mask;
	cons = cq->cons_seen;
	if (xrxe_ring_full(slot, cons, cq->mask)) {
		cons = xrxe_ring_load_consumer(ring, cq->mask);
		cq->cons_seen = cons;
	}
	if (xrxe_ring_full(slot, cons, cq->mask)) {
		cq->overrun = true;
		/* Relaxed is enough: the flag is advisory, the event is the signal. */
		atomic_fetch_or_explicit((_Atomic uint32_t *)&ring->flags, XRXE_RING_F_OVERRUN,
					 memory_order_relaxed);
		if (cq->tp->cfg.ops->async_event)
			cq->tp->cfg.ops->async_event(cq->tp->cfg.user, IBV_EVENT_CQ_ERR, cq->user);
		return -EOVERFLOW;
	}
	cqe = xrxe_ring_slot(ring, slot, cq->mask, cq->log2);
	memcpy(&cqe->wc, wc, sizeof(*wc));
	cqe->timestamp_ns = cq->tp->now;
	cqe->tm_tag = tag;
	cq->prod++;
	/* Release: the CQE bytes (and the data the completion reports, e.g.
	 * READ payload or received SEND data written before this call) are
	 * visible before the application sees the new producer index. */
	xrxe_ring_publish_producer(ring, cq->prod, cq->mask);
	cq_notify(cq, solicited || wc->status != IBV_WC_SUCCESS);
	return 0;
}
