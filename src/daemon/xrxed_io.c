// SPDX-License-Identifier: MIT
/*
 * xrxed's data path: the core's TX buffers (UMEM chunks), loopback to our
 * own GIDs, RX bursts from the AF_XDP sockets into the core.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ctrl.h"
#include "daemon/devpage.h"
#include "daemon/evsrc.h"
#include "daemon/netdev.h"
#include "daemon/netlink.h"
#include "daemon/steer.h"
#include "daemon/xsk_io.h"
#include "transport/transport.h"
#include "util/log.h"
#include "xrxe/wire.h"

#include "daemon/xrxed.h"
#include "util/log.h"

uint64_t xrxe_daemon_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void xrxe_daemon_print_counters(const struct daemon *d)
{
	const struct daemon_counters *c = &d->ctr;

	xrxe_info("%s: rx_ok %" PRIu64 ", tx %" PRIu64 ", looped back %" PRIu64, d->opts.ifname,
		  c->rx_ok, c->tx_frames, c->loop_frames);
	for (unsigned op = 0; op < 256; op++) {
		const struct xrxe_opcode_info *info = xrxe_opcode_info((uint8_t)op);

		if (c->rx_by_opcode[op])
			xrxe_info("%s:   %-32s %" PRIu64, d->opts.ifname, info ? info->name : "?",
				  c->rx_by_opcode[op]);
	}
	for (unsigned e = 1; e < XRXE_PARSE_ERROR_COUNT; e++) {
		if (c->rx_error[e])
			xrxe_info("%s: rx_drop %s %" PRIu64, d->opts.ifname,
				  xrxe_parse_strerror((enum xrxe_parse_error)e), c->rx_error[e]);
	}
}

/* --- TX: the core's buffers are UMEM chunks of the first queue's socket ----- */

void xrxe_daemon_tx_flush_batch(struct daemon *d)
{
	struct xrxe_xsk *xsk = d->xsk[0];
	int r;

	if (!d->tx_nbatch)
		return;
	r = xrxe_xsk_tx_submit(xsk, d->tx_batch, d->tx_nbatch);
	if (r == -ENOBUFS) {
		/* TX ring full: let the kernel drain it, then try once more. */
		xrxe_xsk_tx_flush(xsk);
		r = xrxe_xsk_tx_submit(xsk, d->tx_batch, d->tx_nbatch);
	}
	if (r == -ENOBUFS) {
		d->ctr.tx_ring_full++;
		return; /* keep the batch for the next pass */
	}
	if (r < 0) {
		/* A frame we did not reserve: a bug; give the chunks back. */
		d->ctr.tx_bad += d->tx_nbatch;
		for (unsigned i = 0; i < d->tx_nbatch; i++)
			xrxe_xsk_tx_abort(xsk, &d->tx_batch[i]);
	} else {
		d->ctr.tx_frames += d->tx_nbatch;
	}
	d->tx_nbatch = 0;
}

static int xrxe_daemon_tx_reserve(void *user, uint32_t len, struct xrxe_tp_txbuf *buf)
{
	struct daemon *d = user;
	struct tx_slot *s = d->tx_free;
	int err;

	if (d->tx_nbatch == TX_BATCH)
		xrxe_daemon_tx_flush_batch(d);
	if (!s || d->tx_nbatch == TX_BATCH)
		return -ENOBUFS;
	err = xrxe_xsk_tx_reserve(d->xsk[0], len, &s->f);
	if (err == -ENOBUFS) {
		/* Chunks come back with TX completions: submit what is batched,
		 * kick and reap, then try again once. */
		xrxe_daemon_tx_flush_batch(d);
		xrxe_xsk_tx_flush(d->xsk[0]);
		err = xrxe_xsk_tx_reserve(d->xsk[0], len, &s->f);
	}
	if (err)
		return err;
	d->tx_free = s->next;
	memcpy(buf->frag, s->f.frag, sizeof(buf->frag));
	buf->nfrags = s->f.nfrags;
	buf->len = len;
	buf->priv = s;
	return 0;
}

/* Copy a frame for our own QPs into the loop queue, for xrxe_tp_rx on the
 * next pass: frames to our own MAC (the AV resolved to one of our GIDs,
 * netlink.c; they never reach the wire) and multicast frames (a copy). */
static void loop_push(struct daemon *d, const struct xrxe_tx_frame *f)
{
	struct loopq *q = &d->loop;
	uint8_t *dst;
	uint32_t off = 0;

	if (q->tail - q->head >= LOOPQ_SLOTS || f->len > XRXE_MAX_FRAME_LEN) {
		/* Like a full wire: the transport retransmits. */
		d->ctr.loop_drops++;
		return;
	}
	dst = q->buf + (size_t)(q->tail % LOOPQ_SLOTS) * XRXE_MAX_FRAME_LEN;
	for (unsigned i = 0; i < f->nfrags; i++) {
		memcpy(dst + off, f->frag[i].data, f->frag[i].len);
		off += f->frag[i].len;
	}
	q->len[q->tail % LOOPQ_SLOTS] = off;
	q->tail++;
}

