// SPDX-License-Identifier: MIT
/*
 * Timers as deadlines. The core never reads a clock: every entry point gets
 * the current time, deadlines are absolute, xrxe_tp_next_deadline reports the
 * earliest one and xrxe_tp_poll fires what has expired.
 *
 * Per QP there are three: the local ACK timeout (retransmission), the RNR
 * wait and the adaptive retransmission's fast timer (rto.c). rxe keeps the
 * first two as kernel timers (docs/facts/rxe.md §2.4); here they are u64 fields
 * the protocol code sets directly, and sched.c files each QP in a min-heap
 * under the earliest of them (and of its DCQCN timers) after every packet,
 * poll and modify -- the only times they change -- so the device-wide
 * minimum is the heap's top, whatever the number of idle QPs.
 */
#include "transport/tp_internal.h"

/* IBA 9.7.6.1.3 / 11.2.4.2 (Local ACK Timeout attribute): 4.096 us * 2^timeout;
 * 0 means the timer is disabled (infinite). Values above 31 are rejected at
 * modify time (rxe_qp_chk_attr), so the shift cannot overflow. */
uint64_t xrxe_tpi_ack_timeout_ns(uint8_t timeout)
{
	if (timeout == 0 || timeout > 31)
		return XRXE_TP_NO_DEADLINE;
	return 4096ull << timeout;
}

/* IBA 9.7.5.2.8 table 45 (RNR NAK timer field encoding), in microseconds.
 * rxe's rnrnak_usec[] has 61410 for code 25 (docs/facts/rxe.md §2.4, a typo of
 * 61.44 ms); we use the spec value 61440. */
static const uint32_t rnr_usec[32] = {
	655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,    320,
	480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
	20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint64_t xrxe_tpi_rnr_timeout_ns(uint8_t code)
{
	return (uint64_t)rnr_usec[code & 0x1f] * 1000;
}

void xrxe_tpi_timer_arm_rexmit(struct xrxe_tp_qp *qp)
{
	uint64_t t = xrxe_tpi_ack_timeout_ns(qp->attr.timeout);

	if (t == XRXE_TP_NO_DEADLINE || qp->type != IBV_QPT_RC)
		return;
	qp->comp.rexmit_deadline = qp->tp->now + t;
}

void xrxe_tpi_timer_stop_rexmit(struct xrxe_tp_qp *qp)
{
	qp->comp.rexmit_deadline = XRXE_TP_NO_DEADLINE;
}

uint64_t xrxe_tpi_qp_deadline(const struct xrxe_tp_qp *qp)
{
	uint64_t d = qp->comp.rexmit_deadline;

	if (qp->comp.rnr_deadline < d)
		d = qp->comp.rnr_deadline;
	if (qp->comp.fast_deadline < d)
		d = qp->comp.fast_deadline;
	return d;
}
