// SPDX-License-Identifier: MIT
/*
 * xrc_domains: XRC as an application sees it (docs/xrc.md), on one device
 * through its loopback. ibv_open_xrcd's file semantics (the kernel's: no
 * domain without O_CREAT is EAGAIN, O_EXCL on an existing one EINVAL, the
 * same file is the same domain, fd -1 a private one); ibv_open_qp finds a
 * target QP only through its domain; and a second process that opens the
 * same file and the target QP by number receives, into its own XRC SRQ,
 * what this process's initiator QP sends (XRC's point: one connection
 * serves every SRQ of the domain, whichever process owns it).
 *
 *   xrc_domains DEVICE [GID_INDEX]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopback.h"

static struct ibv_xrcd *xrcd_open(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_qp *open_tgt(struct ibv_context *ctx, struct ibv_xrcd *x, uint32_t qpn)
{
	struct ibv_qp_open_attr a = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = qpn,
		.xrcd = x,
		.qp_type = IBV_QPT_XRC_RECV,
	};

	return ibv_open_qp(ctx, &a);
}

/* The second process: opens the domain's file and the target QP, puts one
 * receive on an XRC SRQ of its own, tells the parent the SRQ number and
 * waits for the message. Exit status 0: received as sent. */
static int child(const char *dev, const char *path, int rd, int wr)
{
	struct ibv_context *ctx = loopback_open_device(dev);
	char buf[64] = { 0 };
	struct ibv_srq_init_attr_ex sa;
	struct ibv_xrcd *x;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	struct ibv_qp *tq;
	struct ibv_sge sge;
	struct ibv_recv_wr rw = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;
	uint32_t qpn, srqn = 0;
	int fd = open(path, O_RDONLY);

	if (!ctx || fd < 0 || read(rd, &qpn, sizeof(qpn)) != (ssize_t)sizeof(qpn))
		return 10;
	x = xrcd_open(ctx, fd, O_CREAT);
	tq = x ? open_tgt(ctx, x, qpn) : NULL;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!tq || !cq || !mr)
		return 11;
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		       IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = pd;
	sa.xrcd = x;
	sa.cq = cq;
	srq = ibv_create_srq_ex(ctx, &sa);
	sge = (struct ibv_sge){ (uintptr_t)buf, sizeof(buf), mr->lkey };
	if (!srq || ibv_get_srq_num(srq, &srqn) || ibv_post_srq_recv(srq, &rw, &bad))
		return 12;
	if (write(wr, &srqn, sizeof(srqn)) != (ssize_t)sizeof(srqn))
		return 13;
	if (poll1(cq, &wc) != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != 77 ||
	    wc.qp_num != qpn || wc.byte_len != 14 || memcmp(buf, "from the other", 14))
		return 14;
	/* tell the parent before going (the target QP lives on in its handle) */
	if (write(wr, &srqn, sizeof(srqn)) != (ssize_t)sizeof(srqn))
		return 15;
	ibv_destroy_srq(srq);
	ibv_destroy_qp(tq);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_xrcd(x);
	ibv_close_device(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	int gidx = argc > 2 ? atoi(argv[2]) : 1;
	char path[] = "/tmp/xrxe-xrcd-XXXXXX", path2[] = "/tmp/xrxe-xrcd-XXXXXX";
	struct ibv_context *ctx;
	struct ibv_device_attr da;
	struct ibv_xrcd *x1, *x2, *x3, *x;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp *tgt, *ini, *q;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	union ibv_gid gid;
	char *msg;
	int fd1, fd1b, fd2, p2c[2], c2p[2], status;
	uint32_t srqn;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DEVICE [GID_INDEX]\n", argv[0]);
		return 2;
	}
	ctx = loopback_open_device(argv[1]);
	fd1 = mkstemp(path);
	fd2 = mkstemp(path2);
	if (!ctx || fd1 < 0 || fd2 < 0 || ibv_query_device(ctx, &da) ||
	    ibv_query_gid(ctx, 1, gidx, &gid)) {
		printf("not ok - device %s, GID %d and two files\n", argv[1], gidx);
		return 1;
	}
	check(da.device_cap_flags & IBV_DEVICE_XRC, "device attributes: IBV_DEVICE_XRC");

	/* the kernel's ib_uverbs_open_xrcd rules */
	errno = 0;
	x = xrcd_open(ctx, fd1, 0);
	check(!x && errno == EAGAIN, "open_xrcd: a file without a domain and no O_CREAT is EAGAIN");
	x1 = xrcd_open(ctx, fd1, O_CREAT);
	check(x1 != NULL, "open_xrcd: O_CREAT creates the file's domain");
	errno = 0;
	x = xrcd_open(ctx, fd1, O_CREAT | O_EXCL);
	check(!x && errno == EINVAL, "open_xrcd: O_EXCL on a file with a domain is EINVAL");
	fd1b = open(path, O_RDONLY);
	x2 = xrcd_open(ctx, fd1b, 0);
	check(x2 != NULL, "open_xrcd: the same file through another descriptor, no O_CREAT");
	x3 = xrcd_open(ctx, -1, 0);
	check(x3 != NULL, "open_xrcd: fd -1 is a private domain");
	{
		struct ibv_xrcd_init_attr a = { .comp_mask = IBV_XRCD_INIT_ATTR_FD, .fd = fd2 };

		errno = 0;
		x = ibv_open_xrcd(ctx, &a);
		check(!x && errno == EINVAL, "open_xrcd: without IBV_XRCD_INIT_ATTR_OFLAGS is EINVAL");
	}
	if (!x1 || !x2 || !x3)
		return 1;

	/* a target QP of x1, found through x2 (same file) but not x3 */
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	qa.xrcd = x1;
	tgt = ibv_create_qp_ex(ctx, &qa);
	check(tgt != NULL, "create_qp_ex: an XRC_RECV QP in the domain");
	if (!tgt)
		return 1;
	q = open_tgt(ctx, x2, tgt->qp_num);
	check(q && q->qp_num == tgt->qp_num, "open_qp: the target through the same file's domain");
	if (q)
		check(ibv_destroy_qp(q) == 0, "destroy_qp: the opened handle (the target stays)");
	errno = 0;
	q = open_tgt(ctx, x3, tgt->qp_num);
	check(!q && errno == ENOENT, "open_qp: not through another domain (ENOENT)");
	check(ibv_close_xrcd(x2) == 0, "close_xrcd: one of two opens of the domain");
	errno = 0;
	check(ibv_close_xrcd(x3) == 0, "close_xrcd: the private domain");

	/* an initiator towards the target; the target to RTR/RTS like RC */
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	/* a page of its own: registered pages are not inherited by the child
	 * (MADV_DONTFORK, as with rdma-core's fork support) */
	msg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (msg == MAP_FAILED)
		return 1;
	memcpy(msg, "from the other", 15);
	mr = pd ? ibv_reg_mr(pd, msg, 4096, 0) : NULL;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = pd;
	qa.send_cq = cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	ini = cq && mr ? ibv_create_qp_ex(ctx, &qa) : NULL;
	check(ini != NULL, "create_qp_ex: an XRC_SEND QP (send queue only)");
	if (!ini || connect_qp(ini, tgt->qp_num, &gid, gidx, 0) ||
	    connect_qp(tgt, ini->qp_num, &gid, gidx, IBV_ACCESS_REMOTE_WRITE)) {
		check(0, "initiator and target to RTS");
		return 1;
	}
	check(1, "initiator and target to RTS");
	{
		struct ibv_sge s = { 0 };
		struct ibv_send_wr w = { .opcode = IBV_WR_SEND, .sg_list = &s, .num_sge = 1 }, *bad;

		check(ibv_post_send(tgt, &w, &bad) == EINVAL, "post_send on a target QP is EINVAL");
	}

	/* a second process: the same file, the target by number, its own SRQ */
	if (pipe(p2c) || pipe(c2p))
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(child(argv[1], path, p2c[0], c2p[1]));
	/* our ends only: a child that fails early ends our reads */
	close(p2c[0]);
	close(c2p[1]);
	if (write(p2c[1], &tgt->qp_num, sizeof(tgt->qp_num)) != (ssize_t)sizeof(tgt->qp_num) ||
	    read(c2p[0], &srqn, sizeof(srqn)) != (ssize_t)sizeof(srqn)) {
		waitpid(pid, &status, 0);
		check(0, "second process: opened the domain and the target, made an XRC SRQ "
			 "(status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return 1;
	}
	check(srqn != 0, "second process: opened the domain and the target, made an XRC SRQ");
	{
		struct ibv_sge s = { (uintptr_t)msg, 14, mr->lkey };
		struct ibv_send_wr w = { .wr_id = 5, .opcode = IBV_WR_SEND, .sg_list = &s,
					 .num_sge = 1, .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;

		w.qp_type.xrc.remote_srqn = srqn;
		check(ibv_post_send(ini, &w, &bad) == 0 && poll1(cq, &wc) == 1 &&
			      wc.status == IBV_WC_SUCCESS && wc.wr_id == 5,
		      "XRC SEND to the other process's SRQ completes");
	}
	if (read(c2p[0], &srqn, sizeof(srqn)) != (ssize_t)sizeof(srqn))
		srqn = 0;
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the other process received it in its SRQ, on the target QP (status %d)",
	      WIFEXITED(status) ? WEXITSTATUS(status) : -1);

	check(ibv_destroy_qp(ini) == 0 && ibv_destroy_qp(tgt) == 0, "destroy the QPs");
	check(ibv_close_xrcd(x1) == 0, "close_xrcd: the last open");
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	unlink(path);
	unlink(path2);
	return failed;
}
