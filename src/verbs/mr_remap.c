/* SPDX-License-Identifier: MIT */
/*
 * Registered memory backed by one sparse memfd per process (see mr_remap.h).
 *
 * Moving a page into the memfd: map the file window [va, va+len) somewhere
 * else (tmp), copy the current contents of va into it, then mremap(tmp)
 * MREMAP_FIXED onto va, which atomically replaces the private pages with the
 * shared ones. Moving back is the same with a private anonymous tmp.
 *
 * The copy race. Any store to [va, va+len) between the copy and the mremap is
 * lost. Three sources of such stores, and what is done about each:
 *  - this thread's own stack: registering a stack buffer (or a heap page that
 *    also holds our frames' spill slots) is legal, and an ordinary memcpy()
 *    followed by a call to mremap() pushes a return address in between. The
 *    copy and the syscall are therefore one asm block (rep movsb; syscall)
 *    that touches no memory other than the two ranges.
 *  - signal handlers on this thread: all signals are blocked around the block.
 *  - other threads: not preventable without stopping them. A thread that
 *    writes into a buffer while it is being registered may lose that write.
 *    Real RDMA hardware does not have this hazard, so it is documented in
 *    docs/verbs-shim.md: do not write a buffer concurrently with its
 *    ibv_reg_mr (reads are fine).
 *
 * Cost: one copy of every newly backed page (and one back on release), two
 * mmap-family syscalls per contiguous run, and a /proc/self/maps parse per
 * registration. Untouched anonymous pages get materialised in the memfd.
 *
 * Fork: backed ranges are MADV_DONTFORK (a child sharing them MAP_SHARED would
 * see the parent's writes and vice versa). A child has none of the registered
 * pages mapped; after the last deregistration they are ordinary private
 * memory again and fork normally. The child gets its own memfd.
 */
#include "verbs/mr_remap.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* One run of pages with the same reference count; sorted, non-overlapping. */
struct extent {
	uintptr_t start, end;
	uint32_t count;
};

/* A /proc/self/maps line. */
struct vma {
	uintptr_t start, end;
	int prot;
	bool shared;
	unsigned long long offset;
	unsigned int dev_major, dev_minor;
	unsigned long inode;
	const char *path; /* points into the maps buffer; "" for anonymous */
};

/* A contiguous piece of work inside one VMA. */
struct piece {
	uintptr_t start, end;
	int prot;
	bool adopt; /* already our memfd at the right offset: nothing to move */
};

static struct {
	pthread_mutex_t lock;
	int memfd;
	dev_t dev;
	ino_t ino;
	size_t page;
	bool atfork_done;
	struct extent *ext;
	size_t n, cap;
} R = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.memfd = -1,
};

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "libibverbs (xrxe): %s\n", line);
}

/* --- fork ------------------------------------------------------------------ */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&R.lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&R.lock);
}

/* The child shares the parent's memfd file: registering anything there would
 * write into the parent's pages. It has none of the backed pages mapped
 * (MADV_DONTFORK), so it starts from an empty registry and a new file. */
static void atfork_child(void)
{
	if (R.memfd >= 0)
		close(R.memfd);
	R.memfd = -1;
	free(R.ext);
	R.ext = NULL;
	R.n = R.cap = 0;
	pthread_mutex_init(&R.lock, NULL);
}

