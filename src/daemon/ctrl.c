// SPDX-License-Identifier: MIT
#include "daemon/ctrl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ctrl_internal.h"
#include "daemon/ctrl_msg.h"
#include "daemon/evsrc.h"
#include "daemon/shm.h"
#include "util/log.h"

/* --- connections --------------------------------------------------------- */

static void conn_set_events(struct conn *c, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = &c->ev };

	epoll_ctl(c->ctrl->cfg.epfd, EPOLL_CTL_MOD, c->ev.fd, &ev);
}

static void conn_unpark(struct conn *c)
{
	if (!c->park_msg)
		return;
	free(c->park_msg);
	c->park_msg = NULL;
	conn_set_events(c, EPOLLIN | EPOLLRDHUP);
}

/* Tear down everything the connection owns, dependents first: QPs (the
 * transport stops them; their peers then run into retry-exceeded), AHs, MRs,
 * CQs, channels, PDs; then the descriptors. One summary line. */
static void conn_close(struct conn *c, const char *why)
{
	/* windows before regions: a region with bound windows refuses to go */
	static const enum obj_type order[] = { OBJ_CM_ID, OBJ_CM_CHANNEL, OBJ_FLOW, OBJ_QP,
					       OBJ_RWQ_IND_TBL, OBJ_WQ, OBJ_SRQ, OBJ_XRCD,
					       OBJ_AH,	  OBJ_MW,	  OBJ_MR, OBJ_CQ,
					       OBJ_CHANNEL, OBJ_PD };
	struct xrxe_ctrl *ctrl = c->ctrl;
	uint32_t destroyed[OBJ_TYPES] = { 0 };
	unsigned leaked = 0;

	c->slabs.closing = true; /* the slabs go with the connection: no hole punching */
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		for (uint32_t i = 0; i < c->nslots; i++) {
			struct obj *o = c->slots[i].obj;
			int err;

			if (!o || o->type != order[k])
				continue;
			err = xrxe_ctrli_destroy_obj(o);
			if (err) {
				/* Only a core bug gets here (everything that could
				 * hold this object is gone): keep its memory rather
				 * than free what the core may still use. */
				xrxe_err("conn %u: %s %#x: destroy failed: %s", c->id,
					 xrxe_ctrli_obj_names[order[k]], o->handle, strerror(-err));
				c->slots[i].obj = NULL;
				leaked++;
				continue;
			}
			destroyed[order[k]]++;
		}
	}
	if (leaked)
		xrxe_err("conn %u: objects leaked at close", c->id);
	xrxe_ctrli_conn_slabs_release(c, leaked);
	/* One line per application (a STATS query or a connection that never
	 * said HELLO: debug only); rate-limited, as anyone can connect. */
	if (c->hello || c->cm_open)
		xrxe_info_rl("conn %u (pid %d uid %u) closed (%s): %u requests; destroyed %u QP, "
			     "%u AH, %u MR, %u CQ, %u channel, %u PD, %u SRQ, %u CM ID, "
			     "%u CM channel%s",
			     c->id, (int)c->pid, (unsigned)c->uid, why, (unsigned)c->requests,
		  destroyed[OBJ_QP], destroyed[OBJ_AH], destroyed[OBJ_MR], destroyed[OBJ_CQ],
		  destroyed[OBJ_CHANNEL], destroyed[OBJ_PD], destroyed[OBJ_SRQ], destroyed[OBJ_CM_ID],
		  destroyed[OBJ_CM_CHANNEL],
		  leaked ? "; SOME LEAKED" : "");

	xrxe_ctrli_conn_ring_free(c, &c->dbring);
	/* c is freed below: events of its socket or doorbell later in this
	 * epoll batch must not reach it (evsrc.h) */
	xrxe_evsrc_forget(&c->ev);
	xrxe_evsrc_forget(&c->db);
	epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_DEL, c->ev.fd, NULL);
	close(c->ev.fd);
	if (c->db.fd >= 0) {
		epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_DEL, c->db.fd, NULL);
		close(c->db.fd);
	}
	if (c->memfd >= 0)
		close(c->memfd);
	if (c->async_fd >= 0)
		close(c->async_fd);
	xrxe_ctrli_odp_close(c); /* its regions went above */
	/* the socket, and the doorbell, memfd and async pipe of HELLO */
	xrxe_ctrli_release(c, XRXE_Q_FDS, c->hello ? 4 : 1);
	xrxe_ctrli_release(c, XRXE_Q_CONNS, 1);
	free(c->park_msg);
	free(c->slots);
	free(c->free_idx);
	if (c->prev)
		c->prev->next = c->next;
	else
		ctrl->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	ctrl->st.conns--;
	ctrl->st.closed++;
	free(c);
}

