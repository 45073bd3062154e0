/* SPDX-License-Identifier: MIT */
/*
 * Address handles (UD). The daemon resolves the address vector (GID -> IP,
 * route, neighbour MAC) and returns a handle that UD WQEs carry.
 *
 * ibv_init_ah_from_wc builds the reply address from a received datagram's
 * 40-byte GRH buffer. On RoCEv2 that buffer holds either an IPv6 header (the
 * GRH proper) or, for IPv4, 20 undefined bytes followed by the IPv4 header
 * (IBA A17.4.5.2), so the IP version decides how to read it.
 */
#include "verbs/shim.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

struct ibv_ah *xrxe_create_ah_common(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct xrxe_context *ctx = to_xctx(pd->context);
	struct xrxe_ctrl_create_ah req;
	struct xrxe_ctrl_create_ah_reply rep;
	struct xrxe_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return xrxe_null_errno(ENOMEM);
	memset(&req, 0, sizeof(req));
	req.pd = pd->handle;
	req.attr = *attr;
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_CREATE_AH, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret) {
		free(ah);
		return xrxe_null_errno(-ret);
	}
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	ah->ah.handle = rep.handle;
	ah->ah_num = rep.ah_num;
	return &ah->ah;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	return xrxe_create_ah_common(pd, attr);
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	int ret = xrxe_ctrl_destroy(to_xctx(ah->context), XRXE_CTRL_DESTROY_AH, ah->handle);

	if (ret)
		return -ret;
	free(xrxe_container_of(ah, struct xrxe_ah, ah));
	return 0;
}

/* The 20-byte IPv4 header at offset 20 of the GRH buffer, if that is what
 * it holds: version 4, no options, and a valid header checksum. */
static const uint8_t *grh_ipv4(const struct ibv_grh *grh)
{
	const uint8_t *ip = (const uint8_t *)grh + 20;
	uint32_t sum = 0;

	if (ip[0] != 0x45)
		return NULL;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff ? ip : NULL;
}

static void v4_mapped(union ibv_gid *g, const uint8_t *addr)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	memcpy(&g->raw[12], addr, 4);
}

int xrxe_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, const struct ibv_wc *wc,
			 const struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	union ibv_gid local;
	const uint8_t *ip4;
	int idx;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;

	ah_attr->is_global = 1;
	ip4 = grh_ipv4(grh);
	if (ip4) {
		/* reply to the sender: its source is our destination */
		v4_mapped(&ah_attr->grh.dgid, ip4 + 12);
		v4_mapped(&local, ip4 + 16);
		ah_attr->grh.traffic_class = ip4[1];
	} else {
		uint32_t vtf = be32toh(grh->version_tclass_flow);

		ah_attr->grh.dgid = grh->sgid;
		local = grh->dgid;
		ah_attr->grh.flow_label = vtf & 0xfffff;
		ah_attr->grh.traffic_class = (uint8_t)(vtf >> 20);
	}
	ah_attr->grh.hop_limit = 0xff;
	idx = xrxe_find_gid(context, port_num, &local);
	if (idx < 0) {
		errno = ENOENT; /* the datagram was not sent to one of our GIDs */
		return -1;
	}
	ah_attr->grh.sgid_index = (uint8_t)idx;
	return 0;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	return xrxe_init_ah_from_wc(context, port_num, wc, grh, ah_attr);
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (xrxe_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return xrxe_create_ah_common(pd, &attr);
}
