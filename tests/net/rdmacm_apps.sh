#!/usr/bin/env bash
# The other real users of librdmacm over xrxe: unmodified Debian binaries
# through `xrxe run` (xrxe's librdmacm.so.1 and libibverbs.so.1), between two
# namespaces joined by veth (xrxed in each) and in loopback inside one daemon.
#
#   fi_info -p verbs         lists FI_EP_MSG on the device: libfabric's verbs
#                            provider binds 127.0.0.1 to probe the devices, and
#                            rdma_bind_addr treats a loopback address as the
#                            kernel does (a wildcard: no device, no ENODEV)
#   fi_pingpong -e msg       verbs MSG endpoints (rdma_cm connections), -c
#                            (data checked), every size 64 B .. 1 MiB
#   fi_pingpong -e rdm       "verbs;ofi_rxm": RxM's own connection manager over
#                            verbs MSG endpoints on an SRQ (eager, SAR,
#                            rendezvous reads)
#   qperf -cm1               RC tests with the connection set up by rdma_cm
#
# IPv4 first; then the IPv4 addresses are removed, so libfabric's endpoints
# (which take the device's first address) are IPv6 ones, and fi_pingpong -6
# runs again. qperf's CM code is IPv4 only (getaddrinfo with AF_INET).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "libfabric and qperf over xrxe's librdmacm"
source tests/lib/netns.sh
source tests/lib/verbs.sh
source tests/lib/connect_delay.sh

XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
RUN=("$XRXE" run --)
T=${RDMACM_TIMEOUT:-60}

for f in "$XRXED" "$PWD/$BUILD/lib/xrxe/librdmacm.so.1" "$PWD/$BUILD/lib/xrxe/libibverbs.so.1"; do
	if [ ! -e "$f" ]; then
		tap_fail "$f is built"
		exit 1
	fi
done
HAVE_FI=1 HAVE_QPERF=1
command -v fi_pingpong >/dev/null && command -v fi_info >/dev/null || HAVE_FI=
command -v qperf >/dev/null || HAVE_QPERF=

netns_tmpdir TMP
# libfabric 1.17 leaves a backtrace file (fi_pingpong.*.btr) in the current
# directory when it crashes: let that be the scratch directory, not the tree.
cd "$TMP" || exit 1
# Out-of-band TCP ports (fi_pingpong's control socket, qperf's listen port);
# the RDMA CM ports are the programs' own (ephemeral).
PORT=19600

netns_pair 65 1500 || { tap_fail "namespaces created"; exit 1; }
if ! start_daemons; then
	tap_fail "xrxed started on both ends"
	exit 1
fi
tap_ok "xrxed started on both ends"
netns_at_exit stop_daemons

# grep_all FILE PATTERN...: every pattern matches a line of FILE (else the
# file's head, for the TAP comment).
# shellcheck disable=SC2317 # called through tap_check
grep_all() {
	local f=$1 p
	shift
	for p in "$@"; do
		grep -q -- "$p" "$f" || { echo "no line matches '$p' in:"; head -n 40 "$f"; return 1; }
	done
}

# The log files pair() (tests/lib/verbs.sh) keeps for DESC.
pair_log() { echo "$TMP/$(echo "$1" | tr -c 'A-Za-z0-9_\n' '_')"; }

# fi_pingpong's verbs provider logs the address its passive endpoint listens
# on (FI_LOG_LEVEL=info): the RDMA address family, whatever -6 did to the
# control socket.
FI_SERVER_ENV=(env FI_LOG_LEVEL=info FI_LOG_PROV=verbs)

# RxM over verbs needs two knobs over kernel rxe (the same set here, so the
# rows run as against rxe):
# - it opens one verbs CQ of (rx + tx size) x FI_UNIVERSE_SIZE entries,
#   128 x 2 x 256 = 65536 by default, above kernel rxe's max_cqe (32767; xrxe
#   offers 2^20 - 1): fi_enable fails with EINVAL there (libfabric issue #10692);
# - with a receive queue per connection, libfabric 1.17 closes a
#   connection's endpoint before it drains the completions still queued
#   for it, then handles them on the freed endpoint (a use-after-free at
#   teardown, fixed upstream by "prov/rxm: fix the msg_ep use-after-free at
#   connection teardown"): fi_pingpong dies with SIGSEGV in about one run
#   in five once its last messages are exchanged. A shared receive context
#   (SRQ) keeps the buffers off the closed endpoint.
RXM_ENV=(env FI_UNIVERSE_SIZE=64 FI_OFI_RXM_USE_SRX=1)

