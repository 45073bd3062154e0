#!/usr/bin/env bash
# Wireshark as an independent decoder of xrxe's builder: tests/net/wire_gen
# builds one frame per opcode in xrxe's table (IPv4, and IPv6 behind a VLAN
# tag) and prints the field values it set; tshark decodes the pcap and every
# field must come out as set, with no malformed packet and no expert error.
# One TAP line per frame.
#
# RoCEv2 needs no tshark preference: Wireshark's RRoCE dissector claims UDP
# port 4791 by default. We do turn on IPv4 and UDP checksum validation, so the
# checksums our builder computes are verified too.
set -u
cd "$(dirname "$0")/../.."
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
BUILD=${BUILD:-build}
GEN=$BUILD/tests/net/wire_gen

if ! command -v tshark >/dev/null 2>&1; then
	tap_skip "tshark decodes xrxe-built frames" "tshark is not installed"
	exit 0
fi
if [ ! -x "$GEN" ]; then
	tap_fail "tshark: $GEN is not built (make tests)"
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$GEN" "$tmp/gen.pcap" >"$tmp/expected.txt"; then
	tap_fail "tshark: wire_gen failed"
	exit 1
fi

mapfile -t fields < <(awk '$2 != "#" { print $2 }' "$tmp/expected.txt" | sort -u)
# Columns: frame number, malformed, expert severities, expert messages, then the fields.
args=(-e frame.number -e _ws.malformed -e _ws.expert.severity -e _ws.expert.message)
declare -A col
i=4
for f in "${fields[@]}"; do
	args+=(-e "$f")
	col[$f]=$i
	i=$((i + 1))
done
vendor_col=${col[infiniband.vendor]:-}

if ! tshark -n -r "$tmp/gen.pcap" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
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

# check VALUE HEX DEC: does tshark's rendering of a value equal ours?
# tshark prints hex fields as 0x..., decimal ones as digits, booleans as
# 0/1 (or True/False), byte strings as hex (maybe with colons).
check() {
	local v=${1%%,*} hex=$2 dec=$3 b
	if [ "$dec" = - ]; then
		# byte strings: Wireshark may add the item more than once (also
		# for a prefix of it); one occurrence must be exactly ours
		IFS=, read -r -a occ <<<"$1"
		for b in "${occ[@]}"; do
			b=${b//:/}
			[ "${b,,}" = "$hex" ] && return 0
		done
		return 1
	fi
	case $v in
	0x* | 0X*)
		v=${v:2}
		v=${v,,}
		v=${v#"${v%%[!0]*}"}
		[ -z "$v" ] && v=0
		[ "$v" = "$hex" ] ;;
	True) [ "$dec" = 1 ] ;;
	False) [ "$dec" = 0 ] ;;
	*) [ "$v" = "$dec" ] ;;
	esac
}

frames=$(awk '$2 == "#" { n++ } END { print n + 0 }' "$tmp/expected.txt")
if [ "$frames" -eq 0 ]; then
	tap_fail "tshark: wire_gen produced no frames"
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
	raw=""
	[ -n "$vendor_col" ] && raw=${cols[$vendor_col]:-}
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
	while read -r _ field hex dec; do
		v=${cols[${col[$field]}]:-}
		if [ -z "$v" ]; then
			# A Wireshark without a dissector for this opcode (4.0: FLUSH,
			# ATOMIC WRITE, CNP) shows the bytes after the BTH raw; those
			# are compared instead of the fields. A newer one decodes the
			# fields and shows no raw bytes.
			if [ -n "$raw" ] || [ "$field" = infiniband.vendor ]; then
				continue
			fi
			errs+=("$field: not decoded (want $dec)")
		elif ! check "$v" "$hex" "$dec"; then
			errs+=("$field: tshark says $v, we built ${hex}/${dec}")
		fi
		checked=$((checked + 1))
	done < <(awk -v n="$n" '$1 == n && $2 != "#"' "$tmp/expected.txt")

	if [ ${#errs[@]} -eq 0 ]; then
		tap_ok "frame $n $title: $checked fields decode as built${raw:+ (Wireshark shows the headers as raw bytes)}"
	else
		tap_fail "frame $n $title"
		printf '%s\n' "${errs[@]}" | sed 's/^/#   /'
	fi
done
[ "$TAP_FAILED" -eq 0 ]
