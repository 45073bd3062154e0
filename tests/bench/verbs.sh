#!/usr/bin/env bash
# Unmodified perftest over xrxe, beside the raw limits of the same veth pair,
# all in one run: ib_write_bw / ib_read_bw / ib_send_bw at 64 B, 4 KiB and
# 64 KiB and ib_write_lat at 64 B (xrxed in each namespace, perftest through
# `xrxe run`), the AF_XDP blaster (4198-byte frames) and ping-pong (62-byte
# frames) through the I/O layer with no transport, kernel TCP (iperf3), and
# what one wake-up of a task on a CPU that a spinner holds costs (wake_cost).
# One veth pair at MTU 9000, so path MTU 4096. The ratios at the end are the
# point; the absolute numbers depend on the machine and on what else runs.
#
# Placement (2 vCPUs; every xrxed busy-polls while it has work, perftest spins
# on its CQ or buffer): see VERBS_CPUS below and docs/performance.md. The
# crossed default is the best case of a 2-core box; the same daemons then run
# ib_write_bw, ib_send_bw 64 B and ib_write_lat "one core per host" (each
# side's daemon and perftest on one CPU, as on a host or a 1-vCPU VM), with
# the ratios to the crossed rows. Every bandwidth row gives the CPU seconds
# per GB moved (both daemons and both perftest processes, from /proc and
# wait4), and the 64 B rows are compared with the blaster at 62 B frames.
#
# Environment:
#   BENCH_DURATION=S    seconds per bandwidth run and per blast (default 3)
#   VERBS_LAT_ITERS=N   ib_write_lat iterations (default 20000)
#   VERBS_CPUS="DA DB S C"  CPUs of xrxed A, xrxed B, the perftest server (in B)
#                       and client (in A); "-" leaves one unpinned. The one-core
#                       placement is "DA DB DB DA" (skipped if one is "-")
#   VERBS_ONECORE=0     skip the one-core placement
#   VERBS_REPEAT=N      run the perftest rows N times back to back (same
#                       daemons, baselines once) and print the median of each
#                       and its spread: the largest distance of a run from
#                       the median, in % of the median (default 1)
#   VERBS_NICE=N        nice value of both daemons (default -10; 0 = as started)
#   VERBS_XRXED_OPTS="..."  extra xrxed options for both daemons, e.g.
#                       "--rt-priority 10" or "--rexmit fixed"
#   VERBS_ONLY=lat      only the latency rows and the raw ping-pong (no
#                       blasts, iperf3 or bandwidth rows): a ~20 s run for
#                       comparing daemon builds minute by minute
#   VERBS_ONLY=small    only the 64 B ib_write_bw and ib_send_bw rows (crossed)
#                       beside the blaster at 62 B frames: issue 16's two
#                       packet-rate ratios in ~15 s per repetition
#   VERBS_SCHED_TRACE=1 record the scheduler (perf sched) for 0.5 s of each
#                       ib_write_lat row and print how often the daemons were
#                       woken, by whom, and how long a ready daemon waited for
#                       its CPU (make VERBS_LAT_ITERS large enough that the
#                       row lasts 2 s or more)
#   VERBS_DIAG=1        after the tables, one line per bandwidth run: the CPU
#                       share each daemon and perftest process got, the
#                       daemons' sleeps, idle yields (and how many let
#                       another task run or took >= 200 us), frames sent per
#                       message and involuntary context switches
#                       (tests/bench/verbs_diag.py says what each field is):
#                       what a slow run did differently from a fast one
#   VERBS_NAPI_THREADED=1  threaded NAPI on both veth ends
#   VERBS_PING_COUNT=N  raw ping-pong round trips (default 20000)
#   VERBS_XRXED=PATH    the xrxed binary (default $BUILD/bin/xrxed), e.g. an
#                       older build to alternate with
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/netns.sh
P=$PWD/$BUILD/tests/net/xskprobe
XRXED=${VERBS_XRXED:-$PWD/$BUILD/bin/xrxed}
XRXE=$PWD/$BUILD/bin/xrxe
RUN=("$XRXE" run --)
DURATION=${BENCH_DURATION:-3}
LAT_ITERS=${VERBS_LAT_ITERS:-20000}
# Default placement: each daemon shares a core with the *other* side's
# perftest process ("crossed"). Measured alternatives are in
# docs/performance.md.
read -r CPU_DA CPU_DB CPU_S CPU_C <<<"${VERBS_CPUS:-0 1 0 1}"
CROSSED="$CPU_DA $CPU_DB $CPU_S $CPU_C"
ONECORE="$CPU_DA $CPU_DB $CPU_DB $CPU_DA"
[ "${VERBS_ONECORE:-1}" != 0 ] && [ "$CPU_DA" != - ] && [ "$CPU_DB" != - ] || ONECORE=
REPEAT=${VERBS_REPEAT:-1}
DIAG=${VERBS_DIAG:-0}
ONLY=${VERBS_ONLY:-}
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
# blast SIZE: A->B for DURATION s at SIZE-byte frames; the sender's and the
# receiver's reports in $tmp/tx-SIZE and $tmp/rx-SIZE.
blast() {
	ns_bg "$NS_B" "$P" rx "$IF_B" --cpu 1 --spin --idle 1 --timeout $((DURATION + 20)) \
		--rx-ring 8192 --ready-file "$tmp/ready" >"$tmp/rx-$1" 2>&1
	local rxpid=$NETNS_LAST_PID
	netns_wait_file "$tmp/ready" 5
	ns_exec "$NS_A" "$P" blast "$IF_A" --size "$1" --duration "$DURATION" --cpu 0 \
		--addrs "$ADDRS" >"$tmp/tx-$1" 2>&1
	wait "$rxpid"
	rm -f "$tmp/ready"
}
if [ "$ONLY" != lat ] && [ "$ONLY" != small ]; then
blast 4200
RAW_FRAME=$(val gen_frame_len "$tmp/tx-4200")
RAW_MPPS=$(val rx_mpps "$tmp/rx-4200")
RAW_GBPS=$(val rx_gbps "$tmp/rx-4200")
fi
if [ "$ONLY" != lat ]; then
# the packet rate the 64 B rows are held against (62-byte frames)
blast 64
SMALL_FRAME=$(val gen_frame_len "$tmp/tx-64")
SMALL_MPPS=$(val rx_mpps "$tmp/rx-64")
fi

