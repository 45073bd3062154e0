// SPDX-License-Identifier: MIT
/*
 * xrxe_steer: the XDP program that hands RoCEv2 frames to xrxed's AF_XDP
 * sockets and everything else to the kernel stack.
 *
 * Per frame: Ethernet (+ at most one 802.1Q / 802.1ad tag), IPv4 or IPv6, UDP.
 * A UDP datagram to `roce_udp_port` (4791) is RoCEv2: it is checked just enough
 * that xrxed never sees a frame it must not parse (long enough for UDP + BTH +
 * ICRC, BTH TVer 0), counted, and redirected to the XSKMAP slot of the RX queue
 * it arrived on. Anything else (ARP, ICMP, TCP, other UDP, fragments, IPv6 with
 * extension headers) goes to the stack untouched (XDP_PASS), so ping, TCP and
 * neighbour discovery keep working on an interface xrxe is attached to.
 * The one exception: a frame matching a raw packet QP's flow (the
 * `xrxe_flows` map xrxed fills from ibv_create_flow) is redirected too, as a
 * NIC's flow steering hands it to the QP instead of the host stack.
 *
 * SEC("xdp.frags"): the program accepts multi-buffer frames. That is what lets
 * it attach in native mode on a veth whose peer MTU exceeds 3506 and what a
 * path MTU of 4096 needs (4200-byte frames span two AF_XDP chunks;
 * docs/facts/afxdp.md pitfalls 3 and 4). Headers are read from the linear part, which
 * always starts the frame; the BTH is read with bpf_xdp_load_bytes() so it is
 * found even if a driver splits the frame right after the UDP header.
 *
 * The contract with user space (counter indices, map names) is
 * include/xrxe/steer.h.
 */
#include <stdbool.h>

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <xdp/xdp_helpers.h>

#include "xrxe/steer.h"

/* Not in the uapi headers (the kernel keeps them in include/net/). */
#define IP_MF 0x2000     /* more fragments */
#define IP_OFFSET 0x1fff /* fragment offset, in 8-byte units */
#define ECN_MASK 0x03
#define ECN_CE 0x03

/* RoCEv2 sizes (IBA Vol. 1 §9.2, Annex A17): the base transport header, and the
 * invariant CRC that ends every packet. */
#define BTH_LEN 12
#define ICRC_LEN 4
#define BTH_TVER_MASK 0x0f /* low nibble of BTH byte 1: must be 0 (rxe hdr_check drops others too) */

struct vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

/* Set by the loader before load (xrxe_steer_attach), fixed afterwards: the
 * verifier sees it as a constant. */
const volatile __u16 roce_udp_port = XRXE_STEER_DEFAULT_UDP_PORT;
/* 1 when xrxed loaded the program: xrxed removes it when it stops, and `xrxe
 * status` calls it orphaned while no xrxed runs for the interface. Kept in
 * the kernel (.rodata) so that it survives the daemon (kill -9). */
const volatile __u8 loaded_by_daemon = 0;
/* 1 when xrxed asked for native XDP, the driver refused it, and xrxed fell
 * back to generic (skb) mode: `xrxe status` says so. */
const volatile __u8 native_refused = 0;

/* libxdp's multi-program dispatcher reads this (docs/architecture.md "XDP
 * beside other XDP programs"): run priority, and the actions after which the
 * dispatcher goes on to the next program. Only XDP_PASS chains: a frame we
 * redirect to AF_XDP or drop is done. */
struct {
	__uint(priority, XRXE_STEER_RUN_PRIO);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(xrxe_steer);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XRXE_STEER_COUNTER_COUNT);
	__type(key, __u32);
	__type(value, struct xrxe_steer_stat);
} xrxe_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, XRXE_STEER_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xrxe_xsks SEC(".maps");

/* Raw packet QP flows (steer.h): the rules, and how many slots to look at. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XRXE_STEER_MAX_FLOWS);
	__type(key, __u32);
	__type(value, struct xrxe_steer_flow);
} xrxe_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xrxe_flow_count SEC(".maps");

/* Per-CPU slot: a plain add is race-free, no atomics needed. */
static __always_inline void count(__u32 counter, __u64 bytes)
{
	struct xrxe_steer_stat *s = bpf_map_lookup_elem(&xrxe_stats, &counter);

	if (s) {
		s->packets++;
		s->bytes += bytes;
	}
}

/* Walk Ethernet [+ tag] and IP to the UDP header. NULL: not a UDP datagram we
 * look into (the frame goes to the stack). *ecn: the IP ECN bits. */
