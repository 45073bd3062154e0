#!/usr/bin/env bash
# Wireshark's InfiniBand CM dissector as an independent decoder of the CM MADs
# xrxe builds. test_cm_mad's cm_tshark suite, with XRXE_CM_GEN_DIR set, writes
# one RoCEv2 frame per MAD type (src/cm/mad.c's codec inside a UD SEND_ONLY
# from QP1 to QP1 with the GSI Q_Key, built by src/wire) and the field values
# it set; tshark decodes the pcap and every field must come out as set, with
# no malformed packet and no expert error. One TAP line per frame.
#
# Wireshark 4.0 has no dissector for MRA, SIDR_REQ and SIDR_REP (it says
# "Dissector Not Implemented"): for those, the MAD header and the raw
# attribute bytes are compared. It also reads the REQ's flow label and packet
# rate from the wrong bits (the kernel's REQs decode wrong too), so those two
# are left out; tests/unit/test_cm_mad.c checks them against the kernel's.
set -u
cd "$(dirname "$0")/../.."
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
BUILD=${BUILD:-build}
GEN=$BUILD/tests/unit/test_cm_mad

if ! command -v tshark >/dev/null 2>&1; then
	tap_skip "tshark decodes xrxe-built CM MADs" "tshark is not installed"
	exit 0
fi
if [ ! -x "$GEN" ]; then
	tap_fail "tshark_cm: $GEN is not built (make tests)"
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! XRXE_CM_GEN_DIR=$tmp "$GEN" --filter 'cm_tshark/*' --ascii -j1 >"$tmp/gen.log" 2>&1 ||
	[ ! -s "$tmp/cm.pcap" ] || [ ! -s "$tmp/expected.txt" ]; then
	tap_fail "tshark_cm: generating the frames failed"
	sed 's/^/#   /' "$tmp/gen.log" | tail -n 20
	exit 1
fi

# Columns: frame number, malformed, expert severities, expert messages, then the fields.
mapfile -t fields < <(awk '$2 != "#" { print $2 }' "$tmp/expected.txt" | sort -u)
args=(-e frame.number -e _ws.malformed -e _ws.expert.severity -e _ws.expert.message)
declare -A col
i=4
for f in "${fields[@]}"; do
	args+=(-e "$f")
	col[$f]=$i
	i=$((i + 1))
done

if ! tshark -n -r "$tmp/cm.pcap" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
	-T fields -E separator='|' -E occurrence=a -E aggregator=, "${args[@]}" \
	>"$tmp/decoded.tsv" 2>"$tmp/tshark.err"; then
	tap_fail "tshark could not read the pcap"
	sed 's/^/#   /' "$tmp/tshark.err"
	exit 1
fi

declare -A decoded
while IFS= read -r line; do
	decoded[${line%%|*}]=$line
done <"$tmp/decoded.tsv"

# hex_norm V: an integer as tshark prints it (0x... or decimal) to bare
# lowercase hex without leading zeros.
hex_norm() {
	local v=$1
	case $v in
	0x* | 0X*) v=${v:2} ;;
	*) v=$(printf '%x' "$v" 2>/dev/null) || return 1 ;;
	esac
	v=${v,,}
	v=${v#"${v%%[!0]*}"}
	echo "${v:-0}"
}

# check KIND WANT GOT: GOT is every occurrence tshark printed, comma-separated.
check() {
	local kind=$1 want=$2 got=$3 o
	local -a occ
	IFS=, read -r -a occ <<<"$got"
	for o in "${occ[@]}"; do
		case $kind in
		u) [ "$(hex_norm "$o")" = "$want" ] && return 0 ;;
		b) o=${o//:/}; [ "${o,,}" = "$want" ] && return 0 ;;
		s) [ "$o" = "$want" ] && return 0 ;;
		esac
	done
	return 1
}

frames=$(awk '$2 == "#" { n++ } END { print n + 0 }' "$tmp/expected.txt")
if [ "$frames" -lt 10 ]; then
	tap_fail "tshark_cm: expected 10 frames, the generator wrote $frames"
	exit 1
fi

for ((n = 1; n <= frames; n++)); do
	title=$(awk -v n="$n" '$1 == n && $2 == "#" { $1 = ""; $2 = ""; sub(/^  /, ""); print }' \
		"$tmp/expected.txt")
	line=${decoded[$n]:-}
	if [ -z "$line" ]; then
		tap_fail "frame $n $title: not in tshark's output"
		continue
	fi
	IFS='|' read -r -a cols <<<"$line"
	errs=()
	checked=0
	[ -n "${cols[1]:-}" ] && errs+=("malformed packet: ${cols[1]}")
	IFS=, read -r -a sev <<<"${cols[2]:-}"
	IFS=, read -r -a msg <<<"${cols[3]:-}"
	for k in "${!sev[@]}"; do
		# expert severities: 2097152 chat, 4194304 note, 6291456 warn, 8388608 error
		if [ "${sev[$k]}" -ge 8388608 ]; then
			errs+=("expert error: ${msg[$k]:-?}")
		elif [ "${sev[$k]}" -ge 6291456 ]; then
			tap_diag "frame $n: expert warning: ${msg[$k]:-?}"
		fi
	done
	while read -r _ field kind want; do
		got=${cols[${col[$field]}]:-}
		if [ -z "$got" ]; then
			errs+=("$field: not decoded (want $want)")
		elif ! check "$kind" "${want,,}" "$got"; then
			errs+=("$field: tshark says ${got:0:80}, we built ${want:0:80}")
		fi
		checked=$((checked + 1))
	done < <(awk -v n="$n" '$1 == n && $2 != "#"' "$tmp/expected.txt")

	if [ ${#errs[@]} -eq 0 ]; then
		tap_ok "frame $n $title: $checked fields decode as built"
	else
		tap_fail "frame $n $title"
		printf '%s\n' "${errs[@]}" | sed 's/^/#   /'
	fi
done
[ "$TAP_FAILED" -eq 0 ]
