// SPDX-License-Identifier: MIT
/*
 * xrxed: the xrxe transport daemon for one interface.
 *
 * It attaches the XDP steering program (unless attached already), binds one
 * AF_XDP socket per RX queue, and runs the InfiniBand transport core
 * (src/transport/) between those sockets and the applications, which reach it
 * through the control socket (ctrl.c) and shared-memory rings (shm.c). The
 * device page (devpage.c) tells every application the device's attributes and
 * GIDs, kept current from rtnetlink (netlink.c).
 *
 * Event loop, one thread:
 *   - AF_XDP RX bursts -> parse + ICRC (src/wire) -> xrxe_tp_rx; frames that
 *     fail are counted by reason (the "verified/counted" path);
 *   - frames the core sends to one of our own GIDs (one host, two QPs) go
 *     into a small loop queue and back into xrxe_tp_rx, never to the wire;
 *   - xrxe_tp_poll (new WQEs, responses, timers), TX submitted in batches and
 *     kicked once per pass;
 *   - spin while there is work (a wake-up costs tens of µs in this VM,
 *     docs/facts/afxdp.md §6) and 50 µs after it -- only 10 µs once we have been
 *     preempted in the last second, i.e. share the core with a runnable
 *     task such as a busy-polling application -- then the sleep protocol of
 *     abi.h: publish daemon_sleeping, full fence, re-check the send queues, epoll_wait on
 *     everything with the next transport deadline as the timeout. While busy,
 *     control sockets, netlink and signals are still served every millisecond
 *     and the CPU is yielded now and then, so a single core is not starved;
 *   - with --rt-priority the loop runs under SCHED_FIFO, as a NIC that never
 *     waits for a CPU: it preempts every normal task when a frame or a
 *     deadline is due, and so it must never spin on what only the network
 *     can end -- a QP waiting for an ACK makes it nap (RT_NAP_NS), not spin.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
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

#define RX_BURST 64
#define TX_BATCH 64
#define TX_SLOTS 64         /* reserved, not yet submitted frames (the core
			     * submits each frame right after writing it) */
#define LOOPQ_SLOTS 256     /* looped-back frames waiting for xrxe_tp_rx */
#define MAX_EVENTS 64
#define RX_LAG_BUCKETS 5

#define NS_PER_US 1000ull
#define NS_PER_MS (1000ull * 1000)
/* Keep spinning this long after the last piece of work (a sleep/wake-up round
 * trip costs 20-70 µs here, docs/facts/afxdp.md §6)... */
#define SPIN_NS (50 * NS_PER_US)
/* ...but only this long while another task wants our CPU (we were preempted
 * recently): an application that busy-polls its CQ or buffer on the same
 * core cannot see what we just delivered, nor post its next request, until
 * we give the core up; spinning idle there only delays it
 * (docs/performance.md). */
#define SPIN_SHARED_NS (10 * NS_PER_US)
/* "Recently": an involuntary context switch within this window. */
#define SHARED_WINDOW_NS (1000 * NS_PER_MS)
/* How often to look (one getrusage). */
#define SHARED_CHECK_NS (1 * NS_PER_MS)
/* While busy: serve control, netlink and signals at least this often, and
 * yield the CPU this often (a daemon sharing a core with its applications
 * must let them run). */
#define EVENTS_EVERY_NS (1 * NS_PER_MS)
#define YIELD_EVERY_NS (2 * NS_PER_MS)
/* Sleep at most this long: a lost doorbell (a broken shim) costs one second,
 * not a hang. */
#define MAX_SLEEP_NS (1000 * NS_PER_MS)
/* --rt-priority: while only QPs that wait for the network (an ACK, a window)
 * have unstarted WQEs, sleep this long at a time instead of spinning. A
 * SCHED_FIFO task that spins starves every normal task on its CPU; an ACK
 * ends the nap at once (the AF_XDP socket is in the epoll set), and a WQE
 * posted during it -- the shim sees daemon_sleeping 0 and does not ring --
 * waits no longer than a doorbell's wake-up would take (docs/facts/afxdp.md §6). */
#define RT_NAP_NS (50 * NS_PER_US)
/* TX completions outstanding: look again this soon. */
#define TX_REAP_NS (100 * NS_PER_US)

/* Device limits given to the core and advertised in the device page. */
#define DEV_MAX_QP 4096
#define DEV_MAX_MR 65536
#define DEV_MAX_CQ 16384
#define DEV_MAX_SRQ 4096
/* Multicast groups: the core's table, but no more than one IPv4 socket may
 * join (net.ipv4.igmp_max_memberships, 20 by default): netlink.c holds every
 * membership on one socket. */
#define DEV_MAX_MCAST_GRP 20
/* The core sizes its PD and AH tables from max_qp (src/transport/tp.c). */
#define DEV_MAX_PD (DEV_MAX_QP + 63)
#define DEV_MAX_AH (DEV_MAX_QP + 255)
#define DEV_LOCAL_ACK_DELAY 15 /* rxe */
/* Line rate when the driver does not report a speed (DCQCN's ceiling). */
#define DEFAULT_LINE_RATE_MBPS 10000

struct daemon_opts {
	const char *ifname;
	enum xrxe_steer_mode mode;
	bool mode_given; /* --mode: no fallback from native to skb */
	unsigned queues; /* 0 = all RX queues of the interface */
	bool keep_xdp;   /* leave the steering program attached on exit */
	int rt_priority; /* SCHED_FIFO priority, 0 = normal scheduling */
	bool fixed_ack_timeout; /* --rexmit fixed */
	bool sr_off, sr_on;     /* --selective-repeat off / on (default: cm) */
	struct xrxe_tp_cc_params cc; /* defaults + --cc name=value */
};

struct daemon_counters {
	uint64_t rx_ok;
	uint64_t rx_by_opcode[256];
	uint64_t rx_error[XRXE_PARSE_ERROR_COUNT];
	uint64_t tx_frames, tx_ring_full, tx_bad;
	uint64_t loop_frames, loop_drops, loop_parse_errors;
	uint64_t sleeps, wakeups_doorbell_race;
	uint64_t naps; /* --rt-priority: RT_NAP_NS sleeps while QPs wait */
	uint64_t shared_cpu_seen; /* preemptions noticed (spin policy) */
	uint64_t ecn_ce_rx; /* received RoCEv2 frames marked CE (== XDP's ecn_ce) */
	/* How late the loop read stamped frames (now - the XDP arrival stamp):
	 * the delay every reply, ACK and CNP starts with. Buckets up to 10 us,
	 * 100 us, 1 ms, 10 ms, beyond; the largest seen. */
	uint64_t rx_lag[RX_LAG_BUCKETS];
	uint64_t rx_lag_max_ns;
};

struct tx_slot {
	struct xrxe_tx_frame f;
	struct tx_slot *next;
};

struct loopq {
	uint8_t *buf; /* LOOPQ_SLOTS x XRXE_MAX_FRAME_LEN */
	uint32_t len[LOOPQ_SLOTS];
	uint32_t head, tail; /* free-running */
};

struct daemon {
	struct daemon_opts opts;
	unsigned ifindex;
	uint8_t mac[6];
	uint32_t mtu;
	struct xrxe_xsk *xsk[XRXE_STEER_MAX_QUEUES];
	struct xrxe_evsrc xsk_src[XRXE_STEER_MAX_QUEUES];
	unsigned nxsk;
	struct xrxe_steer_maps maps;
	bool we_attached;
	bool native_refused; /* generic XDP because the driver refused native */
	uint32_t max_path_mtu;
	int epfd;
	struct xrxe_evsrc sig_src;
	bool stop;
	uint64_t now; /* time of the current loop pass */
	/* CPU sharing (spin policy): involuntary context switches seen so
	 * far, when we last looked, when we last saw one grow */
	long nivcsw;
	uint64_t shared_checked, shared_seen;

	struct xrxe_tp *tp;
	struct xrxe_devpage *dp;
	struct xrxe_nl *nl;
	struct xrxe_ctrl *ctrl;

	struct tx_slot tx_slots[TX_SLOTS];
	struct tx_slot *tx_free;
	struct xrxe_tx_frame tx_batch[TX_BATCH];
	unsigned tx_nbatch;
	struct loopq loop;

	struct daemon_counters ctr;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The manual page (xrxed(8) is generated from it by scripts/mkman.py: keep
 * its layout: headings at column 0, text at 4 spaces, option descriptions at
 * 8). */
static void usage(FILE *out)
{
	fprintf(out,
		"NAME\n"
		"    xrxed - the xrxe transport daemon for one network interface\n"
		"\n"
		"SYNOPSIS\n"
		"    xrxed [OPTIONS] IFACE\n"
		"    xrxed --help\n"
		"\n"
		"DESCRIPTION\n"
		"    Attaches the xrxe XDP steering program to IFACE (unless it is attached\n"
		"    already), binds an AF_XDP socket to each receive queue and runs the\n"
		"    InfiniBand transport (RC, UC, UD over RoCEv2, UDP port 4791) and the IB\n"
		"    connection manager for the applications that connect to\n"
		"    " XRXE_RUN_DIR "/IFACE" XRXE_CTRL_SOCK_SUFFIX " (the shims of xrxe(7) do). Every other frame\n"
		"    stays with the kernel. One daemon per interface (" XRXE_RUN_DIR "/IFACE.lock).\n"
		"    Runs in the foreground and logs to stderr (the journal, under systemd).\n"
		"\n"
		"    The steering program joins libxdp's multi-program dispatcher when a\n"
		"    shared bpffs is mounted (see xrxe(8), attach), so other XDP programs\n"
		"    can run beside it; the daemon then attaches in the dispatcher's mode.\n"
		"    A program loaded by a daemon is marked so: a daemon that was killed\n"
		"    leaves it attached ('xrxe status' calls it orphaned), and the next\n"
		"    daemon on IFACE adopts it and removes it when it stops, like one it\n"
		"    loaded itself. A program loaded by 'xrxe attach' stays.\n"
		"\n"
		"SIGNALS\n"
		"    SIGINT, SIGTERM\n"
		"        close every connection (applications see the device fail, rdma_cm\n"
		"        IDs get DEVICE_REMOVAL), remove the socket and, when this daemon\n"
		"        loaded or adopted the steering program, detach it.\n"
		"    SIGUSR1\n"
		"        log the receive counters.\n"
		"\n"
		"    Under systemd (NOTIFY_SOCKET set, Type=notify) the daemon reports\n"
		"    READY=1 once the device is usable (program attached, sockets bound,\n"
		"    control socket listening) and STOPPING=1 when it stops.\n"
		"\n"
		"OPTIONS\n"
		"    -m, --mode native|skb\n"
		"        XDP attach mode when attaching. Without it: native, and generic\n"
		"        (skb) when the driver refuses native XDP (logged once; 'xrxe\n"
		"        status' shows it). With it: exactly that mode, or an error.\n"
		"    -q, --queues N\n"
		"        bind the first N RX queues only (default all).\n"
		"    -k, --keep-xdp\n"
		"        leave the steering program attached on exit (it is then not\n"
		"        marked as the daemon's).\n"
		"    -c, --cc NAME=VALUE\n"
		"        congestion control (DCQCN) parameter, repeatable; names, units\n"
		"        and defaults: 'xrxe cc show IFACE' (e.g. --cc\n"
		"        np_min_time_between_cnps=2, --cc enabled=0). 'xrxe cc set'\n"
		"        changes them while the daemon runs.\n"
		"    --rexmit adaptive|fixed\n"
		"        RC retransmission. adaptive (default): a QP that recovers from a\n"
		"        loss (after a NAK or a timeout), or has at most 16 PSNs\n"
		"        outstanding, resends after a few silent round trips (srtt + 4\n"
		"        rttvar, at least 2 ms, doubling) instead of waiting out the Local\n"
		"        ACK Timeout: a resent packet lost again, or a lost last packet,\n"
		"        draws no NAK. These retries leave retry_cnt alone. fixed: the\n"
		"        Local ACK Timeout only, as rxe.\n"
		"    --selective-repeat off|cm|on\n"
		"        RC selective repeat between xrxe peers (docs/selective-repeat.md):\n"
		"        the receiver keeps packets past a loss, the sender resends only\n"
		"        what is missing. cm (default): agreed per connection through ECE\n"
		"        in the CM's REQ/REP, go-back-N with any other peer. on: also for\n"
		"        QPs connected without the CM (perftest without -R), whose peer\n"
		"        must then be xrxed with --selective-repeat on too. off: never.\n"
		"    -r, --rt-priority PRIO\n"
		"        run under SCHED_FIFO at PRIO (1-99) so that no normal task delays\n"
		"        a frame, an ACK or a CNP: for hosts whose cores busy-polling\n"
		"        applications share with xrxed. It then naps instead of spinning\n"
		"        while its QPs only wait for the network; kernel RT throttling\n"
		"        (kernel.sched_rt_runtime_us) still bounds it. Needs CAP_SYS_NICE\n"
		"        or RLIMIT_RTPRIO.\n"
		"    -v, --verbose\n"
		"        log at debug level (same as XRXE_LOG=debug).\n"
		"    -h, --help\n"
		"        show this page.\n"
		"\n"
		"ENVIRONMENT\n"
		"    XRXE_LOG\n"
		"        error, warn, info (default) or debug.\n"
		"    LIBXDP_BPFFS\n"
		"        the bpffs libxdp keeps its dispatcher's state in (default\n"
		"        /sys/fs/bpf).\n"
		"    NOTIFY_SOCKET\n"
		"        systemd's notification socket (set by systemd for Type=notify).\n"
		"\n"
		"PRIVILEGES\n"
		"    Root, or these capabilities: CAP_NET_ADMIN (attach XDP, bind AF_XDP),\n"
		"    CAP_NET_RAW (AF_XDP sockets), CAP_BPF and CAP_PERFMON (load the\n"
		"    program; libxdp's dispatcher loads it as an freplace program),\n"
		"    CAP_SYS_ADMIN (find attached programs, maps and links by id; mount\n"
		"    bpffs), CAP_IPC_LOCK (AF_XDP memory beyond RLIMIT_MEMLOCK), and\n"
		"    CAP_SYS_NICE for --rt-priority.\n"
		"\n"
		"EXIT STATUS\n"
		"    0  a clean stop\n"
		"    1  a runtime error (the reason is logged)\n"
		"    2  a usage error\n"
		"\n"
		"EXAMPLES\n"
		"    xrxed eth0\n"
		"    xrxed eth0 --cc enabled=0 --rt-priority 20\n"
		"    ip netns exec blue xrxed veth-blue\n"
		"    systemctl start xrxed@eth0\n"
		"\n"
		"SEE ALSO\n"
		"    xrxe(8), xrxe(7), xrxe-impair(8), xdp-loader(8)\n");
}

static int parse_args(int argc, char **argv, struct daemon_opts *o)
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "queues", required_argument, NULL, 'q' },
		{ "keep-xdp", no_argument, NULL, 'k' },
		{ "cc", required_argument, NULL, 'c' },
		{ "rt-priority", required_argument, NULL, 'r' },
		{ "rexmit", required_argument, NULL, 'R' },
		{ "selective-repeat", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*o = (struct daemon_opts){ .mode = XRXE_STEER_MODE_NATIVE };
	xrxe_tp_cc_defaults(&o->cc);
	while ((c = getopt_long(argc, argv, "m:q:kc:r:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': {
			char err[160];

			if (xrxe_cc_param_parse(&o->cc, optarg, err, sizeof(err))) {
				xrxe_err("--cc: %s", err);
				return -EINVAL;
			}
			break;
		}
		case 'm':
			o->mode_given = true;
			if (!strcmp(optarg, "native")) {
				o->mode = XRXE_STEER_MODE_NATIVE;
			} else if (!strcmp(optarg, "skb")) {
				o->mode = XRXE_STEER_MODE_SKB;
			} else {
				xrxe_err("--mode: '%s' is not native or skb", optarg);
				return -EINVAL;
			}
			break;
		case 'q': {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);

			if (*end || !n || n > XRXE_STEER_MAX_QUEUES) {
				xrxe_err("--queues: '%s' is not a number from 1 to %d", optarg,
					 XRXE_STEER_MAX_QUEUES);
				return -EINVAL;
			}
			o->queues = (unsigned)n;
			break;
		}
		case 'k':
			o->keep_xdp = true;
			break;
		case 'R':
			if (!strcmp(optarg, "adaptive")) {
				o->fixed_ack_timeout = false;
			} else if (!strcmp(optarg, "fixed")) {
				o->fixed_ack_timeout = true;
			} else {
				xrxe_err("--rexmit: '%s' is not adaptive or fixed", optarg);
				return -EINVAL;
			}
			break;
		case 'S':
			o->sr_off = !strcmp(optarg, "off");
			o->sr_on = !strcmp(optarg, "on");
			if (!o->sr_off && !o->sr_on && strcmp(optarg, "cm")) {
				xrxe_err("--selective-repeat: '%s' is not off, cm or on", optarg);
				return -EINVAL;
			}
			break;
		case 'r': {
			int max = sched_get_priority_max(SCHED_FIFO);
			char *end;
			long n = strtol(optarg, &end, 10);

			if (*end || n < 1 || n > max) {
				xrxe_err("--rt-priority: '%s' is not a number from 1 to %d", optarg, max);
				return -EINVAL;
			}
			o->rt_priority = (int)n;
			break;
		}
		case 'v':
			xrxe_log_set_level(XRXE_LOG_DEBUG);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'xrxed --help' for more information.\n");
			return -EINVAL;
		}
	}
	if (optind != argc - 1) {
		xrxe_err("%s", optind >= argc ? "missing IFACE" : "too many arguments");
		fprintf(stderr, "Try 'xrxed --help' for more information.\n");
		return -EINVAL;
	}
	o->ifname = argv[optind];
	return 0;
}

