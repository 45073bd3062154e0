/* SPDX-License-Identifier: MIT */
/*
 * The CQ of an rsocket's QP with a completion channel of its own (struct
 * rs_cq, rsocket_int.h): one per stream rsocket (rsocket_data.c), one per UD
 * QP of a datagram rsocket (rsocket_dgram.c).
 *
 * The channel is non-blocking: nobody reads it blindly. A thread about to
 * sleep arms the CQ and polls the channel's fd (rs_wait, rpoll); whoever then
 * holds the lock takes the event, if one came, and polls the CQ dry. Events
 * are acknowledged in batches (ibv_ack_cq_events takes the CQ's lock), the
 * rest when the CQ is destroyed, as ibv_destroy_cq requires.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "rdmacm/rsocket_int.h"

/* Taken events acknowledged at once when this many are pending. */
#define RS_CQ_ACK_BATCH 64

int rs_cq_open(struct rs_cq *c, struct ibv_context *verbs, uint32_t cqe, void *cq_context)
{
	int fl;

	c->cc = ibv_create_comp_channel(verbs);
	if (!c->cc)
		return errno ? -errno : -ENOMEM;
	fl = fcntl(c->cc->fd, F_GETFL);
	if (fl < 0 || fcntl(c->cc->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	c->cq = ibv_create_cq(verbs, (int)cqe, cq_context, c->cc, 0);
	if (!c->cq)
		return errno ? -errno : -ENOMEM;
	return 0;
}

void rs_cq_close(struct rs_cq *c)
{
	if (c->cq) {
		if (c->unacked)
			ibv_ack_cq_events(c->cq, c->unacked);
		ibv_destroy_cq(c->cq);
	}
	if (c->cc)
		ibv_destroy_comp_channel(c->cc);
	memset(c, 0, sizeof(*c));
}

bool rs_cq_arm(struct rs_cq *c)
{
	if (!c->cq || c->armed)
		return false;
	ibv_req_notify_cq(c->cq, 0);
	c->armed = true;
	return true;
}

bool rs_cq_take_event(struct rs_cq *c)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!c->armed || ibv_get_cq_event(c->cc, &cq, &ctx))
		return false; /* not armed, or nothing yet (EAGAIN) */
	c->armed = false;
	if (++c->unacked >= RS_CQ_ACK_BATCH) {
		ibv_ack_cq_events(c->cq, c->unacked);
		c->unacked = 0;
	}
	return true;
}
