/* SPDX-License-Identifier: MIT */
/*
 * Test helpers: the golden captures of kernel rxe (the pcap files in tests/golden),
 * loaded into exact-size heap buffers so that AddressSanitizer catches any
 * read past a frame's end.
 */
#ifndef XRXE_TEST_GOLDEN_H
#define XRXE_TEST_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#define XRXE_GOLDEN_MAIN "rxe-golden.pcap"         /* 168 frames, IPv4 */
#define XRXE_GOLDEN_LOSS "rxe-ipv6-rnr-loss.pcap"  /* 4792 frames, IPv4 + IPv6 */
#define XRXE_GOLDEN_CM "rxe-cm.pcap"              /* 193 frames, kernel rdma_cm MADs + traffic */

struct xrxe_golden_frame {
	uint8_t *data;
	uint32_t len;
};

struct xrxe_golden {
	struct xrxe_golden_frame *frames;
	size_t count;
};

/* $XRXE_GOLDEN_DIR, else tests/golden (tests run from the repo root). */
const char *xrxe_golden_dir(void);

/* Load every frame of one capture; 0 or -errno (the reason is printed). */
int xrxe_golden_load(const char *file, struct xrxe_golden *g);
void xrxe_golden_free(struct xrxe_golden *g);

/* A heap copy of exactly len bytes (ASan-bounded); the caller frees it. */
uint8_t *xrxe_test_dup(const void *src, size_t len);

/* Hex string ("e4 1d 2d ...", spaces ignored) to bytes; returns the length. */
size_t xrxe_test_unhex(const char *hex, uint8_t *out, size_t cap);

/* Deterministic PRNG for reproducible "random" field values. */
uint64_t xrxe_test_rand(uint64_t *state);

#endif /* XRXE_TEST_GOLDEN_H */
