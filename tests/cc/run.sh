#!/usr/bin/env bash
# make bench-cc: the congestion-control experiments of docs/facts/dcqcn.md §4.2 on
# one host, each run with CC off and (when the daemon has it) on, in the same
# invocation. Not part of make test: minutes long, and the numbers depend on
# how busy the machine is.
#
#   tests/cc/run.sh [E1] [E2] [E4] [E6] [E7]   (default: all five)
#
#   E1  incast: 2, 4 and 8 RC QPs (two sender namespaces, half the QPs each)
#       into one receiver through the bottleneck
#   E2  convergence: QP A alone, QP B (other sender) joins at T/3 and leaves
#       at 2T/3
#   E4  random loss 0.1 % and 1 % at the bottleneck (xrxe-impair --loss)
#   E6  the NP's CNP limiter: every ECT packet marked (phantom rate 1 Mbit/s,
#       Kmin = Kmax = 0); CNPs per second against np_min_time_between_cnps
#   E7  pacing accuracy: one QP held at CC_PACING_RATES (100 250 500 Mbit/s)
#       by one CNP a second, htb out of the way; its frames at the router
#       against the set rate (tests/cc/pacing.py)
#
# Topology (tests/cc/topo.sh): sN -> router -> d, veths at MTU 9000; the
# router's egress toward d is htb at CC_RATE + a CC_QLIMIT byte FIFO, with
# xrxe-impair on the same egress marking ECN by DCQCN's CP rule on a phantom
# queue drained at CC_RATE and as deep as the FIFO (Kmin 16 KB, Kmax 64 KB,
# Pmax 20 %: CC_ECN below). perftest `ib_write_bw` (64 KiB WRITEs, --tclass=2
# so the data is ECT(0)) through the shim, as tests/net/verbs_rc.sh runs it.
#
# Per-QP rates are counted at the router by xrxe-impair --flows (bytes per
# source address + BTH DestQP, sampled every 10 ms by --watch, together with
# the phantom queue and the htb's own bytes/drops/backlog): one sampler
# sees every QP of every sender at the same instants, it works identically
# with CC off and on, and it measures what reaches the bottleneck, not what a
# daemon believes it sent. (Polling `xrxe qp --json` in every namespace every
# 10 ms would cost a process per sample per namespace on a 2-core machine.)
# The daemons' `xrxe qp --json` is still polled every 250 ms for
# retransmissions and, with CC, rates/CNPs.
#
# CC control (the contract of the daemon's CC work): `xrxe cc show IFACE`
# (exit 0 = CC present), `xrxe cc enable|disable IFACE`, `xrxe cc set IFACE
# name=value ...` (mlx5 names). Without it every "on" run is reported as
# "CC not available" and the "off" runs are today's behaviour.
#
# Environment: CC_RATE (1gbit), CC_QLIMIT (1mb), CC_DURATION seconds per run
# (4; E2 uses 1.5x); CC_PARAMS (DCQCN parameters of CC-on runs, below),
# CC_MODES ("off on"), CC_E1_QPS ("2 4 8"), CC_ECN (xrxe-impair marking
# options), CC_NICE (the daemons' nice level, -10), CC_RT (the receiver's and
# the senders' xrxed --rt-priority, "30 20"; empty: normal), CC_PERFTEST (extra
# ib_write_bw options), CC_PACING_RATES, CC_OUT (docs/cc: results.md + PNGs), CC_KEEP=1
# keeps the raw samples in CC_OUT/raw/.
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/netns.sh
source tests/cc/topo.sh

