/* SPDX-License-Identifier: MIT */
/*
 * The InfiniBand transport core: a sans-I/O state machine (docs/architecture.md; the
 * anchor is ngtcp2's lib/, which does no I/O at all).
 *
 * Inputs:  received packets (already parsed and ICRC-checked by src/wire),
 *          the current time, and the shared-memory rings the applications
 *          post to (read here directly: they are memory, not I/O).
 * Outputs: frames to transmit (through ops->tx_*), completions written into
 *          CQ rings, CQ and async event notifications (through ops), and the
 *          next deadline.
 *
 * It makes no syscall and reads no clock, so unit tests drive two cores over
 * an in-memory wire that drops, reorders, duplicates and corrupts.
 *
 * One struct xrxe_tp per device (per daemon interface). Single-threaded: the
 * caller serialises every call.
 *
 * Objects are identified by small integer handles the core allocates (QPN for
 * QPs, lkey/rkey for MRs); every handle coming from an application is
 * looked up and checked, never dereferenced.
 *
 * Structure (rxe's split by role): qp.c (objects, state machine and attribute
 * checks, IBA 10.3 / docs/facts/rxe.md §2.11), req.c (requester: segmentation, PSNs,
 * window, rd_atomic slots, fences), resp.c (responder: PSN checks,
 * duplicates, RNR/NAKs, read responses, atomics), comp.c (completer:
 * ACK/NAK, timers, retry), rto.c (adaptive retransmission, loss recovery),
 * mr.c (keys, bounds, access), mw.c (memory windows), cq.c (CQE production,
 * notify), srq.c (shared receive queues), xrc.c (XRC, docs/xrc.md),
 * mcast.c (multicast groups), gsi.c
 * (QP1 for the CM), cc.c / dcqcn.c / np.c / pacer.c / cc_params.c
 * (congestion control), timer.c (deadlines), tx.c (frame building), tp.c
 * (the device object, dispatch, polling).
 */
#ifndef XRXE_TRANSPORT_H
#define XRXE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>

#include <infiniband/verbs.h>

#include "xrxe/abi.h"
#include "xrxe/steer.h"
#include "xrxe/wire.h"

struct xrxe_tp;
struct xrxe_tp_qp;
struct xrxe_tp_cq;
struct xrxe_tp_srq;

/* A resolved address vector: everything the headers of a packet need. The
 * daemon resolves GIDs to addresses and MACs (netlink); the core only copies. */
struct xrxe_av {
	uint8_t ip_version; /* 4 or 6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} saddr, daddr;
	uint8_t smac[XRXE_ETH_ALEN];
	uint8_t dmac[XRXE_ETH_ALEN];
	uint8_t tclass; /* DSCP << 2 | ECN */
	uint8_t hop_limit;
	uint32_t flow_label;
};

/* A transmit buffer the caller hands out: the core writes len bytes across
 * frag[] (headers all in frag[0]) and submits it.
 * tx_reserve fills frag[0..nfrags) with the buffers' capacities: their sum
 * must be >= len and frag[0] must hold all headers (128 bytes always do:
 * Ethernet + IPv6 + UDP + BTH + the longest extension headers is 102).
 * Before tx_submit the core trims frag[].len to the bytes written, lowers
 * nfrags to the fragments used (frag[] entries past it are left as reserved,
 * for the caller to recycle) and sets len to the frame length. */
struct xrxe_tp_txbuf {
	struct xrxe_frag frag[XRXE_MAX_FRAGS];
	uint8_t nfrags;
	uint32_t len;
	void *priv; /* the caller's (e.g. UMEM addresses) */
};

