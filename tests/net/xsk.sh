#!/usr/bin/env bash
# The AF_XDP I/O layer (src/daemon/xsk_io.c) end to end, driven by xskprobe on
# a veth pair between two network namespaces: A sends, B receives on an AF_XDP
# socket behind the XDP steering program.
#
# At MTU 1500 and at MTU 9000 (multi-buffer: 4198- and 9018-byte frames span
# two and three UMEM chunks):
#  (a) the golden rxe frames, rewritten to the namespaces' addresses, arrive all
#      of them with valid ICRCs, sent through AF_XDP and through the kernel
#      stack (AF_PACKET); the IPv6 ones of rxe-ipv6-rnr-loss.pcap too;
#  (b) corrupted ICRCs are counted icrc-mismatch by the receiver, truncated
#      frames drop_short by the XDP program;
#  (c) generated frames of every size class arrive intact (pattern, sequence,
#      exact count) from the I/O layer on one side to the I/O layer on the other;
#  (e) ping works while the socket is bound, and a closed socket leaves no
#      XSKMAP entry behind;
#  (d) `xrxe detach` restores the interface;
#  (f) at MTU 20000, frames of more than XRXE_MAX_FRAGS buffers are dropped and
#      counted, and their chunks recycled.
#
#   tests/net/xsk.sh          (root; BUILD=build-san for the sanitizer build)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=../lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
tap_require_root "net/xsk"
# shellcheck source=../lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"

BUILD=${BUILD:-build}
XRXE=${XRXE:-$XRXE_ROOT/$BUILD/bin/xrxe}
XSKPROBE=${XSKPROBE:-$XRXE_ROOT/$BUILD/tests/net/xskprobe}
GOLDEN=${XRXE_GOLDEN_DIR:-$XRXE_ROOT/tests/golden}
# Generated frames per size; enough to fill the rings many times over.
GEN_COUNT=${GEN_COUNT:-20000}
# Paced, because the receiver may be descheduled for a few ms on this 2-core
# VM (other processes, the sender itself, ASan): unpaced senders reach 1.1 /
# 0.27 Mpps (small / 9018 B), and the receiver's RX ring (8192 descriptors
# here) holds 8192 small frames but only 2730 of 9018 bytes (3 buffers each).
# At these rates it rides out stalls of 80-90 ms (docs/facts/afxdp.md pitfall 13).
GEN_RATE_SMALL=${GEN_RATE_SMALL:-100000}
GEN_RATE_JUMBO=${GEN_RATE_JUMBO:-30000}
# At load 12 it was still descheduled for longer (1 495 of 20 000 jumbo
# frames dropped at its full RX ring): frames the kernel counts as dropped
# at the socket's rings may be missing (--ring-loss-ok); every frame that
# arrives must still be intact and in order, and none may go missing
# otherwise.
GEN_RX_RINGS=${GEN_RX_RINGS:-"--rx-ring 8192 --frames 32768 --ring-loss-ok"}
for bin in "$XRXE" "$XSKPROBE"; do
	if [ ! -x "$bin" ]; then
		tap_fail "$bin is built (make tests)"
		exit 1
	fi
done
netns_tmpdir TMP

# --- helpers -------------------------------------------------------------------

# rx_start NAME ARGS...: start `xskprobe rx` on B in the background and wait
# until its socket is bound (it writes a ready file). Output in $TMP/NAME.out.
rx_start() {
	local name=$1
	shift
	rm -f "$TMP/$name.ready"
	ns_bg "$NS_B" "$XSKPROBE" rx "$IF_B" --ready-file "$TMP/$name.ready" "$@" \
		>"$TMP/$name.out" 2>&1
	RX_PID=$NETNS_LAST_PID
	netns_wait_file "$TMP/$name.ready" 10
}

