/* SPDX-License-Identifier: MIT */
/*
 * Loading, attaching and inspecting the XDP steering program
 * (bpf/xrxe_steer.bpf.c) with its libbpf skeleton.
 *
 * Our program is found on an interface by asking the kernel (netlink XDP query
 * → program id → program info → map ids; for libxdp's dispatcher, the kernel's
 * list of BPF links → the freplace programs linked to it), not through bpffs
 * pins: bpffs may be unmounted, and `ip netns exec` remounts /sys, so a pin
 * made in one session is invisible in the next. Maps are still pinned under
 * /sys/fs/bpf/xrxe/IFACE/ (mounting bpffs when missing) for bpftool users.
 *
 * Attaching goes through libxdp's multi-program dispatcher (docs/architecture.md
 * "XDP beside other XDP programs") whenever a bpffs shared with other libxdp
 * users is mounted (LIBXDP_BPFFS, else /sys/fs/bpf): the dispatcher keeps its
 * state there, so other XDP programs (xdp-filter, xdp-loader) run beside ours
 * in priority order. Without one (inside `ip netns exec`), the program is
 * attached alone as before, and that is logged.
 */
#ifndef XRXE_DAEMON_STEER_H
#define XRXE_DAEMON_STEER_H

#include <stdbool.h>
#include <stdint.h>

#include "xrxe/steer.h"

enum xrxe_steer_mode {
	XRXE_STEER_MODE_NATIVE, /* XDP_FLAGS_DRV_MODE */
	XRXE_STEER_MODE_SKB,    /* XDP_FLAGS_SKB_MODE (generic) */
	XRXE_STEER_MODE_HW,     /* XDP_FLAGS_HW_MODE: only ever reported (a foreign
				 * offloaded program), never requested */
};

/* libxdp's dispatcher has this many slots (prog_dispatcher.h). */
#define XRXE_STEER_MAX_COMPONENTS 10

/* One program run by libxdp's dispatcher. */
struct xrxe_steer_component {
	uint32_t prog_id;
	uint32_t priority;  /* libxdp run priority: lower runs first */
	unsigned slot;      /* the dispatcher's prog<slot>: run order */
	bool ours;
	char name[16];
};

/* What is attached to an interface. */
struct xrxe_steer_state {
	unsigned int ifindex;
	bool attached;       /* any XDP program in any mode */
	bool ours;           /* the xrxe steering program runs on it (alone or in
			      * libxdp's dispatcher) */
	bool dispatcher;     /* what is attached is libxdp's dispatcher */
	uint32_t prog_id;    /* ours: our program; otherwise what is attached */
	uint32_t attached_id; /* what the interface runs: ours or the dispatcher */
	enum xrxe_steer_mode mode;
	char prog_name[16];  /* of whatever is attached */
	uint16_t udp_port;   /* ours only: the UDP port it steers */
	bool by_daemon;      /* ours only: loaded by xrxed, which removes it when
			      * it stops (as does an xrxed that adopts it) */
	bool native_refused; /* ours only: skb mode because native was refused */
	/* dispatcher only: its programs in run order */
	unsigned ncomponents;
	struct xrxe_steer_component components[XRXE_STEER_MAX_COMPONENTS];
};

/* How to attach. */
struct xrxe_steer_attach_opts {
	enum xrxe_steer_mode mode;
	uint16_t udp_port;   /* 0: XRXE_STEER_DEFAULT_UDP_PORT */
	uint32_t priority;   /* libxdp run priority; 0: XRXE_STEER_RUN_PRIO */
	bool by_daemon;      /* xrxed loads it: marked so (state.by_daemon) */
	bool native_refused; /* skb mode after native was refused: marked so */
};

/* Handle on our attached program's maps (fds owned by the handle; -1 when
 * closed, so a zeroed-then-(-1) handle can always be closed). */
struct xrxe_steer_maps {
	int stats_fd;
	int xsks_fd;
	int flows_fd;      /* raw packet QP flows (XRXE_STEER_FLOWS_MAP); -1: an older program */
	int flow_count_fd; /* XRXE_STEER_FLOW_COUNT_MAP */
	uint32_t stats_entries; /* counters the attached program has (an older
				 * build may have fewer than XRXE_STEER_COUNTER_COUNT) */
};

/*
 * Every function below that can fail logs one line naming the interface and
 * the reason ("IFACE: no such interface"), so callers only map the code to an
 * exit status. libbpf's own chatter (and the verifier log) is routed to the
 * debug level (XRXE_LOG=debug); the kernel's extack message of a failed attach
 * is folded into the error line.
 */

const char *xrxe_steer_mode_name(enum xrxe_steer_mode mode);
/* --mode's values: xrxe_opt_parse_mode (options.h). */

/* 0 or -errno (-ENODEV: no such interface; -EPERM: identifying an attached
 * program needs CAP_SYS_ADMIN). */
int xrxe_steer_query(const char *ifname, struct xrxe_steer_state *state);

/* Load and attach. Idempotent: if ours is already attached in this mode,
 * *already is set and nothing changes (missing pins are re-made). Errors
 * (-errno, with a one-line message logged): -ENODEV no such interface,
 * -EPERM/-EACCES no permission, -EBUSY a foreign XDP program is attached (or
 * ours in the other mode, or with another UDP port), others from the kernel
 * (extack text is logged). */
int xrxe_steer_attach(const char *ifname, enum xrxe_steer_mode mode, bool *already);
/* The same, steering UDP port udp_port (0: XRXE_STEER_DEFAULT_UDP_PORT). */
int xrxe_steer_attach_port(const char *ifname, enum xrxe_steer_mode mode, uint16_t udp_port,
			   bool *already);
/* The same with every option. "Already" also needs the same priority when
 * given (a different one is -EBUSY, like another port). */
int xrxe_steer_attach_with(const char *ifname, const struct xrxe_steer_attach_opts *opts,
			   bool *already);

/* Detach our program (from libxdp's dispatcher: only ours, the others keep
 * running) and remove its pins. -ENOENT if no program is attached; -EBUSY if
 * only foreign programs are (left alone). */
int xrxe_steer_detach(const char *ifname);

/* Open the maps of our program attached to ifname. -ENOENT if not attached. */
int xrxe_steer_open_maps(const char *ifname, struct xrxe_steer_maps *maps);
void xrxe_steer_close_maps(struct xrxe_steer_maps *maps);

/* Counters summed over all CPUs. */
int xrxe_steer_read_stats(const struct xrxe_steer_maps *maps,
			  struct xrxe_steer_stat out[XRXE_STEER_COUNTER_COUNT]);
/* Stable counter names for output: "steered", "passed", "drop_short", ... */
const char *xrxe_steer_counter_name(enum xrxe_steer_counter c);
/* Raw packet QP flows: write rule slot (NULL: clear it) and the number of
 * slots the program looks at. -EOPNOTSUPP when the attached program has no
 * flow maps (an older build adopted), -errno from the kernel. */
int xrxe_steer_flow_set(const struct xrxe_steer_maps *maps, uint32_t slot,
			const struct xrxe_steer_flow *flow, uint32_t count);

#endif /* XRXE_DAEMON_STEER_H */
