// SPDX-License-Identifier: MIT
/*
 * The UDP checksum xrxe's transport puts on the wire (docs/interop.md):
 *   IPv6: a real checksum, always (RFC 8200 §8.1: a receiver discards UDP
 *         over IPv6 with checksum 0; Wireshark flags it; kernel rxe sends 0
 *         but verifies a non-zero one, so it accepts ours);
 *   IPv4: 0, as rxe sends (RFC 768 makes it optional; the ICRC protects the
 *         payload end to end).
 * Every frame of a multi-packet SEND and its ACKs is checked, over
 * multi-fragment TX buffers, by an RFC 1071 sum written here, independent of
 * src/wire/csum.c.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tp_harness.h"

#define SEC 1000000000ull

static uint8_t abuf[64 << 10], bbuf[64 << 10];

struct csum_seen {
	unsigned frames, zero, bad;
};

/* Byte i of the frame, across fragments. */
static uint8_t frame_byte(const struct xrxe_pkt *pkt, uint32_t i)
{
	for (unsigned f = 0; f < pkt->nfrags; f++) {
		if (i < pkt->frag[f].len)
			return pkt->frag[f].data[i];
		i -= pkt->frag[f].len;
	}
	cr_assert_fail("frame byte beyond the fragments");
	return 0;
}

/* RFC 1071 one's-complement sum of the IPv6 pseudo-header (RFC 8200 §8.1)
 * and the UDP datagram; 0xffff when the checksum field is right. */
static uint16_t udp6_sum(const struct xrxe_pkt *pkt)
{
	uint32_t l3 = pkt->l3_off, l4 = pkt->l4_off, sum = 0, i;
	uint32_t ulen = (uint32_t)frame_byte(pkt, l4 + 4) << 8 | frame_byte(pkt, l4 + 5);

	for (i = 8; i < 40; i += 2) /* source and destination addresses */
		sum += (uint32_t)frame_byte(pkt, l3 + i) << 8 | frame_byte(pkt, l3 + i + 1);
	sum += ulen + 17; /* upper-layer length, next header */
	for (i = 0; i < ulen; i += 2) {
		uint32_t hi = frame_byte(pkt, l4 + i);
		uint32_t lo = i + 1 < ulen ? frame_byte(pkt, l4 + i + 1) : 0;

		sum += hi << 8 | lo;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static bool check_csum(void *arg, int from, const struct xrxe_pkt *pkt)
{
	struct csum_seen *seen = arg;
	uint16_t field = (uint16_t)(frame_byte(pkt, pkt->l4_off + 6) << 8 | frame_byte(pkt, pkt->l4_off + 7));

	(void)from;
	seen->frames++;
	if (field == 0)
		seen->zero++;
	else if (pkt->ip_version == 6 && udp6_sum(pkt) != 0xffff)
		seen->bad++;
	return false; /* deliver it */
}

/* A 40000-byte SEND (40 packets at MTU 1024) from side 0 to side 1. */
static void send_one(bool ipv6, struct csum_seen *seen)
{
	struct xrxe_tph_pair p;
	struct ibv_wc wc[4];
	uint32_t lka, lkb;

	memset(&p, 0, sizeof(p));
	xrxe_tph_init(&p.h, 5, 4096);
	p.h.ipv6 = ipv6;
	p.h.pol.multi_frag = true;
	p.h.pol.filter = check_csum;
	p.h.pol.filter_arg = seen;
	xrxe_tph_conn_default(&p.conn);
	p.conn.mtu = IBV_MTU_1024;
	p.ca = xrxe_tph_cq_create(&p.h.side[0], 256);
	p.cb = xrxe_tph_cq_create(&p.h.side[1], 256);
	p.a = xrxe_tph_qp_create(&p.h.side[0], IBV_QPT_RC, p.ca, p.ca, 64, 64, true);
	p.b = xrxe_tph_qp_create(&p.h.side[1], IBV_QPT_RC, p.cb, p.cb, 64, 64, true);
	cr_assert_eq(xrxe_tph_connect(p.a, p.b, &p.conn), 0);
	for (size_t i = 0; i < sizeof(abuf); i++)
		abuf[i] = (uint8_t)(i * 31 + 7);
	lka = xrxe_tph_mr(&p.h.side[0], abuf, sizeof(abuf), IBV_ACCESS_LOCAL_WRITE, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], bbuf, sizeof(bbuf), IBV_ACCESS_LOCAL_WRITE, 0);

	struct xrxe_sge rs = { (uintptr_t)bbuf, 40000, lkb }, ss = { (uintptr_t)abuf + 1, 40000, lka };
	struct xrxe_tph_send w = { .wr_id = 1, .opcode = IBV_WR_SEND, .sge = &ss, .nsge = 1 };

	cr_assert_eq(xrxe_tph_post_recv(p.b, 9, &rs, 1), 0);
	cr_assert_eq(xrxe_tph_post_send(p.a, &w), 0);
	cr_assert(xrxe_tph_run(&p.h, SEC));
	cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 4), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 4), 1);
	cr_assert_eq(wc[0].byte_len, 40000);
	cr_assert(!memcmp(bbuf, abuf + 1, 40000));
	cr_assert_eq(p.h.rejected, 0);
	xrxe_tph_pair_fini(&p);
}

Test(transport_udp_csum, ipv6_frames_carry_a_valid_checksum)
{
	struct csum_seen seen = { 0 };

	send_one(true, &seen);
	cr_assert_geq(seen.frames, 41, "40 data packets and at least one ACK");
	cr_assert_eq(seen.zero, 0, "%u of %u IPv6 frames went out with UDP checksum 0", seen.zero,
		     seen.frames);
	cr_assert_eq(seen.bad, 0, "%u IPv6 frames with a wrong UDP checksum", seen.bad);
}

Test(transport_udp_csum, ipv4_frames_send_zero_like_rxe)
{
	struct csum_seen seen = { 0 };

	send_one(false, &seen);
	cr_assert_geq(seen.frames, 41);
	cr_assert_eq(seen.zero, seen.frames);
}
