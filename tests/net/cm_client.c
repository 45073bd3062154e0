// SPDX-License-Identifier: MIT
/*
 * cm_client: hostile clients of xrxed's connection manager, for
 * tests/net/cm_hostile.sh. Two faces:
 *
 * On the wire, from the peer's side of the link (an interface with no xrxed
 * on it): RoCEv2 frames to QP1 built with include/xrxe/wire.h's builder
 * (valid ICRCs), carrying CM MADs built with src/cm/mad.h's codec or patched
 * by hand, sent from a raw AF_PACKET socket; what the daemon answers is read
 * back from the same socket (ICRC checked by xrxe_parse), decoded and
 * matched to what was sent (transaction ID and communication IDs).
 *
 *   wire IFACE --dmac MAC --dst IP --src IP [--wait MS] CASE [options]
 *     CASE (one frame each unless said otherwise):
 *       short            a UD SEND_ONLY to QP1 with 200 bytes of payload
 *       qkey             a DREQ with Q_Key 0x80010001 instead of 0x80010000
 *       pkey             a DREQ with P_Key 0x1234 (another partition)
 *       opcode           a DREQ as RC SEND_ONLY (no DETH) to QP1
 *       base|class|classver|method|attr
 *                        a DREQ with that header field wrong
 *       rep|rtu|drep|mra|rej|dreq|lap|cpi
 *                        that message for communication IDs nobody has
 *                        (cpi: a ClassPortInfo Get)
 *       sidr PORT        a SIDR_REQ for PORT
 *       req PORT         REQs for PORT (RDMA_PS_TCP); options:
 *         --count N      N REQs with distinct comm IDs and QPNs (default 1)
 *         --window W     at most W unanswered at a time (default: all at once)
 *         --bad-cma      cma header version 0x01 instead of 0x00
 *         --dup-first    send the first REQ twice
 *       peer PORT --count N --ready FILE [--stale]
 *                        N REQs; RTU for every REP (--stale: then a REQ from
 *                        a connected QP); then FILE is created and
 *                        every DREQ is answered with a DREP until each
 *                        connection got a DREQ and every other REQ a REJ
 *   Output: "key value" lines: sent, rx_mads, rx_ATTR, rx_REJ_REASON,
 *   rx_SIDR_REP_STATUS, matched (replies that name what we sent), bad_frames
 *   (UDP 4791 frames to us that do not parse, ICRC included), elapsed_ms,
 *   rate (replies/s); peer: established, sent_rtu, rej_stale, sent_drep,
 *   dreq_conns (connections that got a DREQ), rej_pending (REQs that got a
 *   REJ after the server was gone).
 *
 * On the control socket, a hand-made client of include/xrxe/cm_abi.h:
 *   api IFACE --ip IP4 --foreign IP4     every malformed, out-of-order and
 *                                        foreign request: TAP lines
 *   listen IFACE --ip IP --port P --backlog N [--accept K] [--ready FILE]
 *                                        a server: prints every event, accepts
 *                                        the first K connect requests, runs
 *                                        until killed
 *   evflood IFACE --ip IP --port P --events N --ready FILE --go FILE
 *                                        connect attempts to P (nobody
 *                                        listens) until N events are due,
 *                                        never reading the channel; once FILE
 *                                        --go exists, reads it dry
 *   loopchan IFACE --ip IP --events N    an event channel that is a connection
 *                                        to the daemon itself; N events
 *   resolve IFACE --ip IP --events N --backlog MS --ready FILE
 *                                        N IDs resolving IP (timeout MS), held
 *   ping IFACE                           open, channel, ID, bind, query, close
 *   bind IFACE --ip IP --port P          bind and listen: exit 0 on success
 *
 * Errors go to stderr, one line; exit status 0 when every expectation held.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "cm/mad.h"
#include "daemon/ctrl_msg.h"
#include "xrxe/abi.h"
#include "xrxe/cm_abi.h"
#include "xrxe/wire.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cm_client: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint32_t rnd32(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		die("getrandom: %s", strerror(errno));
	return v;
}

static void touch(const char *path)
{
	int fd;

	if (!path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	close(fd);
}

/* ========================================================================
 * The wire side
 * ===================================================================== */

struct wire {
	int fd;
	int ifindex;
	uint8_t smac[6], dmac[6];
	uint8_t ipver;
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} saddr, daddr;
	struct xrxe_cm_addr src, dst; /* the same addresses, for cma headers */
	uint32_t psn;
	uint64_t guid; /* our "CA GUID" */
	unsigned wait_ms;
	/* what came back */
	uint64_t sent, rx_mads, bad_frames, matched;
	uint64_t rx_attr[16];
	uint64_t rx_rej_reason[64];
	uint64_t rx_sidr_status[8];
};

/* How a crafted frame differs from a well-formed MAD to QP1. */
struct frame_opts {
	uint8_t opcode; /* 0: UD SEND_ONLY */
	uint32_t qkey;  /* 0: the GSI Q_Key */
	uint16_t pkey;  /* 0: 0xffff */
	uint32_t len;   /* payload bytes; 0: XRXE_MAD_SIZE */
};

static void parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		die("%s: not a MAC address", s);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
}

/* IP text -> xrxe_cm_addr (port in host order given separately). */
static void parse_cm_addr(const char *s, uint16_t port, struct xrxe_cm_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->port = htons(port);
	if (inet_pton(AF_INET, s, a->addr) == 1)
		a->family = AF_INET;
	else if (inet_pton(AF_INET6, s, a->addr) == 1)
		a->family = AF_INET6;
	else
		die("%s: not an IP address", s);
}

