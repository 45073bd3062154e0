/* SPDX-License-Identifier: MIT */
/*
 * Internals of the transport core shared by the files of src/transport/ and
 * nothing else. The split follows rxe's roles (transport.h header comment):
 * qp.c objects and state machine, req.c requester, resp.c responder, comp.c
 * completer, rto.c adaptive retransmission, mr.c memory regions and keys,
 * mw.c memory windows, cq.c completion queues, srq.c shared receive queues,
 * mcast.c multicast groups, gsi.c QP1, cc.c dcqcn.c np.c pacer.c
 * cc_params.c congestion control, timer.c deadlines, tx.c frame building,
 * tp.c the device object, dispatch and polling.
 *
 * Everything a QP needs on the packet path is allocated when the QP is
 * created (private WQE copies, responder resources, the response queue), so
 * the per-packet path neither allocates nor makes a syscall nor reads a clock.
 *
 * Index conventions: queue positions (sq_cons, sq_fetch, req.wqe, rq_cons)
 * are free-running u32 counters; they are masked only to address a slot and
 * when published to the shared ring (abi.h: published indices are masked).
 */
#ifndef XRXE_TP_INTERNAL_H
#define XRXE_TP_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/dcqcn.h"
#include "transport/transport.h"
#include "xrxe/ring.h"

/* QPN 0 and 1 are the special QPs of IBA 10.2.5 (SMI, GSI); rxe hands out
 * ordinary QPNs from 17 on, and so do we. */
#define XRXE_TP_QPN_BASE 17u

/* Requester: at most this many unacknowledged PSNs (rxe RXE_MAX_UNACKED_PSNS,
 * docs/facts/rxe.md §2.1), and an AckReq at least every this many packets
 * (RXE_MAX_PKT_PER_ACK, §2.2). */
#define XRXE_TP_MAX_UNACKED_PSNS 128u
#define XRXE_TP_MAX_PKT_PER_ACK 64u

/* Adaptive retransmission (rto.c): the shortest fast-retry timeout. Covers
 * a responder that reads its frames a few hundred microseconds late on a
 * shared core without firing; at 1 Gbit/s 2 ms is 60 frames of 4 KiB. */
#define XRXE_TP_RTO_MIN_NS (2000ull * 1000)
/* The send window never shrinks below this many PSNs (rto.c). */
#define XRXE_TP_CWND_MIN 16u

/* Largest message (IBA 9.4.x: 2^31 bytes; rxe port max_msg_sz). */
#define XRXE_TP_MAX_MSG (1u << 31)

/* On-demand paging's bounce buffer (odp.c): one packet's payload at the
 * largest IB path MTU. */
#define XRXE_TP_ODP_BUF 4096u

/* Responder response queue: ACKs, NAKs, read and atomic responses owed, in
 * PSN order. Holds one entry per responder resource plus the ACKs between
 * them (consecutive ACKs coalesce into one entry), and READ parts sent again:
 * four entries per resource (512 for XRXE_MAX_RD_ATOMIC), at least
 * XRXE_TP_RSPQ_MIN. */
#define XRXE_TP_RSPQ_MIN 16u
static inline uint32_t xrxe_tpi_rspq_slots(uint32_t nres)
{
	return 4 * nres < XRXE_TP_RSPQ_MIN ? XRXE_TP_RSPQ_MIN : 4 * nres;
}

#define XRXE_TP_NO_DEADLINE UINT64_MAX

/* Selective repeat (sr.c, docs/selective-repeat.md). The responder holds
 * request packets up to XRXE_TP_SR_WIN PSNs past the expected one (the
 * SACK's reach; the requester never has more than XRXE_TP_MAX_UNACKED_PSNS
 * in flight), each frame in a slot of XRXE_TP_SR_SLOT bytes (a 4096-byte
 * payload and every header). The requester's scoreboard covers the
 * XRXE_TP_SR_RING PSNs from the oldest unacknowledged one. The window
 * counts what is in flight, not the span from the oldest hole: READ
 * response PSNs already received past a hole do not count (req.c
 * window_full), so a requester waiting for a repair keeps the responder
 * busy; the span from the oldest unacknowledged PSN to the next request is
 * at most XRXE_TP_SR_SPAN, and a READ may start at its edge and take up to
 * XRXE_TP_SR_READ_MAX PSNs (a larger READ is recovered go-back-N). */
#define XRXE_TP_SR_WIN XRXE_SACK_PSNS
#define XRXE_TP_SR_SLOT 4352u
#define XRXE_TP_SR_SPAN 256u
#define XRXE_TP_SR_RING 512u
#define XRXE_TP_SR_READ_MAX (XRXE_TP_SR_RING - XRXE_TP_SR_SPAN)
#define XRXE_TP_SR_TODO 64u

/* ---------------------------------------------------------------------------
 * Protection domains, memory regions, address handles
 * ------------------------------------------------------------------------- */

struct tp_pd {
	bool used;
	uint32_t refs; /* MRs, QPs and AHs that use it */
};

/* Keys: lkey = rkey = name << 8 | key8, where the 24-bit name is the slot
 * index and the slot's generation through a keyed permutation (mr.c
 * xrxe_tpi_key_make): all 32 bits look random, a lookup recovers the slot,
 * and key8 is a random byte different from the slot's previous one. A stale
 * key misses (IBA 10.6.3.4: keys of freed regions must not grant access)
 * and a key cannot be guessed from another. Index 0 is never used, so key 0
 * never matches. */
struct tp_mr {
	bool used;
	bool valid; /* false once invalidated (SEND_WITH_INV, IBA 10.6.5) */
	uint8_t key8;
	uint32_t gen; /* registrations in this slot: part of the key's name */
	uint32_t key;
	uint32_t pdn;
	uint32_t access;
	uint8_t *host;
	uint64_t iova;
	uint64_t length;
	uint32_t nmw; /* memory windows bound to it (IBA 10.6.7.2.x: dereg/rereg/invalidate refused) */
	/* On-demand paging (odp.c): non-NULL names the application's memory
	 * for ops->odp_rw, and host is then the application's own address,
	 * never dereferenced here. */
	void *odp;
};

/* Memory windows (IBA 10.6.7, mw.c). Their R_Keys share the MR key format,
 * name << 8 | key byte, with slot indices above the MRs' (tp->mw_base + i)
 * inside the name, so a key names either an MR or a window, never both. A window is only ever an
 * R_Key: local accesses (lkeys) never resolve to one. */
struct tp_mw {
	bool used;
	bool bound;      /* bound and not invalidated: remote access possible */
	uint8_t type;    /* IBV_MW_TYPE_1 / IBV_MW_TYPE_2 */
	uint32_t rkey;   /* current R_Key */
	uint32_t gen;    /* allocations in this slot: part of the key's name */
	uint32_t pdn;
	uint32_t mr_idx; /* bound MR (index into tp->mrs), 0 when unbound */
	uint32_t qpn;    /* type 2: the QP it was bound through (only it may use it) */
	uint32_t access; /* IBV_ACCESS_REMOTE_* granted through the window */
	uint64_t addr, length;
};

