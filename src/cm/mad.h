/* SPDX-License-Identifier: MIT */
/*
 * Communication Management MADs (IBA 12.6, 13.4): the 256-byte management
 * datagrams the CM exchanges on QP1, and the rdma_cm header (cma header) in
 * the private data of REQ and SIDR_REQ. Pure functions, like src/wire: no
 * state, no I/O, no allocation.
 *
 * A MAD is the 24-byte common header (IBA 13.4.3) + a 232-byte attribute.
 * Decoded messages hold every field in host order, one member per field of
 * the IBA tables (docs/rdmacm.md has the layouts and where each was checked
 * against the kernel's frames). GIDs stay as the 16 bytes of the wire.
 *
 * xrxe_cm_mad_parse() checks everything the receiver must (IBA 13.4.4,
 * 16.7): the length, base version 1, class 0x07, class version 2, a method
 * the CM uses (SEND), an attribute it knows; a failure gives its reason, for
 * the counted drop. xrxe_cm_mad_build() writes a MAD whose reserved bits are
 * zero, and drops member bits beyond a field's width; parse(build(m)) == m
 * for every message whose members fit their fields, and build(parse(mad)) is
 * the MAD with its reserved bits cleared (byte for byte the kernel's MADs).
 */
#ifndef XRXE_CM_MAD_H
#define XRXE_CM_MAD_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define XRXE_MAD_SIZE 256
#define XRXE_MAD_HDR_SIZE 24
#define XRXE_CM_ATTR_SIZE 232 /* XRXE_MAD_SIZE - XRXE_MAD_HDR_SIZE */

#define XRXE_MAD_BASE_VERSION 1
#define XRXE_MGMT_CLASS_CM 0x07
#define XRXE_CM_CLASS_VERSION 2
#define XRXE_MAD_METHOD_GET 0x01
#define XRXE_MAD_METHOD_SEND 0x03
#define XRXE_MAD_METHOD_GET_RESP 0x81

/* QP1 (GSI) addressing of every CM MAD: XRXE_GSI_QPN, XRXE_GSI_QKEY in
 * include/xrxe/wire.h. */
#include "xrxe/wire.h"

/* Attribute IDs (IBA 16.7.2 Table 212 region, ref table in docs/rdmacm.md). */
enum xrxe_cm_attr {
	XRXE_CM_ATTR_CLASS_PORT_INFO = 0x0001,
	XRXE_CM_ATTR_REQ = 0x0010,
	XRXE_CM_ATTR_MRA = 0x0011,
	XRXE_CM_ATTR_REJ = 0x0012,
	XRXE_CM_ATTR_REP = 0x0013,
	XRXE_CM_ATTR_RTU = 0x0014,
	XRXE_CM_ATTR_DREQ = 0x0015,
	XRXE_CM_ATTR_DREP = 0x0016,
	XRXE_CM_ATTR_SIDR_REQ = 0x0017,
	XRXE_CM_ATTR_SIDR_REP = 0x0018,
	XRXE_CM_ATTR_LAP = 0x0019,
	XRXE_CM_ATTR_APR = 0x001a,
};

/* Private data bytes of each message (IBA 12.6). */
#define XRXE_CM_REQ_PRIVATE 92
#define XRXE_CM_MRA_PRIVATE 222
#define XRXE_CM_REJ_PRIVATE 148
#define XRXE_CM_REP_PRIVATE 196
#define XRXE_CM_RTU_PRIVATE 224
#define XRXE_CM_DREQ_PRIVATE 220
#define XRXE_CM_DREP_PRIVATE 224
#define XRXE_CM_SIDR_REQ_PRIVATE 216
#define XRXE_CM_SIDR_REP_PRIVATE 136
#define XRXE_CM_REJ_ARI 72      /* additional rejection information */
#define XRXE_CM_SIDR_REP_INFO 72 /* additional information */

/* Common MAD header (IBA 13.4.3). */
struct xrxe_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;        /* transaction ID */
	uint16_t attr_id;    /* enum xrxe_cm_attr */
	uint32_t attr_mod;   /* attribute modifier (ECE options in REQ/REP/REJ) */
};

/* One path of a REQ (primary and alternate, IBA 12.6.5 Table 106). */
struct xrxe_cm_path {
	uint16_t local_lid, remote_lid; /* 0xffff (permissive) on RoCE */
	union ibv_gid local_gid, remote_gid;
	uint32_t flow_label; /* 20 bits */
	uint8_t packet_rate; /* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;                /* 4 bits */
	uint8_t subnet_local;      /* 1 bit */
	uint8_t local_ack_timeout; /* 5 bits */
};

