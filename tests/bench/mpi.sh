#!/usr/bin/env bash
# UCX and MPI over xrxe beside perftest on the same veth pair, in one run
# (docs/ucx-mpi.md): ib_write_bw at 1 MiB and ib_write_lat at 8 B (the verbs
# baseline), ucx_perftest tag_bw at 1 MiB and tag_lat at 8 B over
# UCX_TLS=rc_verbs,ud_verbs, and an Open MPI (pml ucx) ping-pong at 1 MiB and
# 8 B between two namespaces launched as two hosts (tests/mpi/netns_agent.sh).
# The ratio against ib_write_bw is the point; absolute numbers depend on the
# machine and on what else runs.
#
# Environment:
#   BENCH_DURATION=S     seconds of ib_write_bw (default 3)
#   MPI_BENCH_ITERS=N    1 MiB messages of ucx_perftest and MPI round trips (default 50)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
source tests/lib/netns.sh
source tests/lib/verbs.sh # wait_listen
XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
RUN=("$XRXE" run --)
AGENT=$PWD/tests/mpi/netns_agent.sh
DURATION=${BENCH_DURATION:-3}
ITERS=${MPI_BENCH_ITERS:-50}

for p in ib_write_bw ib_write_lat ucx_perftest mpirun.openmpi mpicc.openmpi; do
	if ! command -v "$p" >/dev/null; then
		echo "mpi bench skipped: $p is not installed (make deps)"
		exit 0
	fi
done
[ -x "$XRXED" ] || { echo "mpi bench skipped: $XRXED is not built (make)"; exit 0; }

val_or_na() { [ -n "${1:-}" ] && echo "$1" || echo n/a; }
ratio() {
	awk -v a="$1" -v b="$2" -v s="${3:-1}" 'BEGIN {
		if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "n/a";
		else printf "%.2f\n", a / b * s }'
}

netns_pair 203 9000
# UCX keeps device names in 15 characters (docs/ucx-mpi.md): short names.
for end in A B; do
	ns_var=NS_$end if_var=IF_$end new=b$$${end,,}
	ip -n "${!ns_var}" link set "${!if_var}" down
	ip -n "${!ns_var}" link set "${!if_var}" name "$new"
	ip -n "${!ns_var}" link set "$new" up
	printf -v "IF_$end" '%s' "$new"
done
tmp=""
netns_tmpdir tmp
chmod 755 "$tmp"
# The daemons as in tests/bench/verbs.sh: each on the core of the other
# side's program, at a higher priority than the busy-polling programs.
ns_bg "$NS_A" nice -n -10 taskset -c 0 "$XRXED" "$IF_A" >"$tmp/xrxed-a.log" 2>&1
ns_bg "$NS_B" nice -n -10 taskset -c 1 "$XRXED" "$IF_B" >"$tmp/xrxed-b.log" 2>&1
if ! netns_wait_file "/run/xrxe/$IF_A.sock" 10 || ! netns_wait_file "/run/xrxe/$IF_B.sock" 10; then
	echo "mpi bench: xrxed did not start"
	tail -n 5 "$tmp"/xrxed-*.log
	exit 1
fi

# --- perftest --------------------------------------------------------------------
PORT=19300
# pt NAME ARGS...: server in B, client in A; the client's last result line.
pt() {
	local name=$1
	shift
	PORT=$((PORT + 1))
	ns_exec "$NS_B" timeout 90 taskset -c 0 "${RUN[@]}" "$name" -d "xrxe_$IF_B" -F -p "$PORT" "$@" \
		>"$tmp/$name.server" 2>&1 &
	local spid=$!
	wait_listen "$NS_B" "$PORT"
	ns_exec "$NS_A" timeout 90 taskset -c 1 "${RUN[@]}" "$name" -d "xrxe_$IF_A" -F -p "$PORT" "$@" "$IP4_B" \
		2>&1 | grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' | tail -n 1
	wait "$spid"
}
WBW=$(pt ib_write_bw -s 1048576 -D "$DURATION" | awk '{ print $4 }')   # MB/s (BW average)
WLAT=$(pt ib_write_lat -s 8 -n 2000 | awk '{ print $5 }')             # typical us
# One RDMA READ of 1 MiB, alone: what UCX's rendezvous (get_zcopy) does per
# MPI message, besides two small messages (RTS, ATS).
RLAT=$(pt ib_read_lat -s 1048576 -n 100 | awk '{ print $5 }')        # typical us

