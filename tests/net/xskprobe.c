// SPDX-License-Identifier: MIT
/*
 * xskprobe: drive the AF_XDP I/O layer (src/daemon/xsk_io.c) from the network
 * tests and the benchmarks.
 *
 *   rx     receive, parse (ICRC verified), count, optionally check generated
 *          payloads and dump a pcap; exit status says whether expectations held
 *   tx     send the frames of a pcap (addresses rewritten, IP checksum and ICRC
 *          recomputed), through AF_XDP or a plain AF_PACKET socket
 *   gen    send N generated RoCEv2 frames of a given size (sequence + pattern)
 *   blast  like gen, as fast as possible for a duration; prints Mpps and Gbit/s
 *   ping   send generated frames one at a time and time the echo (RTT)
 *   pong   echo every RoCEv2 frame back to its sender
 *
 * Output is one "key value..." line per fact on stdout, for scripts; logs go
 * to stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "daemon/netdev.h"
#include "daemon/steer.h"
#include "daemon/xsk_io.h"
#include "util/log.h"
#include "xrxe/wire.h"

#define RX_BURST 64
#define TX_BATCH 32
#define MAX_EXPECT 16
/* Copy-mode RX buffer: a 4096-byte chunk minus the kernel's 256-byte XDP
 * headroom. Frames above it need multi-buffer AF_XDP (docs/facts/afxdp.md pitfall 4). */
#define SINGLE_BUF_MAX 3840
/* Source port of generated frames (rxe derives it from the QPN; any is fine). */
#define GEN_UDP_SPORT 49152
/* Pattern table: payload byte i >= 4 of frame seq is (7*i + seq) mod 256, which
 * is this table read from offset (183*seq + i) mod 256 (183 = 7^-1 mod 256),
 * so a generator and a checker need one memcpy/memcmp per frame. */
#define PATTERN_LEN (XRXE_MAX_FRAME_LEN + 256)

enum mode { MODE_RX, MODE_TX, MODE_GEN, MODE_BLAST, MODE_PING, MODE_PONG };

static const char *const mode_names[] = {
	[MODE_RX] = "rx", [MODE_TX] = "tx", [MODE_GEN] = "gen",
	[MODE_BLAST] = "blast", [MODE_PING] = "ping", [MODE_PONG] = "pong",
};

struct addrs {
	bool set, has4, has6;
	uint8_t smac[6], dmac[6];
	struct in_addr sip4, dip4;
	struct in6_addr sip6, dip6;
};

struct expect {
	char name[32];
	uint64_t n;
};

struct opts {
	enum mode mode;
	const char *ifname;
	uint32_t queue;
	enum xrxe_steer_mode xdp_mode;
	enum xrxe_xsk_mode xsk_mode;
	int multi_buffer; /* -1: decide from the MTU */
	uint32_t frames, rx_ring, tx_ring;
	const char *ready_file;
	double timeout;  /* seconds; 0 = none */
	double linger;   /* rx: seconds to keep listening after --count */
	double idle;     /* rx: stop after this long without frames (once one came) */
	uint64_t count;  /* 0 = unlimited */
	bool check_pattern;
	bool ring_loss_ok; /* rx: frames the kernel counted as dropped may be missing */
	int64_t expect_valid; /* -1 = no expectation */
	struct expect expect_err[MAX_EXPECT], expect_xdp[MAX_EXPECT];
	unsigned nexpect_err, nexpect_xdp;
	bool expect_given;
	const char *pcap;
	const char *filter;
	bool detach;
	bool spin;
	struct addrs addrs;
	bool corrupt_icrc;
	uint32_t truncate;
	bool via_packet;
	double rate;     /* frames per second; 0 = as fast as pushback allows */
	uint64_t repeat;
	uint32_t size;
	bool ipv6;
	uint8_t opcode;
	uint32_t qpn;
	double duration;
	int cpu;
	bool verbose;
};

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
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint8_t pattern[PATTERN_LEN];

static void pattern_init(void)
{
	for (unsigned k = 0; k < PATTERN_LEN; k++)
		pattern[k] = (uint8_t)(7 * k);
}

/* Offset into pattern[] of payload byte 0 of frame seq. */
static unsigned pattern_off(uint32_t seq)
{
	return (183u * seq) & 0xff;
}

/* ------------------------------------------------------------------------
 * Fragment helpers: frames from the I/O layer are up to XRXE_MAX_FRAGS pieces.
 * ---------------------------------------------------------------------- */

/* Apply fn to the pieces of [off, off+len) of a fragmented frame. */
static int frags_put(const struct xrxe_frag *frags, unsigned n, uint32_t off, const uint8_t *src,
		     uint32_t len)
{
	for (unsigned i = 0; i < n && len; i++) {
		uint32_t k;

		if (off >= frags[i].len) {
			off -= frags[i].len;
			continue;
		}
		k = frags[i].len - off < len ? frags[i].len - off : len;
		memcpy(frags[i].data + off, src, k);
		src += k;
		len -= k;
		off = 0;
	}
	return len ? -EINVAL : 0;
}

/* memcmp of [off, off+len) of a fragmented frame against ref; 0 if equal. */
static int frags_cmp(const struct xrxe_frag *frags, unsigned n, uint32_t off, const uint8_t *ref,
		     uint32_t len)
{
	for (unsigned i = 0; i < n && len; i++) {
		uint32_t k;

		if (off >= frags[i].len) {
			off -= frags[i].len;
			continue;
		}
		k = frags[i].len - off < len ? frags[i].len - off : len;
		if (memcmp(frags[i].data + off, ref, k))
			return 1;
		ref += k;
		len -= k;
		off = 0;
	}
	return len ? 1 : 0;
}

static uint32_t gather(const struct xrxe_frag *frags, unsigned n, uint8_t *buf, uint32_t cap)
{
	uint32_t len = 0;

	for (unsigned i = 0; i < n; i++) {
		uint32_t k = frags[i].len;

		if (k > cap - len)
			k = cap - len;
		memcpy(buf + len, frags[i].data, k);
		len += k;
	}
	return len;
}

