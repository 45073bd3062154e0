#!/usr/bin/env bash
# Go-back-N with loss probes under real random loss (issue 19): xrxed in two
# namespaces through a router that drops 1 % of the frames each way
# (tests/lib/router.sh, xrxe-impair), unmodified perftest through the shim.
#
# - ib_write_bw, ib_read_bw and ib_send_bw (-n iterations of 64 KiB) complete;
# - `xrxe qp --json` reports the loss recovery: the requester resent packets
#   and went through recovery episodes with a send window within [16, 128]
#   PSNs, the responder dropped requests past a hole (out_of_sequence), and
#   the counters are consistent (resends and episodes only where loss was).
# Correctness of every byte under loss is the unit suites' job
# (tests/unit/test_transport_loss.c, test_transport_data.c) and the
# interop suite's against kernel rxe; goodput is `make bench-loss`.
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "net/loss"
source tests/lib/netns.sh
XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
IMPAIR=$PWD/$BUILD/bin/xrxe-impair
RUN=("$XRXE" run --)
ITERS=${LOSS_TEST_ITERS:-100}

for f in "$XRXED" "$XRXE" "$IMPAIR" "$BUILD/lib/xrxe/libibverbs.so.1"; do
	if [ ! -e "$f" ]; then
		tap_fail "$f is built (make)"
		exit 1
	fi
done
missing=
for p in ib_write_bw ib_read_bw ib_send_bw; do
	command -v "$p" >/dev/null || missing="$missing $p"
done
if [ -n "$missing" ]; then
	tap_skip "loss runs" "perftest not installed:$missing (make deps)"
	exit 0
fi

source tests/lib/router.sh
router_up || { tap_fail "router topology"; exit 1; }
netns_tmpdir TMP
router_loss 1 && tap_ok "1 % loss each way at the router" ||
	{ tap_fail "xrxe-impair --loss 1 on the router"; exit 1; }

ns_bg "$NS_A" "$XRXED" "$IF_A" >"$TMP/xrxed-a.log" 2>&1
ns_bg "$NS_B" "$XRXED" "$IF_B" >"$TMP/xrxed-b.log" 2>&1
if ! netns_wait_file "/run/xrxe/$IF_A.sock" 10 || ! netns_wait_file "/run/xrxe/$IF_B.sock" 10; then
	tap_fail "xrxed started in both namespaces"
	tail -n 5 "$TMP"/xrxed-*.log | sed 's/^/#   /'
	exit 1
fi

# One perftest run; `xrxe qp --json` of both daemons sampled every 0.2 s
# into $TMP/NAME.a / .b (the last sample with an RC QP is what counts).
PORT=18970
perf() {
	local name=$1 spid i s
	PORT=$((PORT + 1))
	ns_exec "$NS_B" timeout 300 "${RUN[@]}" "$name" -d "xrxe_$IF_B" -x 1 -s 65536 -n "$ITERS" \
		-F -p "$PORT" >"$TMP/$name.server" 2>&1 &
	spid=$!
	for i in $(seq 200); do
		ns_exec "$NS_B" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	(
		while kill -0 "$spid" 2>/dev/null; do
			for s in a b; do
				[ $s = a ] && ns=$NS_A if=$IF_A || ns=$NS_B if=$IF_B
				out=$(ip netns exec "$ns" "$XRXE" qp "$if" --json 2>/dev/null)
				grep -q '"type":"RC"' <<<"$out" && echo "$out" >"$TMP/$name.$s"
			done
			sleep 0.2
		done
	) &
	local mpid=$!
	ns_exec "$NS_A" timeout 300 "${RUN[@]}" "$name" -d "xrxe_$IF_A" -x 1 -s 65536 -n "$ITERS" \
		-F -p "$PORT" "$IP_B" >"$TMP/$name.client" 2>&1
	local crc=$?
	wait "$spid"
	local src=$?
	wait "$mpid"
	[ $crc = 0 ] && [ $src = 0 ]
}

