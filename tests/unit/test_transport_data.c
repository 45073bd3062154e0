// SPDX-License-Identifier: MIT
/*
 * RC data path end to end: every message arrives exactly once and intact
 * (SEND, SEND_WITH_IMM, inline SEND, WRITE, WRITE_WITH_IMM, READ, atomics;
 * sizes around the MTU and multi-MB; every path MTU) over a wire that drops,
 * reorders, duplicates and corrupts, across the 24-bit PSN wrap.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_harness.h"

#define OPS_MAX 200

enum mix_op { M_SEND, M_SEND_IMM, M_SEND_INL, M_WRITE, M_WRITE_IMM, M_READ, M_FAA, M_CAS, M_N };

struct mix_cfg {
	uint64_t seed;
	enum ibv_mtu mtu;
	struct xrxe_tph_policy pol;
	uint32_t psn_a, psn_b;
	unsigned nops;
	const uint32_t *sizes; /* cycled */
	unsigned nsizes;
	unsigned op_mask;      /* 1 << enum mix_op */
	bool unsignalled;      /* signal only some WRs */
	bool ipv6;
	uint8_t max_rd_atomic;
	unsigned bidir; /* SENDs from B to A at the same time */
	bool sr;        /* both QPs use selective repeat (src/transport/sr.c) */
};

struct mix_rec {
	enum mix_op op;
	uint32_t len;
	uint64_t src_off, dst_off;
	bool signalled;
	uint32_t imm;
	uint64_t add, cmp, swap, expect_orig;
	int ctr;
};

static uint8_t *rnd_buf(struct xrxe_tph *h, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)xrxe_tph_rand(h);
	return p;
}

static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return 128u << m;
}

/* What the in-memory wire did in the last run_mix (a test of loss,
 * reordering or corruption must see them happen). */
struct mix_wire {
	uint64_t dropped, duplicated, reordered, corrupted, rejected_icrc;
};
static struct mix_wire last_wire;

