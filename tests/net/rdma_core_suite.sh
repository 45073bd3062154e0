#!/usr/bin/env bash
# rdma-core's own conformance suite (python3-pyverbs: /usr/share/doc/rdma-core/
# tests, run_tests.py) against an xrxe device: one daemon in a namespace, the
# suite through `xrxe run`, one TAP line per suite test (the suite's own skips
# with their own reasons), then the suite's summary and counts per test file
# as comments. Tests we exclude are listed in tests/net/rdma_core_suite.exclude,
# each with its reason, and README.md says why.
#
#   tests/net/rdma_core_suite.sh     (BUILD=build-san etc. to test another build;
#                                     RDMA_CORE_TESTS=DIR for another copy of the suite;
#                                     RDMA_CORE_ONLY=PATTERN to run only matching tests)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"

BUILD=${BUILD:-build}
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$XRXE_ROOT/$BUILD ;; esac
XRXED=$BDIR/bin/xrxed
XRXE=$BDIR/bin/xrxe
PY=/usr/bin/python3 # pyverbs is only installed for Debian's interpreter
SUITE=${RDMA_CORE_TESTS:-/usr/share/doc/rdma-core/tests}
EXCLUDE=$XRXE_ROOT/tests/net/rdma_core_suite.exclude

if [ "$(id -u)" -ne 0 ]; then
	tap_skip "rdma-core test suite" "needs root (namespaces)"
	exit 0
fi
if [ ! -x "$XRXED" ] || [ ! -x "$XRXE" ]; then
	tap_fail "xrxed and xrxe are built ($BDIR/bin; make)"
	exit 1
fi
if [ ! -x "$PY" ] || ! "$PY" -c 'import pyverbs.device' 2>/dev/null ||
	[ ! -f "$SUITE/run_tests.py" ]; then
	tap_skip "rdma-core test suite" "python3-pyverbs and its tests ($SUITE) are not installed (scripts/deps.sh)"
	exit 0
fi
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"
netns_tmpdir TMP
netns_reap_stale
netns_pair 44 1500

# The suite's tests that put objects on 2 MiB huge pages skip without a pool
# ("There are no huge pages of size 2M allocated"): a small one for the run,
# the old size put back at exit. If the kernel cannot find the memory, they
# still skip with that reason.
HUGE=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ -w "$HUGE" ] && [ "$(cat "$HUGE")" -lt 8 ]; then
	netns_at_exit "echo $(cat "$HUGE") >'$HUGE'"
	echo 8 >"$HUGE" 2>/dev/null
fi

# Debian gzips the larger files of the suite: a private copy, gunzipped.
cp -r "$SUITE" "$TMP/tests"
find "$TMP/tests" -name '*.py.gz' -exec gunzip -f {} +

ns_bg "$NS_A" bash -c "exec '$XRXED' -m skb '$IF_A' >'$TMP/xrxed.log' 2>&1"
DAEMON=$NETNS_LAST_PID
if ! netns_wait_file "/run/xrxe/$IF_A.sock" 10; then
	tap_fail "xrxed started on $IF_A"
	tap_diag "$(cat "$TMP/xrxed.log")"
	exit 1
fi

# The suite finds the IP address of a device (for its RDMA CM tests) through
# the kernel's sysfs: /sys/class/infiniband/DEV/device/net/NETDEV. `xrxe run`
# shows that directory for every xrxe device of the namespace (its device
# view, tools/run_view.c), so the suite needs nothing more.
# `xrxe run -- python3 ...` as a user would type it: python3 is Debian's. The
# runner bounds each test (a hang is one failure, not a stuck CI); the whole
# run is bounded too.
only=""
[ -n "${RDMA_CORE_ONLY:-}" ] && only="-k '$RDMA_CORE_ONLY'"
ns_exec "$NS_A" bash -c "exec env PATH=\"/usr/bin:\$PATH\" timeout 600 \
	'$XRXE' run -- '$PY' '$XRXE_ROOT/tests/net/rdma_core_suite.py' '$TMP/tests' \
	--exclude-file '$EXCLUDE' --per-test-timeout 60 --dev 'xrxe_$IF_A' $only" \
	>"$TMP/suite.out" 2>"$TMP/suite.err"
rc=$?
# Numbers are ours (tap.sh's style, no numbers); the suite's lines pass through.
sed -E -n 's/^(ok|not ok) [0-9]+ - /\1 - /p; /^#/p' "$TMP/suite.out"
if ! grep -qE '^(ok|not ok) ' "$TMP/suite.out"; then
	tap_fail "the rdma-core suite ran no test (exit status $rc)"
	tap_diag "$(tail -30 "$TMP/suite.err")"
elif [ $rc -ne 0 ] && ! grep -q '^not ok' "$TMP/suite.out"; then
	tap_fail "the rdma-core suite exited with status $rc"
	tap_diag "$(tail -30 "$TMP/suite.err")"
	tap_diag "$(tail -20 "$TMP/xrxed.log")"
fi
# The daemon served the whole suite; stopped now, it must go cleanly (under
# BUILD=build-san it reports leaks and undefined behaviour at exit).
kill "$DAEMON" 2>/dev/null
wait "$DAEMON" 2>/dev/null
if grep -qE "Sanitizer|runtime error" "$TMP/xrxed.log"; then
	tap_fail "no sanitizer report from the daemon"
	tap_diag "$(grep -E -A5 "Sanitizer|runtime error" "$TMP/xrxed.log" | head -n 30)"
fi
exit 0
