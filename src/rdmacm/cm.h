/* SPDX-License-Identifier: MIT */
/*
 * Internals of the RDMA CM shim (librdmacm.so.1 for xrxe; docs/rdmacm-shim.md).
 *
 * The split is stock librdmacm's over the kernel's ucma: this library keeps
 * struct rdma_cm_id and drives the application's QP with ibv_modify_qp; the
 * daemon (include/xrxe/cm_abi.h) runs the IB CM, port spaces, listeners and
 * address/route resolution. Devices are the ibv_contexts of the public
 * libibverbs API (at run time xrxe's own libibverbs.so.1): "xrxe_IFACE" is
 * served by the daemon behind XRXE_RUN_DIR/IFACE.sock, to which this library
 * opens one CM control connection of its own.
 *
 * Visibility: compiled with -fvisibility=hidden; rdma_cma.h and rsocket.h are
 * included with default visibility pushed, so the functions we define with
 * their prototypes are exported, and the version script puts each name in its
 * node. Everything declared here is internal (cm_ prefix, hidden).
 */
#ifndef XRXE_RDMACM_CM_H
#define XRXE_RDMACM_CM_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#pragma GCC visibility push(default)
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#pragma GCC visibility pop

#include "xrxe/abi.h"
#include "xrxe/cm_abi.h"

#define cm_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* rdma-core's convention: -1 and errno. */
static inline int cm_err(int err)
{
	errno = err;
	return -1;
}

/* An internal result (0 or -errno) as a public one (0, or -1 and errno). */
static inline int cm_ret(int ret)
{
	return ret < 0 ? cm_err(-ret) : 0;
}

/* --- logging and the control connection: src/shim/ctrl.h, shared with the
 * verbs shim (XRXE_LOG=debug|info|warn|error; lines "librdmacm (xrxe): ...").
 * The CM connection to a daemon is a struct xrxe_conn: its lock is
 * initialised with the device and kept, the socket opened with
 * xrxe_conn_connect (again after a failed CM_OPEN). */
#include "shim/ctrl.h"

#define cm_error(...) shim_err(__VA_ARGS__)
#define cm_warn(...) shim_warn(__VA_ARGS__)
#define cm_info(...) xrxe_shim_log(XRXE_SHIM_INFO, __VA_ARGS__)
#define cm_dbg(...) shim_dbg(__VA_ARGS__)

/* --- devices and daemons (device.c) ------------------------------------------ */
struct cm_dev {
	struct cm_dev *next;
	struct ibv_device *ibdev;
	char name[IBV_SYSFS_NAME_MAX];
	char sock_path[108];
	bool present; /* in the last device list */
	_Atomic bool dead; /* the daemon went away: IDs got DEVICE_REMOVAL */
	/* Opened on first use, then kept for the life of the process (stock
	 * keeps its device contexts too; the PD outlives every ID so that an
	 * application still holding id->pd never sees it freed). */
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	int max_qpsize;
	uint8_t max_init_depth, max_resp_res;
	/* The CM control connection, opened lazily (first request CM_OPEN). */
	struct xrxe_conn conn;
	bool conn_open;
};

/* Make sure at least one xrxe device exists (stock's ucma_init): 0 or -ENODEV. */
int cm_init(void);
/* Device of an ibv_context we handed out, or NULL. */
struct cm_dev *cm_dev_of_verbs(struct ibv_context *verbs);
/* The device whose GID table holds addr (AF_INET/AF_INET6), verbs context,
 * default PD and CM connection ready. -EADDRNOTAVAIL if addr is no local
 * address, -ENODEV if it is one but no xrxe daemon serves it. */
int cm_dev_for_addr(const struct sockaddr *addr, struct cm_dev **out);
/* Every live device, ready, for wildcard listeners: a malloc'd array (free it),
 * count in *n. -ENODEV when there is none. */
int cm_dev_all(struct cm_dev ***out, int *n);
/* Verbs context, default PD and CM connection of dev: 0 or -errno. */
int cm_dev_ready(struct cm_dev *dev);
/* One CM request to dev's daemon. A dead daemon is -ENODEV (and reported to
 * the IDs on it as DEVICE_REMOVAL, once). */
int cm_call(struct cm_dev *dev, uint16_t op, void *req, size_t req_len, const int *fds,
	    unsigned int nfds, void *rep, size_t rep_len);
/* Simple request {hdr, handle, arg} (struct xrxe_ctrl_cm_handle_arg). */
int cm_call_handle(struct cm_dev *dev, uint16_t op, uint32_t handle, uint32_t arg);
/* dev's first address of family (IPv6: not link-local) from its GID table,
 * port 0: the address a loopback destination stands for. */
