#!/usr/bin/env bash
# make demo: xrxe doing its job on an embedded default.
#
# Two network namespaces joined by a veth pair (MTU 9000, so path MTU 4096 and
# multi-buffer AF_XDP). In each: the XDP steering program and xrxed. Then the
# stock Debian rdma-core and perftest binaries, unmodified, through the shim:
# ibv_devices/ibv_devinfo, ibv_rc_pingpong, ib_write_bw, ib_write_lat,
# ibv_ud_pingpong and ibv_srq_pingpong across the namespaces; ping and TCP
# still work beside them; `xrxe stats` shows what happened and `xrxe cc show`
# the congestion-control parameters. Everything created is removed at the end, also on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's own programs first: the tests run Debian's python3 (the one with
# python3-pyverbs) and tools. A user's PATH may put others ahead -- pyenv's
# python3 shim, a shell script that took 6 s per start at load 8 on 2 cores.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
BUILD=${BUILD:-build}
XRXE=$PWD/$BUILD/bin/xrxe
XRXED=$PWD/$BUILD/bin/xrxed

if [ "$(id -u)" -ne 0 ]; then
	echo "make demo needs root (network namespaces, XDP, AF_XDP)" >&2
	exit 1
fi

A=xrxe-demo-a B=xrxe-demo-b
IP_A=10.99.0.1 IP_B=10.99.0.2
LOG=$(mktemp -d /tmp/xrxe-demo.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	ip netns del "$A" 2>/dev/null || true
	ip netns del "$B" 2>/dev/null || true
	rm -rf "$LOG"
}
trap cleanup EXIT INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
indent() { sed 's/^/  /'; }
# wait_port NS PORT: until a TCP listener on PORT exists in NS.
wait_port() {
	for _ in $(seq 100); do
		ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

step "two namespaces, veth MTU 9000: $A ($IP_A) <-> $B ($IP_B)"
ip netns del "$A" 2>/dev/null || true
ip netns del "$B" 2>/dev/null || true
ip netns add "$A"
ip netns add "$B"
ip link add xd-a netns "$A" type veth peer name xd-b netns "$B"
for side in "$A xd-a $IP_A fd99::1" "$B xd-b $IP_B fd99::2"; do
	set -- $side
	ip -n "$1" link set lo up
	ip -n "$1" link set "$2" mtu 9000 up
	ip -n "$1" addr add "$3/24" dev "$2"
	ip -n "$1" addr add "$4/64" dev "$2" nodad
	# veth's default noqueue drops AF_XDP frames silently under load; a
	# qdisc makes it push back instead (docs/facts/afxdp.md pitfall 6).
	ip netns exec "$1" tc qdisc replace dev "$2" root pfifo
done

step "xrxed on both ends (attaches XDP steering, binds AF_XDP, opens /run/xrxe/IFACE.sock)"
ip netns exec "$A" "$XRXED" xd-a >"$LOG/a.log" 2>&1 &
pids+=($!)
ip netns exec "$B" "$XRXED" xd-b >"$LOG/b.log" 2>&1 &
pids+=($!)
for f in a b; do
	for _ in $(seq 100); do grep -q ready "$LOG/$f.log" 2>/dev/null && break; sleep 0.1; done
	grep -E 'queue|ready' "$LOG/$f.log" | indent
done

step "the verbs device, as unmodified rdma-core tools see it (xrxe run -- ...)"
ip netns exec "$A" "$XRXE" run -- ibv_devices | indent
ip netns exec "$A" "$XRXE" run -- ibv_devinfo -v -d xrxe_xd-a |
	grep -E 'hca_id|transport|node_guid|vendor_id|max_qp:|max_mr_size|state:|active_mtu|link_layer|GID\[' | indent

step "ibv_rc_pingpong -g 1: 1000 round trips of 64 KiB, RC SEND over path MTU 4096"
ip netns exec "$B" "$XRXE" run -- ibv_rc_pingpong -g 1 -s 65536 -n 1000 >"$LOG/pp-server" 2>&1 &
srv=$!
wait_port "$B" 18515
ip netns exec "$A" "$XRXE" run -- ibv_rc_pingpong -g 1 -s 65536 -n 1000 "$IP_B" 2>&1 | indent
wait "$srv"

step "ib_write_bw: RDMA WRITE bandwidth, 64 KiB messages for 2 s (iperf3 below runs as long)"
ip netns exec "$B" "$XRXE" run -- ib_write_bw -x 1 -F -s 65536 -D 2 --report_gbits \
	>"$LOG/bw-server" 2>&1 &
srv=$!
wait_port "$B" 18515
ip netns exec "$A" "$XRXE" run -- ib_write_bw -x 1 -F -s 65536 -D 2 --report_gbits "$IP_B" 2>&1 |
	grep -E 'bytes|65536|Device|Link type|MTU' | indent
wait "$srv"

step "ib_write_lat: RDMA WRITE latency, 64 B"
ip netns exec "$B" "$XRXE" run -- ib_write_lat -x 1 -F -s 64 -n 5000 >"$LOG/lat-server" 2>&1 &
srv=$!
wait_port "$B" 18515
ip netns exec "$A" "$XRXE" run -- ib_write_lat -x 1 -F -s 64 -n 5000 "$IP_B" 2>&1 |
	grep -E 't_min|^ *64 ' | indent
wait "$srv"

step "ibv_ud_pingpong and ibv_srq_pingpong: UD datagrams with address handles, a shared receive queue"
ip netns exec "$B" "$XRXE" run -- ibv_ud_pingpong -g 1 -s 2048 -n 1000 >"$LOG/ud-server" 2>&1 &
srv=$!
wait_port "$B" 18515
ip netns exec "$A" "$XRXE" run -- ibv_ud_pingpong -g 1 -s 2048 -n 1000 "$IP_B" 2>&1 | indent
wait "$srv"
ip netns exec "$B" "$XRXE" run -- ibv_srq_pingpong -g 1 -q 8 -n 500 >"$LOG/srq-server" 2>&1 &
srv=$!
wait_port "$B" 18515
ip netns exec "$A" "$XRXE" run -- ibv_srq_pingpong -g 1 -q 8 -n 500 "$IP_B" 2>&1 | tail -n 2 | indent
wait "$srv"

step "non-RoCE traffic still goes through the kernel: ping and TCP"
ip netns exec "$A" ping -c 2 -i 0.2 "$IP_B" | grep -E 'bytes from|loss' | indent
if command -v iperf3 >/dev/null; then
	ip netns exec "$B" iperf3 -s -1 -D -p 5201 --logfile "$LOG/iperf.log"
	wait_port "$B" 5201
	ip netns exec "$A" iperf3 -c "$IP_B" -p 5201 -t 2 | grep -E 'receiver' | indent
fi

step "xrxe stats on $B (XDP, AF_XDP, transport, control)"
# A selection; `xrxe stats IFACE` prints them all (and --json).
ip netns exec "$B" "$XRXE" stats xd-b |
	grep -E '^(counter|steered|passed|no_socket) |^(xsk0\.(rx|tx)_frames|daemon\.rx_ok|daemon\.rx_drop_icrc_mismatch|daemon\.tx_frames|transport\.(rx|tx)_packets|ctrl\.(accepted|closed|requests|bad_requests)) ' |
	indent

step "congestion control: DCQCN parameters of $A (xrxe cc show; set/enable/disable change them)"
ip netns exec "$A" "$XRXE" cc show xd-a | head -n 12 | indent

step "more"
cat <<'EOF' | indent
make test runs every suite (also against kernel rxe in a QEMU guest: tests/interop);
make bench measures throughput and latency; make bench-cc runs the DCQCN experiments
through xrxe-impair (docs/cc/).
EOF
step "cleaning up"