static void print_counters(const struct daemon *d)
{
	const struct daemon_counters *c = &d->ctr;

	xrxe_info("%s: rx_ok %" PRIu64 ", tx %" PRIu64 ", looped back %" PRIu64, d->opts.ifname,
		  c->rx_ok, c->tx_frames, c->loop_frames);
	for (unsigned op = 0; op < 256; op++) {
		const struct xrxe_opcode_info *info = xrxe_opcode_info((uint8_t)op);

		if (c->rx_by_opcode[op])
			xrxe_info("%s:   %-32s %" PRIu64, d->opts.ifname, info ? info->name : "?",
				  c->rx_by_opcode[op]);
	}
	for (unsigned e = 1; e < XRXE_PARSE_ERROR_COUNT; e++) {
		if (c->rx_error[e])
			xrxe_info("%s: rx_drop %s %" PRIu64, d->opts.ifname,
				  xrxe_parse_strerror((enum xrxe_parse_error)e), c->rx_error[e]);
	}
}

/* --- TX: the core's buffers are UMEM chunks of the first queue's socket ----- */

static void tx_flush_batch(struct daemon *d)
{
	struct xrxe_xsk *xsk = d->xsk[0];
	int r;

	if (!d->tx_nbatch)
		return;
	r = xrxe_xsk_tx_submit(xsk, d->tx_batch, d->tx_nbatch);
	if (r == -ENOBUFS) {
		/* TX ring full: let the kernel drain it, then try once more. */
		xrxe_xsk_tx_flush(xsk);
		r = xrxe_xsk_tx_submit(xsk, d->tx_batch, d->tx_nbatch);
	}
	if (r == -ENOBUFS) {
		d->ctr.tx_ring_full++;
		return; /* keep the batch for the next pass */
	}
	if (r < 0) {
		/* A frame we did not reserve: a bug; give the chunks back. */
		d->ctr.tx_bad += d->tx_nbatch;
		for (unsigned i = 0; i < d->tx_nbatch; i++)
			xrxe_xsk_tx_abort(xsk, &d->tx_batch[i]);
	} else {
		d->ctr.tx_frames += d->tx_nbatch;
	}
	d->tx_nbatch = 0;
}

static int tp_tx_reserve(void *user, uint32_t len, struct xrxe_tp_txbuf *buf)
{
	struct daemon *d = user;
	struct tx_slot *s = d->tx_free;
	int err;

	if (d->tx_nbatch == TX_BATCH)
		tx_flush_batch(d);
	if (!s || d->tx_nbatch == TX_BATCH)
		return -ENOBUFS;
	err = xrxe_xsk_tx_reserve(d->xsk[0], len, &s->f);
	if (err == -ENOBUFS) {
		/* Chunks come back with TX completions: submit what is batched,
		 * kick and reap, then try again once. */
		tx_flush_batch(d);
		xrxe_xsk_tx_flush(d->xsk[0]);
		err = xrxe_xsk_tx_reserve(d->xsk[0], len, &s->f);
	}
	if (err)
		return err;
	d->tx_free = s->next;
	memcpy(buf->frag, s->f.frag, sizeof(buf->frag));
	buf->nfrags = s->f.nfrags;
	buf->len = len;
	buf->priv = s;
	return 0;
}

/* Our own MAC as destination means the AV resolved to one of our GIDs
 * (netlink.c): such frames are looped back and never reach the wire. */
static void loop_push(struct daemon *d, const struct xrxe_tx_frame *f)
{
	struct loopq *q = &d->loop;
	uint8_t *dst;
	uint32_t off = 0;

	if (q->tail - q->head >= LOOPQ_SLOTS || f->len > XRXE_MAX_FRAME_LEN) {
		/* Like a full wire: the transport retransmits. */
		d->ctr.loop_drops++;
		return;
	}
	dst = q->buf + (size_t)(q->tail % LOOPQ_SLOTS) * XRXE_MAX_FRAME_LEN;
	for (unsigned i = 0; i < f->nfrags; i++) {
		memcpy(dst + off, f->frag[i].data, f->frag[i].len);
		off += f->frag[i].len;
	}
	q->len[q->tail % LOOPQ_SLOTS] = off;
	q->tail++;
}

static void tp_tx_submit(void *user, struct xrxe_tp_txbuf *buf)
{
	struct daemon *d = user;
	struct tx_slot *s = buf->priv;
	struct xrxe_tx_frame f = s->f;
	unsigned used = buf->nfrags;

	s->next = d->tx_free;
	d->tx_free = s;
	/* The core may have trimmed the frame: fewer pieces, shorter last one.
	 * Chunks it did not use go straight back. */
	if (used > f.nfrags || !used) {
		d->ctr.tx_bad++;
		xrxe_xsk_tx_abort(d->xsk[0], &f);
		return;
	}
	if (used < f.nfrags) {
		struct xrxe_tx_frame extra = { .nfrags = (uint8_t)(f.nfrags - used) };

		for (unsigned i = used; i < f.nfrags; i++)
			extra.addr[i - used] = f.addr[i];
		xrxe_xsk_tx_abort(d->xsk[0], &extra);
		f.nfrags = (uint8_t)used;
	}
	f.len = 0;
	for (unsigned i = 0; i < used; i++) {
		f.frag[i].len = buf->frag[i].len;
		f.len += f.frag[i].len;
	}
	if (f.frag[0].len >= XRXE_ETH_ALEN && !memcmp(f.frag[0].data, d->mac, XRXE_ETH_ALEN)) {
		loop_push(d, &f);
		xrxe_xsk_tx_abort(d->xsk[0], &f);
		return;
	}
	/* Multicast (group bit of the destination MAC): to the wire, and a copy
	 * to our own QPs attached to the group, as IP multicast loops back to
	 * local members (and rxe's kernel socket does). */
	if (f.frag[0].len >= XRXE_ETH_ALEN && (f.frag[0].data[0] & 1))
		loop_push(d, &f);
	if (d->tx_nbatch == TX_BATCH)
		tx_flush_batch(d);
	if (d->tx_nbatch == TX_BATCH) {
		/* Cannot happen (reserve refuses when the batch is stuck full),
		 * but never overrun the array. */
		d->ctr.tx_ring_full++;
		xrxe_xsk_tx_abort(d->xsk[0], &f);
		return;
	}
	d->tx_batch[d->tx_nbatch++] = f;
}

