// SPDX-License-Identifier: MIT
/*
 * A READ response re-checks the region for every packet (src/transport/
 * resp.c send_read_one, as rxe's rxe_recheck_mr): a region deregistered
 * while its READ response is being sent is not read any more, and the
 * requester gets IBV_WC_REM_ACCESS_ERR instead of bytes from memory the
 * application has already taken back. Without the re-check this test sees
 * a successful READ carrying the bytes written after the deregistration.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"

#define LEN (256 * 1024) /* 256 response packets at MTU 1024 */

Test(mr_recheck, read_response_stops_at_dereg)
{
	const uint32_t all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct xrxe_tph_pair *p = calloc(1, sizeof(*p));
	uint8_t *src = aligned_alloc(4096, LEN), *dst = aligned_alloc(4096, LEN);
	uint32_t lkey, rkey;
	struct ibv_wc wc;
	unsigned steps = 0;
	int n = 0;

	cr_assert(p && src && dst);
	memset(src, 0xab, LEN);
	memset(dst, 0, LEN);
	cr_assert_eq(xrxe_tph_pair_init(p, 7, IBV_QPT_RC, NULL, true), 0);
	lkey = xrxe_tph_mr(&p->h.side[0], dst, LEN, all, 0);
	rkey = xrxe_tph_mr(&p->h.side[1], src, LEN, all, 0);
	struct xrxe_sge sge = { .addr = (uintptr_t)dst, .length = LEN, .lkey = lkey };
	struct xrxe_tph_send w = { .wr_id = 1, .opcode = IBV_WR_RDMA_READ, .sge = &sge,
				   .nsge = 1, .raddr = (uintptr_t)src, .rkey = rkey,
				   .flags = IBV_SEND_SIGNALED };

	cr_assert_eq(xrxe_tph_post_send(p->a, &w), 0);
	/* until the responder has started the response, but not finished it */
	while (p->h.delivered < 4 && steps++ < 1000)
		xrxe_tph_step(&p->h);
	cr_assert_lt(steps, 1000, "the READ response never started");
	/* the application takes its memory back mid-transfer */
	cr_assert_eq(xrxe_tp_mr_dereg(p->h.side[1].tp, rkey), 0);
	memset(src, 0xee, LEN);
	xrxe_tph_run(&p->h, 10ull * 1000 * 1000 * 1000);
	n = xrxe_tph_poll_cq(p->ca, &wc, 1);
	cr_assert_eq(n, 1);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR,
		     "a READ of a region deregistered mid-response completed with status %d",
		     wc.status);
	for (size_t i = 0; i < LEN; i++)
		cr_assert_neq(dst[i], 0xee, "byte %zu was read after the deregistration", i);
	xrxe_tph_pair_fini(p);
	free(p);
	free(src);
	free(dst);
}