struct tp_ah {
	bool used;
	uint32_t pdn;
	struct xrxe_av av;
};

/* ---------------------------------------------------------------------------
 * Completion queues
 * ------------------------------------------------------------------------- */

struct xrxe_tp_cq {
	struct xrxe_tp *tp;
	struct xrxe_tp_cq *next, *prev; /* tp->cqs list */
	struct xrxe_ring *ring;
	uint32_t mask;  /* private copy of index_mask */
	uint32_t log2;  /* private copy of log2_elem_size */
	uint32_t prod;  /* private producer, free-running */
	/* the application's consumer as last read: re-read (a line the
	 * application writes on every poll that finds CQEs) only when the ring
	 * looks full by it; it only lags, so it can only say "full" too early */
	uint32_t cons_seen;
	uint32_t refs;  /* QPs using it */
	bool overrun;   /* IBA 11.4.2.1: an overrun CQ stays in error */
	void *user;
};

/* ---------------------------------------------------------------------------
 * Shared receive queues (srq.c)
 * ------------------------------------------------------------------------- */

struct xrxe_tp_srq {
	struct xrxe_tp *tp;
	struct xrxe_tp_srq *next; /* tp->srqs list */
	struct xrxe_ring *ring;
	uint32_t mask, log2;      /* private copies of the ring header */
	uint32_t cons;            /* private consumer, free-running */
	uint32_t max_sge;
	uint32_t pdn;
	uint32_t limit;           /* armed limit (IBA 11.5.2.4), 0: disarmed */
	uint32_t refs;            /* QPs using it */
	void *user;
	/* XRC SRQs only (xrc.c): domain (0: a basic SRQ), number, CQ */
	uint32_t xrcdn, srqn;
	struct xrxe_tp_cq *cq;    /* also a TM SRQ's: its list operations complete there */
	struct xrxe_tm_list *tm;  /* TM SRQs (tm_srq.c): the tagged buffers; NULL else */
};

/* ---------------------------------------------------------------------------
 * Queue pairs
 * ------------------------------------------------------------------------- */

enum tp_wqe_state {
	TP_WQE_FETCHED, /* copied out of the ring, validated, not started */
	TP_WQE_ACTIVE,  /* PSNs assigned: being sent or waiting for its ACK */
	TP_WQE_BAD,     /* failed validation: completes with status when it is the head */
};

/* The private copy of a send WQE plus its transport state (the ring slot may
 * be rewritten by the application at any time; we never read it twice). */
struct tp_swqe {
	struct xrxe_send_wqe wr; /* header copy (sge[]/inline_data live in data) */
	uint8_t *data;           /* sge[] or inline bytes, qp->sq_data_cap bytes */
	uint8_t state;           /* enum tp_wqe_state */
	uint8_t status;          /* TP_WQE_BAD: the completion status */
	bool rd_atomic;          /* READ or atomic: holds an rd_atomic slot while ACTIVE */
	bool is_read, is_atomic;
	bool is_local;           /* BIND_MW / LOCAL_INV: executed here, no packet */
	bool rsp_read0;          /* ATOMIC_WRITE / FLUSH: answered by an empty READ response */
	uint32_t length;         /* message bytes */
	uint32_t npkts;          /* PSNs it occupies (>= 1) */
	uint32_t first_psn, last_psn;
	const struct xrxe_av *av; /* UD: resolved from the AH at fetch time */
	uint32_t dest_qpn, qkey; /* UD */
	/* Tag matching's rendezvous (tm_rndv.c): the QP's own READ or FIN,
	 * in no ring of the application's (enum tp_tm_wqe, 0: the
	 * application's WQE), and the tag it completes */
	uint8_t tm_internal;
	uint64_t tm_tag;
};

enum tp_tm_wqe { TP_TM_WQE_APP, TP_TM_WQE_READ, TP_TM_WQE_FIN };

/* A responder resource (IBA 9.7.5.1.x: "responder resources" for RDMA READ
 * and atomics, max_dest_rd_atomic of them), kept for duplicate replay. */
enum tp_res_type { TP_RES_FREE, TP_RES_READ, TP_RES_ATOMIC };

struct tp_res {
	uint8_t type;
	bool queued;     /* READ: replying (in the response queue) */
	uint32_t first_psn, last_psn;
	uint64_t va;
	uint32_t rkey, len;
	uint32_t msn;    /* MSN after executing it (C9-148) */
	uint64_t orig;   /* ATOMIC: the original value, replayed for duplicates */
	/* READ reply cursor */
	uint32_t cur_psn;
	uint64_t cur_va;
	uint32_t cur_left;
	bool cur_first;
};

/* TP_RSP_READ_PART (selective repeat): READ response packets sent again,
 * only those the requester lacks. */
enum tp_rsp_kind { TP_RSP_ACK, TP_RSP_READ, TP_RSP_ATOMIC, TP_RSP_READ_PART };

struct tp_rspq_ent {
	uint8_t kind;     /* enum tp_rsp_kind */
	uint8_t syndrome; /* TP_RSP_ACK: AETH syndrome (ACK, RNR NAK, NAK) */
	uint16_t res;     /* TP_RSP_READ/ATOMIC/READ_PART: resource index */
	uint32_t psn;     /* TP_RSP_READ_PART: the next PSN to send again */
	uint32_t msn;
	uint32_t end;     /* TP_RSP_READ_PART: one past the last PSN */
	uint32_t res_psn; /* TP_RSP_READ_PART: the resource's first PSN then */
};

enum tp_msg { TP_MSG_NONE, TP_MSG_SEND, TP_MSG_WRITE };

struct tp_req {
	uint32_t psn;      /* next PSN to send */
	uint32_t psn_hi;   /* one past the highest PSN ever sent */
	uint32_t wqe;      /* WQE being sent (free-running index) */
	uint32_t off;      /* bytes of it already sent */
	uint32_t pkts_no_ackreq; /* packets since the last AckReq */
	uint32_t ackreq_psn;     /* PSN of the last AckReq packet sent (rto.c) */
	bool ackreq_sent;        /* ackreq_psn is valid */
	uint32_t rd_atomic_out;  /* ACTIVE READ/atomic WQEs */
	uint16_t ip_id;
	bool drained_sent; /* SQD: IBV_EVENT_SQ_DRAINED raised */
	/* Loss probes owed (rto.c): PSNs already sent, to be sent once more
	 * with AckReq without moving the go-back-N position. */
	uint8_t probes_owed;
	uint32_t probe_psn[2];
	bool force_ackreq; /* the packet being built is a probe */
	/* SQ slots the application's producer was last seen ahead of
	 * sq_ring_fetch: xrxe_tpi_sq_fetch re-reads the producer (a line the
	 * application writes on every post) only when this is 0. Zeroed with
	 * the rest of req on reset, when the ring indices restart. */
	uint32_t sq_avail;
	uint32_t read_cap; /* a READ request sent again asks for this many
			    * response packets only (selective repeat); 0: all */
};

