// SPDX-License-Identifier: MIT
/*
 * Every frame kernel rxe put on the wire in the golden captures parses with
 * the right opcode and header layout, verifies its ICRC, and is rebuilt byte
 * for byte by xrxe_build(xrxe_pkt_to_spec(xrxe_parse(frame))).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "xrxe/wire.h"

static struct xrxe_golden g;

static void load_main(void)
{
	cr_assert_eq(xrxe_golden_load(XRXE_GOLDEN_MAIN, &g), 0, "cannot load %s/%s",
		     xrxe_golden_dir(), XRXE_GOLDEN_MAIN);
	cr_assert_eq(g.count, 168, "rxe-golden.pcap has 168 frames, got %zu", g.count);
}

static void load_loss(void)
{
	cr_assert_eq(xrxe_golden_load(XRXE_GOLDEN_LOSS, &g), 0, "cannot load %s/%s",
		     xrxe_golden_dir(), XRXE_GOLDEN_LOSS);
	cr_assert_eq(g.count, 4792, "rxe-ipv6-rnr-loss.pcap has 4792 frames, got %zu", g.count);
}

static void unload(void)
{
	xrxe_golden_free(&g);
}

/* Parse frame i (ICRC checked) or fail the test naming the frame. */
static void parse_ok(size_t i, struct xrxe_pkt *pkt)
{
	int rc = xrxe_parse(g.frames[i].data, g.frames[i].len, 0, pkt);

	if (rc != XRXE_PARSE_OK)
		cr_assert_fail("frame %zu (%u bytes): %s", i + 1, g.frames[i].len, xrxe_parse_strerror(rc));
}

/* The layout every parsed frame must have, from the opcode table alone. */
static void check_layout(size_t i, const struct xrxe_pkt *pkt)
{
	const struct xrxe_opcode_info *op = pkt->op;
	uint16_t l3 = XRXE_ETH_HLEN;
	uint16_t l4 = l3 + (pkt->ip_version == 4 ? XRXE_IPV4_HLEN : XRXE_IPV6_HLEN);

	cr_assert_not_null(op);
	cr_assert_eq(op, xrxe_opcode_info(pkt->opcode));
	cr_assert(!pkt->has_vlan);
	cr_assert_eq(pkt->l3_off, l3);
	cr_assert_eq(pkt->l4_off, l4);
	cr_assert_eq(pkt->bth_off, l4 + XRXE_UDP_HLEN);
	for (int h = 0; h < XRXE_HDR_COUNT; h++) {
		if (op->hdrs & XRXE_HDR_BIT(h))
			cr_assert_eq(pkt->hdr_off[h], pkt->bth_off + op->offset[h], "frame %zu hdr %d",
				     i + 1, h);
		else
			cr_assert_eq(pkt->hdr_off[h], 0, "frame %zu hdr %d present", i + 1, h);
	}
	cr_assert_eq(pkt->payload_off, pkt->bth_off + op->length);
	cr_assert_eq(pkt->payload_off + pkt->payload_len + pkt->pad + XRXE_ICRC_LEN, g.frames[i].len,
		     "frame %zu: layout does not add up to the frame length", i + 1);
	cr_assert_eq(xrxe_bth_tver(xrxe_pkt_bth(pkt)), 0);
	cr_assert_eq(xrxe_bth_pkey(xrxe_pkt_bth(pkt)), XRXE_DEFAULT_PKEY); /* rxe quirk 3 */
}

static void check_icrc(size_t i, const struct xrxe_pkt *pkt)
{
	const uint8_t *f = g.frames[i].data;
	uint32_t len = g.frames[i].len;
	uint32_t trailer = f[len - 4] | f[len - 3] << 8 | f[len - 2] << 16 | (uint32_t)f[len - 1] << 24;

	cr_assert_eq(pkt->icrc, trailer);
	cr_assert(xrxe_icrc_verify(pkt), "frame %zu: ICRC does not verify", i + 1);
	cr_assert_eq(xrxe_icrc(f, len, pkt->l3_off), trailer, "frame %zu: xrxe_icrc %08x != %08x",
		     i + 1, xrxe_icrc(f, len, pkt->l3_off), trailer);
}

