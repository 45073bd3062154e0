#!/usr/bin/env bash
# Interop on the wire with the reference implementation (issue 5): Linux
# kernel Soft-RoCE (rdma_rxe, Debian's stock kernel under QEMU/TCG) against
# xrxed in a namespace, joined by a bridge:
#
#   [guest: eth0, rxe0] -- tap --[ns br: br0]-- veth --[ns ep: xrxed, xrxe_IF]
#
# One guest boot drives the whole matrix (tests/interop/lib/guest_init.sh
# runs the jobs this script drops into the shared directory). Every program
# runs twice, xrxe as server then as client, over:
#   path MTU 1024 (links at MTU 1500) and 4096 (MTU 9000), IPv4 and IPv6 GIDs;
#   ibv_{rc,uc,ud,srq}_pingpong, perftest send/write/read/atomic bw and
#   write/read lat, tests/verbs/rc_integrity (every byte checked both ends);
#   librdmacm programs against the kernel's rdma_cm (IPv4 at path MTU 1024,
#   IPv6 at 4096): rping -V, ucmatose, udaddy (SIDR), a rejected connect,
#   and on IPv4 cmtime and ib_send_bw / ib_write_bw -R;
# then the transfers again with 1% loss each way (netem in the guest), and
# checks of the clean runs on a bridge capture: tshark decodes every RoCEv2
# frame as InfiniBand with nothing malformed and no error, roce_pcap_check
# verifies every ICRC, no peer skips a PSN, xrxe's IPv6 frames carry a UDP
# checksum, every CM MAD decodes in Wireshark's CM dissector and every CM
# exchange completes; rxe's hardware counters show no sequence error (unless
# the link itself dropped frames) and no retry exhausted. Then, in the same
# boot: xrxed inside the guest against the host's xrxe (on eth0) and against
# the guest's own rxe (a veth pair in the guest), tests/net/xdp_coexist.sh
# (it needs freplace programs, which the guest's kernel has), rsockets
# against rdma-core's (tests/interop/lib/rsockets_rows.sh), and the loss
# runs. docs/interop.md has the matrix, the reasons and the timings.
#
# Environment (development): INTEROP_QUICK=1 runs one configuration;
# INTEROP_ONLY=REGEX only the rows whose description matches (with its
# configuration: 'guest xrxe' selects the guest-xrxed rows);
# INTEROP_TRACE=1 prints rxe0's non-zero counters after every row;
# INTEROP_KILL_NET=REGEX kills the guest's network in the first matching
# side of a row (to try the recovery: a fresh guest, the side run again);
# INTEROP_KEEP=DIR keeps logs and captures; INTEROP_GUEST_SETUP='cmds' runs
# in the guest before the clean runs; INTEROP_TIMEOUT (s, per command,
# default 60).
# shellcheck disable=SC2317 # the sides of a row run through side() and "$fn"
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
export XRXE_ROOT=$PWD BUILD=${BUILD:-build}
source tests/lib/tap.sh
tap_require_root "interop with kernel rxe"
source tests/lib/netns.sh
source tests/lib/connect_delay.sh
source tests/interop/lib/rxe_vm.sh
source tests/interop/lib/rsockets_rows.sh

XRXED=$PWD/$BUILD/bin/xrxed
RUN=("$PWD/$BUILD/bin/xrxe" run --)
INTEGRITY=$PWD/$BUILD/tests/verbs/rc_integrity
PCAPCHECK=$PWD/$BUILD/tests/net/roce_pcap_check
T=${INTEROP_TIMEOUT:-60}
T0=$SECONDS

why=$(rxe_vm_unavailable)
if [ -n "$why" ]; then
	tap_skip "interop with kernel rxe" "QEMU cannot run here: $why"
	exit 0
fi
for f in "$XRXED" "$INTEGRITY" "$PCAPCHECK" "$PWD/$BUILD/lib/xrxe/libibverbs.so.1"; do
	[ -x "$f" ] || { tap_fail "$f is built (make tests)"; exit 1; }
done
for p in ibv_rc_pingpong ib_write_bw tshark dumpcap; do
	command -v "$p" >/dev/null || { tap_fail "$p is installed (make deps)"; exit 1; }
done
if ! rxe_vm_prepare >/dev/null; then
	tap_fail "guest kernel and initrd prepared in $RXE_VM_CACHE"
	exit 1
fi

# --- Topology ---------------------------------------------------------------
netns_tmpdir TMP
SHARE=$TMP/share
mkdir -p "$SHARE/jobs"
chmod 755 "$TMP"
NS_BR=$NETNS_PREFIX-ibr NS_EP=$NETNS_PREFIX-iep
IF_EP=xt$$-ie IF_BRV=xt$$-ib TAP=xt$$-it
HOST4=10.77.251.2 GUEST4=10.77.251.1 HOST6=fd77:0:0:251::2 GUEST6=fd77:0:0:251::1
GUEST_MAC=52:54:00:77:fb:01
DEV=xrxe_$IF_EP

topology() {
	ip netns add "$NS_BR" && NETNS_CREATED+=("$NS_BR") &&
		ip netns add "$NS_EP" && NETNS_CREATED+=("$NS_EP") &&
		ip -n "$NS_BR" link add br0 type bridge &&
		ip -n "$NS_BR" link set br0 up &&
		ip -n "$NS_BR" link set lo up && ip -n "$NS_EP" link set lo up &&
		ip link add "$IF_EP" netns "$NS_EP" type veth peer name "$IF_BRV" netns "$NS_BR" &&
		ip -n "$NS_BR" link set "$IF_BRV" master br0 up &&
		ip -n "$NS_BR" tuntap add dev "$TAP" mode tap &&
		ip -n "$NS_BR" link set "$TAP" master br0 up &&
		ip -n "$NS_EP" addr add "$HOST4/24" dev "$IF_EP" &&
		ip -n "$NS_EP" addr add "$HOST6/64" dev "$IF_EP" nodad &&
		# AF_XDP transmit completes frames a noqueue veth dropped (docs/facts/afxdp.md pitfall 6).
		ip netns exec "$NS_EP" tc qdisc replace dev "$IF_EP" root pfifo &&
		ip -n "$NS_EP" link set "$IF_EP" up
}

# set_mtu MTU: every host-side link (the guest sets its own).
set_mtu() {
	ip -n "$NS_EP" link set "$IF_EP" mtu "$1" &&
		ip -n "$NS_BR" link set "$IF_BRV" mtu "$1" &&
		ip -n "$NS_BR" link set "$TAP" mtu "$1" &&
		ip -n "$NS_BR" link set br0 mtu "$1"
}

start_xrxed() {
	rm -f "/run/xrxe/$IF_EP.sock"
	ns_bg "$NS_EP" sh -c "exec \"$XRXED\" \"$IF_EP\" >>\"$TMP/xrxed.log\" 2>&1"
	XRXED_PID=$NETNS_LAST_PID
	netns_wait_file "/run/xrxe/$IF_EP.sock" 10
}

stop_xrxed() {
	kill "$XRXED_PID" 2>/dev/null
	wait "$XRXED_PID" 2>/dev/null
}

if ! topology || ! set_mtu 1500; then
	tap_fail "bridge, veth and tap set up"
	exit 1
fi

# --- The guest ----------------------------------------------------------------
cp tests/interop/lib/guest_init.sh "$SHARE/init.sh"
# Our own test programs run in the guest from the share: the guest sees the
# host's root filesystem, but mounts its own tmpfs on /tmp (and /run), where a
# checkout (CI's clean clone, a git worktree) may live.
mkdir -p "$SHARE/bin" && cp "$INTEGRITY" "$SHARE/bin/"
# guest_env MTU: the guest's settings (guest_init.sh); XRXE_SRC: the checkout,
# which the guest binds at /run/xrxe-src for the guest-xrxed rows.
guest_env() {
	printf 'GUEST_IP4=%s\nGUEST_IP6=%s\nGUEST_MTU=%s\nXRXE_SRC=%s\n' \
		"$GUEST4" "$GUEST6" "$1" "$PWD" >"$SHARE/env"
}
guest_env 1500
# A helper the jobs source: wait until a TCP port listens, then say so.
# The wait forks nothing per turn: under TCG each process costs the guest's
# one CPU 0.2 s or more (`ss` up to 1 s), taken from the server it waits
# for. tcp_listening reads /proc/net/tcp{,6} in bash (state 0A: LISTEN);
# idle is a timed read on the FIFO guest_init.sh made.
cat >"$SHARE/lib.sh" <<'EOF'
if exec 8<>/run/idle; then idle() { read -r -t 0.1 -u 8 _; }; else idle() { sleep 0.1; }; fi
tcp_listening() { # PORT
	local hex f l st
	printf -v hex ':%04X' "$1"
	for f in /proc/net/tcp /proc/net/tcp6; do
		while read -r _ l _ st _; do
			[ "$st" = 0A ] && [ "${l##*:}" = "${hex#:}" ] && return 0
		done <"$f"
	done
	return 1
}
ready_when_listening() { # PORT JOB
	local i
	for ((i = 0; i < 600; i++)); do
		tcp_listening "$1" && { touch "/share/jobs/$2.ready"; return 0; }
		idle
	done
	return 1
}
# The same for an rdma_cm listener in the kernel (no TCP socket): rdma's
# resource tracking lists it (a wildcard one as 0.0.0.0:PORT). Gives up
# when PID (the server) is gone.
ready_when_cm_listening() { # PORT JOB PID
	local i
	for ((i = 0; i < 600; i++)); do
		rdma res show cm_id src-port "$1" 2>/dev/null | grep -q 'state LISTEN' &&
			{ touch "/share/jobs/$2.ready"; return 0; }
		kill -0 "$3" 2>/dev/null || return 1
		idle
	done
	return 1
}
EOF
# guest_boot: start the guest (its PID 1 is init.sh) and wait until it
# says rxe0 is up. GUEST_BOOT_S: how long that took. The bound is for a hung
# guest only: a boot takes 20 s on an idle host, 57-63 s at load 12-15, and
# two guests booting side by side at load 14 both took over 120 s.
guest_boot() {
	rm -f "$SHARE/guest.ready"
	rxe_vm_boot "$SHARE" "$TAP" "$GUEST_MAC" "$NS_BR"
	QEMU_PID=$RXE_VM_PID
	local t=$SECONDS
	while [ ! -e "$SHARE/guest.ready" ] && kill -0 "$QEMU_PID" 2>/dev/null && [ $((SECONDS - t)) -lt 300 ]; do
		sleep 0.2
	done
	GUEST_BOOT_S=$((SECONDS - t))
	[ -e "$SHARE/guest.ready" ]
}
# (single quotes: the guest of the moment, after a reboot too)
# shellcheck disable=SC2016
netns_at_exit 'kill "$QEMU_PID"; wait "$QEMU_PID"'
netns_at_exit "touch '$SHARE/jobs/stop'"

if ! start_xrxed; then
	tap_fail "xrxed started on $IF_EP"
	exit 1
fi
if ! guest_boot; then
	tap_fail "kernel-rxe guest booted"
	tap_diag "$(grep -B 20 -m1 -i 'panic' "$SHARE/console.log" 2>&1 | head -n 30)"
	tap_diag "$(tail -n 20 "$SHARE/guest.log" "$SHARE/qemu.log" 2>&1)"
	exit 1
fi
tap_ok "kernel-rxe guest booted, rxe0 on eth0 ($GUEST_BOOT_S s)"

# --- Guest jobs -----------------------------------------------------------------
# guest_submit SCRIPT: queue a job in the guest; its number in JOB. The
# counter lives in a file: guest_run is often called inside $(...).
echo 0 >"$SHARE/jobs/.last"
guest_submit() {
	JOB=$(($(cat "$SHARE/jobs/.last") + 1))
	echo "$JOB" >"$SHARE/jobs/.last"
	printf 'source /share/lib.sh\nJOB=%s\n%s\n' "$JOB" "$1" >"$SHARE/jobs/.tmp"
	mv "$SHARE/jobs/.tmp" "$SHARE/jobs/$JOB.cmd"
}