static void wire_open(struct wire *w, const char *ifname, const char *dmac, const char *dst,
		      const char *src)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct ifreq ifr;
	int sz = 32 << 20;

	memset(w, 0, sizeof(*w));
	w->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (w->fd < 0)
		die("AF_PACKET socket: %s", strerror(errno));
	w->ifindex = (int)if_nametoindex(ifname);
	if (!w->ifindex)
		die("%s: no such interface", ifname);
	sll.sll_ifindex = w->ifindex;
	if (bind(w->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		die("bind to %s: %s", ifname, strerror(errno));
	/* a flood's answers arrive faster than we read them */
	if (setsockopt(w->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(w->fd, SIOCGIFHWADDR, &ifr) < 0)
		die("%s: SIOCGIFHWADDR: %s", ifname, strerror(errno));
	memcpy(w->smac, ifr.ifr_hwaddr.sa_data, 6);
	parse_mac(dmac, w->dmac);
	parse_cm_addr(dst, 0, &w->dst);
	parse_cm_addr(src, 0, &w->src);
	if (w->dst.family != w->src.family)
		die("--dst and --src: different families");
	w->ipver = w->dst.family == AF_INET ? 4 : 6;
	memcpy(&w->daddr, w->dst.addr, w->ipver == 4 ? 4 : 16);
	memcpy(&w->saddr, w->src.addr, w->ipver == 4 ? 4 : 16);
	w->psn = rnd32() & XRXE_PSN_MASK;
	w->guid = 0x0200c0ffee000000ull | (rnd32() & 0xffffff);
	w->wait_ms = 300;
}

static void wire_send(struct wire *w, const uint8_t *payload, const struct frame_opts *o)
{
	static const struct frame_opts dflt;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_halen = 6 };
	struct xrxe_pkt_spec s;
	uint8_t frame[2048];
	int n;

	if (!o)
		o = &dflt;
	memset(&s, 0, sizeof(s));
	memcpy(s.dmac, w->dmac, 6);
	memcpy(s.smac, w->smac, 6);
	s.ip_version = w->ipver;
	s.ttl = 64;
	s.ip_df = true;
	if (w->ipver == 4) {
		s.saddr.v4 = w->saddr.v4;
		s.daddr.v4 = w->daddr.v4;
	} else {
		s.saddr.v6 = w->saddr.v6;
		s.daddr.v6 = w->daddr.v6;
		s.udp_csum = true;
	}
	s.sport = 0xc123;
	s.opcode = o->opcode ? o->opcode : XRXE_OPCODE(UD, SEND_ONLY);
	s.pkey = o->pkey ? o->pkey : 0xffff;
	s.dest_qp = XRXE_GSI_QPN;
	s.psn = w->psn;
	w->psn = (w->psn + 1) & XRXE_PSN_MASK;
	s.deth.qkey = o->qkey ? o->qkey : XRXE_GSI_QKEY;
	s.deth.src_qp = XRXE_GSI_QPN;
	s.payload = payload;
	s.payload_len = o->len ? o->len : XRXE_MAD_SIZE;
	n = xrxe_build(frame, sizeof(frame), &s);
	if (n < 0)
		die("xrxe_build: %s", strerror(-n));
	sll.sll_ifindex = w->ifindex;
	memcpy(sll.sll_addr, w->dmac, 6);
	for (uint64_t t0 = now_us();;) {
		if (sendto(w->fd, frame, (size_t)n, 0, (struct sockaddr *)&sll, sizeof(sll)) == n)
			break;
		/* the qdisc is full: wait a little */
		if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			die("sendto: %s", strerror(errno));
		if (now_us() - t0 > 5000000)
			die("sendto: still %s after 5 s", strerror(errno));
		usleep(50);
	}
	w->sent++;
}

static void mad_init(struct xrxe_cm_msg *m, uint16_t attr, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->hdr.base_version = XRXE_MAD_BASE_VERSION;
	m->hdr.mgmt_class = XRXE_MGMT_CLASS_CM;
	m->hdr.class_version = XRXE_CM_CLASS_VERSION;
	m->hdr.method = XRXE_MAD_METHOD_SEND;
	m->hdr.attr_id = attr;
	m->hdr.tid = tid;
}

static void mad_build(const struct xrxe_cm_msg *m, uint8_t mad[XRXE_MAD_SIZE])
{
	if (xrxe_cm_mad_build(m, mad))
		die("cannot build attribute %#x", m->hdr.attr_id);
}

static void gid_of_addr(const struct xrxe_cm_addr *a, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (a->family == AF_INET) {
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(g->raw + 12, a->addr, 4);
	} else {
		memcpy(g->raw, a->addr, 16);
	}
}

/* A REQ as the kernel's rdma_cm sends it (RC, RDMA_PS_TCP, our addresses). */
static void build_req(struct wire *w, struct xrxe_cm_msg *m, uint64_t tid, uint32_t comm_id,
		      uint32_t qpn, uint16_t port, bool bad_cma)
{
	struct xrxe_cm_req *r = &m->req;
	struct xrxe_cma_hdr h = { .cma_version = bad_cma ? 0x01 : XRXE_CMA_VERSION };

	mad_init(m, XRXE_CM_ATTR_REQ, tid);
	r->local_comm_id = comm_id;
	r->service_id = xrxe_cma_service_id(RDMA_PS_TCP, port);
	r->local_ca_guid = w->guid;
	r->local_qpn = qpn & 0xffffff;
	r->responder_resources = 1;
	r->initiator_depth = 1;
	r->remote_cm_response_timeout = 20;
	r->transport_type = XRXE_CM_TRANSPORT_RC;
	r->starting_psn = rnd32() & 0xffffff;
	r->local_cm_response_timeout = 20;
	r->retry_count = 7;
	r->pkey = 0xffff;
	r->path_mtu = IBV_MTU_1024;
	r->rnr_retry_count = 7;
	r->max_cm_retries = 15;
	r->primary.local_lid = 0xffff;
	r->primary.remote_lid = 0xffff;
	gid_of_addr(&w->src, &r->primary.local_gid);
	gid_of_addr(&w->dst, &r->primary.remote_gid);
	r->primary.flow_label = comm_id & 0xfffff;
	r->primary.hop_limit = 64;
	/* 4.096 us * 2^14 = 67 ms: the TimeWait of a connection we end */
	r->primary.local_ack_timeout = 14;
	h.ip_version = w->ipver;
	h.port = (uint16_t)(40000 + (comm_id & 0x3fff));
	memcpy(h.src_addr, w->src.addr, 16);
	memcpy(h.dst_addr, w->dst.addr, 16);
	xrxe_cma_hdr_build(&h, r->private_data);
	memcpy(r->private_data + XRXE_CMA_HDR_SIZE, "cm_hostile", 10);
}

/* One frame from the socket: 1 and the MAD if it is a CM MAD from QP1 to
 * us, 0 for anything else, -1 when nothing came within timeout_ms. */
static int wire_recv(struct wire *w, int timeout_ms, struct xrxe_cm_msg *msg)
{
	uint8_t frame[XRXE_MAX_FRAME_LEN], mad[XRXE_MAD_SIZE];
	struct sockaddr_ll from;
	socklen_t fl = sizeof(from);
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
	const struct xrxe_deth *deth;
	struct xrxe_pkt pkt;
	ssize_t n;
	int err;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return -1;
	n = recvfrom(w->fd, frame, sizeof(frame), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		die("recv: %s", strerror(errno));
	}
	if (from.sll_pkttype == PACKET_OUTGOING || n < XRXE_ETH_HLEN || memcmp(frame, w->smac, 6))
		return 0;
	err = xrxe_parse(frame, (size_t)n, 0, &pkt);
	if (err) {
		/* only RoCEv2 frames are ours to judge */
		if (err != XRXE_PARSE_NOT_IP && err != XRXE_PARSE_NOT_UDP &&
		    err != XRXE_PARSE_NOT_ROCEV2 && err != XRXE_PARSE_TRUNCATED) {
			w->bad_frames++;
			fprintf(stderr, "cm_client: a frame from the daemon: %s\n",
				xrxe_parse_strerror((enum xrxe_parse_error)err));
		}
		return 0;
	}
	deth = xrxe_pkt_hdr(&pkt, XRXE_HDR_DETH);
	if (pkt.opcode != XRXE_OPCODE(UD, SEND_ONLY) || !deth ||
	    xrxe_bth_qpn(xrxe_pkt_bth(&pkt)) != XRXE_GSI_QPN || xrxe_deth_qkey(deth) != XRXE_GSI_QKEY ||
	    xrxe_deth_sqp(deth) != XRXE_GSI_QPN || pkt.payload_len < XRXE_MAD_SIZE ||
	    xrxe_pkt_copy_payload(&pkt, 0, mad, sizeof(mad))) {
		w->bad_frames++;
		fprintf(stderr, "cm_client: a RoCEv2 frame that is no MAD to QP1 (opcode %#x)\n",
			pkt.opcode);
		return 0;
	}
	if (xrxe_cm_mad_parse(mad, sizeof(mad), msg)) {
		w->bad_frames++;
		fprintf(stderr, "cm_client: a malformed MAD from the daemon\n");
		return 0;
	}
	w->rx_mads++;
	if ((unsigned)(msg->hdr.attr_id - XRXE_CM_ATTR_REQ) < 16)
		w->rx_attr[msg->hdr.attr_id - XRXE_CM_ATTR_REQ]++;
	if (msg->hdr.attr_id == XRXE_CM_ATTR_REJ && msg->rej.reason < 64)
		w->rx_rej_reason[msg->rej.reason]++;
	if (msg->hdr.attr_id == XRXE_CM_ATTR_SIDR_REP && msg->sidr_rep.status < 8)
		w->rx_sidr_status[msg->sidr_rep.status]++;
	return 1;
}

static void wire_report(const struct wire *w)
{
	printf("sent %" PRIu64 "\n", w->sent);
	printf("rx_mads %" PRIu64 "\n", w->rx_mads);
	printf("matched %" PRIu64 "\n", w->matched);
	printf("bad_frames %" PRIu64 "\n", w->bad_frames);
	for (unsigned a = 0; a < 16; a++)
		if (w->rx_attr[a])
			printf("rx_%s %" PRIu64 "\n", xrxe_cm_attr_name((uint16_t)(a + XRXE_CM_ATTR_REQ)),
			       w->rx_attr[a]);
	for (unsigned r = 0; r < 64; r++)
		if (w->rx_rej_reason[r])
			printf("rx_REJ_%u %" PRIu64 "\n", r, w->rx_rej_reason[r]);
	for (unsigned s = 0; s < 8; s++)
		if (w->rx_sidr_status[s])
			printf("rx_SIDR_REP_%u %" PRIu64 "\n", s, w->rx_sidr_status[s]);
}

/* Send one MAD (maybe crafted), then collect answers for w->wait_ms. A reply
 * is "matched" when it carries our TID. */
static void one_shot(struct wire *w, const uint8_t *mad, const struct frame_opts *o, uint64_t tid,
		     bool (*match)(const struct xrxe_cm_msg *reply, const void *arg), const void *arg)
{
	struct xrxe_cm_msg r;
	uint64_t end;

	wire_send(w, mad, o);
	end = now_us() + (uint64_t)w->wait_ms * 1000;
	for (uint64_t t; (t = now_us()) < end;) {
		if (wire_recv(w, (int)((end - t) / 1000) + 1, &r) != 1)
			continue;
		if (r.hdr.tid == tid && (!match || match(&r, arg)))
			w->matched++;
	}
}

/* DREP for our DREQ: the comm IDs swapped (IBA 12.6.9). */
static bool match_drep(const struct xrxe_cm_msg *r, const void *arg)
{
	const struct xrxe_cm_dreq *d = arg;

	return r->hdr.attr_id == XRXE_CM_ATTR_DREP && r->drep.local_comm_id == d->remote_comm_id &&
	       r->drep.remote_comm_id == d->local_comm_id;
}

static bool match_sidr(const struct xrxe_cm_msg *r, const void *arg)
{
	const struct xrxe_cm_sidr_req *q = arg;

	return r->hdr.attr_id == XRXE_CM_ATTR_SIDR_REP && r->sidr_rep.request_id == q->request_id &&
	       r->sidr_rep.service_id == q->service_id;
}

/* The single-frame cases. */
static int wire_case(struct wire *w, const char *c, int argc, char **argv)
{
	static const struct {
		const char *name;
		uint16_t attr;
	} plain[] = {
		{ "rep", XRXE_CM_ATTR_REP },   { "rtu", XRXE_CM_ATTR_RTU }, { "drep", XRXE_CM_ATTR_DREP },
		{ "mra", XRXE_CM_ATTR_MRA },   { "rej", XRXE_CM_ATTR_REJ }, { "dreq", XRXE_CM_ATTR_DREQ },
	};
	struct frame_opts o = { 0 };
	struct xrxe_cm_msg m;
	uint8_t mad[XRXE_MAD_SIZE];
	uint64_t tid = (uint64_t)rnd32() << 32 | rnd32();
	uint32_t lc = rnd32() | 1, rc = rnd32() | 1;

	/* The base of every malformed case: a DREQ nobody has, which a daemon
	 * that took it would answer with a DREP -- so "no answer" shows the
	 * frame was dropped where it should be. */
	mad_init(&m, XRXE_CM_ATTR_DREQ, tid);
	m.dreq.local_comm_id = lc;
	m.dreq.remote_comm_id = rc;
	m.dreq.remote_qpn = 0x123;
	mad_build(&m, mad);

	if (!strcmp(c, "short")) {
		o.len = 200;
	} else if (!strcmp(c, "qkey")) {
		o.qkey = XRXE_GSI_QKEY + 1;
	} else if (!strcmp(c, "pkey")) {
		o.pkey = 0x1234; /* another partition (0x7fff, a limited member of ours, matches: IBA 10.9.3) */
	} else if (!strcmp(c, "opcode")) {
		o.opcode = XRXE_OPCODE(RC, SEND_ONLY);
	} else if (!strcmp(c, "base")) {
		mad[0] = 2;
	} else if (!strcmp(c, "class")) {
		mad[1] = 0x04; /* performance management */
	} else if (!strcmp(c, "classver")) {
		mad[2] = 1;
	} else if (!strcmp(c, "method")) {
		mad[3] = XRXE_MAD_METHOD_GET; /* only ClassPortInfo is read with Get */
	} else if (!strcmp(c, "attr")) {
		mad[16] = 0x00;
		mad[17] = 0x30;
	} else if (!strcmp(c, "lap") || !strcmp(c, "cpi")) {
		bool cpi = !strcmp(c, "cpi");

		memset(mad, 0, sizeof(mad));
		mad[0] = XRXE_MAD_BASE_VERSION;
		mad[1] = XRXE_MGMT_CLASS_CM;
		mad[2] = XRXE_CM_CLASS_VERSION;
		mad[3] = cpi ? XRXE_MAD_METHOD_GET : XRXE_MAD_METHOD_SEND;
		for (int i = 0; i < 8; i++)
			mad[8 + i] = (uint8_t)(tid >> (56 - 8 * i));
		mad[16] = 0;
		mad[17] = cpi ? XRXE_CM_ATTR_CLASS_PORT_INFO : XRXE_CM_ATTR_LAP;
		memcpy(mad + 24, &lc, 4);
	} else if (!strcmp(c, "sidr")) {
		struct xrxe_cma_hdr h = { .cma_version = XRXE_CMA_VERSION, .ip_version = w->ipver };

		if (argc < 1)
			die("sidr PORT");
		mad_init(&m, XRXE_CM_ATTR_SIDR_REQ, tid);
		m.sidr_req.request_id = lc;
		m.sidr_req.pkey = 0xffff;
		m.sidr_req.service_id = xrxe_cma_service_id(RDMA_PS_UDP, (uint16_t)atoi(argv[0]));
		h.port = 40000;
		memcpy(h.src_addr, w->src.addr, 16);
		memcpy(h.dst_addr, w->dst.addr, 16);
		xrxe_cma_hdr_build(&h, m.sidr_req.private_data);
		mad_build(&m, mad);
		one_shot(w, mad, NULL, tid, match_sidr, &m.sidr_req);
		return 0;
	} else {
		size_t i;

		for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
			if (!strcmp(c, plain[i].name))
				break;
		if (i == sizeof(plain) / sizeof(plain[0]))
			return -1;
		mad_init(&m, plain[i].attr, tid);
		/* every body starts with local, remote comm ID; RTU, DREP, MRA
		 * and REJ name the receiver by the remote one */
		switch (plain[i].attr) {
		case XRXE_CM_ATTR_REP:
			m.rep.local_comm_id = lc;
			m.rep.remote_comm_id = rc;
			m.rep.local_qpn = 0x456;
			m.rep.local_ca_guid = w->guid;
			break;
		case XRXE_CM_ATTR_RTU:
			m.rtu.local_comm_id = lc;
			m.rtu.remote_comm_id = rc;
			break;
		case XRXE_CM_ATTR_DREP:
			m.drep.local_comm_id = lc;
			m.drep.remote_comm_id = rc;
			break;
		case XRXE_CM_ATTR_MRA:
			m.mra.local_comm_id = lc;
			m.mra.remote_comm_id = rc;
			m.mra.message_mraed = XRXE_CM_REF_REP;
			m.mra.service_timeout = 20;
			break;
		case XRXE_CM_ATTR_REJ:
			m.rej.local_comm_id = lc;
			m.rej.remote_comm_id = rc;
			m.rej.message_rejected = XRXE_CM_REF_REP;
			m.rej.reason = XRXE_CM_REJ_CONSUMER_DEFINED;
			break;
		case XRXE_CM_ATTR_DREQ:
			m.dreq.local_comm_id = lc;
			m.dreq.remote_comm_id = rc;
			m.dreq.remote_qpn = 0x123;
			mad_build(&m, mad);
			one_shot(w, mad, NULL, tid, match_drep, &m.dreq);
			return 0;
		}
		mad_build(&m, mad);
	}
	one_shot(w, mad, &o, tid, NULL, NULL);
	return 0;
}

/* REQs for port, windowed; replies matched by TID and comm ID. */
static int wire_reqs(struct wire *w, uint16_t port, unsigned count, unsigned window, bool bad_cma,
		     bool dup_first)
{
	uint64_t tid0 = (uint64_t)rnd32() << 32, t0, last = 0;
	uint32_t comm0 = rnd32() & 0x7fffffff, qpn0 = 0x1000 + (rnd32() & 0xffff);
	uint8_t *answered = calloc(count, 1);
	unsigned sent = 0, got = 0;
	struct xrxe_cm_msg m, r;
	uint8_t mad[XRXE_MAD_SIZE];
	uint64_t idle_since;

	if (!answered)
		die("out of memory");
	if (!window || window > count)
		window = count;
	comm0 |= 1;
	t0 = idle_since = now_us();
	while (sent < count || got < count) {
		if (sent < count && sent - got < window) {
			build_req(w, &m, tid0 + sent, comm0 + sent, qpn0 + sent, port, bad_cma);
			mad_build(&m, mad);
			wire_send(w, mad, NULL);
			if (dup_first && sent == 0)
				wire_send(w, mad, NULL);
			sent++;
			continue;
		}
		/* all that may be out is out: wait for answers */
		int k = wire_recv(w, sent < count ? 2 : 20, &r);

		if (k == 1 && r.hdr.tid - tid0 < count && !answered[r.hdr.tid - tid0]) {
			uint64_t i = r.hdr.tid - tid0;
			bool ok = false;

			if (r.hdr.attr_id == XRXE_CM_ATTR_REJ)
				ok = r.rej.remote_comm_id == comm0 + i &&
				     r.rej.message_rejected == XRXE_CM_REF_REQ;
			else if (r.hdr.attr_id == XRXE_CM_ATTR_REP)
				ok = r.rep.remote_comm_id == comm0 + i;
			else if (r.hdr.attr_id == XRXE_CM_ATTR_MRA)
				ok = r.mra.remote_comm_id == comm0 + i;
			if (ok) {
				answered[i] = 1;
				w->matched++;
				got++;
				last = now_us();
				idle_since = last;
			}
			continue;
		}
		/* not every REQ is answered (a listener keeps some pending;
		 * a frame may be lost): give up after a quiet spell, and when
		 * the window is full, send on anyway */
		if (now_us() - idle_since > (uint64_t)w->wait_ms * 1000) {
			if (sent == count)
				break;
			window++;
			idle_since = now_us();
		}
	}
	printf("elapsed_ms %" PRIu64 "\n", ((last ? last : now_us()) - t0) / 1000);
	if (got && last > t0)
		printf("rate %.0f\n", got * 1e6 / (double)(last - t0));
	free(answered);
	return 0;
}

/* The peer of a connection: REQs, RTU for each REP, DREP for each DREQ. */
static int wire_peer(struct wire *w, uint16_t port, unsigned count, bool stale, const char *ready)
{
	uint64_t tid0 = (uint64_t)rnd32() << 32;
	uint32_t comm0 = (rnd32() & 0x7fffffff) | 1, qpn0 = 0x2000 + (rnd32() & 0xffff);
	uint32_t *remote = calloc(count, sizeof(*remote)); /* the daemon's comm ID, once REP came */
	bool *dreq_seen = calloc(count, sizeof(*dreq_seen)), *rej_seen = calloc(count, 1);
	unsigned est = 0, dreqs = 0, rejs = 0, rtus = 0, dreps = 0;
	struct xrxe_cm_msg m, r;
	uint8_t mad[XRXE_MAD_SIZE];
	uint64_t end;

	if (!remote || !dreq_seen || !rej_seen)
		die("out of memory");
	for (unsigned i = 0; i < count; i++) {
		build_req(w, &m, tid0 + i, comm0 + i, qpn0 + i, port, false);
		mad_build(&m, mad);
		wire_send(w, mad, NULL);
	}
	/* REPs: the server accepts some */
	end = now_us() + (uint64_t)w->wait_ms * 1000;
	while (now_us() < end || !est) {
		if (now_us() > end + 5000000)
			break;
		if (wire_recv(w, 10, &r) != 1 || r.hdr.attr_id != XRXE_CM_ATTR_REP)
			continue;
		uint64_t i = r.hdr.tid - tid0;

		if (i >= count || r.rep.remote_comm_id != comm0 + i)
			continue;
		w->matched++;
		if (!remote[i]) {
			remote[i] = r.rep.local_comm_id;
			est++;
		}
		mad_init(&m, XRXE_CM_ATTR_RTU, r.hdr.tid);
		m.rtu.local_comm_id = comm0 + (uint32_t)i;
		m.rtu.remote_comm_id = r.rep.local_comm_id;
		mad_build(&m, mad);
		wire_send(w, mad, NULL);
		rtus++;
	}
	printf("established %u\n", est);
	printf("sent_rtu %u\n", rtus);
	if (stale && est) {
		/* a REQ from a QP that is still connected: the peer has forgotten
		 * the connection (IBA 12.9.8.3.1), so REJ "stale connection" */
		unsigned i = 0, rej10 = 0;
		uint64_t tid = tid0 + count;

		while (!remote[i])
			i++;
		build_req(w, &m, tid, comm0 + count, qpn0 + i, port, false);
		mad_build(&m, mad);
		wire_send(w, mad, NULL);
		end = now_us() + (uint64_t)w->wait_ms * 1000;
		while (now_us() < end)
			if (wire_recv(w, 10, &r) == 1 && r.hdr.tid == tid &&
			    r.hdr.attr_id == XRXE_CM_ATTR_REJ && r.rej.reason == XRXE_CM_REJ_STALE_CONN &&
			    r.rej.remote_comm_id == comm0 + count)
				rej10++;
		/* the kernel also sends a DREQ for the stale connection; count
		 * whether one came */
		printf("rej_stale %u\n", rej10);
		printf("dreq_after_stale %" PRIu64 "\n", w->rx_attr[XRXE_CM_ATTR_DREQ - XRXE_CM_ATTR_REQ]);
	}
	fflush(stdout);
	touch(ready);
	/* the server goes away: a DREQ for every connection, a REJ for every
	 * request still pending */
	end = now_us() + 20000000;
	while ((dreqs < est || rejs < count - est) && now_us() < end) {
		if (wire_recv(w, 20, &r) != 1)
			continue;
		uint64_t i = r.hdr.tid - tid0;

		if (r.hdr.attr_id == XRXE_CM_ATTR_DREQ) {
			/* a DREQ carries the daemon's TID, so find it by comm ID */
			for (i = 0; i < count; i++)
				if (remote[i] && remote[i] == r.dreq.local_comm_id &&
				    r.dreq.remote_comm_id == comm0 + i && r.dreq.remote_qpn == qpn0 + i)
					break;
			if (i == count)
				continue;
			w->matched++;
			if (!dreq_seen[i]) {
				dreq_seen[i] = true;
				dreqs++;
			}
			mad_init(&m, XRXE_CM_ATTR_DREP, r.hdr.tid);
			m.drep.local_comm_id = comm0 + (uint32_t)i;
			m.drep.remote_comm_id = remote[i];
			mad_build(&m, mad);
			wire_send(w, mad, NULL);
			dreps++;
		} else if (r.hdr.attr_id == XRXE_CM_ATTR_REJ && i < count && !remote[i] &&
			   r.rej.remote_comm_id == comm0 + i) {
			w->matched++;
			if (!rej_seen[i]) {
				rej_seen[i] = true;
				rejs++;
			}
		}
	}
	/* late repeats (a lost DREP) are answered a moment longer */
	end = now_us() + 200000;
	while (now_us() < end)
		wire_recv(w, 20, &r);
	printf("sent_drep %u\n", dreps);
	printf("dreq_conns %u\n", dreqs);
	printf("rej_pending %u\n", rejs);
	free(remote);
	free(dreq_seen);
	free(rej_seen);
	return 0;
}

static int cmd_wire(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dmac", required_argument, NULL, 'm' }, { "dst", required_argument, NULL, 'd' },
		{ "src", required_argument, NULL, 's' },  { "wait", required_argument, NULL, 'w' },
		{ "count", required_argument, NULL, 'n' }, { "window", required_argument, NULL, 'W' },
		{ "bad-cma", no_argument, NULL, 'B' },    { "dup-first", no_argument, NULL, 'D' },
		{ "ready", required_argument, NULL, 'r' }, { "stale", no_argument, NULL, 'S' },
		{ 0 },
	};
	const char *dmac = NULL, *dst = NULL, *src = NULL, *ready = NULL, *ifname, *c;
	unsigned wait_ms = 300, count = 1, window = 0;
	bool bad_cma = false, dup = false, stale = false;
	struct wire w;
	int opt, rc;

	if (argc < 2)
		die("wire IFACE --dmac MAC --dst IP --src IP CASE");
	ifname = argv[1];
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'm': dmac = optarg; break;
		case 'd': dst = optarg; break;
		case 's': src = optarg; break;
		case 'w': wait_ms = (unsigned)atoi(optarg); break;
		case 'n': count = (unsigned)atoi(optarg); break;
		case 'W': window = (unsigned)atoi(optarg); break;
		case 'B': bad_cma = true; break;
		case 'D': dup = true; break;
		case 'r': ready = optarg; break;
		case 'S': stale = true; break;
		default: die("wire: bad option");
		}
	}
	if (!dmac || !dst || !src || optind >= argc)
		die("wire IFACE --dmac MAC --dst IP --src IP CASE");
	wire_open(&w, ifname, dmac, dst, src);
	w.wait_ms = wait_ms;
	c = argv[optind++];
	if (!strcmp(c, "req") || !strcmp(c, "peer")) {
		if (optind >= argc)
			die("%s PORT", c);
		uint16_t port = (uint16_t)atoi(argv[optind]);

		rc = !strcmp(c, "req") ? wire_reqs(&w, port, count, window, bad_cma, dup)
				       : wire_peer(&w, port, count, stale, ready);
	} else {
		rc = wire_case(&w, c, argc - optind, argv + optind);
		if (rc)
			die("wire: unknown case %s", c);
	}
	wire_report(&w);
	return rc || w.bad_frames ? 1 : 0;
}

