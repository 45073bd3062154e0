# shellcheck shell=bash
# Network-namespace fixtures for the network tests: pairs of namespaces joined
# by a veth, named uniquely per test process, and removed on exit whatever
# happens (EXIT trap, also after INT/TERM).
#
#   source "$XRXE_ROOT/tests/lib/netns.sh"
#   netns_pair 1 9000           # namespaces + veth, MTU 9000, default addresses
#   ns_exec "$NS_B" ip -d link show dev "$IF_B"
#   ns_bg "$NS_B" some-server   # killed at exit
#
# netns_pair ID MTU [IP4_A IP4_B IP6_A IP6_B] sets, for the pair just made:
#   NS_A NS_B     namespace names   (${NETNS_PREFIX}-ID-a / -b)
#   IF_A IF_B     veth ends, IF_A in NS_A, IF_B in NS_B
#   IP4_A IP4_B   IPv4 addresses without prefix (default 10.77.ID.1 / .2, /24)
#   IP6_A IP6_B   IPv6 addresses without prefix (default fd77:0:0:ID::1 / ::2, /64)
#   MAC_A MAC_B   the veth ends' MAC addresses
# Copy them if a test needs several pairs at once. IPv6 addresses, the
# link-local ones included, skip duplicate address detection, so they are
# usable at once. ID is 1..250.
#
# Both ends get a pfifo root qdisc (NETNS_QDISC, "" to keep veth's noqueue):
# with noqueue, veth drops frames silently when the peer's ring is full,
# and AF_XDP transmit completes them anyway (docs/facts/afxdp.md pitfall 6).
#
# Pitfalls kept in mind (docs/facts/afxdp.md): `ip netns exec` gives each command a
# fresh /sys (bpffs unmounted, pins made inside vanish when it exits); native
# XDP on a veth needs an xdp.frags program once the peer MTU exceeds 3506;
# frames XDP-redirected *into* a veth arrive only if the receiving end has a
# native XDP program or GRO (generic mode is not enough).

NETNS_PREFIX=${NETNS_PREFIX:-xt-$$}
NETNS_QDISC=${NETNS_QDISC-pfifo}
NETNS_CREATED=()  # namespaces to delete
NETNS_PIDS=()     # background processes to kill
NETNS_TMPDIRS=()  # directories to remove
NETNS_AT_EXIT=()  # extra cleanup commands (eval'd first, in reverse order)

