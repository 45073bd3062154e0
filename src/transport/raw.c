// SPDX-License-Identifier: MIT
/*
 * Raw packet QPs (IBV_QPT_RAW_PACKET) and their flows (ibv_create_flow).
 *
 * Send: a WQE's gather list is one whole Ethernet frame the application
 * built; it goes out as it is (no header of ours, no ICRC) in one buffer
 * from ops->tx_reserve, and the WQE completes once the frame is handed over,
 * as UD's do. Its length is bounded: at least an Ethernet header, at most
 * the netdev MTU plus an Ethernet header and one VLAN tag (what the wire and
 * the daemon's buffers carry); anything else completes with LOC_LEN_ERR.
 *
 * Receive: a frame that is not RoCEv2 is reduced to a flow key (steer.h,
 * computed exactly as the XDP program does) and matched against the flows;
 * every raw QP with a matching flow gets a copy in its next receive WQE,
 * headers included, no GRH (wc.byte_len = frame length), as a NIC's flow
 * steering delivers it. A QP not receiving (RTR, RTS, SQD or SQE), without
 * a receive WQE, or whose WQE is too short drops the frame, counted; the
 * frame is the network's, so nothing it holds can fail the QP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tp_internal.h"

#define RAW_ETH_HLEN 14
#define RAW_VLAN_HLEN 4

/* --- flow keys ---------------------------------------------------------------- */

static uint16_t be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

void xrxe_flow_key_of(const uint8_t *f, uint32_t len, struct xrxe_flow_key *k)
{
	uint32_t off = 12, l4 = 0;
	uint16_t type;

	memset(k, 0, sizeof(*k));
	if (len < RAW_ETH_HLEN)
		return;
	memcpy(k->dmac, f, 6);
	memcpy(k->smac, f + 6, 6);
	type = be16_at(f + off);
	off += 2;
	if (type == 0x8100 || type == 0x88a8) { /* one 802.1Q / 802.1ad tag */
		if (len < off + RAW_VLAN_HLEN)
			return;
		memcpy(&k->vlan_tci, f + off, 2);
		type = be16_at(f + off + 2);
		off += RAW_VLAN_HLEN;
	}
	memcpy(&k->ethertype, f + off - 2, 2);
	if (type == 0x0800) {
		uint32_t ihl;

		if (len < off + 20)
			return;
		k->ip_proto = f[off + 9];
		memcpy(k->src_ip, f + off + 12, 4);
		memcpy(k->dst_ip, f + off + 16, 4);
		ihl = (f[off] & 0x0fu) * 4u;
		/* ports only of an unfragmented datagram (MF and offset 0) */
		if (ihl >= 20 && !(be16_at(f + off + 6) & 0x3fff))
			l4 = off + ihl;
	} else if (type == 0x86dd) {
		if (len < off + 40)
			return;
		k->ip_proto = f[off + 6];
		memcpy(k->src_ip, f + off + 8, 16);
		memcpy(k->dst_ip, f + off + 24, 16);
		l4 = off + 40;
	}
	if (l4 && (k->ip_proto == 17 || k->ip_proto == 6) && len >= l4 + 4) {
		memcpy(&k->sport, f + l4, 2);
		memcpy(&k->dport, f + l4 + 2, 2);
	}
}

static bool flow_matches(const struct xrxe_steer_flow *rule, const struct xrxe_flow_key *k)
{
	uint64_t kw[XRXE_FLOW_KEY_WORDS], vw[XRXE_FLOW_KEY_WORDS], mw[XRXE_FLOW_KEY_WORDS];
	uint64_t diff = 0;

	_Static_assert(sizeof(struct xrxe_flow_key) == sizeof(kw), "flow key: 8 words");
	memcpy(kw, k, sizeof(kw));
	memcpy(vw, &rule->value, sizeof(vw));
	memcpy(mw, &rule->mask, sizeof(mw));
	for (unsigned i = 0; i < XRXE_FLOW_KEY_WORDS; i++)
		diff |= (kw[i] & mw[i]) ^ vw[i];
	return !diff;
}