static void run_mix(const struct mix_cfg *cfg)
{
	struct xrxe_tph h;
	struct xrxe_tph_conn c;
	struct xrxe_tph_cq *ca, *cb, *ca_r, *cb_s;
	struct xrxe_tph_qp *a, *b;
	struct mix_rec rec[OPS_MAX];
	uint64_t total = 0, src_pos = 0, dst_pos = 0, rd_pos = 0;
	uint8_t *asrc, *adst, *bsrc, *bdst;
	uint64_t *bctr, *ares, ctr_model[8];
	uint32_t lk_asrc, lk_adst, lk_bsrc, lk_bdst, lk_bctr, lk_ares;
	unsigned i, nrecv = 0, nsig = 0;
	struct ibv_wc wc[OPS_MAX + 8];
	int n;

	cr_assert(cfg->nops <= OPS_MAX);
	xrxe_tph_init(&h, cfg->seed, 4096);
	h.ipv6 = cfg->ipv6;
	for (i = 0; i < cfg->nops; i++)
		total += cfg->sizes[i % cfg->nsizes];

	asrc = rnd_buf(&h, total);
	bsrc = rnd_buf(&h, total);
	adst = calloc(1, total ? total : 1);
	bdst = calloc(1, total ? total : 1);
	bctr = aligned_alloc(64, 64);
	ares = aligned_alloc(64, OPS_MAX * 8);
	for (i = 0; i < 8; i++)
		bctr[i] = ctr_model[i] = xrxe_tph_rand(&h) % 1000;
	memset(ares, 0, OPS_MAX * 8);

	ca = xrxe_tph_cq_create(&h.side[0], 256);
	cb = xrxe_tph_cq_create(&h.side[1], 256);
	ca_r = xrxe_tph_cq_create(&h.side[0], 256);
	cb_s = xrxe_tph_cq_create(&h.side[1], 256);
	a = xrxe_tph_qp_create(&h.side[0], IBV_QPT_RC, ca, ca_r, 256, 256, !cfg->unsignalled);
	b = xrxe_tph_qp_create(&h.side[1], IBV_QPT_RC, cb_s, cb, 256, 256, false);
	xrxe_tph_conn_default(&c);
	c.mtu = cfg->mtu;
	c.psn[0] = cfg->psn_a;
	c.psn[1] = cfg->psn_b;
	if (cfg->max_rd_atomic)
		c.max_rd_atomic = cfg->max_rd_atomic;
	cr_assert_eq(xrxe_tph_connect(a, b, &c), 0);
	if (cfg->sr) {
		cr_assert_eq(xrxe_tp_qp_set_sr(h.side[0].tp, a->qpn, true), 0);
		cr_assert_eq(xrxe_tp_qp_set_sr(h.side[1].tp, b->qpn, true), 0);
	}

	/* iova != host address on side B: translation is exercised */
	lk_asrc = xrxe_tph_mr(&h.side[0], asrc, total, 0, 0);
	lk_adst = xrxe_tph_mr(&h.side[0], adst, total, IBV_ACCESS_LOCAL_WRITE, 0);
	lk_ares = xrxe_tph_mr(&h.side[0], ares, OPS_MAX * 8, IBV_ACCESS_LOCAL_WRITE, 0);
	lk_bsrc = xrxe_tph_mr(&h.side[1], bsrc, total, IBV_ACCESS_REMOTE_READ, 0x7000000000ull);
	lk_bdst = xrxe_tph_mr(&h.side[1], bdst, total,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0x9000000000ull);
	lk_bctr = xrxe_tph_mr(&h.side[1], bctr, 64,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, 0xa000000000ull);

	for (i = 0; i < cfg->nops; i++) {
		struct mix_rec *r = &rec[i];
		struct xrxe_tph_send w = { .wr_id = i };
		struct xrxe_sge sge;
		unsigned op;

		do
			op = (unsigned)(xrxe_tph_rand(&h) % M_N);
		while (!(cfg->op_mask & (1u << op)));
		r->op = (enum mix_op)op;
		r->len = cfg->sizes[i % cfg->nsizes];
		if (r->op == M_SEND_INL && r->len > 256)
			r->op = M_SEND;
		if (r->op == M_FAA || r->op == M_CAS)
			r->len = 8;
		r->signalled = !cfg->unsignalled || (xrxe_tph_rand(&h) & 1) || i == cfg->nops - 1;
		r->imm = (uint32_t)xrxe_tph_rand(&h);
		w.flags = r->signalled && cfg->unsignalled ? IBV_SEND_SIGNALED : 0;
		r->src_off = src_pos;
		sge = (struct xrxe_sge){ (uintptr_t)asrc + src_pos, r->len, lk_asrc };
		w.sge = &sge;
		w.nsge = 1;
		switch (r->op) {
		case M_SEND:
		case M_SEND_IMM:
		case M_SEND_INL: {
			struct xrxe_sge rs = { 0x9000000000ull + dst_pos, r->len, lk_bdst };

			r->dst_off = dst_pos;
			cr_assert_eq(xrxe_tph_post_recv(b, 1000 + i, &rs, 1), 0);
			nrecv++;
			w.opcode = r->op == M_SEND_IMM ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
			w.ex = r->imm;
			if (r->op == M_SEND_INL) {
				w.flags |= IBV_SEND_INLINE;
				w.inl = asrc + src_pos;
				w.inl_len = r->len;
			}
			dst_pos += r->len;
			src_pos += r->len;
			break;
		}
		case M_WRITE:
		case M_WRITE_IMM:
			r->dst_off = dst_pos;
			w.opcode = r->op == M_WRITE_IMM ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
			w.raddr = 0x9000000000ull + dst_pos;
			w.rkey = lk_bdst;
			w.ex = r->imm;
			if (r->op == M_WRITE_IMM) {
				cr_assert_eq(xrxe_tph_post_recv(b, 1000 + i, NULL, 0), 0);
				nrecv++;
			}
			dst_pos += r->len;
			src_pos += r->len;
			break;
		case M_READ:
			r->src_off = rd_pos; /* in bsrc */
			r->dst_off = rd_pos; /* in adst */
			sge = (struct xrxe_sge){ (uintptr_t)adst + rd_pos, r->len, lk_adst };
			w.opcode = IBV_WR_RDMA_READ;
			w.raddr = 0x7000000000ull + rd_pos;
			w.rkey = lk_bsrc;
			rd_pos += r->len;
			break;
		case M_FAA:
		case M_CAS:
			r->ctr = (int)(xrxe_tph_rand(&h) % 8);
			sge = (struct xrxe_sge){ (uintptr_t)&ares[i], 8, lk_ares };
			w.raddr = 0xa000000000ull + 8 * (uint64_t)r->ctr;
			w.rkey = lk_bctr;
			r->expect_orig = ctr_model[r->ctr];
			if (r->op == M_FAA) {
				r->add = xrxe_tph_rand(&h) % 100;
				w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
				w.compare_add = r->add;
				ctr_model[r->ctr] += r->add;
			} else {
				/* half the CAS succeed */
				r->cmp = (xrxe_tph_rand(&h) & 1) ? ctr_model[r->ctr] : 12345678;
				r->swap = xrxe_tph_rand(&h) % 1000;
				w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
				w.compare_add = r->cmp;
				w.swap = r->swap;
				if (r->cmp == ctr_model[r->ctr])
					ctr_model[r->ctr] = r->swap;
			}
			break;
		default:
			break;
		}
		if (r->signalled)
			nsig++;
		cr_assert_eq(xrxe_tph_post_send(a, &w), 0);
	}

	/* B -> A: SENDs of bsrc[k * 4096 .. + len] into arecv[k * 4096] */
	uint8_t *arecv = calloc(cfg->bidir ? cfg->bidir : 1, 4096);
	uint32_t lk_arecv = xrxe_tph_mr(&h.side[0], arecv, (cfg->bidir ? cfg->bidir : 1) * 4096ull,
					IBV_ACCESS_LOCAL_WRITE, 0);
	uint8_t *bsend = rnd_buf(&h, (cfg->bidir ? cfg->bidir : 1) * 4096ull);
	uint32_t lk_bsend = xrxe_tph_mr(&h.side[1], bsend, (cfg->bidir ? cfg->bidir : 1) * 4096ull,
					0, 0);

	for (i = 0; i < cfg->bidir; i++) {
		uint32_t len = (uint32_t)(xrxe_tph_rand(&h) % 4097);
		struct xrxe_sge rs = { (uintptr_t)arecv + 4096ull * i, 4096, lk_arecv };
		struct xrxe_sge ss = { (uintptr_t)bsend + 4096ull * i, len, lk_bsend };

		cr_assert_eq(xrxe_tph_post_recv(a, 5000 + i, &rs, 1), 0);
		cr_assert_eq(xrxe_tph_post_send(b, &(struct xrxe_tph_send){
			.wr_id = 6000 + i, .opcode = IBV_WR_SEND, .flags = IBV_SEND_SIGNALED,
			.ex = len, .sge = &ss, .nsge = 1 }), 0);
	}

	h.pol = cfg->pol;
	cr_assert(xrxe_tph_run(&h, 600ull * 1000000000ull), "did not settle");
	h.pol = (struct xrxe_tph_policy){ 0 };
	if (getenv("XRXE_TPH_STATS"))
		fprintf(stderr,
			"seed %lu: submitted %lu delivered %lu dropped %lu dup %lu reorder %lu "
			"corrupt %lu rejected %lu (icrc %lu) nobufs %lu t=%lu ms\n",
			(unsigned long)cfg->seed, (unsigned long)h.submitted,
			(unsigned long)h.delivered, (unsigned long)h.dropped,
			(unsigned long)h.duplicated, (unsigned long)h.reordered,
			(unsigned long)h.corrupted, (unsigned long)h.rejected,
			(unsigned long)h.rejected_icrc, (unsigned long)h.nobufs,
			(unsigned long)(h.now / 1000000));
	/* the policy really was applied (where enough frames went by) */
#define APPLIED(ppm, n) cr_assert(h.submitted * (ppm) < 10000000 || (n), #ppm " not applied")
	APPLIED(cfg->pol.drop_ppm, h.dropped);
	APPLIED(cfg->pol.corrupt_ppm, h.corrupted);
	APPLIED(cfg->pol.dup_ppm, h.duplicated);
	APPLIED(cfg->pol.reorder_ppm, h.reordered);
#undef APPLIED

	/* the builder never produced a frame the parser refuses */
	cr_assert_eq(h.bad_tx, 0);
	/* every corrupted frame was caught by the parser (ICRC) */
	cr_assert_eq(h.rejected, h.corrupted, "rejected %lu corrupted %lu",
		     (unsigned long)h.rejected, (unsigned long)h.corrupted);

	/* send completions: the signalled WRs, in order, all successful */
	n = xrxe_tph_poll_cq(ca, wc, OPS_MAX + 8);
	if ((unsigned)n != nsig && getenv("XRXE_TPH_STATS"))
		for (i = 0; i < (unsigned)n; i++)
			fprintf(stderr, "cqe %u: wr %lu status %d\n", i, (unsigned long)wc[i].wr_id,
				wc[i].status);
	cr_assert_eq((unsigned)n, nsig, "send CQEs %d expected %u", n, nsig);
	{
		unsigned k = 0;

		for (i = 0; i < cfg->nops; i++) {
			static const enum ibv_wc_opcode wop[M_N] = {
				IBV_WC_SEND,	   IBV_WC_SEND,	     IBV_WC_SEND,     IBV_WC_RDMA_WRITE,
				IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD, IBV_WC_COMP_SWAP,
			};

			if (!rec[i].signalled)
				continue;
			cr_assert_eq(wc[k].status, IBV_WC_SUCCESS, "wr %u status %d", i, wc[k].status);
			cr_assert_eq(wc[k].wr_id, i);
			cr_assert_eq(wc[k].opcode, wop[rec[i].op]);
			cr_assert_eq(wc[k].byte_len, rec[i].len);
			k++;
		}
	}
	/* receive completions: exactly one per SEND / WRITE_WITH_IMM, in order */
	n = xrxe_tph_poll_cq(cb, wc, OPS_MAX + 8);
	cr_assert_eq((unsigned)n, nrecv, "recv CQEs %d expected %u", n, nrecv);
	{
		unsigned k = 0;

		for (i = 0; i < cfg->nops; i++) {
			struct mix_rec *r = &rec[i];

			if (r->op != M_SEND && r->op != M_SEND_IMM && r->op != M_SEND_INL &&
			    r->op != M_WRITE_IMM)
				continue;
			cr_assert_eq(wc[k].status, IBV_WC_SUCCESS);
			cr_assert_eq(wc[k].wr_id, 1000 + i);
			cr_assert_eq(wc[k].byte_len, r->len);
			cr_assert_eq(wc[k].qp_num, b->qpn);
			if (r->op == M_WRITE_IMM) {
				cr_assert_eq(wc[k].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
				cr_assert(wc[k].wc_flags & IBV_WC_WITH_IMM);
				cr_assert_eq(wc[k].imm_data, r->imm);
			} else if (r->op == M_SEND_IMM) {
				cr_assert_eq(wc[k].opcode, IBV_WC_RECV);
				cr_assert(wc[k].wc_flags & IBV_WC_WITH_IMM);
				cr_assert_eq(wc[k].imm_data, r->imm);
			} else {
				cr_assert_eq(wc[k].opcode, IBV_WC_RECV);
				cr_assert(!(wc[k].wc_flags & IBV_WC_WITH_IMM));
			}
			k++;
		}
	}
	/* data */
	for (i = 0; i < cfg->nops; i++) {
		struct mix_rec *r = &rec[i];

		switch (r->op) {
		case M_SEND:
		case M_SEND_IMM:
		case M_SEND_INL:
		case M_WRITE:
		case M_WRITE_IMM:
			cr_assert(!memcmp(bdst + r->dst_off, asrc + r->src_off, r->len),
				  "op %u (%d, %u bytes) data mismatch", i, r->op, r->len);
			break;
		case M_READ:
			cr_assert(!memcmp(adst + r->dst_off, bsrc + r->src_off, r->len),
				  "read %u (%u bytes) mismatch", i, r->len);
			break;
		case M_FAA:
		case M_CAS:
			cr_assert_eq(ares[i], r->expect_orig, "atomic %u orig %lu expected %lu", i,
				     (unsigned long)ares[i], (unsigned long)r->expect_orig);
			break;
		default:
			break;
		}
	}
	/* the other direction */
	n = xrxe_tph_poll_cq(cb_s, wc, OPS_MAX + 8);
	cr_assert_eq((unsigned)n, cfg->bidir);
	for (i = 0; i < (unsigned)n; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].wr_id, 6000 + i);
	}
	n = xrxe_tph_poll_cq(ca_r, wc, OPS_MAX + 8);
	cr_assert_eq((unsigned)n, cfg->bidir);
	for (i = 0; i < (unsigned)n; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].wr_id, 5000 + i);
		cr_assert(!memcmp(arecv + 4096ull * i, bsend + 4096ull * i, wc[i].byte_len));
	}
	free(arecv);
	free(bsend);
	/* atomics executed exactly once */
	for (i = 0; i < 8; i++)
		cr_assert_eq(bctr[i], ctr_model[i]);
	/* no stray completions later, both QPs still healthy */
	cr_assert(xrxe_tph_run(&h, 10ull * 1000000000ull));
	cr_assert_eq(xrxe_tph_cq_count(ca), 0);
	cr_assert_eq(xrxe_tph_cq_count(cb), 0);
	{
		struct ibv_qp_attr at;

		xrxe_tp_qp_query(h.side[0].tp, a->qp, &at, NULL);
		cr_assert_eq(at.qp_state, IBV_QPS_RTS);
		xrxe_tp_qp_query(h.side[1].tp, b->qp, &at, NULL);
		cr_assert_eq(at.qp_state, IBV_QPS_RTS);
	}
	xrxe_tph_qp_destroy(a);
	xrxe_tph_qp_destroy(b);
	xrxe_tph_cq_destroy(ca);
	xrxe_tph_cq_destroy(cb);
	xrxe_tph_cq_destroy(ca_r);
	xrxe_tph_cq_destroy(cb_s);
	free(asrc);
	free(bsrc);
	free(adst);
	free(bdst);
	free(bctr);
	free(ares);
	last_wire = (struct mix_wire){ .dropped = h.dropped, .duplicated = h.duplicated,
				       .reordered = h.reordered, .corrupted = h.corrupted,
				       .rejected_icrc = h.rejected_icrc };
	xrxe_tph_fini(&h);
}

