/* SPDX-License-Identifier: MIT */
/*
 * rdma_getaddrinfo / rdma_freeaddrinfo: getaddrinfo(3) with RDMA hints, as
 * stock's addrinfo.c behaves without an ibacm service (no route records, no
 * connect data): RAI_PASSIVE/RAI_NUMERICHOST become AI_PASSIVE/
 * AI_NUMERICHOST, the QP type picks the socket type and the port space the
 * protocol, and the first answer becomes the source (passive) or destination
 * address. RAI_FAMILY with AF_IB and a numeric host gives a struct
 * sockaddr_ib, as stock does, although the rest of the library then refuses
 * it (no AF_IB: stock answers the same without the kernel's AF_IB support).
 * A lookup failure is getaddrinfo's EAI_* code, returned as stock returns it.
 */
#include "rdmacm/cm.h"

#include <endian.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib.h>

static void to_ai_hints(struct addrinfo *ai, const struct rdma_addrinfo *rai)
{
	memset(ai, 0, sizeof(*ai));
	if (rai->ai_flags & RAI_PASSIVE)
		ai->ai_flags |= AI_PASSIVE;
	if (rai->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (rai->ai_family != AF_IB)
		ai->ai_family = rai->ai_family;
	switch (rai->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}
	switch (rai->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

static int dup_addr(struct sockaddr **dst, socklen_t *dst_len, const void *src, socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return cm_err(ENOMEM);
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

/* An IPv6 address as an AF_IB one: the GID, and the service ID of the port
 * space and port (IBA A3.2.2 IP-based service IDs). */
static int to_sib(int ps, struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src)
{
	const struct sockaddr_in6 *in6 = (const void *)src;
	struct sockaddr_ib *sib;
	uint16_t port;

	if (src->sa_family != AF_INET6)
		return cm_err(EINVAL);
	sib = calloc(1, sizeof(*sib));
	if (!sib)
		return cm_err(ENOMEM);
	port = ntohs(in6->sin6_port);
	sib->sib_family = AF_IB;
	sib->sib_pkey = htons(0xffff);
	sib->sib_flowinfo = in6->sin6_flowinfo;
	memcpy(sib->sib_addr.sib_raw, &in6->sin6_addr, 16);
	sib->sib_sid = htobe64(((uint64_t)ps << 16) + port);
	if (ps)
		sib->sib_sid_mask = htobe64(RDMA_IB_IP_PS_MASK);
	if (port)
		sib->sib_sid_mask |= htobe64(RDMA_IB_IP_PORT_MASK);
	sib->sib_scope_id = in6->sin6_scope_id;
	*dst = (struct sockaddr *)sib;
	*dst_len = sizeof(*sib);
	return 0;
}

static int from_ai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints,
		   const struct addrinfo *ai)
{
	bool ib = (hints->ai_flags & RAI_FAMILY) && hints->ai_family == AF_IB &&
		  (hints->ai_flags & RAI_NUMERICHOST);
	struct sockaddr **addr;
	socklen_t *len;
	char **canon;

	if (hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;
	if (hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;
	if (ai->ai_flags & AI_PASSIVE) {
		rai->ai_flags = RAI_PASSIVE;
		addr = &rai->ai_src_addr;
		len = &rai->ai_src_len;
		canon = &rai->ai_src_canonname;
	} else {
		addr = &rai->ai_dst_addr;
		len = &rai->ai_dst_len;
		canon = &rai->ai_dst_canonname;
	}
	if (ai->ai_canonname)
		*canon = strdup(ai->ai_canonname);
	rai->ai_family = ib ? AF_IB : ai->ai_family;
	if (ib)
		return to_sib(rai->ai_port_space, addr, len, ai->ai_addr);
	return dup_addr(addr, len, ai->ai_addr, ai->ai_addrlen);
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo no_hints;
	const struct rdma_addrinfo *h = hints ? hints : &no_hints;
	struct rdma_addrinfo *rai;
	int ret = 0;

	if ((!node && !service && !hints) || !res)
		return cm_err(EINVAL);
	ret = cm_init();
	if (ret)
		return cm_err(-ret);
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return cm_err(ENOMEM);
	if (node || service) {
		struct addrinfo ai_hints, *ai;

		if (hints)
			to_ai_hints(&ai_hints, hints);
		ret = getaddrinfo(node, service, hints ? &ai_hints : NULL, &ai);
		if (ret) {
			free(rai);
			return ret; /* EAI_*, as stock */
		}
		ret = from_ai(rai, h, ai);
		freeaddrinfo(ai);
	} else {
		rai->ai_flags = h->ai_flags;
		rai->ai_family = h->ai_family;
		rai->ai_qp_type = h->ai_qp_type;
		rai->ai_port_space = h->ai_port_space;
		if (h->ai_dst_len)
			ret = dup_addr(&rai->ai_dst_addr, &rai->ai_dst_len, h->ai_dst_addr,
				       h->ai_dst_len);
	}
	if (!ret && !rai->ai_src_len && h->ai_src_len)
		ret = dup_addr(&rai->ai_src_addr, &rai->ai_src_len, h->ai_src_addr, h->ai_src_len);
	if (ret) {
		rdma_freeaddrinfo(rai);
		return ret;
	}
	*res = rai;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
		res = next;
	}
}
