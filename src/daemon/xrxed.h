/* SPDX-License-Identifier: MIT */
/*
 * xrxed's insides, shared by its files: xrxed.c (options, setup, main),
 * xrxed_io.c (TX and RX between the core and the AF_XDP sockets),
 * xrxed_stats.c (XRXE_CTRL_STATS), xrxed_loop.c (the event loop).
 */
#ifndef XRXE_DAEMON_XRXED_H
#define XRXE_DAEMON_XRXED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/ctrl.h"
#include "daemon/devpage.h"
#include "daemon/evsrc.h"
#include "daemon/netlink.h"
#include "daemon/quota.h"
#include "daemon/steer.h"
#include "daemon/xsk_io.h"
#include "transport/transport.h"
#include "xrxe/wire.h"

#define RX_BURST 64
#define TX_BATCH 64
#define TX_SLOTS 64         /* reserved, not yet submitted frames (the core
			     * submits each frame right after writing it) */
#define LOOPQ_SLOTS 256     /* looped-back frames waiting for xrxe_tp_rx */
#define MAX_EVENTS 64
#define RX_LAG_BUCKETS 5

#define NS_PER_US 1000ull
#define NS_PER_MS (1000ull * 1000)
/* Keep spinning this long after the last piece of work (a sleep/wake-up round
 * trip costs 20-70 µs here, docs/facts/afxdp.md §6)... */
#define SPIN_NS (50 * NS_PER_US)
/* ...but only this long while another task wants our CPU (we were preempted
 * recently): an application that busy-polls its CQ or buffer on the same
 * core cannot see what we just delivered, nor post its next request, until
 * we give the core up; spinning idle there only delays it
 * (docs/performance.md). */
#define SPIN_SHARED_NS (10 * NS_PER_US)
/* "Recently": an involuntary context switch, or a yield during which another
 * task ran, within this window. */
#define SHARED_WINDOW_NS (1000 * NS_PER_MS)
/* While idle and sharing the core, the daemon gives it up with sched_yield
 * each pass instead of spinning: the task beside it is usually the
 * application whose next post or whose poll of what was just delivered is
 * the work being waited for, and a runnable daemon needs no wake-up for it
 * (no eventfd write, no IPI). A yield that returns after at least
 * YIELD_RAN_NS let another task run (one with nothing else runnable costs
 * 1-3 µs here); one that returns after YIELD_SLOW_NS or more let a task run
 * that keeps the core (an application spinning on memory, ib_write_lat; a
 * CPU hog) -- a frame would wait for the end of its slice, so for
 * YIELD_SLOW_WINDOW_NS the daemon sleeps instead, and an arriving frame or
 * doorbell wakes it with preemption (docs/performance.md). */
#define YIELD_RAN_NS (10 * NS_PER_US)
#define YIELD_SLOW_NS (200 * NS_PER_US)
#define YIELD_SLOW_WINDOW_NS (1000 * NS_PER_MS)
/* How often to look (one getrusage). */
#define SHARED_CHECK_NS (1 * NS_PER_MS)
/* While busy: serve control, netlink and signals at least this often, and
 * yield the CPU this often (a daemon sharing a core with its applications
 * must let them run). The yield is short and often because what an
 * application on our core needs is a turn, not a share: a receiver that
 * reposts its receive WQEs only when it runs lets its queue run dry between
 * turns 2 ms apart, and every RNR NAK then stops the sender for the peer's
 * RNR timer and makes it resend from there (docs/facts/rxe.md, "RNR NAK";
 * docs/performance.md, "Why five runs differ": ib_send_bw 64 B 0.16-0.47 Mpps
 * at 2 ms, 0.33-0.40 at 100 us). A yield with nothing else runnable costs
 * 1-3 us here (docs/performance.md, "Sharing a core"). */
