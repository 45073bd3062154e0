/* SPDX-License-Identifier: MIT */
/*
 * The page-remap registry behind ibv_reg_mr (src/verbs/mr_remap.c), driven
 * directly: heap, stack, anonymous mmap, .data and .bss buffers can be
 * registered with their contents intact and are really backed by the memfd
 * (a write through the file shows up in the buffer, as a daemon write would);
 * overlapping registrations share pages; deregistration restores private
 * memory that a fork child can use; refusals (shared file mapping, hole,
 * [vdso]) are clean; no file blocks remain at the end. Prints TAP.
 *
 * The registry is internal to the shim (not reachable through libibverbs.so.1),
 * so its source is compiled into this program: the Makefile's generic
 * tests/net rule builds it with no extra rule.
 */
#include "verbs/mr_remap.c"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG 4096

static int ntest, nfail;

static void ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++ntest);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		nfail++;
}

static void fill(void *p, size_t len, unsigned seed)
{
	unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char)(seed + i * 7 + (i >> 12));
}

static bool check(const void *p, size_t len, unsigned seed)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i] != (unsigned char)(seed + i * 7 + (i >> 12)))
			return false;
	return true;
}

/* The mapping that contains addr, from /proc/self/maps: 1 if it is the
 * registration memfd (a shared "/memfd:xrxe-mr" mapping), 0 if not, -1 if
 * addr is not mapped. */
static int backed_by_memfd(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int ret = -1;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) != 3 || a < s || a >= e)
			continue;
		ret = perms[3] == 's' && strstr(line, "/memfd:xrxe-mr") != NULL;
		break;
	}
	if (f)
		fclose(f);
	return ret;
}

/* The file really holds the buffer: what it reads at offset = address equals
 * the buffer, and what is written there appears in the buffer. */
static bool file_view_matches(const void *buf, size_t len)
{
	int fd = xrxe_remap_fd();
	unsigned char *copy = malloc(len);
	bool same;

	if (fd < 0 || !copy || pread(fd, copy, len, (off_t)(uintptr_t)buf) != (ssize_t)len) {
		free(copy);
		return false;
	}
	same = memcmp(copy, buf, len) == 0;
	free(copy);
	return same;
}

static bool daemon_write(void *buf, const char *msg)
{
	int fd = xrxe_remap_fd();
	size_t l = strlen(msg);

	return pwrite(fd, msg, l, (off_t)(uintptr_t)buf) == (ssize_t)l && memcmp(buf, msg, l) == 0;
}

/* A fork child reads the buffer: 0 if it saw the expected contents, 100 if
 * they differed, anything else if it crashed (the signal number, or a
 * sanitizer's exit status: ASan catches SIGSEGV itself). */
static int child_reads(const void *buf, size_t len, unsigned seed)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		/* A sanitizer's SEGV report is expected noise here. */
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 2);
		_exit(check(buf, len, seed) ? 0 : 100);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st);
}

/* Register, verify, let the "daemon" write, deregister, verify again. */
static void roundtrip(const char *what, void *buf, size_t len, unsigned seed)
{
	int ret;

	fill(buf, len, seed);
	ret = xrxe_remap_acquire(buf, len);
	ok(ret == 0, "%s: register (%s)", what, ret ? strerror(-ret) : "0");
	if (ret)
		return;
	ok(check(buf, len, seed), "%s: contents preserved by the move", what);
	ok(backed_by_memfd(buf) == 1 && backed_by_memfd((char *)buf + len - 1) == 1,
	   "%s: first and last page are the memfd mapping", what);
	ok(file_view_matches(buf, len), "%s: the memfd at offset = address holds the buffer", what);
	ok(daemon_write((char *)buf + len / 2, "written through the memfd"),
	   "%s: a write through the memfd appears in the buffer", what);
	ret = xrxe_remap_release(buf, len);
	ok(ret == 0, "%s: deregister", what);
	ok(backed_by_memfd(buf) == 0 && backed_by_memfd((char *)buf + len - 1) == 0,
	   "%s: private memory again after deregistration", what);
	ok(memcmp((char *)buf + len / 2, "written through the memfd", 25) == 0,
	   "%s: the memfd write survives deregistration", what);
	fill(buf, len, seed);
	ok(child_reads(buf, len, seed) == 0, "%s: a fork child reads it after deregistration", what);
}

static char data_buf[5 * PG] = { 1, 2, 3 }; /* .data: file-backed private */
static char bss_buf[5 * PG];                /* .bss: anonymous private */

