// SPDX-License-Identifier: MIT
/*
 * Raw packet QPs (src/transport/raw.c): flow keys of whole and truncated
 * frames, flows (match, refusal of a match-all rule, the table's limit, stale
 * ids, removal with the QP), delivery (byte_len, no GRH, no WQE, a WQE too
 * short, a QP not receiving, two QPs matching), sends of hostile lengths, and
 * RSS (the Toeplitz hash against Microsoft's published vectors, frames spread
 * over WQs).
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"

#define SEC 1000000000ull

static const uint8_t DMAC[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };

/* Ethernet / IPv4 / UDP to DMAC, source address 10.0.0.src, dport. */
static uint32_t frame(uint8_t *f, uint32_t len, uint8_t src, uint16_t dport)
{
	memset(f, 0, len);
	memcpy(f, DMAC, 6);
	f[6] = 0x02;
	f[12] = 0x08;
	f[14] = 0x45;
	f[23] = 17;
	memcpy(f + 26, (uint8_t[]){ 10, 0, 0, src }, 4);
	memcpy(f + 30, (uint8_t[]){ 10, 0, 0, 200 }, 4);
	f[34] = 0x30;
	f[35] = 0x39;
	f[36] = (uint8_t)(dport >> 8);
	f[37] = (uint8_t)dport;
	for (uint32_t i = 42; i < len; i++)
		f[i] = (uint8_t)(i ^ src);
	return len;
}

static struct xrxe_steer_flow udp_rule(uint16_t dport)
{
	struct xrxe_steer_flow r;

	memset(&r, 0, sizeof(r));
	memcpy(r.value.dmac, DMAC, 6);
	memset(r.mask.dmac, 0xff, 6);
	r.value.ethertype = htons(0x0800);
	r.mask.ethertype = 0xffff;
	r.value.ip_proto = 17;
	r.mask.ip_proto = 0xff;
	r.value.dport = htons(dport);
	r.mask.dport = 0xffff;
	return r;
}

static unsigned rx(struct xrxe_tp *tp, uint8_t *f, uint32_t len)
{
	struct xrxe_frag fr = { f, len };

	return xrxe_tp_raw_rx(tp, &fr, 1, 0);
}

struct raw_env {
	struct xrxe_tph h;
	struct xrxe_tph_cq *cq;
	struct xrxe_tph_qp *qp;
	uint8_t *buf;
	uint32_t lkey;
};

static void to_rtr(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, bool rts)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	cr_assert_eq(xrxe_tp_qp_modify(tp, qp, &a, IBV_QP_STATE | IBV_QP_PORT, NULL), 0);
	a.qp_state = IBV_QPS_RTR;
	cr_assert_eq(xrxe_tp_qp_modify(tp, qp, &a, IBV_QP_STATE, NULL), 0);
	if (rts) {
		a.qp_state = IBV_QPS_RTS;
		cr_assert_eq(xrxe_tp_qp_modify(tp, qp, &a, IBV_QP_STATE, NULL), 0);
	}
}

static void env_init(struct raw_env *e)
{
	xrxe_tph_init(&e->h, 5, 1024);
	e->cq = xrxe_tph_cq_create(&e->h.side[1], 64);
	e->qp = xrxe_tph_qp_create(&e->h.side[1], IBV_QPT_RAW_PACKET, e->cq, e->cq, 8, 8, true);
	cr_assert_not_null(e->qp);
	to_rtr(e->h.side[1].tp, e->qp->qp, true);
	e->buf = calloc(1, 1 << 16);
	e->lkey = xrxe_tph_mr(&e->h.side[1], e->buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE, 0);
}

static void env_fini(struct raw_env *e)
{
	xrxe_tph_fini(&e->h);
	free(e->buf);
}

static void post(struct raw_env *e, struct xrxe_tph_qp *q, uint64_t id, uint32_t off, uint32_t len)
{
	struct xrxe_sge s = { (uintptr_t)e->buf + off, len, e->lkey };

	cr_assert_eq(xrxe_tph_post_recv(q, id, &s, 1), 0);
}

