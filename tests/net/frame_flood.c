// SPDX-License-Identifier: MIT
/*
 * frame_flood: a remote attacker for tests/net/hostile_tenants.sh. Sends
 * crafted RoCEv2 frames with valid ICRCs out of an interface (AF_PACKET, so
 * the source address can be anyone's) at a daemon on the other end, until a
 * stop file appears or --count frames went out. Frames are built by xrxe's
 * own builder (src/wire/build.c) and then, for the malformed kinds, patched
 * and given a fresh ICRC, so that every one of them passes the ICRC check and
 * reaches the code behind it.
 *
 * Every opcode of xrxe's table in turn, in each of these kinds:
 *   well-formed    aimed at a guessed QPN (the victim's +-2), PSN outside the
 *                  live window (see --avoid-psn), from the spoofed peer
 *   bad-key        READ/WRITE/atomic with a random R_Key, a random address
 *                  and a huge DMA length (RETH length 0xffffffff)
 *   bad-length     payload over the path MTU, FIRST/MIDDLE not a full MTU,
 *                  pad count or IP/UDP lengths that disagree with the frame
 *   truncated      cut inside the BTH or an extended header (IP and UDP
 *                  lengths and the ICRC made to match the cut)
 *   wrong-qpn      a QPN the daemon does not have
 *   bad-pkey       P_Key 0x1234
 *   foreign        the right QPN, but from an address that is not the peer's
 *   bad-tver       BTH version 1
 *   unknown        each opcode the table does not know (RD, reserved), in turn
 *
 * The live window: a blind attacker knows neither the QPN nor the PSN. One
 * on the path sees both; with the exact next PSN it can inject (RoCEv2 has no
 * authentication: docs/architecture.md "Security model"), which no receiver
 * can tell from the peer's own frame. The flood therefore aims at every PSN
 * but those the flow uses ([LO, HI]), including the ones just outside.
 *
 * Output: "sent N" and "class NAME N" per class of where the daemon must
 * count the frame, decided with xrxe's own parser and the transport's check
 * order (src/transport/tp.c xrxe_tpi_qp_rx): parse (daemon.rx_drop_* or the
 * XDP program's drop_*), no_qp, cnp (the QP's reaction point), opcode, pkey,
 * av, qp (reaches the QP: PSN checks, duplicates, out of sequence).
 *
 *   frame_flood IFACE --dmac MAC --src IP --dst IP --peer IP --qpn N
 *               --avoid-psn LO:HI [--count N] [--stop FILE] [--started FILE]
 *               [--seed N]
 *
 * --started FILE is written after the first 1000 frames (the test starts the
 * victim's flow then, so that flood and flow surely overlap).
 * IFACE and --src are the attacker's own interface and address, --dmac and
 * --dst the daemon's, --peer the victim's peer (spoofed), --qpn the victim's
 * QPN on the daemon.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "xrxe/wire.h"

#define FRAME_MAX 1514 /* the veth MTU of 1500 */
#define PATH_MTU 1024  /* IB MTU of a 1500-byte link */

enum kind {
	K_WELL, K_BADKEY, K_BADLEN, K_TRUNC, K_WRONGQPN, K_PKEY, K_FOREIGN, K_TVER, K_UNKNOWN,
	K_COUNT
};
enum cls { C_PARSE, C_NO_QP, C_CNP, C_OPCODE, C_PKEY, C_AV, C_QP, C_COUNT };
static const char *const cls_name[C_COUNT] = { "parse", "no_qp", "cnp", "opcode", "pkey", "av", "qp" };

struct opts {
	const char *ifname, *stop, *started;
	uint8_t dmac[6], smac[6];
	struct in_addr src, dst, peer, foreign;
	uint32_t qpn, psn_lo, psn_hi;
	unsigned long count;
	uint64_t seed;
};

static uint64_t rng;
static unsigned long parse_errors[XRXE_PARSE_ERROR_COUNT];

static uint32_t rnd(void)
{
	/* xorshift64*: reproducible with --seed */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32);
}

