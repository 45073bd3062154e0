// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the CM MAD codec (src/cm/mad.c): hostile MADs from
 * QP1 of any peer.
 *
 * For every input:
 *  - xrxe_cm_mad_parse and xrxe_cma_hdr_parse never read out of bounds (ASan;
 *    libFuzzer hands over an exact-size buffer) or hit UB (UBSan), and an
 *    error is one of the named ones;
 *  - a MAD that parses and has a body rebuilds, and the rebuilt MAD parses to
 *    the same message and equals the input with its reserved bits cleared;
 *  - a cma header that parses rebuilds into one that parses the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/mad.h"

#define CHECK(cond)                                                                       \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "fuzz_cm_mad: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                          \
		}                                                                         \
	} while (0)

/* The bits of a MAD some field covers, bit by bit (not the codec's way). */
static void mask_of(const struct xrxe_cm_field *f, size_t n, unsigned base,
		    uint8_t mask[XRXE_MAD_SIZE])
{
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < f[i].width; k++) {
			unsigned b = (base + f[i].byte) * 8 + f[i].bit + k;

			mask[b / 8] |= (uint8_t)(0x80 >> (b % 8));
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xrxe_cm_msg m, again;
	struct xrxe_cma_hdr h, h2;
	enum xrxe_mad_error e;
	uint8_t out[XRXE_MAD_SIZE], out2[XRXE_MAD_SIZE];
	uint8_t cma[XRXE_CMA_HDR_SIZE];

	e = xrxe_cm_mad_parse(data, size, &m);
	CHECK((unsigned)e < XRXE_MAD_ERROR_COUNT);
	CHECK((e == XRXE_MAD_ERR_TRUNCATED) == (size < XRXE_MAD_SIZE));
	if (e == XRXE_MAD_OK) {
		const struct xrxe_cm_field *f;
		size_t n, hn;

		f = xrxe_cm_fields(m.hdr.attr_id, &n);
		CHECK((xrxe_cm_mad_build(&m, out) == 0) == (f != NULL));
		if (f) {
			uint8_t mask[XRXE_MAD_SIZE] = { 0 };

			mask_of(xrxe_mad_hdr_fields(&hn), hn, 0, mask);
			mask_of(f, n, XRXE_MAD_HDR_SIZE, mask);
			for (unsigned i = 0; i < XRXE_MAD_SIZE; i++)
				CHECK(out[i] == (data[i] & mask[i]));
			CHECK(xrxe_cm_mad_parse(out, sizeof(out), &again) == XRXE_MAD_OK);
			CHECK(memcmp(&m, &again, sizeof(m)) == 0);
			CHECK(xrxe_cm_mad_build(&again, out2) == 0);
			CHECK(memcmp(out, out2, sizeof(out)) == 0);
		}
	}

	if (xrxe_cma_hdr_parse(data, size, &h) == 0) {
		CHECK(size >= XRXE_CMA_HDR_SIZE);
		CHECK(h.ip_version == 4 || h.ip_version == 6);
		xrxe_cma_hdr_build(&h, cma);
		CHECK(xrxe_cma_hdr_parse(cma, sizeof(cma), &h2) == 0);
		CHECK(memcmp(&h, &h2, sizeof(h)) == 0);
	}
	return 0;
}
