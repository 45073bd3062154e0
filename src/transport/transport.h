/* SPDX-License-Identifier: MIT */
/*
 * The InfiniBand transport core: a sans-I/O state machine (DESIGN.md; the
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
 * checks, IBA 10.3 / ref/rxe.md §2.11), req.c (requester: segmentation, PSNs,
 * window, rd_atomic slots, fences), resp.c (responder: PSN checks,
 * duplicates, RNR/NAKs, read responses, atomics), comp.c (completer:
 * ACK/NAK, timers, retry), mr.c (keys, bounds, access), cq.c (CQE
 * production, notify), timer.c (deadlines).
 */
#ifndef XRXE_TRANSPORT_H
#define XRXE_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include <infiniband/verbs.h>

#include "xrxe/abi.h"
#include "xrxe/wire.h"

struct xrxe_tp;
struct xrxe_tp_qp;
struct xrxe_tp_cq;

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
};

struct xrxe_tp_config {
	const struct xrxe_tp_ops *ops;
	void *user;
	/* Largest IB path MTU the port allows (bytes: 256..4096), from the
	 * netdev MTU as rxe does: netdev MTU - 80 rounded down (ref/rxe.md §3.1). */
	uint32_t max_path_mtu;
	uint32_t max_qp;
	uint32_t max_mr;
	uint8_t local_ack_delay; /* reported in device attrs */
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
 * the ring is malformed or too small for the CQEs outstanding. */
int xrxe_tp_cq_resize(struct xrxe_tp *tp, struct xrxe_tp_cq *cq, struct xrxe_ring *ring,
		      uint32_t nslots);

/* --- Queue pairs ------------------------------------------------------------ */

struct xrxe_tp_qp_init {
	enum ibv_qp_type qp_type; /* IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD */
	uint32_t pdn;
	struct xrxe_tp_cq *send_cq;
	struct xrxe_tp_cq *recv_cq;
	/* rings initialised by the caller; elem sizes per abi.h (powers of 2
	 * >= 72 + max(16 * max_send_sge, max_inline_data) and
	 * >= 16 + 16 * max_recv_sge); slots powers of 2. rq is required: no
	 * SRQ support yet (-EINVAL without one). */
	struct xrxe_ring *sq;
	uint32_t sq_slots;
	struct xrxe_ring *rq;
	uint32_t rq_slots;
	struct ibv_qp_cap cap; /* as granted */
	bool sq_sig_all;
	void *user;
};

int xrxe_tp_qp_create(struct xrxe_tp *tp, const struct xrxe_tp_qp_init *init, uint32_t *qpn,
		      struct xrxe_tp_qp **out);
/* IBA 10.3 / ref/rxe.md §2.11: an invalid transition or attribute set fails
 * with -EINVAL and changes nothing. av: the resolved address vector, required
 * when attr_mask has IBV_QP_AV (the caller resolves attr->ah_attr).
 * To RESET: every transport state is forgotten and both SQ and RQ indices
 * (producer and consumer) restart at 0, as rdma-core's rxe provider resets
 * its own copy; the shim must do the same. To ERR: every outstanding and
 * posted WR completes with IBV_WC_WR_FLUSH_ERR (later posts too). */
int xrxe_tp_qp_modify(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, const struct ibv_qp_attr *attr,
		      int attr_mask, const struct xrxe_av *av);
int xrxe_tp_qp_query(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, struct ibv_qp_attr *attr,
		     struct ibv_qp_init_attr *init);
/* Destroy: outstanding work is dropped, nothing more is sent for this QPN. */
void xrxe_tp_qp_destroy(struct xrxe_tp *tp, struct xrxe_tp_qp *qp);

/* --- Data path --------------------------------------------------------------- */

/* A received packet that parsed and passed the ICRC check (src/wire). */
void xrxe_tp_rx(struct xrxe_tp *tp, const struct xrxe_pkt *pkt, uint64_t now_ns);

/* Make progress: new WQEs on send queues, responses owed, retransmissions
 * and expired timers. Returns true if it did anything or if tx_reserve
 * refused a buffer (work is pending: the caller keeps spinning, or waits for
 * TX completions and polls again), false if idle. */
bool xrxe_tp_poll(struct xrxe_tp *tp, uint64_t now_ns);

/* Absolute time of the next timer (retransmit, RNR wait, ...), or UINT64_MAX. */
uint64_t xrxe_tp_next_deadline(const struct xrxe_tp *tp);

/* True if some send queue has posted WQEs the core has not started yet (for
 * the daemon's sleep protocol: re-checked after publishing daemon_sleeping). */
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
};

/* Calls fn for every QP; stops early if fn returns non-zero. */
int xrxe_tp_qp_foreach(struct xrxe_tp *tp, int (*fn)(void *arg, const struct xrxe_tp_qp_info *),
		       void *arg);

struct xrxe_tp_stats {
	uint64_t rx_packets, tx_packets;
	uint64_t rx_drop_no_qp, rx_drop_bad_state, rx_drop_bad_pkey, rx_drop_bad_qkey,
		rx_drop_bad_opcode, rx_drop_bad_av;
	uint64_t tx_no_buffer; /* tx_reserve said -ENOBUFS */
	uint32_t qps, cqs, mrs, pds, ahs, mws;
};
void xrxe_tp_get_stats(const struct xrxe_tp *tp, struct xrxe_tp_stats *stats);

#endif /* XRXE_TRANSPORT_H */
