// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the frame parser: hostile bytes from the network.
 *
 * For every input:
 *  - xrxe_parse never reads out of bounds (ASan) or hits UB (UBSan);
 *  - skipping the ICRC check changes only ICRC_MISMATCH into OK;
 *  - the same bytes split into 2-3 fragments (cut points taken from the first
 *    input bytes, each piece in its own exact-size allocation) parse to the
 *    same result, or to FRAGMENTED_HDRS when a cut falls inside the headers;
 *  - whatever parses (ICRC checked or not) rebuilds, through pkt_to_spec + build, into a frame that
 *    parses to the same spec (idempotence), and when the input was already
 *    in canonical form (no Ethernet padding, 802.1Q TPID, only DF among the
 *    IPv4 flags, checksums as the builder computes them, zero reserved bits,
 *    pad and CNP bytes) the rebuilt frame is the input, byte for byte.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrxe/wire.h"

#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "fuzz_parse: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                        \
		}                                                                       \
	} while (0)

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += rd16(p + i);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Is the frame exactly what our builder would emit for its parsed spec? */
static int canonical(const uint8_t *f, size_t size, const struct xrxe_pkt *p)
{
	const uint8_t *ip = f + p->l3_off, *udp = f + p->l4_off;
	const struct xrxe_bth *bth = xrxe_pkt_bth(p);
	size_t end = (size_t)p->payload_off + p->payload_len + p->pad;
	uint16_t ucsum = rd16(udp + 6);

	if (end + XRXE_ICRC_LEN != size)
		return 0; /* Ethernet padding is not rebuilt */
	if (p->has_vlan && rd16(f + 12) != 0x8100)
		return 0; /* the builder writes 802.1Q tags */
	if (p->ip_version == 4) {
		uint8_t h[20];

		if ((rd16(ip + 6) & ~0x4000) != 0)
			return 0;
		memcpy(h, ip, 20);
		h[10] = h[11] = 0;
		if (rd16(ip + 10) != (uint16_t)~fold(sum16(0, h, 20)))
			return 0;
	}
	if (ucsum) {
		uint32_t ulen = (uint32_t)(size - p->l4_off), s;
		uint8_t ph[40] = { 0 };
		uint16_t want;

		if (p->ip_version == 4) {
			memcpy(ph, ip + 12, 8);
			ph[9] = 17;
			ph[10] = (uint8_t)(ulen >> 8), ph[11] = (uint8_t)ulen;
			s = sum16(0, ph, 12);
		} else {
			memcpy(ph, ip + 8, 32);
			ph[34] = (uint8_t)(ulen >> 8), ph[35] = (uint8_t)ulen;
			ph[39] = 17;
			s = sum16(0, ph, 40);
		}
		s = sum16(s, udp, 6);
		s = sum16(s, udp + 8, ulen - 8);
		want = (uint16_t)~fold(s);
		if (ucsum != (want ? want : 0xffff))
			return 0;
	}
	if (xrxe_bth_resv6(bth) || xrxe_bth_resv7(bth))
		return 0;
	if (p->hdr_off[XRXE_HDR_DETH] && f[p->hdr_off[XRXE_HDR_DETH] + 4])
		return 0;
	if (p->hdr_off[XRXE_HDR_RDETH] && f[p->hdr_off[XRXE_HDR_RDETH]])
		return 0;
	if (p->hdr_off[XRXE_HDR_FETH]) {
		const uint8_t *fe = f + p->hdr_off[XRXE_HDR_FETH];

		if (fe[0] | fe[1] | fe[2] | (fe[3] & 0xc0))
			return 0;
	}
	for (size_t i = end - p->pad; i < end; i++)
		if (f[i])
			return 0;
	if (p->opcode == XRXE_OP_CNP)
		for (size_t i = p->bth_off + XRXE_BTH_LEN; i < p->payload_off; i++)
			if (f[i])
				return 0;
	return 1;
}

static void same_view(const struct xrxe_pkt *a, const struct xrxe_pkt *b)
{
	CHECK(a->len == b->len && a->ip_version == b->ip_version && a->l3_off == b->l3_off);
	CHECK(a->l4_off == b->l4_off && a->bth_off == b->bth_off && a->opcode == b->opcode);
	CHECK(a->payload_off == b->payload_off && a->payload_len == b->payload_len);
	CHECK(a->pad == b->pad && a->icrc == b->icrc && a->op == b->op);
	CHECK(!memcmp(a->hdr_off, b->hdr_off, sizeof(a->hdr_off)));
}

