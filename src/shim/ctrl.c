/* SPDX-License-Identifier: MIT */
/*
 * Client side of the control protocol (include/xrxe/abi.h) and logging, for
 * both shims: the verbs shim (a connection per verbs context) and the RDMA CM
 * shim (a CM connection per daemon). src/shim/ctrl.h has the rules.
 */
#include "shim/ctrl.h"

#include "xrxe/abi.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "xrxe/fdpass.h"

#ifndef XRXE_SHIM_LIB
#error "XRXE_SHIM_LIB names the library that builds this file (mk/verbs.mk, mk/rdmacm.mk)"
#endif

/* A control request may wait for the daemon to resolve a neighbour (modify
 * QP to RTR); a daemon that is stopped (SIGSTOP, a debugger) must not hang the
 * application forever. CM requests are answered at once (resolution and the
 * CM protocol report through events). */
#define XRXE_CTRL_TIMEOUT_S 60

/* --- logging ----------------------------------------------------------------- */

static int log_level = -1;

void xrxe_shim_log(int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (log_level < 0) {
		const char *e = getenv("XRXE_LOG");

		log_level = XRXE_SHIM_WARN;
		if (e && !strcmp(e, "debug"))
			log_level = XRXE_SHIM_DEBUG;
		else if (e && !strcmp(e, "info"))
			log_level = XRXE_SHIM_INFO;
		else if (e && !strcmp(e, "error"))
			log_level = XRXE_SHIM_ERR;
	}
	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, XRXE_SHIM_LIB " (xrxe): %s\n", line);
}

/* --- connection --------------------------------------------------------------- */

int xrxe_conn_connect(struct xrxe_conn *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = XRXE_CTRL_TIMEOUT_S };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	c->fd = fd;
	c->seq = 0;
	c->post_checks = 0;
	c->serial = NULL;
	atomic_store_explicit(&c->gone, false, memory_order_relaxed);
	return 0;
}

int xrxe_conn_open(struct xrxe_conn *c, const char *path)
{
	int ret = xrxe_conn_connect(c, path);

	if (!ret)
		pthread_mutex_init(&c->lock, NULL);
	return ret;
}

void xrxe_conn_close(struct xrxe_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	pthread_mutex_destroy(&c->lock);
}

bool xrxe_conn_gone(int err)
{
	return err == -ECONNRESET || err == -EPIPE || err == -ENOTCONN || err == -ECONNREFUSED;
}

bool xrxe_conn_hung_up(struct xrxe_conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };

	if (c->fd >= 0 && !(poll(&p, 1, 0) == 1 &&
			    (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))))
		return false;
	atomic_store_explicit(&c->gone, true, memory_order_relaxed);
	return true;
}

bool xrxe_conn_dead(struct xrxe_conn *c)
{
	if (atomic_load_explicit(&c->gone, memory_order_relaxed))
		return true;
	if (++c->post_checks % XRXE_DEAD_CHECK_EVERY)
		return false;
	return xrxe_conn_hung_up(c);
}

static void close_fds(const int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
}

static int send_req(int fd, const void *buf, size_t len, const int *fds, unsigned int nfds)
{
	ssize_t r = xrxe_fdpass_send(fd, buf, len, fds, nfds, 0);

	if (r < 0)
		return r == -EAGAIN ? -ETIMEDOUT : (int)r;
	return r == (ssize_t)len ? 0 : -EPROTO;
}

/* One datagram; returns its length or -errno, descriptors in fds/nfds. */
static ssize_t recv_rep(int fd, void *buf, size_t len, int *fds, unsigned int *nfds)
{
	bool truncated;
	ssize_t r = xrxe_fdpass_recv(fd, buf, len, fds, nfds, 0, &truncated);

	if (r < 0)
		return r == -EAGAIN ? -ETIMEDOUT : r;
	if (r == 0)
		return -ECONNRESET; /* the daemon closed the connection */
	if (truncated) {
		close_fds(fds, *nfds);
		*nfds = 0;
		return -EPROTO;
	}
	return r;
}

int xrxe_conn_call(struct xrxe_conn *c, uint16_t op, void *req, size_t req_len, const int *fds,
		   unsigned int nfds, void *rep, size_t rep_len, int *rfds, unsigned int *nrfds)
{
	struct xrxe_ctrl_hdr *h = req;
	struct xrxe_conn *s = c->serial ? c->serial : c; /* whose lock and seq */
	uint32_t buf[XRXE_MAX_CTRL_MSG / sizeof(uint32_t)];
	const struct xrxe_ctrl_hdr *rh = (const void *)buf;
	int got[XRXE_MAX_CTRL_FDS];
	unsigned int ngot = 0, want = nrfds ? *nrfds : 0;
	ssize_t r;
	int ret;

	if (nrfds)
		*nrfds = 0;
	if (req_len < sizeof(*h) || req_len > XRXE_MAX_CTRL_MSG || rep_len > sizeof(buf) ||
	    nfds > XRXE_MAX_CTRL_FDS)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if (c->fd < 0) {
		ret = -ENOTCONN;
		goto out;
	}
	h->op = op;
	h->flags = 0;
	h->length = (uint32_t)req_len;
	h->seq = ++s->seq;
	h->status = 0;
	ret = send_req(c->fd, req, req_len, fds, nfds);
	if (ret)
		goto out;
	for (;;) {
		r = recv_rep(c->fd, buf, sizeof(buf), got, &ngot);
		if (r < 0) {
			ret = (int)r;
			goto out;
		}
		if ((size_t)r < sizeof(*rh) || rh->length != (uint32_t)r) {
			ret = -EPROTO;
			goto out_fds;
		}
		/* A reply to an earlier request that timed out: drop it. */
		if (rh->seq != h->seq) {
			close_fds(got, ngot);
			ngot = 0;
			continue;
		}
		break;
	}
	if (rh->op != op) {
		ret = -EPROTO;
		goto out_fds;
	}
	if (rh->status) {
		ret = rh->status < 0 && rh->status > -4096 ? rh->status : -EPROTO;
		goto out_fds;
	}
	if ((size_t)r < rep_len) {
		shim_err("daemon reply to op %u is %zd bytes, expected %zu (ABI mismatch?)", op, r,
			 rep_len);
		ret = -EPROTO;
		goto out_fds;
	}
	if (rep)
		memcpy(rep, buf, rep_len);
	for (unsigned int i = 0; i < ngot; i++) {
		if (i < want)
			rfds[i] = got[i];
		else
			close(got[i]);
	}
	if (nrfds)
		*nrfds = ngot < want ? ngot : want;
	ret = 0;
	goto out;
out_fds:
	close_fds(got, ngot);
out:
	if (xrxe_conn_gone(ret) && ret != -ENOTCONN)
		atomic_store_explicit(&c->gone, true, memory_order_relaxed);
	pthread_mutex_unlock(&s->lock);
	if (ret && ret != -ENOENT)
		shim_dbg("control op %u: %s", op, strerror(-ret));
	return ret;
}
