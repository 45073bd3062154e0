/* SPDX-License-Identifier: MIT */
/*
 * Registered-memory remapping (include/xrxe/abi.h, REG_MR): the pages of every
 * memory region are moved into ONE sparse memfd per process, at file offset =
 * virtual address, so the daemon can map the same file window and reach the
 * application's buffers without a bounce copy. Pages are refcounted: two
 * overlapping regions share them, and a page returns to private anonymous
 * memory (same contents, file hole punched) when the last region covering it
 * goes away.
 *
 * This module depends only on libc so that tests/net/mr_remap_test.c can
 * compile it on its own. All functions are thread-safe.
 */
#ifndef XRXE_VERBS_MR_REMAP_H
#define XRXE_VERBS_MR_REMAP_H

#include <stddef.h>

/* File offsets are virtual addresses: the memfd is this long (x86-64 user
 * space with 4-level paging ends at 1 << 47). */
#define XRXE_REMAP_WINDOW (1ULL << 47)

/* The process's memfd (created on first use), or -errno. Valid until exit;
 * a fork child gets a fresh one on its first use. */
int xrxe_remap_fd(void);

/* Back every page of [addr, addr + length) with the memfd. 0 or -errno:
 * -EINVAL for a zero length, an address beyond the window or a mapping that
 * cannot be moved (shared, hugetlb, special, executable), -EFAULT for a hole
 * or unreadable memory, -ENOMEM. Refusals print one line on stderr. */
int xrxe_remap_acquire(void *addr, size_t length);

/* Drop one reference on every page of [addr, addr + length); pages whose last
 * reference goes away become private anonymous memory again with the same
 * contents, and their file blocks are released. 0 or -errno (-EINVAL if the
 * range was not acquired). */
int xrxe_remap_release(void *addr, size_t length);

/* Pages currently backed by the memfd (for tests and statistics). */
size_t xrxe_remap_backed_pages(void);

#endif /* XRXE_VERBS_MR_REMAP_H */