#define EVENTS_EVERY_NS (1 * NS_PER_MS)
#define YIELD_EVERY_NS (100 * NS_PER_US)
/* Posted WQEs that wait for the network (a full window, an ACK) keep the
 * loop spinning -- a sleep there cost ~6 % of 64 KiB ib_write_bw
 * (transport/tp.c, xrxe_tp_sq_pending) -- but only this long after the last
 * piece of work: then it sleeps until a frame, a doorbell or the transport's
 * next deadline. A peer that stopped answering (a QP still in INIT, a dead
 * host) kept it spinning until the retry count ran out, seconds. */
#define SQ_WAIT_SPIN_NS (2 * NS_PER_MS)
/* Sleep at most this long: a lost doorbell (a broken shim) costs one second,
 * not a hang. */
#define MAX_SLEEP_NS (1000 * NS_PER_MS)
/* --rt-priority: while only QPs that wait for the network (an ACK, a window)
 * have unstarted WQEs, sleep this long at a time instead of spinning. A
 * SCHED_FIFO task that spins starves every normal task on its CPU; an ACK
 * ends the nap at once (the loop polls the AF_XDP sockets as it naps), and a WQE
 * posted during it -- the shim sees daemon_sleeping 0 and does not ring --
 * waits no longer than a doorbell's wake-up would take (docs/facts/afxdp.md §6). */
#define RT_NAP_NS (50 * NS_PER_US)
/* TX completions outstanding: look again this soon. */
#define TX_REAP_NS (100 * NS_PER_US)

/* Device limits given to the core and advertised in the device page. */
/* QPs and CQs: 2^18, as a ConnectX (mlx5 reports max_qp 262 144) and as
 * many objects as one connection's handles can name (ctrl_internal.h
 * HANDLE_IDX_BITS). Issue 16 asks for at least 65 536, and 65 536 idle QPs
 * must leave room for the ones that do the work. Idle QPs cost no poll time
 * (sched.c); the core's tables by QP number (tp.c: 8-byte pointers, PD and
 * AH slots) are zeroed allocations whose pages stay unbacked until used, so
 * the limit costs no resident memory of its own (docs/architecture.md
 * "Scheduling in the transport"). */
#define DEV_MAX_QP 262144
#define DEV_MAX_MR 65536
#define DEV_MAX_CQ DEV_MAX_QP /* one CQ per QP, or two, stays within it */
#define DEV_MAX_SRQ 4096
/* Multicast groups: the core's table, but no more than one IPv4 socket may
 * join (net.ipv4.igmp_max_memberships, 20 by default): netlink.c holds every
 * membership on one socket. */
#define DEV_MAX_MCAST_GRP 20
/* The core sizes its PD and AH tables from max_qp (src/transport/tp.c). */
#define DEV_MAX_PD (DEV_MAX_QP + 63)
#define DEV_MAX_AH (DEV_MAX_QP + 255)
#define DEV_LOCAL_ACK_DELAY 15 /* rxe */
/* Line rate when the driver does not report a speed (DCQCN's ceiling). */
#define DEFAULT_LINE_RATE_MBPS 10000

struct daemon_opts {
	const char *ifname;
	enum xrxe_steer_mode mode;
	bool mode_given; /* --mode: no fallback from native to skb */
	unsigned queues; /* 0 = all RX queues of the interface */
	bool keep_xdp;   /* leave the steering program attached on exit */
	int rt_priority; /* SCHED_FIFO priority, 0 = normal scheduling */
	bool fixed_ack_timeout; /* --rexmit fixed */
	bool sr_off, sr_on;     /* --selective-repeat off / on; neither: cm (default) */
	struct xrxe_tp_cc_params cc; /* defaults + --cc name=value */
	struct xrxe_quota_limits limits; /* defaults + --limit NAME=VALUE */
};

