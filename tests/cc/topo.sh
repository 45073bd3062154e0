# shellcheck shell=bash
# The congestion-control experiments' topology (docs/facts/dcqcn.md §4.2): sender
# namespaces -> a router namespace -> one receiver namespace, every link a veth
# at MTU 9000, xrxed in each endpoint. The router forwards in the kernel; its
# egress toward the receiver is the bottleneck: an htb class at CC_RATE with a
# byte FIFO of CC_QLIMIT behind it, and xrxe-impair marking ECN by DCQCN's CP
# rule on a phantom queue drained at the same rate (plus loss for E4).
# AF_XDP transmit skips the sender's own qdisc and tc hooks (docs/facts/dcqcn.md
# §4.2 constraint 1), which is why all of this sits on the router.
#
#   s1 (10.81.1.1) ──┐
#   s2 (10.81.2.1) ──┤ r: ip_forward, [htb CC_RATE + bfifo + xrxe-impair] ──▶ d (10.81.100.1)
#
# Needs tests/lib/netns.sh sourced first. Sets: NS_R NS_D IF_D IF_RD, and for
# sender i: NS_S[i] IF_S[i] IP_S[i]; IP_D.

CC_RATE=${CC_RATE:-1gbit}
CC_QLIMIT=${CC_QLIMIT:-1mb}
CC_MTU=${CC_MTU:-9000}

declare -a NS_S IF_S IF_RS IP_S

# topo_up NSENDERS: build it all; 0 or 1.
topo_up() {
	local n=$1 i
	NS_R=$NETNS_PREFIX-r NS_D=$NETNS_PREFIX-d
	IF_D=c$$d IF_RD=c$$rd IP_D=10.81.100.1
	for ns in "$NS_R" "$NS_D"; do
		ip netns add "$ns" || return 1
		NETNS_CREATED+=("$ns")
		ip -n "$ns" link set lo up
	done
	ip netns exec "$NS_R" sysctl -qw net.ipv4.ip_forward=1 || return 1
	ip link add "$IF_RD" netns "$NS_R" mtu "$CC_MTU" type veth \
		peer name "$IF_D" netns "$NS_D" mtu "$CC_MTU" || return 1
	ip -n "$NS_R" addr add 10.81.100.254/24 dev "$IF_RD"
	ip -n "$NS_D" addr add "$IP_D/24" dev "$IF_D"
	for ((i = 1; i <= n; i++)); do
		NS_S[i]=$NETNS_PREFIX-s$i IF_S[i]=c$$s$i IF_RS[i]=c$$r$i IP_S[i]=10.81.$i.1
		ip netns add "${NS_S[i]}" || return 1
		NETNS_CREATED+=("${NS_S[i]}")
		ip -n "${NS_S[i]}" link set lo up
		ip link add "${IF_S[i]}" netns "${NS_S[i]}" mtu "$CC_MTU" type veth \
			peer name "${IF_RS[i]}" netns "$NS_R" mtu "$CC_MTU" || return 1
		ip -n "${NS_S[i]}" addr add "${IP_S[i]}/24" dev "${IF_S[i]}"
		ip -n "$NS_R" addr add "10.81.$i.254/24" dev "${IF_RS[i]}"
		# A FIFO on the sender's veth too: with noqueue, veth drops silently
		# when the peer is busy (tests/lib/netns.sh).
		ip netns exec "${NS_S[i]}" tc qdisc replace dev "${IF_S[i]}" root pfifo
		ip netns exec "$NS_R" tc qdisc replace dev "${IF_RS[i]}" root pfifo
		ip -n "${NS_S[i]}" link set "${IF_S[i]}" up
		ip -n "$NS_R" link set "${IF_RS[i]}" up
		ip -n "${NS_S[i]}" route add default via "10.81.$i.254"
	done
	ip netns exec "$NS_D" tc qdisc replace dev "$IF_D" root pfifo
	ip -n "$NS_D" link set "$IF_D" up
	ip -n "$NS_R" link set "$IF_RD" up
	ip -n "$NS_D" route add default via 10.81.100.254
	topo_bottleneck
}

# The bottleneck: htb rate = ceil = CC_RATE, one class, a byte FIFO behind it
# (a shallow switch buffer, tail drop).
topo_bottleneck() {
	ip netns exec "$NS_R" tc qdisc replace dev "$IF_RD" root handle 1: htb default 1 &&
		ip netns exec "$NS_R" tc class add dev "$IF_RD" parent 1: classid 1:1 htb \
			rate "$CC_RATE" ceil "$CC_RATE" burst 32k cburst 32k quantum 60000 &&
		ip netns exec "$NS_R" tc qdisc add dev "$IF_RD" parent 1:1 handle 10: bfifo \
			limit "$CC_QLIMIT"
}

# topo_htb_stats: "sent_bytes sent_packets dropped_packets backlog_bytes" of the
# bottleneck (htb's own count of what it sent, the FIFO's drops and backlog;
# iproute2 6.1 has no JSON for classes).
topo_htb_stats() {
	ip netns exec "$NS_R" tc -s -j qdisc show dev "$IF_RD" | python3 -c '
import json, sys
q = {x["handle"]: x for x in json.load(sys.stdin)}
print(q["1:"]["bytes"], q["1:"]["packets"], q["10:"]["drops"], q["10:"]["backlog"])'
}