#define ALL_OPS ((1u << M_N) - 1)

static void sizes_for(enum ibv_mtu m, uint32_t *s)
{
	uint32_t mtu = mtu_bytes(m);

	s[0] = 0;
	s[1] = 1;
	s[2] = mtu - 1;
	s[3] = mtu;
	s[4] = mtu + 1;
	s[5] = 3 * mtu + 17;
	s[6] = 64;
	s[7] = 2 * mtu;
}

Test(transport_data, every_mtu_clean)
{
	enum ibv_mtu m;

	for (m = IBV_MTU_256; m <= IBV_MTU_4096; m++) {
		uint32_t sizes[8];
		struct mix_cfg cfg = {
			.seed = 100 + m, .mtu = m, .psn_a = 10, .psn_b = 0x800000, .nops = 80,
			.sizes = sizes, .nsizes = 8, .op_mask = ALL_OPS,
		};

		sizes_for(m, sizes);
		run_mix(&cfg);
	}
}

Test(transport_data, every_mtu_lossy_multifrag)
{
	enum ibv_mtu m;

	for (m = IBV_MTU_256; m <= IBV_MTU_4096; m++) {
		uint32_t sizes[8];
		struct mix_cfg cfg = {
			.seed = 200 + m, .mtu = m, .psn_a = 0xffffff - 40, .psn_b = 0xfffff0,
			.nops = 80, .sizes = sizes, .nsizes = 8, .op_mask = ALL_OPS,
			.pol = { .drop_ppm = 10000, .multi_frag = true },
		};

		sizes_for(m, sizes);
		run_mix(&cfg);
	}
}

