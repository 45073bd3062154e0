// SPDX-License-Identifier: MIT
/*
 * Queue pairs: creation, the state machine (IBA 10.3.1, figure 124 and the
 * Modify QP attribute table 91 / docs/facts/rxe.md §2.11), query, destroy, and the
 * transitions the transport itself makes (to ERR and SQE).
 *
 * A modify is validated completely before anything is applied, so an invalid
 * one fails with -EINVAL and changes nothing (IBA 11.2.4.2: "If any of the
 * modifiers are invalid, none of the modifications shall be performed").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tp_internal.h"
#include "util/log.h"

static const char *const qp_state_names[] = {
	[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
	[IBV_QPS_RTS] = "RTS",     [IBV_QPS_SQD] = "SQD",   [IBV_QPS_SQE] = "SQE",
	[IBV_QPS_ERR] = "ERR",
};

const char *xrxe_tpi_state_name(enum ibv_qp_state s)
{
	if ((unsigned)s > IBV_QPS_ERR)
		return "UNKNOWN";
	return qp_state_names[s];
}

/* --- the transition table (IBA 10.3.1 table 91; the kernel's qp_state_table
 * in drivers/infiniband/core/verbs.c has the same RC/UC/UD rows) ---------- */

enum { T_RC, T_UC, T_UD, T_RAW, T_N };

struct qp_trans {
	bool valid;
	uint32_t req[T_N];
	uint32_t opt[T_N];
};

#define A(x) IBV_QP_##x
#define ALL3(m) { [T_RC] = (m), [T_UC] = (m), [T_UD] = (m) }

