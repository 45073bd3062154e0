/* SPDX-License-Identifier: MIT */
/*
 * The shim <-> daemon contract: the control protocol on /run/xrxe/IFACE.sock,
 * the shared device page, and the layout of the shared-memory rings (SQ, RQ,
 * SRQ, CQ) and their elements.
 *
 * Ownership (the rxe model, docs/facts/rxe.md §4): the daemon creates every shared
 * region (memfd) and passes it with SCM_RIGHTS; the shim maps it. Rings carry
 * masked u32 indices on separate 128-byte lines; the party that owns an index
 * keeps a private copy and only publishes it; the other party masks whatever
 * it reads. Nothing the application can write is trusted by the daemon: a
 * misbehaving application can only hurt itself.
 *
 * The daemon and the shim are built from the same tree, but a stale shim can
 * meet a newer daemon: HELLO carries XRXE_ABI_VERSION and a mismatch is refused
 * with EPROTO.
 *
 * Types from rdma-core's <infiniband/verbs.h> (ibv_wc, ibv_qp_attr, enums) are
 * used as they are: the shim must produce exactly those, and the transport
 * speaks their status and opcode values, so a private copy would only add a
 * translation layer.
 */
#ifndef XRXE_ABI_H
#define XRXE_ABI_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "xrxe/steer.h"

#define XRXE_ABI_VERSION 4 /* 3: the SQ doorbell ring (xrxe/ring.h), XRC, ODP; 4: ring slabs, IMPORT, raw packet QPs, tag matching */

/* Control socket: XRXE_RUN_DIR/IFACE.sock, SOCK_SEQPACKET, one per daemon.
 * The shim lists one device per socket that accepts a connection (a stale
 * socket refuses: not listed), skips daemons whose SO_PEERCRED pid lives in
 * another network namespace (XRXE_ALL_NETNS=1 keeps them), and honours an
 * XRXE_RUN_DIR environment variable for tests (the daemon does not). */
#define XRXE_RUN_DIR "/run/xrxe"
/* The daemon's network-namespace marker: an abstract AF_UNIX name
 * ("\0" XRXE_NETNS_MARKER IFACE) it holds in its own network namespace,
 * where abstract names live. The shim lists a daemon only when that name is
 * taken in the caller's namespace (src/verbs/device.c), which any user can
 * test; the daemon itself refuses HELLO / CM_OPEN from another namespace. */
#define XRXE_NETNS_MARKER "xrxe-netns/"
#define XRXE_CTRL_SOCK_SUFFIX ".sock"
/* Verbs device name for the daemon of IFACE: "xrxe_IFACE". */
#define XRXE_DEV_PREFIX "xrxe_"

/* ---------------------------------------------------------------------------
 * Limits the daemon advertises (device attributes are sent in the device page;
 * these are the compile-time ceilings both sides size arrays by).
 * ------------------------------------------------------------------------- */
#define XRXE_GID_TABLE_LEN 16     /* ports have few addresses; rxe allows 1024 */
#define XRXE_MAX_SGE 32           /* max_send_sge = max_recv_sge (rxe: 32) */
#define XRXE_MAX_INLINE 512       /* max_inline_data (rxe: 512) */
#define XRXE_MAX_QP_WR 16384      /* max_qp_wr */
/* max_cqe: 2^20 - 1 (rxe: 32 767, a ConnectX: 2^22 - 1). One CQ for many QPs
 * is common: ib_write_bw -q 4096 asks for 128 x 4 096 = 524 288 entries. The
 * largest ring, 2^20 slots of 64 bytes (64 MiB, backed only as it is
 * written), fits an ordinary user's default ring_bytes quota (256 MiB). */
#define XRXE_MAX_CQE 1048575
#define XRXE_MAX_RD_ATOMIC 128    /* max_qp_rd_atom (rxe: 128) */
#define XRXE_MAX_CTRL_MSG 4096    /* largest control message, either direction */
#define XRXE_MAX_CTRL_FDS 4       /* largest SCM_RIGHTS array */

/* ---------------------------------------------------------------------------
 * Rings (docs/facts/rxe.md §4.1: rdma-core's struct rxe_queue_buf layout)
 *
 * Capacity is nslots - 1: empty when producer == consumer, full when
 * (producer + 1) & index_mask == consumer. Element i lives at
 * data + (i << log2_elem_size). Indices are stored masked.
 *
 * Ordering (docs/facts/rxe.md §4.2): the producer writes the element, then
 * store-release the producer index; the consumer load-acquires the producer
 * index, reads the element, then store-releases the consumer index.
 * ------------------------------------------------------------------------- */
struct xrxe_ring {
	/* line 0: written once by the daemon at creation, read-only afterwards */
	uint32_t log2_elem_size;
	uint32_t index_mask;
	/* CQ only, written by the shim: XRXE_CQ_NOTIFY_* armed by
	 * ibv_req_notify_cq; the daemon clears it (atomic exchange) when it
	 * signals the completion channel. No syscall to arm. */
	uint32_t notify;
	/* Written by the daemon: XRXE_RING_F_* */
	uint32_t flags;
	uint32_t pad_1[28];
	/* line 1 */
	uint32_t producer;
	uint32_t pad_2[31];
	/* line 2 */
	uint32_t consumer;
	uint32_t pad_3[31];
	/* line 3 onwards */
	uint8_t data[];
};
_Static_assert(offsetof(struct xrxe_ring, notify) == 8, "ring notify offset");
_Static_assert(offsetof(struct xrxe_ring, producer) == 128, "ring producer on its own line");
_Static_assert(offsetof(struct xrxe_ring, consumer) == 256, "ring consumer on its own line");
_Static_assert(offsetof(struct xrxe_ring, data) == 384, "ring data offset");