Test(transport_data, drop10_psn_wrap)
{
	uint32_t sizes[8];
	struct mix_cfg cfg = {
		.seed = 7, .mtu = IBV_MTU_1024, .psn_a = 0xffffff - 100, .psn_b = 0xffffff,
		.nops = 150, .sizes = sizes, .nsizes = 8, .op_mask = ALL_OPS,
		.pol = { .drop_ppm = 100000 },
	};

	sizes_for(IBV_MTU_1024, sizes);
	run_mix(&cfg);
}

Test(transport_data, reorder_dup_corrupt)
{
	uint32_t sizes[8];
	struct mix_cfg cfg = {
		.seed = 8, .mtu = IBV_MTU_512, .psn_a = 0xfffff0, .psn_b = 3, .nops = 150,
		.sizes = sizes, .nsizes = 8, .op_mask = ALL_OPS,
		.pol = { .reorder_ppm = 50000, .dup_ppm = 50000, .corrupt_ppm = 30000,
			 .drop_ppm = 20000, .multi_frag = true },
	};

	sizes_for(IBV_MTU_512, sizes);
	run_mix(&cfg);
	/* the policy must have bitten: every impairment happened and corrupt
	 * frames died at the ICRC check (run_mix checked the data) */
	cr_assert_gt(last_wire.dropped, 0);
	cr_assert_gt(last_wire.duplicated, 0);
	cr_assert_gt(last_wire.reordered, 0);
	cr_assert_gt(last_wire.corrupted, 0);
	cr_assert_gt(last_wire.rejected_icrc, 0);
}

