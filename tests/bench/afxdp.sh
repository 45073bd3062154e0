#!/usr/bin/env bash
# The raw AF_XDP limits of a veth pair through xrxe's I/O layer (no transport):
# frame blaster throughput and busy-polled ping-pong latency, beside kernel TCP
# (iperf3) on the same pair, all in one run. These are the baselines the
# transport's numbers are reported against.
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
source tests/lib/netns.sh
P=$PWD/$BUILD/tests/net/xskprobe
DURATION=${BENCH_DURATION:-3}

netns_pair 201 9000
ADDRS=$MAC_A,$MAC_B,$IP4_A,$IP4_B
tmp=$(mktemp -d)
NETNS_TMPDIRS+=("$tmp")
val() { awk -v k="$1" '$1 == k { print $2 }' "$2" | tail -n 1; }

printf '%-34s %10s %10s %10s\n' "AF_XDP blast A->B (copy mode)" "tx Mpps" "rx Mpps" "rx Gbit/s"
for size in 64 1518 4200 9018; do
	ns_exec "$NS_B" "$P" rx "$IF_B" --cpu 1 --spin --idle 1 --timeout $((DURATION + 20)) \
		--rx-ring 8192 --ready-file "$tmp/ready" >"$tmp/rx" 2>&1 &
	rxpid=$!
	for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
	ns_exec "$NS_A" "$P" blast "$IF_A" --size "$size" --duration "$DURATION" --cpu 0 \
		--addrs "$ADDRS" >"$tmp/tx" 2>&1
	wait "$rxpid"
	rm -f "$tmp/ready"
	printf '%-34s %10s %10s %10s\n' "  $(val gen_frame_len "$tmp/tx") B frames" \
		"$(val tx_mpps "$tmp/tx")" "$(val rx_mpps "$tmp/rx")" "$(val rx_gbps "$tmp/rx")"
done

printf '\n%-34s %10s %10s %10s\n' "AF_XDP ping-pong (both spin)" "min us" "p50 us" "p99 us"
for size in 64 4200; do
	# ns_bg, not ns_exec ... &: $! would be a subshell, and killing it would
	# leave the probe echoing (and holding the queue) until its timeout.
	ns_bg "$NS_B" "$P" pong "$IF_B" --spin --cpu 1 --timeout 30 \
		--ready-file "$tmp/ready" >"$tmp/pong" 2>&1
	pongpid=$NETNS_LAST_PID
	for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
	ns_exec "$NS_A" "$P" ping "$IF_A" --spin --cpu 0 --count 20000 --size "$size" \
		--addrs "$ADDRS" >"$tmp/ping" 2>&1
	kill "$pongpid" 2>/dev/null
	wait "$pongpid" 2>/dev/null
	rm -f "$tmp/ready"
	printf '%-34s %10s %10s %10s\n' "  $(val gen_frame_len "$tmp/ping") B" \
		"$(val rtt_min_us "$tmp/ping")" "$(val rtt_p50_us "$tmp/ping")" "$(val rtt_p99_us "$tmp/ping")"
done

if command -v iperf3 >/dev/null; then
	ns_exec "$NS_B" iperf3 -s -1 -p 5299 >/dev/null 2>&1 &
	sleep 0.5
	gbps=$(ns_exec "$NS_A" iperf3 -c "$IP4_B" -p 5299 -t "$DURATION" -J 2>/dev/null |
		python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))')
	wait
	printf '\n%-34s %10s\n' "kernel TCP (iperf3, MTU 9000)" "Gbit/s"
	printf '%-34s %10s\n' "  1 stream" "$gbps"
fi
