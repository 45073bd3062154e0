# shellcheck shell=bash
# rsockets interop (issue 13), run in kernel_rxe.sh's guest boot: xrxe's
# rsockets (librdmacm.so.1 on the host's xrxed) against rdma-core's own
# rsockets on the guest's kernel Soft-RoCE (rxe0, with rdma_ucm: Debian's
# stock librdmacm), over the suite's bridge at MTU 1500.
#
# Both directions (xrxe server / rxe client, then rxe server / xrxe client):
#   rstream -T b -T v   64 KiB and 1 MiB messages, verified by both ends
#   rcopy               a 3 MB file, compared byte for byte
# The rsocket wire protocol is rdma-core's (docs/rsockets.md), so these rows
# are the proof that ours is the same.
#
# Uses kernel_rxe.sh's NS_EP, IF_EP, HOST4, GUEST4, SHARE, TMP, T, RUN, PORT,
# guest_submit, guest_wait, side, report and /share/lib.sh's
# ready_when_cm_listening.
#
#   source tests/interop/lib/rsockets_rows.sh; rsockets_rows

# rs_wait_cm_host PORT PID: an xrxe rdma_cm listener on PORT (xrxe cm
# --json); fails once PID is gone.
rs_wait_cm_host() {
	local i
	for i in $(seq 400); do
		"$XRXE_ROOT/$BUILD/bin/xrxe" cm "$IF_EP" --json 2>/dev/null |
			grep -qE "\"state\": \"listen\", [^}]*:$1\"" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# rs_both DESC SERVER CLIENT [CHECK GUEST_CHECK]: SERVER/CLIENT with @SADDR@
# (the server's address), @PORT@, @SRC@ (file.src as the client sees it) and
# @DST@ (file.dst as the server sees it: $SHARE/file.dst on the host, the
# guest's /tmp/file.dst — rcopy's server mmaps it, which the 9p share does
# not allow); first xrxe serves and the guest connects, then the other way
# round. CHECK (on the host) runs after the first, GUEST_CHECK (in the guest)
# after the second.
rs_both() {
	local desc="rsockets $1" srv=$2 cli=$3 check=${4:-} gcheck=${5:-} log
	[[ -n ${INTEROP_ONLY:-} && ! $desc =~ $INTEROP_ONLY ]] && return 0
	ROWS=$((ROWS + 1))
	log=$TMP/$(echo "$desc" | tr -c 'A-Za-z0-9_\n' '_')
	side "$desc (xrxe server, rxe client)" rs_xrxe_serves "$log.rxe-client" "$log.xrxe-server"
	side "$desc (rxe server, xrxe client)" rs_rxe_serves "$log.xrxe-client" "$log.rxe-server"
}

# xrxe serves, the guest connects (rs_both's locals).
rs_xrxe_serves() {
	local s c rc spid
	PORT=$((PORT + 1))
	s=${srv//@SADDR@/$HOST4} c=${cli//@SADDR@/$HOST4}
	s=${s//@PORT@/$PORT} c=${c//@PORT@/$PORT}
	c=${c//@SRC@//share/file.src} c=${c//@DST@/$SHARE/file.dst}
	rm -f "$SHARE/file.dst"
	# shellcheck disable=SC2086 # command lines
	ip netns exec "$NS_EP" timeout "$T" "${RUN[@]}" $s >"$log.xrxe-server" 2>&1 &
	spid=$!
	if ! rs_wait_cm_host $PORT $spid; then
		rc=1
		echo "server did not listen" >>"$log.xrxe-server"
	else
		guest_submit "timeout $T $c"
		guest_wait "$JOB"
		rc=$?
		cp "$SHARE/jobs/$JOB.out" "$log.rxe-client" 2>/dev/null
	fi
	if [[ $s == rcopy* ]]; then
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
	else
		wait $spid || rc=1
	fi
	[ $rc = 0 ] && [ -n "$check" ] && { eval "$check" >>"$log.rxe-client" 2>&1 || rc=1; }
	return $rc
}

# The guest serves, xrxe connects.
rs_rxe_serves() {
	local s c rc job i=0
	PORT=$((PORT + 1))
	s=${srv//@SADDR@/$GUEST4} c=${cli//@SADDR@/$GUEST4}
	s=${s//@PORT@/$PORT} c=${c//@PORT@/$PORT}
	c=${c//@SRC@/$SHARE/file.src} c=${c//@DST@//tmp/file.dst}
	guest_submit "rm -f /tmp/file.dst; timeout $T $s & pid=\$!; echo \$pid >/share/jobs/\$JOB.pid; ready_when_cm_listening $PORT \$JOB \$pid; wait \$pid"
	job=$JOB
	while [ ! -e "$SHARE/jobs/$job.ready" ] && [ ! -e "$SHARE/jobs/$job.rc" ] && [ $i -lt $((T * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ ! -e "$SHARE/jobs/$job.ready" ]; then
		rc=1
		echo "guest server did not listen" >"$log.xrxe-client"
	else
		# shellcheck disable=SC2086 # command line
		ip netns exec "$NS_EP" timeout "$T" "${RUN[@]}" $c >"$log.xrxe-client" 2>&1
		rc=$?
	fi
	if [[ $s == rcopy* ]]; then
		guest_submit "kill \$(cat /share/jobs/$job.pid)"
		guest_wait "$JOB" 10
		guest_wait "$job" 10
	else
		# a client that gave up leaves the server waiting: end it now
		[ $rc = 0 ] || guest_run "kill \$(cat /share/jobs/$job.pid)" >/dev/null 2>&1
		guest_wait "$job" || rc=1
	fi
	cp "$SHARE/jobs/$job.out" "$log.rxe-server" 2>/dev/null
	if [ $rc = 0 ] && [ -n "$gcheck" ]; then
		guest_submit "$gcheck"
		guest_wait "$JOB" 30 || rc=1
		cat "$SHARE/jobs/$JOB.out" >>"$log.xrxe-client" 2>/dev/null
	fi
	return $rc
}

rsockets_rows() {
	local p
	for p in rstream rcopy; do
		command -v "$p" >/dev/null || { tap_fail "rsockets: $p is installed (rdmacm-utils; make deps)"; return 1; }
	done
	[ -e "$XRXE_ROOT/$BUILD/lib/xrxe/librdmacm.so.1" ] ||
		{ tap_fail "rsockets: $BUILD/lib/xrxe/librdmacm.so.1 is built"; return 1; }
	[ -s "$SHARE/file.src" ] || head -c 3000000 /dev/urandom >"$SHARE/file.src"
	rs_both "rstream -T b -T v: 50 x 64 KiB each way" \
		"rstream -b @SADDR@ -p @PORT@ -S 65536 -C 50 -T b -T v" \
		"rstream -s @SADDR@ -p @PORT@ -S 65536 -C 50 -T b -T v"
	rs_both "rstream -T b -T v: 4 x 1 MiB each way" \
		"rstream -b @SADDR@ -p @PORT@ -S 1048576 -C 4 -T b -T v" \
		"rstream -s @SADDR@ -p @PORT@ -S 1048576 -C 4 -T b -T v"
	# shellcheck disable=SC2016 # the checks are evaluated later, by rs_both
	rs_both "rcopy: a 3 MB file" \
		"rcopy -p @PORT@" \
		"rcopy @SRC@ @SADDR@:@DST@ -p @PORT@" \
		'cmp "$SHARE/file.src" "$SHARE/file.dst"' \
		'cmp /share/file.src /tmp/file.dst'
}
