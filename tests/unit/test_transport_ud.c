// SPDX-License-Identifier: MIT
/*
 * UC and UD basics: UC sends/writes (no ACKs; a PSN gap drops the rest of
 * the message, never a partial delivery), UD datagrams with the 40-byte GRH
 * area rxe writes, Q_Key checks, AH handles, and sends above the MTU.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"

#define SEC 1000000000ull

static uint8_t abuf[1 << 18], bbuf[1 << 18];

Test(transport_uc, send_write_clean)
{
	struct xrxe_tph_pair p;
	uint32_t lka, lkb, i;
	struct ibv_wc wc[64];
	static const uint32_t sizes[] = { 0, 1, 1023, 1024, 1025, 5000 };
	uint32_t off = 0;

	cr_assert_eq(xrxe_tph_pair_init(&p, 1, IBV_QPT_UC, NULL, true), 0);
	for (i = 0; i < sizeof(abuf); i++)
		abuf[i] = (uint8_t)(i * 3);
	memset(bbuf, 0, sizeof(bbuf));
	lka = xrxe_tph_mr(&p.h.side[0], abuf, sizeof(abuf), 0, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, sizeof(bbuf),
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0);
	for (i = 0; i < 6; i++) {
		struct xrxe_sge sa = { (uintptr_t)abuf + off, sizes[i], lka };
		struct xrxe_sge sb = { (uintptr_t)bbuf + off, sizes[i], lkb };

		cr_assert_eq(xrxe_tph_post_recv(p.b, i, &sb, 1), 0);
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = i, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1 }), 0);
		off += sizes[i];
		sa.addr = (uintptr_t)abuf + off;
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 100 + i, .opcode = IBV_WR_RDMA_WRITE, .sge = &sa, .nsge = 1,
			.raddr = (uintptr_t)bbuf + off, .rkey = lkb }), 0);
		off += sizes[i];
	}
	cr_assert(xrxe_tph_run(&p.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 64), 12);
	for (i = 0; i < 12; i++)
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
	cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 64), 6);
	for (i = 0; i < 6; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].byte_len, sizes[i]);
	}
	cr_assert(!memcmp(abuf, bbuf, off));
	/* UC sends no acknowledgements at all */
	cr_assert_eq(p.h.opcode_count[1][XRXE_OPCODE(RC, ACKNOWLEDGE)], 0);
	cr_assert_eq(p.h.submitted, p.h.opcode_count[0][0x20] + p.h.opcode_count[0][0x21] +
					    p.h.opcode_count[0][0x22] + p.h.opcode_count[0][0x24] +
					    p.h.opcode_count[0][0x26] + p.h.opcode_count[0][0x27] +
					    p.h.opcode_count[0][0x28] + p.h.opcode_count[0][0x2a]);
	xrxe_tph_pair_fini(&p);
}

Test(transport_uc, lossy_never_partial)
{
	struct xrxe_tph_pair p;
	uint32_t lka, lkb, i;
	struct ibv_wc wc[128];
	int n;

	cr_assert_eq(xrxe_tph_pair_init(&p, 2, IBV_QPT_UC, NULL, true), 0);
	for (i = 0; i < sizeof(abuf); i++)
		abuf[i] = (uint8_t)(i * 5 + 1);
	memset(bbuf, 0, sizeof(bbuf));
	lka = xrxe_tph_mr(&p.h.side[0], abuf, sizeof(abuf), 0, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, sizeof(bbuf), IBV_ACCESS_LOCAL_WRITE, 0);
	/* 40 messages of 4 packets; receive buffers of 8 KiB each, in order */
	for (i = 0; i < 40; i++) {
		struct xrxe_sge sb = { (uintptr_t)bbuf + 8192 * i, 8192, lkb };

		cr_assert_eq(xrxe_tph_post_recv(p.b, i, &sb, 1), 0);
	}
	p.h.pol.drop_ppm = 50000;
	for (i = 0; i < 40; i++) {
		struct xrxe_sge sa = { (uintptr_t)abuf + 4096 * i, 4000, lka };

		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = i, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1 }), 0);
		cr_assert(xrxe_tph_run(&p.h, SEC));
	}
	cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 128), 40);
	n = xrxe_tph_poll_cq(p.cb, wc, 128);
	cr_assert_lt(n, 40, "some messages were lost");
	cr_assert_gt(n, 20);
	/* every delivered message is complete and the right one */
	for (i = 0; i < (uint32_t)n; i++) {
		uint32_t slot = (uint32_t)wc[i].wr_id, k;

		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].byte_len, 4000);
		/* which message landed in this buffer: find it by content */
		for (k = 0; k < 40; k++)
			if (!memcmp(bbuf + 8192 * slot, abuf + 4096 * k, 4000))
				break;
		cr_assert_lt(k, 40, "buffer %u holds a partial or mixed message", slot);
	}
	cr_assert_eq(xrxe_tph_state(p.b), IBV_QPS_RTS);
	xrxe_tph_pair_fini(&p);
}

