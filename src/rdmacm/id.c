/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm_id: creation, the daemon-side ID, addresses, listening.
 *
 * An ID is only local until it is attached to a device (docs/rdmacm-shim.md,
 * "ID lifecycle"): rdma_bind_addr to a specific address, rdma_resolve_addr
 * or rdma_listen create the daemon-side ID (CM_CREATE_ID) on the device
 * whose GID table holds the local address -- the kernel's rdma_cm acquires
 * its device at the same moments. A wildcard bind (or rdma_listen on an
 * unbound ID) binds on every device's daemon, all on one port, and
 * id->verbs stays NULL as the kernel leaves it; rdma_resolve_addr then keeps
 * the device the route picks.
 *
 * Events name an ID by (daemon connection, handle): the table below maps
 * them back. An event is counted as delivered under the table lock, and
 * rdma_destroy_id takes the ID out of the table before it waits for every
 * delivered event to be acknowledged -- stock's rule -- so no event can
 * reach an ID that is being freed.
 */
#include "rdmacm/cm.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#define CM_ID_BUCKETS 4096

static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cm_attach *id_hash[CM_ID_BUCKETS];
static struct cm_id *id_list; /* every ID, for device loss and injected events */
static uint32_t next_lid = 1;

static unsigned int bucket(const struct cm_dev *dev, uint32_t handle)
{
	uint64_t k = (uint64_t)(uintptr_t)dev ^ ((uint64_t)handle * 0x9e3779b97f4a7c15ull);

	return (unsigned int)((k ^ (k >> 29)) % CM_ID_BUCKETS);
}

/* Under id_lock. */
static void hash_del(struct cm_attach *a)
{
	for (struct cm_attach **p = &id_hash[bucket(a->dev, a->handle)]; *p; p = &(*p)->hnext) {
		if (*p == a) {
			*p = a->hnext;
			return;
		}
	}
}

/* --- allocation ----------------------------------------------------------------- */

struct cm_id *cm_id_alloc(struct rdma_event_channel *channel, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qp_type, int *err)
{
	struct cm_id *id;

	*err = cm_init();
	if (*err)
		return NULL;
	id = calloc(1, sizeof(*id));
	if (!id) {
		*err = -ENOMEM;
		return NULL;
	}
	if (!channel) {
		channel = rdma_create_event_channel();
		if (!channel) {
			*err = -errno;
			free(id);
			return NULL;
		}
		id->sync = true;
	}
	id->id.channel = channel;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	pthread_mutex_init(&id->mut, NULL);
	pthread_cond_init(&id->cond, NULL);
	pthread_mutex_lock(&id_lock);
	id->lid = next_lid++;
	if (!id->lid) /* 2^32 IDs later: 0 is never a valid lid */
		id->lid = next_lid++;
	id->lnext = id_list;
	if (id_list)
		id_list->lprev = id;
	id_list = id;
	pthread_mutex_unlock(&id_lock);
	return id;
}

/* Take the ID out of the table and the list: no event reaches it afterwards. */
static void id_unlink(struct cm_id *id)
{
	pthread_mutex_lock(&id_lock);
	for (struct cm_attach *a = id->att; a; a = a->anext)
		hash_del(a);
	if (id->lprev)
		id->lprev->lnext = id->lnext;
	else if (id_list == id)
		id_list = id->lnext;
	if (id->lnext)
		id->lnext->lprev = id->lprev;
	id->lnext = id->lprev = NULL;
	pthread_mutex_unlock(&id_lock);
}

void cm_id_free(struct cm_id *id)
{
	struct cm_attach *a, *an;
	struct cm_opt *o, *on;

	id_unlink(id);
	for (a = id->att; a; a = an) {
		an = a->anext;
		free(a);
	}
	for (o = id->opts; o; o = on) {
		on = o->next;
		free(o);
	}
	cm_mc_free_all(id);
	free(id->id.route.path_rec);
	free(id->connect);
	free(id->qp_init_attr);
	if (id->sync)
		rdma_destroy_event_channel(id->id.channel);
	pthread_cond_destroy(&id->cond);
	pthread_mutex_destroy(&id->mut);
	free(id);
}