if [ "$ONLY" != small ]; then
# Both ends bounded: on a loaded machine 20,000 round trips can outlast a
# pong that stopped, and ping waits a second for each echo that never comes.
ns_bg "$NS_B" "$P" pong "$IF_B" --spin --cpu 1 --timeout 150 \
	--ready-file "$tmp/ready" >"$tmp/pong" 2>&1
pongpid=$NETNS_LAST_PID
netns_wait_file "$tmp/ready" 5
ns_exec "$NS_A" timeout 120 "$P" ping "$IF_A" --spin --cpu 0 --count "${VERBS_PING_COUNT:-20000}" --size 64 \
	--addrs "$ADDRS" >"$tmp/ping" 2>&1
kill "$pongpid" 2>/dev/null
wait "$pongpid" 2>/dev/null
rm -f "$tmp/ready"
PING_FRAME=$(val gen_frame_len "$tmp/ping")
RTT_P50=$(val rtt_p50_us "$tmp/ping")
RTT_P99=$(val rtt_p99_us "$tmp/ping")
HALF_P50=$(ratio "$RTT_P50" 2)
HALF_P99=$(ratio "$RTT_P99" 2)
fi

# What one wake-up of a task on cpu1 costs while a spinner holds that CPU:
# the floor under each hop of ib_write_lat, whose receiving daemon sleeps
# (docs/performance.md, "Where a round trip of ib_write_lat goes").
WAKE_P10=n/a WAKE_P50=n/a
if [ "$ONLY" != small ] && [ -x "$BUILD/tests/bench/wake_cost" ] &&
	"$BUILD/tests/bench/wake_cost" --count 500 --spin >"$tmp/wake" 2>&1; then
	WAKE_P10=$(val wake_p10_us "$tmp/wake")
	WAKE_P50=$(val wake_p50_us "$tmp/wake")