static void die(const char *what)
{
	fprintf(stderr, "frame_flood: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A PSN outside [lo, hi] (mod 2^24), a quarter of them next to its edges. */
static uint32_t psn_outside(const struct opts *o)
{
	uint32_t span = (o->psn_hi - o->psn_lo) & XRXE_PSN_MASK;
	uint32_t r = rnd(), off;

	switch (r & 7) {
	case 0:
		return (o->psn_lo - 1 - (r >> 8) % 16) & XRXE_PSN_MASK; /* just behind */
	case 1:
		return (o->psn_hi + 1 + (r >> 8) % 16) & XRXE_PSN_MASK; /* just ahead */
	default:
		off = (r >> 3) % (XRXE_PSN_MASK - span) + 1;
		return (o->psn_hi + off) & XRXE_PSN_MASK;
	}
}

static uint16_t ip_csum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < XRXE_IPV4_HLEN; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* After a patch: IPv4 total length, UDP length (each from the frame unless
 * told otherwise), header checksum, then a fresh ICRC over what is there. */
static void refit(uint8_t *f, size_t len, int ip_len, int udp_len)
{
	uint8_t *ip = f + XRXE_ETH_HLEN, *udp = ip + XRXE_IPV4_HLEN;
	size_t l3 = len - XRXE_ETH_HLEN;
	uint32_t icrc;

	ip_len = ip_len >= 0 ? ip_len : (int)l3;
	udp_len = udp_len >= 0 ? udp_len : (int)(l3 - XRXE_IPV4_HLEN);
	ip[2] = (uint8_t)(ip_len >> 8), ip[3] = (uint8_t)ip_len;
	ip[10] = ip[11] = 0;
	{
		uint16_t c = ip_csum(ip);

		ip[10] = (uint8_t)(c >> 8), ip[11] = (uint8_t)c;
	}
	udp[4] = (uint8_t)(udp_len >> 8), udp[5] = (uint8_t)udp_len;
	/* the ICRC covers the frame up to its last 4 bytes: too short for
	 * a BTH gives 0, which is as good as any for a frame that short */
	icrc = xrxe_icrc(f, len, XRXE_ETH_HLEN);
	f[len - 4] = (uint8_t)icrc, f[len - 3] = (uint8_t)(icrc >> 8);
	f[len - 2] = (uint8_t)(icrc >> 16), f[len - 1] = (uint8_t)(icrc >> 24);
}

static void base_spec(const struct opts *o, struct xrxe_pkt_spec *s, uint8_t opcode)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->dmac, o->dmac, 6);
	memcpy(s->smac, o->smac, 6);
	s->ip_version = 4;
	s->ttl = 64;
	s->ip_df = true;
	s->saddr.v4 = o->peer;
	s->daddr.v4 = o->dst;
	s->sport = (uint16_t)(0xc000 | (rnd() & 0x3fff));
	s->opcode = opcode;
	s->ackreq = rnd() & 1;
	s->se = rnd() & 1;
	s->pkey = 0xffff;
	s->dest_qp = (o->qpn + rnd() % 5 - 2) & 0xffffff; /* the guess: +-2 */
	s->psn = psn_outside(o);
	s->deth.qkey = rnd();
	s->deth.src_qp = rnd() & 0xffffff;
	s->reth.va = (uint64_t)rnd() << 32 | rnd();
	s->reth.rkey = rnd();
	s->reth.len = rnd() % 4096;
	s->atmeth.va = ((uint64_t)rnd() << 32 | rnd()) & ~7ull;
	s->atmeth.rkey = rnd();
	s->atmeth.swap_add = rnd();
	s->atmeth.comp = rnd();
	s->aeth.syndrome = (uint8_t)(rnd() & 0x7f);
	s->aeth.msn = rnd() & 0xffffff;
	s->imm_be = rnd();
	s->ieth_rkey = rnd();
	s->feth.sel = 1;
	s->feth.plt = 1;
}

static uint32_t good_payload(const struct xrxe_opcode_info *op)
{
	switch (op->payload) {
	case XRXE_PAYLOAD_ANY:
		return rnd() % (PATH_MTU + 1);
	case XRXE_PAYLOAD_FULL_MTU:
		return PATH_MTU;
	case XRXE_PAYLOAD_8:
		return 8;
	case XRXE_PAYLOAD_SACK:
		return XRXE_SACK_LEN;
	default:
		return 0;
	}
}

