// SPDX-License-Identifier: MIT
/*
 * Loading, attaching, finding and detaching the XDP steering program.
 *
 * The kernel is the only source of truth: an interface's XDP program is found
 * by netlink (bpf_xdp_query), identified by its name and its maps' names and
 * types, and its maps are reopened by id. Pins under /sys/fs/bpf/xrxe/IFACE/
 * are a courtesy for bpftool users and are never read back (see steer.h).
 */
#include "daemon/steer.h"

#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/magic.h>

#include "daemon/bpf_log.h"
#include "util/log.h"
#include "xrxe_steer.skel.h"

#define BPFFS_MOUNT "/sys/fs/bpf"

static const char *const mode_names[] = {
	[XRXE_STEER_MODE_NATIVE] = "native",
	[XRXE_STEER_MODE_SKB] = "skb",
	[XRXE_STEER_MODE_HW] = "hw",
};

static const __u32 mode_flags[] = {
	[XRXE_STEER_MODE_NATIVE] = XDP_FLAGS_DRV_MODE,
	[XRXE_STEER_MODE_SKB] = XDP_FLAGS_SKB_MODE,
	[XRXE_STEER_MODE_HW] = XDP_FLAGS_HW_MODE,
};

static const char *const counter_names[] = {
	[XRXE_STEER_STEERED] = "steered",
	[XRXE_STEER_PASSED] = "passed",
	[XRXE_STEER_DROP_SHORT] = "drop_short",
	[XRXE_STEER_DROP_BAD_BTH] = "drop_bad_bth",
	[XRXE_STEER_NO_SOCKET] = "no_socket",
	[XRXE_STEER_ECN_CE] = "ecn_ce",
};
_Static_assert(sizeof(counter_names) / sizeof(counter_names[0]) == XRXE_STEER_COUNTER_COUNT,
	       "a counter without a name");

const char *xrxe_steer_mode_name(enum xrxe_steer_mode mode)
{
	if ((unsigned)mode >= sizeof(mode_names) / sizeof(mode_names[0]))
		return "?";
	return mode_names[mode];
}

const char *xrxe_steer_counter_name(enum xrxe_steer_counter c)
{
	if ((unsigned)c >= XRXE_STEER_COUNTER_COUNT)
		return "?";
	return counter_names[c];
}


/* --- finding our program ------------------------------------------------------ */

static int steer_ifindex(const char *ifname, unsigned int *ifindex)
{
	/* if_nametoindex would truncate a long name into somebody else's. */
	if (!ifname || !*ifname || strlen(ifname) >= IF_NAMESIZE) {
		xrxe_err("%s: no such interface", ifname ? ifname : "(null)");
		return -ENODEV;
	}
	*ifindex = if_nametoindex(ifname);
	if (*ifindex)
		return 0;
	if (errno == ENODEV || errno == ENXIO) {
		xrxe_err("%s: no such interface", ifname);
		return -ENODEV;
	}
	xrxe_err("%s: cannot look up the interface: %s", ifname, strerror(errno));
	return -errno;
}

/* Whether a map reopened by id is one of ours, and which. */
static bool map_is(const struct bpf_map_info *mi, const char *name, __u32 type)
{
	return mi->type == type && !strcmp(mi->name, name);
}

/* From an attached program, its stats and xsks maps (fds, -1 when absent) and
 * the UDP port in its .rodata. The port is read with the skeleton's own rodata
 * layout, generated from the same object file, so the offset cannot drift. */
