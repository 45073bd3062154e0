// SPDX-License-Identifier: MIT
/*
 * Memory windows, invalidation, ATOMIC_WRITE, FLUSH and reregistration over
 * the in-memory wire: the bind rules of IBA 10.6.7.2 with their completion
 * statuses, remote access through a window's R_Key checked at the responder,
 * LOCAL_INV and SEND_WITH_INV (IBV_WC_WITH_INV, invalidated_rkey), the 8-byte
 * ATOMIC_WRITE placement, FLUSH placement/selectivity/access checks, and
 * ibv_rereg_mr semantics in the core.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"
#include "transport/tp_internal.h"

#define BUF 8192
#define ACC_ALL                                                                            \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |       \
	 IBV_ACCESS_REMOTE_ATOMIC)

struct env {
	struct xrxe_tph_pair p;
	uint8_t *abuf, *bbuf;
	uint32_t alk, blk; /* A: source, B: target (MW_BIND allowed) */
};

static void env_init(struct env *e, uint32_t qp_access, uint32_t b_access)
{
	struct xrxe_tph_conn c;

	xrxe_tph_conn_default(&c);
	c.access = qp_access;
	cr_assert_eq(xrxe_tph_pair_init(&e->p, 7, IBV_QPT_RC, &c, true), 0);
	e->abuf = calloc(1, BUF);
	e->bbuf = calloc(1, BUF);
	for (int i = 0; i < BUF; i++)
		e->abuf[i] = (uint8_t)(i * 7 + 1);
	e->alk = xrxe_tph_mr(&e->p.h.side[0], e->abuf, BUF, ACC_ALL, 0);
	e->blk = xrxe_tph_mr(&e->p.h.side[1], e->bbuf, BUF, b_access, 0);
}

static void env_fini(struct env *e)
{
	xrxe_tph_pair_fini(&e->p);
	free(e->abuf);
	free(e->bbuf);
}

static uint64_t bva(const struct env *e, uint64_t off)
{
	return (uint64_t)(uintptr_t)e->bbuf + off;
}

/* Post a BIND_MW WQE on q (the one the application builds for type 2, and
 * ibv_bind_mw posts for type 1). */
static void post_bind(struct xrxe_tph_qp *q, uint64_t wr_id, uint32_t mw_rkey, uint32_t new_rkey,
		      uint32_t mr_lkey, uint64_t addr, uint64_t len, uint32_t access)
{
	struct xrxe_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = IBV_WR_BIND_MW;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.bind.mw_rkey = mw_rkey;
	w.wr.bind.new_rkey = new_rkey;
	w.wr.bind.mr_lkey = mr_lkey;
	w.wr.bind.addr = addr;
	w.wr.bind.length = len;
	w.wr.bind.access = access;
	cr_assert_eq(xrxe_tph_post_send_raw(q, &w, NULL, 0), 0);
}

static void post_local_inv(struct xrxe_tph_qp *q, uint64_t wr_id, uint32_t rkey)
{
	struct xrxe_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = IBV_WR_LOCAL_INV;
	w.send_flags = IBV_SEND_SIGNALED;
	w.ex = rkey;
	cr_assert_eq(xrxe_tph_post_send_raw(q, &w, NULL, 0), 0);
}

/* WRITE len bytes from A's buffer to raddr/rkey at B. */
static void post_write(struct env *e, uint64_t wr_id, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct xrxe_sge sge = { (uint64_t)(uintptr_t)e->abuf, len, e->alk };
	struct xrxe_tph_send s = { .wr_id = wr_id, .opcode = IBV_WR_RDMA_WRITE,
				   .flags = IBV_SEND_SIGNALED, .raddr = raddr, .rkey = rkey,
				   .sge = &sge, .nsge = 1 };

	cr_assert_eq(xrxe_tph_post_send(e->p.a, &s), 0);
}

static struct ibv_wc poll_one(struct xrxe_tph_cq *c)
{
	struct ibv_wc wc;

	cr_assert_eq(xrxe_tph_poll_cq(c, &wc, 1), 1, "expected a completion");
	return wc;
}

static uint32_t inc_rkey(uint32_t rkey)
{
	return (rkey & ~0xffu) | ((rkey + 1) & 0xff);
}

/* Type 2 on B's QP: bind through B, remote write from A through the window's
 * R_Key lands; the old R_Key (before the bind) does not work. */
