/* SPDX-License-Identifier: MIT */
/*
 * Transport test harness: two transport cores (sides 0 and 1) joined by an
 * in-memory wire, with a tiny "application" on each side that posts WQEs and
 * polls CQs through the shared rings exactly as the shim would (write the
 * element, store-release the producer; load-acquire, copy, store-release the
 * consumer).
 *
 * Every frame a core submits is parsed with ICRC verification before it is
 * queued (a builder bug fails the test). On delivery the wire policy may drop,
 * duplicate, delay (reorder) or corrupt it; corrupted frames are parsed again
 * and must be rejected by the parser before they reach the other core. A
 * virtual clock jumps to the next deadline whenever the wire is idle. All
 * randomness comes from one seeded PRNG, so runs are reproducible.
 *
 * Symbols are xrxe_tph_* (tests/unit/golden.c is linked into the same
 * binaries).
 */
#ifndef XRXE_TP_HARNESS_H
#define XRXE_TP_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/transport.h"

struct xrxe_tph;
struct xrxe_tph_qp;
struct xrxe_tph_cq;

struct xrxe_tph_policy {
	uint32_t drop_ppm, dup_ppm, reorder_ppm, corrupt_ppm; /* per million */
	uint32_t nobuf_ppm;   /* tx_reserve fails with -ENOBUFS */
	bool multi_frag;      /* TX buffers of 2-3 fragments */
	/* true: drop this frame (from = sending side). Applied first. */
	bool (*filter)(void *arg, int from, const struct xrxe_pkt *pkt);
	void *filter_arg;
	/* true: set ECN = CE in this frame's IP header on delivery, as a
	 * congested switch would (congestion control tests). */
	bool (*ce_mark)(void *arg, int from, const struct xrxe_pkt *pkt);
	void *ce_mark_arg;
	/* A link in each direction (0: the wire takes no time): a frame
	 * leaves after the ones before it at link_bps and arrives
	 * link_delay_ns later, so a window in flight takes time (loss
	 * recovery tests). Applies from the next frame submitted. */
	uint64_t link_bps, link_delay_ns;
	/* A daemon that shares its core (loss recovery tests): side i is not
	 * served for sleep_ns out of every sleep_every_ns (side 1 half a
	 * period after side 0): frames for it wait and its timers wait. */
	uint64_t sleep_every_ns, sleep_ns;
	/* Serve a side as xrxed's loop does: at most rx_burst frames
	 * delivered, then one xrxe_tp_poll (timers included), and again;
	 * so a backlog is read a burst at a time (0: every frame due, then
	 * polls). */
	unsigned rx_burst;
	/* TX buffers run out (-ENOBUFS) while the link towards the peer has
	 * more than this much queued, as a daemon's TX ring fills: what a
	 * side owes waits in its transport, not on the wire (0: no limit). */
	uint64_t tx_backlog_ns;
	/* Two daemons on two cores, each a loop that costs CPU (the scale
	 * tests): side i runs its own clock; each pass (at most rx_burst
	 * frames delivered, 64 if 0, then one xrxe_tp_poll) takes
	 * frame_cost_ns per frame it received or sent, and the side whose
	 * clock is behind runs next. So a poll that sends a lot keeps that
	 * side from reading its frames meanwhile, as in xrxed. 0: passes take
	 * no time (the other policies ignore this one; sleep_* do not apply). */
	uint64_t frame_cost_ns;
};

struct xrxe_tph_side {
	struct xrxe_tph *h;
	int id;
	struct xrxe_tp *tp;
	uint32_t pdn;
	unsigned cq_events;
	unsigned async_events;
	enum ibv_event_type last_async;
	unsigned async_by_type[IBV_EVENT_WQ_FATAL + 1];
	void *last_async_obj;
};

struct xrxe_tph_frame {
	struct xrxe_frag frag[XRXE_MAX_FRAGS];
	uint8_t nfrags;
	uint32_t len;
	uint64_t due; /* arrival time (policy link_bps / link_delay_ns) */
};

struct xrxe_tph_fifo {
	struct xrxe_tph_frame *v;
	size_t head, tail, cap;
};

struct xrxe_tph {
	struct xrxe_tph_side side[2];
	struct xrxe_tph_fifo q[2]; /* q[i]: frames heading to side i */
	uint64_t now;
	uint64_t rng;
	struct xrxe_tph_policy pol;
	bool ipv6;
	/* wire counters */
	uint64_t submitted, delivered, dropped, filtered, duplicated, reordered, corrupted;
	uint64_t rejected, rejected_icrc, bad_tx, nobufs, ce_marked;
	uint64_t opcode_count[2][256]; /* submitted frames per side and opcode */
	uint64_t syndrome_count[2][256]; /* AETH syndromes of ACKNOWLEDGE frames sent */
	uint16_t sport[2];             /* UDP source port of the last frame per side */
	uint64_t link_free[2];         /* when the link towards side i is free again */
	bool tx_full[2];               /* side i's last poll met tx_backlog_ns */
	/* objects still alive, destroyed by xrxe_tph_fini */
#define XRXE_TPH_MAX_OBJS 32
	struct xrxe_tph_qp *qps[XRXE_TPH_MAX_OBJS];
	struct xrxe_tph_cq *cqs[XRXE_TPH_MAX_OBJS];
	struct xrxe_tph_srq *srqs[XRXE_TPH_MAX_OBJS];
	unsigned nqps, ncqs, nsrqs;
};