/* ========================================================================
 * The control-socket side
 * ===================================================================== */

union msg {
	struct xrxe_ctrl_hdr hdr;
	uint8_t raw[XRXE_MAX_CTRL_MSG];
	uint64_t align;
};

struct conn {
	int sock;
	uint32_t seq;
};

static void conn_open(struct conn *c, const char *ifname)
{
	c->seq = 0;
	c->sock = xrxe_ctrl_connect(ifname);
	if (c->sock < 0)
		die("connect to the daemon of %s: %s", ifname, strerror(-c->sock));
}

static void hdr_init(void *m, uint16_t op, size_t len)
{
	struct xrxe_ctrl_hdr *h = m;

	memset(m, 0, len);
	h->op = op;
	h->length = (uint32_t)len;
}

/* One request: the reply's status (0 or -errno); rep may be NULL. */
static int call(struct conn *c, void *req, size_t len, const int *fds, unsigned nfds, union msg *rep)
{
	struct xrxe_ctrl_hdr *h = req;
	union msg tmp;
	unsigned n = 0;
	ssize_t r;

	if (!rep)
		rep = &tmp;
	h->seq = ++c->seq;
	r = xrxe_ctrl_call(c->sock, req, len, fds, nfds, rep, sizeof(*rep), NULL, &n);
	if (r < 0)
		die("op %u: control socket: %s", h->op, strerror((int)-r));
	if ((size_t)r < sizeof(struct xrxe_ctrl_hdr) || rep->hdr.seq != h->seq ||
	    rep->hdr.length != (uint32_t)r)
		die("op %u: malformed reply (%zd bytes)", h->op, r);
	return rep->hdr.status;
}

