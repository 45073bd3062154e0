#!/usr/bin/env bash
# UCX and MPI on xrxe, unmodified and without UCX_/OMPI_ workaround
# variables, across two network namespaces as two hosts (docs/ucx-mpi.md):
#  - the device view `xrxe run` gives (sysfs, /dev/infiniband): only this
#    namespace's device, GID types and netdevs, the port rate from ethtool;
#    nothing left on the host;
#  - `ucx_info -d` lists the device with rc_verbs and ud_verbs;
#  - ucx_perftest tag_lat, tag_bw, ucp_put_bw, ucp_get over
#    UCX_TLS=rc_verbs,ud_verbs and over ud_verbs alone (numbers as comments);
#  - Open MPI over UCX (--mca pml ucx): mpirun -np 2 and -np 4 (two ranks per
#    namespace) of tests/mpi/mpi_check.c (ping-pong 1 B - 4 MiB, Allreduce,
#    Alltoall, every byte checked), and mpi4py's Allreduce; the daemons'
#    counters show the bytes went through xrxe;
#  - MPICH (Debian 12 builds it ch4:ucx) -n 2 of the same program;
#  - as root, and as an ordinary user (nobody): the view, ucx_info, perftest,
#    and the user's own mpirun, which starts its ranks on the other "host"
#    through tests/mpi/hostd.py, a stand-in for sshd (root, gives each caller
#    processes as its own uid only).
#
#   tests/net/ucx_mpi.sh        (BUILD=build-san etc. for another build;
#                                UCX_MPI_QUICK=1: root only, fewer runs)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
# Debian's tools and interpreter (python3-mpi4py is installed for it).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH

BUILD=${BUILD:-build}
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$XRXE_ROOT/$BUILD ;; esac
XRXED=$BDIR/bin/xrxed
XRXE=$BDIR/bin/xrxe
AGENT=$XRXE_ROOT/tests/mpi/netns_agent.sh
T=${UCX_MPI_TIMEOUT:-150} # per program; a hang is one failure, not a stuck CI
USER_NAME=nobody

if [ "$(id -u)" -ne 0 ]; then
	tap_skip "UCX and MPI over xrxe" "needs root (namespaces)"
	exit 0
fi
if [ ! -x "$XRXED" ] || [ ! -x "$XRXE" ]; then
	tap_fail "xrxed and xrxe are built ($BDIR/bin; make)"
	exit 1
fi
if ! command -v ucx_info >/dev/null || ! command -v ucx_perftest >/dev/null; then
	tap_skip "UCX and MPI over xrxe" "ucx-utils is not installed (scripts/deps.sh)"
	exit 0
fi
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"
# shellcheck source=tests/lib/verbs.sh
source "$XRXE_ROOT/tests/lib/verbs.sh"
netns_tmpdir TMP
chmod 755 "$TMP" # the ordinary user runs programs built here
# ... and xrxe, its shims, the agent and the Python job: copies here, since
# the checkout may not be readable by that user (a CI clone in a 0700
# directory). xrxe finds its shims at ../lib/xrxe from its own binary.
mkdir -p "$TMP/x/bin" "$TMP/x/lib/xrxe" "$TMP/x/mpi"
cp "$XRXE" "$TMP/x/bin/xrxe" && cp -P "$BDIR"/lib/xrxe/lib* "$TMP/x/lib/xrxe/" &&
	cp "$AGENT" "$XRXE_ROOT/tests/mpi/allreduce.py" "$XRXE_ROOT/tests/mpi/mpi_check.c" \
		"$XRXE_ROOT/tests/mpi/hostd.py" "$TMP/x/mpi/" ||
	{ tap_fail "copying xrxe and the MPI files to $TMP"; exit 1; }
chmod -R a+rX "$TMP/x"
XRXE=$TMP/x/bin/xrxe AGENT=$TMP/x/mpi/netns_agent.sh MPI_DIR=$TMP/x/mpi
netns_pair 47 9000
# UCX 1.13 keeps memory-domain names in 16 bytes (UCT_MD_NAME_MAX) and cuts
# longer ones, then finds no such device: xrxe_IFACE must stay within 15
# characters, so the veth ends get short names (docs/ucx-mpi.md).
for end in A B; do
	ns_var=NS_$end if_var=IF_$end new=u$$${end,,}
	ip -n "${!ns_var}" link set "${!if_var}" down &&
		ip -n "${!ns_var}" link set "${!if_var}" name "$new" &&
		ip -n "${!ns_var}" link set "$new" up || { tap_fail "renaming the veth ends"; exit 1; }
	printf -v "IF_$end" '%s' "$new"