Test(transport_data, ipv6_unsignalled_nobufs)
{
	uint32_t sizes[8];
	struct mix_cfg cfg = {
		.seed = 9, .mtu = IBV_MTU_2048, .psn_a = 77, .psn_b = 0xfffffe, .nops = 120,
		.sizes = sizes, .nsizes = 8, .op_mask = ALL_OPS, .unsignalled = true,
		.ipv6 = true, .pol = { .nobuf_ppm = 100000, .drop_ppm = 10000 },
	};

	sizes_for(IBV_MTU_2048, sizes);
	run_mix(&cfg);
}

Test(transport_data, multi_mb)
{
	static const uint32_t sizes[] = { 3u << 20, 1, 2u << 20, 4096 };
	struct mix_cfg cfg = {
		.seed = 10, .mtu = IBV_MTU_4096, .psn_a = 0xffff00, .psn_b = 0xffff80, .nops = 8,
		.sizes = sizes, .nsizes = 4,
		.op_mask = (1u << M_SEND) | (1u << M_WRITE) | (1u << M_READ) | (1u << M_WRITE_IMM),
		.pol = { .drop_ppm = 1000, .multi_frag = true },
	};

	run_mix(&cfg);
}

Test(transport_data, multi_mb_lossy_small_mtu)
{
	static const uint32_t sizes[] = { 1u << 20, 333333 };
	struct mix_cfg cfg = {
		.seed = 11, .mtu = IBV_MTU_1024, .psn_a = 0xfffff0, .psn_b = 5, .nops = 4,
		.sizes = sizes, .nsizes = 2,
		.op_mask = (1u << M_SEND) | (1u << M_WRITE) | (1u << M_READ),
		.pol = { .drop_ppm = 20000, .reorder_ppm = 10000, .dup_ppm = 10000 },
	};

	run_mix(&cfg);
}