static int cm_open(struct conn *c, uint32_t abi)
{
	struct xrxe_ctrl_cm_open m;

	hdr_init(&m, XRXE_CTRL_CM_OPEN, sizeof(m));
	m.abi_version = abi;
	return call(c, &m, sizeof(m), NULL, 0, NULL);
}

/* CM_CREATE_CHANNEL with fd (-1: none). */
static int cm_channel_fd(struct conn *c, int fd, uint64_t cookie, uint32_t *h)
{
	struct xrxe_ctrl_cm_channel m;
	union msg rep;
	int st;

	hdr_init(&m, XRXE_CTRL_CM_CREATE_CHANNEL, sizeof(m));
	m.cookie = cookie;
	st = call(c, &m, sizeof(m), &fd, fd >= 0 ? 1 : 0, &rep);
	if (!st && h)
		*h = ((struct xrxe_ctrl_handle *)&rep)->handle;
	return st;
}

/* An event channel as librdmacm makes it: a SOCK_SEQPACKET socketpair, one
 * end read here (*rd), the other passed (and kept, as the library does). */
static uint32_t cm_channel(struct conn *c, uint64_t cookie, int *rd)
{
	int sv[2], st;
	uint32_t h = 0;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	st = cm_channel_fd(c, sv[1], cookie, &h);
	if (st)
		die("CM_CREATE_CHANNEL: %s", strerror(-st));
	*rd = sv[0];
	return h;
}

static int cm_create_id(struct conn *c, uint32_t ch, uint32_t ps, uint32_t qpt, uint32_t *h)
{
	struct xrxe_ctrl_cm_create_id m;
	union msg rep;
	int st;

	hdr_init(&m, XRXE_CTRL_CM_CREATE_ID, sizeof(m));
	m.channel = ch;
	m.ps = ps;
	m.qp_type = qpt;
	st = call(c, &m, sizeof(m), NULL, 0, &rep);
	if (!st && h)
		*h = ((struct xrxe_ctrl_handle *)&rep)->handle;
	return st;
}

static int cm_handle_op(struct conn *c, uint16_t op, uint32_t h)
{
	struct xrxe_ctrl_handle m;

	hdr_init(&m, op, sizeof(m));
	m.handle = h;
	return call(c, &m, sizeof(m), NULL, 0, NULL);
}

