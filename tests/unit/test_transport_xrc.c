// SPDX-License-Identifier: MIT
/*
 * XRC over the in-memory wire (docs/xrc.md): an initiator QP on side 0, a
 * target QP and XRC SRQs of one XRC domain on side 1. SENDs land in the SRQ
 * the XRCETH names and complete on that SRQ's CQ; RDMA WRITE (with
 * immediate), READ and atomics reach memory of the SRQ's PD; every packet
 * uses the XRC opcodes (requests with an XRCETH, XRC responses); an SRQ
 * number that does not exist, or belongs to another domain, is NAKed as an
 * invalid request; the create / destroy rules of domains, SRQs and QPs.
 */
#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"

#define SEC 1000000000ull

static uint8_t abuf[1 << 16], bbuf[1 << 16], cbuf[1 << 16];

struct xrc_env {
	struct xrxe_tph h;
	struct xrxe_tph_conn conn;
	struct xrxe_tph_cq *ca, *cs1, *cs2; /* initiator's CQ; the two SRQs' CQs */
	struct xrxe_tph_qp *ini, *tgt;
	struct xrxe_tph_srq *srq1, *srq2;   /* both in xrcd */
	uint32_t xrcd, lka, lkb, lkc, pd2;
};

static void xrc_env_init(struct xrc_env *e)
{
	struct xrxe_tp *tp1;

	xrxe_tph_init(&e->h, 21, 1024);
	xrxe_tph_conn_default(&e->conn);
	e->conn.mtu = IBV_MTU_1024;
	tp1 = e->h.side[1].tp;
	cr_assert_eq(xrxe_tp_xrcd_alloc(tp1, &e->xrcd), 0);
	cr_assert_eq(xrxe_tp_pd_alloc(tp1, &e->pd2), 0);
	e->ca = xrxe_tph_cq_create(&e->h.side[0], 64);
	e->cs1 = xrxe_tph_cq_create(&e->h.side[1], 64);
	e->cs2 = xrxe_tph_cq_create(&e->h.side[1], 64);
	e->srq1 = xrxe_tph_srq_create_xrc(&e->h.side[1], e->h.side[1].pdn, e->xrcd, e->cs1, 16);
	/* the second SRQ is in another PD: its messages reach that PD's memory only */
	e->srq2 = xrxe_tph_srq_create_xrc(&e->h.side[1], e->pd2, e->xrcd, e->cs2, 16);
	e->ini = xrxe_tph_qp_create_xrc_ini(&e->h.side[0], e->ca, 32);
	e->tgt = xrxe_tph_qp_create_xrc_tgt(&e->h.side[1], e->xrcd);
	cr_assert_eq(xrxe_tph_connect(e->ini, e->tgt, &e->conn), 0);
	for (unsigned i = 0, x = 777; i < sizeof(abuf); i++) {
		x = x * 1103515245u + 12345u;
		abuf[i] = (uint8_t)(x >> 16);
	}
	memset(bbuf, 0, sizeof(bbuf));
	memset(cbuf, 0, sizeof(cbuf));
	e->lka = xrxe_tph_mr(&e->h.side[0], abuf, sizeof(abuf), IBV_ACCESS_LOCAL_WRITE, 0);
	/* bbuf in side 1's first PD (srq1's), cbuf in pd2 (srq2's) */
	e->lkb = xrxe_tph_mr(&e->h.side[1], bbuf, sizeof(bbuf),
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
			     0);
	{
		uint32_t rkey;

		cr_assert_eq(xrxe_tp_mr_reg(tp1, e->pd2, cbuf, (uintptr_t)cbuf, sizeof(cbuf),
					    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
					    &e->lkc, &rkey),
			     0);
	}
}

