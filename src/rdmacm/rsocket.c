/* SPDX-License-Identifier: MIT */
/*
 * Stream rsockets: the table of rsockets, creation, bind/listen/accept,
 * connection set-up over the CM (the connection data in the REQ and REP),
 * shutdown and close, names, rfcntl, and the send/receive entry points
 * (docs/rsockets.md). The data path is rsocket_data.c.
 *
 * Each rsocket has its own event channel, always non-blocking: connection
 * set-up is a state machine driven by its CM events (rs_cm_progress), so a
 * non-blocking rconnect returns EINPROGRESS and rpoll reports POLLOUT when
 * it completes, and a blocking one simply waits for the same events.
 * Connection requests wait on the listener's channel until raccept takes
 * them (rdma-core accepts them on a thread of its own; the peer cannot tell).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "rdmacm/rsocket_int.h"

ssize_t rs_stream_sendv(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags);
ssize_t rs_stream_recvv(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags);

/* --- the table: index (a descriptor we own) -> rsocket ---------------------- */

static pthread_mutex_t rs_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsocket **rs_table;
static int rs_table_size;

static int rs_insert(struct rsocket *rs)
{
	int ret = 0;

	if (rs->index < 0)
		return -EBADF;
	pthread_mutex_lock(&rs_table_lock);
	if (rs->index >= rs_table_size) {
		int n = rs_table_size ? rs_table_size : 256;
		struct rsocket **t;

		while (n <= rs->index)
			n *= 2;
		t = realloc(rs_table, sizeof(*t) * (size_t)n);
		if (!t) {
			ret = -ENOMEM;
			goto out;
		}
		memset(t + rs_table_size, 0, sizeof(*t) * (size_t)(n - rs_table_size));
		rs_table = t;
		rs_table_size = n;
	}
	rs_table[rs->index] = rs;
out:
	pthread_mutex_unlock(&rs_table_lock);
	return ret;
}

static void rs_remove(struct rsocket *rs)
{
	pthread_mutex_lock(&rs_table_lock);
	if (rs->index >= 0 && rs->index < rs_table_size && rs_table[rs->index] == rs)
		rs_table[rs->index] = NULL;
	pthread_mutex_unlock(&rs_table_lock);
}

int rs_table_insert(struct rsocket *rs)
{
	return rs_insert(rs);
}

void rs_table_remove(struct rsocket *rs)
{
	rs_remove(rs);
}

struct rsocket *rs_lookup(int index)
{
	struct rsocket *rs = NULL;

	pthread_mutex_lock(&rs_table_lock);
	if (index >= 0 && index < rs_table_size)
		rs = rs_table[index];
	pthread_mutex_unlock(&rs_table_lock);
	if (!rs)
		errno = EBADF;
	return rs;
}

/* --- defaults (rsocket(7), "configuration files") --------------------------------- */

struct rs_conf rs_conf = {
	.mem = RS_DEF_MEM,
	.wmem = RS_DEF_WMEM,
	.sqsize = RS_DEF_SQSIZE,
	.rqsize = RS_DEF_RQSIZE,
	.inline_size = RS_DEF_INLINE,
	.iomap_size = 0,
	.polling_time_us = RS_POLL_SPIN_US,
	.wake_up_interval_ms = 1000,
};

static void rs_conf_read(const char *name, uint32_t *v, uint32_t min, uint32_t max)
{
	char path[128];
	unsigned long x;
	FILE *f;

	snprintf(path, sizeof(path), RS_CONF_DIR "/%s", name);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fscanf(f, "%lu", &x) == 1 && x >= min && x <= max)
		*v = (uint32_t)x;
	else
		cm_warn("rsocket: %s: not a number in [%u, %u], ignored", path, min, max);
	fclose(f);
}