static void tp_cq_event(void *user, void *cq_user)
{
	struct daemon *d = user;

	if (d->ctrl)
		xrxe_ctrl_cq_event(d->ctrl, cq_user);
}

static void tp_async_event(void *user, enum ibv_event_type type, void *obj_user)
{
	struct daemon *d = user;

	if (d->ctrl)
		xrxe_ctrl_async_event(d->ctrl, type, obj_user);
}

/* QP1: connection management MADs go to the CM (ctrl_cm.c). */
static void tp_gsi_rx(void *user, const struct xrxe_pkt *pkt)
{
	struct daemon *d = user;

	if (d->ctrl)
		xrxe_ctrl_cm_rx(d->ctrl, pkt, d->now);
}

static const struct xrxe_tp_ops tp_ops = {
	.tx_reserve = tp_tx_reserve,
	.tx_submit = tp_tx_submit,
	.cq_event = tp_cq_event,
	.async_event = tp_async_event,
	.gsi_rx = tp_gsi_rx,
};

static void port_event(void *user, enum ibv_event_type ev)
{
	struct daemon *d = user;

	if (d->ctrl)
		xrxe_ctrl_port_event(d->ctrl, ev);
}

/* --- RX -------------------------------------------------------------------- */

/* The IP ECN bits of a received frame (Ethernet, one optional VLAN tag),
 * or -1 when it is not IP. Every frame on our sockets is RoCEv2 (the XDP
 * program steers nothing else), so counting CE here, before any check of
 * ours, counts what XDP's ecn_ce counts. */
static int frame_ecn(const uint8_t *f, uint32_t len)
{
	uint32_t off = 12;
	uint16_t type;

	if (len < off + 2)
		return -1;
	type = (uint16_t)(f[off] << 8 | f[off + 1]);
	if (type == 0x8100 || type == 0x88a8) {
		off += 4;
		if (len < off + 2)
			return -1;
		type = (uint16_t)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	if (len < off + 2)
		return -1;
	if (type == 0x0800)
		return f[off + 1] & 3;
	if (type == 0x86dd)
		return (f[off + 1] >> 4) & 3;
	return -1;
}

/* Verify one burst and hand the good frames to the core; returns frames seen. */
static void count_rx_lag(struct daemon *d, uint64_t lag_ns)
{
	unsigned b = 0;

	for (uint64_t limit = 10 * NS_PER_US; b < RX_LAG_BUCKETS - 1 && lag_ns > limit; limit *= 10)
		b++;
	d->ctr.rx_lag[b]++;
	if (lag_ns > d->ctr.rx_lag_max_ns)
		d->ctr.rx_lag_max_ns = lag_ns;
}

static unsigned poll_queue(struct daemon *d, struct xrxe_xsk *xsk)
{
	struct xrxe_rx_frame frames[RX_BURST];
	unsigned n = xrxe_xsk_rx_burst(xsk, frames, RX_BURST);

	for (unsigned i = 0; i < n; i++) {
		struct xrxe_pkt pkt;
		int err = xrxe_parse_frags(frames[i].frag, frames[i].nfrags, 0, &pkt);

		if (frames[i].nfrags && frame_ecn(frames[i].frag[0].data, frames[i].frag[0].len) == 3)
			d->ctr.ecn_ce_rx++; /* DCQCN: CE as XDP counts it */
		if (err) {
			d->ctr.rx_error[err]++;
			xrxe_dbg("rx drop: %s", xrxe_parse_strerror((enum xrxe_parse_error)err));
			continue;
		}
		d->ctr.rx_ok++;
		d->ctr.rx_by_opcode[pkt.opcode]++;
		pkt.rx_ns = frames[i].rx_ns;
		/* a frame stamped after this pass read the clock: no lag */
		if (pkt.rx_ns)
			count_rx_lag(d, pkt.rx_ns < d->now ? d->now - pkt.rx_ns : 0);
		xrxe_tp_rx(d->tp, &pkt, d->now);
	}
	if (n)
		xrxe_xsk_rx_release(xsk, frames, n);
	return n;
}

/* Frames the core sent to ourselves, back into the core. Only those queued
 * before this call: what it sends in reply waits for the next pass. */
static unsigned loop_drain(struct daemon *d)
{
	struct loopq *q = &d->loop;
	uint32_t n = q->tail - q->head;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t slot = q->head % LOOPQ_SLOTS;
		struct xrxe_pkt pkt;
		int err;

		/* We built these frames a moment ago: the ICRC is ours. */
		err = xrxe_parse(q->buf + (size_t)slot * XRXE_MAX_FRAME_LEN, q->len[slot],
				 XRXE_PARSE_SKIP_ICRC, &pkt);
		if (err) {
			d->ctr.loop_parse_errors++;
		} else {
			d->ctr.loop_frames++;
			xrxe_tp_rx(d->tp, &pkt, d->now);
		}
		q->head++;
	}
	return n;
}

/* --- stats (XRXE_CTRL_STATS) ------------------------------------------------ */

/* A tiny emitter for both formats: text "section.name value" lines, or one
 * JSON object of sections. */
struct emit {
	FILE *out;
	bool json;
	bool first_section, first_key;
	const char *section;
};

static void emit_section(struct emit *e, const char *name)
{
	if (e->json) {
		if (!e->first_key)
			fputs("}", e->out);
		fprintf(e->out, "%s\"%s\":{", e->first_section ? "" : ",", name);
	}
	e->first_section = false;
	e->first_key = true;
	e->section = name;
}

static void emit_u64(struct emit *e, const char *name, uint64_t v)
{
	if (e->json)
		fprintf(e->out, "%s\"%s\":%" PRIu64, e->first_key ? "" : ",", name, v);
	else
		fprintf(e->out, "%s.%s %" PRIu64 "\n", e->section, name, v);
	e->first_key = false;
}

static void emit_str(struct emit *e, const char *name, const char *v)
{
	if (e->json)
		fprintf(e->out, "%s\"%s\":\"%s\"", e->first_key ? "" : ",", name, v);
	else
		fprintf(e->out, "%s.%s %s\n", e->section, name, v);
	e->first_key = false;
}

static const char *qp_type_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
		return "RC";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_UD:
		return "UD";
	default:
		return "?";
	}
}

static const char *qp_state_name(enum ibv_qp_state s)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS",	   [IBV_QPS_SQD] = "SQD",   [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) && names[s] ? names[s] : "?";
}

struct qp_emit {
	FILE *out;
	bool json;
	unsigned n;
};