static void check_rebuild(size_t i, const struct xrxe_pkt *pkt)
{
	struct xrxe_pkt_spec spec;
	uint8_t *out = malloc(g.frames[i].len);
	int n;

	cr_assert_eq(xrxe_pkt_to_spec(pkt, &spec), 0);
	cr_assert_eq(xrxe_build_frame_len(&spec), g.frames[i].len);
	n = xrxe_build(out, g.frames[i].len, &spec);
	cr_assert_eq(n, (int)g.frames[i].len, "frame %zu: build returned %d", i + 1, n);
	for (uint32_t b = 0; b < g.frames[i].len; b++)
		if (out[b] != g.frames[i].data[b])
			cr_assert_fail("frame %zu: rebuilt byte %u is %02x, rxe sent %02x", i + 1, b, out[b],
				 g.frames[i].data[b]);
	free(out);
}

/* ---- rxe-golden.pcap ------------------------------------------------------ */

TestSuite(golden_main, .init = load_main, .fini = unload);

Test(golden_main, opcode_counts)
{
	/* golden/README.md: "Opcodes present (decimal, count)" */
	static const unsigned want[256] = {
		[17] = 42, [4] = 16, [0] = 11, [1] = 11, [2] = 11, [18] = 10, [10] = 10, [36] = 6,
		[100] = 6, [6] = 5, [7] = 5, [8] = 5, [12] = 5, [13] = 5, [14] = 5, [15] = 5,
		[19] = 5, [20] = 5,
	};
	unsigned got[256] = { 0 };
	struct xrxe_pkt pkt;

	for (size_t i = 0; i < g.count; i++) {
		parse_ok(i, &pkt);
		cr_assert_eq(pkt.ip_version, 4);
		got[pkt.opcode]++;
	}
	for (int op = 0; op < 256; op++)
		cr_expect_eq(got[op], want[op], "opcode %d (%s): %u frames, README says %u", op,
			     xrxe_opcode_info(op) ? xrxe_opcode_info(op)->name : "?", got[op], want[op]);
}

Test(golden_main, header_layout)
{
	struct xrxe_pkt pkt;

	for (size_t i = 0; i < g.count; i++) {
		parse_ok(i, &pkt);
		check_layout(i, &pkt);
	}
}

Test(golden_main, icrc_verifies)
{
	struct xrxe_pkt pkt;

	for (size_t i = 0; i < g.count; i++) {
		parse_ok(i, &pkt);
		check_icrc(i, &pkt);
	}
}

Test(golden_main, rebuild_byte_for_byte)
{
	struct xrxe_pkt pkt;

	for (size_t i = 0; i < g.count; i++) {
		parse_ok(i, &pkt);
		check_rebuild(i, &pkt);
	}
}

