// SPDX-License-Identifier: MIT
/*
 * The opcode table: for each BTH opcode, the extended headers it carries, in
 * wire order, their offsets, and what may follow them.
 *
 * Sources: IBA Vol. 1 table 38 (opcodes) and §9.3 (which headers each packet
 * carries); RoCEv2 annex A17.9.3 (CNP); the FLUSH / ATOMIC WRITE annex (IBA 1.5,
 * oA19-2: FETH precedes RETH); XRC (IBA 9.3, table 38: the XRCETH follows
 * the BTH in every XRC request). Header sets follow the rxe_opcode[] table of
 * the Linux rxe driver (XRC's follow RC's), names follow its spelling. RD (0x40-0x5f) is left out on
 * purpose: xrxe, like rxe, has no RD QPs, so those frames are "unknown".
 */
#include "xrxe/wire.h"

#include "wire/wire_internal.h"

/* Header lengths, indexed by enum xrxe_hdr. */
#define LEN_RDETH XRXE_RDETH_LEN
#define LEN_DETH XRXE_DETH_LEN
#define LEN_FETH XRXE_FETH_LEN
#define LEN_XRCETH XRXE_XRCETH_LEN
#define LEN_RETH XRXE_RETH_LEN
#define LEN_ATMETH XRXE_ATMETH_LEN
#define LEN_AETH XRXE_AETH_LEN
#define LEN_ATMACK XRXE_ATMACK_LEN
#define LEN_IMMDT XRXE_IMMDT_LEN
#define LEN_IETH XRXE_IETH_LEN

#define B(h) XRXE_HDR_BIT(XRXE_HDR_##h)
#define HAS(set, h) (((set) & B(h)) != 0)
#define SZ(set, h) (HAS(set, h) ? LEN_##h : 0)

/* Offsets from the BTH start, computed at compile time from the header set:
 * each header follows all present headers that come before it in enum order,
 * which is the wire order. Absent headers get 0. */
#define END_RDETH(s) (XRXE_BTH_LEN + SZ(s, RDETH))
#define END_DETH(s) (END_RDETH(s) + SZ(s, DETH))
#define END_XRCETH(s) (END_DETH(s) + SZ(s, XRCETH))
#define END_FETH(s) (END_XRCETH(s) + SZ(s, FETH))
#define END_RETH(s) (END_FETH(s) + SZ(s, RETH))
#define END_ATMETH(s) (END_RETH(s) + SZ(s, ATMETH))
#define END_AETH(s) (END_ATMETH(s) + SZ(s, AETH))
#define END_ATMACK(s) (END_AETH(s) + SZ(s, ATMACK))
#define END_IMMDT(s) (END_ATMACK(s) + SZ(s, IMMDT))
#define END_IETH(s) (END_IMMDT(s) + SZ(s, IETH))

#define OFFSETS(s)                                                               \
	{                                                                        \
		[XRXE_HDR_RDETH] = HAS(s, RDETH) ? XRXE_BTH_LEN : 0,             \
		[XRXE_HDR_DETH] = HAS(s, DETH) ? END_RDETH(s) : 0,               \
		[XRXE_HDR_XRCETH] = HAS(s, XRCETH) ? END_DETH(s) : 0,           \
		[XRXE_HDR_FETH] = HAS(s, FETH) ? END_XRCETH(s) : 0,              \
		[XRXE_HDR_RETH] = HAS(s, RETH) ? END_FETH(s) : 0,                \
		[XRXE_HDR_ATMETH] = HAS(s, ATMETH) ? END_RETH(s) : 0,            \
		[XRXE_HDR_AETH] = HAS(s, AETH) ? END_ATMETH(s) : 0,              \
		[XRXE_HDR_ATMACK] = HAS(s, ATMACK) ? END_AETH(s) : 0,            \
		[XRXE_HDR_IMMDT] = HAS(s, IMMDT) ? END_ATMACK(s) : 0,            \
		[XRXE_HDR_IETH] = HAS(s, IETH) ? END_IMMDT(s) : 0,               \
	}

