/* SPDX-License-Identifier: MIT */
/*
 * One thing the daemon's event loop watches: epoll's data.ptr points at a
 * struct xrxe_evsrc embedded in the owner's object, so every module (control
 * socket, connections, netlink, doorbells) registers its own fds and gets its
 * own callback without the loop knowing their types.
 *
 * One epoll_wait returns a batch, and a callback may free the object of a
 * source further on in that batch (a connection's hang-up closes it, and its
 * doorbell's event may come next; the memory may even be a new connection's
 * by then). So the loop dispatches through xrxe_evsrc_dispatch, and an owner
 * calls xrxe_evsrc_forget before it frees a source: its pending events in the
 * current batch are dropped instead of calling into freed memory.
 */
#ifndef XRXE_DAEMON_EVSRC_H
#define XRXE_DAEMON_EVSRC_H

#include <stdint.h>
#include <sys/epoll.h>

struct xrxe_evsrc {
	/* events: the EPOLL* bits epoll reported */
	void (*fn)(struct xrxe_evsrc *src, uint32_t events);
	int fd;
};

/* Call every source of the batch ev[0..n) that is still there. Not
 * reentrant (one event loop thread). */
void xrxe_evsrc_dispatch(struct epoll_event *ev, int n);
/* src is about to be freed: drop its events from the batch being dispatched
 * (a no-op outside a dispatch). */
void xrxe_evsrc_forget(const struct xrxe_evsrc *src);

#endif /* XRXE_DAEMON_EVSRC_H */