static int emit_qp(void *arg, const struct xrxe_tp_qp_info *q)
{
	struct qp_emit *e = arg;
	const char *fmt_json =
		"%s{\"qpn\":%u,\"type\":\"%s\",\"state\":\"%s\",\"dest_qpn\":%u,\"sq_psn\":%u,"
		"\"acked_psn\":%u,\"rq_psn\":%u,\"tx_packets\":%" PRIu64 ",\"rx_packets\":%" PRIu64
		",\"tx_bytes\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"retransmits\":%" PRIu64
		",\"timeouts\":%" PRIu64 ",\"fast_retransmits\":%" PRIu64 ",\"srtt_us\":%.1f"
		",\"rnr_naks_rcvd\":%" PRIu64 ",\"rnr_naks_sent\":%" PRIu64
		",\"seq_naks_rcvd\":%" PRIu64 ",\"seq_naks_sent\":%" PRIu64 ",\"duplicates\":%" PRIu64;
	const char *fmt_text =
		"%s%-8u %-4s %-5s %8u %8u %8u %8u %10" PRIu64 " %10" PRIu64 " %12" PRIu64
		" %12" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %8.1f %5" PRIu64 "/%-5" PRIu64
		" %5" PRIu64 "/%-5" PRIu64 " %6" PRIu64;

	fprintf(e->out, e->json ? fmt_json : fmt_text, e->json && e->n ? "," : "", q->qpn,
		qp_type_name(q->qp_type), qp_state_name(q->state), q->dest_qpn, q->sq_psn,
		q->acked_psn, q->rq_psn, q->tx_packets, q->rx_packets, q->tx_bytes, q->rx_bytes,
		q->retransmits, q->timeouts, q->fast_retransmits, q->srtt_ns / 1e3, q->rnr_naks_rcvd,
		q->rnr_naks_sent, q->seq_naks_rcvd, q->seq_naks_sent, q->duplicates);
	/* loss recovery (src/transport/rto.c) */
	if (e->json)
		fprintf(e->out,
			",\"resent_packets\":%" PRIu64 ",\"out_of_sequence\":%" PRIu64
			",\"recoveries\":%" PRIu64 ",\"probes\":%" PRIu64 ",\"cwnd\":%u"
			",\"selective_repeat\":%s,\"ooo_held\":%" PRIu64,
			q->resent_packets, q->out_of_sequence, q->recoveries, q->probes,
			q->cwnd, q->selective_repeat ? "true" : "false", q->ooo_held);
	/* DCQCN: rates in Mb/s, alpha as a fraction (alpha_fp: the mlx5
	 * 10-bit fixed point it is kept in) */
	if (e->json)
		fprintf(e->out,
			",\"cc\":{\"rate_mbps\":%.3f,\"target_mbps\":%.3f,\"alpha\":%.4f,"
			"\"alpha_fp\":%u,\"limited\":%s,\"cnps_sent\":%" PRIu64
			",\"cnps_handled\":%" PRIu64 ",\"ecn_marked\":%" PRIu64 "}}",
			q->cc_rate_bps / 1e6, q->cc_target_bps / 1e6, q->cc_alpha / 1024.0,
			q->cc_alpha, q->cc_limited ? "true" : "false", q->cnps_sent,
			q->cnps_handled, q->ecn_marked);
	else
		fprintf(e->out, " %10.1f%s %10.1f %6.4f %6" PRIu64 "/%-6" PRIu64 " %7" PRIu64 "\n",
			q->cc_rate_bps / 1e6, q->cc_limited ? "*" : " ", q->cc_target_bps / 1e6,
			q->cc_alpha / 1024.0, q->cnps_sent, q->cnps_handled, q->ecn_marked);
	e->n++;
	return 0;
}

static void stats_qps(struct daemon *d, FILE *out, bool json)
{
	struct qp_emit e = { .out = out, .json = json };

	if (json)
		fprintf(out, "{\"interface\":\"%s\",\"qps\":[", d->opts.ifname);
	else
		fprintf(out, "%-8s %-4s %-5s %8s %8s %8s %8s %10s %10s %12s %12s %7s %7s %7s %8s"
			     " %11s %11s %6s %11s %10s %6s %13s %7s\n",
			"qpn", "type", "state", "dest_qpn", "sq_psn", "acked", "rq_psn", "tx_pkts",
			"rx_pkts", "tx_bytes", "rx_bytes", "rexmit", "timeout", "fast", "srtt_us",
			"rnr rcv/snt", "seq rcv/snt", "dups", "rate Mb/s", "target", "alpha",
			"cnp snt/hdl", "ecn_ce");
	xrxe_tp_qp_foreach(d->tp, emit_qp, &e);
	if (json)
		fputs("]}\n", out);
}