fi

TCP=n/a
if [ -z "$ONLY" ] && command -v iperf3 >/dev/null; then
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

# VERBS_NAPI_THREADED=1: both veth ends receive in a NAPI kthread instead of
# inline in the sender's sendto() (per device, gone with the namespaces; a
# veth has NAPI instances only once XDP is attached, so after the daemons).
if [ "${VERBS_NAPI_THREADED:-0}" = 1 ]; then
	ns_exec "$NS_A" sh -c "echo 1 >/sys/class/net/$IF_A/threaded" &&
		ns_exec "$NS_B" sh -c "echo 1 >/sys/class/net/$IF_B/threaded" ||
		echo "verbs bench: cannot set threaded NAPI on the veth pair"
fi
DAEMON_A=$(pgrep -f "^$XRXED .*$IF_A\$" | head -n 1)
DAEMON_B=$(pgrep -f "^$XRXED .*$IF_B\$" | head -n 1)
# cpu_ticks PID: user + system time of PID so far, in clock ticks (0 if gone).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
HZ=$(getconf CLK_TCK)
TIME=
[ -x /usr/bin/time ] && TIME=/usr/bin/time

PORT=18900
# diag_snap DIR WHEN: VERBS_DIAG's snapshot of both daemons (verbs_diag.py):
# their counters, CPU ticks and context switches, in DIR/WHEN.*.
ctxt() { awk '/^(non)?voluntary_ctxt_switches:/ { printf "%s ", $2 }' "/proc/$1/status" 2>/dev/null; }
diag_snap() {
	ns_exec "$NS_A" "$XRXE" stats "$IF_A" --json >"$1/$2.a.json" 2>/dev/null
	ns_exec "$NS_B" "$XRXE" stats "$IF_B" --json >"$1/$2.b.json" 2>/dev/null
	echo "$(cpu_ticks "$DAEMON_A") $(cpu_ticks "$DAEMON_B")" >"$1/$2.ticks"
	echo "$(ctxt "$DAEMON_A")$(ctxt "$DAEMON_B")" >"$1/$2.ctxt"
}
DIAG_RUN=0
# perftest NAME SIZE ARGS...: server in B on CPU_S, client in A on CPU_C; the
# client's result line ("#bytes #iterations ...") in $tmp/NAME-SIZE, empty on
# failure, and in $tmp/NAME-SIZE.cpu the CPU seconds of both daemons and both
# perftest processes while it ran (n/a without /usr/bin/time). With
# VERBS_DIAG=1 the run's snapshots and wall time go to $DIAG_DIR.
perftest() {
	local name=$1 size=$2 i a0 b0 t0
	shift 2
	local out=$tmp/$name-$size
	local -a TS=() TC=()
	PORT=$((PORT + 1))
	[ -n "$TIME" ] && TS=("$TIME" -o "$out.server.time" -f "%U %S %c %w")
	[ -n "$TIME" ] && TC=("$TIME" -o "$out.client.time" -f "%U %S %c %w")
	if [ "$DIAG" = 1 ]; then
		DIAG_RUN=$((DIAG_RUN + 1))
		DIAG_DIR=$tmp/diag/$DIAG_RUN
		mkdir -p "$DIAG_DIR"
		diag_snap "$DIAG_DIR" before
	fi
	t0=$(date +%s.%N)
	a0=$(cpu_ticks "$DAEMON_A")
	b0=$(cpu_ticks "$DAEMON_B")
	pin "$CPU_S"
	"${TS[@]}" ip netns exec "$NS_B" timeout 60 "${PIN[@]}" "${RUN[@]}" "$name" \
		-d "xrxe_$IF_B" -x 1 -s "$size" -F -p "$PORT" "$@" >"$out.server" 2>&1 &
	local spid=$!
	for i in $(seq 200); do
		ns_exec "$NS_B" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	pin "$CPU_C"
	"${TC[@]}" ip netns exec "$NS_A" timeout 60 "${PIN[@]}" "${RUN[@]}" "$name" \
		-d "xrxe_$IF_A" -x 1 -s "$size" -F -p "$PORT" "$@" "$IP4_B" >"$out.client" 2>&1
	wait "$spid"
	if [ "$DIAG" = 1 ]; then
		diag_snap "$DIAG_DIR" after
		echo "$t0 $(date +%s.%N)" >"$DIAG_DIR/wall"
		cp "$out.server.time" "$DIAG_DIR/server.time" 2>/dev/null
		cp "$out.client.time" "$DIAG_DIR/client.time" 2>/dev/null
	fi
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$out.client" | tail -n 1 >"$out"
	if [ -n "$TIME" ]; then
		awk -v d="$(( $(cpu_ticks "$DAEMON_A") - a0 + $(cpu_ticks "$DAEMON_B") - b0 ))" \
			-v hz="$HZ" '{ s += $1 + $2 } END { if (NR == 2) printf "%.3f\n", s + d / hz }' \
			"$out.server.time" "$out.client.time" >"$out.cpu"
	fi
}
# field FILE N: the Nth column of a result line, or n/a.
field() {
	local v
	v=$(awk -v n="$2" '{ print $n }' "$1" 2>/dev/null)
	echo "${v:-n/a}"
}

