// SPDX-License-Identifier: MIT
/*
 * A parsed frame back into a build spec: the inverse of xrxe_build for every
 * frame in canonical form (what rxe and xrxe send), so that
 * xrxe_build(pkt_to_spec(parse(f))) == f. Fields the wire does not carry in
 * the spec's terms (802.1ad TPID, IPv4 flags other than DF, reserved bits,
 * Ethernet padding) are not kept.
 */
#include <errno.h>
#include <string.h>

#include "wire/wire_internal.h"

int xrxe_pkt_to_spec(const struct xrxe_pkt *pkt, struct xrxe_pkt_spec *spec)
{
	const uint8_t *f, *ip, *udp;
	const struct xrxe_bth *bth;
	int h;

	if (pkt->nfrags != 1 || !pkt->op || !pkt->frag[0].data)
		return -EINVAL;
	memset(spec, 0, sizeof(*spec));
	f = pkt->frag[0].data;
	memcpy(spec->dmac, f, XRXE_ETH_ALEN);
	memcpy(spec->smac, f + XRXE_ETH_ALEN, XRXE_ETH_ALEN);
	spec->has_vlan = pkt->has_vlan;
	spec->vlan_tci = pkt->vlan_tci;

	ip = f + pkt->l3_off;
	spec->ip_version = pkt->ip_version;
	if (pkt->ip_version == 4) {
		spec->tclass = ip[XRXE_IPV4_TOS];
		spec->ttl = ip[XRXE_IPV4_TTL];
		spec->ip_id = xrxe_rd16(ip + XRXE_IPV4_ID);
		spec->ip_df = xrxe_rd16(ip + XRXE_IPV4_FRAG) & XRXE_IPV4_DF;
		memcpy(&spec->saddr.v4, ip + XRXE_IPV4_SADDR, 4);
		memcpy(&spec->daddr.v4, ip + XRXE_IPV4_DADDR, 4);
	} else {
		uint32_t w = (uint32_t)ip[0] << 24 | (uint32_t)ip[1] << 16 | (uint32_t)ip[2] << 8 | ip[3];

		spec->tclass = (uint8_t)(w >> 20);
		spec->flow_label = w & 0xfffff;
		spec->ttl = ip[XRXE_IPV6_HLIM];
		memcpy(&spec->saddr.v6, ip + XRXE_IPV6_SADDR, 16);
		memcpy(&spec->daddr.v6, ip + XRXE_IPV6_DADDR, 16);
	}

	udp = f + pkt->l4_off;
	spec->sport = xrxe_rd16(udp + XRXE_UDP_SPORT);
	spec->dport = xrxe_rd16(udp + XRXE_UDP_DPORT);
	spec->udp_csum = xrxe_rd16(udp + XRXE_UDP_CSUM) != 0;

	bth = xrxe_pkt_bth(pkt);
	spec->opcode = xrxe_bth_opcode(bth);
	spec->se = xrxe_bth_se(bth);
	spec->mig = xrxe_bth_mig(bth);
	spec->pkey = xrxe_bth_pkey(bth);
	spec->fecn = xrxe_bth_fecn(bth);
	spec->becn = xrxe_bth_becn(bth);
	spec->dest_qp = xrxe_bth_qpn(bth);
	spec->ackreq = xrxe_bth_ackreq(bth);
	spec->psn = xrxe_bth_psn(bth);

	for (h = 0; h < XRXE_HDR_COUNT; h++) {
		const void *p = xrxe_pkt_hdr(pkt, (enum xrxe_hdr)h);

		if (!p)
			continue;
		switch ((enum xrxe_hdr)h) {
		case XRXE_HDR_RDETH:
			spec->rdeth.een = xrxe_rdeth_een(p);
			break;
		case XRXE_HDR_DETH:
			spec->deth.qkey = xrxe_deth_qkey(p);
			spec->deth.src_qp = xrxe_deth_sqp(p);
			break;
		case XRXE_HDR_XRCETH:
			spec->xrc_srqn = xrxe_xrceth_srqn(p);
			break;
		case XRXE_HDR_FETH:
			spec->feth.sel = xrxe_feth_sel(p);
			spec->feth.plt = xrxe_feth_plt(p);
			break;
		case XRXE_HDR_RETH:
			spec->reth.va = xrxe_reth_va(p);
			spec->reth.rkey = xrxe_reth_rkey(p);
			spec->reth.len = xrxe_reth_len(p);
			break;
		case XRXE_HDR_ATMETH:
			spec->atmeth.va = xrxe_atmeth_va(p);
			spec->atmeth.rkey = xrxe_atmeth_rkey(p);
			spec->atmeth.swap_add = xrxe_atmeth_swap_add(p);
			spec->atmeth.comp = xrxe_atmeth_comp(p);
			break;
		case XRXE_HDR_AETH:
			spec->aeth.syndrome = xrxe_aeth_syndrome(p);
			spec->aeth.msn = xrxe_aeth_msn(p);
			break;
		case XRXE_HDR_ATMACK:
			spec->atmack_orig = xrxe_atmack_orig(p);
			break;
		case XRXE_HDR_IMMDT:
			spec->imm_be = xrxe_immdt_imm(p);
			break;
		case XRXE_HDR_IETH:
			spec->ieth_rkey = xrxe_ieth_rkey(p);
			break;
		case XRXE_HDR_COUNT:
			break;
		}
	}
	spec->payload = pkt->payload_len ? f + pkt->payload_off : NULL;
	spec->payload_len = pkt->payload_len;
	return 0;
}
