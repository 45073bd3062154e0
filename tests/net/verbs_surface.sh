#!/usr/bin/env bash
# The verbs surface beyond RC (issue 4 part A), with unmodified rdma-core and
# perftest binaries over xrxe: UC, UD (address handles from GIDs, the GRH
# area), SRQ, the ibv_wr_* send path and extended CQs, async events (device
# fatal when the daemon goes away), UD multicast (perftest -g and our own
# program, tests/verbs/ud_surface.c). Two namespaces joined by veth, xrxed in
# each, across the namespaces and within one (loopback inside the daemon).
set -uo pipefail
cd "$(dirname "$0")/../.."
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "verbs surface over xrxe"
source tests/lib/netns.sh
source tests/lib/verbs.sh

XRXED=$PWD/$BUILD/bin/xrxed
RUN=("$PWD/$BUILD/bin/xrxe" run --)
SHIM=$PWD/$BUILD/lib/xrxe/libibverbs.so.1
T=${VERBS_TIMEOUT:-60}

for f in "$XRXED" "$SHIM"; do
	if [ ! -e "$f" ]; then
		tap_fail "$f is built"
		exit 1
	fi
done
for p in ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong ibv_rc_pingpong ibv_asyncwatch \
	ib_send_bw ib_write_bw ib_send_lat; do
	if ! command -v "$p" >/dev/null; then
		tap_fail "$p is installed (make deps)"
		exit 1
	fi
done

netns_tmpdir TMP

PORT=18700

netns_pair 61 1500 || { tap_fail "namespaces created"; exit 1; }
if ! start_daemons; then
	tap_fail "xrxed started on both ends"
	exit 1
fi
tap_ok "xrxed started on both ends"
DEV_A=xrxe_$IF_A DEV_B=xrxe_$IF_B
N=${SURFACE_ITERS:-200}
PROG=$PWD/$BUILD/tests/verbs/ud_surface

# The GID index of our IPv6 address (index 1 is the IPv4-mapped one).
gid6_index() {
	ns_exec "$1" "${RUN[@]}" ibv_devinfo -v -d "$2" 2>/dev/null |
		sed -n "s/.*GID\[ *\([0-9]*\)\]:[[:space:]]*${3}.*/\1/p" | head -n 1
}
G6_A=$(gid6_index "$NS_A" "$DEV_A" "${IP6_A%::1}")
G6_B=$(gid6_index "$NS_B" "$DEV_B" "${IP6_B%::2}")
if [ -n "$G6_A" ] && [ -n "$G6_B" ]; then
	tap_ok "IPv6 GIDs found (index $G6_A and $G6_B)"
else
	tap_fail "IPv6 GIDs found"
fi

# ud_surface (tests/verbs/ud_surface.c): what the stock tools do not reach.
# run_prog DESC NS ARGS...
run_prog() {
	local desc=$1 ns=$2 log=$TMP/prog.log
	shift 2
	if ns_exec "$ns" timeout 30 "${RUN[@]}" "$PROG" "$@" >"$log" 2>&1 &&
		grep -q "ud_surface: OK" "$log"; then
		tap_ok "$desc"
		grep '^  ' "$log" | sed 's/^/#  /'
	else
		tap_fail "$desc"
		sed 's/^/#   /' "$log" | tail -n 15
	fi
}
run_prog "UD: IPv4 GID: GRH area, src_qp, ibv_create_ah_from_wc, oversize send" \
	"$NS_A" -d "$DEV_A" ah 1
run_prog "UD: IPv6 GID: GRH area, src_qp, ibv_create_ah_from_wc, oversize send" \
	"$NS_A" -d "$DEV_A" ah "$G6_A"
run_prog "UD multicast, IPv4 group: attach, two members receive, detach" "$NS_A" -d "$DEV_A" mcast 1
run_prog "UD multicast, IPv6 group: attach, two members receive, detach" \
	"$NS_A" -d "$DEV_A" mcast "$G6_A"
