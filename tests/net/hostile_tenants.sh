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
#      the attacker's MR keys are neither in turn nor slot indices (attack 6:
#      predictable R_Keys);
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
#  (i) attack 5 replayed: with the victim's QPN, address and R_Key, the
#      attacker WRITEs through a loopback QP pair of its own and at the
#      victim's QP (right and wrong key); each fails for the attacker, the
#      victim's MR is untouched and its QPs stay out of the error state;
#  (h) a remote host (root in the other namespace) sends crafted frames with
#      valid ICRCs (tests/net/frame_flood.c) at the daemon while the victim's
#      RC flow to the other namespace's daemon runs: the flow finishes intact,
#      the daemon stays up, each crafted frame shows in its drop counter;
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
FLOOD=${FLOOD:-$XRXE_ROOT/$BUILD/tests/net/frame_flood}
for bin in "$XRXED" "$CLIENT" "$FLOOD"; do
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
check_hog xrcd 16 # XRC domains count as PDs
check_hog cq 16
check_hog qp 8
check_hog channel 16
check_hog mr 64
# attack 6: keys handed out in turn (rxe's old index << 8 | key byte, each
# MR's key 0x100 above the one before) let a user predict another's from its
# own. The attacker's 64 keys: none follows its predecessor, and their names
# (upper 24 bits) are not slot indices (the daemon's 131 073 slots need 18
# bits; a random name is below 2^18 once in 64).
keys=$(awk '$1 == "rkey" { print $2 }' "$TMP/hog.out")
nkeys=$(wc -w <<<"$keys")
in_turn=0 slot_like=0 prev=''
for k in $keys; do
	[ -n "$prev" ] && [ $((k - prev)) -eq $((0x100)) ] && in_turn=$((in_turn + 1))
	[ $((k >> 8)) -lt $((1 << 18)) ] && slot_like=$((slot_like + 1))
	prev=$k
done
if [ "$nkeys" -ge 32 ] && [ "$in_turn" -le 2 ] && [ "$slot_like" -le 8 ]; then
	tap_ok "attack 6: the attacker's $nkeys R_Keys are not in turn ($in_turn) and not slot indices ($slot_like)"
else
	tap_fail "attack 6: R_Keys not predictable ($nkeys keys, $in_turn in turn, $slot_like slot-like)"
	tap_diag "$keys"
fi

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

# --- (i) attack 5: a write with the victim's R_Key ---------------------------------
# The victim publishes its QPN, MR address and R_Key (the worst case: the
# attacker learnt them all); its QPs use random PSNs. The attacker tries
#  1. a loopback QP pair of its own: a key is honoured only for a QP of the
#     region's own PD (src/transport/mr.c xrxe_tpi_mr_check), and the QP
#     the WRITE arrives at is in the attacker's PD, which is its connection's
#     alone: Remote Access Error, for the attacker's QP only (status 10);
#  2. a QP of its own aimed at the victim's QP, PSN guessed blind: the
#     victim's responder drops it as out of sequence before any key is
#     looked at (IBA 9.7.5.1.x, src/transport/resp.c), and answers (if at all) its connected peer,
#     never the attacker: the attacker's QP runs out of retries (status 12);
#  3. the same with a wrong R_Key: the same drop, so the wrong key never
#     reaches the key check that would move the victim's QP to the error
#     state (that needs the victim's next PSN, 1 in 2^24 blind, and the
#     attacker cannot read it: statistics show only its own QPs; what a
#     host that knows it can do is in docs/architecture.md "Security model").
# Then the victim's MR is as it was and its QPs still carry SENDs and a WRITE.
mkdir -p "$SHARED/replay" && chmod 1777 "$SHARED/replay"
as "$VICTIM" "$NS_A" timeout 150 "$CLIENT" replay-victim "$IF_A" --dir "$SHARED/replay" \
	>"$TMP/replay_victim.out" 2>&1 &
