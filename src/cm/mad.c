// SPDX-License-Identifier: MIT
/*
 * CM MAD codec: the IBA 12.6 message tables as data, one generic bit-field
 * reader and writer, and the rdma_cm (cma) header of REQ and SIDR_REQ.
 *
 * Each attribute is a table of fields: where the field lies in the 232-byte
 * attribute (byte, first bit counted from that byte's most significant bit,
 * width in bits, as the IBA tables and the kernel's ibta_vol1_c12.h give
 * them) and which member of struct xrxe_cm_msg holds it. Parsing and building
 * walk the same table, so a layout lives in one place, reserved bits are
 * simply the bits no field covers (written as zero, ignored on receipt), and
 * the unit tests check the tables themselves (in range,
 * no overlaps, widths fit their members). docs/rdmacm.md describes each
 * layout and the values the kernel puts in it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "cm/mad.h"

/* --- Field tables --------------------------------------------------------- */

/* width must fit the member; byte strings must be exactly the member. A
 * negative array size stops the build (a constant expression, so it can sit
 * in a static initializer). */
#define MEMBER(path) (((struct xrxe_cm_msg *)0)->path)
#define FITS(path, width) (sizeof(char[(width) <= 8 * sizeof(MEMBER(path)) ? 1 : -1]) * 0)
#define SAME(path, width) (sizeof(char[(width) == 8 * sizeof(MEMBER(path)) ? 1 : -1]) * 0)

/* An unsigned field of width bits at byte[bit]. */
#define UB(msg, m, byte_, bit_, width_)                                                    \
	{                                                                                  \
		.name = #m, .byte = (byte_), .bit = (bit_), .width = (width_),             \
		.member = offsetof(struct xrxe_cm_msg, msg.m),                             \
		.size = (uint8_t)(sizeof(MEMBER(msg.m)) + FITS(msg.m, width_)),            \
	}
/* Byte-aligned unsigned field. */
#define U(msg, m, byte_, width_) UB(msg, m, byte_, 0, width_)
/* Part of a member split over several places (ECE vendor IDs): the field
 * holds the member's bits [shift, shift + width). */
#define USPLIT(msg, m, byte_, width_, shift_)                                              \
	{                                                                                  \
		.name = #m, .byte = (byte_), .bit = 0, .width = (width_), .shift = (shift_), \
		.member = offsetof(struct xrxe_cm_msg, msg.m),                             \
		.size = (uint8_t)(sizeof(MEMBER(msg.m)) + FITS(msg.m, (width_) + (shift_))), \
	}
/* A byte string (GID, ARI, private data), copied as it is on the wire. */
#define BYTES(msg, m, byte_, nbytes)                                                       \
	{                                                                                  \
		.name = #m, .byte = (byte_), .width = (nbytes) * 8, .is_bytes = 1,         \
		.member = offsetof(struct xrxe_cm_msg, msg.m),                             \
		.size = (uint8_t)(sizeof(MEMBER(msg.m)) + SAME(msg.m, (nbytes) * 8)),      \
	}

/* The common MAD header (IBA 13.4.3), offsets in the MAD; bytes 18..19 are
 * reserved. */
static const struct xrxe_cm_field hdr_fields[] = {
	U(hdr, base_version, 0, 8),
	U(hdr, mgmt_class, 1, 8),
	U(hdr, class_version, 2, 8),
	U(hdr, method, 3, 8),
	U(hdr, status, 4, 16),
	U(hdr, class_specific, 6, 16),
	U(hdr, tid, 8, 64),
	U(hdr, attr_id, 16, 16),
	U(hdr, attr_mod, 20, 32),
};

/* The primary (at 52) and alternate (at 96) path of a REQ: 44 bytes each
 * (IBA table 106). */
#define REQ_PATH(p, o)                                                                     \
	U(req, p.local_lid, (o) + 0, 16), U(req, p.remote_lid, (o) + 2, 16),               \
		BYTES(req, p.local_gid, (o) + 4, 16), BYTES(req, p.remote_gid, (o) + 20, 16), \
		U(req, p.flow_label, (o) + 36, 20), UB(req, p.packet_rate, (o) + 39, 2, 6), \
		U(req, p.traffic_class, (o) + 40, 8), U(req, p.hop_limit, (o) + 41, 8),    \
		U(req, p.sl, (o) + 42, 4), UB(req, p.subnet_local, (o) + 42, 4, 1),        \
		U(req, p.local_ack_timeout, (o) + 43, 5)

