// SPDX-License-Identifier: MIT
/*
 * An MPI job that checks every byte it moves: a ping-pong between rank 0 and
 * rank size/2 (in different namespaces when ranks are placed by host) at
 * every power of two from 1 B to 4 MiB, an MPI_Allreduce and an
 * MPI_Alltoall over all ranks. Each message's bytes depend on its size, its
 * iteration and its sender, so a stale, shifted or misdelivered buffer is
 * caught. Prints one TAP-like line per part from rank 0; exit status 0 only
 * if every rank saw every byte right.
 *
 *   mpirun -np N mpi_check [--iters N]     (the checks; N round trips per
 *                                           size, default 2)
 *   mpirun -np 2 mpi_check --bench SIZE N  (rank 0: SIZE-byte ping-pong,
 *                                           N round trips, MB/s and us)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MSG (4u << 20)

static uint8_t pattern(size_t size, int iter, int sender, size_t i)
{
	return (uint8_t)(i * 131u + size * 7u + (unsigned)iter * 17u + (unsigned)sender * 101u + 1u);
}

static void fill(uint8_t *b, size_t size, int iter, int sender)
{
	for (size_t i = 0; i < size; i++)
		b[i] = pattern(size, iter, sender, i);
}

/* index of the first wrong byte, or -1 */
static long check(const uint8_t *b, size_t size, int iter, int sender)
{
	for (size_t i = 0; i < size; i++)
		if (b[i] != pattern(size, iter, sender, i))
			return (long)i;
	return -1;
}

/* Rank 0 and its peer exchange every size ITERS times, each checking what it
 * receives; the others wait. Returns the number of bad messages seen here. */
static int pingpong(int rank, int peer, uint8_t *sbuf, uint8_t *rbuf, int iters)
{
	int bad = 0;

	for (size_t size = 1; size <= MAX_MSG; size <<= 1) {
		for (int it = 0; it < iters; it++) {
			long at;

			if (rank == 0) {
				fill(sbuf, size, it, rank);
				MPI_Send(sbuf, (int)size, MPI_BYTE, peer, it, MPI_COMM_WORLD);
				memset(rbuf, 0, size);
				MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, it, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				at = check(rbuf, size, it, peer);
			} else {
				memset(rbuf, 0, size);
				MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, it, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				at = check(rbuf, size, it, 0);
				fill(sbuf, size, it, rank);
				MPI_Send(sbuf, (int)size, MPI_BYTE, 0, it, MPI_COMM_WORLD);
			}
			if (at >= 0) {
				if (bad++ < 5)
					fprintf(stderr, "rank %d: ping-pong %zu B iteration %d: byte %ld wrong\n",
						rank, size, it, at);
			}
		}
	}
	return bad;
}

/* Every rank contributes rank-dependent values; the sum is known. */
static int allreduce(int rank, int size)
{
	const int n = 1 << 16; /* 512 KiB of int64 */
	int64_t *in = malloc(n * sizeof(*in)), *out = malloc(n * sizeof(*out));
	int bad = 0;

	for (int i = 0; i < n; i++)
		in[i] = (int64_t)(rank + 1) * (i + 1);
	MPI_Allreduce(in, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < n; i++) {
		int64_t want = (int64_t)size * (size + 1) / 2 * (i + 1);

		if (out[i] != want && bad++ < 5)
			fprintf(stderr, "rank %d: allreduce [%d] = %lld, want %lld\n", rank, i,
				(long long)out[i], (long long)want);
	}
	free(in);
	free(out);
	return bad;
}

/* Block j of rank r's send buffer goes to rank j, filled by (r, j). */
static int alltoall(int rank, int size)
{
	const size_t blk = 64 * 1024;
	uint8_t *s = malloc(blk * (size_t)size), *r = malloc(blk * (size_t)size);
	int bad = 0;

	for (int j = 0; j < size; j++)
		fill(s + blk * (size_t)j, blk, j, rank);
	memset(r, 0, blk * (size_t)size);
	MPI_Alltoall(s, (int)blk, MPI_BYTE, r, (int)blk, MPI_BYTE, MPI_COMM_WORLD);
	for (int j = 0; j < size; j++) {
		long at = check(r + blk * (size_t)j, blk, rank, j);

		if (at >= 0 && bad++ < 5)
			fprintf(stderr, "rank %d: alltoall block from %d: byte %ld wrong\n", rank, j,
				at);
	}
	free(s);
	free(r);
	return bad;
}

/* Every rank learns the total of bad messages of a part; rank 0 prints it. */
static int report(int rank, const char *what, int bad_here)
{
	int bad = 0;

	MPI_Allreduce(&bad_here, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s - %s%s\n", bad ? "not ok" : "ok", what, bad ? " (bytes wrong)" : "");
	fflush(stdout);
	return bad;
}

static int bench(int rank, int peer, size_t size, int iters)
{
	uint8_t *b = malloc(size);
	double t0, t;

	memset(b, 1, size);
	for (int w = 0; w < 2; w++) { /* warm-up: registration, rendezvous set-up */
		if (rank == 0) {
			MPI_Send(b, (int)size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
			MPI_Recv(b, (int)size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == peer) {
			MPI_Recv(b, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(b, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) {
		if (rank == 0) {
			MPI_Send(b, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(b, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == peer) {
			MPI_Recv(b, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(b, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	t = MPI_Wtime() - t0;
	/* one-way bandwidth of a ping-pong: 2 * size per round trip */
	if (rank == 0)
		printf("pingpong %zu B: %.1f MB/s, %.1f us per round trip\n", size,
		       2.0 * (double)size * iters / t / 1e6, t / iters * 1e6);
	free(b);
	return 0;
}

int main(int argc, char **argv)
{
	int rank, size, peer, bad, total = 0, iters = 2;
	uint8_t *sbuf, *rbuf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: needs at least 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	peer = size / 2;
	if (argc == 4 && !strcmp(argv[1], "--bench")) {
		bench(rank, peer, strtoul(argv[2], NULL, 0), atoi(argv[3]));
		MPI_Finalize();
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--iters"))
		iters = atoi(argv[2]) > 0 ? atoi(argv[2]) : 1;
	sbuf = malloc(MAX_MSG);
	rbuf = malloc(MAX_MSG);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	bad = (rank == 0 || rank == peer) ? pingpong(rank, peer, sbuf, rbuf, iters) : 0;
	{
		char what[96];

		snprintf(what, sizeof(what), "ping-pong rank 0 <-> rank %d, 1 B - 4 MiB, every byte", peer);
		total += report(rank, what, bad);
	}
	total += report(rank, "MPI_Allreduce (sum of 65536 int64 per rank)", allreduce(rank, size));
	total += report(rank, "MPI_Alltoall (64 KiB blocks, every byte)", alltoall(rank, size));
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return total ? 1 : 0;
}
