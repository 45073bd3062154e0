/* SPDX-License-Identifier: MIT */
/*
 * ibv_open_device / ibv_close_device, and the context's plumbing: the control
 * connection (one per context: closing it is how the daemon learns to tear
 * down everything the context created), the device page, the doorbell, the
 * async pipe, the handle -> object table for events.
 *
 * The application's ibv_context is the last member of a struct verbs_context
 * with abi_compat = UINTPTR_MAX and sz = sizeof: the inline verbs of verbs.h
 * find the extended ops at fixed negative offsets (docs/facts/verbs-abi.md §3.2),
 * which the asserts below pin to rdma-core 44's layout.
 */
#include "verbs/shim.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "verbs/mr_remap.h"

/* docs/facts/verbs-abi.md §3.2, measured on rdma-core 44.0-2 */
_Static_assert(sizeof(struct ibv_device) == 664, "ibv_device");
_Static_assert(sizeof(struct ibv_context_ops) == 256, "ibv_context_ops");
_Static_assert(sizeof(struct ibv_context) == 328, "ibv_context");
_Static_assert(sizeof(struct verbs_context) == 648, "verbs_context");
_Static_assert(offsetof(struct verbs_context, context) == 320, "vctx.context");
_Static_assert(offsetof(struct verbs_context, sz) == 312, "vctx.sz");
_Static_assert(offsetof(struct verbs_context, query_port) == 0, "vctx.query_port");
_Static_assert(offsetof(struct verbs_context, create_cq_ex) == 200, "vctx.create_cq_ex");
_Static_assert(offsetof(struct verbs_context, query_device_ex) == 216, "vctx.query_device_ex");
_Static_assert(offsetof(struct verbs_context, create_qp_ex) == 264, "vctx.create_qp_ex");
_Static_assert(offsetof(struct verbs_context, close_xrcd) == 296, "vctx.close_xrcd");
_Static_assert(offsetof(struct ibv_context, ops) == 8, "ctx.ops");
_Static_assert(offsetof(struct ibv_context, cmd_fd) == 264, "ctx.cmd_fd");
_Static_assert(offsetof(struct ibv_context, async_fd) == 268, "ctx.async_fd");
_Static_assert(offsetof(struct ibv_context, num_comp_vectors) == 272, "ctx.num_comp_vectors");
_Static_assert(offsetof(struct ibv_context, abi_compat) == 320, "ctx.abi_compat");
_Static_assert(offsetof(struct ibv_context_ops, poll_cq) == 88, "ops.poll_cq");
_Static_assert(offsetof(struct ibv_context_ops, req_notify_cq) == 96, "ops.req_notify_cq");
_Static_assert(offsetof(struct ibv_context_ops, post_srq_recv) == 160, "ops.post_srq_recv");
_Static_assert(offsetof(struct ibv_context_ops, post_send) == 200, "ops.post_send");
_Static_assert(offsetof(struct ibv_context_ops, post_recv) == 208, "ops.post_recv");
_Static_assert(sizeof(struct ibv_cq) == 128 && sizeof(struct ibv_cq_ex) == 288, "cq");
_Static_assert(offsetof(struct ibv_cq_ex, start_poll) == 144, "cq_ex.start_poll");
_Static_assert(sizeof(struct ibv_qp) == 160 && sizeof(struct ibv_qp_ex) == 352, "qp");
_Static_assert(offsetof(struct ibv_qp_ex, wr_start) == 320, "qp_ex.wr_start");
_Static_assert(sizeof(struct ibv_port_attr) == 52 &&
		       offsetof(struct ibv_port_attr, port_cap_flags2) == 48,
	       "port_attr (the compat struct ends at port_cap_flags2)");
_Static_assert(sizeof(struct ibv_device_attr_ex) == 400, "device_attr_ex");
_Static_assert(sizeof(struct ibv_gid_entry) == 32, "gid_entry");
_Static_assert(sizeof(struct ibv_wc) == 48 && sizeof(struct ibv_send_wr) == 128, "wc/wr");

/* --- handle table --------------------------------------------------------------- */