static void write_async(struct conn *c, enum ibv_event_type type, uint32_t handle)
{
	struct xrxe_async_event ev = { .event_type = (uint32_t)type, .handle = handle };
	struct xrxe_ctrl *ctrl = c->ctrl;

	if (c->async_fd < 0)
		return;
	/* At most PIPE_BUF bytes: atomic, never a torn record. Nonblocking: an
	 * application that does not read its events loses them, nothing else. */
	if (write(c->async_fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev))
		ctrl->st.async_events++;
	else
		ctrl->st.async_drops++;
}

/* --- dispatch ------------------------------------------------------------- */

static void close_fds(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Serve one request. Returns false if the connection was closed. */
static bool handle_msg(struct conn *c, const union msgbuf *m, size_t n, int *fds, unsigned nfds,
		       bool truncated)
{
	struct xrxe_ctrl *ctrl = c->ctrl;
	const struct op_desc *d = NULL;
	struct reply r;
	bool bad = false;
	int ret, err;

	r.u.hdr = (struct xrxe_ctrl_hdr){ 0 };
	r.len = sizeof(struct xrxe_ctrl_hdr);
	r.nfds = 0;
	r.owned = 0;
	c->requests++;
	ctrl->st.requests++;

	if (n < sizeof(struct xrxe_ctrl_hdr) || truncated) {
		ret = -EINVAL;
		bad = true;
		if (n >= sizeof(struct xrxe_ctrl_hdr)) {
			r.u.hdr.op = m->hdr.op;
			r.u.hdr.seq = m->hdr.seq;
		}
		goto reply;
	}
	r.u.hdr.op = m->hdr.op;
	r.u.hdr.seq = m->hdr.seq;
	if (m->hdr.op < XRXE_CTRL_OP_COUNT && xrxe_ctrli_ops[m->hdr.op].fn)
		d = &xrxe_ctrli_ops[m->hdr.op];
	if (!d || m->hdr.length != n || n != d->len || nfds != d->nfds) {
		ret = -EINVAL;
		bad = true;
		goto reply;
	}
	if (!c->hello && !d->before_hello) {
		ret = -EPROTO;
		bad = true;
		goto reply;
	}
	ret = d->fn(c, m, fds, &r);
	if (ret == CTRL_PARKED) {
		close_fds(fds, nfds); /* none: only fd-less ops park */
		nfds = 0;
		if (!c->park_msg) {
			c->park_msg = malloc(sizeof(*c->park_msg));
			if (!c->park_msg) {
				ret = -ENOMEM;
				goto reply;
			}
			memcpy(c->park_msg, m, n);
			c->park_len = n;
			/* Stop reading this connection (requests are answered in
			 * order); a hang-up is still reported. */
			conn_set_events(c, EPOLLRDHUP);
			xrxe_dbg("conn %u: %s waits for neighbour resolution", c->id, d->name);
		}
		c->park_retry = xrxe_ctrli_now_ns() + RESOLVE_RETRY_NS;
		return true;
	}
	if (ret == -EBADF)
		bad = true;

reply:
	close_fds(fds, nfds);
	if (c->park_msg && ret != CTRL_PARKED)
		conn_unpark(c);
	if (ret) {
		/* A failed request's reply is the bare header. */
		for (unsigned i = 0; i < r.nfds; i++)
			if (r.owned & (1u << i))
				close(r.fds[i]);
		r.len = sizeof(struct xrxe_ctrl_hdr);
		r.nfds = 0;
		r.owned = 0;
		ctrl->st.failed_requests++;
		if (bad)
			ctrl->st.bad_requests++;
		xrxe_dbg("conn %u: %s: %s", c->id, d ? d->name : "bad request", strerror(-ret));
	}
	r.u.hdr.status = ret;
	r.u.hdr.length = (uint32_t)r.len;
	err = xrxe_ctrl_send(c->ev.fd, r.u.raw, r.len, r.fds, r.nfds, true);
	for (unsigned i = 0; i < r.nfds; i++)
		if (r.owned & (1u << i))
			close(r.fds[i]);
	if (err) {
		/* The application is not reading its replies (or is gone): the
		 * protocol is strictly request/reply, so this is fatal for it. */
		conn_close(c, err == -EAGAIN ? "not reading replies" : strerror(-err));
		return false;
	}
	return true;
}

static void conn_event(struct xrxe_evsrc *src, uint32_t events)
{
	struct conn *c = (struct conn *)src;
	struct xrxe_ctrl *ctrl = c->ctrl;

	if (c->park_msg) {
		if (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
			conn_close(c, "hang-up");
		return;
	}
	for (int i = 0; i < REQS_PER_WAKE; i++) {
		int fds[XRXE_MAX_CTRL_FDS];
		unsigned nfds;
		bool trunc;
		ssize_t n = xrxe_ctrl_recv(c->ev.fd, ctrl->rx.raw, sizeof(ctrl->rx.raw), fds, &nfds,
					   &trunc);

		if (n == -EAGAIN)
			return;
		if (n <= 0) {
			/* 0: end of stream (a zero-length message is no request
			 * either); the application exited or crashed. */
			close_fds(fds, nfds);
			conn_close(c, n == 0 ? "hang-up" : strerror((int)-n));
			return;
		}
		if (!handle_msg(c, &ctrl->rx, (size_t)n, fds, nfds, trunc))
			return;
		if (c->park_msg)
			return;
	}
}

static void accept_pause(struct xrxe_ctrl *ctrl)
{
	struct epoll_event ev = { .events = 0, .data.ptr = &ctrl->ev };

	epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_MOD, ctrl->ev.fd, &ev);
	ctrl->accept_resume = xrxe_ctrli_now_ns() + ACCEPT_PAUSE_NS;
	ctrl->st.accept_paused++;
}

static void accept_resume(struct xrxe_ctrl *ctrl)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &ctrl->ev };

	ctrl->accept_resume = 0;
	epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_MOD, ctrl->ev.fd, &ev);
}

