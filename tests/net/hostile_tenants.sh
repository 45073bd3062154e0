#!/usr/bin/env bash
# Many users on one daemon (issue 15; docs/architecture.md "Security model"):
# root and two ordinary users created for the test, one of them the attacker.
# Each attack is tried by the attacker and must fail for the attacker only:
# the victim's object creation, traffic (two RC QPs through the daemon's
# loopback) and new connections keep working while the attacker holds what
# it got, and the daemon stays within its descriptor and mapping budget with
# a small log.
#  (a) object tables: PDs, CQs, QPs, completion channels, one-page MRs until
#      refused with EDQUOT at the user's limit (--limit);
#  (b) address space: a 1 TiB MR refused (EDQUOT: registered bytes);
#  (c) connections without HELLO: at most the user's limit stay open, and
#      those are closed after the HELLO timeout;
#  (d) per-QP statistics: the attacker's `xrxe qp` shows none of the
#      victim's QPs, root's shows them;
#  (e) a hugetlbfs memfd in HELLO is refused (its pages can vanish: SIGBUS);
#  (g) network namespaces: from the other namespace the attacker's shim does
#      not list the device and the daemon refuses its HELLO; in the daemon's
#      namespace an ordinary user's shim lists it (the filter neither fails
#      open nor closed for non-root);
#  (f) root exhausting the daemon's descriptors (RLIMIT_NOFILE 128): accept()
#      hits EMFILE, the daemon pauses listening instead of spinning, and
#      serves new clients once descriptors are free again.
#
#   tests/net/hostile_tenants.sh          (root)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=../lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
tap_require_root "net/hostile_tenants"
# shellcheck source=../lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"

BUILD=${BUILD:-build}
XRXED=${XRXED:-$XRXE_ROOT/$BUILD/bin/xrxed}
XRXE=${XRXE:-$XRXE_ROOT/$BUILD/bin/xrxe}
CLIENT=${CLIENT:-$XRXE_ROOT/$BUILD/tests/net/ctrl_client}
for bin in "$XRXED" "$CLIENT"; do
	if [ ! -x "$bin" ]; then
		tap_fail "$bin is built (make tests)"
		exit 1
	fi
done
for tool in useradd userdel setpriv prlimit; do
	if ! command -v "$tool" >/dev/null; then
		tap_skip "hostile tenants" "$tool is not installed"
		exit 0
	fi
done
netns_tmpdir TMP
chmod 0755 "$TMP"
SHARED=$TMP/shared
mkdir -p "$SHARED" && chmod 1777 "$SHARED"

# Two ordinary users, made for this run and removed after it.
VICTIM=xrxv$$
ATTACKER=xrxa$$
make_user() { useradd --system --no-create-home --shell /usr/sbin/nologin "$1" 2>/dev/null; }
if ! make_user "$VICTIM" || ! make_user "$ATTACKER"; then
	tap_skip "hostile tenants" "cannot create users (useradd)"
	userdel "$VICTIM" 2>/dev/null
	exit 0
fi
netns_at_exit "kill \${HOG_PID:-} 2>/dev/null; sleep 0.3; userdel $VICTIM; userdel $ATTACKER"

# as USER NS COMMAND...: COMMAND as USER inside namespace NS (setpriv execs:
# the pid of the background job is the command's, and kill reaches it).
as() {
	local user=$1 ns=$2
	shift 2
	ip netns exec "$ns" setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" \
		--clear-groups -- "$@"
}
stat_of() {
	ip netns exec "$1" "$CLIENT" stats "$2" 2>/dev/null | awk -v k="$3" '$1 == k { print $2 }'
}
# The victim works: objects, two RC QPs through the daemon's loopback, data.
victim_ok() {
	as "$VICTIM" "$NS_A" timeout 30 "$CLIENT" loop "$IF_A" --count 20 >"$TMP/victim.out" 2>&1
}
# hog USER WHAT [ARGS]: the attacker takes WHAT and holds it; its "made N"
# and "errno E" lines are in $TMP/hog.out; HOG_PID to kill.
hog() {
	local user=$1 what=$2
	shift 2
	rm -f "$SHARED/ready"
	# not through as(): a function in the background is a subshell, and
	# killing it would leave the client running
	ip netns exec "$NS_A" setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" \
		--clear-groups -- "$CLIENT" hog "$IF_A" "$what" --ready "$SHARED/ready" "$@" \
		>"$TMP/hog.out" 2>&1 &
	HOG_PID=$!
	NETNS_PIDS+=("$HOG_PID")
	netns_wait_file "$SHARED/ready" 60
}
unhog() {
	local tries=200
	kill "$HOG_PID" 2>/dev/null
	wait "$HOG_PID" 2>/dev/null
	# the daemon sees the hang-up and frees everything: no ordinary user
	# holds anything any more
	while [ "$(stat_of "$NS_A" "$IF_A" quota.users)" != 0 ] && [ $tries -gt 0 ]; do
		sleep 0.05
		tries=$((tries - 1))
	done
}
hog_field() { awk -v k="$1" '$1 == k { print $2 }' "$TMP/hog.out"; }

