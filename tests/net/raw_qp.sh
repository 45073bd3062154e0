#!/usr/bin/env bash
# Raw packet QPs and flow steering across two namespaces (docs/architecture.md
# "Raw packet QPs"): a raw QP in A sends Ethernet frames it builds, through
# A's AF_XDP socket; B's XDP program steers the frames its flow table matches
# (Ethernet destination, IPv4, UDP port) to B's daemon, which delivers them
# to the raw QP whose flow they match, byte for byte, while every other
# frame goes to B's kernel as before (ping, and UDP to a socket, while the
# flows exist). Frames of hostile length are refused at the sender. A process
# without CAP_NET_RAW (an ordinary user; root with the capability dropped)
# cannot create a raw packet QP (EPERM), as with the kernel's verbs.
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "raw packet QPs over xrxe"
source tests/lib/netns.sh
source tests/lib/verbs.sh

XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
PROG=$PWD/$BUILD/tests/verbs/raw_flow
SHIMDIR=$PWD/$BUILD/lib/xrxe
for f in "$XRXED" "$XRXE" "$PROG" "$SHIMDIR/libibverbs.so.1"; do
	if [ ! -e "$f" ]; then
		tap_fail "$f is built (make tests)"
		exit 1
	fi
done
netns_tmpdir TMP
chmod 0755 "$TMP"
netns_pair 81 1500 || { tap_fail "namespaces created"; exit 1; }
if ! start_daemons; then
	tap_fail "xrxed started on both ends"
	exit 1
fi
tap_ok "xrxed started on both ends"
DEV_A=xrxe_$IF_A DEV_B=xrxe_$IF_B
N=${RAW_FRAMES:-50}

# A UDP socket on B (port 5680 matches no flow of B's: the kernel's) and the
# flows' receiver.
ns_bg "$NS_B" timeout 60 python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 5680)); s.settimeout(50)
d, a = s.recvfrom(100); print(d.decode(), flush=True)' >"$TMP/udp.out" 2>&1
UDP_PID=$NETNS_LAST_PID
ns_bg "$NS_B" timeout 60 "$XRXE" run -- "$PROG" -d "$DEV_B" recv "$MAC_B" "$N" >"$TMP/recv.out" 2>&1
RECV_PID=$NETNS_LAST_PID
for _ in $(seq 200); do
	grep -q ready "$TMP/recv.out" 2>/dev/null && break
	sleep 0.1
done
if grep -q ready "$TMP/recv.out"; then
	tap_ok "B: raw QPs with flows on UDP ports 5678 and 5679 to $MAC_B"
else
	tap_fail "B: raw QPs with flows on UDP ports 5678 and 5679 to $MAC_B"
	sed 's/^/#   /' "$TMP/recv.out"
fi

if ns_exec "$NS_A" timeout 60 "$XRXE" run -- "$PROG" -d "$DEV_A" send "$MAC_B" "$N" \
	>"$TMP/send.out" 2>&1 && grep -q "raw_flow: OK" "$TMP/send.out"; then
	tap_ok "A: $N frames sent from a raw QP; 13-byte and oversized frames: IBV_WC_LOC_LEN_ERR"
else
	tap_fail "A: $N frames sent from a raw QP; 13-byte and oversized frames: IBV_WC_LOC_LEN_ERR"
	sed 's/^/#   /' "$TMP/send.out" | tail -n 15
fi

# Frames matching no flow still reach B's kernel while the flows exist.
if ns_exec "$NS_A" ping -c 2 -W 2 "$IP4_B" >/dev/null 2>&1; then
	tap_ok "ping A -> B while B's flows exist (ICMP and ARP go to the kernel)"
else
	tap_fail "ping A -> B while B's flows exist (ICMP and ARP go to the kernel)"
fi
for _ in 1 2 3 4 5; do
	ns_exec "$NS_A" python3 -c '
import socket, sys
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"kernel", (sys.argv[1], 5680))' "$IP4_B"
	sleep 0.2
	grep -q kernel "$TMP/udp.out" 2>/dev/null && break
done
if wait "$UDP_PID" && grep -q kernel "$TMP/udp.out"; then
	tap_ok "UDP A -> B port 5680 (no flow) reaches B's socket"
else
	tap_fail "UDP A -> B port 5680 (no flow) reaches B's socket"
fi

if wait "$RECV_PID" && grep -q "raw_flow: OK" "$TMP/recv.out"; then
	tap_ok "B: $N frames through the flow, byte for byte, no GRH; none on the other flow"
else
	tap_fail "B: $N frames through the flow, byte for byte, no GRH; none on the other flow"
	sed 's/^/#   /' "$TMP/recv.out" | tail -n 15
fi
steered=$(ns_exec "$NS_B" "$XRXE" status "$IF_B" 2>/dev/null | awk '$1 == "raw_flow" { print $2 }')
if [ -n "$steered" ] && [ "$steered" -ge "$N" ]; then
	tap_ok "B's XDP program steered the frames by flow (raw_flow $steered)"
else
	tap_fail "B's XDP program steered the frames by flow (raw_flow ${steered:-?})"
	ns_exec "$NS_B" "$XRXE" status "$IF_B" 2>&1 | sed 's/^/#   /'
fi

# Without CAP_NET_RAW: EPERM. An ordinary user (the shim found through
# LD_LIBRARY_PATH: `xrxe run` needs privileges for its device view), and root
# with the capability dropped.
if command -v setpriv >/dev/null; then
	if ns_exec "$NS_A" setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		env LD_LIBRARY_PATH="$SHIMDIR" "$PROG" -d "$DEV_A" eperm >"$TMP/eperm.out" 2>&1 &&
		grep -q "raw_flow: OK" "$TMP/eperm.out"; then
		tap_ok "an ordinary user (uid 65534) gets EPERM for a raw packet QP"
	else
		tap_fail "an ordinary user (uid 65534) gets EPERM for a raw packet QP"
		sed 's/^/#   /' "$TMP/eperm.out" | tail -n 5
	fi
	if ns_exec "$NS_A" setpriv --inh-caps=-net_raw --bounding-set=-net_raw -- \
		env LD_LIBRARY_PATH="$SHIMDIR" "$PROG" -d "$DEV_A" eperm >"$TMP/eperm.out" 2>&1 &&
		grep -q "raw_flow: OK" "$TMP/eperm.out"; then
		tap_ok "root without CAP_NET_RAW gets EPERM for a raw packet QP"
	else
		tap_fail "root without CAP_NET_RAW gets EPERM for a raw packet QP"
		sed 's/^/#   /' "$TMP/eperm.out" | tail -n 5
	fi
else
	tap_skip "raw packet QP without CAP_NET_RAW" "setpriv (util-linux) is not installed"
fi

stop_daemons
for l in a b; do
	if grep -qE "Sanitizer|runtime error" "$TMP/xrxed-$l.log"; then
		tap_fail "xrxed ($l) ran clean"
		grep -E -A5 "Sanitizer|runtime error" "$TMP/xrxed-$l.log" | head -n 20 | sed 's/^/#   /'
	fi
done
exit 0
