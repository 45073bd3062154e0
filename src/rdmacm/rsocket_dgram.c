/* SPDX-License-Identifier: MIT */
/*
 * Datagram rsockets (SOCK_DGRAM over UD QPs; docs/rsockets.md, "Datagrams").
 *
 * A datagram rsocket is an ordinary UDP socket (its descriptor is the
 * rsocket's number, its port the rsocket's port) plus one UD QP per local
 * source address it sends from. A peer is reached over UD once we know its
 * QP number; until then a datagram goes over the UDP socket with a header
 * naming our QP (struct rs_udp_hdr): the receiver takes the data, learns our
 * QP, and answers with a header-only control datagram that teaches us its
 * own. Over UD every datagram starts with struct rs_ds_hdr, the sender's IP
 * address and port, which the receiver reports as the source.
 *
 * rdma-core runs the UDP side on a thread of its own and passes the data of
 * a UDP datagram through its own QP; here the UDP socket is read by whichever
 * call comes next (every rsend/rrecv variant, rpoll) and its data is queued
 * directly. Everything from the network is checked: header tags, versions and
 * lengths against the datagram's size and the sender's family; a bad
 * datagram is dropped and counted, never trusted.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "rdmacm/rsocket_int.h"

#define RS_DS_MSG 2048          /* a datagram slot: header + payload (RS_SNDLOWAT) */
#define RS_DS_GRH 40            /* the GRH area in front of each UD receive */
#define RS_DS_MAX_QPS 8         /* source addresses per rsocket */
#define RS_DS_MAX_UDP_QUEUED 256 /* datagrams that came over UDP, not yet read */
#define RS_DS_MAX_DESTS 1024    /* peers remembered per rsocket */
#define RS_UDP_TAG 0x55555555u

/* In front of each UD datagram: who sent it (8 bytes for IPv4, 24 for IPv6). */
struct rs_ds_hdr {
	uint8_t version; /* 4 or 6 */
	uint8_t length;  /* 8 or 24 */
	uint16_t port;   /* network order */
	union {
		uint32_t ipv4;
		struct {
			uint32_t flowinfo;
			uint8_t addr[16];
		} ipv6;
	} addr;
};
#define RS_DS_HDR4 8
#define RS_DS_HDR6 24

/* In front of each datagram over the UDP socket (16 or 28 bytes). */
struct rs_udp_hdr {
	uint32_t tag; /* be: RS_UDP_TAG */
	uint8_t version;
	uint8_t op;     /* RS_OP_DATA: data follows; RS_OP_CTRL: "here is my QP" */
	uint8_t length; /* 16 or 28 */
	uint8_t reserved;
	uint32_t qpn; /* be, low 24 bits */
	union {
		uint32_t ipv4;
		uint8_t ipv6[16];
	} addr;
};
#define RS_UDP_HDR4 16
#define RS_UDP_HDR6 28

struct rs_ds_qp {
	struct rs_ds_qp *next;
	struct cm_dev *dev;
	struct sockaddr_storage src; /* our address (and UDP port) on it */
	struct rs_ds_hdr hdr;        /* what we put in front of our datagrams */
	uint8_t sgid_index;
	uint32_t max_msg; /* header + payload a UD message may carry: min(slot, path MTU) */
	struct rs_cq comp; /* the QP's CQ and completion channel */
	struct ibv_qp *qp;
	uint8_t *rbuf; /* rq_size slots of RS_DS_GRH + RS_DS_MSG */
	struct ibv_mr *rmr, *smr;
};

struct rs_ds_dest {
	struct rs_ds_dest *next;
	struct sockaddr_storage addr;
	struct rs_ds_qp *qp; /* the QP of our source address towards it */
	struct ibv_ah *ah;   /* NULL until we know its QP */
	uint32_t qpn;
};

struct rs_ds_msg {
	struct rs_ds_msg *next;
	struct sockaddr_storage from;
	struct rs_ds_qp *qp; /* UD: the slot to repost once read; NULL: data[] */
	uint32_t slot;
	uint32_t len;
	const uint8_t *data;
	uint8_t copy[]; /* a datagram that came over UDP */
};

