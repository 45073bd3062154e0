// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the control socket: the decoder of control messages
 * (ctrl.c: lengths, ops, fd counts, HELLO first) and every request handler
 * behind it (ctrl_verbs.c, ctrl_ops.c, ctrl_cm.c), against a real control
 * socket, a real transport core, device page, rtnetlink on "lo" and the
 * per-user quotas -- everything of xrxed but the AF_XDP I/O. A local
 * application is hostile: it may send any bytes with any descriptors.
 *
 * Per input: one connection; unless byte 0 says otherwise it says HELLO
 * properly first (a memfd and a pipe), then each record of the input is one
 * message: [op][fds][len16][body...] becomes a header {op, flags from the
 * body, length = the real length} followed by the body, or, for op 0xff,
 * the body is sent as the whole message (any header at all). The fds byte
 * attaches up to two descriptors of assorted kinds (pipe ends, a memfd, a
 * SEQPACKET socket, an eventfd, a regular file). The daemon's event loop
 * runs between messages; replies and their fds are read and closed. The
 * connection then closes: the daemon must release everything it owns.
 *
 * Needs to create /run/xrxe/fz<pid>.sock (root, as xrxed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ctrl.h"
#include "daemon/ctrl_msg.h"
#include "daemon/devpage.h"
#include "daemon/evsrc.h"
#include "daemon/netlink.h"
#include "daemon/quota.h"
#include "transport/transport.h"
#include "util/log.h"
#include "xrxe/abi.h"

static struct {
	char ifname[16];
	int epfd;
	struct xrxe_tp *tp;
	struct xrxe_devpage *dp;
	struct xrxe_nl *nl;
	struct xrxe_quota *quota;
	struct xrxe_ctrl *ctrl;
} g;

static int no_reserve(void *user, uint32_t len, struct xrxe_tp_txbuf *buf)
{
	(void)user;
	(void)len;
	(void)buf;
	return -ENOBUFS; /* nothing goes on a wire here */
}

static void no_submit(void *user, struct xrxe_tp_txbuf *buf)
{
	(void)user;
	(void)buf;
}

static void cq_event(void *user, void *cq_user)
{
	(void)user;
	xrxe_ctrl_cq_event(g.ctrl, cq_user);
}

static void async_event(void *user, enum ibv_event_type type, void *obj_user)
{
	(void)user;
	xrxe_ctrl_async_event(g.ctrl, type, obj_user);
}

static const struct xrxe_tp_ops ops = {
	.tx_reserve = no_reserve, .tx_submit = no_submit, .cq_event = cq_event,
	.async_event = async_event,
};

static void setup(void)
{
	struct xrxe_tp_config tcfg = {
		.ops = &ops, .max_path_mtu = 1024, .max_qp = 256, .max_mr = 1024,
		.local_ack_delay = 15, .key_seed = 1,
	};
	struct xrxe_devpage_config dcfg = {
		.ifname = "lo", .ifindex = 1, .netdev_mtu = 1500, .max_path_mtu = 1024,
		.max_qp = 256, .max_mr = 1024, .max_cq = 512, .max_pd = 319, .max_ah = 511,
		.max_srq = 64, .max_mcast_grp = 4, .max_mcast_qp_attach = 8,
		.local_ca_ack_delay = 15,
	};
	struct xrxe_nl_config ncfg = { .ifname = "lo", .ifindex = 1 };
	struct xrxe_quota_limits lim;
	uint64_t cap[XRXE_Q_COUNT];

	xrxe_log_init("fuzz_ctrl");
	xrxe_log_set_level(getenv("FUZZ_CTRL_DEBUG") ? XRXE_LOG_DEBUG : XRXE_LOG_ERROR);
	snprintf(g.ifname, sizeof(g.ifname), "fz%d", (int)getpid());
	g.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (g.epfd < 0 || xrxe_tp_create(&tcfg, &g.tp) || xrxe_devpage_create(&dcfg, &g.dp))
		abort();
	ncfg.dp = g.dp;
	if (xrxe_nl_open(&ncfg, &g.nl))
		abort();
	xrxe_quota_defaults(&lim);
	for (int i = 0; i < XRXE_Q_COUNT; i++)
		cap[i] = 4096;
	cap[XRXE_Q_MR_BYTES] = cap[XRXE_Q_RING_BYTES] = 1ull << 32;
	if (xrxe_quota_create(&lim, cap, &g.quota))
		abort();

	struct xrxe_ctrl_config ccfg = {
		.ifname = g.ifname, .epfd = g.epfd, .tp = g.tp, .dp = g.dp, .nl = g.nl,
		.max_cq = 512, .max_srq = 64, .quota = g.quota,
	};

	if (xrxe_ctrl_open(&ccfg, &g.ctrl))
		abort();
}

static void cleanup(void)
{
	xrxe_ctrl_close(g.ctrl); /* removes the socket file */
}

/* One round of the daemon's loop: control events, transport, ticks. */
static void daemon_pass(int timeout_ms)
{
	struct epoll_event ev[16];
	int n = epoll_wait(g.epfd, ev, 16, timeout_ms);

	for (int i = 0; i < n; i++) {
		struct xrxe_evsrc *src = ev[i].data.ptr;

		src->fn(src, ev[i].events);
	}
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;

	xrxe_tp_poll(g.tp, now);
	/* parked requests retry, the CM's timers run (the HELLO timeout is
	 * real time: 5 s, never within one input) */
	xrxe_ctrl_tick(g.ctrl, now);
}

/* Handles the daemon handed out (first word of a successful reply). Their
 * generation is random per connection, so an input names them indirectly:
 * a 32-bit word 0x4848000k in a request body becomes handle k (mod count). */
static uint32_t handles[64];
static unsigned nhandles;
#define HANDLE_REF_MASK 0xffffff00u
#define HANDLE_REF 0x48480000u

static void resolve_handle_refs(uint8_t *body, size_t len)
{
	for (size_t off = 0; off + 4 <= len; off += 4) {
		uint32_t v;

		memcpy(&v, body + off, 4);
		if ((v & HANDLE_REF_MASK) == HANDLE_REF && nhandles) {
			v = handles[(v & 0xff) % nhandles];
			memcpy(body + off, &v, 4);
		}
	}
}

/* Read and drop every reply that arrived (keeping the handles). */
static void drain(int sock)
{
	for (;;) {
		uint8_t buf[XRXE_MAX_CTRL_MSG + 1];
		int fds[XRXE_MAX_CTRL_FDS];
		unsigned nfds = 0;
		bool trunc;
		ssize_t r = xrxe_ctrl_recv(sock, buf, sizeof(buf), fds, &nfds, &trunc);

		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		if (r <= 0)
			return;
		if (r >= (ssize_t)sizeof(struct xrxe_ctrl_hdr) + 4 &&
		    ((struct xrxe_ctrl_hdr *)buf)->status == 0 && nhandles < 64 &&
		    ((struct xrxe_ctrl_hdr *)buf)->op != XRXE_CTRL_HELLO)
			memcpy(&handles[nhandles++], buf + sizeof(struct xrxe_ctrl_hdr), 4);
		if (getenv("FUZZ_CTRL_DEBUG") && r >= (ssize_t)sizeof(struct xrxe_ctrl_hdr))
			fprintf(stderr, "reply op %u status %d\n", ((struct xrxe_ctrl_hdr *)buf)->op,
				((struct xrxe_ctrl_hdr *)buf)->status);
	}
}

/* A descriptor of kind k for the message (closed by the caller after the
 * send; -1 if none). */
static int make_fd(unsigned k, int *extra)
{
	int p[2], fd = -1;

	*extra = -1;
	switch (k & 7) {
	case 1: /* pipe, write end (channels, HELLO's async pipe) */
		if (pipe2(p, O_CLOEXEC) == 0) {
			fd = p[1];
			*extra = p[0];
		}
		break;
	case 2: /* pipe, read end */
		if (pipe2(p, O_CLOEXEC) == 0) {
			fd = p[0];
			*extra = p[1];
		}
		break;
	case 3: /* a memfd the size of a registration window */
		fd = memfd_create("fz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd >= 0 && ftruncate(fd, 1 << 20) < 0) {
			close(fd);
			fd = -1;
		}
		break;
	case 4: /* SEQPACKET socket (CM channels) */
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) == 0) {
			fd = p[1];
			*extra = p[0];
		}
		break;
	case 5:
		fd = eventfd(0, EFD_CLOEXEC);
		break;
	case 6:
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		break;
	default:
		break;
	}
	return fd;
}

