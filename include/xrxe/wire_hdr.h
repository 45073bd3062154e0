/* SPDX-License-Identifier: MIT */
/*
 * Typed accessors for the InfiniBand transport headers (IBA Vol. 1 §9.2-9.3).
 *
 * Every header is big-endian on the wire. These helpers take and return
 * host-order values and hide the bit packing, so no other file shifts or masks
 * a header word by hand. The structs in wire.h are packed, so a plain field
 * access compiles to an unaligned-safe load or store: a header may sit at any
 * byte offset in a frame (e.g. after a VLAN tag, or 12 bytes into a UMEM frame).
 *
 * Setters write only their own bits and keep the others, so a header can be
 * built field by field in any order; reserved bits are left as they are (the
 * builder zeroes the header first, so they go out as zero).
 */
#ifndef XRXE_WIRE_HDR_H
#define XRXE_WIRE_HDR_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>

#include "xrxe/wire.h" /* the structs; a no-op when wire.h includes us */

/* Replace the bits of `mask` in a host-order word with `val` (already shifted). */
static inline uint32_t xrxe__bits32(uint32_t word, uint32_t mask, uint32_t val)
{
	return (word & ~mask) | (val & mask);
}

/* ---- BTH (IBA 9.2, figure 95) ------------------------------------------- */

#define XRXE_BTH_FECN 0x80000000u
#define XRXE_BTH_BECN 0x40000000u
#define XRXE_BTH_RESV6_MASK 0x3f000000u
#define XRXE_BTH_ACKREQ 0x80000000u
#define XRXE_BTH_RESV7_MASK 0x7f000000u

static inline uint8_t xrxe_bth_opcode(const struct xrxe_bth *bth) { return bth->opcode; }
static inline void xrxe_bth_set_opcode(struct xrxe_bth *bth, uint8_t opcode) { bth->opcode = opcode; }

static inline bool xrxe_bth_se(const struct xrxe_bth *bth) { return bth->flags & XRXE_BTH_SE; }
static inline void xrxe_bth_set_se(struct xrxe_bth *bth, bool se)
{
	bth->flags = (uint8_t)((bth->flags & ~XRXE_BTH_SE) | (se ? XRXE_BTH_SE : 0));
}

static inline bool xrxe_bth_mig(const struct xrxe_bth *bth) { return bth->flags & XRXE_BTH_MIG; }
static inline void xrxe_bth_set_mig(struct xrxe_bth *bth, bool mig)
{
	bth->flags = (uint8_t)((bth->flags & ~XRXE_BTH_MIG) | (mig ? XRXE_BTH_MIG : 0));
}

static inline uint8_t xrxe_bth_pad(const struct xrxe_bth *bth)
{
	return (bth->flags & XRXE_BTH_PAD_MASK) >> XRXE_BTH_PAD_SHIFT;
}
static inline void xrxe_bth_set_pad(struct xrxe_bth *bth, uint8_t pad)
{
	bth->flags = (uint8_t)((bth->flags & ~XRXE_BTH_PAD_MASK) |
			       ((pad << XRXE_BTH_PAD_SHIFT) & XRXE_BTH_PAD_MASK));
}

static inline uint8_t xrxe_bth_tver(const struct xrxe_bth *bth) { return bth->flags & XRXE_BTH_TVER_MASK; }
static inline void xrxe_bth_set_tver(struct xrxe_bth *bth, uint8_t tver)
{
	bth->flags = (uint8_t)((bth->flags & ~XRXE_BTH_TVER_MASK) | (tver & XRXE_BTH_TVER_MASK));
}

static inline uint16_t xrxe_bth_pkey(const struct xrxe_bth *bth) { return be16toh(bth->pkey); }
static inline void xrxe_bth_set_pkey(struct xrxe_bth *bth, uint16_t pkey) { bth->pkey = htobe16(pkey); }

static inline bool xrxe_bth_fecn(const struct xrxe_bth *bth) { return be32toh(bth->qpn) & XRXE_BTH_FECN; }
static inline void xrxe_bth_set_fecn(struct xrxe_bth *bth, bool fecn)
{
	bth->qpn = htobe32(xrxe__bits32(be32toh(bth->qpn), XRXE_BTH_FECN, fecn ? XRXE_BTH_FECN : 0));
}

