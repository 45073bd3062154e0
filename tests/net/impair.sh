#!/usr/bin/env bash
# xrxe-impair (bpf/xrxe_impair.bpf.c + tools/impair/) on a veth pair: A's
# egress is impaired, B receives numbered UDP datagrams (tests/net/impair_udp.py)
# and reports which arrived, with which ECN bits.
#
# - loss / duplication: the receiver's count equals the program's counters
#   exactly, and the rates are within 5 binomial sigmas of the setting;
# - corruption: every corrupted frame (and only those) fails the receiver's
#   UDP checksum (Udp InCsumErrors, IPv4 and IPv6 Udp6InCsumErrors);
# - ECN: traffic faster than --ecn-rate gets CE (ECT(0), ECT(1), IPv4 and IPv6),
#   slower traffic none, Not-ECT never; the kernel accepts every marked IPv4
#   packet (IpInHdrErrors unchanged) and tshark finds the header checksums good;
#   the CP rule's profile (0 below Kmin, linear to Pmax, 1 above Kmax) measured
#   on a burst that fills the phantom queue one packet at a time;
# - settings update in place; --clear leaves tc qdisc/filter output as before
#   (with and without a pre-existing clsact); argument errors.
#
#   tests/net/impair.sh         (root; IMPAIR=path/to/xrxe-impair for another build)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
tap_require_root "net/impair"
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"

BUILD=${BUILD:-build}
IMPAIR=${IMPAIR:-$XRXE_ROOT/$BUILD/bin/xrxe-impair}
UDP=$XRXE_ROOT/tests/net/impair_udp.py
if [ ! -x "$IMPAIR" ]; then
	tap_fail "xrxe-impair is built ($IMPAIR; run make)"
	exit 1
fi
netns_tmpdir TMP
netns_pair 1 1500 || { tap_fail "namespaces"; exit 1; }

imp() { ns_exec "$NS_A" "$IMPAIR" "$IF_A" "$@"; }

# ctr NAME [FIELD]: one counter of A's program (packets by default).
ctr() {
	imp --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["counters"][sys.argv[1]][sys.argv[2]])' "$1" "${2:-packets}"
}
jq_() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