static uint32_t bind_type2_on_b(struct env *e, uint32_t *handle, uint64_t off, uint64_t len,
				uint32_t access)
{
	uint32_t rkey0;
	struct ibv_wc wc;

	cr_assert_eq(xrxe_tp_mw_alloc(e->p.h.side[1].tp, e->p.h.side[1].pdn, IBV_MW_TYPE_2, handle,
				      &rkey0),
		     0);
	post_bind(e->p.b, 1, rkey0, inc_rkey(rkey0), e->blk, bva(e, off), len, access);
	xrxe_tph_run(&e->p.h, 1000000000ull);
	wc = poll_one(e->p.cb);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_BIND_MW);
	return inc_rkey(rkey0);
}

Test(mw, type2_bind_remote_write_then_local_inv)
{
	struct env e;
	uint32_t h, rkey;
	struct ibv_wc wc;

	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	rkey = bind_type2_on_b(&e, &h, 1024, 2048, IBV_ACCESS_REMOTE_WRITE);
	cr_assert_neq(rkey, e.blk);
	post_write(&e, 10, bva(&e, 1024), rkey, 2048);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	wc = poll_one(e.p.ca);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(e.bbuf + 1024, e.abuf, 2048), 0, "written through the window");
	cr_assert_eq(e.bbuf[1023], 0);
	cr_assert_eq(e.bbuf[1024 + 2048], 0);

	/* the region cannot go away while the window is bound */
	cr_assert_eq(xrxe_tp_mr_dereg(e.p.h.side[1].tp, e.blk), -EBUSY);

	post_local_inv(e.p.b, 2, rkey);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	wc = poll_one(e.p.cb);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_LOCAL_INV);

	/* after invalidation the same write is a remote access error */
	post_write(&e, 11, bva(&e, 1024), rkey, 8);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	wc = poll_one(e.p.ca);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(xrxe_tph_state(e.p.b), IBV_QPS_ERR, "responder class C: ERR");
	cr_assert_eq(xrxe_tp_mw_dealloc(e.p.h.side[1].tp, h), 0);
	cr_assert_eq(xrxe_tp_mr_dereg(e.p.h.side[1].tp, e.blk), 0, "no window bound any more");
	env_fini(&e);
}

Test(mw, window_bounds_and_rights_checked_at_responder)
{
	struct env e;
	uint32_t h, rkey;
	struct ibv_wc wc;

	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	rkey = bind_type2_on_b(&e, &h, 1024, 1024, IBV_ACCESS_REMOTE_WRITE);
	/* one byte past the window, inside the region */
	post_write(&e, 10, bva(&e, 1024 + 1), rkey, 1024);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	wc = poll_one(e.p.ca);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(e.bbuf[1024], 0, "nothing placed");
	env_fini(&e);

	/* write-only window: a READ through it fails */
	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	rkey = bind_type2_on_b(&e, &h, 0, 512, IBV_ACCESS_REMOTE_WRITE);
	struct xrxe_sge sge = { (uint64_t)(uintptr_t)e.abuf, 64, e.alk };
	struct xrxe_tph_send s = { .wr_id = 5, .opcode = IBV_WR_RDMA_READ,
				   .flags = IBV_SEND_SIGNALED, .raddr = bva(&e, 0), .rkey = rkey,
				   .sge = &sge, .nsge = 1 };
	cr_assert_eq(xrxe_tph_post_send(e.p.a, &s), 0);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	wc = poll_one(e.p.ca);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	env_fini(&e);
}

/* A type 2 window serves only the QP it was bound through. */
Test(mw, type2_window_is_qp_associated)
{
	struct env e;
	uint32_t h, rkey;
	struct ibv_wc wc;
	struct xrxe_tph_cq *c2a, *c2b;
	struct xrxe_tph_qp *a2, *b2;

	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	rkey = bind_type2_on_b(&e, &h, 0, 4096, IBV_ACCESS_REMOTE_WRITE);
	c2a = xrxe_tph_cq_create(&e.p.h.side[0], 64);
	c2b = xrxe_tph_cq_create(&e.p.h.side[1], 64);
	a2 = xrxe_tph_qp_create(&e.p.h.side[0], IBV_QPT_RC, c2a, c2a, 16, 16, true);
	b2 = xrxe_tph_qp_create(&e.p.h.side[1], IBV_QPT_RC, c2b, c2b, 16, 16, true);
	cr_assert_eq(xrxe_tph_connect(a2, b2, &e.p.conn), 0);
	struct xrxe_sge sge = { (uint64_t)(uintptr_t)e.abuf, 64, e.alk };
	struct xrxe_tph_send s = { .wr_id = 9, .opcode = IBV_WR_RDMA_WRITE,
				   .flags = IBV_SEND_SIGNALED, .raddr = bva(&e, 0), .rkey = rkey,
				   .sge = &sge, .nsge = 1 };
	cr_assert_eq(xrxe_tph_post_send(a2, &s), 0);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	wc = poll_one(c2a);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR, "other QP, same PD: refused");
	env_fini(&e);
}