void xrxe_obj_add(struct xrxe_context *ctx, struct xrxe_obj *o, uint32_t type, uint32_t handle,
		  void *ptr)
{
	o->type = type;
	o->handle = handle;
	o->ptr = ptr;
	o->hnext = NULL;
	pthread_mutex_lock(&ctx->obj_lock);
	o->prev = NULL;
	o->next = ctx->objs;
	if (ctx->objs)
		ctx->objs->prev = o;
	ctx->objs = o;
	/* events name objects by handle: a lookup must not walk thousands
	 * of QPs (the table exists from open_device on) */
	{
		struct xrxe_obj **b = &ctx->obj_tab[handle % XRXE_OBJ_TAB];

		o->hnext = *b;
		*b = o;
	}
	pthread_mutex_unlock(&ctx->obj_lock);
}

void xrxe_obj_del(struct xrxe_context *ctx, struct xrxe_obj *o)
{
	pthread_mutex_lock(&ctx->obj_lock);
	if (o->prev)
		o->prev->next = o->next;
	else if (ctx->objs == o)
		ctx->objs = o->next;
	if (o->next)
		o->next->prev = o->prev;
	o->next = o->prev = NULL;
	for (struct xrxe_obj **p = &ctx->obj_tab[o->handle % XRXE_OBJ_TAB]; *p; p = &(*p)->hnext) {
		if (*p == o) {
			*p = o->hnext;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->obj_lock);
}

void *xrxe_obj_find(struct xrxe_context *ctx, uint32_t type, uint32_t handle)
{
	void *ptr = xrxe_obj_find_local(ctx, type, handle);

	/* The daemon writes the events of every object of the connection to
	 * the exporter's pipe, the kernel's default async file likewise:
	 * objects created through imported contexts are theirs (import.c). */
	if (!ptr && !ctx->primary)
		ptr = xrxe_import_obj_find(ctx, type, handle);
	return ptr;
}

void *xrxe_obj_find_local(struct xrxe_context *ctx, uint32_t type, uint32_t handle)
{
	void *ptr = NULL;

	pthread_mutex_lock(&ctx->obj_lock);
	for (struct xrxe_obj *o = ctx->obj_tab[handle % XRXE_OBJ_TAB]; o; o = o->hnext)
		if (o->type == type && o->handle == handle) {
			ptr = o->ptr;
			break;
		}
	pthread_mutex_unlock(&ctx->obj_lock);
	return ptr;
}

/* --- control helpers --------------------------------------------------------------- */

int xrxe_hello(struct xrxe_conn *c, int async_wr, const struct xrxe_dev_page **page,
	       size_t *page_len, int *doorbell, struct xrxe_ring **db_ring, size_t *db_ring_len)
{
	struct xrxe_ctrl_hello req = { .abi_version = XRXE_ABI_VERSION };
	struct xrxe_ctrl_hello_reply rep;
	int memfd = xrxe_remap_fd(), tmp[2] = { -1, -1 }, fds[2], rfds[3];
	unsigned int nr = 3;
	struct stat st;
	void *db;
	const struct xrxe_dev_page *p;
	int ret;

	if (memfd < 0)
		return memfd;
	if (async_wr < 0) {
		/* A probe: the daemon still gets a well-formed HELLO. */
		if (pipe2(tmp, O_CLOEXEC) < 0)
			return -errno;
		async_wr = tmp[1];
	}
	fds[0] = memfd;
	fds[1] = async_wr;
	ret = xrxe_conn_call(c, XRXE_CTRL_HELLO, &req, sizeof(req), fds, 2, &rep, sizeof(rep), rfds,
			     &nr);
	if (tmp[0] >= 0) {
		close(tmp[0]);
		close(tmp[1]);
	}
	if (ret == -EPROTO)
		shim_err("the xrxe daemon refused HELLO (ABI version %d): daemon and library "
			 "are from different builds",
			 XRXE_ABI_VERSION);
	if (ret)
		return ret;
	if (nr < 3 || rep.abi_version != XRXE_ABI_VERSION ||
	    rep.dev_page_size < sizeof(struct xrxe_dev_page)) {
		shim_err("malformed HELLO reply (ABI %u, page %u bytes, %u fds)", rep.abi_version,
			 rep.dev_page_size, nr);
		ret = -EPROTO;
		goto fail;
	}
	p = mmap(NULL, rep.dev_page_size, PROT_READ, MAP_SHARED, rfds[0], 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		goto fail;
	}
	close(rfds[0]);
	if (p->abi_version != XRXE_ABI_VERSION) {
		munmap((void *)p, rep.dev_page_size);
		close(rfds[1]);
		close(rfds[2]);
		return -EPROTO;
	}
	/* the SQ doorbell ring (xrxe/ring.h) */
	db = MAP_FAILED;
	if (fstat(rfds[2], &st) == 0 && (size_t)st.st_size >= xrxe_ring_bytes(XRXE_DOORBELL_SLOTS,
								  sizeof(struct xrxe_doorbell)))
		db = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, rfds[2], 0);
	close(rfds[2]);
	if (db == MAP_FAILED) {
		munmap((void *)p, rep.dev_page_size);
		close(rfds[1]);
		return -EPROTO;
	}
	*page = p;
	*page_len = rep.dev_page_size;
	*doorbell = rfds[1];
	if (db_ring) {
		*db_ring = db;
		*db_ring_len = (size_t)st.st_size;
	} else {
		munmap(db, (size_t)st.st_size);
	}
	return 0;
fail:
	for (unsigned int i = 0; i < nr; i++)
		close(rfds[i]);
	return ret;
}

