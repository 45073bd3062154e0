/* SPDX-License-Identifier: MIT */
/*
 * Internals of rsockets (docs/rsockets.md). An rsocket is a SOCK_STREAM
 * socket over one RC QP and one rdma_cm_id with an event channel of its own;
 * its number (what rsocket() returns) is that channel's fd, so it is a real
 * descriptor of this process that no ordinary socket can share, as in
 * rdma-core.
 *
 * Locking: one mutex per rsocket guards all of its state. A caller that must
 * wait (credits, data, a CM event) drops it while it sleeps in poll() on the
 * CQ's completion channel and the CM channel, then takes it again and looks
 * afresh, so rsend and rrecv of two threads make progress independently.
 * The table of rsockets has its own mutex, never held across a wait.
 */
#ifndef XRXE_RDMACM_RSOCKET_INT_H
#define XRXE_RDMACM_RSOCKET_INT_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rdmacm/cm.h"
#include "rdmacm/rsocket_proto.h"

#pragma GCC visibility push(default)
#include <rdma/rsocket.h>
#pragma GCC visibility pop

/* Defaults: rdma-core's (rsocket(7)) but for the buffers. */
#define RS_DEF_SQSIZE 384
#define RS_DEF_RQSIZE 384
#define RS_DEF_INLINE 64
/* Buffers: rdma-core's are 128 KiB. A connection can have at most its
 * receive buffer in flight, and through a user-space daemon the round trip of
 * a grant is long (on a busy machine, milliseconds): 1 MiB each gives iperf3
 * under librspreload several times the throughput (docs/rsockets.md). */
#define RS_DEF_MEM (1u << 20)  /* receive buffer */
#define RS_DEF_WMEM (1u << 20) /* send buffer */
#define RS_QP_MIN_SIZE 16
#define RS_QP_MAX_SIZE 0xFFFE
#define RS_QP_CTRL_SIZE 4       /* control messages in flight */
#define RS_SNDLOWAT 2048        /* a send waits for this much send buffer */
/* An rsend goes out in chunks (one message each) of RS_OLAP_START_SIZE,
 * doubling up to RS_MAX_TRANSFER, each also bounded by the send buffer and the
 * peer's grant. rdma-core ramps from 2 KiB to 64 KiB so that the HCA starts
 * while the rest is copied; here every message costs a completion and a
 * wake-up through the daemon on both ends while the copy is cheap, so fewer,
 * larger messages win (rstream 64 KiB: 3x). The peer cannot tell. */
#define RS_OLAP_START_SIZE 65536
#define RS_MAX_TRANSFER 262144
#define RS_MAX_BUF (1u << 28)   /* SO_RCVBUF/SO_SNDBUF ceiling (data lengths are 29 bits) */
#define RS_POLL_SPIN_US 10      /* busy-poll before sleeping, as rdma-core's polling_time */
#define RS_RESOLVE_MS 2000
#define RS_CM_CHECK_US 1000
#define RS_MAX_SLEEPERS 8

/* Defaults an administrator may change, as with rdma-core: one integer per
 * file under RS_CONF_DIR (rsocket(7)), read once (rs_configure). */
#define RS_CONF_DIR "/etc/rdma/rsocket"
struct rs_conf {
	uint32_t mem, wmem;             /* mem_default, wmem_default (bytes) */
	uint32_t sqsize, rqsize;        /* sqsize_default, rqsize_default */
	uint32_t inline_size;           /* inline_default */
	uint32_t iomap_size;            /* iomap_size */
	uint32_t polling_time_us;       /* polling_time */
	uint32_t wake_up_interval_ms;   /* wake_up_interval: rpoll's longest sleep */
};
extern struct rs_conf rs_conf;
void rs_configure(void);
struct rsocket;
/* A new rsocket's sizes (queues, inline, buffers, iomap): the defaults. */
void rs_default_sizes(struct rsocket *rs);