struct xrxe_tp_ops {
	/* Buffer for a frame of len bytes (len <= the port's max frame).
	 * 0, or -ENOBUFS: the core keeps the work and tries again on the next
	 * xrxe_tp_poll (which then returns true).
	 * No callback may call back into the core (destroy objects, modify
	 * QPs, ...): they run in the middle of its processing. */
	int (*tx_reserve)(void *user, uint32_t len, struct xrxe_tp_txbuf *buf);
	/* Transmit a reserved buffer (ownership passes back to the caller). */
	void (*tx_submit)(void *user, struct xrxe_tp_txbuf *buf);
	/* A completion arrived on a CQ whose ring->notify was armed; the core has
	 * already cleared notify. The caller signals the CQ's channel. */
	void (*cq_event)(void *user, void *cq_user);
	/* An asynchronous event (IBA 11.6.3): obj_user is the QP's, CQ's or
	 * SRQ's user pointer. */
	void (*async_event)(void *user, enum ibv_event_type type, void *obj_user);
	/* A management datagram for QP1 (the GSI, IBA 13.5.1): a UD SEND_ONLY
	 * to QPN 1 carrying the GSI Q_Key and at least a 256-byte MAD, P_Key
	 * checked. The payload is pkt's (xrxe_pkt_copy_payload). Optional:
	 * without it such packets are dropped as having no QP. */
	void (*gsi_rx)(void *user, const struct xrxe_pkt *pkt);
	/* On-demand paging (odp.c; docs/architecture.md "On-demand paging"):
	 * read (write false) or write n bytes of the application's memory at
	 * its address addr; mem is what xrxe_tp_mr_reg_odp was given. 0, or
	 * -EFAULT when any of it is not there (unmapped, not accessible, the
	 * process gone). Optional: without it ODP regions are refused. */
	int (*odp_rw)(void *user, void *mem, uint64_t addr, void *buf, uint32_t n, bool write);
	/* Raw packet QP flows (raw.c): rule slot changed (flow NULL: removed);
	 * count is one past the highest slot in use. The caller mirrors the
	 * table into the XDP program's map so that matching frames reach it.
	 * Optional. */
	void (*raw_flow_set)(void *user, uint32_t slot, const struct xrxe_steer_flow *flow,
			     uint32_t count);
};

struct xrxe_tp_config {
	const struct xrxe_tp_ops *ops;
	void *user;
	/* Largest IB path MTU the port allows (bytes: 256..4096), from the
	 * netdev MTU as rxe does: netdev MTU - 80 rounded down (docs/facts/rxe.md §3.1). */
	uint32_t max_path_mtu;
	uint32_t max_qp;
	uint32_t max_mr;
	uint8_t local_ack_delay; /* reported in device attrs */
	/* Port speed in Mb/s: the rate an uncongested QP sends at and the
	 * ceiling DCQCN recovers to (rp_max_rate 0). 0: 100000. */
	uint32_t line_rate_mbps;
	/* Retransmit on the Local ACK Timeout only, as rxe does. Default
	 * (false): RC QPs also retry after a few silent round trips (rto.c,
	 * adaptive retransmission); that does not use the retry budget. */
	bool fixed_ack_timeout;
	/* Selective repeat for RC QPs whose peer the CM did not negotiate
	 * with (connected by exchanging QPNs out of band): on = every such QP
	 * uses it, and its peer must be xrxe with the same setting
	 * (xrxed --selective-repeat on; docs/selective-repeat.md). The CM
	 * decides for its own connections (xrxe_tp_qp_set_sr). */
	bool selective_repeat;
	/* Seeds the choice of L_Key/R_Key indices and key bytes (mr.c, mw.c):
	 * the daemon passes getrandom() bytes so that keys cannot be predicted;
	 * 0 (unit tests) gives a fixed sequence. The core itself makes no
	 * syscall. */
	uint64_t key_seed;
	/* The netdev MTU: a raw packet QP sends frames of 14 (an Ethernet
	 * header) up to raw_mtu + 18 (Ethernet header and one VLAN tag)
	 * bytes. 0: max_path_mtu + 80. */
	uint32_t raw_mtu;
};

int xrxe_tp_create(const struct xrxe_tp_config *cfg, struct xrxe_tp **out);
/* Frees everything still allocated (QPs, CQs, MRs, PDs, AHs). */
void xrxe_tp_destroy(struct xrxe_tp *tp);

/* --- Protection domains, memory regions, address handles ------------------ */

int xrxe_tp_pd_alloc(struct xrxe_tp *tp, uint32_t *pdn);
/* -EBUSY while MRs, QPs or AHs still use it. */
int xrxe_tp_pd_free(struct xrxe_tp *tp, uint32_t pdn);

/* host: where the caller has the memory mapped; the core reads and writes it
 * directly. iova: the address the application and remote peers use. */
int xrxe_tp_mr_reg(struct xrxe_tp *tp, uint32_t pdn, void *host, uint64_t iova, uint64_t length,
		   uint32_t access, uint32_t *lkey, uint32_t *rkey);
/* An on-demand-paging region (odp.c): nothing is mapped; every access goes
 * through ops->odp_rw(mem, the application's address addr + offset). The
 * implicit region of ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND) is
 * addr 0, iova 0, length UINT64_MAX. -EOPNOTSUPP without ops->odp_rw. */
int xrxe_tp_mr_reg_odp(struct xrxe_tp *tp, uint32_t pdn, void *mem, uint64_t addr, uint64_t iova,
		       uint64_t length, uint32_t access, uint32_t *lkey, uint32_t *rkey);