# pingpong DESC FAMILY CLIENT_NS CLIENT_HOST -- ARGS...: fi_pingpong server
# in A, client in CLIENT_NS to CLIENT_HOST (the control socket's address);
# ok if both exit 0 and the server's endpoint listened on FAMILY (in, in6).
pingpong() {
	local desc=$1 fam=$2 cns=$3 host=$4 env=() v6=()
	shift 5
	next_port
	[[ "$*" == *ofi_rxm* ]] && env=("${RXM_ENV[@]}")
	[ "$fam" = in6 ] && v6=(-6)
	pair "$desc" "$NS_A" "$cns" $PORT -- \
		"${FI_SERVER_ENV[@]}" "${env[@]}" fi_pingpong "$@" -B $PORT "${v6[@]}" -- \
		"${env[@]}" fi_pingpong "$@" -P $PORT "${v6[@]}" "$host" || return 1
	local where log
	log=$(pair_log "$desc")
	# the sizes pair() did not print (its pattern wants digits only)
	grep -E '^[0-9.]+[kmg] ' "$log.client" | sed 's/^/#   /'
	where=$(grep -o 'listening on: fi_sockaddr_[a-z0-9]*://[^ ]*' "$log.server" | head -n 1)
	tap_check "$desc: the endpoint listened on fi_sockaddr_$fam (${where#listening on: })" \
		grep -q "^listening on: fi_sockaddr_$fam://" <<<"$where"
}

# qperf_run LOG CLIENT_NS HOST TEST...: qperf's server in A (it serves until
# stopped: one forked child per test), the client with -cm1. Sets QRC (the
# client's exit), QALIVE (the server still ran) and QGOT (results).
qperf_run() {
	local log=$1 cns=$2 host=$3
	shift 3
	next_port
	ns_exec "$NS_A" timeout "$T" "${RUN[@]}" qperf -lp $PORT >"$log.server" 2>&1 &
	local spid=$!
	QRC=1 QALIVE=0 QGOT=0
	if ! wait_listen "$NS_A" $PORT; then
		pkill -TERM -P "$spid" 2>/dev/null
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		echo "qperf server did not start" >>"$log.client"
		return
	fi
	ns_exec "$cns" "${CONNECT_DELAY_ENV[@]}" timeout "$T" "${RUN[@]}" \
		qperf -lp $PORT -cm1 -t 1 "$host" "$@" >"$log.client" 2>&1
	QRC=$?
	kill -0 "$spid" 2>/dev/null && QALIVE=1
	# $! is the subshell running ns_exec: its child is timeout(1), which
	# passes the TERM on to qperf
	pkill -TERM -P "$spid" 2>/dev/null
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	QGOT=$(grep -cE '^ +(bw|latency|msg_rate) += ' "$log.client")
}

