/* SPDX-License-Identifier: MIT */
/*
 * Completion queues and completion channels.
 *
 * The CQ ring (abi.h) is produced by the daemon and consumed here without a
 * syscall: load-acquire the producer, copy the CQEs out, store-release the
 * consumer (docs/facts/rxe.md §4.2). Arming is a store into ring->notify; the daemon
 * exchanges it back to 0 when it writes the CQ handle into the channel's
 * pipe, whose read end is the channel fd the application polls.
 *
 * Every CQ is allocated as struct ibv_cq_ex, so the same object serves
 * ibv_create_cq and ibv_create_cq_ex (whose ibv_cq_ex_to_cq is a cast).
 */
#include "verbs/shim.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define XRXE_WC_FLAGS_SUPPORTED                                                            \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |               \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |                     \
	 IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                 \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK | IBV_WC_EX_WITH_TM_INFO)

static inline const struct xrxe_cqe *cqe_at(const struct xrxe_cq *cq, uint32_t idx)
{
	return xrxe_ring_slot(cq->ring, idx, cq->mask, cq->log2_elem);
}

/* --- polling -------------------------------------------------------------------- */

/* A busy-polling application (perftest) would spin forever on a CQ whose
 * daemon died. Every XRXE_DEAD_CHECK_EVERY empty polls, look (without
 * blocking) whether the control connection was hung up: one syscall per ~64k
 * empty polls, nothing on the hot path. Once known, every poll fails. */
static bool daemon_gone(struct xrxe_cq *cq)
{
	struct xrxe_conn *conn = &to_xctx(cq->cqx.context)->conn;

	if (atomic_load_explicit(&conn->gone, memory_order_relaxed))
		return true;
	if (++cq->empty_polls % XRXE_DEAD_CHECK_EVERY)
		return false;
	return xrxe_conn_hung_up(conn);
}

/* An application busy-polling an empty CQ holds its CPU. When a daemon (its
 * own, or another on this host) is runnable on that CPU, it waits for the
 * scheduler to preempt the poller, a slice of milliseconds under CFS/EEVDF,
 * before it can produce the very completion being polled for; kernel rxe
 * never waits, it runs in softirq context (docs/architecture.md,
 * "Threading"). So after XRXE_POLL_YIELD_EVERY consecutive empty polls
 * (a few microseconds of spinning), give the CPU up once: with nothing else
 * runnable sched_yield returns at once; otherwise the waiting task runs now.
 * Only the empty path makes this syscall; a poll that finds work never does. */
#define XRXE_POLL_YIELD_EVERY 256

/* Is this device's daemon runnable, not running, on the CPU we poll on (abi.h
 * daemon_cpu, daemon_sleeping)? Then it is the one we wait for, and every
 * empty poll only delays it: yield at once. Application and daemon of one
 * host on one core then take turns without a wake-up between them. */
static bool daemon_waits_here(const struct xrxe_cq *cq)
{
	const struct xrxe_dev_page *page = to_xctx(cq->cqx.context)->page;
	uint32_t cpu = __atomic_load_n(&page->daemon_cpu, __ATOMIC_RELAXED);

	return cpu && !__atomic_load_n(&page->daemon_sleeping, __ATOMIC_RELAXED) &&
	       (int)cpu - 1 == sched_getcpu();
}

static void idle_poll(struct xrxe_cq *cq)
{
	if (++cq->empty_run % XRXE_POLL_YIELD_EVERY == 0 || daemon_waits_here(cq))
		sched_yield();
}

int xrxe_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct xrxe_cq *cq = to_xcq(ibcq);
	uint32_t prod, cons;
	int n = 0;

	if (ne <= 0)
		return 0;
	pthread_spin_lock(&cq->lock);
	/* acquire: the CQE contents written before the producer are visible */
	prod = xrxe_ring_load_producer(cq->ring, cq->mask);
	cons = cq->cons;
	while (n < ne && cons != prod) {
		memcpy(&wc[n], &cqe_at(cq, cons)->wc, sizeof(*wc));
		if (wc[n].wc_flags & IBV_WC_GRH) /* UD receive: its L3 type */
			wc[n].sl = xrxe_ud_l3_sl(to_xctx(ibcq->context), &wc[n]);
		cons = (cons + 1) & cq->mask;
		n++;
	}
	if (n) {
		cq->cons = cons;
		/* release: our reads of the slots are done before the daemon may
		 * reuse them */
		xrxe_ring_publish_consumer(cq->ring, cons, cq->mask);
	}
	pthread_spin_unlock(&cq->lock);
	if (n) {
		cq->empty_run = 0;
		return n;
	}
	idle_poll(cq);
	if (daemon_gone(cq)) {
		if (!cq->gone_reported)
			shim_err("%s: the xrxe daemon is gone; completions will never arrive",
				 ibcq->context->device->name);
		cq->gone_reported = true;
		errno = ECONNRESET;
		return -1; /* ibv_poll_cq: a negative value is an error */
	}
	return n;
}

