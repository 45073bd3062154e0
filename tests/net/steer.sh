#!/usr/bin/env bash
# XDP steering (bpf/xrxe_steer.bpf.c) and `xrxe attach/detach/status/stats` on
# a veth pair between two network namespaces: A sends, B has the program.
#
# For MTU 1500 native, 9000 native (multi-buffer frames, peer MTU > 3506) and
# 9000 skb: ordinary traffic still flows (ping v4/v6, TCP with a checksum, UDP
# to another port), RoCEv2-shaped datagrams land in the right counter with no
# AF_XDP socket bound (no_socket, drop_short, drop_bad_bth, ecn_ce), odd frames
# (VLAN tags, IPv4 options and fragments, IPv6 extension headers, padding,
# truncation) are parsed as documented, and detach restores the interface.
# Then the command line's edges: idempotence, foreign programs, errors, help.
#
#   tests/net/steer.sh          (root; XRXE=path/to/xrxe to test another build)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
tap_require_root "net/steer"
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"

BUILD=${BUILD:-build}
XRXE=${XRXE:-$XRXE_ROOT/$BUILD/bin/xrxe}
TRAFFIC=$XRXE_ROOT/tests/lib/traffic.py
if [ ! -x "$XRXE" ]; then
	tap_fail "xrxe is built ($XRXE; run make)"
	exit 1
fi
netns_tmpdir TMP

# --- helpers -------------------------------------------------------------------

# counter NS IFACE NAME FIELD: one steering counter (empty if unreadable).
counter() {
	ns_exec "$1" "$XRXE" stats "$2" --json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"][sys.argv[1]][sys.argv[2]])' "$3" "$4" 2>/dev/null
}