/* -EBUSY while memory windows are bound to it (IBA 10.6.7.2.x). */
int xrxe_tp_mr_dereg(struct xrxe_tp *tp, uint32_t lkey);
/* ibv_rereg_mr: flags enum ibv_rereg_mr_flags; only the named parts change
 * (CHANGE_TRANSLATION: host, iova, length; CHANGE_PD: pdn; CHANGE_ACCESS:
 * access). Keys stay; the region becomes valid again (an invalidated region
 * may be reregistered). -EINVAL (bad key or arguments), -EBUSY (windows
 * bound), -EOPNOTSUPP (flags unknown). Nothing changes on error. */
int xrxe_tp_mr_rereg(struct xrxe_tp *tp, uint32_t lkey, uint32_t flags, uint32_t pdn, void *host,
		     uint64_t iova, uint64_t length, uint32_t access);

/* Memory windows (IBA 10.6.7): type IBV_MW_TYPE_1 or IBV_MW_TYPE_2. handle
 * names the window for dealloc; rkey is its first R_Key (unbound). Windows
 * are bound through a send queue (IBV_WR_BIND_MW); dealloc unbinds. */
int xrxe_tp_mw_alloc(struct xrxe_tp *tp, uint32_t pdn, uint32_t type, uint32_t *handle,
		     uint32_t *rkey);
int xrxe_tp_mw_dealloc(struct xrxe_tp *tp, uint32_t handle);

int xrxe_tp_ah_create(struct xrxe_tp *tp, uint32_t pdn, const struct xrxe_av *av,
		      uint32_t *handle);
int xrxe_tp_ah_destroy(struct xrxe_tp *tp, uint32_t handle);

/* --- Completion queues ------------------------------------------------------ */

/* ring: initialised by the caller (log2_elem_size for struct xrxe_cqe,
 * index_mask = nslots - 1, indices 0), shared with the application.
 * nslots: a power of 2 >= 2 (capacity nslots - 1). CQE timestamp_ns is the
 * now_ns of the call that wrote it (the caller's clock). */
int xrxe_tp_cq_create(struct xrxe_tp *tp, struct xrxe_ring *ring, uint32_t nslots, void *user,
		      struct xrxe_tp_cq **out);
/* -EBUSY while a QP uses it. */
int xrxe_tp_cq_destroy(struct xrxe_tp *tp, struct xrxe_tp_cq *cq);
/* ibv_resize_cq: move the CQ to a new ring (initialised by the caller as for
 * create). The CQEs not yet consumed from the old ring are copied, in order,
 * to slots 0.. of the new one, whose producer is published; the notify arm
 * and an overrun carry over; the old ring is never touched again. -EINVAL if
 * the ring is malformed or too small for the CQEs outstanding. First the
 * send queues completing into the CQ run (cq.c): the CQEs outstanding include
 * those of UD/UC sends and local operations posted before the call, as on
 * rxe. */
int xrxe_tp_cq_resize(struct xrxe_tp *tp, struct xrxe_tp_cq *cq, struct xrxe_ring *ring,
		      uint32_t nslots);

/* --- Shared receive queues (IBA 10.2.9, 11.2.3) ------------------------------- */

/* ring: initialised by the caller as for a QP's RQ (elements >= 16 +
 * 16 * max_sge, nslots a power of 2 >= 2, capacity nslots - 1), shared with
 * the application. The core owns the consumer index: a receive WQE is taken
 * (consumer advanced) when a QP starts a message with it, so QPs never share
 * one. Receive buffers are checked against the PD of the QP that takes the
 * WQE, as rxe does (the SRQ's own PD only holds a reference). */
int xrxe_tp_srq_create(struct xrxe_tp *tp, uint32_t pdn, struct xrxe_ring *ring, uint32_t nslots,
		       uint32_t max_sge, void *user, struct xrxe_tp_srq **out);
/* IBV_SRQ_LIMIT arms the limit event (IBA 11.5.2.4: IBV_EVENT_SRQ_LIMIT_REACHED
 * once, when the WQE count drops below the limit; 0 disarms); -EINVAL above
 * the capacity. IBV_SRQ_MAX_WR (resize) is -EOPNOTSUPP. */
int xrxe_tp_srq_modify(struct xrxe_tp *tp, struct xrxe_tp_srq *srq, const struct ibv_srq_attr *attr,
		       int attr_mask);
void xrxe_tp_srq_query(const struct xrxe_tp_srq *srq, struct ibv_srq_attr *attr);
/* A tag matching SRQ (IBV_SRQT_TM; tm_srq.c): as xrxe_tp_srq_create, with
 * a list of max_tags tagged buffers (1..XRXE_TP_TM_MAX_TAGS) whose operations
 * complete into cq. -EINVAL: a bad size or no CQ. */
