// SPDX-License-Identifier: MIT
/*
 * The parser's rejections: each malformed frame gets its own named reason, a
 * truncated frame is TRUNCATED at every length, and nothing reads out of
 * bounds (frames live in exact-size heap buffers, so ASan would see it).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "xrxe/wire.h"

#define MAXF 2048

/* A valid frame from our builder: opcode with plen payload bytes. */
static size_t mk(uint8_t *buf, uint8_t opcode, uint32_t plen, int ipver, bool vlan)
{
	static uint8_t payload[MAXF];
	struct xrxe_pkt_spec s = {
		.dmac = { 2, 0, 0, 0, 0, 1 }, .smac = { 2, 0, 0, 0, 0, 2 },
		.has_vlan = vlan, .vlan_tci = 0x2064, .ip_version = (uint8_t)ipver, .ttl = 64,
		.ip_df = true, .ip_id = 7, .sport = 0xc123, .opcode = opcode, .pkey = 0xffff,
		.dest_qp = 0x11, .psn = 100, .payload = payload, .payload_len = plen,
	};
	int n;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 1);
	s.saddr.v4.s_addr = htonl(0x0a4d0002);
	s.daddr.v4.s_addr = htonl(0x0a4d0001);
	if (ipver == 6) {
		s.saddr.v6.s6_addr[0] = s.daddr.v6.s6_addr[0] = 0xfd;
		s.saddr.v6.s6_addr[15] = 2;
		s.daddr.v6.s6_addr[15] = 1;
	}
	n = xrxe_build(buf, MAXF, &s);
	cr_assert_gt(n, 0, "build %#x: %d", opcode, n);
	return (size_t)n;
}

static size_t l3_of(const uint8_t *f)
{
	return (f[12] == 0x81 || f[12] == 0x88) ? 18 : 14;
}

/* Rewrite the IP and UDP lengths for a frame of newlen bytes, then the ICRC. */
static void set_lengths(uint8_t *f, size_t newlen)
{
	size_t l3 = l3_of(f), l4 = l3 + ((f[l3] >> 4) == 4 ? 20 : 40);
	size_t ip = (f[l3] >> 4) == 4 ? newlen - l3 : newlen - l4;

	f[l3 + ((f[l3] >> 4) == 4 ? 2 : 4)] = (uint8_t)(ip >> 8);
	f[l3 + ((f[l3] >> 4) == 4 ? 3 : 5)] = (uint8_t)ip;
	f[l4 + 4] = (uint8_t)((newlen - l4) >> 8);
	f[l4 + 5] = (uint8_t)(newlen - l4);
	xrxe_build_finish(f, newlen, l3);
}

/* Parse a heap copy of exactly len bytes. */
static int parse_exact(const uint8_t *f, size_t len, unsigned flags)
{
	uint8_t *c = xrxe_test_dup(f, len);
	struct xrxe_pkt pkt;
	int rc = xrxe_parse(c, len, flags, &pkt);

	free(c);
	return rc;
}

#define EXPECT(f, len, want)                                                                  \
	do {                                                                                  \
		int rc_ = parse_exact((f), (len), 0);                                         \
		cr_assert_eq(rc_, (want), "got %s, want %s", xrxe_parse_strerror(rc_),         \
			     xrxe_parse_strerror(want));                                      \
	} while (0)

Test(parse_names, strerror_is_short_stable_and_distinct)
{
	cr_assert_str_eq(xrxe_parse_strerror(XRXE_PARSE_OK), "ok");
	cr_assert_str_eq(xrxe_parse_strerror(XRXE_PARSE_TRUNCATED), "truncated");
	cr_assert_str_eq(xrxe_parse_strerror(XRXE_PARSE_ICRC_MISMATCH), "icrc-mismatch");
	cr_assert_str_eq(xrxe_parse_strerror(XRXE_PARSE_UNKNOWN_OPCODE), "unknown-opcode");
	cr_assert_str_eq(xrxe_parse_strerror(XRXE_PARSE_ERROR_COUNT), "unknown");
	cr_assert_str_eq(xrxe_parse_strerror((enum xrxe_parse_error)-1), "unknown");
	for (int a = 0; a < XRXE_PARSE_ERROR_COUNT; a++) {
		const char *na = xrxe_parse_strerror(a);

		cr_assert_neq(strcmp(na, "unknown"), 0, "error %d has no name", a);
		cr_assert_lt(strlen(na), 20);
		cr_assert_null(strpbrk(na, " _ABCDEFGHIJKLMNOPQRSTUVWXYZ"), "%s: lower-case-dashes", na);
		for (int b = 0; b < a; b++)
			cr_assert_neq(strcmp(na, xrxe_parse_strerror(b)), 0);
	}
}

