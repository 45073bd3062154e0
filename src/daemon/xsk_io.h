/* SPDX-License-Identifier: MIT */
/*
 * AF_XDP I/O layer: one UMEM and one XDP socket per (interface, RX queue), built
 * on libxdp's xsk API with xrxe's own steering program (libxdp's default program
 * is inhibited: it would redirect every frame of the queue, ARP and ping
 * included; docs/facts/afxdp.md pitfall 10).
 *
 * Frames may span several UMEM chunks (XDP_USE_SG): a 4200-byte frame (path
 * MTU 4096) does not fit a 4096-byte chunk, whose first buffer holds at most
 * 3840 bytes in copy mode (docs/facts/afxdp.md pitfall 4).
 *
 * Single-threaded by design: one xrxe_xsk belongs to one thread (the daemon's
 * event loop); nothing here locks.
 */
#ifndef XRXE_DAEMON_XSK_IO_H
#define XRXE_DAEMON_XSK_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "xrxe/wire.h"

struct xrxe_xsk;

enum xrxe_xsk_mode {
	XRXE_XSK_MODE_AUTO,     /* zero-copy if the driver can, else copy */
	XRXE_XSK_MODE_COPY,
	XRXE_XSK_MODE_ZEROCOPY, /* fail if the driver cannot */
};

struct xrxe_xsk_config {
	const char *ifname;
	uint32_t queue_id;
	int xsks_map_fd;      /* XSKMAP of the attached steering program; < 0: do not register */
	/* UMEM chunks of 4096 bytes (power of two, >= 64); 0 = 16384, or without
	 * CAP_IPC_LOCK what half of RLIMIT_MEMLOCK pins (docs/facts/afxdp.md pitfall 9).
	 * Half the chunks (at most twice the RX ring) feed the fill ring, the rest
	 * are TX buffers. */
	uint32_t frame_count;
	uint32_t rx_ring_size; /* 0 = 4096 (fewer for a small UMEM); fill ring = 2x */
	uint32_t tx_ring_size; /* 0 = 2048 (fewer for a small UMEM) */
	enum xrxe_xsk_mode mode;
	bool multi_buffer;    /* XDP_USE_SG; required when the MTU exceeds one chunk */
};

/* A received frame: up to XRXE_MAX_FRAGS pieces inside the UMEM. Valid until
 * passed back to xrxe_xsk_rx_release(). */
struct xrxe_rx_frame {
	struct xrxe_frag frag[XRXE_MAX_FRAGS];
	uint64_t addr[XRXE_MAX_FRAGS]; /* UMEM addresses, for release */
	uint8_t nfrags;
	uint32_t len;
	uint64_t rx_ns; /* arrival, from the XDP program's stamp; 0: none */
};

/* A transmit frame reserved in the UMEM: the caller writes len bytes across
 * frag[] and submits it. */
struct xrxe_tx_frame {
	struct xrxe_frag frag[XRXE_MAX_FRAGS];
	uint64_t addr[XRXE_MAX_FRAGS];
	uint8_t nfrags;
	uint32_t len;
};

struct xrxe_xsk_stats {
	uint64_t rx_frames, rx_bytes;
	uint64_t rx_stamped;      /* frames with the XDP program's arrival stamp */
	uint64_t rx_dropped_too_many_frags; /* frame chains longer than XRXE_MAX_FRAGS */
	uint64_t rx_bad_desc;     /* RX descriptor outside the UMEM/its chunk, or on a
				   * chunk the kernel did not own: frame dropped */
	uint64_t rx_bad_release;  /* xrxe_xsk_rx_release of a chunk not held (double release) */
	uint64_t tx_frames, tx_bytes;
	uint64_t tx_no_frames;              /* reserve failed: no free TX chunk */
	uint64_t tx_bad_frame;    /* submit/abort of a frame not reserved here (-EINVAL) */
	uint64_t tx_kicks;                  /* sendto() wake-ups */
	uint64_t tx_kick_errors;  /* sendto() failures other than "retry later" */
	uint64_t comp_bad_addr;   /* completion of an address not in flight: ignored */
	/* kernel's view (XDP_STATISTICS) */
	uint64_t k_rx_dropped, k_rx_invalid_descs, k_tx_invalid_descs;
	uint64_t k_rx_ring_full, k_rx_fill_ring_empty, k_tx_ring_empty;
};