static void accept_event(struct xrxe_evsrc *src, uint32_t events)
{
	struct xrxe_ctrl *ctrl = (struct xrxe_ctrl *)src;

	(void)events;
	for (;;) {
		struct ucred cred = { 0 };
		socklen_t clen = sizeof(cred);
		struct epoll_event ev;
		struct conn *c;
		int fd;

		fd = accept4(ctrl->ev.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* The pending connection stays queued and the
				 * listening socket readable: retrying now would
				 * spin. Stop listening for a while; connections
				 * closing meanwhile free descriptors. */
				accept_pause(ctrl);
				xrxe_warn_rl("%s: accept: %s: not accepting for %llu ms",
					     ctrl->cfg.ifname, strerror(errno),
					     ACCEPT_PAUSE_NS / 1000000);
			} else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
				xrxe_warn_rl("%s: accept: %s", ctrl->cfg.ifname, strerror(errno));
			}
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			xrxe_warn_rl("%s: SO_PEERCRED: %s", ctrl->cfg.ifname, strerror(errno));
			close(fd);
			continue;
		}
		/* root keeps a quarter of the connection slots (quota.h) */
		if (ctrl->st.conns >= MAX_CONNS) {
			xrxe_warn_rl("%s: refusing pid %d uid %u: %d connections already",
				     ctrl->cfg.ifname, (int)cred.pid, (unsigned)cred.uid, MAX_CONNS);
			ctrl->st.refused++;
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->ctrl = ctrl;
		c->uid = cred.uid;
		if (xrxe_ctrli_charge(c, XRXE_Q_CONNS, 1)) {
			xrxe_warn_rl("%s: refusing pid %d uid %u: over its connection quota",
				     ctrl->cfg.ifname, (int)cred.pid, (unsigned)cred.uid);
			ctrl->st.refused++;
			close(fd);
			free(c);
			continue;
		}
		if (xrxe_ctrli_charge(c, XRXE_Q_FDS, 1)) {
			xrxe_warn_rl("%s: refusing pid %d uid %u: over its descriptor quota",
				     ctrl->cfg.ifname, (int)cred.pid, (unsigned)cred.uid);
			xrxe_ctrli_release(c, XRXE_Q_CONNS, 1);
			ctrl->st.refused++;
			close(fd);
			free(c);
			continue;
		}
		c->hello_deadline = xrxe_ctrli_now_ns() + HELLO_TIMEOUT_NS;
		c->ctrl = ctrl;
		c->ev.fd = fd;
		c->ev.fn = conn_event;
		c->db.fd = -1;
		c->dbring.fd = -1;
		c->memfd = c->async_fd = -1;
		c->id = ++ctrl->next_id;
		c->pid = cred.pid;
		c->uid = cred.uid;
		c->gid = cred.gid;
		if (getrandom(&c->gen_base, sizeof(c->gen_base), GRND_NONBLOCK) < 0)
			c->gen_base = (uint16_t)(c->id * 0x9e37u);
		ev = (struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP, .data.ptr = &c->ev };
		if (epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			xrxe_warn_rl("%s: epoll: %s", ctrl->cfg.ifname, strerror(errno));
			xrxe_ctrli_release(c, XRXE_Q_FDS, 1);
			xrxe_ctrli_release(c, XRXE_Q_CONNS, 1);
			close(fd);
			free(c);
			continue;
		}
		c->next = ctrl->conns;
		if (c->next)
			c->next->prev = c;
		ctrl->conns = c;
		ctrl->st.conns++;
		ctrl->st.accepted++;
		xrxe_dbg("conn %u: pid %d uid %u gid %u connected", c->id, (int)c->pid,
			 (unsigned)c->uid, (unsigned)c->gid);
	}
}

