/* SPDX-License-Identifier: MIT */
/*
 * Control-socket plumbing shared by both ends (abi.h): one SOCK_SEQPACKET
 * message with up to XRXE_MAX_CTRL_FDS descriptors as SCM_RIGHTS, and the
 * socket path of a daemon. The daemon (ctrl.c), the `xrxe` tool and the tests
 * use it; it depends on nothing but libc, so linking it pulls in no transport.
 */
#ifndef XRXE_DAEMON_CTRL_MSG_H
#define XRXE_DAEMON_CTRL_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "xrxe/abi.h"

/* "/run/xrxe/IFACE.sock" into buf; -ENAMETOOLONG if it does not fit a
 * sockaddr_un, -EINVAL for an empty or path-like interface name. */
int xrxe_ctrl_sock_path(const char *ifname, char *buf, size_t len);

/* Send one message (MSG_NOSIGNAL | MSG_DONTWAIT when nonblock) with nfds
 * descriptors. 0 or -errno; a short send is -EMSGSIZE. */
int xrxe_ctrl_send(int sock, const void *msg, size_t len, const int *fds, unsigned nfds,
		   bool nonblock);

/* Receive one message into buf (cap bytes). Returns its length, 0 at end of
 * stream, or -errno (-EAGAIN when nonblocking and nothing is there). fds[]
 * receives up to XRXE_MAX_CTRL_FDS descriptors (O_CLOEXEC), *nfds their
 * count; *truncated is set if the message or its descriptors did not fit
 * (the kernel discards descriptors that did not fit, so none leak). */
ssize_t xrxe_ctrl_recv(int sock, void *buf, size_t cap, int fds[XRXE_MAX_CTRL_FDS],
		       unsigned *nfds, bool *truncated);

/* Client side: connect to the daemon of ifname. Returns the socket or -errno. */
int xrxe_ctrl_connect(const char *ifname);

/* Client side: one blocking request/reply. req's hdr.length is set to
 * reqlen; the reply lands in reply (replycap bytes), its descriptors in
 * rfds/nrfds (may be NULL: they are then closed). Returns the reply's
 * length, or -errno for transport failures (the reply's own status is in its
 * header). */
ssize_t xrxe_ctrl_call(int sock, void *req, size_t reqlen, const int *fds, unsigned nfds,
		       void *reply, size_t replycap, int rfds[XRXE_MAX_CTRL_FDS], unsigned *nrfds);

#endif /* XRXE_DAEMON_CTRL_MSG_H */
