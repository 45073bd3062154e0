// SPDX-License-Identifier: MIT
/*
 * tm_rndv: tag matching's rendezvous between two RC QPs of one device (the
 * device loops packets to its own GIDs back), written against plain
 * libibverbs (docs/architecture.md "Tag matching"). The receiving QP has a
 * TM SRQ and no send queue (max_send_wr = 0, as rdma-core's test has it);
 * the sender's RNDV names a buffer of its own in the RVH. Checks: tm_caps;
 * a matched RNDV of 20000 bytes completes MATCH, then DATA_VALID with the
 * sender's bytes in the tagged buffer, and the sender receives the FIN (TMH
 * opcode FIN, the tag); hostile RVHs: a length past the tagged buffer
 * fails that buffer (IBV_WC_LOC_LEN_ERR), nothing placed, no FIN, and the
 * QPs carry on (the next rendezvous works); a bad rkey fails the tagged
 * buffer with IBV_WC_REM_ACCESS_ERR after its MATCH, nothing placed, and
 * the device still answers. Prints TAP lines; exit status 0 unless a check
 * failed.
 *
 *   tm_rndv DEVICE [GID_INDEX]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>
#include <infiniband/verbs.h>

#include "loopback.h"

#define BUF (64 * 1024)
#define SRC 4096      /* cbuf: the rendezvous' source data */
#define FIN_AT 60000  /* cbuf: where FINs land */
#define HDR 64        /* the RNDV message: TMH + RVH + 32 bytes */

static uint8_t *cbuf, *sbuf;
static struct ibv_mr *cmr, *smr;
static struct ibv_cq *scq, *ccq;
static struct ibv_srq *srq;
static struct ibv_qp *sqp, *cqp;

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* TAG_ADD of sbuf[0..len) for tag, completed and checked */
static int tag_add(uint64_t tag, uint64_t wr_id, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)sbuf, len, smr->lkey };
	struct ibv_ops_wr wr, *bad;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_TAG_ADD;
	wr.flags = IBV_OPS_SIGNALED;
	wr.tm.add.recv_wr_id = wr_id;
	wr.tm.add.sg_list = &sge;
	wr.tm.add.num_sge = 1;
	wr.tm.add.tag = tag;
	wr.tm.add.mask = ~0ull;
	if (ibv_post_srq_ops(srq, &wr, &bad))
		return -1;
	return poll1(scq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_TM_ADD
		       ? 0
		       : -1;
}

/* The sender: a receive for the FIN, then the RNDV naming len bytes at
 * va/rkey. */
