/* SPDX-License-Identifier: MIT */
/*
 * The contract between the tc impairment program (bpf/xrxe_impair.bpf.c) and
 * its loader, xrxe-impair (tools/impair/): the settings map, the shared
 * phantom-queue state, the per-CPU counters and the per-flow byte counts.
 * Included by both the BPF program and C code, so only fixed-width kernel
 * types.
 */
#ifndef XRXE_IMPAIR_H
#define XRXE_IMPAIR_H

#include <linux/bpf.h> /* struct bpf_spin_lock */
#include <linux/types.h>

/* Names as user space finds them on an attached program (15 chars max). */
#define XRXE_IMPAIR_PROG_NAME "xrxe_impair"
#define XRXE_IMPAIR_CFG_MAP "impair_cfg"
#define XRXE_IMPAIR_QUEUE_MAP "impair_queue"
#define XRXE_IMPAIR_STATS_MAP "impair_stats"
#define XRXE_IMPAIR_FLOWS_MAP "impair_flows"

/* Our filter on clsact egress: a fixed handle and priority, so that the
 * loader finds it again (bpf_tc_query) without listing anybody else's. */
#define XRXE_IMPAIR_TC_HANDLE 0x78726965u /* "xrie" */
#define XRXE_IMPAIR_TC_PRIO 0x7872 /* "xr": out of the way of tc's default 49152.. */

/* Probabilities are fractions of 2^32, compared with bpf_get_prandom_u32():
 * a packet is hit when rand < threshold, so 2^32 is "always" and 0 "never". */
#define XRXE_IMPAIR_P_ONE (1ull << 32)

/* The phantom queue is capped so that its arithmetic cannot overflow; a
 * packet that finds it above kmax is always marked anyway. */
#define XRXE_IMPAIR_QUEUE_CAP (1ull << 30)
/* Above 100 Gbit/s, elapsed_ns * bytes_per_s could overflow 64 bits for the
 * one-second drain step the program computes in nanoseconds. */
#define XRXE_IMPAIR_MAX_RATE_BPS 12500000000ull

/* Settings: one slot, written by xrxe-impair (whole struct at once), read
 * by every packet. Thresholds are precomputed so the program only compares. */
struct xrxe_impair_cfg {
	__u64 loss_thresh;    /* P(drop) * 2^32 */
	__u64 dup_thresh;     /* P(duplicate) * 2^32 */
	__u64 corrupt_thresh; /* P(corrupt) * 2^32 */
	__u64 pmax_thresh;    /* DCQCN Pmax * 2^32 */
	__u64 ecn_rate;       /* phantom queue drain rate, bytes per second; 0 = ECN off */
	__u64 kmin;           /* bytes: below or at, never mark */
	__u64 kmax;           /* bytes: above, always mark */
	__u64 qlimit;         /* bytes the phantom queue holds at most (0: XRXE_IMPAIR_QUEUE_CAP) */
	/* For display only (the program never reads them): what the user typed,
	 * in parts per million, so --stats prints it back exactly. */
	__u32 loss_ppm;
	__u32 dup_ppm;
	__u32 corrupt_ppm;
	__u32 pmax_ppm;
	__u32 flags; /* XRXE_IMPAIR_F_* */
	__u32 pad;
};

/* The clsact qdisc was created by xrxe-impair (so --clear may remove it). */
#define XRXE_IMPAIR_F_OWN_CLSACT (1u << 0)
/* Count bytes per flow into the flows map (the CC harness's rate sampler). */
#define XRXE_IMPAIR_F_FLOWS (1u << 1)

/* The phantom queue (HULL): a byte counter that every departing packet fills
 * and that drains at ecn_rate. Shared by every CPU, updated under the lock. */
struct xrxe_impair_queue {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 backlog;   /* bytes, as of last_ns */
	__u64 last_ns;   /* bpf_ktime_get_ns() of the last update */
	__u64 rem;       /* drain not yet whole bytes: byte-nanoseconds, < 1e9 */
	__u64 max_backlog;
};

/* What the program counts, one per-CPU slot each. */
enum xrxe_impair_counter {
	XRXE_IMPAIR_SEEN,          /* every frame that entered the program */
	XRXE_IMPAIR_DROPPED,       /* --loss */
	XRXE_IMPAIR_DUPLICATED,    /* --dup: one extra copy sent */
	XRXE_IMPAIR_CORRUPTED,     /* --corrupt: one payload byte inverted */
	XRXE_IMPAIR_ECN_MARKED,    /* ECT(0)/ECT(1) set to CE by the CP rule */
	XRXE_IMPAIR_ECN_ALREADY_CE, /* picked by the CP rule, already CE */
	XRXE_IMPAIR_NOT_ECT_OVER,  /* picked by the CP rule, Not-ECT: left alone */
	XRXE_IMPAIR_NOT_IP,        /* not IPv4/IPv6 (ARP, ...): passed untouched */
	XRXE_IMPAIR_COUNTER_COUNT,
};

struct xrxe_impair_stat {
	__u64 packets;
	__u64 bytes;
};

/* Per-flow byte counts for RoCEv2 (UDP 4791) traffic: a flow is a
 * destination QP of a destination address, which for RC is one connection.
 * Addresses are IPv6 or IPv4-mapped IPv6 (::ffff:a.b.c.d). */
struct xrxe_impair_flow_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u32 dest_qp; /* BTH DestQP, 24 bits */
	__u32 pad;
};

struct xrxe_impair_flow {
	__u64 packets;
	__u64 bytes;
	__u64 marked;
};

#define XRXE_IMPAIR_MAX_FLOWS 1024
#define XRXE_IMPAIR_ROCE_PORT 4791

#endif /* XRXE_IMPAIR_H */