Test(golden_main, field_spot_checks)
{
	struct xrxe_pkt pkt;
	unsigned ud = 0, cas = 0, fadd = 0, wr_first = 0, rd_req = 0;
	uint32_t last_atomic_msn = 0;

	for (size_t i = 0; i < g.count; i++) {
		const struct xrxe_bth *bth;

		parse_ok(i, &pkt);
		bth = xrxe_pkt_bth(&pkt);
		cr_assert(!xrxe_bth_fecn(bth) && !xrxe_bth_becn(bth) && !xrxe_bth_mig(bth));
		cr_assert_eq(xrxe_bth_resv6(bth), 0);
		cr_assert_eq(xrxe_bth_resv7(bth), 0);

		switch (pkt.opcode) {
		case XRXE_OPCODE(UD, SEND_ONLY): {
			/* ibv_ud_pingpong: Q_Key 0x11111111; both hosts' QP is 0x13, and
			 * SrcQP is the sender's own QPN. */
			const struct xrxe_deth *deth = xrxe_pkt_hdr(&pkt, XRXE_HDR_DETH);

			cr_assert_not_null(deth);
			cr_assert_eq(xrxe_deth_qkey(deth), 0x11111111u);
			cr_assert_eq(xrxe_deth_sqp(deth), 0x13);
			cr_assert_eq(xrxe_bth_qpn(bth), 0x13);
			cr_assert_eq(pkt.payload_len, 512); /* -s 512 */
			cr_assert(!xrxe_bth_ackreq(bth));
			ud++;
			break;
		}
		case XRXE_OPCODE(UC, SEND_ONLY):
			cr_assert_eq(pkt.payload_len, 1000); /* ibv_uc_pingpong -s 1000 */
			cr_assert(!xrxe_bth_ackreq(bth), "UC never asks for an ACK");
			break;
		case XRXE_OPCODE(RC, SEND_FIRST):
		case XRXE_OPCODE(RC, SEND_MIDDLE):
		case XRXE_OPCODE(RC, RDMA_WRITE_MIDDLE):
		case XRXE_OPCODE(RC, RDMA_READ_RESPONSE_FIRST):
		case XRXE_OPCODE(RC, RDMA_READ_RESPONSE_MIDDLE):
			cr_assert_eq(pkt.payload_len, 1024, "path MTU 1024");
			break;
		case XRXE_OPCODE(RC, ACKNOWLEDGE):
		case XRXE_OPCODE(RC, ATOMIC_ACKNOWLEDGE): {
			const struct xrxe_aeth *aeth = xrxe_pkt_hdr(&pkt, XRXE_HDR_AETH);

			cr_assert_eq(xrxe_aeth_syndrome(aeth), XRXE_AETH_ACK_UNLIMITED);
			cr_assert_eq(pkt.payload_len, 0);
			if (pkt.opcode == XRXE_OPCODE(RC, ATOMIC_ACKNOWLEDGE)) {
				/* one atomic per message: the MSN counts 1..5 per run */
				uint32_t msn = xrxe_aeth_msn(aeth);

				cr_assert(msn == last_atomic_msn + 1 || msn == 1);
				last_atomic_msn = msn;
				cr_assert_not_null(xrxe_pkt_hdr(&pkt, XRXE_HDR_ATMACK));
			}
			break;
		}
		case XRXE_OPCODE(RC, COMPARE_SWAP):
		case XRXE_OPCODE(RC, FETCH_ADD): {
			const struct xrxe_atmeth *a = xrxe_pkt_hdr(&pkt, XRXE_HDR_ATMETH);

			cr_assert_eq(xrxe_atmeth_va(a) & 7, 0, "atomics are 8-byte aligned");
			cr_assert_neq(xrxe_atmeth_rkey(a), 0);
			cr_assert_eq(xrxe_atmeth_comp(a), 0);
			/* ib_atomic_bw: CAS swaps 0 for 0, FETCH_ADD adds 1 */
			if (pkt.opcode == XRXE_OPCODE(RC, FETCH_ADD)) {
				cr_assert_eq(xrxe_atmeth_swap_add(a), 1);
				fadd++;
			} else {
				cr_assert_eq(xrxe_atmeth_swap_add(a), 0);
				cas++;
			}
			cr_assert(xrxe_bth_ackreq(bth));
			break;
		}
		case XRXE_OPCODE(RC, RDMA_WRITE_FIRST):
		case XRXE_OPCODE(RC, RDMA_READ_REQUEST): {
			const struct xrxe_reth *r = xrxe_pkt_hdr(&pkt, XRXE_HDR_RETH);

			cr_assert_eq(xrxe_reth_len(r), 2500, "-s 2500: the RETH has the whole length");
			cr_assert_neq(xrxe_reth_rkey(r), 0);
			if (pkt.opcode == XRXE_OPCODE(RC, RDMA_READ_REQUEST)) {
				cr_assert_eq(pkt.payload_len, 0);
				rd_req++;
			} else {
				cr_assert_eq(pkt.payload_len, 1024, "path MTU 1024");
				wr_first++;
			}
			break;
		}
		case XRXE_OPCODE(RC, RDMA_WRITE_ONLY):
			cr_assert_eq(xrxe_reth_len(xrxe_pkt_hdr(&pkt, XRXE_HDR_RETH)), 64); /* -s 64 */
			cr_assert_eq(pkt.payload_len, 64);
			break;
		default:
			break;
		}
	}
	cr_assert_eq(ud, 6);
	cr_assert_eq(cas, 5);
	cr_assert_eq(fadd, 5);
	cr_assert_eq(wr_first, 5);
	cr_assert_eq(rd_req, 5);
}