enum xrxe_cq_notify {
	XRXE_CQ_NOTIFY_NONE = 0,
	XRXE_CQ_NOTIFY_NEXT = 1,      /* any next completion */
	XRXE_CQ_NOTIFY_SOLICITED = 2, /* next solicited or error completion */
};

enum xrxe_ring_flags {
	XRXE_RING_F_OVERRUN = 1u << 0, /* CQ overflowed: IBV_EVENT_CQ_ERR (IBA 11.4.2.1) */
	XRXE_RING_F_DEAD = 1u << 1,    /* the owning QP/CQ was torn down by the daemon */
};

/* Bytes a ring of nslots elements of elem_size bytes occupies (page-rounded by
 * the creator). */
static inline size_t xrxe_ring_bytes(uint32_t nslots, uint32_t elem_size)
{
	return sizeof(struct xrxe_ring) + (size_t)nslots * elem_size;
}

/* Where a ring lives (CREATE_QP, CREATE_CQ, RESIZE_CQ, CREATE_SRQ replies).
 * Small rings are carved from slabs: memfds of slab_size bytes that hold
 * several rings of the same connection (never another application's), so
 * 65 536 QPs need a few hundred mappings, not 131 072 (the kernel's default
 * vm.max_map_count is 65 530). The reply passes the slab's fd with every
 * ring; the shim maps a slab once (keyed by slab, which the daemon never
 * reuses within a connection), closes the fds of slabs it has mapped, and
 * unmaps a slab when it has destroyed the last ring it carved from it. A
 * ring's bytes are [offset, offset + size) of the slab. slab 0: the fd is
 * the ring's own memfd (offset 0, size == slab_size). The slab's other bytes
 * are the same application's other rings: the daemon trusts none of them. */
struct xrxe_ring_loc {
	uint32_t slab; /* >= 1: slab number within the connection; 0: a memfd of its own */
	uint32_t pad;
	uint64_t slab_size; /* bytes of the fd to map (from offset 0) */
	uint64_t offset;    /* of the ring within the fd */
	uint64_t size;      /* bytes of the ring */
};

/* ---------------------------------------------------------------------------
 * Ring elements
 * ------------------------------------------------------------------------- */

/* Same layout as struct ibv_sge. */
struct xrxe_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};
_Static_assert(sizeof(struct xrxe_sge) == sizeof(struct ibv_sge), "sge layout");

/* Send queue element. Element size = power of two >= 72 + max(max_send_sge *
 * 16, max_inline_data). The daemon copies a WQE out of the ring before it
 * acts on it (the application may scribble on the slot afterwards) and keeps
 * all transport state (PSNs, progress) privately. */
struct xrxe_send_wqe {
	uint64_t wr_id;
	uint32_t opcode;     /* enum ibv_wr_opcode */
	uint32_t send_flags; /* enum ibv_send_flags */
	uint32_t ex;         /* imm_data (network order) or invalidate_rkey */
	uint32_t num_sge;    /* sge[] entries; with IBV_SEND_INLINE: 0 */
	uint32_t inline_len; /* with IBV_SEND_INLINE: bytes in inline_data[] */
	uint32_t pad;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t pad;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
			uint32_t pad;
		} atomic;
		struct {
			uint32_t ah;         /* AH handle from XRXE_CTRL_CREATE_AH */
			uint32_t remote_qpn;
			uint32_t remote_qkey;
			uint32_t pad;
		} ud;
		/* IBV_WR_BIND_MW (type 1 through ibv_bind_mw, type 2 through
		 * ibv_wr_bind_mw / post_send): bind the window named by mw_rkey
		 * (its current R_Key) to [addr, addr + length) of the MR named
		 * by mr_lkey, with access (IBV_ACCESS_REMOTE_*), and give it
		 * new_rkey (same index, new key byte: ibv_inc_rkey). */
		struct {
			uint32_t mw_rkey;
			uint32_t new_rkey;
			uint32_t mr_lkey;
			uint32_t access;
			uint64_t addr;
			uint64_t length;
		} bind;
		/* XRXE_WR_FLUSH (rdma-core >= 45 ibv_wr_flush): FETH placement
		 * type (XRXE_FLUSH_GLOBAL/PERSISTENT) and selectivity level
		 * (XRXE_FLUSH_RANGE/MR), RETH va/rkey/length. */
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t length;
			uint8_t type;
			uint8_t level;
			uint8_t pad[14];
		} flush;
	} wr;
	/* IBV_QPT_XRC_SEND: the XRC SRQ at the target the message goes to
	 * (ibv_wr_set_xrc_srqn / wr.qp_type.xrc.remote_srqn), carried in
	 * every request's XRCETH (docs/xrc.md) */
	uint32_t xrc_srqn;
	uint32_t rsvd;
	union {
		struct xrxe_sge sge[0];
		uint8_t inline_data[0];
	};
};
_Static_assert(offsetof(struct xrxe_send_wqe, wr) == 32, "send wqe wr offset");
_Static_assert(sizeof(((struct xrxe_send_wqe *)0)->wr) == 32, "send wqe wr union is 32 bytes");
_Static_assert(offsetof(struct xrxe_send_wqe, wr.bind.addr) == 48, "bind addr offset");
_Static_assert(offsetof(struct xrxe_send_wqe, wr.bind.length) == 56, "bind length offset");
_Static_assert(offsetof(struct xrxe_send_wqe, wr.flush.type) == 48, "flush type offset");
_Static_assert(offsetof(struct xrxe_send_wqe, xrc_srqn) == 64, "xrc_srqn offset");