XRXED=$PWD/$BUILD/bin/xrxed
XRXE=${XRXE:-$PWD/$BUILD/bin/xrxe} # XRXE=...: another build (or a stand-in for tests of this script)
IMPAIR=$PWD/$BUILD/bin/xrxe-impair
RUN=("$XRXE" run --)
DUR=${CC_DURATION:-4}
OUT=${CC_OUT:-docs/cc}
ANALYZE=$PWD/tests/cc/analyze.py
MODES=${CC_MODES:-off on}      # CC_MODES=on: skip the CC-off runs while tuning
E1_QPS=${CC_E1_QPS:-2 4 8}
PACING_RATES=${CC_PACING_RATES:-100 250 500}
# Marking: Kmin 16 KB, Kmax 64 KB (Pmax: xrxe-impair's 20 %), i.e. four and
# sixteen 4 KiB frames. xrxe-impair's defaults (4 and 16 KB per Gbit/s, HPCC's
# profile for ~1 KB packets) put Kmin at one frame: two frames arriving
# together were marked and DCQCN held the link at 86-91 %. 16/64 KB gave
# 94-97 % with the queue still held (docs/cc/README.md, "Third round").
ECN_OPTS=${CC_ECN---ecn-kmin 16kb --ecn-kmax 64kb} # xrxe-impair marking options
DAEMON_NICE=${CC_NICE:--10}   # the xrxeds' nice level
# The xrxeds run as the NICs they stand for: under SCHED_FIFO (xrxed
# --rt-priority), the receiver above the senders. Three daemons, two
# busy-polling perftest clients and the router's softirq work share two cores
# here; at normal priority the receiver waited for a CPU half its time and read
# 7 % of frames 1-10 ms late, so its CNPs left as late as the 1 MB FIFO takes
# to fill (docs/cc/README.md, "Fourth round"). CC_RT="RX TX" sets the two
# priorities, CC_RT= runs every daemon at normal priority.
read -r RT_RX RT_TX <<<"${CC_RT-30 20}"
PERFTEST_OPTS=${CC_PERFTEST-}  # extra ib_write_bw options (client and server), e.g. -e
# DCQCN parameters for every CC-on run (CC_PARAMS= for NVIDIA's defaults),
# for the default CC_RATE of 1 Gbit/s (another rate: rp_max_rate = 1.2 x it).
# NVIDIA's defaults are tuned for a 100 Gbit/s NIC whose CNPs come every few
# microseconds; here the bottleneck is 1 Gbit/s, a 4 KiB frame takes 33 us
# on it and a QP's CNPs come every hundreds of us, on a shared 2-core host.
# Why each (docs/cc/README.md "Parameters" has the runs behind them):
#   rp_max_rate=1200 line_rate_pacing=1
#                           the senders' port runs at 1.2 Gbit/s: veth has no
#                           speed of its own (ethtool says 10 Gbit/s), so a QP
#                           at its ceiling burst whole 64 KiB messages at CPU
#                           speed into the 1 Gbit/s queue and was marked while
#                           it used 75 % of the link; 20 % above the
#                           bottleneck lets a sender catch up after a CPU stall
#                           and still leaves DCQCN a queue to resolve
#   rp_dce_tcp_rtt=50       alpha period = the DCQCN author's 50-55 us (ref
#   rp_dce_tcp_g=960        §1.7, g = 1/16 as in his ns-3): with 1 us and
#                           g = 5/1024 alpha decays in ~200 us, long before the
#                           next CNP, and every cut is ~0.3 %
#   rp_rate_reduce_monitor_period=50, np_min_time_between_cnps=50
#                           one cut / one CNP per alpha period (author: 50 us)
#   rp_ai_rate=1 rp_hai_rate=5 rp_threshold=5
#                           increase steps scaled to 1 Gbit/s (HPCC: AI, HAI
#                           ∝ bandwidth, 5/50 Mb/s at 25 G -> 0.2/2 at 1 G;
#                           1 Mb/s is the smallest step) and the paper's F = 5:
#                           NVIDIA's 5/50/F=1 recovers 8 QPs faster than the
#                           CNPs cut them and the FIFO overflows again
CC_PARAMS=${CC_PARAMS-rp_max_rate=1200 line_rate_pacing=1 rp_dce_tcp_rtt=50 rp_dce_tcp_g=960 rp_rate_reduce_monitor_period=50 np_min_time_between_cnps=50 rp_ai_rate=1 rp_hai_rate=5 rp_threshold=5}

if [ "$(id -u)" -ne 0 ]; then
	echo "bench-cc: needs root (namespaces, XDP, tc)"
	exit 1
fi
for f in "$XRXED" "$XRXE" "$IMPAIR" "$BUILD/lib/xrxe/libibverbs.so.1"; do
	[ -e "$f" ] || { echo "bench-cc: $f is not built (make)"; exit 1; }
done
command -v ib_write_bw >/dev/null || { echo "bench-cc: perftest is not installed (make deps)"; exit 1; }
HAVE_GNUPLOT=1
command -v gnuplot >/dev/null || { HAVE_GNUPLOT=0; echo "bench-cc: gnuplot not installed: no plots"; }