done
host_had_ib=0 host_had_dev=0
[ -e /sys/class/infiniband ] && host_had_ib=1
[ -e /dev/infiniband ] && host_had_dev=1
if ! start_daemons; then
	tap_fail "xrxed started in both namespaces"
	tap_diag "$(tail -n 20 "$TMP"/xrxed-*.log)"
	exit 1
fi

# result DESC DIAG: ok or not ok by the status of the command just before.
result() {
	local rc=$?
	if [ $rc -eq 0 ]; then
		tap_ok "$1"
	else
		tap_fail "$1"
		tap_diag "$2"
	fi
}

# as USER CMD...: CMD as root, or as the ordinary user for USER=user.
# shellcheck disable=SC2317 # also runs in the namespaces, through declare -f
as() {
	local who=$1
	shift
	if [ "$who" = user ]; then
		setpriv --reuid="$USER_NAME" --regid="$(id -g "$USER_NAME")" --clear-groups \
			env HOME=/tmp "$@"
	else
		"$@"
	fi
}

# The daemon's AF_XDP receive bytes (every queue).
rx_bytes() {
	ns_exec "$1" "$XRXE" stats "$2" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)["daemon"]
print(sum(v.get("rx_bytes", 0) for k, v in d.items() if k.startswith("xsk")))' 2>/dev/null || echo 0
}

