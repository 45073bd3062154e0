// SPDX-License-Identifier: MIT
/*
 * A hostile rsocket peer and its victim, for tests/net/rsockets.sh.
 *
 *   rs_hostile server MODE ADDR PORT   an RDMA CM server that speaks the
 *                                      rsocket protocol (docs/rsockets.md)
 *                                      and breaks it as MODE says
 *   rs_hostile connect MODE ADDR PORT  the other way round: a client whose
 *                                      REQ carries broken connection data
 *                                      (bad-version, short-data, no-credits)
 *                                      to an rsocket server; exits 0 if it is
 *                                      rejected
 *   rs_hostile udjunk ADDR PORT        a datagram peer that breaks the UD
 *                                      side: it learns the victim's QP the
 *                                      protocol's way (a UDP datagram naming
 *                                      its own QP; the victim answers with
 *                                      its QPN), then sends UD messages too
 *                                      short for the header, with an unknown
 *                                      version, with a length that does not
 *                                      match the version or the message;
 *                                      exits 0 once all went out
 *   rs_hostile udping ADDR PORT COUNT [STOP_PID]
 *                                      an honest client of udpong's server
 *                                      (its echo op): COUNT datagrams, one at
 *                                      a time, each echoed intact or the same
 *                                      one sent again after 200 ms, stale
 *                                      echoes ignored; exits 0 once all came
 *                                      back. udpong's own client resends the
 *                                      last datagram it *received*, so once
 *                                      its current one is dropped (a full
 *                                      receive queue) it circulates stale
 *                                      copies forever. With STOP_PID, after
 *                                      the first echo it stops that process
 *                                      (the server) with SIGSTOP, sends it
 *                                      1000 datagrams (more than its 384
 *                                      receive WQEs: the rest dropped) and
 *                                      resumes it
 *   rs_hostile client ADDR PORT recv|trickle|send|connect|keepalive
 *                                      (keepalive: SO_KEEPALIVE with
 *                                      TCP_KEEPIDLE 1 s, then rrecv; its
 *                                      alarm, and trickle's, is 60 s)
 *                                      an rsocket client (rconnect, then
 *                                      blocking rrecv or rsend until
 *                                      something fails)
 *
 * The client prints what it got ("rconnect: -1 errno ..." / "rrecv: -1
 * errno ...") and exits 0 only if the call failed with an error, within the
 * time its alarm allows (20 s; 60 s for keepalive and trickle): a hang is
 * SIGALRM, a crash a signal, both fail.
 *
 * Server modes (after an otherwise correct accept unless said):
 *   bad-version   the REP's connection data says version 2
 *   short-data    the REP carries 8 bytes of private data, not 40
 *   no-credits    the REP grants 0 message credits
 *   no-buffer     the REP grants a 0-byte receive buffer
 *   overrun       a data message claiming 256 MiB, more than granted
 *   reserved-op   an immediate with reserved op 5
 *   bad-ctrl      a control message with an unknown code (99)
 *   bad-iomap     an iomap update for entry 1000 (none were announced)
 *   send          a 0-byte SEND instead of an RDMA WRITE WITH IMMEDIATE
 *   empty-data    a data message of 0 bytes (rrecv would return "EOF")
 *   flood         1000 1-byte data messages: more than the client's 384
 *                 credits (with the client's trickle, which never reads:
 *                 it sends a byte every 10 ms)
 *   vanish        exits without closing (its daemon sends the DREQ)
 *   silent        accepts, then says nothing for 60 s (the test kills its
 *                 daemon: a host that vanishes without a DREQ; only the
 *                 client's keepalive can notice)
 */
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

/* The wire layout (src/rdmacm/rsocket_proto.h, docs/rsockets.md). */
struct sge_wire {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};
struct conn_data {
	uint8_t version, flags;
	uint16_t credits;
	uint8_t reserved[3], iomap_size;
	struct sge_wire target_sgl, data_buf;
};
#define MSG(op, arg) (((uint32_t)(op) << 29) | ((uint32_t)(arg) & 0x1FFFFFFFu))