/* Transport service types of the REQ (IBA 12.6.5). */
enum xrxe_cm_transport {
	XRXE_CM_TRANSPORT_RC = 0,
	XRXE_CM_TRANSPORT_UC = 1,
	XRXE_CM_TRANSPORT_RD = 2,
	XRXE_CM_TRANSPORT_EXT = 3, /* extended_transport_type names it (XRC) */
};

struct xrxe_cm_req {
	uint32_t local_comm_id;
	uint32_t vendor_id; /* 24 bits (ECE) */
	uint64_t service_id;
	uint64_t local_ca_guid; /* as on the wire: the node GUID's bytes, big endian */
	uint32_t local_qkey;
	uint32_t local_qpn; /* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn; /* 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn; /* 24 bits */
	uint8_t remote_cm_response_timeout; /* 5 bits */
	uint8_t transport_type;             /* 2 bits, enum xrxe_cm_transport */
	uint8_t flow_control;               /* 1 bit */
	uint32_t starting_psn;              /* 24 bits */
	uint8_t local_cm_response_timeout;  /* 5 bits */
	uint8_t retry_count;                /* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;      /* 4 bits, enum ibv_mtu */
	uint8_t rdc_exists;    /* 1 bit */
	uint8_t rnr_retry_count; /* 3 bits */
	uint8_t max_cm_retries;  /* 4 bits */
	uint8_t srq;             /* 1 bit */
	uint8_t ext_transport_type; /* 3 bits */
	struct xrxe_cm_path primary, alternate;
	uint8_t sap_supported; /* 1 bit */
	uint8_t private_data[XRXE_CM_REQ_PRIVATE];
};

/* Which message an MRA or a REJ refers to (IBA 12.6.6/12.6.7). */
enum xrxe_cm_msg_ref {
	XRXE_CM_REF_REQ = 0,
	XRXE_CM_REF_REP = 1,
	XRXE_CM_REF_OTHER = 2, /* MRA: LAP; REJ: no message (e.g. a stale REP) */
};

struct xrxe_cm_mra {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t message_mraed;   /* 2 bits, enum xrxe_cm_msg_ref */
	uint8_t service_timeout; /* 5 bits */
	uint8_t private_data[XRXE_CM_MRA_PRIVATE];
};

/* REJ reasons the CM sends or understands (IBA 12.6.7.2 Table 109). */
enum xrxe_cm_rej_reason {
	XRXE_CM_REJ_NO_QP = 1,
	XRXE_CM_REJ_NO_EEC = 2,
	XRXE_CM_REJ_NO_RESOURCES = 3,
	XRXE_CM_REJ_TIMEOUT = 4,
	XRXE_CM_REJ_UNSUPPORTED = 5,
	XRXE_CM_REJ_INVALID_COMM_ID = 6,
	XRXE_CM_REJ_INVALID_COMM_INSTANCE = 7,
	XRXE_CM_REJ_INVALID_SERVICE_ID = 8,
	XRXE_CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	XRXE_CM_REJ_STALE_CONN = 10,
	XRXE_CM_REJ_RDC_NOT_EXIST = 11,
	XRXE_CM_REJ_INVALID_GID = 12,
	XRXE_CM_REJ_INVALID_LID = 13,
	XRXE_CM_REJ_INVALID_SL = 14,
	XRXE_CM_REJ_INVALID_TRAFFIC_CLASS = 15,
	XRXE_CM_REJ_INVALID_HOP_LIMIT = 16,
	XRXE_CM_REJ_INVALID_PACKET_RATE = 17,
	XRXE_CM_REJ_INVALID_ALT_GID = 18,
	XRXE_CM_REJ_INVALID_ALT_LID = 19,
	XRXE_CM_REJ_INVALID_ALT_SL = 20,
	XRXE_CM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21,
	XRXE_CM_REJ_INVALID_ALT_HOP_LIMIT = 22,
	XRXE_CM_REJ_INVALID_ALT_PACKET_RATE = 23,
	XRXE_CM_REJ_PORT_CM_REDIRECT = 24,
	XRXE_CM_REJ_PORT_REDIRECT = 25,
	XRXE_CM_REJ_INVALID_MTU = 26,
	XRXE_CM_REJ_INSUFFICIENT_RESP_RESOURCES = 27,
	XRXE_CM_REJ_CONSUMER_DEFINED = 28,
	XRXE_CM_REJ_INVALID_RNR_RETRY = 29,
	XRXE_CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	XRXE_CM_REJ_INVALID_CLASS_VERSION = 31,
	XRXE_CM_REJ_INVALID_FLOW_LABEL = 32,
	XRXE_CM_REJ_INVALID_ALT_FLOW_LABEL = 33,
	XRXE_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,
};
/* Name for logs and `xrxe cm` ("invalid service ID", ...); "unknown" for a
 * reason not in the table (callers print the number beside it). */
