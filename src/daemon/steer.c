// SPDX-License-Identifier: MIT
/*
 * Loading, attaching, finding and detaching the XDP steering program.
 *
 * The kernel is the only source of truth: an interface's XDP program is found
 * by netlink (bpf_xdp_query), identified by its name and its maps' names and
 * types, and its maps are reopened by id. Pins under /sys/fs/bpf/xrxe/IFACE/
 * are a courtesy for bpftool users and are never read back (see steer.h).
 *
 * libxdp's dispatcher (an XDP program "xdp_dispatcher" whose stubs prog0..9
 * are replaced by the real programs through freplace links) is looked into
 * the same way: the kernel lists every BPF link with the program it targets,
 * so the programs linked to the dispatcher, ours among them, are found
 * without libxdp's bpffs state. Changing the dispatcher (attach, detach) is
 * left to libxdp, which keeps that state in a bpffs shared by its users.
 */
#include "daemon/steer.h"

#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stddef.h>
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
#include <xdp/libxdp.h>
#include <xdp/prog_dispatcher.h>

#include "daemon/bpf_log.h"
#include "util/log.h"
#include "xrxe_steer.skel.h"

#define BPFFS_MOUNT "/sys/fs/bpf"
/* The source name of the bpffs we mount for pins ourselves (/proc/mounts'
 * first field): such a mount may live only as long as an `ip netns exec`
 * session, so libxdp's dispatcher state is never kept in it. */
#define BPFFS_OURS "xrxe-pins"
/* libxdp's name for its dispatcher program (BPF_OBJ_NAME_LEN-truncated). */
#define DISPATCHER_NAME "xdp_dispatcher"

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
	[XRXE_STEER_RAW_FLOW] = "raw_flow",
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

/* What prog_maps() finds in a program's .rodata. */
struct prog_rodata {
	uint16_t udp_port;
	bool by_daemon;
	bool native_refused;
};

/* From an attached program, its stats and xsks maps (fds, -1 when absent) and
 * what its .rodata says (UDP port, loaded by xrxed). The .rodata is read with
 * the skeleton's own layout, generated from the same object file, so the
 * offsets cannot drift. */
static int prog_maps(int prog_fd, struct xrxe_steer_maps *maps, struct prog_rodata *ro_out)
{
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info);
	__u32 ids[16];
	int err;

	maps->stats_fd = maps->xsks_fd = maps->flows_fd = maps->flow_count_fd = -1;
	maps->stats_entries = 0;
	memset(ro_out, 0, sizeof(*ro_out));

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
		/* raw packet QP flows (an older program has none) */
		if (maps->flows_fd < 0 && map_is(&mi, XRXE_STEER_FLOWS_MAP, BPF_MAP_TYPE_ARRAY) &&
		    mi.value_size == sizeof(struct xrxe_steer_flow) &&
		    mi.max_entries == XRXE_STEER_MAX_FLOWS) {
			maps->flows_fd = fd;
			continue;
		}
		if (maps->flow_count_fd < 0 &&
		    map_is(&mi, XRXE_STEER_FLOW_COUNT_MAP, BPF_MAP_TYPE_ARRAY) &&
		    mi.value_size == sizeof(__u32)) {
			maps->flow_count_fd = fd;
			continue;
		}
		/* libbpf names it "<first 8 chars of the object>.rodata". */
		/* Its value is the section, without the struct's tail padding. */
		if (mi.type == BPF_MAP_TYPE_ARRAY && nlen >= 7 && !strcmp(mi.name + nlen - 7, ".rodata") &&
		    mi.value_size <= sizeof(struct xrxe_steer__rodata) &&
		    mi.value_size > offsetof(struct xrxe_steer__rodata, native_refused)) {
			struct xrxe_steer__rodata ro = { 0 };
			__u32 key = 0;

			if (!bpf_map_lookup_elem(fd, &key, &ro)) {
				ro_out->udp_port = ro.roce_udp_port;
				ro_out->by_daemon = ro.loaded_by_daemon != 0;
				ro_out->native_refused = ro.native_refused != 0;
			}
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
	if (maps->flows_fd >= 0)
		close(maps->flows_fd);
	if (maps->flow_count_fd >= 0)
		close(maps->flow_count_fd);
	maps->stats_fd = maps->xsks_fd = maps->flows_fd = maps->flow_count_fd = -1;
	maps->stats_entries = 0;
}

