// SPDX-License-Identifier: MIT
/*
 * Dispatching one epoll batch (src/daemon/evsrc.c): a callback that frees
 * another source of the same batch -- a connection's hang-up closing it
 * while its doorbell's event waits further on -- must not have that source
 * called. Before evsrc.c the loop called ev[i].data.ptr->fn for every entry,
 * and xrxed died with "segfault at 0 ip 0" when the freed connection's
 * memory had become a new one whose doorbell callback was not set yet.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/evsrc.h"

struct fake_conn {
	struct xrxe_evsrc ev; /* its socket */
	struct xrxe_evsrc db; /* its doorbell */
	int calls;
};

static struct fake_conn *victim;

static void count(struct xrxe_evsrc *src, uint32_t events)
{
	struct fake_conn *c = (struct fake_conn *)src;

	(void)events;
	c->calls++;
}

static void doorbell(struct xrxe_evsrc *src, uint32_t events)
{
	(void)src;
	(void)events;
	cr_assert_fail("the doorbell of a closed connection was called");
}

/* The hang-up: close the victim as ctrl.c's conn_close does, then scribble
 * over its memory as a reuse would (fn NULL: a new connection before HELLO). */
static void hang_up(struct xrxe_evsrc *src, uint32_t events)
{
	(void)src;
	(void)events;
	xrxe_evsrc_forget(&victim->ev);
	xrxe_evsrc_forget(&victim->db);
	memset(victim, 0, sizeof(*victim));
}

Test(evsrc, a_source_freed_earlier_in_the_batch_is_not_called)
{
	struct fake_conn *other = calloc(1, sizeof(*other));
	struct xrxe_evsrc closer = { .fn = hang_up, .fd = 3 };
	struct epoll_event ev[4];

	victim = calloc(1, sizeof(*victim));
	victim->ev = (struct xrxe_evsrc){ .fn = count, .fd = 4 };
	victim->db = (struct xrxe_evsrc){ .fn = doorbell, .fd = 5 };
	other->ev = (struct xrxe_evsrc){ .fn = count, .fd = 6 };
	ev[0] = (struct epoll_event){ .events = EPOLLHUP, .data.ptr = &closer };
	ev[1] = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &victim->db };
	ev[2] = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &other->ev };
	ev[3] = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &victim->ev };
	xrxe_evsrc_dispatch(ev, 4);
	cr_assert_eq(other->calls, 1, "the other sources of the batch still run");
	cr_assert_eq(victim->calls, 0);
	free(victim);
	free(other);
}

Test(evsrc, forget_outside_a_dispatch_is_harmless)
{
	struct xrxe_evsrc s = { .fn = count, .fd = 1 };
	struct fake_conn c = { .ev = { .fn = count, .fd = 2 } };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &c.ev };

	xrxe_evsrc_forget(&s);
	xrxe_evsrc_dispatch(&ev, 1);
	cr_assert_eq(c.calls, 1);
	xrxe_evsrc_forget(&c.ev); /* after the batch: nothing to drop */
}
