/* SPDX-License-Identifier: MIT */
/*
 * Devices and their daemons. The devices are libibverbs' own: at run time
 * xrxe's libibverbs.so.1 lists one "xrxe_IFACE" per daemon of the caller's
 * network namespace (it probes the sockets and skips other namespaces), so
 * this library asks it rather than scanning XRXE_RUN_DIR again, and talks to
 * the daemon behind XRXE_RUN_DIR/IFACE.sock. Anything not named xrxe_* (a
 * real HCA through rdma-core's libibverbs) has no daemon and is ignored.
 *
 * A device record lives as long as the process (as the verbs shim's do): its
 * verbs context is what id->verbs and rdma_get_devices() hand out, so it
 * must stay valid while the application holds it. A daemon that goes away
 * leaves its record dead; if it comes back, the same ibv_device gets a fresh
 * record (a new context and connection).
 */
#include "rdmacm/cm.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cm_dev *devs; /* in device-list order */
/* The last ibv_get_device_list(): kept, so the ibv_devices we point to stay
 * valid with any libibverbs (rdma-core frees unopened devices with the list). */
static struct ibv_device **dev_list;

static const char *run_dir(void)
{
	const char *d = getenv("XRXE_RUN_DIR");

	return d && *d ? d : XRXE_RUN_DIR;
}

static struct cm_dev *dev_new(struct ibv_device *ibdev, const char *name)
{
	const char *ifname = name + strlen(XRXE_DEV_PREFIX);
	struct cm_dev *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if ((size_t)snprintf(d->sock_path, sizeof(d->sock_path), "%s/%s%s", run_dir(), ifname,
			     XRXE_CTRL_SOCK_SUFFIX) >= sizeof(d->sock_path)) {
		free(d); /* sockaddr_un cannot reach it; the verbs shim skips it too */
		return NULL;
	}
	d->ibdev = ibdev;
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->conn.fd = -1;
	pthread_mutex_init(&d->conn.lock, NULL);
	return d;
}

/* Refresh the device list: the number of live xrxe devices. Under dev_lock. */
static int devs_sync(void)
{
	struct ibv_device **list;
	struct cm_dev **tail = &devs;
	int n = 0, live = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return 0;
	for (struct cm_dev *d = devs; d; d = d->next)
		d->present = false;
	while (*tail)
		tail = &(*tail)->next;
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct cm_dev *d;

		if (!name || strncmp(name, XRXE_DEV_PREFIX, strlen(XRXE_DEV_PREFIX)))
			continue;
		for (d = devs; d; d = d->next)
			if (d->ibdev == list[i] && !atomic_load(&d->dead))
				break;
		if (!d) {
			d = dev_new(list[i], name);
			if (!d)
				continue;
			*tail = d;
			tail = &d->next;
		}
		d->present = true;
		live++;
	}
	if (dev_list)
		ibv_free_device_list(dev_list);
	dev_list = list;
	return live;
}

static int devs_live(void)
{
	int n = 0;

	for (struct cm_dev *d = devs; d; d = d->next)
		n += d->present && !atomic_load(&d->dead);
	return n;
}

int cm_init(void)
{
	int n;

	pthread_mutex_lock(&dev_lock);
	n = devs_live();
	if (!n)
		n = devs_sync();
	pthread_mutex_unlock(&dev_lock);
	if (!n) {
		cm_info("no xrxe device: no daemon answers in %s (start xrxed IFACE)",
			run_dir());
		return -ENODEV;
	}
	return 0;
}

/* The verbs context and the limits stock takes from it. Under dev_lock. */
static int dev_open_verbs(struct cm_dev *d)
{
	struct ibv_device_attr attr;
	struct ibv_context *verbs;

	if (d->verbs)
		return 0;
	verbs = ibv_open_device(d->ibdev);
	if (!verbs)
		return -ENODEV;
	if (ibv_query_device(verbs, &attr)) {
		ibv_close_device(verbs);
		return -ENODEV;
	}
	d->max_qpsize = attr.max_qp_wr;
	d->max_init_depth = (uint8_t)(attr.max_qp_init_rd_atom > 255 ? 255 : attr.max_qp_init_rd_atom);
	d->max_resp_res = (uint8_t)(attr.max_qp_rd_atom > 255 ? 255 : attr.max_qp_rd_atom);
	d->verbs = verbs;
	return 0;
}