/* --- attachments ------------------------------------------------------------------- */

static struct cm_attach *att_add(struct cm_id *id, struct cm_dev *dev, uint32_t handle)
{
	struct cm_attach *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->id = id;
	a->dev = dev;
	a->handle = handle;
	pthread_mutex_lock(&id_lock);
	a->anext = id->att;
	id->att = a;
	id->natt++;
	a->hnext = id_hash[bucket(dev, handle)];
	id_hash[bucket(dev, handle)] = a;
	pthread_mutex_unlock(&id_lock);
	return a;
}

/* Destroy one daemon-side ID and forget it. */
static void att_drop(struct cm_id *id, struct cm_attach *a)
{
	pthread_mutex_lock(&id_lock);
	hash_del(a);
	for (struct cm_attach **p = &id->att; *p; p = &(*p)->anext) {
		if (*p == a) {
			*p = a->anext;
			break;
		}
	}
	id->natt--;
	pthread_mutex_unlock(&id_lock);
	cm_call_handle(a->dev, XRXE_CTRL_CM_DESTROY_ID, a->handle, 0);
	if (id->dev == a->dev) {
		id->dev = NULL;
		id->id.verbs = NULL;
	}
	free(a);
}

static void id_set_dev(struct cm_id *id, struct cm_dev *dev)
{
	id->dev = dev;
	id->id.verbs = dev->verbs;
	id->id.pd = dev->pd;
	id->id.port_num = 1;
	/* The route's P_Key until the daemon says otherwise: RoCE has only
	 * the default one. */
	id->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
}

static int opt_send(struct cm_dev *dev, uint32_t handle, int level, int optname,
		    const void *optval, uint32_t optlen)
{
	struct xrxe_ctrl_cm_set_option req = {
		.handle = handle,
		.level = (uint32_t)level,
		.optname = (uint32_t)optname,
		.optlen = optlen,
	};

	memcpy(req.optval, optval, optlen);
	return cm_call(dev, XRXE_CTRL_CM_SET_OPTION, &req, sizeof(req), NULL, 0, NULL, 0);
}

int cm_id_attach(struct cm_id *id, struct cm_dev *dev, bool listener_only)
{
	struct xrxe_ctrl_cm_create_id req = {
		.ps = (uint32_t)id->id.ps,
		.qp_type = (uint32_t)id->id.qp_type,
	};
	struct xrxe_ctrl_handle rep;
	struct cm_attach *a;
	struct cm_reg *reg;
	int ret;

	ret = cm_dev_ready(dev);
	if (ret)
		return ret;
	ret = cm_channel_reg(to_cm_channel(id->id.channel), dev, &reg);
	if (ret)
		return ret;
	req.channel = reg->handle;
	ret = cm_call(dev, XRXE_CTRL_CM_CREATE_ID, &req, sizeof(req), NULL, 0, &rep, sizeof(rep));
	if (ret)
		return ret;
	a = att_add(id, dev, rep.handle);
	if (!a) {
		cm_call_handle(dev, XRXE_CTRL_CM_DESTROY_ID, rep.handle, 0);
		return -ENOMEM;
	}
	/* Options set while the ID had no daemon side, in their order. */
	for (struct cm_opt *o = id->opts; o; o = o->next) {
		ret = opt_send(dev, a->handle, o->level, o->optname, o->optval, o->optlen);
		if (ret) {
			att_drop(id, a);
			return ret;
		}
	}
	if (!listener_only)
		id_set_dev(id, dev);
	return 0;
}

int cm_id_adopt(struct cm_id *id, struct cm_dev *dev, uint32_t handle)
{
	if (!att_add(id, dev, handle))
		return -ENOMEM;
	id_set_dev(id, dev);
	id->bound = true;
	return 0;
}

