// SPDX-License-Identifier: MIT
/*
 * Build a frame: Ethernet [+ VLAN] + IPv4/IPv6 + UDP + BTH + extended headers,
 * then (after the caller placed the payload) pad, ICRC and the optional UDP
 * checksum. The layout is what rxe sends (docs/facts/rxe.md §1.1), so that
 * build(pkt_to_spec(parse(f))) reproduces every frame rxe emits.
 */
#include <errno.h>
#include <string.h>

#include "wire/wire_internal.h"

static size_t spec_ip_hlen(const struct xrxe_pkt_spec *spec)
{
	return spec->ip_version == 4 ? XRXE_IPV4_HLEN : spec->ip_version == 6 ? XRXE_IPV6_HLEN : 0;
}

static size_t spec_l3_off(const struct xrxe_pkt_spec *spec)
{
	return XRXE_ETH_HLEN + (spec->has_vlan ? XRXE_VLAN_HLEN : 0);
}

/* The CNP's 16 reserved bytes go out with the headers and are not payload. */
static size_t op_hdr_len(const struct xrxe_opcode_info *op)
{
	return op->length + (op->payload == XRXE_PAYLOAD_CNP ? XRXE_CNP_RSVD_LEN : 0);
}

static size_t spec_payload_len(const struct xrxe_pkt_spec *spec, const struct xrxe_opcode_info *op)
{
	return op->payload == XRXE_PAYLOAD_CNP ? 0 : spec->payload_len;
}

/* IBA 9.2: the pad brings the payload to a multiple of 4 bytes. */
static uint8_t pad_for(size_t payload_len)
{
	return (uint8_t)(-payload_len & 3);
}

size_t xrxe_build_hdr_len(const struct xrxe_pkt_spec *spec)
{
	const struct xrxe_opcode_info *op = xrxe_opcode_info(spec->opcode);
	size_t iphlen = spec_ip_hlen(spec);

	if (!op || !iphlen)
		return 0;
	return spec_l3_off(spec) + iphlen + XRXE_UDP_HLEN + op_hdr_len(op);
}

size_t xrxe_build_frame_len(const struct xrxe_pkt_spec *spec)
{
	const struct xrxe_opcode_info *op = xrxe_opcode_info(spec->opcode);
	size_t hdr = xrxe_build_hdr_len(spec), pl;

	if (!hdr)
		return 0;
	pl = spec_payload_len(spec, op);
	return hdr + pl + pad_for(pl) + XRXE_ICRC_LEN;
}

static bool payload_ok(const struct xrxe_opcode_info *op, uint32_t len)
{
	switch (op->payload) {
	case XRXE_PAYLOAD_NONE:
	case XRXE_PAYLOAD_CNP:
		return len == 0;
	case XRXE_PAYLOAD_ANY:
		return true;
	case XRXE_PAYLOAD_FULL_MTU:
		return len > 0;
	case XRXE_PAYLOAD_8:
		return len == 8;
	case XRXE_PAYLOAD_SACK:
		return len == XRXE_SACK_LEN;
	default:
		return false;
	}
}

static void write_ipv4(uint8_t *ip, const struct xrxe_pkt_spec *spec, size_t tot_len)
{
	ip[0] = 0x45; /* version 4, IHL 5: rxe sends no options */
	ip[XRXE_IPV4_TOS] = spec->tclass;
	xrxe_wr16(ip + XRXE_IPV4_TOT_LEN, (uint16_t)tot_len);
	xrxe_wr16(ip + XRXE_IPV4_ID, spec->ip_id);
	xrxe_wr16(ip + XRXE_IPV4_FRAG, spec->ip_df ? XRXE_IPV4_DF : 0);
	ip[XRXE_IPV4_TTL] = spec->ttl;
	ip[XRXE_IPV4_PROTO] = XRXE_IPPROTO_UDP;
	memcpy(ip + XRXE_IPV4_SADDR, &spec->saddr.v4, 4);
	memcpy(ip + XRXE_IPV4_DADDR, &spec->daddr.v4, 4);
	{
		uint64_t sum = 0;
		size_t pos = 0;

		sum = xrxe_csum_add(sum, ip, XRXE_IPV4_HLEN, &pos); /* checksum field is still 0 */
		xrxe_wr16(ip + XRXE_IPV4_CSUM, (uint16_t)~xrxe_csum_fold(sum));
	}
}

static void write_ipv6(uint8_t *ip, const struct xrxe_pkt_spec *spec, size_t plen)
{
	uint32_t w = 6u << 28 | (uint32_t)spec->tclass << 20 | (spec->flow_label & 0xfffff);

	ip[0] = (uint8_t)(w >> 24);
	ip[1] = (uint8_t)(w >> 16);
	ip[2] = (uint8_t)(w >> 8);
	ip[3] = (uint8_t)w;
	xrxe_wr16(ip + XRXE_IPV6_PLEN, (uint16_t)plen);
	ip[XRXE_IPV6_NEXT] = XRXE_IPPROTO_UDP;
	ip[XRXE_IPV6_HLIM] = spec->ttl;
	memcpy(ip + XRXE_IPV6_SADDR, &spec->saddr.v6, 16);
	memcpy(ip + XRXE_IPV6_DADDR, &spec->daddr.v6, 16);
}

