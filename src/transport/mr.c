// SPDX-License-Identifier: MIT
/*
 * Protection domains, memory regions and address handles.
 *
 * Keys have rxe's layout (docs/facts/rxe.md §3.1), a 24-bit name << 8 | an
 * 8-bit key byte, lkey == rkey, but nothing in them is handed out in turn:
 * the name is the slot index and the slot's generation put through a keyed
 * permutation of 24 bits (xrxe_tpi_key_make; the seed is the daemon's
 * getrandom), so the whole 32 bits look random and another user cannot
 * predict a region's R_Key from its own; a lookup inverts the permutation to
 * find the slot. The slot itself is a random free one and the key byte a
 * random value other than the slot's previous one. A key just deregistered
 * does not come back soon: the same slot's next key has the next generation
 * (the name repeats only after 2^(24 - index bits) registrations of that
 * slot, 64 for the daemon's 65 536 regions and windows each) and another
 * key byte.
 * Every access names a key and a range; the key must match exactly, the region
 * must be valid and in the QP's PD, grant the access and cover the whole range
 * (IBA 10.6: memory regions, protection domains, access rights and key checks;
 * the rule numbers are not quoted here). The host pointer registered here
 * is where the bytes are read and written (the daemon maps application memory
 * there).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tp_internal.h"

/* IBA 10.6.3.x: local read access is always granted, so the access check
 * only concerns these bits. */
#define MR_ACCESS_CHECKED                                                                  \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |       \
	 IBV_ACCESS_REMOTE_ATOMIC | XRXE_ACCESS_FLUSH_GLOBAL | XRXE_ACCESS_FLUSH_PERSISTENT)

/* Access rules of a registration (reg and rereg alike). */
static int mr_access_ok(uint32_t access)
{
	/* IBA 10.6.3.1: remote write or atomic access needs local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	/* FLUSH to persistence needs memory in a persistence domain; ours is
	 * volatile (a memfd), and rxe refuses the flag on non-pmem memory
	 * the same way. Global-visibility FLUSH is offered. */
	if (access & XRXE_ACCESS_FLUSH_PERSISTENT)
		return -EINVAL;
	return 0;
}

int xrxe_tp_pd_alloc(struct xrxe_tp *tp, uint32_t *pdn)
{
	uint32_t i;

	for (i = 1; i < tp->npds; i++) {
		if (!tp->pds[i].used) {
			tp->pds[i].used = true;
			tp->pds[i].refs = 0;
			tp->stats.pds++;
			*pdn = i;
			return 0;
		}
	}
	return -ENOMEM;
}

int xrxe_tp_pd_free(struct xrxe_tp *tp, uint32_t pdn)
{
	if (pdn == 0 || pdn >= tp->npds || !tp->pds[pdn].used)
		return -EINVAL;
	if (tp->pds[pdn].refs)
		return -EBUSY;
	tp->pds[pdn].used = false;
	tp->stats.pds--;
	return 0;
}

int xrxe_tpi_pd_get(struct xrxe_tp *tp, uint32_t pdn)
{
	if (pdn == 0 || pdn >= tp->npds || !tp->pds[pdn].used)
		return -EINVAL;
	tp->pds[pdn].refs++;
	return 0;
}

void xrxe_tpi_pd_put(struct xrxe_tp *tp, uint32_t pdn)
{
	if (pdn && pdn < tp->npds && tp->pds[pdn].refs)
		tp->pds[pdn].refs--;
}

/* splitmix64: good enough to make keys unpredictable from one another; the
 * seed (struct xrxe_tp_config.key_seed) carries the real entropy. */
