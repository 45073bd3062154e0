#!/usr/bin/env bash
# rsockets interop (issue 13): xrxe's rsockets (librdmacm.so.1 on xrxed)
# against rdma-core's own rsockets on the Linux kernel's Soft-RoCE (rdma_rxe
# with rdma_ucm, Debian's stock kernel under QEMU/TCG; tests/interop/lib/
# rxe_vm.sh), joined by a bridge as in kernel_rxe.sh:
#
#   [guest: eth0, rxe0, stock librdmacm] -- tap --[ns br: br0]-- veth --[ns ep: xrxed]
#
# Both directions (xrxe server / rxe client, then rxe server / xrxe client):
#   rstream -T b -T v   64 KiB and 1 MiB messages, verified by both ends
#   rcopy               a 3 MB file, compared byte for byte
# The rsocket wire protocol is rdma-core's (docs/rsockets.md), so these rows
# are the proof that ours is the same. Environment: INTEROP_TIMEOUT (s, per
# command, default 60).
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "rsockets interop with kernel rxe"
source tests/lib/netns.sh
source tests/interop/lib/rxe_vm.sh

XRXED=$PWD/$BUILD/bin/xrxed
XRXE=$PWD/$BUILD/bin/xrxe
RUN=("$XRXE" run --)
T=${INTEROP_TIMEOUT:-60}

why=$(rxe_vm_unavailable)
if [ -n "$why" ]; then
	tap_skip "rsockets interop with kernel rxe" "QEMU cannot run here: $why"
	exit 0
fi
for f in "$XRXED" "$PWD/$BUILD/lib/xrxe/librdmacm.so.1" "$PWD/$BUILD/lib/xrxe/libibverbs.so.1"; do
	[ -e "$f" ] || { tap_fail "$f is built"; exit 1; }
done
for p in rstream rcopy; do
	command -v "$p" >/dev/null || { tap_fail "$p is installed (rdmacm-utils; make deps)"; exit 1; }
done
if ! rxe_vm_prepare >/dev/null; then
	tap_fail "guest kernel and initrd prepared in $RXE_VM_CACHE"
	exit 1
fi

# --- Topology (as kernel_rxe.sh) ------------------------------------------------
netns_tmpdir TMP
SHARE=$TMP/share
mkdir -p "$SHARE/jobs"
chmod 755 "$TMP"
NS_BR=$NETNS_PREFIX-rbr NS_EP=$NETNS_PREFIX-rep
IF_EP=xt$$-re IF_BRV=xt$$-rb TAP=xt$$-rt
HOST4=10.77.252.2 GUEST4=10.77.252.1 GUEST6=fd77:0:0:252::1
GUEST_MAC=52:54:00:77:fc:01

if ! { ip netns add "$NS_BR" && NETNS_CREATED+=("$NS_BR") &&
	ip netns add "$NS_EP" && NETNS_CREATED+=("$NS_EP") &&
	ip -n "$NS_BR" link add br0 type bridge && ip -n "$NS_BR" link set br0 up &&
	ip -n "$NS_BR" link set lo up && ip -n "$NS_EP" link set lo up &&
	ip link add "$IF_EP" netns "$NS_EP" type veth peer name "$IF_BRV" netns "$NS_BR" &&
	ip -n "$NS_BR" link set "$IF_BRV" master br0 up &&
	ip -n "$NS_BR" tuntap add dev "$TAP" mode tap &&
	ip -n "$NS_BR" link set "$TAP" master br0 up &&
	ip -n "$NS_EP" addr add "$HOST4/24" dev "$IF_EP" &&
	ip netns exec "$NS_EP" tc qdisc replace dev "$IF_EP" root pfifo &&
	ip -n "$NS_EP" link set "$IF_EP" up; }; then
	tap_fail "bridge, veth and tap set up"
	exit 1
fi

