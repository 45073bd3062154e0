// SPDX-License-Identifier: MIT
/*
 * Drives the RDMA CM shim (librdmacm.so.1) through dlopen, so that this
 * program links nothing of rdma-core's and is built like every tests/net
 * helper. Prints TAP lines; exits 1 if any check failed.
 *
 *   rdmacm_stub_test SHIM [REAL]
 *
 * Checks, with no xrxe daemon (the caller points XRXE_RUN_DIR at an empty
 * directory): rsocket() fails with ENODEV, every other rsocket entry point
 * on a descriptor that is no rsocket with EBADF (riomap (off_t)-1, riowrite
 * (size_t)-1), rpoll/rselect work on ordinary descriptors; the calls that need a device fail with
 * ENODEV, never ENOMEM and never a crash; argument errors are EINVAL; and,
 * given rdma-core's own library as REAL, rdma_event_str answers as it does.
 */
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

static int failed;
static void *lib;

static void check(int ok, const char *fmt, const char *what, int err)
{
	printf("%s - ", ok ? "ok" : "not ok");
	printf(fmt, what);
	if (!ok)
		printf(" (errno %d: %s)", err, strerror(err));
	printf("\n");
	failed |= !ok;
}

static void *sym(const char *name)
{
	void *p = dlsym(lib, name);

	if (!p) {
		printf("not ok - %s is exported (%s)\n", name, dlerror());
		failed = 1;
	}
	return p;
}

/* The rsocket API with no daemon: rsocket() fails with ENODEV (ENOTSUP for
 * what rsockets do not serve), every other call on a descriptor that is no
 * rsocket with EBADF (riomap (off_t)-1, riowrite (size_t)-1), and rpoll and
 * rselect on ordinary descriptors behave as poll and select. */
