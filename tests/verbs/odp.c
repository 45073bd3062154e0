// SPDX-License-Identifier: MIT
/*
 * odp: on-demand paging as an application sees it, against plain
 * libibverbs. What rdma-core's test_odp does not check: traffic into and out
 * of memory that was never touched before (its pages do not exist when the
 * region is registered), memory unmapped after registration (an error
 * completion, and the device goes on serving), the implicit region used by
 * address, ibv_advise_mr's checks. One device, RC QPs looped back to its own
 * GID. Prints TAP lines; exit status 0 unless a check failed.
 *
 *   odp DEVICE [GID_INDEX]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "loopback.h"

#define LEN (64 * 4096) /* several pages, several packets at MTU 1024 */
#define HUGE (2u << 20)

static const unsigned ACC = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gidx;

/* Two RC QPs of the device connected to each other: a sends, b answers;
 * their own CQs so that each side's completions are told apart. */
struct pair {
	struct ibv_cq *ca, *cb;
	struct ibv_qp *a, *b;
};

static int pair_open(struct pair *p)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2 },
		.qp_type = IBV_QPT_RC,
	};

	memset(p, 0, sizeof(*p));
	p->ca = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	p->cb = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!p->ca || !p->cb)
		return -1;
	qa.send_cq = qa.recv_cq = p->ca;
	p->a = ibv_create_qp(pd, &qa);
	qa.send_cq = qa.recv_cq = p->cb;
	p->b = ibv_create_qp(pd, &qa);
	if (!p->a || !p->b || connect_qp(p->a, p->b->qp_num, &gid, gidx, ACC) ||
	    connect_qp(p->b, p->a->qp_num, &gid, gidx, ACC))
		return -1;
	return 0;
}

static void pair_close(struct pair *p)
{
	if (p->a)
		ibv_destroy_qp(p->a);
	if (p->b)
		ibv_destroy_qp(p->b);
	if (p->ca)
		ibv_destroy_cq(p->ca);
	if (p->cb)
		ibv_destroy_cq(p->cb);
}

/* Post one WR on a and wait for its completion: its status, or -1. */
static int run(struct pair *p, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(p->a, wr, &bad) || poll1(p->ca, &wc) != 1)
		return -1;
	return wc.status;
}

static struct ibv_send_wr rdma_wr(enum ibv_wr_opcode op, struct ibv_sge *sge, uint64_t raddr,
				  uint32_t rkey)
{
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = op;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return wr;
}

/* Anonymous memory nobody has touched: no page of it exists yet. */
static uint8_t *fresh(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static void caps(void)
{
	struct ibv_device_attr_ex attr;
	const uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			    IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;

	memset(&attr, 0, sizeof(attr));
	if (ibv_query_device_ex(ctx, NULL, &attr))
		memset(&attr, 0, sizeof(attr));
	check(attr.odp_caps.general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT),
	      "ibv_query_device_ex: ODP and implicit ODP (general_caps %#llx)",
	      (unsigned long long)attr.odp_caps.general_caps);
	check((attr.odp_caps.per_transport_caps.rc_odp_caps & rc) == rc &&
		      (attr.odp_caps.per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_SEND) &&
		      (attr.odp_caps.per_transport_caps.uc_odp_caps & IBV_ODP_SUPPORT_WRITE),
	      "ODP caps: RC send/recv/write/read/atomic/SRQ, UC write, UD send (rc %#x uc %#x ud %#x)",
	      attr.odp_caps.per_transport_caps.rc_odp_caps,
	      attr.odp_caps.per_transport_caps.uc_odp_caps,
	      attr.odp_caps.per_transport_caps.ud_odp_caps);
}

