#!/usr/bin/env bash
# rsockets over xrxe beside kernel TCP on the same veth pair, in one run
# (issue 13): what a user weighing rsockets against plain sockets wants to know.
#
#   rstream, one program both ways, blocking: rsockets through `xrxe run`,
#     and -T s (its plain-socket mode: kernel TCP), same sizes and counts —
#     throughput at 64 KiB and 1 MiB (rstream's bandwidth test: COUNT messages
#     one way, then back) and one-way latency at 64 B (ping-pong)
#   iperf3 -t DURATION: kernel TCP, and the same binary under librspreload
#   and, for what the rsocket layer itself costs, perftest's ib_write_bw
#   (64 KiB, one way) and ib_write_lat (64 B, busy-polling) over xrxe
#
# One veth pair at MTU 9000 (path MTU 4096), xrxed in each namespace at nice
# -10 (as tests/bench/verbs.sh). The ratios are the point; absolute numbers
# depend on the machine and on what else runs.
#
# Environment: BENCH_DURATION (s per iperf3 run, default 3),
# RS_LAT_ITERS (64 B round trips, default 5000), RS_BW_COUNT (1 MiB messages
# each way, default 200).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/netns.sh
XRXED=$PWD/$BUILD/bin/xrxed
RUN=("$PWD/$BUILD/bin/xrxe" run --)
DURATION=${BENCH_DURATION:-3}
LAT_ITERS=${RS_LAT_ITERS:-5000}
BW_COUNT=${RS_BW_COUNT:-200}
PRELOAD=${RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
T=120

for f in "$XRXED" "$BUILD/lib/xrxe/librdmacm.so.1"; do
	if [ ! -e "$f" ]; then
		echo "rsockets bench skipped: $f is not built (make)"
		exit 0
	fi
done
if ! command -v rstream >/dev/null; then
	echo "rsockets bench skipped: rstream is not installed (rdmacm-utils; make deps)"
	exit 0
fi

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "n/a";
		else printf "%.2f\n", a / b }'
}
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

netns_pair 204 9000 || { echo "rsockets bench: namespaces not created"; exit 1; }
netns_tmpdir TMP
for side in A B; do
	ns=NS_$side ifc=IF_$side
	ns_bg "${!ns}" nice -n -10 "$XRXED" "${!ifc}" >>"$TMP/xrxed-$side.log" 2>&1
done
if ! netns_wait_file "/run/xrxe/$IF_A.sock" 10 || ! netns_wait_file "/run/xrxe/$IF_B.sock" 10; then
	echo "rsockets bench: xrxed did not start"
	exit 1
fi
PORT=19950

# rstream_run MODE ARGS...: server in A, client in B; the client's result line
# ("custom ... Gb/sec usec/xfer") on stdout, or nothing.
rstream_run() {
	local mode=$1 pre=()
	shift
	PORT=$((PORT + 1))
	# both blocking (-T b); -T s: rstream's own plain-socket mode
	local how=(-T b)
	if [ "$mode" = b ]; then
		pre=("${RUN[@]}")
	else
		how=(-T s -T b)
	fi
	ns_exec "$NS_A" timeout $T "${pre[@]}" rstream -b "$IP4_A" -p $PORT "${how[@]}" "$@" \
		>"$TMP/rs.server" 2>&1 &
	local spid=$!
	sleep 1
	ns_exec "$NS_B" timeout $T "${pre[@]}" rstream -s "$IP4_A" -p $PORT "${how[@]}" "$@" \
		2>&1 | grep '^custom' | tail -n 1
	wait $spid
}
gbps() { awk '{ print $(NF - 1) }' <<<"$1"; }
usec() { awk '{ print $NF }' <<<"$1"; }

# iperf_run PRELOAD?: Gbit/s of the receiver, or nothing.
iperf_run() {
	local env=()
	PORT=$((PORT + 1))
	[ -n "$1" ] && env=("${RUN[@]}" env LD_PRELOAD="$PRELOAD")
	ns_exec "$NS_A" timeout $T "${env[@]}" iperf3 -s -1 -p $PORT >"$TMP/ip.server" 2>&1 &
	local spid=$!
	sleep 1
	ns_exec "$NS_B" timeout $T "${env[@]}" iperf3 -c "$IP4_A" -p $PORT -t "$DURATION" -f g 2>&1 |
		awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "Gbits/sec") print $(i - 1) }'
	wait $spid
}