#define XRXE_TP_TM_MAX_TAGS 1024u /* == tm.h XRXE_TM_MAX_TAGS */
int xrxe_tp_srq_create_tm(struct xrxe_tp *tp, uint32_t pdn, struct xrxe_tp_cq *cq,
			  uint32_t max_tags, struct xrxe_ring *ring, uint32_t nslots,
			  uint32_t max_sge, void *user, struct xrxe_tp_srq **out);
/* ibv_post_srq_ops' one operation (abi.h XRXE_CTRL_SRQ_OP, from the
 * application: checked here): 0 and, for an ADD, *handle; -EINVAL (not a
 * TM SRQ, bad opcode or scatter list), -ENOSPC (the list is full). */
int xrxe_tp_srq_op(struct xrxe_tp *tp, struct xrxe_tp_srq *srq,
		   const struct xrxe_ctrl_srq_op *op, uint32_t *handle);
/* -EBUSY while a QP uses it. */
int xrxe_tp_srq_destroy(struct xrxe_tp *tp, struct xrxe_tp_srq *srq);

/* --- XRC: domains, XRC SRQs, target QPs (IBA 9.x XRC / 10.2.x; docs/xrc.md) -- */

/* An XRC domain groups XRC SRQs and target QPs: a request arriving at a
 * target QP may only name an SRQ of the target's domain. Domains are plain
 * numbers here; the daemon maps files (inodes) to them (ibv_open_xrcd). */
#define XRXE_TP_MAX_XRCD 1024
#define XRXE_TP_MAX_XRC_SRQ 4096
int xrxe_tp_xrcd_alloc(struct xrxe_tp *tp, uint32_t *xrcdn);
/* -EBUSY while XRC SRQs or target QPs belong to it; -EINVAL if unknown. */
int xrxe_tp_xrcd_free(struct xrxe_tp *tp, uint32_t xrcdn);
/* An XRC SRQ: as xrxe_tp_srq_create (ring, nslots, max_sge), in domain
 * xrcdn; its receive completions go to cq, and its PD (pdn) checks the
 * receive buffers and the R_Keys of every request that names it.
 * -EINVAL (bad domain, CQ or ring), -ENOMEM (no SRQ number left). Destroy
 * with xrxe_tp_srq_destroy: target QPs let go of it (one in the middle of a
 * message that uses it goes to ERR). */
int xrxe_tp_srq_create_xrc(struct xrxe_tp *tp, uint32_t pdn, uint32_t xrcdn,
			   struct xrxe_tp_cq *cq, struct xrxe_ring *ring, uint32_t nslots,
			   uint32_t max_sge, void *user, struct xrxe_tp_srq **out);
/* The SRQ number a peer's XRCETH names (ibv_get_srq_num); 0 for a basic SRQ. */
uint32_t xrxe_tp_srq_num(const struct xrxe_tp_srq *srq);
/* ibv_open_qp: the target QP qpn if it belongs to domain xrcdn, else NULL. */
struct xrxe_tp_qp *xrxe_tp_xrc_tgt_find(struct xrxe_tp *tp, uint32_t qpn, uint32_t xrcdn);
/* A shared target QP changes hands: events go to user from now on. */
void xrxe_tp_qp_set_user(struct xrxe_tp_qp *qp, void *user);
uint32_t xrxe_tp_qp_num(const struct xrxe_tp_qp *qp);

/* --- Queue pairs ------------------------------------------------------------ */

struct xrxe_tp_qp_init {
	/* IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, or XRC (docs/xrc.md):
	 * IBV_QPT_XRC_SEND, an initiator: pdn, send_cq and sq only (no
	 * receive side: recv_cq, rq and srq are ignored / must be NULL);
	 * IBV_QPT_XRC_RECV, a target: xrcdn only (no PD, CQs or rings: each
	 * message names the XRC SRQ that receives it, whose PD and CQ it uses) */
	enum ibv_qp_type qp_type;
	uint32_t pdn;
	struct xrxe_tp_cq *send_cq;
	struct xrxe_tp_cq *recv_cq;
	/* rings initialised by the caller; elem sizes per abi.h (powers of 2
	 * >= 72 + max(16 * max_send_sge, max_inline_data) and
	 * >= 16 + 16 * max_recv_sge); slots powers of 2. Exactly one of rq
	 * and srq: a QP with an SRQ takes its receive WQEs from it. */
	struct xrxe_ring *sq;
	uint32_t sq_slots;
	struct xrxe_ring *rq;
	uint32_t rq_slots;
	struct xrxe_tp_srq *srq;
	struct ibv_qp_cap cap; /* as granted */
	bool sq_sig_all;
	uint32_t xrcdn; /* IBV_QPT_XRC_RECV: its XRC domain */
	void *user;
};

