// SPDX-License-Identifier: MIT
/*
 * DCQCN notification point limiter (docs/facts/dcqcn.md §1.2): NVIDIA's
 * np_min_time_between_cnps, per QP. Unlike the DCQCN author's simulator,
 * which polls every 50 us and so delays the first CNP by up to a window, the
 * first mark after a quiet interval is answered at once; marks within the
 * interval are only counted.
 */
#include "transport/dcqcn.h"

bool xrxe_np_ce(struct xrxe_np *np, uint64_t min_gap_ns, uint64_t now)
{
	/* now may lie a little before the last CNP's time: packets are timed
	 * by their arrival, and those of one burst are read in any order
	 * across queues */
	if (np->sent && now < np->last + min_gap_ns)
		return false;
	np->sent = true;
	np->last = now;
	return true;
}
