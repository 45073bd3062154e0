// SPDX-License-Identifier: MIT
/*
 * The RoCE L3 type of a UD receive, reported in wc.sl as mlx5 reports it.
 *
 * On a RoCE port, an mlx5 CQE carries the receive's network header type in
 * bits 24-25 of flags_rqpn (the kernel's mlx5 handle_responder() reads them as
 * roce_packet_type: 0 = GRH (RoCE v1), 1 = IPv6, 2 = IPv4); rdma-core's mlx5
 * provider copies bits 24-27 into wc.sl unchanged. UCX up to 1.17 depends on
 * it: its UD transport takes `wc.sl & 7` as the L3 type when it checks the
 * destination GID of a datagram, and drops every datagram whose type does not
 * match its own address family (UCX_UD_VERBS_ETH_DGID_CHECK). IB has no
 * service levels on RoCE, so nothing else is lost.
 *
 * The daemon writes the GRH area into the first 40 bytes of the receive
 * buffer as rxe does (docs/facts/rxe.md §2.9: IPv4 = 20 zero bytes and the
 * IPv4 header, IPv6 = the IPv6 header), so the type is read back from there.
 * A CQE does not say which buffer it filled, so a UD QP with its own RQ keeps
 * a copy of each posted WR's first scatter entry, in posting order: UD
 * receives complete in RQ order. An entry is used only if its wr_id matches
 * the completion's (else sl stays 0); the buffer is the application's own,
 * just written by the daemon and not yet handed back. UD QPs on an SRQ
 * report 0 (the SRQ's WQEs complete on several QPs in no common order).
 *
 * A completion names its QP by number: the context finds the QP's state in a
 * hash table by QPN (O(1) per receive, however many QPs the context has).
 */
#include "verbs/shim.h"

#include <stdlib.h>
#include <string.h>

#define GRH_AREA 40
#define SCAN_AHEAD 64 /* entries searched when completions were skipped */

struct ud_l3_entry {
	uint64_t wr_id;
	uintptr_t addr;  /* first SGE, 0 if shorter than the GRH area */
	uint32_t seq;    /* posting number, to tell a stale slot */
	uint32_t pad;
};

struct xrxe_ud_l3 {
	struct xrxe_ud_l3 *hnext; /* ctx->ud_tab bucket */
	struct xrxe_context *ctx;
	uint32_t qpn;
	pthread_spinlock_t lock;
	uint32_t mask;
	uint32_t head, tail; /* posted / completed */
	struct ud_l3_entry e[];
};

/* --- the context's table by QPN (under obj_lock) ------------------------------ */

static uint32_t qpn_hash(uint32_t qpn, uint32_t size)
{
	return (qpn * 0x9e3779b1u) >> (32 - __builtin_ctz(size)); /* size: a power of two >= 2 */
}

