// SPDX-License-Identifier: MIT
/*
 * wake_cost: what one cross-CPU wake-up costs on this machine, the floor under
 * every hop of a ping-pong whose receiving daemon sleeps (docs/performance.md,
 * "Where a round trip of ib_write_lat goes").
 *
 * A waker pinned to CPU 0 writes an eventfd; a reader pinned to CPU 1 (nice
 * -10 like the bench's daemons, or SCHED_FIFO with --rt) blocks in read() and
 * stamps CLOCK_MONOTONIC when it returns. With --spin a nice-0 process spins
 * on CPU 1 meanwhile, as perftest does on its buffer, so the wake-up has to
 * interrupt a busy CPU. Prints the percentiles of (reader's stamp - waker's
 * stamp) in microseconds, one "key value" per line.
 *
 *   wake_cost [--count N] [--spin] [--rt]      (root for nice -10 / --rt)
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* shared between the processes; each field written by one side only */
struct shared {
	volatile uint64_t woken_at;  /* reader: when read() returned */
	volatile uint64_t seq;       /* reader: wake-ups seen */
	volatile uint64_t spin_work; /* spinner: anything, to stay busy */
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "wake_cost: cpu %d: %s\n", cpu, strerror(errno));
		exit(2);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void reader(struct shared *sh, int efd, long count, int rt)
{
	uint64_t v;

	pin(1);
	if (setpriority(PRIO_PROCESS, 0, -10) < 0)
		fprintf(stderr, "wake_cost: nice -10: %s\n", strerror(errno));
	if (rt) {
		struct sched_param sp = { .sched_priority = 10 };

		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			fprintf(stderr, "wake_cost: SCHED_FIFO: %s\n", strerror(errno));
	}
	for (long i = 0; i < count; i++) {
		if (read(efd, &v, sizeof(v)) != sizeof(v))
			_exit(1);
		sh->woken_at = now_ns();
		__atomic_store_n(&sh->seq, (uint64_t)i + 1, __ATOMIC_RELEASE);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	long count = 2000;
	int spin = 0, rt = 0, efd, status;
	pid_t spinner = 0, rd;
	struct shared *sh;
	uint64_t *lat;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--spin"))
			spin = 1;
		else if (!strcmp(argv[i], "--rt"))
			rt = 1;
		else {
			fprintf(stderr, "usage: wake_cost [--count N] [--spin] [--rt]\n");
			return 2;
		}
	}
	if (count < 10 || count > 10000000) {
		fprintf(stderr, "wake_cost: --count 10..10000000\n");
		return 2;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	lat = calloc((size_t)count, sizeof(*lat));
	efd = eventfd(0, EFD_CLOEXEC);
	if (sh == MAP_FAILED || !lat || efd < 0) {
		fprintf(stderr, "wake_cost: setup: %s\n", strerror(errno));
		return 2;
	}
	if (spin) {
		spinner = fork();
		if (spinner == 0) {
			pin(1);
			for (;;)
				sh->spin_work++;
		}
	}
	rd = fork();
	if (rd == 0)
		reader(sh, efd, count, rt);
	pin(0);
	for (long i = 0; i < count; i++) {
		uint64_t one = 1, t0, deadline;

		usleep(200); /* let the reader block again */
		t0 = now_ns();
		if (write(efd, &one, sizeof(one)) != sizeof(one))
			break;
		deadline = t0 + 10000000000ull; /* 10 s: a loaded machine */
		while (__atomic_load_n(&sh->seq, __ATOMIC_ACQUIRE) != (uint64_t)i + 1)
			if (now_ns() > deadline) /* reader gone */
				goto out;
		lat[i] = sh->woken_at - t0;
	}
out:
	if (spinner > 0) {
		kill(spinner, SIGKILL);
		waitpid(spinner, NULL, 0);
	}
	kill(rd, SIGKILL);
	waitpid(rd, &status, 0);
	if (sh->seq != (uint64_t)count) {
		fprintf(stderr, "wake_cost: %llu of %ld wake-ups seen\n", (unsigned long long)sh->seq,
			count);
		return 1;
	}
	qsort(lat, (size_t)count, sizeof(*lat), cmp_u64);
	printf("wake_count %ld\n", count);
	printf("wake_p10_us %.1f\n", lat[count / 10] / 1e3);
	printf("wake_p50_us %.1f\n", lat[count / 2] / 1e3);
	printf("wake_p90_us %.1f\n", lat[count * 9 / 10] / 1e3);
	printf("wake_p99_us %.1f\n", lat[count * 99 / 100] / 1e3);
	return 0;
}
