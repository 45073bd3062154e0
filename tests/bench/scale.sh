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
#     within 20 % from 16 to 4 096). Both counters are sampled while the
#     test runs and only the intervals the writes flowed in count: creating
#     and destroying 4 096 QPs per side costs the daemons more CPU than
#     seconds of traffic on a loaded box, and it is not per-packet work. The
#     rate is daemon A's transmitted frames per second over the same
#     intervals, not perftest's: perftest counts a QP's writes cq_mod (100)
#     at a time, when their signalled completion arrives, and the daemons
#     serve QPs in turn (at most 64 packets each), so with 4 096 QPs its
#     count moves in steps of 409 600 writes -- more than this machine moves
#     in a short run, which perftest reported as 0;
#   - 65 536 connected RC QPs in one application per side (one connection to
#     each daemon): the time to create, connect and destroy them (as
#     rc_scale times them), the daemon's RSS growth per 1 000 connected QPs and
#     its mappings, and the time the daemons take to release all of it after
#     the applications are killed (-9).
# Rings are carved from per-connection slabs (src/daemon/ring_slab.c), so the
# daemon needs a few hundred mappings, not two per QP: all of it runs within
# the kernel's default vm.max_map_count (65 530), which the bench leaves alone.
#
# The daemons and perftest are placed as tests/bench/verbs.sh's default
# ("crossed": daemon A and the perftest server on cpu0, daemon B and the client
# on cpu1; unpinned on one CPU), a warm-up ib_write_bw runs before the first
# row, and every perftest row runs SCALE_REPEAT times (default 3): the table
# prints each row's median and the spread (the largest distance of a run from
# the median, % of the median). One run per row on fresh daemons made the
# first row the slowest by up to 2x, and even medians drifted by more than 10 %
# between rows minutes apart, so each idle row is compared with a 0-idle row
# measured right before it: docs/performance.md, "The scale bench's rows".
#
#   SCALE_IDLE="1024 16384 65536" SCALE_ACTIVE="1 16 256 4096" SCALE_MAX_QPS=65536
#   SCALE_REPEAT=3 BENCH_DURATION=3
# (an empty SCALE_IDLE or SCALE_ACTIVE, or SCALE_MAX_QPS=0, leaves that part out:
#  SCALE_IDLE= SCALE_MAX_QPS=0 runs the active-QP rows only)
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/netns.sh
XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
PROG=$PWD/$BUILD/tests/verbs/rc_scale
RUN=("$XRXE" run --)
DURATION=${BENCH_DURATION:-3}
IDLE_ROWS=${SCALE_IDLE-1024 16384 65536}
ACTIVE_ROWS=${SCALE_ACTIVE-1 16 256 4096}
CHUNK=16384 # idle QPs per holding application
REPEAT=${SCALE_REPEAT:-3}

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

MAX_QPS=${SCALE_MAX_QPS:-65536}

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

# crossed placement, as tests/bench/verbs.sh (none on one CPU)
PIN_S=() PIN_C=()
if [ "$(nproc)" -ge 2 ]; then
	taskset -a -p -c 0 "$PID_A" >/dev/null && taskset -a -p -c 1 "$PID_B" >/dev/null
	PIN_S=(taskset -c 0) PIN_C=(taskset -c 1)
fi

