// SPDX-License-Identifier: MIT
/*
 * Dispatching one epoll batch safely (evsrc.h says why).
 */
#include "daemon/evsrc.h"

#include <stddef.h>

/* The batch being dispatched (the event loop's only thread). */
static struct epoll_event *batch;
static int batch_len;

void xrxe_evsrc_dispatch(struct epoll_event *ev, int n)
{
	batch = ev;
	batch_len = n;
	for (int i = 0; i < n; i++) {
		struct xrxe_evsrc *src = ev[i].data.ptr;

		if (src) /* NULL: forgotten by an earlier callback of this batch */
			src->fn(src, ev[i].events);
	}
	batch = NULL;
	batch_len = 0;
}

void xrxe_evsrc_forget(const struct xrxe_evsrc *src)
{
	for (int i = 0; i < batch_len; i++)
		if (batch[i].data.ptr == src)
			batch[i].data.ptr = NULL;
}
