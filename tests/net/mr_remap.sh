#!/usr/bin/env bash
# The registered-memory remap registry of the verbs shim (src/verbs/mr_remap.c)
# through its test program, tests/net/mr_remap_test.c, which prints TAP: heap,
# stack, mmap, .data and .bss registrations, overlap, fork, refusals, cost.
#
#   tests/net/mr_remap.sh       (BUILD=build-san runs it under ASan/UBSan)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
BUILD=${BUILD:-build}
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$XRXE_ROOT/$BUILD ;; esac
T=$BDIR/tests/net/mr_remap_test
if [ ! -x "$T" ]; then
	tap_fail "mr_remap_test is built ($T; make tests)"
	exit 1
fi
"$T"
