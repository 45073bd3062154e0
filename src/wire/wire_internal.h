/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the files of src/wire/ and nothing else: byte access
 * across the fragments of a frame, and the ICRC over an explicit range.
 */
#ifndef XRXE_WIRE_INTERNAL_H
#define XRXE_WIRE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "xrxe/wire.h"

#define XRXE_ETHERTYPE_IPV4 0x0800
#define XRXE_ETHERTYPE_IPV6 0x86dd
#define XRXE_ETHERTYPE_VLAN 0x8100 /* 802.1Q C-tag */
#define XRXE_ETHERTYPE_QINQ 0x88a8 /* 802.1ad S-tag, accepted as the one tag */
#define XRXE_IPPROTO_UDP 17

/* Offsets inside the IPv4 and UDP headers the parser and builder touch. */
#define XRXE_IPV4_TOS 1
#define XRXE_IPV4_TOT_LEN 2
#define XRXE_IPV4_ID 4
#define XRXE_IPV4_FRAG 6
#define XRXE_IPV4_TTL 8
#define XRXE_IPV4_PROTO 9
#define XRXE_IPV4_CSUM 10
#define XRXE_IPV4_SADDR 12
#define XRXE_IPV4_DADDR 16
#define XRXE_IPV4_DF 0x4000
#define XRXE_IPV4_MF 0x2000
#define XRXE_IPV4_OFFSET_MASK 0x1fff
#define XRXE_IPV6_PLEN 4
#define XRXE_IPV6_NEXT 6
#define XRXE_IPV6_HLIM 7
#define XRXE_IPV6_SADDR 8
#define XRXE_IPV6_DADDR 24
#define XRXE_UDP_SPORT 0
#define XRXE_UDP_DPORT 2
#define XRXE_UDP_LEN 4
#define XRXE_UDP_CSUM 6

/* Copy len bytes at frame offset off out of / into the fragments.
 * Returns 0, or -EINVAL when the range runs past the last fragment. */
int xrxe_frags_read(const struct xrxe_frag *frags, unsigned nfrags, size_t off, void *dst,
		    size_t len);
int xrxe_frags_write(const struct xrxe_frag *frags, unsigned nfrags, size_t off, const void *src,
		     size_t len);
int xrxe_frags_zero(const struct xrxe_frag *frags, unsigned nfrags, size_t off, size_t len);

/* ICRC over [l3_off, end) of a frame: the masked IP/UDP/BTH prefix (which must
 * lie in the first fragment), then everything up to end, which is where the
 * trailer starts. Returns 0 when the prefix does not fit or the IP version is
 * neither 4 nor 6 (callers validate first; 0 is only a safe answer). */
uint32_t xrxe_icrc_span(const struct xrxe_frag *frags, unsigned nfrags, size_t l3_off, size_t end);

/* RFC 1071: add n bytes to a running ones-complement sum; *pos counts the
 * bytes summed so far, so a piece may start at an odd offset (fragments of
 * any length). Fold and complement at the end. */
uint64_t xrxe_csum_add(uint64_t sum, const uint8_t *p, size_t n, size_t *pos);
uint16_t xrxe_csum_fold(uint64_t sum);

/* Compute and store the UDP checksum of the datagram at l4 (IP header of
 * iphlen bytes before it) running to the end of the fragments, total. */
void xrxe_udp_csum_frags(const struct xrxe_frag *frags, unsigned nfrags, size_t iphlen, size_t l4,
			 size_t total);

/* Bytes of IP header for the version nibble at frame[l3_off]: 20, 40, or 0. */
static inline size_t xrxe_ip_hlen(uint8_t first_byte)
{
	switch (first_byte >> 4) {
	case 4:
		return XRXE_IPV4_HLEN;
	case 6:
		return XRXE_IPV6_HLEN;
	default:
		return 0;
	}
}

static inline uint16_t xrxe_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void xrxe_wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

#endif /* XRXE_WIRE_INTERNAL_H */