struct xrxe_tph_cq {
	struct xrxe_tph_side *s;
	struct xrxe_ring *ring;
	uint32_t nslots;
	uint32_t cons;
	struct xrxe_tp_cq *cq;
};

struct xrxe_tph_qp {
	struct xrxe_tph_side *s;
	struct xrxe_tp_qp *qp;
	uint32_t qpn;
	enum ibv_qp_type type;
	struct xrxe_ring *sq, *rq;
	uint32_t sq_slots, rq_slots, sq_elem, rq_elem;
	uint32_t sq_prod, rq_prod;
	struct xrxe_tph_cq *scq, *rcq;
	struct ibv_qp_cap cap;
};

/* A shared receive queue (4 SGEs per WQE). Freed by xrxe_tph_fini. */
struct xrxe_tph_srq {
	struct xrxe_tph_side *s;
	struct xrxe_tp_srq *srq;
	struct xrxe_ring *ring;
	uint32_t slots, elem, prod;
};

/* What ibv_post_send would carry. */
struct xrxe_tph_send {
	uint64_t wr_id;
	uint32_t opcode;     /* enum ibv_wr_opcode */
	uint32_t flags;      /* enum ibv_send_flags */
	uint32_t ex;         /* imm_data (network order) / invalidate rkey */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	uint32_t ah, rqpn, rqkey; /* UD */
	const struct xrxe_sge *sge;
	uint32_t nsge;
	const void *inl;     /* with IBV_SEND_INLINE */
	uint32_t inl_len;
	uint32_t xrc_srqn;   /* XRC initiator: the target's SRQ */
};

void xrxe_tph_init(struct xrxe_tph *h, uint64_t seed, uint32_t max_path_mtu);
/* The same with the cores' fixed_ack_timeout (xrxed --rexmit fixed). */
void xrxe_tph_init_rexmit(struct xrxe_tph *h, uint64_t seed, uint32_t max_path_mtu,
			  bool fixed_ack_timeout);
/* Cores with room for max_qp QPs each (64 with the ones above). */
void xrxe_tph_init_qps(struct xrxe_tph *h, uint64_t seed, uint32_t max_path_mtu,
		       uint32_t max_qp);
void xrxe_tph_fini(struct xrxe_tph *h);
uint64_t xrxe_tph_rand(struct xrxe_tph *h);

/* Address vector from side `from` towards the other side. */
void xrxe_tph_av(const struct xrxe_tph *h, int from, struct xrxe_av *av);

struct xrxe_tph_cq *xrxe_tph_cq_create(struct xrxe_tph_side *s, uint32_t nslots);
struct xrxe_tph_qp *xrxe_tph_qp_create(struct xrxe_tph_side *s, enum ibv_qp_type type,
				       struct xrxe_tph_cq *scq, struct xrxe_tph_cq *rcq,
				       uint32_t sq_slots, uint32_t rq_slots, bool sig_all);
/* A QP whose receive WQEs come from srq (no RQ of its own). */
struct xrxe_tph_qp *xrxe_tph_qp_create_srq(struct xrxe_tph_side *s, enum ibv_qp_type type,
					   struct xrxe_tph_cq *scq, struct xrxe_tph_cq *rcq,
					   uint32_t sq_slots, struct xrxe_tph_srq *srq,
					   bool sig_all);
struct xrxe_tph_srq *xrxe_tph_srq_create(struct xrxe_tph_side *s, uint32_t slots);
/* XRC (docs/xrc.md): an initiator (send queue, CQ), a target (domain only),
 * an XRC SRQ in pdn and domain xrcdn completing into cq */
struct xrxe_tph_qp *xrxe_tph_qp_create_xrc_ini(struct xrxe_tph_side *s, struct xrxe_tph_cq *scq,
					       uint32_t sq_slots);
struct xrxe_tph_qp *xrxe_tph_qp_create_xrc_tgt(struct xrxe_tph_side *s, uint32_t xrcdn);
struct xrxe_tph_srq *xrxe_tph_srq_create_xrc(struct xrxe_tph_side *s, uint32_t pdn, uint32_t xrcdn,
					     struct xrxe_tph_cq *cq, uint32_t slots);
