/* SPDX-License-Identifier: MIT */
/*
 * What both application-side libraries build from (mk/verbs.mk, mk/rdmacm.mk):
 * logging and the client end of the control protocol (include/xrxe/abi.h,
 * "Control protocol"). The verbs shim opens one connection per verbs context,
 * the RDMA CM shim one per daemon for its CM requests; the rules are the
 * same: SOCK_SEQPACKET, one request -> one reply in order, matched by sequence
 * number, descriptors as SCM_RIGHTS, a mutex keeping one request in flight per
 * connection so that calls from several threads are safe.
 *
 * Each library compiles src/shim/ctrl.c into an object of its own with
 * XRXE_SHIM_LIB set to its name (the prefix of its log lines), and keeps the
 * symbols hidden: both libraries live in one process without clashing.
 */
#ifndef XRXE_SHIM_CTRL_H
#define XRXE_SHIM_CTRL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- logging (stderr, XRXE_LOG=debug|info|warn|error; default warn) --------- */
enum { XRXE_SHIM_ERR, XRXE_SHIM_WARN, XRXE_SHIM_INFO, XRXE_SHIM_DEBUG };
/* One line "LIB (xrxe): message" when level is at or above XRXE_LOG's. */
void xrxe_shim_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define shim_err(...) xrxe_shim_log(XRXE_SHIM_ERR, __VA_ARGS__)
#define shim_warn(...) xrxe_shim_log(XRXE_SHIM_WARN, __VA_ARGS__)
#define shim_dbg(...) xrxe_shim_log(XRXE_SHIM_DEBUG, __VA_ARGS__)

/* --- control connection --------------------------------------------------------- */
struct xrxe_conn {
	int fd; /* -1 while not connected */
	pthread_mutex_t lock; /* one request/reply in flight per connection */
	uint32_t seq;
	/* Set once the daemon is known to be gone (a control call saw the
	 * connection hang up, the async pipe hit end of file, a CQ or post
	 * check found POLLHUP): every post and poll then fails at once. */
	_Atomic bool gone;
	uint32_t post_checks; /* posts since the last hang-up check (racy: a hint) */
	/* NULL, or the connection whose lock and sequence numbers this one
	 * uses: an imported verbs context talks on a duplicate of its
	 * exporter's socket (verbs/import.c), and the two must keep one
	 * request in flight between them, as one connection. */
	struct xrxe_conn *serial;
};

/* Initialise the lock and connect to path: 0 or -errno. */
int xrxe_conn_open(struct xrxe_conn *c, const char *path);
/* Connect to path, the lock already initialised and kept (a connection that
 * is reopened while other threads may already take its lock): 0 or -errno. */
int xrxe_conn_connect(struct xrxe_conn *c, const char *path);
/* Close the socket and destroy the lock. */
void xrxe_conn_close(struct xrxe_conn *c);
/*
 * One round trip. req starts with struct xrxe_ctrl_hdr (op, length and seq are
 * filled in here). On success (0) the first rep_len bytes of the reply are in
 * rep and up to *nrfds received descriptors in rfds (*nrfds updated; extra
 * ones are closed; rfds and nrfds may be NULL: all are closed). Returns 0 or
 * -errno (the daemon's status, or a transport error: -ECONNRESET when the
 * daemon is gone, -EPROTO for a malformed reply).
 */
int xrxe_conn_call(struct xrxe_conn *c, uint16_t op, void *req, size_t req_len, const int *fds,
		   unsigned int nfds, void *rep, size_t rep_len, int *rfds, unsigned int *nrfds);
/* The error says the daemon no longer exists: destroy paths treat the object as gone. */
bool xrxe_conn_gone(int err);
/* True if the daemon is gone: the flag, and every XRXE_DEAD_CHECK_EVERY
 * calls one non-blocking poll() of the control socket for a hang-up (so a
 * post loop notices without an async-event reader). For the data path. */
#define XRXE_DEAD_CHECK_EVERY 65536
bool xrxe_conn_dead(struct xrxe_conn *c);
/* One non-blocking look for a hang-up; sets c->gone. */
bool xrxe_conn_hung_up(struct xrxe_conn *c);

#endif /* XRXE_SHIM_CTRL_H */
