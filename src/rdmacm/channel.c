/* SPDX-License-Identifier: MIT */
/*
 * Event channels (cm_abi.h, "Event channels"): a SOCK_SEQPACKET socketpair.
 * channel->fd is the application's end, pollable and blocking or not as the
 * application sets it, exactly like stock's /dev/infiniband/rdma_cm fd. The
 * other end is handed to each daemon the channel is first used with
 * (CM_CREATE_CHANNEL), tagged with a cookie naming that (channel, daemon)
 * pair: the daemon writes one struct xrxe_cm_event_msg per event.
 *
 * The library keeps its own copy of the other end. It can then register the
 * channel with a second daemon later, and queue events of its own behind the
 * daemons' (cookie 0): DEVICE_REMOVAL when a daemon dies without saying so.
 * The price is that a channel never reads end of file, so the daemons'
 * control connections are watched instead: a blocking rdma_get_cm_event
 * polls them beside the channel, a non-blocking one looks at them first.
 */
#include "rdmacm/cm.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Cookie 0 is the library's own; daemons get 1, 2, ... */
static _Atomic uint64_t next_cookie = 1;

/* Devices a channel can be registered with at once (the poll set). */
#define CM_CHANNEL_MAX_DEVS 32

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cm_channel *ch;
	int sv[2], ret;

	ret = cm_init();
	if (ret) {
		errno = -ret;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ch->wake_fd < 0) {
		free(ch);
		return NULL; /* errno: EMFILE, ENFILE, ENOMEM */
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		close(ch->wake_fd);
		free(ch);
		return NULL;
	}
	ch->ch.fd = sv[0];
	ch->peer_fd = sv[1];
	pthread_mutex_init(&ch->lock, NULL);
	return &ch->ch;
}

