// SPDX-License-Identifier: MIT
#include "util/units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A plain decimal ("12", "0.5", "3.") at the start of s: its value and where
 * it ends. strtod alone would also take "-1", "0x10", "1e3", "inf". */
static int parse_decimal(const char *s, double *value, const char **end)
{
	size_t int_digits = strspn(s, "0123456789"), frac_digits = 0, n = int_digits;
	char buf[64];

	if (s[n] == '.') {
		frac_digits = strspn(s + n + 1, "0123456789");
		n += 1 + frac_digits;
	}
	if (int_digits + frac_digits == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*value = strtod(buf, NULL);
	*end = s + n;
	return 0;
}

struct unit {
	const char *name;
	double factor;
};

static int find_unit(const struct unit *units, size_t n, const char *name, double *factor)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcasecmp(units[i].name, name)) {
			*factor = units[i].factor;
			return 0;
		}
	}
	return -EINVAL;
}

int xrxe_parse_percent_ppm(const char *s, uint32_t *ppm)
{
	const char *end;
	double v;

	if (!s || parse_decimal(s, &v, &end))
		return -EINVAL;
	if (*end == '%')
		end++;
	if (*end)
		return -EINVAL;
	if (v > 100.0)
		return -ERANGE;
	*ppm = (uint32_t)(v * 10000.0 + 0.5); /* v >= 0: rounds to nearest */
	return 0;
}

int xrxe_parse_rate(const char *s, uint64_t max_bytes_per_s, uint64_t *bytes_per_s)
{
	static const struct unit units[] = {
		{ "", 1.0 / 8 },        { "bit", 1.0 / 8 },
		{ "kbit", 1e3 / 8 },    { "mbit", 1e6 / 8 },
		{ "gbit", 1e9 / 8 },    { "tbit", 1e12 / 8 },
		{ "kibit", 1024.0 / 8 }, { "mibit", 1048576.0 / 8 },
		{ "gibit", 1073741824.0 / 8 }, { "tibit", 1099511627776.0 / 8 },
		{ "bps", 1 },           { "kbps", 1e3 },
		{ "mbps", 1e6 },        { "gbps", 1e9 },
		{ "tbps", 1e12 },       { "kibps", 1024.0 },
		{ "mibps", 1048576.0 }, { "gibps", 1073741824.0 },
		{ "tibps", 1099511627776.0 },
	};
	const char *end;
	double v, f;

	if (!s || parse_decimal(s, &v, &end) ||
	    find_unit(units, sizeof(units) / sizeof(units[0]), end, &f))
		return -EINVAL;
	v = v * f + 0.5; /* v >= 0: truncating after + 0.5 rounds (no libm) */
	if (v < 1 || v >= (double)max_bytes_per_s + 1)
		return -ERANGE;
	*bytes_per_s = (uint64_t)v;
	return 0;
}

int xrxe_parse_size(const char *s, uint64_t max_bytes, uint64_t *bytes)
{
	static const struct unit units[] = {
		{ "", 1 },          { "b", 1 },
		{ "k", 1024 },      { "kb", 1024 },
		{ "m", 1048576 },   { "mb", 1048576 },
		{ "g", 1073741824 }, { "gb", 1073741824 },
		{ "kbit", 1024.0 / 8 }, { "mbit", 1048576.0 / 8 },
		{ "gbit", 1073741824.0 / 8 },
	};
	const char *end;
	double v, f;

	if (!s || parse_decimal(s, &v, &end) ||
	    find_unit(units, sizeof(units) / sizeof(units[0]), end, &f))
		return -EINVAL;
	v = v * f + 0.5;
	if (v >= (double)max_bytes + 1)
		return -ERANGE;
	*bytes = (uint64_t)v;
	return 0;
}

void xrxe_format_rate(char *buf, size_t size, uint64_t bytes_per_s)
{
	static const struct {
		const char *name;
		double bits;
	} steps[] = { { "tbit", 1e12 }, { "gbit", 1e9 }, { "mbit", 1e6 }, { "kbit", 1e3 } };
	double bits = (double)bytes_per_s * 8;

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (bits >= steps[i].bits) {
			snprintf(buf, size, "%.6g%s", bits / steps[i].bits, steps[i].name);
			return;
		}
	}
	snprintf(buf, size, "%.6gbit", bits);
}
