// SPDX-License-Identifier: MIT
/*
 * RC behaviour and error paths (docs/facts/rxe.md §2.2-§2.10): NAKs and their
 * completions on both sides, RNR and transport retries with their timing,
 * flushes, unsignalled WRs, CQ overrun, duplicate READ and atomic replay,
 * SEND_WITH_INV, fences, rd_atomic depth, the 128-PSN window, AckReq
 * placement, ACKs coalesced per receive burst and the UDP source port.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>

#include "tp_harness.h"

#define SEC 1000000000ull
#define MS 1000000ull

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static uint8_t abuf[1 << 20], bbuf[1 << 20];

struct env {
	struct xrxe_tph_pair p;
	uint32_t lka, lkb; /* abuf / bbuf, lkey = rkey, iova = address */
};

static void env_init(struct env *e, const struct xrxe_tph_conn *c, bool sig_all)
{
	unsigned i;

	cr_assert_eq(xrxe_tph_pair_init(&e->p, 42, IBV_QPT_RC, c, sig_all), 0);
	for (i = 0; i < sizeof(abuf); i++) {
		abuf[i] = (uint8_t)(i * 7 + 1);
		bbuf[i] = (uint8_t)(i * 13 + 5);
	}
	e->lka = xrxe_tph_mr(&e->p.h.side[0], abuf, sizeof(abuf), RW | IBV_ACCESS_REMOTE_ATOMIC, 0);
	e->lkb = xrxe_tph_mr(&e->p.h.side[1], bbuf, sizeof(bbuf), RW | IBV_ACCESS_REMOTE_ATOMIC, 0);
}

static struct xrxe_sge asge(struct env *e, uint32_t off, uint32_t len)
{
	return (struct xrxe_sge){ (uintptr_t)abuf + off, len, e->lka };
}

static struct xrxe_sge bsge(struct env *e, uint32_t off, uint32_t len)
{
	return (struct xrxe_sge){ (uintptr_t)bbuf + off, len, e->lkb };
}

static int post(struct env *e, uint64_t id, uint32_t op, uint32_t flags, uint32_t off, uint32_t len,
		uint64_t raddr, uint32_t rkey)
{
	struct xrxe_sge s = asge(e, off, len);
	struct xrxe_tph_send w = {
		.wr_id = id, .opcode = op, .flags = flags, .sge = &s, .nsge = 1,
		.raddr = raddr, .rkey = rkey,
	};

	return xrxe_tph_post_send(e->p.a, &w);
}

static int recv_b(struct env *e, uint64_t id, uint32_t off, uint32_t len)
{
	struct xrxe_sge s = bsge(e, off, len);

	return xrxe_tph_post_recv(e->p.b, id, &s, 1);
}

static int poll_all(struct xrxe_tph_cq *c, struct ibv_wc *wc)
{
	return xrxe_tph_poll_cq(c, wc, 64);
}

/* ------------------------------------------------------------------------- */