# perftest_run NAME ARGS...: server in A, client in B, both through the
# shim; the client's result line, or nothing.
perftest_run() {
	local name=$1 i
	shift
	PORT=$((PORT + 1))
	ns_exec "$NS_A" timeout $T "${RUN[@]}" "$name" -d "xrxe_$IF_A" -x 1 -F -p $PORT "$@" \
		>"$TMP/pt.server" 2>&1 &
	local spid=$!
	for i in $(seq 200); do
		ns_exec "$NS_A" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	ns_exec "$NS_B" timeout $T "${RUN[@]}" "$name" -d "xrxe_$IF_B" -x 1 -F -p $PORT "$@" "$IP4_A" \
		2>&1 | grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' | tail -n 1
	wait $spid
}

bw64_rs=$(rstream_run b -S 65536 -C $((BW_COUNT * 10)))
bw64_tcp=$(rstream_run s -S 65536 -C $((BW_COUNT * 10)))
bw1m_rs=$(rstream_run b -S 1048576 -C "$BW_COUNT")
bw1m_tcp=$(rstream_run s -S 1048576 -C "$BW_COUNT")
lat_rs=$(rstream_run b -S 64 -C 1 -I "$LAT_ITERS")
lat_tcp=$(rstream_run s -S 64 -C 1 -I "$LAT_ITERS")
# The same transport without rsockets: what the verbs underneath give.
wb='' wl=''
if command -v ib_write_bw >/dev/null; then
	wb=$(perftest_run ib_write_bw -s 65536 -D "$DURATION" --report_gbits | awk '{ print $4 }')
	wl=$(perftest_run ib_write_lat -s 64 -n "$LAT_ITERS" | awk '{ print $5 }')
fi
ip_tcp='' ip_rs=''
if command -v iperf3 >/dev/null; then
	ip_tcp=$(iperf_run "")
	[ -e "$PRELOAD" ] && ip_rs=$(iperf_run preload)
fi

printf '%-44s %12s %12s %8s\n' "" "rsockets" "kernel TCP" "ratio"
printf '%-44s %12s %12s %8s\n' "rstream 64 KiB x $((BW_COUNT * 10)) each way, Gbit/s" \
	"$(gbps "$bw64_rs")" "$(gbps "$bw64_tcp")" "$(ratio "$(gbps "$bw64_rs")" "$(gbps "$bw64_tcp")")"
printf '%-44s %12s %12s %8s\n' "rstream 1 MiB x $BW_COUNT each way, Gbit/s" \
	"$(gbps "$bw1m_rs")" "$(gbps "$bw1m_tcp")" "$(ratio "$(gbps "$bw1m_rs")" "$(gbps "$bw1m_tcp")")"
printf '%-44s %12s %12s %8s\n' "rstream 64 B ping-pong, one-way us (lower=better)" \
	"$(usec "$lat_rs")" "$(usec "$lat_tcp")" "$(ratio "$(usec "$lat_rs")" "$(usec "$lat_tcp")")"
if [ -n "$ip_tcp$ip_rs" ]; then
	printf '%-44s %12s %12s %8s\n' "iperf3 -t $DURATION, Gbit/s (rsockets: librspreload)" \
		"${ip_rs:-n/a}" "${ip_tcp:-n/a}" "$(ratio "$ip_rs" "$ip_tcp")"
fi
echo "(ratio = rsockets / kernel TCP; for latency above 1 means rsockets is slower)"
if [ -n "$wb$wl" ]; then
	printf '%-44s %12s %12s %8s\n' "the verbs underneath (perftest over xrxe)" "rsockets" "ib_write_*" "ratio"
	printf '%-44s %12s %12s %8s\n' "64 KiB Gbit/s (rstream; ib_write_bw, one way)" \
		"$(gbps "$bw64_rs")" "${wb:-n/a}" "$(ratio "$(gbps "$bw64_rs")" "$wb")"
	printf '%-44s %12s %12s %8s\n' "64 B one-way us (ib_write_lat busy-polls)" \
		"$(usec "$lat_rs")" "${wl:-n/a}" "$(ratio "$(usec "$lat_rs")" "$wl")"
fi
