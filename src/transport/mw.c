// SPDX-License-Identifier: MIT
/*
 * Memory windows (IBA 10.6.7; rxe_mw.c's role) and the R_Key resolution every
 * remote access goes through.
 *
 * A window is a remote-only view of part of a registered region:
 *  - type 1: allocated in a PD, bound with ibv_bind_mw (which posts a BIND_MW
 *    WQE on a QP of the same PD); rebinding replaces the binding, a
 *    zero-length bind unbinds; it cannot be invalidated by LOCAL_INV or
 *    SEND_WITH_INV (C10-71.2.x: type 1 windows are unbound by binding).
 *  - type 2: bound with a BIND_MW WQE the application builds itself
 *    (IBV_WR_BIND_MW / ibv_wr_bind_mw), only while unbound (o10-37.2.30),
 *    with a non-zero length (o10-37.2.40). It is associated with the QP it was
 *    bound through: only requests arriving on that QP may use it. It returns
 *    to the unbound state through LOCAL_INV or SEND_WITH_INV.
 * Each bind carries a new R_Key: the same index with a new key byte (the
 * consumer-owned part, ibv_inc_rkey), so holders of the old R_Key lose access.
 * For type 2 the key byte must differ from the current one; the shim picks it
 * for type 1 the same way.
 *
 * Bind checks (IBA 10.6.7.2, C10-72..C10-75, as rxe_check_bind_mw): the
 * window and the region exist (exact keys), share the QP's PD, the region
 * grants IBV_ACCESS_MW_BIND (C10-73), remote write or atomic rights through
 * the window need local write on the region (C10-74), and the window lies
 * inside the region (C10-75). Zero-based windows are refused, as rdma-core's
 * rxe provider does. Any failure completes the WQE with IBV_WC_MW_BIND_ERR.
 *
 * A bind's access flags are the window's remote rights. IBV_ACCESS_LOCAL_WRITE
 * among them is accepted and asks nothing of the window (a window is never
 * used locally; C10-74 asks local write of the region, not of the window);
 * rdma-core's own tests bind with it, and rxe accepts it. The optional flags
 * (IBV_ACCESS_OPTIONAL_RANGE, e.g. relaxed ordering) are ignored as
 * ibv_reg_mr ignores them; any other bit is a bad bind.
 */
#include <errno.h>
#include <string.h>

#include "transport/tp_internal.h"

