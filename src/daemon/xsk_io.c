// SPDX-License-Identifier: MIT
/*
 * AF_XDP I/O layer (see xsk_io.h). One UMEM of 4096-byte chunks, split at open
 * into two fixed pools that never mix:
 *
 *   RX chunks: fill ring -> kernel -> RX ring -> caller -> rx_spare -> fill ring
 *   TX chunks: tx_free -> caller -> TX ring -> kernel -> completion ring -> tx_free
 *
 * Fixed pools keep both directions from starving each other (a TX burst cannot
 * eat the chunks the fill ring needs) and let every ring be sized so that it can
 * never overflow: the fill ring holds every RX chunk, the completion ring every
 * TX chunk.
 *
 * Every chunk has a one-byte state. Descriptors coming back from the kernel
 * (RX, completions) and frames coming back from the caller are checked against
 * it, so a bogus address is counted and dropped instead of handing the same
 * chunk out twice.
 */
#include "daemon/xsk_io.h"
#include "xrxe/steer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <xdp/xsk.h>

#include "daemon/netdev.h"
#include "util/log.h"

/* Debian 12's uapi header predates multi-buffer AF_XDP (kernel 6.6). */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
#ifndef XDP_PACKET_HEADROOM
#define XDP_PACKET_HEADROOM 256
#endif

#define XSK_CHUNK_SIZE 4096u
/* In copy mode the kernel leaves XDP_PACKET_HEADROOM in front of every RX
 * buffer, so one chunk carries at most 3840 bytes (docs/facts/afxdp.md pitfall 4). */
#define XSK_RX_BUF_CAP (XSK_CHUNK_SIZE - XDP_PACKET_HEADROOM)

#define XSK_DEFAULT_FRAMES 16384u
#define XSK_DEFAULT_RX_RING 4096u
#define XSK_DEFAULT_TX_RING 2048u
#define XSK_MIN_FRAMES 64u
/* How long bind waits for the queue of a just-closed socket: 50 x 20 ms. */
#define XSK_BUSY_RETRIES 50
#define XSK_BUSY_WAIT_US 20000

/* Chunk states; XSK_CH_LAST marks the final chunk of a submitted TX frame so
 * completions can be counted in frames. */
enum {
	XSK_CH_FILL = 1,  /* owned by the kernel for RX (fill ring or in flight) */
	XSK_CH_RX_APP,    /* delivered to the caller in an xrxe_rx_frame */
	XSK_CH_RX_SPARE,  /* released, waiting for room in the fill ring */
	XSK_CH_TX_FREE,   /* on the TX free stack */
	XSK_CH_TX_APP,    /* reserved by the caller */
	XSK_CH_TX_KERNEL, /* on the TX ring or in flight until its completion */
	XSK_CH_LOST,      /* never to be used again (the kernel returned it mangled) */
};
#define XSK_CH_STATE_MASK 0x7f
#define XSK_CH_LAST 0x80

struct xrxe_xsk {
	char ifname[IF_NAMESIZE];
	uint32_t queue_id;
	int xsks_map_fd; /* our dup, or -1 when not registered */
	bool zerocopy;
	bool multi_buffer;
	uint32_t max_frame_len;

	void *area;
	uint64_t area_size;
	uint32_t nchunks;
	uint8_t *state; /* per chunk */

	struct xsk_umem *umem;
	struct xsk_socket *sock;
	int fd;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;

	uint64_t *rx_spare; /* stack of released RX chunk addresses */
	uint32_t rx_spare_n, rx_chunks;
	uint64_t *tx_free;  /* stack of free TX chunk addresses */
	uint32_t tx_free_n, tx_chunks;
	uint32_t tx_inflight_frames;

	/* an RX chain longer than XRXE_MAX_FRAGS is being skipped up to its end */
	bool rx_discarding;
	bool kick_error_logged;

	struct xrxe_xsk_stats st;
};

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static uint32_t pow2_floor(uint64_t v)
{
	uint32_t p = 1;

	while ((uint64_t)p * 2 <= v && p < (1u << 31))
		p *= 2;
	return p;
}

static uint32_t pow2_ceil(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p *= 2;
	return p;
}

/* CAP_IPC_LOCK in the effective set exempts the UMEM from RLIMIT_MEMLOCK
 * (kernel: xdp_umem_account_pages). Asked with capget(2) so that we need not
 * link libcap. */
static bool has_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
		.pid = 0,
	};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return data[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32));
}

/* Default UMEM size. Without CAP_IPC_LOCK the pinned UMEM is charged to the
 * user's RLIMIT_MEMLOCK (8 MiB on the test VM; a larger UMEM fails with
 * ENOBUFS, docs/facts/afxdp.md pitfall 9), and the charge is per user, not per
 * process: take half of the limit so a second socket of the same user fits. */