int cm_dev_own_addr(struct cm_dev *dev, int family, struct sockaddr_storage *out);
/* The daemon is gone: mark dev dead and report DEVICE_REMOVAL to its IDs. */
void cm_dev_lost(struct cm_dev *dev);
/* Non-blocking check of dev's control connection for a hang-up. */
bool cm_dev_hung_up(struct cm_dev *dev);

/* --- addresses (addr.c) ----------------------------------------------------- */
/* sizeof the sockaddr for AF_INET/AF_INET6, else 0 (AF_IB is not supported:
 * stock answers the same when the kernel lacks AF_IB). */
socklen_t cm_sa_len(const struct sockaddr *sa);
/* 0.0.0.0/8, :: (the kernel's cma_zero_addr) */
bool cm_sa_is_any(const struct sockaddr *sa);
/* A zero or loopback address: the kernel's cma_any_addr. Such an address
 * names no device: rdma_bind_addr to it binds on none (a listener on it
 * hears what one on its family's wildcard would), and
 * rdma_resolve_addr to it loops back on the ID's device or the first. */
bool cm_sa_is_wild(const struct sockaddr *sa);
/* The daemon's form of a wild address: its family's wildcard, same port
 * (the daemon binds and listens on wildcards and its own addresses only). */
void cm_sa_to_wildcard(struct sockaddr_storage *ss);
uint16_t cm_sa_port(const struct sockaddr *sa); /* network order */
void cm_sa_set_port(struct sockaddr *sa, uint16_t port_be);
/* The RoCEv2 GID of an IP address (IPv4-mapped for AF_INET). */
void cm_sa_gid(const struct sockaddr *sa, union ibv_gid *gid);
int cm_addr_from_sa(struct xrxe_cm_addr *a, const struct sockaddr *sa);
/* 0, or -EINVAL for family 0/unknown (ss untouched). */
int cm_addr_to_sa(const struct xrxe_cm_addr *a, struct sockaddr_storage *ss);
/* The source address the kernel's routing table picks towards dst (port 0). */
int cm_route_src(const struct sockaddr *dst, struct sockaddr_storage *src);
/* Is addr assigned to an interface of this network namespace? */
bool cm_sa_is_local(const struct sockaddr *sa);
/* 127.0.0.0/8, ::1 (the kernel's cma_loopback_addr) */
bool cm_sa_is_loopback(const struct sockaddr *sa);

/* --- event channels (channel.c) --------------------------------------------- */
/* A channel's registration with one daemon (CM_CREATE_CHANNEL). */
struct cm_reg {
	struct cm_reg *next;
	struct cm_dev *dev;
	uint32_t handle;
	uint64_t cookie;
};

struct cm_channel {
	struct rdma_event_channel ch; /* what the application sees: ch.fd */
	/* The socketpair's other end: handed to every daemon the channel is
	 * used with, and kept so the library can queue events of its own
	 * (DEVICE_REMOVAL when a daemon dies) behind the daemons'. */
	int peer_fd;
	/* Wakes blocked readers when a daemon joins the channel: they then
	 * watch its control connection too. */
	int wake_fd;
	pthread_mutex_t lock; /* regs, readers, closed */
	struct cm_reg *regs;
	/* Threads inside rdma_get_cm_event. A channel destroyed under a
	 * blocked reader stays allocated, its other end open, until that
	 * reader leaves: stock's reader blocks on in the kernel then, and
	 * rping's CM thread, for one, relies on never waking up. */
	int readers;
	bool closed;
};

static inline struct cm_channel *to_cm_channel(struct rdma_event_channel *ch)
{
	return cm_container_of(ch, struct cm_channel, ch);
}

/* The channel's registration with dev, made on first use: 0 or -errno. */
int cm_channel_reg(struct cm_channel *ch, struct cm_dev *dev, struct cm_reg **out);
struct cm_reg *cm_channel_find_reg(struct cm_channel *ch, uint64_t cookie);
/* Next message of the channel (blocking or not per the fd's O_NONBLOCK; a
 * daemon of the channel that hangs up meanwhile is reported): 0 or -errno. */
int cm_channel_read(struct cm_channel *ch, struct xrxe_cm_event_msg *msg);
/* Queue a library-made event (cookie 0, handle = the ID's lid). */
void cm_channel_inject(struct cm_channel *ch, uint32_t lid, enum rdma_cm_event_type event,
		       int status);

/* --- IDs (id.c) --------------------------------------------------------------- */
/* The daemon-side ID of an rdma_cm_id on one device. A wildcard listener has
 * one per device, every other attached ID exactly one. */
struct cm_attach {
	struct cm_attach *hnext; /* (dev, handle) hash chain, under the table lock */
	struct cm_attach *anext; /* the ID's attachments */
	struct cm_id *id;
	struct cm_dev *dev;
	uint32_t handle;
};