static void rs_configure_once(void)
{
	rs_conf_read("mem_default", &rs_conf.mem, 1, RS_MAX_BUF);
	rs_conf_read("wmem_default", &rs_conf.wmem, 1, RS_MAX_BUF);
	rs_conf_read("sqsize_default", &rs_conf.sqsize, 1, RS_QP_MAX_SIZE);
	rs_conf_read("rqsize_default", &rs_conf.rqsize, 1, RS_QP_MAX_SIZE);
	rs_conf_read("inline_default", &rs_conf.inline_size, 0, RS_QP_MAX_SIZE);
	rs_conf_read("iomap_size", &rs_conf.iomap_size, 0, 0x7F00);
	rs_conf_read("polling_time", &rs_conf.polling_time_us, 0, 1000000);
	rs_conf_read("wake_up_interval", &rs_conf.wake_up_interval_ms, 1, 3600000);
	/* sizes the protocol can carry */
	if (rs_conf.wmem < 2 * RS_SNDLOWAT)
		rs_conf.wmem = 2 * RS_SNDLOWAT;
	if (rs_conf.mem < 2 * RS_SNDLOWAT)
		rs_conf.mem = 2 * RS_SNDLOWAT;
	rs_conf.mem &= ~1u; /* two halves */
	rs_conf.iomap_size = rs_scale_to_value(rs_value_to_scale(rs_conf.iomap_size));
}

void rs_configure(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, rs_configure_once);
}

void rs_default_sizes(struct rsocket *rs)
{
	rs_configure();
	rs->sq_size = rs_conf.sqsize;
	rs->rq_size = rs_conf.rqsize;
	rs->sq_inline = rs_conf.inline_size;
	rs->sbuf_size = rs_conf.wmem;
	rs->rbuf_size = rs_conf.mem;
	rs->target_iomap_size = rs_conf.iomap_size;
}

/* --- allocation ---------------------------------------------------------------- */

static struct rsocket *rs_alloc(const struct rsocket *parent, int type)
{
	struct rsocket *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->type = type;
	rs->index = -1;
	pthread_mutex_init(&rs->lock, NULL);
	if (parent) {
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->sq_inline = parent->sq_inline;
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->target_iomap_size = parent->target_iomap_size;
		rs->keepalive_time = parent->keepalive_time;
		rs->so_opts = parent->so_opts;
		rs->tcp_opts = parent->tcp_opts;
	} else {
		rs_default_sizes(rs);
	}
	return rs;
}