static void xrc_send(struct xrc_env *e, uint64_t wr_id, uint32_t opcode, uint32_t srqn,
		     uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct xrxe_sge s = { (uintptr_t)abuf + off, len, e->lka };

	cr_assert_eq(xrxe_tph_post_send(e->ini, &(struct xrxe_tph_send){
			     .wr_id = wr_id, .opcode = opcode, .sge = &s, .nsge = len ? 1 : 0,
			     .ex = htobe32(0xc0de0000u + (uint32_t)wr_id), .raddr = raddr,
			     .rkey = rkey, .xrc_srqn = srqn }),
		     0);
}

static void poll_one(struct xrxe_tph_cq *c, struct ibv_wc *wc)
{
	cr_assert_eq(xrxe_tph_poll_cq(c, wc, 1), 1, "one completion expected");
}

Test(xrc, send_lands_in_the_named_srq)
{
	struct xrc_env e;
	struct ibv_wc wc;
	const uint32_t len[] = { 0, 100, 1024, 3000 }; /* 3000: three packets */
	uint32_t n1, n2, i;

	xrc_env_init(&e);
	n1 = xrxe_tp_srq_num(e.srq1->srq);
	n2 = xrxe_tp_srq_num(e.srq2->srq);
	cr_assert(n1 && n2 && n1 != n2, "XRC SRQs have distinct non-zero numbers");
	for (i = 0; i < 4; i++) {
		struct xrxe_sge b = { (uintptr_t)bbuf + 4096 * i, 4096, e.lkb };
		struct xrxe_sge c = { (uintptr_t)cbuf + 4096 * i, 4096, e.lkc };

		cr_assert_eq(xrxe_tph_post_srq_recv(e.srq1, 100 + i, &b, 1), 0);
		cr_assert_eq(xrxe_tph_post_srq_recv(e.srq2, 200 + i, &c, 1), 0);
	}
	/* one initiator, one connection, alternating SRQs of the domain */
	for (i = 0; i < 4; i++) {
		xrc_send(&e, i, IBV_WR_SEND, n1, 64 * i, len[i], 0, 0);
		xrc_send(&e, 10 + i, IBV_WR_SEND, n2, 128 * i, len[i], 0, 0);
	}
	cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
	for (i = 0; i < 8; i++) {
		poll_one(e.ca, &wc);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.opcode, IBV_WC_SEND);
	}
	for (i = 0; i < 4; i++) {
		poll_one(e.cs1, &wc);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, 100 + i);
		cr_assert_eq(wc.qp_num, e.tgt->qpn, "the target QP received it");
		cr_assert_eq(wc.byte_len, len[i]);
		cr_assert_eq(memcmp(bbuf + 4096 * i, abuf + 64 * i, len[i]), 0);
		poll_one(e.cs2, &wc);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, 200 + i);
		cr_assert_eq(wc.byte_len, len[i]);
		cr_assert_eq(memcmp(cbuf + 4096 * i, abuf + 128 * i, len[i]), 0);
	}
	/* XRC opcodes only: requests with the XRCETH, XRC ACKs back */
	cr_assert_gt(e.h.opcode_count[0][XRXE_OPCODE(XRC, SEND_ONLY)], 0);
	cr_assert_gt(e.h.opcode_count[0][XRXE_OPCODE(XRC, SEND_FIRST)], 0);
	cr_assert_gt(e.h.opcode_count[0][XRXE_OPCODE(XRC, SEND_LAST)], 0);
	cr_assert_gt(e.h.opcode_count[1][XRXE_OPCODE(XRC, ACKNOWLEDGE)], 0);
	for (i = 0; i < 0x20; i++) {
		cr_assert_eq(e.h.opcode_count[0][i], 0, "no RC opcode %#x from the initiator", i);
		cr_assert_eq(e.h.opcode_count[1][i], 0, "no RC opcode %#x from the target", i);
	}
	xrxe_tph_fini(&e.h);
}