# snmp NS FILE KEY: a counter from /proc/net/snmp ("Udp InCsumErrors") or
# /proc/net/snmp6 ("Udp6InCsumErrors") inside NS.
snmp() {
	if [ "$2" = snmp6 ]; then
		ns_exec "$1" awk -v k="$3" '$1 == k { print $2 }' /proc/net/snmp6
	else
		ns_exec "$1" awk -v p="${3% *}:" -v f="${3#* }" '
			$1 == p && !h { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
			$1 == p && h { print $col[f] }' /proc/net/snmp
	fi
}

# flow LABEL BIND DST SENDER_ARGS...: receiver in B, sender in A; the
# receiver's JSON ends up in $TMP/LABEL.json.
flow() {
	local label=$1 bind=$2 dst=$3 port=$((30000 + RANDOM % 20000)) pid
	shift 3
	rm -f "$TMP/$label.ready"
	ns_exec "$NS_B" python3 "$UDP" recv "$bind" "$port" "$TMP/$label.ready" --idle 1 \
		>"$TMP/$label.json" 2>"$TMP/$label.err" &
	pid=$!
	NETNS_PIDS+=("$pid")
	netns_wait_file "$TMP/$label.ready" 5 || { tap_diag "receiver did not start"; return 1; }
	if [ "${1:-}" = raw ]; then
		shift
		ns_exec "$NS_A" python3 "$UDP" send-raw "$IF_A" "$MAC_B" "$(src_for "$dst")" "$dst" \
			"$port" "$@"
	else
		ns_exec "$NS_A" python3 "$UDP" send "$dst" "$port" "$@"
	fi
	wait "$pid"
}
src_for() { [[ $1 == *:* ]] && echo "$IP6_A" || echo "$IP4_A"; }

# within5 DESC OBSERVED N P: |OBSERVED - N P| <= 5 sqrt(N P (1 - P)).
within5() {
	local desc=$1 obs=$2 n=$3 p=$4 verdict
	verdict=$(python3 -c 'import math,sys
o,n,p=int(sys.argv[1]),int(sys.argv[2]),float(sys.argv[3])
m=n*p; s=math.sqrt(n*p*(1-p))
print("%s %.1f %.1f" % ("ok" if abs(o-m) <= 5*s else "bad", m, s))' "$obs" "$n" "$p")
	set -- $verdict
	if [ "$1" = ok ]; then
		tap_ok "$desc: $obs (expected $2, sigma $3)"
	else
		tap_fail "$desc: $obs (expected $2 +- 5 x $3)"
	fi
}

# expect_eq DESC GOT WANT
expect_eq() {
	if [ "$2" = "$3" ]; then tap_ok "$1 ($2)"; else tap_fail "$1: got '$2', wanted '$3'"; fi
}

tc_state() {
	{
		ns_exec "$NS_A" tc qdisc show dev "$IF_A"
		ns_exec "$NS_A" tc filter show dev "$IF_A" ingress
		ns_exec "$NS_A" tc filter show dev "$IF_A" egress
	} 2>&1
}

N=4000

# --- loss ----------------------------------------------------------------------
initial_tc=$(tc_state)
before_tc=$initial_tc
tap_check "attach --loss 10" imp --loss 10
flow loss "$IP4_B" "$IP4_B" --count $N --len 200
got=$(jq_ "$TMP/loss.json" 'd["received"]')
seen=$(ctr seen) dropped=$(ctr dropped)
# The program also sees the namespace's own IPv6 housekeeping (router and
# neighbour solicitations, MLD reports): at most $extra frames that are not ours.
extra=$((seen - N))
if [ "$extra" -ge 0 ] && [ "$extra" -le 20 ]; then
	tap_ok "loss: the program saw each datagram once ($seen frames, $extra not from the test)"
else
	tap_fail "loss: the program saw $seen frames for $N datagrams"
fi
if [ "$got" -ge $((N - dropped)) ] && [ "$got" -le $((N - dropped + extra)) ]; then
	tap_ok "loss: every datagram the program did not drop arrived ($got = $N - $dropped, +-$extra)"
else
	tap_fail "loss: $got arrived, $dropped dropped of $N (+$extra others)"
fi
within5 "loss 10%: dropped" "$dropped" $N 0.10

# --- duplication (settings replaced in place) ---------------------------------------
id1=$(imp --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["prog_id"])')
tap_check "update in place to --dup 10 --reset" imp --dup 10 --reset
s=$(imp --json)
id2=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["prog_id"])' <<<"$s")
expect_eq "update kept the same program" "$id2" "$id1"
expect_eq "update replaced the settings (loss off, dup 10)" \
	"$(python3 -c 'import json,sys; d=json.load(sys.stdin)["settings"]; print(d["loss_pct"], d["dup_pct"])' <<<"$s")" "0 10"
flow dup "$IP4_B" "$IP4_B" --count $N --len 200
got=$(jq_ "$TMP/dup.json" 'd["received"]')
dups=$(jq_ "$TMP/dup.json" 'd["duplicates"]')
duplicated=$(ctr duplicated) seen=$(ctr seen)
# As with loss: the namespace's own IPv6 housekeeping passes the program too
# (clones are not counted in "seen"), and it duplicates those frames as well;
# their copies never reach the UDP receiver. So up to $extra of the program's
# duplicates are not ours (a CI run once had 393 duplicated, 392 received).
extra=$((seen - N))
if [ "$extra" -ge 0 ] && [ "$extra" -le 20 ] &&
	[ "$got" -ge $((N + duplicated - extra)) ] && [ "$got" -le $((N + duplicated)) ]; then
	tap_ok "dup: arrived = sent + duplicated ($got = $N + $duplicated, -0..$extra not from the test)"
else
	tap_fail "dup: arrived = sent + duplicated: $got arrived, $N sent, $duplicated duplicated, $seen seen"
fi
if [ "$dups" -ge $((duplicated - extra)) ] && [ "$dups" -le "$duplicated" ]; then
	tap_ok "dup: receiver saw as many repeats as the program made ($dups of $duplicated, -0..$extra)"
else
	tap_fail "dup: receiver saw $dups repeats, the program made $duplicated (+-$extra others)"
fi
expect_eq "dup: nothing lost" "$(jq_ "$TMP/dup.json" 'd["unique"]')" "$N"
within5 "dup 10%: duplicated" "$duplicated" $N 0.10

# --- corruption -------------------------------------------------------------------
for fam in 4 6; do
	if [ $fam = 4 ]; then dst=$IP4_B; key="Udp InCsumErrors"; file=snmp; else dst=$IP6_B; key=Udp6InCsumErrors; file=snmp6; fi
	imp --corrupt 10 --reset >/dev/null
	e0=$(snmp "$NS_B" $file "$key")
	flow corrupt$fam "$dst" "$dst" raw --count $N --len 200
	e1=$(snmp "$NS_B" $file "$key")
	corrupted=$(ctr corrupted) seen=$(ctr seen)
	got=$(jq_ "$TMP/corrupt$fam.json" 'd["received"]')
	# Up to $extra of the corrupted frames may be the namespace's own
	# housekeeping (ICMPv6), which no UDP counter sees (a run once had 379
	# corrupted, 378 failed checksums).
	extra=$((seen - N)) bad=$((e1 - e0))
	if [ "$extra" -ge 0 ] && [ "$extra" -le 20 ] &&
		[ "$bad" -ge $((corrupted - extra)) ] && [ "$bad" -le "$corrupted" ]; then
		tap_ok "corrupt IPv$fam: every corrupted datagram failed the UDP checksum ($bad of $corrupted, -0..$extra not from the test)"
	else
		tap_fail "corrupt IPv$fam: $bad failed the UDP checksum, $corrupted corrupted, $seen seen for $N"
	fi
	expect_eq "corrupt IPv$fam: all others arrived" "$got" $((N - bad))
	within5 "corrupt 10% IPv$fam: corrupted" "$corrupted" $N 0.10
done

# --- ECN --------------------------------------------------------------------------
# 10 Mbit/s phantom link; Kmin 3 KB, Kmax 30 KB, Pmax 20 %.
ECN_ARGS=(--ecn-rate 10mbit --ecn-kmin 3000 --ecn-kmax 30000 --ecn-pmax 20)
imp "${ECN_ARGS[@]}" --reset >/dev/null
# Slow: 1000-byte datagrams at 250/s = 2 Mbit/s, a fifth of the rate.
flow slow "$IP4_B" "$IP4_B" --count 200 --len 1000 --tos 2 --pps 250
expect_eq "ECN: ECT(0) slower than the rate is never marked" \
	"$(jq_ "$TMP/slow.json" '(d["received"], d["ce"])')" "(200, 0)"
expect_eq "ECN: ...and the program marked none" "$(ctr ecn_marked)" 0

hdr0=$(snmp "$NS_B" snmp "Ip InHdrErrors")
ns_exec "$NS_B" tshark -i "$IF_B" -w "$TMP/ecn.pcap" -f "udp and ip" -a duration:8 >/dev/null 2>&1 &
tshark_pid=$!
NETNS_PIDS+=("$tshark_pid")
sleep 1.5
for tos in 2 1; do
	imp "${ECN_ARGS[@]}" --reset >/dev/null
	flow fast$tos "$IP4_B" "$IP4_B" --count 2000 --len 1000 --tos $tos
	marked=$(ctr ecn_marked)
	ce=$(jq_ "$TMP/fast$tos.json" 'd["ce"]')
	name=$([ $tos = 2 ] && echo "ECT(0)" || echo "ECT(1)")
	expect_eq "ECN: $name flat out arrives complete" "$(jq_ "$TMP/fast$tos.json" 'd["received"]')" 2000
	if [ "$ce" -gt 1000 ]; then tap_ok "ECN: $name faster than the rate is marked CE ($ce of 2000)"; else tap_fail "ECN: $name fast: only $ce of 2000 CE"; fi
	expect_eq "ECN: $name CE at the receiver = ecn_marked" "$ce" "$marked"
	sleep $((2000 * 1028 * 8 / 10000000 + 1)) # let the phantom queue drain
done
wait "$tshark_pid"
hdr1=$(snmp "$NS_B" snmp "Ip InHdrErrors")
expect_eq "ECN: the kernel accepted every marked IPv4 header (IpInHdrErrors)" $((hdr1 - hdr0)) 0
bad=$(tshark -r "$TMP/ecn.pcap" -o ip.check_checksum:TRUE -Y 'ip.checksum.status == 0' 2>/dev/null | wc -l)
ce_cap=$(tshark -r "$TMP/ecn.pcap" -o ip.check_checksum:TRUE -Y 'ip.dsfield.ecn == 3 && ip.checksum.status == 1' 2>/dev/null | wc -l)
if [ "$bad" -eq 0 ] && [ "$ce_cap" -gt 1000 ]; then
	tap_ok "ECN: tshark: $ce_cap CE packets, all IPv4 header checksums good"
else
	tap_fail "ECN: tshark: $bad bad IPv4 checksums, $ce_cap good CE packets"
fi

imp "${ECN_ARGS[@]}" --reset >/dev/null
flow notect "$IP4_B" "$IP4_B" --count 2000 --len 1000 --tos 0
over=$(ctr not_ect_over_threshold)
expect_eq "ECN: Not-ECT is never marked" "$(jq_ "$TMP/notect.json" '(d["received"], d["ce"], d["not_ect"])')" "(2000, 0, 2000)"
if [ "$over" -gt 1000 ]; then tap_ok "ECN: Not-ECT over the threshold is counted ($over)"; else tap_fail "ECN: not_ect_over_threshold $over"; fi
sleep 2

imp "${ECN_ARGS[@]}" --reset >/dev/null
flow fast6 "$IP6_B" "$IP6_B" --count 2000 --len 1000 --tos 2
ce=$(jq_ "$TMP/fast6.json" 'd["ce"]')
if [ "$ce" -gt 1000 ] && [ "$ce" = "$(ctr ecn_marked)" ]; then
	tap_ok "ECN: IPv6 ECT(0) fast is marked in the traffic class ($ce, = ecn_marked)"
else
	tap_fail "ECN: IPv6 CE $ce, ecn_marked $(ctr ecn_marked)"
fi
sleep 2

# The CP rule's profile. 1000-byte frames (958 B of payload), phantom rate
# 8 kbit/s (1000 B/s: the burst drains less than one frame), Kmin 500 frames,
# Kmax 1500 frames, Pmax 50 %: frame i finds i frames ahead of it, so frames
# 0..500 must never be marked, 1501.. always, and i in 501..1500 with
# probability 0.5 (i - 500) / 1000.
imp --ecn-rate 8kbit --ecn-kmin 500000 --ecn-kmax 1500000 --ecn-pmax 50 --reset >/dev/null
flow profile "$IP4_B" "$IP4_B" --count 2000 --len 958 --tos 2
res=$(python3 -c 'import json,math,sys
d=json.load(open(sys.argv[1])); s=d["ecn_by_seq"]
if len(s) != 2000 or "." in s: print("incomplete"); sys.exit()
low=sum(c=="3" for c in s[:499]); high=sum(c=="3" for c in s[1502:])
mid=sum(c=="3" for c in s[501:1501])
ps=[0.5*(i-500)/1000 for i in range(501,1501)]
m=sum(ps); sd=math.sqrt(sum(p*(1-p) for p in ps))
# the same by quarters of the linear part, for the report
q=[sum(c=="3" for c in s[501+250*k:751+250*k]) for k in range(4)]
qe=[sum(ps[250*k:250*(k+1)]) for k in range(4)]
print(low, high, len(s[1502:]), mid, "%.1f"%m, "%.1f"%sd, ",".join(map(str,q)), ",".join("%.1f"%x for x in qe))' "$TMP/profile.json")
set -- $res
if [ "$1" = incomplete ]; then
	tap_fail "ECN profile: the burst did not arrive complete"
else
	expect_eq "ECN profile: no mark at or below Kmin (frames 0..498)" "$1" 0
	expect_eq "ECN profile: every frame above Kmax marked (frames 1502..)" "$2" "$3"
	tap_diag "ECN profile, marks per quarter of Kmin..Kmax: $7 (expected $8)"
	if python3 -c 'import sys; o,m,s=float(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); sys.exit(abs(o-m) > 5*s)' "$4" "$5" "$6"; then
		tap_ok "ECN profile: $4 marks between Kmin and Kmax (expected $5, sigma $6)"
	else
		tap_fail "ECN profile: $4 marks between Kmin and Kmax (expected $5 +- 5 x $6)"
	fi
fi
q=$(imp --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["queue_max_bytes"])')
if [ "$q" -ge 1990000 ]; then tap_ok "ECN: phantom queue max reflects the burst ($q bytes)"; else tap_fail "ECN: queue max $q"; fi

# --ecn-limit: the phantom queue stops growing where a FIFO of that size would
# be full, and frames found above Kmax are still marked.
imp --ecn-rate 8kbit --ecn-kmin 10kb --ecn-kmax 20kb --ecn-limit 100kb --reset >/dev/null
flow limit "$IP4_B" "$IP4_B" --count 500 --len 958 --tos 2
q=$(imp --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["queue_max_bytes"])')
if [ "$q" -le 102400 ] && [ "$q" -gt 100000 ]; then
	tap_ok "--ecn-limit 100kb: the phantom queue peaked at $q bytes"
else
	tap_fail "--ecn-limit 100kb: queue max $q"
fi
expect_eq "--ecn-limit: marking continues at the limit" \
	"$(jq_ "$TMP/limit.json" 'sum(c == "3" for c in d["ecn_by_seq"][100:])')" 400

# --- watch ------------------------------------------------------------------------
lines=$(imp --watch 10 --samples 3 | python3 -c 'import json,sys
n=0
for l in sys.stdin: json.loads(l); n+=1
print(n)')
expect_eq "--watch 10 --samples 3: three JSON lines" "$lines" 3

# --- clear ------------------------------------------------------------------------
tap_check "--clear" imp --clear
expect_eq "--clear restored tc qdisc/filter output (clsact created by us, removed)" "$(tc_state)" "$before_tc"
tap_check "--clear again is a no-op" imp --clear

# A clsact and a filter that were there before stay, exactly.
ns_exec "$NS_A" tc qdisc add dev "$IF_A" clsact
ns_exec "$NS_A" tc filter add dev "$IF_A" egress prio 7 u32 match u32 0 0 classid 1:7
before_tc=$(tc_state)
imp --loss 1 >/dev/null
own=$(imp --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["settings"]["own_clsact"])')
expect_eq "an existing clsact is not ours" "$own" False
imp --clear
expect_eq "--clear kept the existing clsact and filter as they were" "$(tc_state)" "$before_tc"
ns_exec "$NS_A" tc qdisc del dev "$IF_A" clsact

# Our clsact, but somebody added a filter after us: the qdisc stays.
imp --loss 1 >/dev/null
ns_exec "$NS_A" tc filter add dev "$IF_A" ingress prio 7 u32 match u32 0 0 classid 1:7
imp --clear 2>/dev/null
if ns_exec "$NS_A" tc filter show dev "$IF_A" ingress | grep -q u32 &&
	! ns_exec "$NS_A" tc filter show dev "$IF_A" egress | grep -q xrxe_impair; then
	tap_ok "--clear keeps a clsact it created once another filter uses it"
else
	tap_fail "--clear with a foreign filter on our clsact"
fi
ns_exec "$NS_A" tc qdisc del dev "$IF_A" clsact

# --- command line -------------------------------------------------------------------
# bad STATUS DESC ARGS...: exit status and exactly one line on stderr.
bad() {
	local want=$1 desc=$2 rc
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" -eq "$want" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ]; then
		tap_ok "$desc: exit $rc, '$(cat "$TMP/err")'"
	else
		tap_fail "$desc: exit $rc (wanted $want)"
		tap_diag "$(cat "$TMP/err")"
	fi
}
bad 2 "missing IFACE" "$IMPAIR" --loss 1
bad 2 "not a percentage" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --loss ten
bad 2 "percentage above 100" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --dup 100.5
bad 2 "negative percentage" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --corrupt -1
bad 2 "unknown rate unit" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --ecn-rate 5furlongs
bad 2 "rate above 100gbit" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --ecn-rate 200gbit
bad 2 "kmin without a rate" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --ecn-kmin 10kb
bad 2 "zero queue limit" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --ecn-rate 1gbit --ecn-limit 0
bad 2 "kmin above kmax" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --ecn-rate 1gbit --ecn-kmin 20kb --ecn-kmax 10kb
bad 2 "unknown option" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --jitter 5
bad 2 "option without its value" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --loss
bad 2 "--clear with settings" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --clear --loss 1
bad 2 "not root" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$IMPAIR" lo --loss 1
bad 1 "no such interface" ns_exec "$NS_A" "$IMPAIR" nosuchif0 --loss 1
bad 1 "--stats where nothing is attached" ns_exec "$NS_A" "$IMPAIR" "$IF_A" --stats
if "$IMPAIR" --help | grep -q "^SYNOPSIS" && "$IMPAIR" --help | grep -q "phantom queue"; then
	tap_ok "--help prints the manual page"
else
	tap_fail "--help"
fi
expect_eq "nothing left behind after the error cases" "$(tc_state)" "$initial_tc"

exit $TAP_FAILED
