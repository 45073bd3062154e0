// SPDX-License-Identifier: MIT
/*
 * xrxe-impair: loss, duplication, corruption and DCQCN-style ECN marking on an
 * interface's egress, for testing congestion control on a kernel without
 * netem or RED. The command line and output; the kernel side is impair_tc.c,
 * the packet side bpf/xrxe_impair.bpf.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "impair_tc.h"
#include "util/log.h"
#include "util/units.h"

#ifndef XRXE_VERSION
#define XRXE_VERSION "0.1.0"
#endif

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

static const char help_text[] =
	"NAME\n"
	"    xrxe-impair - loss, duplication, corruption and ECN marking on egress\n"
	"\n"
	"SYNOPSIS\n"
	"    xrxe-impair IFACE [--loss PCT] [--dup PCT] [--corrupt PCT]\n"
	"                [--ecn-rate RATE [--ecn-kmin BYTES] [--ecn-kmax BYTES]\n"
	"                [--ecn-pmax PCT] [--ecn-limit BYTES]] [--flows]\n"
	"    xrxe-impair IFACE --clear\n"
	"    xrxe-impair IFACE [--stats] [--json] [--reset]\n"
	"    xrxe-impair IFACE --watch MS [--samples N]\n"
	"    xrxe-impair --help | --version\n"
	"\n"
	"DESCRIPTION\n"
	"    Attaches a tc BPF program (direct action, clsact egress, handle 0x78726965\n"
	"    prio 30834) to IFACE that impairs every IPv4/IPv6 frame leaving it. It plays\n"
	"    the parts of netem (loss, duplicate, corrupt) and of a RED/ECN switch queue\n"
	"    on kernels built without them. Frames that are not IP (ARP, ...) are never\n"
	"    touched. Works inside 'ip netns exec'. To impair traffic that AF_XDP\n"
	"    transmits (xrxed), put this on a forwarding namespace's egress: AF_XDP\n"
	"    transmit skips its own interface's tc hooks.\n"
	"\n"
	"    Each configuring call sets the whole impairment: options not given are off.\n"
	"    On an interface that already has it, the settings are replaced in place;\n"
	"    counters, flows and the phantom queue carry on.\n"
	"\n"
	"    Per frame, in this order (each roll is bpf_get_prandom_u32()):\n"
	"      loss       dropped with probability PCT.\n"
	"      dup        one copy sent (bpf_clone_redirect to IFACE's egress). The copy\n"
	"                 is cloned before any change, and passes through corruption\n"
	"                 and ECN marking by itself; it is never lost or copied again.\n"
	"      corrupt    one byte of the transport payload (after the UDP or TCP\n"
	"                 header; the last byte when there is none) is inverted (XOR\n"
	"                 0xff). Headers stay intact so the frame reaches the same\n"
	"                 socket or QP and fails there: a single inverted byte always\n"
	"                 breaks the UDP/TCP checksum and the RoCEv2 ICRC. A UDP\n"
	"                 checksum of 0 (IPv4, as RoCEv2 senders use) leaves only the\n"
	"                 ICRC; locally sent frames with checksum offload pending\n"
	"                 (veth) get their checksum computed after the corruption.\n"
	"      ECN        DCQCN's congestion point (CP) on a phantom queue: a byte\n"
	"                 counter that each frame fills and that drains at RATE, i.e.\n"
	"                 the queue a switch port of that line rate would have (HULL).\n"
	"                 With q the bytes queued ahead of the frame: q <= KMIN never\n"
	"                 marks, KMIN < q <= KMAX marks with probability\n"
	"                 PMAX*(q-KMIN)/(KMAX-KMIN), q > KMAX always marks. Marking\n"
	"                 sets ECT(0)/ECT(1) to CE (IPv4 header checksum updated);\n"
	"                 Not-ECT and CE frames are left alone and counted. Frames are\n"
	"                 never delayed or dropped by the queue: add htb/tbf for that.\n"
	"\n"
	"OPTIONS\n"
	"    --loss PCT         drop probability, 0..100 percent (\"1\", \"0.1%\")\n"
	"    --dup PCT          duplication probability\n"
	"    --corrupt PCT      corruption probability\n"
	"    --ecn-rate RATE    phantom queue drain rate, tc units: 10gbit, 800mbit,\n"
	"                       125mbps (bytes/s), 1gibit; up to 100gbit\n"
	"    --ecn-kmin BYTES   tc sizes: 1500, 30kb (1024-based); default 4000 bytes\n"
	"                       per Gbit/s of RATE (HPCC's DCQCN profile, docs/facts/dcqcn.md)\n"
	"    --ecn-kmax BYTES   default 16000 bytes per Gbit/s of RATE; >= KMIN\n"
	"    --ecn-pmax PCT     default 20\n"
	"    --ecn-limit BYTES  the phantom queue holds at most BYTES: a frame that would\n"
	"                       overflow it is not added, as a tail-drop FIFO of that size\n"
	"                       downstream would drop it (default and maximum 1gb)\n"
	"    --flows            also count bytes per RoCEv2 flow (source, destination,\n"
	"                       BTH DestQP), shown by --stats and --watch\n"
	"    --clear            remove the filter; remove the clsact qdisc too if\n"
	"                       xrxe-impair created it and no other filter uses it\n"
	"    --stats            show settings and counters (the default with no option)\n"
	"    --json             --stats as one JSON object\n"
	"    --reset            zero the counters and flows, and empty the phantom queue\n"
	"    --watch MS         print a JSON line every MS milliseconds (counters, queue,\n"
	"                       flows, and IFACE's root qdisc: bytes, drops, backlog)\n"
	"                       until interrupted\n"
	"    --samples N        with --watch: stop after N lines\n"
	"    -h, --help         this page\n"
	"    -V, --version      version\n"
	"\n"
	"COUNTERS\n"
	"    seen                     frames that entered (copies not included)\n"
	"    dropped, duplicated, corrupted   frames the respective action hit\n"
	"    ecn_marked               ECT frames set to CE\n"
	"    ecn_already_ce           picked by the CP rule, already CE\n"
	"    not_ect_over_threshold   picked by the CP rule, Not-ECT: not marked\n"
	"    not_ip                   non-IP frames, passed untouched\n"
	"    queue_bytes, queue_max_bytes    phantom queue now (as of its last\n"
	"                             update) and its maximum\n"
	"    On the wire: seen - dropped + duplicated frames.\n"
	"\n"
	"ENVIRONMENT\n"
	"    XRXE_LOG  error, warn, info (default) or debug (libbpf, verifier log)\n"
	"\n"
	"EXIT STATUS\n"
	"    0  success\n"
	"    1  the kernel refused (the reason is one line on stderr)\n"
	"    2  usage error or not privileged (CAP_BPF and CAP_NET_ADMIN): nothing done\n"
	"\n"
	"EXAMPLES\n"
	"    xrxe-impair r0 --loss 1                      1% random loss\n"
	"    xrxe-impair r0 --ecn-rate 1gbit --ecn-kmin 4kb --ecn-kmax 16kb --ecn-pmax 20\n"
	"    tc qdisc add dev r0 root tbf rate 1gbit burst 32kb latency 5ms\n"
	"                                                 (a real bottleneck beside it)\n"
	"    xrxe-impair r0 --stats --json\n"
	"    xrxe-impair r0 --clear\n";

enum {
	OPT_LOSS = 256, OPT_DUP, OPT_CORRUPT, OPT_ECN_RATE, OPT_ECN_KMIN, OPT_ECN_KMAX,
	OPT_ECN_PMAX, OPT_ECN_LIMIT, OPT_FLOWS, OPT_CLEAR, OPT_STATS, OPT_JSON, OPT_RESET, OPT_WATCH,
	OPT_SAMPLES,
};

static const struct option long_opts[] = {
	{ "loss", required_argument, NULL, OPT_LOSS },
	{ "dup", required_argument, NULL, OPT_DUP },
	{ "corrupt", required_argument, NULL, OPT_CORRUPT },
	{ "ecn-rate", required_argument, NULL, OPT_ECN_RATE },
	{ "ecn-kmin", required_argument, NULL, OPT_ECN_KMIN },
	{ "ecn-kmax", required_argument, NULL, OPT_ECN_KMAX },
	{ "ecn-pmax", required_argument, NULL, OPT_ECN_PMAX },
	{ "ecn-limit", required_argument, NULL, OPT_ECN_LIMIT },
	{ "flows", no_argument, NULL, OPT_FLOWS },
	{ "clear", no_argument, NULL, OPT_CLEAR },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "reset", no_argument, NULL, OPT_RESET },
	{ "watch", required_argument, NULL, OPT_WATCH },
	{ "samples", required_argument, NULL, OPT_SAMPLES },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct args {
	const char *ifname;
	bool configure; /* any of the impairment options */
	bool clear, stats, json, reset, flows;
	uint32_t loss_ppm, dup_ppm, corrupt_ppm, pmax_ppm;
	bool have_rate, have_kmin, have_kmax, have_pmax, have_limit;
	uint64_t rate, kmin, kmax, limit;
	unsigned long watch_ms, samples;
};

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...)
{
	va_list ap;

	fputs("xrxe-impair: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see 'xrxe-impair --help')\n", stderr);
	return EXIT_USAGE;
}

