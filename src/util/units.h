/* SPDX-License-Identifier: MIT */
/*
 * Command-line quantities in tc's spelling: percentages ("1", "0.1%"), rates
 * ("10gbit", "800mbit", "125mbps") and sizes ("30kb", "1500"). Strict: the
 * whole string must be a plain decimal number and a known unit, no sign, no
 * hexadecimal, no exponent, no "inf"/"nan". Each returns 0, -EINVAL (not a
 * number or unknown unit) or -ERANGE (outside the documented range).
 */
#ifndef XRXE_UTIL_UNITS_H
#define XRXE_UTIL_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* 0..100 percent, optional trailing '%', in parts per million (1% = 10000);
 * more than 4 decimals are rounded to the nearest ppm. */
int xrxe_parse_percent_ppm(const char *s, uint32_t *ppm);

/* tc-style rate (tc(8) "RATES"): bit kbit mbit gbit tbit (SI, bits/s),
 * kibit mibit gibit tibit (IEC), bps kbps mbps gbps tbps (bytes/s), and the
 * same with IEC prefixes (kibps ...). A bare number is bits/s, as in tc.
 * Result in bytes per second, rounded; 1 B/s .. max_bytes_per_s. */
int xrxe_parse_rate(const char *s, uint64_t max_bytes_per_s, uint64_t *bytes_per_s);

/* tc-style size (tc(8) "SIZES"): b (or none), k/kb, m/mb, g/gb (1024-based,
 * as tc), kbit mbit gbit (bits, 1024-based). 0 .. max_bytes. */
int xrxe_parse_size(const char *s, uint64_t max_bytes, uint64_t *bytes);

/* "1.5gbit", "800mbit", "12kbit", "96bit" from bytes per second. */
void xrxe_format_rate(char *buf, size_t size, uint64_t bytes_per_s);

#endif /* XRXE_UTIL_UNITS_H */