int xrxe_tph_post_srq_recv(struct xrxe_tph_srq *q, uint64_t wr_id, const struct xrxe_sge *sge,
			   uint32_t nsge);
void xrxe_tph_qp_destroy(struct xrxe_tph_qp *q);
void xrxe_tph_cq_destroy(struct xrxe_tph_cq *c);
/* A zeroed shared ring as the daemon makes one (abi.h header: index mask,
 * element size rounded up to a power of 2), page-aligned; free() it. */
struct xrxe_ring *xrxe_tph_ring_alloc(uint32_t nslots, uint32_t elem);
/* ibv_resize_cq: a new ring of nslots (a power of 2); 0 or the core's error
 * (the CQ keeps its old ring then). */
int xrxe_tph_cq_resize(struct xrxe_tph_cq *c, uint32_t nslots);

/* Connection parameters for xrxe_tph_connect. */
struct xrxe_tph_conn {
	enum ibv_mtu mtu;
	uint32_t psn[2];      /* SQ PSN of side i (= RQ PSN of the other) */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint32_t access;      /* QP access flags on both */
	uint32_t qkey;        /* UD */
	bool fixed_ack_timeout; /* xrxe_tph_pair_init: both cores without
				 * adaptive retransmission (rto.c) */
};
void xrxe_tph_conn_default(struct xrxe_tph_conn *c);
/* RESET -> INIT -> RTR -> RTS on both QPs (a on side 0, b on side 1); 0 or -errno */
int xrxe_tph_connect(struct xrxe_tph_qp *a, struct xrxe_tph_qp *b, const struct xrxe_tph_conn *c);

/* The memory of an on-demand-paging region (xrxe_tp_mr_reg_odp's mem): the
 * harness's ops->odp_rw calls rw, which answers as the daemon's
 * /proc/PID/mem would (0, or -EFAULT for an address with no page). */
struct xrxe_tph_odp {
	int (*rw)(struct xrxe_tph_odp *o, uint64_t addr, void *buf, uint32_t n, bool write);
};

/* Register buf[0..len) at iova (0: use the buffer address). */
uint32_t xrxe_tph_mr(struct xrxe_tph_side *s, void *buf, uint64_t len, uint32_t access,
		     uint64_t iova);

int xrxe_tph_post_send(struct xrxe_tph_qp *q, const struct xrxe_tph_send *w);
/* raw: hdr + data copied into the slot as they are (malformed WQE tests) */
int xrxe_tph_post_send_raw(struct xrxe_tph_qp *q, const struct xrxe_send_wqe *hdr,
			   const void *data, uint32_t len);
int xrxe_tph_post_recv(struct xrxe_tph_qp *q, uint64_t wr_id, const struct xrxe_sge *sge,
		       uint32_t nsge);
int xrxe_tph_poll_cq(struct xrxe_tph_cq *c, struct ibv_wc *wc, int max);
/* CQEs waiting, without consuming. */
uint32_t xrxe_tph_cq_count(const struct xrxe_tph_cq *c);

/* Run both cores and the wire until nothing moves and no timer is pending
 * (true), or until max_ns of virtual time has passed (false). */
bool xrxe_tph_run(struct xrxe_tph *h, uint64_t max_ns);
/* Only deliver what is queued right now, poll once; no time advance. */
void xrxe_tph_step(struct xrxe_tph *h);

/* Inject a frame built from spec straight into side `to` (parsed first), then
 * poll that side once, as the daemon serves its QPs after each receive burst:
 * what the frame owes (ACK, NAK, READ response) is sent. */
int xrxe_tph_inject(struct xrxe_tph *h, int to, const struct xrxe_pkt_spec *spec);
/* Fill a spec for a packet from side `from` to QPN dest_qp (addresses, ports). */
void xrxe_tph_spec(const struct xrxe_tph *h, int from, uint32_t dest_qp,
		   struct xrxe_pkt_spec *spec);

/* Two QPs of one type connected side 0 <-> side 1, CQs of 256. */
struct xrxe_tph_pair {
	struct xrxe_tph h;
	struct xrxe_tph_conn conn;
	struct xrxe_tph_cq *ca, *cb;
	struct xrxe_tph_qp *a, *b;
};
/* c NULL: xrxe_tph_conn_default. Returns 0 or the connect error. */
int xrxe_tph_pair_init(struct xrxe_tph_pair *p, uint64_t seed, enum ibv_qp_type type,
		       const struct xrxe_tph_conn *c, bool sig_all);
void xrxe_tph_pair_fini(struct xrxe_tph_pair *p);
enum ibv_qp_state xrxe_tph_state(struct xrxe_tph_qp *q);
/* Counters of one QP (xrxe_tp_qp_foreach). */
void xrxe_tph_info(struct xrxe_tph_qp *q, struct xrxe_tp_qp_info *info);

#endif /* XRXE_TP_HARNESS_H */
