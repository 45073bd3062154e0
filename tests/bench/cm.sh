#!/usr/bin/env bash
# The RDMA connection manager's benchmarks, each against a baseline measured
# in the same run:
#
# (1) Connections per second against the kernel. One QEMU/TCG guest (Debian's
#     kernel, tests/interop/lib/rxe_vm.sh) runs stock cmtime (rdmacm-utils:
#     per-step timings of N connections) over its own address, first on the
#     kernel's rdma_cm over rxe0 (rdma_rxe + rdma_ucm), then -- rxe0 deleted --
#     through `xrxe run` on xrxed on the guest's eth0, and tests/bench/cm_rtt
#     (one connection at a time) on both. Same kernel, same vCPU, same binaries.
# (2) The CM handshake's round trip on the host: xrxed in two namespaces
#     joined by veth; cm_rtt's REQ -> REP without a QP and rdma_connect ->
#     ESTABLISHED with one (cmtime's connect step, one at a time), beside a
#     UDP ping-pong of 256-byte datagrams between the same namespaces over
#     the kernel stack; cmtime -c N across the namespaces.
# (3) Where the time goes: cmtime's steps side by side, control-socket
#     requests per connection, MADs resent, CM timeouts.
#
# A measurement is repeated CM_REPS times; the table shows the median and
# the range. Numbers depend on what else runs on the machine (2 cores,
# shared): the ratios are the point.
#
# Environment:
#   CM_CONNS=N      cmtime connections (default 100)
#   CM_REPS=N       repetitions of each measurement (default 3)
#   CM_RTT_N=N      cm_rtt connections per run on the host (default 200)
#   CM_GUEST_RTT_N=N  ... in the guest (default 50)
#   CM_GUEST=0      skip the guest (1)
#   CM_GUEST_NICE=N nice value of QEMU's threads (default -10; 0 = as started)
#   CM_KEEP=DIR     keep every raw output in DIR
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/netns.sh
source tests/lib/verbs.sh # start_daemons, wait_cm_listen

XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
RUN=("$XRXE" run --)
RTT=$PWD/$BUILD/tests/bench/cm_rtt
CONNS=${CM_CONNS:-100}
REPS=${CM_REPS:-3}
RTT_N=${CM_RTT_N:-200}
GUEST_RTT_N=${CM_GUEST_RTT_N:-50}
T=60
T0=$SECONDS

if [ "$(id -u)" -ne 0 ]; then
	echo "cm bench skipped: needs root (namespaces, XDP, QEMU's tap)"
	exit 0
fi
for f in "$XRXED" "$XRXE" "$BUILD/lib/xrxe/librdmacm.so.1" "$BUILD/lib/xrxe/libibverbs.so.1"; do
	if [ ! -e "$f" ]; then
		echo "cm bench skipped: $f is not built (make tests)"
		exit 0
	fi
done
if ! command -v cmtime >/dev/null; then
	echo "cm bench skipped: cmtime is not installed (rdmacm-utils: make deps)"
	exit 0
fi
[ -x "$RTT" ] || echo "note: $RTT is not built (make $BUILD/tests/bench/cm_rtt): its rows say n/a"

netns_tmpdir TMP
chmod 755 "$TMP"

# --- helpers -------------------------------------------------------------------
# median and range of numbers (n/a and empty ignored): "MED (MIN-MAX)" or n/a.
stats() {
	printf '%s\n' "$@" | sort -g | awk '$1 ~ /^[0-9.]+$/ { v[++n] = $1 }
		END { if (!n) { print "n/a"; exit }
		      m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		      f = m >= 100 ? "%.0f" : "%.1f"
		      if (n == 1) printf f "\n", m
		      else printf f " (" f "-" f ")\n", m, v[1], v[n] }'
}
med() { stats "$@" | awk '{ print $1 }'; }
# ratio A B: A / B with two decimals, n/a when either is missing.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "n/a";
		else printf "%.2f\n", a / b }'
}
# kv FILE KEY: the value of a "key value" line.
kv() { awk -v k="$2" '$1 == k { print $2; exit }' "$1" 2>/dev/null; }