static uint32_t default_frame_count(void)
{
	struct rlimit rl;
	uint64_t budget;
	uint32_t frames;

	if (has_cap_ipc_lock())
		return XSK_DEFAULT_FRAMES;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return XSK_DEFAULT_FRAMES;
	budget = (uint64_t)rl.rlim_cur / 2 / XSK_CHUNK_SIZE;
	frames = pow2_floor(budget);
	if (frames > XSK_DEFAULT_FRAMES)
		frames = XSK_DEFAULT_FRAMES;
	if (frames < XSK_MIN_FRAMES)
		frames = XSK_MIN_FRAMES; /* will likely fail; the error says why */
	return frames;
}

static inline uint32_t chunk_index(uint64_t addr)
{
	return (uint32_t)(addr / XSK_CHUNK_SIZE);
}

static inline uint8_t chunk_state(const struct xrxe_xsk *xsk, uint32_t idx)
{
	return xsk->state[idx] & XSK_CH_STATE_MASK;
}

/* ------------------------------------------------------------------------
 * Fill and completion rings
 * ---------------------------------------------------------------------- */

/* Move released RX chunks into the fill ring. The ring has a slot for every
 * RX chunk, but the kernel publishes its consumer index lazily (at its next
 * peek), so a chunk can come back through the RX ring before its old fill
 * slot is seen free: then only part fits now, the rest waits in rx_spare. */
static void fill_refill(struct xrxe_xsk *xsk)
{
	uint32_t n = xsk->rx_spare_n, idx, got;

	if (!n)
		return;
	got = xsk_ring_prod__reserve(&xsk->fill, n, &idx);
	if (!got) {
		/* reserve is all-or-nothing: retry with what fits. nb_free
		 * returns every free slot, possibly more than asked for (the
		 * kernel may have moved on since the reserve): clamp it. */
		uint32_t room = xsk_prod_nb_free(&xsk->fill, n);

		if (room < n)
			n = room;
		if (!n)
			return;
		got = xsk_ring_prod__reserve(&xsk->fill, n, &idx);
		if (!got)
			return;
	}
	for (uint32_t i = 0; i < got; i++) {
		uint64_t addr = xsk->rx_spare[--xsk->rx_spare_n];

		xsk->state[chunk_index(addr)] = XSK_CH_FILL;
		*xsk_ring_prod__fill_addr(&xsk->fill, idx + i) = addr;
	}
	xsk_ring_prod__submit(&xsk->fill, got);
}

/* Reap TX completions into the free stack. Returns frames completed. */
static unsigned comp_reap(struct xrxe_xsk *xsk)
{
	uint32_t idx, n;
	unsigned frames = 0;

	n = xsk_ring_cons__peek(&xsk->comp, xsk->tx_chunks, &idx);
	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = *xsk_ring_cons__comp_addr(&xsk->comp, idx + i);
		uint32_t c = chunk_index(addr);

		/* We only ever submit chunk-aligned TX addresses; anything else,
		 * or a chunk that is not ours in flight, is a kernel (or memory)
		 * bug. Never put it on the free stack: that could hand one chunk
		 * out twice. */
		if (addr % XSK_CHUNK_SIZE || c >= xsk->nchunks ||
		    chunk_state(xsk, c) != XSK_CH_TX_KERNEL) {
			xsk->st.comp_bad_addr++;
			continue;
		}
		if (xsk->state[c] & XSK_CH_LAST) {
			frames++;
			xsk->tx_inflight_frames--;
		}
		xsk->state[c] = XSK_CH_TX_FREE;
		xsk->tx_free[xsk->tx_free_n++] = addr;
	}
	xsk_ring_cons__release(&xsk->comp, n);
	return frames;
}

/* ------------------------------------------------------------------------
 * Open / close
 * ---------------------------------------------------------------------- */

struct xsk_sizes {
	uint32_t frames, rx, tx, fill, comp, rx_chunks, tx_chunks;
};

