/* SPDX-License-Identifier: MIT */
/*
 * The contract between the XDP steering program (bpf/xrxe_steer.bpf.c) and user
 * space (xrxe attach/status, xrxed): counter indices, map and program names,
 * and where the maps are pinned. Included by both the BPF program and C code,
 * so it uses only fixed-width kernel types.
 */
#ifndef XRXE_STEER_H
#define XRXE_STEER_H

#include <linux/types.h>

/* Outcomes the program counts, one slot each in the per-CPU `stats` array. */
enum xrxe_steer_counter {
	XRXE_STEER_STEERED,       /* RoCEv2 frame redirected to the AF_XDP socket */
	XRXE_STEER_PASSED,        /* not RoCEv2: handed to the kernel stack */
	XRXE_STEER_DROP_SHORT,    /* UDP 4791 but too short for UDP + BTH + ICRC */
	XRXE_STEER_DROP_BAD_BTH,  /* UDP 4791 with BTH TVer != 0 (IBA C9-3) */
	XRXE_STEER_NO_SOCKET,     /* RoCEv2, but no socket bound on this queue: passed */
	XRXE_STEER_ECN_CE,        /* RoCEv2 frame with IP ECN = CE (counted, then steered) */
	XRXE_STEER_COUNTER_COUNT,
};

/* Per-CPU counter slot. */
struct xrxe_steer_stat {
	__u64 packets;
	__u64 bytes;
};

/* Names as user space finds them (skeleton and bpftool). BPF object names are
 * limited to 15 characters (BPF_OBJ_NAME_LEN - 1). */
#define XRXE_STEER_PROG_NAME "xrxe_steer"
#define XRXE_STEER_STATS_MAP "xrxe_stats"
#define XRXE_STEER_XSKS_MAP "xrxe_xsks"

/* UDP destination port the program steers (IANA RoCEv2); a load-time setting
 * (`roce_udp_port` in the program's .rodata). */
#define XRXE_STEER_DEFAULT_UDP_PORT 4791

/* XDP metadata in front of every steered frame (bpf_xdp_adjust_meta; AF_XDP
 * copies it into the UMEM right before the packet, in copy mode too): when
 * the frame reached the interface, CLOCK_MONOTONIC (bpf_ktime_get_ns). The
 * daemon reads a frame late when it was not scheduled; DCQCN's reaction
 * and notification points must see when CNPs and CE marks arrived, not
 * when the daemon got to them. The magic tells a stamp from whatever the
 * headroom held (the daemon clears it after reading). */
#define XRXE_RX_META_MAGIC 0x78727865u /* "xrxe" */
struct xrxe_rx_meta {
	__u32 magic;
	__u32 reserved;
	__u64 rx_ns;
};

/* libxdp's run priority of the steering program in the multi-program
 * dispatcher (lower runs first; libxdp's default is 50, xdp-filter's 10): a
 * firewall such as xdp-filter sees frames before they are steered. Frames it
 * passes (XDP_PASS: not RoCEv2, or no socket) go on to the next program;
 * steered and dropped ones stop here (the program's XDP_RUN_CONFIG). */
#define XRXE_STEER_RUN_PRIO 50

/* XSKMAP slots: one per NIC RX queue. */
#define XRXE_STEER_MAX_QUEUES 64

/* Maps are pinned as PIN_DIR/IFACE/{stats,xsks} when bpffs is available. */
#define XRXE_STEER_PIN_ROOT "/sys/fs/bpf/xrxe"

#endif /* XRXE_STEER_H */