# col KEY FILE-PREFIX: the values of KEY over the runs; colstats: their stats.
col() {
	local r
	for ((r = 1; r <= REPS; r++)); do kv "$2-$r" "$1"; done
}
colstats() {
	local v
	mapfile -t v < <(col "$1" "$2")
	stats "${v[@]}"
}
# cmtime's table: "step : total_ms max_ms min_us us_per_conn". A run counts
# only if it reached the end and printed no error (cmtime prints a REJECTED
# or ADDR_ERROR and carries on, with zeros).
cmtime_ok() {
	grep -q '^destroy *:' "$1" 2>/dev/null &&
		! grep -qiE 'event:|error|failure|failed' "$1"
}
# cmtime_col FILE STEP COL: COL 1 total ms, 2 max ms, 3 min us, 4 us/conn.
cmtime_col() {
	awk -F: -v s="$2" -v c="$3" '{ n = $1; sub(/ +$/, "", n) } n == s { split($2, f, " "); print f[c]; exit }' "$1"
}
# conn/s of one cmtime run: "connect" (the connect step) or "cycle" (every
# step, create id to destroy).
cmtime_rate() {
	cmtime_ok "$1" || return 0
	awk -F: -v what="$2" -v n="$CONNS" '/^[a-z ]+ *:/ && NF == 2 {
			s = $1; sub(/ +$/, "", s); split($2, f, " ")
			if (s == "connect") c = f[1]
			if (s != "step") t += f[1] }
		END { v = what == "connect" ? c : t; if (v > 0) printf "%.1f\n", n / v * 1000 }' "$1"
}
CMTIME_STEPS=("create id" "bind addr" "resolve addr" "resolve route" "create qp" "connect" "disconnect" "destroy")

# What else runs: the share of both CPUs busy over one second.
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
echo "machine: $(nproc) CPUs, $busy% busy before the run, load average $(cut -d' ' -f1-3 /proc/loadavg)$([ "$busy" -gt 10 ] &&
	echo " -- NOT idle: expect noisy numbers")"
echo "each measurement $REPS times: median (min-max); conn/s higher is better, us lower is better"