/* WRITE, READ, SEND and atomics into and out of never-touched ODP memory. */
static void untouched(void)
{
	uint8_t *src = fresh(LEN), *dst = fresh(LEN), *rcv = fresh(LEN), *back = fresh(LEN);
	struct ibv_mr *msrc = NULL, *mdst = NULL, *mrcv = NULL, *mback = NULL;
	struct ibv_send_wr wr;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge sge, rsge;
	struct ibv_wc wc;
	struct pair p;
	uint64_t *word;
	int st, zero = 1;

	if (!src || !dst || !rcv || !back || pair_open(&p)) {
		check(0, "untouched: memory mapped and QPs connected");
		return;
	}
	msrc = ibv_reg_mr(pd, src, LEN, ACC | IBV_ACCESS_ON_DEMAND);
	mdst = ibv_reg_mr(pd, dst, LEN, ACC | IBV_ACCESS_ON_DEMAND);
	mrcv = ibv_reg_mr(pd, rcv, LEN, ACC | IBV_ACCESS_ON_DEMAND);
	mback = ibv_reg_mr(pd, back, LEN, ACC | IBV_ACCESS_ON_DEMAND);
	check(msrc && mdst && mrcv && mback,
	      "ibv_reg_mr with IBV_ACCESS_ON_DEMAND over 4 untouched mappings of %d KiB",
	      LEN / 1024);
	if (!msrc || !mdst || !mrcv || !mback)
		goto out;

	/* READ of pages nobody ever wrote: they read as zeros */
	sge = (struct ibv_sge){ .addr = (uintptr_t)back, .length = LEN, .lkey = mback->lkey };
	wr = rdma_wr(IBV_WR_RDMA_READ, &sge, (uintptr_t)dst, mdst->rkey);
	st = run(&p, &wr);
	for (int i = 0; i < LEN; i += 4096)
		zero &= back[i] == 0;
	check(st == IBV_WC_SUCCESS && zero,
	      "RDMA READ of %d untouched ODP pages into untouched ODP pages (status %d)",
	      LEN / 4096, st);

	for (int i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 13 + 5);
	sge = (struct ibv_sge){ .addr = (uintptr_t)src, .length = LEN, .lkey = msrc->lkey };
	wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, (uintptr_t)dst, mdst->rkey);
	st = run(&p, &wr);
	check(st == IBV_WC_SUCCESS && memcmp(dst, src, LEN) == 0,
	      "RDMA WRITE of %d KiB into untouched ODP memory, byte for byte (status %d)",
	      LEN / 1024, st);

	memset(back, 0, LEN);
	sge = (struct ibv_sge){ .addr = (uintptr_t)back, .length = LEN, .lkey = mback->lkey };
	wr = rdma_wr(IBV_WR_RDMA_READ, &sge, (uintptr_t)dst, mdst->rkey);
	st = run(&p, &wr);
	check(st == IBV_WC_SUCCESS && memcmp(back, src, LEN) == 0,
	      "RDMA READ of it back from ODP memory (status %d)", st);

	/* SEND from ODP memory into an untouched ODP receive buffer */
	rsge = (struct ibv_sge){ .addr = (uintptr_t)rcv + 100, .length = LEN - 100,
				 .lkey = mrcv->lkey };
	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	sge = (struct ibv_sge){ .addr = (uintptr_t)src + 7, .length = 3 * 4096 + 11,
				.lkey = msrc->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	st = ibv_post_recv(p.b, &rwr, &rbad) ? -1 : run(&p, &wr);
	check(st == IBV_WC_SUCCESS && poll1(p.cb, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
		      wc.byte_len == 3 * 4096 + 11 && memcmp(rcv + 100, src + 7, 3 * 4096 + 11) == 0,
	      "SEND from ODP memory into an untouched ODP receive buffer (status %d)", st);

	/* atomics on an untouched word (the last page of rcv) */
	word = (uint64_t *)(void *)(rcv + LEN - 8);
	sge = (struct ibv_sge){ .addr = (uintptr_t)back, .length = 8, .lkey = mback->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = (uintptr_t)word;
	wr.wr.atomic.rkey = mrcv->rkey;
	wr.wr.atomic.compare_add = 5;
	memset(back, 0xff, 8);
	st = run(&p, &wr);
	check(st == IBV_WC_SUCCESS && *(uint64_t *)(void *)back == 0 && *word == 5,
	      "FETCH_AND_ADD on an untouched ODP word: original 0, now 5 (status %d)", st);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 5;
	wr.wr.atomic.swap = 0x1122334455667788ull;
	st = run(&p, &wr);
	check(st == IBV_WC_SUCCESS && *(uint64_t *)(void *)back == 5 &&
		      *word == 0x1122334455667788ull,
	      "CMP_AND_SWP on it: original 5, swapped (status %d)", st);
	wr.wr.atomic.compare_add = 4; /* does not match: nothing written */
	wr.wr.atomic.swap = 1;
	st = run(&p, &wr);
	check(st == IBV_WC_SUCCESS && *word == 0x1122334455667788ull,
	      "CMP_AND_SWP with a compare that fails leaves it (status %d)", st);
out:
	pair_close(&p);
	if (msrc)
		ibv_dereg_mr(msrc);
	if (mdst)
		ibv_dereg_mr(mdst);
	if (mrcv)
		ibv_dereg_mr(mrcv);
	if (mback)
		check(ibv_dereg_mr(mback) == 0, "ODP regions deregistered");
	munmap(src, LEN);
	munmap(dst, LEN);
	munmap(rcv, LEN);
	munmap(back, LEN);
}

/* Memory unmapped after registration: each side's error, and the device
 * serves the next QPs as before. */
static void unmapped(void)
{
	uint8_t *mem = fresh(LEN), *ok = fresh(4096);
	struct ibv_mr *mr = NULL, *okmr = NULL;
	uint8_t *hole;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct pair p;
	int st;

	if (!mem || !ok)
		return;
	mr = ibv_reg_mr(pd, mem, LEN, ACC | IBV_ACCESS_ON_DEMAND);
	okmr = ibv_reg_mr(pd, ok, 4096, ACC);
	if (!mr || !okmr) {
		check(0, "unmapped: regions registered");
		goto out;
	}
	hole = mem + LEN / 2;
	check(munmap(hole, 4 * 4096) == 0, "4 pages in the middle of an ODP region unmapped");

	if (pair_open(&p) == 0) {
		sge = (struct ibv_sge){ .addr = (uintptr_t)ok, .length = 4096, .lkey = okmr->lkey };
		wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, (uintptr_t)hole + 4096, mr->rkey);
		st = run(&p, &wr);
		check(st == IBV_WC_REM_ACCESS_ERR,
		      "RDMA WRITE into the unmapped pages: remote access error (status %d)", st);
	}
	pair_close(&p);
	if (pair_open(&p) == 0) {
		sge = (struct ibv_sge){ .addr = (uintptr_t)ok, .length = 4096, .lkey = okmr->lkey };
		wr = rdma_wr(IBV_WR_RDMA_READ, &sge, (uintptr_t)hole - 100, mr->rkey);
		st = run(&p, &wr);
		check(st == IBV_WC_REM_ACCESS_ERR,
		      "RDMA READ running into them: remote access error (status %d)", st);
	}
	pair_close(&p);
	if (pair_open(&p) == 0) {
		sge = (struct ibv_sge){ .addr = (uintptr_t)hole, .length = 64, .lkey = mr->lkey };
		wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, (uintptr_t)ok, okmr->rkey);
		st = run(&p, &wr);
		check(st == IBV_WC_LOC_PROT_ERR,
		      "RDMA WRITE gathering from them: local protection error (status %d)", st);
	}
	pair_close(&p);
	if (pair_open(&p) == 0) {
		memset(&wr, 0, sizeof(wr));
		sge = (struct ibv_sge){ .addr = (uintptr_t)ok, .length = 8, .lkey = okmr->lkey };
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = (uintptr_t)hole + 8;
		wr.wr.atomic.rkey = mr->rkey;
		wr.wr.atomic.compare_add = 1;
		st = run(&p, &wr);
		check(st == IBV_WC_REM_ACCESS_ERR,
		      "FETCH_AND_ADD on them: remote access error (status %d)", st);
	}
	pair_close(&p);
	if (pair_open(&p) == 0) {
		memset(ok, 0x5a, 4096);
		sge = (struct ibv_sge){ .addr = (uintptr_t)ok, .length = 4096, .lkey = okmr->lkey };
		wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, (uintptr_t)mem + 4096, mr->rkey);
		st = run(&p, &wr);
		check(st == IBV_WC_SUCCESS && mem[4096] == 0x5a && mem[8191] == 0x5a,
		      "then a WRITE to the region's mapped part on new QPs works (status %d)", st);
	}
	pair_close(&p);