netns_pair 1 1500 || { tap_fail "namespaces and veth"; exit 1; }
rm -f "/run/xrxe/$IF_A.sock"
ns_bg "$NS_A" "$XRXED" --limit pds=16 --limit cqs=16 --limit qps=8 --limit channels=16 \
	--limit mrs=64 --limit conns=8 "$IF_A" >>"$TMP/xrxed.log" 2>&1
DPID=$NETNS_LAST_PID
if ! netns_wait_file "/run/xrxe/$IF_A.sock" 20; then
	tap_fail "xrxed starts with --limit options"
	tap_diag "$(cat "$TMP/xrxed.log")"
	exit 1
fi
tap_ok "xrxed starts with --limit options"

if [ "$(stat_of "$NS_A" "$IF_A" limits.qps)" = 8 ] &&
	[ "$(stat_of "$NS_A" "$IF_A" limits.mr_bytes)" = $((16 << 30)) ]; then
	tap_ok "xrxe stats shows the limits (given and default)"
else
	tap_fail "xrxe stats shows the limits (given and default)"
	tap_diag "$(ip netns exec "$NS_A" "$CLIENT" stats "$IF_A" | grep -E '^(limits|quota)\.')"
fi

if victim_ok; then
	tap_ok "the victim works before any attack"
else
	tap_fail "the victim works before any attack"
	tap_diag "$(cat "$TMP/victim.out")"
fi

# --- (a), (b) tables and address space -----------------------------------------
check_hog() { # WHAT LIMIT
	local what=$1 limit=$2 made err
	if ! hog "$ATTACKER" "$what" --count 100000; then
		tap_fail "attacker hogs $what: no answer"
		tap_diag "$(cat "$TMP/hog.out")"
		unhog
		return
	fi
	made=$(hog_field made) err=$(hog_field errno)
	if [ "$made" = "$limit" ] && [ "$err" = EDQUOT ]; then
		tap_ok "attacker: $what refused with EDQUOT after its limit of $limit"
	else
		tap_fail "attacker: $what refused with EDQUOT after its limit of $limit (made $made, $err)"
	fi
	if victim_ok; then
		tap_ok "victim: objects and RC traffic work while the attacker holds $limit $what"
	else
		tap_fail "victim: objects and RC traffic work while the attacker holds $limit $what"
		tap_diag "$(cat "$TMP/victim.out")"
	fi
	unhog
}
check_hog pd 16
check_hog cq 16
check_hog qp 8
check_hog channel 16
check_hog mr 64

hog "$ATTACKER" bigmr --count 1
if [ "$(hog_field errno)" = EDQUOT ]; then
	tap_ok "attacker: a 1 TiB MR is refused (EDQUOT: registered bytes)"
else
	tap_fail "attacker: a 1 TiB MR is refused (EDQUOT: registered bytes)"
	tap_diag "$(cat "$TMP/hog.out")"
fi
unhog
if [ "$(stat_of "$NS_A" "$IF_A" quota.pds_refused)" -ge 1 ] &&
	[ "$(stat_of "$NS_A" "$IF_A" quota.mr_bytes_refused)" -ge 1 ]; then
	tap_ok "refusals are counted (quota.*_refused)"
else
	tap_fail "refusals are counted (quota.*_refused)"
fi

# --- (c) connections -----------------------------------------------------------
hog "$ATTACKER" conns --count 40
alive=$(hog_field alive)
if [ -n "$alive" ] && [ "$alive" -le 8 ]; then
	tap_ok "attacker: 40 connections, at most its limit of 8 kept ($alive)"
else
	tap_fail "attacker: 40 connections, at most its limit of 8 kept ($alive)"
	tap_diag "$(cat "$TMP/hog.out")"
fi
if victim_ok; then
	tap_ok "victim: new connections work while the attacker holds its connections"
else
	tap_fail "victim: new connections work while the attacker holds its connections"
fi
before=$(stat_of "$NS_A" "$IF_A" ctrl.hello_timeouts)
sleep 6
after=$(stat_of "$NS_A" "$IF_A" ctrl.hello_timeouts)
if [ "$after" -ge $((before + alive)) ]; then
	tap_ok "connections without HELLO are closed after the timeout ($before -> $after)"
else
	tap_fail "connections without HELLO are closed after the timeout ($before -> $after, alive $alive)"
fi
unhog

# --- (d) statistics ------------------------------------------------------------
hog "$VICTIM" qp --count 3
root_n=$(ip netns exec "$NS_A" "$CLIENT" stats "$IF_A" --qp 2>/dev/null | grep -cE '^[0-9]+ ')
att_n=$(as "$ATTACKER" "$NS_A" "$CLIENT" stats "$IF_A" --qp 2>/dev/null | grep -cE '^[0-9]+ ')
vic_n=$(as "$VICTIM" "$NS_A" "$CLIENT" stats "$IF_A" --qp 2>/dev/null | grep -cE '^[0-9]+ ')
if [ "$root_n" -ge 3 ] && [ "$att_n" -eq 0 ] && [ "$vic_n" -ge 3 ]; then
	tap_ok "per-QP statistics: root sees $root_n QPs, the victim its $vic_n, the attacker none"
