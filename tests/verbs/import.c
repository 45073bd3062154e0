// SPDX-License-Identifier: MIT
/*
 * import: ibv_import_device and the imports of PDs, MRs and device memory
 * (docs/verbs-shim.md "Importing"), beyond rdma-core's one traffic test: the
 * errors (a descriptor that is no context's, another process's, handles that
 * do not exist or name another type), traffic through imported objects on QPs
 * of the imported context, and the lifetimes (unimport destroys nothing;
 * closing the importer leaves the exporter's objects; closing the exporter
 * first leaves the importer working). One device, RC QPs looped back to its
 * own GID. Prints TAP lines; exit status 0 unless a check failed.
 *
 *   import DEVICE [GID_INDEX]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "loopback.h"

#define MSG 4096
#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define HOSTILE 0xfffffff0u

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static int side_open(struct side *s, struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	s->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!s->cq)
		return -1;
	a.send_cq = a.recv_cq = s->cq;
	s->qp = ibv_create_qp(pd, &a);
	return s->qp ? 0 : -1;
}

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	s->qp = NULL;
	s->cq = NULL;
}

/* RDMA WRITE of len bytes from (src, lkey) on a to (dst, rkey) through b:
 * 1 when it completed with success. */
static int write_through(struct side *a, struct side *b, void *src, uint32_t lkey, void *dst,
			 uint32_t rkey, uint32_t len, union ibv_gid *gid, int gidx)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	if (connect_qp(a->qp, b->qp->qp_num, gid, gidx, ACCESS) ||
	    connect_qp(b->qp, a->qp->qp_num, gid, gidx, ACCESS))
		return 0;
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(a->qp, &wr, &bad))
		return 0;
	return poll1(a->cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS;
}

/* --- errors -------------------------------------------------------------------------- */

static void bad_descriptors(struct ibv_context *ctx)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), status = 0;
	struct ibv_context *c;
	pid_t pid;

	errno = 0;
	c = ibv_import_device(fd);
	check(!c && errno == EINVAL, "import of /dev/null: NULL, EINVAL (errno %d)", errno);
	close(fd);
	errno = 0;
	c = ibv_import_device(-1);
	check(!c && errno == EBADF, "import of descriptor -1: NULL, EBADF (errno %d)", errno);

	/* Another process's descriptor (here inherited across fork): the
	 * daemon holds the exporter's memory, not this process's. */
	pid = fork();
	if (pid == 0) {
		int dup_fd = dup(ctx->cmd_fd);

		errno = 0;
		c = ibv_import_device(dup_fd);
		_exit(!c && errno == EOPNOTSUPP ? 0 : 1);
	}
	check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0,
	      "import in another process (after fork): NULL, EOPNOTSUPP");
}

static void bad_handles(struct ibv_context *imp, struct ibv_pd *pd, struct ibv_mr *mr)
{
	struct ibv_pd *p;
	struct ibv_mr *m;
	struct ibv_dm *d;

	errno = 0;
	p = ibv_import_pd(imp, HOSTILE);
	check(!p && errno == ENOENT, "import_pd of a handle that does not exist: ENOENT (%d)",
	      errno);
	errno = 0;
	p = ibv_import_pd(imp, mr->handle);
	check(!p && errno == ENOENT, "import_pd of an MR's handle: ENOENT (%d)", errno);
	errno = 0;
	m = ibv_import_mr(pd, pd->handle);
	check(!m && errno == ENOENT, "import_mr of a PD's handle: ENOENT (%d)", errno);
	errno = 0;
	m = ibv_import_mr(pd, 0xffffffffu);
	check(!m && errno == ENOENT, "import_mr of handle 0xffffffff: ENOENT (%d)", errno);
	errno = 0;
	d = ibv_import_dm(imp, HOSTILE);
	check(!d && errno == ENOENT, "import_dm of a handle that does not exist: ENOENT (%d)",
	      errno);
}

/* --- async events ------------------------------------------------------------------ */

/* The daemon reports every object's events on the connection's one event
 * pipe, the exporter's (the kernel's default async file likewise): an SRQ
 * limit event of an SRQ created through the imported context arrives on the
 * exporter's async_fd, naming the importer's SRQ. */