/* icrc_ok: the input's own ICRC verified (else only idempotence is checked). */
static void check_rebuild(const uint8_t *data, size_t size, const struct xrxe_pkt *pkt, bool icrc_ok)
{
	static uint8_t out[70000], again[70000];
	struct xrxe_pkt_spec spec, spec2;
	struct xrxe_pkt p2;
	int n, n2;

	CHECK(xrxe_pkt_to_spec(pkt, &spec) == 0);
	n = xrxe_build(out, sizeof(out), &spec);
	CHECK(n > 0);
	CHECK((size_t)n == xrxe_build_frame_len(&spec));
	CHECK(xrxe_parse(out, (size_t)n, 0, &p2) == XRXE_PARSE_OK);
	CHECK(xrxe_pkt_to_spec(&p2, &spec2) == 0);
	n2 = xrxe_build(again, sizeof(again), &spec2);
	CHECK(n2 == n && !memcmp(out, again, (size_t)n));
	if (icrc_ok && canonical(data, size, pkt))
		CHECK((size_t)n == size && !memcmp(out, data, size));
}

static void check_frags(const uint8_t *data, size_t size, int rc, const struct xrxe_pkt *flat)
{
	struct xrxe_frag fr[3];
	struct xrxe_pkt pkt;
	size_t cut1, cut2;
	unsigned nfr;
	int rcf;

	if (size < 4)
		return;
	cut1 = (size_t)(data[0] | data[1] << 8) % (size + 1);
	cut2 = cut1 + (size_t)(data[2] | data[3] << 8) % (size - cut1 + 1);
	nfr = data[3] & 0x80 ? 3 : 2;
	if (nfr == 2)
		cut2 = size;
	fr[0] = (struct xrxe_frag){ malloc(cut1 ? cut1 : 1), (uint32_t)cut1 };
	fr[1] = (struct xrxe_frag){ malloc(cut2 - cut1 ? cut2 - cut1 : 1), (uint32_t)(cut2 - cut1) };
	fr[2] = (struct xrxe_frag){ malloc(size - cut2 ? size - cut2 : 1), (uint32_t)(size - cut2) };
	memcpy(fr[0].data, data, cut1);
	memcpy(fr[1].data, data + cut1, cut2 - cut1);
	memcpy(fr[2].data, data + cut2, size - cut2);

	rcf = xrxe_parse_frags(fr, nfr, 0, &pkt);
	CHECK(rcf == rc || rcf == XRXE_PARSE_FRAGMENTED_HDRS);
	if (rcf == XRXE_PARSE_OK) {
		uint8_t *pl = malloc(pkt.payload_len + 1);

		same_view(&pkt, flat);
		CHECK(xrxe_icrc_verify(&pkt));
		CHECK(xrxe_pkt_copy_payload(&pkt, 0, pl, pkt.payload_len) == 0);
		CHECK(!memcmp(pl, data + pkt.payload_off, pkt.payload_len));
		free(pl);
	}
	/* finishing a frame in place over fragments never writes out of them */
	xrxe_build_finish_frags(fr, nfr, 14);
	for (int i = 0; i < 3; i++)
		free(fr[i].data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xrxe_pkt pkt, skip;
	int rc, rcs;

	rc = xrxe_parse(data, size, 0, &pkt);
	rcs = xrxe_parse(data, size, XRXE_PARSE_SKIP_ICRC, &skip);
	CHECK(rc > XRXE_PARSE_OK ? rc < XRXE_PARSE_ERROR_COUNT : rc == XRXE_PARSE_OK);
	CHECK(xrxe_parse_strerror(rc)[0] != '\0');
	if (rc == XRXE_PARSE_ICRC_MISMATCH)
		CHECK(rcs == XRXE_PARSE_OK && !xrxe_icrc_verify(&skip));
	else
		CHECK(rcs == rc);

	if (rc == XRXE_PARSE_OK) {
		CHECK((size_t)pkt.payload_off + pkt.payload_len + pkt.pad + XRXE_ICRC_LEN <= size);
		CHECK(pkt.op && pkt.op == xrxe_opcode_info(pkt.opcode));
		CHECK(xrxe_icrc(data, (size_t)pkt.payload_off + pkt.payload_len + pkt.pad + 4,
				pkt.l3_off) == pkt.icrc);
		check_rebuild(data, size, &pkt, true);
	} else if (rcs == XRXE_PARSE_OK) {
		/* a bad ICRC: the rebuilt frame gets a good one, the rest is the same */
		check_rebuild(data, size, &skip, false);
	}
	check_frags(data, size, rc, &pkt);
	/* the ICRC helpers on arbitrary offsets stay in bounds too */
	if (size)
		(void)xrxe_icrc(data, size, data[0] % (size + 1));
	return 0;
}
