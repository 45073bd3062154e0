#!/usr/bin/env bash
# Unmodified rdma-core and perftest binaries over xrxe (issue 3):
# two namespaces joined by veth, xrxed in each, the stock Debian programs run
# through the shim (`xrxe run`), across the namespaces and within one
# (loopback inside the daemon), at veth MTU 1500 and 9000.
#
# Environment: VERBS_QUICK=1 runs a reduced matrix (for development).
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "verbs programs over xrxe"
source tests/lib/netns.sh

XRXED=$PWD/$BUILD/bin/xrxed
RUN=("$PWD/$BUILD/bin/xrxe" run --)
SHIM=$PWD/$BUILD/lib/xrxe/libibverbs.so.1
T=${VERBS_TIMEOUT:-120}

for f in "$XRXED" "$SHIM"; do
	if [ ! -e "$f" ]; then
		tap_fail "$f is built"
		exit 1
	fi
done
for p in ibv_devinfo ibv_rc_pingpong ib_write_bw; do
	if ! command -v "$p" >/dev/null; then
		tap_fail "$p is installed (make deps)"
		exit 1
	fi
done

netns_tmpdir TMP

# start_daemons: xrxed on both ends of the current pair; waits for the sockets.
start_daemons() {
	ns_bg "$NS_A" sh -c "exec \"$XRXED\" \"$IF_A\" >>\"$TMP/xrxed-a.log\" 2>&1"
	PID_A=$NETNS_LAST_PID
	ns_bg "$NS_B" sh -c "exec \"$XRXED\" \"$IF_B\" >>\"$TMP/xrxed-b.log\" 2>&1"
	PID_B=$NETNS_LAST_PID
	netns_wait_file "/run/xrxe/$IF_A.sock" 10 && netns_wait_file "/run/xrxe/$IF_B.sock" 10
}

stop_daemons() {
	kill "$PID_A" "$PID_B" 2>/dev/null
	wait "$PID_A" "$PID_B" 2>/dev/null
}