/* Called with R.lock held. */
static int ensure_memfd(void)
{
	struct stat st;
	int fd;

	if (R.memfd >= 0)
		return 0;
	R.page = (size_t)sysconf(_SC_PAGESIZE);
	if (!R.atfork_done) {
		if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child))
			return -ENOMEM;
		R.atfork_done = true;
	}
	/* Sealable: the daemon insists the file cannot shrink under its mapping
	 * (abi.h HELLO); we seal it ourselves right away. */
	fd = memfd_create("xrxe-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* Sparse: only registered pages ever get blocks. */
	if (ftruncate(fd, (off_t)XRXE_REMAP_WINDOW) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0 || fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	R.memfd = fd;
	R.dev = st.st_dev;
	R.ino = st.st_ino;
	return 0;
}

int xrxe_remap_fd(void)
{
	int ret;

	pthread_mutex_lock(&R.lock);
	ret = ensure_memfd();
	if (ret == 0)
		ret = R.memfd;
	pthread_mutex_unlock(&R.lock);
	return ret;
}

/* --- /proc/self/maps --------------------------------------------------------- */

/* Read the whole file into *buf (NUL-terminated) and split it into VMAs. */
static int read_maps(char **buf, struct vma **vmas, size_t *nvmas)
{
	size_t len = 0, cap = 64 * 1024, n = 0, vcap = 0;
	struct vma *v = NULL;
	char *b = NULL, *line, *save = NULL;
	int fd, err;

	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r;

		if (!b || cap - len < 4096) {
			char *nb = realloc(b, cap *= 2);

			if (!nb) {
				err = -ENOMEM;
				goto fail;
			}
			b = nb;
		}
		r = read(fd, b + len, cap - len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto fail;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	fd = -1;
	b[len] = '\0';

	for (line = strtok_r(b, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char perms[8];
		unsigned long start, end;
		int pos = 0;

		if (n == vcap) {
			struct vma *nv = realloc(v, (vcap = vcap ? vcap * 2 : 256) * sizeof(*v));

			if (!nv) {
				err = -ENOMEM;
				goto fail;
			}
			v = nv;
		}
		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %lu %n", &start, &end, perms,
			   &v[n].offset, &v[n].dev_major, &v[n].dev_minor, &v[n].inode,
			   &pos) < 7)
			continue;
		v[n].start = start;
		v[n].end = end;
		v[n].prot = (perms[0] == 'r' ? PROT_READ : 0) |
			    (perms[1] == 'w' ? PROT_WRITE : 0) |
			    (perms[2] == 'x' ? PROT_EXEC : 0);
		v[n].shared = perms[3] == 's';
		v[n].path = pos > 0 ? line + pos : "";
		n++;
	}
	*buf = b;
	*vmas = v;
	*nvmas = n;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(b);
	free(v);
	return err;
}

static bool vma_is_our_memfd(const struct vma *v)
{
	return v->shared && v->inode == (unsigned long)R.ino &&
	       v->dev_major == major(R.dev) && v->dev_minor == minor(R.dev) &&
	       v->offset == v->start;
}

/* hugetlb pages cannot be split into 4 KiB pieces of a memfd window. */
static bool vma_is_hugetlb(const struct vma *v)
{
	struct statfs sfs;
	char path[4096], link[64];
	bool huge;
	size_t l;

	if (strncmp(v->path, "/anon_hugepage", 14) == 0)
		return true;
	if (v->path[0] != '/')
		return false;
	/* A deleted file or a memfd has no usable path: ask the mapping itself
	 * (needs CAP_SYS_ADMIN; without it, assume a regular page size). */
	if (strstr(v->path, " (deleted)") || strncmp(v->path, "/memfd:", 7) == 0) {
		int fd;

		snprintf(link, sizeof(link), "/proc/self/map_files/%" PRIxPTR "-%" PRIxPTR,
			 v->start, v->end);
		fd = open(link, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return false;
		huge = fstatfs(fd, &sfs) == 0 && sfs.f_type == HUGETLBFS_MAGIC;
		close(fd);
		return huge;
	}
	l = strlen(v->path);
	if (l >= sizeof(path))
		return false;
	memcpy(path, v->path, l + 1);
	return statfs(path, &sfs) == 0 && sfs.f_type == HUGETLBFS_MAGIC;
}

/* NULL if the pages of v may be moved into the memfd, else why not. */
static const char *vma_refusal(const struct vma *v)
{
	if (vma_is_our_memfd(v))
		return NULL;
	if (v->shared)
		return v->path[0] ? "a shared file mapping" : "a shared anonymous mapping";
	if (v->path[0] == '[' && strcmp(v->path, "[heap]") != 0 &&
	    strcmp(v->path, "[stack]") != 0 && strncmp(v->path, "[anon:", 6) != 0)
		return "a special kernel mapping";
	if (vma_is_hugetlb(v))
		return "a hugetlb mapping";
	if (v->prot & PROT_EXEC)
		return "an executable mapping";
	if (!(v->prot & PROT_READ))
		return "an unreadable mapping";
	return NULL;
}

/* --- the move ---------------------------------------------------------------- */

/*
 * Copy len bytes from target into tmp, then mremap(tmp, len) onto target, with
 * no store to memory in between (see the copy race above). Returns the raw
 * syscall result: target, or -errno.
 */
static long copy_and_move(void *tmp, void *target, size_t len)
{
#if defined(__x86_64__)
	long ret;
	void *dst = tmp;
	const void *src = target;
	size_t cnt = len;
	register long r10 __asm__("r10") = MREMAP_MAYMOVE | MREMAP_FIXED;
	register long r8 __asm__("r8") = (long)target;
	register long r9 __asm__("r9") = (long)tmp;

	/* rdi/rsi/rcx drive rep movsb; then mremap(rdi=tmp, rsi=len, rdx=len,
	 * r10=flags, r8=target). The kernel clobbers rcx and r11 only. */
	__asm__ volatile("rep movsb\n\t"
			 "mov %%r9, %%rdi\n\t"
			 "mov %%rdx, %%rsi\n\t"
			 "syscall"
			 : "=a"(ret), "+D"(dst), "+S"(src), "+c"(cnt)
			 : "0"((long)SYS_mremap), "d"(len), "r"(r10), "r"(r8), "r"(r9)
			 : "r11", "memory", "cc");
	return ret;
#else
	/* Portable fallback: a store by this thread to the range between the
	 * memcpy and the syscall (e.g. a stack buffer that shares a page with
	 * our frames) would be lost. */
	long ret;

	memcpy(tmp, target, len);
	ret = syscall(SYS_mremap, tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, target);
	return ret < 0 ? -errno : ret;
#endif
}

static int move_blocking_signals(void *tmp, void *target, size_t len)
{
	sigset_t all, old;
	long ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = copy_and_move(tmp, target, len);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0 && ret > -4096)
		return (int)ret;
	return 0;
}

static void punch(uintptr_t start, uintptr_t end)
{
	if (fallocate(R.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)start,
		      (off_t)(end - start)) < 0)
		report("cannot release memfd blocks [%#" PRIxPTR ", %#" PRIxPTR "): %s", start, end,
		       strerror(errno));
}

