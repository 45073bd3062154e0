#!/usr/bin/env bash
# Tag matching's eager path (docs/architecture.md "Tag matching"): rdma-core's
# own test_tag_matching through tests/net/rdma_core_suite.sh with
# XRXE_TM_EAGER=1, which offers tm_caps before rendezvous works. Expected:
# test_tm_traffic, test_tm_unexpected_tag and test_tm_no_tag pass (matched,
# unexpected with the count and sync, NO_TAG; payload checked by the suite),
# and test_tm_rndv fails on the one thing missing: its matched RNDV completes
# with IBV_WC_TM_RNDV_INCOMPLETE (status 23), never a crash or a hang.
# Without the knob tm_caps is zero and the suite's run skips all 4.
#
#   tests/net/tag_matching.sh   (BUILD=build-san etc. to test another build)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"

out=$(XRXE_TM_EAGER=1 RDMA_CORE_ONLY='*tag_matching*' XRXE_ROOT=$XRXE_ROOT \
	bash "$XRXE_ROOT/tests/net/rdma_core_suite.sh" 2>&1)
if printf '%s\n' "$out" | grep -q '# SKIP'; then
	printf '%s\n' "$out" | grep '# SKIP' | head -1
	exit 0
fi
for t in test_tm_traffic test_tm_unexpected_tag test_tm_no_tag; do
	tap_check "eager tag matching: $t passes" \
		bash -c 'printf "%s\n" "$1" | grep -q "^ok - test_tag_matching.TMTest.$2\$"' _ "$out" "$t"
done
tap_check "a matched RNDV completes IBV_WC_TM_RNDV_INCOMPLETE (23), rendezvous not done yet" \
	bash -c 'printf "%s\n" "$1" | grep -q "^not ok - test_tag_matching.TMTest.test_tm_rndv .*Completion status is 23"' _ "$out"
[ "${TAP_FAILED:-0}" = 1 ] && tap_diag "$out"
exit "${TAP_FAILED:-0}"