struct tp_comp {
	uint32_t psn;       /* oldest unacknowledged PSN */
	uint8_t retry_cnt;  /* transport retries left (IBA: 7 means 7) */
	uint8_t rnr_retry;  /* RNR retries left (7 = infinite) */
	bool retrying;      /* a response-triggered retry from retry_psn is under way */
	uint32_t retry_psn;
	uint32_t rsp_last;  /* go-back-N: PSN of the last READ response received */
	uint64_t rexmit_deadline; /* local ACK timeout, or XRXE_TP_NO_DEADLINE */
	uint64_t rnr_deadline;    /* RNR wait, or XRXE_TP_NO_DEADLINE */
	/* adaptive retransmission (rto.c) */
	uint64_t fast_deadline;   /* fast retry due, or XRXE_TP_NO_DEADLINE */
	uint8_t fast_backoff;     /* fast retries since the last progress */
	bool rtt_timing;          /* rtt_psn, sent at rtt_sent_ns, is being timed */
	uint32_t rtt_psn;
	uint64_t rtt_sent_ns;
	uint64_t srtt_ns, rttvar_ns; /* 0: no sample yet */
	/* Loss recovery (rto.c): an episode starts when a loss is learnt
	 * (NAK, read response gap, probe answer, timeout) and ends once
	 * everything sent before it is acknowledged (comp.psn passes
	 * recovery_hi). The send window halves once per episode and grows
	 * back by one PSN per window acknowledged. cwnd 0: not yet set
	 * (XRXE_TP_MAX_UNACKED_PSNS). */
	bool recovery;
	uint32_t recovery_hi;
	uint32_t cwnd, cwnd_acc;
	/* A probe round is open until everything sent before it is
	 * acknowledged; if no loss was learnt meanwhile it was needless (a
	 * slow responder) and the probe timer gets more slack (rto.c). */
	bool probe_open;
	uint32_t probe_hi;
	uint64_t probe_recov; /* info.recoveries when it opened */
	uint8_t slack;        /* the probe timer is rto << slack */
	uint32_t slack_acc;   /* PSNs acknowledged since slack last changed */
};

/* The message in progress at a TM SRQ (tm_srq.c): what matching decided at
 * its first packet. verdict is an enum xrxe_tm_verdict (tm.h); PLAIN (0)
 * when there is no tag-matched message in progress. */
struct tp_tm_rx {
	uint8_t verdict;
	bool first;    /* the first packet's TMH (and RVH) is still to be skipped */
	uint32_t priv; /* TMH app_ctx */
	uint64_t tag;
	/* RNDV: the RVH (the sender's buffer) */
	uint64_t rndv_va;
	uint32_t rndv_rkey, rndv_len;
};

struct tp_resp {
	uint32_t psn;   /* expected PSN */
	uint32_t msn;
	bool nak_sent;  /* PSN sequence NAK sent: silent until the expected PSN */
	bool drop_msg;  /* UC: dropping until the next FIRST/ONLY */
	uint8_t msg;    /* enum tp_msg: the multi-packet message in progress */
	bool msg_se;
	/* receive WQE in use (private copy) */
	bool have_rwqe;
	/* RQ WQEs the application's producer was last seen ahead of rq_cons:
	 * get_rwqe re-reads the producer (a line the application writes on
	 * every post_recv) only when this is 0; 0 after xrxe_tpi_resp_reset. */
	uint32_t rq_avail;
	uint64_t rwqe_id;
	uint32_t rwqe_pdn;  /* PD its buffers are checked against */
	uint32_t rwqe_nsge;
	uint32_t rwqe_len;  /* sum of SGE lengths */
	uint32_t rcv_off;   /* bytes placed so far */
	struct xrxe_sge *rsge; /* max_recv_sge entries */
	struct tp_tm_rx tm;    /* tag matching (TM SRQs only) */
	/* WRITE in progress */
	uint32_t w_rkey;
	uint64_t w_va;
	uint32_t w_left, w_len;
	/* responder resources: nres (power of 2, max_dest_rd_atomic rounded
	 * up, at most XRXE_MAX_RD_ATOMIC), and the response queue of qslots
	 * (xrxe_tpi_rspq_slots(nres)) entries: sized by what the QP was
	 * given, not the largest case (qp.c), which keeps an idle QP small */
	struct tp_res *res;
	uint32_t nres, res_next;
	uint32_t res_cap; /* entries allocated (only grows: queued entries name them) */
	struct tp_rspq_ent *q;
	uint32_t qslots;
	uint32_t qhead, qtail; /* free-running */
};

/* Congestion control per QP (cc.c): reaction point, notification point
 * limiter, earliest departure time and the pacer's wheel entry. */
struct tp_cc {
	struct xrxe_dcqcn rp;
	struct xrxe_np np;
	struct xrxe_edt edt;
	struct xrxe_pacer_entry wait; /* filed while the pacer holds the QP */
	bool cnp_owed;                /* the NP decided on a CNP not yet sent */
	uint64_t cnps_sent, ecn_marked;
};

/* Selective repeat state (sr.c), allocated when a QP first uses it. */
struct tp_sr_todo {
	uint32_t psn, n; /* send again n packets from psn (READ: one request for n) */
};

struct tp_sr {
	/* responder: request packets held past a hole, slot psn % SR_WIN */
	uint8_t *frames;                      /* XRXE_TP_SR_WIN slots of SR_SLOT bytes */
	uint32_t hold_psn[XRXE_TP_SR_WIN];
	uint32_t hold_npsn[XRXE_TP_SR_WIN];   /* PSNs the packet takes (READ: its responses) */
	uint16_t hold_len[XRXE_TP_SR_WIN];    /* frame bytes, 0: empty */
	uint32_t nheld;
	/* requester: bitmaps by psn % SR_RING over [comp.psn, comp.psn + SR_RING) */
	uint64_t sacked[XRXE_TP_SR_RING / 64]; /* request PSN the responder holds */
	uint64_t have[XRXE_TP_SR_RING / 64];   /* READ/atomic response received and placed */
	uint64_t resent[XRXE_TP_SR_RING / 64]; /* asked again since the loss was learnt */
	uint64_t repair[XRXE_TP_SR_RING / 64]; /* READ response asked again by range (scan_lost) */
	uint32_t resend_hi[XRXE_TP_SR_RING];   /* req.psn_hi when it was sent again */
	/* READ response PSNs: when the last request for them was sent (or a
	 * repair of them decided), on rd_clock; a response answering a later
	 * request shows a repair lost (sr.c xrxe_tpi_sr_rsp_rx) */
	uint32_t rd_stamp[XRXE_TP_SR_RING];
	uint32_t rd_clock;
	/* Per response packet the scans below cost what is new, not the
	 * window (sr.c): READ response PSNs up to scan_hi were all looked at
	 * (received, or asked again); every repair still missing has an
	 * rd_stamp no older than repair_oldest (a lower bound). */
	bool scan_valid, repair_valid;
	uint32_t scan_hi, repair_oldest;
	bool sack_valid;
	uint32_t sack_top;                     /* highest PSN a SACK named held */
	bool cum_valid;
	uint32_t cum;                          /* highest PSN acknowledged cumulatively */
	struct tp_sr_todo todo[XRXE_TP_SR_TODO];
	uint32_t todo_head, todo_tail;         /* free-running */
};