/* --- events ------------------------------------------------------------------------ */

struct cm_id *cm_id_get_for_event(struct cm_dev *dev, uint32_t handle)
{
	struct cm_id *id = NULL;

	pthread_mutex_lock(&id_lock);
	for (struct cm_attach *a = id_hash[bucket(dev, handle)]; a; a = a->hnext) {
		if (a->dev == dev && a->handle == handle) {
			id = a->id;
			pthread_mutex_lock(&id->mut);
			id->delivered++;
			pthread_mutex_unlock(&id->mut);
			break;
		}
	}
	pthread_mutex_unlock(&id_lock);
	return id;
}

struct cm_id *cm_id_get_by_lid(uint32_t lid)
{
	struct cm_id *id;

	pthread_mutex_lock(&id_lock);
	for (id = id_list; id; id = id->lnext)
		if (id->lid == lid)
			break;
	if (id) {
		pthread_mutex_lock(&id->mut);
		id->delivered++;
		pthread_mutex_unlock(&id->mut);
	}
	pthread_mutex_unlock(&id_lock);
	return id;
}

void cm_id_complete_event(struct cm_id *id)
{
	pthread_mutex_lock(&id->mut);
	id->completed++;
	pthread_cond_broadcast(&id->cond);
	pthread_mutex_unlock(&id->mut);
}

/* Wait until every event handed out for the ID has been acknowledged. */
static void id_wait_events(struct cm_id *id)
{
	pthread_mutex_lock(&id->mut);
	while (id->completed < id->delivered)
		pthread_cond_wait(&id->cond, &id->mut);
	pthread_mutex_unlock(&id->mut);
}

