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
	XRXE_STEER_RAW_FLOW,      /* not RoCEv2, matched a raw packet QP's flow: redirected */
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

/* Raw packet QP flows (ibv_create_flow; docs/architecture.md "Raw packet
 * QPs"). A frame that is not RoCEv2 is reduced to a flow key, the same way
 * by the XDP program and by xrxed (src/transport/raw.c), and matched against
 * the rules of the `xrxe_flows` array map: a rule matches when
 * (key & mask) == value, word by word (value is stored already masked). A
 * frame matching a rule goes to the AF_XDP socket; one matching none goes
 * to the kernel stack untouched. Slots [0, count) of the map are looked at
 * (count: `xrxe_flow_count`, element 0); a slot with used == 0 matches
 * nothing. */
#define XRXE_STEER_FLOWS_MAP "xrxe_flows"
#define XRXE_STEER_FLOW_COUNT_MAP "xrxe_flow_count"
#define XRXE_STEER_MAX_FLOWS 64

/* 64 bytes, compared as 8 64-bit words. Multi-byte fields in network order. */
struct xrxe_flow_key {
	__u8 dmac[6];
	__u8 smac[6];
	__be16 ethertype; /* after at most one 802.1Q / 802.1ad tag */
	__be16 vlan_tci;  /* 0 without a tag */
	__u8 ip_proto;    /* IPv4 protocol / IPv6 next header; 0 when not IP */
	__u8 pad0[3];
	__u8 src_ip[16];  /* IPv4: the first 4 bytes */
	__u8 dst_ip[16];
	__be16 sport;     /* TCP or UDP, not a fragment; else 0 */
	__be16 dport;
	__u8 pad1[8];
};
#define XRXE_FLOW_KEY_WORDS 8

struct xrxe_steer_flow {
	struct xrxe_flow_key value; /* already masked */
	struct xrxe_flow_key mask;
	__u32 used;
	__u32 pad;
};

/* Maps are pinned as PIN_DIR/IFACE/{stats,xsks} when bpffs is available. */
#define XRXE_STEER_PIN_ROOT "/sys/fs/bpf/xrxe"

#endif /* XRXE_STEER_H */
