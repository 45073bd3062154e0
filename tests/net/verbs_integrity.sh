#!/usr/bin/env bash
# Data integrity and failure handling over xrxe (issue 3), with our own
# program written against plain libibverbs (tests/verbs/rc_integrity.c):
#   - 256 MiB moved by WRITE, READ and SEND with random sizes, offsets and
#     unaligned buffers, every byte checked, across namespaces and (64 MiB)
#     in loopback; FETCH_AND_ADD and CMP_AND_SWP from two QPs on one counter;
#   - an application killed mid-transfer: its daemon stays healthy and
#     releases everything it owned (object counts back to zero), and the
#     peer's outstanding work completes with IBV_WC_RETRY_EXC_ERR.
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "RC data integrity over xrxe"
source tests/lib/netns.sh
source tests/lib/verbs.sh # start_daemons

XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
PROG=$PWD/$BUILD/tests/verbs/rc_integrity
for f in "$XRXED" "$XRXE" "$PROG" "$PWD/$BUILD/lib/xrxe/libibverbs.so.1"; do
	if [ ! -x "$f" ]; then
		tap_fail "$f is built"
		exit 1
	fi
done

netns_tmpdir TMP
netns_pair 61 9000
if ! start_daemons; then
	tap_fail "xrxed started on both ends"
	exit 1
fi
DEV_A=xrxe_$IF_A DEV_B=xrxe_$IF_B

# objects NS IFACE: QPs + CQs + MRs + PDs + AHs the daemon's transport holds.
objects() {
	ns_exec "$1" "$XRXE" stats "$2" --json 2>/dev/null | python3 -c '
import json, sys
t = json.load(sys.stdin)["daemon"]["transport"]
print(sum(t[k] for k in ("qps", "cqs", "mrs", "pds", "ahs")))'
}

# run_pair DESC PORT SERVER_NS SERVER_DEV CLIENT_NS CLIENT_DEV DST ARGS...
run_pair() {
	local desc=$1 port=$2 sns=$3 sdev=$4 cns=$5 cdev=$6 dst=$7
	shift 7
	ns_exec "$sns" timeout 300 "$XRXE" run -- "$PROG" -d "$sdev" -p "$port" "$@" \
		>"$TMP/server.log" 2>&1 &
	local spid=$!
	ns_exec "$cns" timeout 300 "$XRXE" run -- "$PROG" -d "$cdev" -p "$port" "$@" "$dst" \
		>"$TMP/client.log" 2>&1
	local crc=$?
	wait "$spid"
	local src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q "rc_integrity: OK" "$TMP/client.log"; then
		tap_ok "$desc"
		sed 's/^/#   /' "$TMP/client.log" "$TMP/server.log" | grep -v "rc_integrity: OK"
	else
		tap_fail "$desc (server exit $src, client exit $crc)"
		sed 's/^/#   server: /' "$TMP/server.log" | tail -n 10
		sed 's/^/#   client: /' "$TMP/client.log" | tail -n 10
	fi
}

run_pair "256 MiB by WRITE/READ/SEND with every byte checked, atomics from two QPs (across namespaces)" \
	19001 "$NS_B" "$DEV_B" "$NS_A" "$DEV_A" "$IP4_B" -m 256 -s 0x5eed1
run_pair "64 MiB the same way within one namespace (loopback in the daemon)" \
	19002 "$NS_A" "$DEV_A" "$NS_A" "$DEV_A" "$IP4_A" -m 64 -s 0x5eed2

# Kill the server application mid-transfer.
# `ip netns exec` and `xrxe run` both exec, so $! is rc_integrity itself (a
# shell function in the background would be a subshell instead).
ip netns exec "$NS_B" "$XRXE" run -- "$PROG" -d "$DEV_B" -p 19003 -m 1000000 >"$TMP/victim.log" 2>&1 &
VICTIM=$!
ns_exec "$NS_A" timeout 120 "$XRXE" run -- "$PROG" -d "$DEV_A" -p 19003 -m 1000000 "$IP4_B" \
	>"$TMP/survivor.log" 2>&1 &
SURVIVOR=$!
# Mid-transfer: the victim holds its PD, CQ, MR and two QPs (5 objects), and
# data has been flowing for a moment.
busy=0
for _ in $(seq 100); do
	busy=$(objects "$NS_B" "$IF_B")
	[ "$busy" -ge 5 ] 2>/dev/null && break
	sleep 0.1
done
sleep 0.5
kill -9 "$VICTIM" 2>/dev/null
wait "$VICTIM" 2>/dev/null
t0=$SECONDS
wait "$SURVIVOR"
src=$?
if [ "$src" -ne 0 ] && grep -q "transport retry counter exceeded" "$TMP/survivor.log"; then
	tap_ok "peer of a killed application: its WQE completes with IBV_WC_RETRY_EXC_ERR ($((SECONDS - t0)) s)"
else
	tap_fail "peer of a killed application: its WQE completes with IBV_WC_RETRY_EXC_ERR (exit $src)"
	sed 's/^/#   /' "$TMP/survivor.log" | tail -n 5
fi
n=
for _ in $(seq 40); do
	n=$(objects "$NS_B" "$IF_B")
	[ "$n" = 0 ] && break
	sleep 0.1
done
if [ "$busy" -ge 5 ] 2>/dev/null && [ "$n" = 0 ]; then
	tap_ok "killed application: its daemon released everything (objects $busy -> 0)"
else
	tap_fail "killed application: its daemon released everything (objects $busy -> $n)"
fi
n=$(objects "$NS_A" "$IF_A")
if [ "$n" = 0 ]; then
	tap_ok "the surviving side released everything after it exited"
else
	tap_fail "the surviving side released everything after it exited ($n objects left)"
fi
if kill -0 "$PID_A" 2>/dev/null && kill -0 "$PID_B" 2>/dev/null; then
	tap_ok "both daemons still running"
else
	tap_fail "both daemons still running"
fi
# And still serving: a short transfer on the same daemons.
run_pair "after the kill, the same daemons carry a fresh 8 MiB transfer" \
	19004 "$NS_B" "$DEV_B" "$NS_A" "$DEV_A" "$IP4_B" -m 8 -s 0x5eed3
exit 0
