#!/usr/bin/env bash
# make bench: xrxe with many QPs (issue 16), every ratio against a row of the
# same run. Two namespaces, xrxed in each:
#   - one active QP's ib_write_lat (64 B, typical and p99) and ib_write_bw
#     (64 B and 64 KiB) with 0, 1 024, 16 384 and 65 536 idle connected RC QPs
#     held in the daemons by tests/verbs/rc_scale.c (-H) -- each row as a
#     ratio to the 0-idle row (aim: within 10 %);
#   - the daemons' CPU per million packets (utime + stime from /proc over the
#     frames they received and sent) with 1, 16, 256 and 4 096 active QPs
#     (ib_write_bw -q N, 64 B) -- as a ratio to the 16-QP row (aim: flat
#     within 20 % from 16 to 4 096);
#   - the daemon's RSS growth per 1 000 connected QPs, the time to create and
#     connect the largest idle set, and the time its daemons take to release
#     it after its applications are killed.
# More than 16 384 idle QPs need more mappings than vm.max_map_count's
# default allows the daemon (two rings each): as root the bench raises it for
# the run and puts it back.
#
#   SCALE_IDLE="0 1024 16384 65536" SCALE_ACTIVE="1 16 256 4096" BENCH_DURATION=3
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/netns.sh
XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
PROG=$PWD/$BUILD/tests/verbs/rc_scale
RUN=("$XRXE" run --)
DURATION=${BENCH_DURATION:-3}
IDLE_ROWS=${SCALE_IDLE:-0 1024 16384 65536}
ACTIVE_ROWS=${SCALE_ACTIVE:-1 16 256 4096}
CHUNK=16384 # QPs per holding application (objects and maps per connection)

for f in "$XRXED" "$XRXE" "$PROG" "$BUILD/lib/xrxe/libibverbs.so.1"; do
	if [ ! -e "$f" ]; then
		echo "scale bench skipped: $f is not built (make tests)"
		exit 0
	fi
done
for p in ib_write_bw ib_write_lat; do
	if ! command -v "$p" >/dev/null; then
		echo "scale bench skipped: $p is not installed (make deps)"
		exit 0
	fi
done

max_idle=0
for n in $IDLE_ROWS; do [ "$n" -gt "$max_idle" ] && max_idle=$n; done
need_maps=$((3 * max_idle + 65536))
old_maps=$(cat /proc/sys/vm/max_map_count)
if [ "$old_maps" -lt "$need_maps" ]; then
	if sysctl -qw vm.max_map_count="$need_maps" 2>/dev/null; then
		netns_at_exit "sysctl -qw vm.max_map_count=$old_maps"
	else
		echo "scale bench: vm.max_map_count $old_maps is below $need_maps; rows above $((old_maps / 3)) idle QPs may fail"
	fi
fi

netns_tmpdir tmp
netns_pair 79 1500
# as tests/bench/verbs.sh: the daemons get the core from a spinning perftest
ns_bg "$NS_A" nice -n -10 "$XRXED" "$IF_A" >"$tmp/xrxed-a.log" 2>&1
PID_A=$NETNS_LAST_PID
ns_bg "$NS_B" nice -n -10 "$XRXED" "$IF_B" >"$tmp/xrxed-b.log" 2>&1
PID_B=$NETNS_LAST_PID
if ! netns_wait_file "/run/xrxe/$IF_A.sock" 10 || ! netns_wait_file "/run/xrxe/$IF_B.sock" 10; then
	echo "scale bench: xrxed did not start"
	exit 1
fi

ratio() { awk -v a="$1" -v b="$2" -v m="${3:-1}" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", m * a / b; else print "n/a" }'; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
objects() {
	ns_exec "$1" "$XRXE" stats "$2" --json 2>/dev/null | python3 -c '
import json, sys
t = json.load(sys.stdin)["daemon"]["transport"]
print(sum(t[k] for k in ("qps", "cqs", "mrs", "pds", "ahs")))'
}
frames() {
	ns_exec "$1" "$XRXE" stats "$2" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)["daemon"]["daemon"]
print(d["rx_ok"] + d["tx_frames"])'
}

PORT=19300
# perftest NAME SIZE ARGS...: server in B, client in A; the client's result line
perftest() {
	local name=$1 size=$2 i
	shift 2
	local out=$tmp/$name-$size
	PORT=$((PORT + 1))
	ns_exec "$NS_B" timeout 120 "${RUN[@]}" "$name" -d "xrxe_$IF_B" -x 1 -s "$size" -F \
		-p "$PORT" "$@" >"$out.server" 2>&1 &
	local spid=$!
	for i in $(seq 200); do
		ns_exec "$NS_B" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	ns_exec "$NS_A" timeout 120 "${RUN[@]}" "$name" -d "xrxe_$IF_A" -x 1 -s "$size" -F \
		-p "$PORT" "$@" "$IP4_B" >"$out.client" 2>&1
	wait "$spid"
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$out.client" | tail -n 1 >"$out"
}
field() {
	local v
	v=$(awk -v n="$2" '{ print $n }' "$1" 2>/dev/null)
	echo "${v:-n/a}"
}