/* Build one frame of this kind for this opcode into f; returns its length. */
static size_t craft(const struct opts *o, uint8_t *f, unsigned opcode, enum kind k)
{
	static uint8_t payload[FRAME_MAX];
	const struct xrxe_opcode_info *op = xrxe_opcode_info((uint8_t)opcode);
	struct xrxe_pkt_spec s;
	int n;

	/* an opcode the table does not know: built as RC SEND_ONLY, then the
	 * opcode byte replaced (the builder refuses unknown opcodes) */
	base_spec(o, &s, op ? (uint8_t)opcode : XRXE_OP_SEND_ONLY);
	if (!op)
		op = xrxe_opcode_info(XRXE_OP_SEND_ONLY);
	s.payload_len = good_payload(op);
	s.payload = payload;
	switch (k) {
	case K_BADKEY:
		s.reth.len = 0xffffffffu; /* a huge DMA length */
		s.dest_qp = o->qpn;
		break;
	case K_BADLEN:
		if (op->payload == XRXE_PAYLOAD_ANY)
			s.payload_len = PATH_MTU + 4 + rnd() % 300; /* over the path MTU */
		else if (op->payload == XRXE_PAYLOAD_FULL_MTU)
			s.payload_len = 1 + rnd() % (PATH_MTU - 1); /* not a full MTU */
		break;
	case K_WRONGQPN:
		s.dest_qp = (o->qpn ^ 0x800000) + rnd() % 64; /* far from every live QPN */
		break;
	case K_PKEY:
		s.pkey = 0x1234;
		break;
	case K_FOREIGN:
		s.saddr.v4 = o->foreign;
		s.dest_qp = o->qpn;
		break;
	default:
		break;
	}
	n = xrxe_build(f, FRAME_MAX, &s);
	if (n < 0) {
		fprintf(stderr, "frame_flood: %s: build: %s\n", op->name, strerror(-n));
		exit(1);
	}
	if (opcode != s.opcode) {
		f[XRXE_ETH_HLEN + XRXE_IPV4_HLEN + XRXE_UDP_HLEN] = (uint8_t)opcode;
		refit(f, (size_t)n, -1, -1);
	}
	switch (k) {
	case K_BADLEN: {
		uint8_t *bth = f + XRXE_ETH_HLEN + XRXE_IPV4_HLEN + XRXE_UDP_HLEN;

		switch (rnd() % 4) {
		case 0: /* a pad count the payload does not have */
			bth[1] ^= 0x30;
			refit(f, (size_t)n, -1, -1);
			break;
		case 1: /* IP length past the frame */
			refit(f, (size_t)n, n - XRXE_ETH_HLEN + 64, -1);
			break;
		case 2: /* UDP length short of the datagram */
			refit(f, (size_t)n, -1, (int)(n - XRXE_ETH_HLEN - XRXE_IPV4_HLEN - 8));
			break;
		default: /* kept: the payload rules above */
			break;
		}
		break;
	}
	case K_TRUNC: {
		/* cut somewhere in the BTH and extended headers (+ ICRC) */
		size_t hdr = XRXE_ETH_HLEN + XRXE_IPV4_HLEN + XRXE_UDP_HLEN;
		size_t cut = hdr + rnd() % (op->length ? op->length : XRXE_BTH_LEN) + XRXE_ICRC_LEN;

		if (cut < (size_t)n) {
			n = (int)cut;
			refit(f, (size_t)n, -1, -1);
		}
		break;
	}
	case K_TVER:
		f[XRXE_ETH_HLEN + XRXE_IPV4_HLEN + XRXE_UDP_HLEN + 1] |= 0x01;
		refit(f, (size_t)n, -1, -1);
		break;
	default:
		break;
	}
	return (size_t)n;
}

/* Where the daemon must count this frame (the transport's check order). */
static enum cls classify(const struct opts *o, const uint8_t *f, size_t len)
{
	struct xrxe_pkt pkt;
	const struct xrxe_bth *bth;
	uint32_t qpn;

	int err = xrxe_parse(f, len, 0, &pkt);