# guest_wait N [TIMEOUT]: exit status of job N (124 if it did not end in time).
guest_wait() {
	local n=$1 lim=$((${2:-$((T + 30))} * 10)) i=0
	while [ ! -e "$SHARE/jobs/$n.rc" ]; do
		i=$((i + 1))
		[ $i -gt "$lim" ] && return 124
		sleep 0.1
	done
	return "$(cat "$SHARE/jobs/$n.rc")"
}

# guest_run SCRIPT: run a job to its end; its output on stdout.
guest_run() {
	guest_submit "$1"
	guest_wait "$JOB"
	local rc=$?
	cat "$SHARE/jobs/$JOB.out" 2>/dev/null
	return "$rc"
}

# wait_listen_host PORT PID: until PORT listens in the endpoint namespace;
# fails at once if PID (the server) has exited.
wait_listen_host() {
	local i
	for i in $(seq 200); do
		ip netns exec "$NS_EP" ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# GID indices: link-local, IPv4-mapped and IPv6 GIDs sit at indices that
# depend on the order addresses appeared, so look them up on both sides.
gid_index() { # "ibv_devinfo -v output" ADDRESS
	awk -v a="$2, " '!/RoCE v1/ && index($0, a) && match($0, /GID\[ *[0-9]+\]/) {
		g = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", g); print g; exit }' <<<"$1"
}

# --- One row of the matrix ------------------------------------------------------
PORT=18700
# The guest's side of a row: kernel rxe's rxe0 by default; the guest-xrxed
# rows put xrxed's device there, run through `xrxe run` (GUEST_PRE).
GUEST_DEV=rxe0 GUEST_PRE="" HOST_NAME=xrxe GUEST_NAME=rxe
PASS=0 FAILED=0 ROWS=0

# report DESC RC LOGS...: the TAP line, and on failure the logs' tails.
report() {
	local desc=$1 rc=$2 f
	shift 2
	if [ "$rc" = 0 ]; then
		tap_ok "$desc"
		PASS=$((PASS + 1))
		grep -hE '^ *[0-9]+ +[0-9]+ |iters in|bytes in' "$@" 2>/dev/null | tail -n 2 | sed 's/^/#   /'
		return
	fi
	tap_fail "$desc"
	FAILED=$((FAILED + 1))
	for f in "$@"; do
		sed "s|^|#   ${f##*/}: |" "$f" 2>/dev/null | tail -n 12
	done
}

# fill TEMPLATE DEV GID BINDIR: the command line for one side (@BIN@: where
# our own test programs are on that side).
fill() {
	local c=${1//@DEV@/$2}
	c=${c//@GID@/$3}
	c=${c//@BIN@/$4}
	echo "${c//@PORT@/$PORT}"
}

# The guest's network after a failed row. Seen in a few runs (2026-11-29,
# 2026-12-01, clean-clone CI; docs/interop.md, "A dead guest network"): in
# the middle of a heavy row the guest's eth0 stopped transmitting -- not one
# frame more from its MAC, ARP unanswered, an eth0 bounce did not help --
# while the guest kept running jobs over 9p. So, after a failed row: ping
# the guest; if it does not answer, bounce its eth0 and look again; if it
# still does not answer, record what the guest's network stack says
# (link and queue counters, qdisc, interrupts, the kernel log), then boot a
# fresh guest (at most MAX_REBOOTS times a run) and run the failed side of
# the row once more on it: that run is the row's result, and the first one
# is shown. Without a fresh guest the remaining rows fail at once, saying
# why, instead of waiting out their timeouts.
GUEST_NET_DOWN=
REBOOTS=0 MAX_REBOOTS=2 REBOOTED_IN=""
GUEST_SETUP=""  # what the current phase set up in the guest (the loss runs' netem)
guest_net_ok() {
	ip netns exec "$NS_EP" ping -c 2 -W 1 -q "$GUEST4" >/dev/null 2>&1
}

# guest_net_diag: the guest's view of its dead network (it still runs jobs
# over 9p) and the tap's on the host.
guest_net_diag() {
	tap_diag "guest network state:"
	# shellcheck disable=SC2016 # expanded in the guest
	guest_run 'ip -s -d link show eth0; tc -s qdisc show dev eth0
		for q in /sys/class/net/eth0/queues/tx-*; do echo "$q: tx_timeout $(cat $q/tx_timeout 2>/dev/null) inflight $(cat $q/byte_queue_limits/inflight 2>/dev/null)"; done
		grep -i virtio /proc/interrupts; dmesg | tail -n 30' 2>&1 | head -n 80 | sed 's/^/#   guest: /'
	ip -n "$NS_BR" -s link show "$TAP" 2>&1 | sed 's/^/#   host tap: /'
}

# guest_reboot: a fresh guest in place of one whose network died: the old
# QEMU is killed, the job queue starts again at 1, the new guest comes up at
# the links' current MTU with what the phase set up (GUEST_SETUP), rxe's
# counters so far are kept (counters_rebase), and the GIDs looked up again.
guest_reboot() {
	[ "$REBOOTS" -lt "$MAX_REBOOTS" ] || return 1
	REBOOTS=$((REBOOTS + 1))
	counters_rebase before
	kill "$QEMU_PID" 2>/dev/null
	wait "$QEMU_PID" 2>/dev/null
	mv "$SHARE/console.log" "$SHARE/console.$REBOOTS.log" 2>/dev/null
	rm -rf "$SHARE/jobs" && mkdir -p "$SHARE/jobs" && echo 0 >"$SHARE/jobs/.last"
	guest_env "${CUR_MTU:-1500}"
	if ! guest_boot; then
		tap_diag "guest reboot $REBOOTS: the guest did not come up"
		return 1
	fi
	if [ -n "$GUEST_SETUP" ] && ! guest_run "$GUEST_SETUP" >/dev/null 2>&1; then
		tap_diag "guest reboot $REBOOTS: the phase's set-up failed in the new guest"
		return 1
	fi
	GUEST_GID=$(gid_index "$(guest_run "$GUEST_PRE ibv_devinfo -v -d $GUEST_DEV" 2>&1)" "$GUEST_WANT_GID")
	counters_rebase after
	local i
	for i in 1 2 3; do guest_net_ok && break; done
	if ! guest_net_ok || [ -z "$GUEST_GID" ]; then
		tap_diag "guest reboot $REBOOTS: the new guest does not answer (gid '$GUEST_GID')"
		return 1
	fi
	tap_diag "guest reboot $REBOOTS: a fresh guest is up in $GUEST_BOOT_S s"
	REBOOTED_IN="$REBOOTED_IN ${CFG%% 1% loss}"
}

# check_guest_net DESC: after DESC failed. 0: the guest's network works (the
# failure is the row's own); 2: it had died and a fresh guest is up; 1: it
# is down for good (GUEST_NET_DOWN; the remaining rows fail at once).
check_guest_net() {
	[ -n "$GUEST_NET_DOWN" ] && return 1
	guest_net_ok && return 0
	tap_diag "guest does not answer ping after '$1': bouncing its eth0"
	# (IPv6 addresses go with the link: put the guest's back)
	guest_run "ip link set eth0 down; sleep 1; ip link set eth0 up;
		ip -6 addr replace $GUEST6/64 dev eth0 nodad; sleep 2" >/dev/null 2>&1
	if guest_net_ok; then
		tap_diag "guest answers again after the eth0 bounce"
		return 0
	fi
	guest_net_diag
	guest_reboot && return 2
	GUEST_NET_DOWN=$1
	tap_diag "guest network still down: the remaining rows fail at once"
	tap_diag "$(tail -n 20 "$SHARE/console.log" 2>&1)"
	return 1
}

# side DESC FN LOG...: one side of a row: FN runs it (its status is the
# result), report says so with LOG's tails on failure. A failure whose
# cause was the guest's dead network (check_guest_net 2) runs FN once more
# on the fresh guest, and so does one whose logs say the retry counter ran
# out (a stalled TCG guest; a peer that refuses fails both tries).
side() {
	local desc=$1 fn=$2 t0=$SECONDS rc f
	shift 2
	if [ -n "$GUEST_NET_DOWN" ]; then
		tap_fail "$desc [not run: guest network down since '$GUEST_NET_DOWN']"
		FAILED=$((FAILED + 1))
		return
	fi
	# Development hook: the guest's network dies in this side (a netem that
	# drops everything it sends), once a run: INTEROP_KILL_NET=REGEX.
	if [[ -n ${INTEROP_KILL_NET:-} && $desc =~ $INTEROP_KILL_NET && $REBOOTS = 0 ]]; then
		guest_run "tc qdisc replace dev eth0 root netem loss 100%" >/dev/null 2>&1
	fi
	$fn
	rc=$?
	if [ "$rc" != 0 ]; then
		local why="" again="run again" net_dead=""
		check_guest_net "$desc"
		if [ $? = 2 ]; then
			why="while the guest's network was dead" again="run again on the fresh guest"
			net_dead=1
		elif grep -qs 'retry counter exceeded\|RETRY_EXC\|completion failed status 12' "$@"; then
			# (rping says "cq completion failed status 12": 12 is
			# IBV_WC_RETRY_EXC_ERR.) IBA's retry budget (7 Local
			# ACK Timeouts, ~0.5 s at perftest's and the
			# pingpongs' timeout 14) is shorter than
			# the pauses of a TCG guest on a busy host: one more try,
			# said here, so a guest that stalled is told from a peer
			# that refused (which fails both tries).
			why="with retry counter exceeded, at load average $(cut -d' ' -f1-3 /proc/loadavg)"
		fi
		if [ -n "$why" ]; then
			tap_diag "$desc: failed after $((SECONDS - t0)) s $why; its logs:"
			for f; do sed "s|^|#   ${f##*/}: |" "$f" 2>/dev/null | tail -n 6; done
			tap_diag "$desc: $again"
			t0=$SECONDS
			$fn
			rc=$?
			[ "$rc" = 0 ] || [ -z "$net_dead" ] || check_guest_net "$desc"
		fi
	fi
	report "$desc [$((SECONDS - t0)) s]" "$rc" "$@"
}

# row KIND DESC COMMAND...: COMMAND with @DEV@ and @GID@ (the local device
# and GID index), @BIN@ and @PORT@, run once with xrxe as server and the guest as
# client, then the other way round. The out-of-band TCP exchange always uses
# IPv4; the GID index alone picks the RoCE address family.
row() {
	local desc=$2 # (KIND: for the reader)
	shift 2
	[[ -n ${INTEROP_ONLY:-} && ! "$CFG: $desc" =~ $INTEROP_ONLY ]] && return 0
	ROWS=$((ROWS + 1))
	local tmpl="$*" log
	log=$TMP/$(echo "$desc" | tr -c 'A-Za-z0-9_\n' '_')
	side "$CFG: $desc ($HOST_NAME server, $GUEST_NAME client)" row_xrxe_serves "$log.rxe-client" "$log.xrxe-server"
	side "$CFG: $desc ($GUEST_NAME server, $HOST_NAME client)" row_rxe_serves "$log.xrxe-client" "$log.rxe-server"
	if [ "${INTEROP_TRACE:-0}" = 1 ]; then
		tap_diag "rxe0 after: $(rxe_counters | awk '$2 != 0 {printf "%s=%s ", $1, $2}')"
	fi
}

# xrxe serves, the guest connects (row's tmpl and log).
row_xrxe_serves() {
	local host guest spid rc
	PORT=$((PORT + 1))
	host=$(fill "$tmpl" "$DEV" "$HOST_GID" "$SHARE/bin")
	guest=$GUEST_PRE$(fill "$tmpl" "$GUEST_DEV" "$GUEST_GID" /share/bin)
	# shellcheck disable=SC2086 # host is a command line
	ip netns exec "$NS_EP" timeout "$T" "${RUN[@]}" $host >"$log.xrxe-server" 2>&1 &
	spid=$!
	if ! wait_listen_host "$PORT" "$spid"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		echo "server did not listen" >>"$log.xrxe-server"
		return 1
	fi
	guest_run "timeout $T $guest $HOST4" >"$log.rxe-client" 2>&1
	rc=$?
	wait "$spid" || rc=1
	return "$rc"
}

# The guest serves, xrxe connects.
row_rxe_serves() {
	local host guest job i=0 rc=1
	PORT=$((PORT + 1))
	host=$(fill "$tmpl" "$DEV" "$HOST_GID" "$SHARE/bin")
	guest=$GUEST_PRE$(fill "$tmpl" "$GUEST_DEV" "$GUEST_GID" /share/bin)
	guest_submit "timeout $T $guest & pid=\$!; echo \$pid >/share/jobs/\$JOB.pid; ready_when_listening $PORT \$JOB; wait \$pid"
	job=$JOB
	while [ ! -e "$SHARE/jobs/$job.ready" ] && [ ! -e "$SHARE/jobs/$job.rc" ] && [ "$i" -lt $((T * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ -e "$SHARE/jobs/$job.ready" ]; then
		# shellcheck disable=SC2086
		ip netns exec "$NS_EP" timeout "$T" "${RUN[@]}" $host "$GUEST4" >"$log.xrxe-client" 2>&1
		rc=$?
		# A client that gave up leaves the server waiting for its peer
		# until the timeout: end it now.
		[ "$rc" = 0 ] || guest_run "kill \$(cat /share/jobs/$job.pid)" >/dev/null 2>&1
	else
		echo "guest server did not listen" >"$log.xrxe-client"
	fi
	guest_wait "$job" || rc=1
	cp "$SHARE/jobs/$job.out" "$log.rxe-server" 2>/dev/null
	return "$rc"
}

# --- Configurations -------------------------------------------------------------
# config MTU IPVER: links at MTU, the GIDs of family IPVER on both sides.
config() {
	local mtu=$1 ipv=$2 pmtu=1024 out
	[ "$mtu" -ge 4200 ] && pmtu=4096
	if [ "$mtu" != "${CUR_MTU:-1500}" ]; then
		stop_xrxed
		if ! guest_run "ip link set eth0 mtu $mtu" >/dev/null || ! set_mtu "$mtu" || ! start_xrxed; then
			tap_fail "links set to MTU $mtu"
			return 1
		fi
		CUR_MTU=$mtu
		sleep 1
	fi
	PMTU=$pmtu
	CFG="pmtu $pmtu ipv$ipv"
	local want_h=$HOST6 want_g=$GUEST6
	[ "$ipv" = 4 ] && want_h="::ffff:$HOST4" want_g="::ffff:$GUEST4"
	out=$(ip netns exec "$NS_EP" "${RUN[@]}" ibv_devinfo -v -d "$DEV" 2>&1)
	HOST_GID=$(gid_index "$out" "$want_h")
	local hmtu
	hmtu=$(awk '/active_mtu/ {print $2; exit}' <<<"$out")
	out=$(guest_run "ibv_devinfo -v -d rxe0" 2>&1)
	GUEST_GID=$(gid_index "$out" "$want_g")
	GUEST_WANT_GID=$want_g
	local gmtu
	gmtu=$(awk '/active_mtu/ {print $2; exit}' <<<"$out")
	if [ -z "$HOST_GID" ] || [ -z "$GUEST_GID" ] || [ "$hmtu" != "$pmtu" ] || [ "$gmtu" != "$pmtu" ]; then
		tap_fail "$CFG: GIDs $want_h / $want_g and active MTU $pmtu on both sides"
		tap_diag "xrxe gid '$HOST_GID' mtu '$hmtu'; rxe gid '$GUEST_GID' mtu '$gmtu'"
		tap_diag "$out"
		return 1
	fi
	tap_ok "$CFG: xrxe GID[$HOST_GID] $want_h, rxe GID[$GUEST_GID] $want_g, active MTU $pmtu both"
}

PP_ITERS=50 PERF_ITERS=20
pingpongs() {
	local s
	for s in 1 1024 4096 65536; do
		row rc "ibv_rc_pingpong -s $s" ibv_rc_pingpong -d @DEV@ -g @GID@ -m "$PMTU" -s "$s" -n $PP_ITERS -p @PORT@
	done
	row uc "ibv_uc_pingpong -s 4096" ibv_uc_pingpong -d @DEV@ -g @GID@ -m "$PMTU" -s 4096 -n $PP_ITERS -p @PORT@
	row ud "ibv_ud_pingpong -s 512" ibv_ud_pingpong -d @DEV@ -g @GID@ -s 512 -n $PP_ITERS -p @PORT@
	row srq "ibv_srq_pingpong -q 4" ibv_srq_pingpong -d @DEV@ -g @GID@ -m "$PMTU" -q 4 -s 4096 -n $PP_ITERS -p @PORT@
}

perftests() {
	local t
	for t in "ib_send_bw -s 65536" "ib_write_bw -s 65536" "ib_read_bw -s 65536" \
		"ib_atomic_bw -A CMP_AND_SWAP" "ib_atomic_bw -A FETCH_AND_ADD" "ib_write_lat -s 64" "ib_read_lat -s 64"; do
		# shellcheck disable=SC2086
		row rc "$t -n $PERF_ITERS" $t -d @DEV@ -x @GID@ -n $PERF_ITERS -F -p @PORT@
	done
}

# The clean runs give rc_integrity a Local ACK Timeout of 268 ms (exponent
# 16; 8 tries: 2.1 s) instead of 67 ms: at load 8 on the host's 2 cores the
# TCG guest once answered nothing for longer than 8 x 67 ms in the middle of
# a clean 4 MiB run, and xrxe, which gives up as IBA says where rxe retries
# for ever, ended the WR with "transport retry counter exceeded". What the
# rows check is the wire and the data, not the guest's pauses.
integrity() { # MIB SEED [TIMEOUT]
	local t=()
	[ -n "${3:-}" ] && t=(-t "$3")
	row rc "rc_integrity -m $1 ${t[*]}" @BIN@/rc_integrity -d @DEV@ -g @GID@ -m "$1" -s "$2" "${t[@]}" -p @PORT@
}

# --- rdma_cm rows -----------------------------------------------------------------
# librdmacm programs against the kernel's rdma_cm (rdma_ucm) on rxe: the
# guest runs the stock librdmacm, the host xrxe's (xrxe run loads both
# shims). Servers and clients take different arguments and nobody listens
# on TCP, so these rows have their own runner. CM_ADDR_H / CM_ADDR_G: the
# host's and the guest's address of the configuration's family.

# The host-side perftest client's rdma_connect waits 0.5 s (tests/lib/connect_delay.c
# says why: a race in perftest 4.5-0.17 that a native client wins against a
# TCG server, and a crash in its retry). Built here, as a test helper.
connect_delay_build "perftest -R rows run"

# wait_cm_listen_host PORT PID: until xrxed has an rdma_cm listener on PORT
# (`xrxe cm --json`); fails at once if PID (the server) has exited.
wait_cm_listen_host() {
	local i
	for i in $(seq 200); do
		"$PWD/$BUILD/bin/xrxe" cm "$IF_EP" --json 2>/dev/null |
			grep -qE "\"state\": \"listen\", [^}]*:$1\"" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# cm_fill TEMPLATE SERVER_ADDR CLIENT_ADDR: @SADDR@ (the server's address),
# @CADDR@ (the client's own), @PORT@.
cm_fill() {
	local c=${1//@SADDR@/$2}
	c=${c//@CADDR@/$3}
	echo "${c//@PORT@/$PORT}"
}

# cm_row [-l LPORT] [-k] [-d] DESC SERVER CLIENT: the server command line,
# then the client's, run with xrxe as server and rxe as client, then the
# other way round. -l: the port the server listens on when it takes none
# (udaddy's is fixed at 7174); -k: the server never exits by itself
# (cmtime): it must still run when the client is done, and is then ended;
# -d: the client's rdma_connect is delayed (CONNECT_DELAY, perftest), the
# host's or the guest's.
CM_RAN=""
cm_row() {
	local lport="" keep="" delay="" o OPTIND=1
	while getopts l:kd o; do
		case $o in
		l) lport=$OPTARG ;;
		k) keep=1 ;;
		d) delay=1 ;;
		*) return 1 ;;
		esac
	done
	shift $((OPTIND - 1))
	local desc="rdma_cm $1" stmpl=$2 ctmpl=$3 log
	[[ -n ${INTEROP_ONLY:-} && ! $desc =~ $INTEROP_ONLY ]] && return 0
	ROWS=$((ROWS + 1))
	CM_RAN+=" ${1%% *}"
	log=$TMP/cm_$(echo "$CFG $1" | tr -c 'A-Za-z0-9_\n' '_')
	side "$CFG: $desc (xrxe server, rxe client)" cm_xrxe_listens "$log.rxe-client" "$log.xrxe-server"
	side "$CFG: $desc (rxe server, xrxe client)" cm_rxe_listens "$log.xrxe-client" "$log.rxe-server"
}

# xrxe listens, the kernel connects (cm_row's locals).
cm_xrxe_listens() {
	local lp srv cli spid rc
	PORT=$((PORT + 1))
	lp=${lport:-$PORT}
	srv=$(cm_fill "$stmpl" "$CM_ADDR_H" "$CM_ADDR_G")
	cli=$(cm_fill "$ctmpl" "$CM_ADDR_H" "$CM_ADDR_G")
	# shellcheck disable=SC2086 # a command line
	ip netns exec "$NS_EP" timeout "$T" "${RUN[@]}" $srv >"$log.xrxe-server" 2>&1 &
	spid=$!
	if ! wait_cm_listen_host "$lp" "$spid"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		echo "server did not listen on $lp" >>"$log.xrxe-server"
		return 1
	fi
	# -d: the guest's perftest too (the host's root is the guest's, so the
	# library runs there; from the share): on a loaded host the xrxe server
	# created its data listener after the guest's REQ (REJ 8, CI
	# 2026-12-02, load 5-9), the race connect_delay.c describes
	local pre=""
	[ -n "$delay" ] && [ -n "$CONNECT_DELAY" ] && cp "$CONNECT_DELAY" "$SHARE/connect_delay.so" &&
		pre="env LD_PRELOAD=/share/connect_delay.so "
	guest_run "${pre}timeout $T $cli" >"$log.rxe-client" 2>&1
	rc=$?
	if [ -n "$keep" ]; then
		kill -0 "$spid" 2>/dev/null || { rc=1; echo "server exited early" >>"$log.xrxe-server"; }
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	else
		wait "$spid" || rc=1
	fi
	return "$rc"
}

# The kernel listens, xrxe connects.
cm_rxe_listens() {
	local lp srv cli job i=0 rc=1
	PORT=$((PORT + 1))
	lp=${lport:-$PORT}
	srv=$(cm_fill "$stmpl" "$CM_ADDR_G" "$CM_ADDR_H")
	cli=$(cm_fill "$ctmpl" "$CM_ADDR_G" "$CM_ADDR_H")
	guest_submit "timeout $T $srv & pid=\$!; echo \$pid >/share/jobs/\$JOB.pid; ready_when_cm_listening $lp \$JOB \$pid; wait \$pid"
	job=$JOB
	while [ ! -e "$SHARE/jobs/$job.ready" ] && [ ! -e "$SHARE/jobs/$job.rc" ] && [ "$i" -lt $((T * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ -e "$SHARE/jobs/$job.ready" ]; then
		local pre=()
		[ -n "$delay" ] && pre=("${CONNECT_DELAY_ENV[@]}")
		# shellcheck disable=SC2086
		ip netns exec "$NS_EP" "${pre[@]}" timeout "$T" "${RUN[@]}" $cli >"$log.xrxe-client" 2>&1
		rc=$?
		if [ -n "$keep" ]; then
			[ -e "$SHARE/jobs/$job.rc" ] && { rc=1; echo "guest server exited early" >>"$log.xrxe-client"; }
			guest_run "kill \$(cat /share/jobs/$job.pid)" >/dev/null 2>&1
			guest_wait "$job"
		else
			# a client that gave up leaves the server waiting: end it now
			[ $rc = 0 ] || guest_run "kill \$(cat /share/jobs/$job.pid)" >/dev/null 2>&1
			guest_wait "$job" || rc=1
		fi
	else
		echo "guest server did not listen on $lp" >"$log.xrxe-client"
		guest_wait "$job"
	fi
	cp "$SHARE/jobs/$job.out" "$log.rxe-server" 2>/dev/null
	return "$rc"
}

# cm_reject_row: a connect to a port nobody listens on is rejected at once
# with REJ reason 8 (invalid service ID) -- the kernel's REJ read by xrxe,
# then xrxe's read by the kernel -- not left to time out.
cm_reject_row() {
	local desc="rdma_cm rping to a port nobody listens on: REJ reason 8" out rc t0
	[[ -n ${INTEROP_ONLY:-} && ! $desc =~ $INTEROP_ONLY ]] && return 0
	[ -n "$GUEST_NET_DOWN" ] && return 0
	ROWS=$((ROWS + 1))
	CM_RAN+=" reject"
	t0=$SECONDS
	PORT=$((PORT + 1))
	out=$(ip netns exec "$NS_EP" timeout 20 "${RUN[@]}" rping -c -a "$CM_ADDR_G" -p $PORT -C 1 2>&1)
	rc=$?
	if [ $rc != 0 ] && [ $rc != 124 ] && grep -q 'RDMA_CM_EVENT_REJECTED, error 8' <<<"$out"; then
		tap_ok "$CFG: $desc (rxe rejects, xrxe client) [$((SECONDS - t0)) s]"
	else
		tap_fail "$CFG: $desc (rxe rejects, xrxe client) [rc $rc]"
		tail -n 8 <<<"$out" | sed 's/^/#   /'
	fi
	t0=$SECONDS
	PORT=$((PORT + 1))
	out=$(guest_run "timeout 20 rping -c -a $CM_ADDR_H -p $PORT -C 1" 2>&1)
	rc=$?
	if [ $rc != 0 ] && [ $rc != 124 ] && grep -q 'RDMA_CM_EVENT_REJECTED, error 8' <<<"$out"; then
		tap_ok "$CFG: $desc (xrxe rejects, rxe client) [$((SECONDS - t0)) s]"
	else
		tap_fail "$CFG: $desc (xrxe rejects, rxe client) [rc $rc]"
		tail -n 8 <<<"$out" | sed 's/^/#   /'
	fi
}

# cm_rows IPVER: the rdma_cm rows of a configuration (IPv4 at path MTU
# 1024, IPv6 at 4096), then both CMs' view: rping, ucmatose, udaddy, a
# rejected connect; IPv4 also cmtime and ib_send_bw / ib_write_bw -R
# (perftest 4.5's rdma_cm client takes IPv4 only).
cm_rows() {
	local ipv=$1 n0=$ROWS t
	cm_counts >"$TMP/cm_counts.0"
	CM_ADDR_H=$HOST4 CM_ADDR_G=$GUEST4
	[ "$ipv" = 6 ] && CM_ADDR_H=$HOST6 CM_ADDR_G=$GUEST6
	cm_row "rping -C 100 -V" \
		"rping -s -a @SADDR@ -p @PORT@ -C 100 -V" "rping -c -a @SADDR@ -p @PORT@ -C 100 -V"
	cm_row "ucmatose -c 3 -C 10" \
		"ucmatose -b @SADDR@ -p @PORT@ -c 3 -C 10 -S 1000" \
		"ucmatose -s @SADDR@ -b @CADDR@ -p @PORT@ -c 3 -C 10 -S 1000"
	# udaddy's -p is the port space, not the port: it always uses 7174
	cm_row -l 7174 "udaddy -c 2 -C 10 (SIDR, UD)" \
		"udaddy -b @SADDR@ -c 2 -C 10 -S 256" "udaddy -s @SADDR@ -b @CADDR@ -c 2 -C 10 -S 256"
	cm_reject_row
	if [ "$ipv" = 4 ]; then
		cm_row -k "cmtime -c 20" "cmtime -b @SADDR@ -p @PORT@ -c 20" \
			"cmtime -s @SADDR@ -b @CADDR@ -p @PORT@ -c 20"
		for t in "ib_send_bw -R -s 65536" "ib_write_bw -R -s 65536"; do
			cm_row -d "$t -n $PERF_ITERS" "$t -n $PERF_ITERS -F -p @PORT@" \
				"$t -n $PERF_ITERS -F -p @PORT@ @SADDR@"
		done
	fi
	[ "$ROWS" != "$n0" ] && cm_state_check
}

# cm_counts: both CMs' MAD counters as NAME VALUE lines: rxe's ib_cm port
# counters (cm_rx_msgs.req, cm_tx_msgs.rep, cm_tx_retries.*,
# cm_rx_duplicates.*; retries and duplicates are counted in rx/tx too) and
# xrxe's (sent_req, rcvd_rep, ...: the same attribute names).
cm_counts() {
	# shellcheck disable=SC2016 # expanded in the guest
	guest_run 'cd /sys/class/infiniband/rxe0/ports/1 && for d in cm_rx_msgs cm_tx_msgs cm_tx_retries cm_rx_duplicates; do (cd $d && grep -H . *) | sed "s/^/$d./"; done' |
		tr ':' ' '
	"$PWD/$BUILD/bin/xrxe" cm "$IF_EP" 2>/dev/null | awk '$1 ~ /^cm\./ {print substr($1, 4), $2}'
}

# Both CMs after a configuration's rows (xrxed restarts with the next MTU,
# so this is the place): every MAD one side sent, the other received --
# rxe's ib_cm counted per attribute what xrxe counted as sent and the other
# way round, over the rows (cm_counts.0: the counts before them); xrxe parsed all
# (none dropped as malformed); no CM ID is left on either side; no MAD
# failed to go out. rxe's retries and duplicates are reported. One rule of
# rxe's counting: ib_cm counts a send it made in answer to a received MAD
# without a CM ID behind it (the DREP to a duplicate DREQ, an MRA, a REP
# or RTU sent again for a duplicate) as a resend (drivers/infiniband/core/
# cm.c, cm_send_handler: no CM ID and not a REJ sets retries = 1), so that one packet adds
# 2 to cm_tx_msgs and 1 to cm_tx_retries. xrxe may therefore receive up to
# cm_tx_retries fewer than cm_tx_msgs of an attribute, never more, never
# fewer (two CI runs: DREP, rxe "sent" 30 and 32 with retries +1 after a
# duplicate DREQ, xrxe received 29 and 31).
cm_state_check() {
	local c1 out kids
	sleep 1
	c1=$(cm_counts)
	kids=$(guest_run 'rdma res show cm_id | wc -l')
	out=$(cm_counts_compare "$c1" "$kids")
	if grep -q '; 0 bad$' <<<"$out"; then
		tap_ok "$CFG: rdma_cm: each side received every CM MAD the other sent (rxe's ib_cm and xrxe's counters, per attribute), none malformed, no CM ID left"
	else
		tap_fail "$CFG: rdma_cm: each side received every CM MAD the other sent (rxe's ib_cm and xrxe's counters, per attribute), none malformed, no CM ID left"
		tap_diag "$(grep -v '^summary' <<<"$out")"
		[ "${kids:-1}" = 0 ] || tap_diag "$(guest_run 'rdma res show cm_id' 2>&1)"
	fi
	tap_diag "$(sed -n 's/^summary: //p' <<<"$out")"
}

# cm_counts_compare COUNTS KIDS: cm_state_check's comparison of COUNTS (as
# cm_counts prints them) with cm_counts.0; KIDS: rxe's CM IDs left. Ends
# with "summary: ...; N bad".
cm_counts_compare() {
	awk -v kids="${2:-?}" '
	NR == FNR { c0[$1] = $2; next }
	{ d[$1] = $2 - c0[$1]; v[$1] = $2 }
	END {
		n = split("req mra rej rep rtu dreq drep sidr_req sidr_rep lap apr", at, " ")
		for (i = 1; i <= n; i++) {
			a = at[i]; xs += d["sent_" a]; ks += d["cm_tx_msgs." a]
			r = d["cm_tx_retries." a]; u = d["cm_rx_duplicates." a]
			# rxe counts a manual resend twice (above): rcvd in [tx - retries, tx]
			if (d["sent_" a] != d["cm_rx_msgs." a] || d["rcvd_" a] > d["cm_tx_msgs." a] ||
			    d["rcvd_" a] < d["cm_tx_msgs." a] - r) {
				bad++; printf "%s: xrxe sent %d, rxe received %d; rxe sent %d, xrxe received %d\n",
					a, d["sent_" a], d["cm_rx_msgs." a], d["cm_tx_msgs." a], d["rcvd_" a] }
			if (r) retr = retr " " a "+" r
			if (u) dup = dup " " a "+" u
		}
		for (k in v) if (k ~ /^drop_(truncated|bad_base|bad_class|bad_method|not_cm|unknown_attr)/ && v[k]) {
			bad++; print "xrxe dropped malformed MADs: " k " " v[k] }
		if (v["ids"] != 0) { bad++; print "xrxe CM IDs left: " v["ids"] }
		if (v["mad_tx_fail"] != 0) { bad++; print "xrxe MADs not sent: " v["mad_tx_fail"] }
		if (kids != 0) { bad++; print "rxe CM IDs left: " kids }
		if (!xs || !ks) { bad++; print "no MADs counted" }
		printf "summary: xrxe sent %d, rxe sent %d; rxe retries:%s, duplicates:%s; %d bad\n",
			xs, ks, retr == "" ? " none" : retr, dup == "" ? " none" : dup, bad
	}' "$TMP/cm_counts.0" - <<<"$1"
}

# counters_add ACC FROM TO: NAME VALUE lines, ACC + (TO - FROM) per name.
counters_add() {
	{ sed 's/^/a /' <<<"$1"; sed 's/^/f /' <<<"$2"; sed 's/^/t /' <<<"$3"; } |
		awk 'NF == 3 { v[$2] += ($1 == "f" ? -$3 : $3) } END { for (n in v) print n, v[n] }'
}

# counters_rebase before|after: a fresh guest's rxe counts from 0 again.
# Before a reboot, what the phase counted so far (from RXE_BASE) is added
# to RXE_ACC, and the link's drops (from DROP_BASE) to DROP_ACC; after it,
# the bases are the new guest's, and so is the CM check's baseline (the
# rows before the reboot are then left out of that check).
RXE_ACC="" RXE_BASE="" DROP_ACC=0 DROP_BASE=0
counters_rebase() {
	if [ "$1" = before ]; then
		RXE_ACC=$(counters_add "$RXE_ACC" "$RXE_BASE" "$(rxe_counters)")
		DROP_ACC=$((DROP_ACC + $(link_drops) - DROP_BASE))
		return
	fi
	RXE_BASE=$(rxe_counters)
	DROP_BASE=$(link_drops)
	if [ -e "$TMP/cm_counts.0" ]; then
		cm_counts >"$TMP/cm_counts.0"
		tap_diag "the $CFG CM counter check covers only the rows after the guest reboot"
	fi
}

# rxe's port counters, as NAME VALUE lines.
rxe_counters() {
	guest_run 'cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -H . * | tr : " "'
}

# Frames the link lost on the way into the guest: the tap's transmit queue
# overflows while the (slow) guest does not drain it, or virtio-net drops.
link_drops() {
	local tap guest
	tap=$(cat "/sys/class/net/$TAP/statistics/tx_dropped" 2>/dev/null ||
		ip netns exec "$NS_BR" cat "/sys/class/net/$TAP/statistics/tx_dropped")
	# shellcheck disable=SC2016 # expanded in the guest
	guest=$(guest_run 'cd /sys/class/net/eth0/statistics && echo $(($(cat rx_dropped) + $(cat rx_missed_errors) + $(cat rx_fifo_errors)))')
	echo $((${tap:-0} + ${guest:-0}))
}

# --- The matrix -----------------------------------------------------------------
# capture_started FILE PID: dumpcap (PID) captures once it has opened the
# interface and written its file's header (FILE is not empty): a condition
# instead of a second's sleep. Gives up when dumpcap exited, or after 10 s.
capture_started() {
	local i
	for i in $(seq 200); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
# Clean runs, captured on the bridge.
ip netns exec "$NS_BR" dumpcap -q -i br0 -w "$TMP/clean.pcapng" >"$TMP/dumpcap.log" 2>&1 &
DUMPCAP_PID=$!
netns_at_exit "kill $DUMPCAP_PID"
capture_started "$TMP/clean.pcapng" "$DUMPCAP_PID"
RXE_BASE=$(rxe_counters)
DROP_BASE=$(link_drops)
# Development hook: extra guest commands before the clean runs (e.g. a netem delay).
GUEST_SETUP=${INTEROP_GUEST_SETUP:-}
[ -n "$GUEST_SETUP" ] && guest_run "$GUEST_SETUP"

if [ "${INTEROP_QUICK:-0}" = 1 ]; then
	CONFIGS=("1500 4")
else
	CONFIGS=("1500 4" "1500 6" "9000 6" "9000 4")
fi
for c in "${CONFIGS[@]}"; do
	read -r mtu ipv <<<"$c"
	config "$mtu" "$ipv" || continue
	case $c in
	"1500 4" | "9000 6") # full matrix
		pingpongs
		perftests
		integrity 4 $((mtu + ipv)) 16
		cm_rows "$ipv" ;;
	*) # the other MTU x address family pairs: RC essentials
		row rc "ibv_rc_pingpong -s 65536" ibv_rc_pingpong -d @DEV@ -g @GID@ -m "$PMTU" -s 65536 -n $PP_ITERS -p @PORT@
		row rc "ib_write_bw -s 65536 -n $PERF_ITERS" ib_write_bw -s 65536 -d @DEV@ -x @GID@ -n $PERF_ITERS -F -p @PORT@
		integrity 2 $((mtu + ipv)) 16 ;;
	esac
done
# The clean runs' counts, over every guest that ran them.
C0="" C1=$(counters_add "$RXE_ACC" "$RXE_BASE" "$(rxe_counters)")
D0=0 D1=$((DROP_ACC + $(link_drops) - DROP_BASE))
kill -INT "$DUMPCAP_PID" 2>/dev/null
wait "$DUMPCAP_PID" 2>/dev/null
CLEAN_END=$SECONDS

# --- Checks of the clean runs ---------------------------------------------------
# The wire: no peer ever skips a PSN. Every request to a QP follows the
# previous one (a READ by its response count) or goes back (a
# retransmission); checked on the bridge, before any loss the link adds.
# One dissection pass gives the fields every check below uses (10-20: the
# CM MADs', for the rdma_cm check).
tshark -r "$TMP/clean.pcapng" -Y 'udp.dstport == 4791 && infiniband' -T fields -e ip.src -e ipv6.src \
	-e udp.srcport -e infiniband.bth.destqp -e infiniband.bth.opcode -e infiniband.bth.psn -e frame.number \
	-e infiniband.reth.dmalen -e udp.checksum -e infiniband.mad.mgmtclass -e infiniband.mad.attributeid \
	-e infiniband.mad.transactionid -e infiniband.cm.req -e infiniband.cm.rep -e infiniband.cm.rej.localcommid \
	-e infiniband.cm.rtu.localcommid -e infiniband.cm.dreq.localcommid -e infiniband.cm.drsp.localcommid \
	-e frame.len -e infiniband.cm.dreq.remotecommid >"$TMP/roce.tsv" 2>/dev/null
out=$(awk -f tests/interop/lib/psn_order.awk "$TMP/roce.tsv")
if grep -q ' 0 skipped PSNs' <<<"$out" && ! grep -q '^0 requests' <<<"$out"; then
	tap_ok "capture: neither peer skips a PSN ($(tail -n 1 <<<"$out"))"
else
	tap_fail "capture: neither peer skips a PSN"
	tap_diag "$(tail -n 12 <<<"$out")"
fi

# rxe's counters. No QP may run out of retries. rxe's sequence-error
# counters (rcvd_seq_err, out_of_seq_request) must stay 0 unless the link
# into the guest dropped frames (a TCG guest drains its virtio ring slowly;
# the tap's queue overflows): then the capture check above is the proof
# that xrxe sent every PSN. Timer-driven retries are not failures: under
# TCG the guest's clock jumps and rxe's retransmit timer fires spuriously
# (completer_retry_err with no packet lost, more with an added delay;
# docs/interop.md), and a slow guest may ACK after xrxe's timeout
# (duplicate_request). They are reported. An RNR NAK is not a failure
# either (a slow guest application posts its receive late), and it leaves
# rxe's expected PSN at the refused SEND, so the request xrxe had already
# pipelined behind it counts once in out_of_seq_request (rxe_resp.c
# check_psn counts the first request past the expected PSN, then stays
# quiet until the retried one arrives): out_of_seq_request may grow by as
# many RNR NAKs as rxe sent (send_rnr_err), no more.
drops=$((${D1:-0} - ${D0:-0}))
counter_growth() {
	local v0 v1
	v0=$(awk -v k="$1" '$1 == k {print $2}' <<<"$C0")
	v1=$(awk -v k="$1" '$1 == k {print $2}' <<<"$C1")
	[ -n "$v1" ] && echo $((v1 - ${v0:-0}))
}
rnr_naks=$(counter_growth send_rnr_err)
bad=""
for k in rcvd_seq_err out_of_seq_request retry_exceeded_err retry_rnr_exceeded_err send_err; do
	grew=$(counter_growth "$k")
	[ -n "$grew" ] || continue
	case $k in rcvd_seq_err | out_of_seq_request) [ "$drops" -gt 0 ] && continue ;; esac
	[ "$k" = out_of_seq_request ] && [ "$grew" -le "${rnr_naks:-0}" ] && continue
	[ "$grew" -ne 0 ] && bad+=" $k+$grew"
done
if [ -n "$C1" ] && [ -z "$bad" ]; then
	tap_ok "clean runs: rxe0 counters show no sequence error and no retry exhausted (link drops: $drops, RNR NAKs: ${rnr_naks:-0})"
else
	tap_fail "clean runs: rxe0 counters show no sequence error and no retry exhausted:${bad:- (no counters)} (link drops: $drops, RNR NAKs: ${rnr_naks:-0})"
fi
tap_diag "rxe0 counters after the clean runs: $(tr '\n' ' ' <<<"$C1")"
dmesg_icrc=$(guest_run 'dmesg | grep -ci icrc')
if [ "${dmesg_icrc:-0}" = 0 ]; then
	tap_ok "clean runs: the guest kernel logged no ICRC error"
else
	tap_fail "clean runs: the guest kernel logged no ICRC error ($dmesg_icrc lines)"
	tap_diag "$(guest_run 'dmesg | grep -i icrc | tail -n 5')"
fi

# The capture: our own parser verifies every ICRC, both sources.
out=$("$PCAPCHECK" "$TMP/clean.pcapng" 2>&1)
rc=$?
NROCE=$(sed -n 's/^total: [0-9]* frames, \([0-9]*\) RoCEv2.*/\1/p' <<<"$out")
srcs="$HOST4 $GUEST4 $HOST6 $GUEST6"
[ "${INTEROP_QUICK:-0}" = 1 ] && srcs="$HOST4 $GUEST4"
seen=0
for a in $srcs; do grep -q "source $a:" <<<"$out" && seen=$((seen + 1)); done
if [ $rc = 0 ] && [ $seen = "$(wc -w <<<"$srcs")" ]; then
	tap_ok "capture: every RoCEv2 frame of both peers, IPv4 and IPv6, parses and its ICRC verifies"
else
	tap_fail "capture: every RoCEv2 frame of both peers, IPv4 and IPv6, parses and its ICRC verifies"
fi
tap_diag "$out"

# tshark, an independent decoder: frames decode as InfiniBand, nothing is
# malformed, no error-level expert item, UDP checksums checked where sent.
# The one exception is rxe's zero UDP checksum on IPv6 (docs/facts/rxe.md §5.4.1,
# docs/interop.md): it is tolerated from the guest only.
# Application payloads are random bytes: Wireshark's upper-layer heuristics
# (RPC-over-RDMA, SMB Direct, iSER, ...) guess at them and report their own
# guesses as malformed. They are switched off; the RoCE headers are not.
TS=(tshark -r "$TMP/clean.pcapng" -o udp.check_checksum:TRUE)
for h in rpcrdma_infiniband smb_direct_infiniband lnet_ib iser_infiniband sdp_infiniband mellanox_eoib; do
	TS+=(--disable-heuristic "$h")
done
for p in nvme-rdma smc fcoib; do TS+=(--disable-protocol "$p"); done
nib=$(wc -l <"$TMP/roce.tsv")
# Only RoCE frames are held to the checksum rule: the kernel's own UDP
# (xrxed's neighbour-resolution nudge to port 9) leaves veth with the
# checksum offloaded, so the bridge sees it unfinished.
errs=$("${TS[@]}" -Y '_ws.malformed || (udp.port == 4791 && _ws.expert.severity >= "Error")' -T fields \
	-e frame.number -e ip.src -e ipv6.src -e udp.checksum -e _ws.expert.message 2>/dev/null)
zero6=$(awk -F'\t' -v g="$GUEST6" '$3 == g && $4 == "0x0000" && $5 == "Illegal checksum value (0)"' <<<"$errs" | wc -l)
others=$(awk -F'\t' -v g="$GUEST6" '!($3 == g && $4 == "0x0000" && $5 == "Illegal checksum value (0)") && NF' <<<"$errs")
if [ "$nib" -gt 0 ] && [ "$nib" = "$NROCE" ] && [ -z "$others" ]; then
	tap_ok "capture: tshark decodes all $nib RoCEv2 frames as InfiniBand, none malformed, no checksum or other error"
else
	tap_fail "capture: tshark decodes all ${NROCE:-?} RoCEv2 frames as InfiniBand ($nib), none malformed, no checksum or other error"
	tap_diag "$(head -n 20 <<<"$others")"
fi
tap_diag "rxe frames with the IPv6 zero UDP checksum: $zero6"
# xrxe puts a real UDP checksum on IPv6 (docs/interop.md); tshark verified
# each one above (udp.check_checksum), here none may be missing.
if [ "${INTEROP_QUICK:-0}" != 1 ]; then
	n6=$(awk -F'\t' -v h="$HOST6" '$2 == h' "$TMP/roce.tsv" | wc -l)
	z6=$(awk -F'\t' -v h="$HOST6" '$2 == h && $9 == "0x0000"' "$TMP/roce.tsv" | wc -l)
	if [ "$n6" -gt 0 ] && [ "$z6" = 0 ]; then
		tap_ok "capture: all $n6 IPv6 RoCE frames from xrxe carry a UDP checksum (verified by tshark)"
	else
		tap_fail "capture: all $n6 IPv6 RoCE frames from xrxe carry a UDP checksum ($z6 with 0)"
	fi
fi

# The rdma_cm rows' MADs (UD SENDs to QP1), both peers': Wireshark's CM
# dissector decodes each (REQ, REP, REJ, RTU, DREQ, DREP field by field;
# Wireshark 4.0 has no SIDR dissector, so SIDR_REQ/REP only as MADs), none
# is malformed or carries an error (the pass above, `errs`; rxe's IPv6 zero
# UDP checksum aside), each is 256 bytes, and every exchange completes on
# the wire, matched by transaction ID: REQ -> REP or REJ from the other
# peer, REP -> RTU, DREQ -> DREP, SIDR_REQ -> SIDR_REP. A DREQ that crossed
# the peer's own DREQ for the connection may stay unanswered: the kernel's
# ib_cm, in DREQ_RCVD when our DREP to its DREQ arrives, goes to TimeWait
# without a DREP (cm_drep_handler), and xrxe's CM in DREQ_SENT stops waiting
# for its DREP once the peer's DREQ came (docs/interop.md). Both peers sent
# each kind the rows that ran call for. Counted per attribute and peer.
if [ -n "$CM_RAN" ]; then
	need=""
	[[ $CM_RAN =~ rping|ucmatose|cmtime|ib_ ]] && need+=" 0x0010 0x0013 0x0014 0x0015 0x0016"
	[[ $CM_RAN =~ udaddy ]] && need+=" 0x0017 0x0018"
	[[ $CM_RAN =~ reject ]] && need+=" 0x0012"
	cmerr=$(awk -F'\t' 'NR == FNR { if ($4 == "0x000001") cm[$7] = 1; next } ($1 in cm)' \
		"$TMP/roce.tsv" - <<<"$others")
	out=$(awk -F'\t' -v h4="$HOST4" -v h6="$HOST6" -v need="$need" '
	BEGIN {
		split("0x0010 REQ 0x0011 MRA 0x0012 REJ 0x0013 REP 0x0014 RTU 0x0015 DREQ 0x0016 DREP 0x0017 SIDR_REQ 0x0018 SIDR_REP", a, " ")
		for (i = 1; i < 18; i += 2) { name[a[i]] = a[i + 1]; order[++na] = a[i] }
		# the CM dissector field that must be there, per attribute
		col["0x0010"] = 13; col["0x0013"] = 14; col["0x0012"] = 15; col["0x0014"] = 16; col["0x0015"] = 17; col["0x0016"] = 18
		ans["0x0010"] = "0x0013 0x0012"; ans["0x0013"] = "0x0014"; ans["0x0015"] = "0x0016"; ans["0x0017"] = "0x0018"
	}
	$4 != "0x000001" { next }
	{
		src = $1 $2; peer = (src == h4 || src == h6) ? "xrxe" : "rxe"; at = $11; tid = $12
		n++; cnt[at, peer]++
		if ($10 != "0x07" || !(at in name)) { bad++; print "frame " $7 " from " src ": class " $10 " attribute " at; next }
		if ((at in col) && $(col[at]) == "") { bad++; print "frame " $7 " from " src ": " name[at] " not decoded by the CM dissector" }
		if ($19 != ($2 == "" ? 322 : 342)) { bad++; print "frame " $7 " from " src ": " name[at] " frame of " $19 " bytes, not a 256-byte MAD" }
		# a REP both answers a REQ and awaits an RTU
		for (r in ans) if (index(ans[r], at) && ((tid, r) in req) && req[tid, r] != src) done[tid, r] = 1
		if ((at in ans) && !((tid, at) in req)) { req[tid, at] = src; reqf[tid, at] = $7; nreq++ }
		# DREQs by connection: local and remote comm ID, as sent
		if (at == "0x0015") { dreq_from[src, $17, $20] = 1; dreq_conn[tid] = $17 SUBSEP $20 }
	}
	END {
		for (k in req) if (!(k in done)) {
			split(k, p, SUBSEP)
			if (p[2] == "0x0015") { # did the other peer send a DREQ for this connection?
				split(dreq_conn[p[1]], c, SUBSEP); x = 0
				for (o in dreq_from) { split(o, d, SUBSEP); if (d[1] != req[k] && d[2] == c[2] && d[3] == c[1]) x = 1 }
				if (x) { crossed++; continue }
			}
			open++
			if (open <= 10) print "frame " reqf[k] ": " name[p[2]] " from " req[k] " (TID " p[1] ") never answered"
		}
		nn = split(need, nd, " ")
		for (i = 1; i <= nn; i++) for (pi = 0; pi < 2; pi++) {
			pe = pi ? "rxe" : "xrxe"
			if (!cnt[nd[i], pe]) { bad++; print "no " name[nd[i]] " from " pe }
		}
		s = ""
		for (i = 1; i <= na; i++) { at = order[i]; t = cnt[at, "xrxe"] + cnt[at, "rxe"]
			if (t) s = s sprintf("%s%s %d (xrxe %d, rxe %d)", s == "" ? "" : ", ", name[at], t, cnt[at, "xrxe"] + 0, cnt[at, "rxe"] + 0) }
		printf "summary: %d CM MADs, %d exchanges, %d unanswered, %d bad (%d crossed DREQs): %s\n", n, nreq, open, bad, crossed, s
	}' "$TMP/roce.tsv")
	if grep -q '^summary: [1-9][0-9]* CM MADs, [0-9]* exchanges, 0 unanswered, 0 bad' <<<"$out" && [ -z "$cmerr" ]; then
		tap_ok "capture: every CM MAD of both peers decodes in Wireshark's CM dissector, none malformed, no error; every REQ, REP, DREQ, SIDR_REQ answered"
	else
		tap_fail "capture: every CM MAD of both peers decodes in Wireshark's CM dissector, none malformed, no error; every REQ, REP, DREQ, SIDR_REQ answered"
		tap_diag "$(grep -v '^summary' <<<"$out" | head -n 20)"
		[ -n "$cmerr" ] && tap_diag "malformed or error: $(head -n 10 <<<"$cmerr")"
	fi
	tap_diag "$(sed -n 's/^summary: //p' <<<"$out")"
fi

# --- xrxed inside the guest ------------------------------------------------------
# Debian 12's own kernel (6.1) on virtio-net, as a user would run it: xrxed
# on the guest's eth0 with no options, against the host's xrxed. At MTU 1500
# virtio_net takes native XDP; at MTU 9000 it refuses it ("MTU too large to
# enable XDP") and xrxed falls back to generic XDP. 6.1 has no multi-buffer
# AF_XDP (6.6), so xrxed opens single-buffer sockets and caps the path MTU
# to what one UMEM frame holds. Both fallbacks must be logged once and
# shown by `xrxe stats` / `xrxe status`; then RC (rc_integrity: every byte
# checked), UD and perftest rows run guest xrxe <-> host xrxe, each side as
# server once. While it runs, xrxed's XDP program takes every RoCE
# frame eth0 receives, so rxe0 is idle. The path MTU the rows ask for is the
# smaller active MTU (the guest's capped one), as rdma_cm would pick; the
# capture and counter checks above are done, so this traffic is not in them.
GX=/run/xrxe-src/$BUILD/bin
GX_LOG=/share/gxrxed.log
# Start the guest's xrxed and wait until it says it is ready (its log).
GX_START="rm -f /run/xrxe/eth0.sock; : >$GX_LOG
$GX/xrxed eth0 >>$GX_LOG 2>&1 & echo \$! >/share/gxrxed.pid
for i in \$(seq 1200); do grep -q 'ready on' $GX_LOG && exit 0; kill -0 \$! 2>/dev/null || exit 1; sleep 0.1; done; exit 1"
# What the rows need to know of it, in one job (each costs seconds under
# TCG): the kernel, its stats and status, its device.
GX_QUERY="uname -r >/share/gx.uname; $GX/xrxe stats eth0 --json >/share/gx.stats 2>&1
$GX/xrxe status eth0 >/share/gx.status 2>&1; $GX/xrxe run -- ibv_devinfo -v -d xrxe_eth0 >/share/gx.devinfo 2>&1"
# SIGTERM it and wait until it is gone (a zombie of PID 1 counts as gone);
# prints how long that took, in ms, then `xrxe status`.
# shellcheck disable=SC2016 # expanded in the guest
GX_STOP='p=$(cat /share/gxrxed.pid); t0=$(date +%s%N); kill $p
for i in $(seq 600); do grep -qs "^State:.*[^Z] (" /proc/$p/status || break; sleep 0.05; done
grep -qs "^State:.*[^Z] (" /proc/$p/status && exit 1
echo $((($(date +%s%N) - t0) / 1000000))
'"$GX/xrxe status eth0"

# guest_xrxe MTU: links at MTU, the guest's xrxed up, its fallbacks checked,
# the rows, the guest's xrxed stopped (SIGTERM: its program removed).
guest_xrxe() {
	local mtu=$1 out hmtu gmtu want_mode want_refused
	local cfg="guest xrxe, MTU $mtu"
	if [ "$mtu" != "${CUR_MTU:-1500}" ]; then
		stop_xrxed
		if ! guest_run "ip link set eth0 mtu $mtu" >/dev/null || ! set_mtu "$mtu" || ! start_xrxed; then
			tap_fail "$cfg: links set to MTU $mtu"
			return 1
		fi
		CUR_MTU=$mtu
		sleep 1
	fi
	local t0=$SECONDS
	if ! guest_run "$GX_START" >/dev/null; then
		tap_fail "$cfg: xrxed started on the guest's eth0 (virtio-net)"
		tap_diag "$(tail -n 15 "$SHARE/gxrxed.log" 2>&1)"
		return 1
	fi
	local t1=$SECONDS
	rm -f "$SHARE"/gx.*
	guest_run "$GX_QUERY" >/dev/null 2>&1
	tap_ok "$cfg: xrxed started on the guest's eth0 (virtio-net, kernel $(cat "$SHARE/gx.uname" 2>/dev/null)) [$((t1 - t0)) s]"
	cp "$SHARE/gxrxed.log" "$TMP/gxrxed.$mtu.log"
	sed 's/^/#   guest xrxed: /' "$TMP/gxrxed.$mtu.log" | grep -iE 'fall|multi-buffer|ready|warn' | head -n 6
	# The fallbacks this kernel and driver force: native XDP at 1500,
	# generic at 9000; single-buffer AF_XDP either way, a fallback (logged)
	# only at 9000, where xrxed asks for multi-buffer sockets.
	want_mode=native want_refused=0
	[ "$mtu" -gt 1500 ] && want_mode=skb want_refused=1
	out=$(cat "$SHARE/gx.stats" 2>&1)
	if python3 -c '
import json, sys
p = json.loads(sys.argv[1])["daemon"]["port"]
assert p["xdp_mode"] == sys.argv[2] and p["xdp_native_refused"] == int(sys.argv[3]), p
assert p["xsk_multi_buffer"] == 0 and p["max_path_mtu"] >= 1024, p
print("xdp_mode %s, native_refused %d, xsk_multi_buffer %d, max_path_mtu %d, active_mtu %d" % (
    p["xdp_mode"], p["xdp_native_refused"], p["xsk_multi_buffer"], p["max_path_mtu"], p["active_mtu"]))
' "$out" "$want_mode" "$want_refused" >"$TMP/gx_stats" 2>&1 &&
		[ "$(grep -c 'no multi-buffer AF_XDP' "$TMP/gxrxed.$mtu.log")" = "$want_refused" ] &&
		[ "$(grep -c 'falling back to generic' "$TMP/gxrxed.$mtu.log")" = "$want_refused" ]; then
		tap_ok "$cfg: xrxe stats: $(cat "$TMP/gx_stats"); $([ "$want_refused" = 1 ] && echo 'each fallback logged once' || echo 'no fallback logged')"
	else
		tap_fail "$cfg: xrxe stats shows $want_mode XDP and single-buffer AF_XDP, a fallback logged once where one was taken"
		tap_diag "$(cat "$TMP/gx_stats")"
		tap_diag "$(head -c 600 <<<"$out")"
	fi
	out=$(cat "$SHARE/gx.status" 2>&1)
	if grep -q "xrxe steering ($want_mode mode" <<<"$out" &&
		{ [ "$want_refused" = 0 ] || grep -q "fallback: the driver refused native XDP" <<<"$out"; }; then
		tap_ok "$cfg: xrxe status: $(grep -m1 'xrxe steering' <<<"$out" | sed 's/^ *//')$([ "$want_refused" = 1 ] && echo ', fallback shown')"
	else
		tap_fail "$cfg: xrxe status shows $want_mode mode$([ "$want_refused" = 1 ] && echo ' and the fallback')"
		tap_diag "$out"
	fi
	# The rows: both devices' GIDs of the IPv4 addresses, the smaller
	# active MTU.
	out=$(ip netns exec "$NS_EP" "${RUN[@]}" ibv_devinfo -v -d "$DEV" 2>&1)
	HOST_GID=$(gid_index "$out" "::ffff:$HOST4")
	hmtu=$(awk '/active_mtu/ {print $2; exit}' <<<"$out")
	GUEST_DEV=xrxe_eth0 GUEST_PRE="$GX/xrxe run -- " HOST_NAME="host xrxe" GUEST_NAME="guest xrxe"
	GUEST_WANT_GID="::ffff:$GUEST4"
	out=$(cat "$SHARE/gx.devinfo" 2>&1)
	GUEST_GID=$(gid_index "$out" "$GUEST_WANT_GID")
	gmtu=$(awk '/active_mtu/ {print $2; exit}' <<<"$out")
	PMTU=$hmtu
	[ "${gmtu:-0}" -lt "${hmtu:-0}" ] && PMTU=$gmtu
	CFG="$cfg, pmtu $PMTU ipv4"
	if [ -z "$HOST_GID" ] || [ -z "$GUEST_GID" ] || [ -z "$PMTU" ]; then
		tap_fail "$cfg: GIDs and active MTUs of both xrxe devices"
		tap_diag "host gid '$HOST_GID' mtu '$hmtu'; guest gid '$GUEST_GID' mtu '$gmtu'"
	else
		tap_diag "$cfg: host xrxe GID[$HOST_GID] active MTU $hmtu, guest xrxe GID[$GUEST_GID] active MTU $gmtu"
		# A fresh guest (its network died) needs the guest's xrxed again.
		GUEST_SETUP=$GX_START
		# Captured on the bridge (kept with INTEROP_KEEP), every ICRC checked.
		ip netns exec "$NS_BR" dumpcap -q -i br0 -w "$TMP/guest_xrxe.$mtu.pcapng" >>"$TMP/dumpcap.log" 2>&1 &
		local dpid=$!
		capture_started "$TMP/guest_xrxe.$mtu.pcapng" "$dpid"
		# RC: every byte checked both ends. A local ACK timeout of 268 ms
		# (exponent 16) in the RC rows, as in the clean rc_integrity rows
		# above: here both ends are xrxe, which ends a WR after 7 retries
		# (IBA), and the TCG guest, sending a 64-frame burst, once took
		# ~1 s to process the ACKs behind it (ibv_rc_pingpong -s 65536,
		# 67 ms, failed with "transport retry counter exceeded";
		# docs/interop.md, "xrxed inside the guest").
		row rc "rc_integrity -m 1 -a 100 -t 16" @BIN@/rc_integrity -d @DEV@ -g @GID@ -m 1 -a 100 -s $((mtu + 7)) -t 16 -M "$PMTU" -p @PORT@
		row ud "ibv_ud_pingpong -s $PMTU -n 20" ibv_ud_pingpong -d @DEV@ -g @GID@ -s "$PMTU" -n 20 -p @PORT@
		row rc "ib_write_bw -s 65536 -n $PERF_ITERS" ib_write_bw -s 65536 -d @DEV@ -x @GID@ -m "$PMTU" -u 16 -n $PERF_ITERS -F -p @PORT@
		GUEST_SETUP=""
		kill -INT "$dpid" 2>/dev/null
		wait "$dpid" 2>/dev/null
		local prc
		out=$("$PCAPCHECK" "$TMP/guest_xrxe.$mtu.pcapng" 2>&1)
		prc=$?
		if [ "$prc" = 0 ] && grep -q "source $HOST4:" <<<"$out" && grep -q "source $GUEST4:" <<<"$out"; then
			tap_ok "$cfg: capture: every RoCEv2 frame of both xrxe peers parses and its ICRC verifies"
		else
			tap_fail "$cfg: capture: every RoCEv2 frame of both xrxe peers parses and its ICRC verifies"
		fi
		tap_diag "$(grep '^total' <<<"$out")"
		# What the guest's xrxed saw (drops, rings) and the link's losses.
		guest_run "$GX/xrxe stats eth0 --json" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)["daemon"]
x = d.get("xsk0", {})
keys = ("rx_frames", "tx_frames", "k_rx_dropped", "k_rx_ring_full", "k_rx_fill_ring_empty", "tx_kick_errors")
print("guest xrxed xsk0: " + ", ".join("%s %s" % (k, x.get(k)) for k in keys))' 2>&1 | sed 's/^/# /'
		tap_diag "link drops into the guest (tap queue, virtio-net): $(link_drops)"
	fi
	GUEST_DEV=rxe0 GUEST_PRE="" HOST_NAME=xrxe GUEST_NAME=rxe
	t0=$SECONDS
	if out=$(guest_run "$GX_STOP") && grep -q "no XDP program" <<<"$out"; then
		tap_ok "$cfg: the guest's xrxed stopped on SIGTERM in $(head -n 1 <<<"$out") ms, its XDP program removed"
	else
		tap_fail "$cfg: the guest's xrxed stopped on SIGTERM, its XDP program removed"
		tap_diag "$(guest_run "$GX/xrxe status eth0" 2>&1; tail -n 5 "$SHARE/gxrxed.log")"
		guest_run "kill -9 \$(cat /share/gxrxed.pid); $GX/xrxe detach eth0" >/dev/null 2>&1
	fi
}
GX_T0=$SECONDS
if [ "${INTEROP_QUICK:-0}" = 1 ]; then
	guest_xrxe 1500
else
	# From the last clean configuration's 9000 down to the loss runs' 1500.
	guest_xrxe 9000
	guest_xrxe 1500
fi
tap_diag "guest xrxe rows: $((SECONDS - GX_T0)) s"

# --- xrxed inside the guest <-> the guest's own rxe ------------------------------
# Both peers in the one guest, on Debian's 6.1: a veth pair, glr in the
# guest's initial namespace under kernel rxe (rxe1: 6.1's rxe opens its UDP
# socket in the initial namespace only), glx in the guest namespace gl under
# a second guest xrxed. (On eth0 the two would share one NIC, where xrxed's
# program takes every RoCE frame.) At MTU 1500 and 9000, each link set up
# afresh: rxe1 and xrxe's device come up, their GIDs and active MTUs are read,
# then the rows, each with the guest's xrxe as server and then as client, at
# the smaller active MTU; then SIGTERM: the xrxed exits and glx carries no
# XDP program any more. Every command of a side runs in the guest (one job:
# server, wait until it listens, client).
GL_R=10.77.252.1 GL_X=10.77.252.2
GL_LOG=/share/glxrxed.log
# gl_setup MTU: the guest job that builds the link and starts the xrxed.
gl_setup() {
	cat <<-EOF
	set -e
	modprobe veth
	ip netns del gl 2>/dev/null || true
	ip netns add gl
	ip link add glr type veth peer name glx netns gl
	ip link set glr mtu $1
	ip -n gl link set glx mtu $1
	ip addr add $GL_R/24 dev glr
	ip link set glr up
	ip -n gl link set lo up
	ip -n gl addr add $GL_X/24 dev glx
	# AF_XDP transmit completes frames a noqueue veth dropped (docs/facts/afxdp.md pitfall 6).
	ip netns exec gl tc qdisc replace dev glx root pfifo
	ip -n gl link set glx up
	rdma link add rxe1 type rxe netdev glr
	set +e
	rm -f /run/xrxe/glx.sock; : >$GL_LOG
	ip netns exec gl $GX/xrxed glx >>$GL_LOG 2>&1 & echo \$! >/share/glxrxed.pid
	for i in \$(seq 1200); do
		grep -q 'ready on' $GL_LOG && break
		kill -0 \$! 2>/dev/null || exit 1
		sleep 0.1
	done
	grep -q 'ready on' $GL_LOG || exit 1
	ibv_devinfo -v -d rxe1 >/share/gl.rdev 2>&1
	ip netns exec gl $GX/xrxe run -- ibv_devinfo -v -d xrxe_glx >/share/gl.xdev 2>&1
	ip netns exec gl $GX/xrxe stats glx --json >/share/gl.stats 2>&1
	exit 0
	EOF
}
# The xrxed stopped by SIGTERM (gone, a zombie of PID 1 counts as gone; the
# time in ms), then glx without an XDP program; the link and rxe1 removed.
# shellcheck disable=SC2016 # expanded in the guest
GL_STOP='p=$(cat /share/glxrxed.pid); t0=$(date +%s%N); kill $p
for i in $(seq 600); do grep -qs "^State:.*[^Z] (" /proc/$p/status || break; sleep 0.05; done
grep -qs "^State:.*[^Z] (" /proc/$p/status && exit 1
echo $((($(date +%s%N) - t0) / 1000000))
ip -n gl -d link show glx'
GL_DOWN='rdma link del rxe1; ip netns del gl; ip link del glr 2>/dev/null; true'
GL_XPRE="ip netns exec gl $GX/xrxe run --"

# gl_row DESC COMMAND...: COMMAND (fill's template) run once with the guest's
# xrxe as server and its rxe as client, then the other way round.
gl_row() {
	local desc=$1
	shift
	[[ -n ${INTEROP_ONLY:-} && ! "$CFG: $desc" =~ $INTEROP_ONLY ]] && return 0
	ROWS=$((ROWS + 1))
	local tmpl="$*" log
	log=$TMP/gl_$(echo "$CFG $desc" | tr -c 'A-Za-z0-9_\n' '_')
	side "$CFG: $desc (guest xrxe server, guest rxe client)" gl_xrxe_serves "$log.rxe-client" "$log.xrxe-server"
	side "$CFG: $desc (guest rxe server, guest xrxe client)" gl_rxe_serves "$log.xrxe-client" "$log.rxe-server"
}

# gl_side SERVER CLIENT NSEXEC SLOG CLOG: one guest job: the server, a wait
# until it listens on PORT (in its namespace: NSEXEC), the client.
gl_side() {
	local rc
	guest_submit "timeout $T $1 >/share/jobs/\$JOB.srv 2>&1 & spid=\$!
ok=0
for i in \$(seq 600); do
	$3 ss -Hltn 'sport = :$PORT' | grep -q . && { ok=1; break; }
	kill -0 \$spid 2>/dev/null || break
	sleep 0.1
done
if [ \$ok = 1 ]; then timeout $T $2 >/share/jobs/\$JOB.cli 2>&1; rc=\$?; else echo 'server did not listen' >>/share/jobs/\$JOB.srv; rc=1; fi
[ \$rc = 0 ] || kill \$spid 2>/dev/null
wait \$spid || rc=1
exit \$rc"
	guest_wait "$JOB" $((2 * T + 90))
	rc=$?
	cp "$SHARE/jobs/$JOB.srv" "$4" 2>/dev/null
	cp "$SHARE/jobs/$JOB.cli" "$5" 2>/dev/null
	[ "$rc" = 124 ] && echo "the guest job did not end in time" >>"$5"
	return "$rc"
}

# The guest's xrxe serves, its rxe connects (gl_row's tmpl and log).
gl_xrxe_serves() {
	PORT=$((PORT + 1))
	gl_side "$GL_XPRE $(fill "$tmpl" xrxe_glx "$GL_XGID" /share/bin)" \
		"$(fill "$tmpl" rxe1 "$GL_RGID" /share/bin) $GL_X" "ip netns exec gl" \
		"$log.xrxe-server" "$log.rxe-client"
}

# The guest's rxe serves, its xrxe connects.
gl_rxe_serves() {
	PORT=$((PORT + 1))
	gl_side "$(fill "$tmpl" rxe1 "$GL_RGID" /share/bin)" \
		"$GL_XPRE $(fill "$tmpl" xrxe_glx "$GL_XGID" /share/bin) $GL_R" "" \
		"$log.rxe-server" "$log.xrxe-client"
}

# guest_local MTU: the link at MTU, both devices, the rows, the xrxed stopped.
guest_local() {
	local mtu=$1 out rmtu xmtu t0=$SECONDS
	local cfg="guest xrxe <-> guest rxe, veth MTU $mtu"
	[[ -n ${INTEROP_ONLY:-} && ! "$cfg" =~ $INTEROP_ONLY ]] && return 0
	rm -f "$SHARE"/gl.*
	if ! guest_run "$(gl_setup "$mtu")" >"$TMP/gl_setup.$mtu.log" 2>&1; then
		tap_fail "$cfg: veth pair in the guest, rxe1 on one end, xrxed on the other (namespace gl)"
		tap_diag "$(tail -n 15 "$TMP/gl_setup.$mtu.log" "$SHARE/glxrxed.log" 2>&1)"
		guest_run "$GL_DOWN" >/dev/null 2>&1
		return 1
	fi
	GL_RGID=$(gid_index "$(cat "$SHARE/gl.rdev" 2>&1)" "::ffff:$GL_R")
	GL_XGID=$(gid_index "$(cat "$SHARE/gl.xdev" 2>&1)" "::ffff:$GL_X")
	rmtu=$(awk '/active_mtu/ {print $2; exit}' "$SHARE/gl.rdev" 2>/dev/null)
	xmtu=$(awk '/active_mtu/ {print $2; exit}' "$SHARE/gl.xdev" 2>/dev/null)
	PMTU=$rmtu
	[ "${xmtu:-0}" -lt "${rmtu:-0}" ] && PMTU=$xmtu
	if [ -z "$GL_RGID" ] || [ -z "$GL_XGID" ] || [ -z "$PMTU" ]; then
		tap_fail "$cfg: rxe1 and xrxe_glx up, their IPv4 GIDs and active MTUs"
		tap_diag "rxe1 gid '$GL_RGID' mtu '$rmtu'; xrxe_glx gid '$GL_XGID' mtu '$xmtu'"
		tap_diag "$(tail -n 8 "$SHARE/gl.rdev" "$SHARE/gl.xdev" 2>&1)"
	else
		tap_ok "$cfg: rxe1 GID[$GL_RGID] active MTU $rmtu, xrxe_glx GID[$GL_XGID] active MTU $xmtu [$((SECONDS - t0)) s]"
		python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["daemon"]["port"]
print("guest xrxed on glx: xdp_mode %s, native_refused %d, xsk_multi_buffer %d, max_path_mtu %d" % (
    p["xdp_mode"], p["xdp_native_refused"], p["xsk_multi_buffer"], p["max_path_mtu"]))' "$SHARE/gl.stats" 2>&1 | sed 's/^/# /'
		CFG="$cfg, pmtu $PMTU ipv4"
		GUEST_SETUP=$(gl_setup "$mtu")
		# The RC rows' 268 ms local ACK timeout: as in the guest-xrxe rows
		# above (both peers share one TCG CPU; docs/interop.md).
		gl_row "ibv_rc_pingpong -s 4096 -n 20" ibv_rc_pingpong -d @DEV@ -g @GID@ -m "$PMTU" -s 4096 -n 20 -p @PORT@
		gl_row "ibv_ud_pingpong -s $PMTU -n 20" ibv_ud_pingpong -d @DEV@ -g @GID@ -s "$PMTU" -n 20 -p @PORT@
		gl_row "ib_write_bw -s 65536 -n $PERF_ITERS" ib_write_bw -s 65536 -d @DEV@ -x @GID@ -m "$PMTU" -u 16 -n $PERF_ITERS -F -p @PORT@
		gl_row "rc_integrity -m 1 -a 100 -t 16" @BIN@/rc_integrity -d @DEV@ -g @GID@ -m 1 -a 100 -s $((mtu + 11)) -t 16 -M "$PMTU" -p @PORT@
		GUEST_SETUP=""
	fi
	if out=$(guest_run "$GL_STOP") && ! grep -q 'prog/xdp\|xdpgeneric\|xdp id' <<<"$out"; then
		tap_ok "$cfg: the guest's xrxed on glx stopped on SIGTERM in $(head -n 1 <<<"$out") ms, no XDP program left on glx"
	else
		tap_fail "$cfg: the guest's xrxed on glx stopped on SIGTERM, no XDP program left on glx"
		tap_diag "$out"
		tap_diag "$(tail -n 5 "$SHARE/glxrxed.log")"
		guest_run "kill -9 \$(cat /share/glxrxed.pid)" >/dev/null 2>&1
	fi
	cp "$SHARE/glxrxed.log" "$TMP/glxrxed.$mtu.log" 2>/dev/null
	guest_run "$GL_DOWN" >/dev/null 2>&1
}
GL_T0=$SECONDS
guest_local 1500
[ "${INTEROP_QUICK:-0}" = 1 ] || guest_local 9000
tap_diag "guest xrxe <-> guest rxe rows: $((SECONDS - GL_T0)) s"

# --- net/xdp_coexist in this guest ----------------------------------------------
# tests/net/xdp_coexist.sh (xdp-filter and xrxe on one interface through
# libxdp's dispatcher) needs freplace programs, which this CI host's kernel
# lacks and Debian's 6.1 has: it runs here, in this boot, as a guest job
# (its own namespaces and veth pairs; nothing of the rows above is left up),
# and its TAP lines are this script's, each marked "xdp_coexist (guest)".
# On a host kernel with freplace it also runs by itself in the net suite.
coexist_in_guest() {
	local desc="guest: net/xdp_coexist" rc l n=0 t0=$SECONDS
	[[ -n ${INTEROP_ONLY:-} && ! $desc =~ $INTEROP_ONLY ]] && return 0
	guest_submit "modprobe veth; cd /run/xrxe-src &&
XRXE_COEXIST_IN_GUEST=1 XRXE_ROOT=/run/xrxe-src BUILD=$BUILD bash tests/net/xdp_coexist.sh"
	guest_wait "$JOB" 1200
	rc=$?
	while IFS= read -r l; do
		case $l in
		"ok - "*) echo "ok - xdp_coexist (guest): ${l#ok - }"; n=$((n + 1)) ;;
		"not ok - "*) tap_fail "xdp_coexist (guest): ${l#not ok - }"; n=$((n + 1)) ;;
		"#"*) echo "$l" ;;
		*) echo "#   $l" ;;
		esac
	done <"$SHARE/jobs/$JOB.out"
	if [ "$rc" != 0 ] && ! grep -q '^not ok ' "$SHARE/jobs/$JOB.out"; then
		tap_fail "xdp_coexist (guest): the script ended with status $rc$([ "$rc" = 124 ] && echo ' (did not end in 1200 s)')"
	fi
	[ "$n" -gt 0 ] || tap_fail "xdp_coexist (guest): the script reported something"
	tap_diag "xdp_coexist in the guest: $n lines, $((SECONDS - t0)) s"
}
coexist_in_guest

# --- rsockets against rdma-core's ----------------------------------------------------
# (tests/interop/lib/rsockets_rows.sh: rstream and rcopy both ways, on rxe0
# at MTU 1500, where the guest-xrxe rows left the links.)
RS_T0=$SECONDS
rsockets_rows
tap_diag "rsockets rows: $((SECONDS - RS_T0)) s"

# --- 1% loss each way -----------------------------------------------------------
# Egress: netem on eth0. Ingress: eth0's ingress redirected to an ifb whose
# root netem drops. The guest's RoCE sees both; retransmission, NAKs and
# duplicates must interoperate.
LOSS_SETUP='set -e
tc qdisc replace dev eth0 root netem loss 1%
ip link add ifb0 type ifb; ip link set ifb0 up
tc qdisc add dev eth0 handle ffff: ingress
tc filter add dev eth0 parent ffff: matchall action mirred egress redirect dev ifb0
tc qdisc add dev ifb0 root netem loss 1%'
if out=$(guest_run "$LOSS_SETUP" 2>&1); then
	# Kept for diagnosis (INTEROP_KEEP); not checked: frames lost on the
	# guest's ingress were captured before the drop.
	ip netns exec "$NS_BR" dumpcap -q -i br0 -w "$TMP/loss.pcapng" >>"$TMP/dumpcap.log" 2>&1 &
	DUMPCAP_PID=$!
	netns_at_exit "kill $DUMPCAP_PID"
	capture_started "$TMP/loss.pcapng" "$DUMPCAP_PID"
	GUEST_SETUP=$LOSS_SETUP
	RXE_ACC="" RXE_BASE=$(rxe_counters) DROP_ACC=0 DROP_BASE=$(link_drops)
	rm -f "$TMP/cm_counts.0"
	ROWS=0
	for c in "1500 4" "9000 6"; do
		[ "${INTEROP_QUICK:-0}" = 1 ] && [ "$c" != "1500 4" ] && continue
		read -r mtu ipv <<<"$c"
		config "$mtu" "$ipv" || continue
		CFG="$CFG 1% loss"
		# Not ibv_rc_pingpong: its server exits as soon as its last
		# receive completes, so when the ACK of the client's last SEND
		# is lost nobody is left to answer the retransmission and the
		# client waits forever (rxe retries without end). perftest and
		# rc_integrity meet on the side channel before tearing down.
		for t in "ib_send_bw -s 65536" "ib_read_bw -s 65536"; do
			# shellcheck disable=SC2086
			row rc "$t -n $PERF_ITERS" $t -d @DEV@ -x @GID@ -n $PERF_ITERS -F -p @PORT@
		done
		# A local ACK timeout of 134 ms (exponent 15) instead of 67 ms:
		# xrxe gives up after 7 retries as IBA says (rxe never does,
		# docs/facts/rxe.md §5.4.4), and a TCG guest on a loaded host, fed a
		# go-back-N window of retransmissions, can stall for more than
		# 8 x 67 ms (seen once in four runs at load 7 on 2 cores).
		integrity 2 $((mtu + ipv + 1)) 15
	done
	L0="" L1=$(counters_add "$RXE_ACC" "$RXE_BASE" "$(rxe_counters)")
	kill -INT "$DUMPCAP_PID" 2>/dev/null
	wait "$DUMPCAP_PID" 2>/dev/null
	drops=$(guest_run 'tc -s qdisc show dev eth0; tc -s qdisc show dev ifb0' |
		awk '/^qdisc netem/ {q = 1; next} /^qdisc/ {q = 0} q && match($0, /dropped [0-9]+/) {
			s += substr($0, RSTART + 8, RLENGTH - 8)} END {print s + 0}')
	retx=""
	for k in duplicate_request out_of_seq_request rcvd_seq_err completer_retry_err; do
		v0=$(awk -v k="$k" '$1 == k {print $2}' <<<"$L0")
		v1=$(awk -v k="$k" '$1 == k {print $2}' <<<"$L1")
		retx+=" $k+$((${v1:-0} - ${v0:-0}))"
	done
	if [ "$ROWS" = 0 ]; then
		tap_diag "loss runs: none selected (INTEROP_ONLY)"
	elif [ "${drops:-0}" -gt 0 ]; then
		tap_ok "loss runs: netem dropped $drops frames; rxe0 recovered:$retx"
	else
		tap_fail "loss runs: netem dropped frames (dropped: '$drops')"
	fi
else
	tap_fail "1% loss set up in the guest (netem, ifb)"
	tap_diag "$out"
fi

touch "$SHARE/jobs/stop"
if [ -n "${INTEROP_KEEP:-}" ]; then
	mkdir -p "$INTEROP_KEEP" && cp -r "$TMP"/. "$INTEROP_KEEP"/
fi
[ "$REBOOTS" = 0 ] || tap_diag "the guest's network died and a fresh guest took over $REBOOTS time(s), in:$REBOOTED_IN"
tap_diag "matrix: $PASS passed, $FAILED failed; clean runs $((CLEAN_END - T0)) s, total $((SECONDS - T0)) s"
exit 0