# snapshot NS IFACE: all counters as "name.field=value" lines, into SNAP.
snapshot() {
	SNAP=$(ns_exec "$1" "$XRXE" stats "$2" --json 2>/dev/null | python3 -c '
import json, sys
for name, c in json.load(sys.stdin)["counters"].items():
    for field, v in c.items():
        print("%s.%s=%d" % (name, field, v))' 2>/dev/null)
}

snap_get() { sed -n "s/^$1\\.$2=//p" <<<"$3"; }

# expect_deltas DESC NS IFACE "name.field=delta ..." [">=" checks as name.field>=delta]
#   -- COMMAND...: run COMMAND (in the caller's namespace choice), then wait up
# to 2 s until every listed counter moved by exactly (or at least) its delta.
#   The kernel's own chatter (IPv6 router solicitations, MLD reports after a
# link comes up) also passes through XDP and can land inside the window, so an
# exact count that overshoots is measured again, up to 3 times: one attempt must
# see exactly the deltas.
expect_deltas() {
	local try rc
	for try in 1 2 3; do
		expect_deltas_once "$@"
		rc=$?
		[ $rc -eq 0 ] || [ $rc -eq 2 ] && return # matched, or failed and reported
		[ "$DELTA_OVERSHOOT" = 1 ] || break
	done
	tap_fail "$1"
	tap_diag "wanted: $4"
	tap_diag "$(paste <(echo "$DELTA_BEFORE") <(echo "$DELTA_AFTER"))"
}

# One measurement; 0 if every delta matched. Sets DELTA_OVERSHOOT=1 when the
# only misses were exact counts that moved too far.
expect_deltas_once() {
	local desc=$1 ns=$2 dev=$3 specs=$4 before after spec key op want b a ok out
	shift 5 # DESC NS IFACE SPECS --
	DELTA_OVERSHOOT=0
	snapshot "$ns" "$dev"
	before=$SNAP
	if ! out=$("$@" 2>&1); then
		tap_fail "$desc (command failed)"
		tap_diag "$out"
		DELTA_BEFORE=$before DELTA_AFTER=$before
		return 2
	fi
	for _ in $(seq 40); do
		snapshot "$ns" "$dev"
		after=$SNAP
		ok=1
		for spec in $specs; do
			# a check line that does not parse is a broken test, not a pass
			if ! [[ $spec =~ ^([a-z_]+)\.([a-z]+)(>=|=)([0-9]+)$ ]]; then
				tap_fail "$desc (check '$spec' does not parse)"
				DELTA_BEFORE=$before DELTA_AFTER=$after
				return 2
			fi
			key=${BASH_REMATCH[1]} op=${BASH_REMATCH[3]} want=${BASH_REMATCH[4]}
			b=$(snap_get "$key" "${BASH_REMATCH[2]}" "$before")
			a=$(snap_get "$key" "${BASH_REMATCH[2]}" "$after")
			if [ -z "$a" ] || [ -z "$b" ]; then ok=0; break; fi
			if [ "$op" = "=" ] && [ $((a - b)) -ne "$want" ]; then ok=0; fi
			if [ "$op" = ">=" ] && [ $((a - b)) -lt "$want" ]; then ok=0; fi
		done
		[ $ok -eq 1 ] && break
		sleep 0.05
	done
	DELTA_BEFORE=$before DELTA_AFTER=$after
	if [ $ok -eq 1 ]; then
		tap_ok "$desc"
		return 0
	fi
	# overshoot only: every miss is an exact count that moved past its delta
	DELTA_OVERSHOOT=1
	for spec in $specs; do
		[[ $spec =~ ^([a-z_]+)\.([a-z]+)(>=|=)([0-9]+)$ ]] || continue
		b=$(snap_get "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$before")
		a=$(snap_get "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$after")
		if [ -z "$a" ] || [ -z "$b" ] || [ $((a - b)) -lt "${BASH_REMATCH[4]}" ]; then
			DELTA_OVERSHOOT=0
		fi
	done
	return 1
}

# The counters a RoCEv2 frame must leave alone when it goes to another one.
ROCE_OTHERS="steered.packets=0"

send_udp() { ns_exec "$NS_A" python3 "$TRAFFIC" udp "$@"; }
send_raw() {
	ns_exec "$NS_A" python3 "$TRAFFIC" raw "$IF_A" "$1" --dst-mac "$MAC_B" \
		--src4 "$IP4_A" --dst4 "$IP4_B" --src6 "$IP6_A" --dst6 "$IP6_B" "${@:2}"
}

# one_line DESC EXPECTED_STATUS EXPECTED_REGEX COMMAND...: the command exits
# with that status and prints exactly one line on stderr matching the regex.
one_line() {
	local desc=$1 want=$2 re=$3 rc err
	shift 3
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	err=$(cat "$TMP/err")
	if [ "$rc" -eq "$want" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && [[ $err =~ $re ]]; then
		tap_ok "$desc"
	else
		tap_fail "$desc"
		tap_diag "status $rc (wanted $want), stderr:"
		tap_diag "$err"
	fi
}

# tcp_transfer DESC DST_ADDR: 4 MiB of random bytes A -> B over TCP, the
# receiver's SHA-256 compared with the sender's.
tcp_transfer() {
	local desc=$1 dst=$2 bind=$3 port=$((20000 + RANDOM % 10000)) want got
	rm -f "$TMP/ready" "$TMP/tcp.out"
	ns_bg "$NS_B" python3 "$TRAFFIC" tcp-recv "$bind" "$port" "$TMP/ready" --timeout 10 \
		>"$TMP/tcp.out"
	local pid=$NETNS_LAST_PID
	if ! netns_wait_file "$TMP/ready"; then
		tap_fail "$desc (receiver did not start)"
		return
	fi
	want="$(stat -c %s "$TMP/blob") $(sha256sum <"$TMP/blob" | cut -d' ' -f1)"
	ns_exec "$NS_A" bash -c 'cat "$1" >"/dev/tcp/$2/$3"' _ "$TMP/blob" "$dst" "$port"
	wait "$pid"
	got=$(cat "$TMP/tcp.out")
	if [ "$got" = "$want" ]; then
		tap_ok "$desc"
	else
		tap_fail "$desc"
		tap_diag "sent: $want; received: $got"
	fi
}

udp_other_port() {
	local desc=$1 dst=$2 bind=$3 port=9999 got
	rm -f "$TMP/ready" "$TMP/udp.out"
	# The receiver waits up to 60 s: it returns as soon as the datagram is
	# in, and on a loaded machine the sender (a python3 start-up) can take
	# seconds to send it (a 5 s wait once timed out under load 2-5).
	ns_bg "$NS_B" python3 "$TRAFFIC" udp-recv "$bind" "$port" "$TMP/ready" --timeout 60 \
		>"$TMP/udp.out" 2>"$TMP/udp.err"
	local pid=$NETNS_LAST_PID rc
	netns_wait_file "$TMP/ready" || { tap_fail "$desc (receiver did not start)"; return; }
	expect_deltas "$desc: passed counted" "$NS_B" "$IF_B" "passed.packets>=1 no_socket.packets=0" \
		-- send_udp "$dst" "$port" --len 100
	wait "$pid"
	rc=$?
	if [[ $(cat "$TMP/udp.out") == 100\ * ]]; then
		tap_ok "$desc: datagram delivered to the socket"
	else
		tap_fail "$desc: datagram delivered to the socket"
		tap_diag "receiver status $rc, printed '$(cat "$TMP/udp.out")', stderr: $(tail -n 3 "$TMP/udp.err")"
		tap_diag "$(ns_exec "$NS_B" nstat -az 2>/dev/null | grep -E '^(Udp|Udp6)(InDatagrams|NoPorts|InErrors|RcvbufErrors)')"
	fi
}

head -c $((4 << 20)) /dev/urandom >"$TMP/blob"

# --- one configuration: MTU x mode ----------------------------------------------

run_config() {
	local id=$1 mtu=$2 mode=$3 tag="MTU $2 $3" before after xdpword
	netns_pair "$id" "$mtu" || { tap_fail "$tag: namespaces and veth"; return; }
	before=$(ns_exec "$NS_B" ip -d link show dev "$IF_B")

	tap_check "$tag: attach" ns_exec "$NS_B" "$XRXE" attach "$IF_B" --mode "$mode"
	# ip link flags the mode as "xdp" or "xdpgeneric"; "prog/xdp id" either way.
	[ "$mode" = native ] && xdpword="xdp" || xdpword="xdpgeneric"
	tap_check "$tag: ip link shows the program ($xdpword)" bash -c \
		"ip -n '$NS_B' -d link show dev '$IF_B' | grep -Eq 'mtu $mtu $xdpword .*prog/xdp id' ||
		 ip -n '$NS_B' -d link show dev '$IF_B' | tr -d '\n' | grep -Eq 'mtu $mtu $xdpword .*prog/xdp id'"
	tap_check "$tag: status says ours, $mode mode" bash -c \
		"ip netns exec '$NS_B' '$XRXE' status '$IF_B' | grep -q '^$IF_B: xrxe steering ($mode mode'"

	# Ordinary traffic through XDP_PASS.
	tap_check "$tag: ping IPv4" ns_exec "$NS_A" ping -c 3 -i 0.1 -W 2 "$IP4_B"
	tap_check "$tag: ping IPv6" ns_exec "$NS_A" ping -6 -c 3 -i 0.1 -W 2 "$IP6_B"
	if [ "$mtu" -gt 1500 ]; then
		# 8028-byte frames: several buffers on the native veth path.
		tap_check "$tag: jumbo ping IPv4 (8000 B, DF)" \
			ns_exec "$NS_A" ping -c 2 -i 0.1 -W 2 -s 8000 -M "do" "$IP4_B"
		tap_check "$tag: jumbo ping IPv6 (8000 B)" \
			ns_exec "$NS_A" ping -6 -c 2 -i 0.1 -W 2 -s 8000 -M "do" "$IP6_B"
	fi
	tcp_transfer "$tag: TCP IPv4, 4 MiB, SHA-256 equal" "$IP4_B" 0.0.0.0
	tcp_transfer "$tag: TCP IPv6, 4 MiB, SHA-256 equal" "$IP6_B" ::
	udp_other_port "$tag: UDP to port 9999 (IPv4)" "$IP4_B" 0.0.0.0
	udp_other_port "$tag: UDP to port 9999 (IPv6)" "$IP6_B" ::

	# RoCEv2-shaped datagrams from A's kernel stack, no AF_XDP socket on B.
	# Frame = 14 Ethernet + 20/40 IP + 8 UDP + 32 payload (BTH + 16 + ICRC).
	expect_deltas "$tag: RoCEv2 IPv4 without a socket counts no_socket (74 B)" "$NS_B" "$IF_B" \
		"no_socket.packets=1 no_socket.bytes=74 $ROCE_OTHERS drop_short.packets=0" \
		-- send_udp "$IP4_B" 4791
	expect_deltas "$tag: RoCEv2 IPv6 without a socket counts no_socket (94 B)" "$NS_B" "$IF_B" \
		"no_socket.packets=1 no_socket.bytes=94 $ROCE_OTHERS" \
		-- send_udp "$IP6_B" 4791
	expect_deltas "$tag: RoCEv2 x5 counts 5" "$NS_B" "$IF_B" "no_socket.packets=5" \
		-- send_udp "$IP4_B" 4791 --count 5
	# Smallest valid (12 + 4) and one byte short of it (UDP length 23).
	expect_deltas "$tag: 16-byte payload (BTH + ICRC) is long enough" "$NS_B" "$IF_B" \
		"no_socket.packets=1 drop_short.packets=0" -- send_udp "$IP4_B" 4791 --len 16
	expect_deltas "$tag: 15-byte payload counts drop_short" "$NS_B" "$IF_B" \
		"drop_short.packets=1 no_socket.packets=0" -- send_udp "$IP4_B" 4791 --len 15
	expect_deltas "$tag: IPv6 10-byte payload counts drop_short" "$NS_B" "$IF_B" \
		"drop_short.packets=1 no_socket.packets=0" -- send_udp "$IP6_B" 4791 --len 10
	expect_deltas "$tag: empty datagram counts drop_short" "$NS_B" "$IF_B" \
		"drop_short.packets=1" -- send_udp "$IP4_B" 4791 --len 0
	expect_deltas "$tag: BTH TVer 1 counts drop_bad_bth" "$NS_B" "$IF_B" \
		"drop_bad_bth.packets=1 no_socket.packets=0" -- send_udp "$IP4_B" 4791 --tver 1
	expect_deltas "$tag: IPv6 BTH TVer 15 counts drop_bad_bth" "$NS_B" "$IF_B" \
		"drop_bad_bth.packets=1 no_socket.packets=0" -- send_udp "$IP6_B" 4791 --tver 15
	expect_deltas "$tag: IPv4 ECN CE counts ecn_ce and no_socket" "$NS_B" "$IF_B" \
		"ecn_ce.packets=1 ecn_ce.bytes=74 no_socket.packets=1" -- send_udp "$IP4_B" 4791 --tos 3
	expect_deltas "$tag: IPv6 ECN CE counts ecn_ce and no_socket" "$NS_B" "$IF_B" \
		"ecn_ce.packets=1 no_socket.packets=1" -- send_udp "$IP6_B" 4791 --tos 3
	expect_deltas "$tag: IPv4 ECT(0) is not CE" "$NS_B" "$IF_B" \
		"ecn_ce.packets=0 no_socket.packets=1" -- send_udp "$IP4_B" 4791 --tos 2
	if [ "$mtu" -gt 1500 ]; then
		# 8042-byte frame: bpf_xdp_get_buff_len counts every buffer.
		expect_deltas "$tag: 8000-byte RoCEv2 payload counts 8042 bytes" "$NS_B" "$IF_B" \
			"no_socket.packets=1 no_socket.bytes=8042" -- send_udp "$IP4_B" 4791 --len 8000
		expect_deltas "$tag: 8000-byte IPv6 RoCEv2 TVer 1 dropped (8062 B)" "$NS_B" "$IF_B" \
			"drop_bad_bth.packets=1 drop_bad_bth.bytes=8062" \
			-- send_udp "$IP6_B" 4791 --len 8000 --tver 1
	fi

	# Hand-built frames.
	local kind spec
	while read -r kind spec; do
		expect_deltas "$tag: raw $kind -> $spec" "$NS_B" "$IF_B" "$spec" -- send_raw "$kind"
	done <<-'EOF'
		vlan-roce     no_socket.packets=1 no_socket.bytes=78
		vlan6-badtver drop_bad_bth.packets=1
		qinq-badtver  drop_bad_bth.packets=1
		2tags-roce    passed.packets=1 no_socket.packets=0
		ipopt-roce    no_socket.packets=1 no_socket.bytes=78
		ipopt-badtver drop_bad_bth.packets=1
		frag-first    passed.packets=1 no_socket.packets=0
		frag-later    passed.packets=1
		v6ext-roce    passed.packets=1 no_socket.packets=0
		padded-short  drop_short.packets=1 drop_short.bytes=60
		truncated     drop_short.packets=1
		non-ip        passed.packets=1 passed.bytes=60
	EOF
	tap_check "$tag: nothing was steered (no socket)" \
		test "$(counter "$NS_B" "$IF_B" steered packets)" = 0

	tap_check "$tag: detach" ns_exec "$NS_B" "$XRXE" detach "$IF_B"
	after=$(ns_exec "$NS_B" ip -d link show dev "$IF_B")
	if [ "$before" = "$after" ]; then
		tap_ok "$tag: ip -d link show is as before attach"
	else
		tap_fail "$tag: ip -d link show is as before attach"
		tap_diag "$(diff <(echo "$before") <(echo "$after"))"
	fi
	tap_check "$tag: ping after detach" ns_exec "$NS_A" ping -c 1 -W 2 "$IP4_B"
}

run_config 1 1500 native
run_config 2 9000 native
run_config 3 9000 skb

# --- the command line ------------------------------------------------------------
netns_pair 4 1500 || tap_fail "namespaces for the command-line tests"
B() { ns_exec "$NS_B" "$XRXE" "$@"; }

tap_check "status with nothing attached says so" \
	bash -c "ip netns exec '$NS_B' '$XRXE' status | grep -q 'not attached to any interface'"
tap_check "status --json is JSON, xdp null" bash -c \
	"ip netns exec '$NS_B' '$XRXE' status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert all(i[\"xdp\"] is None for i in d[\"interfaces\"]), d'"

tap_check "attach" B attach "$IF_B"
B attach "$IF_B" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && grep -q 'already attached' "$TMP/out" && [ ! -s "$TMP/err" ]; then
	tap_ok "attach again: exit 0, says already attached"
else
	tap_fail "attach again: exit 0, says already attached"
	tap_diag "status $rc: $(cat "$TMP/out" "$TMP/err")"
fi
tap_check "still one program, same id" \
	bash -c "[ \$(ip -n '$NS_B' -d link show dev '$IF_B' | grep -c 'prog/xdp id') = 1 ]"
one_line "attach in skb mode over native: refused" 1 'already attached in native mode' \
	B attach "$IF_B" --mode skb
one_line "attach for another port: refused" 1 'UDP port 4791' B attach "$IF_B" --port 4792
tap_check "status --json: ours, native, port 4791, counters" bash -c \
	"ip netns exec '$NS_B' '$XRXE' status '$IF_B' --json | python3 -c '
import json,sys
i = json.load(sys.stdin)[\"interfaces\"][0]
assert i[\"xdp\"][\"ours\"] and i[\"xdp\"][\"mode\"] == \"native\" and i[\"xdp\"][\"udp_port\"] == 4791, i
assert set(i[\"counters\"]) == {\"steered\",\"passed\",\"drop_short\",\"drop_bad_bth\",\"no_socket\",\"ecn_ce\",\"raw_flow\"}, i'"
tap_check "stats (text) lists the counters" bash -c \
	"ip netns exec '$NS_B' '$XRXE' stats '$IF_B' | grep -q '^no_socket '"

# Pins: visible only inside one `ip netns exec` (it remounts /sys), so attach,
# look and detach in one session.
tap_check "pins under /sys/fs/bpf/xrxe/IFACE, removed by detach" ns_exec "$NS_B" bash -c '
	set -e
	x=$1 dev=$2
	"$x" attach "$dev" >/dev/null        # already attached: renews the pins
	test -e "/sys/fs/bpf/xrxe/$dev/stats"
	test -e "/sys/fs/bpf/xrxe/$dev/xsks"
	bpftool map show pinned "/sys/fs/bpf/xrxe/$dev/stats" | grep -q "name xrxe_stats"
	bpftool map show pinned "/sys/fs/bpf/xrxe/$dev/xsks" | grep -q "xskmap"
	"$x" detach "$dev" >/dev/null
	test ! -e "/sys/fs/bpf/xrxe/$dev"
	test ! -e /sys/fs/bpf/xrxe' _ "$XRXE" "$IF_B"

one_line "detach when not attached: one line, exit 1" 1 "^xrxe: $IF_B: no XDP program is attached$" \
	B detach "$IF_B"
one_line "stats when not attached: one line, exit 1" 1 "^xrxe: $IF_B: xrxe steering is not attached$" \
	B stats "$IF_B"
one_line "native attach on lo: the kernel's reason (extack) on the one line" 1 \
	"^xrxe: lo: cannot attach XDP in native mode: .*\\(kernel: .*native mode\\)$" B attach lo
for cmd in attach detach status stats; do
	one_line "$cmd on a missing interface: one line, exit 1" 1 '^xrxe: nosuch0: no such interface$' \
		B "$cmd" nosuch0
done

# --port: the load-time setting reaches the program.
tap_check "attach --port 4792" B attach "$IF_B" --port 4792
tap_check "status shows UDP port 4792" bash -c \
	"ip netns exec '$NS_B' '$XRXE' status '$IF_B' | grep -q 'UDP port 4792'"
expect_deltas "--port 4792: port 4792 is RoCEv2" "$NS_B" "$IF_B" "no_socket.packets=1" \
	-- send_udp "$IP4_B" 4792
expect_deltas "--port 4792: port 4791 is passed" "$NS_B" "$IF_B" "no_socket.packets=0 passed.packets>=1" \
	-- send_udp "$IP4_B" 4791
tap_check "detach" B detach "$IF_B"

# A foreign program: a two-line XDP_PASS program compiled here (bpf/ holds only
# programs that get a skeleton).
cat >"$TMP/pass.bpf.c" <<'EOF'
#include <linux/bpf.h>
__attribute__((section("xdp"), used)) int xt_pass(struct xdp_md *ctx) { return XDP_PASS; }
__attribute__((section("license"), used)) char _license[] = "GPL";
EOF
if clang -O2 -g -target bpf -I/usr/include/"$(gcc -print-multiarch)" -c "$TMP/pass.bpf.c" \
	-o "$TMP/pass.bpf.o" 2>"$TMP/err" &&
	ip -n "$NS_B" link set dev "$IF_B" xdpdrv obj "$TMP/pass.bpf.o" sec xdp 2>>"$TMP/err"; then
	foreign_id() { ip -n "$NS_B" -d link show dev "$IF_B" | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p'; }
	fid=$(foreign_id)
	one_line "attach over a foreign program: refused, names it" 1 \
		"^xrxe: $IF_B: another XDP program is attached \\(id $fid, name 'xt_pass', native mode\\); not replacing it$" \
		B attach "$IF_B"
	one_line "attach --mode skb over a foreign native program: refused" 1 "id $fid" \
		B attach "$IF_B" --mode skb
	one_line "detach of a foreign program: refused" 1 "not xrxe's \\(id $fid" B detach "$IF_B"
	tap_check "the foreign program stays" test "$(foreign_id)" = "$fid"
	tap_check "status names the foreign program" bash -c \
		"ip netns exec '$NS_B' '$XRXE' status '$IF_B' | grep -q \"foreign XDP program 'xt_pass' (native mode, prog id $fid)\""
	ip -n "$NS_B" link set dev "$IF_B" xdpdrv off
else
	tap_fail "a foreign XDP program can be attached for the test"
	tap_diag "$(cat "$TMP/err")"
fi

# Not root.
if command -v setpriv >/dev/null; then
	nobody() { ns_exec "$NS_B" setpriv --reuid 65534 --regid 65534 --clear-groups "$XRXE" "$@"; }
	one_line "attach as nobody: permission denied, one line" 1 'permission denied' nobody attach "$IF_B"
	B attach "$IF_B" >/dev/null
	one_line "status as nobody: needs root, one line" 1 'needs root' nobody status "$IF_B"
	one_line "detach as nobody: needs root, one line" 1 'needs root' nobody detach "$IF_B"
	tap_check "still attached" bash -c "ip netns exec '$NS_B' '$XRXE' status '$IF_B' | grep -q 'xrxe steering'"
	B detach "$IF_B" >/dev/null
else
	tap_skip "non-root errors" "setpriv not installed"
fi

# Usage errors: status 2, one line.
one_line "no command: usage, exit 2" 2 '^usage: xrxe' "$XRXE"
one_line "unknown command: exit 2" 2 "^xrxe: 'frobnicate' is not an xrxe command" "$XRXE" frobnicate
one_line "attach without IFACE: exit 2" 2 '^xrxe: attach: missing IFACE' "$XRXE" attach
one_line "attach --mode bogus: exit 2" 2 "^xrxe: attach: --mode: 'bogus' is not native or skb" \
	"$XRXE" attach lo --mode bogus
one_line "attach --mode without a value: exit 2" 2 "needs an argument" "$XRXE" attach lo --mode
one_line "attach --port 70000: exit 2" 2 "--port: '70000' is not a number from 1 to 65535" \
	"$XRXE" attach lo --port 70000
one_line "unknown option: exit 2" 2 "^xrxe: detach: unknown option '--bogus'" "$XRXE" detach lo --bogus
one_line "status with two interfaces: exit 2" 2 'too many arguments' "$XRXE" status lo lo
one_line "help for an unknown command: exit 2" 2 "not an xrxe command" "$XRXE" help frobnicate

# Help and version.
tap_check "xrxe --help: a full page listing every command" bash -c "
	out=\$('$XRXE' --help) || exit 1
	for w in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS 'EXIT STATUS' EXAMPLES attach detach status stats; do
		grep -q \"\$w\" <<<\"\$out\" || { echo \"missing \$w\"; exit 1; }
	done"
for cmd in attach detach status stats; do
	tap_check "xrxe help $cmd = xrxe $cmd --help, a full page" bash -c "
		a=\$('$XRXE' help $cmd) && b=\$('$XRXE' $cmd --help) && [ \"\$a\" = \"\$b\" ] || exit 1
		for w in NAME SYNOPSIS DESCRIPTION OPTIONS 'EXIT STATUS' EXAMPLES; do
			grep -q \"\$w\" <<<\"\$a\" || { echo \"missing \$w\"; exit 1; }
		done"
done
tap_check "xrxe --version" bash -c "'$XRXE' --version | grep -Eq '^xrxe [0-9]+\\.[0-9]+'"