static int cm_arg_op(struct conn *c, uint16_t op, uint32_t h, uint32_t arg, union msg *rep)
{
	struct xrxe_ctrl_cm_handle_arg m;

	hdr_init(&m, op, sizeof(m));
	m.handle = h;
	m.arg = arg;
	return call(c, &m, sizeof(m), NULL, 0, rep);
}

static int cm_bind(struct conn *c, uint32_t h, const struct xrxe_cm_addr *a)
{
	struct xrxe_ctrl_cm_bind m;

	hdr_init(&m, XRXE_CTRL_CM_BIND, sizeof(m));
	m.handle = h;
	m.addr = *a;
	return call(c, &m, sizeof(m), NULL, 0, NULL);
}

static int cm_resolve_addr(struct conn *c, uint32_t h, const struct xrxe_cm_addr *dst)
{
	struct xrxe_ctrl_cm_resolve_addr m;

	hdr_init(&m, XRXE_CTRL_CM_RESOLVE_ADDR, sizeof(m));
	m.handle = h;
	m.timeout_ms = 2000;
	m.dst = *dst;
	return call(c, &m, sizeof(m), NULL, 0, NULL);
}

static int cm_connect_op(struct conn *c, uint16_t op, uint32_t h, uint32_t qpn, uint8_t plen)
{
	struct xrxe_ctrl_cm_connect m;

	hdr_init(&m, op, sizeof(m));
	m.handle = h;
	m.conn.private_data_len = plen;
	m.conn.responder_resources = 1;
	m.conn.initiator_depth = 1;
	m.conn.retry_count = 7;
	m.conn.rnr_retry_count = 7;
	m.conn.qp_type = IBV_QPT_RC;
	m.conn.qp_num = qpn;
	memset(m.conn.private_data, 0xa5, sizeof(m.conn.private_data));
	return call(c, &m, sizeof(m), NULL, 0, NULL);
}

static int cm_reject(struct conn *c, uint32_t h, uint8_t plen)
{
	struct xrxe_ctrl_cm_reject m;

	hdr_init(&m, XRXE_CTRL_CM_REJECT, sizeof(m));
	m.handle = h;
	m.private_data_len = plen;
	return call(c, &m, sizeof(m), NULL, 0, NULL);
}

static int cm_set_option(struct conn *c, uint32_t h, uint32_t level, uint32_t name, uint32_t len)
{
	struct xrxe_ctrl_cm_set_option m;

	hdr_init(&m, XRXE_CTRL_CM_SET_OPTION, sizeof(m));
	m.handle = h;
	m.level = level;
	m.optname = name;
	m.optlen = len;
	return call(c, &m, sizeof(m), NULL, 0, NULL);
}

/* rdma_event_str's names (librdmacm is not linked here) */
static const char *event_name(uint32_t e)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
	};

	return e < sizeof(names) / sizeof(names[0]) && names[e] ? names[e] : "UNKNOWN";
}

/* The next event on the channel within ms: 1, 0 on timeout. */
static int read_event(int fd, struct xrxe_cm_event_msg *ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return 0;
	n = recv(fd, ev, sizeof(*ev), MSG_DONTWAIT);
	if (n == (ssize_t)sizeof(*ev))
		return 1;
	if (n < 0 && errno == EAGAIN)
		return 0;
	die("event channel: %zd bytes (%s)", n, n < 0 ? strerror(errno) : "short");
}

/* Wait for event type on the channel, skipping others; the event in *ev. */
static bool wait_event(int fd, uint32_t type, struct xrxe_cm_event_msg *ev, int ms)
{
	uint64_t end = now_us() + (uint64_t)ms * 1000;

	while (now_us() < end)
		if (read_event(fd, ev, 10) && ev->event == type)
			return true;
	return false;
}

/* --- api: every request a hostile or confused client can make ------------ */

static int api_failed;