/* Values of rdma-core >= 45 (FLUSH, IBA 1.5 annex A19) that rdma-core 44's
 * verbs.h, which the shim is built against, does not define yet. The numbers
 * are rdma-core's own, so programs built against a newer header interoperate:
 * ibv_wr_opcode, ibv_wc_opcode, ibv_access_flags, ibv_qp_create_send_ops_flags,
 * the ibv_wr_flush placement types and selectivity levels, and the
 * IB_UVERBS_DEVICE_* bits of ibv_device_attr_ex.device_cap_flags_ex. */
#define XRXE_WR_FLUSH 14u
#define XRXE_WC_FLUSH 8u
#define XRXE_ACCESS_FLUSH_GLOBAL (1u << 8)
#define XRXE_ACCESS_FLUSH_PERSISTENT (1u << 9)
#define XRXE_QP_EX_WITH_FLUSH (1ull << 11)
#define XRXE_FLUSH_GLOBAL 1u     /* placement type: global visibility */
#define XRXE_FLUSH_PERSISTENT 2u /* placement type: persistence */
#define XRXE_FLUSH_RANGE 0u      /* selectivity: the RETH range */
#define XRXE_FLUSH_MR 1u         /* selectivity: the whole memory region */
#define XRXE_DEVICE_FLUSH_GLOBAL (1ull << 38)
#define XRXE_DEVICE_FLUSH_PERSISTENT (1ull << 39)
#define XRXE_DEVICE_ATOMIC_WRITE (1ull << 40)
_Static_assert(sizeof(struct xrxe_send_wqe) == 72, "send wqe header size");

/* Receive queue (and SRQ) element: power of two >= 16 + max_recv_sge * 16. */
struct xrxe_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pad;
	struct xrxe_sge sge[];
};
_Static_assert(sizeof(struct xrxe_recv_wqe) == 16, "recv wqe header size");

/* Completion queue element: exactly struct ibv_wc, padded to 64 bytes. */
struct xrxe_cqe {
	struct ibv_wc wc;
	uint64_t timestamp_ns; /* CLOCK_MONOTONIC (ns) when the daemon wrote it */
	/* Tag matching (IBV_WC_TM_* opcodes): ibv_wc_tm_info.tag (the TMH's
	 * tag of a matched receive); its priv (the TMH's app_ctx) is in
	 * wc.imm_data, which TM receives do not use otherwise. 0 else. */
	uint64_t tm_tag;
};
_Static_assert(sizeof(struct ibv_wc) == 48, "ibv_wc layout of rdma-core 44");
_Static_assert(sizeof(struct xrxe_cqe) == 64, "cqe size");

/* ---------------------------------------------------------------------------
 * Device page: one per daemon, a memfd every shim maps read-only.
 * Port state and the GID table change at run time (addresses come and go):
 * readers use the seqlock (even = stable; re-read if it changed or is odd).
 * ------------------------------------------------------------------------- */
struct xrxe_gid_slot {
	union ibv_gid gid;
	uint32_t valid;    /* 0: empty slot (ibv_query_gid returns zeros) */
	uint32_t gid_type; /* enum ibv_gid_type: IBV_GID_TYPE_ROCE_V2 */
	uint32_t ifindex;  /* ndev_ifindex of ibv_gid_entry */
	uint32_t pad;
};

struct xrxe_dev_page {
	uint32_t abi_version;
	uint32_t seq;              /* seqlock over port and gids */
	/* Doorbell protocol (see XRXE_CTRL_HELLO): the daemon sets this before it
	 * sleeps; after publishing a producer index the shim issues a full fence
	 * and, if it reads 1, writes the doorbell eventfd. */
	uint32_t daemon_sleeping;
	/* The CPU the daemon's loop last ran on, plus one (0: not known). A
	 * shim polling an empty CQ on that CPU while daemon_sleeping is 0
	 * yields sooner: the daemon is runnable there and needs the CPU to
	 * produce the completion. A hint; nothing depends on it. */
	uint32_t daemon_cpu;
	char ifname[16];
	uint8_t mac[6];
	uint8_t pad1[2];
	uint32_t ifindex;
	uint64_t node_guid;        /* EUI-64 from the MAC, as rxe derives it; __be64,
				    * == dev_attr.node_guid (ibv_get_device_guid) */
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	uint8_t pad2[4];
	struct xrxe_gid_slot gids[XRXE_GID_TABLE_LEN];
};

