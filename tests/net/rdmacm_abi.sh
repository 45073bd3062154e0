#!/usr/bin/env bash
# The RDMA CM shim ($BUILD/lib/xrxe/librdmacm.so.1) as a drop-in for rdma-core
# 44's librdmacm.so.1 (docs/rdmacm-shim.md):
#  1. its export table equals the installed library's: every name@version with
#     the same symbol type, the four version nodes, SONAME librdmacm.so.1,
#     NEEDED libibverbs.so.1, nothing unversioned, no executable stack;
#  2. every stock librdmacm client loads with it (rdmacm-utils, perftest,
#     qperf, libfabric's fi_info) and the loader really picks ours;
#  3. tests/net/rdmacm_stub_test: with no daemon rsocket() fails with ENODEV
#     and the other rsocket entry points with EBADF on a non-rsocket,
#     the calls that need a device fail with ENODEV (never ENOMEM), and
#     rdma_event_str answers as rdma-core's;
#  4. with no daemon, `xrxe run -- rping -s` and the other clients report "no
#     device" cleanly: no crash, no ENOMEM, no hang;
#  5. with daemons (root, $BUILD/bin/xrxed serving CM requests): unmodified
#     clients between two namespaces -- rping (IPv4, IPv6, wildcard, loopback,
#     its own QP with rdma_establish), ucmatose, udaddy (SIDR), mckey
#     (multicast), rdma_server/rdma_client (rdma_create_ep), perftest -R,
#     qperf -cm1, libfabric's verbs dgram provider; a REJ for a port nobody
#     listens on; and a daemon killed under a listener gives DEVICE_REMOVAL.
#
#   tests/net/rdmacm_abi.sh       (BUILD=build-san etc. to test another build)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"

BUILD=${BUILD:-build}
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$XRXE_ROOT/$BUILD ;; esac
SHIM_DIR=$BDIR/lib/xrxe
SHIM=$SHIM_DIR/librdmacm.so.1
REAL=/usr/lib/x86_64-linux-gnu/librdmacm.so.1
STUB_TEST=$BDIR/tests/net/rdmacm_stub_test
XRXE=$BDIR/bin/xrxe

if [ ! -f "$SHIM" ]; then
	tap_fail "the RDMA CM shim is built ($SHIM; make)"
	exit 1
fi
if [ ! -f "$REAL" ]; then
	tap_skip "RDMA CM ABI" "rdma-core's librdmacm.so.1 is not installed (librdmacm1)"
	exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
EMPTY_RUN=$TMP/run # no daemon sockets: the "no device" world
mkdir -p "$EMPTY_RUN"

# --- 1. export table -----------------------------------------------------------

# "TYPE name@VER" / "TYPE name@@VER" for every defined, versioned dynamic symbol.
exports() {
	readelf --dyn-syms -W "$1" | awk '$7 != "UND" && $8 ~ /@/ { print $4, $8 }' | sort -u
}
exports "$REAL" >"$TMP/real"
exports "$SHIM" >"$TMP/ours"
if diff -u "$TMP/real" "$TMP/ours" >"$TMP/diff"; then
	tap_ok "export table identical to rdma-core 44: $(grep -c FUNC "$TMP/ours") functions"
else
	tap_fail "export table differs from $REAL (- real, + ours)"
	tap_diag "$(tail -n +3 "$TMP/diff" | head -40)"
fi
vnodes() {
	readelf -V -W "$1" | sed -n '/Version definition/,/Version needs/p' |
		grep -o 'Name: [A-Z_0-9.]*' | awk '{print $2}' | grep -v '^librdmacm' | sort | tr '\n' ' '
}
nodes=$(vnodes "$SHIM")
want=$(vnodes "$REAL")
if [ "$nodes" = "$want" ]; then
	tap_ok "version nodes: $nodes"
else
	tap_fail "version nodes: got '$nodes', want '$want'"
fi
# Each node inherits the previous one (RDMACM_1.1 { } RDMACM_1.0; ...), as in rdma-core.
parents() { readelf -V -W "$1" | sed -n '/Version definition/,/Version needs/p' | grep -c 'Parent 1: RDMACM_'; }
if [ "$(parents "$SHIM")" = "$(parents "$REAL")" ]; then
	tap_ok "version node inheritance as rdma-core's ($(parents "$SHIM") parents)"