Test(raw, flow_key_never_reads_past_the_frame)
{
	uint8_t f[128], *copy;
	struct xrxe_flow_key k;

	frame(f, sizeof(f), 7, 5678);
	xrxe_flow_key_of(f, sizeof(f), &k);
	cr_assert_eq(k.ethertype, htons(0x0800));
	cr_assert_eq(k.ip_proto, 17);
	cr_assert_eq(k.src_ip[3], 7);
	cr_assert_eq(k.dport, htons(5678));
	/* every prefix, in a buffer of exactly that size (ASan in SANITIZE
	 * builds): what is cut off stays zero */
	for (uint32_t n = 0; n <= sizeof(f); n++) {
		copy = malloc(n ? n : 1);
		memcpy(copy, f, n);
		xrxe_flow_key_of(copy, n, &k);
		if (n < 14)
			cr_assert_eq(k.ethertype, 0, "%u bytes", n);
		if (n < 34)
			cr_assert_eq(k.ip_proto, 0, "%u bytes", n);
		if (n < 38)
			cr_assert_eq(k.dport, 0, "%u bytes", n);
		free(copy);
	}
	/* a fragment carries no ports */
	f[20] = 0x20;
	xrxe_flow_key_of(f, sizeof(f), &k);
	cr_assert_eq(k.dport, 0);
}

Test(raw, flows_are_checked_limited_and_go_with_their_qp)
{
	struct raw_env e;
	struct xrxe_tp *tp;
	struct xrxe_steer_flow r = udp_rule(5678), none;
	uint32_t ids[XRXE_STEER_MAX_FLOWS], id;
	struct xrxe_tp_stats st;

	env_init(&e);
	tp = e.h.side[1].tp;
	memset(&none, 0, sizeof(none));
	cr_assert_eq(xrxe_tp_flow_create(tp, e.qp->qp, &none, &id), -EINVAL, "match-all refused");
	for (uint32_t i = 0; i < XRXE_STEER_MAX_FLOWS; i++)
		cr_assert_eq(xrxe_tp_flow_create(tp, e.qp->qp, &r, &ids[i]), 0);
	cr_assert_eq(xrxe_tp_flow_create(tp, e.qp->qp, &r, &id), -ENOSPC);
	cr_assert_eq(xrxe_tp_flow_destroy(tp, ids[3]), 0);
	cr_assert_eq(xrxe_tp_flow_destroy(tp, ids[3]), -ENOENT, "destroyed twice");
	cr_assert_eq(xrxe_tp_flow_create(tp, e.qp->qp, &r, &id), 0);
	cr_assert_neq(id, ids[3], "a reused slot has a new id");
	cr_assert_eq(xrxe_tp_flow_destroy(tp, ids[3]), -ENOENT, "a stale id misses");
	xrxe_tph_qp_destroy(e.qp);
	xrxe_tp_get_stats(tp, &st);
	cr_assert_eq(st.raw_flows, 0, "destroying the QP removes its flows");
	cr_assert_eq(xrxe_tp_flow_destroy(tp, id), -ENOENT);
	env_fini(&e);
}

Test(raw, delivery)
{
	struct raw_env e;
	struct xrxe_tp *tp;
	struct xrxe_steer_flow r = udp_rule(5678);
	uint8_t f[300];
	struct ibv_wc wc[4];
	struct xrxe_tp_stats st;
	uint32_t id;

	env_init(&e);
	tp = e.h.side[1].tp;
	cr_assert_eq(xrxe_tp_flow_create(tp, e.qp->qp, &r, &id), 0);
	/* no WQE: dropped, counted */
	cr_assert_eq(rx(tp, f, frame(f, 200, 1, 5678)), 1);
	cr_assert_eq(xrxe_tph_poll_cq(e.cq, wc, 4), 0);
	/* a WQE too short for the frame: dropped, the WQE stays */
	post(&e, e.qp, 1, 0, 100);
	cr_assert_eq(rx(tp, f, frame(f, 200, 2, 5678)), 1);
	cr_assert_eq(xrxe_tph_poll_cq(e.cq, wc, 4), 0);
	cr_assert_eq(rx(tp, f, frame(f, 100, 3, 5678)), 1);
	cr_assert_eq(xrxe_tph_poll_cq(e.cq, wc, 4), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].wr_id, 1);
	cr_assert_eq(wc[0].opcode, IBV_WC_RECV);
	cr_assert_eq(wc[0].byte_len, 100);
	cr_assert_eq(wc[0].wc_flags & IBV_WC_GRH, 0);
	cr_assert_eq(memcmp(e.buf, f, 100), 0);
	/* another port: no flow, not ours */
	cr_assert_eq(rx(tp, f, frame(f, 100, 4, 9999)), 0);
	/* truncated and empty frames: no match, no crash */
	cr_assert_eq(rx(tp, f, 5), 0);
	cr_assert_eq(xrxe_tp_raw_rx(tp, NULL, 0, 0), 0);
	xrxe_tp_get_stats(tp, &st);
	cr_assert_eq(st.raw_rx, 1);
	cr_assert_eq(st.raw_rx_drop, 2);
	cr_assert_eq(st.raw_rx_no_flow, 2);
	env_fini(&e);
}

