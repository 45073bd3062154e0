// SPDX-License-Identifier: MIT
#include "daemon/link_speed.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* IB speed and width codes (IBA 14.2.5.6 PortInfo; verbs.h ibv_port_attr). */
enum { IB_SPEED_SDR = 1, IB_SPEED_DDR = 2, IB_SPEED_FDR10 = 8, IB_SPEED_EDR = 32 };
enum { IB_WIDTH_1X = 1, IB_WIDTH_4X = 2 };

uint32_t xrxe_link_speed_mbps(const char *ifname)
{
	struct ethtool_cmd cmd = { .cmd = ETHTOOL_GSET };
	struct ifreq ifr;
	uint32_t speed;
	int fd, rc;

	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	ifr.ifr_data = (void *)&cmd;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	/* ETHTOOL_GSET: the legacy query, answered from the driver's
	 * get_link_ksettings; speed is split over two 16-bit fields. */
	rc = ioctl(fd, SIOCETHTOOL, &ifr);
	close(fd);
	if (rc < 0)
		return 0;
	speed = ethtool_cmd_speed(&cmd);
	return speed == (uint32_t)SPEED_UNKNOWN ? 0 : speed;
}

void xrxe_link_ib_speed(uint32_t mbps, uint8_t *active_speed, uint8_t *active_width)
{
	/* The kernel's table (ib_get_eth_speed, before lanes were known):
	 * an unknown speed counts as 1000 Mb/s. */
	if (mbps == 0 || mbps <= 1000) {
		*active_width = IB_WIDTH_1X, *active_speed = IB_SPEED_SDR;
	} else if (mbps <= 10000) {
		*active_width = IB_WIDTH_1X, *active_speed = IB_SPEED_FDR10;
	} else if (mbps <= 20000) {
		*active_width = IB_WIDTH_4X, *active_speed = IB_SPEED_DDR;
	} else if (mbps <= 25000) {
		*active_width = IB_WIDTH_1X, *active_speed = IB_SPEED_EDR;
	} else if (mbps <= 40000) {
		*active_width = IB_WIDTH_4X, *active_speed = IB_SPEED_FDR10;
	} else {
		*active_width = IB_WIDTH_4X, *active_speed = IB_SPEED_EDR;
	}
}
