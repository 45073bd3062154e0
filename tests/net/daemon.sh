#!/usr/bin/env bash
# xrxed's control side (src/daemon/ctrl.c, shm.c, devpage.c, netlink.c) end to
# end, driven by tests/net/ctrl_client (a hand-made client of abi.h) in two
# namespaces joined by a veth, one daemon in each:
#  (a) the control socket appears (mode 0666); a second daemon for the same
#      interface is refused; the device page says ACTIVE, GID 0 is the
#      link-local GID from the MAC, then the namespace's IPv4-mapped and IPv6
#      GIDs;
#  (b) `ip addr add` / `ip addr del` show up in (and vanish from) the GID table
#      within 1 s, IPv4 and IPv6;
#  (c) PD, MR, channel, CQ and RC QP, then INIT -> RTR -> RTS with the peer's
#      GID: the daemon resolves the address through netlink (ARP included);
#      kill -9 of the client makes the daemon log the cleanup and every object
#      count (daemon and transport) returns to 0;
#  (d) hostile requests (wrong lengths, unknown ops, bad or foreign handles,
#      fds of the wrong type) fail with -EINVAL / -EBADF / -EPROTO, and the
#      daemon keeps serving;
#  (e) data: RC SEND and RDMA WRITE between the namespaces through the rings,
#      and two QPs of one process on one daemon (loopback in the daemon);
#  (f) `xrxe stats IFACE` and `xrxe qp IFACE` (text and JSON) ask the daemon;
#  (g) a daemon killed with -9 leaves a stale socket that the next one
#      replaces; SIGTERM leaves no socket file and no XDP program.
#
#   tests/net/daemon.sh          (root; BUILD=build-san for the sanitizer build)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=../lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
tap_require_root "net/daemon"
# shellcheck source=../lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"

BUILD=${BUILD:-build}
XRXED=${XRXED:-$XRXE_ROOT/$BUILD/bin/xrxed}
XRXE=${XRXE:-$XRXE_ROOT/$BUILD/bin/xrxe}
CLIENT=${CLIENT:-$XRXE_ROOT/$BUILD/tests/net/ctrl_client}
for bin in "$XRXED" "$XRXE" "$CLIENT"; do
	if [ ! -x "$bin" ]; then
		tap_fail "$bin is built (make tests)"
		exit 1
	fi
done
netns_tmpdir TMP

# --- helpers -------------------------------------------------------------------

# start_daemon NS IFACE NAME [OPTION...]: xrxed in the background, log in
# $TMP/NAME.log; waits for its socket. The pid is in DPID.
start_daemon() {
	local ns=$1 ifc=$2 name=$3
	shift 3
	ns_bg "$ns" "$XRXED" "$@" "$ifc" >>"$TMP/$name.log" 2>&1
	DPID=$NETNS_LAST_PID
	netns_wait_file "/run/xrxe/$ifc.sock" 10
}

# stat_of NS IFACE KEY: one "section.name" value of the daemon's stats.
stat_of() {
	ns_exec "$1" "$CLIENT" stats "$2" 2>/dev/null | awk -v k="$3" '$1 == k { print $2 }'
}

