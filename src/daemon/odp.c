// SPDX-License-Identifier: MIT
/*
 * On-demand paging, the daemon's side (docs/architecture.md "On-demand
 * paging"). An ODP region is not moved into the process's memfd and not
 * mapped here: the transport reads and writes its bytes through
 * ops->odp_rw (src/transport/odp.c), which lands in xrxe_daemon_odp_rw below
 * as pread/pwrite on the application's own /proc/self/mem, handed over by
 * ODP_OPEN.
 *
 * Why that file and not process_vm_readv/writev on SO_PEERCRED's pid:
 * - opening /proc/PID/mem needs PTRACE_MODE_ATTACH over PID, which every
 *   process has over itself, so it works for every client whatever the
 *   daemon's capabilities and Yama's ptrace_scope; reads and writes through
 *   the open file need no further check. process_vm_* needs that access
 *   mode from the daemon at every call (root with CAP_SYS_PTRACE, and it
 *   fails for a daemon run with only the capabilities xrxed --help lists);
 * - the file is bound to the process's address space, not to a number: once
 *   the process is gone every access fails (the kernel returns 0 bytes), and
 *   a recycled pid can never make the daemon write into another process;
 * - the cost: accesses through /proc/PID/mem are "forced" (FOLL_FORCE) on
 *   kernels built with the default PROC_MEM_ALWAYS_FORCE, so a write into a
 *   page the application made read-only succeeds (on a private copy) where a
 *   NIC's page fault would fail. That is the application's own memory, in a
 *   region it registered with that access; documented in architecture.md.
 * A page that is not mapped reads or writes short: -EFAULT to the transport,
 * which answers with the IBA's error, never a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "daemon/ctrl_internal.h"
#include "transport/transport.h"
#include "util/log.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

struct xrxe_odp {
	int fd; /* the application's /proc/self/mem, read-write */
};

/* The fd must be a procfs file named "mem" (/proc/PID/mem or
 * /proc/PID/task/TID/mem) open read-write: anything else could block the
 * daemon (a pipe, /proc/kmsg) or be a file the daemon has no business
 * writing at memory addresses. A mem file of another process is no gain to
 * the client: opening it took ptrace access to that process already. */
static int check_mem_fd(int fd)
{
	char link[64], path[PATH_MAX];
	struct statfs sfs;
	struct stat st;
	ssize_t n;
	int fl;

	if (fstatfs(fd, &sfs) < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (sfs.f_type != PROC_SUPER_MAGIC || !S_ISREG(st.st_mode))
		return -EINVAL;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) != O_RDWR)
		return -EINVAL;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 4)
		return -EINVAL;
	path[n] = '\0';
	if (strcmp(path + n - 4, "/mem") != 0)
		return -EINVAL;
	return 0;
}

int xrxe_ctrli_op_odp_open(struct conn *c, const void *req, int *fds, struct reply *r)
{
	struct xrxe_odp *o;
	int err;

	(void)req;
	(void)r;
	if (c->odp)
		return -EEXIST;
	err = check_mem_fd(fds[0]);
	if (err) {
		xrxe_info_rl("conn %u: ODP_OPEN refused: not a /proc/PID/mem open read-write",
			     c->id);
		return err;
	}
	err = xrxe_ctrli_charge(c, XRXE_Q_FDS, 1);
	if (err)
		return err;
	o = calloc(1, sizeof(*o));
	if (!o) {
		xrxe_ctrli_release(c, XRXE_Q_FDS, 1);
		return -ENOMEM;
	}
	o->fd = fds[0];
	fds[0] = -1;
	c->odp = o;
	return 0;
}

void *xrxe_ctrli_odp_mem(struct conn *c)
{
	return c->odp;
}

void xrxe_ctrli_odp_close(struct conn *c)
{
	if (!c->odp)
		return;
	close(c->odp->fd);
	free(c->odp);
	c->odp = NULL;
	xrxe_ctrli_release(c, XRXE_Q_FDS, 1);
}

