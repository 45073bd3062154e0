#!/usr/bin/env bash
# Unmodified perftest over xrxe, beside the raw limits of the same veth pair,
# all in one run: ib_write_bw / ib_read_bw / ib_send_bw at 64 B, 4 KiB and
# 64 KiB and ib_write_lat at 64 B (xrxed in each namespace, perftest through
# `xrxe run`), the AF_XDP blaster (4198-byte frames) and ping-pong (62-byte
# frames) through the I/O layer with no transport, and kernel TCP (iperf3).
# One veth pair at MTU 9000, so path MTU 4096. The ratios at the end are the
# point; the absolute numbers depend on the machine and on what else runs.
#
# Placement (2 vCPUs; every xrxed busy-polls while it has work, perftest spins
# on its CQ or buffer): see VERBS_CPUS below and docs/performance.md.
#
# Environment:
#   BENCH_DURATION=S    seconds per bandwidth run and per blast (default 3)
#   VERBS_LAT_ITERS=N   ib_write_lat iterations (default 20000)
#   VERBS_CPUS="DA DB S C"  CPUs of xrxed A, xrxed B, the perftest server (in B)
#                       and client (in A); "-" leaves one unpinned
#   VERBS_NICE=N        nice value of both daemons (default -10; 0 = as started)
#   VERBS_XRXED_OPTS="..."  extra xrxed options for both daemons, e.g.
#                       "--rt-priority 10" or "--rexmit fixed"
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/netns.sh
P=$PWD/$BUILD/tests/net/xskprobe
XRXED=$PWD/$BUILD/bin/xrxed
RUN=("$PWD/$BUILD/bin/xrxe" run --)
DURATION=${BENCH_DURATION:-3}
LAT_ITERS=${VERBS_LAT_ITERS:-20000}
# Default placement: each daemon shares a core with the *other* side's
# perftest process ("crossed"). Measured alternatives are in
# docs/performance.md.
read -r CPU_DA CPU_DB CPU_S CPU_C <<<"${VERBS_CPUS:-0 1 0 1}"
# The daemons run at a higher priority than perftest: when a frame or a WQE
# is waiting they must get the core from a spinning perftest at once, and
# when idle they give it back within 10 us (xrxed's spin policy).
NICE=${VERBS_NICE:--10}

for f in "$P" "$XRXED" "$BUILD/lib/xrxe/libibverbs.so.1"; do
	if [ ! -e "$f" ]; then
		echo "verbs bench skipped: $f is not built (make tests)"
		exit 0
	fi
done
for p in ib_write_bw ib_read_bw ib_send_bw ib_write_lat; do
	if ! command -v "$p" >/dev/null; then
		echo "verbs bench skipped: $p is not installed (make deps)"
		exit 0
	fi
done

# pin CPU: the command prefix that pins to CPU (none for "-"), in PIN.
pin() {
	PIN=()
	[ "$1" = - ] || PIN=(taskset -c "$1")
}
val() { awk -v k="$1" '$1 == k { print $2 }' "$2" | tail -n 1; }
# ratio A B [SCALE]: A / B * SCALE with two decimals, "n/a" when either is missing.
ratio() {
	awk -v a="$1" -v b="$2" -v s="${3:-1}" 'BEGIN {
		if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "n/a";
		else printf "%.2f\n", a / b * s }'
}

# What else runs: the share of both CPUs busy over one second, before we start.
cpu_busy() {
	local a b
	a=$(awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat)
	sleep 1
	b=$(awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
		busy = y[1] - x[1]; idle = y[2] - x[2];
		printf "%.0f\n", busy + idle ? 100 * busy / (busy + idle) : 0 }'
}
busy=$(cpu_busy)
echo "machine: $(nproc) CPUs, $busy% busy before the run$([ "$busy" -gt 10 ] &&
	echo " -- NOT idle: expect low and noisy numbers")"

