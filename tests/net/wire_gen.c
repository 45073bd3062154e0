// SPDX-License-Identifier: MIT
/*
 * wire_gen: write a pcap with one frame per opcode in xrxe's opcode table, built
 * by xrxe's own builder (IPv4, and IPv6 behind a VLAN tag), with distinctive
 * field values; print the values Wireshark should decode, one per line:
 *
 *     FRAME FIELD HEX DEC        (DEC is "-" for byte-string fields)
 *
 * FIELD is a Wireshark display-filter field name. tests/unit/tshark.sh feeds
 * the pcap to tshark, an independent decoder, and compares.
 *
 *     wire_gen OUT.pcap > expected.txt
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdbool.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrxe/wire.h"

static unsigned frame_no;

static void expect(const char *field, uint64_t v)
{
	printf("%u %s %" PRIx64 " %" PRIu64 "\n", frame_no, field, v, v);
}

static void expect_bytes(const char *field, const uint8_t *p, size_t n)
{
	printf("%u %s ", frame_no, field);
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
	printf(" -\n");
}

/* Distinctive values: every frame and every field differ. */
static void fill_spec(struct xrxe_pkt_spec *s, uint8_t opcode, int ipver, unsigned i,
		      const uint8_t *payload)
{
	const struct xrxe_opcode_info *op = xrxe_opcode_info(opcode);
	static const uint8_t dmac[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0a };
	static const uint8_t smac[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0b };

	memset(s, 0, sizeof(*s));
	memcpy(s->dmac, dmac, 6);
	memcpy(s->smac, smac, 6);
	s->ip_version = (uint8_t)ipver;
	s->has_vlan = ipver == 6;
	s->vlan_tci = (uint16_t)(0x6000 | (100 + i));
	s->tclass = 0x02;
	s->ttl = 64;
	s->ip_id = (uint16_t)(0x1000 + i);
	s->ip_df = true;
	if (ipver == 4) {
		inet_pton(AF_INET, "10.77.0.2", &s->saddr.v4);
		inet_pton(AF_INET, "10.77.0.1", &s->daddr.v4);
		s->udp_csum = i % 4 == 0; /* mostly 0, as rxe sends */
	} else {
		inet_pton(AF_INET6, "fd77::2", &s->saddr.v6);
		inet_pton(AF_INET6, "fd77::1", &s->daddr.v6);
		/* RFC 8200 §8.1: a zero UDP checksum is illegal on IPv6, and
		 * Wireshark flags it as an expert error (rxe sends 0 anyway) */
		s->udp_csum = true;
		s->flow_label = 0x12340 + i;
	}
	s->sport = (uint16_t)(0xc000 + i);
	s->opcode = opcode;
	s->se = (op->flags & XRXE_OPF_LAST) && (i & 1);
	s->mig = i & 2;
	s->ackreq = op->flags & XRXE_OPF_LAST;
	s->becn = opcode == XRXE_OP_CNP;
	s->pkey = 0xffff;
	s->dest_qp = 0x100000 + i * 0x1111;
	s->psn = (0xabc000 + i * 0x101) & XRXE_PSN_MASK;
	s->deth.qkey = 0x80010000u + i;
	s->deth.src_qp = 0x200000 + i;
	s->reth.va = 0xfedcba9876543210ull - i * 0x1000;
	s->reth.rkey = 0x1234 + i;
	s->reth.len = 0x10000 + i;
	s->atmeth.va = 0x8000000000001000ull + i * 8;
	s->atmeth.rkey = 0x5678 + i;
	s->atmeth.swap_add = 0xf0f0f0f0f0f0f0f0ull + i;
	s->atmeth.comp = 0x0123456789abcdefull + i;
	s->aeth.syndrome = i % 3 == 0 ? 0x1f : i % 3 == 1 ? 0x2c : 0x60;
	if (opcode != XRXE_OPCODE(RC, ACKNOWLEDGE))
		s->aeth.syndrome = 0x1f; /* NAKs travel only in ACKNOWLEDGE packets */
	s->aeth.msn = 0x300000 + i;
	s->atmack_orig = 0xa5a5a5a55a5a5a5aull + i;
	s->imm_be = htonl(0xc0de0000u + i);
	s->ieth_rkey = 0x4321 + i;
	s->xrc_srqn = 0x5a0000 + i;
	s->feth.sel = 1;
	s->feth.plt = 1;
	switch (op->payload) {
	case XRXE_PAYLOAD_FULL_MTU:
		s->payload_len = 256;
		break;
	case XRXE_PAYLOAD_ANY:
		s->payload_len = 13; /* pad 3 */
		break;
	case XRXE_PAYLOAD_8:
		s->payload_len = 8;
		break;
	case XRXE_PAYLOAD_SACK:
		s->payload_len = XRXE_SACK_LEN;
		break;
	default:
		s->payload_len = 0;
	}
	s->payload = s->payload_len ? payload : NULL;
}

