// SPDX-License-Identifier: MIT
/*
 * xrxe_impair: a tc (clsact egress, direct-action) program that plays the
 * roles this kernel has no qdisc for (no netem, RED, fq_codel, gact): random
 * loss, duplication and corruption, and DCQCN congestion-point ECN marking on
 * a phantom queue. Loaded and configured by xrxe-impair (tools/impair/).
 *
 * Per IPv4/IPv6 frame leaving the interface, in this order:
 *   1. loss       rand < loss        -> TC_ACT_SHOT
 *   2. duplicate  rand < dup         -> bpf_clone_redirect() to the same
 *      interface's egress. The clone runs through this program again (the
 *      redirect goes through dev_queue_xmit and so through clsact egress),
 *      tagged in skb->tc_index so it is not lost or duplicated a second time;
 *      it does get its own corruption roll and goes through the phantom queue
 *      like any frame on the wire.
 *   3. corrupt    rand < corrupt     -> one byte of the transport payload is
 *      inverted (see corrupt()).
 *   4. ECN        the phantom queue (see phantom_enqueue()) and DCQCN's CP
 *      rule decide; ECT(0)/ECT(1) become CE, Not-ECT is never touched.
 *   5. per-flow byte counts for RoCEv2 (optional, for the CC harness).
 * Frames that are not IP (ARP, LLDP) pass untouched and only count as
 * not_ip: losing ARP would make every test depend on neighbour timers.
 *
 * The contract with user space is include/xrxe/impair.h.
 */
#include <stdbool.h>

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "xrxe/impair.h"

#define IP_OFFSET 0x1fff /* IPv4 fragment offset, in 8-byte units */
#define ECN_MASK 0x03
#define ECN_NOT_ECT 0x00
#define ECN_CE 0x03
#define NSEC_PER_SEC 1000000000ull
#define NSEC_PER_MSEC 1000000ull
#define BTH_LEN 12

/* skb->tc_index of a duplicate on its second pass. tc_index was only read by
 * the dsmark qdisc and tcindex classifier, both removed in Linux 6.3, so it is
 * free to carry this one bit of state through bpf_clone_redirect(). */
#define CLONE_TAG 0x7872

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrxe_impair_cfg);
} impair_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrxe_impair_queue);
} impair_queue SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XRXE_IMPAIR_COUNTER_COUNT);
	__type(key, __u32);
	__type(value, struct xrxe_impair_stat);
} impair_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, XRXE_IMPAIR_MAX_FLOWS);
	__type(key, struct xrxe_impair_flow_key);
	__type(value, struct xrxe_impair_flow);
} impair_flows SEC(".maps");

/* Per-CPU slot: a plain add is race-free. */
static __always_inline void count(__u32 counter, __u64 bytes)
{
	struct xrxe_impair_stat *s = bpf_map_lookup_elem(&impair_stats, &counter);

	if (s) {
		s->packets++;
		s->bytes += bytes;
	}
}

/* rand < thresh, with thresh a probability scaled by 2^32 (impair.h). */
static __always_inline bool roll(__u64 thresh)
{
	if (!thresh)
		return false; /* no random number spent on what is off */
	return (__u64)bpf_get_prandom_u32() < thresh;
}

/* Where the headers are, found with bpf_skb_load_bytes() so that a frame whose
 * headers are not all in the linear area is still parsed. */
struct frame {
	__u32 l3;          /* offset of the IP header */
	__u32 payload;     /* offset of the transport payload */
	__u32 end;         /* end of the IP datagram (before any link padding) */
	__u8 ipv6;
	__u8 ecn;          /* IP ECN field */
	__u8 roce;         /* UDP to 4791 with room for a BTH */
	__u32 dest_qp;     /* BTH DestQP when roce */
};

static __always_inline int parse(struct __sk_buff *skb, struct frame *f)
{
	__u32 off = sizeof(struct ethhdr), l4, l4len = 0;
	__u16 proto;
	__u8 l4proto;

	if (bpf_skb_load_bytes(skb, offsetof(struct ethhdr, h_proto), &proto, sizeof(proto)))
		return -1;
	/* One tag in the data (egress VLAN offload usually keeps it out). */
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		if (bpf_skb_load_bytes(skb, off + 2, &proto, sizeof(proto)))
			return -1;
		off += 4;
	}
	f->l3 = off;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, off, &ip, sizeof(ip)) || ip.ihl < 5)
			return -1;
		f->ipv6 = 0;
		f->ecn = ip.tos & ECN_MASK;
		f->end = off + bpf_ntohs(ip.tot_len);
		l4 = off + ip.ihl * 4;
		l4proto = ip.protocol;
		/* A later fragment has no transport header: its payload is all data. */
		if (ip.frag_off & bpf_htons(IP_OFFSET))
			l4proto = 0;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, off, &ip6, sizeof(ip6)))
			return -1;
		f->ipv6 = 1;
		/* Traffic class straddles bytes 0-1; ECN is its low 2 bits. */
		f->ecn = (ip6.flow_lbl[0] >> 4) & ECN_MASK;
		f->end = off + sizeof(ip6) + bpf_ntohs(ip6.payload_len);
		l4 = off + sizeof(ip6);
		/* Extension headers are not walked: the payload then starts at
		 * the first of them, which is still past every checksummed
		 * header a receiver uses to find the socket. */
		l4proto = ip6.nexthdr;
	} else {
		return -1;
	}
	if (f->end > skb->len)
		f->end = skb->len;

	f->roce = 0;
	if (l4proto == IPPROTO_UDP) {
		struct udphdr udp;

		l4len = sizeof(udp);
		if (!bpf_skb_load_bytes(skb, l4, &udp, sizeof(udp)) &&
		    udp.dest == bpf_htons(XRXE_IMPAIR_ROCE_PORT)) {
			__u8 bth[BTH_LEN];

			if (!bpf_skb_load_bytes(skb, l4 + sizeof(udp), bth, sizeof(bth))) {
				f->roce = 1;
				f->dest_qp = (__u32)bth[5] << 16 | (__u32)bth[6] << 8 | bth[7];
			}
		}
	} else if (l4proto == IPPROTO_TCP) {
		__u8 doff;

		/* Data offset: high nibble of byte 12, in 32-bit words. */
		if (!bpf_skb_load_bytes(skb, l4 + 12, &doff, 1))
			l4len = (doff >> 4) * 4;
	}
	f->payload = l4 + l4len;
	if (f->payload > f->end)
		f->payload = f->end;
	return 0;
}

/*
 * Corruption: invert all 8 bits of one byte of the transport payload, chosen
 * uniformly (the last byte of the datagram when the payload is empty).
 * - Headers are left alone so the frame still reaches the same receiver and
 *   socket (or QP) and fails there, in the counter that means "corrupted":
 *   UDP/TCP checksum errors, the RoCEv2 ICRC.
 * - A single inverted byte is always detected: it changes the ones'-complement
 *   sum by (0xff - 2b) or 256 times that, never a multiple of 0xffff; and
 *   CRC-32 (the ICRC) detects every burst of 32 bits or less.
 * - Frames with a UDP checksum of 0 (IPv4 "none", what RoCEv2 senders usually
 *   send) rely on the ICRC alone. A locally sent frame whose checksum is still
 *   CHECKSUM_PARTIAL (tx offload on) gets its checksum computed after us, over
 *   the corrupted byte: only the ICRC, or the receiver's data, can tell.
 */
static __always_inline bool corrupt(struct __sk_buff *skb, const struct frame *f)
{
	__u32 off, span;
	__u8 b;

	span = f->end > f->payload ? f->end - f->payload : 0;
	if (span)
		off = f->payload + bpf_get_prandom_u32() % span;
	else if (f->end > f->l3)
		off = f->end - 1;
	else
		return false;
	if (bpf_skb_load_bytes(skb, off, &b, 1))
		return false;
	b ^= 0xff;
	return !bpf_skb_store_bytes(skb, off, &b, 1, 0);
}

/*
 * The phantom queue (HULL, Alizadeh et al., NSDI 2012): a counter of bytes that
 * a link of rate ecn_rate would still have queued. Every frame leaving adds its
 * length; time drains rate bytes per second. Returns the backlog the frame
 * found in front of it, which is what a switch's CP rule compares with
 * Kmin/Kmax (docs/facts/dcqcn.md §1.1: the instantaneous egress byte count).
 *
 * Shared by every CPU, updated under a bpf_spin_lock rather than with atomics:
 * the update reads three fields (backlog, last_ns, rem) and writes four
 * (plus max_backlog) as one step; with atomics, two CPUs could both drain the
 * same elapsed time. BPF has no compare-and-swap loop over a struct, and the
 * critical section is a few arithmetic instructions, no helper calls.
 */
static __always_inline __u64 phantom_enqueue(const struct xrxe_impair_cfg *cfg, __u64 len)
{
	struct xrxe_impair_queue *q;
	__u32 key = 0;
	__u64 now = bpf_ktime_get_ns(), ahead, elapsed, acc, drained;
	__u64 limit = cfg->qlimit && cfg->qlimit < XRXE_IMPAIR_QUEUE_CAP ? cfg->qlimit :
									  XRXE_IMPAIR_QUEUE_CAP;

	q = bpf_map_lookup_elem(&impair_queue, &key);
	if (!q)
		return 0;
	bpf_spin_lock(&q->lock);
	/* Another CPU may have taken the lock after us with a later clock. */
	elapsed = now > q->last_ns ? now - q->last_ns : 0;
	if (elapsed >= NSEC_PER_SEC) {
		/* Coarse, but cannot overflow: ms * bytes/s <= 1e6 * 1.25e10. */
		__u64 ms = elapsed / NSEC_PER_MSEC;

		drained = ms > NSEC_PER_MSEC ? XRXE_IMPAIR_QUEUE_CAP : ms * cfg->ecn_rate / 1000;
		q->rem = 0;
	} else {
		/* elapsed < 1e9 and rate <= 1.25e10 (impair.h): acc < 1.26e19. */
		acc = elapsed * cfg->ecn_rate + q->rem;
		drained = acc / NSEC_PER_SEC;
		q->rem = acc % NSEC_PER_SEC;
	}
	if (drained >= q->backlog) {
		q->backlog = 0;
		q->rem = 0; /* an idle link banks no credit */
	} else {
		q->backlog -= drained;
	}
	if (now > q->last_ns)
		q->last_ns = now;
	ahead = q->backlog;
	/* Like the tail-drop FIFO it stands for, a full queue does not take the
	 * frame in (the real one downstream drops it). */
	if (q->backlog + len <= limit)
		q->backlog += len;
	if (q->backlog > q->max_backlog)
		q->max_backlog = q->backlog;
	bpf_spin_unlock(&q->lock);
	return ahead;
}

/* DCQCN CP rule (docs/facts/dcqcn.md §1.1, HPCC switch-mmu.cc ShouldSendCN):
 * q <= Kmin never; Kmin < q <= Kmax with p = Pmax (q - Kmin) / (Kmax - Kmin);
 * q > Kmax always. */
static __always_inline bool cp_should_mark(const struct xrxe_impair_cfg *cfg, __u64 q)
{
	__u64 span, p;

	if (q <= cfg->kmin)
		return false;
	if (q > cfg->kmax)
		return true;
	span = cfg->kmax - cfg->kmin; /* > 0 here: kmin < q <= kmax */
	/* pmax_thresh <= 2^32 and q - kmin <= 2^30: the product fits. */
	p = cfg->pmax_thresh * (q - cfg->kmin) / span;
	return (__u64)bpf_get_prandom_u32() < p;
}

/* ECT(0)/ECT(1) -> CE. IPv4 keeps its header checksum right with an
 * incremental update (RFC 1624) of the 16-bit word holding the TOS; IPv6 has
 * no header checksum, and neither the UDP pseudo-header nor the RoCEv2 ICRC
 * covers the ECN bits (the ICRC masks TOS/traffic class, docs/facts/dcqcn.md §2.1). */
static __always_inline bool set_ce(struct __sk_buff *skb, const struct frame *f)
{
	if (!f->ipv6) {
		__u16 old_word, new_word;
		__u8 *nb = (__u8 *)&new_word;

		if (bpf_skb_load_bytes(skb, f->l3, &old_word, sizeof(old_word)))
			return false;
		new_word = old_word;
		nb[1] |= ECN_CE; /* byte 1 of the header is the TOS */
		if (bpf_l3_csum_replace(skb, f->l3 + offsetof(struct iphdr, check), old_word,
					new_word, sizeof(new_word)))
			return false;
		return !bpf_skb_store_bytes(skb, f->l3, &new_word, sizeof(new_word), 0);
	}
	{
		__u8 b;

		/* Byte 1: low traffic-class nibble (ECN is its top 2 bits here)
		 * and the top of the flow label. */
		if (bpf_skb_load_bytes(skb, f->l3 + 1, &b, 1))
			return false;
		b |= ECN_CE << 4;
		return !bpf_skb_store_bytes(skb, f->l3 + 1, &b, 1, 0);
	}
}

/* Returns whether the frame was marked CE here. */
static __always_inline bool ecn_step(struct __sk_buff *skb, const struct xrxe_impair_cfg *cfg,
				     const struct frame *f, __u64 len)
{
	__u64 ahead = phantom_enqueue(cfg, len);

	if (!cp_should_mark(cfg, ahead))
		return false;
	if (f->ecn == ECN_NOT_ECT) {
		/* A switch with ECN would drop or pass it; DCQCN's CP only marks. */
		count(XRXE_IMPAIR_NOT_ECT_OVER, len);
		return false;
	}
	if (f->ecn == ECN_CE) {
		count(XRXE_IMPAIR_ECN_ALREADY_CE, len);
		return false;
	}
	if (!set_ce(skb, f))
		return false;
	count(XRXE_IMPAIR_ECN_MARKED, len);
	return true;
}

static __always_inline void flow_count(struct __sk_buff *skb, const struct frame *f, __u64 len,
				       bool marked)
{
	struct xrxe_impair_flow_key key = { 0 };
	struct xrxe_impair_flow *v, zero = { 0 };

	if (f->ipv6) {
		if (bpf_skb_load_bytes(skb, f->l3 + offsetof(struct ipv6hdr, saddr), key.saddr, 32))
			return;
	} else {
		/* IPv4-mapped: ::ffff:a.b.c.d */
		key.saddr[10] = key.saddr[11] = key.daddr[10] = key.daddr[11] = 0xff;
		if (bpf_skb_load_bytes(skb, f->l3 + offsetof(struct iphdr, saddr), &key.saddr[12], 4) ||
		    bpf_skb_load_bytes(skb, f->l3 + offsetof(struct iphdr, daddr), &key.daddr[12], 4))
			return;
	}
	key.dest_qp = f->dest_qp;
	v = bpf_map_lookup_elem(&impair_flows, &key);
	if (!v) {
		/* Full (more than XRXE_IMPAIR_MAX_FLOWS flows): not counted. */
		bpf_map_update_elem(&impair_flows, &key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&impair_flows, &key);
		if (!v)
			return;
	}
	v->packets++; /* per-CPU value: no atomics needed */
	v->bytes += len;
	v->marked += marked;
}

SEC("tc")
int xrxe_impair(struct __sk_buff *skb)
{
	const struct xrxe_impair_cfg *cfg;
	struct frame f = { 0 };
	__u64 len = skb->len;
	bool clone = false, marked = false;
	__u32 key = 0;

	cfg = bpf_map_lookup_elem(&impair_cfg, &key);
	if (!cfg)
		return TC_ACT_OK;
	if (skb->tc_index == CLONE_TAG) {
		skb->tc_index = 0;
		clone = true;
	} else {
		count(XRXE_IMPAIR_SEEN, len);
	}
	if (parse(skb, &f)) {
		count(XRXE_IMPAIR_NOT_IP, len);
		return TC_ACT_OK;
	}
	if (!clone) {
		if (roll(cfg->loss_thresh)) {
			count(XRXE_IMPAIR_DROPPED, len);
			return TC_ACT_SHOT;
		}
		/* Cloned before this frame is changed: the copy is a clean one
		 * and gets its own rolls on its way through again. */
		if (roll(cfg->dup_thresh)) {
			skb->tc_index = CLONE_TAG;
			if (!bpf_clone_redirect(skb, skb->ifindex, 0))
				count(XRXE_IMPAIR_DUPLICATED, len);
			skb->tc_index = 0;
		}
	}
	if (roll(cfg->corrupt_thresh) && corrupt(skb, &f))
		count(XRXE_IMPAIR_CORRUPTED, len);
	if (cfg->ecn_rate)
		marked = ecn_step(skb, cfg, &f, len);
	if (f.roce && (cfg->flags & XRXE_IMPAIR_F_FLOWS))
		flow_count(skb, &f, len, marked);
	return TC_ACT_OK;
}

/* bpf_spin_lock, bpf_clone_redirect and bpf_skb_store_bytes are GPL-only
 * helpers; the source is MIT. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";
