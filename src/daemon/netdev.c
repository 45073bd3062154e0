// SPDX-License-Identifier: MIT
#include "daemon/netdev.h"

#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"

/* Run one SIOC* ioctl on ifname; ifr is filled in and returned. */
static int netdev_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int fd, err = 0;

	if (strlen(ifname) >= IFNAMSIZ)
		return -ENODEV;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	strncpy(ifr->ifr_name, ifname, IFNAMSIZ - 1);
	ifr->ifr_name[IFNAMSIZ - 1] = '\0';
	if (ioctl(fd, req, ifr) < 0)
		err = -errno;
	close(fd);
	return err;
}

int xrxe_netdev_rx_queues(const char *ifname, unsigned *nqueues)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr = { .ifr_data = (char *)&ch };
	int err = netdev_ioctl(ifname, SIOCETHTOOL, &ifr);

	if (err == -EOPNOTSUPP) {
		*nqueues = 1; /* a driver without channels has one queue */
		return 0;
	}
	if (err) {
		xrxe_err("%s: %s", ifname, err == -ENODEV ? "no such interface" : strerror(-err));
		return err;
	}
	/* Combined channels carry both an RX and a TX queue. */
	*nqueues = ch.rx_count + ch.combined_count;
	if (*nqueues == 0)
		*nqueues = 1;
	return 0;
}

int xrxe_netdev_mtu(const char *ifname, uint32_t *mtu)
{
	struct ifreq ifr = { 0 };
	int err = netdev_ioctl(ifname, SIOCGIFMTU, &ifr);

	if (err) {
		xrxe_err("%s: %s", ifname, err == -ENODEV ? "no such interface" : strerror(-err));
		return err;
	}
	*mtu = (uint32_t)ifr.ifr_mtu;
	return 0;
}

int xrxe_netdev_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr = { 0 };
	int err = netdev_ioctl(ifname, SIOCGIFHWADDR, &ifr);

	if (err) {
		xrxe_err("%s: %s", ifname, err == -ENODEV ? "no such interface" : strerror(-err));
		return err;
	}
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return 0;
}

int xrxe_netdev_speed(const char *ifname, uint32_t *mbps)
{
	struct ethtool_cmd cmd = { .cmd = ETHTOOL_GSET };
	struct ifreq ifr = { .ifr_data = (char *)&cmd };
	int err = netdev_ioctl(ifname, SIOCETHTOOL, &ifr);
	uint32_t s;

	if (err)
		return err;
	s = ethtool_cmd_speed(&cmd);
	/* SPEED_UNKNOWN (-1), or 0 from drivers that do not say */
	if (s == 0 || s == (uint32_t)SPEED_UNKNOWN)
		return -ENODATA;
	*mbps = s;
	return 0;
}