/* States, ordered as rdma-core's: passive, opening, connected, closed. */
enum {
	RS_INIT = 0,
	RS_BOUND = 0x0001,
	RS_LISTENING = 0x0002,
	RS_OPENING = 0x0004,
	RS_RESOLVING_ADDR = RS_OPENING | 0x0010,
	RS_RESOLVING_ROUTE = RS_OPENING | 0x0020,
	RS_CONNECTING = RS_OPENING | 0x0040,
	RS_CONNECTED = 0x0100,
	RS_WRITABLE = 0x0200,
	RS_READABLE = 0x0400,
	RS_CONNECT_RDWR = RS_CONNECTED | RS_READABLE | RS_WRITABLE,
	RS_CONNECT_ERROR = 0x0800,
	RS_DISCONNECTED = 0x1000,
	RS_ERROR = 0x2000,
};

/* Send work request IDs: the message (op and length) they carried, so the
 * completion returns the send buffer and the control slot. Receive WRs have
 * bit 63 set. */
#define RS_WR_RECV (1ull << 63)
#define RS_WR_ID(msg) ((uint64_t)(uint32_t)(msg))

struct rs_dgram;

struct rs_iomap_mr {
	struct rs_iomap_mr *next;
	struct ibv_mr *mr;
	uint64_t offset;
	int index;   /* slot in the peer's iomap array; -1 for a read-only mapping */
	bool queued; /* not yet written to the peer */
};

/* A QP's CQ with a non-blocking completion channel of its own
 * (rsocket_cq.c). */
struct rs_cq {
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	bool armed;           /* notification requested, its event not yet taken */
	unsigned int unacked; /* events taken, not yet acknowledged */
};

/* Create the channel (non-blocking) and a CQ of cqe entries on it: 0 or
 * -errno; on failure what was made stays in c for rs_cq_close. */
int rs_cq_open(struct rs_cq *c, struct ibv_context *verbs, uint32_t cqe, void *cq_context);
/* Acknowledge what is pending, destroy CQ and channel; c is zeroed. */
void rs_cq_close(struct rs_cq *c);
/* Request a notification for the next completion unless one is pending:
 * true if this call armed it (completions before it raise no event: poll the
 * CQ once more before sleeping). */
bool rs_cq_arm(struct rs_cq *c);
/* Take the event of an armed CQ, if it came (never blocks): true if one did. */
bool rs_cq_take_event(struct rs_cq *c);

struct rsocket {
	int index; /* = ch->fd */
	int type;  /* SOCK_STREAM (SOCK_DGRAM: rsocket_dgram.c) */
	pthread_mutex_t lock;
	int state;
	int err;       /* SO_ERROR / the errno of a failed connection */
	bool reset;    /* the connection ended abnormally: reads see ECONNRESET */
	int fd_flags;  /* rfcntl F_SETFL */
	/* Threads asleep on this rsocket (rs_wait, rpoll): each one's own
	 * eventfd. One of them may consume the completion event the others
	 * waited for; whoever processes completions then wakes the rest
	 * (rs_wake_others). Beyond RS_MAX_SLEEPERS, sleepers nap 10 ms. */
	int sleeper_fd[RS_MAX_SLEEPERS];
	int nsleepers;
	uint64_t so_opts, tcp_opts, ipv6_opts;
	unsigned int keepalive_time; /* s; 0 = not yet set */

	struct rdma_event_channel *ch;
	/* CM events are looked for when the channel was seen readable, while
	 * connecting, or at most every RS_CM_CHECK_US (a DREQ must not go
	 * unnoticed by a caller that never sleeps; each look costs syscalls). */
	bool cm_pending;
	uint64_t cm_next_us;
	struct rdma_cm_id *cm_id;
	struct rs_cq comp; /* the QP's CQ and completion channel */

	/* sizes (SOL_RDMA, SO_SNDBUF/SO_RCVBUF), fixed at connection time */
	uint32_t sq_size, rq_size, sq_inline;
	uint32_t sbuf_size, rbuf_size;
	uint32_t target_iomap_size;