struct rs_dgram {
	int udp; /* = rs->index */
	int domain;
	struct rs_ds_qp *qps;
	unsigned int nqps;
	struct rs_ds_dest *dests, *conn_dest;
	unsigned int ndests;
	struct rs_ds_msg *head, *tail;
	unsigned int udp_queued;
	uint8_t *sbuf; /* sq_size send slots */
	uint32_t *free_slots, nfree;
	uint32_t sq_size, rq_size;
	uint64_t dropped; /* malformed or unqueueable datagrams */
	bool waiting;     /* CQs armed for a sleep (rs_ds_wait_fds); cleared by the next call */
};

/* --- helpers ------------------------------------------------------------------ */

static int rs_sa_cmp(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	socklen_t la = cm_sa_len((const struct sockaddr *)a), lb = cm_sa_len(b);

	if (la != lb || !la)
		return 1;
	if (b->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port != y->sin_port || x->sin_addr.s_addr != y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

	return x->sin6_port != y->sin6_port || memcmp(&x->sin6_addr, &y->sin6_addr, 16);
}

static void rs_ds_format_hdr(struct rs_ds_hdr *h, const struct sockaddr *sa)
{
	memset(h, 0, sizeof(*h));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		h->version = 4;
		h->length = RS_DS_HDR4;
		h->port = in->sin_port;
		h->addr.ipv4 = in->sin_addr.s_addr;
	} else {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		h->version = 6;
		h->length = RS_DS_HDR6;
		h->port = in6->sin6_port;
		h->addr.ipv6.flowinfo = in6->sin6_flowinfo;
		memcpy(h->addr.ipv6.addr, &in6->sin6_addr, 16);
	}
}

