// SPDX-License-Identifier: MIT
/*
 * Tag matching's core (tm.h): the TMH parser and a TM SRQ's list of tagged
 * buffers with rdma-core's phase synchronisation (ibv_post_srq_ops(3)).
 *
 * A message sent to a TM SRQ starts with a struct ibv_tmh (opcode, reserved
 * bytes that must be zero, app_ctx, tag; big-endian), for RNDV followed by a
 * struct ibv_rvh (the sender's va, rkey, length). It is hostile input: the
 * parser reads only what the payload holds and refuses a short header and
 * unknown opcodes (the message is then a plain receive); the reserved
 * bytes are ignored, as devices ignore them.
 *
 * Matching (TAG_ADD's man page): an entry matches when TMH.tag & entry.mask
 * == entry.tag; of the matching entries the one added first wins (the order
 * MPI's matching rules need), and a match consumes it. A message that
 * matches nothing is unexpected: it goes to an ordinary receive WQE of the
 * SRQ and the list counts it (hw_unexp).
 *
 * Phase synchronisation: software matches its unexpected messages against
 * its own receives while new tags are posted, so a tag it posts before it
 * has seen every unexpected message might match a message it is about to
 * take from its unexpected queue as well. Each operation therefore carries
 * the number of unexpected messages software has handled; an entry added
 * with a count behind the list's is not eligible (and its completion says
 * IBV_WC_TM_SYNC_REQ) until a TM_SYNC operation reports the list's count,
 * which makes every entry eligible. Entries added while in sync stay
 * eligible when unexpected messages arrive later.
 *
 * Cost: a linear scan of the list per tagged message (at most
 * XRXE_TM_MAX_TAGS entries).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tm.h"

static uint64_t be64_at(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int xrxe_tm_parse(const uint8_t *p, uint32_t len, struct xrxe_tm_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (!p || len < XRXE_TM_TMH_LEN)
		return -EINVAL;
	/* p[1..3] are reserved: ignored, as devices do (a sender that leaves
	 * them dirty, as rdma-core's own test does, still matches) */
	h->op = p[0];
	h->app_ctx = be32_at(p + 4);
	h->tag = be64_at(p + 8);
	switch (h->op) {
	case XRXE_TMH_NO_TAG:
	case XRXE_TMH_EAGER:
	case XRXE_TMH_FIN:
		return 0;
	case XRXE_TMH_RNDV:
		if (len < XRXE_TM_TMH_LEN + XRXE_TM_RVH_LEN)
			return -EINVAL;
		h->rndv_va = be64_at(p + 16);
		h->rndv_rkey = be32_at(p + 24);
		h->rndv_len = be32_at(p + 28);
		return 0;
	default:
		return -EINVAL;
	}
}

void xrxe_tm_build_tmh(uint8_t p[XRXE_TM_TMH_LEN], uint8_t op, uint32_t app_ctx, uint64_t tag)
{
	memset(p, 0, XRXE_TM_TMH_LEN);
	p[0] = op;
	for (unsigned i = 0; i < 4; i++)
		p[4 + i] = (uint8_t)(app_ctx >> (24 - 8 * i));
	for (unsigned i = 0; i < 8; i++)
		p[8 + i] = (uint8_t)(tag >> (56 - 8 * i));
}

int xrxe_tm_list_init(struct xrxe_tm_list *l, uint32_t max_tags)
{
	memset(l, 0, sizeof(*l));
	if (max_tags == 0 || max_tags > XRXE_TM_MAX_TAGS)
		return -EINVAL;
	l->e = calloc(max_tags, sizeof(*l->e));
	if (!l->e)
		return -ENOMEM;
	l->max = max_tags;
	return 0;
}

void xrxe_tm_list_fini(struct xrxe_tm_list *l)
{
	free(l->e);
	memset(l, 0, sizeof(*l));
}

/* handle = gen << 16 | index: a consumed or deleted entry's handle misses */
static uint32_t handle_of(const struct xrxe_tm_list *l, const struct xrxe_tm_entry *e)
{
	return (uint32_t)e->gen << 16 | (uint32_t)(e - l->e);
}

int xrxe_tm_add(struct xrxe_tm_list *l, const struct xrxe_tm_entry *a, uint32_t unexp_cnt,
		uint32_t *handle, bool *sync_req)
{
	struct xrxe_tm_entry *e = NULL;
	uint16_t gen;

	if (a->nsge > XRXE_TM_MAX_SGE)
		return -EINVAL;
	if (l->n == l->max)
		return -ENOSPC;
	for (uint32_t i = 0; i < l->max && !e; i++)
		if (!l->e[i].used)
			e = &l->e[i];
	if (!e)
		return -ENOSPC;
	gen = e->gen;
	*e = *a;
	e->gen = gen;
	e->used = true;
	e->eligible = unexp_cnt == l->hw_unexp;
	e->order = l->order++;
	l->n++;
	*handle = handle_of(l, e);
	*sync_req = !e->eligible;
	return 0;
}

static void entry_free(struct xrxe_tm_list *l, struct xrxe_tm_entry *e)
{
	e->used = false;
	e->gen++;
	l->n--;
}

int xrxe_tm_del(struct xrxe_tm_list *l, uint32_t handle)
{
	uint32_t i = handle & 0xffffu;
	struct xrxe_tm_entry *e;

	if (i >= l->max)
		return -ENOENT;
	e = &l->e[i];
	if (!e->used || e->gen != (uint16_t)(handle >> 16))
		return -ENOENT;
	entry_free(l, e);
	return 0;
}

bool xrxe_tm_sync(struct xrxe_tm_list *l, uint32_t unexp_cnt)
{
	if (unexp_cnt != l->hw_unexp)
		return false;
	for (uint32_t i = 0; i < l->max; i++)
		if (l->e[i].used)
			l->e[i].eligible = true;
	return true;
}

enum xrxe_tm_verdict xrxe_tm_match(struct xrxe_tm_list *l, const uint8_t *p, uint32_t len,
				   struct xrxe_tm_hdr *h, struct xrxe_tm_entry *out)
{
	struct xrxe_tm_entry *best = NULL;

	if (xrxe_tm_parse(p, len, h) || h->op == XRXE_TMH_FIN)
		return XRXE_TM_PLAIN; /* FIN answers our own RNDV: not a receive of the list */
	if (h->op == XRXE_TMH_NO_TAG)
		return XRXE_TM_NO_TAG;
	for (uint32_t i = 0; i < l->max; i++) {
		struct xrxe_tm_entry *e = &l->e[i];

		if (e->used && e->eligible && (h->tag & e->mask) == e->tag &&
		    (!best || e->order < best->order))
			best = e;
	}
	if (!best) {
		l->hw_unexp++;
		return XRXE_TM_UNEXPECTED;
	}
	*out = *best;
	entry_free(l, best);
	return h->op == XRXE_TMH_RNDV ? XRXE_TM_RNDV : XRXE_TM_EXPECTED;
}
