# shellcheck shell=bash
# Sourced by the CM bench's guest jobs (copied to /share/jobs.sh): one
# measurement per call, its output on stdout, on the kernel's rdma_cm over
# rxe0 or on xrxe (xrxed on eth0, programs through `xrxe run`), both in
# loopback over the guest's own address. Servers are stopped by their pid.
#
#   k_cmtime PORT N | x_cmtime PORT N        cmtime -c N, client and server
#   k_rtt PORT N [--qp] | x_rtt ...          cm_rtt client -n N against its server
#   x_start [native|skb]                     xrxed eth0; 0 once its socket exists
#   x_stop
#   k_remove_rxe | k_add_rxe                 rdma link delete / add rxe0
B=/share/bin
X=$B/xrxe
: "${GUEST_IP4:?}"
T=${CM_GUEST_TIMEOUT:-120}

# wait_until TRIES CMD...: poll every 0.1 s.
wait_until() {
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
k_listening() { rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*src-addr $GUEST_IP4:$1 "; }
x_listening() { "$X" cm eth0 --json 2>/dev/null | grep -qE "\"state\": \"listen\", [^}]*:$1\""; }

# stop PID: TERM, then wait (a server that never exits by itself).
stop() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

# pair KIND PORT -- SERVER... -- CLIENT...: KIND k (kernel) or x (xrxe).
pair() {
	local kind=$1 port=$2 spid rc pre=()
	shift 3
	local sargs=() cargs=()
	while [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	[ "$kind" = x ] && pre=("$X" run --)
	timeout "$T" "${pre[@]}" "${sargs[@]}" >"/tmp/server.$port" 2>&1 &
	spid=$!
	if ! wait_until 200 "${kind}_listening" "$port"; then
		echo "server on port $port did not listen:"
		tail -n 5 "/tmp/server.$port"
		stop "$spid"
		return 1
	fi
	timeout "$T" "${pre[@]}" "${cargs[@]}"
	rc=$?
	stop "$spid"
	return $rc
}

k_cmtime() { pair k "$1" -- cmtime -b "$GUEST_IP4" -p "$1" -c "$2" -- cmtime -s "$GUEST_IP4" -b "$GUEST_IP4" -p "$1" -c "$2"; }
x_cmtime() { pair x "$1" -- cmtime -b "$GUEST_IP4" -p "$1" -c "$2" -- cmtime -s "$GUEST_IP4" -b "$GUEST_IP4" -p "$1" -c "$2"; }
# k_rtt PORT N [--qp]
rtt() {
	local kind=$1 p=$2 n=$3
	shift 3
	pair "$kind" "$p" -- "$B/cm_rtt" server "$GUEST_IP4" "$p" "$@" -- \
		"$B/cm_rtt" client "$GUEST_IP4" "$GUEST_IP4" "$p" -n "$n" "$@"
}
k_rtt() { rtt k "$@"; }
x_rtt() { rtt x "$@"; }

k_remove_rxe() {
	# A process still holding rxe0 (a server's listening ID) would make the
	# deletion wait for it: there is none left by pair().
	timeout 60 rdma link delete rxe0 && ! rdma link show | grep -q rxe0
}

k_add_rxe() { rdma link add rxe0 type rxe netdev eth0 && rdma link show | grep -q rxe0; }

x_start() {
	local mode=${1:-native}
	rm -f /run/xrxe/eth0.sock
	setsid "$B/xrxed" eth0 --mode "$mode" >/tmp/xrxed.log 2>&1 </dev/null &
	echo $! >/tmp/xrxed.pid
	if ! wait_until 300 test -S /run/xrxe/eth0.sock; then
		tail -n 5 /tmp/xrxed.log
		x_stop
		return 1
	fi
	grep -E 'queue\(s\)' /tmp/xrxed.log
	return 0
}

x_stop() {
	local pid
	pid=$(cat /tmp/xrxed.pid 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null
	wait_until 100 eval "! kill -0 $pid 2>/dev/null"
	rm -f /tmp/xrxed.pid
}