ratio() { awk -v a="$1" -v b="$2" -v m="${3:-1}" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", m * a / b; else print "n/a" }'; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
maps_count() { wc -l <"/proc/$1/maps" 2>/dev/null || echo 0; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
objects() {
	ns_exec "$1" "$XRXE" stats "$2" --json 2>/dev/null | python3 -c '
import json, sys
t = json.load(sys.stdin)["daemon"]["transport"]
print(sum(t[k] for k in ("qps", "cqs", "mrs", "pds", "ahs")))'
}
# link PID IFACE: packets received and sent by IFACE in the namespace of PID,
# from /proc (no process: the sampler below reads it 5 times a second, and an
# `xrxe stats` call takes up to a second on a loaded box). The daemons' frames
# are these: the two ends of one veth pair, with nothing else on them but the
# perftest's TCP exchange and ARP (the daemons' rx_ok + tx_frames and these
# counters differ by a few hundred frames in a million).
link() { awk -v i="$2:" '$1 == i { print $3, $11 }' "/proc/$1/net/dev" 2>/dev/null || echo 0 0; }
# The RoCE frames are the link's less the namespace's TCP segments
# (/proc/PID/net/snmp): perftest's exchange of QP numbers is TCP over the same
# link, and with 4 096 QPs it runs while both daemons create and connect 4 096
# QPs each -- seconds of CPU with a few TCP frames in every interval, which
# counted as intervals "the frames flowed in".

PORT=19300
# perftest NAME SIZE ARGS...: server in B, client in A; the client's result line
perftest() {
	local name=$1 size=$2 i
	shift 2
	local out=$tmp/$name-$size
	PORT=$((PORT + 1))
	ns_exec "$NS_B" timeout 120 "${PIN_S[@]}" "${RUN[@]}" "$name" -d "xrxe_$IF_B" -x 1 -s "$size" -F \
		-p "$PORT" "$@" >"$out.server" 2>&1 &
	local spid=$!
	for i in $(seq 200); do
		ns_exec "$NS_B" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	ns_exec "$NS_A" timeout 120 "${PIN_C[@]}" "${RUN[@]}" "$name" -d "xrxe_$IF_A" -x 1 -s "$size" -F \
		-p "$PORT" "$@" "$IP4_B" >"$out.client" 2>&1
	wait "$spid"
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$out.client" | tail -n 1 >"$out"
}
field() {
	local v
	v=$(awk -v n="$2" '{ print $n }' "$1" 2>/dev/null)
	echo "${v:-n/a}"
}
# median V...: the median of the numeric values (n/a when none); spread V...:
# the largest distance of one from their median, in % of it
median() {
	printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '{ v[++n] = $1 }
		END { if (!n) print "n/a"; else print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}
spread() {
	local m
	m=$(median "$@")
	printf '%s\n' "$@" | awk -v m="$m" '/^[0-9.]+$/ && m > 0 { d = ($1 > m ? $1 - m : m - $1) / m * 100; if (d > s) s = d }
		END { printf "%.0f\n", s }'
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
			# a holder that stopped (an error) will never print HOLDING
			kill -0 "${HOLDERS[-1]}" 2>/dev/null && kill -0 "${HOLDERS[-2]}" 2>/dev/null || break
			sleep 0.1
		done
		if ! grep -q HOLDING "$tmp/hold-a-$k.log" || ! grep -q HOLDING "$tmp/hold-b-$k.log"; then
			echo "scale bench: could not hold $n idle QPs:"
			tail -n 3 "$tmp"/hold-*-"$k".log
			return 1
		fi
		left=$((left - c))
	done
	[ "$n" -gt 0 ] || true
}
# hold_one N: N connected QPs in one application per side
hold_one() {
	local save=$CHUNK rc
	CHUNK=$1
	hold "$1"
	rc=$?
	CHUNK=$save
	return $rc
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

# rc_time LOG WHAT: the seconds rc_scale printed for "N QPs WHAT in S s"
rc_time() { grep -o "QPs $2 in [0-9.]* s" "$1" 2>/dev/null | awk '{ print $4 }' | head -n 1; }

if [ "$MAX_QPS" -gt 0 ]; then
echo "$MAX_QPS connected RC QPs in one application per side (vm.max_map_count $(cat /proc/sys/vm/max_map_count), load $(load))"
# held first, while the daemons are fresh: RSS counts the heap the QPs take
# (glibc keeps what a destroyed set freed, and the next set reuses it)
rss0=$(rss_kib "$PID_A") maps0=$(maps_count "$PID_A")
if hold_one "$MAX_QPS"; then
	rss1=$(rss_kib "$PID_A") maps1=$(maps_count "$PID_A")
	echo "  daemon A held $MAX_QPS connected QPs: RSS $rss0 -> $rss1 KiB, $(((rss1 - rss0) * 1000 / MAX_QPS)) KiB per 1000 QPs; mappings $maps0 -> $maps1"
	t0=$(date +%s.%N) c0=$(cpu_ticks "$PID_A")
	kill -9 "${HOLDERS[@]}" 2>/dev/null
	for p in "${HOLDERS[@]}"; do wait "$p" 2>/dev/null; done
	# the connection's teardown ends with its slabs: daemon A's mappings back
	# where they were (polled every 10 ms; `xrxe stats` below is slower)
	for _ in $(seq 12000); do [ "$(maps_count "$PID_A")" -le "$maps0" ] && break; sleep 0.01; done
	echo "  killed -9 with $MAX_QPS QPs: daemon A's mappings back to $(maps_count "$PID_A") after $(since "$t0") s, $(awk -v t=$(($(cpu_ticks "$PID_A") - c0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }') CPU s of the daemon (load $(load))"
	if release; then
		echo "  both daemons report 0 objects after $(since "$t0") s"
	else
		echo "  killed -9 with $MAX_QPS QPs each: the daemons did not release everything"
	fi
fi
ns_exec "$NS_B" timeout 900 "${RUN[@]}" "$PROG" -d "xrxe_$IF_B" -p 19490 -n "$MAX_QPS" -k 64 \
	>"$tmp/max-b.log" 2>&1 &
spid=$!
ns_exec "$NS_A" timeout 900 "${RUN[@]}" "$PROG" -d "xrxe_$IF_A" -p 19490 -n "$MAX_QPS" -k 64 "$IP4_B" \
	>"$tmp/max-a.log" 2>&1
wait "$spid"
if grep -q "rc_scale: OK" "$tmp/max-a.log" && grep -q "rc_scale: OK" "$tmp/max-b.log"; then
	printf '  %-8s %10s %10s %10s   (seconds, side A / side B)\n' "" create connect destroy
	for side in a b; do
		printf '  %-8s %10s %10s %10s\n' "side $side" "$(rc_time "$tmp/max-$side.log" created)" \
			"$(rc_time "$tmp/max-$side.log" connected)" "$(rc_time "$tmp/max-$side.log" destroyed)"
	done
else
	echo "  $MAX_QPS QPs failed:"
	tail -n 3 "$tmp/max-a.log" "$tmp/max-b.log"
fi
echo
fi

# the two tables' columns, for their headers and their rows
IDLE_FMT='%-10s %10s %10s %12s %12s %8s %8s %8s %8s   %s\n'
ACTIVE_FMT='%-12s %12s %14s %16s %8s %9s\n'
[ -n "${IDLE_ROWS// /}" ] &&
	echo "one active QP beside idle connected RC QPs (ratios to the 0-idle row measured just before, aim within 10 %)"
[ -n "${IDLE_ROWS// /}" ] &&
	printf "$IDLE_FMT" "idle QPs" "lat typ" "lat p99" \
	"bw 64B Mpps" "bw 64K Gb/s" "typ" "p99" "64B" "64K" "spread %"
[ -n "${IDLE_ROWS// /}" ] &&
	echo "(median of $REPEAT runs per row; spread: lat typ/p99/64B/64K; after a warm-up ib_write_bw)"
# Fresh daemons and a first perftest: not what the rows compare.
[ -n "${IDLE_ROWS// /}${ACTIVE_ROWS// /}" ] && perftest ib_write_bw 64 -D 1
RSS_NOTE="" CREATE_NOTE="" RELEASE_NOTE=""
# measure: the three perftest rows REPEAT times; their medians in lt lp b64
# b64k and the spreads in SPREAD
measure() {
	local LT=() LP=() B64=() B64K=()
	for _ in $(seq "$REPEAT"); do
		perftest ib_write_lat 64 -n 5000
		LT+=("$(field "$tmp/ib_write_lat-64" 5)") LP+=("$(field "$tmp/ib_write_lat-64" 8)")
		perftest ib_write_bw 64 -D "$DURATION" --report_gbits
		B64+=("$(field "$tmp/ib_write_bw-64" 5)")
		perftest ib_write_bw 65536 -D "$DURATION" --report_gbits
		B64K+=("$(field "$tmp/ib_write_bw-65536" 4)")
	done
	lt=$(median "${LT[@]}") lp=$(median "${LP[@]}") b64=$(median "${B64[@]}") b64k=$(median "${B64K[@]}")
	SPREAD="$(spread "${LT[@]}")/$(spread "${LP[@]}")/$(spread "${B64[@]}")/$(spread "${B64K[@]}")"
}
# row LABEL: print the last measure, with its ratios to base
row() {
	printf "$IDLE_FMT" "$1" "$lt" "$lp" "$b64" "$b64k" \
		"$(ratio "$lt" "${base[0]}")" "$(ratio "$lp" "${base[1]}")" \
		"$(ratio "$b64" "${base[2]}")" "$(ratio "$b64k" "${base[3]}")" "$SPREAD"
}
# Each idle row is compared with a 0-idle row measured just before it: this
# machine's speed drifts by more than 10 % over the minutes between rows
# (docs/performance.md, "The scale bench's rows"), so one 0-idle row at the
# start compared later rows with another machine.
for n in $IDLE_ROWS; do
	[ "$n" -gt 0 ] || continue
	measure
	base=("$lt" "$lp" "$b64" "$b64k")
	row "0"
	rss0=$(rss_kib "$PID_A")
	t0=$SECONDS
	if ! hold "$n"; then
		release
		continue
	fi
	CREATE_NOTE="$n QPs created and connected per side in $((SECONDS - t0)) s (wall, $(grep -ho 'created in [0-9.]* s' "$tmp"/hold-a-1.log | head -n 1), chunks of $CHUNK)"
	RSS_NOTE="daemon A RSS $rss0 -> $(rss_kib "$PID_A") KiB with $n idle QPs: $((($(rss_kib "$PID_A") - rss0) * 1000 / n)) KiB per 1000 QPs"
	measure
	row "$n"
	t0=$SECONDS
	if release; then
		RELEASE_NOTE="$n QPs per side released by the daemons $((SECONDS - t0)) s after their applications were killed"
	else
		echo "scale bench: the daemons did not release the idle QPs"
	fi
done
[ -n "$RSS_NOTE" ] && echo "  $RSS_NOTE"
[ -n "$CREATE_NOTE" ] && echo "  $CREATE_NOTE"
[ -n "$RELEASE_NOTE" ] && echo "  $RELEASE_NOTE"

echo
echo "daemon CPU per packet with N active QPs (ib_write_bw -q N, 64 B; ratio to the 16-QP row, aim flat within 20 %)"
printf "$ACTIVE_FMT" "active QPs" "Mpps" "packets" "CPU s / Mpkt" "ratio" "spread %"
# sample FILE: until killed, a line every ~0.2 s: time, both daemons' CPU
# ticks, both daemons' RoCE frames (received + sent), daemon A's sent ones.
# One awk per sample reads all six files (the clock is bash's): the sampler
# runs at normal priority beside spinning daemons and perftests, and with a
# process per counter it managed a sample every few seconds at load 8.
sample() {
	while :; do
		awk -v t="$EPOCHREALTIME" -v ia="$IF_A:" -v ib="$IF_B:" '
			FNR == 1 { k++ }
			k <= 2 { c += $14 + $15 }
			k == 3 && $1 == ia { ra = $3; ta = $11 }
			k == 4 && $1 == ib { rb = $3; tb = $11 }
			k == 5 && $1 == "Tcp:" && $2 ~ /^[0-9]/ { sa = $11 + $12; oa = $12 }
			k == 6 && $1 == "Tcp:" && $2 ~ /^[0-9]/ { sb = $11 + $12 }
			END { printf "%s %d %d %d\n", t, c, ra + ta + rb + tb - sa - sb, ta - oa }' \
			"/proc/$PID_A/stat" "/proc/$PID_B/stat" "/proc/$PID_A/net/dev" \
			"/proc/$PID_B/net/dev" "/proc/$PID_A/net/snmp" "/proc/$PID_B/net/snmp" \
			>>"$1" 2>/dev/null
		sleep 0.2
	done
}
# traffic FILE: "Mpps packets CPU-s/Mpkt" over the intervals between samples in
# which frames flowed, less the first and the last of them (they may hold the
# end of the setup or the start of the teardown); "n/a ..." when none remains
traffic() {
	awk -v hz="$(getconf CLK_TCK)" '
		{ t[NR] = $1; c[NR] = $2; f[NR] = $3; a[NR] = $4 }
		END {
			for (i = 2; i <= NR; i++)
				if (f[i] > f[i - 1]) { if (!first) first = i; last = i }
			for (i = first + 1; first && i < last; i++)
				if (f[i] > f[i - 1]) { n++; dt += t[i] - t[i - 1]; dc += c[i] - c[i - 1]; df += f[i] - f[i - 1]; da += a[i] - a[i - 1] }
			if (!n || dt <= 0) print "n/a", df + 0, "n/a"
			else printf "%.6f %d %.2f\n", da / dt / 1e6, df, dc / hz / (df / 1e6)
		}' "$1"
}
ref=""
for q in $ACTIVE_ROWS; do
	MPPS=() PKTS=() PER=()
	for _ in $(seq "$REPEAT"); do
		: >"$tmp/samples-$q"
		sample "$tmp/samples-$q" &
		sampler=$!
		perftest ib_write_bw 64 -q "$q" -D "$DURATION" --report_gbits
		kill "$sampler" 2>/dev/null
		wait "$sampler" 2>/dev/null
		read -r mpps pkts per < <(traffic "$tmp/samples-$q")
		MPPS+=("$mpps") PKTS+=("$pkts") PER+=("$per")
	done
	mpps=$(median "${MPPS[@]}") pkts=$(median "${PKTS[@]}") per=$(median "${PER[@]}")
	[ "$q" = 16 ] && ref=$per
	printf "$ACTIVE_FMT" "$q" "$mpps" "$pkts" "$per" \
		"$( [ -n "$ref" ] && ratio "$per" "$ref" || echo -)" "$(spread "${PER[@]}")"
	if ! grep -q . "$tmp/ib_write_bw-64"; then
		echo "  ib_write_bw -q $q:"
		tail -n 3 "$tmp/ib_write_bw-64.client"
	fi
	# SCALE_STATS_DIR=DIR: both daemons' counters after each row (diagnosis)
	if [ -n "${SCALE_STATS_DIR:-}" ]; then
		ns_exec "$NS_A" "$XRXE" stats "$IF_A" >"$SCALE_STATS_DIR/stats-a-$q.txt" 2>&1
		ns_exec "$NS_B" "$XRXE" stats "$IF_B" >"$SCALE_STATS_DIR/stats-b-$q.txt" 2>&1
		cp "$tmp/ib_write_bw-64.client" "$SCALE_STATS_DIR/client-$q.txt"
		cp "$tmp/samples-$q" "$SCALE_STATS_DIR/samples-$q.txt"
	fi
done
echo "  (CPU of both daemons over the frames both received and sent while the writes flowed;"
echo "   Mpps: frames daemon A sent per second then; machine load $(load) shows in all of it)"
exit 0
