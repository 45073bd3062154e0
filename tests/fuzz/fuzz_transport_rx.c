// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the transport's receive path with live, connected
 * QPs: the network is hostile, and by the time a frame reaches xrxe_tp_rx it
 * has passed the parser and the ICRC (a peer computes a valid ICRC for
 * anything it likes), so this target builds well-formed frames whose every
 * field comes from the fuzzer.
 *
 * Per input: byte 0 picks RC, UC or UD (RC with bit 5 set: both QPs use
 * selective repeat, docs/selective-repeat.md, so that requests past a hole
 * are held, SACKs (opcode 0xE0, a 16-byte bitmap from the fuzzer) reach a's
 * scoreboard and READ responses are placed by offset) (or, bit 6, XRC: a is then an XRC
 * target with an XRC SRQ of its domain and one of another domain, b an
 * initiator sending to it, and every request names one of those SRQs, 0 or
 * any number; docs/xrc.md); two cores are joined by the
 * in-memory wire of tests/unit/tp_harness.c, QP a (side 0) is connected to
 * b (side 1), both register memory with every access right, a posts receives
 * and -- to have live requester state for responses to match against --
 * sends a SEND, an RDMA WRITE, an RDMA READ and both atomics to b (RC),
 * which the wire delivers partly. Then each record of the input becomes one
 * frame injected into side 0 "from side 1": opcode (of a's transport, or any
 * byte), PSN near the expected ones or anywhere, RETH/AtomicETH addresses
 * inside, across or outside a's region with its real R_Key or a fuzzed one,
 * AETH syndromes and MSNs, DETH Q_Keys, payload bytes -- requests for a's
 * responder, and ACKs, NAKs, READ responses and atomic ACKs for a's
 * requester. Between records the cores run (virtual time), so timers,
 * retransmissions and completions happen against the fuzzed state.
 *
 * Checked: ASan/UBSan (no out-of-bounds access, no UB) and the harness's own
 * aborts (every frame a core sends parses with a valid ICRC); the end of
 * each run tears everything down (no leak).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"
#include "xrxe/wire.h"

#define MEM (64 * 1024)
#define MAX_RECORDS 64

struct in {
	const uint8_t *d;
	size_t n, pos;
};

static uint64_t take(struct in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v = v << 8 | (in->pos < in->n ? in->d[in->pos++] : 0);
	return v;
}

static bool more(const struct in *in)
{
	return in->pos < in->n;
}

static uint8_t mem_a[MEM] __attribute__((aligned(4096)));
static uint8_t mem_b[MEM] __attribute__((aligned(4096)));
static uint8_t payload[8192];

/* Live requester state on a: one of each operation towards b. */
static void post_work(struct xrxe_tph_pair *p, enum ibv_qp_type type, uint32_t lkey_a,
		      uint32_t rkey_b)
{
	struct xrxe_sge sge = { .addr = (uintptr_t)mem_a, .length = 3000, .lkey = lkey_a };
	struct xrxe_sge sge8 = { .addr = (uintptr_t)mem_a + 4096, .length = 8, .lkey = lkey_a };
	struct xrxe_tph_send w = { .wr_id = 1, .opcode = IBV_WR_SEND, .sge = &sge, .nsge = 1,
				   .flags = IBV_SEND_SIGNALED };

	if (type == IBV_QPT_UD) {
		sge.length = 512;
		w.ah = 0;
		w.rqpn = p->b->qpn;
		w.rqkey = p->conn.qkey;
	}
	xrxe_tph_post_send(p->a, &w);
	if (type == IBV_QPT_UD)
		return;
	w = (struct xrxe_tph_send){ .wr_id = 2, .opcode = IBV_WR_RDMA_WRITE, .sge = &sge,
				    .nsge = 1, .raddr = (uintptr_t)mem_b, .rkey = rkey_b,
				    .flags = IBV_SEND_SIGNALED };
	xrxe_tph_post_send(p->a, &w);
	if (type != IBV_QPT_RC)
		return;
	w.wr_id = 3;
	w.opcode = IBV_WR_RDMA_READ;
	w.raddr = (uintptr_t)mem_b + 8192;
	xrxe_tph_post_send(p->a, &w);
	w = (struct xrxe_tph_send){ .wr_id = 4, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .sge = &sge8,
				    .nsge = 1, .raddr = (uintptr_t)mem_b + 16384, .rkey = rkey_b,
				    .compare_add = 5, .flags = IBV_SEND_SIGNALED };
	xrxe_tph_post_send(p->a, &w);
	w.wr_id = 5;
	w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	w.swap = 7;
	xrxe_tph_post_send(p->a, &w);
}