# Multicast across the namespaces: the receiver's daemon must join the IP
# group on its interface (the kernel lists it) and leave it after the detach.
mcast_cross() {
	local fam=$1 grp=$2 gs=$3 gr=$4 rlog=$TMP/mrecv.log slog=$TMP/msend.log
	ns_exec "$NS_B" timeout 30 "${RUN[@]}" "$PROG" -d "$DEV_B" mcast-recv "$gr" >"$rlog" 2>&1 &
	local rpid=$! i joined=0 left=0
	for i in $(seq 100); do grep -q "attached" "$rlog" && break; sleep 0.05; done
	ip -n "$NS_B" maddr show dev "$IF_B" | grep -q "$grp" && joined=1
	ns_exec "$NS_A" timeout 30 "${RUN[@]}" "$PROG" -d "$DEV_A" mcast-send "$gs" >"$slog" 2>&1 &
	local spid=$!
	wait "$rpid"
	local rrc=$?
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	ip -n "$NS_B" maddr show dev "$IF_B" | grep -q "$grp" || left=1
	if [ $rrc -eq 0 ] && grep -q "ud_surface: OK" "$rlog" && [ $joined = 1 ] && [ $left = 1 ]; then
		tap_ok "UD multicast across namespaces ($fam): group joined on $IF_B, datagram received, left"
	else
		tap_fail "UD multicast across namespaces ($fam) (exit $rrc, joined $joined, left $left)"
		sed 's/^/#   recv: /' "$rlog" | tail -n 8
		sed 's/^/#   send: /' "$slog" | tail -n 8
	fi
}
mcast_cross IPv4 239.71.91.1 1 1
mcast_cross IPv6 ff0e::4791:1 "$G6_A" "$G6_B"
run_prog "receive CQ overrun: IBV_EVENT_CQ_ERR and IBV_EVENT_QP_FATAL on async_fd" \
	"$NS_A" -d "$DEV_A" cqerr 1
run_prog "SRQ shared by two RC QPs: SRQ_LIMIT_REACHED, QP_LAST_WQE_REACHED on async_fd" \
	"$NS_A" -d "$DEV_A" srq 1

# rx_drops NS: frames the kernel dropped before NS's daemon read them (its
# AF_XDP sockets' ring full, fill ring empty, other drops), from the same
# `xrxe stats` lines the diagnostic below prints.
rx_drops() {
	ns_exec "$1" "$XRXE_ROOT/$BUILD/bin/xrxe" stats "$(ns_ifc "$1")" 2>/dev/null |
		awk '$1 ~ /^xsk[0-9]+\.k_rx_(ring_full|fill_ring_empty|dropped)$/ { s += $2 } END { print s + 0 }'
}
# uc_pair ROW: a UC perftest row (pair's arguments built here). UC does not
# recover a lost packet (IBA 9.8.3: the rest of the message is dropped and
# nothing is resent), so a server counting 100 receives waits for ever when
# the kernel dropped frames before its daemon read them -- the AF_XDP ring
# full while the daemon was kept off its CPU on a loaded host (CI
# 2026-12-03, load 3-4). That is UC working: one more try, on a new port,
# said in TAP. A failure without such drops fails at once.
uc_pair() {
	local row=$1 drops n try
	local -a cmd
	read -r -a cmd <<<"$row"
	for try in 1 2; do
		next_port
		drops=$(rx_drops "$sns")
		PAIR_TRY_ONLY=$([ $try = 1 ] && echo 1) pair "$row ($where)" "$sns" "$cns" $PORT -- \
			"${cmd[@]}" -d "$sdev" -x 1 -n 100 -F -p $PORT -- \
			"${cmd[@]}" -d "$cdev" -x 1 -n 100 -F -p $PORT "$dst" && return 0
		[ $try = 2 ] && return 1
		n=$(($(rx_drops "$sns") - drops))
		# what else the server's daemon dropped, for the next reader
		ns_exec "$sns" "$XRXE_ROOT/$BUILD/bin/xrxe" stats "$(ns_ifc "$sns")" 2>/dev/null |
			awk '$1 ~ /(drop|k_rx_|rx_error)/ && $2 + 0 > 0 { print "#   server daemon: " $1 " " $2 }'
		if [ "$n" -le 0 ]; then
			tap_fail "$row ($where) (no frame dropped at the server's AF_XDP socket)"
			return 1
		fi
		tap_diag "$row ($where): $n frames dropped at the server's AF_XDP socket (load $(cut -d' ' -f1-3 /proc/loadavg)), so UC lost a message; run again"
	done
}

