#!/usr/bin/env bash
# The man pages agree with --help: xrxe(8), xrxed(8), xrxe-impair(8) are made
# from the programs' --help text by scripts/mkman.sh, xrxe(7) from
# man/xrxe.7.txt. Checked here: every page renders without a groff warning;
# every option (--long) and every command's synopsis of --help is in the
# rendered page, and the page names no option --help does not; the pages
# `make man` built (and `make install` installs) are the ones the current
# binaries give.
#
#   tests/unit/man_pages.sh
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
BUILD=${BUILD:-build}
B=$XRXE_ROOT/$BUILD/bin
for p in xrxe xrxed xrxe-impair; do
	[ -x "$B/$p" ] || { tap_fail "$B/$p is built (run make)"; exit 1; }
done
command -v groff >/dev/null || { tap_skip "man pages" "groff is not installed"; exit 0; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
tap_check "scripts/mkman.sh makes the four pages" "$XRXE_ROOT/scripts/mkman.sh" "$B/.." "$TMP/man"

# render PAGE: plain text, one very long line per paragraph, no hyphenation
# (an option split across lines would not be found).
render() { groff -man -Tutf8 -rLL=2000n -rHY=0 -P-cbou "$1" 2>/dev/null; }
options() { grep -oE -- '--[a-z][a-z0-9-]*[a-z0-9]' | sort -u; }

for page in xrxe.8 xrxed.8 xrxe-impair.8 xrxe.7; do
	f=$TMP/man/$page
	tap_check "$page: groff -man -ww renders it without a warning" \
		bash -c '[ -s "$1" ] && w=$(groff -man -ww -z "$1" 2>&1) && [ -z "$w" ] || { echo "$w"; exit 1; }' _ "$f"
done

# help_of PAGE: the --help text a page is made from.
help_of() {
	case $1 in
	xrxe.8)
		"$B/xrxe" --help
		for c in $("$B/xrxe" --help | awk '/^COMMANDS$/ {on=1; next} /^[A-Z]/ {on=0} on && /^    [a-z]+ / {print $1}'); do
			"$B/xrxe" help "$c"
		done ;;
	xrxed.8) "$B/xrxed" --help ;;
	xrxe-impair.8) "$B/xrxe-impair" --help ;;
	esac
}

for page in xrxe.8 xrxed.8 xrxe-impair.8; do
	help_of "$page" >"$TMP/$page.help"
	render "$TMP/man/$page" >"$TMP/$page.txt"
	options <"$TMP/$page.help" >"$TMP/$page.help.opts"
	options <"$TMP/$page.txt" >"$TMP/$page.man.opts"
	n=$(wc -l <"$TMP/$page.help.opts")
	tap_check "$page: all $n options of --help are in the page, and no other" \
		diff "$TMP/$page.help.opts" "$TMP/$page.man.opts"
	# Every synopsis line, as --help has it (spaces collapsed).
	tap_check "$page: every SYNOPSIS line of --help is in the page" bash -c '
		norm() { tr -s " " <"$1"; }
		awk "/^SYNOPSIS\$/ {on=1; next} /^[A-Z]/ {on=0} on && NF" "$1" | sed "s/^ *//" | tr -s " " |
		while IFS= read -r l; do norm "$2" | grep -qF -- "$l" || { echo "missing: $l"; exit 1; }; done' \
		_ "$TMP/$page.help" "$TMP/$page.txt"
done
tap_check "xrxe.8: a subsection per command of 'xrxe --help'" bash -c '
	n=$("$1" --help | awk "/^COMMANDS\$/ {on=1; next} /^[A-Z]/ {on=0} on && /^    [a-z]+ / {print}" | wc -l)
	[ "$n" -gt 0 ] && [ "$(grep -c "^\.SS \"xrxe " "$2")" = "$n" ]' _ "$B/xrxe" "$TMP/man/xrxe.8"

render "$TMP/man/xrxe.7" >"$TMP/xrxe.7.txt"
tap_check "xrxe.7: names both shims and the device, from man/xrxe.7.txt" bash -c \
	'grep -q libibverbs.so.1 "$1" && grep -q librdmacm.so.1 "$1" && grep -q xrxe_IFACE "$1"' _ "$TMP/xrxe.7.txt"
# The environment variables it documents are the ones the shims read.
tap_check "xrxe.7: every XRXE_* variable it names is read by the shims or xrxe run" bash -c '
	for v in $(grep -oE "XRXE_[A-Z_]+" "$1" | sort -u); do
		grep -rqs "\"$v\"" "$2"/src/verbs "$2"/src/rdmacm "$2"/src/shim "$2"/tools/cmd_run.c "$2"/include || { echo "$v read nowhere"; exit 1; }
	done' _ "$TMP/xrxe.7.txt" "$XRXE_ROOT"

# What `make man` built must be what the binaries say now.
if [ -d "$XRXE_ROOT/$BUILD/man" ]; then
	tap_check "the pages make man built are current" diff -r "$TMP/man" "$XRXE_ROOT/$BUILD/man"
else
	tap_skip "the pages make man built are current" "make man has not run for $BUILD"
fi