Test(parse_l2, ethertypes_and_vlan)
{
	uint8_t f[MAXF], t[MAXF + 8];
	size_t n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 64, 4, false);
	struct xrxe_pkt pkt;

	f[12] = 0x08, f[13] = 0x06; /* ARP */
	EXPECT(f, n, XRXE_PARSE_NOT_IP);
	f[13] = 0x00;
	EXPECT(f, n, XRXE_PARSE_OK);

	/* one 802.1Q tag, and an 802.1ad tag, are accepted; the ICRC does not
	 * cover Ethernet, so inserting a tag keeps it valid */
	for (int tpid = 0; tpid < 2; tpid++) {
		memcpy(t, f, 12);
		t[12] = tpid ? 0x88 : 0x81, t[13] = tpid ? 0xa8 : 0x00;
		t[14] = 0xa0, t[15] = 0x05;
		memcpy(t + 16, f + 12, n - 12);
		cr_assert_eq(xrxe_parse(t, n + 4, 0, &pkt), XRXE_PARSE_OK);
		cr_assert(pkt.has_vlan);
		cr_assert_eq(pkt.vlan_tci, 0xa005);
		cr_assert_eq(pkt.l3_off, 18);
		cr_assert_eq(pkt.bth_off, 18 + 20 + 8);
	}
	/* two tags: xrxe takes one */
	memcpy(t, f, 12);
	t[12] = 0x81, t[13] = 0x00, t[14] = 0x00, t[15] = 0x05;
	t[16] = 0x81, t[17] = 0x00, t[18] = 0x00, t[19] = 0x06;
	memcpy(t + 20, f + 12, n - 12);
	EXPECT(t, n + 8, XRXE_PARSE_NOT_IP);
	/* a tag around ARP */
	n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 64, 4, true);
	f[16] = 0x08, f[17] = 0x06;
	EXPECT(f, n, XRXE_PARSE_NOT_IP);
}

Test(parse_ip, version_options_fragments_protocol)
{
	uint8_t f[MAXF];
	size_t n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 64, 4, false);

	f[14] = 0x65; /* version 6 under EtherType IPv4 */
	EXPECT(f, n, XRXE_PARSE_BAD_IP_VERSION);
	f[14] = 0x46; /* IHL 6: options */
	EXPECT(f, n, XRXE_PARSE_IP_OPTIONS);
	f[14] = 0x44;
	EXPECT(f, n, XRXE_PARSE_IP_OPTIONS);
	f[14] = 0x45;
	f[20] = 0x60; /* DF | MF */
	EXPECT(f, n, XRXE_PARSE_IP_FRAGMENT);
	f[20] = 0x40, f[21] = 0x01; /* offset 8 */
	EXPECT(f, n, XRXE_PARSE_IP_FRAGMENT);
	f[20] = 0x00, f[21] = 0x00; /* no DF: still fine (ICRC covers flags: refinish) */
	xrxe_build_finish(f, n, 14);
	EXPECT(f, n, XRXE_PARSE_OK);
	f[23] = 6; /* TCP */
	EXPECT(f, n, XRXE_PARSE_NOT_UDP);

	n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 64, 6, false);
	EXPECT(f, n, XRXE_PARSE_OK);
	f[14] = 0x45; /* version 4 under EtherType IPv6 */
	EXPECT(f, n, XRXE_PARSE_BAD_IP_VERSION);
	f[14] = 0x60;
	f[20] = 0; /* hop-by-hop extension header: not UDP right after */
	EXPECT(f, n, XRXE_PARSE_NOT_UDP);
}

Test(parse_ip, lengths)
{
	uint8_t f[MAXF];
	size_t n;

	for (int v = 4; v <= 6; v += 2) {
		size_t lo = v == 4 ? 17 : 19; /* low byte of IPv4 total length / IPv6 payload length */

		n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 64, v, false);
		f[lo] += 4; /* IP claims more than the frame has */
		EXPECT(f, n, XRXE_PARSE_TRUNCATED);
		f[lo] -= 8; /* IP claims less: 4 stray bytes after it, too many for padding */
		EXPECT(f, n, XRXE_PARSE_BAD_IP_LENGTH);
		f[lo] += 4;
		EXPECT(f, n, XRXE_PARSE_OK);
	}
	n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 64, 4, false);
	f[16] = 0, f[17] = 19; /* shorter than its own header */
	EXPECT(f, n, XRXE_PARSE_BAD_IP_LENGTH);
}