netns_pair 202 9000
ADDRS=$MAC_A,$MAC_B,$IP4_A,$IP4_B
netns_tmpdir tmp

# --- raw AF_XDP limits and kernel TCP on the same pair (no daemon yet) ------
# ns_bg, not ns_exec ... &: $! must be the probe itself, not a subshell that
# a kill would leave the probe running behind (holding the queue).
ns_bg "$NS_B" "$P" rx "$IF_B" --cpu 1 --spin --idle 1 --timeout $((DURATION + 20)) \
	--rx-ring 8192 --ready-file "$tmp/ready" >"$tmp/rx" 2>&1
rxpid=$NETNS_LAST_PID
netns_wait_file "$tmp/ready" 5
ns_exec "$NS_A" "$P" blast "$IF_A" --size 4200 --duration "$DURATION" --cpu 0 \
	--addrs "$ADDRS" >"$tmp/tx" 2>&1
wait "$rxpid"
rm -f "$tmp/ready"
RAW_FRAME=$(val gen_frame_len "$tmp/tx")
RAW_MPPS=$(val rx_mpps "$tmp/rx")
RAW_GBPS=$(val rx_gbps "$tmp/rx")

ns_bg "$NS_B" "$P" pong "$IF_B" --spin --cpu 1 --timeout 30 \
	--ready-file "$tmp/ready" >"$tmp/pong" 2>&1
pongpid=$NETNS_LAST_PID
netns_wait_file "$tmp/ready" 5
ns_exec "$NS_A" "$P" ping "$IF_A" --spin --cpu 0 --count 20000 --size 64 \
	--addrs "$ADDRS" >"$tmp/ping" 2>&1
kill "$pongpid" 2>/dev/null
wait "$pongpid" 2>/dev/null
rm -f "$tmp/ready"
PING_FRAME=$(val gen_frame_len "$tmp/ping")
RTT_P50=$(val rtt_p50_us "$tmp/ping")
RTT_P99=$(val rtt_p99_us "$tmp/ping")
HALF_P50=$(ratio "$RTT_P50" 2)
HALF_P99=$(ratio "$RTT_P99" 2)

TCP=n/a
if command -v iperf3 >/dev/null; then
	ns_bg "$NS_B" iperf3 -s -1 -p 5299 >/dev/null 2>&1
	iperfpid=$NETNS_LAST_PID
	sleep 0.5
	TCP=$(ns_exec "$NS_A" iperf3 -c "$IP4_B" -p 5299 -t "$DURATION" -J 2>/dev/null |
		python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))' 2>/dev/null)
	wait "$iperfpid" 2>/dev/null
	[ -n "$TCP" ] || TCP=n/a
fi

# --- xrxed on both ends, perftest through the shim ---------------------------
pin "$CPU_DA"
# shellcheck disable=SC2086 # VERBS_XRXED_OPTS: a word list
ns_bg "$NS_A" nice -n "$NICE" "${PIN[@]}" "$XRXED" ${VERBS_XRXED_OPTS-} "$IF_A" >"$tmp/xrxed-a.log" 2>&1
pin "$CPU_DB"
# shellcheck disable=SC2086
ns_bg "$NS_B" nice -n "$NICE" "${PIN[@]}" "$XRXED" ${VERBS_XRXED_OPTS-} "$IF_B" >"$tmp/xrxed-b.log" 2>&1
if ! netns_wait_file "/run/xrxe/$IF_A.sock" 10 || ! netns_wait_file "/run/xrxe/$IF_B.sock" 10; then
	echo "verbs bench: xrxed did not start"
	tail -n 5 "$tmp"/xrxed-*.log
	exit 1
fi

