#!/usr/bin/env bash
# systemd/xrxed@.service: `systemd-analyze verify` accepts it (with the man
# pages it names), and its ExecStart line, run as systemd would run it, brings
# up a device that ibv_rc_pingpong uses. CI has no systemd as PID 1, so the
# unit's settings are applied here by hand, each with the tool that does the
# same thing:
#
#   NetworkNamespacePath=      nsenter --net=/run/netns/NS (setns of the net
#                              namespace only, as systemd does)
#   EnvironmentFile=           the file's variables, $VAR split into words
#   CapabilityBoundingSet=,    setpriv --bounding-set, --no-new-privs
#   NoNewPrivileges=
#   LimitMEMLOCK=              prlimit --memlock
#   Type=notify                a NOTIFY_SOCKET datagram socket: READY=1 must come,
#                              and only once the device answers; STOPPING=1 on SIGTERM
#   ExecStartPost=, ExecReload=  run the same way: XRXE_CC applied, then changed
#                              by a reload
#
#   tests/net/systemd_unit.sh    (root)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
tap_require_root "net/systemd_unit"
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"

BUILD=${BUILD:-build}
B=$XRXE_ROOT/$BUILD/bin
UNIT=$XRXE_ROOT/systemd/xrxed@.service
for p in systemd-analyze setpriv prlimit nsenter ibv_rc_pingpong python3; do
	command -v $p >/dev/null || { tap_fail "$p is installed (make deps)"; exit 1; }
done
[ -x "$B/xrxed" ] && [ -d "$XRXE_ROOT/$BUILD/man" ] ||
	{ tap_fail "xrxed and its man pages are built (make all man)"; exit 1; }
netns_reap_stale
netns_tmpdir TMP
netns_pair 1 1500

# The unit as installed, with the build's programs and a test settings file.
CONF=$TMP/xrxed-$IF_B.conf
sed -e "s|/usr/sbin/xrxed|$B/xrxed|; s|/usr/bin/xrxe |$B/xrxe |g" \
	-e "s|/etc/xrxe/xrxed-%i.conf|$CONF|" "$UNIT" >"$TMP/xrxed@.service"