# wait_listen NS PORT: until a TCP listener on PORT exists in NS.
wait_listen() {
	local i
	for i in $(seq 200); do
		ns_exec "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# pair DESC SERVER_NS CLIENT_NS PORT -- SERVER_ARGS -- CLIENT_ARGS
# Runs the server in the background and the client in the foreground, both
# through the shim with a timeout; ok if both exit 0. Logs are kept on failure.
pair() {
	local desc=$1 sns=$2 cns=$3 port=$4
	shift 4
	[ "$1" = -- ] && shift
	local sargs=() cargs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	local log=$TMP/$(echo "$desc" | tr -c 'A-Za-z0-9_\n' '_')
	ns_exec "$sns" timeout "$T" "${RUN[@]}" "${sargs[@]}" >"$log.server" 2>&1 &
	local spid=$!
	if ! wait_listen "$sns" "$port"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		tap_fail "$desc (server did not start)"
		sed 's/^/#   server: /' "$log.server" | tail -n 20
		return 1
	fi
	ns_exec "$cns" timeout "$T" "${RUN[@]}" "${cargs[@]}" >"$log.client" 2>&1
	local crc=$?
	wait "$spid"
	local src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		tap_ok "$desc"
		# The client's report (perftest's table, pingpong's rate), as comments.
		grep -E '^ *[0-9]+ +[0-9]+ |iters in|bytes in' "$log.client" | tail -n 3 | sed 's/^/#   /'
		return 0
	fi
	tap_fail "$desc (server exit $src, client exit $crc)"
	sed 's/^/#   server: /' "$log.server" | tail -n 15
	sed 's/^/#   client: /' "$log.client" | tail -n 15
	return 1
}

PORT=18600
next_port() { PORT=$((PORT + 1)); }

check_devinfo() {
	local ns=$1 ifc=$2 ip4=$3 out
	out=$(ns_exec "$ns" "${RUN[@]}" ibv_devices 2>&1)
	if grep -q "xrxe_$ifc" <<<"$out"; then tap_ok "$tag: ibv_devices lists xrxe_$ifc"
	else tap_fail "$tag: ibv_devices lists xrxe_$ifc"; tap_diag "$out"; fi
	out=$(ns_exec "$ns" "${RUN[@]}" ibv_devinfo -v -d "xrxe_$ifc" 2>&1)
	local ok=1
	grep -q "state:.*PORT_ACTIVE" <<<"$out" || ok=0
	grep -q "link_layer:.*Ethernet" <<<"$out" || ok=0
	grep -q "GID\[ *1\]:.*::ffff:$ip4" <<<"$out" || ok=0
	grep -q "GID\[ *0\]:.*fe80:" <<<"$out" || ok=0
	if [ $ok = 1 ]; then tap_ok "$tag: ibv_devinfo -v: port ACTIVE, Ethernet, GIDs"
	else tap_fail "$tag: ibv_devinfo -v: port ACTIVE, Ethernet, GIDs"; tap_diag "$out"; fi
}

if [ "${VERBS_QUICK:-0}" = 1 ]; then
	MTUS=(9000) SIZES=(1 65536) ITERS=100 PERF_ITERS=20
else
	MTUS=(1500 9000) SIZES=(1 4095 4096 65536 1048576) ITERS=1000 PERF_ITERS=50
fi

id=40
for mtu in "${MTUS[@]}"; do
	id=$((id + 1))
	tag="mtu $mtu"
	netns_pair "$id" "$mtu"
	if ! start_daemons; then
		tap_fail "$tag: xrxed started on both ends"
		continue
	fi
	tap_ok "$tag: xrxed started on both ends"
	DEV_A=xrxe_$IF_A DEV_B=xrxe_$IF_B
	check_devinfo "$NS_A" "$IF_A" "$IP4_A"

	for size in "${SIZES[@]}"; do
		for mode in poll event; do
			ev=()
			[ $mode = event ] && ev=(-e)
			next_port
			pair "$tag: ibv_rc_pingpong -g 1 -s $size -n $ITERS ($mode)" "$NS_B" "$NS_A" $PORT -- \
				ibv_rc_pingpong -d "$DEV_B" -g 1 -s "$size" -n "$ITERS" -p $PORT "${ev[@]}" -- \
				ibv_rc_pingpong -d "$DEV_A" -g 1 -s "$size" -n "$ITERS" -p $PORT "${ev[@]}" "$IP4_B"
		done
	done

	# perftest: bandwidth and latency, every size (-a), small iteration
	# counts so the matrix stays within minutes; at the jumbo MTU only (path
	# MTU 4096, multi-buffer frames), the MTU matrix is the pingpong's.
	[ "$mtu" = 9000 ] || { stop_daemons; continue; }
	for t in "ib_send_bw" "ib_write_bw" "ib_read_bw" "ib_atomic_bw -A CMP_AND_SWAP" \
		"ib_atomic_bw -A FETCH_AND_ADD" "ib_send_lat" "ib_write_lat" "ib_read_lat" "ib_atomic_lat"; do
		read -r -a cmd <<<"$t"
		all=(-a)
		case ${cmd[0]} in ib_atomic_*) all=() ;; esac
		for where in cross loopback; do
			next_port
			if [ $where = cross ]; then
				sns=$NS_B cns=$NS_A sdev=$DEV_B cdev=$DEV_A dst=$IP4_B
			else
				sns=$NS_A cns=$NS_A sdev=$DEV_A cdev=$DEV_A dst=$IP4_A
			fi
			pair "$tag: $t ${all[*]} ($where)" "$sns" "$cns" $PORT -- \
				"${cmd[@]}" -d "$sdev" -x 1 "${all[@]}" -n "$PERF_ITERS" -F -p $PORT -- \
				"${cmd[@]}" -d "$cdev" -x 1 "${all[@]}" -n "$PERF_ITERS" -F -p $PORT "$dst"
		done
	done
	stop_daemons
done
exit 0