static void srq_event(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_mr *src,
		      struct ibv_context *imp, struct ibv_pd *ipd, struct ibv_mr *dst,
		      union ibv_gid *gid, int gidx)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_sge rs = { .addr = (uintptr_t)dst->addr, .length = 64, .lkey = dst->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_sge ss = { .addr = (uintptr_t)src->addr, .length = 64, .lkey = src->lkey };
	struct ibv_send_wr swr = { .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_srq_attr lim = { .srq_limit = 2 };
	struct side snd = { 0 }, rcv = { 0 };
	struct ibv_async_event ev = { 0 };
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_srq *srq = ibv_create_srq(ipd, &sa);
	struct ibv_wc wc;
	int ok = 0;

	if (!srq || side_open(&snd, ctx, pd))
		goto out;
	rcv.cq = ibv_create_cq(imp, 16, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = rcv.cq;
	qa.srq = srq;
	rcv.qp = rcv.cq ? ibv_create_qp(ipd, &qa) : NULL;
	for (int i = 0; i < 2; i++)
		if (ibv_post_srq_recv(srq, &rwr, &rbad))
			goto out;
	if (!rcv.qp || ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT) ||
	    connect_qp(snd.qp, rcv.qp->qp_num, gid, gidx, ACCESS) ||
	    connect_qp(rcv.qp, snd.qp->qp_num, gid, gidx, ACCESS) ||
	    ibv_post_send(snd.qp, &swr, &sbad) || poll1(snd.cq, &wc) != 1 ||
	    wc.status != IBV_WC_SUCCESS)
		goto out;
	if (poll(&pfd, 1, 5000) == 1 && ibv_get_async_event(ctx, &ev) == 0) {
		ok = ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq;
		ibv_ack_async_event(&ev);
	}
out:
	check(ok, "an SRQ of the imported context: its limit event on the exporter's async_fd");
	side_close(&snd);
	side_close(&rcv);
	if (srq)
		ibv_destroy_srq(srq);
}

/* --- device memory --------------------------------------------------------------- */

static void dm_sharing(struct ibv_context *ctx, struct ibv_context *imp, struct ibv_pd *ipd)
{
	struct ibv_alloc_dm_attr attr = { .length = MSG };
	uint8_t in[64], out[64];
	struct ibv_dm *dm, *idm, *again;
	struct ibv_mr *mr;

	dm = ibv_alloc_dm(ctx, &attr);
	if (!dm) {
		check(0, "DM allocated for the import checks");
		return;
	}
	idm = ibv_import_dm(imp, dm->handle);
	check(idm != NULL, "import_dm of a DM by its handle");
	if (!idm)
		return;
	memset(in, 0x5a, sizeof(in));
	check(ibv_memcpy_to_dm(dm, 64, in, sizeof(in)) == 0 &&
		      ibv_memcpy_from_dm(out, idm, 64, sizeof(out)) == 0 &&
		      !memcmp(in, out, sizeof(in)),
	      "bytes copied into the DM are read through the import");
	mr = ibv_reg_dm_mr(ipd, idm, 0, MSG, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
	check(mr != NULL, "an MR over the imported DM");
	check(ibv_free_dm(dm) == EBUSY, "the DM cannot be freed while an MR over its import lives");
	if (mr)
		ibv_dereg_mr(mr);
	check(ibv_free_dm(dm) == 0, "the DM freed by its allocator while imported");
	memset(out, 0, sizeof(out));
	check(ibv_memcpy_from_dm(out, idm, 64, sizeof(out)) == 0 && !memcmp(in, out, sizeof(in)),
	      "the import still reads the memory after the free");
	errno = 0;
	again = ibv_import_dm(imp, idm->handle);
	check(!again && errno == ENOENT, "a freed DM's handle no longer imports: ENOENT (%d)",
	      errno);
	ibv_unimport_dm(idm);
}

/* --- main ---------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	int gidx = argc > 2 ? atoi(argv[2]) : 1;
	struct side es = { 0 }, is = { 0 };
	struct ibv_context *ctx, *imp;
	struct ibv_device_attr dattr;
	struct ibv_pd *pd, *ipd, *ipd2;
	struct ibv_mr *src, *dst, *imr, *esrc;
	union ibv_gid gid;
	char *a, *b;
	uint32_t src_handle;
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: import DEVICE [GID_INDEX]\n");
		return 2;
	}
	ctx = loopback_open_device(argv[1]);
	a = aligned_alloc(4096, MSG);
	b = aligned_alloc(4096, MSG);
	if (!ctx || !a || !b || ibv_query_gid(ctx, 1, gidx, &gid)) {
		printf("not ok - device %s opened, GID %d\n", argv[1], gidx);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	src = pd ? ibv_reg_mr(pd, a, MSG, ACCESS) : NULL;
	dst = pd ? ibv_reg_mr(pd, b, MSG, ACCESS) : NULL;
	if (!src || !dst) {
		printf("not ok - PD and MRs of the exporter\n");
		return 1;
	}
	bad_descriptors(ctx);

	fd = dup(ctx->cmd_fd);
	imp = ibv_import_device(fd);
	check(imp != NULL, "ibv_import_device of a dup of cmd_fd (errno %d)", imp ? 0 : errno);
	if (!imp)
		return 1;
	check(imp->cmd_fd == fd && ibv_query_device(imp, &dattr) == 0,
	      "the imported context: its cmd_fd is the descriptor given, it queries the device");
	ipd = ibv_import_pd(imp, pd->handle);
	check(ipd && ipd->handle == pd->handle && ipd->context == imp, "import_pd by handle");
	imr = ipd ? ibv_import_mr(ipd, src->handle) : NULL;
	check(imr && imr->lkey == src->lkey && imr->rkey == src->rkey && imr->length == MSG &&
		      imr->addr == NULL,
	      "import_mr by handle: the exporter's keys and length, no address");
	if (!ipd || !imr)
		return 1;
	bad_handles(imp, ipd, src);

	/* Traffic: a QP of the imported context in the imported PD writes
	 * from the imported MR (the exporter's memory) into the exporter's. */
	memset(a, 'i', MSG);
	memset(b, 0, MSG);
	check(side_open(&is, imp, ipd) == 0 && side_open(&es, ctx, pd) == 0 &&
		      write_through(&is, &es, a, imr->lkey, b, dst->rkey, MSG, &gid, gidx) &&
		      b[0] == 'i' && b[MSG - 1] == 'i',
	      "RDMA WRITE from an imported MR on a QP of the imported context");
	side_close(&is);
	side_close(&es);

	dm_sharing(ctx, imp, ipd);
	srq_event(ctx, pd, src, imp, ipd, dst, &gid, gidx);

	/* Unimport and the importer's close leave the exporter's objects. */
	ibv_unimport_mr(imr);
	ibv_unimport_pd(ipd);
	check(ibv_close_device(imp) == 0, "the imported context closed");
	memset(a, 'e', MSG);
	check(side_open(&is, ctx, pd) == 0 && side_open(&es, ctx, pd) == 0 &&
		      write_through(&is, &es, a, src->lkey, b, dst->rkey, MSG, &gid, gidx) &&
		      b[0] == 'e',
	      "after unimport and the importer's close the exporter's PD and MRs still work");
	side_close(&is);
	side_close(&es);

	/* The exporter closes first: the connection lives on for the
	 * importer, which keeps working (its requests, its doorbells). */
	imp = ibv_import_device(dup(ctx->cmd_fd));
	ipd = imp ? ibv_import_pd(imp, pd->handle) : NULL;
	imr = ipd ? ibv_import_mr(ipd, dst->handle) : NULL;
	if (!imr) {
		check(0, "a second import of the context, PD and MR");
		return 1;
	}
	esrc = src;
	src_handle = src->handle;
	check(ibv_close_device(ctx) == 0, "the exporter closed while imported");
	ipd2 = ibv_import_pd(imp, pd->handle);
	check(ipd2 != NULL, "its PD still imports (the connection lives on)");
	memset(a, 'x', MSG);
	src = ibv_reg_mr(ipd, a, MSG, ACCESS);
	check(src && side_open(&is, imp, ipd) == 0 && side_open(&es, imp, ipd) == 0 &&
		      write_through(&is, &es, a, src->lkey, b, imr->rkey, MSG, &gid, gidx) &&
		      b[0] == 'x' && b[MSG - 1] == 'x',
	      "the importer registers and writes into the exporter's MR after its close");
	side_close(&is);
	side_close(&es);
	if (src)
		ibv_dereg_mr(src);
	src = ibv_import_mr(ipd, src_handle);
	check(src && ibv_dereg_mr(src) == 0 && ibv_dereg_mr(imr) == 0 && ibv_dealloc_pd(ipd) == 0,
	      "the exporter's MR and PD destroyed through their imports");
	errno = 0;
	ipd = ibv_import_pd(imp, pd->handle);
	fd = errno;
	check(!ipd && fd == ENOENT, "the destroyed PD no longer imports: ENOENT (%d)", fd);
	ibv_unimport_pd(ipd2);
	/* The exporter's own structures of the objects destroyed through
	 * imports: freeing them is all that is left (unimport frees the local
	 * structure only, whichever context it came from). */
	ibv_unimport_mr(esrc);
	ibv_unimport_mr(dst);
	ibv_unimport_pd(pd);
	check(ibv_close_device(imp) == 0, "the last holder of the connection closed");
	return failed;
}