void cm_ids_lost(struct cm_dev *dev)
{
	pthread_mutex_lock(&id_lock);
	for (struct cm_id *id = id_list; id; id = id->lnext) {
		/* A wildcard listener has other devices: it only loses one
		 * of its listeners, silently, as the kernel's does. */
		if (id->dev != dev || id->removal_injected)
			continue;
		id->removal_injected = true;
		cm_channel_inject(to_cm_channel(id->id.channel), id->lid,
				  RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	}
	pthread_mutex_unlock(&id_lock);
}

int cm_id_set_route(struct cm_id *id, const struct xrxe_cm_route *r)
{
	struct rdma_route *rt = &id->id.route;

	if (r->src.family)
		cm_addr_to_sa(&r->src, &rt->addr.src_storage);
	if (r->dst.family)
		cm_addr_to_sa(&r->dst, &rt->addr.dst_storage);
	rt->addr.addr.ibaddr.sgid = r->sgid;
	rt->addr.addr.ibaddr.dgid = r->dgid;
	if (r->pkey)
		rt->addr.addr.ibaddr.pkey = r->pkey;
	if (r->num_paths) {
		if (!rt->path_rec) {
			rt->path_rec = malloc(sizeof(*rt->path_rec));
			if (!rt->path_rec)
				return -ENOMEM;
		}
		*rt->path_rec = r->path;
		rt->num_paths = 1;
	}
	return 0;
}

/* CM_BIND on one attachment; the reply's route (with the port the daemon
 * chose for port 0) becomes id->route unless update is false. */
static int att_bind(struct cm_id *id, struct cm_attach *a, const struct sockaddr *addr,
		    struct xrxe_cm_route *out)
{
	struct xrxe_ctrl_cm_bind req = { .handle = a->handle };
	struct xrxe_ctrl_cm_query_reply rep;
	int ret;

	ret = cm_addr_from_sa(&req.addr, addr);
	if (ret)
		return ret;
	ret = cm_call(a->dev, XRXE_CTRL_CM_BIND, &req, sizeof(req), NULL, 0, &rep, sizeof(rep));
	if (ret)
		return ret;
	if (out)
		*out = rep.route;
	else
		ret = cm_id_set_route(id, &rep.route);
	return ret;
}

/* Attach to dev (a specific address's device) and bind addr there. */
static int id_bind_on(struct cm_id *id, struct cm_dev *dev, const struct sockaddr *addr)
{
	int ret = cm_id_attach(id, dev, false);

	if (ret)
		return ret;
	ret = att_bind(id, id->att, addr, NULL);
	if (ret) {
		att_drop(id, id->att);
		return ret;
	}
	id->bound = true;
	return 0;
}

static int id_bind_dev(struct cm_id *id, const struct sockaddr *addr)
{
	struct cm_dev *dev;
	int ret = cm_dev_for_addr(addr, &dev);

	return ret ? ret : id_bind_on(id, dev, addr);
}

static void drop_all(struct cm_id *id)
{
	while (id->att)
		att_drop(id, id->att);
}

/* One wildcard daemon-side ID on dev, bound to addr (a zero or loopback
 * address: the daemon gets its family's wildcard); port 0 in addr becomes
 * the port the daemon chose. */
static int bind_wild_on(struct cm_id *id, struct cm_dev *dev, struct sockaddr_storage *addr)
{
	struct xrxe_cm_route r;
	struct sockaddr_storage got, w = *addr;
	int ret = cm_id_attach(id, dev, true);

	if (ret)
		return ret;
	cm_sa_to_wildcard(&w);
	ret = att_bind(id, id->att, (struct sockaddr *)&w, &r);
	if (ret) {
		att_drop(id, id->att);
		return ret;
	}
	if (!cm_sa_port((struct sockaddr *)addr) && !cm_addr_to_sa(&r.src, &got))
		cm_sa_set_port((struct sockaddr *)addr, cm_sa_port((struct sockaddr *)&got));
	return 0;
}

/* How often a wildcard bind to port 0 tries another port when the first
 * daemon's choice is taken on another device. */
#define CM_BIND_TRIES 16

/* A wildcard bind: the kernel's ID has no device yet but owns the port on
 * every one (a listen follows, or the port is read and handed to a peer as
 * qperf does), so the ID is bound on every device's daemon, one port for
 * all. rdma_resolve_addr keeps the device the route picks, rdma_listen
 * listens on all. A loopback address is bound the same way (the kernel's
 * cma_any_addr counts it as a wildcard: no device, and a listener on it
 * matches what one on the wildcard would) but stays the ID's source address:
 * libfabric's verbs provider binds 127.0.0.1 and expects id->verbs NULL. */
static int bind_all(struct cm_id *id, const struct sockaddr *addr)
{
	bool fixed = cm_sa_port(addr) != 0;
	int ret = -ENODEV;

	for (int tries = 0; tries < CM_BIND_TRIES; tries++) {
		struct sockaddr_storage a;
		struct cm_dev **devs;
		int n;

		memset(&a, 0, sizeof(a));
		memcpy(&a, addr, cm_sa_len(addr));
		ret = cm_dev_all(&devs, &n);
		if (ret)
			return ret;
		for (int i = 0; i < n && !ret; i++)
			ret = bind_wild_on(id, devs[i], &a);
		free(devs);
		if (!ret) {
			id->id.route.addr.src_storage = a;
			id->bound = true;
			return 0;
		}
		drop_all(id);
		if (ret != -EADDRINUSE || fixed)
			break;
	}
	return ret;
}

/* --- the API ---------------------------------------------------------------------- */

int cm_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		 enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct cm_id *id;
	int err;

	/* The kernel's ucma knows these four port spaces and nothing else. */
	if (!out || (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB &&
		     ps != RDMA_PS_IPOIB))
		return -EINVAL;
	id = cm_id_alloc(channel, context, ps, qp_type, &err);
	if (!id)
		return err;
	*out = &id->id;
	return 0;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	enum ibv_qp_type qp_type = ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;

	return cm_ret(cm_create_id(channel, id, context, ps, qp_type));
}

