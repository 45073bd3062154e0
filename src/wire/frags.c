// SPDX-License-Identifier: MIT
/*
 * Byte ranges across the fragments of a frame (AF_XDP multi-buffer): the
 * payload, the pad and the ICRC trailer may straddle fragment boundaries, even
 * the 4 trailer bytes themselves.
 */
#include <errno.h>
#include <string.h>

#include "wire/wire_internal.h"

/* Walk [off, off+len) over the fragments; op copies one contiguous piece.
 * Checks the whole range first so a failing call touches nothing. */
enum frag_op { FRAG_READ, FRAG_WRITE, FRAG_ZERO };

static int frags_walk(const struct xrxe_frag *frags, unsigned nfrags, size_t off, uint8_t *buf,
		      size_t len, enum frag_op op)
{
	size_t total = 0;
	unsigned i;

	for (i = 0; i < nfrags; i++)
		total += frags[i].len;
	if (off > total || len > total - off)
		return -EINVAL;

	for (i = 0; i < nfrags && len; i++) {
		size_t flen = frags[i].len, n;

		if (off >= flen) {
			off -= flen;
			continue;
		}
		n = flen - off < len ? flen - off : len;
		switch (op) {
		case FRAG_READ:
			memcpy(buf, frags[i].data + off, n);
			break;
		case FRAG_WRITE:
			memcpy(frags[i].data + off, buf, n);
			break;
		case FRAG_ZERO:
			memset(frags[i].data + off, 0, n);
			break;
		}
		if (buf)
			buf += n;
		len -= n;
		off = 0;
	}
	return 0;
}

int xrxe_frags_read(const struct xrxe_frag *frags, unsigned nfrags, size_t off, void *dst,
		    size_t len)
{
	return frags_walk(frags, nfrags, off, dst, len, FRAG_READ);
}

int xrxe_frags_write(const struct xrxe_frag *frags, unsigned nfrags, size_t off, const void *src,
		     size_t len)
{
	/* The walker does not write through buf for FRAG_WRITE: dropping const is safe. */
	return frags_walk(frags, nfrags, off, (uint8_t *)(uintptr_t)src, len, FRAG_WRITE);
}

int xrxe_frags_zero(const struct xrxe_frag *frags, unsigned nfrags, size_t off, size_t len)
{
	return frags_walk(frags, nfrags, off, NULL, len, FRAG_ZERO);
}