# qperf_pair DESC CLIENT_NS HOST TEST...: ok if the client exits 0 with one
# result per test; the results are printed as comments.
#
# qperf 0.4.11 (Debian 12) sends the server's CM port to the client before
# it calls rdma_listen (fixed upstream after the release: "Fix rdmacm race",
# linux-rdma/qperf 118a571), so a REQ can beat the listen and is rejected
# (REJ 8, invalid service ID), as over the kernel; a loaded host widens the
# window (at load 11 a run of nine tests lost the race twice in a row). So
# the client's rdma_connect waits 0.5 s (tests/lib/connect_delay.c), and a
# run that fails that way alone is repeated, twice at most.
connect_delay_build "qperf runs"
qperf_pair() {
	local desc=$1 cns=$2 host=$3 log try
	shift 3
	log=$(pair_log "$desc")
	qperf_run "$log" "$cns" "$host" "$@"
	for try in 2 3; do
		if [ $QRC -eq 0 ] || ! grep -q "Event rejected" "$log.client"; then
			break
		fi
		tap_diag "qperf's listen race (REJ before rdma_listen): run $try"
		sed 's/^/#   failed run: /' "$log.client" | grep -B1 -A1 "rejected"
		qperf_run "$log" "$cns" "$host" "$@"
	done
	if [ $QRC -eq 0 ] && [ $QALIVE -eq 1 ] && [ "$QGOT" -eq $# ] && ! grep -qi fail "$log.client"; then
		tap_ok "$desc"
		# "rc_bw:" / "    bw  =  225 MB/sec" as one comment line per test
		awk '/^[a-z_]+:$/ { t = $1 } /^ +(bw|latency|msg_rate) += / { $1 = $1; print "#   " t, $0 }' \
			"$log.client"
		return 0
	fi
	tap_fail "$desc (client exit $QRC, server alive $QALIVE, $QGOT of $# results)"
	sed 's/^/#   server: /' "$log.server" | tail -n 10
	sed 's/^/#   client: /' "$log.client" | tail -n 20
	return 1
}

# --- IPv4 -------------------------------------------------------------------

if [ -n "$HAVE_FI" ]; then
	# The device, found the way the kernel's rdma_cm lets libfabric find it:
	# FI_EP_MSG entries with the interface's addresses as source.
	ns_exec "$NS_A" timeout "$T" "${RUN[@]}" fi_info -p verbs -t FI_EP_MSG -v >"$TMP/fi_info" 2>&1
	tap_check "fi_info -p verbs -t FI_EP_MSG: xrxe_$IF_A with source $IP4_A and $IP6_A" \
		grep_all "$TMP/fi_info" "name: xrxe_$IF_A\$" "type: FI_EP_MSG" \
		"src_addr: fi_sockaddr_in://$IP4_A:0" "src_addr: fi_sockaddr_in6://\[$IP6_A\]:0"

	for where in across loopback; do
		CNS=$NS_B HOST=$IP4_A
		[ $where = loopback ] && CNS=$NS_A HOST=127.0.0.1
		pingpong "fi_pingpong -p verbs -e msg -c, 64 B..1 MiB (IPv4 $where)" in "$CNS" "$HOST" -- \
			-p verbs -e msg -c -I 50
		pingpong "fi_pingpong -p 'verbs;ofi_rxm' -e rdm -c, 64 B..1 MiB (IPv4 $where)" in "$CNS" "$HOST" -- \
			-p "verbs;ofi_rxm" -e rdm -c -I 50
	done
else
	tap_skip "libfabric (fi_info, fi_pingpong)" "libfabric-bin is not installed (make deps)"
fi

if [ -n "$HAVE_QPERF" ]; then
	qperf_pair "qperf -cm1: RC send, RDMA write/read bandwidth and latency, atomics (across)" \
		"$NS_B" "$IP4_A" rc_bw rc_bi_bw rc_lat rc_rdma_write_bw rc_rdma_read_bw \
		rc_rdma_write_lat rc_rdma_read_lat rc_compare_swap_mr rc_fetch_add_mr
	qperf_pair "qperf -cm1 to 127.0.0.1: rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_bw (loopback)" \
		"$NS_A" 127.0.0.1 rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_bw
	# qperf 0.4.11 sets up only its RC tests through the CM (rd_params
	# clears use_cm for UC and UD); without it, it builds LID-routed
	# address vectors, which RoCE refuses (kernel rxe too): no UD/UC rows.
else
	tap_skip "qperf -cm1" "qperf is not installed (make deps)"
fi

# --- IPv6 -------------------------------------------------------------------
# libfabric's endpoints take the device's first address, IPv4 while there is
# one: without them, the same programs run over IPv6.

gids() { ns_exec "$1" "$XRXE" stats "$2" 2>/dev/null | awk '$1 == "port.gids" { print $2 }'; }

if [ -n "$HAVE_FI" ]; then
	before_a=$(gids "$NS_A" "$IF_A") before_b=$(gids "$NS_B" "$IF_B")
	ip -n "$NS_A" addr del "$IP4_A/24" dev "$IF_A" && ip -n "$NS_B" addr del "$IP4_B/24" dev "$IF_B"
	# the daemons follow the interfaces' addresses (netlink): one GID fewer
	for _ in $(seq 100); do
		[ "$(gids "$NS_A" "$IF_A")" = $((before_a - 1)) ] &&
			[ "$(gids "$NS_B" "$IF_B")" = $((before_b - 1)) ] && break
		sleep 0.05
	done
	tap_check "IPv4 addresses removed: the daemons' GID tables follow" \
		test "$(gids "$NS_A" "$IF_A")" = $((before_a - 1)) -a "$(gids "$NS_B" "$IF_B")" = $((before_b - 1))

	for where in across loopback; do
		CNS=$NS_B HOST=$IP6_A
		[ $where = loopback ] && CNS=$NS_A HOST=::1
		pingpong "fi_pingpong -6 -p verbs -e msg -c, 64 B..1 MiB (IPv6 $where)" in6 "$CNS" "$HOST" -- \
			-p verbs -e msg -c -I 50
		pingpong "fi_pingpong -6 -p 'verbs;ofi_rxm' -e rdm -c, 64 B..1 MiB (IPv6 $where)" in6 "$CNS" "$HOST" -- \
			-p "verbs;ofi_rxm" -e rdm -c -I 20
	done
fi

# --- the daemons' view: no malformed MAD, every ID gone (TimeWait included) --
sleep 2
for side in A B; do
	ifc=IF_$side ns=NS_$side
	cm=$(ns_exec "${!ns}" "$XRXE" cm "${!ifc}" 2>&1)
	bad=$(awk '$1 ~ /^cm\.drop_(truncated|bad|not|unknown_attr|wrong)/ { s += $2 } END { print s + 0 }' <<<"$cm")
	ids=$(awk '$1 == "cm.ids" { print $2 }' <<<"$cm")
	sent=$(awk '$1 == "cm.mad_sent" { print $2 }' <<<"$cm")
	tap_check "daemon $side: CM MADs exchanged (${sent:-0} sent), none malformed" \
		test "${sent:-0}" -gt 0 -a "$bad" -eq 0
	tap_check "daemon $side: no CM ID left after the programs exited" test "${ids:-1}" -eq 0
done
if grep -E "ERROR: (Address|Leak|Undefined)Sanitizer|runtime error" "$TMP"/xrxed-*.log >/dev/null; then
	tap_fail "no sanitizer report from the daemons"
else
	tap_ok "no sanitizer report from the daemons"
fi
exit 0