int xrxe_ctrl_destroy(struct xrxe_context *ctx, uint16_t op, uint32_t handle)
{
	struct xrxe_ctrl_handle req = { .handle = handle };
	int ret;

	ret = xrxe_conn_call(&ctx->conn, op, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL);
	return xrxe_conn_gone(ret) ? 0 : ret;
}

void xrxe_ring_doorbell(struct xrxe_context *ctx)
{
	/* Dekker with the daemon: we stored the producer, it stores
	 * daemon_sleeping and then re-checks every producer before sleeping.
	 * The full fence orders our store before our load of the flag, so at
	 * least one side sees the other's write and no doorbell is lost. */
	atomic_thread_fence(memory_order_seq_cst);
	if (__atomic_load_n(&ctx->page->daemon_sleeping, __ATOMIC_RELAXED)) {
		uint64_t one = 1;
		ssize_t r = write(ctx->doorbell_fd, &one, sizeof(one));

		(void)r; /* EAGAIN: the counter is saturated, it is awake anyway */
	}
}

void xrxe_ring_doorbell_qp(struct xrxe_context *ctx, struct xrxe_ring *sq, uint32_t handle)
{
	/* once per QP until the daemon takes it (xrxe/ring.h); an imported
	 * context pushes into its exporter's ring, the connection's one */
	ctx = xrxe_ctx_primary(ctx);
	if (xrxe_doorbell_claim(sq)) {
		pthread_spin_lock(&ctx->db_lock);
		xrxe_doorbell_push(ctx->db_ring, &ctx->db_prod, handle);
		pthread_spin_unlock(&ctx->db_lock);
	}
	xrxe_ring_doorbell(ctx);
}

/* --- open / close ---------------------------------------------------------------- */

void xrxe_context_setup(struct xrxe_context *ctx, struct ibv_device *device, int async_fd)
{
	struct ibv_context *c = &ctx->vctx.context;

	c->device = device;
	c->cmd_fd = ctx->conn.fd;
	c->async_fd = async_fd;
	c->num_comp_vectors = 1;
	pthread_mutex_init(&c->mutex, NULL);
	c->ops.poll_cq = xrxe_poll_cq;
	c->ops.req_notify_cq = xrxe_req_notify_cq;
	c->ops.post_send = xrxe_post_send;
	c->ops.post_recv = xrxe_post_recv;
	c->ops.post_srq_recv = xrxe_post_srq_recv;
	c->ops.alloc_mw = xrxe_alloc_mw;
	c->ops.dealloc_mw = xrxe_dealloc_mw;
	c->ops.bind_mw = xrxe_bind_mw;
	/* Every extended op is present (sz covers them all); the NULL ones make
	 * verbs.h's inlines answer EOPNOTSUPP themselves. */
	c->abi_compat = (void *)UINTPTR_MAX;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.query_port = xrxe_query_port_op;
	ctx->vctx.query_device_ex = xrxe_query_device_ex_op;
	ctx->vctx.query_rt_values = xrxe_query_rt_values_op;
	ctx->vctx.create_cq_ex = xrxe_create_cq_ex_op;
	ctx->vctx.create_qp_ex = xrxe_create_qp_ex_op;
	ctx->vctx.alloc_dm = xrxe_alloc_dm_op;
	ctx->vctx.free_dm = xrxe_free_dm_op;
	ctx->vctx.reg_dm_mr = xrxe_reg_dm_mr_op;
	ctx->vctx.alloc_td = xrxe_alloc_td_op;
	ctx->vctx.dealloc_td = xrxe_dealloc_td_op;
	ctx->vctx.alloc_parent_domain = xrxe_alloc_parent_domain_op;
	xrxe_xrc_install(&ctx->vctx); /* XRC domains, SRQs, open_qp (verbs/xrc.c) */
	xrxe_tm_install(&ctx->vctx);  /* ibv_post_srq_ops (verbs/tm.c) */
	ctx->vctx.advise_mr = xrxe_advise_mr_op; /* on-demand paging (odp.c) */
	xrxe_flow_install(&ctx->vctx); /* raw packet QPs' flows (verbs/flow.c) */
	xrxe_rss_install(&ctx->vctx); /* WQs, indirection tables (verbs/raw.c) */
}