static int send_rndv(uint64_t tag, uint64_t va, uint32_t rkey, uint32_t len)
{
	struct ibv_sge fin = { (uintptr_t)cbuf + FIN_AT, 16, cmr->lkey };
	struct ibv_sge hdr = { (uintptr_t)cbuf, HDR, cmr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 500 + tag, .sg_list = &fin, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr, *sbad;

	memset(cbuf, 0xcc, HDR);
	memset(cbuf, 0, 16);
	cbuf[0] = IBV_TMH_RNDV;
	put_be(cbuf + 4, 0x1234, 4); /* app_ctx */
	put_be(cbuf + 8, tag, 8);
	put_be(cbuf + 16, va, 8);
	put_be(cbuf + 24, rkey, 4);
	put_be(cbuf + 28, len, 4);
	memset(cbuf + FIN_AT, 0, 16);
	if (ibv_post_recv(cqp, &rwr, &rbad))
		return -1;
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 100 + tag;
	swr.opcode = IBV_WR_SEND;
	swr.sg_list = &hdr;
	swr.num_sge = 1;
	swr.send_flags = IBV_SEND_SIGNALED;
	return ibv_post_send(cqp, &swr, &sbad);
}

/* A good rendezvous of len bytes from cbuf + SRC + off, all checked. */
static void good_rndv(const char *what, uint64_t tag, uint32_t off, uint32_t len)
{
	struct ibv_wc wc[2];
	int sends = 0, fins = 0, got;

	memset(sbuf, 0xee, BUF);
	if (tag_add(tag, 10 + tag, 32768) || send_rndv(tag, (uintptr_t)cbuf + SRC + off, cmr->rkey, len)) {
		check(0, "%s: tag added and RNDV posted", what);
		return;
	}
	/* (each poll before its check: the message prints what it got) */
	memset(wc, 0, sizeof(wc));
	got = poll1(scq, &wc[0]);
	check(got == 1 && wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].opcode == IBV_WC_TM_RECV && wc[0].wr_id == 10 + tag &&
		      (wc[0].wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID)) == IBV_WC_TM_MATCH,
	      "%s: the tagged buffer completes MATCH first (status %d)", what, wc[0].status);
	got = poll1(scq, &wc[1]);
	check(got == 1 && wc[1].status == IBV_WC_SUCCESS &&
		      wc[1].opcode == IBV_WC_TM_RECV && wc[1].wr_id == 10 + tag &&
		      (wc[1].wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID)) ==
			      IBV_WC_TM_DATA_VALID &&
		      wc[1].byte_len == len,
	      "%s: then DATA_VALID with the %u bytes read (status %d, %u bytes)", what, len,
	      wc[1].status, wc[1].byte_len);
	check(!memcmp(sbuf, cbuf + SRC + off, len) && sbuf[len] == 0xee,
	      "%s: the tagged buffer holds the sender's bytes, nothing past them", what);
	for (int i = 0; i < 2; i++) {
		if (poll1(ccq, &wc[0]) != 1 || wc[0].status != IBV_WC_SUCCESS)
			break;
		if (wc[0].opcode == IBV_WC_RECV && wc[0].byte_len == 16)
			fins++;
		else if (wc[0].opcode == IBV_WC_SEND)
			sends++;
	}
	check(sends == 1 && fins == 1 && cbuf[FIN_AT] == IBV_TMH_FIN &&
		      get_be(cbuf + FIN_AT + 8, 8) == tag,
	      "%s: the sender's RNDV completes and it receives the FIN with the tag", what);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx = argc > 1 ? loopback_open_device(argv[1]) : NULL;
	int gidx = argc > 2 ? atoi(argv[2]) : 0;
	unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_device_attr_ex dev;
	struct ibv_srq_init_attr_ex sa;
	struct ibv_qp_init_attr qa;
	struct ibv_wc wc;
	union ibv_gid gid;
	struct ibv_pd *pd;
	int got;

	if (!ctx) {
		printf("not ok - device %s opens\n", argc > 1 ? argv[1] : "(none)");
		return 1;
	}
	memset(&dev, 0, sizeof(dev));
	got = ibv_query_device_ex(ctx, NULL, &dev);
	check(!got && (dev.tm_caps.flags & IBV_TM_CAP_RC) &&
		      dev.tm_caps.max_num_tags > 0 && dev.tm_caps.max_sge == 1 &&
		      dev.tm_caps.max_rndv_hdr_size == HDR,
	      "tm_caps offers RC tag matching (%u tags, rendezvous header %u)",
	      dev.tm_caps.max_num_tags, dev.tm_caps.max_rndv_hdr_size);
	pd = ibv_alloc_pd(ctx);
	cbuf = calloc(1, BUF);
	sbuf = calloc(1, BUF);
	scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	ccq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!pd || !cbuf || !sbuf || !scq || !ccq || ibv_query_gid(ctx, 1, gidx, &gid)) {
		check(0, "resources");
		return 1;
	}
	cmr = ibv_reg_mr(pd, cbuf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	smr = ibv_reg_mr(pd, sbuf, BUF, IBV_ACCESS_LOCAL_WRITE);
	memset(&sa, 0, sizeof(sa));
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ |
		       IBV_SRQ_INIT_ATTR_TM;
	sa.srq_type = IBV_SRQT_TM;
	sa.pd = pd;
	sa.cq = scq;
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	sa.tm_cap.max_num_tags = 16;
	sa.tm_cap.max_ops = 16;
	srq = ibv_create_srq_ex(ctx, &sa);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = scq;
	qa.srq = srq;
	qa.qp_type = IBV_QPT_RC;
	sqp = srq ? ibv_create_qp(pd, &qa) : NULL; /* max_send_wr = 0 */
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = ccq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	cqp = ibv_create_qp(pd, &qa);
	if (!cmr || !smr || !srq || !sqp || !cqp ||
	    connect_qp(sqp, cqp->qp_num, &gid, gidx, access) ||
	    connect_qp(cqp, sqp->qp_num, &gid, gidx, access)) {
		check(0, "a TM SRQ, a QP of it without a send queue, its peer, connected");
		return 1;
	}
	for (uint32_t i = 0; i < 32768; i++)
		cbuf[SRC + i] = (uint8_t)(i * 13 + 5);

	good_rndv("rendezvous of 20000 bytes", 1, 0, 20000);

	/* A length past the tagged buffer: refused before any READ */
	memset(sbuf, 0xee, BUF);
	if (tag_add(2, 12, 4096) || send_rndv(2, (uintptr_t)cbuf + SRC, cmr->rkey, 4097)) {
		check(0, "too long: tag added and RNDV posted");
	} else {
		memset(&wc, 0, sizeof(wc));
		got = poll1(scq, &wc);
		check(got == 1 && wc.status == IBV_WC_LOC_LEN_ERR &&
			      wc.opcode == IBV_WC_TM_RECV && wc.wr_id == 12,
		      "an RVH longer than the tagged buffer fails it: IBV_WC_LOC_LEN_ERR (status %d)",
		      wc.status);
		check(sbuf[0] == 0xee, "too long: nothing placed");
		check(poll1(ccq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
			      wc.opcode == IBV_WC_SEND && ibv_poll_cq(ccq, 1, &wc) == 0,
		      "too long: the RNDV completes at the sender, no FIN");
	}
	/* (the FIN receive posted for it takes the next FIN) */
	good_rndv("the QPs carry on: another rendezvous", 3, 777, 3000);

	/* A bad rkey: the sender's side refuses the READ */
	memset(sbuf, 0xee, BUF);
	if (tag_add(4, 14, 4096) || send_rndv(4, (uintptr_t)cbuf + SRC, cmr->rkey ^ 0x00a50000u, 512)) {
		check(0, "bad rkey: tag added and RNDV posted");
	} else {
		memset(&wc, 0, sizeof(wc));
		got = poll1(scq, &wc);
		check(got == 1 && wc.status == IBV_WC_SUCCESS &&
			      (wc.wc_flags & IBV_WC_TM_MATCH) && wc.wr_id == 14,
		      "bad rkey: the RNDV matches (status %d)", wc.status);
		memset(&wc, 0, sizeof(wc));
		got = poll1(scq, &wc);
		check(got == 1 && wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 14,
		      "bad rkey: the tagged buffer completes IBV_WC_REM_ACCESS_ERR (status %d)",
		      wc.status);
		check(sbuf[0] == 0xee, "bad rkey: nothing placed");
	}
	check(!ibv_query_device_ex(ctx, NULL, &dev), "the device still answers");
	return failed;
}
