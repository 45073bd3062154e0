// SPDX-License-Identifier: MIT
/*
 * ICRC: the two worked vectors of docs/facts/rxe.md §1.5 (one from real ConnectX-4 Lx
 * hardware), and the coverage of the mask: every single-bit flip inside the
 * ICRC's coverage is caught, every flip of a masked bit is not.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "golden.h"
#include "xrxe/wire.h"

/* A: CNP captured on a ConnectX-4 Lx (scapy roce.uts); ICRC on the wire 82 fd 00 2a. */
static const char VEC_A[] =
	"e4 1d 2d ab 2b c2 7c fe 90 64 3b 32 08 00 45 c2 00 3c 71 8c 40 00 40 11 91 61 0a 00 11 01 0a 00"
	"12 01 00 00 12 b7 00 28 00 00 81 00 ff ff 40 00 01 18 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
	"00 00 00 00 00 00 82 fd 00 2a";
/* B: UC SEND_ONLY, MigReq, pad 2, IP csum 0xb4d5, UDP csum 0xaca2; ICRC 78 f3 53 f3. */
static const char VEC_B[] =
	"24 8a 07 a8 fa 22 24 8a 07 a8 fa 22 08 00 45 01 00 40 04 78 40 00 40 11 b4 d5 c0 a8 00 07 c0 a8"
	"00 07 c0 00 12 b7 00 2c ac a2 24 60 ff ff 00 00 00 d3 00 cf 17 10 46 30 81 8b e2 89 35 d9 0e 9a"
	"95 50 54 01 be 88 5e 50 00 00 78 f3 53 f3";

static size_t load_vec(const char *hex, uint8_t *buf, size_t cap)
{
	size_t n = xrxe_test_unhex(hex, buf, cap);

	cr_assert_leq(n, cap);
	return n;
}

Test(icrc_vector, a_cnp_connectx4)
{
	uint8_t f[128];
	size_t n = load_vec(VEC_A, f, sizeof(f));
	struct xrxe_pkt pkt;

	cr_assert_eq(n, 74);
	cr_assert_eq(xrxe_parse(f, n, 0, &pkt), XRXE_PARSE_OK);
	cr_assert_eq(pkt.opcode, XRXE_OP_CNP);
	cr_assert_str_eq(pkt.op->name, "CNP");
	cr_assert_eq(pkt.icrc, 0x2a00fd82u); /* scapy prints the wire bytes big-endian: 0x82fd002a */
	cr_assert_eq(xrxe_icrc(f, n, 14), 0x2a00fd82u);
	cr_assert(xrxe_bth_becn(xrxe_pkt_bth(&pkt)));
	cr_assert(!xrxe_bth_fecn(xrxe_pkt_bth(&pkt)));
	cr_assert_eq(xrxe_bth_qpn(xrxe_pkt_bth(&pkt)), 0x118);
	cr_assert_eq(pkt.payload_len, 0);
	cr_assert_eq(pkt.payload_off, 14 + 20 + 8 + 12 + 16);
}

Test(icrc_vector, a_built_from_fields)
{
	uint8_t want[128], out[128];
	size_t n = load_vec(VEC_A, want, sizeof(want));
	struct xrxe_pkt_spec s = {
		.dmac = { 0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2 },
		.smac = { 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32 },
		.ip_version = 4, .tclass = 0xc2, .ttl = 64, .ip_id = 0x718c, .ip_df = true,
		.sport = 0, .opcode = XRXE_OP_CNP, .becn = true, .pkey = 0xffff, .dest_qp = 0x118,
	};

	s.saddr.v4.s_addr = inet_addr("10.0.17.1");
	s.daddr.v4.s_addr = inet_addr("10.0.18.1");
	cr_assert_eq(xrxe_build_frame_len(&s), n);
	cr_assert_eq(xrxe_build(out, sizeof(out), &s), (int)n);
	cr_assert_arr_eq(out, want, n, "builder does not reproduce vector A");
}

Test(icrc_vector, b_uc_send_only)
{
	uint8_t f[128];
	size_t n = load_vec(VEC_B, f, sizeof(f));
	struct xrxe_pkt pkt;
	const struct xrxe_bth *bth;

	cr_assert_eq(n, 78);
	cr_assert_eq(xrxe_parse(f, n, 0, &pkt), XRXE_PARSE_OK);
	bth = xrxe_pkt_bth(&pkt);
	cr_assert_eq(pkt.opcode, XRXE_OPCODE(UC, SEND_ONLY));
	cr_assert_str_eq(pkt.op->name, "UC_SEND_ONLY");
	cr_assert_eq(pkt.icrc, 0xf353f378u);
	cr_assert_eq(xrxe_icrc(f, n, 14), 0xf353f378u);
	cr_assert(xrxe_bth_mig(bth));
	cr_assert_eq(xrxe_bth_pad(bth), 2);
	cr_assert_eq(xrxe_bth_qpn(bth), 211);
	cr_assert_eq(xrxe_bth_psn(bth), 13571856);
	cr_assert_eq(pkt.payload_len, 18); /* 20 wire bytes, 2 of them pad */
	cr_assert_eq(pkt.pad, 2);
}