/* IBA table 106 (REQ). The vendor ID is ECE's (IBA 1.4 comment 9434). */
static const struct xrxe_cm_field req_fields[] = {
	U(req, local_comm_id, 0, 32),
	U(req, vendor_id, 5, 24),
	U(req, service_id, 8, 64),
	U(req, local_ca_guid, 16, 64),
	U(req, local_qkey, 28, 32),
	U(req, local_qpn, 32, 24),
	U(req, responder_resources, 35, 8),
	U(req, local_eecn, 36, 24),
	U(req, initiator_depth, 39, 8),
	U(req, remote_eecn, 40, 24),
	U(req, remote_cm_response_timeout, 43, 5),
	UB(req, transport_type, 43, 5, 2),
	UB(req, flow_control, 43, 7, 1),
	U(req, starting_psn, 44, 24),
	U(req, local_cm_response_timeout, 47, 5),
	UB(req, retry_count, 47, 5, 3),
	U(req, pkey, 48, 16),
	U(req, path_mtu, 50, 4),
	UB(req, rdc_exists, 50, 4, 1),
	UB(req, rnr_retry_count, 50, 5, 3),
	U(req, max_cm_retries, 51, 4),
	UB(req, srq, 51, 4, 1),
	UB(req, ext_transport_type, 51, 5, 3),
	REQ_PATH(primary, 52),
	REQ_PATH(alternate, 96),
	UB(req, sap_supported, 139, 5, 1),
	BYTES(req, private_data, 140, XRXE_CM_REQ_PRIVATE),
};

/* IBA table 107 (MRA). */
static const struct xrxe_cm_field mra_fields[] = {
	U(mra, local_comm_id, 0, 32),
	U(mra, remote_comm_id, 4, 32),
	U(mra, message_mraed, 8, 2),
	U(mra, service_timeout, 9, 5),
	BYTES(mra, private_data, 10, XRXE_CM_MRA_PRIVATE),
};

/* IBA table 108 (REJ). */
static const struct xrxe_cm_field rej_fields[] = {
	U(rej, local_comm_id, 0, 32),
	U(rej, remote_comm_id, 4, 32),
	U(rej, message_rejected, 8, 2),
	U(rej, ari_length, 9, 7),
	U(rej, reason, 10, 16),
	BYTES(rej, ari, 12, XRXE_CM_REJ_ARI),
	BYTES(rej, private_data, 84, XRXE_CM_REJ_PRIVATE),
};

/* IBA table 110 (REP): ECE's vendor ID fills the reserved byte after each
 * 24-bit field, high byte first. */
static const struct xrxe_cm_field rep_fields[] = {
	U(rep, local_comm_id, 0, 32),
	U(rep, remote_comm_id, 4, 32),
	U(rep, local_qkey, 8, 32),
	U(rep, local_qpn, 12, 24),
	USPLIT(rep, vendor_id, 15, 8, 16),
	U(rep, local_eecn, 16, 24),
	USPLIT(rep, vendor_id, 19, 8, 8),
	U(rep, starting_psn, 20, 24),
	USPLIT(rep, vendor_id, 23, 8, 0),
	U(rep, responder_resources, 24, 8),
	U(rep, initiator_depth, 25, 8),
	U(rep, target_ack_delay, 26, 5),
	UB(rep, failover_accepted, 26, 5, 2),
	UB(rep, flow_control, 26, 7, 1),
	U(rep, rnr_retry_count, 27, 3),
	UB(rep, srq, 27, 3, 1),
	U(rep, local_ca_guid, 28, 64),
	BYTES(rep, private_data, 36, XRXE_CM_REP_PRIVATE),
};

/* IBA table 111 (RTU). */
static const struct xrxe_cm_field rtu_fields[] = {
	U(rtu, local_comm_id, 0, 32),
	U(rtu, remote_comm_id, 4, 32),
	BYTES(rtu, private_data, 8, XRXE_CM_RTU_PRIVATE),
};

/* IBA table 112 (DREQ). */
static const struct xrxe_cm_field dreq_fields[] = {
	U(dreq, local_comm_id, 0, 32),
	U(dreq, remote_comm_id, 4, 32),
	U(dreq, remote_qpn, 8, 24),
	BYTES(dreq, private_data, 12, XRXE_CM_DREQ_PRIVATE),
};