/* Open a program by id, logging why not. */
static int prog_open(const char *ifname, uint32_t id)
{
	int fd = bpf_prog_get_fd_by_id(id);

	if (fd >= 0)
		return fd;
	fd = -errno;
	if (fd == -EPERM || fd == -EACCES)
		xrxe_err("%s: identifying XDP program id %u needs root (CAP_SYS_ADMIN)", ifname, id);
	else
		xrxe_err("%s: cannot open XDP program id %u: %s", ifname, id, strerror(-fd));
	return fd;
}

/* Whether prog_fd is our steering program (its name and our two maps; as an
 * XDP program or as an freplace component of libxdp's dispatcher). With maps
 * non-NULL and the program ours, its map fds are handed over. */
static int prog_identify(const char *ifname, int prog_fd, char name[16], bool *ours,
			 struct prog_rodata *ro, struct xrxe_steer_maps *maps)
{
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info);
	struct xrxe_steer_maps found;
	int err;

	*ours = false;
	err = bpf_obj_get_info_by_fd(prog_fd, &info, &info_len);
	if (err) {
		xrxe_err("%s: cannot read an XDP program's info: %s", ifname, strerror(-err));
		return err;
	}
	snprintf(name, 16, "%s", info.name);
	if (strcmp(info.name, XRXE_STEER_PROG_NAME) ||
	    (info.type != BPF_PROG_TYPE_XDP && info.type != BPF_PROG_TYPE_EXT))
		return 0;
	/* A name is easy to share; ours also has our two maps. */
	err = prog_maps(prog_fd, &found, ro);
	if (err) {
		xrxe_err("%s: cannot read the maps of XDP program id %u: %s", ifname, info.id,
			 strerror(-err));
		return err;
	}
	*ours = found.stats_fd >= 0 && found.xsks_fd >= 0;
	if (*ours && maps)
		*maps = found;
	else
		maps_close(&found);
	return 0;
}

/* libxdp's dispatcher: an XDP program named xdp_dispatcher whose .rodata is
 * struct xdp_dispatcher_config with libxdp's magic. *cfg gets that config. */
static bool is_dispatcher(int prog_fd, struct xdp_dispatcher_config *cfg)
{
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info), map_id = 0;
	struct bpf_map_info mi = { 0 };
	__u32 mi_len = sizeof(mi), key = 0;
	bool yes = false;
	int fd;

	info.nr_map_ids = 1;
	info.map_ids = (__u64)(unsigned long)&map_id;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &info_len) || info.type != BPF_PROG_TYPE_XDP ||
	    strcmp(info.name, DISPATCHER_NAME) || info.nr_map_ids != 1)
		return false;
	fd = bpf_map_get_fd_by_id(map_id);
	if (fd < 0)
		return false;
	if (!bpf_obj_get_info_by_fd(fd, &mi, &mi_len) && mi.type == BPF_MAP_TYPE_ARRAY &&
	    mi.value_size >= sizeof(*cfg) && mi.value_size <= 4096) {
		uint8_t buf[4096];

		if (!bpf_map_lookup_elem(fd, &key, buf)) {
			memcpy(cfg, buf, sizeof(*cfg));
			yes = cfg->magic == XDP_DISPATCHER_MAGIC;
		}
	}
	close(fd);
	return yes;
}

