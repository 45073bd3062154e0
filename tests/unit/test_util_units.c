// SPDX-License-Identifier: MIT
/*
 * tc-style quantities on xrxe-impair's command line (src/util/units.c): the
 * values tc(8) gives its units, strictness (no signs, hex, exponents, junk),
 * and the range limits.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "util/units.h"

#define MAX_RATE 12500000000ull /* 100 Gbit/s in bytes per second */

Test(units, percent)
{
	uint32_t ppm;

	cr_assert_eq(xrxe_parse_percent_ppm("10", &ppm), 0);
	cr_assert_eq(ppm, 100000);
	cr_assert_eq(xrxe_parse_percent_ppm("0.1%", &ppm), 0);
	cr_assert_eq(ppm, 1000);
	cr_assert_eq(xrxe_parse_percent_ppm("100", &ppm), 0);
	cr_assert_eq(ppm, 1000000);
	cr_assert_eq(xrxe_parse_percent_ppm("0", &ppm), 0);
	cr_assert_eq(ppm, 0);
	cr_assert_eq(xrxe_parse_percent_ppm(".5", &ppm), 0);
	cr_assert_eq(ppm, 5000);
	cr_assert_eq(xrxe_parse_percent_ppm("0.00001", &ppm), 0); /* below 1 ppm: rounds to 0 */
	cr_assert_eq(ppm, 0);
	cr_assert_eq(xrxe_parse_percent_ppm("100.01", &ppm), -ERANGE);
	const char *bad[] = { "", "-1", "+1", "1e1", "0x10", "inf", "nan", "1%%", "1 ", "ten", ".", "%" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(xrxe_parse_percent_ppm(bad[i], &ppm), -EINVAL, "'%s'", bad[i]);
}

Test(units, rate)
{
	uint64_t r;

	cr_assert_eq(xrxe_parse_rate("10gbit", MAX_RATE, &r), 0);
	cr_assert_eq(r, 1250000000ull);
	cr_assert_eq(xrxe_parse_rate("800mbit", MAX_RATE, &r), 0);
	cr_assert_eq(r, 100000000ull);
	cr_assert_eq(xrxe_parse_rate("1.5Gbit", MAX_RATE, &r), 0);
	cr_assert_eq(r, 187500000ull);
	cr_assert_eq(xrxe_parse_rate("125mbps", MAX_RATE, &r), 0); /* bytes per second, as tc */
	cr_assert_eq(r, 125000000ull);
	cr_assert_eq(xrxe_parse_rate("1kibit", MAX_RATE, &r), 0);
	cr_assert_eq(r, 128);
	cr_assert_eq(xrxe_parse_rate("8000", MAX_RATE, &r), 0); /* bare number: bits, as tc */
	cr_assert_eq(r, 1000);
	cr_assert_eq(xrxe_parse_rate("100gbit", MAX_RATE, &r), 0);
	cr_assert_eq(xrxe_parse_rate("100.1gbit", MAX_RATE, &r), -ERANGE);
	cr_assert_eq(xrxe_parse_rate("0gbit", MAX_RATE, &r), -ERANGE);
	cr_assert_eq(xrxe_parse_rate("1bit", MAX_RATE, &r), -ERANGE); /* rounds to 0 B/s */
	cr_assert_eq(xrxe_parse_rate("5furlongs", MAX_RATE, &r), -EINVAL);
	cr_assert_eq(xrxe_parse_rate("-1gbit", MAX_RATE, &r), -EINVAL);
	cr_assert_eq(xrxe_parse_rate("gbit", MAX_RATE, &r), -EINVAL);
}

Test(units, size)
{
	uint64_t b;

	cr_assert_eq(xrxe_parse_size("1500", 1ull << 30, &b), 0);
	cr_assert_eq(b, 1500);
	cr_assert_eq(xrxe_parse_size("30kb", 1ull << 30, &b), 0);
	cr_assert_eq(b, 30720);
	cr_assert_eq(xrxe_parse_size("1m", 1ull << 30, &b), 0);
	cr_assert_eq(b, 1048576);
	cr_assert_eq(xrxe_parse_size("8kbit", 1ull << 30, &b), 0);
	cr_assert_eq(b, 1024);
	cr_assert_eq(xrxe_parse_size("1gb", 1ull << 30, &b), 0);
	cr_assert_eq(xrxe_parse_size("1.1gb", 1ull << 30, &b), -ERANGE);
	cr_assert_eq(xrxe_parse_size("12parsecs", 1ull << 30, &b), -EINVAL);
}

Test(units, format_rate)
{
	char buf[32];

	xrxe_format_rate(buf, sizeof(buf), 1250000000ull);
	cr_assert_str_eq(buf, "10gbit");
	xrxe_format_rate(buf, sizeof(buf), 100000000ull);
	cr_assert_str_eq(buf, "800mbit");
	xrxe_format_rate(buf, sizeof(buf), 12);
	cr_assert_str_eq(buf, "96bit");
}
