// SPDX-License-Identifier: MIT
/*
 * ibv_create_flow / ibv_destroy_flow for raw packet QPs (docs/verbs-shim.md
 * "Raw packet QPs"). The specs after struct ibv_flow_attr are folded into one
 * rule over the flow key of include/xrxe/steer.h (value and mask); the daemon
 * matches frames against it (src/transport/raw.c) and mirrors it into the
 * XDP program's map. Specs and fields xrxe cannot match on, other attribute
 * types and flags answer EOPNOTSUPP, as a provider without them does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs/shim.h"

struct xrxe_flow {
	struct ibv_flow flow; /* first: the application's pointer */
};

/* value/mask of n bytes into the key at dst (value kept masked) */
static void put(uint8_t *vdst, uint8_t *mdst, const void *val, const void *mask, size_t n)
{
	const uint8_t *v = val, *m = mask;

	for (size_t i = 0; i < n; i++) {
		mdst[i] |= m[i];
		vdst[i] = (uint8_t)((vdst[i] & ~m[i]) | (v[i] & m[i]));
	}
}

static bool zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

#define PUT(field, v, m)                                                                   \
	put((uint8_t *)&r->value.field, (uint8_t *)&r->mask.field, (v), (m), sizeof(r->value.field))

static int spec_fold(const struct ibv_flow_spec *s, struct xrxe_steer_flow *r)
{
	uint8_t proto;

	switch (s->hdr.type) {
	case IBV_FLOW_SPEC_ETH:
		if (s->hdr.size < sizeof(s->eth))
			return EINVAL;
		PUT(dmac, s->eth.val.dst_mac, s->eth.mask.dst_mac);
		PUT(smac, s->eth.val.src_mac, s->eth.mask.src_mac);
		PUT(ethertype, &s->eth.val.ether_type, &s->eth.mask.ether_type);
		PUT(vlan_tci, &s->eth.val.vlan_tag, &s->eth.mask.vlan_tag);
		return 0;
	case IBV_FLOW_SPEC_IPV4:
		if (s->hdr.size < sizeof(s->ipv4))
			return EINVAL;
		put(r->value.src_ip, r->mask.src_ip, &s->ipv4.val.src_ip, &s->ipv4.mask.src_ip, 4);
		put(r->value.dst_ip, r->mask.dst_ip, &s->ipv4.val.dst_ip, &s->ipv4.mask.dst_ip, 4);
		break;
	case IBV_FLOW_SPEC_IPV4_EXT:
		if (s->hdr.size < sizeof(s->ipv4_ext))
			return EINVAL;
		/* TOS, TTL and IP flags are not in the key */
		if (s->ipv4_ext.mask.tos || s->ipv4_ext.mask.ttl || s->ipv4_ext.mask.flags)
			return EOPNOTSUPP;
		put(r->value.src_ip, r->mask.src_ip, &s->ipv4_ext.val.src_ip,
		    &s->ipv4_ext.mask.src_ip, 4);
		put(r->value.dst_ip, r->mask.dst_ip, &s->ipv4_ext.val.dst_ip,
		    &s->ipv4_ext.mask.dst_ip, 4);
		PUT(ip_proto, &s->ipv4_ext.val.proto, &s->ipv4_ext.mask.proto);
		break;
	case IBV_FLOW_SPEC_IPV6:
		if (s->hdr.size < sizeof(s->ipv6))
			return EINVAL;
		if (s->ipv6.mask.flow_label || s->ipv6.mask.traffic_class ||
		    s->ipv6.mask.hop_limit)
			return EOPNOTSUPP;
		PUT(src_ip, s->ipv6.val.src_ip, s->ipv6.mask.src_ip);
		PUT(dst_ip, s->ipv6.val.dst_ip, s->ipv6.mask.dst_ip);
		PUT(ip_proto, &s->ipv6.val.next_hdr, &s->ipv6.mask.next_hdr);
		break;
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP:
		if (s->hdr.size < sizeof(s->tcp_udp))
			return EINVAL;
		/* the spec's type is a match on the IP protocol */
		proto = s->hdr.type == IBV_FLOW_SPEC_TCP ? 6 : 17;
		PUT(ip_proto, &proto, &(uint8_t){ 0xff });
		PUT(sport, &s->tcp_udp.val.src_port, &s->tcp_udp.mask.src_port);
		PUT(dport, &s->tcp_udp.val.dst_port, &s->tcp_udp.mask.dst_port);
		return 0;
	default:
		return EOPNOTSUPP; /* tunnels, inner headers, actions, ... */
	}
	return 0;
}

