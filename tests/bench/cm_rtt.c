// SPDX-License-Identifier: MIT
/*
 * cm_rtt: the connection manager's handshake timed one connection at a time,
 * and a UDP ping-pong between the same two hosts as its baseline.
 *
 *   cm_rtt server ADDR PORT [--qp] [--ready FILE]    accept every connection, forever
 *   cm_rtt client SRC DST PORT [--qp] [-n N] [-w W]  N connections, one after another
 *   cm_rtt udp-echo ADDR PORT [--ready FILE]         echo datagrams, forever
 *   cm_rtt udp-ping SRC DST PORT [-n N] [-s SIZE]    N round trips of SIZE bytes (256)
 *
 * By default neither side creates a QP: the client's rdma_connect carries a made-up QPN
 * and, without a QP, librdmacm reports CONNECT_RESPONSE instead of moving a
 * QP to RTR/RTS and sending the RTU itself; the server accepts at once. So
 * "req_rep" is REQ out -> REP in as the active side's application sees it
 * (rdma_connect to the CONNECT_RESPONSE event: the passive side's daemon or
 * kernel, its application's accept, and both directions of the wire), with
 * no QP work inside. Per connection the client also times address and route
 * resolution, rdma_establish (RTU out), DREQ -> DREP (rdma_disconnect to the
 * DISCONNECTED event) and the whole create -> destroy cycle. The first W
 * connections (default 2: ARP, first MADs) are not counted.
 *
 * With --qp both sides create an RC QP per connection (rdma_create_qp on the
 * ID's default PD, CQs made by the library) as cmtime does: the server
 * creates it when the request arrives and accepts (RTR, RTS, REP), the
 * client's library answers the REP itself (RTR, RTS, RTU), so "connect" is
 * rdma_connect to ESTABLISHED: cmtime's per-connection connect step, one
 * connection at a time; "create_qp" is the client's rdma_create_qp.
 *
 * librdmacm is opened with dlopen, so the bench build rule (the daemon's
 * libraries only) builds it and the same binary runs on xrxe's librdmacm
 * (`xrxe run` puts it first on LD_LIBRARY_PATH) and on rdma-core's (kernel
 * rdma_cm). The UDP baseline is C too: blocking sockets on both ends, as the
 * CM client blocks in rdma_get_cm_event.
 *
 * Output: "key value" lines (microseconds), e.g. req_rep_p50_us 123.4.
 */
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct {
	struct rdma_event_channel *(*create_event_channel)(void);
	int (*create_id)(struct rdma_event_channel *, struct rdma_cm_id **, void *,
			 enum rdma_port_space);
	int (*destroy_id)(struct rdma_cm_id *);
	int (*bind_addr)(struct rdma_cm_id *, struct sockaddr *);
	int (*listen)(struct rdma_cm_id *, int);
	int (*resolve_addr)(struct rdma_cm_id *, struct sockaddr *, struct sockaddr *, int);
	int (*resolve_route)(struct rdma_cm_id *, int);
	int (*connect)(struct rdma_cm_id *, struct rdma_conn_param *);
	int (*accept)(struct rdma_cm_id *, struct rdma_conn_param *);
	int (*establish)(struct rdma_cm_id *);
	int (*disconnect)(struct rdma_cm_id *);
	int (*create_qp)(struct rdma_cm_id *, struct ibv_pd *, struct ibv_qp_init_attr *);
	void (*destroy_qp)(struct rdma_cm_id *);
	int (*get_cm_event)(struct rdma_event_channel *, struct rdma_cm_event **);
	int (*ack_cm_event)(struct rdma_cm_event *);
	const char *(*event_str)(enum rdma_cm_event_type);
} cm;

