// SPDX-License-Identifier: MIT
/*
 * Many connected RC QPs (issue 16), written against plain libibverbs (runs on
 * the shim through `xrxe run`, driven by tests/net/scale.sh):
 *
 *   server:  rc_scale -d DEV -p PORT [-n NQP] [-k SAMPLE] [-H]
 *   client:  rc_scale -d DEV -p PORT [-n NQP] [-k SAMPLE] [-H] SERVER_ADDR
 *
 * Both sides create NQP RC QPs on one PD and one CQ, exchange their QPNs over
 * TCP and connect every pair (INIT, RTR, RTS). On SAMPLE of them, spread
 * over the whole range, the client writes a 4 KiB pattern of its own per QP
 * with RDMA WRITE and then SENDs a 64-byte one; the server checks every byte
 * of both. Then every QP is destroyed (timed) and "rc_scale: OK" printed.
 * -H (hold): after the traffic, print "rc_scale: HOLDING" and wait to be
 * killed (the daemon must release everything of a dead application).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define OOB_PROG "rc_scale"
#include "oob.h"

#define SLOT 4096u
#define SEND_LEN 64u

struct opts {
	const char *dev, *server;
	int port;
	uint32_t nqp, sample;
	bool hold;
};

struct hdr {
	uint32_t nqp;
	uint32_t rkey;
	uint64_t addr;
	union ibv_gid gid;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint8_t pattern(uint32_t q, uint32_t i, uint8_t kind)
{
	uint64_t x = ((uint64_t)q << 32 | i) * 0x9E3779B97F4A7C15ull ^ kind;

	return (uint8_t)(x >> 56 ^ x >> 17);
}

/* The k-th sampled QP: spread over [0, nqp). */
static uint32_t sampled(const struct opts *o, uint32_t k)
{
	return (uint32_t)((uint64_t)k * o->nqp / o->sample);
}

static struct ibv_wc wait_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	double t0 = now_s();
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		if (now_s() - t0 > 60)
			fail("no completion in 60 s");
	if (n < 0)
		die("ibv_poll_cq");
	if (wc.status != IBV_WC_SUCCESS)
		fail("completion wr_id %" PRIu64 ": %s", wc.wr_id, ibv_wc_status_str(wc.status));
	return wc;
}