# get NAME SIDE KEY: a counter of the RC QP in the last sample.
get() {
	python3 -c '
import json, sys
try:
    qps = [q for q in json.load(open(sys.argv[1]))["qps"] if q["type"] == "RC"]
    print(qps[0][sys.argv[2]])
except Exception:
    print("missing")' "$TMP/$1.$2" "$3" 2>/dev/null
}

for name in ib_write_bw ib_read_bw ib_send_bw; do
	if perf "$name"; then
		tap_ok "$name -s 65536 -n $ITERS completes through 1 % loss each way"
	else
		tap_fail "$name -s 65536 -n $ITERS completes through 1 % loss each way"
		tail -n 5 "$TMP/$name.client" "$TMP/$name.server" | sed 's/^/#   /'
		continue
	fi
	grep -E '^ *65536 ' "$TMP/$name.client" | sed 's/^/#   /'
	# A is the requester (of READs too), B the responder
	req=a rsp=b
	resent=$(get "$name" $req resent_packets)
	recov=$(get "$name" $req recoveries)
	probes=$(get "$name" $req probes)
	cwnd=$(get "$name" $req cwnd)
	oos=$(get "$name" $rsp out_of_sequence)
	rsp_resent=$(get "$name" $rsp resent_packets)
	tmo=$(get "$name" $req timeouts)
	tap_diag "$name requester: resent_packets $resent recoveries $recov probes $probes cwnd $cwnd timeouts $tmo; responder: out_of_sequence $oos resent_packets $rsp_resent"
	if [ "$name" = ib_read_bw ]; then
		# lost READ responses: the requester asks again, the responder
		# replays (counted as its resent packets)
		ok=$(awk -v r="$recov" -v x="$rsp_resent" -v c="$cwnd" 'BEGIN {
			print (r ~ /^[0-9]+$/ && r > 0 && x > 0 && c >= 16 && c <= 128) ? 1 : 0 }')
	else
		ok=$(awk -v r="$recov" -v x="$resent" -v o="$oos" -v c="$cwnd" 'BEGIN {
			print (r ~ /^[0-9]+$/ && r > 0 && x > 0 && o > 0 && c >= 16 && c <= 128) ? 1 : 0 }')
	fi
	[ "$ok" = 1 ] && tap_ok "$name: xrxe qp --json shows the recovery (resends, episodes, window in [16, 128])" ||
		tap_fail "$name: xrxe qp --json shows the recovery (recoveries '$recov', resent '$resent', out_of_sequence '$oos', responder resent '$rsp_resent', cwnd '$cwnd')"
done

# The same counters stay zero without loss (nothing resent needlessly).
router_loss 0
if perf ib_write_bw; then
	resent=$(get ib_write_bw a resent_packets)
	recov=$(get ib_write_bw a recoveries)
	cwnd=$(get ib_write_bw a cwnd)
	tap_diag "no loss: resent_packets $resent recoveries $recov probes $(get ib_write_bw a probes) cwnd $cwnd"
	# A loaded machine still drops frames (a full veth or AF_XDP ring)
	# and starves the peer's daemon past the probe timer (a run at load
	# 13 resent 232 of 1 600 packets): what must never happen is resending
	# steadily, every window again (then resends reach the packet count).
	# So the bound is half of the packets sent, which load does not reach
	# and steady resending does. How few it is on an idle machine is for
	# `make bench-loss` to say.
	sent=$((ITERS * 65536 / 4096))
	[ "$cwnd" != missing ] && [ "$resent" -le $((sent / 2)) ] 2>/dev/null &&
		tap_ok "no loss: no steady resending ($resent resent of $sent packets), window $cwnd" ||
		tap_fail "no loss: no steady resending ('$resent' resent of $sent packets), window '$cwnd'"
else
	tap_fail "ib_write_bw without loss completes"
fi
exit "${TAP_FAILED:-0}"