Test(xrc, rdma_and_atomics_reach_the_srq_pd)
{
	struct xrc_env e;
	struct ibv_wc wc;
	uint32_t n1 = 0, n2;
	uint64_t *word = (uint64_t *)(void *)(bbuf + 8192), *res = (uint64_t *)(void *)(abuf + 8);
	struct xrxe_sge b = { (uintptr_t)bbuf + 40000, 64, 0 };

	xrc_env_init(&e);
	n1 = xrxe_tp_srq_num(e.srq1->srq);
	n2 = xrxe_tp_srq_num(e.srq2->srq);
	b.lkey = e.lkb;
	/* WRITE 2500 bytes (three packets) through srq1's PD */
	xrc_send(&e, 1, IBV_WR_RDMA_WRITE, n1, 0, 2500, (uintptr_t)bbuf + 100, e.lkb);
	/* WRITE with immediate: takes a receive WQE of the named SRQ */
	cr_assert_eq(xrxe_tph_post_srq_recv(e.srq1, 55, &b, 1), 0);
	xrc_send(&e, 2, IBV_WR_RDMA_WRITE_WITH_IMM, n1, 3000, 200, (uintptr_t)bbuf + 5000,
		 e.lkb);
	cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
	poll_one(e.ca, &wc);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	poll_one(e.ca, &wc);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(bbuf + 100, abuf, 2500), 0);
	cr_assert_eq(memcmp(bbuf + 5000, abuf + 3000, 200), 0);
	poll_one(e.cs1, &wc);
	cr_assert_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc.wr_id, 55);
	cr_assert_eq(wc.imm_data, htobe32(0xc0de0002u));
	cr_assert_gt(e.h.opcode_count[0][XRXE_OPCODE(XRC, RDMA_WRITE_FIRST)], 0);

	/* READ 2100 bytes back into abuf + 20000 */
	memset(bbuf + 30000, 0x5a, 2100);
	{
		struct xrxe_sge s = { (uintptr_t)abuf + 20000, 2100, e.lka };

		cr_assert_eq(xrxe_tph_post_send(e.ini, &(struct xrxe_tph_send){
				     .wr_id = 3, .opcode = IBV_WR_RDMA_READ, .sge = &s, .nsge = 1,
				     .raddr = (uintptr_t)bbuf + 30000, .rkey = e.lkb, .xrc_srqn = n1 }),
			     0);
	}
	cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
	poll_one(e.ca, &wc);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_READ);
	for (int i = 0; i < 2100; i++)
		cr_assert_eq(abuf[20000 + i], 0x5a);
	cr_assert_gt(e.h.opcode_count[0][XRXE_OPCODE(XRC, RDMA_READ_REQUEST)], 0);
	cr_assert_gt(e.h.opcode_count[1][XRXE_OPCODE(XRC, RDMA_READ_RESPONSE_FIRST)], 0);
	cr_assert_gt(e.h.opcode_count[1][XRXE_OPCODE(XRC, RDMA_READ_RESPONSE_LAST)], 0);

	/* atomics: fetch-and-add, then a compare-and-swap that matches */
	*word = 40;
	{
		struct xrxe_sge s = { (uintptr_t)res, 8, e.lka };

		cr_assert_eq(xrxe_tph_post_send(e.ini, &(struct xrxe_tph_send){
				     .wr_id = 4, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .sge = &s,
				     .nsge = 1, .raddr = (uintptr_t)word, .rkey = e.lkb,
				     .compare_add = 2, .xrc_srqn = n1 }),
			     0);
		cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
		poll_one(e.ca, &wc);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(*res, 40);
		cr_assert_eq(*word, 42);
		cr_assert_eq(xrxe_tph_post_send(e.ini, &(struct xrxe_tph_send){
				     .wr_id = 5, .opcode = IBV_WR_ATOMIC_CMP_AND_SWP, .sge = &s,
				     .nsge = 1, .raddr = (uintptr_t)word, .rkey = e.lkb,
				     .compare_add = 42, .swap = 7, .xrc_srqn = n1 }),
			     0);
		cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
		poll_one(e.ca, &wc);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(*res, 42);
		cr_assert_eq(*word, 7);
	}
	cr_assert_gt(e.h.opcode_count[0][XRXE_OPCODE(XRC, FETCH_ADD)], 0);
	cr_assert_gt(e.h.opcode_count[0][XRXE_OPCODE(XRC, COMPARE_SWAP)], 0);
	cr_assert_eq(e.h.opcode_count[1][XRXE_OPCODE(XRC, ATOMIC_ACKNOWLEDGE)], 2);

	/* The same R_Key named through srq2 (another PD) is an access error:
	 * the SRQ's PD checks it, not some PD of the target QP. */
	xrc_send(&e, 6, IBV_WR_RDMA_WRITE, n2, 0, 8, (uintptr_t)bbuf, e.lkb);
	cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
	poll_one(e.ca, &wc);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	xrxe_tph_fini(&e.h);
}