Test(parse_udp, port_and_length)
{
	uint8_t f[MAXF];

	for (int v = 4; v <= 6; v += 2) {
		size_t l4 = v == 4 ? 34 : 54;
		size_t n = mk(f, XRXE_OPCODE(UD, SEND_ONLY), 64, v, false);

		f[l4 + 3] ^= 1; /* dport 4790 */
		EXPECT(f, n, XRXE_PARSE_NOT_ROCEV2);
		f[l4 + 3] ^= 1;
		f[l4 + 0] = 0x12, f[l4 + 1] = 0xb7, f[l4 + 2] = 0x04, f[l4 + 3] = 0xd2; /* sport 4791 only */
		EXPECT(f, n, XRXE_PARSE_NOT_ROCEV2);
		f[l4 + 2] = 0x12, f[l4 + 3] = 0xb7;
		xrxe_build_finish(f, n, 14); /* the ICRC covers the ports */
		EXPECT(f, n, XRXE_PARSE_OK);
	}
}

Test(parse_udp, length_mismatch)
{
	uint8_t f[MAXF];

	for (int v = 4; v <= 6; v += 2) {
		size_t l4 = v == 4 ? 34 : 54;
		size_t n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 64, v, false);

		f[l4 + 5] += 1;
		EXPECT(f, n, XRXE_PARSE_BAD_UDP_LENGTH);
		f[l4 + 5] -= 2;
		EXPECT(f, n, XRXE_PARSE_BAD_UDP_LENGTH);
		f[l4 + 5] += 1;
		EXPECT(f, n, XRXE_PARSE_OK);
	}
}

Test(parse_bth, tver_and_unknown_opcodes)
{
	static const uint8_t unknown[] = { 0x15, 0x18, 0x1b, 0x1e, 0x1f, 0x2c, 0x30, 0x40, 0x44, 0x4a,
					   0x54, 0x5f, 0x60, 0x63, 0x66, 0x80, 0x82, 0xc0, 0xff };
	uint8_t f[MAXF];
	size_t n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 64, 4, false);

	for (int tver = 1; tver < 16; tver++) {
		f[43] = (uint8_t)((f[43] & 0xf0) | tver);
		EXPECT(f, n, XRXE_PARSE_BAD_VERSION);
	}
	f[43] &= 0xf0;
	for (size_t i = 0; i < sizeof(unknown); i++) {
		f[42] = unknown[i];
		cr_assert_null(xrxe_opcode_info(unknown[i]));
		EXPECT(f, n, XRXE_PARSE_UNKNOWN_OPCODE);
	}
}

Test(parse_payload, pad_rules)
{
	uint8_t f[MAXF];
	size_t n;

	/* ACK: no payload, so no pad bytes to count */
	n = mk(f, XRXE_OPCODE(RC, ACKNOWLEDGE), 0, 4, false);
	f[43] |= 1 << 4;
	xrxe_build_finish(f, n, 14);
	EXPECT(f, n, XRXE_PARSE_BAD_PAD);
	/* SEND_ONLY with no payload but pad 3 */
	n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 0, 4, false);
	f[43] |= 3 << 4;
	EXPECT(f, n, XRXE_PARSE_BAD_PAD);
	/* payload + pad not a multiple of 4: 7 bytes, pad 0 */
	n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 7, 4, false); /* 7 + pad 1 */
	f[43] &= (uint8_t)~0x30;
	set_lengths(f, n - 1);
	EXPECT(f, n - 1, XRXE_PARSE_BAD_PAD);
	/* CNP never pads */
	n = mk(f, XRXE_OP_CNP, 0, 4, false);
	f[43] |= 1 << 4;
	EXPECT(f, n, XRXE_PARSE_BAD_PAD);
	/* a pad count that is merely odd but consistent is fine: 5 bytes + pad 3 */
	n = mk(f, XRXE_OPCODE(UC, SEND_ONLY), 5, 4, false);
	EXPECT(f, n, XRXE_PARSE_OK);
}

