/* SPDX-License-Identifier: MIT */
/*
 * rtnetlink (libmnl) for the daemon: keeps the device page's port state and
 * GID table in step with the interface (link up/down, MTU, addresses added
 * and removed), and resolves address vectors the way rxe does for a QP or an
 * AH: destination GID -> IP, source IP from the sgid_index, next hop from the
 * kernel's routing table (RTM_GETROUTE), its MAC from the neighbour table
 * (RTM_GETNEIGH), triggering ARP/ND when the neighbour is unknown.
 *
 * Two sockets: one subscribed to RTMGRP_LINK | RTMGRP_IPV4_IFADDR |
 * RTMGRP_IPV6_IFADDR that the event loop watches (nonblocking), and one for
 * requests, answered by the kernel synchronously (microseconds; a receive
 * timeout bounds a misbehaving kernel).
 */
#ifndef XRXE_DAEMON_NETLINK_H
#define XRXE_DAEMON_NETLINK_H

#include <stdint.h>

#include <infiniband/verbs.h>

#include "daemon/devpage.h"
#include "daemon/evsrc.h"
#include "transport/transport.h"

struct xrxe_nl;

struct xrxe_nl_config {
	const char *ifname;
	unsigned ifindex;
	struct xrxe_devpage *dp;
	/* The port went up or down (IBV_EVENT_PORT_ACTIVE / IBV_EVENT_PORT_ERR)
	 * or the GID table changed (IBV_EVENT_GID_CHANGE). May be NULL. */
	void (*port_event)(void *user, enum ibv_event_type ev);
	void *user;
};

/* Subscribe, then read the link and dump the addresses into the device page
 * (IPv4 first, then IPv6: rxe's order). 0 or -errno (logged). */
int xrxe_nl_open(const struct xrxe_nl_config *cfg, struct xrxe_nl **out);
void xrxe_nl_close(struct xrxe_nl *nl);

/* The subscription socket, for the event loop (EPOLLIN: call evsrc->fn). */
struct xrxe_evsrc *xrxe_nl_evsrc(struct xrxe_nl *nl);

/*
 * Resolve an address handle attribute (RoCEv2: is_global, GRH) into the
 * address vector the transport puts on the wire. now_ns paces neighbour
 * probes.
 *   0             resolved (*av complete); a destination that is one of our
 *                 own GIDs resolves to our MAC and is looped back by the daemon
 *   -EAGAIN       the neighbour is unknown or incomplete: resolution has been
 *                 triggered, call again (the caller bounds the wait)
 *   -EINVAL       no GRH, bad sgid_index, empty slot, IPv4/IPv6 mismatch
 *   -ENETUNREACH  no unicast route through our interface
 *   -EIO          netlink failed
 */
int xrxe_nl_resolve(struct xrxe_nl *nl, const struct ibv_ah_attr *ah, uint64_t now_ns,
		    struct xrxe_av *av);

/* Counters for `xrxe stats`. */
struct xrxe_nl_stats {
	uint64_t events, resyncs, resolves, resolve_again, neigh_probes;
};
/* Join (or leave) the IP multicast group of a multicast GID (IPv4-mapped or
 * IPv6) on the interface: 0 or -errno (IPv4 allows IGMP_MAX_MEMBERSHIPS,
 * net.ipv4.igmp_max_memberships = 20 by default, groups per socket). */
int xrxe_nl_mcast(struct xrxe_nl *nl, const union ibv_gid *gid, bool join);
void xrxe_nl_get_stats(const struct xrxe_nl *nl, struct xrxe_nl_stats *st);

#endif /* XRXE_DAEMON_NETLINK_H */