Test(transport_data, rd_atomic_depth_one)
{
	uint32_t sizes[8];
	struct mix_cfg cfg = {
		.seed = 12, .mtu = IBV_MTU_256, .psn_a = 1, .psn_b = 2, .nops = 60,
		.sizes = sizes, .nsizes = 8,
		.op_mask = (1u << M_READ) | (1u << M_FAA) | (1u << M_CAS) | (1u << M_SEND),
		.max_rd_atomic = 1, .pol = { .drop_ppm = 30000 },
	};

	sizes_for(IBV_MTU_256, sizes);
	run_mix(&cfg);
}

/* Many seeds, every impairment at once, all MTUs, both address families,
 * traffic in both directions. Loss stays <= 5% here: with the spec's finite
 * retry_cnt (7 retries) a WR legitimately fails with RETRY_EXC_ERR when it
 * or its response is lost 8 times in a row, which at 10% loss plus
 * corruption happens about once in 10^4 WRs (XRXE_SOAK=n runs more seeds). */
Test(transport_data, soak, .timeout = 60)
{
	unsigned n = getenv("XRXE_SOAK") ? (unsigned)atoi(getenv("XRXE_SOAK")) : 24, i;
	unsigned first = getenv("XRXE_SOAK_FIRST") ? (unsigned)atoi(getenv("XRXE_SOAK_FIRST")) : 0;

	for (i = first; i < first + n; i++) {
		uint32_t sizes[8];
		enum ibv_mtu m = (enum ibv_mtu)(IBV_MTU_256 + i % 5);
		struct mix_cfg cfg = {
			.seed = 1000 + i, .mtu = m, .psn_a = 0xffffff - (i * 37) % 200,
			.psn_b = (i * 7919) & 0xffffff, .nops = 60, .sizes = sizes, .nsizes = 8,
			.op_mask = ALL_OPS, .unsignalled = i & 1, .ipv6 = i & 2,
			.max_rd_atomic = (uint8_t)(1 + i % 4), .bidir = i % 3 ? 40 : 0,
			.pol = { .drop_ppm = 20000 + 10000 * (i % 4), .reorder_ppm = 20000,
				 .dup_ppm = 20000, .corrupt_ppm = 10000, .nobuf_ppm = 20000,
				 .multi_frag = i & 4 },
		};

		sizes_for(m, sizes);
		run_mix(&cfg);
	}
}