static void ud_pair(struct xrxe_tph_pair *p, bool ipv6, uint32_t *ah)
{
	struct xrxe_av av;

	p->h.ipv6 = false;
	cr_assert_eq(xrxe_tph_pair_init(p, 3, IBV_QPT_UD, NULL, true), 0);
	p->h.ipv6 = ipv6;
	xrxe_tph_av(&p->h, 0, &av);
	cr_assert_eq(xrxe_tp_ah_create(p->h.side[0].tp, p->h.side[0].pdn, &av, ah), 0);
}

static void ud_send(bool ipv6)
{
	struct xrxe_tph_pair p;
	uint32_t lka, lkb, ah, i;
	struct ibv_wc wc[8];

	ud_pair(&p, ipv6, &ah);
	for (i = 0; i < 4096; i++)
		abuf[i] = (uint8_t)(i + 9);
	memset(bbuf, 0xee, 8192);
	lka = xrxe_tph_mr(&p.h.side[0], abuf, 4096, 0, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, 8192, IBV_ACCESS_LOCAL_WRITE, 0);
	{
		/* GRH area and payload across two SGEs */
		struct xrxe_sge sb[2] = { { (uintptr_t)bbuf, 30, lkb },
					  { (uintptr_t)bbuf + 30, 4096, lkb } };
		struct xrxe_sge sa = { (uintptr_t)abuf, 1000, lka };

		cr_assert_eq(xrxe_tph_post_recv(p.b, 77, sb, 2), 0);
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 1, .opcode = IBV_WR_SEND_WITH_IMM, .ex = htonl(0xabcd), .sge = &sa,
			.nsge = 1, .ah = ah, .rqpn = p.b->qpn, .rqkey = p.conn.qkey }), 0);
	}
	cr_assert(xrxe_tph_run(&p.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].wr_id, 77);
	cr_assert_eq(wc[0].byte_len, 1040);
	cr_assert(wc[0].wc_flags & IBV_WC_GRH);
	cr_assert(wc[0].wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(wc[0].imm_data, htonl(0xabcd));
	cr_assert_eq(wc[0].src_qp, p.a->qpn);
	cr_assert_eq(wc[0].qp_num, p.b->qpn);
	cr_assert(!memcmp(bbuf + 40, abuf, 1000));
	if (ipv6) {
		uint8_t src[16];

		cr_assert_eq(bbuf[0] >> 4, 6);
		cr_assert_eq(bbuf[6], 17); /* next header UDP */
		inet_pton(AF_INET6, "fd00::1", src);
		cr_assert(!memcmp(bbuf + 8, src, 16));
	} else {
		static const uint8_t zero[20];

		cr_assert(!memcmp(bbuf, zero, 20), "IPv4: 20 zero bytes first");
		cr_assert_eq(bbuf[20], 0x45);
		cr_assert_eq(bbuf[29], 17);
		cr_assert_eq(bbuf[32], 10); /* saddr 10.0.0.1 */
		cr_assert_eq(bbuf[35], 1);
	}
	cr_assert_eq(bbuf[1040], 0xee, "nothing written past the datagram");
	xrxe_tph_pair_fini(&p);
}

Test(transport_ud, send_ipv4_grh)
{
	ud_send(false);
}

Test(transport_ud, send_ipv6_grh)
{
	ud_send(true);
}