# rx_check DESC NAME: the receiver started by rx_start exited 0 (all its
# expectations held).
rx_check() {
	local desc=$1 name=$2 rc
	wait "$RX_PID"
	rc=$?
	if [ $rc -eq 0 ]; then
		tap_ok "$desc"
		# (--ring-loss-ok: what the kernel dropped at a full ring)
		local drops
		drops=$(sed -n 's/^rx_ring_drops //p' "$TMP/$name.out")
		[ "${drops:-0}" = 0 ] ||
			tap_diag "the receiver's full rings dropped $drops frames, counted by the kernel; none lost otherwise"
	else
		tap_fail "$desc"
		tap_diag "receiver exited $rc:"
		tap_diag "$(grep -vE '^(xsk|rx_opcode) ' "$TMP/$name.out" | tail -n 25)"
	fi
}

# receive DESC NAME "RX ARGS" SENDER...: a receiver with RX ARGS, then the
# sender in A, then both verdicts (the sender's only when it fails).
receive() {
	local desc=$1 name=$2 rxargs=$3 out
	shift 3
	# shellcheck disable=SC2086 # rxargs is a word list
	if ! rx_start "$name" $rxargs; then
		tap_fail "$desc (receiver not ready)"
		tap_diag "$(cat "$TMP/$name.out")"
		kill "$RX_PID" 2>/dev/null
		wait "$RX_PID" 2>/dev/null
		return
	fi
	if ! out=$(ns_exec "$NS_A" "$XSKPROBE" "$@" 2>&1); then
		tap_fail "$desc (sender failed)"
		tap_diag "$(grep -v '^xsk ' <<<"$out")"
	fi
	rx_check "$desc" "$name"
}

gen_rate() { if [ "$1" -gt 3840 ]; then echo "$GEN_RATE_JUMBO"; else echo "$GEN_RATE_SMALL"; fi; }

# xdp_counter NS IFACE NAME: packets of one steering counter.
xdp_counter() {
	ns_exec "$1" "$XRXE" stats "$2" --json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"][sys.argv[1]]["packets"])' "$3" 2>/dev/null
}

# opcode_psn_len FILE: "opcode psn length" per RoCEv2 frame, as Wireshark's
# InfiniBand dissector decodes it (a decoder independent of xrxe's).
opcode_psn_len() {
	tshark -r "$1" -Y infiniband -T fields -e infiniband.bth.opcode -e infiniband.bth.psn \
		-e frame.len 2>/dev/null
}

# --- one configuration -----------------------------------------------------------

