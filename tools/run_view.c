// SPDX-License-Identifier: MIT
/*
 * The device view of `xrxe run`: what a kernel RDMA device shows in sysfs and
 * /dev, presented for the xrxe devices of this network namespace, in a
 * private mount namespace that only the program run (and its children) see.
 *
 * Why: UCX skips a verbs device unless /dev/infiniband/<dev_name> is a
 * character device it can open read-write, and reads GID types, netdevs,
 * NUMA nodes and port attributes from /sys/class/infiniband; Open MPI, hwloc
 * and GID pickers read the same files. The shim (src/verbs) answers every
 * verb; these files only have to say the same things the verbs say, so they
 * are written from what the shim itself reports (it is dlopen()ed here), and
 * the names match by construction.
 *
 * How, without changing anything outside (docs/ucx-mpi.md):
 *  - root: unshare(CLONE_NEWNS); everyone else: a new user namespace mapping
 *    only the caller's own uid and gid, owning the new mount namespace, so no
 *    privilege is gained (the program keeps its uid, and its capabilities end
 *    at exec);
 *  - every mount is made private first, so nothing propagates back;
 *  - /sys/class and /dev are covered with a tmpfs on which every entry of the
 *    real directory is bind-mounted back (sysfs and devtmpfs cannot be
 *    written, and /sys/class/infiniband and /dev/infiniband usually do not
 *    exist), then infiniband, infiniband_verbs and /dev/infiniband are added;
 *  - the device nodes are bind mounts of /dev/null: a character device that
 *    opens read-write and does nothing (a user namespace may not mknod, and
 *    the real uverbs major would name a kernel device that is not ours).
 * The view is a snapshot taken when the program starts: a GID added later is
 * answered by the verbs (the device page) but not by these files.
 */
#include "run_view.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "xrxe/abi.h"

#define VIEW_MAX_GIDS 64

/* The verbs the view needs, from the shim (the prototypes of verbs.h; the
 * exported ibv_query_port is the compat one that fills 48 bytes, which
 * include every field written here). */
struct shim_fns {
	struct ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct ibv_device **list);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
	int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port, uint32_t index,
			    struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size);
};

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* --- namespaces ------------------------------------------------------------ */

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

static int enter_namespaces(char *why, size_t len)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];
	int err;

	if (uid == 0) {
		if (unshare(CLONE_NEWNS) < 0) {
			err = -errno;
			say(why, len, "unshare(CLONE_NEWNS): %s", strerror(errno));
			return err;
		}
	} else {
		/* The user namespace maps nobody but ourselves: inside it we
		 * may mount (in the mount namespace it owns), outside we are
		 * who we were. setgroups must be denied before a gid map can
		 * be written unprivileged (user_namespaces(7)). */
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
			err = -errno;
			say(why, len, "unshare(CLONE_NEWUSER|CLONE_NEWNS): %s (unprivileged user namespaces disabled?)",
			    strerror(errno));
			return err;
		}
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		if ((err = write_file("/proc/self/uid_map", map)) ||
		    ((err = write_file("/proc/self/setgroups", "deny")) && err != -ENOENT)) {
			say(why, len, "writing the user namespace's uid map: %s", strerror(-err));
			return err;
		}
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		if ((err = write_file("/proc/self/gid_map", map))) {
			say(why, len, "writing the user namespace's gid map: %s", strerror(-err));
			return err;
		}
	}
	/* Nothing mounted from here on may propagate to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		err = -errno;
		say(why, len, "making mounts private: %s", strerror(errno));
		return err;
	}
	return 0;
}

/* --- covering a directory ------------------------------------------------ */

static bool skipped(const char *name, const char *const *skip)
{
	for (; skip && *skip; skip++)
		if (!strcmp(name, *skip))
			return true;
	return false;
}

/*
 * Mount a tmpfs over dir and put every entry of the real dir back (bind
 * mounts, recursive so that mounts below them come along; symlinks copied),
 * except the names in skip. The real directory stays reachable through an
 * fd opened before it was covered.
 */