Test(parse_payload, length_rules_per_opcode)
{
	uint8_t f[MAXF];
	size_t n;

	/* NONE: ACK, READ request, atomics, FLUSH with a payload */
	static const uint8_t none[] = { XRXE_OPCODE(RC, ACKNOWLEDGE), XRXE_OPCODE(RC, RDMA_READ_REQUEST),
					XRXE_OPCODE(RC, ATOMIC_ACKNOWLEDGE), XRXE_OPCODE(RC, COMPARE_SWAP),
					XRXE_OPCODE(RC, FETCH_ADD), XRXE_OPCODE(RC, FLUSH) };
	for (size_t i = 0; i < sizeof(none); i++) {
		n = mk(f, none[i], 0, 4, false);
		EXPECT(f, n, XRXE_PARSE_OK);
		set_lengths(f, n + 4);
		EXPECT(f, n + 4, XRXE_PARSE_BAD_LENGTH);
	}
	/* FULL_MTU: FIRST / MIDDLE with nothing in them */
	static const uint8_t full[] = { XRXE_OPCODE(RC, SEND_FIRST), XRXE_OPCODE(UC, SEND_MIDDLE),
					XRXE_OPCODE(RC, RDMA_WRITE_FIRST), XRXE_OPCODE(UC, RDMA_WRITE_MIDDLE),
					XRXE_OPCODE(RC, RDMA_READ_RESPONSE_FIRST),
					XRXE_OPCODE(RC, RDMA_READ_RESPONSE_MIDDLE) };
	for (size_t i = 0; i < sizeof(full); i++) {
		n = mk(f, full[i], 256, 6, false);
		EXPECT(f, n, XRXE_PARSE_OK);
		set_lengths(f, n - 256);
		EXPECT(f, n - 256, XRXE_PARSE_BAD_LENGTH);
	}
	/* ATOMIC_WRITE: exactly 8 */
	n = mk(f, XRXE_OPCODE(RC, ATOMIC_WRITE), 8, 4, false);
	EXPECT(f, n, XRXE_PARSE_OK);
	set_lengths(f, n + 4);
	EXPECT(f, n + 4, XRXE_PARSE_BAD_LENGTH);
	set_lengths(f, n - 4);
	EXPECT(f, n - 4, XRXE_PARSE_BAD_LENGTH);
	set_lengths(f, n - 8);
	EXPECT(f, n - 8, XRXE_PARSE_BAD_LENGTH);
	/* 7 bytes + pad 1 is 8 wire bytes but 7 payload bytes */
	n = mk(f, XRXE_OPCODE(RC, ATOMIC_WRITE), 8, 4, false);
	f[43] |= 1 << 4;
	xrxe_build_finish(f, n, 14);
	EXPECT(f, n, XRXE_PARSE_BAD_LENGTH);
	/* CNP: exactly 16 reserved bytes */
	n = mk(f, XRXE_OP_CNP, 0, 4, false);
	EXPECT(f, n, XRXE_PARSE_OK);
	set_lengths(f, n + 4);
	EXPECT(f, n + 4, XRXE_PARSE_BAD_LENGTH);
	set_lengths(f, n - 4);
	EXPECT(f, n - 4, XRXE_PARSE_BAD_LENGTH);
	/* the builder refuses the same things */
	{
		struct xrxe_pkt_spec s = { .ip_version = 4, .opcode = XRXE_OPCODE(RC, ACKNOWLEDGE),
					   .payload = f, .payload_len = 4 };

		cr_assert_eq(xrxe_build(f + 1024, 1024, &s), -EINVAL);
		s.opcode = XRXE_OPCODE(RC, ATOMIC_WRITE);
		cr_assert_eq(xrxe_build(f + 1024, 1024, &s), -EINVAL);
		s.opcode = XRXE_OPCODE(RC, SEND_FIRST);
		s.payload_len = 0;
		cr_assert_eq(xrxe_build(f + 1024, 1024, &s), -EINVAL);
		s.opcode = 0x40;
		cr_assert_eq(xrxe_build(f + 1024, 1024, &s), -EINVAL);
		s.opcode = XRXE_OPCODE(RC, SEND_ONLY);
		s.ip_version = 5;
		cr_assert_eq(xrxe_build(f + 1024, 1024, &s), -EINVAL);
		s.ip_version = 4;
		cr_assert_eq(xrxe_build(f + 1024, 57, &s), -ENOSPC);
		cr_assert_eq(xrxe_build(f + 1024, 58, &s), 58);
	}
}