/* ---------------------------------------------------------------------------
 * Control protocol: SOCK_SEQPACKET, one request -> one reply, in order.
 * Every message starts with xrxe_ctrl_hdr. Replies carry status 0 or -errno
 * and the request's seq. File descriptors travel as SCM_RIGHTS.
 * The daemon authenticates the peer with SO_PEERCRED at accept time and
 * tears down everything a connection owns when it closes (the application
 * exited or crashed).
 *
 * Validation (the daemon trusts nothing): hdr.length must equal the bytes
 * received and the exact size of the op's request struct, and the request
 * must carry exactly the fds its op lists, else -EINVAL (all received fds are
 * closed); an unknown op is -EINVAL too. Handles are connection-local: one
 * that is not in this connection's table, or names an object of another
 * type, is -EBADF. The reply of a failed request is the bare header.
 * MODIFY_QP with IBV_QP_AV and CREATE_AH may take up to ~1 s to answer while
 * the neighbour's MAC is resolved (ARP/ND); the daemon keeps serving others
 * meanwhile, and answers -EHOSTUNREACH if it stays unresolved.
 * ------------------------------------------------------------------------- */
enum xrxe_ctrl_op {
	XRXE_CTRL_HELLO = 1,
	XRXE_CTRL_ALLOC_PD,
	XRXE_CTRL_DEALLOC_PD,
	XRXE_CTRL_REG_MR,
	XRXE_CTRL_DEREG_MR,
	XRXE_CTRL_CREATE_CHANNEL, /* completion channel */
	XRXE_CTRL_DESTROY_CHANNEL,
	XRXE_CTRL_CREATE_CQ,
	XRXE_CTRL_DESTROY_CQ,
	XRXE_CTRL_RESIZE_CQ,
	XRXE_CTRL_CREATE_QP,
	XRXE_CTRL_MODIFY_QP,
	XRXE_CTRL_QUERY_QP,
	XRXE_CTRL_DESTROY_QP,
	XRXE_CTRL_CREATE_AH,
	XRXE_CTRL_DESTROY_AH,
	XRXE_CTRL_CREATE_SRQ,
	XRXE_CTRL_MODIFY_SRQ,
	XRXE_CTRL_QUERY_SRQ,
	XRXE_CTRL_DESTROY_SRQ,
	XRXE_CTRL_ATTACH_MCAST,
	XRXE_CTRL_DETACH_MCAST,
	XRXE_CTRL_STATS, /* for `xrxe stats/qp`: counters and per-QP state, text or JSON */
	XRXE_CTRL_CC,    /* for `xrxe cc`: congestion-control parameters, show or set */
	XRXE_CTRL_ALLOC_MW,
	XRXE_CTRL_DEALLOC_MW,
	XRXE_CTRL_REREG_MR,
	/* Connection management (the librdmacm shim): include/xrxe/cm_abi.h */
	XRXE_CTRL_CM_OPEN,
	XRXE_CTRL_CM_CREATE_CHANNEL,
	XRXE_CTRL_CM_DESTROY_CHANNEL,
	XRXE_CTRL_CM_CREATE_ID,
	XRXE_CTRL_CM_DESTROY_ID,
	XRXE_CTRL_CM_BIND,
	XRXE_CTRL_CM_RESOLVE_ADDR,
	XRXE_CTRL_CM_RESOLVE_ROUTE,
	XRXE_CTRL_CM_LISTEN,
	XRXE_CTRL_CM_CONNECT,
	XRXE_CTRL_CM_ACCEPT,
	XRXE_CTRL_CM_REJECT,
	XRXE_CTRL_CM_DISCONNECT,
	XRXE_CTRL_CM_ESTABLISH,
	XRXE_CTRL_CM_INIT_QP_ATTR,
	XRXE_CTRL_CM_NOTIFY,
	XRXE_CTRL_CM_SET_OPTION,
	XRXE_CTRL_CM_JOIN_MCAST,
	XRXE_CTRL_CM_LEAVE_MCAST,
	XRXE_CTRL_CM_MIGRATE_ID,
	XRXE_CTRL_CM_QUERY,
	/* XRC (docs/xrc.md) */
	XRXE_CTRL_OPEN_XRCD,
	XRXE_CTRL_CLOSE_XRCD,
	XRXE_CTRL_CREATE_XRC_SRQ,
	XRXE_CTRL_CREATE_XRC_TGT,
	XRXE_CTRL_OPEN_QP,
	XRXE_CTRL_ODP_OPEN, /* on-demand paging: the process's memory (below) */
	XRXE_CTRL_IMPORT,   /* ibv_import_pd / ibv_import_mr: a handle's object (below) */
	XRXE_CTRL_CREATE_FLOW, /* raw packet QPs: ibv_create_flow (below) */
	XRXE_CTRL_DESTROY_FLOW,
	XRXE_CTRL_CREATE_WQ, /* RSS: receive work queues, indirection tables, RSS QPs */
	XRXE_CTRL_MODIFY_WQ,
	XRXE_CTRL_DESTROY_WQ,
	XRXE_CTRL_CREATE_RWQ_IND_TBL,
	XRXE_CTRL_DESTROY_RWQ_IND_TBL,
	XRXE_CTRL_CREATE_RSS_QP,
	XRXE_CTRL_CREATE_TM_SRQ, /* tag matching (below) */
	XRXE_CTRL_SRQ_OP,
	XRXE_CTRL_OP_COUNT,
};

struct xrxe_ctrl_hdr {
	uint16_t op;     /* enum xrxe_ctrl_op */
	uint16_t flags;
	uint32_t length; /* whole message, header included */
	uint32_t seq;
	int32_t status;  /* replies: 0 or -errno */
};

