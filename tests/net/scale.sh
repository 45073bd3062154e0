#!/usr/bin/env bash
# Correctness at scale (issue 16), not timing: two daemons in two namespaces,
# 16 384 connected RC QPs between two applications of ours
# (tests/verbs/rc_scale.c, plain libibverbs through `xrxe run`), WRITE + SEND
# traffic on 64 of them spread over the range with every byte checked, and
# every object destroyed; then an application pair holding 4 096 connected
# QPs each is killed (-9) and both daemons release everything (their object
# counts back to where they started). ibv_query_device must report the
# daemon's real limits (262 144 QPs and CQs, src/daemon/xrxed.h; more than
# 65 536 in one daemon: tests/bench/scale.sh). The rings of the held QPs come from
# slabs (src/daemon/ring_slab.c): the daemon's mappings grow by a few, not by
# two per QP.
#
#   SCALE_QPS=N SCALE_KILL_QPS=M tests/net/scale.sh   (defaults 16384, 4096)
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "many QPs over xrxe"
source tests/lib/netns.sh
source tests/lib/verbs.sh # start_daemons

XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
PROG=$PWD/$BUILD/tests/verbs/rc_scale
NQP=${SCALE_QPS:-16384}
NKILL=${SCALE_KILL_QPS:-4096}
for f in "$XRXED" "$XRXE" "$PROG" "$PWD/$BUILD/lib/xrxe/libibverbs.so.1"; do
	if [ ! -x "$f" ]; then
		tap_fail "$f is built"
		exit 1
	fi
done

netns_tmpdir TMP
netns_pair 77 1500
if ! start_daemons; then
	tap_fail "xrxed started on both ends"
	exit 1
fi
DEV_A=xrxe_$IF_A DEV_B=xrxe_$IF_B

# objects NS IFACE: QPs + CQs + MRs + PDs + AHs the daemon's transport holds,
# and the connections its control socket has.
objects() {
	ns_exec "$1" "$XRXE" stats "$2" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)["daemon"]
t = d["transport"]
print(sum(t[k] for k in ("qps", "cqs", "mrs", "pds", "ahs")))'
}

# wait_objects NS IFACE WANT: up to 60 s (a bound against hanging, not a timing claim)
wait_objects() {
	local n=
	for _ in $(seq 600); do
		n=$(objects "$1" "$2")
		[ "$n" = "$3" ] && break
		sleep 0.1
	done
	echo "$n"
}

base_a=$(objects "$NS_A" "$IF_A")
base_b=$(objects "$NS_B" "$IF_B")

ns_exec "$NS_B" timeout 600 "$XRXE" run -- "$PROG" -d "$DEV_B" -p 19201 -n "$NQP" -k 64 \
	>"$TMP/server.log" 2>&1 &
spid=$!
ns_exec "$NS_A" timeout 600 "$XRXE" run -- "$PROG" -d "$DEV_A" -p 19201 -n "$NQP" -k 64 "$IP4_B" \
	>"$TMP/client.log" 2>&1
crc=$?
wait "$spid"
src=$?
if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q "rc_scale: OK" "$TMP/client.log" &&
	grep -q "rc_scale: OK" "$TMP/server.log"; then
	tap_ok "$NQP connected RC QPs across two namespaces, WRITE + SEND on 64 of them with every byte checked, all destroyed"
else
	tap_fail "$NQP connected RC QPs across two namespaces (server exit $src, client exit $crc)"
fi
sed 's/^/#   server: /' "$TMP/server.log" | tail -n 8
sed 's/^/#   client: /' "$TMP/client.log" | tail -n 8
if grep -q "max_qp 262144 max_cq 262144 " "$TMP/client.log"; then
	tap_ok "ibv_query_device reports max_qp 262144 and max_cq 262144"
else
	tap_fail "ibv_query_device reports max_qp 262144 and max_cq 262144 ($(grep -o 'max_qp [0-9]* max_cq [0-9]*' "$TMP/client.log"))"