RVPID=$!
NETNS_PIDS+=("$RVPID")
if netns_wait_file "$SHARED/replay/victim.info" 60; then
	vqpn=$(awk '{ print $1 }' "$SHARED/replay/victim.info")
	att_sees=$(as "$ATTACKER" "$NS_A" "$CLIENT" stats "$IF_A" --qp 2>/dev/null |
		awk -v q="$vqpn" '$1 == q' | wc -l)
	root_sees=$(ip netns exec "$NS_A" "$CLIENT" stats "$IF_A" --qp 2>/dev/null |
		awk -v q="$vqpn" '$1 == q' | wc -l)
	if [ "$att_sees" -eq 0 ] && [ "$root_sees" -eq 1 ]; then
		tap_ok "replay: the attacker's per-QP statistics do not show the victim's QP $vqpn (root's do)"
	else
		tap_fail "replay: the attacker's per-QP statistics do not show the victim's QP $vqpn (attacker $att_sees, root $root_sees)"
	fi
	as "$ATTACKER" "$NS_A" timeout 150 "$CLIENT" replay-attack "$IF_A" --dir "$SHARED/replay" \
		>"$TMP/replay_attack.out" 2>&1
	wait "$RVPID"
	vrc=$?
	own=$(awk '$1 == "own_pd" { print $2 }' "$TMP/replay_attack.out")
	vq=$(awk '$1 == "victim_qp" { print $2 }' "$TMP/replay_attack.out")
	vqw=$(awk '$1 == "victim_qp_wrong_key" { print $2 }' "$TMP/replay_attack.out")
	# enum ibv_wc_status: 0 success, 10 remote access error, 12 retry exceeded
	if [ "$own" = 10 ]; then
		tap_ok "replay: the victim's R_Key through the attacker's own QP pair: Remote Access Error (another PD)"
	else
		tap_fail "replay: the victim's R_Key through the attacker's own QP pair (status ${own:-none}, want 10)"
		tap_diag "$(cat "$TMP/replay_attack.out")"
	fi
	if [ -n "$vq" ] && [ "$vq" != 0 ] && [ -n "$vqw" ] && [ "$vqw" != 0 ]; then
		tap_ok "replay: WRITEs aimed at the victim's QP fail for the attacker (right key $vq, wrong key $vqw)"
	else
		tap_fail "replay: WRITEs aimed at the victim's QP fail for the attacker (right key ${vq:-none}, wrong key ${vqw:-none})"
		tap_diag "$(cat "$TMP/replay_attack.out")"
	fi
	if [ "$vrc" -eq 0 ] && grep -q "victim_mr intact" "$TMP/replay_victim.out" &&
		grep -q "victim_qps work" "$TMP/replay_victim.out"; then
		tap_ok "replay: the victim's MR is untouched and its QPs are not in the error state (SENDs and a WRITE after)"
	else
		tap_fail "replay: the victim's MR is untouched and its QPs work after the attack"
		tap_diag "$(cat "$TMP/replay_victim.out")"
	fi
else
	tap_fail "replay: the victim sets up"
	tap_diag "$(cat "$TMP/replay_victim.out")"
	kill "$RVPID" 2>/dev/null
fi

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

