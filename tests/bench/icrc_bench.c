// SPDX-License-Identifier: MIT
/*
 * ICRC throughput: ISA-L crc32_gzip_refl against zlib crc32 on the same 4 KiB
 * buffers, and xrxe_icrc on a RoCEv2 frame with a 4096-byte payload (mask the
 * IP/UDP/BTH prefix on the stack, then CRC the rest in place).
 *
 *   icrc_bench            print the table
 *   icrc_bench --check    also verify that the three agree (exit 1 if not)
 *
 * "hot" reuses one buffer (L1-resident); "pool" walks a 64 MiB pool of
 * buffers, more than the last-level cache, as a NIC's RX ring would. Each
 * figure is the median of 7 runs.
 */
#include <arpa/inet.h>
#include <isa-l/crc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "xrxe/wire.h"

#define BUF 4096
#define POOL_BYTES (64u << 20)
#define RUNS 7
#define BYTES_PER_RUN (512ull << 20) /* 512 MiB of CRC per run */

static volatile uint32_t sink;

enum impl { ISAL, ZLIB, XRXE };
static const char *const impl_name[] = { "isal", "zlib", "xrxe" };

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* buffers: nbuf items of stride bytes; each item is a 4 KiB block, or a frame. */
static double run(enum impl impl, const uint8_t *base, size_t stride, size_t nbuf, size_t frame_len)
{
	size_t iters = BYTES_PER_RUN / BUF, i, b = 0;
	uint32_t acc = 0;
	double t0 = now_ns();

	for (i = 0; i < iters; i++) {
		const uint8_t *p = base + b * stride;

		switch (impl) {
		case ISAL:
			acc ^= crc32_gzip_refl(0, p, BUF);
			break;
		case ZLIB:
			acc ^= (uint32_t)crc32(0, p, BUF);
			break;
		case XRXE:
			acc ^= xrxe_icrc(p, frame_len, XRXE_ETH_HLEN);
			break;
		}
		if (++b == nbuf)
			b = 0;
	}
	sink = acc;
	/* GB/s of payload: 4096 bytes per buffer or per frame */
	return (double)iters * BUF / (now_ns() - t0);
}

static double median_run(enum impl impl, const uint8_t *base, size_t stride, size_t nbuf,
			 size_t frame_len)
{
	double r[RUNS];

	for (int i = 0; i < RUNS; i++)
		r[i] = run(impl, base, stride, nbuf, frame_len);
	qsort(r, RUNS, sizeof(r[0]), cmp_double);
	return r[RUNS / 2];
}

/* A RoCEv2 RC SEND_ONLY frame with a 4096-byte payload at buf. */
static size_t make_frame(uint8_t *buf, size_t cap, const uint8_t *payload)
{
	struct xrxe_pkt_spec s = {
		.ip_version = 4, .ttl = 64, .ip_df = true, .sport = 0xc000,
		.opcode = XRXE_OPCODE(RC, SEND_ONLY), .pkey = 0xffff, .dest_qp = 0x11,
		.payload = payload, .payload_len = BUF,
	};
	int n;

	s.saddr.v4.s_addr = inet_addr("10.77.0.2");
	s.daddr.v4.s_addr = inet_addr("10.77.0.1");
	n = xrxe_build(buf, cap, &s);
	if (n < 0) {
		fprintf(stderr, "icrc_bench: build failed: %d\n", n);
		exit(1);
	}
	return (size_t)n;
}