/* CM_OPEN on a fresh connection. Under dev_lock. */
static int dev_open_conn(struct cm_dev *d)
{
	struct xrxe_ctrl_cm_open req = { .abi_version = XRXE_ABI_VERSION }, rep;
	int ret;

	if (__atomic_load_n(&d->conn_open, __ATOMIC_ACQUIRE))
		return 0;
	ret = xrxe_conn_connect(&d->conn, d->sock_path);
	if (ret) {
		cm_dbg("%s: %s", d->sock_path, strerror(-ret));
		return -ENODEV; /* the daemon is gone (or was never there) */
	}
	ret = xrxe_conn_call(&d->conn, XRXE_CTRL_CM_OPEN, &req, sizeof(req), NULL, 0, &rep,
			     sizeof(rep), NULL, NULL);
	if (ret == -EINVAL) {
		/* abi.h: an op the daemon does not know is -EINVAL. */
		cm_error("xrxed for %s does not serve connection management (CM_OPEN refused: a "
			 "daemon older than this library?)",
			 d->name);
		ret = -ENOSYS;
	} else if (ret == -EPROTO || (!ret && rep.abi_version != XRXE_ABI_VERSION)) {
		cm_error("xrxed for %s refused CM_OPEN (ABI version %d): daemon and library are "
			 "from different builds",
			 d->name, XRXE_ABI_VERSION);
		ret = -EPROTO;
	} else if (xrxe_conn_gone(ret)) {
		ret = -ENODEV;
	}
	if (ret) {
		close(d->conn.fd);
		d->conn.fd = -1;
		return ret;
	}
	__atomic_store_n(&d->conn_open, true, __ATOMIC_RELEASE);
	return 0;
}

int cm_dev_ready(struct cm_dev *d)
{
	int ret;

	pthread_mutex_lock(&dev_lock);
	if (atomic_load(&d->dead)) {
		ret = -ENODEV;
		goto out;
	}
	ret = dev_open_verbs(d);
	if (ret)
		goto out;
	if (!d->pd) {
		d->pd = ibv_alloc_pd(d->verbs);
		if (!d->pd) {
			ret = errno == ENOMEM ? -ENOMEM : -ENODEV;
			goto out;
		}
	}
	ret = dev_open_conn(d);
out:
	pthread_mutex_unlock(&dev_lock);
	return ret;
}

struct cm_dev *cm_dev_of_verbs(struct ibv_context *verbs)
{
	struct cm_dev *d;

	if (!verbs)
		return NULL;
	pthread_mutex_lock(&dev_lock);
	for (d = devs; d; d = d->next)
		if (d->verbs == verbs)
			break;
	pthread_mutex_unlock(&dev_lock);
	return d;
}

/* Does d's GID table hold gid (and, for a scoped IPv6 address, on that
 * interface)? The table is live (the daemon follows the interface's
 * addresses), so it is read every time. Under dev_lock. */
static bool dev_has_gid(struct cm_dev *d, const union ibv_gid *gid, uint32_t scope)
{
	struct ibv_port_attr pa;

	if (dev_open_verbs(d) || ibv_query_port(d->verbs, 1, &pa))
		return false;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(d->verbs, 1, (uint32_t)i, &e, 0))
			continue;
		if (!memcmp(&e.gid, gid, sizeof(*gid)) && (!scope || e.ndev_ifindex == scope))
			return true;
	}
	return false;
}

int cm_dev_for_addr(const struct sockaddr *addr, struct cm_dev **out)
{
	uint32_t scope = 0;
	struct cm_dev *found = NULL;
	union ibv_gid gid;

	cm_sa_gid(addr, &gid);
	if (addr->sa_family == AF_INET6)
		scope = ((const struct sockaddr_in6 *)addr)->sin6_scope_id;
	pthread_mutex_lock(&dev_lock);
	/* A miss may be a daemon started since the last look: one refresh. */
	for (int pass = 0; pass < 2 && !found; pass++) {
		if (pass || !devs_live())
			devs_sync();
		for (struct cm_dev *d = devs; d && !found; d = d->next)
			if (d->present && !atomic_load(&d->dead) && dev_has_gid(d, &gid, scope))
				found = d;
	}
	pthread_mutex_unlock(&dev_lock);
	if (!found)
		return cm_sa_is_local(addr) ? -ENODEV : -EADDRNOTAVAIL;
	*out = found;
	return cm_dev_ready(found);
}

