/* SPDX-License-Identifier: MIT */
/*
 * Descriptor passing on the control socket (SCM_RIGHTS), one home for the
 * daemon (src/daemon/ctrl_msg.c) and the verbs shim (src/verbs/ctrl.c):
 * one message with up to XRXE_MAX_CTRL_FDS descriptors in one SCM_RIGHTS
 * header on the way out; on the way in, descriptors collected from every
 * SCM_RIGHTS header a peer sent (a hostile peer may send several, or more
 * than asked), those past the caller's array closed at once, and the
 * message flagged truncated so that the caller rejects it.
 */
#ifndef XRXE_FDPASS_H
#define XRXE_FDPASS_H

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xrxe/abi.h"

/* sendmsg of len bytes and nfds descriptors (at most XRXE_MAX_CTRL_FDS);
 * EINTR retried. Bytes sent or -errno. */
static inline ssize_t xrxe_fdpass_send(int sock, const void *msg, size_t len, const int *fds,
				       unsigned nfds, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * XRXE_MAX_CTRL_FDS)];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds > XRXE_MAX_CTRL_FDS)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *c;

		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* recvmsg into buf (cap bytes), descriptors (close-on-exec) into
 * fds[0..XRXE_MAX_CTRL_FDS); EINTR retried. *truncated: the message or its
 * descriptors did not fit (extra descriptors are closed). Bytes received
 * (0: the peer closed) or -errno. */
static inline ssize_t xrxe_fdpass_recv(int sock, void *buf, size_t cap,
				       int fds[XRXE_MAX_CTRL_FDS], unsigned *nfds, int flags,
				       bool *truncated)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * XRXE_MAX_CTRL_FDS)];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cm.buf,
		.msg_controllen = sizeof(cm.buf),
	};
	ssize_t n;

	*nfds = 0;
	*truncated = false;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k;
		int fd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*nfds < XRXE_MAX_CTRL_FDS) {
				fds[(*nfds)++] = fd;
			} else {
				close(fd);
				*truncated = true;
			}
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		*truncated = true;
	return n;
}

#endif /* XRXE_FDPASS_H */