uint64_t xrxe_ctrl_next_deadline(const struct xrxe_ctrl *ctrl)
{
	uint64_t t = UINT64_MAX;

	uint64_t cm = xrxe_ctrli_cm_deadline(ctrl);

	for (const struct conn *c = ctrl->conns; c; c = c->next) {
		if (c->park_msg && c->park_retry < t)
			t = c->park_retry;
		if (!c->hello && !c->cm_open && c->hello_deadline < t)
			t = c->hello_deadline;
	}
	if (ctrl->accept_resume && ctrl->accept_resume < t)
		t = ctrl->accept_resume;
	return cm < t ? cm : t;
}

void xrxe_ctrl_tick(struct xrxe_ctrl *ctrl, uint64_t now)
{
	struct conn *c, *next;

	if (ctrl->accept_resume && ctrl->accept_resume <= now)
		accept_resume(ctrl);
	for (c = ctrl->conns; c; c = next) {
		next = c->next;
		if (!c->hello && !c->cm_open && c->hello_deadline <= now) {
			ctrl->st.hello_timeouts++;
			conn_close(c, "no HELLO in time");
			continue;
		}
		if (!c->park_msg || c->park_retry > now)
			continue;
		/* Run the parked request again; it replies (and unparks) once
		 * resolved or timed out. */
		/* A retry is not a new request. Once answered, requests that
		 * queued up meanwhile are served from the next epoll round
		 * (EPOLLIN is back on). */
		c->requests--;
		ctrl->st.requests--;
		handle_msg(c, c->park_msg, c->park_len, NULL, 0, false);
	}
	xrxe_ctrli_cm_tick(ctrl, now);
}

/* --- transport callbacks -------------------------------------------------- */

void xrxe_ctrl_cq_event(struct xrxe_ctrl *ctrl, void *cq_user)
{
	struct obj_cq *cq = cq_user;
	uint32_t h;

	if (!cq || cq->o.type != OBJ_CQ || !cq->ch)
		return;
	h = cq->o.handle;
	/* 4 bytes, atomic on a pipe; nonblocking: a full pipe drops the event
	 * (the application is not reading its channel). */
	if (write(cq->ch->fd, &h, sizeof(h)) == (ssize_t)sizeof(h))
		ctrl->st.cq_events++;
	else
		ctrl->st.cq_event_drops++;
}

