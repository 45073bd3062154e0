/* SPDX-License-Identifier: MIT */
/*
 * The rsocket wire protocol (docs/rsockets.md): what an xrxe rsocket and
 * rdma-core's own rsockets (librdmacm/rsocket.c, the definition) exchange.
 * Only layouts and numbers live here; the state machines are in
 * rsocket_data.c (stream data, credits, control messages) and rsocket.c
 * (connection set-up).
 *
 * Everything arriving from the peer — the private data of the REQ/REP, every
 * immediate value, every SGL or iomap entry the peer writes into our memory —
 * is checked before it is used (rs_conn_data_check, rsocket_data.c).
 */
#ifndef XRXE_RDMACM_RSOCKET_PROTO_H
#define XRXE_RDMACM_RSOCKET_PROTO_H

#include <stdint.h>

/* Version carried in the connection data; both sides require 1. */
#define RS_PROTO_VERSION 1

/* --- immediate data of every RDMA WRITE WITH IMMEDIATE ------------------------
 * bits 31..29: the op, bits 28..0: its argument. */
enum rs_op {
	RS_OP_DATA = 0,      /* arg: bytes written into the receive buffer */
	RS_OP_RSVD_DATA_MORE = 1,
	RS_OP_WRITE = 2,     /* never on the wire: tags our own riowrite WRs */
	RS_OP_RSVD_DRA_MORE = 3,
	RS_OP_SGL = 4,       /* arg: the new send-sequence limit (credits, 16 bits) */
	RS_OP_RSVD = 5,
	RS_OP_IOMAP_SGL = 6, /* arg: index of the iomap entry just written */
	RS_OP_CTRL = 7,      /* arg: enum rs_ctrl */
};
#define RS_MSG(op, arg) (((uint32_t)(op) << 29) | ((uint32_t)(arg) & 0x1FFFFFFFu))
#define RS_MSG_OP(imm) ((uint32_t)(imm) >> 29)
#define RS_MSG_ARG(imm) ((uint32_t)(imm) & 0x1FFFFFFFu)

enum rs_ctrl {
	RS_CTRL_DISCONNECT = 0, /* no more data in either direction */
	RS_CTRL_KEEPALIVE = 1,  /* sent as a 0-byte RDMA WRITE without immediate */
	RS_CTRL_SHUTDOWN = 2,   /* the sender will send no more (SHUT_WR) */
};

/* --- memory descriptions the peers exchange ----------------------------------
 * An SGL entry, 16 bytes. In the connection data: big-endian. Written by RDMA
 * into the peer's target SGL/iomap: in the *peer's* host order (each side
 * says in the connection data whether it is big-endian, RS_CONN_FLAG_NET). */
struct rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/* An iomap entry, 24 bytes: the peer's riomap'd buffer at a byte offset of
 * its choosing. */
struct rs_iomap {
	uint64_t offset;
	struct rs_sge sge;
};

/* Entries of the target SGL (the receive-buffer halves granted to us). */
#define RS_SGL_SIZE 2

#define RS_CONN_FLAG_NET (1u << 0)   /* the sender's host is big-endian */
#define RS_CONN_FLAG_IOMAP (1u << 1) /* an iomap array follows the target SGL */

/* The private data of the CM REQ (rconnect) and REP (raccept), 40 bytes. */
struct rs_conn_data {
	uint8_t version;           /* RS_PROTO_VERSION */
	uint8_t flags;             /* RS_CONN_FLAG_* */
	uint16_t credits;          /* be16: receive queue depth = initial send credits */
	uint8_t reserved[3];
	uint8_t target_iomap_size; /* entries, rs_scale_to_value() coding */
	struct rs_sge target_sgl;  /* be: where to write SGL updates; length = entries */
	struct rs_sge data_buf;    /* be: the first receive-buffer half granted */
};
_Static_assert(sizeof(struct rs_sge) == 16, "rs_sge is 16 bytes on the wire");
_Static_assert(sizeof(struct rs_iomap) == 24, "rs_iomap is 24 bytes on the wire");
_Static_assert(sizeof(struct rs_conn_data) == 40, "rs_conn_data is 40 bytes on the wire");

/* 8-bit coding of the iomap size: 0..128 as is, above that 0x80 | (n >> 8). */
static inline unsigned int rs_value_to_scale(unsigned int value)
{
	return value <= 128 ? value : (0x80u | (value >> 8)) & 0xFF;
}

static inline unsigned int rs_scale_to_value(unsigned int scale)
{
	scale &= 0xFF;
	return scale <= 128 ? scale : (scale & 0x7Fu) << 8;
}

#endif /* XRXE_RDMACM_RSOCKET_PROTO_H */