static const struct qp_trans qp_trans[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.req = {
				[T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
				/* the kernel's qp_state_table: a raw packet
				 * QP has a port and nothing else */
				[T_RAW] = A(PORT),
			},
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.opt = {
				[T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
				[T_RAW] = A(PORT),
			},
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.req = {
				[T_RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
					 A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
				[T_UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
				[T_UD] = 0,
			},
			.opt = {
				[T_RC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[T_UC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[T_UD] = A(PKEY_INDEX) | A(QKEY),
			},
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.req = {
				[T_RC] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(SQ_PSN) |
					 A(MAX_QP_RD_ATOMIC),
				[T_UC] = A(SQ_PSN),
				[T_UD] = A(SQ_PSN),
			},
			.opt = {
				[T_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
				[T_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(PATH_MIG_STATE),
				[T_UD] = A(CUR_STATE) | A(QKEY),
				[T_RAW] = A(CUR_STATE),
			},
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
					 A(PATH_MIG_STATE) | A(MIN_RNR_TIMER),
				[T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
					 A(PATH_MIG_STATE),
				[T_UD] = A(CUR_STATE) | A(QKEY),
				[T_RAW] = A(CUR_STATE),
			},
		},
		[IBV_QPS_SQD] = { .valid = true, .opt = ALL3(A(EN_SQD_ASYNC_NOTIFY)) },
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
				[T_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(PATH_MIG_STATE),
				[T_UD] = A(CUR_STATE) | A(QKEY),
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
					 A(MAX_QP_RD_ATOMIC) | A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
					 A(ACCESS_FLAGS) | A(PKEY_INDEX) | A(MIN_RNR_TIMER) |
					 A(PATH_MIG_STATE),
				[T_UC] = A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
					 A(PATH_MIG_STATE),
				[T_UD] = A(PKEY_INDEX) | A(QKEY),
			},
		},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		/* SQE exists for UC and UD only (IBA 10.3.1.x); an RC QP never
		 * gets there, so the RC row is unreachable. */
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
				[T_UD] = A(CUR_STATE) | A(QKEY),
			},
		},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};

#undef A
#undef ALL3

static int qp_tidx(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? T_RC : t == IBV_QPT_UC ? T_UC : t == IBV_QPT_RAW_PACKET ? T_RAW : T_UD;
}

/* --- lookup ---------------------------------------------------------------- */

struct xrxe_tp_qp *xrxe_tpi_qp_lookup(struct xrxe_tp *tp, uint32_t qpn)
{
	uint32_t idx = qpn - XRXE_TP_QPN_BASE;
	struct xrxe_tp_qp *qp;

	if (qpn < XRXE_TP_QPN_BASE || idx >= tp->cfg.max_qp)
		return NULL;
	qp = tp->qpt[idx];
	return qp && qp->qpn == qpn ? qp : NULL;
}

/* --- create ------------------------------------------------------------- */

static bool ring_ok(const struct xrxe_ring *ring, uint32_t slots, uint32_t min_elem)
{
	if (!ring || slots < 2 || (slots & (slots - 1)))
		return false;
	if (ring->index_mask != slots - 1 || ring->log2_elem_size > 16)
		return false;
	return (1u << ring->log2_elem_size) >= min_elem;
}

/* rxe_qp_init_req: one UDP source port per QP, 0xC000 + a 14-bit hash of the
 * QPN, so one QP is one flow (in order) and QPs spread over RX queues
 * (docs/facts/rxe.md §1.1). A multiplicative (Fibonacci) hash. */
static uint16_t qp_sport(uint32_t qpn)
{
	return (uint16_t)(0xc000u + (((qpn * 0x61c88647u) >> (32 - 14)) & 0x3fffu));
}

static void qp_reset_state(struct xrxe_tp_qp *qp)
{
	/* IBA 10.3.1 / rxe_qp_reset: RESET empties the queues and forgets all
	 * transport state. The indices restart at 0 on both sides, as the
	 * rdma-core rxe provider resets its own copy on modify to RESET; the
	 * application must not post while the QP is being reset. Release
	 * orders nothing that matters here (the rings are idle) but keeps
	 * every index write a release store, like all others. */
	qp->sq_cons = qp->sq_fetch = 0;
	qp->sq_ring_cons = qp->sq_ring_fetch = 0;
	qp->tm_rndv_out = 0;
	qp->rq_cons = 0;
	xrxe_ring_publish_consumer(qp->sq, 0, qp->sq_mask);
	xrxe_ring_publish_producer(qp->sq, 0, qp->sq_mask);
	if (qp->rq) {
		xrxe_ring_publish_consumer(qp->rq, 0, qp->rq_mask);
		xrxe_ring_publish_producer(qp->rq, 0, qp->rq_mask);
	}
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	qp->comp.rexmit_deadline = XRXE_TP_NO_DEADLINE;
	qp->comp.rnr_deadline = XRXE_TP_NO_DEADLINE;
	qp->comp.fast_deadline = XRXE_TP_NO_DEADLINE;
	xrxe_tpi_resp_reset(qp);
	qp->resp.psn = 0;
	qp->resp.msn = 0;
	/* a new connection negotiates again */
	xrxe_tpi_sr_reset(qp);
	qp->sr = false;
	qp->sr_mode = TP_SR_DEFAULT;
	xrxe_tpi_cc_qp_reset(qp); /* CC hook: rate back to line rate (cc.c) */
}

int xrxe_tp_qp_create(struct xrxe_tp *tp, const struct xrxe_tp_qp_init *init, uint32_t *qpn,
		      struct xrxe_tp_qp **out)
{
	const struct ibv_qp_cap *cap = &init->cap;
	bool xrc = init->qp_type == IBV_QPT_XRC_SEND || init->qp_type == IBV_QPT_XRC_RECV;
	struct xrxe_ring *sq = init->sq, *tgt_sq = NULL;
	uint32_t sq_slots = init->sq_slots;
	struct xrxe_tp_qp *qp;
	uint32_t data_cap, i, idx, max_rsge;
	uint32_t nswqe, swqe_cap; /* private WQEs, and bytes of data each */
	int err;

	if (xrc) {
		/* XRC (xrc.c): an initiator has no receive side, a target
		 * nothing but its domain */
		err = xrxe_tpi_xrc_qp_check(tp, init);
		if (err)
			return err;
	} else if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UC &&
		   init->qp_type != IBV_QPT_UD && init->qp_type != IBV_QPT_RAW_PACKET) {
		return -EOPNOTSUPP;
	} else if (!init->send_cq || !init->recv_cq || !init->sq || !init->rq == !init->srq ||
		   (init->srq && init->srq->xrcdn)) {
		/* receive WQEs come from the QP's own RQ or from an SRQ,
		 * never both; an XRC SRQ serves XRC targets only */
		return -EINVAL;
	}
	if (cap->max_send_sge > XRXE_MAX_SGE || cap->max_recv_sge > XRXE_MAX_SGE ||
	    cap->max_inline_data > XRXE_MAX_INLINE)
		return -EINVAL;
	data_cap = cap->max_send_sge * sizeof(struct xrxe_sge);
	if (cap->max_inline_data > data_cap)
		data_cap = cap->max_inline_data;
	if (init->qp_type == IBV_QPT_XRC_RECV) {
		if (data_cap || cap->max_send_wr || cap->max_recv_wr || cap->max_recv_sge)
			return -EINVAL; /* a target has no work queues */
		tgt_sq = sq = xrxe_tpi_xrc_tgt_sq(&sq_slots);
		if (!sq)
			return -ENOMEM;
	}
	if (!ring_ok(sq, sq_slots, sizeof(struct xrxe_send_wqe) + data_cap) ||
	    (init->rq && !ring_ok(init->rq, init->rq_slots,
				  sizeof(struct xrxe_recv_wqe) +
					  cap->max_recv_sge * sizeof(struct xrxe_sge))))
		return -EINVAL;
	max_rsge = init->srq ? init->srq->max_sge : cap->max_recv_sge;

	for (i = 0; i < tp->cfg.max_qp; i++) {
		idx = (tp->qp_next + i) % tp->cfg.max_qp;
		if (!tp->qpt[idx])
			break;
	}
	if (i == tp->cfg.max_qp) {
		free(tgt_sq);
		return -ENOMEM;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		free(tgt_sq);
		return -ENOMEM;
	}
	/* A TM SRQ's QP also holds its rendezvous' READs and FINs (tm_rndv.c):
	 * room for them beside the ring's, each with a TMH's (or an SGE's) data */
	nswqe = sq_slots;
	swqe_cap = data_cap;
	if (xrxe_tpi_tm_rndv_wqes(init->srq)) {
		while (nswqe < sq_slots + xrxe_tpi_tm_rndv_wqes(init->srq))
			nswqe <<= 1;
		if (swqe_cap < XRXE_TP_TM_WQE_DATA)
			swqe_cap = XRXE_TP_TM_WQE_DATA;
	}
	qp->swqe = calloc(nswqe, sizeof(*qp->swqe));
	if (!qp->swqe)
		goto err_free;
	qp->swqe_data = calloc(nswqe, swqe_cap ? swqe_cap : 1);
	if (!qp->swqe_data)
		goto err_free;
	qp->resp.rsge = calloc(max_rsge ? max_rsge : 1, sizeof(struct xrxe_sge));
	if (!qp->resp.rsge)
		goto err_free;
	/* one responder resource until max_dest_rd_atomic says more (modify) */
	qp->resp.res = calloc(1, sizeof(*qp->resp.res));
	qp->resp.q = calloc(xrxe_tpi_rspq_slots(1), sizeof(*qp->resp.q));
	if (!qp->resp.res || !qp->resp.q)
		goto err_free;
	qp->resp.res_cap = 1;
	qp->resp.qslots = xrxe_tpi_rspq_slots(1);
	/* an XRC target's PD is that of the SRQ each message names */
	err = init->qp_type == IBV_QPT_XRC_RECV ? 0 : xrxe_tpi_pd_get(tp, init->pdn);
	if (err) {
		free(tgt_sq);
		free(qp->resp.res);
		free(qp->resp.q);
		free(qp->resp.rsge);
		free(qp->swqe_data);
		free(qp->swqe);
		free(qp);
		return err;
	}

	qp->tp = tp;
	qp->type = init->qp_type;
	qp->pdn = init->pdn;
	qp->send_cq = init->send_cq;
	qp->recv_cq = init->recv_cq;
	qp->cap = *cap;
	qp->sq_sig_all = init->sq_sig_all;
	qp->user = init->user;
	qp->sq = sq;
	qp->sq_mask = sq_slots - 1;
	qp->sq_log2 = sq->log2_elem_size;
	qp->sq_data_cap = data_cap;
	qp->swqe_mask = nswqe - 1;
	for (i = 0; i < nswqe; i++)
		qp->swqe[i].data = qp->swqe_data + (size_t)i * swqe_cap;
	qp->rq = init->rq;
	if (init->rq) {
		qp->rq_mask = init->rq_slots - 1;
		qp->rq_log2 = init->rq->log2_elem_size;
	}
	qp->srq = init->srq;
	qp->max_rsge = max_rsge;
	if (xrc) {
		qp->type = IBV_QPT_RC; /* XRC runs RC's transport (xrc.c) */
		xrxe_tpi_xrc_qp_init(qp, init, tgt_sq);
	}

	qp->qpn = XRXE_TP_QPN_BASE + idx;
	qp->sport = qp_sport(qp->qpn);
	qp->state = IBV_QPS_RESET;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = IBV_MTU_256; /* rxe's default before modify (docs/facts/rxe.md §2.8) */
	qp->mtu = 256;
	qp->attr.port_num = 1;
	qp->resp.nres = 1;
	qp_reset_state(qp);

	if (qp->send_cq)
		qp->send_cq->refs++;
	if (qp->recv_cq)
		qp->recv_cq->refs++;
	if (qp->srq)
		qp->srq->refs++;
	tp->qpt[idx] = qp;
	tp->qp_next = (idx + 1) % tp->cfg.max_qp;
	qp->next = tp->qps;
	if (tp->qps)
		tp->qps->prev = qp;
	tp->qps = qp;
	tp->stats.qps++;
	*qpn = qp->qpn;
	*out = qp;
	return 0;

err_free:
	free(tgt_sq);
	free(qp->resp.res);
	free(qp->resp.q);
	free(qp->resp.rsge);
	free(qp->swqe_data);
	free(qp->swqe);
	free(qp);
	return -ENOMEM;
}

void xrxe_tp_qp_destroy(struct xrxe_tp *tp, struct xrxe_tp_qp *qp)
{
	if (!qp)
		return;
	xrxe_tpi_mw_qp_gone(qp);
	tp->qpt[qp->qpn - XRXE_TP_QPN_BASE] = NULL;
	xrxe_tpi_sched_forget(qp); /* off the run queue and the timer heap */
	if (qp->prev)
		qp->prev->next = qp->next;
	else
		tp->qps = qp->next;
	if (qp->next)
		qp->next->prev = qp->prev;
	xrxe_tp_mcast_detach_all(tp, qp, NULL, NULL);
	xrxe_tpi_xrc_qp_fini(qp); /* a target lets go of its SRQ and domain (xrc.c) */
	xrxe_tpi_raw_qp_gone(qp); /* a raw packet QP's flows go with it (raw.c) */
	if (qp->send_cq)
		qp->send_cq->refs--;
	if (qp->recv_cq)
		qp->recv_cq->refs--;
	if (qp->srq)
		qp->srq->refs--;
	xrxe_tpi_pd_put(tp, qp->pdn);
	tp->stats.qps--;
	xrxe_tpi_cc_qp_fini(qp); /* CC hook: off the pacer's wheel (cc.c) */
	xrxe_tpi_sr_free(qp);
	free(qp->resp.res);
	free(qp->resp.q);
	free(qp->resp.rsge);
	free(qp->swqe_data);
	free(qp->swqe);
	free(qp);
}

int xrxe_tp_qp_set_sr(struct xrxe_tp *tp, uint32_t qpn, bool on)
{
	struct xrxe_tp_qp *qp = xrxe_tpi_qp_lookup(tp, qpn);
	int err;

	if (!qp)
		return -ENOENT;
	if (qp->type != IBV_QPT_RC || qp->xrc)
		return -EINVAL;
	/* Both ends must switch before the first packet: the CM calls this
	 * when it sends (passive) or receives (active) the REP, before the
	 * connection carries anything. A QP that did is left alone. */
	if (qp->state == IBV_QPS_ERR || qp->state == IBV_QPS_SQE || qp->state == IBV_QPS_SQD ||
	    qp->info.tx_packets || qp->info.rx_packets)
		return -EBUSY;
	qp->sr_mode = on ? TP_SR_ON : TP_SR_OFF;
	if (qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS) {
		if (!on) {
			qp->sr = false;
			return 0;
		}
		err = xrxe_tpi_sr_enable(qp);
		if (err)
			return err;
	}
	return 0;
}

/* --- modify ------------------------------------------------------------- */

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* IBV_ACCESS_ON_DEMAND means nothing for a QP, but applications pass a
 * region's access flags as the QP's (rdma-core's test_odp does); rxe keeps
 * them as given, and so do we. */
#define QP_ACCESS_FLAGS                                                                    \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |       \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | XRXE_ACCESS_FLUSH_GLOBAL |         \
	 XRXE_ACCESS_FLUSH_PERSISTENT | IBV_ACCESS_ON_DEMAND)

/* Attribute values (the rxe_qp_chk_attr extras of docs/facts/rxe.md §2.11, plus the
 * ranges of IBA 11.2.4.2). Only attributes present in the mask are checked. */
static int qp_check_values(const struct xrxe_tp_qp *qp, const struct ibv_qp_attr *attr, int mask,
			   const struct xrxe_av *av)
{
	const struct xrxe_tp *tp = qp->tp;

	if ((mask & IBV_QP_PORT) && attr->port_num != 1)
		return -EINVAL; /* one port */
	if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return -EINVAL; /* P_Key table of one entry (0xFFFF), rxe */
	if ((mask & IBV_QP_ACCESS_FLAGS) && (attr->qp_access_flags & ~QP_ACCESS_FLAGS))
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (attr->path_mtu < IBV_MTU_256 || (uint32_t)attr->path_mtu > tp->max_mtu_enum))
		return -EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > XRXE_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > XRXE_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && attr->dest_qp_num > XRXE_QPN_MASK)
		return -EINVAL;
	if ((mask & IBV_QP_AV) && (!av || (av->ip_version != 4 && av->ip_version != 6)))
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MIG_STATE) && attr->path_mig_state != IBV_MIG_MIGRATED &&
	    attr->path_mig_state != IBV_MIG_REARM && attr->path_mig_state != IBV_MIG_ARMED)
		return -EINVAL;
	return 0;
}