/* Type 1: bound through any QP of its PD, rebinding changes the R_Key and the
 * old one stops working; LOCAL_INV cannot invalidate a type 1 window. */
Test(mw, type1_bind_rebind_and_no_invalidate)
{
	struct env e;
	uint32_t h, rkey0, rkey1, rkey2;
	struct ibv_wc wc;

	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	cr_assert_eq(xrxe_tp_mw_alloc(e.p.h.side[1].tp, e.p.h.side[1].pdn, IBV_MW_TYPE_1, &h,
				      &rkey0),
		     0);
	rkey1 = inc_rkey(rkey0);
	post_bind(e.p.b, 1, rkey0, rkey1, e.blk, bva(&e, 0), 4096,
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.cb).status, IBV_WC_SUCCESS);
	post_write(&e, 10, bva(&e, 100), rkey1, 100);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(e.bbuf + 100, e.abuf, 100), 0);

	/* rebind (type 1 may be rebound while bound) */
	rkey2 = inc_rkey(rkey1);
	post_bind(e.p.b, 2, rkey1, rkey2, e.blk, bva(&e, 0), 4096, IBV_ACCESS_REMOTE_WRITE);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.cb).status, IBV_WC_SUCCESS);
	post_local_inv(e.p.b, 3, rkey2);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	wc = poll_one(e.p.cb);
	cr_assert_eq(wc.status, IBV_WC_LOC_QP_OP_ERR, "type 1 cannot be invalidated");
	cr_assert_eq(wc.opcode, IBV_WC_LOCAL_INV);
	env_fini(&e);

	/* the stale R_Key after a rebind misses */
	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	cr_assert_eq(xrxe_tp_mw_alloc(e.p.h.side[1].tp, e.p.h.side[1].pdn, IBV_MW_TYPE_1, &h,
				      &rkey0),
		     0);
	rkey1 = inc_rkey(rkey0);
	rkey2 = inc_rkey(rkey1);
	post_bind(e.p.b, 1, rkey0, rkey1, e.blk, bva(&e, 0), 4096, IBV_ACCESS_REMOTE_WRITE);
	post_bind(e.p.b, 2, rkey1, rkey2, e.blk, bva(&e, 0), 4096, IBV_ACCESS_REMOTE_WRITE);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.cb).status, IBV_WC_SUCCESS);
	cr_assert_eq(poll_one(e.p.cb).status, IBV_WC_SUCCESS);
	post_write(&e, 10, bva(&e, 0), rkey1, 8);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR);
	env_fini(&e);
}

/*
 * rdma-core's own suite (test_mr.MWTest, test_qpex bind_mw) binds windows with
 * IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE over a region registered
 * with only IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND. That is a good bind:
 * the region grants MW_BIND (C10-73) and the local write that remote write
 * through a window needs (C10-74); it need not grant remote rights itself;
 * the LOCAL_WRITE bit asks nothing of a window, which is remote-only. A WRITE
 * through the window then lands, and the window grants nothing it was not
 * given (no READ).
 */
static void suite_bind_case(uint32_t type)
{
	struct env e;
	uint32_t h, rkey0, rkey;
	struct xrxe_sge sge;
	struct xrxe_tph_send s;

	env_init(&e, ACC_ALL, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	cr_assert_eq(xrxe_tp_mw_alloc(e.p.h.side[1].tp, e.p.h.side[1].pdn, type, &h, &rkey0), 0);
	rkey = inc_rkey(rkey0);
	post_bind(e.p.b, 1, rkey0, rkey, e.blk, bva(&e, 0), BUF,
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.cb).status, IBV_WC_SUCCESS, "type %u: bind succeeds", type);
	post_write(&e, 10, bva(&e, 512), rkey, 1024);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_SUCCESS, "type %u: WRITE through it", type);
	cr_assert_eq(memcmp(e.bbuf + 512, e.abuf, 1024), 0, "type %u: data placed", type);

	sge = (struct xrxe_sge){ (uint64_t)(uintptr_t)e.abuf, 64, e.alk };
	s = (struct xrxe_tph_send){ .wr_id = 11, .opcode = IBV_WR_RDMA_READ,
				    .flags = IBV_SEND_SIGNALED, .raddr = bva(&e, 0),
				    .rkey = rkey, .sge = &sge, .nsge = 1 };
	cr_assert_eq(xrxe_tph_post_send(e.p.a, &s), 0);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR, "type %u: no READ", type);
	env_fini(&e);
}

