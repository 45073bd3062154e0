// SPDX-License-Identifier: MIT
/*
 * Loss recovery beside go-back-N (src/transport/rto.c, issue 19), in the
 * harness's simulated time: a lost NAK, a lost tail, lost ACKs, a lost READ
 * response or atomic acknowledgement are repaired by loss probes within a
 * few round trips -- never by waiting out the Local ACK Timeout (67 ms at
 * timeout 14) -- and the probes resend only what the responder's answer
 * says it lacks. Then go-back-N's cost under random loss over a link that
 * takes time (the harness's link model), adaptive against --rexmit fixed.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"

#define SEC 1000000000ull
#define MS 1000000ull
#define US 1000ull
/* The Local ACK Timeout of the default connection (timeout 14) */
#define ACK_TIMEOUT (4096ull << 14)
/* Recovered "in a few round trips": the harness wire takes no time, so a
 * probe waits for the rto floor (2 ms); two probe rounds (backed off: 2 +
 * 4 ms) and then some, well below the 67 ms timeout. */
#define FEW_RTTS (8 * MS)

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static uint8_t abuf[1 << 20], bbuf[1 << 20];

struct env {
	struct xrxe_tph_pair p;
	uint32_t lka, lkb;
};

static void env_init(struct env *e, bool fixed)
{
	struct xrxe_tph_conn c;
	unsigned i;

	xrxe_tph_conn_default(&c);
	c.fixed_ack_timeout = fixed;
	cr_assert_eq(xrxe_tph_pair_init(&e->p, 42, IBV_QPT_RC, &c, true), 0);
	for (i = 0; i < sizeof(abuf); i++) {
		abuf[i] = (uint8_t)(i * 7 + 1);
		bbuf[i] = (uint8_t)(i * 13 + 5);
	}
	e->lka = xrxe_tph_mr(&e->p.h.side[0], abuf, sizeof(abuf), RW | IBV_ACCESS_REMOTE_ATOMIC, 0);
	e->lkb = xrxe_tph_mr(&e->p.h.side[1], bbuf, sizeof(bbuf), RW | IBV_ACCESS_REMOTE_ATOMIC, 0);
}

static int post(struct env *e, uint64_t id, uint32_t op, uint32_t off, uint32_t len, uint64_t raddr)
{
	struct xrxe_sge s = { (uintptr_t)abuf + off, len, e->lka };
	struct xrxe_tph_send w = {
		.wr_id = id, .opcode = op, .sge = &s, .nsge = 1, .raddr = raddr, .rkey = e->lkb,
	};

	return xrxe_tph_post_send(e->p.a, &w);
}