uint32_t xrxe_tpi_key_random(struct xrxe_tp *tp)
{
	uint64_t z = (tp->key_rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* The permutation of key names: a 4-round Feistel network on two 12-bit
 * halves (Luby-Rackoff: a pseudorandom permutation from a pseudorandom round
 * function), round keys from the transport's key seed. Its input is
 * gen << index bits | index; the index bits are those of the largest slot
 * index, the rest of the 24 bits count generations. */
#define KEY_NAME_MASK 0xffffffu

static uint32_t key_round(const struct xrxe_tp *tp, unsigned round, uint32_t half)
{
	uint64_t z = tp->cfg.key_seed + 0x9e3779b97f4a7c15ull * (round + 1) + half;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)(z ^ (z >> 31)) & 0xfff;
}

static uint32_t key_permute(const struct xrxe_tp *tp, uint32_t x, bool inverse)
{
	uint32_t l = x >> 12 & 0xfff, r = x & 0xfff, t;

	for (unsigned i = 0; i < 4; i++) {
		if (!inverse) {
			t = l ^ key_round(tp, i, r);
			l = r;
			r = t;
		} else {
			t = r ^ key_round(tp, 3 - i, l);
			r = l;
			l = t;
		}
	}
	return l << 12 | r;
}

unsigned xrxe_tpi_key_index_bits(const struct xrxe_tp *tp)
{
	uint32_t top = tp->mw_base + tp->nmws; /* one past the largest index */
	unsigned bits = 1;

	while (bits < 24 && (1u << bits) < top)
		bits++;
	return bits;
}

uint32_t xrxe_tpi_key_make(const struct xrxe_tp *tp, uint32_t idx, uint32_t gen)
{
	unsigned ib = tp->key_ib;

	return key_permute(tp, ((gen << ib) | idx) & KEY_NAME_MASK, false);
}

/* The slot a key names. Not a check: the caller compares the slot's key. */
uint32_t xrxe_tpi_key_index(struct xrxe_tp *tp, uint32_t key)
{
	const size_t nmemo = sizeof(tp->key_memo) / sizeof(tp->key_memo[0]);
	uint32_t ib = tp->key_ib, idx;
	size_t slot = (key ^ key >> 8 ^ key >> 16) & (nmemo - 1);

	if (tp->key_memo[slot].key == key && tp->key_memo[slot].idx1)
		return tp->key_memo[slot].idx1 - 1;
	idx = key_permute(tp, key >> 8, true) & ((1u << ib) - 1);
	tp->key_memo[slot].key = key;
	tp->key_memo[slot].idx1 = idx + 1;
	return idx;
}

/* A key byte other than old (adding 1..255 mod 256 never gives old back). */
uint8_t xrxe_tpi_key_byte_next(struct xrxe_tp *tp, uint8_t old)
{
	return (uint8_t)(old + 1 + xrxe_tpi_key_random(tp) % 255);
}

/* odp: NULL, or the memory of an on-demand-paging region (odp.c), whose
 * host is then the application's address and may be 0 (implicit ODP). */
int xrxe_tpi_mr_reg(struct xrxe_tp *tp, uint32_t pdn, void *host, uint64_t iova, uint64_t length,
		    uint32_t access, void *odp, uint32_t *lkey, uint32_t *rkey)
{
	uint32_t n = tp->cfg.max_mr, i, idx, start;
	struct tp_mr *mr;
	int err;

	if (!host && length && !odp)
		return -EINVAL;
	/* the range must not wrap the address space */
	if (iova + length < iova || (uintptr_t)host + length < (uintptr_t)host)
		return -EINVAL;
	err = mr_access_ok(access);
	if (err)
		return err;
	start = n ? xrxe_tpi_key_random(tp) % n : 0;
	for (i = 0; i < n; i++) {
		idx = 1 + (start + i) % n;
		if (!tp->mrs[idx].used)
			break;
	}
	if (i == n)
		return -ENOMEM;
	err = xrxe_tpi_pd_get(tp, pdn);
	if (err)
		return err;
	mr = &tp->mrs[idx];
	mr->key8 = xrxe_tpi_key_byte_next(tp, mr->key8);
	mr->gen++;
	mr->used = true;
	mr->valid = true;
	mr->key = xrxe_tpi_key_make(tp, idx, mr->gen) << 8 | mr->key8;
	mr->pdn = pdn;
	mr->access = access;
	mr->host = host;
	mr->iova = iova;
	mr->length = length;
	mr->nmw = 0;
	mr->odp = odp;
	tp->stats.mrs++;
	*lkey = *rkey = mr->key;
	return 0;
}

int xrxe_tp_mr_reg(struct xrxe_tp *tp, uint32_t pdn, void *host, uint64_t iova, uint64_t length,
		   uint32_t access, uint32_t *lkey, uint32_t *rkey)
{
	return xrxe_tpi_mr_reg(tp, pdn, host, iova, length, access, NULL, lkey, rkey);
}

struct tp_mr *xrxe_tpi_mr_by_key(struct xrxe_tp *tp, uint32_t key)
{
	uint32_t idx = xrxe_tpi_key_index(tp, key);
	struct tp_mr *mr;

	if (idx == 0 || idx > tp->cfg.max_mr)
		return NULL;
	mr = &tp->mrs[idx];
	if (!mr->used || mr->key != key)
		return NULL;
	return mr;
}

int xrxe_tp_mr_dereg(struct xrxe_tp *tp, uint32_t lkey)
{
	struct tp_mr *mr = xrxe_tpi_mr_by_key(tp, lkey);

	if (!mr)
		return -EINVAL;
	/* IBA 10.6.7.2.x (and rxe): a region with bound windows stays */
	if (mr->nmw)
		return -EBUSY;
	xrxe_tpi_pd_put(tp, mr->pdn);
	mr->used = false;
	mr->valid = false;
	mr->key = 0;
	mr->odp = NULL;
	tp->stats.mrs--;
	return 0;
}

struct tp_mr *xrxe_tpi_mr_check(struct xrxe_tp *tp, uint32_t key, uint32_t pdn, uint64_t va,
				uint64_t len, uint32_t access)
{
	struct tp_mr *mr = xrxe_tpi_mr_by_key(tp, key);

	if (!mr || !mr->valid || mr->pdn != pdn)
		return NULL;
	if ((access & MR_ACCESS_CHECKED) & ~mr->access)
		return NULL;
	/* [va, va + len) inside [iova, iova + length), without overflow */
	if (va < mr->iova || len > mr->length || va - mr->iova > mr->length - len)
		return NULL;
	return mr;
}

int xrxe_tpi_mr_invalidate(struct xrxe_tp *tp, uint32_t rkey, uint32_t pdn)
{
	struct tp_mr *mr = xrxe_tpi_mr_by_key(tp, rkey);

	/* IBA 10.6.5 / 9.4.1.x: the invalidated region must exist, be valid
	 * and belong to the QP's PD; otherwise the request is invalid. */
	if (!mr || !mr->valid || mr->pdn != pdn)
		return -EINVAL;
	/* windows bound to it would keep reaching it (rxe refuses too) */
	if (mr->nmw)
		return -EINVAL;
	mr->valid = false;
	return 0;
}

int xrxe_tp_mr_rereg(struct xrxe_tp *tp, uint32_t lkey, uint32_t flags, uint32_t pdn, void *host,
		     uint64_t iova, uint64_t length, uint32_t access)
{
	struct tp_mr *mr = xrxe_tpi_mr_by_key(tp, lkey);
	int err;

	if (flags & ~(uint32_t)(IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
				IBV_REREG_MR_CHANGE_ACCESS))
		return -EOPNOTSUPP;
	if (!mr)
		return -EINVAL;
	if (mr->nmw)
		return -EBUSY;
	if (!(flags & IBV_REREG_MR_CHANGE_ACCESS))
		access = mr->access;
	err = mr_access_ok(access);
	if (err)
		return err;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		if (!host || !length || iova + length < iova ||
		    (uintptr_t)host + length < (uintptr_t)host)
			return -EINVAL;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		err = xrxe_tpi_pd_get(tp, pdn);
		if (err)
			return err;
		xrxe_tpi_pd_put(tp, mr->pdn);
		mr->pdn = pdn;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->host = host;
		mr->iova = iova;
		mr->length = length;
	}
	mr->access = access;
	mr->valid = true;
	return 0;
}

