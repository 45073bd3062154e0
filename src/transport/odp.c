// SPDX-License-Identifier: MIT
/*
 * On-demand paging (IBV_ACCESS_ON_DEMAND): regions whose memory is neither
 * pinned nor moved into the process's memfd nor mapped by the daemon. The
 * transport reaches their bytes only through ops->odp_rw (the daemon reads and
 * writes the application's address space: src/daemon/odp.c), at the points
 * where it touches memory: sge_walk's pieces (receive placement, READ
 * response placement, the atomic result), the requester's gather, the
 * responder's WRITE placement, READ source and atomics. A page that is not
 * there (unmapped, no access, the process gone) is -EFAULT, which each caller
 * turns into the error IBA 10.6 gives for an access it cannot make: a local
 * protection error for our own WQE's memory, a remote access error NAK for a
 * remote request (docs/architecture.md "On-demand paging").
 *
 * The core stays sans-I/O: odp_rw is one more callback, and the unit harness
 * backs it with an in-memory address space with holes.
 */
#include <errno.h>
#include <string.h>

#include "transport/tp_internal.h"

int xrxe_tp_mr_reg_odp(struct xrxe_tp *tp, uint32_t pdn, void *mem, uint64_t addr, uint64_t iova,
		       uint64_t length, uint32_t access, uint32_t *lkey, uint32_t *rkey)
{
	if (!tp->cfg.ops->odp_rw || !mem)
		return -EOPNOTSUPP;
	/* the application's range must not wrap either */
	if (addr + length < addr)
		return -EINVAL;
	return xrxe_tpi_mr_reg(tp, pdn, (void *)(uintptr_t)addr, iova, length, access, mem, lkey,
			       rkey);
}

static int odp_rw(struct xrxe_tp *tp, const struct tp_mr *mr, uint64_t va, void *buf, uint32_t n,
		  bool write)
{
	/* the application's address: host holds it for an ODP region */
	uint64_t addr = (uint64_t)(uintptr_t)mr->host + (va - mr->iova);
	int err;

	if (!n)
		return 0;
	err = tp->cfg.ops->odp_rw(tp->cfg.user, mr->odp, addr, buf, n, write);
	if (err) {
		tp->stats.odp_faults++;
		return -EFAULT;
	}
	if (write)
		tp->stats.odp_write_bytes += n;
	else
		tp->stats.odp_read_bytes += n;
	return 0;
}

int xrxe_tpi_odp_piece(struct xrxe_tp *tp, const struct tp_mr *mr, uint64_t va, uint32_t n,
		       uint32_t access, xrxe_tpi_piece_fn fn, void *arg)
{
	bool write = access & IBV_ACCESS_LOCAL_WRITE;

	/* piece by piece through the bounce buffer: the piece writers keep
	 * their own cursor, so smaller pieces give the same bytes */
	while (n) {
		uint32_t k = n < sizeof(tp->odp_buf) ? n : (uint32_t)sizeof(tp->odp_buf);

		if (write) {
			fn(arg, tp->odp_buf, k);
			if (odp_rw(tp, mr, va, tp->odp_buf, k, true))
				return -EFAULT;
		} else {
			if (odp_rw(tp, mr, va, tp->odp_buf, k, false))
				return -EFAULT;
			fn(arg, tp->odp_buf, k);
		}
		va += k;
		n -= k;
	}
	return 0;
}

int xrxe_tpi_gather_stage(struct xrxe_tp *tp, uint32_t pdn, const struct xrxe_sge *sge,
			  uint32_t nsge, uint32_t off, uint32_t len, const uint8_t **staged)
{
	uint32_t i, o = off, left = len, pos = 0;
	bool odp = false;
	int err;

	*staged = NULL;
	err = xrxe_tpi_sge_walk(tp, pdn, sge, nsge, off, len, 0, NULL, NULL);
	if (err)
		return err;
	/* any piece in an ODP region? (the walk above checked every key) */
	for (i = 0; i < nsge && left && !odp; i++) {
		uint32_t slen = sge[i].length, n;
		const struct tp_mr *mr;

		if (o >= slen) {
			o -= slen;
			continue;
		}
		n = slen - o < left ? slen - o : left;
		mr = xrxe_tpi_mr_by_key(tp, sge[i].lkey);
		odp = mr && mr->odp;
		left -= n;
		o = 0;
	}
	if (!odp)
		return 0;
	if (len > sizeof(tp->odp_buf))
		return -EMSGSIZE; /* never: a packet's payload is at most the MTU */
	/* Gather everything now, plain pieces by copy and ODP pieces through
	 * odp_rw, so that a fault is known before the frame is reserved. */
	o = off;
	left = len;
	for (i = 0; i < nsge && left; i++) {
		uint32_t slen = sge[i].length, n;
		const struct tp_mr *mr;
		uint64_t va;

		if (o >= slen) {
			o -= slen;
			continue;
		}
		n = slen - o < left ? slen - o : left;
		va = sge[i].addr + o;
		mr = xrxe_tpi_mr_check(tp, sge[i].lkey, pdn, va, n, 0);
		if (!mr)
			return -EFAULT;
		if (mr->odp) {
			if (odp_rw(tp, mr, va, tp->odp_buf + pos, n, false))
				return -EFAULT;
		} else {
			memcpy(tp->odp_buf + pos, xrxe_tpi_mr_host(mr, va), n);
		}
		pos += n;
		left -= n;
		o = 0;
	}
	*staged = tp->odp_buf;
	return 0;
}

const uint8_t *xrxe_tpi_mr_src(struct xrxe_tp *tp, const struct tp_mr *mr, uint64_t va,
			       uint32_t n)
{
	if (!mr->odp)
		return xrxe_tpi_mr_host(mr, va);
	if (n > sizeof(tp->odp_buf) || odp_rw(tp, mr, va, tp->odp_buf, n, false))
		return NULL;
	return tp->odp_buf;
}

int xrxe_tpi_mr_place_pkt(struct xrxe_tp *tp, const struct tp_mr *mr, uint64_t va,
			  const struct xrxe_pkt *pkt, uint32_t n)
{
	struct xrxe_tpi_pkt_src c = { .pkt = pkt, .off = 0 };

	if (!mr->odp) {
		xrxe_tpi_piece_from_pkt(&c, xrxe_tpi_mr_host(mr, va), n);
		return 0;
	}
	return xrxe_tpi_odp_piece(tp, mr, va, n, IBV_ACCESS_LOCAL_WRITE, xrxe_tpi_piece_from_pkt,
				  &c);
}

/* The daemon runs every QP's responder in one thread, so nothing else of
 * ours touches the word between the read and the write below: atomic with
 * respect to every other RDMA atomic and ATOMIC_WRITE on this device
 * (IBV_ATOMIC_HCA, the device's atomic_cap). The application's own CPU
 * can still write the word in between; docs/architecture.md says so. */
int xrxe_tpi_odp_atomic(struct xrxe_tp *tp, const struct tp_mr *mr, uint64_t va, bool cas,
			bool store, uint64_t comp, uint64_t swap_add, uint64_t *orig)
{
	uint64_t old = 0, val;

	if (store) {
		*orig = 0;
		return odp_rw(tp, mr, va, &swap_add, 8, true);
	}
	if (odp_rw(tp, mr, va, &old, 8, false))
		return -EFAULT;
	if (cas)
		val = old == comp ? swap_add : old;
	else
		val = old + swap_add;
	/* a compare that fails writes nothing (the word stays as it was) */
	if ((!cas || old == comp) && odp_rw(tp, mr, va, &val, 8, true))
		return -EFAULT;
	*orig = old;
	return 0;
}