/* Wireshark 4.0 has no dissector for these opcodes (newer than its InfiniBand
 * dissector, or xrxe's own SACK from the manufacturer-specific range): it
 * decodes the BTH and shows what follows it as "Unknown/Vendor Specific
 * Data". XRC (0xa0-0xbf) it names ("Extended Reliable Connection (XRC) -
 * SEND First", ...) but has no XRCETH dissector: BTH, then the same. */
static bool wireshark_unknown(uint8_t opcode)
{
	return opcode == XRXE_OPCODE(RC, FLUSH) || opcode == XRXE_OPCODE(RC, ATOMIC_WRITE) ||
	       opcode == XRXE_OP_CNP || opcode == XRXE_OP_XRXE_SACK ||
	       (opcode & XRXE_TRANSPORT_MASK) == XRXE_TRANSPORT_XRC;
}

static void print_expected(const struct xrxe_pkt_spec *s, const struct xrxe_opcode_info *op,
			   const uint8_t *frame, size_t len)
{
	struct xrxe_pkt pkt;
	uint8_t b[4];

	if (xrxe_parse(frame, len, 0, &pkt) != XRXE_PARSE_OK) {
		fprintf(stderr, "wire_gen: our own %s frame does not parse\n", op->name);
		exit(1);
	}

	printf("%u # %s IPv%d%s\n", frame_no, op->name, s->ip_version, s->has_vlan ? " VLAN" : "");
	expect("infiniband.bth.opcode", s->opcode);
	expect("infiniband.bth.se", s->se);
	expect("infiniband.bth.m", s->mig);
	expect("infiniband.bth.padcnt", -s->payload_len & 3);
	expect("infiniband.bth.tver", 0);
	expect("infiniband.bth.p_key", s->pkey);
	expect("infiniband.bth.destqp", s->dest_qp);
	expect("infiniband.bth.a", s->ackreq);
	expect("infiniband.bth.psn", s->psn);
	if (op->hdrs & XRXE_HDR_BIT(XRXE_HDR_DETH)) {
		expect("infiniband.deth.q_key", s->deth.qkey);
		expect("infiniband.deth.srcqp", s->deth.src_qp);
	}
	if (op->hdrs & XRXE_HDR_BIT(XRXE_HDR_RETH)) {
		expect("infiniband.reth.va", s->reth.va);
		expect("infiniband.reth.r_key", s->reth.rkey);
		expect("infiniband.reth.dmalen", s->reth.len);
	}
	if (op->hdrs & XRXE_HDR_BIT(XRXE_HDR_ATMETH)) {
		/* Wireshark shows the AtomicETH VA and R_Key with the RETH fields */
		expect("infiniband.reth.va", s->atmeth.va);
		expect("infiniband.reth.r_key", s->atmeth.rkey);
		expect("infiniband.atomiceth.swapdt", s->atmeth.swap_add);
		expect("infiniband.atomiceth.cmpdt", s->atmeth.comp);
	}
	if ((op->hdrs & XRXE_HDR_BIT(XRXE_HDR_AETH)) && !wireshark_unknown(s->opcode)) {
		expect("infiniband.aeth.syndrome", s->aeth.syndrome);
		expect("infiniband.aeth.msn", s->aeth.msn);
	}
	if (op->hdrs & XRXE_HDR_BIT(XRXE_HDR_ATMACK))
		expect("infiniband.atomicacketh.origremdt", s->atmack_orig);
	if (op->hdrs & XRXE_HDR_BIT(XRXE_HDR_IMMDT))
		expect_bytes("infiniband.immdt", (const uint8_t *)&s->imm_be, 4);
	if (op->hdrs & XRXE_HDR_BIT(XRXE_HDR_IETH)) {
		b[0] = (uint8_t)(s->ieth_rkey >> 24), b[1] = (uint8_t)(s->ieth_rkey >> 16);
		b[2] = (uint8_t)(s->ieth_rkey >> 8), b[3] = (uint8_t)s->ieth_rkey;
		expect_bytes("infiniband.ieth", b, 4);
	}
	if (wireshark_unknown(s->opcode)) {
		/* all bytes after the BTH, trailer included: the header layout */
		expect_bytes("infiniband.vendor", frame + pkt.bth_off + XRXE_BTH_LEN,
			     len - pkt.bth_off - XRXE_BTH_LEN);
	} else {
		/* Wireshark 4.0 hands payload and pad together to the "data"
		 * dissector: the pad bytes must be there, and zero */
		if (s->payload_len)
			expect_bytes("data.data", frame + pkt.payload_off, pkt.payload_len + pkt.pad);
		/* Wireshark reads the trailer big-endian; we send the CRC LE first */
		expect("infiniband.invariant.crc", __builtin_bswap32(pkt.icrc));
	}
	if (s->ip_version == 4) {
		expect("ip.checksum.status", 1); /* good (with ip.check_checksum on) */
		expect("ip.dsfield", s->tclass);
		expect("ip.ttl", s->ttl);
		expect("ip.id", s->ip_id);
		expect("ip.flags.df", s->ip_df);
	} else {
		expect("ipv6.tclass", s->tclass);
		expect("ipv6.flow", s->flow_label);
		expect("ipv6.hlim", s->ttl);
	}
	expect("udp.checksum.status", s->udp_csum ? 1 : 3); /* good / not present */
	if (s->has_vlan)
		expect("vlan.id", s->vlan_tci & 0xfff);
	expect("udp.dstport", XRXE_ROCEV2_UDP_PORT);
	expect("udp.srcport", s->sport);
}

