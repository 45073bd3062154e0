/* SPDX-License-Identifier: MIT */
/*
 * Device, port, GID and P_Key queries, all answered from the daemon's device
 * page without a round trip. Port state and the GID table change at run time
 * (addresses come and go), so reads go through the page's seqlock.
 *
 * GID semantics follow rdma-core 44 (docs/facts/verbs-abi.md §4): ibv_query_gid
 * returns 0 and an all-zero GID for an empty slot; _ibv_query_gid_ex returns
 * ENODATA for it; ibv_query_gid_type (PRIVATE_34, for ibv_devinfo) speaks the
 * *sysfs* enum (0 = IB/RoCE v1, 1 = RoCE v2) and says v1 for an empty slot.
 */
#include "verbs/shim.h"

#include <endian.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#define XRXE_PORT 1 /* one port per device */

/* The sysfs gid type enum of rdma-core's driver.h (not installed). */
enum { XRXE_GID_TYPE_SYSFS_IB_ROCE_V1 = 0, XRXE_GID_TYPE_SYSFS_ROCE_V2 = 1 };

int xrxe_page_read(const struct xrxe_context *ctx, struct xrxe_page_snapshot *s)
{
	const struct xrxe_dev_page *p = ctx->page;

	for (int tries = 0; tries < 1000000; tries++) {
		uint32_t seq = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);

		if (seq & 1) { /* the daemon is writing */
			if (tries > 64)
				sched_yield();
			continue;
		}
		memcpy(&s->dev_attr, &p->dev_attr, sizeof(s->dev_attr));
		memcpy(&s->port_attr, &p->port_attr, sizeof(s->port_attr));
		memcpy(s->gids, p->gids, sizeof(s->gids));
		memcpy(s->ifname, p->ifname, sizeof(s->ifname));
		s->node_guid = p->node_guid;
		/* The copies above must complete before the re-check. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&p->seq, __ATOMIC_RELAXED) == seq) {
			s->ifname[sizeof(s->ifname) - 1] = '\0';
			return 0;
		}
	}
	shim_err("device page of %s never became stable (daemon stuck?)", ctx->dev->dev.name);
	return -EAGAIN;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	struct xrxe_page_snapshot s;

	if (xrxe_page_read(to_xctx(context), &s))
		return EIO;
	*attr = s.dev_attr;
	return 0;
}

int xrxe_query_device_ex_op(struct ibv_context *context, const struct ibv_query_device_ex_input *in,
			    struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex;
	struct xrxe_page_snapshot s;

	if (in && in->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	if (xrxe_page_read(to_xctx(context), &s))
		return EIO;
	memset(&ex, 0, sizeof(ex));
	ex.orig_attr = s.dev_attr;
	/* The 64-bit flags add what the 32-bit ones cannot say (the values
	 * of rdma-core >= 45, abi.h): ATOMIC_WRITE and global-visibility
	 * FLUSH (no persistence domain: mr.c of the transport). */
	ex.device_cap_flags_ex = (uint32_t)s.dev_attr.device_cap_flags | XRXE_DEVICE_ATOMIC_WRITE |
				 XRXE_DEVICE_FLUSH_GLOBAL;
	/* Completion timestamps are the daemon's CLOCK_MONOTONIC in ns
	 * (xrxe_cqe.timestamp_ns): a 1 GHz "HCA clock" that never wraps;
	 * the wall-clock reader converts (cq.c). */
	ex.completion_timestamp_mask = UINT64_MAX;
	ex.hca_core_clock = 1000000; /* kHz */
	ex.phys_port_cnt_ex = s.dev_attr.phys_port_cnt;
	ex.max_dm_size = XRXE_DM_MAX_BYTES; /* per context: dm.c */
	/* On-demand paging (odp.c, docs/architecture.md "On-demand paging"):
	 * explicit and implicit regions, every operation of every transport,
	 * since the daemon reaches the memory below the transport. */
	ex.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	ex.odp_caps.per_transport_caps.rc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
		IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	ex.odp_caps.per_transport_caps.uc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
		IBV_ODP_SUPPORT_SRQ_RECV;
	ex.odp_caps.per_transport_caps.ud_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
	/* XRC: an initiator's sends and a target's XRC SRQ receives (xrc.c)
	 * go through the same memory access points. */
	ex.xrc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
			  IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	xrxe_tm_caps(&ex.tm_caps); /* tag matching (verbs/tm.c) */
	/* Raw packet QPs' receive WQs and RSS (verbs/raw.c, the transport's
	 * raw.c): a WQ is a transport QP, so as many as QPs; indirection
	 * tables of up to 2^XRXE_MAX_RWQ_IND_LOG WQs, promised as many as
	 * WQs (the daemon's only bound on them is its per-context object
	 * limit, far above); Toeplitz over the outer IPv4/IPv6 addresses and
	 * TCP/UDP ports, the 8 fields xrxe_rss_create_qp accepts.
	 * raw_packet_caps stays 0: no VLAN stripping, no FCS scattering,
	 * no IP checksum verdict in receive completions, no delay drop. */
	ex.max_wq_type_rq = (uint32_t)s.dev_attr.max_qp;
	ex.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
	ex.rss_caps.max_rwq_indirection_tables = (uint32_t)s.dev_attr.max_qp;
	ex.rss_caps.max_rwq_indirection_table_size = 1u << XRXE_MAX_RWQ_IND_LOG;
	ex.rss_caps.rx_hash_fields_mask =
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_IPV6 |
		IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
		IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
	ex.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
	memcpy(attr, &ex, attr_size < sizeof(ex) ? attr_size : sizeof(ex));
	if (attr_size > sizeof(ex))
		memset((char *)attr + sizeof(ex), 0, attr_size - sizeof(ex));
	return 0;
}