static void expect(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void expect(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - local: ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		api_failed = 1;
}

/* "-EINVAL" etc. for messages */
static const char *err_name(int st)
{
	static char buf[32];

	switch (-st) {
	case 0: return "0";
	case EPROTO: return "-EPROTO";
	case EINVAL: return "-EINVAL";
	case EBADF: return "-EBADF";
	case EBUSY: return "-EBUSY";
	case EADDRINUSE: return "-EADDRINUSE";
	case EADDRNOTAVAIL: return "-EADDRNOTAVAIL";
	case EAFNOSUPPORT: return "-EAFNOSUPPORT";
	case ENOSYS: return "-ENOSYS";
	case ENODEV: return "-ENODEV";
	}
	snprintf(buf, sizeof(buf), "%d", st);
	return buf;
}

#define EXPECT_ST(st, want, what)                                                                \
	do {                                                                                     \
		int st_ = (st);                                                                  \
		expect(st_ == (want), "%s -> %s (got %s)", what, err_name(want), err_name(st_)); \
	} while (0)

/* A request of op with its right size, zero-filled except the handle. */
static int raw_op(struct conn *c, uint16_t op, size_t len, uint32_t handle, const int *fds,
		  unsigned nfds)
{
	union msg m;

	hdr_init(&m, op, len);
	if (len >= sizeof(struct xrxe_ctrl_hdr) + 8)
		memcpy(m.raw + sizeof(struct xrxe_ctrl_hdr), &handle, 4);
	return call(c, &m, len, fds, nfds, NULL);
}

static const struct {
	uint16_t op;
	uint16_t len;
} cm_ops[] = {
	{ XRXE_CTRL_CM_CREATE_CHANNEL, sizeof(struct xrxe_ctrl_cm_channel) },
	{ XRXE_CTRL_CM_DESTROY_CHANNEL, sizeof(struct xrxe_ctrl_handle) },
	{ XRXE_CTRL_CM_CREATE_ID, sizeof(struct xrxe_ctrl_cm_create_id) },
	{ XRXE_CTRL_CM_DESTROY_ID, sizeof(struct xrxe_ctrl_handle) },
	{ XRXE_CTRL_CM_BIND, sizeof(struct xrxe_ctrl_cm_bind) },
	{ XRXE_CTRL_CM_RESOLVE_ADDR, sizeof(struct xrxe_ctrl_cm_resolve_addr) },
	{ XRXE_CTRL_CM_RESOLVE_ROUTE, sizeof(struct xrxe_ctrl_cm_handle_arg) },
	{ XRXE_CTRL_CM_LISTEN, sizeof(struct xrxe_ctrl_cm_handle_arg) },
	{ XRXE_CTRL_CM_CONNECT, sizeof(struct xrxe_ctrl_cm_connect) },
	{ XRXE_CTRL_CM_ACCEPT, sizeof(struct xrxe_ctrl_cm_connect) },
	{ XRXE_CTRL_CM_REJECT, sizeof(struct xrxe_ctrl_cm_reject) },
	{ XRXE_CTRL_CM_DISCONNECT, sizeof(struct xrxe_ctrl_cm_handle_arg) },
	{ XRXE_CTRL_CM_ESTABLISH, sizeof(struct xrxe_ctrl_cm_handle_arg) },
	{ XRXE_CTRL_CM_INIT_QP_ATTR, sizeof(struct xrxe_ctrl_cm_handle_arg) },
	{ XRXE_CTRL_CM_NOTIFY, sizeof(struct xrxe_ctrl_cm_handle_arg) },
	{ XRXE_CTRL_CM_SET_OPTION, sizeof(struct xrxe_ctrl_cm_set_option) },
	{ XRXE_CTRL_CM_JOIN_MCAST, sizeof(struct xrxe_ctrl_cm_mcast) },
	{ XRXE_CTRL_CM_LEAVE_MCAST, sizeof(struct xrxe_ctrl_cm_mcast) },
	{ XRXE_CTRL_CM_MIGRATE_ID, sizeof(struct xrxe_ctrl_cm_handle_arg) },
	{ XRXE_CTRL_CM_QUERY, sizeof(struct xrxe_ctrl_cm_handle_arg) },
};

static int cmd_api(const char *ifname, const char *ip, const char *foreign)
{
	struct conn c, c2;
	struct xrxe_cm_addr a, b;
	struct xrxe_cm_event_msg ev;
	union msg rep;
	uint32_t ch, ch2, id, id2, id3, lid, child;
	int rd, rd2, sv[2], pfd[2], efd, st, bad;
	uint16_t port = (uint16_t)(20000 + rnd32() % 10000);

	/* 1. before CM_OPEN */
	conn_open(&c, ifname);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	bad = 0;
	for (size_t i = 0; i < sizeof(cm_ops) / sizeof(cm_ops[0]); i++) {
		bool chan = cm_ops[i].op == XRXE_CTRL_CM_CREATE_CHANNEL;

		st = raw_op(&c, cm_ops[i].op, cm_ops[i].len, 1, &sv[1], chan ? 1 : 0);
		if (st != -EPROTO) {
			fprintf(stderr, "op %u before CM_OPEN: %s\n", cm_ops[i].op, err_name(st));
			bad++;
		}
	}
	expect(!bad, "all %zu CM requests before CM_OPEN -> -EPROTO (%d did not)",
	       sizeof(cm_ops) / sizeof(cm_ops[0]), bad);

	/* 2. a foreign ABI */
	EXPECT_ST(cm_open(&c, XRXE_ABI_VERSION + 1), -EPROTO, "CM_OPEN with ABI version+1");
	EXPECT_ST(cm_open(&c, 0), -EPROTO, "CM_OPEN with ABI version 0");
	EXPECT_ST(cm_channel_fd(&c, sv[1], 1, NULL), -EPROTO,
		  "CM_CREATE_CHANNEL after a refused CM_OPEN");
	EXPECT_ST(cm_open(&c, XRXE_ABI_VERSION), 0, "CM_OPEN with XRXE_ABI_VERSION");

	/* 3. what an event channel must be */
	if (pipe2(pfd, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	EXPECT_ST(cm_channel_fd(&c, pfd[1], 1, NULL), -EINVAL, "CM_CREATE_CHANNEL with a pipe");
	{
		int ss[2], ds[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ss) < 0 ||
		    socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, ds) < 0)
			die("socketpair: %s", strerror(errno));
		EXPECT_ST(cm_channel_fd(&c, ss[1], 1, NULL), -EINVAL,
			  "CM_CREATE_CHANNEL with a SOCK_STREAM socket");
		EXPECT_ST(cm_channel_fd(&c, ds[1], 1, NULL), -EINVAL,
			  "CM_CREATE_CHANNEL with a SOCK_DGRAM socket");
		close(ss[0]);
		close(ss[1]);
		close(ds[0]);
		close(ds[1]);
	}
	efd = eventfd(0, EFD_CLOEXEC);
	EXPECT_ST(cm_channel_fd(&c, efd, 1, NULL), -EINVAL, "CM_CREATE_CHANNEL with an eventfd");
	EXPECT_ST(cm_channel_fd(&c, -1, 1, NULL), -EINVAL, "CM_CREATE_CHANNEL without an fd");
	{
		struct xrxe_ctrl_cm_channel m;
		int two[2] = { sv[1], sv[1] };

		hdr_init(&m, XRXE_CTRL_CM_CREATE_CHANNEL, sizeof(m));
		EXPECT_ST(call(&c, &m, sizeof(m), two, 2, NULL), -EINVAL,
			  "CM_CREATE_CHANNEL with two fds");
		EXPECT_ST(call(&c, &m, sizeof(m) - 1, &sv[1], 1, NULL), -EINVAL,
			  "CM_CREATE_CHANNEL one byte short");
	}
	{
		union msg m;

		hdr_init(&m, 999, sizeof(struct xrxe_ctrl_hdr));
		EXPECT_ST(call(&c, &m, sizeof(struct xrxe_ctrl_hdr), NULL, 0, NULL), -EINVAL,
			  "an unknown op (999)");
	}
	close(pfd[0]);
	close(pfd[1]);
	close(efd);
	close(sv[0]);
	close(sv[1]);
	ch = cm_channel(&c, 0xc0ffee, &rd);

	/* 4. CM_CREATE_ID */
	EXPECT_ST(cm_create_id(&c, 0x12345, RDMA_PS_TCP, IBV_QPT_RC, NULL), -EBADF,
		  "CM_CREATE_ID with channel handle 0x12345");
	EXPECT_ST(cm_create_id(&c, XRXE_NO_HANDLE, RDMA_PS_TCP, IBV_QPT_RC, NULL), -EBADF,
		  "CM_CREATE_ID with channel XRXE_NO_HANDLE");
	EXPECT_ST(cm_create_id(&c, ch ^ 0x10000, RDMA_PS_TCP, IBV_QPT_RC, NULL), -EBADF,
		  "CM_CREATE_ID with a channel handle of another generation");
	EXPECT_ST(cm_create_id(&c, ch, 0x999, IBV_QPT_RC, NULL), -EINVAL,
		  "CM_CREATE_ID with port space 0x999");
	EXPECT_ST(cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RAW_PACKET, NULL), -EINVAL,
		  "CM_CREATE_ID with QP type RAW_PACKET");
	EXPECT_ST(cm_create_id(&c, ch, RDMA_PS_TCP, 0xffffffffu, NULL), -EINVAL,
		  "CM_CREATE_ID with QP type 0xffffffff");
	EXPECT_ST(cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RC, &id), 0, "CM_CREATE_ID (TCP, RC)");
	EXPECT_ST(cm_create_id(&c, id, RDMA_PS_TCP, IBV_QPT_RC, NULL), -EBADF,
		  "CM_CREATE_ID with an ID handle as the channel");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_QUERY, ch, 0, NULL), -EBADF,
		  "CM_QUERY with a channel handle as the ID");

	/* 5. another connection's handles */
	conn_open(&c2, ifname);
	EXPECT_ST(cm_open(&c2, XRXE_ABI_VERSION), 0, "a second connection: CM_OPEN");
	parse_cm_addr(ip, port, &a);
	EXPECT_ST(cm_bind(&c2, id, &a), -EBADF, "CM_BIND with another connection's ID");
	EXPECT_ST(cm_arg_op(&c2, XRXE_CTRL_CM_QUERY, id, 0, NULL), -EBADF,
		  "CM_QUERY with another connection's ID");
	EXPECT_ST(cm_handle_op(&c2, XRXE_CTRL_CM_DESTROY_ID, id), -EBADF,
		  "CM_DESTROY_ID with another connection's ID");
	EXPECT_ST(cm_create_id(&c2, ch, RDMA_PS_TCP, IBV_QPT_RC, NULL), -EBADF,
		  "CM_CREATE_ID with another connection's channel");
	EXPECT_ST(cm_handle_op(&c2, XRXE_CTRL_CM_DESTROY_CHANNEL, ch), -EBADF,
		  "CM_DESTROY_CHANNEL with another connection's channel");
	ch2 = cm_channel(&c2, 2, &rd2);
	EXPECT_ST(cm_arg_op(&c2, XRXE_CTRL_CM_MIGRATE_ID, id, ch2, NULL), -EBADF,
		  "CM_MIGRATE_ID of another connection's ID");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_MIGRATE_ID, id, ch2, NULL), -EBADF,
		  "CM_MIGRATE_ID to another connection's channel");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_QUERY, id, 0, NULL), 0,
		  "the owner's ID is untouched (CM_QUERY)");

	/* 6. CM_BIND */
	parse_cm_addr(foreign, port, &b);
	EXPECT_ST(cm_bind(&c, id, &b), -EADDRNOTAVAIL, "CM_BIND to the peer's address");
	parse_cm_addr("10.255.254.253", port, &b);
	EXPECT_ST(cm_bind(&c, id, &b), -EADDRNOTAVAIL, "CM_BIND to 10.255.254.253");
	b = a;
	b.family = 12345;
	EXPECT_ST(cm_bind(&c, id, &b), -EAFNOSUPPORT, "CM_BIND with address family 12345");
	EXPECT_ST(cm_bind(&c, id, &a), 0, "CM_BIND to the interface's address");
	EXPECT_ST(cm_bind(&c, id, &a), -EINVAL, "CM_BIND of a bound ID");
	EXPECT_ST(cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RC, &id2), 0, "CM_CREATE_ID (second)");
	EXPECT_ST(cm_bind(&c, id2, &a), -EADDRINUSE, "CM_BIND twice to the same port");
	parse_cm_addr("0.0.0.0", port, &b);
	EXPECT_ST(cm_bind(&c, id2, &b), -EADDRINUSE, "CM_BIND to 0.0.0.0 on a port in use");
	parse_cm_addr("::", port, &b);
	EXPECT_ST(cm_bind(&c, id2, &b), -EADDRINUSE, "CM_BIND to [::] on a port in use");
	EXPECT_ST(cm_bind(&c2, 0, &a), -EBADF, "CM_BIND with handle 0 on a connection with none");

	/* 7. a channel in use */
	EXPECT_ST(cm_handle_op(&c, XRXE_CTRL_CM_DESTROY_CHANNEL, ch), -EBUSY,
		  "CM_DESTROY_CHANNEL while IDs use it");

	/* 8. options */
	EXPECT_ST(cm_set_option(&c, id2, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, 129), -EINVAL,
		  "CM_SET_OPTION with optlen 129");
	EXPECT_ST(cm_set_option(&c, id2, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, 0xffffffffu), -EINVAL,
		  "CM_SET_OPTION with optlen 0xffffffff");
	EXPECT_ST(cm_set_option(&c, id2, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, 4), -EINVAL,
		  "CM_SET_OPTION TOS with optlen 4");
	EXPECT_ST(cm_set_option(&c, id2, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, 128), -EINVAL,
		  "CM_SET_OPTION REUSEADDR with optlen 128");
	EXPECT_ST(cm_set_option(&c, id2, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, 64), -EINVAL,
		  "CM_SET_OPTION IB_PATH");
	EXPECT_ST(cm_set_option(&c, id2, 77, 1, 4), -ENOSYS, "CM_SET_OPTION at level 77");
	EXPECT_ST(cm_set_option(&c, id2, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, 1), 0,
		  "CM_SET_OPTION TOS with optlen 1");

	/* 9. QP attributes before a connection */
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_INIT_QP_ATTR, id, IBV_QPS_RTR, NULL), -EINVAL,
		  "CM_INIT_QP_ATTR RTR before any connection");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_INIT_QP_ATTR, id, IBV_QPS_RTS, NULL), -EINVAL,
		  "CM_INIT_QP_ATTR RTS before any connection");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_INIT_QP_ATTR, id, 0xdead, NULL), -EINVAL,
		  "CM_INIT_QP_ATTR state 0xdead");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_INIT_QP_ATTR, id, IBV_QPS_INIT, NULL), 0,
		  "CM_INIT_QP_ATTR INIT before a connection");

	/* 10. out of order */
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_CONNECT, id2, 0x111, 0), -EINVAL,
		  "CM_CONNECT of an idle ID");
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_CONNECT, id, 0x111, 0), -EINVAL,
		  "CM_CONNECT of a bound ID (no route)");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_RESOLVE_ROUTE, id2, 1000, NULL), -EINVAL,
		  "CM_RESOLVE_ROUTE before address resolution");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_LISTEN, id2, 10, NULL), -EINVAL,
		  "CM_LISTEN of an unbound ID");
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_ACCEPT, id, 0x111, 0), -EINVAL,
		  "CM_ACCEPT without a connect request");
	EXPECT_ST(cm_reject(&c, id, 0), -EINVAL, "CM_REJECT without a connect request");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_ESTABLISH, id, 0, NULL), -EINVAL,
		  "CM_ESTABLISH without a connect response");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_DISCONNECT, id, 0, NULL), -EINVAL,
		  "CM_DISCONNECT of an unconnected ID");
	{
		struct xrxe_ctrl_cm_mcast m;

		hdr_init(&m, XRXE_CTRL_CM_JOIN_MCAST, sizeof(m));
		m.handle = id;
		parse_cm_addr("239.1.2.3", 0, &m.addr);
		EXPECT_ST(call(&c, &m, sizeof(m), NULL, 0, NULL), -EINVAL,
			  "CM_JOIN_MCAST on an RC ID");
	}
	{
		struct xrxe_ctrl_cm_resolve_addr m;

		hdr_init(&m, XRXE_CTRL_CM_RESOLVE_ADDR, sizeof(m));
		m.handle = id2;
		EXPECT_ST(call(&c, &m, sizeof(m), NULL, 0, NULL), -EAFNOSUPPORT,
			  "CM_RESOLVE_ADDR without a destination");
		parse_cm_addr("0.0.0.0", 1, &m.dst);
		EXPECT_ST(call(&c, &m, sizeof(m), NULL, 0, NULL), -EINVAL,
			  "CM_RESOLVE_ADDR to 0.0.0.0");
	}

	/* 11. private data: a route-resolved ID to a port nobody listens on
	 * (loopback: the daemon's own address) */
	parse_cm_addr(ip, (uint16_t)(port + 1), &b);
	EXPECT_ST(cm_resolve_addr(&c, id2, &b), 0, "CM_RESOLVE_ADDR to our own address");
	expect(wait_event(rd, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, 2000), "ADDR_RESOLVED");
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_CONNECT, id2, 0x111, 0), -EINVAL,
		  "CM_CONNECT of an address-resolved ID (no route)");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_RESOLVE_ROUTE, id2, 1000, NULL), 0,
		  "CM_RESOLVE_ROUTE");
	expect(wait_event(rd, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, 2000), "ROUTE_RESOLVED");
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_CONNECT, id2, 0x111, 57), -EINVAL,
		  "CM_CONNECT with 57 bytes of private data (TCP: 56)");
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_CONNECT, id2, 0x111, 255), -EINVAL,
		  "CM_CONNECT with 255 bytes of private data");
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_CONNECT, id2, 0x111, 56), 0,
		  "CM_CONNECT with 56 bytes of private data (the ID was left as it was)");
	expect(wait_event(rd, RDMA_CM_EVENT_REJECTED, &ev, 3000) && ev.status == 8,
	       "REJECTED, status 8 (nobody listens)");
	/* UD: SIDR_REQ private data 180 */
	EXPECT_ST(cm_create_id(&c, ch, RDMA_PS_UDP, IBV_QPT_UD, &id3), 0, "CM_CREATE_ID (UDP, UD)");
	EXPECT_ST(cm_resolve_addr(&c, id3, &b), 0, "CM_RESOLVE_ADDR (UD)");
	expect(wait_event(rd, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, 2000), "ADDR_RESOLVED (UD)");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_RESOLVE_ROUTE, id3, 1000, NULL), 0,
		  "CM_RESOLVE_ROUTE (UD)");
	expect(wait_event(rd, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, 2000), "ROUTE_RESOLVED (UD)");
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_CONNECT, id3, 0x112, 181), -EINVAL,
		  "CM_CONNECT (SIDR) with 181 bytes of private data (UD: 180)");

	/* a listener and a connect request of our own, for accept/reject */
	EXPECT_ST(cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RC, &lid), 0, "CM_CREATE_ID (listener)");
	parse_cm_addr(ip, (uint16_t)(port + 2), &b);
	EXPECT_ST(cm_bind(&c, lid, &b), 0, "CM_BIND (listener)");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_LISTEN, lid, 4, NULL), 0, "CM_LISTEN");
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_CONNECT, lid, 0x111, 0), -EINVAL,
		  "CM_CONNECT of a listener");
	EXPECT_ST(cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RC, &id3), 0, "CM_CREATE_ID (active)");
	EXPECT_ST(cm_resolve_addr(&c, id3, &b), 0, "CM_RESOLVE_ADDR (active)");
	expect(wait_event(rd, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, 2000), "ADDR_RESOLVED (active)");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_RESOLVE_ROUTE, id3, 1000, NULL), 0,
		  "CM_RESOLVE_ROUTE (active)");
	expect(wait_event(rd, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, 2000), "ROUTE_RESOLVED (active)");
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_CONNECT, id3, 0x113, 10), 0, "CM_CONNECT");
	st = wait_event(rd, RDMA_CM_EVENT_CONNECT_REQUEST, &ev, 3000);
	expect(st && ev.listen_handle == lid, "CONNECT_REQUEST on the listener");
	child = ev.handle;
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_ACCEPT, child, 0x114, 197), -EINVAL,
		  "CM_ACCEPT with 197 bytes of private data (REP: 196)");
	EXPECT_ST(cm_reject(&c, child, 149), -EINVAL,
		  "CM_REJECT with 149 bytes of private data (REJ: 148)");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_INIT_QP_ATTR, child, IBV_QPS_RTR, &rep), 0,
		  "CM_INIT_QP_ATTR RTR of a connect request");
	EXPECT_ST(cm_connect_op(&c, XRXE_CTRL_CM_ACCEPT, child, 0x114, 196), 0,
		  "CM_ACCEPT with 196 bytes");
	st = wait_event(rd, RDMA_CM_EVENT_CONNECT_RESPONSE, &ev, 3000);
	expect(st && ev.handle == id3 && ev.param.conn.qp_num == 0x114,
	       "CONNECT_RESPONSE names the accepting QP");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_ESTABLISH, id3, 0, NULL), 0, "CM_ESTABLISH (RTU)");
	expect(wait_event(rd, RDMA_CM_EVENT_ESTABLISHED, &ev, 3000) && ev.handle == child,
	       "ESTABLISHED on the passive side");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_DISCONNECT, id3, 0, NULL), 0, "CM_DISCONNECT");
	expect(wait_event(rd, RDMA_CM_EVENT_DISCONNECTED, &ev, 3000), "DISCONNECTED");

	/* 12. stale handles */
	EXPECT_ST(cm_handle_op(&c, XRXE_CTRL_CM_DESTROY_ID, id2), 0, "CM_DESTROY_ID");
	EXPECT_ST(cm_handle_op(&c, XRXE_CTRL_CM_DESTROY_ID, id2), -EBADF,
		  "CM_DESTROY_ID of a destroyed ID");
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_QUERY, id2, 0, NULL), -EBADF,
		  "CM_QUERY of a destroyed ID");
	EXPECT_ST(cm_handle_op(&c, XRXE_CTRL_CM_DESTROY_CHANNEL, ch2), -EBADF,
		  "CM_DESTROY_CHANNEL of another connection's channel (second try)");
	EXPECT_ST(cm_handle_op(&c2, XRXE_CTRL_CM_DESTROY_CHANNEL, ch2), 0,
		  "CM_DESTROY_CHANNEL of an unused channel");
	close(c2.sock);
	close(rd2);
	/* the daemon still answers the first connection, in order */
	EXPECT_ST(cm_arg_op(&c, XRXE_CTRL_CM_QUERY, id, 0, NULL), 0, "the daemon still answers");
	close(c.sock);
	close(rd);
	return api_failed;
}

