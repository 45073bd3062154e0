/* SPDX-License-Identifier: MIT */
/*
 * xrxe wire format: RoCEv2 frame layouts, the opcode table, parse, build, ICRC
 * and 24-bit PSN arithmetic.
 *
 * Everything here is a pure function of its arguments: no state, no I/O, no
 * allocation. The transport core and the daemon both build on it, and the unit
 * tests check it against frames captured from the Linux kernel's rxe driver.
 *
 * References: IBA Vol. 1 ch. 9 (BTH and extended headers), Annex A17 (RoCEv2);
 * docs/facts/rxe.md §1 (rxe's layout and ICRC algorithm, with test vectors).
 */
#ifndef XRXE_WIRE_H
#define XRXE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Sizes and constants
 * ------------------------------------------------------------------------- */

#define XRXE_ROCEV2_UDP_PORT 4791

#define XRXE_ETH_ALEN 6
#define XRXE_ETH_HLEN 14
#define XRXE_VLAN_HLEN 4
#define XRXE_IPV4_HLEN 20 /* RoCEv2 never carries IPv4 options (rxe: IHL 5) */
#define XRXE_IPV6_HLEN 40
#define XRXE_UDP_HLEN 8

#define XRXE_BTH_LEN 12
#define XRXE_RDETH_LEN 4
#define XRXE_DETH_LEN 8
#define XRXE_RETH_LEN 16
#define XRXE_ATMETH_LEN 28
#define XRXE_AETH_LEN 4
#define XRXE_ATMACK_LEN 8
#define XRXE_IMMDT_LEN 4
#define XRXE_IETH_LEN 4
#define XRXE_FETH_LEN 4
#define XRXE_XRCETH_LEN 4
#define XRXE_ICRC_LEN 4

/* CNP (opcode 0x81): BTH + 16 reserved zero bytes + ICRC (RoCEv2 Annex A17.9.3) */
#define XRXE_CNP_RSVD_LEN 16

/* Largest frame the stack handles: 9000-byte IP MTU + Ethernet + one VLAN tag. */
#define XRXE_MAX_FRAME_LEN (9000 + XRXE_ETH_HLEN + XRXE_VLAN_HLEN)

/* A received or transmitted frame may span several AF_XDP buffers (XDP_USE_SG):
 * a 9018-byte frame takes three 4096-byte chunks in copy mode. */
#define XRXE_MAX_FRAGS 4

#define XRXE_PSN_MASK 0xffffffu
#define XRXE_QPN_MASK 0xffffffu
#define XRXE_MSN_MASK 0xffffffu
#define XRXE_DEFAULT_PKEY 0xffffu
#define XRXE_MCAST_QPN 0xffffffu
/* QP1, the General Services Interface, and its well-known Q_Key (IBA 13.5.1):
 * connection management MADs travel there. */
#define XRXE_GSI_QPN 1u
#define XRXE_GSI_QKEY 0x80010000u
#define XRXE_MAD_LEN 256u

/* BTH flag bits (byte 1) */
#define XRXE_BTH_SE 0x80
#define XRXE_BTH_MIG 0x40
#define XRXE_BTH_PAD_MASK 0x30
#define XRXE_BTH_PAD_SHIFT 4
#define XRXE_BTH_TVER_MASK 0x0f

/* AETH syndrome (IBA 9.7.5.1.6, table 43) */
#define XRXE_AETH_TYPE_MASK 0xe0
#define XRXE_AETH_ACK 0x00
#define XRXE_AETH_RNR_NAK 0x20
#define XRXE_AETH_NAK 0x60
#define XRXE_AETH_ACK_UNLIMITED 0x1f /* credit field "unlimited", what rxe sends */
#define XRXE_AETH_NAK_PSN_SEQ 0x60
#define XRXE_AETH_NAK_INVALID_REQ 0x61
#define XRXE_AETH_NAK_REM_ACCESS 0x62
#define XRXE_AETH_NAK_REM_OP 0x63

/* FETH fields (IBA 1.5 annex: FLUSH) */
#define XRXE_FETH_SEL_MASK 0x30
#define XRXE_FETH_SEL_SHIFT 4
#define XRXE_FETH_PLT_MASK 0x0f

