/* SPDX-License-Identifier: MIT */
/*
 * Datagram rsockets (SOCK_DGRAM over UD QPs): not implemented yet —
 * rsocket(…, SOCK_DGRAM, …) fails with ENOTSUP, so nothing below is reached
 * (docs/rsockets.md, "Not implemented").
 */
#include "rdmacm/rsocket_int.h"

int rs_dgram_socket(int domain)
{
	(void)domain;
	errno = ENOTSUP;
	return -1;
}

/* No datagram rsocket can exist (rs_dgram_socket fails); the dispatch
 * points of the stream code answer as for a bad descriptor type. */
ssize_t rs_dgram_sendto(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags,
			const struct sockaddr *to, socklen_t tolen);
ssize_t rs_dgram_sendto(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags,
			const struct sockaddr *to, socklen_t tolen)
{
	(void)rs, (void)iov, (void)iovcnt, (void)flags, (void)to, (void)tolen;
	errno = ENOTSUP;
	return -1;
}

ssize_t rs_dgram_recvfrom(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags,
			  struct sockaddr *from, socklen_t *fromlen);
ssize_t rs_dgram_recvfrom(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags,
			  struct sockaddr *from, socklen_t *fromlen)
{
	(void)rs, (void)iov, (void)iovcnt, (void)flags, (void)from, (void)fromlen;
	errno = ENOTSUP;
	return -1;
}

void rs_dgram_close(struct rsocket *rs);
void rs_dgram_close(struct rsocket *rs)
{
	(void)rs;
}

int rs_dgram_setsockopt(struct rsocket *rs, int level, int optname, const void *optval,
			socklen_t optlen);
int rs_dgram_setsockopt(struct rsocket *rs, int level, int optname, const void *optval,
			socklen_t optlen)
{
	(void)rs, (void)level, (void)optname, (void)optval, (void)optlen;
	errno = ENOTSUP;
	return -1;
}

int rs_dgram_getsockopt(struct rsocket *rs, int level, int optname, void *optval,
			socklen_t *optlen);
int rs_dgram_getsockopt(struct rsocket *rs, int level, int optname, void *optval,
			socklen_t *optlen)
{
	(void)rs, (void)level, (void)optname, (void)optval, (void)optlen;
	errno = ENOTSUP;
	return -1;
}

short rs_dgram_poll_events(struct rsocket *rs, short events);
short rs_dgram_poll_events(struct rsocket *rs, short events)
{
	(void)rs, (void)events;
	return POLLNVAL;
}

int rs_dgram_wait_fds(struct rsocket *rs, struct pollfd *fds);
int rs_dgram_wait_fds(struct rsocket *rs, struct pollfd *fds)
{
	(void)rs, (void)fds;
	return 0;
}