static void channel_free(struct cm_channel *ch)
{
	close(ch->peer_fd);
	close(ch->wake_fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cm_channel *ch;
	struct cm_reg *r, *next;
	bool busy;

	if (!channel)
		return;
	ch = to_cm_channel(channel);
	pthread_mutex_lock(&ch->lock);
	r = ch->regs;
	ch->regs = NULL;
	ch->closed = true;
	busy = ch->readers > 0;
	pthread_mutex_unlock(&ch->lock);
	for (; r; r = next) {
		struct xrxe_ctrl_handle req = { .handle = r->handle };
		int ret;

		next = r->next;
		/* -EBUSY: IDs still use it (the application broke the rule
		 * "destroy IDs first"); the daemon then keeps its end until the
		 * connection closes, and nobody reads it. */
		ret = cm_call(r->dev, XRXE_CTRL_CM_DESTROY_CHANNEL, &req, sizeof(req), NULL, 0,
			      NULL, 0);
		if (ret && ret != -ENODEV)
			cm_dbg("destroy channel on %s: %s", r->dev->name, strerror(-ret));
		free(r);
	}
	/* The application's descriptor goes now, as with stock's close(). */
	close(ch->ch.fd);
	if (!busy)
		channel_free(ch);
}

/* rdma_get_cm_event enters and leaves the channel; the last reader out of a
 * destroyed channel frees it. */
static bool read_enter(struct cm_channel *ch)
{
	bool ok;

	pthread_mutex_lock(&ch->lock);
	ok = !ch->closed;
	ch->readers += ok;
	pthread_mutex_unlock(&ch->lock);
	return ok;
}

static void read_leave(struct cm_channel *ch)
{
	bool last;

	pthread_mutex_lock(&ch->lock);
	last = --ch->readers == 0 && ch->closed;
	pthread_mutex_unlock(&ch->lock);
	if (last)
		channel_free(ch);
}

static bool channel_closed(struct cm_channel *ch)
{
	bool closed;

	pthread_mutex_lock(&ch->lock);
	closed = ch->closed;
	pthread_mutex_unlock(&ch->lock);
	return closed;
}

int cm_channel_reg(struct cm_channel *ch, struct cm_dev *dev, struct cm_reg **out)
{
	struct xrxe_ctrl_cm_channel req = { 0 };
	struct xrxe_ctrl_handle rep;
	struct cm_reg *r;
	int ret = 0;

	/* Held across the request: two threads must not register the same
	 * channel with the same daemon twice. */
	pthread_mutex_lock(&ch->lock);
	for (r = ch->regs; r; r = r->next)
		if (r->dev == dev)
			goto out;
	r = calloc(1, sizeof(*r));
	if (!r) {
		ret = -ENOMEM;
		goto out;
	}
	req.cookie = atomic_fetch_add(&next_cookie, 1);
	ret = cm_call(dev, XRXE_CTRL_CM_CREATE_CHANNEL, &req, sizeof(req), &ch->peer_fd, 1, &rep,
		      sizeof(rep));
	if (ret) {
		free(r);
		r = NULL;
		goto out;
	}
	r->dev = dev;
	r->handle = rep.handle;
	r->cookie = req.cookie;
	r->next = ch->regs;
	ch->regs = r;
	if (ch->readers) {
		uint64_t one = 1;
		ssize_t w = write(ch->wake_fd, &one, sizeof(one));

		(void)w; /* EAGAIN: the counter is full, readers will wake anyway */
	}
out:
	pthread_mutex_unlock(&ch->lock);
	*out = r;
	return ret;
}

struct cm_reg *cm_channel_find_reg(struct cm_channel *ch, uint64_t cookie)
{
	struct cm_reg *r;

	pthread_mutex_lock(&ch->lock);
	for (r = ch->regs; r; r = r->next)
		if (r->cookie == cookie)
			break;
	pthread_mutex_unlock(&ch->lock);
	return r;
}

void cm_channel_inject(struct cm_channel *ch, uint32_t lid, enum rdma_cm_event_type event,
		       int status)
{
	struct xrxe_cm_event_msg m = {
		.cookie = 0,
		.handle = lid,
		.listen_handle = XRXE_NO_HANDLE,
		.event = (uint32_t)event,
		.status = status,
	};

	if (send(ch->peer_fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		cm_warn("could not queue %s on an event channel: %s", rdma_event_str(event),
			strerror(errno));
}

/* The live daemons of the channel (up to max). */
static int channel_devs(struct cm_channel *ch, struct cm_dev **v, int max)
{
	int n = 0;

	pthread_mutex_lock(&ch->lock);
	for (struct cm_reg *r = ch->regs; r && n < max; r = r->next)
		if (!atomic_load(&r->dev->dead))
			v[n++] = r->dev;
	pthread_mutex_unlock(&ch->lock);
	return n;
}

static int channel_read(struct cm_channel *ch, struct xrxe_cm_event_msg *msg)
{
	union {
		struct xrxe_cm_event_msg m;
		char over[sizeof(struct xrxe_cm_event_msg) + 1]; /* to see a longer one */
	} buf;
	struct cm_dev *dv[CM_CHANNEL_MAX_DEVS];
	struct pollfd pfd[CM_CHANNEL_MAX_DEVS + 2];
	ssize_t r;
	bool blocking = false;

	for (;;) {
		int fl, n;

		/* Destroyed under us: the descriptor number may be another
		 * file's by now. A blocking reader then waits for ever, as a
		 * read() on stock's fd does when another thread closes it (the
		 * file lives on under the read, and no event comes): rping's
		 * cm_thread sits in rdma_get_cm_event while main destroys the
		 * channel and returns 0, and with an error it would exit 255
		 * first. The thread keeps the channel (read_enter). */
		if (channel_closed(ch)) {
			if (!blocking)
				return -EBADF;
			for (;;)
				pause();
		}
		fl = fcntl(ch->ch.fd, F_GETFL);
		n = channel_devs(ch, dv, CM_CHANNEL_MAX_DEVS);
		if (fl < 0)
			return -errno;
		blocking = !(fl & O_NONBLOCK);
		if (fl & O_NONBLOCK) {
			for (int i = 0; i < n; i++)
				cm_dev_hung_up(dv[i]);
		} else {
			pfd[0] = (struct pollfd){ .fd = ch->ch.fd, .events = POLLIN };
			for (int i = 0; i < n; i++)
				pfd[i + 1] = (struct pollfd){ .fd = dv[i]->conn.fd, .events = POLLRDHUP };
			pfd[n + 1] = (struct pollfd){ .fd = ch->wake_fd, .events = POLLIN };
			/* A signal restarts the wait, as read() on stock's fd
			 * does under SA_RESTART (glibc's signal()). */
			if (poll(pfd, (nfds_t)n + 2, -1) < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			for (int i = 0; i < n; i++)
				if (pfd[i + 1].revents)
					cm_dev_lost(dv[i]); /* queues DEVICE_REMOVAL on ch */
			if (pfd[n + 1].revents) {
				uint64_t v;
				ssize_t w = read(ch->wake_fd, &v, sizeof(v));

				(void)w; /* a new daemon to watch: poll again */
			}
			if (!pfd[0].revents || channel_closed(ch))
				continue;
		}
		do
			r = recv(ch->ch.fd, &buf, sizeof(buf), MSG_DONTWAIT);
		while (r < 0 && errno == EINTR);
		if (r < 0) {
			/* Blocking mode: another thread took the message. */
			if (errno == EAGAIN && !(fl & O_NONBLOCK))
				continue;
			return -errno;
		}
		if (r == 0)
			return -ENODEV; /* cannot happen while we hold the other end */
		if ((size_t)r != sizeof(buf.m)) {
			cm_warn("discarding a malformed event (%zd bytes, expected %zu: ABI mismatch?)",
				r, sizeof(buf.m));
			continue;
		}
		*msg = buf.m;
		return 0;
	}
}

int cm_channel_read(struct cm_channel *ch, struct xrxe_cm_event_msg *msg)
{
	int ret;

	if (!read_enter(ch))
		return -EBADF;
	ret = channel_read(ch, msg);
	read_leave(ch);
	return ret;
}