int xrxe_daemon_odp_rw(void *user, void *mem, uint64_t addr, void *buf, uint32_t n, bool write)
{
	const struct xrxe_odp *o = mem;
	uint8_t *p = buf;

	(void)user;
	/* the file offset is the address; off_t is signed, and no user
	 * address lies above it */
	if (!o || addr > (uint64_t)INT64_MAX - n)
		return -EFAULT;
	while (n) {
		ssize_t k = write ? pwrite(o->fd, p, n, (off_t)addr) : pread(o->fd, p, n, (off_t)addr);

		if (k < 0 && errno == EINTR)
			continue;
		/* 0 bytes: the process is gone; -EIO: nothing at addr */
		if (k <= 0)
			return -EFAULT;
		p += k;
		addr += (uint64_t)k;
		n -= (uint32_t)k;
	}
	return 0;
}

/* --- registration ------------------------------------------------------- */

/* Nothing is mapped or charged as registered bytes: an ODP region holds no
 * memory of the daemon's and pins nothing (the implicit one spans the whole
 * address space); it counts as one region of the user's quota. */
int xrxe_ctrli_odp_reg_mr(struct conn *c, struct obj_pd *pd, const struct xrxe_ctrl_reg_mr *m,
			  uint32_t access, struct reply *r)
{
	bool implicit = m->addr == 0 && m->length == UINT64_MAX;
	struct xrxe_ctrl_reg_mr_reply *rep;
	struct obj_mr *mr;
	int err;

	if (!c->odp)
		return -EOPNOTSUPP; /* the shim sends ODP_OPEN first */
	/* implicit ODP: the whole address space at iova 0 (as mlx5 requires);
	 * otherwise a real range */
	if (implicit ? m->iova != 0 : (!m->length || m->addr + m->length < m->addr))
		return -EINVAL;
	mr = xrxe_ctrli_obj_new(c, OBJ_MR, sizeof(*mr), &err);
	if (!mr)
		return err;
	err = xrxe_tp_mr_reg_odp(c->ctrl->cfg.tp, pd->pdn, c->odp, m->addr, m->iova, m->length,
				 access, &mr->lkey, &mr->rkey);
	if (err) {
		xrxe_ctrli_obj_free(&mr->o);
		return err;
	}
	memset(&mr->map, 0, sizeof(mr->map)); /* nothing to unmap at dereg */
	mr->addr = m->addr;
	mr->length = m->length;
	mr->iova = m->iova;
	mr->access = access;
	xrxe_ctrli_count_adjust(c->ctrl, OBJ_MR, 1);
	rep = REPLY(r, struct xrxe_ctrl_reg_mr_reply);
	rep->handle = mr->o.handle;
	rep->lkey = mr->lkey;
	rep->rkey = mr->rkey;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}

/* The range, PD or access of an ODP region change in place; a region does
 * not change between on-demand paging and the memfd model (its pages would
 * have to move while peers may be using it): -EOPNOTSUPP, as the kernel
 * answers for changes its driver cannot make in place. */
int xrxe_ctrli_odp_rereg_mr(struct conn *c, struct obj_mr *mr, const struct xrxe_ctrl_rereg_mr *m,
			    uint32_t pdn, uint32_t access, struct reply *r)
{
	bool trans = m->flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	uint64_t addr = trans ? m->addr : mr->addr, length = trans ? m->length : mr->length;
	uint64_t iova = trans ? m->iova : mr->iova;
	struct xrxe_ctrl_reg_mr_reply *rep;
	int err;

	if (!(access & IBV_ACCESS_ON_DEMAND) != !(mr->access & IBV_ACCESS_ON_DEMAND))
		return -EOPNOTSUPP;
	if (trans && (!addr || !length || addr + length < addr || iova + length < iova))
		return -EINVAL;
	err = xrxe_tp_mr_rereg(c->ctrl->cfg.tp, mr->lkey, m->flags, pdn, (void *)(uintptr_t)addr,
			       iova, length, access);
	if (err)
		return err;
	mr->addr = addr;
	mr->length = length;
	mr->iova = iova;
	mr->access = access;
	rep = REPLY(r, struct xrxe_ctrl_reg_mr_reply);
	rep->handle = mr->o.handle;
	rep->lkey = mr->lkey;
	rep->rkey = mr->rkey;
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}
