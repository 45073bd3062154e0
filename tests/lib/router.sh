# shellcheck shell=bash
# Two endpoint namespaces joined through a router namespace, for loss tests
# and benchmarks (tests/net/loss.sh, tests/bench/loss.sh):
#
#   A (10.83.1.1) ── r: ip_forward, xrxe-impair on both egresses ── B (10.83.2.1)
#
# Every link a veth at MTU 9000 (path MTU 4096) with a pfifo (with noqueue a
# busy veth peer drops silently: tests/lib/netns.sh). AF_XDP transmit skips
# the sender's own tc hooks, so impairments sit on the router.
# Needs tests/lib/netns.sh sourced first and IMPAIR set to xrxe-impair.
# router_up sets NS_A NS_B NS_R IF_A IF_B IF_RA IF_RB IP_A IP_B.

router_up() {
	local ns
	NS_A=$NETNS_PREFIX-la NS_B=$NETNS_PREFIX-lb NS_R=$NETNS_PREFIX-lr
	IF_A=l$$a IF_B=l$$b IF_RA=l$$ra IF_RB=l$$rb
	IP_A=10.83.1.1 IP_B=10.83.2.1
	for ns in "$NS_A" "$NS_B" "$NS_R"; do
		ip netns add "$ns" || return 1
		NETNS_CREATED+=("$ns")
		ip -n "$ns" link set lo up
	done
	ip netns exec "$NS_R" sysctl -qw net.ipv4.ip_forward=1 || return 1
	ip link add "$IF_A" netns "$NS_A" mtu 9000 type veth peer name "$IF_RA" netns "$NS_R" \
		mtu 9000 || return 1
	ip link add "$IF_B" netns "$NS_B" mtu 9000 type veth peer name "$IF_RB" netns "$NS_R" \
		mtu 9000 || return 1
	ip -n "$NS_A" addr add "$IP_A/24" dev "$IF_A" &&
		ip -n "$NS_B" addr add "$IP_B/24" dev "$IF_B" &&
		ip -n "$NS_R" addr add 10.83.1.254/24 dev "$IF_RA" &&
		ip -n "$NS_R" addr add 10.83.2.254/24 dev "$IF_RB" || return 1
	ip netns exec "$NS_A" tc qdisc replace dev "$IF_A" root pfifo &&
		ip netns exec "$NS_B" tc qdisc replace dev "$IF_B" root pfifo &&
		ip netns exec "$NS_R" tc qdisc replace dev "$IF_RA" root pfifo &&
		ip netns exec "$NS_R" tc qdisc replace dev "$IF_RB" root pfifo || return 1
	ip -n "$NS_A" link set "$IF_A" up &&
		ip -n "$NS_B" link set "$IF_B" up &&
		ip -n "$NS_R" link set "$IF_RA" up &&
		ip -n "$NS_R" link set "$IF_RB" up || return 1
	ip -n "$NS_A" route add default via 10.83.1.254 &&
		ip -n "$NS_B" route add default via 10.83.2.254 || return 1
	netns_at_exit "ip netns exec $NS_R $IMPAIR $IF_RA --clear; ip netns exec $NS_R $IMPAIR $IF_RB --clear"
}

# router_loss PCT: PCT % random loss on both of the router's egresses (0: none).
router_loss() {
	local dev
	for dev in "$IF_RA" "$IF_RB"; do
		ip netns exec "$NS_R" "$IMPAIR" "$dev" --loss "$1" >/dev/null || return 1
	done
}