static void write_bth(uint8_t *p, const struct xrxe_pkt_spec *spec, uint8_t pad)
{
	struct xrxe_bth *bth = (struct xrxe_bth *)p;

	xrxe_bth_set_opcode(bth, spec->opcode);
	xrxe_bth_set_se(bth, spec->se);
	xrxe_bth_set_mig(bth, spec->mig);
	xrxe_bth_set_pad(bth, pad);
	xrxe_bth_set_tver(bth, 0); /* C9-3: TVer is 0 */
	xrxe_bth_set_pkey(bth, spec->pkey);
	xrxe_bth_set_fecn(bth, spec->fecn);
	xrxe_bth_set_becn(bth, spec->becn);
	xrxe_bth_set_qpn(bth, spec->dest_qp);
	xrxe_bth_set_ackreq(bth, spec->ackreq);
	xrxe_bth_set_psn(bth, spec->psn);
}

static void write_ext_hdrs(uint8_t *bth, const struct xrxe_opcode_info *op,
			   const struct xrxe_pkt_spec *spec)
{
#define HDR(h) (op->hdrs & XRXE_HDR_BIT(XRXE_HDR_##h) ? (void *)(bth + op->offset[XRXE_HDR_##h]) : NULL)
	struct xrxe_rdeth *rdeth = HDR(RDETH);
	struct xrxe_deth *deth = HDR(DETH);
	struct xrxe_xrceth *xrceth = HDR(XRCETH);
	struct xrxe_feth *feth = HDR(FETH);
	struct xrxe_reth *reth = HDR(RETH);
	struct xrxe_atmeth *atmeth = HDR(ATMETH);
	struct xrxe_aeth *aeth = HDR(AETH);
	struct xrxe_atmack *atmack = HDR(ATMACK);
	struct xrxe_immdt *immdt = HDR(IMMDT);
	struct xrxe_ieth *ieth = HDR(IETH);
#undef HDR

	if (rdeth)
		xrxe_rdeth_set_een(rdeth, spec->rdeth.een);
	if (deth) {
		xrxe_deth_set_qkey(deth, spec->deth.qkey);
		xrxe_deth_set_sqp(deth, spec->deth.src_qp);
	}
	if (xrceth)
		xrxe_xrceth_set_srqn(xrceth, spec->xrc_srqn);
	if (feth) {
		xrxe_feth_set_sel(feth, spec->feth.sel);
		xrxe_feth_set_plt(feth, spec->feth.plt);
	}
	if (reth) {
		xrxe_reth_set_va(reth, spec->reth.va);
		xrxe_reth_set_rkey(reth, spec->reth.rkey);
		xrxe_reth_set_len(reth, spec->reth.len);
	}
	if (atmeth) {
		xrxe_atmeth_set_va(atmeth, spec->atmeth.va);
		xrxe_atmeth_set_rkey(atmeth, spec->atmeth.rkey);
		xrxe_atmeth_set_swap_add(atmeth, spec->atmeth.swap_add);
		xrxe_atmeth_set_comp(atmeth, spec->atmeth.comp);
	}
	if (aeth) {
		xrxe_aeth_set_syndrome(aeth, spec->aeth.syndrome);
		xrxe_aeth_set_msn(aeth, spec->aeth.msn);
	}
	if (atmack)
		xrxe_atmack_set_orig(atmack, spec->atmack_orig);
	if (immdt)
		xrxe_immdt_set_imm(immdt, spec->imm_be);
	if (ieth)
		xrxe_ieth_set_rkey(ieth, spec->ieth_rkey);
}