	/* --- sending: our send buffer and what the peer granted us --- */
	uint8_t *sbuf;       /* sbuf_size bytes, then RS_QP_CTRL_SIZE control messages */
	struct ibv_mr *smr;
	uint32_t sbuf_head;  /* next byte to fill (ring) */
	uint32_t sbuf_bytes_avail;
	uint32_t sqe_avail;
	uint16_t sseq_no, sseq_comp; /* messages sent; the peer's limit */
	uint32_t ctrl_seqno, ctrl_max_seqno;
	struct rs_sge remote_sgl;   /* the peer's target SGL array */
	uint32_t remote_sge;        /* next entry of it we update */
	struct rs_sge remote_iomap; /* the peer's iomap array */
	bool swap_sgl;              /* the peer's byte order differs from ours */

	/* What the peer writes into our memory: the target SGL (the receive
	 * buffer halves it grants us), then our iomap array. */
	uint8_t *target_buf;
	size_t target_len;
	struct ibv_mr *target_mr;
	volatile struct rs_sge *target_sgl;
	volatile struct rs_iomap *target_iomap;
	uint32_t target_sge;

	/* --- receiving --- */
	uint8_t *rbuf;
	struct ibv_mr *rmr;
	uint32_t rbuf_offset;      /* next byte to read (ring) */
	uint32_t rbuf_free_offset; /* next half to grant */
	uint32_t rbuf_bytes_avail; /* free, not granted */
	uint32_t rbuf_granted;     /* granted to the peer, not yet written */
	uint32_t *rmsg;            /* lengths of received data messages, rq_size + 1 ring */
	uint32_t rmsg_head, rmsg_tail;
	uint16_t rseq_no, rseq_comp;
	/* Messages that take a credit (data, iomap updates): received so
	 * far, and the limit our grants allow (checked: rs_handle_msg). */
	uint16_t rseq_recv, rseq_limit;

	/* --- riomap --- */
	struct rs_iomap_mr *iomaps;
	bool iomap_pending;

	/* --- connecting --- */
	struct sockaddr_storage dst;
	struct rdma_conn_param accept_param;

	/* --- keepalive (rsocket_keepalive.c) --- */
	struct rsocket *ka_next;
	uint64_t ka_due_us;

	struct rs_dgram *ds; /* datagram rsockets only (rsocket_dgram.c) */
};

/* --- table (rsocket.c) ---------------------------------------------------- */
/* The rsocket behind index, or NULL (errno EBADF). */
struct rsocket *rs_lookup(int index);

/* --- connection (rsocket.c) ------------------------------------------------ */
/* Read and handle every CM event queued for rs (non-blocking). Lock held. */
void rs_cm_progress(struct rsocket *rs);

/* --- data path (rsocket_data.c) -------------------------------------------- */
/* Allocate and register the buffers, create CQ and QP, post receives. */
int rs_create_ep(struct rsocket *rs);
void rs_free_ep(struct rsocket *rs);
/* Our connection data for the REQ/REP. */
void rs_format_conn_data(struct rsocket *rs, struct rs_conn_data *cd);
/* Check the peer's (len bytes) and take it: 0, or -EPROTO/-ECONNREFUSED. */
int rs_save_conn_data(struct rsocket *rs, const void *data, size_t len);
/* Poll the CQ (non-blocking), processing every completion; credits. Lock held. */
void rs_progress(struct rsocket *rs);
/* Wait until test(rs) holds, the connection fails, or (nonblock) at once.
 * timeout_ms < 0: no limit. 0 when test holds; -EAGAIN / -ETIMEDOUT / -EINTR.
 * Lock held on entry and return. */
int rs_wait(struct rsocket *rs, bool nonblock, int timeout_ms, bool (*test)(struct rsocket *));
/* The calling thread's wake-up eventfd (made on first use), or -1. */
int rs_thread_wake_fd(void);
/* Register / unregister the calling thread as asleep on rs (lock held):
 * false when the table is full (then nap). */
bool rs_sleeper_add(struct rsocket *rs, int fd);
void rs_sleeper_del(struct rsocket *rs, int fd);
/* Wake every registered sleeper (lock held): rs's state may have changed. */
void rs_wake_others(struct rsocket *rs);
/* Consume a wake-up of the calling thread's eventfd. */
void rs_thread_wake_drain(int fd);