static void daemon_stats(void *user, FILE *out, unsigned flags)
{
	struct daemon *d = user;
	bool json = flags & XRXE_STATS_F_JSON;
	struct emit e = { .out = out, .json = json, .first_section = true, .first_key = true };
	struct xrxe_steer_stat steer[XRXE_STEER_COUNTER_COUNT];
	struct xrxe_tp_stats tps;
	struct xrxe_ctrl_stats cs;
	struct xrxe_nl_stats ns;
	char name[64];

	if (flags & XRXE_STATS_F_QP) {
		stats_qps(d, out, json);
		return;
	}
	if (json)
		fputs("{", out);
	emit_section(&e, "port");
	emit_str(&e, "interface", d->opts.ifname);
	emit_str(&e, "state", xrxe_devpage_port_active(d->dp) ? "ACTIVE" : "DOWN");
	emit_u64(&e, "active_mtu",
		 xrxe_ib_mtu_bytes(xrxe_devpage_page(d->dp)->port_attr.active_mtu));
	emit_u64(&e, "gids", xrxe_devpage_gid_count(d->dp));
	/* The fallbacks a kernel or driver forced (each also logged once). */
	emit_str(&e, "xdp_mode", xrxe_steer_mode_name(d->opts.mode));
	emit_u64(&e, "xdp_native_refused", d->native_refused);
	emit_u64(&e, "xsk_multi_buffer", d->nxsk && xrxe_xsk_is_multi_buffer(d->xsk[0]));
	emit_u64(&e, "max_path_mtu", d->max_path_mtu);

	if (xrxe_steer_read_stats(&d->maps, steer) == 0) {
		emit_section(&e, "xdp");
		for (int i = 0; i < XRXE_STEER_COUNTER_COUNT; i++) {
			const char *cn = xrxe_steer_counter_name((enum xrxe_steer_counter)i);

			snprintf(name, sizeof(name), "%s_packets", cn);
			emit_u64(&e, name, steer[i].packets);
			snprintf(name, sizeof(name), "%s_bytes", cn);
			emit_u64(&e, name, steer[i].bytes);
		}
	}
	for (unsigned q = 0; q < d->nxsk; q++) {
		struct xrxe_xsk_stats xs;

		xrxe_xsk_get_stats(d->xsk[q], &xs);
		snprintf(name, sizeof(name), "xsk%u", q);
		emit_section(&e, name);
		emit_u64(&e, "rx_frames", xs.rx_frames);
		emit_u64(&e, "rx_stamped", xs.rx_stamped);
		emit_u64(&e, "rx_bytes", xs.rx_bytes);
		emit_u64(&e, "rx_dropped_too_many_frags", xs.rx_dropped_too_many_frags);
		emit_u64(&e, "rx_bad_desc", xs.rx_bad_desc);
		emit_u64(&e, "tx_frames", xs.tx_frames);
		emit_u64(&e, "tx_bytes", xs.tx_bytes);
		emit_u64(&e, "tx_no_frames", xs.tx_no_frames);
		emit_u64(&e, "tx_kicks", xs.tx_kicks);
		emit_u64(&e, "tx_kick_errors", xs.tx_kick_errors);
		emit_u64(&e, "k_rx_dropped", xs.k_rx_dropped);
		emit_u64(&e, "k_rx_invalid_descs", xs.k_rx_invalid_descs);
		emit_u64(&e, "k_tx_invalid_descs", xs.k_tx_invalid_descs);
		emit_u64(&e, "k_rx_ring_full", xs.k_rx_ring_full);
		emit_u64(&e, "k_rx_fill_ring_empty", xs.k_rx_fill_ring_empty);
		emit_u64(&e, "k_tx_ring_empty", xs.k_tx_ring_empty);
	}

	emit_section(&e, "daemon");
	emit_u64(&e, "rx_ok", d->ctr.rx_ok);
	for (unsigned i = 1; i < XRXE_PARSE_ERROR_COUNT; i++) {
		snprintf(name, sizeof(name), "rx_drop_%s",
			 xrxe_parse_strerror((enum xrxe_parse_error)i));
		for (char *p = name; *p; p++)
			if (*p == '-')
				*p = '_';
		emit_u64(&e, name, d->ctr.rx_error[i]);
	}
	emit_u64(&e, "tx_frames", d->ctr.tx_frames);
	emit_u64(&e, "tx_ring_full", d->ctr.tx_ring_full);
	emit_u64(&e, "tx_bad", d->ctr.tx_bad);
	emit_u64(&e, "loop_frames", d->ctr.loop_frames);
	emit_u64(&e, "loop_drops", d->ctr.loop_drops);
	emit_u64(&e, "loop_parse_errors", d->ctr.loop_parse_errors);
	emit_u64(&e, "sleeps", d->ctr.sleeps);
	emit_u64(&e, "naps", d->ctr.naps);
	emit_u64(&e, "rt_priority", (uint64_t)d->opts.rt_priority);
	emit_u64(&e, "shared_cpu_seen", d->ctr.shared_cpu_seen);
	{
		static const char *const lag_name[RX_LAG_BUCKETS] = {
			"rx_lag_le_10us", "rx_lag_le_100us", "rx_lag_le_1ms", "rx_lag_le_10ms",
			"rx_lag_gt_10ms",
		};

		for (unsigned i = 0; i < RX_LAG_BUCKETS; i++)
			emit_u64(&e, lag_name[i], d->ctr.rx_lag[i]);
		emit_u64(&e, "rx_lag_max_ns", d->ctr.rx_lag_max_ns);
	}

	xrxe_tp_get_stats(d->tp, &tps);
	emit_section(&e, "transport");
	emit_u64(&e, "rx_packets", tps.rx_packets);
	emit_u64(&e, "tx_packets", tps.tx_packets);
	emit_u64(&e, "rx_drop_no_qp", tps.rx_drop_no_qp);
	emit_u64(&e, "rx_drop_bad_state", tps.rx_drop_bad_state);
	emit_u64(&e, "rx_drop_bad_pkey", tps.rx_drop_bad_pkey);
	emit_u64(&e, "rx_drop_bad_qkey", tps.rx_drop_bad_qkey);
	emit_u64(&e, "rx_drop_bad_opcode", tps.rx_drop_bad_opcode);
	emit_u64(&e, "rx_drop_bad_av", tps.rx_drop_bad_av);
	emit_u64(&e, "rx_drop_no_mcast", tps.rx_drop_no_mcast);
	emit_u64(&e, "gsi_rx", tps.gsi_rx);
	emit_u64(&e, "gsi_tx", tps.gsi_tx);
	emit_u64(&e, "rx_drop_gsi", tps.rx_drop_gsi);
	emit_u64(&e, "tx_no_buffer", tps.tx_no_buffer);
	emit_u64(&e, "qps", tps.qps);
	emit_u64(&e, "cqs", tps.cqs);
	emit_u64(&e, "mrs", tps.mrs);
	emit_u64(&e, "pds", tps.pds);
	emit_u64(&e, "ahs", tps.ahs);
	emit_u64(&e, "srqs", tps.srqs);
	emit_u64(&e, "mcast_grps", tps.mcast_grps);

	/* congestion control: ecn_ce_rx is the daemon's count of every CE
	 * frame received (the XDP program's ecn_ce counts the same frames);
	 * ecn_ce_qp those that reached a QP */
	struct xrxe_tp_cc_params ccp;

	xrxe_tp_cc_get(d->tp, &ccp);
	emit_section(&e, "cc");
	emit_u64(&e, "enabled", ccp.enabled);
	emit_u64(&e, "line_rate_mbps", xrxe_tp_cc_max_bps(d->tp) / 1000000);
	emit_u64(&e, "cnp_sent", tps.cnp_sent);
	emit_u64(&e, "cnp_rcvd", tps.cnp_rcvd);
	emit_u64(&e, "ecn_ce_rx", d->ctr.ecn_ce_rx);
	emit_u64(&e, "ecn_ce_qp", tps.ecn_ce_qp);
	emit_u64(&e, "cnp_suppressed", tps.cnp_suppressed);
	emit_u64(&e, "cnp_rcvd_no_qp", tps.cnp_rcvd_no_qp);
	emit_u64(&e, "paced", tps.paced);

	xrxe_ctrl_get_stats(d->ctrl, &cs);
	emit_section(&e, "ctrl");
	emit_u64(&e, "conns", cs.conns);
	emit_u64(&e, "accepted", cs.accepted);
	emit_u64(&e, "closed", cs.closed);
	emit_u64(&e, "refused", cs.refused);
	emit_u64(&e, "requests", cs.requests);
	emit_u64(&e, "failed_requests", cs.failed_requests);
	emit_u64(&e, "bad_requests", cs.bad_requests);
	emit_u64(&e, "cq_events", cs.cq_events);
	emit_u64(&e, "cq_event_drops", cs.cq_event_drops);
	emit_u64(&e, "async_events", cs.async_events);
	emit_u64(&e, "async_drops", cs.async_drops);
	emit_u64(&e, "pds", cs.pds);
	emit_u64(&e, "mrs", cs.mrs);
	emit_u64(&e, "cqs", cs.cqs);
	emit_u64(&e, "qps", cs.qps);
	emit_u64(&e, "ahs", cs.ahs);
	emit_u64(&e, "channels", cs.channels);
	emit_u64(&e, "srqs", cs.srqs);

	xrxe_nl_get_stats(d->nl, &ns);
	emit_section(&e, "netlink");
	emit_u64(&e, "events", ns.events);
	emit_u64(&e, "resyncs", ns.resyncs);
	emit_u64(&e, "resolves", ns.resolves);
	emit_u64(&e, "resolve_again", ns.resolve_again);
	emit_u64(&e, "neigh_probes", ns.neigh_probes);
	if (json)
		fputs("}}\n", out);
}

/* --- event loop ------------------------------------------------------------- */

/* systemd's readiness protocol (sd_notify(3)) without libsystemd: one
 * datagram to $NOTIFY_SOCKET, a path or, with a leading '@', an abstract
 * name. Nothing happens when the variable is unset (not under systemd). */
static void notify_systemd(const char *msg)
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

static void signal_event(struct xrxe_evsrc *src, uint32_t events)
{
	struct daemon *d = (struct daemon *)((char *)src - offsetof(struct daemon, sig_src));
	struct signalfd_siginfo si;

	(void)events;
	while (read(src->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			print_counters(d);
			continue;
		}
		xrxe_info("%s: signal %u, stopping", d->opts.ifname, si.ssi_signo);
		if (!d->stop)
			notify_systemd("STOPPING=1");
		d->stop = true;
	}
}

static void xsk_event(struct xrxe_evsrc *src, uint32_t events)
{
	/* Only a wake-up: the loop drains every queue on each pass. */
	(void)src;
	(void)events;
}

/* One epoll round; timeout NULL blocks. Dispatches every ready source. */
static int poll_events(struct daemon *d, const struct timespec *timeout)
{
	struct epoll_event ev[MAX_EVENTS];
	int n = epoll_pwait2(d->epfd, ev, MAX_EVENTS, timeout, NULL);

	if (n < 0) {
		if (errno == EINTR)
			return 0;
		xrxe_err("epoll_wait: %s", strerror(errno));
		return -errno;
	}
	for (int i = 0; i < n; i++) {
		struct xrxe_evsrc *src = ev[i].data.ptr;

		src->fn(src, ev[i].events);
	}
	return n;
}

static void ctrl_tick(struct daemon *d)
{
	uint64_t now = mono_ns();

	if (xrxe_ctrl_next_deadline(d->ctrl) <= now)
		xrxe_ctrl_tick(d->ctrl, now);
}

static bool tx_pending(const struct daemon *d)
{
	return d->tx_nbatch || xrxe_xsk_tx_pending(d->xsk[0]);
}

/* What sleep_once did (or a negative errno). */
enum { WORK_FOUND, SLEPT, NAPPED };

/* epoll_wait until an event, the transport's or the control layer's next
 * deadline, the next TX reap, or limit, whichever comes first. */
static int wait_events(struct daemon *d, uint64_t now, uint64_t limit)
{
	uint64_t deadline = limit, t;
	struct timespec ts;

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
	return poll_events(d, &ts);
}

/* --rt-priority: a QP has unstarted WQEs it cannot send yet (window, ACK):
 * sleep RT_NAP_NS, or less if a deadline or a frame comes first. Not a
 * doorbell sleep: daemon_sleeping stays 0, the nap is that short. */
static int nap(struct daemon *d)
{
	uint64_t now = mono_ns();
	int ret;

	d->ctr.naps++;
	ret = wait_events(d, now, now + RT_NAP_NS);
	ctrl_tick(d);
	return ret < 0 ? ret : NAPPED;
}

