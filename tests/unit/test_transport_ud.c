// SPDX-License-Identifier: MIT
/*
 * UD over the in-memory wire: datagrams with the 40-byte GRH area exactly as
 * rxe writes it (IPv4: 20 zero bytes then the IPv4 header; IPv6: the IPv6
 * header), src_qp and IBV_WC_GRH, Q_Key checks including the privileged bit,
 * AH handles, sends above the MTU, multicast groups.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"

#define SEC 1000000000ull

static uint8_t abuf[1 << 18], bbuf[1 << 18];

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

Test(transport_ud, qkey_mismatch_small_buffer_and_no_wqe_dropped_and_counted)
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
		cr_assert_eq(st.rx_drop_ud_too_long, 1);
		cr_assert_eq(st.rx_drop_ud_no_wqe, 0);
		/* 60 + 40 fits */
		sa.length = 60;
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 3, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = p.b->qpn, .rqkey = p.conn.qkey }), 0);
		cr_assert(xrxe_tph_run(&p.h, SEC));
		cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 8), 1);
		cr_assert_eq(wc[0].wr_id, 1);
		cr_assert_eq(wc[0].byte_len, 100);
		/* no receive WQE left: dropped and counted, the sender unaffected */
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 4, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = p.b->qpn, .rqkey = p.conn.qkey }), 0);
		cr_assert(xrxe_tph_run(&p.h, SEC));
		cr_assert_eq(xrxe_tph_cq_count(p.cb), 0);
		xrxe_tp_get_stats(p.h.side[1].tp, &st);
		cr_assert_eq(st.rx_drop_ud_no_wqe, 1);
		cr_assert_eq(st.rx_drop_ud_too_long, 1);
		(void)big;
	}
	cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 8), 4);
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

/* Records the DETH Q_Key of every UD request side 0 sends. */
struct qkeys {
	unsigned n;
	uint32_t v[8];
};

static bool record_qkey(void *arg, int from, const struct xrxe_pkt *pkt)
{
	struct qkeys *q = arg;
	const struct xrxe_deth *deth = xrxe_pkt_hdr(pkt, XRXE_HDR_DETH);

	if (from == 0 && deth && q->n < 8)
		q->v[q->n++] = xrxe_deth_qkey(deth);
	return false;
}

/* IBA 10.2.4 / C10-15: a WR Q_Key with the high-order bit set is replaced by
 * the sending QP's own Q_Key; any other value goes out as it is, and the
 * receiver drops a mismatch. */
Test(transport_ud, privileged_qkey_uses_the_qp_qkey)
{
	struct xrxe_tph_pair p;
	struct qkeys q = { 0 };
	uint32_t lka, lkb, ah, i;
	struct ibv_wc wc[8];
	static const uint32_t wr_qkey[] = { 0x80000000u, 0x80000005u, 0x11111111u, 0x22222222u };

	ud_pair(&p, false, &ah);
	p.h.pol.filter = record_qkey;
	p.h.pol.filter_arg = &q;
	lka = xrxe_tph_mr(&p.h.side[0], abuf, 4096, 0, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, 8192, IBV_ACCESS_LOCAL_WRITE, 0);
	for (i = 0; i < 4; i++) {
		struct xrxe_sge sb = { (uintptr_t)bbuf + 1024 * i, 1024, lkb };
		struct xrxe_sge sa = { (uintptr_t)abuf, 64, lka };

		cr_assert_eq(xrxe_tph_post_recv(p.b, i, &sb, 1), 0);
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = i, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = p.b->qpn, .rqkey = wr_qkey[i] }), 0);
	}
	cr_assert(xrxe_tph_run(&p.h, SEC));
	cr_assert_eq(q.n, 4);
	cr_assert_eq(q.v[0], p.conn.qkey, "0x80000000 -> the QP's Q_Key");
	cr_assert_eq(q.v[1], p.conn.qkey, "any value with the high bit -> the QP's Q_Key");
	cr_assert_eq(q.v[2], 0x11111111u);
	cr_assert_eq(q.v[3], 0x22222222u);
	cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 8), 4);
	/* three match the receiver's Q_Key (0x11111111), the last is dropped */
	cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 8), 3);
	for (i = 0; i < 3; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].src_qp, p.a->qpn);
		cr_assert(wc[i].wc_flags & IBV_WC_GRH);
		cr_assert_eq(wc[i].byte_len, 64 + 40);
	}
	xrxe_tph_pair_fini(&p);
}