#define REMOTE_RIGHTS \
	(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
#define MW_ACCESS_ALLOWED (REMOTE_RIGHTS | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_OPTIONAL_RANGE)

static struct tp_mw *mw_by_index(struct xrxe_tp *tp, uint32_t idx)
{
	if (idx < tp->mw_base || idx - tp->mw_base >= tp->nmws)
		return NULL;
	return &tp->mws[idx - tp->mw_base];
}

/* The window an R_Key names (index and key byte both), or NULL. */
static struct tp_mw *mw_by_key(struct xrxe_tp *tp, uint32_t key)
{
	struct tp_mw *mw = mw_by_index(tp, xrxe_tpi_key_index(tp, key));

	if (!mw || !mw->used || mw->rkey != key)
		return NULL;
	return mw;
}

static void mw_unbind(struct xrxe_tp *tp, struct tp_mw *mw)
{
	if (mw->mr_idx && tp->mrs[mw->mr_idx].nmw)
		tp->mrs[mw->mr_idx].nmw--;
	if (mw->type == IBV_MW_TYPE_2 && mw->bound && mw->qpn) {
		struct xrxe_tp_qp *qp = xrxe_tpi_qp_lookup(tp, mw->qpn);

		if (qp && qp->mw2_bound)
			qp->mw2_bound--;
	}
	mw->mr_idx = 0;
	mw->bound = false;
	mw->qpn = 0;
	mw->addr = mw->length = 0;
	mw->access = 0;
}

int xrxe_tp_mw_alloc(struct xrxe_tp *tp, uint32_t pdn, uint32_t type, uint32_t *handle,
		     uint32_t *rkey)
{
	uint32_t i = 0, k, start;
	struct tp_mw *mw;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return -EINVAL;
	/* A random free slot, as for MRs (mr.c): keys are not handed out in
	 * turn. */
	start = tp->nmws ? xrxe_tpi_key_random(tp) % tp->nmws : 0;
	for (k = 0; k < tp->nmws; k++) {
		i = (start + k) % tp->nmws;
		if (!tp->mws[i].used)
			break;
	}
	if (k == tp->nmws)
		return -ENOMEM;
	err = xrxe_tpi_pd_get(tp, pdn);
	if (err)
		return err;
	mw = &tp->mws[i];
	/* A new random key byte per allocation, as for MRs: a stale R_Key of
	 * a previous window in this slot never matches. */
	mw->gen++;
	mw->rkey = xrxe_tpi_key_make(tp, tp->mw_base + i, mw->gen) << 8 |
		   xrxe_tpi_key_byte_next(tp, (uint8_t)mw->rkey);
	mw->used = true;
	if (i >= tp->mws_hw)
		tp->mws_hw = i + 1;
	mw->type = (uint8_t)type;
	mw->pdn = pdn;
	mw_unbind(tp, mw);
	tp->stats.mws++;
	*handle = tp->mw_base + i;
	*rkey = mw->rkey;
	return 0;
}

int xrxe_tp_mw_dealloc(struct xrxe_tp *tp, uint32_t handle)
{
	struct tp_mw *mw = mw_by_index(tp, handle);

	if (!mw || !mw->used)
		return -EINVAL;
	/* IBA 10.6.7.1: deallocating a window invalidates it (bound or not) */
	mw_unbind(tp, mw);
	mw->used = false;
	xrxe_tpi_pd_put(tp, mw->pdn);
	tp->stats.mws--;
	return 0;
}

void xrxe_tpi_mw_qp_gone(struct xrxe_tp_qp *qp)
{
	struct xrxe_tp *tp = qp->tp;
	uint32_t i;

	/* Most QPs never bound a window: no scan at all (destroying 65 536
	 * QPs must not cost 65 536 scans of the window table). */
	if (!qp->mw2_bound)
		return;
	/* Only the slots windows ever took: the table has room for max_mr
	 * windows (3 MiB), mostly never touched, and a scan of all of it on
	 * every QP destroy faulted it in page by page -- ~640 page faults
	 * that made a loaded daemon's SIGTERM take over a second. */
	for (i = 0; i < tp->mws_hw; i++) {
		struct tp_mw *mw = &tp->mws[i];

		if (mw->used && mw->type == IBV_MW_TYPE_2 && mw->bound && mw->qpn == qp->qpn)
			mw_unbind(tp, mw);
	}
}

int xrxe_tpi_mw_bind(struct xrxe_tp_qp *qp, const struct xrxe_send_wqe *wr)
{
	struct xrxe_tp *tp = qp->tp;
	uint32_t new_rkey = wr->wr.bind.new_rkey, access = wr->wr.bind.access;
	uint64_t addr = wr->wr.bind.addr, len = wr->wr.bind.length;
	struct tp_mw *mw = mw_by_key(tp, wr->wr.bind.mw_rkey);
	struct tp_mr *mr = NULL;

	if (!mw || mw->pdn != qp->pdn)
		return -EINVAL;
	/* the new R_Key names the same window, with a new key byte */
	if ((new_rkey >> 8) != (mw->rkey >> 8) || (new_rkey & 0xff) == (mw->rkey & 0xff))
		return -EINVAL;
	if (access & ~(uint32_t)MW_ACCESS_ALLOWED)
		return -EINVAL; /* zero-based or unknown rights */
	if (mw->type == IBV_MW_TYPE_2 && (mw->bound || len == 0))
		return -EINVAL; /* o10-37.2.30, o10-37.2.40 */
	if (len) {
		mr = xrxe_tpi_mr_by_key(tp, wr->wr.bind.mr_lkey);
		if (!mr || !mr->valid || mr->pdn != qp->pdn)
			return -EINVAL;
		if (!(mr->access & IBV_ACCESS_MW_BIND))
			return -EINVAL; /* C10-73 */
		if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
		    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
			return -EINVAL; /* C10-74 */
		if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len)
			return -EINVAL; /* C10-75 */
	}
	mw_unbind(tp, mw);
	mw->rkey = new_rkey;
	if (!mr)
		return 0; /* type 1, zero length: unbound */
	mw->mr_idx = (uint32_t)(mr - tp->mrs);
	mr->nmw++;
	mw->bound = true;
	mw->access = access & REMOTE_RIGHTS;
	mw->addr = addr;
	mw->length = len;
	if (mw->type == IBV_MW_TYPE_2) {
		mw->qpn = qp->qpn;
		qp->mw2_bound++;
	}
	return 0;
}

struct tp_mr *xrxe_tpi_rkey_check(struct xrxe_tp_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
				  uint32_t access, bool whole)
{
	struct xrxe_tp *tp = qp->tp;
	struct tp_mw *mw;
	struct tp_mr *mr;

	if (xrxe_tpi_key_index(tp, rkey) < tp->mw_base) {
		if (!whole)
			return xrxe_tpi_mr_check(tp, rkey, qp->pdn, va, len, access);
		mr = xrxe_tpi_mr_by_key(tp, rkey);
		if (!mr || !mr->valid || mr->pdn != qp->pdn || (access & ~mr->access))
			return NULL;
		return mr;
	}
	mw = mw_by_key(tp, rkey);
	if (!mw || !mw->bound || mw->pdn != qp->pdn)
		return NULL;
	/* IBA 10.6.7.3: a type 2 window serves only the QP it was bound
	 * through */
	if (mw->type == IBV_MW_TYPE_2 && mw->qpn != qp->qpn)
		return NULL;
	if ((access & REMOTE_RIGHTS) & ~mw->access)
		return NULL;
	if (!whole && (va < mw->addr || len > mw->length || va - mw->addr > mw->length - len))
		return NULL;
	mr = &tp->mrs[mw->mr_idx];
	/* the region behind it must still be valid; FLUSH rights are the
	 * region's (a window grants only the remote rights) */
	if (!mr->used || !mr->valid || (access & ~REMOTE_RIGHTS & ~mr->access))
		return NULL;
	return mr;
}

int xrxe_tpi_invalidate(struct xrxe_tp_qp *qp, uint32_t rkey)
{
	struct xrxe_tp *tp = qp->tp;
	struct tp_mw *mw;

	if (xrxe_tpi_key_index(tp, rkey) < tp->mw_base)
		return xrxe_tpi_mr_invalidate(tp, rkey, qp->pdn);
	mw = mw_by_key(tp, rkey);
	/* only a bound type 2 window of this PD (C10-71.2.x) */
	if (!mw || mw->type != IBV_MW_TYPE_2 || !mw->bound || mw->pdn != qp->pdn)
		return -EINVAL;
	mw_unbind(tp, mw);
	return 0;
}