/* Room for nres responder resources (their response queue included). The
 * arrays only grow: queued responses name resources by index, and the
 * queue's entries keep their free-running positions in the larger ring. */
static int resp_grow(struct xrxe_tp_qp *qp, uint32_t nres)
{
	struct tp_resp *r = &qp->resp;
	uint32_t slots = xrxe_tpi_rspq_slots(nres);
	struct tp_rspq_ent *q;
	struct tp_res *res;

	if (nres <= r->res_cap)
		return 0;
	res = calloc(nres, sizeof(*res));
	q = calloc(slots, sizeof(*q));
	if (!res || !q) {
		free(res);
		free(q);
		return -ENOMEM;
	}
	memcpy(res, r->res, sizeof(*res) * r->res_cap);
	for (uint32_t i = r->qhead; i != r->qtail; i++)
		q[i & (slots - 1)] = r->q[i & (r->qslots - 1)];
	free(r->res);
	free(r->q);
	r->res = res;
	r->res_cap = nres;
	r->q = q;
	r->qslots = slots;
	return 0;
}

int xrxe_tp_qp_modify(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, const struct ibv_qp_attr *attr,
		      int attr_mask, const struct xrxe_av *av)
{
	enum ibv_qp_state cur = qp->state, next = cur;
	const struct qp_trans *t;
	uint32_t mask = (uint32_t)attr_mask, req, opt;
	int ti = qp_tidx(qp->type), err;

	(void)tp;
	if (mask & IBV_QP_STATE) {
		if ((unsigned)attr->qp_state > IBV_QPS_ERR)
			return -EINVAL;
		next = attr->qp_state;
	}
	/* CUR_STATE names the state the caller believes the QP is in; a
	 * mismatch fails (rxe_qp_chk_attr). */
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		return -EINVAL;
	t = &qp_trans[cur][next];
	if (!t->valid)
		return -EINVAL;
	req = t->req[ti];
	opt = t->opt[ti];
	if (qp->xrc) {
		uint32_t relaxed = xrxe_tpi_xrc_not_required(qp, cur, next);

		req &= ~relaxed;
		opt |= relaxed;
	}
	if ((mask & req) != req)
		return -EINVAL; /* a required attribute is missing */
	if (mask & ~(req | opt | IBV_QP_STATE))
		return -EINVAL; /* an attribute this transition does not allow */
	err = qp_check_values(qp, attr, (int)mask, av);
	if (err)
		return err;
	/* more responder resources than allocated: grow them and the response
	 * queue now, the step that can fail, before anything changes */
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
		err = resp_grow(qp, roundup_pow2(attr->max_dest_rd_atomic ? attr->max_dest_rd_atomic
									  : 1));
		if (err)
			return err;
	}
	/* Selective repeat is decided when the QP starts to receive: as the
	 * CM negotiated it (xrxe_tp_qp_set_sr), else the device setting for
	 * QPs connected without the CM (docs/selective-repeat.md). Its state
	 * is allocated here, the only step that can fail. */
	if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR && qp->type == IBV_QPT_RC && !qp->xrc) {
		bool on = qp->sr_mode == TP_SR_ON ||
			  (qp->sr_mode == TP_SR_DEFAULT && qp->tp->cfg.selective_repeat);

		if (on) {
			err = xrxe_tpi_sr_enable(qp);
			if (err)
				return err;
		} else {
			qp->sr = false;
		}
	}

	/* --- everything is valid: apply (nothing below can fail) --- */
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		qp->attr.port_num = attr->port_num;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_QKEY)
		qp->attr.qkey = attr->qkey;
	if (mask & IBV_QP_AV) {
		qp->attr.ah_attr = attr->ah_attr;
		qp->av = *av;
		qp->av_set = true;
	}
	if (mask & IBV_QP_ALT_PATH) {
		/* No automatic path migration (rxe: flag only); kept for query. */
		qp->attr.alt_ah_attr = attr->alt_ah_attr;
		qp->attr.alt_pkey_index = attr->alt_pkey_index;
		qp->attr.alt_port_num = attr->alt_port_num;
		qp->attr.alt_timeout = attr->alt_timeout;
	}
	if (mask & IBV_QP_PATH_MTU) {
		qp->attr.path_mtu = attr->path_mtu;
		qp->mtu = xrxe_tpi_mtu_bytes(attr->path_mtu);
	}
	if (mask & IBV_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN) {
		qp->attr.rq_psn = attr->rq_psn & XRXE_PSN_MASK;
		qp->resp.psn = qp->attr.rq_psn;
	}
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
		/* rxe_qp_from_attr: the resource ring is rounded up to a
		 * power of 2 (docs/facts/rxe.md §2.6) */
		qp->resp.nres = roundup_pow2(attr->max_dest_rd_atomic ? attr->max_dest_rd_atomic
								      : 1);
		memset(qp->resp.res, 0, sizeof(*qp->resp.res) * qp->resp.res_cap);
		qp->resp.res_next = 0;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT) {
		qp->attr.retry_cnt = attr->retry_cnt;
		qp->comp.retry_cnt = attr->retry_cnt;
	}
	if (mask & IBV_QP_RNR_RETRY) {
		qp->attr.rnr_retry = attr->rnr_retry;
		qp->comp.rnr_retry = attr->rnr_retry;
	}
	if (mask & IBV_QP_SQ_PSN) {
		uint32_t psn = attr->sq_psn & XRXE_PSN_MASK;

		qp->attr.sq_psn = psn;
		qp->req.psn = qp->req.psn_hi = qp->comp.psn = psn;
	}
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		qp->attr.path_mig_state = attr->path_mig_state;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = attr->en_sqd_async_notify;

	if (next != cur)
		xrxe_dbg("qp %u: %s -> %s", qp->qpn, xrxe_tpi_state_name(cur),
			 xrxe_tpi_state_name(next));
	switch (next) {
	case IBV_QPS_RESET:
		if (cur != IBV_QPS_RESET) {
			qp_reset_state(qp);
			/* nothing of the old life stays in the CQs (cq.c) */
			if (qp->send_cq)
				xrxe_tpi_cq_purge_qp(qp->send_cq, qp->qpn);
			if (qp->recv_cq && qp->recv_cq != qp->send_cq)
				xrxe_tpi_cq_purge_qp(qp->recv_cq, qp->qpn);
		}
		qp->state = IBV_QPS_RESET;
		break;
	case IBV_QPS_ERR:
		xrxe_tpi_qp_error(qp);
		break;
	case IBV_QPS_SQD:
		if (cur != IBV_QPS_SQD)
			qp->req.drained_sent = false;
		qp->state = next;
		break;
	case IBV_QPS_RTS:
		if (cur == IBV_QPS_RTR)
			xrxe_tpi_comp_reset_counters(qp);
		qp->state = next;
		break;
	default:
		qp->state = next;
		break;
	}
	qp->attr.qp_state = qp->state;
	/* a new state may start posted WQEs or flush them; timers moved
	 * (sched.c) */
	xrxe_tpi_sched_kick(qp);
	xrxe_tpi_sched_rearm(qp);
	return 0;
}