	if (err != XRXE_PARSE_OK) {
		if (err > 0 && err < XRXE_PARSE_ERROR_COUNT)
			parse_errors[err]++;
		return C_PARSE;
	}
	bth = xrxe_pkt_bth(&pkt);
	qpn = xrxe_bth_qpn(bth);
	if (!pkt.op)
		return C_OPCODE;
	if (qpn == XRXE_MCAST_QPN)
		return C_OPCODE; /* multicast: UD requests only, and no group */
	if (qpn != o->qpn)
		return C_NO_QP;
	if (pkt.opcode == XRXE_OP_CNP)
		return C_CNP; /* to the reaction point, before any other check */
	if (pkt.opcode == XRXE_OP_XRXE_SACK ||
	    (pkt.opcode & XRXE_TRANSPORT_MASK) != XRXE_TRANSPORT_RC ||
	    !(pkt.op->flags & (XRXE_OPF_REQUEST | XRXE_OPF_RESPONSE)))
		return C_OPCODE;
	if ((xrxe_bth_pkey(bth) & 0x7fff) != 0x7fff)
		return C_PKEY;
	if (memcmp(f + XRXE_ETH_HLEN + 12, &o->peer, 4))
		return C_AV;
	return C_QP;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3],
		      &mac[4], &mac[5]) == 6
		       ? 0
		       : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: frame_flood IFACE --dmac MAC --src IP --dst IP --peer IP --qpn N\n"
			"                   --avoid-psn LO:HI [--count N] [--stop FILE]\n"
			"                   [--started FILE] [--seed N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "dmac", required_argument, NULL, 'm' }, { "src", required_argument, NULL, 's' },
		{ "dst", required_argument, NULL, 'd' },  { "peer", required_argument, NULL, 'p' },
		{ "qpn", required_argument, NULL, 'q' },  { "avoid-psn", required_argument, NULL, 'a' },
		{ "count", required_argument, NULL, 'c' }, { "stop", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 'r' }, { "started", required_argument, NULL, 'T' },
		{ 0 },
	};
	struct opts o = { .count = 1000000, .seed = 1 };
	unsigned long sent = 0, by_cls[C_COUNT] = { 0 };
	bool have = false;
	struct sockaddr_ll to = { .sll_family = AF_PACKET };
	struct ifreq ifr = { 0 };
	uint8_t frame[FRAME_MAX], known[256], unknown[256];
	unsigned nknown = 0, nunknown = 0, next_unknown = 0;
	int c, fd;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (parse_mac(optarg, o.dmac))
				usage();
			break;
		case 's':
			have |= inet_pton(AF_INET, optarg, &o.foreign) == 1;
			break;
		case 'd':
			if (inet_pton(AF_INET, optarg, &o.dst) != 1)
				usage();
			break;
		case 'p':
			if (inet_pton(AF_INET, optarg, &o.peer) != 1)
				usage();
			break;
		case 'q':
			o.qpn = (uint32_t)strtoul(optarg, NULL, 0) & 0xffffff;
			break;
		case 'a':
			if (sscanf(optarg, "%" SCNu32 ":%" SCNu32, &o.psn_lo, &o.psn_hi) != 2)
				usage();
			break;
		case 'c':
			o.count = strtoul(optarg, NULL, 0);
			break;
		case 'S':
			o.stop = optarg;
			break;
		case 'r':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'T':
			o.started = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc || !have || !o.qpn)
		usage();
	o.ifname = argv[optind];
	rng = o.seed * 0x9e3779b97f4a7c15ull | 1;

	fd = socket(AF_PACKET, SOCK_RAW, 0) /* send only */;
	if (fd < 0)
		die("socket(AF_PACKET)");
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", o.ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		die(o.ifname);
	memcpy(o.smac, ifr.ifr_hwaddr.sa_data, 6);
	to.sll_ifindex = (int)if_nametoindex(o.ifname);
	to.sll_halen = 6;
	memcpy(to.sll_addr, o.dmac, 6);

	for (unsigned op = 0; op < 256; op++) {
		if (xrxe_opcode_info((uint8_t)op))
			known[nknown++] = (uint8_t)op;
		else
			unknown[nunknown++] = (uint8_t)op;
	}
	for (unsigned long i = 0; i < o.count; i++) {
		enum kind k = (enum kind)(i / nknown % K_COUNT);
		unsigned opcode = k == K_UNKNOWN ? unknown[next_unknown++ % nunknown]
						 : known[i % nknown];
		size_t len = craft(&o, frame, opcode, k);

		if (sendto(fd, frame, len, 0, (struct sockaddr *)&to, sizeof(to)) < 0) {
			if (errno == ENOBUFS || errno == EAGAIN) {
				usleep(1000);
				i--;
				continue;
			}
			die("sendto");
		}
		sent++;
		by_cls[classify(&o, frame, len)]++;
		if (sent == 1000 && o.started) {
			FILE *f = fopen(o.started, "w");

			if (!f || fclose(f))
				die(o.started);
		}
		/* a breath every 32 frames, so that the flood shares the
		 * daemon's receive ring with the flow instead of mostly
		 * overflowing it (overflow is counted too, but a frame lost
		 * on the way tells nothing about the daemon's checks) */
		if (i % 32 == 31) {
			if (o.stop && access(o.stop, F_OK) == 0)
				break;
			usleep(1000);
		}
	}
	printf("sent %lu\n", sent);
	for (int i = 0; i < C_COUNT; i++)
		printf("class %s %lu\n", cls_name[i], by_cls[i]);
	for (int i = 1; i < XRXE_PARSE_ERROR_COUNT; i++)
		if (parse_errors[i])
			printf("parse %s %lu\n", xrxe_parse_strerror((enum xrxe_parse_error)i),
			       parse_errors[i]);
	return 0;
}