run_config() {
	local id=$1 mtu=$2 tag="MTU $2" before after rw golden6 n size sizes via
	netns_pair "$id" "$mtu" || { tap_fail "$tag: namespaces and veth"; return; }
	before=$(ns_exec "$NS_B" ip -d link show dev "$IF_B")
	rw="$MAC_A,$MAC_B,$IP4_A,$IP4_B,$IP6_A,$IP6_B"

	# (a) golden frames, AF_XDP -> AF_XDP and kernel stack -> AF_XDP.
	if [ -r "$GOLDEN/rxe-golden.pcap" ]; then
		for via in xsk packet; do
			receive "$tag: 168 golden IPv4 frames sent via $via arrive, all ICRC-valid" \
				"golden-$via" "--count 168 --expect-valid 168 --timeout 20 --pcap $TMP/golden-$via.pcap" \
				tx "$IF_A" --pcap "$GOLDEN/rxe-golden.pcap" --rewrite "$rw" --via "$via"
		done
		if command -v tshark >/dev/null; then
			if diff <(opcode_psn_len "$GOLDEN/rxe-golden.pcap") \
				<(opcode_psn_len "$TMP/golden-xsk.pcap") >"$TMP/diff" 2>&1; then
				tap_ok "$tag: tshark: received frames = golden frames (opcode, PSN, length, order)"
			else
				tap_fail "$tag: tshark: received frames = golden frames (opcode, PSN, length, order)"
				tap_diag "$(head -n 20 "$TMP/diff")"
			fi
		else
			tap_skip "$tag: tshark decode of the received frames" "tshark not installed"
		fi
	else
		tap_skip "$tag: golden IPv4 frames" "$GOLDEN/rxe-golden.pcap not found"
	fi
	golden6=$GOLDEN/rxe-ipv6-rnr-loss.pcap
	if [ -r "$golden6" ]; then
		for via in xsk packet; do
			receive "$tag: the 24 golden IPv6 frames sent via $via arrive, all ICRC-valid" \
				"golden6-$via" "--count 24 --expect-valid 24 --timeout 20" \
				tx "$IF_A" --pcap "$golden6" --filter ip6 --rewrite "$rw" --via "$via"
		done
	else
		tap_skip "$tag: golden IPv6 frames" "$golden6 not found"
	fi

	# (b) bad frames.
	if [ -r "$GOLDEN/rxe-golden.pcap" ]; then
		receive "$tag: 168 frames with a corrupted ICRC are counted icrc-mismatch" corrupt \
			"--count 168 --expect-valid 0 --expect-err icrc-mismatch=168 --timeout 20" \
			tx "$IF_A" --pcap "$GOLDEN/rxe-golden.pcap" --rewrite "$rw" --corrupt-icrc
		# 50 bytes: UDP header + 8 bytes, less than BTH + ICRC. Nothing reaches
		# the socket, so the receiver just listens for 3 s.
		local short0 short1
		short0=$(xdp_counter "$NS_B" "$IF_B" drop_short)
		receive "$tag: 168 frames truncated below UDP+BTH+ICRC: drop_short +168, none delivered" \
			truncated "--timeout 3 --expect-valid 0 --expect-xdp drop_short=168" \
			tx "$IF_A" --pcap "$GOLDEN/rxe-golden.pcap" --rewrite "$rw" --truncate 50
		short1=$(xdp_counter "$NS_B" "$IF_B" drop_short)
		tap_check "$tag: xrxe stats agrees: drop_short rose by 168 ($short0 -> $short1)" \
			test "$((short1 - short0))" -eq 168
	fi

	# (c) generated frames through the I/O layer on both sides.
	if [ "$mtu" -le 1500 ]; then
		sizes="64 $((mtu + 18))"
	else
		sizes="64 1518 4200 $((mtu + 18))"
	fi
	n=$GEN_COUNT
	for size in $sizes; do
		receive "$tag: $n generated $size-byte frames arrive intact (pattern, sequence, count less the kernel's ring drops)" \
			"gen-$size" "--count $n --expect-valid $n --check-pattern --timeout 30 $GEN_RX_RINGS" \
			gen "$IF_A" --addrs "$rw" --size "$size" --count "$n" --rate "$(gen_rate "$size")"
	done
	size=$((mtu + 18))
	receive "$tag: $n generated IPv6 RDMA WRITE frames of $size bytes arrive intact" \
		"gen6-$size" "--count $n --expect-valid $n --check-pattern --timeout 30 $GEN_RX_RINGS" \
		gen "$IF_A" --addrs "$rw" --ipv6 --opcode write --size "$size" --count "$n" \
		--rate "$(gen_rate "$size")"

	# (e) ordinary traffic while the socket is bound.
	if rx_start idle --timeout 30; then
		tap_check "$tag: ping IPv4 while the AF_XDP socket is bound" \
			ns_exec "$NS_A" ping -c 3 -i 0.1 -W 2 "$IP4_B"
		tap_check "$tag: ping IPv6 while the AF_XDP socket is bound" \
			ns_exec "$NS_A" ping -6 -c 3 -i 0.1 -W 2 "$IP6_B"
		kill -TERM "$RX_PID"
		rx_check "$tag: an idle receiver stops cleanly on SIGTERM" idle
	else
		tap_fail "$tag: receiver for the ping test not ready"
	fi
	# Closing the socket removed it from the XSKMAP: RoCEv2 frames now find
	# no socket and go to the kernel.
	if [ -r "$GOLDEN/rxe-golden.pcap" ]; then
		local ns0 ns1 st0 st1
		ns0=$(xdp_counter "$NS_B" "$IF_B" no_socket)
		st0=$(xdp_counter "$NS_B" "$IF_B" steered)
		tap_check "$tag: send golden frames with no receiver" ns_exec "$NS_A" "$XSKPROBE" \
			tx "$IF_A" --pcap "$GOLDEN/rxe-golden.pcap" --rewrite "$rw"
		sleep 0.2
		ns1=$(xdp_counter "$NS_B" "$IF_B" no_socket)
		st1=$(xdp_counter "$NS_B" "$IF_B" steered)
		tap_check "$tag: after close, no XSKMAP entry: no_socket +168 ($ns0 -> $ns1), steered +0" \
			test "$((ns1 - ns0))" -eq 168 -a "$((st1 - st0))" -eq 0
	fi

	# (d) detach restores the interface.
	tap_check "$tag: xrxe detach" ns_exec "$NS_B" "$XRXE" detach "$IF_B"
	after=$(ns_exec "$NS_B" ip -d link show dev "$IF_B")
	if ! grep -q xdp <<<"$after" && [ "$before" = "$after" ]; then
		tap_ok "$tag: ip -d link show: no xdp, as before the test"
	else
		tap_fail "$tag: ip -d link show: no xdp, as before the test"
		tap_diag "$(diff <(echo "$before") <(echo "$after"))"
	fi
	tap_check "$tag: ping after detach" ns_exec "$NS_A" ping -c 1 -W 2 "$IP4_B"
}