int cm_dev_all(struct cm_dev ***out, int *n)
{
	struct cm_dev **v;
	int cnt = 0, ok = 0, err = -ENODEV;

	pthread_mutex_lock(&dev_lock);
	devs_sync();
	v = calloc((size_t)devs_live() + 1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&dev_lock);
		return -ENOMEM;
	}
	for (struct cm_dev *d = devs; d; d = d->next)
		if (d->present && !atomic_load(&d->dead))
			v[cnt++] = d;
	pthread_mutex_unlock(&dev_lock);
	for (int i = 0; i < cnt; i++) {
		int ret = cm_dev_ready(v[i]);

		if (ret) {
			err = ret;
			continue;
		}
		v[ok++] = v[i];
	}
	if (!ok) {
		free(v);
		return err;
	}
	*out = v;
	*n = ok;
	return 0;
}

int cm_dev_own_addr(struct cm_dev *d, int family, struct sockaddr_storage *out)
{
	struct ibv_port_attr pa;
	int ret = -EADDRNOTAVAIL;

	pthread_mutex_lock(&dev_lock);
	if (dev_open_verbs(d) || ibv_query_port(d->verbs, 1, &pa)) {
		pthread_mutex_unlock(&dev_lock);
		return -ENODEV;
	}
	for (int i = 0; i < pa.gid_tbl_len && ret; i++) {
		static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
		union ibv_gid g;
		bool v4;

		if (ibv_query_gid(d->verbs, 1, i, &g))
			continue;
		v4 = !memcmp(g.raw, v4mapped, sizeof(v4mapped));
		memset(out, 0, sizeof(*out));
		if (family == AF_INET && v4) {
			struct sockaddr_in *in = (void *)out;

			in->sin_family = AF_INET;
			memcpy(&in->sin_addr, &g.raw[12], 4);
			ret = 0;
		} else if (family == AF_INET6 && !v4 && !(g.raw[0] == 0xfe && (g.raw[1] & 0xc0) == 0x80) &&
			   g.global.interface_id) {
			struct sockaddr_in6 *in6 = (void *)out;

			in6->sin6_family = AF_INET6;
			memcpy(&in6->sin6_addr, g.raw, 16);
			ret = 0;
		}
	}
	pthread_mutex_unlock(&dev_lock);
	return ret;
}

void cm_dev_lost(struct cm_dev *d)
{
	if (atomic_exchange(&d->dead, true))
		return;
	cm_warn("the xrxe daemon of %s went away: its connections are gone", d->name);
	cm_ids_lost(d);
}

bool cm_dev_hung_up(struct cm_dev *d)
{
	struct pollfd p = { .events = POLLRDHUP };

	if (atomic_load(&d->dead))
		return true;
	if (!__atomic_load_n(&d->conn_open, __ATOMIC_ACQUIRE))
		return false;
	p.fd = d->conn.fd;
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))) {
		cm_dev_lost(d);
		return true;
	}
	return false;
}

int cm_call(struct cm_dev *d, uint16_t op, void *req, size_t req_len, const int *fds,
	    unsigned int nfds, void *rep, size_t rep_len)
{
	int ret;

	if (atomic_load(&d->dead))
		return -ENODEV;
	ret = xrxe_conn_call(&d->conn, op, req, req_len, fds, nfds, rep, rep_len, NULL, NULL);
	if (xrxe_conn_gone(ret)) {
		cm_dev_lost(d);
		return -ENODEV;
	}
	return ret;
}

int cm_call_handle(struct cm_dev *d, uint16_t op, uint32_t handle, uint32_t arg)
{
	struct xrxe_ctrl_cm_handle_arg req = { .handle = handle, .arg = arg };

	return cm_call(d, op, &req, sizeof(req), NULL, 0, NULL, 0);
}

/* --- rdma_get_devices / rdma_free_devices -------------------------------------- */

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list = NULL;
	int n = 0, err = ENODEV;

	if (num_devices)
		*num_devices = 0;
	if (cm_init()) {
		errno = ENODEV;
		return NULL;
	}
	pthread_mutex_lock(&dev_lock);
	devs_sync();
	list = calloc((size_t)devs_live() + 1, sizeof(*list));
	if (!list)
		err = ENOMEM;
	for (struct cm_dev *d = devs; list && d; d = d->next)
		if (d->present && !atomic_load(&d->dead) && !dev_open_verbs(d))
			list[n++] = d->verbs;
	pthread_mutex_unlock(&dev_lock);
	if (list && !n) {
		free(list);
		list = NULL;
	}
	if (!list) {
		errno = err;
		return NULL;
	}
	if (num_devices)
		*num_devices = n;
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	/* The contexts belong to their device records (see the top). */
	free(list);
}
