// SPDX-License-Identifier: MIT
/*
 * Tag matching's core (src/transport/tm.c): the TMH/RVH parser on hostile
 * payloads, matching (mask, first added wins, consumed once), the handles
 * (stale ones miss), the list's bound, and phase synchronisation (entries
 * added behind the unexpected count wait for a sync; earlier ones do not).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "transport/tm.h"

/* A TMH (and RVH) as rdma-core's tests write them: big-endian fields. */
static uint32_t tmh(uint8_t *p, uint8_t op, uint64_t tag, uint32_t app_ctx)
{
	memset(p, 0, XRXE_TM_TMH_LEN);
	p[0] = op;
	for (int i = 0; i < 4; i++)
		p[4 + i] = (uint8_t)(app_ctx >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		p[8 + i] = (uint8_t)(tag >> (56 - 8 * i));
	return XRXE_TM_TMH_LEN;
}

static uint32_t rvh(uint8_t *p, uint64_t va, uint32_t rkey, uint32_t len)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(va >> (56 - 8 * i));
	for (int i = 0; i < 4; i++) {
		p[8 + i] = (uint8_t)(rkey >> (24 - 8 * i));
		p[12 + i] = (uint8_t)(len >> (24 - 8 * i));
	}
	return XRXE_TM_RVH_LEN;
}

static struct xrxe_tm_entry entry(uint64_t tag, uint64_t mask, uint64_t wr_id)
{
	struct xrxe_tm_entry e;

	memset(&e, 0, sizeof(e));
	e.tag = tag;
	e.mask = mask;
	e.wr_id = wr_id;
	e.nsge = 1;
	e.sge[0].addr = 0x1000 * wr_id;
	e.sge[0].length = 4096;
	e.sge[0].lkey = 7;
	return e;
}

static uint32_t add(struct xrxe_tm_list *l, uint64_t tag, uint64_t mask, uint64_t wr_id,
		    uint32_t unexp, bool want_sync_req)
{
	struct xrxe_tm_entry e = entry(tag, mask, wr_id);
	uint32_t h = 0;
	bool sync_req = !want_sync_req;

	cr_assert_eq(xrxe_tm_add(l, &e, unexp, &h, &sync_req), 0);
	cr_assert_eq(sync_req, want_sync_req);
	return h;
}

static enum xrxe_tm_verdict msg(struct xrxe_tm_list *l, uint8_t op, uint64_t tag,
				struct xrxe_tm_entry *out)
{
	uint8_t p[64];
	struct xrxe_tm_hdr h;
	uint32_t n = tmh(p, op, tag, 0xabcd);

	if (op == XRXE_TMH_RNDV)
		n += rvh(p + n, 0x7000, 0x55, 4096);
	return xrxe_tm_match(l, p, n, &h, out);
}

Test(transport_tm, parse_fields_and_hostile_headers)
{
	uint8_t p[64];
	struct xrxe_tm_hdr h;

	tmh(p, XRXE_TMH_EAGER, 0x1122334455667788ull, 0xdeadbeef);
	cr_assert_eq(xrxe_tm_parse(p, 16, &h), 0);
	cr_assert_eq(h.op, XRXE_TMH_EAGER);
	cr_assert_eq(h.tag, 0x1122334455667788ull);
	cr_assert_eq(h.app_ctx, 0xdeadbeefu);
	/* every length short of the TMH, NULL, unknown opcodes */
	for (uint32_t len = 0; len < 16; len++)
		cr_assert_eq(xrxe_tm_parse(p, len, &h), -EINVAL, "len %u", len);
	cr_assert_eq(xrxe_tm_parse(NULL, 64, &h), -EINVAL);
	/* reserved bytes are ignored, as devices do (rdma-core's suite writes
	 * its TMH over a buffer of 'c's) */
	for (int i = 1; i < 4; i++) {
		tmh(p, XRXE_TMH_EAGER, 1, 0);
		p[i] = 'c';
		cr_assert_eq(xrxe_tm_parse(p, 16, &h), 0, "reserved byte %d", i);
		cr_assert_eq(h.op, XRXE_TMH_EAGER);
		cr_assert_eq(h.tag, 1);
	}
	for (int op = 4; op < 256; op++) {
		tmh(p, (uint8_t)op, 1, 0);
		cr_assert_eq(xrxe_tm_parse(p, 16, &h), -EINVAL, "opcode %d", op);
	}
	/* RNDV needs its RVH whole */
	tmh(p, XRXE_TMH_RNDV, 9, 0);
	rvh(p + 16, 0x123456789aull, 0x4242, 65536);
	for (uint32_t len = 16; len < 32; len++)
		cr_assert_eq(xrxe_tm_parse(p, len, &h), -EINVAL, "RNDV len %u", len);
	cr_assert_eq(xrxe_tm_parse(p, 32, &h), 0);
	cr_assert_eq(h.rndv_va, 0x123456789aull);
	cr_assert_eq(h.rndv_rkey, 0x4242u);
	cr_assert_eq(h.rndv_len, 65536u);
}