experiments=("$@")
[ ${#experiments[@]} -eq 0 ] && experiments=(E1 E2 E4 E6 E7)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
netns_tmpdir TMP
RATE_BPS=$(python3 -c '
import re, sys
m = re.fullmatch(r"([0-9.]+)([kmgt]?)bit", sys.argv[1].lower())
print(int(float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2)] / 8))' "$CC_RATE") ||
	{ echo "bench-cc: CC_RATE must be like 1gbit or 800mbit"; exit 1; }

RESULTS=$OUT/results.md
{
	echo "# bench-cc results"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) before;"
	echo "bottleneck htb $CC_RATE + bfifo $CC_QLIMIT, xrxe-impair ECN on a $CC_RATE phantom queue (${ECN_OPTS:-its default profile});"
	if [[ $RT_RX ]]; then
		echo "xrxed under SCHED_FIFO: \`--rt-priority $RT_RX\` on the receiver, \`--rt-priority $RT_TX\` on the senders (CC_RT), nice $DAEMON_NICE;"
	else
		echo "xrxed at normal priority (CC_RT=), nice $DAEMON_NICE;"
	fi
	echo "$DUR s per run; CC-on parameters (\`xrxe cc set\` on every endpoint): \`${CC_PARAMS:-NVIDIA defaults}\`;"
	echo "command: \`CC_RATE=$CC_RATE CC_QLIMIT=$CC_QLIMIT CC_DURATION=$DUR tests/cc/run.sh ${experiments[*]}\`"
	echo
	echo "util, Jain, queues and marks are counted at the router; \"perftest\" is what each client reported (n/a: its clock calibration failed, \"Correlation coefficient r^2 < 0.9\", and it printed 0)."
	echo
	echo "| run | CC | util | Jain p50 / min (10 ms) | phantom q p50 / p99 KB | FIFO p50 / p99 KB | marks/s | CNPs/s | retrans | drops | perftest Gbit/s | load |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$RESULTS"

# --- endpoints ---------------------------------------------------------------------

# endpoints_up N: topology with N senders, xrxed everywhere.
endpoints_up() {
	topo_up "$1" || { echo "bench-cc: topology failed"; return 1; }
	local i ifs=("$IF_D")
	ns_bg "$NS_D" nice -n "$DAEMON_NICE" "$XRXED" ${RT_RX:+--rt-priority "$RT_RX"} "$IF_D" \
		>"$TMP/xrxed-d.log" 2>&1
	for ((i = 1; i <= $1; i++)); do
		ns_bg "${NS_S[i]}" nice -n "$DAEMON_NICE" "$XRXED" ${RT_TX:+--rt-priority "$RT_TX"} \
			"${IF_S[i]}" >"$TMP/xrxed-s$i.log" 2>&1
		ifs+=("${IF_S[i]}")
	done
	for f in "${ifs[@]}"; do
		netns_wait_file "/run/xrxe/$f.sock" 10 || { echo "bench-cc: xrxed $f did not start"; return 1; }
	done
	NSENDERS=$1
}

# Every endpoint as "NS IFACE TAG" lines.
endpoints() {
	local i
	echo "$NS_D $IF_D d"
	for ((i = 1; i <= NSENDERS; i++)); do echo "${NS_S[i]} ${IF_S[i]} s$i"; done
}

CC_AVAILABLE=
cc_available() {
	if [ -z "$CC_AVAILABLE" ]; then
		if ns_exec "$NS_D" "$XRXE" cc show "$IF_D" >"$TMP/cc-show" 2>&1; then
			CC_AVAILABLE=1
		else
			CC_AVAILABLE=0
			echo "bench-cc: CC not available ('xrxe cc show' says: $(head -n 1 "$TMP/cc-show"))"
		fi
	fi
	[ "$CC_AVAILABLE" = 1 ]
}

# cc_mode on|off: on every endpoint; plus CC_SET (name=value ...) when on.
cc_mode() {
	local ns ifc tag
	while read -r ns ifc tag; do
		if [ "$1" = on ]; then
			ns_exec "$ns" "$XRXE" cc enable "$ifc" || return 1
			if [ -n "$CC_PARAMS${CC_SET:-}" ]; then
				# shellcheck disable=SC2086
				ns_exec "$ns" "$XRXE" cc set "$ifc" $CC_PARAMS ${CC_SET:-} || return 1
			fi
		elif cc_available; then
			ns_exec "$ns" "$XRXE" cc disable "$ifc" || return 1
		fi
	done < <(endpoints)
}

# --- one run ------------------------------------------------------------------------

PORT=19100
# start_pair SENDER QPS SECONDS DELAY: ib_write_bw server in d, client in sSENDER
# after DELAY seconds; the client's pid is appended to CLIENTS.
start_pair() {
	local i=$1 q=$2 secs=$3 delay=$4 port
	PORT=$((PORT + 1))
	port=$PORT
	# shellcheck disable=SC2086 # PERFTEST_OPTS: a word list
	ip netns exec "$NS_D" timeout $((secs + delay + 30)) "${RUN[@]}" ib_write_bw -d "xrxe_$IF_D" -x 1 -F \
		-p "$port" -D "$secs" -q "$q" -s 65536 --tclass=2 --report_gbits $PERFTEST_OPTS \
		>"$RUNDIR/server-$port.out" 2>&1 &
	SERVERS+=($!)
	(
		trap - EXIT INT TERM
		for _ in $(seq 200); do
			ns_exec "$NS_D" ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
			sleep 0.05
		done
		sleep "$delay"
		# shellcheck disable=SC2086
		exec ip netns exec "${NS_S[i]}" timeout $((secs + 30)) "${RUN[@]}" ib_write_bw \
			-d "xrxe_${IF_S[i]}" -x 1 -F -p "$port" -D "$secs" -q "$q" -s 65536 --tclass=2 \
			--report_gbits $PERFTEST_OPTS "$IP_D"
	) >"$RUNDIR/perftest-s$i-$port.out" 2>&1 &
	CLIENTS+=($!)
}

# The QP sampler: every endpoint's `xrxe qp --json` (retransmissions, and the
# RP's rate with CC), as often as the machine allows, at most every 250 ms.
# Timestamps are CLOCK_MONOTONIC, the clock of the watcher's t_ns.
qp_sampler() {
	local ns ifc tag now
	# A background subshell keeps netns.sh's traps: its exit must not clean up.
	trap - EXIT INT TERM
	while :; do
		now=$(($(date +%s%N) + MONO_OFFSET))
		while read -r ns ifc tag; do
			echo "$now $(ns_exec "$ns" "$XRXE" qp "$ifc" --json 2>/dev/null | tr -d '\n')" \
				>>"$RUNDIR/qp-$tag.jsonl"
		done < <(endpoints)
		sleep 0.25
	done
}

stats_snapshot() { # N: xrxe stats of every endpoint into statsN-TAG.json
	local ns ifc tag
	while read -r ns ifc tag; do
		ns_exec "$ns" "$XRXE" stats "$ifc" --json >"$RUNDIR/stats$1-$tag.json" 2>/dev/null
	done < <(endpoints)
}

# run NAME CC FLOWS_EXPECTED TOTAL_SECONDS -- PAIRS...: PAIRS is a list of
# "SENDER:QPS:SECONDS:DELAY". Appends a row to results.md and draws the plots.
run() {
	local name=$1 cc=$2 nexp=$3 total=$4 p
	shift 5
	[[ " $MODES " == *" $cc "* ]] || return 0
	RUNDIR=$TMP/$name-cc$cc
	mkdir -p "$RUNDIR"
	if [ "$cc" = on ] && ! cc_available; then
		echo "| $name | on | CC not available | | | | | | | | | |" >>"$RESULTS"
		return
	fi
	if ! cc_mode "$cc"; then
		echo "| $name | $cc | could not switch CC $cc | | | | | | | | | |" >>"$RESULTS"
		return
	fi
	echo "bench-cc: $name, CC $cc"
	ns_exec "$NS_R" "$IMPAIR" "$IF_RD" --reset >/dev/null
	topo_htb_stats >"$RUNDIR/htb0.txt"
	stats_snapshot 0
	# ip netns exec execs chrt/nice, they exec the program: $! is
	# xrxe-impair itself, which ends cleanly on SIGINT. Above the daemons'
	# priority (SCHED_FIFO above theirs when they run real-time): it sleeps
	# between samples, and a starved sampler misses the queue -- at nice -15
	# under real-time daemons it lost samples for up to 0.5 s.
	local prio=(nice -n -15)
	[[ $RT_RX ]] && prio=(chrt -f $((RT_RX + 10)))
	ip netns exec "$NS_R" "${prio[@]}" "$IMPAIR" "$IF_RD" --watch 10 >"$RUNDIR/watch.jsonl" &
	local watcher=$!
	NETNS_PIDS+=("$watcher") # stopped by netns.sh's cleanup if we are killed
	# CLOCK_MONOTONIC - CLOCK_REALTIME, so that the samplers can stamp with date(1)
	MONO_OFFSET=$(python3 -c 'import time; print(time.monotonic_ns() - time.time_ns())')
	qp_sampler &
	local samp=$!
	NETNS_PIDS+=("$samp")

	SERVERS=() CLIENTS=()
	for p in "$@"; do
		IFS=: read -r s q secs delay <<<"$p"
		start_pair "$s" "$q" "$secs" "$delay"
	done
	wait "${CLIENTS[@]}" 2>/dev/null
	wait "${SERVERS[@]}" 2>/dev/null
	sleep 0.3
	kill "$samp" 2>/dev/null
	wait "$samp" 2>/dev/null
	kill -INT "$watcher"
	wait "$watcher" 2>/dev/null
	stats_snapshot 1
	topo_htb_stats >"$RUNDIR/htb1.txt"
	local plot=()
	[ "$HAVE_GNUPLOT" = 1 ] && plot=(--plot "$OUT/$name-cc$cc")
	if ! python3 "$ANALYZE" "$RUNDIR" --rate-bps "$RATE_BPS" --label "$name, CC $cc" \
		--flows-expected "$nexp" "${plot[@]}" >"$RUNDIR/metrics.json"; then
		echo "| $name | $cc | analysis failed | | | | | | | | | |" >>"$RESULTS"
		return
	fi
	[ "$HAVE_GNUPLOT" = 1 ] && gnuplot "$RUNDIR/plot.gp" 2>/dev/null
	python3 - "$RUNDIR/metrics.json" "$name" "$cc" "$(cut -d' ' -f1 /proc/loadavg)" >>"$RESULTS" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
f = lambda x, fmt="%s": "n/a" if x is None else fmt % x
print("| %s | %s | %s | %s / %s | %s / %s | %s / %s | %s | %s | %s | %s | %s | %s |" % (
    sys.argv[2], sys.argv[3], f(m.get("util") and 100 * m["util"], "%.0f %%"),
    f(m.get("jain_median"), "%.3f"), f(m.get("jain_min"), "%.3f"),
    f(m.get("q_p50_kb")), f(m.get("q_p99_kb")), f(m.get("fifo_p50_kb")), f(m.get("fifo_p99_kb")),
    f(m.get("marks_per_s"), "%.0f"), f(m.get("cnps_per_s"), "%.0f") if m.get("cnps_per_s") is not None else "n/a (no CC counters)",
    m.get("retransmits"), f(m.get("drops")), " + ".join("n/a" if g is None else "%.2f" % g for g in m.get("perftest_gbps", [])) or "n/a",
    sys.argv[4]))
EOF
	cat "$RUNDIR/metrics.json"
	if [ "${CC_KEEP:-0}" = 1 ]; then
		mkdir -p "$OUT/raw"
		cp -r "$RUNDIR" "$OUT/raw/"
	fi
}

# impair_default: the bottleneck's ECN marking, optional extra options.
impair_default() {
	# shellcheck disable=SC2086
	ns_exec "$NS_R" "$IMPAIR" "$IF_RD" --ecn-rate "$CC_RATE" --ecn-limit "$CC_QLIMIT" $ECN_OPTS --flows "$@" >/dev/null
}

# Between experiments: daemons and namespaces go, the samples stay.
teardown() {
	local pid ns
	for pid in "${NETNS_PIDS[@]}"; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	for ns in "${NETNS_CREATED[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	NETNS_PIDS=() NETNS_CREATED=()
}

for e in "${experiments[@]}"; do
	case $e in
	E1)
		endpoints_up 2 || exit 1
		impair_default
		for n in $E1_QPS; do
			for cc in off on; do
				run "E1-incast-$n" $cc $n "$DUR" -- "1:$((n / 2)):$DUR:0" "2:$((n / 2)):$DUR:0"
			done
		done
		teardown ;;
	E2)
		endpoints_up 2 || exit 1
		impair_default
		long=$((DUR * 3 / 2)) third=$((DUR * 3 / 2 / 3))
		for cc in off on; do
			run "E2-converge" $cc 2 "$long" -- "1:1:$long:0" "2:1:$third:$third"
		done
		teardown ;;
	E4)
		endpoints_up 1 || exit 1
		for loss in 0.1 1; do
			impair_default --loss "$loss"
			for cc in off on; do
				run "E4-loss-$loss" $cc 1 "$DUR" -- "1:1:$DUR:0"
			done
		done
		teardown ;;
	E6)
		endpoints_up 1 || exit 1
		# Every ECT packet after the first finds a queue above Kmax = 0.
		ns_exec "$NS_R" "$IMPAIR" "$IF_RD" --ecn-rate 1mbit --ecn-kmin 0 --ecn-kmax 0 \
			--ecn-limit "$CC_QLIMIT" --flows >/dev/null
		for cc in off on; do
			CC_SET=${CC_E6_SET:-np_min_time_between_cnps=50} run "E6-cnp-limiter" $cc 1 "$DUR" -- "1:1:$DUR:0"
		done
		if [ "$CC_AVAILABLE" = 1 ] && [ -f "$TMP/E6-cnp-limiter-ccon/metrics.json" ]; then
			python3 - "$TMP/E6-cnp-limiter-ccon/metrics.json" "${CC_E6_SET:-np_min_time_between_cnps=50}" >>"$RESULTS" <<'EOF'