Test(mw, bind_with_local_write_over_local_write_region)
{
	suite_bind_case(IBV_MW_TYPE_1);
	suite_bind_case(IBV_MW_TYPE_2);
}

/* The bad binds: each completes with IBV_WC_MW_BIND_ERR and the QP leaves RTS. */
enum bad_bind { BB_SAME_KEY, BB_OTHER_INDEX, BB_OUTSIDE, BB_NO_MW_BIND, BB_ZERO_BASED,
		BB_TYPE2_ZERO_LEN, BB_TYPE2_TWICE, BB_STALE_MW_KEY, BB_WRITE_NO_LOCAL_WRITE,
		BB_ATOMIC_NO_LOCAL_WRITE, BB_UNKNOWN_RIGHT, BB_N };

static void bad_bind_case(enum bad_bind k)
{
	struct env e;
	uint32_t h, rkey0, mr_access = ACC_ALL | IBV_ACCESS_MW_BIND;
	uint64_t off = 0, len = 1024;
	uint32_t newk, acc = IBV_ACCESS_REMOTE_WRITE, type = IBV_MW_TYPE_2;
	struct ibv_wc wc;

	if (k == BB_NO_MW_BIND)
		mr_access = ACC_ALL;
	if (k == BB_WRITE_NO_LOCAL_WRITE || k == BB_ATOMIC_NO_LOCAL_WRITE)
		mr_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND; /* C10-74 */
	if (k == BB_ATOMIC_NO_LOCAL_WRITE)
		acc = IBV_ACCESS_REMOTE_ATOMIC;
	env_init(&e, ACC_ALL, mr_access);
	cr_assert_eq(xrxe_tp_mw_alloc(e.p.h.side[1].tp, e.p.h.side[1].pdn, type, &h, &rkey0), 0);
	newk = inc_rkey(rkey0);
	switch (k) {
	case BB_SAME_KEY:
		newk = rkey0; /* the key byte must change */
		break;
	case BB_OTHER_INDEX:
		newk = rkey0 + 0x100;
		break;
	case BB_OUTSIDE:
		off = BUF - 512; /* runs 512 bytes past the region */
		break;
	case BB_ZERO_BASED:
		acc |= IBV_ACCESS_ZERO_BASED;
		break;
	case BB_TYPE2_ZERO_LEN:
		len = 0;
		break;
	case BB_TYPE2_TWICE:
		post_bind(e.p.b, 1, rkey0, newk, e.blk, bva(&e, 0), 64, acc);
		xrxe_tph_run(&e.p.h, 1000000000ull);
		cr_assert_eq(poll_one(e.p.cb).status, IBV_WC_SUCCESS);
		rkey0 = newk;
		newk = inc_rkey(newk);
		break;
	case BB_UNKNOWN_RIGHT:
		acc |= 1u << 13; /* no access flag of rdma-core 44 */
		break;
	case BB_STALE_MW_KEY:
		rkey0 = inc_rkey(inc_rkey(rkey0)); /* not the window's current key */
		newk = inc_rkey(rkey0);
		break;
	default:
		break;
	}
	post_bind(e.p.b, 2, rkey0, newk, e.blk, bva(&e, off), len, acc);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	wc = poll_one(e.p.cb);
	cr_assert_eq(wc.status, IBV_WC_MW_BIND_ERR, "case %d: status %d", k, wc.status);
	cr_assert_neq(xrxe_tph_state(e.p.b), IBV_QPS_RTS, "case %d", k);
	env_fini(&e);
}

Test(mw, bad_binds_complete_with_mw_bind_err)
{
	for (int k = 0; k < BB_N; k++)
		bad_bind_case((enum bad_bind)k);
}

/* SEND_WITH_INV from A invalidates B's type 2 window: B's receive completion
 * says IBV_WC_WITH_INV with the R_Key; the window is then unusable. */
