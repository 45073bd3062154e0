// SPDX-License-Identifier: MIT
/*
 * Parse a received frame: Ethernet [+ one VLAN tag] + IPv4/IPv6 + UDP 4791 +
 * BTH + extended headers + payload + pad + ICRC.
 *
 * The input is hostile network data: every read is bounds-checked against the
 * first fragment (headers) or the frame (payload, trailer), every length field
 * is checked against the bytes actually there, and a rejected frame gets a
 * named reason so a counter can say why. Nothing is trusted before it is
 * checked, and no length is used in arithmetic that could wrap.
 */
#include <errno.h>
#include <string.h>

#include "wire/wire_internal.h"

/* A tagged minimum-size frame without FCS (60 + 4): below this, bytes after
 * the IP datagram are Ethernet padding (IEEE 802.3 §3.2.8). A RoCEv2 frame is
 * that small only for a zero-length RC/UC SEND or WRITE_LAST (58 bytes). */
#define ETH_PADDED_MAX 64

static const char *const parse_error_names[XRXE_PARSE_ERROR_COUNT] = {
	[XRXE_PARSE_OK] = "ok",
	[XRXE_PARSE_TRUNCATED] = "truncated",
	[XRXE_PARSE_NOT_IP] = "not-ip",
	[XRXE_PARSE_BAD_IP_VERSION] = "bad-ip-version",
	[XRXE_PARSE_IP_OPTIONS] = "ip-options",
	[XRXE_PARSE_IP_FRAGMENT] = "ip-fragment",
	[XRXE_PARSE_BAD_IP_LENGTH] = "bad-ip-length",
	[XRXE_PARSE_NOT_UDP] = "not-udp",
	[XRXE_PARSE_NOT_ROCEV2] = "not-rocev2",
	[XRXE_PARSE_BAD_UDP_LENGTH] = "bad-udp-length",
	[XRXE_PARSE_BAD_VERSION] = "bad-version",
	[XRXE_PARSE_UNKNOWN_OPCODE] = "unknown-opcode",
	[XRXE_PARSE_BAD_PAD] = "bad-pad",
	[XRXE_PARSE_BAD_LENGTH] = "bad-length",
	[XRXE_PARSE_FRAGMENTED_HDRS] = "fragmented-hdrs",
	[XRXE_PARSE_ICRC_MISMATCH] = "icrc-mismatch",
	[XRXE_PARSE_BAD_FRAGS] = "bad-frags",
};

const char *xrxe_parse_strerror(enum xrxe_parse_error err)
{
	if ((unsigned)err >= XRXE_PARSE_ERROR_COUNT || !parse_error_names[err])
		return "unknown";
	return parse_error_names[err];
}

/* What the layers see: the first fragment (where every header must be), the
 * whole frame length, and, once the IP header is read, the packet end. */
struct view {
	const uint8_t *f;
	size_t flen;  /* first fragment */
	size_t total; /* all fragments */
	size_t end;   /* end of the IP datagram (<= total) */
};

/* Headers up to `upto` must be present (else TRUNCATED) and in frag 0. */
static int need(const struct view *v, size_t upto)
{
	if (upto > v->total)
		return XRXE_PARSE_TRUNCATED;
	if (upto > v->flen)
		return XRXE_PARSE_FRAGMENTED_HDRS;
	return XRXE_PARSE_OK;
}

/* The IP datagram [l3, end) must fit in the frame. Bytes after it are allowed
 * only as the padding of a minimum-size Ethernet frame. */
static int check_ip_end(struct view *v, size_t end)
{
	if (end > v->total)
		return XRXE_PARSE_TRUNCATED;
	if (end < v->total && v->total > ETH_PADDED_MAX)
		return XRXE_PARSE_BAD_IP_LENGTH;
	v->end = end;
	return XRXE_PARSE_OK;
}

static int parse_eth(struct xrxe_pkt *pkt, const struct view *v, uint16_t *etype)
{
	int err = need(v, XRXE_ETH_HLEN);

	if (err)
		return err;
	*etype = xrxe_rd16(v->f + 12);
	pkt->l3_off = XRXE_ETH_HLEN;
	if (*etype == XRXE_ETHERTYPE_VLAN || *etype == XRXE_ETHERTYPE_QINQ) {
		err = need(v, XRXE_ETH_HLEN + XRXE_VLAN_HLEN);
		if (err)
			return err;
		pkt->has_vlan = true;
		pkt->vlan_tci = xrxe_rd16(v->f + 14);
		*etype = xrxe_rd16(v->f + 16);
		pkt->l3_off += XRXE_VLAN_HLEN;
	}
	return XRXE_PARSE_OK;
}