static void load_rdmacm(void)
{
	void *h = dlopen("librdmacm.so.1", RTLD_NOW);

	if (!h) {
		fprintf(stderr, "cm_rtt: %s\n", dlerror());
		exit(1);
	}
#define SYM(f)                                                                     \
	do {                                                                       \
		*(void **)&cm.f = dlsym(h, "rdma_" #f);                            \
		if (!cm.f) {                                                       \
			fprintf(stderr, "cm_rtt: rdma_%s: %s\n", #f, dlerror());   \
			exit(1);                                                   \
		}                                                                  \
	} while (0)
	SYM(create_event_channel);
	SYM(create_id);
	SYM(destroy_id);
	SYM(bind_addr);
	SYM(listen);
	SYM(resolve_addr);
	SYM(resolve_route);
	SYM(connect);
	SYM(accept);
	SYM(establish);
	SYM(disconnect);
	SYM(create_qp);
	SYM(destroy_qp);
	SYM(get_cm_event);
	SYM(ack_cm_event);
	SYM(event_str);
#undef SYM
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void addr_of(const char *host, const char *port, int socktype, struct sockaddr_storage *ss,
		    socklen_t *len)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST, .ai_socktype = socktype }, *ai;
	int ret = getaddrinfo(host, port, &hints, &ai);

	if (ret) {
		fprintf(stderr, "cm_rtt: %s: %s\n", host, gai_strerror(ret));
		exit(2);
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
}

static void touch(const char *path)
{
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "w");
	if (f)
		fclose(f);
}

static void die(const char *what)
{
	fprintf(stderr, "cm_rtt: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The next event must be `want`: acknowledged here; anything else ends the run. */
static void expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;
	int status;

	if (cm.get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	got = ev->event;
	status = ev->status;
	cm.ack_cm_event(ev);
	if (got != want) {
		fprintf(stderr, "cm_rtt: expected %s, got %s (status %d)\n", cm.event_str(want),
			cm.event_str(got), status);
		exit(1);
	}
}

/* cmtime's QP: RC, one WR and one SGE each way, the library's CQs. */
static void create_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	if (cm.create_qp(id, NULL, &a))
		die("rdma_create_qp");
}

static int run_server(const char *addr, const char *port, const char *ready, int qp)
{
	struct rdma_event_channel *ch = cm.create_event_channel();
	struct rdma_cm_id *lid;
	struct sockaddr_storage ss;
	socklen_t len;
	uint32_t qpn = 0x200;

	if (!ch)
		die("rdma_create_event_channel");
	addr_of(addr, port, SOCK_STREAM, &ss, &len);
	if (cm.create_id(ch, &lid, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (cm.bind_addr(lid, (struct sockaddr *)&ss))
		die("rdma_bind_addr");
	if (cm.listen(lid, 64))
		die("rdma_listen");
	touch(ready);
	for (;;) {
		struct rdma_cm_event *ev;
		struct rdma_cm_id *id;
		enum rdma_cm_event_type type;

		if (cm.get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		id = ev->id;
		type = ev->event;
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_conn_param p = {
				.responder_resources = 1,
				.initiator_depth = 1,
				.rnr_retry_count = 7,
				.qp_num = qpn++ & 0xffffff,
			};

			if (qp)
				create_qp(id);
			if (cm.accept(id, qp ? NULL : &p))
				fprintf(stderr, "cm_rtt: rdma_accept: %s\n", strerror(errno));
		}
		cm.ack_cm_event(ev);
		/* The DREP goes out with rdma_disconnect (as the kernel's rdma_cm
		 * does it); the ID goes after its last event is acknowledged. */
		if (type == RDMA_CM_EVENT_DISCONNECTED) {
			cm.disconnect(id);
			if (id->qp)
				cm.destroy_qp(id);
			cm.destroy_id(id);
		} else if (type == RDMA_CM_EVENT_REJECTED || type == RDMA_CM_EVENT_CONNECT_ERROR ||
			   type == RDMA_CM_EVENT_UNREACHABLE) {
			cm.destroy_id(id);
		}
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* key_p50_us, _p90_us, _p99_us, _min_us of n samples (sorted in place). */
static void report(const char *key, double *v, int n)
{
	if (n <= 0)
		return;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	printf("%s_p50_us %.1f\n", key, v[(int)(0.50 * (n - 1) + 0.5)]);
	printf("%s_p90_us %.1f\n", key, v[(int)(0.90 * (n - 1) + 0.5)]);
	printf("%s_p99_us %.1f\n", key, v[(int)(0.99 * (n - 1) + 0.5)]);
	printf("%s_min_us %.1f\n", key, v[0]);
}

enum { T_RESOLVE, T_CREATE_QP, T_REQ_REP, T_ESTABLISH, T_DISCONNECT, T_CYCLE, T_N };
/* With a QP, REQ -> ESTABLISHED is "connect" and there is no separate RTU step. */
static const char *const t_name[2][T_N] = {
	{ "resolve", NULL, "req_rep", "establish", "disconnect", "cycle" },
	{ "resolve", "create_qp", "connect", NULL, "disconnect", "cycle" },
};

static int run_client(const char *src, const char *dst, const char *port, int n, int warmup,
		      int qp)
{
	struct rdma_event_channel *ch = cm.create_event_channel();
	struct sockaddr_storage s, d;
	socklen_t len;
	double *t[T_N], t_all = 0;
	int i, k;

	if (!ch)
		die("rdma_create_event_channel");
	addr_of(src, "0", SOCK_STREAM, &s, &len);
	addr_of(dst, port, SOCK_STREAM, &d, &len);
	for (k = 0; k < T_N; k++) {
		t[k] = calloc((size_t)n, sizeof(double));
		if (!t[k])
			die("calloc");
	}
	for (i = -warmup; i < n; i++) {
		struct rdma_conn_param p = {
			.responder_resources = 1,
			.initiator_depth = 1,
			.retry_count = 7,
			.rnr_retry_count = 7,
			.qp_num = (uint32_t)(0x100000 + i + warmup),
		};
		struct rdma_cm_id *id;
		double t0, tq, t1, t2, t3, t4, t5;

		t0 = now_us();
		if (cm.create_id(ch, &id, NULL, RDMA_PS_TCP))
			die("rdma_create_id");
		if (cm.resolve_addr(id, (struct sockaddr *)&s, (struct sockaddr *)&d, 2000))
			die("rdma_resolve_addr");
		expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
		if (cm.resolve_route(id, 2000))
			die("rdma_resolve_route");
		expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
		tq = now_us();
		if (qp)
			create_qp(id);
		t1 = now_us();
		if (cm.connect(id, qp ? &(struct rdma_conn_param){ .responder_resources = 1,
								  .initiator_depth = 1,
								  .retry_count = 7,
								  .rnr_retry_count = 7 }
				      : &p))
			die("rdma_connect");
		if (qp) {
			expect(ch, RDMA_CM_EVENT_ESTABLISHED);
			t3 = t2 = now_us();
		} else {
			expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE);
			t2 = now_us();
			if (cm.establish(id))
				die("rdma_establish");
			t3 = now_us();
		}
		if (cm.disconnect(id))
			die("rdma_disconnect");
		expect(ch, RDMA_CM_EVENT_DISCONNECTED);
		t4 = now_us();
		if (qp)
			cm.destroy_qp(id);
		if (cm.destroy_id(id))
			die("rdma_destroy_id");
		t5 = now_us();
		if (i < 0)
			continue;
		t[T_RESOLVE][i] = tq - t0;
		t[T_CREATE_QP][i] = t1 - tq;
		t[T_REQ_REP][i] = t2 - t1;
		t[T_ESTABLISH][i] = t3 - t2;
		t[T_DISCONNECT][i] = t4 - t3;
		t[T_CYCLE][i] = t5 - t0;
		t_all += t5 - t0;
	}
	printf("connections %d\n", n);
	printf("cycles_per_s %.0f\n", t_all > 0 ? n / t_all * 1e6 : 0);
	for (k = 0; k < T_N; k++)
		if (t_name[qp][k])
			report(t_name[qp][k], t[k], n);
	return 0;
}

static int udp_socket(const char *addr, const char *port, struct sockaddr_storage *ss)
{
	socklen_t len;
	int fd;

	addr_of(addr, port, SOCK_DGRAM, ss, &len);
	fd = socket(ss->ss_family, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	if (bind(fd, (struct sockaddr *)ss, len))
		die("bind");
	return fd;
}

static int run_udp_echo(const char *addr, const char *port, const char *ready)
{
	struct sockaddr_storage ss, from;
	char buf[65536];
	int fd = udp_socket(addr, port, &ss);

	touch(ready);
	for (;;) {
		socklen_t flen = sizeof(from);
		ssize_t r = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("recvfrom");
		}
		if (sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&from, flen) < 0)
			die("sendto");
	}
	return 0;
}

static int run_udp_ping(const char *src, const char *dst, const char *port, int n, int size)
{
	struct sockaddr_storage s, d;
	struct timeval tv = { .tv_sec = 2 };
	socklen_t len;
	char buf[65536];
	double *rtt = calloc((size_t)n, sizeof(double));
	int fd = udp_socket(src, "0", &s), i, lost = 0;

	if (!rtt)
		die("calloc");
	if (size < 1 || size > (int)sizeof(buf))
		size = 256;
	memset(buf, 0xab, sizeof(buf));
	addr_of(dst, port, SOCK_DGRAM, &d, &len);
	if (connect(fd, (struct sockaddr *)&d, len))
		die("connect");
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (i = -10; i < n; i++) {
		double t0 = now_us();

		if (send(fd, buf, (size_t)size, 0) != size)
			die("send");
		if (recv(fd, buf, sizeof(buf), 0) < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				die("recv");
			if (++lost > 10) {
				fprintf(stderr, "cm_rtt: no echo from %s\n", dst);
				return 1;
			}
			i--;
			continue;
		}
		if (i >= 0)
			rtt[i] = now_us() - t0;
	}
	printf("datagrams %d\n", n);
	printf("size %d\n", size);
	printf("lost %d\n", lost);
	report("udp_rtt", rtt, n);
	return 0;
}

static int usage(void)
{
	fputs("usage: cm_rtt server ADDR PORT [--qp] [--ready FILE]\n"
	      "       cm_rtt client SRC DST PORT [--qp] [-n N] [-w WARMUP]\n"
	      "       cm_rtt udp-echo ADDR PORT [--ready FILE]\n"
	      "       cm_rtt udp-ping SRC DST PORT [-n N] [-s SIZE]\n",
	      stderr);
	return 2;
}

int main(int argc, char **argv)
{
	const char *ready = NULL, *pos[4] = { 0 };
	int n = 200, warmup = 2, size = 256, npos = 0, qp = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ready") && i + 1 < argc)
			ready = argv[++i];
		else if (!strcmp(argv[i], "--qp"))
			qp = 1;
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-w") && i + 1 < argc)
			warmup = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-s") && i + 1 < argc)
			size = atoi(argv[++i]);
		else if (argv[i][0] == '-' || npos == 4)
			return usage();
		else
			pos[npos++] = argv[i];
	}
	if (npos < 1 || n < 1 || warmup < 0)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(pos[0], "server") && npos == 3) {
		load_rdmacm();
		return run_server(pos[1], pos[2], ready, qp);
	}
	if (!strcmp(pos[0], "client") && npos == 4) {
		load_rdmacm();
		return run_client(pos[1], pos[2], pos[3], n, warmup, qp);
	}
	if (!strcmp(pos[0], "udp-echo") && npos == 3)
		return run_udp_echo(pos[1], pos[2], ready);
	if (!strcmp(pos[0], "udp-ping") && npos == 4)
		return run_udp_ping(pos[1], pos[2], pos[3], n, size);
	return usage();
}
