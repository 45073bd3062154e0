// SPDX-License-Identifier: MIT
/*
 * Transport test harness (see tp_harness.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "tp_harness.h"

/* --- PRNG (splitmix64) ------------------------------------------------------ */

uint64_t xrxe_tph_rand(struct xrxe_tph *h)
{
	uint64_t z = (h->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool chance(struct xrxe_tph *h, uint32_t ppm)
{
	return ppm && xrxe_tph_rand(h) % 1000000u < ppm;
}

/* --- FIFO of frames ----------------------------------------------------------- */

static void fifo_push(struct xrxe_tph_fifo *f, const struct xrxe_tph_frame *fr)
{
	if (f->tail - f->head == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 256, i;
		struct xrxe_tph_frame *nv = calloc(ncap, sizeof(*nv));

		for (i = f->head; i < f->tail; i++)
			nv[i - f->head] = f->v[i % f->cap];
		free(f->v);
		f->v = nv;
		f->tail -= f->head;
		f->head = 0;
		f->cap = ncap;
	}
	f->v[f->tail++ % f->cap] = *fr;
}

static bool fifo_pop(struct xrxe_tph_fifo *f, struct xrxe_tph_frame *fr)
{
	if (f->head == f->tail)
		return false;
	*fr = f->v[f->head++ % f->cap];
	return true;
}

/* Arrival time of the oldest frame, UINT64_MAX when empty. */
static uint64_t fifo_head_due(const struct xrxe_tph_fifo *f)
{
	return f->head == f->tail ? UINT64_MAX : f->v[f->head % f->cap].due;
}

static void frame_free(struct xrxe_tph_frame *fr)
{
	unsigned i;

	for (i = 0; i < fr->nfrags; i++)
		free(fr->frag[i].data);
	fr->nfrags = 0;
}

static struct xrxe_tph_frame frame_dup(const struct xrxe_tph_frame *fr)
{
	struct xrxe_tph_frame d = *fr;
	unsigned i;

	for (i = 0; i < fr->nfrags; i++) {
		d.frag[i].data = malloc(fr->frag[i].len ? fr->frag[i].len : 1);
		memcpy(d.frag[i].data, fr->frag[i].data, fr->frag[i].len);
	}
	return d;
}

/* --- transport ops ------------------------------------------------------------- */

static int h_tx_reserve(void *user, uint32_t len, struct xrxe_tp_txbuf *buf)
{
	struct xrxe_tph_side *s = user;
	struct xrxe_tph *h = s->h;
	uint32_t left = len, i;

	if (chance(h, h->pol.nobuf_ppm)) {
		h->nobufs++;
		return -ENOBUFS;
	}
	if (h->pol.tx_backlog_ns && h->link_free[1 - s->id] > h->now + h->pol.tx_backlog_ns) {
		h->tx_full[s->id] = true;
		h->nobufs++;
		return -ENOBUFS;
	}
	memset(buf, 0, sizeof(*buf));
	if (!h->pol.multi_frag || len <= 160) {
		buf->frag[0].data = malloc(len);
		buf->frag[0].len = len;
		buf->nfrags = 1;
		return 0;
	}
	/* 2 or 3 fragments, the first big enough for every header (the
	 * contract of tx_reserve), each its own allocation so that ASan
	 * catches a write across a fragment boundary. */
	{
		uint32_t n = 2 + (uint32_t)(xrxe_tph_rand(h) % 2);
		uint32_t f0 = 128 + (uint32_t)(xrxe_tph_rand(h) % 64);

		if (f0 > left)
			f0 = left;
		for (i = 0; i < n && left; i++) {
			uint32_t k;

			if (i == 0)
				k = f0;
			else if (i == n - 1)
				k = left;
			else
				k = 1 + (uint32_t)(xrxe_tph_rand(h) % left);
			buf->frag[i].data = malloc(k);
			buf->frag[i].len = k;
			left -= k;
			buf->nfrags = (uint8_t)(i + 1);
		}
	}
	return 0;
}

static void h_tx_submit(void *user, struct xrxe_tp_txbuf *buf)
{
	struct xrxe_tph_side *s = user;
	struct xrxe_tph *h = s->h;
	struct xrxe_tph_frame fr;
	struct xrxe_pkt pkt;
	unsigned i;

	memset(&fr, 0, sizeof(fr));
	fr.nfrags = buf->nfrags;
	fr.len = buf->len;
	for (i = 0; i < buf->nfrags; i++)
		fr.frag[i] = buf->frag[i];
	/* the core may hand back buffers with unused trailing fragments */
	for (i = buf->nfrags; i < XRXE_MAX_FRAGS; i++)
		free(buf->frag[i].data);
	h->submitted++;
	if (xrxe_parse_frags(fr.frag, fr.nfrags, 0, &pkt) != XRXE_PARSE_OK) {
		h->bad_tx++;
		frame_free(&fr);
		return;
	}
	h->opcode_count[s->id][pkt.opcode]++;
	h->sport[s->id] = (uint16_t)(pkt.frag[0].data[pkt.l4_off] << 8 | pkt.frag[0].data[pkt.l4_off + 1]);
	if (pkt.opcode == XRXE_OPCODE(RC, ACKNOWLEDGE) || pkt.opcode == XRXE_OPCODE(XRC, ACKNOWLEDGE))
		h->syndrome_count[s->id][xrxe_aeth_syndrome(xrxe_pkt_hdr(&pkt, XRXE_HDR_AETH))]++;
	fr.due = h->now;
	if (h->pol.link_bps || h->pol.link_delay_ns) {
		uint64_t *free_at = &h->link_free[1 - s->id];
		uint64_t start = *free_at > h->now ? *free_at : h->now;

		*free_at = start + (h->pol.link_bps ? (uint64_t)fr.len * 8 * 1000000000ull /
							       h->pol.link_bps
						    : 0);
		fr.due = *free_at + h->pol.link_delay_ns;
	}
	fifo_push(&h->q[1 - s->id], &fr);
}

static void h_cq_event(void *user, void *cq_user)
{
	struct xrxe_tph_side *s = user;

	(void)cq_user;
	s->cq_events++;
}

static void h_async(void *user, enum ibv_event_type type, void *obj)
{
	struct xrxe_tph_side *s = user;

	s->async_events++;
	if ((unsigned)type <= IBV_EVENT_WQ_FATAL)
		s->async_by_type[type]++;
	s->last_async = type;
	s->last_async_obj = obj;
}

/* On-demand paging: the region's memory answers for itself (the test's
 * simulated address space, struct xrxe_tph_odp). */
static int h_odp_rw(void *user, void *mem, uint64_t addr, void *buf, uint32_t n, bool write)
{
	struct xrxe_tph_odp *o = mem;

	(void)user;
	return o->rw(o, addr, buf, n, write);
}

static const struct xrxe_tp_ops h_ops = {
	.tx_reserve = h_tx_reserve,
	.tx_submit = h_tx_submit,
	.cq_event = h_cq_event,
	.async_event = h_async,
	.odp_rw = h_odp_rw,
};

/* --- setup --------------------------------------------------------------------- */

void xrxe_tph_init(struct xrxe_tph *h, uint64_t seed, uint32_t max_path_mtu)
{
	xrxe_tph_init_rexmit(h, seed, max_path_mtu, false);
}

static void init_cores(struct xrxe_tph *h, uint64_t seed, uint32_t max_path_mtu,
		       bool fixed_ack_timeout, uint32_t max_qp)
{
	int i;

	memset(h, 0, sizeof(*h));
	h->rng = seed;
	h->now = 1000000;
	for (i = 0; i < 2; i++) {
		struct xrxe_tp_config cfg = {
			.ops = &h_ops,
			.user = &h->side[i],
			.max_path_mtu = max_path_mtu,
			.max_qp = max_qp,
			.max_mr = 256,
			.local_ack_delay = 15,
			.fixed_ack_timeout = fixed_ack_timeout,
		};

		h->side[i].h = h;
		h->side[i].id = i;
		if (xrxe_tp_create(&cfg, &h->side[i].tp) ||
		    xrxe_tp_pd_alloc(h->side[i].tp, &h->side[i].pdn))
			abort();
	}
}

void xrxe_tph_init_rexmit(struct xrxe_tph *h, uint64_t seed, uint32_t max_path_mtu,
			  bool fixed_ack_timeout)
{
	init_cores(h, seed, max_path_mtu, fixed_ack_timeout, 64);
}

void xrxe_tph_init_qps(struct xrxe_tph *h, uint64_t seed, uint32_t max_path_mtu,
		       uint32_t max_qp)
{
	init_cores(h, seed, max_path_mtu, false, max_qp);
}

void xrxe_tph_fini(struct xrxe_tph *h)
{
	struct xrxe_tph_frame fr;
	unsigned k;
	int i;

	for (k = 0; k < h->nqps; k++)
		if (h->qps[k])
			xrxe_tph_qp_destroy(h->qps[k]);
	for (k = 0; k < h->nsrqs; k++) {
		xrxe_tp_srq_destroy(h->srqs[k]->s->tp, h->srqs[k]->srq);
		free(h->srqs[k]->ring);
		free(h->srqs[k]);
	}
	for (k = 0; k < h->ncqs; k++)
		if (h->cqs[k])
			xrxe_tph_cq_destroy(h->cqs[k]);
	for (i = 0; i < 2; i++) {
		while (fifo_pop(&h->q[i], &fr))
			frame_free(&fr);
		free(h->q[i].v);
		xrxe_tp_destroy(h->side[i].tp);
	}
}

void xrxe_tph_av(const struct xrxe_tph *h, int from, struct xrxe_av *av)
{
	int to = 1 - from;

	memset(av, 0, sizeof(*av));
	av->ip_version = h->ipv6 ? 6 : 4;
	if (h->ipv6) {
		inet_pton(AF_INET6, from ? "fd00::2" : "fd00::1", &av->saddr.v6);
		inet_pton(AF_INET6, to ? "fd00::2" : "fd00::1", &av->daddr.v6);
	} else {
		av->saddr.v4.s_addr = htonl(0x0a000001 + (uint32_t)from);
		av->daddr.v4.s_addr = htonl(0x0a000001 + (uint32_t)to);
	}
	memcpy(av->smac, (uint8_t[]){ 0x02, 0, 0, 0, 0, (uint8_t)(1 + from) }, 6);
	memcpy(av->dmac, (uint8_t[]){ 0x02, 0, 0, 0, 0, (uint8_t)(1 + to) }, 6);
	av->hop_limit = 64;
	av->tclass = 0;
}

struct xrxe_ring *xrxe_tph_ring_alloc(uint32_t nslots, uint32_t elem)
{
	size_t bytes = xrxe_ring_bytes(nslots, elem);
	struct xrxe_ring *r;
	uint32_t log2 = 0;

	bytes = (bytes + 4095) & ~(size_t)4095;
	r = aligned_alloc(4096, bytes);
	if (!r)
		abort();
	memset(r, 0, bytes);
	while ((1u << log2) < elem)
		log2++;
	r->log2_elem_size = log2;
	r->index_mask = nslots - 1;
	return r;
}

static uint32_t pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

struct xrxe_tph_cq *xrxe_tph_cq_create(struct xrxe_tph_side *s, uint32_t nslots)
{
	struct xrxe_tph_cq *c = calloc(1, sizeof(*c));

	c->s = s;
	c->nslots = nslots;
	c->ring = xrxe_tph_ring_alloc(nslots, sizeof(struct xrxe_cqe));
	if (xrxe_tp_cq_create(s->tp, c->ring, nslots, c, &c->cq))
		abort();
	if (s->h->ncqs < XRXE_TPH_MAX_OBJS)
		s->h->cqs[s->h->ncqs++] = c;
	return c;
}

int xrxe_tph_cq_resize(struct xrxe_tph_cq *c, uint32_t nslots)
{
	struct xrxe_ring *ring = xrxe_tph_ring_alloc(nslots, sizeof(struct xrxe_cqe));
	int err = xrxe_tp_cq_resize(c->s->tp, c->cq, ring, nslots);

	if (err) {
		free(ring);
		return err;
	}
	free(c->ring);
	c->ring = ring;
	c->nslots = nslots;
	c->cons = 0;
	return 0;
}

void xrxe_tph_cq_destroy(struct xrxe_tph_cq *c)
{
	struct xrxe_tph *h = c->s->h;
	unsigned i;

	for (i = 0; i < h->ncqs; i++)
		if (h->cqs[i] == c)
			h->cqs[i] = NULL;
	if (xrxe_tp_cq_destroy(c->s->tp, c->cq))
		abort();
	free(c->ring);
	free(c);
}

static struct xrxe_tph_qp *qp_create(struct xrxe_tph_side *s, enum ibv_qp_type type,
				     struct xrxe_tph_cq *scq, struct xrxe_tph_cq *rcq,
				     uint32_t sq_slots, uint32_t rq_slots, struct xrxe_tph_srq *srq,
				     bool sig_all)
{
	struct xrxe_tph_qp *q = calloc(1, sizeof(*q));
	struct xrxe_tp_qp_init init;

	q->s = s;
	q->type = type;
	q->cap.max_send_sge = 4;
	q->cap.max_recv_sge = 4;
	q->cap.max_inline_data = 256;
	q->cap.max_send_wr = sq_slots - 1;
	q->cap.max_recv_wr = rq_slots - 1;
	q->sq_slots = sq_slots;
	q->rq_slots = rq_slots;
	q->sq_elem = pow2(sizeof(struct xrxe_send_wqe) + 256);
	q->rq_elem = pow2(sizeof(struct xrxe_recv_wqe) + 4 * sizeof(struct xrxe_sge));
	q->sq = xrxe_tph_ring_alloc(sq_slots, q->sq_elem);
	q->rq = srq ? NULL : xrxe_tph_ring_alloc(rq_slots, q->rq_elem);
	q->scq = scq;
	q->rcq = rcq;
	memset(&init, 0, sizeof(init));
	init.qp_type = type;
	init.pdn = s->pdn;
	init.send_cq = scq->cq;
	init.recv_cq = rcq->cq;
	init.sq = q->sq;
	init.sq_slots = sq_slots;
	init.rq = q->rq;
	init.rq_slots = rq_slots;
	init.srq = srq ? srq->srq : NULL;
	init.cap = q->cap;
	init.sq_sig_all = sig_all;
	init.user = q;
	if (xrxe_tp_qp_create(s->tp, &init, &q->qpn, &q->qp))
		abort();
	if (s->h->nqps < XRXE_TPH_MAX_OBJS)
		s->h->qps[s->h->nqps++] = q;
	return q;
}

struct xrxe_tph_qp *xrxe_tph_qp_create(struct xrxe_tph_side *s, enum ibv_qp_type type,
				       struct xrxe_tph_cq *scq, struct xrxe_tph_cq *rcq,
				       uint32_t sq_slots, uint32_t rq_slots, bool sig_all)
{
	return qp_create(s, type, scq, rcq, sq_slots, rq_slots, NULL, sig_all);
}

struct xrxe_tph_qp *xrxe_tph_qp_create_srq(struct xrxe_tph_side *s, enum ibv_qp_type type,
					   struct xrxe_tph_cq *scq, struct xrxe_tph_cq *rcq,
					   uint32_t sq_slots, struct xrxe_tph_srq *srq,
					   bool sig_all)
{
	return qp_create(s, type, scq, rcq, sq_slots, 2, srq, sig_all);
}

struct xrxe_tph_srq *xrxe_tph_srq_create(struct xrxe_tph_side *s, uint32_t slots)
{
	struct xrxe_tph_srq *q = calloc(1, sizeof(*q));

	q->s = s;
	q->slots = slots;
	q->elem = pow2(sizeof(struct xrxe_recv_wqe) + 4 * sizeof(struct xrxe_sge));
	q->ring = xrxe_tph_ring_alloc(slots, q->elem);
	if (xrxe_tp_srq_create(s->tp, s->pdn, q->ring, slots, 4, q, &q->srq))
		abort();
	if (s->h->nsrqs < XRXE_TPH_MAX_OBJS)
		s->h->srqs[s->h->nsrqs++] = q;
	return q;
}

/* XRC (docs/xrc.md): an initiator has a send queue and a CQ only, a target
 * nothing but its XRC domain, an XRC SRQ a domain and a CQ of its own. */
struct xrxe_tph_qp *xrxe_tph_qp_create_xrc_ini(struct xrxe_tph_side *s, struct xrxe_tph_cq *scq,
					       uint32_t sq_slots)
{
	struct xrxe_tph_qp *q = calloc(1, sizeof(*q));
	struct xrxe_tp_qp_init init;

	q->s = s;
	q->type = IBV_QPT_XRC_SEND;
	q->cap.max_send_sge = 4;
	q->cap.max_inline_data = 256;
	q->cap.max_send_wr = sq_slots - 1;
	q->sq_slots = sq_slots;
	q->sq_elem = pow2(sizeof(struct xrxe_send_wqe) + 256);
	q->sq = xrxe_tph_ring_alloc(sq_slots, q->sq_elem);
	q->scq = q->rcq = scq;
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_XRC_SEND;
	init.pdn = s->pdn;
	init.send_cq = scq->cq;
	init.sq = q->sq;
	init.sq_slots = sq_slots;
	init.cap = q->cap;
	init.sq_sig_all = true;
	init.user = q;
	if (xrxe_tp_qp_create(s->tp, &init, &q->qpn, &q->qp))
		abort();
	if (s->h->nqps < XRXE_TPH_MAX_OBJS)
		s->h->qps[s->h->nqps++] = q;
	return q;
}

struct xrxe_tph_qp *xrxe_tph_qp_create_xrc_tgt(struct xrxe_tph_side *s, uint32_t xrcdn)
{
	struct xrxe_tph_qp *q = calloc(1, sizeof(*q));
	struct xrxe_tp_qp_init init;

	q->s = s;
	q->type = IBV_QPT_XRC_RECV;
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_XRC_RECV;
	init.xrcdn = xrcdn;
	init.user = q;
	if (xrxe_tp_qp_create(s->tp, &init, &q->qpn, &q->qp))
		abort();
	if (s->h->nqps < XRXE_TPH_MAX_OBJS)
		s->h->qps[s->h->nqps++] = q;
	return q;
}

struct xrxe_tph_srq *xrxe_tph_srq_create_xrc(struct xrxe_tph_side *s, uint32_t pdn, uint32_t xrcdn,
					     struct xrxe_tph_cq *cq, uint32_t slots)
{
	struct xrxe_tph_srq *q = calloc(1, sizeof(*q));

	q->s = s;
	q->slots = slots;
	q->elem = pow2(sizeof(struct xrxe_recv_wqe) + 4 * sizeof(struct xrxe_sge));
	q->ring = xrxe_tph_ring_alloc(slots, q->elem);
	if (xrxe_tp_srq_create_xrc(s->tp, pdn, xrcdn, cq->cq, q->ring, slots, 4, q, &q->srq))
		abort();
	if (s->h->nsrqs < XRXE_TPH_MAX_OBJS)
		s->h->srqs[s->h->nsrqs++] = q;
	return q;
}

static bool ring_full(const struct xrxe_ring *r, uint32_t prod, uint32_t mask);

static int post_recv_ring(struct xrxe_ring *r, uint32_t slots, uint32_t elem, uint32_t *prod,
			  uint64_t wr_id, const struct xrxe_sge *sge, uint32_t nsge)
{
	uint32_t mask = slots - 1;
	struct xrxe_recv_wqe *slot;

	if (ring_full(r, *prod, mask))
		return -ENOSPC;
	slot = (struct xrxe_recv_wqe *)(r->data + (size_t)(*prod & mask) * elem);
	memset(slot, 0, elem);
	slot->wr_id = wr_id;
	slot->num_sge = nsge;
	if (nsge && nsge <= 4)
		memcpy(slot->sge, sge, nsge * sizeof(*sge));
	*prod = (*prod + 1) & mask;
	/* Release: the WQE is visible before the new producer index. */
	atomic_store_explicit((_Atomic uint32_t *)&r->producer, *prod, memory_order_release);
	return 0;
}

int xrxe_tph_post_srq_recv(struct xrxe_tph_srq *q, uint64_t wr_id, const struct xrxe_sge *sge,
			   uint32_t nsge)
{
	return post_recv_ring(q->ring, q->slots, q->elem, &q->prod, wr_id, sge, nsge);
}

void xrxe_tph_qp_destroy(struct xrxe_tph_qp *q)
{
	struct xrxe_tph *h = q->s->h;
	unsigned i;

	for (i = 0; i < h->nqps; i++)
		if (h->qps[i] == q)
			h->qps[i] = NULL;
	xrxe_tp_qp_destroy(q->s->tp, q->qp);
	free(q->sq);
	free(q->rq);
	free(q);
}

void xrxe_tph_conn_default(struct xrxe_tph_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->mtu = IBV_MTU_1024;
	c->psn[0] = 100;
	c->psn[1] = 5000;
	c->timeout = 14; /* 67 ms */
	c->retry_cnt = 7;
	c->rnr_retry = 7;
	c->min_rnr_timer = 12; /* 640 us */
	c->max_rd_atomic = 16;
	c->max_dest_rd_atomic = 16;
	c->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		    IBV_ACCESS_REMOTE_ATOMIC;
	c->qkey = 0x11111111;
}

static int connect_one(struct xrxe_tph_qp *q, uint32_t dest_qpn, int side,
		       const struct xrxe_tph_conn *c)
{
	struct xrxe_tp *tp = q->s->tp;
	struct ibv_qp_attr a;
	struct xrxe_av av;
	int err, mask;

	xrxe_tph_av(q->s->h, side, &av);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = c->access;
	a.qkey = c->qkey;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	       (q->type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	err = xrxe_tp_qp_modify(tp, q->qp, &a, mask, NULL);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = c->mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = c->psn[1 - side];
	a.max_dest_rd_atomic = c->max_dest_rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	if (q->type == IBV_QPT_RC || q->type == IBV_QPT_XRC_RECV)
		mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	else if (q->type == IBV_QPT_UC || q->type == IBV_QPT_XRC_SEND)
		mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN;
	else
		mask = IBV_QP_STATE;
	err = xrxe_tp_qp_modify(tp, q->qp, &a, mask, &av);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->psn[side];
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->max_rd_atomic;
	/* XRC: the kernel's qp_state_table columns (xrc.c) */
	if (q->type == IBV_QPT_RC || q->type == IBV_QPT_XRC_SEND)
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	else if (q->type == IBV_QPT_XRC_RECV)
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT;
	else
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	return xrxe_tp_qp_modify(tp, q->qp, &a, mask, NULL);
}

int xrxe_tph_connect(struct xrxe_tph_qp *a, struct xrxe_tph_qp *b, const struct xrxe_tph_conn *c)
{
	int err = connect_one(a, b->qpn, a->s->id, c);

	return err ? err : connect_one(b, a->qpn, b->s->id, c);
}

uint32_t xrxe_tph_mr(struct xrxe_tph_side *s, void *buf, uint64_t len, uint32_t access,
		     uint64_t iova)
{
	uint32_t lkey, rkey;

	if (xrxe_tp_mr_reg(s->tp, s->pdn, buf, iova ? iova : (uint64_t)(uintptr_t)buf, len,
			   access, &lkey, &rkey))
		abort();
	return lkey;
}

/* --- the "application" ---------------------------------------------------------- */

static bool ring_full(const struct xrxe_ring *r, uint32_t prod, uint32_t mask)
{
	/* Acquire: the consumer's release store of the index means it is done
	 * with the slot we are about to overwrite. */
	uint32_t cons = atomic_load_explicit((_Atomic uint32_t *)&r->consumer, memory_order_acquire);

	return ((prod + 1) & mask) == (cons & mask);
}

int xrxe_tph_post_send_raw(struct xrxe_tph_qp *q, const struct xrxe_send_wqe *hdr,
			   const void *data, uint32_t len)
{
	uint32_t mask = q->sq_slots - 1;
	uint8_t *slot;

	if (ring_full(q->sq, q->sq_prod, mask))
		return -ENOSPC;
	slot = q->sq->data + (size_t)(q->sq_prod & mask) * q->sq_elem;
	memset(slot, 0, q->sq_elem);
	memcpy(slot, hdr, sizeof(*hdr));
	if (len > q->sq_elem - sizeof(*hdr))
		len = q->sq_elem - (uint32_t)sizeof(*hdr);
	if (len)
		memcpy(slot + sizeof(*hdr), data, len);
	q->sq_prod = (q->sq_prod + 1) & mask;
	/* Release: the element is written before the core can see it. */
	atomic_store_explicit((_Atomic uint32_t *)&q->sq->producer, q->sq_prod,
			      memory_order_release);
	/* the SQ doorbell, as the daemon passes on the shim's (abi.h) */
	xrxe_tp_qp_doorbell(q->s->tp, q->qp);
	return 0;
}

int xrxe_tph_post_send(struct xrxe_tph_qp *q, const struct xrxe_tph_send *w)
{
	struct xrxe_send_wqe hdr;

	memset(&hdr, 0, sizeof(hdr));
	hdr.wr_id = w->wr_id;
	hdr.opcode = w->opcode;
	hdr.send_flags = w->flags;
	hdr.ex = w->ex;
	hdr.xrc_srqn = w->xrc_srqn;
	if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		hdr.wr.atomic.remote_addr = w->raddr;
		hdr.wr.atomic.rkey = w->rkey;
		hdr.wr.atomic.compare_add = w->compare_add;
		hdr.wr.atomic.swap = w->swap;
	} else if (q->type == IBV_QPT_UD) {
		hdr.wr.ud.ah = w->ah;
		hdr.wr.ud.remote_qpn = w->rqpn;
		hdr.wr.ud.remote_qkey = w->rqkey;
	} else {
		hdr.wr.rdma.remote_addr = w->raddr;
		hdr.wr.rdma.rkey = w->rkey;
	}
	if (w->flags & IBV_SEND_INLINE) {
		hdr.inline_len = w->inl_len;
		return xrxe_tph_post_send_raw(q, &hdr, w->inl, w->inl_len);
	}
	hdr.num_sge = w->nsge;
	return xrxe_tph_post_send_raw(q, &hdr, w->sge, w->nsge * (uint32_t)sizeof(struct xrxe_sge));
}

int xrxe_tph_post_recv(struct xrxe_tph_qp *q, uint64_t wr_id, const struct xrxe_sge *sge,
		       uint32_t nsge)
{
	if (!q->rq)
		return -EINVAL; /* the QP has an SRQ */
	return post_recv_ring(q->rq, q->rq_slots, q->rq_elem, &q->rq_prod, wr_id, sge, nsge);
}

uint32_t xrxe_tph_cq_count(const struct xrxe_tph_cq *c)
{
	uint32_t prod = atomic_load_explicit((_Atomic uint32_t *)&c->ring->producer,
					     memory_order_acquire);

	return (prod - c->cons) & (c->nslots - 1);
}

int xrxe_tph_poll_cq(struct xrxe_tph_cq *c, struct ibv_wc *wc, int max)
{
	uint32_t mask = c->nslots - 1;
	int n = 0;

	while (n < max) {
		/* Acquire: pairs with the core's release store of the producer
		 * after it wrote the CQE. */
		uint32_t prod = atomic_load_explicit((_Atomic uint32_t *)&c->ring->producer,
						     memory_order_acquire);
		const struct xrxe_cqe *cqe;

		if ((prod & mask) == c->cons)
			break;
		cqe = (const struct xrxe_cqe *)(c->ring->data +
						((size_t)c->cons << c->ring->log2_elem_size));
		wc[n++] = cqe->wc;
		c->cons = (c->cons + 1) & mask;
		/* Release: we are done reading the slot. */
		atomic_store_explicit((_Atomic uint32_t *)&c->ring->consumer, c->cons,
				      memory_order_release);
	}
	return n;
}

/* --- the wire -------------------------------------------------------------------- */

/* ECN = CE (RFC 3168) in place. The ICRC masks TOS / traffic class, so it
 * stays valid; the IPv4 header checksum is recomputed. */
static void mark_ce(struct xrxe_tph *h, const struct xrxe_pkt *pkt)
{
	uint8_t *ip = pkt->frag[0].data + pkt->l3_off;
	uint32_t sum = 0;

	h->ce_marked++;
	if (pkt->ip_version == 6) {
		ip[1] |= 0x30; /* traffic class bits 0-1 = byte 1 bits 4-5 */
		return;
	}
	ip[1] |= 0x03;
	ip[10] = ip[11] = 0;
	for (unsigned i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
}

static void deliver(struct xrxe_tph *h, int to, struct xrxe_tph_frame *fr)
{
	struct xrxe_pkt pkt;
	int err;

	if (h->pol.filter) {
		if (xrxe_parse_frags(fr->frag, fr->nfrags, 0, &pkt) == XRXE_PARSE_OK &&
		    h->pol.filter(h->pol.filter_arg, 1 - to, &pkt)) {
			h->filtered++;
			frame_free(fr);
			return;
		}
	}
	if (chance(h, h->pol.drop_ppm)) {
		h->dropped++;
		if (getenv("XRXE_TPH_TRACE"))
			fprintf(stderr, "t=%lu %d->%d DROP\n", (unsigned long)h->now, 1 - to, to);
		frame_free(fr);
		return;
	}
	if (chance(h, h->pol.dup_ppm)) {
		struct xrxe_tph_frame d = frame_dup(fr);

		h->duplicated++;
		fifo_push(&h->q[to], &d);
	}
	if (chance(h, h->pol.reorder_ppm)) {
		/* delay: to the back of the queue */
		h->reordered++;
		fifo_push(&h->q[to], fr);
		return;
	}
	if (chance(h, h->pol.corrupt_ppm)) {
		/* one byte the ICRC covers: after the masked BTH byte 4 (the
		 * trailer included), never the Ethernet header or the masked
		 * IP/UDP fields */
		uint32_t bth = XRXE_ETH_HLEN + (h->ipv6 ? XRXE_IPV6_HLEN : XRXE_IPV4_HLEN) +
			       XRXE_UDP_HLEN;
		uint32_t lo = bth + 5, off = lo + (uint32_t)(xrxe_tph_rand(h) % (fr->len - lo));
		uint8_t x = (uint8_t)(1 + xrxe_tph_rand(h) % 255);
		unsigned i;

		for (i = 0; i < fr->nfrags; i++) {
			if (off < fr->frag[i].len) {
				fr->frag[i].data[off] ^= x;
				break;
			}
			off -= fr->frag[i].len;
		}
		h->corrupted++;
	}
	err = xrxe_parse_frags(fr->frag, fr->nfrags, 0, &pkt);
	if (err != XRXE_PARSE_OK) {
		h->rejected++;
		if (err == XRXE_PARSE_ICRC_MISMATCH)
			h->rejected_icrc++;
		frame_free(fr);
		return;
	}
	if (h->pol.ce_mark && h->pol.ce_mark(h->pol.ce_mark_arg, 1 - to, &pkt))
		mark_ce(h, &pkt);
	h->delivered++;
	if (getenv("XRXE_TPH_TRACE")) {
		const struct xrxe_aeth *ae = xrxe_pkt_hdr(&pkt, XRXE_HDR_AETH);

		fprintf(stderr, "t=%lu %d->%d %-32s psn %06x%s len %u%s", (unsigned long)h->now,
			1 - to, to, pkt.op->name, xrxe_bth_psn(xrxe_pkt_bth(&pkt)),
			xrxe_bth_ackreq(xrxe_pkt_bth(&pkt)) ? " A" : "", pkt.payload_len,
			ae ? "" : "\n");
		if (ae)
			fprintf(stderr, " syn %02x msn %u\n", xrxe_aeth_syndrome(ae),
				xrxe_aeth_msn(ae));
	}
	xrxe_tp_rx(h->side[to].tp, &pkt, h->now);
	frame_free(fr);
}

/* The earliest time from t at which side i is served (policy sleep_*). */
static uint64_t side_wake(const struct xrxe_tph *h, int i, uint64_t t)
{
	uint64_t e = h->pol.sleep_every_ns, s = h->pol.sleep_ns, ph = i ? e / 2 : 0, x;

	if (!e || !s || s >= e || t < ph || t == UINT64_MAX)
		return t;
	x = (t - ph) % e;
	return x < s ? t - x + s : t;
}

static bool side_awake(const struct xrxe_tph *h, int i)
{
	return side_wake(h, i, h->now) == h->now;
}

/* Deliver up to max frames due at side `to` (max 0: all of them). */
static bool wire_step_side(struct xrxe_tph *h, int to, unsigned max)
{
	size_t n = h->q[to].tail - h->q[to].head;
	struct xrxe_tph_frame fr;
	bool did = false;

	if (!side_awake(h, to))
		return false;
	/* Frames arrive in order of their due times (equal without a
	 * link model); reordered ones keep theirs. */
	while (n-- && fifo_head_due(&h->q[to]) <= h->now && fifo_pop(&h->q[to], &fr)) {
		deliver(h, to, &fr);
		did = true;
		if (max && !--max)
			break;
	}
	return did;
}

static bool wire_step(struct xrxe_tph *h)
{
	bool did = wire_step_side(h, 0, 0);

	return wire_step_side(h, 1, 0) || did;
}

void xrxe_tph_step(struct xrxe_tph *h)
{
	wire_step(h);
	if (side_awake(h, 0))
		xrxe_tp_poll(h->side[0].tp, h->now);
	if (side_awake(h, 1))
		xrxe_tp_poll(h->side[1].tp, h->now);
}

/* Poll side i once: whether it moved. A poll that only met full TX
 * buffers (tx_backlog_ns) did not: it waits for the link. */
static bool side_poll(struct xrxe_tph *h, int i)
{
	uint64_t sent = h->submitted;
	bool did;

	h->tx_full[i] = false;
	did = xrxe_tp_poll(h->side[i].tp, h->now);
	return did && !(h->tx_full[i] && h->submitted == sent);
}

/* One side's turn: polls (the policy's rx_burst: bursts, each followed by
 * a poll, as xrxed's loop). */
static bool side_serve(struct xrxe_tph *h, int i)
{
	bool did = false;
	int spin;

	if (!side_awake(h, i))
		return false;
	if (!h->pol.rx_burst) {
		for (spin = 0; spin < 64 && side_poll(h, i); spin++)
			did = true;
		return did;
	}
	for (spin = 0; spin < 64; spin++) {
		bool rx = wire_step_side(h, i, h->pol.rx_burst);

		if (!side_poll(h, i) && !rx)
			break;
		did = true;
	}
	return did;
}

/* xrxe_tph_run with frame_cost_ns: two daemon loops on two cores, each on
 * its own clock (clk); the one behind runs its next pass, so h->now never
 * goes back. A side with nothing to do waits until a frame is due for it
 * or its next deadline. */
static bool run_costed(struct xrxe_tph *h, uint64_t max_ns)
{
	uint64_t end = h->now + max_ns, clk[2] = { h->now, h->now };
	unsigned burst = h->pol.rx_burst ? h->pol.rx_burst : 64;
	bool idle[2] = { false, false };

	for (;;) {
		int i = clk[1] < clk[0], k;
		uint64_t sub = h->submitted, del = h->delivered, n, t;
		bool did;

		if (clk[i] == UINT64_MAX)
			return true; /* both idle, nothing due */
		if (clk[i] > end) {
			if (end > h->now)
				h->now = end;
			return false;
		}
		h->now = clk[i];
		did = wire_step_side(h, i, burst);
		did |= side_poll(h, i);
		n = (h->submitted - sub) + (h->delivered - del);
		idle[i] = !n && !did;
		if (!idle[i]) {
			clk[i] += (n ? n : 1) * h->pol.frame_cost_ns;
		} else {
			t = xrxe_tp_next_deadline(h->side[i].tp);
			if (fifo_head_due(&h->q[i]) < t)
				t = fifo_head_due(&h->q[i]);
			clk[i] = t > clk[i] ? t : clk[i] + 1;
		}
		/* what this pass sent wakes a waiting peer */
		for (k = 0; k < 2; k++) {
			t = fifo_head_due(&h->q[k]);
			if (idle[k] && t < clk[k])
				clk[k] = t > h->now ? t : h->now;
		}
	}
}

bool xrxe_tph_run(struct xrxe_tph *h, uint64_t max_ns)
{
	uint64_t end = h->now + max_ns;

	if (h->pol.frame_cost_ns)
		return run_costed(h, max_ns);

	for (;;) {
		bool did = false;
		int i;
		uint64_t d = UINT64_MAX;

		for (i = 0; i < 2; i++)
			did |= side_serve(h, i);
		did |= wire_step(h);
		if (did)
			continue;
		/* what is due at a sleeping side waits for it to run; and
		 * when it runs again it may have work no deadline names
		 * (doorbells rung meanwhile) */
		for (i = 0; i < 2; i++) {
			uint64_t t = xrxe_tp_next_deadline(h->side[i].tp);

			if (fifo_head_due(&h->q[i]) < t)
				t = fifo_head_due(&h->q[i]);
			if (!side_awake(h, i))
				t = h->now;
			/* TX buffers again once the link's backlog is below the bound */
			if (h->tx_full[i] && h->link_free[1 - i] - h->pol.tx_backlog_ns < t)
				t = h->link_free[1 - i] - h->pol.tx_backlog_ns;
			t = side_wake(h, i, t > h->now ? t : h->now);
			if (t < d)
				d = t;
		}
		if (d == UINT64_MAX)
			return true;
		if (d > end) {
			/* max_ns of virtual time passed with nothing due */
			if (end > h->now)
				h->now = end;
			return false;
		}
		if (d > h->now)
			h->now = d;
	}
}

void xrxe_tph_spec(const struct xrxe_tph *h, int from, uint32_t dest_qp,
		   struct xrxe_pkt_spec *spec)
{
	struct xrxe_av av;

	xrxe_tph_av(h, from, &av);
	memset(spec, 0, sizeof(*spec));
	memcpy(spec->dmac, av.dmac, 6);
	memcpy(spec->smac, av.smac, 6);
	spec->ip_version = av.ip_version;
	spec->ttl = 64;
	if (av.ip_version == 4) {
		spec->saddr.v4 = av.saddr.v4;
		spec->daddr.v4 = av.daddr.v4;
	} else {
		spec->saddr.v6 = av.saddr.v6;
		spec->daddr.v6 = av.daddr.v6;
	}
	spec->sport = 0xc000;
	spec->pkey = 0xffff;
	spec->dest_qp = dest_qp;
}

int xrxe_tph_inject(struct xrxe_tph *h, int to, const struct xrxe_pkt_spec *spec)
{
	uint8_t buf[XRXE_MAX_FRAME_LEN];
	struct xrxe_pkt pkt;
	int len = xrxe_build(buf, sizeof(buf), spec);

	if (len < 0)
		return len;
	if (xrxe_parse(buf, (size_t)len, 0, &pkt) != XRXE_PARSE_OK)
		return -EINVAL;
	xrxe_tp_rx(h->side[to].tp, &pkt, h->now);
	xrxe_tp_poll(h->side[to].tp, h->now);
	return 0;
}

/* --- conveniences ----------------------------------------------------------------- */

int xrxe_tph_pair_init(struct xrxe_tph_pair *p, uint64_t seed, enum ibv_qp_type type,
		       const struct xrxe_tph_conn *c, bool sig_all)
{
	if (c)
		p->conn = *c;
	else
		xrxe_tph_conn_default(&p->conn);
	xrxe_tph_init_rexmit(&p->h, seed, 4096, p->conn.fixed_ack_timeout);
	p->ca = xrxe_tph_cq_create(&p->h.side[0], 256);
	p->cb = xrxe_tph_cq_create(&p->h.side[1], 256);
	p->a = xrxe_tph_qp_create(&p->h.side[0], type, p->ca, p->ca, 64, 64, sig_all);
	p->b = xrxe_tph_qp_create(&p->h.side[1], type, p->cb, p->cb, 64, 64, sig_all);
	return xrxe_tph_connect(p->a, p->b, &p->conn);
}

void xrxe_tph_pair_fini(struct xrxe_tph_pair *p)
{
	xrxe_tph_fini(&p->h);
}

enum ibv_qp_state xrxe_tph_state(struct xrxe_tph_qp *q)
{
	struct ibv_qp_attr a;

	xrxe_tp_qp_query(q->s->tp, q->qp, &a, NULL);
	return a.qp_state;
}

struct info_find {
	uint32_t qpn;
	struct xrxe_tp_qp_info *out;
};

static int info_cb(void *arg, const struct xrxe_tp_qp_info *info)
{
	struct info_find *f = arg;

	if (info->qpn != f->qpn)
		return 0;
	*f->out = *info;
	return 1;
}

void xrxe_tph_info(struct xrxe_tph_qp *q, struct xrxe_tp_qp_info *info)
{
	struct info_find f = { q->qpn, info };

	memset(info, 0, sizeof(*info));
	xrxe_tp_qp_foreach(q->s->tp, info_cb, &f);
}