static int prog_maps(int prog_fd, struct xrxe_steer_maps *maps, uint16_t *udp_port)
{
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info);
	__u32 ids[8];
	int err;

	maps->stats_fd = maps->xsks_fd = -1;
	maps->stats_entries = 0;
	*udp_port = 0;

	info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	info.map_ids = (__u64)(unsigned long)ids;
	err = bpf_obj_get_info_by_fd(prog_fd, &info, &info_len);
	if (err)
		return err;
	if (info.nr_map_ids > sizeof(ids) / sizeof(ids[0]))
		info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);

	for (__u32 i = 0; i < info.nr_map_ids; i++) {
		struct bpf_map_info mi = { 0 };
		__u32 mi_len = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]);
		size_t nlen;

		if (fd < 0)
			continue; /* went away with a concurrent detach: not ours then */
		if (bpf_obj_get_info_by_fd(fd, &mi, &mi_len)) {
			close(fd);
			continue;
		}
		nlen = strlen(mi.name);
		if (maps->stats_fd < 0 && map_is(&mi, XRXE_STEER_STATS_MAP, BPF_MAP_TYPE_PERCPU_ARRAY) &&
		    mi.value_size == sizeof(struct xrxe_steer_stat)) {
			maps->stats_fd = fd;
			maps->stats_entries = mi.max_entries;
			continue;
		}
		if (maps->xsks_fd < 0 && map_is(&mi, XRXE_STEER_XSKS_MAP, BPF_MAP_TYPE_XSKMAP)) {
			maps->xsks_fd = fd;
			continue;
		}
		/* libbpf names it "<first 8 chars of the object>.rodata". */
		if (mi.type == BPF_MAP_TYPE_ARRAY && nlen >= 7 && !strcmp(mi.name + nlen - 7, ".rodata") &&
		    mi.value_size == sizeof(struct xrxe_steer__rodata)) {
			struct xrxe_steer__rodata ro;
			__u32 key = 0;

			if (!bpf_map_lookup_elem(fd, &key, &ro))
				*udp_port = ro.roce_udp_port;
		}
		close(fd);
	}
	return 0;
}

static void maps_close(struct xrxe_steer_maps *maps)
{
	if (maps->stats_fd >= 0)
		close(maps->stats_fd);
	if (maps->xsks_fd >= 0)
		close(maps->xsks_fd);
	maps->stats_fd = maps->xsks_fd = -1;
	maps->stats_entries = 0;
}

/* Fill *state for ifindex; with maps non-NULL and the program ours, hand over
 * its map fds too. Logs its own errors. */
static int steer_inspect(const char *ifname, unsigned int ifindex, struct xrxe_steer_state *state,
			 struct xrxe_steer_maps *maps)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info);
	struct xrxe_steer_maps found;
	int prog_fd, err;

	memset(state, 0, sizeof(*state));
	state->ifindex = ifindex;
	if (maps)
		maps->stats_fd = maps->xsks_fd = -1;

	err = bpf_xdp_query((int)ifindex, 0, &q);
	if (err) {
		xrxe_err("%s: cannot query XDP: %s", ifname, strerror(-err));
		return err;
	}
	/* Native and generic cannot coexist (the kernel refuses); an offloaded
	 * program can sit next to either, so it is reported last. */
	if (q.drv_prog_id) {
		state->prog_id = q.drv_prog_id;
		state->mode = XRXE_STEER_MODE_NATIVE;
	} else if (q.skb_prog_id) {
		state->prog_id = q.skb_prog_id;
		state->mode = XRXE_STEER_MODE_SKB;
	} else if (q.hw_prog_id) {
		state->prog_id = q.hw_prog_id;
		state->mode = XRXE_STEER_MODE_HW;
	} else {
		return 0;
	}
	state->attached = true;

	prog_fd = bpf_prog_get_fd_by_id(state->prog_id);
	if (prog_fd < 0) {
		err = -errno;
		if (err == -EPERM || err == -EACCES)
			xrxe_err("%s: identifying XDP program id %u needs root (CAP_SYS_ADMIN)",
				 ifname, state->prog_id);
		else
			xrxe_err("%s: cannot open XDP program id %u: %s", ifname, state->prog_id,
				 strerror(-err));
		return err;
	}
	err = bpf_obj_get_info_by_fd(prog_fd, &info, &info_len);
	if (err) {
		xrxe_err("%s: cannot read XDP program id %u: %s", ifname, state->prog_id,
			 strerror(-err));
		goto out_prog;
	}
	snprintf(state->prog_name, sizeof(state->prog_name), "%s", info.name);
	if (strcmp(info.name, XRXE_STEER_PROG_NAME) || info.type != BPF_PROG_TYPE_XDP)
		goto out_prog;

	/* A name is easy to share; ours also has our two maps. */
	err = prog_maps(prog_fd, &found, &state->udp_port);
	if (err) {
		xrxe_err("%s: cannot read the maps of XDP program id %u: %s", ifname,
			 state->prog_id, strerror(-err));
		goto out_prog;
	}
	state->ours = found.stats_fd >= 0 && found.xsks_fd >= 0;
	if (state->ours && maps)
		*maps = found;
	else
		maps_close(&found);
