#!/usr/bin/env bash
# Tag matching (docs/architecture.md "Tag matching"): rdma-core's own
# test_tag_matching through tests/net/rdma_core_suite.sh (its 4 tests pass:
# matched EAGER, unexpected with the count and sync, NO_TAG, and rendezvous,
# whose matched RNDV completes MATCH then DATA_VALID with the sender's data
# READ by the receiving QP and the FIN received by the sender; payloads
# checked by the suite), then tests/verbs/tm_rndv on one daemon: a
# rendezvous of 20000 bytes checked byte for byte, and the hostile RVHs (a
# length past the tagged buffer, a bad rkey) failing the tagged buffer only.
#
#   tests/net/tag_matching.sh   (BUILD=build-san etc. to test another build)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"

BUILD=${BUILD:-build}
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$XRXE_ROOT/$BUILD ;; esac
XRXED=$BDIR/bin/xrxed
XRXE=$BDIR/bin/xrxe

out=$(RDMA_CORE_ONLY='*tag_matching*' XRXE_ROOT=$XRXE_ROOT BUILD=$BUILD \
	bash "$XRXE_ROOT/tests/net/rdma_core_suite.sh" 2>&1)
if printf '%s\n' "$out" | grep -q '# SKIP'; then
	printf '%s\n' "$out" | grep '# SKIP' | head -1
else
	for t in test_tm_traffic test_tm_unexpected_tag test_tm_no_tag test_tm_rndv; do
		tap_check "rdma-core tag matching: $t passes" \
			bash -c 'printf "%s\n" "$1" | grep -q "^ok - test_tag_matching.TMTest.$2\$"' _ "$out" "$t"
	done
	[ "${TAP_FAILED:-0}" = 1 ] && tap_diag "$out"
fi

if [ "$(id -u)" -ne 0 ]; then
	tap_skip "tests/verbs/tm_rndv" "needs root (namespaces)"
	exit "${TAP_FAILED:-0}"
fi
if [ ! -x "$XRXED" ] || [ ! -x "$XRXE" ] || [ ! -x "$BDIR/tests/verbs/tm_rndv" ]; then
	tap_fail "xrxed, xrxe and tests/verbs/tm_rndv are built ($BDIR; make tests)"
	exit 1
fi
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; netns_cleanup' EXIT
netns_reap_stale
netns_pair 47 1500
ns_bg "$NS_A" bash -c "exec '$XRXED' -m skb '$IF_A' >'$TMP/xrxed.log' 2>&1"
PID_A=$NETNS_LAST_PID
for _ in $(seq 100); do
	[ -S "/run/xrxe/$IF_A.sock" ] && break
	sleep 0.1
done
if [ ! -S "/run/xrxe/$IF_A.sock" ]; then
	tap_fail "xrxed started on $IF_A"
	tap_diag "$(cat "$TMP/xrxed.log")"
	exit 1
fi
prog_out=$(ns_exec "$NS_A" timeout 60 "$XRXE" run -- "$BDIR/tests/verbs/tm_rndv" "xrxe_$IF_A" 1 2>&1)
rc=$?
grep -E '^(ok|not ok) - ' <<<"$prog_out" | while IFS= read -r line; do
	case $line in
	"ok - "*) tap_ok "${line#ok - }" ;;
	*) tap_fail "${line#not ok - }" ;;
	esac
done
grep -q '^not ok' <<<"$prog_out" && TAP_FAILED=1
if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$prog_out"; then
	tap_fail "tm_rndv exited with status $rc"
	tap_diag "$(tail -20 <<<"$prog_out")"
	tap_diag "$(tail -20 "$TMP/xrxed.log")"
fi
# The daemon's counters: three READs started (the bad rkey's too: the
# sender's side refuses it), one RVH refused before any READ (too long)
stats=$(ns_exec "$NS_A" "$XRXE" stats "$IF_A" 2>/dev/null)
ctr() { awk -v n="$1" '$1 == n { print $2 }' <<<"$stats"; }
tap_check "xrxed counts the rendezvous: transport.tm_rndv 3 (got $(ctr transport.tm_rndv)), tm_rndv_bad 1 (got $(ctr transport.tm_rndv_bad))" \
	test "$(ctr transport.tm_rndv)/$(ctr transport.tm_rndv_bad)" = 3/1
tap_check "xrxed is still running" kill -0 "$PID_A"
exit "${TAP_FAILED:-0}"