/* The sender's address from a UD datagram's header (checked by the caller). */
static void rs_ds_hdr_to_sa(const struct rs_ds_hdr *h, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (h->version == 4) {
		struct sockaddr_in *in = (void *)ss;

		in->sin_family = AF_INET;
		in->sin_port = h->port;
		in->sin_addr.s_addr = h->addr.ipv4;
	} else {
		struct sockaddr_in6 *in6 = (void *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = h->port;
		in6->sin6_flowinfo = h->addr.ipv6.flowinfo;
		memcpy(&in6->sin6_addr, h->addr.ipv6.addr, 16);
	}
}

/* --- socket ------------------------------------------------------------------- */

int rs_dgram_socket(int domain)
{
	struct rsocket *rs = calloc(1, sizeof(*rs));
	struct rs_dgram *ds = calloc(1, sizeof(*ds));
	int err;

	if (!rs || !ds) {
		free(rs);
		free(ds);
		errno = ENOMEM;
		return -1;
	}
	pthread_mutex_init(&rs->lock, NULL);
	rs->type = SOCK_DGRAM;
	rs->ds = ds;
	rs_default_sizes(rs);
	ds->domain = domain;
	/* The UDP socket: the rsocket's number, its port, the first contact. */
	ds->udp = socket(domain, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	rs->index = ds->udp;
	err = ds->udp < 0 ? -errno : cm_init();
	if (!err)
		err = rs_table_insert(rs);
	if (err) {
		if (ds->udp >= 0)
			close(ds->udp);
		free(ds);
		pthread_mutex_destroy(&rs->lock);
		free(rs);
		errno = -err;
		return -1;
	}
	return rs->index;
}

/* Send and receive slots, sized once (on first use) from the options. */
static int rs_ds_init_bufs(struct rsocket *rs)
{
	struct rs_dgram *ds = rs->ds;

	if (ds->sbuf)
		return 0;
	ds->rq_size = rs->rq_size;
	if (ds->rq_size > rs->rbuf_size / RS_DS_MSG)
		ds->rq_size = rs->rbuf_size / RS_DS_MSG;
	ds->sq_size = rs->sq_size;
	if (ds->sq_size > rs->sbuf_size / RS_DS_MSG)
		ds->sq_size = rs->sbuf_size / RS_DS_MSG;
	if (ds->rq_size < 2)
		ds->rq_size = 2;
	if (ds->sq_size < 2)
		ds->sq_size = 2;
	if (posix_memalign((void **)&ds->sbuf, 4096, (size_t)ds->sq_size * RS_DS_MSG))
		return -ENOMEM;
	ds->free_slots = calloc(ds->sq_size, sizeof(*ds->free_slots));
	if (!ds->free_slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < ds->sq_size; i++)
		ds->free_slots[ds->nfree++] = ds->sq_size - 1 - i;
	return 0;
}

/* Our UDP port: bind to an ephemeral one if the application has not. */
static int rs_ds_local(struct rsocket *rs, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	if (getsockname(rs->ds->udp, (struct sockaddr *)ss, &len))
		return -errno;
	if (!cm_sa_port((struct sockaddr *)ss)) {
		struct sockaddr_storage any;

		memset(&any, 0, sizeof(any));
		any.ss_family = (sa_family_t)rs->ds->domain;
		if (bind(rs->ds->udp, (struct sockaddr *)&any, cm_sa_len((struct sockaddr *)&any)))
			return -errno;
		len = sizeof(*ss);
		if (getsockname(rs->ds->udp, (struct sockaddr *)ss, &len))
			return -errno;
	}
	return 0;
}

static int rs_ds_post_recv(struct rs_dgram *ds, struct rs_ds_qp *q, uint32_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)q->rbuf + (uint64_t)slot * (RS_DS_GRH + RS_DS_MSG),
			       .length = RS_DS_GRH + RS_DS_MSG,
			       .lkey = q->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = RS_WR_RECV | slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	(void)ds;
	return ibv_post_recv(q->qp, &wr, &bad) ? -EIO : 0;
}

static void rs_ds_free_qp(struct rs_ds_qp *q)
{
	if (q->qp)
		ibv_destroy_qp(q->qp);
	if (q->rmr)
		ibv_dereg_mr(q->rmr);
	if (q->smr)
		ibv_dereg_mr(q->smr);
	rs_cq_close(&q->comp);
	free(q->rbuf);
	free(q);
}

/* The UD QP of source address src (its port: our UDP port), made on first use. */
static int rs_ds_get_qp(struct rsocket *rs, const struct sockaddr_storage *src, struct rs_ds_qp **out)
{
	struct rs_dgram *ds = rs->ds;
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr a;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct rs_ds_qp *q;
	int err;

	for (q = ds->qps; q; q = q->next) {
		if (!rs_sa_cmp(&q->src, (const struct sockaddr *)src)) {
			*out = q;
			return 0;
		}
	}
	if (ds->nqps >= RS_DS_MAX_QPS)
		return -EADDRNOTAVAIL;
	err = rs_ds_init_bufs(rs);
	if (err)
		return err;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->src = *src;
	rs_ds_format_hdr(&q->hdr, (const struct sockaddr *)src);
	err = cm_dev_for_addr((const struct sockaddr *)src, &q->dev);
	if (err)
		goto fail;
	/* Our GID's index: the source of every AH from this QP. */
	cm_sa_gid((const struct sockaddr *)src, &gid);
	err = -EADDRNOTAVAIL;
	if (!ibv_query_port(q->dev->verbs, 1, &pa)) {
		for (int i = 0; i < pa.gid_tbl_len && i < 256; i++) {
			union ibv_gid g;

			if (!ibv_query_gid(q->dev->verbs, 1, i, &g) && !memcmp(&g, &gid, sizeof(g))) {
				q->sgid_index = (uint8_t)i;
				err = 0;
				break;
			}
		}
	}
	if (err)
		goto fail;
	/* A UD message is one packet: no larger than the port's active MTU. */
	q->max_msg = RS_DS_MSG;
	if (128u << pa.active_mtu < q->max_msg)
		q->max_msg = 128u << pa.active_mtu;
	err = rs_cq_open(&q->comp, q->dev->verbs, ds->sq_size + ds->rq_size, q);
	if (err)
		goto fail;
	err = -ENOMEM;
	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = q->comp.cq;
	qa.recv_cq = q->comp.cq;
	qa.qp_type = IBV_QPT_UD;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = ds->sq_size;
	qa.cap.max_recv_wr = ds->rq_size;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	q->qp = ibv_create_qp(q->dev->pd, &qa);
	if (!q->qp)
		goto fail_errno;
	/* INIT -> RTR -> RTS with rdma_cm's UDP Q_Key, as rdma_create_qp does
	 * for a UD ID. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = RDMA_UDP_QKEY;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		goto fail_errno;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE))
		goto fail_errno;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto fail_errno;
	if (posix_memalign((void **)&q->rbuf, 4096, (size_t)ds->rq_size * (RS_DS_GRH + RS_DS_MSG)))
		goto fail;
	q->rmr = ibv_reg_mr(q->dev->pd, q->rbuf, (size_t)ds->rq_size * (RS_DS_GRH + RS_DS_MSG),
			    IBV_ACCESS_LOCAL_WRITE);
	q->smr = ibv_reg_mr(q->dev->pd, ds->sbuf, (size_t)ds->sq_size * RS_DS_MSG,
			    IBV_ACCESS_LOCAL_WRITE);
	if (!q->rmr || !q->smr)
		goto fail_errno;
	for (uint32_t i = 0; i < ds->rq_size; i++) {
		err = rs_ds_post_recv(ds, q, i);
		if (err)
			goto fail;
	}
	q->next = ds->qps;
	ds->qps = q;
	ds->nqps++;
	*out = q;
	return 0;
fail_errno:
	err = errno ? -errno : -ENOMEM;
fail:
	rs_ds_free_qp(q);
	return err;
}

/* The destination record of addr (made on first use, with the QP of the
 * source address the routing table picks towards it). */
static int rs_ds_get_dest(struct rsocket *rs, const struct sockaddr *addr, struct rs_ds_dest **out)
{
	struct rs_dgram *ds = rs->ds;
	struct sockaddr_storage local, src;
	struct rs_ds_dest *d;
	int err;

	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) ||
	    addr->sa_family != ds->domain)
		return -EAFNOSUPPORT;
	for (d = ds->dests; d; d = d->next) {
		if (!rs_sa_cmp(&d->addr, addr)) {
			*out = d;
			return 0;
		}
	}
	/* Datagrams from the network make these: a bounded number. */
	if (ds->ndests >= RS_DS_MAX_DESTS)
		return -ENOBUFS;
	err = rs_ds_local(rs, &local);
	if (err)
		return err;
	src = local;
	if (cm_sa_is_any((struct sockaddr *)&local)) {
		err = cm_route_src(addr, &src);
		if (err)
			return err;
		cm_sa_set_port((struct sockaddr *)&src, cm_sa_port((struct sockaddr *)&local));
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = rs_ds_get_qp(rs, &src, &d->qp);
	if (err) {
		free(d);
		return err;
	}
	memcpy(&d->addr, addr, cm_sa_len(addr));
	d->next = ds->dests;
	ds->dests = d;
	ds->ndests++;
	*out = d;
	return 0;
}

/* A peer's QP number is known (from its UDP header): an AH towards it. */
static void rs_ds_learn(struct rs_ds_dest *d, uint32_t qpn)
{
	struct ibv_ah_attr aa;

	if (d->ah && d->qpn == qpn)
		return;
	if (d->ah)
		ibv_destroy_ah(d->ah);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	cm_sa_gid((const struct sockaddr *)&d->addr, &aa.grh.dgid);
	aa.grh.sgid_index = d->qp->sgid_index;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	d->ah = ibv_create_ah(d->qp->dev->pd, &aa);
	d->qpn = qpn;
	if (!d->ah)
		cm_warn("rsocket: no address handle towards a datagram peer: %s", strerror(errno));
}

/* --- the UDP side --------------------------------------------------------------- */

static int rs_ds_send_udp(struct rsocket *rs, struct rs_ds_dest *d, uint8_t op,
			  const struct iovec *iov, int iovcnt, int flags)
{
	struct rs_udp_hdr h;
	struct iovec v[1 + 16];
	struct msghdr m;
	ssize_t n;

	if (iovcnt > 16)
		return -EMSGSIZE;
	memset(&h, 0, sizeof(h));
	h.tag = htobe32(RS_UDP_TAG);
	h.version = d->qp->hdr.version;
	h.op = op;
	h.qpn = htobe32(d->qp->qp->qp_num & 0xFFFFFF);
	if (h.version == 4) {
		h.length = RS_UDP_HDR4;
		h.addr.ipv4 = d->qp->hdr.addr.ipv4;
	} else {
		h.length = RS_UDP_HDR6;
		memcpy(h.addr.ipv6, d->qp->hdr.addr.ipv6.addr, 16);
	}
	v[0] = (struct iovec){ &h, h.length };
	for (int i = 0; i < iovcnt; i++)
		v[1 + i] = iov[i];
	memset(&m, 0, sizeof(m));
	m.msg_name = &d->addr;
	m.msg_namelen = cm_sa_len((struct sockaddr *)&d->addr);
	m.msg_iov = v;
	m.msg_iovlen = (size_t)iovcnt + 1;
	n = sendmsg(rs->ds->udp, &m, flags & MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	return (int)(n - h.length);
}

static void rs_ds_queue(struct rs_dgram *ds, struct rs_ds_msg *m)
{
	m->next = NULL;
	if (ds->tail)
		ds->tail->next = m;
	else
		ds->head = m;
	ds->tail = m;
}

/* One datagram on the UDP socket: a peer that does not know our QP yet. */
static void rs_ds_udp_one(struct rsocket *rs, const uint8_t *buf, size_t n,
			  const struct sockaddr_storage *from)
{
	struct rs_dgram *ds = rs->ds;
	struct rs_udp_hdr h;
	struct rs_ds_dest *d;
	struct rs_ds_msg *m;
	size_t hl;

	if (n < RS_UDP_HDR4) {
		ds->dropped++;
		return;
	}
	memset(&h, 0, sizeof(h));
	memcpy(&h, buf, n < sizeof(h) ? n : sizeof(h));
	hl = h.version == 4 ? RS_UDP_HDR4 : RS_UDP_HDR6;
	if (be32toh(h.tag) != RS_UDP_TAG || h.length != hl || n < hl ||
	    (h.version == 4 && from->ss_family != AF_INET) ||
	    (h.version == 6 && from->ss_family != AF_INET6) ||
	    (h.version != 4 && h.version != 6) || (h.op != RS_OP_DATA && h.op != RS_OP_CTRL)) {
		ds->dropped++;
		return;
	}
	if (rs_ds_get_dest(rs, (const struct sockaddr *)from, &d)) {
		ds->dropped++;
		return;
	}
	/* Data from a peer that does not know us: tell it our QP. */
	if (h.op == RS_OP_DATA)
		rs_ds_send_udp(rs, d, RS_OP_CTRL, NULL, 0, MSG_DONTWAIT);
	rs_ds_learn(d, be32toh(h.qpn) & 0xFFFFFF);
	if (h.op != RS_OP_DATA)
		return;
	if (n - hl > RS_DS_MSG || ds->udp_queued >= RS_DS_MAX_UDP_QUEUED) {
		ds->dropped++;
		return;
	}
	m = malloc(sizeof(*m) + (n - hl));
	if (!m) {
		ds->dropped++;
		return;
	}
	memset(m, 0, sizeof(*m));
	m->from = *from;
	m->len = (uint32_t)(n - hl);
	memcpy(m->copy, buf + hl, n - hl);
	m->data = m->copy;
	ds->udp_queued++;
	rs_ds_queue(ds, m);
}

static void rs_ds_poll_udp(struct rsocket *rs)
{
	uint8_t buf[RS_DS_MSG + RS_UDP_HDR6];

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(rs->ds->udp, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC,
				     (struct sockaddr *)&from, &fl);

		if (n < 0)
			break;
		if ((size_t)n > sizeof(buf)) {
			rs->ds->dropped++;
			continue;
		}
		rs_ds_udp_one(rs, buf, (size_t)n, &from);
	}
}

/* --- the UD side ------------------------------------------------------------------ */

static void rs_ds_poll_cq(struct rsocket *rs, struct rs_ds_qp *q)
{
	struct rs_dgram *ds = rs->ds;
	struct ibv_wc wc[16];
	int n;

	/* An event taken disarms the CQ. A waiter between its arming and its
	 * sleep (rs_ds_wait_fds set ds->waiting) arms it again before polling
	 * it dry (ibv_get_cq_event(3): get, request notification, then poll):
	 * else, having taken the event of a completion that raced its arming
	 * (a send's, typically) and found nothing to return, it would sleep
	 * with no notification requested, the next datagram waking nobody
	 * until wake_up_interval. Outside a wait the CQ stays unarmed: no
	 * event per completion while the caller is busy. */
	if (rs_cq_take_event(&q->comp) && ds->waiting)
		rs_cq_arm(&q->comp);
	while ((n = ibv_poll_cq(q->comp.cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)wc[i].wr_id;
			const uint8_t *p;
			struct rs_ds_hdr h;
			struct rs_ds_msg *m;
			uint32_t hl;

			if (!(wc[i].wr_id & RS_WR_RECV)) {
				if (slot < ds->sq_size && ds->nfree < ds->sq_size)
					ds->free_slots[ds->nfree++] = slot;
				continue;
			}
			if (slot >= ds->rq_size)
				continue;
			p = q->rbuf + (uint64_t)slot * (RS_DS_GRH + RS_DS_MSG) + RS_DS_GRH;
			/* The sender's header: version, length, and a datagram
			 * long enough to hold it. */
			memset(&h, 0, sizeof(h));
			hl = 0;
			if (wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len >= RS_DS_GRH + RS_DS_HDR4 &&
			    wc[i].byte_len <= RS_DS_GRH + RS_DS_MSG) {
				memcpy(&h, p, RS_DS_HDR4);
				hl = h.version == 4 && h.length == RS_DS_HDR4   ? RS_DS_HDR4
				     : h.version == 6 && h.length == RS_DS_HDR6 ? RS_DS_HDR6
										: 0;
				if (hl && wc[i].byte_len < RS_DS_GRH + hl)
					hl = 0;
				if (hl == RS_DS_HDR6)
					memcpy(&h, p, RS_DS_HDR6);
			}
			m = hl ? malloc(sizeof(*m)) : NULL;
			if (!m) {
				if (wc[i].status == IBV_WC_SUCCESS)
					ds->dropped++;
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					rs_ds_post_recv(ds, q, slot);
				continue;
			}
			memset(m, 0, sizeof(*m));
			rs_ds_hdr_to_sa(&h, &m->from);
			m->qp = q;
			m->slot = slot;
			m->len = wc[i].byte_len - RS_DS_GRH - hl;
			m->data = p + hl;
			rs_ds_queue(ds, m);
		}
	}
}

static void rs_ds_progress(struct rsocket *rs)
{
	rs_ds_poll_udp(rs);
	for (struct rs_ds_qp *q = rs->ds->qps; q; q = q->next)
		rs_ds_poll_cq(rs, q);
}

static int rs_ds_wait_fds(struct rsocket *rs, struct pollfd *fds);

static int rs_ds_wait(struct rsocket *rs, bool nonblock, bool (*test)(struct rsocket *))
{
	uint64_t start = rs_now_us();

	for (;;) {
		struct pollfd fds[1 + RS_DS_MAX_QPS];
		int n;

		rs_ds_progress(rs);
		if (test(rs))
			return 0;
		if (nonblock)
			return -EAGAIN;
		if (rs_now_us() - start < rs_conf.polling_time_us)
			continue;
		n = rs_ds_wait_fds(rs, fds);
		rs_ds_progress(rs); /* what came before the arming */
		if (test(rs))
			return 0;
		pthread_mutex_unlock(&rs->lock);
		poll(fds, (nfds_t)n, (int)rs_conf.wake_up_interval_ms);
		pthread_mutex_lock(&rs->lock);
	}
}

static bool rs_ds_have_data(struct rsocket *rs)
{
	return rs->ds->head != NULL;
}

static bool rs_ds_can_send(struct rsocket *rs)
{
	return rs->ds->nfree > 0;
}

/* --- entry points ---------------------------------------------------------------- */

int rs_dgram_connect(struct rsocket *rs, const struct sockaddr *addr, socklen_t addrlen)
{
	int err;

	if (!addr || addrlen < sizeof(sa_family_t) || !cm_sa_len(addr) || addrlen < cm_sa_len(addr))
		return -EINVAL;
	if (connect(rs->ds->udp, addr, addrlen))
		return -errno;
	pthread_mutex_lock(&rs->lock);
	err = rs_ds_get_dest(rs, addr, &rs->ds->conn_dest);
	pthread_mutex_unlock(&rs->lock);
	return err;
}

ssize_t rs_dgram_sendto(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags,
			const struct sockaddr *to, socklen_t tolen)
{
	struct rs_dgram *ds = rs->ds;
	struct rs_ds_dest *d;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	size_t len = 0;
	uint32_t slot;
	uint8_t *msg;
	int err = 0;

	/* Summed without overflow: each part, and the total, at most a slot. */
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > RS_DS_MSG || (len += iov[i].iov_len) > RS_DS_MSG) {
			errno = EMSGSIZE;
			return -1;
		}
	}
	if (to && (tolen < sizeof(sa_family_t) || !cm_sa_len(to) || tolen < cm_sa_len(to))) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&rs->lock);
	ds->waiting = false;
	rs_ds_progress(rs);
	if (to)
		err = rs_ds_get_dest(rs, to, &d);
	else if (!(d = ds->conn_dest))
		err = -EDESTADDRREQ;
	if (err)
		goto out;
	if (len > (size_t)(d->qp->max_msg - d->qp->hdr.length)) {
		err = -EMSGSIZE; /* more than one UD packet (or slot) holds */
		goto out;
	}
	if (!d->ah) {
		/* The peer's QP is not known yet: over UDP (it answers with it). */
		err = rs_ds_send_udp(rs, d, RS_OP_DATA, iov, iovcnt, flags);
		goto out;
	}
	if (!ds->nfree) {
		err = rs_ds_wait(rs, rs_nonblocking(rs, flags), rs_ds_can_send);
		if (err)
			goto out;
	}
	slot = ds->free_slots[--ds->nfree];
	msg = ds->sbuf + (uint64_t)slot * RS_DS_MSG;
	memcpy(msg, &d->qp->hdr, d->qp->hdr.length);
	for (int i = 0, off = d->qp->hdr.length; i < iovcnt; off += (int)iov[i].iov_len, i++)
		memcpy(msg + off, iov[i].iov_base, iov[i].iov_len);
	sge = (struct ibv_sge){ .addr = (uintptr_t)msg,
				.length = (uint32_t)(d->qp->hdr.length + len),
				.lkey = d->qp->smr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = sge.length <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	wr.wr.ud.ah = d->ah;
	wr.wr.ud.remote_qpn = d->qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	if (ibv_post_send(d->qp->qp, &wr, &bad)) {
		ds->free_slots[ds->nfree++] = slot;
		err = -EIO;
		goto out;
	}
	err = (int)len;
out:
	pthread_mutex_unlock(&rs->lock);
	if (err < 0) {
		errno = -err;
		return -1;
	}
	return err;
}