static int cover_dir(const char *dir, const char *const *skip, char *why, size_t len)
{
	char src[PATH_MAX], dst[PATH_MAX], target[PATH_MAX];
	struct dirent *de;
	int old, err = 0;
	DIR *d;

	old = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (old < 0) {
		err = -errno;
		say(why, len, "%s: %s", dir, strerror(errno));
		return err;
	}
	d = fdopendir(dup(old));
	if (!d) {
		err = -errno;
		close(old);
		say(why, len, "%s: %s", dir, strerror(errno));
		return err;
	}
	if (mount("xrxe-view", dir, "tmpfs", MS_NOSUID, "mode=0755") < 0) {
		err = -errno;
		say(why, len, "mounting a tmpfs on %s: %s", dir, strerror(errno));
		goto out;
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		ssize_t l;
		int fd;

		if (!strcmp(n, ".") || !strcmp(n, "..") || skipped(n, skip))
			continue;
		unsigned char type = de->d_type;

		if (type == DT_UNKNOWN) { /* a file system that does not say */
			struct stat st;

			if (fstatat(old, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
		}
		snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", old, n);
		snprintf(dst, sizeof(dst), "%s/%s", dir, n);
		if (type == DT_LNK) {
			l = readlinkat(old, n, target, sizeof(target) - 1);
			if (l < 0)
				continue;
			target[l] = '\0';
			if (symlink(target, dst) < 0)
				goto fail;
			continue;
		}
		if (type == DT_DIR) {
			if (mkdir(dst, 0755) < 0)
				goto fail;
		} else {
			fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			if (fd < 0)
				goto fail;
			close(fd);
		}
		/* An entry we may not see (EACCES) is left out, as in a
		 * container: only failures of our own mounts are fatal. */
		if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0 && errno != EACCES &&
		    errno != ENOENT)
			goto fail;
	}
	goto out;
fail:
	err = -errno;
	say(why, len, "re-exposing %s in the view of %s: %s", dst, dir, strerror(errno));
	umount2(dir, MNT_DETACH); /* the real directory again, whole */
out:
	closedir(d);
	close(old);
	return err;
}

/* --- writing the view ---------------------------------------------------- */

static int mkdirs(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return mkdir(p, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* put(path-format..., then the content format): create the file (and its
 * directories) read-only with the content, as sysfs prints it. */
static int put(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put(const char *path, const char *fmt, ...)
{
	char dir[PATH_MAX], *slash;
	va_list ap;
	FILE *f;
	int err = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		if ((err = mkdirs(dir)))
			return err;
	}
	f = fopen(path, "we");
	if (!f)
		return -errno;
	va_start(ap, fmt);
	if (vfprintf(f, fmt, ap) < 0)
		err = -EIO;
	va_end(ap);
	if (fclose(f))
		err = -errno;
	chmod(path, 0444);
	return err;
}

/* sysfs's port state and physical state strings (drivers/infiniband/core/
 * sysfs.c state_show, phys_state_show). */
static const char *state_name(enum ibv_port_state s)
{
	static const char *const n[] = { "NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER" };

	return (unsigned)s < sizeof(n) / sizeof(n[0]) ? n[s] : "UNKNOWN";
}

static const char *phys_state_name(uint8_t s)
{
	static const char *const n[] = { "<unknown>", "Sleep", "Polling", "Disabled",
					 "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery",
					 "Phy Test" };

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "<unknown>";
}

/* "10 Gb/sec (1X FDR10)" as sysfs rate_show prints it: the lane rate in
 * tenths of Gb/s times the width. */
static void rate_text(char *buf, size_t len, uint8_t speed, uint8_t width)
{
	int tenths, lanes;
	const char *name;

	switch (speed) {
	case 2: tenths = 50; name = " DDR"; break;
	case 4: /* fall through */
	case 8: tenths = 100; name = speed == 4 ? " QDR" : " FDR10"; break;
	case 16: tenths = 140; name = " FDR"; break;
	case 32: tenths = 250; name = " EDR"; break;
	case 64: tenths = 500; name = " HDR"; break;
	case 128: tenths = 1000; name = " NDR"; break;
	default: tenths = 25; name = ""; break; /* SDR */
	}
	switch (width) {
	case 2: lanes = 4; break;
	case 4: lanes = 8; break;
	case 8: lanes = 12; break;
	case 16: lanes = 2; break;
	default: lanes = 1; break;
	}
	tenths *= lanes;
	snprintf(buf, len, "%d%s Gb/sec (%dX%s)\n", tenths / 10, tenths % 10 ? ".5" : "", lanes,
		 name);
}

static void guid_text(char *buf, size_t len, __be64 guid_be)
{
	uint8_t g[8];

	memcpy(g, &guid_be, 8);
	snprintf(buf, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", g[0], g[1], g[2], g[3], g[4],
		 g[5], g[6], g[7]);
}

static void gid_text(char *buf, size_t len, const union ibv_gid *gid)
{
	const uint8_t *r = gid->raw;

	snprintf(buf, len,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", r[0],
		 r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
		 r[14], r[15]);
}

/* The netdev's NUMA node as its own sysfs says, -1 (none) for virtual ones. */
static int netdev_numa_node(const char *ifname)
{
	char path[PATH_MAX];
	int node = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/device/numa_node", ifname);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%d", &node) != 1)
			node = -1;
		fclose(f);
	}
	return node;
}