#define OP(nm, set, fl, pl)                                                     \
	{                                                                       \
		.name = (nm), .hdrs = (set), .flags = (fl), .payload = XRXE_PAYLOAD_##pl, \
		.length = END_IETH(set), .offset = OFFSETS(set),                \
	}

/* Role flags, short. ONLY = FIRST | LAST: a one-packet message. */
#define REQ XRXE_OPF_REQUEST
#define RSP XRXE_OPF_RESPONSE
#define FIRST XRXE_OPF_FIRST
#define MIDDLE XRXE_OPF_MIDDLE
#define LAST XRXE_OPF_LAST
#define ONLY (XRXE_OPF_FIRST | XRXE_OPF_LAST)
#define SEND XRXE_OPF_SEND
#define WRITE XRXE_OPF_WRITE
#define READ XRXE_OPF_READ
#define ATOMIC XRXE_OPF_ATOMIC
#define IMM XRXE_OPF_IMM
#define INV XRXE_OPF_INV
#define ACK XRXE_OPF_ACK

/* The operations RC and UC share (IBA table 38: UC has SEND and RDMA WRITE,
 * nothing else; XRC all of RC's). T is the transport prefix, P the name
 * prefix, X the headers every request of the transport carries (XRC: the
 * XRCETH). */
#define SEND_WRITE_OPS(T, P, X)                                                                  \
	[T | XRXE_OP_SEND_FIRST] = OP(P "SEND_FIRST", X, REQ | SEND | FIRST, FULL_MTU),       \
	[T | XRXE_OP_SEND_MIDDLE] = OP(P "SEND_MIDDLE", X, REQ | SEND | MIDDLE, FULL_MTU),    \
	[T | XRXE_OP_SEND_LAST] = OP(P "SEND_LAST", X, REQ | SEND | LAST, ANY),               \
	[T | XRXE_OP_SEND_LAST_WITH_IMM] =                                                    \
		OP(P "SEND_LAST_WITH_IMMEDIATE", X | B(IMMDT), REQ | SEND | LAST | IMM, ANY),     \
	[T | XRXE_OP_SEND_ONLY] = OP(P "SEND_ONLY", X, REQ | SEND | ONLY, ANY),               \
	[T | XRXE_OP_SEND_ONLY_WITH_IMM] =                                                    \
		OP(P "SEND_ONLY_WITH_IMMEDIATE", X | B(IMMDT), REQ | SEND | ONLY | IMM, ANY),     \
	/* only the first packet of a WRITE carries the RETH (IBA §9.3) */               \
	[T | XRXE_OP_RDMA_WRITE_FIRST] =                                                      \
		OP(P "RDMA_WRITE_FIRST", X | B(RETH), REQ | WRITE | FIRST, FULL_MTU),             \
	[T | XRXE_OP_RDMA_WRITE_MIDDLE] =                                                     \
		OP(P "RDMA_WRITE_MIDDLE", X, REQ | WRITE | MIDDLE, FULL_MTU),                 \
	[T | XRXE_OP_RDMA_WRITE_LAST] = OP(P "RDMA_WRITE_LAST", X, REQ | WRITE | LAST, ANY),   \
	[T | XRXE_OP_RDMA_WRITE_LAST_WITH_IMM] =                                              \
		OP(P "RDMA_WRITE_LAST_WITH_IMMEDIATE", X | B(IMMDT), REQ | WRITE | LAST | IMM, ANY), \
	[T | XRXE_OP_RDMA_WRITE_ONLY] =                                                       \
		OP(P "RDMA_WRITE_ONLY", X | B(RETH), REQ | WRITE | ONLY, ANY),                    \
	[T | XRXE_OP_RDMA_WRITE_ONLY_WITH_IMM] = OP(P "RDMA_WRITE_ONLY_WITH_IMMEDIATE",       \
						    X | B(RETH) | B(IMMDT),                       \
						    REQ | WRITE | ONLY | IMM, ANY)

#define RC XRXE_TRANSPORT_RC
#define UC XRXE_TRANSPORT_UC
#define UD XRXE_TRANSPORT_UD
#define XRC XRXE_TRANSPORT_XRC