/* --- flows ----------------------------------------------------------------------- */

#define FLOW_SLOT_BITS 8 /* id = gen << 8 | slot */

static void flow_count_update(struct xrxe_tp *tp)
{
	uint32_t n = XRXE_STEER_MAX_FLOWS;

	while (n && !tp->raw_flows[n - 1].qp)
		n--;
	tp->raw_flow_count = n;
}

static void flow_publish(struct xrxe_tp *tp, uint32_t slot)
{
	const struct tp_raw_flow *f = &tp->raw_flows[slot];

	if (tp->cfg.ops && tp->cfg.ops->raw_flow_set)
		tp->cfg.ops->raw_flow_set(tp->cfg.user, slot, f->qp ? &f->rule : NULL,
					  tp->raw_flow_count);
}

int xrxe_tp_flow_create(struct xrxe_tp *tp, struct xrxe_tp_qp *qp,
			const struct xrxe_steer_flow *rule, uint32_t *id)
{
	struct xrxe_steer_flow r;
	uint64_t vw[XRXE_FLOW_KEY_WORDS], mw[XRXE_FLOW_KEY_WORDS], any = 0;
	uint32_t slot;

	if (!qp || qp->type != IBV_QPT_RAW_PACKET)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.value = rule->value;
	r.mask = rule->mask;
	r.used = 1;
	/* value stored masked: the match is one AND and one XOR per word */
	memcpy(vw, &r.value, sizeof(vw));
	memcpy(mw, &r.mask, sizeof(mw));
	for (unsigned i = 0; i < XRXE_FLOW_KEY_WORDS; i++) {
		vw[i] &= mw[i];
		any |= mw[i];
	}
	memcpy(&r.value, vw, sizeof(vw));
	/* A rule that matches every frame would take ARP, ND and TCP from
	 * the host: refused (a raw QP names what it wants). */
	if (!any)
		return -EINVAL;
	for (slot = 0; slot < XRXE_STEER_MAX_FLOWS; slot++)
		if (!tp->raw_flows[slot].qp)
			break;
	if (slot == XRXE_STEER_MAX_FLOWS)
		return -ENOSPC;
	tp->raw_flows[slot].qp = qp;
	tp->raw_flows[slot].rule = r;
	tp->raw_flows[slot].gen = (tp->raw_flows[slot].gen + 1) & 0xffffffu;
	*id = tp->raw_flows[slot].gen << FLOW_SLOT_BITS | slot;
	tp->stats.raw_flows++;
	flow_count_update(tp);
	flow_publish(tp, slot);
	return 0;
}

static void flow_remove(struct xrxe_tp *tp, uint32_t slot)
{
	tp->raw_flows[slot].qp = NULL;
	memset(&tp->raw_flows[slot].rule, 0, sizeof(tp->raw_flows[slot].rule));
	tp->stats.raw_flows--;
	flow_count_update(tp);
	flow_publish(tp, slot);
}

int xrxe_tp_flow_destroy(struct xrxe_tp *tp, uint32_t id)
{
	uint32_t slot = id & ((1u << FLOW_SLOT_BITS) - 1);

	if (slot >= XRXE_STEER_MAX_FLOWS || !tp->raw_flows[slot].qp ||
	    tp->raw_flows[slot].gen != id >> FLOW_SLOT_BITS)
		return -ENOENT;
	flow_remove(tp, slot);
	return 0;
}

void xrxe_tpi_raw_qp_gone(struct xrxe_tp_qp *qp)
{
	struct xrxe_tp *tp = qp->tp;

	free(qp->rss);
	qp->rss = NULL;
	for (uint32_t slot = 0; slot < XRXE_STEER_MAX_FLOWS; slot++)
		if (tp->raw_flows[slot].qp == qp)
			flow_remove(tp, slot);
}

/* --- send ------------------------------------------------------------------------ */