void xrxe_ctrl_async_event(struct xrxe_ctrl *ctrl, enum ibv_event_type type, void *obj_user)
{
	struct obj *o = obj_user;

	(void)ctrl;
	if (!o)
		return;
	write_async(o->conn, type, o->handle);
}

void xrxe_ctrl_port_event(struct xrxe_ctrl *ctrl, enum ibv_event_type type)
{
	for (struct conn *c = ctrl->conns; c; c = c->next)
		write_async(c, type, 1);
}

bool xrxe_ctrl_qp_visible(const struct xrxe_ctrl *ctrl, uint32_t qpn, uid_t uid)
{
	if (uid == 0)
		return true;
	for (const struct conn *c = ctrl->conns; c; c = c->next) {
		if (c->uid != uid || !c->count[OBJ_QP])
			continue;
		for (uint32_t i = 0; i < c->nslots; i++) {
			const struct obj *o = c->slots[i].obj;

			if (o && o->type == OBJ_QP && ((const struct obj_qp *)o)->qpn == qpn)
				return true;
		}
	}
	return false;
}

void xrxe_ctrl_get_stats(const struct xrxe_ctrl *ctrl, struct xrxe_ctrl_stats *st)
{
	*st = ctrl->st;
}

/* --- socket setup ----------------------------------------------------------- */

/* Is a daemon answering on path? Only a refused connection proves the file
 * is a leftover of a crashed one. */
static bool socket_is_live(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, ret;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return true; /* cannot tell: do not touch it */
	ret = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	return ret == 0 || errno == EAGAIN; /* EAGAIN: alive, backlog full */
}

/* Our network namespace, and its marker name for the shims
 * (abi.h XRXE_NETNS_MARKER). Without the marker the shims of this namespace
 * do not list the device: logged, not fatal. */
static void netns_marker(struct xrxe_ctrl *ctrl)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int n;

	if (stat("/proc/self/ns/net", &st) == 0) {
		ctrl->netns_dev = st.st_dev;
		ctrl->netns_ino = st.st_ino;
	}
	n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "%s%s", XRXE_NETNS_MARKER,
		     ctrl->cfg.ifname);
	ctrl->netns_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (ctrl->netns_fd < 0 ||
	    bind(ctrl->netns_fd, (struct sockaddr *)&sun,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) < 0) {
		/* EADDRINUSE: someone in our namespace holds it already, which
		 * serves the shims as well */
		if (errno != EADDRINUSE)
			xrxe_warn("%s: namespace marker: %s (applications here will not list "
				  "the device)", ctrl->cfg.ifname, strerror(errno));
		if (ctrl->netns_fd >= 0)
			close(ctrl->netns_fd);
		ctrl->netns_fd = -1;
	}
}

int xrxe_ctrli_netns_check(struct conn *c)
{
	char path[64];
	struct stat st;

	if (c->uid == 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)c->pid);
	if (stat(path, &st) == 0 && st.st_dev == c->ctrl->netns_dev &&
	    st.st_ino == c->ctrl->netns_ino)
		return 0;
	xrxe_warn_rl("conn %u: pid %d uid %u is in another network namespace: refused", c->id,
		     (int)c->pid, (unsigned)c->uid);
	return -EPERM;
}