fi
a=$(wait_objects "$NS_A" "$IF_A" "$base_a")
b=$(wait_objects "$NS_B" "$IF_B" "$base_b")
if [ "$a" = "$base_a" ] && [ "$b" = "$base_b" ]; then
	tap_ok "after the applications exited both daemons hold what they held before ($a, $b objects)"
else
	tap_fail "after the applications exited both daemons hold what they held before (A $base_a -> $a, B $base_b -> $b)"
fi

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
maps_count() { wc -l <"/proc/$1/maps" 2>/dev/null || echo 0; }
rss0_a=$(rss_kib "$PID_A")
maps0_a=$(maps_count "$PID_A")

# An application pair with NKILL connected QPs each, killed while holding them.
# `ip netns exec` and `xrxe run` both exec, so $! is rc_scale itself.
ip netns exec "$NS_B" "$XRXE" run -- "$PROG" -d "$DEV_B" -p 19202 -n "$NKILL" -k 16 -H \
	>"$TMP/hold-b.log" 2>&1 &
HB=$!
ip netns exec "$NS_A" "$XRXE" run -- "$PROG" -d "$DEV_A" -p 19202 -n "$NKILL" -k 16 -H "$IP4_B" \
	>"$TMP/hold-a.log" 2>&1 &
HA=$!
held=0
for _ in $(seq 3000); do
	grep -q HOLDING "$TMP/hold-a.log" && grep -q HOLDING "$TMP/hold-b.log" && {
		held=1
		break
	}
	if ! kill -0 "$HA" 2>/dev/null || ! kill -0 "$HB" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
busy_a=$(objects "$NS_A" "$IF_A")
busy_b=$(objects "$NS_B" "$IF_B")
rss1_a=$(rss_kib "$PID_A")
# a report, not an assertion: the daemon's resident memory per 1000 connected
# QPs (its own state, and the ring pages it touched)
echo "# daemon A RSS $rss0_a -> $rss1_a KiB with $NKILL connected QPs: $(((rss1_a - rss0_a) * 1000 / NKILL)) KiB per 1000 QPs"
maps1_a=$(maps_count "$PID_A")
# 4 096 QPs' rings fill a handful of 2 MiB slabs; one mapping per ring would be 8 192
if [ $held = 1 ] && [ $((maps1_a - maps0_a)) -le $((NKILL / 16)) ]; then
	tap_ok "daemon A's mappings with $NKILL connected QPs: $maps0_a -> $maps1_a (rings in slabs)"
else
	tap_fail "daemon A's mappings with $NKILL connected QPs: $maps0_a -> $maps1_a (held $held; at most +$((NKILL / 16)))"
fi

kill -9 "$HA" "$HB" 2>/dev/null
wait "$HA" 2>/dev/null
wait "$HB" 2>/dev/null
t0=$SECONDS
a=$(wait_objects "$NS_A" "$IF_A" "$base_a")
b=$(wait_objects "$NS_B" "$IF_B" "$base_b")
if [ $held = 1 ] && [ "$busy_a" -gt "$NKILL" ] 2>/dev/null && [ "$busy_b" -gt "$NKILL" ] 2>/dev/null &&
	[ "$a" = "$base_a" ] && [ "$b" = "$base_b" ]; then
	tap_ok "two applications with $NKILL connected QPs each killed: both daemons released everything (A $busy_a -> $a, B $busy_b -> $b objects, $((SECONDS - t0)) s)"
else
	tap_fail "two applications with $NKILL connected QPs each killed: everything released (held $held; A $busy_a -> $a, B $busy_b -> $b; base $base_a, $base_b)"
	sed 's/^/#   a: /' "$TMP/hold-a.log" | tail -n 5
	sed 's/^/#   b: /' "$TMP/hold-b.log" | tail -n 5
fi
if kill -0 "$PID_A" 2>/dev/null && kill -0 "$PID_B" 2>/dev/null; then
	tap_ok "both daemons still running"
else
	tap_fail "both daemons still running"
fi
exit 0
