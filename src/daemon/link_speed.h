/* SPDX-License-Identifier: MIT */
/*
 * The port's speed and width from the netdev's link speed, as the kernel
 * reports them for a RoCE port (drivers/infiniband/core/verbs.c
 * ib_get_eth_speed(), which rxe's query_port uses): ethtool's speed mapped to
 * an IB lane speed and width whose product is at least the link speed.
 * UCX and Open MPI derive their bandwidth model from these two fields.
 */
#ifndef XRXE_DAEMON_LINK_SPEED_H
#define XRXE_DAEMON_LINK_SPEED_H

#include <stdint.h>

/* The netdev's link speed in Mb/s (ethtool), or 0 when it reports none
 * (down, unknown, no ethtool support). Works in the caller's network
 * namespace, whatever /sys shows. */
uint32_t xrxe_link_speed_mbps(const char *ifname);

/* ibv_port_attr active_speed and active_width for a link speed in Mb/s
 * (0 = unknown: 1X SDR, as the kernel's default of SPEED_1000). */
void xrxe_link_ib_speed(uint32_t mbps, uint8_t *active_speed, uint8_t *active_width);

#endif /* XRXE_DAEMON_LINK_SPEED_H */