Test(transport_rc, send_and_unsignalled)
{
	struct env e;
	struct ibv_wc wc[64];

	env_init(&e, NULL, false);
	cr_assert_eq(recv_b(&e, 7, 0, 4096), 0);
	cr_assert_eq(recv_b(&e, 8, 4096, 4096), 0);
	cr_assert_eq(post(&e, 1, IBV_WR_SEND, 0, 0, 100, 0, 0), 0); /* unsignalled */
	cr_assert_eq(post(&e, 2, IBV_WR_SEND, IBV_SEND_SIGNALED, 100, 3000, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1, "unsignalled WR produced no CQE");
	cr_assert_eq(wc[0].wr_id, 2);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].byte_len, 3000);
	cr_assert_eq(wc[0].qp_num, e.p.a->qpn);
	cr_assert_eq(poll_all(e.p.cb, wc), 2);
	cr_assert_eq(wc[0].wr_id, 7);
	cr_assert_eq(wc[0].byte_len, 100);
	cr_assert_eq(wc[1].wr_id, 8);
	cr_assert_eq(wc[1].byte_len, 3000);
	cr_assert(!memcmp(bbuf, abuf, 100));
	cr_assert(!memcmp(bbuf + 4096, abuf + 100, 3000));
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, bad_rkey_write)
{
	struct env e;
	struct ibv_wc wc[64];

	env_init(&e, NULL, false);
	cr_assert_eq(recv_b(&e, 70, 0, 64), 0);
	cr_assert_eq(post(&e, 1, IBV_WR_RDMA_WRITE, 0, 0, 64, (uintptr_t)bbuf, e.lkb ^ 0x80), 0);
	cr_assert_eq(post(&e, 2, IBV_WR_SEND, 0, 0, 64, 0, 0), 0);
	cr_assert_eq(post(&e, 3, IBV_WR_SEND, IBV_SEND_SIGNALED, 0, 64, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	/* requester: the error (unsignalled WR, still reported), then flushes */
	cr_assert_eq(poll_all(e.p.ca, wc), 3);
	cr_assert_eq(wc[0].wr_id, 1);
	cr_assert_eq(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(wc[0].opcode, IBV_WC_RDMA_WRITE);
	cr_assert_eq(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc[2].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc[2].wr_id, 3);
	cr_assert_eq(xrxe_tph_state(e.p.a), IBV_QPS_ERR);
	/* responder: NAK 0x62, QP in ERR, async access error, RQ flushed */
	cr_assert_eq(e.p.h.syndrome_count[1][XRXE_AETH_NAK_REM_ACCESS], 1);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_ERR);
	cr_assert_eq(e.p.h.side[1].last_async, IBV_EVENT_QP_ACCESS_ERR);
	cr_assert_eq(e.p.h.side[1].last_async_obj, e.p.b);
	cr_assert_eq(poll_all(e.p.cb, wc), 1);
	cr_assert_eq(wc[0].wr_id, 70);
	cr_assert_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	/* posted after the error: flushed too */
	cr_assert_eq(post(&e, 4, IBV_WR_SEND, 0, 0, 8, 0, 0), 0);
	cr_assert_eq(recv_b(&e, 71, 0, 64), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].wr_id, 4);
	cr_assert_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(poll_all(e.p.cb, wc), 1);
	cr_assert_eq(wc[0].wr_id, 71);
	cr_assert_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, bad_rkey_read_and_range)
{
	struct env e;
	struct ibv_wc wc[64];

	env_init(&e, NULL, true);
	/* in range of the key but past the end of the region */
	cr_assert_eq(post(&e, 1, IBV_WR_RDMA_READ, 0, 0, 64,
			  (uintptr_t)bbuf + sizeof(bbuf) - 32, e.lkb), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(wc[0].opcode, IBV_WC_RDMA_READ);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_ERR);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, access_flags_not_allowed)
{
	struct env e;
	struct xrxe_tph_conn c;
	struct ibv_wc wc[64];

	xrxe_tph_conn_default(&c);
	c.access = IBV_ACCESS_REMOTE_READ; /* no remote write on the QPs */
	env_init(&e, &c, true);
	cr_assert_eq(post(&e, 1, IBV_WR_RDMA_WRITE, 0, 0, 64, (uintptr_t)bbuf, e.lkb), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_REM_INV_REQ_ERR);
	cr_assert_eq(e.p.h.syndrome_count[1][XRXE_AETH_NAK_INVALID_REQ], 1);
	cr_assert_eq(e.p.h.side[1].last_async, IBV_EVENT_QP_REQ_ERR);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, length_error)
{
	struct env e;
	struct ibv_wc wc[64];

	env_init(&e, NULL, true);
	cr_assert_eq(recv_b(&e, 9, 0, 100), 0);
	cr_assert_eq(recv_b(&e, 10, 0, 100), 0);
	cr_assert_eq(post(&e, 1, IBV_WR_SEND, 0, 0, 3000, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_REM_INV_REQ_ERR);
	cr_assert_eq(poll_all(e.p.cb, wc), 2);
	cr_assert_eq(wc[0].wr_id, 9);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_LEN_ERR);
	cr_assert_eq(wc[1].wr_id, 10);
	cr_assert_eq(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_ERR);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, rnr_retry_exceeded)
{
	struct env e;
	struct xrxe_tph_conn c;
	struct xrxe_tp_qp_info ia, ib;
	struct ibv_wc wc[64];
	uint64_t t0;

	xrxe_tph_conn_default(&c);
	c.rnr_retry = 3;
	c.min_rnr_timer = 14; /* 1.28 ms (IBA table 45) */
	env_init(&e, &c, false);
	t0 = e.p.h.now;
	cr_assert_eq(post(&e, 1, IBV_WR_SEND, 0, 0, 3000, 0, 0), 0); /* 3 packets */
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
	xrxe_tph_info(e.p.a, &ia);
	xrxe_tph_info(e.p.b, &ib);
	/* 1 + rnr_retry RNR NAKs, rnr_retry waits of the responder's timer */
	cr_assert_eq(ia.rnr_naks_rcvd, 4);
	cr_assert_eq(ib.rnr_naks_sent, 4);
	cr_assert_eq(e.p.h.now - t0, 3 * 1280000ull, "elapsed %lu", (unsigned long)(e.p.h.now - t0));
	/* the rest of the message never drew a sequence NAK */
	cr_assert_eq(ib.seq_naks_sent, 0);
	cr_assert_eq(xrxe_tph_state(e.p.a), IBV_QPS_ERR);
	/* the responder is fine */
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_RTS);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, rnr_infinite_then_recv)
{
	struct env e;
	struct xrxe_tph_conn c;
	struct xrxe_tp_qp_info ia;
	struct ibv_wc wc[64];

	xrxe_tph_conn_default(&c);
	c.rnr_retry = 7; /* infinite */
	c.min_rnr_timer = 1; /* 10 us */
	c.retry_cnt = 1;
	env_init(&e, &c, true);
	cr_assert_eq(post(&e, 1, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 0, 5000, (uintptr_t)bbuf + 8192,
			  e.lkb), 0);
	cr_assert(!xrxe_tph_run(&e.p.h, 20 * MS)); /* still retrying */
	xrxe_tph_info(e.p.a, &ia);
	cr_assert_gt(ia.rnr_naks_rcvd, 100);
	cr_assert_eq(xrxe_tph_cq_count(e.p.ca), 0);
	cr_assert_eq(recv_b(&e, 5, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(poll_all(e.p.cb, wc), 1);
	cr_assert_eq(wc[0].wr_id, 5);
	cr_assert_eq(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc[0].byte_len, 5000);
	cr_assert(!memcmp(bbuf + 8192, abuf, 5000));
	xrxe_tph_pair_fini(&e.p);
}

static bool drop_all(void *arg, int from, const struct xrxe_pkt *pkt)
{
	(void)arg;
	(void)from;
	(void)pkt;
	return true;
}

static void lost_peer(uint8_t retry_cnt)
{
	struct env e;
	struct xrxe_tph_conn c;
	struct xrxe_tp_qp_info ia;
	struct ibv_wc wc[64];
	uint64_t t0;

	xrxe_tph_conn_default(&c);
	c.retry_cnt = retry_cnt;
	c.timeout = 10; /* 4.096 us * 2^10 = 4.194304 ms */
	env_init(&e, &c, true);
	e.p.h.pol.filter = drop_all;
	t0 = e.p.h.now;
	cr_assert_eq(post(&e, 1, IBV_WR_RDMA_WRITE, 0, 0, 100, (uintptr_t)bbuf, e.lkb), 0);
	cr_assert_eq(post(&e, 2, IBV_WR_RDMA_READ, 0, 0, 100, (uintptr_t)bbuf, e.lkb), 0);
	cr_assert(xrxe_tph_run(&e.p.h, 100 * SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 2);
	cr_assert_eq(wc[0].wr_id, 1);
	cr_assert_eq(wc[0].status, IBV_WC_RETRY_EXC_ERR);
	cr_assert_eq(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	xrxe_tph_info(e.p.a, &ia);
	/* IBA: retry_cnt retries, then the error: 1 + retry_cnt timeouts */
	cr_assert_eq(ia.timeouts, 1u + retry_cnt);
	cr_assert_eq(ia.retransmits, retry_cnt);
	cr_assert_eq(e.p.h.now - t0, (1ull + retry_cnt) * (4096ull << 10));
	cr_assert_eq(e.p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_ONLY)], 1u + retry_cnt);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, lost_peer_retry_cnt_3)
{
	lost_peer(3);
}

Test(transport_rc, lost_peer_retry_cnt_7_is_not_infinite)
{
	lost_peer(7);
}

/* --- adaptive retransmission (rto.c) ------------------------------------------ */

/* Drops side 0's frames with BTH PSN psn, the first n times. */
struct drop_psn {
	uint32_t psn;
	unsigned n;
};

static bool drop_psn_n(void *arg, int from, const struct xrxe_pkt *pkt)
{
	struct drop_psn *d = arg;

	if (from != 0 || !d->n || xrxe_bth_psn(xrxe_pkt_bth(pkt)) != d->psn)
		return false;
	d->n--;
	return true;
}

/* One WRITE that completes, so the requester has a round-trip sample. */
static void warm_up(struct env *e)
{
	struct ibv_wc wc[4];
	struct xrxe_tp_qp_info ia;

	cr_assert_eq(post(e, 1, IBV_WR_RDMA_WRITE, 0, 0, 100, (uintptr_t)bbuf, e->lkb), 0);
	cr_assert(xrxe_tph_run(&e->p.h, SEC));
	cr_assert_eq(poll_all(e->p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	xrxe_tph_info(e->p.a, &ia);
	cr_assert_gt(ia.srtt_ns, 0, "no round-trip sample after a completed WRITE");
}

/* A WRITE of npkts 1 KiB packets (MTU 1024, timeout 14: 67 ms) whose packet
 * lost_idx is dropped the first ndrops times it is sent, after a warm-up
 * that gives the requester a round-trip sample. Checks that the WRITE
 * lands intact and that the drops all happened; ia gets A's counters.
 * Returns the time the WRITE took. */
static uint64_t write_losing(unsigned npkts, unsigned lost_idx, unsigned ndrops, bool fixed,
			     struct xrxe_tp_qp_info *ia)
{
	struct env e;
	struct xrxe_tph_conn c;
	struct ibv_wc wc[4];
	struct drop_psn d;
	uint64_t t0;

	xrxe_tph_conn_default(&c);
	c.fixed_ack_timeout = fixed;
	env_init(&e, &c, true);
	warm_up(&e);
	d = (struct drop_psn){ .psn = c.psn[0] + 1 + lost_idx, .n = ndrops };
	e.p.h.pol.filter = drop_psn_n;
	e.p.h.pol.filter_arg = &d;
	t0 = e.p.h.now;
	cr_assert_eq(post(&e, 2, IBV_WR_RDMA_WRITE, 0, 0, npkts * 1024, (uintptr_t)bbuf + 8192,
			  e.lkb),
		     0);
	cr_assert(xrxe_tph_run(&e.p.h, 10 * SEC));
	cr_assert_eq(d.n, 0, "every planned drop happened");
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert(!memcmp(bbuf + 8192, abuf, npkts * 1024));
	xrxe_tph_info(e.p.a, ia);
	t0 = e.p.h.now - t0;
	xrxe_tph_pair_fini(&e.p);
	return t0;
}

/* The third packet of a 5-packet WRITE is lost, and so is its resend after
 * the sequence NAK. The responder may NAK only once (IBA 9.7.5.1.x), so
 * only a timer repairs the second loss. */
static uint64_t lost_retransmission(bool fixed, struct xrxe_tp_qp_info *ia)
{
	return write_losing(5, 2, 2, fixed, ia);
}

Test(transport_rc, adaptive_rexmit_repairs_a_lost_retransmission)
{
	struct xrxe_tp_qp_info ia;
	uint64_t took = lost_retransmission(false, &ia);

	/* a probe round (rto.c): the oldest PSN (the lost one, accepted now)
	 * and the newest, which draws a second NAK for the PSN after it;
	 * both NAKs' retries charged retry_cnt, the probes did not */
	cr_assert_eq(ia.seq_naks_rcvd, 2);
	cr_assert_eq(ia.retransmits, 2);
	cr_assert_eq(ia.timeouts, 0);
	cr_assert_eq(ia.fast_retransmits, 1);
	cr_assert_eq(ia.probes, 2);
	/* the harness wire takes no time: srtt ~0, so the floor of 2 ms */
	cr_assert_geq(took, 2 * MS);
	cr_assert_lt(took, 3 * MS, "took %" PRIu64 " ns", took);
}

Test(transport_rc, fixed_rexmit_waits_for_the_local_ack_timeout)
{
	struct xrxe_tp_qp_info ia;
	uint64_t took = lost_retransmission(true, &ia);

	cr_assert_eq(ia.seq_naks_rcvd, 1);
	cr_assert_eq(ia.retransmits, 2);
	cr_assert_eq(ia.timeouts, 1);
	cr_assert_eq(ia.fast_retransmits, 0);
	cr_assert_geq(took, 4096ull << 14);
}

/* The last packet of a WRITE of npkts packets is lost: nothing follows, so
 * no NAK comes. */
static uint64_t lost_last_packet(unsigned npkts, struct xrxe_tp_qp_info *ia)
{
	uint64_t took = write_losing(npkts, npkts - 1, 1, false, ia);

	cr_assert_eq(ia->seq_naks_rcvd, 0);
	return took;
}

/* Tail loss with a tail outstanding (5 PSNs): a probe repairs it. */
Test(transport_rc, adaptive_rexmit_repairs_tail_loss)
{
	struct xrxe_tp_qp_info ia;
	uint64_t took = lost_last_packet(5, &ia);

	cr_assert_eq(ia.timeouts, 0);
	cr_assert_eq(ia.retransmits, 0);
	cr_assert_eq(ia.fast_retransmits, 1);
	cr_assert_lt(took, 3 * MS, "took %" PRIu64 " ns", took);
}

/* With a window outstanding (64 PSNs) and no NAK, silence may be a slow
 * responder or a lost tail: no early go-back-N of the whole window, two
 * probes whose answer says what is missing (here the last packet, which
 * the second probe is). tests/unit/test_transport_loss.c has the rest. */
Test(transport_rc, adaptive_rexmit_probes_a_silent_window)
{
	struct xrxe_tp_qp_info ia;
	uint64_t took = lost_last_packet(64, &ia);

	cr_assert_eq(ia.timeouts, 0);
	cr_assert_eq(ia.fast_retransmits, 1);
	cr_assert_eq(ia.resent_packets, 2, "the probes, not the window");
	cr_assert_lt(took, 3 * MS, "took %" PRIu64 " ns", took);
}

/* A dead peer after a good start: fast retries happen between the Local
 * ACK Timeouts, but the timeouts alone charge retry_cnt and the WR fails
 * exactly when it would without them (IBA 9.7.6.1.3, C9-...: lost_peer). */
Test(transport_rc, adaptive_rexmit_leaves_the_retry_budget_to_the_timer)
{
	struct env e;
	struct xrxe_tph_conn c;
	struct xrxe_tp_qp_info ia;
	struct ibv_wc wc[4];
	const uint8_t retry_cnt = 3;
	uint64_t t0, fast0, writes0;

	xrxe_tph_conn_default(&c);
	c.retry_cnt = retry_cnt;
	c.timeout = 12; /* 16.8 ms: fast timers of 2, 4 and 8 ms fit in */
	env_init(&e, &c, true);
	warm_up(&e);
	xrxe_tph_info(e.p.a, &ia);
	fast0 = ia.fast_retransmits;
	writes0 = e.p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_ONLY)];
	e.p.h.pol.filter = drop_all;
	t0 = e.p.h.now;
	cr_assert_eq(post(&e, 2, IBV_WR_RDMA_WRITE, 0, 0, 100, (uintptr_t)bbuf, e.lkb), 0);
	cr_assert(xrxe_tph_run(&e.p.h, 100 * SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_RETRY_EXC_ERR);
	xrxe_tph_info(e.p.a, &ia);
	cr_assert_eq(ia.timeouts, 1u + retry_cnt);
	cr_assert_eq(ia.retransmits, retry_cnt);
	cr_assert_eq(e.p.h.now - t0, (1ull + retry_cnt) * (4096ull << 12));
	/* 2, 6 and 14 ms after the post (one PSN outstanding: a tail; the
	 * timer doubles); a 16 ms one is more than half the timeout, and
	 * there is no progress to reset it: the later periods have none */
	cr_assert_eq(ia.fast_retransmits - fast0, 3);
	cr_assert_eq(e.p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_ONLY)] - writes0,
		     1u + retry_cnt + 3);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, lost_peer_retry_cnt_0)
{
	lost_peer(0);
}

Test(transport_rc, bad_lkey_loc_prot_err)
{
	struct env e;
	struct ibv_wc wc[64];
	struct xrxe_sge s;

	env_init(&e, NULL, false);
	cr_assert_eq(recv_b(&e, 9, 0, 100), 0);
	s = asge(&e, 0, 64);
	s.lkey ^= 0x1; /* wrong key byte */
	cr_assert_eq(xrxe_tph_post_send(e.p.a, &(struct xrxe_tph_send){
		.wr_id = 1, .opcode = IBV_WR_SEND, .sge = &s, .nsge = 1 }), 0);
	cr_assert_eq(post(&e, 2, IBV_WR_SEND, 0, 0, 8, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 2);
	cr_assert_eq(wc[0].wr_id, 1);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_PROT_ERR, "unsignalled error WR reported");
	cr_assert_eq(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(xrxe_tph_state(e.p.a), IBV_QPS_ERR);
	/* nothing reached the wire */
	cr_assert_eq(e.p.h.submitted, 0);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, local_errors)
{
	struct env e;
	struct ibv_wc wc[64];
	struct xrxe_send_wqe hdr;
	struct xrxe_sge s[8];
	unsigned i;

	/* a read into memory without local write: LOC_PROT_ERR */
	env_init(&e, NULL, true);
	{
		uint32_t ro = xrxe_tph_mr(&e.p.h.side[0], abuf + 8192, 4096, 0, 0);
		struct xrxe_sge r = { (uintptr_t)abuf + 8192, 64, ro };

		cr_assert_eq(xrxe_tph_post_send(e.p.a, &(struct xrxe_tph_send){
			.wr_id = 1, .opcode = IBV_WR_RDMA_READ, .sge = &r, .nsge = 1,
			.raddr = (uintptr_t)bbuf, .rkey = e.lkb }), 0);
	}
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_PROT_ERR);
	xrxe_tph_pair_fini(&e.p);

	/* num_sge above the QP's cap: LOC_LEN_ERR, never an out-of-bounds read */
	env_init(&e, NULL, true);
	memset(&hdr, 0, sizeof(hdr));
	hdr.wr_id = 2;
	hdr.opcode = IBV_WR_SEND;
	hdr.num_sge = 1000;
	for (i = 0; i < 8; i++)
		s[i] = asge(&e, 0, 8);
	cr_assert_eq(xrxe_tph_post_send_raw(e.p.a, &hdr, s, sizeof(s)), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_LEN_ERR);
	xrxe_tph_pair_fini(&e.p);

	/* inline_len above the cap */
	env_init(&e, NULL, true);
	hdr.wr_id = 3;
	hdr.num_sge = 0;
	hdr.send_flags = IBV_SEND_INLINE;
	hdr.inline_len = 100000;
	cr_assert_eq(xrxe_tph_post_send_raw(e.p.a, &hdr, s, sizeof(s)), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_LEN_ERR);
	xrxe_tph_pair_fini(&e.p);

	/* an opcode RC does not have: LOC_QP_OP_ERR */
	env_init(&e, NULL, true);
	hdr.wr_id = 4;
	hdr.send_flags = 0;
	hdr.inline_len = 0;
	hdr.opcode = 0x7777;
	cr_assert_eq(xrxe_tph_post_send_raw(e.p.a, &hdr, NULL, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_QP_OP_ERR);
	xrxe_tph_pair_fini(&e.p);

	/* an atomic whose local SGE is not 8 bytes: LOC_LEN_ERR */
	env_init(&e, NULL, true);
	cr_assert_eq(post(&e, 5, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, 4, (uintptr_t)bbuf, e.lkb), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_LOC_LEN_ERR);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, misaligned_atomic)
{
	struct env e;
	struct ibv_wc wc[64];

	env_init(&e, NULL, true);
	cr_assert_eq(post(&e, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, 8, (uintptr_t)bbuf + 4, e.lkb),
		     0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_REM_INV_REQ_ERR);
	cr_assert_eq(wc[0].opcode, IBV_WC_FETCH_ADD);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, invalid_opcode_sequence)
{
	struct env e;
	struct xrxe_pkt_spec spec;
	uint8_t payload[1024];
	struct xrxe_tp_qp_info ib;

	env_init(&e, NULL, true);
	cr_assert_eq(recv_b(&e, 9, 0, 4096), 0);
	memset(payload, 0xab, sizeof(payload));
	/* a SEND_MIDDLE at the expected PSN with no message in progress */
	xrxe_tph_spec(&e.p.h, 0, e.p.b->qpn, &spec);
	spec.opcode = XRXE_OPCODE(RC, SEND_MIDDLE);
	spec.psn = e.p.conn.psn[0];
	spec.payload = payload;
	spec.payload_len = 1024;
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 1, &spec), 0);
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_eq(e.p.h.syndrome_count[1][XRXE_AETH_NAK_INVALID_REQ], 1);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_ERR);
	xrxe_tph_pair_fini(&e.p);

	/* a SEND_FIRST followed by a WRITE_MIDDLE */
	env_init(&e, NULL, true);
	cr_assert_eq(recv_b(&e, 9, 0, 4096), 0);
	xrxe_tph_spec(&e.p.h, 0, e.p.b->qpn, &spec);
	spec.opcode = XRXE_OPCODE(RC, SEND_FIRST);
	spec.psn = e.p.conn.psn[0];
	spec.payload = payload;
	spec.payload_len = 1024;
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 1, &spec), 0);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_RTS);
	spec.opcode = XRXE_OPCODE(RC, RDMA_WRITE_MIDDLE);
	spec.psn++;
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 1, &spec), 0);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_ERR);
	cr_assert_eq(e.p.h.syndrome_count[1][XRXE_AETH_NAK_INVALID_REQ], 1);
	{
		struct ibv_wc wc[4];

		/* the receive WQE in use completes with the error */
		cr_assert_eq(poll_all(e.p.cb, wc), 1);
		cr_assert_eq(wc[0].status, IBV_WC_REM_INV_REQ_ERR);
	}
	xrxe_tph_pair_fini(&e.p);

	/* FIRST whose payload is not the path MTU: length error, NAK 0x61 */
	env_init(&e, NULL, true);
	cr_assert_eq(recv_b(&e, 9, 0, 4096), 0);
	xrxe_tph_spec(&e.p.h, 0, e.p.b->qpn, &spec);
	spec.opcode = XRXE_OPCODE(RC, SEND_FIRST);
	spec.psn = e.p.conn.psn[0];
	spec.payload = payload;
	spec.payload_len = 1000;
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 1, &spec), 0);
	cr_assert_eq(e.p.h.syndrome_count[1][XRXE_AETH_NAK_INVALID_REQ], 1);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_ERR);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, psn_sequence_nak_once)
{
	struct env e;
	struct xrxe_pkt_spec spec;
	uint8_t payload[16] = { 0 };
	struct xrxe_tp_qp_info ib;
	int i;

	env_init(&e, NULL, true);
	for (i = 0; i < 4; i++)
		cr_assert_eq(recv_b(&e, 9, 0, 4096), 0);
	xrxe_tph_spec(&e.p.h, 0, e.p.b->qpn, &spec);
	spec.opcode = XRXE_OPCODE(RC, SEND_ONLY);
	spec.payload = payload;
	spec.payload_len = 16;
	/* three packets beyond the expected PSN: one NAK, then silence */
	for (i = 1; i <= 3; i++) {
		spec.psn = e.p.conn.psn[0] + (uint32_t)i;
		cr_assert_eq(xrxe_tph_inject(&e.p.h, 1, &spec), 0);
	}
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_eq(ib.seq_naks_sent, 1);
	cr_assert_eq(e.p.h.syndrome_count[1][XRXE_AETH_NAK_PSN_SEQ], 1);
	/* the expected PSN re-arms it */
	spec.psn = e.p.conn.psn[0];
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 1, &spec), 0);
	spec.psn = e.p.conn.psn[0] + 5;
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 1, &spec), 0);
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_eq(ib.seq_naks_sent, 2);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_RTS);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, modify_to_err_flushes)
{
	struct env e;
	struct ibv_wc wc[64];
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	int i;

	env_init(&e, NULL, false);
	e.p.h.pol.filter = drop_all;
	for (i = 0; i < 5; i++)
		cr_assert_eq(post(&e, (uint64_t)i, IBV_WR_SEND, 0, 0, 100, 0, 0), 0);
	for (i = 0; i < 3; i++)
		cr_assert_eq(recv_b(&e, 100 + (uint64_t)i, 0, 100), 0);
	cr_assert(!xrxe_tph_run(&e.p.h, 10 * MS));
	cr_assert_eq(xrxe_tp_qp_modify(e.p.h.side[0].tp, e.p.a->qp, &at, IBV_QP_STATE, NULL), 0);
	cr_assert_eq(xrxe_tp_qp_modify(e.p.h.side[1].tp, e.p.b->qp, &at, IBV_QP_STATE, NULL), 0);
	cr_assert_eq(poll_all(e.p.ca, wc), 5);
	for (i = 0; i < 5; i++) {
		cr_assert_eq(wc[i].wr_id, (uint64_t)i);
		cr_assert_eq(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		cr_assert_eq(wc[i].qp_num, e.p.a->qpn);
	}
	cr_assert_eq(poll_all(e.p.cb, wc), 3);
	for (i = 0; i < 3; i++)
		cr_assert_eq(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	/* no timer left behind */
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, recv_cq_overrun)
{
	struct xrxe_tph h;
	struct xrxe_tph_conn c;
	struct xrxe_tph_cq *ca, *cb;
	struct xrxe_tph_qp *a, *b;
	uint32_t lka, lkb;
	struct ibv_wc wc[8];
	int i;

	xrxe_tph_init(&h, 3, 4096);
	ca = xrxe_tph_cq_create(&h.side[0], 64);
	cb = xrxe_tph_cq_create(&h.side[1], 4); /* capacity 3 */
	a = xrxe_tph_qp_create(&h.side[0], IBV_QPT_RC, ca, ca, 16, 16, true);
	b = xrxe_tph_qp_create(&h.side[1], IBV_QPT_RC, cb, cb, 16, 16, false);
	xrxe_tph_conn_default(&c);
	cr_assert_eq(xrxe_tph_connect(a, b, &c), 0);
	lka = xrxe_tph_mr(&h.side[0], abuf, 4096, RW, 0);
	lkb = xrxe_tph_mr(&h.side[1], bbuf, 4096, RW, 0);
	for (i = 0; i < 6; i++) {
		struct xrxe_sge s = { (uintptr_t)bbuf, 64, lkb };

		cr_assert_eq(xrxe_tph_post_recv(b, (uint64_t)i, &s, 1), 0);
	}
	for (i = 0; i < 6; i++) {
		struct xrxe_sge s = { (uintptr_t)abuf, 64, lka };

		cr_assert_eq(xrxe_tph_post_send(a, &(struct xrxe_tph_send){
			.wr_id = (uint64_t)i, .opcode = IBV_WR_SEND, .sge = &s, .nsge = 1 }), 0);
	}
	cr_assert(xrxe_tph_run(&h, 100 * SEC));
	/* the CQ's error, then the QP's (IBA 11.4.2.1: catastrophic for it) */
	cr_assert_eq(h.side[1].async_by_type[IBV_EVENT_CQ_ERR], 1);
	cr_assert_eq(h.side[1].async_by_type[IBV_EVENT_QP_FATAL], 1);
	cr_assert_eq(h.side[1].last_async, IBV_EVENT_QP_FATAL);
	cr_assert_eq(h.side[1].last_async_obj, b);
	cr_assert(cb->ring->flags & XRXE_RING_F_OVERRUN);
	cr_assert_eq(xrxe_tph_state(b), IBV_QPS_ERR);
	cr_assert_eq(xrxe_tph_poll_cq(cb, wc, 8), 3);
	/* the requester saw the first three succeed, then no answer */
	cr_assert_eq(xrxe_tph_poll_cq(ca, wc, 8), 6);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[2].status, IBV_WC_SUCCESS);
	cr_assert_neq(wc[4].status, IBV_WC_SUCCESS);
	xrxe_tph_fini(&h);
}

Test(transport_rc, cq_notify)
{
	struct env e;
	struct ibv_wc wc[64];

	env_init(&e, NULL, true);
	/* NEXT: fires once, then disarmed */
	e.p.cb->ring->notify = XRXE_CQ_NOTIFY_NEXT;
	cr_assert_eq(recv_b(&e, 1, 0, 64), 0);
	cr_assert_eq(recv_b(&e, 2, 0, 64), 0);
	cr_assert_eq(post(&e, 1, IBV_WR_SEND, 0, 0, 8, 0, 0), 0);
	cr_assert_eq(post(&e, 2, IBV_WR_SEND, 0, 0, 8, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(e.p.h.side[1].cq_events, 1);
	cr_assert_eq(e.p.cb->ring->notify, XRXE_CQ_NOTIFY_NONE);
	poll_all(e.p.cb, wc);
	/* SOLICITED: an unsolicited CQE does not fire, a solicited one does */
	e.p.cb->ring->notify = XRXE_CQ_NOTIFY_SOLICITED;
	cr_assert_eq(recv_b(&e, 3, 0, 64), 0);
	cr_assert_eq(recv_b(&e, 4, 0, 64), 0);
	cr_assert_eq(post(&e, 3, IBV_WR_SEND, 0, 0, 8, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(e.p.h.side[1].cq_events, 1);
	cr_assert_eq(e.p.cb->ring->notify, XRXE_CQ_NOTIFY_SOLICITED);
	cr_assert_eq(post(&e, 4, IBV_WR_SEND, IBV_SEND_SOLICITED, 0, 8, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(e.p.h.side[1].cq_events, 2);
	cr_assert_eq(e.p.cb->ring->notify, XRXE_CQ_NOTIFY_NONE);
	xrxe_tph_pair_fini(&e.p);
}

/* --- duplicates -------------------------------------------------------------- */

struct drop_n {
	uint8_t opcode;
	int from;
	unsigned skip, n; /* let skip through, then drop n */
};

static bool drop_op(void *arg, int from, const struct xrxe_pkt *pkt)
{
	struct drop_n *d = arg;

	if (from != d->from || pkt->opcode != d->opcode)
		return false;
	if (d->skip) {
		d->skip--;
		return false;
	}
	if (d->n) {
		d->n--;
		return true;
	}
	return false;
}

Test(transport_rc, atomic_replay)
{
	struct env e;
	struct ibv_wc wc[64];
	struct drop_n d = { XRXE_OPCODE(RC, ATOMIC_ACKNOWLEDGE), 1, 0, 1 };
	struct xrxe_tp_qp_info ib;
	uint64_t *ctr = (uint64_t *)(void *)(bbuf + 4096), *res = (uint64_t *)(void *)(abuf + 4096);

	env_init(&e, NULL, true);
	*ctr = 1000;
	*res = 0;
	e.p.h.pol.filter = drop_op;
	e.p.h.pol.filter_arg = &d;
	cr_assert_eq(post(&e, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 4096, 8, (uintptr_t)ctr, e.lkb), 0);
	{
		/* compare_add of the FAA */
		struct xrxe_sge s = asge(&e, 4096 + 8, 8);

		(void)s;
	}
	cr_assert(xrxe_tph_run(&e.p.h, 10 * SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].opcode, IBV_WC_FETCH_ADD);
	cr_assert_eq(*res, 1000, "replay returns the original value");
	cr_assert_eq(*ctr, 1000, "FAA of 0 (compare_add 0)");
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_eq(ib.duplicates, 1);
	cr_assert_eq(e.p.h.opcode_count[0][XRXE_OPCODE(RC, FETCH_ADD)], 2);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, atomic_replay_executes_once)
{
	struct env e;
	struct ibv_wc wc[64];
	struct drop_n d = { XRXE_OPCODE(RC, ATOMIC_ACKNOWLEDGE), 1, 0, 2 };
	uint64_t *ctr = (uint64_t *)(void *)(bbuf + 4096), *res = (uint64_t *)(void *)(abuf + 4096);
	struct xrxe_sge s;

	env_init(&e, NULL, true);
	*ctr = 5;
	*res = 0;
	e.p.h.pol.filter = drop_op;
	e.p.h.pol.filter_arg = &d;
	s = asge(&e, 4096, 8);
	cr_assert_eq(xrxe_tph_post_send(e.p.a, &(struct xrxe_tph_send){
		.wr_id = 1, .opcode = IBV_WR_ATOMIC_CMP_AND_SWP, .sge = &s, .nsge = 1,
		.raddr = (uintptr_t)ctr, .rkey = e.lkb, .compare_add = 5, .swap = 77 }), 0);
	s = asge(&e, 4096 + 8, 8);
	cr_assert_eq(xrxe_tph_post_send(e.p.a, &(struct xrxe_tph_send){
		.wr_id = 2, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .sge = &s, .nsge = 1,
		.raddr = (uintptr_t)ctr, .rkey = e.lkb, .compare_add = 3 }), 0);
	cr_assert(xrxe_tph_run(&e.p.h, 10 * SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 2);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[1].status, IBV_WC_SUCCESS);
	cr_assert_eq(res[0], 5);
	cr_assert_eq(res[1], 77);
	cr_assert_eq(*ctr, 80, "each atomic executed exactly once");
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, read_replay)
{
	struct env e;
	struct ibv_wc wc[64];
	/* drop the 3rd response packet once: the requester asks for the rest */
	struct drop_n d = { XRXE_OPCODE(RC, RDMA_READ_RESPONSE_MIDDLE), 1, 1, 1 };
	struct xrxe_tp_qp_info ib;

	env_init(&e, NULL, true);
	e.p.h.pol.filter = drop_op;
	e.p.h.pol.filter_arg = &d;
	memset(abuf, 0, 8192);
	cr_assert_eq(post(&e, 1, IBV_WR_RDMA_READ, 0, 0, 6000, (uintptr_t)bbuf + 100, e.lkb), 0);
	cr_assert(xrxe_tph_run(&e.p.h, 10 * SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].byte_len, 6000);
	cr_assert(!memcmp(abuf, bbuf + 100, 6000));
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_eq(ib.duplicates, 1);
	/* the retry asked for the remaining bytes only: 6 packets, 4 resent */
	cr_assert_eq(e.p.h.opcode_count[1][XRXE_OPCODE(RC, RDMA_READ_RESPONSE_FIRST)], 2);
	cr_assert_eq(e.p.h.opcode_count[1][XRXE_OPCODE(RC, RDMA_READ_RESPONSE_MIDDLE)], 4 + 2);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, read_replay_not_subset_dropped)
{
	struct env e;
	struct xrxe_pkt_spec spec;
	struct xrxe_tp_qp_info ib;
	uint64_t before;

	env_init(&e, NULL, true);
	cr_assert_eq(post(&e, 1, IBV_WR_RDMA_READ, 0, 0, 2048, (uintptr_t)bbuf, e.lkb), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	before = e.p.h.submitted;
	/* a duplicate READ for more than the original: dropped */
	xrxe_tph_spec(&e.p.h, 0, e.p.b->qpn, &spec);
	spec.opcode = XRXE_OPCODE(RC, RDMA_READ_REQUEST);
	spec.psn = e.p.conn.psn[0];
	spec.reth.va = (uintptr_t)bbuf;
	spec.reth.rkey = e.lkb;
	spec.reth.len = 4096;
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 1, &spec), 0);
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_eq(ib.duplicates, 1);
	cr_assert_eq(e.p.h.submitted, before);
	/* a subset: replayed */
	spec.psn = e.p.conn.psn[0] + 1;
	spec.reth.va = (uintptr_t)bbuf + 1024;
	spec.reth.len = 1024;
	cr_assert_eq(xrxe_tph_inject(&e.p.h, 1, &spec), 0);
	cr_assert_eq(e.p.h.submitted, before + 1);
	cr_assert_eq(e.p.h.opcode_count[1][XRXE_OPCODE(RC, RDMA_READ_RESPONSE_ONLY)], 1);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_RTS);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, duplicate_send_reacked)
{
	struct env e;
	struct ibv_wc wc[64];
	/* lose the ACK of a SEND: the retransmission is a duplicate, re-ACKed,
	 * and the receive completes once */
	struct drop_n d = { XRXE_OPCODE(RC, ACKNOWLEDGE), 1, 0, 1 };
	struct xrxe_tp_qp_info ia, ib;

	env_init(&e, NULL, true);
	e.p.h.pol.filter = drop_op;
	e.p.h.pol.filter_arg = &d;
	cr_assert_eq(recv_b(&e, 1, 0, 4096), 0);
	cr_assert_eq(recv_b(&e, 2, 0, 4096), 0);
	cr_assert_eq(post(&e, 1, IBV_WR_SEND, 0, 0, 2500, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, 10 * SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(poll_all(e.p.cb, wc), 1);
	xrxe_tph_info(e.p.a, &ia);
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_eq(ia.timeouts, 1);
	cr_assert_eq(ib.duplicates, 3);
	xrxe_tph_pair_fini(&e.p);
}

/* --- SEND_WITH_INV ------------------------------------------------------------- */

Test(transport_rc, send_with_invalidate)
{
	struct env e;
	struct ibv_wc wc[64];
	uint32_t mr2;
	struct xrxe_sge s;

	env_init(&e, NULL, true);
	mr2 = xrxe_tph_mr(&e.p.h.side[1], bbuf + 65536, 4096, RW, 0);
	cr_assert_eq(recv_b(&e, 1, 0, 4096), 0);
	s = asge(&e, 0, 100);
	cr_assert_eq(xrxe_tph_post_send(e.p.a, &(struct xrxe_tph_send){
		.wr_id = 1, .opcode = IBV_WR_SEND_WITH_INV, .sge = &s, .nsge = 1, .ex = mr2 }), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].opcode, IBV_WC_SEND);
	cr_assert_eq(poll_all(e.p.cb, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert(wc[0].wc_flags & IBV_WC_WITH_INV);
	cr_assert_eq(wc[0].invalidated_rkey, mr2);
	/* the invalidated rkey no longer grants access */
	cr_assert_eq(post(&e, 2, IBV_WR_RDMA_WRITE, 0, 0, 64, (uintptr_t)bbuf + 65536, mr2), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	xrxe_tph_pair_fini(&e.p);

	/* invalidating a key that does not exist: REM_INV_REQ_ERR at the
	 * responder's receive, QP in ERR (class J) */
	env_init(&e, NULL, true);
	cr_assert_eq(recv_b(&e, 1, 0, 4096), 0);
	s = asge(&e, 0, 100);
	cr_assert_eq(xrxe_tph_post_send(e.p.a, &(struct xrxe_tph_send){
		.wr_id = 1, .opcode = IBV_WR_SEND_WITH_INV, .sge = &s, .nsge = 1, .ex = 0xdead00 }), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.cb, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_REM_INV_REQ_ERR);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_ERR);
	xrxe_tph_pair_fini(&e.p);
}

/* --- ordering rules on the wire ------------------------------------------------ */

struct watch {
	struct env *e;
	unsigned reads_out, max_reads_out;
	unsigned send_before_read_done;
	uint32_t unacked, max_unacked;
	uint32_t ackreq_psn[64];
	unsigned nackreq;
	uint32_t first_psn;
};

static bool watch_fn(void *arg, int from, const struct xrxe_pkt *pkt)
{
	struct watch *w = arg;
	uint8_t op = pkt->opcode;

	if (from == 0 && op == XRXE_OPCODE(RC, RDMA_READ_REQUEST)) {
		w->reads_out++;
		if (w->reads_out > w->max_reads_out)
			w->max_reads_out = w->reads_out;
	}
	if (from == 1 && (op == XRXE_OPCODE(RC, RDMA_READ_RESPONSE_LAST) ||
			  op == XRXE_OPCODE(RC, RDMA_READ_RESPONSE_ONLY)))
		w->reads_out--;
	if (from == 0 && op == XRXE_OPCODE(RC, SEND_ONLY) && w->reads_out)
		w->send_before_read_done++;
	if (from == 0 && (pkt->op->flags & XRXE_OPF_WRITE)) {
		if (xrxe_bth_ackreq(xrxe_pkt_bth(pkt)) && w->nackreq < 64)
			w->ackreq_psn[w->nackreq++] =
				xrxe_psn_sub(xrxe_bth_psn(xrxe_pkt_bth(pkt)), w->first_psn);
	}
	return false;
}

Test(transport_rc, fence_and_rd_atomic_depth)
{
	struct env e;
	struct xrxe_tph_conn c;
	struct ibv_wc wc[64];
	struct watch w = { 0 };
	int i;

	xrxe_tph_conn_default(&c);
	c.max_rd_atomic = 2;
	env_init(&e, &c, true);
	w.e = &e;
	e.p.h.pol.filter = watch_fn;
	e.p.h.pol.filter_arg = &w;
	cr_assert_eq(recv_b(&e, 1, 0, 4096), 0);
	for (i = 0; i < 5; i++)
		cr_assert_eq(post(&e, (uint64_t)i, IBV_WR_RDMA_READ, 0, 8192 * (uint32_t)i, 5000,
				  (uintptr_t)bbuf, e.lkb), 0);
	cr_assert_eq(post(&e, 9, IBV_WR_SEND, IBV_SEND_FENCE, 0, 16, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 6);
	for (i = 0; i < 6; i++)
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
	cr_assert_eq(w.max_reads_out, 2, "max_rd_atomic bounds outstanding reads");
	cr_assert_eq(w.send_before_read_done, 0, "the fenced SEND waited");
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, ackreq_every_64_and_window)
{
	struct env e;
	struct xrxe_tph_conn c;
	struct ibv_wc wc[64];
	struct watch w = { 0 };
	struct drop_n d = { XRXE_OPCODE(RC, ACKNOWLEDGE), 1, 0, 1000 };

	xrxe_tph_conn_default(&c);
	c.mtu = IBV_MTU_256;
	env_init(&e, &c, true);
	w.first_psn = c.psn[0];
	e.p.h.pol.filter = watch_fn;
	e.p.h.pol.filter_arg = &w;
	/* 200 packets */
	cr_assert_eq(post(&e, 1, IBV_WR_RDMA_WRITE, 0, 0, 200 * 256, (uintptr_t)bbuf, e.lkb), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(w.nackreq, 4);
	cr_assert_eq(w.ackreq_psn[0], 63);
	cr_assert_eq(w.ackreq_psn[1], 127);
	cr_assert_eq(w.ackreq_psn[2], 191);
	cr_assert_eq(w.ackreq_psn[3], 199);
	xrxe_tph_pair_fini(&e.p);

	/* no ACK ever comes back: exactly 128 packets go out before the
	 * first timeout */
	env_init(&e, &c, true);
	e.p.h.pol.filter = drop_op;
	e.p.h.pol.filter_arg = &d;
	cr_assert_eq(post(&e, 1, IBV_WR_RDMA_WRITE, 0, 0, 200 * 256, (uintptr_t)bbuf, e.lkb), 0);
	cr_assert(!xrxe_tph_run(&e.p.h, 60 * MS)); /* timeout is 67 ms */
	cr_assert_eq(e.p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_FIRST)] +
			     e.p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_MIDDLE)],
		     128);
	xrxe_tph_pair_fini(&e.p);
}

/* The ACKs one receive burst owes go out as one, for its newest PSN (resp.c):
 * 32 single-packet WRITEs, each with AckReq, reach the responder in one
 * burst (the harness delivers what is queued, then polls) and get one ACK,
 * which completes all 32; in-order data, nothing lost or duplicated. Then a
 * burst of SENDs, each consuming a receive WQE, the same. */
Test(transport_rc, acks_coalesce_per_burst)
{
	struct env e;
	struct ibv_wc wc[64];
	unsigned i;
	int n;

	env_init(&e, NULL, true);
	for (i = 0; i < 32; i++)
		cr_assert_eq(post(&e, i, IBV_WR_RDMA_WRITE, 0, i * 64, 64,
				  (uintptr_t)bbuf + i * 64, e.lkb), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(e.p.h.opcode_count[0][XRXE_OPCODE(RC, RDMA_WRITE_ONLY)], 32);
	cr_assert_eq(e.p.h.opcode_count[1][XRXE_OPCODE(RC, ACKNOWLEDGE)], 1,
		     "one ACK for the burst, not %" PRIu64,
		     e.p.h.opcode_count[1][XRXE_OPCODE(RC, ACKNOWLEDGE)]);
	n = poll_all(e.p.ca, wc);
	cr_assert_eq(n, 32);
	for (i = 0; i < 32; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].wr_id, i, "completions in order");
	}
	cr_assert(!memcmp(abuf, bbuf, 32 * 64), "every WRITE landed");

	for (i = 0; i < 16; i++)
		cr_assert_eq(recv_b(&e, 100 + i, 4096 + i * 64, 64), 0);
	for (i = 0; i < 16; i++)
		cr_assert_eq(post(&e, 200 + i, IBV_WR_SEND, 0, 8192 + i * 64, 64, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(e.p.h.opcode_count[1][XRXE_OPCODE(RC, ACKNOWLEDGE)], 2);
	cr_assert_eq(poll_all(e.p.ca, wc), 16);
	n = poll_all(e.p.cb, wc);
	cr_assert_eq(n, 16);
	for (i = 0; i < 16; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].wr_id, 100 + i);
		cr_assert_eq(wc[i].byte_len, 64);
	}
	cr_assert(!memcmp(abuf + 8192, bbuf + 4096, 16 * 64), "every SEND landed in order");
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, udp_source_port)
{
	struct env e;
	uint16_t s0;

	env_init(&e, NULL, true);
	cr_assert_eq(recv_b(&e, 1, 0, 4096), 0);
	cr_assert_eq(post(&e, 1, IBV_WR_SEND, 0, 0, 16, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	s0 = e.p.h.sport[0];
	cr_assert_geq(s0, 0xc000);
	cr_assert_eq(s0, (uint16_t)(0xc000 + (((e.p.a->qpn * 0x61c88647u) >> 18) & 0x3fff)));
	cr_assert_eq(e.p.h.sport[1],
		     (uint16_t)(0xc000 + (((e.p.b->qpn * 0x61c88647u) >> 18) & 0x3fff)));
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_rc, sqd_drains_and_resumes)
{
	struct env e;
	struct ibv_wc wc[64];
	struct ibv_qp_attr at;
	int i;

	env_init(&e, NULL, true);
	for (i = 0; i < 4; i++)
		cr_assert_eq(recv_b(&e, (uint64_t)i, 0, 4096), 0);
	cr_assert_eq(post(&e, 1, IBV_WR_SEND, 0, 0, 3000, 0, 0), 0);
	xrxe_tp_poll(e.p.h.side[0].tp, e.p.h.now); /* started */
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_SQD;
	at.en_sqd_async_notify = 1;
	cr_assert_eq(xrxe_tp_qp_modify(e.p.h.side[0].tp, e.p.a->qp, &at,
				       IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY, NULL), 0);
	cr_assert_eq(post(&e, 2, IBV_WR_SEND, 0, 0, 100, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(e.p.h.side[0].last_async, IBV_EVENT_SQ_DRAINED);
	cr_assert_eq(poll_all(e.p.ca, wc), 1, "only the started WR completes in SQD");
	at.qp_state = IBV_QPS_RTS;
	cr_assert_eq(xrxe_tp_qp_modify(e.p.h.side[0].tp, e.p.a->qp, &at, IBV_QP_STATE, NULL), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].wr_id, 2);
	xrxe_tph_pair_fini(&e.p);
}

/* The responder re-reads the application's RQ producer only when the WQEs it
 * saw there last are used up (resp.c get_rwqe: one read of that cache line
 * per burst of posts, not per message). Receive WQEs posted after a read are
 * still found when the cached ones run out (no RNR NAK), an RQ found empty
 * still draws one, and over five laps of the 64-slot RQ (and SQ) every 64 B
 * SEND lands in its own WQE, in order. */
Test(transport_rc, rq_producer_read_per_burst_loses_nothing)
{
	struct env e;
	struct xrxe_tph_conn c;
	struct xrxe_tp_qp_info ib;
	struct ibv_wc wc[64];
	unsigned lap, i, id = 0;

	xrxe_tph_conn_default(&c);
	c.rnr_retry = 7; /* infinite */
	c.min_rnr_timer = 1; /* 10 us */
	env_init(&e, &c, true);
	/* 10 posted, 5 taken (the responder saw 10), 10 more posted, 15 taken */
	for (i = 0; i < 10; i++)
		cr_assert_eq(recv_b(&e, 1000 + i, i * 64, 64), 0);
	for (i = 0; i < 5; i++)
		cr_assert_eq(post(&e, i, IBV_WR_SEND, 0, i * 64, 64, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	for (i = 10; i < 20; i++)
		cr_assert_eq(recv_b(&e, 1000 + i, i * 64, 64), 0);
	for (i = 5; i < 20; i++)
		cr_assert_eq(post(&e, i, IBV_WR_SEND, 0, i * 64, 64, 0, 0), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_eq(ib.rnr_naks_sent, 0, "WQEs posted after the producer was read were found");
	cr_assert_eq(poll_all(e.p.ca, wc), 20);
	cr_assert_eq(poll_all(e.p.cb, wc), 20);
	for (i = 0; i < 20; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].wr_id, 1000 + i);
	}
	cr_assert(!memcmp(bbuf, abuf, 20 * 64));

	/* every WQE used: a SEND now draws RNR NAKs until one is posted */
	cr_assert_eq(post(&e, 99, IBV_WR_SEND, 0, 4000, 64, 0, 0), 0);
	cr_assert(!xrxe_tph_run(&e.p.h, 2 * MS));
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_gt(ib.rnr_naks_sent, 0);
	cr_assert_eq(recv_b(&e, 2000, 8192, 64), 0);
	cr_assert(xrxe_tph_run(&e.p.h, SEC));
	cr_assert_eq(poll_all(e.p.ca, wc), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(poll_all(e.p.cb, wc), 1);
	cr_assert_eq(wc[0].wr_id, 2000);
	cr_assert(!memcmp(bbuf + 8192, abuf + 4000, 64));

	/* five laps of 40: the rings wrap, nothing lost or reordered */
	for (lap = 0; lap < 5; lap++) {
		for (i = 0; i < 40; i++)
			cr_assert_eq(recv_b(&e, 3000 + id + i, 12288 + i * 64, 64), 0);
		for (i = 0; i < 40; i++)
			cr_assert_eq(post(&e, id + i, IBV_WR_SEND, 0, (lap * 40 + i) * 64 % 8192, 64, 0,
					  0),
				     0);
		cr_assert(xrxe_tph_run(&e.p.h, SEC));
		cr_assert_eq(poll_all(e.p.ca, wc), 40);
		cr_assert_eq(poll_all(e.p.cb, wc), 40);
		for (i = 0; i < 40; i++) {
			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
			cr_assert_eq(wc[i].wr_id, 3000 + id + i);
			cr_assert_eq(wc[i].byte_len, 64);
			cr_assert(!memcmp(bbuf + 12288 + i * 64, abuf + (lap * 40 + i) * 64 % 8192, 64));
		}
		id += 40;
	}
	xrxe_tph_pair_fini(&e.p);
}

/* The core re-reads the application's CQ consumer only when the ring looks
 * full by the one it read last (cq.c: not once per CQE). A CQ of 8 (capacity
 * 7) filled, partly polled, then filled again takes every CQE the polls made
 * room for, with no overrun; one CQE more than the room overruns it as
 * before (IBA 11.4.2.1). */
Test(transport_rc, cq_consumer_read_when_full)
{
	struct xrxe_tph h;
	struct xrxe_tph_conn c;
	struct xrxe_tph_cq *ca, *cb;
	struct xrxe_tph_qp *a, *b;
	uint32_t lka, lkb;
	struct ibv_wc wc[8];
	uint64_t id = 0;
	int i, round;

	xrxe_tph_init(&h, 5, 4096);
	ca = xrxe_tph_cq_create(&h.side[0], 64);
	cb = xrxe_tph_cq_create(&h.side[1], 8); /* capacity 7 */
	a = xrxe_tph_qp_create(&h.side[0], IBV_QPT_RC, ca, ca, 16, 16, false);
	b = xrxe_tph_qp_create(&h.side[1], IBV_QPT_RC, cb, cb, 16, 16, false);
	xrxe_tph_conn_default(&c);
	cr_assert_eq(xrxe_tph_connect(a, b, &c), 0);
	lka = xrxe_tph_mr(&h.side[0], abuf, 4096, RW, 0);
	lkb = xrxe_tph_mr(&h.side[1], bbuf, 4096, RW, 0);
	/* 7, then 5 polled and 5 more, three times: the CQ wraps */
	for (round = 0; round < 4; round++) {
		int n = round ? 5 : 7;

		for (i = 0; i < n; i++) {
			struct xrxe_sge s = { (uintptr_t)bbuf + (id + i) * 64 % 4096, 64, lkb };

			cr_assert_eq(xrxe_tph_post_recv(b, id + i, &s, 1), 0);
		}
		for (i = 0; i < n; i++) {
			struct xrxe_sge s = { (uintptr_t)abuf + (id + i) * 64 % 4096, 64, lka };

			cr_assert_eq(xrxe_tph_post_send(a, &(struct xrxe_tph_send){
				.wr_id = id + i, .opcode = IBV_WR_SEND, .sge = &s, .nsge = 1 }), 0);
		}
		cr_assert(xrxe_tph_run(&h, SEC));
		cr_assert_eq(xrxe_tph_state(b), IBV_QPS_RTS, "round %d: no overrun", round);
		cr_assert_eq(xrxe_tph_cq_count(cb), 7);
		cr_assert_eq(xrxe_tph_poll_cq(cb, wc, 5), 5);
		for (i = 0; i < 5; i++) {
			uint64_t want = round ? id - 2 + i : (uint64_t)i;

			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
			cr_assert_eq(wc[i].wr_id, want, "round %d: CQE %d in order", round, i);
		}
		id += n;
	}
	cr_assert(!memcmp(bbuf, abuf, 22 * 64), "every SEND landed");
	cr_assert_eq(h.side[1].async_by_type[IBV_EVENT_CQ_ERR], 0);
	/* 2 unpolled, room for 5: the sixth overruns */
	for (i = 0; i < 6; i++) {
		struct xrxe_sge s = { (uintptr_t)bbuf + 2048, 64, lkb };

		cr_assert_eq(xrxe_tph_post_recv(b, 100 + (uint64_t)i, &s, 1), 0);
	}
	for (i = 0; i < 6; i++) {
		struct xrxe_sge s = { (uintptr_t)abuf, 64, lka };

		cr_assert_eq(xrxe_tph_post_send(a, &(struct xrxe_tph_send){
			.wr_id = 100 + (uint64_t)i, .opcode = IBV_WR_SEND, .sge = &s, .nsge = 1 }), 0);
	}
	xrxe_tph_run(&h, 100 * SEC);
	cr_assert_eq(h.side[1].async_by_type[IBV_EVENT_CQ_ERR], 1);
	cr_assert_eq(xrxe_tph_state(b), IBV_QPS_ERR);
	cr_assert_eq(xrxe_tph_poll_cq(cb, wc, 8), 7);
	xrxe_tph_fini(&h);
}
