// SPDX-License-Identifier: MIT
#include "daemon/ctrl_msg.h"

#include <errno.h>
#include <stdio.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "xrxe/fdpass.h"

int xrxe_ctrl_sock_path(const char *ifname, char *buf, size_t len)
{
	struct sockaddr_un sun;
	int n;

	if (!ifname || !*ifname || strchr(ifname, '/') || !strcmp(ifname, ".") ||
	    !strcmp(ifname, ".."))
		return -EINVAL;
	if (len > sizeof(sun.sun_path))
		len = sizeof(sun.sun_path);
	n = snprintf(buf, len, "%s/%s%s", XRXE_RUN_DIR, ifname, XRXE_CTRL_SOCK_SUFFIX);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int xrxe_ctrl_send(int sock, const void *msg, size_t len, const int *fds, unsigned nfds,
		   bool nonblock)
{
	ssize_t n = xrxe_fdpass_send(sock, msg, len, fds, nfds, nonblock ? MSG_DONTWAIT : 0);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

ssize_t xrxe_ctrl_recv(int sock, void *buf, size_t cap, int fds[XRXE_MAX_CTRL_FDS],
		       unsigned *nfds, bool *truncated)
{
	return xrxe_fdpass_recv(sock, buf, cap, fds, nfds, MSG_DONTWAIT, truncated);
}

int xrxe_ctrl_connect(const char *ifname)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, err;

	err = xrxe_ctrl_sock_path(ifname, sun.sun_path, sizeof(sun.sun_path));
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

ssize_t xrxe_ctrl_call(int sock, void *req, size_t reqlen, const int *fds, unsigned nfds,
		       void *reply, size_t replycap, int rfds[XRXE_MAX_CTRL_FDS], unsigned *nrfds)
{
	struct xrxe_ctrl_hdr *h = req;
	int got[XRXE_MAX_CTRL_FDS];
	unsigned ngot = 0;
	bool trunc;
	ssize_t n;
	int err;

	if (reqlen >= sizeof(*h))
		h->length = (uint32_t)reqlen;
	err = xrxe_ctrl_send(sock, req, reqlen, fds, nfds, false);
	if (err)
		return err;
	for (;;) {
		n = xrxe_ctrl_recv(sock, reply, replycap, got, &ngot, &trunc);
		if (n != -EAGAIN)
			break;
		/* xrxe_ctrl_recv never blocks: wait for the reply here (a modify_qp
		 * may wait up to a second for ARP). */
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		int r = poll(&pfd, 1, 10000);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ETIMEDOUT;
	}
	if (n == 0)
		return -ECONNRESET;
	if (n > 0 && trunc)
		n = -EMSGSIZE;
	if (n < 0 || !rfds) {
		for (unsigned i = 0; i < ngot; i++)
			close(got[i]);
		ngot = 0;
	} else {
		memcpy(rfds, got, ngot * sizeof(int));
	}
	if (nrfds)
		*nrfds = ngot;
	return n;
}
