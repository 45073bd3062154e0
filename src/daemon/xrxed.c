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
#include <sys/random.h>
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

#include "daemon/options.h"
#include "daemon/xrxed.h"
#include "util/log.h"

/* xrxed's options, in the order --help lists them (the table: options.h). */
static const enum xrxe_opt_id xrxed_opts[] = {
	XRXE_OPT_MODE,	 XRXE_OPT_QUEUES, XRXE_OPT_KEEP_XDP,	XRXE_OPT_CC,
	XRXE_OPT_REXMIT, XRXE_OPT_SELECTIVE_REPEAT, XRXE_OPT_LIMIT, XRXE_OPT_RT_PRIORITY,
	XRXE_OPT_VERBOSE, XRXE_OPT_HELP,	 XRXE_OPT_COUNT,
};
static const char *const xrxed_opt_extra[XRXE_OPT_COUNT] = {
	[XRXE_OPT_MODE] = "        Without it: native, and generic (skb) when the driver refuses\n"
			  "        native XDP (logged once; 'xrxe status' shows it).\n",
};

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
		"OPTIONS\n");
	xrxe_opt_print_help(out, xrxed_opts, xrxed_opt_extra);
	fprintf(out,
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
	struct xrxe_opt_parser p;
	char err[160];
	int c;

	/* Selective repeat: cm by default (docs/selective-repeat.md, "Who
	 * uses it"): only where two xrxe CMs agreed through ECE. */
	*o = (struct daemon_opts){ .mode = XRXE_STEER_MODE_NATIVE };
	xrxe_tp_cc_defaults(&o->cc);
	xrxe_quota_defaults(&o->limits);
	xrxe_opt_parser_init(&p, xrxed_opts);
	while ((c = getopt_long(argc, argv, p.shortopts, p.longopts, NULL)) != -1) {
		unsigned long n;

		switch (xrxe_opt_id_of(c)) {
		case XRXE_OPT_LIMIT:
			if (xrxe_quota_parse(&o->limits, optarg, err, sizeof(err))) {
				xrxe_err("%s", err);
				return -EINVAL;
			}
			break;
		case XRXE_OPT_CC:
			if (xrxe_cc_param_parse(&o->cc, optarg, err, sizeof(err))) {
				xrxe_err("--cc: %s", err);
				return -EINVAL;
			}
			break;
		case XRXE_OPT_MODE:
			o->mode_given = true;
			if (xrxe_opt_parse_mode(optarg, &o->mode, err, sizeof(err))) {
				xrxe_err("%s", err);
				return -EINVAL;
			}
			break;
		case XRXE_OPT_QUEUES:
			if (xrxe_opt_parse_uint(XRXE_OPT_QUEUES, optarg, 1, XRXE_STEER_MAX_QUEUES, &n,
						err, sizeof(err))) {
				xrxe_err("%s", err);
				return -EINVAL;
			}
			o->queues = (unsigned)n;
			break;
		case XRXE_OPT_KEEP_XDP:
			o->keep_xdp = true;
			break;
		case XRXE_OPT_REXMIT:
			if (!strcmp(optarg, "adaptive")) {
				o->fixed_ack_timeout = false;
			} else if (!strcmp(optarg, "fixed")) {
				o->fixed_ack_timeout = true;
			} else {
				xrxe_err("--rexmit: '%s' is not adaptive or fixed", optarg);
				return -EINVAL;
			}
			break;
		case XRXE_OPT_SELECTIVE_REPEAT:
			o->sr_off = !strcmp(optarg, "off");
			o->sr_on = !strcmp(optarg, "on");
			if (!o->sr_off && !o->sr_on && strcmp(optarg, "cm")) {
				xrxe_err("--selective-repeat: '%s' is not off, cm or on", optarg);
				return -EINVAL;
			}
			break;
		case XRXE_OPT_RT_PRIORITY:
			if (xrxe_opt_parse_uint(XRXE_OPT_RT_PRIORITY, optarg, 1,
						(unsigned long)sched_get_priority_max(SCHED_FIFO), &n,
						err, sizeof(err))) {
				xrxe_err("%s", err);
				return -EINVAL;
			}
			o->rt_priority = (int)n;
			break;
		case XRXE_OPT_VERBOSE:
			xrxe_log_set_level(XRXE_LOG_DEBUG);
			break;
		case XRXE_OPT_HELP:
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

/* What the device and the daemon have of each quota'd resource (quota.h
 * gives ordinary users three quarters of it). */
static int quota_setup(struct daemon *d)
{
	uint64_t cap[XRXE_Q_COUNT];
	unsigned long long maps = 65530; /* the kernel's default vm.max_map_count */
	struct rlimit rl = { 0 };
	FILE *f;

	f = fopen("/proc/sys/vm/max_map_count", "r");
	if (f) {
		if (fscanf(f, "%llu", &maps) != 1)
			maps = 65530;
		fclose(f);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		rl.rlim_cur = 1 << 20;
	cap[XRXE_Q_CONNS] = XRXE_CTRL_MAX_CONNS;
	cap[XRXE_Q_PD] = DEV_MAX_PD;
	cap[XRXE_Q_MR] = DEV_MAX_MR;
	cap[XRXE_Q_MW] = DEV_MAX_MR; /* the core has as many windows as regions */
	cap[XRXE_Q_CQ] = DEV_MAX_CQ;
	cap[XRXE_Q_QP] = DEV_MAX_QP;
	cap[XRXE_Q_SRQ] = DEV_MAX_SRQ;
	cap[XRXE_Q_AH] = DEV_MAX_AH;
	cap[XRXE_Q_CHANNEL] = rl.rlim_cur;
	cap[XRXE_Q_CM_CHANNEL] = rl.rlim_cur;
	cap[XRXE_Q_CM_ID] = 65536;
	/* address space: what all users may have mapped into the daemon */
	cap[XRXE_Q_MR_BYTES] = 4ull << 40;
	cap[XRXE_Q_RING_BYTES] = 16ull << 30;
	cap[XRXE_Q_MAPS] = maps;
	cap[XRXE_Q_FDS] = rl.rlim_cur;
	return xrxe_quota_create(&d->opts.limits, cap, &d->quota);
}

static void daemon_teardown(struct daemon *d)
{
	/* Connections first: their QPs stop before the I/O they use goes. */
	xrxe_ctrl_close(d->ctrl);
	d->ctrl = NULL;
	xrxe_quota_destroy(d->quota);
	d->quota = NULL;
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
	d->maps.stats_fd = d->maps.xsks_fd = d->maps.flows_fd = d->maps.flow_count_fd = -1;

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
	d->sig_src.fn = xrxe_daemon_signal_event;
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
		/* Not in the epoll set: the loop's sleeps poll the sockets
		 * themselves (xrxed_loop.c, wait_events says why). */
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
		.ops = &xrxe_daemon_tp_ops,
		.user = d,
		.max_path_mtu = path_mtu_cap(d),
		.raw_mtu = d->mtu, /* raw packet QPs' frames (transport/raw.c) */
		.max_qp = DEV_MAX_QP,
		.max_mr = DEV_MAX_MR,
		.local_ack_delay = DEV_LOCAL_ACK_DELAY,
		.line_rate_mbps = DEFAULT_LINE_RATE_MBPS,
		.fixed_ack_timeout = d->opts.fixed_ack_timeout,
		.selective_repeat = d->opts.sr_on,
	};

	/* Unpredictable L_Keys/R_Keys (transport.h key_seed): without
	 * randomness the daemon would hand out keys another user can guess. */
	if (getrandom(&tcfg.key_seed, sizeof(tcfg.key_seed), 0) != sizeof(tcfg.key_seed)) {
		err = -EIO;
		xrxe_err("%s: getrandom: %s", d->opts.ifname, strerror(errno));
		goto err_out;
	}
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
		.port_event = xrxe_daemon_port_event,
		.user = d,
	};

	err = xrxe_nl_open(&ncfg, &d->nl);
	if (err)
		goto err_out;
	err = epoll_add(d->epfd, xrxe_nl_evsrc(d->nl));
	if (err)
		goto err_out;

	err = quota_setup(d);
	if (err)
		goto err_out;

	struct xrxe_ctrl_config ccfg = {
		.quota = d->quota,
		.ifname = d->opts.ifname,
		.epfd = d->epfd,
		.tp = d->tp,
		.dp = d->dp,
		.nl = d->nl,
		.max_cq = DEV_MAX_CQ,
		.max_srq = DEV_MAX_SRQ,
		.cm_selective_repeat = !d->opts.sr_off,
		.stats = xrxe_daemon_stats,
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
		xrxe_daemon_notify_systemd(msg);
	}
	err = xrxe_daemon_run_loop(&d);
	xrxe_daemon_print_counters(&d);
	daemon_teardown(&d);
	return err ? 1 : 0;
}