int xrxe_tpi_sge_walk(struct xrxe_tp *tp, uint32_t pdn, const struct xrxe_sge *sge, uint32_t nsge,
		      uint32_t off, uint32_t len, uint32_t access, xrxe_tpi_piece_fn fn, void *arg)
{
	uint32_t i;

	for (i = 0; i < nsge && len; i++) {
		uint32_t slen = sge[i].length, n;
		struct tp_mr *mr;

		if (off >= slen) {
			off -= slen;
			continue;
		}
		n = slen - off < len ? slen - off : len;
		mr = xrxe_tpi_mr_check(tp, sge[i].lkey, pdn, sge[i].addr + off, n, access);
		if (!mr)
			return -EFAULT;
		if (fn && mr->odp) {
			int err = xrxe_tpi_odp_piece(tp, mr, sge[i].addr + off, n, access, fn, arg);

			if (err)
				return err;
		} else if (fn) {
			fn(arg, xrxe_tpi_mr_host(mr, sge[i].addr + off), n);
		}
		len -= n;
		off = 0;
	}
	return len ? -EMSGSIZE : 0;
}

/* --- address handles ------------------------------------------------------ */

int xrxe_tp_ah_create(struct xrxe_tp *tp, uint32_t pdn, const struct xrxe_av *av,
		      uint32_t *handle)
{
	uint32_t i;
	int err;

	if (!av || (av->ip_version != 4 && av->ip_version != 6))
		return -EINVAL;
	for (i = 1; i < tp->nahs; i++)
		if (!tp->ahs[i].used)
			break;
	if (i >= tp->nahs)
		return -ENOMEM;
	err = xrxe_tpi_pd_get(tp, pdn);
	if (err)
		return err;
	tp->ahs[i].used = true;
	tp->ahs[i].pdn = pdn;
	tp->ahs[i].av = *av;
	tp->stats.ahs++;
	*handle = i;
	return 0;
}

int xrxe_tp_ah_destroy(struct xrxe_tp *tp, uint32_t handle)
{
	if (handle == 0 || handle >= tp->nahs || !tp->ahs[handle].used)
		return -EINVAL;
	xrxe_tpi_pd_put(tp, tp->ahs[handle].pdn);
	tp->ahs[handle].used = false;
	tp->stats.ahs--;
	return 0;
}

const struct tp_ah *xrxe_tpi_ah_get(const struct xrxe_tp *tp, uint32_t handle, uint32_t pdn)
{
	if (handle == 0 || handle >= tp->nahs || !tp->ahs[handle].used ||
	    tp->ahs[handle].pdn != pdn)
		return NULL;
	return &tp->ahs[handle];
}

void xrxe_tpi_piece_from_pkt(void *arg, uint8_t *host, uint32_t n)
{
	struct xrxe_tpi_pkt_src *c = arg;

	xrxe_pkt_copy_payload(c->pkt, c->off, host, n);
	c->off += n;
}

void xrxe_tpi_piece_from_buf(void *arg, uint8_t *host, uint32_t n)
{
	struct xrxe_tpi_buf_src *c = arg;

	memcpy(host, c->src, n);
	c->src += n;
}