static int rs_set_nonblock_fd(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int rs_new_channel(struct rsocket *rs)
{
	rs->ch = rdma_create_event_channel();
	if (!rs->ch)
		return -errno;
	rs->index = rs->ch->fd;
	return rs_set_nonblock_fd(rs->ch->fd);
}

/* Reject and drop the connection requests still queued on a listener. */
static void rs_drain_listener(struct rsocket *rs)
{
	struct rdma_cm_event *ev;

	while (rs->ch && !rdma_get_cm_event(rs->ch, &ev)) {
		struct rdma_cm_id *child = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->id : NULL;

		if (child)
			rdma_reject(child, NULL, 0);
		rdma_ack_cm_event(ev);
		if (child)
			rdma_destroy_id(child);
	}
}

static void rs_free(struct rsocket *rs)
{
	rs_remove(rs);
	rs_free_ep(rs);
	if (rs->state == RS_LISTENING)
		rs_drain_listener(rs);
	if (rs->cm_id)
		rdma_destroy_id(rs->cm_id);
	if (rs->ch)
		rdma_destroy_event_channel(rs->ch);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

/* --- entry points: creation, bind, listen ------------------------------------------ */

static int rs_ret(int r)
{
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

int rsocket(int domain, int type, int protocol)
{
	struct rsocket *rs;
	int err;

	if ((domain != AF_INET && domain != AF_INET6) ||
	    (type != SOCK_STREAM && type != SOCK_DGRAM) ||
	    (type == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
	    (type == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
		return rs_ret(-ENOTSUP);
	if (type == SOCK_DGRAM)
		return rs_dgram_socket(domain);
	rs = rs_alloc(NULL, type);
	if (!rs)
		return rs_ret(-ENOMEM);
	err = rs_new_channel(rs);
	if (!err && rdma_create_id(rs->ch, &rs->cm_id, rs, RDMA_PS_TCP))
		err = -errno;
	if (!err) {
		rs->cm_id->route.addr.src_addr.sa_family = (sa_family_t)domain;
		err = rs_insert(rs);
	}
	if (err) {
		rs_free(rs);
		return rs_ret(err);
	}
	return rs->index;
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM)
		return bind(rs->index, addr, addrlen);
	if (!addr || addrlen < sizeof(sa_family_t) || !cm_sa_len(addr) ||
	    addrlen < cm_sa_len(addr))
		return rs_ret(-EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (rs->state != RS_INIT) {
		ret = -EINVAL;
	} else {
		ret = rdma_bind_addr(rs->cm_id, (struct sockaddr *)addr) ? -errno : 0;
		if (!ret)
			rs->state = RS_BOUND;
	}
	pthread_mutex_unlock(&rs->lock);
	return rs_ret(ret);
}

int rlisten(int socket, int backlog)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret = 0;

	if (!rs)
		return -1;
	if (rs->type != SOCK_STREAM)
		return rs_ret(-EOPNOTSUPP);
	pthread_mutex_lock(&rs->lock);
	if (rs->state != RS_INIT && rs->state != RS_BOUND && rs->state != RS_LISTENING)
		ret = -EINVAL;
	else if (rdma_listen(rs->cm_id, backlog > 0 ? backlog : 1))
		ret = -errno;
	else
		rs->state = RS_LISTENING;
	pthread_mutex_unlock(&rs->lock);
	return rs_ret(ret);
}

static void rs_copy_addr(struct sockaddr *dst, socklen_t *len, const struct sockaddr *src)
{
	socklen_t size = cm_sa_len(src);

	if (!size)
		size = sizeof(struct sockaddr_in);
	memcpy(dst, src, *len < size ? *len : size);
	*len = size;
}

/* Take one CONNECT_REQUEST: a new rsocket with its own channel, checked
 * connection data, our QP and buffers, the REP. NULL if it was refused. */
static struct rsocket *rs_accept_one(struct rsocket *ls, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *child = ev->id;
	uint8_t pdata[256];
	size_t plen = ev->param.conn.private_data_len;
	struct rdma_conn_param param = ev->param.conn;
	struct rs_conn_data cd;
	struct rsocket *rs;
	int err;

	if (plen > sizeof(pdata))
		plen = sizeof(pdata);
	if (plen && ev->param.conn.private_data)
		memcpy(pdata, ev->param.conn.private_data, plen);
	else
		plen = 0;
	rdma_ack_cm_event(ev);

	rs = rs_alloc(ls, SOCK_STREAM);
	if (!rs) {
		rdma_reject(child, NULL, 0);
		rdma_destroy_id(child);
		return NULL;
	}
	err = rs_new_channel(rs);
	if (!err && rdma_migrate_id(child, rs->ch))
		err = -errno;
	if (err) {
		rdma_reject(child, NULL, 0);
		rdma_destroy_id(child);
		rs_free(rs);
		return NULL;
	}
	child->context = rs;
	rs->cm_id = child;
	if (plen < sizeof(cd) || ((const struct rs_conn_data *)pdata)->version != RS_PROTO_VERSION)
		err = rs_save_conn_data(rs, pdata, plen); /* says why, before any QP */
	if (!err)
		err = rs_create_ep(rs);
	if (!err)
		err = rs_save_conn_data(rs, pdata, plen);
	if (!err) {
		rs_format_conn_data(rs, &cd);
		param.private_data = &cd;
		param.private_data_len = sizeof(cd);
		if (rdma_accept(child, &param))
			err = -errno;
	}
	if (!err)
		err = rs_insert(rs);
	if (err) {
		cm_warn("rsocket: connection request refused: %s", strerror(-err));
		rdma_reject(child, NULL, 0);
		rs_free(rs);
		return NULL;
	}
	/* The QP is at RTS once the REP is out: data may flow; the RTU's
	 * ESTABLISHED is taken by rs_cm_progress. */
	rs->state = RS_CONNECT_RDWR;
	return rs;
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *ls = rs_lookup(socket), *rs = NULL;
	struct rdma_cm_event *ev;
	int ret = 0;

	if (!ls)
		return -1;
	if (ls->type != SOCK_STREAM)
		return rs_ret(-EOPNOTSUPP);
	pthread_mutex_lock(&ls->lock);
	while (!rs) {
		if (ls->state != RS_LISTENING) {
			ret = -EINVAL;
			break;
		}
		if (rdma_get_cm_event(ls->ch, &ev)) {
			struct pollfd pfd = { .fd = ls->ch->fd, .events = POLLIN };

			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				ret = -errno;
				break;
			}
			if (ls->fd_flags & O_NONBLOCK) {
				ret = -EAGAIN;
				break;
			}
			pthread_mutex_unlock(&ls->lock);
			poll(&pfd, 1, -1);
			pthread_mutex_lock(&ls->lock);
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			bool gone = ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL;

			rdma_ack_cm_event(ev);
			if (gone) {
				ret = -ENODEV;
				break;
			}
			continue;
		}
		rs = rs_accept_one(ls, ev);
	}
	pthread_mutex_unlock(&ls->lock);
	if (!rs)
		return rs_ret(ret);
	if (addr && addrlen)
		rs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->cm_id));
	return rs->index;
}

/* --- connection set-up ------------------------------------------------------------ */

static void rs_connect_error(struct rsocket *rs, int err)
{
	rs->state = RS_CONNECT_ERROR;
	rs->err = err;
}

static int rs_event_errno(const struct rdma_cm_event *ev, int fallback)
{
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return ECONNREFUSED;
	return ev->status < 0 ? -ev->status : fallback;
}

static void rs_start_connect(struct rsocket *rs)
{
	struct rdma_conn_param param;
	struct rs_conn_data cd;
	int err = rs_create_ep(rs);

	if (err) {
		rs_connect_error(rs, -err);
		return;
	}
	rs_format_conn_data(rs, &cd);
	memset(&param, 0, sizeof(param));
	param.private_data = &cd;
	param.private_data_len = sizeof(cd);
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7; /* RNR is the flow control of control messages */
	if (rdma_connect(rs->cm_id, &param)) {
		rs_connect_error(rs, errno);
		return;
	}
	rs->state = RS_CONNECTING;
}

static void rs_cm_event(struct rsocket *rs, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rs->state != RS_RESOLVING_ADDR)
			break;
		if (rdma_resolve_route(rs->cm_id, RS_RESOLVE_MS))
			rs_connect_error(rs, errno);
		else
			rs->state = RS_RESOLVING_ROUTE;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rs->state == RS_RESOLVING_ROUTE)
			rs_start_connect(rs);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rs->state != RS_CONNECTING)
			break; /* the passive side's RTU */
		if (rs_save_conn_data(rs, ev->param.conn.private_data,
				      ev->param.conn.private_data ? ev->param.conn.private_data_len
								  : 0)) {
			/* (rs_save_conn_data said why) */
			rs_connect_error(rs, ECONNREFUSED);
			rdma_disconnect(rs->cm_id);
			break;
		}
		rs->state = RS_CONNECT_RDWR;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (rs->state & RS_OPENING)
			rs_connect_error(rs, rs_event_errno(ev, ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL
								    ? ENODEV
								    : EHOSTUNREACH));
		else if (rs->state & RS_CONNECTED)
			rs_set_error(rs, ECONNRESET, rdma_event_str(ev->event));
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (!(rs->state & RS_CONNECTED))
			break;
		/* A peer that closes sends RS_CTRL_DISCONNECT before its DREQ:
		 * look at the CQ once more. Still connected: it vanished. */
		rs_progress(rs);
		if (!(rs->state & RS_CONNECTED))
			break;
		/* Both ends closing at once: ours sent its DISCONNECT, the
		 * peer saw it first and sends none. Nothing more was due. */
		if (!(rs->state & RS_READABLE))
			rs->state = RS_DISCONNECTED;
		else
			rs_set_error(rs, ECONNRESET, "the peer disconnected without closing");
		break;
	default:
		break;
	}
}