out_prog:
	close(prog_fd);
	return err;
}

int xrxe_steer_query(const char *ifname, struct xrxe_steer_state *state)
{
	unsigned int ifindex;
	int err;

	xrxe_bpf_quiet_begin();
	err = steer_ifindex(ifname, &ifindex);
	if (!err)
		err = steer_inspect(ifname, ifindex, state, NULL);
	xrxe_bpf_quiet_end();
	return err;
}

/* --- pins -------------------------------------------------------------------- */

static bool bpffs_mounted(void)
{
	struct statfs st;

	return !statfs(BPFFS_MOUNT, &st) && st.f_type == BPF_FS_MAGIC;
}

/* bpffs is often not mounted, and `ip netns exec` gives each command a fresh
 * /sys without it: mount it where every tool looks. */
static int bpffs_ensure(void)
{
	if (bpffs_mounted())
		return 0;
	if (mount("bpf", BPFFS_MOUNT, "bpf", 0, "mode=0700"))
		return -errno;
	return 0;
}

static int pin_path(char *buf, size_t size, const char *ifname, const char *leaf)
{
	int n = snprintf(buf, size, "%s/%s%s%s", XRXE_STEER_PIN_ROOT, ifname, leaf ? "/" : "",
			 leaf ? leaf : "");

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int mkdir_exist_ok(const char *path)
{
	return mkdir(path, 0700) && errno != EEXIST ? -errno : 0;
}

/* Remove the pins and, when empty, the directories (ours by their path). */
static void unpin_maps(const char *ifname)
{
	static const char *const leaves[] = { "stats", "xsks" };
	char path[128];

	if (!bpffs_mounted())
		return; /* nothing was (or could be) pinned in this mount namespace */
	for (unsigned i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++)
		if (!pin_path(path, sizeof(path), ifname, leaves[i]))
			unlink(path);
	if (!pin_path(path, sizeof(path), ifname, NULL))
		rmdir(path);
	rmdir(XRXE_STEER_PIN_ROOT); /* fails while another interface has pins: fine */
}

/* Best effort: a failure is a warning, never an attach failure, because
 * nothing of ours reads the pins back. */
static void pin_maps(const char *ifname, int stats_fd, int xsks_fd)
{
	const struct {
		const char *leaf;
		int fd;
	} pins[] = { { "stats", stats_fd }, { "xsks", xsks_fd } };
	char path[128];
	int err;

	err = bpffs_ensure();
	if (err) {
		xrxe_warn("%s: maps not pinned: cannot mount bpffs at %s: %s", ifname, BPFFS_MOUNT,
			  strerror(-err));
		return;
	}
	err = mkdir_exist_ok(XRXE_STEER_PIN_ROOT);
	if (!err)
		err = pin_path(path, sizeof(path), ifname, NULL);
	if (!err)
		err = mkdir_exist_ok(path);
	for (unsigned i = 0; !err && i < sizeof(pins) / sizeof(pins[0]); i++) {
		err = pin_path(path, sizeof(path), ifname, pins[i].leaf);
		if (err)
			break;
		/* A pin left by an earlier attach holds the old program's map. */
		if (unlink(path) && errno != ENOENT) {
			err = -errno;
			break;
		}
		err = bpf_obj_pin(pins[i].fd, path);
	}
	if (err) {
		xrxe_warn("%s: maps not pinned under %s/%s: %s", ifname, XRXE_STEER_PIN_ROOT, ifname,
			  strerror(-err));
		unpin_maps(ifname);
		return;
	}
	xrxe_dbg("%s: maps pinned under %s/%s", ifname, XRXE_STEER_PIN_ROOT, ifname);
}

/* --- attach / detach ------------------------------------------------------- */

static int load_and_attach(const char *ifname, unsigned int ifindex, enum xrxe_steer_mode mode,
			   uint16_t udp_port, uint32_t *prog_id)
{
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info);
	struct xrxe_steer *skel;
	int prog_fd, err;

	skel = xrxe_steer__open();
	if (!skel) {
		err = -errno;
		xrxe_err("%s: cannot open the XDP program: %s", ifname, strerror(-err));
		return err;
	}
	skel->rodata->roce_udp_port = udp_port;

	err = xrxe_steer__load(skel);
	if (err) {
		if (err == -EPERM || err == -EACCES)
			xrxe_err("%s: permission denied loading the XDP program "
				 "(needs root: CAP_BPF, CAP_NET_ADMIN)", ifname);
		else
			xrxe_err("%s: the kernel refused the XDP program: %s "
				 "(XRXE_LOG=debug shows the verifier log)", ifname, strerror(-err));
		goto out_destroy;
	}
	prog_fd = bpf_program__fd(skel->progs.xrxe_steer);

	xrxe_bpf_extack_clear();
	/* UPDATE_IF_NOEXIST: never replace a program that appeared after our query. */
	err = bpf_xdp_attach((int)ifindex, prog_fd, XDP_FLAGS_UPDATE_IF_NOEXIST | mode_flags[mode],
			     NULL);
	if (err) {
		if (err == -EPERM || err == -EACCES)
			xrxe_err("%s: permission denied attaching XDP (needs root: CAP_NET_ADMIN)",
				 ifname);
		else
			xrxe_err("%s: cannot attach XDP in %s mode: %s%s", ifname, mode_names[mode],
				 strerror(-err), xrxe_bpf_extack_suffix());
		goto out_destroy;
	}
	if (!bpf_obj_get_info_by_fd(prog_fd, &info, &info_len))
		*prog_id = info.id;
	pin_maps(ifname, bpf_map__fd(skel->maps.xrxe_stats), bpf_map__fd(skel->maps.xrxe_xsks));

out_destroy:
	/* Attached, the interface holds the program and the program its maps. */
	xrxe_steer__destroy(skel);
	return err;
}