/* verbs_context.query_rt_values (ibv_query_rt_values_ex): the "HCA clock" of
 * the completion timestamps, i.e. CLOCK_MONOTONIC (query_device_ex says
 * 1 GHz), so applications can relate ibv_wc_read_completion_ts to now. */
int xrxe_query_rt_values_op(struct ibv_context *context, struct ibv_values_ex *values)
{
	(void)context;
	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK)
		clock_gettime(CLOCK_MONOTONIC, &values->raw_clock);
	return 0;
}

/* verbs_context.query_port: the inline ibv_query_port() passes the size of the
 * application's struct; copy no more than that. */
int xrxe_query_port_op(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		       size_t attr_len)
{
	struct xrxe_page_snapshot s;

	if (port_num != XRXE_PORT)
		return EINVAL;
	if (xrxe_page_read(to_xctx(context), &s))
		return EIO;
	memset(attr, 0, attr_len);
	memcpy(attr, &s.port_attr, attr_len < sizeof(s.port_attr) ? attr_len : sizeof(s.port_attr));
	return 0;
}

/* The exported symbol is only reached by binaries built without the inline
 * path, whose struct _compat_ibv_port_attr (declared, never defined, in
 * verbs.h) ends before port_cap_flags2: 48 bytes. */
int ibv_query_port(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *attr)
{
	return xrxe_query_port_op(context, port_num, (struct ibv_port_attr *)attr,
				  offsetof(struct ibv_port_attr, port_cap_flags2));
}