/* ------------------------------------------------------------------------
 * Option parsing
 * ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: xskprobe MODE IFACE [options]\n"
"\n"
"Modes:\n"
"  rx     receive RoCEv2 frames on an AF_XDP socket (attaching the xrxe steering\n"
"         program if needed), parse each with its ICRC, count and report\n"
"  tx     send the frames of --pcap FILE\n"
"  gen    send --count generated frames of --size bytes (sequence + pattern)\n"
"  blast  send generated frames as fast as possible for --duration seconds\n"
"  ping   send --count generated frames one at a time and time the echo\n"
"  pong   echo RoCEv2 frames back (addresses swapped, ICRC recomputed)\n"
"\n"
"Common options:\n"
"  -q, --queue Q            RX/TX queue (default 0)\n"
"      --xdp-mode native|skb  mode when attaching the steering program (default native)\n"
"      --copy | --zerocopy  force the AF_XDP bind mode (default: zero-copy if possible)\n"
"      --multi-buffer | --no-multi-buffer\n"
"                           XDP_USE_SG (default: when MTU + 18 > %d)\n"
"      --frames N           UMEM chunks (power of two; default sized by the layer)\n"
"      --rx-ring N, --tx-ring N\n"
"      --ready-file PATH    write \"ready\" to PATH once the socket is bound\n"
"  -t, --timeout S          rx, pong: stop after S seconds; ping: wait S per echo\n"
"                           (default 1); tx, gen, blast: wait S for completions (10)\n"
"      --cpu N              pin to CPU N\n"
"      --spin               never sleep while waiting for frames\n"
"  -a, --addrs SMAC,DMAC,SIP,DIP[,SIP6,DIP6]\n"
"                           addresses for gen/blast/ping, rewrite for tx\n"
"                           (alias --rewrite); SIP/DIP may be IPv4 or IPv6\n"
"  -v, --verbose            log every frame (rx) / debug messages\n"
"  -h, --help\n"
"\n"
"rx:\n"
"  -c, --count N            stop after N frames (then listen --linger more)\n"
"      --linger S           listen this long after --count for extra frames (0.2)\n"
"      --idle S             stop once no frame came for S seconds\n"
"      --expect-valid N     exactly N frames must parse with a valid ICRC\n"
"      --expect-err NAME=N  exactly N frames with parse error NAME (e.g.\n"
"                           icrc-mismatch); with any --expect-*, unlisted errors\n"
"                           must be 0\n"
"      --expect-xdp NAME=N  the steering counter NAME (e.g. drop_short) rose by N\n"
"      --check-pattern      verify gen/blast payloads and sequence numbers\n"
"      --ring-loss-ok       with --check-pattern and --count: frames may be\n"
"                           missing (forward sequence gaps, a short count) as\n"
"                           long as the kernel counted at least as many drops\n"
"                           on the socket (XDP_STATISTICS rx_dropped +\n"
"                           rx_ring_full: a descheduled receiver); a frame out\n"
"                           of order or repeated still fails\n"
"      --pcap FILE          write the received frames (reassembled) to FILE\n"
"      --detach             detach the steering program at exit if xskprobe\n"
"                           attached it\n"
"\n"
"tx:\n"
"      --pcap FILE          frames to send\n"
"      --filter EXPR        only the frames matching this pcap filter (e.g. ip6)\n"
"      --rewrite ...        see --addrs; IP checksum and ICRC are recomputed\n"
"      --corrupt-icrc       send every RoCEv2 frame with a wrong ICRC\n"
"      --truncate N         cut frames to N bytes (IP/UDP lengths follow)\n"
"      --via xsk|packet     AF_XDP (default) or the kernel stack (AF_PACKET)\n"
"      --repeat N           send the file N times\n"
"      --rate PPS           pace to PPS frames per second\n"
"\n"
"gen, blast, ping:\n"
"  -s, --size BYTES         frame size incl. Ethernet header and ICRC; rounded\n"
"                           down to a valid RoCEv2 length (≡ 2 mod 4)\n"
"  -c, --count N            frames (gen, ping)\n"
"  -d, --duration S         seconds (blast; default 3)\n"
"      --opcode send|write  RC SEND_ONLY (default) or RDMA_WRITE_ONLY\n"
"      --qpn N              destination QP (default 0x11)\n"
"      --ipv6               use the IPv6 addresses of --addrs\n"
"      --rate PPS           pace (gen)\n"
"\n"
"Exit status: 0 when everything was sent / every expectation held.\n",
		SINGLE_BUF_MAX);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || end == s || *end || *s == '-' ? -EINVAL : 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || *out < 0 ? -EINVAL : 0;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &tail) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 0xff)
			return -EINVAL;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

static int parse_ip_pair(const char *s, const char *d, struct addrs *a)
{
	if (strchr(s, ':')) {
		if (inet_pton(AF_INET6, s, &a->sip6) != 1 || inet_pton(AF_INET6, d, &a->dip6) != 1)
			return -EINVAL;
		a->has6 = true;
	} else {
		if (inet_pton(AF_INET, s, &a->sip4) != 1 || inet_pton(AF_INET, d, &a->dip4) != 1)
			return -EINVAL;
		a->has4 = true;
	}
	return 0;
}

static int parse_addrs(const char *arg, struct addrs *a)
{
	char buf[512], *f[7], *save = NULL, *tok;
	unsigned n = 0;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok && n < 7; tok = strtok_r(NULL, ",", &save))
		f[n++] = tok;
	if (n != 4 && n != 6)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	if (parse_mac(f[0], a->smac) || parse_mac(f[1], a->dmac))
		return -EINVAL;
	if (parse_ip_pair(f[2], f[3], a))
		return -EINVAL;
	if (n == 6 && parse_ip_pair(f[4], f[5], a))
		return -EINVAL;
	a->set = true;
	return 0;
}

static int parse_expect(const char *arg, struct expect *e)
{
	const char *eq = strchr(arg, '=');

	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(e->name))
		return -EINVAL;
	memcpy(e->name, arg, (size_t)(eq - arg));
	e->name[eq - arg] = '\0';
	return parse_u64(eq + 1, &e->n);
}

enum {
	OPT_XDP_MODE = 256, OPT_COPY, OPT_ZEROCOPY, OPT_MB, OPT_NO_MB, OPT_FRAMES, OPT_RX_RING,
	OPT_TX_RING, OPT_READY, OPT_LINGER, OPT_IDLE, OPT_EXPECT_VALID, OPT_EXPECT_ERR,
	OPT_EXPECT_XDP, OPT_CHECK_PATTERN, OPT_PCAP, OPT_FILTER, OPT_DETACH, OPT_CORRUPT,
	OPT_TRUNCATE, OPT_VIA, OPT_REPEAT, OPT_RATE, OPT_OPCODE, OPT_QPN, OPT_IPV6, OPT_CPU,
	OPT_SPIN, OPT_RING_LOSS_OK,
};

static const struct option long_opts[] = {
	{ "queue", required_argument, NULL, 'q' },
	{ "xdp-mode", required_argument, NULL, OPT_XDP_MODE },
	{ "copy", no_argument, NULL, OPT_COPY },
	{ "zerocopy", no_argument, NULL, OPT_ZEROCOPY },
	{ "multi-buffer", no_argument, NULL, OPT_MB },
	{ "no-multi-buffer", no_argument, NULL, OPT_NO_MB },
	{ "frames", required_argument, NULL, OPT_FRAMES },
	{ "rx-ring", required_argument, NULL, OPT_RX_RING },
	{ "tx-ring", required_argument, NULL, OPT_TX_RING },
	{ "ready-file", required_argument, NULL, OPT_READY },
	{ "timeout", required_argument, NULL, 't' },
	{ "count", required_argument, NULL, 'c' },
	{ "linger", required_argument, NULL, OPT_LINGER },
	{ "idle", required_argument, NULL, OPT_IDLE },
	{ "expect-valid", required_argument, NULL, OPT_EXPECT_VALID },
	{ "expect-err", required_argument, NULL, OPT_EXPECT_ERR },
	{ "expect-xdp", required_argument, NULL, OPT_EXPECT_XDP },
	{ "check-pattern", no_argument, NULL, OPT_CHECK_PATTERN },
	{ "ring-loss-ok", no_argument, NULL, OPT_RING_LOSS_OK },
	{ "pcap", required_argument, NULL, OPT_PCAP },
	{ "filter", required_argument, NULL, OPT_FILTER },
	{ "detach", no_argument, NULL, OPT_DETACH },
	{ "addrs", required_argument, NULL, 'a' },
	{ "rewrite", required_argument, NULL, 'a' },
	{ "corrupt-icrc", no_argument, NULL, OPT_CORRUPT },
	{ "truncate", required_argument, NULL, OPT_TRUNCATE },
	{ "via", required_argument, NULL, OPT_VIA },
	{ "repeat", required_argument, NULL, OPT_REPEAT },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "size", required_argument, NULL, 's' },
	{ "duration", required_argument, NULL, 'd' },
	{ "opcode", required_argument, NULL, OPT_OPCODE },
	{ "qpn", required_argument, NULL, OPT_QPN },
	{ "ipv6", no_argument, NULL, OPT_IPV6 },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "spin", no_argument, NULL, OPT_SPIN },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int bad_arg(const char *opt, const char *val)
{
	fprintf(stderr, "xskprobe: invalid value for %s: '%s' (see --help)\n", opt, val);
	return -EINVAL;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	uint64_t v;
	double d;
	int c;

	memset(o, 0, sizeof(*o));
	o->multi_buffer = -1;
	o->expect_valid = -1;
	o->linger = 0.2;
	o->repeat = 1;
	o->opcode = XRXE_OPCODE(RC, SEND_ONLY);
	o->qpn = 0x11;
	o->cpu = -1;
	o->xdp_mode = XRXE_STEER_MODE_NATIVE;
	o->xsk_mode = XRXE_XSK_MODE_AUTO;

	if (argc < 2) {
		usage(stderr);
		return -EINVAL;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		exit(0);
	}
	for (c = 0; c < (int)(sizeof(mode_names) / sizeof(mode_names[0])); c++)
		if (!strcmp(argv[1], mode_names[c]))
			break;
	if (c == (int)(sizeof(mode_names) / sizeof(mode_names[0]))) {
		fprintf(stderr, "xskprobe: unknown mode '%s' (rx, tx, gen, blast, ping, pong)\n",
			argv[1]);
		return -EINVAL;
	}
	o->mode = (enum mode)c;
	argc--;
	argv++;

	while ((c = getopt_long(argc, argv, "q:t:c:a:s:d:vh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'q':
			if (parse_u64(optarg, &v) || v >= XRXE_STEER_MAX_QUEUES)
				return bad_arg("--queue", optarg);
			o->queue = (uint32_t)v;
			break;
		case OPT_XDP_MODE:
			if (!strcmp(optarg, "native"))
				o->xdp_mode = XRXE_STEER_MODE_NATIVE;
			else if (!strcmp(optarg, "skb"))
				o->xdp_mode = XRXE_STEER_MODE_SKB;
			else
				return bad_arg("--xdp-mode", optarg);
			break;
		case OPT_COPY: o->xsk_mode = XRXE_XSK_MODE_COPY; break;
		case OPT_ZEROCOPY: o->xsk_mode = XRXE_XSK_MODE_ZEROCOPY; break;
		case OPT_MB: o->multi_buffer = 1; break;
		case OPT_NO_MB: o->multi_buffer = 0; break;
		case OPT_FRAMES:
		case OPT_RX_RING:
		case OPT_TX_RING:
			if (parse_u64(optarg, &v) || v > (1u << 24))
				return bad_arg("ring/frame size", optarg);
			if (c == OPT_FRAMES)
				o->frames = (uint32_t)v;
			else if (c == OPT_RX_RING)
				o->rx_ring = (uint32_t)v;
			else
				o->tx_ring = (uint32_t)v;
			break;
		case OPT_READY: o->ready_file = optarg; break;
		case 't':
			if (parse_double(optarg, &o->timeout))
				return bad_arg("--timeout", optarg);
			break;
		case 'c':
			if (parse_u64(optarg, &o->count))
				return bad_arg("--count", optarg);
			break;
		case OPT_LINGER:
			if (parse_double(optarg, &o->linger))
				return bad_arg("--linger", optarg);
			break;
		case OPT_IDLE:
			if (parse_double(optarg, &o->idle))
				return bad_arg("--idle", optarg);
			break;
		case OPT_EXPECT_VALID:
			if (parse_u64(optarg, &v) || v > INT64_MAX)
				return bad_arg("--expect-valid", optarg);
			o->expect_valid = (int64_t)v;
			o->expect_given = true;
			break;
		case OPT_EXPECT_ERR:
			if (o->nexpect_err == MAX_EXPECT ||
			    parse_expect(optarg, &o->expect_err[o->nexpect_err]))
				return bad_arg("--expect-err", optarg);
			o->nexpect_err++;
			o->expect_given = true;
			break;
		case OPT_EXPECT_XDP:
			if (o->nexpect_xdp == MAX_EXPECT ||
			    parse_expect(optarg, &o->expect_xdp[o->nexpect_xdp]))
				return bad_arg("--expect-xdp", optarg);
			o->nexpect_xdp++;
			break;
		case OPT_CHECK_PATTERN: o->check_pattern = true; break;
		case OPT_RING_LOSS_OK: o->ring_loss_ok = true; break;
		case OPT_PCAP: o->pcap = optarg; break;
		case OPT_FILTER: o->filter = optarg; break;
		case OPT_DETACH: o->detach = true; break;
		case 'a':
			if (parse_addrs(optarg, &o->addrs))
				return bad_arg("--addrs/--rewrite", optarg);
			break;
		case OPT_CORRUPT: o->corrupt_icrc = true; break;
		case OPT_TRUNCATE:
			if (parse_u64(optarg, &v) || v == 0 || v > XRXE_MAX_FRAME_LEN)
				return bad_arg("--truncate", optarg);
			o->truncate = (uint32_t)v;
			break;
		case OPT_VIA:
			if (!strcmp(optarg, "packet"))
				o->via_packet = true;
			else if (strcmp(optarg, "xsk"))
				return bad_arg("--via", optarg);
			break;
		case OPT_REPEAT:
			if (parse_u64(optarg, &o->repeat))
				return bad_arg("--repeat", optarg);
			break;
		case OPT_RATE:
			if (parse_double(optarg, &o->rate))
				return bad_arg("--rate", optarg);
			break;
		case 's':
			if (parse_u64(optarg, &v) || v > XRXE_MAX_FRAME_LEN)
				return bad_arg("--size", optarg);
			o->size = (uint32_t)v;
			break;
		case 'd':
			if (parse_double(optarg, &d) || d <= 0)
				return bad_arg("--duration", optarg);
			o->duration = d;
			break;
		case OPT_OPCODE:
			if (!strcmp(optarg, "send"))
				o->opcode = XRXE_OPCODE(RC, SEND_ONLY);
			else if (!strcmp(optarg, "write"))
				o->opcode = XRXE_OPCODE(RC, RDMA_WRITE_ONLY);
			else
				return bad_arg("--opcode", optarg);
			break;
		case OPT_QPN:
			if (parse_u64(optarg, &v) || v > XRXE_QPN_MASK)
				return bad_arg("--qpn", optarg);
			o->qpn = (uint32_t)v;
			break;
		case OPT_IPV6: o->ipv6 = true; break;
		case OPT_CPU:
			if (parse_u64(optarg, &v) || v >= CPU_SETSIZE)
				return bad_arg("--cpu", optarg);
			o->cpu = (int)v;
			break;
		case OPT_SPIN: o->spin = true; break;
		case 'v': o->verbose = true; break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "xskprobe %s: expected exactly one interface name (see --help)\n",
			mode_names[o->mode]);
		return -EINVAL;
	}
	o->ifname = argv[optind];

	switch (o->mode) {
	case MODE_TX:
		if (!o->pcap) {
			fprintf(stderr, "xskprobe tx: --pcap FILE is required\n");
			return -EINVAL;
		}
		break;
	case MODE_GEN:
	case MODE_BLAST:
	case MODE_PING:
		if (!o->addrs.set || !o->size) {
			fprintf(stderr, "xskprobe %s: --addrs and --size are required\n",
				mode_names[o->mode]);
			return -EINVAL;
		}
		if (o->ipv6 ? !o->addrs.has6 : !o->addrs.has4) {
			fprintf(stderr, "xskprobe %s: --addrs has no IPv%d addresses\n",
				mode_names[o->mode], o->ipv6 ? 6 : 4);
			return -EINVAL;
		}
		if (o->mode != MODE_BLAST && !o->count) {
			fprintf(stderr, "xskprobe %s: --count is required\n", mode_names[o->mode]);
			return -EINVAL;
		}
		break;
	default:
		break;
	}
	if (o->mode == MODE_BLAST && o->duration == 0)
		o->duration = 3;
	return 0;
}

/* ------------------------------------------------------------------------
 * Opening the I/O layer (and the steering program for receivers)
 * ---------------------------------------------------------------------- */