else
	tap_fail "version node inheritance: $(parents "$SHIM") parents, rdma-core $(parents "$REAL")"
fi
soname=$(readelf -d "$SHIM" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
needed=$(readelf -d "$SHIM" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
if [ "$soname" = librdmacm.so.1 ] && [ "$needed" = "libc.so.6 libibverbs.so.1 " ]; then
	tap_ok "SONAME librdmacm.so.1, NEEDED libibverbs.so.1 and libc.so.6"
else
	tap_fail "SONAME '$soname', NEEDED '$needed'"
fi
leaks=$(readelf --dyn-syms -W "$SHIM" | awk '$7 != "UND" && $8 !~ /@/ && $4 != "SECTION" && NR > 3 && $8 != "" && $8 !~ /^RDMACM_/ {print $8}')
if [ -z "$leaks" ]; then
	tap_ok "no unversioned exports (internal cm_ helpers are hidden)"
else
	tap_fail "unversioned exports: $leaks"
fi
if readelf -lW "$SHIM" | grep -q 'GNU_STACK.*RWE'; then
	tap_fail "the shim asks for an executable stack"
else
	tap_ok "non-executable stack"
fi

# --- 2. every client loads with it -------------------------------------------------

LOADER_ERRORS='symbol lookup error|version `[^'"'"']*'"'"' not found|no version information|undefined symbol|cannot open shared object|error while loading'
# A timeout (124) or death by a signal (128+N); exit(-1) is 255 and fine.
crashed() { [ "$1" -eq 124 ] || { [ "$1" -gt 128 ] && [ "$1" -lt 160 ]; }; }

clients=()
for b in rping ucmatose udaddy mckey rdma_server rdma_client rdma_xserver rdma_xclient cmtime \
	rstream riostream rcopy udpong ib_send_bw ib_write_bw ib_read_lat qperf fi_info; do
	p=$(command -v "$b") && clients+=("$p")
done
bad=()
for p in "${clients[@]}"; do
	path=$(LD_LIBRARY_PATH=$SHIM_DIR ldd "$p" 2>/dev/null | awk '$1 == "librdmacm.so.1" {print $3}')
	# fi_info dlopens the verbs provider, which links librdmacm; the rest link it.
	[ "$(basename "$p")" = fi_info ] && continue
	[ "$(readlink -f "$path")" = "$(readlink -f "$SHIM")" ] || bad+=("$(basename "$p")")
done
if [ ${#bad[@]} -eq 0 ]; then
	tap_ok "LD_LIBRARY_PATH resolves librdmacm.so.1 to the shim for ${#clients[@]} clients"
else
	tap_fail "librdmacm.so.1 does not resolve to the shim for: ${bad[*]}"
fi
# With no daemon, each prints its usage or its "no device" and exits: it has
# loaded (BIND_NOW clients resolve every import at start).
for p in "${clients[@]}"; do
	b=$(basename "$p")
	case $b in
	ib_*) args=(-h) ;;
	fi_info) args=(-p verbs) ;;
	qperf) args=(--help) ;;
	*) args=(--xrxe-no-such-option) ;;
	esac
	out=$(XRXE_RUN_DIR=$EMPTY_RUN LD_LIBRARY_PATH=$SHIM_DIR timeout 20 "$p" "${args[@]}" 2>&1 </dev/null)
	rc=$?
	if grep -Eq "$LOADER_ERRORS" <<<"$out"; then
		tap_fail "$b loads with the shim"
		tap_diag "$(grep -E "$LOADER_ERRORS" <<<"$out" | head -5)"
	elif crashed "$rc"; then
		tap_fail "$b loads with the shim (exit status $rc: timeout or signal)"
		tap_diag "$(tail -5 <<<"$out")"
	else
		tap_ok "$b loads with the shim"
	fi
done

# --- 3. the stub and no-device checks of rdmacm_stub_test ---------------------------

if [ -x "$STUB_TEST" ]; then
	out=$(XRXE_RUN_DIR=$EMPTY_RUN LD_LIBRARY_PATH=$SHIM_DIR timeout 20 "$STUB_TEST" "$SHIM" "$REAL" 2>&1)
	rc=$?
	grep -E '^(ok|not ok) ' <<<"$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$out"; then
		tap_fail "rdmacm_stub_test exited with status $rc"
		tap_diag "$(tail -10 <<<"$out")"
	fi
else
	tap_fail "rdmacm_stub_test is built ($STUB_TEST; make tests)"
