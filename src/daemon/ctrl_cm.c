// SPDX-License-Identifier: MIT
/*
 * The connection manager's side of the control socket (abi.h XRXE_CTRL_CM_*,
 * include/xrxe/cm_abi.h): the librdmacm shim's requests, the CM IDs and
 * event channels each connection owns, address resolution through netlink,
 * and QP1 for the CM core (src/cm/) -- what the kernel's ucma and the IB
 * MAD layer do for stock librdmacm.
 *
 * Event channels are SOCK_SEQPACKET sockets of the application's; one event
 * is one message, written without blocking. When the application does not
 * read, events wait in a per-channel queue (XRXE_CM_CHANNEL_BACKLOG) and go
 * out as the socket drains (EPOLLOUT); only past that bound is one dropped,
 * counted, and the channel marked overrun.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "daemon/ctrl_internal.h"
#include "daemon/devpage.h"
#include "daemon/netlink.h"
#include "util/log.h"

/* rdma_resolve_addr(..., 0): the kernel's librdmacm passes what the caller
 * gives; 0 would time out at once, so give ARP a moment. */
#define RESOLVE_DEFAULT_MS 2000
#define RESOLVE_RETRY_NS (5ull * 1000 * 1000)
/* Each attempt costs two netlink round trips (route, neighbour), and a client
 * may leave thousands of IDs waiting for an address nobody answers ARP for,
 * each with a timeout of its choosing. The loop keeps its time for frames and
 * other clients: at most RESOLVE_BATCH attempts per tick, and each ID retries
 * only as often as their number allows (RESOLVE_PER_ID_NS of period per
 * waiting ID: some 5000 attempts a second in all), at least every 5 ms. */
#define RESOLVE_BATCH 16
#define RESOLVE_PER_ID_NS (200ull * 1000)

/* A channel's entry in the daemon's epoll set (EPOLLOUT while events
 * wait). The event loop dispatches a batch of ready fds at a time, so the
 * channel's EPOLLOUT (or the EPOLLHUP of an application that died) can still
 * be in the batch after an earlier entry destroyed the channel -- its
 * connection hanging up first is what a killed process does when its control
 * socket is its newest fd. epoll's data.ptr must outlive the channel: these
 * records are kept in a pool, never freed while the CM runs; a destroyed
 * channel's record goes back with ch NULL, and a late event finds no channel
 * (or, once reused, a channel whose flush is harmless). */
struct chan_src {
	struct xrxe_evsrc ev; /* first: the loop's pointer is this record's */
	struct obj_cm_channel *ch;
	struct chan_src *next; /* in the pool */
};
static struct chan_src *chan_src_pool;

struct obj_cm_channel {
	struct obj o;
	struct chan_src *src;
	uint64_t cookie;
	uint32_t refs; /* IDs using it */
	struct xrxe_cm_event_msg *q; /* queued events, a ring of qcap */
	uint32_t qhead, qlen, qcap;
	bool watching;
};

struct obj_cm_id {
	struct obj o;
	struct xrxe_cm_id *id;
	struct obj_cm_channel *ch;
	/* address resolution waiting for the neighbour (ARP / ND) */
	struct obj_cm_id *rnext, *rprev;
	bool resolving;
	uint64_t resolve_deadline, resolve_retry;
	struct ibv_ah_attr ah;
	struct xrxe_cm_addr src, dst;
};

/* --- event channels -------------------------------------------------------- */

static void channel_watch(struct obj_cm_channel *ch, bool on)
{
	struct xrxe_ctrl *ctrl = ch->o.conn->ctrl;
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = &ch->src->ev };

	if (on == ch->watching)
		return;
	if (epoll_ctl(ctrl->cfg.epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, ch->src->ev.fd, &ev) == 0 ||
	    !on)
		ch->watching = on;
}

