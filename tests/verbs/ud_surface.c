// SPDX-License-Identifier: MIT
/*
 * ud_surface: the parts of the verbs surface the stock tools do not reach,
 * written against plain libibverbs (runs unchanged on rdma-core + rxe), on
 * one device (QPs talk to each other through the device's loopback):
 *
 *   ah GIDX        UD datagram with immediate to our own GID GIDX: src_qp,
 *                  IBV_WC_GRH, the 40-byte GRH area (IPv4: 20 bytes, then the
 *                  IPv4 header; IPv6: the IPv6 header), on xrxe wc.sl the
 *                  RoCE L3 type as mlx5 reports it, ibv_init_ah_from_wc
 *                  (sgid_index = GIDX, dgid = our GID) and a reply through
 *                  ibv_create_ah_from_wc; a send above the port MTU fails
 *                  with IBV_WC_LOC_LEN_ERR.
 *   mcast GIDX     UD multicast: two QPs attached to a group of GIDX's
 *                  family (239.71.91.1 or ff0e::4791:1), both receive one
 *                  datagram sent to QPN 0xFFFFFF; after one detaches only the
 *                  other receives.
 *   srq GIDX       an SRQ shared by two RC QPs: messages from two peers land
 *                  in it; ibv_modify_srq(IBV_SRQ_LIMIT) arms the limit and
 *                  IBV_EVENT_SRQ_LIMIT_REACHED arrives on async_fd once the
 *                  count drops below it (limit disarmed after, ibv_query_srq);
 *                  moving one QP to ERR gives IBV_EVENT_QP_LAST_WQE_REACHED.
 *   mcast-recv GIDX / mcast-send GIDX
 *                  across hosts: the receiver attaches a QP to the group,
 *                  prints "attached" and waits (10 s) for one datagram; the
 *                  sender sends 20 datagrams to the group, 50 ms apart.
 *   cqerr GIDX     a receive CQ of one entry overruns: IBV_EVENT_CQ_ERR for it
 *                  and IBV_EVENT_QP_FATAL for the QP that could not complete.
 *   fatal          waits for IBV_EVENT_DEVICE_FATAL on async_fd (the caller
 *                  stops the daemon), then checks that posts and polls fail
 *                  at once instead of hanging.
 *
 *   usage: ud_surface -d DEV TEST [GIDX]     exit 0 and "ud_surface: OK"
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define TEST_PROG "ud_surface"
#include "test_prog.h"

#define QKEY 0x4791
#define BUF 65536

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static uint8_t *buf;
static int gidx = 1;
static union ibv_gid gid;


/* Up to n completions within ms milliseconds. */
static int poll_for(struct ibv_wc *wc, int n, unsigned ms)
{
	uint64_t end = now_ms() + ms;
	int got = 0, r;

	while (got < n && now_ms() < end) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			fail("ibv_poll_cq: %d", r);
		got += r;
		if (!r)
			usleep(100);
	}
	return got;
}

static struct ibv_qp *make_qp(enum ibv_qp_type type, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = type, .sq_sig_all = 1,
		.cap = { .max_send_wr = 32, .max_recv_wr = srq ? 0 : 32, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		fail("ibv_create_qp(%d, srq %p): %s", type, (void *)srq, strerror(errno));
	return qp;
}

static void ud_up(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		fail("UD to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		fail("UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		fail("UD to RTS");
}

static void rc_connect(struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS))
		fail("RC to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 7;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER))
		fail("RC to RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_MAX_QP_RD_ATOMIC))
		fail("RC to RTS");
}

static struct ibv_ah *ah_to(const union ibv_gid *dgid)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;

	a.grh.dgid = *dgid;
	a.grh.sgid_index = (uint8_t)gidx;
	a.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &a);
	if (!ah)
		fail("ibv_create_ah: %s", strerror(errno));
	return ah;
}

static void post_recv(struct ibv_qp *qp, struct ibv_srq *srq, uint64_t id, uint32_t off,
		      uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)buf + off, len, mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;
	int r = srq ? ibv_post_srq_recv(srq, &w, &bad) : ibv_post_recv(qp, &w, &bad);

	if (r)
		fail("post recv: %s", strerror(r));
}