static int compute_sizes(const struct xrxe_xsk_config *cfg, struct xsk_sizes *s)
{
	s->frames = cfg->frame_count ? cfg->frame_count : default_frame_count();
	if (!is_pow2(s->frames) || s->frames < XSK_MIN_FRAMES)
		return -EINVAL;
	/* Defaults scale down with a small UMEM so that each ring still has
	 * chunks to carry. */
	s->rx = cfg->rx_ring_size ? cfg->rx_ring_size : XSK_DEFAULT_RX_RING;
	if (!cfg->rx_ring_size && s->rx > s->frames / 4)
		s->rx = s->frames / 4;
	s->tx = cfg->tx_ring_size ? cfg->tx_ring_size : XSK_DEFAULT_TX_RING;
	if (!cfg->tx_ring_size && s->tx > s->frames / 4)
		s->tx = s->frames / 4;
	if (!is_pow2(s->rx) || !is_pow2(s->tx))
		return -EINVAL;
	/* Twice the RX ring in the fill ring, so the kernel still finds buffers
	 * while the RX ring is full and the caller holds a ring's worth. */
	s->fill = 2 * s->rx;
	if (s->fill > s->frames / 2)
		s->fill = s->frames / 2;
	s->rx_chunks = s->fill;
	s->tx_chunks = s->frames - s->rx_chunks;
	/* Every TX chunk may be in flight at once: the completion ring must be
	 * able to hold them all, or the kernel stalls TX (-EAGAIN) on it. */
	s->comp = pow2_ceil(s->tx_chunks);
	return 0;
}

/* Create the UMEM and the socket with the given copy/zero-copy bind flag. */
static int create_socket(struct xrxe_xsk *xsk, const struct xsk_sizes *s,
			 uint16_t mode_flag)
{
	struct xsk_umem_config ucfg = {
		.fill_size = s->fill,
		.comp_size = s->comp,
		.frame_size = XSK_CHUNK_SIZE,
		.frame_headroom = 0,
		.flags = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = s->rx,
		.tx_size = s->tx,
		/* xrxe loads its own steering program: libxdp's default one
		 * would redirect every frame of the queue (pitfall 10). */
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = 0,
		.bind_flags = XDP_USE_NEED_WAKEUP | mode_flag |
			      (xsk->multi_buffer ? XDP_USE_SG : 0),
	};
	int err;

	err = xsk_umem__create(&xsk->umem, xsk->area, xsk->area_size, &xsk->fill,
			       &xsk->comp, &ucfg);
	if (err) {
		xsk->umem = NULL;
		return err;
	}
	/* A socket closed a moment ago still holds its queue: the kernel unbinds
	 * it from a workqueue after close (xp_release_deferred), and bind fails
	 * with EBUSY until then. A restarted daemon or back-to-back tests hit
	 * this, so wait for it a little; a live socket on the queue stays EBUSY. */
	for (int tries = 0;; tries++) {
		err = xsk_socket__create(&xsk->sock, xsk->ifname, xsk->queue_id, xsk->umem,
					 &xsk->rx, &xsk->tx, &scfg);
		if (err != -EBUSY || tries == XSK_BUSY_RETRIES)
			break;
		usleep(XSK_BUSY_WAIT_US);
	}
	if (err) {
		xsk->sock = NULL;
		xsk_umem__delete(xsk->umem);
		xsk->umem = NULL;
		return err;
	}
	return 0;
}

static const char *mode_name(enum xrxe_xsk_mode mode)
{
	switch (mode) {
	case XRXE_XSK_MODE_AUTO: return "auto";
	case XRXE_XSK_MODE_COPY: return "copy";
	case XRXE_XSK_MODE_ZEROCOPY: return "zero-copy";
	}
	return "?";
}

/* One attempt; may_fall_back: an EINVAL is the caller's to handle (no
 * error line). */
