// SPDX-License-Identifier: MIT
/*
 * SQ doorbells (xrxe/ring.h): each connection's doorbell ring names the QPs
 * whose send queues have new WQEs; the transport gets exactly those
 * (xrxe_tp_qp_doorbell) and never scans send queues. A pass costs one load
 * per connection when nothing was posted.
 *
 * The ring is the application's to write: each handle is looked up among the
 * connection's own QPs (a foreign, stale or made-up one misses and is
 * counted), at most one ring's worth is taken per pass, and indices are
 * masked with the daemon's own mask, never the header's (ring.h).
 */
#include <stdbool.h>
#include <stdint.h>

#include "daemon/ctrl.h"
#include "daemon/ctrl_internal.h"
#include "daemon/shm.h"
#include "xrxe/ring.h"

static void kick_qp(struct conn *c, struct obj_qp *qp)
{
	/* clear the pending flag first: a post after this sees 0 and rings
	 * again; the transport reads the producer on its next poll (ring.h) */
	xrxe_doorbell_clear(xrxe_shm_ring(&qp->sq));
	xrxe_tp_qp_doorbell(c->ctrl->cfg.tp, qp->qp);
}

/* The application overflowed its ring (it has more QPs with posts than the
 * ring has slots, or it scribbled): every QP of the connection, once. */
static unsigned kick_all(struct conn *c)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < c->nslots; i++) {
		struct obj *o = c->slots[i].obj;

		if (o && o->type == OBJ_QP) {
			kick_qp(c, (struct obj_qp *)o);
			n++;
		}
	}
	return n;
}

static unsigned conn_doorbells(struct conn *c)
{
	struct xrxe_ring *db = xrxe_shm_ring(&c->dbring);
	uint32_t prod, cons = c->db_cons, n = 0;

	prod = xrxe_ring_load_producer(db, XRXE_DOORBELL_MASK);
	while (cons != prod && n <= XRXE_DOORBELL_MASK) {
		const struct xrxe_doorbell *e = xrxe_doorbell_slot(db, cons);
		uint32_t handle = __atomic_load_n(&e->qp_handle, __ATOMIC_RELAXED);
		struct obj_qp *qp = (struct obj_qp *)xrxe_ctrli_obj_lookup(c, handle, OBJ_QP);

		if (qp)
			kick_qp(c, qp);
		else
			c->ctrl->st.doorbell_bad++;
		cons = (cons + 1) & XRXE_DOORBELL_MASK;
		n++;
	}
	if (n) {
		c->db_cons = cons;
		xrxe_ring_publish_consumer(db, cons, XRXE_DOORBELL_MASK);
	}
	if (__atomic_load_n(&db->notify, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&db->notify, 0, __ATOMIC_SEQ_CST)) {
		c->ctrl->st.doorbell_overflows++;
		n += kick_all(c);
	}
	return n;
}

unsigned xrxe_ctrl_doorbells(struct xrxe_ctrl *ctrl)
{
	unsigned n = 0;

	for (struct conn *c = ctrl->conns; c; c = c->next)
		if (c->dbring.base)
			n += conn_doorbells(c);
	ctrl->st.doorbells += n;
	return n;
}

bool xrxe_ctrl_doorbells_pending(const struct xrxe_ctrl *ctrl)
{
	for (const struct conn *c = ctrl->conns; c; c = c->next) {
		const struct xrxe_ring *db = xrxe_shm_ring(&c->dbring);

		if (!c->dbring.base)
			continue;
		if (xrxe_ring_load_producer(db, XRXE_DOORBELL_MASK) != c->db_cons ||
		    __atomic_load_n(&db->notify, __ATOMIC_RELAXED))
			return true;
	}
	return false;
}
