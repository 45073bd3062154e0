// SPDX-License-Identifier: MIT
/*
 * xrxed: the xrxe transport daemon for one interface.
 *
 * Today it is the I/O shell the transport core will plug into: it attaches the
 * XDP steering program (unless attached already), binds one AF_XDP socket per
 * RX queue, receives RoCEv2 frames, verifies them (headers, ICRC) and counts
 * them by opcode and by rejection reason. The transport core (src/transport/)
 * takes these frames once it exists; until then frames are counted and freed.
 *
 * Event loop: spin while frames arrive (a wake-up costs tens of µs in this VM,
 * ref/afxdp.md pitfall 13), then sleep in epoll so a single core is not starved.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/steer.h"
#include "daemon/xsk_io.h"
#include "daemon/netdev.h"
#include "util/log.h"
#include "xrxe/wire.h"

#define RX_BURST 64
/* Empty polls before sleeping: ~50 µs of spinning at ~100 ns per empty poll. */
#define IDLE_SPINS_BEFORE_SLEEP 512

struct daemon_opts {
	const char *ifname;
	enum xrxe_steer_mode mode;
	unsigned queues; /* 0 = all RX queues of the interface */
	bool keep_xdp;   /* leave the steering program attached on exit */
};

struct daemon_counters {
	uint64_t rx_ok;
	uint64_t rx_by_opcode[256];
	uint64_t rx_error[XRXE_PARSE_ERROR_COUNT];
};

struct daemon {
	struct daemon_opts opts;
	struct xrxe_xsk *xsk[XRXE_STEER_MAX_QUEUES];
	unsigned nxsk;
	struct xrxe_steer_maps maps;
	bool we_attached;
	int epfd;
	int sigfd;
	struct daemon_counters ctr;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xrxed [OPTIONS] IFACE\n"
		"\n"
		"The xrxe transport daemon for one network interface.\n"
		"\n"
		"Attaches the xrxe XDP steering program to IFACE (unless it is attached\n"
		"already), binds an AF_XDP socket to each receive queue, and processes the\n"
		"RoCEv2 frames (UDP port 4791) the program steers to it: header and ICRC\n"
		"checks, then the InfiniBand transport. Every other frame stays with the\n"
		"kernel. Runs in the foreground; SIGINT or SIGTERM stops it and, when it\n"
		"attached the program itself, detaches it again.\n"
		"\n"
		"Options:\n"
		"  -m, --mode native|skb  XDP attach mode when attaching (default native)\n"
		"  -q, --queues N         bind the first N RX queues only (default all)\n"
		"  -k, --keep-xdp         leave the steering program attached on exit\n"
		"  -v, --verbose          log at debug level (same as XRXE_LOG=debug)\n"
		"  -h, --help             this text\n"
		"\n"
		"Environment:\n"
		"  XRXE_LOG=error|warn|info|debug   log level (default info)\n"
		"\n"
		"Exit status: 0 after a clean stop, 1 on a runtime error, 2 on a usage error.\n"
		"\n"
		"Status: the transport core is not built yet; received frames are verified,\n"
		"counted (printed on exit and on SIGUSR1) and released.\n");
}