static int xsk_open_once(const struct xrxe_xsk_config *cfg, struct xrxe_xsk **out,
			 bool may_fall_back)
{
	struct xrxe_xsk *xsk;
	struct xsk_sizes s;
	struct xdp_options opts;
	socklen_t optlen;
	uint32_t mtu = 0, cap;
	int err;

	if (!cfg || !cfg->ifname || !out || strlen(cfg->ifname) >= IF_NAMESIZE)
		return -EINVAL;
	err = compute_sizes(cfg, &s);
	if (err) {
		xrxe_err("xsk %s: frame count and ring sizes must be powers of two (frames >= %u)",
			 cfg->ifname, XSK_MIN_FRAMES);
		return err;
	}
	err = xrxe_netdev_mtu(cfg->ifname, &mtu); /* logs its own error */
	if (err)
		return err;

	xsk = calloc(1, sizeof(*xsk));
	if (!xsk) {
		err = -ENOMEM;
		goto err_log;
	}
	strcpy(xsk->ifname, cfg->ifname);
	xsk->queue_id = cfg->queue_id;
	xsk->xsks_map_fd = -1;
	xsk->fd = -1;
	xsk->multi_buffer = cfg->multi_buffer;
	xsk->nchunks = s.frames;
	xsk->rx_chunks = s.rx_chunks;
	xsk->tx_chunks = s.tx_chunks;

	/* Largest frame both ways: copy-mode RX gives at most XSK_RX_BUF_CAP per
	 * buffer; beyond the MTU (plus Ethernet header and one VLAN tag, what veth
	 * and most drivers forward) the frame would complete normally and
	 * vanish (pitfall 5), so refuse it up front. */
	cap = xsk->multi_buffer ? XRXE_MAX_FRAGS * XSK_RX_BUF_CAP : XSK_RX_BUF_CAP;
	if (mtu + XRXE_ETH_HLEN + XRXE_VLAN_HLEN < cap)
		cap = mtu + XRXE_ETH_HLEN + XRXE_VLAN_HLEN;
	xsk->max_frame_len = cap;

	xsk->state = calloc(s.frames, 1);
	xsk->rx_spare = calloc(s.rx_chunks, sizeof(uint64_t));
	xsk->tx_free = calloc(s.tx_chunks, sizeof(uint64_t));
	if (!xsk->state || !xsk->rx_spare || !xsk->tx_free) {
		err = -ENOMEM;
		goto err_free;
	}

	xsk->area_size = (uint64_t)s.frames * XSK_CHUNK_SIZE;
	xsk->area = mmap(NULL, xsk->area_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (xsk->area == MAP_FAILED) {
		xsk->area = NULL;
		err = -errno;
		goto err_free;
	}

	switch (cfg->mode) {
	case XRXE_XSK_MODE_COPY:
		err = create_socket(xsk, &s, XDP_COPY);
		break;
	case XRXE_XSK_MODE_ZEROCOPY:
		err = create_socket(xsk, &s, XDP_ZEROCOPY);
		break;
	default:
		/* veth and many drivers have no zero-copy support: bind fails
		 * with EOPNOTSUPP (pitfall 1). Start over in copy mode. */
		err = create_socket(xsk, &s, XDP_ZEROCOPY);
		if (err == -EOPNOTSUPP) {
			xrxe_dbg("xsk %s/%u: no zero-copy support, using copy mode",
				 xsk->ifname, xsk->queue_id);
			err = create_socket(xsk, &s, XDP_COPY);
		}
		break;
	}
	if (err)
		goto err_unmap;
	xsk->fd = xsk_socket__fd(xsk->sock);

	memset(&opts, 0, sizeof(opts));
	optlen = sizeof(opts);
	if (getsockopt(xsk->fd, SOL_XDP, XDP_OPTIONS, &opts, &optlen) < 0) {
		err = -errno;
		goto err_socket;
	}
	xsk->zerocopy = opts.flags & XDP_OPTIONS_ZEROCOPY;

	/* Carve the UMEM: the first rx_chunks chunks go to the fill ring, the rest
	 * to the TX free stack (pushed so the lowest address pops first). */
	for (uint32_t i = 0; i < s.rx_chunks; i++) {
		xsk->state[i] = XSK_CH_RX_SPARE;
		xsk->rx_spare[xsk->rx_spare_n++] = (uint64_t)i * XSK_CHUNK_SIZE;
	}
	for (uint32_t i = s.frames; i-- > s.rx_chunks;) {
		xsk->state[i] = XSK_CH_TX_FREE;
		xsk->tx_free[xsk->tx_free_n++] = (uint64_t)i * XSK_CHUNK_SIZE;
	}
	fill_refill(xsk);
	if (xsk->rx_spare_n) {
		err = -EIO; /* the fill ring was sized to hold them all */
		goto err_socket;
	}

	/* Register last: from here on the steering program sends us frames. */
	if (cfg->xsks_map_fd >= 0) {
		xsk->xsks_map_fd = fcntl(cfg->xsks_map_fd, F_DUPFD_CLOEXEC, 0);
		if (xsk->xsks_map_fd < 0) {
			err = -errno;
			goto err_socket;
		}
		if (bpf_map_update_elem(xsk->xsks_map_fd, &xsk->queue_id, &xsk->fd, 0)) {
			err = -errno;
			goto err_map_fd;
		}
	}

	xrxe_dbg("xsk %s/%u: %s mode%s, %u chunks (%u RX, %u TX), rings rx %u tx %u fill %u comp %u, max frame %u",
		 xsk->ifname, xsk->queue_id, xsk->zerocopy ? "zero-copy" : "copy",
		 xsk->multi_buffer ? " multi-buffer" : "", s.frames, s.rx_chunks,
		 s.tx_chunks, s.rx, s.tx, s.fill, s.comp, xsk->max_frame_len);
	*out = xsk;
	return 0;

err_map_fd:
	close(xsk->xsks_map_fd);
	xsk->xsks_map_fd = -1;
err_socket:
	xsk_socket__delete(xsk->sock);
	xsk_umem__delete(xsk->umem);
err_unmap:
	munmap(xsk->area, xsk->area_size);
err_free:
	free(xsk->tx_free);
	free(xsk->rx_spare);
	free(xsk->state);
	free(xsk);
err_log:
	if (err == -EINVAL && may_fall_back)
		xrxe_dbg("xsk %s/%u: multi-buffer socket refused: %s", cfg->ifname, cfg->queue_id,
			 strerror(-err));
	else if (err == -ENOBUFS && !has_cap_ipc_lock())
		xrxe_err("xsk %s/%u: cannot pin a %u-chunk UMEM: %s (RLIMIT_MEMLOCK; run with CAP_IPC_LOCK or fewer frames)",
			 cfg->ifname, cfg->queue_id, s.frames, strerror(-err));
	else if (err == -EBUSY)
		xrxe_err("xsk %s/%u: queue already has an AF_XDP socket (another xrxed or probe?)",
			 cfg->ifname, cfg->queue_id);
	else if (err == -EOPNOTSUPP && cfg->mode == XRXE_XSK_MODE_ZEROCOPY)
		xrxe_err("xsk %s/%u: driver has no zero-copy AF_XDP support", cfg->ifname,
			 cfg->queue_id);
	else
		xrxe_err("xsk %s/%u: cannot open %s-mode socket: %s", cfg->ifname,
			 cfg->queue_id, mode_name(cfg->mode), strerror(-err));
	return err;
}

int xrxe_xsk_open(const struct xrxe_xsk_config *cfg, struct xrxe_xsk **out)
{
	static bool said;
	struct xrxe_xsk_config single;
	int err;

	err = xsk_open_once(cfg, out, cfg->multi_buffer);
	if (err != -EINVAL || !cfg->multi_buffer)
		return err;
	/* Kernels before 6.6 have no multi-buffer AF_XDP: bind refuses
	 * XDP_USE_SG with EINVAL (Debian 12's 6.1). Single-buffer sockets
	 * still carry every frame up to one chunk; the daemon caps the path
	 * MTU to what fits (xrxe_xsk_max_frame_len). Said once per process. */
	single = *cfg;
	single.multi_buffer = false;
	err = xsk_open_once(&single, out, false);
	if (!err && !said) {
		said = true;
		xrxe_warn("xsk %s: this kernel has no multi-buffer AF_XDP (XDP_USE_SG refused): "
			  "single-buffer frames of at most %u bytes", cfg->ifname,
			  xrxe_xsk_max_frame_len(*out));
	}
	return err;
}

bool xrxe_xsk_is_multi_buffer(const struct xrxe_xsk *xsk)
{
	return xsk->multi_buffer;
}

void xrxe_xsk_close(struct xrxe_xsk *xsk)
{
	if (!xsk)
		return;
	/* Unregister before the socket goes, so the steering program stops
	 * redirecting to it (the kernel would also drop the entry on release;
	 * doing it first keeps the order explicit). */
	if (xsk->xsks_map_fd >= 0) {
		if (bpf_map_delete_elem(xsk->xsks_map_fd, &xsk->queue_id) && errno != ENOENT)
			xrxe_warn("xsk %s/%u: cannot remove XSKMAP entry: %s", xsk->ifname,
				  xsk->queue_id, strerror(errno));
		close(xsk->xsks_map_fd);
	}
	xsk_socket__delete(xsk->sock);
	xsk_umem__delete(xsk->umem);
	munmap(xsk->area, xsk->area_size);
	free(xsk->tx_free);
	free(xsk->rx_spare);
	free(xsk->state);
	free(xsk);
}

int xrxe_xsk_fd(const struct xrxe_xsk *xsk)
{
	return xsk->fd;
}

bool xrxe_xsk_is_zerocopy(const struct xrxe_xsk *xsk)
{
	return xsk->zerocopy;
}

uint32_t xrxe_xsk_max_frame_len(const struct xrxe_xsk *xsk)
{
	return xsk->max_frame_len;
}

/* ------------------------------------------------------------------------
 * RX
 * ---------------------------------------------------------------------- */

/* Return a frame's chunks (those still marked RX_APP) to the spare stack. */
static void rx_drop_chunks(struct xrxe_xsk *xsk, const uint64_t *addr, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t c = chunk_index(addr[i]);

		xsk->state[c] = XSK_CH_RX_SPARE;
		xsk->rx_spare[xsk->rx_spare_n++] = (uint64_t)c * XSK_CHUNK_SIZE;
	}
}