/* --- a server ----------------------------------------------------------- */

static int cmd_listen(const char *ifname, const char *ip, uint16_t port, int backlog, int accept_n,
		      const char *ready)
{
	struct xrxe_cm_event_msg ev;
	struct xrxe_cm_addr a;
	struct conn c;
	uint32_t ch, id;
	int rd, st, accepted = 0;

	conn_open(&c, ifname);
	if ((st = cm_open(&c, XRXE_ABI_VERSION)))
		die("CM_OPEN: %s", strerror(-st));
	ch = cm_channel(&c, 7, &rd);
	if ((st = cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RC, &id)))
		die("CM_CREATE_ID: %s", strerror(-st));
	parse_cm_addr(ip, port, &a);
	if ((st = cm_bind(&c, id, &a)))
		die("CM_BIND: %s", strerror(-st));
	if ((st = cm_arg_op(&c, XRXE_CTRL_CM_LISTEN, id, (uint32_t)backlog, NULL)))
		die("CM_LISTEN: %s", strerror(-st));
	printf("listening %s:%u backlog %d pid %d\n", ip, port, backlog, (int)getpid());
	fflush(stdout);
	touch(ready);
	for (;;) {
		if (!read_event(rd, &ev, 1000))
			continue;
		printf("event %s status %d handle %#x listener %#x\n", event_name(ev.event),
		       ev.status, ev.handle, ev.listen_handle);
		if (ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && accepted < accept_n) {
			st = cm_connect_op(&c, XRXE_CTRL_CM_ACCEPT, ev.handle, 0x3000 + (uint32_t)accepted, 8);
			printf("accept %#x %s\n", ev.handle, err_name(st));
			accepted++;
		}
		fflush(stdout);
	}
}