out:
	if (mr)
		check(ibv_dereg_mr(mr) == 0, "the region with a hole deregistered");
	if (okmr)
		ibv_dereg_mr(okmr);
	munmap(mem, LEN);
	munmap(ok, 4096);
}

/* The implicit region: the whole address space, used by address. */
static void implicit(void)
{
	struct ibv_mr *imr = ibv_reg_mr(pd, NULL, SIZE_MAX, ACC | IBV_ACCESS_ON_DEMAND);
	uint8_t *a = fresh(LEN), *b = malloc(8192);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *nodp;
	struct pair p;
	int st, e;

	check(imr != NULL, "implicit ODP: ibv_reg_mr(pd, NULL, SIZE_MAX, ON_DEMAND)");
	nodp = ibv_reg_mr(pd, NULL, SIZE_MAX, ACC);
	e = errno;
	check(nodp == NULL, "without IBV_ACCESS_ON_DEMAND the same registration fails (errno %d)", e);
	if (nodp)
		ibv_dereg_mr(nodp);
	if (!imr || !a || !b || pair_open(&p)) {
		check(0, "implicit: memory and QPs");
		goto out;
	}
	for (int i = 0; i < 8192; i++)
		b[i] = (uint8_t)(i ^ 0x3c);
	/* malloc'd memory (never registered by itself) into an mmap made
	 * after the registration, both through the one region */
	sge = (struct ibv_sge){ .addr = (uintptr_t)b, .length = 8192, .lkey = imr->lkey };
	wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, (uintptr_t)a + 3 * 4096 + 1, imr->rkey);
	st = run(&p, &wr);
	check(st == IBV_WC_SUCCESS && memcmp(a + 3 * 4096 + 1, b, 8192) == 0,
	      "implicit ODP: WRITE from malloc'd memory into a later mmap, by address (status %d)",
	      st);
	pair_close(&p);
	if (pair_open(&p) == 0) {
		sge = (struct ibv_sge){ .addr = (uintptr_t)b, .length = 16, .lkey = imr->lkey };
		wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, 4096, imr->rkey); /* page 1: never mapped */
		st = run(&p, &wr);
		check(st == IBV_WC_REM_ACCESS_ERR,
		      "implicit ODP: WRITE to an address nothing is mapped at: remote access error "
		      "(status %d)", st);
	}
	pair_close(&p);