static void xrxe_daemon_tx_submit(void *user, struct xrxe_tp_txbuf *buf)
{
	struct daemon *d = user;
	struct tx_slot *s = buf->priv;
	struct xrxe_tx_frame f = s->f;
	unsigned used = buf->nfrags;

	s->next = d->tx_free;
	d->tx_free = s;
	/* The core may have trimmed the frame: fewer pieces, shorter last one.
	 * Chunks it did not use go straight back. */
	if (used > f.nfrags || !used) {
		d->ctr.tx_bad++;
		xrxe_xsk_tx_abort(d->xsk[0], &f);
		return;
	}
	if (used < f.nfrags) {
		struct xrxe_tx_frame extra = { .nfrags = (uint8_t)(f.nfrags - used) };

		for (unsigned i = used; i < f.nfrags; i++)
			extra.addr[i - used] = f.addr[i];
		xrxe_xsk_tx_abort(d->xsk[0], &extra);
		f.nfrags = (uint8_t)used;
	}
	f.len = 0;
	for (unsigned i = 0; i < used; i++) {
		f.frag[i].len = buf->frag[i].len;
		f.len += f.frag[i].len;
	}
	if (f.frag[0].len >= XRXE_ETH_ALEN && !memcmp(f.frag[0].data, d->mac, XRXE_ETH_ALEN)) {
		loop_push(d, &f);
		xrxe_xsk_tx_abort(d->xsk[0], &f);
		return;
	}
	/* Multicast (group bit of the destination MAC): to the wire, and a copy
	 * to our own QPs attached to the group, as IP multicast loops back to
	 * local members (and rxe's kernel socket does). */
	if (f.frag[0].len >= XRXE_ETH_ALEN && (f.frag[0].data[0] & 1))
		loop_push(d, &f);
	if (d->tx_nbatch == TX_BATCH)
		xrxe_daemon_tx_flush_batch(d);
	if (d->tx_nbatch == TX_BATCH) {
		/* Cannot happen (reserve refuses when the batch is stuck full),
		 * but never overrun the array. */
		d->ctr.tx_ring_full++;
		xrxe_xsk_tx_abort(d->xsk[0], &f);
		return;
	}
	d->tx_batch[d->tx_nbatch++] = f;
}

static void xrxe_daemon_cq_event(void *user, void *cq_user)
{
	struct daemon *d = user;

	if (d->ctrl)
		xrxe_ctrl_cq_event(d->ctrl, cq_user);
}

static void xrxe_daemon_async_event(void *user, enum ibv_event_type type, void *obj_user)
{
	struct daemon *d = user;

	if (d->ctrl)
		xrxe_ctrl_async_event(d->ctrl, type, obj_user);
}

/* QP1: connection management MADs go to the CM (ctrl_cm.c). */
static void xrxe_daemon_gsi_rx(void *user, const struct xrxe_pkt *pkt)
{
	struct daemon *d = user;

	if (d->ctrl)
		xrxe_ctrl_cm_rx(d->ctrl, pkt, d->now);
}

/* Raw packet QP flows (src/transport/raw.c): mirrored into the XDP
 * program's map, so that matching frames from the wire reach us. Frames
 * looped back from our own raw QPs match without it. */
static void xrxe_daemon_raw_flow_set(void *user, uint32_t slot, const struct xrxe_steer_flow *flow,
				     uint32_t count)
{
	struct daemon *d = user;
	int err = xrxe_steer_flow_set(&d->maps, slot, flow, count);

	if (err)
		xrxe_warn_rl("%s: raw packet QP flows: cannot update the XDP program's map (%s): "
			     "frames from the wire will not match", d->opts.ifname,
			     err == -EOPNOTSUPP ? "the attached program predates them"
						: strerror(-err));
}

/* What the core calls (struct xrxe_tp_ops), given at xrxe_tp_create. */
const struct xrxe_tp_ops xrxe_daemon_tp_ops = {
	.tx_reserve = xrxe_daemon_tx_reserve,
	.tx_submit = xrxe_daemon_tx_submit,
	.cq_event = xrxe_daemon_cq_event,
	.async_event = xrxe_daemon_async_event,
	.gsi_rx = xrxe_daemon_gsi_rx,
	.odp_rw = xrxe_daemon_odp_rw, /* on-demand paging (odp.c) */
	.raw_flow_set = xrxe_daemon_raw_flow_set, /* raw packet QPs (transport/raw.c) */
};

void xrxe_daemon_port_event(void *user, enum ibv_event_type ev)
{
	struct daemon *d = user;

	if (d->ctrl)
		xrxe_ctrl_port_event(d->ctrl, ev);
}

/* --- RX -------------------------------------------------------------------- */

