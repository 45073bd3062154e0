// SPDX-License-Identifier: MIT
/*
 * ctrl_client: a minimal client of xrxed's control protocol (abi.h) for
 * tests/net/daemon.sh. It plays the verbs shim's part by hand: HELLO with a
 * registered-memory memfd and an async pipe, the device page read under its
 * seqlock, verbs objects created by control requests, WQEs written into the
 * shared rings, CQEs polled from them.
 *
 *   gids IFACE                    print port state and the GID table
 *   wait-gid IFACE GID present|absent MS
 *                                 wait until GID is (not) in the table
 *   setup IFACE --peer-gid G [--gid-index N] [--dest-qpn N] [--ready FILE]
 *                                 PD, MR, channel, CQ, RC QP, INIT -> RTR
 *                                 (address resolved by the daemon) -> RTS;
 *                                 prints "qpn N", then holds until killed
 *   bad IFACE                     malformed and foreign requests: each must
 *                                 fail with the right errno, the daemon must
 *                                 keep answering
 *   rc IFACE --peer-gid G --me NAME --peer NAME --dir DIR [--gid-index N]
 *      [--count N] [--size N] [--ready FILE] [--go FILE]
 *                                 one RC QP; QPNs and rkeys exchanged through
 *                                 files in DIR; NAME "a" sends SENDs (and an
 *                                 RDMA WRITE) to "b", which checks them (and
 *                                 with --ready writes FILE and holds its QP);
 *                                 with --go, "a" starts sending once FILE is
 *                                 there
 *   replay-victim IFACE --dir DIR, replay-attack IFACE --dir DIR
 *                                 attack 5 of issue 15: another user writes
 *                                 with the victim's R_Key (cmd_replay_*)
 *   loop IFACE [--count N]        two RC QPs of one process on one daemon,
 *                                 connected to each other through our own GID
 *                                 (the daemon's loopback): SENDs both ways
 *   stats IFACE [--json] [--qp]   the daemon's STATS text
 *   hog IFACE WHAT [--count N] [--ready FILE]
 *                                 create WHAT (pd xrcd cq channel mr bigmr qp
 *                                 conns) until refused; prints "made N",
 *                                 "errno NAME" (and "rkey K" per MR); with
 *                                 --ready, holds them
 *
 * Output is "key value" lines on stdout; errors one line on stderr; exit
 * status 0 when every expectation held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ctrl_msg.h"
#include "xrxe/abi.h"
#include "xrxe/ring.h"

#define MR_WINDOW (1ull << 47)

static int verbose;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ctrl_client: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* --- a connection: what the shim keeps per device context ------------------ */

struct client {
	int sock;
	uint32_t seq;
	int memfd;
	int async_rd;
	int doorbell;
	const struct xrxe_dev_page *page;
	uint32_t page_size;
	struct xrxe_ring *db_ring; /* SQ doorbells (xrxe/ring.h) */
	uint32_t db_prod;
};

union msg {
	struct xrxe_ctrl_hdr hdr;
	uint8_t raw[XRXE_MAX_CTRL_MSG];
	uint64_t align;
};

/* One request; returns the reply status, fills reply / fds. */
static int call(struct client *c, void *req, size_t len, const int *fds, unsigned nfds,
		union msg *rep, int *rfds, unsigned *nrfds)
{
	struct xrxe_ctrl_hdr *h = req;
	union msg tmp;
	unsigned n = 0;
	ssize_t r;

	if (!rep)
		rep = &tmp;
	h->seq = ++c->seq;
	r = xrxe_ctrl_call(c->sock, req, len, fds, nfds, rep, sizeof(*rep), rfds, &n);
	if (r < 0)
		die("op %u: control socket: %s", h->op, strerror((int)-r));
	if ((size_t)r < sizeof(struct xrxe_ctrl_hdr) || rep->hdr.seq != h->seq ||
	    rep->hdr.length != (uint32_t)r)
		die("op %u: malformed reply (%zd bytes)", h->op, r);
	if (nrfds)
		*nrfds = n;
	return rep->hdr.status;
}

/* Send exactly these bytes (no length fix-up) and return the reply's status. */
static int call_raw(struct client *c, void *req, size_t len)
{
	struct xrxe_ctrl_hdr *h = req;
	union msg rep;
	int fds[XRXE_MAX_CTRL_FDS];
	unsigned n;
	bool tr;
	ssize_t r;

	h->seq = ++c->seq;
	if (xrxe_ctrl_send(c->sock, req, len, NULL, 0, false))
		die("send: %s", strerror(errno));
	for (;;) {
		struct pollfd pfd = { .fd = c->sock, .events = POLLIN };

		if (poll(&pfd, 1, 5000) <= 0)
			die("no reply");
		r = xrxe_ctrl_recv(c->sock, &rep, sizeof(rep), fds, &n, &tr);
		if (r != -EAGAIN)
			break;
	}
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	if (r < (ssize_t)sizeof(rep.hdr) || rep.hdr.seq != h->seq)
		die("raw request: bad reply (%zd)", r);
	return rep.hdr.status;
}

static void hdr_init(void *m, uint16_t op, size_t len)
{
	struct xrxe_ctrl_hdr *h = m;

	memset(m, 0, len);
	h->op = op;
	h->length = (uint32_t)len;
}

