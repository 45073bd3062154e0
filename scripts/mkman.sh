#!/usr/bin/env bash
# Build the man pages from the programs' own --help text (scripts/mkman.py),
# so that a page cannot say something --help does not:
#
#   scripts/mkman.sh BUILD OUTDIR
#
#   xrxe.8         `xrxe --help`, then every `xrxe help CMD` as a subsection
#   xrxed.8        `xrxed --help`
#   xrxe-impair.8  `xrxe-impair --help`
#   xrxe.7         man/xrxe.7.txt (what applications see; no program has it)
#
# The date is SOURCE_DATE_EPOCH's (dpkg-buildpackage sets it), else the last
# commit's, so rebuilding the same tree gives the same pages.
set -euo pipefail
build=$1 out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkman=$root/scripts/mkman.py
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
	date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)
else
	date=$(git -C "$root" log -1 --format=%cs 2>/dev/null || date -u +%F)
fi
version=$("$build/bin/xrxe" --version | awk '{print $2}')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

subs=()
for cmd in $("$build/bin/xrxe" --help | awk '/^COMMANDS$/ {on=1; next} /^[A-Z]/ {on=0} on && /^    [a-z]+ / {print $1}'); do
	"$build/bin/xrxe" help "$cmd" >"$tmp/$cmd.txt"
	subs+=(--sub "xrxe $cmd" "$tmp/$cmd.txt")
done
"$build/bin/xrxe" --help | "$mkman" xrxe 8 --date "$date" --version "$version" "${subs[@]}" >"$tmp/xrxe.8"
"$build/bin/xrxed" --help | "$mkman" xrxed 8 --date "$date" --version "$version" >"$tmp/xrxed.8"
"$build/bin/xrxe-impair" --help | "$mkman" xrxe-impair 8 --date "$date" --version "$version" >"$tmp/xrxe-impair.8"
"$mkman" xrxe 7 --date "$date" --version "$version" <"$root/man/xrxe.7.txt" >"$tmp/xrxe.7"
mv "$tmp"/xrxe.8 "$tmp"/xrxed.8 "$tmp"/xrxe-impair.8 "$tmp"/xrxe.7 "$out/"