int xrxe_steer_attach_port(const char *ifname, enum xrxe_steer_mode mode, uint16_t udp_port,
			   bool *already)
{
	struct xrxe_steer_maps maps = { .stats_fd = -1, .xsks_fd = -1 };
	struct xrxe_steer_state st;
	unsigned int ifindex;
	uint32_t prog_id = 0;
	int err;

	*already = false;
	if (mode != XRXE_STEER_MODE_NATIVE && mode != XRXE_STEER_MODE_SKB) {
		xrxe_err("%s: cannot attach in %s mode", ifname, xrxe_steer_mode_name(mode));
		return -EINVAL;
	}
	if (!udp_port)
		udp_port = XRXE_STEER_DEFAULT_UDP_PORT;

	xrxe_bpf_quiet_begin();
	err = steer_ifindex(ifname, &ifindex);
	if (err)
		goto out;
	err = steer_inspect(ifname, ifindex, &st, &maps);
	if (err)
		goto out;

	if (st.ours && st.mode == mode && st.udp_port == udp_port) {
		*already = true;
		/* Pins do not outlive an `ip netns exec` session: renew them. */
		pin_maps(ifname, maps.stats_fd, maps.xsks_fd);
		goto out_maps;
	}
	if (st.ours) {
		xrxe_err("%s: xrxe steering is already attached in %s mode for UDP port %u "
			 "(prog id %u); detach it first", ifname, mode_names[st.mode], st.udp_port,
			 st.prog_id);
		err = -EBUSY;
		goto out_maps;
	}
	if (st.attached) {
		xrxe_err("%s: another XDP program is attached (id %u, name '%s', %s mode); "
			 "not replacing it", ifname, st.prog_id, st.prog_name, mode_names[st.mode]);
		err = -EBUSY;
		goto out;
	}

	err = load_and_attach(ifname, ifindex, mode, udp_port, &prog_id);
	if (!err)
		xrxe_dbg("%s: attached %s in %s mode (prog id %u, UDP port %u)", ifname,
			 XRXE_STEER_PROG_NAME, mode_names[mode], prog_id, udp_port);
	goto out;

out_maps:
	maps_close(&maps);
out:
	xrxe_bpf_quiet_end();
	return err;
}

int xrxe_steer_attach(const char *ifname, enum xrxe_steer_mode mode, bool *already)
{
	return xrxe_steer_attach_port(ifname, mode, 0, already);
}