/* HELLO: must be the first request of a connection (every other request
 * before it fails with -EPROTO, except STATS). Request fds, exactly two:
 * [0] the process's registered-memory memfd (see REG_MR): a memfd open
 *     read-write and either created with MFD_ALLOW_SEALING (the daemon then
 *     adds F_SEAL_SHRINK itself) or already carrying F_SEAL_SHRINK. A file
 *     that could shrink under the daemon's mapping would turn the daemon's
 *     next access into SIGBUS, so anything else is refused with -EINVAL;
 * [1] the write end of the async-event pipe (struct xrxe_async_event
 *     records). The daemon sets O_NONBLOCK on it (the shim only reads the
 *     other end) and drops events when the pipe is full.
 * Reply fds: [0] the device page (sealed: it can only be mapped PROT_READ),
 * [1] the doorbell eventfd, [2] the doorbell ring memfd (map RW; xrxe/ring.h:
 * which QPs have new send WQEs). The doorbell is per connection: an
 * application that reads the eventfd (swallowing wake-ups) or scribbles on its
 * ring only delays its own work. */
struct xrxe_ctrl_hello {
	struct xrxe_ctrl_hdr hdr;
	uint32_t abi_version;
	uint32_t pad;
};
struct xrxe_ctrl_hello_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t abi_version;
	uint32_t dev_page_size;
};

/* Generic object handle request/reply (DEALLOC_PD, DEREG_MR, DESTROY_*). */
struct xrxe_ctrl_handle {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t pad;
};

/* ALLOC_PD request: struct xrxe_ctrl_hdr alone; reply: struct xrxe_ctrl_handle. */

/* REG_MR. Registered memory (docs/architecture.md "Shared memory"): the shim backs the
 * pages of [addr, addr+length) with its process's memfd at file offset = the
 * page's virtual address (copy contents, mmap MAP_SHARED|MAP_FIXED over the
 * same addresses, MADV_DONTFORK), so one sparse memfd serves every MR of the
 * process and overlapping MRs share pages for free. The daemon maps the same
 * file window and reaches the application's memory without a bounce copy. */
/* ODP_OPEN: after HELLO, once per connection, before the first REG_MR or
 * REREG_MR with IBV_ACCESS_ON_DEMAND. Request: the bare header and exactly
 * one fd, the process's /proc/self/mem opened O_RDWR. The daemon reads and
 * writes on-demand-paging regions through it (pread/pwrite at the virtual
 * address), nothing else (docs/architecture.md "On-demand paging"). A file
 * that is not a procfs "mem" file open read-write is refused with -EINVAL,
 * a second ODP_OPEN with -EEXIST. An ODP region is registered by REG_MR with
 * IBV_ACCESS_ON_DEMAND in access: nothing is mapped or moved; addr 0 and
 * length UINT64_MAX (iova 0) is the implicit region of the whole address
 * space. */

/* IMPORT: ibv_import_pd and ibv_import_mr of an imported context, which
 * speaks on a duplicate of the exporter's socket, so the object is in this
 * connection's table already (docs/verbs-shim.md "Importing"). Nothing is
 * created or counted: the reply describes the object named by handle, which
 * must be of the type asked for (XRXE_IMPORT_PD or _MR), else -ENOENT as the
 * kernel answers a lookup of a handle it does not hold. */
enum { XRXE_IMPORT_PD = 1, XRXE_IMPORT_MR = 2 };
struct xrxe_ctrl_import {
	struct xrxe_ctrl_hdr hdr;
	uint32_t type;
	uint32_t handle;
};
struct xrxe_ctrl_import_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t lkey, rkey; /* an MR's keys (0 for a PD) */
	uint32_t access;
	uint64_t length;     /* an MR's length and iova */
	uint64_t iova;
};

struct xrxe_ctrl_reg_mr {
	struct xrxe_ctrl_hdr hdr;
	uint32_t pd;
	uint32_t access; /* enum ibv_access_flags (optional bits ignored) */
	uint64_t addr;   /* application virtual address */
	uint64_t length;
	uint64_t iova;   /* address remote peers use (== addr for ibv_reg_mr) */
};
struct xrxe_ctrl_reg_mr_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t pad;
};

/* REREG_MR (ibv_rereg_mr): change the translation (addr, length, iova), the
 * PD and/or the access of an MR in place, per flags (enum
 * ibv_rereg_mr_flags); fields a flag does not name are ignored. The keys stay
 * the same. -EBUSY while memory windows are bound to the MR (IBA 10.6.7.2.x:
 * a region with bound windows cannot be reregistered). With
 * IBV_REREG_MR_CHANGE_TRANSLATION the shim has already moved the new pages
 * into its memfd. Reply: struct xrxe_ctrl_reg_mr_reply (same handle). */
struct xrxe_ctrl_rereg_mr {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t flags;
	uint32_t pd;     /* IBV_REREG_MR_CHANGE_PD */
	uint32_t access; /* IBV_REREG_MR_CHANGE_ACCESS */
	uint64_t addr;   /* IBV_REREG_MR_CHANGE_TRANSLATION */
	uint64_t length;
	uint64_t iova;
};

/* ALLOC_MW (ibv_alloc_mw): a memory window of type (enum ibv_mw_type) in pd.
 * Reply: handle (for DEALLOC_MW) and the window's first R_Key. A window is
 * bound through the send queue (IBV_WR_BIND_MW, both types); DEALLOC_MW
 * (struct xrxe_ctrl_handle) invalidates it. */
