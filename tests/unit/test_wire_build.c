// SPDX-License-Identifier: MIT
/*
 * The opcode table, the header accessors, and the builder: every opcode in the
 * table, over IPv4 and IPv6, with and without a VLAN tag, with random field
 * values, builds a frame that parses back to the same fields and rebuilds to
 * the same bytes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "xrxe/wire.h"

/* ---- Opcode table ---------------------------------------------------------- */

static const size_t hdr_len[XRXE_HDR_COUNT] = {
	[XRXE_HDR_RDETH] = XRXE_RDETH_LEN, [XRXE_HDR_DETH] = XRXE_DETH_LEN,
	[XRXE_HDR_FETH] = XRXE_FETH_LEN,   [XRXE_HDR_RETH] = XRXE_RETH_LEN,
	[XRXE_HDR_ATMETH] = XRXE_ATMETH_LEN, [XRXE_HDR_AETH] = XRXE_AETH_LEN,
	[XRXE_HDR_ATMACK] = XRXE_ATMACK_LEN, [XRXE_HDR_IMMDT] = XRXE_IMMDT_LEN,
	[XRXE_HDR_IETH] = XRXE_IETH_LEN, [XRXE_HDR_XRCETH] = XRXE_XRCETH_LEN,
};

#define H(x) XRXE_HDR_BIT(XRXE_HDR_##x)