void rs_cm_progress(struct rsocket *rs)
{
	struct rdma_cm_event *ev;

	uint64_t now;

	if (rs->state == RS_LISTENING || !rs->ch)
		return; /* a listener's events are raccept's */
	now = rs_now_us();
	if (!(rs->state & RS_OPENING) && !rs->cm_pending && now < rs->cm_next_us)
		return;
	rs->cm_pending = false;
	rs->cm_next_us = now + RS_CM_CHECK_US;
	while (!rdma_get_cm_event(rs->ch, &ev)) {
		rs_cm_event(rs, ev);
		rdma_ack_cm_event(ev);
		rs_wake_others(rs); /* the state may have changed under them */
	}
}

static bool rs_not_opening(struct rsocket *rs)
{
	return !(rs->state & RS_OPENING);
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret = 0;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM)
		return rs_ret(rs_dgram_connect(rs, addr, addrlen));
	pthread_mutex_lock(&rs->lock);
	switch (rs->state) {
	case RS_INIT:
	case RS_BOUND:
		if (!addr || addrlen < sizeof(sa_family_t) || !cm_sa_len(addr) ||
		    addrlen < cm_sa_len(addr)) {
			ret = -EINVAL;
			goto out;
		}
		memset(&rs->dst, 0, sizeof(rs->dst));
		memcpy(&rs->dst, addr, cm_sa_len(addr));
		rs->err = 0;
		if (rdma_resolve_addr(rs->cm_id, NULL, (struct sockaddr *)&rs->dst, RS_RESOLVE_MS)) {
			ret = -errno;
			rs_connect_error(rs, errno);
			goto out;
		}
		rs->state = RS_RESOLVING_ADDR;
		break;
	case RS_RESOLVING_ADDR:
	case RS_RESOLVING_ROUTE:
	case RS_CONNECTING:
		if (rs->fd_flags & O_NONBLOCK) {
			rs_cm_progress(rs);
			ret = (rs->state & RS_OPENING) ? -EALREADY : 0;
			if (ret)
				goto out;
		}
		break;
	case RS_LISTENING:
		ret = -EINVAL;
		goto out;
	default:
		break;
	}
	if (rs->state & RS_OPENING) {
		ret = rs_wait(rs, rs->fd_flags & O_NONBLOCK, -1, rs_not_opening);
		if (ret == -EAGAIN) {
			ret = -EINPROGRESS;
			goto out;
		}
	}
	if (rs->state == RS_CONNECT_ERROR)
		ret = -(rs->err ? rs->err : ECONNREFUSED);
	else if (rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR))
		ret = 0;
	else if (!ret)
		ret = -EINVAL;