int xrxe_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct xrxe_cq *cq = to_xcq(ibcq);
	uint32_t *notify = &cq->ring->notify;

	/* seq_cst (a locked instruction on x86): the arm must be globally visible
	 * before the application's next poll reads the producer, pairing with
	 * the daemon's producer store + exchange on notify. Otherwise a CQE
	 * written in between could be neither polled nor signalled. */
	if (!solicited_only) {
		__atomic_store_n(notify, XRXE_CQ_NOTIFY_NEXT, __ATOMIC_SEQ_CST);
	} else {
		/* "next solicited" never weakens an existing "next" arm */
		uint32_t expect = XRXE_CQ_NOTIFY_NONE;

		__atomic_compare_exchange_n(notify, &expect, XRXE_CQ_NOTIFY_SOLICITED, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	/* The store-load half of the Dekker pair: the daemon's side is the
	 * fence in src/transport/cq.c cq_notify(). A seq_cst store alone does
	 * not order a later non-seq_cst load in the C11 model. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

/* --- extended polling (ibv_start_poll & co.) ---------------------------------- */

static inline struct xrxe_cq *cqx_to_xcq(struct ibv_cq_ex *c)
{
	return (struct xrxe_cq *)(void *)c;
}

/* Take the entry at the private consumer, if any; it counts as consumed
 * (published by end_poll). */
static bool cqx_take(struct xrxe_cq *cq)
{
	uint32_t prod = xrxe_ring_load_producer(cq->ring, cq->mask);

	if (cq->cons == prod)
		return false;
	cq->cur = cqe_at(cq, cq->cons);
	cq->cons = (cq->cons + 1) & cq->mask;
	cq->cqx.status = cq->cur->wc.status;
	cq->cqx.wr_id = cq->cur->wc.wr_id;
	cq->cur_sl = cq->cur->wc.wc_flags & IBV_WC_GRH
			     ? xrxe_ud_l3_sl(to_xctx(cq->cqx.context), &cq->cur->wc)
			     : cq->cur->wc.sl;
	return true;
}

static int cqx_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	struct xrxe_cq *cq = cqx_to_xcq(c);

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	if (!cqx_take(cq)) {
		/* ENOENT: the caller must not call end_poll */
		pthread_spin_unlock(&cq->lock);
		idle_poll(cq);
		/* a dead daemon is an error, not "empty" forever (as poll_cq) */
		return daemon_gone(cq) ? EIO : ENOENT;
	}
	cq->empty_run = 0;
	return 0;
}

static int cqx_next_poll(struct ibv_cq_ex *c)
{
	return cqx_take(cqx_to_xcq(c)) ? 0 : ENOENT;
}

static void cqx_end_poll(struct ibv_cq_ex *c)
{
	struct xrxe_cq *cq = cqx_to_xcq(c);

	xrxe_ring_publish_consumer(cq->ring, cq->cons, cq->mask);
	cq->cur = NULL;
	pthread_spin_unlock(&cq->lock);
}

#define CQX_READ(name, type, expr)                                \
	static type cqx_read_##name(struct ibv_cq_ex *c)          \
	{                                                         \
		const struct xrxe_cqe *e = cqx_to_xcq(c)->cur;    \
		return (type)(expr);                              \
	}

CQX_READ(opcode, enum ibv_wc_opcode, e->wc.opcode)
CQX_READ(vendor_err, uint32_t, e->wc.vendor_err)
CQX_READ(byte_len, uint32_t, e->wc.byte_len)
CQX_READ(imm_data, __be32, e->wc.imm_data)
CQX_READ(qp_num, uint32_t, e->wc.qp_num)
CQX_READ(src_qp, uint32_t, e->wc.src_qp)
CQX_READ(wc_flags, unsigned int, e->wc.wc_flags)
CQX_READ(slid, uint32_t, e->wc.slid)
static uint8_t cqx_read_sl(struct ibv_cq_ex *c)
{
	return cqx_to_xcq(c)->cur_sl;
}
CQX_READ(dlid_path_bits, uint8_t, e->wc.dlid_path_bits)
CQX_READ(completion_ts, uint64_t, e->timestamp_ns)

/* The CQE carries the daemon's CLOCK_MONOTONIC (the "HCA clock" of
 * query_device_ex, 1 GHz); wall-clock time is the same instant on
 * CLOCK_REALTIME, both clocks being the host's. */
static uint64_t cqx_read_completion_wallclock_ns(struct ibv_cq_ex *c)
{
	const struct xrxe_cqe *e = cqx_to_xcq(c)->cur;
	struct timespec rt, mono;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	return e->timestamp_ns + ((uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec) -
	       ((uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec);
}

static uint16_t cqx_read_cvlan(struct ibv_cq_ex *c)
{
	(void)c;
	return 0;
}

static uint32_t cqx_read_flow_tag(struct ibv_cq_ex *c)
{
	(void)c;
	return 0;
}

/* Tag matching completions (abi.h xrxe_cqe.tm_tag): the tag, and the TMH's
 * app_ctx that the daemon puts in imm_data of IBV_WC_TM_* completions */
static void cqx_read_tm_info(struct ibv_cq_ex *c, struct ibv_wc_tm_info *tm)
{
	const struct xrxe_cqe *e = cqx_to_xcq(c)->cur;

	memset(tm, 0, sizeof(*tm));
	tm->tag = e->tm_tag;
	if (e->wc.opcode >= IBV_WC_TM_ADD && e->wc.opcode <= IBV_WC_TM_NO_TAG)
		tm->priv = e->wc.imm_data;
}

/* --- create / destroy / resize -------------------------------------------------- */

/* domain: the parent domain whose allocator the CQ's memory comes from, or
 * NULL (domain.c). */
static struct xrxe_cq *cq_create(struct ibv_context *context, int cqe, void *cq_context,
				 struct ibv_comp_channel *channel, int comp_vector,
				 struct ibv_pd *domain)
{
	struct xrxe_context *ctx = to_xctx(context);
	struct xrxe_ctrl_create_cq req;
	struct xrxe_ctrl_create_cq_reply rep;
	struct xrxe_wq map;
	struct xrxe_cq *cq;
	unsigned int nfd = 1;
	int fd, ret;

	if (cqe <= 0 || cqe > XRXE_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors ||
	    (channel && channel->context != context))
		return xrxe_null_errno(EINVAL);
	cq = xrxe_domain_alloc(domain, sizeof(*cq), XRXE_DOMAIN_RES_CQ);
	if (!cq)
		return xrxe_null_errno(ENOMEM);
	cq->domain = domain;
	memset(&req, 0, sizeof(req));
	req.cqe = (uint32_t)cqe;
	req.channel = channel ? xrxe_container_of(channel, struct xrxe_channel, ch)->handle
			      : XRXE_NO_HANDLE;
	req.handle = XRXE_NO_HANDLE;
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_CREATE_CQ, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), &fd, &nfd);
	if (ret)
		goto fail;
	if (nfd != 1) {
		ret = -EPROTO;
		goto fail_destroy;
	}
	ret = xrxe_wq_map(ctx, &map, fd, &rep.ring, sizeof(struct xrxe_cqe));
	if (ret)
		goto fail_destroy;
	cq->ring = map.ring;
	cq->map_len = map.map_len;
	cq->slab = map.slab;
	cq->mask = map.mask;
	cq->log2_elem = map.log2_elem;
	cq->cons = xrxe_ring_load_consumer(map.ring, map.mask);
	pthread_spin_destroy(&map.lock); /* xrxe_wq_map made one; the CQ has its own */
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);

	cq->cqx.context = context;
	cq->cqx.channel = channel;
	cq->cqx.cq_context = cq_context;
	cq->cqx.handle = rep.handle;
	cq->cqx.cqe = (int)rep.cqe;
	pthread_mutex_init(&cq->cqx.mutex, NULL);
	pthread_cond_init(&cq->cqx.cond, NULL);
	if (channel) {
		pthread_mutex_lock(&context->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&context->mutex);
	}
	xrxe_obj_add(ctx, &cq->obj, XRXE_OBJ_CQ, rep.handle, cq);
	return cq;

fail_destroy:
	xrxe_ctrl_destroy(ctx, XRXE_CTRL_DESTROY_CQ, rep.handle);
fail:
	xrxe_domain_free(domain, cq, XRXE_DOMAIN_RES_CQ);
	return xrxe_null_errno(-ret);
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct xrxe_cq *cq = cq_create(context, cqe, cq_context, channel, comp_vector, NULL);

	return cq ? ibv_cq_ex_to_cq(&cq->cqx) : NULL;
}