Test(raw, every_matching_qp_once_and_only_receiving_qps)
{
	struct raw_env e;
	struct xrxe_tp *tp;
	struct xrxe_tph_qp *q2, *q3;
	struct xrxe_steer_flow r = udp_rule(5678), mac = udp_rule(0);
	uint8_t f[128];
	struct ibv_wc wc[4];
	uint32_t id;

	env_init(&e);
	tp = e.h.side[1].tp;
	q2 = xrxe_tph_qp_create(&e.h.side[1], IBV_QPT_RAW_PACKET, e.cq, e.cq, 8, 8, true);
	to_rtr(tp, q2->qp, false);
	q3 = xrxe_tph_qp_create(&e.h.side[1], IBV_QPT_RAW_PACKET, e.cq, e.cq, 8, 8, true);
	memset(&mac.mask, 0, sizeof(mac.mask)); /* the destination MAC only */
	memset(mac.mask.dmac, 0xff, 6);
	cr_assert_eq(xrxe_tp_flow_create(tp, e.qp->qp, &r, &id), 0);
	cr_assert_eq(xrxe_tp_flow_create(tp, e.qp->qp, &mac, &id), 0);
	cr_assert_eq(xrxe_tp_flow_create(tp, q2->qp, &mac, &id), 0);
	cr_assert_eq(xrxe_tp_flow_create(tp, q3->qp, &mac, &id), 0); /* q3 stays in RESET */
	post(&e, e.qp, 1, 0, 2048);
	post(&e, e.qp, 2, 2048, 2048);
	post(&e, q2, 3, 4096, 2048);
	post(&e, q3, 4, 6144, 2048);
	cr_assert_eq(rx(tp, f, frame(f, sizeof(f), 1, 5678)), 3);
	cr_assert_eq(xrxe_tph_poll_cq(e.cq, wc, 4), 2, "the QP with two matching flows once, "
						       "the RTR one too, not the RESET one");
	cr_assert_eq(wc[0].wr_id + wc[1].wr_id, 1 + 3);
	env_fini(&e);
}

Test(raw, sends_whole_frames_within_bounds)
{
	struct raw_env e;
	struct xrxe_tp *tp;
	struct ibv_wc wc[4];
	struct xrxe_sge s;
	struct xrxe_tp_stats st;
	uint64_t before;

	env_init(&e);
	tp = e.h.side[1].tp;
	frame(e.buf, 200, 1, 5678);
	s = (struct xrxe_sge){ (uintptr_t)e.buf, 200, e.lkey };
	before = e.h.submitted;
	cr_assert_eq(xrxe_tph_post_send(e.qp, &(struct xrxe_tph_send){
		.wr_id = 1, .opcode = IBV_WR_SEND, .sge = &s, .nsge = 1 }), 0);
	xrxe_tph_run(&e.h, SEC);
	cr_assert_eq(xrxe_tph_poll_cq(e.cq, wc, 4), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(e.h.submitted, before + 1, "one frame out");
	/* shorter than an Ethernet header */
	s.length = 13;
	cr_assert_eq(xrxe_tph_post_send(e.qp, &(struct xrxe_tph_send){
		.wr_id = 2, .opcode = IBV_WR_SEND, .sge = &s, .nsge = 1 }), 0);
	xrxe_tph_run(&e.h, SEC);
	cr_assert_eq(xrxe_tph_poll_cq(e.cq, wc, 4), 1);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_LEN_ERR);
	xrxe_tp_get_stats(tp, &st);
	cr_assert_eq(st.raw_tx, 1);
	cr_assert_eq(st.raw_tx_bad_len, 1);
	cr_assert_eq(e.h.submitted, before + 1, "nothing more out");
	env_fini(&e);
}

