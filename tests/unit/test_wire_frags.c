// SPDX-License-Identifier: MIT
/*
 * Multi-buffer frames (AF_XDP XDP_USE_SG): the payload, the pad and even the
 * four ICRC bytes may straddle fragment boundaries; the headers may not.
 * Every golden frame is split at every possible point.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "xrxe/wire.h"

static void same_view(const struct xrxe_pkt *a, const struct xrxe_pkt *b, size_t frame, size_t k)
{
	if (a->len != b->len || a->ip_version != b->ip_version || a->l3_off != b->l3_off ||
	    a->l4_off != b->l4_off || a->bth_off != b->bth_off || a->payload_off != b->payload_off ||
	    a->payload_len != b->payload_len || a->pad != b->pad || a->opcode != b->opcode ||
	    a->op != b->op || a->icrc != b->icrc || a->has_vlan != b->has_vlan ||
	    memcmp(a->hdr_off, b->hdr_off, sizeof(a->hdr_off)))
		cr_assert_fail("frame %zu split at %zu: fragmented view differs", frame, k);
}

static void same_payload(const struct xrxe_pkt *frag, const struct xrxe_pkt *flat, size_t frame)
{
	uint8_t *buf = malloc(flat->payload_len + 1);

	cr_assert_eq(xrxe_pkt_copy_payload(frag, 0, buf, flat->payload_len), 0);
	if (memcmp(buf, flat->frag[0].data + flat->payload_off, flat->payload_len))
		cr_assert_fail("frame %zu: fragmented payload copy differs", frame);
	free(buf);
}

/* Split every frame at every k into [0,k) + [k,len). With `own`, each piece is
 * an exact-size heap copy, so ASan sees any read past a fragment. */
static void split_all(const char *file, bool own)
{
	struct xrxe_golden g;

	cr_assert_eq(xrxe_golden_load(file, &g), 0);
	for (size_t i = 0; i < g.count; i++) {
		uint8_t *f = g.frames[i].data;
		uint32_t len = g.frames[i].len, hdr_end;
		struct xrxe_pkt flat, pkt;

		cr_assert_eq(xrxe_parse(f, len, 0, &flat), XRXE_PARSE_OK);
		hdr_end = flat.bth_off + flat.op->length;
		for (uint32_t k = 0; k <= len; k++) {
			struct xrxe_frag fr[2];
			int rc;

			if (own) {
				fr[0] = (struct xrxe_frag){ xrxe_test_dup(f, k), k };
				fr[1] = (struct xrxe_frag){ xrxe_test_dup(f + k, len - k), len - k };
			} else {
				fr[0] = (struct xrxe_frag){ f, k };
				fr[1] = (struct xrxe_frag){ f + k, len - k };
			}
			rc = xrxe_parse_frags(fr, 2, 0, &pkt);
			if (k < hdr_end) {
				if (rc != XRXE_PARSE_FRAGMENTED_HDRS)
					cr_assert_fail("%s frame %zu split at %u (headers end at %u): %s",
						       file, i + 1, k, hdr_end, xrxe_parse_strerror(rc));
			} else {
				if (rc != XRXE_PARSE_OK)
					cr_assert_fail("%s frame %zu split at %u: %s", file, i + 1, k,
						       xrxe_parse_strerror(rc));
				same_view(&pkt, &flat, i + 1, k);
				if (!xrxe_icrc_verify(&pkt) || xrxe_icrc_frags(fr, 2, pkt.l3_off) != flat.icrc)
					cr_assert_fail("frame %zu split at %u: ICRC", i + 1, k);
				if (own || k % 61 == 0)
					same_payload(&pkt, &flat, i + 1);
				cr_assert_eq(xrxe_pkt_to_spec(&pkt, &(struct xrxe_pkt_spec){ 0 }), -EINVAL);
			}
			if (own) {
				free(fr[0].data);
				free(fr[1].data);
			}
		}
	}
	xrxe_golden_free(&g);
}

Test(frags, two_fragments_every_split_main, .timeout = 120)
{
	split_all(XRXE_GOLDEN_MAIN, true);
}

Test(frags, two_fragments_every_split_ipv6_rnr_loss, .timeout = 300)
{
	split_all(XRXE_GOLDEN_LOSS, false);
}

/* Three and four fragments, cut where it hurts: right after the headers, one
 * byte in, through the pad, through the trailer, with empty pieces. */
static void split_n(const uint8_t *f, uint32_t len, const uint32_t *cuts, unsigned ncuts,
		    const struct xrxe_pkt *flat, size_t frame)
{
	struct xrxe_frag fr[XRXE_MAX_FRAGS];
	struct xrxe_pkt pkt;
	uint32_t prev = 0;
	int rc;

	for (unsigned c = 0; c <= ncuts; c++) {
		uint32_t at = c < ncuts ? cuts[c] : len;

		/* short frames: keep the cuts ordered and inside the frame */
		if (at < prev)
			at = prev;
		if (at > len)
			at = len;

		fr[c] = (struct xrxe_frag){ xrxe_test_dup(f + prev, at - prev), at - prev };
		prev = at;
	}
	rc = xrxe_parse_frags(fr, ncuts + 1, 0, &pkt);
	cr_assert_eq(rc, XRXE_PARSE_OK, "frame %zu cuts %u,%u: %s", frame, cuts[0], cuts[1],
		     xrxe_parse_strerror(rc));
	same_view(&pkt, flat, frame, cuts[0]);
	same_payload(&pkt, flat, frame);
	cr_assert(xrxe_icrc_verify(&pkt));
	cr_assert_eq(xrxe_icrc_frags(fr, ncuts + 1, pkt.l3_off), flat->icrc);
	for (unsigned c = 0; c <= ncuts; c++)
		free(fr[c].data);
}