/* An IP spec without an Ethernet spec naming the EtherType: the version is
 * still part of the match (a NIC matches IPv4 specs on IPv4 frames only). */
static void implied_ethertype(const struct ibv_flow_spec *s, struct xrxe_steer_flow *r)
{
	uint16_t type, all = 0xffff;

	if (s->hdr.type == IBV_FLOW_SPEC_IPV4 || s->hdr.type == IBV_FLOW_SPEC_IPV4_EXT)
		type = htons(0x0800);
	else if (s->hdr.type == IBV_FLOW_SPEC_IPV6)
		type = htons(0x86dd);
	else
		return;
	if (!r->mask.ethertype)
		PUT(ethertype, &type, &all);
}

static struct ibv_flow *flow_create(struct ibv_qp *qp, struct ibv_flow_attr *attr)
{
	struct xrxe_context *ctx = to_xctx(qp->context);
	struct xrxe_ctrl_create_flow req;
	struct xrxe_ctrl_handle rep;
	struct xrxe_steer_flow *r = &req.rule;
	const uint8_t *p = (const uint8_t *)(attr + 1);
	struct xrxe_flow *f;
	int ret;

	if (qp->qp_type != IBV_QPT_RAW_PACKET)
		return xrxe_null_errno(EOPNOTSUPP);
	if (attr->comp_mask || attr->type != IBV_FLOW_ATTR_NORMAL || attr->flags || attr->port != 1)
		return xrxe_null_errno(EOPNOTSUPP);
	memset(&req, 0, sizeof(req));
	req.qp = qp->handle;
	for (unsigned i = 0; i < attr->num_of_specs; i++) {
		const struct ibv_flow_spec *s = (const struct ibv_flow_spec *)p;

		if (s->hdr.size < sizeof(s->hdr) || s->hdr.size > sizeof(*s))
			return xrxe_null_errno(EINVAL);
		ret = spec_fold(s, r);
		if (ret)
			return xrxe_null_errno(ret);
		p += s->hdr.size;
	}
	p = (const uint8_t *)(attr + 1);
	for (unsigned i = 0; i < attr->num_of_specs; i++) {
		const struct ibv_flow_spec *s = (const struct ibv_flow_spec *)p;

		implied_ethertype(s, r);
		p += s->hdr.size;
	}
	if (zero(&r->mask, sizeof(r->mask)))
		return xrxe_null_errno(EOPNOTSUPP); /* match-all (sniffer-like) flows */
	f = calloc(1, sizeof(*f));
	if (!f)
		return xrxe_null_errno(ENOMEM);
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_CREATE_FLOW, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret) {
		free(f);
		/* the table of flows is full: as a provider out of resources */
		return xrxe_null_errno(ret == -ENOSPC ? ENOMEM : -ret);
	}
	f->flow.context = qp->context;
	f->flow.handle = rep.handle;
	return &f->flow;
}

static int flow_destroy(struct ibv_flow *flow)
{
	int ret = xrxe_ctrl_destroy(to_xctx(flow->context), XRXE_CTRL_DESTROY_FLOW, flow->handle);

	if (ret && !xrxe_conn_gone(ret))
		return -ret;
	free(flow);
	return 0;
}

void xrxe_flow_install(struct verbs_context *vctx)
{
	vctx->ibv_create_flow = flow_create;
	vctx->ibv_destroy_flow = flow_destroy;
}
