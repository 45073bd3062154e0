// SPDX-License-Identifier: MIT
/*
 * One frame out: the wire builder writes the headers into the first
 * fragment of a buffer from ops->tx_reserve, the payload is copied once from
 * registered memory (or the WQE's inline bytes) straight into the fragments,
 * then the ICRC is computed and the buffer submitted.
 */
#include <errno.h>
#include <string.h>

#include "transport/tp_internal.h"

void xrxe_tpi_spec_init(const struct xrxe_tp_qp *qp, const struct xrxe_av *av,
			struct xrxe_pkt_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	memcpy(spec->dmac, av->dmac, XRXE_ETH_ALEN);
	memcpy(spec->smac, av->smac, XRXE_ETH_ALEN);
	spec->ip_version = av->ip_version;
	/* CC hook: data DSCP + ECN-capable while DCQCN is on (cc.c) */
	spec->tclass = xrxe_tpi_cc_tclass(qp->tp, av->tclass);
	spec->ttl = av->hop_limit;
	spec->flow_label = av->flow_label;
	spec->ip_df = true; /* rxe sets DF (docs/facts/rxe.md §1.1) */
	if (av->ip_version == 4) {
		spec->saddr.v4 = av->saddr.v4;
		spec->daddr.v4 = av->daddr.v4;
	} else {
		spec->saddr.v6 = av->saddr.v6;
		spec->daddr.v6 = av->daddr.v6;
		/* rxe sends UDP checksum 0 on IPv6 too (docs/facts/rxe.md §5.4.1), which
		 * RFC 8200 §8.1 tells receivers to discard and Wireshark flags. A
		 * real checksum is accepted by every receiver, rxe included (its
		 * tunnel socket verifies a non-zero one); docs/interop.md. */
		spec->udp_csum = true;
	}
	spec->sport = qp->sport;
	spec->pkey = XRXE_DEFAULT_PKEY;
	spec->dest_qp = qp->attr.dest_qp_num & XRXE_QPN_MASK;
}

int xrxe_tpi_tx_begin(struct xrxe_tp *tp, const struct xrxe_pkt_spec *spec, struct tp_tx *tx)
{
	size_t hdr = xrxe_build_hdr_len(spec), flen = xrxe_build_frame_len(spec), cap = 0;
	unsigned i;
	int err;

	if (!hdr || !flen)
		return -EINVAL;
	memset(&tx->buf, 0, sizeof(tx->buf));
	err = tp->cfg.ops->tx_reserve(tp->cfg.user, (uint32_t)flen, &tx->buf);
	if (err) {
		tp->stats.tx_no_buffer++;
		tp->tx_blocked = true;
		return -ENOBUFS;
	}
	for (i = 0; i < tx->buf.nfrags && i < XRXE_MAX_FRAGS; i++)
		cap += tx->buf.frag[i].len;
	/* The contract (transport.h): the fragments hold at least len bytes
	 * and the first holds every header. A caller breaking it is a bug we
	 * must not turn into a wild write: the frame is handed back empty
	 * (frame_len 0; xrxe_tpi_tx_finish gives tx_submit no fragments, and
	 * the daemon counts it as tx_bad and sends nothing). */
	if (tx->buf.nfrags == 0 || tx->buf.nfrags > XRXE_MAX_FRAGS || cap < flen ||
	    tx->buf.frag[0].len < hdr) {
		tx->hdr_len = tx->frame_len = 0;
		return 0;
	}
	/* xrxe_build_headers only writes hdr bytes at the start of the buffer;
	 * cap is the whole frame so its size check passes for multi-fragment
	 * buffers whose first fragment is smaller than the frame. */
	err = xrxe_build_headers(tx->buf.frag[0].data, flen, spec);
	if (err < 0) {
		tx->hdr_len = tx->frame_len = 0;
		return 0;
	}
	tx->hdr_len = (uint32_t)hdr;
	tx->frame_len = (uint32_t)flen;
	tx->pos = 0;
	return 0;
}

void xrxe_tpi_tx_put(struct tp_tx *tx, const void *src, uint32_t n)
{
	const uint8_t *s = src;
	uint32_t off = tx->hdr_len + tx->pos;
	unsigned i;

	if (!tx->frame_len || n > tx->frame_len - XRXE_ICRC_LEN - off)
		return;
	tx->pos += n;
	for (i = 0; i < tx->buf.nfrags && n; i++) {
		uint32_t flen = tx->buf.frag[i].len, k;

		if (off >= flen) {
			off -= flen;
			continue;
		}
		k = flen - off < n ? flen - off : n;
		memcpy(tx->buf.frag[i].data + off, s, k);
		s += k;
		n -= k;
		off = 0;
	}
}

void xrxe_tpi_tx_piece(void *arg, uint8_t *host, uint32_t n)
{
	xrxe_tpi_tx_put(arg, host, n);
}

void xrxe_tpi_tx_finish(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, struct tp_tx *tx)
{
	uint32_t left = tx->frame_len;
	unsigned i, n = 0;

	if (tx->frame_len) {
		/* Trim the fragments to exactly the frame: the ICRC code takes
		 * the frame length from them. */
		for (i = 0; i < tx->buf.nfrags && left; i++) {
			if (tx->buf.frag[i].len > left)
				tx->buf.frag[i].len = left;
			left -= tx->buf.frag[i].len;
			n = i + 1;
		}
		tx->buf.nfrags = (uint8_t)n;
		tx->buf.len = tx->frame_len;
		xrxe_build_finish_frags(tx->buf.frag, n, XRXE_ETH_HLEN);
	} else {
		/* refused in tx_begin: nothing of the chunk's old contents may
		 * go out */
		tx->buf.len = 0;
		tx->buf.nfrags = 0;
	}
	tp->stats.tx_packets++;
	if (qp) {
		qp->info.tx_packets++;
		qp->info.tx_bytes += tx->pos;
		xrxe_tpi_cc_sent(qp, tx->buf.len); /* CC hook: pacer + byte counter (cc.c) */
	}
	tp->cfg.ops->tx_submit(tp->cfg.user, &tx->buf);
}