/* Private memory -> memfd window at the same address. */
static int move_in(const struct piece *p)
{
	size_t len = p->end - p->start;
	void *tmp;
	int ret;

	if (!p->adopt) {
		tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, R.memfd, (off_t)p->start);
		if (tmp == MAP_FAILED)
			return -errno;
		ret = move_blocking_signals(tmp, (void *)p->start, len);
		if (ret < 0) {
			munmap(tmp, len);
			punch(p->start, p->end);
			return ret;
		}
		if (p->prot != (PROT_READ | PROT_WRITE))
			mprotect((void *)p->start, len, p->prot);
	}
	/* The shared pages must not be shared with a fork child (see above). */
	madvise((void *)p->start, len, MADV_DONTFORK);
	return 0;
}

/* memfd window -> private anonymous memory with the same contents. */
static int move_out(uintptr_t start, uintptr_t end, int prot)
{
	size_t len = end - start;
	void *tmp;
	int ret;

	tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tmp == MAP_FAILED)
		return -errno;
	ret = move_blocking_signals(tmp, (void *)start, len);
	if (ret < 0) {
		munmap(tmp, len);
		return ret;
	}
	if (prot != (PROT_READ | PROT_WRITE))
		mprotect((void *)start, len, prot);
	return 0;
}

/* --- the extent list ----------------------------------------------------------- */

static int ext_push(struct extent **out, size_t *n, size_t *cap, uintptr_t s, uintptr_t e,
		    uint32_t count)
{
	if (s >= e || count == 0)
		return 0;
	/* Merge with the previous extent when it is adjacent and equal. */
	if (*n && (*out)[*n - 1].end == s && (*out)[*n - 1].count == count) {
		(*out)[*n - 1].end = e;
		return 0;
	}
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct extent *x = realloc(*out, ncap * sizeof(**out));

		if (!x)
			return -ENOMEM;
		*out = x;
		*cap = ncap;
	}
	(*out)[(*n)++] = (struct extent){ s, e, count };
	return 0;
}

/*
 * Add delta (+1 or -1) to the count of every page of [s, e); pages that were
 * not tracked start at 0. Builds a new list so a failure leaves R unchanged.
 */
