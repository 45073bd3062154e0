/* SPDX-License-Identifier: MIT */
/*
 * Sharing a context's objects: ibv_import_device, ibv_import_pd/_mr/_dm and
 * their unimports (rdma-core's "shared PD"; docs/verbs-shim.md "Importing").
 *
 * In rdma-core a context's cmd_fd is its uverbs file; a duplicate of it
 * (dup(), or passed over a socket) imported with ibv_import_device is a
 * second context on the same file, which owns every object either creates,
 * and a PD, MR or DM is imported by its handle. In xrxe cmd_fd is the
 * context's control connection to the daemon, whose table owns the objects,
 * so the same holds: an imported context talks on the duplicate, to the same
 * connection, and importing by handle is a lookup there (XRXE_CTRL_IMPORT;
 * the daemon answers -ENOENT for a handle its table does not hold, of
 * whichever type, and can name nothing outside it).
 *
 * One connection has one HELLO's state: the device page, the SQ doorbell
 * ring (whose producer the shim keeps) and one request in flight. So the
 * imported context finds the opened context of the same socket in this
 * process (by the socket's inode) and uses that one's state: its requests
 * take the exporter's lock and sequence numbers (xrxe_conn.serial), its
 * doorbells go into the exporter's ring, its page is the exporter's
 * mapping. Its async_fd is a pipe of its own that stays silent: the daemon
 * has one event pipe per connection, the exporter's, which reports the
 * events of the importers' objects too (the kernel's default async file
 * does the same), found through the exporter's list of imports.
 *
 * What the daemon needs of the process (its registered-memory memfd, given
 * at HELLO; its /proc/self/mem for ODP) is the exporter's, so only the
 * process that opened the context can import it; a descriptor passed to
 * another process (or inherited across fork) is refused with EOPNOTSUPP.
 *
 * Lifetimes follow the kernel's: the connection (and every object on it)
 * lives while any of the contexts holds its descriptor; closing the exporter
 * while imports are open closes only its descriptor and async pipe, and its
 * shared state is freed with the last importer. Unimporting frees only the
 * local structure; destroying (ibv_dealloc_pd, ibv_dereg_mr, ibv_free_dm)
 * through an import destroys the object, as in rdma-core.
 */
#include "verbs/shim.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* The opened contexts of this process, by their socket's inode. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xrxe_context *reg_head;

void xrxe_import_register(struct xrxe_context *ctx)
{
	struct stat st;

	ctx->pid = (int)getpid();
	ctx->async_wr = -1;
	if (fstat(ctx->conn.fd, &st) == 0) {
		ctx->sock_dev = (uint64_t)st.st_dev;
		ctx->sock_ino = (uint64_t)st.st_ino;
	}
	pthread_mutex_lock(&reg_lock);
	ctx->reg_next = reg_head;
	reg_head = ctx;
	pthread_mutex_unlock(&reg_lock);
}

static void reg_unlink(struct xrxe_context *ctx)
{
	for (struct xrxe_context **p = &reg_head; *p; p = &(*p)->reg_next)
		if (*p == ctx) {
			*p = ctx->reg_next;
			break;
		}
}

void *xrxe_import_obj_find(struct xrxe_context *ctx, uint32_t type, uint32_t handle)
{
	void *ptr = NULL;

	pthread_mutex_lock(&reg_lock);
	for (struct xrxe_context *i = ctx->imports; i && !ptr; i = i->imp_next)
		ptr = xrxe_obj_find_local(i, type, handle);
	pthread_mutex_unlock(&reg_lock);
	return ptr;
}

bool xrxe_import_close_primary(struct xrxe_context *ctx)
{
	struct ibv_context *c = &ctx->vctx.context;
	bool held;

	pthread_mutex_lock(&reg_lock);
	held = ctx->importers > 0;
	if (held)
		ctx->closed = true;
	else
		reg_unlink(ctx);
	pthread_mutex_unlock(&reg_lock);
	if (!held)
		return false;
	/* The application is done with this context: its descriptor and its
	 * event pipe go now (the daemon keeps the connection for the
	 * importers' duplicates); the lock, page and doorbell ring they use
	 * stay until the last of them closes. */
	pthread_mutex_lock(&ctx->conn.lock);
	close(ctx->conn.fd);
	ctx->conn.fd = -1;
	pthread_mutex_unlock(&ctx->conn.lock);
	close(c->async_fd);
	c->async_fd = -1;
	return true;
}