int rdma_destroy_id(struct rdma_cm_id *rid)
{
	struct cm_id *id;

	if (!rid)
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	/* Out of the table first: events still queued for it are dropped
	 * when read (the kernel drops them with the ID too). */
	id_unlink(id);
	for (struct cm_attach *a = id->att; a; a = a->anext)
		cm_call_handle(a->dev, XRXE_CTRL_CM_DESTROY_ID, a->handle, 0);
	if (rid->event) {
		rdma_ack_cm_event(rid->event);
		rid->event = NULL;
	}
	id_wait_events(id);
	cm_id_free(id);
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *rid, struct sockaddr *addr)
{
	struct cm_id *id;
	socklen_t len = cm_sa_len(addr);

	if (!rid || !len)
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	if (id->bound || id->natt)
		return cm_err(EINVAL); /* the kernel binds an ID once */
	if (cm_sa_is_wild(addr))
		return cm_ret(bind_all(id, addr));
	return cm_ret(id_bind_dev(id, addr));
}

/* rdma_resolve_addr on an ID without a device: the routing table picks the
 * source address, hence the device. Sets *src to the source. */
static int resolve_dev(struct cm_id *id, const struct sockaddr *dst, struct sockaddr_storage *src)
{
	struct cm_attach *keep = NULL;
	struct cm_dev *dev;
	int ret;

	ret = cm_route_src(dst, src);
	if (!ret)
		ret = cm_dev_for_addr((struct sockaddr *)src, &dev);
	if (ret)
		return ret;
	if (!id->bound)
		return id_bind_on(id, dev, (struct sockaddr *)src); /* port 0: ephemeral */
	/* Bound to a wildcard: keep that device's binding (and its port), the
	 * other devices' go. */
	for (struct cm_attach *a = id->att; a; a = a->anext)
		if (a->dev == dev)
			keep = a;
	if (!keep) {
		/* A daemon started since the bind. */
		struct sockaddr_storage w = id->id.route.addr.src_storage;

		ret = bind_wild_on(id, dev, &w);
		if (ret)
			return ret;
		keep = id->att;
	}
	for (struct cm_attach *a = id->att, *next; a; a = next) {
		next = a->anext;
		if (a != keep)
			att_drop(id, a);
	}
	id_set_dev(id, dev);
	cm_sa_set_port((struct sockaddr *)src, cm_sa_port(&id->id.route.addr.src_addr));
	return 0;
}

/* A loopback or zero destination (the kernel's cma_resolve_loopback for
 * cma_any_addr): the ID's device, or the first one, talking to itself. The
 * daemon has no loopback interface, so the destination becomes the device's
 * own address (same family, same port); the daemon then loops the
 * connection back inside. */
static int loopback_dst(struct cm_id *id, const struct sockaddr *dst, struct sockaddr_storage *out)
{
	struct cm_dev *dev = id->dev ? id->dev : id->att ? id->att->dev : NULL;
	struct cm_dev **devs = NULL;
	int n, ret;

	if (!dev) {
		ret = cm_dev_all(&devs, &n);
		if (ret)
			return ret;
		dev = devs[0];
		free(devs);
	}
	ret = cm_dev_own_addr(dev, dst->sa_family, out);
	if (!ret)
		cm_sa_set_port((struct sockaddr *)out, cm_sa_port(dst));
	return ret;
}

