#!/usr/bin/env bash
# xrxed on a device whose driver refuses native XDP (macvlan has no native XDP
# at all, as virtio_net refuses it at MTU 9000): without --mode
# it falls back to generic (skb) XDP, says so once in its log, `xrxe status`
# shows the fallback (text and JSON), and the device is usable; with
# --mode native the refusal stays an error.
#
#   tests/net/xdp_fallback.sh    (root)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
tap_require_root "net/xdp_fallback"
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"
BUILD=${BUILD:-build}
B=$XRXE_ROOT/$BUILD/bin
netns_reap_stale
netns_tmpdir TMP
NS=$NETNS_PREFIX-fb
ip netns add "$NS" && NETNS_CREATED+=("$NS")
DEV=xt$$-mv
ip -n "$NS" link add xt$$-v0 type veth peer name xt$$-v1
ip -n "$NS" link add "$DEV" link xt$$-v0 type macvlan mode bridge
ip -n "$NS" addr add 10.78.0.1/24 dev "$DEV"
ip -n "$NS" link set xt$$-v0 up
ip -n "$NS" link set xt$$-v1 up
ip -n "$NS" link set "$DEV" up

out=$(ip netns exec "$NS" "$B/xrxed" --mode native "$DEV" 2>&1)
rc=$?
tap_check "--mode native on a device without native XDP: exit 1, the kernel's reason, no fallback" \
	bash -c '[ "$1" = 1 ] && grep -q "cannot attach XDP in native mode" <<<"$2" && ! grep -q "falling back" <<<"$2"' \
	_ "$rc" "$out"

ns_bg "$NS" sh -c "exec '$B/xrxed' '$DEV' >'$TMP/xrxed.log' 2>&1"
PID=$NETNS_LAST_PID
tap_check "without --mode: the daemon starts" netns_wait_file "/run/xrxe/$DEV.sock" 30
tap_check "the fallback is logged, once" test "$(grep -c 'falling back to generic (skb) XDP' "$TMP/xrxed.log")" = 1
tap_check "xrxe status: skb mode, fallback" bash -c \
	'out=$(ip netns exec "$1" "$2" status "$3") && grep -q "xrxe steering (skb mode" <<<"$out" && grep -q "fallback: the driver refused native XDP" <<<"$out"' \
	_ "$NS" "$B/xrxe" "$DEV"
tap_check "xrxe status --json: native_refused" bash -c \
	'ip netns exec "$1" "$2" status "$3" --json | python3 -c "import json,sys; x=json.load(sys.stdin)[\"interfaces\"][0][\"xdp\"]; assert x[\"mode\"] == \"skb\" and x[\"native_refused\"], x"' \
	_ "$NS" "$B/xrxe" "$DEV"
tap_check "xrxe stats --json: the daemon reports skb mode, native refused" bash -c \
	'ip netns exec "$1" "$2" stats "$3" --json | python3 -c "import json,sys; p=json.load(sys.stdin)[\"daemon\"][\"port\"]; assert p[\"xdp_mode\"] == \"skb\" and p[\"xdp_native_refused\"] == 1 and p[\"max_path_mtu\"] >= 1024, p"' \
	_ "$NS" "$B/xrxe" "$DEV"
tap_check "the device is usable: xrxe run ibv_devinfo sees xrxe_$DEV" bash -c \
	'ip netns exec "$1" "$2" run -- ibv_devinfo -d "xrxe_$3" | grep -q PORT_ACTIVE' _ "$NS" "$B/xrxe" "$DEV"
kill "$PID"
wait "$PID"
tap_check "SIGTERM: clean stop, program removed" bash -c \
	'[ "$1" = 0 ] && ip netns exec "$2" "$3" status "$4" | grep -q "no XDP program"' _ "$?" "$NS" "$B/xrxe" "$DEV"