static int parse_args(int argc, char **argv, struct daemon_opts *o)
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "queues", required_argument, NULL, 'q' },
		{ "keep-xdp", no_argument, NULL, 'k' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*o = (struct daemon_opts){ .mode = XRXE_STEER_MODE_NATIVE };
	while ((c = getopt_long(argc, argv, "m:q:kvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
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

	xrxe_info("%s: rx_ok %" PRIu64, d->opts.ifname, c->rx_ok);
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

/* Verify and count one burst; returns the number of frames handled. */
static unsigned poll_queue(struct daemon *d, struct xrxe_xsk *xsk)
{
	struct xrxe_rx_frame frames[RX_BURST];
	unsigned n = xrxe_xsk_rx_burst(xsk, frames, RX_BURST);

	for (unsigned i = 0; i < n; i++) {
		struct xrxe_pkt pkt;
		int err = xrxe_parse_frags(frames[i].frag, frames[i].nfrags, 0, &pkt);

		if (err) {
			d->ctr.rx_error[err]++;
			xrxe_dbg("rx drop: %s", xrxe_parse_strerror((enum xrxe_parse_error)err));
			continue;
		}
		d->ctr.rx_ok++;
		d->ctr.rx_by_opcode[pkt.opcode]++;
	}
	if (n)
		xrxe_xsk_rx_release(xsk, frames, n);
	return n;
}

/* Returns 1 to keep running, 0 to stop. */
static int handle_signal(struct daemon *d)
{
	struct signalfd_siginfo si;

	if (read(d->sigfd, &si, sizeof(si)) != sizeof(si))
		return 1;
	if (si.ssi_signo == SIGUSR1) {
		print_counters(d);
		return 1;
	}
	xrxe_info("%s: signal %u, stopping", d->opts.ifname, si.ssi_signo);
	return 0;
}

static int run_loop(struct daemon *d)
{
	unsigned idle = 0;

	for (;;) {
		unsigned work = 0;

		for (unsigned q = 0; q < d->nxsk; q++)
			work += poll_queue(d, d->xsk[q]);
		if (work) {
			idle = 0;
			continue;
		}
		if (++idle < IDLE_SPINS_BEFORE_SLEEP)
			continue;

		struct epoll_event ev[8];
		int n = epoll_wait(d->epfd, ev, 8, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			xrxe_err("epoll_wait: %s", strerror(errno));
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.fd == d->sigfd && !handle_signal(d))
				return 0;
		}
		idle = 0;
	}
}

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static void daemon_teardown(struct daemon *d)
{
	for (unsigned q = 0; q < d->nxsk; q++)
		xrxe_xsk_close(d->xsk[q]);
	d->nxsk = 0;
	xrxe_steer_close_maps(&d->maps);
	if (d->we_attached && !d->opts.keep_xdp)
		xrxe_steer_detach(d->opts.ifname);
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->sigfd >= 0)
		close(d->sigfd);
}

static int daemon_setup(struct daemon *d)
{
	unsigned nqueues;
	uint32_t mtu;
	bool already = false;
	sigset_t mask;
	int err;

	d->epfd = d->sigfd = -1;
	d->maps.stats_fd = d->maps.xsks_fd = -1;

	err = xrxe_netdev_rx_queues(d->opts.ifname, &nqueues);
	if (err)
		return err;
	err = xrxe_netdev_mtu(d->opts.ifname, &mtu);
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
	} else {
		err = xrxe_steer_attach(d->opts.ifname, d->opts.mode, &already);
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
	d->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sigfd < 0 || d->epfd < 0) {
		err = -errno;
		xrxe_err("signalfd/epoll: %s", strerror(errno));
		goto err_out;
	}
	err = epoll_add(d->epfd, d->sigfd);
	if (err)
		goto err_out;

	for (unsigned q = 0; q < nqueues; q++) {
		struct xrxe_xsk_config cfg = {
			.ifname = d->opts.ifname,
			.queue_id = q,
			.xsks_map_fd = d->maps.xsks_fd,
			.mode = XRXE_XSK_MODE_AUTO,
			/* Frames larger than one chunk's first buffer need XDP_USE_SG
			 * (ref/afxdp.md pitfall 4). */
			.multi_buffer = mtu + XRXE_ETH_HLEN + XRXE_VLAN_HLEN > 3840,
		};

		err = xrxe_xsk_open(&cfg, &d->xsk[q]);
		if (err)
			goto err_out;
		d->nxsk++;
		err = epoll_add(d->epfd, xrxe_xsk_fd(d->xsk[q]));
		if (err)
			goto err_out;
	}
	xrxe_info("%s: %u queue(s), MTU %u, %s XDP%s, AF_XDP %s", d->opts.ifname, d->nxsk, mtu,
		  xrxe_steer_mode_name(d->opts.mode), already ? " (already attached)" : "",
		  xrxe_xsk_is_zerocopy(d->xsk[0]) ? "zero-copy" : "copy mode");
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
	xrxe_info("%s: ready", d.opts.ifname);
	err = run_loop(&d);
	print_counters(&d);
	daemon_teardown(&d);
	return err ? 1 : 0;
}