int xrxe_tp_qp_query(struct xrxe_tp *tp, struct xrxe_tp_qp *qp, struct ibv_qp_attr *attr,
		     struct ibv_qp_init_attr *init)
{
	(void)tp;
	if (attr) {
		*attr = qp->attr;
		attr->qp_state = qp->state;
		attr->cur_qp_state = qp->state;
		attr->cap = qp->cap;
		/* IBA 11.2.4.3: SQ draining is reported while in SQD with
		 * outstanding work. */
		attr->sq_draining = qp->state == IBV_QPS_SQD &&
				    (xrxe_tpi_outstanding(qp) || qp->sq_cons != qp->req.wqe);
		attr->sq_psn = qp->req.psn_hi;
		attr->rq_psn = qp->resp.psn;
	}
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_type = xrxe_tpi_qp_type(qp);
		init->sq_sig_all = qp->sq_sig_all;
		init->cap = qp->cap;
	}
	return 0;
}

/* --- transitions the transport makes ------------------------------------- */

void xrxe_tpi_qp_async(struct xrxe_tp_qp *qp, enum ibv_event_type ev)
{
	if (qp->tp->cfg.ops->async_event)
		qp->tp->cfg.ops->async_event(qp->tp->cfg.user, ev, qp->user);
}

bool xrxe_tpi_qp_flush(struct xrxe_tp_qp *qp)
{
	bool did = false;

	if (qp->state == IBV_QPS_ERR || qp->state == IBV_QPS_SQE)
		did |= xrxe_tpi_comp_flush(qp);
	if (qp->state == IBV_QPS_ERR)
		did |= xrxe_tpi_resp_flush(qp);
	return did;
}

