// SPDX-License-Identifier: MIT
/*
 * Shared receive queues (IBA 10.2.9; rxe_srq.c's role): a receive ring many
 * QPs take WQEs from, and its limit event.
 *
 * Ownership: the application produces into the ring (post_srq_recv); the core
 * is the only consumer and keeps its index privately. A QP copies the WQE at
 * the consumer out of the ring and the consumer moves on at once (the WQE is
 * the QP's from then on: it completes, or is flushed, on that QP), so two QPs
 * can never take the same WQE and the application may reuse the slot.
 */
#include <errno.h>
#include <stdlib.h>

#include "transport/tp_internal.h"

int xrxe_tp_srq_create(struct xrxe_tp *tp, uint32_t pdn, struct xrxe_ring *ring, uint32_t nslots,
		       uint32_t max_sge, void *user, struct xrxe_tp_srq **out)
{
	struct xrxe_tp_srq *srq;
	int err;

	if (!ring || nslots < 2 || (nslots & (nslots - 1)) || ring->index_mask != nslots - 1 ||
	    max_sge > XRXE_MAX_SGE || ring->log2_elem_size > 16 ||
	    (1u << ring->log2_elem_size) <
		    sizeof(struct xrxe_recv_wqe) + max_sge * sizeof(struct xrxe_sge))
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	err = xrxe_tpi_pd_get(tp, pdn);
	if (err) {
		free(srq);
		return err;
	}
	srq->tp = tp;
	srq->ring = ring;
	srq->mask = nslots - 1;
	srq->log2 = ring->log2_elem_size;
	srq->max_sge = max_sge;
	srq->pdn = pdn;
	srq->user = user;
	xrxe_ring_publish_consumer(ring, 0, srq->mask);
	srq->next = tp->srqs;
	tp->srqs = srq;
	tp->stats.srqs++;
	*out = srq;
	return 0;
}

int xrxe_tp_srq_modify(struct xrxe_tp *tp, struct xrxe_tp_srq *srq, const struct ibv_srq_attr *attr,
		       int attr_mask)
{
	(void)tp;
	if (attr_mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return -EINVAL;
	/* Resizing needs a new shared ring under a live producer; the device
	 * does not advertise IBV_DEVICE_SRQ_RESIZE. */
	if (attr_mask & IBV_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (attr_mask & IBV_SRQ_LIMIT) {
		/* IBA 11.2.3.3 / rxe_srq_chk_attr: the limit cannot exceed
		 * the queue's capacity. */
		if (attr->srq_limit > srq->mask)
			return -EINVAL;
		srq->limit = attr->srq_limit;
	}
	return 0;
}

void xrxe_tp_srq_query(const struct xrxe_tp_srq *srq, struct ibv_srq_attr *attr)
{
	attr->max_wr = srq->mask; /* capacity nslots - 1 */
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
}

int xrxe_tp_srq_destroy(struct xrxe_tp *tp, struct xrxe_tp_srq *srq)
{
	struct xrxe_tp_srq **pp;

	if (srq->xrcdn)
		xrxe_tpi_xrc_srq_detach(srq); /* XRC targets let go of it (xrc.c) */
	if (srq->refs)
		return -EBUSY; /* as ibv_destroy_srq with QPs attached */
	if (srq->xrcdn)
		xrxe_tpi_xrc_srq_release(srq);
	xrxe_tpi_tm_srq_free(srq); /* a TM SRQ's list and CQ (tm_srq.c) */
	for (pp = &tp->srqs; *pp; pp = &(*pp)->next) {
		if (*pp == srq) {
			*pp = srq->next;
			break;
		}
	}
	xrxe_tpi_pd_put(tp, srq->pdn);
	tp->stats.srqs--;
	free(srq);
	return 0;
}

void xrxe_tpi_srq_taken(struct xrxe_tp_srq *srq)
{
	uint32_t prod, count;

	srq->cons++;
	/* Release: the slot was copied out before the application may reuse it. */
	xrxe_ring_publish_consumer(srq->ring, srq->cons, srq->mask);
	if (!srq->limit)
		return;
	prod = xrxe_ring_load_producer(srq->ring, srq->mask);
	count = (prod - srq->cons) & srq->mask;
	/* IBA 11.5.2.4 (and rxe get_srq_wqe): once the number of WQEs drops
	 * below the armed limit, one SRQ_LIMIT_REACHED and the limit is
	 * disarmed until the application arms it again. */
	if (count < srq->limit) {
		srq->limit = 0;
		if (srq->tp->cfg.ops->async_event)
			srq->tp->cfg.ops->async_event(srq->tp->cfg.user,
						      IBV_EVENT_SRQ_LIMIT_REACHED, srq->user);
	}
}