int xrxe_tp_qp_create(struct xrxe_tp *tp, const struct xrxe_tp_qp_init *init, uint32_t *qpn,
		      struct xrxe_tp_qp **out);
/* IBA 10.3 / docs/facts/rxe.md §2.11: an invalid transition or attribute set fails
 * with -EINVAL and changes nothing. av: the resolved address vector, required
 * when attr_mask has IBV_QP_AV (the caller resolves attr->ah_attr).
 * To RESET: every transport state is forgotten and both SQ and RQ indices
 * (producer and consumer) restart at 0, as rdma-core's rxe provider resets
 * its own copy; the shim must do the same. The QP's unpolled CQEs leave its
 * CQs (as mlx4/mlx5 clean them; the shim holds the CQs' locks across the
 * call). To ERR: every outstanding and
 * posted WR completes with IBV_WC_WR_FLUSH_ERR (later posts too). */
int xrxe_tp_qp_modify(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, const struct ibv_qp_attr *attr,
		      int attr_mask, const struct xrxe_av *av);
int xrxe_tp_qp_query(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, struct ibv_qp_attr *attr,
		     struct ibv_qp_init_attr *init);
/* Destroy: outstanding work is dropped, nothing more is sent for this QPN;
 * multicast attachments are dropped with it. */
void xrxe_tp_qp_destroy(struct xrxe_tp *tp, struct xrxe_tp_qp *qp);

/* --- UD multicast (IBA 10.5, RoCEv2 annex A17.4.5) ---------------------------- */

/* Attach a UD QP to the group gid (an IPv6 multicast GID ff..., or an
 * IPv4-mapped one ::ffff:224.0.0.0/4, as ib_attach_mcast accepts): packets to
 * destination QPN 0xFFFFFF addressed to that group are delivered to every
 * attached QP (each checks its own state and Q_Key). -EINVAL for a non-UD QP
 * or a unicast GID, -EEXIST if attached already, -ENOMEM beyond
 * XRXE_TP_MAX_MCAST_GRP groups or XRXE_TP_MAX_MCAST_QP_ATTACH QPs per group.
 * *first is set when the group is new (the caller joins it on the network). */
#define XRXE_TP_MAX_MCAST_GRP 64
#define XRXE_TP_MAX_MCAST_QP_ATTACH 56 /* rxe's RXE_MAX_MCAST_QP_ATTACH */
int xrxe_tp_mcast_attach(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, const union ibv_gid *gid,
			 bool *first);
/* -ENOENT if not attached; *last when the group is now empty (leave it). */
int xrxe_tp_mcast_detach(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, const union ibv_gid *gid,
			 bool *last);
/* Detach qp from every group; left(arg, gid) for each group left empty. */
void xrxe_tp_mcast_detach_all(struct xrxe_tp *tp, struct xrxe_tp_qp *qp,
			      void (*left)(void *arg, const union ibv_gid *gid), void *arg);
/* True if gid is a multicast GID in either form. */
bool xrxe_tp_gid_is_mcast(const union ibv_gid *gid);

/* --- Data path --------------------------------------------------------------- */

/* Send a MAD from QP1 to QP1 of the peer at av (IBA 13.5.1: UD SEND_ONLY,
 * DETH source QP 1 and the GSI Q_Key 0x80010000, P_Key 0xffff, the av's
 * traffic class without ECN). len <= the path MTU. -ENOBUFS when no buffer
 * is free (a datagram: the CM retransmits), -EINVAL for a bad av or len. */
int xrxe_tp_gsi_send(struct xrxe_tp *tp, const struct xrxe_av *av, const void *mad, uint32_t len);

/* A received packet that parsed and passed the ICRC check (src/wire). */
void xrxe_tp_rx(struct xrxe_tp *tp, const struct xrxe_pkt *pkt, uint64_t now_ns);

/* The application published new send WQEs on qp's send queue (the SQ
 * doorbell, abi.h): the core looks at that ring on its next poll. The core
 * never scans send queues on its own: a post without a doorbell waits for
 * the QP's next event (packet, timer, modify). Cheap and idempotent. */
void xrxe_tp_qp_doorbell(struct xrxe_tp *tp, struct xrxe_tp_qp *qp);

/* Make progress: new WQEs on send queues, responses owed, retransmissions
 * and expired timers. Returns true if it did anything or if tx_reserve
 * refused a buffer (work is pending: the caller keeps spinning, or waits for
 * TX completions and polls again), false if idle. Visits only QPs with work
 * (src/transport/sched.c): its cost does not grow with idle QPs. */
