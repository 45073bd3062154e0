/* SPDX-License-Identifier: MIT */
/*
 * The device page (abi.h struct xrxe_dev_page): one memfd per daemon that
 * every shim maps read-only. It carries what ibv_query_device, ibv_query_port
 * and ibv_query_gid answer, and the daemon_sleeping flag of the doorbell
 * protocol.
 *
 * Port state and the GID table change at run time (netlink.c feeds address and
 * link changes in); every such write happens inside the seqlock (seq odd while
 * writing), so a reader re-reads until it sees the same even seq twice.
 *
 * GID slots are stable, as in the kernel's GID cache: a removed address leaves
 * its slot empty and a new one takes the first free slot, so a QP's
 * sgid_index keeps meaning the same address while others come and go.
 */
#ifndef XRXE_DAEMON_DEVPAGE_H
#define XRXE_DAEMON_DEVPAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include "xrxe/abi.h"

struct xrxe_devpage;

struct xrxe_devpage_config {
	const char *ifname;
	unsigned ifindex;
	uint8_t mac[6];
	uint32_t netdev_mtu;
	/* Largest IB MTU the I/O layer carries (bytes, 256..4096): the active MTU
	 * never exceeds it, even if the netdev MTU is raised later. */
	uint32_t max_path_mtu;
	/* Limits the transport core was created with. */
	uint32_t max_qp, max_mr, max_cq, max_pd, max_ah, max_srq;
	uint32_t max_mcast_grp, max_mcast_qp_attach;
	uint8_t local_ca_ack_delay;
};

int xrxe_devpage_create(const struct xrxe_devpage_config *cfg, struct xrxe_devpage **out);
void xrxe_devpage_destroy(struct xrxe_devpage *dp);

/* The memfd to pass at HELLO (shims can only map it read-only) and its size. */
int xrxe_devpage_fd(const struct xrxe_devpage *dp);
uint32_t xrxe_devpage_size(const struct xrxe_devpage *dp);
/* The daemon's writable view (daemon_sleeping). */
struct xrxe_dev_page *xrxe_devpage_page(struct xrxe_devpage *dp);

/* IB MTU for a netdev MTU, as rxe: eth_mtu_int_to_enum(mtu - 80), 256 at least
 * (docs/facts/rxe.md §3.1: 1500 -> 1024, 4200 -> 4096, 9000 -> 4096). */
enum ibv_mtu xrxe_devpage_ib_mtu(uint32_t netdev_mtu);
static inline uint32_t xrxe_ib_mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128u << mtu : 0;
}

/* --- Writers (seqlocked) ------------------------------------------------- */

/* Link state and MTU from netlink. Returns true when the port state changed
 * (the caller raises IBV_EVENT_PORT_ACTIVE / PORT_ERR). */
bool xrxe_devpage_set_link(struct xrxe_devpage *dp, bool up, uint32_t netdev_mtu);

/* Add or remove the RoCEv2 GID of an interface address (family AF_INET or
 * AF_INET6, addr 4 or 16 bytes). Add returns the slot (an existing one if the
 * address is there already), -ENOSPC when the table is full, -EINVAL for
 * addresses that are no GID (unspecified, multicast, loopback). Del returns
 * the slot it cleared or -ENOENT. Slot 0 (the MAC's link-local GID) is never
 * touched. */
int xrxe_devpage_gid_add(struct xrxe_devpage *dp, int family, const void *addr);
int xrxe_devpage_gid_del(struct xrxe_devpage *dp, int family, const void *addr);

/* Resynchronisation after a netlink overrun: mark every address slot, re-add
 * what a fresh dump reports (clearing marks), then sweep the rest. Returns the
 * number of slots the sweep cleared. */
void xrxe_devpage_gid_mark_all(struct xrxe_devpage *dp);
int xrxe_devpage_gid_sweep(struct xrxe_devpage *dp);

/* --- Readers (the daemon is the only writer: no seqlock needed) ---------- */

/* GID of a valid slot: 0, or -EINVAL (index out of range or empty slot). */
int xrxe_devpage_gid(const struct xrxe_devpage *dp, unsigned index, union ibv_gid *gid);
/* True if the IPv4 (4 bytes) or IPv6 (16 bytes) address is one of our GIDs:
 * traffic to it is looped back inside the daemon. */
bool xrxe_devpage_is_local_v4(const struct xrxe_devpage *dp, const struct in_addr *a);
bool xrxe_devpage_is_local_v6(const struct xrxe_devpage *dp, const struct in6_addr *a);
bool xrxe_devpage_port_active(const struct xrxe_devpage *dp);
void xrxe_devpage_mac(const struct xrxe_devpage *dp, uint8_t mac[6]);
/* Number of valid GIDs (for logs and tests). */
unsigned xrxe_devpage_gid_count(const struct xrxe_devpage *dp);

/* GID <-> IP (RoCEv2: IPv4 is the IPv4-mapped IPv6 address ::ffff:a.b.c.d). */
void xrxe_gid_from_v4(union ibv_gid *gid, const struct in_addr *a);
bool xrxe_gid_is_v4(const union ibv_gid *gid);

#endif /* XRXE_DAEMON_DEVPAGE_H */
