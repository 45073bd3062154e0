#!/usr/bin/env bash
# make bench: the benchmarks, each against a baseline measured in the same run,
# printed as one table. Numbers depend on the machine; the ratios are the point.
set -uo pipefail
cd "$(dirname "$0")/../.."
# Debian's own programs first: the tests run Debian's python3 (the one with
# python3-pyverbs) and tools. A user's PATH may put others ahead -- pyenv's
# python3 shim, a shell script that took 6 s per start at load 8 on 2 cores.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
BUILD=${BUILD:-build}

echo "== ICRC on 4 KiB buffers: ISA-L crc32_gzip_refl vs zlib crc32 (same data, same run)"
"$BUILD"/tests/bench/icrc_bench

if [ "$(id -u)" -eq 0 ] && [ -x tests/bench/afxdp.sh ]; then
	echo
	echo "== AF_XDP I/O layer over veth (copy mode), namespaces A -> B"
	tests/bench/afxdp.sh
fi

if [ "$(id -u)" -eq 0 ] && [ -x tests/bench/verbs.sh ]; then
	echo
	echo "== perftest over xrxe (xrxed in both namespaces) beside the raw limits of the same pair"
	tests/bench/verbs.sh
fi

if [ "$(id -u)" -eq 0 ] && [ -x tests/bench/scale.sh ]; then
	echo
	echo "== many QPs: one active QP beside 0 .. 65 536 idle ones, daemon CPU per packet with 1 .. 4 096 active QPs"
	tests/bench/scale.sh
fi

if [ "$(id -u)" -eq 0 ] && [ -x tests/bench/cm.sh ]; then
	echo
	echo "== RDMA CM: cmtime conn/s, kernel rdma_cm over rxe vs xrxe in one QEMU guest; the CM handshake against a UDP round trip"
	tests/bench/cm.sh
fi

if [ "$(id -u)" -eq 0 ] && [ -x tests/bench/rsockets.sh ]; then
	echo
	echo "== rsockets over xrxe (rstream, iperf3 under librspreload) beside kernel TCP on the same veth pair"
	tests/bench/rsockets.sh
fi

if [ "$(id -u)" -eq 0 ] && [ -x tests/bench/mpi.sh ]; then
	echo
	echo "== UCX and Open MPI over xrxe (two namespaces as two hosts) beside ib_write_bw/ib_write_lat on the same pair"
	tests/bench/mpi.sh
fi