const char *xrxe_cm_rej_reason_name(unsigned reason);

struct xrxe_cm_rej {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t message_rejected; /* 2 bits, enum xrxe_cm_msg_ref */
	uint8_t ari_length;       /* 7 bits */
	uint16_t reason;          /* enum xrxe_cm_rej_reason */
	uint8_t ari[XRXE_CM_REJ_ARI];
	uint8_t private_data[XRXE_CM_REJ_PRIVATE];
};

struct xrxe_cm_rep {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;   /* 24 bits */
	uint32_t vendor_id;   /* 24 bits, split H/M/L on the wire (ECE) */
	uint32_t local_eecn;  /* 24 bits */
	uint32_t starting_psn; /* 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;  /* 5 bits */
	uint8_t failover_accepted; /* 2 bits */
	uint8_t flow_control;      /* 1 bit */
	uint8_t rnr_retry_count;   /* 3 bits */
	uint8_t srq;               /* 1 bit */
	uint64_t local_ca_guid;    /* as on the wire */
	uint8_t private_data[XRXE_CM_REP_PRIVATE];
};

struct xrxe_cm_rtu {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[XRXE_CM_RTU_PRIVATE];
};

struct xrxe_cm_dreq {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn; /* 24 bits: the receiver's QPN (remote QPN/EECN) */
	uint8_t private_data[XRXE_CM_DREQ_PRIVATE];
};

struct xrxe_cm_drep {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[XRXE_CM_DREP_PRIVATE];
};

struct xrxe_cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[XRXE_CM_SIDR_REQ_PRIVATE];
};

/* SIDR_REP status (IBA 12.11.2 Table 121). */
enum xrxe_cm_sidr_status {
	XRXE_CM_SIDR_SUCCESS = 0,
	XRXE_CM_SIDR_UNSUPPORTED = 1,      /* service ID not supported (nobody listens) */
	XRXE_CM_SIDR_REJECT = 2,           /* rejected by the service */
	XRXE_CM_SIDR_NO_QP = 3,
	XRXE_CM_SIDR_REDIRECT = 4,
	XRXE_CM_SIDR_UNSUPPORTED_VERSION = 5,
};