Test(icrc_vector, b_built_from_fields)
{
	uint8_t want[128], out[128];
	size_t n = load_vec(VEC_B, want, sizeof(want));
	struct xrxe_pkt_spec s = {
		.dmac = { 0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22 },
		.smac = { 0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22 },
		.ip_version = 4, .tclass = 0x01, .ttl = 64, .ip_id = 0x0478, .ip_df = true,
		.sport = 49152, .udp_csum = true, /* the vector carries a real UDP checksum */
		.opcode = XRXE_OPCODE(UC, SEND_ONLY), .mig = true, .pkey = 0xffff,
		.dest_qp = 211, .psn = 13571856,
	};

	s.saddr.v4.s_addr = inet_addr("192.168.0.7");
	s.daddr.v4.s_addr = inet_addr("192.168.0.7");
	s.payload = want + 54;
	s.payload_len = 18;
	cr_assert_eq(xrxe_build(out, sizeof(out), &s), (int)n);
	cr_assert_arr_eq(out, want, n, "builder does not reproduce vector B");
	cr_assert_eq(out[40], 0xac); /* UDP checksum computed after the ICRC it covers */
	cr_assert_eq(out[41], 0xa2);
}

Test(icrc_vector, reparsed_spec_rebuilds_both)
{
	const char *vec[] = { VEC_A, VEC_B };

	for (int v = 0; v < 2; v++) {
		uint8_t f[128], out[128];
		size_t n = load_vec(vec[v], f, sizeof(f));
		struct xrxe_pkt pkt;
		struct xrxe_pkt_spec s;

		cr_assert_eq(xrxe_parse(f, n, 0, &pkt), XRXE_PARSE_OK);
		cr_assert_eq(xrxe_pkt_to_spec(&pkt, &s), 0);
		cr_assert_eq(xrxe_build(out, sizeof(out), &s), (int)n);
		cr_assert_arr_eq(out, f, n, "vector %c", 'A' + v);
	}
}

Test(icrc_vector, equals_zlib_over_masked_bytes)
{
	/* The one-liner of ref §1.5, with zlib as an independent CRC. */
	uint8_t f[128], m[128];
	size_t n = load_vec(VEC_B, f, sizeof(f));
	size_t k = 0;

	memset(m, 0xff, 8);
	k = 8;
	memcpy(m + k, f + 14, n - 14 - 4);
	m[k + 1] = 0xff;                   /* TOS */
	m[k + 8] = 0xff;                   /* TTL */
	m[k + 10] = m[k + 11] = 0xff;      /* IP checksum */
	m[k + 20 + 6] = m[k + 20 + 7] = 0xff; /* UDP checksum */
	m[k + 28 + 4] = 0xff;              /* BTH FECN/BECN/resv6 */
	k += n - 14 - 4;
	cr_assert_eq(crc32(0, m, k), xrxe_icrc(f, n, 14));
}

/* ---- Coverage of the mask ------------------------------------------------ */

/* Bytes (relative to the IP header) the ICRC masks, for one IP version. */
static bool masked(int ipver, size_t rel)
{
	size_t iph = ipver == 4 ? 20 : 40;

	if (ipver == 4 && (rel == 1 || rel == 8 || rel == 10 || rel == 11))
		return true; /* TOS, TTL, header checksum */
	if (ipver == 6 && (rel <= 3 || rel == 7))
		return true; /* traffic class + flow label (first byte: partly), hop limit */
	if (rel == iph + 6 || rel == iph + 7)
		return true; /* UDP checksum */
	return rel == iph + 8 + 4; /* BTH byte 4 */
}

/* For IPv6 byte 0, only the low nibble (traffic class high half) is masked. */
static bool masked_bit(int ipver, size_t rel, int bit)
{
	if (ipver == 6 && rel == 0)
		return bit < 4;
	return masked(ipver, rel);
}

/* Flip every bit of frame f from the IP header to the end of pad: a flip of a
 * covered bit changes the ICRC, a flip of a masked bit does not. */