/* 0 sent, -EAGAIN full, other -errno: the application closed its end. */
static int channel_write(struct obj_cm_channel *ch, const struct xrxe_cm_event_msg *ev)
{
	if (send(ch->src->ev.fd, ev, sizeof(*ev), MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(*ev))
		return 0;
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ? -EAGAIN : -errno;
}

static void channel_flush(struct obj_cm_channel *ch)
{
	struct xrxe_ctrl *ctrl = ch->o.conn->ctrl;

	while (ch->qlen) {
		int err = channel_write(ch, &ch->q[ch->qhead]);

		if (err == -EAGAIN)
			break;
		if (err)
			ctrl->cm_event_drops++;
		else
			ctrl->cm_events++;
		ch->qhead = (ch->qhead + 1) % ch->qcap;
		ch->qlen--;
	}
	channel_watch(ch, ch->qlen != 0);
}

static void channel_event(struct xrxe_evsrc *src, uint32_t events)
{
	struct chan_src *s = (struct chan_src *)src;

	(void)events;
	if (s->ch) /* else destroyed earlier in this batch */
		channel_flush(s->ch);
}

static struct chan_src *chan_src_get(void)
{
	struct chan_src *s = chan_src_pool;

	if (s)
		chan_src_pool = s->next;
	else if (!(s = calloc(1, sizeof(*s))))
		return NULL;
	s->ev.fn = channel_event;
	s->ev.fd = -1;
	s->next = NULL;
	return s;
}

static void chan_src_put(struct chan_src *s)
{
	s->ch = NULL;
	s->ev.fd = -1;
	s->next = chan_src_pool;
	chan_src_pool = s;
}

static void channel_send(struct obj_cm_channel *ch, const struct xrxe_cm_event_msg *ev)
{
	struct xrxe_ctrl *ctrl = ch->o.conn->ctrl;
	int err;

	if (!ch->qlen) {
		err = channel_write(ch, ev);
		if (!err) {
			ctrl->cm_events++;
			return;
		}
		if (err != -EAGAIN) {
			ctrl->cm_event_drops++;
			return;
		}
	}
	if (ch->qlen == ch->qcap) {
		uint32_t n = ch->qcap ? ch->qcap * 2 : 16;
		struct xrxe_cm_event_msg *q;

		if (ch->qcap >= XRXE_CM_CHANNEL_BACKLOG ||
		    !(q = malloc((size_t)n * sizeof(*q)))) {
			ctrl->cm_event_drops++;
			xrxe_warn_rl("conn %u: CM event channel %#x overrun: event %u dropped",
				  ch->o.conn->id, ch->o.handle, ev->event);
			return;
		}
		for (uint32_t i = 0; i < ch->qlen; i++)
			q[i] = ch->q[(ch->qhead + i) % ch->qcap];
		free(ch->q);
		ch->q = q;
		ch->qhead = 0;
		ch->qcap = n;
	}
	ch->q[(ch->qhead + ch->qlen) % ch->qcap] = *ev;
	ch->qlen++;
	channel_watch(ch, true);
}

/* --- the CM core's callbacks -------------------------------------------------- */

static void cm_send_mad(void *user, const struct xrxe_av *av, const uint8_t *mad)
{
	struct xrxe_ctrl *ctrl = user;

	if (xrxe_tp_gsi_send(ctrl->cfg.tp, av, mad, XRXE_MAD_LEN))
		ctrl->cm_mad_tx_fail++; /* the CM retransmits what needs it */
}

static void cm_event(void *user, void *owner, void *listener, struct xrxe_cm_event_msg *ev)
{
	struct obj_cm_id *o = owner;

	(void)user;
	ev->cookie = o->ch->cookie;
	ev->handle = o->o.handle;
	ev->listen_handle = listener ? ((struct obj_cm_id *)listener)->o.handle : XRXE_NO_HANDLE;
	channel_send(o->ch, ev);
}

static void *cm_new_child(void *user, void *listener, struct xrxe_cm_id *child)
{
	struct obj_cm_id *l = listener, *o;
	int err;

	(void)user;
	o = xrxe_ctrli_obj_new(l->o.conn, OBJ_CM_ID, sizeof(*o), &err);
	if (!o)
		return NULL;
	o->id = child;
	o->ch = l->ch;
	o->ch->refs++;
	return o;
}

static int cm_gid_index(void *user, const union ibv_gid *gid)
{
	struct xrxe_ctrl *ctrl = user;
	union ibv_gid g;

	for (unsigned i = 0; i < XRXE_GID_TABLE_LEN; i++)
		if (!xrxe_devpage_gid(ctrl->cfg.dp, i, &g) && !memcmp(&g, gid, sizeof(g)))
			return (int)i;
	return -1;
}

static uint32_t cm_random(void *user)
{
	uint32_t v = 0;

	(void)user;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)rand();
	return v;
}

/* The CM's decision on selective repeat (src/cm/cma.c, ib_cm.c) for the QP
 * the ID's owner named: only a QP of the same process may be switched (the
 * verbs shim and librdmacm each hold their own connection; SO_PEERCRED
 * identifies the process). */
