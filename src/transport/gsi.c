// SPDX-License-Identifier: MIT
/*
 * QP1, the General Services Interface (IBA 13.5.1): the UD QP every port has
 * for management datagrams. On RoCE only the connection manager's MADs use
 * it. The transport only checks and frames them; what they mean is the CM's
 * (src/cm/, through ops->gsi_rx and xrxe_tp_gsi_send).
 */
#include <errno.h>
#include <string.h>

#include "transport/tp_internal.h"

/* The source port of QP1's packets: RoCEv2 leaves it to the sender (annex
 * A17.3.1, entropy for ECMP); a fixed one keeps a port's MADs in order. */
#define GSI_SPORT 0xc001

void xrxe_tpi_gsi_rx(struct xrxe_tp *tp, const struct xrxe_pkt *pkt)
{
	const struct xrxe_deth *deth = xrxe_pkt_hdr(pkt, XRXE_HDR_DETH);
	uint16_t pkey = xrxe_bth_pkey(xrxe_pkt_bth(pkt));

	/* A MAD is one UD SEND_ONLY of 256 bytes (IBA 13.4.1) with the GSI
	 * Q_Key (C13-7: GSI datagrams with another Q_Key are dropped) and a
	 * P_Key of the port's partition. */
	if (!tp->cfg.ops->gsi_rx || pkt->opcode != XRXE_OPCODE(UD, SEND_ONLY) || !deth ||
	    xrxe_deth_qkey(deth) != XRXE_GSI_QKEY || (pkey & 0x7fff) != 0x7fff ||
	    pkt->payload_len < XRXE_MAD_LEN) {
		tp->stats.rx_drop_gsi++;
		return;
	}
	tp->stats.gsi_rx++;
	tp->cfg.ops->gsi_rx(tp->cfg.user, pkt);
}

int xrxe_tp_gsi_send(struct xrxe_tp *tp, const struct xrxe_av *av, const void *mad, uint32_t len)
{
	struct xrxe_pkt_spec spec;
	struct tp_tx tx;
	int err;

	if (!av || (av->ip_version != 4 && av->ip_version != 6) || !len ||
	    len > tp->cfg.max_path_mtu)
		return -EINVAL;
	memset(&spec, 0, sizeof(spec));
	memcpy(spec.dmac, av->dmac, XRXE_ETH_ALEN);
	memcpy(spec.smac, av->smac, XRXE_ETH_ALEN);
	spec.ip_version = av->ip_version;
	spec.tclass = av->tclass & ~3u; /* management traffic is not ECN-capable */
	spec.ttl = av->hop_limit ? av->hop_limit : 64;
	spec.flow_label = av->flow_label;
	spec.ip_df = true;
	if (av->ip_version == 4) {
		spec.saddr.v4 = av->saddr.v4;
		spec.daddr.v4 = av->daddr.v4;
	} else {
		spec.saddr.v6 = av->saddr.v6;
		spec.daddr.v6 = av->daddr.v6;
		spec.udp_csum = true; /* as for every IPv6 packet (tx.c) */
	}
	spec.sport = GSI_SPORT;
	spec.opcode = XRXE_OPCODE(UD, SEND_ONLY);
	spec.pkey = XRXE_DEFAULT_PKEY;
	spec.dest_qp = XRXE_GSI_QPN;
	spec.psn = tp->gsi_psn++ & XRXE_PSN_MASK;
	spec.deth.qkey = XRXE_GSI_QKEY;
	spec.deth.src_qp = XRXE_GSI_QPN;
	spec.payload_len = len;
	err = xrxe_tpi_tx_begin(tp, &spec, &tx);
	if (err)
		return err;
	xrxe_tpi_tx_put(&tx, mad, len);
	xrxe_tpi_tx_finish(tp, NULL, &tx);
	tp->stats.gsi_tx++;
	return 0;
}