static int bad_value(const char *opt, const char *val, int err, const char *range)
{
	return usage("%s '%s': %s %s", opt, val, err == -ERANGE ? "out of range," : "not",
		     range);
}

static bool parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;

	if (!s || !*s || strspn(s, "0123456789") != strlen(s))
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return !errno && *out >= min && *out <= max;
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
	int c, err;

	memset(a, 0, sizeof(*a));
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hV", long_opts, NULL)) != -1) {
		const char *opt = argv[optind - 1];

		switch (c) {
		case 'h':
			fputs(help_text, stdout);
			return fflush(stdout) ? EXIT_FAIL : EXIT_OK;
		case 'V':
			printf("xrxe-impair %s\n", XRXE_VERSION);
			return fflush(stdout) ? EXIT_FAIL : EXIT_OK;
		case OPT_LOSS:
		case OPT_DUP:
		case OPT_CORRUPT:
		case OPT_ECN_PMAX: {
			uint32_t *dst = c == OPT_LOSS ? &a->loss_ppm : c == OPT_DUP ? &a->dup_ppm :
					c == OPT_CORRUPT ? &a->corrupt_ppm : &a->pmax_ppm;

			err = xrxe_parse_percent_ppm(optarg, dst);
			if (err)
				return bad_value(opt, optarg, err, "a percentage 0..100");
			a->configure = true;
			a->have_pmax |= c == OPT_ECN_PMAX;
			break;
		}
		case OPT_ECN_RATE:
			err = xrxe_parse_rate(optarg, XRXE_IMPAIR_MAX_RATE_BPS, &a->rate);
			if (err)
				return bad_value(opt, optarg, err,
						 "a rate (e.g. 10gbit, 800mbit; 8bit..100gbit)");
			a->configure = a->have_rate = true;
			break;
		case OPT_ECN_LIMIT:
			err = xrxe_parse_size(optarg, XRXE_IMPAIR_QUEUE_CAP, &a->limit);
			if (err || !a->limit)
				return bad_value(opt, optarg, err ? err : -ERANGE,
						 "a size (e.g. 1mb, 100kb; 1 byte up to 1gb)");
			a->configure = a->have_limit = true;
			break;
		case OPT_ECN_KMIN:
		case OPT_ECN_KMAX:
			err = xrxe_parse_size(optarg, XRXE_IMPAIR_QUEUE_CAP,
					      c == OPT_ECN_KMIN ? &a->kmin : &a->kmax);
			if (err)
				return bad_value(opt, optarg, err, "a size (e.g. 30kb, 1500; up to 1gb)");
			a->configure = true;
			a->have_kmin |= c == OPT_ECN_KMIN;
			a->have_kmax |= c == OPT_ECN_KMAX;
			break;
		case OPT_FLOWS:
			a->configure = a->flows = true;
			break;
		case OPT_CLEAR:
			a->clear = true;
			break;
		case OPT_STATS:
			a->stats = true;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_RESET:
			a->reset = true;
			break;
		case OPT_WATCH:
			if (!parse_ulong(optarg, 1, 3600000, &a->watch_ms))
				return usage("--watch '%s': not a number of milliseconds 1..3600000",
					     optarg);
			break;
		case OPT_SAMPLES:
			if (!parse_ulong(optarg, 1, 1000000000, &a->samples))
				return usage("--samples '%s': not a count 1..1000000000", optarg);
			break;
		case ':':
			return usage("option '%s' needs an argument", opt);
		default:
			if (optopt)
				return usage("unknown option '-%c'", optopt);
			return usage("unknown option '%s'", opt);
		}
	}
	if (optind >= argc)
		return usage("missing IFACE");
	if (argc - optind > 1)
		return usage("too many arguments ('%s')", argv[optind + 1]);
	a->ifname = argv[optind];

	if (a->clear && (a->configure || a->stats || a->reset || a->watch_ms))
		return usage("--clear cannot be combined with other options");
	if (a->watch_ms && (a->configure || a->stats || a->json))
		return usage("--watch cannot be combined with settings or --stats");
	if (a->samples && !a->watch_ms)
		return usage("--samples needs --watch");
	if (!a->have_rate && (a->have_kmin || a->have_kmax || a->have_pmax || a->have_limit))
		return usage("--ecn-kmin/--ecn-kmax/--ecn-pmax/--ecn-limit need --ecn-rate");
	if (a->have_rate) {
		/* Defaults scaled with the rate like HPCC's DCQCN profile
		 * (docs/facts/dcqcn.md §1.7): Kmin 100 KB and Kmax 400 KB at 25 Gbit/s. */
		double gbit = (double)a->rate * 8 / 1e9;

		if (!a->have_kmin)
			a->kmin = (uint64_t)(gbit * 4000);
		if (!a->have_kmax)
			a->kmax = (uint64_t)(gbit * 16000);
		if (!a->have_pmax)
			a->pmax_ppm = 200000;
		if (a->kmin > a->kmax)
			return usage("--ecn-kmin (%" PRIu64 " bytes) is above --ecn-kmax (%" PRIu64
				     " bytes)", a->kmin, a->kmax);
	}
	if (!a->configure && !a->clear && !a->watch_ms)
		a->stats = true;
	return -1;
}