out:
	if (imr)
		check(ibv_dereg_mr(imr) == 0, "implicit region deregistered");
	if (a)
		munmap(a, LEN);
	free(b);
}

static void advise(void)
{
	uint8_t *mem = fresh(LEN), *plain = malloc(4096);
	struct ibv_mr *mr = mem ? ibv_reg_mr(pd, mem, LEN, ACC | IBV_ACCESS_ON_DEMAND) : NULL;
	struct ibv_mr *pmr = plain ? ibv_reg_mr(pd, plain, 4096, ACC) : NULL;
	struct ibv_sge sge;
	int ret;

	if (!mr || !pmr) {
		check(0, "advise: regions registered");
		goto out;
	}
	sge = (struct ibv_sge){ .addr = (uintptr_t)mem, .length = LEN, .lkey = mr->lkey };
	ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			    &sge, 1);
	check(ret == 0, "ibv_advise_mr PREFETCH_WRITE with FLUSH over an ODP region (%d)", ret);
	ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1);
	check(ret == 0, "PREFETCH without FLUSH (asynchronous) (%d)", ret);
	ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH,
			    &sge, 1);
	check(ret == 0, "PREFETCH_NO_FAULT (%d)", ret);
	sge.length = LEN + 1;
	ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	check(ret == EFAULT, "a range past the region's end: EFAULT (%d)", ret);
	sge = (struct ibv_sge){ .addr = (uintptr_t)plain, .length = 64, .lkey = pmr->lkey };
	ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	check(ret == ENOENT, "a region that is not ODP: ENOENT (%d)", ret);
	sge = (struct ibv_sge){ .addr = (uintptr_t)mem, .length = 64, .lkey = mr->lkey };
	ret = ibv_advise_mr(pd, (enum ibv_advise_mr_advice)7, 0, &sge, 1);
	check(ret == EOPNOTSUPP, "an unknown advice: EOPNOTSUPP (%d)", ret);
	ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 0);
	check(ret == EINVAL, "no SGE: EINVAL (%d)", ret);
	munmap(mem, 4096);
	ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			    &sge, 1);
	check(ret == EFAULT, "a synchronous prefetch of an unmapped page: EFAULT (%d)", ret);
	ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &sge, 1);
	check(ret == 0, "... asynchronous: best effort, no error (%d)", ret);
out:
	if (mr)
		ibv_dereg_mr(mr);
	if (pmr)
		ibv_dereg_mr(pmr);
	if (mem)
		munmap(mem, LEN);
	free(plain);
}

