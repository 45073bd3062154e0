/* SPDX-License-Identifier: MIT */
/*
 * rpoll and rselect over rsockets and ordinary descriptors together.
 *
 * An rsocket's readiness is a matter of its state (queued data, credits,
 * connection state), not of any one descriptor: each round first moves every
 * rsocket on without blocking (its CM events and completions) and reads its
 * events from that state; ordinary descriptors get a poll() with timeout 0.
 * Nothing ready: one poll() on the ordinary descriptors plus, per rsocket,
 * its CM channel and its (armed) completion channel, then the round again.
 */
#include <stdlib.h>
#include <string.h>

#include "rdmacm/rsocket_int.h"

short rs_poll_events(struct rsocket *rs, short events)
{
	short rev = 0;

	if (rs->type == SOCK_DGRAM)
		return rs_dgram_poll_events(rs, events);
	pthread_mutex_lock(&rs->lock);
	if (rs->state == RS_LISTENING) {
		struct pollfd pfd = { .fd = rs->ch->fd, .events = POLLIN };

		/* A queued CM event is a connection request (or the device's
		 * removal, which raccept reports). */
		if (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN))
			rev |= events & POLLIN;
		goto out;
	}
	rs_cm_progress(rs);
	rs_progress(rs);
	if (rs->state & RS_OPENING)
		goto out;
	if (rs->state == RS_CONNECT_ERROR) {
		rev = (short)((events & (POLLIN | POLLOUT)) | POLLERR);
		goto out;
	}
	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR))) {
		/* never connected: as a fresh TCP socket, POLLOUT|POLLHUP */
		rev = (short)((events & POLLOUT) | POLLHUP);
		goto out;
	}
	if ((events & POLLIN) && rs_conn_have_rdata(rs))
		rev |= POLLIN;
	if ((events & POLLOUT) && rs_conn_can_send(rs))
		rev |= POLLOUT;
	/* Hang-up (or error) once the data that arrived before it is read:
	 * a reader polling for POLLIN first gets its last bytes (TCP, too,
	 * reports only POLLIN|POLLRDHUP while a peer's FIN waits behind data). */
	if (!(rs->state & RS_CONNECTED) && !rs_have_rdata(rs))
		rev |= rs->reset ? (POLLHUP | POLLERR) : POLLHUP;
	else if (!(rs->state & RS_CONNECTED))
		rev |= events & POLLRDHUP;
	else if (!(rs->state & RS_READABLE))
		rev |= events & POLLRDHUP;
out:
	pthread_mutex_unlock(&rs->lock);
	return rev;
}

/* The descriptors an rsocket's next event will show up on; arms its CQ and
 * registers the calling thread's wake-up eventfd wfd with it (*reg). */
static int rs_wait_fds(struct rsocket *rs, struct pollfd *fds, int wfd, bool *reg)
{
	int n = 0;

	*reg = false;
	if (rs->type == SOCK_DGRAM)
		return rs_dgram_wait_fds(rs, fds);
	pthread_mutex_lock(&rs->lock);
	*reg = rs_sleeper_add(rs, wfd);
	fds[n++] = (struct pollfd){ .fd = rs->ch->fd, .events = POLLIN };
	if (rs->comp.cq && rs->state != RS_LISTENING) {
		rs_cq_arm(&rs->comp);
		fds[n++] = (struct pollfd){ .fd = rs->comp.cc->fd, .events = POLLIN };
	}
	pthread_mutex_unlock(&rs->lock);
	return n;
}

/* Undo rs_wait_fds' registrations. */
static void rs_poll_unregister(struct pollfd *fds, nfds_t nfds, const bool *reg, int wfd)
{
	for (nfds_t i = 0; i < nfds; i++) {
		struct rsocket *rs;

		if (!reg[i] || !(rs = rs_lookup(fds[i].fd)))
			continue;
		pthread_mutex_lock(&rs->lock);
		rs_sleeper_del(rs, wfd);
		pthread_mutex_unlock(&rs->lock);
	}
}