/* XRC: a is a target on side 0 with an XRC SRQ in its domain (srqn[0],
 * *in) and one in another domain (srqn[1]); b an initiator on side 1. */
static int xrc_pair_init(struct xrxe_tph_pair *p, const struct xrxe_tph_conn *c, uint32_t srqn[2],
			 struct xrxe_tph_srq **in)
{
	struct xrxe_tph_srq *other;
	uint32_t x1, x2;

	p->conn = *c;
	xrxe_tph_init_rexmit(&p->h, 1, 4096, p->conn.fixed_ack_timeout);
	p->ca = xrxe_tph_cq_create(&p->h.side[0], 256);
	p->cb = xrxe_tph_cq_create(&p->h.side[1], 256);
	if (xrxe_tp_xrcd_alloc(p->h.side[0].tp, &x1) || xrxe_tp_xrcd_alloc(p->h.side[0].tp, &x2))
		abort();
	*in = xrxe_tph_srq_create_xrc(&p->h.side[0], p->h.side[0].pdn, x1, p->ca, 16);
	other = xrxe_tph_srq_create_xrc(&p->h.side[0], p->h.side[0].pdn, x2, p->ca, 16);
	srqn[0] = xrxe_tp_srq_num((*in)->srq);
	srqn[1] = xrxe_tp_srq_num(other->srq);
	p->a = xrxe_tph_qp_create_xrc_tgt(&p->h.side[0], x1);
	p->b = xrxe_tph_qp_create_xrc_ini(&p->h.side[1], p->cb, 64);
	return xrxe_tph_connect(p->a, p->b, &p->conn);
}

