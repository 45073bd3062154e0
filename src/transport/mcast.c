// SPDX-License-Identifier: MIT
/*
 * UD multicast (IBA 10.5; rxe_mcast.c's role). A group is named by its GID:
 * for RoCEv2 the destination IP address, as an IPv6 multicast address
 * (ff00::/8) or IPv4-mapped (::ffff:224.0.0.0/4), the two forms
 * rdma_is_multicast_addr accepts. A packet to QPN 0xFFFFFF is copied to every
 * QP attached to the group of its destination address; each copy is checked
 * (state, P_Key, Q_Key) as if it had been addressed to that QP.
 *
 * Joining the group on the network (so that the NIC and the kernel accept
 * the frames) is the caller's business: attach and detach say when a group
 * appears and disappears.
 */
#include <errno.h>
#include <string.h>

#include "transport/tp_internal.h"

bool xrxe_tp_gid_is_mcast(const union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (gid->raw[0] == 0xff)
		return true;
	/* IPv4 class D, 224.0.0.0/4 */
	return !memcmp(gid->raw, v4mapped, sizeof(v4mapped)) && (gid->raw[12] & 0xf0) == 0xe0;
}

static struct tp_mcast_grp *grp_find(struct xrxe_tp *tp, const union ibv_gid *gid)
{
	for (unsigned i = 0; i < XRXE_TP_MAX_MCAST_GRP; i++)
		if (tp->mcast[i].used && !memcmp(tp->mcast[i].gid.raw, gid->raw, 16))
			return &tp->mcast[i];
	return NULL;
}

int xrxe_tp_mcast_attach(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, const union ibv_gid *gid,
			 bool *first)
{
	struct tp_mcast_grp *g;

	*first = false;
	/* ib_attach_mcast: UD QPs and multicast GIDs only */
	if (qp->type != IBV_QPT_UD || !xrxe_tp_gid_is_mcast(gid))
		return -EINVAL;
	g = grp_find(tp, gid);
	if (!g) {
		for (unsigned i = 0; i < XRXE_TP_MAX_MCAST_GRP && !g; i++)
			if (!tp->mcast[i].used)
				g = &tp->mcast[i];
		if (!g)
			return -ENOMEM;
		memset(g, 0, sizeof(*g));
		g->gid = *gid;
		*first = true;
	}
	for (uint32_t i = 0; i < g->nqps; i++)
		if (g->qps[i] == qp)
			return -EEXIST;
	if (g->nqps == XRXE_TP_MAX_MCAST_QP_ATTACH)
		return -ENOMEM;
	if (*first) {
		g->used = true;
		tp->stats.mcast_grps++;
	}
	g->qps[g->nqps++] = qp;
	return 0;
}

static void grp_remove(struct xrxe_tp *tp, struct tp_mcast_grp *g, uint32_t i, bool *last)
{
	g->qps[i] = g->qps[--g->nqps];
	*last = g->nqps == 0;
	if (*last) {
		g->used = false;
		tp->stats.mcast_grps--;
	}
}

int xrxe_tp_mcast_detach(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, const union ibv_gid *gid,
			 bool *last)
{
	struct tp_mcast_grp *g = grp_find(tp, gid);

	*last = false;
	if (!g)
		return -ENOENT;
	for (uint32_t i = 0; i < g->nqps; i++) {
		if (g->qps[i] == qp) {
			grp_remove(tp, g, i, last);
			return 0;
		}
	}
	return -ENOENT;
}

void xrxe_tp_mcast_detach_all(struct xrxe_tp *tp, struct xrxe_tp_qp *qp,
			      void (*left)(void *arg, const union ibv_gid *gid), void *arg)
{
	bool last;

	for (unsigned k = 0; k < XRXE_TP_MAX_MCAST_GRP; k++) {
		struct tp_mcast_grp *g = &tp->mcast[k];

		for (uint32_t i = 0; g->used && i < g->nqps; i++) {
			if (g->qps[i] != qp)
				continue;
			grp_remove(tp, g, i, &last);
			if (last && left)
				left(arg, &g->gid);
			break;
		}
	}
}

void xrxe_tpi_mcast_rx(struct xrxe_tp *tp, const struct xrxe_pkt *pkt)
{
	const uint8_t *ip = pkt->frag[0].data + pkt->l3_off;
	struct xrxe_tp_qp *qps[XRXE_TP_MAX_MCAST_QP_ATTACH];
	struct tp_mcast_grp *g;
	union ibv_gid dst;
	uint32_t n;

	memset(&dst, 0, sizeof(dst));
	if (pkt->ip_version == 4) {
		dst.raw[10] = dst.raw[11] = 0xff;
		memcpy(dst.raw + 12, ip + 16, 4);
	} else {
		memcpy(dst.raw, ip + 24, 16);
	}
	g = grp_find(tp, &dst);
	if (!g) {
		tp->stats.rx_drop_no_mcast++;
		return;
	}
	/* A snapshot: delivering can move a QP to ERR (a full CQ), which does
	 * not detach it, but keeps the iteration independent of the group. */
	n = g->nqps;
	memcpy(qps, g->qps, n * sizeof(qps[0]));
	for (uint32_t i = 0; i < n; i++)
		xrxe_tpi_qp_rx(tp, qps[i], pkt);
}
