#!/usr/bin/env bash
# rsockets over xrxe (issue 13): rdma-core's own rsocket programs, unmodified
# Debian binaries (rdmacm-utils) through `xrxe run`, between two namespaces
# joined by veth (xrxed in each) and in loopback inside one daemon:
#
#   rstream     its default sweep once (no options, ~800 MB, not verified);
#               blocking (-T b), non-blocking (-T n) and async/rpoll (-T a),
#               data verified (-T v), at the sweep's sizes (64 B, 4 KiB,
#               64 KiB, 1 MiB) with counts small enough for a loaded machine
#   rs_duplex   one rsocket, a sending and a receiving thread per end at
#               once, 20 MB each way, every byte checked
#   riostream   riomap + riowrite (direct placement), data verified
#   rcopy       a 3 MB file, compared byte for byte
#   udpong      datagram rsockets (UD): echoed datagrams; its server also
#               after junk datagrams at its UDP port, malformed UD messages at
#               its QP and more datagrams than its receive queue holds (with
#               tests/rdmacm/rs_hostile udping as the client), and with every
#               send completion forced to race its blocking rrecvfrom's
#               arming of the CQ (tests/rdmacm/preload/late_cq_event.c)
#   librspreload (rdma-core's LD_PRELOAD library) under ordinary TCP
#               programs: tests/net/rs_echo (3 MB echoed and checked; its
#               poll() mixes the rsocket with a pipe; also with librspreload's
#               fork support, the connection taken over by a forked child)
#               and iperf3
#
# and a hostile peer (tests/rdmacm/rs_hostile): connection data that is not
# rsocket version 1 / too short / grants nothing, data beyond the grant, an
# empty data message, reserved ops and control codes, an iomap update out of
# range, a SEND, messages beyond the credits, a peer that vanishes while the
# client receives or sends — each must end the caller's call with an error
# (ECONNREFUSED / ECONNRESET) within its 20 s alarm, never hang or crash;
# and an rstream server that gets requests with broken connection data
# rejects them and goes on serving.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "rsockets over xrxe"
source tests/lib/netns.sh
source tests/lib/verbs.sh

XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
RUN=("$XRXE" run --)
T=${RSOCKETS_TIMEOUT:-60}
PAIR_WAIT=wait_cm_listen
ECHO=$PWD/$BUILD/tests/net/rs_echo
HOSTILE=$PWD/$BUILD/tests/rdmacm/rs_hostile
DUPLEX=$PWD/$BUILD/tests/rdmacm/rs_duplex
LATE_CQ_EVENT=$PWD/$BUILD/tests/rdmacm/late_cq_event.so
PRELOAD=${RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}

for f in "$XRXED" "$PWD/$BUILD/lib/xrxe/librdmacm.so.1" "$PWD/$BUILD/lib/xrxe/libibverbs.so.1" \
	"$ECHO" "$HOSTILE" "$DUPLEX" "$LATE_CQ_EVENT"; do
	if [ ! -e "$f" ]; then
		tap_fail "$f is built (make tests)"
		exit 1
	fi
done
for p in rstream riostream rcopy udpong; do
	if ! command -v "$p" >/dev/null; then
		tap_fail "$p is installed (rdmacm-utils; make deps)"
		exit 1
	fi
done

