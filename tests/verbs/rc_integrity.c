// SPDX-License-Identifier: MIT
/*
 * rc_integrity: a data-integrity check over RC written against plain
 * libibverbs, so it runs unchanged on rdma-core with kernel rxe and on xrxe's
 * shim.
 *
 *   server:  rc_integrity -d DEV [-g GIDX] [-p PORT] [-m MIB] [-s SEED] [-t TIMEOUT] [-M MTU] [-a ITERS]
 *   client:  rc_integrity -d DEV [-g GIDX] [-p PORT] [-m MIB] [-s SEED] [-t TIMEOUT] [-M MTU] [-a ITERS] SERVER_IP
 *
 * TIMEOUT is the QP's local ACK timeout exponent (4.096 us * 2^TIMEOUT,
 * default 14 = 67 ms). With 7 transport retries it bounds how long a peer
 * may stall without acknowledging anything before a WR fails.
 *
 * -a ITERS: atomics per QP and kind (default and at most 2000), fewer where
 * round trips are slow (a TCG guest).
 *
 * MTU is the path MTU (256-4096, both sides the same), as ibv_rc_pingpong -m;
 * default: the port's active MTU. Two peers whose ports differ (one capped by
 * its frame size) must be given the smaller.
 *
 * The client moves MIB mebibytes (default 256) three ways, with sizes,
 * offsets and local/remote alignments drawn from a seeded PRNG both sides
 * share, and every byte checked:
 *   WRITE  client buffer -> server buffer at a random offset, then READ it back
 *          into a different local region and compare with what was written;
 *   READ   server buffer (filled with a pattern the client can recompute) ->
 *          client, compared byte for byte;
 *   SEND   into the server's posted receives; the server checks every
 *          message against the same PRNG stream and reports a count mismatch.
 * Then atomics: two QPs from the client hammer one 8-byte counter on the
 * server with FETCH_AND_ADD (every old value returned must be distinct and
 * the final value exact) and with CMP_AND_SWP loops (final value = number of
 * successful swaps). Exit status 0 only if everything matched.
 *
 * Out-of-band exchange (QPN, PSN, GID, rkey, address) over TCP, like the
 * rdma-core examples.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define OOB_PROG "rc_integrity"
#include "oob.h"

#define NQP 2 /* QP 0: data + atomics; QP 1: concurrent atomics */
#define MAX_MSG (1u << 20)
#define SEND_DEPTH 64
#define RECV_SLOTS 8 /* posted receives, each MAX_MSG bytes, in their own region */
#define ATOMIC_ITERS 2000 /* per QP and kind; -a takes fewer */

static unsigned atomic_iters = ATOMIC_ITERS;

struct opts {
	const char *dev, *server;
	int gidx;
	int port;
	int timeout;
	enum ibv_mtu mtu; /* -M; 0: the port's active MTU */
	unsigned mib;
	uint64_t seed;
};

struct peer_info {
	uint32_t qpn[NQP];
	uint32_t psn[NQP];
	uint32_t rkey;
	uint64_t addr;     /* data buffer */
	uint64_t atomic;   /* 8-byte counter */
	union ibv_gid gid;
};

struct ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[NQP];
	struct ibv_mr *mr;
	/* buf: [0, region) WRITE target, [region, 2 region) READ pattern (server)
	 * or read-back area (client), then RECV_SLOTS receive buffers that
	 * nothing else touches, then the 8-byte atomic counter. */
	uint8_t *buf;
	size_t region;     /* bytes per half */
	uint64_t *counter; /* server: the atomic target; client: results */
	struct ibv_port_attr port;
	union ibv_gid gid;
};

static uint64_t rng_state;

static uint64_t rng(void) /* xorshift64* */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

/* The pattern byte at server-buffer offset i for the READ phase. */
static uint8_t read_pattern(uint64_t seed, size_t i)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;

	return (uint8_t)(x >> 56 ^ x >> 13);
}