/* ---------------------------------------------------------------------------
 * Opcodes (IBA table 38) and the opcode table
 * ------------------------------------------------------------------------- */

enum xrxe_transport {
	XRXE_TRANSPORT_RC = 0x00,
	XRXE_TRANSPORT_UC = 0x20,
	XRXE_TRANSPORT_RD = 0x40,
	XRXE_TRANSPORT_UD = 0x60,
	XRXE_TRANSPORT_CNP = 0x80,
	XRXE_TRANSPORT_XRC = 0xa0, /* IBA table 38: 101xxxxx, XRC (docs/xrc.md) */
};
#define XRXE_TRANSPORT_MASK 0xe0

enum xrxe_opcode {
	XRXE_OP_SEND_FIRST = 0x00,
	XRXE_OP_SEND_MIDDLE = 0x01,
	XRXE_OP_SEND_LAST = 0x02,
	XRXE_OP_SEND_LAST_WITH_IMM = 0x03,
	XRXE_OP_SEND_ONLY = 0x04,
	XRXE_OP_SEND_ONLY_WITH_IMM = 0x05,
	XRXE_OP_RDMA_WRITE_FIRST = 0x06,
	XRXE_OP_RDMA_WRITE_MIDDLE = 0x07,
	XRXE_OP_RDMA_WRITE_LAST = 0x08,
	XRXE_OP_RDMA_WRITE_LAST_WITH_IMM = 0x09,
	XRXE_OP_RDMA_WRITE_ONLY = 0x0a,
	XRXE_OP_RDMA_WRITE_ONLY_WITH_IMM = 0x0b,
	XRXE_OP_RDMA_READ_REQUEST = 0x0c,
	XRXE_OP_RDMA_READ_RESPONSE_FIRST = 0x0d,
	XRXE_OP_RDMA_READ_RESPONSE_MIDDLE = 0x0e,
	XRXE_OP_RDMA_READ_RESPONSE_LAST = 0x0f,
	XRXE_OP_RDMA_READ_RESPONSE_ONLY = 0x10,
	XRXE_OP_ACKNOWLEDGE = 0x11,
	XRXE_OP_ATOMIC_ACKNOWLEDGE = 0x12,
	XRXE_OP_COMPARE_SWAP = 0x13,
	XRXE_OP_FETCH_ADD = 0x14,
	XRXE_OP_SEND_LAST_WITH_INVALIDATE = 0x16,
	XRXE_OP_SEND_ONLY_WITH_INVALIDATE = 0x17,
	XRXE_OP_FLUSH = 0x1c,
	XRXE_OP_ATOMIC_WRITE = 0x1d,
	XRXE_OP_CNP = 0x81,
	/* Manufacturer-specific range (IBA table 38: 0xC0-0xFF): xrxe's
	 * selective acknowledgement, sent only to a peer that agreed to
	 * selective repeat (docs/selective-repeat.md). A full opcode. */
	XRXE_OP_XRXE_SACK = 0xe0,
};

/* Full opcodes = transport | operation, e.g. XRXE_OPCODE(UD, SEND_ONLY) = 0x64. */
#define XRXE_OPCODE(transport, op) ((uint8_t)(XRXE_TRANSPORT_##transport | XRXE_OP_##op))

/* Extended headers, in the order they appear on the wire after the BTH. */
enum xrxe_hdr {
	XRXE_HDR_RDETH,
	XRXE_HDR_DETH,
	XRXE_HDR_XRCETH, /* XRC requests: right after the BTH (docs/xrc.md) */
	XRXE_HDR_FETH, /* FLUSH: FETH precedes RETH (IBA oA19-2) */
	XRXE_HDR_RETH,
	XRXE_HDR_ATMETH,
	XRXE_HDR_AETH,
	XRXE_HDR_ATMACK,
	XRXE_HDR_IMMDT,
	XRXE_HDR_IETH,
	XRXE_HDR_COUNT,
};
#define XRXE_HDR_BIT(h) (1u << (h))