/* Threshold for rand < t with rand uniform over 2^32 (impair.h). */
static __u64 ppm_thresh(uint32_t ppm)
{
	return (__u64)(((unsigned __int128)ppm << 32) / 1000000u);
}

static void build_cfg(const struct args *a, struct xrxe_impair_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->loss_ppm = a->loss_ppm;
	cfg->dup_ppm = a->dup_ppm;
	cfg->corrupt_ppm = a->corrupt_ppm;
	cfg->loss_thresh = ppm_thresh(a->loss_ppm);
	cfg->dup_thresh = ppm_thresh(a->dup_ppm);
	cfg->corrupt_thresh = ppm_thresh(a->corrupt_ppm);
	if (a->have_rate) {
		cfg->ecn_rate = a->rate;
		cfg->kmin = a->kmin;
		cfg->kmax = a->kmax;
		cfg->qlimit = a->have_limit ? a->limit : XRXE_IMPAIR_QUEUE_CAP;
		cfg->pmax_ppm = a->pmax_ppm;
		cfg->pmax_thresh = ppm_thresh(a->pmax_ppm);
	}
	cfg->flags = a->flows ? XRXE_IMPAIR_F_FLOWS : 0;
}

/* CAP_NET_ADMIN (12) for the qdisc and filter, and CAP_BPF (39) or
 * CAP_SYS_ADMIN (21) for the program and maps, from /proc/self/status. */
