// SPDX-License-Identifier: MIT
/*
 * Raw packet QPs on the control socket: who may create one, and their flows
 * (CREATE_FLOW / DESTROY_FLOW; src/transport/raw.c does the matching).
 *
 * A raw packet QP sends frames the application writes and receives frames
 * of other hosts' traffic, so like the kernel (ib_uverbs: CAP_NET_RAW in the
 * device's network namespace's user namespace) the daemon wants the process
 * at the other end of the connection to hold CAP_NET_RAW in the daemon's user
 * namespace. The process is the one SO_PEERCRED names (its credentials at
 * connect). Its effective capabilities are read from /proc/PID/status; a
 * pidfd of the peer (SO_PEERPIDFD, Linux 6.5) then proves that PID still
 * names that process, so a PID reused after the peer exited cannot lend its
 * capabilities. Without SO_PEERPIDFD the connection itself keeps the
 * process, or one it passed the socket to, alive.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/ctrl_internal.h"
#include "transport/transport.h"
#include "util/log.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

#define CAP_NET_RAW_BIT 13 /* linux/capability.h */

struct obj_flow {
	struct obj o;
	uint32_t id; /* the core's flow */
};

/* The capability bits of a process's CapEff line, or 0. */
static uint64_t cap_eff(pid_t pid)
{
	char path[64], line[256];
	uint64_t caps = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "CapEff:", 7)) {
			caps = strtoull(line + 7, NULL, 16);
			break;
		}
	}
	fclose(f);
	return caps;
}

static bool same_userns(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	return !stat(path, &a) && !stat("/proc/self/ns/user", &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* The PID a pidfd names now (fdinfo "Pid:"), -1 when the process is gone. */
static long pidfd_pid(int pidfd)
{
	char path[64], line[128];
	long pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Pid:", 4)) {
			pid = strtol(line + 4, NULL, 10);
			break;
		}
	fclose(f);
	return pid;
}

int xrxe_ctrli_raw_permitted(struct conn *c)
{
	socklen_t len = sizeof(int);
	int pidfd = -1;
	bool ok;

	if (c->pid <= 0)
		return -EPERM; /* the peer is in a PID namespace we cannot see */
	if (getsockopt(c->ev.fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		pidfd = -1; /* an older kernel: see the comment at the top */
	ok = (cap_eff(c->pid) >> CAP_NET_RAW_BIT & 1) && same_userns(c->pid);
	if (pidfd >= 0) {
		ok = ok && pidfd_pid(pidfd) == c->pid;
		close(pidfd);
	}
	if (!ok) {
		xrxe_dbg("conn %u: pid %d uid %u: raw packet QP refused: no CAP_NET_RAW", c->id,
			 (int)c->pid, (unsigned)c->uid);
		return -EPERM;
	}
	return 0;
}

int xrxe_ctrli_op_create_flow(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_create_flow *m = req;
	struct obj_qp *qp;
	struct obj_flow *fl;
	int err;

	(void)fds;
	qp = (struct obj_qp *)xrxe_ctrli_obj_lookup(c, m->qp, OBJ_QP);
	if (!qp)
		return -EBADF;
	fl = xrxe_ctrli_obj_new(c, OBJ_FLOW, sizeof(*fl), &err);
	if (!fl)
		return err;
	err = xrxe_tp_flow_create(c->ctrl->cfg.tp, qp->qp, &m->rule, &fl->id);
	if (err) {
		xrxe_ctrli_obj_free(&fl->o);
		return err;
	}
	REPLY(r, struct xrxe_ctrl_handle)->handle = fl->o.handle;
	xrxe_ctrli_reply_len(r, sizeof(struct xrxe_ctrl_handle));
	return 0;
}

int xrxe_ctrli_destroy_flow(struct obj *o)
{
	struct obj_flow *fl = (struct obj_flow *)o;

	/* -ENOENT: its QP went first and took the flow with it */
	(void)xrxe_tp_flow_destroy(o->conn->ctrl->cfg.tp, fl->id);
	xrxe_ctrli_obj_free(o);
	return 0;
}

int xrxe_ctrli_op_destroy_flow(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_handle *h = req;
	struct obj *o = xrxe_ctrli_obj_lookup(c, h->handle, OBJ_FLOW);

	(void)fds;
	(void)r;
	if (!o)
		return -EBADF;
	return xrxe_ctrli_destroy_flow(o);
}
