// SPDX-License-Identifier: MIT
/*
 * L_Keys/R_Keys cannot be guessed (src/transport/mr.c): a region's key is a
 * random free slot with a random key byte, not the next index in turn, and a
 * key just deregistered is not handed out again at once. Two transports with
 * different seeds (the daemon seeds from getrandom) give different keys.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "transport/transport.h"

/* No frame is ever sent here: registrations only. */
static int no_reserve(void *user, uint32_t len, struct xrxe_tp_txbuf *buf)
{
	(void)user;
	(void)len;
	(void)buf;
	return -ENOBUFS;
}

static void no_submit(void *user, struct xrxe_tp_txbuf *buf)
{
	(void)user;
	(void)buf;
}

static const struct xrxe_tp_ops no_ops = { .tx_reserve = no_reserve, .tx_submit = no_submit };

static struct xrxe_tp *tp_new(uint64_t seed)
{
	struct xrxe_tp_config cfg = {
		.ops = &no_ops, .max_path_mtu = 1024, .max_qp = 64, .max_mr = 4096,
		.key_seed = seed,
	};
	struct xrxe_tp *tp;

	cr_assert_eq(xrxe_tp_create(&cfg, &tp), 0);
	return tp;
}

#define N 256

Test(keys, not_in_turn_and_not_reused_at_once)
{
	static uint8_t buf[64];
	struct xrxe_tp *tp = tp_new(12345);
	uint32_t pdn, lkey[N], rkey, in_turn = 0;

	cr_assert_eq(xrxe_tp_pd_alloc(tp, &pdn), 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(xrxe_tp_mr_reg(tp, pdn, buf, 0, sizeof(buf), 0, &lkey[i], &rkey), 0);
		cr_assert_eq(lkey[i], rkey);
		for (int j = 0; j < i; j++)
			cr_assert_neq(lkey[i], lkey[j], "key %#x handed out twice", lkey[i]);
		/* rxe's old scheme: the next index, key byte unchanged */
		if (i && (lkey[i] >> 8) == (lkey[i - 1] >> 8) + 1)
			in_turn++;
	}
	/* with 4096 slots drawn at random, a handful of neighbours at most */
	cr_assert_lt(in_turn, N / 8, "%u of %d keys followed their predecessor", in_turn, N);
	/* dereg + reg, many times: the freed key never comes straight back */
	for (int i = 0; i < 4 * N; i++) {
		uint32_t old = lkey[i % N], nk;

		cr_assert_eq(xrxe_tp_mr_dereg(tp, old), 0);
		cr_assert_eq(xrxe_tp_mr_reg(tp, pdn, buf, 0, sizeof(buf), 0, &nk, &rkey), 0);
		cr_assert_neq(nk, old, "key %#x reused at once", old);
		lkey[i % N] = nk;
	}
	for (int i = 0; i < N; i++)
		cr_assert_eq(xrxe_tp_mr_dereg(tp, lkey[i]), 0);
	cr_assert_eq(xrxe_tp_pd_free(tp, pdn), 0);
	xrxe_tp_destroy(tp);
}

Test(keys, seed_changes_the_keys)
{
	static uint8_t buf[64];
	struct xrxe_tp *a = tp_new(1), *b = tp_new(2);
	uint32_t pa, pb, ka, kb, r;
	int same = 0;

	cr_assert_eq(xrxe_tp_pd_alloc(a, &pa), 0);
	cr_assert_eq(xrxe_tp_pd_alloc(b, &pb), 0);
	for (int i = 0; i < 16; i++) {
		cr_assert_eq(xrxe_tp_mr_reg(a, pa, buf, 0, sizeof(buf), 0, &ka, &r), 0);
		cr_assert_eq(xrxe_tp_mr_reg(b, pb, buf, 0, sizeof(buf), 0, &kb, &r), 0);
		same += ka == kb;
	}
	cr_assert_lt(same, 2);
	xrxe_tp_destroy(a);
	xrxe_tp_destroy(b);
}