for where in cross loopback; do
	if [ $where = cross ]; then
		sns=$NS_B cns=$NS_A sdev=$DEV_B cdev=$DEV_A dst=$IP4_B sg6=$G6_B cg6=$G6_A
	else
		sns=$NS_A cns=$NS_A sdev=$DEV_A cdev=$DEV_A dst=$IP4_A sg6=$G6_A cg6=$G6_A
	fi
	for t in "ibv_uc_pingpong -s 4096" "ibv_ud_pingpong -s 1024" "ibv_srq_pingpong -q 8" \
		"ibv_rc_pingpong -N" "ibv_rc_pingpong -t"; do
		read -r -a cmd <<<"$t"
		next_port
		pair "$t ($where)" "$sns" "$cns" $PORT -- \
			"${cmd[@]}" -d "$sdev" -g 1 -n "$N" -p $PORT -- \
			"${cmd[@]}" -d "$cdev" -g 1 -n "$N" -p $PORT "$dst"
	done
	next_port
	pair "ibv_ud_pingpong over IPv6 GIDs ($where)" "$sns" "$cns" $PORT -- \
		ibv_ud_pingpong -d "$sdev" -g "$sg6" -s 1024 -n "$N" -p $PORT -- \
		ibv_ud_pingpong -d "$cdev" -g "$cg6" -s 1024 -n "$N" -p $PORT "$dst"
	for t in "ib_send_bw -c UC" "ib_write_bw -c UC"; do
		uc_pair "$t"
	done
	for t in "ib_send_bw -c UD" "ib_send_lat -c UD"; do
		read -r -a cmd <<<"$t"
		next_port
		pair "$t ($where)" "$sns" "$cns" $PORT -- \
			"${cmd[@]}" -d "$sdev" -x 1 -n 100 -F -p $PORT -- \
			"${cmd[@]}" -d "$cdev" -x 1 -n 100 -F -p $PORT "$dst"
	done
	# perftest multicast (-g): its default MGID is an IPv6 group, so the
	# IPv6 GIDs (perftest refuses to mix an IPv4 source with it)
	for t in "ib_send_bw -c UD -g" "ib_send_lat -c UD -g"; do
		read -r -a cmd <<<"$t"
		next_port
		pair "$t, IPv6 GIDs ($where)" "$sns" "$cns" $PORT -- \
			"${cmd[@]}" -d "$sdev" -x "$sg6" -n 100 -F -p $PORT -- \
			"${cmd[@]}" -d "$cdev" -x "$cg6" -n 100 -F -p $PORT "$dst"
	done
done

# Port events from the daemon's rtnetlink: link down -> IBV_EVENT_PORT_ERR,
# up again -> IBV_EVENT_PORT_ACTIVE, on every context's async fd.
log=$TMP/portwatch
ns_exec "$NS_B" timeout 20 "${RUN[@]}" ibv_asyncwatch -d "$DEV_B" >"$log" 2>&1 &
awpid=$!
for i in $(seq 100); do grep -q "async event FD" "$log" && break; sleep 0.05; done
ip -n "$NS_B" link set "$IF_B" down
for i in $(seq 100); do grep -q "IBV_EVENT_PORT_ERR" "$log" && break; sleep 0.05; done
ip -n "$NS_B" link set "$IF_B" up
for i in $(seq 100); do grep -q "IBV_EVENT_PORT_ACTIVE" "$log" && break; sleep 0.05; done
kill "$awpid" 2>/dev/null
wait "$awpid" 2>/dev/null
if grep -q "IBV_EVENT_PORT_ERR" "$log" && grep -q "IBV_EVENT_PORT_ACTIVE" "$log"; then
	tap_ok "ibv_asyncwatch: link down/up gives IBV_EVENT_PORT_ERR then IBV_EVENT_PORT_ACTIVE"
else
	tap_fail "ibv_asyncwatch: link down/up gives IBV_EVENT_PORT_ERR then IBV_EVENT_PORT_ACTIVE"
	sed 's/^/#   /' "$log" | tail -n 10
fi

# ibv_asyncwatch: waits for async events; stopping the daemon under it must
# produce IBV_EVENT_DEVICE_FATAL (the shim sees its control socket hang up).
# ud_surface fatal, at the same time: then posts and polls fail at once.
log=$TMP/asyncwatch flog=$TMP/fatal
ns_exec "$NS_A" timeout 20 "${RUN[@]}" ibv_asyncwatch -d "$DEV_A" >"$log" 2>&1 &
awpid=$!
ns_exec "$NS_A" timeout 20 "${RUN[@]}" "$PROG" -d "$DEV_A" fatal >"$flog" 2>&1 &
fpid=$!
for i in $(seq 100); do
	grep -q "async event FD" "$log" && grep -q "waiting for the daemon" "$flog" && break
	sleep 0.05
done
kill "$PID_A"
wait "$PID_A" 2>/dev/null
wait "$awpid"
if grep -q "IBV_EVENT_DEVICE_FATAL" "$log"; then
	tap_ok "ibv_asyncwatch prints IBV_EVENT_DEVICE_FATAL when the daemon stops"
else
	tap_fail "ibv_asyncwatch prints IBV_EVENT_DEVICE_FATAL when the daemon stops"
	sed 's/^/#   /' "$log" | tail -n 10
fi
if wait "$fpid" && grep -q "ud_surface: OK" "$flog"; then
	tap_ok "after device fatal, post_send/post_recv/poll_cq/create_cq fail at once"
	grep '^  ' "$flog" | sed 's/^/#  /'
else
	tap_fail "after device fatal, post_send/post_recv/poll_cq/create_cq fail at once"
	sed 's/^/#   /' "$flog" | tail -n 10
fi
kill "$PID_B" 2>/dev/null
wait "$PID_B" 2>/dev/null
exit 0