else
	tap_fail "per-QP statistics: root $root_n, victim $vic_n, attacker $att_n (want >=3, >=3, 0)"
fi
unhog

# --- (e) hugetlbfs ---------------------------------------------------------------
out=$(as "$ATTACKER" "$NS_A" "$CLIENT" hog "$IF_A" hugememfd 2>&1)
case $out in
*"errno EINVAL"*) tap_ok "HELLO with a hugetlbfs memfd is refused (EINVAL)" ;;
*"errno SKIP"*) tap_skip "HELLO with a hugetlbfs memfd" "no hugetlbfs memfd here (${out#errno SKIP-})" ;;
*) tap_fail "HELLO with a hugetlbfs memfd is refused (got: $out)" ;;
esac

# --- (g) network namespaces -------------------------------------------------------
out=$(as "$ATTACKER" "$NS_B" "$CLIENT" gids "$IF_A" 2>&1)
if grep -q "not permitted" <<<"$out"; then
	tap_ok "HELLO from another network namespace is refused (EPERM)"
else
	tap_fail "HELLO from another network namespace is refused (EPERM)"
	tap_diag "$out"
fi
if command -v ibv_devices >/dev/null; then
	here=$(as "$ATTACKER" "$NS_A" "$XRXE" run -- ibv_devices 2>&1)
	there=$(as "$ATTACKER" "$NS_B" "$XRXE" run -- ibv_devices 2>&1)
	if grep -q "xrxe_$IF_A" <<<"$here" && ! grep -q "xrxe_$IF_A" <<<"$there"; then
		tap_ok "an ordinary user's shim lists the device in its namespace only"
	else
		tap_fail "an ordinary user's shim lists the device in its namespace only"
		tap_diag "in $NS_A: $here"
		tap_diag "in $NS_B: $there"
	fi
else
	tap_skip "shim namespace filter for an ordinary user" "ibv_devices is not installed"
fi

# --- budgets and log ---------------------------------------------------------------
fds=$(ls "/proc/$DPID/fd" 2>/dev/null | wc -l)
maps=$(wc -l <"/proc/$DPID/maps" 2>/dev/null)
lines=$(wc -l <"$TMP/xrxed.log")
if kill -0 "$DPID" 2>/dev/null && [ "$fds" -lt 100 ] && [ "$maps" -lt 1000 ]; then
	tap_ok "the daemon lives, with $fds descriptors and $maps mappings after the attacks"
else
	tap_fail "the daemon lives within budget ($fds descriptors, $maps mappings)"
fi
if [ "$lines" -lt 150 ]; then
	tap_ok "the daemon's log stays small ($lines lines)"
else
	tap_fail "the daemon's log stays small ($lines lines)"
	tap_diag "$(sort "$TMP/xrxed.log" | uniq -c | sort -rn | head)"
fi
if victim_ok; then
	tap_ok "the victim works after every attack"
else
	tap_fail "the victim works after every attack"
fi
kill "$DPID" 2>/dev/null
wait "$DPID" 2>/dev/null

# --- (f) EMFILE: no spin, recovery -----------------------------------------------------
ns_bg "$NS_A" prlimit --nofile=128:128 "$XRXED" "$IF_A" >>"$TMP/xrxed2.log" 2>&1
DPID=$NETNS_LAST_PID
if netns_wait_file "/run/xrxe/$IF_A.sock" 20; then
	hog root conns --count 300
	t0=$(awk '{ print $14 + $15 }' "/proc/$DPID/stat")
	sleep 2
	t1=$(awk '{ print $14 + $15 }' "/proc/$DPID/stat")
	paused=$(stat_of "$NS_A" "$IF_A" ctrl.accept_paused)
	# clock ticks (100/s): spinning would burn ~200 in 2 s
	if [ "${paused:-0}" -ge 1 ] && [ $((t1 - t0)) -lt 50 ]; then
		tap_ok "EMFILE: accept pauses ($paused times) instead of spinning ($((t1 - t0)) ticks in 2 s)"
	elif [ "${paused:-0}" -ge 1 ] || [ -z "$paused" ]; then
		tap_fail "EMFILE: accept pauses instead of spinning (paused ${paused:-?}, $((t1 - t0)) ticks in 2 s)"
	else
		tap_fail "EMFILE: the descriptors were not exhausted (paused 0)"
		tap_diag "$(cat "$TMP/hog.out")"
	fi
	unhog
	if victim_ok; then
		tap_ok "EMFILE: new clients are served once descriptors are free"
	else
		tap_fail "EMFILE: new clients are served once descriptors are free"
		tap_diag "$(cat "$TMP/victim.out")"
	fi
	lines=$(wc -l <"$TMP/xrxed2.log")
	if [ "$lines" -lt 60 ]; then
		tap_ok "EMFILE: the log stays small ($lines lines)"
	else
		tap_fail "EMFILE: the log stays small ($lines lines)"
	fi
else
	tap_fail "xrxed under RLIMIT_NOFILE 128 starts"
	tap_diag "$(cat "$TMP/xrxed2.log")"
fi