/* One device's directories. ib = /sys/class/infiniband/NAME. */
static int write_device(const struct shim_fns *fn, struct ibv_device *dev, char *why, size_t len)
{
	struct ibv_context *ctx = fn->open_device(dev);
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	char ib[PATH_MAX], p[PATH_MAX + 64], text[128], ifname[IF_NAMESIZE] = "";
	const char *name = dev->name;
	int err = 0;

	if (!ctx) /* its daemon stopped since it was listed: no view for it */
		return 0;
	memset(&pa, 0, sizeof(pa));
	if (fn->query_device(ctx, &da) || fn->query_port(ctx, 1, &pa)) {
		err = -EIO;
		say(why, len, "%s: querying the device", name);
		goto out;
	}
	if (!strncmp(name, XRXE_DEV_PREFIX, strlen(XRXE_DEV_PREFIX)))
		snprintf(ifname, sizeof(ifname), "%s", name + strlen(XRXE_DEV_PREFIX));

	snprintf(ib, sizeof(ib), "/sys/class/infiniband/%s", name);
	guid_text(text, sizeof(text), da.node_guid);
	err = put((snprintf(p, sizeof(p), "%s/node_guid", ib), p), "%s", text);
	guid_text(text, sizeof(text), da.sys_image_guid);
	err = err ?: put((snprintf(p, sizeof(p), "%s/sys_image_guid", ib), p), "%s", text);
	err = err ?: put((snprintf(p, sizeof(p), "%s/node_type", ib), p), "1: CA\n");
	err = err ?: put((snprintf(p, sizeof(p), "%s/fw_ver", ib), p), "%s\n", da.fw_ver);
	err = err ?: put((snprintf(p, sizeof(p), "%s/hw_rev", ib), p), "0x%x\n", da.hw_ver);
	err = err ?: put((snprintf(p, sizeof(p), "%s/hca_type", ib), p), "xrxe\n");
	err = err ?: put((snprintf(p, sizeof(p), "%s/node_desc", ib), p), "xrxe %s\n", ifname);
	/* device/: no PCI function behind a software device; the netdev's
	 * NUMA node and the netdev itself (rdma-core's suite finds the IP
	 * address of a device through device/net/NETDEV). */
	err = err ?: put((snprintf(p, sizeof(p), "%s/device/numa_node", ib), p), "%d\n",
			 netdev_numa_node(ifname));
	if (!err && *ifname) {
		snprintf(p, sizeof(p), "%s/device/net", ib);
		err = mkdirs(p);
		snprintf(p, sizeof(p), "%s/device/net/%s", ib, ifname);
		snprintf(text, sizeof(text), "/sys/class/net/%s", ifname);
		if (!err && symlink(text, p) < 0)
			err = -errno;
	}

	/* ports/1 (one port per device) */
	err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/state", ib), p), "%d: %s\n", pa.state,
			 state_name(pa.state));
	err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/phys_state", ib), p), "%u: %s\n",
			 pa.phys_state, phys_state_name(pa.phys_state));
	rate_text(text, sizeof(text), pa.active_speed, pa.active_width);
	err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/rate", ib), p), "%s", text);
	err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/link_layer", ib), p), "%s\n",
			 pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
	err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/lid", ib), p), "0x%x\n", pa.lid);
	err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/sm_lid", ib), p), "0x%x\n", pa.sm_lid);
	err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/lid_mask_count", ib), p), "%u\n",
			 pa.lmc);
	err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/sm_sl", ib), p), "%u\n", pa.sm_sl);
	err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/cap_mask", ib), p), "0x%08x\n",
			 pa.port_cap_flags);
	err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/pkeys/0", ib), p), "0xffff\n");
	for (int i = 0; !err && i < pa.gid_tbl_len && i < VIEW_MAX_GIDS; i++) {
		struct ibv_gid_entry e;
		char ndev[IF_NAMESIZE];

		/* An empty slot: zeros in gids/, and no type or netdev (the
		 * kernel answers EINVAL when they are read). */
		if (fn->query_gid_ex(ctx, 1, (uint32_t)i, &e, 0, sizeof(e))) {
			memset(&e, 0, sizeof(e));
			gid_text(text, sizeof(text), &e.gid);
			err = put((snprintf(p, sizeof(p), "%s/ports/1/gids/%d", ib, i), p), "%s", text);
			continue;
		}
		gid_text(text, sizeof(text), &e.gid);
		err = put((snprintf(p, sizeof(p), "%s/ports/1/gids/%d", ib, i), p), "%s", text);
		err = err ?: put((snprintf(p, sizeof(p), "%s/ports/1/gid_attrs/types/%d", ib, i), p),
				 "%s\n", e.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : "IB/RoCE v1");
		if (!err && e.ndev_ifindex && if_indextoname(e.ndev_ifindex, ndev))
			err = put((snprintf(p, sizeof(p), "%s/ports/1/gid_attrs/ndevs/%d", ib, i), p),
				  "%s\n", ndev);
	}

	/* infiniband_verbs/<dev_name> and its device node */
	snprintf(ib, sizeof(ib), "/sys/class/infiniband_verbs/%s", dev->dev_name);
	err = err ?: put((snprintf(p, sizeof(p), "%s/ibdev", ib), p), "%s\n", name);
	err = err ?: put((snprintf(p, sizeof(p), "%s/abi_version", ib), p), "1\n");
	err = err ?: put((snprintf(p, sizeof(p), "%s/dev", ib), p), "1:3\n"); /* /dev/null's */
	if (!err) {
		snprintf(p, sizeof(p), "/dev/infiniband/%s", dev->dev_name);
		int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);

		if (fd < 0 || mount("/dev/null", p, NULL, MS_BIND, NULL) < 0)
			err = -errno;
		if (fd >= 0)
			close(fd);
	}
	if (err)
		say(why, len, "%s: writing its view: %s", name, strerror(-err));