/* abi.h doorbell protocol, daemon side: publish "sleeping", full fence (the
 * shim fences between its producer store and its load of the flag: one of
 * us sees the other), re-check the send queues, then sleep. */
static int sleep_once(struct daemon *d)
{
	struct xrxe_dev_page *page = xrxe_devpage_page(d->dp);
	uint64_t now;
	int ret;

	__atomic_store_n(&page->daemon_sleeping, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (d->loop.tail != d->loop.head || d->tx_nbatch) {
		__atomic_store_n(&page->daemon_sleeping, 0, __ATOMIC_RELAXED);
		d->ctr.wakeups_doorbell_race++;
		return WORK_FOUND;
	}
	if (xrxe_tp_sq_pending(d->tp)) {
		__atomic_store_n(&page->daemon_sleeping, 0, __ATOMIC_RELAXED);
		if (d->opts.rt_priority)
			return nap(d);
		d->ctr.wakeups_doorbell_race++;
		return WORK_FOUND;
	}
	now = mono_ns();
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

static int run_loop(struct daemon *d)
{
	static const struct timespec zero = { 0 };
	uint64_t last_work, last_events, last_yield;

	last_work = last_events = last_yield = mono_ns();
	while (!d->stop) {
		bool work = false;

		d->now = mono_ns();
		for (unsigned q = 0; q < d->nxsk; q++)
			work |= poll_queue(d, d->xsk[q]) > 0;
		work |= loop_drain(d) > 0;
		work |= xrxe_tp_poll(d->tp, d->now);
		tx_flush_batch(d);
		if (tx_pending(d))
			xrxe_xsk_tx_flush(d->xsk[0]);

		if (work) {
			last_work = d->now;
			if (d->now - last_events >= EVENTS_EVERY_NS) {
				if (poll_events(d, &zero) < 0)
					return -1;
				ctrl_tick(d);
				last_events = d->now;
			}
			if (d->now - last_yield >= YIELD_EVERY_NS) {
				sched_yield();
				last_yield = d->now;
			}
			continue;
		}
		if (d->now - last_work < (cpu_shared(d) ? SPIN_SHARED_NS : SPIN_NS))
			continue;
		switch (sleep_once(d)) {
		case WORK_FOUND:
		case SLEPT:
			last_work = last_events = last_yield = mono_ns();
			break;
		case NAPPED: /* nothing new yet: nap again next pass, no spin window */
			last_events = last_yield = mono_ns();
			break;
		default:
			return -1;
		}
	}
	return 0;
}

/* --- setup and teardown -------------------------------------------------------- */

/* --rt-priority: SCHED_FIFO for this thread. SCHED_RESET_ON_FORK: nothing we
 * might start inherits it. */
static int set_rt_priority(const char *ifname, int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0) {
		int err = -errno;

		xrxe_err("%s: --rt-priority %d: %s%s", ifname, prio, strerror(errno),
			 errno == EPERM ? " (needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least "
					  "PRIO, e.g. `ulimit -r`)"
					: "");
		return err;
	}
	xrxe_info("%s: SCHED_FIFO priority %d", ifname, prio);
	return 0;
}

static int epoll_add(int epfd, struct xrxe_evsrc *src)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, src->fd, &ev) ? -errno : 0;
}

static void daemon_teardown(struct daemon *d)
{
	/* Connections first: their QPs stop before the I/O they use goes. */
	xrxe_ctrl_close(d->ctrl);
	d->ctrl = NULL;
	xrxe_nl_close(d->nl);
	d->nl = NULL;
	xrxe_devpage_destroy(d->dp);
	d->dp = NULL;
	if (d->tp)
		xrxe_tp_destroy(d->tp);
	d->tp = NULL;
	for (unsigned q = 0; q < d->nxsk; q++)
		xrxe_xsk_close(d->xsk[q]);
	d->nxsk = 0;
	xrxe_steer_close_maps(&d->maps);
	if (d->we_attached && !d->opts.keep_xdp && xrxe_steer_detach(d->opts.ifname) == 0)
		xrxe_info("%s: XDP program detached", d->opts.ifname);
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->sig_src.fd >= 0)
		close(d->sig_src.fd);
	free(d->loop.buf);
	d->loop.buf = NULL;
}

/* Largest IB path MTU both the netdev (MTU - 80, rxe) and the AF_XDP frame
 * size carry. */
static uint32_t path_mtu_cap(const struct daemon *d)
{
	uint32_t frame = xrxe_xsk_max_frame_len(d->xsk[0]);
	uint32_t ip_mtu = frame > XRXE_ETH_HLEN + XRXE_VLAN_HLEN
				  ? frame - XRXE_ETH_HLEN - XRXE_VLAN_HLEN
				  : 0;
	uint32_t m = xrxe_ib_mtu_bytes(xrxe_devpage_ib_mtu(d->mtu));

	while (m > 256 && m + 80 > ip_mtu)
		m /= 2;
	return m;
}