/* Double the buckets once they are fewer than the QPs: chains stay short. */
static int tab_grow(struct xrxe_context *ctx)
{
	uint32_t size = ctx->ud_tab_size ? ctx->ud_tab_size * 2 : 64;
	struct xrxe_ud_l3 **t = calloc(size, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (uint32_t i = 0; i < ctx->ud_tab_size; i++)
		for (struct xrxe_ud_l3 *u = ctx->ud_tab[i], *n; u; u = n) {
			struct xrxe_ud_l3 **b = &t[qpn_hash(u->qpn, size)];

			n = u->hnext;
			u->hnext = *b;
			*b = u;
		}
	free(ctx->ud_tab);
	ctx->ud_tab = t;
	ctx->ud_tab_size = size;
	return 0;
}

static struct xrxe_ud_l3 **tab_slot(struct xrxe_context *ctx, uint32_t qpn)
{
	struct xrxe_ud_l3 **p = &ctx->ud_tab[qpn_hash(qpn, ctx->ud_tab_size)];

	while (*p && (*p)->qpn != qpn)
		p = &(*p)->hnext;
	return p;
}

int xrxe_ud_l3_create(struct xrxe_context *ctx, struct xrxe_qp *qp, uint32_t qpn,
		      uint32_t rq_entries)
{
	uint32_t n = 1;
	struct xrxe_ud_l3 *u;
	int ret = 0;

	/* twice the ring: posts may run ahead of polled completions by up to
	 * the RQ plus what sits unpolled in the CQ; older slots fall back */
	while (n < 2 * rq_entries && n < (1u << 20))
		n <<= 1;
	u = calloc(1, sizeof(*u) + n * sizeof(u->e[0]));
	if (!u)
		return -ENOMEM;
	pthread_spin_init(&u->lock, PTHREAD_PROCESS_PRIVATE);
	u->mask = n - 1;
	u->ctx = ctx;
	u->qpn = qpn;
	pthread_mutex_lock(&ctx->obj_lock);
	if (ctx->ud_count >= ctx->ud_tab_size)
		ret = tab_grow(ctx);
	if (!ret) {
		struct xrxe_ud_l3 **p = tab_slot(ctx, qpn);

		/* a QPN is the daemon's, unique while the QP lives; a stale
		 * entry would be a bug: replace it rather than chain twins */
		if (*p) {
			*p = (*p)->hnext;
			ctx->ud_count--;
		}
		u->hnext = ctx->ud_tab[qpn_hash(qpn, ctx->ud_tab_size)];
		ctx->ud_tab[qpn_hash(qpn, ctx->ud_tab_size)] = u;
		ctx->ud_count++;
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	if (ret) {
		pthread_spin_destroy(&u->lock);
		free(u);
		return ret;
	}
	qp->ud_l3 = u;
	return 0;
}

void xrxe_ud_l3_destroy(struct xrxe_qp *qp)
{
	struct xrxe_ud_l3 *u = qp->ud_l3;
	struct xrxe_context *ctx;
	struct xrxe_ud_l3 **p;

	if (!u)
		return;
	ctx = u->ctx;
	pthread_mutex_lock(&ctx->obj_lock);
	p = tab_slot(ctx, u->qpn);
	if (*p == u) {
		*p = u->hnext;
		ctx->ud_count--;
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	pthread_spin_destroy(&u->lock);
	free(u);
	qp->ud_l3 = NULL;
}

void xrxe_ud_l3_forget(struct xrxe_context *ctx)
{
	free(ctx->ud_tab);
	ctx->ud_tab = NULL;
	ctx->ud_tab_size = ctx->ud_count = 0;
}

void xrxe_ud_l3_posting(struct xrxe_qp *qp, const struct ibv_recv_wr *wr)
{
	struct xrxe_ud_l3 *u = qp->ud_l3;

	pthread_spin_lock(&u->lock);
	for (; wr; wr = wr->next) {
		struct ud_l3_entry *e = &u->e[u->head & u->mask];

		e->wr_id = wr->wr_id;
		e->addr = wr->num_sge > 0 && wr->sg_list[0].length >= GRH_AREA
				  ? (uintptr_t)wr->sg_list[0].addr
				  : 0;
		e->seq = u->head++;
	}
	pthread_spin_unlock(&u->lock);
}

/* The RoCE L3 type of the GRH area at p (the layout rxe writes). */
static uint8_t l3_type(const uint8_t *p)
{
	static const uint8_t zero[20];

	if ((p[0] >> 4) == 6)
		return 1; /* IPv6 header */
	if (!memcmp(p, zero, sizeof(zero)) && (p[20] >> 4) == 4)
		return 2; /* 20 zero bytes, then an IPv4 header */
	return 0;
}

/* The receive state of UD QP qpn, or NULL (under obj_lock). */
static struct xrxe_ud_l3 *find_ud(struct xrxe_context *ctx, uint32_t qpn)
{
	return ctx->ud_tab_size ? *tab_slot(ctx, qpn) : NULL;
}

uint8_t xrxe_ud_l3_sl(struct xrxe_context *ctx, const struct ibv_wc *wc)
{
	struct xrxe_ud_l3 *u;
	uint8_t sl = wc->sl;

	/* only successful receives that carry a GRH area: UD */
	if (!(wc->wc_flags & IBV_WC_GRH) || wc->status != IBV_WC_SUCCESS)
		return sl;
	pthread_mutex_lock(&ctx->obj_lock); /* keeps the QP from being freed */
	u = find_ud(ctx, wc->qp_num);
	if (u) {
		pthread_spin_lock(&u->lock);
		/* normally the oldest entry; after completions that carried no
		 * GRH (errors) a few further on */
		for (uint32_t s = u->tail, i = 0; s != u->head && i < SCAN_AHEAD; s++, i++) {
			const struct ud_l3_entry *e = &u->e[s & u->mask];

			if (e->seq != s)
				continue; /* overwritten: posts ran far ahead */
			if (e->wr_id != wc->wr_id)
				continue;
			if (e->addr)
				sl = l3_type((const uint8_t *)e->addr);
			u->tail = s + 1;
			break;
		}
		pthread_spin_unlock(&u->lock);
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	return sl;
}