static bool privileged(void)
{
	unsigned long long eff = 0;
	char line[256];
	FILE *f;

	if (geteuid() == 0)
		return true;
	f = fopen("/proc/self/status", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> 12 & 1) && ((eff >> 39 & 1) || (eff >> 21 & 1));
}

static void pct_text(char *buf, size_t size, uint32_t ppm)
{
	snprintf(buf, size, "%u.%04u", ppm / 10000, ppm % 10000);
	/* trim "1.0000" to "1", "0.1000" to "0.1" */
	for (char *p = buf + strlen(buf) - 1; *p == '0'; p--)
		*p = '\0';
	if (buf[strlen(buf) - 1] == '.')
		buf[strlen(buf) - 1] = '\0';
}

static void addr_text(char *buf, size_t size, const __u8 a[16])
{
	static const __u8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!memcmp(a, mapped, sizeof(mapped)))
		inet_ntop(AF_INET, a + 12, buf, (socklen_t)size);
	else
		inet_ntop(AF_INET6, a, buf, (socklen_t)size);
}

static void print_json_body(FILE *out, const char *ifname, const struct impair_handle *h,
			    const struct impair_snapshot *s)
{
	char p[32];

	fprintf(out, "\"ifname\":\"%s\",\"prog_id\":%u,\"settings\":{", ifname, h->prog_id);
	pct_text(p, sizeof(p), s->cfg.loss_ppm);
	fprintf(out, "\"loss_pct\":%s,", p);
	pct_text(p, sizeof(p), s->cfg.dup_ppm);
	fprintf(out, "\"dup_pct\":%s,", p);
	pct_text(p, sizeof(p), s->cfg.corrupt_ppm);
	fprintf(out, "\"corrupt_pct\":%s,", p);
	if (s->cfg.ecn_rate) {
		pct_text(p, sizeof(p), s->cfg.pmax_ppm);
		fprintf(out, "\"ecn\":{\"rate_bytes_per_s\":%llu,\"kmin_bytes\":%llu,"
			"\"kmax_bytes\":%llu,\"pmax_pct\":%s,\"limit_bytes\":%llu},",
			(unsigned long long)s->cfg.ecn_rate, (unsigned long long)s->cfg.kmin,
			(unsigned long long)s->cfg.kmax, p, (unsigned long long)s->cfg.qlimit);
	} else {
		fputs("\"ecn\":null,", out);
	}
	fprintf(out, "\"flows\":%s,\"own_clsact\":%s},\"counters\":{",
		s->cfg.flags & XRXE_IMPAIR_F_FLOWS ? "true" : "false",
		s->cfg.flags & XRXE_IMPAIR_F_OWN_CLSACT ? "true" : "false");
	for (int i = 0; i < XRXE_IMPAIR_COUNTER_COUNT; i++)
		fprintf(out, "%s\"%s\":{\"packets\":%llu,\"bytes\":%llu}", i ? "," : "",
			impair_counter_name(i), (unsigned long long)s->counters[i].packets,
			(unsigned long long)s->counters[i].bytes);
	fprintf(out, "},\"queue_bytes\":%llu,\"queue_max_bytes\":%llu,\"queue_last_ns\":%llu",
		(unsigned long long)s->backlog, (unsigned long long)s->max_backlog,
		(unsigned long long)s->last_ns);
	if (s->cfg.flags & XRXE_IMPAIR_F_FLOWS) {
		fputs(",\"flows\":[", out);
		for (size_t i = 0; i < s->nflows; i++) {
			char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
			const struct impair_flow_sample *f = &s->flows[i];

			addr_text(src, sizeof(src), f->key.saddr);
			addr_text(dst, sizeof(dst), f->key.daddr);
			fprintf(out, "%s{\"src\":\"%s\",\"dst\":\"%s\",\"dest_qp\":%u,"
				"\"packets\":%llu,\"bytes\":%llu,\"marked\":%llu}", i ? "," : "",
				src, dst, f->key.dest_qp, (unsigned long long)f->val.packets,
				(unsigned long long)f->val.bytes, (unsigned long long)f->val.marked);
		}
		fputc(']', out);
	}
}