/* Hugetlb pages (the suite's test_odp_rc_huge*): a region of one 2 MiB page. */
static void huge(void)
{
	void *m = mmap(NULL, HUGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	uint8_t *src = fresh(8192);
	struct ibv_mr *mr, *smr;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct pair p;
	int st;

	if (m == MAP_FAILED) {
		printf("ok - hugetlb ODP region # SKIP no free 2 MiB huge page (%s)\n",
		       strerror(errno));
		munmap(src, 8192);
		return;
	}
	mr = ibv_reg_mr(pd, m, HUGE, ACC | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB);
	smr = ibv_reg_mr(pd, src, 8192, ACC | IBV_ACCESS_ON_DEMAND);
	check(mr && smr, "ODP region with IBV_ACCESS_HUGETLB over a 2 MiB huge page");
	if (mr && smr && pair_open(&p) == 0) {
		sge = (struct ibv_sge){ .addr = (uintptr_t)m + HUGE - 4096, .length = 4096,
					.lkey = mr->lkey };
		check(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0,
		      "prefetch of the huge page");
		memset(src, 0xa5, 8192);
		sge = (struct ibv_sge){ .addr = (uintptr_t)src, .length = 8192, .lkey = smr->lkey };
		wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, (uintptr_t)m + HUGE - 8192, mr->rkey);
		st = run(&p, &wr);
		check(st == IBV_WC_SUCCESS && memcmp((uint8_t *)m + HUGE - 8192, src, 8192) == 0,
		      "RDMA WRITE into the huge page's end (status %d)", st);
	}
	pair_close(&p);
	if (mr)
		ibv_dereg_mr(mr);
	if (smr)
		ibv_dereg_mr(smr);
	munmap(m, HUGE);
	munmap(src, 8192);
}

/* A page under a userfaultfd nobody reads: the daemon reaches memory through
 * /proc/PID/mem, whose faults cannot wait for a userfaultfd (the kernel
 * gives them SIGBUS at once), so this is a plain fault: remote access
 * error, no stall. Needs a userfaultfd (root, or vm.unprivileged_userfaultfd). */
static void uffd_page(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	uint8_t *m = fresh(4096), *ok = fresh(4096);
	struct ibv_mr *mr = NULL, *okmr = NULL;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct pair p;
	int uffd, st;

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0) {
		printf("ok - a userfaultfd page # SKIP no userfaultfd here (%s)\n", strerror(errno));
		goto out;
	}
	reg = (struct uffdio_register){ .range = { .start = (uintptr_t)m, .len = 4096 },
					.mode = UFFDIO_REGISTER_MODE_MISSING };
	mr = ibv_reg_mr(pd, m, 4096, ACC | IBV_ACCESS_ON_DEMAND);
	okmr = ibv_reg_mr(pd, ok, 4096, ACC);
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0 || !mr || !okmr || pair_open(&p)) {
		check(0, "uffd: userfaultfd range, regions and QPs (%s)", strerror(errno));
		pair_close(&p);
		goto out;
	}
	sge = (struct ibv_sge){ .addr = (uintptr_t)ok, .length = 64, .lkey = okmr->lkey };
	wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, (uintptr_t)m, mr->rkey);
	st = run(&p, &wr);
	check(st == IBV_WC_REM_ACCESS_ERR,
	      "a WRITE into a userfaultfd page nobody serves: remote access error (status %d)", st);
	pair_close(&p);
out:
	if (uffd >= 0)
		close(uffd);
	if (mr)
		ibv_dereg_mr(mr);
	if (okmr)
		ibv_dereg_mr(okmr);
	munmap(m, 4096);
	munmap(ok, 4096);
}

int main(int argc, char **argv)
{

	if (argc < 2) {
		fprintf(stderr, "usage: odp DEVICE [GID_INDEX]\n");
		return 2;
	}
	gidx = argc > 2 ? atoi(argv[2]) : 1;
	ctx = loopback_open_device(argv[1]);
	if (!ctx) {
		printf("not ok - device %s opened\n", argv[1]);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_gid(ctx, 1, gidx, &gid)) {
		printf("not ok - PD and GID %d\n", gidx);
		return 1;
	}
	caps();
	untouched();
	unmapped();
	implicit();
	advise();
	huge();
	uffd_page();
	check(ibv_dealloc_pd(pd) == 0, "the PD deallocated at the end");
	ibv_close_device(ctx);
	return failed;
}