# --- (h) a remote host's crafted frames while an RC flow runs ------------------------
# The host at the other end of the veth (root there) sends crafted RoCEv2
# frames with valid ICRCs at the daemon (tests/net/frame_flood.c: every
# opcode; well-formed, bad keys with huge DMA lengths, bad lengths,
# truncated headers, wrong QPNs, bad P_Keys, from a foreign address, bad BTH
# version), aimed at the victim's QPN +-2 and, spoofing the victim's peer,
# at every PSN but the ones the flow uses (one on the path who knows those
# can inject: what RoCEv2 cannot prevent, docs/architecture.md "Security
# model"). Meanwhile the victim's RC flow between the two daemons runs; it
# must finish with its data intact, the daemon stays up, and every crafted
# frame that reached the daemon shows in a counter of its class.
rm -f "/run/xrxe/$IF_B.sock"
ns_bg "$NS_B" "$XRXED" "$IF_B" >>"$TMP/xrxed_b.log" 2>&1
BPID=$NETNS_LAST_PID
FLOW_COUNT=400
mkdir -p "$SHARED/flow" && chmod 1777 "$SHARED/flow"
sum_of() { # NS IFACE REGEX: the sum of the stats lines matching REGEX
	ip netns exec "$1" "$CLIENT" stats "$2" 2>/dev/null | awk -v re="$3" '$1 ~ re { s += $2 } END { print s + 0 }'
}
qp_rx() { # the victim QP's rx_pkts (column 9 of `xrxe qp`)
	ip netns exec "$NS_A" "$CLIENT" stats "$IF_A" --qp 2>/dev/null | awk -v q="$1" '$1 == q { print $9 }'
}
lost_now() { # frames lost before the daemon read them: veth and AF_XDP rings
	echo $(($(cat "/sys/class/net/$IF_B/statistics/tx_dropped" 2>/dev/null || ip netns exec "$NS_B" cat "/sys/class/net/$IF_B/statistics/tx_dropped") +
		$(ip netns exec "$NS_A" cat "/sys/class/net/$IF_A/statistics/rx_dropped") +
		$(sum_of "$NS_A" "$IF_A" '^xsk[0-9]+\.k_rx_(dropped|ring_full|fill_ring_empty)$')))
}
if netns_wait_file "/run/xrxe/$IF_B.sock" 20; then
	# the victim's receiver on the attacked daemon; it keeps its QP (and
	# the QP's counters) after the flow until killed
	as "$VICTIM" "$NS_A" timeout 120 "$CLIENT" rc "$IF_A" --peer-gid "$IP4_B" --me b --peer a \
		--dir "$SHARED/flow" --count $FLOW_COUNT --size 2048 --ready "$SHARED/flow/done" \
		>"$TMP/flow_b.out" 2>&1 &
	FBPID=$!
	NETNS_PIDS+=("$FBPID")
	# the sender, on the other daemon, waits for the flood to begin
	ip netns exec "$NS_B" timeout 120 "$CLIENT" rc "$IF_B" --peer-gid "$IP4_A" --me a \
		--peer b --dir "$SHARED/flow" --count $FLOW_COUNT --size 2048 \
		--go "$SHARED/flow/go" >"$TMP/flow_a.out" 2>&1 &
	FAPID=$!
	NETNS_PIDS+=("$FAPID")
	# both QPs connected (RTS) before the first crafted frame, so that
	# each frame meets the checks of a live QP
	tries=1200
	until grep -q peer_qpn "$TMP/flow_a.out" && grep -q peer_qpn "$TMP/flow_b.out"; do
		[ $tries -gt 0 ] || break
		sleep 0.05
		tries=$((tries - 1))
	done
	vqpn=$(awk '{ print $1 }' "$SHARED/flow/b.info" 2>/dev/null)
	declare -A c0
	c0[parse]=$(sum_of "$NS_A" "$IF_A" '^(xdp\.drop_(short|bad_bth)_packets|daemon\.rx_drop_.*)$')
	c0[no_qp]=$(stat_of "$NS_A" "$IF_A" transport.rx_drop_no_qp)
	c0[cnp]=$(sum_of "$NS_A" "$IF_A" '^transport\.cnp_rcvd(_no_qp)?$')
	c0[opcode]=$(stat_of "$NS_A" "$IF_A" transport.rx_drop_bad_opcode)
	c0[pkey]=$(stat_of "$NS_A" "$IF_A" transport.rx_drop_bad_pkey)
	c0[av]=$(stat_of "$NS_A" "$IF_A" transport.rx_drop_bad_av)
	c0[qp]=$(qp_rx "$vqpn")
	lost0=$(lost_now)
	# PSNs of the flow: 0 up to two packets per SEND of 2048 bytes (IB MTU
	# 1024), the WRITE and the acknowledging SEND; kept out with a margin
	ip netns exec "$NS_B" "$FLOOD" "$IF_B" --dmac "$MAC_A" --src 10.77.1.99 --dst "$IP4_A" \
		--peer "$IP4_B" --qpn "${vqpn:-0}" --avoid-psn 0:$((2 * FLOW_COUNT + 64)) \
		--count 40000 --seed $$ --started "$SHARED/flow/go" >"$TMP/flood.out" 2>&1 &
	FLPID=$!
	NETNS_PIDS+=("$FLPID")
	if wait "$FAPID" && netns_wait_file "$SHARED/flow/done" 30; then
		flow=ok
	else
		flow=failed
	fi
	flood_outlived=no
	kill -0 "$FLPID" 2>/dev/null && flood_outlived=yes
	wait "$FLPID"
	sent=$(awk '$1 == "sent" { print $2 }' "$TMP/flood.out")
	if [ "$flow" = ok ] && grep -q "all intact" "$TMP/flow_b.out" && [ "${sent:-0}" -gt 0 ]; then
		tap_ok "crafted frames: the victim's RC flow ($FLOW_COUNT SENDs of 2048 bytes and a WRITE) finished intact under $sent crafted frames (flood still going at its end: $flood_outlived)"
	else
		tap_fail "crafted frames: the victim's RC flow finished intact (flow $flow, $sent crafted frames)"
		tap_diag "$(cat "$TMP/flow_a.out" "$TMP/flow_b.out" "$TMP/flood.out")"
	fi
	# the daemon has read everything once its counters stand still
	prev='' tries=100
	while [ $tries -gt 0 ]; do
		cur=$(sum_of "$NS_A" "$IF_A" '^daemon\.rx_')
		[ "$cur" = "$prev" ] && break
		prev=$cur
		sleep 0.2
		tries=$((tries - 1))
	done
	lost=$(($(lost_now) - lost0))
	declare -A c1
	c1[parse]=$(sum_of "$NS_A" "$IF_A" '^(xdp\.drop_(short|bad_bth)_packets|daemon\.rx_drop_.*)$')
	c1[no_qp]=$(stat_of "$NS_A" "$IF_A" transport.rx_drop_no_qp)
	c1[cnp]=$(sum_of "$NS_A" "$IF_A" '^transport\.cnp_rcvd(_no_qp)?$')
	c1[opcode]=$(stat_of "$NS_A" "$IF_A" transport.rx_drop_bad_opcode)
	c1[pkey]=$(stat_of "$NS_A" "$IF_A" transport.rx_drop_bad_pkey)
	c1[av]=$(stat_of "$NS_A" "$IF_A" transport.rx_drop_bad_av)
	c1[qp]=$(qp_rx "$vqpn")
	short='' detail=''
	for k in parse no_qp cnp opcode pkey av qp; do
		want=$(awk -v k="$k" '$1 == "class" && $2 == k { print $3 }' "$TMP/flood.out")
		got=$((${c1[$k]:-0} - ${c0[$k]:-0}))
		detail+=" $k $got/${want:-?}"
		# counted at least as often as sent, less what was lost on the way
		[ "$got" -ge $((${want:-0} - lost)) ] || short+=" $k"
	done
	if [ -n "$sent" ] && [ -z "$short" ]; then
		tap_ok "crafted frames: counted in their class (counted/sent:$detail; lost before the daemon $lost)"
	else
		tap_fail "crafted frames: counted in their class (short:$short; counted/sent:$detail; lost $lost)"
		tap_diag "$(ip netns exec "$NS_A" "$CLIENT" stats "$IF_A" | grep -E '^(xdp|xsk0|daemon|transport)\.')"
	fi
	if kill -0 "$DPID" 2>/dev/null && victim_ok; then
		tap_ok "crafted frames: the daemon is up and serves the victim after the flood"
	else
		tap_fail "crafted frames: the daemon is up and serves the victim after the flood"
		tap_diag "$(tail -20 "$TMP/xrxed.log")"
	fi
	kill "$FBPID" 2>/dev/null
	wait "$FBPID" 2>/dev/null
else
	tap_fail "crafted frames: the peer's daemon starts"
	tap_diag "$(cat "$TMP/xrxed_b.log")"
fi
kill "$BPID" 2>/dev/null
wait "$BPID" 2>/dev/null

# --- budgets and log ---------------------------------------------------------------
fds=$(ls "/proc/$DPID/fd" 2>/dev/null | wc -l)
maps=$(wc -l <"/proc/$DPID/maps" 2>/dev/null)
# resident memory in kB: the attacks leave nothing behind that grows it
rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$DPID/status" 2>/dev/null)
lines=$(wc -l <"$TMP/xrxed.log")
if kill -0 "$DPID" 2>/dev/null && [ "$fds" -lt 100 ] && [ "$maps" -lt 1000 ] &&
	[ "${rss:-0}" -gt 0 ] && [ "$rss" -lt $((1 << 20)) ]; then
	tap_ok "the daemon lives, with $fds descriptors, $maps mappings and $((rss >> 10)) MiB resident after the attacks"
else
	tap_fail "the daemon lives within budget ($fds descriptors, $maps mappings, ${rss:-?} kB resident)"
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