Test(golden_main, ack_psn_matches_request)
{
	/* The first RC exchange: requests on PSN p, p+1, p+2, then an ACK whose
	 * BTH PSN is the last request's and whose MSN counts the message. */
	struct xrxe_pkt req, ack;

	parse_ok(2, &req); /* frame 3: SEND_LAST */
	parse_ok(3, &ack); /* frame 4: ACKNOWLEDGE */
	cr_assert_eq(req.opcode, XRXE_OPCODE(RC, SEND_LAST));
	cr_assert_eq(ack.opcode, XRXE_OPCODE(RC, ACKNOWLEDGE));
	cr_assert_eq(xrxe_bth_psn(xrxe_pkt_bth(&ack)), xrxe_bth_psn(xrxe_pkt_bth(&req)));
	cr_assert_eq(xrxe_aeth_msn(xrxe_pkt_hdr(&ack, XRXE_HDR_AETH)), 1);
}

/* ---- rxe-ipv6-rnr-loss.pcap ----------------------------------------------- */

TestSuite(golden_loss, .init = load_loss, .fini = unload, .timeout = 120);

Test(golden_loss, parse_layout_icrc_rebuild)
{
	struct xrxe_pkt pkt;
	unsigned v6 = 0;

	for (size_t i = 0; i < g.count; i++) {
		parse_ok(i, &pkt);
		check_layout(i, &pkt);
		check_icrc(i, &pkt);
		check_rebuild(i, &pkt);
		v6 += pkt.ip_version == 6;
	}
	cr_assert_eq(v6, 24, "README: 24 IPv6 frames, got %u", v6);
}

Test(golden_loss, aeth_syndromes)
{
	struct xrxe_pkt pkt;
	unsigned ack = 0, nak_seq = 0, rnr = 0, other = 0;

	for (size_t i = 0; i < g.count; i++) {
		const struct xrxe_aeth *aeth;
		uint8_t syn;

		parse_ok(i, &pkt);
		aeth = xrxe_pkt_hdr(&pkt, XRXE_HDR_AETH);
		cr_assert_eq(aeth != NULL, (pkt.op->flags & XRXE_OPF_ACK) != 0);
		if (!aeth)
			continue;
		syn = xrxe_aeth_syndrome(aeth);
		if (syn == XRXE_AETH_ACK_UNLIMITED)
			ack++;
		else if (syn == XRXE_AETH_NAK_PSN_SEQ)
			nak_seq++;
		else if (syn == (XRXE_AETH_RNR_NAK | 12))
			rnr++;
		else
			other++;
		/* NAKs come only in ACKNOWLEDGE packets */
		if ((syn & XRXE_AETH_TYPE_MASK) != XRXE_AETH_ACK)
			cr_assert_eq(pkt.opcode, XRXE_OPCODE(RC, ACKNOWLEDGE));
	}
	cr_expect_eq(ack, 329);
	cr_expect_eq(nak_seq, 37);
	cr_expect_eq(rnr, 19);
	cr_expect_eq(other, 0);
}

Test(golden_loss, ipv6_frames)
{
	static const uint8_t a[16] = { 0xfd, 0x77, [15] = 1 }, b[16] = { 0xfd, 0x77, [15] = 2 };
	struct xrxe_pkt pkt;
	unsigned ud = 0;

	for (size_t i = 0; i < g.count; i++) {
		const uint8_t *ip;

		parse_ok(i, &pkt);
		if (pkt.ip_version != 6)
			continue;
		ip = g.frames[i].data + pkt.l3_off;
		/* rxe quirks: flow label 0, hop limit 64, UDP checksum 0 even on IPv6 */
		cr_assert_eq(ip[0], 0x60);
		cr_assert_eq(ip[1] | ip[2] | ip[3], 0);
		cr_assert_eq(ip[7], 64);
		cr_assert_eq(g.frames[i].data[pkt.l4_off + 6] | g.frames[i].data[pkt.l4_off + 7], 0);
		cr_assert(!memcmp(ip + 8, a, 16) || !memcmp(ip + 8, b, 16));
		if (pkt.opcode == XRXE_OPCODE(UD, SEND_ONLY)) {
			const struct xrxe_deth *deth = xrxe_pkt_hdr(&pkt, XRXE_HDR_DETH);

			cr_assert_eq(xrxe_deth_qkey(deth), 0x11111111u);
			cr_assert_eq(xrxe_deth_sqp(deth), 0x12);
			cr_assert_eq(pkt.payload_len, 256);
			ud++;
		}
	}
	cr_assert_eq(ud, 6);
}
