// SPDX-License-Identifier: MIT
/*
 * An LD_PRELOAD library for tests/net/rsockets.sh that forces one order of
 * events: every ibv_get_cq_event first waits up to LATE_CQ_EVENT_MS
 * (default 50) for an event to become readable on the channel, then takes
 * it. A completion that would race a waiter's arming of its CQ (a send's,
 * completing while rrecvfrom arms the CQ and looks once more before
 * sleeping) therefore always lands inside that window, so the look takes
 * its event: a library that then sleeps without arming the CQ again hangs
 * until its wake_up_interval, every time instead of once in a while.
 *
 * The shims' librdmacm.so.1 calls ibv_get_cq_event through its PLT, so this
 * definition, loaded first, is the one it gets; the real one is the next.
 */
#include <dlfcn.h>
#include <poll.h>
#include <stdlib.h>

#include <infiniband/verbs.h>

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	static int (*real)(struct ibv_comp_channel *, struct ibv_cq **, void **);
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
	const char *ms = getenv("LATE_CQ_EVENT_MS");

	if (!real)
		real = (int (*)(struct ibv_comp_channel *, struct ibv_cq **, void **))dlsym(
			RTLD_NEXT, "ibv_get_cq_event");
	if (!real)
		abort();
	poll(&pfd, 1, ms ? atoi(ms) : 50);
	return real(channel, cq, cq_context);
}