int main(int argc, char **argv)
{
	static uint8_t payload[256], frame[2048];
	pcap_t *dead;
	pcap_dumper_t *out;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.pcap > expected.txt\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(0x41 + i % 26);
	dead = pcap_open_dead(DLT_EN10MB, 65535);
	out = dead ? pcap_dump_open(dead, argv[1]) : NULL;
	if (!out) {
		fprintf(stderr, "wire_gen: cannot write %s: %s\n", argv[1],
			dead ? pcap_geterr(dead) : "pcap_open_dead");
		return 1;
	}
	for (int ipver = 4; ipver <= 6; ipver += 2) {
		for (int opcode = 0; opcode < 256; opcode++) {
			const struct xrxe_opcode_info *op = xrxe_opcode_info((uint8_t)opcode);
			struct xrxe_pkt_spec s;
			struct pcap_pkthdr h = { 0 };
			int n;

			if (!op)
				continue;
			frame_no++;
			fill_spec(&s, (uint8_t)opcode, ipver, frame_no, payload);
			n = xrxe_build(frame, sizeof(frame), &s);
			if (n < 0) {
				fprintf(stderr, "wire_gen: build %s: %d\n", op->name, n);
				return 1;
			}
			h.ts.tv_sec = 1700000000 + frame_no;
			h.caplen = h.len = (bpf_u_int32)n;
			pcap_dump((u_char *)out, &h, frame);
			print_expected(&s, op, frame, (size_t)n);
		}
	}
	pcap_dump_close(out);
	pcap_close(dead);
	return 0;
}