out:
	pthread_mutex_unlock(&rs->lock);
	return rs_ret(ret);
}

/* --- shutdown and close ---------------------------------------------------------------- */

/* How long shutdown waits for the control slot and for our sends to finish:
 * they end in bounded time unless a peer answers RNR for ever. */
#define RS_CLOSE_WAIT_MS 10000

static int rs_shutdown_locked(struct rsocket *rs, int how)
{
	enum rs_ctrl ctrl;
	int ret = 0;

	if (!(rs->state & RS_CONNECTED))
		return (rs->state & (RS_DISCONNECTED | RS_ERROR)) ? 0 : -ENOTCONN;
	if (how == SHUT_RDWR) {
		ctrl = RS_CTRL_DISCONNECT;
		rs->state &= ~(RS_READABLE | RS_WRITABLE);
	} else if (how == SHUT_WR) {
		rs->state &= ~RS_WRITABLE;
		ctrl = (rs->state & RS_READABLE) ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
	} else {
		rs->state &= ~RS_READABLE;
		if (rs->state & RS_WRITABLE)
			return 0;
		ctrl = RS_CTRL_DISCONNECT;
	}
	if (!rs_ctrl_avail(rs))
		rs_wait(rs, false, RS_CLOSE_WAIT_MS, rs_ctrl_avail);
	if ((rs->state & RS_CONNECTED) && rs_ctrl_avail(rs)) {
		if (rs_post_ctrl(rs, ctrl))
			rs_set_error(rs, ECONNRESET, "posting a control message failed");
	}
	if (rs->state & RS_CONNECTED)
		rs_wait(rs, false, RS_CLOSE_WAIT_MS, rs_all_sends_done);
	return ret;
}

int rshutdown(int socket, int how)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return -1;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return rs_ret(-EINVAL);
	if (rs->type == SOCK_DGRAM)
		return rs_ret(-ENOTCONN);
	rs_keepalive_remove(rs);
	pthread_mutex_lock(&rs->lock);
	ret = rs_shutdown_locked(rs, how);
	pthread_mutex_unlock(&rs->lock);
	return rs_ret(ret);
}

int rclose(int socket)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM) {
		rs_dgram_close(rs);
		return 0;
	}
	rs_remove(rs);
	rs_keepalive_remove(rs);
	pthread_mutex_lock(&rs->lock);
	if (rs->state & RS_CONNECTED)
		rs_shutdown_locked(rs, SHUT_RDWR);
	pthread_mutex_unlock(&rs->lock);
	rs_free(rs);
	return 0;
}