struct in {
	const uint8_t *d;
	size_t n, pos;
};

static unsigned take(struct in *in)
{
	return in->pos < in->n ? in->d[in->pos++] : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct in in = { .d = data, .n = size };
	uint8_t msg[XRXE_MAX_CTRL_MSG + 64];
	uint32_t seq = 0;
	int sock;

	if (!ready) {
		setup();
		atexit(cleanup);
		ready = true;
	}
	if (size < 1)
		return 0;
	nhandles = 0;
	sock = xrxe_ctrl_connect(g.ifname);
	if (sock < 0)
		abort();
	fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
	daemon_pass(0); /* accept */

	if (!(take(&in) & 1)) {
		struct xrxe_ctrl_hello h = { .hdr = { .op = XRXE_CTRL_HELLO,
						      .length = sizeof(h), .seq = ++seq },
					     .abi_version = XRXE_ABI_VERSION };
		int e0, e1, fds[2] = { make_fd(3, &e0), make_fd(1, &e1) };

		xrxe_ctrl_send(sock, &h, sizeof(h), fds, 2, false);
		for (int i = 0; i < 2; i++) {
			close(fds[i]);
		}
		if (e1 >= 0)
			close(e1);
		daemon_pass(0);
		drain(sock);
	}
	for (unsigned r = 0; r < 32 && in.pos < in.n; r++) {
		unsigned op = take(&in), fsel = take(&in);
		size_t len = take(&in);
		size_t hl = sizeof(struct xrxe_ctrl_hdr);
		int fds[2], extra[2], nfds = 0;

		len = len << 8 | take(&in);
		if (len > sizeof(msg) - hl)
			len = sizeof(msg) - hl;
		if (len > in.n - in.pos)
			len = in.n - in.pos;
		if (op == 0xff) {
			memcpy(msg, in.d + in.pos, len);
			in.pos += len;
		} else {
			struct xrxe_ctrl_hdr h = { .op = (uint16_t)op, .length = (uint32_t)(hl + len),
						   .seq = ++seq };

			if (len >= 2)
				memcpy(&h.flags, in.d + in.pos, 2);
			memcpy(msg, &h, hl);
			memcpy(msg + hl, in.d + in.pos, len);
			in.pos += len;
			resolve_handle_refs(msg + hl, len);
			len += hl;
		}
		for (int i = 0; i < 2; i++) {
			fds[nfds] = make_fd(fsel >> (3 * i), &extra[nfds]);
			if (fds[nfds] >= 0)
				nfds++;
			else if (extra[nfds] >= 0)
				close(extra[nfds]);
		}
		xrxe_ctrl_send(sock, msg, len, fds, (unsigned)nfds, false);
		for (int i = 0; i < nfds; i++) {
			close(fds[i]);
			if (extra[i] >= 0)
				close(extra[i]);
		}
		daemon_pass(0);
		drain(sock);
	}
	close(sock);
	/* the daemon sees the hang-up and tears the connection down */
	for (int i = 0; i < 4; i++)
		daemon_pass(0);
	return 0;
}