/* enum xrxe_tp_sr_mode values: what the CM (or nobody) decided for a QP */
enum tp_sr_mode { TP_SR_DEFAULT, TP_SR_OFF, TP_SR_ON };

struct xrxe_tp_qp {
	struct xrxe_tp *tp;
	struct xrxe_tp_qp *next, *prev; /* tp->qps list */
	uint32_t qpn;
	enum ibv_qp_type type;
	enum ibv_qp_state state;
	uint32_t pdn;
	struct xrxe_tp_cq *send_cq, *recv_cq;
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	void *user;

	struct ibv_qp_attr attr; /* as last modified (query) */
	struct xrxe_av av;       /* RC/UC: the peer (IBV_QP_AV) */
	bool av_set;
	uint32_t mtu;            /* path MTU in bytes */
	uint16_t sport;          /* UDP source port (rxe: 0xC000 + hash of QPN) */

	/* send queue */
	struct xrxe_ring *sq;
	uint32_t sq_mask, sq_log2;
	uint32_t sq_data_cap;    /* bytes of sge[]/inline kept per WQE */
	struct tp_swqe *swqe;    /* swqe_mask + 1 entries */
	uint8_t *swqe_data;
	uint32_t swqe_mask;
	uint32_t sq_cons;        /* oldest WQE not retired */
	uint32_t sq_fetch;       /* one past the newest WQE fetched */
	/* The ring's own positions: sq_cons/sq_fetch count the private WQEs,
	 * which include a TM QP's internal ones (tm_rndv.c, not in the ring;
	 * swqe then has room for XRXE_TM_RNDV_MAX more); equal otherwise. */
	uint32_t sq_ring_cons;   /* published consumer */
	uint32_t sq_ring_fetch;  /* next slot to copy out */
	uint8_t tm_rndv_out;     /* rendezvous in progress (tm_rndv.c) */

	/* receive queue: rq, or srq (then rq is NULL) */
	struct xrxe_ring *rq;
	uint32_t rq_mask, rq_log2;
	uint32_t rq_cons;
	struct xrxe_tp_srq *srq;
	uint32_t max_rsge;       /* entries of resp.rsge */

	struct tp_req req;
	struct tp_comp comp;
	struct tp_resp resp;
	struct xrxe_tp_qp_info info; /* counters (qpn/state/psns filled on query) */
	struct tp_cc cc;
	/* selective repeat: sr_mode as set (CM) or left (the device default
	 * decides at RTR); sr whether this connection uses it */
	uint8_t sr_mode;
	bool sr;
	struct tp_sr *srs;
	/* XRC (xrc.c): an XRC QP runs RC's transport (type is IBV_QPT_RC)
	 * with the role here. A target has no send queue of the
	 * application's (xrc_sq: an empty private ring, so the requester
	 * finds nothing to do) and borrows srq, recv_cq and pdn from the XRC
	 * SRQ the current message names (srq NULL, pdn 0: none yet). */
	struct tp_rss *rss; /* raw packet QPs with RSS (raw.c) */
	uint8_t xrc; /* enum tp_xrc_role */
	uint32_t xrcdn;
	struct xrxe_ring *xrc_sq;

	/* Scheduling (sched.c): the QP is on tp's run queue while it has work
	 * (doorbell, received packet, expired timer, pacer release), and in
	 * tp's timer heap while one of its deadlines is armed. */
	struct xrxe_tp_qp *run_next, *run_prev;
	bool on_runq;
	uint32_t theap_pos; /* 1-based slot in tp->theap, 0: not in it */
	uint64_t theap_key; /* the deadline it is filed under */
	struct xrxe_tp_qp *refile_next; /* tp.c: sent, then held by the pacer */
	uint32_t mw2_bound; /* type 2 windows bound through it (mw.c) */
};

enum tp_xrc_role { TP_XRC_NONE, TP_XRC_INI, TP_XRC_TGT };

/* ---------------------------------------------------------------------------
 * Multicast groups (mcast.c)
 * ------------------------------------------------------------------------- */

struct tp_mcast_grp {
	bool used;
	union ibv_gid gid;
	uint32_t nqps;
	struct xrxe_tp_qp *qps[XRXE_TP_MAX_MCAST_QP_ATTACH];
};

/* ---------------------------------------------------------------------------
 * The device
 * ------------------------------------------------------------------------- */

/* A raw packet QP's flow (raw.c): qp NULL when the slot is free; gen
 * tells a flow id from the one that had the slot before. */
struct tp_raw_flow {
	struct xrxe_tp_qp *qp;
	struct xrxe_steer_flow rule;
	uint32_t gen;
};

struct xrxe_tp {
	struct xrxe_tp_config cfg;
	uint64_t now; /* time of the call being served */
	bool tx_blocked; /* tx_reserve said -ENOBUFS during this call */
	uint32_t gsi_psn; /* QP1's next PSN (gsi.c) */
	uint32_t max_mtu_enum;

	struct xrxe_tp_qp **qpt; /* by QPN - XRXE_TP_QPN_BASE */
	uint32_t qp_next;        /* allocation cursor (QPNs rotate) */
	struct xrxe_tp_qp *qps;  /* all QPs */
	/* sched.c: the run queue (FIFO: a QP that still has work after its
	 * turn goes to the back) and the timer heap (min-heap by deadline,
	 * 1-based, max_qp + 1 slots). Neither holds an idle QP. */
	struct xrxe_tp_qp *run_head, *run_tail;
	uint32_t run_len;
	struct xrxe_tp_qp **theap;
	uint32_t theap_n;

	struct tp_mr *mrs; /* index 1..max_mr */
	uint32_t mr_next;
	uint64_t key_rng; /* key randomness (mr.c xrxe_tpi_key_random), from cfg.key_seed */
	unsigned key_ib; /* index bits of a key name (mr.c), fixed by max_mr */
	/* Recent key -> index answers (mr.c xrxe_tpi_key_index): the
	 * permutation costs four rounds of a hash on every packet's key;
	 * idx1 is the index + 1, 0 an empty entry. */
	struct {
		uint32_t key, idx1;
	} key_memo[64];
	struct tp_mw *mws; /* key index mw_base + i, i < nmws */
	uint32_t mw_base, nmws;
	uint32_t mws_hw; /* one past the highest slot ever allocated: scans stop there */
	struct tp_pd *pds;
	uint32_t npds;
	struct tp_ah *ahs;
	uint32_t nahs;
	struct xrxe_tp_cq *cqs;
	struct xrxe_tp_srq *srqs;
	struct tp_xrc *xrc; /* XRC domains and SRQ numbers (xrc.c), from the first domain */
	struct tp_mcast_grp mcast[XRXE_TP_MAX_MCAST_GRP];
	struct tp_raw_flow raw_flows[XRXE_STEER_MAX_FLOWS]; /* raw packet QP flows (raw.c) */
	uint32_t raw_flow_count; /* one past the highest slot in use */