/* Check an RX descriptor: inside the UMEM, inside one chunk, and on a chunk
 * we gave the kernel. Returns the chunk index or -1. */
static int64_t rx_desc_chunk(const struct xrxe_xsk *xsk, const struct xdp_desc *d)
{
	uint64_t base, off;
	uint32_t c;

	if (d->addr >= xsk->area_size)
		return -1;
	c = chunk_index(d->addr);
	base = (uint64_t)c * XSK_CHUNK_SIZE;
	off = d->addr - base;
	if (off + d->len > XSK_CHUNK_SIZE)
		return -1;
	if (chunk_state(xsk, c) != XSK_CH_FILL)
		return -1;
	return c;
}

/* The XDP program's arrival stamp in front of the frame at addr (struct
 * xrxe_rx_meta), 0 if there is none or no room for one in the chunk. The
 * magic is cleared, so a stamp is never read twice from a reused chunk. */
static uint64_t rx_stamp(struct xrxe_xsk *xsk, uint64_t addr)
{
	struct xrxe_rx_meta m;
	uint8_t *p;

	if (addr % XSK_CHUNK_SIZE < sizeof(m))
		return 0;
	p = (uint8_t *)xsk_umem__get_data(xsk->area, addr) - sizeof(m);
	memcpy(&m, p, sizeof(m));
	if (m.magic != XRXE_RX_META_MAGIC)
		return 0;
	memset(p, 0, sizeof(m.magic));
	xsk->st.rx_stamped++;
	return m.rx_ns;
}

