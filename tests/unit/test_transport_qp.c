// SPDX-License-Identifier: MIT
/*
 * The QP state machine (IBA 10.3.1, docs/facts/rxe.md §2.11): every valid
 * transition with its required attributes is accepted; invalid transitions,
 * missing required attributes, attributes a transition does not allow and
 * out-of-range values fail with -EINVAL and change nothing.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tp_harness.h"

#define A(x) IBV_QP_##x
#define NSTATES (IBV_QPS_ERR + 1)

enum { T_RC, T_UC, T_UD };

/* The expected table, written out independently of src/transport/qp.c
 * from docs/facts/rxe.md §2.11 / the kernel's qp_state_table. */
struct exp {
	bool valid;
	int req[3], opt[3];
};

static struct exp expected(enum ibv_qp_state cur, enum ibv_qp_state next)
{
	struct exp e = { 0 };

	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) {
		e.valid = true;
		return e;
	}
	switch (cur) {
	case IBV_QPS_RESET:
		if (next == IBV_QPS_INIT) {
			e.valid = true;
			e.req[T_RC] = e.req[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS);
			e.req[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY);
		}
		break;
	case IBV_QPS_INIT:
		if (next == IBV_QPS_INIT) {
			e.valid = true;
			e.opt[T_RC] = e.opt[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS);
			e.opt[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY);
		} else if (next == IBV_QPS_RTR) {
			e.valid = true;
			e.req[T_RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
				      A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER);
			e.req[T_UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN);
			e.opt[T_RC] = e.opt[T_UC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX);
			e.opt[T_UD] = A(PKEY_INDEX) | A(QKEY);
		}
		break;
	case IBV_QPS_RTR:
		if (next == IBV_QPS_RTS) {
			e.valid = true;
			e.req[T_RC] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(SQ_PSN) |
				      A(MAX_QP_RD_ATOMIC);
			e.req[T_UC] = e.req[T_UD] = A(SQ_PSN);
			e.opt[T_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
				      A(MIN_RNR_TIMER) | A(PATH_MIG_STATE);
			e.opt[T_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
				      A(PATH_MIG_STATE);
			e.opt[T_UD] = A(CUR_STATE) | A(QKEY);
		}
		break;
	case IBV_QPS_RTS:
		if (next == IBV_QPS_RTS) {
			e.valid = true;
			e.opt[T_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
				      A(PATH_MIG_STATE) | A(MIN_RNR_TIMER);
			e.opt[T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
				      A(PATH_MIG_STATE);
			e.opt[T_UD] = A(CUR_STATE) | A(QKEY);
		} else if (next == IBV_QPS_SQD) {
			e.valid = true;
			e.opt[T_RC] = e.opt[T_UC] = e.opt[T_UD] = A(EN_SQD_ASYNC_NOTIFY);
		}
		break;
	case IBV_QPS_SQD:
		if (next == IBV_QPS_RTS) {
			e.valid = true;
			e.opt[T_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
				      A(MIN_RNR_TIMER) | A(PATH_MIG_STATE);
			e.opt[T_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
				      A(PATH_MIG_STATE);
			e.opt[T_UD] = A(CUR_STATE) | A(QKEY);
		} else if (next == IBV_QPS_SQD) {
			e.valid = true;
			e.opt[T_RC] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
				      A(MAX_QP_RD_ATOMIC) | A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
				      A(ACCESS_FLAGS) | A(PKEY_INDEX) | A(MIN_RNR_TIMER) |
				      A(PATH_MIG_STATE);
			e.opt[T_UC] = A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
				      A(PATH_MIG_STATE);
			e.opt[T_UD] = A(PKEY_INDEX) | A(QKEY);
		}
		break;
	case IBV_QPS_SQE:
		if (next == IBV_QPS_RTS) {
			e.valid = true;
			e.opt[T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS);
			e.opt[T_UD] = A(CUR_STATE) | A(QKEY);
		}
		break;
	default:
		break;
	}
	return e;
}

/* Good values for every attribute. */
static void good_attr(struct ibv_qp_attr *a, uint32_t dest_qpn)
{
	memset(a, 0, sizeof(*a));
	a->pkey_index = 0;
	a->port_num = 1;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	a->qkey = 0x1234;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = dest_qpn;
	a->rq_psn = 0x123;
	a->sq_psn = 0x456;
	a->max_dest_rd_atomic = 4;
	a->max_rd_atomic = 4;
	a->min_rnr_timer = 12;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->path_mig_state = IBV_MIG_MIGRATED;
	a->en_sqd_async_notify = 1;
}

static int tidx(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? T_RC : t == IBV_QPT_UC ? T_UC : T_UD;
}

/* Drive q from RESET to state s (SQE only for UC/UD, via a send error). */
static bool goto_state(struct xrxe_tph_qp *q, enum ibv_qp_state s)
{
	struct xrxe_tp *tp = q->s->tp;
	struct ibv_qp_attr a;
	struct xrxe_av av;
	int t = tidx(q->type);
	static const enum ibv_qp_state path[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
	unsigned i;

	xrxe_tph_av(q->s->h, q->s->id, &av);
	good_attr(&a, 99);
	a.qp_state = IBV_QPS_RESET;
	cr_assert_eq(xrxe_tp_qp_modify(tp, q->qp, &a, IBV_QP_STATE, NULL), 0);
	if (s == IBV_QPS_RESET)
		return true;
	if (s == IBV_QPS_ERR) {
		a.qp_state = IBV_QPS_ERR;
		cr_assert_eq(xrxe_tp_qp_modify(tp, q->qp, &a, IBV_QP_STATE, NULL), 0);
		return true;
	}
	for (i = 0; i < 3; i++) {
		struct exp e = expected(i ? path[i - 1] : IBV_QPS_RESET, path[i]);

		a.qp_state = path[i];
		cr_assert_eq(xrxe_tp_qp_modify(tp, q->qp, &a, IBV_QP_STATE | e.req[t], &av), 0);
		if (path[i] == s)
			return true;
	}
	if (s == IBV_QPS_SQD) {
		a.qp_state = IBV_QPS_SQD;
		cr_assert_eq(xrxe_tp_qp_modify(tp, q->qp, &a, IBV_QP_STATE, NULL), 0);
		return true;
	}
	if (s == IBV_QPS_SQE) {
		struct xrxe_send_wqe hdr;

		if (q->type == IBV_QPT_RC)
			return false;
		/* an opcode the QP type does not have: send-queue error */
		memset(&hdr, 0, sizeof(hdr));
		hdr.opcode = IBV_WR_RDMA_READ;
		cr_assert_eq(xrxe_tph_post_send_raw(q, &hdr, NULL, 0), 0);
		xrxe_tp_poll(tp, q->s->h->now);
		cr_assert_eq(xrxe_tph_state(q), IBV_QPS_SQE);
		return true;
	}
	return false;
}

static void check_table(enum ibv_qp_type type)
{
	static const int all_bits[] = {
		A(CUR_STATE), A(EN_SQD_ASYNC_NOTIFY), A(ACCESS_FLAGS), A(PKEY_INDEX), A(PORT),
		A(QKEY), A(AV), A(PATH_MTU), A(TIMEOUT), A(RETRY_CNT), A(RNR_RETRY),
		A(RQ_PSN), A(MAX_QP_RD_ATOMIC), A(ALT_PATH), A(MIN_RNR_TIMER), A(SQ_PSN),
		A(MAX_DEST_RD_ATOMIC), A(PATH_MIG_STATE), A(CAP), A(DEST_QPN),
	};
	struct xrxe_tph h;
	struct xrxe_tph_cq *c;
	struct xrxe_tph_qp *q;
	int t = tidx(type);
	unsigned cur, next, k, accepted = 0, rejected = 0;

	xrxe_tph_init(&h, 5, 4096);
	c = xrxe_tph_cq_create(&h.side[0], 64);
	q = xrxe_tph_qp_create(&h.side[0], type, c, c, 8, 8, true);
	for (cur = 0; cur < NSTATES; cur++) {
		for (next = 0; next < NSTATES; next++) {
			struct exp e = expected(cur, next);
			struct ibv_qp_attr a;
			struct xrxe_av av;
			int err;

			if (!goto_state(q, cur))
				continue;
			xrxe_tph_av(&h, 0, &av);
			good_attr(&a, 99);
			a.qp_state = next;
			a.cur_qp_state = cur;
			if (e.valid) {
				/* each required attribute missing in turn */
				for (k = 0; k < sizeof(all_bits) / sizeof(all_bits[0]); k++) {
					if (!(e.req[t] & all_bits[k]))
						continue;
					err = xrxe_tp_qp_modify(h.side[0].tp, q->qp, &a,
								IBV_QP_STATE | (e.req[t] & ~all_bits[k]),
								&av);
					cr_assert_eq(err, -EINVAL, "%u->%u without 0x%x", cur, next,
						     all_bits[k]);
					cr_assert_eq(xrxe_tph_state(q), cur);
					rejected++;
				}
				/* each attribute it does not allow */
				for (k = 0; k < sizeof(all_bits) / sizeof(all_bits[0]); k++) {
					if ((e.req[t] | e.opt[t]) & all_bits[k])
						continue;
					err = xrxe_tp_qp_modify(h.side[0].tp, q->qp, &a,
								IBV_QP_STATE | e.req[t] | all_bits[k],
								&av);
					cr_assert_eq(err, -EINVAL, "%u->%u with 0x%x", cur, next,
						     all_bits[k]);
					cr_assert_eq(xrxe_tph_state(q), cur);
					rejected++;
				}
				/* required + all optional: accepted */
				err = xrxe_tp_qp_modify(h.side[0].tp, q->qp, &a,
							IBV_QP_STATE | e.req[t] | e.opt[t], &av);
				cr_assert_eq(err, 0, "type %d %u->%u refused", type, cur, next);
				cr_assert_eq(xrxe_tph_state(q), next);
				accepted++;
			} else {
				err = xrxe_tp_qp_modify(h.side[0].tp, q->qp, &a, IBV_QP_STATE, &av);
				cr_assert_eq(err, -EINVAL, "type %d %u->%u accepted", type, cur, next);
				cr_assert_eq(xrxe_tph_state(q), cur);
				/* not even with every attribute */
				err = xrxe_tp_qp_modify(h.side[0].tp, q->qp, &a, 0x1fffff, &av);
				cr_assert_eq(err, -EINVAL);
				cr_assert_eq(xrxe_tph_state(q), cur);
				rejected++;
			}
		}
	}
	cr_assert_gt(accepted, 15);
	cr_assert_gt(rejected, 50);
	xrxe_tph_fini(&h);
}

Test(transport_qp, table_rc)
{
	check_table(IBV_QPT_RC);
}

Test(transport_qp, table_uc)
{
	check_table(IBV_QPT_UC);
}

Test(transport_qp, table_ud)
{
	check_table(IBV_QPT_UD);
}

Test(transport_qp, cur_state_mismatch)
{
	struct xrxe_tph h;
	struct xrxe_tph_cq *c;
	struct xrxe_tph_qp *q;
	struct ibv_qp_attr a;

	xrxe_tph_init(&h, 5, 4096);
	c = xrxe_tph_cq_create(&h.side[0], 64);
	q = xrxe_tph_qp_create(&h.side[0], IBV_QPT_RC, c, c, 8, 8, true);
	cr_assert(goto_state(q, IBV_QPS_RTS));
	good_attr(&a, 99);
	a.qp_state = IBV_QPS_RTS;
	a.cur_qp_state = IBV_QPS_RTR;
	cr_assert_eq(xrxe_tp_qp_modify(h.side[0].tp, q->qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE,
				       NULL), -EINVAL);
	a.cur_qp_state = IBV_QPS_RTS;
	cr_assert_eq(xrxe_tp_qp_modify(h.side[0].tp, q->qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE,
				       NULL), 0);
	xrxe_tph_fini(&h);
}

/* An out-of-range value fails the whole modify, nothing applied. */
static void bad_value(struct xrxe_tph_qp *q, enum ibv_qp_state from, void (*mut)(struct ibv_qp_attr *),
		      uint32_t max_mtu_ok)
{
	struct ibv_qp_attr a, before, after;
	struct xrxe_av av;
	struct exp e;
	int t = tidx(q->type);

	(void)max_mtu_ok;
	cr_assert(goto_state(q, from));
	xrxe_tp_qp_query(q->s->tp, q->qp, &before, NULL);
	e = expected(from, from == IBV_QPS_INIT ? IBV_QPS_RTR : IBV_QPS_RTS);
	good_attr(&a, 99);
	a.qp_state = from == IBV_QPS_INIT ? IBV_QPS_RTR : IBV_QPS_RTS;
	a.sq_psn = 0xabcdef;
	a.rq_psn = 0xfedcba;
	mut(&a);
	xrxe_tph_av(q->s->h, 0, &av);
	cr_assert_eq(xrxe_tp_qp_modify(q->s->tp, q->qp, &a, IBV_QP_STATE | e.req[t] | e.opt[t], &av),
		     -EINVAL);
	xrxe_tp_qp_query(q->s->tp, q->qp, &after, NULL);
	cr_assert_eq(after.qp_state, before.qp_state);
	cr_assert_eq(after.sq_psn, before.sq_psn);
	cr_assert_eq(after.rq_psn, before.rq_psn);
	cr_assert_eq(after.path_mtu, before.path_mtu);
	cr_assert_eq(after.timeout, before.timeout);
	cr_assert_eq(after.dest_qp_num, before.dest_qp_num);
}

static void m_timeout(struct ibv_qp_attr *a) { a->timeout = 32; }
static void m_retry(struct ibv_qp_attr *a) { a->retry_cnt = 8; }
static void m_rnr_retry(struct ibv_qp_attr *a) { a->rnr_retry = 8; }
static void m_rd_atomic(struct ibv_qp_attr *a) { a->max_rd_atomic = 129; }
static void m_dest_rd_atomic(struct ibv_qp_attr *a) { a->max_dest_rd_atomic = 129; }
static void m_mtu(struct ibv_qp_attr *a) { a->path_mtu = IBV_MTU_2048; }
static void m_mtu0(struct ibv_qp_attr *a) { a->path_mtu = 0; }
static void m_min_rnr(struct ibv_qp_attr *a) { a->min_rnr_timer = 32; }
static void m_pkey(struct ibv_qp_attr *a) { a->pkey_index = 1; }
static void m_qpn(struct ibv_qp_attr *a) { a->dest_qp_num = 0x1000000; }
static void m_access(struct ibv_qp_attr *a) { a->qp_access_flags = 1u << 20; }
static void m_mig(struct ibv_qp_attr *a) { a->path_mig_state = 7; }

Test(transport_qp, bad_values_change_nothing)
{
	struct xrxe_tph h;
	struct xrxe_tph_cq *c;
	struct xrxe_tph_qp *q;

	xrxe_tph_init(&h, 5, 1024 + 80); /* port max path MTU 1024 */
	c = xrxe_tph_cq_create(&h.side[0], 64);
	q = xrxe_tph_qp_create(&h.side[0], IBV_QPT_RC, c, c, 8, 8, true);
	bad_value(q, IBV_QPS_RTR, m_timeout, 0);
	bad_value(q, IBV_QPS_RTR, m_retry, 0);
	bad_value(q, IBV_QPS_RTR, m_rnr_retry, 0);
	bad_value(q, IBV_QPS_RTR, m_rd_atomic, 0);
	bad_value(q, IBV_QPS_RTR, m_min_rnr, 0);
	bad_value(q, IBV_QPS_RTR, m_mig, 0);
	bad_value(q, IBV_QPS_RTR, m_access, 0);
	bad_value(q, IBV_QPS_INIT, m_dest_rd_atomic, 0);
	bad_value(q, IBV_QPS_INIT, m_mtu, 0);
	bad_value(q, IBV_QPS_INIT, m_mtu0, 0);
	bad_value(q, IBV_QPS_INIT, m_pkey, 0);
	bad_value(q, IBV_QPS_INIT, m_qpn, 0);
	/* AV required but none given */
	{
		struct ibv_qp_attr a;
		struct exp e = expected(IBV_QPS_INIT, IBV_QPS_RTR);

		cr_assert(goto_state(q, IBV_QPS_INIT));
		good_attr(&a, 99);
		a.qp_state = IBV_QPS_RTR;
		cr_assert_eq(xrxe_tp_qp_modify(h.side[0].tp, q->qp, &a, IBV_QP_STATE | e.req[T_RC],
					       NULL), -EINVAL);
		cr_assert_eq(xrxe_tph_state(q), IBV_QPS_INIT);
		/* port 2 does not exist */
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 2;
		cr_assert_eq(xrxe_tp_qp_modify(h.side[0].tp, q->qp, &a, IBV_QP_STATE | IBV_QP_PORT,
					       NULL), -EINVAL);
	}
	xrxe_tph_fini(&h);
}

Test(transport_qp, reset_clears_psn_state)
{
	struct xrxe_tph_pair p;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	static uint8_t buf[8192];
	uint32_t lka, lkb;
	struct ibv_wc wc[8];
	int round;

	cr_assert_eq(xrxe_tph_pair_init(&p, 9, IBV_QPT_RC, NULL, true), 0);
	lka = xrxe_tph_mr(&p.h.side[0], buf, 4096, IBV_ACCESS_LOCAL_WRITE, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], buf + 4096, 4096, IBV_ACCESS_LOCAL_WRITE, 0);
	for (round = 0; round < 3; round++) {
		struct xrxe_sge sa = { (uintptr_t)buf, 2000, lka }, sb = { (uintptr_t)buf + 4096, 4096, lkb };
		struct ibv_qp_attr q;

		if (round) {
			/* RESET, then connect again with other PSNs */
			cr_assert_eq(xrxe_tp_qp_modify(p.h.side[0].tp, p.a->qp, &a, IBV_QP_STATE, NULL), 0);
			cr_assert_eq(xrxe_tp_qp_modify(p.h.side[1].tp, p.b->qp, &a, IBV_QP_STATE, NULL), 0);
			/* the rings were reset too: the application restarts at 0 */
			p.a->sq_prod = p.a->rq_prod = p.b->sq_prod = p.b->rq_prod = 0;
			xrxe_tp_qp_query(p.h.side[0].tp, p.a->qp, &q, NULL);
			cr_assert_eq(q.qp_state, IBV_QPS_RESET);
			p.conn.psn[0] = 0xffffff - (uint32_t)round;
			p.conn.psn[1] = 77u * (uint32_t)round;
			cr_assert_eq(xrxe_tph_connect(p.a, p.b, &p.conn), 0);
		}
		cr_assert_eq(xrxe_tph_post_recv(p.b, 1, &sb, 1), 0);
		cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
			.wr_id = 5, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1 }), 0);
		cr_assert(xrxe_tph_run(&p.h, 1000000000ull));
		cr_assert_eq(xrxe_tph_poll_cq(p.ca, wc, 8), 1);
		cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
		cr_assert_eq(xrxe_tph_poll_cq(p.cb, wc, 8), 1);
		cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
		xrxe_tp_qp_query(p.h.side[0].tp, p.a->qp, &q, NULL);
		cr_assert_eq(q.sq_psn, (p.conn.psn[0] + 2) & 0xffffff);
	}
	xrxe_tph_pair_fini(&p);
}

/*
 * A QP brought back RESET -> INIT -> RTR -> RTS after an error works as new:
 * the completions of its old life (the error, the flushes) leave its CQs on
 * the way through RESET, so the first CQE polled afterwards is its new work's
 * (rdma-core's test_mr rereg tests restate QPs so; mlx5 cleans the CQ). The
 * CQEs of another QP sharing the CQ stay, in order.
 */
static uint32_t ids_of(struct xrxe_tph_cq *c, struct ibv_wc *wc, int max)
{
	return (uint32_t)xrxe_tph_poll_cq(c, wc, max);
}

Test(transport_qp, reset_after_error_leaves_no_cqe_behind)
{
	struct xrxe_tph_pair p;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	static uint8_t buf[16384];
	uint32_t lka, lkb, ah;
	struct ibv_wc wc[16];
	struct xrxe_tph_qp *u, *v;
	struct xrxe_av av;

	cr_assert_eq(xrxe_tph_pair_init(&p, 12, IBV_QPT_RC, NULL, true), 0);
	lka = xrxe_tph_mr(&p.h.side[0], buf, 4096, IBV_ACCESS_LOCAL_WRITE, 0);
	lkb = xrxe_tph_mr(&p.h.side[1], buf + 4096, 4096, IBV_ACCESS_LOCAL_WRITE, 0);
	/* a UD QP of side 0 sharing A's CQ, sending to one of side 1 */
	u = xrxe_tph_qp_create(&p.h.side[0], IBV_QPT_UD, p.ca, p.ca, 16, 16, true);
	v = xrxe_tph_qp_create(&p.h.side[1], IBV_QPT_UD, p.cb, p.cb, 16, 16, true);
	cr_assert_eq(xrxe_tph_connect(u, v, &p.conn), 0);
	xrxe_tph_av(&p.h, 0, &av);
	cr_assert_eq(xrxe_tp_ah_create(p.h.side[0].tp, p.h.side[0].pdn, &av, &ah), 0);

	struct xrxe_sge sa = { (uintptr_t)buf, 64, lka }, sb = { (uintptr_t)buf + 4096, 4096, lkb };
	struct xrxe_sge bad = { (uintptr_t)buf + 4096, 4096, lkb + 0x100 }; /* no such MR */
	struct xrxe_sge ra = { (uintptr_t)buf + 8192, 4096, lka };
	struct xrxe_tph_send ud = { .wr_id = 100, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1,
				    .ah = ah, .rqpn = v->qpn, .rqkey = p.conn.qkey };

	cr_assert_eq(xrxe_tph_post_send(u, &ud), 0);
	cr_assert(xrxe_tph_run(&p.h, 1000000000ull));
	/* the error: B's receive names no MR; A also has a receive posted */
	cr_assert_eq(xrxe_tph_post_recv(p.b, 1, &bad, 1), 0);
	cr_assert_eq(xrxe_tph_post_recv(p.a, 2, &ra, 1), 0);
	cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
		.wr_id = 3, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1 }), 0);
	cr_assert(xrxe_tph_run(&p.h, 1000000000ull));
	cr_assert_eq(xrxe_tph_state(p.a), IBV_QPS_ERR);
	cr_assert_eq(xrxe_tph_state(p.b), IBV_QPS_ERR);
	ud.wr_id = 101;
	cr_assert_eq(xrxe_tph_post_send(u, &ud), 0);
	cr_assert(xrxe_tph_run(&p.h, 1000000000ull));
	cr_assert_geq(xrxe_tph_cq_count(p.ca), 4, "A's error and flush are in its CQ");

	/* back through RESET to RTS */
	cr_assert_eq(xrxe_tp_qp_modify(p.h.side[0].tp, p.a->qp, &a, IBV_QP_STATE, NULL), 0);
	cr_assert_eq(xrxe_tp_qp_modify(p.h.side[1].tp, p.b->qp, &a, IBV_QP_STATE, NULL), 0);
	p.a->sq_prod = p.a->rq_prod = p.b->sq_prod = p.b->rq_prod = 0;
	cr_assert_eq(ids_of(p.ca, wc, 16), 2, "only the UD QP's CQEs stay in A's CQ");
	cr_assert_eq(wc[0].wr_id, 100, "in order");
	cr_assert_eq(wc[1].wr_id, 101);
	cr_assert_eq(wc[0].qp_num, u->qpn);
	cr_assert_eq(ids_of(p.cb, wc, 16), 0, "nothing of B's stays in its CQ");
	cr_assert_eq(xrxe_tph_connect(p.a, p.b, &p.conn), 0);

	/* new work completes as it should, first in line */
	cr_assert_eq(xrxe_tph_post_recv(p.b, 11, &sb, 1), 0);
	cr_assert_eq(xrxe_tph_post_send(p.a, &(struct xrxe_tph_send){
		.wr_id = 12, .opcode = IBV_WR_SEND, .sge = &sa, .nsge = 1 }), 0);
	cr_assert(xrxe_tph_run(&p.h, 1000000000ull));
	cr_assert_eq(ids_of(p.ca, wc, 16), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].wr_id, 12);
	cr_assert_eq(ids_of(p.cb, wc, 16), 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].wr_id, 11);
	xrxe_tph_pair_fini(&p);
}