/* IBA table 113 (DREP). */
static const struct xrxe_cm_field drep_fields[] = {
	U(drep, local_comm_id, 0, 32),
	U(drep, remote_comm_id, 4, 32),
	BYTES(drep, private_data, 8, XRXE_CM_DREP_PRIVATE),
};

/* IBA table 119 (SIDR_REQ). */
static const struct xrxe_cm_field sidr_req_fields[] = {
	U(sidr_req, request_id, 0, 32),
	U(sidr_req, pkey, 4, 16),
	U(sidr_req, service_id, 8, 64),
	BYTES(sidr_req, private_data, 16, XRXE_CM_SIDR_REQ_PRIVATE),
};

/* IBA table 120 (SIDR_REP): ECE's vendor ID is split, high 16 bits at 6,
 * low 8 bits after the QPN. */
static const struct xrxe_cm_field sidr_rep_fields[] = {
	U(sidr_rep, request_id, 0, 32),
	U(sidr_rep, status, 4, 8),
	U(sidr_rep, info_length, 5, 8),
	USPLIT(sidr_rep, vendor_id, 6, 16, 8),
	U(sidr_rep, qpn, 8, 24),
	USPLIT(sidr_rep, vendor_id, 11, 8, 0),
	U(sidr_rep, service_id, 12, 64),
	U(sidr_rep, qkey, 20, 32),
	BYTES(sidr_rep, info, 24, XRXE_CM_SIDR_REP_INFO),
	BYTES(sidr_rep, private_data, 96, XRXE_CM_SIDR_REP_PRIVATE),
};

#define TABLE(t) .fields = (t), .count = sizeof(t) / sizeof((t)[0])

struct attr_desc {
	const char *name;
	const struct xrxe_cm_field *fields; /* NULL: known, no body codec */
	size_t count;
};

/* Attribute IDs of the CM class (IBA 12.6, ref table in docs/rdmacm.md). */
static const struct attr_desc *attr_desc(uint16_t attr_id)
{
	static const struct attr_desc cpi = { .name = "ClassPortInfo" };
	static const struct attr_desc req = { .name = "REQ", TABLE(req_fields) };
	static const struct attr_desc mra = { .name = "MRA", TABLE(mra_fields) };
	static const struct attr_desc rej = { .name = "REJ", TABLE(rej_fields) };
	static const struct attr_desc rep = { .name = "REP", TABLE(rep_fields) };
	static const struct attr_desc rtu = { .name = "RTU", TABLE(rtu_fields) };
	static const struct attr_desc dreq = { .name = "DREQ", TABLE(dreq_fields) };
	static const struct attr_desc drep = { .name = "DREP", TABLE(drep_fields) };
	static const struct attr_desc sidr_req = { .name = "SIDR_REQ", TABLE(sidr_req_fields) };
	static const struct attr_desc sidr_rep = { .name = "SIDR_REP", TABLE(sidr_rep_fields) };
	static const struct attr_desc lap = { .name = "LAP" };
	static const struct attr_desc apr = { .name = "APR" };

	switch (attr_id) {
	case XRXE_CM_ATTR_CLASS_PORT_INFO: return &cpi;
	case XRXE_CM_ATTR_REQ: return &req;
	case XRXE_CM_ATTR_MRA: return &mra;
	case XRXE_CM_ATTR_REJ: return &rej;
	case XRXE_CM_ATTR_REP: return &rep;
	case XRXE_CM_ATTR_RTU: return &rtu;
	case XRXE_CM_ATTR_DREQ: return &dreq;
	case XRXE_CM_ATTR_DREP: return &drep;
	case XRXE_CM_ATTR_SIDR_REQ: return &sidr_req;
	case XRXE_CM_ATTR_SIDR_REP: return &sidr_rep;
	case XRXE_CM_ATTR_LAP: return &lap;
	case XRXE_CM_ATTR_APR: return &apr;
	default: return NULL;
	}
}

const struct xrxe_cm_field *xrxe_cm_fields(uint16_t attr_id, size_t *count)
{
	const struct attr_desc *d = attr_desc(attr_id);

	*count = d ? d->count : 0;
	return d ? d->fields : NULL;
}

const struct xrxe_cm_field *xrxe_mad_hdr_fields(size_t *count)
{
	*count = sizeof(hdr_fields) / sizeof(hdr_fields[0]);
	return hdr_fields;
}

const char *xrxe_cm_attr_name(uint16_t attr_id)
{
	const struct attr_desc *d = attr_desc(attr_id);

	return d ? d->name : "unknown";
}

/* --- The generic codec ----------------------------------------------------- */