static int component_cmp(const void *a, const void *b)
{
	const struct xrxe_steer_component *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Fill state->components from the kernel's BPF links: every freplace link
 * whose target is the dispatcher is one of its programs. Ours gets its maps
 * handed over (maps non-NULL). */
static int dispatcher_inspect(const char *ifname, int disp_fd, const struct xdp_dispatcher_config *cfg,
			      struct xrxe_steer_state *state, struct xrxe_steer_maps *maps)
{
	struct bpf_prog_info dinfo = { 0 };
	__u32 dinfo_len = sizeof(dinfo);
	__u32 id = 0;
	int err;

	err = bpf_obj_get_info_by_fd(disp_fd, &dinfo, &dinfo_len);
	if (err)
		return err;

	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_info li = { 0 };
		__u32 li_len = sizeof(li);
		struct xrxe_steer_component *c;
		struct prog_rodata ro;
		int lfd, pfd;
		bool ours;

		lfd = bpf_link_get_fd_by_id(id);
		if (lfd < 0) {
			if (errno == EPERM || errno == EACCES) {
				err = -errno;
				xrxe_err("%s: reading libxdp's dispatcher needs root (CAP_SYS_ADMIN)",
					 ifname);
				break;
			}
			continue; /* gone meanwhile */
		}
		err = bpf_obj_get_info_by_fd(lfd, &li, &li_len);
		close(lfd);
		if (err) {
			err = 0;
			continue;
		}
		if (li.type != BPF_LINK_TYPE_TRACING || li.tracing.target_obj_id != dinfo.id)
			continue;
		if (state->ncomponents >= XRXE_STEER_MAX_COMPONENTS)
			continue;
		pfd = bpf_prog_get_fd_by_id(li.prog_id);
		if (pfd < 0)
			continue;
		c = &state->components[state->ncomponents];
		/* slot holds the link id until the order is known (below). */
		*c = (struct xrxe_steer_component){ .prog_id = li.prog_id, .slot = id };
		err = prog_identify(ifname, pfd, c->name, &ours,
				    &ro, !state->ours ? maps : NULL);
		close(pfd);
		if (err)
			break;
		state->ncomponents++;
		if (ours && !state->ours) {
			c->ours = true;
			state->ours = true;
			state->prog_id = li.prog_id;
			state->udp_port = ro.udp_port;
			state->by_daemon = ro.by_daemon;
			state->native_refused = ro.native_refused;
		}
	}
	/* The slot a link fills: libxdp links a dispatcher's programs in slot
	 * order, one pass, when it builds the dispatcher, and link ids grow, so
	 * the n-th link is slot n. (The link's target BTF id would name the
	 * stub "prog<n>" directly, but a 6.1 kernel reports the dispatcher's
	 * main function for the program whose load-time target it was.) */
	qsort(state->components, state->ncomponents, sizeof(state->components[0]), component_cmp);
	for (unsigned i = 0; i < state->ncomponents; i++) {
		state->components[i].slot = i;
		state->components[i].priority = i < cfg->num_progs_enabled &&
							i < MAX_DISPATCHER_ACTIONS
						? cfg->run_prios[i]
						: 0;
	}
	return err;
}

/* Fill *state for ifindex; with maps non-NULL and the program ours, hand over
 * its map fds too. Logs its own errors. */
static int steer_inspect(const char *ifname, unsigned int ifindex, struct xrxe_steer_state *state,
			 struct xrxe_steer_maps *maps)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct xdp_dispatcher_config cfg;
	struct prog_rodata ro;
	int prog_fd, err;

	memset(state, 0, sizeof(*state));
	state->ifindex = ifindex;
	if (maps)
		maps->stats_fd = maps->xsks_fd = maps->flows_fd = maps->flow_count_fd = -1;

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
	state->attached_id = state->prog_id;

	prog_fd = prog_open(ifname, state->prog_id);
	if (prog_fd < 0)
		return prog_fd;
	err = prog_identify(ifname, prog_fd, state->prog_name, &state->ours, &ro, maps);
	if (err)
		goto out_prog;
	if (state->ours) {
		state->udp_port = ro.udp_port;
		state->by_daemon = ro.by_daemon;
		state->native_refused = ro.native_refused;
	} else if (is_dispatcher(prog_fd, &cfg)) {
		state->dispatcher = true;
		err = dispatcher_inspect(ifname, prog_fd, &cfg, state, maps);
	}
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
	if (mount(BPFFS_OURS, BPFFS_MOUNT, "bpf", 0, "mode=0700"))
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

/* --- libxdp ------------------------------------------------------------------ */

static const enum xdp_attach_mode libxdp_modes[] = {
	[XRXE_STEER_MODE_NATIVE] = XDP_MODE_NATIVE,
	[XRXE_STEER_MODE_SKB] = XDP_MODE_SKB,
	[XRXE_STEER_MODE_HW] = XDP_MODE_HW,
};

/* libxdp's messages go where libbpf's do (bpf_log.c): the debug level, our
 * callers print one line per failure. */
static int libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL;
	size_t len;

	(void)level;
	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	len = strlen(msg);
	while (len && msg[len - 1] == '\n')
		msg[--len] = '\0';
	xrxe_dbg("libxdp: %s", msg);
	free(msg);
	return 0;
}

/* Where libxdp keeps its dispatcher's state: LIBXDP_BPFFS, else /sys/fs/bpf
 * (libxdp's own rule). */
static const char *libxdp_bpffs(void)
{
	const char *env = secure_getenv("LIBXDP_BPFFS");

	return env && *env ? env : BPFFS_MOUNT;
}

/* Whether libxdp's dispatcher can be used: its bpffs must be mounted and not
 * be one we mounted for pins. The dispatcher's programs stay linked only as
 * long as their pins exist, and all libxdp users (xdp-filter, xdp-loader, us)
 * must see the same pins; a bpffs mounted inside an `ip netns exec` session
 * goes away with it (and the programs with it), and other sessions never see
 * it. So only a bpffs somebody set up for sharing counts. */