int xrxe_build_headers(uint8_t *buf, size_t cap, const struct xrxe_pkt_spec *spec)
{
	const struct xrxe_opcode_info *op = xrxe_opcode_info(spec->opcode);
	size_t iphlen = spec_ip_hlen(spec);
	size_t l3, l4, bth, hdr_len, frame_len, pl;
	uint8_t *udp;

	if (!op || !iphlen || !payload_ok(op, spec->payload_len))
		return -EINVAL;
	l3 = spec_l3_off(spec);
	l4 = l3 + iphlen;
	bth = l4 + XRXE_UDP_HLEN;
	hdr_len = bth + op_hdr_len(op);
	pl = spec_payload_len(spec, op);
	frame_len = hdr_len + pl + pad_for(pl) + XRXE_ICRC_LEN;
	/* IPv4 total length and IPv6/UDP lengths are 16-bit fields. */
	if (frame_len - (spec->ip_version == 4 ? l3 : l4) > 0xffff)
		return -EINVAL;
	if (frame_len > cap)
		return -ENOSPC;

	memset(buf, 0, hdr_len); /* reserved fields go out as zero */
	memcpy(buf, spec->dmac, XRXE_ETH_ALEN);
	memcpy(buf + XRXE_ETH_ALEN, spec->smac, XRXE_ETH_ALEN);
	if (spec->has_vlan) {
		xrxe_wr16(buf + 12, XRXE_ETHERTYPE_VLAN);
		xrxe_wr16(buf + 14, spec->vlan_tci);
	}
	xrxe_wr16(buf + l3 - 2, spec->ip_version == 4 ? XRXE_ETHERTYPE_IPV4 : XRXE_ETHERTYPE_IPV6);
	if (spec->ip_version == 4)
		write_ipv4(buf + l3, spec, frame_len - l3);
	else
		write_ipv6(buf + l3, spec, frame_len - l4);

	udp = buf + l4;
	xrxe_wr16(udp + XRXE_UDP_SPORT, spec->sport);
	xrxe_wr16(udp + XRXE_UDP_DPORT, spec->dport ? spec->dport : XRXE_ROCEV2_UDP_PORT);
	xrxe_wr16(udp + XRXE_UDP_LEN, (uint16_t)(frame_len - l4));
	/* 0 = no checksum (rxe); non-zero asks xrxe_build_finish to compute it.
	 * A computed 0 goes out as 0xffff (RFC 768), so 0 stays unambiguous. */
	xrxe_wr16(udp + XRXE_UDP_CSUM, spec->udp_csum ? 0xffff : 0);

	write_bth(buf + bth, spec, pad_for(pl));
	write_ext_hdrs(buf + bth, op, spec);
	return (int)hdr_len;
}

void xrxe_build_finish_frags(const struct xrxe_frag *frags, unsigned nfrags, size_t l3_off)
{
	size_t total = 0, iphlen, l4, bth_end, end;
	const struct xrxe_bth *bth;
	uint32_t icrc;
	uint8_t trailer[XRXE_ICRC_LEN];
	uint8_t pad;
	unsigned i;

	if (nfrags == 0 || nfrags > XRXE_MAX_FRAGS || l3_off >= frags[0].len)
		return;
	for (i = 0; i < nfrags; i++)
		total += frags[i].len;
	/* Only our own headers are read here, but check them anyway: a wrong
	 * frame_len must not become a wild write. */
	iphlen = xrxe_ip_hlen(frags[0].data[l3_off]);
	l4 = l3_off + iphlen;
	bth_end = l4 + XRXE_UDP_HLEN + XRXE_BTH_LEN;
	if (!iphlen || bth_end > frags[0].len || total < bth_end + XRXE_ICRC_LEN)
		return;
	bth = (const struct xrxe_bth *)(frags[0].data + bth_end - XRXE_BTH_LEN);
	pad = xrxe_bth_pad(bth);
	end = total - XRXE_ICRC_LEN;
	if (end - bth_end < pad)
		return;

	xrxe_frags_zero(frags, nfrags, end - pad, pad);
	icrc = xrxe_icrc_span(frags, nfrags, l3_off, end);
	/* A17.3.3 / rxe: the CRC goes out least-significant byte first. */
	trailer[0] = (uint8_t)icrc;
	trailer[1] = (uint8_t)(icrc >> 8);
	trailer[2] = (uint8_t)(icrc >> 16);
	trailer[3] = (uint8_t)(icrc >> 24);
	xrxe_frags_write(frags, nfrags, end, trailer, sizeof(trailer));

	/* The UDP checksum covers the ICRC, so it comes last; the ICRC masks it. */
	if (xrxe_rd16(frags[0].data + l4 + XRXE_UDP_CSUM))
		xrxe_udp_csum_frags(frags, nfrags, iphlen, l4, total);
}

void xrxe_build_finish(uint8_t *frame, size_t frame_len, size_t l3_off)
{
	struct xrxe_frag frag = { .data = frame, .len = (uint32_t)frame_len };

	if (frame_len > UINT32_MAX)
		return;
	xrxe_build_finish_frags(&frag, 1, l3_off);
}

int xrxe_build(uint8_t *buf, size_t cap, const struct xrxe_pkt_spec *spec)
{
	const struct xrxe_opcode_info *op = xrxe_opcode_info(spec->opcode);
	size_t pl;
	int off;

	if (!op)
		return -EINVAL;
	pl = spec_payload_len(spec, op);
	if (pl && !spec->payload)
		return -EINVAL;
	off = xrxe_build_headers(buf, cap, spec);
	if (off < 0)
		return off;
	if (pl)
		memcpy(buf + off, spec->payload, pl);
	xrxe_build_finish(buf, xrxe_build_frame_len(spec), spec_l3_off(spec));
	return (int)xrxe_build_frame_len(spec);
}
