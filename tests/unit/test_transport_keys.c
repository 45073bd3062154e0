// SPDX-License-Identifier: MIT
/*
 * L_Keys/R_Keys cannot be guessed (src/transport/mr.c): a region's key is a
 * random free slot, named through a keyed permutation with the slot's
 * generation, with a random key byte: not the next index in turn, not a slot
 * index at all, and a key just deregistered is not handed out again (one
 * slot reused 2000 times never repeats one). Two transports with different
 * seeds (the daemon seeds from getrandom) give different keys.
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

/* All 32 bits of a key look random: the 24-bit name is not the slot index
 * (4096 slots need 13 bits; a random name has more in all but 1 in 2^11). */
Test(keys, names_are_not_slot_indices)
{
	static uint8_t buf[64];
	struct xrxe_tp *tp = tp_new(777);
	uint32_t pdn, key, rkey, small = 0;

	cr_assert_eq(xrxe_tp_pd_alloc(tp, &pdn), 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(xrxe_tp_mr_reg(tp, pdn, buf, 0, sizeof(buf), 0, &key, &rkey), 0);
		small += (key >> 8) < (1u << 14);
	}
	cr_assert_lt(small, 4, "%u of %d key names fit a slot index", small, N);
	xrxe_tp_destroy(tp);
}

/* One slot registered over and over: its key never repeats (the slot's
 * generation is part of the name), so a key stays dead after its
 * deregistration however busy the slot is. */
Test(keys, one_slot_never_repeats_a_key)
{
	static uint8_t buf[64];
	struct xrxe_tp_config cfg = {
		.ops = &no_ops, .max_path_mtu = 1024, .max_qp = 4, .max_mr = 1, .key_seed = 99,
	};
	enum { ROUNDS = 2000 };
	static uint32_t seen[ROUNDS];
	struct xrxe_tp *tp;
	uint32_t pdn, rkey;

	cr_assert_eq(xrxe_tp_create(&cfg, &tp), 0);
	cr_assert_eq(xrxe_tp_pd_alloc(tp, &pdn), 0);
	for (int i = 0; i < ROUNDS; i++) {
		cr_assert_eq(xrxe_tp_mr_reg(tp, pdn, buf, 0, sizeof(buf), 0, &seen[i], &rkey), 0);
		for (int j = 0; j < i; j++)
			cr_assert_neq(seen[i], seen[j], "key %#x came back after %d registrations",
				      seen[i], i - j);
		/* the dead key no longer works */
		cr_assert_eq(xrxe_tp_mr_dereg(tp, seen[i]), 0);
		cr_assert_eq(xrxe_tp_mr_dereg(tp, seen[i]), -EINVAL);
	}
	cr_assert_eq(xrxe_tp_pd_free(tp, pdn), 0);
	xrxe_tp_destroy(tp);
}
