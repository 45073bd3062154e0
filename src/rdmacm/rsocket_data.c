/* SPDX-License-Identifier: MIT */
/*
 * The stream rsocket's data path (docs/rsockets.md, "Data transfer"):
 * buffers and QP, the connection data, completions, credits, control
 * messages, waiting, and rsend/rrecv and their variants.
 *
 * Data flows by RDMA WRITE WITH IMMEDIATE into a receive buffer the peer
 * grants us half by half (its target SGL updates); the immediate says how
 * many bytes landed. Every immediate and every grant from the peer is
 * checked against what we granted and what the protocol allows; a peer that
 * breaks the rules gets its connection reset (rs_protocol_error), the
 * caller ECONNRESET — never a read beyond our buffers or a wedged socket.
 */
#include <byteswap.h>
#include <endian.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/uio.h>

#include "rdmacm/rsocket_int.h"

uint64_t rs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

bool rs_nonblocking(struct rsocket *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* Whole pages: the verbs shim moves registered pages onto its memfd, and
 * fork (MADV_DONTFORK) works on pages too. */
static void *rs_page_alloc(size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (page <= 0)
		page = 4096;
	len = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
	if (posix_memalign(&p, (size_t)page, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static uint32_t rs_clamp_qp(uint32_t v, uint32_t max)
{
	if (v > max)
		v = max;
	if (v < RS_QP_MIN_SIZE)
		v = RS_QP_MIN_SIZE;
	return v;
}

static int rs_post_recv(struct rsocket *rs)
{
	/* No SGE: an RDMA WRITE WITH IMMEDIATE only consumes the WQE for its
	 * immediate (IBA 9.4.5); the data went where the RETH said. */
	struct ibv_recv_wr wr = { .wr_id = RS_WR_RECV }, *bad;

	return ibv_post_recv(rs->cm_id->qp, &wr, &bad) ? -EIO : 0;
}

int rs_create_ep(struct rsocket *rs)
{
	struct rdma_cm_id *id = rs->cm_id;
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qa;
	uint32_t max = RS_QP_MAX_SIZE;
	int err;

	if (!id->verbs || !id->pd)
		return -ENODEV;
	if (!ibv_query_device(id->verbs, &da) && da.max_qp_wr > 0 && (uint32_t)da.max_qp_wr < max)
		max = (uint32_t)da.max_qp_wr;
	rs->sq_size = rs_clamp_qp(rs->sq_size, max);
	rs->rq_size = rs_clamp_qp(rs->rq_size, max);

	/* Waits happen in poll() (rs_wait, rpoll) on the channel's fd. */
	err = rs_cq_open(&rs->comp, id->verbs, rs->sq_size + rs->rq_size, rs);
	if (err)
		return err;

	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = rs->comp.cq;
	qa.recv_cq = rs->comp.cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(id, NULL, &qa))
		return -errno;
	rs->sq_inline = qa.cap.max_inline_data;

	rs->rmsg = calloc(rs->rq_size + 1, sizeof(*rs->rmsg));
	rs->sbuf = rs_page_alloc(rs->sbuf_size + RS_QP_CTRL_SIZE * sizeof(struct rs_sge));
	rs->target_len = sizeof(struct rs_sge) * RS_SGL_SIZE +
			 sizeof(struct rs_iomap) * rs->target_iomap_size;
	rs->target_buf = rs_page_alloc(rs->target_len);
	rs->rbuf = rs_page_alloc(rs->rbuf_size);
	if (!rs->rmsg || !rs->sbuf || !rs->target_buf || !rs->rbuf)
		return -ENOMEM;
	rs->smr = ibv_reg_mr(id->pd, rs->sbuf, rs->sbuf_size + RS_QP_CTRL_SIZE * sizeof(struct rs_sge),
			     IBV_ACCESS_LOCAL_WRITE);
	rs->target_mr = ibv_reg_mr(id->pd, rs->target_buf, rs->target_len,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rs->rmr = ibv_reg_mr(id->pd, rs->rbuf, rs->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rs->smr || !rs->target_mr || !rs->rmr)
		return errno ? -errno : -ENOMEM;
	rs->target_sgl = (volatile struct rs_sge *)rs->target_buf;
	rs->target_iomap = rs->target_iomap_size
				   ? (volatile struct rs_iomap *)(rs->target_buf +
								 sizeof(struct rs_sge) * RS_SGL_SIZE)
				   : NULL;

	rs->sbuf_head = 0;
	rs->sbuf_bytes_avail = rs->sbuf_size;
	/* The first half is granted in the connection data, the second later. */
	rs->rbuf_free_offset = rs->rbuf_size >> 1;
	rs->rbuf_bytes_avail = rs->rbuf_size >> 1;
	rs->rbuf_granted = rs->rbuf_size >> 1;
	rs->ctrl_seqno = 0;
	rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
	rs->sqe_avail = rs->sq_size - RS_QP_CTRL_SIZE;
	rs->rseq_comp = (uint16_t)(rs->rq_size >> 1);
	rs->rseq_recv = 0;
	rs->rseq_limit = (uint16_t)rs->rq_size; /* the credits of the connection data */
	for (uint32_t i = 0; i < rs->rq_size; i++) {
		err = rs_post_recv(rs);
		if (err)
			return err;
	}
	return 0;
}

void rs_free_ep(struct rsocket *rs)
{
	rs_free_iomaps(rs);
	if (rs->cm_id && rs->cm_id->qp)
		rdma_destroy_qp(rs->cm_id);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->target_mr)
		ibv_dereg_mr(rs->target_mr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	rs->smr = rs->target_mr = rs->rmr = NULL;
	rs_cq_close(&rs->comp);
	free(rs->sbuf);
	free(rs->target_buf);
	free(rs->rbuf);
	free(rs->rmsg);
	rs->sbuf = rs->target_buf = rs->rbuf = NULL;
	rs->rmsg = NULL;
}

/* --- connection data --------------------------------------------------------- */

static bool rs_host_is_net(void)
{
	return __BYTE_ORDER == __BIG_ENDIAN;
}

void rs_format_conn_data(struct rsocket *rs, struct rs_conn_data *cd)
{
	memset(cd, 0, sizeof(*cd));
	cd->version = RS_PROTO_VERSION;
	cd->flags = RS_CONN_FLAG_IOMAP | (rs_host_is_net() ? RS_CONN_FLAG_NET : 0);
	cd->credits = htobe16((uint16_t)rs->rq_size);
	cd->target_iomap_size = (uint8_t)rs_value_to_scale(rs->target_iomap_size);
	cd->target_sgl.addr = htobe64((uintptr_t)rs->target_sgl);
	cd->target_sgl.length = htobe32(RS_SGL_SIZE);
	cd->target_sgl.key = htobe32(rs->target_mr->rkey);
	cd->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
	cd->data_buf.length = htobe32(rs->rbuf_size >> 1);
	cd->data_buf.key = htobe32(rs->rmr->rkey);
}

int rs_save_conn_data(struct rsocket *rs, const void *data, size_t len)
{
	struct rs_conn_data cd;
	struct rs_sge buf;

	if (!data || len < sizeof(cd)) {
		cm_warn("rsocket: the peer's connection data has %zu bytes, not %zu",
			data ? len : 0, sizeof(cd));
		return -EPROTO;
	}
	memcpy(&cd, data, sizeof(cd));
	if (cd.version != RS_PROTO_VERSION) {
		cm_warn("rsocket: the peer speaks rsocket version %u, not %u", cd.version,
			RS_PROTO_VERSION);
		return -EPROTO;
	}
	rs->remote_sgl.addr = be64toh(cd.target_sgl.addr);
	rs->remote_sgl.length = be32toh(cd.target_sgl.length);
	rs->remote_sgl.key = be32toh(cd.target_sgl.key);
	buf.addr = be64toh(cd.data_buf.addr);
	buf.length = be32toh(cd.data_buf.length);
	buf.key = be32toh(cd.data_buf.key);
	/* A peer that grants no buffer, no credits or an empty SGL array
	 * could never be sent to: refuse it rather than hang a writer. */
	if (!rs->remote_sgl.length || rs->remote_sgl.length > 0xFFFF || !buf.length ||
	    !be16toh(cd.credits)) {
		cm_warn("rsocket: the peer grants %u credits, a %u-byte buffer and %u SGL entries: "
			"nothing could be sent",
			be16toh(cd.credits), buf.length, rs->remote_sgl.length);
		return -EPROTO;
	}
	rs->swap_sgl = !!(cd.flags & RS_CONN_FLAG_NET) != rs_host_is_net();
	if (cd.flags & RS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr = rs->remote_sgl.addr +
					sizeof(struct rs_sge) * rs->remote_sgl.length;
		rs->remote_iomap.length = rs_scale_to_value(cd.target_iomap_size);
		rs->remote_iomap.key = rs->remote_sgl.key;
	} else {
		memset(&rs->remote_iomap, 0, sizeof(rs->remote_iomap));
	}
	/* The peer starts its SGL updates at entry 1: entry 0 is this one. */
	rs->remote_sge = 1 % rs->remote_sgl.length;
	rs->target_sgl[0].addr = buf.addr;
	rs->target_sgl[0].key = buf.key;
	rs->target_sgl[0].length = buf.length;
	rs->target_sge = 0;
	rs->sseq_no = 0;
	rs->sseq_comp = be16toh(cd.credits);
	return 0;
}

/* --- errors -------------------------------------------------------------------- */

void rs_set_error(struct rsocket *rs, int err, const char *why)
{
	if (rs->state & (RS_CONNECTED | RS_OPENING)) {
		if (why)
			cm_warn("rsocket %d: %s: connection reset", rs->index, why);
		rs->err = err;
		rs->reset = true;
		rs->state = RS_ERROR;
		/* Tell the peer (DREQ) and flush our QP. */
		if (rs->cm_id)
			rdma_disconnect(rs->cm_id);
	}
}

static void rs_protocol_error(struct rsocket *rs, const char *fmt, uint32_t a, uint32_t b)
{
	char why[128];

	snprintf(why, sizeof(why), fmt, a, b);
	rs_set_error(rs, ECONNRESET, why);
}

/* --- posting ------------------------------------------------------------------- */

int rs_post_write(struct rsocket *rs, struct ibv_sge *sge, int nsge, uint32_t msg, bool imm,
		  bool inline_data, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = RS_WR_ID(msg);
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.send_flags = inline_data ? IBV_SEND_INLINE : 0;
	if (imm)
		wr.imm_data = htobe32(msg);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(rs->cm_id->qp, &wr, &bad) ? -EIO : 0;
}

bool rs_ctrl_avail(struct rsocket *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

/* A 0-byte WRITE WITH IMMEDIATE names no memory (IBA C9-88): address and
 * R_Key 0. */
int rs_post_ctrl(struct rsocket *rs, enum rs_ctrl ctrl)
{
	rs->ctrl_seqno++;
	return rs_post_write(rs, NULL, 0, RS_MSG(RS_OP_CTRL, ctrl), true, false, 0, 0);
}

/* Keepalive: a 0-byte RDMA WRITE without immediate — the peer's HCA acks
 * it, its application never sees it. */
int rs_post_keepalive(struct rsocket *rs)
{
	rs->ctrl_seqno++;
	return rs_post_write(rs, NULL, 0, RS_MSG(RS_OP_CTRL, RS_CTRL_KEEPALIVE), false, false, 0, 0);
}

/* --- credits --------------------------------------------------------------------- */

static bool rs_give_credits(struct rsocket *rs)
{
	return ((rs->rbuf_bytes_avail >= (rs->rbuf_size >> 1)) ||
		((int16_t)(rs->rseq_no - rs->rseq_comp) >= 0)) &&
	       rs_ctrl_avail(rs) && (rs->state & RS_CONNECTED);
}

/* Grant the next receive-buffer half (an SGL entry written into the peer's
 * target SGL) if one is free, and new message credits either way. */
static void rs_send_credits(struct rsocket *rs)
{
	uint32_t msg = RS_MSG(RS_OP_SGL, (uint32_t)(uint16_t)rs->rseq_no + rs->rq_size);
	uint32_t half = rs->rbuf_size >> 1;
	struct rs_sge sge;
	struct ibv_sge ib;
	int err;

	rs->ctrl_seqno++;
	rs->rseq_comp = (uint16_t)(rs->rseq_no + (rs->rq_size >> 1));
	rs->rseq_limit = (uint16_t)(rs->rseq_no + rs->rq_size);
	if (rs->rbuf_bytes_avail < half) {
		err = rs_post_write(rs, NULL, 0, msg, true, false, 0, 0);
		goto out;
	}
	sge.addr = (uintptr_t)&rs->rbuf[rs->rbuf_free_offset];
	sge.key = rs->rmr->rkey;
	sge.length = half;
	if (rs->swap_sgl) {
		sge.addr = bswap_64(sge.addr);
		sge.key = bswap_32(sge.key);
		sge.length = bswap_32(sge.length);
	}
	ib.length = sizeof(sge);
	if (rs->sq_inline >= sizeof(sge)) {
		ib.addr = (uintptr_t)&sge;
		ib.lkey = 0;
	} else {
		void *slot = rs->sbuf + rs->sbuf_size +
			     sizeof(sge) * (rs->ctrl_seqno & (RS_QP_CTRL_SIZE - 1));

		memcpy(slot, &sge, sizeof(sge));
		ib.addr = (uintptr_t)slot;
		ib.lkey = rs->smr->lkey;
	}
	err = rs_post_write(rs, &ib, 1, msg, true, rs->sq_inline >= sizeof(sge),
			    rs->remote_sgl.addr + rs->remote_sge * sizeof(struct rs_sge),
			    rs->remote_sgl.key);
	rs->rbuf_bytes_avail -= half;
	rs->rbuf_granted += half;
	rs->rbuf_free_offset += half;
	if (rs->rbuf_free_offset >= rs->rbuf_size)
		rs->rbuf_free_offset = 0;
	if (++rs->remote_sge >= rs->remote_sgl.length)
		rs->remote_sge = 0;
out:
	if (err)
		rs_set_error(rs, ECONNRESET, "posting a credit update failed");
}

static void rs_update_credits(struct rsocket *rs)
{
	if (rs_give_credits(rs))
		rs_send_credits(rs);
}

/* --- completions ---------------------------------------------------------------- */

/* One message from the peer (the immediate of a WRITE WITH IMMEDIATE). */
static void rs_handle_msg(struct rsocket *rs, uint32_t imm)
{
	uint32_t op = RS_MSG_OP(imm), arg = RS_MSG_ARG(imm), next;

	/* Data and iomap updates each take one of the credits we granted. */
	if (op == RS_OP_DATA || op == RS_OP_IOMAP_SGL) {
		if (rs->rseq_recv == rs->rseq_limit) {
			rs_protocol_error(rs, "peer sent beyond its credits (limit %u)%.0u",
					  rs->rseq_limit, 0);
			return;
		}
		rs->rseq_recv++;
	}
	switch (op) {
	case RS_OP_DATA:
		/* It must carry data (rrecv would take an empty one for the
		 * end of the stream), fit what we granted and have a credit. */
		if (!arg) {
			rs_protocol_error(rs, "peer sent an empty data message%.0u%.0u", 0, 0);
			return;
		}
		if (arg > rs->rbuf_granted) {
			rs_protocol_error(rs, "peer wrote %u bytes with %u granted", arg,
					  rs->rbuf_granted);
			return;
		}
		next = rs->rmsg_tail + 1 == rs->rq_size + 1 ? 0 : rs->rmsg_tail + 1;
		if (next == rs->rmsg_head) {
			rs_protocol_error(rs, "peer sent more than its %u message credits%.0u",
					  rs->rq_size, 0);
			return;
		}
		rs->rbuf_granted -= arg;
		rs->rmsg[rs->rmsg_tail] = arg;
		rs->rmsg_tail = next;
		break;
	case RS_OP_SGL:
		rs->sseq_comp = (uint16_t)arg;
		break;
	case RS_OP_IOMAP_SGL:
		/* The peer wrote iomap entry arg: only its range needs checking
		 * (the entry is read, and range-checked, by riowrite). */
		if (arg >= rs->target_iomap_size)
			rs_protocol_error(rs, "peer updated iomap entry %u of %u", arg,
					  rs->target_iomap_size);
		break;
	case RS_OP_CTRL:
		switch (arg) {
		case RS_CTRL_DISCONNECT:
			rs->state = RS_DISCONNECTED;
			break;
		case RS_CTRL_KEEPALIVE:
			break;
		case RS_CTRL_SHUTDOWN:
			if (rs->state & RS_WRITABLE)
				rs->state &= ~RS_READABLE;
			else
				rs->state = RS_DISCONNECTED;
			break;
		default:
			rs_protocol_error(rs, "unknown control message %u%.0u", arg, 0);
		}
		break;
	default:
		rs_protocol_error(rs, "reserved message op %u (immediate 0x%08x)", op, imm);
	}
}

static void rs_send_done(struct rsocket *rs, struct ibv_wc *wc)
{
	uint32_t msg = (uint32_t)wc->wr_id;

	switch (RS_MSG_OP(msg)) {
	case RS_OP_SGL:
	case RS_OP_CTRL:
		rs->ctrl_max_seqno++;
		break;
	case RS_OP_IOMAP_SGL:
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += sizeof(struct rs_iomap);
		break;
	default: /* RS_OP_DATA, RS_OP_WRITE */
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += RS_MSG_ARG(msg);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && (rs->state & RS_CONNECTED)) {
		char why[96];

		snprintf(why, sizeof(why), "send failed (%s)", ibv_wc_status_str(wc->status));
		rs_set_error(rs, ECONNRESET, why);
	}
}

/* Poll the CQ dry: true if there was anything. */
static bool rs_poll_cq(struct rsocket *rs)
{
	struct ibv_wc wc[16];
	uint32_t reposts = 0;
	bool any = false;
	int n;

	if (!rs->comp.cq)
		return false;
	while ((n = ibv_poll_cq(rs->comp.cq, 16, wc)) > 0) {
		any = true;
		for (int i = 0; i < n; i++) {
			if (!(wc[i].wr_id & RS_WR_RECV)) {
				rs_send_done(rs, &wc[i]);
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				/* The QP went to Error: the connection is gone. */
				if (rs->state & RS_CONNECTED)
					rs_set_error(rs, ECONNRESET, "receive failed");
				continue;
			}
			reposts++;
			if (!(wc[i].wc_flags & IBV_WC_WITH_IMM) ||
			    wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
				rs_protocol_error(rs, "peer sent opcode %u (flags 0x%x), not a WRITE "
						      "WITH IMMEDIATE",
						  wc[i].opcode, wc[i].wc_flags);
				continue;
			}
			if (rs->state & RS_CONNECTED)
				rs_handle_msg(rs, be32toh(wc[i].imm_data));
		}
	}
	if (rs->state & RS_CONNECTED) {
		while (reposts--) {
			if (rs_post_recv(rs)) {
				rs_set_error(rs, ECONNRESET, "reposting a receive failed");
				break;
			}
		}
	}
	return any;
}

void rs_progress(struct rsocket *rs)
{
	bool event;

	if (!rs->comp.cq)
		return;
	event = rs_cq_take_event(&rs->comp);
	/* The event we took may have been another sleeper's. */
	if (rs_poll_cq(rs) || event)
		rs_wake_others(rs);
	rs_update_credits(rs);
}

/* --- sleeping threads ---------------------------------------------------------- */

/* Initial-exec TLS: no __tls_get_addr, so the library needs nothing beyond
 * libibverbs and libc (tests/net/rdmacm_abi.sh); one int fits the static TLS
 * that glibc keeps for libraries loaded later with dlopen. */
static __thread int rs_wake_fd __attribute__((tls_model("initial-exec"))) = -1;

int rs_thread_wake_fd(void)
{
	if (rs_wake_fd < 0)
		rs_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return rs_wake_fd;
}

void rs_thread_wake_drain(int fd)
{
	uint64_t v;

	if (fd >= 0 && read(fd, &v, sizeof(v)) < 0)
		(void)0; /* nothing pending */
}

bool rs_sleeper_add(struct rsocket *rs, int fd)
{
	if (fd < 0 || rs->nsleepers >= RS_MAX_SLEEPERS)
		return false;
	rs->sleeper_fd[rs->nsleepers++] = fd;
	return true;
}

void rs_sleeper_del(struct rsocket *rs, int fd)
{
	for (int i = 0; i < rs->nsleepers; i++) {
		if (rs->sleeper_fd[i] == fd) {
			rs->sleeper_fd[i] = rs->sleeper_fd[--rs->nsleepers];
			return;
		}
	}
}

void rs_wake_others(struct rsocket *rs)
{
	uint64_t one = 1;

	for (int i = 0; i < rs->nsleepers; i++)
		if (write(rs->sleeper_fd[i], &one, sizeof(one)) < 0)
			(void)0; /* the counter is full: it is awake anyway */
}

/* --- conditions --------------------------------------------------------------- */

bool rs_can_send(struct rsocket *rs)
{
	return rs->sqe_avail && rs->sbuf_bytes_avail >= RS_SNDLOWAT &&
	       rs->sseq_no != rs->sseq_comp && rs->target_sgl &&
	       rs->target_sgl[rs->target_sge].length != 0;
}

bool rs_conn_can_send(struct rsocket *rs)
{
	return !(rs->state & RS_WRITABLE) || rs_can_send(rs);
}

int rs_wait_send(struct rsocket *rs, int flags)
{
	int err;

	if (!(rs->state & RS_WRITABLE))
		return rs->reset ? -ECONNRESET : -EPIPE;
	if (rs_can_send(rs))
		return 0;
	err = rs_wait(rs, rs_nonblocking(rs, flags), -1, rs_conn_can_send);
	if (err)
		return err;
	if (!(rs->state & RS_WRITABLE))
		return rs->reset ? -ECONNRESET : -EPIPE;
	return 0;
}

uint32_t rs_next_xfer(struct rsocket *rs, uint32_t *olen, size_t left, uint64_t room)
{
	uint32_t xfer;

	if (*olen < left) {
		xfer = *olen;
		if (*olen < RS_MAX_TRANSFER)
			*olen <<= 1;
	} else {
		xfer = (uint32_t)left;
	}
	if (xfer > rs->sbuf_bytes_avail)
		xfer = rs->sbuf_bytes_avail;
	if (xfer > room)
		xfer = (uint32_t)room;
	return xfer;
}

bool rs_have_rdata(struct rsocket *rs)
{
	return rs->rmsg && rs->rmsg_head != rs->rmsg_tail;
}

bool rs_conn_have_rdata(struct rsocket *rs)
{
	return rs_have_rdata(rs) || !(rs->state & RS_READABLE);
}

bool rs_all_sends_done(struct rsocket *rs)
{
	return !(rs->state & RS_CONNECTED) ||
	       (rs->ctrl_max_seqno - rs->ctrl_seqno) + rs->sqe_avail == rs->sq_size;
}

/* --- waiting --------------------------------------------------------------------- */

int rs_wait(struct rsocket *rs, bool nonblock, int timeout_ms, bool (*test)(struct rsocket *))
{
	uint64_t start = rs_now_us();

	for (;;) {
		struct pollfd fds[3];
		int nfds = 0, t = -1, wfd;
		bool registered;

		rs_cm_progress(rs);
		rs_progress(rs);
		if (test(rs))
			return 0;
		if (nonblock)
			return -EAGAIN;
		/* Spin first, the CQ unarmed (an armed one costs a read() per
		 * look for its event), then arm and look once more. */
		if (rs_now_us() - start < rs_conf.polling_time_us) {
			pthread_mutex_unlock(&rs->lock);
			pthread_mutex_lock(&rs->lock);
			continue;
		}
		if (rs_cq_arm(&rs->comp))
			continue; /* completions that came before the arm */
		if (timeout_ms >= 0) {
			uint64_t spent = (rs_now_us() - start) / 1000;

			if (spent >= (uint64_t)timeout_ms)
				return -ETIMEDOUT;
			t = timeout_ms - (int)spent;
		}
		fds[nfds++] = (struct pollfd){ .fd = rs->ch->fd, .events = POLLIN };
		if (rs->comp.cc)
			fds[nfds++] = (struct pollfd){ .fd = rs->comp.cc->fd, .events = POLLIN };
		/* Another thread asleep on the same descriptors may take the
		 * event that was for us: it wakes us through our eventfd
		 * (rs_wake_others); without one, short naps. */
		wfd = rs_thread_wake_fd();
		registered = rs_sleeper_add(rs, wfd);
		if (registered)
			fds[nfds++] = (struct pollfd){ .fd = wfd, .events = POLLIN };
		else if (t < 0 || t > 10)
			t = 10;
		pthread_mutex_unlock(&rs->lock);
		poll(fds, (nfds_t)nfds, t);
		pthread_mutex_lock(&rs->lock);
		if (registered) {
			rs_sleeper_del(rs, wfd);
			if (fds[nfds - 1].revents)
				rs_thread_wake_drain(wfd);
		}
		if (fds[0].revents)
			rs->cm_pending = true;
	}
}

/* --- send ---------------------------------------------------------------------- */

int rs_copy_to_sbuf(struct rsocket *rs, const struct iovec *iov, int *iov_i, size_t *iov_off,
		    uint32_t len, struct ibv_sge sge[2])
{
	uint32_t first = rs->sbuf_size - rs->sbuf_head, left = len, pos = rs->sbuf_head;
	int nsge = 1;

	sge[0].addr = (uintptr_t)&rs->sbuf[pos];
	sge[0].lkey = rs->smr->lkey;
	sge[0].length = len < first ? len : first;
	if (len > first) {
		sge[1].addr = (uintptr_t)rs->sbuf;
		sge[1].lkey = rs->smr->lkey;
		sge[1].length = len - first;
		nsge = 2;
	}
	while (left) {
		size_t n = iov[*iov_i].iov_len - *iov_off;

		if (n > left)
			n = left;
		if (n > rs->sbuf_size - pos)
			n = rs->sbuf_size - pos;
		memcpy(&rs->sbuf[pos], (const uint8_t *)iov[*iov_i].iov_base + *iov_off, n);
		*iov_off += n;
		if (*iov_off == iov[*iov_i].iov_len) {
			(*iov_i)++;
			*iov_off = 0;
		}
		pos += (uint32_t)n;
		if (pos == rs->sbuf_size)
			pos = 0;
		left -= (uint32_t)n;
	}
	rs->sbuf_head = pos;
	return nsge;
}

/* One data message of len bytes (≤ the current target entry) from iov. */
static int rs_write_data(struct rsocket *rs, const struct iovec *iov, int *iov_i,
			 size_t *iov_off, uint32_t len)
{
	volatile struct rs_sge *t = &rs->target_sgl[rs->target_sge];
	uint64_t addr = t->addr;
	uint32_t rkey = t->key;
	struct ibv_sge sge[2];
	int nsge;
	bool inl = len <= rs->sq_inline && iov[*iov_i].iov_len - *iov_off >= len;

	/* Update the target entry before posting: the peer may write the
	 * next grant into it once this one is used up. */
	t->addr = addr + len;
	t->length = t->length - len;
	if (!t->length && ++rs->target_sge == RS_SGL_SIZE)
		rs->target_sge = 0;
	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= len;
	if (inl) {
		/* Small and contiguous: inline from the caller's buffer. */
		sge[0].addr = (uintptr_t)iov[*iov_i].iov_base + *iov_off;
		sge[0].length = len;
		sge[0].lkey = 0;
		nsge = 1;
		*iov_off += len;
		if (*iov_off == iov[*iov_i].iov_len) {
			(*iov_i)++;
			*iov_off = 0;
		}
	} else {
		nsge = rs_copy_to_sbuf(rs, iov, iov_i, iov_off, len, sge);
	}
	return rs_post_write(rs, sge, nsge, RS_MSG(RS_OP_DATA, len), true, inl, addr, rkey);
}

static ssize_t rs_sendv_locked(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags)
{
	uint32_t olen = RS_OLAP_START_SIZE;
	size_t len = 0, left, off = 0;
	int i = 0, err = 0;

	for (int k = 0; k < iovcnt; k++) {
		if (iov[k].iov_len > SSIZE_MAX - len)
			return -EINVAL;
		len += iov[k].iov_len;
	}
	while (i < iovcnt && !iov[i].iov_len)
		i++;
	if (rs->iomap_pending) {
		err = rs_send_iomaps(rs, flags);
		if (err)
			return err;
	}
	for (left = len; left;) {
		uint32_t xfer;

		err = rs_wait_send(rs, flags);
		if (err)
			break;
		xfer = rs_next_xfer(rs, &olen, left, rs->target_sgl[rs->target_sge].length);
		err = rs_write_data(rs, iov, &i, &off, xfer);
		if (err) {
			rs_set_error(rs, ECONNRESET, "posting a data message failed");
			err = -ECONNRESET;
			break;
		}
		while (i < iovcnt && !iov[i].iov_len)
			i++;
		left -= xfer;
	}
	if (err && left == len)
		return err;
	return (ssize_t)(len - left);
}

static ssize_t rs_finish(ssize_t r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* Connection set-up still under way (a non-blocking rconnect): move it on. */
static int rs_check_open(struct rsocket *rs)
{
	if (rs->state & RS_OPENING) {
		rs_cm_progress(rs);
		if (rs->state & RS_OPENING)
			return -EAGAIN;
	}
	if (rs->state == RS_CONNECT_ERROR)
		return -(rs->err ? rs->err : ECONNREFUSED);
	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return -ENOTCONN;
	return 0;
}

ssize_t rs_stream_sendv(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags);
ssize_t rs_stream_sendv(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags)
{
	ssize_t r;

	pthread_mutex_lock(&rs->lock);
	r = rs_check_open(rs);
	if (!r)
		r = rs_sendv_locked(rs, iov, iovcnt, flags);
	pthread_mutex_unlock(&rs->lock);
	return rs_finish(r);
}

/* --- receive --------------------------------------------------------------------- */

/* Copy up to len queued bytes out (peek: leave them queued). */
static size_t rs_copy_out(struct rsocket *rs, const struct iovec *iov, int iovcnt, size_t len,
			  bool peek)
{
	uint32_t head = rs->rmsg_head, off = rs->rbuf_offset, partial = 0;
	size_t done = 0, ioff = 0;
	int i = 0;

	while (done < len && head != rs->rmsg_tail && i < iovcnt) {
		uint32_t avail = rs->rmsg[head] - partial, n = avail;
		size_t room = iov[i].iov_len - ioff;

		if (n > len - done)
			n = (uint32_t)(len - done);
		if (n > room)
			n = (uint32_t)room;
		if (n > rs->rbuf_size - off)
			n = rs->rbuf_size - off;
		memcpy((uint8_t *)iov[i].iov_base + ioff, &rs->rbuf[off], n);
		done += n;
		ioff += n;
		off += n;
		if (off == rs->rbuf_size)
			off = 0;
		if (ioff == iov[i].iov_len) {
			i++;
			ioff = 0;
		}
		if (n == avail) {
			partial = 0;
			if (!peek)
				rs->rseq_no++;
			head = head + 1 == rs->rq_size + 1 ? 0 : head + 1;
		} else {
			partial += n;
		}
		if (!peek)
			rs->rbuf_bytes_avail += n;
	}
	if (!peek) {
		if (partial)
			rs->rmsg[head] -= partial;
		rs->rmsg_head = head;
		rs->rbuf_offset = off;
	}
	return done;
}

ssize_t rs_stream_recvv(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags);
ssize_t rs_stream_recvv(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags)
{
	size_t len = 0, done = 0;
	ssize_t r = 0;

	for (int k = 0; k < iovcnt; k++) {
		if (iov[k].iov_len > SSIZE_MAX - len)
			return rs_finish(-EINVAL);
		len += iov[k].iov_len;
	}
	pthread_mutex_lock(&rs->lock);
	r = rs_check_open(rs);
	if (r)
		goto out;
	do {
		struct iovec sub[64];
		int n = 0;
		size_t skip = done;

		if (!rs_have_rdata(rs)) {
			r = rs_wait(rs, rs_nonblocking(rs, flags), -1, rs_conn_have_rdata);
			if (r)
				break;
			if (!rs_have_rdata(rs)) {
				/* Not readable any more: end of stream, or a reset. */
				if (rs->reset && !done)
					r = -ECONNRESET;
				break;
			}
		}
		/* The part of iov not yet filled. */
		for (int k = 0; k < iovcnt && n < 64; k++) {
			if (skip >= iov[k].iov_len) {
				skip -= iov[k].iov_len;
				continue;
			}
			sub[n].iov_base = (uint8_t *)iov[k].iov_base + skip;
			sub[n].iov_len = iov[k].iov_len - skip;
			skip = 0;
			n++;
		}
		done += rs_copy_out(rs, sub, n, len - done, flags & MSG_PEEK);
		if (flags & MSG_PEEK)
			break;
		rs_progress(rs); /* credits for the space just freed */
	} while (done < len && (flags & MSG_WAITALL) && (rs->state & RS_READABLE));
out:
	pthread_mutex_unlock(&rs->lock);
	if (r && !done)
		return rs_finish(r);
	return (ssize_t)done;
}