static int ext_apply(uintptr_t s, uintptr_t e, int delta)
{
	struct extent *out = NULL;
	size_t n = 0, cap = 0, i;
	uintptr_t pos = s;
	int ret = 0;

	for (i = 0; i < R.n && !ret; i++) {
		const struct extent *x = &R.ext[i];

		if (x->end <= s) {
			ret = ext_push(&out, &n, &cap, x->start, x->end, x->count);
			continue;
		}
		if (x->start >= e) {
			if (pos < e)
				ret = ext_push(&out, &n, &cap, pos, e, (uint32_t)(0 + delta));
			pos = e;
			if (!ret)
				ret = ext_push(&out, &n, &cap, x->start, x->end, x->count);
			continue;
		}
		if (x->start < s)
			ret = ext_push(&out, &n, &cap, x->start, s, x->count);
		if (!ret && pos < x->start)
			ret = ext_push(&out, &n, &cap, pos, x->start, (uint32_t)(0 + delta));
		if (!ret) {
			uintptr_t os = x->start > s ? x->start : s;
			uintptr_t oe = x->end < e ? x->end : e;

			ret = ext_push(&out, &n, &cap, os, oe, (uint32_t)((int64_t)x->count + delta));
			pos = oe;
		}
		if (!ret && x->end > e)
			ret = ext_push(&out, &n, &cap, e, x->end, x->count);
	}
	if (!ret && pos < e)
		ret = ext_push(&out, &n, &cap, pos, e, (uint32_t)(0 + delta));
	if (ret) {
		free(out);
		return ret;
	}
	free(R.ext);
	R.ext = out;
	R.n = n;
	R.cap = cap;
	return 0;
}

/* --- acquire / release -------------------------------------------------------- */

static int piece_push(struct piece **p, size_t *n, size_t *cap, struct piece pc)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		struct piece *x = realloc(*p, ncap * sizeof(**p));

		if (!x)
			return -ENOMEM;
		*p = x;
		*cap = ncap;
	}
	(*p)[(*n)++] = pc;
	return 0;
}

/* Split the untracked gap [gs, ge) along VMA boundaries, refusing anything
 * that cannot be moved. */
static int plan_gap(uintptr_t gs, uintptr_t ge, const struct vma *v, size_t nv,
		    struct piece **p, size_t *np, size_t *cap, uintptr_t addr, size_t length)
{
	uintptr_t pos = gs;
	size_t i;
	int ret;

	for (i = 0; i < nv && pos < ge; i++) {
		const char *why;
		uintptr_t e;

		if (v[i].end <= pos)
			continue;
		if (v[i].start > pos)
			break; /* hole */
		why = vma_refusal(&v[i]);
		if (why) {
			report("ibv_reg_mr(%p, %zu): %#" PRIxPTR "-%#" PRIxPTR " is %s%s%s; "
			       "only private memory can be registered",
			       (void *)addr, length, v[i].start, v[i].end, why,
			       v[i].path[0] ? " " : "", v[i].path);
			return strstr(why, "unreadable") ? -EFAULT : -EINVAL;
		}
		e = v[i].end < ge ? v[i].end : ge;
		ret = piece_push(p, np, cap,
				 (struct piece){ pos, e, v[i].prot, vma_is_our_memfd(&v[i]) });
		if (ret)
			return ret;
		pos = e;
	}
	if (pos < ge) {
		report("ibv_reg_mr(%p, %zu): %#" PRIxPTR " is not mapped", (void *)addr, length, pos);
		return -EFAULT;
	}
	return 0;
}

static int page_range(void *addr, size_t length, uintptr_t *s, uintptr_t *e)
{
	uintptr_t a = (uintptr_t)addr;

	if (length == 0 || a + length < a)
		return -EINVAL;
	*s = a & ~(uintptr_t)(R.page - 1);
	*e = (a + length + R.page - 1) & ~(uintptr_t)(R.page - 1);
	if (*e > XRXE_REMAP_WINDOW || *e < *s) {
		report("ibv_reg_mr(%p, %zu): beyond the registrable address window", addr, length);
		return -EINVAL;
	}
	return 0;
}