# place "DA DB S C": move the daemons (all their threads) and set where the
# perftest processes go.
place() {
	read -r CPU_DA CPU_DB CPU_S CPU_C <<<"$1"
	[ "$CPU_DA" = - ] || taskset -a -p -c "$CPU_DA" "$DAEMON_A" >/dev/null
	[ "$CPU_DB" = - ] || taskset -a -p -c "$CPU_DB" "$DAEMON_B" >/dev/null
}

# Results: $tmp/res/PLACEMENT/ROW holds one line per run: "Gbit/s Mpps CPU-s/GB"
# for bandwidth rows, "typical p99" (us) for latency rows.
mkdir -p "$tmp/res/crossed" "$tmp/res/onecore"
# bw_row PLACEMENT NAME SIZE: one bandwidth run, appended to its results.
bw_row() {
	local f=$tmp/$2-$3 gb=n/a
	perftest "$2" "$3" -D "$DURATION" --report_gbits
	# CPU seconds per GB moved: #iterations x size bytes
	if [ -s "$f.cpu" ] && [ -s "$f" ]; then
		gb=$(awk -v c="$(cat "$f.cpu")" '{ b = $1 * $2 / 1e9; if (b > 0) printf "%.2f\n", c / b; else print "n/a" }' "$f")
	fi
	echo "$(field "$f" 4) $(field "$f" 5) $gb" >>"$tmp/res/$1/$2-$3"
	[ "$DIAG" = 1 ] && echo "$1 $2-$3 $DIAG_DIR $(field "$f" 2) $(field "$f" 5)" >>"$tmp/diag/runs"
}
# sched_trace PLACEMENT: in the background, once the ib_write_lat client
# runs, record the scheduler's events on every CPU for SCHED_TRACE_S seconds
# into $tmp/sched-PLACEMENT.data (VERBS_SCHED_TRACE=1; needs perf).
SCHED_TRACE_S=0.5
sched_trace() {
	local i
	for i in $(seq 200); do
		pgrep -f "ib_write_lat -d xrxe_$IF_A" >/dev/null && break
		sleep 0.05
	done
	sleep 1
	perf sched record -a -o "$tmp/sched-$1.data" -- sleep "$SCHED_TRACE_S" >/dev/null 2>&1
}
# sched_report PLACEMENT: what the trace says about the daemons: how often
# they were woken and by whom (the peer daemon: its sendto() delivered a
# frame; perftest: a doorbell), and how long a daemon that was ready to run
# waited for its CPU ("sch delay" of perf sched timehist: from the wake-up,
# or from being preempted, to running).
sched_report() {
	local data=$tmp/sched-$1.data
	[ -s "$data" ] || { echo "  sched trace ($1): none recorded"; return; }
	perf sched timehist -w -i "$data" 2>/dev/null >"$data.txt"
	# ms -> us, sorted: the delays of the two daemons' runs
	awk -v a="xrxed[$DAEMON_A]" -v b="xrxed[$DAEMON_B]" \
		'($3 == a || $3 == b) && $5 ~ /^[0-9.]+$/ { print $5 * 1000 }' "$data.txt" |
		sort -g >"$data.delays"
	awk -v a="xrxed[$DAEMON_A]" -v b="xrxed[$DAEMON_B]" -v s="$SCHED_TRACE_S" \
	    -v avg="$(field "$tmp/ib_write_lat-64" 6)" -v pl="$1" -v dl="$data.delays" '
		$4 == "awakened:" && ($5 == a || $5 == b) {
			if ($3 == a || $3 == b) frame++; else if ($3 ~ /^ib_write_lat/) bell++; else other++ }
		END {
			while ((getline x <dl) > 0) d[++n] = x
			w = frame + bell + other
			rtt = avg ~ /^[0-9.]+$/ && avg > 0 ? s * 1e6 / (2 * avg) : 0
			printf "  sched trace (%s, %.1f s): %d daemon wake-ups (%d by the peer daemon'"'"'s frame, %d by a doorbell, %d other)", pl, s, w, frame, bell, other
			if (rtt) printf ", %.2f per round trip at the row'"'"'s average latency", w / rtt
			p90 = int(n * 0.9); if (p90 < 1) p90 = 1
			printf "\n  daemon ready -> running: median %.1f us, p90 %.1f us over %d runs\n", n ? d[int((n + 1) / 2)] : 0, n ? d[p90] : 0, n
		}' "$data.txt"
}
lat_row() {
	local tp=
	if [ "${VERBS_SCHED_TRACE:-0}" = 1 ] && command -v perf >/dev/null; then
		sched_trace "$1" &
		tp=$!
	fi
	perftest ib_write_lat 64 -n "$LAT_ITERS"
	[ -n "$tp" ] && wait "$tp"
	echo "$(field "$tmp/ib_write_lat-64" 5) $(field "$tmp/ib_write_lat-64" 8)" \
		>>"$tmp/res/$1/ib_write_lat-64"
	[ -n "$tp" ] && sched_report "$1" >>"$tmp/sched-report"
}