/* Fields of up to 64 bits never straddle more than 8 bytes: the only 64-bit
 * ones (service ID, GUIDs, TID) start on a byte boundary, and every narrower
 * one lies within one 32-bit word. */
static uint64_t get_bits(const uint8_t *p, unsigned byte, unsigned bit, unsigned width)
{
	unsigned nbytes = (bit + width + 7) / 8;
	uint64_t v = 0;

	for (unsigned i = 0; i < nbytes; i++)
		v = v << 8 | p[byte + i];
	v >>= nbytes * 8 - bit - width;
	return width == 64 ? v : v & ((1ull << width) - 1);
}

static void put_bits(uint8_t *p, unsigned byte, unsigned bit, unsigned width, uint64_t v)
{
	unsigned nbytes = (bit + width + 7) / 8;
	unsigned lsb = nbytes * 8 - bit - width; /* of the field, in the nbytes-byte word */
	uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1) << lsb;
	uint64_t word = 0;

	for (unsigned i = 0; i < nbytes; i++)
		word = word << 8 | p[byte + i];
	word = (word & ~mask) | ((v << lsb) & mask);
	for (unsigned i = nbytes; i-- > 0; word >>= 8)
		p[byte + i] = (uint8_t)word;
}

static uint64_t load_member(const void *m, unsigned size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1: memcpy(&u8, m, 1); return u8;
	case 2: memcpy(&u16, m, 2); return u16;
	case 4: memcpy(&u32, m, 4); return u32;
	default: memcpy(&u64, m, 8); return u64;
	}
}

static void store_member(void *m, unsigned size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	switch (size) {
	case 1: memcpy(m, &u8, 1); break;
	case 2: memcpy(m, &u16, 2); break;
	case 4: memcpy(m, &u32, 4); break;
	default: memcpy(m, &v, 8); break;
	}
}

/* buf: where the table's byte offsets start (the MAD, or the attribute). The
 * message is zeroed first, so split fields can OR their parts in. */
static void decode(const struct xrxe_cm_field *f, size_t n, const uint8_t *buf,
		   struct xrxe_cm_msg *msg)
{
	for (size_t i = 0; i < n; i++, f++) {
		uint8_t *m = (uint8_t *)msg + f->member;

		if (f->is_bytes) {
			memcpy(m, buf + f->byte, f->width / 8);
			continue;
		}
		store_member(m, f->size,
			     load_member(m, f->size) |
				     get_bits(buf, f->byte, f->bit, f->width) << f->shift);
	}
}

/* Bits a member holds beyond its field's width are dropped, never spilled
 * into the neighbouring field. */
static void encode(const struct xrxe_cm_field *f, size_t n, const struct xrxe_cm_msg *msg,
		   uint8_t *buf)
{
	for (size_t i = 0; i < n; i++, f++) {
		const uint8_t *m = (const uint8_t *)msg + f->member;

		if (f->is_bytes)
			memcpy(buf + f->byte, m, f->width / 8);
		else
			put_bits(buf, f->byte, f->bit, f->width, load_member(m, f->size) >> f->shift);
	}
}

/* --- MADs ------------------------------------------------------------------ */

const char *xrxe_mad_strerror(enum xrxe_mad_error e)
{
	static const char *const names[XRXE_MAD_ERROR_COUNT] = {
		[XRXE_MAD_OK] = "ok",
		[XRXE_MAD_ERR_TRUNCATED] = "truncated",
		[XRXE_MAD_ERR_BASE_VERSION] = "bad-base-version",
		[XRXE_MAD_ERR_CLASS] = "not-cm-class",
		[XRXE_MAD_ERR_CLASS_VERSION] = "bad-class-version",
		[XRXE_MAD_ERR_METHOD] = "bad-method",
		[XRXE_MAD_ERR_ATTR] = "unknown-attribute",
	};

	return (unsigned)e < XRXE_MAD_ERROR_COUNT ? names[e] : "unknown";
}

/* The CM exchanges every message with method Send (IBA 12.6; the kernel's
 * ib_cm registers its agent for Send alone); ClassPortInfo alone is read with
 * Get and answered with GetResp (IBA 13.4.5), so the CM may answer it. */
static bool method_ok(uint8_t method, uint16_t attr_id)
{
	if (attr_id == XRXE_CM_ATTR_CLASS_PORT_INFO)
		return method == XRXE_MAD_METHOD_GET || method == XRXE_MAD_METHOD_GET_RESP;
	return method == XRXE_MAD_METHOD_SEND;
}