static void flip_all_bits(const uint8_t *frame, uint32_t len, const char *what)
{
	struct xrxe_pkt pkt;
	uint8_t *f = xrxe_test_dup(frame, len);
	uint32_t end;

	cr_assert_eq(xrxe_parse(f, len, 0, &pkt), XRXE_PARSE_OK, "%s", what);
	end = pkt.payload_off + pkt.payload_len + pkt.pad;
	for (uint32_t b = pkt.l3_off; b < end; b++) {
		for (int bit = 0; bit < 8; bit++) {
			uint32_t c;
			bool m = masked_bit(pkt.ip_version, b - pkt.l3_off, bit);

			f[b] ^= (uint8_t)(1u << bit);
			c = xrxe_icrc(f, len, pkt.l3_off);
			f[b] ^= (uint8_t)(1u << bit);
			if (m && c != pkt.icrc)
				cr_assert_fail("%s: masked byte %u bit %d changed the ICRC", what, b, bit);
			if (!m && c == pkt.icrc)
				cr_assert_fail("%s: flip of byte %u bit %d not caught", what, b, bit);
		}
	}
	/* and the trailer itself */
	for (uint32_t b = end; b < end + 4; b++) {
		f[b] ^= 0x10;
		cr_assert_eq(xrxe_parse(f, len, 0, &pkt), XRXE_PARSE_ICRC_MISMATCH, "%s", what);
		f[b] ^= 0x10;
	}
	free(f);
}

Test(icrc_coverage, every_bit_of_every_main_golden_frame)
{
	struct xrxe_golden g;
	char what[64];

	cr_assert_eq(xrxe_golden_load(XRXE_GOLDEN_MAIN, &g), 0);
	for (size_t i = 0; i < g.count; i++) {
		snprintf(what, sizeof(what), "rxe-golden frame %zu", i + 1);
		flip_all_bits(g.frames[i].data, g.frames[i].len, what);
	}
	xrxe_golden_free(&g);
}

Test(icrc_coverage, every_bit_of_ipv6_and_nak_frames)
{
	struct xrxe_golden g;
	struct xrxe_pkt pkt;
	unsigned v6 = 0, naks = 0;
	char what[64];

	cr_assert_eq(xrxe_golden_load(XRXE_GOLDEN_LOSS, &g), 0);
	for (size_t i = 0; i < g.count; i++) {
		const struct xrxe_aeth *aeth;
		bool pick = false;

		cr_assert_eq(xrxe_parse(g.frames[i].data, g.frames[i].len, 0, &pkt), XRXE_PARSE_OK);
		aeth = xrxe_pkt_hdr(&pkt, XRXE_HDR_AETH);
		if (pkt.ip_version == 6) {
			pick = true;
			v6++;
		} else if (aeth && xrxe_aeth_syndrome(aeth) != XRXE_AETH_ACK_UNLIMITED && naks < 8) {
			pick = true; /* a few RNR NAKs and sequence NAKs */
			naks++;
		}
		if (pick) {
			snprintf(what, sizeof(what), "rnr-loss frame %zu", i + 1);
			flip_all_bits(g.frames[i].data, g.frames[i].len, what);
		}
	}
	cr_assert_eq(v6, 24);
	cr_assert_eq(naks, 8);
	xrxe_golden_free(&g);
}

Test(icrc_coverage, masked_fields_still_verify_through_parse)
{
	/* What a router or switch may rewrite: TTL, TOS/ECN, IP checksum, UDP
	 * checksum, FECN/BECN. The frame must still parse with a valid ICRC. */
	uint8_t f[128];
	size_t n = load_vec(VEC_B, f, sizeof(f));
	static const size_t off[] = { 15, 22, 24, 25, 40, 41, 46 };
	struct xrxe_pkt pkt;

	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		for (int bit = 0; bit < 8; bit++) {
			f[off[i]] ^= (uint8_t)(1u << bit);
			cr_assert_eq(xrxe_parse(f, n, 0, &pkt), XRXE_PARSE_OK, "byte %zu bit %d", off[i],
				     bit);
			f[off[i]] ^= (uint8_t)(1u << bit);
		}
	}
	/* a switch marks FECN: still valid, and the parser reports it */
	f[46] |= 0x80;
	cr_assert_eq(xrxe_parse(f, n, 0, &pkt), XRXE_PARSE_OK);
	cr_assert(xrxe_bth_fecn(xrxe_pkt_bth(&pkt)));
}

Test(icrc_frags, chained_over_fragments_equals_contiguous)
{
	struct xrxe_golden g;

	cr_assert_eq(xrxe_golden_load(XRXE_GOLDEN_MAIN, &g), 0);
	for (size_t i = 0; i < g.count; i++) {
		uint8_t *f = g.frames[i].data;
		uint32_t len = g.frames[i].len, want = xrxe_icrc(f, len, 14);

		for (uint32_t k = 62; k <= len; k += 7) {
			struct xrxe_frag fr[2] = { { f, k }, { f + k, len - k } };

			cr_assert_eq(xrxe_icrc_frags(fr, 2, 14), want, "frame %zu split %u", i + 1, k);
		}
	}
	xrxe_golden_free(&g);
}