fi

# --- 4. no daemon: a clear error -----------------------------------------------------

# nodev DESC EXPECT COMMAND...: runs with the shims and no daemon; ok if EXPECT
# (a regex) is in the output, nothing crashed or hung, and no ENOMEM text.
nodev() {
	local desc=$1 expect=$2 out rc
	shift 2
	out=$(XRXE_RUN_DIR=$EMPTY_RUN timeout 20 "$@" 2>&1 </dev/null)
	rc=$?
	if crashed "$rc"; then
		tap_fail "no daemon: $desc (exit status $rc: crash or hang)"
		tap_diag "$(tail -5 <<<"$out")"
	elif grep -qi 'cannot allocate memory\|ENOMEM' <<<"$out"; then
		tap_fail "no daemon: $desc reports ENOMEM"
		tap_diag "$(tail -5 <<<"$out")"
	elif ! grep -Eq "$expect" <<<"$out"; then
		tap_fail "no daemon: $desc (exit $rc, expected /$expect/)"
		tap_diag "$(tail -5 <<<"$out")"
	else
		tap_ok "no daemon: $desc: '$(grep -E "$expect" <<<"$out" | head -1)' (exit $rc)"
	fi
}
if [ -x "$XRXE" ]; then
	RUN=("$XRXE" run --)
else
	RUN=(env LD_LIBRARY_PATH="$SHIM_DIR")
fi
if command -v rping >/dev/null; then
	nodev "xrxe run -- rping -s" 'No RDMA devices were detected' "${RUN[@]}" rping -s
	nodev "rping -c" 'No RDMA devices were detected' "${RUN[@]}" rping -c -a 10.0.0.1
fi
command -v ucmatose >/dev/null &&
	nodev "ucmatose" 'No RDMA devices were detected' "${RUN[@]}" ucmatose
command -v udaddy >/dev/null &&
	nodev "udaddy" 'No RDMA devices were detected' "${RUN[@]}" udaddy
command -v mckey >/dev/null &&
	nodev "mckey" 'No RDMA devices were detected' "${RUN[@]}" mckey -m 239.1.1.1
command -v cmtime >/dev/null &&
	nodev "cmtime" 'No RDMA devices were detected' "${RUN[@]}" cmtime
# rdma_getaddrinfo fails as stock's does without devices: -1, printed through gai_strerror.
command -v rdma_server >/dev/null &&
	nodev "rdma_server" 'rdma_getaddrinfo' "${RUN[@]}" rdma_server
command -v ib_send_bw >/dev/null &&
	nodev "ib_send_bw -R" 'Did not detect devices|No IB devices' "${RUN[@]}" ib_send_bw -R
command -v fi_info >/dev/null &&
	nodev "fi_info -p verbs" 'No data available|FI_ENODATA|fi_getinfo' "${RUN[@]}" fi_info -p verbs

# --- 5. against daemons ------------------------------------------------------------

XRXED=$BDIR/bin/xrxed
if [ "$(id -u)" -ne 0 ]; then
	tap_skip "RDMA CM against a daemon" "needs root (namespaces)"
	exit 0
fi
if [ ! -x "$XRXED" ]; then
	tap_skip "RDMA CM against a daemon" "$XRXED not built"
	exit 0
fi
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"
# shellcheck source=tests/lib/connect_delay.sh
source "$XRXE_ROOT/tests/lib/connect_delay.sh"
trap 'rm -rf "$TMP"; netns_cleanup' EXIT
netns_reap_stale
netns_pair 45 1500
ns_bg "$NS_A" bash -c "exec '$XRXED' -m skb '$IF_A' >'$TMP/xrxed-a.log' 2>&1"
ns_bg "$NS_B" bash -c "exec '$XRXED' -m skb '$IF_B' >'$TMP/xrxed-b.log' 2>&1"
PID_B=$NETNS_LAST_PID
for _ in $(seq 100); do
	[ -S "/run/xrxe/$IF_A.sock" ] && [ -S "/run/xrxe/$IF_B.sock" ] && break
	sleep 0.1
done
export LD_LIBRARY_PATH=$SHIM_DIR
T=30