static struct ibv_context *open_device(struct ibv_device *device)
{
	struct xrxe_device *dev = to_xdev(device);
	struct xrxe_context *ctx;
	struct ibv_context *c;
	int async[2] = { -1, -1 };
	int ret;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return xrxe_null_errno(ENOMEM);
	ctx->dev = dev;
	ctx->doorbell_fd = -1;
	ctx->obj_tab = calloc(XRXE_OBJ_TAB, sizeof(*ctx->obj_tab));
	if (!ctx->obj_tab) {
		free(ctx);
		return xrxe_null_errno(ENOMEM);
	}
	pthread_mutex_init(&ctx->obj_lock, NULL);
	pthread_mutex_init(&ctx->slab_lock, NULL);
	pthread_spin_init(&ctx->db_lock, PTHREAD_PROCESS_PRIVATE);
	ret = xrxe_conn_open(&ctx->conn, dev->sock_path);
	if (ret) {
		shim_warn("%s: cannot reach the daemon at %s: %s", device->name, dev->sock_path,
			  strerror(-ret));
		goto fail_free;
	}
	/* Async events: the daemon writes struct xrxe_async_event records; the
	 * read end is context->async_fd (blocking, like rdma-core's). */
	if (pipe2(async, O_CLOEXEC) < 0) {
		ret = -errno;
		goto fail_conn;
	}
	ret = xrxe_hello(&ctx->conn, async[1], &ctx->page, &ctx->page_len, &ctx->doorbell_fd,
			 &ctx->db_ring, &ctx->db_ring_len);
	close(async[1]);
	if (ret)
		goto fail_pipe;
	atomic_store(&dev->guid_be, __atomic_load_n(&ctx->page->node_guid, __ATOMIC_RELAXED));

	xrxe_context_setup(ctx, device, async[0]);
	xrxe_import_register(ctx);
	c = &ctx->vctx.context;
	return c;

fail_pipe:
	close(async[0]);
fail_conn:
	xrxe_conn_close(&ctx->conn);
fail_free:
	pthread_mutex_destroy(&ctx->obj_lock);
	pthread_mutex_destroy(&ctx->slab_lock);
	pthread_spin_destroy(&ctx->db_lock);
	free(ctx->obj_tab);
	free(ctx);
	/* rdma-core reports a vanished device as ENODEV */
	errno = (ret == -ECONNREFUSED || ret == -ENOENT) ? ENODEV : -ret;
	return NULL;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	return open_device(device);
}

int ibv_close_device(struct ibv_context *context)
{
	struct xrxe_context *ctx = to_xctx(context);

	if (ctx->primary)
		return xrxe_import_close_device(ctx);
	/* Closing the connection makes the daemon destroy whatever this context
	 * still owns (once no imported context holds a duplicate of it either);
	 * rings and registered memory stay mapped here until the application
	 * frees them (or exits). */
	if (xrxe_import_close_primary(ctx))
		return 0; /* freed with the last importer (import.c) */
	xrxe_context_free(ctx);
	return 0;
}

void xrxe_context_free(struct xrxe_context *ctx)
{
	struct ibv_context *context = &ctx->vctx.context;

	xrxe_conn_close(&ctx->conn);
	munmap((void *)ctx->page, ctx->page_len);
	munmap(ctx->db_ring, ctx->db_ring_len);
	close(ctx->doorbell_fd);
	if (context->async_fd >= 0)
		close(context->async_fd);
	pthread_mutex_destroy(&context->mutex);
	pthread_mutex_destroy(&ctx->obj_lock);
	pthread_spin_destroy(&ctx->db_lock);
	xrxe_ring_slabs_forget(ctx);
	xrxe_ud_l3_forget(ctx);
	free(ctx->obj_tab);
	free(ctx);
}