static int check(const uint8_t *pool)
{
	static uint8_t frame[BUF + 128], masked[BUF + 128];
	int bad = 0;

	/* ISA-L and zlib: same CRC for every length, fresh and chained */
	for (size_t len = 0; len <= BUF; len += len < 64 ? 1 : 61) {
		uint32_t a = crc32_gzip_refl(0, pool + len, len);
		uint32_t z = (uint32_t)crc32(0, pool + len, (uInt)len);
		uint32_t a2 = crc32_gzip_refl(crc32_gzip_refl(0, pool, 13), pool + 13, len);
		uint32_t z2 = (uint32_t)crc32(crc32(0, pool, 13), pool + 13, (uInt)len);

		if (a != z || a2 != z2) {
			fprintf(stderr, "check: isal %08x/%08x != zlib %08x/%08x at len %zu\n", a, a2, z,
				z2, len);
			bad = 1;
		}
	}
	/* xrxe_icrc == zlib over FF*8 | masked IP/UDP/BTH | rest (docs/facts/rxe.md §1.5),
	 * and equals the trailer the builder wrote */
	for (int i = 0; i < 64; i++) {
		size_t n = make_frame(frame, sizeof(frame), pool + (size_t)i * BUF);
		size_t m = n - 14 - 4 + 8;
		uint32_t x = xrxe_icrc(frame, n, 14), z, t;

		memset(masked, 0xff, 8);
		memcpy(masked + 8, frame + 14, n - 14 - 4);
		masked[8 + 1] = masked[8 + 8] = masked[8 + 10] = masked[8 + 11] = 0xff;
		masked[8 + 26] = masked[8 + 27] = 0xff;
		masked[8 + 32] = 0xff;
		z = (uint32_t)crc32(0, masked, (uInt)m);
		t = frame[n - 4] | frame[n - 3] << 8 | frame[n - 2] << 16 | (uint32_t)frame[n - 1] << 24;
		if (x != z || x != t) {
			fprintf(stderr, "check: xrxe_icrc %08x, zlib %08x, trailer %08x\n", x, z, t);
			bad = 1;
		}
	}
	printf("check: isal, zlib and xrxe_icrc %s\n", bad ? "DISAGREE" : "agree");
	return bad;
}

int main(int argc, char **argv)
{
	size_t frame_len, nframes, fstride;
	uint8_t *pool, *frames, *payload;
	int do_check = argc > 1 && !strcmp(argv[1], "--check");

	if (argc > 1 && !do_check) {
		fprintf(stderr, "usage: %s [--check]\n", argv[0]);
		return 2;
	}
	pool = aligned_alloc(64, POOL_BYTES);
	payload = malloc(BUF);
	if (!pool || !payload)
		return 1;
	srand(1);
	for (size_t i = 0; i < POOL_BYTES; i++)
		pool[i] = (uint8_t)rand();
	memcpy(payload, pool, BUF);

	/* the frames: one hot frame, and a 64 MiB pool of them (cache-line strided) */
	{
		static uint8_t scratch[BUF + 128];

		frame_len = make_frame(scratch, sizeof(scratch), payload);
	}
	fstride = (frame_len + 63) & ~(size_t)63;
	nframes = POOL_BYTES / fstride;
	frames = aligned_alloc(64, nframes * fstride);
	if (!frames)
		return 1;
	for (size_t i = 0; i < nframes; i++)
		make_frame(frames + i * fstride, fstride, pool + (i % 1024) * BUF);

	if (do_check && check(pool))
		return 1;

	printf("# ICRC throughput, GB/s of CRC'd payload (4096 B per buffer or frame), median of %d\n",
	       RUNS);
	for (int impl = ISAL; impl <= ZLIB; impl++) {
		printf("icrc  %-4s  4096B  hot   %6.2f GB/s\n", impl_name[impl],
		       median_run(impl, pool, BUF, 1, 0));
		printf("icrc  %-4s  4096B  pool  %6.2f GB/s\n", impl_name[impl],
		       median_run(impl, pool, BUF, POOL_BYTES / BUF, 0));
	}
	printf("icrc  %-4s  4096B  hot   %6.2f GB/s   (RoCEv2 frame of %zu B)\n", impl_name[XRXE],
	       median_run(XRXE, frames, fstride, 1, frame_len), frame_len);
	printf("icrc  %-4s  4096B  pool  %6.2f GB/s\n", impl_name[XRXE],
	       median_run(XRXE, frames, fstride, nframes, frame_len));
	free(frames);
	free(payload);
	free(pool);
	return 0;
}
