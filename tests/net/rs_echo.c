// SPDX-License-Identifier: MIT
/*
 * An ordinary TCP echo, for running unmodified under rdma-core's
 * librspreload (LD_PRELOAD): tests/net/rsockets.sh. Nothing here knows about
 * rsockets; the preload library turns its socket calls into r* calls.
 *
 *   rs_echo server ADDR PORT          accept one connection, echo until EOF
 *   rs_echo fork-server ADDR PORT     accept one connection in a child process
 *                                     after fork() (librspreload's fork
 *                                     support, RDMAV_FORK_SAFE=1: the child
 *                                     turns the TCP connection into an
 *                                     rsocket on its first read); blocking
 *                                     reads, no poll (rsocket(7)'s limit)
 *   rs_echo client ADDR PORT BYTES    send BYTES of a pseudo-random pattern,
 *                                     non-blocking, with poll() for both
 *                                     directions; check every byte echoed;
 *                                     shutdown(SHUT_WR); expect EOF. Its
 *                                     poll() also watches a pipe (an
 *                                     ordinary descriptor) written halfway:
 *                                     rpoll must report both kinds
 *
 * Exit 0 and "echoed N bytes, all equal" on success.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

static uint8_t pattern(uint64_t i)
{
	uint64_t x = i * 0x9E3779B97F4A7C15ull;

	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17));
}

static int fail(const char *what)
{
	fprintf(stderr, "rs_echo: %s: %s\n", what, strerror(errno));
	return 1;
}

static int sock_for(const char *addr, const char *port, int passive)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST }, *ai;
	int s, one = 1;

	if (getaddrinfo(addr, port, &hints, &ai))
		return -1;
	s = socket(ai->ai_family, SOCK_STREAM, 0);
	if (s >= 0 && passive) {
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, ai->ai_addr, ai->ai_addrlen) || listen(s, 1)) {
			close(s);
			s = -1;
		}
	} else if (s >= 0 && connect(s, ai->ai_addr, ai->ai_addrlen)) {
		close(s);
		s = -1;
	}
	freeaddrinfo(ai);
	return s;
}

static int server(const char *addr, const char *port)
{
	static char buf[65536];
	int ls = sock_for(addr, port, 1), s;
	ssize_t n;

	if (ls < 0)
		return fail("listen");
	s = accept(ls, NULL, NULL);
	if (s < 0)
		return fail("accept");
	for (;;) {
		struct pollfd p = { .fd = s, .events = POLLIN };

		if (poll(&p, 1, 30000) <= 0)
			return fail("poll");
		n = read(s, buf, sizeof(buf));
		if (n < 0)
			return fail("read");
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(s, buf + off, (size_t)(n - off));

			if (w <= 0)
				return fail("write");
			off += w;
		}
	}
	close(s);
	close(ls);
	return 0;
}

static int fork_server(const char *addr, const char *port)
{
	static char buf[65536];
	int ls = sock_for(addr, port, 1), s, st;
	pid_t pid;
	ssize_t n;

	if (ls < 0)
		return fail("listen");
	s = accept(ls, NULL, NULL);
	if (s < 0)
		return fail("accept");
	pid = fork();
	if (pid < 0)
		return fail("fork");
	if (pid) {
		close(s);
		if (waitpid(pid, &st, 0) != pid)
			return fail("waitpid");
		close(ls);
		printf("child exited with %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	close(ls);
	while ((n = read(s, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(s, buf + off, (size_t)(n - off));

			if (w <= 0)
				_exit(fail("write"));
			off += w;
		}
	}
	if (n < 0)
		_exit(fail("read"));
	close(s);
	_exit(0);
}

static int client(const char *addr, const char *port, uint64_t total)
{
	static uint8_t buf[65536];
	uint64_t sent = 0, got = 0;
	int s = sock_for(addr, port, 0);
	int shut = 0, pipefd[2], pipe_seen = 0;

	if (s < 0)
		return fail("connect");
	if (fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK))
		return fail("fcntl");
	if (pipe(pipefd))
		return fail("pipe");
	while (got < total || !shut || !pipe_seen) {
		struct pollfd pp[2] = { { .fd = s, .events = POLLIN },
					{ .fd = pipefd[0], .events = POLLIN } };
		struct pollfd *p = &pp[0];
		ssize_t n;

		if (sent < total)
			p->events |= POLLOUT;
		if (poll(pp, 2, 30000) <= 0)
			return fail("poll (nothing for 30 s)");
		if (pp[1].revents & POLLIN) {
			char c;

			if (read(pipefd[0], &c, 1) != 1)
				return fail("read (pipe)");
			pipe_seen = 1;
		}
		if ((p->revents & POLLOUT) && sent < total) {
			size_t len = total - sent < 40000 ? (size_t)(total - sent) : 40000;

			for (size_t i = 0; i < len; i++)
				buf[i] = pattern(sent + i);
			n = write(s, buf, len);
			if (n < 0 && errno != EAGAIN)
				return fail("write");
			if (n > 0 && sent < total / 2 && sent + (uint64_t)n >= total / 2 &&
			    write(pipefd[1], "x", 1) != 1)
				return fail("write (pipe)");
			if (n > 0)
				sent += (uint64_t)n;
		}
		if (sent == total && !shut) {
			if (shutdown(s, SHUT_WR))
				return fail("shutdown");
			shut = 1;
		}
		if (p->revents & (POLLIN | POLLHUP)) {
			n = read(s, buf, sizeof(buf));
			if (n < 0 && errno != EAGAIN)
				return fail("read");
			if (n == 0 && got < total) {
				fprintf(stderr, "rs_echo: EOF after %llu of %llu bytes\n",
					(unsigned long long)got, (unsigned long long)total);
				return 1;
			}
			for (ssize_t i = 0; i < n; i++, got++) {
				if (buf[i] != pattern(got)) {
					fprintf(stderr, "rs_echo: byte %llu differs\n",
						(unsigned long long)got);
					return 1;
				}
			}
		}
	}
	close(s);
	printf("echoed %llu bytes, all equal; the pipe polled beside the socket was reported\n",
	       (unsigned long long)total);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "fork-server"))
		return fork_server(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], strtoull(argv[4], NULL, 0));
	fprintf(stderr, "usage: rs_echo server|fork-server ADDR PORT | client ADDR PORT BYTES\n");
	return 2;
}