struct ibv_cq_ex *xrxe_create_cq_ex_op(struct ibv_context *context,
				       struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_pd *domain = NULL;
	struct xrxe_cq *cq;

	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
		return xrxe_null_errno(EINVAL);
	if (attr->wc_flags & ~(uint64_t)XRXE_WC_FLAGS_SUPPORTED)
		return xrxe_null_errno(EOPNOTSUPP);
	if (attr->cqe > INT32_MAX)
		return xrxe_null_errno(EINVAL);
	/* IBV_CREATE_CQ_ATTR_SINGLE_THREADED / IGNORE_OVERRUN are hints. A
	 * parent domain (IBV_CQ_INIT_ATTR_MASK_PD) gives the CQ's memory its
	 * allocator; it must be one (ibv_create_cq_ex(3)), of this context. */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		if (!attr->parent_domain || attr->parent_domain->context != context ||
		    !xrxe_container_of(attr->parent_domain, struct xrxe_pd, pd)->protection)
			return xrxe_null_errno(EINVAL);
		domain = attr->parent_domain;
	}
	cq = cq_create(context, (int)attr->cqe, attr->cq_context, attr->channel,
		       (int)attr->comp_vector, domain);
	if (!cq)
		return NULL;
	cq->wc_flags = attr->wc_flags;
	cq->cqx.start_poll = cqx_start_poll;
	cq->cqx.next_poll = cqx_next_poll;
	cq->cqx.end_poll = cqx_end_poll;
	cq->cqx.read_opcode = cqx_read_opcode;
	cq->cqx.read_vendor_err = cqx_read_vendor_err;
	cq->cqx.read_wc_flags = cqx_read_wc_flags;
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		cq->cqx.read_byte_len = cqx_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		cq->cqx.read_imm_data = cqx_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		cq->cqx.read_qp_num = cqx_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		cq->cqx.read_src_qp = cqx_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		cq->cqx.read_slid = cqx_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		cq->cqx.read_sl = cqx_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		cq->cqx.read_dlid_path_bits = cqx_read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		cq->cqx.read_completion_ts = cqx_read_completion_ts;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		cq->cqx.read_completion_wallclock_ns = cqx_read_completion_wallclock_ns;
	/* Harmless constants for the unsupported readers, rather than NULL
	 * pointers an application might call unconditionally. */
	cq->cqx.read_cvlan = cqx_read_cvlan;
	cq->cqx.read_flow_tag = cqx_read_flow_tag;
	cq->cqx.read_tm_info = cqx_read_tm_info;
	return &cq->cqx;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct xrxe_cq *cq = to_xcq(ibcq);
	struct ibv_comp_channel *channel = ibcq->channel;
	int ret;

	/* EBUSY while QPs still use it */
	ret = xrxe_ctrl_destroy(to_xctx(ibcq->context), XRXE_CTRL_DESTROY_CQ, ibcq->handle);
	if (ret)
		return -ret;
	xrxe_obj_del(to_xctx(ibcq->context), &cq->obj);
	if (channel) {
		pthread_mutex_lock(&ibcq->context->mutex);
		channel->refcnt--;
		pthread_mutex_unlock(&ibcq->context->mutex);
	}
	xrxe_ring_unmap(to_xctx(ibcq->context), cq->slab, cq->ring, cq->map_len);
	pthread_spin_destroy(&cq->lock);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	xrxe_domain_free(cq->domain, cq, XRXE_DOMAIN_RES_CQ);
	return 0;
}