# Does the daemon serve CM requests? A connect to a port nobody listens on is
# answered with a REJ (reason 8, invalid service ID) by a CM, and fails with
# ENOSYS against a daemon without one.
out=$(ns_exec "$NS_A" timeout 15 rping -c -a "$IP4_B" -p 7399 -C 1 2>&1)
if grep -q 'ENOSYS\|Function not implemented\|does not serve connection management' <<<"$out"; then
	tap_skip "RDMA CM against a daemon" "this xrxed does not serve CM requests"
	exit 0
fi
if grep -q 'RDMA_CM_EVENT_REJECTED, error 8' <<<"$out"; then
	tap_ok "connect to a port nobody listens on: REJECTED, reason 8 (invalid service ID)"
else
	tap_fail "connect to a port nobody listens on is rejected"
	tap_diag "$out"
fi

# wait_cm_listen NS IFACE PORT: until the daemon shows a listener on PORT.
wait_cm_listen() {
	local i
	for i in $(seq 200); do
		ns_exec "$1" "$XRXE" cm "$2" 2>/dev/null | grep -E " listen .*:$3 " >/dev/null && return 0
		sleep 0.05
	done
	return 1
}
# cm_pair DESC PORT WAIT_IF -- SERVER_ARGS -- CLIENT_ARGS: server in B, client
# in A, both through the shims; ok if both exit 0 and the client's output
# matches $EXPECT (if set; SERVER_STAYS=1: the server is stopped after the
# client and its status ignored). WAIT_IF: the server's daemon to watch for the
# listener, or "-" to sleep a moment instead (a server without a port option).
cm_pair() {
	local desc=$1 port=$2 wif=$3
	shift 3
	[ "$1" = -- ] && shift
	local sargs=() cargs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	local log
	log=$TMP/$(echo "$desc" | tr -c 'A-Za-z0-9_\n' '_')
	# ip itself in the background (not the ns_exec function's subshell), so
	# that $! is timeout's pid and a kill reaches the server.
	ip netns exec "$NS_B" timeout "$T" "${sargs[@]}" >"$log.server" 2>&1 &
	local spid=$!
	if [ "$wif" = - ]; then
		sleep 1
	elif ! wait_cm_listen "$NS_B" "$wif" "$port"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		tap_fail "$desc (server did not listen)"
		sed 's/^/#   server: /' "$log.server" | tail -n 20
		return 1
	fi
	ns_exec "$NS_A" timeout "$T" "${cargs[@]}" >"$log.client" 2>&1
	local crc=$?
	# A server that serves forever (qperf): stopped once the client is done.
	[ -n "${SERVER_STAYS:-}" ] && kill "$spid" 2>/dev/null
	wait "$spid"
	local src=$?
	[ -n "${SERVER_STAYS:-}" ] && src=0
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && { [ -z "${EXPECT:-}" ] || grep -Eq "$EXPECT" "$log.client"; }; then
		tap_ok "$desc"
		return 0
	fi
	tap_fail "$desc (server exit $src, client exit $crc)"
	sed 's/^/#   server: /' "$log.server" | tail -n 15
	sed 's/^/#   client: /' "$log.client" | tail -n 15
	return 1
}

EXPECT='ping data: rdma-ping-9' cm_pair "rping IPv4, 10 pings verified" 7471 "$IF_B" -- \
	rping -s -a "$IP4_B" -p 7471 -C 10 -V -v -- rping -c -a "$IP4_B" -p 7471 -C 10 -V -v
EXPECT='ping data: rdma-ping-9' cm_pair "rping IPv6" 7472 "$IF_B" -- \
	rping -s -a "$IP6_B" -p 7472 -C 10 -V -v -- rping -c -a "$IP6_B" -p 7472 -C 10 -V -v
EXPECT='ping data: rdma-ping-9' cm_pair "rping server on the wildcard address" 7473 "$IF_B" -- \
	rping -s -p 7473 -C 10 -V -v -- rping -c -a "$IP4_B" -p 7473 -C 10 -V -v
EXPECT='ping data: rdma-ping-9' cm_pair "rping with its own QP (-q: CONNECT_RESPONSE, rdma_establish)" 7474 "$IF_B" -- \
	rping -s -q -a "$IP4_B" -p 7474 -C 10 -V -v -- rping -c -q -a "$IP4_B" -p 7474 -C 10 -V -v
EXPECT='return status 0' cm_pair "ucmatose, 4 connections" 7475 "$IF_B" -- \
	ucmatose -p 7475 -c 4 -- ucmatose -s "$IP4_B" -p 7475 -c 4