int xrxe_import_close_device(struct xrxe_context *imp)
{
	struct xrxe_context *p = imp->primary;
	struct ibv_context *c = &imp->vctx.context;
	bool free_primary;

	pthread_mutex_lock(&reg_lock);
	for (struct xrxe_context **i = &p->imports; *i; i = &(*i)->imp_next)
		if (*i == imp) {
			*i = imp->imp_next;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
	xrxe_conn_close(&imp->conn); /* the duplicate descriptor it was given */
	close(c->async_fd);
	close(imp->async_wr);
	pthread_mutex_destroy(&c->mutex);
	pthread_mutex_destroy(&imp->obj_lock);
	pthread_spin_destroy(&imp->db_lock);
	xrxe_ring_slabs_forget(imp); /* its rings stay mapped, as an opened context's */
	xrxe_ud_l3_forget(imp);
	free(imp->obj_tab);
	free(imp);

	pthread_mutex_lock(&reg_lock);
	free_primary = --p->importers == 0 && p->closed;
	if (free_primary)
		reg_unlink(p);
	pthread_mutex_unlock(&reg_lock);
	if (free_primary)
		xrxe_context_free(p);
	return 0;
}

/* The opened context of this process whose socket cmd_fd duplicates, with
 * one more importer counted; NULL and errno otherwise. */
static struct xrxe_context *find_primary(int cmd_fd)
{
	struct xrxe_context *p;
	struct stat st;

	if (fstat(cmd_fd, &st) < 0)
		return xrxe_null_errno(EBADF);
	if (!S_ISSOCK(st.st_mode))
		return xrxe_null_errno(EINVAL); /* not a verbs context's descriptor */
	pthread_mutex_lock(&reg_lock);
	for (p = reg_head; p; p = p->reg_next)
		if (p->sock_dev == (uint64_t)st.st_dev && p->sock_ino == (uint64_t)st.st_ino &&
		    p->pid == (int)getpid())
			break;
	if (p)
		p->importers++;
	pthread_mutex_unlock(&reg_lock);
	if (!p) {
		shim_warn("ibv_import_device: descriptor %d is no context's of this process "
			  "(importing across processes is not supported)",
			  cmd_fd);
		return xrxe_null_errno(EOPNOTSUPP);
	}
	return p;
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct xrxe_context *p, *imp;
	int async[2];
	bool free_primary;

	p = find_primary(cmd_fd);
	if (!p)
		return NULL;
	imp = calloc(1, sizeof(*imp));
	if (!imp)
		goto fail;
	imp->obj_tab = calloc(XRXE_OBJ_TAB, sizeof(*imp->obj_tab));
	if (!imp->obj_tab || pipe2(async, O_CLOEXEC) < 0) {
		free(imp->obj_tab);
		free(imp);
		goto fail;
	}
	imp->primary = p;
	imp->dev = p->dev;
	imp->page = p->page;
	imp->page_len = p->page_len;
	imp->doorbell_fd = p->doorbell_fd;
	imp->db_ring = p->db_ring;
	imp->db_ring_len = p->db_ring_len;
	imp->async_wr = async[1];
	pthread_mutex_init(&imp->obj_lock, NULL);
	pthread_mutex_init(&imp->slab_lock, NULL);
	pthread_spin_init(&imp->db_lock, PTHREAD_PROCESS_PRIVATE);
	imp->conn.fd = cmd_fd; /* ours now: ibv_close_device closes it, as rdma-core's */
	pthread_mutex_init(&imp->conn.lock, NULL);
	imp->conn.serial = &p->conn;
	xrxe_context_setup(imp, &p->dev->dev, async[0]);
	pthread_mutex_lock(&reg_lock);
	imp->imp_next = p->imports;
	p->imports = imp;
	pthread_mutex_unlock(&reg_lock);
	return &imp->vctx.context;

fail:
	pthread_mutex_lock(&reg_lock);
	free_primary = --p->importers == 0 && p->closed;
	if (free_primary)
		reg_unlink(p);
	pthread_mutex_unlock(&reg_lock);
	if (free_primary)
		xrxe_context_free(p);
	return xrxe_null_errno(ENOMEM);
}

/* IMPORT of handle as type: 0 and the reply, or -errno. */
static int import_lookup(struct ibv_context *context, uint32_t type, uint32_t handle,
			 struct xrxe_ctrl_import_reply *rep)
{
	struct xrxe_ctrl_import req = { .type = type, .handle = handle };

	return xrxe_conn_call(&to_xctx(context)->conn, XRXE_CTRL_IMPORT, &req, sizeof(req), NULL,
			      0, rep, sizeof(*rep), NULL, NULL);
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	struct xrxe_ctrl_import_reply rep;
	struct xrxe_pd *pd;
	int ret;

	if (!context)
		return xrxe_null_errno(EINVAL);
	ret = import_lookup(context, XRXE_IMPORT_PD, pd_handle, &rep);
	if (ret)
		return xrxe_null_errno(-ret);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return xrxe_null_errno(ENOMEM);
	pd->pd.context = context;
	pd->pd.handle = rep.handle;
	return &pd->pd;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	/* The local structure only: the PD lives on for its other holders. */
	free(xrxe_container_of(pd, struct xrxe_pd, pd));
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct xrxe_ctrl_import_reply rep;
	struct xrxe_mr *mr;
	int ret;

	if (!pd)
		return xrxe_null_errno(EINVAL);
	ret = import_lookup(pd->context, XRXE_IMPORT_MR, mr_handle, &rep);
	if (ret)
		return xrxe_null_errno(-ret);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return xrxe_null_errno(ENOMEM);
	/* As rdma-core's imported MR: keys, length and handle; no address
	 * (the importer may not have the exporter's mapping). Nothing was
	 * moved for it, so its dereg releases nothing here. */
	mr->mr.context = pd->context;
	mr->mr.pd = pd;
	mr->mr.handle = rep.handle;
	mr->mr.lkey = rep.lkey;
	mr->mr.rkey = rep.rkey;
	mr->mr.length = (size_t)rep.length;
	mr->iova = rep.iova;
	mr->access = rep.access;
	return &mr->mr;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	free(xrxe_container_of(mr, struct xrxe_mr, mr));
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	if (!context)
		return xrxe_null_errno(EINVAL);
	return xrxe_import_dm(context, dm_handle);
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	xrxe_unimport_dm(dm);
}