Test(parse_payload, too_short_for_bth_or_headers)
{
	uint8_t f[MAXF];
	size_t n = mk(f, XRXE_OPCODE(RC, RDMA_WRITE_ONLY), 0, 4, false); /* 14+20+8+12+16+4 = 74 */

	cr_assert_eq(n, 74);
	EXPECT(f, n, XRXE_PARSE_OK);
	/* the datagram ends inside the RETH / inside the BTH / right after UDP */
	set_lengths(f, 70);
	EXPECT(f, 70, XRXE_PARSE_TRUNCATED);
	set_lengths(f, 14 + 20 + 8 + 12);
	EXPECT(f, 14 + 20 + 8 + 12, XRXE_PARSE_TRUNCATED);
	n = mk(f, XRXE_OPCODE(RC, RDMA_WRITE_ONLY), 0, 4, false);
	f[16] = 0, f[17] = 20 + 8; /* IP: just a UDP header, then 32 bytes of "padding" */
	f[38] = 0, f[39] = 8;
	EXPECT(f, 60, XRXE_PARSE_TRUNCATED);
	f[17] = 20 + 4;
	EXPECT(f, 60, XRXE_PARSE_TRUNCATED);
}

Test(parse_payload, ethernet_padding_of_tiny_frames)
{
	uint8_t f[MAXF];
	struct xrxe_pkt pkt;
	size_t n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 0, 4, false);

	/* a zero-length SEND is 58 bytes: the NIC pads it to 60 */
	cr_assert_eq(n, 58);
	f[58] = f[59] = 0;
	cr_assert_eq(xrxe_parse(f, 60, 0, &pkt), XRXE_PARSE_OK);
	cr_assert_eq(pkt.len, 60);
	cr_assert_eq(pkt.payload_len, 0);
	cr_assert_eq(pkt.payload_off, 54);
	cr_assert(xrxe_icrc_verify(&pkt));
	f[58] = f[59] = 0xee; /* padding content is not ours to check */
	EXPECT(f, 60, XRXE_PARSE_OK);
	EXPECT(f, 64, XRXE_PARSE_OK);
	EXPECT(f, 65, XRXE_PARSE_BAD_IP_LENGTH);

	n = mk(f, XRXE_OPCODE(RC, ACKNOWLEDGE), 0, 4, false); /* 62 */
	EXPECT(f, n + 2, XRXE_PARSE_OK);
	EXPECT(f, n + 3, XRXE_PARSE_BAD_IP_LENGTH);
	n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 1000, 4, false);
	EXPECT(f, n + 1, XRXE_PARSE_BAD_IP_LENGTH);
}

Test(parse_payload, icrc_mismatch_and_skip)
{
	uint8_t f[MAXF];
	size_t n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 100, 6, true);
	struct xrxe_pkt pkt;

	f[n - 20] ^= 0x01;
	EXPECT(f, n, XRXE_PARSE_ICRC_MISMATCH);
	cr_assert_eq(parse_exact(f, n, XRXE_PARSE_SKIP_ICRC), XRXE_PARSE_OK);
	cr_assert_eq(xrxe_parse(f, n, XRXE_PARSE_SKIP_ICRC, &pkt), XRXE_PARSE_OK);
	cr_assert(!xrxe_icrc_verify(&pkt));
	f[n - 20] ^= 0x01;
	cr_assert(xrxe_icrc_verify(&pkt));
}