/* One round without blocking: revents of every entry, the count ready. */
static int rs_poll_check(struct pollfd *fds, nfds_t nfds)
{
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct rsocket *rs = fds[i].fd >= 0 ? rs_lookup(fds[i].fd) : NULL;

		fds[i].revents = 0;
		if (fds[i].fd < 0)
			continue;
		if (rs) {
			fds[i].revents = rs_poll_events(rs, fds[i].events);
		} else {
			struct pollfd one = fds[i];

			if (poll(&one, 1, 0) > 0)
				fds[i].revents = one.revents;
		}
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	uint64_t start = rs_now_us();
	struct pollfd *wfds = NULL;
	bool *reg = NULL;
	size_t wcap = 0;
	int ret, wfd = rs_thread_wake_fd();

	if (!fds && nfds)
		return errno = EFAULT, -1;
	for (;;) {
		size_t n = 0;
		int t = -1;

		ret = rs_poll_check(fds, nfds);
		if (ret || !timeout)
			break;
		/* As rdma-core: a short spin before sleeping (polling_time). */
		if (rs_now_us() - start < rs_conf.polling_time_us)
			continue;
		if (timeout > 0) {
			uint64_t spent = (rs_now_us() - start) / 1000;

			if (spent >= (uint64_t)timeout) {
				ret = 0;
				break;
			}
			t = timeout - (int)spent;
		}
		if (wcap < nfds * 10 + 2) {
			struct pollfd *w = realloc(wfds, sizeof(*w) * (nfds * 10 + 2));
			bool *r = realloc(reg, sizeof(*r) * (nfds + 1));

			if (w)
				wfds = w;
			if (r)
				reg = r;
			if (!w || !r) {
				ret = -1;
				errno = ENOMEM;
				break;
			}
			wcap = nfds * 10 + 2;
		}
		for (nfds_t i = 0; i < nfds; i++) {
			struct rsocket *rs = fds[i].fd >= 0 ? rs_lookup(fds[i].fd) : NULL;

			reg[i] = false;
			if (rs)
				n += (size_t)rs_wait_fds(rs, &wfds[n], wfd, &reg[i]);
			else if (fds[i].fd >= 0)
				wfds[n++] = (struct pollfd){ .fd = fds[i].fd, .events = fds[i].events };
		}
		if (wfd >= 0)
			wfds[n++] = (struct pollfd){ .fd = wfd, .events = POLLIN };
		/* Completions between the checks and the arming: look again. */
		ret = rs_poll_check(fds, nfds);
		if (ret) {
			rs_poll_unregister(fds, nfds, reg, wfd);
			break;
		}
		/* Several threads may sleep on one rsocket's descriptors; one
		 * consuming the event must not strand the others for long. */
		if (t < 0 || t > (int)rs_conf.wake_up_interval_ms)
			t = (int)rs_conf.wake_up_interval_ms;
		if (poll(wfds, (nfds_t)n, t) < 0) {
			ret = -1;
			rs_poll_unregister(fds, nfds, reg, wfd);
			break;
		}
		rs_poll_unregister(fds, nfds, reg, wfd);
		if (wfd >= 0 && wfds[n - 1].revents)
			rs_thread_wake_drain(wfd);
		/* A stream rsocket's number is its CM channel: readable means
		 * an event to take in the next round. */
		for (size_t i = 0; i < n; i++) {
			struct rsocket *rs;

			if (!wfds[i].revents || !(rs = rs_lookup(wfds[i].fd)) ||
			    rs->type != SOCK_STREAM)
				continue;
			pthread_mutex_lock(&rs->lock);
			rs->cm_pending = true;
			pthread_mutex_unlock(&rs->lock);
		}
	}
	free(wfds);
	free(reg);
	return ret;
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout)
{
	struct pollfd *fds;
	int n = 0, ret, cnt = 0;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return errno = EINVAL, -1;
	fds = calloc(nfds ? (size_t)nfds : 1, sizeof(*fds));
	if (!fds)
		return errno = ENOMEM, -1;
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;
		bool want = false;

		if (readfds && FD_ISSET(fd, readfds))
			ev |= POLLIN, want = true;
		if (writefds && FD_ISSET(fd, writefds))
			ev |= POLLOUT, want = true;
		if (exceptfds && FD_ISSET(fd, exceptfds))
			ev |= POLLPRI, want = true;
		if (want)
			fds[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	ret = rpoll(fds, (nfds_t)n,
		    timeout ? (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1);
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	if (ret > 0) {
		for (int i = 0; i < n; i++) {
			if (readfds && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    (fds[i].events & POLLIN)) {
				FD_SET(fds[i].fd, readfds);
				cnt++;
			}
			if (writefds && (fds[i].revents & (POLLOUT | POLLERR)) &&
			    (fds[i].events & POLLOUT)) {
				FD_SET(fds[i].fd, writefds);
				cnt++;
			}
			if (exceptfds && (fds[i].revents & POLLPRI)) {
				FD_SET(fds[i].fd, exceptfds);
				cnt++;
			}
		}
		ret = cnt;
	}
	free(fds);
	return ret;
}