bool xrxe_tpi_raw_len_ok(const struct xrxe_tp *tp, uint32_t len)
{
	uint32_t mtu = tp->cfg.raw_mtu ? tp->cfg.raw_mtu : tp->cfg.max_path_mtu + 80;

	return len >= RAW_ETH_HLEN && len <= mtu + RAW_ETH_HLEN + RAW_VLAN_HLEN &&
	       len <= XRXE_MAX_FRAME_LEN;
}

/* Copying into the reserved fragments, in order. */
struct raw_fill {
	struct xrxe_tp_txbuf *buf;
	unsigned frag;
	uint32_t off;
};

static void raw_fill_piece(void *arg, uint8_t *src, uint32_t n)
{
	struct raw_fill *f = arg;

	while (n && f->frag < f->buf->nfrags) {
		struct xrxe_frag *fr = &f->buf->frag[f->frag];
		uint32_t k = fr->len - f->off < n ? fr->len - f->off : n;

		memcpy(fr->data + f->off, src, k);
		src += k;
		n -= k;
		f->off += k;
		if (f->off == fr->len) {
			f->frag++;
			f->off = 0;
		}
	}
}

int xrxe_tpi_raw_send(struct xrxe_tp_qp *qp, struct tp_swqe *w)
{
	struct xrxe_tp *tp = qp->tp;
	const struct xrxe_sge *sge = (const struct xrxe_sge *)w->data;
	bool inl = w->wr.send_flags & IBV_SEND_INLINE;
	const uint8_t *staged = NULL;
	struct xrxe_tp_txbuf buf;
	struct raw_fill fill = { .buf = &buf };
	uint32_t len = w->length, cap = 0, left;
	unsigned i, used = 0;

	if (!inl && xrxe_tpi_gather_stage(tp, qp->pdn, sge, w->wr.num_sge, 0, len, &staged)) {
		w->state = TP_WQE_BAD; /* the MR went away since the fetch */
		w->status = IBV_WC_LOC_PROT_ERR;
		return -EFAULT;
	}
	memset(&buf, 0, sizeof(buf));
	if (tp->cfg.ops->tx_reserve(tp->cfg.user, len, &buf)) {
		tp->stats.tx_no_buffer++;
		tp->tx_blocked = true;
		return -ENOBUFS;
	}
	for (i = 0; i < buf.nfrags && i < XRXE_MAX_FRAGS; i++)
		cap += buf.frag[i].len;
	if (buf.nfrags == 0 || buf.nfrags > XRXE_MAX_FRAGS || cap < len) {
		/* the caller broke tx_reserve's contract: nothing goes out */
		buf.nfrags = 0;
		buf.len = 0;
	} else {
		if (inl)
			raw_fill_piece(&fill, w->data, len);
		else if (staged)
			raw_fill_piece(&fill, (uint8_t *)staged, len);
		else
			xrxe_tpi_sge_walk(tp, qp->pdn, sge, w->wr.num_sge, 0, len, 0,
					  raw_fill_piece, &fill);
		/* trim the fragments to exactly the frame */
		for (i = 0, left = len; i < buf.nfrags && left; i++) {
			if (buf.frag[i].len > left)
				buf.frag[i].len = left;
			left -= buf.frag[i].len;
			used = i + 1;
		}
		buf.nfrags = (uint8_t)used;
		buf.len = len;
	}
	tp->stats.tx_packets++;
	tp->stats.raw_tx++;
	qp->info.tx_packets++;
	qp->info.tx_bytes += len;
	tp->cfg.ops->tx_submit(tp->cfg.user, &buf);
	qp->req.psn = xrxe_psn_add(qp->req.psn, 1);
	qp->req.wqe++;
	qp->req.off = 0;
	return 0;
}

/* --- RSS -------------------------------------------------------------------------- */

struct tp_rss {
	uint32_t n; /* power of 2 */
	uint64_t fields;
	uint8_t key[XRXE_MAX_RSS_KEY];
	struct xrxe_tp_qp *wq[];
};