# --- The guest -------------------------------------------------------------------
cp tests/interop/lib/guest_init.sh "$SHARE/init.sh"
printf 'GUEST_IP4=%s\nGUEST_IP6=%s\nGUEST_MTU=1500\n' "$GUEST4" "$GUEST6" >"$SHARE/env"
cat >"$SHARE/lib.sh" <<'EOF'
# ready_when_cm_listening PORT JOB PID: an rdma_cm listener in the kernel
# (rsockets open no TCP socket); gives up when PID is gone.
ready_when_cm_listening() {
	local i
	for i in $(seq 600); do
		rdma res show cm_id src-port "$1" 2>/dev/null | grep -q 'state LISTEN' &&
			{ touch "/share/jobs/$2.ready"; return 0; }
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
EOF
head -c 3000000 /dev/urandom >"$SHARE/file.src"
rxe_vm_boot "$SHARE" "$TAP" "$GUEST_MAC" "$NS_BR"
QEMU_PID=$RXE_VM_PID
netns_at_exit "kill $QEMU_PID; wait $QEMU_PID"
netns_at_exit "touch '$SHARE/jobs/stop'"

ns_bg "$NS_EP" sh -c "exec \"$XRXED\" \"$IF_EP\" >>\"$TMP/xrxed.log\" 2>&1"
XRXED_PID=$NETNS_LAST_PID
netns_at_exit "kill $XRXED_PID; wait $XRXED_PID"
if ! netns_wait_file "/run/xrxe/$IF_EP.sock" 10; then
	tap_fail "xrxed started on $IF_EP"
	exit 1
fi

t=$SECONDS
while [ ! -e "$SHARE/guest.ready" ] && kill -0 "$QEMU_PID" 2>/dev/null && [ $((SECONDS - t)) -lt 180 ]; do
	sleep 0.2
done
if [ ! -e "$SHARE/guest.ready" ]; then
	tap_fail "kernel-rxe guest booted"
	tap_diag "$(tail -n 20 "$SHARE/guest.log" "$SHARE/qemu.log" 2>&1)"
	exit 1
fi
tap_ok "kernel-rxe guest booted, rxe0 on eth0 ($((SECONDS - t)) s)"

echo 0 >"$SHARE/jobs/.last"
guest_submit() {
	JOB=$(($(cat "$SHARE/jobs/.last") + 1))
	echo "$JOB" >"$SHARE/jobs/.last"
	printf 'source /share/lib.sh\nJOB=%s\n%s\n' "$JOB" "$1" >"$SHARE/jobs/.tmp"
	mv "$SHARE/jobs/.tmp" "$SHARE/jobs/$JOB.cmd"
}
guest_wait() { # N [TIMEOUT]: exit status of job N (124 if it did not end in time)
	local n=$1 lim=$((${2:-$((T + 30))} * 10)) i=0
	while [ ! -e "$SHARE/jobs/$n.rc" ]; do
		i=$((i + 1))
		[ $i -gt "$lim" ] && return 124
		sleep 0.1
	done
	return "$(cat "$SHARE/jobs/$n.rc")"
}
# an xrxe rdma_cm listener on PORT (xrxe cm --json); fails once PID is gone
wait_cm_host() { # PORT PID
	local i
	for i in $(seq 400); do
		"$XRXE" cm "$IF_EP" --json 2>/dev/null | grep -qE "\"state\": \"listen\", [^}]*:$1\"" &&
			return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

if ! ip netns exec "$NS_EP" ping -c 3 -W 2 -q "$GUEST4" >/dev/null 2>&1; then
	tap_fail "the guest answers ping"
	exit 1
fi

PORT=18900
# both DESC SERVER CLIENT [CHECK GUEST_CHECK]: SERVER/CLIENT with @SADDR@
# (the server's address), @PORT@, @SRC@ (file.src as the client sees it) and
# @DST@ (file.dst as the server sees it: $SHARE/file.dst on the host, the
# guest's /tmp/file.dst — rcopy's server mmaps it, which the 9p share does
# not allow); first xrxe serves and the guest connects, then the other way
# round. CHECK (on the host) runs after the first, GUEST_CHECK (in the guest)
# after the second.
both() {
	local desc=$1 srv=$2 cli=$3 check=${4:-} gcheck=${5:-} log rc spid job
	log=$TMP/$(echo "$desc" | tr -c 'A-Za-z0-9_\n' '_')

	PORT=$((PORT + 1))
	local s=${srv//@SADDR@/$HOST4} c=${cli//@SADDR@/$HOST4}
	s=${s//@PORT@/$PORT} c=${c//@PORT@/$PORT}
	c=${c//@SRC@//share/file.src} c=${c//@DST@/$SHARE/file.dst}
	# shellcheck disable=SC2086 # command lines
	ip netns exec "$NS_EP" timeout "$T" "${RUN[@]}" $s >"$log.xrxe-server" 2>&1 &
	spid=$!
	if ! wait_cm_host $PORT $spid; then
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
	report "$desc (xrxe server, rxe client)" $rc "$log.rxe-client" "$log.xrxe-server"

	PORT=$((PORT + 1))
	s=${srv//@SADDR@/$GUEST4} c=${cli//@SADDR@/$GUEST4}
	s=${s//@PORT@/$PORT} c=${c//@PORT@/$PORT}
	c=${c//@SRC@/$SHARE/file.src} c=${c//@DST@//tmp/file.dst}
	guest_submit "timeout $T $s & pid=\$!; echo \$pid >/share/jobs/\$JOB.pid; ready_when_cm_listening $PORT \$JOB \$pid; wait \$pid"
	job=$JOB
	local i=0
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
		guest_wait $job 10
	else
		guest_wait $job || rc=1
	fi
	cp "$SHARE/jobs/$job.out" "$log.rxe-server" 2>/dev/null
	if [ $rc = 0 ] && [ -n "$gcheck" ]; then
		guest_submit "$gcheck"
		guest_wait "$JOB" 30 || rc=1
		cat "$SHARE/jobs/$JOB.out" >>"$log.xrxe-client" 2>/dev/null
	fi
	report "$desc (rxe server, xrxe client)" $rc "$log.xrxe-client" "$log.rxe-server"
}

report() { # DESC RC LOGS...
	local desc=$1 rc=$2 f
	shift 2
	if [ "$rc" = 0 ]; then
		tap_ok "$desc"
		grep -hE '^custom|bytes in' "$@" 2>/dev/null | head -n 2 | sed 's/^/#   /'
		return
	fi
	tap_fail "$desc"
	for f in "$@"; do
		sed "s|^|#   ${f##*/}: |" "$f" 2>/dev/null | tail -n 12
	done
}

both "rstream -T b -T v: 50 x 64 KiB each way" \
	"rstream -b @SADDR@ -p @PORT@ -S 65536 -C 50 -T b -T v" \
	"rstream -s @SADDR@ -p @PORT@ -S 65536 -C 50 -T b -T v"
both "rstream -T b -T v: 4 x 1 MiB each way" \
	"rstream -b @SADDR@ -p @PORT@ -S 1048576 -C 4 -T b -T v" \
	"rstream -s @SADDR@ -p @PORT@ -S 1048576 -C 4 -T b -T v"
rm -f "$SHARE/file.dst"
# shellcheck disable=SC2016 # the checks are evaluated later, by both()
both "rcopy: a 3 MB file" \
	"rcopy -p @PORT@" \
	"rcopy @SRC@ @SADDR@:@DST@ -p @PORT@" \
	'cmp "$SHARE/file.src" "$SHARE/file.dst"' \
	'cmp /share/file.src /tmp/file.dst'
