/* SPDX-License-Identifier: MIT */
/*
 * rsetsockopt / rgetsockopt (rsocket(7)): SOL_SOCKET, IPPROTO_TCP,
 * IPPROTO_IPV6 and SOL_RDMA. The SOL_RDMA sizes and the buffer sizes only
 * take effect before the connection is made (they size its QP and buffers);
 * as in rdma-core, SOL_RDMA after that is EINVAL. Every optval/optlen from
 * the application is checked before it is read or written.
 */
#include <endian.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/rsocket_int.h"

/* SO_RCVBUF / SO_SNDBUF: doubled as Linux doubles a socket's (socket(7)),
 * within [2 x RS_SNDLOWAT, RS_MAX_BUF]. */
static uint32_t rs_buf_size(int v)
{
	uint64_t sz = (uint64_t)(unsigned int)v << 1;

	return sz < 2 * RS_SNDLOWAT ? 2 * RS_SNDLOWAT : sz > RS_MAX_BUF ? RS_MAX_BUF : (uint32_t)sz;
}

static int rs_opt_err(int err)
{
	errno = err;
	return -1;
}

static void rs_opt_flag(uint64_t *opts, int optname, bool on)
{
	if (optname < 0 || optname >= 64)
		return;
	if (on)
		*opts |= 1ull << optname;
	else
		*opts &= ~(1ull << optname);
}

static bool rs_opt_get_flag(uint64_t opts, int optname)
{
	return optname >= 0 && optname < 64 && (opts & (1ull << optname));
}

int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	struct rsocket *rs = rs_lookup(socket);
	bool kick = false;
	int v, ret = 0;

	if (!rs)
		return -1;
	if (!optval || optlen < sizeof(int))
		return rs_opt_err(EINVAL);
	memcpy(&v, optval, sizeof(v));
	if (rs->type == SOCK_DGRAM)
		return rs_dgram_setsockopt(rs, level, optname, optval, optlen);

	pthread_mutex_lock(&rs->lock);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
			/* The CM's option; without it the port stays ours. */
			if (rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v,
					    sizeof(v)) &&
			    errno != ENOSYS && errno != EINVAL)
				ret = -errno;
			break;
		case SO_RCVBUF:
			if (!rs->rbuf)
				rs->rbuf_size = rs_buf_size(v);
			break;
		case SO_SNDBUF:
			if (!rs->sbuf)
				rs->sbuf_size = rs_buf_size(v);
			break;
		case SO_LINGER:
			if (optlen < sizeof(struct linger))
				ret = -EINVAL;
			else /* stored inverted, as rdma-core: the default (0) is "on" */
				v = !((const struct linger *)optval)->l_onoff;
			break;
		case SO_KEEPALIVE:
			pthread_mutex_unlock(&rs->lock);
			ret = rs_keepalive_set(rs, v != 0);
			pthread_mutex_lock(&rs->lock);
			break;
		case SO_OOBINLINE:
			break;
		default:
			ret = -ENOTSUP;
		}
		if (!ret)
			rs_opt_flag(&rs->so_opts, optname, v != 0);
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
		case TCP_MAXSEG:
			break; /* not applicable: the RC QP retries by itself */
		case TCP_KEEPIDLE:
			if (v <= 0) {
				ret = -EINVAL;
				break;
			}
			rs->keepalive_time = (unsigned int)v;
			kick = true; /* the keepalive thread takes the new period */
			break;
		case TCP_NODELAY:
			/* Every rsend leaves at once; the flag is only remembered. */
			break;
		default:
			ret = -ENOTSUP;
		}
		if (!ret)
			rs_opt_flag(&rs->tcp_opts, optname, v != 0);
		break;
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY) {
			ret = -ENOTSUP;
			break;
		}
		if (rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v, sizeof(v)))
			ret = -errno;
		else
			rs_opt_flag(&rs->ipv6_opts, optname, v != 0);
		break;
	case SOL_RDMA:
		if (rs->state >= RS_OPENING) {
			ret = -EINVAL;
			break;
		}
		switch (optname) {
		case RDMA_SQSIZE:
			rs->sq_size = (unsigned int)v > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : (uint32_t)v;
			break;
		case RDMA_RQSIZE:
			rs->rq_size = (unsigned int)v > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : (uint32_t)v;
			break;
		case RDMA_INLINE:
			rs->sq_inline = (unsigned int)v > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : (uint32_t)v;
			break;
		case RDMA_IOMAPSIZE:
			/* Rounded to what the 8-bit coding can carry. */
			rs->target_iomap_size = v < 0 ? 0 : rs_scale_to_value(rs_value_to_scale((unsigned)v));
			break;
		case RDMA_ROUTE:
			/* A route (struct ibv_path_data) from the application: RoCE
			 * routes come from the IP routing table (docs/rdmacm-shim.md,
			 * RDMA_OPTION_IB_PATH), so it cannot be honoured. */
			ret = -ENOTSUP;
			break;
		default:
			ret = -ENOTSUP;
		}
		break;
	default:
		ret = -ENOTSUP;
	}
	pthread_mutex_unlock(&rs->lock);
	if (kick) /* after the rsocket's lock: the thread's lock comes first */
		rs_keepalive_kick(rs);
	return ret ? rs_opt_err(-ret) : 0;
}