static inline bool xrxe_bth_becn(const struct xrxe_bth *bth) { return be32toh(bth->qpn) & XRXE_BTH_BECN; }
static inline void xrxe_bth_set_becn(struct xrxe_bth *bth, bool becn)
{
	bth->qpn = htobe32(xrxe__bits32(be32toh(bth->qpn), XRXE_BTH_BECN, becn ? XRXE_BTH_BECN : 0));
}

/* The six reserved bits after FECN/BECN: sent as 0, ignored on receive. */
static inline uint8_t xrxe_bth_resv6(const struct xrxe_bth *bth)
{
	return (be32toh(bth->qpn) & XRXE_BTH_RESV6_MASK) >> 24;
}

static inline uint32_t xrxe_bth_qpn(const struct xrxe_bth *bth) { return be32toh(bth->qpn) & XRXE_QPN_MASK; }
static inline void xrxe_bth_set_qpn(struct xrxe_bth *bth, uint32_t qpn)
{
	bth->qpn = htobe32(xrxe__bits32(be32toh(bth->qpn), XRXE_QPN_MASK, qpn));
}

static inline bool xrxe_bth_ackreq(const struct xrxe_bth *bth) { return be32toh(bth->apsn) & XRXE_BTH_ACKREQ; }
static inline void xrxe_bth_set_ackreq(struct xrxe_bth *bth, bool ackreq)
{
	bth->apsn = htobe32(xrxe__bits32(be32toh(bth->apsn), XRXE_BTH_ACKREQ, ackreq ? XRXE_BTH_ACKREQ : 0));
}

/* The seven reserved bits after AckReq. */
static inline uint8_t xrxe_bth_resv7(const struct xrxe_bth *bth)
{
	return (be32toh(bth->apsn) & XRXE_BTH_RESV7_MASK) >> 24;
}

static inline uint32_t xrxe_bth_psn(const struct xrxe_bth *bth) { return be32toh(bth->apsn) & XRXE_PSN_MASK; }
static inline void xrxe_bth_set_psn(struct xrxe_bth *bth, uint32_t psn)
{
	bth->apsn = htobe32(xrxe__bits32(be32toh(bth->apsn), XRXE_PSN_MASK, psn));
}

/* ---- RDETH (IBA 9.3.2): resv8 | EE context(24) -------------------------- */

static inline uint32_t xrxe_rdeth_een(const struct xrxe_rdeth *h) { return be32toh(h->een) & 0xffffffu; }
static inline void xrxe_rdeth_set_een(struct xrxe_rdeth *h, uint32_t een)
{
	h->een = htobe32(xrxe__bits32(be32toh(h->een), 0xffffffu, een));
}

/* ---- XRCETH (IBA 9.3.x, XRC): resv8 | XRCSRQ(24) ------------------------- */

static inline uint32_t xrxe_xrceth_srqn(const struct xrxe_xrceth *h) { return be32toh(h->srqn) & 0xffffffu; }
static inline void xrxe_xrceth_set_srqn(struct xrxe_xrceth *h, uint32_t srqn)
{
	h->srqn = htobe32(xrxe__bits32(be32toh(h->srqn), 0xffffffu, srqn));
}

/* ---- DETH (IBA 9.3.3): Q_Key | resv8 | SrcQP(24) ------------------------ */

static inline uint32_t xrxe_deth_qkey(const struct xrxe_deth *h) { return be32toh(h->qkey); }
static inline void xrxe_deth_set_qkey(struct xrxe_deth *h, uint32_t qkey) { h->qkey = htobe32(qkey); }

static inline uint32_t xrxe_deth_sqp(const struct xrxe_deth *h) { return be32toh(h->sqp) & XRXE_QPN_MASK; }
static inline void xrxe_deth_set_sqp(struct xrxe_deth *h, uint32_t sqp)
{
	h->sqp = htobe32(xrxe__bits32(be32toh(h->sqp), XRXE_QPN_MASK, sqp));
}

/* ---- RETH (IBA 9.3.4): VA(64) | R_Key | DMA length ---------------------- */

static inline uint64_t xrxe_reth_va(const struct xrxe_reth *h) { return be64toh(h->va); }
static inline void xrxe_reth_set_va(struct xrxe_reth *h, uint64_t va) { h->va = htobe64(va); }
static inline uint32_t xrxe_reth_rkey(const struct xrxe_reth *h) { return be32toh(h->rkey); }
static inline void xrxe_reth_set_rkey(struct xrxe_reth *h, uint32_t rkey) { h->rkey = htobe32(rkey); }
static inline uint32_t xrxe_reth_len(const struct xrxe_reth *h) { return be32toh(h->len); }
static inline void xrxe_reth_set_len(struct xrxe_reth *h, uint32_t len) { h->len = htobe32(len); }