for _ in $(seq "$REPEAT"); do
	place "$CROSSED"
	if [ "$ONLY" = small ]; then
		bw_row crossed ib_write_bw 64
		bw_row crossed ib_send_bw 64
		continue
	fi
	if [ "$ONLY" != lat ]; then
		for t in ib_write_bw ib_read_bw ib_send_bw; do
			for size in 64 4096 65536; do
				bw_row crossed "$t" "$size"
			done
		done
	fi
	lat_row crossed
	[ -n "$ONECORE" ] || continue
	place "$ONECORE"
	if [ "$ONLY" != lat ]; then
		for size in 64 4096 65536; do
			bw_row onecore ib_write_bw "$size"
		done
		bw_row onecore ib_send_bw 64
	fi
	lat_row onecore
done

# med PLACEMENT ROW COLUMN: the median of a column over the runs (n/a when a
# run failed); spread PLACEMENT ROW COLUMN: the largest distance of a run
# from it, in % of it.
med() {
	awk -v c="$3" '{ print $c }' "$tmp/res/$1/$2" 2>/dev/null | sort -g |
		awk '!/^[0-9.]+$/ { bad = 1 } { v[NR] = $1 }
		END { if (!NR || bad) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2];
		      else printf "%.4g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
spread() {
	local m
	m=$(med "$@")
	awk -v c="$3" -v m="$m" '$c !~ /^[0-9.]+$/ || m !~ /^[0-9.]+$/ || m + 0 == 0 { bad = 1; next }
		{ d = ($c - m) / m; if (d < 0) d = -d; if (d > x) x = d }
		END { if (bad || !NR) print "n/a"; else printf "%.1f\n", 100 * x }' "$tmp/res/$1/$2"
}
SP=
[ "$REPEAT" -gt 1 ] && SP=$(printf '%9s' "spread %")
# bw_print PLACEMENT ROW LABEL
bw_print() {
	printf '%-34s %12s %10s %9s' "  $3" "$(med "$1" "$2" 1)" "$(med "$1" "$2" 2)" "$(med "$1" "$2" 3)"
	[ -n "$SP" ] && printf ' %8s' "$(spread "$1" "$2" 1)"
	echo
}

# diag_print: VERBS_DIAG's lines, one per bandwidth run in the order run.
diag_print() {
	local pl row dir msgs mpps t0 t1
	[ "$DIAG" = 1 ] && [ -s "$tmp/diag/runs" ] || return 0
	printf '\nper run (VERBS_DIAG; fields in tests/bench/verbs_diag.py)\n'
	while read -r pl row dir msgs mpps; do
		read -r t0 t1 <"$dir/wall"
		printf '  %-8s %-16s %7s Mpps | %s\n' "$pl" "$row" "$mpps" \
			"$(python3 tests/bench/verbs_diag.py "$dir" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
				"$([[ $msgs =~ ^[0-9]+$ ]] && echo "$msgs" || echo 0)" "$HZ")"
	done <"$tmp/diag/runs"
}