Test(raw, oversized_send_and_other_opcodes_refused)
{
	struct raw_env e;
	struct ibv_wc wc[4];
	struct xrxe_sge s;

	env_init(&e);
	/* raw_mtu 0: max_path_mtu 1024 + 80, plus Ethernet and one tag */
	s = (struct xrxe_sge){ (uintptr_t)e.buf, 1024 + 80 + 18 + 1, e.lkey };
	cr_assert_eq(xrxe_tph_post_send(e.qp, &(struct xrxe_tph_send){
		.wr_id = 1, .opcode = IBV_WR_SEND, .sge = &s, .nsge = 1 }), 0);
	xrxe_tph_run(&e.h, SEC);
	cr_assert_eq(xrxe_tph_poll_cq(e.cq, wc, 4), 1);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_LEN_ERR);
	env_fini(&e);
}

Test(raw, toeplitz_matches_the_published_vectors)
{
	/* Microsoft's RSS verification suite: the key and IPv4 address pairs
	 * with their hashes (addresses only) */
	static const uint8_t key[40] = {
		0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
		0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
		0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
	};
	static const struct {
		uint8_t in[12];
		uint32_t ip_only, with_ports;
	} v[] = {
		{ { 66, 9, 149, 187, 161, 142, 100, 80, 0x0a, 0xea, 0x06, 0xe6 }, 0x323e8fc2, 0x51ccc178 },
		{ { 199, 92, 111, 2, 65, 69, 140, 83, 0x37, 0x96, 0x12, 0x83 }, 0xd718262a, 0xc626b0ea },
	};

	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cr_assert_eq(xrxe_tp_rss_hash(key, sizeof(key), v[i].in, 8), v[i].ip_only);
		cr_assert_eq(xrxe_tp_rss_hash(key, sizeof(key), v[i].in, 12), v[i].with_ports);
	}
}

Test(raw, rss_spreads_frames_over_its_wqs)
{
	struct raw_env e;
	struct xrxe_tp *tp;
	struct xrxe_tph_qp *wq[2];
	struct xrxe_tp_qp *wqs[2];
	struct xrxe_steer_flow r = udp_rule(5678);
	uint8_t f[128], key[40];
	struct ibv_wc wc[64];
	unsigned per[2] = { 0, 0 }, n;
	uint32_t id;

	env_init(&e);
	tp = e.h.side[1].tp;
	for (int i = 0; i < 2; i++) {
		wq[i] = xrxe_tph_qp_create(&e.h.side[1], IBV_QPT_RAW_PACKET, e.cq, e.cq, 2, 32, true);
		to_rtr(tp, wq[i]->qp, false);
		wqs[i] = wq[i]->qp;
		for (int j = 0; j < 31; j++)
			post(&e, wq[i], (uint64_t)i, (uint32_t)(i * 31 + j) * 256, 256);
	}
	for (unsigned i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 37 + 1);
	cr_assert_eq(xrxe_tp_qp_set_rss(tp, e.qp->qp, wqs, 3, key, 40, IBV_RX_HASH_SRC_IPV4),
		     -EINVAL, "a table of 3");
	cr_assert_eq(xrxe_tp_qp_set_rss(tp, e.qp->qp, wqs, 2, key, 40,
					IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4),
		     0);
	cr_assert_eq(xrxe_tp_flow_create(tp, e.qp->qp, &r, &id), 0);
	for (uint8_t src = 1; src <= 32; src++)
		cr_assert_eq(rx(tp, f, frame(f, sizeof(f), src, 5678)), 1);
	n = (unsigned)xrxe_tph_poll_cq(e.cq, wc, 64);
	cr_assert_eq(n, 32);
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		per[wc[i].wr_id]++;
		cr_assert_eq(wc[i].qp_num, wq[wc[i].wr_id]->qpn, "completes on the WQ");
	}
	cr_assert(per[0] && per[1], "32 sources over both WQs (%u, %u)", per[0], per[1]);
	env_fini(&e);
}