static void raise_nofile(void)
{
	struct rlimit rl;

	/* Every connection holds a few descriptors (socket, doorbell, memfd,
	 * pipes): take the hard limit rather than the default 1024. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int daemon_setup(struct daemon *d)
{
	unsigned nqueues;
	bool already = false, adopt = false;
	sigset_t mask;
	int err;

	d->epfd = d->sig_src.fd = -1;
	d->maps.stats_fd = d->maps.xsks_fd = -1;

	/* Writing to a pipe or socket whose reader is gone must be an error
	 * return, not the end of the daemon. */
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	/* Our sleeps end at microsecond deadlines (the pacer's next release, a
	 * retransmission timer): the default 50 µs timer slack would let the
	 * kernel wake us up to 50 µs late, longer than a 4 KiB frame's gap at
	 * 1 Gbit/s. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) < 0)
		xrxe_warn("PR_SET_TIMERSLACK: %s", strerror(errno));
	if (d->opts.rt_priority) {
		err = set_rt_priority(d->opts.ifname, d->opts.rt_priority);
		if (err)
			return err;
	}

	d->ifindex = if_nametoindex(d->opts.ifname);
	err = xrxe_netdev_rx_queues(d->opts.ifname, &nqueues);
	if (err)
		return err;
	err = xrxe_netdev_mtu(d->opts.ifname, &d->mtu);
	if (err)
		return err;
	err = xrxe_netdev_mac(d->opts.ifname, d->mac);
	if (err)
		return err;
	if (d->opts.queues && d->opts.queues < nqueues)
		nqueues = d->opts.queues;
	if (nqueues > XRXE_STEER_MAX_QUEUES)
		nqueues = XRXE_STEER_MAX_QUEUES;

	/* Whoever attached our program, in whatever mode, it steers for us: use it
	 * as it is rather than fail over the mode. */
	struct xrxe_steer_state state;

	err = xrxe_steer_query(d->opts.ifname, &state);
	if (err)
		return err;
	if (state.attached && state.ours) {
		already = true;
		d->opts.mode = state.mode;
		d->native_refused = state.native_refused;
		/* Loaded by an xrxed (a killed one: the lock below proves no other
		 * runs): ours to remove when we stop, once we hold the lock. */
		adopt = state.by_daemon && !d->opts.keep_xdp;
	} else {
		/* libxdp's dispatcher runs every program in one mode: join it in
		 * the mode it has. */
		struct xrxe_steer_attach_opts ao = {
			.mode = state.dispatcher ? state.mode : d->opts.mode,
			.by_daemon = !d->opts.keep_xdp,
		};

		if (state.dispatcher && ao.mode != d->opts.mode)
			xrxe_info("%s: joining libxdp's dispatcher in its %s mode", d->opts.ifname,
				  xrxe_steer_mode_name(ao.mode));
		d->opts.mode = ao.mode;
		err = xrxe_steer_attach_with(d->opts.ifname, &ao, &already);
		/* Without --mode, a driver that refuses native XDP (virtio_net
		 * at an MTU it cannot map, a device without XDP support) gets
		 * generic XDP, which works on every interface: said once here,
		 * and marked in the program for `xrxe status`. Missing
		 * privileges, a foreign program or a missing interface are no
		 * reason to try again. */
		if (err && ao.mode == XRXE_STEER_MODE_NATIVE && !d->opts.mode_given &&
		    err != -EPERM && err != -EACCES && err != -EBUSY && err != -ENODEV) {
			xrxe_warn("%s: native XDP refused (%s, above); falling back to generic (skb) "
				  "XDP, slower (--mode native makes this an error)", d->opts.ifname,
				  strerror(-err));
			ao.mode = d->opts.mode = XRXE_STEER_MODE_SKB;
			ao.native_refused = d->native_refused = true;
			err = xrxe_steer_attach_with(d->opts.ifname, &ao, &already);
		}
		if (err)
			return err;
	}
	d->we_attached = !already;
	err = xrxe_steer_open_maps(d->opts.ifname, &d->maps);
	if (err)
		goto err_out;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	d->sig_src.fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d->sig_src.fn = signal_event;
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sig_src.fd < 0 || d->epfd < 0) {
		err = -errno;
		xrxe_err("signalfd/epoll: %s", strerror(errno));
		goto err_out;
	}
	err = epoll_add(d->epfd, &d->sig_src);
	if (err)
		goto err_out;

	for (unsigned q = 0; q < nqueues; q++) {
		struct xrxe_xsk_config cfg = {
			.ifname = d->opts.ifname,
			.queue_id = q,
			.xsks_map_fd = d->maps.xsks_fd,
			.mode = XRXE_XSK_MODE_AUTO,
			/* Frames larger than one chunk's first buffer need XDP_USE_SG
			 * (docs/facts/afxdp.md pitfall 4). */
			.multi_buffer = d->mtu + XRXE_ETH_HLEN + XRXE_VLAN_HLEN > 3840,
		};

		err = xrxe_xsk_open(&cfg, &d->xsk[q]);
		if (err)
			goto err_out;
		d->nxsk++;
		d->xsk_src[q] = (struct xrxe_evsrc){ .fn = xsk_event, .fd = xrxe_xsk_fd(d->xsk[q]) };
		err = epoll_add(d->epfd, &d->xsk_src[q]);
		if (err)
			goto err_out;
	}

	for (unsigned i = 0; i < TX_SLOTS; i++) {
		d->tx_slots[i].next = d->tx_free;
		d->tx_free = &d->tx_slots[i];
	}
	d->loop.buf = malloc((size_t)LOOPQ_SLOTS * XRXE_MAX_FRAME_LEN);
	if (!d->loop.buf) {
		err = -ENOMEM;
		goto err_out;
	}

	struct xrxe_tp_config tcfg = {
		.ops = &tp_ops,
		.user = d,
		.max_path_mtu = path_mtu_cap(d),
		.max_qp = DEV_MAX_QP,
		.max_mr = DEV_MAX_MR,
		.local_ack_delay = DEV_LOCAL_ACK_DELAY,
		.line_rate_mbps = DEFAULT_LINE_RATE_MBPS,
		.fixed_ack_timeout = d->opts.fixed_ack_timeout,
		.selective_repeat = d->opts.sr_on,
	};

	d->max_path_mtu = tcfg.max_path_mtu;
	if (xrxe_netdev_speed(d->opts.ifname, &tcfg.line_rate_mbps))
		tcfg.line_rate_mbps = DEFAULT_LINE_RATE_MBPS;
	err = xrxe_tp_create(&tcfg, &d->tp);
	if (err) {
		xrxe_err("%s: transport: %s", d->opts.ifname, strerror(-err));
		goto err_out;
	}
	err = xrxe_tp_cc_set(d->tp, &d->opts.cc); /* checked by parse_args already */
	if (err)
		goto err_out;

	struct xrxe_devpage_config dcfg = {
		.ifname = d->opts.ifname,
		.ifindex = d->ifindex,
		.netdev_mtu = d->mtu,
		.max_path_mtu = tcfg.max_path_mtu,
		.max_qp = DEV_MAX_QP,
		.max_mr = DEV_MAX_MR,
		.max_cq = DEV_MAX_CQ,
		.max_pd = DEV_MAX_PD,
		.max_ah = DEV_MAX_AH,
		.max_srq = DEV_MAX_SRQ,
		.max_mcast_grp = DEV_MAX_MCAST_GRP < XRXE_TP_MAX_MCAST_GRP ? DEV_MAX_MCAST_GRP
									 : XRXE_TP_MAX_MCAST_GRP,
		.max_mcast_qp_attach = XRXE_TP_MAX_MCAST_QP_ATTACH,
		.local_ca_ack_delay = DEV_LOCAL_ACK_DELAY,
	};

	memcpy(dcfg.mac, d->mac, 6);
	err = xrxe_devpage_create(&dcfg, &d->dp);
	if (err)
		goto err_out;

	struct xrxe_nl_config ncfg = {
		.ifname = d->opts.ifname,
		.ifindex = d->ifindex,
		.dp = d->dp,
		.port_event = port_event,
		.user = d,
	};

	err = xrxe_nl_open(&ncfg, &d->nl);
	if (err)
		goto err_out;
	err = epoll_add(d->epfd, xrxe_nl_evsrc(d->nl));
	if (err)
		goto err_out;

	struct xrxe_ctrl_config ccfg = {
		.ifname = d->opts.ifname,
		.epfd = d->epfd,
		.tp = d->tp,
		.dp = d->dp,
		.nl = d->nl,
		.max_cq = DEV_MAX_CQ,
		.max_srq = DEV_MAX_SRQ,
		.cm_selective_repeat = !d->opts.sr_off,
		.stats = daemon_stats,
		.user = d,
	};

	err = xrxe_ctrl_open(&ccfg, &d->ctrl);
	if (err)
		goto err_out;
	/* Only now, holding the interface's lock, is an adopted program surely
	 * left by a dead daemon and not a live one's. */
	if (adopt) {
		d->we_attached = true;
		xrxe_info("%s: adopted the XDP program a stopped xrxed left (prog id %u); it is "
			  "removed when this daemon stops", d->opts.ifname, state.prog_id);
	}

	xrxe_info("%s: congestion control %s, line rate %u Mb/s", d->opts.ifname,
		  d->opts.cc.enabled ? "on (DCQCN)" : "off", tcfg.line_rate_mbps);
	xrxe_info("%s: %u queue(s), MTU %u (path MTU <= %u), %s XDP%s, AF_XDP %s, %u GIDs, "
		  "port %s",
		  d->opts.ifname, d->nxsk, d->mtu, tcfg.max_path_mtu,
		  xrxe_steer_mode_name(d->opts.mode), already ? " (already attached)" : "",
		  xrxe_xsk_is_zerocopy(d->xsk[0]) ? "zero-copy" : "copy mode",
		  xrxe_devpage_gid_count(d->dp), xrxe_devpage_port_active(d->dp) ? "ACTIVE" : "DOWN");
	return 0;

err_out:
	daemon_teardown(d);
	return err;
}

int main(int argc, char **argv)
{
	struct daemon d = { 0 };
	int err;

	xrxe_log_init("xrxed");
	if (parse_args(argc, argv, &d.opts))
		return 2;
	if (if_nametoindex(d.opts.ifname) == 0) {
		xrxe_err("%s: no such interface", d.opts.ifname);
		return 1;
	}
	err = daemon_setup(&d);
	if (err)
		return 1;
	xrxe_info("%s: ready on %s/%s%s", d.opts.ifname, XRXE_RUN_DIR, d.opts.ifname,
		  XRXE_CTRL_SOCK_SUFFIX);
	{
		char msg[128];

		snprintf(msg, sizeof(msg), "READY=1\nSTATUS=serving %s as xrxe_%s\nMAINPID=%ld",
			 d.opts.ifname, d.opts.ifname, (long)getpid());
		notify_systemd(msg);
	}
	err = run_loop(&d);
	print_counters(&d);
	daemon_teardown(&d);
	return err ? 1 : 0;
}
