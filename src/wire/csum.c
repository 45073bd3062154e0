// SPDX-License-Identifier: MIT
/*
 * The Internet checksum (RFC 1071) for the IPv4 header and, when asked for,
 * the UDP checksum (RFC 768; RFC 8200 §8.1 for IPv6). rxe sends UDP checksum
 * 0 (A17.3.5.1 allows it on IPv4), which IPv6 receivers other than Linux's
 * UDP tunnels may drop, so xrxe can compute a real one.
 */
#include <string.h>

#include "wire/wire_internal.h"

uint16_t xrxe_csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

uint64_t xrxe_csum_add(uint64_t sum, const uint8_t *p, size_t n, size_t *pos)
{
	size_t i = 0;

	if (n && (*pos & 1))
		sum += p[i++]; /* low half of a word begun in the previous piece */
	for (; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (i < n)
		sum += (uint32_t)p[i] << 8; /* high half; the next piece has the rest */
	*pos += n;
	return sum;
}

void xrxe_udp_csum_frags(const struct xrxe_frag *frags, unsigned nfrags, size_t iphlen, size_t l4,
			 size_t total)
{
	uint8_t *f0 = frags[0].data;
	uint8_t *udp = f0 + l4;
	uint8_t pseudo[40];
	size_t plen, pos = 0, off = 0;
	uint32_t ulen = (uint32_t)(total - l4);
	uint64_t sum;
	unsigned i;

	xrxe_wr16(udp + XRXE_UDP_CSUM, 0);
	if (iphlen == XRXE_IPV4_HLEN) {
		const uint8_t *ip = udp - XRXE_IPV4_HLEN;

		memcpy(pseudo, ip + XRXE_IPV4_SADDR, 8);
		pseudo[8] = 0;
		pseudo[9] = XRXE_IPPROTO_UDP;
		xrxe_wr16(pseudo + 10, (uint16_t)ulen);
		plen = 12;
	} else {
		const uint8_t *ip = udp - XRXE_IPV6_HLEN;

		memcpy(pseudo, ip + XRXE_IPV6_SADDR, 32);
		pseudo[32] = (uint8_t)(ulen >> 24);
		pseudo[33] = (uint8_t)(ulen >> 16);
		pseudo[34] = (uint8_t)(ulen >> 8);
		pseudo[35] = (uint8_t)ulen;
		pseudo[36] = pseudo[37] = pseudo[38] = 0;
		pseudo[39] = XRXE_IPPROTO_UDP;
		plen = 40;
	}
	sum = xrxe_csum_add(0, pseudo, plen, &pos);
	pos = 0;
	for (i = 0; i < nfrags; i++) {
		size_t flen = frags[i].len;

		if (l4 < off + flen) {
			size_t from = l4 > off ? l4 - off : 0;

			sum = xrxe_csum_add(sum, frags[i].data + from, flen - from, &pos);
		}
		off += flen;
	}
	sum = (uint16_t)~xrxe_csum_fold(sum);
	/* RFC 768: a computed 0 goes out as 0xffff; 0 means "no checksum" */
	xrxe_wr16(udp + XRXE_UDP_CSUM, sum ? (uint16_t)sum : 0xffff);
}

