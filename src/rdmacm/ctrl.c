/* SPDX-License-Identifier: MIT */
/*
 * The CM control connection to one daemon (include/xrxe/abi.h, "Control
 * protocol"): SOCK_SEQPACKET, one request -> one reply in order, matched by
 * sequence number, descriptors as SCM_RIGHTS. A mutex keeps one request in
 * flight per connection, so CM calls from several threads are safe. The same
 * protocol rules as the verbs shim's src/verbs/ctrl.c; this is the library's
 * own small copy (the two shims never share objects).
 *
 * Also: logging, which both shims do the same way.
 */
#include "rdmacm/cm.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A daemon that is stopped (SIGSTOP, a debugger) must not hang the
 * application forever; CM requests are answered at once (resolution and the
 * protocol itself report through events). */
#define CM_CTRL_TIMEOUT_S 60

/* --- logging ------------------------------------------------------------------ */

static int log_level = -1;

void cm_log(int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (log_level < 0) {
		const char *e = getenv("XRXE_LOG");

		log_level = CM_LOG_WARN;
		if (e && !strcmp(e, "debug"))
			log_level = CM_LOG_DEBUG;
		else if (e && !strcmp(e, "info"))
			log_level = CM_LOG_INFO;
		else if (e && !strcmp(e, "error"))
			log_level = CM_LOG_ERR;
	}
	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "librdmacm (xrxe): %s\n", line);
}

/* --- connection ------------------------------------------------------------------ */

int cm_conn_open(struct cm_conn *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = CM_CTRL_TIMEOUT_S };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
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
	return 0;
}

bool cm_conn_gone(int err)
{
	return err == -ECONNRESET || err == -EPIPE || err == -ENOTCONN || err == -ECONNREFUSED;
}

static void close_all(const int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
}

static int send_msg(int fd, const void *buf, size_t len, const int *fds, unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * XRXE_MAX_CTRL_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r;

	if (nfds) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do
		r = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	return r == (ssize_t)len ? 0 : -EPROTO;
}

/* One datagram: its length or -errno. CM replies carry no descriptors; any
 * that come anyway are closed. */
static ssize_t recv_msg(int fd, void *buf, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * XRXE_MAX_CTRL_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	ssize_t r;

	do
		r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t off = 0; CMSG_LEN(off + sizeof(int)) <= cm->cmsg_len; off += sizeof(int)) {
			int f;

			memcpy(&f, CMSG_DATA(cm) + off, sizeof(f));
			close_all(&f, 1);
		}
	}
	if (r == 0)
		return -ECONNRESET; /* the daemon closed the connection */
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -EPROTO;
	return r;
}

int cm_conn_call(struct cm_conn *c, uint16_t op, void *req, size_t req_len, const int *fds,
		 unsigned int nfds, void *rep, size_t rep_len)
{
	struct xrxe_ctrl_hdr *h = req;
	uint32_t buf[XRXE_MAX_CTRL_MSG / sizeof(uint32_t)];
	const struct xrxe_ctrl_hdr *rh = (const void *)buf;
	ssize_t r;
	int ret;

	if (req_len < sizeof(*h) || req_len > XRXE_MAX_CTRL_MSG || rep_len > sizeof(buf) ||
	    nfds > XRXE_MAX_CTRL_FDS)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (c->fd < 0) {
		ret = -ENOTCONN;
		goto out;
	}
	h->op = op;
	h->flags = 0;
	h->length = (uint32_t)req_len;
	h->seq = ++c->seq;
	h->status = 0;
	ret = send_msg(c->fd, req, req_len, fds, nfds);
	if (ret)
		goto out;
	/* Skip replies to earlier requests that timed out on our side. */
	do {
		r = recv_msg(c->fd, buf, sizeof(buf));
		if (r < 0) {
			ret = (int)r;
			goto out;
		}
		if ((size_t)r < sizeof(*rh) || rh->length != (uint32_t)r) {
			ret = -EPROTO;
			goto out;
		}
	} while (rh->seq != h->seq);
	if (rh->op != op) {
		ret = -EPROTO;
	} else if (rh->status) {
		ret = rh->status < 0 && rh->status > -4096 ? rh->status : -EPROTO;
	} else if ((size_t)r < rep_len) {
		cm_error("daemon reply to op %u is %zd bytes, expected %zu (ABI mismatch?)", op, r,
			 rep_len);
		ret = -EPROTO;
	} else {
		if (rep)
			memcpy(rep, buf, rep_len);
		ret = 0;
	}
out:
	pthread_mutex_unlock(&c->lock);
	if (ret)
		cm_dbg("control op %u: %s", op, strerror(-ret));
	return ret;
}