/* rdma_set_option before the daemon-side ID exists: replayed at attach. */
struct cm_opt {
	struct cm_opt *next;
	int level, optname;
	uint32_t optlen;
	uint8_t optval[sizeof(((struct xrxe_ctrl_cm_set_option *)0)->optval)];
};

struct cm_mc {
	struct cm_mc *next;
	struct cm_id *id;
	void *context;
	uint64_t cookie;
	uint16_t join_flags;
	union ibv_gid mgid;
	uint16_t mlid;
	socklen_t addrlen;
	struct sockaddr_storage addr;
	uint32_t delivered, completed; /* events, under id->mut */
	pthread_cond_t cond;
};

struct cm_id {
	struct rdma_cm_id id; /* what the application sees */
	struct cm_id *lnext, *lprev; /* every ID, for device loss */
	uint32_t lid; /* library-wide number, names the ID in injected events */
	pthread_mutex_t mut;
	pthread_cond_t cond;
	/* Events handed to the application and acknowledged (stock's
	 * events_reported / events_completed): rdma_destroy_id waits for
	 * completed == delivered. Under mut. */
	uint32_t delivered, completed;
	bool sync; /* private channel: calls wait for their own event */
	struct cm_dev *dev; /* id.verbs's device; NULL for a wildcard listener */
	struct cm_attach *att; /* list; natt entries */
	unsigned int natt;
	bool bound;     /* rdma_bind_addr (or an implicit bind) done */
	bool listening;
	bool removal;   /* DEVICE_REMOVAL reported (by the daemon or the library) */
	bool removal_injected;
	int connect_error;
	void *connect; /* rdma_create_ep's ai_connect, prepended to private data */
	size_t connect_len;
	struct ibv_qp_init_attr *qp_init_attr; /* passive rdma_create_ep */
	uint8_t initiator_depth, responder_resources;
	struct ibv_ece local_ece, remote_ece;
	struct cm_mc *mc_list; /* under mut */
	struct cm_opt *opts;
};

static inline struct cm_id *to_cm_id(struct rdma_cm_id *id)
{
	return cm_container_of(id, struct cm_id, id);
}

/* The ID's single attachment, or NULL (not attached, or a wildcard listener). */
static inline struct cm_attach *cm_id_att(struct cm_id *id)
{
	return id->dev ? id->att : NULL;
}

/* rdma_create_id with an explicit QP type (rdma_create_ep): 0 or -errno. */
int cm_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		 enum rdma_port_space ps, enum ibv_qp_type qp_type);
struct cm_id *cm_id_alloc(struct rdma_event_channel *channel, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qp_type, int *err);
void cm_id_free(struct cm_id *id);
/* Create the daemon-side ID on dev (and make dev the ID's device unless
 * listener_only): 0 or -errno. */
int cm_id_attach(struct cm_id *id, struct cm_dev *dev, bool listener_only);
/* A child of a CONNECT_REQUEST: the daemon created it (handle on dev). */
int cm_id_adopt(struct cm_id *id, struct cm_dev *dev, uint32_t handle);
/* Look up the ID behind (dev, handle) and count one event delivered to it;
 * NULL if it is gone. */
struct cm_id *cm_id_get_for_event(struct cm_dev *dev, uint32_t handle);
/* The same for library-made events. */
struct cm_id *cm_id_get_by_lid(uint32_t lid);
/* Acknowledge one delivered event (rdma_ack_cm_event, or one swallowed). */
void cm_id_complete_event(struct cm_id *id);
/* Update id->route from the daemon's: 0 or -ENOMEM. */
int cm_id_set_route(struct cm_id *id, const struct xrxe_cm_route *r);
/* rdma_migrate_id's daemon part. */
int cm_id_move(struct cm_id *id, struct cm_channel *to);
/* Device loss: queue DEVICE_REMOVAL for every ID on dev. */
void cm_ids_lost(struct cm_dev *dev);

/* --- connections (conn.c) ------------------------------------------------ */
/* Wait for the event a call on a synchronous ID produces (stock's ucma_complete). */
int cm_complete(struct cm_id *id);
int cm_qp_to_err(struct rdma_cm_id *id);
/* Active side, CONNECT_RESPONSE on an ID with a QP: RTR, RTS, RTU. 0 or -1/errno. */
int cm_conn_resp(struct cm_id *id, const struct xrxe_cm_ece *ece);

/* --- QPs (qp.c) ------------------------------------------------------------- */
void cm_destroy_cqs(struct rdma_cm_id *id);

/* --- multicast (mcast.c) ------------------------------------------------------ */
struct cm_mc *cm_mc_get_for_event(struct cm_id *id, uint64_t cookie);
void cm_mc_free_all(struct cm_id *id);

#endif /* XRXE_RDMACM_CM_H */