Test(frags, three_and_four_fragments)
{
	struct xrxe_golden g;

	cr_assert_eq(xrxe_golden_load(XRXE_GOLDEN_MAIN, &g), 0);
	for (size_t i = 0; i < g.count; i++) {
		uint8_t *f = g.frames[i].data;
		uint32_t len = g.frames[i].len, h;
		struct xrxe_pkt flat;

		cr_assert_eq(xrxe_parse(f, len, 0, &flat), XRXE_PARSE_OK);
		h = flat.bth_off + flat.op->length;
		const uint32_t three[][2] = {
			{ h, h + 1 },                  { h, len - 2 },     { h, len - 4 },
			{ h + (len - h) / 2, len - 3 }, { len - 3, len - 1 }, { len - 4, len - 4 },
			{ h, h },                      { len, len },       { len - 1, len },
		};
		const uint32_t four[][3] = {
			{ h, len - 3, len - 1 },
			{ h, h + (len - h) / 3, len - 2 },
			{ h + 1, len - 2, len - 2 },
		};
		for (size_t c = 0; c < sizeof(three) / sizeof(three[0]); c++)
			split_n(f, len, three[c], 2, &flat, i + 1);
		for (size_t c = 0; c < sizeof(four) / sizeof(four[0]); c++)
			split_n(f, len, four[c], 3, &flat, i + 1);
	}
	xrxe_golden_free(&g);
}

Test(frags, bad_fragment_lists)
{
	uint8_t f[64] = { 0 };
	struct xrxe_frag fr[XRXE_MAX_FRAGS + 1];
	struct xrxe_pkt pkt;

	for (int i = 0; i <= XRXE_MAX_FRAGS; i++)
		fr[i] = (struct xrxe_frag){ f, 10 };
	cr_assert_eq(xrxe_parse_frags(fr, 0, 0, &pkt), XRXE_PARSE_BAD_FRAGS);
	cr_assert_eq(xrxe_parse_frags(fr, XRXE_MAX_FRAGS + 1, 0, &pkt), XRXE_PARSE_BAD_FRAGS);
	cr_assert_eq(xrxe_parse_frags(NULL, 1, 0, &pkt), XRXE_PARSE_BAD_FRAGS);
	fr[1].data = NULL;
	cr_assert_eq(xrxe_parse_frags(fr, 2, 0, &pkt), XRXE_PARSE_BAD_FRAGS);
	cr_assert_str_eq(xrxe_parse_strerror(XRXE_PARSE_BAD_FRAGS), "bad-frags");
	cr_assert_str_eq(xrxe_parse_strerror(XRXE_PARSE_FRAGMENTED_HDRS), "fragmented-hdrs");
}

Test(frags, build_finish_over_fragments)
{
	/* A sender may scatter the payload over UMEM chunks: finishing in place
	 * over the fragments gives the same bytes as a contiguous build. */
	static uint8_t payload[3000];
	uint64_t seed = 7;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)xrxe_test_rand(&seed);
	for (int v = 4; v <= 6; v += 2) {
		for (int csum = 0; csum < 2; csum++) {
			for (uint32_t plen = 1; plen < sizeof(payload); plen += 331) {
				struct xrxe_pkt_spec s = {
					.ip_version = (uint8_t)v, .ttl = 9, .udp_csum = csum,
					.opcode = XRXE_OPCODE(RC, SEND_ONLY), .pkey = 0xffff,
					.dest_qp = 77, .psn = 5, .payload = payload, .payload_len = plen,
				};
				uint8_t want[3200], got[3200];
				int n = xrxe_build(want, sizeof(want), &s);
				size_t l3 = 14;

				cr_assert_gt(n, 0);
				int hdr = (int)xrxe_build_hdr_len(&s);

				/* the headers stay in the first fragment */
				for (uint32_t k1 = (uint32_t)hdr; k1 < (uint32_t)n; k1 += 97) {
					uint32_t k2 = k1 + ((uint32_t)n - k1) / 2;
					int off = xrxe_build_headers(got, sizeof(got), &s);
					struct xrxe_frag fr[3];

					cr_assert_eq(off, hdr);
					memcpy(got + off, payload, plen);
					memset(got + off + plen, 0xaa, (size_t)n - off - plen); /* junk pad+ICRC */
					fr[0] = (struct xrxe_frag){ xrxe_test_dup(got, k1), k1 };
					fr[1] = (struct xrxe_frag){ xrxe_test_dup(got + k1, k2 - k1), k2 - k1 };
					fr[2] = (struct xrxe_frag){ xrxe_test_dup(got + k2, n - k2), n - k2 };
					xrxe_build_finish_frags(fr, 3, l3);
					memcpy(got, fr[0].data, fr[0].len);
					memcpy(got + k1, fr[1].data, fr[1].len);
					memcpy(got + k2, fr[2].data, fr[2].len);
					cr_assert_arr_eq(got, want, (size_t)n, "v%d csum %d plen %u split %u",
							 v, csum, plen, k1);
					for (int c = 0; c < 3; c++)
						free(fr[c].data);
				}
			}
		}
	}
}