void xrxe_tpi_qp_error(struct xrxe_tp_qp *qp)
{
	if (qp->state == IBV_QPS_ERR)
		return;
	xrxe_dbg("qp %u: %s -> ERR", qp->qpn, xrxe_tpi_state_name(qp->state));
	qp->state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	qp->comp.rexmit_deadline = XRXE_TP_NO_DEADLINE;
	qp->comp.rnr_deadline = XRXE_TP_NO_DEADLINE;
	qp->comp.fast_deadline = XRXE_TP_NO_DEADLINE;
	/* IBA 10.3.1 (Error state): every outstanding and later posted WR
	 * completes with IBV_WC_WR_FLUSH_ERR, on both queues. */
	xrxe_tpi_qp_flush(qp);
	/* IBA 11.6.3.x (o11-5.2.x) / rxe flush_recv_queue: a QP attached to an
	 * SRQ reports Last WQE Reached once it is in Error and holds no more
	 * receive WQEs (its WQE in use, if any, was just flushed; the SRQ's
	 * own WQEs stay for the other QPs). */
	if (qp->srq && !qp->xrc)
		xrxe_tpi_qp_async(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
	xrxe_tpi_sched_kick(qp); /* later posts are flushed on its turns */
}

void xrxe_tpi_qp_cq_overrun(struct xrxe_tp_qp *qp)
{
	if (qp->state == IBV_QPS_ERR)
		return;
	xrxe_tpi_qp_error(qp);
	xrxe_tpi_qp_async(qp, IBV_EVENT_QP_FATAL);
}

void xrxe_tpi_qp_sq_error(struct xrxe_tp_qp *qp)
{
	if (qp->type == IBV_QPT_RC) {
		xrxe_tpi_qp_error(qp);
		return;
	}
	if (qp->state == IBV_QPS_ERR || qp->state == IBV_QPS_SQE)
		return;
	/* UC/UD: a send-side error stops only the send queue (IBA 10.3.1,
	 * Send Queue Error state); receives go on. */
	qp->state = IBV_QPS_SQE;
	qp->attr.qp_state = IBV_QPS_SQE;
	xrxe_tpi_comp_flush(qp);
}