/* docs/facts/rxe.md §1.4, written out independently of src/wire/opcode.c */
static const struct {
	uint8_t op;
	const char *name;
	uint16_t hdrs;
	uint8_t payload;
} expected[] = {
	{ 0x00, "RC_SEND_FIRST", 0, XRXE_PAYLOAD_FULL_MTU },
	{ 0x01, "RC_SEND_MIDDLE", 0, XRXE_PAYLOAD_FULL_MTU },
	{ 0x02, "RC_SEND_LAST", 0, XRXE_PAYLOAD_ANY },
	{ 0x03, "RC_SEND_LAST_WITH_IMMEDIATE", H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0x04, "RC_SEND_ONLY", 0, XRXE_PAYLOAD_ANY },
	{ 0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0x06, "RC_RDMA_WRITE_FIRST", H(RETH), XRXE_PAYLOAD_FULL_MTU },
	{ 0x07, "RC_RDMA_WRITE_MIDDLE", 0, XRXE_PAYLOAD_FULL_MTU },
	{ 0x08, "RC_RDMA_WRITE_LAST", 0, XRXE_PAYLOAD_ANY },
	{ 0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0x0a, "RC_RDMA_WRITE_ONLY", H(RETH), XRXE_PAYLOAD_ANY },
	{ 0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", H(RETH) | H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0x0c, "RC_RDMA_READ_REQUEST", H(RETH), XRXE_PAYLOAD_NONE },
	{ 0x0d, "RC_RDMA_READ_RESPONSE_FIRST", H(AETH), XRXE_PAYLOAD_FULL_MTU },
	{ 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 0, XRXE_PAYLOAD_FULL_MTU },
	{ 0x0f, "RC_RDMA_READ_RESPONSE_LAST", H(AETH), XRXE_PAYLOAD_ANY },
	{ 0x10, "RC_RDMA_READ_RESPONSE_ONLY", H(AETH), XRXE_PAYLOAD_ANY },
	{ 0x11, "RC_ACKNOWLEDGE", H(AETH), XRXE_PAYLOAD_NONE },
	{ 0x12, "RC_ATOMIC_ACKNOWLEDGE", H(AETH) | H(ATMACK), XRXE_PAYLOAD_NONE },
	{ 0x13, "RC_COMPARE_SWAP", H(ATMETH), XRXE_PAYLOAD_NONE },
	{ 0x14, "RC_FETCH_ADD", H(ATMETH), XRXE_PAYLOAD_NONE },
	{ 0x16, "RC_SEND_LAST_WITH_INVALIDATE", H(IETH), XRXE_PAYLOAD_ANY },
	{ 0x17, "RC_SEND_ONLY_WITH_INVALIDATE", H(IETH), XRXE_PAYLOAD_ANY },
	{ 0x1c, "RC_FLUSH", H(FETH) | H(RETH), XRXE_PAYLOAD_NONE },
	{ 0x1d, "RC_ATOMIC_WRITE", H(RETH), XRXE_PAYLOAD_8 },
	{ 0x20, "UC_SEND_FIRST", 0, XRXE_PAYLOAD_FULL_MTU },
	{ 0x21, "UC_SEND_MIDDLE", 0, XRXE_PAYLOAD_FULL_MTU },
	{ 0x22, "UC_SEND_LAST", 0, XRXE_PAYLOAD_ANY },
	{ 0x23, "UC_SEND_LAST_WITH_IMMEDIATE", H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0x24, "UC_SEND_ONLY", 0, XRXE_PAYLOAD_ANY },
	{ 0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0x26, "UC_RDMA_WRITE_FIRST", H(RETH), XRXE_PAYLOAD_FULL_MTU },
	{ 0x27, "UC_RDMA_WRITE_MIDDLE", 0, XRXE_PAYLOAD_FULL_MTU },
	{ 0x28, "UC_RDMA_WRITE_LAST", 0, XRXE_PAYLOAD_ANY },
	{ 0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0x2a, "UC_RDMA_WRITE_ONLY", H(RETH), XRXE_PAYLOAD_ANY },
	{ 0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", H(RETH) | H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0x64, "UD_SEND_ONLY", H(DETH), XRXE_PAYLOAD_ANY },
	{ 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", H(DETH) | H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0x81, "CNP", 0, XRXE_PAYLOAD_CNP },
	/* XRC (IBA table 38, 101xxxxx): requests carry the XRCETH after the BTH */
	{ 0xa0, "XRC_SEND_FIRST", H(XRCETH), XRXE_PAYLOAD_FULL_MTU },
	{ 0xa1, "XRC_SEND_MIDDLE", H(XRCETH), XRXE_PAYLOAD_FULL_MTU },
	{ 0xa2, "XRC_SEND_LAST", H(XRCETH), XRXE_PAYLOAD_ANY },
	{ 0xa3, "XRC_SEND_LAST_WITH_IMMEDIATE", H(XRCETH) | H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0xa4, "XRC_SEND_ONLY", H(XRCETH), XRXE_PAYLOAD_ANY },
	{ 0xa5, "XRC_SEND_ONLY_WITH_IMMEDIATE", H(XRCETH) | H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0xa6, "XRC_RDMA_WRITE_FIRST", H(XRCETH) | H(RETH), XRXE_PAYLOAD_FULL_MTU },
	{ 0xa7, "XRC_RDMA_WRITE_MIDDLE", H(XRCETH), XRXE_PAYLOAD_FULL_MTU },
	{ 0xa8, "XRC_RDMA_WRITE_LAST", H(XRCETH), XRXE_PAYLOAD_ANY },
	{ 0xa9, "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE", H(XRCETH) | H(IMMDT), XRXE_PAYLOAD_ANY },
	{ 0xaa, "XRC_RDMA_WRITE_ONLY", H(XRCETH) | H(RETH), XRXE_PAYLOAD_ANY },
	{ 0xab, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", H(XRCETH) | H(RETH) | H(IMMDT),
	  XRXE_PAYLOAD_ANY },
	{ 0xac, "XRC_RDMA_READ_REQUEST", H(XRCETH) | H(RETH), XRXE_PAYLOAD_NONE },
	{ 0xad, "XRC_RDMA_READ_RESPONSE_FIRST", H(AETH), XRXE_PAYLOAD_FULL_MTU },
	{ 0xae, "XRC_RDMA_READ_RESPONSE_MIDDLE", 0, XRXE_PAYLOAD_FULL_MTU },
	{ 0xaf, "XRC_RDMA_READ_RESPONSE_LAST", H(AETH), XRXE_PAYLOAD_ANY },
	{ 0xb0, "XRC_RDMA_READ_RESPONSE_ONLY", H(AETH), XRXE_PAYLOAD_ANY },
	{ 0xb1, "XRC_ACKNOWLEDGE", H(AETH), XRXE_PAYLOAD_NONE },
	{ 0xb2, "XRC_ATOMIC_ACKNOWLEDGE", H(AETH) | H(ATMACK), XRXE_PAYLOAD_NONE },
	{ 0xb3, "XRC_COMPARE_SWAP", H(XRCETH) | H(ATMETH), XRXE_PAYLOAD_NONE },
	{ 0xb4, "XRC_FETCH_ADD", H(XRCETH) | H(ATMETH), XRXE_PAYLOAD_NONE },
	{ 0xb6, "XRC_SEND_LAST_WITH_INVALIDATE", H(XRCETH) | H(IETH), XRXE_PAYLOAD_ANY },
	{ 0xb7, "XRC_SEND_ONLY_WITH_INVALIDATE", H(XRCETH) | H(IETH), XRXE_PAYLOAD_ANY },
	{ 0xe0, "XRXE_SACK", H(AETH), XRXE_PAYLOAD_SACK }, /* docs/selective-repeat.md */
};
#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

Test(opcode_table, exactly_the_expected_opcodes)
{
	unsigned known = 0;

	for (int op = 0; op < 256; op++) {
		const struct xrxe_opcode_info *info = xrxe_opcode_info((uint8_t)op);
		size_t e;

		for (e = 0; e < NEXPECTED && expected[e].op != op; e++)
			;
		if (e == NEXPECTED) {
			cr_assert_null(info, "opcode %#x should be unknown, is %s", op,
				       info ? info->name : "");
			continue;
		}
		known++;
		cr_assert_not_null(info, "opcode %#x missing", op);
		cr_assert_str_eq(info->name, expected[e].name);
		cr_assert_eq(info->hdrs, expected[e].hdrs, "%s headers", info->name);
		cr_assert_eq(info->payload, expected[e].payload, "%s payload rule", info->name);
	}
	cr_assert_eq(known, NEXPECTED);
	for (int op = 0x40; op <= 0x5f; op++)
		cr_assert_null(xrxe_opcode_info((uint8_t)op), "RD is not supported");
}

Test(opcode_table, offsets_follow_wire_order)
{
	for (size_t e = 0; e < NEXPECTED; e++) {
		const struct xrxe_opcode_info *info = xrxe_opcode_info(expected[e].op);
		size_t off = XRXE_BTH_LEN;

		for (int h = 0; h < XRXE_HDR_COUNT; h++) {
			if (info->hdrs & XRXE_HDR_BIT(h)) {
				cr_assert_eq(info->offset[h], off, "%s hdr %d", info->name, h);
				off += hdr_len[h];
			} else {
				cr_assert_eq(info->offset[h], 0, "%s hdr %d", info->name, h);
			}
		}
		cr_assert_eq(info->length, off, "%s length", info->name);
	}
	/* spot checks against the byte counts of ref §1.4 */
	cr_assert_eq(xrxe_opcode_info(0x1c)->offset[XRXE_HDR_FETH], 12);
	cr_assert_eq(xrxe_opcode_info(0x1c)->offset[XRXE_HDR_RETH], 16);
	cr_assert_eq(xrxe_opcode_info(0x1c)->length, 32);
	cr_assert_eq(xrxe_opcode_info(0x65)->offset[XRXE_HDR_IMMDT], 20);
	cr_assert_eq(xrxe_opcode_info(0x12)->offset[XRXE_HDR_ATMACK], 16);
	cr_assert_eq(xrxe_opcode_info(0x12)->length, 24);
	cr_assert_eq(xrxe_opcode_info(0x13)->length, 40);
	cr_assert_eq(xrxe_opcode_info(0x0b)->length, 32);
	/* XRC: XRCETH at 12, then RETH / AtomicETH (IBA 9.3) */
	cr_assert_eq(xrxe_opcode_info(0xaa)->offset[XRXE_HDR_XRCETH], 12);
	cr_assert_eq(xrxe_opcode_info(0xaa)->offset[XRXE_HDR_RETH], 16);
	cr_assert_eq(xrxe_opcode_info(0xb3)->length, 44);
}

Test(opcode_table, flags_agree_with_headers)
{
	for (size_t e = 0; e < NEXPECTED; e++) {
		const struct xrxe_opcode_info *i = xrxe_opcode_info(expected[e].op);
		uint16_t f = i->flags;

		cr_assert_eq(!!(f & XRXE_OPF_ACK), !!(i->hdrs & H(AETH)), "%s", i->name);
		cr_assert_eq(!!(f & XRXE_OPF_IMM), !!(i->hdrs & H(IMMDT)), "%s", i->name);
		cr_assert_eq(!!(f & XRXE_OPF_INV), !!(i->hdrs & H(IETH)), "%s", i->name);
		cr_assert_eq(!!(f & XRXE_OPF_ATOMIC) && (f & XRXE_OPF_REQUEST),
			     !!(i->hdrs & H(ATMETH)), "%s", i->name);
		if (expected[e].op == XRXE_OP_CNP) {
			cr_assert_eq(f, XRXE_OPF_CNP);
			continue;
		}
		cr_assert_eq(!!(f & XRXE_OPF_REQUEST) + !!(f & XRXE_OPF_RESPONSE), 1, "%s", i->name);
		cr_assert(f & (XRXE_OPF_FIRST | XRXE_OPF_MIDDLE | XRXE_OPF_LAST), "%s", i->name);
		cr_assert_eq(!!(f & XRXE_OPF_MIDDLE), strstr(i->name, "MIDDLE") != NULL, "%s", i->name);
		cr_assert_eq(i->payload == XRXE_PAYLOAD_FULL_MTU,
			     (f & (XRXE_OPF_FIRST | XRXE_OPF_LAST)) != (XRXE_OPF_FIRST | XRXE_OPF_LAST) &&
				     !(f & XRXE_OPF_LAST),
			     "%s: FIRST/MIDDLE carry a full MTU", i->name);
		cr_assert_eq(!!(f & XRXE_OPF_SEND), strstr(i->name, "SEND") != NULL, "%s", i->name);
		cr_assert_eq(!!(f & XRXE_OPF_WRITE), strstr(i->name, "RDMA_WRITE") != NULL, "%s", i->name);
		cr_assert_eq(!!(f & XRXE_OPF_READ), strstr(i->name, "RDMA_READ") != NULL, "%s", i->name);
	}
}

/* ---- Accessors ------------------------------------------------------------ */

Test(accessors, bth_bits_land_where_the_spec_puts_them)
{
	struct xrxe_bth b;
	const uint8_t *p = (const uint8_t *)&b;

	memset(&b, 0, sizeof(b));
	xrxe_bth_set_opcode(&b, 0x64);
	xrxe_bth_set_se(&b, true);
	xrxe_bth_set_pad(&b, 3);
	xrxe_bth_set_pkey(&b, 0x8001);
	xrxe_bth_set_becn(&b, true);
	xrxe_bth_set_qpn(&b, 0xabcdef);
	xrxe_bth_set_ackreq(&b, true);
	xrxe_bth_set_psn(&b, 0x123456);
	static const uint8_t want[12] = { 0x64, 0xb0, 0x80, 0x01, 0x40, 0xab,
					  0xcd, 0xef, 0x80, 0x12, 0x34, 0x56 };
	cr_assert_arr_eq(p, want, 12);
	xrxe_bth_set_mig(&b, true);
	xrxe_bth_set_tver(&b, 0xf);
	xrxe_bth_set_fecn(&b, true);
	cr_assert_eq(p[1], 0xff);
	cr_assert_eq(p[4], 0xc0);
	/* setters touch only their own bits */
	xrxe_bth_set_qpn(&b, 0x1ffffff);
	cr_assert_eq(xrxe_bth_qpn(&b), 0xffffff);
	cr_assert(xrxe_bth_fecn(&b) && xrxe_bth_becn(&b));
	cr_assert_eq(xrxe_bth_resv6(&b), 0);
	xrxe_bth_set_psn(&b, 0);
	cr_assert(xrxe_bth_ackreq(&b));
	xrxe_bth_set_se(&b, false);
	xrxe_bth_set_pad(&b, 0);
	cr_assert_eq(p[1], 0x4f);
	cr_assert(xrxe_bth_mig(&b));
	cr_assert_eq(xrxe_bth_tver(&b), 0xf);
	p = memset(&b, 0xff, sizeof(b));
	cr_assert_eq(xrxe_bth_resv6(&b), 0x3f);
	cr_assert_eq(xrxe_bth_resv7(&b), 0x7f);
	cr_assert_eq(xrxe_bth_pad(&b), 3);
}

Test(accessors, extended_headers_round_trip_and_layout)
{
	uint8_t buf[64] __attribute__((aligned(8)));
	uint64_t seed = 99;

	for (int i = 0; i < 1000; i++) {
		/* an odd offset: unaligned on purpose */
		uint8_t *p = buf + 1 + (i % 7);
		uint64_t r1 = xrxe_test_rand(&seed), r2 = xrxe_test_rand(&seed);
		uint64_t r3 = xrxe_test_rand(&seed);

		memset(buf, 0, sizeof(buf));
		struct xrxe_atmeth *a = (struct xrxe_atmeth *)p;
		xrxe_atmeth_set_va(a, r1);
		xrxe_atmeth_set_rkey(a, (uint32_t)r2);
		xrxe_atmeth_set_swap_add(a, r3);
		xrxe_atmeth_set_comp(a, ~r1);
		cr_assert_eq(xrxe_atmeth_va(a), r1);
		cr_assert_eq(xrxe_atmeth_rkey(a), (uint32_t)r2);
		cr_assert_eq(xrxe_atmeth_swap_add(a), r3);
		cr_assert_eq(xrxe_atmeth_comp(a), ~r1);
		cr_assert_eq(p[0], (uint8_t)(r1 >> 56));
		cr_assert_eq(p[11], (uint8_t)r2);
		cr_assert_eq(p[12], (uint8_t)(r3 >> 56));
		cr_assert_eq(p[27], (uint8_t)~r1);

		memset(buf, 0, sizeof(buf));
		struct xrxe_reth *r = (struct xrxe_reth *)p;
		xrxe_reth_set_va(r, r1);
		xrxe_reth_set_rkey(r, (uint32_t)r2);
		xrxe_reth_set_len(r, (uint32_t)r3);
		cr_assert_eq(xrxe_reth_va(r), r1);
		cr_assert_eq(xrxe_reth_rkey(r), (uint32_t)r2);
		cr_assert_eq(xrxe_reth_len(r), (uint32_t)r3);
		cr_assert_eq(p[15], (uint8_t)r3);

		memset(buf, 0, sizeof(buf));
		struct xrxe_deth *d = (struct xrxe_deth *)p;
		xrxe_deth_set_qkey(d, (uint32_t)r1);
		xrxe_deth_set_sqp(d, (uint32_t)r2);
		cr_assert_eq(xrxe_deth_qkey(d), (uint32_t)r1);
		cr_assert_eq(xrxe_deth_sqp(d), (uint32_t)r2 & 0xffffff);
		cr_assert_eq(p[4], 0, "DETH resv8 stays zero");

		memset(buf, 0, sizeof(buf));
		struct xrxe_aeth *ae = (struct xrxe_aeth *)p;
		xrxe_aeth_set_msn(ae, (uint32_t)r1);
		xrxe_aeth_set_syndrome(ae, (uint8_t)r2);
		cr_assert_eq(xrxe_aeth_syndrome(ae), (uint8_t)r2);
		cr_assert_eq(xrxe_aeth_msn(ae), (uint32_t)r1 & 0xffffff);
		cr_assert_eq(p[0], (uint8_t)r2);

		struct xrxe_atmack *k = (struct xrxe_atmack *)p;
		xrxe_atmack_set_orig(k, r3);
		cr_assert_eq(xrxe_atmack_orig(k), r3);
		cr_assert_eq(p[7], (uint8_t)r3);

		struct xrxe_immdt *im = (struct xrxe_immdt *)p;
		xrxe_immdt_set_imm(im, htobe32(0x01020304));
		cr_assert_eq(p[0], 1, "ImmDt is passed through in network order");
		cr_assert_eq(xrxe_immdt_imm(im), htobe32(0x01020304));

		struct xrxe_ieth *ie = (struct xrxe_ieth *)p;
		xrxe_ieth_set_rkey(ie, (uint32_t)r1);
		cr_assert_eq(xrxe_ieth_rkey(ie), (uint32_t)r1);

		memset(buf, 0, sizeof(buf));
		struct xrxe_rdeth *rd = (struct xrxe_rdeth *)p;
		xrxe_rdeth_set_een(rd, (uint32_t)r1);
		cr_assert_eq(xrxe_rdeth_een(rd), (uint32_t)r1 & 0xffffff);
		cr_assert_eq(p[0], 0);

		memset(buf, 0, sizeof(buf));
		struct xrxe_feth *fe = (struct xrxe_feth *)p;
		xrxe_feth_set_sel(fe, (uint8_t)(r1 & 3));
		xrxe_feth_set_plt(fe, (uint8_t)(r2 & 15));
		cr_assert_eq(xrxe_feth_sel(fe), r1 & 3);
		cr_assert_eq(xrxe_feth_plt(fe), r2 & 15);
		cr_assert_eq(p[3], (uint8_t)((r1 & 3) << 4 | (r2 & 15)));
		cr_assert_eq(p[0] | p[1] | p[2], 0);

		memset(buf, 0, sizeof(buf));
		struct xrxe_xrceth *xe = (struct xrxe_xrceth *)p;
		xrxe_xrceth_set_srqn(xe, (uint32_t)r1);
		cr_assert_eq(xrxe_xrceth_srqn(xe), (uint32_t)r1 & 0xffffff);
		cr_assert_eq(p[0], 0, "XRCETH: 8 reserved bits, then the 24-bit SRQ number");
		cr_assert_eq(p[3], (uint8_t)r1);
	}
}

/* ---- Builder round trip ---------------------------------------------------- */

static void random_spec(struct xrxe_pkt_spec *s, uint8_t opcode, int ipver, bool vlan,
			uint64_t *seed, uint8_t *payload)
{
	const struct xrxe_opcode_info *op = xrxe_opcode_info(opcode);
	uint64_t r = xrxe_test_rand(seed);

	memset(s, 0, sizeof(*s));
	for (int i = 0; i < 6; i++) {
		s->dmac[i] = (uint8_t)xrxe_test_rand(seed);
		s->smac[i] = (uint8_t)xrxe_test_rand(seed);
	}
	s->has_vlan = vlan;
	s->vlan_tci = (uint16_t)r;
	s->ip_version = (uint8_t)ipver;
	s->tclass = (uint8_t)(r >> 16);
	s->ttl = (uint8_t)(r >> 24);
	if (ipver == 4) {
		s->ip_id = (uint16_t)(r >> 32);
		s->ip_df = r & (1ull << 48);
		s->saddr.v4.s_addr = (uint32_t)xrxe_test_rand(seed);
		s->daddr.v4.s_addr = (uint32_t)xrxe_test_rand(seed);
	} else {
		s->flow_label = (uint32_t)(r >> 32) & 0xfffff;
		for (int i = 0; i < 16; i++) {
			s->saddr.v6.s6_addr[i] = (uint8_t)xrxe_test_rand(seed);
			s->daddr.v6.s6_addr[i] = (uint8_t)xrxe_test_rand(seed);
		}
	}
	r = xrxe_test_rand(seed);
	s->sport = (uint16_t)r;
	s->dport = XRXE_ROCEV2_UDP_PORT;
	s->udp_csum = r & (1u << 16);
	s->opcode = opcode;
	s->se = r & (1u << 17);
	s->mig = r & (1u << 18);
	s->fecn = r & (1u << 19);
	s->becn = r & (1u << 20);
	s->ackreq = r & (1u << 21);
	s->pkey = (uint16_t)(r >> 32);
	s->dest_qp = (uint32_t)xrxe_test_rand(seed) & XRXE_QPN_MASK;
	s->psn = (uint32_t)xrxe_test_rand(seed) & XRXE_PSN_MASK;
	s->rdeth.een = (uint32_t)xrxe_test_rand(seed) & 0xffffff;
	s->deth.qkey = (uint32_t)xrxe_test_rand(seed);
	s->deth.src_qp = (uint32_t)xrxe_test_rand(seed) & XRXE_QPN_MASK;
	s->reth.va = xrxe_test_rand(seed);
	s->reth.rkey = (uint32_t)xrxe_test_rand(seed);
	s->reth.len = (uint32_t)xrxe_test_rand(seed);
	s->atmeth.va = xrxe_test_rand(seed);
	s->atmeth.rkey = (uint32_t)xrxe_test_rand(seed);
	s->atmeth.swap_add = xrxe_test_rand(seed);
	s->atmeth.comp = xrxe_test_rand(seed);
	s->aeth.syndrome = (uint8_t)xrxe_test_rand(seed);
	s->aeth.msn = (uint32_t)xrxe_test_rand(seed) & XRXE_MSN_MASK;
	s->atmack_orig = xrxe_test_rand(seed);
	s->imm_be = (uint32_t)xrxe_test_rand(seed);
	s->ieth_rkey = (uint32_t)xrxe_test_rand(seed);
	s->feth.sel = (uint8_t)(xrxe_test_rand(seed) & 3);
	s->feth.plt = (uint8_t)(xrxe_test_rand(seed) & 15);
	s->xrc_srqn = (uint32_t)xrxe_test_rand(seed) & 0xffffff;

	switch (op->payload) {
	case XRXE_PAYLOAD_NONE:
	case XRXE_PAYLOAD_CNP:
		s->payload_len = 0;
		break;
	case XRXE_PAYLOAD_SACK:
		s->payload_len = XRXE_SACK_LEN;
		break;
	case XRXE_PAYLOAD_8:
		s->payload_len = 8;
		break;
	case XRXE_PAYLOAD_FULL_MTU:
		s->payload_len = 256u << (xrxe_test_rand(seed) % 5); /* 256..4096 */
		break;
	default:
		s->payload_len = (uint32_t)(xrxe_test_rand(seed) % 4097);
		break;
	}
	for (uint32_t i = 0; i < s->payload_len; i++)
		payload[i] = (uint8_t)xrxe_test_rand(seed);
	s->payload = s->payload_len ? payload : NULL;
}

/* Keep only what the opcode carries, so two specs can be compared. */
static void canonical(struct xrxe_pkt_spec *s)
{
	const struct xrxe_opcode_info *op = xrxe_opcode_info(s->opcode);
	struct xrxe_pkt_spec c = *s;

	if (!(op->hdrs & H(RDETH)))
		memset(&c.rdeth, 0, sizeof(c.rdeth));
	if (!(op->hdrs & H(DETH)))
		memset(&c.deth, 0, sizeof(c.deth));
	if (!(op->hdrs & H(FETH)))
		memset(&c.feth, 0, sizeof(c.feth));
	if (!(op->hdrs & H(RETH)))
		memset(&c.reth, 0, sizeof(c.reth));
	if (!(op->hdrs & H(ATMETH)))
		memset(&c.atmeth, 0, sizeof(c.atmeth));
	if (!(op->hdrs & H(AETH)))
		memset(&c.aeth, 0, sizeof(c.aeth));
	if (!(op->hdrs & H(ATMACK)))
		c.atmack_orig = 0;
	if (!(op->hdrs & H(IMMDT)))
		c.imm_be = 0;
	if (!(op->hdrs & H(IETH)))
		c.ieth_rkey = 0;
	if (!(op->hdrs & H(XRCETH)))
		c.xrc_srqn = 0;
	if (!c.has_vlan)
		c.vlan_tci = 0;
	if (c.ip_version == 6) {
		c.ip_id = 0;
		c.ip_df = false;
	} else {
		c.flow_label = 0;
	}
	c.payload = NULL;
	memset(s, 0, sizeof(*s));
	/* field by field, so struct padding never enters the comparison */
	memcpy(s->dmac, c.dmac, 6);
	memcpy(s->smac, c.smac, 6);
	s->has_vlan = c.has_vlan, s->vlan_tci = c.vlan_tci, s->ip_version = c.ip_version;
	s->tclass = c.tclass, s->ttl = c.ttl, s->ip_id = c.ip_id, s->ip_df = c.ip_df;
	s->flow_label = c.flow_label, s->saddr = c.saddr, s->daddr = c.daddr;
	s->sport = c.sport, s->dport = c.dport, s->udp_csum = c.udp_csum, s->opcode = c.opcode;
	s->se = c.se, s->mig = c.mig, s->fecn = c.fecn, s->becn = c.becn, s->ackreq = c.ackreq;
	s->pkey = c.pkey, s->dest_qp = c.dest_qp, s->psn = c.psn;
	s->rdeth.een = c.rdeth.een;
	s->deth.qkey = c.deth.qkey, s->deth.src_qp = c.deth.src_qp;
	s->reth.va = c.reth.va, s->reth.rkey = c.reth.rkey, s->reth.len = c.reth.len;
	s->atmeth.va = c.atmeth.va, s->atmeth.rkey = c.atmeth.rkey;
	s->atmeth.swap_add = c.atmeth.swap_add, s->atmeth.comp = c.atmeth.comp;
	s->aeth.syndrome = c.aeth.syndrome, s->aeth.msn = c.aeth.msn;
	s->atmack_orig = c.atmack_orig, s->imm_be = c.imm_be, s->ieth_rkey = c.ieth_rkey;
	s->feth.sel = c.feth.sel, s->feth.plt = c.feth.plt;
	s->xrc_srqn = c.xrc_srqn;
	s->payload_len = c.payload_len;
}

/* RFC 768: a frame with a UDP checksum sums to 0xffff over pseudo-header + datagram. */
static void check_udp_csum(const uint8_t *f, const struct xrxe_pkt *pkt)
{
	const uint8_t *udp = f + pkt->l4_off;
	uint32_t ulen = (uint32_t)udp[4] << 8 | udp[5];
	uint64_t sum = 0;

	if (pkt->ip_version == 4)
		for (int i = 12; i < 20; i += 2)
			sum += (uint32_t)f[pkt->l3_off + i] << 8 | f[pkt->l3_off + i + 1];
	else
		for (int i = 8; i < 40; i += 2)
			sum += (uint32_t)f[pkt->l3_off + i] << 8 | f[pkt->l3_off + i + 1];
	sum += 17 + ulen;
	for (uint32_t i = 0; i < ulen; i += 2)
		sum += (uint32_t)udp[i] << 8 | (i + 1 < ulen ? udp[i + 1] : 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	cr_assert_eq(sum, 0xffff, "UDP checksum does not verify");
}

Test(build, round_trip_every_opcode_ipv4_ipv6_vlan)
{
	static uint8_t payload[4096], frame[5000], again[5000];
	uint64_t seed = 2024;
	unsigned n_ops = 0;

	for (int opcode = 0; opcode < 256; opcode++) {
		if (!xrxe_opcode_info((uint8_t)opcode))
			continue;
		n_ops++;
		for (int variant = 0; variant < 4 * 8; variant++) {
			int ipver = variant & 1 ? 6 : 4;
			bool vlan = variant & 2;
			struct xrxe_pkt_spec s, back;
			struct xrxe_pkt pkt;
			int n, rc;

			random_spec(&s, (uint8_t)opcode, ipver, vlan, &seed, payload);
			n = xrxe_build(frame, sizeof(frame), &s);
			cr_assert_eq(n, (int)xrxe_build_frame_len(&s), "%#x", opcode);
			cr_assert_gt(n, 0);
			rc = xrxe_parse(frame, (size_t)n, 0, &pkt);
			cr_assert_eq(rc, XRXE_PARSE_OK, "%#x v%d vlan %d: %s", opcode, ipver, vlan,
				     xrxe_parse_strerror(rc));
			cr_assert_eq(pkt.opcode, opcode);
			cr_assert_eq(pkt.ip_version, ipver);
			cr_assert_eq(pkt.has_vlan, vlan);
			cr_assert_eq(pkt.payload_len, s.payload_len);
			cr_assert_eq(pkt.pad, (uint8_t)(-s.payload_len & 3));
			cr_assert_eq(pkt.payload_off, xrxe_build_hdr_len(&s));
			if (s.payload_len)
				cr_assert_arr_eq(frame + pkt.payload_off, payload, s.payload_len);
			for (int p = 0; p < pkt.pad; p++)
				cr_assert_eq(frame[pkt.payload_off + pkt.payload_len + p], 0, "pad is zero");
			if (s.udp_csum)
				check_udp_csum(frame, &pkt);
			else
				cr_assert_eq(frame[pkt.l4_off + 6] | frame[pkt.l4_off + 7], 0);
			if (opcode == XRXE_OP_CNP)
				for (int b = 0; b < 16; b++)
					cr_assert_eq(frame[pkt.bth_off + 12 + b], 0, "CNP reserved");

			cr_assert_eq(xrxe_pkt_to_spec(&pkt, &back), 0);
			cr_assert_eq(back.payload_len, s.payload_len);
			cr_assert_eq(xrxe_build(again, sizeof(again), &back), n);
			cr_assert_arr_eq(again, frame, (size_t)n, "%#x rebuild", opcode);
			canonical(&s);
			canonical(&back);
			cr_assert_arr_eq(&back, &s, sizeof(s), "%s v%d vlan %d: fields differ",
					 pkt.op->name, ipver, vlan);
		}
	}
	cr_assert_eq(n_ops, NEXPECTED);
}

Test(build, ipv4_header_fields_and_checksum)
{
	uint8_t f[128];
	struct xrxe_pkt_spec s = {
		.ip_version = 4, .tclass = 0x8a, .ttl = 3, .ip_id = 0xbeef, .ip_df = true,
		.sport = 0xc001, .opcode = XRXE_OPCODE(RC, ACKNOWLEDGE), .pkey = 0xffff,
		.aeth = { .syndrome = 0x1f, .msn = 9 },
	};
	uint32_t sum = 0;

	s.saddr.v4.s_addr = htobe32(0x0a000001);
	s.daddr.v4.s_addr = htobe32(0x0a000002);
	cr_assert_eq(xrxe_build(f, sizeof(f), &s), 62);
	cr_assert_eq(f[12], 0x08);
	cr_assert_eq(f[14], 0x45);
	cr_assert_eq(f[15], 0x8a);
	cr_assert_eq(f[16] << 8 | f[17], 48);
	cr_assert_eq(f[18] << 8 | f[19], 0xbeef);
	cr_assert_eq(f[20], 0x40);
	cr_assert_eq(f[22], 3);
	cr_assert_eq(f[23], 17);
	for (int i = 14; i < 34; i += 2)
		sum += (uint32_t)f[i] << 8 | f[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	cr_assert_eq(sum, 0xffff, "IPv4 header checksum");
	cr_assert_eq(f[36] << 8 | f[37], 4791);
	cr_assert_eq(f[38] << 8 | f[39], 28);
}

Test(build, ipv6_header_fields)
{
	uint8_t f[128];
	struct xrxe_pkt_spec s = {
		.has_vlan = true, .vlan_tci = 0xe00a, .ip_version = 6, .tclass = 0xb8, .ttl = 7,
		.flow_label = 0xfffff1, /* only 20 bits go out */
		.dport = 5000, .opcode = XRXE_OPCODE(UD, SEND_ONLY), .pkey = 0xffff,
		.deth = { .qkey = 0x80010000, .src_qp = 1 },
	};
	cr_assert_eq(xrxe_build(f, sizeof(f), &s), 14 + 4 + 40 + 8 + 12 + 8 + 4);
	cr_assert_eq(f[12] << 8 | f[13], 0x8100);
	cr_assert_eq(f[14] << 8 | f[15], 0xe00a);
	cr_assert_eq(f[16] << 8 | f[17], 0x86dd);
	cr_assert_eq(f[18], 0x6b);
	cr_assert_eq(f[19], 0x8f);
	cr_assert_eq(f[20] << 8 | f[21], 0xfff1);
	cr_assert_eq(f[22] << 8 | f[23], 8 + 12 + 8 + 4);
	cr_assert_eq(f[24], 17);
	cr_assert_eq(f[25], 7);
	cr_assert_eq(f[58 + 2] << 8 | f[58 + 3], 5000, "dport passes through");
}

Test(build, headers_then_payload_in_place)
{
	/* The zero-copy path: headers first, payload written by the caller. */
	static uint8_t f[9100], payload[8900];
	struct xrxe_pkt_spec s = { .ip_version = 4, .opcode = XRXE_OPCODE(RC, RDMA_WRITE_ONLY),
				   .payload_len = 8900, .reth = { .len = 8900 } };
	struct xrxe_pkt pkt;
	size_t len = xrxe_build_frame_len(&s);
	int off;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)i;
	off = xrxe_build_headers(f, sizeof(f), &s);
	cr_assert_eq(off, 14 + 20 + 8 + 12 + 16);
	cr_assert_eq(len, (size_t)off + 8900 + 4);
	cr_assert_leq(len, XRXE_MAX_FRAME_LEN);
	memcpy(f + off, payload, sizeof(payload));
	xrxe_build_finish(f, len, 14);
	cr_assert_eq(xrxe_parse(f, len, 0, &pkt), XRXE_PARSE_OK);
	cr_assert_eq(pkt.payload_len, 8900);
	/* too long for a 16-bit IP length */
	s.payload_len = 65536;
	cr_assert_eq(xrxe_build_headers(f, sizeof(f), &s), -EINVAL);
	s.payload_len = 65472; /* IP total length 65532: valid, just not in 9100 bytes */
	cr_assert_eq(xrxe_build_headers(f, sizeof(f), &s), -ENOSPC);
	s.payload_len = 65476; /* 65536 */
	cr_assert_eq(xrxe_build_headers(f, sizeof(f), &s), -EINVAL);
	cr_assert_eq(xrxe_build_hdr_len(&(struct xrxe_pkt_spec){ .ip_version = 4, .opcode = 0x40 }), 0);
	cr_assert_eq(xrxe_build_frame_len(&(struct xrxe_pkt_spec){ .ip_version = 0, .opcode = 4 }), 0);
}