bool xrxe_tp_poll(struct xrxe_tp *tp, uint64_t now_ns);

/* Absolute time of the next timer (retransmit, RNR wait, ...), or UINT64_MAX. */
uint64_t xrxe_tp_next_deadline(const struct xrxe_tp *tp);

/* True if some send queue the core knows of (its doorbell rang) has posted
 * WQEs not started yet, on a QP the pacer does not hold (for the daemon's
 * sleep protocol: re-checked after publishing daemon_sleeping; doorbells not
 * yet handed over are the caller's to check). A paced QP's backlog does not
 * count: its release time is a transport deadline that ends the sleep.
 * Costs the queued QPs only. */
bool xrxe_tp_sq_pending(const struct xrxe_tp *tp);

/* --- Introspection (xrxe qp / xrxe stats) ------------------------------------ */

struct xrxe_tp_qp_info {
	uint32_t qpn, dest_qpn;
	enum ibv_qp_type qp_type;
	enum ibv_qp_state state;
	uint32_t sq_psn;   /* next PSN to send */
	uint32_t acked_psn; /* oldest unacknowledged */
	uint32_t rq_psn;   /* next PSN expected */
	uint64_t tx_packets, rx_packets, tx_bytes, rx_bytes;
	uint64_t retransmits, timeouts, rnr_naks_rcvd, rnr_naks_sent, seq_naks_rcvd, seq_naks_sent;
	uint64_t duplicates;
	uint64_t fast_retransmits; /* adaptive retransmission (not in retransmits) */
	uint64_t srtt_ns;          /* smoothed round trip (0: no sample yet) */
	/* Congestion control (DCQCN reaction and notification point) */
	uint64_t cc_rate_bps, cc_target_bps; /* current / target rate */
	uint64_t cc_rate_min_bps; /* lowest rate a cut left it at (line rate: never cut) */
	uint32_t cc_alpha;                   /* 10-bit fixed point, 1023 ~ 1.0 */
	bool cc_limited;                     /* paced (got a CNP, not yet back at line rate) */
	uint64_t cnps_sent, cnps_handled, ecn_marked;
	/* Loss recovery (issue 19): requester packets sent again (go-back-N
	 * resends, probes, READ requests for the rest of a response);
	 * responder packets dropped for a PSN beyond the expected one
	 * (after a loss: go-back-N's cost); recovery episodes (a loss learnt
	 * from a NAK, a READ response gap, a probe's answer or a timeout, up
	 * to when everything sent before it is acknowledged); loss probes
	 * sent (rto.c); the send window in PSNs (RC; 0 for UC/UD). */
	uint64_t resent_packets, out_of_sequence, recoveries, probes;
	uint32_t cwnd;
	/* Selective repeat (docs/selective-repeat.md): whether the QP uses
	 * it, and request packets the responder held past a hole (each
	 * counted once; duplicates of held ones count in duplicates). */
	bool selective_repeat;
	uint64_t ooo_held;
};

/* Selective repeat for one RC QP, as the CM negotiated it (ECE in REQ/REP):
 * on or off whatever the device default. Only before the QP carried any
 * packet (-EBUSY), RC only (-EINVAL), -ENOENT without such a QP, -ENOMEM. */
int xrxe_tp_qp_set_sr(struct xrxe_tp *tp, uint32_t qpn, bool on);

/* Calls fn for every QP; stops early if fn returns non-zero. */
int xrxe_tp_qp_foreach(struct xrxe_tp *tp, int (*fn)(void *arg, const struct xrxe_tp_qp_info *),
		       void *arg);