netns_cleanup() {
	local i pid ns
	trap - EXIT
	for ((i = ${#NETNS_AT_EXIT[@]} - 1; i >= 0; i--)); do
		eval "${NETNS_AT_EXIT[i]}" >/dev/null 2>&1 || true
	done
	for pid in "${NETNS_PIDS[@]}"; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	# Deleting a namespace deletes the veth end inside it, and with it the peer.
	for ns in "${NETNS_CREATED[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	for i in "${NETNS_TMPDIRS[@]}"; do
		rm -rf "$i"
	done
	NETNS_CREATED=() NETNS_PIDS=() NETNS_TMPDIRS=() NETNS_AT_EXIT=()
}
trap netns_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# netns_at_exit COMMAND: run COMMAND (a string, eval'd) at cleanup.
netns_at_exit() { NETNS_AT_EXIT+=("$1"); }

# netns_tmpdir VAR: a temporary directory, removed at exit, its path stored in
# VAR (not printed: inside $(...) the registration would be lost with the
# subshell).
netns_tmpdir() {
	local d
	d=$(mktemp -d "${TMPDIR:-/tmp}/${NETNS_PREFIX}.XXXXXX") || return 1
	NETNS_TMPDIRS+=("$d")
	printf -v "$1" '%s' "$d"
}

# Namespaces left by test processes that died without cleaning up (kill -9):
# named xt-PID-..., removed when PID is gone.
netns_reap_stale() {
	local ns pid
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
		[[ $ns =~ ^xt-([0-9]+)- ]] || continue
		pid=${BASH_REMATCH[1]}
		kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null
	done
}

ns_exec() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# ns_bg NS COMMAND...: start in the background, killed at cleanup. The pid is
# in NETNS_LAST_PID.
ns_bg() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@" &
	NETNS_LAST_PID=$!
	NETNS_PIDS+=("$NETNS_LAST_PID")
}

# netns_wait_file PATH [TIMEOUT_S]: wait until PATH exists (a server's
# "ready" marker).
netns_wait_file() {
	local path=$1 tries=$((${2:-5} * 20))
	while [ ! -e "$path" ] && [ $tries -gt 0 ]; do
		sleep 0.05
		tries=$((tries - 1))
	done
	[ -e "$path" ]
}

netns_pair() {
	local id=$1 mtu=$2
	local ns_a=$NETNS_PREFIX-$id-a ns_b=$NETNS_PREFIX-$id-b
	# Interface names are at most 15 characters: xt<PID>-<ID><a|b>.
	local if_a=xt$$-${id}a if_b=xt$$-${id}b
	local ip4_a=${3:-10.77.$id.1} ip4_b=${4:-10.77.$id.2}
	local ip6_a=${5:-fd77:0:0:$id::1} ip6_b=${6:-fd77:0:0:$id::2}
	local ns dev

	if [ ${#if_a} -gt 15 ]; then
		echo "netns_pair: interface name $if_a too long" >&2
		return 1
	fi
	ip netns add "$ns_a" || return 1
	NETNS_CREATED+=("$ns_a")
	ip netns add "$ns_b" || return 1
	NETNS_CREATED+=("$ns_b")
	ip link add "$if_a" netns "$ns_a" mtu "$mtu" type veth \
		peer name "$if_b" netns "$ns_b" mtu "$mtu" || return 1
	for ns in "$ns_a" "$ns_b"; do
		ip -n "$ns" link set lo up || return 1
	done
	ip -n "$ns_a" addr add "$ip4_a/24" dev "$if_a" &&
		ip -n "$ns_b" addr add "$ip4_b/24" dev "$if_b" &&
		ip -n "$ns_a" addr add "$ip6_a/64" dev "$if_a" nodad &&
		ip -n "$ns_b" addr add "$ip6_b/64" dev "$if_b" nodad || return 1
	for dev in "$ns_a:$if_a" "$ns_b:$if_b"; do
		# No duplicate address detection on the link-local address either
		# (the fd77 ones are nodad): it stays tentative for 1-2 s after
		# link-up, and neighbour discovery from a tentative address
		# fails, so a QP using GID 0 (fe80::, ibv_rc_pingpong's default)
		# right away met "No route to host" after the daemon's 1 s
		# resolution timeout (tests/net/scale.sh failed 9 of 20 runs).
		ip netns exec "${dev%%:*}" sysctl -qw "net.ipv6.conf.${dev#*:}.accept_dad=0" ||
			return 1
		if [ -n "$NETNS_QDISC" ]; then
			ip netns exec "${dev%%:*}" tc qdisc replace dev "${dev#*:}" root "$NETNS_QDISC" ||
				return 1
		fi
		ip -n "${dev%%:*}" link set "${dev#*:}" up || return 1
	done
	# shellcheck disable=SC2034 # the results, for the caller
	NS_A=$ns_a NS_B=$ns_b IF_A=$if_a IF_B=$if_b
	# shellcheck disable=SC2034
	IP4_A=$ip4_a IP4_B=$ip4_b IP6_A=$ip6_a IP6_B=$ip6_b
	# shellcheck disable=SC2034
	MAC_A=$(ip -n "$ns_a" -br link show dev "$if_a" | awk '{print $3}')
	# shellcheck disable=SC2034
	MAC_B=$(ip -n "$ns_b" -br link show dev "$if_b" | awk '{print $3}')
}

netns_reap_stale