/* --- events nobody reads ------------------------------------------------ */

static int cmd_evflood(const char *ifname, const char *ip, uint16_t port, unsigned events,
		       const char *ready, const char *go)
{
	struct xrxe_cm_event_msg ev;
	struct xrxe_cm_addr dst;
	struct conn c;
	uint32_t ch, id;
	unsigned attempts = (events + 2) / 3, n = 0;
	int rd, st, sv[2];
	uint64_t t0 = now_us();

	/* the channel's sockets before the control socket, as a library that
	 * creates its event channel before it talks to a daemon: when the
	 * process dies, the kernel releases its files last opened first, so
	 * the daemon sees the connection hang up before the channel does */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	conn_open(&c, ifname);
	if ((st = cm_open(&c, XRXE_ABI_VERSION)))
		die("CM_OPEN: %s", strerror(-st));
	if ((st = cm_channel_fd(&c, sv[1], 9, &ch)))
		die("CM_CREATE_CHANNEL: %s", strerror(-st));
	rd = sv[0];
	parse_cm_addr(ip, port, &dst);
	/* each attempt: ADDR_RESOLVED, ROUTE_RESOLVED, then REJECTED when the
	 * daemon's own REJ comes back through its loopback */
	for (unsigned i = 0; i < attempts; i++) {
		if ((st = cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RC, &id)))
			die("attempt %u: CM_CREATE_ID: %s", i, strerror(-st));
		if ((st = cm_resolve_addr(&c, id, &dst)))
			die("attempt %u: CM_RESOLVE_ADDR: %s", i, strerror(-st));
		if ((st = cm_arg_op(&c, XRXE_CTRL_CM_RESOLVE_ROUTE, id, 1000, NULL)))
			die("attempt %u: CM_RESOLVE_ROUTE: %s", i, strerror(-st));
		if ((st = cm_connect_op(&c, XRXE_CTRL_CM_CONNECT, id, 0x4000 + i, 0)))
			die("attempt %u: CM_CONNECT: %s", i, strerror(-st));
	}
	printf("attempts %u\n", attempts);
	printf("events_due %u\n", attempts * 3);
	printf("requests_ms %" PRIu64 "\n", (now_us() - t0) / 1000);
	fflush(stdout);
	touch(ready);
	while (go && access(go, F_OK))
		usleep(20000);
	/* read it dry: what the socket held, then the daemon's queue */
	while (read_event(rd, &ev, 1000))
		n++;
	printf("received %u\n", n);
	fflush(stdout);
	close(c.sock);
	return 0;
}

/* An event channel that is a connection to the daemon's own control socket:
 * its events come back to it as requests. N events (ROUTE_RESOLVED, one per
 * CM_RESOLVE_ROUTE) are produced; every request must still be answered. */
static int cmd_loopchan(const char *ifname, const char *ip, unsigned events)
{
	struct xrxe_cm_addr dst;
	struct conn c;
	uint32_t ch, id;
	int loop, st;

	conn_open(&c, ifname);
	if ((st = cm_open(&c, XRXE_ABI_VERSION)))
		die("CM_OPEN: %s", strerror(-st));
	loop = xrxe_ctrl_connect(ifname);
	if (loop < 0)
		die("second connection: %s", strerror(-loop));
	if ((st = cm_channel_fd(&c, loop, 11, &ch)))
		die("CM_CREATE_CHANNEL (the daemon's own socket): %s", strerror(-st));
	if ((st = cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RC, &id)))
		die("CM_CREATE_ID: %s", strerror(-st));
	parse_cm_addr(ip, 9, &dst);
	if ((st = cm_resolve_addr(&c, id, &dst)))
		die("CM_RESOLVE_ADDR: %s", strerror(-st));
	for (unsigned i = 0; i < events; i++)
		if ((st = cm_arg_op(&c, XRXE_CTRL_CM_RESOLVE_ROUTE, id, 1000, NULL)))
			die("CM_RESOLVE_ROUTE %u: %s", i, strerror(-st));
	printf("events_due %u\n", events + 1);
	close(loop);
	close(c.sock);
	return 0;
}

/* N IDs resolving an address nobody answers ARP for; held until killed. */
static int cmd_resolve(const char *ifname, const char *ip, unsigned count, unsigned timeout_ms,
		       const char *ready)
{
	struct xrxe_ctrl_cm_resolve_addr m;
	struct conn c;
	uint32_t ch, id;
	int rd, st;

	conn_open(&c, ifname);
	if ((st = cm_open(&c, XRXE_ABI_VERSION)))
		die("CM_OPEN: %s", strerror(-st));
	ch = cm_channel(&c, 5, &rd);
	for (unsigned i = 0; i < count; i++) {
		if ((st = cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RC, &id)))
			die("CM_CREATE_ID: %s", strerror(-st));
		hdr_init(&m, XRXE_CTRL_CM_RESOLVE_ADDR, sizeof(m));
		m.handle = id;
		m.timeout_ms = timeout_ms;
		parse_cm_addr(ip, 1, &m.dst);
		if ((st = call(&c, &m, sizeof(m), NULL, 0, NULL)))
			die("CM_RESOLVE_ADDR: %s", strerror(-st));
	}
	printf("resolving %u\n", count);
	touch(ready);
	for (;;)
		pause();
}

static int cmd_ping(const char *ifname)
{
	struct xrxe_cm_addr any;
	struct conn c;
	uint32_t ch, id;
	int rd, st;
	uint64_t t0 = now_us();

	conn_open(&c, ifname);
	if ((st = cm_open(&c, XRXE_ABI_VERSION)))
		die("CM_OPEN: %s", strerror(-st));
	ch = cm_channel(&c, 3, &rd);
	if ((st = cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RC, &id)))
		die("CM_CREATE_ID: %s", strerror(-st));
	parse_cm_addr("0.0.0.0", 0, &any);
	if ((st = cm_bind(&c, id, &any)))
		die("CM_BIND: %s", strerror(-st));
	if ((st = cm_arg_op(&c, XRXE_CTRL_CM_QUERY, id, 0, NULL)))
		die("CM_QUERY: %s", strerror(-st));
	if ((st = cm_handle_op(&c, XRXE_CTRL_CM_DESTROY_ID, id)))
		die("CM_DESTROY_ID: %s", strerror(-st));
	printf("answered_us %" PRIu64 "\n", now_us() - t0);
	close(c.sock);
	close(rd);
	return 0;
}

static int cmd_bind(const char *ifname, const char *ip, uint16_t port)
{
	struct xrxe_cm_addr a;
	struct conn c;
	uint32_t ch, id;
	int rd, st;

	conn_open(&c, ifname);
	if ((st = cm_open(&c, XRXE_ABI_VERSION)))
		die("CM_OPEN: %s", strerror(-st));
	ch = cm_channel(&c, 4, &rd);
	if ((st = cm_create_id(&c, ch, RDMA_PS_TCP, IBV_QPT_RC, &id)))
		die("CM_CREATE_ID: %s", strerror(-st));
	parse_cm_addr(ip, port, &a);
	st = cm_bind(&c, id, &a);
	if (!st)
		st = cm_arg_op(&c, XRXE_CTRL_CM_LISTEN, id, 1, NULL);
	printf("bind_listen %s\n", err_name(st));
	close(c.sock);
	close(rd);
	return st ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ip", required_argument, NULL, 'i' },      { "foreign", required_argument, NULL, 'f' },
		{ "port", required_argument, NULL, 'p' },    { "backlog", required_argument, NULL, 'b' },
		{ "accept", required_argument, NULL, 'a' },  { "ready", required_argument, NULL, 'r' },
		{ "events", required_argument, NULL, 'e' },  { "go", required_argument, NULL, 'g' },
		{ 0 },
	};
	const char *ip = NULL, *foreign = NULL, *ready = NULL, *go = NULL, *cmd, *ifname;
	int port = 0, backlog = 1, accept_n = 0, events = 10000, opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		die("usage: cm_client wire|api|listen|evflood|ping|bind IFACE ... (see the source)");
	cmd = argv[1];
	if (!strcmp(cmd, "wire"))
		return cmd_wire(argc - 1, argv + 1);
	ifname = argv[2];
	optind = 3;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'i': ip = optarg; break;
		case 'f': foreign = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'b': backlog = atoi(optarg); break;
		case 'a': accept_n = atoi(optarg); break;
		case 'r': ready = optarg; break;
		case 'e': events = atoi(optarg); break;
		case 'g': go = optarg; break;
		default: die("bad option");
		}
	}
	if (!strcmp(cmd, "ping"))
		return cmd_ping(ifname);
	if (!ip)
		die("%s: --ip is required", cmd);
	if (!strcmp(cmd, "api"))
		return cmd_api(ifname, ip, foreign ? foreign : "10.0.0.1");
	if (!strcmp(cmd, "listen"))
		return cmd_listen(ifname, ip, (uint16_t)port, backlog, accept_n, ready);
	if (!strcmp(cmd, "evflood"))
		return cmd_evflood(ifname, ip, (uint16_t)port, (unsigned)events, ready, go);
	if (!strcmp(cmd, "bind"))
		return cmd_bind(ifname, ip, (uint16_t)port);
	if (!strcmp(cmd, "loopchan"))
		return cmd_loopchan(ifname, ip, (unsigned)events);
	if (!strcmp(cmd, "resolve"))
		return cmd_resolve(ifname, ip, (unsigned)events, (unsigned)backlog, ready);
	die("unknown command %s", cmd);
}