static __always_inline struct udphdr *parse_to_udp(void *data, void *data_end, __u8 *ecn)
{
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u16 proto;
	void *l3;

	if ((void *)(eth + 1) > data_end)
		return NULL;
	proto = eth->h_proto;
	l3 = eth + 1;

	/* One tag, C-VLAN or S-VLAN. A tag that rx VLAN offload has already
	 * moved into the frame's metadata is not in the data at all. */
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		struct vlan_hdr *vlan = l3;

		if ((void *)(vlan + 1) > data_end)
			return NULL;
		proto = vlan->encap_proto;
		l3 = vlan + 1;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;
		__u32 ihl_bytes;

		if ((void *)(ip + 1) > data_end || ip->protocol != IPPROTO_UDP)
			return NULL;
		/* Any fragment, the first included: the daemon cannot reassemble,
		 * and a non-first fragment has no UDP header to look at. RoCEv2
		 * senders set DF, so this turns nothing legitimate away. */
		if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
			return NULL;
		ihl_bytes = ip->ihl * 4;
		if (ihl_bytes < sizeof(*ip))
			return NULL; /* malformed: the stack drops and counts it */
		*ecn = ip->tos & ECN_MASK;
		udp = l3 + ihl_bytes;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		/* RoCEv2 frames carry no extension headers; anything with one is
		 * left to the stack rather than walked. */
		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_UDP)
			return NULL;
		/* Traffic class straddles bytes 0-1; ECN is its low 2 bits. */
		*ecn = (ip6->flow_lbl[0] >> 4) & ECN_MASK;
		udp = (void *)(ip6 + 1);
	} else {
		return NULL;
	}

	if ((void *)(udp + 1) > data_end)
		return NULL;
	return udp;
}

/* The flow key of a frame (steer.h), as src/transport/raw.c computes it:
 * Ethernet [+ one tag], IPv4 or IPv6 (no extension headers), TCP/UDP ports
 * of an unfragmented datagram. What the frame does not have stays 0. */
static __always_inline void flow_key(void *data, void *data_end, struct xrxe_flow_key *k)
{
	struct ethhdr *eth = data;
	__u16 proto;
	void *l3, *l4 = NULL;

	__builtin_memset(k, 0, sizeof(*k));
	if ((void *)(eth + 1) > data_end)
		return;
	__builtin_memcpy(k->dmac, eth->h_dest, 6);
	__builtin_memcpy(k->smac, eth->h_source, 6);
	proto = eth->h_proto;
	l3 = eth + 1;
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		struct vlan_hdr *vlan = l3;

		if ((void *)(vlan + 1) > data_end)
			return;
		k->vlan_tci = vlan->tci;
		proto = vlan->encap_proto;
		l3 = vlan + 1;
	}
	k->ethertype = proto;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;
		__u32 ihl_bytes;

		if ((void *)(ip + 1) > data_end)
			return;
		k->ip_proto = ip->protocol;
		__builtin_memcpy(k->src_ip, &ip->saddr, 4);
		__builtin_memcpy(k->dst_ip, &ip->daddr, 4);
		ihl_bytes = ip->ihl * 4;
		if (ihl_bytes >= sizeof(*ip) && !(ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
			l4 = l3 + ihl_bytes;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > data_end)
			return;
		k->ip_proto = ip6->nexthdr;
		__builtin_memcpy(k->src_ip, &ip6->saddr, 16);
		__builtin_memcpy(k->dst_ip, &ip6->daddr, 16);
		l4 = ip6 + 1;
	}
	if (l4 && (k->ip_proto == IPPROTO_UDP || k->ip_proto == IPPROTO_TCP)) {
		__be16 *ports = l4; /* source, destination: first in both headers */

		if ((void *)(ports + 2) > data_end)
			return;
		k->sport = ports[0];
		k->dport = ports[1];
	}
}

/* Whether the frame matches a raw packet QP's flow. No rule: no cost beyond
 * one lookup. */