/* Put the connection into the error state: every waiter sees err. */
void rs_set_error(struct rsocket *rs, int err, const char *why);
bool rs_can_send(struct rsocket *rs);
bool rs_conn_can_send(struct rsocket *rs);
bool rs_have_rdata(struct rsocket *rs);
bool rs_conn_have_rdata(struct rsocket *rs);
bool rs_all_sends_done(struct rsocket *rs);
bool rs_ctrl_avail(struct rsocket *rs);
/* Post a 0-byte control message (RS_OP_CTRL). Lock held. */
int rs_post_ctrl(struct rsocket *rs, enum rs_ctrl ctrl);
/* Post a 0-byte RDMA WRITE (keepalive). Lock held. */
int rs_post_keepalive(struct rsocket *rs);
/* Post an RDMA WRITE (WITH IMM when imm) of sge[0..nsge) to raddr/rkey. */
int rs_post_write(struct rsocket *rs, struct ibv_sge *sge, int nsge, uint32_t msg, bool imm,
		  bool inline_data, uint64_t raddr, uint32_t rkey);
/* Copy len bytes from iov (from element *iov_i, byte *iov_off) into the send ring: the SGEs
 * of the copy (1 or 2) in sge. */
int rs_copy_to_sbuf(struct rsocket *rs, const struct iovec *iov, int *iov_i, size_t *iov_off,
		    uint32_t len, struct ibv_sge sge[2]);
bool rs_nonblocking(struct rsocket *rs, int flags);
/* Wait (unless non-blocking) until a data message may go out: 0 with
 * rs_can_send true, or the error that ends the send: -EPIPE once the
 * connection stopped being writable, -ECONNRESET after a reset, rs_wait's
 * -EAGAIN and the like. Lock held (dropped while asleep). */
int rs_wait_send(struct rsocket *rs, int flags);
/* Bytes for a send's next message (rsend, riowrite): *olen, which doubles up
 * to RS_MAX_TRANSFER for the message after, or all that is left; never more
 * than the free send buffer or room (what the peer's target has left). */
uint32_t rs_next_xfer(struct rsocket *rs, uint32_t *olen, size_t left, uint64_t room);

/* --- riomap (rsocket_iomap.c) ---------------------------------------------- */
int rs_send_iomaps(struct rsocket *rs, int flags);
void rs_free_iomaps(struct rsocket *rs);

/* --- keepalive (rsocket_keepalive.c) --------------------------------------- */
int rs_keepalive_set(struct rsocket *rs, bool on);
void rs_keepalive_remove(struct rsocket *rs);
/* TCP_KEEPIDLE changed: the next keepalive one new period from now. */
void rs_keepalive_kick(struct rsocket *rs);
uint64_t rs_now_us(void);

/* --- poll (rsocket_poll.c) ------------------------------------------------- */
/* The events rs has now (non-blocking progress first). Lock not held. */
short rs_poll_events(struct rsocket *rs, short events);

/* --- datagram (rsocket_dgram.c) -------------------------------------------- */
int rs_dgram_socket(int domain);
int rs_dgram_connect(struct rsocket *rs, const struct sockaddr *addr, socklen_t addrlen);
ssize_t rs_dgram_sendto(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags,
			const struct sockaddr *to, socklen_t tolen);
ssize_t rs_dgram_recvfrom(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags,
			  struct sockaddr *from, socklen_t *fromlen);
void rs_dgram_close(struct rsocket *rs);
int rs_dgram_setsockopt(struct rsocket *rs, int level, int optname, const void *optval,
			socklen_t optlen);
int rs_dgram_getsockopt(struct rsocket *rs, int level, int optname, void *optval,
			socklen_t *optlen);
short rs_dgram_poll_events(struct rsocket *rs, short events);
/* The descriptors to sleep on (at most 1 + the rsocket's QPs, capped at 8). */
int rs_dgram_wait_fds(struct rsocket *rs, struct pollfd *fds);
/* Table insertion for rsocket_dgram.c (rsocket.c). */
int rs_table_insert(struct rsocket *rs);
void rs_table_remove(struct rsocket *rs);

#endif /* XRXE_RDMACM_RSOCKET_INT_H */