	struct xrxe_tp_stats stats;

	/* congestion control (cc.c) */
	struct xrxe_tp_cc_params cc;
	uint64_t cc_max_bps; /* what rate limiters recover to */
	struct xrxe_pacer pacer;
	struct xrxe_edt port_edt; /* line_rate_pacing: the port's departure time */

	/* on-demand paging (odp.c): bounce buffer for the pieces of ODP
	 * regions, and one packet's payload gathered before its frame */
	uint8_t odp_buf[XRXE_TP_ODP_BUF];
};

/* ---------------------------------------------------------------------------
 * Cross-file helpers (xrxe_tpi_: transport-internal)
 * ------------------------------------------------------------------------- */

/* raw.c: raw packet QPs. A send WQE's length within the frame bounds;
 * send one frame (0, -ENOBUFS: try again later, or -EFAULT: the WQE is
 * BAD now); the QP's flows removed (destroy). */
bool xrxe_tpi_raw_len_ok(const struct xrxe_tp *tp, uint32_t len);
int xrxe_tpi_raw_send(struct xrxe_tp_qp *qp, struct tp_swqe *w);
void xrxe_tpi_raw_qp_gone(struct xrxe_tp_qp *qp);
/* resp.c: the receive WQE a raw frame goes into (0; -EAGAIN none posted;
 * -EINVAL malformed, completed in error here), and its completion. */
int xrxe_tpi_resp_take_rwqe(struct xrxe_tp_qp *qp);
void xrxe_tpi_resp_complete_rwqe(struct xrxe_tp_qp *qp, struct ibv_wc *wc);

/* names for logs */
const char *xrxe_tpi_state_name(enum ibv_qp_state s);

/* pd / mr / ah (mr.c) */
/* gsi.c: a packet for QP1 */
void xrxe_tpi_gsi_rx(struct xrxe_tp *tp, const struct xrxe_pkt *pkt);
int xrxe_tpi_pd_get(struct xrxe_tp *tp, uint32_t pdn);
void xrxe_tpi_pd_put(struct xrxe_tp *tp, uint32_t pdn);
/* The MR for key, if it is registered, valid, in pdn, grants access and
 * covers [va, va + len). Returns the MR or NULL. */
struct tp_mr *xrxe_tpi_mr_check(struct xrxe_tp *tp, uint32_t key, uint32_t pdn, uint64_t va,
				uint64_t len, uint32_t access);
static inline uint8_t *xrxe_tpi_mr_host(const struct tp_mr *mr, uint64_t va)
{
	return mr->host + (va - mr->iova);
}
/* Invalidate the MR named by rkey (IBA 10.6.5, SEND with Invalidate). */
int xrxe_tpi_mr_invalidate(struct xrxe_tp *tp, uint32_t rkey, uint32_t pdn);
/* The next pseudo-random number for key indices and key bytes. */
uint32_t xrxe_tpi_key_random(struct xrxe_tp *tp);
/* A random key byte other than old. */
uint8_t xrxe_tpi_key_byte_next(struct xrxe_tp *tp, uint8_t old);
/* The 24-bit name of slot idx (an MR index, or mw_base + a window's) in its
 * generation gen; the slot index a name stands for (0: none). */
uint32_t xrxe_tpi_key_make(const struct xrxe_tp *tp, uint32_t idx, uint32_t gen);
uint32_t xrxe_tpi_key_index(struct xrxe_tp *tp, uint32_t key);
unsigned xrxe_tpi_key_index_bits(const struct xrxe_tp *tp);
struct tp_mr *xrxe_tpi_mr_by_key(struct xrxe_tp *tp, uint32_t key);
/* xrxe_tp_mr_reg with odp: NULL, or an ODP region's memory (odp.c). */
int xrxe_tpi_mr_reg(struct xrxe_tp *tp, uint32_t pdn, void *host, uint64_t iova, uint64_t length,
		    uint32_t access, void *odp, uint32_t *lkey, uint32_t *rkey);

/* mw.c: memory windows.
 * The region a remote request may touch through rkey, an MR's or a window's
 * (IBA 10.6.7.3: a window's R_Key, bounds and rights are checked, then the
 * MR's validity). whole: FLUSH with MR selectivity, no range check. access:
 * IBV_ACCESS_REMOTE_* and XRXE_ACCESS_FLUSH_* bits. NULL: no access. */
struct tp_mr *xrxe_tpi_rkey_check(struct xrxe_tp_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
				  uint32_t access, bool whole);
/* Invalidate an MR or a type 2 window (SEND_WITH_INV at the responder,
 * LOCAL_INV at the requester): 0 or -EINVAL. */
int xrxe_tpi_invalidate(struct xrxe_tp_qp *qp, uint32_t rkey);
/* Execute a BIND_MW WQE (IBA 10.6.7.2): 0 or -EINVAL (IBV_WC_MW_BIND_ERR). */
int xrxe_tpi_mw_bind(struct xrxe_tp_qp *qp, const struct xrxe_send_wqe *wr);
/* A QP goes away: type 2 windows bound through it lose their binding. */
void xrxe_tpi_mw_qp_gone(struct xrxe_tp_qp *qp);
const struct tp_ah *xrxe_tpi_ah_get(const struct xrxe_tp *tp, uint32_t handle, uint32_t pdn);

/* Walk [off, off + len) of an SGE list: fn gets each contiguous host piece.
 * Every piece is checked (key, PD, bounds, access) when it is touched.
 * Returns 0, -EFAULT (protection) or -EMSGSIZE (beyond the SGEs). fn NULL
 * only checks. */
typedef void (*xrxe_tpi_piece_fn)(void *arg, uint8_t *host, uint32_t n);
int xrxe_tpi_sge_walk(struct xrxe_tp *tp, uint32_t pdn, const struct xrxe_sge *sge, uint32_t nsge,
		      uint32_t off, uint32_t len, uint32_t access, xrxe_tpi_piece_fn fn, void *arg);

/* odp.c: on-demand paging. An ODP region's bytes are reached through
 * ops->odp_rw, never through a pointer; a fault is -EFAULT.
 * xrxe_tpi_odp_piece: sge_walk's piece of an ODP region, through the bounce
 * buffer: access with IBV_ACCESS_LOCAL_WRITE writes into the region (fn fills
 * the bounce first), without it reads (fn consumes it). */
int xrxe_tpi_odp_piece(struct xrxe_tp *tp, const struct tp_mr *mr, uint64_t va, uint32_t n,
		       uint32_t access, xrxe_tpi_piece_fn fn, void *arg);
/* One packet's payload [off, off + len) of an SGE list, checked as
 * xrxe_tpi_sge_walk(.., 0, NULL, NULL) does; when a piece lies in an ODP
 * region the whole payload is read now into tp->odp_buf and *staged points
 * there (the frame is then filled from it: a fault must be known before a
 * frame is reserved), else *staged is NULL. 0, -EFAULT or -EMSGSIZE. */