static void bad_srqn(uint32_t (*pick)(struct xrc_env *e))
{
	struct xrc_env e;
	struct ibv_qp_attr attr;
	struct ibv_wc wc;
	struct xrxe_sge b = { (uintptr_t)bbuf, 4096, 0 };

	xrc_env_init(&e);
	b.lkey = e.lkb;
	cr_assert_eq(xrxe_tph_post_srq_recv(e.srq1, 1, &b, 1), 0);
	xrc_send(&e, 9, IBV_WR_SEND, pick(&e), 0, 32, 0, 0);
	cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
	/* IBA 9.7.5.2.x: NAK Invalid Request, a remote invalid request error
	 * at the initiator; the target QP goes to Error */
	poll_one(e.ca, &wc);
	cr_assert_eq(wc.status, IBV_WC_REM_INV_REQ_ERR);
	cr_assert_gt(e.h.syndrome_count[1][XRXE_AETH_NAK_INVALID_REQ], 0);
	cr_assert_eq(xrxe_tp_qp_query(e.h.side[1].tp, e.tgt->qp, &attr, NULL), 0);
	cr_assert_eq(attr.qp_state, IBV_QPS_ERR);
	cr_assert_eq(xrxe_tph_cq_count(e.cs1), 0, "no SRQ's WQE was touched");
	cr_assert_eq(bbuf[0], 0);
	cr_assert_eq(e.h.side[1].async_by_type[IBV_EVENT_QP_REQ_ERR], 1);
	xrxe_tph_fini(&e.h);
}

static uint32_t srqn_unknown(struct xrc_env *e)
{
	return xrxe_tp_srq_num(e->srq1->srq) + 1000;
}

static uint32_t srqn_other_domain(struct xrc_env *e)
{
	struct xrxe_tp *tp1 = e->h.side[1].tp;
	struct xrxe_tph_cq *c = xrxe_tph_cq_create(&e->h.side[1], 8);
	struct xrxe_tph_srq *other;
	uint32_t xrcd2;

	cr_assert_eq(xrxe_tp_xrcd_alloc(tp1, &xrcd2), 0);
	cr_assert_neq(xrcd2, e->xrcd);
	other = xrxe_tph_srq_create_xrc(&e->h.side[1], e->h.side[1].pdn, xrcd2, c, 8);
	return xrxe_tp_srq_num(other->srq);
}

static uint32_t srqn_zero(struct xrc_env *e)
{
	(void)e;
	return 0;
}

Test(xrc, unknown_srqn_is_naked_invalid_request)
{
	bad_srqn(srqn_unknown);
}

Test(xrc, srqn_of_another_domain_is_naked_invalid_request)
{
	bad_srqn(srqn_other_domain);
}

Test(xrc, srqn_zero_is_naked_invalid_request)
{
	bad_srqn(srqn_zero);
}