/* What an opcode's packet may carry after its headers. */
enum xrxe_payload_rule {
	XRXE_PAYLOAD_NONE,     /* no payload at all (ACK, READ request, atomics, FLUSH) */
	XRXE_PAYLOAD_ANY,      /* 0..path MTU bytes (ONLY, LAST) */
	XRXE_PAYLOAD_FULL_MTU, /* exactly path MTU bytes (FIRST, MIDDLE); the parser checks > 0 */
	XRXE_PAYLOAD_8,        /* exactly 8 bytes (ATOMIC_WRITE) */
	XRXE_PAYLOAD_CNP,      /* 16 reserved bytes, not payload (CNP) */
	XRXE_PAYLOAD_SACK,     /* exactly XRXE_SACK_LEN bytes: the SACK bitmap */
};

/* Role flags of an opcode (mirrors rxe's RXE_*_MASK). */
enum xrxe_op_flags {
	XRXE_OPF_REQUEST = 1u << 0,  /* requester → responder */
	XRXE_OPF_RESPONSE = 1u << 1, /* responder → requester (ACK, read response) */
	XRXE_OPF_FIRST = 1u << 2,
	XRXE_OPF_MIDDLE = 1u << 3,
	XRXE_OPF_LAST = 1u << 4, /* ONLY = FIRST | LAST */
	XRXE_OPF_SEND = 1u << 5,
	XRXE_OPF_WRITE = 1u << 6,
	XRXE_OPF_READ = 1u << 7,
	XRXE_OPF_ATOMIC = 1u << 8,
	XRXE_OPF_IMM = 1u << 9,
	XRXE_OPF_INV = 1u << 10,
	XRXE_OPF_FLUSH = 1u << 11,
	XRXE_OPF_ATOMIC_WRITE = 1u << 12,
	XRXE_OPF_ACK = 1u << 13, /* carries an AETH that acknowledges */
	XRXE_OPF_CNP = 1u << 14,
	XRXE_OPF_SACK = 1u << 15, /* xrxe's SACK (docs/selective-repeat.md) */
};

/* The SACK's payload: a bitmap of the XRXE_SACK_PSNS PSNs after the BTH's
 * (the last PSN acknowledged); bit i (byte i / 8, bit i % 8 from the least
 * significant) set = the responder holds PSN + 1 + i. */
#define XRXE_SACK_LEN 16
#define XRXE_SACK_PSNS (8 * XRXE_SACK_LEN)

struct xrxe_opcode_info {
	const char *name;          /* e.g. "RC_SEND_FIRST", as rxe names it */
	uint16_t hdrs;             /* XRXE_HDR_BIT() set of extended headers */
	uint16_t flags;            /* enum xrxe_op_flags */
	uint8_t payload;           /* enum xrxe_payload_rule */
	uint8_t length;            /* BTH + extended headers, bytes */
	uint8_t offset[XRXE_HDR_COUNT]; /* offset of each present header from the BTH start */
};

/* The table entry for an opcode, or NULL when xrxe does not know it (RD, reserved). */
const struct xrxe_opcode_info *xrxe_opcode_info(uint8_t opcode);

/* ---------------------------------------------------------------------------
 * Header layouts. All fields are big-endian on the wire; use the accessors.
 * ------------------------------------------------------------------------- */

struct xrxe_bth {
	uint8_t opcode;
	uint8_t flags; /* SE | MigReq | PadCnt(2) | TVer(4) */
	uint16_t pkey;
	uint32_t qpn;  /* FECN | BECN | resv6 | DestQP(24) */
	uint32_t apsn; /* AckReq | resv7 | PSN(24) */
} __attribute__((packed));

struct xrxe_rdeth {
	uint32_t een; /* resv8 | EE context(24) */
} __attribute__((packed));

struct xrxe_deth {
	uint32_t qkey;
	uint32_t sqp; /* resv8 | SrcQP(24) */
} __attribute__((packed));

struct xrxe_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
} __attribute__((packed));

struct xrxe_atmeth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t comp;
} __attribute__((packed));

struct xrxe_aeth {
	uint32_t smsn; /* Syndrome(8) | MSN(24) */
} __attribute__((packed));

struct xrxe_atmack {
	uint64_t orig;
} __attribute__((packed));

struct xrxe_immdt {
	uint32_t imm; /* raw network-order bytes, never swapped (like ibv_wc.imm_data) */
} __attribute__((packed));

struct xrxe_ieth {
	uint32_t rkey;
} __attribute__((packed));

