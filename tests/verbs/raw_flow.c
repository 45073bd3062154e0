// SPDX-License-Identifier: MIT
/*
 * raw_flow: raw packet QPs (IBV_QPT_RAW_PACKET) and flow steering, written
 * against plain libibverbs (tests/net/raw_qp.sh runs it over xrxe between
 * two namespaces):
 *
 *   recv DSTMAC N   a raw QP with a flow on {Ethernet dst DSTMAC, IPv4,
 *                   UDP dport 5678} receives N frames (20 s at most; the
 *                   first posts its receives, then prints "ready"): each
 *                   byte for byte the frame send builds (wc.byte_len = the
 *                   frame, no GRH), sequence numbers in order. A second QP
 *                   with a flow on another UDP port receives nothing.
 *   send DSTMAC N   builds N Ethernet/IPv4/UDP frames to DSTMAC, UDP port
 *                   5678, payload a sequence number and a pattern, and sends
 *                   them from a raw QP, 20 ms apart, each completing with
 *                   success; then a 13-byte frame (shorter than an Ethernet
 *                   header) and a frame beyond the port's MTU complete with
 *                   IBV_WC_LOC_LEN_ERR.
 *   eperm           ibv_create_qp(IBV_QPT_RAW_PACKET) fails with EPERM (run
 *                   without CAP_NET_RAW).
 *
 *   usage: raw_flow -d DEV MODE [DSTMAC N]   exit 0 and "raw_flow: OK"
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define TEST_PROG "raw_flow"
#include "test_prog.h"
#include "loopback.h" /* loopback_open_device, check() */

#define UDP_PORT 5678
#define OTHER_PORT 5679
#define FRAME 256
#define SLOTS 64
#define BIG 16384

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static uint8_t *buf;


/* One completion within ms milliseconds: 1, or 0 on timeout. */
static int poll_one(struct ibv_cq *c, struct ibv_wc *wc, unsigned ms)
{
	uint64_t end = now_ms() + ms;

	do {
		int n = ibv_poll_cq(c, 1, wc);

		if (n < 0)
			fail("ibv_poll_cq: %d", n);
		if (n)
			return 1;
		usleep(200);
	} while (now_ms() < end);
	return 0;
}

static void parse_mac(const char *s, uint8_t mac[6])
{
	unsigned m[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
		fail("bad MAC %s", s);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)m[i];
}

static struct ibv_qp *raw_qp(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = SLOTS, .max_recv_wr = SLOTS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		fail("ibv_create_qp(RAW_PACKET): %s", strerror(errno));
	/* the kernel's table: INIT with a port, then RTR and RTS with nothing */
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT))
		fail("modify to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		fail("modify to RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		fail("modify to RTS");
	return qp;
}

struct udp_flow {
	struct ibv_flow_attr attr;
	struct ibv_flow_spec_eth eth;
	struct ibv_flow_spec_ipv4 ip;
	struct ibv_flow_spec_tcp_udp udp;
};

static struct ibv_flow *udp_flow(struct ibv_qp *qp, const uint8_t dmac[6], uint16_t port)
{
	struct udp_flow f;
	struct ibv_flow *fl;

	memset(&f, 0, sizeof(f));
	f.attr.type = IBV_FLOW_ATTR_NORMAL;
	f.attr.size = sizeof(f);
	f.attr.num_of_specs = 3;
	f.attr.port = 1;
	f.eth.type = IBV_FLOW_SPEC_ETH;
	f.eth.size = sizeof(f.eth);
	memcpy(f.eth.val.dst_mac, dmac, 6);
	memset(f.eth.mask.dst_mac, 0xff, 6);
	f.eth.val.ether_type = htons(0x0800);
	f.eth.mask.ether_type = 0xffff;
	f.ip.type = IBV_FLOW_SPEC_IPV4;
	f.ip.size = sizeof(f.ip);
	f.udp.type = IBV_FLOW_SPEC_UDP;
	f.udp.size = sizeof(f.udp);
	f.udp.val.dst_port = htons(port);
	f.udp.mask.dst_port = 0xffff;
	fl = ibv_create_flow(qp, &f.attr);
	if (!fl)
		fail("ibv_create_flow: %s", strerror(errno));
	return fl;
}

/* Ethernet / IPv4 / UDP, len bytes in all, sequence seq. */
static void build_frame(uint8_t *f, uint32_t len, const uint8_t dmac[6], uint32_t seq)
{
	static const uint8_t smac[6] = { 0x02, 0x00, 0x00, 0x00, 0x47, 0x91 };
	uint16_t ip_len = (uint16_t)(len - 14), udp_len = (uint16_t)(len - 34);

	memset(f, 0, len);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x08, f[13] = 0x00;
	f[14] = 0x45;
	f[16] = (uint8_t)(ip_len >> 8), f[17] = (uint8_t)ip_len;
	f[20] = 0x40; /* DF */
	f[22] = 64, f[23] = 17;
	memcpy(f + 26, (uint8_t[]){ 198, 51, 100, 1 }, 4); /* TEST-NET-2: routed nowhere */
	memcpy(f + 30, (uint8_t[]){ 198, 51, 100, 2 }, 4);
	f[34] = 0x30, f[35] = 0x39; /* source port 12345 */
	f[36] = UDP_PORT >> 8, f[37] = UDP_PORT & 0xff;
	f[38] = (uint8_t)(udp_len >> 8), f[39] = (uint8_t)udp_len;
	memcpy(f + 42, &seq, 4);
	for (uint32_t i = 46; i < len; i++)
		f[i] = (uint8_t)(i * 7 + seq);
}