Test(mw, send_with_invalidate_of_window)
{
	struct env e;
	uint32_t h, rkey;
	struct ibv_wc wc;
	struct xrxe_sge rsge = { 0, 256, 0 };

	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	rkey = bind_type2_on_b(&e, &h, 0, 4096, IBV_ACCESS_REMOTE_WRITE);
	rsge.addr = bva(&e, 4096);
	rsge.lkey = e.blk;
	cr_assert_eq(xrxe_tph_post_recv(e.p.b, 77, &rsge, 1), 0);
	struct xrxe_sge sge = { (uint64_t)(uintptr_t)e.abuf, 32, e.alk };
	struct xrxe_tph_send s = { .wr_id = 3, .opcode = IBV_WR_SEND_WITH_INV,
				   .flags = IBV_SEND_SIGNALED, .ex = rkey, .sge = &sge, .nsge = 1 };
	cr_assert_eq(xrxe_tph_post_send(e.p.a, &s), 0);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_SUCCESS);
	wc = poll_one(e.p.cb);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 77);
	cr_assert(wc.wc_flags & IBV_WC_WITH_INV);
	cr_assert_eq(wc.invalidated_rkey, rkey);
	cr_assert_eq(wc.byte_len, 32);
	post_write(&e, 4, bva(&e, 0), rkey, 8);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR);
	env_fini(&e);
}

/* SEND_WITH_INV naming a key that cannot be invalidated (a bound type 1
 * window's): class J, the receive completes with REM_INV_REQ_ERR. */
Test(mw, send_with_invalidate_bad_key)
{
	struct env e;
	uint32_t h, rkey0;
	struct xrxe_sge rsge;

	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	cr_assert_eq(xrxe_tp_mw_alloc(e.p.h.side[1].tp, e.p.h.side[1].pdn, IBV_MW_TYPE_1, &h,
				      &rkey0),
		     0);
	post_bind(e.p.b, 1, rkey0, inc_rkey(rkey0), e.blk, bva(&e, 0), 64,
		  IBV_ACCESS_REMOTE_WRITE);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.cb).status, IBV_WC_SUCCESS);
	rsge = (struct xrxe_sge){ bva(&e, 4096), 256, e.blk };
	cr_assert_eq(xrxe_tph_post_recv(e.p.b, 78, &rsge, 1), 0);
	struct xrxe_sge sge = { (uint64_t)(uintptr_t)e.abuf, 16, e.alk };
	struct xrxe_tph_send s = { .wr_id = 3, .opcode = IBV_WR_SEND_WITH_INV,
				   .flags = IBV_SEND_SIGNALED, .ex = inc_rkey(rkey0), .sge = &sge,
				   .nsge = 1 };
	cr_assert_eq(xrxe_tph_post_send(e.p.a, &s), 0);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.cb).status, IBV_WC_REM_INV_REQ_ERR);
	env_fini(&e);
}

/* LOCAL_INV of an MR: the region stops serving local and remote accesses. */
Test(mw, local_invalidate_of_mr)
{
	struct env e;

	env_init(&e, ACC_ALL, ACC_ALL);
	post_local_inv(e.p.b, 1, e.blk);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	struct ibv_wc wc = poll_one(e.p.cb);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_LOCAL_INV);
	post_write(&e, 2, bva(&e, 0), e.blk, 8);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR);
	env_fini(&e);
}

/* --- ATOMIC_WRITE ---------------------------------------------------------- */

static void post_atomic_write(struct env *e, uint64_t wr_id, uint64_t raddr, uint32_t rkey,
			      uint64_t val)
{
	struct xrxe_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = IBV_WR_ATOMIC_WRITE;
	w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	w.inline_len = 8;
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	cr_assert_eq(xrxe_tph_post_send_raw(e->p.a, &w, &val, 8), 0);
}

Test(atomic_write, places_eight_bytes)
{
	struct env e;
	struct ibv_wc wc;
	uint64_t v = 0x0123456789abcdefull, got;

	env_init(&e, ACC_ALL, ACC_ALL);
	memset(e.bbuf, 0xee, 64);
	post_atomic_write(&e, 1, bva(&e, 16), e.blk, v);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	wc = poll_one(e.p.ca);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_ATOMIC_WRITE);
	memcpy(&got, e.bbuf + 16, 8);
	cr_assert_eq(got, v);
	cr_assert_eq(e.bbuf[15], 0xee);
	cr_assert_eq(e.bbuf[24], 0xee);
	/* answered by an empty READ response ONLY, not an ACK */
	cr_assert_eq(e.p.h.opcode_count[1][XRXE_OPCODE(RC, RDMA_READ_RESPONSE_ONLY)], 1);
	env_fini(&e);
}