ssize_t rs_dgram_recvfrom(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags,
			  struct sockaddr *from, socklen_t *fromlen)
{
	struct rs_dgram *ds = rs->ds;
	struct rs_ds_msg *m;
	size_t done = 0;
	int err;

	pthread_mutex_lock(&rs->lock);
	ds->waiting = false;
	rs_ds_progress(rs);
	if (!ds->head) {
		err = rs_ds_wait(rs, rs_nonblocking(rs, flags), rs_ds_have_data);
		if (err) {
			pthread_mutex_unlock(&rs->lock);
			errno = -err;
			return -1;
		}
	}
	m = ds->head;
	for (int i = 0; i < iovcnt && done < m->len; i++) {
		size_t n = iov[i].iov_len < m->len - done ? iov[i].iov_len : m->len - done;

		memcpy(iov[i].iov_base, m->data + done, n);
		done += n;
	}
	if (from && fromlen) {
		socklen_t l = cm_sa_len((struct sockaddr *)&m->from);

		memcpy(from, &m->from, *fromlen < l ? *fromlen : l);
		*fromlen = l;
	}
	if (!(flags & MSG_PEEK)) {
		ds->head = m->next;
		if (!ds->head)
			ds->tail = NULL;
		if (m->qp)
			rs_ds_post_recv(ds, m->qp, m->slot);
		else
			ds->udp_queued--;
		free(m);
	}
	pthread_mutex_unlock(&rs->lock);
	return (ssize_t)done;
}