static void setup(struct ctx *c, const struct opts *o)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;

	if (!list)
		die("ibv_get_device_list");
	for (int i = 0; list[i]; i++)
		if (!o->dev || !strcmp(ibv_get_device_name(list[i]), o->dev))
			dev = list[i];
	if (!dev)
		fail("device %s not found", o->dev ? o->dev : "(any)");
	c->ctx = ibv_open_device(dev);
	ibv_free_device_list(list);
	if (!c->ctx)
		die("ibv_open_device");
	if (ibv_query_port(c->ctx, 1, &c->port) || ibv_query_gid(c->ctx, 1, o->gidx, &c->gid))
		die("query port/gid");
	c->pd = ibv_alloc_pd(c->ctx);
	c->cq = ibv_create_cq(c->ctx, 4 * SEND_DEPTH + 4 * ATOMIC_ITERS, NULL, NULL, 0);
	if (!c->pd || !c->cq)
		die("pd/cq");
	c->region = 16u << 20;
	/* Unaligned on purpose: the buffer starts 3 bytes into the allocation. */
	size_t bytes = 2 * c->region + (size_t)RECV_SLOTS * MAX_MSG + 64;
	uint8_t *raw = malloc(bytes + 3);

	if (!raw)
		die("malloc");
	c->buf = raw + 3;
	c->counter = (uint64_t *)(((uintptr_t)(c->buf + bytes - 16)) & ~(uintptr_t)7);
	c->mr = ibv_reg_mr(c->pd, c->buf, bytes,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	if (!c->mr)
		die("ibv_reg_mr");
	for (int q = 0; q < NQP; q++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = c->cq,
			.recv_cq = c->cq,
			.cap = { .max_send_wr = 2 * SEND_DEPTH, .max_recv_wr = 2 * SEND_DEPTH,
				 .max_send_sge = 2, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC,
			.sq_sig_all = 1,
		};
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT,
			.port_num = 1,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					   IBV_ACCESS_REMOTE_ATOMIC,
		};

		c->qp[q] = ibv_create_qp(c->pd, &ia);
		if (!c->qp[q] || ibv_modify_qp(c->qp[q], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
								  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			die("create/init qp");
	}
}

static void connect_qps(struct ctx *c, const struct opts *o, const struct peer_info *me,
			const struct peer_info *peer)
{
	for (int q = 0; q < NQP; q++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR,
			.path_mtu = o->mtu ? o->mtu : c->port.active_mtu,
			.dest_qp_num = peer->qpn[q],
			.rq_psn = peer->psn[q],
			.max_dest_rd_atomic = 16,
			.min_rnr_timer = 12,
			.ah_attr = {
				.is_global = 1,
				.grh = { .dgid = peer->gid, .sgid_index = (uint8_t)o->gidx,
					 .hop_limit = 64 },
				.port_num = 1,
			},
		};

		if (ibv_modify_qp(c->qp[q], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
							 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
							 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			die("modify RTR");
		a = (struct ibv_qp_attr){
			.qp_state = IBV_QPS_RTS,
			.timeout = (uint8_t)o->timeout,
			.retry_cnt = 7,
			.rnr_retry = 7,
			.sq_psn = me->psn[q],
			.max_rd_atomic = 16,
		};
		if (ibv_modify_qp(c->qp[q], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
							 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
							 IBV_QP_MAX_QP_RD_ATOMIC))
			die("modify RTS");
	}
}

/* Wait for one completion; it must be a success. */
static struct ibv_wc wait_wc(struct ctx *c)
{
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(c->cq, 1, &wc)) == 0)
		;
	if (n < 0)
		die("ibv_poll_cq");
	if (wc.status != IBV_WC_SUCCESS)
		fail("completion wr_id %" PRIu64 " opcode %d: %s", wc.wr_id, wc.opcode,
		     ibv_wc_status_str(wc.status));
	return wc;
}

static void post(struct ctx *c, int q, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	errno = ibv_post_send(c->qp[q], wr, &bad);
	if (errno)
		die("ibv_post_send");
}

static void post_recv(struct ctx *c, uint64_t id, size_t off)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(c->buf + off), .length = MAX_MSG,
			       .lkey = c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	errno = ibv_post_recv(c->qp[0], &wr, &bad);
	if (errno)
		die("ibv_post_recv");
}