# udaddy has no port option (-p is the port space): its fixed port 7174.
EXPECT='return status 0' cm_pair "udaddy (UD, SIDR)" 7174 "$IF_B" -- \
	udaddy -- udaddy -s "$IP4_B"
EXPECT='return status 0' cm_pair "mckey (multicast join, send, receive)" 0 - -- \
	mckey -m 239.3.4.5 -b "$IP4_B" -- mckey -m 239.3.4.5 -s -b "$IP4_A"
EXPECT='rdma_client: end 0' cm_pair "rdma_server / rdma_client (rdma_create_ep, rdma_get_request)" 7477 "$IF_B" -- \
	rdma_server -p 7477 -- rdma_client -s "$IP4_B" -p 7477
if command -v ib_send_bw >/dev/null; then
	# the client's rdma_connect waits 0.5 s: perftest 4.5's own listen race
	# (tests/net/rdmacm.sh, tests/lib/connect_delay.c)
	connect_delay_build "the ib_send_bw -R row runs"
	EXPECT='65536 +[0-9]+' cm_pair "ib_send_bw -R" 0 - -- \
		ib_send_bw -R -d "xrxe_$IF_B" -D 1 -p 18515 -- \
		"${CONNECT_DELAY_ENV[@]}" ib_send_bw -R -d "xrxe_$IF_A" -D 1 -p 18515 "$IP4_B"
fi
if command -v qperf >/dev/null; then
	SERVER_STAYS=1 EXPECT='bw  =' cm_pair "qperf -cm1 rc_bw (a port read after a wildcard bind)" 0 - -- \
		qperf -lp 19765 -- qperf -lp 19765 -cm1 "$IP4_B" rc_bw
fi
if command -v fi_pingpong >/dev/null; then
	EXPECT='^64 +100' cm_pair "libfabric verbs dgram (fi_pingpong -e dgram)" 0 - -- \
		fi_pingpong -p verbs -e dgram -I 100 -S 64 -B 47593 -- \
		fi_pingpong -p verbs -e dgram -I 100 -S 64 -P 47593 "$IP4_B"
fi

# Loopback: a client in B to 127.0.0.1 reaches the listener on B's own device.
ns_exec "$NS_B" timeout "$T" rping -s -p 7478 -C 3 -V >"$TMP/lo.server" 2>&1 &
spid=$!
wait_cm_listen "$NS_B" "$IF_B" 7478
out=$(ns_exec "$NS_B" timeout "$T" rping -c -a 127.0.0.1 -p 7478 -C 3 -V -v 2>&1)
crc=$?
wait $spid
src=$?
if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q 'rdma-ping-2' <<<"$out"; then
	tap_ok "rping to 127.0.0.1 loops back on the device"
else
	tap_fail "rping to 127.0.0.1 (client $crc, server $src)"
	tap_diag "$out"
	tap_diag "$(cat "$TMP/lo.server")"
fi

# An address no route reaches: ADDR_ERROR, not a hang.
out=$(ns_exec "$NS_A" timeout 15 rping -c -a 192.0.2.1 -C 1 2>&1)
rc=$?
if ! crashed $rc && grep -q 'RDMA_CM_EVENT_ADDR_ERROR' <<<"$out"; then
	tap_ok "no route to the address: $(grep ADDR_ERROR <<<"$out" | head -1)"
else
	tap_fail "no route to the address (exit $rc)"
	tap_diag "$out"
fi

# The daemon dies (SIGKILL, no goodbye) under a listener: DEVICE_REMOVAL.
ns_exec "$NS_B" timeout "$T" rping -s -a "$IP4_B" -p 7479 -C 1 >"$TMP/rm.server" 2>&1 &
spid=$!
wait_cm_listen "$NS_B" "$IF_B" 7479
{ kill -KILL "$PID_B"; wait "$PID_B"; } 2>/dev/null
# A killed daemon leaves its socket and lock behind (stale: refused, never listed).
rm -f "/run/xrxe/$IF_B.sock" "/run/xrxe/$IF_B.lock"
wait "$spid"
src=$?
if ! crashed $src && grep -q 'device removal' "$TMP/rm.server"; then
	tap_ok "daemon killed under a listener: DEVICE_REMOVAL (rping exit $src)"
else
	tap_fail "daemon killed under a listener (rping exit $src)"
	tap_diag "$(cat "$TMP/rm.server")"
fi
exit 0
