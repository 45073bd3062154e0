#!/usr/bin/env bash
# make bench-loss: goodput of unmodified perftest over xrxe under random loss,
# as a ratio to the 0-loss run of the same session (issue 19).
#
#   A (10.83.1.1) ── r: ip_forward, xrxe-impair --loss P on both egresses ── B (10.83.2.1)
#
# (tests/lib/router.sh: veths at MTU 9000, path MTU 4096), xrxed in A and B.
# For each
# of ib_write_bw, ib_read_bw and ib_send_bw (-s 65536, RC, -F) at each loss
# rate, one run of LOSS_DURATION seconds; the table gives the bandwidth, its
# ratio to the 0-loss run, and what the QPs' counters (`xrxe qp --json`, read
# just before the run ends) say: packets the requester side sent per packet
# delivered, resends, duplicates the responder side saw, recovery episodes,
# loss probes and Local ACK Timeouts (counters are read at 90 % of the run,
# so they cover most of it, not all).
#
# Environment:
#   LOSS_DURATION=S        seconds per run (default 5)
#   LOSS_RATES="0 0.1 ..." loss per direction in % (default "0 0.1 0.5 1 2";
#                          the first must be 0: the baseline)
#   LOSS_TOOLS="..."       default "ib_write_bw ib_read_bw ib_send_bw"
#   LOSS_XRXED_OPTS="..."  extra xrxed options for both daemons ("--rexmit fixed")
#   LOSS_CPUS="DA DB S C"  CPUs of xrxed A, xrxed B, the perftest server (in B)
#                          and client (in A); default "0 1 0 1" (tests/bench/verbs.sh)
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/netns.sh
XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
IMPAIR=$PWD/$BUILD/bin/xrxe-impair
RUN=("$XRXE" run --)
DURATION=${LOSS_DURATION:-5}
read -r -a RATES <<<"${LOSS_RATES:-0 0.1 0.5 1 2}"
read -r -a TOOLS <<<"${LOSS_TOOLS:-ib_write_bw ib_read_bw ib_send_bw}"
read -r CPU_DA CPU_DB CPU_S CPU_C <<<"${LOSS_CPUS:-0 1 0 1}"

if [ "$(id -u)" -ne 0 ]; then
	echo "loss bench skipped: needs root (namespaces, XDP)"
	exit 0
fi
for f in "$XRXED" "$XRXE" "$IMPAIR" "$BUILD/lib/xrxe/libibverbs.so.1"; do
	if [ ! -e "$f" ]; then
		echo "loss bench skipped: $f is not built (make)"
		exit 0
	fi
done
for p in "${TOOLS[@]}"; do
	if ! command -v "$p" >/dev/null; then
		echo "loss bench skipped: $p is not installed (make deps)"
		exit 0
	fi
done
if [ "${RATES[0]}" != 0 ]; then
	echo "loss bench: LOSS_RATES must start with 0 (the baseline)"
	exit 2
fi

pin() {
	PIN=()
	[ "$1" = - ] || PIN=(taskset -c "$1")
}

source tests/lib/router.sh
if ! router_up; then
	echo "loss bench: could not build the topology"
	exit 1
fi
netns_tmpdir tmp
[ -n "${LOSS_KEEP:-}" ] && tmp=$LOSS_KEEP && mkdir -p "$tmp"

pin "$CPU_DA"
# shellcheck disable=SC2086 # LOSS_XRXED_OPTS: a word list
ns_bg "$NS_A" nice -n -10 "${PIN[@]}" "$XRXED" ${LOSS_XRXED_OPTS-} "$IF_A" >"$tmp/xrxed-a.log" 2>&1
pin "$CPU_DB"
# shellcheck disable=SC2086
ns_bg "$NS_B" nice -n -10 "${PIN[@]}" "$XRXED" ${LOSS_XRXED_OPTS-} "$IF_B" >"$tmp/xrxed-b.log" 2>&1
if ! netns_wait_file "/run/xrxe/$IF_A.sock" 10 || ! netns_wait_file "/run/xrxe/$IF_B.sock" 10; then
	echo "loss bench: xrxed did not start"
	tail -n 5 "$tmp"/xrxed-*.log
	exit 1
fi

# qp_counters NS IFACE RAW: the sum of the RC QPs' counters of one daemon as
# "key value" lines (its JSON kept in RAW).
qp_counters() {
	ip netns exec "$1" "$XRXE" qp "$2" --json 2>&1 | tee "$3" | python3 -c '
import json, sys
keys = ("tx_packets", "rx_packets", "retransmits", "fast_retransmits", "timeouts",
        "duplicates", "seq_naks_sent", "seq_naks_rcvd", "resent_packets",
        "out_of_sequence", "recoveries", "probes")
try:
    qps = [q for q in json.load(sys.stdin)["qps"] if q["type"] == "RC"]
except Exception:
    qps = []
for k in keys:
    print(k, sum(q.get(k, 0) for q in qps))'
}