struct xrxe_feth {
	uint32_t bits; /* resv26 | SEL(2) | PLT(4) */
} __attribute__((packed));

struct xrxe_xrceth {
	uint32_t srqn; /* resv8 | XRCSRQ(24): the destination XRC SRQ */
} __attribute__((packed));

_Static_assert(sizeof(struct xrxe_bth) == XRXE_BTH_LEN, "BTH is 12 bytes");
_Static_assert(sizeof(struct xrxe_deth) == XRXE_DETH_LEN, "DETH is 8 bytes");
_Static_assert(sizeof(struct xrxe_reth) == XRXE_RETH_LEN, "RETH is 16 bytes");
_Static_assert(sizeof(struct xrxe_atmeth) == XRXE_ATMETH_LEN, "AtomicETH is 28 bytes");
_Static_assert(sizeof(struct xrxe_aeth) == XRXE_AETH_LEN, "AETH is 4 bytes");
_Static_assert(sizeof(struct xrxe_atmack) == XRXE_ATMACK_LEN, "AtomicAckETH is 8 bytes");
_Static_assert(sizeof(struct xrxe_xrceth) == XRXE_XRCETH_LEN, "XRCETH is 4 bytes");

/* Typed accessors (host-order values in and out). Defined in wire_hdr.h so the
 * hot path inlines them. */
#include "xrxe/wire_hdr.h"

/* ---------------------------------------------------------------------------
 * 24-bit PSN arithmetic (IBA 9.7.1: PSNs wrap modulo 2^24; ordering is the
 * sign of the difference in a window of 2^23, as rxe's psn_compare).
 * ------------------------------------------------------------------------- */

static inline uint32_t xrxe_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & XRXE_PSN_MASK;
}

static inline uint32_t xrxe_psn_sub(uint32_t a, uint32_t b) /* a - b mod 2^24 */
{
	return (a - b) & XRXE_PSN_MASK;
}

/* < 0 if a is before b, 0 if equal, > 0 if a is after b. */
static inline int32_t xrxe_psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}

/* ---------------------------------------------------------------------------
 * Fragments: a frame as up to XRXE_MAX_FRAGS contiguous pieces (AF_XDP
 * multi-buffer). All headers must lie in the first fragment.
 * ------------------------------------------------------------------------- */

struct xrxe_frag {
	uint8_t *data;
	uint32_t len;
};

/* ---------------------------------------------------------------------------
 * Parse
 * ------------------------------------------------------------------------- */

enum xrxe_parse_error {
	XRXE_PARSE_OK = 0,
	XRXE_PARSE_TRUNCATED,        /* shorter than its headers + ICRC */
	XRXE_PARSE_NOT_IP,           /* EtherType is neither IPv4 nor IPv6 (after one VLAN tag) */
	XRXE_PARSE_BAD_IP_VERSION,   /* version field does not match the EtherType */
	XRXE_PARSE_IP_OPTIONS,       /* IPv4 IHL != 5 (RoCEv2 sends no options) */
	XRXE_PARSE_IP_FRAGMENT,      /* IPv4 MF set or offset != 0 */
	XRXE_PARSE_BAD_IP_LENGTH,    /* IP length disagrees with the frame */
	XRXE_PARSE_NOT_UDP,          /* IP protocol / next header is not UDP */
	XRXE_PARSE_NOT_ROCEV2,       /* UDP destination port is not 4791 */
	XRXE_PARSE_BAD_UDP_LENGTH,   /* UDP length disagrees with the IP length */
	XRXE_PARSE_BAD_VERSION,      /* BTH TVer != 0 (IBA C9-3) */
	XRXE_PARSE_UNKNOWN_OPCODE,   /* not in the opcode table */
	XRXE_PARSE_BAD_PAD,          /* pad count inconsistent with the opcode's payload */
	XRXE_PARSE_BAD_LENGTH,       /* payload length breaks the opcode's payload rule */
	XRXE_PARSE_FRAGMENTED_HDRS,  /* headers do not fit in the first fragment */
	XRXE_PARSE_ICRC_MISMATCH,    /* invariant CRC does not verify */
	XRXE_PARSE_BAD_FRAGS,        /* unusable fragment list: none, more than
				      * XRXE_MAX_FRAGS, or a NULL one (a caller bug) */
	XRXE_PARSE_ERROR_COUNT,
};