/* A random message: length 1..MAX_MSG biased to small and boundary sizes. */
static size_t rand_len(void)
{
	static const size_t edge[] = { 1, 2, 3, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097 };
	uint64_t r = rng();

	switch (r % 4) {
	case 0:
		return edge[(r >> 8) % (sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return 1 + (r >> 8) % 8192;
	default:
		return 1 + (r >> 8) % MAX_MSG;
	}
}

static void fill_random(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng();
}

/* The content of byte i of the n-th SEND: both sides compute it. */
static uint8_t send_pattern(uint64_t seed, uint64_t n, size_t i)
{
	return read_pattern(seed ^ (n * 0xD6E8FEB86659FD93ull), i);
}

#define IMM_END 0xffffffffu

/* Client side of the data phases. Returns bytes moved. */
static uint64_t client_data(struct ctx *c, const struct opts *o, const struct peer_info *peer,
			    uint64_t budget, uint64_t *nsends)
{
	uint8_t *src = c->buf, *back = c->buf + c->region;
	uint64_t moved = 0, n = 0;

	*nsends = 0;
	while (moved < budget) {
		uint64_t phase = n++ % 3;
		size_t len = rand_len();
		/* Local offsets anywhere (unaligned), remote offsets anywhere. */
		size_t loff = rng() % (c->region - len);
		size_t roff = rng() % (c->region - len);
		struct ibv_sge sge = { .addr = (uintptr_t)(src + loff), .length = (uint32_t)len,
				       .lkey = c->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = n, .sg_list = &sge, .num_sge = 1,
					  .wr.rdma = { .rkey = peer->rkey } };

		if (phase == 0) {
			/* WRITE into the server's first half, READ it back elsewhere. */
			fill_random(src + loff, len);
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = peer->addr + roff;
			post(c, 0, &wr);
			wait_wc(c);
			memset(back + loff, 0xEE, len);
			sge.addr = (uintptr_t)(back + loff);
			wr.opcode = IBV_WR_RDMA_READ;
			post(c, 0, &wr);
			wait_wc(c);
			if (memcmp(src + loff, back + loff, len))
				fail("WRITE %zu B at remote offset %zu: READ-back differs", len, roff);
			moved += 2 * len;
		} else if (phase == 1) {
			/* READ the pattern the server keeps in its second half. */
			memset(back + loff, 0xEE, len);
			sge.addr = (uintptr_t)(back + loff);
			wr.opcode = IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = peer->addr + c->region + roff;
			post(c, 0, &wr);
			wait_wc(c);
			for (size_t i = 0; i < len; i++)
				if (back[loff + i] != read_pattern(o->seed, roff + i))
					fail("READ %zu B at remote offset %zu: byte %zu differs", len,
					     roff, i);
			moved += len;
		} else {
			/* SEND a message whose bytes the server can recompute. */
			for (size_t i = 0; i < len; i++)
				src[loff + i] = send_pattern(o->seed, *nsends, i);
			wr.opcode = IBV_WR_SEND;
			post(c, 0, &wr);
			wait_wc(c);
			++*nsends;
			moved += len;
		}
	}
	/* Tell the server the stream ended. */
	struct ibv_send_wr end = { .wr_id = 0, .opcode = IBV_WR_SEND_WITH_IMM,
				   .imm_data = htonl(IMM_END) };
	post(c, 0, &end);
	wait_wc(c);
	return moved;
}

/* Server side: verify every SEND until the END message. Returns the count. */
static uint64_t server_data(struct ctx *c, const struct opts *o)
{
	const size_t base = 2 * c->region;
	uint64_t got = 0;

	/* Each receive has a slot of its own, reposted only after its message
	 * was checked; RNR NAKs cover the client running ahead. */
	for (unsigned i = 0; i < RECV_SLOTS; i++)
		post_recv(c, i, base + (size_t)i * MAX_MSG);
	for (;;) {
		struct ibv_wc wc = wait_wc(c);
		size_t off = base + (size_t)wc.wr_id * MAX_MSG;

		if (wc.opcode != IBV_WC_RECV)
			fail("server: unexpected completion opcode %d", wc.opcode);
		if ((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == IMM_END)
			return got;
		for (size_t i = 0; i < wc.byte_len; i++)
			if (c->buf[off + i] != send_pattern(o->seed, got, i))
				fail("SEND #%" PRIu64 " (%u B): byte %zu differs", got, wc.byte_len,
				     i);
		got++;
		post_recv(c, wc.wr_id, off);
	}
}

/* Client: atomics from both QPs at once on the server's counter. */
static void client_atomics(struct ctx *c, const struct peer_info *peer)
{
	/* Old values land in registered memory: the 8-aligned start of the
	 * client's second half. */
	uint64_t(*olds)[ATOMIC_ITERS] =
		(void *)(((uintptr_t)(c->buf + c->region) + 7) & ~(uintptr_t)7);
	unsigned done[NQP] = { 0 }, posted[NQP] = { 0 };
	struct ibv_sge sge[NQP];
	const unsigned inflight = 8;

	/* FETCH_AND_ADD: the old values must be a permutation of 0..2N-1. */
	for (;;) {
		bool more = false;

		for (int q = 0; q < NQP; q++) {
			while (posted[q] < atomic_iters && posted[q] - done[q] < inflight) {
				sge[q] = (struct ibv_sge){ .addr = (uintptr_t)&olds[q][posted[q]],
							   .length = 8, .lkey = c->mr->lkey };
				struct ibv_send_wr wr = {
					.wr_id = (uint64_t)q << 32 | posted[q],
					.sg_list = &sge[q],
					.num_sge = 1,
					.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					.wr.atomic = { .remote_addr = peer->atomic, .compare_add = 1,
						       .rkey = peer->rkey },
				};

				post(c, q, &wr);
				posted[q]++;
			}
			more |= done[q] < atomic_iters;
		}
		if (!more)
			break;
		struct ibv_wc wc = wait_wc(c);

		done[wc.wr_id >> 32]++;
	}
	static uint8_t seen[NQP * ATOMIC_ITERS];

	for (int q = 0; q < NQP; q++)
		for (unsigned i = 0; i < atomic_iters; i++) {
			uint64_t v = olds[q][i];

			if (v >= NQP * atomic_iters || seen[v]++)
				fail("FETCH_AND_ADD returned %" PRIu64 " twice or out of range", v);
		}
	printf("fetch_add: %u ops from %d QPs, every old value distinct\n", NQP * atomic_iters,
	       NQP);

	/* CMP_AND_SWP: each QP loops compare(expected) -> expected+1; the final
	 * value must equal the initial plus the number of swaps that succeeded. */
	uint64_t expect[NQP], wins = 0, start = NQP * atomic_iters;

	for (int q = 0; q < NQP; q++) {
		expect[q] = start;
		done[q] = 0;
	}
	for (unsigned round = 0; round < atomic_iters; round++) {
		for (int q = 0; q < NQP; q++) {
			sge[q] = (struct ibv_sge){ .addr = (uintptr_t)&olds[q][round], .length = 8,
						   .lkey = c->mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = (uint64_t)q << 32 | round,
				.sg_list = &sge[q],
				.num_sge = 1,
				.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
				.wr.atomic = { .remote_addr = peer->atomic, .compare_add = expect[q],
					       .swap = expect[q] + 1, .rkey = peer->rkey },
			};

			post(c, q, &wr);
		}
		for (int k = 0; k < NQP; k++) {
			struct ibv_wc wc = wait_wc(c);
			int q = (int)(wc.wr_id >> 32);
			uint64_t old = olds[q][round];

			if (old == expect[q])
				wins++;
			expect[q] = old == expect[q] ? old + 1 : old;
		}
	}
	/* Read the counter back. */
	uint64_t final = 0;
	struct ibv_sge s1 = { .addr = (uintptr_t)&olds[0][0], .length = 8, .lkey = c->mr->lkey };
	struct ibv_send_wr rd = { .sg_list = &s1, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				  .wr.rdma = { .remote_addr = peer->atomic, .rkey = peer->rkey } };

	post(c, 0, &rd);
	wait_wc(c);
	final = olds[0][0];
	if (final != start + wins)
		fail("CMP_AND_SWP: counter %" PRIu64 ", expected %" PRIu64 " + %" PRIu64 " wins",
		     final, start, wins);
	printf("cmp_swap: %u ops from %d QPs, %" PRIu64 " swaps, counter exact\n",
	       NQP * atomic_iters, NQP, wins);
}

static void usage(void)
{
	fprintf(stderr, "usage: rc_integrity [-d DEV] [-g GIDX] [-p PORT] [-m MIB] [-s SEED] "
			"[-t TIMEOUT] [-M MTU] [-a ITERS] [SERVER]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { .gidx = 1, .port = 18999, .timeout = 14, .mib = 256, .seed = 0x5EED };
	struct peer_info me = { 0 }, peer;
	struct ctx c = { 0 };
	int opt, fd;

	while ((opt = getopt(argc, argv, "d:g:p:m:s:t:M:a:")) != -1) {
		switch (opt) {
		case 'd': o.dev = optarg; break;
		case 'g': o.gidx = atoi(optarg); break;
		case 'p': o.port = atoi(optarg); break;
		case 'm': o.mib = (unsigned)atoi(optarg); break;
		case 's': o.seed = strtoull(optarg, NULL, 0); break;
		case 't':
			o.timeout = atoi(optarg);
			if (o.timeout < 0 || o.timeout > 31)
				usage();
			break;
		case 'a':
			atomic_iters = (unsigned)atoi(optarg);
			if (atomic_iters < 1 || atomic_iters > ATOMIC_ITERS)
				usage();
			break;
		case 'M':
			switch (atoi(optarg)) {
			case 256: o.mtu = IBV_MTU_256; break;
			case 512: o.mtu = IBV_MTU_512; break;
			case 1024: o.mtu = IBV_MTU_1024; break;
			case 2048: o.mtu = IBV_MTU_2048; break;
			case 4096: o.mtu = IBV_MTU_4096; break;
			default: usage();
			}
			break;
		default: usage();
		}
	}
	if (optind < argc)
		o.server = argv[optind];
	rng_state = o.seed | 1;

	setup(&c, &o);
	for (int q = 0; q < NQP; q++) {
		me.qpn[q] = c.qp[q]->qp_num;
		me.psn[q] = (uint32_t)(rng() & 0xffffff);
	}
	me.rkey = c.mr->rkey;
	me.addr = (uintptr_t)c.buf;
	me.atomic = (uintptr_t)c.counter;
	me.gid = c.gid;
	if (!o.server) {
		/* The READ phase's pattern, and the atomic counter at 0. */
		for (size_t j = 0; j < c.region; j++)
			c.buf[c.region + j] = read_pattern(o.seed, j);
		*c.counter = 0;
	}

	fd = oob_connect(o.server, o.port, 100);
	xfer(fd, &me, sizeof(me), true);
	xfer(fd, &peer, sizeof(peer), false);
	connect_qps(&c, &o, &me, &peer);
	char sync = 'r';
	xfer(fd, &sync, 1, true); /* both sides at RTS before any traffic */
	xfer(fd, &sync, 1, false);

	if (o.server) {
		uint64_t nsends, moved;

		rng_state = o.seed | 1;
		moved = client_data(&c, &o, &peer, (uint64_t)o.mib << 20, &nsends);
		xfer(fd, &nsends, sizeof(nsends), true);
		printf("data: %" PRIu64 " MiB moved by WRITE, READ and SEND, every byte checked\n",
		       moved >> 20);
		client_atomics(&c, &peer);
		xfer(fd, &sync, 1, true);
	} else {
		uint64_t got = server_data(&c, &o), sent;

		xfer(fd, &sent, sizeof(sent), false);
		if (got != sent)
			fail("server received %" PRIu64 " SENDs, client sent %" PRIu64, got, sent);
		printf("server: %" PRIu64 " SENDs received and checked\n", got);
		xfer(fd, &sync, 1, false); /* client finished the atomics */
	}
	close(fd);
	printf("rc_integrity: OK\n");
	return 0;
}