Test(transport_qp, objects_and_busy)
{
	struct xrxe_tph h;
	struct xrxe_tph_cq *c;
	struct xrxe_tph_qp *q;
	struct xrxe_tp_stats st;
	uint32_t pd2, lkey, rkey;
	static uint8_t buf[64];

	xrxe_tph_init(&h, 5, 4096);
	c = xrxe_tph_cq_create(&h.side[0], 64);
	q = xrxe_tph_qp_create(&h.side[0], IBV_QPT_RC, c, c, 8, 8, true);
	cr_assert_eq(xrxe_tp_cq_destroy(h.side[0].tp, c->cq), -EBUSY);
	cr_assert_eq(xrxe_tp_pd_free(h.side[0].tp, h.side[0].pdn), -EBUSY);
	cr_assert_eq(xrxe_tp_pd_alloc(h.side[0].tp, &pd2), 0);
	cr_assert_eq(xrxe_tp_mr_reg(h.side[0].tp, pd2, buf, (uintptr_t)buf, 64, 0, &lkey, &rkey), 0);
	cr_assert_eq(lkey, rkey);
	cr_assert_eq(xrxe_tp_pd_free(h.side[0].tp, pd2), -EBUSY);
	/* remote write without local write is refused (IBA 10.6.3) */
	cr_assert_eq(xrxe_tp_mr_reg(h.side[0].tp, pd2, buf, (uintptr_t)buf, 64,
				    IBV_ACCESS_REMOTE_WRITE, &lkey, &rkey), -EINVAL);
	cr_assert_eq(xrxe_tp_mr_dereg(h.side[0].tp, lkey), 0);
	cr_assert_eq(xrxe_tp_mr_dereg(h.side[0].tp, lkey), -EINVAL);
	cr_assert_eq(xrxe_tp_pd_free(h.side[0].tp, pd2), 0);
	xrxe_tp_get_stats(h.side[0].tp, &st);
	cr_assert_eq(st.qps, 1);
	cr_assert_eq(st.cqs, 1);
	cr_assert_eq(st.pds, 1);
	xrxe_tph_qp_destroy(q);
	xrxe_tph_fini(&h);
}