/* Create the UMEM and socket and (when xsks_map_fd >= 0) register the socket in
 * the XSKMAP slot of its queue (the fd is duplicated; the caller keeps its own).
 * Returns 0 or -errno; *out is set on success. On error a one-line reason is
 * logged. -EBUSY: the queue has a live AF_XDP socket (the queue of one closed
 * a moment ago is released by the kernel asynchronously: open waits up to 1 s
 * for it). A multi-buffer socket the kernel refuses (EINVAL: no XDP_USE_SG
 * before 6.6) is opened single-buffer instead, with one warning per process;
 * xrxe_xsk_is_multi_buffer() tells which it got. */
int xrxe_xsk_open(const struct xrxe_xsk_config *cfg, struct xrxe_xsk **out);
bool xrxe_xsk_is_multi_buffer(const struct xrxe_xsk *xsk);
/* Unregister from the XSKMAP and free everything. NULL is a no-op. */
void xrxe_xsk_close(struct xrxe_xsk *xsk);

int xrxe_xsk_fd(const struct xrxe_xsk *xsk);              /* for epoll (POLLIN) */
bool xrxe_xsk_is_zerocopy(const struct xrxe_xsk *xsk);
/* Largest frame it carries both ways: the MTU at open + Ethernet header + one
 * VLAN tag (bigger frames would complete and vanish, docs/facts/afxdp.md pitfall 5),
 * capped by the RX buffers: 3840 bytes, or XRXE_MAX_FRAGS x 3840 multi-buffer. */
uint32_t xrxe_xsk_max_frame_len(const struct xrxe_xsk *xsk);

/* Receive up to max frames. Returns the number received (0 if none). Frames
 * of more than XRXE_MAX_FRAGS buffers and frames with a descriptor outside the
 * chunks lent to the kernel are dropped and counted, never returned. */
unsigned xrxe_xsk_rx_burst(struct xrxe_xsk *xsk, struct xrxe_rx_frame *frames, unsigned max);
/* Give the frames' chunks back to the fill ring. */
void xrxe_xsk_rx_release(struct xrxe_xsk *xsk, const struct xrxe_rx_frame *frames, unsigned n);

/* Reserve UMEM chunks for a frame of len bytes. Returns 0, -EMSGSIZE (len above
 * xrxe_xsk_max_frame_len) or -ENOBUFS (no free chunks; reap completions and retry). */
int xrxe_xsk_tx_reserve(struct xrxe_xsk *xsk, uint32_t len, struct xrxe_tx_frame *frame);
/* Give back a reserved frame without sending it. */
void xrxe_xsk_tx_abort(struct xrxe_xsk *xsk, const struct xrxe_tx_frame *frame);
/* Queue reserved frames on the TX ring (frag[i].len may be lowered after
 * reserve, never raised past 4096). Returns n, -ENOBUFS if the TX ring lacks
 * room for all their descriptors, or -EINVAL for a frame not reserved here;
 * nothing is queued on error. Nothing is sent before xrxe_xsk_tx_flush. */
int xrxe_xsk_tx_submit(struct xrxe_xsk *xsk, const struct xrxe_tx_frame *frames, unsigned n);
/* Copy a contiguous frame into the UMEM and queue it (convenience for tools and
 * tests; the transport writes frames in place). Returns 0 or -errno. */
int xrxe_xsk_send(struct xrxe_xsk *xsk, const void *frame, uint32_t len);
/* Kick the kernel to transmit (copy mode transmits only inside sendto()) and
 * reap TX completions back into the free pool. Returns frames completed. */
unsigned xrxe_xsk_tx_flush(struct xrxe_xsk *xsk);
/* Frames submitted but not yet completed. */
uint32_t xrxe_xsk_tx_pending(const struct xrxe_xsk *xsk);

void xrxe_xsk_get_stats(struct xrxe_xsk *xsk, struct xrxe_xsk_stats *stats);

#endif /* XRXE_DAEMON_XSK_IO_H */
