/* SPDX-License-Identifier: MIT */
/*
 * Direct data placement (rsocket(7), riomap/riounmap/riowrite): a buffer the
 * application maps with PROT_WRITE gets a slot in the peer's iomap array (its
 * size announced in the connection data); we write the slot's entry (offset,
 * address, R_Key, length) into the peer's memory with an RDMA WRITE WITH
 * IMMEDIATE (RS_OP_IOMAP_SGL, the slot index). The peer's riowrite then
 * RDMA-WRITEs straight into the buffer, without a message of its own.
 *
 * The iomap entries the peer writes into our memory can say anything: they
 * only ever become addresses and keys of the peer's own memory in our RDMA
 * WRITEs (its HCA checks them); their offsets and lengths are read once into
 * locals and range-checked without overflow.
 */
#include <byteswap.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "rdmacm/rsocket_int.h"

static int rs_iomap_free_slot(struct rsocket *rs)
{
	for (uint32_t i = 0; i < rs->remote_iomap.length && i < 0x10000; i++) {
		bool used = false;

		for (struct rs_iomap_mr *m = rs->iomaps; m; m = m->next)
			used |= m->index == (int)i;
		if (!used)
			return (int)i;
	}
	return -1;
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rsocket *rs = rs_lookup(socket);
	struct rs_iomap_mr *m;
	int access = IBV_ACCESS_LOCAL_WRITE, err = 0;

	(void)flags;
	if (!rs)
		return -1;
	if (rs->type != SOCK_STREAM || !buf || !len || (prot & ~(PROT_WRITE | PROT_NONE)))
		return errno = EINVAL, -1;
	m = calloc(1, sizeof(*m));
	if (!m)
		return errno = ENOMEM, -1;
	pthread_mutex_lock(&rs->lock);
	if (!rs->cm_id->pd || !(rs->state & RS_CONNECTED)) {
		err = EINVAL;
		goto out;
	}
	m->index = -1;
	if (prot & PROT_WRITE) {
		m->index = rs_iomap_free_slot(rs);
		if (m->index < 0) {
			err = ENOMEM; /* the peer's iomap (RDMA_IOMAPSIZE) is full */
			goto out;
		}
		access |= IBV_ACCESS_REMOTE_WRITE;
	}
	m->mr = ibv_reg_mr(rs->cm_id->pd, buf, len, access);
	if (!m->mr) {
		err = errno ? errno : ENOMEM;
		goto out;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	m->offset = (uint64_t)offset;
	m->queued = m->index >= 0;
	m->next = rs->iomaps;
	rs->iomaps = m;
	if (m->queued)
		rs->iomap_pending = true;
out:
	pthread_mutex_unlock(&rs->lock);
	if (err) {
		free(m);
		errno = err;
		return -1;
	}
	return offset;
}

int riounmap(int socket, void *buf, size_t len)
{
	struct rsocket *rs = rs_lookup(socket);
	struct rs_iomap_mr **pp, *m = NULL;

	if (!rs)
		return -1;
	pthread_mutex_lock(&rs->lock);
	for (pp = &rs->iomaps; *pp; pp = &(*pp)->next) {
		if ((*pp)->mr->addr == buf && (*pp)->mr->length == len) {
			m = *pp;
			*pp = m->next;
			break;
		}
	}
	pthread_mutex_unlock(&rs->lock);
	if (!m)
		return errno = EINVAL, -1;
	ibv_dereg_mr(m->mr);
	free(m);
	return 0;
}

void rs_free_iomaps(struct rsocket *rs)
{
	while (rs->iomaps) {
		struct rs_iomap_mr *m = rs->iomaps;

		rs->iomaps = m->next;
		ibv_dereg_mr(m->mr);
		free(m);
	}
	rs->iomap_pending = false;
}

/* Write the queued iomap entries to the peer. Lock held. */
int rs_send_iomaps(struct rsocket *rs, int flags)
{
	for (struct rs_iomap_mr *m = rs->iomaps; m; m = m->next) {
		struct rs_iomap iom;
		struct iovec iov = { &iom, sizeof(iom) };
		struct ibv_sge sge[2];
		size_t off = 0;
		int i = 0, nsge, err;
		bool inl = rs->sq_inline >= sizeof(iom);

		if (!m->queued)
			continue;
		if (!rs_can_send(rs)) {
			err = rs_wait(rs, rs_nonblocking(rs, flags), -1, rs_conn_can_send);
			if (err)
				return err;
			if (!(rs->state & RS_WRITABLE))
				return -ECONNRESET;
		}
		iom.offset = m->offset;
		iom.sge.addr = (uintptr_t)m->mr->addr;
		iom.sge.key = m->mr->rkey;
		iom.sge.length = (uint32_t)m->mr->length;
		if (rs->swap_sgl) {
			iom.offset = bswap_64(iom.offset);
			iom.sge.addr = bswap_64(iom.sge.addr);
			iom.sge.key = bswap_32(iom.sge.key);
			iom.sge.length = bswap_32(iom.sge.length);
		}
		rs->sseq_no++;
		rs->sqe_avail--;
		rs->sbuf_bytes_avail -= sizeof(iom);
		if (inl) {
			sge[0] = (struct ibv_sge){ .addr = (uintptr_t)&iom, .length = sizeof(iom) };
			nsge = 1;
		} else {
			nsge = rs_copy_to_sbuf(rs, &iov, &i, &off, sizeof(iom), sge);
		}
		err = rs_post_write(rs, sge, nsge, RS_MSG(RS_OP_IOMAP_SGL, m->index), true, inl,
				    rs->remote_iomap.addr + (uint64_t)m->index * sizeof(iom),
				    rs->remote_iomap.key);
		if (err) {
			rs_set_error(rs, ECONNRESET, "posting an iomap update failed");
			return -ECONNRESET;
		}
		m->queued = false;
	}
	rs->iomap_pending = false;
	return 0;
}

/* The peer's iomap entry holding byte offset, read once (the peer may
 * rewrite it at any time). */
static bool rs_find_iomap(struct rsocket *rs, uint64_t offset, struct rs_iomap *out)
{
	for (uint32_t i = 0; i < rs->target_iomap_size; i++) {
		struct rs_iomap e;

		e.offset = rs->target_iomap[i].offset;
		e.sge.addr = rs->target_iomap[i].sge.addr;
		e.sge.key = rs->target_iomap[i].sge.key;
		e.sge.length = rs->target_iomap[i].sge.length;
		if (offset >= e.offset && offset - e.offset < e.sge.length) {
			*out = e;
			return true;
		}
	}
	return false;
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct rsocket *rs = rs_lookup(socket);
	uint32_t olen = RS_OLAP_START_SIZE;
	size_t left = count;
	int err = 0;

	if (!rs)
		return (size_t)-1;
	if (rs->type != SOCK_STREAM || offset < 0 || (!buf && count))
		return errno = EINVAL, (size_t)-1;
	pthread_mutex_lock(&rs->lock);
	if (!(rs->state & RS_CONNECTED)) {
		err = -ENOTCONN;
		goto out;
	}
	if (rs->iomap_pending) {
		err = rs_send_iomaps(rs, flags);
		if (err)
			goto out;
	}
	while (left) {
		uint64_t off = (uint64_t)offset + (count - left);
		struct rs_iomap iom;
		struct ibv_sge sge[2];
		struct iovec iov = { (uint8_t *)buf + (count - left), left };
		size_t ioff = 0;
		uint32_t xfer;
		int i = 0, nsge;
		bool inl;

		err = rs_wait_send(rs, flags);
		if (err)
			break;
		if (!rs_find_iomap(rs, off, &iom)) {
			err = -EINVAL; /* the peer mapped nothing there */
			break;
		}
		xfer = rs_next_xfer(rs, &olen, left, iom.sge.length - (off - iom.offset));
		inl = xfer <= rs->sq_inline;
		rs->sqe_avail--;
		rs->sbuf_bytes_avail -= xfer;
		if (inl) {
			sge[0] = (struct ibv_sge){ .addr = (uintptr_t)iov.iov_base, .length = xfer };
			nsge = 1;
		} else {
			nsge = rs_copy_to_sbuf(rs, &iov, &i, &ioff, xfer, sge);
		}
		if (rs_post_write(rs, sge, nsge, RS_MSG(RS_OP_WRITE, xfer), false, inl,
				  iom.sge.addr + (off - iom.offset), iom.sge.key)) {
			rs_set_error(rs, ECONNRESET, "posting an RDMA WRITE failed");
			err = -ECONNRESET;
			break;
		}
		left -= xfer;
	}
out:
	pthread_mutex_unlock(&rs->lock);
	if (err && left == count) {
		errno = -err;
		return (size_t)-1;
	}
	return count - left;
}