static int cm_qp_sr(void *user, void *owner, uint32_t qpn, bool on)
{
	struct xrxe_ctrl *ctrl = user;
	struct obj_cm_id *o = owner;
	const struct conn *me = o ? o->o.conn : NULL;

	for (struct conn *c = ctrl->conns; me && c; c = c->next) {
		if (c->pid != me->pid || c->uid != me->uid)
			continue;
		for (uint32_t i = 0; i < c->nslots; i++) {
			const struct obj *obj = c->slots[i].obj;

			if (obj && obj->type == OBJ_QP && ((const struct obj_qp *)obj)->qpn == qpn)
				return xrxe_tp_qp_set_sr(ctrl->cfg.tp, qpn, on);
		}
	}
	return -EPERM;
}

static const struct xrxe_cm_ops cm_ops = {
	.send_mad = cm_send_mad,
	.event = cm_event,
	.new_child = cm_new_child,
	.gid_index = cm_gid_index,
	.random = cm_random,
	.qp_sr = cm_qp_sr,
};

int xrxe_ctrli_cm_open(struct xrxe_ctrl *ctrl)
{
	const struct xrxe_dev_page *p = xrxe_devpage_page(ctrl->cfg.dp);
	struct xrxe_cm_config cfg = {
		.ops = &cm_ops,
		.user = ctrl,
		.node_guid = p->node_guid,
		.max_path_mtu = p->port_attr.active_mtu,
		.ca_ack_delay = p->dev_attr.local_ca_ack_delay,
		.selective_repeat = ctrl->cfg.cm_selective_repeat,
	};

	return xrxe_cm_create(&cfg, &ctrl->cm);
}

void xrxe_ctrli_cm_close(struct xrxe_ctrl *ctrl)
{
	xrxe_cm_destroy(ctrl->cm);
	ctrl->cm = NULL;
	/* every connection is closed: no channel and no batch is left */
	while (chan_src_pool) {
		struct chan_src *s = chan_src_pool;

		chan_src_pool = s->next;
		free(s);
	}
}

/* --- QP1 and time (from the event loop, through ctrl.h) ---------------------- */

void xrxe_ctrl_cm_rx(struct xrxe_ctrl *ctrl, const struct xrxe_pkt *pkt, uint64_t now)
{
	const uint8_t *f = pkt->frag[0].data, *ip = f + pkt->l3_off;
	uint8_t mad[XRXE_MAD_LEN];
	struct xrxe_av av = { .ip_version = pkt->ip_version, .hop_limit = 64 };

	if (!ctrl->cm || xrxe_pkt_copy_payload(pkt, 0, mad, sizeof(mad)))
		return;
	/* the way back: the packet's addresses swapped (the kernel's
	 * ib_init_ah_attr_from_wc for RoCE) */
	xrxe_devpage_mac(ctrl->cfg.dp, av.smac);
	memcpy(av.dmac, f + XRXE_ETH_ALEN, XRXE_ETH_ALEN);
	if (pkt->ip_version == 4) {
		memcpy(&av.daddr.v4, ip + 12, 4);
		memcpy(&av.saddr.v4, ip + 16, 4);
		av.tclass = ip[1] & ~3u;
	} else {
		memcpy(&av.daddr.v6, ip + 8, 16);
		memcpy(&av.saddr.v6, ip + 24, 16);
		av.tclass = (uint8_t)((ip[0] << 4 | ip[1] >> 4) & ~3u);
	}
	xrxe_cm_rx(ctrl->cm, &av, mad, sizeof(mad), now);
}

static void resolve_done(struct xrxe_ctrl *ctrl, struct obj_cm_id *o)
{
	if (!o->resolving)
		return;
	o->resolving = false;
	if (o->rprev)
		o->rprev->rnext = o->rnext;
	else
		ctrl->cm_resolving = o->rnext;
	if (o->rnext)
		o->rnext->rprev = o->rprev;
	o->rnext = o->rprev = NULL;
}

/* One attempt; 0 done (event emitted), -EAGAIN keep waiting. */
static int resolve_try(struct xrxe_ctrl *ctrl, struct obj_cm_id *o, uint64_t now)
{
	struct xrxe_av av;
	int err = xrxe_nl_resolve(ctrl->cfg.nl, &o->ah, now, &av);

	if (err == -EAGAIN) {
		if (now < o->resolve_deadline)
			return -EAGAIN;
		err = -ETIMEDOUT;
	}
	if (!err)
		err = xrxe_cm_addr_resolved(ctrl->cm, o->id, &o->src, &o->dst, &av);
	if (err)
		xrxe_cm_addr_error(ctrl->cm, o->id, err);
	return 0;
}

uint64_t xrxe_ctrli_cm_deadline(const struct xrxe_ctrl *ctrl)
{
	uint64_t t = ctrl->cm ? xrxe_cm_next_deadline(ctrl->cm) : UINT64_MAX;

	for (const struct obj_cm_id *o = ctrl->cm_resolving; o; o = o->rnext)
		if (o->resolve_retry < t)
			t = o->resolve_retry;
	return t;
}