static bool libxdp_bpffs_shared(const char **why)
{
	const char *dir = libxdp_bpffs();
	struct statfs st;
	bool ours = false;
	char line[512];
	FILE *f;

	if (statfs(dir, &st) || st.f_type != BPF_FS_MAGIC) {
		*why = "no bpffs is mounted there";
		return false;
	}
	f = fopen("/proc/self/mounts", "re");
	if (f) {
		/* The last mount on dir is the one in effect. */
		while (fgets(line, sizeof(line), f)) {
			char src[128], where[256], type[32];

			if (sscanf(line, "%127s %255s %31s", src, where, type) == 3 &&
			    !strcmp(where, dir) && !strcmp(type, "bpf"))
				ours = !strcmp(src, BPFFS_OURS);
		}
		fclose(f);
	}
	if (ours) {
		*why = "the bpffs there is the one xrxe mounted for its pins, which may "
		       "vanish with this mount namespace";
		return false;
	}
	return true;
}

/* Load our program from the skeleton as a component of libxdp's dispatcher
 * (libxdp loads it as an freplace program of the dispatcher's next slot and
 * rebuilds the dispatcher with the programs already there). */
static int libxdp_attach(const char *ifname, unsigned int ifindex, struct xrxe_steer *skel,
			 enum xrxe_steer_mode mode, uint32_t priority, uint32_t *prog_id)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, popts, .obj = skel->obj,
			    .prog_name = XRXE_STEER_PROG_NAME);
	struct xdp_program *prog;
	char msg[128];
	int err;

	libxdp_set_print(libxdp_print);
	prog = xdp_program__create(&popts);
	err = (int)libxdp_get_error(prog);
	if (err) {
		libxdp_strerror(err, msg, sizeof(msg));
		xrxe_err("%s: libxdp cannot take the XDP program: %s", ifname, msg);
		return err;
	}
	if (priority) {
		err = xdp_program__set_run_prio(prog, priority);
		if (err)
			goto out;
	}
	xrxe_bpf_extack_clear();
	err = xdp_program__attach(prog, (int)ifindex, libxdp_modes[mode], 0);
	if (err) {
		libxdp_strerror(err, msg, sizeof(msg));
		if (err == -EPERM || err == -EACCES)
			xrxe_err("%s: permission denied attaching XDP (needs root: CAP_BPF, "
				 "CAP_NET_ADMIN, CAP_SYS_ADMIN)", ifname);
		else
			xrxe_err("%s: cannot attach XDP in %s mode through libxdp's dispatcher: %s%s "
				 "(XRXE_LOG=debug shows libxdp's reasons)",
				 ifname, mode_names[mode], msg, xrxe_bpf_extack_suffix());
		goto out;
	}
	*prog_id = xdp_program__id(prog);
out:
	xdp_program__close(prog);
	return err;
}

/* Remove our program from libxdp's dispatcher: libxdp rebuilds it without
 * ours, or removes it when ours was the last. */
static int libxdp_detach(const char *ifname, unsigned int ifindex,
			 const struct xrxe_steer_state *st)
{
	struct xdp_program *prog;
	const char *why;
	char msg[128];
	int err;

	libxdp_set_print(libxdp_print);
	if (!libxdp_bpffs_shared(&why)) {
		xrxe_err("%s: xrxe's program (id %u) runs in libxdp's dispatcher (id %u), whose "
			 "state is kept in a bpffs this process does not see at %s (%s); detach "
			 "it where it was attached, or set LIBXDP_BPFFS", ifname, st->prog_id,
			 st->attached_id, libxdp_bpffs(), why);
		return -ENOENT;
	}
	prog = xdp_program__from_id(st->prog_id);
	err = (int)libxdp_get_error(prog);
	if (err) {
		libxdp_strerror(err, msg, sizeof(msg));
		xrxe_err("%s: cannot open XDP program id %u: %s", ifname, st->prog_id, msg);
		return err;
	}
	xrxe_bpf_extack_clear();
	err = xdp_program__detach(prog, (int)ifindex, libxdp_modes[st->mode], 0);
	xdp_program__close(prog);
	if (err) {
		libxdp_strerror(err, msg, sizeof(msg));
		if (err == -EPERM || err == -EACCES)
			xrxe_err("%s: permission denied detaching XDP (needs root: CAP_NET_ADMIN)",
				 ifname);
		else if (err == -ENOENT)
			xrxe_err("%s: libxdp does not find xrxe's program (id %u) in its dispatcher "
				 "(id %u): its state under %s/xdp is missing (attached from another "
				 "mount namespace?)", ifname, st->prog_id, st->attached_id,
				 libxdp_bpffs());
		else
			xrxe_err("%s: cannot detach XDP program id %u from libxdp's dispatcher: %s%s",
				 ifname, st->prog_id, msg, xrxe_bpf_extack_suffix());
	}
	return err;
}