# wait_udp NS PORT: until a UDP socket is bound to PORT in NS (a datagram
# rsocket is one).
wait_udp() {
	local i
	for i in $(seq 200); do
		ns_exec "$1" ss -Hlun "sport = :$2" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# leaf_pid PID: the innermost descendant of PID (the program a backgrounded
# `ns_exec NS timeout ... xrxe run -- PROG` runs).
leaf_pid() {
	local p=$1 c
	while c=$(pgrep -P "$p" | head -n 1) && [ -n "$c" ]; do p=$c; done
	echo "$p"
}

# stop_bg PID: a backgrounded ns_exec and what it runs (timeout forwards the
# TERM to its program).
stop_bg() {
	pkill -TERM -P "$1" 2>/dev/null
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# RoCEv2 packets the transport of xrxed in A has received (across the veth
# or looped back inside the daemon): proof that a preloaded program's bytes
# went over rsockets, not TCP (at least one packet per 4096 bytes).
rx_packets() {
	ns_exec "$NS_A" "$XRXE" stats "$IF_A" 2>/dev/null |
		awk '$1 == "transport.rx_packets" { print $2 }'
}

netns_tmpdir TMP
PORT=19700

netns_pair 73 1500 || { tap_fail "namespaces created"; exit 1; }
if ! start_daemons; then
	tap_fail "xrxed started on both ends"
	exit 1
fi
tap_ok "xrxed started on both ends"
netns_at_exit stop_daemons

head -c 3000000 /dev/urandom >"$TMP/file.src"

for where in across loopback; do
	SRV=$IP4_A CNS=$NS_B
	[ $where = loopback ] && CNS=$NS_A
	tag="IPv4 $where"

	specs=("64 400 b" "4096 200 b" "65536 40 b" "1048576 4 b" "4096 200 n" "65536 40 n"
		"4096 200 a" "1048576 4 a")
	# in loopback a subset: the same code, one daemon
	[ $where = loopback ] && specs=("64 400 b" "1048576 4 b" "65536 40 n" "4096 200 a")
	for spec in "${specs[@]}"; do
		read -r size count mode <<<"$spec"
		next_port
		pair "rstream -T $mode: $count x $size B each way, verified ($tag)" "$NS_A" "$CNS" \
			$PORT -- \
			rstream -b "$SRV" -p $PORT -S "$size" -C "$count" -T "$mode" -T v -- \
			rstream -s "$SRV" -p $PORT -S "$size" -C "$count" -T "$mode" -T v
	done
	next_port
	pair "rs_duplex: 20 MB each way at once, a sending and a receiving thread per end ($tag)" \
		"$NS_A" "$CNS" $PORT -- \
		"$DUPLEX" server "$SRV" $PORT 20000000 -- \
		"$DUPLEX" client "$SRV" $PORT 20000000
	next_port
	pair "riostream: riowrite into the peer's riomap, 100 x 64 KiB, verified ($tag)" \
		"$NS_A" "$CNS" $PORT -- \
		riostream -b "$SRV" -p $PORT -S 65536 -C 100 -T v -- \
		riostream -s "$SRV" -p $PORT -S 65536 -C 100 -T v

	next_port
	rm -f "$TMP/file.dst"
	PAIR_SERVER_STAYS=1 pair "rcopy: a 3 MB file ($tag)" "$NS_A" "$CNS" $PORT -- \
		rcopy -p $PORT -- \
		rcopy "$TMP/file.src" "$SRV:$TMP/file.dst" -p $PORT &&
		tap_check "rcopy: the copy is byte for byte the file ($tag)" \
			cmp "$TMP/file.src" "$TMP/file.dst"

	# udpong: datagram rsockets (UD). Its server serves until stopped; its
	# client resends what is not answered within 1 ms, and both run
	# blocking. That client resends the last datagram it *received*, not
	# the one it is waiting for: on a loaded machine answers take longer
	# than 1 ms, stale copies pile up in flight until they fill a receive
	# queue (384), and once the datagram it waits for is the one dropped,
	# the client circulates stale copies for ever (2 in 40 runs of 50
	# datagrams under load, with or without junk). So a short run of it
	# here; the server's longer checks use rs_hostile udping, which
	# resends its own datagram.
	next_port
	PAIR_WAIT=wait_udp PAIR_SERVER_STAYS=1 \
		pair "udpong: 20 echoed datagrams of 64 B ($tag)" "$NS_A" "$CNS" $PORT -- \
		udpong -b "$SRV" -p $PORT -T b -- \
		udpong -s "$SRV" -p $PORT -S 64 -C 20 -T e -T b
	next_port
	ns_exec "$NS_A" timeout "$T" "${RUN[@]}" udpong -b "$SRV" -p $PORT -T b \
		>"$TMP/udpong_junk.server" 2>&1 &
	spid=$!
	if wait_udp "$NS_A" $PORT; then
		# Junk at its UDP port first: too short, a wrong tag, a header
		# length that does not match its version, an unknown op.
		ns_exec "$CNS" bash -c "printf 'x' >/dev/udp/$SRV/$PORT;
			printf 'AAAA\\x04\\x00\\x10\\x00\\x00\\x00\\x00\\x01\\x0a\\x00\\x00\\x01' >/dev/udp/$SRV/$PORT;
			printf 'UUUU\\x04\\x00\\x1c\\x00\\x00\\x00\\x00\\x01\\x0a\\x00\\x00\\x01' >/dev/udp/$SRV/$PORT;
			printf 'UUUU\\x04\\x63\\x10\\x00\\x00\\x00\\x00\\x01\\x0a\\x00\\x00\\x01' >/dev/udp/$SRV/$PORT"
		# ... and on its UD QP: messages too short, of an unknown version,
		# with header lengths that do not fit (rs_hostile udjunk learns
		# the QP as a peer does).
		tap_check "malformed UD messages sent to udpong's QP ($tag)" \
			ns_exec "$CNS" timeout 30 "${RUN[@]}" "$HOSTILE" udjunk "$SRV" $PORT
		# Then 1000 datagrams while it is stopped (SIGSTOP): its daemon
		# drops what its 384 receive WQEs do not hold; then 50 more, each
		# echoed intact.
		lpid=$(leaf_pid $spid)
		tap_check "udpong after junk datagrams and 1000 datagrams while stopped: 50 x 64 B echoed ($tag)" \
			ns_exec "$CNS" timeout "$T" "${RUN[@]}" "$HOSTILE" udping "$SRV" $PORT 50 "$lpid"
		kill -CONT "$lpid" 2>/dev/null # (if udping died before it did)
		if kill -0 $spid 2>/dev/null; then
			tap_ok "udpong's server survived the junk ($tag)"
		else
			wait $spid
			tap_fail "udpong's server survived the junk ($tag): it ended with status $? (124: its $T s timeout; above 128: a signal)"
			tap_diag "$(tail -n 8 "$TMP/udpong_junk.server")"
		fi
	else
		tap_fail "udpong server started ($tag)"
	fi
	stop_bg $spid

	# A blocking rrecvfrom arms its QP's CQ, looks once more and sleeps.
	# late_cq_event.so makes every look wait for an event on the channel,
	# so the completion of the echo udpong has just sent always lands
	# between the arming and the look, whose ibv_get_cq_event takes it:
	# unless the CQ is armed again before sleeping, the next datagram wakes
	# nobody. The wake_up_interval that would end such a sleep (1 s) is an
	# hour here (rdma-core's configuration file, in a mount namespace of
	# the server's own), so that a missed wake-up is a hang, not a delay.
	next_port
	desc="udpong's blocking rrecvfrom wakes for each datagram with every send completion racing its arming (late_cq_event.so): 20 x 64 B echoed ($tag)"
	if [ ! -d /etc/rdma ]; then
		tap_skip "$desc" "no /etc/rdma to mount the configuration over"
	else
		mkdir -p "$TMP/rsconf"
		echo 3600000 >"$TMP/rsconf/wake_up_interval"
		ns_exec "$NS_A" timeout "$T" unshare -m --propagation private sh -c \
			'mount -t tmpfs rsconf /etc/rdma && mkdir /etc/rdma/rsocket &&
			cp "$0"/* /etc/rdma/rsocket/ && exec "$@"' "$TMP/rsconf" \
			"${RUN[@]}" env LD_PRELOAD="$LATE_CQ_EVENT" udpong -b "$SRV" -p $PORT -T b \
			>"$TMP/udpong_late.server" 2>&1 &
		spid=$!
		if wait_udp "$NS_A" $PORT; then
			tap_check "$desc" \
				ns_exec "$CNS" timeout 30 "${RUN[@]}" "$HOSTILE" udping "$SRV" $PORT 20
		else
			tap_fail "$desc (the server did not start)"
			tap_diag "$(tail -n 8 "$TMP/udpong_late.server")"
		fi
		stop_bg $spid
	fi

	if [ ! -e "$PRELOAD" ]; then
		tap_skip "librspreload rows ($tag)" "$PRELOAD is missing (Debian's librdmacm1)"
		continue
	fi
	next_port
	b0=$(rx_packets)
	pair "librspreload: a TCP echo of 3 MB, every byte checked ($tag)" "$NS_A" "$CNS" \
		$PORT -- \
		env LD_PRELOAD="$PRELOAD" "$ECHO" server "$SRV" $PORT -- \
		env LD_PRELOAD="$PRELOAD" "$ECHO" client "$SRV" $PORT 3000000
	log=$TMP/$(echo "librspreload: a TCP echo of 3 MB, every byte checked ($tag)" |
		tr -c 'A-Za-z0-9_\n' '_')
	grep -h 'echoed' "$log.client" 2>/dev/null | sed 's/^/#   /'
	b1=$(rx_packets)
	tap_check "... over rsockets: xrxed in A received $((b1 - b0)) RoCEv2 packets ($tag)" \
		test $((b1 - b0)) -ge $((3000000 / 4096))
	# librspreload's fork support (RDMAV_FORK_SAFE=1 both ends): the TCP
	# connection is accepted, the server forks, and the child and the client
	# turn it into an rsocket on their first read/write.
	next_port
	b0=$(rx_packets)
	# (the parent listens with a TCP socket)
	PAIR_WAIT=wait_listen \
		pair "librspreload with fork support: a forked child echoes 1 MB ($tag)" "$NS_A" "$CNS" \
		$PORT -- \
		env RDMAV_FORK_SAFE=1 LD_PRELOAD="$PRELOAD" "$ECHO" fork-server "$SRV" $PORT -- \
		env RDMAV_FORK_SAFE=1 LD_PRELOAD="$PRELOAD" "$ECHO" client "$SRV" $PORT 1000000
	b1=$(rx_packets)
	tap_check "... over rsockets: xrxed in A received $((b1 - b0)) RoCEv2 packets ($tag)" \
		test $((b1 - b0)) -ge $((1000000 / 4096))
	if command -v iperf3 >/dev/null; then
		next_port
		desc="librspreload: iperf3 for 2 s ($tag)"
		pair "$desc" "$NS_A" "$CNS" $PORT -- \
			env LD_PRELOAD="$PRELOAD" iperf3 -s -1 -p $PORT -- \
			env LD_PRELOAD="$PRELOAD" iperf3 -c "$SRV" -p $PORT -t 2 &&
			tap_check "iperf3's receiver got data through rsockets ($tag)" \
				grep -qE 'MBytes|GBytes|KBytes.*receiver' \
				"$TMP/$(echo "$desc" | tr -c 'A-Za-z0-9_\n' '_').client"
		grep -h 'receiver' "$TMP/$(echo "$desc" | tr -c 'A-Za-z0-9_\n' '_').client" \
			2>/dev/null | sed 's/^/#   /'
	else
		tap_skip "librspreload: iperf3 ($tag)" "iperf3 is not installed"
	fi
done

# rstream as a user runs it: no -S/-C, its own sweep of 64 B ... 1 MiB with
# up to 100 000 transfers per size (~800 MB; 30-60 s here, minutes under
# load: ten times the usual timeout), blocking, across.
# It does not verify data (the rows above do); its table goes to the log.
next_port
desc="rstream's default sweep (no -S/-C), blocking, IPv4 across"
T=$((T * 10)) pair "$desc" "$NS_A" "$NS_B" $PORT -- \
	rstream -b "$IP4_A" -p $PORT -T b -- \
	rstream -s "$IP4_A" -p $PORT -T b &&
	sed 's/^/#   /' "$TMP/$(echo "$desc" | tr -c 'A-Za-z0-9_\n' '_').client"

# IPv6 once, across
next_port
pair "rstream -T b: 100 x 64 KiB each way, verified (IPv6 across)" "$NS_A" "$NS_B" $PORT -- \
	rstream -b "$IP6_A" -p $PORT -S 65536 -C 100 -T b -T v -- \
	rstream -s "$IP6_A" -p $PORT -S 65536 -C 100 -T b -T v

# --- a hostile peer -------------------------------------------------------------
# MODE:CLIENT_CALL EXPECTED_ERRNO
for spec in bad-version:connect:111 short-data:connect:111 no-credits:connect:111 \
	no-buffer:connect:111 overrun:recv:104 empty-data:recv:104 reserved-op:recv:104 \
	bad-ctrl:recv:104 bad-iomap:recv:104 send:recv:104 flood:trickle:104 \
	vanish:recv:104 vanish:send:104; do
	IFS=: read -r mode call want <<<"$spec"
	next_port
	desc="hostile peer '$mode': the client's $call fails with errno $want"
	log=$TMP/$(echo "$desc" | tr -c 'A-Za-z0-9_\n' '_')
	ns_exec "$NS_A" timeout 90 "${RUN[@]}" "$HOSTILE" server "$mode" "$IP4_A" $PORT \
		>"$log.server" 2>&1 &
	spid=$!
	if ! wait_cm_listen "$NS_A" $PORT; then
		tap_fail "$desc (the hostile server did not start)"
		sed 's/^/#   /' "$log.server"
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
		continue
	fi
	ns_exec "$NS_B" timeout 90 "${RUN[@]}" "$HOSTILE" client "$IP4_A" $PORT "$call" \
		>"$log.client" 2>&1
	crc=$?
	wait $spid 2>/dev/null
	if [ $crc -eq 0 ] && grep -q "errno $want " "$log.client"; then
		tap_ok "$desc"
		grep -h 'librdmacm\|errno' "$log.client" | sed 's/^/#   /'
	else
		tap_fail "$desc (client exit $crc)"
		sed 's/^/#   client: /' "$log.client"
		sed 's/^/#   server: /' "$log.server" | tail -n 5
	fi
done

# The other way round: an rstream server gets three requests with broken
# connection data (rs_hostile connect), rejects each, and then serves an
# honest client as if nothing had happened.
next_port
log=$TMP/hostile_requests
ns_exec "$NS_A" timeout "$T" "${RUN[@]}" rstream -b "$IP4_A" -p $PORT -S 4096 -C 200 -T b -T v \
	>"$log.server" 2>&1 &
spid=$!
if wait_cm_listen "$NS_A" $PORT; then
	for mode in bad-version short-data no-credits; do
		tap_check "rstream's raccept rejects a request whose connection data is '$mode'" \
			ns_exec "$NS_B" timeout 30 "${RUN[@]}" "$HOSTILE" connect $mode "$IP4_A" $PORT
	done
	tap_check "... and then serves an honest rstream client: 200 x 4 KiB, verified" \
		ns_exec "$NS_B" timeout "$T" "${RUN[@]}" rstream -s "$IP4_A" -p $PORT -S 4096 -C 200 \
		-T b -T v
	wait $spid
	tap_check "... and exits 0" test $? -eq 0
else
	tap_fail "rstream server for the broken requests started"
	kill $spid 2>/dev/null
fi
sed 's/^/#   server: /' "$log.server" | grep librdmacm

# Last, as it kills a daemon: a peer whose host vanishes without a word (its
# xrxed killed with SIGKILL: no DREQ, no DISCONNECT, its frames dropped) is
# noticed by the client's keepalive (SO_KEEPALIVE, TCP_KEEPIDLE 1 s): the
# 0-byte WRITE exhausts its retries and the blocked rrecv fails.
next_port
desc="a peer whose host vanishes: keepalive ends the client's blocked rrecv with ECONNRESET"
log=$TMP/keepalive
ns_exec "$NS_A" timeout 90 "${RUN[@]}" "$HOSTILE" server silent "$IP4_A" $PORT >"$log.server" 2>&1 &
spid=$!
if wait_cm_listen "$NS_A" $PORT; then
	ns_exec "$NS_B" timeout 90 "${RUN[@]}" "$HOSTILE" client "$IP4_A" $PORT keepalive \
		>"$log.client" 2>&1 &
	cpid=$!
	for _ in $(seq 100); do
		grep -q 'keepalive on' "$log.client" && break
		sleep 0.1
	done
	sleep 2 # connected, in rrecv, a keepalive or two acknowledged
	kill -9 "$PID_A" 2>/dev/null
	wait "$cpid"
	crc=$?
	if [ $crc -eq 0 ] && grep -q "errno 104 " "$log.client"; then
		tap_ok "$desc"
		grep -h 'librdmacm\|errno' "$log.client" | sed 's/^/#   /'
	else
		tap_fail "$desc (client exit $crc)"
		sed 's/^/#   client: /' "$log.client"
	fi
else
	tap_fail "$desc (the silent server did not start)"
fi
kill $spid 2>/dev/null
wait $spid 2>/dev/null
exit "$TAP_FAILED"
