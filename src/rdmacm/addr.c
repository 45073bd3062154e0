/* SPDX-License-Identifier: MIT */
/*
 * Socket addresses: the conversions between struct sockaddr_in/_in6 and the
 * fixed struct xrxe_cm_addr of the daemon ABI, RoCEv2 GIDs of IP addresses,
 * and the two questions the kernel's rdma_cm answers from the IP stack: which
 * source address the routing table picks towards a destination, and whether
 * an address is local at all. Both are asked of the kernel through ordinary
 * UDP sockets in the caller's network namespace, as the kernel's cma does
 * with its own routing lookups.
 */
#include "rdmacm/cm.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

socklen_t cm_sa_len(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

bool cm_sa_is_any(const struct sockaddr *sa)
{
	/* The kernel's cma_zero_addr: all of 0.0.0.0/8, not just INADDR_ANY. */
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 0;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

bool cm_sa_is_wild(const struct sockaddr *sa)
{
	return cm_sa_is_any(sa) || cm_sa_is_loopback(sa);
}

void cm_sa_to_wildcard(struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		((struct sockaddr_in *)ss)->sin_addr.s_addr = htonl(INADDR_ANY);
	} else if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_addr = in6addr_any;
		in6->sin6_scope_id = 0;
		in6->sin6_flowinfo = 0;
	}
}

uint16_t cm_sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	return 0;
}

void cm_sa_set_port(struct sockaddr *sa, uint16_t port_be)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = port_be;
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = port_be;
}

void cm_sa_gid(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		/* ::ffff:a.b.c.d, the RoCEv2 GID of an IPv4 address */
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

int cm_addr_from_sa(struct xrxe_cm_addr *a, const struct sockaddr *sa)
{
	memset(a, 0, sizeof(*a));
	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		a->family = AF_INET;
		a->port = in->sin_port;
		memcpy(a->addr, &in->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		a->family = AF_INET6;
		a->port = in6->sin6_port;
		a->scope_id = in6->sin6_scope_id;
		memcpy(a->addr, &in6->sin6_addr, 16);
	} else {
		return -EINVAL;
	}
	return 0;
}

int cm_addr_to_sa(const struct xrxe_cm_addr *a, struct sockaddr_storage *ss)
{
	if (a->family == AF_INET) {
		struct sockaddr_in *in = (void *)ss;

		memset(ss, 0, sizeof(*ss));
		in->sin_family = AF_INET;
		in->sin_port = a->port;
		memcpy(&in->sin_addr, a->addr, 4);
	} else if (a->family == AF_INET6) {
		struct sockaddr_in6 *in6 = (void *)ss;

		memset(ss, 0, sizeof(*ss));
		in6->sin6_family = AF_INET6;
		in6->sin6_port = a->port;
		in6->sin6_scope_id = a->scope_id;
		memcpy(&in6->sin6_addr, a->addr, 16);
	} else {
		return -EINVAL;
	}
	return 0;
}

int cm_route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	struct sockaddr_storage to;
	socklen_t len = cm_sa_len(dst), slen = sizeof(*src);
	int fd, ret = 0;

	if (!len)
		return -EINVAL;
	/* connect() on a UDP socket sends nothing: it only runs the route
	 * lookup and fixes the source address, which getsockname() reports. */
	memcpy(&to, dst, len);
	if (!cm_sa_port((struct sockaddr *)&to))
		cm_sa_set_port((struct sockaddr *)&to, htons(4791));
	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&to, len) < 0 ||
	    getsockname(fd, (struct sockaddr *)src, &slen) < 0)
		ret = -errno;
	close(fd);
	if (ret)
		return ret == -ENETUNREACH || ret == -EHOSTUNREACH ? ret : -EADDRNOTAVAIL;
	cm_sa_set_port((struct sockaddr *)src, 0);
	return 0;
}

bool cm_sa_is_local(const struct sockaddr *sa)
{
	struct sockaddr_storage a;
	socklen_t len = cm_sa_len(sa);
	bool local;
	int fd;

	if (!len)
		return false;
	memcpy(&a, sa, len);
	cm_sa_set_port((struct sockaddr *)&a, 0);
	fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return true; /* cannot tell: do not claim the address is foreign */
	/* bind() refuses an address no interface holds with EADDRNOTAVAIL. */
	local = bind(fd, (struct sockaddr *)&a, len) == 0 || errno != EADDRNOTAVAIL;
	close(fd);
	return local;
}

bool cm_sa_is_loopback(const struct sockaddr *sa)
{
	/* The kernel's cma_loopback_addr: 127.0.0.0/8 and ::1 (not
	 * ::ffff:127.0.0.1, which it routes like any IPv6 address). */
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}
