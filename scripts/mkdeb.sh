#!/usr/bin/env bash
# make deb: build the Debian package from this tree (debian/, dpkg-buildpackage)
# in a copy under BUILD/deb/, so the tree's own build/ is left alone, then run
# lintian on it.
#
#   scripts/mkdeb.sh BUILD     -> BUILD/deb/xrxe_VERSION_ARCH.deb (+ lintian.txt)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/${1:-build}/deb
for t in dpkg-buildpackage dh lintian; do
	command -v $t >/dev/null || { echo "mkdeb: $t is missing (make deps)" >&2; exit 1; }
done
rm -rf "$out" && mkdir -p "$out/src"
# The tree as it is (tracked and new files, not what .gitignore leaves out).
(cd "$root" && git ls-files -co --exclude-standard -z | grep -zv '^build' |
	xargs -0 cp --parents -t "$out/src")
(cd "$out/src" && dpkg-buildpackage -us -uc -b >"$out/build.log" 2>&1) || {
	tail -n 30 "$out/build.log" >&2
	exit 1
}
deb=$(ls "$out"/xrxe_*.deb)
# lintian's verdict, with our overrides (debian/xrxe.lintian-overrides explains each).
lintian --info --display-info "$deb" "$out"/*.changes >"$out/lintian.txt" 2>&1 || true
echo "$deb"
cat "$out/lintian.txt"
