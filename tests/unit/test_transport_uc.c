// SPDX-License-Identifier: MIT
/*
 * UC over the in-memory wire: SEND, SEND_WITH_IMM, RDMA_WRITE and
 * WRITE_WITH_IMM with no acknowledgements at all, and the loss rule of
 * docs/facts/rxe.md §2.3 (IBA 9.8.3, UC): a PSN gap drops the rest of the
 * message until the next FIRST or ONLY, whose receive WQE is the one the
 * broken message had started; never a partial delivery, never an error.
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

/* Drops the n-th request frame side 0 sends (1-based), once. */
struct drop_nth {
	unsigned seen, nth;
};

static bool drop_nth_req(void *arg, int from, const struct xrxe_pkt *pkt)
{
	struct drop_nth *d = arg;

	(void)pkt;
	return from == 0 && ++d->seen == d->nth;
}

/* A 3-packet SEND whose MIDDLE (or FIRST) is lost, then a complete SEND: the
 * first message leaves no trace, the second lands in the receive WQE the
 * first had started, and the QP stays in RTS. */
static void uc_gap(unsigned lost)
{
	struct xrxe_tph_pair p;
	struct drop_nth d = { .nth = lost };
	uint32_t lka, lkb, i;
	struct ibv_wc wc[8];
	struct xrxe_tp_qp_info info;

	cr_assert_eq(xrxe_tph_pair_init(&p, 7, IBV_QPT_UC, NULL, true), 0);
	for (i = 0; i < 8192; i++)
		abuf[i] = (uint8_t)(i * 7 + 3);
	memset(bbuf, 0, 16384);
	lka = xrxe_tph_mr(&p.h.side[0], abuf, 8192, 0, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, 16384, IBV_ACCESS_LOCAL_WRITE, 0);
	for (i = 0; i < 2; i++) {
		struct xrxe_sge sb = { (uintptr_t)bbuf + 8192 * i, 8192, lkb };

		cr_assert_eq(xrxe_tph_post_recv(p.b, 10 + i, &sb, 1), 0);
	}
	p.h.pol.filter = drop_nth_req;
	p.h.pol.filter_arg = &d;
	{
		/* path MTU 1024: 3000 bytes are FIRST, MIDDLE, LAST */
		struct xrxe_sge s1 = { (uintptr_t)abuf, 3000, lka };
		struct xrxe_sge s2 = { (uintptr_t)abuf + 4096, 2000, lka };

		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 1, .opcode = IBV_WR_SEND, .sge = &s1, .nsge = 1 }), 0);
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 2, .opcode = IBV_WR_SEND_WITH_IMM, .ex = htonl(0x5150),
			.sge = &s2, .nsge = 1 }), 0);
	}
	cr_assert(xrxe_tph_run(&p.h, SEC));
	cr_assert_eq(p.h.filtered, 1);
	/* the sender knows nothing of the loss */
	cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 8), 2);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[1].status, IBV_WC_SUCCESS);
	/* one receive completion: the second message, in the first WQE */
	cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].wr_id, 10);
	cr_assert_eq(wc[0].byte_len, 2000);
	cr_assert(wc[0].wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(wc[0].imm_data, htonl(0x5150));
	cr_assert(!memcmp(bbuf, abuf + 4096, 2000));
	/* nothing of message 1 beyond what message 2 overwrote */
	for (i = 2000; i < 8192; i++)
		if (bbuf[i])
			cr_assert_fail("byte %u of the dropped message was delivered", i);
	cr_assert_eq(xrxe_tph_state(p.b), IBV_QPS_RTS);
	/* UC never answers: the receiver sent nothing at all */
	for (i = 0; i < 256; i++)
		cr_assert_eq(p.h.opcode_count[1][i], 0);
	/* the next message is received normally into the second WQE */
	p.h.pol.filter = NULL;
	{
		struct xrxe_sge s3 = { (uintptr_t)abuf, 1500, lka };

		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 3, .opcode = IBV_WR_SEND, .sge = &s3, .nsge = 1 }), 0);
	}
	cr_assert(xrxe_tph_run(&p.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 8), 1);
	cr_assert_eq(wc[0].wr_id, 11);
	cr_assert_eq(wc[0].byte_len, 1500);
	cr_assert(!memcmp(bbuf + 8192, abuf, 1500));
	xrxe_tph_info(p.b, &info);
	cr_assert_eq(info.seq_naks_sent, 0);
	xrxe_tph_pair_fini(&p);
}

Test(transport_uc, gap_in_middle_drops_rest_of_message)
{
	uc_gap(2);
}

Test(transport_uc, lost_first_drops_whole_message)
{
	uc_gap(1);
}

/* A WRITE whose LAST packet is lost: the bytes already placed stay (UC gives
 * no guarantee about them) but WRITE_WITH_IMM never completes, and the next
 * WRITE_WITH_IMM does. */
Test(transport_uc, write_with_imm_gap)
{
	struct xrxe_tph_pair p;
	struct drop_nth d = { .nth = 3 };
	uint32_t lka, lkb;
	struct ibv_wc wc[8];

	cr_assert_eq(xrxe_tph_pair_init(&p, 8, IBV_QPT_UC, NULL, true), 0);
	memset(abuf, 0x5a, 8192);
	memset(bbuf, 0, 8192);
	lka = xrxe_tph_mr(&p.h.side[0], abuf, 8192, 0, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, 8192,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0);
	{
		struct xrxe_sge rb = { (uintptr_t)bbuf, 0, lkb };
		struct xrxe_sge s = { (uintptr_t)abuf, 3000, lka };

		cr_assert_eq(xrxe_tph_post_recv(p.b, 1, &rb, 1), 0);
		cr_assert_eq(xrxe_tph_post_recv(p.b, 2, &rb, 1), 0);
		p.h.pol.filter = drop_nth_req;
		p.h.pol.filter_arg = &d;
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 1, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .ex = htonl(1),
			.sge = &s, .nsge = 1, .raddr = (uintptr_t)bbuf, .rkey = lkb }), 0);
		cr_assert(xrxe_tph_run(&p.h, SEC));
		cr_assert_eq(xrxe_tph_cq_count(p.cb), 0);
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 2, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .ex = htonl(2),
			.sge = &s, .nsge = 1, .raddr = (uintptr_t)bbuf + 4096, .rkey = lkb }), 0);
		cr_assert(xrxe_tph_run(&p.h, SEC));
	}
	cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 8), 2);
	cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 8), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc[0].wr_id, 1, "the receive WQE the broken WRITE never consumed");
	cr_assert_eq(wc[0].imm_data, htonl(2));
	cr_assert_eq(wc[0].byte_len, 3000);
	cr_assert(!memcmp(bbuf + 4096, abuf, 3000));
	cr_assert_eq(xrxe_tph_state(p.b), IBV_QPS_RTS);
	xrxe_tph_pair_fini(&p);
}