static void post_recv(struct ibv_qp *qp, uint32_t slot)
{
	struct ibv_sge sge = { (uintptr_t)(buf + slot * 2048), 2048, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		fail("ibv_post_recv");
}

static int send_frame(struct ibv_qp *qp, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = len, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, &wr, &bad))
		fail("ibv_post_send(%u bytes)", len);
	if (!poll_one(cq, &wc, 10000))
		fail("no send completion for %u bytes", len);
	return wc.status;
}

static void do_recv(const uint8_t dmac[6], uint32_t n)
{
	struct ibv_qp *qp = raw_qp(), *other = raw_qp();
	struct ibv_flow *fl = udp_flow(qp, dmac, UDP_PORT), *fo = udp_flow(other, dmac, OTHER_PORT);
	uint8_t want[FRAME];
	struct ibv_wc wc;
	uint32_t got = 0;

	for (uint32_t i = 0; i < SLOTS / 2; i++) {
		post_recv(qp, i);
		post_recv(other, SLOTS / 2 + i);
	}
	printf("ready\n");
	fflush(stdout);
	while (got < n) {
		if (!poll_one(cq, &wc, 20000))
			fail("%u of %u frames received", got, n);
		if (wc.qp_num != qp->qp_num)
			fail("a frame for UDP port %u reached the QP of port %u", UDP_PORT, OTHER_PORT);
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
			fail("receive completion: status %d opcode %d", wc.status, wc.opcode);
		if (wc.byte_len != FRAME || (wc.wc_flags & IBV_WC_GRH))
			fail("byte_len %u (want %u, the frame), wc_flags %#x", wc.byte_len, FRAME,
			     wc.wc_flags);
		build_frame(want, FRAME, dmac, got);
		if (memcmp(buf + wc.wr_id * 2048, want, FRAME))
			fail("frame %u differs from what was sent", got);
		post_recv(qp, (uint32_t)wc.wr_id);
		got++;
	}
	check(1, "%u frames through the flow on UDP port %u, byte for byte", n, UDP_PORT);
	check(!poll_one(cq, &wc, 200), "nothing for the flow on UDP port %u", OTHER_PORT);
	if (ibv_destroy_flow(fl) || ibv_destroy_flow(fo))
		fail("ibv_destroy_flow");
	ibv_destroy_qp(other);
	ibv_destroy_qp(qp);
}

static void do_send(const uint8_t dmac[6], uint32_t n)
{
	struct ibv_qp *qp = raw_qp();
	struct ibv_port_attr pa;
	int st;

	for (uint32_t i = 0; i < n; i++) {
		build_frame(buf, FRAME, dmac, i);
		st = send_frame(qp, FRAME);
		if (st != IBV_WC_SUCCESS)
			fail("send %u completed with status %d", i, st);
		usleep(20000);
	}
	check(1, "%u frames sent", n);
	if (ibv_query_port(ctx, 1, &pa))
		fail("ibv_query_port");
	/* hostile lengths: refused, the QP's own error (it goes to SQE/ERR) */
	st = send_frame(qp, 13);
	check(st == IBV_WC_LOC_LEN_ERR, "a 13-byte frame: status %d (LOC_LEN_ERR)", st);
	ibv_destroy_qp(qp);
	qp = raw_qp();
	st = send_frame(qp, BIG);
	check(st == IBV_WC_LOC_LEN_ERR, "a %u-byte frame (port MTU %d): status %d (LOC_LEN_ERR)",
	      BIG, 128 << pa.active_mtu, st);
	ibv_destroy_qp(qp);
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *mode;
	uint8_t dmac[6] = { 0 };
	uint32_t n = 0;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:")) != -1) {
		if (opt != 'd')
			fail("usage: raw_flow -d DEV recv|send|eperm [DSTMAC N]");
		dev = optarg;
	}
	if (!dev || optind >= argc)
		fail("usage: raw_flow -d DEV recv|send|eperm [DSTMAC N]");
	mode = argv[optind];
	if (strcmp(mode, "eperm")) {
		if (optind + 2 >= argc)
			fail("%s needs DSTMAC N", mode);
		parse_mac(argv[optind + 1], dmac);
		n = (uint32_t)atoi(argv[optind + 2]);
		if (n == 0 || n > 100000)
			fail("bad N");
	}
	ctx = loopback_open_device(dev);
	if (!ctx)
		fail("no device %s", dev);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4 * SLOTS, NULL, NULL, 0);
	buf = aligned_alloc(4096, SLOTS * 2048 > BIG ? SLOTS * 2048 : BIG);
	if (!pd || !cq || !buf)
		fail("setup");
	mr = ibv_reg_mr(pd, buf, SLOTS * 2048 > BIG ? SLOTS * 2048 : BIG, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		fail("ibv_reg_mr");

	if (!strcmp(mode, "recv")) {
		do_recv(dmac, n);
	} else if (!strcmp(mode, "send")) {
		do_send(dmac, n);
	} else if (!strcmp(mode, "eperm")) {
		struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq,
					       .qp_type = IBV_QPT_RAW_PACKET,
					       .cap = { 1, 1, 1, 1, 0 } };
		struct ibv_qp *qp = ibv_create_qp(pd, &ia);

		check(!qp && errno == EPERM, "raw packet QP without CAP_NET_RAW: %s",
		      qp ? "created" : strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
	} else {
		fail("unknown mode %s", mode);
	}
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	if (failed)
		fail("see above");
	printf("raw_flow: OK\n");
	return 0;
}