int rdma_resolve_addr(struct rdma_cm_id *rid, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		      int timeout_ms)
{
	struct xrxe_ctrl_cm_resolve_addr req = { .timeout_ms = (uint32_t)timeout_ms };
	socklen_t dst_len = cm_sa_len(dst_addr);
	struct sockaddr_storage lo;
	struct cm_attach *a;
	struct cm_id *id;
	int ret;

	if (!rid || !dst_len || (src_addr && !cm_sa_len(src_addr)))
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	if (!id->bound && src_addr) {
		/* The kernel binds to src first: a specific src must be ours. */
		ret = rdma_bind_addr(rid, src_addr);
		if (ret)
			return ret;
	}
	if (id->listening ||
	    (id->bound && rid->route.addr.src_addr.sa_family != dst_addr->sa_family))
		return cm_err(EINVAL);
	if (cm_sa_is_wild(dst_addr)) {
		ret = loopback_dst(id, dst_addr, &lo);
		if (ret)
			return cm_err(-ret);
		dst_addr = (struct sockaddr *)&lo;
	}
	if (!id->dev) {
		struct sockaddr_storage src;

		memcpy(&rid->route.addr.dst_storage, dst_addr, dst_len);
		ret = resolve_dev(id, dst_addr, &src);
		if (ret == -ENOMEM)
			return cm_err(ENOMEM);
		if (ret) {
			/* No route, or no xrxe device on it: an ADDR_ERROR event,
			 * as the kernel's address handler reports it. */
			cm_dbg("resolve_addr: no xrxe device for the route: %s", strerror(-ret));
			cm_channel_inject(to_cm_channel(rid->channel), id->lid, RDMA_CM_EVENT_ADDR_ERROR,
					  ret);
			return cm_complete(id);
		}
		cm_addr_from_sa(&req.src, (struct sockaddr *)&src);
	}
	a = cm_id_att(id);
	req.handle = a->handle;
	ret = cm_addr_from_sa(&req.dst, dst_addr);
	if (!ret)
		ret = cm_call(a->dev, XRXE_CTRL_CM_RESOLVE_ADDR, &req, sizeof(req), NULL, 0, NULL, 0);
	if (ret)
		return cm_err(-ret);
	memcpy(&rid->route.addr.dst_storage, dst_addr, dst_len);
	return cm_complete(id);
}

int rdma_resolve_route(struct rdma_cm_id *rid, int timeout_ms)
{
	struct cm_attach *a;
	int ret;

	if (!rid || !(a = cm_id_att(to_cm_id(rid))))
		return cm_err(EINVAL);
	ret = cm_call_handle(a->dev, XRXE_CTRL_CM_RESOLVE_ROUTE, a->handle, (uint32_t)timeout_ms);
	if (ret)
		return cm_err(-ret);
	return cm_complete(to_cm_id(rid));
}

int rdma_listen(struct rdma_cm_id *rid, int backlog)
{
	uint32_t b = backlog < 0 ? 0 : (uint32_t)backlog;
	struct cm_id *id;
	int ret = 0, done = 0;

	if (!rid)
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	if (!id->bound) {
		/* The kernel listens on INADDR_ANY for an unbound ID. */
		struct sockaddr_in any = { .sin_family = AF_INET };

		ret = bind_all(id, (struct sockaddr *)&any);
		if (ret)
			return cm_err(-ret);
	}
	/* Again on a listener: the kernel takes the new backlog. */
	for (struct cm_attach *a = id->att; a && !ret; a = a->anext) {
		if (atomic_load(&a->dev->dead))
			continue; /* a wildcard listener lives on on the others */
		ret = cm_call_handle(a->dev, XRXE_CTRL_CM_LISTEN, a->handle, b);
		cm_dbg("listen: handle %u on %s, port %u: %s", a->handle, a->dev->name,
		       ntohs(rdma_get_src_port(rid)), ret ? strerror(-ret) : "ok");
		done += !ret;
	}
	if (!ret && !done)
		ret = -ENODEV;
	if (ret)
		return cm_err(-ret);
	id->listening = true;
	return 0;
}