struct xrxe_tp_stats {
	uint64_t rx_packets, tx_packets;
	uint64_t rx_drop_no_qp, rx_drop_bad_state, rx_drop_bad_pkey, rx_drop_bad_qkey,
		rx_drop_bad_opcode, rx_drop_bad_av;
	uint64_t rx_drop_no_mcast; /* multicast to a group no QP is attached to */
	uint64_t gsi_rx, gsi_tx;   /* QP1 MADs handed to the CM / sent for it */
	uint64_t rx_drop_gsi;      /* for QP1 but not a well-formed GSI datagram */
	/* UD datagrams a QP dropped (IBA 9.7.6.1.x, class D silently dropped):
	 * no receive WQE posted; larger than the WQE's buffers with the GRH area */
	uint64_t rx_drop_ud_no_wqe, rx_drop_ud_too_long;
	uint64_t tx_no_buffer; /* tx_reserve said -ENOBUFS */
	uint32_t qps, cqs, mrs, pds, ahs, srqs, mcast_grps, mws;
	/* congestion control */
	uint64_t cnp_sent, cnp_rcvd;  /* CNPs built / CNPs handed to a QP's reaction point */
	uint64_t ecn_ce_qp;           /* CE-marked packets delivered to a QP */
	uint64_t cnp_rcvd_no_qp;      /* CNPs ignored: from a peer not the QP's, for a
				       * QP not in RTS/SQD, or for no QP (those also
				       * in rx_drop_no_qp) */
	uint64_t cnp_suppressed;      /* CE marks within np_min_time_between_cnps */
	uint64_t paced;               /* times a QP waited for its pacer */
	/* on-demand paging (odp.c): bytes read and written through
	 * ops->odp_rw, and accesses that found no page (a fault: an error
	 * completion or a NAK, never a crash) */
	uint64_t odp_read_bytes, odp_write_bytes, odp_faults;
	/* raw packet QPs (raw.c): frames sent; frames delivered to a QP (one
	 * per QP whose flow matched); frames matching no flow; frames a
	 * matching QP dropped (not receiving, no receive WQE, too long for
	 * it, a bad buffer); send WQEs refused for their length */
	uint64_t raw_tx, raw_rx, raw_rx_no_flow, raw_rx_drop, raw_tx_bad_len;
	uint64_t raw_flows; /* flows in use */
	/* tag matching's rendezvous (tm_rndv.c): READs started; RVHs refused
	 * before any READ (longer than the tagged buffer, a bad buffer) */
	uint64_t tm_rndv, tm_rndv_bad;
};
void xrxe_tp_get_stats(const struct xrxe_tp *tp, struct xrxe_tp_stats *stats);

/* --- Raw packet QPs (raw.c; docs/architecture.md "Raw packet QPs") ------------
 *
 * An IBV_QPT_RAW_PACKET QP sends the whole Ethernet frame its send WQE
 * gathers (no header of ours, no ICRC) and receives the frames its flows
 * match, headers included, with no GRH (wc.byte_len = frame length). */

/* A flow (ibv_create_flow) steering frames matching rule to qp, a raw packet
 * QP. *id names it for destroy. -EINVAL (not a raw QP, a rule matching
 * everything), -ENOSPC (XRXE_STEER_MAX_FLOWS in use). */
int xrxe_tp_flow_create(struct xrxe_tp *tp, struct xrxe_tp_qp *qp,
			const struct xrxe_steer_flow *rule, uint32_t *id);
/* -ENOENT: no such flow (its QP was destroyed, which removes its flows). */
int xrxe_tp_flow_destroy(struct xrxe_tp *tp, uint32_t id);
/* A frame that is not RoCEv2, from the wire or looped back: delivered to
 * every raw QP one of whose flows matches it. Returns how many QPs matched
 * (0: none; the frame was not for us). */
unsigned xrxe_tp_raw_rx(struct xrxe_tp *tp, const struct xrxe_frag *frag, unsigned nfrags,
			uint64_t now_ns);
/* RSS: qp (a raw packet QP) hands each frame its flows match to one of the
 * n raw packet QPs wqs (n a power of 2; the receive work queues of an
 * indirection table), the one at the Toeplitz hash (key) of the frame's
 * IBV_RX_HASH_* fields modulo n; qp itself needs no state transition. The
 * caller keeps the wqs alive while qp has them. -EINVAL, -ENOMEM. */
int xrxe_tp_qp_set_rss(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, struct xrxe_tp_qp *const *wqs,
		       uint32_t n, const uint8_t *key, uint32_t key_len, uint64_t fields);
/* The Toeplitz hash of n input bytes with a key of key_len bytes (zeros
 * beyond it), as RSS NICs compute it. */
uint32_t xrxe_tp_rss_hash(const uint8_t *key, uint32_t key_len, const uint8_t *in, uint32_t n);
/* The flow key of a frame (include/xrxe/steer.h), as the XDP program
 * computes it. */
void xrxe_flow_key_of(const uint8_t *frame, uint32_t len, struct xrxe_flow_key *k);

/* --- Congestion control (DCQCN, docs/facts/dcqcn.md §1) ------------------------------
 *
 * Notification point: a CE-marked packet for a QP makes it send a CNP (opcode
 * 0x81, BECN, DestQP = the peer's QPN) to the peer, at most one per
 * np_min_time_between_cnps per QP. Reaction point: a CNP for a QP cuts its
 * rate (at most once per rp_rate_reduce_monitor_period), a timer and a byte
 * counter raise it again; the QP's packets are paced to that rate. QPs that
 * never got a CNP (or have recovered to the line rate) are not paced.
 *
 * Parameters carry the NVIDIA/mlx5 debugfs names, units and defaults
 * (docs/facts/dcqcn.md §1.6), so traces compare with ConnectX NICs; xrxe adds the
 * on/off switch and the data packets' marking. Every field is a u32. */