unsigned xrxe_xsk_rx_burst(struct xrxe_xsk *xsk, struct xrxe_rx_frame *frames, unsigned max)
{
	uint32_t idx, n, used = 0;
	unsigned nf = 0;
	struct xrxe_rx_frame cur;
	bool bad = false;

	if (!max)
		return 0;
	/* Copy mode never sets the fill ring's wake-up flag (pitfall 8), but a
	 * zero-copy driver may: it then waits for a syscall to look at it. */
	if (xsk_ring_prod__needs_wakeup(&xsk->fill))
		recvfrom(xsk->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);

	/* Peek more descriptors than frames: a multi-buffer frame takes several. */
	n = xsk_ring_cons__peek(&xsk->rx, max * XRXE_MAX_FRAGS, &idx);
	if (!n)
		return 0;

	cur.nfrags = 0;
	cur.len = 0;
	cur.rx_ns = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&xsk->rx, idx + i);
		bool more = d->options & XDP_PKT_CONTD;
		int64_t c = rx_desc_chunk(xsk, d);

		if (c < 0) {
			/* Not a chunk we lent out (or overrunning it): never
			 * touch its memory, and drop the frame it belongs to. */
			xsk->st.rx_bad_desc++;
			bad = true;
		} else if (xsk->rx_discarding || cur.nfrags == XRXE_MAX_FRAGS) {
			/* Chain too long for struct xrxe_rx_frame: hand back what
			 * we collected and skip the rest of it. */
			if (!xsk->rx_discarding) {
				xsk->st.rx_dropped_too_many_frags++;
				rx_drop_chunks(xsk, cur.addr, cur.nfrags);
				cur.nfrags = 0;
				cur.len = 0;
				xsk->rx_discarding = true;
			}
			uint64_t addr = d->addr;

			xsk->state[c] = XSK_CH_RX_APP;
			rx_drop_chunks(xsk, &addr, 1);
		} else {
			xsk->state[c] = XSK_CH_RX_APP;
			if (!cur.nfrags)
				cur.rx_ns = rx_stamp(xsk, d->addr);
			cur.addr[cur.nfrags] = d->addr;
			cur.frag[cur.nfrags].data = xsk_umem__get_data(xsk->area, d->addr);
			cur.frag[cur.nfrags].len = d->len;
			cur.nfrags++;
			cur.len += d->len;
		}

		if (more)
			continue;
		/* End of a frame. */
		if (xsk->rx_discarding) {
			xsk->rx_discarding = false;
		} else if (bad) {
			rx_drop_chunks(xsk, cur.addr, cur.nfrags);
		} else if (cur.nfrags) {
			frames[nf++] = cur;
			xsk->st.rx_frames++;
			xsk->st.rx_bytes += cur.len;
		}
		bad = false;
		cur.nfrags = 0;
		cur.len = 0;
		used = i + 1;
		if (nf == max)
			break;
	}

	/* An unfinished chain at the end of what was visible: the kernel
	 * publishes a frame's descriptors together, so this should not happen,
	 * but if it does, give the descriptors back to the ring and read them
	 * again next time rather than split the frame. A chain being discarded
	 * is different: it is consumed as it goes. */
	if (used < n) {
		if (xsk->rx_discarding) {
			used = n;
		} else if (cur.nfrags || bad) {
			for (unsigned k = 0; k < cur.nfrags; k++)
				xsk->state[chunk_index(cur.addr[k])] = XSK_CH_FILL;
		}
		xsk_ring_cons__cancel(&xsk->rx, n - used);
	}
	if (used)
		xsk_ring_cons__release(&xsk->rx, used);
	if (xsk->rx_spare_n)
		fill_refill(xsk);
	return nf;
}