# --- (1) the guest: kernel rdma_cm over rxe, then xrxe --------------------------------
guest_bench() {
	local why share gip=10.77.67.1 out r port=21000 mode='' kver
	why=$(
		source tests/interop/lib/rxe_vm.sh
		rxe_vm_unavailable
	)
	if [ -n "$why" ]; then
		echo "SKIP: QEMU cannot run here: $why"
		return
	fi
	if [ ! -x "$RTT" ]; then
		echo "SKIP: $RTT is not built"
		return
	fi
	source tests/bench/lib/cm_guest.sh
	if ! rxe_vm_prepare >"$TMP/prepare.log" 2>&1; then
		echo "SKIP: guest kernel not prepared in $RXE_VM_CACHE: $(tail -n 1 "$TMP/prepare.log")"
		return
	fi
	share=$TMP/share
	mkdir -p "$share/bin" "$share/lib/xrxe"
	# xrxe run finds the shims at ../lib/xrxe beside its own binary.
	cp "$XRXED" "$XRXE" "$RTT" "$share/bin/" &&
		cp "$BUILD"/lib/xrxe/*.so.1 "$share/lib/xrxe/" &&
		cp tests/bench/lib/cm_guest_jobs.sh "$share/jobs.sh" || {
		echo "SKIP: cannot fill the share"
		return
	}
	local t=$SECONDS
	if ! cm_guest_boot "$share" "$NETNS_PREFIX-cmg" "xt$$-cmg" "$gip" 240; then
		echo "SKIP: the guest did not boot: $(tail -n 3 "$share/guest.log" "$share/qemu.log" 2>&1 | tr '\n' ' ')"
		cm_guest_stop
		return
	fi
	kver=$(ls "$RXE_VM_CACHE/root/lib/modules" 2>/dev/null | head -n 1)
	echo "guest: Debian kernel ${kver:-?} under QEMU/TCG, 1 vCPU, booted in $((SECONDS - t)) s;" \
		"client and server over its own address $gip"
	local J="source /share/env; source /share/jobs.sh;" xskip='' rxe=1 qp
	# Rounds, so that both see the same load on the host: the kernel's
	# rdma_cm over rxe0; then rxe0 goes and xrxed comes on eth0 (native
	# XDP; skb mode if that fails) for the same runs through `xrxe run`;
	# then xrxed goes and rxe0 comes back for the next round.
	for ((r = 1; r <= REPS; r++)); do
		if [ -n "$rxe" ]; then
			port=$((port + 1))
			cm_guest_run "$J k_cmtime $port $CONNS" 300 >"$TMP/g-k-cmtime-$r"
			cmtime_ok "$TMP/g-k-cmtime-$r" || { echo "kernel cmtime run $r failed:"; tail -n 5 "$TMP/g-k-cmtime-$r"; }
			for qp in "" --qp; do
				port=$((port + 1))
				cm_guest_run "$J k_rtt $port $GUEST_RTT_N $qp" 300 >"$TMP/g-k-rtt$qp-$r" ||
					{ echo "kernel cm_rtt $qp run $r failed:"; tail -n 5 "$TMP/g-k-rtt$qp-$r"; }
			done
		fi
		[ -z "$xskip" ] || continue
		if ! out=$(cm_guest_run "$J k_remove_rxe" 120); then
			xskip="rdma link delete rxe0 failed: $out"
			continue
		fi
		rxe=
		if [ -z "${mode:-}" ]; then
			if out=$(cm_guest_run "$J x_start native" 120); then
				mode=native
			elif out=$(cm_guest_run "$J x_start skb" 120); then
				mode=skb
			else
				xskip="xrxed eth0 started neither in native nor in skb mode: $(tail -n 2 <<<"$out" | tr '\n' ' ')"
				continue
			fi
			echo "guest xrxed eth0 --mode $mode: $(sed 's/^xrxed: info: //' <<<"$out" | tail -n 1)"
		elif ! out=$(cm_guest_run "$J x_start $mode" 120); then
			echo "xrxed did not start for round $r: $out"
			continue
		fi
		port=$((port + 1))
		cm_guest_run "$J x_cmtime $port $CONNS" 300 >"$TMP/g-x-cmtime-$r"
		cmtime_ok "$TMP/g-x-cmtime-$r" || { echo "xrxe cmtime run $r failed:"; tail -n 5 "$TMP/g-x-cmtime-$r"; }
		# a fresh daemon: its counters are this cmtime run's
		cm_guest_run "/share/bin/xrxe cm eth0; /share/bin/xrxe stats eth0" >"$TMP/g-x-ctr-$r"
		for qp in "" --qp; do
			port=$((port + 1))
			cm_guest_run "$J x_rtt $port $GUEST_RTT_N $qp" 300 >"$TMP/g-x-rtt$qp-$r" ||
				{ echo "xrxe cm_rtt $qp run $r failed:"; tail -n 5 "$TMP/g-x-rtt$qp-$r"; }
		done
		cm_guest_run "$J x_stop" 60 >/dev/null
		if [ "$r" -lt "$REPS" ]; then
			if out=$(cm_guest_run "$J k_add_rxe" 60); then
				rxe=1
			else
				echo "rdma link add rxe0 failed, no more kernel runs: $out"
			fi
		fi
	done
	cm_guest_stop
	echo "guest runs: $((SECONDS - t)) s from boot to power-off"
	[ -z "$xskip" ] || echo "xrxe in the guest: SKIP: $xskip"

	local kc=() xc=() ky=() xy=()
	for ((r = 1; r <= REPS; r++)); do
		kc+=("$(cmtime_rate "$TMP/g-k-cmtime-$r" connect)")
		ky+=("$(cmtime_rate "$TMP/g-k-cmtime-$r" cycle)")
		xc+=("$(cmtime_rate "$TMP/g-x-cmtime-$r" connect 2>/dev/null)")
		xy+=("$(cmtime_rate "$TMP/g-x-cmtime-$r" cycle 2>/dev/null)")
	done
	local fmt='%-52s %18s %18s %9s\n' a b
	row() { # row LABEL KEY PREFIX-SUFFIX (g-k-..., g-x-...)
		a=$(colstats "$2" "$TMP/g-k-$3") b=$(colstats "$2" "$TMP/g-x-$3")
		# shellcheck disable=SC2059 # one format for the table
		printf "$fmt" "$1" "$a" "$b" "$(ratio "${b%% *}" "${a%% *}")"
	}
	# shellcheck disable=SC2059
	printf "$fmt" "" "kernel rxe" "xrxe" "xrxe/kern"
	a=$(stats "${kc[@]}") b=$(stats "${xc[@]}")
	# shellcheck disable=SC2059
	printf "$fmt" "cmtime -c $CONNS: connect step, conn/s" "$a" "$b" "$(ratio "${b%% *}" "${a%% *}")"
	a=$(stats "${ky[@]}") b=$(stats "${xy[@]}")
	# shellcheck disable=SC2059
	printf "$fmt" "cmtime -c $CONNS: create id -> destroy, conn/s" "$a" "$b" "$(ratio "${b%% *}" "${a%% *}")"
	row "cm_rtt --qp, 1 at a time: create -> destroy, conn/s" cycles_per_s rtt--qp
	row "cm_rtt --qp: rdma_connect -> ESTABLISHED p50, us" connect_p50_us rtt--qp
	row "cm_rtt, no QP: REQ out -> REP in p50, us" req_rep_p50_us rtt
	row "cm_rtt, no QP: rdma_establish (RTU) p50, us" establish_p50_us rtt
	row "cm_rtt --qp: rdma_create_qp p50, us" create_qp_p50_us rtt--qp

	# where the time goes: cmtime's steps (us per connection, median of the runs)
	echo "  cmtime steps, us/conn (total of the step / $CONNS; median of the runs):"
	local s
	for s in "${CMTIME_STEPS[@]}"; do
		local kv_=() xv_=()
		for ((r = 1; r <= REPS; r++)); do
			cmtime_ok "$TMP/g-k-cmtime-$r" && kv_+=("$(cmtime_col "$TMP/g-k-cmtime-$r" "$s" 4)")
			cmtime_ok "$TMP/g-x-cmtime-$r" && xv_+=("$(cmtime_col "$TMP/g-x-cmtime-$r" "$s" 4)")
		done
		a=$(med "${kv_[@]}") b=$(med "${xv_[@]}")
		printf "    %-15s %10s %10s %8s\n" "$s" "$a" "$b" "$(ratio "$b" "$a")"
	done
	if [ -s "$TMP/g-x-ctr-1" ]; then
		per() { # per KEY [DIV]: median over the rounds of the counter (/ DIV)
			local v=()
			for ((r = 1; r <= REPS; r++)); do
				v+=("$(awk -v k="$1" -v n="${2:-1}" '$1 == k { printf "%.1f\n", $2 / n }' "$TMP/g-x-ctr-$r" 2>/dev/null)")
			done
			med "${v[@]}"
		}
		echo "  xrxed in the guest, per cmtime connection (both ends): $(per ctrl.requests "$CONNS") control" \
			"requests, $(per daemon.sleeps "$CONNS") daemon wake-ups, $(per cm.mad_sent "$CONNS") MADs;" \
			"per run: MADs resent $(per cm.mad_resent), CM timeouts $(per cm.timeouts)," \
			"events dropped $(per cm.event_drops)"
	fi
}

echo
echo "-- (1) connections per second: kernel rdma_cm over rxe vs xrxe in one QEMU guest"
if [ "${CM_GUEST:-1}" = 0 ]; then
	echo "SKIP: CM_GUEST=0"
else
	guest_bench
fi

# --- (2) the host: two namespaces, xrxed in each ---------------------------------------
T1=$SECONDS
echo
echo "-- (2) the CM handshake on the host: xrxed in two namespaces over veth (MTU 1500)"
if ! netns_pair 66 1500; then
	echo "SKIP: namespaces not created"
	exit 0
fi
if ! start_daemons; then
	echo "SKIP: xrxed did not start: $(tail -n 2 "$TMP"/xrxed-*.log | tr '\n' ' ')"
	exit 0
fi
netns_at_exit stop_daemons
PORT=21100
snap() { # snap NAME: both daemons' counters
	"$XRXE" cm "$IF_A" >"$TMP/h-$1-a" 2>&1
	ns_exec "$NS_A" "$XRXE" stats "$IF_A" >>"$TMP/h-$1-a" 2>&1
	"$XRXE" cm "$IF_B" >"$TMP/h-$1-b" 2>&1
	ns_exec "$NS_B" "$XRXE" stats "$IF_B" >>"$TMP/h-$1-b" 2>&1
}
# hd KEY SIDE FROM TO [DIV]: counter difference between two snapshots (/ DIV).
hd() {
	awk -v k="$1" -v n="${5:-0}" 'FNR == 1 { f++ } $1 == k { v[f] = $2 }
		END { if (n) printf "%.1f", (v[2] - v[1]) / n; else print v[2] - v[1] }' \
		"$TMP/h-$3-$2" "$TMP/h-$4-$2"
}

# Server in A (ns_bg: killed at exit too), client in B. A fresh server for
# every client run: stock cmtime's server (rdma-core 44) keeps one global
# ibv_qp_init_attr into which rdma_create_qp writes back the CQs it made for
# the first connection's ID, so once a client's connections are destroyed,
# the next client's QPs name freed CQs (xrxe answers EBADF and the REQs are
# rejected; the kernel path reads freed memory).
serve() { # serve READY_WAIT -- SERVER...: sets SPID
	local w=$1
	shift 2
	ns_bg "$NS_A" timeout "$T" "$@" >"$TMP/server.$PORT" 2>&1
	SPID=$NETNS_LAST_PID
	$w
}
unserve() { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }

snap 0
for ((r = 1; r <= REPS; r++)); do
	PORT=$((PORT + 1))
	serve "wait_cm_listen $NS_A $PORT" -- "${RUN[@]}" cmtime -b "$IP4_A" -p $PORT -c "$CONNS"
	ns_exec "$NS_B" timeout "$T" "${RUN[@]}" cmtime -s "$IP4_A" -b "$IP4_B" -p $PORT -c "$CONNS" \
		>"$TMP/h-cmtime-$r" 2>&1
	unserve
	cmtime_ok "$TMP/h-cmtime-$r" || { echo "cmtime run $r failed:"; tail -n 5 "$TMP/h-cmtime-$r"; }
done
snap 1
if [ -x "$RTT" ]; then
	for ((r = 1; r <= REPS; r++)); do
		for qp in "" --qp; do
			PORT=$((PORT + 1))
			rm -f "$TMP/ready"
			# shellcheck disable=SC2086 # $qp: no word or one
			serve "netns_wait_file $TMP/ready 10" -- "${RUN[@]}" "$RTT" server "$IP4_A" $PORT $qp --ready "$TMP/ready"
			# shellcheck disable=SC2086
			ns_exec "$NS_B" timeout "$T" "${RUN[@]}" "$RTT" client "$IP4_B" "$IP4_A" $PORT -n "$RTT_N" $qp \
				>"$TMP/h-rtt$qp-$r" 2>&1 || { echo "cm_rtt $qp run $r failed:"; tail -n 3 "$TMP/h-rtt$qp-$r"; }
			unserve
		done
		PORT=$((PORT + 1))
		rm -f "$TMP/ready"
		serve "netns_wait_file $TMP/ready 10" -- "$RTT" udp-echo "$IP4_A" $PORT --ready "$TMP/ready"
		ns_exec "$NS_B" timeout "$T" "$RTT" udp-ping "$IP4_B" "$IP4_A" $PORT -n 2000 -s 256 \
			>"$TMP/h-udp-$r" 2>&1 || { echo "udp-ping run $r failed:"; tail -n 3 "$TMP/h-udp-$r"; }
		unserve
	done
fi
snap 2

hc=() hy=()
for ((r = 1; r <= REPS; r++)); do
	hc+=("$(cmtime_rate "$TMP/h-cmtime-$r" connect)")
	hy+=("$(cmtime_rate "$TMP/h-cmtime-$r" cycle)")
done
UDP50=$(colstats udp_rtt_p50_us "$TMP/h-udp")
UDP50=${UDP50%% *}
fmt='%-52s %18s %18s %9s\n'
printf "$fmt" "" "p50" "p99" "p50/UDP"
printf "$fmt" "UDP ping-pong, 256 B, kernel stack: RTT us" "$(colstats udp_rtt_p50_us "$TMP/h-udp")" \
	"$(colstats udp_rtt_p99_us "$TMP/h-udp")" "1"
a=$(colstats req_rep_p50_us "$TMP/h-rtt") b=$(colstats req_rep_p99_us "$TMP/h-rtt")
printf "$fmt" "cm_rtt, no QP: REQ out -> REP in, us" "$a" "$b" "$(ratio "${a%% *}" "$UDP50")"
a=$(colstats connect_p50_us "$TMP/h-rtt--qp") b=$(colstats connect_p99_us "$TMP/h-rtt--qp")
printf "$fmt" "cm_rtt --qp: rdma_connect -> ESTABLISHED, us" "$a" "$b" "$(ratio "${a%% *}" "$UDP50")"
a=$(colstats establish_p50_us "$TMP/h-rtt") b=$(colstats establish_p99_us "$TMP/h-rtt")
printf "$fmt" "cm_rtt, no QP: rdma_establish (1 control call), us" "$a" "$b" "$(ratio "${a%% *}" "$UDP50")"
a=$(colstats create_qp_p50_us "$TMP/h-rtt--qp") b=$(colstats create_qp_p99_us "$TMP/h-rtt--qp")
printf "$fmt" "cm_rtt --qp: rdma_create_qp, us" "$a" "$b" "$(ratio "${a%% *}" "$UDP50")"
printf '%-52s %18s\n' "cm_rtt --qp, 1 at a time: create -> destroy, conn/s" "$(colstats cycles_per_s "$TMP/h-rtt--qp")"
printf '%-52s %18s\n' "cmtime -c $CONNS across: connect step, conn/s" "$(stats "${hc[@]}")"
printf '%-52s %18s\n' "cmtime -c $CONNS across: create id -> destroy, conn/s" "$(stats "${hy[@]}")"
echo "  cmtime steps, us/conn (client; median of the runs):"
line=
for s in "${CMTIME_STEPS[@]}"; do
	v=()
	for ((r = 1; r <= REPS; r++)); do
		cmtime_ok "$TMP/h-cmtime-$r" && v+=("$(cmtime_col "$TMP/h-cmtime-$r" "$s" 4)")
	done
	line+=" $s $(med "${v[@]}"),"
done
echo "   ${line%,}"
n=$((REPS * CONNS))
echo "  per cmtime connection: control requests $(hd ctrl.requests b 0 1 $n) (client's daemon)" \
	"/ $(hd ctrl.requests a 0 1 $n) (server's), daemon wake-ups $(hd daemon.sleeps b 0 1 $n) / $(hd daemon.sleeps a 0 1 $n);" \
	"MADs sent $(hd cm.mad_sent b 0 1 $n) / $(hd cm.mad_sent a 0 1 $n)"
tot() { echo $(($(hd "$1" a 0 2) + $(hd "$1" b 0 2))); }
echo "  whole host run, both daemons: MADs resent $(tot cm.mad_resent), CM timeouts $(tot cm.timeouts)," \
	"MADs dropped as duplicates $(tot cm.drop_duplicate), events dropped $(tot cm.event_drops), REJs sent $(tot cm.sent_rej)"

if [ -n "${CM_KEEP:-}" ]; then
	mkdir -p "$CM_KEEP" && cp -r "$TMP"/. "$CM_KEEP"/ && echo "raw outputs kept in $CM_KEEP"
fi
echo "cm bench: $((SECONDS - T0)) s (host part $((SECONDS - T1)) s)"