static int post_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t rqpn, uint64_t id,
		     uint32_t off, uint32_t len, bool imm)
{
	struct ibv_sge s = { (uintptr_t)buf + off, len, mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	w.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	w.imm_data = htonl(0xfeed0000u | (uint32_t)id);
	if (ah) {
		w.wr.ud.ah = ah;
		w.wr.ud.remote_qpn = rqpn;
		w.wr.ud.remote_qkey = QKEY;
	}
	return ibv_post_send(qp, &w, &bad);
}

/* Wait for one async event of type t (others are reported and skipped). */
static struct ibv_async_event wait_event(enum ibv_event_type t, unsigned ms)
{
	struct ibv_async_event ev;
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	uint64_t end = now_ms() + ms;

	for (;;) {
		int left = (int)(end - now_ms());

		if (left <= 0 || poll(&p, 1, left) != 1)
			fail("no %s within %u ms", ibv_event_type_str(t), ms);
		if (ibv_get_async_event(ctx, &ev))
			fail("ibv_get_async_event: %s", strerror(errno));
		if (ev.event_type == t)
			return ev;
		printf("  (other async event %s)\n", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
}

static bool is_v4(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pfx, 12);
}

static void test_ah(void)
{
	struct ibv_qp *a = make_qp(IBV_QPT_UD, NULL), *b = make_qp(IBV_QPT_UD, NULL);
	struct ibv_ah *ah, *reply;
	struct ibv_ah_attr attr;
	struct ibv_port_attr pa;
	struct ibv_wc wc[4];
	const uint8_t *grh = buf + 8192;
	uint32_t mtu;

	ud_up(a);
	ud_up(b);
	ah = ah_to(&gid);
	for (int i = 0; i < 1000; i++)
		buf[i] = (uint8_t)(i * 7);
	post_recv(b, NULL, 10, 8192, 4096 + 40);
	if (post_send(a, ah, b->qp_num, 1, 0, 1000, true))
		fail("post_send");
	if (poll_for(wc, 2, 2000) != 2)
		fail("datagram: 2 completions expected");
	if (wc[0].wr_id != 10)
		wc[2] = wc[0], wc[0] = wc[1], wc[1] = wc[2];
	if (wc[0].status || wc[1].status)
		fail("datagram status %s / %s", ibv_wc_status_str(wc[0].status),
		     ibv_wc_status_str(wc[1].status));
	if (wc[0].src_qp != a->qp_num || !(wc[0].wc_flags & IBV_WC_GRH) ||
	    !(wc[0].wc_flags & IBV_WC_WITH_IMM) || wc[0].imm_data != htonl(0xfeed0001u) ||
	    wc[0].byte_len != 1040)
		fail("receive completion: src_qp %u flags %#x len %u", wc[0].src_qp,
		     wc[0].wc_flags, wc[0].byte_len);
	if (memcmp(grh + 40, buf, 1000))
		fail("payload");
	if (is_v4(&gid)) {
		static const uint8_t zero[20];

		if (memcmp(grh, zero, 20) || grh[20] != 0x45 || grh[29] != 17 ||
		    memcmp(grh + 32, gid.raw + 12, 4) || memcmp(grh + 36, gid.raw + 12, 4))
			fail("IPv4 GRH area");
	} else if (grh[0] >> 4 != 6 || grh[6] != 17 || memcmp(grh + 8, gid.raw, 16) ||
		   memcmp(grh + 24, gid.raw, 16)) {
		fail("IPv6 GRH area");
	}
	/* xrxe reports the RoCE L3 type in sl as mlx5 does (src/verbs/ud_l3.c:
	 * 2 IPv4, 1 IPv6; UCX depends on it); rxe reports 0 */
	if (!strncmp(ibv_get_device_name(ctx->device), "xrxe_", 5) &&
	    wc[0].sl != (is_v4(&gid) ? 2 : 1))
		fail("wc.sl %u: not the L3 type of a %s datagram", wc[0].sl, is_v4(&gid) ? "IPv4" : "IPv6");
	if (ibv_init_ah_from_wc(ctx, 1, &wc[0], (struct ibv_grh *)grh, &attr))
		fail("ibv_init_ah_from_wc: %s", strerror(errno));
	if (!attr.is_global || attr.grh.sgid_index != gidx || memcmp(&attr.grh.dgid, &gid, 16))
		fail("ibv_init_ah_from_wc: sgid_index %u", attr.grh.sgid_index);
	reply = ibv_create_ah_from_wc(pd, &wc[0], (struct ibv_grh *)grh, 1);
	if (!reply)
		fail("ibv_create_ah_from_wc: %s", strerror(errno));
	post_recv(a, NULL, 20, 16384, 4096);
	if (post_send(b, reply, wc[0].src_qp, 2, 0, 100, false))
		fail("post_send reply");
	if (poll_for(wc, 2, 2000) != 2)
		fail("reply: 2 completions expected");
	if (wc[0].wr_id != 20)
		wc[2] = wc[0], wc[0] = wc[1], wc[1] = wc[2];
	if (wc[0].status || wc[0].src_qp != b->qp_num || wc[0].byte_len != 140)
		fail("reply completion");
	/* above the port MTU: an error completion, nothing sent */
	if (ibv_query_port(ctx, 1, &pa))
		fail("ibv_query_port");
	mtu = 128u << pa.active_mtu;
	if (post_send(a, ah, b->qp_num, 3, 0, mtu + 1, false))
		fail("post_send oversize");
	if (poll_for(wc, 1, 2000) != 1 || wc[0].status != IBV_WC_LOC_LEN_ERR)
		fail("oversize: expected IBV_WC_LOC_LEN_ERR");
	printf("  ah: %s GID %d: GRH, src_qp, init_ah_from_wc, create_ah_from_wc; %u-byte send: %s\n",
	       is_v4(&gid) ? "IPv4" : "IPv6", gidx, mtu + 1, ibv_wc_status_str(wc[0].status));
	ibv_destroy_ah(reply);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

static void test_mcast(void)
{
	struct ibv_qp *s = make_qp(IBV_QPT_UD, NULL);
	struct ibv_qp *r1 = make_qp(IBV_QPT_UD, NULL), *r2 = make_qp(IBV_QPT_UD, NULL);
	union ibv_gid grp;
	struct ibv_ah *ah;
	struct ibv_wc wc[4];
	int n, got1 = 0, got2 = 0;

	memset(&grp, 0, sizeof(grp));
	if (is_v4(&gid)) {
		grp.raw[10] = grp.raw[11] = 0xff;
		inet_pton(AF_INET, "239.71.91.1", grp.raw + 12);
	} else {
		inet_pton(AF_INET6, "ff0e::4791:1", grp.raw);
	}
	ud_up(s);
	ud_up(r1);
	ud_up(r2);
	if (ibv_attach_mcast(r1, &grp, 0) || ibv_attach_mcast(r2, &grp, 0))
		fail("ibv_attach_mcast: %s", strerror(errno));
	if (ibv_attach_mcast(r1, &gid, 0) == 0)
		fail("ibv_attach_mcast accepted a unicast GID");
	ah = ah_to(&grp);
	post_recv(r1, NULL, 1, 8192, 2048);
	post_recv(r2, NULL, 2, 12288, 2048);
	if (post_send(s, ah, 0xffffff, 9, 0, 200, true))
		fail("post_send to the group");
	n = poll_for(wc, 3, 2000);
	for (int i = 0; i < n; i++) {
		if (wc[i].status)
			fail("multicast completion %s", ibv_wc_status_str(wc[i].status));
		if (wc[i].opcode != IBV_WC_RECV)
			continue;
		if (wc[i].src_qp != s->qp_num || wc[i].byte_len != 240)
			fail("multicast receive: src_qp %u len %u", wc[i].src_qp, wc[i].byte_len);
		got1 += wc[i].qp_num == r1->qp_num;
		got2 += wc[i].qp_num == r2->qp_num;
	}
	if (n != 3 || got1 != 1 || got2 != 1)
		fail("multicast: %d completions, r1 %d r2 %d", n, got1, got2);
	if (memcmp(buf + 8192 + 40, buf, 200) || memcmp(buf + 12288 + 40, buf, 200))
		fail("multicast payload");
	if (ibv_detach_mcast(r1, &grp, 0))
		fail("ibv_detach_mcast: %s", strerror(errno));
	post_recv(r1, NULL, 3, 8192, 2048);
	post_recv(r2, NULL, 4, 12288, 2048);
	if (post_send(s, ah, 0xffffff, 10, 0, 50, false))
		fail("post_send to the group");
	n = poll_for(wc, 3, 500);
	if (n != 2)
		fail("after detach: %d completions, expected send + r2", n);
	for (int i = 0; i < n; i++)
		if (wc[i].opcode == IBV_WC_RECV && wc[i].qp_num != r2->qp_num)
			fail("a detached QP received");
	printf("  mcast: %s group, 2 members then 1\n", is_v4(&gid) ? "IPv4" : "IPv6");
	ibv_detach_mcast(r2, &grp, 0);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(s);
	ibv_destroy_qp(r1);
	ibv_destroy_qp(r2);
}

static void group_of(union ibv_gid *grp)
{
	memset(grp, 0, sizeof(*grp));
	if (is_v4(&gid)) {
		grp->raw[10] = grp->raw[11] = 0xff;
		inet_pton(AF_INET, "239.71.91.1", grp->raw + 12);
	} else {
		inet_pton(AF_INET6, "ff0e::4791:1", grp->raw);
	}
}

static void test_mcast_recv(void)
{
	struct ibv_qp *r = make_qp(IBV_QPT_UD, NULL);
	union ibv_gid grp;
	struct ibv_wc wc;

	group_of(&grp);
	ud_up(r);
	if (ibv_attach_mcast(r, &grp, 0))
		fail("ibv_attach_mcast: %s", strerror(errno));
	for (int i = 0; i < 4; i++)
		post_recv(r, NULL, (uint64_t)i, 8192 + 2048 * (uint32_t)i, 2048);
	printf("ud_surface: attached\n");
	fflush(stdout);
	if (poll_for(&wc, 1, 10000) != 1)
		fail("no datagram from the group within 10 s");
	if (wc.status || wc.byte_len != 40 + 300 || !(wc.wc_flags & IBV_WC_GRH))
		fail("group datagram: %s, %u bytes", ibv_wc_status_str(wc.status), wc.byte_len);
	for (int i = 0; i < 300; i++)
		if (buf[8192 + 2048 * wc.wr_id + 40 + (unsigned)i] != (uint8_t)(i * 3 + 1))
			fail("group datagram payload byte %d", i);
	printf("  mcast-recv: datagram from QP %u via the group\n", wc.src_qp);
	if (ibv_detach_mcast(r, &grp, 0))
		fail("ibv_detach_mcast: %s", strerror(errno));
	ibv_destroy_qp(r);
}

static void test_mcast_send(void)
{
	struct ibv_qp *s = make_qp(IBV_QPT_UD, NULL);
	union ibv_gid grp;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	group_of(&grp);
	ud_up(s);
	ah = ah_to(&grp);
	for (int i = 0; i < 300; i++)
		buf[i] = (uint8_t)(i * 3 + 1);
	for (int i = 0; i < 20; i++) {
		if (post_send(s, ah, 0xffffff, (uint64_t)i, 0, 300, false))
			fail("post_send to the group");
		if (poll_for(&wc, 1, 2000) != 1 || wc.status)
			fail("send completion");
		usleep(50000);
	}
	ibv_destroy_ah(ah);
	ibv_destroy_qp(s);
}

static void test_srq(void)
{
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sia);
	struct ibv_qp *x[2], *y[2];
	struct ibv_srq_attr sa = { .srq_limit = 6 };
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_async_event ev;
	struct ibv_wc wc[8];
	int n, recvs = 0;

	if (!srq)
		fail("ibv_create_srq: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		x[i] = make_qp(IBV_QPT_RC, NULL);
		y[i] = make_qp(IBV_QPT_RC, srq);
	}
	for (int i = 0; i < 2; i++) {
		rc_connect(x[i], y[i]->qp_num);
		rc_connect(y[i], x[i]->qp_num);
	}
	for (int i = 0; i < 8; i++)
		post_recv(NULL, srq, 100 + (uint64_t)i, 8192 + 2048 * (uint32_t)i, 2048);
	if (ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT))
		fail("ibv_modify_srq(IBV_SRQ_LIMIT): %s", strerror(errno));
	/* 3 messages: 8 -> 5 WQEs, below the limit of 6 */
	if (post_send(x[0], NULL, 0, 1, 0, 1500, false) ||
	    post_send(x[1], NULL, 0, 2, 0, 1500, false) || post_send(x[0], NULL, 0, 3, 0, 10, true))
		fail("post_send RC");
	n = poll_for(wc, 6, 2000);
	for (int i = 0; i < n; i++) {
		if (wc[i].status)
			fail("SRQ completion %s", ibv_wc_status_str(wc[i].status));
		if (wc[i].opcode & IBV_WC_RECV) {
			recvs++;
			if (wc[i].qp_num != y[0]->qp_num && wc[i].qp_num != y[1]->qp_num)
				fail("SRQ receive on QP %u", wc[i].qp_num);
		}
	}
	if (n != 6 || recvs != 3)
		fail("SRQ: %d completions, %d receives", n, recvs);
	ev = wait_event(IBV_EVENT_SRQ_LIMIT_REACHED, 2000);
	if (ev.element.srq != srq)
		fail("SRQ limit event names another SRQ");
	ibv_ack_async_event(&ev);
	if (ibv_query_srq(srq, &sa) || sa.srq_limit != 0 || sa.max_wr < 16)
		fail("ibv_query_srq after the event: limit %u max_wr %u", sa.srq_limit, sa.max_wr);
	if (ibv_modify_qp(y[1], &err, IBV_QP_STATE))
		fail("to ERR");
	ev = wait_event(IBV_EVENT_QP_LAST_WQE_REACHED, 2000);
	if (ev.element.qp != y[1])
		fail("Last WQE Reached names another QP");
	ibv_ack_async_event(&ev);
	if (ibv_destroy_srq(srq) == 0)
		fail("ibv_destroy_srq succeeded with QPs attached");
	printf("  srq: 3 messages from 2 QPs; SRQ_LIMIT_REACHED; QP_LAST_WQE_REACHED\n");
	for (int i = 0; i < 2; i++) {
		ibv_destroy_qp(x[i]);
		ibv_destroy_qp(y[i]);
	}
	if (ibv_destroy_srq(srq))
		fail("ibv_destroy_srq: %s", strerror(errno));
}

static void test_cqerr(void)
{
	struct ibv_cq *small = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = small, .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *x = make_qp(IBV_QPT_RC, NULL), *y;
	struct ibv_async_event ev;
	bool cq_err = false, qp_fatal = false;

	if (!small)
		fail("ibv_create_cq(1): %s", strerror(errno));
	y = ibv_create_qp(pd, &ia);
	if (!y)
		fail("ibv_create_qp: %s", strerror(errno));
	rc_connect(x, y->qp_num);
	rc_connect(y, x->qp_num);
	for (int i = 0; i < 8; i++)
		post_recv(y, NULL, (uint64_t)i, 8192 + 256 * (uint32_t)i, 256);
	/* more receive completions than the CQ holds (its capacity is >= 1) */
	for (int i = 0; i < 8; i++)
		if (post_send(x, NULL, 0, (uint64_t)i, 0, 16, false))
			fail("post_send");
	while (!cq_err || !qp_fatal) {
		ev = wait_event(cq_err ? IBV_EVENT_QP_FATAL : IBV_EVENT_CQ_ERR, 3000);
		if (ev.event_type == IBV_EVENT_CQ_ERR) {
			if (ev.element.cq != small)
				fail("CQ error names another CQ");
			cq_err = true;
		} else {
			if (ev.element.qp != y)
				fail("QP fatal names another QP");
			qp_fatal = true;
		}
		ibv_ack_async_event(&ev);
	}
	printf("  cqerr: IBV_EVENT_CQ_ERR, then IBV_EVENT_QP_FATAL\n");
	ibv_destroy_qp(x);
	ibv_destroy_qp(y);
	ibv_destroy_cq(small);
}

static void test_fatal(void)
{
	struct ibv_qp *q = make_qp(IBV_QPT_UD, NULL);
	struct ibv_async_event ev;
	struct ibv_wc wc;
	uint64_t t0;
	int r;

	ud_up(q);
	printf("ud_surface: waiting for the daemon to go\n");
	fflush(stdout);
	ev = wait_event(IBV_EVENT_DEVICE_FATAL, 20000);
	ibv_ack_async_event(&ev);
	t0 = now_ms();
	r = post_send(q, NULL, 0, 1, 0, 10, false);
	if (!r)
		fail("ibv_post_send succeeded after device fatal");
	printf("  fatal: post_send -> %s\n", strerror(r));
	{
		struct ibv_sge s = { (uintptr_t)buf, 10, mr->lkey };
		struct ibv_recv_wr w = { .sg_list = &s, .num_sge = 1 }, *bad;

		if (!ibv_post_recv(q, &w, &bad))
			fail("ibv_post_recv succeeded after device fatal");
	}
	if (ibv_poll_cq(cq, 1, &wc) >= 0)
		fail("ibv_poll_cq did not report the dead device");
	if (ibv_create_cq(ctx, 4, NULL, NULL, 0))
		fail("ibv_create_cq succeeded after device fatal");
	if (now_ms() - t0 > 1000)
		fail("error paths took %u ms", (unsigned)(now_ms() - t0));
	ibv_destroy_qp(q);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_device_attr da;
	const char *dev = NULL, *test;
	int i, n, opt;

	while ((opt = getopt(argc, argv, "d:")) != -1) {
		if (opt == 'd')
			dev = optarg;
		else
			return 2;
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: ud_surface -d DEV ah|mcast|mcast-recv|mcast-send|srq|cqerr|fatal "
				"[GIDX]\n");
		return 2;
	}
	test = argv[optind];
	if (optind + 1 < argc)
		gidx = atoi(argv[optind + 1]);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!dev || !strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (!list || i == n)
		fail("device %s not found", dev ? dev : "(any)");
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		fail("ibv_open_device: %s", strerror(errno));
	if (ibv_query_device(ctx, &da))
		fail("ibv_query_device");
	if (ibv_query_gid(ctx, 1, gidx, &gid))
		fail("ibv_query_gid %d", gidx);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, BUF);
	if (!pd || !cq || !buf)
		fail("setup: %s", strerror(errno));
	memset(buf, 0, BUF);
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		fail("ibv_reg_mr: %s", strerror(errno));

	if (!strcmp(test, "ah")) {
		test_ah();
	} else if (!strcmp(test, "mcast")) {
		if (da.max_mcast_grp < 1 || da.max_mcast_qp_attach < 2)
			fail("max_mcast_grp %d max_mcast_qp_attach %d", da.max_mcast_grp,
			     da.max_mcast_qp_attach);
		test_mcast();
	} else if (!strcmp(test, "cqerr")) {
		test_cqerr();
	} else if (!strcmp(test, "mcast-recv")) {
		test_mcast_recv();
	} else if (!strcmp(test, "mcast-send")) {
		test_mcast_send();
	} else if (!strcmp(test, "srq")) {
		if (da.max_srq < 1 || da.max_srq_wr < 16 || da.max_srq_sge < 1)
			fail("max_srq %d max_srq_wr %d max_srq_sge %d", da.max_srq, da.max_srq_wr,
			     da.max_srq_sge);
		test_srq();
	} else if (!strcmp(test, "fatal")) {
		test_fatal();
		printf("ud_surface: OK\n");
		return 0; /* nothing to tear down on the daemon's side any more */
	} else {
		fail("unknown test %s", test);
	}
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(buf);
	printf("ud_surface: OK\n");
	return 0;
}
