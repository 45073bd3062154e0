// SPDX-License-Identifier: MIT
/*
 * flush_loopback: ibv_wr_flush and ibv_wr_atomic_write between two RC QPs of
 * one device (the device loops packets to its own GIDs back), written against
 * plain libibverbs. rdma-core 44's verbs.h predates FLUSH, so the program
 * declares what rdma-core >= 45 adds (the wr_flush pointer right after
 * struct ibv_qp_ex and the FLUSH constants, same values) and uses them only
 * if the library accepted IBV_QP_EX_WITH_FLUSH at QP creation; otherwise it
 * says SKIP. Prints TAP lines; exit status 0 unless a check failed.
 *
 *   flush_loopback DEVICE [GID_INDEX]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "loopback.h"

/* rdma-core >= 45 (libibverbs/verbs.h): values and the appended builder */
#define WR_FLUSH 14
#define WC_FLUSH 8
#define ACCESS_FLUSH_GLOBAL (1 << 8)
#define ACCESS_FLUSH_PERSISTENT (1 << 9)
#define QP_EX_WITH_FLUSH (1ull << 11)
#define FLUSH_GLOBAL 1
#define FLUSH_PERSISTENT 2
#define FLUSH_RANGE 0
#define FLUSH_MR 1
#define DEVICE_FLUSH_GLOBAL (1ull << 38)
#define DEVICE_ATOMIC_WRITE (1ull << 40)

struct qp_ex_45 {
	struct ibv_qp_ex qpx;
	void (*wr_flush)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len,
			 uint8_t type, uint8_t level);
};

#define BUF 16384

static struct ibv_qp *make_qp(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE |
				  QP_EX_WITH_FLUSH,
	};

	return ibv_create_qp_ex(ctx, &a);
}

/* One FLUSH on qp; returns the completion. */
static struct ibv_wc do_flush(struct ibv_qp *qp, struct ibv_cq *cq, uint32_t rkey, uint64_t va,
			      size_t len, uint8_t type, uint8_t level, uint64_t wr_id)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.status = IBV_WC_GENERAL_ERR;
	ibv_wr_start(qx);
	qx->wr_id = wr_id;
	qx->wr_flags = IBV_SEND_SIGNALED;
	((struct qp_ex_45 *)qx)->wr_flush(qx, rkey, va, len, type, level);
	if (ibv_wr_complete(qx) || !poll1(cq, &wc))
		wc.status = IBV_WC_GENERAL_ERR;
	return wc;
}

int main(int argc, char **argv)
{
	int gidx = argc > 2 ? atoi(argv[2]) : 1;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr_ex dx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_mr *mr, *bad;
	union ibv_gid gid;
	struct ibv_wc wc;
	uint8_t *buf;
	uint64_t val = 0x0807060504030201ull, got;
	unsigned qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | ACCESS_FLUSH_GLOBAL;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DEVICE [GID_INDEX]\n", argv[0]);
		return 2;
	}
	ctx = loopback_open_device(argv[1]);
	if (!ctx) {
		check(0, "open %s", argv[1]);
		return 1;
	}
	if (ibv_query_device_ex(ctx, NULL, &dx) || !(dx.device_cap_flags_ex & DEVICE_FLUSH_GLOBAL) ||
	    !(dx.device_cap_flags_ex & DEVICE_ATOMIC_WRITE)) {
		printf("ok - FLUSH # SKIP the device advertises no FLUSH_GLOBAL/ATOMIC_WRITE\n");
		return 0;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, BUF);
	memset(buf, 0, BUF);
	a = make_qp(ctx, pd, cq);
	if (!a && errno == EOPNOTSUPP) {
		printf("ok - FLUSH # SKIP the library has no IBV_QP_EX_WITH_FLUSH (rdma-core < 45)\n");
		return 0;
	}
	b = make_qp(ctx, pd, cq);
	check(a && b, "two RC QPs with IBV_QP_EX_WITH_FLUSH | ATOMIC_WRITE");
	if (!a || !b || ibv_query_gid(ctx, 1, gidx, &gid))
		return 1;
	check(!connect_qp(a, b->qp_num, &gid, gidx, qp_access) &&
		      !connect_qp(b, a->qp_num, &gid, gidx, qp_access),
	      "QPs connected with IBV_ACCESS_FLUSH_GLOBAL");

	bad = ibv_reg_mr(pd, buf, 4096,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | ACCESS_FLUSH_PERSISTENT);
	check(!bad && errno == EINVAL,
	      "IBV_ACCESS_FLUSH_PERSISTENT registration: EINVAL (no persistence domain)");
	mr = ibv_reg_mr(pd, buf, BUF,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | ACCESS_FLUSH_GLOBAL);
	check(mr != NULL, "IBV_ACCESS_FLUSH_GLOBAL registration");
	if (!mr)
		return 1;

	/* WRITE then FLUSH of the range: both complete, the data is there */
	memset(buf, 0x5a, 4096);
	{
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(a);

		ibv_wr_start(qx);
		qx->wr_id = 1;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)buf + 8192);
		ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 4096);
		check(!ibv_wr_complete(qx) && poll1(cq, &wc) && wc.status == IBV_WC_SUCCESS,
		      "RDMA WRITE 4 KiB");
	}
	wc = do_flush(a, cq, mr->rkey, (uintptr_t)buf + 8192, 4096, FLUSH_GLOBAL, FLUSH_RANGE, 2);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == (enum ibv_wc_opcode)WC_FLUSH &&
		      wc.wr_id == 2 && buf[8192] == 0x5a && buf[8192 + 4095] == 0x5a,
	      "ibv_wr_flush(GLOBAL, RANGE) completes with IBV_WC_FLUSH (status %d opcode %d)",
	      wc.status, wc.opcode);
	wc = do_flush(a, cq, mr->rkey, 0, 0, FLUSH_GLOBAL, FLUSH_MR, 3);
	check(wc.status == IBV_WC_SUCCESS, "ibv_wr_flush(GLOBAL, MR selectivity)");

	/* ATOMIC_WRITE */
	{
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(a);

		memset(buf + 12288, 0xee, 24);
		ibv_wr_start(qx);
		qx->wr_id = 4;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(qx, mr->rkey, (uintptr_t)buf + 12296, &val);
		check(!ibv_wr_complete(qx) && poll1(cq, &wc) && wc.status == IBV_WC_SUCCESS &&
			      wc.opcode == IBV_WC_ATOMIC_WRITE,
		      "ibv_wr_atomic_write completes with IBV_WC_ATOMIC_WRITE");
		memcpy(&got, buf + 12296, 8);
		check(got == val && buf[12295] == 0xee && buf[12304] == 0xee,
		      "ATOMIC_WRITE placed exactly its 8 bytes (%#" PRIx64 ")", got);
	}

	/* FLUSH beyond the region: remote access error (the QP pair ends in ERR) */
	wc = do_flush(a, cq, mr->rkey, (uintptr_t)buf + BUF - 8, 64, FLUSH_GLOBAL, FLUSH_RANGE, 5);
	check(wc.status == IBV_WC_REM_ACCESS_ERR,
	      "FLUSH beyond the region: IBV_WC_REM_ACCESS_ERR (status %d)", wc.status);

	/* release everything, so LeakSanitizer (build-san) has nothing to report */
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	return failed;
}