static void rsocket_no_daemon(void)
{
	char buf[16];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	struct timeval tv = { 0, 0 };
	int iv = 0, n = 0, p[2];
	const int bad = 1000; /* not open, no rsocket */

#define RCALL(name, type, call, err)                                                   \
	do {                                                                           \
		__typeof__(type) *fn = (__typeof__(type) *)sym(#name);                   \
		if (fn) {                                                              \
			errno = 0;                                                     \
			int ok = (call) && errno == (err);                             \
			check(ok, "%s fails with " #err, #name, errno);                \
			n++;                                                           \
		}                                                                      \
	} while (0)

	RCALL(rsocket, int(int, int, int), fn(AF_INET, SOCK_STREAM, 0) == -1, ENODEV);
	RCALL(rsocket, int(int, int, int), fn(AF_UNIX, SOCK_STREAM, 0) == -1, ENOTSUP);
	RCALL(rbind, int(int, const struct sockaddr *, socklen_t),
	      fn(bad, (struct sockaddr *)&sin, sizeof(sin)) == -1, EBADF);
	RCALL(rlisten, int(int, int), fn(bad, 1) == -1, EBADF);
	RCALL(raccept, int(int, struct sockaddr *, socklen_t *),
	      fn(bad, (struct sockaddr *)&sin, &sl) == -1, EBADF);
	RCALL(rconnect, int(int, const struct sockaddr *, socklen_t),
	      fn(bad, (struct sockaddr *)&sin, sizeof(sin)) == -1, EBADF);
	RCALL(rshutdown, int(int, int), fn(bad, SHUT_RDWR) == -1, EBADF);
	RCALL(rclose, int(int), fn(bad) == -1, EBADF);
	RCALL(rrecv, ssize_t(int, void *, size_t, int), fn(bad, buf, sizeof(buf), 0) == -1, EBADF);
	RCALL(rrecvfrom, ssize_t(int, void *, size_t, int, struct sockaddr *, socklen_t *),
	      fn(bad, buf, sizeof(buf), 0, (struct sockaddr *)&sin, &sl) == -1, EBADF);
	RCALL(rrecvmsg, ssize_t(int, struct msghdr *, int), fn(bad, &msg, 0) == -1, EBADF);
	RCALL(rsend, ssize_t(int, const void *, size_t, int), fn(bad, buf, sizeof(buf), 0) == -1,
	      EBADF);
	RCALL(rsendto, ssize_t(int, const void *, size_t, int, const struct sockaddr *, socklen_t),
	      fn(bad, buf, sizeof(buf), 0, (struct sockaddr *)&sin, sizeof(sin)) == -1, EBADF);
	RCALL(rsendmsg, ssize_t(int, const struct msghdr *, int), fn(bad, &msg, 0) == -1, EBADF);
	RCALL(rread, ssize_t(int, void *, size_t), fn(bad, buf, sizeof(buf)) == -1, EBADF);
	RCALL(rreadv, ssize_t(int, const struct iovec *, int), fn(bad, &iov, 1) == -1, EBADF);
	RCALL(rwrite, ssize_t(int, const void *, size_t), fn(bad, buf, sizeof(buf)) == -1, EBADF);
	RCALL(rwritev, ssize_t(int, const struct iovec *, int), fn(bad, &iov, 1) == -1, EBADF);
	RCALL(rgetpeername, int(int, struct sockaddr *, socklen_t *),
	      fn(bad, (struct sockaddr *)&sin, &sl) == -1, EBADF);
	RCALL(rgetsockname, int(int, struct sockaddr *, socklen_t *),
	      fn(bad, (struct sockaddr *)&sin, &sl) == -1, EBADF);
	RCALL(rsetsockopt, int(int, int, int, const void *, socklen_t),
	      fn(bad, SOL_SOCKET, SO_REUSEADDR, &iv, sizeof(iv)) == -1, EBADF);
	RCALL(rgetsockopt, int(int, int, int, void *, socklen_t *),
	      fn(bad, SOL_SOCKET, SO_REUSEADDR, &iv, &sl) == -1, EBADF);
	RCALL(rfcntl, int(int, int, ...), fn(bad, 3 /* F_GETFL */) == -1, EBADF);
	RCALL(riomap, off_t(int, void *, size_t, int, int, off_t),
	      fn(bad, buf, sizeof(buf), 2, 0, -1) == (off_t)-1, EBADF);
	RCALL(riounmap, int(int, void *, size_t), fn(bad, buf, sizeof(buf)) == -1, EBADF);
	RCALL(riowrite, size_t(int, const void *, size_t, off_t, int),
	      fn(bad, buf, sizeof(buf), 0, 0) == (size_t)-1, EBADF);
#undef RCALL
	if (pipe(p) == 0) {
		int (*rpoll_fn)(struct pollfd *, nfds_t, int) =
			(int (*)(struct pollfd *, nfds_t, int))sym("rpoll");
		int (*rselect_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *) =
			(int (*)(int, fd_set *, fd_set *, fd_set *, struct timeval *))sym("rselect");
		struct pollfd pfd[2] = { { .fd = p[0], .events = POLLIN },
					 { .fd = p[1], .events = POLLOUT } };

		if (rpoll_fn) {
			int r = rpoll_fn(pfd, 2, 100);

			check(r == 1 && !pfd[0].revents && (pfd[1].revents & POLLOUT),
			      "%s on a pipe: only its write end is ready", "rpoll", errno);
			n++;
		}
		if (rselect_fn && p[1] < FD_SETSIZE) {
			fd_set rd, wr;
			int r;

			FD_ZERO(&rd);
			FD_ZERO(&wr);
			FD_SET(p[0], &rd);
			FD_SET(p[1], &wr);
			r = rselect_fn((p[0] > p[1] ? p[0] : p[1]) + 1, &rd, &wr, NULL, &tv);
			check(r == 1 && !FD_ISSET(p[0], &rd) && FD_ISSET(p[1], &wr),
			      "%s on a pipe: only its write end is ready", "rselect", errno);
			n++;
		}
		close(p[0]);
		close(p[1]);
	}
	check(n == 28, "%s: all 27 rsocket entry points checked", "rsocket", 0);
}

static void no_device(void)
{
	struct rdma_event_channel *(*create_channel)(void) = sym("rdma_create_event_channel");
	int (*create_id)(struct rdma_event_channel *, struct rdma_cm_id **, void *,
			 enum rdma_port_space) = sym("rdma_create_id");
	int (*getaddrinfo)(const char *, const char *, const struct rdma_addrinfo *,
			   struct rdma_addrinfo **) = sym("rdma_getaddrinfo");
	struct ibv_context **(*get_devices)(int *) = sym("rdma_get_devices");
	int (*create_ep)(struct rdma_cm_id **, struct rdma_addrinfo *, struct ibv_pd *,
			 struct ibv_qp_init_attr *) = sym("rdma_create_ep");
	int (*get_event)(struct rdma_event_channel *, struct rdma_cm_event **) =
		sym("rdma_get_cm_event");
	int (*ack_event)(struct rdma_cm_event *) = sym("rdma_ack_cm_event");
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(7471),
				   .sin_addr.s_addr = htonl(0x7f000001) };
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo rai = { .ai_port_space = RDMA_PS_TCP, .ai_qp_type = IBV_QPT_RC,
				     .ai_dst_addr = (struct sockaddr *)&dst,
				     .ai_dst_len = sizeof(dst) };
	struct rdma_addrinfo *res = NULL;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id = NULL;
	struct ibv_context **devs;
	int n = -1, ret;

	if (!create_channel || !create_id || !getaddrinfo || !get_devices || !create_ep ||
	    !get_event || !ack_event)
		return;
	errno = 0;
	check(!create_channel() && errno == ENODEV,
	      "%s: no daemon, NULL and ENODEV", "rdma_create_event_channel", errno);
	errno = 0;
	ret = create_id(NULL, &id, NULL, RDMA_PS_TCP);
	check(ret == -1 && errno == ENODEV, "%s: no daemon, -1 and ENODEV", "rdma_create_id", errno);
	errno = 0;
	ret = getaddrinfo(NULL, "7471", &hints, &res);
	check(ret == -1 && errno == ENODEV, "%s: no daemon, -1 and ENODEV (as stock without devices)",
	      "rdma_getaddrinfo", errno);
	errno = 0;
	devs = get_devices(&n);
	check(!devs && n == 0 && errno == ENODEV, "%s: no daemon, NULL, 0 devices, ENODEV",
	      "rdma_get_devices", errno);
	errno = 0;
	ret = create_ep(&id, &rai, NULL, NULL);
	check(ret == -1 && errno == ENODEV, "%s: no daemon, -1 and ENODEV (stock says ENOMEM)",
	      "rdma_create_ep", errno);
	errno = 0;
	ret = get_event(NULL, &ev);
	check(ret == -1 && errno == EINVAL, "%s(NULL channel): -1 and EINVAL", "rdma_get_cm_event",
	      errno);
	errno = 0;
	ret = ack_event(NULL);
	check(ret == -1 && errno == EINVAL, "%s(NULL): -1 and EINVAL", "rdma_ack_cm_event", errno);
}

static void event_strings(const char *real_path)
{
	const char *(*ours)(enum rdma_cm_event_type) = sym("rdma_event_str");
	const char *(*theirs)(enum rdma_cm_event_type);
	void *real = dlopen(real_path, RTLD_NOW | RTLD_LOCAL);
	int bad = 0;

	if (!real || !ours) {
		printf("ok - rdma_event_str # SKIP %s not loadable\n", real_path);
		return;
	}
	theirs = (const char *(*)(enum rdma_cm_event_type))dlsym(real, "rdma_event_str");
	if (!theirs || (void *)theirs == (void *)ours) {
		/* The loader may hand back ours for the same SONAME. */
		printf("ok - rdma_event_str # SKIP rdma-core's not loaded beside ours\n");
		return;
	}
	for (int i = -2; i < 40; i++) {
		if (strcmp(ours((enum rdma_cm_event_type)i), theirs((enum rdma_cm_event_type)i))) {
			printf("# rdma_event_str(%d): ours '%s', rdma-core '%s'\n", i,
			       ours((enum rdma_cm_event_type)i), theirs((enum rdma_cm_event_type)i));
			bad = 1;
		}
	}
	check(!bad, "%s answers as rdma-core's for -2..39", "rdma_event_str", 0);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s SHIM [REAL]\n", argv[0]);
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		printf("not ok - dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	rsocket_no_daemon();
	no_device();
	if (argc > 2)
		event_strings(argv[2]);
	return failed;
}
