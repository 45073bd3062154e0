#!/usr/bin/env bash
# xrxed --rt-priority under load: a SCHED_FIFO daemon whose QP can only wait
# for the network must nap, not spin (a spinning real-time task would starve
# every normal task on its CPU), and the transfer must survive it.
#
# ib_write_bw (64 KiB WRITEs, 2 s) from A (xrxed --rt-priority 10) to B
# (normal xrxed). Half-way, B's daemon is stopped (SIGSTOP) for 0.3 s: A's QP
# is then window-bound with WQEs it cannot send, which is exactly when the
# old loop spun. Checks: A's daemon.naps grew during the stop, A used less
# than half of one CPU during it (spinning: ~100 %), and after SIGCONT both
# perftest ends finish and report success. The QPs' Local ACK Timeout is
# raised (-u 17: 537 ms, x retry_cnt 7 = 3.8 s) so that the stop stays well
# inside one timeout: with perftest's default (14: 67 ms, 470 ms in all) a
# 0.3 s stop used 6-7 of the 7 retries here, and on a loaded machine, with B
# slow to answer after SIGCONT, one more ended the run in RETRY_EXC_ERR.
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "a real-time xrxed between namespaces"
source tests/lib/netns.sh
source tests/lib/verbs.sh

XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
RUN=("$XRXE" run --)
STOP_S=0.3

for f in "$XRXED" "$XRXE" "$PWD/$BUILD/lib/xrxe/libibverbs.so.1"; do
	[ -e "$f" ] || { tap_fail "$f is built"; exit 1; }
done
command -v ib_write_bw >/dev/null || { tap_fail "perftest is installed (make deps)"; exit 1; }

netns_tmpdir TMP
netns_pair 71 9000 || { tap_fail "namespaces and veth"; exit 1; }
ns_bg "$NS_A" "$XRXED" --rt-priority 10 "$IF_A" >"$TMP/xrxed-a.log" 2>&1
PID_A=$NETNS_LAST_PID
ns_bg "$NS_B" "$XRXED" "$IF_B" >"$TMP/xrxed-b.log" 2>&1
PID_B=$NETNS_LAST_PID
if ! netns_wait_file "/run/xrxe/$IF_A.sock" 10 || ! netns_wait_file "/run/xrxe/$IF_B.sock" 10; then
	tap_fail "xrxed on both ends (A real-time)"
	tap_diag "$(cat "$TMP"/xrxed-*.log)"
	exit 1
fi

stat_a() {
	ns_exec "$NS_A" "$XRXE" stats "$IF_A" --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["daemon"]["daemon"][sys.argv[1]])' "$1"
}
# CPU time of a process in clock ticks (utime + stime, proc(5) fields 14, 15).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# perftest runs for 8 s: long enough that the stop below lands inside the
# transfer even where each probe of `xrxe qp` (a python3 start) is slow --
# with 2 s the QP was sometimes gone before the stop, and nothing could nap
PORT=18771
ns_exec "$NS_B" timeout 60 "${RUN[@]}" ib_write_bw -d "xrxe_$IF_B" -x 1 -F -u 17 -p $PORT -D 8 \
	-s 65536 --report_gbits >"$TMP/server.out" 2>&1 &
SPID=$!
wait_listen "$NS_B" $PORT
ns_exec "$NS_A" timeout 60 "${RUN[@]}" ib_write_bw -d "xrxe_$IF_A" -x 1 -F -u 17 -p $PORT -D 8 \
	-s 65536 --report_gbits "$IP4_B" >"$TMP/client.out" 2>&1 &
CPID=$!

# Until A's QP is sending, then stop B's daemon half-way through the run.
for _ in $(seq 100); do
	ns_exec "$NS_A" "$XRXE" qp "$IF_A" --json 2>/dev/null |
		python3 -c 'import json,sys; sys.exit(0 if any(q["tx_packets"] > 1000 for q in json.load(sys.stdin)["qps"]) else 1)' &&
		break
	sleep 0.05
done
sleep 0.5
naps0=$(stat_a naps)
hz=$(getconf CLK_TCK)
ticks0=$(cpu_ticks "$PID_A")
t0=$(date +%s%N)
kill -STOP "$PID_B"
sleep "$STOP_S"
ticks1=$(cpu_ticks "$PID_A")
t1=$(date +%s%N)
kill -CONT "$PID_B"
naps1=$(stat_a naps)

wait "$CPID"
crc=$?
wait "$SPID"
src=$?
if [ $crc = 0 ] && [ $src = 0 ] && grep -qE "^ *65536 +[0-9]+" "$TMP/client.out"; then
	tap_ok "ib_write_bw from a SCHED_FIFO daemon survives the peer's daemon stopping for ${STOP_S} s"
else
	tap_fail "ib_write_bw from a SCHED_FIFO daemon survives the peer's daemon stopping (client $crc, server $src)"
	tap_diag "$(grep -vE '^ *(GID|remote address|local address):|^-+$' "$TMP/client.out" | tail -n 15)"
	tap_diag "$(grep -vE '^ *(GID|remote address|local address):|^-+$' "$TMP/server.out" | tail -n 15)"
	tap_diag "$(tail -n 10 "$TMP/xrxed-a.log" "$TMP/xrxed-b.log")"
fi
if [ "$naps1" -gt "$naps0" ]; then
	tap_ok "while its QP waited for ACKs the real-time daemon napped ($((naps1 - naps0)) naps)"
else
	tap_fail "while its QP waited for ACKs the real-time daemon napped (naps $naps0 -> $naps1)"
fi
# CPU share during the stop, in percent of one CPU.
share=$(((ticks1 - ticks0) * 100 * 1000000000 / hz / (t1 - t0)))
if [ "$share" -lt 50 ]; then
	tap_ok "the real-time daemon did not spin while its peer was stopped (${share} % of a CPU)"
else
	tap_fail "the real-time daemon did not spin while its peer was stopped (${share} % of a CPU)"
fi

kill "$PID_A" "$PID_B" 2>/dev/null
wait "$PID_A" "$PID_B" 2>/dev/null
if grep -qE "Sanitizer|runtime error" "$TMP"/xrxed-*.log; then
	tap_fail "no sanitizer report from the daemons"
	tap_diag "$(grep -hE -A5 "Sanitizer|runtime error" "$TMP"/xrxed-*.log | head -n 30)"
else
	tap_ok "no sanitizer report from the daemons"
fi
exit "$TAP_FAILED"
