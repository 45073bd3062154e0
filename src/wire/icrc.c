// SPDX-License-Identifier: MIT
/*
 * The RoCEv2 invariant CRC (IBA 7.8.1 for the ICRC itself; annex A17.3.3 for
 * what RoCEv2 feeds it; docs/facts/rxe.md §1.5 for rxe's exact masking).
 *
 * ICRC = CRC-32 (reflected, poly 0xEDB88320, the Ethernet/zlib CRC) over
 *   8 bytes of 0xFF        the LRH that RoCEv2 does not carry, fully masked
 *   IP header, masked      fields routers may rewrite: IPv4 TOS, TTL, checksum;
 *                          IPv6 traffic class, flow label, hop limit
 *   UDP header, masked     checksum (it may be 0 or not, and covers the ICRC)
 *   BTH, masked            byte 4 (FECN, BECN, resv6): switches set FECN/BECN
 *   ext. headers, payload, pad
 * and sent least-significant byte first (the trailer is the LE32 of the CRC).
 *
 * ISA-L's crc32_gzip_refl is exactly zlib's crc32(): it takes the finalized
 * CRC of the bytes so far (0 to start) and returns the finalized CRC of the
 * bytes so far plus buf. So the prefix is computed once over a masked copy on
 * the stack and the rest chains over the fragments in place.
 */
#include <string.h>

#include <isa-l/crc.h>

#include "wire/wire_internal.h"

#define LRH_MASKED_LEN 8
#define ICRC_PREFIX_MAX (LRH_MASKED_LEN + XRXE_IPV6_HLEN + XRXE_UDP_HLEN + XRXE_BTH_LEN)

/* Byte 4 of the BTH: FECN | BECN | resv6, the "resv8a" byte the mask covers. */
#define BTH_MASKED_BYTE 4

/*
 * ISA-L (2.30) picks an AVX-512 kernel on CPUs that have it and returns from
 * it with the upper halves of the vector registers dirty (no vzeroupper). Our
 * code is plain SSE, and SSE after a dirty upper state pays a transition
 * penalty on every vector instruction until something clears it: measured,
 * that doubled the time of a 4 KiB ICRC. So clear it once per ICRC, on CPUs
 * where the instruction exists (vzeroupper keeps the low 128 bits, the only
 * ones SSE code uses).
 */
static inline void vector_upper_clear(void)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx"))
		__asm__ volatile("vzeroupper");
#endif
}

uint32_t xrxe_icrc_span(const struct xrxe_frag *frags, unsigned nfrags, size_t l3_off, size_t end)
{
	uint8_t buf[ICRC_PREFIX_MAX];
	const uint8_t *f0;
	size_t iphlen, plen, pos, off;
	uint32_t crc;
	unsigned i;

	if (nfrags == 0 || l3_off >= frags[0].len)
		return 0;
	f0 = frags[0].data;
	iphlen = xrxe_ip_hlen(f0[l3_off]);
	if (!iphlen)
		return 0;
	plen = iphlen + XRXE_UDP_HLEN + XRXE_BTH_LEN;
	if (frags[0].len - l3_off < plen || end < l3_off + plen)
		return 0;

	memset(buf, 0xff, LRH_MASKED_LEN);
	/* Constant sizes, so the copy is a few vector moves, not `rep movs`. */
	if (iphlen == XRXE_IPV4_HLEN)
		memcpy(buf + LRH_MASKED_LEN, f0 + l3_off, XRXE_IPV4_HLEN + XRXE_UDP_HLEN + XRXE_BTH_LEN);
	else
		memcpy(buf + LRH_MASKED_LEN, f0 + l3_off, XRXE_IPV6_HLEN + XRXE_UDP_HLEN + XRXE_BTH_LEN);
	{
		uint8_t *ip = buf + LRH_MASKED_LEN;
		uint8_t *udp = ip + iphlen;
		uint8_t *bth = udp + XRXE_UDP_HLEN;

		if (iphlen == XRXE_IPV4_HLEN) {
			ip[XRXE_IPV4_TOS] = 0xff;
			ip[XRXE_IPV4_TTL] = 0xff;
			ip[XRXE_IPV4_CSUM] = 0xff;
			ip[XRXE_IPV4_CSUM + 1] = 0xff;
		} else {
			/* version(4) stays; traffic class(8) and flow label(20) become ones */
			ip[0] |= 0x0f;
			ip[1] = ip[2] = ip[3] = 0xff;
			ip[XRXE_IPV6_HLIM] = 0xff;
		}
		udp[XRXE_UDP_CSUM] = 0xff;
		udp[XRXE_UDP_CSUM + 1] = 0xff;
		bth[BTH_MASKED_BYTE] = 0xff;
	}
	crc = crc32_gzip_refl(0, buf, LRH_MASKED_LEN + plen);

	/* The rest, in place: from the end of the BTH up to the trailer. */
	pos = l3_off + plen; /* frame offset still to cover */
	off = 0;             /* frame offset of frags[i] */
	for (i = 0; i < nfrags && pos < end; i++) {
		size_t flen = frags[i].len;

		if (pos < off + flen) {
			size_t from = pos - off;
			size_t n = (end < off + flen ? end - off : flen) - from;

			crc = crc32_gzip_refl(crc, frags[i].data + from, n);
			pos += n;
		}
		off += flen;
	}
	vector_upper_clear();
	return pos == end ? crc : 0;
}

uint32_t xrxe_icrc(const uint8_t *frame, size_t len, size_t l3_off)
{
	struct xrxe_frag frag = { .data = (uint8_t *)(uintptr_t)frame, .len = (uint32_t)len };

	if (len < XRXE_ICRC_LEN || len > UINT32_MAX)
		return 0;
	return xrxe_icrc_span(&frag, 1, l3_off, len - XRXE_ICRC_LEN);
}

uint32_t xrxe_icrc_frags(const struct xrxe_frag *frags, unsigned nfrags, size_t l3_off)
{
	size_t total = 0;
	unsigned i;

	for (i = 0; i < nfrags; i++)
		total += frags[i].len;
	if (total < XRXE_ICRC_LEN)
		return 0;
	return xrxe_icrc_span(frags, nfrags, l3_off, total - XRXE_ICRC_LEN);
}

bool xrxe_icrc_verify(const struct xrxe_pkt *pkt)
{
	/* The trailer follows payload and pad; Ethernet padding after it is not ours. */
	size_t end = (size_t)pkt->payload_off + pkt->payload_len + pkt->pad;

	if (pkt->nfrags == 0 || pkt->nfrags > XRXE_MAX_FRAGS)
		return false;
	return xrxe_icrc_span(pkt->frag, pkt->nfrags, pkt->l3_off, end) == pkt->icrc;
}