/* Short stable names for logs and counters: "truncated", "icrc-mismatch", ... */
const char *xrxe_parse_strerror(enum xrxe_parse_error err);

/* Parse flags */
#define XRXE_PARSE_SKIP_ICRC (1u << 0) /* verify later (e.g. after steering by QPN) */

/* A parsed view into a frame. Offsets are from the start of the frame. */
struct xrxe_pkt {
	struct xrxe_frag frag[XRXE_MAX_FRAGS];
	uint8_t nfrags;
	uint32_t len; /* total frame length, all fragments (may include Ethernet
		       * padding after the ICRC: the IP length bounds the packet,
		       * whose trailer is at payload_off + payload_len + pad) */

	bool has_vlan;
	uint16_t vlan_tci;
	uint8_t ip_version; /* 4 or 6 */
	uint16_t l3_off;
	uint16_t l4_off;
	uint16_t bth_off;
	uint16_t hdr_off[XRXE_HDR_COUNT]; /* 0 when the header is absent */
	uint32_t payload_off; /* CNP: after its 16 reserved bytes */
	uint32_t payload_len; /* without pad; 0 for CNP */
	uint8_t pad;
	uint8_t opcode;
	const struct xrxe_opcode_info *op;
	uint32_t icrc; /* as received, the value (LE32 of the trailer) */
	/* Arrival at the interface, CLOCK_MONOTONIC ns, as the XDP program
	 * stamped it (0: not known). Not parsed: the receiver sets it. */
	uint64_t rx_ns;
};

/* Header pointers into the first fragment (valid only after a successful parse). */
static inline void *xrxe_pkt_hdr(const struct xrxe_pkt *pkt, enum xrxe_hdr h)
{
	return pkt->hdr_off[h] ? pkt->frag[0].data + pkt->hdr_off[h] : NULL;
}
static inline struct xrxe_bth *xrxe_pkt_bth(const struct xrxe_pkt *pkt)
{
	return (struct xrxe_bth *)(pkt->frag[0].data + pkt->bth_off);
}

int xrxe_parse(const uint8_t *frame, size_t len, unsigned flags, struct xrxe_pkt *out);
int xrxe_parse_frags(const struct xrxe_frag *frags, unsigned nfrags, unsigned flags,
		     struct xrxe_pkt *out);
/* Both return XRXE_PARSE_OK or a positive enum xrxe_parse_error. */

/* Copy len payload bytes starting at payload offset off out of the (possibly
 * fragmented) frame. Returns -EINVAL if the range is outside the payload. */
int xrxe_pkt_copy_payload(const struct xrxe_pkt *pkt, uint32_t off, void *dst, uint32_t len);

/* ---------------------------------------------------------------------------
 * ICRC (IBA 7.8.1 / A17.3.3; rxe_icrc.c): reflected CRC-32 over 8 bytes of
 * 0xFF (masked LRH), the IP header with TOS/TTL/checksum (IPv6: traffic class,
 * flow label, hop limit) set to ones, the UDP header with its checksum set to
 * ones, the BTH with byte 4 (FECN/BECN/resv) set to ones, the rest of the
 * transport headers, payload and pad. Sent least-significant byte first.
 * Computed with ISA-L's crc32_gzip_refl.
 * ------------------------------------------------------------------------- */

/* ICRC of a contiguous frame whose L3 header starts at l3_off; the trailer is
 * the last 4 bytes and is not included (so pass a length without Ethernet
 * padding). The value is what goes on the wire least-significant byte first.
 * Returns 0 when the frame is too short or l3_off holds neither IPv4 nor IPv6
 * (the IP/UDP/BTH prefix must lie in the first fragment). */
uint32_t xrxe_icrc(const uint8_t *frame, size_t len, size_t l3_off);
uint32_t xrxe_icrc_frags(const struct xrxe_frag *frags, unsigned nfrags, size_t l3_off);
/* Recompute and compare with the trailer of a parsed packet. */
bool xrxe_icrc_verify(const struct xrxe_pkt *pkt);

/* ---------------------------------------------------------------------------
 * Build
 * ------------------------------------------------------------------------- */