enum xrxe_mad_error xrxe_cm_mad_parse(const uint8_t *buf, size_t len, struct xrxe_cm_msg *out)
{
	const struct attr_desc *d;

	memset(out, 0, sizeof(*out));
	/* A MAD is exactly 256 bytes (IBA 13.4); a GSI receive buffer may be
	 * larger, so only a short one is wrong. */
	if (len < XRXE_MAD_SIZE)
		return XRXE_MAD_ERR_TRUNCATED;
	decode(hdr_fields, sizeof(hdr_fields) / sizeof(hdr_fields[0]), buf, out);
	/* The checks of IBA 13.4.4, header first: a receiver drops what it
	 * does not understand, and the counter names why. */
	if (out->hdr.base_version != XRXE_MAD_BASE_VERSION)
		return XRXE_MAD_ERR_BASE_VERSION;
	if (out->hdr.mgmt_class != XRXE_MGMT_CLASS_CM)
		return XRXE_MAD_ERR_CLASS;
	if (out->hdr.class_version != XRXE_CM_CLASS_VERSION)
		return XRXE_MAD_ERR_CLASS_VERSION;
	if (out->hdr.method != XRXE_MAD_METHOD_SEND && out->hdr.method != XRXE_MAD_METHOD_GET &&
	    out->hdr.method != XRXE_MAD_METHOD_GET_RESP)
		return XRXE_MAD_ERR_METHOD;
	d = attr_desc(out->hdr.attr_id);
	if (!d)
		return XRXE_MAD_ERR_ATTR;
	if (!method_ok(out->hdr.method, out->hdr.attr_id))
		return XRXE_MAD_ERR_METHOD;
	if (d->fields)
		decode(d->fields, d->count, buf + XRXE_MAD_HDR_SIZE, out);
	return XRXE_MAD_OK;
}

int xrxe_cm_mad_build(const struct xrxe_cm_msg *msg, uint8_t out[XRXE_MAD_SIZE])
{
	const struct attr_desc *d = attr_desc(msg->hdr.attr_id);

	if (!d || !d->fields)
		return -EINVAL;
	/* Reserved fields are sent as zero (the header's bytes 18..19, the
	 * "Reserved" rows of tables 106-120). */
	memset(out, 0, XRXE_MAD_SIZE);
	encode(hdr_fields, sizeof(hdr_fields) / sizeof(hdr_fields[0]), msg, out);
	encode(d->fields, d->count, msg, out + XRXE_MAD_HDR_SIZE);
	return 0;
}

/* --- REJ reasons ------------------------------------------------------------ */

const char *xrxe_cm_rej_reason_name(unsigned reason)
{
	/* IBA 12.6.7.2, table 109 (34 is not assigned). */
	static const char *const names[] = {
		[XRXE_CM_REJ_NO_QP] = "no QP available",
		[XRXE_CM_REJ_NO_EEC] = "no EEC available",
		[XRXE_CM_REJ_NO_RESOURCES] = "no resources available",
		[XRXE_CM_REJ_TIMEOUT] = "timeout",
		[XRXE_CM_REJ_UNSUPPORTED] = "unsupported request",
		[XRXE_CM_REJ_INVALID_COMM_ID] = "invalid communication ID",
		[XRXE_CM_REJ_INVALID_COMM_INSTANCE] = "invalid communication instance",
		[XRXE_CM_REJ_INVALID_SERVICE_ID] = "invalid service ID",
		[XRXE_CM_REJ_INVALID_TRANSPORT_TYPE] = "invalid transport service type",
		[XRXE_CM_REJ_STALE_CONN] = "stale connection",
		[XRXE_CM_REJ_RDC_NOT_EXIST] = "RDC does not exist",
		[XRXE_CM_REJ_INVALID_GID] = "primary remote port GID rejected",
		[XRXE_CM_REJ_INVALID_LID] = "primary remote port LID rejected",
		[XRXE_CM_REJ_INVALID_SL] = "invalid primary SL",
		[XRXE_CM_REJ_INVALID_TRAFFIC_CLASS] = "invalid primary traffic class",
		[XRXE_CM_REJ_INVALID_HOP_LIMIT] = "invalid primary hop limit",
		[XRXE_CM_REJ_INVALID_PACKET_RATE] = "invalid primary packet rate",
		[XRXE_CM_REJ_INVALID_ALT_GID] = "alternate remote port GID rejected",
		[XRXE_CM_REJ_INVALID_ALT_LID] = "alternate remote port LID rejected",
		[XRXE_CM_REJ_INVALID_ALT_SL] = "invalid alternate SL",
		[XRXE_CM_REJ_INVALID_ALT_TRAFFIC_CLASS] = "invalid alternate traffic class",
		[XRXE_CM_REJ_INVALID_ALT_HOP_LIMIT] = "invalid alternate hop limit",
		[XRXE_CM_REJ_INVALID_ALT_PACKET_RATE] = "invalid alternate packet rate",
		[XRXE_CM_REJ_PORT_CM_REDIRECT] = "port and CM redirection",
		[XRXE_CM_REJ_PORT_REDIRECT] = "port redirection",
		[XRXE_CM_REJ_INVALID_MTU] = "invalid path MTU",
		[XRXE_CM_REJ_INSUFFICIENT_RESP_RESOURCES] = "insufficient responder resources",
		[XRXE_CM_REJ_CONSUMER_DEFINED] = "consumer reject",
		[XRXE_CM_REJ_INVALID_RNR_RETRY] = "invalid RNR NAK retry count",
		[XRXE_CM_REJ_DUPLICATE_LOCAL_COMM_ID] = "duplicate local communication ID",
		[XRXE_CM_REJ_INVALID_CLASS_VERSION] = "unsupported class version",
		[XRXE_CM_REJ_INVALID_FLOW_LABEL] = "invalid primary flow label",
		[XRXE_CM_REJ_INVALID_ALT_FLOW_LABEL] = "invalid alternate flow label",
		[XRXE_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED] = "vendor option not supported",
	};

	if (reason < sizeof(names) / sizeof(names[0]) && names[reason])
		return names[reason];
	return "unknown";
}