# objects NS IFACE: every live-object count, daemon and transport, summed.
objects() {
	ns_exec "$1" "$CLIENT" stats "$2" 2>/dev/null |
		awk '$1 ~ /^(ctrl\.(pds|mrs|cqs|qps|ahs|channels)|transport\.(qps|cqs|mrs|pds|ahs))$/ { s += $2 }
		     END { print s + 0 }'
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds.
wait_for() {
	local tries=$(($1 * 20))
	shift
	while ! "$@" 2>/dev/null; do
		tries=$((tries - 1))
		[ $tries -le 0 ] && return 1
		sleep 0.05
	done
}

gids_have() { grep -qE "^gid [0-9]+ $2 " <<<"$1"; }

# --- (a) start ------------------------------------------------------------------

netns_pair 1 1500 || { tap_fail "namespaces and veth"; exit 1; }
rm -f "/run/xrxe/$IF_A.sock" "/run/xrxe/$IF_B.sock"
if start_daemon "$NS_A" "$IF_A" a && PID_A=$DPID && start_daemon "$NS_B" "$IF_B" b && PID_B=$DPID; then
	tap_ok "xrxed in both namespaces: control sockets appear"
else
	tap_fail "xrxed in both namespaces: control sockets appear"
	tap_diag "$(cat "$TMP"/a.log "$TMP"/b.log)"
	exit 1
fi
mode=$(stat -c %a "/run/xrxe/$IF_A.sock")
if [ "$mode" = 666 ]; then tap_ok "socket mode 0666"; else tap_fail "socket mode 0666 (is $mode)"; fi

if out=$(ns_exec "$NS_A" timeout 10 "$XRXED" "$IF_A" 2>&1); then
	tap_fail "a second daemon for the same interface is refused"
else
	if grep -q "another" <<<"$out"; then
		tap_ok "a second daemon for the same interface is refused"
	else
		tap_fail "a second daemon for the same interface is refused (with a reason)"
		tap_diag "$out"
	fi
fi

G=$(ns_exec "$NS_A" "$CLIENT" gids "$IF_A" 2>&1)
# fe80:: + modified EUI-64 of the MAC (flip the U/L bit, insert ff:fe)
IFS=: read -r m0 m1 m2 m3 m4 m5 <<<"$MAC_A"
LL=$(printf 'fe80::%x:%x:%x:%x' $(((0x$m0 ^ 2) << 8 | 0x$m1)) $((0x$m2 << 8 | 0xff)) \
	$((0xfe << 8 | 0x$m3)) $((0x$m4 << 8 | 0x$m5)))
if grep -q "^port_state ACTIVE" <<<"$G" && grep -q "^active_mtu 1024" <<<"$G" &&
	grep -q "^vendor_id 0xffffff" <<<"$G" && grep -q "^link_layer ethernet" <<<"$G"; then
	tap_ok "device page: port ACTIVE, active MTU 1024 at netdev MTU 1500, vendor 0xffffff, Ethernet"
else
	tap_fail "device page: port ACTIVE, active MTU 1024 at netdev MTU 1500, vendor 0xffffff, Ethernet"
	tap_diag "$G"
fi
if grep -qE "^gid 0 $LL RoCEv2" <<<"$G" && gids_have "$G" "::ffff:$IP4_A" && gids_have "$G" "$IP6_A"; then
	tap_ok "GID table: 0 = $LL (MAC), ::ffff:$IP4_A, $IP6_A"
else
	tap_fail "GID table: 0 = $LL (MAC), ::ffff:$IP4_A, $IP6_A"
	tap_diag "$G"
fi
v4idx=$(awk -v g="::ffff:$IP4_A" '$1 == "gid" && $3 == g { print $2 }' <<<"$G")
v6idx=$(awk -v g="$IP6_A" '$1 == "gid" && $3 == g { print $2 }' <<<"$G")
if [ -n "$v4idx" ] && [ -n "$v6idx" ] && [ "$v4idx" -lt "$v6idx" ]; then
	tap_ok "GID order: IPv4 before IPv6 (rxe's order)"
else
	tap_fail "GID order: IPv4 before IPv6 (rxe's order)"
fi

# --- (b) live address changes ---------------------------------------------------------

# live_addr FAMILY CIDR GID: add, wait for the GID; remove, wait for it to go.
live_addr() {
	local fam=$1 cidr=$2 gid=$3 out
	ns_exec "$NS_A" ip addr add "$cidr" dev "$IF_A" $([ "$fam" = IPv6 ] && echo nodad)
	if out=$(ns_exec "$NS_A" "$CLIENT" wait-gid "$IF_A" "$gid" present 1000 2>&1); then
		tap_ok "$fam address added: GID $gid appears ($(awk '{print $2}' <<<"$out") ms)"
	else
		tap_fail "$fam address added: GID $gid appears within 1 s"
		tap_diag "$out"
	fi
	ns_exec "$NS_A" ip addr del "$cidr" dev "$IF_A"
	if out=$(ns_exec "$NS_A" "$CLIENT" wait-gid "$IF_A" "$gid" absent 1000 2>&1); then
		tap_ok "$fam address removed: GID $gid disappears ($(awk '{print $2}' <<<"$out") ms)"
	else
		tap_fail "$fam address removed: GID $gid disappears within 1 s"
		tap_diag "$out"
	fi
}
live_addr IPv4 10.78.1.1/24 ::ffff:10.78.1.1
live_addr IPv6 fd78::1/64 fd78::1
G2=$(ns_exec "$NS_A" "$CLIENT" gids "$IF_A" 2>&1)
if [ "$(grep '^gid ' <<<"$G")" = "$(grep '^gid ' <<<"$G2")" ]; then
	tap_ok "the other GIDs kept their indices"
else
	tap_fail "the other GIDs kept their indices"
	tap_diag "before: $(grep '^gid ' <<<"$G")"
	tap_diag "after:  $(grep '^gid ' <<<"$G2")"
fi

# --- (c) verbs objects, address resolution, crash cleanup --------------------------------

ns_exec "$NS_A" ip neigh flush dev "$IF_A" 2>/dev/null
rm -f "$TMP/setup.ready"
ns_bg "$NS_A" "$CLIENT" setup "$IF_A" --peer-gid "$IP4_B" --gid-index "$v4idx" \
	--ready "$TMP/setup.ready" >"$TMP/setup.out" 2>&1
CPID=$NETNS_LAST_PID
if netns_wait_file "$TMP/setup.ready" 10; then
	tap_ok "PD, MR, channel, CQ, RC QP to RTS with the peer's GID ($(grep rtr_ms "$TMP/setup.out"))"
else
	tap_fail "PD, MR, channel, CQ, RC QP to RTS with the peer's GID"
	tap_diag "$(cat "$TMP/setup.out")"
fi
if ns_exec "$NS_A" ip neigh show "$IP4_B" dev "$IF_A" | grep -q lladdr; then
	tap_ok "the daemon had the kernel resolve the peer's MAC (ARP)"
else
	tap_fail "the daemon had the kernel resolve the peer's MAC (ARP)"
fi
n=$(objects "$NS_A" "$IF_A")
if [ "$n" -ge 9 ]; then
	tap_ok "daemon and transport count the objects ($n)"
else
	tap_fail "daemon and transport count the objects ($n, expected 9)"
	tap_diag "$(ns_exec "$NS_A" "$CLIENT" stats "$IF_A" | grep -E '^(ctrl|transport)\.')"
fi
kill -9 "$CPID" 2>/dev/null
wait "$CPID" 2>/dev/null
if wait_for 2 grep -q "closed (hang-up).*destroyed 1 QP, 0 AH, 1 MR, 1 CQ, 1 channel, 1 PD" "$TMP/a.log"; then
	tap_ok "kill -9 of the client: the daemon logs the cleanup"
else
	tap_fail "kill -9 of the client: the daemon logs the cleanup"
	tap_diag "$(tail -n 5 "$TMP/a.log")"
fi
n=$(objects "$NS_A" "$IF_A")
if [ "$n" = 0 ]; then
	tap_ok "every object count is back to 0"
else
	tap_fail "every object count is back to 0 ($n)"
	tap_diag "$(ns_exec "$NS_A" "$CLIENT" stats "$IF_A" | grep -E '^(ctrl|transport)\.')"
fi

# Unresolvable peer: -EHOSTUNREACH after ~1 s, and the daemon serves others meanwhile.
ns_exec "$NS_A" ip route add 10.79.0.0/16 dev "$IF_A" 2>/dev/null
ns_bg "$NS_A" "$CLIENT" setup "$IF_A" --peer-gid 10.79.0.9 --gid-index "$v4idx" \
	>"$TMP/unreach.out" 2>&1
UPID=$NETNS_LAST_PID
sleep 0.2
# "Served meanwhile" is an ordering, not a time: the stats request must be
# answered while the unresolvable modify is still waiting for its neighbour.
ns_exec "$NS_A" "$CLIENT" stats "$IF_A" >/dev/null 2>&1
if kill -0 "$UPID" 2>/dev/null; then served=yes; else served=no; fi
wait "$UPID"
if grep -q "RTR: No route to host" "$TMP/unreach.out" && [ $served = yes ]; then
	tap_ok "no ARP answer: modify to RTR fails with EHOSTUNREACH; others served meanwhile"
else
	tap_fail "no ARP answer: modify to RTR fails with EHOSTUNREACH; others served meanwhile"
	tap_diag "$(cat "$TMP/unreach.out"); stats answered while the modify waited: $served"
fi

# --- (d) hostile requests --------------------------------------------------------------

if out=$(ns_exec "$NS_A" "$CLIENT" bad "$IF_A" 2>&1); then
	tap_ok "$(grep -c '^pass' <<<"$out") malformed/foreign requests rejected with the right errno"
else
	tap_fail "malformed/foreign requests rejected with the right errno"
	tap_diag "$(grep -v '^pass' <<<"$out")"
fi
if kill -0 "$PID_A" 2>/dev/null && [ "$(objects "$NS_A" "$IF_A")" = 0 ]; then
	tap_ok "the daemon is still up, nothing left behind"
else
	tap_fail "the daemon is still up, nothing left behind"
fi

# --- (e) data through the rings ---------------------------------------------------------------

mkdir -p "$TMP/x"
ns_bg "$NS_B" "$CLIENT" rc "$IF_B" --peer-gid "$IP4_A" --me b --peer a --dir "$TMP/x" \
	--count 50 --size 3000 >"$TMP/rc_b.out" 2>&1
RPID=$NETNS_LAST_PID
if ns_exec "$NS_A" "$CLIENT" rc "$IF_A" --peer-gid "$IP4_B" --me a --peer b --dir "$TMP/x" \
	--count 50 --size 3000 >"$TMP/rc_a.out" 2>&1 && wait "$RPID"; then
	tap_ok "RC over IPv4 between the namespaces: 50 SENDs of 3000 bytes and an RDMA WRITE, intact"
else
	tap_fail "RC over IPv4 between the namespaces: SENDs and an RDMA WRITE"
	tap_diag "$(cat "$TMP/rc_a.out" "$TMP/rc_b.out")"
fi
rm -rf "$TMP/x6" && mkdir -p "$TMP/x6"
ns_bg "$NS_B" "$CLIENT" rc "$IF_B" --peer-gid "$IP6_A" --gid-index 2 --me b --peer a \
	--dir "$TMP/x6" --count 10 >"$TMP/rc6_b.out" 2>&1
RPID=$NETNS_LAST_PID
if ns_exec "$NS_A" "$CLIENT" rc "$IF_A" --peer-gid "$IP6_B" --gid-index "$v6idx" --me a --peer b \
	--dir "$TMP/x6" --count 10 >"$TMP/rc6_a.out" 2>&1 && wait "$RPID"; then
	tap_ok "RC over IPv6 between the namespaces (neighbour discovery)"
else
	tap_fail "RC over IPv6 between the namespaces (neighbour discovery)"
	tap_diag "$(cat "$TMP/rc6_a.out" "$TMP/rc6_b.out")"
fi
before=$(stat_of "$NS_A" "$IF_A" daemon.loop_frames)
if out=$(ns_exec "$NS_A" "$CLIENT" loop "$IF_A" --count 20 2>&1); then
	after=$(stat_of "$NS_A" "$IF_A" daemon.loop_frames)
	tap_ok "two QPs on one daemon talk through its loopback ($((after - before)) frames)"
	if grep -q "^resized a CQ" <<<"$out"; then
		tap_ok "RESIZE_CQ keeps the completions outstanding, in order"
	else
		tap_fail "RESIZE_CQ keeps the completions outstanding, in order"
	fi
else
	tap_fail "two QPs on one daemon talk through its loopback"
	tap_diag "$out"
fi

# --- (f) xrxe stats / xrxe qp ------------------------------------------------------------

if out=$(ns_exec "$NS_A" "$XRXE" stats "$IF_A" --json 2>&1) &&
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert "steered" in d["counters"]; assert d["daemon"]["ctrl"]["conns"] >= 0' <<<"$out"; then
	tap_ok "xrxe stats --json: steering counters and the daemon's"
else
	tap_fail "xrxe stats --json: steering counters and the daemon's"
	tap_diag "$out"
fi
ns_bg "$NS_A" "$CLIENT" setup "$IF_A" --peer-gid "$IP4_B" --gid-index "$v4idx" \
	--ready "$TMP/q.ready" >"$TMP/q.out" 2>&1
QPID=$NETNS_LAST_PID
netns_wait_file "$TMP/q.ready" 10
qpn=$(cat "$TMP/q.ready" 2>/dev/null)
if out=$(ns_exec "$NS_A" "$XRXE" qp "$IF_A" 2>&1) && grep -qE "^$qpn +RC +RTS" <<<"$out" &&
	ns_exec "$NS_A" "$XRXE" qp "$IF_A" --json | python3 -c 'import json,sys; q=json.load(sys.stdin)["qps"]; assert any(x["qpn"]=='"${qpn:-0}"' and x["state"]=="RTS" for x in q)'; then
	tap_ok "xrxe qp shows QP $qpn in RTS (text and JSON)"
else
	tap_fail "xrxe qp shows the QP in RTS (text and JSON)"
	tap_diag "$out"
fi
kill -9 "$QPID" 2>/dev/null
wait "$QPID" 2>/dev/null

# --- (g) stale socket, --rt-priority, SIGTERM -----------------------------------------------

# expect_exit CODE PATTERN NAME COMMAND...: COMMAND exits with CODE and says PATTERN.
expect_exit() {
	local code=$1 pattern=$2 name=$3 out rc
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc = "$code" ] && grep -q -- "$pattern" <<<"$out"; then
		tap_ok "$name"
	else
		tap_fail "$name (exit $rc)"
		tap_diag "$out"
	fi
}