[ "$REPEAT" -gt 1 ] && echo "perftest rows: median of $REPEAT runs back to back (same daemons)"
if [ "$ONLY" = small ]; then
	printf '%-34s %12s %10s %9s%s\n' "perftest over xrxe (RC, -F)" "BW Gbit/s" "Mpps" "CPU s/GB" "$SP"
	bw_print crossed ib_write_bw-64 "ib_write_bw -s 64"
	bw_print crossed ib_send_bw-64 "ib_send_bw -s 64"
	printf '%-34s %12s %10s\n' "  blast A->B, ${SMALL_FRAME:-?} B frames" "" "${SMALL_MPPS:-n/a}"
	printf '%-58s %7s%% %8s\n' "  64 B ib_write_bw / raw AF_XDP packet rate (62 B frames)" \
		"$(ratio "$(med crossed ib_write_bw-64 2)" "${SMALL_MPPS:-}" 100)" ">= 80%"
	printf '%-58s %7s%% %8s\n' "  64 B ib_send_bw / raw AF_XDP packet rate (62 B frames)" \
		"$(ratio "$(med crossed ib_send_bw-64 2)" "${SMALL_MPPS:-}" 100)" ">= 60%"
	diag_print
	exit 0
fi
if [ "$ONLY" != lat ]; then
printf '%-34s %12s %10s %9s%s\n' "perftest over xrxe (RC, -F)" "BW Gbit/s" "Mpps" "CPU s/GB" "$SP"
for t in ib_write_bw ib_read_bw ib_send_bw; do
	for size in 64 4096 65536; do
		bw_print crossed "$t-$size" "$t -s $size"
	done
done
fi
if [ -n "$ONECORE" ] && [ "$ONLY" != lat ]; then
	echo "one core per host: xrxed A + client cpu $CPU_DA, xrxed B + server cpu $CPU_DB"
	for size in 64 4096 65536; do
		bw_print onecore "ib_write_bw-$size" "ib_write_bw -s $size"
	done
	bw_print onecore ib_send_bw-64 "ib_send_bw -s 64"
fi

LAT_TYP=$(med crossed ib_write_lat-64 1)
LAT_P99=$(med crossed ib_write_lat-64 2)
printf '\n%-34s %12s %10s%s\n' "latency (one way = RTT/2)" "typical us" "p99 us" "$SP"
printf '%-34s %12s %10s' "  ib_write_lat -s 64 -n $LAT_ITERS" "$LAT_TYP" "$LAT_P99"
[ -n "$SP" ] && printf ' %18s' "$(spread crossed ib_write_lat-64 1)"
echo
if [ -n "$ONECORE" ]; then
	printf '%-34s %12s %10s' "  the same, one core per host" "$(med onecore ib_write_lat-64 1)" \
		"$(med onecore ib_write_lat-64 2)"
	[ -n "$SP" ] && printf ' %18s' "$(spread onecore ib_write_lat-64 1)"
	echo