ln -s "xrxed@.service" "$TMP/xrxed@$IF_B.service"
mkdir -p "$TMP/man/man7" "$TMP/man/man8"
cp "$XRXE_ROOT/$BUILD"/man/*.7 "$TMP/man/man7/" && cp "$XRXE_ROOT/$BUILD"/man/*.8 "$TMP/man/man8/"

tap_check "systemd-analyze verify xrxed@IFACE.service (with its man pages)" \
	env MANPATH="$TMP/man" systemd-analyze verify "$TMP/xrxed@$IF_B.service"
sec=$(systemd-analyze security --offline=yes "$TMP/xrxed@$IF_B.service" 2>/dev/null |
	sed -n 's/.*Overall exposure level for [^:]*: //p')
tap_diag "systemd-analyze security: exposure $sec"

# key NAME: the unit's value for NAME (the last one), %i expanded.
key() { sed -n "s/^$1=//p" "$TMP/xrxed@.service" | tail -n 1 | sed "s/%i/$IF_B/g; s/%I/$IF_B/g"; }
tap_check "Type=notify, a journal identifier, NoNewPrivileges" bash -c \
	'[ "$1" = notify ] && [ "$2" = "xrxed-$4" ] && [ "$3" = yes ]' _ \
	"$(key Type)" "$(key SyslogIdentifier)" "$(key NoNewPrivileges)" "$IF_B"
CAPS=$(key CapabilityBoundingSet)
tap_check "CapabilityBoundingSet is exactly what xrxed(8) lists" test \
	"$(tr ' ' '\n' <<<"$CAPS" | sort | tr '\n' ' ')" = \
	"CAP_BPF CAP_IPC_LOCK CAP_NET_ADMIN CAP_NET_RAW CAP_PERFMON CAP_SYS_ADMIN CAP_SYS_NICE "

# The peer: a plain daemon on A.
ns_bg "$NS_A" sh -c "exec '$B/xrxed' '$IF_A' >>'$TMP/xrxed-a.log' 2>&1"
netns_wait_file "/run/xrxe/$IF_A.sock" 30 || tap_fail "xrxed runs on A"

# systemd's notification socket.
NOTIFY=$TMP/notify.sock
python3 - "$NOTIFY" "$TMP/notify.log" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        msg = s.recv(4096).decode(errors="replace")
        log.write(msg.replace("\n", " ") + "\n")
EOF
NOTIFY_PID=$!
NETNS_PIDS+=("$NOTIFY_PID")
netns_wait_file "$NOTIFY" 10 || tap_fail "the notification socket listens"

# LimitMEMLOCK=infinity: systemd (PID 1) may raise the hard limit; a test
# without CAP_SYS_RESOURCE cannot, and then relies on CAP_IPC_LOCK, which
# the unit keeps and which exempts AF_XDP memory from the limit too.
PRLIMIT=(prlimit --memlock=unlimited)
if [ "$(key LimitMEMLOCK)" != infinity ]; then
	tap_fail "LimitMEMLOCK=infinity"
elif ! prlimit --memlock=unlimited true 2>/dev/null; then
	tap_diag "cannot raise RLIMIT_MEMLOCK here (no CAP_SYS_RESOURCE): running with $(ulimit -l) KiB and CAP_IPC_LOCK"
	PRLIMIT=()
fi

# run_unit_cmd KEY: the unit's command line KEY as systemd would run it.
run_unit_cmd() {
	local line caps
	line=$(key "$1")
	caps=$(tr ' ' '\n' <<<"$CAPS" | sed 's/^CAP_/+/' | tr 'A-Z' 'a-z' | paste -sd,)
	# Always called in a subshell (&, or tap_check's $(...)): exec makes
	# the command that subshell, so its pid is the daemon's.
	set -a
	# shellcheck disable=SC1090
	[ -e "$CONF" ] && source "$CONF"
	set +a
	# $VAR in a command line splits into words, as systemd does.
	eval "set -- $line"
	exec nsenter --net="/run/netns/$NS_B" "${PRLIMIT[@]}" \
		setpriv --bounding-set=-all,"$caps" --inh-caps=-all --no-new-privs \
		env NOTIFY_SOCKET="$NOTIFY" "$@"
}

cat >"$CONF" <<EOF
XRXED_OPTS="--queues 1"
XRXE_CC="np_min_time_between_cnps=8 rp_ai_rate=10"
EOF
run_unit_cmd ExecStart >"$TMP/xrxed-b.log" 2>&1 &
SVC=$!
NETNS_PIDS+=("$SVC")
for i in $(seq 600); do
	grep -q READY=1 "$TMP/notify.log" 2>/dev/null && break
	kill -0 $SVC 2>/dev/null || break
	sleep 0.1
done
tap_check "ExecStart under the unit's capabilities: READY=1 sent" grep -q READY=1 "$TMP/notify.log" ||
	tail -n 20 "$TMP/xrxed-b.log" | sed 's/^/#   /'
tap_check "at READY=1 the device is usable: xrxe run ibv_devices lists xrxe_$IF_B" bash -c \
	'nsenter --net="/run/netns/$1" "$2" run -- ibv_devices | grep -q "xrxe_$3"' _ "$NS_B" "$B/xrxe" "$IF_B"
tap_check "ExecStartPost applies XRXE_CC" run_unit_cmd ExecStartPost
cc_val() { nsenter --net="/run/netns/$NS_B" "$B/xrxe" cc show "$IF_B" | awk -v n="$1" '$1 == n {print $2}'; }
tap_check "np_min_time_between_cnps is 8 and rp_ai_rate 10" bash -c '[ "$1" = 8 ] && [ "$2" = 10 ]' _ \
	"$(cc_val np_min_time_between_cnps)" "$(cc_val rp_ai_rate)"

# ibv_rc_pingpong between the service's device (server) and A.
PORT=18777
ip netns exec "$NS_B" timeout 60 "$B/xrxe" run -- ibv_rc_pingpong -g 1 -n 50 -s 4096 -p $PORT \
	>"$TMP/pp-server.log" 2>&1 &
spid=$!
for i in $(seq 200); do
	ip netns exec "$NS_B" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
	sleep 0.1
done
if ip netns exec "$NS_A" timeout 60 "$B/xrxe" run -- ibv_rc_pingpong -g 1 -n 50 -s 4096 -p $PORT "$IP4_B" \
	>"$TMP/pp-client.log" 2>&1 && wait $spid; then
	tap_ok "ibv_rc_pingpong uses the service's device (50 x 4 KiB)"
else
	tap_fail "ibv_rc_pingpong uses the service's device"
	tail -n 5 "$TMP/pp-server.log" "$TMP/pp-client.log" "$TMP/xrxed-b.log" | sed 's/^/#   /'
fi

sed -i 's/np_min_time_between_cnps=8/np_min_time_between_cnps=16/' "$CONF"
tap_check "ExecReload (systemctl reload) re-reads the file and applies it" run_unit_cmd ExecReload
tap_check "np_min_time_between_cnps is now 16" test "$(cc_val np_min_time_between_cnps)" = 16
tap_check "the daemon still runs after the reload" kill -0 $SVC

kill -TERM $SVC
wait $SVC
rc=$?
tap_check "SIGTERM: exit status 0" test $rc = 0
tap_check "SIGTERM: STOPPING=1 sent" grep -q STOPPING=1 "$TMP/notify.log"
tap_check "SIGTERM: its XDP program is gone" bash -c \
	'ip netns exec "$1" "$2" status "$3" | grep -q "no XDP program"' _ "$NS_B" "$B/xrxe" "$IF_B"
tap_check "journald gets plain lines on stderr (no terminal codes)" bash -c \
	'grep -q "ready on" "$1" && ! grep -q $'"'"'\e'"'"' "$1"' _ "$TMP/xrxed-b.log"

# --- Non-root: the drop-in systemd/nonroot.conf -------------------------------
# User=xrxe with the unit's capabilities as ambient ones, run as systemd would:
#   User=, Group=            setpriv --reuid/--regid (a uid no one uses: CI
#                            has no xrxe user; the drop-in's names become it)
#   AmbientCapabilities=     setpriv --inh-caps/--ambient-caps
#   RuntimeDirectory=xrxe    a /run/xrxe the user owns: a tmpfs in a private
#                            mount namespace (the host's stays as it is)
#   ExecStartPre=+           as root, in that namespace, over a fresh bpffs
#                            at /sys/fs/bpf (mode 0700, as systemd mounts it)
#   ExecStartPost=!, ExecReload=!   as root
DROPIN=$XRXE_ROOT/systemd/nonroot.conf
XUID=64170
mkdir -p "$TMP/xrxed@.service.d"
sed -e "s|/usr/bin/xrxe |$B/xrxe |g" "$DROPIN" >"$TMP/xrxed@.service.d/nonroot.conf"
# (verify only warns about an unknown or malformed setting: those fail here)
tap_check "systemd-analyze verify with the non-root drop-in, no setting ignored" bash -c \
	'out=$(env MANPATH="$1/man" SYSTEMD_UNIT_PATH="$1:" systemd-analyze verify "$1/xrxed@$2.service" 2>&1)
	rc=$?; echo "$out"; [ $rc = 0 ] && ! grep -qiE "unknown|ignoring|invalid" <<<"$out"' _ "$TMP" "$IF_B"
# dkey NAME: the drop-in's values for NAME (every line; an empty one resets).
dkey() { sed -n "s/^$1=//p" "$TMP/xrxed@.service.d/nonroot.conf" | sed "s/%i/$IF_B/g"; }
AMB=$(dkey AmbientCapabilities | tr ' ' '\n' | sort)
tap_check "User=xrxe; the ambient capabilities are the bounding set's, CAP_SYS_NICE aside" bash -c \
	'[ "$1" = xrxe ] && [ "$2" = "$3" ]' _ "$(dkey User)" "$(tr '\n' ' ' <<<"$AMB")" \
	"$(tr ' ' '\n' <<<"$CAPS" | grep -v CAP_SYS_NICE | sort | tr '\n' ' ')"
amb=$(sed 's/^CAP_/+/' <<<"$AMB" | tr 'A-Z' 'a-z' | paste -sd,)
bset=$(tr ' ' '\n' <<<"$CAPS" | sed 's/^CAP_/+/' | tr 'A-Z' 'a-z' | paste -sd,)

# The private mount namespace: held by a sleep, entered by every command.
unshare --mount --propagation private sleep 1000000 &
HOLD=$!
NETNS_PIDS+=("$HOLD")
# Ready once unshare has made the namespace and exec'd the sleep (not a
# fixed half second).
for _ in $(seq 100); do
	[ "$(cat "/proc/$HOLD/comm" 2>/dev/null)" = sleep ] && break
	sleep 0.05
done
MNT=/proc/$HOLD/ns/mnt
nsx() { nsenter --mount="$MNT" --net="/run/netns/$NS_B" "$@"; }
export -f nsx
export MNT NS_B
if ! nsenter --mount="$MNT" sh -c "mkdir -p /run/xrxe &&
	mount -t tmpfs -o mode=0755,uid=$XUID,gid=$XUID xt-run /run/xrxe &&
	mount -t bpf -o mode=700 xt-nonroot-bpf /sys/fs/bpf"; then
	tap_fail "a private /run/xrxe and bpffs for the non-root service"
	exit 1
fi
chmod 755 "$TMP"
chmod 666 "$NOTIFY"
: >"$TMP/notify.log"

# drop_cmd KEY: the drop-in's last KEY line as systemd runs it: "+" as root
# without the unit's limits, "!" as root within the capability bounding set
# (User= and AmbientCapabilities= skipped); the names xrxe become the test uid.
drop_cmd() {
	local line lim=()
	line=$(dkey "$1" | tail -n 1 | sed "s/xrxe:xrxe/$XUID:$XUID/g; s/-o xrxe -g xrxe/-o $XUID -g $XUID/g")
	case $line in
	+*) line=${line#+} ;;
	!*) line=${line#!} lim=(setpriv --bounding-set=-all,"$bset" --inh-caps=-all --no-new-privs) ;;
	*) return 1 ;;
	esac
	set -a
	# shellcheck disable=SC1090
	[ -e "$CONF" ] && source "$CONF"
	set +a
	eval "set -- $line"
	exec nsenter --mount="$MNT" --net="/run/netns/$NS_B" "${lim[@]}" env NOTIFY_SOCKET="$NOTIFY" "$@"
}
tap_check "ExecStartPre=+ readies the bpffs for the user" drop_cmd ExecStartPre

(
	line=$(key ExecStart)
	set -a
	# shellcheck disable=SC1090
	source "$CONF"
	set +a
	eval "set -- $line"
	exec nsenter --mount="$MNT" --net="/run/netns/$NS_B" "${PRLIMIT[@]}" \
		setpriv --reuid=$XUID --regid=$XUID --clear-groups --bounding-set=-all,"$bset" \
		--inh-caps=-all,"$amb" --ambient-caps=-all,"$amb" --no-new-privs \
		env NOTIFY_SOCKET="$NOTIFY" "$@"
) >"$TMP/xrxed-nr.log" 2>&1 &
NR=$!
NETNS_PIDS+=("$NR")
for i in $(seq 600); do
	grep -q READY=1 "$TMP/notify.log" 2>/dev/null && break
	kill -0 $NR 2>/dev/null || break
	sleep 0.1
done
tap_check "non-root ExecStart: READY=1 sent" grep -q READY=1 "$TMP/notify.log" ||
	tail -n 20 "$TMP/xrxed-nr.log" | sed 's/^/#   /'
tap_check "the daemon runs as uid $XUID with only the ambient capabilities" bash -c \
	'grep -q "^Uid:[[:space:]]$2[[:space:]]$2[[:space:]]" /proc/$1/status &&
	 [ "$(awk "/^CapEff/ {print \$2}" /proc/$1/status)" = "$(awk "/^CapAmb/ {print \$2}" /proc/$1/status)" ] &&
	 ! awk "/^CapEff/ {print \$2}" /proc/$1/status | grep -q "^0*$"' _ "$NR" "$XUID"
tap_check "its socket and lock belong to the user" bash -c \
	'[ "$(nsenter --mount="$1" stat -c %u "/run/xrxe/$3.sock" "/run/xrxe/$3.lock" | sort -u)" = "$2" ]' \
	_ "$MNT" "$XUID" "$IF_B"
tap_check "the device is usable: xrxe run ibv_devinfo sees xrxe_$IF_B ACTIVE" bash -c \
	'"$@" | grep -q PORT_ACTIVE' _ nsx "$B/xrxe" run -- ibv_devinfo -d "xrxe_$IF_B"
tap_check "ExecStartPost=! (root) applies XRXE_CC" drop_cmd ExecStartPost
tap_check "np_min_time_between_cnps is 16 on the non-root daemon" bash -c \
	'[ "$(nsenter --mount="$1" --net="/run/netns/$2" "$3" cc show "$4" | awk "\$1 == \"np_min_time_between_cnps\" {print \$2}")" = 16 ]' \
	_ "$MNT" "$NS_B" "$B/xrxe" "$IF_B"

PORT=18778
nsx timeout 60 "$B/xrxe" run -- ibv_rc_pingpong -g 1 -n 50 -s 4096 -c -p $PORT >"$TMP/pp-nr-server.log" 2>&1 &
spid=$!
for i in $(seq 200); do
	ip netns exec "$NS_B" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
	sleep 0.1
done
if ip netns exec "$NS_A" timeout 60 "$B/xrxe" run -- ibv_rc_pingpong -g 1 -n 50 -s 4096 -c -p $PORT "$IP4_B" \
	>"$TMP/pp-nr-client.log" 2>&1 && wait $spid; then
	tap_ok "ibv_rc_pingpong (buffers checked) uses the non-root service's device (50 x 4 KiB)"
else
	tap_fail "ibv_rc_pingpong uses the non-root service's device"
	tail -n 5 "$TMP/pp-nr-server.log" "$TMP/pp-nr-client.log" "$TMP/xrxed-nr.log" | sed 's/^/#   /'
fi

kill -TERM $NR
wait $NR
rc=$?
tap_check "non-root SIGTERM: exit status 0" test $rc = 0
tap_check "non-root SIGTERM: its XDP program is gone" bash -c \
	'ip netns exec "$1" "$2" status "$3" | grep -q "no XDP program"' _ "$NS_B" "$B/xrxe" "$IF_B"
tap_check "non-root: no warning or error in its log" bash -c '! grep -E "warn|error|denied" "$1"' _ "$TMP/xrxed-nr.log" ||
	grep -E "warn|error|denied" "$TMP/xrxed-nr.log" | head -n 5 | sed 's/^/#   /'