/* XRC: live responder state on a, one of each operation from b. */
static void xrc_post_work(struct xrxe_tph_pair *p, uint32_t srqn, uint32_t rkey_a, uint32_t lkey_b)
{
	struct xrxe_sge sge = { .addr = (uintptr_t)mem_b, .length = 3000, .lkey = lkey_b };
	struct xrxe_sge sge8 = { .addr = (uintptr_t)mem_b + 4096, .length = 8, .lkey = lkey_b };
	static const uint32_t ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
					IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP };

	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		bool atomic = i >= 3;
		struct xrxe_tph_send w = { .wr_id = i + 1, .opcode = ops[i],
					   .sge = atomic ? &sge8 : &sge, .nsge = 1,
					   .raddr = (uintptr_t)mem_a + (atomic ? 16384 : 8192 * i),
					   .rkey = rkey_a, .compare_add = 5, .swap = 7,
					   .flags = IBV_SEND_SIGNALED, .xrc_srqn = srqn };

		xrxe_tph_post_send(p->b, &w);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum ibv_qp_type types[3] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	static const uint8_t base[3] = { 0x00, 0x20, 0x60 };
	const uint32_t all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct in in = { .d = data, .n = size };
	struct xrxe_tph_pair *p;
	struct xrxe_tph_conn conn;
	struct xrxe_tph_srq *srq = NULL;
	uint32_t lkey_a, lkey_b, t, srqn[2] = { 0, 0 };
	struct ibv_wc wc[16];
	bool xrc, sr;

	if (size < 2)
		return 0;
	xrc = data[0] & 0x40;
	t = (uint32_t)take(&in, 1) % 3;
	if (xrc)
		t = 0; /* RC's transport, with XRC's opcodes below */
	p = calloc(1, sizeof(*p));
	if (!p)
		return 0;
	xrxe_tph_conn_default(&conn);
	conn.psn[0] = (uint32_t)take(&in, 1) << 16 | 0x100; /* near the wrap now and then */
	if (xrc ? xrc_pair_init(p, &conn, srqn, &srq)
		: xrxe_tph_pair_init(p, 1, types[t], &conn, true)) {
		free(p);
		return 0;
	}
	sr = !xrc && types[t] == IBV_QPT_RC && (data[0] & 0x20);
	if (sr && (xrxe_tp_qp_set_sr(p->h.side[0].tp, p->a->qpn, true) ||
		   xrxe_tp_qp_set_sr(p->h.side[1].tp, p->b->qpn, true))) {
		xrxe_tph_pair_fini(p);
		free(p);
		return 0;
	}
	lkey_a = xrxe_tph_mr(&p->h.side[0], mem_a, MEM, all, 0);
	lkey_b = xrxe_tph_mr(&p->h.side[1], mem_b, MEM, all, 0);
	for (unsigned i = 0; i < 8; i++) {
		struct xrxe_sge sge = { .addr = (uintptr_t)mem_a + 8192 + i * 4096,
					.length = 4096, .lkey = lkey_a };

		if (xrc)
			xrxe_tph_post_srq_recv(srq, 100 + i, &sge, 1);
		else
			xrxe_tph_post_recv(p->a, 100 + i, &sge, 1);
	}
	if (xrc)
		xrc_post_work(p, srqn[0], lkey_a, lkey_b);
	else
		post_work(p, types[t], lkey_a, lkey_b);
	xrxe_tph_step(&p->h); /* a's requests are on the wire, b has not answered all */

	/* Byte 0 bit 7: the rest is whole frames ([len16][bytes]), e.g. the
	 * golden captures of the seed corpus: parsed without the ICRC, their
	 * headers kept, but addressed to a (addresses, QPN) with the PSN
	 * taken relative to a's. */
	if (data[0] & 0x80) {
		while (more(&in)) {
			uint32_t len = (uint32_t)take(&in, 2);
			struct xrxe_pkt pkt;
			struct xrxe_pkt_spec spec, to_a;
			uint8_t frame[XRXE_MAX_FRAME_LEN];

			if (len > in.n - in.pos || len > sizeof(frame))
				break;
			memcpy(frame, in.d + in.pos, len);
			in.pos += len;
			if (xrxe_parse(frame, len, XRXE_PARSE_SKIP_ICRC, &pkt) != XRXE_PARSE_OK ||
			    xrxe_pkt_to_spec(&pkt, &spec))
				continue;
			xrxe_tph_spec(&p->h, 1, p->a->qpn, &to_a);
			memcpy(spec.dmac, to_a.dmac, sizeof(spec.dmac));
			memcpy(spec.smac, to_a.smac, sizeof(spec.smac));
			spec.ip_version = to_a.ip_version;
			spec.saddr = to_a.saddr;
			spec.daddr = to_a.daddr;
			spec.has_vlan = false;
			spec.dest_qp = p->a->qpn;
			spec.psn = ((spec.opcode & 0x1f) >= 0x0d && (spec.opcode & 0x1f) <= 0x12 ?
					    conn.psn[0] : conn.psn[1]) + (spec.psn & 0xf);
			spec.psn &= 0xffffff;
			if (types[t] == IBV_QPT_UD) {
				spec.deth.qkey = conn.qkey;
				spec.deth.src_qp = p->b->qpn;
			}
			xrxe_tph_inject(&p->h, 0, &spec);
			xrxe_tph_step(&p->h);
			xrxe_tph_poll_cq(p->ca, wc, 16);
			xrxe_tph_poll_cq(p->cb, wc, 16);
		}
		in.pos = in.n;
	}

	for (unsigned r = 0; r < MAX_RECORDS && more(&in); r++) {
		struct xrxe_pkt_spec spec;
		const struct xrxe_opcode_info *info;
		uint8_t sel = (uint8_t)take(&in, 1);
		uint32_t plen;

		xrxe_tph_spec(&p->h, 1, (sel & 0x80) ? (uint32_t)take(&in, 3) : p->a->qpn, &spec);
		spec.opcode = (sel & 0x40) ? (uint8_t)take(&in, 1)
			      : (uint8_t)((xrc ? XRXE_TRANSPORT_XRC : base[t]) | (take(&in, 1) & 0x1f));
		if (xrc) {
			/* the target's SRQ, another domain's, 0, or anything */
			uint32_t k = (uint32_t)take(&in, 1) & 3;

			spec.xrc_srqn = k < 2 ? srqn[k] : k == 2 ? 0 : (uint32_t)take(&in, 3);
		}
		info = xrxe_opcode_info(spec.opcode);
		if (!info)
			continue;
		/* PSN: a's expected request PSN or its requester's, give or
		 * take a little, or anything */
		switch (sel & 0x3) {
		case 0:
			spec.psn = (conn.psn[1] + (uint32_t)take(&in, 1) - 8) & 0xffffff;
			break;
		case 1:
			spec.psn = (conn.psn[0] + (uint32_t)take(&in, 1) - 8) & 0xffffff;
			break;
		default:
			spec.psn = (uint32_t)take(&in, 3);
		}
		spec.ackreq = sel & 0x4;
		spec.se = sel & 0x8;
		spec.deth.qkey = (sel & 0x10) ? (uint32_t)take(&in, 4) : conn.qkey;
		spec.deth.src_qp = p->b->qpn;
		spec.reth.va = (uintptr_t)mem_a + (take(&in, 2) << 2) - 1024;
		spec.reth.rkey = (sel & 0x20) ? (uint32_t)take(&in, 4) : lkey_a;
		spec.reth.len = (uint32_t)take(&in, 2);
		spec.atmeth.va = spec.reth.va & ~7ull;
		spec.atmeth.rkey = spec.reth.rkey;
		spec.atmeth.swap_add = take(&in, 1);
		spec.atmeth.comp = take(&in, 1);
		spec.aeth.syndrome = (uint8_t)take(&in, 1);
		spec.aeth.msn = (uint32_t)take(&in, 1);
		spec.atmack_orig = take(&in, 1);
		spec.imm_be = (uint32_t)take(&in, 4);
		spec.ieth_rkey = (sel & 0x20) ? lkey_a : (uint32_t)take(&in, 4);
		spec.feth.sel = (uint8_t)take(&in, 1) & 3;
		spec.feth.plt = (uint8_t)take(&in, 1) & 3;
		switch (info->payload) {
		case XRXE_PAYLOAD_FULL_MTU:
			plen = 1024;
			break;
		case XRXE_PAYLOAD_ANY:
			plen = (uint32_t)take(&in, 2) % 1025;
			break;
		case XRXE_PAYLOAD_8:
			plen = 8;
			break;
		case XRXE_PAYLOAD_SACK:
			plen = XRXE_SACK_LEN;
			break;
		default:
			plen = 0;
		}
		for (uint32_t i = 0; i < plen && i < 64; i++)
			payload[i] = (uint8_t)take(&in, 1);
		spec.payload = plen ? payload : NULL;
		spec.payload_len = plen;
		xrxe_tph_inject(&p->h, 0, &spec);
		if (take(&in, 1) & 1)
			xrxe_tph_step(&p->h);
		/* the application keeps reaping, as a real one would */
		xrxe_tph_poll_cq(p->ca, wc, 16);
		xrxe_tph_poll_cq(p->cb, wc, 16);
	}
	/* timers and retransmissions: a bounded virtual time (300 ms) */
	xrxe_tph_run(&p->h, 300ull * 1000 * 1000);
	while (xrxe_tph_poll_cq(p->ca, wc, 16) > 0)
		;
	xrxe_tph_pair_fini(p);
	free(p);
	return 0;
}
