# shellcheck shell=bash
# Running verbs programs over xrxe between the two namespaces of a netns_pair
# (tests/lib/netns.sh): xrxed on both ends, and server/client pairs of stock
# rdma-core / perftest programs through the shim.
#
# The caller sets XRXED (the daemon binary), RUN (the shim launcher, e.g.
# ("$BUILD/bin/xrxe" run --)), T (per-program timeout, s), TMP (logs) and PORT
# (first TCP port; next_port moves on), and has NS_A/NS_B, IF_A/IF_B.

# start_daemons: xrxed on both ends of the current pair; waits for the sockets.
start_daemons() {
	ns_bg "$NS_A" sh -c "exec \"$XRXED\" \"$IF_A\" >>\"$TMP/xrxed-a.log\" 2>&1"
	PID_A=$NETNS_LAST_PID
	ns_bg "$NS_B" sh -c "exec \"$XRXED\" \"$IF_B\" >>\"$TMP/xrxed-b.log\" 2>&1"
	PID_B=$NETNS_LAST_PID
	netns_wait_file "/run/xrxe/$IF_A.sock" 10 && netns_wait_file "/run/xrxe/$IF_B.sock" 10
}

stop_daemons() {
	kill "$PID_A" "$PID_B" 2>/dev/null
	wait "$PID_A" "$PID_B" 2>/dev/null
}

# wait_listen NS PORT: until a TCP listener on PORT exists in NS.
wait_listen() {
	local i
	for i in $(seq 200); do
		ns_exec "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# ns_ifc NS: the interface of NS ($IF_B for $NS_B, else $IF_A).
ns_ifc() { if [ "$1" = "$NS_B" ]; then echo "$IF_B"; else echo "$IF_A"; fi; }

# wait_cm_listen NS PORT: until an RDMA CM listener on PORT exists in the
# daemon of NS (librdmacm servers open no TCP socket): `xrxe cm --json`.
wait_cm_listen() {
	local i
	for i in $(seq 200); do
		"$XRXE_ROOT/$BUILD/bin/xrxe" cm "$(ns_ifc "$1")" --json 2>/dev/null |
			grep -qE "\"state\": \"listen\", [^}]*:$2\"" && return 0
		sleep 0.05
	done
	return 1
}

# pair DESC SERVER_NS CLIENT_NS PORT -- SERVER_ARGS -- CLIENT_ARGS
# Runs the server in the background and the client in the foreground, both
# through the shim with a timeout; ok if both exit 0. Logs are kept on failure.
# The server is ready when $PAIR_WAIT NS PORT says so (default wait_listen: a
# TCP listener; wait_cm_listen for librdmacm servers). With PAIR_SERVER_STAYS
# set, the server is one that never exits (cmtime): it must still run when
# the client is done, and is then stopped. With PAIR_TRY_ONLY set a failure
# is not a TAP failure (the caller decides; the logs are shown the same).
pair() {
	local desc=$1 sns=$2 cns=$3 port=$4
	shift 4
	[ "$1" = -- ] && shift
	local sargs=() cargs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	local log=$TMP/$(echo "$desc" | tr -c 'A-Za-z0-9_\n' '_')
	ns_exec "$sns" timeout "$T" "${RUN[@]}" "${sargs[@]}" >"$log.server" 2>&1 &
	local spid=$!
	if ! "${PAIR_WAIT:-wait_listen}" "$sns" "$port"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		tap_fail "$desc (server did not start)"
		sed 's/^/#   server: /' "$log.server" | tail -n 20
		return 1
	fi
	ns_exec "$cns" timeout "$T" "${RUN[@]}" "${cargs[@]}" >"$log.client" 2>&1
	local crc=$?
	local src
	if [ -n "${PAIR_SERVER_STAYS:-}" ]; then
		# a server that serves until killed (cmtime): it must still be
		# there when the client is done
		if kill -0 "$spid" 2>/dev/null; then
			src=0
			pkill -TERM -P "$spid" 2>/dev/null
			kill "$spid" 2>/dev/null
		else
			src=1
		fi
		wait "$spid" 2>/dev/null
	else
		wait "$spid"
		src=$?
	fi
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		tap_ok "$desc"
		# The client's report (perftest's table, pingpong's rate), as comments.
		grep -E '^ *[0-9]+ +[0-9]+ |iters in|bytes in' "$log.client" | tail -n 3 | sed 's/^/#   /'
		return 0
	fi
	if [ -n "${PAIR_TRY_ONLY:-}" ]; then
		tap_diag "$desc: server exit $src, client exit $crc"
	else
		tap_fail "$desc (server exit $src, client exit $crc)"
	fi
	sed 's/^/#   server: /' "$log.server" | tail -n 15
	sed 's/^/#   client: /' "$log.client" | tail -n 15
	return 1
}

# next_port: a fresh out-of-band TCP port for the next pair.
next_port() { PORT=$((PORT + 1)); }