int xrxe_tpi_gather_stage(struct xrxe_tp *tp, uint32_t pdn, const struct xrxe_sge *sge,
			  uint32_t nsge, uint32_t off, uint32_t len, const uint8_t **staged);
/* n bytes of mr at va to send (READ responses): a pointer into the region,
 * or for an ODP region a copy in tp->odp_buf; NULL on a fault. */
const uint8_t *xrxe_tpi_mr_src(struct xrxe_tp *tp, const struct tp_mr *mr, uint64_t va,
			       uint32_t n);
/* Place n bytes of pkt's payload (from its start) into mr at va: 0 or
 * -EFAULT (an ODP region's page is not there). */
int xrxe_tpi_mr_place_pkt(struct xrxe_tp *tp, const struct tp_mr *mr, uint64_t va,
			  const struct xrxe_pkt *pkt, uint32_t n);
/* An atomic (IBA 9.4.5) or ATOMIC_WRITE on an ODP region: read, compute,
 * write back, all in this one thread, so atomic against every other atomic
 * the daemon executes (not against the application's CPU: odp.c). cas:
 * compare and swap, else fetch and add; store: ATOMIC_WRITE of swap_add.
 * 0 or -EFAULT; *orig the value before. */
int xrxe_tpi_odp_atomic(struct xrxe_tp *tp, const struct tp_mr *mr, uint64_t va, bool cas,
			bool store, uint64_t comp, uint64_t swap_add, uint64_t *orig);

/* Piece writers for xrxe_tpi_sge_walk that place data into host memory: from
 * a received packet's payload (advancing off), or from a plain buffer
 * (advancing src). */
struct xrxe_tpi_pkt_src {
	const struct xrxe_pkt *pkt;
	uint32_t off;
};
void xrxe_tpi_piece_from_pkt(void *arg, uint8_t *host, uint32_t n);
struct xrxe_tpi_buf_src {
	const uint8_t *src;
};
void xrxe_tpi_piece_from_buf(void *arg, uint8_t *host, uint32_t n);

/* cq.c: write one CQE; -EOVERFLOW when the CQ is (or was) full. */
int xrxe_tpi_cq_post(struct xrxe_tp_cq *cq, const struct ibv_wc *wc, bool solicited);
/* As xrxe_tpi_cq_post, with a tag matching completion's tag (xrxe_cqe.tm_tag) */
int xrxe_tpi_cq_post_tm(struct xrxe_tp_cq *cq, const struct ibv_wc *wc, bool solicited,
			uint64_t tag);
/* cq.c: remove the unpolled CQEs of QP qpn (modify to RESET), keeping the
 * others in order. */
void xrxe_tpi_cq_purge_qp(struct xrxe_tp_cq *cq, uint32_t qpn);

/* qp.c */
struct xrxe_tp_qp *xrxe_tpi_qp_lookup(struct xrxe_tp *tp, uint32_t qpn);
/* Move to ERR (IBA 10.3.1: any state -> Error) and flush both queues. */
void xrxe_tpi_qp_error(struct xrxe_tp_qp *qp);
/* A completion for qp did not fit its CQ (the CQ raised IBV_EVENT_CQ_ERR):
 * the QP goes to ERR with IBV_EVENT_QP_FATAL (IBA 11.4.2.1 / 11.6.3.1: a CQ
 * overrun is a catastrophic error for the work queues using it). */
void xrxe_tpi_qp_cq_overrun(struct xrxe_tp_qp *qp);
/* UC/UD send-side error: SQE (IBA 10.3.1), flush the send queue. */
void xrxe_tpi_qp_sq_error(struct xrxe_tp_qp *qp);
/* ERR/SQE: flush newly posted WQEs. Returns true if it flushed anything. */
bool xrxe_tpi_qp_flush(struct xrxe_tp_qp *qp);
/* Complete every send WQE not yet retired with IBV_WC_WR_FLUSH_ERR (comp.c). */
bool xrxe_tpi_comp_flush(struct xrxe_tp_qp *qp);
/* Same for the receive queue (resp.c). */
bool xrxe_tpi_resp_flush(struct xrxe_tp_qp *qp);
void xrxe_tpi_qp_async(struct xrxe_tp_qp *qp, enum ibv_event_type ev);

/* xrc.c (docs/xrc.md) */
/* create: an XRC_SEND / XRC_RECV init is well formed (-EINVAL) */
int xrxe_tpi_xrc_qp_check(struct xrxe_tp *tp, const struct xrxe_tp_qp_init *init);
/* create: a target's private empty send ring (*slots set), NULL: no memory */
struct xrxe_ring *xrxe_tpi_xrc_tgt_sq(uint32_t *slots);
/* create: role and domain (takes a domain reference); destroy: releases
 * the SRQ in use, the domain and the private ring */
void xrxe_tpi_xrc_qp_init(struct xrxe_tp_qp *qp, const struct xrxe_tp_qp_init *init,
			  struct xrxe_ring *tgt_sq);
void xrxe_tpi_xrc_qp_fini(struct xrxe_tp_qp *qp);
/* the opcode class of the QP's packets (XRXE_TRANSPORT_*) and the
 * ibv_qp_type the application sees */
uint8_t xrxe_tpi_qp_class(const struct xrxe_tp_qp *qp);
enum ibv_qp_type xrxe_tpi_qp_type(const struct xrxe_tp_qp *qp);
/* an initiator takes responses only, a target requests only */
bool xrxe_tpi_xrc_rx_ok(const struct xrxe_tp_qp *qp, uint32_t op_flags);
/* a work request an initiator can send (XRC has no FLUSH / ATOMIC WRITE opcodes) */
bool xrxe_tpi_xrc_wr_ok(const struct xrxe_tp_qp *qp, uint32_t wr_opcode);
/* a target's request at the expected PSN: use the SRQ its XRCETH names.
 * 0; -EINVAL (no such XRC SRQ in the target's domain, or another SRQ in the
 * middle of a message: NAK Invalid Request); -EAGAIN (the SRQ changes PD
 * while READ responses are still going out: drop, the requester resends) */
int xrxe_tpi_xrc_bind(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt);
/* modify: the attributes XRC does not require of this role (kernel
 * qp_state_table's XRC_INI / XRC_TGT columns) */
uint32_t xrxe_tpi_xrc_not_required(const struct xrxe_tp_qp *qp, enum ibv_qp_state cur,
				   enum ibv_qp_state next);
/* srq destroy: target QPs let go of an XRC SRQ, then its number, CQ and
 * domain are released */
void xrxe_tpi_xrc_srq_detach(struct xrxe_tp_srq *srq);
void xrxe_tpi_xrc_srq_release(struct xrxe_tp_srq *srq);
void xrxe_tpi_xrc_fini(struct xrxe_tp *tp);