int xrxe_steer_detach(const char *ifname)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	struct xrxe_steer_state st;
	unsigned int ifindex;
	int err;

	xrxe_bpf_quiet_begin();
	err = steer_ifindex(ifname, &ifindex);
	if (err)
		goto out;
	err = steer_inspect(ifname, ifindex, &st, NULL);
	if (err)
		goto out;
	if (!st.attached) {
		xrxe_err("%s: no XDP program is attached", ifname);
		err = -ENOENT;
		goto out;
	}
	if (!st.ours) {
		xrxe_err("%s: the attached XDP program is not xrxe's (id %u, name '%s', %s mode); "
			 "leaving it", ifname, st.prog_id, st.prog_name, mode_names[st.mode]);
		err = -EBUSY;
		goto out;
	}

	opts.old_prog_fd = bpf_prog_get_fd_by_id(st.prog_id);
	if (opts.old_prog_fd < 0) {
		err = -errno;
		xrxe_err("%s: cannot open XDP program id %u: %s", ifname, st.prog_id, strerror(-err));
		goto out;
	}
	/* REPLACE with the program we inspected: if it changed since, the kernel
	 * refuses instead of detaching somebody else's. */
	xrxe_bpf_extack_clear();
	err = bpf_xdp_detach((int)ifindex, XDP_FLAGS_REPLACE | mode_flags[st.mode], &opts);
	close(opts.old_prog_fd);
	if (err) {
		if (err == -EPERM || err == -EACCES)
			xrxe_err("%s: permission denied detaching XDP (needs root: CAP_NET_ADMIN)",
				 ifname);
		else
			xrxe_err("%s: cannot detach XDP program id %u: %s%s", ifname, st.prog_id,
				 strerror(-err), xrxe_bpf_extack_suffix());
		goto out;
	}
	unpin_maps(ifname);
	xrxe_dbg("%s: detached %s (prog id %u, %s mode)", ifname, XRXE_STEER_PROG_NAME, st.prog_id,
		 mode_names[st.mode]);
out:
	xrxe_bpf_quiet_end();
	return err;
}

/* --- maps ---------------------------------------------------------------------- */

int xrxe_steer_open_maps(const char *ifname, struct xrxe_steer_maps *maps)
{
	struct xrxe_steer_state st;
	unsigned int ifindex;
	int err;

	maps->stats_fd = maps->xsks_fd = -1;
	maps->stats_entries = 0;
	xrxe_bpf_quiet_begin();
	err = steer_ifindex(ifname, &ifindex);
	if (!err)
		err = steer_inspect(ifname, ifindex, &st, maps);
	if (!err && !st.ours) {
		xrxe_err("%s: xrxe steering is not attached", ifname);
		err = -ENOENT;
	}
	xrxe_bpf_quiet_end();
	return err;
}

void xrxe_steer_close_maps(struct xrxe_steer_maps *maps)
{
	maps_close(maps);
}

int xrxe_steer_read_stats(const struct xrxe_steer_maps *maps,
			  struct xrxe_steer_stat out[XRXE_STEER_COUNTER_COUNT])
{
	struct xrxe_steer_stat *percpu;
	int ncpus, err = 0;

	memset(out, 0, sizeof(*out) * XRXE_STEER_COUNTER_COUNT);
	/* A lookup in a per-CPU map returns one value per possible CPU. */
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 0) {
		xrxe_err("cannot count the possible CPUs: %s", strerror(-ncpus));
		return ncpus;
	}
	percpu = calloc((size_t)ncpus, sizeof(*percpu));
	if (!percpu) {
		xrxe_err("out of memory");
		return -ENOMEM;
	}
	for (__u32 key = 0; key < XRXE_STEER_COUNTER_COUNT && key < maps->stats_entries; key++) {
		if (bpf_map_lookup_elem(maps->stats_fd, &key, percpu)) {
			err = -errno;
			xrxe_err("cannot read the steering counters: %s", strerror(-err));
			break;
		}
		for (int cpu = 0; cpu < ncpus; cpu++) {
			out[key].packets += percpu[cpu].packets;
			out[key].bytes += percpu[cpu].bytes;
		}
	}
	free(percpu);
	return err;
}