PORT=18950
# run TOOL LABEL: server in B, client in A; result line in $tmp/LABEL, the
# counters of both daemons just before the end in $tmp/LABEL.a / .b.
run() {
	local tool=$1 out=$tmp/$2 i spid
	PORT=$((PORT + 1))
	pin "$CPU_S"
	ip netns exec "$NS_B" timeout $((DURATION + 60)) "${PIN[@]}" "${RUN[@]}" "$tool" \
		-d "xrxe_$IF_B" -x 1 -s 65536 -F -p "$PORT" -D "$DURATION" --report_gbits \
		>"$out.server" 2>&1 &
	spid=$!
	for i in $(seq 200); do
		ip netns exec "$NS_B" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	(
		# Near the end of the timed part (perftest's set-up takes a
		# moment), both daemons at once: the QPs go when it ends.
		sleep "$(awk -v d="$DURATION" 'BEGIN { print d * 0.9 }')"
		qp_counters "$NS_A" "$IF_A" "$out.a.json" >"$out.a" &
		qp_counters "$NS_B" "$IF_B" "$out.b.json" >"$out.b"
		wait
	) &
	local cpid=$!
	pin "$CPU_C"
	ip netns exec "$NS_A" timeout $((DURATION + 60)) "${PIN[@]}" "${RUN[@]}" "$tool" \
		-d "xrxe_$IF_A" -x 1 -s 65536 -F -p "$PORT" -D "$DURATION" --report_gbits \
		"$IP_B" >"$out.client" 2>&1
	wait "$spid"
	wait "$cpid"
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$out.client" | tail -n 1 | awk '{ print $4 }' >"$out"
}
val() {
	local v
	v=$(awk -v k="$1" '$1 == k { print $2 }' "$2" 2>/dev/null)
	echo "${v:-0}"
}
# fmt A B: A / B with two decimals, n/a when B is 0 or either is missing.
fmt() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "n/a";
		else printf "%.2f\n", a / b }'
}

echo "loss bench: ${DURATION}s per run, 64 KiB messages, loss on both directions at the router${LOSS_XRXED_OPTS:+, xrxed $LOSS_XRXED_OPTS}; load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
printf '%-12s %7s %9s %6s %9s %8s %8s %8s %8s %8s\n' tool "loss %" "Gbit/s" ratio \
	"sent/dlv" resent dups recov probes timeouts
for tool in "${TOOLS[@]}"; do
	base=
	for loss in "${RATES[@]}"; do
		router_loss "$loss" || { echo "loss bench: xrxe-impair failed"; exit 1; }
		label=$tool-$loss
		run "$tool" "$label"
		bw=$(cat "$tmp/$label" 2>/dev/null)
		bw=${bw:-n/a}
		[ "$loss" = 0 ] && base=$bw
		# The data direction: READ responses flow B -> A, the rest A -> B.
		if [ "$tool" = ib_read_bw ]; then dsend=b drecv=a; else dsend=a drecv=b; fi
		sent=$(val tx_packets "$tmp/$label.$dsend")
		dlv=$(($(val rx_packets "$tmp/$label.$drecv") - $(val duplicates "$tmp/$label.$drecv") -
			$(val out_of_sequence "$tmp/$label.$drecv")))
		resent=$(($(val resent_packets "$tmp/$label.a") + $(val resent_packets "$tmp/$label.b")))
		dups=$(($(val duplicates "$tmp/$label.a") + $(val duplicates "$tmp/$label.b")))
		recov=$(($(val recoveries "$tmp/$label.a") + $(val recoveries "$tmp/$label.b")))
		probes=$(($(val probes "$tmp/$label.a") + $(val probes "$tmp/$label.b")))
		tmo=$(($(val timeouts "$tmp/$label.a") + $(val timeouts "$tmp/$label.b")))
		printf '%-12s %7s %9s %6s %9s %8s %8s %8s %8s %8s\n' "$tool" "$loss" "$bw" \
			"$(fmt "$bw" "$base")" "$(fmt "$sent" "$dlv")" "$resent" "$dups" "$recov" \
			"$probes" "$tmo"
	done
done
router_loss 0
echo "sent/dlv: packets the data's sender sent (its ACKs and probes included) per data packet the receiver took in order"
echo "placement: xrxed A cpu $CPU_DA, xrxed B cpu $CPU_DB (nice -10), perftest server (B) cpu $CPU_S, client (A) cpu $CPU_C"