/* A basic SRQ has no number: a peer cannot reach it through XRC. */
Test(xrc, basic_srq_is_not_reachable)
{
	struct xrxe_tph h;
	struct xrxe_tph_srq *basic;
	uint32_t xrcd;

	xrxe_tph_init(&h, 3, 1024);
	basic = xrxe_tph_srq_create(&h.side[1], 8);
	cr_assert_eq(xrxe_tp_srq_num(basic->srq), 0);
	cr_assert_eq(xrxe_tp_xrcd_alloc(h.side[1].tp, &xrcd), 0);
	xrxe_tph_fini(&h);
}

Test(xrc, initiator_drops_requests_target_drops_responses)
{
	struct xrc_env e;
	struct xrxe_tp_stats st0, st1;
	struct xrxe_pkt_spec spec;
	struct xrxe_pkt pkt;
	struct xrxe_av av;
	uint8_t frame[256];
	int n;

	xrc_env_init(&e);
	/* an XRC SEND addressed to the initiator (side 0) */
	xrxe_tph_av(&e.h, 1, &av);
	memset(&spec, 0, sizeof(spec));
	spec.ip_version = 4;
	spec.saddr.v4 = av.saddr.v4;
	spec.daddr.v4 = av.daddr.v4;
	spec.ttl = 64;
	spec.sport = 0xc000;
	spec.pkey = 0xffff;
	spec.opcode = XRXE_OPCODE(XRC, SEND_ONLY);
	spec.dest_qp = e.ini->qpn;
	spec.xrc_srqn = xrxe_tp_srq_num(e.srq1->srq);
	n = xrxe_build(frame, sizeof(frame), &spec);
	cr_assert_gt(n, 0);
	cr_assert_eq(xrxe_parse(frame, (size_t)n, 0, &pkt), XRXE_PARSE_OK);
	xrxe_tp_get_stats(e.h.side[0].tp, &st0);
	xrxe_tp_rx(e.h.side[0].tp, &pkt, e.h.now);
	xrxe_tp_get_stats(e.h.side[0].tp, &st1);
	cr_assert_eq(st1.rx_drop_bad_opcode, st0.rx_drop_bad_opcode + 1);
	/* an XRC ACK and an RC SEND addressed to the target (side 1) */
	xrxe_tph_av(&e.h, 0, &av);
	spec.saddr.v4 = av.saddr.v4;
	spec.daddr.v4 = av.daddr.v4;
	spec.dest_qp = e.tgt->qpn;
	xrxe_tp_get_stats(e.h.side[1].tp, &st0);
	spec.opcode = XRXE_OPCODE(XRC, ACKNOWLEDGE);
	n = xrxe_build(frame, sizeof(frame), &spec);
	cr_assert_eq(xrxe_parse(frame, (size_t)n, 0, &pkt), XRXE_PARSE_OK);
	xrxe_tp_rx(e.h.side[1].tp, &pkt, e.h.now);
	spec.opcode = XRXE_OPCODE(RC, SEND_ONLY);
	n = xrxe_build(frame, sizeof(frame), &spec);
	cr_assert_eq(xrxe_parse(frame, (size_t)n, 0, &pkt), XRXE_PARSE_OK);
	xrxe_tp_rx(e.h.side[1].tp, &pkt, e.h.now);
	xrxe_tp_get_stats(e.h.side[1].tp, &st1);
	cr_assert_eq(st1.rx_drop_bad_opcode, st0.rx_drop_bad_opcode + 2);
	xrxe_tph_fini(&e.h);
}