static int parse_ipv4(struct xrxe_pkt *pkt, struct view *v)
{
	const uint8_t *ip = v->f + pkt->l3_off;
	uint16_t tot_len, frag;
	int err = need(v, pkt->l3_off + XRXE_IPV4_HLEN);

	if (err)
		return err;
	if (ip[0] >> 4 != 4)
		return XRXE_PARSE_BAD_IP_VERSION;
	if ((ip[0] & 0x0f) != XRXE_IPV4_HLEN / 4)
		return XRXE_PARSE_IP_OPTIONS;
	frag = xrxe_rd16(ip + XRXE_IPV4_FRAG);
	if (frag & (XRXE_IPV4_MF | XRXE_IPV4_OFFSET_MASK))
		return XRXE_PARSE_IP_FRAGMENT;
	if (ip[XRXE_IPV4_PROTO] != XRXE_IPPROTO_UDP)
		return XRXE_PARSE_NOT_UDP;
	tot_len = xrxe_rd16(ip + XRXE_IPV4_TOT_LEN);
	if (tot_len < XRXE_IPV4_HLEN)
		return XRXE_PARSE_BAD_IP_LENGTH;
	pkt->ip_version = 4;
	pkt->l4_off = (uint16_t)(pkt->l3_off + XRXE_IPV4_HLEN);
	return check_ip_end(v, (size_t)pkt->l3_off + tot_len);
}

static int parse_ipv6(struct xrxe_pkt *pkt, struct view *v)
{
	const uint8_t *ip = v->f + pkt->l3_off;
	int err = need(v, pkt->l3_off + XRXE_IPV6_HLEN);

	if (err)
		return err;
	if (ip[0] >> 4 != 6)
		return XRXE_PARSE_BAD_IP_VERSION;
	/* RoCEv2 puts UDP right after the fixed header: no extension headers. */
	if (ip[XRXE_IPV6_NEXT] != XRXE_IPPROTO_UDP)
		return XRXE_PARSE_NOT_UDP;
	pkt->ip_version = 6;
	pkt->l4_off = (uint16_t)(pkt->l3_off + XRXE_IPV6_HLEN);
	return check_ip_end(v, (size_t)pkt->l4_off + xrxe_rd16(ip + XRXE_IPV6_PLEN));
}

static int parse_udp(struct xrxe_pkt *pkt, const struct view *v)
{
	const uint8_t *udp = v->f + pkt->l4_off;
	int err;

	if ((size_t)pkt->l4_off + XRXE_UDP_HLEN > v->end)
		return XRXE_PARSE_TRUNCATED;
	err = need(v, pkt->l4_off + XRXE_UDP_HLEN);
	if (err)
		return err;
	/* RoCEv2 (annex A17) is identified by the destination port alone. */
	if (xrxe_rd16(udp + XRXE_UDP_DPORT) != XRXE_ROCEV2_UDP_PORT)
		return XRXE_PARSE_NOT_ROCEV2;
	if (xrxe_rd16(udp + XRXE_UDP_LEN) != v->end - pkt->l4_off)
		return XRXE_PARSE_BAD_UDP_LENGTH;
	pkt->bth_off = (uint16_t)(pkt->l4_off + XRXE_UDP_HLEN);
	return XRXE_PARSE_OK;
}

static int parse_bth(struct xrxe_pkt *pkt, const struct view *v)
{
	const struct xrxe_bth *bth = (const struct xrxe_bth *)(v->f + pkt->bth_off);
	const struct xrxe_opcode_info *op;
	int err;
	int h;

	if ((size_t)pkt->bth_off + XRXE_BTH_LEN + XRXE_ICRC_LEN > v->end)
		return XRXE_PARSE_TRUNCATED;
	err = need(v, pkt->bth_off + XRXE_BTH_LEN);
	if (err)
		return err;
	/* C9-3: a packet whose TVer is not 0 is silently dropped. */
	if (xrxe_bth_tver(bth) != 0)
		return XRXE_PARSE_BAD_VERSION;
	pkt->opcode = xrxe_bth_opcode(bth);
	pkt->pad = xrxe_bth_pad(bth);
	op = xrxe_opcode_info(pkt->opcode);
	if (!op)
		return XRXE_PARSE_UNKNOWN_OPCODE;
	pkt->op = op;
	if ((size_t)pkt->bth_off + op->length + XRXE_ICRC_LEN > v->end)
		return XRXE_PARSE_TRUNCATED;
	err = need(v, pkt->bth_off + op->length);
	if (err)
		return err;
	for (h = 0; h < XRXE_HDR_COUNT; h++)
		if (op->hdrs & XRXE_HDR_BIT(h))
			pkt->hdr_off[h] = (uint16_t)(pkt->bth_off + op->offset[h]);
	return XRXE_PARSE_OK;
}