/* The IP ECN bits of a received frame (Ethernet, one optional VLAN tag),
 * or -1 when it is not IP. Every frame on our sockets is RoCEv2 (the XDP
 * program steers nothing else), so counting CE here, before any check of
 * ours, counts what XDP's ecn_ce counts. */
static int frame_ecn(const uint8_t *f, uint32_t len)
{
	uint32_t off = 12;
	uint16_t type;

	if (len < off + 2)
		return -1;
	type = (uint16_t)(f[off] << 8 | f[off + 1]);
	if (type == 0x8100 || type == 0x88a8) {
		off += 4;
		if (len < off + 2)
			return -1;
		type = (uint16_t)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	if (len < off + 2)
		return -1;
	if (type == 0x0800)
		return f[off + 1] & 3;
	if (type == 0x86dd)
		return (f[off + 1] >> 4) & 3;
	return -1;
}

/* A frame that failed to parse as RoCEv2 before its UDP port said it was
 * one: a raw packet QP's flow may want it (the XDP program steers such
 * frames only when a flow matches; transport/raw.c). */
static bool raw_candidate(int err)
{
	return err == XRXE_PARSE_NOT_IP || err == XRXE_PARSE_BAD_IP_VERSION ||
	       err == XRXE_PARSE_IP_OPTIONS || err == XRXE_PARSE_IP_FRAGMENT ||
	       err == XRXE_PARSE_BAD_IP_LENGTH || err == XRXE_PARSE_NOT_UDP ||
	       err == XRXE_PARSE_NOT_ROCEV2 || err == XRXE_PARSE_TRUNCATED;
}

/* Verify one burst and hand the good frames to the core; returns frames seen. */
static void count_rx_lag(struct daemon *d, uint64_t lag_ns)
{
	unsigned b = 0;

	for (uint64_t limit = 10 * NS_PER_US; b < RX_LAG_BUCKETS - 1 && lag_ns > limit; limit *= 10)
		b++;
	d->ctr.rx_lag[b]++;
	if (lag_ns > d->ctr.rx_lag_max_ns)
		d->ctr.rx_lag_max_ns = lag_ns;
}

unsigned xrxe_daemon_poll_queue(struct daemon *d, struct xrxe_xsk *xsk)
{
	struct xrxe_rx_frame frames[RX_BURST];
	unsigned n = xrxe_xsk_rx_burst(xsk, frames, RX_BURST);

	for (unsigned i = 0; i < n; i++) {
		struct xrxe_pkt pkt;
		int err = xrxe_parse_frags(frames[i].frag, frames[i].nfrags, 0, &pkt);

		if (frames[i].nfrags && frame_ecn(frames[i].frag[0].data, frames[i].frag[0].len) == 3)
			d->ctr.ecn_ce_rx++; /* DCQCN: CE as XDP counts it */
		if (err && raw_candidate(err) &&
		    xrxe_tp_raw_rx(d->tp, frames[i].frag, frames[i].nfrags, d->now))
			continue;
		if (err) {
			d->ctr.rx_error[err]++;
			xrxe_dbg("rx drop: %s", xrxe_parse_strerror((enum xrxe_parse_error)err));
			continue;
		}
		d->ctr.rx_ok++;
		d->ctr.rx_by_opcode[pkt.opcode]++;
		pkt.rx_ns = frames[i].rx_ns;
		/* a frame stamped after this pass read the clock: no lag */
		if (pkt.rx_ns)
			count_rx_lag(d, pkt.rx_ns < d->now ? d->now - pkt.rx_ns : 0);
		xrxe_tp_rx(d->tp, &pkt, d->now);
	}
	if (n)
		xrxe_xsk_rx_release(xsk, frames, n);
	return n;
}

/* Frames the core sent to ourselves, back into the core. Only those queued
 * before this call: what it sends in reply waits for the next pass. */
unsigned xrxe_daemon_loop_drain(struct daemon *d)
{
	struct loopq *q = &d->loop;
	uint32_t n = q->tail - q->head;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t slot = q->head % LOOPQ_SLOTS;
		struct xrxe_pkt pkt;
		int err;

		/* We built these frames a moment ago: the ICRC is ours. */
		err = xrxe_parse(q->buf + (size_t)slot * XRXE_MAX_FRAME_LEN, q->len[slot],
				 XRXE_PARSE_SKIP_ICRC, &pkt);
		if (err && raw_candidate(err)) {
			/* a raw packet QP's frame to ourselves (transport/raw.c) */
			struct xrxe_frag f = { q->buf + (size_t)slot * XRXE_MAX_FRAME_LEN,
					       q->len[slot] };

			if (xrxe_tp_raw_rx(d->tp, &f, 1, d->now)) {
				d->ctr.loop_frames++;
				q->head++;
				continue;
			}
		}
		if (err) {
			d->ctr.loop_parse_errors++;
		} else {
			d->ctr.loop_frames++;
			xrxe_tp_rx(d->tp, &pkt, d->now);
		}
		q->head++;
	}
	return n;
}