void xrxe_ctrli_cm_tick(struct xrxe_ctrl *ctrl, uint64_t now)
{
	struct obj_cm_id *o, *next;
	uint64_t every = RESOLVE_RETRY_NS, waiting = 0;
	unsigned tried = 0;

	if (!ctrl->cm)
		return;
	for (o = ctrl->cm_resolving; o; o = o->rnext)
		waiting++;
	if (waiting * RESOLVE_PER_ID_NS > every)
		every = waiting * RESOLVE_PER_ID_NS;
	/* IDs left due are tried at the next tick, which is then due at once */
	for (o = ctrl->cm_resolving; o && tried < RESOLVE_BATCH; o = next) {
		next = o->rnext;
		if (o->resolve_retry > now)
			continue;
		tried++;
		if (resolve_try(ctrl, o, now) == -EAGAIN) {
			/* not past the timeout, which the next try reports */
			o->resolve_retry = now + every < o->resolve_deadline ? now + every
									     : o->resolve_deadline;
		} else {
			resolve_done(ctrl, o);
		}
	}
	xrxe_cm_tick(ctrl->cm, now);
}

void xrxe_ctrl_cm_device_removal(struct xrxe_ctrl *ctrl)
{
	if (ctrl->cm)
		xrxe_cm_device_removal(ctrl->cm);
}

/* --- objects ------------------------------------------------------------------ */

int xrxe_ctrli_destroy_cm_obj(struct obj *obj)
{
	struct xrxe_ctrl *ctrl = obj->conn->ctrl;

	if (obj->type == OBJ_CM_ID) {
		struct obj_cm_id *o = (struct obj_cm_id *)obj;

		resolve_done(ctrl, o);
		xrxe_cm_id_destroy(ctrl->cm, o->id, xrxe_ctrli_now_ns());
		o->ch->refs--;
		xrxe_ctrli_obj_free(obj);
		return 0;
	}
	if (obj->type == OBJ_CM_CHANNEL) {
		struct obj_cm_channel *ch = (struct obj_cm_channel *)obj;

		if (ch->refs)
			return -EBUSY;
		channel_watch(ch, false);
		close(ch->src->ev.fd);
		chan_src_put(ch->src);
		free(ch->q);
		xrxe_ctrli_obj_free(obj);
		return 0;
	}
	return -EINVAL;
}

static struct obj_cm_id *id_lookup(struct conn *c, uint32_t handle)
{
	return (struct obj_cm_id *)xrxe_ctrli_obj_lookup(c, handle, OBJ_CM_ID);
}

/* Every CM request but CM_OPEN needs CM_OPEN first. */
#define CM_CHECK(c)                                                                        \
	do {                                                                               \
		if (!(c)->cm_open)                                                         \
			return -EPROTO;                                                    \
	} while (0)

/* The ID a CM request names: every request but CM_OPEN and the channel ones
 * carries its handle right after the header (checked below), and needs
 * CM_OPEN first. */