static int die(const char *what)
{
	fprintf(stderr, "rs_hostile: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int resolve(const char *addr, const char *port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *ai;

	if (getaddrinfo(addr, port, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static struct rdma_cm_event *wait_event(struct rdma_event_channel *ch,
					enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	for (;;) {
		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		if (ev->event == want)
			return ev;
		fprintf(stderr, "rs_hostile: event %s\n", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	}
}

static void post_imm(struct rdma_cm_id *id, enum ibv_wr_opcode op, uint32_t imm)
{
	struct ibv_send_wr wr = { .opcode = op, .imm_data = htobe32(imm),
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;

	if (ibv_post_send(id->qp, &wr, &bad))
		die("ibv_post_send");
	while (ibv_poll_cq(id->send_cq, 1, &wc) == 0)
		usleep(100);
}

static int server(const char *mode, const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *lid, *id;
	struct rdma_cm_event *ev;
	struct sockaddr_storage ss;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .sq_sig_all = 0,
				       .cap = { .max_send_wr = 64, .max_recv_wr = 512,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7 };
	struct conn_data cd = { .version = 1, .flags = 2, .credits = htobe16(512) };
	static uint8_t target[4096] __attribute__((aligned(4096)));
	static uint8_t data[1 << 16] __attribute__((aligned(4096)));
	struct ibv_mr *tmr, *dmr;
	size_t cdlen = sizeof(cd);

	if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (resolve(addr, port, &ss) || rdma_bind_addr(lid, (struct sockaddr *)&ss) ||
	    rdma_listen(lid, 1))
		die("rdma_bind_addr/listen");
	printf("listening\n");
	fflush(stdout);
	ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	rdma_ack_cm_event(ev);
	if (rdma_create_qp(id, NULL, &qa))
		die("rdma_create_qp");
	for (int i = 0; i < 512; i++) {
		struct ibv_recv_wr rwr = { .wr_id = (uint64_t)i }, *bad;

		if (ibv_post_recv(id->qp, &rwr, &bad))
			die("ibv_post_recv");
	}
	tmr = ibv_reg_mr(id->pd, target, sizeof(target),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	dmr = ibv_reg_mr(id->pd, data, sizeof(data),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!tmr || !dmr)
		die("ibv_reg_mr");
	cd.target_sgl = (struct sge_wire){ htobe64((uintptr_t)target), htobe32(tmr->rkey),
					   htobe32(2) };
	cd.data_buf = (struct sge_wire){ htobe64((uintptr_t)data), htobe32(dmr->rkey),
					 htobe32(sizeof(data) / 2) };
	if (!strcmp(mode, "bad-version"))
		cd.version = 2;
	else if (!strcmp(mode, "short-data"))
		cdlen = 8;
	else if (!strcmp(mode, "no-credits"))
		cd.credits = 0;
	else if (!strcmp(mode, "no-buffer"))
		cd.data_buf.length = 0;
	param.private_data = &cd;
	param.private_data_len = (uint8_t)cdlen;
	if (rdma_accept(id, &param))
		die("rdma_accept");
	ev = wait_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	rdma_ack_cm_event(ev);
	usleep(300 * 1000); /* the client is in rrecv/rsend by now */

	if (!strcmp(mode, "overrun"))
		post_imm(id, IBV_WR_RDMA_WRITE_WITH_IMM, MSG(0, 1u << 28));
	else if (!strcmp(mode, "reserved-op"))
		post_imm(id, IBV_WR_RDMA_WRITE_WITH_IMM, MSG(5, 0));
	else if (!strcmp(mode, "bad-ctrl"))
		post_imm(id, IBV_WR_RDMA_WRITE_WITH_IMM, MSG(7, 99));
	else if (!strcmp(mode, "bad-iomap"))
		post_imm(id, IBV_WR_RDMA_WRITE_WITH_IMM, MSG(6, 1000));
	else if (!strcmp(mode, "send"))
		post_imm(id, IBV_WR_SEND_WITH_IMM, MSG(0, 0));
	else if (!strcmp(mode, "empty-data"))
		post_imm(id, IBV_WR_RDMA_WRITE_WITH_IMM, MSG(0, 0));
	else if (!strcmp(mode, "flood"))
		for (int i = 0; i < 1000; i++)
			post_imm(id, IBV_WR_RDMA_WRITE_WITH_IMM, MSG(0, 1));
	else if (!strcmp(mode, "vanish"))
		_exit(0); /* no DISCONNECT message, no rdma_disconnect */
	else if (!strcmp(mode, "silent"))
		sleep(60);
	/* Stay until the client gives up on us (its DREQ), at most 15 s. */
	alarm(15);
	ev = wait_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	rdma_ack_cm_event(ev);
	return 0;
}

static int bad_connect(const char *mode, const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct conn_data cd = { .version = 1, .flags = 2, .credits = htobe16(64) };
	static uint8_t target[4096] __attribute__((aligned(4096)));
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7 };
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	int rejected;

	alarm(20);
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) || resolve(addr, port, &ss) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000))
		die("rdma_resolve_addr");
	rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	if (rdma_create_qp(id, NULL, &qa))
		die("rdma_create_qp");
	mr = ibv_reg_mr(id->pd, target, sizeof(target),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	cd.target_sgl = (struct sge_wire){ htobe64((uintptr_t)target), htobe32(mr->rkey), htobe32(2) };
	cd.data_buf = (struct sge_wire){ htobe64((uintptr_t)target + 64), htobe32(mr->rkey),
					 htobe32(1024) };
	param.private_data = &cd;
	param.private_data_len = sizeof(cd);
	if (!strcmp(mode, "bad-version"))
		cd.version = 7;
	else if (!strcmp(mode, "short-data"))
		param.private_data_len = 8;
	else if (!strcmp(mode, "no-credits"))
		cd.credits = 0;
	if (rdma_connect(id, &param))
		die("rdma_connect");
	for (;;) {
		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		if (ev->event != RDMA_CM_EVENT_CONNECT_RESPONSE &&
		    ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
			break;
		rdma_ack_cm_event(ev);
	}
	rejected = ev->event == RDMA_CM_EVENT_REJECTED;
	printf("%s: %s\n", mode, rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	return rejected ? 0 : 1;
}

/* The UDP header of rdma-core's datagram rsockets (docs/rsockets.md). */
struct udp_hdr {
	uint32_t tag;
	uint8_t version, op, length, reserved;
	uint32_t qpn;
	uint32_t ipv4;
};

static int ud_junk(const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_UD, .sq_sig_all = 1,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	static uint8_t msg[256] __attribute__((aligned(64)));
	struct sockaddr_storage ss, me;
	struct rdma_cm_id *id;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_port_attr pa;
	struct udp_hdr h, r;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	socklen_t ml = sizeof(me);
	uint32_t vqpn;
	int u, i;
	/* length, version byte, header-length byte: each wrong its own way */
	static const struct { uint32_t len; uint8_t ver, hl; const char *what; } junk[] = {
		{ 0, 4, 8, "empty" },
		{ 4, 4, 8, "shorter than any header" },
		{ 16, 5, 8, "version 5" },
		{ 40, 4, 24, "version 4 with the IPv6 header length" },
		{ 12, 6, 24, "IPv6 header, 12-byte message" },
		{ 16, 4, 200, "header length 200" },
	};

	alarm(20);
	if (resolve(addr, port, &ss) || ss.ss_family != AF_INET)
		die("resolve (IPv4)");
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000))
		die("rdma_resolve_addr");
	rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	if (rdma_create_qp(id, NULL, &qa))
		die("rdma_create_qp (UD)");
	mr = ibv_reg_mr(id->pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");

	/* First contact over UDP: "data from QP n"; the answer names its QP. */
	u = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&h, 0, sizeof(h));
	h.tag = htobe32(0x55555555);
	h.version = 4;
	h.op = 0;
	h.length = 16;
	h.qpn = htobe32(id->qp->qp_num);
	h.ipv4 = ((struct sockaddr_in *)rdma_get_local_addr(id))->sin_addr.s_addr;
	memcpy(msg, &h, sizeof(h));
	memset(msg + sizeof(h), 0xff, 8); /* an unknown udpong op: counted, ignored */
	if (sendto(u, msg, sizeof(h) + 8, 0, (struct sockaddr *)&ss, sizeof(struct sockaddr_in)) < 0)
		die("sendto");
	getsockname(u, (struct sockaddr *)&me, &ml);
	if (recv(u, &r, sizeof(r), 0) < 16 || be32toh(r.tag) != 0x55555555)
		die("no answer over UDP");
	vqpn = be32toh(r.qpn) & 0xFFFFFF;
	printf("the victim's QP is %u\n", vqpn);

	aa.grh.dgid = id->route.path_rec->dgid;
	aa.grh.hop_limit = 64;
	if (ibv_query_port(id->verbs, 1, &pa))
		die("ibv_query_port");
	for (i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;

		if (!ibv_query_gid(id->verbs, 1, i, &g) &&
		    !memcmp(&g, &id->route.path_rec->sgid, sizeof(g)))
			break;
	}
	aa.grh.sgid_index = (uint8_t)i;
	ah = ibv_create_ah(id->pd, &aa);
	if (!ah)
		die("ibv_create_ah");
	for (size_t k = 0; k < sizeof(junk) / sizeof(junk[0]); k++) {
		struct ibv_sge sge = { .addr = (uintptr_t)msg, .length = junk[k].len, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = junk[k].len ? 1 : 0,
					  .opcode = IBV_WR_SEND },
				   *bad;
		struct ibv_wc wc;

		memset(msg, 0xab, sizeof(msg));
		msg[0] = junk[k].ver;
		msg[1] = junk[k].hl;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = vqpn;
		wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
		if (ibv_post_send(id->qp, &wr, &bad))
			die("ibv_post_send");
		while (ibv_poll_cq(id->send_cq, 1, &wc) == 0)
			usleep(100);
		printf("sent a UD message: %s (%s)\n", junk[k].what, ibv_wc_status_str(wc.status));
	}
	close(u);
	return 0;
}

static int client(const char *addr, const char *port, const char *what)
{
	struct sockaddr_storage ss;
	static char buf[1 << 16];
	ssize_t r;
	int s;

	/* A hang fails the test (SIGALRM). The keepalive needs its probes'
	 * time; the trickle waits out the flood's RNR retries, which took 6 s
	 * alone and 24 s at load 15. */
	alarm(strcmp(what, "keepalive") && strcmp(what, "trickle") ? 20 : 60);
	if (resolve(addr, port, &ss))
		return 2;
	s = rsocket(ss.ss_family, SOCK_STREAM, 0);
	if (s < 0)
		die("rsocket");
	if (!strcmp(what, "keepalive")) {
		int on = 1, idle = 1;

		if (rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) ||
		    rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)))
			die("rsetsockopt");
		what = "recv";
		printf("keepalive on, every 1 s\n");
	}
	if (rconnect(s, (struct sockaddr *)&ss,
		     ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
					     : sizeof(struct sockaddr_in6))) {
		printf("rconnect: -1 errno %d (%s)\n", errno, strerror(errno));
		return !strcmp(what, "connect") ? 0 : 1;
	}
	if (!strcmp(what, "connect")) {
		printf("rconnect: 0 (connected to a peer it should have refused)\n");
		return 1;
	}
	for (;;) {
		if (!strcmp(what, "trickle")) {
			usleep(10000);
			r = rsend(s, buf, 1, 0);
		} else if (!strcmp(what, "send"))
			r = rsend(s, buf, sizeof(buf), 0);
		else
			r = rrecv(s, buf, sizeof(buf), 0);
		if (r > 0)
			continue;
		printf("%s: %zd errno %d (%s)\n", what, r, r < 0 ? errno : 0,
		       r < 0 ? strerror(errno) : "end of stream");
		rclose(s);
		return r < 0 ? 0 : 1;
	}
}

/* udpong's message (rdma-core librdmacm/examples/udpong.c): its server
 * echoes op 3 (echo) back whole and counts, without answering, ops it does
 * not know. */
struct udpong_msg {
	uint8_t op, id, seqno, reserved;
	uint32_t data;
	uint8_t buf[56];
};
#define UDPONG_ECHO 3
#define UDPONG_UNKNOWN 0xfe

static int ud_ping(const char *addr, const char *port, long count, long stop_pid)
{
	struct sockaddr_storage ss;
	struct udpong_msg m, r;
	long resent = 0, stale = 0;
	int s, n_ok = 0;

	alarm(50);
	if (resolve(addr, port, &ss))
		die("resolve");
	s = rsocket(ss.ss_family, SOCK_DGRAM, 0);
	if (s < 0 || rconnect(s, (struct sockaddr *)&ss, ss.ss_family == AF_INET ?
			      sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)))
		die("rsocket/rconnect (datagram)");
	for (long i = 0; i < count; i++) {
		memset(&m, 0, sizeof(m));
		m.op = UDPONG_ECHO;
		m.seqno = (uint8_t)i;
		m.data = htobe32((uint32_t)i);
		for (size_t k = 0; k < sizeof(m.buf); k++)
			m.buf[k] = (uint8_t)(i * 7 + k);
		if (rsend(s, &m, sizeof(m), 0) != sizeof(m))
			die("rsend");
		for (;;) {
			struct pollfd pfd = { .fd = s, .events = POLLIN };
			ssize_t n;

			if (rpoll(&pfd, 1, 200) <= 0) {
				if (rsend(s, &m, sizeof(m), 0) != sizeof(m))
					die("rsend");
				resent++;
				continue;
			}
			n = rrecv(s, &r, sizeof(r), MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				continue;
			if (n < 0)
				die("rrecv");
			if (n == sizeof(m) && !memcmp(&r, &m, sizeof(m)))
				break;
			stale++;
		}
		if (i == 0 && stop_pid > 0) {
			/* The server asleep, more datagrams than its receive
			 * queue holds: its daemon drops the rest. */
			if (kill((pid_t)stop_pid, SIGSTOP))
				die("kill SIGSTOP");
			memset(&r, 0, sizeof(r));
			r.op = UDPONG_UNKNOWN;
			for (int k = 0; k < 1000 && n_ok >= 0; k++)
				if (rsend(s, &r, sizeof(r), 0) != sizeof(r))
					n_ok = -1;
			/* resumed whatever happened */
			if (kill((pid_t)stop_pid, SIGCONT))
				die("kill SIGCONT");
			if (n_ok < 0)
				die("rsend (flood)");
			printf("1000 datagrams sent to the stopped server\n");
		}
	}
	printf("%ld datagrams echoed intact (%ld resent after 200 ms, %ld stale echoes ignored)\n",
	       count, resent, stale);
	rclose(s);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[1], "connect"))
		return bad_connect(argv[2], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], argv[4]);
	if (argc == 4 && !strcmp(argv[1], "udjunk"))
		return ud_junk(argv[2], argv[3]);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "udping"))
		return ud_ping(argv[2], argv[3], atol(argv[4]), argc == 6 ? atol(argv[5]) : 0);
	fprintf(stderr, "usage: rs_hostile server|connect MODE ADDR PORT | client ADDR PORT "
		"recv|trickle|send|connect|keepalive | udjunk ADDR PORT | "
		"udping ADDR PORT COUNT [STOP_PID]\n");
	return 2;
}