static void print_text(const char *ifname, const struct impair_handle *h,
		       const struct impair_snapshot *s)
{
	char a[32], b[32], c[32], r[32];

	pct_text(a, sizeof(a), s->cfg.loss_ppm);
	pct_text(b, sizeof(b), s->cfg.dup_ppm);
	pct_text(c, sizeof(c), s->cfg.corrupt_ppm);
	printf("%s: xrxe-impair (tc egress, prog id %u%s)\n", ifname, h->prog_id,
	       s->cfg.flags & XRXE_IMPAIR_F_OWN_CLSACT ? ", clsact created by xrxe-impair" : "");
	printf("  loss %s%%  dup %s%%  corrupt %s%%\n", a, b, c);
	if (s->cfg.ecn_rate) {
		xrxe_format_rate(r, sizeof(r), s->cfg.ecn_rate);
		pct_text(a, sizeof(a), s->cfg.pmax_ppm);
		printf("  ecn  rate %s  kmin %llu B  kmax %llu B  pmax %s%%  limit %llu B\n", r,
		       (unsigned long long)s->cfg.kmin, (unsigned long long)s->cfg.kmax, a,
		       (unsigned long long)s->cfg.qlimit);
	} else {
		printf("  ecn  off\n");
	}
	for (int i = 0; i < XRXE_IMPAIR_COUNTER_COUNT; i++)
		printf("  %-24s %12llu packets %15llu bytes\n", impair_counter_name(i),
		       (unsigned long long)s->counters[i].packets,
		       (unsigned long long)s->counters[i].bytes);
	printf("  %-24s %12llu bytes (max %llu)\n", "phantom queue",
	       (unsigned long long)s->backlog, (unsigned long long)s->max_backlog);
	for (size_t i = 0; i < s->nflows; i++) {
		char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

		addr_text(src, sizeof(src), s->flows[i].key.saddr);
		addr_text(dst, sizeof(dst), s->flows[i].key.daddr);
		printf("  flow %s -> %s qp %u: %llu packets %llu bytes %llu marked\n", src, dst,
		       s->flows[i].key.dest_qp, (unsigned long long)s->flows[i].val.packets,
		       (unsigned long long)s->flows[i].val.bytes,
		       (unsigned long long)s->flows[i].val.marked);
	}
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* JSON lines on an absolute schedule (no drift): t_ns is CLOCK_MONOTONIC,
 * the clock bpf_ktime_get_ns() also reads. */
static int watch(const char *ifname, const struct impair_handle *h, unsigned long ms,
		 unsigned long samples)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct timespec next;
	unsigned long n = 0;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!stop && (!samples || n < samples)) {
		struct impair_snapshot s;
		uint64_t t = now_ns();
		int err = impair_read(h, true, &s);

		if (err) {
			xrxe_err("%s: cannot read the counters: %s", ifname, strerror(-err));
			return EXIT_FAIL;
		}
		struct impair_qdisc_stats qs;

		printf("{\"t_ns\":%llu,", (unsigned long long)t);
		print_json_body(stdout, ifname, h, &s);
		/* The real queue beside the phantom one, read at the same instant. */
		if (!impair_root_qdisc_stats(h->ifindex, &qs))
			printf(",\"root_qdisc\":{\"kind\":\"%s\",\"bytes\":%llu,\"packets\":%u,"
			       "\"drops\":%u,\"backlog\":%u,\"qlen\":%u}",
			       qs.kind, (unsigned long long)qs.bytes, qs.packets, qs.drops,
			       qs.backlog, qs.qlen);
		puts("}");
		impair_snapshot_free(&s);
		if (fflush(stdout))
			return EXIT_FAIL;
		n++;
		next.tv_nsec += (long)(ms % 1000) * 1000000;
		next.tv_sec += (time_t)(ms / 1000) + next.tv_nsec / 1000000000;
		next.tv_nsec %= 1000000000;
		while (!stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	return EXIT_OK;
}

static int show(const char *ifname, const struct impair_handle *h, bool json)
{
	struct impair_snapshot s;
	int err = impair_read(h, true, &s);

	if (err) {
		xrxe_err("%s: cannot read the counters: %s", ifname, strerror(-err));
		return EXIT_FAIL;
	}
	if (json) {
		putchar('{');
		print_json_body(stdout, ifname, h, &s);
		puts("}");
	} else {
		print_text(ifname, h, &s);
	}
	impair_snapshot_free(&s);
	return EXIT_OK;
}

static int run(const struct args *a)
{
	struct impair_handle h;
	struct xrxe_impair_cfg cfg;
	unsigned int ifindex;
	int err, status = EXIT_OK;

	if (impair_ifindex(a->ifname, &ifindex))
		return EXIT_FAIL;
	err = impair_find(a->ifname, ifindex, &h);
	if (err && err != -ENOENT)
		return EXIT_FAIL;
	if (a->clear) {
		bool removed;

		if (err == -ENOENT) {
			xrxe_info("%s: no xrxe-impair filter; nothing to clear", a->ifname);
			return EXIT_OK;
		}
		err = impair_clear(a->ifname, &h, &removed);
		impair_close(&h);
		return err ? EXIT_FAIL : EXIT_OK;
	}
	if (a->configure) {
		build_cfg(a, &cfg);
		if (err == -ENOENT)
			err = impair_attach(a->ifname, ifindex, &cfg, &h);
		else
			err = impair_configure(a->ifname, &h, &cfg);
		if (err) {
			impair_close(&h);
			return EXIT_FAIL;
		}
	} else if (err == -ENOENT) {
		xrxe_err("%s: xrxe-impair is not attached", a->ifname);
		return EXIT_FAIL;
	}
	if (a->reset) {
		err = impair_reset(&h);
		if (err) {
			xrxe_err("%s: cannot reset the counters: %s", a->ifname, strerror(-err));
			status = EXIT_FAIL;
		}
	}
	if (!status && a->watch_ms)
		status = watch(a->ifname, &h, a->watch_ms, a->samples);
	else if (!status && a->stats)
		status = show(a->ifname, &h, a->json);
	impair_close(&h);
	return status;
}

int main(int argc, char **argv)
{
	struct args a;
	int status;

	xrxe_log_init("xrxe-impair");
	status = parse_args(argc, argv, &a);
	if (status >= 0)
		return status;
	if (!privileged()) {
		fprintf(stderr, "xrxe-impair: needs root (CAP_BPF and CAP_NET_ADMIN)\n");
		return EXIT_USAGE;
	}
	status = run(&a);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "xrxe-impair: cannot write the output\n");
		return EXIT_FAIL;
	}
	return status;
}