/* tx.c: one frame */
struct tp_tx {
	struct xrxe_tp_txbuf buf;
	uint32_t hdr_len, frame_len, pos; /* pos: payload bytes written so far */
};
void xrxe_tpi_spec_init(const struct xrxe_tp_qp *qp, const struct xrxe_av *av,
			struct xrxe_pkt_spec *spec);
/* Reserve and write the headers: 0, -ENOBUFS (try again later) or -EINVAL. */
int xrxe_tpi_tx_begin(struct xrxe_tp *tp, const struct xrxe_pkt_spec *spec, struct tp_tx *tx);
void xrxe_tpi_tx_put(struct tp_tx *tx, const void *src, uint32_t n);
void xrxe_tpi_tx_piece(void *arg, uint8_t *host, uint32_t n); /* xrxe_tpi_piece_fn for tx */
/* ICRC, trim the fragments to the frame and submit. */
void xrxe_tpi_tx_finish(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, struct tp_tx *tx);
/* There is no way to give a reservation back: callers check everything
 * before xrxe_tpi_tx_begin and always finish what they reserved. */

/* req.c */
bool xrxe_tpi_req_run(struct xrxe_tp_qp *qp, unsigned budget);
/* Rewind (or move forward) the requester to psn (go-back-N, IBA 9.7.5.2). */
void xrxe_tpi_req_rewind(struct xrxe_tp_qp *qp, uint32_t psn);
bool xrxe_tpi_sq_has_new(const struct xrxe_tp_qp *qp);
/* Copy WQE at the fetch position out of the ring (false when empty). */
bool xrxe_tpi_sq_fetch(struct xrxe_tp_qp *qp);

/* comp.c */
void xrxe_tpi_comp_rx(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt);
/* Retire the head WQE with status (CQE if signalled or an error). */
void xrxe_tpi_comp_retire(struct xrxe_tp_qp *qp, enum ibv_wc_status status);
/* Complete a BAD head WQE, if any (called when the requester meets one). */
bool xrxe_tpi_comp_run(struct xrxe_tp_qp *qp);
bool xrxe_tpi_comp_timers(struct xrxe_tp_qp *qp);
void xrxe_tpi_comp_reset_counters(struct xrxe_tp_qp *qp);
static inline bool xrxe_tpi_outstanding(const struct xrxe_tp_qp *qp)
{
	return xrxe_psn_cmp(qp->comp.psn, qp->req.psn_hi) < 0;
}
static inline struct tp_swqe *xrxe_tpi_swqe(const struct xrxe_tp_qp *qp, uint32_t idx)
{
	return &qp->swqe[idx & qp->swqe_mask];
}

/* resp.c */
void xrxe_tpi_resp_rx(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt);
bool xrxe_tpi_resp_drain(struct xrxe_tp_qp *qp, unsigned budget);
void xrxe_tpi_resp_reset(struct xrxe_tp_qp *qp);

/* timer.c */
uint64_t xrxe_tpi_ack_timeout_ns(uint8_t timeout);
uint64_t xrxe_tpi_rnr_timeout_ns(uint8_t code);
void xrxe_tpi_timer_arm_rexmit(struct xrxe_tp_qp *qp);
void xrxe_tpi_timer_stop_rexmit(struct xrxe_tp_qp *qp);
uint64_t xrxe_tpi_qp_deadline(const struct xrxe_tp_qp *qp);

/* sched.c: the run queue and the timer heap. kick: the QP has work (idempotent);
 * rearm: file the QP under its earliest deadline (or take it out of the heap)
 * after anything that may have moved one; forget: destroy; expire: QPs whose
 * deadline or pacer release has come go to the run queue; pop: the next QP
 * to poll (taken off the queue). */
void xrxe_tpi_sched_kick(struct xrxe_tp_qp *qp);
void xrxe_tpi_sched_rearm(struct xrxe_tp_qp *qp);
void xrxe_tpi_sched_forget(struct xrxe_tp_qp *qp);
void xrxe_tpi_sched_expire(struct xrxe_tp *tp, uint64_t now);
struct xrxe_tp_qp *xrxe_tpi_sched_pop(struct xrxe_tp *tp);
uint64_t xrxe_tpi_sched_next(const struct xrxe_tp *tp);
/* The earliest armed deadline of the QP (timer.c, cc.c), by state. */
uint64_t xrxe_tpi_qp_next_deadline(const struct xrxe_tp_qp *qp);

/* rto.c: loss probes and the send window. rto_sent after every RC packet
 * sent (npsn: PSNs it takes; resent: sent before); rto_progress when comp.psn
 * moved (by acked PSNs); rto_rewound on every rewind; rto_expired once
 * comp.fast_deadline is due (true: probe now); rto_loss when a loss is
 * learnt (starts a recovery episode); rto_cwnd: the send window in PSNs. */
void xrxe_tpi_rto_sent(struct xrxe_tp_qp *qp, uint32_t psn, uint32_t npsn, bool ackreq,
		       bool resent);
void xrxe_tpi_rto_progress(struct xrxe_tp_qp *qp, uint32_t acked);
void xrxe_tpi_rto_rewound(struct xrxe_tp_qp *qp);
bool xrxe_tpi_rto_expired(struct xrxe_tp_qp *qp);
void xrxe_tpi_rto_loss(struct xrxe_tp_qp *qp);
uint32_t xrxe_tpi_rto_cwnd(const struct xrxe_tp_qp *qp);
/* rto.c: the Local ACK Timeout ran out with requests outstanding */
void xrxe_tpi_rto_timeout(struct xrxe_tp_qp *qp);
/* rto.c: a SACK arrived (selective repeat): it may time the round trip */
void xrxe_tpi_rto_held(struct xrxe_tp_qp *qp);
/* req.c: queue loss probes (rto.c): the oldest unacknowledged PSN and the
 * newest sent, each once more with AckReq. */
void xrxe_tpi_req_probe(struct xrxe_tp_qp *qp);

/* sr.c: selective repeat (docs/selective-repeat.md) */
int xrxe_tpi_sr_enable(struct xrxe_tp_qp *qp); /* at RTR: qp->sr and its state */
void xrxe_tpi_sr_reset(struct xrxe_tp_qp *qp);
void xrxe_tpi_sr_free(struct xrxe_tp_qp *qp);
/* responder: hold a request packet psn past the expected one: 1 held (and
 * *sack when the requester should hear of it now), 0 held already (a
 * duplicate, counted), -ENOSPC/-EINVAL not held (past the hold window, too
 * large: dropped as go-back-N would). */
int xrxe_tpi_sr_hold(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, uint32_t psn, bool *sack);
/* responder: the held packet at psn, parsed into out (its slot freed, the
 * bytes valid until the next hold); false if none. */
