/* SPDX-License-Identifier: MIT */
/*
 * What our verbs test programs share besides verbs: the failure exit (the
 * message names the program: define TEST_PROG before including this) and a
 * monotonic clock in milliseconds for their deadlines.
 */
#ifndef XRXE_TESTS_VERBS_TEST_PROG_H
#define XRXE_TESTS_VERBS_TEST_PROG_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, TEST_PROG ": FAIL: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif
