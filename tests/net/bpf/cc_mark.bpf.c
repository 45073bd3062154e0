// SPDX-License-Identifier: MIT
/*
 * tests/net/cc.sh's congested switch: a tc (cls_bpf, direct-action) program
 * that sets ECN = CE on ECN-capable RoCEv2 IPv4 packets (UDP 4791), as an
 * AQM marks instead of dropping (RFC 3168; docs/facts/dcqcn.md §2.2). Not-ECT
 * packets are left alone, as a real AQM would. The IPv4 checksum is fixed;
 * the ICRC masks the TOS byte, so it stays valid.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

__u64 marked = 0;

SEC("tc")
int cc_mark(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	__u16 oldw, neww;
	__u8 tos;

	if ((void *)(udp + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP || udp->dest != bpf_htons(4791))
		return TC_ACT_OK;
	tos = ip->tos;
	if ((tos & 3) == 0 || (tos & 3) == 3)
		return TC_ACT_OK;
	/* the checksum covers 16-bit words: version/IHL and TOS form one */
	oldw = bpf_htons((__u16)(*(__u8 *)ip) << 8 | tos);
	neww = bpf_htons((__u16)(*(__u8 *)ip) << 8 | (tos | 3));
	tos |= 3;
	if (bpf_skb_store_bytes(skb, ETH_HLEN + 1, &tos, 1, 0))
		return TC_ACT_OK;
	bpf_l3_csum_replace(skb, ETH_HLEN + 10, oldw, neww, 2);
	__sync_fetch_and_add(&marked, 1);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
