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
 *
 * A fault can also wait for the client: a page of a file on a FUSE
 * filesystem the client serves itself. (Not a userfaultfd range: our faults
 * are remote ones without retry, which a userfaultfd answers with SIGBUS at
 * once.) So the access itself runs in a worker thread and the daemon's thread waits
 * for it at most XRXE_ODP_DEADLINE_MS. An access that takes longer fails
 * (-EFAULT: the same error completion as a missing page), is left to finish
 * in its thread whenever it does (a new worker serves the others), and its
 * user's ODP fails from then on: every later access of that uid fails at
 * once and ODP_OPEN is refused (-EPERM), so one stall is all a user can cost
 * the daemon, whatever the number of its connections.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ctrl_internal.h"
#include "transport/transport.h"
#include "util/log.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

/* How long the daemon's thread waits for one access (a page fault that
 * reads from disk takes milliseconds, a loaded machine adds its own). */
#define XRXE_ODP_DEADLINE_MS 1000
/* Users whose access passed the deadline (their ODP is off from then on). */
#define XRXE_ODP_MAX_STALLED 64

struct xrxe_odp {
	int fd;        /* the application's /proc/self/mem, read-write */
	uid_t uid;
	unsigned refs; /* the connection, and an abandoned access (under W.mu) */
};

/* One access handed to the worker. */
enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_ABANDONED };
struct odp_job {
	struct xrxe_odp *o;
	bool write;
	uint64_t addr;
	uint32_t n;
	int result;
	enum job_state state;
	uint8_t buf[];
};

/* The worker: the daemon's thread hands it one job at a time and waits.
 * gen changes when a job is abandoned: its worker exits once its access
 * returns, and the next access starts a new one. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct odp_job *job;
	unsigned gen;
	bool running; /* a worker of generation gen exists */
	uid_t stalled[XRXE_ODP_MAX_STALLED];
	unsigned nstalled;
} W = { .mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER };
static pthread_once_t w_once = PTHREAD_ONCE_INIT;

/* The deadline is on the monotonic clock: a wall-clock step must not move it. */
static void w_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&W.done, &a);
	pthread_condattr_destroy(&a);
}

/* Under W.mu. */
static bool uid_stalled(uid_t uid)
{
	for (unsigned i = 0; i < W.nstalled; i++)
		if (W.stalled[i] == uid)
			return true;
	return false;
}

/* Under W.mu: the last reference closes the file. */
static void odp_put(struct xrxe_odp *o)
{
	if (--o->refs)
		return;
	close(o->fd);
	free(o);
}

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
	pthread_mutex_lock(&W.mu);
	err = uid_stalled(c->uid) ? -EPERM : 0;
	pthread_mutex_unlock(&W.mu);
	if (err)
		return err;
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
	o->uid = c->uid;
	o->refs = 1;
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
	/* an abandoned access may still hold the file */
	pthread_mutex_lock(&W.mu);
	odp_put(c->odp);
	pthread_mutex_unlock(&W.mu);
	c->odp = NULL;
	xrxe_ctrli_release(c, XRXE_Q_FDS, 1);
}

/* The access itself: 0 or -EFAULT. */
static int mem_rw(int fd, uint64_t addr, uint8_t *p, uint32_t n, bool write)
{
	while (n) {
		ssize_t k = write ? pwrite(fd, p, n, (off_t)addr) : pread(fd, p, n, (off_t)addr);

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

static void *worker(void *arg)
{
	unsigned gen = (unsigned)(uintptr_t)arg;
	struct odp_job *j;
	int r;

	pthread_mutex_lock(&W.mu);
	for (;;) {
		while (gen == W.gen && !(W.job && W.job->state == JOB_QUEUED))
			pthread_cond_wait(&W.work, &W.mu);
		if (gen != W.gen)
			break;
		j = W.job;
		j->state = JOB_RUNNING;
		pthread_mutex_unlock(&W.mu);
		r = mem_rw(j->o->fd, j->addr, j->buf, j->n, j->write);
		pthread_mutex_lock(&W.mu);
		if (j->state == JOB_ABANDONED) {
			/* the daemon gave up on it; this worker's time is over */
			odp_put(j->o);
			free(j);
			break;
		}
		j->result = r;
		j->state = JOB_DONE;
		pthread_cond_broadcast(&W.done);
	}
	pthread_mutex_unlock(&W.mu);
	return NULL;
}

/* Under W.mu: a worker of the current generation. */
static int worker_start(void)
{
	pthread_attr_t a;
	pthread_t t;
	int err;

	if (W.running)
		return 0;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &a, worker, (void *)(uintptr_t)W.gen);
	pthread_attr_destroy(&a);
	if (err)
		return -err;
	W.running = true;
	return 0;
}

int xrxe_daemon_odp_rw(void *user, void *mem, uint64_t addr, void *buf, uint32_t n, bool write)
{
	struct xrxe_odp *o = mem;
	struct odp_job *j;
	struct timespec dl;
	int r;

	(void)user;
	/* the file offset is the address; off_t is signed, and no user
	 * address lies above it */
	if (!o || !n || addr > (uint64_t)INT64_MAX - n)
		return n ? -EFAULT : 0;
	j = malloc(sizeof(*j) + n);
	if (!j)
		return -EFAULT;
	*j = (struct odp_job){ .o = o, .write = write, .addr = addr, .n = n, .state = JOB_QUEUED };
	if (write)
		memcpy(j->buf, buf, n);
	pthread_once(&w_once, w_init);
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += XRXE_ODP_DEADLINE_MS / 1000;
	dl.tv_nsec += (XRXE_ODP_DEADLINE_MS % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&W.mu);
	if (uid_stalled(o->uid) || worker_start()) {
		pthread_mutex_unlock(&W.mu);
		free(j);
		return -EFAULT;
	}
	W.job = j;
	pthread_cond_signal(&W.work);
	while (j->state != JOB_DONE) {
		if (pthread_cond_timedwait(&W.done, &W.mu, &dl) != ETIMEDOUT)
			continue;
		if (j->state == JOB_DONE)
			break;
		W.job = NULL;
		if (j->state == JOB_QUEUED) {
			/* the worker never took it (it could not run in a
			 * whole second): nothing of the user's is blamed */
			pthread_mutex_unlock(&W.mu);
			free(j);
			return -EFAULT;
		}
		/* Stuck in the client's fault: leave it to its worker, hold
		 * the file for it, and turn the user's ODP off. */
		j->state = JOB_ABANDONED;
		o->refs++;
		W.gen++;
		W.running = false;
		pthread_cond_broadcast(&W.work);
		if (W.nstalled < XRXE_ODP_MAX_STALLED)
			W.stalled[W.nstalled++] = o->uid;
		pthread_mutex_unlock(&W.mu);
		xrxe_warn_rl("on-demand paging: an access of uid %u took over %d ms (a fault "
			     "the process does not resolve); its ODP regions fail from now on",
			     (unsigned)o->uid, XRXE_ODP_DEADLINE_MS);
		return -EFAULT;
	}
	W.job = NULL;
	pthread_mutex_unlock(&W.mu);
	r = j->result;
	if (!r && !write)
		memcpy(buf, j->buf, n);
	free(j);
	return r;
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
