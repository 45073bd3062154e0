// SPDX-License-Identifier: MIT
/*
 * Both directions of one stream rsocket at once, from two threads per end
 * (tests/net/rsockets.sh): a sending thread and a receiving thread share the
 * rsocket, as a full-duplex socket program would, and every byte is checked.
 *
 *   rs_duplex server ADDR PORT BYTES
 *   rs_duplex client ADDR PORT BYTES
 *
 * Each end sends BYTES of a pattern (seeded by its role) while it receives
 * the other's; exit 0 and "duplex: sent N, received N, all equal" when both
 * threads are done. A 60 s alarm turns a hang into a failure.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rsocket.h>

static int rs;
static uint64_t total;
static int bad;

static uint8_t pattern(uint64_t i, int seed)
{
	uint64_t x = (i + (uint64_t)seed * 0x1000193u) * 0x9E3779B97F4A7C15ull;

	return (uint8_t)(x >> 29);
}

static int my_seed, peer_seed;

static void *sender(void *arg)
{
	static uint8_t buf[50000];
	uint64_t sent = 0;

	(void)arg;
	while (sent < total) {
		size_t len = total - sent < sizeof(buf) ? (size_t)(total - sent) : sizeof(buf);
		ssize_t n;

		for (size_t i = 0; i < len; i++)
			buf[i] = pattern(sent + i, my_seed);
		n = rsend(rs, buf, len, 0);
		if (n <= 0) {
			fprintf(stderr, "rs_duplex: rsend: %s\n", strerror(errno));
			bad = 1;
			return NULL;
		}
		sent += (uint64_t)n;
		/* a partial send leaves the rest for the next round */
		if ((size_t)n < len)
			continue;
	}
	return NULL;
}

static void *receiver(void *arg)
{
	static uint8_t buf[65536];
	uint64_t got = 0;

	(void)arg;
	while (got < total) {
		ssize_t n = rrecv(rs, buf, sizeof(buf), 0);

		if (n <= 0) {
			fprintf(stderr, "rs_duplex: rrecv: %zd (%s) after %llu bytes\n", n,
				n ? strerror(errno) : "end of stream", (unsigned long long)got);
			bad = 1;
			return NULL;
		}
		for (ssize_t i = 0; i < n; i++, got++) {
			if (buf[i] != pattern(got, peer_seed)) {
				fprintf(stderr, "rs_duplex: byte %llu differs\n", (unsigned long long)got);
				bad = 1;
				return NULL;
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST }, *ai;
	pthread_t ts, tr;
	int server;

	if (argc != 5 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: rs_duplex server|client ADDR PORT BYTES\n");
		return 2;
	}
	server = !strcmp(argv[1], "server");
	my_seed = server ? 1 : 2;
	peer_seed = server ? 2 : 1;
	total = strtoull(argv[4], NULL, 0);
	alarm(60);
	if (getaddrinfo(argv[2], argv[3], &hints, &ai))
		return 2;
	if (server) {
		int ls = rsocket(ai->ai_family, SOCK_STREAM, 0);

		if (ls < 0 || rbind(ls, ai->ai_addr, ai->ai_addrlen) || rlisten(ls, 1)) {
			perror("rs_duplex: rbind/rlisten");
			return 1;
		}
		rs = raccept(ls, NULL, NULL);
		rclose(ls);
	} else {
		rs = rsocket(ai->ai_family, SOCK_STREAM, 0);
		if (rs >= 0 && rconnect(rs, ai->ai_addr, ai->ai_addrlen)) {
			perror("rs_duplex: rconnect");
			return 1;
		}
	}
	freeaddrinfo(ai);
	if (rs < 0) {
		perror("rs_duplex: rsocket/raccept");
		return 1;
	}
	pthread_create(&tr, NULL, receiver, NULL);
	pthread_create(&ts, NULL, sender, NULL);
	pthread_join(ts, NULL);
	pthread_join(tr, NULL);
	rclose(rs);
	if (bad)
		return 1;
	printf("duplex: sent %llu, received %llu, all equal\n", (unsigned long long)total,
	       (unsigned long long)total);
	return 0;
}