# --- ucx_perftest --------------------------------------------------------------------
# ucp FIELD TEST SIZE N: a "Final:" field (5 = overall latency us, 7 = overall
# bandwidth MB/s).
ucp() {
	local field=$1 test=$2 size=$3 n=$4
	PORT=$((PORT + 1))
	ns_exec "$NS_B" timeout 90 taskset -c 0 env UCX_TLS=rc_verbs,ud_verbs "${RUN[@]}" \
		ucx_perftest -p "$PORT" >"$tmp/ucp.server" 2>&1 &
	local spid=$!
	wait_listen "$NS_B" "$PORT"
	ns_exec "$NS_A" timeout 90 taskset -c 1 env UCX_TLS=rc_verbs,ud_verbs "${RUN[@]}" \
		ucx_perftest "$IP4_B" -p "$PORT" -t "$test" -s "$size" -n "$n" >"$tmp/ucp.client" 2>&1
	wait "$spid"
	awk -v f="$field" '/^Final:/ { print $f }' "$tmp/ucp.client"
	# no result: say why, below the table
	grep -q '^Final:' "$tmp/ucp.client" ||
		tail -n 3 "$tmp/ucp.client" "$tmp/ucp.server" | sed "s/^/ucx_perftest $test: /" >>"$tmp/why"
}
UBW=$(ucp 7 tag_bw 1048576 "$ITERS")
ULAT=$(ucp 5 tag_lat 8 2000)

# --- Open MPI over UCX, two namespaces as two hosts ---------------------------------
mpicc.openmpi -O2 -o "$tmp/mpi_check" tests/mpi/mpi_check.c
mpi_pp() {
	XRXE_MPI_HOSTS="ha=$NS_A hb=$NS_B" XRXE_MPI_XRXE=$XRXE \
		ns_exec "$NS_A" timeout 180 mpirun.openmpi --allow-run-as-root \
		--mca plm_rsh_agent "$AGENT" --mca pml ucx -np 2 --host ha,hb \
		"$tmp/mpi_check" --bench "$1" "$2" 2>"$tmp/mpi.err" | awk '/^pingpong/ { print $'"$3"' }'
}
MBW=$(mpi_pp 1048576 "$ITERS" 4)  # MB/s
MLAT=$(mpi_pp 8 2000 6)           # us per round trip
MLAT_HALF=$(ratio "$MLAT" 2)
# one MPI 1 MiB message, in us (MB/s is bytes per us), and what it would take
# as one READ plus two small messages at ib_write_lat's latency
MONE=$(awk -v b="$MBW" 'BEGIN { if (b ~ /^[0-9.]+$/ && b > 0) printf "%.0f\n", 1048576 / b; else print "n/a" }')
RNDV=$(awk -v r="$RLAT" -v w="$WLAT" 'BEGIN {
	if (r ~ /^[0-9.]+$/ && w ~ /^[0-9.]+$/) printf "%.0f\n", r + 2 * w; else print "n/a" }')

printf '%-46s %12s %12s\n' "1 MiB bandwidth / 8 B latency (one way)" "MB/s" "us"
printf '%-46s %12s %12s\n' "  ib_write_bw -s 1M / ib_write_lat -s 8" "$(val_or_na "$WBW")" "$(val_or_na "$WLAT")"
printf '%-46s %12s %12s\n' "  ucx_perftest tag_bw 1M / tag_lat 8 B" "$(val_or_na "$UBW")" "$(val_or_na "$ULAT")"
printf '%-46s %12s %12s\n' "  Open MPI ping-pong 1 MiB / 8 B (RTT/2)" "$(val_or_na "$MBW")" "$MLAT_HALF"
printf '%-46s %12s %12s\n' "  ib_read_lat -s 1M (one READ, typical)" "" "$(val_or_na "$RLAT")"
printf '%-46s %12s %12s\n' "  MPI 1 MiB, one message" "" "$MONE"
printf '%-46s %12s %12s\n' "  one READ + 2 x ib_write_lat 8 B" "" "$RNDV"
printf '\n%-58s %8s %8s\n' "ratios (same run)" "value" "target"
printf '%-58s %7s%% %8s\n' "  MPI 1 MiB ping-pong / ib_write_bw 1 MiB" "$(ratio "$MBW" "$WBW" 100)" ">= 50%"
printf '%-58s %7s%%\n' "  ucx_perftest tag_bw 1 MiB / ib_write_bw 1 MiB" "$(ratio "$UBW" "$WBW" 100)"
printf '%-58s %7sx\n' "  ucx_perftest tag_lat / ib_write_lat" "$(ratio "$ULAT" "$WLAT")"
printf '%-58s %7sx\n' "  MPI 8 B RTT/2 / ib_write_lat" "$(ratio "$MLAT_HALF" "$WLAT")"
printf '%-58s %7sx\n' "  MPI 1 MiB message / (one READ + 2 small messages)" "$(ratio "$MONE" "$RNDV")"
[ -s "$tmp/mpi.err" ] && grep -v '^$' "$tmp/mpi.err" | tail -n 5 | sed 's/^/mpi: /'
[ -s "$tmp/why" ] && cat "$tmp/why"
exit 0