# --- the device view -----------------------------------------------------------
view_checks() {
	local who=$1 out dev=xrxe_$IF_A
	out=$(ns_exec "$NS_A" timeout "$T" bash -c "$(declare -f as); USER_NAME=$USER_NAME
		as $who '$XRXE' run -- sh -c '
		echo devices: \$(ls /sys/class/infiniband)
		ib=/sys/class/infiniband/$dev/ports/1
		echo type0: \$(cat \$ib/gid_attrs/types/0) ndev0: \$(cat \$ib/gid_attrs/ndevs/0)
		echo state: \$(cat \$ib/state) link_layer: \$(cat \$ib/link_layer)
		echo rate: \$(cat \$ib/rate)
		echo numa: \$(cat /sys/class/infiniband/$dev/device/numa_node)
		echo verbs: \$(cat /sys/class/infiniband_verbs/*/ibdev)
		for n in /dev/infiniband/uverbs*; do [ -c \$n ] && : <>\$n && echo node: rw-char; done
		echo uid: \$(id -u)
		ibv_devices'" 2>&1)
	grep -qx "devices: $dev" <<<"$out" &&
		grep -qx "verbs: $dev" <<<"$out" &&
		grep -qx "type0: RoCE v2 ndev0: $IF_A" <<<"$out" &&
		grep -qx "state: 4: ACTIVE link_layer: Ethernet" <<<"$out" &&
		grep -qx "numa: -1" <<<"$out" &&
		grep -qx "node: rw-char" <<<"$out" &&
		grep -q "^ *$dev " <<<"$out" && ! grep -q "xrxe_$IF_B" <<<"$out"
	result "$who: xrxe run's view: /sys/class/infiniband and infiniband_verbs hold this namespace's device only (GID type RoCE v2, netdev, ACTIVE, Ethernet), /dev/infiniband has a read-write character node" \
		"$out"
	# veth reports 10 Gb/s: 1X FDR10, as the kernel maps it for rxe
	grep -qx "rate: 10 Gb/sec (1X FDR10)" <<<"$out"
	result "$who: port rate from the netdev's ethtool speed (veth 10 Gb/s -> 10 Gb/sec (1X FDR10))" \
		"$(grep rate: <<<"$out")"
	if [ "$who" = user ]; then
		grep -qx "uid: $(id -u "$USER_NAME")" <<<"$out"
		result "user: the program keeps its own uid inside the view (a user namespace mapping only it)" \
			"$(grep uid: <<<"$out")"
	fi
}

# --- ucx_info ------------------------------------------------------------------
ucx_info_check() {
	local who=$1 out
	out=$(ns_exec "$NS_A" timeout "$T" bash -c "$(declare -f as); USER_NAME=$USER_NAME
		as $who env UCX_LOG_LEVEL=debug '$XRXE' run -- ucx_info -d" 2>&1)
	# The memory domain of our device, then its transports.
	awk -v md="xrxe_$IF_A" '
		/^# Memory domain:/ { on = ($4 == md) }
		on && /Transport:/ { print $3 }' <<<"$out" >"$TMP/tls.$who"
	grep -qx rc_verbs "$TMP/tls.$who" && grep -qx ud_verbs "$TMP/tls.$who"
	result "$who: ucx_info -d lists xrxe_$IF_A with rc_verbs and ud_verbs" \
		"$(grep -E 'Memory domain|Transport|Device' <<<"$out" | head -n 30)"
	tap_diag "transports on xrxe_$IF_A: $(tr '\n' ' ' <"$TMP/tls.$who")"
	# The GID UCX picks: RoCE v2 over IPv4, slot 1 (0 is the link-local
	# one; the shim's order: link-local, IPv4, IPv6).
	grep -q "xrxe_$IF_A:1 using gid_index 1\$" <<<"$out"
	result "$who: UCX picks GID index 1, the RoCE v2 IPv4 GID" \
		"$(grep -E 'gid_index|adding gid' <<<"$out" | head -n 6)"
	# UCX's bandwidth model comes from the port speed: 10 Gb/s, not 2.5.
	local bw
	bw=$(awk -v md="xrxe_$IF_A" '/^# Memory domain:/ { on = ($4 == md) }
		on && /bandwidth:/ { split($3, a, "/"); print int(a[1]); exit }' <<<"$out")
	[ "${bw:-0}" -ge 1000 ]
	result "$who: UCX's bandwidth for the device follows the link speed (${bw:-?} MB/s >= 1000)" \
		"$(grep bandwidth: <<<"$out" | head -n 5)"
}

# --- ucx_perftest ------------------------------------------------------------------
PORT=$((20000 + $$ % 20000))
perftest() {
	local who=$1 tls=$2 test=$3 size=$4 n=$5 desc log spid
	desc="$who: ucx_perftest $test ${size} B over UCX_TLS=$tls"
	log=$TMP/perf.$who.$test.${tls//,/_}
	next_port
	ns_exec "$NS_A" timeout "$T" bash -c "$(declare -f as); USER_NAME=$USER_NAME
		as $who env UCX_TLS=$tls '$XRXE' run -- ucx_perftest -p $PORT" >"$log.server" 2>&1 &
	spid=$!
	if ! wait_listen "$NS_A" "$PORT"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		tap_fail "$desc (server did not start)"
		tap_diag "$(tail -n 10 "$log.server")"
		return
	fi
	ns_exec "$NS_B" timeout "$T" bash -c "$(declare -f as); USER_NAME=$USER_NAME
		as $who env UCX_TLS=$tls '$XRXE' run -- ucx_perftest $IP4_A -p $PORT \
			-t $test -s $size -n $n" >"$log.client" 2>&1
	local crc=$?
	wait "$spid"
	local src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q '^Final:' "$log.client"; then
		tap_ok "$desc"
		# Final: iterations, latency typical/avg/overall (us), bandwidth
		# avg/overall (MB/s), message rate avg/overall (msg/s)
		awk '/^Final:/ { printf "#   %s iterations: latency %s us, bandwidth %s MB/s, %s msg/s\n", $2, $5, $7, $9 }' \
			"$log.client"
	else
		tap_fail "$desc (server exit $src, client exit $crc)"
		tap_diag "$(tail -n 8 "$log.server")"
		tap_diag "$(tail -n 12 "$log.client")"
	fi
}

# --- MPI -----------------------------------------------------------------------
MPI_HOSTS="ha=$NS_A hb=$NS_B"
# mpi_run WHO DESC MIN_BYTES CMD...: CMD's TAP lines (rank 0 prints them) pass
# through; ok if it exits 0 and ns A's daemon received MIN_BYTES or more
# while it ran (the job's bytes went through xrxe, not TCP or shared memory).
mpi_run() {
	local who=$1 desc=$2 min=$3 log before after rc
	shift 3
	log=$TMP/mpi.$(tr -c 'A-Za-z0-9\n' '_' <<<"$who-$desc")
	before=$(rx_bytes "$NS_A" "$IF_A")
	if [ "$who" = user ]; then # the user's own mpirun, launching through hostd
		ns_exec "$NS_A" timeout "$T" "${AS_USER[@]}" "$@" >"$log" 2>&1
	else
		XRXE_MPI_HOSTS=$MPI_HOSTS XRXE_MPI_XRXE=$XRXE \
			ns_exec "$NS_A" timeout "$T" "$@" >"$log" 2>&1
	fi
	rc=$?
	after=$(rx_bytes "$NS_A" "$IF_A")
	grep -E '^(ok|not ok) - ' "$log" | sed "s/^\(ok\|not ok\) - /\1 - $who: $desc: /"
	if [ $rc -eq 0 ] && ! grep -q '^not ok' "$log" && grep -q '^ok' "$log" &&
		[ $((after - before)) -ge "$min" ]; then
		tap_ok "$who: $desc: exit 0, $((after - before)) bytes through xrxe in namespace A"
	else
		tap_fail "$who: $desc (exit $rc, $((after - before)) bytes through xrxe, want >= $min)"
		tap_diag "$(grep -v '^ok' "$log" | tail -n 25)"
	fi
}

OMPI_RUN=(mpirun.openmpi --allow-run-as-root --mca plm_rsh_agent "$AGENT" --mca pml ucx)
# The ordinary user's mpirun: no --allow-run-as-root (Open MPI refuses to run
# as root without it, so the job also shows it did not), and its "ssh" is
# hostd's client.
HOSTD_SOCK=$TMP/hostd.sock
AS_USER=(setpriv --reuid="$USER_NAME" --regid="$(id -g "$USER_NAME" 2>/dev/null)" --clear-groups
	env HOME=/tmp)
# One executable as the user's "ssh" (MPICH's -launcher-exec takes a path).
printf '#!/bin/sh\nexec python3 %s/hostd.py connect %s "$@"\n' "$MPI_DIR" "$HOSTD_SOCK" \
	>"$MPI_DIR/hostd-ssh"
chmod 755 "$MPI_DIR/hostd-ssh"
OMPI_RUN_USER=(mpirun.openmpi --mca plm_rsh_agent "$MPI_DIR/hostd-ssh" --mca pml ucx)
XRXE_MPI_HOSTS=$MPI_HOSTS XRXE_MPI_XRXE=$XRXE python3 "$MPI_DIR/hostd.py" serve "$HOSTD_SOCK" \
	2>"$TMP/hostd.log" &
NETNS_PIDS+=("$!")
netns_wait_file "$HOSTD_SOCK" 10
result "hostd (the sshd stand-in) listens on $HOSTD_SOCK" "$(cat "$TMP/hostd.log")"

# hostd_check: through hostd an ordinary user gets processes as itself on the
# other host (its uid, that namespace's device), never root's.
hostd_check() {
	local out want
	want="$(id -u "$USER_NAME") hb xrxe_$IF_B"
	out=$(ns_exec "$NS_A" timeout "$T" "${AS_USER[@]}" python3 "$MPI_DIR/hostd.py" connect \
		"$HOSTD_SOCK" -x hb 'echo $(id -u) $(hostname) $(ls /sys/class/infiniband)' 2>&1)
	[ "$out" = "$want" ]
	result "user: hostd runs the user's command on host hb as the user (uid, host name, hb's device only)" \
		"got '$out', want '$want'"
	out=$(ns_exec "$NS_A" timeout "$T" "${AS_USER[@]}" python3 "$MPI_DIR/hostd.py" connect \
		"$HOSTD_SOCK" ha 'exit 7' 2>&1)
	[ $? -eq 7 ]
	result "user: hostd returns the remote command's exit status, as ssh does" "$out"
}
# A 1 B - 4 MiB ping-pong moves 8 MiB each way per iteration.
PP_BYTES=$((8 * 1024 * 1024))

for who in root user; do
	if [ "$who" = user ] && ! id "$USER_NAME" >/dev/null 2>&1; then
		tap_skip "ordinary user runs" "no user '$USER_NAME'"
		continue
	fi
	[ "$who" = user ] && [ -n "${UCX_MPI_QUICK:-}" ] && continue
	t0=$SECONDS
	view_checks "$who"
	ucx_info_check "$who"
	tap_diag "$who: view and ucx_info in $((SECONDS - t0)) s"
	t0=$SECONDS
	for tls in rc_verbs,ud_verbs ud_verbs; do
		perftest "$who" "$tls" tag_lat 8 200
		perftest "$who" "$tls" tag_bw 65536 100
		perftest "$who" "$tls" ucp_put_bw 65536 100
		perftest "$who" "$tls" ucp_get 65536 100
	done
	tap_diag "$who: ucx_perftest runs in $((SECONDS - t0)) s"
	t0=$SECONDS

	if ! command -v mpirun.openmpi >/dev/null || ! command -v mpicc.openmpi >/dev/null; then
		tap_skip "$who: Open MPI over UCX" "openmpi-bin / libopenmpi-dev are not installed (scripts/deps.sh)"
		continue
	fi
	if [ ! -x "$TMP/mpi_check.openmpi" ] &&
		! mpicc.openmpi -O2 -o "$TMP/mpi_check.openmpi" "$MPI_DIR/mpi_check.c" 2>"$TMP/mpicc.log"; then
		tap_fail "mpicc.openmpi builds tests/mpi/mpi_check.c"
		tap_diag "$(cat "$TMP/mpicc.log")"
		continue
	fi
	# root launches through netns_agent.sh directly (it may enter the
	# namespaces); the user runs its own mpirun, whose ssh is hostd's client
	if [ "$who" = user ]; then
		hostd_check
		ompi=("${OMPI_RUN_USER[@]}") how=" (the user's own mpirun, through hostd)"
		mpich_agent=$MPI_DIR/hostd-ssh
	else
		ompi=("${OMPI_RUN[@]}") how="" mpich_agent=$AGENT
	fi
	mpi_run "$who" "Open MPI -np 2 (one rank per namespace)$how" "$PP_BYTES" \
		"${ompi[@]}" -np 2 --host ha,hb "$TMP/mpi_check.openmpi" --iters 1
	mpi_run "$who" "Open MPI -np 4 (two ranks per namespace)$how" "$PP_BYTES" \
		"${ompi[@]}" -np 4 --host ha:2,hb:2 "$TMP/mpi_check.openmpi" --iters 1
	if python3 -c 'import mpi4py' 2>/dev/null; then
		mpi_run "$who" "mpi4py -np 2$how" 1 \
			"${ompi[@]}" -np 2 --host ha,hb python3 "$MPI_DIR/allreduce.py"
	else
		tap_skip "$who: mpi4py Allreduce" "python3-mpi4py is not installed (scripts/deps.sh)"
	fi
	# Debian 12's MPICH is built ch4:ucx (mpichversion: "MPICH Device:
	# ch4:ucx"), so it runs on UCX as well, not on libfabric; hydra's
	# proxies call back on the address of -iface.
	if command -v mpirun.mpich >/dev/null && command -v mpicc.mpich >/dev/null &&
		{ [ -x "$TMP/mpi_check.mpich" ] ||
			mpicc.mpich -O2 -o "$TMP/mpi_check.mpich" "$MPI_DIR/mpi_check.c" 2>"$TMP/mpicc.log"; }; then
		[ "$who" = root ] &&
			tap_diag "MPICH $(mpichversion 2>/dev/null | sed -n 's/^MPICH Device: *//p' | tr -d '\t')"
		mpi_run "$who" "MPICH -n 2$how" "$PP_BYTES" \
			mpirun.mpich -launcher ssh -launcher-exec "$mpich_agent" -iface "$IF_A" \
			-hosts ha,hb -n 2 "$TMP/mpi_check.mpich" --iters 1
	else
		tap_skip "$who: MPICH -n 2" "mpich / libmpich-dev are not installed (scripts/deps.sh)"
	fi
	tap_diag "$who: MPI jobs in $((SECONDS - t0)) s"
done

# --- nothing left behind ----------------------------------------------------------
stop_daemons
left=""
[ -e /sys/class/infiniband ] && [ $host_had_ib -eq 0 ] && left+=" /sys/class/infiniband"
[ -e /dev/infiniband ] && [ $host_had_dev -eq 0 ] && left+=" /dev/infiniband"
grep -q xrxe-view /proc/self/mountinfo && left+=" a view mount"
for ns in "$NS_A" "$NS_B"; do
	ns_exec "$ns" grep -q xrxe-view /proc/self/mountinfo && left+=" a view mount in $ns"
done
[ -z "$left" ]
result "no view left on the host or in the namespaces (mounts, /sys/class/infiniband, /dev/infiniband)" \
	"left:$left"
exit 0
