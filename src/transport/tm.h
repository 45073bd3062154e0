/* SPDX-License-Identifier: MIT */
/*
 * Tag matching (rdma-core's TM SRQs: ibv_create_srq_ex with IBV_SRQT_TM,
 * ibv_post_srq_ops, <infiniband/tm_types.h>): the matching core, sans-I/O.
 * tm.c has the rules; tm_srq.c wires it to an SRQ, its CQ and the responder
 * (issue 17, docs/architecture.md "Tag matching").
 */
#ifndef XRXE_TRANSPORT_TM_H
#define XRXE_TRANSPORT_TM_H

#include <stdbool.h>
#include <stdint.h>

#include "xrxe/abi.h"

/* struct ibv_tmh and struct ibv_rvh (tm_types.h): big-endian on the wire */
#define XRXE_TM_TMH_LEN 16u
#define XRXE_TM_RVH_LEN 16u
/* Rendezvous in progress per QP (tm_rndv.c): each holds one of the QP's
 * internal WQEs at a time (its READ, then its FIN) */
#define XRXE_TM_RNDV_MAX 8u
/* Tagged buffers' scatter list and the list's size (tm_caps) */
#define XRXE_TM_MAX_SGE 1u
#define XRXE_TM_MAX_TAGS 1024u

/* enum ibv_tmh_op */
enum { XRXE_TMH_NO_TAG = 0, XRXE_TMH_RNDV = 1, XRXE_TMH_FIN = 2, XRXE_TMH_EAGER = 3 };

struct xrxe_tm_hdr {
	uint8_t op;
	uint32_t app_ctx;
	uint64_t tag;
	/* RNDV: where the sender's data is (RVH) */
	uint64_t rndv_va;
	uint32_t rndv_rkey, rndv_len;
};

/* The TMH (and for RNDV the RVH after it) at the start of a message's first
 * payload of len bytes: 0, or -EINVAL when it is too short or the opcode
 * is unknown (reserved bytes are ignored). Reads nothing beyond len. */
int xrxe_tm_parse(const uint8_t *p, uint32_t len, struct xrxe_tm_hdr *h);
/* Write a TMH (op, app_ctx, tag; reserved bytes zero) into p[0..16). */
void xrxe_tm_build_tmh(uint8_t p[XRXE_TM_TMH_LEN], uint8_t op, uint32_t app_ctx, uint64_t tag);

/* One tagged buffer (TAG_ADD) */
struct xrxe_tm_entry {
	uint64_t tag, mask;
	uint64_t wr_id; /* recv_wr_id: the TM_RECV completion's */
	uint32_t nsge;
	struct xrxe_sge sge[XRXE_TM_MAX_SGE];
	/* private */
	bool used;
	bool eligible; /* added (or synchronised) while SW had seen every unexpected message */
	uint16_t gen;  /* bumped on reuse: stale handles miss */
	uint64_t order;
};

struct xrxe_tm_list {
	struct xrxe_tm_entry *e;
	uint32_t max, n;
	uint64_t order;
	uint32_t hw_unexp; /* messages delivered as unexpected */
};

int xrxe_tm_list_init(struct xrxe_tm_list *l, uint32_t max_tags);
void xrxe_tm_list_fini(struct xrxe_tm_list *l);
/* TAG_ADD of *a (tag, mask, wr_id, sge): its handle, and *sync_req when SW's
 * unexpected count is behind (the entry then waits for a sync before it
 * matches). -ENOSPC: the list is full; -EINVAL: a bad scatter list. */
int xrxe_tm_add(struct xrxe_tm_list *l, const struct xrxe_tm_entry *a, uint32_t unexp_cnt,
		uint32_t *handle, bool *sync_req);
/* TAG_DEL: 0, or -ENOENT when the handle names no entry (consumed by a
 * message, deleted, never added: IBV_WC_TM_ERR). */
int xrxe_tm_del(struct xrxe_tm_list *l, uint32_t handle);
/* IBV_OPS_TM_SYNC with SW's count: true when SW and the list are in sync. */
bool xrxe_tm_sync(struct xrxe_tm_list *l, uint32_t unexp_cnt);

enum xrxe_tm_verdict {
	XRXE_TM_PLAIN,      /* no valid TMH: a plain receive */
	XRXE_TM_NO_TAG,     /* TMH NO_TAG: a plain receive reported as IBV_WC_TM_NO_TAG */
	XRXE_TM_EXPECTED,   /* EAGER matched: payload after the TMH into *out */
	XRXE_TM_RNDV,       /* RNDV matched: *out receives the RVH's data */
	XRXE_TM_UNEXPECTED, /* EAGER or RNDV without a match: a plain receive, counted */
};

/* The message whose first payload starts with p[0..len): what becomes of it.
 * A match takes its entry off the list (copied to *out). */
enum xrxe_tm_verdict xrxe_tm_match(struct xrxe_tm_list *l, const uint8_t *p, uint32_t len,
				   struct xrxe_tm_hdr *h, struct xrxe_tm_entry *out);

#endif /* XRXE_TRANSPORT_TM_H */