for bad in 0 100 x10; do
	expect_exit 2 "is not a number from 1 to 99" "--rt-priority $bad: usage error (exit 2)" \
		"$XRXED" --rt-priority "$bad" "$IF_A"
done
expect_exit 2 "'sometimes' is not adaptive or fixed" "--rexmit sometimes: usage error (exit 2)" \
	"$XRXED" --rexmit sometimes "$IF_A"
# Without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 SCHED_FIFO is refused:
# a clear error before anything is attached.
expect_exit 1 "Operation not permitted (needs CAP_SYS_NICE" \
	"--rt-priority without the privilege: EPERM explained (exit 1)" \
	ns_exec "$NS_A" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	prlimit --rtprio=0 "$XRXED" --rt-priority 10 "$IF_A"

kill -9 "$PID_A" 2>/dev/null
wait "$PID_A" 2>/dev/null
if [ -S "/run/xrxe/$IF_A.sock" ]; then
	# The replacement runs under SCHED_FIFO (--rt-priority): below, RC
	# traffic through it and SIGTERM work as at normal priority.
	start_daemon "$NS_A" "$IF_A" a2 --rt-priority 10
	wait_for 10 grep -q "ready on" "$TMP/a2.log"
	if grep -q "replacing stale socket" "$TMP/a2.log" &&
		ns_exec "$NS_A" "$CLIENT" gids "$IF_A" >/dev/null 2>&1; then
		tap_ok "after kill -9 the next daemon replaces the stale socket"
	else
		tap_fail "after kill -9 the next daemon replaces the stale socket"
		tap_diag "$(cat "$TMP/a2.log")"
	fi