Test(atomic_write, survives_a_lossy_wire_exactly_once)
{
	struct env e;
	uint64_t got;

	env_init(&e, ACC_ALL, ACC_ALL);
	e.p.h.pol.drop_ppm = 200000;
	e.p.h.pol.dup_ppm = 200000;
	for (int i = 0; i < 20; i++)
		post_atomic_write(&e, (uint64_t)i, bva(&e, 8 * (uint64_t)i), e.blk, 1000 + (uint64_t)i);
	xrxe_tph_run(&e.p.h, 60000000000ull);
	for (int i = 0; i < 20; i++) {
		struct ibv_wc wc = poll_one(e.p.ca);

		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, (uint64_t)i, "in order");
		memcpy(&got, e.bbuf + 8 * i, 8);
		cr_assert_eq(got, 1000 + (uint64_t)i);
	}
	env_fini(&e);
}

Test(atomic_write, bad_cases)
{
	struct env e;

	/* misaligned target: the requester refuses it locally */
	env_init(&e, ACC_ALL, ACC_ALL);
	post_atomic_write(&e, 1, bva(&e, 4), e.blk, 1);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_LOC_QP_OP_ERR);
	env_fini(&e);

	/* region without remote write: remote access error */
	env_init(&e, ACC_ALL, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	post_atomic_write(&e, 1, bva(&e, 8), e.blk, 1);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR);
	env_fini(&e);

	/* QP without remote write: invalid request */
	env_init(&e, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, ACC_ALL);
	post_atomic_write(&e, 1, bva(&e, 8), e.blk, 1);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_INV_REQ_ERR);
	env_fini(&e);
}

/* --- FLUSH ------------------------------------------------------------------- */

static void post_flush(struct env *e, uint64_t wr_id, uint64_t raddr, uint32_t rkey, uint32_t len,
		       uint8_t type, uint8_t level)
{
	struct xrxe_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = XRXE_WR_FLUSH;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.flush.remote_addr = raddr;
	w.wr.flush.rkey = rkey;
	w.wr.flush.length = len;
	w.wr.flush.type = type;
	w.wr.flush.level = level;
	cr_assert_eq(xrxe_tph_post_send_raw(e->p.a, &w, NULL, 0), 0);
}

#define FLUSH_QP (ACC_ALL | XRXE_ACCESS_FLUSH_GLOBAL)

Test(flush, global_range_and_mr)
{
	struct env e;
	struct ibv_wc wc;

	env_init(&e, FLUSH_QP, ACC_ALL | XRXE_ACCESS_FLUSH_GLOBAL);
	post_write(&e, 1, bva(&e, 0), e.blk, 512);
	post_flush(&e, 2, bva(&e, 0), e.blk, 512, XRXE_FLUSH_GLOBAL, XRXE_FLUSH_RANGE);
	/* MR selectivity: address and length are not looked at */
	post_flush(&e, 3, 0, e.blk, 0, XRXE_FLUSH_GLOBAL, XRXE_FLUSH_MR);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_SUCCESS);
	wc = poll_one(e.p.ca);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, (enum ibv_wc_opcode)XRXE_WC_FLUSH);
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(e.bbuf, e.abuf, 512), 0);
	cr_assert_eq(e.p.h.opcode_count[0][XRXE_OPCODE(RC, FLUSH)], 2);
	env_fini(&e);
}