void xrxe_xsk_rx_release(struct xrxe_xsk *xsk, const struct xrxe_rx_frame *frames, unsigned n)
{
	for (unsigned f = 0; f < n; f++) {
		for (unsigned i = 0; i < frames[f].nfrags && i < XRXE_MAX_FRAGS; i++) {
			uint64_t addr = frames[f].addr[i];
			uint32_t c = chunk_index(addr);

			/* A double release would put one chunk in the fill ring
			 * twice, and two frames would land in it. */
			if (addr >= xsk->area_size || chunk_state(xsk, c) != XSK_CH_RX_APP) {
				xsk->st.rx_bad_release++;
				continue;
			}
			xsk->state[c] = XSK_CH_RX_SPARE;
			xsk->rx_spare[xsk->rx_spare_n++] = (uint64_t)c * XSK_CHUNK_SIZE;
		}
	}
	fill_refill(xsk);
}

/* ------------------------------------------------------------------------
 * TX
 * ---------------------------------------------------------------------- */

int xrxe_xsk_tx_reserve(struct xrxe_xsk *xsk, uint32_t len, struct xrxe_tx_frame *frame)
{
	uint32_t need, left = len;

	if (!len)
		return -EINVAL;
	if (len > xsk->max_frame_len)
		return -EMSGSIZE;
	need = (len + XSK_CHUNK_SIZE - 1) / XSK_CHUNK_SIZE;
	if (xsk->tx_free_n < need)
		comp_reap(xsk);
	if (xsk->tx_free_n < need) {
		xsk->st.tx_no_frames++;
		return -ENOBUFS;
	}
	for (uint32_t i = 0; i < need; i++) {
		uint64_t addr = xsk->tx_free[--xsk->tx_free_n];
		uint32_t piece = left < XSK_CHUNK_SIZE ? left : XSK_CHUNK_SIZE;

		xsk->state[chunk_index(addr)] = XSK_CH_TX_APP;
		frame->addr[i] = addr;
		frame->frag[i].data = xsk_umem__get_data(xsk->area, addr);
		frame->frag[i].len = piece;
		left -= piece;
	}
	frame->nfrags = (uint8_t)need;
	frame->len = len;
	return 0;
}

void xrxe_xsk_tx_abort(struct xrxe_xsk *xsk, const struct xrxe_tx_frame *frame)
{
	for (unsigned i = 0; i < frame->nfrags && i < XRXE_MAX_FRAGS; i++) {
		uint64_t addr = frame->addr[i];
		uint32_t c = chunk_index(addr);

		if (addr >= xsk->area_size || addr % XSK_CHUNK_SIZE ||
		    chunk_state(xsk, c) != XSK_CH_TX_APP) {
			xsk->st.tx_bad_frame++;
			continue;
		}
		xsk->state[c] = XSK_CH_TX_FREE;
		xsk->tx_free[xsk->tx_free_n++] = addr;
	}
}

/* A frame handed back for submission must be one we reserved, with pieces
 * that each fit their chunk: an invalid descriptor is silently skipped by the
 * kernel and its chunk never completes. */
static bool tx_frame_valid(const struct xrxe_xsk *xsk, const struct xrxe_tx_frame *f)
{
	uint32_t total = 0;

	if (!f->nfrags || f->nfrags > XRXE_MAX_FRAGS)
		return false;
	for (unsigned i = 0; i < f->nfrags; i++) {
		uint64_t addr = f->addr[i];

		if (addr >= xsk->area_size || addr % XSK_CHUNK_SIZE ||
		    chunk_state(xsk, chunk_index(addr)) != XSK_CH_TX_APP)
			return false;
		if (!f->frag[i].len || f->frag[i].len > XSK_CHUNK_SIZE)
			return false;
		total += f->frag[i].len;
	}
	return total <= xsk->max_frame_len;
}