Test(transport_tm, match_mask_order_and_consumption)
{
	struct xrxe_tm_list l;
	struct xrxe_tm_entry out;

	cr_assert_eq(xrxe_tm_list_init(&l, 16), 0);
	add(&l, 5, 0xffff, 50, 0, false);
	add(&l, 0x100, 0xff00, 60, 0, false); /* matches 0x1xx */
	add(&l, 5, 0xffff, 51, 0, false);      /* a second receive for tag 5 */
	/* the first added of the matching entries wins, and is consumed */
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 5, &out), XRXE_TM_EXPECTED);
	cr_assert_eq(out.wr_id, 50u);
	cr_assert_eq(out.sge[0].addr, 0x1000u * 50);
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 0x10005, &out), XRXE_TM_EXPECTED); /* mask 0xffff */
	cr_assert_eq(out.wr_id, 51u);
	cr_assert_eq(msg(&l, XRXE_TMH_RNDV, 0x1ab, &out), XRXE_TM_RNDV);
	cr_assert_eq(out.wr_id, 60u);
	/* nothing left: unexpected, counted */
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 5, &out), XRXE_TM_UNEXPECTED);
	cr_assert_eq(l.hw_unexp, 1u);
	/* NO_TAG, FIN and a broken header never touch the list or the count */
	add(&l, 7, 0xffff, 70, 1, false);
	cr_assert_eq(msg(&l, XRXE_TMH_NO_TAG, 7, &out), XRXE_TM_NO_TAG);
	cr_assert_eq(msg(&l, XRXE_TMH_FIN, 7, &out), XRXE_TM_PLAIN);
	{
		uint8_t p[16];
		struct xrxe_tm_hdr h;

		tmh(p, XRXE_TMH_EAGER, 7, 0);
		cr_assert_eq(xrxe_tm_match(&l, p, 15, &h, &out), XRXE_TM_PLAIN);
		tmh(p, XRXE_TMH_RNDV, 7, 0); /* RNDV without its RVH */
		cr_assert_eq(xrxe_tm_match(&l, p, 16, &h, &out), XRXE_TM_PLAIN);
	}
	cr_assert_eq(l.hw_unexp, 1u);
	cr_assert_eq(l.n, 1u);
	/* an entry whose tag has bits outside its mask never matches (man page:
	 * TMH.tag & mask == tag) */
	add(&l, 0x1ff, 0xff, 80, 1, false);
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 0x1ff, &out), XRXE_TM_UNEXPECTED);
	xrxe_tm_list_fini(&l);
}

Test(transport_tm, handles_and_bounds)
{
	struct xrxe_tm_list l;
	struct xrxe_tm_entry out, e = entry(1, ~0ull, 1);
	uint32_t h[4], extra;
	bool sr;

	cr_assert_eq(xrxe_tm_list_init(&l, 0), -EINVAL);
	cr_assert_eq(xrxe_tm_list_init(&l, XRXE_TM_MAX_TAGS + 1), -EINVAL);
	cr_assert_eq(xrxe_tm_list_init(&l, 4), 0);
	for (int i = 0; i < 4; i++)
		h[i] = add(&l, (uint64_t)i, ~0ull, (uint64_t)i, 0, false);
	cr_assert_eq(xrxe_tm_add(&l, &e, 0, &extra, &sr), -ENOSPC);
	e.nsge = XRXE_TM_MAX_SGE + 1;
	cr_assert_eq(xrxe_tm_add(&l, &e, 0, &extra, &sr), -EINVAL);
	/* delete: once; a consumed entry's handle misses; hostile handles miss */
	cr_assert_eq(xrxe_tm_del(&l, h[1]), 0);
	cr_assert_eq(xrxe_tm_del(&l, h[1]), -ENOENT);
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 2, &out), XRXE_TM_EXPECTED);
	cr_assert_eq(xrxe_tm_del(&l, h[2]), -ENOENT);
	cr_assert_eq(xrxe_tm_del(&l, 0xffffffffu), -ENOENT);
	cr_assert_eq(xrxe_tm_del(&l, 0xffff0000u | 3), -ENOENT);
	/* a slot reused: the old handle does not name the new entry */
	extra = add(&l, 9, ~0ull, 9, 0, false);
	cr_assert_neq(extra, h[1]);
	cr_assert_neq(extra, h[2]);
	cr_assert_eq(xrxe_tm_del(&l, h[1]), -ENOENT);
	cr_assert_eq(xrxe_tm_del(&l, h[2]), -ENOENT);
	cr_assert_eq(xrxe_tm_del(&l, extra), 0);
	cr_assert_eq(l.n, 2u);
	xrxe_tm_list_fini(&l);
}

Test(transport_tm, phase_synchronisation)
{
	struct xrxe_tm_list l;
	struct xrxe_tm_entry out;

	cr_assert_eq(xrxe_tm_list_init(&l, 8), 0);
	add(&l, 1, 0xffff, 10, 0, false); /* in sync */
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 0x1234, &out), XRXE_TM_UNEXPECTED);
	cr_assert_eq(l.hw_unexp, 1u);
	/* SW has not seen that message yet: its new tag must not match (the
	 * message it is about to handle might be the one it wants) */
	add(&l, 2, 0xffff, 20, 0, true);
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 2, &out), XRXE_TM_UNEXPECTED);
	/* the entry added in sync still matches */
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 1, &out), XRXE_TM_EXPECTED);
	cr_assert_eq(out.wr_id, 10u);
	/* a sync with a stale count changes nothing; with the list's count
	 * every entry becomes eligible */
	cr_assert_eq(xrxe_tm_sync(&l, 1), false);
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 2, &out), XRXE_TM_UNEXPECTED);
	cr_assert_eq(l.hw_unexp, 3u);
	cr_assert_eq(xrxe_tm_sync(&l, 3), true);
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 2, &out), XRXE_TM_EXPECTED);
	cr_assert_eq(out.wr_id, 20u);
	add(&l, 3, 0xffff, 30, 3, false);
	cr_assert_eq(msg(&l, XRXE_TMH_EAGER, 3, &out), XRXE_TM_EXPECTED);
	xrxe_tm_list_fini(&l);
}