struct xrxe_ctrl_alloc_mw {
	struct xrxe_ctrl_hdr hdr;
	uint32_t pd;
	uint32_t type;
};
struct xrxe_ctrl_alloc_mw_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t rkey;
};

/* CREATE_CHANNEL. Request: struct xrxe_ctrl_hdr alone, fd [0] the write end
 * of a pipe; the daemon sets O_NONBLOCK on it and writes one uint32_t CQ
 * handle per event (dropped, and counted, when the pipe is full).
 * Reply: struct xrxe_ctrl_handle. DESTROY_CHANNEL fails with -EBUSY while a
 * CQ uses the channel. */

/* CREATE_CQ / RESIZE_CQ. Reply fd: [0] the CQ ring's memfd (map RW; ring
 * says where the ring is in it, struct xrxe_ring_loc).
 * RESIZE_CQ (request: handle and cqe; channel ignored) answers with a new
 * ring: the daemon moves the unpolled CQEs into it, stops writing the old
 * one, and the shim (which holds its CQ lock across the call, so nothing is
 * polled meanwhile) swaps the mappings and reloads its consumer from the new
 * ring's consumer index. */
struct xrxe_ctrl_create_cq {
	struct xrxe_ctrl_hdr hdr;
	uint32_t cqe;     /* requested depth */
	uint32_t channel; /* channel handle, or XRXE_NO_HANDLE */
	uint32_t handle;  /* RESIZE_CQ: the CQ */
	uint32_t pad;
};
struct xrxe_ctrl_create_cq_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t cqe;       /* actual depth (capacity) */
	struct xrxe_ring_loc ring;
};
#define XRXE_NO_HANDLE 0xffffffffu

/* CREATE_QP. Reply fds: [0] SQ ring's memfd, [1] RQ ring's memfd (absent with
 * an SRQ); sq and rq say where the rings are in them (struct xrxe_ring_loc). */
struct xrxe_ctrl_create_qp {
	struct xrxe_ctrl_hdr hdr;
	uint32_t pd;
	uint32_t send_cq;
	uint32_t recv_cq;
	uint32_t srq;       /* or XRXE_NO_HANDLE */
	uint32_t qp_type;   /* enum ibv_qp_type: RC, UC, UD */
	uint32_t sq_sig_all;
	struct ibv_qp_cap cap;
};
struct xrxe_ctrl_create_qp_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t qpn;
	struct ibv_qp_cap cap; /* actual capacities */
	struct xrxe_ring_loc sq;
	struct xrxe_ring_loc rq; /* zero with an SRQ */
};

/* MODIFY_QP: attributes as rdma-core passes them. The daemon validates the
 * transition (IBA 10.3, docs/facts/rxe.md §2.11) and resolves the address vector
 * (GID -> IP, route, neighbour MAC) at INIT->RTR. Reply: the bare header.
 * A transition to RESET empties the QP's rings: the daemon stores 0 into both
 * indices of the SQ and RQ before replying, and the shim reloads its private
 * producers from them. */
struct xrxe_ctrl_modify_qp {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t attr_mask; /* enum ibv_qp_attr_mask */
	struct ibv_qp_attr attr;
};

/* QUERY_QP: request struct xrxe_ctrl_handle; reply carries the attributes. */
struct xrxe_ctrl_query_qp_reply {
	struct xrxe_ctrl_hdr hdr;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init_attr; /* pointers (qp_context, cqs, srq) are zero */
};

/* CREATE_AH: the daemon resolves the address (like MODIFY_QP with
 * IBV_QP_AV). Reply: handle names the AH in DESTROY_AH (connection-local,
 * like every handle); ah_num goes into UD WQEs (wr.ud.ah: the transport's
 * own number, as rxe's ah_num; it only works on QPs of the AH's PD). */
struct xrxe_ctrl_create_ah {
	struct xrxe_ctrl_hdr hdr;
	uint32_t pd;
	uint32_t pad;
	struct ibv_ah_attr attr;
};
struct xrxe_ctrl_create_ah_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t ah_num;
};

/* CREATE_SRQ / MODIFY_SRQ / QUERY_SRQ. Create reply fd: [0] SRQ ring's memfd
 * (ring: where, struct xrxe_ring_loc)
 * (elements are struct xrxe_recv_wqe, like an RQ; the shim produces, the
 * daemon consumes and owns the consumer index). Replies carry the granted
 * attributes (max_wr = ring capacity, max_sge, the armed srq_limit).
 * MODIFY_SRQ: IBV_SRQ_LIMIT arms the limit event (-EINVAL above the
 * capacity); IBV_SRQ_MAX_WR is -EOPNOTSUPP (no resize). DESTROY_SRQ (a
 * struct xrxe_ctrl_handle) is -EBUSY while a QP uses it. A CREATE_QP naming
 * an SRQ gets no RQ ring. */
struct xrxe_ctrl_srq {
	struct xrxe_ctrl_hdr hdr;
	uint32_t pd;        /* create */
	uint32_t handle;    /* modify, query */
	uint32_t attr_mask; /* modify: enum ibv_srq_attr_mask */
	uint32_t pad;
	struct ibv_srq_attr attr;
};
struct xrxe_ctrl_srq_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t srq_num; /* CREATE_XRC_SRQ: the number peers name (ibv_get_srq_num); else 0 */
	struct ibv_srq_attr attr;
	struct xrxe_ring_loc ring;
};

