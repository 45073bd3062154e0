/* SPDX-License-Identifier: MIT */
/*
 * What our two-ended verbs test programs (rc_integrity.c, rc_scale.c) share
 * besides verbs: their error exits (fail() from test_prog.h), and the TCP connection over which the two
 * ends trade QP numbers, PSNs, keys and addresses before RTR (as rdma-core's
 * ibv_rc_pingpong does). Define OOB_PROG, the program's name for messages,
 * before including it.
 */
#ifndef XRXE_TESTS_VERBS_OOB_H
#define XRXE_TESTS_VERBS_OOB_H

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TEST_PROG OOB_PROG
#include "test_prog.h"

static void die(const char *what) __attribute__((noreturn));
static void die(const char *what)
{
	fprintf(stderr, OOB_PROG ": %s: %s\n", what, strerror(errno ? errno : EIO));
	exit(1);
}


/* The client (server names the other end) connects, retrying every 100 ms
 * for up to tries times while the server starts; the server (server NULL)
 * accepts one connection on port, IPv6 and IPv4 alike. */
static int oob_connect(const char *server, int port, int tries)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
	char service[16];
	int fd = -1, one = 1, zero = 0, lfd;

	snprintf(service, sizeof(service), "%d", port);
	if (server) {
		if (getaddrinfo(server, service, &hints, &res))
			die("getaddrinfo");
		for (int t = 0; t < tries; t++) {
			fd = socket(res->ai_family, SOCK_STREAM, 0);
			if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen))
				break;
			close(fd);
			fd = -1;
			usleep(100000);
		}
		freeaddrinfo(res);
		if (fd < 0)
			die("connect");
		return fd;
	}
	hints.ai_flags = AI_PASSIVE;
	hints.ai_family = AF_INET6;
	if (getaddrinfo(NULL, service, &hints, &res))
		die("getaddrinfo");
	lfd = socket(res->ai_family, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(lfd, res->ai_addr, res->ai_addrlen) || listen(lfd, 1))
		die("bind/listen");
	freeaddrinfo(res);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept");
	close(lfd);
	return fd;
}

/* All of len bytes out (or in), or die. */
static void xfer(int fd, void *buf, size_t len, bool out)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n <= 0)
			die(out ? "oob write" : "oob read");
		p += n;
		len -= (size_t)n;
	}
}

#endif /* XRXE_TESTS_VERBS_OOB_H */