bool xrxe_tpi_sr_take(struct xrxe_tp_qp *qp, uint32_t psn, struct xrxe_pkt *out);
/* responder: forget every held packet before resp.psn (executed) */
void xrxe_tpi_sr_prune(struct xrxe_tp_qp *qp);
/* responder: the request at psn was executed (resp.psn moved past it) */
void xrxe_tpi_sr_passed(struct xrxe_tp_qp *qp, uint32_t psn);
void xrxe_tpi_sr_drop_held(struct xrxe_tp_qp *qp);
/* responder: the SACK bitmap after cum */
void xrxe_tpi_sr_bitmap(const struct xrxe_tp_qp *qp, uint32_t cum, uint8_t out[XRXE_SACK_LEN]);
/* requester scoreboard */
bool xrxe_tpi_sr_bit(const uint64_t *bits, const struct xrxe_tp_qp *qp, uint32_t psn);
uint32_t xrxe_tpi_sr_received(const struct xrxe_tp_qp *qp);
void xrxe_tpi_sr_set(uint64_t *bits, const struct xrxe_tp_qp *qp, uint32_t psn);
void xrxe_tpi_sr_advanced(struct xrxe_tp_qp *qp, uint32_t old); /* comp.psn moved from old */
void xrxe_tpi_sr_sack_rx(struct xrxe_tp_qp *qp, uint32_t cum, const uint8_t *bitmap);
/* requester: READ/atomic responses at or before upto that did not come are lost */
void xrxe_tpi_sr_scan_lost(struct xrxe_tp_qp *qp, uint32_t upto);
/* a READ/atomic request for npsn response PSNs from psn left (req.c) */
void xrxe_tpi_sr_rd_sent(struct xrxe_tp_qp *qp, uint32_t psn, uint32_t npsn);
/* a READ/atomic response at psn was received and placed (comp.c) */
void xrxe_tpi_sr_rsp_rx(struct xrxe_tp_qp *qp, uint32_t psn);
bool xrxe_tpi_sr_todo_push(struct xrxe_tp_qp *qp, uint32_t psn, uint32_t n);
static inline bool xrxe_tpi_sr_read_tracked(const struct tp_swqe *w)
{
	return w->npkts <= XRXE_TP_SR_READ_MAX;
}

/* srq.c: the WQE at the SRQ's consumer was copied out; advance the
 * consumer and raise the limit event if it is armed and the count fell
 * below it (IBA 11.5.2.4). */
void xrxe_tpi_srq_taken(struct xrxe_tp_srq *srq);

/* tm_srq.c: tag matching at a TM SRQ (docs/architecture.md "Tag matching").
 * resp.c calls these around a SEND's receive WQE: tm_recv at the first
 * packet (a match takes a tagged buffer as the receive WQE), tm_unwind
 * when no WQE could be taken after all (RNR: the message comes again and is
 * matched again), tm_skip per packet (payload bytes not placed: the TMH),
 * tm_cq_post to complete (TM opcode, flags and tag when matching decided). */
bool xrxe_tpi_tm_recv(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt);
void xrxe_tpi_tm_unwind(struct xrxe_tp_qp *qp);
uint32_t xrxe_tpi_tm_skip(struct xrxe_tp_qp *qp, uint32_t pl);
int xrxe_tpi_tm_cq_post(struct xrxe_tp_qp *qp, struct ibv_wc *wc, bool solicited);
void xrxe_tpi_tm_srq_free(struct xrxe_tp_srq *srq);

/* tm_rndv.c: rendezvous (docs/architecture.md "Tag matching"). A matched
 * RNDV makes the QP queue its own READ of the sender's buffer into the
 * tagged buffer, then a FIN: internal WQEs behind the application's, in
 * the same PSN order. rndv_wqes: the internal WQEs a QP with this SRQ may
 * hold; rndv_room: false while XRXE_TM_RNDV_MAX are in progress (the RNDV
 * is answered RNR); rndv_start at the RNDV's completion: IBV_WC_SUCCESS
 * when the READ is queued, else the tagged buffer's error status;
 * rndv_retired from comp.c's retire of an internal WQE: the tagged
 * buffer's DATA_VALID or error completion, the FIN queued (a CQ error
 * when the CQ overran). */
#define XRXE_TP_TM_WQE_DATA 16u /* a FIN's TMH, a READ's SGE */
uint32_t xrxe_tpi_tm_rndv_wqes(const struct xrxe_tp_srq *srq);
bool xrxe_tpi_tm_rndv_room(const struct xrxe_tp_qp *qp);
enum ibv_wc_status xrxe_tpi_tm_rndv_start(struct xrxe_tp_qp *qp);
int xrxe_tpi_tm_rndv_retired(struct xrxe_tp_qp *qp, const struct tp_swqe *w,
			     enum ibv_wc_status status);

/* mcast.c: a UD request to QPN 0xFFFFFF; delivers a copy to every QP
 * attached to the destination group. */
void xrxe_tpi_mcast_rx(struct xrxe_tp *tp, const struct xrxe_pkt *pkt);
/* tp.c: the per-QP receive checks (type, P_Key, state, Q_Key or peer) and
 * dispatch to the responder or completer; qp NULL counts a drop. */
void xrxe_tpi_qp_rx(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt);

/* cc.c: congestion control hooks (DCQCN, docs/facts/dcqcn.md). Every one is a
 * no-op costing a test or two for a QP that never got a CNP. */
void xrxe_tpi_cc_init(struct xrxe_tp *tp);
void xrxe_tpi_cc_qp_reset(struct xrxe_tp_qp *qp); /* create, and to RESET */
void xrxe_tpi_cc_qp_fini(struct xrxe_tp_qp *qp);  /* destroy */
/* IP traffic class of the QP's packets (data marking, ECN-capable). */
uint8_t xrxe_tpi_cc_tclass(const struct xrxe_tp *tp, uint8_t av_tclass);
/* A packet for the QP arrived (counted CE mark -> CNP owed, rate-limited). */
void xrxe_tpi_cc_rx(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt);
/* A CNP for the QP; from_peer: it came from the QP's connected peer (RC/UC). */
void xrxe_tpi_cc_cnp_rx(struct xrxe_tp_qp *qp, const struct xrxe_pkt *pkt, bool from_peer);
/* Owed CNP, rate timers. True if it did something. */
bool xrxe_tpi_cc_poll(struct xrxe_tp_qp *qp);
/* Pacer gate before a data packet: false = wait (the QP is on the wheel). */
bool xrxe_tpi_cc_may_send(struct xrxe_tp_qp *qp);
/* A frame of bytes left for the QP (pacer and byte counter). */
void xrxe_tpi_cc_sent(struct xrxe_tp_qp *qp, uint32_t bytes);
uint64_t xrxe_tpi_cc_deadline(const struct xrxe_tp_qp *qp);
void xrxe_tpi_cc_info(const struct xrxe_tp_qp *qp, struct xrxe_tp_qp_info *info);

/* ibv_wr_opcode -> ibv_wc_opcode (docs/facts/rxe.md §2.10 wr_to_wc_opcode) */
enum ibv_wc_opcode xrxe_tpi_wc_opcode(uint32_t wr_opcode);

static inline uint32_t xrxe_tpi_mtu_bytes(uint32_t mtu_enum)
{
	return 128u << mtu_enum; /* IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5 */
}

#endif /* XRXE_TP_INTERNAL_H */