static const struct xrxe_opcode_info opcode_table[256] = {
	/* ---- RC (0x00-0x1f) ---- */
	SEND_WRITE_OPS(RC, "RC_", 0),
	/* A READ request carries no data, only the RETH naming what to read. */
	[RC | XRXE_OP_RDMA_READ_REQUEST] =
		OP("RC_RDMA_READ_REQUEST", B(RETH), REQ | READ | ONLY, NONE),
	/* Read responses: FIRST, LAST and ONLY carry an AETH, MIDDLE does not
	 * (IBA §9.3). */
	[RC | XRXE_OP_RDMA_READ_RESPONSE_FIRST] =
		OP("RC_RDMA_READ_RESPONSE_FIRST", B(AETH), RSP | READ | FIRST | ACK, FULL_MTU),
	[RC | XRXE_OP_RDMA_READ_RESPONSE_MIDDLE] =
		OP("RC_RDMA_READ_RESPONSE_MIDDLE", 0, RSP | READ | MIDDLE, FULL_MTU),
	[RC | XRXE_OP_RDMA_READ_RESPONSE_LAST] =
		OP("RC_RDMA_READ_RESPONSE_LAST", B(AETH), RSP | READ | LAST | ACK, ANY),
	[RC | XRXE_OP_RDMA_READ_RESPONSE_ONLY] =
		OP("RC_RDMA_READ_RESPONSE_ONLY", B(AETH), RSP | READ | ONLY | ACK, ANY),
	[RC | XRXE_OP_ACKNOWLEDGE] = OP("RC_ACKNOWLEDGE", B(AETH), RSP | ACK | ONLY, NONE),
	[RC | XRXE_OP_ATOMIC_ACKNOWLEDGE] = OP("RC_ATOMIC_ACKNOWLEDGE", B(AETH) | B(ATMACK),
					       RSP | ATOMIC | ACK | ONLY, NONE),
	[RC | XRXE_OP_COMPARE_SWAP] =
		OP("RC_COMPARE_SWAP", B(ATMETH), REQ | ATOMIC | ONLY, NONE),
	[RC | XRXE_OP_FETCH_ADD] = OP("RC_FETCH_ADD", B(ATMETH), REQ | ATOMIC | ONLY, NONE),
	/* 0x15 is reserved for RC (RESYNC exists only for RD): unknown. */
	[RC | XRXE_OP_SEND_LAST_WITH_INVALIDATE] = OP("RC_SEND_LAST_WITH_INVALIDATE", B(IETH),
						      REQ | SEND | LAST | INV, ANY),
	[RC | XRXE_OP_SEND_ONLY_WITH_INVALIDATE] = OP("RC_SEND_ONLY_WITH_INVALIDATE", B(IETH),
						      REQ | SEND | ONLY | INV, ANY),
	/* FLUSH: FETH then RETH, no payload (oA19-2); answered with a zero-length
	 * READ_RESPONSE_ONLY. */
	[RC | XRXE_OP_FLUSH] =
		OP("RC_FLUSH", B(FETH) | B(RETH), REQ | XRXE_OPF_FLUSH | ONLY, NONE),
	/* ATOMIC WRITE: RETH and exactly 8 bytes of data, written atomically. */
	[RC | XRXE_OP_ATOMIC_WRITE] =
		OP("RC_ATOMIC_WRITE", B(RETH), REQ | XRXE_OPF_ATOMIC_WRITE | ONLY, 8),

	/* ---- UC (0x20-0x3f): SEND and RDMA WRITE only ---- */
	SEND_WRITE_OPS(UC, "UC_", 0),

	/* ---- UD (0x60-0x7f): single-packet SENDs with a DETH (IBA 9.3.3) ---- */
	[UD | XRXE_OP_SEND_ONLY] = OP("UD_SEND_ONLY", B(DETH), REQ | SEND | ONLY, ANY),
	[UD | XRXE_OP_SEND_ONLY_WITH_IMM] =
		OP("UD_SEND_ONLY_WITH_IMMEDIATE", B(DETH) | B(IMMDT), REQ | SEND | ONLY | IMM, ANY),

	/* ---- CNP (0x81, A17.9.3): BTH, 16 reserved bytes, ICRC. The reserved
	 * bytes are not payload: the parser and builder handle them by rule. ---- */
	[XRXE_OP_CNP] = OP("CNP", 0, XRXE_OPF_CNP, CNP),

	/* ---- XRC (0xa0-0xbf, IBA table 38): RC's operations; every request
	 * carries the XRCETH naming the destination SRQ right after the BTH,
	 * responses are RC's (docs/xrc.md). FLUSH and ATOMIC WRITE are left out:
	 * xrxe sends them on RC only. ---- */
	SEND_WRITE_OPS(XRC, "XRC_", B(XRCETH)),
	[XRC | XRXE_OP_RDMA_READ_REQUEST] =
		OP("XRC_RDMA_READ_REQUEST", B(XRCETH) | B(RETH), REQ | READ | ONLY, NONE),
	[XRC | XRXE_OP_RDMA_READ_RESPONSE_FIRST] =
		OP("XRC_RDMA_READ_RESPONSE_FIRST", B(AETH), RSP | READ | FIRST | ACK, FULL_MTU),
	[XRC | XRXE_OP_RDMA_READ_RESPONSE_MIDDLE] =
		OP("XRC_RDMA_READ_RESPONSE_MIDDLE", 0, RSP | READ | MIDDLE, FULL_MTU),
	[XRC | XRXE_OP_RDMA_READ_RESPONSE_LAST] =
		OP("XRC_RDMA_READ_RESPONSE_LAST", B(AETH), RSP | READ | LAST | ACK, ANY),
	[XRC | XRXE_OP_RDMA_READ_RESPONSE_ONLY] =
		OP("XRC_RDMA_READ_RESPONSE_ONLY", B(AETH), RSP | READ | ONLY | ACK, ANY),
	[XRC | XRXE_OP_ACKNOWLEDGE] = OP("XRC_ACKNOWLEDGE", B(AETH), RSP | ACK | ONLY, NONE),
	[XRC | XRXE_OP_ATOMIC_ACKNOWLEDGE] = OP("XRC_ATOMIC_ACKNOWLEDGE", B(AETH) | B(ATMACK),
						RSP | ATOMIC | ACK | ONLY, NONE),
	[XRC | XRXE_OP_COMPARE_SWAP] =
		OP("XRC_COMPARE_SWAP", B(XRCETH) | B(ATMETH), REQ | ATOMIC | ONLY, NONE),
	[XRC | XRXE_OP_FETCH_ADD] =
		OP("XRC_FETCH_ADD", B(XRCETH) | B(ATMETH), REQ | ATOMIC | ONLY, NONE),
	[XRC | XRXE_OP_SEND_LAST_WITH_INVALIDATE] =
		OP("XRC_SEND_LAST_WITH_INVALIDATE", B(XRCETH) | B(IETH), REQ | SEND | LAST | INV, ANY),
	[XRC | XRXE_OP_SEND_ONLY_WITH_INVALIDATE] =
		OP("XRC_SEND_ONLY_WITH_INVALIDATE", B(XRCETH) | B(IETH), REQ | SEND | ONLY | INV, ANY),

	/* ---- manufacturer specific (0xC0-0xFF, IBA table 38) ---- */
	/* xrxe's selective acknowledgement: an ACK (AETH) plus a 16-byte bitmap
	 * of the PSNs after it the responder holds (docs/selective-repeat.md).
	 * Only between QPs that agreed to selective repeat (tp.c drops it on
	 * any other). */
	[XRXE_OP_XRXE_SACK] = OP("XRXE_SACK", B(AETH), RSP | ACK | ONLY | XRXE_OPF_SACK, SACK),
};

const struct xrxe_opcode_info *xrxe_opcode_info(uint8_t opcode)
{
	const struct xrxe_opcode_info *op = &opcode_table[opcode];

	return op->name ? op : NULL;
}