static int cm_id_of(struct conn *c, const void *req, struct obj_cm_id **o)
{
	const struct xrxe_ctrl_cm_handle_arg *m = req;

	if (!c->cm_open)
		return -EPROTO;
	*o = id_lookup(c, m->handle);
	return *o ? 0 : -EBADF;
}
#define HANDLE_AT(type)                                                                    \
	_Static_assert(offsetof(struct type, handle) ==                                    \
			       offsetof(struct xrxe_ctrl_cm_handle_arg, handle),           \
		       #type ": handle after the header")
HANDLE_AT(xrxe_ctrl_handle);
HANDLE_AT(xrxe_ctrl_cm_bind);
HANDLE_AT(xrxe_ctrl_cm_resolve_addr);
HANDLE_AT(xrxe_ctrl_cm_connect);
HANDLE_AT(xrxe_ctrl_cm_reject);
HANDLE_AT(xrxe_ctrl_cm_set_option);
HANDLE_AT(xrxe_ctrl_cm_mcast);
#undef HANDLE_AT

/* --- requests ---------------------------------------------------------------- */

int xrxe_ctrli_op_cm_open(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_open *m = req;
	struct xrxe_ctrl_cm_open *rep = REPLY(r, struct xrxe_ctrl_cm_open);

	(void)fds;
	if (m->abi_version != XRXE_ABI_VERSION)
		return -EPROTO;
	if (!c->ctrl->cm)
		return -ENODEV;
	if (xrxe_ctrli_netns_check(c))
		return -EPERM;
	c->cm_open = true;
	rep->abi_version = XRXE_ABI_VERSION;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

int xrxe_ctrli_op_cm_create_channel(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_channel *m = req;
	struct xrxe_ctrl_handle *rep = REPLY(r, struct xrxe_ctrl_handle);
	struct obj_cm_channel *ch;
	struct stat st;
	int type = 0, fl, err;
	socklen_t tl = sizeof(type);

	CM_CHECK(c);
	/* the other end of the application's socketpair: anything else could
	 * block the loop or not keep message boundaries */
	if (fstat(fds[0], &st) < 0 || !S_ISSOCK(st.st_mode) ||
	    getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET)
		return -EINVAL;
	fl = fcntl(fds[0], F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fds[0], F_SETFL, fl | O_NONBLOCK) < 0))
		return -errno;
	ch = xrxe_ctrli_obj_new(c, OBJ_CM_CHANNEL, sizeof(*ch), &err);
	if (!ch)
		return err;
	ch->src = chan_src_get();
	if (!ch->src) {
		xrxe_ctrli_obj_free(&ch->o);
		return -ENOMEM;
	}
	ch->src->ch = ch;
	ch->src->ev.fd = fds[0];
	ch->cookie = m->cookie;
	fds[0] = -1;
	rep->handle = ch->o.handle;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

int xrxe_ctrli_op_cm_destroy_channel(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_handle *m = req;
	struct obj *o;

	(void)fds;
	(void)r;
	CM_CHECK(c);
	o = xrxe_ctrli_obj_lookup(c, m->handle, OBJ_CM_CHANNEL);
	if (!o)
		return -EBADF;
	return xrxe_ctrli_destroy_cm_obj(o);
}

int xrxe_ctrli_op_cm_create_id(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_create_id *m = req;
	struct xrxe_ctrl_handle *rep = REPLY(r, struct xrxe_ctrl_handle);
	struct obj_cm_channel *ch;
	struct obj_cm_id *o;
	int err;

	(void)fds;
	CM_CHECK(c);
	ch = (struct obj_cm_channel *)xrxe_ctrli_obj_lookup(c, m->channel, OBJ_CM_CHANNEL);
	if (!ch)
		return -EBADF;
	o = xrxe_ctrli_obj_new(c, OBJ_CM_ID, sizeof(*o), &err);
	if (!o)
		return err;
	err = xrxe_cm_id_create(c->ctrl->cm, m->ps, (enum ibv_qp_type)m->qp_type, o, &o->id);
	if (err) {
		xrxe_ctrli_obj_free(&o->o);
		return err;
	}
	o->ch = ch;
	ch->refs++;
	rep->handle = o->o.handle;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

int xrxe_ctrli_op_cm_destroy_id(struct conn *c, const void *req, int *fds, struct reply *r)
{
	struct obj_cm_id *o;
	int err;

	(void)fds;
	(void)r;
	err = cm_id_of(c, req, &o);
	if (err)
		return err;
	return xrxe_ctrli_destroy_cm_obj(&o->o);
}

static bool addr_is_any(const struct xrxe_cm_addr *a)
{
	static const uint8_t zero[16];

	return !memcmp(a->addr, zero, a->family == AF_INET ? 4 : 16);
}

/* A unicast address of this daemon's interface, or a wildcard. */
static int addr_check_local(struct xrxe_ctrl *ctrl, const struct xrxe_cm_addr *a)
{
	if (a->family != AF_INET && a->family != AF_INET6)
		return -EAFNOSUPPORT;
	if (addr_is_any(a))
		return 0;
	if (a->family == AF_INET)
		return xrxe_devpage_is_local_v4(ctrl->cfg.dp, (const struct in_addr *)a->addr)
			       ? 0
			       : -EADDRNOTAVAIL;
	return xrxe_devpage_is_local_v6(ctrl->cfg.dp, (const struct in6_addr *)a->addr)
		       ? 0
		       : -EADDRNOTAVAIL;
}

static void query_reply(struct obj_cm_id *o, struct reply *r)
{
	struct xrxe_ctrl_cm_query_reply *rep = REPLY(r, struct xrxe_ctrl_cm_query_reply);

	xrxe_cm_query(o->id, &rep->route);
	xrxe_ctrli_reply_len(r, sizeof(*rep));
}

int xrxe_ctrli_op_cm_bind(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_bind *m = req;
	struct obj_cm_id *o;
	int err;

	(void)fds;
	err = cm_id_of(c, req, &o);
	if (err)
		return err;
	err = addr_check_local(c->ctrl, &m->addr);
	if (!err)
		err = xrxe_cm_bind(c->ctrl->cm, o->id, &m->addr);
	if (!err)
		query_reply(o, r);
	return err;
}

static void gid_of(const struct xrxe_cm_addr *a, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (a->family == AF_INET) {
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, a->addr, 4);
	} else {
		memcpy(gid->raw, a->addr, 16);
	}
}

/* The interface's address to reach dst from when the caller named none: the
 * first of dst's family (link-local IPv6 only for a link-local dst). */
static int pick_source(struct xrxe_ctrl *ctrl, const struct xrxe_cm_addr *dst,
		       struct xrxe_cm_addr *src)
{
	bool ll = dst->family == AF_INET6 && dst->addr[0] == 0xfe && (dst->addr[1] & 0xc0) == 0x80;
	union ibv_gid g;

	for (unsigned i = 0; i < XRXE_GID_TABLE_LEN; i++) {
		bool v4, gll;

		if (xrxe_devpage_gid(ctrl->cfg.dp, i, &g))
			continue;
		v4 = xrxe_gid_is_v4(&g);
		gll = g.raw[0] == 0xfe && (g.raw[1] & 0xc0) == 0x80;
		if ((dst->family == AF_INET) != v4 || (!v4 && gll != ll))
			continue;
		memset(src, 0, sizeof(*src));
		src->family = dst->family;
		src->scope_id = ll ? dst->scope_id : 0;
		memcpy(src->addr, v4 ? g.raw + 12 : g.raw, v4 ? 4 : 16);
		return 0;
	}
	return -EADDRNOTAVAIL;
}

int xrxe_ctrli_op_cm_resolve_addr(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_resolve_addr *m = req;
	struct xrxe_ctrl *ctrl = c->ctrl;
	struct xrxe_cm_route route;
	union ibv_gid sgid;
	struct obj_cm_id *o;
	uint64_t now = xrxe_ctrli_now_ns();
	int err, idx;

	(void)fds;
	(void)r;
	err = cm_id_of(c, req, &o);
	if (err)
		return err;
	if (m->dst.family != AF_INET && m->dst.family != AF_INET6)
		return -EAFNOSUPPORT;
	if (addr_is_any(&m->dst))
		return -EINVAL;
	err = xrxe_cm_addr_query(ctrl->cm, o->id);
	if (err)
		return err;
	/* the source: as given, else the address the ID is bound to, else
	 * one of the interface's */
	xrxe_cm_query(o->id, &route);
	if (m->src.family && !addr_is_any(&m->src))
		o->src = m->src;
	else if (route.src.family == m->dst.family && !addr_is_any(&route.src))
		o->src = route.src;
	else if ((err = pick_source(ctrl, &m->dst, &o->src)))
		return err;
	if (o->src.family != m->dst.family)
		return -EAFNOSUPPORT;
	err = addr_check_local(ctrl, &o->src);
	if (err)
		return err;
	o->dst = m->dst;
	gid_of(&o->src, &sgid);
	idx = cm_gid_index(ctrl, &sgid);
	if (idx < 0)
		return -EADDRNOTAVAIL;
	memset(&o->ah, 0, sizeof(o->ah));
	o->ah.is_global = 1;
	gid_of(&o->dst, &o->ah.grh.dgid);
	o->ah.grh.sgid_index = (uint8_t)idx;
	o->ah.grh.hop_limit = 64;
	o->ah.port_num = 1;
	o->resolve_deadline = now + (uint64_t)(m->timeout_ms ? m->timeout_ms : RESOLVE_DEFAULT_MS) *
					    1000000ull;
	/* answered at once; the outcome is ADDR_RESOLVED or ADDR_ERROR */
	if (resolve_try(ctrl, o, now) == -EAGAIN && !o->resolving) {
		o->resolving = true;
		o->resolve_retry = now + RESOLVE_RETRY_NS;
		o->rnext = ctrl->cm_resolving;
		if (o->rnext)
			o->rnext->rprev = o;
		ctrl->cm_resolving = o;
	}
	return 0;
}

int xrxe_ctrli_op_cm_resolve_route(struct conn *c, const void *req, int *fds, struct reply *r)
{
	struct obj_cm_id *o;
	int err = cm_id_of(c, req, &o);

	(void)fds;
	(void)r;
	return err ? err : xrxe_cm_resolve_route(c->ctrl->cm, o->id);
}

int xrxe_ctrli_op_cm_listen(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_handle_arg *m = req;
	struct obj_cm_id *o;
	int err = cm_id_of(c, req, &o);

	(void)fds;
	(void)r;
	return err ? err : xrxe_cm_listen(c->ctrl->cm, o->id, (int)m->arg);
}

int xrxe_ctrli_op_cm_connect(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_connect *m = req;
	struct obj_cm_id *o;
	int err;

	(void)fds;
	(void)r;
	err = cm_id_of(c, req, &o);
	if (err)
		return err;
	return xrxe_cm_connect(c->ctrl->cm, o->id, &m->conn, &m->ece, xrxe_ctrli_now_ns());
}

int xrxe_ctrli_op_cm_accept(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_connect *m = req;
	struct obj_cm_id *o;
	int err;

	(void)fds;
	(void)r;
	err = cm_id_of(c, req, &o);
	if (err)
		return err;
	return xrxe_cm_accept(c->ctrl->cm, o->id, &m->conn, &m->ece, m->qkey, xrxe_ctrli_now_ns());
}

int xrxe_ctrli_op_cm_reject(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_reject *m = req;
	struct obj_cm_id *o;
	int err;

	(void)fds;
	(void)r;
	err = cm_id_of(c, req, &o);
	if (err)
		return err;
	return xrxe_cm_reject(c->ctrl->cm, o->id, m->reason, m->private_data, m->private_data_len,
			      xrxe_ctrli_now_ns());
}

int xrxe_ctrli_op_cm_disconnect(struct conn *c, const void *req, int *fds, struct reply *r)
{
	struct obj_cm_id *o;
	int err = cm_id_of(c, req, &o);

	(void)fds;
	(void)r;
	return err ? err : xrxe_cm_disconnect(c->ctrl->cm, o->id, xrxe_ctrli_now_ns());
}

int xrxe_ctrli_op_cm_establish(struct conn *c, const void *req, int *fds, struct reply *r)
{
	struct obj_cm_id *o;
	int err = cm_id_of(c, req, &o);

	(void)fds;
	(void)r;
	return err ? err : xrxe_cm_establish(c->ctrl->cm, o->id, xrxe_ctrli_now_ns());
}

int xrxe_ctrli_op_cm_notify(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_handle_arg *m = req;
	struct obj_cm_id *o;
	int err = cm_id_of(c, req, &o);

	(void)fds;
	(void)r;
	return err ? err
		   : xrxe_cm_notify(c->ctrl->cm, o->id, (enum ibv_event_type)m->arg,
				    xrxe_ctrli_now_ns());
}

int xrxe_ctrli_op_cm_init_qp_attr(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_handle_arg *m = req;
	struct xrxe_ctrl_cm_qp_attr_reply *rep = REPLY(r, struct xrxe_ctrl_cm_qp_attr_reply);
	struct obj_cm_id *o;
	int mask = 0, err = cm_id_of(c, req, &o);

	(void)fds;
	if (err)
		return err;
	err = xrxe_cm_init_qp_attr(c->ctrl->cm, o->id, (enum ibv_qp_state)m->arg, &rep->attr, &mask);
	if (err)
		return err;
	rep->attr_mask = (uint32_t)mask;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

int xrxe_ctrli_op_cm_set_option(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_set_option *m = req;
	struct obj_cm_id *o;
	int err;

	(void)fds;
	(void)r;
	err = cm_id_of(c, req, &o);
	if (err)
		return err;
	if (m->optlen > sizeof(m->optval))
		return -EINVAL;
	return xrxe_cm_set_option(c->ctrl->cm, o->id, m->level, m->optname, m->optval, m->optlen);
}

int xrxe_ctrli_op_cm_join_mcast(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_mcast *m = req;
	struct obj_cm_id *o;
	int err;

	(void)fds;
	(void)r;
	err = cm_id_of(c, req, &o);
	if (err)
		return err;
	return xrxe_cm_join_mcast(c->ctrl->cm, o->id, &m->addr, m->join_flags, m->mc_cookie);
}

int xrxe_ctrli_op_cm_leave_mcast(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_mcast *m = req;
	struct obj_cm_id *o;
	int err;

	(void)fds;
	(void)r;
	err = cm_id_of(c, req, &o);
	if (err)
		return err;
	return xrxe_cm_leave_mcast(c->ctrl->cm, o->id, &m->addr);
}

int xrxe_ctrli_op_cm_migrate_id(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_cm_handle_arg *m = req;
	struct obj_cm_channel *ch;
	struct obj_cm_id *o;
	int err = cm_id_of(c, req, &o);

	(void)fds;
	(void)r;
	if (err)
		return err;
	ch = (struct obj_cm_channel *)xrxe_ctrli_obj_lookup(c, m->arg, OBJ_CM_CHANNEL);
	if (!ch)
		return -EBADF;
	o->ch->refs--;
	o->ch = ch;
	ch->refs++;
	return 0;
}

int xrxe_ctrli_op_cm_query(struct conn *c, const void *req, int *fds, struct reply *r)
{
	struct obj_cm_id *o;
	int err = cm_id_of(c, req, &o);

	(void)fds;
	if (err)
		return err;
	query_reply(o, r);
	return 0;
}

/* --- `xrxe cm`: IDs and counters ---------------------------------------------- */

struct cm_report {
	FILE *out;
	bool json, first;
	uid_t uid; /* 0: every ID; else only this user's */
};

static void addr_str(const struct xrxe_cm_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "-";

	if (a->family)
		inet_ntop(a->family, a->addr, ip, sizeof(ip));
	snprintf(buf, len, a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, be16toh(a->port));
}

static int report_id(void *arg, const struct xrxe_cm_id_info *in)
{
	struct cm_report *rp = arg;
	const struct obj_cm_id *o = in->owner;
	char src[64], dst[64];
	const char *ps = in->ps == RDMA_PS_TCP ? "tcp" : in->ps == RDMA_PS_UDP ? "udp"
				 : in->ps == RDMA_PS_IB ? "ib" : "ipoib";

	if (rp->uid && (!o || o->o.conn->uid != rp->uid))
		return 0;
	addr_str(&in->src, src, sizeof(src));
	addr_str(&in->dst, dst, sizeof(dst));
	if (rp->json) {
		fprintf(rp->out,
			"%s{\"pid\": %d, \"handle\": %u, \"ps\": \"%s\", \"state\": \"%s\", "
			"\"ib_state\": \"%s\", \"src\": \"%s\", \"dst\": \"%s\", "
			"\"local_comm_id\": %u, \"remote_comm_id\": %u, \"qpn\": %u, "
			"\"remote_qpn\": %u, \"service_id\": \"0x%016llx\", \"backlog\": %d, "
			"\"pending\": %u}",
			rp->first ? "" : ", ", o ? (int)o->o.conn->pid : 0, o ? o->o.handle : 0, ps,
			in->cma_state, in->ib_state, src, dst, in->local_comm_id,
			in->remote_comm_id, in->local_qpn, in->remote_qpn,
			(unsigned long long)in->service_id, in->backlog, in->pending);
	} else {
		fprintf(rp->out, "%-7d %-5s %-14s %-13s %-24s %-24s %08x %08x %6u %6u\n",
			o ? (int)o->o.conn->pid : 0, ps, in->cma_state, in->ib_state, src, dst,
			in->local_comm_id, in->remote_comm_id, in->local_qpn, in->remote_qpn);
	}
	rp->first = false;
	return 0;
}

static void report_counter(void *arg, const char *name, uint64_t v)
{
	struct cm_report *rp = arg;

	if (rp->json)
		fprintf(rp->out, "%s\"%s\": %llu", rp->first ? "" : ", ", name, (unsigned long long)v);
	else
		fprintf(rp->out, "cm.%s %llu\n", name, (unsigned long long)v);
	rp->first = false;
}

void xrxe_ctrl_cm_report(struct xrxe_ctrl *ctrl, FILE *out, bool json, uid_t uid)
{
	struct cm_report rp = { .out = out, .json = json, .first = true, .uid = uid };
	struct xrxe_cm_stats st;

	if (!ctrl->cm)
		return;
	xrxe_cm_get_stats(ctrl->cm, &st);
	if (json)
		fputs("{\"counters\": {", out);
	xrxe_cm_stats_foreach(&st, report_counter, &rp);
	if (json) {
		fprintf(out, ", \"events\": %llu, \"event_drops\": %llu, \"mad_tx_fail\": %llu}, \"ids\": [",
			(unsigned long long)ctrl->cm_events, (unsigned long long)ctrl->cm_event_drops,
			(unsigned long long)ctrl->cm_mad_tx_fail);
	} else {
		fprintf(out, "cm.events %llu\ncm.event_drops %llu\ncm.mad_tx_fail %llu\n",
			(unsigned long long)ctrl->cm_events, (unsigned long long)ctrl->cm_event_drops,
			(unsigned long long)ctrl->cm_mad_tx_fail);
		fprintf(out, "%-7s %-5s %-14s %-13s %-24s %-24s %-8s %-8s %6s %6s\n", "pid", "ps",
			"state", "ib_state", "local", "remote", "comm_id", "remote", "qpn", "rqpn");
	}
	rp.first = true;
	xrxe_cm_id_foreach(ctrl->cm, report_id, &rp);
	if (json)
		fputs("]}\n", out);
}