/* UD multicast: QPN 0xFFFFFF to a group reaches every attached QP (and only
 * those), each with its own Q_Key check; detach stops delivery; only UD QPs
 * and multicast GIDs attach. */
static void mcast_case(bool ipv6)
{
	struct xrxe_tph_pair p;
	struct xrxe_tph_qp *b2, *b3;
	struct xrxe_tp_stats st;
	struct xrxe_av av;
	union ibv_gid grp, uni;
	uint32_t lka, lkb, ah, i;
	struct ibv_wc wc[16];
	bool edge;

	ud_pair(&p, ipv6, &ah);
	b2 = xrxe_tph_qp_create(&p.h.side[1], IBV_QPT_UD, p.cb, p.cb, 16, 16, true);
	b3 = xrxe_tph_qp_create(&p.h.side[1], IBV_QPT_UD, p.cb, p.cb, 16, 16, true);
	{
		struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					  .qkey = p.conn.qkey };
		struct xrxe_tph_qp *qs[2] = { b2, b3 };

		for (i = 0; i < 2; i++) {
			at.qp_state = IBV_QPS_INIT;
			cr_assert_eq(xrxe_tp_qp_modify(p.h.side[1].tp, qs[i]->qp, &at,
						       IBV_QP_STATE | IBV_QP_PKEY_INDEX |
							       IBV_QP_PORT | IBV_QP_QKEY, NULL), 0);
			at.qp_state = IBV_QPS_RTR;
			cr_assert_eq(xrxe_tp_qp_modify(p.h.side[1].tp, qs[i]->qp, &at,
						       IBV_QP_STATE, NULL), 0);
		}
	}
	memset(&grp, 0, sizeof(grp));
	if (ipv6) {
		inet_pton(AF_INET6, "ff0e::4791:1", grp.raw);
	} else {
		grp.raw[10] = grp.raw[11] = 0xff;
		inet_pton(AF_INET, "239.1.2.3", grp.raw + 12);
	}
	memset(&uni, 0, sizeof(uni));
	uni.raw[10] = uni.raw[11] = 0xff;
	inet_pton(AF_INET, "10.0.0.2", uni.raw + 12);
	cr_assert(xrxe_tp_gid_is_mcast(&grp));
	cr_assert(!xrxe_tp_gid_is_mcast(&uni));
	cr_assert_eq(xrxe_tp_mcast_attach(p.h.side[1].tp, p.b->qp, &uni, &edge), -EINVAL);
	cr_assert_eq(xrxe_tp_mcast_attach(p.h.side[1].tp, p.b->qp, &grp, &edge), 0);
	cr_assert(edge, "first member: the caller joins the group");
	cr_assert_eq(xrxe_tp_mcast_attach(p.h.side[1].tp, b2->qp, &grp, &edge), 0);
	cr_assert(!edge);
	cr_assert_eq(xrxe_tp_mcast_attach(p.h.side[1].tp, b2->qp, &grp, &edge), -EEXIST);
	/* b3 is not attached */

	/* an AH to the group */
	xrxe_tph_av(&p.h, 0, &av);
	if (ipv6)
		memcpy(&av.daddr.v6, grp.raw, 16);
	else
		memcpy(&av.daddr.v4, grp.raw + 12, 4);
	cr_assert_eq(xrxe_tp_ah_create(p.h.side[0].tp, p.h.side[0].pdn, &av, &ah), 0);

	lka = xrxe_tph_mr(&p.h.side[0], abuf, 4096, 0, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, 16384, IBV_ACCESS_LOCAL_WRITE, 0);
	for (i = 0; i < 100; i++)
		abuf[i] = (uint8_t)(200 - i);
	{
		struct xrxe_sge s0 = { (uintptr_t)bbuf, 1024, lkb };
		struct xrxe_sge s1 = { (uintptr_t)bbuf + 1024, 1024, lkb };
		struct xrxe_sge s2 = { (uintptr_t)bbuf + 2048, 1024, lkb };
		struct xrxe_sge sa = { (uintptr_t)abuf, 100, lka };

		cr_assert_eq(xrxe_tph_post_recv(p.b, 100, &s0, 1), 0);
		cr_assert_eq(xrxe_tph_post_recv(b2, 200, &s1, 1), 0);
		cr_assert_eq(xrxe_tph_post_recv(b3, 300, &s2, 1), 0);
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 1, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = XRXE_MCAST_QPN, .rqkey = p.conn.qkey }), 0);
	}
	cr_assert(xrxe_tph_run(&p.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 16), 2);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].byte_len, 140);
		cr_assert_eq(wc[i].src_qp, p.a->qpn);
		cr_assert(wc[i].wr_id == 100 || wc[i].wr_id == 200);
		cr_assert_eq(wc[i].qp_num, wc[i].wr_id == 100 ? p.b->qpn : b2->qpn);
	}
	cr_assert(!memcmp(bbuf + 40, abuf, 100));
	cr_assert(!memcmp(bbuf + 1024 + 40, abuf, 100));
	if (!ipv6)
		cr_assert(!memcmp(bbuf + 20 + 16, grp.raw + 12, 4), "GRH: destination = group");
	else
		cr_assert(!memcmp(bbuf + 24, grp.raw, 16), "GRH: destination = group");

	/* detach b: only b2 gets the next one; the group stays */
	cr_assert_eq(xrxe_tp_mcast_detach(p.h.side[1].tp, p.b->qp, &grp, &edge), 0);
	cr_assert(!edge);
	cr_assert_eq(xrxe_tp_mcast_detach(p.h.side[1].tp, p.b->qp, &grp, &edge), -ENOENT);
	{
		struct xrxe_sge s0 = { (uintptr_t)bbuf + 4096, 1024, lkb };
		struct xrxe_sge s1 = { (uintptr_t)bbuf + 5120, 1024, lkb };
		struct xrxe_sge sa = { (uintptr_t)abuf, 10, lka };

		cr_assert_eq(xrxe_tph_post_recv(p.b, 101, &s0, 1), 0);
		cr_assert_eq(xrxe_tph_post_recv(b2, 201, &s1, 1), 0);
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 2, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = XRXE_MCAST_QPN, .rqkey = p.conn.qkey }), 0);
	}
	cr_assert(xrxe_tph_run(&p.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 16), 1);
	cr_assert_eq(wc[0].wr_id, 201);
	/* destroying the last member empties the group: later datagrams are
	 * counted as "no group" */
	xrxe_tph_qp_destroy(b2);
	{
		struct xrxe_sge sa = { (uintptr_t)abuf, 10, lka };

		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 3, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1, .ah = ah,
			.rqpn = XRXE_MCAST_QPN, .rqkey = p.conn.qkey }), 0);
	}
	cr_assert(xrxe_tph_run(&p.h, SEC));
	cr_assert_eq(xrxe_tph_cq_count(p.cb), 0);
	xrxe_tp_get_stats(p.h.side[1].tp, &st);
	cr_assert_eq(st.rx_drop_no_mcast, 1);
	cr_assert_eq(st.mcast_grps, 0);
	cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 16), 3);
	xrxe_tph_pair_fini(&p);
}

Test(transport_ud, multicast_ipv4)
{
	mcast_case(false);
}

Test(transport_ud, multicast_ipv6)
{
	mcast_case(true);
}

Test(transport_ud, multicast_attach_only_ud)
{
	struct xrxe_tph_pair p;
	union ibv_gid grp;
	bool edge;

	cr_assert_eq(xrxe_tph_pair_init(&p, 4, IBV_QPT_RC, NULL, true), 0);
	memset(&grp, 0, sizeof(grp));
	grp.raw[0] = 0xff;
	cr_assert_eq(xrxe_tp_mcast_attach(p.h.side[1].tp, p.b->qp, &grp, &edge), -EINVAL);
	xrxe_tph_pair_fini(&p);
}