struct xrxe_tp_cc_params {
	uint32_t enabled;                     /* 0: no ECN on data, no CNPs, no pacing */
	uint32_t rp_clamp_tgt_rate;           /* bool: Rt <- Rc on every rate decrease */
	uint32_t rp_clamp_tgt_rate_ati;       /* bool: also after a timer-driven increase */
	uint32_t rp_time_reset;               /* us: rate-increase timer */
	uint32_t rp_byte_reset;               /* bytes: rate-increase byte counter */
	uint32_t rp_threshold;                /* F: increase events before additive / hyper */
	uint32_t rp_ai_rate;                  /* Mb/s: additive increase step */
	uint32_t rp_hai_rate;                 /* Mb/s: hyper increase step */
	uint32_t rp_max_rate;                 /* Mb/s: ceiling; 0 = line rate */
	uint32_t rp_min_dec_fac;              /* %: a decrease keeps at least this much */
	uint32_t rp_min_rate;                 /* Mb/s: floor */
	uint32_t rp_rate_to_set_on_first_cnp; /* Mb/s: Rc = Rt on the first CNP; 0 = keep */
	uint32_t rp_dce_tcp_g;                /* alpha gain, /1024 */
	uint32_t rp_dce_tcp_rtt;              /* us: alpha update period */
	uint32_t rp_rate_reduce_monitor_period; /* us: at most one decrease per period */
	uint32_t rp_initial_alpha_value;      /* alpha at the first CNP, /1024 (1023 ~ 1.0) */
	uint32_t rp_gd;                       /* Rc -= Rc * alpha / 2^rp_gd */
	uint32_t np_min_time_between_cnps;    /* us: per QP; 0 = a CNP per CE packet */
	uint32_t np_cnp_dscp;                 /* DSCP of CNPs */
	uint32_t np_cnp_prio_mode;            /* 1: PCP from the marked packet, 0: np_cnp_prio */
	uint32_t np_cnp_prio;                 /* 802.1p PCP of CNPs (VLAN-tagged frames only) */
	uint32_t data_dscp;                   /* DSCP of every other packet; XRXE_CC_DSCP_APP =
					       * the application's (GRH traffic class) */
	uint32_t data_ecn;                    /* ECN codepoint of data while enabled:
					       * 0 Not-ECT, 1 ECT(1), 2 ECT(0) */
	uint32_t line_rate_pacing;            /* bool: the data of all QPs together
					       * leaves no faster than the ceiling (a NIC
					       * port of rp_max_rate on a faster link,
					       * e.g. veth) */
};
#define XRXE_CC_DSCP_APP 64u

/* The defaults (docs/facts/dcqcn.md §1.6 table). */
void xrxe_tp_cc_defaults(struct xrxe_tp_cc_params *p);
/* Replace the device's parameters (every QP follows from its next event;
 * disabling releases every rate limiter at once). -EINVAL if a value is
 * outside its range (xrxe_cc_param_check), nothing changed then. */
int xrxe_tp_cc_set(struct xrxe_tp *tp, const struct xrxe_tp_cc_params *p);
void xrxe_tp_cc_get(const struct xrxe_tp *tp, struct xrxe_tp_cc_params *p);
/* The line rate in b/s the rate limiters recover to. */
uint64_t xrxe_tp_cc_max_bps(const struct xrxe_tp *tp);

/* The parameter table (cc_params.c), shared by the daemon's --cc option, its
 * control op and the xrxe CLI: names, units, ranges. */
struct xrxe_cc_param_desc {
	const char *name;
	const char *unit;
	const char *help;
	size_t offset; /* into struct xrxe_tp_cc_params */
	uint32_t min, max;
};
const struct xrxe_cc_param_desc *xrxe_cc_param_table(unsigned *n);
const struct xrxe_cc_param_desc *xrxe_cc_param_find(const char *name);
/* Parse "name=value" into p. 0, or -EINVAL with a one-line reason in err. */
int xrxe_cc_param_parse(struct xrxe_tp_cc_params *p, const char *assignment, char *err,
			size_t errlen);
/* 0 if every field is within its range, else -EINVAL and the reason. */
int xrxe_cc_param_check(const struct xrxe_tp_cc_params *p, char *err, size_t errlen);
/* "name value\n" for every parameter (value "app" for XRXE_CC_DSCP_APP). */
void xrxe_cc_param_format(const struct xrxe_tp_cc_params *p, FILE *out);

#endif /* XRXE_TRANSPORT_H */
