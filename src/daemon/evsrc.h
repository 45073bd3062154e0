/* SPDX-License-Identifier: MIT */
/*
 * One thing the daemon's event loop watches: epoll's data.ptr points at a
 * struct xrxe_evsrc embedded in the owner's object, so every module (control
 * socket, connections, netlink, doorbells) registers its own fds and gets its
 * own callback without the loop knowing their types.
 */
#ifndef XRXE_DAEMON_EVSRC_H
#define XRXE_DAEMON_EVSRC_H

#include <stdint.h>

struct xrxe_evsrc {
	/* events: the EPOLL* bits epoll reported */
	void (*fn)(struct xrxe_evsrc *src, uint32_t events);
	int fd;
};

#endif /* XRXE_DAEMON_EVSRC_H */