fi
printf '%-34s %12s %10s\n' "  raw AF_XDP ${PING_FRAME:-?} B, half RTT" "$HALF_P50" "$HALF_P99"
printf '%-34s %12s %10s\n' "  wake-up into a busy CPU" "p10 $WAKE_P10" "p50 $WAKE_P50"
[ -s "$tmp/sched-report" ] && cat "$tmp/sched-report"

WRITE64K=$(med crossed ib_write_bw-65536 1)
printf '\n%-34s %12s %10s\n' "raw AF_XDP and kernel baselines" "Gbit/s" "Mpps"
printf '%-34s %12s %10s\n' "  blast A->B, ${RAW_FRAME:-?} B frames" "${RAW_GBPS:-n/a}" "${RAW_MPPS:-n/a}"
printf '%-34s %12s %10s\n' "  blast A->B, ${SMALL_FRAME:-?} B frames" "" "${SMALL_MPPS:-n/a}"
printf '%-34s %12s\n' "  iperf3 TCP, 1 stream" "$TCP"

r_bw=$(ratio "$WRITE64K" "${RAW_GBPS:-}" 100)
r_lat=$(ratio "$LAT_TYP" "$HALF_P50")
printf '\n%-58s %8s %8s\n' "ratios (same run)" "value" "target"
printf '%-58s %7s%% %8s\n' "  64 KiB ib_write_bw / raw AF_XDP byte rate (4198 B frames)" "$r_bw" ">= 70%"
printf '%-58s %7s%% %8s\n' "  64 B ib_write_bw / raw AF_XDP packet rate (62 B frames)" \
	"$(ratio "$(med crossed ib_write_bw-64 2)" "${SMALL_MPPS:-}" 100)" ">= 80%"
printf '%-58s %7s%% %8s\n' "  64 B ib_send_bw / raw AF_XDP packet rate (62 B frames)" \
	"$(ratio "$(med crossed ib_send_bw-64 2)" "${SMALL_MPPS:-}" 100)" ">= 60%"
printf '%-58s %7sx %8s\n' "  ib_write_lat 64 B typical / raw AF_XDP half RTT 64 B" "$r_lat" "<= 3x"
printf '%-58s %7sx\n' "  ib_write_lat 64 B p99 / raw AF_XDP half RTT p99" "$(ratio "$LAT_P99" "$HALF_P99")"
printf '%-58s %7s%%\n' "  64 KiB ib_write_bw / kernel TCP" "$(ratio "$WRITE64K" "$TCP" 100)"
if [ -n "$ONECORE" ]; then
	for size in 64 4096 65536; do
		printf '%-58s %7s%% %8s\n' "  one core / crossed: ib_write_bw -s $size" \
			"$(ratio "$(med onecore "ib_write_bw-$size" 1)" "$(med crossed "ib_write_bw-$size" 1)" 100)" \
			">= $([ "$size" = 65536 ] && echo 85 || echo 50)%"
	done
	printf '%-58s %7s%%\n' "  one core / crossed: ib_send_bw -s 64" \
		"$(ratio "$(med onecore ib_send_bw-64 1)" "$(med crossed ib_send_bw-64 1)" 100)"
	printf '%-58s %7sx %8s\n' "  one core / crossed: ib_write_lat typical" \
		"$(ratio "$(med onecore ib_write_lat-64 1)" "$LAT_TYP")" "<= 1.3x"
fi
read -r CPU_DA CPU_DB CPU_S CPU_C <<<"$CROSSED"
echo "placement: xrxed A cpu $CPU_DA, xrxed B cpu $CPU_DB (nice $NICE), perftest server (B) cpu $CPU_S, client (A) cpu $CPU_C; raw probes: sender cpu 0, receiver cpu 1"
diag_print