/* --- The cma header ----------------------------------------------------------- */

/* Layout (the kernel's struct cma_hdr in cma.c): byte 0 version, byte 1 IP
 * version in the high nibble (low nibble reserved), bytes 2..3 the active
 * side's source port, 4..19 source address, 20..35 destination address. An
 * IPv4 address is the last 4 of its 16 bytes after 12 zero bytes -- not an
 * IPv4-mapped ::ffff:a.b.c.d (checked against the kernel's REQs in
 * tests/golden/rxe-cm.pcap). */
#define CMA_OFF_SRC 4
#define CMA_OFF_DST 20
#define CMA_IP4_OFF 12

static void addr_in(const uint8_t *wire, unsigned ipver, uint8_t out[16])
{
	memset(out, 0, 16);
	if (ipver == 4)
		memcpy(out, wire + CMA_IP4_OFF, 4);
	else
		memcpy(out, wire, 16);
}

static void addr_out(const uint8_t in[16], unsigned ipver, uint8_t *wire)
{
	memset(wire, 0, 16);
	if (ipver == 4)
		memcpy(wire + CMA_IP4_OFF, in, 4);
	else
		memcpy(wire, in, 16);
}

int xrxe_cma_hdr_parse(const uint8_t *priv, size_t len, struct xrxe_cma_hdr *out)
{
	unsigned ipver;

	memset(out, 0, sizeof(*out));
	if (len < XRXE_CMA_HDR_SIZE)
		return -EINVAL;
	ipver = priv[1] >> 4;
	/* The kernel refuses other versions too (cma_save_ip_info): the
	 * header would not be one it wrote. */
	if (priv[0] != XRXE_CMA_VERSION || (ipver != 4 && ipver != 6))
		return -EINVAL;
	out->cma_version = priv[0];
	out->ip_version = (uint8_t)ipver;
	out->port = (uint16_t)(priv[2] << 8 | priv[3]);
	/* The 12 bytes before an IPv4 address are ignored, as the kernel
	 * reads only the address itself. */
	addr_in(priv + CMA_OFF_SRC, ipver, out->src_addr);
	addr_in(priv + CMA_OFF_DST, ipver, out->dst_addr);
	return 0;
}

void xrxe_cma_hdr_build(const struct xrxe_cma_hdr *h, uint8_t out[XRXE_CMA_HDR_SIZE])
{
	out[0] = h->cma_version;
	out[1] = (uint8_t)(h->ip_version << 4);
	out[2] = (uint8_t)(h->port >> 8);
	out[3] = (uint8_t)h->port;
	addr_out(h->src_addr, h->ip_version, out + CMA_OFF_SRC);
	addr_out(h->dst_addr, h->ip_version, out + CMA_OFF_DST);
}