/* XRC (docs/xrc.md).
 * OPEN_XRCD (ibv_open_xrcd): fd [0] names the domain by its inode, as the
 * kernel's: every open of the same file (any process of the daemon's
 * namespace) gets the same domain; the daemon keeps a duplicate of the fd
 * while the domain exists, so the inode cannot be reused under it. oflags:
 * O_CREAT creates the domain if the file has none (else -EAGAIN), O_EXCL
 * with O_CREAT fails with -EINVAL if it exists (the kernel's values). The
 * shim passes an anonymous memfd for fd -1: a domain nobody else can name.
 * At most 64 opens per connection (-ENOMEM). Reply: struct
 * xrxe_ctrl_handle. CLOSE_XRCD (struct xrxe_ctrl_handle) always succeeds;
 * the domain lives on while XRC SRQs or target QPs use it, and an open of
 * the same file meanwhile finds it (the kernel's use count).
 * CREATE_XRC_SRQ: an SRQ (srq.pd, srq.attr as CREATE_SRQ) in domain xrcd
 * completing into cq; reply and fd as CREATE_SRQ, with srq_num.
 * CREATE_XRC_TGT (ibv_create_qp_ex, IBV_QPT_XRC_RECV): a target QP in
 * domain xrcd (qpn ignored); OPEN_QP (ibv_open_qp): a handle to the
 * target QP qpn of domain xrcd (-ENOENT otherwise). Both reply with struct
 * xrxe_ctrl_create_qp_reply and no fds (a target has no rings); the QP lives
 * until its last handle is destroyed, in whichever process. */
struct xrxe_ctrl_open_xrcd {
	struct xrxe_ctrl_hdr hdr;
	uint32_t oflags;
	uint32_t pad;
};
struct xrxe_ctrl_create_xrc_srq {
	struct xrxe_ctrl_srq srq;
	uint32_t xrcd;
	uint32_t cq;
};
struct xrxe_ctrl_xrc_qp {
	struct xrxe_ctrl_hdr hdr;
	uint32_t xrcd;
	uint32_t qpn;
};

/* Tag matching (docs/architecture.md "Tag matching").
 * CREATE_TM_SRQ (ibv_create_srq_ex, IBV_SRQT_TM): an SRQ (srq.pd, srq.attr
 * as CREATE_SRQ) with a list of max_num_tags tagged buffers (1..1024, else
 * -EINVAL) whose operations complete into cq; reply and fd as CREATE_SRQ.
 * SRQ_OP (ibv_post_srq_ops, one struct ibv_ops_wr): op is enum
 * ibv_ops_wr_opcode; ADD (tag, mask, recv_wr_id, one sge) replies with the
 * entry's handle, DEL names one, SYNC (and flags IBV_OPS_TM_SYNC) reports
 * unexp_cnt. The completion (IBV_OPS_SIGNALED) goes to the SRQ's CQ:
 * IBV_WC_TM_ADD/DEL/SYNC with wr_id, IBV_WC_TM_ERR status for a DEL of no
 * entry, IBV_WC_TM_SYNC_REQ when an ADD waits for a sync. -ENOSPC: the list
 * is full; -EINVAL: a bad op (nothing completes). */
struct xrxe_ctrl_create_tm_srq {
	struct xrxe_ctrl_srq srq;
	uint32_t cq;
	uint32_t max_num_tags;
};
struct xrxe_ctrl_srq_op {
	struct xrxe_ctrl_hdr hdr;
	uint32_t srq;
	uint32_t op;    /* enum ibv_ops_wr_opcode */
	uint32_t flags; /* enum ibv_ops_flags */
	uint32_t unexp_cnt;
	uint32_t handle; /* DEL */
	uint32_t num_sge; /* ADD: 0 or 1 */
	uint64_t wr_id;
	uint64_t recv_wr_id;
	uint64_t tag, mask;
	struct xrxe_sge sge;
};
struct xrxe_ctrl_srq_op_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle; /* ADD */
	uint32_t pad;
};

/* ATTACH_MCAST / DETACH_MCAST (UD QPs; gid a multicast GID, IPv6 ff00::/8 or
 * IPv4-mapped 224.0.0.0/4; lid ignored): the daemon joins the IP group on
 * its interface with the first member and leaves it with the last. -EINVAL
 * for another QP type, a unicast GID, or a detach of a QP not attached;
 * -ENOMEM beyond the device page's max_mcast_grp / max_mcast_qp_attach.
 * Attaching twice succeeds. */
struct xrxe_ctrl_mcast {
	struct xrxe_ctrl_hdr hdr;
	uint32_t qp;
	uint16_t lid;
	uint16_t pad;
	union ibv_gid gid;
};

/* STATS (for `xrxe stats` / `xrxe qp`; allowed without HELLO). Request:
 * struct xrxe_ctrl_hdr alone, hdr.flags XRXE_STATS_F_*. Reply: struct
 * xrxe_ctrl_stats_reply and fd [0], a sealed memfd holding size bytes of
 * text (one "name value" per line) or one JSON object. */
enum xrxe_stats_flags {
	XRXE_STATS_F_JSON = 1u << 0, /* JSON instead of text */
	XRXE_STATS_F_QP = 1u << 1,   /* per-QP state and counters instead of interface counters */
	XRXE_STATS_F_CM = 1u << 2,   /* CM IDs, their states and the MAD counters */
};
struct xrxe_ctrl_stats_reply {
	struct xrxe_ctrl_hdr hdr;
	uint64_t size;
};