/* One WRITE that completes: the requester gets a round-trip sample. */
static void warm_up(struct env *e)
{
	struct ibv_wc wc[4];

	cr_assert_eq(post(e, 1, IBV_WR_RDMA_WRITE, 0, 100, (uintptr_t)bbuf), 0);
	cr_assert(xrxe_tph_run(&e->p.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e->p.ca, wc, 4), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
}

/* A drop plan: frames from side `from` matching (opcode, or any NAK when
 * nak, or PSN offset psn_off from the base when psn_off >= 0) are dropped,
 * the first n times after skip matches. */
struct plan {
	int from;
	int opcode;   /* -1: any */
	bool nak;     /* only ACKNOWLEDGE frames with a NAK syndrome */
	int64_t psn;  /* -1: any */
	unsigned skip, n;
};

#define MAX_PLANS 4
static struct plan plans[MAX_PLANS];
static unsigned nplans;

static bool plan_match(const struct plan *pl, int from, const struct xrxe_pkt *pkt)
{
	const struct xrxe_aeth *ae = xrxe_pkt_hdr(pkt, XRXE_HDR_AETH);

	if (from != pl->from)
		return false;
	if (pl->opcode >= 0 && pkt->opcode != pl->opcode)
		return false;
	if (pl->nak && (pkt->opcode != XRXE_OPCODE(RC, ACKNOWLEDGE) || !ae ||
			(xrxe_aeth_syndrome(ae) & XRXE_AETH_TYPE_MASK) != XRXE_AETH_NAK))
		return false;
	if (pl->psn >= 0 && xrxe_bth_psn(xrxe_pkt_bth(pkt)) != (uint32_t)pl->psn)
		return false;
	return true;
}

/* Kernel rxe's responder narrows a READ's resource to what a duplicate
 * request asks for (rxe_resp.c duplicate_request sets va_org to its
 * address) and then drops a duplicate for earlier bytes. So per READ (the
 * end of its range stays the same when it is resumed) the addresses a
 * requester asks for must never go down. */
#define MAX_READS 64
static struct {
	uint64_t end, va;
} reads[MAX_READS];
static unsigned nreads, read_regressions;

static void read_check(const struct xrxe_pkt *pkt)
{
	const struct xrxe_reth *reth = xrxe_pkt_hdr(pkt, XRXE_HDR_RETH);
	uint64_t va, end;
	unsigned i;

	if (pkt->opcode != XRXE_OPCODE(RC, RDMA_READ_REQUEST) || !reth)
		return;
	va = xrxe_reth_va(reth);
	end = va + xrxe_reth_len(reth);
	for (i = 0; i < nreads; i++) {
		if (reads[i].end != end)
			continue;
		if (va < reads[i].va)
			read_regressions++;
		else
			reads[i].va = va;
		return;
	}
	if (nreads < MAX_READS)
		reads[nreads++] = (typeof(reads[0])){ end, va };
}

static bool plan_filter(void *arg, int from, const struct xrxe_pkt *pkt)
{
	unsigned i;

	(void)arg;
	if (from == 0)
		read_check(pkt);
	for (i = 0; i < nplans; i++) {
		struct plan *pl = &plans[i];

		if (!plan_match(pl, from, pkt))
			continue;
		if (pl->skip) {
			pl->skip--;
			continue;
		}
		if (pl->n) {
			pl->n--;
			return true;
		}
	}
	return false;
}

static void plan_arm(struct env *e)
{
	nreads = read_regressions = 0;
	e->p.h.pol.filter = plan_filter;
	e->p.h.pol.filter_arg = NULL;
}

static void plans_done(void)
{
	unsigned i;

	for (i = 0; i < nplans; i++)
		cr_assert_eq(plans[i].n, 0, "planned drop %u did not happen", i);
}

/* The WRITE's first PSN after warm_up */
static uint32_t psn0(const struct env *e)
{
	return e->p.conn.psn[0] + 1;
}

struct outcome {
	uint64_t took;
	struct xrxe_tp_qp_info ia, ib;
};

/* Post a WRITE of npkts 1 KiB packets at bbuf + 64 KiB, run to the end,
 * check it landed intact; the time it took and both sides' counters. */
static void write_run(struct env *e, unsigned npkts, struct outcome *o)
{
	struct ibv_wc wc[4];
	uint64_t t0 = e->p.h.now;

	memset(bbuf + 65536, 0, npkts * 1024);
	cr_assert_eq(post(e, 2, IBV_WR_RDMA_WRITE, 0, npkts * 1024, (uintptr_t)bbuf + 65536), 0);
	cr_assert(xrxe_tph_run(&e->p.h, 10 * SEC));
	o->took = e->p.h.now - t0;
	cr_assert_eq(xrxe_tph_poll_cq(e->p.ca, wc, 4), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert(!memcmp(bbuf + 65536, abuf, npkts * 1024), "WRITE landed intact");
	plans_done();
	xrxe_tph_info(e->p.a, &o->ia);
	xrxe_tph_info(e->p.b, &o->ib);
}

/* --- a lost NAK ---------------------------------------------------------------- */

/* The first packet of a 64-packet WRITE is lost and so is the sequence NAK
 * for it: the responder stays silent (IBA 9.7.5.1.x: one NAK per gap). A
 * probe of the oldest PSN (0: accepted) and the newest (63: NAK for 1)
 * repairs it; the packets resent are the ones the responder dropped, plus
 * the probes. */
static void lost_nak(bool fixed, struct outcome *o)
{
	struct env e;

	env_init(&e, fixed);
	warm_up(&e);
	nplans = 2;
	plans[0] = (struct plan){ .from = 0, .opcode = -1, .psn = psn0(&e), .n = 1 };
	plans[1] = (struct plan){ .from = 1, .opcode = -1, .nak = true, .psn = -1, .n = 1 };
	plan_arm(&e);
	write_run(&e, 64, o);
	xrxe_tph_pair_fini(&e.p);
}

Test(transport_loss, lost_nak_recovered_in_a_few_round_trips)
{
	struct outcome o;

	lost_nak(false, &o);
	cr_assert_eq(o.ia.timeouts, 0, "waited for the Local ACK Timeout");
	cr_assert_lt(o.took, FEW_RTTS, "took %" PRIu64 " ns", o.took);
	cr_assert_eq(o.ia.fast_retransmits, 1, "one probe round");
	cr_assert_eq(o.ia.probes, 2);
	/* the 63 packets the responder dropped (1..63) go again, plus the
	 * probes; it dropped them and the second probe */
	cr_assert_eq(o.ia.resent_packets, 63 + 2, "resent %" PRIu64, o.ia.resent_packets);
	cr_assert_eq(o.ib.out_of_sequence, 63 + 1);
	cr_assert_eq(o.ib.duplicates, 0);
	cr_assert_eq(o.ia.recoveries, 1);
}

Test(transport_loss, fixed_rexmit_waits_out_the_timeout_for_a_lost_nak)
{
	struct outcome o;

	lost_nak(true, &o);
	cr_assert_eq(o.ia.timeouts, 1);
	cr_assert_geq(o.took, ACK_TIMEOUT);
	cr_assert_eq(o.ia.probes, 0);
}

/* The responder waits for a PSN past the oldest unacknowledged one and its
 * NAK was lost: the first probe (a duplicate) is re-acknowledged up to the
 * hole, the next round (one rto later) is the lost-NAK case. */
Test(transport_loss, lost_nak_past_the_oldest_psn)
{
	struct env e;
	struct outcome o;

	env_init(&e, false);
	warm_up(&e);
	nplans = 2;
	plans[0] = (struct plan){ .from = 0, .opcode = -1, .psn = psn0(&e) + 40, .n = 1 };
	plans[1] = (struct plan){ .from = 1, .opcode = -1, .nak = true, .psn = -1, .n = 1 };
	plan_arm(&e);
	write_run(&e, 64, &o);
	cr_assert_eq(o.ia.timeouts, 0);
	cr_assert_lt(o.took, FEW_RTTS, "took %" PRIu64 " ns", o.took);
	cr_assert_eq(o.ia.fast_retransmits, 2);
	/* 41..63 again, and four probes */
	cr_assert_eq(o.ia.resent_packets, 23 + 4, "resent %" PRIu64, o.ia.resent_packets);
	cr_assert_leq(o.ib.duplicates, 2);
	xrxe_tph_pair_fini(&e.p);
}

/* The resend a NAK asked for is lost as well (the responder may not NAK
 * again): probes, not the timeout. */
Test(transport_loss, lost_resend_recovered_by_probe)
{
	struct env e;
	struct outcome o;

	env_init(&e, false);
	warm_up(&e);
	nplans = 1;
	plans[0] = (struct plan){ .from = 0, .opcode = -1, .psn = psn0(&e) + 20, .n = 2 };
	plan_arm(&e);
	write_run(&e, 64, &o);
	cr_assert_eq(o.ia.timeouts, 0);
	cr_assert_lt(o.took, FEW_RTTS, "took %" PRIu64 " ns", o.took);
	cr_assert_eq(o.ia.seq_naks_rcvd, 2, "the NAK, and the probe's NAK for 21");
	cr_assert_leq(o.ib.duplicates, 1);
	xrxe_tph_pair_fini(&e.p);
}

/* --- a lost tail ------------------------------------------------------------------ */

/* The last packet of a 64-packet WRITE is lost: nothing follows it, so no
 * NAK comes. The probe of the newest PSN is that packet. */
Test(transport_loss, lost_tail_of_a_window)
{
	struct env e;
	struct outcome o;

	env_init(&e, false);
	warm_up(&e);
	nplans = 1;
	plans[0] = (struct plan){ .from = 0, .opcode = -1, .psn = psn0(&e) + 63, .n = 1 };
	plan_arm(&e);
	write_run(&e, 64, &o);
	cr_assert_eq(o.ia.timeouts, 0);
	cr_assert_lt(o.took, FEW_RTTS, "took %" PRIu64 " ns", o.took);
	cr_assert_eq(o.ia.resent_packets, 2, "only the probes");
	cr_assert_eq(o.ib.duplicates, 1, "the probe of the oldest PSN");
	xrxe_tph_pair_fini(&e.p);
}

/* The last three packets are lost: the probe of the newest draws the NAK
 * for the first of them. */
Test(transport_loss, lost_tail_burst)
{
	struct env e;
	struct outcome o;
	unsigned i;

	env_init(&e, false);
	warm_up(&e);
	nplans = 3;
	for (i = 0; i < 3; i++)
		plans[i] = (struct plan){ .from = 0, .opcode = -1, .psn = psn0(&e) + 61 + i, .n = 1 };
	plan_arm(&e);
	write_run(&e, 64, &o);
	cr_assert_eq(o.ia.timeouts, 0);
	cr_assert_lt(o.took, FEW_RTTS, "took %" PRIu64 " ns", o.took);
	cr_assert_eq(o.ia.seq_naks_rcvd, 1);
	cr_assert_eq(o.ia.resent_packets, 3 + 2);
	xrxe_tph_pair_fini(&e.p);
}

/* --- lost ACKs: nothing is resent but the probes ------------------------------- */

Test(transport_loss, lost_ack_resends_only_probes)
{
	struct env e;
	struct outcome o;

	env_init(&e, false);
	warm_up(&e);
	nplans = 1;
	plans[0] = (struct plan){ .from = 1, .opcode = XRXE_OPCODE(RC, ACKNOWLEDGE), .psn = -1,
				  .n = 1 };
	plan_arm(&e);
	write_run(&e, 64, &o);
	cr_assert_eq(o.ia.timeouts, 0);
	cr_assert_lt(o.took, FEW_RTTS, "took %" PRIu64 " ns", o.took);
	cr_assert_eq(o.ia.resent_packets, 2, "no silent window resent");
	cr_assert_eq(o.ib.duplicates, 2);
	cr_assert_eq(o.ia.recoveries, 0, "no loss of data");
	xrxe_tph_pair_fini(&e.p);
}

/* A probe round that finds no loss (the ACK was only lost, or late: a slow
 * responder) was needless, so the next probes wait twice as long (rto.c,
 * slack); a window acknowledged without one takes a doubling back. */
Test(transport_loss, needless_probes_back_off)
{
	struct env e;
	struct outcome o1, o2, o3;

	env_init(&e, false);
	warm_up(&e);
	nplans = 1;
	plans[0] = (struct plan){ .from = 1, .opcode = XRXE_OPCODE(RC, ACKNOWLEDGE), .psn = -1,
				  .n = 1 };
	plan_arm(&e);
	/* the ACK of each of two WRITEs lost: two needless rounds */
	write_run(&e, 8, &o1);
	plans[0].n = 1;
	write_run(&e, 8, &o2);
	cr_assert_eq(o2.ia.recoveries, 0);
	cr_assert_geq(o2.took, 2 * o1.took, "took %" PRIu64 " then %" PRIu64, o1.took, o2.took);
	/* two clean windows, then a lost tail: probed as fast as the first */
	write_run(&e, 128, &o3);
	write_run(&e, 128, &o3);
	plans[0] = (struct plan){ .from = 0, .opcode = XRXE_OPCODE(RC, RDMA_WRITE_LAST), .psn = -1,
				  .n = 1 };
	write_run(&e, 8, &o3);
	cr_assert_eq(o3.ia.timeouts, 0);
	cr_assert_leq(o3.took, o1.took, "took %" PRIu64 " (first %" PRIu64 ")", o3.took, o1.took);
	xrxe_tph_pair_fini(&e.p);
}

/* --- READ and atomics ------------------------------------------------------------- */

/* The last response packet of the last of four 8-packet READs is lost: no
 * later response shows the gap. The probe asks for the rest of that READ
 * (one packet); the responder replays it from its resource. */
Test(transport_loss, lost_read_response_tail)
{
	struct env e;
	struct ibv_wc wc[8];
	struct xrxe_tp_qp_info ia, ib;
	uint64_t t0;
	unsigned i;

	env_init(&e, false);
	warm_up(&e);
	nplans = 1;
	plans[0] = (struct plan){ .from = 1, .opcode = XRXE_OPCODE(RC, RDMA_READ_RESPONSE_LAST),
				  .psn = -1, .skip = 3, .n = 1 };
	plan_arm(&e);
	memset(abuf + 65536, 0, 4 * 8192);
	t0 = e.p.h.now;
	for (i = 0; i < 4; i++)
		cr_assert_eq(post(&e, 10 + i, IBV_WR_RDMA_READ, 65536 + i * 8192, 8192,
				  (uintptr_t)bbuf + i * 8192),
			     0);
	cr_assert(xrxe_tph_run(&e.p.h, 10 * SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.p.ca, wc, 8), 4);
	for (i = 0; i < 4; i++)
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
	cr_assert(!memcmp(abuf + 65536, bbuf, 4 * 8192), "READs landed intact");
	plans_done();
	cr_assert_eq(read_regressions, 0);
	xrxe_tph_info(e.p.a, &ia);
	xrxe_tph_info(e.p.b, &ib);
	cr_assert_eq(ia.timeouts, 0);
	cr_assert_lt(e.p.h.now - t0, FEW_RTTS);
	cr_assert_eq(ia.probes, 1, "the rest of the last READ: its last packet");
	cr_assert_eq(ib.resent_packets, 1, "one response packet replayed");
	xrxe_tph_pair_fini(&e.p);
}

/* A response of the first of two 8-packet READs is lost (the gap makes the
 * requester ask for the rest of it and the second again) and so are both
 * of those requests: silence, then probes. (With only the first lost, the
 * answer to the second shows the loss at once: comp.c comp_rx_read.) A
 * probe never asks for the middle of the second READ, which kernel rxe
 * would take as its new start (read_check) and then drop the go-back-N
 * resend of the whole READ until retry_cnt ran out. */
Test(transport_loss, read_probes_keep_kernel_rxe_resources_whole)
{
	struct env e;
	struct ibv_wc wc[8];
	struct xrxe_tp_qp_info ia;
	unsigned i;

	env_init(&e, false);
	warm_up(&e);
	nplans = 3;
	plans[0] = (struct plan){ .from = 1, .opcode = XRXE_OPCODE(RC, RDMA_READ_RESPONSE_MIDDLE),
				  .psn = psn0(&e) + 3, .n = 1 };
	plans[1] = (struct plan){ .from = 0, .opcode = XRXE_OPCODE(RC, RDMA_READ_REQUEST),
				  .psn = psn0(&e) + 3, .n = 1 };
	plans[2] = (struct plan){ .from = 0, .opcode = XRXE_OPCODE(RC, RDMA_READ_REQUEST),
				  .psn = psn0(&e) + 8, .skip = 1, .n = 1 };
	plan_arm(&e);
	memset(abuf + 65536, 0, 2 * 8192);
	for (i = 0; i < 2; i++)
		cr_assert_eq(post(&e, 10 + i, IBV_WR_RDMA_READ, 65536 + i * 8192, 8192,
				  (uintptr_t)bbuf + i * 8192),
			     0);
	cr_assert(xrxe_tph_run(&e.p.h, 10 * SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.p.ca, wc, 8), 2);
	for (i = 0; i < 2; i++)
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
	cr_assert(!memcmp(abuf + 65536, bbuf, 2 * 8192), "READs landed intact");
	plans_done();
	cr_assert_eq(read_regressions, 0, "a READ was asked for from an earlier address after a later one");
	xrxe_tph_info(e.p.a, &ia);
	cr_assert_eq(ia.timeouts, 0);
	cr_assert_geq(ia.probes, 1);
	xrxe_tph_pair_fini(&e.p);
}

/* An atomic acknowledgement is lost: the probe's duplicate draws the cached
 * result (IBA 9.7.5.1.x); the atomic executes once. */
Test(transport_loss, lost_atomic_ack)
{
	struct env e;
	struct ibv_wc wc[4];
	struct xrxe_tp_qp_info ia;
	uint64_t *ctr = (uint64_t *)(void *)(bbuf + 4096), *res = (uint64_t *)(void *)(abuf + 4096);
	struct xrxe_sge s;
	uint64_t t0;

	env_init(&e, false);
	warm_up(&e);
	*ctr = 40;
	nplans = 1;
	plans[0] = (struct plan){ .from = 1, .opcode = XRXE_OPCODE(RC, ATOMIC_ACKNOWLEDGE),
				  .psn = -1, .n = 1 };
	plan_arm(&e);
	s = (struct xrxe_sge){ (uintptr_t)res, 8, e.lka };
	t0 = e.p.h.now;
	cr_assert_eq(xrxe_tph_post_send(e.p.a, &(struct xrxe_tph_send){
		.wr_id = 3, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .sge = &s, .nsge = 1,
		.raddr = (uintptr_t)ctr, .rkey = e.lkb, .compare_add = 2 }), 0);
	cr_assert(xrxe_tph_run(&e.p.h, 10 * SEC));
	cr_assert_eq(xrxe_tph_poll_cq(e.p.ca, wc, 4), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(*res, 40);
	cr_assert_eq(*ctr, 42, "executed once");
	plans_done();
	xrxe_tph_info(e.p.a, &ia);
	cr_assert_eq(ia.timeouts, 0);
	cr_assert_lt(e.p.h.now - t0, FEW_RTTS);
	xrxe_tph_pair_fini(&e.p);
}

/* --- random loss over a link that takes time ------------------------------------- */

struct goodput {
	uint64_t took, sent, delivered, dups, resent, timeouts, recoveries;
};

/* nmsg 64 KiB WRITEs (16 x 4 KiB packets), at most 16 posted at a time as
 * ib_write_bw does, over a 10 Gbit/s link with 20 us of delay each way and
 * loss_ppm random loss in both directions. Every WRITE must land intact. */
static void stream(uint32_t loss_ppm, bool fixed, unsigned nmsg, struct goodput *g)
{
	struct xrxe_tph_pair p;
	struct xrxe_tph_conn c;
	struct xrxe_tp_qp_info ia, ib;
	uint32_t lka, lkb;
	unsigned posted = 0, done = 0, i;
	uint64_t t0;

	xrxe_tph_conn_default(&c);
	c.mtu = IBV_MTU_4096;
	c.fixed_ack_timeout = fixed;
	c.psn[0] = 0xffffff - 300; /* across the PSN wrap */
	cr_assert_eq(xrxe_tph_pair_init(&p, 77, IBV_QPT_RC, &c, true), 0);
	for (i = 0; i < sizeof(abuf); i++)
		abuf[i] = (uint8_t)(i * 7 + 1);
	memset(bbuf, 0, sizeof(bbuf));
	lka = xrxe_tph_mr(&p.h.side[0], abuf, sizeof(abuf), RW, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, sizeof(bbuf), RW, 0);
	p.h.pol.drop_ppm = loss_ppm;
	p.h.pol.link_bps = 10000000000ull;
	p.h.pol.link_delay_ns = 20 * US;
	t0 = p.h.now;
	while (done < nmsg) {
		struct ibv_wc wc[32];
		int n;

		while (posted < nmsg && posted - done < 16) {
			/* message i at offset (i % 16) * 64 KiB both sides */
			uint32_t off = (posted % 16) * 65536;
			struct xrxe_sge s = { (uintptr_t)abuf + off, 65536, lka };
			struct xrxe_tph_send w = { .wr_id = posted, .opcode = IBV_WR_RDMA_WRITE,
						   .sge = &s, .nsge = 1,
						   .raddr = (uintptr_t)bbuf + off, .rkey = lkb };

			cr_assert_eq(xrxe_tph_post_send(p.a, &w), 0);
			posted++;
		}
		/* slices of virtual time: completions are polled (and the
		 * next WRITEs posted) as an application would */
		xrxe_tph_run(&p.h, 100 * US);
		n = xrxe_tph_poll_cq(p.ca, wc, 32);
		for (i = 0; i < (unsigned)n; i++) {
			uint32_t off = (uint32_t)(wc[i].wr_id % 16) * 65536;

			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS, "WR %" PRIu64, wc[i].wr_id);
			cr_assert_eq(wc[i].wr_id, done, "in order");
			cr_assert(!memcmp(bbuf + off, abuf + off, 65536), "message %u intact", done);
			memset(bbuf + off, 0, 65536);
			done++;
		}
		cr_assert_lt(p.h.now - t0, 600 * SEC, "stalled");
	}
	g->took = p.h.now - t0;
	xrxe_tph_info(p.a, &ia);
	xrxe_tph_info(p.b, &ib);
	g->sent = ia.tx_packets;
	g->delivered = ib.rx_packets - ib.duplicates - ib.out_of_sequence;
	g->dups = ib.duplicates;
	g->resent = ia.resent_packets;
	g->timeouts = ia.timeouts;
	g->recoveries = ia.recoveries;
	xrxe_tph_pair_fini(&p);
}

static void print_goodput(const char *what, const struct goodput *g, const struct goodput *base)
{
	fprintf(stderr,
		"# %-22s %7.2f ms goodput ratio %.2f sent/delivered %.2f resent %" PRIu64
		" dups %" PRIu64 " recoveries %" PRIu64 " timeouts %" PRIu64 "\n",
		what, g->took / 1e6, (double)base->took / (double)g->took,
		(double)g->sent / (double)g->delivered, g->resent, g->dups, g->recoveries,
		g->timeouts);
}

/* 1 % loss each way: go-back-N costs what was in flight behind every loss,
 * and with the window shrinking under loss and probes for lost NAKs and
 * tails that cost stays near the loss rate. Reference points in simulated
 * time (deterministic: one seed); the bounds are loose on purpose. */
Test(transport_loss, random_loss_goodput_in_simulated_time, .timeout = 120)
{
	struct goodput clean, adaptive, fixed;
	const unsigned nmsg = getenv("XRXE_LOSS_MSGS") ? (unsigned)atoi(getenv("XRXE_LOSS_MSGS")) : 400;

	stream(0, false, nmsg, &clean);
	stream(10000, false, nmsg, &adaptive);
	stream(10000, true, nmsg, &fixed);
	print_goodput("0 %", &clean, &clean);
	print_goodput("1 % adaptive", &adaptive, &clean);
	print_goodput("1 % --rexmit fixed", &fixed, &clean);
	cr_assert_eq(clean.resent, 0);
	cr_assert_eq(adaptive.timeouts, 0, "every loss repaired without the Local ACK Timeout");
	cr_assert_lt(adaptive.took, fixed.took);
	cr_assert_lt((double)adaptive.sent / (double)adaptive.delivered,
		     (double)fixed.sent / (double)fixed.delivered);
	/* duplicates: about what the timeout-only requester draws */
	cr_assert_leq(adaptive.dups, fixed.dups + adaptive.recoveries,
		      "dups %" PRIu64 " (fixed %" PRIu64 ")", adaptive.dups, fixed.dups);
}