import json, re, sys
m = json.load(open(sys.argv[1]))
us = re.search(r"np_min_time_between_cnps=([0-9.]+)", sys.argv[2])
c = m.get("cnps_per_s")
if us and c is not None:
    limit = 1e6 / float(us.group(1))  # one QP in E6
    print("\nE6: %.0f CNPs/s for one QP against at most %.0f/s allowed by %s: %s" % (
        c, limit, us.group(0), "within the limit" if c <= limit * 1.02 else "ABOVE the limit"))
else:
    print("\nE6: no CNP count from the daemon (cnp_sent / cnp_rcvd missing)")
EOF
		fi
		teardown ;;
	E7)
		# Pacing accuracy on the real wire: one QP held at a set rate. Every
		# ECT packet is marked, but np_min_time_between_cnps=1 s lets one CNP
		# a second through; the first sets Rc = rp_rate_to_set_on_first_cnp,
		# rp_min_dec_fac=100 makes every cut a no-op and the timer and byte
		# counter are too long to raise it, so Rc stays at the set rate. The
		# htb is raised to 10 Gbit/s so that only the pacer limits; the rate
		# is measured at the router (xrxe-impair --flows counts Ethernet frame
		# bytes, as the pacer does).
		endpoints_up 1 || exit 1
		ns_exec "$NS_R" tc class change dev "$IF_RD" parent 1: classid 1:1 htb \
			rate 10gbit ceil 10gbit burst 32k cburst 32k quantum 60000
		ns_exec "$NS_R" "$IMPAIR" "$IF_RD" --ecn-rate 1mbit --ecn-kmin 0 --ecn-kmax 0 \
			--ecn-limit "$CC_QLIMIT" --flows >/dev/null
		PACING=()
		for r in $PACING_RATES; do
			CC_PARAMS="rp_rate_to_set_on_first_cnp=$r rp_min_dec_fac=100 rp_ai_rate=1 rp_hai_rate=1 rp_time_reset=1000000 rp_byte_reset=4294967295 np_min_time_between_cnps=1000000" \
				MODES=on run "E7-pacing-$r" on 1 "$DUR" -- "1:1:$DUR:0"
			PACING+=("$r:$TMP/E7-pacing-$r-ccon")
		done
		python3 tests/cc/pacing.py "${PACING[@]}" >>"$RESULTS"
		teardown ;;
	*)
		echo "bench-cc: unknown experiment '$e' (E1 E2 E4 E6 E7)"
		exit 2 ;;
	esac
done
echo
cat "$RESULTS"