/* The shim's registered-memory file: sparse, offset = virtual address. */
static int make_memfd(void)
{
	int fd = memfd_create("xrxe-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)MR_WINDOW) < 0)
		die("memfd: %s", strerror(errno));
	return fd;
}

static void client_open(struct client *c, const char *ifname)
{
	struct xrxe_ctrl_hello req;
	union msg rep;
	int pfd[2], fds[2], rfds[XRXE_MAX_CTRL_FDS];
	unsigned nr;
	int st;
	void *p;

	memset(c, 0, sizeof(*c));
	c->sock = xrxe_ctrl_connect(ifname);
	if (c->sock < 0)
		die("connect to the daemon of %s: %s", ifname, strerror(-c->sock));
	c->memfd = make_memfd();
	if (pipe2(pfd, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	c->async_rd = pfd[0];
	hdr_init(&req, XRXE_CTRL_HELLO, sizeof(req));
	req.abi_version = XRXE_ABI_VERSION;
	fds[0] = c->memfd;
	fds[1] = pfd[1];
	st = call(c, &req, sizeof(req), fds, 2, &rep, rfds, &nr);
	close(pfd[1]);
	if (st)
		die("HELLO: %s", strerror(-st));
	if (nr != 3)
		die("HELLO: %u fds in the reply", nr);
	c->page_size = ((struct xrxe_ctrl_hello_reply *)&rep)->dev_page_size;
	p = mmap(NULL, c->page_size, PROT_READ, MAP_SHARED, rfds[0], 0);
	if (p == MAP_FAILED)
		die("device page: mmap: %s", strerror(errno));
	/* The daemon seals the page against writable mappings. */
	if (mmap(NULL, c->page_size, PROT_READ | PROT_WRITE, MAP_SHARED, rfds[0], 0) != MAP_FAILED)
		die("device page: a writable mapping was allowed");
	close(rfds[0]);
	c->page = p;
	c->doorbell = rfds[1];
	{
		struct stat sb;

		if (fstat(rfds[2], &sb) < 0)
			die("doorbell ring: fstat: %s", strerror(errno));
		c->db_ring = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
				  rfds[2], 0);
		if (c->db_ring == MAP_FAILED)
			die("doorbell ring: mmap: %s", strerror(errno));
		close(rfds[2]);
	}
}

static uint32_t simple_handle_op(struct client *c, uint16_t op)
{
	struct xrxe_ctrl_hdr req;
	union msg rep;
	int st;

	hdr_init(&req, op, sizeof(req));
	st = call(c, &req, sizeof(req), NULL, 0, &rep, NULL, NULL);
	if (st)
		die("op %u: %s", op, strerror(-st));
	return ((struct xrxe_ctrl_handle *)&rep)->handle;
}

static int destroy(struct client *c, uint16_t op, uint32_t handle)
{
	struct xrxe_ctrl_handle req;

	hdr_init(&req, op, sizeof(req));
	req.handle = handle;
	return call(c, &req, sizeof(req), NULL, 0, NULL, NULL, NULL);
}

/* --- device page ------------------------------------------------------------- */

/* A consistent copy under the seqlock, as the shim reads it. */
static void read_page(const struct client *c, struct xrxe_dev_page *out)
{
	for (;;) {
		uint32_t s1 = __atomic_load_n(&c->page->seq, __ATOMIC_ACQUIRE), s2;

		if (s1 & 1)
			continue;
		memcpy(out, c->page, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&c->page->seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			return;
	}
}

static void gid_str(const union ibv_gid *g, char *buf, size_t len)
{
	inet_ntop(AF_INET6, g->raw, buf, (socklen_t)len);
}

static bool gid_parse(const char *s, union ibv_gid *g)
{
	struct in_addr a4;

	if (inet_pton(AF_INET6, s, g->raw) == 1)
		return true;
	if (inet_pton(AF_INET, s, &a4) == 1) { /* a.b.c.d -> ::ffff:a.b.c.d */
		memset(g, 0, sizeof(*g));
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(&g->raw[12], &a4, 4);
		return true;
	}
	return false;
}

static int find_gid(const struct xrxe_dev_page *p, const union ibv_gid *g)
{
	for (int i = 0; i < XRXE_GID_TABLE_LEN; i++)
		if (p->gids[i].valid && !memcmp(p->gids[i].gid.raw, g->raw, 16))
			return i;
	return -1;
}

static int cmd_gids(const char *ifname)
{
	struct xrxe_dev_page p;
	struct client c;
	char txt[INET6_ADDRSTRLEN];

	client_open(&c, ifname);
	read_page(&c, &p);
	printf("abi %u\n", p.abi_version);
	printf("ifname %s\n", p.ifname);
	printf("port_state %s\n", p.port_attr.state == IBV_PORT_ACTIVE ? "ACTIVE" : "DOWN");
	printf("active_mtu %u\n", 128u << p.port_attr.active_mtu);
	printf("max_mtu %u\n", 128u << p.port_attr.max_mtu);
	printf("link_layer %s\n", p.port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "ethernet" : "?");
	printf("gid_tbl_len %d\n", p.port_attr.gid_tbl_len);
	printf("vendor_id %#x\n", p.dev_attr.vendor_id);
	printf("max_qp %d\n", p.dev_attr.max_qp);
	printf("max_qp_wr %d\n", p.dev_attr.max_qp_wr);
	printf("max_cqe %d\n", p.dev_attr.max_cqe);
	printf("max_sge %d\n", p.dev_attr.max_sge);
	printf("max_qp_rd_atom %d\n", p.dev_attr.max_qp_rd_atom);
	printf("atomic_cap %s\n", p.dev_attr.atomic_cap == IBV_ATOMIC_HCA ? "HCA" : "other");
	printf("node_guid %016" PRIx64 "\n", be64toh(p.node_guid));
	for (int i = 0; i < XRXE_GID_TABLE_LEN; i++) {
		if (!p.gids[i].valid)
			continue;
		gid_str(&p.gids[i].gid, txt, sizeof(txt));
		printf("gid %d %s %s\n", i, txt,
		       p.gids[i].gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCEv2" : "?");
	}
	return 0;
}

static int cmd_wait_gid(const char *ifname, const char *gid, const char *want, unsigned ms)
{
	bool present = !strcmp(want, "present");
	struct xrxe_dev_page p;
	struct client c;
	union ibv_gid g;
	uint64_t t0;

	if (!gid_parse(gid, &g))
		die("%s: not a GID or address", gid);
	client_open(&c, ifname);
	t0 = now_ms();
	for (;;) {
		read_page(&c, &p);
		if ((find_gid(&p, &g) >= 0) == present) {
			printf("waited_ms %" PRIu64 "\n", now_ms() - t0);
			return 0;
		}
		if (now_ms() - t0 > ms) {
			fprintf(stderr, "ctrl_client: %s still %s after %u ms\n", gid,
				present ? "absent" : "present", ms);
			return 1;
		}
		usleep(5000);
	}
}

/* --- verbs objects -------------------------------------------------------------- */

struct ring {
	struct xrxe_ring *r;
	size_t size;
	void *map; /* the whole fd, mapped for this ring */
	size_t map_len;
	ino_t ino; /* the fd's file (a slab is shared by the rings carved from it) */
	uint32_t mask, log2;
	uint32_t idx; /* our private index (producer for SQ/RQ, consumer for CQ) */
};

/* The ring at loc (abi.h struct xrxe_ring_loc): this client maps the whole
 * fd for each ring (a slab mapped once per ring; it never unmaps). */
static void ring_map(struct ring *rg, int fd, const struct xrxe_ring_loc *loc)
{
	uint8_t *p = mmap(NULL, loc->slab_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	struct stat st;

	if (p == MAP_FAILED)
		die("ring mmap: %s", strerror(errno));
	if (fstat(fd, &st) < 0)
		die("ring fstat: %s", strerror(errno));
	rg->ino = st.st_ino;
	close(fd);
	rg->r = (struct xrxe_ring *)(p + loc->offset);
	rg->size = loc->size;
	rg->map = p;
	rg->map_len = loc->slab_size;
	rg->mask = rg->r->index_mask;
	rg->log2 = rg->r->log2_elem_size;
	rg->idx = 0;
}

static void *ring_slot(const struct ring *rg, uint32_t i)
{
	return rg->r->data + ((size_t)(i & rg->mask) << rg->log2);
}

struct mr {
	uint32_t handle, lkey, rkey;
	uint8_t *buf;
	size_t len;
};

/* A buffer backed by the memfd at offset = its address (what the shim does
 * for ibv_reg_mr), then registered. */
static void reg_mr(struct client *c, uint32_t pd, size_t len, struct mr *mr)
{
	struct xrxe_ctrl_reg_mr req;
	union msg rep;
	void *p;
	int st;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED ||
	    mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, c->memfd, (off_t)(uintptr_t)p) ==
		    MAP_FAILED)
		die("MR buffer: %s", strerror(errno));
	hdr_init(&req, XRXE_CTRL_REG_MR, sizeof(req));
	req.pd = pd;
	req.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	req.addr = (uintptr_t)p;
	req.length = len;
	req.iova = (uintptr_t)p;
	st = call(c, &req, sizeof(req), NULL, 0, &rep, NULL, NULL);
	if (st)
		die("REG_MR: %s", strerror(-st));
	mr->handle = ((struct xrxe_ctrl_reg_mr_reply *)&rep)->handle;
	mr->lkey = ((struct xrxe_ctrl_reg_mr_reply *)&rep)->lkey;
	mr->rkey = ((struct xrxe_ctrl_reg_mr_reply *)&rep)->rkey;
	mr->buf = p;
	mr->len = len;
}

struct cq {
	uint32_t handle;
	struct ring ring;
};

static void create_cq(struct client *c, uint32_t cqe, uint32_t channel, struct cq *cq)
{
	struct xrxe_ctrl_create_cq req;
	struct xrxe_ctrl_create_cq_reply *r;
	union msg rep;
	int rfds[XRXE_MAX_CTRL_FDS];
	unsigned nr;
	int st;

	hdr_init(&req, XRXE_CTRL_CREATE_CQ, sizeof(req));
	req.cqe = cqe;
	req.channel = channel;
	req.handle = XRXE_NO_HANDLE;
	st = call(c, &req, sizeof(req), NULL, 0, &rep, rfds, &nr);
	if (st)
		die("CREATE_CQ: %s", strerror(-st));
	r = (struct xrxe_ctrl_create_cq_reply *)&rep;
	if (nr != 1)
		die("CREATE_CQ: %u fds", nr);
	cq->handle = r->handle;
	ring_map(&cq->ring, rfds[0], &r->ring);
}

struct qp {
	uint32_t handle, qpn;
	struct ring sq, rq;
	struct ibv_qp_cap cap;
};

static void create_qp(struct client *c, uint32_t pd, const struct cq *cq, struct qp *qp)
{
	struct xrxe_ctrl_create_qp req;
	struct xrxe_ctrl_create_qp_reply *r;
	union msg rep;
	int rfds[XRXE_MAX_CTRL_FDS];
	unsigned nr;
	int st;

	hdr_init(&req, XRXE_CTRL_CREATE_QP, sizeof(req));
	req.pd = pd;
	req.send_cq = cq->handle;
	req.recv_cq = cq->handle;
	req.srq = XRXE_NO_HANDLE;
	req.qp_type = IBV_QPT_RC;
	req.cap = (struct ibv_qp_cap){ .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 2,
				       .max_recv_sge = 2, .max_inline_data = 64 };
	st = call(c, &req, sizeof(req), NULL, 0, &rep, rfds, &nr);
	if (st)
		die("CREATE_QP: %s", strerror(-st));
	r = (struct xrxe_ctrl_create_qp_reply *)&rep;
	if (nr != 2)
		die("CREATE_QP: %u fds", nr);
	qp->handle = r->handle;
	qp->qpn = r->qpn;
	qp->cap = r->cap;
	ring_map(&qp->sq, rfds[0], &r->sq);
	ring_map(&qp->rq, rfds[1], &r->rq);
}

static int modify_qp(struct client *c, const struct qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct xrxe_ctrl_modify_qp req;

	hdr_init(&req, XRXE_CTRL_MODIFY_QP, sizeof(req));
	req.handle = qp->handle;
	req.attr_mask = (uint32_t)mask;
	req.attr = *attr;
	return call(c, &req, sizeof(req), NULL, 0, NULL, NULL, NULL);
}

/* RESET -> INIT -> RTR (address resolved by the daemon) -> RTS, as
 * ibv_rc_pingpong does it. */
static void connect_qp(struct client *c, const struct qp *qp, const union ibv_gid *dgid,
		       uint8_t sgid_index, uint32_t dest_qpn, uint32_t my_psn, uint32_t peer_psn)
{
	struct ibv_qp_attr a;
	uint64_t t0;
	int st;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	st = modify_qp(c, qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS);
	if (st)
		die("modify to INIT: %s", strerror(-st));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = sgid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	t0 = now_ms();
	st = modify_qp(c, qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER);
	if (st)
		die("modify to RTR: %s", strerror(-st));
	printf("rtr_ms %" PRIu64 "\n", now_ms() - t0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 1;
	st = modify_qp(c, qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (st)
		die("modify to RTS: %s", strerror(-st));
}

/* --- data path through the rings (the shim's post_send / post_recv / poll_cq) -- */

static void doorbell(struct client *c)
{
	uint64_t one = 1;

	/* abi.h: producer published (release), full fence, then look at the
	 * flag; the daemon does the mirror image before it sleeps. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->page->daemon_sleeping, __ATOMIC_RELAXED) &&
	    write(c->doorbell, &one, sizeof(one)) < 0)
		die("doorbell: %s", strerror(errno));
}

static void post_recv(struct qp *qp, const struct mr *mr, uint64_t off, uint32_t len,
		      uint64_t wr_id)
{
	struct xrxe_recv_wqe *w = ring_slot(&qp->rq, qp->rq.idx);

	if (((qp->rq.idx + 1) & qp->rq.mask) ==
	    __atomic_load_n(&qp->rq.r->consumer, __ATOMIC_ACQUIRE))
		die("RQ full");
	w->wr_id = wr_id;
	w->num_sge = 1;
	w->sge[0] = (struct xrxe_sge){ .addr = (uintptr_t)mr->buf + off, .length = len,
				       .lkey = mr->lkey };
	qp->rq.idx = (qp->rq.idx + 1) & qp->rq.mask;
	__atomic_store_n(&qp->rq.r->producer, qp->rq.idx, __ATOMIC_RELEASE);
}

static void post_send(struct client *c, struct qp *qp, uint32_t opcode, const struct mr *mr,
		      uint64_t off, uint32_t len, uint64_t wr_id, uint64_t raddr, uint32_t rkey)
{
	struct xrxe_send_wqe *w = ring_slot(&qp->sq, qp->sq.idx);

	if (((qp->sq.idx + 1) & qp->sq.mask) ==
	    __atomic_load_n(&qp->sq.r->consumer, __ATOMIC_ACQUIRE))
		die("SQ full");
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->opcode = opcode;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->wr.rdma.remote_addr = raddr;
	w->wr.rdma.rkey = rkey;
	w->sge[0] = (struct xrxe_sge){ .addr = (uintptr_t)mr->buf + off, .length = len,
				       .lkey = mr->lkey };
	qp->sq.idx = (qp->sq.idx + 1) & qp->sq.mask;
	__atomic_store_n(&qp->sq.r->producer, qp->sq.idx, __ATOMIC_RELEASE);
	/* which QP (xrxe/ring.h), then the wake-up */
	if (xrxe_doorbell_claim(qp->sq.r))
		xrxe_doorbell_push(c->db_ring, &c->db_prod, qp->handle);
	doorbell(c);
}

/* Wait for one CQE (busy-polling the ring, as ibv_poll_cq loops do). */
static struct ibv_wc poll_one(struct cq *cq, unsigned timeout_ms)
{
	uint64_t t0 = now_ms();

	for (;;) {
		uint32_t prod = __atomic_load_n(&cq->ring.r->producer, __ATOMIC_ACQUIRE);

		if (prod != cq->ring.idx) {
			struct xrxe_cqe *e = ring_slot(&cq->ring, cq->ring.idx);
			struct ibv_wc wc = e->wc;

			cq->ring.idx = (cq->ring.idx + 1) & cq->ring.mask;
			__atomic_store_n(&cq->ring.r->consumer, cq->ring.idx, __ATOMIC_RELEASE);
			return wc;
		}
		if (now_ms() - t0 > timeout_ms)
			die("no completion within %u ms", timeout_ms);
		usleep(50);
	}
}

static void expect_wc(const struct ibv_wc *wc, enum ibv_wc_opcode op, uint64_t wr_id,
		      const char *what)
{
	if (wc->status != IBV_WC_SUCCESS)
		die("%s: completion status %d (enum ibv_wc_status)", what, wc->status);
	if (wc->opcode != op || wc->wr_id != wr_id)
		die("%s: completion opcode %d wr_id %" PRIu64 ", expected %d / %" PRIu64, what,
		    wc->opcode, wc->wr_id, op, wr_id);
}

/* --- commands -------------------------------------------------------------------- */

struct common {
	const char *ifname;
	union ibv_gid peer;
	bool have_peer;
	uint8_t gid_index;
	uint32_t dest_qpn;
	const char *ready, *go;
	const char *me, *peer_name, *dir;
	unsigned count;
	uint32_t size;
	bool json, qp;
};

static void write_file(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void write_file(const char *path, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		die("%s: %s", tmp, strerror(errno));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	if (fclose(f) || rename(tmp, path))
		die("%s: %s", path, strerror(errno));
}

static int cmd_setup(const struct common *o)
{
	struct client c;
	struct cq cq;
	struct qp qp;
	struct mr mr;
	uint32_t pd, ch;
	int pfd[2];

	if (!o->have_peer)
		die("setup: --peer-gid is required");
	client_open(&c, o->ifname);
	pd = simple_handle_op(&c, XRXE_CTRL_ALLOC_PD);
	reg_mr(&c, pd, 1 << 20, &mr);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));

	struct xrxe_ctrl_hdr req;
	union msg rep;
	int st;

	hdr_init(&req, XRXE_CTRL_CREATE_CHANNEL, sizeof(req));
	st = call(&c, &req, sizeof(req), &pfd[1], 1, &rep, NULL, NULL);
	if (st)
		die("CREATE_CHANNEL: %s", strerror(-st));
	close(pfd[1]);
	ch = ((struct xrxe_ctrl_handle *)&rep)->handle;
	create_cq(&c, 128, ch, &cq);
	create_qp(&c, pd, &cq, &qp);
	connect_qp(&c, &qp, &o->peer, o->gid_index, o->dest_qpn ? o->dest_qpn : 0x11, 0, 0);
	printf("qpn %u\n", qp.qpn);
	printf("state RTS\n");
	fflush(stdout);
	if (o->ready)
		write_file(o->ready, "%u\n", qp.qpn);
	for (;;)
		pause(); /* the test kills us (kill -9): the daemon must clean up */
}

/* Every reply's status for a list of hostile requests. */
static int cmd_bad(const char *ifname)
{
	struct client a, b;
	union msg m, rep;
	int fails = 0, st;
	uint32_t pd, ch;

#define EXPECT(desc, got, want)                                                              \
	do {                                                                                 \
		int g_ = (got), w_ = (want);                                                 \
		printf("%s %s: %d (%s)\n", g_ == w_ ? "pass" : "FAIL", desc, g_,             \
		       g_ ? strerror(-g_) : "ok");                                           \
		if (g_ != w_)                                                                \
			fails++;                                                             \
	} while (0)

	/* Before HELLO: only HELLO and STATS. */
	memset(&a, 0, sizeof(a));
	a.sock = xrxe_ctrl_connect(ifname);
	if (a.sock < 0)
		die("connect: %s", strerror(-a.sock));
	hdr_init(&m, XRXE_CTRL_ALLOC_PD, sizeof(struct xrxe_ctrl_hdr));
	EXPECT("alloc_pd before hello", call(&a, &m, sizeof(struct xrxe_ctrl_hdr), NULL, 0, NULL,
					     NULL, NULL), -EPROTO);
	/* HELLO without its fds */
	hdr_init(&m, XRXE_CTRL_HELLO, sizeof(struct xrxe_ctrl_hello));
	((struct xrxe_ctrl_hello *)&m)->abi_version = XRXE_ABI_VERSION;
	EXPECT("hello without fds", call(&a, &m, sizeof(struct xrxe_ctrl_hello), NULL, 0, NULL,
					 NULL, NULL), -EINVAL);
	/* HELLO with a wrong ABI version */
	{
		int pfd[2], fds[2];

		if (pipe2(pfd, O_CLOEXEC) < 0)
			die("pipe");
		fds[0] = make_memfd();
		fds[1] = pfd[1];
		hdr_init(&m, XRXE_CTRL_HELLO, sizeof(struct xrxe_ctrl_hello));
		((struct xrxe_ctrl_hello *)&m)->abi_version = XRXE_ABI_VERSION + 100;
		EXPECT("hello with a foreign ABI version",
		       call(&a, &m, sizeof(struct xrxe_ctrl_hello), fds, 2, NULL, NULL, NULL),
		       -EPROTO);
		/* HELLO with a pipe where the memfd goes, and a memfd where the pipe goes */
		int sw[2] = { pfd[1], fds[0] };

		hdr_init(&m, XRXE_CTRL_HELLO, sizeof(struct xrxe_ctrl_hello));
		((struct xrxe_ctrl_hello *)&m)->abi_version = XRXE_ABI_VERSION;
		EXPECT("hello with fds of the wrong type",
		       call(&a, &m, sizeof(struct xrxe_ctrl_hello), sw, 2, NULL, NULL, NULL),
		       -EINVAL);
		/* a memfd that cannot be sealed against shrinking */
		int plain = memfd_create("plain", MFD_CLOEXEC);
		int fds2[2] = { plain, pfd[1] };

		EXPECT("hello with an unsealable memfd",
		       call(&a, &m, sizeof(struct xrxe_ctrl_hello), fds2, 2, NULL, NULL, NULL),
		       -EINVAL);
		close(plain);
		close(pfd[0]);
		close(pfd[1]);
		close(fds[0]);
	}
	close(a.sock);

	client_open(&a, ifname);
	client_open(&b, ifname);

	/* Lengths: short, long, header lying about the length. */
	hdr_init(&m, XRXE_CTRL_DEALLOC_PD, sizeof(struct xrxe_ctrl_handle));
	EXPECT("request shorter than its op", call(&a, &m, sizeof(struct xrxe_ctrl_handle) - 4, NULL,
						   0, NULL, NULL, NULL), -EINVAL);
	hdr_init(&m, XRXE_CTRL_DEALLOC_PD, sizeof(struct xrxe_ctrl_handle) + 8);
	EXPECT("request longer than its op", call(&a, &m, sizeof(struct xrxe_ctrl_handle) + 8, NULL,
						  0, NULL, NULL, NULL), -EINVAL);
	/* hdr.length disagrees with the bytes sent (call() would fix it up) */
	hdr_init(&m, XRXE_CTRL_ALLOC_PD, sizeof(struct xrxe_ctrl_hdr));
	m.hdr.length = 999;
	EXPECT("header length disagreeing with the message", call_raw(&a, &m, sizeof(m.hdr)),
	       -EINVAL);
	/* more than XRXE_MAX_CTRL_MSG bytes */
	{
		static uint8_t big[XRXE_MAX_CTRL_MSG + 64];

		hdr_init(big, XRXE_CTRL_ALLOC_PD, sizeof(big));
		EXPECT("oversized message", call_raw(&a, big, sizeof(big)), -EINVAL);
	}
	hdr_init(&m, 200, sizeof(struct xrxe_ctrl_hdr));
	EXPECT("unknown op", call(&a, &m, sizeof(struct xrxe_ctrl_hdr), NULL, 0, NULL, NULL, NULL),
	       -EINVAL);
	hdr_init(&m, 0, sizeof(struct xrxe_ctrl_hdr));
	EXPECT("op 0", call(&a, &m, sizeof(struct xrxe_ctrl_hdr), NULL, 0, NULL, NULL, NULL),
	       -EINVAL);
	{
		/* an op that takes no fds, with an fd: rejected, fd closed */
		int pfd[2];

		if (pipe2(pfd, O_CLOEXEC) < 0)
			die("pipe");
		hdr_init(&m, XRXE_CTRL_ALLOC_PD, sizeof(struct xrxe_ctrl_hdr));
		EXPECT("unexpected fd", call(&a, &m, sizeof(struct xrxe_ctrl_hdr), &pfd[1], 1, NULL,
					     NULL, NULL), -EINVAL);
		close(pfd[1]);
		/* the daemon closed its copy: the read end sees EOF */
		char x;

		EXPECT("unexpected fd closed by the daemon", (int)read(pfd[0], &x, 1), 0);
		close(pfd[0]);
	}
	{
		/* CREATE_CHANNEL with the read end of a pipe */
		int pfd[2];

		if (pipe2(pfd, O_CLOEXEC) < 0)
			die("pipe");
		hdr_init(&m, XRXE_CTRL_CREATE_CHANNEL, sizeof(struct xrxe_ctrl_hdr));
		EXPECT("channel with a read end", call(&a, &m, sizeof(struct xrxe_ctrl_hdr), &pfd[0],
						       1, NULL, NULL, NULL), -EINVAL);
		close(pfd[0]);
		close(pfd[1]);
	}

	/* Handles */
	pd = simple_handle_op(&a, XRXE_CTRL_ALLOC_PD);
	EXPECT("dealloc of a handle never issued", destroy(&a, XRXE_CTRL_DEALLOC_PD, pd ^ 0x5a5a0000),
	       -EBADF);
	EXPECT("a PD handle used as a CQ", destroy(&a, XRXE_CTRL_DESTROY_CQ, pd), -EBADF);
	EXPECT("another connection's PD", destroy(&b, XRXE_CTRL_DEALLOC_PD, pd), -EBADF);
	{
		struct xrxe_ctrl_reg_mr r;

		hdr_init(&r, XRXE_CTRL_REG_MR, sizeof(r));
		r.pd = pd;
		r.access = IBV_ACCESS_LOCAL_WRITE;
		r.addr = 0x10000;
		r.length = 4096;
		r.iova = 0x10000;
		EXPECT("reg_mr on another connection's PD",
		       call(&b, &r, sizeof(r), NULL, 0, NULL, NULL, NULL), -EBADF);
		/* An empty MR (the shim registers one over device memory
		 * only): accepted, nothing mapped, and it goes again. */
		r.length = 0;
		{
			union msg mrep;

			EXPECT("reg_mr of length 0: an empty MR",
			       call(&a, &r, sizeof(r), NULL, 0, &mrep, NULL, NULL), 0);
			EXPECT("the empty MR deregistered",
			       destroy(&a, XRXE_CTRL_DEREG_MR,
				       ((struct xrxe_ctrl_reg_mr_reply *)&mrep)->handle),
			       0);
		}
		r.addr = (1ull << 47) - 4096;
		r.length = 8192;
		EXPECT("reg_mr past 2^47", call(&a, &r, sizeof(r), NULL, 0, NULL, NULL, NULL),
		       -EINVAL);
		r.addr = UINT64_MAX - 10;
		r.length = 100;
		EXPECT("reg_mr wrapping around", call(&a, &r, sizeof(r), NULL, 0, NULL, NULL, NULL),
		       -EINVAL);
		r.addr = 0x10000;
		r.length = 4096;
		r.access = IBV_ACCESS_REMOTE_WRITE;
		EXPECT("reg_mr remote write without local write",
		       call(&a, &r, sizeof(r), NULL, 0, NULL, NULL, NULL), -EINVAL);
	}
	{
		int pfd[2];

		if (pipe2(pfd, O_CLOEXEC) < 0)
			die("pipe");
		hdr_init(&m, XRXE_CTRL_CREATE_CHANNEL, sizeof(struct xrxe_ctrl_hdr));
		st = call(&a, &m, sizeof(struct xrxe_ctrl_hdr), &pfd[1], 1, &rep, NULL, NULL);
		EXPECT("create channel", st, 0);
		ch = ((struct xrxe_ctrl_handle *)&rep)->handle;
		close(pfd[0]);
		close(pfd[1]);
	}
	{
		struct xrxe_ctrl_create_cq q;
		int rf[XRXE_MAX_CTRL_FDS];
		unsigned nr;

		hdr_init(&q, XRXE_CTRL_CREATE_CQ, sizeof(q));
		q.cqe = 16;
		q.channel = ch;
		EXPECT("CQ on another connection's channel",
		       call(&b, &q, sizeof(q), NULL, 0, NULL, NULL, NULL), -EBADF);
		q.cqe = 0;
		EXPECT("CQ of 0 entries", call(&a, &q, sizeof(q), NULL, 0, NULL, NULL, NULL), -EINVAL);
		q.cqe = XRXE_MAX_CQE + 1;
		EXPECT("CQ above max_cqe", call(&a, &q, sizeof(q), NULL, 0, NULL, NULL, NULL), -EINVAL);
		q.cqe = 16;
		st = call(&a, &q, sizeof(q), NULL, 0, &rep, rf, &nr);
		EXPECT("create CQ", st, 0);
		if (!st) {
			uint32_t cqh = ((struct xrxe_ctrl_create_cq_reply *)&rep)->handle;

			close(rf[0]);
			EXPECT("destroy channel in use", destroy(&a, XRXE_CTRL_DESTROY_CHANNEL, ch),
			       -EBUSY);
			EXPECT("destroy another connection's CQ",
			       destroy(&b, XRXE_CTRL_DESTROY_CQ, cqh), -EBADF);

			struct xrxe_ctrl_create_qp qr;

			hdr_init(&qr, XRXE_CTRL_CREATE_QP, sizeof(qr));
			qr.pd = pd;
			qr.send_cq = qr.recv_cq = cqh;
			qr.srq = XRXE_NO_HANDLE;
			qr.qp_type = IBV_QPT_RC;
			qr.cap.max_send_wr = qr.cap.max_recv_wr = 4;
			qr.cap.max_send_sge = qr.cap.max_recv_sge = 1;
			EXPECT("QP on another connection's PD and CQ",
			       call(&b, &qr, sizeof(qr), NULL, 0, NULL, NULL, NULL), -EBADF);
			qr.cap.max_send_sge = XRXE_MAX_SGE + 1;
			EXPECT("QP with too many SGEs", call(&a, &qr, sizeof(qr), NULL, 0, NULL, NULL, NULL),
			       -EINVAL);
			qr.cap.max_send_sge = 1;
			/* XRC targets come from CREATE_XRC_TGT only (docs/xrc.md) */
			qr.qp_type = IBV_QPT_XRC_RECV;
			EXPECT("XRC target through CREATE_QP",
			       call(&a, &qr, sizeof(qr), NULL, 0, NULL, NULL, NULL), -EOPNOTSUPP);
			{
				struct xrxe_ctrl_xrc_qp xq;
				struct xrxe_ctrl_create_xrc_srq xs;

				hdr_init(&xq, XRXE_CTRL_OPEN_QP, sizeof(xq));
				xq.xrcd = pd; /* a PD's handle is no XRC domain */
				xq.qpn = 17;
				EXPECT("open_qp without an XRC domain",
				       call(&a, &xq, sizeof(xq), NULL, 0, NULL, NULL, NULL), -EBADF);
				hdr_init(&xq, XRXE_CTRL_CREATE_XRC_TGT, sizeof(xq));
				xq.xrcd = 0x12345;
				EXPECT("XRC target in a made-up domain",
				       call(&a, &xq, sizeof(xq), NULL, 0, NULL, NULL, NULL), -EBADF);
				hdr_init(&xs, XRXE_CTRL_CREATE_XRC_SRQ, sizeof(xs));
				xs.srq.pd = pd;
				xs.srq.attr.max_wr = 4;
				xs.xrcd = cqh; /* a CQ's handle is no XRC domain */
				xs.cq = cqh;
				EXPECT("XRC SRQ without an XRC domain",
				       call(&a, &xs, sizeof(xs), NULL, 0, NULL, NULL, NULL), -EBADF);
			}
			qr.qp_type = IBV_QPT_RC;
			st = call(&a, &qr, sizeof(qr), NULL, 0, &rep, rf, &nr);
			EXPECT("create QP", st, 0);
			if (!st) {
				uint32_t qph = ((struct xrxe_ctrl_create_qp_reply *)&rep)->handle;
				struct xrxe_ctrl_modify_qp mq;

				for (unsigned i = 0; i < nr; i++)
					close(rf[i]);
				hdr_init(&mq, XRXE_CTRL_MODIFY_QP, sizeof(mq));
				mq.handle = qph;
				mq.attr_mask = IBV_QP_STATE;
				mq.attr.qp_state = IBV_QPS_INIT;
				EXPECT("modify another connection's QP",
				       call(&b, &mq, sizeof(mq), NULL, 0, NULL, NULL, NULL), -EBADF);
				EXPECT("destroy another connection's QP",
				       destroy(&b, XRXE_CTRL_DESTROY_QP, qph), -EBADF);
				EXPECT("destroy CQ in use by a QP",
				       destroy(&a, XRXE_CTRL_DESTROY_CQ, cqh), -EBUSY);
				EXPECT("dealloc PD in use", destroy(&a, XRXE_CTRL_DEALLOC_PD, pd),
				       -EBUSY);
				EXPECT("destroy QP", destroy(&a, XRXE_CTRL_DESTROY_QP, qph), 0);
				EXPECT("destroy QP twice", destroy(&a, XRXE_CTRL_DESTROY_QP, qph),
				       -EBADF);
			}
			EXPECT("destroy CQ", destroy(&a, XRXE_CTRL_DESTROY_CQ, cqh), 0);
		}
	}
	EXPECT("destroy channel", destroy(&a, XRXE_CTRL_DESTROY_CHANNEL, ch), 0);
	{
		struct xrxe_ctrl_srq s;
		struct xrxe_ctrl_mcast mc;
		int rf[XRXE_MAX_CTRL_FDS];
		unsigned nr = 0;

		hdr_init(&s, XRXE_CTRL_CREATE_SRQ, sizeof(s));
		s.pd = pd;
		EXPECT("SRQ of 0 WRs", call(&a, &s, sizeof(s), NULL, 0, NULL, NULL, NULL), -EINVAL);
		s.attr.max_wr = 8;
		s.attr.max_sge = XRXE_MAX_SGE + 1;
		EXPECT("SRQ with too many SGEs", call(&a, &s, sizeof(s), NULL, 0, NULL, NULL, NULL),
		       -EINVAL);
		s.attr.max_sge = 1;
		EXPECT("SRQ on another connection's PD",
		       call(&b, &s, sizeof(s), NULL, 0, NULL, NULL, NULL), -EBADF);
		st = call(&a, &s, sizeof(s), NULL, 0, &rep, rf, &nr);
		EXPECT("create SRQ", st, 0);
		if (!st) {
			struct xrxe_ctrl_srq_reply *sr = (struct xrxe_ctrl_srq_reply *)&rep;
			uint32_t sh = sr->handle;
			struct xrxe_ctrl_srq_op so;
			struct xrxe_ctrl_create_tm_srq ts;

			/* tag matching (ctrl_tm.c): objects checked first */
			hdr_init(&so, XRXE_CTRL_SRQ_OP, sizeof(so));
			so.srq = sh;
			so.op = IBV_WR_TAG_ADD;
			EXPECT("tag list operation on a basic SRQ",
			       call(&a, &so, sizeof(so), NULL, 0, NULL, NULL, NULL), -EINVAL);
			EXPECT("tag list operation on another connection's SRQ",
			       call(&b, &so, sizeof(so), NULL, 0, NULL, NULL, NULL), -EBADF);
			hdr_init(&ts, XRXE_CTRL_CREATE_TM_SRQ, sizeof(ts));
			ts.srq.pd = pd;
			ts.srq.attr = s.attr;
			ts.cq = pd; /* a PD's handle is no CQ */
			ts.max_num_tags = 8;
			EXPECT("TM SRQ on a PD's handle as its CQ",
			       call(&a, &ts, sizeof(ts), NULL, 0, NULL, NULL, NULL), -EBADF);

			EXPECT("SRQ ring fd", (int)nr, 1);
			EXPECT("SRQ capacity >= 8", sr->attr.max_wr >= 8, 1);
			for (unsigned i = 0; i < nr; i++)
				close(rf[i]);
			hdr_init(&s, XRXE_CTRL_MODIFY_SRQ, sizeof(s));
			s.handle = sh;
			s.attr_mask = IBV_SRQ_LIMIT;
			s.attr.srq_limit = 100000;
			EXPECT("SRQ limit above capacity",
			       call(&a, &s, sizeof(s), NULL, 0, NULL, NULL, NULL), -EINVAL);
			s.attr_mask = IBV_SRQ_MAX_WR;
			s.attr.max_wr = 64;
			EXPECT("SRQ resize", call(&a, &s, sizeof(s), NULL, 0, NULL, NULL, NULL),
			       -EOPNOTSUPP);
			s.attr_mask = IBV_SRQ_LIMIT;
			s.attr.srq_limit = 2;
			EXPECT("SRQ limit", call(&a, &s, sizeof(s), NULL, 0, NULL, NULL, NULL), 0);
			EXPECT("modify another connection's SRQ",
			       call(&b, &s, sizeof(s), NULL, 0, NULL, NULL, NULL), -EBADF);
			hdr_init(&s, XRXE_CTRL_QUERY_SRQ, sizeof(s));
			s.handle = sh;
			st = call(&a, &s, sizeof(s), NULL, 0, &rep, NULL, NULL);
			EXPECT("query SRQ: limit 2", st ? st : (int)sr->attr.srq_limit, 2);
			EXPECT("destroy another connection's SRQ",
			       destroy(&b, XRXE_CTRL_DESTROY_SRQ, sh), -EBADF);
			EXPECT("dealloc PD in use by an SRQ", destroy(&a, XRXE_CTRL_DEALLOC_PD, pd),
			       -EBUSY);
			EXPECT("destroy SRQ", destroy(&a, XRXE_CTRL_DESTROY_SRQ, sh), 0);
		}
		hdr_init(&mc, XRXE_CTRL_ATTACH_MCAST, sizeof(mc));
		mc.qp = 0x12345;
		mc.gid.raw[0] = 0xff;
		EXPECT("attach a QP that is not ours",
		       call(&a, &mc, sizeof(mc), NULL, 0, NULL, NULL, NULL), -EBADF);
	}
	{
		/* IMPORT (ibv_import_pd/_mr): a typed lookup in the asking
		 * connection's own table, nothing else. */
		struct xrxe_ctrl_import im;
		struct xrxe_ctrl_import_reply *ir = (void *)&rep;

		hdr_init(&im, XRXE_CTRL_IMPORT, sizeof(im));
		im.type = XRXE_IMPORT_PD;
		im.handle = pd;
		st = call(&a, &im, sizeof(im), NULL, 0, &rep, NULL, NULL);
		EXPECT("import own PD", st ? st : (int)(ir->handle == pd), 1);
		EXPECT("import another connection's PD",
		       call(&b, &im, sizeof(im), NULL, 0, NULL, NULL, NULL), -ENOENT);
		im.type = XRXE_IMPORT_MR;
		EXPECT("import a PD's handle as an MR",
		       call(&a, &im, sizeof(im), NULL, 0, NULL, NULL, NULL), -ENOENT);
		im.type = 7;
		EXPECT("import of an unknown type",
		       call(&a, &im, sizeof(im), NULL, 0, NULL, NULL, NULL), -EINVAL);
		im.type = XRXE_IMPORT_PD;
		im.handle = 0xffffffffu;
		EXPECT("import of handle 0xffffffff",
		       call(&a, &im, sizeof(im), NULL, 0, NULL, NULL, NULL), -ENOENT);
		hdr_init(&im, XRXE_CTRL_IMPORT, sizeof(im) - 4);
		EXPECT("import request too short",
		       call(&a, &im, sizeof(im) - 4, NULL, 0, NULL, NULL, NULL), -EINVAL);
	}
	EXPECT("dealloc PD", destroy(&a, XRXE_CTRL_DEALLOC_PD, pd), 0);
	{
		/* The handle table through growth and reuse: 100 PDs, every other
		 * one freed, 50 more; each handle names exactly its own PD. */
		uint32_t h[150];
		int bad = 0;

		for (int i = 0; i < 100; i++)
			h[i] = simple_handle_op(&a, XRXE_CTRL_ALLOC_PD);
		for (int i = 0; i < 100; i += 2)
			bad += destroy(&a, XRXE_CTRL_DEALLOC_PD, h[i]) != 0;
		for (int i = 0; i < 100; i += 2)
			bad += destroy(&a, XRXE_CTRL_DEALLOC_PD, h[i]) != -EBADF; /* stale */
		for (int i = 100; i < 150; i++)
			h[i] = simple_handle_op(&a, XRXE_CTRL_ALLOC_PD);
		for (int i = 0; i < 150; i++)
			for (int j = i + 1; j < 150; j++)
				bad += (i % 2 || i >= 100) && (j % 2 || j >= 100) && h[i] == h[j];
		for (int i = 1; i < 150; i += (i < 100 ? 2 : 1))
			bad += destroy(&a, XRXE_CTRL_DEALLOC_PD, h[i]) != 0;
		EXPECT("150 PDs through table growth and reuse", bad, 0);
	}
	/* Ring slabs (abi.h struct xrxe_ring_loc) belong to one connection: one
	 * application's small rings share a file, two applications' never do. */
	{
		struct cq a1, a2, b1;

		create_cq(&a, 64, XRXE_NO_HANDLE, &a1);
		create_cq(&a, 64, XRXE_NO_HANDLE, &a2);
		create_cq(&b, 64, XRXE_NO_HANDLE, &b1);
		EXPECT("one application's two small CQ rings in one slab",
		       a1.ring.ino == a2.ring.ino &&
				       (uint8_t *)a1.ring.r - (uint8_t *)a1.ring.map !=
					       (uint8_t *)a2.ring.r - (uint8_t *)a2.ring.map
			       ? 0
			       : -1,
		       0);
		EXPECT("another application's CQ ring in a slab of its own",
		       b1.ring.ino != a1.ring.ino ? 0 : -1, 0);
		EXPECT("destroy a CQ of a slab", destroy(&a, XRXE_CTRL_DESTROY_CQ, a1.handle), 0);
		EXPECT("destroy it again", destroy(&a, XRXE_CTRL_DESTROY_CQ, a1.handle), -EBADF);
		EXPECT("destroy the other", destroy(&a, XRXE_CTRL_DESTROY_CQ, a2.handle), 0);
		EXPECT("destroy the other application's", destroy(&b, XRXE_CTRL_DESTROY_CQ,
								     b1.handle), 0);
	}
	/* still alive and answering */
	hdr_init(&m, XRXE_CTRL_STATS, sizeof(struct xrxe_ctrl_hdr));
	{
		int rf[XRXE_MAX_CTRL_FDS];
		unsigned nr = 0;

		st = call(&b, &m, sizeof(struct xrxe_ctrl_hdr), NULL, 0, &rep, rf, &nr);
		EXPECT("stats after all that", st, 0);
		for (unsigned i = 0; i < nr; i++)
			close(rf[i]);
	}
	printf("failures %d\n", fails);
	return fails ? 1 : 0;
#undef EXPECT
}

static int cmd_stats(const struct common *o)
{
	struct client c = { 0 };
	struct xrxe_ctrl_hdr req;
	union msg rep;
	int rf[XRXE_MAX_CTRL_FDS];
	unsigned nr = 0;
	uint64_t size;
	char *text;
	int st;

	c.sock = xrxe_ctrl_connect(o->ifname);
	if (c.sock < 0)
		die("connect: %s", strerror(-c.sock));
	hdr_init(&req, XRXE_CTRL_STATS, sizeof(req));
	req.flags = (uint16_t)((o->json ? XRXE_STATS_F_JSON : 0) | (o->qp ? XRXE_STATS_F_QP : 0));
	st = call(&c, &req, sizeof(req), NULL, 0, &rep, rf, &nr);
	if (st || nr != 1)
		die("STATS: %s", st ? strerror(-st) : "no fd");
	size = ((struct xrxe_ctrl_stats_reply *)&rep)->size;
	text = malloc(size + 1);
	if (!text || pread(rf[0], text, size, 0) != (ssize_t)size)
		die("STATS: reading the text");
	fwrite(text, 1, size, stdout);
	free(text);
	close(rf[0]);
	return 0;
}

/* --- data --------------------------------------------------------------------------- */

static void read_peer(const char *dir, const char *name, uint32_t *qpn, uint64_t *addr,
		      uint32_t *rkey)
{
	char path[512];
	uint64_t t0 = now_ms();
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.info", dir, name);
	while (!(f = fopen(path, "r"))) {
		if (now_ms() - t0 > 10000)
			die("%s did not appear", path);
		usleep(10000);
	}
	if (fscanf(f, "%u %" SCNx64 " %x", qpn, addr, rkey) != 3)
		die("%s: malformed", path);
	fclose(f);
}

static void fill(uint8_t *p, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

static bool check(const uint8_t *p, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(i * 7 + seed))
			return false;
	return true;
}

/* Side "a" sends count SENDs of size bytes and one RDMA WRITE; side "b"
 * receives and checks them, then acknowledges with one SEND of its own. */
static int cmd_rc(const struct common *o)
{
	bool sender = !strcmp(o->me, "a");
	uint32_t size = o->size, peer_qpn, peer_rkey;
	uint64_t peer_addr, t0;
	struct client c;
	struct cq cq;
	struct qp qp;
	struct mr mr;
	uint32_t pd;
	char path[512];

	if (!o->have_peer || !o->dir || !o->peer_name)
		die("rc: --peer-gid, --me, --peer and --dir are required");
	if (size > 65536)
		die("rc: --size at most 65536");
	client_open(&c, o->ifname);
	pd = simple_handle_op(&c, XRXE_CTRL_ALLOC_PD);
	reg_mr(&c, pd, 4u << 20, &mr);
	create_cq(&c, 256, XRXE_NO_HANDLE, &cq);
	create_qp(&c, pd, &cq, &qp);
	/* receive buffers first: a SEND may arrive as soon as the peer is RTS */
	for (unsigned i = 0; i < 32 && i < qp.cap.max_recv_wr; i++)
		post_recv(&qp, &mr, (uint64_t)i * 65536, 65536, 1000 + i);
	snprintf(path, sizeof(path), "%s/%s.info", o->dir, o->me);
	write_file(path, "%u %" PRIx64 " %x\n", qp.qpn, (uint64_t)(uintptr_t)mr.buf + (3u << 20),
		   mr.rkey);
	read_peer(o->dir, o->peer_name, &peer_qpn, &peer_addr, &peer_rkey);
	connect_qp(&c, &qp, &o->peer, o->gid_index, peer_qpn, 0, 0);
	printf("qpn %u peer_qpn %u\n", qp.qpn, peer_qpn);
	fflush(stdout);

	t0 = now_ms();
	if (sender) {
		unsigned next_recv = 0;

		/* wait for "b" to be ready (its info file is there, but its QP may
		 * not be RTR yet: RNR retry covers a SEND that comes early) */
		while (o->go && access(o->go, F_OK) != 0) {
			if (now_ms() - t0 > 60000)
				die("%s did not appear", o->go);
			usleep(10000);
		}
		for (unsigned i = 0; i < o->count; i++) {
			struct ibv_wc wc;

			fill(mr.buf + (2u << 20), size, i);
			post_send(&c, &qp, IBV_WR_SEND, &mr, 2u << 20, size, i, 0, 0);
			wc = poll_one(&cq, 5000);
			expect_wc(&wc, IBV_WC_SEND, i, "SEND");
		}
		fill(mr.buf + (2u << 20), size, 99);
		post_send(&c, &qp, IBV_WR_RDMA_WRITE, &mr, 2u << 20, size, 77, peer_addr, peer_rkey);
		struct ibv_wc wc = poll_one(&cq, 5000);

		expect_wc(&wc, IBV_WC_RDMA_WRITE, 77, "RDMA WRITE");
		/* b's acknowledgement */
		wc = poll_one(&cq, 5000);
		expect_wc(&wc, IBV_WC_RECV, 1000 + next_recv, "ack RECV");
		printf("sent %u sends of %u bytes and a write in %" PRIu64 " ms\n", o->count, size,
		       now_ms() - t0);
	} else {
		for (unsigned i = 0; i < o->count; i++) {
			struct ibv_wc wc = poll_one(&cq, 10000);
			uint32_t slot = i % 32;

			expect_wc(&wc, IBV_WC_RECV, 1000 + slot, "RECV");
			if (wc.byte_len != size || !check(mr.buf + (uint64_t)slot * 65536, size, i))
				die("RECV %u: %u bytes, content %s", i, wc.byte_len,
				    check(mr.buf + (uint64_t)slot * 65536, size, i) ? "ok" : "wrong");
			post_recv(&qp, &mr, (uint64_t)slot * 65536, 65536, 1000 + slot);
		}
		/* the WRITE lands without a completion here: wait for its bytes */
		while (!check(mr.buf + (3u << 20), size, 99)) {
			if (now_ms() - t0 > 10000)
				die("RDMA WRITE data never arrived");
			usleep(1000);
		}
		post_send(&c, &qp, IBV_WR_SEND, &mr, 0, 4, 55, 0, 0);
		struct ibv_wc wc = poll_one(&cq, 5000);

		expect_wc(&wc, IBV_WC_SEND, 55, "ack SEND");
		printf("received %u sends of %u bytes and a write, all intact\n", o->count, size);
		if (o->ready) {
			/* keep the QP (and its counters) until killed */
			write_file(o->ready, "done\n");
			for (;;)
				pause();
		}
	}
	return 0;
}

/* Two QPs in one process on one daemon, addressed by our own GID: frames go
 * through the daemon's loop queue, not the wire. */
static int cmd_loop(const struct common *o)
{
	struct client c;
	struct cq cq1, cq2;
	struct qp q1, q2;
	struct mr mr;
	struct xrxe_dev_page p;
	union ibv_gid self;
	uint32_t pd;
	int gi = -1;

	client_open(&c, o->ifname);
	read_page(&c, &p);
	/* our IPv4 GID (first IPv4-mapped entry) */
	for (int i = 1; i < XRXE_GID_TABLE_LEN && gi < 0; i++)
		if (p.gids[i].valid && p.gids[i].gid.raw[10] == 0xff && p.gids[i].gid.raw[11] == 0xff)
			gi = i;
	if (gi < 0)
		die("loop: no IPv4 GID");
	self = p.gids[gi].gid;
	pd = simple_handle_op(&c, XRXE_CTRL_ALLOC_PD);
	reg_mr(&c, pd, 1u << 20, &mr);
	create_cq(&c, 64, XRXE_NO_HANDLE, &cq1);
	create_cq(&c, 64, XRXE_NO_HANDLE, &cq2);
	create_qp(&c, pd, &cq1, &q1);
	create_qp(&c, pd, &cq2, &q2);
	post_recv(&q2, &mr, 0, 4096, 7);
	post_recv(&q1, &mr, 8192, 4096, 8);
	connect_qp(&c, &q1, &self, (uint8_t)gi, q2.qpn, 100, 200);
	connect_qp(&c, &q2, &self, (uint8_t)gi, q1.qpn, 200, 100);
	for (unsigned i = 0; i < o->count; i++) {
		struct ibv_wc wc;

		fill(mr.buf + 65536, 1000, i);
		post_send(&c, &q1, IBV_WR_SEND, &mr, 65536, 1000, i, 0, 0);
		wc = poll_one(&cq1, 5000);
		expect_wc(&wc, IBV_WC_SEND, i, "loop SEND");
		wc = poll_one(&cq2, 5000);
		expect_wc(&wc, IBV_WC_RECV, 7, "loop RECV");
		if (wc.byte_len != 1000 || !check(mr.buf, 1000, i))
			die("loop RECV %u: wrong data", i);
		post_recv(&q2, &mr, 0, 4096, 7);
	}
	printf("looped back %u sends\n", o->count);

	/* RESIZE_CQ with completions outstanding: three RECVs wait in cq2, the
	 * ring is replaced, and they come out of the new one in order. */
	for (unsigned i = 0; i < 3; i++)
		post_recv(&q2, &mr, 16384 + (uint64_t)i * 4096, 4096, 500 + i);
	for (unsigned i = 0; i < 3; i++) {
		struct ibv_wc wc;

		post_send(&c, &q1, IBV_WR_SEND, &mr, 65536, 100, 600 + i, 0, 0);
		wc = poll_one(&cq1, 5000);
		expect_wc(&wc, IBV_WC_SEND, 600 + i, "pre-resize SEND");
	}
	{
		struct xrxe_ctrl_create_cq req;
		struct xrxe_ctrl_create_cq_reply *r;
		union msg rep;
		int rfds[XRXE_MAX_CTRL_FDS];
		unsigned nr;
		int st;

		hdr_init(&req, XRXE_CTRL_RESIZE_CQ, sizeof(req));
		req.cqe = 200;
		req.channel = XRXE_NO_HANDLE;
		req.handle = cq2.handle;
		st = call(&c, &req, sizeof(req), NULL, 0, &rep, rfds, &nr);
		if (st || nr != 1)
			die("RESIZE_CQ: %s", st ? strerror(-st) : "no fd");
		r = (struct xrxe_ctrl_create_cq_reply *)&rep;
		munmap(cq2.ring.map, cq2.ring.map_len);
		ring_map(&cq2.ring, rfds[0], &r->ring);
		cq2.ring.idx = __atomic_load_n(&cq2.ring.r->consumer, __ATOMIC_ACQUIRE);
		if (r->cqe < 200)
			die("RESIZE_CQ: %u entries", r->cqe);
	}
	for (unsigned i = 0; i < 3; i++) {
		struct ibv_wc wc = poll_one(&cq2, 5000);

		/* the loop above left one receive (wr_id 7) posted ahead of ours */
		expect_wc(&wc, IBV_WC_RECV, i ? 500 + i - 1 : 7, "RECV across RESIZE_CQ");
	}
	printf("resized a CQ with 3 completions outstanding\n");
	return 0;
}


/* --- replay: another user with the victim's R_Key (issue 15, attack 5) --------- */

/* Our first IPv4-mapped GID and its index: the daemon's loopback. */
static int self_gid(const struct client *c, union ibv_gid *self)
{
	struct xrxe_dev_page p;

	read_page(c, &p);
	for (int i = 1; i < XRXE_GID_TABLE_LEN; i++)
		if (p.gids[i].valid && p.gids[i].gid.raw[10] == 0xff && p.gids[i].gid.raw[11] == 0xff) {
			*self = p.gids[i].gid;
			return i;
		}
	die("no IPv4 GID");
}

static uint32_t random_psn(void)
{
	uint32_t v = 0;

	while (!(v & 0xffffff)) /* 0 is a blind attacker's first guess */
		if (getentropy(&v, sizeof(v)))
			die("getentropy: %s", strerror(errno));
	return v & 0xffffff;
}

/* The victim: two RC QPs connected through the loopback with random PSNs
 * (as ibv_rc_pingpong picks them), an MR whose first 64 KiB hold a pattern.
 * Publishes QPN, address and R_Key in DIR/victim.info (all an attacker could
 * have learnt), waits for DIR/attacked, then checks that the pattern is
 * untouched and that both QPs still carry SENDs and an RDMA WRITE (a QP in
 * the error state would flush them). */
static int cmd_replay_victim(const struct common *o)
{
	struct client c;
	struct cq cq1, cq2;
	struct qp q1, q2;
	struct mr mr;
	union ibv_gid self;
	uint32_t pd, psn1 = random_psn(), psn2 = random_psn();
	char path[512];
	uint64_t t0;
	int gi;

	if (!o->dir)
		die("replay-victim: --dir is required");
	client_open(&c, o->ifname);
	gi = self_gid(&c, &self);
	pd = simple_handle_op(&c, XRXE_CTRL_ALLOC_PD);
	reg_mr(&c, pd, 1u << 20, &mr);
	fill(mr.buf, 65536, 42);
	create_cq(&c, 64, XRXE_NO_HANDLE, &cq1);
	create_cq(&c, 64, XRXE_NO_HANDLE, &cq2);
	create_qp(&c, pd, &cq1, &q1);
	create_qp(&c, pd, &cq2, &q2);
	connect_qp(&c, &q1, &self, (uint8_t)gi, q2.qpn, psn1, psn2);
	connect_qp(&c, &q2, &self, (uint8_t)gi, q1.qpn, psn2, psn1);
	snprintf(path, sizeof(path), "%s/victim.info", o->dir);
	write_file(path, "%u %" PRIx64 " %x\n", q2.qpn, (uint64_t)(uintptr_t)mr.buf, mr.rkey);
	printf("victim qpn %u rkey 0x%x\n", q2.qpn, mr.rkey);

	snprintf(path, sizeof(path), "%s/attacked", o->dir);
	t0 = now_ms();
	while (access(path, F_OK) != 0) {
		if (now_ms() - t0 > 120000)
			die("the attack never finished");
		usleep(10000);
	}
	if (!check(mr.buf, 65536, 42))
		die("the victim's MR was written by someone else");
	printf("victim_mr intact\n");
	for (unsigned i = 0; i < 5; i++) {
		struct ibv_wc wc;

		post_recv(&q2, &mr, 128u << 10, 4096, 70 + i);
		fill(mr.buf + (256u << 10), 1000, i);
		post_send(&c, &q1, IBV_WR_SEND, &mr, 256u << 10, 1000, i, 0, 0);
		wc = poll_one(&cq1, 10000);
		expect_wc(&wc, IBV_WC_SEND, i, "victim SEND after the attack");
		wc = poll_one(&cq2, 10000);
		expect_wc(&wc, IBV_WC_RECV, 70 + i, "victim RECV after the attack");
		if (!check(mr.buf + (128u << 10), 1000, i))
			die("victim RECV %u: wrong data", i);
	}
	fill(mr.buf + (256u << 10), 4096, 9);
	post_send(&c, &q1, IBV_WR_RDMA_WRITE, &mr, 256u << 10, 4096, 99,
		  (uintptr_t)mr.buf + (512u << 10), mr.rkey);
	{
		struct ibv_wc wc = poll_one(&cq1, 10000);

		expect_wc(&wc, IBV_WC_RDMA_WRITE, 99, "victim RDMA WRITE after the attack");
	}
	if (!check(mr.buf + (512u << 10), 4096, 9))
		die("victim RDMA WRITE: wrong data");
	printf("victim_qps work\n");
	return 0;
}

/* One RDMA WRITE of 4 KiB of 0xee to (addr, rkey) from qp; returns the
 * completion status (enum ibv_wc_status). */
static int attack_write(struct client *c, const struct mr *mr, struct cq *cq, struct qp *qp,
			uint64_t addr, uint32_t rkey)
{
	struct ibv_wc wc;

	memset(mr->buf, 0xee, 4096);
	post_send(c, qp, IBV_WR_RDMA_WRITE, mr, 0, 4096, 1, addr, rkey);
	wc = poll_one(cq, 60000);
	return wc.status;
}

/* The attacker, another user: with the victim's QPN, address and R_Key from
 * DIR/victim.info, (1) WRITE through a loopback QP pair of its own, (2) WRITE
 * from a QP of its own aimed at the victim's QP, with the right R_Key and
 * (3) with a wrong one. Prints "own_pd STATUS", "victim_qp STATUS",
 * "victim_qp_wrong_key STATUS" (enum ibv_wc_status), then writes
 * DIR/attacked. */
static int cmd_replay_attack(const struct common *o)
{
	struct client c;
	struct cq cq;
	struct mr mr;
	struct qp a1, a2, a3, a4;
	union ibv_gid self;
	uint32_t pd, vqpn, vrkey;
	uint64_t vaddr;
	char path[512];
	int st, gi;

	if (!o->dir)
		die("replay-attack: --dir is required");
	read_peer(o->dir, "victim", &vqpn, &vaddr, &vrkey);
	client_open(&c, o->ifname);
	gi = self_gid(&c, &self);
	pd = simple_handle_op(&c, XRXE_CTRL_ALLOC_PD);
	reg_mr(&c, pd, 1u << 20, &mr);
	create_cq(&c, 64, XRXE_NO_HANDLE, &cq);

	/* (1) a pair of our own: a2 answers, and looks the R_Key up in its
	 * own PD */
	create_qp(&c, pd, &cq, &a1);
	create_qp(&c, pd, &cq, &a2);
	connect_qp(&c, &a1, &self, (uint8_t)gi, a2.qpn, 0, 0);
	connect_qp(&c, &a2, &self, (uint8_t)gi, a1.qpn, 0, 0);
	st = attack_write(&c, &mr, &cq, &a1, vaddr, vrkey);
	printf("own_pd %d\n", st);
	fflush(stdout);
	/* (2), (3) at the victim's QP, with a blind guess of its PSNs: the
	 * attacker cannot read them (per-QP statistics show one's own QPs) */
	create_qp(&c, pd, &cq, &a3);
	connect_qp(&c, &a3, &self, (uint8_t)gi, vqpn, 0, 0);
	st = attack_write(&c, &mr, &cq, &a3, vaddr, vrkey);
	printf("victim_qp %d\n", st);
	fflush(stdout);
	create_qp(&c, pd, &cq, &a4);
	connect_qp(&c, &a4, &self, (uint8_t)gi, vqpn, 0, 0);
	st = attack_write(&c, &mr, &cq, &a4, vaddr, vrkey ^ 0x5a5a5a5a);
	printf("victim_qp_wrong_key %d\n", st);
	snprintf(path, sizeof(path), "%s/attacked", o->dir);
	write_file(path, "done\n");
	return 0;
}

/* --- hog: one user trying to take a resource from the others ------------------ */

/* Create WHAT until the daemon refuses (or max): prints "made N" and "errno
 * NAME" (the refusal). conns: connections without HELLO, counted as alive
 * once the daemon had time to refuse (close) the extra ones; bigmr: one
 * 1 TiB registration. With --ready FILE: write FILE, then hold everything
 * until killed. */
static int cmd_hog(const struct common *o, const char *what)
{
	unsigned max = o->count ? o->count : 100000, made = 0;
	int err = 0;

	if (!strcmp(what, "hugememfd")) {
		/* HELLO with a hugetlbfs memfd: its pages can vanish under the
		 * daemon (SIGBUS), so it must be refused */
		struct xrxe_ctrl_hello req;
		int pfd[2], fds[2], sock, st;
		struct client c = { 0 };

		fds[0] = memfd_create("xrxe-huge", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
		if (fds[0] < 0) {
			printf("errno SKIP-%s\n", strerrorname_np(errno));
			return 0;
		}
		if (pipe2(pfd, O_CLOEXEC) < 0)
			die("pipe: %s", strerror(errno));
		sock = xrxe_ctrl_connect(o->ifname);
		if (sock < 0)
			die("connect: %s", strerror(-sock));
		c.sock = sock;
		hdr_init(&req, XRXE_CTRL_HELLO, sizeof(req));
		req.abi_version = XRXE_ABI_VERSION;
		fds[1] = pfd[1];
		st = call(&c, &req, sizeof(req), fds, 2, NULL, NULL, NULL);
		printf("errno %s\n", st ? strerrorname_np(-st) : "0");
		return 0;
	}
	if (!strcmp(what, "conns")) {
		static int socks[4096];

		if (max > 4096)
			max = 4096;
		for (; made < max; made++) {
			socks[made] = xrxe_ctrl_connect(o->ifname);
			if (socks[made] < 0) {
				err = socks[made];
				break;
			}
		}
		usleep(500 * 1000);
		unsigned alive = 0;

		for (unsigned i = 0; i < made; i++) {
			struct pollfd p = { .fd = socks[i], .events = POLLIN };

			if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLIN)))
				continue; /* closed by the daemon */
			alive++;
		}
		printf("made %u\nalive %u\nerrno %s\n", made, alive, err ? strerrorname_np(-err) : "0");
	} else {
		struct client c;
		union msg rep;
		uint32_t pd = 0;
		int rfds[XRXE_MAX_CTRL_FDS];
		unsigned nr;

		client_open(&c, o->ifname);
		if (strcmp(what, "pd") && strcmp(what, "xrcd"))
			pd = simple_handle_op(&c, XRXE_CTRL_ALLOC_PD);
		for (; made < max && !err; made++) {
			nr = 0;
			if (!strcmp(what, "pd")) {
				struct xrxe_ctrl_hdr req;

				hdr_init(&req, XRXE_CTRL_ALLOC_PD, sizeof(req));
				err = call(&c, &req, sizeof(req), NULL, 0, &rep, rfds, &nr);
			} else if (!strcmp(what, "cq")) {
				struct xrxe_ctrl_create_cq req;

				hdr_init(&req, XRXE_CTRL_CREATE_CQ, sizeof(req));
				req.cqe = 16;
				req.channel = XRXE_NO_HANDLE;
				req.handle = XRXE_NO_HANDLE;
				err = call(&c, &req, sizeof(req), NULL, 0, &rep, rfds, &nr);
			} else if (!strcmp(what, "channel")) {
				struct xrxe_ctrl_hdr req;
				int pfd[2];

				if (pipe2(pfd, O_CLOEXEC) < 0)
					die("pipe: %s", strerror(errno));
				hdr_init(&req, XRXE_CTRL_CREATE_CHANNEL, sizeof(req));
				err = call(&c, &req, sizeof(req), &pfd[1], 1, &rep, rfds, &nr);
				close(pfd[1]); /* the read end stays: the channel stays usable */
			} else if (!strcmp(what, "mr") || !strcmp(what, "bigmr")) {
				struct xrxe_ctrl_reg_mr req;
				/* sparse offsets of the registered-memory file */
				uint64_t len = !strcmp(what, "bigmr") ? 1ull << 40 : 4096;
				uint64_t addr = (1ull << 32) + (uint64_t)made * 8192;

				hdr_init(&req, XRXE_CTRL_REG_MR, sizeof(req));
				req.pd = pd;
				req.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
				req.addr = req.iova = addr;
				req.length = len;
				err = call(&c, &req, sizeof(req), NULL, 0, &rep, rfds, &nr);
				/* the keys, for a look at how guessable they are */
				if (!err)
					printf("rkey 0x%08x\n",
					       ((struct xrxe_ctrl_reg_mr_reply *)&rep)->rkey);
			} else if (!strcmp(what, "qp")) {
				struct cq cq;
				struct xrxe_ctrl_create_qp req;

				if (!made)
					create_cq(&c, 64, XRXE_NO_HANDLE, &cq);
				hdr_init(&req, XRXE_CTRL_CREATE_QP, sizeof(req));
				req.pd = pd;
				req.send_cq = req.recv_cq = 0;
				req.srq = XRXE_NO_HANDLE;
				req.qp_type = IBV_QPT_UD;
				req.cap = (struct ibv_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4,
							       .max_send_sge = 1, .max_recv_sge = 1 };
				static uint32_t cqh;

				if (!made)
					cqh = cq.handle;
				req.send_cq = req.recv_cq = cqh;
				err = call(&c, &req, sizeof(req), NULL, 0, &rep, rfds, &nr);
			} else if (!strcmp(what, "xrcd")) {
				/* a new XRC domain each time: a file of its own */
				struct xrxe_ctrl_open_xrcd req;
				int mfd = memfd_create("hog-xrcd", MFD_CLOEXEC);

				if (mfd < 0)
					die("memfd_create: %s", strerror(errno));
				hdr_init(&req, XRXE_CTRL_OPEN_XRCD, sizeof(req));
				req.oflags = O_CREAT;
				err = call(&c, &req, sizeof(req), &mfd, 1, &rep, rfds, &nr);
				close(mfd);
			} else {
				die("hog: %s is not pd, xrcd, cq, channel, mr, bigmr, qp or conns", what);
			}
			/* rings: the mapping is not needed, the object is */
			for (unsigned i = 0; i < nr; i++)
				close(rfds[i]);
		}
		if (err)
			made--;
		printf("made %u\nerrno %s\n", made, err ? strerrorname_np(-err) : "0");
	}
	if (o->ready) {
		write_file(o->ready, "ready\n");
		pause();
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ctrl_client gids IFACE\n"
		"       ctrl_client wait-gid IFACE GID present|absent MS\n"
		"       ctrl_client setup IFACE --peer-gid G [--gid-index N] [--dest-qpn N] [--ready FILE]\n"
		"       ctrl_client bad IFACE\n"
		"       ctrl_client rc IFACE --peer-gid G --me a|b --peer b|a --dir DIR [--count N] [--size N]\n"
		"       ctrl_client loop IFACE [--count N]\n"
		"       ctrl_client replay-victim IFACE --dir DIR\n"
		"       ctrl_client replay-attack IFACE --dir DIR\n"
		"       ctrl_client stats IFACE [--json] [--qp]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "peer-gid", required_argument, NULL, 'p' },
		{ "gid-index", required_argument, NULL, 'g' },
		{ "dest-qpn", required_argument, NULL, 'd' },
		{ "ready", required_argument, NULL, 'r' },
		{ "go", required_argument, NULL, 'G' },
		{ "me", required_argument, NULL, 'm' },
		{ "peer", required_argument, NULL, 'P' },
		{ "dir", required_argument, NULL, 'D' },
		{ "count", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "qp", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ 0 },
	};
	struct common o = { .gid_index = 1, .count = 10, .size = 1000 };
	const char *cmd;
	int c;

	if (argc < 3)
		usage();
	cmd = argv[1];
	o.ifname = argv[2];
	optind = 3;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!gid_parse(optarg, &o.peer))
				die("%s: not a GID or address", optarg);
			o.have_peer = true;
			break;
		case 'g':
			o.gid_index = (uint8_t)atoi(optarg);
			break;
		case 'd':
			o.dest_qpn = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			o.ready = optarg;
			break;
		case 'G':
			o.go = optarg;
			break;
		case 'm':
			o.me = optarg;
			break;
		case 'P':
			o.peer_name = optarg;
			break;
		case 'D':
			o.dir = optarg;
			break;
		case 'c':
			o.count = (unsigned)atoi(optarg);
			break;
		case 's':
			o.size = (uint32_t)atoi(optarg);
			break;
		case 'j':
			o.json = true;
			break;
		case 'q':
			o.qp = true;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage();
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "gids"))
		return cmd_gids(o.ifname);
	if (!strcmp(cmd, "wait-gid")) {
		if (optind + 3 != argc)
			usage();
		return cmd_wait_gid(o.ifname, argv[optind], argv[optind + 1],
				    (unsigned)atoi(argv[optind + 2]));
	}
	if (!strcmp(cmd, "setup"))
		return cmd_setup(&o);
	if (!strcmp(cmd, "bad"))
		return cmd_bad(o.ifname);
	if (!strcmp(cmd, "rc"))
		return cmd_rc(&o);
	if (!strcmp(cmd, "loop"))
		return cmd_loop(&o);
	if (!strcmp(cmd, "replay-victim"))
		return cmd_replay_victim(&o);
	if (!strcmp(cmd, "replay-attack"))
		return cmd_replay_attack(&o);
	if (!strcmp(cmd, "stats"))
		return cmd_stats(&o);
	if (!strcmp(cmd, "hog")) {
		if (optind + 1 != argc)
			usage();
		return cmd_hog(&o, argv[optind]);
	}
	usage();
}