out:
	fn->close_device(ctx);
	return err;
}

static int load_shim(const char *shim_dir, struct shim_fns *fn, char *why, size_t len)
{
	char lib[PATH_MAX];
	void *h;

	snprintf(lib, sizeof(lib), "%s/libibverbs.so.1", shim_dir);
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		say(why, len, "%s", dlerror());
		return -ENOENT;
	}
	*(void **)&fn->get_device_list = dlsym(h, "ibv_get_device_list");
	*(void **)&fn->free_device_list = dlsym(h, "ibv_free_device_list");
	*(void **)&fn->open_device = dlsym(h, "ibv_open_device");
	*(void **)&fn->close_device = dlsym(h, "ibv_close_device");
	*(void **)&fn->query_device = dlsym(h, "ibv_query_device");
	*(void **)&fn->query_port = dlsym(h, "ibv_query_port");
	*(void **)&fn->query_gid_ex = dlsym(h, "_ibv_query_gid_ex");
	if (!fn->get_device_list || !fn->free_device_list || !fn->open_device ||
	    !fn->close_device || !fn->query_device || !fn->query_port || !fn->query_gid_ex) {
		say(why, len, "%s: a verb is missing (not the xrxe shim?)", lib);
		return -ENOENT;
	}
	return 0;
}

int xrxe_run_view_enter(const char *shim_dir, char *why, size_t why_len)
{
	static const char *const sys_skip[] = { "infiniband", "infiniband_verbs", NULL };
	static const char *const dev_skip[] = { "infiniband", NULL };
	struct ibv_device **list;
	struct shim_fns fn;
	int n = 0, err;

	if ((err = enter_namespaces(why, why_len)))
		return err;
	/* After the unshare: the shim may start threads, and a process with
	 * threads cannot enter a new user namespace. */
	if ((err = load_shim(shim_dir, &fn, why, why_len)))
		return err;
	if ((err = cover_dir("/sys/class", sys_skip, why, why_len)))
		return err;
	if ((err = cover_dir("/dev", dev_skip, why, why_len))) {
		umount2("/sys/class", MNT_DETACH);
		return err;
	}
	if ((err = put("/sys/class/infiniband_verbs/abi_version", "6\n")) ||
	    (err = mkdirs("/sys/class/infiniband")) || (err = mkdirs("/dev/infiniband"))) {
		say(why, why_len, "creating the view's directories: %s", strerror(-err));
		return err;
	}
	list = fn.get_device_list(&n);
	for (int i = 0; list && i < n && !err; i++)
		err = write_device(&fn, list[i], why, why_len);
	if (list)
		fn.free_device_list(list);
	/* rdma_cm's node: librdmacm programs that look before they call. */
	if (!err) {
		int fd = open("/dev/infiniband/rdma_cm", O_WRONLY | O_CREAT | O_CLOEXEC, 0666);

		if (fd < 0 || mount("/dev/null", "/dev/infiniband/rdma_cm", NULL, MS_BIND, NULL) < 0) {
			err = -errno;
			say(why, why_len, "/dev/infiniband/rdma_cm: %s", strerror(errno));
		}
		if (fd >= 0)
			close(fd);
	}
	if (err) {
		/* No half view: the program sees the real directories. */
		umount2("/dev", MNT_DETACH);
		umount2("/sys/class", MNT_DETACH);
	}
	return err;
}