Test(transport_ud, qkey_mismatch_and_small_buffer_dropped)
{
	struct xrxe_tph_pair p;
	uint32_t lka, lkb, ah;
	struct ibv_wc wc[8];
	struct xrxe_tp_stats st;

	ud_pair(&p, false, &ah);
	lka = xrxe_tph_mr(&p.h.side[0], abuf, 4096, 0, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, 8192, IBV_ACCESS_LOCAL_WRITE, 0);
	{
		struct xrxe_sge small = { (uintptr_t)bbuf, 100, lkb };
		struct xrxe_sge big = { (uintptr_t)bbuf, 4096, lkb };
		struct xrxe_sge sa = { (uintptr_t)abuf, 100, lka };

		cr_assert_eq(xrxe_tph_post_recv(p.b, 1, &small, 1), 0);
		/* wrong Q_Key: dropped by the receiver */
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 1, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = p.b->qpn, .rqkey = 0x999 }), 0);
		/* 100 + 40 > 100: dropped, the WQE stays */
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 2, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = p.b->qpn, .rqkey = p.conn.qkey }), 0);
		cr_assert(xrxe_tph_run(&p.h, SEC));
		cr_assert_eq(xrxe_tph_cq_count(p.cb), 0);
		xrxe_tp_get_stats(p.h.side[1].tp, &st);
		cr_assert_eq(st.rx_drop_bad_qkey, 1);
		/* 60 + 40 fits */
		sa.length = 60;
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 3, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = p.b->qpn, .rqkey = p.conn.qkey }), 0);
		cr_assert(xrxe_tph_run(&p.h, SEC));
		cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 8), 1);
		cr_assert_eq(wc[0].wr_id, 1);
		cr_assert_eq(wc[0].byte_len, 100);
		(void)big;
	}
	cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 8), 3);
	xrxe_tph_pair_fini(&p);
}

Test(transport_ud, above_mtu_is_an_error_and_sqe_recovers)
{
	struct xrxe_tph_pair p;
	uint32_t lka, lkb, ah;
	struct ibv_wc wc[8];
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_RTS };

	ud_pair(&p, false, &ah);
	lka = xrxe_tph_mr(&p.h.side[0], abuf, 8192, 0, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, 8192, IBV_ACCESS_LOCAL_WRITE, 0);
	{
		struct xrxe_sge sa = { (uintptr_t)abuf, 4097, lka };
		struct xrxe_sge sb = { (uintptr_t)bbuf, 8192, lkb };

		cr_assert_eq(xrxe_tph_post_recv(p.b, 1, &sb, 1), 0);
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 1, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = p.b->qpn, .rqkey = p.conn.qkey }), 0);
		sa.length = 4096;
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 2, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = p.b->qpn, .rqkey = p.conn.qkey }), 0);
		cr_assert(xrxe_tph_run(&p.h, SEC));
		cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 8), 2);
		cr_assert_eq(wc[0].status, IBV_WC_LOC_LEN_ERR);
		cr_assert_eq(wc[1].status, IBV_WC_WR_FLUSH_ERR);
		cr_assert_eq(xrxe_tph_state(p.a), IBV_QPS_SQE);
		cr_assert_eq(p.h.submitted, 0);
		/* SQE -> RTS and the queue works again */
		cr_assert_eq(xrxe_tp_qp_modify(p.h.side[0].tp, p.a->qp, &at, IBV_QP_STATE, NULL), 0);
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 3, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = p.b->qpn, .rqkey = p.conn.qkey }), 0);
		cr_assert(xrxe_tph_run(&p.h, SEC));
		cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 8), 1);
		cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
		cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 8), 1);
		cr_assert_eq(wc[0].byte_len, 4096 + 40);
	}
	/* a bad AH handle: LOC_QP_OP_ERR */
	{
		struct xrxe_sge sa = { (uintptr_t)abuf, 10, lka };

		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 4, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = 999,
			.rqpn = p.b->qpn, .rqkey = p.conn.qkey }), 0);
		cr_assert(xrxe_tph_run(&p.h, SEC));
		cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 8), 1);
		cr_assert_eq(wc[0].status, IBV_WC_LOC_QP_OP_ERR);
	}
	xrxe_tph_pair_fini(&p);
}