struct io {
	struct xrxe_xsk *xsk;
	struct xrxe_steer_maps maps;
	bool have_maps;
	bool attached_by_us;
	struct xrxe_steer_stat xdp0[XRXE_STEER_COUNTER_COUNT];
	uint32_t mtu;
};

static int signal_ready(const char *path)
{
	int fd;

	if (!path)
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, "ready\n", 6) != 6) {
		xrxe_err("cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

static int io_open(const struct opts *o, bool receive, struct io *io)
{
	struct xrxe_xsk_config cfg = { 0 };
	struct xrxe_steer_state st;
	int err;

	memset(io, 0, sizeof(*io));
	io->maps.stats_fd = io->maps.xsks_fd = io->maps.flows_fd = io->maps.flow_count_fd = -1;
	err = xrxe_netdev_mtu(o->ifname, &io->mtu);
	if (err)
		return err;

	if (receive) {
		err = xrxe_steer_query(o->ifname, &st);
		if (err)
			return err;
		if (!st.ours) {
			bool already = false;

			err = xrxe_steer_attach(o->ifname, o->xdp_mode, &already);
			if (err)
				return err;
			io->attached_by_us = !already;
			xrxe_info("%s: attached the steering program (%s mode)", o->ifname,
				  xrxe_steer_mode_name(o->xdp_mode));
		}
		err = xrxe_steer_open_maps(o->ifname, &io->maps);
		if (err)
			goto err_detach;
		io->have_maps = true;
		err = xrxe_steer_read_stats(&io->maps, io->xdp0);
		if (err)
			goto err_maps;
	}

	cfg.ifname = o->ifname;
	cfg.queue_id = o->queue;
	cfg.xsks_map_fd = receive ? io->maps.xsks_fd : -1;
	cfg.frame_count = o->frames;
	cfg.rx_ring_size = o->rx_ring;
	cfg.tx_ring_size = o->tx_ring;
	cfg.mode = o->xsk_mode;
	/* A frame of MTU + Ethernet header + a VLAN tag must fit; one copy-mode
	 * buffer holds 3840 bytes. */
	cfg.multi_buffer = o->multi_buffer >= 0 ? o->multi_buffer
			 : io->mtu + XRXE_ETH_HLEN + XRXE_VLAN_HLEN > SINGLE_BUF_MAX;
	err = xrxe_xsk_open(&cfg, &io->xsk);
	if (err)
		goto err_maps;
	xrxe_info("%s/%u: AF_XDP socket bound (%s mode%s, MTU %u, max frame %u)", o->ifname,
		  o->queue, xrxe_xsk_is_zerocopy(io->xsk) ? "zero-copy" : "copy",
		  cfg.multi_buffer ? ", multi-buffer" : "", io->mtu, xrxe_xsk_max_frame_len(io->xsk));
	return 0;

err_maps:
	if (io->have_maps)
		xrxe_steer_close_maps(&io->maps);
	io->have_maps = false;
err_detach:
	if (io->attached_by_us && o->detach)
		xrxe_steer_detach(o->ifname);
	return err;
}

static void io_close(const struct opts *o, struct io *io)
{
	xrxe_xsk_close(io->xsk);
	io->xsk = NULL;
	if (io->have_maps)
		xrxe_steer_close_maps(&io->maps);
	io->have_maps = false;
	if (io->attached_by_us && o->detach)
		xrxe_steer_detach(o->ifname);
}

static void print_xsk_stats(struct xrxe_xsk *xsk)
{
	struct xrxe_xsk_stats s;

	xrxe_xsk_get_stats(xsk, &s);
#define P(f) printf("xsk %s %" PRIu64 "\n", #f, s.f)
	P(rx_frames); P(rx_bytes); P(rx_dropped_too_many_frags); P(rx_bad_desc);
	P(rx_bad_release); P(tx_frames); P(tx_bytes); P(tx_no_frames); P(tx_bad_frame);
	P(tx_kicks); P(tx_kick_errors); P(comp_bad_addr);
	P(k_rx_dropped); P(k_rx_invalid_descs); P(k_tx_invalid_descs);
	P(k_rx_ring_full); P(k_rx_fill_ring_empty); P(k_tx_ring_empty);
#undef P
}

/* Wait for frames without burning a core when nothing comes: spin a little
 * (a wake-up costs tens of µs in this VM, docs/facts/afxdp.md pitfall 13), then
 * sleep in poll() for at most 10 ms. */
static void rx_wait(const struct opts *o, struct io *io, unsigned *empty)
{
	struct pollfd pfd = { .fd = xrxe_xsk_fd(io->xsk), .events = POLLIN };

	if (o->spin || *empty < 2000)
		return;
	poll(&pfd, 1, 10);
}

/* ------------------------------------------------------------------------
 * Generated frames
 * ---------------------------------------------------------------------- */

struct gen {
	uint8_t hdr[128];
	uint32_t hdr_len, payload_len, frame_len;
	size_t l3_off, bth_off;
};

static int gen_init(struct gen *g, const struct opts *o, uint32_t size)
{
	struct xrxe_pkt_spec spec;
	uint8_t *buf;
	size_t hdr;
	int off;

	memset(&spec, 0, sizeof(spec));
	memcpy(spec.dmac, o->addrs.dmac, 6);
	memcpy(spec.smac, o->addrs.smac, 6);
	spec.ip_version = o->ipv6 ? 6 : 4;
	spec.ttl = 64;
	spec.ip_df = true;
	if (o->ipv6) {
		spec.saddr.v6 = o->addrs.sip6;
		spec.daddr.v6 = o->addrs.dip6;
	} else {
		spec.saddr.v4 = o->addrs.sip4;
		spec.daddr.v4 = o->addrs.dip4;
	}
	spec.sport = GEN_UDP_SPORT;
	spec.opcode = o->opcode;
	spec.pkey = XRXE_DEFAULT_PKEY;
	spec.dest_qp = o->qpn;
	spec.reth.va = 0x100000;
	spec.reth.rkey = 0x1234;

	hdr = xrxe_build_hdr_len(&spec);
	if (!hdr || hdr > sizeof(g->hdr))
		return -EINVAL;
	/* Payload a multiple of 4 so no pad is needed: every untagged RoCEv2 frame
	 * is then 2 mod 4 bytes long (14-byte Ethernet header, the rest in words),
	 * so the requested size is rounded down to that. At least 4 payload bytes
	 * carry the sequence number. */
	if (size < hdr + XRXE_ICRC_LEN + 4) {
		xrxe_err("--size %u: the smallest %s frame is %zu bytes", size,
			 xrxe_opcode_info(o->opcode)->name, hdr + XRXE_ICRC_LEN + 4);
		return -EINVAL;
	}
	spec.payload_len = (uint32_t)((size - hdr - XRXE_ICRC_LEN) & ~3u);
	spec.reth.len = spec.payload_len;
	g->frame_len = (uint32_t)xrxe_build_frame_len(&spec);
	buf = calloc(1, g->frame_len);
	if (!buf)
		return -ENOMEM;
	off = xrxe_build_headers(buf, g->frame_len, &spec);
	if (off < 0) {
		free(buf);
		xrxe_err("cannot build a %u-byte %s frame: %s", g->frame_len,
			 xrxe_opcode_info(o->opcode)->name, strerror(-off));
		return off;
	}
	g->hdr_len = (uint32_t)off;
	g->payload_len = spec.payload_len;
	memcpy(g->hdr, buf, g->hdr_len);
	free(buf);
	g->l3_off = XRXE_ETH_HLEN;
	g->bth_off = g->l3_off + (o->ipv6 ? XRXE_IPV6_HLEN : XRXE_IPV4_HLEN) + XRXE_UDP_HLEN;
	return 0;
}

/* Write frame seq of the generator into frags (sized g->frame_len). */
static void gen_fill(const struct gen *g, const struct xrxe_frag *frags, unsigned n, uint32_t seq)
{
	uint8_t seq_be[4] = { (uint8_t)(seq >> 24), (uint8_t)(seq >> 16), (uint8_t)(seq >> 8),
			      (uint8_t)seq };
	struct xrxe_bth *bth = (struct xrxe_bth *)(frags[0].data + g->bth_off);

	memcpy(frags[0].data, g->hdr, g->hdr_len); /* headers always lie in piece 0 */
	xrxe_bth_set_psn(bth, seq & XRXE_PSN_MASK);
	frags_put(frags, n, g->hdr_len, seq_be, 4);
	frags_put(frags, n, g->hdr_len + 4, pattern + pattern_off(seq) + 4, g->payload_len - 4);
	xrxe_build_finish_frags(frags, n, g->l3_off);
}

/* Generated payload check: 0 = ok, 1 = bad bytes. *seq gets the sequence. */
static int pattern_check(const struct xrxe_pkt *pkt, uint32_t *seq)
{
	uint8_t b[4];
	uint32_t psn = xrxe_bth_psn(xrxe_pkt_bth(pkt));

	if (pkt->payload_len < 4 || xrxe_pkt_copy_payload(pkt, 0, b, 4))
		return 1;
	*seq = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	if ((*seq & XRXE_PSN_MASK) != psn)
		return 1;
	return frags_cmp(pkt->frag, pkt->nfrags, pkt->payload_off + 4,
			 pattern + pattern_off(*seq) + 4, pkt->payload_len - 4);
}

/* ------------------------------------------------------------------------
 * rx
 * ---------------------------------------------------------------------- */

struct rx_counts {
	uint64_t frames, bytes, ok;
	uint64_t err[XRXE_PARSE_ERROR_COUNT];
	uint64_t opcode[256];
	uint64_t pattern_ok, pattern_err, seq_err;
	uint64_t seq_back; /* sequence errors that went back: reordered or repeated */
	uint32_t next_seq;
	uint64_t first_ns, last_ns;
};

static void rx_account(const struct opts *o, struct rx_counts *rc,
		       const struct xrxe_rx_frame *f, pcap_dumper_t *dump, uint8_t *scratch)
{
	struct xrxe_pkt pkt;
	int perr;

	rc->frames++;
	rc->bytes += f->len;
	rc->last_ns = now_ns();
	if (!rc->first_ns)
		rc->first_ns = rc->last_ns;

	perr = xrxe_parse_frags(f->frag, f->nfrags, 0, &pkt);
	if (perr < 0 || perr >= XRXE_PARSE_ERROR_COUNT)
		perr = XRXE_PARSE_TRUNCATED; /* cannot happen; keep the count honest */
	if (perr == XRXE_PARSE_OK) {
		rc->ok++;
		rc->opcode[pkt.opcode]++;
		if (o->check_pattern) {
			uint32_t seq = 0;

			if (pattern_check(&pkt, &seq)) {
				rc->pattern_err++;
			} else {
				rc->pattern_ok++;
				if (seq != rc->next_seq) {
					rc->seq_err++;
					/* a gap forward is a loss; anything else
					 * is a frame out of order or twice */
					if ((int32_t)(seq - rc->next_seq) < 0)
						rc->seq_back++;
				}
				rc->next_seq = seq + 1;
			}
		}
	} else {
		rc->err[perr]++;
	}
	if (o->verbose)
		xrxe_info("rx %u bytes in %u piece(s): %s%s%s", f->len, f->nfrags,
			  xrxe_parse_strerror(perr), perr ? "" : " ",
			  perr ? "" : (pkt.op ? pkt.op->name : "?"));
	if (dump) {
		struct pcap_pkthdr h;
		struct timeval tv;

		gettimeofday(&tv, NULL);
		h.ts = tv;
		h.len = f->len;
		h.caplen = gather(f->frag, f->nfrags, scratch, XRXE_MAX_FRAME_LEN * 2);
		pcap_dump((u_char *)dump, &h, scratch);
	}
}

static bool expect_matches(const struct expect *e, uint64_t got, const char *what)
{
	if (got == e->n)
		return true;
	printf("expect_fail %s %s want %" PRIu64 " got %" PRIu64 "\n", what, e->name, e->n, got);
	return false;
}

static int xdp_counter_by_name(const char *name)
{
	for (int c = 0; c < XRXE_STEER_COUNTER_COUNT; c++)
		if (!strcmp(xrxe_steer_counter_name((enum xrxe_steer_counter)c), name))
			return c;
	return -1;
}

static int parse_err_by_name(const char *name)
{
	for (int e = 1; e < XRXE_PARSE_ERROR_COUNT; e++)
		if (!strcmp(xrxe_parse_strerror((enum xrxe_parse_error)e), name))
			return e;
	return -1;
}

static int run_rx(const struct opts *o)
{
	struct xrxe_rx_frame frames[RX_BURST];
	struct rx_counts *rc;
	struct io io;
	pcap_t *dead = NULL;
	pcap_dumper_t *dump = NULL;
	uint8_t *scratch = NULL;
	uint64_t t0, deadline, count_done = 0, now;
	unsigned empty = 0;
	bool pass = true;
	int err;

	/* Validate expectation names before anything is attached. */
	for (unsigned i = 0; i < o->nexpect_err; i++)
		if (parse_err_by_name(o->expect_err[i].name) < 0) {
			fprintf(stderr, "xskprobe: unknown parse error '%s'\n", o->expect_err[i].name);
			return 2;
		}
	for (unsigned i = 0; i < o->nexpect_xdp; i++)
		if (xdp_counter_by_name(o->expect_xdp[i].name) < 0) {
			fprintf(stderr, "xskprobe: unknown XDP counter '%s'\n", o->expect_xdp[i].name);
			return 2;
		}

	rc = calloc(1, sizeof(*rc));
	scratch = malloc(XRXE_MAX_FRAME_LEN * 2);
	if (!rc || !scratch) {
		free(rc);
		free(scratch);
		return 1;
	}
	if (o->pcap) {
		dead = pcap_open_dead(DLT_EN10MB, 262144);
		dump = dead ? pcap_dump_open(dead, o->pcap) : NULL;
		if (!dump) {
			xrxe_err("cannot write %s: %s", o->pcap, dead ? pcap_geterr(dead) : "pcap");
			err = -EIO;
			goto out_free;
		}
	}
	err = io_open(o, true, &io);
	if (err)
		goto out_free;
	if (signal_ready(o->ready_file)) {
		err = -EIO;
		goto out_close;
	}

	t0 = now_ns();
	deadline = o->timeout > 0 ? t0 + (uint64_t)(o->timeout * 1e9) : UINT64_MAX;
	while (!stop) {
		unsigned n = xrxe_xsk_rx_burst(io.xsk, frames, RX_BURST);

		for (unsigned i = 0; i < n; i++)
			rx_account(o, rc, &frames[i], dump, scratch);
		if (n) {
			xrxe_xsk_rx_release(io.xsk, frames, n);
			empty = 0;
			if (o->count && rc->frames >= o->count && !count_done)
				count_done = now_ns();
			continue;
		}
		/* Reading the clock on every empty poll would cost more than the
		 * poll itself; a deadline a few µs late does not matter. */
		if (++empty & 63 && !(empty > 2000 && !o->spin))
			continue;
		now = now_ns();
		if (now >= deadline)
			break;
		if (count_done && now - count_done >= (uint64_t)(o->linger * 1e9))
			break;
		if (o->idle > 0 && rc->last_ns && now - rc->last_ns >= (uint64_t)(o->idle * 1e9))
			break;
		rx_wait(o, &io, &empty);
	}

	/* Summary */
	printf("rx_frames %" PRIu64 "\n", rc->frames);
	printf("rx_bytes %" PRIu64 "\n", rc->bytes);
	printf("rx_ok %" PRIu64 "\n", rc->ok);
	for (int e = 1; e < XRXE_PARSE_ERROR_COUNT; e++)
		if (rc->err[e])
			printf("rx_err %s %" PRIu64 "\n",
			       xrxe_parse_strerror((enum xrxe_parse_error)e), rc->err[e]);
	for (int op = 0; op < 256; op++) {
		const struct xrxe_opcode_info *info = xrxe_opcode_info((uint8_t)op);

		if (rc->opcode[op])
			printf("rx_opcode %s %" PRIu64 "\n", info ? info->name : "?", rc->opcode[op]);
	}
	if (o->check_pattern) {
		printf("rx_pattern_ok %" PRIu64 "\n", rc->pattern_ok);
		printf("rx_pattern_err %" PRIu64 "\n", rc->pattern_err);
		printf("rx_seq_err %" PRIu64 "\n", rc->seq_err);
		printf("rx_seq_back %" PRIu64 "\n", rc->seq_back);
	}
	if (rc->frames > 1 && rc->last_ns > rc->first_ns) {
		double secs = (double)(rc->last_ns - rc->first_ns) / 1e9;
		/* rate over the frames after the first: the first starts the clock */
		double pps = (double)(rc->frames - 1) / secs;

		printf("rx_mpps %.3f\n", pps / 1e6);
		printf("rx_gbps %.3f\n", pps * ((double)rc->bytes / (double)rc->frames) * 8 / 1e9);
	}
	if (io.have_maps) {
		struct xrxe_steer_stat s1[XRXE_STEER_COUNTER_COUNT];

		if (!xrxe_steer_read_stats(&io.maps, s1)) {
			for (int c = 0; c < XRXE_STEER_COUNTER_COUNT; c++) {
				uint64_t d = s1[c].packets - io.xdp0[c].packets;

				printf("xdp %s %" PRIu64 "\n",
				       xrxe_steer_counter_name((enum xrxe_steer_counter)c), d);
				for (unsigned i = 0; i < o->nexpect_xdp; i++)
					if (xdp_counter_by_name(o->expect_xdp[i].name) == c)
						pass &= expect_matches(&o->expect_xdp[i], d, "xdp");
			}
		} else {
			pass = false;
		}
	}
	print_xsk_stats(io.xsk);

	/* Expectations. With --ring-loss-ok, what the kernel dropped because
	 * this receiver's rings were full or its fill ring empty may be
	 * missing from the count (and from --expect-valid); nothing else may. */
	uint64_t ring_drops = 0;

	if (o->ring_loss_ok) {
		struct xrxe_xsk_stats ks;

		xrxe_xsk_get_stats(io.xsk, &ks);
		ring_drops = ks.k_rx_dropped + ks.k_rx_ring_full;
		printf("rx_ring_drops %" PRIu64 "\n", ring_drops);
	}
	if (o->expect_valid >= 0 && o->ring_loss_ok &&
	    (rc->ok > (uint64_t)o->expect_valid || rc->ok + ring_drops < (uint64_t)o->expect_valid)) {
		printf("expect_fail valid want %" PRId64 " (less at most %" PRIu64 " ring drops) got %" PRIu64 "\n",
		       o->expect_valid, ring_drops, rc->ok);
		pass = false;
	}
	if (o->expect_valid >= 0 && !o->ring_loss_ok && rc->ok != (uint64_t)o->expect_valid) {
		printf("expect_fail valid want %" PRId64 " got %" PRIu64 "\n", o->expect_valid,
		       rc->ok);
		pass = false;
	}
	if (o->expect_given) {
		for (int e = 1; e < XRXE_PARSE_ERROR_COUNT; e++) {
			struct expect want = { .n = 0 };

			snprintf(want.name, sizeof(want.name), "%s",
				 xrxe_parse_strerror((enum xrxe_parse_error)e));
			for (unsigned i = 0; i < o->nexpect_err; i++)
				if (parse_err_by_name(o->expect_err[i].name) == e)
					want.n = o->expect_err[i].n;
			pass &= expect_matches(&want, rc->err[e], "err");
		}
	}
	if (o->check_pattern && o->ring_loss_ok) {
		if (rc->pattern_err || rc->seq_back) {
			printf("expect_fail pattern errors %" PRIu64 " out-of-order or repeated %" PRIu64 "\n",
			       rc->pattern_err, rc->seq_back);
			pass = false;
		}
	} else if (o->check_pattern && (rc->pattern_err || rc->seq_err)) {
		printf("expect_fail pattern errors %" PRIu64 " sequence errors %" PRIu64 "\n",
		       rc->pattern_err, rc->seq_err);
		pass = false;
	}
	if (o->count && rc->frames + ring_drops < o->count) {
		printf("expect_fail count want %" PRIu64 " got %" PRIu64 "\n", o->count, rc->frames);
		pass = false;
	}
	printf("result %s\n", pass ? "ok" : "fail");
	err = pass ? 0 : -EPROTO;

out_close:
	io_close(o, &io);
out_free:
	if (dump)
		pcap_dump_close(dump);
	if (dead)
		pcap_close(dead);
	free(scratch);
	free(rc);
	return err ? 1 : 0;
}

/* ------------------------------------------------------------------------
 * Sending helpers
 * ---------------------------------------------------------------------- */

/* Wait until the send time of frame i at the given rate. */
static void pace(double rate, uint64_t t0, uint64_t i)
{
	uint64_t due;

	if (rate <= 0)
		return;
	due = t0 + (uint64_t)((double)i * 1e9 / rate);
	while (!stop) {
		uint64_t now = now_ns();

		if (now >= due)
			return;
		if (due - now > 200000) {
			struct timespec ts = { 0, (long)(due - now - 100000) };

			nanosleep(&ts, NULL);
		}
	}
}

/* Send one contiguous frame through the xsk, waiting for room as long as the
 * kernel keeps pushing back (pfifo on veth, docs/facts/afxdp.md pitfall 6). */
static int xsk_send_wait(struct xrxe_xsk *xsk, const uint8_t *frame, uint32_t len)
{
	uint64_t t0 = 0;

	for (;;) {
		int err = xrxe_xsk_send(xsk, frame, len);

		if (err != -ENOBUFS)
			return err;
		if (!t0)
			t0 = now_ns();
		else if (now_ns() - t0 > 5000000000ull)
			return -ETIMEDOUT; /* nothing completed for 5 s */
		if (stop)
			return -EINTR;
		xrxe_xsk_tx_flush(xsk);
	}
}

/* Kick and reap until every frame has completed (or timeout). */
static int xsk_drain(struct xrxe_xsk *xsk, double timeout)
{
	uint64_t deadline = now_ns() + (uint64_t)(timeout * 1e9);

	while (xrxe_xsk_tx_pending(xsk)) {
		xrxe_xsk_tx_flush(xsk);
		if (now_ns() > deadline || stop)
			return -ETIMEDOUT;
	}
	return 0;
}

static uint16_t ip_csum(const uint8_t *p, unsigned len)
{
	uint32_t sum = 0;

	for (unsigned i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

struct frame_layout {
	uint32_t l3_off, l4_off;
	uint8_t ipv;   /* 0 = not IP */
	bool roce;     /* UDP to 4791 */
	uint32_t ip_end; /* end of the IP datagram (Ethernet padding may follow) */
};

static void frame_layout(const uint8_t *f, uint32_t len, struct frame_layout *l)
{
	uint16_t et;

	memset(l, 0, sizeof(*l));
	if (len < XRXE_ETH_HLEN)
		return;
	l->l3_off = XRXE_ETH_HLEN;
	et = get_be16(f + 12);
	if (et == ETHERTYPE_VLAN && len >= XRXE_ETH_HLEN + XRXE_VLAN_HLEN) {
		l->l3_off += XRXE_VLAN_HLEN;
		et = get_be16(f + 16);
	}
	if (et == ETHERTYPE_IP && len >= l->l3_off + XRXE_IPV4_HLEN) {
		uint32_t ihl = (f[l->l3_off] & 0x0f) * 4u;

		l->ipv = 4;
		l->l4_off = l->l3_off + ihl;
		l->ip_end = l->l3_off + get_be16(f + l->l3_off + 2);
		l->roce = f[l->l3_off + 9] == IPPROTO_UDP;
	} else if (et == ETHERTYPE_IPV6 && len >= l->l3_off + XRXE_IPV6_HLEN) {
		l->ipv = 6;
		l->l4_off = l->l3_off + XRXE_IPV6_HLEN;
		l->ip_end = l->l4_off + get_be16(f + l->l3_off + 4);
		l->roce = f[l->l3_off + 6] == IPPROTO_UDP;
	}
	if (l->ip_end > len)
		l->ip_end = len;
	l->roce = l->roce && len >= l->l4_off + XRXE_UDP_HLEN &&
		  get_be16(f + l->l4_off + 2) == XRXE_ROCEV2_UDP_PORT;
}

static void fix_ipv4_csum(uint8_t *f, const struct frame_layout *l)
{
	uint8_t *ip = f + l->l3_off;
	unsigned ihl = (ip[0] & 0x0f) * 4u;

	ip[10] = ip[11] = 0;
	put_be16(ip + 10, ip_csum(ip, ihl));
}

/* Rewrite addresses, recompute IP checksum and ICRC, then corrupt/truncate as
 * asked. Returns the new length. */
static uint32_t prepare_frame(const struct opts *o, uint8_t *f, uint32_t len)
{
	struct frame_layout l;

	frame_layout(f, len, &l);
	if (o->addrs.set && len >= XRXE_ETH_HLEN) {
		memcpy(f, o->addrs.dmac, 6);
		memcpy(f + 6, o->addrs.smac, 6);
	}
	if (l.ipv == 4 && o->addrs.has4) {
		memcpy(f + l.l3_off + 12, &o->addrs.sip4, 4);
		memcpy(f + l.l3_off + 16, &o->addrs.dip4, 4);
	} else if (l.ipv == 6 && o->addrs.has6) {
		memcpy(f + l.l3_off + 8, &o->addrs.sip6, 16);
		memcpy(f + l.l3_off + 24, &o->addrs.dip6, 16);
	}
	if (l.ipv == 4)
		fix_ipv4_csum(f, &l);
	/* The ICRC covers the IP addresses: a rewritten frame needs a new one. */
	if (l.roce && l.ip_end >= l.l4_off + XRXE_UDP_HLEN + XRXE_BTH_LEN + XRXE_ICRC_LEN) {
		uint32_t icrc = xrxe_icrc(f, l.ip_end, l.l3_off);

		if (o->corrupt_icrc)
			icrc ^= 0x5a5a5a5a;
		/* the ICRC goes out least-significant byte first */
		for (int i = 0; i < 4; i++)
			f[l.ip_end - 4 + i] = (uint8_t)(icrc >> (8 * i));
	}
	if (o->truncate && o->truncate < len) {
		len = o->truncate;
		/* Keep the IP and UDP lengths consistent with the cut, so the frame
		 * is a well-formed but short RoCEv2 datagram. */
		if (l.ipv == 4 && len >= l.l3_off + XRXE_IPV4_HLEN) {
			put_be16(f + l.l3_off + 2, (uint16_t)(len - l.l3_off));
			fix_ipv4_csum(f, &l);
		} else if (l.ipv == 6 && len >= l.l4_off) {
			put_be16(f + l.l3_off + 4, (uint16_t)(len - l.l4_off));
		}
		if (l.ipv && len >= l.l4_off + XRXE_UDP_HLEN)
			put_be16(f + l.l4_off + 4, (uint16_t)(len - l.l4_off));
	}
	return len;
}

/* ------------------------------------------------------------------------
 * tx
 * ---------------------------------------------------------------------- */

struct pkt_buf {
	uint8_t *data;
	uint32_t len;
};

static int load_pcap(const struct opts *o, struct pkt_buf **out, size_t *nout)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct bpf_program prog;
	struct pcap_pkthdr *h;
	const u_char *data;
	struct pkt_buf *v = NULL;
	size_t n = 0, cap = 0;
	pcap_t *p;
	int rc, err = 0;

	p = pcap_open_offline(o->pcap, errbuf);
	if (!p) {
		xrxe_err("%s", errbuf);
		return -ENOENT;
	}
	if (pcap_datalink(p) != DLT_EN10MB) {
		xrxe_err("%s: not an Ethernet capture", o->pcap);
		pcap_close(p);
		return -EINVAL;
	}
	if (o->filter) {
		if (pcap_compile(p, &prog, o->filter, 1, PCAP_NETMASK_UNKNOWN)) {
			xrxe_err("--filter '%s': %s", o->filter, pcap_geterr(p));
			pcap_close(p);
			return -EINVAL;
		}
	}
	while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
		if (h->caplen != h->len) {
			xrxe_warn("%s: frame %zu truncated in the capture, skipped", o->pcap, n + 1);
			continue;
		}
		if (o->filter && !pcap_offline_filter(&prog, h, data))
			continue;
		if (n == cap) {
			struct pkt_buf *nv;

			cap = cap ? cap * 2 : 256;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n].data = malloc(h->caplen);
		if (!v[n].data) {
			err = -ENOMEM;
			break;
		}
		memcpy(v[n].data, data, h->caplen);
		v[n].len = prepare_frame(o, v[n].data, h->caplen);
		n++;
	}
	if (rc == -1) {
		xrxe_err("%s: %s", o->pcap, pcap_geterr(p));
		err = -EIO;
	}
	if (o->filter)
		pcap_freecode(&prog);
	pcap_close(p);
	if (err) {
		for (size_t i = 0; i < n; i++)
			free(v[i].data);
		free(v);
		return err;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* The kernel path: an AF_PACKET socket goes through the qdisc and the stack's
 * transmit path, like any application traffic. */
static int packet_open(const char *ifname, struct sockaddr_ll *sll)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); /* protocol 0: never receives */

	if (fd < 0)
		return -errno;
	memset(sll, 0, sizeof(*sll));
	sll->sll_family = AF_PACKET;
	sll->sll_ifindex = (int)if_nametoindex(ifname);
	sll->sll_halen = 6;
	if (!sll->sll_ifindex) {
		close(fd);
		return -ENODEV;
	}
	return fd;
}

static int packet_send(int fd, struct sockaddr_ll *sll, const uint8_t *f, uint32_t len)
{
	uint64_t t0 = now_ns();

	memcpy(sll->sll_addr, f, 6);
	for (;;) {
		if (sendto(fd, f, len, 0, (struct sockaddr *)sll, sizeof(*sll)) == (ssize_t)len)
			return 0;
		/* ENOBUFS: the qdisc was full and dropped it; try again shortly */
		if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (stop || now_ns() - t0 > 5000000000ull)
			return -ETIMEDOUT;
		usleep(50);
	}
}

static int run_tx(const struct opts *o)
{
	struct pkt_buf *v = NULL;
	size_t n = 0;
	struct io io = { 0 };
	struct sockaddr_ll sll;
	int pfd = -1, err;
	uint64_t sent = 0, bytes = 0, skipped = 0, t0, t1, i = 0;

	err = load_pcap(o, &v, &n);
	if (err)
		return 1;
	if (o->via_packet) {
		pfd = packet_open(o->ifname, &sll);
		if (pfd < 0) {
			xrxe_err("%s: AF_PACKET socket: %s", o->ifname, strerror(-pfd));
			err = pfd;
			goto out;
		}
	} else {
		err = io_open(o, false, &io);
		if (err)
			goto out;
	}
	if (signal_ready(o->ready_file)) {
		err = -EIO;
		goto out;
	}

	t0 = now_ns();
	for (uint64_t r = 0; r < o->repeat && !err && !stop; r++) {
		for (size_t k = 0; k < n && !stop; k++) {
			pace(o->rate, t0, i++);
			if (o->via_packet) {
				err = packet_send(pfd, &sll, v[k].data, v[k].len);
			} else {
				err = xsk_send_wait(io.xsk, v[k].data, v[k].len);
				if (err == -EMSGSIZE) {
					xrxe_warn("frame %zu: %u bytes exceed the interface's max frame %u: skipped",
						  k + 1, v[k].len, xrxe_xsk_max_frame_len(io.xsk));
					skipped++;
					err = 0;
					continue;
				}
				/* the kick is what transmits in copy mode */
				xrxe_xsk_tx_flush(io.xsk);
			}
			if (err) {
				xrxe_err("frame %zu: %s", k + 1, strerror(-err));
				break;
			}
			sent++;
			bytes += v[k].len;
		}
	}
	if (!o->via_packet && !err) {
		err = xsk_drain(io.xsk, o->timeout > 0 ? o->timeout : 10);
		if (err)
			xrxe_err("%u frame(s) never completed", xrxe_xsk_tx_pending(io.xsk));
	}
	t1 = now_ns();
	printf("tx_frames %" PRIu64 "\n", sent);
	printf("tx_bytes %" PRIu64 "\n", bytes);
	printf("tx_skipped %" PRIu64 "\n", skipped);
	if (t1 > t0)
		printf("tx_mpps %.3f\n", (double)sent / ((double)(t1 - t0) / 1e9) / 1e6);
	if (io.xsk)
		print_xsk_stats(io.xsk);
out:
	if (pfd >= 0)
		close(pfd);
	if (io.xsk)
		io_close(o, &io);
	for (size_t k = 0; k < n; k++)
		free(v[k].data);
	free(v);
	return err || skipped ? 1 : 0;
}

/* ------------------------------------------------------------------------
 * gen / blast
 * ---------------------------------------------------------------------- */

static int run_gen(const struct opts *o)
{
	struct xrxe_tx_frame batch[TX_BATCH];
	struct io io;
	struct gen g;
	uint64_t sent = 0, t0, t_end, t1, limit;
	bool blast = o->mode == MODE_BLAST;
	unsigned nb = 0;
	int err;

	err = gen_init(&g, o, o->size);
	if (err)
		return 1;
	err = io_open(o, false, &io);
	if (err)
		return 1;
	if (g.frame_len > xrxe_xsk_max_frame_len(io.xsk)) {
		xrxe_err("a %u-byte frame exceeds the max frame %u of %s (MTU %u)", g.frame_len,
			 xrxe_xsk_max_frame_len(io.xsk), o->ifname, io.mtu);
		err = -EMSGSIZE;
		goto out;
	}
	printf("gen_frame_len %u\n", g.frame_len);
	if (signal_ready(o->ready_file)) {
		err = -EIO;
		goto out;
	}

	limit = blast ? (o->count ? o->count : UINT64_MAX) : o->count;
	t0 = now_ns();
	t_end = blast ? t0 + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	while (sent < limit && !stop) {
		/* Paced runs go frame by frame; free runs batch TX_BATCH frames per
		 * ring submission and wake-up. */
		unsigned want = o->rate > 0 ? 1 : TX_BATCH;

		if (blast && now_ns() >= t_end)
			break;
		if (o->rate > 0)
			pace(o->rate, t0, sent);
		while (nb < want && sent + nb < limit) {
			err = xrxe_xsk_tx_reserve(io.xsk, g.frame_len, &batch[nb]);
			if (err)
				break;
			gen_fill(&g, batch[nb].frag, batch[nb].nfrags, (uint32_t)(sent + nb));
			nb++;
		}
		if (err && err != -ENOBUFS)
			break;
		err = 0;
		if (nb && xrxe_xsk_tx_submit(io.xsk, batch, nb) == (int)nb) {
			sent += nb;
			nb = 0;
		}
		xrxe_xsk_tx_flush(io.xsk);
	}
	for (unsigned i = 0; i < nb; i++)
		xrxe_xsk_tx_abort(io.xsk, &batch[i]);
	if (!err) {
		err = xsk_drain(io.xsk, o->timeout > 0 ? o->timeout : 10);
		if (err)
			xrxe_err("%u frame(s) never completed", xrxe_xsk_tx_pending(io.xsk));
	}
	t1 = now_ns();
	printf("tx_frames %" PRIu64 "\n", sent);
	printf("tx_bytes %" PRIu64 "\n", sent * g.frame_len);
	if (t1 > t0) {
		double pps = (double)sent / ((double)(t1 - t0) / 1e9);

		printf("tx_mpps %.3f\n", pps / 1e6);
		printf("tx_gbps %.3f\n", pps * g.frame_len * 8 / 1e9);
	}
	print_xsk_stats(io.xsk);
	if (err)
		xrxe_err("%s", strerror(-err));
out:
	io_close(o, &io);
	return err ? 1 : 0;
}

/* ------------------------------------------------------------------------
 * ping / pong
 * ---------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int run_ping(const struct opts *o)
{
	struct xrxe_rx_frame frames[RX_BURST];
	struct xrxe_tx_frame tf;
	struct io io;
	struct gen g;
	uint64_t *rtt, got = 0, lost = 0, bad = 0;
	double wait = o->timeout > 0 ? o->timeout : 1.0; /* per ping */
	int err;

	err = gen_init(&g, o, o->size);
	if (err)
		return 1;
	rtt = calloc(o->count, sizeof(*rtt));
	if (!rtt)
		return 1;
	err = io_open(o, true, &io);
	if (err) {
		free(rtt);
		return 1;
	}
	printf("gen_frame_len %u\n", g.frame_len);
	signal_ready(o->ready_file);

	for (uint64_t i = 0; i < o->count && !stop; i++) {
		uint64_t t0, deadline;
		bool done = false;

		do {
			err = xrxe_xsk_tx_reserve(io.xsk, g.frame_len, &tf);
			if (err == -ENOBUFS)
				xrxe_xsk_tx_flush(io.xsk);
		} while (err == -ENOBUFS && !stop);
		if (err)
			break;
		gen_fill(&g, tf.frag, tf.nfrags, (uint32_t)i);
		t0 = now_ns();
		if (xrxe_xsk_tx_submit(io.xsk, &tf, 1) != 1) {
			xrxe_xsk_tx_abort(io.xsk, &tf);
			err = -ENOBUFS;
			break;
		}
		xrxe_xsk_tx_flush(io.xsk);
		deadline = t0 + (uint64_t)(wait * 1e9);
		while (!done && !stop) {
			unsigned n = xrxe_xsk_rx_burst(io.xsk, frames, RX_BURST);
			uint64_t t1 = now_ns();

			for (unsigned k = 0; k < n; k++) {
				struct xrxe_pkt pkt;
				uint32_t seq;

				if (xrxe_parse_frags(frames[k].frag, frames[k].nfrags, 0, &pkt) ||
				    pattern_check(&pkt, &seq)) {
					bad++;
					continue;
				}
				if (seq == (uint32_t)i) {
					rtt[got++] = t1 - t0;
					done = true;
				}
				/* an echo of an earlier, timed-out ping is ignored */
			}
			if (n)
				xrxe_xsk_rx_release(io.xsk, frames, n);
			xrxe_xsk_tx_flush(io.xsk);
			if (!done && t1 > deadline) {
				lost++;
				break;
			}
		}
	}
	err = 0;
	printf("ping_sent %" PRIu64 "\n", got + lost);
	printf("ping_received %" PRIu64 "\n", got);
	printf("ping_lost %" PRIu64 "\n", lost);
	printf("ping_bad %" PRIu64 "\n", bad);
	if (got) {
		double sum = 0;

		qsort(rtt, got, sizeof(*rtt), cmp_u64);
		for (uint64_t k = 0; k < got; k++)
			sum += (double)rtt[k];
		printf("rtt_min_us %.2f\n", (double)rtt[0] / 1e3);
		printf("rtt_p50_us %.2f\n", (double)rtt[got / 2] / 1e3);
		printf("rtt_p99_us %.2f\n", (double)rtt[(got * 99) / 100] / 1e3);
		printf("rtt_p999_us %.2f\n", (double)rtt[(got * 999) / 1000] / 1e3);
		printf("rtt_max_us %.2f\n", (double)rtt[got - 1] / 1e3);
		printf("rtt_avg_us %.2f\n", sum / (double)got / 1e3);
	}
	io_close(o, &io);
	free(rtt);
	return lost || bad || got != o->count ? 1 : 0;
}

/* Turn a received RoCEv2 frame around: swap the MACs and IP addresses and
 * recompute the ICRC (which covers the addresses; the IPv4 checksum does not
 * change when its words are swapped). */
static void reflect(uint8_t *f, uint32_t len)
{
	struct frame_layout l;
	uint8_t tmp[16];

	frame_layout(f, len, &l);
	memcpy(tmp, f, 6);
	memcpy(f, f + 6, 6);
	memcpy(f + 6, tmp, 6);
	if (l.ipv == 4) {
		memcpy(tmp, f + l.l3_off + 12, 4);
		memcpy(f + l.l3_off + 12, f + l.l3_off + 16, 4);
		memcpy(f + l.l3_off + 16, tmp, 4);
	} else if (l.ipv == 6) {
		memcpy(tmp, f + l.l3_off + 8, 16);
		memcpy(f + l.l3_off + 8, f + l.l3_off + 24, 16);
		memcpy(f + l.l3_off + 24, tmp, 16);
	}
	if (l.roce && l.ip_end >= l.l4_off + XRXE_UDP_HLEN + XRXE_BTH_LEN + XRXE_ICRC_LEN) {
		uint32_t icrc = xrxe_icrc(f, l.ip_end, l.l3_off);

		for (int i = 0; i < 4; i++)
			f[l.ip_end - 4 + i] = (uint8_t)(icrc >> (8 * i));
	}
}

static int run_pong(const struct opts *o)
{
	struct xrxe_rx_frame frames[RX_BURST];
	struct io io;
	uint8_t *buf;
	uint64_t echoed = 0, bad = 0, t0, deadline;
	unsigned empty = 0;
	int err;

	buf = malloc(XRXE_MAX_FRAME_LEN * 2);
	if (!buf)
		return 1;
	err = io_open(o, true, &io);
	if (err) {
		free(buf);
		return 1;
	}
	signal_ready(o->ready_file);
	t0 = now_ns();
	deadline = o->timeout > 0 ? t0 + (uint64_t)(o->timeout * 1e9) : UINT64_MAX;
	while (!stop && (!o->count || echoed < o->count)) {
		unsigned n = xrxe_xsk_rx_burst(io.xsk, frames, RX_BURST);

		for (unsigned k = 0; k < n; k++) {
			struct xrxe_pkt pkt;
			uint32_t len;

			if (xrxe_parse_frags(frames[k].frag, frames[k].nfrags, 0, &pkt)) {
				bad++;
				continue;
			}
			len = gather(frames[k].frag, frames[k].nfrags, buf, XRXE_MAX_FRAME_LEN * 2);
			reflect(buf, len);
			if (xsk_send_wait(io.xsk, buf, len) == 0)
				echoed++;
		}
		if (n) {
			xrxe_xsk_rx_release(io.xsk, frames, n);
			empty = 0;
		}
		xrxe_xsk_tx_flush(io.xsk);
		if (!n) {
			if (++empty & 63 && !(empty > 2000 && !o->spin))
				continue;
			if (now_ns() >= deadline)
				break;
			rx_wait(o, &io, &empty);
		}
	}
	xsk_drain(io.xsk, 1);
	printf("pong_echoed %" PRIu64 "\n", echoed);
	printf("pong_bad %" PRIu64 "\n", bad);
	io_close(o, &io);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct sigaction sa;

	xrxe_log_init("xskprobe");
	if (parse_args(argc, argv, &o))
		return 2;
	if (o.verbose && xrxe_log_get_level() < XRXE_LOG_DEBUG)
		xrxe_log_set_level(XRXE_LOG_DEBUG);
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			xrxe_warn("cannot pin to CPU %d: %s", o.cpu, strerror(errno));
	}
	pattern_init();

	switch (o.mode) {
	case MODE_RX: return run_rx(&o);
	case MODE_TX: return run_tx(&o);
	case MODE_GEN:
	case MODE_BLAST: return run_gen(&o);
	case MODE_PING: return run_ping(&o);
	case MODE_PONG: return run_pong(&o);
	}
	return 2;
}