int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct xrxe_cq *cq = to_xcq(ibcq);
	struct xrxe_context *ctx = to_xctx(ibcq->context);
	struct xrxe_ctrl_create_cq req;
	struct xrxe_ctrl_create_cq_reply rep;
	struct xrxe_wq map;
	unsigned int nfd = 1;
	int fd, ret;

	if (cqe <= 0 || cqe > XRXE_MAX_CQE)
		return EINVAL;
	memset(&req, 0, sizeof(req));
	req.cqe = (uint32_t)cqe;
	req.channel = XRXE_NO_HANDLE;
	req.handle = ibcq->handle;
	/* Held across the round trip: the daemon moves the unpolled CQEs into
	 * the new ring, so nobody may consume from the old one meanwhile. */
	pthread_spin_lock(&cq->lock);
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_RESIZE_CQ, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), &fd, &nfd);
	if (!ret && nfd != 1)
		ret = -EPROTO;
	if (!ret)
		ret = xrxe_wq_map(ctx, &map, fd, &rep.ring, sizeof(struct xrxe_cqe));
	if (!ret) {
		pthread_spin_destroy(&map.lock);
		xrxe_ring_unmap(ctx, cq->slab, cq->ring, cq->map_len);
		cq->ring = map.ring;
		cq->map_len = map.map_len;
		cq->slab = map.slab;
		cq->mask = map.mask;
		cq->log2_elem = map.log2_elem;
		cq->cons = xrxe_ring_load_consumer(map.ring, map.mask);
		ibcq->cqe = (int)rep.cqe;
	}
	pthread_spin_unlock(&cq->lock);
	return -ret;
}