int xrxe_tp_qp_set_rss(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, struct xrxe_tp_qp *const *wqs,
		       uint32_t n, const uint8_t *key, uint32_t key_len, uint64_t fields)
{
	struct tp_rss *rss;

	(void)tp;
	if (!qp || qp->type != IBV_QPT_RAW_PACKET || qp->rss || !n || (n & (n - 1)) ||
	    n > (1u << XRXE_MAX_RWQ_IND_LOG) || key_len > XRXE_MAX_RSS_KEY)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (!wqs[i] || wqs[i]->type != IBV_QPT_RAW_PACKET || wqs[i]->rss)
			return -EINVAL;
	rss = calloc(1, sizeof(*rss) + n * sizeof(rss->wq[0]));
	if (!rss)
		return -ENOMEM;
	rss->n = n;
	rss->fields = fields;
	memcpy(rss->key, key, key_len); /* a shorter key: zeros after it */
	memcpy(rss->wq, wqs, n * sizeof(rss->wq[0]));
	qp->rss = rss;
	return 0;
}

/* Toeplitz (the RSS hash of Microsoft's specification, as NICs compute it):
 * for every set bit of the input, XOR in the 32 key bits starting there. */
uint32_t xrxe_tp_rss_hash(const uint8_t *key, uint32_t key_len, const uint8_t *in, uint32_t n)
{
	uint32_t h = 0, win = 0;

	for (uint32_t i = 0; i < 4; i++)
		win = win << 8 | (i < key_len ? key[i] : 0);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t next = i + 4 < key_len ? key[i + 4] : 0;

		for (int b = 7; b >= 0; b--) {
			if (in[i] >> b & 1)
				h ^= win;
			win = win << 1 | (next >> b & 1);
		}
	}
	return h;
}

/* The WQ of an RSS QP for a frame: the input is the fields asked for, in
 * the order source address, destination address, source port, destination
 * port, of those the frame has. */
static struct xrxe_tp_qp *rss_pick(const struct tp_rss *rss, const struct xrxe_flow_key *k)
{
	uint8_t in[36];
	uint32_t n = 0;
	uint64_t f = rss->fields;
	bool v4 = k->ethertype == htobe16(0x0800), v6 = k->ethertype == htobe16(0x86dd);
	bool tcp = k->ip_proto == 6, udp = k->ip_proto == 17;

	if (v4 && (f & IBV_RX_HASH_SRC_IPV4)) {
		memcpy(in + n, k->src_ip, 4);
		n += 4;
	}
	if (v4 && (f & IBV_RX_HASH_DST_IPV4)) {
		memcpy(in + n, k->dst_ip, 4);
		n += 4;
	}
	if (v6 && (f & IBV_RX_HASH_SRC_IPV6)) {
		memcpy(in + n, k->src_ip, 16);
		n += 16;
	}
	if (v6 && (f & IBV_RX_HASH_DST_IPV6)) {
		memcpy(in + n, k->dst_ip, 16);
		n += 16;
	}
	if ((tcp && (f & IBV_RX_HASH_SRC_PORT_TCP)) || (udp && (f & IBV_RX_HASH_SRC_PORT_UDP))) {
		memcpy(in + n, &k->sport, 2);
		n += 2;
	}
	if ((tcp && (f & IBV_RX_HASH_DST_PORT_TCP)) || (udp && (f & IBV_RX_HASH_DST_PORT_UDP))) {
		memcpy(in + n, &k->dport, 2);
		n += 2;
	}
	return rss->wq[xrxe_tp_rss_hash(rss->key, sizeof(rss->key), in, n) & (rss->n - 1)];
}

/* --- receive --------------------------------------------------------------------- */

struct raw_src {
	const struct xrxe_frag *frag;
	unsigned nfrags, i;
	uint32_t off;
};