int xrxe_xsk_tx_submit(struct xrxe_xsk *xsk, const struct xrxe_tx_frame *frames, unsigned n)
{
	uint32_t descs = 0, idx, k = 0;

	for (unsigned f = 0; f < n; f++) {
		if (!tx_frame_valid(xsk, &frames[f])) {
			xsk->st.tx_bad_frame++;
			return -EINVAL;
		}
		descs += frames[f].nfrags;
	}
	if (!descs)
		return 0;
	/* All descriptors of all frames, or none: a frame whose first pieces
	 * were on the ring without its last would be glued by the kernel to
	 * whatever comes next. */
	if (xsk_ring_prod__reserve(&xsk->tx, descs, &idx) != descs)
		return -ENOBUFS;
	for (unsigned f = 0; f < n; f++) {
		const struct xrxe_tx_frame *fr = &frames[f];

		for (unsigned i = 0; i < fr->nfrags; i++) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&xsk->tx, idx + k++);
			bool last = i + 1 == fr->nfrags;

			d->addr = fr->addr[i];
			d->len = fr->frag[i].len;
			d->options = last ? 0 : XDP_PKT_CONTD;
			xsk->state[chunk_index(fr->addr[i])] =
				XSK_CH_TX_KERNEL | (last ? XSK_CH_LAST : 0);
			xsk->st.tx_bytes += fr->frag[i].len;
		}
	}
	xsk_ring_prod__submit(&xsk->tx, descs);
	xsk->st.tx_frames += n;
	xsk->tx_inflight_frames += n;
	return (int)n;
}

int xrxe_xsk_send(struct xrxe_xsk *xsk, const void *frame, uint32_t len)
{
	struct xrxe_tx_frame f;
	const uint8_t *src = frame;
	int err;

	err = xrxe_xsk_tx_reserve(xsk, len, &f);
	if (err == -ENOBUFS) {
		xrxe_xsk_tx_flush(xsk);
		err = xrxe_xsk_tx_reserve(xsk, len, &f);
	}
	if (err)
		return err;
	for (unsigned i = 0; i < f.nfrags; i++) {
		memcpy(f.frag[i].data, src, f.frag[i].len);
		src += f.frag[i].len;
	}
	err = xrxe_xsk_tx_submit(xsk, &f, 1);
	if (err == -ENOBUFS) {
		xrxe_xsk_tx_flush(xsk);
		err = xrxe_xsk_tx_submit(xsk, &f, 1);
	}
	if (err < 0) {
		xrxe_xsk_tx_abort(xsk, &f);
		return err;
	}
	return 0;
}

/* Ask the kernel to transmit what is on the TX ring. Copy-mode TX runs only
 * inside sendto() (and then at most 32 descriptors per call), so the TX
 * ring's need-wakeup flag is always set there (pitfall 8); a zero-copy driver
 * may clear it while its NAPI is running anyway. */
static void tx_kick(struct xrxe_xsk *xsk)
{
	if (xsk_prod_nb_free(&xsk->tx, xsk->tx.size) >= xsk->tx.size)
		return; /* the kernel has consumed every descriptor */
	if (!xsk_ring_prod__needs_wakeup(&xsk->tx))
		return;
	xsk->st.tx_kicks++;
	if (sendto(xsk->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
		return;
	switch (errno) {
	case EAGAIN:  /* the device pushed back (pfifo on veth), or the
		       * completion ring or socket send buffer is full */
	case EBUSY:   /* another context is transmitting on this queue */
	case ENOBUFS: /* out of skbs */
	case EINTR:
		return; /* retry on the next flush */
	default:
		xsk->st.tx_kick_errors++;
		if (!xsk->kick_error_logged) {
			xsk->kick_error_logged = true;
			xrxe_warn("xsk %s/%u: TX wake-up failed: %s (further errors only counted)",
				  xsk->ifname, xsk->queue_id, strerror(errno));
		}
	}
}

unsigned xrxe_xsk_tx_flush(struct xrxe_xsk *xsk)
{
	tx_kick(xsk);
	return comp_reap(xsk);
}

uint32_t xrxe_xsk_tx_pending(const struct xrxe_xsk *xsk)
{
	return xsk->tx_inflight_frames;
}

void xrxe_xsk_get_stats(struct xrxe_xsk *xsk, struct xrxe_xsk_stats *stats)
{
	struct xdp_statistics ks;
	socklen_t optlen = sizeof(ks);

	*stats = xsk->st;
	memset(&ks, 0, sizeof(ks));
	/* Older kernels return a shorter struct (without the ring counters);
	 * the zeroed tail then reads as 0. */
	if (getsockopt(xsk->fd, SOL_XDP, XDP_STATISTICS, &ks, &optlen) == 0) {
		stats->k_rx_dropped = ks.rx_dropped;
		stats->k_rx_invalid_descs = ks.rx_invalid_descs;
		stats->k_tx_invalid_descs = ks.tx_invalid_descs;
		stats->k_rx_ring_full = ks.rx_ring_full;
		stats->k_rx_fill_ring_empty = ks.rx_fill_ring_empty_descs;
		stats->k_tx_ring_empty = ks.tx_ring_empty_descs;
	}
}
