// SPDX-License-Identifier: MIT
/*
 * peer_not_ready: an RC QP whose send window is full of RDMA WRITEs towards
 * a QP of the same device that is not ready (taken back to INIT: requests
 * are dropped, IBA 10.3.1, a QP below RTR takes none), and the peer's
 * ibv_modify_qp to RTR made while the sender waits for ACKs.
 *
 * That is what librdmacm's passive side does to the active side: its QP
 * goes to RTS at rdma_accept and it may send before the REP has brought the
 * other QP to RTR. The daemon must serve the modify at once. It once did
 * not: its loop kept spinning for the waiting QP without serving control
 * requests until the sender's Local ACK Timeout (src/daemon/xrxed_loop.c),
 * and rsockets' loopback connections failed with RETRY_EXC.
 *
 * The sender has a 17 s Local ACK Timeout and a round-trip sample (a first
 * WRITE the peer took), so its loss probes (src/transport/rto.c) find the
 * peer ready within a few ms to ~1 s of the modify. The check is that the
 * modify, a ~1 ms request, returns within half that timeout: the daemon
 * that did not serve it served it when the timeout fired.
 *
 * Prints TAP lines; exit status 0 unless a check failed.
 *
 *   peer_not_ready DEVICE [GID_INDEX]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "loopback.h"

#define TEST_PROG "peer_not_ready"
#include "test_prog.h"

#define NWRITES 8
#define WRITE_LEN 65536 /* 8 x 64 KiB: 512 packets at MTU 1024, past any window */
/* 4.096 us x 2^22 = 17.2 s */
#define ACK_TIMEOUT 22
#define ACK_TIMEOUT_MS 17180

static int to_init(struct ibv_qp *q)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	};

	return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(struct ibv_qp *q, uint32_t dest, uint32_t rq_psn, const union ibv_gid *gid,
		  int gidx)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest,
		.rq_psn = rq_psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1,
			     .port_num = 1,
			     .grh = { .dgid = *gid, .sgid_index = (uint8_t)gidx, .hop_limit = 64 } },
	};

	return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *q)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.timeout = ACK_TIMEOUT,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.max_rd_atomic = 1,
	};

	return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void post_write(struct ibv_qp *qp, uint8_t *src, struct ibv_mr *src_mr, uint8_t *dst,
		       struct ibv_mr *dst_mr, int i, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)(src + (size_t)i * WRITE_LEN), len, src_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)i,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)(dst + (size_t)i * WRITE_LEN), dst_mr->rkey },
	};
	struct ibv_send_wr *badwr;

	if (ibv_post_send(qp, &wr, &badwr))
		fail("post WRITE %d", i);
}

static enum ibv_wc_status poll_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	if (poll1(cq, &wc) != 1)
		return IBV_WC_GENERAL_ERR;
	return wc.status;
}

int main(int argc, char **argv)
{
	int gidx = argc > 2 ? atoi(argv[2]) : 1;
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = NWRITES, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq_a, *cq_b;
	struct ibv_qp *a, *b;
	struct ibv_mr *src_mr, *dst_mr;
	union ibv_gid gid;
	uint8_t *src, *dst;
	uint64_t t0, modify_ms;
	int ok = 0, bad = 0, modified;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DEVICE [GID_INDEX]\n", argv[0]);
		return 2;
	}
	ctx = loopback_open_device(argv[1]);
	if (!ctx)
		fail("cannot open %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	cq_a = ibv_create_cq(ctx, NWRITES, NULL, NULL, 0);
	cq_b = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	src = malloc((size_t)NWRITES * WRITE_LEN);
	dst = calloc(NWRITES, WRITE_LEN);
	if (!pd || !cq_a || !cq_b || !src || !dst || ibv_query_gid(ctx, 1, gidx, &gid))
		fail("PD, CQs, buffers, GID %d", gidx);
	for (size_t i = 0; i < (size_t)NWRITES * WRITE_LEN; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	src_mr = ibv_reg_mr(pd, src, (size_t)NWRITES * WRITE_LEN, IBV_ACCESS_LOCAL_WRITE);
	dst_mr = ibv_reg_mr(pd, dst, (size_t)NWRITES * WRITE_LEN,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	qa.send_cq = qa.recv_cq = cq_a;
	a = ibv_create_qp(pd, &qa);
	qa.send_cq = qa.recv_cq = cq_b;
	b = ibv_create_qp(pd, &qa);
	if (!src_mr || !dst_mr || !a || !b)
		fail("MRs and QPs");
	/* Connected both ways, one 1-packet WRITE: the sender's first round
	 * trip (its loss probes adapt to it and are off without one). */
	check(!to_init(a) && !to_rtr(a, b->qp_num, 0, &gid, gidx) && !to_rts(a) && !to_init(b) &&
		      !to_rtr(b, a->qp_num, 0, &gid, gidx),
	      "sender in RTS (Local ACK Timeout 17 s), peer in RTR");
	post_write(a, src, src_mr, dst, dst_mr, 0, 64);
	check(poll_one(cq_a) == IBV_WC_SUCCESS, "a first 64 B WRITE completes (PSN 0)");

	/* The peer is taken back to INIT: not ready to receive again. */
	{
		struct ibv_qp_attr r = { .qp_state = IBV_QPS_RESET };

		check(!ibv_modify_qp(b, &r, IBV_QP_STATE) && !to_init(b),
		      "peer taken back to RESET and INIT");
	}
	for (int i = 0; i < NWRITES; i++)
		post_write(a, src, src_mr, dst, dst_mr, i, WRITE_LEN);
	/* Let the first window go out and be dropped: the sender now waits
	 * for ACKs with WQEs it cannot start (the state that starved the
	 * control requests). Not a timing assumption: were the modify served
	 * earlier, the checks below hold all the same. */
	usleep(200 * 1000);

	t0 = now_ms();
	modified = !to_rtr(b, a->qp_num, 1, &gid, gidx); /* the next PSN is 1 */
	modify_ms = now_ms() - t0;
	check(modified, "the peer's modify to RTR, made while the sender waits for ACKs, succeeds");
	check(modify_ms < ACK_TIMEOUT_MS / 2,
	      "it is served while the sender waits, not when its Local ACK Timeout fires "
	      "(%llu ms, under %u)",
	      (unsigned long long)modify_ms, ACK_TIMEOUT_MS / 2);

	/* Past a timeout and a retry, were the probes not to find it. */
	t0 = now_ms();
	while (ok + bad < NWRITES && now_ms() - t0 < 3 * ACK_TIMEOUT_MS) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq_a, 1, &wc);

		if (n < 0)
			fail("poll");
		if (n == 0) {
			usleep(1000);
			continue;
		}
		if (wc.status == IBV_WC_SUCCESS) {
			ok++;
		} else {
			if (!bad)
				printf("# first failed WRITE: %s\n", ibv_wc_status_str(wc.status));
			bad++;
		}
	}
	check(ok == NWRITES,
	      "all %d WRITEs complete successfully once the peer is ready (%d ok, %d failed)",
	      NWRITES, ok, bad);
	check(!memcmp(src, dst, (size_t)NWRITES * WRITE_LEN),
	      "the peer's memory holds every byte written");

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	ibv_destroy_cq(cq_a);
	ibv_destroy_cq(cq_b);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(src);
	free(dst);
	return failed;
}