/* --- attach / detach ------------------------------------------------------- */

static int load_and_attach(const char *ifname, unsigned int ifindex,
			   const struct xrxe_steer_attach_opts *o, bool use_libxdp, uint32_t *prog_id)
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
	skel->rodata->roce_udp_port = o->udp_port;
	skel->rodata->loaded_by_daemon = o->by_daemon;
	skel->rodata->native_refused = o->native_refused;

	if (use_libxdp) {
		err = libxdp_attach(ifname, ifindex, skel, o->mode, o->priority, prog_id);
		if (!err)
			pin_maps(ifname, bpf_map__fd(skel->maps.xrxe_stats),
				 bpf_map__fd(skel->maps.xrxe_xsks));
		goto out_destroy;
	}

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
	err = bpf_xdp_attach((int)ifindex, prog_fd, XDP_FLAGS_UPDATE_IF_NOEXIST | mode_flags[o->mode],
			     NULL);
	if (err) {
		if (err == -EPERM || err == -EACCES)
			xrxe_err("%s: permission denied attaching XDP (needs root: CAP_NET_ADMIN)",
				 ifname);
		else
			xrxe_err("%s: cannot attach XDP in %s mode: %s%s", ifname, mode_names[o->mode],
				 strerror(-err), xrxe_bpf_extack_suffix());
		goto out_destroy;
	}
	if (!bpf_obj_get_info_by_fd(prog_fd, &info, &info_len))
		*prog_id = info.id;
	pin_maps(ifname, bpf_map__fd(skel->maps.xrxe_stats), bpf_map__fd(skel->maps.xrxe_xsks));

out_destroy:
	/* Attached, the interface (or the dispatcher's link) holds the program
	 * and the program its maps. */
	xrxe_steer__destroy(skel);
	return err;
}

static uint32_t component_priority(const struct xrxe_steer_state *st)
{
	for (unsigned i = 0; i < st->ncomponents; i++)
		if (st->components[i].ours)
			return st->components[i].priority;
	return 0;
}