/* --- completion channels ---------------------------------------------------------- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct xrxe_context *ctx = to_xctx(context);
	struct xrxe_ctrl_hdr req; /* CREATE_CHANNEL: the header alone */
	struct xrxe_ctrl_handle rep;
	struct xrxe_channel *ch;
	int p[2], ret;

	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return xrxe_null_errno(ENOMEM);
	/* The daemon gets the write end and writes one u32 CQ handle per event;
	 * the read end is the pollable fd of the verbs API. */
	if (pipe2(p, O_CLOEXEC) < 0) {
		free(ch);
		return NULL;
	}
	ret = xrxe_conn_call(&ctx->conn, XRXE_CTRL_CREATE_CHANNEL, &req, sizeof(req), &p[1], 1,
			     &rep, sizeof(rep), NULL, NULL);
	close(p[1]);
	if (ret) {
		close(p[0]);
		free(ch);
		return xrxe_null_errno(-ret);
	}
	ch->ch.context = context;
	ch->ch.fd = p[0];
	ch->ch.refcnt = 0;
	ch->handle = rep.handle;
	return &ch->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct xrxe_channel *ch = xrxe_container_of(channel, struct xrxe_channel, ch);
	struct ibv_context *context = channel->context;
	int ret;

	pthread_mutex_lock(&context->mutex);
	ret = channel->refcnt ? EBUSY : 0;
	pthread_mutex_unlock(&context->mutex);
	if (ret)
		return ret;
	ret = xrxe_ctrl_destroy(to_xctx(context), XRXE_CTRL_DESTROY_CHANNEL, ch->handle);
	if (ret)
		return -ret;
	close(channel->fd);
	free(ch);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct xrxe_context *ctx = to_xctx(channel->context);

	for (;;) {
		struct xrxe_cq *xcq;
		uint32_t handle;
		ssize_t r = read(channel->fd, &handle, sizeof(handle));

		if (r != (ssize_t)sizeof(handle)) {
			if (r == 0) /* end of file: the daemon went away */
				atomic_store_explicit(&ctx->conn.gone, true, memory_order_relaxed);
			if (r >= 0)
				errno = r == 0 ? ECONNRESET : EIO;
			return -1;
		}
		/* An event for a CQ destroyed since: skip it. */
		xcq = xrxe_obj_find(ctx, XRXE_OBJ_CQ, handle);
		if (!xcq)
			continue;
		__atomic_fetch_add(&xcq->events_reported, 1, __ATOMIC_RELAXED);
		*cq = ibv_cq_ex_to_cq(&xcq->cqx);
		*cq_context = xcq->cqx.cq_context;
		return 0;
	}
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