else
	tap_fail "kill -9 leaves the socket file (precondition)"
fi
PID_A2=$DPID
policy=$(chrt -p "$PID_A2" 2>&1)
if grep -q "SCHED_FIFO" <<<"$policy" && grep -q "priority: 10" <<<"$policy" &&
	[ "$(stat_of "$NS_A" "$IF_A" daemon.rt_priority)" = 10 ]; then
	tap_ok "--rt-priority 10: the daemon runs SCHED_FIFO 10 and says so in its stats"
else
	tap_fail "--rt-priority 10: the daemon runs SCHED_FIFO 10 and says so in its stats"
	tap_diag "$policy; stats: $(stat_of "$NS_A" "$IF_A" daemon.rt_priority)"
fi
rm -rf "$TMP/xr" && mkdir -p "$TMP/xr"
ns_bg "$NS_B" "$CLIENT" rc "$IF_B" --peer-gid "$IP4_A" --me b --peer a --dir "$TMP/xr" \
	--count 200 --size 4000 >"$TMP/rcrt_b.out" 2>&1
RPID=$NETNS_LAST_PID
if ns_exec "$NS_A" timeout 60 "$CLIENT" rc "$IF_A" --peer-gid "$IP4_B" --me a --peer b \
	--dir "$TMP/xr" --count 200 --size 4000 >"$TMP/rcrt_a.out" 2>&1 && wait "$RPID"; then
	tap_ok "RC through a SCHED_FIFO daemon: 200 SENDs of 4000 bytes and an RDMA WRITE, intact"