struct daemon_counters {
	uint64_t rx_ok;
	uint64_t rx_by_opcode[256];
	uint64_t rx_error[XRXE_PARSE_ERROR_COUNT];
	uint64_t tx_frames, tx_ring_full, tx_bad;
	uint64_t loop_frames, loop_drops, loop_parse_errors;
	uint64_t sleeps, wakeups_doorbell_race;
	/* looks that found posted WQEs waiting for the network: spun on
	 * (within SQ_WAIT_SPIN_NS of the last work) or slept */
	uint64_t sq_wait_spins, sq_wait_sleeps;
	uint64_t naps; /* --rt-priority: RT_NAP_NS sleeps while QPs wait */
	uint64_t shared_cpu_seen; /* preemptions noticed (spin policy) */
	/* idle yields (spin policy): all, those during which another task ran,
	 * and the slow ones that switched the daemon to sleeping */
	uint64_t idle_yields, idle_yields_ran, idle_yields_slow;
	uint64_t ecn_ce_rx; /* received RoCEv2 frames marked CE (== XDP's ecn_ce) */
	/* How late the loop read stamped frames (now - the XDP arrival stamp):
	 * the delay every reply, ACK and CNP starts with. Buckets up to 10 us,
	 * 100 us, 1 ms, 10 ms, beyond; the largest seen. */
	uint64_t rx_lag[RX_LAG_BUCKETS];
	uint64_t rx_lag_max_ns;
};

struct tx_slot {
	struct xrxe_tx_frame f;
	struct tx_slot *next;
};

struct loopq {
	uint8_t *buf; /* LOOPQ_SLOTS x XRXE_MAX_FRAME_LEN */
	uint32_t len[LOOPQ_SLOTS];
	uint32_t head, tail; /* free-running */
};

struct daemon {
	struct daemon_opts opts;
	unsigned ifindex;
	uint8_t mac[6];
	uint32_t mtu;
	struct xrxe_xsk *xsk[XRXE_STEER_MAX_QUEUES];
	unsigned nxsk;
	struct xrxe_steer_maps maps;
	bool we_attached;
	bool native_refused; /* generic XDP because the driver refused native */
	uint32_t max_path_mtu;
	int epfd;
	struct xrxe_evsrc sig_src;
	bool stop;
	uint64_t now; /* time of the current loop pass */
	/* CPU sharing (spin policy): involuntary context switches seen so
	 * far, when we last looked, when we last saw one grow */
	long nivcsw;
	uint64_t shared_checked, shared_seen;
	uint64_t yield_slow_seen; /* last idle yield >= YIELD_SLOW_NS, 0: none */
	int cpu; /* where the loop ran last, published in the device page */

	struct xrxe_tp *tp;
	struct xrxe_devpage *dp;
	struct xrxe_nl *nl;
	struct xrxe_ctrl *ctrl;
	struct xrxe_quota *quota;

	struct tx_slot tx_slots[TX_SLOTS];
	struct tx_slot *tx_free;
	struct xrxe_tx_frame tx_batch[TX_BATCH];
	unsigned tx_nbatch;
	struct loopq loop;

	struct daemon_counters ctr;
};

uint64_t xrxe_daemon_mono_ns(void);

/* xrxed_io.c */
void xrxe_daemon_tx_flush_batch(struct daemon *d);
extern const struct xrxe_tp_ops xrxe_daemon_tp_ops;
void xrxe_daemon_port_event(void *user, enum ibv_event_type ev);
unsigned xrxe_daemon_poll_queue(struct daemon *d, struct xrxe_xsk *xsk);
unsigned xrxe_daemon_loop_drain(struct daemon *d);
void xrxe_daemon_print_counters(const struct daemon *d);

/* xrxed_stats.c: the report of XRXE_CTRL_STATS (struct xrxe_ctrl_config.stats) */
void xrxe_daemon_stats(void *user, FILE *out, unsigned flags, uid_t uid);

/* xrxed_loop.c */
void xrxe_daemon_notify_systemd(const char *msg);
void xrxe_daemon_signal_event(struct xrxe_evsrc *src, uint32_t events);
int xrxe_daemon_run_loop(struct daemon *d);

#endif /* XRXE_DAEMON_XRXED_H */
