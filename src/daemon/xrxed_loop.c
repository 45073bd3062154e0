// SPDX-License-Identifier: MIT
/*
 * xrxed's event loop (see xrxed.c's head comment for the policy).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ctrl.h"
#include "daemon/devpage.h"
#include "daemon/evsrc.h"
#include "daemon/netdev.h"
#include "daemon/netlink.h"
#include "daemon/steer.h"
#include "daemon/xsk_io.h"
#include "transport/transport.h"
#include "util/log.h"
#include "xrxe/wire.h"

#include "daemon/xrxed.h"
#include "util/log.h"

/* --- event loop ------------------------------------------------------------- */

/* systemd's readiness protocol (sd_notify(3)) without libsystemd: one
 * datagram to $NOTIFY_SOCKET, a path or, with a leading '@', an abstract
 * name. Nothing happens when the variable is unset (not under systemd). */
void xrxe_daemon_notify_systemd(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	socklen_t salen;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path)) {
		xrxe_warn("NOTIFY_SOCKET is too long: systemd not notified");
		return;
	}
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
		xrxe_warn("cannot notify systemd at %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

void xrxe_daemon_signal_event(struct xrxe_evsrc *src, uint32_t events)
{
	struct daemon *d = (struct daemon *)((char *)src - offsetof(struct daemon, sig_src));
	struct signalfd_siginfo si;

	(void)events;
	while (read(src->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			xrxe_daemon_print_counters(d);
			continue;
		}
		xrxe_info("%s: signal %u, stopping", d->opts.ifname, si.ssi_signo);
		if (!d->stop)
			xrxe_daemon_notify_systemd("STOPPING=1");
		d->stop = true;
	}
}

/* One epoll round; timeout NULL blocks. Dispatches every ready source that
 * is still there when its turn comes (evsrc.h). */
static int poll_events(struct daemon *d, const struct timespec *timeout)
{
	struct epoll_event ev[MAX_EVENTS];
	int n = epoll_pwait2(d->epfd, ev, MAX_EVENTS, timeout, NULL);

	if (n < 0) {
		int err = errno;

		if (err == EINTR)
			return 0;
		xrxe_err("epoll_wait: %s", strerror(err));
		return -err; /* errno as epoll_pwait2 left it, not as logging did */
	}
	xrxe_evsrc_dispatch(ev, n);
	return n;
}

static void ctrl_tick(struct daemon *d)
{
	uint64_t now = xrxe_daemon_mono_ns();

	if (xrxe_ctrl_next_deadline(d->ctrl) <= now)
		xrxe_ctrl_tick(d->ctrl, now);
}

static bool tx_pending(const struct daemon *d)
{
	return d->tx_nbatch || xrxe_xsk_tx_pending(d->xsk[0]);
}

/* What sleep_once did (or a negative errno). */
enum { WORK_FOUND, SQ_WAITING, SLEPT, NAPPED };

/* Sleep until a frame, an event, the transport's or the control layer's
 * next deadline, the next TX reap, or limit, whichever comes first.
 *
 * The AF_XDP sockets are polled here, not kept in the epoll set: a socket
 * in an epoll set has epoll's entry on its wait queue for good, so every
 * frame the kernel hands it runs the wake-up path (sock_def_readable: the
 * queue's lock, ep_poll_callback, the interrupt flag restored), on the
 * *sender's* CPU for a veth peer, also while this loop is busy and needs
 * no wake-up. ppoll(2) puts its entry there only while we sleep.
 * docs/performance.md, "The wake-up the receiver did not need". */
static int wait_events(struct daemon *d, uint64_t now, uint64_t limit)
{
	struct pollfd pfd[1 + XRXE_STEER_MAX_QUEUES];
	uint64_t deadline = limit, t;
	struct timespec ts;
	int n;

	t = xrxe_tp_next_deadline(d->tp);
	if (t < deadline)
		deadline = t;
	t = xrxe_ctrl_next_deadline(d->ctrl);
	if (t < deadline)
		deadline = t;
	if (tx_pending(d) && now + TX_REAP_NS < deadline)
		deadline = now + TX_REAP_NS;
	t = deadline > now ? deadline - now : 0;
	ts.tv_sec = (time_t)(t / 1000000000ull);
	ts.tv_nsec = (long)(t % 1000000000ull);
	pfd[0] = (struct pollfd){ .fd = d->epfd, .events = POLLIN };
	for (unsigned q = 0; q < d->nxsk; q++)
		pfd[1 + q] = (struct pollfd){ .fd = xrxe_xsk_fd(d->xsk[q]), .events = POLLIN };
	n = ppoll(pfd, 1 + d->nxsk, &ts, NULL);
	if (n < 0) {
		int err = errno;

		if (err == EINTR)
			return 0;
		xrxe_err("ppoll: %s", strerror(err));
		return -err;
	}
	if (pfd[0].revents & POLLIN) {
		static const struct timespec zero = { 0 };
		int m = poll_events(d, &zero);

		if (m < 0)
			return m;
	}
	return n;
}

/* --rt-priority: a QP has unstarted WQEs it cannot send yet (window, ACK):
 * sleep RT_NAP_NS, or less if a deadline or a frame comes first. Not a
 * doorbell sleep: daemon_sleeping stays 0, the nap is that short. */
static int nap(struct daemon *d)
{
	uint64_t now = xrxe_daemon_mono_ns();
	int ret;

	d->ctr.naps++;
	ret = wait_events(d, now, now + RT_NAP_NS);
	ctrl_tick(d);
	return ret < 0 ? ret : NAPPED;
}

/* abi.h doorbell protocol, daemon side: publish "sleeping", full fence (the
 * shim fences between its producer store and its load of the flag: one of
 * us sees the other), re-check the send queues, then sleep. sq_spin: posted
 * WQEs that wait for the network (window, ACK) still keep the loop awake
 * (SQ_WAIT_SPIN_NS). */
static int sleep_once(struct daemon *d, bool sq_spin)
{
	struct xrxe_dev_page *page = xrxe_devpage_page(d->dp);
	uint64_t now;
	int ret;

	__atomic_store_n(&page->daemon_sleeping, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (d->loop.tail != d->loop.head || d->tx_nbatch || xrxe_ctrl_doorbells_pending(d->ctrl)) {
		__atomic_store_n(&page->daemon_sleeping, 0, __ATOMIC_RELAXED);
		d->ctr.wakeups_doorbell_race++;
		return WORK_FOUND;
	}
	if (xrxe_tp_sq_pending(d->tp)) {
		if (d->opts.rt_priority) {
			__atomic_store_n(&page->daemon_sleeping, 0, __ATOMIC_RELAXED);
			return nap(d);
		}
		if (sq_spin) {
			__atomic_store_n(&page->daemon_sleeping, 0, __ATOMIC_RELAXED);
			d->ctr.sq_wait_spins++;
			return SQ_WAITING;
		}
		/* Waited SQ_WAIT_SPIN_NS: sleep; the frame that opens the
		 * window wakes us (wait_events polls the AF_XDP sockets), the
		 * retransmission timer is the transport's deadline. */
		d->ctr.sq_wait_sleeps++;
	}
	now = xrxe_daemon_mono_ns();
	d->ctr.sleeps++;
	ret = wait_events(d, now, now + MAX_SLEEP_NS);
	/* A shim that still reads 1 rings once more than needed: harmless. */
	__atomic_store_n(&page->daemon_sleeping, 0, __ATOMIC_RELAXED);
	ctrl_tick(d);
	return ret < 0 ? ret : SLEPT;
}

/* Was this thread preempted within SHARED_WINDOW_NS? Looked up at most every
 * SHARED_CHECK_NS. Then another runnable task shares our CPU and idle
 * spinning takes the core from it. */
static bool cpu_shared(struct daemon *d)
{
	struct rusage ru;

	if (d->now - d->shared_checked >= SHARED_CHECK_NS) {
		d->shared_checked = d->now;
		if (getrusage(RUSAGE_THREAD, &ru) == 0 && ru.ru_nivcsw != d->nivcsw) {
			d->nivcsw = ru.ru_nivcsw;
			d->shared_seen = d->now;
			d->ctr.shared_cpu_seen++;
		}
	}
	return d->shared_seen && d->now - d->shared_seen < SHARED_WINDOW_NS;
}

/* Publish the CPU the loop runs on (abi.h daemon_cpu), only when it moved:
 * shims read that cache line on every post and empty poll. */
static void publish_cpu(struct daemon *d)
{
	int cpu = sched_getcpu();

	if (cpu >= 0 && cpu != d->cpu) {
		d->cpu = cpu;
		__atomic_store_n(&xrxe_devpage_page(d->dp)->daemon_cpu, (uint32_t)cpu + 1,
				 __ATOMIC_RELAXED);
	}
}

/* Idle: yield each pass instead of spinning, unless a recent yield was slow
 * (xrxed.h, YIELD_*). Not under --rt-priority: a SCHED_FIFO task's yield lets
 * only real-time tasks run, so it would be a spin (and the RT policy naps). */
static bool idle_yields(const struct daemon *d)
{
	if (d->opts.rt_priority)
		return false;
	return !d->yield_slow_seen || d->now - d->yield_slow_seen >= YIELD_SLOW_WINDOW_NS;
}

/* One idle pass: give the CPU to whoever else is runnable on it, and learn
 * from how long that took who shares the core. */
static void idle_yield(struct daemon *d)
{
	uint64_t t0 = xrxe_daemon_mono_ns(), t;

	sched_yield();
	t = xrxe_daemon_mono_ns();
	d->ctr.idle_yields++;
	if (t - t0 >= YIELD_RAN_NS) {
		d->ctr.idle_yields_ran++;
		d->shared_seen = t;
	}
	if (t - t0 >= YIELD_SLOW_NS) {
		d->ctr.idle_yields_slow++;
		d->yield_slow_seen = t;
	}
}

int xrxe_daemon_run_loop(struct daemon *d)
{
	static const struct timespec zero = { 0 };
	/* last_busy: the last pass that did something; last_work: the start
	 * of the current spin window (last_busy, or the last look that found
	 * WQEs waiting for the network) */
	uint64_t last_busy, last_work, last_events, last_yield;

	d->cpu = -1; /* not published yet */
	last_busy = last_work = last_events = last_yield = xrxe_daemon_mono_ns();
	while (!d->stop) {
		bool work = false;

		d->now = xrxe_daemon_mono_ns();
		for (unsigned q = 0; q < d->nxsk; q++)
			work |= xrxe_daemon_poll_queue(d, d->xsk[q]) > 0;
		work |= xrxe_daemon_loop_drain(d) > 0;
		/* new posts: the QPs named in the doorbell rings (ctrl_doorbell.c) */
		work |= xrxe_ctrl_doorbells(d->ctrl) > 0;
		work |= xrxe_tp_poll(d->tp, d->now);
		xrxe_daemon_tx_flush_batch(d);
		if (tx_pending(d))
			xrxe_xsk_tx_flush(d->xsk[0]);

		/* Control requests, netlink and signals are served at least
		 * this often while the loop does not sleep, busy or spinning:
		 * an application's modify_qp must not wait for a peer that
		 * does not answer (the loop sleeps only when nothing waits). */
		if (d->now - last_events >= EVENTS_EVERY_NS) {
			if (poll_events(d, &zero) < 0)
				return -1;
			ctrl_tick(d);
			last_events = d->now;
		}
		if (work) {
			last_busy = last_work = d->now;
			if (d->now - last_yield >= YIELD_EVERY_NS) {
				sched_yield();
				last_yield = d->now;
			}
			continue;
		}
		publish_cpu(d);
		if (idle_yields(d)) {
			if (d->now - last_work < SPIN_NS) {
				idle_yield(d);
				continue;
			}
		} else if (d->now - last_work < (cpu_shared(d) ? SPIN_SHARED_NS : SPIN_NS)) {
			continue;
		}
		switch (sleep_once(d, d->now - last_busy < SQ_WAIT_SPIN_NS)) {
		case WORK_FOUND: /* a post came as we looked: a new spin window */
			last_busy = last_work = last_yield = xrxe_daemon_mono_ns();
			break;
		case SQ_WAITING: /* spin on, last_busy kept */
			last_work = last_yield = xrxe_daemon_mono_ns();
			break;
		case SLEPT:
			last_busy = last_work = last_events = last_yield = xrxe_daemon_mono_ns();
			break;
		case NAPPED: /* nothing new yet: nap again next pass, no spin window */
			last_events = last_yield = xrxe_daemon_mono_ns();
			break;
		default:
			return -1;
		}
	}
	return 0;
}