Test(xrc, objects_and_their_rules)
{
	struct xrc_env e;
	struct xrxe_tp *tp1;
	struct xrxe_tp_qp_init init;
	struct xrxe_tp_qp *qp;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc;
	struct xrxe_sge b = { (uintptr_t)bbuf, 4096, 0 };
	uint32_t qpn, n1;

	xrc_env_init(&e);
	tp1 = e.h.side[1].tp;
	b.lkey = e.lkb;
	/* the domain is in use (SRQs, the target) */
	cr_assert_eq(xrxe_tp_xrcd_free(tp1, e.xrcd), -EBUSY);
	cr_assert_eq(xrxe_tp_xrcd_free(tp1, 999), -EINVAL);
	/* a target in a domain that does not exist; a target with queues */
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_XRC_RECV;
	init.xrcdn = 77;
	cr_assert_eq(xrxe_tp_qp_create(tp1, &init, &qpn, &qp), -EINVAL);
	init.xrcdn = e.xrcd;
	init.cap.max_recv_wr = 4;
	cr_assert_eq(xrxe_tp_qp_create(tp1, &init, &qpn, &qp), -EINVAL);
	/* an RC QP cannot use an XRC SRQ */
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.pdn = e.h.side[1].pdn;
	init.send_cq = init.recv_cq = e.cs1->cq;
	init.sq = e.ini->sq; /* any valid ring: the create fails before using it */
	init.sq_slots = e.ini->sq_slots;
	init.srq = e.srq1->srq;
	cr_assert_eq(xrxe_tp_qp_create(tp1, &init, &qpn, &qp), -EINVAL);
	/* ibv_open_qp finds the target by number in its domain only */
	cr_assert_eq(xrxe_tp_xrc_tgt_find(tp1, e.tgt->qpn, e.xrcd), e.tgt->qp);
	cr_assert_null(xrxe_tp_xrc_tgt_find(tp1, e.tgt->qpn, e.xrcd + 1));
	cr_assert_null(xrxe_tp_xrc_tgt_find(e.h.side[0].tp, e.ini->qpn, e.xrcd));
	/* query names the XRC types */
	cr_assert_eq(xrxe_tp_qp_query(tp1, e.tgt->qp, NULL, &ia), 0);
	cr_assert_eq(ia.qp_type, IBV_QPT_XRC_RECV);
	cr_assert_eq(xrxe_tp_qp_query(e.h.side[0].tp, e.ini->qp, NULL, &ia), 0);
	cr_assert_eq(ia.qp_type, IBV_QPT_XRC_SEND);
	/* an initiator has no FLUSH / ATOMIC WRITE */
	{
		uint64_t v = 1;

		cr_assert_eq(xrxe_tph_post_send(e.ini, &(struct xrxe_tph_send){
				     .wr_id = 1, .opcode = IBV_WR_ATOMIC_WRITE,
				     .flags = IBV_SEND_INLINE, .inl = &v, .inl_len = 8,
				     .raddr = (uintptr_t)bbuf, .rkey = e.lkb }),
			     0);
		cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
		poll_one(e.ca, &wc);
		cr_assert_eq(wc.status, IBV_WC_LOC_QP_OP_ERR);
	}
	/* (the initiator went to Error with that: a fresh pair for the rest) */
	xrxe_tph_fini(&e.h);

	xrc_env_init(&e);
	tp1 = e.h.side[1].tp;
	b.lkey = e.lkb;
	n1 = xrxe_tp_srq_num(e.srq1->srq);
	cr_assert_eq(xrxe_tph_post_srq_recv(e.srq1, 1, &b, 1), 0);
	xrc_send(&e, 1, IBV_WR_SEND, n1, 0, 16, 0, 0);
	cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
	poll_one(e.cs1, &wc);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	/* the target used srq1; destroying it is allowed (the target lets
	 * go), and its number then names nothing: NAK */
	cr_assert_eq(xrxe_tp_srq_destroy(tp1, e.srq1->srq), 0);
	e.h.srqs[0] = e.h.srqs[--e.h.nsrqs]; /* srq1 was the first: fini must not destroy it again */
	free(e.srq1->ring);
	free(e.srq1);
	poll_one(e.ca, &wc);
	xrc_send(&e, 2, IBV_WR_SEND, n1, 0, 16, 0, 0);
	cr_assert(xrxe_tph_run(&e.h, 10 * SEC));
	poll_one(e.ca, &wc);
	cr_assert_eq(wc.status, IBV_WC_REM_INV_REQ_ERR);
	xrxe_tph_fini(&e.h);
}