/* ---- AtomicETH (IBA 9.3.5): VA | R_Key | Swap/Add | Compare ------------- */

static inline uint64_t xrxe_atmeth_va(const struct xrxe_atmeth *h) { return be64toh(h->va); }
static inline void xrxe_atmeth_set_va(struct xrxe_atmeth *h, uint64_t va) { h->va = htobe64(va); }
static inline uint32_t xrxe_atmeth_rkey(const struct xrxe_atmeth *h) { return be32toh(h->rkey); }
static inline void xrxe_atmeth_set_rkey(struct xrxe_atmeth *h, uint32_t rkey) { h->rkey = htobe32(rkey); }
static inline uint64_t xrxe_atmeth_swap_add(const struct xrxe_atmeth *h) { return be64toh(h->swap_add); }
static inline void xrxe_atmeth_set_swap_add(struct xrxe_atmeth *h, uint64_t v) { h->swap_add = htobe64(v); }
static inline uint64_t xrxe_atmeth_comp(const struct xrxe_atmeth *h) { return be64toh(h->comp); }
static inline void xrxe_atmeth_set_comp(struct xrxe_atmeth *h, uint64_t v) { h->comp = htobe64(v); }

/* ---- AETH (IBA 9.3.6): Syndrome(8) | MSN(24) ---------------------------- */

static inline uint8_t xrxe_aeth_syndrome(const struct xrxe_aeth *h) { return be32toh(h->smsn) >> 24; }
static inline void xrxe_aeth_set_syndrome(struct xrxe_aeth *h, uint8_t syn)
{
	h->smsn = htobe32(xrxe__bits32(be32toh(h->smsn), 0xff000000u, (uint32_t)syn << 24));
}
static inline uint32_t xrxe_aeth_msn(const struct xrxe_aeth *h) { return be32toh(h->smsn) & XRXE_MSN_MASK; }
static inline void xrxe_aeth_set_msn(struct xrxe_aeth *h, uint32_t msn)
{
	h->smsn = htobe32(xrxe__bits32(be32toh(h->smsn), XRXE_MSN_MASK, msn));
}

/* ---- AtomicAckETH (IBA 9.3.7): original remote data --------------------- */

static inline uint64_t xrxe_atmack_orig(const struct xrxe_atmack *h) { return be64toh(h->orig); }
static inline void xrxe_atmack_set_orig(struct xrxe_atmack *h, uint64_t orig) { h->orig = htobe64(orig); }

/* ---- ImmDt (IBA 9.3.8): opaque 4 bytes, kept in network order ----------- */

static inline uint32_t xrxe_immdt_imm(const struct xrxe_immdt *h) { return h->imm; }
static inline void xrxe_immdt_set_imm(struct xrxe_immdt *h, uint32_t imm_be) { h->imm = imm_be; }

/* ---- IETH (IBA 9.3.9): R_Key to invalidate ------------------------------ */

static inline uint32_t xrxe_ieth_rkey(const struct xrxe_ieth *h) { return be32toh(h->rkey); }
static inline void xrxe_ieth_set_rkey(struct xrxe_ieth *h, uint32_t rkey) { h->rkey = htobe32(rkey); }

/* ---- FETH (IBA 1.5 FLUSH annex): resv26 | SEL(2) | PLT(4) --------------- */

static inline uint8_t xrxe_feth_sel(const struct xrxe_feth *h)
{
	return (be32toh(h->bits) & XRXE_FETH_SEL_MASK) >> XRXE_FETH_SEL_SHIFT;
}
static inline void xrxe_feth_set_sel(struct xrxe_feth *h, uint8_t sel)
{
	h->bits = htobe32(xrxe__bits32(be32toh(h->bits), XRXE_FETH_SEL_MASK,
				       (uint32_t)sel << XRXE_FETH_SEL_SHIFT));
}
static inline uint8_t xrxe_feth_plt(const struct xrxe_feth *h) { return be32toh(h->bits) & XRXE_FETH_PLT_MASK; }
static inline void xrxe_feth_set_plt(struct xrxe_feth *h, uint8_t plt)
{
	h->bits = htobe32(xrxe__bits32(be32toh(h->bits), XRXE_FETH_PLT_MASK, plt));
}

#endif /* XRXE_WIRE_HDR_H */