Test(flush, bad_cases)
{
	struct env e;

	/* region without the flush right: remote access error */
	env_init(&e, FLUSH_QP, ACC_ALL);
	post_flush(&e, 1, bva(&e, 0), e.blk, 64, XRXE_FLUSH_GLOBAL, XRXE_FLUSH_RANGE);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR);
	env_fini(&e);

	/* QP without the flush type: invalid request */
	env_init(&e, ACC_ALL, ACC_ALL | XRXE_ACCESS_FLUSH_GLOBAL);
	post_flush(&e, 1, bva(&e, 0), e.blk, 64, XRXE_FLUSH_GLOBAL, XRXE_FLUSH_RANGE);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_INV_REQ_ERR);
	env_fini(&e);

	/* persistence: the QP allows it, no region can grant it */
	env_init(&e, FLUSH_QP | XRXE_ACCESS_FLUSH_PERSISTENT, ACC_ALL | XRXE_ACCESS_FLUSH_GLOBAL);
	post_flush(&e, 1, bva(&e, 0), e.blk, 64, XRXE_FLUSH_PERSISTENT, XRXE_FLUSH_RANGE);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR);
	env_fini(&e);

	/* reserved selectivity level and empty placement type */
	for (int k = 0; k < 2; k++) {
		env_init(&e, FLUSH_QP, ACC_ALL | XRXE_ACCESS_FLUSH_GLOBAL);
		post_flush(&e, 1, bva(&e, 0), e.blk, 64, k ? 0 : XRXE_FLUSH_GLOBAL, k ? 0 : 2);
		xrxe_tph_run(&e.p.h, 1000000000ull);
		cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_INV_REQ_ERR, "k=%d", k);
		env_fini(&e);
	}

	/* range outside the region */
	env_init(&e, FLUSH_QP, ACC_ALL | XRXE_ACCESS_FLUSH_GLOBAL);
	post_flush(&e, 1, bva(&e, BUF - 8), e.blk, 64, XRXE_FLUSH_GLOBAL, XRXE_FLUSH_RANGE);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR);
	env_fini(&e);
}

/* --- reregistration ----------------------------------------------------------- */

Test(rereg, access_translation_pd)
{
	struct env e;
	struct xrxe_tp *tp;
	uint8_t *other = calloc(1, BUF);
	uint32_t pd2, h, rkey0;

	env_init(&e, ACC_ALL, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	tp = e.p.h.side[1].tp;
	/* no remote write yet: refused */
	post_write(&e, 1, bva(&e, 0), e.blk, 8);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR);
	env_fini(&e);

	env_init(&e, ACC_ALL, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	tp = e.p.h.side[1].tp;
	cr_assert_eq(xrxe_tp_mr_rereg(tp, e.blk, IBV_REREG_MR_CHANGE_ACCESS, 0, NULL, 0, 0,
				      ACC_ALL),
		     0);
	post_write(&e, 1, bva(&e, 0), e.blk, 8);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_SUCCESS, "access now granted");
	cr_assert_eq(memcmp(e.bbuf, e.abuf, 8), 0);

	/* new translation: the same key now reaches the other buffer */
	cr_assert_eq(xrxe_tp_mr_rereg(tp, e.blk, IBV_REREG_MR_CHANGE_TRANSLATION, 0, other,
				      (uint64_t)(uintptr_t)other, BUF, 0),
		     0);
	post_write(&e, 2, (uint64_t)(uintptr_t)other + 64, e.blk, 16);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(other + 64, e.abuf, 16), 0);

	/* bad arguments change nothing */
	cr_assert_eq(xrxe_tp_mr_rereg(tp, e.blk, IBV_REREG_MR_CHANGE_ACCESS, 0, NULL, 0, 0,
				      IBV_ACCESS_REMOTE_WRITE),
		     -EINVAL, "remote write without local write");
	cr_assert_eq(xrxe_tp_mr_rereg(tp, e.blk, IBV_REREG_MR_CHANGE_TRANSLATION, 0, NULL, 0, 0, 0),
		     -EINVAL);
	cr_assert_eq(xrxe_tp_mr_rereg(tp, e.blk, 1u << 7, 0, NULL, 0, 0, 0), -EOPNOTSUPP);
	cr_assert_eq(xrxe_tp_mr_rereg(tp, e.blk ^ 0x1, IBV_REREG_MR_CHANGE_ACCESS, 0, NULL, 0, 0,
				      ACC_ALL),
		     -EINVAL, "wrong key byte");
	cr_assert_eq(xrxe_tp_mr_rereg(tp, e.blk, IBV_REREG_MR_CHANGE_PD, 999, NULL, 0, 0, 0),
		     -EINVAL, "no such PD");

	/* another PD: the QP's PD no longer matches, remote access fails */
	cr_assert_eq(xrxe_tp_pd_alloc(tp, &pd2), 0);
	cr_assert_eq(xrxe_tp_mr_rereg(tp, e.blk, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0, 0), 0);
	cr_assert_eq(xrxe_tp_pd_free(tp, pd2), -EBUSY, "the MR holds the PD");
	post_write(&e, 3, (uint64_t)(uintptr_t)other, e.blk, 8);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(xrxe_tp_mr_rereg(tp, e.blk, IBV_REREG_MR_CHANGE_PD, e.p.h.side[1].pdn, NULL, 0,
				      0, 0),
		     0);
	cr_assert_eq(xrxe_tp_pd_free(tp, pd2), 0);
	env_fini(&e);

	/* with a window bound: -EBUSY */
	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	rkey0 = bind_type2_on_b(&e, &h, 0, 64, IBV_ACCESS_REMOTE_WRITE);
	(void)rkey0;
	cr_assert_eq(xrxe_tp_mr_rereg(e.p.h.side[1].tp, e.blk, IBV_REREG_MR_CHANGE_ACCESS, 0, NULL, 0,
				      0, ACC_ALL),
		     -EBUSY);
	env_fini(&e);
	free(other);
}

