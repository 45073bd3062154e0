/* SPDX-License-Identifier: MIT */
/*
 * Device discovery: one verbs device "xrxe_IFACE" per daemon control socket
 * XRXE_RUN_DIR/IFACE.sock that accepts a connection. Stale sockets (a daemon
 * that died without unlinking) refuse the connection and are not listed.
 *
 * Unix sockets ignore network namespaces, so every daemon on the host is
 * reachable from every namespace. A verbs device belongs to the namespace of
 * its interface, though (as rdma devices do in exclusive netns mode), so a
 * daemon is listed only when its namespace marker (abi.h XRXE_NETNS_MARKER,
 * an abstract socket name, and abstract names are per network namespace) is
 * taken in ours: a test any user can make, so nothing fails open. The
 * daemon enforces the same rule at HELLO. XRXE_ALL_NETNS=1 lists every
 * daemon (only root may then open another namespace's device).
 *
 * Device records are never freed: the verbs contract keeps an opened device
 * valid after ibv_free_device_list(), and the list only grows by the number
 * of distinct daemons ever seen.
 */
#include "verbs/shim.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xrxe_device **devs;
static size_t ndevs;

static const char *run_dir(void)
{
	const char *d = getenv("XRXE_RUN_DIR");

	return d && *d ? d : XRXE_RUN_DIR;
}

/* Is the daemon of ifname in our network namespace? Its marker name is
 * taken here (binding it fails with EADDRINUSE) only if so; any other
 * outcome says no. */
static bool same_netns(const char *ifname)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *all = getenv("XRXE_ALL_NETNS");
	int fd, n, r, e;

	if (all && *all == '1')
		return true;
	n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "%s%s", XRXE_NETNS_MARKER,
		     ifname);
	if (n <= 0 || (size_t)n >= sizeof(sun.sun_path) - 1)
		return false;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	r = bind(fd, (struct sockaddr *)&sun,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n));
	e = errno;
	close(fd);
	return r < 0 && e == EADDRINUSE;
}

/* Does the daemon behind path answer, in our namespace? */
static bool probe(const char *ifname, const char *path)
{
	struct xrxe_conn c;
	bool ok;

	if (xrxe_conn_open(&c, path))
		return false;
	ok = same_netns(ifname);
	if (!ok)
		shim_dbg("%s: daemon in another network namespace, not listed", path);
	xrxe_conn_close(&c);
	return ok;
}

static struct xrxe_device *find_or_add(const char *ifname, const char *path)
{
	struct xrxe_device *d, **nd;

	for (size_t i = 0; i < ndevs; i++)
		if (!strcmp(devs[i]->sock_path, path))
			return devs[i];
	d = calloc(1, sizeof(*d));
	nd = realloc(devs, (ndevs + 1) * sizeof(*devs));
	if (!d || !nd) {
		free(d);
		if (nd)
			devs = nd;
		return NULL;
	}
	devs = nd;
	d->index = (int)ndevs;
	snprintf(d->ifname, sizeof(d->ifname), "%s", ifname);
	memcpy(d->sock_path, path, strnlen(path, sizeof(d->sock_path) - 1));
	d->dev.node_type = IBV_NODE_CA;           /* RoCE: a channel adapter ... */
	d->dev.transport_type = IBV_TRANSPORT_IB; /* ... speaking the IB transport */
	snprintf(d->dev.name, sizeof(d->dev.name), XRXE_DEV_PREFIX "%s", ifname);
	snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", d->index);
	snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d",
		 d->index);
	snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s",
		 d->dev.name);
	devs[ndevs++] = d;
	return d;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	const size_t sfx = strlen(XRXE_CTRL_SOCK_SUFFIX);
	struct ibv_device **list;
	char **names = NULL;
	size_t nnames = 0, n = 0;
	struct dirent *de;
	DIR *dir;

	/* Set first: some clients read it even when NULL comes back (§5.3 #1). */
	if (num_devices)
		*num_devices = 0;

	dir = opendir(run_dir());
	while (dir && (de = readdir(dir))) {
		size_t l = strlen(de->d_name);
		char **nn;

		if (l <= sfx || l - sfx >= IFNAMSIZ ||
		    strcmp(de->d_name + l - sfx, XRXE_CTRL_SOCK_SUFFIX))
			continue;
		nn = realloc(names, (nnames + 1) * sizeof(*names));
		if (!nn)
			break;
		names = nn;
		names[nnames] = strndup(de->d_name, l - sfx);
		if (names[nnames])
			nnames++;
	}
	if (dir)
		closedir(dir);
	if (nnames > 1)
		qsort(names, nnames, sizeof(*names), cmp_names);

	pthread_mutex_lock(&dev_lock);
	for (size_t i = 0; i < ndevs; i++)
		devs[i]->present = false;
	for (size_t i = 0; i < nnames; i++) {
		char path[PATH_MAX];
		struct xrxe_device *d;

		/* sockaddr_un holds 108 bytes: longer paths cannot be reached */
		if ((size_t)snprintf(path, sizeof(path), "%s/%s%s", run_dir(), names[i],
				     XRXE_CTRL_SOCK_SUFFIX) >= sizeof(((struct xrxe_device *)0)->sock_path) ||
		    !probe(names[i], path))
			continue;
		d = find_or_add(names[i], path);
		if (d)
			d->present = true;
	}
	list = calloc(ndevs + 1, sizeof(*list));
	for (size_t i = 0; list && i < ndevs; i++)
		if (devs[i]->present)
			list[n++] = &devs[i]->dev;
	pthread_mutex_unlock(&dev_lock);

	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	if (!list)
		return xrxe_null_errno(ENOMEM);
	if (num_devices)
		*num_devices = (int)n;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

/* The GUID lives in the daemon's device page: learn it with a short-lived
 * connection unless a context already did. Network byte order. */
__be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct xrxe_device *d = to_xdev(device);
	const struct xrxe_dev_page *page;
	struct xrxe_conn c;
	uint64_t guid = atomic_load(&d->guid_be);
	size_t len;
	int db;

	if (guid)
		return guid;
	if (xrxe_conn_open(&c, d->sock_path))
		return 0;
	if (xrxe_hello(&c, -1, &page, &len, &db, NULL, NULL) == 0) {
		guid = __atomic_load_n(&page->node_guid, __ATOMIC_RELAXED);
		atomic_store(&d->guid_be, guid);
		munmap((void *)page, len);
		close(db);
	}
	xrxe_conn_close(&c);
	return guid;
}

int ibv_get_device_index(struct ibv_device *device)
{
	return to_xdev(device)->index;
}