/* Over a link that takes time (10 Gbit/s, 20 us each way) a window is in
 * flight when a packet is lost, so the loss probes and the shrinking send
 * window (src/transport/rto.c) are what recovers: every operation, across
 * the PSN wrap, with loss, reordering and duplication both ways. */
Test(transport_data, link_loss_reorder_dup_psn_wrap)
{
	uint32_t sizes[8];
	unsigned m;

	for (m = IBV_MTU_1024; m <= IBV_MTU_4096; m += 3) {
		struct mix_cfg cfg = {
			.seed = 400 + m, .mtu = (enum ibv_mtu)m, .psn_a = 0xffffff - 60,
			.psn_b = 0xfffff8, .nops = 120, .sizes = sizes, .nsizes = 8,
			.op_mask = ALL_OPS, .bidir = 40,
			.pol = { .drop_ppm = 10000, .reorder_ppm = 5000, .dup_ppm = 5000,
				 .link_bps = 10000000000ull, .link_delay_ns = 20000 },
		};

		sizes_for((enum ibv_mtu)m, sizes);
		run_mix(&cfg);
	}
}

Test(transport_data, drop10_multi_mb_bursts)
{
	static const uint32_t sizes[] = { 1u << 20, 777777, 65536 };
	unsigned s;

	for (s = 0; s < 3; s++) {
		struct mix_cfg cfg = {
			.seed = 300 + s, .mtu = (enum ibv_mtu)(IBV_MTU_1024 + s), .psn_a = 0xffff00,
			.psn_b = 0xfffff0, .nops = 6, .sizes = sizes, .nsizes = 3,
			.op_mask = (1u << M_SEND) | (1u << M_WRITE) | (1u << M_READ) |
				   (1u << M_WRITE_IMM) | (1u << M_FAA),
			.pol = { .drop_ppm = 100000, .reorder_ppm = 10000, .dup_ppm = 10000,
				 .corrupt_ppm = 5000, .multi_frag = true },
		};

		run_mix(&cfg);
	}
}

/* --- selective repeat (src/transport/sr.c, docs/selective-repeat.md) ---------
 * The same checks with both QPs using selective repeat: every operation
 * exactly once and intact, in order, across the PSN wrap, through loss,
 * reordering, duplication and corruption, with and without link delay,
 * READs larger than the scoreboard (go-back-N for those) included. */