# (f) Chains longer than XRXE_MAX_FRAGS: at MTU 20000 a 16042-byte frame takes
# five 3840-byte buffers. 3000 of them are dropped and counted, and their
# 15000 chunks (more than the 8192 RX chunks of the UMEM) must all go back to
# the fill ring: the 20 small frames sent afterwards still arrive.
long_chains() {
	local out drops frames
	netns_pair 3 20000 || { tap_fail "MTU 20000: namespaces and veth"; return; }
	if ! rx_start long --timeout 20 --idle 1; then
		tap_fail "MTU 20000: receiver not ready"
		return
	fi
	tap_check "MTU 20000: send 3000 16000-byte and 20 100-byte RoCEv2 datagrams (kernel UDP)" \
		ns_exec "$NS_A" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
bth = bytes([4, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 0])  # RC SEND_ONLY, QP 0x11
for _ in range(3000):
    s.sendto(bth + bytes(16000 - 12), (sys.argv[1], 4791))
time.sleep(0.2)
for _ in range(20):
    s.sendto(bth + bytes(100 - 12), (sys.argv[1], 4791))' "$IP4_B"
	rx_check "MTU 20000: receiver ran" long
	out=$(cat "$TMP/long.out")
	drops=$(sed -n 's/^xsk rx_dropped_too_many_frags //p' <<<"$out")
	frames=$(sed -n 's/^rx_frames //p' <<<"$out")
	# The kernel's own UDP path may drop a few big ones at the qdisc; what
	# matters is that far more chunks than the UMEM holds went round.
	if [ "${drops:-0}" -ge 2000 ] && [ "${frames:-0}" -eq 20 ]; then
		tap_ok "MTU 20000: over-long chains dropped and counted ($drops), chunks recycled (20 small frames arrive)"
	else
		tap_fail "MTU 20000: over-long chains dropped and counted, chunks recycled"
		tap_diag "rx_dropped_too_many_frags ${drops:-?}, rx_frames ${frames:-?}"
		tap_diag "$(grep -E '^(rx_|xsk k_|xdp steered)' <<<"$out")"
	fi
}

tap_check "xskprobe --help" bash -c "'$XSKPROBE' --help | grep -q '^usage: xskprobe MODE IFACE'"
run_config 1 1500
run_config 2 9000
long_chains
exit $TAP_FAILED
