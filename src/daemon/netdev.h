/* SPDX-License-Identifier: MIT */
/*
 * Facts about a network interface the daemon needs at start-up, asked of the
 * kernel through ioctls on a socket of the current network namespace (sysfs is
 * not trustworthy there: `nsenter --net` keeps the old /sys).
 */
#ifndef XRXE_DAEMON_NETDEV_H
#define XRXE_DAEMON_NETDEV_H

#include <stdint.h>

/* Number of RX queues (ETHTOOL_GCHANNELS; 1 when the driver does not say). */
int xrxe_netdev_rx_queues(const char *ifname, unsigned *nqueues);
/* IP MTU of the interface. */
int xrxe_netdev_mtu(const char *ifname, uint32_t *mtu);
/* Hardware (MAC) address; 6 bytes. */
int xrxe_netdev_mac(const char *ifname, uint8_t mac[6]);
/* Link speed in Mb/s (ETHTOOL_GSET); -ENODATA when the driver does not know
 * (a veth that is down, for one). */
int xrxe_netdev_speed(const char *ifname, uint32_t *mbps);

#endif /* XRXE_DAEMON_NETDEV_H */