/* CC (for `xrxe cc`; allowed without HELLO). Request: struct xrxe_ctrl_cc,
 * hdr.flags one XRXE_CC_*; for SET, text holds space-separated name=value
 * assignments (NUL-terminated; names and ranges of the transport's table,
 * src/transport/cc_params.c), applied all or nothing (-EINVAL, nothing
 * changed). SET, ENABLE and DISABLE require the peer to be root (SO_PEERCRED
 * uid 0), else -EPERM. Reply: struct xrxe_ctrl_cc_reply, the parameters in
 * force after the request, one "name value" line each. */
enum xrxe_cc_action {
	XRXE_CC_SHOW = 0,
	XRXE_CC_SET = 1,
	XRXE_CC_ENABLE = 2,
	XRXE_CC_DISABLE = 3,
};
#define XRXE_CC_TEXT_MAX 1024
struct xrxe_ctrl_cc {
	struct xrxe_ctrl_hdr hdr;
	char text[XRXE_CC_TEXT_MAX];
};
struct xrxe_ctrl_cc_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t len; /* bytes of text */
	uint32_t pad;
	char text[2048];
};
_Static_assert(sizeof(struct xrxe_ctrl_cc_reply) <= XRXE_MAX_CTRL_MSG, "cc reply fits");

/* Async events, written by the daemon into the pipe passed at HELLO. */
struct xrxe_async_event {
	uint32_t event_type; /* enum ibv_event_type */
	uint32_t handle;     /* QP, CQ or SRQ handle; port number for port events */
};

/* Raw packet QPs (docs/architecture.md "Raw packet QPs"). CREATE_QP with
 * qp_type IBV_QPT_RAW_PACKET needs CAP_NET_RAW in the daemon's user
 * namespace (the process at the other end of the connection, as the kernel
 * asks of ibv_create_qp), else -EPERM. CREATE_FLOW: a flow steering frames
 * that match rule (include/xrxe/steer.h: the shim translates the ibv_flow
 * specs) to raw packet QP qp; reply struct xrxe_ctrl_handle. -EINVAL for
 * another QP type or a rule that matches everything, -ENOSPC when
 * XRXE_STEER_MAX_FLOWS are in use. DESTROY_FLOW: struct xrxe_ctrl_handle;
 * destroying the QP removes its flows too. */
struct xrxe_ctrl_create_flow {
	struct xrxe_ctrl_hdr hdr;
	uint32_t qp;
	uint32_t pad;
	struct xrxe_steer_flow rule;
};

/* RSS (receive side scaling) for raw packet QPs, as ibv_create_wq,
 * ibv_create_rwq_ind_table and ibv_create_qp_ex with IBV_QP_INIT_ATTR_RX_HASH
 * give it. CREATE_WQ: a receive work queue (IBV_WQT_RQ) completing into cq;
 * reply struct xrxe_ctrl_create_wq_reply and fd [0], its ring of struct
 * xrxe_recv_wqe (the application posts, as to an RQ). Like a raw packet QP
 * it needs CAP_NET_RAW. MODIFY_WQ: state IBV_WQS_RESET, RDY or ERR (a WQ
 * receives in RDY). DESTROY_WQ: -EBUSY while an indirection table holds it.
 * CREATE_RWQ_IND_TBL: 1 << log_size WQ handles (log_size <=
 * XRXE_MAX_RWQ_IND_LOG); DESTROY: -EBUSY while an RSS QP uses it.
 * CREATE_RSS_QP: a raw packet QP that only receives: a frame its flows
 * match goes to the WQ the table holds at the Toeplitz hash of the frame's
 * fields_mask fields (IBV_RX_HASH_*) with key, modulo the table size. Reply
 * struct xrxe_ctrl_create_qp_reply, no fds. */
#define XRXE_MAX_RWQ_IND_LOG 6
#define XRXE_MAX_RSS_KEY 128
struct xrxe_ctrl_create_wq {
	struct xrxe_ctrl_hdr hdr;
	uint32_t pd;
	uint32_t cq;
	uint32_t max_wr;
	uint32_t max_sge;
};
struct xrxe_ctrl_create_wq_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t wq_num;
	uint32_t max_wr; /* actual capacities */
	uint32_t max_sge;
	struct xrxe_ring_loc ring; /* where the ring is in fd [0] */
};
struct xrxe_ctrl_modify_wq {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t state; /* enum ibv_wq_state */
};
struct xrxe_ctrl_create_rwq_ind_tbl {
	struct xrxe_ctrl_hdr hdr;
	uint32_t log_size;
	uint32_t pad;
	uint32_t wq[1u << XRXE_MAX_RWQ_IND_LOG];
};
struct xrxe_ctrl_create_rwq_ind_tbl_reply {
	struct xrxe_ctrl_hdr hdr;
	uint32_t handle;
	uint32_t ind_tbl_num;
};
struct xrxe_ctrl_create_rss_qp {
	struct xrxe_ctrl_hdr hdr;
	uint32_t pd;
	uint32_t ind_tbl;
	uint64_t fields_mask; /* IBV_RX_HASH_* */
	uint32_t key_len;
	uint32_t pad;
	uint8_t key[XRXE_MAX_RSS_KEY];
};

#endif /* XRXE_ABI_H */