/* Slot index within the table, or -1 (errno EINVAL). */
static int gid_slot(const struct xrxe_page_snapshot *s, uint32_t port, uint32_t index)
{
	uint32_t len = (uint32_t)s->port_attr.gid_tbl_len;

	if (len > XRXE_GID_TABLE_LEN)
		len = XRXE_GID_TABLE_LEN;
	if (port != XRXE_PORT || index >= len) {
		errno = EINVAL;
		return -1;
	}
	return (int)index;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct xrxe_page_snapshot s;
	int i;

	if (xrxe_page_read(to_xctx(context), &s)) {
		errno = EIO;
		return -1;
	}
	if (index < 0 || (i = gid_slot(&s, port_num, (uint32_t)index)) < 0) {
		errno = EINVAL;
		return -1;
	}
	if (s.gids[i].valid)
		*gid = s.gids[i].gid;
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

static void fill_entry(struct ibv_gid_entry *e, const struct xrxe_gid_slot *g, uint32_t index)
{
	memset(e, 0, sizeof(*e));
	e->gid = g->gid;
	e->gid_index = index;
	e->port_num = XRXE_PORT;
	e->gid_type = g->gid_type;
	e->ndev_ifindex = g->ifindex;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct xrxe_page_snapshot s;
	int i;

	if (flags)
		return EOPNOTSUPP;
	if (entry_size < sizeof(*entry))
		return EINVAL;
	if (xrxe_page_read(to_xctx(context), &s))
		return EIO;
	i = gid_slot(&s, port_num, gid_index);
	if (i < 0)
		return EINVAL;
	if (!s.gids[i].valid)
		return ENODATA;
	fill_entry(entry, &s.gids[i], gid_index);
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct xrxe_page_snapshot s;
	size_t n = 0;
	uint32_t len;

	if (flags)
		return -EOPNOTSUPP;
	if (entry_size < sizeof(*entries))
		return -EINVAL;
	if (xrxe_page_read(to_xctx(context), &s))
		return -EIO;
	len = (uint32_t)s.port_attr.gid_tbl_len;
	if (len > XRXE_GID_TABLE_LEN)
		len = XRXE_GID_TABLE_LEN;
	for (uint32_t i = 0; i < len; i++) {
		if (!s.gids[i].valid)
			continue;
		if (n == max_entries)
			return -EINVAL; /* rdma-core: the array is too small */
		fill_entry((struct ibv_gid_entry *)((char *)entries + n * entry_size), &s.gids[i], i);
		n++;
	}
	return (ssize_t)n;
}

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       uint32_t *type)
{
	struct xrxe_page_snapshot s;
	int i;

	if (xrxe_page_read(to_xctx(context), &s)) {
		errno = EIO;
		return -1;
	}
	i = gid_slot(&s, port_num, index);
	if (i < 0)
		return -1;
	*type = s.gids[i].valid && s.gids[i].gid_type == IBV_GID_TYPE_ROCE_V2
			? XRXE_GID_TYPE_SYSFS_ROCE_V2
			: XRXE_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

static bool gid_v4(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

/* rdma_is_multicast_addr: ff00::/8, or IPv4-mapped 224.0.0.0/4 */
static bool gid_mcast(const union ibv_gid *g)
{
	return g->raw[0] == 0xff || (gid_v4(g) && (g->raw[12] & 0xf0) == 0xe0);
}

int xrxe_find_gid(struct ibv_context *context, uint8_t port, const union ibv_gid *gid)
{
	struct xrxe_page_snapshot s;
	int i, n, fallback = -1;

	if (port != XRXE_PORT || xrxe_page_read(to_xctx(context), &s))
		return -1;
	n = s.port_attr.gid_tbl_len < XRXE_GID_TABLE_LEN ? s.port_attr.gid_tbl_len
							 : XRXE_GID_TABLE_LEN;
	for (i = 0; i < n; i++)
		if (s.gids[i].valid && !memcmp(&s.gids[i].gid, gid, sizeof(*gid)))
			return i;
	if (!gid_mcast(gid))
		return -1;
	/* A datagram sent to a multicast group was not addressed to one of our
	 * GIDs: answer from the first GID of the group's family (IPv6: a
	 * non-link-local one if there is one), as the kernel's
	 * ib_init_ah_attr_from_wc picks a source GID for multicast. */
	for (i = 0; i < n; i++) {
		const union ibv_gid *g = &s.gids[i].gid;

		if (!s.gids[i].valid || gid_v4(g) != gid_v4(gid))
			continue;
		if (gid_v4(g) || !(g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80))
			return i;
		if (fallback < 0)
			fallback = i;
	}
	return fallback;
}

/* One P_Key: the default full-membership 0xffff at index 0 (RoCE has no
 * partitions on the wire beyond the BTH default). Network byte order. */
int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	struct xrxe_page_snapshot s;

	if (xrxe_page_read(to_xctx(context), &s)) {
		errno = EIO;
		return -1;
	}
	/* only index 0 exists; a longer advertised table has empty slots */
	if (port_num != XRXE_PORT || index < 0 ||
	    index >= (s.port_attr.pkey_tbl_len ? s.port_attr.pkey_tbl_len : 1)) {
		errno = EINVAL;
		return -1;
	}
	if (index > 0) {
		*pkey = 0;
		return 0;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	__be16 p;

	if (ibv_query_pkey(context, port_num, 0, &p))
		return -1;
	if (p == pkey)
		return 0;
	errno = ENOENT;
	return -1;
}
