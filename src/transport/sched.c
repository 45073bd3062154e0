// SPDX-License-Identifier: MIT
/*
 * Which QPs xrxe_tp_poll visits. A pass touches only QPs with work, so its
 * cost follows the work, not the number of QPs (65 536 idle connected QPs
 * cost nothing per pass):
 *
 *   - the run queue, a FIFO of QPs that have something to do. A QP joins it
 *     when the application rings its doorbell (xrxe_tp_qp_doorbell: new send
 *     WQEs), when a packet for it arrives (responses owed, the window opened,
 *     a retry), when one of its deadlines expires, when the pacer releases
 *     it, and on every modify. After its turn (at most TP_POLL_BUDGET packets
 *     each way, tp.c) it goes to the back if it did anything or still has
 *     startable WQEs, so a QP with work waits at most one round of the QPs
 *     that have work too, never behind idle ones (fairness);
 *   - the timer heap, a binary min-heap of the QPs that have a deadline armed
 *     (local ACK timeout, RNR wait, fast retry -- timer.c, rto.c -- and the
 *     DCQCN rate timers, cc.c), keyed by the earliest. Deadlines are fields
 *     the requester, completer and CC code set directly; they only change
 *     while the QP is being served (a packet, its poll, a modify), so the QP
 *     is filed again (rearm) after each of those: O(log n) and no hooks in
 *     the protocol code;
 *   - the pacer's timing wheel (pacer.c) stays as it is for pacing release
 *     times; what it releases is kicked onto the run queue.
 */
#include <stddef.h>

#include "transport/tp_internal.h"

/* --- run queue ---------------------------------------------------------------- */

void xrxe_tpi_sched_kick(struct xrxe_tp_qp *qp)
{
	struct xrxe_tp *tp = qp->tp;

	if (qp->on_runq)
		return;
	qp->on_runq = true;
	qp->run_next = NULL;
	qp->run_prev = tp->run_tail;
	if (tp->run_tail)
		tp->run_tail->run_next = qp;
	else
		tp->run_head = qp;
	tp->run_tail = qp;
	tp->run_len++;
}

static void runq_unlink(struct xrxe_tp_qp *qp)
{
	struct xrxe_tp *tp = qp->tp;

	if (!qp->on_runq)
		return;
	if (qp->run_prev)
		qp->run_prev->run_next = qp->run_next;
	else
		tp->run_head = qp->run_next;
	if (qp->run_next)
		qp->run_next->run_prev = qp->run_prev;
	else
		tp->run_tail = qp->run_prev;
	qp->run_next = qp->run_prev = NULL;
	qp->on_runq = false;
	tp->run_len--;
}

struct xrxe_tp_qp *xrxe_tpi_sched_pop(struct xrxe_tp *tp)
{
	struct xrxe_tp_qp *qp = tp->run_head;

	if (qp)
		runq_unlink(qp);
	return qp;
}

/* --- timer heap ------------------------------------------------------------------ */

static void heap_set(struct xrxe_tp *tp, uint32_t pos, struct xrxe_tp_qp *qp)
{
	tp->theap[pos] = qp;
	qp->theap_pos = pos;
}

static void heap_up(struct xrxe_tp *tp, uint32_t pos)
{
	struct xrxe_tp_qp *qp = tp->theap[pos];

	while (pos > 1 && tp->theap[pos / 2]->theap_key > qp->theap_key) {
		heap_set(tp, pos, tp->theap[pos / 2]);
		pos /= 2;
	}
	heap_set(tp, pos, qp);
}

static void heap_down(struct xrxe_tp *tp, uint32_t pos)
{
	struct xrxe_tp_qp *qp = tp->theap[pos];
	uint32_t c;

	while ((c = pos * 2) <= tp->theap_n) {
		if (c < tp->theap_n && tp->theap[c + 1]->theap_key < tp->theap[c]->theap_key)
			c++;
		if (tp->theap[c]->theap_key >= qp->theap_key)
			break;
		heap_set(tp, pos, tp->theap[c]);
		pos = c;
	}
	heap_set(tp, pos, qp);
}

static void heap_remove(struct xrxe_tp *tp, struct xrxe_tp_qp *qp)
{
	uint32_t pos = qp->theap_pos;
	struct xrxe_tp_qp *last;

	if (!pos)
		return;
	qp->theap_pos = 0;
	last = tp->theap[tp->theap_n--];
	if (last == qp)
		return;
	heap_set(tp, pos, last);
	heap_up(tp, pos);
	heap_down(tp, last->theap_pos);
}

uint64_t xrxe_tpi_qp_next_deadline(const struct xrxe_tp_qp *qp)
{
	uint64_t d = XRXE_TP_NO_DEADLINE, c;

	/* as xrxe_tp_poll serves them (tp.c qp_poll): the completer's timers
	 * in RTS/SQD, the CC timers from RTR on */
	if (qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD)
		d = xrxe_tpi_qp_deadline(qp);
	if (qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD) {
		c = xrxe_tpi_cc_deadline(qp);
		if (c < d)
			d = c;
	}
	return d;
}

void xrxe_tpi_sched_rearm(struct xrxe_tp_qp *qp)
{
	struct xrxe_tp *tp = qp->tp;
	uint64_t d = xrxe_tpi_qp_next_deadline(qp);

	if (d == XRXE_TP_NO_DEADLINE) {
		heap_remove(tp, qp);
		return;
	}
	if (qp->theap_pos) {
		uint64_t old = qp->theap_key;

		qp->theap_key = d;
		if (d < old)
			heap_up(tp, qp->theap_pos);
		else if (d > old)
			heap_down(tp, qp->theap_pos);
		return;
	}
	/* the heap has max_qp + 1 slots (tp.c): one per QP, never full */
	qp->theap_key = d;
	tp->theap_n++;
	heap_set(tp, tp->theap_n, qp);
	heap_up(tp, tp->theap_n);
}

void xrxe_tpi_sched_forget(struct xrxe_tp_qp *qp)
{
	runq_unlink(qp);
	heap_remove(qp->tp, qp);
}

static void pacer_released(void *arg, struct xrxe_pacer_entry *e)
{
	struct xrxe_tp_qp *qp =
		(struct xrxe_tp_qp *)((char *)e - offsetof(struct xrxe_tp_qp, cc.wait));

	(void)arg;
	xrxe_tpi_sched_kick(qp);
}

void xrxe_tpi_sched_expire(struct xrxe_tp *tp, uint64_t now)
{
	/* An expired QP leaves the heap; its poll files it again under its
	 * next deadline (tp.c). */
	while (tp->theap_n && tp->theap[1]->theap_key <= now) {
		struct xrxe_tp_qp *qp = tp->theap[1];

		heap_remove(tp, qp);
		xrxe_tpi_sched_kick(qp);
	}
	/* CC hook: QPs whose release time has come leave the wheel; their
	 * pacer gate opens when they are polled */
	xrxe_pacer_expire(&tp->pacer, now, pacer_released, NULL);
}

uint64_t xrxe_tpi_sched_next(const struct xrxe_tp *tp)
{
	return tp->theap_n ? tp->theap[1]->theap_key : XRXE_TP_NO_DEADLINE;
}