/* Payload length and pad against the opcode's payload rule. */
static int parse_payload(struct xrxe_pkt *pkt, const struct view *v)
{
	size_t start = (size_t)pkt->bth_off + pkt->op->length;
	size_t wire = v->end - XRXE_ICRC_LEN - start; /* payload + pad; parse_bth made it >= 0 */

	/* The pad bytes are part of the wire payload, so there must be at least
	 * pad of them, and payload + pad fills whole 4-byte words (IBA 9.2: the
	 * pad aligns the payload to a 4-byte boundary). */
	if (pkt->pad > wire || (wire & 3))
		return XRXE_PARSE_BAD_PAD;
	pkt->payload_off = (uint32_t)start;
	pkt->payload_len = (uint32_t)(wire - pkt->pad);

	switch (pkt->op->payload) {
	case XRXE_PAYLOAD_NONE:
		if (wire != 0)
			return XRXE_PARSE_BAD_LENGTH;
		break;
	case XRXE_PAYLOAD_ANY:
		break;
	case XRXE_PAYLOAD_FULL_MTU:
		/* FIRST/MIDDLE carry exactly one path MTU; the MTU is a QP
		 * attribute, so here only "not empty" can be checked. */
		if (pkt->payload_len == 0)
			return XRXE_PARSE_BAD_LENGTH;
		break;
	case XRXE_PAYLOAD_8:
		if (pkt->payload_len != 8)
			return XRXE_PARSE_BAD_LENGTH;
		break;
	case XRXE_PAYLOAD_SACK:
		if (pkt->payload_len != XRXE_SACK_LEN)
			return XRXE_PARSE_BAD_LENGTH;
		break;
	case XRXE_PAYLOAD_CNP:
		/* A17.9.3: BTH, then 16 reserved bytes (ignored on receive). */
		if (pkt->pad)
			return XRXE_PARSE_BAD_PAD;
		if (wire != XRXE_CNP_RSVD_LEN)
			return XRXE_PARSE_BAD_LENGTH;
		pkt->payload_off = (uint32_t)(start + XRXE_CNP_RSVD_LEN);
		pkt->payload_len = 0;
		break;
	default:
		return XRXE_PARSE_BAD_LENGTH;
	}
	return XRXE_PARSE_OK;
}

static int parse_frame(struct xrxe_pkt *pkt, unsigned flags)
{
	struct view v = {
		.f = pkt->frag[0].data,
		.flen = pkt->frag[0].len,
		.total = pkt->len,
	};
	uint16_t etype;
	uint8_t trailer[XRXE_ICRC_LEN];
	int err;

	err = parse_eth(pkt, &v, &etype);
	if (err)
		return err;
	if (etype == XRXE_ETHERTYPE_IPV4)
		err = parse_ipv4(pkt, &v);
	else if (etype == XRXE_ETHERTYPE_IPV6)
		err = parse_ipv6(pkt, &v);
	else
		err = XRXE_PARSE_NOT_IP;
	if (err)
		return err;
	err = parse_udp(pkt, &v);
	if (err)
		return err;
	err = parse_bth(pkt, &v);
	if (err)
		return err;
	err = parse_payload(pkt, &v);
	if (err)
		return err;

	/* The trailer may straddle two fragments: gather it. */
	if (xrxe_frags_read(pkt->frag, pkt->nfrags, v.end - XRXE_ICRC_LEN, trailer, sizeof(trailer)))
		return XRXE_PARSE_TRUNCATED; /* unreachable: end <= total */
	pkt->icrc = (uint32_t)trailer[0] | (uint32_t)trailer[1] << 8 | (uint32_t)trailer[2] << 16 |
		    (uint32_t)trailer[3] << 24;

	/* A17.3.3: a packet whose ICRC does not match is dropped. */
	if (!(flags & XRXE_PARSE_SKIP_ICRC) && !xrxe_icrc_verify(pkt))
		return XRXE_PARSE_ICRC_MISMATCH;
	return XRXE_PARSE_OK;
}

int xrxe_parse_frags(const struct xrxe_frag *frags, unsigned nfrags, unsigned flags,
		     struct xrxe_pkt *out)
{
	uint64_t total = 0;
	unsigned i;

	memset(out, 0, sizeof(*out));
	if (!frags || nfrags == 0 || nfrags > XRXE_MAX_FRAGS)
		return XRXE_PARSE_BAD_FRAGS;
	for (i = 0; i < nfrags; i++) {
		if (frags[i].len && !frags[i].data)
			return XRXE_PARSE_BAD_FRAGS;
		out->frag[i] = frags[i];
		total += frags[i].len;
	}
	if (total > UINT32_MAX)
		return XRXE_PARSE_BAD_FRAGS;
	out->nfrags = (uint8_t)nfrags;
	out->len = (uint32_t)total;
	return parse_frame(out, flags);
}

int xrxe_parse(const uint8_t *frame, size_t len, unsigned flags, struct xrxe_pkt *out)
{
	struct xrxe_frag frag = { .data = (uint8_t *)(uintptr_t)frame, .len = (uint32_t)len };

	if (len > UINT32_MAX) {
		memset(out, 0, sizeof(*out));
		return XRXE_PARSE_BAD_FRAGS;
	}
	return xrxe_parse_frags(&frag, 1, flags, out);
}

int xrxe_pkt_copy_payload(const struct xrxe_pkt *pkt, uint32_t off, void *dst, uint32_t len)
{
	if ((uint64_t)off + len > pkt->payload_len)
		return -EINVAL;
	if (!len)
		return 0;
	return xrxe_frags_read(pkt->frag, pkt->nfrags, (size_t)pkt->payload_off + off, dst, len);
}