/* Registers a buffer in its own frame, then calls deeper functions while it is
 * registered: the frames below share pages with the buffer. */
static __attribute__((noinline)) void stack_case(void)
{
	volatile char pad[64];
	char buf[3 * PG + 123];

	pad[0] = 1;
	roundtrip("stack", buf + 7, sizeof(buf) - 7, 41);
	(void)pad[0];
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int capture_stderr(int *saved)
{
	int p[2];

	if (pipe(p) < 0)
		return -1;
	fflush(stderr);
	*saved = dup(2);
	dup2(p[1], 2);
	close(p[1]);
	return p[0];
}

static void restore_stderr(int saved, int rd, char *out, size_t outlen)
{
	ssize_t n;

	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	fcntl(rd, F_SETFL, O_NONBLOCK);
	n = read(rd, out, outlen - 1);
	out[n > 0 ? n : 0] = '\0';
	close(rd);
}

struct thr_arg {
	char *buf;
	int id;
	int failures;
};

static void *thr_main(void *p)
{
	struct thr_arg *a = p;

	for (int i = 0; i < 200; i++) {
		/* Private slice plus a slice shared with the neighbour. */
		char *b = a->buf + (size_t)a->id * 2 * PG;

		if (xrxe_remap_acquire(b, 3 * PG) || backed_by_memfd(b + PG) != 1 ||
		    xrxe_remap_release(b, 3 * PG))
			a->failures++;
	}
	return NULL;
}

int main(void)
{
	char msg[1024];
	struct stat st;
	int ret, fd, saved, rd;

	printf("TAP version 13\n");
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* Heap: small unaligned malloc and a large one (mmap'd by malloc). */
	char *heap = malloc(3 * PG + 100);
	roundtrip("heap (brk)", heap + 3, 3 * PG + 50, 3);
	char *big = malloc(1 << 20);
	roundtrip("heap (malloc mmap)", big, 1 << 20, 5);

	/* Anonymous mmap, including a read-only range. */
	char *anon = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	roundtrip("anonymous mmap", anon + PG, 8 * PG, 9);
	fill(anon + 12 * PG, 2 * PG, 77);
	mprotect(anon + 12 * PG, 2 * PG, PROT_READ);
	ret = xrxe_remap_acquire(anon + 12 * PG, 2 * PG);
	ok(ret == 0 && check(anon + 12 * PG, 2 * PG, 77), "read-only anonymous range registers");
	ok(xrxe_remap_release(anon + 12 * PG, 2 * PG) == 0 && check(anon + 12 * PG, 2 * PG, 77),
	   "read-only anonymous range restores");
	{
		char line[512] = "";
		FILE *f = fopen("/proc/self/maps", "r");
		uintptr_t a = (uintptr_t)(anon + 12 * PG);

		while (f && fgets(line, sizeof(line), f)) {
			unsigned long s, e;

			if (sscanf(line, "%lx-%lx", &s, &e) == 2 && a >= s && a < e)
				break;
		}
		if (f)
			fclose(f);
		ok(strstr(line, " r--p ") != NULL, "its protection is still read-only: %.40s", line);
	}

	/* Static storage. */
	roundtrip(".data", data_buf + 10, sizeof(data_buf) - 20, 11);
	roundtrip(".bss", bss_buf, sizeof(bss_buf), 13);

	/* The stack of this thread, under our own frames. */
	stack_case();

	/* Overlapping registrations share pages. */
	char *ov = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fill(ov, 8 * PG, 21);
	ok(xrxe_remap_acquire(ov, 3 * PG) == 0, "overlap: register pages 0-2");
	ok(xrxe_remap_acquire(ov + 2 * PG + 10, 3 * PG) == 0, "overlap: register pages 2-5");
	ok(xrxe_remap_backed_pages() == 6, "overlap: 6 pages backed, the shared one once (%zu)",
	   xrxe_remap_backed_pages());
	ret = child_reads(ov, PG, 21);
	ok(ret != 0 && ret != 100, "overlap: a fork child has no registered pages (MADV_DONTFORK: it faults)");
	ok(xrxe_remap_release(ov, 3 * PG) == 0, "overlap: deregister pages 0-2");
	ok(backed_by_memfd(ov) == 0 && backed_by_memfd(ov + 2 * PG) == 1 &&
		   backed_by_memfd(ov + 5 * PG) == 1,
	   "overlap: pages 0-1 private, 2-5 still backed");
	ok(file_view_matches(ov + 2 * PG, 4 * PG), "overlap: the shared page still holds its data");
	ok(xrxe_remap_release(ov + 2 * PG + 10, 3 * PG) == 0 && backed_by_memfd(ov + 2 * PG) == 0,
	   "overlap: deregister pages 2-5");
	ok(check(ov, 8 * PG, 21), "overlap: all contents intact");
	ok(xrxe_remap_release(ov, PG) == -EINVAL, "overlap: releasing an unregistered range is EINVAL");

	/* Refusals. */
	char path[] = "/tmp/xrxe-mr-test-XXXXXX";
	fd = mkstemp(path);
	unlink(path);
	ok(fd >= 0 && ftruncate(fd, 4 * PG) == 0, "a 4-page file for a shared mapping");
	char *shared = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	rd = capture_stderr(&saved);
	ret = xrxe_remap_acquire(shared, 4 * PG);
	restore_stderr(saved, rd, msg, sizeof(msg));
	ok(ret == -EINVAL, "file-backed MAP_SHARED is refused with EINVAL (%d)", ret);
	ok(strstr(msg, "shared file mapping") && strchr(msg, '\n') == msg + strlen(msg) - 1,
	   "with one clear line: %.*s", (int)strcspn(msg, "\n"), msg);
	ok(backed_by_memfd(shared) == 0 && xrxe_remap_backed_pages() == 0, "and nothing was moved");

	char *hole = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(hole + PG, PG);
	rd = capture_stderr(&saved);
	ret = xrxe_remap_acquire(hole, 3 * PG);
	restore_stderr(saved, rd, msg, sizeof(msg));
	ok(ret == -EFAULT && backed_by_memfd(hole) == 0, "a range with a hole is EFAULT, nothing moved (%d)", ret);

	void *vdso = NULL;
	{
		char line[512];
		FILE *f = fopen("/proc/self/maps", "r");

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "[vdso]"))
				vdso = (void *)strtoul(line, NULL, 16);
		if (f)
			fclose(f);
	}
	rd = capture_stderr(&saved);
	ret = vdso ? xrxe_remap_acquire(vdso, 16) : -EINVAL;
	restore_stderr(saved, rd, msg, sizeof(msg));
	ok(ret == -EINVAL && (!vdso || strstr(msg, "special")), "[vdso] is refused (%d)", ret);
	ok(xrxe_remap_acquire(anon, 0) == -EINVAL, "zero length is EINVAL");

	/* Threads registering overlapping ranges concurrently. */
	char *tbuf = mmap(NULL, 12 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fill(tbuf, 12 * PG, 31);
	pthread_t th[4];
	struct thr_arg ta[4];
	for (int i = 0; i < 4; i++) {
		ta[i] = (struct thr_arg){ tbuf, i, 0 };
		pthread_create(&th[i], NULL, thr_main, &ta[i]);
	}
	int tf = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		tf += ta[i].failures;
	}
	ok(tf == 0 && xrxe_remap_backed_pages() == 0 && backed_by_memfd(tbuf) == 0 &&
		   check(tbuf, 12 * PG, 31),
	   "4 threads x 200 overlapping register/deregister cycles (%d failures)", tf);

	/* Cost of the move, both ways. */
	size_t mb = 64;
	char *perf = mmap(NULL, mb << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(perf, 0x5a, mb << 20);
	double t0 = now_s();
	ret = xrxe_remap_acquire(perf, mb << 20);
	double t1 = now_s();
	int ret2 = xrxe_remap_release(perf, mb << 20);
	double t2 = now_s();
	ok(ret == 0 && ret2 == 0, "64 MiB: register %.1f ms (%.2f GB/s), deregister %.1f ms", (t1 - t0) * 1e3,
	   (double)(mb << 20) / (t1 - t0) / 1e9, (t2 - t1) * 1e3);
	char *small = malloc(PG);
	t0 = now_s();
	for (int i = 0; i < 1000; i++) {
		xrxe_remap_acquire(small, PG);
		xrxe_remap_release(small, PG);
	}
	t1 = now_s();
	ok(true, "one page: register + deregister %.1f us", (t1 - t0) * 1e3);

	/* Nothing left behind in the file. */
	fd = xrxe_remap_fd();
	memset(&st, 0xff, sizeof(st));
	if (fd >= 0)
		fstat(fd, &st);
	ok(st.st_blocks == 0 && xrxe_remap_backed_pages() == 0,
	   "after every deregistration the memfd holds no blocks (st_blocks=%lld)",
	   (long long)st.st_blocks);

	free(heap);
	free(big);
	free(small);
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}