int xrxe_remap_acquire(void *addr, size_t length)
{
	struct piece *p = NULL;
	size_t np = 0, pcap = 0, nv = 0, i, done = 0;
	struct vma *v = NULL;
	char *maps = NULL;
	uintptr_t s, e, pos;
	int ret;

	pthread_mutex_lock(&R.lock);
	ret = ensure_memfd();
	if (ret)
		goto out;
	ret = page_range(addr, length, &s, &e);
	if (ret)
		goto out;

	/* Plan every untracked run first, so a refusal moves nothing. */
	pos = s;
	for (i = 0; i <= R.n && pos < e; i++) {
		uintptr_t next = i < R.n ? R.ext[i].start : e;

		if (i < R.n && R.ext[i].end <= pos)
			continue;
		if (next > e)
			next = e;
		if (pos < next) {
			if (!maps) {
				ret = read_maps(&maps, &v, &nv);
				if (ret)
					goto out;
			}
			ret = plan_gap(pos, next, v, nv, &p, &np, &pcap, (uintptr_t)addr, length);
			if (ret)
				goto out;
		}
		if (i < R.n)
			pos = R.ext[i].end > pos ? R.ext[i].end : pos;
	}

	for (done = 0; done < np; done++) {
		ret = move_in(&p[done]);
		if (ret) {
			report("ibv_reg_mr(%p, %zu): cannot back %#" PRIxPTR "-%#" PRIxPTR
			       " with shared memory: %s",
			       addr, length, p[done].start, p[done].end, strerror(-ret));
			goto rollback;
		}
	}
	ret = ext_apply(s, e, +1);
	if (ret == 0)
		goto out;
rollback:
	while (done--) {
		if (!p[done].adopt && move_out(p[done].start, p[done].end, p[done].prot) == 0)
			punch(p[done].start, p[done].end);
	}
out:
	pthread_mutex_unlock(&R.lock);
	free(p);
	free(v);
	free(maps);
	return ret;
}

/* Move [s, e) (count reached 0) back to private memory and free its blocks.
 * Only the parts that still are our memfd mapping are restored: the
 * application may have unmapped or replaced the memory in the meantime. */
static void retire(uintptr_t s, uintptr_t e, const struct vma *v, size_t nv)
{
	size_t i;

	for (i = 0; i < nv; i++) {
		uintptr_t a = v[i].start > s ? v[i].start : s;
		uintptr_t b = v[i].end < e ? v[i].end : e;
		int ret;

		if (a >= b || !vma_is_our_memfd(&v[i]))
			continue;
		ret = move_out(a, b, v[i].prot);
		if (ret) {
			/* Keep the blocks: punching them would zero live memory. */
			report("ibv_dereg_mr: cannot restore %#" PRIxPTR "-%#" PRIxPTR
			       " to private memory: %s (left shared)",
			       a, b, strerror(-ret));
			return;
		}
	}
	punch(s, e);
}

int xrxe_remap_release(void *addr, size_t length)
{
	struct vma *v = NULL;
	char *maps = NULL;
	size_t nv = 0, i;
	uintptr_t s, e, pos;
	int ret;

	pthread_mutex_lock(&R.lock);
	if (R.memfd < 0) {
		ret = -EINVAL;
		goto out;
	}
	ret = page_range(addr, length, &s, &e);
	if (ret)
		goto out;
	/* Every page must be tracked. */
	pos = s;
	for (i = 0; i < R.n && pos < e; i++) {
		if (R.ext[i].end <= pos)
			continue;
		if (R.ext[i].start > pos)
			break;
		pos = R.ext[i].end;
	}
	if (pos < e) {
		ret = -EINVAL;
		goto out;
	}
	for (i = 0; i < R.n; i++) {
		const struct extent *x = &R.ext[i];
		uintptr_t a = x->start > s ? x->start : s;
		uintptr_t b = x->end < e ? x->end : e;

		if (a >= b || x->count != 1)
			continue;
		if (!maps) {
			ret = read_maps(&maps, &v, &nv);
			if (ret)
				goto out;
		}
		retire(a, b, v, nv);
	}
	ret = ext_apply(s, e, -1);
out:
	pthread_mutex_unlock(&R.lock);
	free(v);
	free(maps);
	return ret;
}

size_t xrxe_remap_backed_pages(void)
{
	size_t pages = 0, i;

	pthread_mutex_lock(&R.lock);
	for (i = 0; i < R.n; i++)
		pages += (R.ext[i].end - R.ext[i].start) / R.page;
	pthread_mutex_unlock(&R.lock);
	return pages;
}