int xrxe_steer_attach_with(const char *ifname, const struct xrxe_steer_attach_opts *opts,
			   bool *already)
{
	struct xrxe_steer_maps maps = { .stats_fd = -1, .xsks_fd = -1, .flows_fd = -1,
					.flow_count_fd = -1 };
	struct xrxe_steer_attach_opts o = *opts;
	struct xrxe_steer_state st;
	unsigned int ifindex;
	uint32_t prog_id = 0;
	const char *why = NULL;
	bool use_libxdp;
	int err;

	*already = false;
	if (o.mode != XRXE_STEER_MODE_NATIVE && o.mode != XRXE_STEER_MODE_SKB) {
		xrxe_err("%s: cannot attach in %s mode", ifname, xrxe_steer_mode_name(o.mode));
		return -EINVAL;
	}
	if (!o.udp_port)
		o.udp_port = XRXE_STEER_DEFAULT_UDP_PORT;

	xrxe_bpf_quiet_begin();
	err = steer_ifindex(ifname, &ifindex);
	if (err)
		goto out;
	err = steer_inspect(ifname, ifindex, &st, &maps);
	if (err)
		goto out;

	if (st.ours && st.mode == o.mode && st.udp_port == o.udp_port &&
	    (!o.priority || !st.dispatcher || component_priority(&st) == o.priority)) {
		*already = true;
		/* Pins do not outlive an `ip netns exec` session: renew them. */
		pin_maps(ifname, maps.stats_fd, maps.xsks_fd);
		goto out_maps;
	}
	if (st.ours) {
		xrxe_err("%s: xrxe steering is already attached in %s mode for UDP port %u "
			 "(prog id %u%s); detach it first", ifname, mode_names[st.mode], st.udp_port,
			 st.prog_id, st.dispatcher ? ", in libxdp's dispatcher" : "");
		err = -EBUSY;
		goto out_maps;
	}
	if (st.attached && !st.dispatcher) {
		xrxe_err("%s: another XDP program is attached (id %u, name '%s', %s mode); "
			 "not replacing it", ifname, st.prog_id, st.prog_name, mode_names[st.mode]);
		err = -EBUSY;
		goto out;
	}
	use_libxdp = libxdp_bpffs_shared(&why);
	if (st.dispatcher) {
		if (!use_libxdp) {
			xrxe_err("%s: libxdp's dispatcher is attached (id %u, %u programs), but its "
				 "state is not visible at %s (%s): mount the bpffs it was attached "
				 "with there, or set LIBXDP_BPFFS", ifname, st.attached_id,
				 st.ncomponents, libxdp_bpffs(), why);
			err = -EBUSY;
			goto out;
		}
		if (st.mode != o.mode) {
			xrxe_err("%s: libxdp's dispatcher runs in %s mode (id %u); xrxe's program "
				 "joins it only in that mode (--mode %s)", ifname, mode_names[st.mode],
				 st.attached_id, mode_names[st.mode]);
			err = -EBUSY;
			goto out;
		}
	}
	err = load_and_attach(ifname, ifindex, &o, use_libxdp, &prog_id);
	/* Said after the fact: a failure stays one line. */
	if (!err && !use_libxdp)
		xrxe_info("%s: attached XDP without libxdp's dispatcher, so no other XDP program "
			  "can run beside it: %s at %s (set LIBXDP_BPFFS to a bpffs shared with the "
			  "host's mount namespace to share the interface)", ifname, why,
			  libxdp_bpffs());
	if (!err)
		xrxe_dbg("%s: attached %s in %s mode (prog id %u, UDP port %u%s)", ifname,
			 XRXE_STEER_PROG_NAME, mode_names[o.mode], prog_id, o.udp_port,
			 use_libxdp ? ", libxdp's dispatcher" : "");
	goto out;

out_maps:
	maps_close(&maps);
out:
	xrxe_bpf_quiet_end();
	return err;
}

int xrxe_steer_attach_port(const char *ifname, enum xrxe_steer_mode mode, uint16_t udp_port,
			   bool *already)
{
	struct xrxe_steer_attach_opts o = { .mode = mode, .udp_port = udp_port };

	return xrxe_steer_attach_with(ifname, &o, already);
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
	if (!st.ours && st.dispatcher) {
		xrxe_err("%s: xrxe's program is not among the %u programs of libxdp's dispatcher "
			 "(id %u, %s mode); leaving them", ifname, st.ncomponents, st.attached_id,
			 mode_names[st.mode]);
		err = -EBUSY;
		goto out;
	}
	if (!st.ours) {
		xrxe_err("%s: the attached XDP program is not xrxe's (id %u, name '%s', %s mode); "
			 "leaving it", ifname, st.prog_id, st.prog_name, mode_names[st.mode]);
		err = -EBUSY;
		goto out;
	}
	if (st.dispatcher) {
		err = libxdp_detach(ifname, ifindex, &st);
		if (!err)
			goto detached;
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
detached:
	unpin_maps(ifname);
	xrxe_dbg("%s: detached %s (prog id %u, %s mode%s)", ifname, XRXE_STEER_PROG_NAME,
		 st.prog_id, mode_names[st.mode], st.dispatcher ? ", libxdp's dispatcher" : "");
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

	maps->stats_fd = maps->xsks_fd = maps->flows_fd = maps->flow_count_fd = -1;
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

/* --- raw packet QP flows ------------------------------------------------------- */

int xrxe_steer_flow_set(const struct xrxe_steer_maps *maps, uint32_t slot,
			const struct xrxe_steer_flow *flow, uint32_t count)
{
	struct xrxe_steer_flow none = { 0 };
	__u32 key = slot, zero = 0;

	if (maps->flows_fd < 0 || maps->flow_count_fd < 0)
		return -EOPNOTSUPP;
	if (slot >= XRXE_STEER_MAX_FLOWS || count > XRXE_STEER_MAX_FLOWS)
		return -EINVAL;
	/* A new rule is written before the count can cover it; a removed one
	 * is cleared before the count shrinks: the program never reads a
	 * half-written slot as a rule (a slot is one map element, updated
	 * whole by the kernel). */
	if (bpf_map_update_elem(maps->flows_fd, &key, flow ? flow : &none, BPF_ANY))
		return -errno;
	if (bpf_map_update_elem(maps->flow_count_fd, &zero, &count, BPF_ANY))
		return -errno;
	return 0;
}