PORT=18900
# perftest NAME SIZE ARGS...: server in B, client in A; the client's result
# line ("#bytes #iterations ...") in $tmp/NAME-SIZE, empty on failure.
perftest() {
	local name=$1 size=$2 i
	shift 2
	local out=$tmp/$name-$size
	PORT=$((PORT + 1))
	pin "$CPU_S"
	ns_exec "$NS_B" timeout 60 "${PIN[@]}" "${RUN[@]}" "$name" -d "xrxe_$IF_B" -x 1 \
		-s "$size" -F -p "$PORT" "$@" >"$out.server" 2>&1 &
	local spid=$!
	for i in $(seq 200); do
		ns_exec "$NS_B" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	pin "$CPU_C"
	ns_exec "$NS_A" timeout 60 "${PIN[@]}" "${RUN[@]}" "$name" -d "xrxe_$IF_A" -x 1 \
		-s "$size" -F -p "$PORT" "$@" "$IP4_B" >"$out.client" 2>&1
	wait "$spid"
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$out.client" | tail -n 1 >"$out"
}
# field FILE N: the Nth column of a result line, or n/a.
field() {
	local v
	v=$(awk -v n="$2" '{ print $n }' "$1" 2>/dev/null)
	echo "${v:-n/a}"
}

printf '%-34s %12s %10s\n' "perftest over xrxe (RC, -F)" "BW Gbit/s" "Mpps"
for t in ib_write_bw ib_read_bw ib_send_bw; do
	for size in 64 4096 65536; do
		perftest "$t" "$size" -D "$DURATION" --report_gbits
		printf '%-34s %12s %10s\n' "  $t -s $size" \
			"$(field "$tmp/$t-$size" 4)" "$(field "$tmp/$t-$size" 5)"
	done
done
perftest ib_write_lat 64 -n "$LAT_ITERS"
LAT_TYP=$(field "$tmp/ib_write_lat-64" 5)
LAT_P99=$(field "$tmp/ib_write_lat-64" 8)
printf '\n%-34s %12s %10s\n' "latency (one way = RTT/2)" "typical us" "p99 us"
printf '%-34s %12s %10s\n' "  ib_write_lat -s 64 -n $LAT_ITERS" "$LAT_TYP" "$LAT_P99"
printf '%-34s %12s %10s\n' "  raw AF_XDP ${PING_FRAME:-?} B, half RTT" "$HALF_P50" "$HALF_P99"

WRITE64K=$(field "$tmp/ib_write_bw-65536" 4)
printf '\n%-34s %12s %10s\n' "raw AF_XDP and kernel baselines" "Gbit/s" "Mpps"
printf '%-34s %12s %10s\n' "  blast A->B, ${RAW_FRAME:-?} B frames" "${RAW_GBPS:-n/a}" "${RAW_MPPS:-n/a}"
printf '%-34s %12s\n' "  iperf3 TCP, 1 stream" "$TCP"

r_bw=$(ratio "$WRITE64K" "${RAW_GBPS:-}" 100)
r_lat=$(ratio "$LAT_TYP" "$HALF_P50")
printf '\n%-58s %8s %8s\n' "ratios (same run)" "value" "target"
printf '%-58s %7s%% %8s\n' "  64 KiB ib_write_bw / raw AF_XDP byte rate (4198 B frames)" "$r_bw" ">= 70%"
printf '%-58s %7sx %8s\n' "  ib_write_lat 64 B typical / raw AF_XDP half RTT 64 B" "$r_lat" "<= 3x"
printf '%-58s %7sx\n' "  ib_write_lat 64 B p99 / raw AF_XDP half RTT p99" "$(ratio "$LAT_P99" "$HALF_P99")"
printf '%-58s %7s%%\n' "  64 KiB ib_write_bw / kernel TCP" "$(ratio "$WRITE64K" "$TCP" 100)"
echo "placement: xrxed A cpu $CPU_DA, xrxed B cpu $CPU_DB (nice $NICE), perftest server (B) cpu $CPU_S, client (A) cpu $CPU_C; raw probes: sender cpu 0, receiver cpu 1"