HOLDERS=()
# hold N: N idle connected QPs between the namespaces, in chunks of CHUNK
hold() {
	local n=$1 k=0 left=$1 c
	while [ "$left" -gt 0 ]; do
		c=$((left < CHUNK ? left : CHUNK))
		k=$((k + 1))
		ip netns exec "$NS_B" "${RUN[@]}" "$PROG" -d "xrxe_$IF_B" -p $((19500 + k)) -n "$c" -k 1 -H \
			>"$tmp/hold-b-$k.log" 2>&1 &
		HOLDERS+=($!)
		ip netns exec "$NS_A" "${RUN[@]}" "$PROG" -d "xrxe_$IF_A" -p $((19500 + k)) -n "$c" -k 1 -H "$IP4_B" \
			>"$tmp/hold-a-$k.log" 2>&1 &
		HOLDERS+=($!)
		for _ in $(seq 6000); do
			grep -q HOLDING "$tmp/hold-a-$k.log" && grep -q HOLDING "$tmp/hold-b-$k.log" && break
			grep -q FAIL "$tmp/hold-a-$k.log" "$tmp/hold-b-$k.log" && break
			sleep 0.1
		done
		if ! grep -q HOLDING "$tmp/hold-a-$k.log"; then
			echo "scale bench: could not hold $n idle QPs:"
			tail -n 3 "$tmp"/hold-*-"$k".log
			return 1
		fi
		left=$((left - c))
	done
	[ "$n" -gt 0 ] || true
}
release() {
	[ ${#HOLDERS[@]} -gt 0 ] || return 0
	kill -9 "${HOLDERS[@]}" 2>/dev/null
	for p in "${HOLDERS[@]}"; do wait "$p" 2>/dev/null; done
	HOLDERS=()
	for _ in $(seq 1200); do
		[ "$(objects "$NS_A" "$IF_A")" = 0 ] && [ "$(objects "$NS_B" "$IF_B")" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}
netns_at_exit 'release'

echo "one active QP beside idle connected RC QPs (ratios to the 0-idle row, aim within 10 %)"
printf '%-10s %10s %10s %12s %12s %8s %8s %8s %8s\n' "idle QPs" "lat typ" "lat p99" \
	"bw 64B Mpps" "bw 64K Gb/s" "typ" "p99" "64B" "64K"
base=()
RSS_NOTE="" CREATE_NOTE="" RELEASE_NOTE=""
for n in $IDLE_ROWS; do
	rss0=$(rss_kib "$PID_A")
	t0=$SECONDS
	if [ "$n" -gt 0 ] && ! hold "$n"; then
		release
		continue
	fi
	if [ "$n" -gt 0 ]; then
		CREATE_NOTE="$n QPs created and connected per side in $((SECONDS - t0)) s (wall, $(grep -ho 'created in [0-9.]* s' "$tmp"/hold-a-1.log | head -n 1), chunks of $CHUNK)"
		RSS_NOTE="daemon A RSS $rss0 -> $(rss_kib "$PID_A") KiB with $n idle QPs: $((($(rss_kib "$PID_A") - rss0) * 1000 / n)) KiB per 1000 QPs"
	fi
	perftest ib_write_lat 64 -n 5000
	lt=$(field "$tmp/ib_write_lat-64" 5) lp=$(field "$tmp/ib_write_lat-64" 8)
	perftest ib_write_bw 64 -D "$DURATION" --report_gbits
	b64=$(field "$tmp/ib_write_bw-64" 5)
	perftest ib_write_bw 65536 -D "$DURATION" --report_gbits
	b64k=$(field "$tmp/ib_write_bw-65536" 4)
	[ ${#base[@]} -eq 0 ] && base=("$lt" "$lp" "$b64" "$b64k")
	printf '%-10s %10s %10s %12s %12s %8s %8s %8s %8s\n' "$n" "$lt" "$lp" "$b64" "$b64k" \
		"$(ratio "$lt" "${base[0]}")" "$(ratio "$lp" "${base[1]}")" \
		"$(ratio "$b64" "${base[2]}")" "$(ratio "$b64k" "${base[3]}")"
	t0=$SECONDS
	if release; then
		[ "$n" -gt 0 ] && RELEASE_NOTE="$n QPs per side released by the daemons $((SECONDS - t0)) s after their applications were killed"
	else
		echo "scale bench: the daemons did not release the idle QPs"
	fi
done
[ -n "$RSS_NOTE" ] && echo "  $RSS_NOTE"
[ -n "$CREATE_NOTE" ] && echo "  $CREATE_NOTE"
[ -n "$RELEASE_NOTE" ] && echo "  $RELEASE_NOTE"

echo
echo "daemon CPU per packet with N active QPs (ib_write_bw -q N, 64 B; ratio to the 16-QP row, aim flat within 20 %)"
printf '%-12s %12s %14s %16s %8s\n' "active QPs" "Mpps" "packets" "CPU s / Mpkt" "ratio"
ref=""
hz=$(getconf CLK_TCK)
for q in $ACTIVE_ROWS; do
	c0=$(($(cpu_ticks "$PID_A") + $(cpu_ticks "$PID_B")))
	f0=$(($(frames "$NS_A" "$IF_A") + $(frames "$NS_B" "$IF_B")))
	perftest ib_write_bw 64 -q "$q" -D "$DURATION" --report_gbits
	c1=$(($(cpu_ticks "$PID_A") + $(cpu_ticks "$PID_B")))
	f1=$(($(frames "$NS_A" "$IF_A") + $(frames "$NS_B" "$IF_B")))
	per=$(awk -v c=$((c1 - c0)) -v f=$((f1 - f0)) -v hz="$hz" \
		'BEGIN { if (f > 0) printf "%.2f", c / hz / (f / 1e6); else print "n/a" }')
	[ "$q" = 16 ] && ref=$per
	printf '%-12s %12s %14s %16s %8s\n' "$q" "$(field "$tmp/ib_write_bw-64" 5)" $((f1 - f0)) "$per" \
		"$( [ -n "$ref" ] && ratio "$per" "$ref" || echo -)"
done
echo "  (CPU of both daemons over the frames both received and sent; machine load shows in it)"
exit 0