struct xrxe_cm_sidr_rep {
	uint32_t request_id;
	uint8_t status; /* enum xrxe_cm_sidr_status */
	uint8_t info_length;
	uint32_t vendor_id; /* 24 bits, split H/L on the wire */
	uint32_t qpn;       /* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[XRXE_CM_SIDR_REP_INFO];
	uint8_t private_data[XRXE_CM_SIDR_REP_PRIVATE];
};

/* A decoded CM MAD. LAP, APR and ClassPortInfo parse (hdr only, so the CM
 * can answer or count them) but carry no body here. */
struct xrxe_cm_msg {
	struct xrxe_mad_hdr hdr;
	union {
		struct xrxe_cm_req req;
		struct xrxe_cm_mra mra;
		struct xrxe_cm_rej rej;
		struct xrxe_cm_rep rep;
		struct xrxe_cm_rtu rtu;
		struct xrxe_cm_dreq dreq;
		struct xrxe_cm_drep drep;
		struct xrxe_cm_sidr_req sidr_req;
		struct xrxe_cm_sidr_rep sidr_rep;
	};
};

/* Why a MAD was refused (counted by the CM, named in `xrxe cm`). */
enum xrxe_mad_error {
	XRXE_MAD_OK = 0,
	XRXE_MAD_ERR_TRUNCATED,      /* fewer than 256 bytes */
	XRXE_MAD_ERR_BASE_VERSION,   /* base version != 1 */
	XRXE_MAD_ERR_CLASS,          /* management class != CM */
	XRXE_MAD_ERR_CLASS_VERSION,  /* CM class version != 2 */
	XRXE_MAD_ERR_METHOD,         /* not a method the CM takes */
	XRXE_MAD_ERR_ATTR,           /* unknown attribute ID */
	XRXE_MAD_ERROR_COUNT,
};
const char *xrxe_mad_strerror(enum xrxe_mad_error e);

/* Decode one MAD (len: the UD payload length; bytes past 256 are ignored, as
 * a UD receive buffer may be larger). XRXE_MAD_OK or the reason; out is
 * zeroed first, and on an error after the length check holds the header as
 * far as it was read. Method: SEND for every CM message, GET or GET_RESP for
 * ClassPortInfo. */
enum xrxe_mad_error xrxe_cm_mad_parse(const uint8_t *buf, size_t len, struct xrxe_cm_msg *out);
/* Encode msg (hdr.attr_id selects the body; base/class/version/method are
 * written as given) into out[XRXE_MAD_SIZE]. -EINVAL for an attribute
 * without a body codec. */
int xrxe_cm_mad_build(const struct xrxe_cm_msg *msg, uint8_t out[XRXE_MAD_SIZE]);
/* "REQ", "REP", ..., "ClassPortInfo", "LAP", "APR"; "unknown" for any other
 * ID (no buffer: callers print the number beside it). */
const char *xrxe_cm_attr_name(uint16_t attr_id);

/* The layouts as data (IBA 12.6 tables 106-120): one entry per field, in wire
 * order, which the codec walks both ways. Bits no field covers are reserved:
 * built as zero, ignored when parsed. Tests, `xrxe cm` dumps and
 * docs/rdmacm.md read the same table. */
struct xrxe_cm_field {
	const char *name;  /* the member path: "local_qpn", "primary.local_gid" */
	uint16_t byte;     /* first byte: in the attribute (MAD offset - 24);
			    * in the MAD for the header's fields */
	uint8_t bit;       /* first bit within that byte, 0 = most significant */
	uint8_t shift;     /* the field holds member bits [shift, shift + width)
			    * (ECE vendor IDs split over reserved bytes) */
	uint16_t width;    /* bits (byte strings: 8 x their length) */
	uint8_t is_bytes;  /* a byte string (GID, ARI, private data), as on the wire */
	uint8_t size;      /* sizeof the member */
	uint16_t member;   /* offsetof(struct xrxe_cm_msg, ...) */
};
/* The body fields of attr_id, NULL (count 0) for an attribute without a body
 * codec (ClassPortInfo, LAP, APR, unknown). */
const struct xrxe_cm_field *xrxe_cm_fields(uint16_t attr_id, size_t *count);
/* The common header's fields (offsets in the MAD). */
const struct xrxe_cm_field *xrxe_mad_hdr_fields(size_t *count);

/* --- The rdma_cm header (cma header) in REQ and SIDR_REQ private data ------
 * 36 bytes before the user's private data (the kernel's cma.c): version
 * 0x00, IP version in the high nibble of byte 1 (4 or 6), the active side's
 * source port (network order), then the source and destination addresses as
 * 16 bytes each. An IPv4 address is 12 zero bytes then the address -- not
 * IPv4-mapped ::ffff:a.b.c.d, although the REQ's GIDs are mapped (checked
 * against every REQ and SIDR_REQ in tests/golden/rxe-cm.pcap). Parsing
 * ignores those 12 bytes, as the kernel does; building writes zeros. */
#define XRXE_CMA_HDR_SIZE 36
#define XRXE_CMA_VERSION 0x00

struct xrxe_cma_hdr {
	uint8_t cma_version;
	uint8_t ip_version; /* 4 or 6 */
	uint16_t port;      /* host order */
	/* Network order. IPv4: the address in bytes 0..3 (ready for a
	 * sin_addr), bytes 4..15 zero; the wire puts it in bytes 12..15. */
	uint8_t src_addr[16], dst_addr[16];
};
/* -EINVAL if len < 36 or the version or IP version is not one rdma_cm sends. */
int xrxe_cma_hdr_parse(const uint8_t *priv, size_t len, struct xrxe_cma_hdr *out);
void xrxe_cma_hdr_build(const struct xrxe_cma_hdr *h, uint8_t out[XRXE_CMA_HDR_SIZE]);

/* IP service IDs (docs/rdmacm.md): 0x0000000001000000 | ps << 16 | port. */
#define XRXE_CMA_SERVICE_ID_BASE 0x0000000001000000ull
#define XRXE_CMA_PS_MASK 0xffffffffffff0000ull
static inline uint64_t xrxe_cma_service_id(uint32_t ps, uint16_t port)
{
	return XRXE_CMA_SERVICE_ID_BASE | (uint64_t)(ps & 0xffff) << 16 | port;
}

#endif /* XRXE_CM_MAD_H */