static int rs_put_int(void *optval, socklen_t *optlen, int v)
{
	if (*optlen < sizeof(int))
		return -EINVAL;
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(int);
	return 0;
}

/* RDMA_ROUTE: the path as struct ibv_path_data (rdma-core's conversion of
 * the path record). */
static int rs_get_route(struct rsocket *rs, void *optval, socklen_t *optlen)
{
	struct ibv_sa_path_rec *p;
	struct ibv_path_data pd;

	if (*optlen < sizeof(pd))
		return -EINVAL;
	if (!rs->cm_id || !rs->cm_id->route.num_paths || !rs->cm_id->route.path_rec) {
		*optlen = 0;
		return 0;
	}
	p = rs->cm_id->route.path_rec;
	memset(&pd, 0, sizeof(pd));
	pd.path.dgid = p->dgid;
	pd.path.sgid = p->sgid;
	pd.path.dlid = p->dlid;
	pd.path.slid = p->slid;
	pd.path.flowlabel_hoplimit = htobe32((be32toh(p->flow_label) << 8) | p->hop_limit);
	pd.path.tclass = p->traffic_class;
	pd.path.reversible_numpath = (uint8_t)(p->reversible << 7 | 1);
	pd.path.pkey = p->pkey;
	pd.path.qosclass_sl = htobe16(p->sl);
	pd.path.mtu = (uint8_t)(p->mtu | 2 << 6);
	pd.path.rate = (uint8_t)(p->rate | 2 << 6);
	pd.path.packetlifetime = (uint8_t)(p->packet_life_time | 2 << 6);
	pd.flags = p->preference;
	memcpy(optval, &pd, sizeof(pd));
	*optlen = sizeof(pd);
	return 0;
}

int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret = 0;

	if (!rs)
		return -1;
	if (!optval || !optlen)
		return rs_opt_err(EFAULT);
	if (rs->type == SOCK_DGRAM)
		return rs_dgram_getsockopt(rs, level, optname, optval, optlen);
	pthread_mutex_lock(&rs->lock);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			ret = rs_put_int(optval, optlen, rs_opt_get_flag(rs->so_opts, optname));
			break;
		case SO_RCVBUF:
			ret = rs_put_int(optval, optlen, (int)rs->rbuf_size);
			break;
		case SO_SNDBUF:
			ret = rs_put_int(optval, optlen, (int)rs->sbuf_size);
			break;
		case SO_LINGER:
			if (*optlen < sizeof(struct linger)) {
				ret = -EINVAL;
				break;
			}
			((struct linger *)optval)->l_onoff = !rs_opt_get_flag(rs->so_opts, optname);
			((struct linger *)optval)->l_linger = 0;
			*optlen = sizeof(struct linger);
			break;
		case SO_ERROR:
			/* A connection still being made: move it on first (a
			 * non-blocking rconnect is finished by POLLOUT + SO_ERROR). */
			rs_cm_progress(rs);
			ret = rs_put_int(optval, optlen,
					 rs->state == RS_CONNECT_ERROR || rs->state == RS_ERROR ? rs->err
												: 0);
			break;
		case SO_TYPE:
			ret = rs_put_int(optval, optlen, rs->type);
			break;
		default:
			ret = -ENOTSUP;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			ret = rs_put_int(optval, optlen, 1);
			break;
		case TCP_KEEPIDLE:
			ret = rs_put_int(optval, optlen, (int)rs->keepalive_time);
			break;
		case TCP_NODELAY:
			ret = rs_put_int(optval, optlen, rs_opt_get_flag(rs->tcp_opts, optname));
			break;
		case TCP_MAXSEG:
			ret = rs_put_int(optval, optlen,
					 rs->cm_id && rs->cm_id->route.num_paths &&
							 rs->cm_id->route.path_rec
						 ? 1 << (7 + rs->cm_id->route.path_rec->mtu)
						 : 2048);
			break;
		default:
			ret = -ENOTSUP;
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY)
			ret = rs_put_int(optval, optlen, rs_opt_get_flag(rs->ipv6_opts, optname));
		else
			ret = -ENOTSUP;
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			ret = rs_put_int(optval, optlen, (int)rs->sq_size);
			break;
		case RDMA_RQSIZE:
			ret = rs_put_int(optval, optlen, (int)rs->rq_size);
			break;
		case RDMA_INLINE:
			ret = rs_put_int(optval, optlen, (int)rs->sq_inline);
			break;
		case RDMA_IOMAPSIZE:
			ret = rs_put_int(optval, optlen, (int)rs->target_iomap_size);
			break;
		case RDMA_ROUTE:
			ret = rs_get_route(rs, optval, optlen);
			break;
		default:
			ret = -ENOTSUP;
		}
		break;
	default:
		ret = -ENOTSUP;
	}
	pthread_mutex_unlock(&rs->lock);
	return ret ? rs_opt_err(-ret) : 0;
}