static __always_inline bool flow_match(void *data, void *data_end)
{
	struct xrxe_flow_key k;
	__u32 zero = 0, *count = bpf_map_lookup_elem(&xrxe_flow_count, &zero);
	__u32 n, i;

	if (!count || !*count)
		return false;
	n = *count;
	flow_key(data, data_end, &k);
	for (i = 0; i < XRXE_STEER_MAX_FLOWS; i++) {
		struct xrxe_steer_flow *f;
		const __u64 *kw = (const __u64 *)&k;
		const __u64 *vw, *mw;
		__u64 diff = 0;
		__u32 slot = i;

		if (i >= n)
			break;
		f = bpf_map_lookup_elem(&xrxe_flows, &slot);
		if (!f || !f->used)
			continue;
		vw = (const __u64 *)&f->value;
		mw = (const __u64 *)&f->mask;
#pragma unroll
		for (int w = 0; w < XRXE_FLOW_KEY_WORDS; w++)
			diff |= (kw[w] & mw[w]) ^ vw[w];
		if (!diff)
			return true;
	}
	return false;
}

/* The arrival time in front of the frame (struct xrxe_rx_meta, steer.h).
 * A driver without metadata support refuses the adjustment: the frame goes
 * on unstamped and the daemon uses its own clock. Invalidates every packet
 * pointer taken before. */
static __always_inline void stamp_arrival(struct xdp_md *ctx)
{
	struct xrxe_rx_meta *m;
	void *data;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		return;
	m = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(m + 1) > data)
		return;
	m->magic = XRXE_RX_META_MAGIC;
	m->reserved = 0;
	m->rx_ns = bpf_ktime_get_ns();
}

/* The verdict on one frame of len bytes: the XDP action, the counter it goes
 * to, and whether it also counts as ECN-CE. */
static __always_inline int classify(struct xdp_md *ctx, __u64 len, __u32 *counter, bool *ce)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 bth[2]; /* OpCode; SE | MigReq | PadCnt | TVer */
	struct udphdr *udp;
	__u32 l4_off, udp_len;
	__u8 ecn = 0;

	udp = parse_to_udp(data, data_end, &ecn);
	if (!udp || udp->dest != bpf_htons(roce_udp_port)) {
		/* Not RoCEv2: the stack's, unless a raw packet QP's flow
		 * claims it (with no socket on this queue it stays the
		 * stack's). */
		if (flow_match(data, data_end)) {
			stamp_arrival(ctx);
			if (bpf_redirect_map(&xrxe_xsks, ctx->rx_queue_index, XDP_PASS) ==
			    XDP_REDIRECT) {
				*counter = XRXE_STEER_RAW_FLOW;
				return XDP_REDIRECT;
			}
		}
		*counter = XRXE_STEER_PASSED;
		return XDP_PASS;
	}

	/* From here on the frame claims to be RoCEv2. The UDP length, not the
	 * frame length, bounds the datagram: Ethernet padding after a tiny
	 * datagram must not make it look long enough, and a UDP length beyond
	 * the frame is truncation. */
	l4_off = (void *)udp - data;
	udp_len = bpf_ntohs(udp->len);
	if (udp_len < sizeof(*udp) + BTH_LEN + ICRC_LEN || udp_len > len - l4_off ||
	    bpf_xdp_load_bytes(ctx, l4_off + sizeof(*udp), bth, sizeof(bth))) {
		*counter = XRXE_STEER_DROP_SHORT;
		return XDP_DROP;
	}
	if (bth[1] & BTH_TVER_MASK) {
		*counter = XRXE_STEER_DROP_BAD_BTH;
		return XDP_DROP;
	}
	/* Congestion Experienced: xrxed's DCQCN notification point reads the
	 * mark from the frame itself; counted here so it shows even with no
	 * daemon running. */
	*ce = ecn == ECN_CE;

	stamp_arrival(ctx);
	/* XDP_PASS in the flags is the action when the slot holds no socket: a
	 * frame that nothing in user space would read goes to the stack, like
	 * any UDP datagram to a closed port. */
	if (bpf_redirect_map(&xrxe_xsks, ctx->rx_queue_index, XDP_PASS) == XDP_REDIRECT) {
		*counter = XRXE_STEER_STEERED;
		return XDP_REDIRECT;
	}
	*counter = XRXE_STEER_NO_SOCKET;
	return XDP_PASS;
}

SEC("xdp.frags")
int xrxe_steer(struct xdp_md *ctx)
{
	/* Whole frame, all buffers: a 9000-byte multi-buffer frame counts 9000. */
	__u64 len = bpf_xdp_get_buff_len(ctx);
	__u32 counter;
	bool ce = false;
	int action;

	action = classify(ctx, len, &counter, &ce);
	if (ce)
		count(XRXE_STEER_ECN_CE, len);
	count(counter, len);
	return action;
}

/* GPL-compatible so every XDP helper is available; the source is MIT. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";