int xrxe_ctrl_open(const struct xrxe_ctrl_config *cfg, struct xrxe_ctrl **out)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct epoll_event ev;
	struct xrxe_ctrl *ctrl;
	struct stat st;
	int err;

	ctrl = calloc(1, sizeof(*ctrl));
	if (!ctrl)
		return -ENOMEM;
	ctrl->cfg = *cfg;
	ctrl->ev.fd = ctrl->lock_fd = -1;
	ctrl->netns_fd = -1;
	ctrl->ev.fn = accept_event;
	err = xrxe_ctrl_sock_path(cfg->ifname, ctrl->path, sizeof(ctrl->path));
	if (err) {
		xrxe_err("%s: no control socket path for this name", cfg->ifname);
		goto err_free;
	}
	if (mkdir(XRXE_RUN_DIR, 0755) < 0 && errno != EEXIST) {
		err = -errno;
		xrxe_err("mkdir %s: %s", XRXE_RUN_DIR, strerror(errno));
		goto err_free;
	}

	/* One daemon per interface: the lock settles races between two
	 * starting at once; the socket check below covers the rest. */
	snprintf(ctrl->lock_path, sizeof(ctrl->lock_path), "%s/%s.lock", XRXE_RUN_DIR, cfg->ifname);
	ctrl->lock_fd = open(ctrl->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (ctrl->lock_fd < 0) {
		err = -errno;
		xrxe_err("%s: %s", ctrl->lock_path, strerror(errno));
		goto err_free;
	}
	if (flock(ctrl->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
		xrxe_err("%s: another xrxed serves this interface (%s is locked)", cfg->ifname,
			 ctrl->lock_path);
		goto err_lock;
	}
	if (lstat(ctrl->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			err = -EEXIST;
			xrxe_err("%s exists and is not a socket; not touching it", ctrl->path);
			goto err_lock;
		}
		if (socket_is_live(ctrl->path)) {
			err = -EADDRINUSE;
			xrxe_err("%s: another daemon answers on %s", cfg->ifname, ctrl->path);
			goto err_lock;
		}
		xrxe_info("%s: replacing stale socket %s", cfg->ifname, ctrl->path);
		unlink(ctrl->path);
	}

	ctrl->ev.fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctrl->ev.fd < 0) {
		err = -errno;
		xrxe_err("control socket: %s", strerror(errno));
		goto err_lock;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", ctrl->path);
	if (bind(ctrl->ev.fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = -errno;
		xrxe_err("bind %s: %s", ctrl->path, strerror(errno));
		goto err_sock;
	}
	/* Any user may connect: each connection only reaches its own objects
	 * and memory, and SO_PEERCRED names who it is. */
	if (chmod(ctrl->path, 0666) < 0 || listen(ctrl->ev.fd, 64) < 0) {
		err = -errno;
		xrxe_err("%s: %s", ctrl->path, strerror(errno));
		goto err_unlink;
	}
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &ctrl->ev };
	if (epoll_ctl(cfg->epfd, EPOLL_CTL_ADD, ctrl->ev.fd, &ev) < 0) {
		err = -errno;
		xrxe_err("epoll: %s", strerror(errno));
		goto err_unlink;
	}
	netns_marker(ctrl);
	err = xrxe_ctrli_cm_open(ctrl);
	if (err) {
		xrxe_err("connection manager: %s", strerror(-err));
		epoll_ctl(cfg->epfd, EPOLL_CTL_DEL, ctrl->ev.fd, NULL);
		goto err_unlink;
	}
	*out = ctrl;
	return 0;

err_unlink:
	if (ctrl->netns_fd >= 0)
		close(ctrl->netns_fd);
	unlink(ctrl->path);
err_sock:
	close(ctrl->ev.fd);
err_lock:
	close(ctrl->lock_fd);
err_free:
	free(ctrl);
	return err;
}

void xrxe_ctrl_close(struct xrxe_ctrl *ctrl)
{
	if (!ctrl)
		return;
	/* librdmacm applications hear it before their connections go */
	xrxe_ctrl_cm_device_removal(ctrl);
	while (ctrl->conns)
		conn_close(ctrl->conns, "daemon stopping");
	xrxe_ctrli_cm_close(ctrl);
	epoll_ctl(ctrl->cfg.epfd, EPOLL_CTL_DEL, ctrl->ev.fd, NULL);
	close(ctrl->ev.fd);
	if (ctrl->netns_fd >= 0)
		close(ctrl->netns_fd);
	unlink(ctrl->path);
	/* Remove the lock while still holding it. A daemon that opened the old
	 * file a moment ago may still lock the unlinked inode after us, and a
	 * third the new file, but the third then finds the second's live socket
	 * and refuses (socket_is_live). */
	unlink(ctrl->lock_path);
	close(ctrl->lock_fd);
	free(ctrl);
}