Test(parse_truncated, every_length_of_several_frames)
{
	struct xrxe_golden g;
	uint8_t f[MAXF];
	size_t n;

	cr_assert_eq(xrxe_golden_load(XRXE_GOLDEN_MAIN, &g), 0);
	/* one frame of each opcode in the capture */
	bool seen[256] = { false };
	for (size_t i = 0; i < g.count; i++) {
		uint8_t op = g.frames[i].data[42];

		if (seen[op])
			continue;
		seen[op] = true;
		for (uint32_t len = 0; len < g.frames[i].len; len++) {
			int rc = parse_exact(g.frames[i].data, len, 0);

			cr_assert_eq(rc, XRXE_PARSE_TRUNCATED, "frame %zu cut at %u: %s", i + 1, len,
				     xrxe_parse_strerror(rc));
		}
	}
	xrxe_golden_free(&g);

	/* IPv6, VLAN, CNP, and a 58-byte frame */
	n = mk(f, XRXE_OPCODE(UD, SEND_ONLY_WITH_IMM), 77, 6, true);
	for (size_t len = 0; len < n; len++)
		EXPECT(f, len, XRXE_PARSE_TRUNCATED);
	n = mk(f, XRXE_OP_CNP, 0, 6, false);
	for (size_t len = 0; len < n; len++)
		EXPECT(f, len, XRXE_PARSE_TRUNCATED);
	n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 0, 4, false);
	for (size_t len = 0; len < n; len++)
		EXPECT(f, len, XRXE_PARSE_TRUNCATED);
	cr_assert_eq(xrxe_parse(NULL, 0, 0, &(struct xrxe_pkt){ 0 }), XRXE_PARSE_TRUNCATED);
}

Test(parse_robust, random_bytes_and_mutations_never_crash)
{
	struct xrxe_golden g;
	uint64_t seed = 42;
	struct xrxe_pkt pkt;

	for (int iter = 0; iter < 20000; iter++) {
		size_t len = xrxe_test_rand(&seed) % 200;
		uint8_t *f = malloc(len ? len : 1);

		for (size_t i = 0; i < len; i++)
			f[i] = (uint8_t)xrxe_test_rand(&seed);
		if (len > 44 && (iter & 1)) { /* make it look like RoCEv2 to reach deeper */
			f[12] = 0x08, f[13] = 0x00, f[14] = 0x45, f[20] &= 0x80, f[21] = 0, f[23] = 17;
			f[16] = (uint8_t)((len - 14) >> 8), f[17] = (uint8_t)(len - 14);
			f[36] = 0x12, f[37] = 0xb7, f[38] = (uint8_t)((len - 34) >> 8);
			f[39] = (uint8_t)(len - 34), f[43] &= 0xf0;
		}
		(void)xrxe_parse(f, len, 0, &pkt);
		free(f);
	}

	cr_assert_eq(xrxe_golden_load(XRXE_GOLDEN_MAIN, &g), 0);
	for (size_t i = 0; i < g.count; i++) {
		for (int m = 0; m < 200; m++) {
			uint8_t *f = xrxe_test_dup(g.frames[i].data, g.frames[i].len);
			/* a byte of the headers (offsets 12..79), inside the frame */
			size_t span = g.frames[i].len - 12 < 68 ? g.frames[i].len - 12 : 68;
			size_t pos = 12 + xrxe_test_rand(&seed) % span;
			int rc;

			f[pos] = (uint8_t)xrxe_test_rand(&seed);
			rc = xrxe_parse(f, g.frames[i].len, XRXE_PARSE_SKIP_ICRC, &pkt);
			if (rc == XRXE_PARSE_OK) {
				/* whatever got through is self-consistent */
				cr_assert_leq(pkt.payload_off + pkt.payload_len + pkt.pad + 4, pkt.len);
				cr_assert_leq(pkt.payload_off, pkt.frag[0].len);
			}
			free(f);
		}
	}
	xrxe_golden_free(&g);
}

Test(parse_payload, copy_payload_bounds)
{
	uint8_t f[MAXF], out[300];
	size_t n = mk(f, XRXE_OPCODE(RC, SEND_ONLY), 255, 4, false);
	struct xrxe_pkt pkt;

	cr_assert_eq(xrxe_parse(f, n, 0, &pkt), XRXE_PARSE_OK);
	cr_assert_eq(pkt.payload_len, 255);
	cr_assert_eq(pkt.pad, 1);
	cr_assert_eq(xrxe_pkt_copy_payload(&pkt, 0, out, 255), 0);
	cr_assert_arr_eq(out, f + pkt.payload_off, 255);
	cr_assert_eq(xrxe_pkt_copy_payload(&pkt, 200, out, 55), 0);
	cr_assert_eq(xrxe_pkt_copy_payload(&pkt, 200, out, 56), -EINVAL); /* the pad is not payload */
	cr_assert_eq(xrxe_pkt_copy_payload(&pkt, 256, out, 0), -EINVAL);
	cr_assert_eq(xrxe_pkt_copy_payload(&pkt, 0xffffffffu, out, 2), -EINVAL);
	cr_assert_eq(xrxe_pkt_copy_payload(&pkt, 255, out, 0), 0);
}