static void raw_src_piece(void *arg, uint8_t *dst, uint32_t n)
{
	struct raw_src *s = arg;

	while (n && s->i < s->nfrags) {
		const struct xrxe_frag *fr = &s->frag[s->i];
		uint32_t k = fr->len - s->off < n ? fr->len - s->off : n;

		memcpy(dst, fr->data + s->off, k);
		dst += k;
		n -= k;
		s->off += k;
		if (s->off == fr->len) {
			s->i++;
			s->off = 0;
		}
	}
}

static void raw_deliver(struct xrxe_tp_qp *qp, const struct xrxe_frag *frag, unsigned nfrags,
			uint32_t len)
{
	struct xrxe_tp *tp = qp->tp;
	struct tp_resp *r = &qp->resp;
	struct raw_src src = { .frag = frag, .nfrags = nfrags };
	struct ibv_wc wc;

	/* IBA 10.3.1: a QP receives in RTR and later states, not before and
	 * not in ERR */
	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD &&
	    qp->state != IBV_QPS_SQE)
		goto drop;
	if (xrxe_tpi_resp_take_rwqe(qp))
		goto drop; /* none posted (or a malformed one, completed in error) */
	if (len > r->rwqe_len)
		goto drop; /* the WQE stays for the next frame, as UD's */
	if (xrxe_tpi_sge_walk(tp, r->rwqe_pdn, r->rsge, r->rwqe_nsge, 0, len,
			      IBV_ACCESS_LOCAL_WRITE, raw_src_piece, &src)) {
		/* the application's buffer, not the frame: its error */
		memset(&wc, 0, sizeof(wc));
		wc.status = IBV_WC_LOC_PROT_ERR;
		wc.opcode = IBV_WC_RECV;
		xrxe_tpi_resp_complete_rwqe(qp, &wc);
		tp->stats.raw_rx_drop++;
		return;
	}
	memset(&wc, 0, sizeof(wc));
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = len;
	qp->info.rx_packets++;
	qp->info.rx_bytes += len;
	tp->stats.raw_rx++;
	xrxe_tpi_resp_complete_rwqe(qp, &wc);
	return;
drop:
	tp->stats.raw_rx_drop++;
}

unsigned xrxe_tp_raw_rx(struct xrxe_tp *tp, const struct xrxe_frag *frag, unsigned nfrags,
			uint64_t now_ns)
{
	struct xrxe_tp_qp *hit[XRXE_STEER_MAX_FLOWS];
	uint8_t head[128]; /* every header a key looks at */
	struct xrxe_flow_key k;
	uint32_t len = 0, hlen = 0;
	unsigned nhit = 0;

	if (!tp->raw_flow_count || !nfrags || nfrags > XRXE_MAX_FRAGS)
		return 0;
	tp->now = now_ns;
	for (unsigned i = 0; i < nfrags; i++) {
		uint32_t k2 = frag[i].len < sizeof(head) - hlen ? frag[i].len : sizeof(head) - hlen;

		memcpy(head + hlen, frag[i].data, k2);
		hlen += k2;
		len += frag[i].len;
	}
	xrxe_flow_key_of(head, hlen, &k);
	/* each QP once, however many of its flows match */
	for (uint32_t slot = 0; slot < tp->raw_flow_count; slot++) {
		struct xrxe_tp_qp *qp = tp->raw_flows[slot].qp;
		unsigned j;

		if (!qp || !flow_matches(&tp->raw_flows[slot].rule, &k))
			continue;
		for (j = 0; j < nhit && hit[j] != qp; j++)
			;
		if (j == nhit)
			hit[nhit++] = qp;
	}
	if (!nhit) {
		tp->stats.raw_rx_no_flow++;
		return 0;
	}
	tp->stats.rx_packets++;
	/* an RSS QP only dispatches: the WQ the hash picks receives */
	for (unsigned j = 0; j < nhit; j++)
		raw_deliver(hit[j]->rss ? rss_pick(hit[j]->rss, &k) : hit[j], frag, nfrags, len);
	return nhit;
}