/* Everything that goes into one frame. Fields for headers the opcode does not
 * carry are ignored. Reserved fields are always sent as zero. */
struct xrxe_pkt_spec {
	/* Ethernet */
	uint8_t dmac[XRXE_ETH_ALEN];
	uint8_t smac[XRXE_ETH_ALEN];
	bool has_vlan;
	uint16_t vlan_tci;

	/* IP: ip_version 4 or 6; addresses in network order */
	uint8_t ip_version;
	uint8_t tclass; /* DSCP << 2 | ECN */
	uint8_t ttl;    /* hop limit */
	uint16_t ip_id; /* IPv4 identification */
	bool ip_df;     /* IPv4 don't-fragment (rxe sets it) */
	uint32_t flow_label; /* IPv6, 20 bits */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} saddr, daddr;

	/* UDP (the transport sends checksum 0 on IPv4, as rxe does, and a real
	 * one on IPv6: docs/interop.md) */
	uint16_t sport;
	uint16_t dport; /* 0 means 4791 */
	bool udp_csum;  /* compute a real UDP checksum instead (RFC 8200 §8.1 wants
			 * one on IPv6; xrxe_build_finish fills it in, after the ICRC
			 * it covers) */

	/* BTH */
	uint8_t opcode;
	bool se, mig, fecn, becn, ackreq;
	uint16_t pkey;
	uint32_t dest_qp;
	uint32_t psn;

	/* Extended headers */
	struct {
		uint32_t een;
	} rdeth;
	struct {
		uint32_t qkey, src_qp;
	} deth;
	struct {
		uint64_t va;
		uint32_t rkey, len;
	} reth;
	struct {
		uint64_t va;
		uint32_t rkey;
		uint64_t swap_add, comp;
	} atmeth;
	struct {
		uint8_t syndrome;
		uint32_t msn;
	} aeth;
	uint64_t atmack_orig;
	uint32_t imm_be; /* network order, passed through unswapped */
	uint32_t ieth_rkey;
	struct {
		uint8_t sel, plt;
	} feth;
	uint32_t xrc_srqn; /* XRCETH (XRC requests) */

	/* Payload (may be NULL when payload_len is 0, or when the caller writes
	 * the payload itself after xrxe_build_headers). */
	const void *payload;
	uint32_t payload_len;
};

/* Bytes of the frame before the payload for this spec (0 for an unknown opcode). */
size_t xrxe_build_hdr_len(const struct xrxe_pkt_spec *spec);
/* Total frame length for this spec, including pad and ICRC. */
size_t xrxe_build_frame_len(const struct xrxe_pkt_spec *spec);

/* Write all headers into buf; returns the payload offset, or -EINVAL
 * (unknown opcode, payload breaking the opcode's rule, bad IP version, frame
 * too long for an IP datagram) or -ENOSPC (cap too small for the whole frame).
 * The caller then writes spec->payload_len bytes at the payload offset and
 * calls xrxe_build_finish. A CNP's 16 reserved bytes count as headers. */
int xrxe_build_headers(uint8_t *buf, size_t cap, const struct xrxe_pkt_spec *spec);
/* Zero the pad bytes and write the ICRC, then the UDP checksum when the
 * headers asked for one (a non-zero checksum field left by build_headers);
 * frame_len = xrxe_build_frame_len(). */
void xrxe_build_finish(uint8_t *frame, size_t frame_len, size_t l3_off);
void xrxe_build_finish_frags(const struct xrxe_frag *frags, unsigned nfrags, size_t l3_off);
/* All of the above with spec->payload; returns the frame length or -errno. */
int xrxe_build(uint8_t *buf, size_t cap, const struct xrxe_pkt_spec *spec);

/* Fill a spec from a parsed packet, so xrxe_build reproduces the frame
 * (xrxe_build(spec_from(parse(f))) == f for every frame rxe sends). The payload
 * pointer refers into the first fragment, so only contiguous frames qualify:
 * returns -EINVAL for fragmented ones. */
int xrxe_pkt_to_spec(const struct xrxe_pkt *pkt, struct xrxe_pkt_spec *spec);

#ifdef __cplusplus
}
#endif

#endif /* XRXE_WIRE_H */
