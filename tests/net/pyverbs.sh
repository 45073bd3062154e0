#!/usr/bin/env bash
# pyverbs (python3-pyverbs, rdma-core's own bindings) against xrxe: one daemon
# in a namespace, tests/net/pyverbs_loopback.py run through `xrxe run` with
# two QPs of the one device talking through the daemon's loopback. Checks
# queries, RC/UC/UD traffic, memory windows type 1 and 2, invalidation,
# ATOMIC_WRITE, rereg and extended-CQ polling (see the .py for the list);
# then tests/verbs/flush_loopback (ibv_wr_flush, which pyverbs 44 lacks),
# tests/verbs/dm_domain (device memory, parent and thread domains),
# tests/verbs/xrc_domains (XRC domains, shared target QPs),
# tests/verbs/odp (on-demand paging), tests/verbs/import (importing a
# context, PDs, MRs and device memory) and tests/verbs/peer_not_ready (a
# modify served while another QP waits for a peer that is not ready).
#
#   tests/net/pyverbs.sh       (BUILD=build-san etc. to test another build)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"

BUILD=${BUILD:-build}
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$XRXE_ROOT/$BUILD ;; esac
XRXED=$BDIR/bin/xrxed
XRXE=$BDIR/bin/xrxe
PY=/usr/bin/python3 # pyverbs is only installed for Debian's interpreter

if [ "$(id -u)" -ne 0 ]; then
	tap_skip "pyverbs loopback" "needs root (namespaces)"
	exit 0
fi
if [ ! -x "$XRXED" ] || [ ! -x "$XRXE" ]; then
	tap_fail "xrxed and xrxe are built ($BDIR/bin; make)"
	exit 1
fi
if [ ! -x "$PY" ] || ! "$PY" -c 'import pyverbs.device' 2>/dev/null; then
	tap_skip "pyverbs loopback" "python3-pyverbs is not installed (scripts/deps.sh)"
	exit 0
fi
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; netns_cleanup' EXIT
netns_reap_stale
netns_pair 43 1500
# tests/verbs/odp registers a 2 MiB hugetlb page (IBV_ACCESS_HUGETLB): a small
# pool for the run, the old size put back at exit (it says SKIP if the
# kernel cannot find the memory).
HUGE=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ -w "$HUGE" ] && [ "$(cat "$HUGE")" -lt 2 ]; then
	netns_at_exit "echo $(cat "$HUGE") >'$HUGE'"
	echo 2 >"$HUGE" 2>/dev/null
fi
ns_bg "$NS_A" bash -c "exec '$XRXED' -m skb '$IF_A' >'$TMP/xrxed.log' 2>&1"
for _ in $(seq 100); do
	[ -S "/run/xrxe/$IF_A.sock" ] && break
	sleep 0.1
done
if [ ! -S "/run/xrxe/$IF_A.sock" ]; then
	tap_fail "xrxed started on $IF_A"
	tap_diag "$(cat "$TMP/xrxed.log")"
	exit 1
fi
# `xrxe run -- python3 ...` as a user would type it: python3 is Debian's.
out=$(ns_exec "$NS_A" env PATH="/usr/bin:$PATH" timeout 120 \
	"$XRXE" run -- python3 "$XRXE_ROOT/tests/net/pyverbs_loopback.py" "xrxe_$IF_A" 1 2>&1)
rc=$?
grep -E '^(ok|not ok) ' <<<"$out" | sed -E 's/^(ok|not ok) [0-9]+ - /\1 - /' |
	while IFS= read -r line; do
		case $line in
		"ok - "*) tap_ok "${line#ok - }" ;;
		*) tap_fail "${line#not ok - }" ;;
		esac
	done
grep -E '^# ' <<<"$out" | while IFS= read -r line; do tap_diag "${line#\# }"; done
if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$out"; then
	tap_fail "pyverbs_loopback.py exited with status $rc"
	tap_diag "$(tail -20 <<<"$out")"
	tap_diag "$(tail -20 "$TMP/xrxed.log")"
fi
# verbs_prog NAME: tests/verbs/NAME on the device, its TAP lines folded in.
verbs_prog() {
	local prog=$BDIR/tests/verbs/$1 out rc
	if [ ! -x "$prog" ]; then
		tap_fail "$prog is built (make)"
		return
	fi
	out=$(ns_exec "$NS_A" timeout 60 "$XRXE" run -- "$prog" "xrxe_$IF_A" 1 2>&1)
	rc=$?
	grep -E '^(ok|not ok) - ' <<<"$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$out"; then
		tap_fail "$1 exited with status $rc"
		tap_diag "$(tail -20 <<<"$out")"
	fi
}
# FLUSH: pyverbs 44 cannot express it (rdma-core >= 45 added ibv_wr_flush), so
# a small libibverbs program does, on the same device.
verbs_prog flush_loopback
# Device memory and parent/thread domains: limits, reference rules, traffic
# into device memory, the allocators serving the objects.
verbs_prog dm_domain
# XRC: domains by file, ibv_open_qp, a second process's SRQ served by our
# initiator (docs/xrc.md).
verbs_prog xrc_domains

# On-demand paging: traffic into never-touched memory, memory unmapped after
# registration (error completions, the daemon goes on), the implicit region,
# ibv_advise_mr.
verbs_prog odp

# Importing a context, PDs, MRs and device memory (docs/verbs-shim.md
# "Importing"): errors, traffic through imports, lifetimes.
verbs_prog import

# A QP's modify served while another QP of the daemon waits for ACKs from a
# peer that is not ready (librdmacm's passive side sends before the active
# side's REP has been processed): tests/verbs/peer_not_ready.c.
verbs_prog peer_not_ready
exit 0