int main(int argc, char **argv)
{
	struct opts o = { .port = 19100, .nqp = 16384, .sample = 64 };
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_port_attr port;
	struct ibv_device_attr dattr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp **qp;
	struct hdr me, peer;
	uint32_t *qpn, *peer_qpn;
	uint8_t *buf;
	size_t bytes;
	double t0;
	int c, fd, err;

	while ((c = getopt(argc, argv, "d:p:n:k:H")) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'n': o.nqp = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'k': o.sample = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'H': o.hold = true; break;
		default:
			fprintf(stderr, "usage: rc_scale -d DEV [-p PORT] [-n NQP] [-k SAMPLE] [-H] [SERVER]\n");
			return 2;
		}
	}
	if (optind < argc)
		o.server = argv[optind];
	if (!o.nqp || !o.sample || o.sample > o.nqp)
		fail("need 0 < SAMPLE <= NQP");

	list = ibv_get_device_list(NULL);
	if (!list)
		die("ibv_get_device_list");
	for (int i = 0; list[i]; i++)
		if (!o.dev || !strcmp(ibv_get_device_name(list[i]), o.dev))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		fail("device %s cannot be opened", o.dev ? o.dev : "(any)");
	if (ibv_query_device(ctx, &dattr) || ibv_query_port(ctx, 1, &port) ||
	    ibv_query_gid(ctx, 1, 0, &me.gid))
		die("query device/port/gid");
	/* the device must report what it allows (issue 16: 65 536) */
	if ((uint32_t)dattr.max_qp < o.nqp || (uint32_t)dattr.max_cq < 1)
		fail("max_qp %d < %u", dattr.max_qp, o.nqp);
	printf("rc_scale: device max_qp %d max_cq %d max_mr %d max_pd %d max_ah %d\n", dattr.max_qp,
	       dattr.max_cq, dattr.max_mr, dattr.max_pd, dattr.max_ah);

	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, (int)(4 * o.sample + 16), NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq");
	/* [0, sample * SLOT): WRITE targets; then sample receive buffers */
	bytes = (size_t)o.sample * SLOT * 2;
	buf = calloc(1, bytes);
	if (!buf)
		die("calloc");
	mr = ibv_reg_mr(pd, buf, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	qp = calloc(o.nqp, sizeof(*qp));
	qpn = calloc(o.nqp, sizeof(*qpn));
	peer_qpn = calloc(o.nqp, sizeof(*peer_qpn));
	if (!qp || !qpn || !peer_qpn)
		die("calloc");

	t0 = now_s();
	for (uint32_t i = 0; i < o.nqp; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = 2, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		};
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

		qp[i] = ibv_create_qp(pd, &ia);
		if (!qp[i])
			fail("ibv_create_qp #%u: %s", i, strerror(errno));
		/* verbs that return an errno value may leave errno as the
		 * last system call set it: report what they return */
		err = ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						       IBV_QP_ACCESS_FLAGS);
		if (err)
			fail("QP #%u: modify INIT: %s", i, strerror(err));
		qpn[i] = qp[i]->qp_num;
	}
	printf("rc_scale: %u QPs created in %.2f s\n", o.nqp, now_s() - t0);

	me.nqp = o.nqp;
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)buf;
	fd = oob_connect(o.server, o.port, 600);
	xfer(fd, &me, sizeof(me), true);
	xfer(fd, &peer, sizeof(peer), false);
	if (peer.nqp != o.nqp)
		fail("peer has %u QPs, we %u", peer.nqp, o.nqp);
	xfer(fd, qpn, o.nqp * sizeof(*qpn), true);
	xfer(fd, peer_qpn, o.nqp * sizeof(*peer_qpn), false);

	/* the server's receives are posted before anyone is in RTS */
	if (!o.server)
		for (uint32_t k = 0; k < o.sample; k++) {
			struct ibv_sge sge = { .addr = (uintptr_t)buf + (o.sample + k) * SLOT,
					       .length = SLOT, .lkey = mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1 }, *bad;

			err = ibv_post_recv(qp[sampled(&o, k)], &wr, &bad);
			if (err)
				fail("QP #%u: ibv_post_recv: %s", sampled(&o, k), strerror(err));
		}
	t0 = now_s();
	for (uint32_t i = 0; i < o.nqp; i++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR, .path_mtu = port.active_mtu,
			.dest_qp_num = peer_qpn[i], .rq_psn = i & 0xffffff,
			.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
			.ah_attr = { .is_global = 1,
				     .grh = { .dgid = peer.gid, .sgid_index = 0, .hop_limit = 64 },
				     .port_num = 1 },
		};

		err = ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		if (err)
			fail("QP #%u: modify RTR: %s", i, strerror(err));
		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
					  .rnr_retry = 7, .sq_psn = i & 0xffffff,
					  .max_rd_atomic = 1 };
		err = ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						       IBV_QP_MAX_QP_RD_ATOMIC);
		if (err)
			fail("QP #%u: modify RTS: %s", i, strerror(err));
	}
	printf("rc_scale: %u QPs connected in %.2f s\n", o.nqp, now_s() - t0);
	{
		uint8_t sync = 1;

		xfer(fd, &sync, 1, true); /* both in RTS before any packet */
		xfer(fd, &sync, 1, false);
	}

	if (o.server) {
		/* client: per sampled QP a WRITE of SLOT bytes, then a SEND */
		for (uint32_t k = 0; k < o.sample; k++) {
			uint8_t *w = buf + (size_t)k * SLOT, *s = buf + (o.sample + k) * SLOT;
			struct ibv_sge ws = { .addr = (uintptr_t)w, .length = SLOT, .lkey = mr->lkey };
			struct ibv_sge ss = { .addr = (uintptr_t)s, .length = SEND_LEN, .lkey = mr->lkey };
			struct ibv_send_wr sw = { .wr_id = k, .sg_list = &ss, .num_sge = 1,
						  .opcode = IBV_WR_SEND };
			struct ibv_send_wr ww = {
				.wr_id = k, .next = &sw, .sg_list = &ws, .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.wr.rdma = { .remote_addr = peer.addr + (uint64_t)k * SLOT,
					     .rkey = peer.rkey },
			}, *bad;
			uint32_t q = sampled(&o, k);

			for (uint32_t i = 0; i < SLOT; i++)
				w[i] = pattern(q, i, 1);
			for (uint32_t i = 0; i < SEND_LEN; i++)
				s[i] = pattern(q, i, 2);
			err = ibv_post_send(qp[q], &ww, &bad);
			if (err)
				fail("QP #%u: ibv_post_send: %s", q, strerror(err));
		}
		for (uint32_t k = 0; k < 2 * o.sample; k++)
			wait_wc(cq);
	} else {
		for (uint32_t k = 0; k < o.sample; k++) {
			struct ibv_wc wc = wait_wc(cq);

			if (wc.opcode != IBV_WC_RECV || wc.byte_len != SEND_LEN ||
			    wc.wr_id >= o.sample || wc.qp_num != qpn[sampled(&o, (uint32_t)wc.wr_id)])
				fail("unexpected completion: opcode %d, %u bytes, wr_id %" PRIu64
				     ", QP %u",
				     wc.opcode, wc.byte_len, wc.wr_id, wc.qp_num);
		}
		/* the WRITE came before its SEND on the same QP (IBA ordering) */
		for (uint32_t k = 0; k < o.sample; k++) {
			const uint8_t *w = buf + (size_t)k * SLOT, *s = buf + (o.sample + k) * SLOT;
			uint32_t q = sampled(&o, k);

			for (uint32_t i = 0; i < SLOT; i++)
				if (w[i] != pattern(q, i, 1))
					fail("QP #%u: WRITE byte %u is %#x", q, i, w[i]);
			for (uint32_t i = 0; i < SEND_LEN; i++)
				if (s[i] != pattern(q, i, 2))
					fail("QP #%u: SEND byte %u is %#x", q, i, s[i]);
		}
	}
	printf("rc_scale: traffic on %u of %u QPs, every byte checked\n", o.sample, o.nqp);
	{
		uint8_t sync = 2;

		xfer(fd, &sync, 1, true); /* the peer is done with its side too */
		xfer(fd, &sync, 1, false);
	}
	if (o.hold) {
		printf("rc_scale: HOLDING\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	t0 = now_s();
	for (uint32_t i = 0; i < o.nqp; i++) {
		err = ibv_destroy_qp(qp[i]);
		if (err)
			fail("QP #%u: ibv_destroy_qp: %s", i, strerror(err));
	}
	printf("rc_scale: %u QPs destroyed in %.2f s\n", o.nqp, now_s() - t0);
	if (ibv_dereg_mr(mr) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
		die("teardown");
	ibv_close_device(ctx);
	close(fd);
	printf("rc_scale: OK\n");
	return 0;
}