Test(mw, alloc_limits_and_dealloc)
{
	struct xrxe_tph h;
	uint32_t handle, rkey, rkey2, handle2;

	xrxe_tph_init(&h, 3, 4096);
	cr_assert_eq(xrxe_tp_mw_alloc(h.side[0].tp, h.side[0].pdn, 3, &handle, &rkey), -EINVAL);
	cr_assert_eq(xrxe_tp_mw_alloc(h.side[0].tp, 12345, IBV_MW_TYPE_1, &handle, &rkey), -EINVAL);
	cr_assert_eq(xrxe_tp_mw_alloc(h.side[0].tp, h.side[0].pdn, IBV_MW_TYPE_2, &handle, &rkey), 0);
	cr_assert_eq(xrxe_tp_pd_free(h.side[0].tp, h.side[0].pdn), -EBUSY, "MW holds the PD");
	cr_assert_eq(xrxe_tp_mw_dealloc(h.side[0].tp, handle), 0);
	cr_assert_eq(xrxe_tp_mw_dealloc(h.side[0].tp, handle), -EINVAL, "twice");
	cr_assert_eq(xrxe_tp_mw_dealloc(h.side[0].tp, 1), -EINVAL, "an MR index is no window");
	/* the next window has another R_Key: slots are drawn at random, and a
	 * slot drawn again gets another key byte */
	for (int i = 0; i < 64; i++) {
		cr_assert_eq(xrxe_tp_mw_alloc(h.side[0].tp, h.side[0].pdn, IBV_MW_TYPE_2, &handle2,
					      &rkey2),
			     0);
		cr_assert_neq(rkey2, rkey);
		if (handle2 == handle)
			cr_assert_neq(rkey2 & 0xff, rkey & 0xff);
		cr_assert_eq(xrxe_tp_mw_dealloc(h.side[0].tp, handle2), 0);
		handle = handle2;
		rkey = rkey2;
	}
	xrxe_tph_fini(&h);
}

/* Dealloc of a bound window, and destroying the QP a type 2 window was bound
 * through, both release the region (dereg works again) and the R_Key. */
Test(mw, dealloc_and_qp_destroy_release_the_region)
{
	struct env e;
	uint32_t h, rkey;

	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	rkey = bind_type2_on_b(&e, &h, 0, 64, IBV_ACCESS_REMOTE_WRITE);
	cr_assert_eq(xrxe_tp_mr_dereg(e.p.h.side[1].tp, e.blk), -EBUSY);
	cr_assert_eq(xrxe_tp_mw_dealloc(e.p.h.side[1].tp, h), 0);
	post_write(&e, 1, bva(&e, 0), rkey, 8);
	xrxe_tph_run(&e.p.h, 1000000000ull);
	cr_assert_eq(poll_one(e.p.ca).status, IBV_WC_REM_ACCESS_ERR, "deallocated window");
	cr_assert_eq(xrxe_tp_mr_dereg(e.p.h.side[1].tp, e.blk), 0);
	env_fini(&e);

	env_init(&e, ACC_ALL, ACC_ALL | IBV_ACCESS_MW_BIND);
	rkey = bind_type2_on_b(&e, &h, 0, 64, IBV_ACCESS_REMOTE_WRITE);
	(void)rkey;
	xrxe_tph_qp_destroy(e.p.b);
	e.p.b = NULL;
	cr_assert_eq(xrxe_tp_mr_dereg(e.p.h.side[1].tp, e.blk), 0, "unbound with its QP");
	cr_assert_eq(xrxe_tp_mw_dealloc(e.p.h.side[1].tp, h), 0);
	env_fini(&e);
}