/* --- names, rfcntl ------------------------------------------------------------------ */

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return -1;
	if (!addr || !addrlen)
		return rs_ret(-EFAULT);
	if (rs->type == SOCK_DGRAM)
		return getpeername(rs->index, addr, addrlen);
	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return rs_ret(-ENOTCONN);
	rs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->cm_id));
	return 0;
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return -1;
	if (!addr || !addrlen)
		return rs_ret(-EFAULT);
	if (rs->type == SOCK_DGRAM)
		return getsockname(rs->index, addr, addrlen);
	rs_copy_addr(addr, addrlen, rdma_get_local_addr(rs->cm_id));
	return 0;
}

int rfcntl(int socket, int cmd, ... /* arg */)
{
	struct rsocket *rs = rs_lookup(socket);
	va_list ap;
	int ret = 0;

	if (!rs)
		return -1;
	va_start(ap, cmd);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fd_flags;
		break;
	case F_SETFL:
		/* Our own descriptors stay non-blocking; the flag is ours to honour. */
		rs->fd_flags = va_arg(ap, int);
		break;
	default:
		ret = rs_ret(-ENOTSUP);
		break;
	}
	va_end(ap);
	return ret;
}

/* --- send and receive entry points ---------------------------------------------------- */

static bool rs_iov_ok(const struct iovec *iov, int iovcnt)
{
	return iovcnt >= 0 && iovcnt <= IOV_MAX && (iov || !iovcnt);
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec iov = { (void *)buf, len };

	return rsendmsg(socket, &(struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1 }, flags);
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags, const struct sockaddr *dest_addr,
		socklen_t addrlen)
{
	struct rsocket *rs = rs_lookup(socket);
	struct iovec iov = { (void *)buf, len };

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM)
		return rs_dgram_sendto(rs, &iov, 1, flags, dest_addr, addrlen);
	if (dest_addr || addrlen)
		return rs_ret(-EISCONN);
	return rs_stream_sendv(rs, &iov, 1, flags);
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return -1;
	if (!msg || !rs_iov_ok(msg->msg_iov, (int)msg->msg_iovlen) || msg->msg_iovlen > IOV_MAX)
		return rs_ret(-EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return rs_ret(-ENOTSUP);
	if (rs->type == SOCK_DGRAM)
		return rs_dgram_sendto(rs, msg->msg_iov, (int)msg->msg_iovlen, flags,
				       msg->msg_name, msg->msg_namelen);
	return rs_stream_sendv(rs, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return rsendmsg(socket,
			&(struct msghdr){ .msg_iov = (struct iovec *)iov,
					  .msg_iovlen = iovcnt < 0 ? (size_t)-1 : (size_t)iovcnt },
			0);
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	struct rsocket *rs = rs_lookup(socket);
	ssize_t r;

	if (!rs)
		return -1;
	if (!msg || !rs_iov_ok(msg->msg_iov, (int)msg->msg_iovlen) || msg->msg_iovlen > IOV_MAX)
		return rs_ret(-EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return rs_ret(-ENOTSUP);
	if (rs->type == SOCK_DGRAM)
		return rs_dgram_recvfrom(rs, msg->msg_iov, (int)msg->msg_iovlen, flags,
					 msg->msg_name, msg->msg_name ? &msg->msg_namelen : NULL);
	r = rs_stream_recvv(rs, msg->msg_iov, (int)msg->msg_iovlen, flags);
	if (r >= 0 && msg->msg_name)
		rs_copy_addr(msg->msg_name, &msg->msg_namelen, rdma_get_peer_addr(rs->cm_id));
	msg->msg_flags = 0;
	return r;
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct iovec iov = { buf, len };

	return rrecvmsg(socket, &(struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1 }, flags);
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
		  socklen_t *addrlen)
{
	struct iovec iov = { buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r;

	if (src_addr && addrlen) {
		msg.msg_name = src_addr;
		msg.msg_namelen = *addrlen;
	}
	r = rrecvmsg(socket, &msg, flags);
	if (r >= 0 && src_addr && addrlen)
		*addrlen = msg.msg_namelen;
	return r;
}

ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return rrecvmsg(socket,
			&(struct msghdr){ .msg_iov = (struct iovec *)iov,
					  .msg_iovlen = iovcnt < 0 ? (size_t)-1 : (size_t)iovcnt },
			0);
}
