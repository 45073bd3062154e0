// SPDX-License-Identifier: MIT
/* 24-bit PSN arithmetic (IBA 9.7.1): wrap at 2^24, order within half the space. */
#include <criterion/criterion.h>

#include "golden.h"
#include "xrxe/wire.h"

Test(psn, add_wraps_at_24_bits)
{
	cr_assert_eq(xrxe_psn_add(0xffffff, 1), 0);
	cr_assert_eq(xrxe_psn_add(0xfffffe, 5), 3);
	cr_assert_eq(xrxe_psn_add(0, 0x1000000), 0);
	cr_assert_eq(xrxe_psn_add(0x123456, 0), 0x123456);
	cr_assert_eq(xrxe_psn_add(0xffffff, 0xffffff), 0xfffffe);
	/* garbage above bit 23 never leaks out */
	cr_assert_eq(xrxe_psn_add(0xff000001, 1), 2);
}

Test(psn, sub_wraps)
{
	cr_assert_eq(xrxe_psn_sub(0, 1), 0xffffff);
	cr_assert_eq(xrxe_psn_sub(2, 0xfffffe), 4);
	cr_assert_eq(xrxe_psn_sub(7, 7), 0);
	cr_assert_eq(xrxe_psn_sub(0x800000, 0), 0x800000);
}

Test(psn, compare_across_the_wrap)
{
	cr_assert_eq(xrxe_psn_cmp(5, 5), 0);
	cr_assert_lt(xrxe_psn_cmp(4, 5), 0);
	cr_assert_gt(xrxe_psn_cmp(5, 4), 0);
	cr_assert_gt(xrxe_psn_cmp(0, 0xffffff), 0, "0 comes right after 0xffffff");
	cr_assert_lt(xrxe_psn_cmp(0xffffff, 0), 0);
	cr_assert_gt(xrxe_psn_cmp(3, 0xfffff0), 0);
	cr_assert_lt(xrxe_psn_cmp(0xfffff0, 3), 0);
	/* bits above 23 are ignored, as in rxe's psn_compare */
	cr_assert_eq(xrxe_psn_cmp(0x01000005, 5), 0);
}

Test(psn, half_space)
{
	/* up to 2^23 - 1 ahead is "after"; 2^23 ahead is the ambiguous point and,
	 * as in rxe, reads as "before" from both sides */
	cr_assert_gt(xrxe_psn_cmp(0x7fffff, 0), 0);
	cr_assert_lt(xrxe_psn_cmp(0, 0x7fffff), 0);
	cr_assert_lt(xrxe_psn_cmp(0x800000, 0), 0);
	cr_assert_lt(xrxe_psn_cmp(0, 0x800000), 0);
	cr_assert_lt(xrxe_psn_cmp(0x800001, 0), 0);
	cr_assert_gt(xrxe_psn_cmp(0, 0x800001), 0);
}

Test(psn, random_pairs_are_antisymmetric)
{
	uint64_t seed = 1;

	for (int i = 0; i < 100000; i++) {
		uint32_t a = (uint32_t)xrxe_test_rand(&seed) & XRXE_PSN_MASK;
		uint32_t d = 1 + (uint32_t)(xrxe_test_rand(&seed) % 0x7fffff); /* 1 .. 2^23-1 */
		uint32_t b = xrxe_psn_add(a, d);

		cr_assert_gt(xrxe_psn_cmp(b, a), 0, "%06x + %06x", a, d);
		cr_assert_lt(xrxe_psn_cmp(a, b), 0, "%06x + %06x", a, d);
		cr_assert_eq(xrxe_psn_sub(b, a), d);
		cr_assert_eq(xrxe_psn_add(b, 0x1000000 - d), a);
	}
}