/* The kernel's ucma_set_option_*: sizes it checks, names it knows. */
static int opt_check(int level, int optname, size_t optlen)
{
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			return optlen == sizeof(uint8_t) ? 0 : -EINVAL;
		case RDMA_OPTION_ID_REUSEADDR:
		case RDMA_OPTION_ID_AFONLY:
			return optlen == sizeof(int) ? 0 : -EINVAL;
		default:
			return -ENOSYS;
		}
	}
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
		return optlen && !(optlen % sizeof(struct ibv_path_data)) ? 0 : -EINVAL;
	return -ENOSYS;
}

int rdma_set_option(struct rdma_cm_id *rid, int level, int optname, void *optval, size_t optlen)
{
	struct cm_id *id;
	int ret;

	if (!rid || (!optval && optlen))
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	ret = opt_check(level, optname, optlen);
	if (ret)
		return cm_err(-ret);
	/* The ABI carries 128 bytes: two path records. */
	if (optlen > sizeof(((struct cm_opt *)0)->optval))
		return cm_err(EINVAL);
	if (id->natt) {
		for (struct cm_attach *a = id->att; a; a = a->anext) {
			ret = opt_send(a->dev, a->handle, level, optname, optval, (uint32_t)optlen);
			if (ret)
				return cm_err(-ret);
		}
		return 0;
	}
	if (level == RDMA_OPTION_IB)
		return cm_err(EINVAL); /* a path needs a resolved address */
	/* Kept for the daemon-side ID, which does not exist yet. */
	struct cm_opt *o = calloc(1, sizeof(*o)), **tail = &id->opts;

	if (!o)
		return cm_err(ENOMEM);
	o->level = level;
	o->optname = optname;
	o->optlen = (uint32_t)optlen;
	memcpy(o->optval, optval, optlen);
	while (*tail)
		tail = &(*tail)->next;
	*tail = o;
	return 0;
}

int rdma_notify(struct rdma_cm_id *rid, enum ibv_event_type event)
{
	struct cm_attach *a;

	if (!rid || !(a = cm_id_att(to_cm_id(rid))))
		return cm_err(EINVAL);
	return cm_ret(cm_call_handle(a->dev, XRXE_CTRL_CM_NOTIFY, a->handle, (uint32_t)event));
}

int cm_id_move(struct cm_id *id, struct cm_channel *to)
{
	for (struct cm_attach *a = id->att; a; a = a->anext) {
		struct cm_reg *reg;
		int ret = cm_channel_reg(to, a->dev, &reg);

		if (!ret)
			ret = cm_call_handle(a->dev, XRXE_CTRL_CM_MIGRATE_ID, a->handle, reg->handle);
		if (ret)
			return ret;
	}
	return 0;
}

int rdma_migrate_id(struct rdma_cm_id *rid, struct rdma_event_channel *channel)
{
	struct rdma_event_channel *old = NULL;
	struct cm_id *id;
	bool sync = !channel;
	int ret;

	if (!rid)
		return cm_err(EINVAL);
	id = to_cm_id(rid);
	if (id->sync && !channel)
		return cm_err(EINVAL);
	if (sync) {
		channel = rdma_create_event_channel();
		if (!channel)
			return -1;
	}
	ret = cm_id_move(id, to_cm_channel(channel));
	if (ret) {
		if (sync)
			rdma_destroy_event_channel(channel);
		return cm_err(-ret);
	}
	if (id->sync) {
		if (rid->event) {
			rdma_ack_cm_event(rid->event);
			rid->event = NULL;
		}
		old = rid->channel;
	}
	/* Events already queued on the old channel stay there (the kernel
	 * moves them; a socket cannot): as stock documents, migrating while
	 * events are being processed is the caller's race. */
	pthread_mutex_lock(&id->mut);
	id->sync = sync;
	rid->channel = channel;
	while (id->completed < id->delivered)
		pthread_cond_wait(&id->cond, &id->mut);
	pthread_mutex_unlock(&id->mut);
	if (old)
		rdma_destroy_event_channel(old);
	return 0;
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return cm_sa_port(&id->route.addr.src_addr);
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return cm_sa_port(&id->route.addr.dst_addr);
}