void rs_dgram_close(struct rsocket *rs)
{
	struct rs_dgram *ds = rs->ds;

	rs_table_remove(rs);
	pthread_mutex_lock(&rs->lock);
	while (ds->head) {
		struct rs_ds_msg *m = ds->head;

		ds->head = m->next;
		free(m);
	}
	while (ds->dests) {
		struct rs_ds_dest *d = ds->dests;

		ds->dests = d->next;
		if (d->ah)
			ibv_destroy_ah(d->ah);
		free(d);
	}
	while (ds->qps) {
		struct rs_ds_qp *q = ds->qps;

		ds->qps = q->next;
		rs_ds_free_qp(q);
	}
	pthread_mutex_unlock(&rs->lock);
	close(ds->udp);
	free(ds->sbuf);
	free(ds->free_slots);
	free(ds);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

int rs_dgram_setsockopt(struct rsocket *rs, int level, int optname, const void *optval,
			socklen_t optlen)
{
	unsigned int v;

	memcpy(&v, optval, sizeof(v));
	pthread_mutex_lock(&rs->lock);
	if (level == SOL_RDMA || (level == SOL_SOCKET && (optname == SO_RCVBUF ||
							  optname == SO_SNDBUF))) {
		int ret = 0;

		if (rs->ds->sbuf) {
			ret = level == SOL_RDMA ? EINVAL : 0; /* sized already */
		} else if (level == SOL_SOCKET) {
			uint64_t sz = (uint64_t)v << 1;

			sz = sz < 2 * RS_DS_MSG ? 2 * RS_DS_MSG : sz > RS_MAX_BUF ? RS_MAX_BUF : sz;
			if (optname == SO_RCVBUF)
				rs->rbuf_size = (uint32_t)sz;
			else
				rs->sbuf_size = (uint32_t)sz;
		} else if (optname == RDMA_SQSIZE) {
			rs->sq_size = v > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : v;
		} else if (optname == RDMA_RQSIZE) {
			rs->rq_size = v > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : v;
		} else if (optname == RDMA_INLINE) {
			rs->sq_inline = v > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : v;
		} else {
			ret = ENOTSUP;
		}
		pthread_mutex_unlock(&rs->lock);
		if (ret) {
			errno = ret;
			return -1;
		}
		return 0;
	}
	pthread_mutex_unlock(&rs->lock);
	/* Everything else is the UDP socket's. */
	return setsockopt(rs->ds->udp, level, optname, optval, optlen);
}

int rs_dgram_getsockopt(struct rsocket *rs, int level, int optname, void *optval,
			socklen_t *optlen)
{
	int v;

	if (level == SOL_RDMA) {
		if (optname == RDMA_SQSIZE)
			v = (int)rs->sq_size;
		else if (optname == RDMA_RQSIZE)
			v = (int)rs->rq_size;
		else if (optname == RDMA_INLINE)
			v = (int)rs->sq_inline;
		else
			return errno = ENOTSUP, -1;
		if (*optlen < sizeof(int))
			return errno = EINVAL, -1;
		memcpy(optval, &v, sizeof(v));
		*optlen = sizeof(int);
		return 0;
	}
	if (level == SOL_SOCKET && optname == SO_TYPE) {
		if (*optlen < sizeof(int))
			return errno = EINVAL, -1;
		v = SOCK_DGRAM;
		memcpy(optval, &v, sizeof(v));
		*optlen = sizeof(int);
		return 0;
	}
	return getsockopt(rs->ds->udp, level, optname, optval, optlen);
}

short rs_dgram_poll_events(struct rsocket *rs, short events)
{
	short rev = 0;

	pthread_mutex_lock(&rs->lock);
	rs_ds_progress(rs);
	if ((events & POLLIN) && rs->ds->head)
		rev |= POLLIN;
	/* Before the first send the slots are not sized: writable. */
	if ((events & POLLOUT) && (!rs->ds->sbuf || rs->ds->nfree))
		rev |= POLLOUT;
	pthread_mutex_unlock(&rs->lock);
	return rev;
}

int rs_dgram_wait_fds(struct rsocket *rs, struct pollfd *fds)
{
	int n;

	pthread_mutex_lock(&rs->lock);
	n = rs_ds_wait_fds(rs, fds);
	pthread_mutex_unlock(&rs->lock);
	return n;
}

static int rs_ds_wait_fds(struct rsocket *rs, struct pollfd *fds)
{
	int n = 0;

	rs->ds->waiting = true;
	fds[n++] = (struct pollfd){ .fd = rs->ds->udp, .events = POLLIN };
	for (struct rs_ds_qp *q = rs->ds->qps; q && n < 1 + RS_DS_MAX_QPS; q = q->next) {
		rs_cq_arm(&q->comp);
		fds[n++] = (struct pollfd){ .fd = q->comp.cc->fd, .events = POLLIN };
	}
	return n;
}