Test(transport_data_sr, every_mtu_lossy_multifrag)
{
	enum ibv_mtu m;

	for (m = IBV_MTU_256; m <= IBV_MTU_4096; m++) {
		uint32_t sizes[8];
		struct mix_cfg cfg = {
			.seed = 2200 + m, .mtu = m, .psn_a = 0xffffff - 40, .psn_b = 0xfffff0,
			.nops = 80, .sizes = sizes, .nsizes = 8, .op_mask = ALL_OPS, .sr = true,
			.pol = { .drop_ppm = 20000, .multi_frag = true },
		};

		sizes_for(m, sizes);
		run_mix(&cfg);
	}
}

Test(transport_data_sr, reorder_dup_corrupt_drop10_psn_wrap)
{
	uint32_t sizes[8];
	struct mix_cfg cfg = {
		.seed = 2008, .mtu = IBV_MTU_512, .psn_a = 0xfffff0, .psn_b = 3, .nops = 150,
		.sizes = sizes, .nsizes = 8, .op_mask = ALL_OPS, .sr = true, .bidir = 40,
		.pol = { .reorder_ppm = 50000, .dup_ppm = 50000, .corrupt_ppm = 30000,
			 .drop_ppm = 100000, .multi_frag = true },
	};

	sizes_for(IBV_MTU_512, sizes);
	run_mix(&cfg);
}

Test(transport_data_sr, link_loss_reorder_dup_psn_wrap)
{
	uint32_t sizes[8];
	unsigned m;

	for (m = IBV_MTU_1024; m <= IBV_MTU_4096; m += 3) {
		struct mix_cfg cfg = {
			.seed = 2400 + m, .mtu = (enum ibv_mtu)m, .psn_a = 0xffffff - 60,
			.psn_b = 0xfffff8, .nops = 120, .sizes = sizes, .nsizes = 8,
			.op_mask = ALL_OPS, .bidir = 40, .sr = true,
			.pol = { .drop_ppm = 20000, .reorder_ppm = 5000, .dup_ppm = 5000,
				 .link_bps = 10000000000ull, .link_delay_ns = 20000 },
		};

		sizes_for((enum ibv_mtu)m, sizes);
		run_mix(&cfg);
	}
}

Test(transport_data_sr, multi_mb_lossy_small_mtu)
{
	static const uint32_t sizes[] = { 1u << 20, 333333, 65536 };
	struct mix_cfg cfg = {
		.seed = 2011, .mtu = IBV_MTU_1024, .psn_a = 0xfffff0, .psn_b = 5, .nops = 6,
		.sizes = sizes, .nsizes = 3, .sr = true,
		.op_mask = (1u << M_SEND) | (1u << M_WRITE) | (1u << M_READ) | (1u << M_FAA),
		.pol = { .drop_ppm = 20000, .reorder_ppm = 10000, .dup_ppm = 10000 },
	};

	run_mix(&cfg);
}

Test(transport_data_sr, soak, .timeout = 60)
{
	unsigned n = getenv("XRXE_SOAK") ? (unsigned)atoi(getenv("XRXE_SOAK")) : 12, i;
	unsigned first = getenv("XRXE_SOAK_FIRST") ? (unsigned)atoi(getenv("XRXE_SOAK_FIRST")) : 0;

	for (i = first; i < first + n; i++) {
		uint32_t sizes[8];
		enum ibv_mtu m = (enum ibv_mtu)(IBV_MTU_256 + i % 5);
		struct mix_cfg cfg = {
			.seed = 3000 + i, .mtu = m, .psn_a = 0xffffff - (i * 37) % 200,
			.psn_b = (i * 7919) & 0xffffff, .nops = 60, .sizes = sizes, .nsizes = 8,
			.op_mask = ALL_OPS, .unsignalled = i & 1, .ipv6 = i & 2, .sr = true,
			.max_rd_atomic = (uint8_t)(1 + i % 4), .bidir = i % 3 ? 40 : 0,
			.pol = { .drop_ppm = 20000 + 10000 * (i % 4), .reorder_ppm = 20000,
				 .dup_ppm = 20000, .corrupt_ppm = 10000, .nobuf_ppm = 20000,
				 .multi_frag = i & 4 },
		};

		sizes_for(m, sizes);
		run_mix(&cfg);
	}
}