else
	tap_fail "RC through a SCHED_FIFO daemon: 200 SENDs of 4000 bytes and an RDMA WRITE"
	tap_diag "$(cat "$TMP/rcrt_a.out" "$TMP/rcrt_b.out")"
fi
kill -TERM "$PID_A2" "$PID_B"
wait "$PID_A2" "$PID_B" 2>/dev/null
xdp_a=$(ns_exec "$NS_A" ip -d link show dev "$IF_A" | grep -c "prog/xdp")
xdp_b=$(ns_exec "$NS_B" ip -d link show dev "$IF_B" | grep -c "prog/xdp")
if [ ! -e "/run/xrxe/$IF_A.sock" ] && [ ! -e "/run/xrxe/$IF_B.sock" ] && [ "$xdp_b" = 0 ]; then
	tap_ok "SIGTERM: no socket file, no XDP program left"
else
	tap_fail "SIGTERM: no socket file, no XDP program left"
	tap_diag "sockets: $(ls /run/xrxe 2>&1); xdp: A $xdp_a B $xdp_b"
	tap_diag "$(tail -n 5 "$TMP/b.log")"
fi
# Under BUILD=build-san the daemons report leaks and undefined behaviour at exit.
if grep -qE "Sanitizer|runtime error" "$TMP"/*.log; then
	tap_fail "no sanitizer report from the daemons"
	tap_diag "$(grep -hE -A5 "Sanitizer|runtime error" "$TMP"/*.log | head -n 30)"
else
	tap_ok "no sanitizer report from the daemons"
fi
# A's program was loaded by the killed daemon; the restarted one adopted it
# and removed it on SIGTERM. The detach is a safety net for a failed run.
ns_exec "$NS_A" "$XRXE" detach "$IF_A" >/dev/null 2>&1
exit $TAP_FAILED
