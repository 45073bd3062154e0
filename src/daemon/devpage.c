// SPDX-License-Identifier: MIT
#include "daemon/devpage.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/link_speed.h"
#include "util/log.h"

#ifndef XRXE_VERSION
#define XRXE_VERSION "0.1.0"
#endif

struct xrxe_devpage {
	int fd;
	uint32_t size;
	struct xrxe_dev_page *page; /* the daemon's RW mapping */
	enum ibv_mtu mtu_cap;
	uint32_t marked;            /* resync marks, one bit per GID slot */
};
_Static_assert(XRXE_GID_TABLE_LEN <= 32, "resync marks are a uint32_t bitmap");

/* --- seqlock writer ------------------------------------------------------
 * Readers (the shims) copy the port attributes and GIDs between two loads of
 * seq and retry if it was odd or changed. The data stores race with those
 * copies by design; the fences order them against the seq stores. */
static void seq_begin(struct xrxe_dev_page *p)
{
	__atomic_store_n(&p->seq, p->seq + 1, __ATOMIC_RELAXED);
	/* odd seq visible before any data store (smp_wmb in Linux' seqcount) */
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void seq_end(struct xrxe_dev_page *p)
{
	/* data stores visible before the even seq */
	__atomic_store_n(&p->seq, p->seq + 1, __ATOMIC_RELEASE);
}

enum ibv_mtu xrxe_devpage_ib_mtu(uint32_t netdev_mtu)
{
	/* rxe: eth_mtu_int_to_enum(mtu - RXE_GRH_HDR... ) leaves room for the
	 * 80 bytes of IP/UDP/BTH/ICRC headroom; 0 -> 256. */
	uint32_t m = netdev_mtu > 80 ? netdev_mtu - 80 : 0;

	if (m >= 4096)
		return IBV_MTU_4096;
	if (m >= 2048)
		return IBV_MTU_2048;
	if (m >= 1024)
		return IBV_MTU_1024;
	if (m >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

static enum ibv_mtu mtu_from_bytes(uint32_t bytes)
{
	enum ibv_mtu m = IBV_MTU_256;

	while (m < IBV_MTU_4096 && xrxe_ib_mtu_bytes((enum ibv_mtu)(m + 1)) <= bytes)
		m = (enum ibv_mtu)(m + 1);
	return m;
}

void xrxe_gid_from_v4(union ibv_gid *gid, const struct in_addr *a)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], a, 4);
}

bool xrxe_gid_is_v4(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

/* fe80::/64 with the modified EUI-64 of the MAC (RFC 4291 App. A), what rxe's
 * default GID and node GUID are made of. */
static void eui64(uint8_t out[8], const uint8_t mac[6])
{
	out[0] = mac[0] ^ 2;
	out[1] = mac[1];
	out[2] = mac[2];
	out[3] = 0xff;
	out[4] = 0xfe;
	out[5] = mac[3];
	out[6] = mac[4];
	out[7] = mac[5];
}

static void set_gid(struct xrxe_dev_page *p, unsigned i, const union ibv_gid *gid)
{
	p->gids[i].gid = *gid;
	p->gids[i].gid_type = IBV_GID_TYPE_ROCE_V2;
	p->gids[i].ifindex = p->ifindex;
	p->gids[i].valid = 1;
}

static void fill_attrs(struct xrxe_dev_page *p, const struct xrxe_devpage_config *cfg)
{
	struct ibv_device_attr *a = &p->dev_attr;
	struct ibv_port_attr *pa = &p->port_attr;
	union ibv_gid ll = { .raw = { 0xfe, 0x80 } };
	uint8_t guid[8];
	uint64_t res_rd;

	eui64(guid, cfg->mac);
	memcpy(&p->node_guid, guid, 8); /* __be64, as ibv_device_attr.node_guid */

	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", XRXE_VERSION);
	memcpy(&a->node_guid, guid, 8);
	memcpy(&a->sys_image_guid, guid, 8);
	/* Registrations are windows of a memfd addressed by virtual address. */
	a->max_mr_size = 1ull << 47;
	a->page_size_cap = 0xfffff000; /* rxe */
	a->vendor_id = 0xffffff;       /* rxe: IBTA v1.4 A3.3.1 "no OUI" */
	a->vendor_part_id = 0;
	a->hw_ver = 0;
	a->max_qp = (int)cfg->max_qp;
	a->max_qp_wr = XRXE_MAX_QP_WR;
	/* Memory windows of type 1 and 2B (the QP-associated type 2, as rxe),
	 * and the memory management extensions user space can reach: local
	 * invalidate and send with invalidate. */
	a->device_cap_flags = IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_UD_AV_PORT_ENFORCE |
			      IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			      IBV_DEVICE_MEM_MGT_EXTENSIONS |
			      IBV_DEVICE_XRC; /* XRC domains, SRQs and QPs (docs/xrc.md) */
	a->max_sge = XRXE_MAX_SGE;
	a->max_sge_rd = XRXE_MAX_SGE;
	a->max_cq = (int)cfg->max_cq;
	a->max_cqe = XRXE_MAX_CQE;
	a->max_mr = (int)cfg->max_mr;
	a->max_pd = (int)cfg->max_pd;
	a->max_qp_rd_atom = XRXE_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = XRXE_MAX_RD_ATOMIC;
	res_rd = (uint64_t)cfg->max_qp * XRXE_MAX_RD_ATOMIC;
	a->max_res_rd_atom = res_rd > INT_MAX ? INT_MAX : (int)res_rd;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ah = (int)cfg->max_ah;
	/* SRQs: any number of WRs up to max_qp_wr, SGEs as QPs; no resize
	 * (IBV_DEVICE_SRQ_RESIZE is not set). */
	a->max_srq = (int)cfg->max_srq;
	a->max_srq_wr = XRXE_MAX_QP_WR;
	a->max_srq_sge = XRXE_MAX_SGE;
	a->max_mcast_grp = (int)cfg->max_mcast_grp;
	a->max_mcast_qp_attach = (int)cfg->max_mcast_qp_attach;
	a->max_total_mcast_qp_attach = (int)(cfg->max_mcast_grp * cfg->max_mcast_qp_attach);
	/* Windows: as many as regions (transport mw.c). */
	a->max_mw = (int)cfg->max_mr;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = cfg->local_ca_ack_delay;
	a->phys_port_cnt = 1;

	pa->max_mtu = IBV_MTU_4096;
	pa->gid_tbl_len = XRXE_GID_TABLE_LEN;
	/* What the kernel reports for RoCE ports: CM supported, IP-based GIDs. */
	pa->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	pa->max_msg_sz = 1u << 31; /* rxe */
	pa->pkey_tbl_len = 1;
	pa->lid = 0;
	pa->sm_lid = 0;
	pa->lmc = 0;
	pa->max_vl_num = 1;
	pa->subnet_timeout = 0;
	/* Width and speed from the netdev's ethtool speed, as rxe (veth: 10
	 * Gb/s, 1X FDR10); write_link refreshes them when the link changes. */
	xrxe_link_ib_speed(xrxe_link_speed_mbps(cfg->ifname), &pa->active_speed, &pa->active_width);
	pa->link_layer = IBV_LINK_LAYER_ETHERNET;

	memcpy(&ll.raw[8], guid, 8);
	set_gid(p, 0, &ll);
}

/* State, phys_state and active MTU; inside the seqlock. */
static bool write_link(struct xrxe_devpage *dp, bool up, uint32_t netdev_mtu)
{
	struct ibv_port_attr *pa = &dp->page->port_attr;
	enum ibv_port_state st = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	enum ibv_mtu mtu = xrxe_devpage_ib_mtu(netdev_mtu);
	bool changed = pa->state != st;

	if (mtu > dp->mtu_cap)
		mtu = dp->mtu_cap;
	pa->state = st;
	pa->phys_state = up ? 5 : 3; /* LinkUp / Disabled (IBA 14.2.5.6) */
	if (up) /* a NIC renegotiates its speed when its link comes up */
		xrxe_link_ib_speed(xrxe_link_speed_mbps(dp->page->ifname), &pa->active_speed,
				   &pa->active_width);
	pa->active_mtu = mtu;
	return changed;
}

int xrxe_devpage_create(const struct xrxe_devpage_config *cfg, struct xrxe_devpage **out)
{
	struct xrxe_devpage *dp;
	long ps = sysconf(_SC_PAGESIZE);
	size_t size = (sizeof(struct xrxe_dev_page) + (size_t)ps - 1) & ~((size_t)ps - 1);
	int err;

	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	dp->fd = memfd_create("xrxe-devpage", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (dp->fd < 0) {
		err = -errno;
		xrxe_err("%s: device page: memfd_create: %s", cfg->ifname, strerror(errno));
		goto err_free;
	}
	if (ftruncate(dp->fd, (off_t)size) < 0) {
		err = -errno;
		xrxe_err("%s: device page: ftruncate: %s", cfg->ifname, strerror(errno));
		goto err_close;
	}
	dp->page = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, dp->fd, 0);
	if (dp->page == MAP_FAILED) {
		err = -errno;
		dp->page = NULL;
		xrxe_err("%s: device page: mmap: %s", cfg->ifname, strerror(errno));
		goto err_close;
	}
	/* Every application gets this fd. F_SEAL_FUTURE_WRITE (after our own
	 * writable mapping exists) keeps any of them from mapping it writable
	 * and rewriting the GID table or the sleeping flag others rely on;
	 * shrink/grow seals keep our mapping from SIGBUS. */
	if (fcntl(dp->fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0) {
		err = -errno;
		xrxe_err("%s: device page: sealing: %s", cfg->ifname, strerror(errno));
		goto err_unmap;
	}
	dp->size = (uint32_t)size;
	dp->mtu_cap = mtu_from_bytes(cfg->max_path_mtu ? cfg->max_path_mtu : 4096);

	struct xrxe_dev_page *p = dp->page;

	p->abi_version = XRXE_ABI_VERSION;
	snprintf(p->ifname, sizeof(p->ifname), "%s", cfg->ifname);
	memcpy(p->mac, cfg->mac, 6);
	p->ifindex = cfg->ifindex;
	seq_begin(p);
	fill_attrs(p, cfg);
	write_link(dp, false, cfg->netdev_mtu);
	seq_end(p);
	*out = dp;
	return 0;

err_unmap:
	munmap(dp->page, size);
err_close:
	close(dp->fd);
err_free:
	free(dp);
	return err;
}

void xrxe_devpage_destroy(struct xrxe_devpage *dp)
{
	if (!dp)
		return;
	munmap(dp->page, dp->size);
	close(dp->fd);
	free(dp);
}

int xrxe_devpage_fd(const struct xrxe_devpage *dp)
{
	return dp->fd;
}

uint32_t xrxe_devpage_size(const struct xrxe_devpage *dp)
{
	return dp->size;
}

struct xrxe_dev_page *xrxe_devpage_page(struct xrxe_devpage *dp)
{
	return dp->page;
}

bool xrxe_devpage_set_link(struct xrxe_devpage *dp, bool up, uint32_t netdev_mtu)
{
	bool changed;

	seq_begin(dp->page);
	changed = write_link(dp, up, netdev_mtu);
	seq_end(dp->page);
	return changed;
}

/* The GID of an interface address, or -EINVAL for addresses that cannot be
 * one (the kernel's GID cache skips the same). */
static int addr_to_gid(int family, const void *addr, union ibv_gid *gid)
{
	if (family == AF_INET) {
		struct in_addr a;

		memcpy(&a, addr, 4);
		uint32_t h = ntohl(a.s_addr);

		if (!h || (h >> 24) == 127 || (h >> 28) == 0xe)
			return -EINVAL;
		xrxe_gid_from_v4(gid, &a);
		return 0;
	}
	if (family == AF_INET6) {
		struct in6_addr a;

		memcpy(&a, addr, 16);
		if (IN6_IS_ADDR_UNSPECIFIED(&a) || IN6_IS_ADDR_LOOPBACK(&a) ||
		    IN6_IS_ADDR_MULTICAST(&a) || IN6_IS_ADDR_V4MAPPED(&a))
			return -EINVAL;
		memcpy(gid->raw, &a, 16);
		return 0;
	}
	return -EINVAL;
}

static int find_gid(const struct xrxe_dev_page *p, const union ibv_gid *gid)
{
	for (unsigned i = 0; i < XRXE_GID_TABLE_LEN; i++)
		if (p->gids[i].valid && !memcmp(p->gids[i].gid.raw, gid->raw, 16))
			return (int)i;
	return -ENOENT;
}

int xrxe_devpage_gid_add(struct xrxe_devpage *dp, int family, const void *addr)
{
	struct xrxe_dev_page *p = dp->page;
	union ibv_gid gid;
	int i;

	if (addr_to_gid(family, addr, &gid))
		return -EINVAL;
	i = find_gid(p, &gid);
	if (i >= 0) {
		dp->marked &= ~(1u << i);
		return i;
	}
	for (i = 1; i < XRXE_GID_TABLE_LEN; i++) {
		if (p->gids[i].valid)
			continue;
		seq_begin(p);
		set_gid(p, (unsigned)i, &gid);
		seq_end(p);
		return i;
	}
	return -ENOSPC;
}

static void clear_slot(struct xrxe_dev_page *p, unsigned i)
{
	seq_begin(p);
	memset(&p->gids[i], 0, sizeof(p->gids[i]));
	seq_end(p);
}

int xrxe_devpage_gid_del(struct xrxe_devpage *dp, int family, const void *addr)
{
	union ibv_gid gid;
	int i;

	if (addr_to_gid(family, addr, &gid))
		return -ENOENT;
	i = find_gid(dp->page, &gid);
	if (i <= 0) /* slot 0 belongs to the MAC, not to an address */
		return -ENOENT;
	clear_slot(dp->page, (unsigned)i);
	return i;
}

void xrxe_devpage_gid_mark_all(struct xrxe_devpage *dp)
{
	dp->marked = 0;
	for (unsigned i = 1; i < XRXE_GID_TABLE_LEN; i++)
		if (dp->page->gids[i].valid)
			dp->marked |= 1u << i;
}

int xrxe_devpage_gid_sweep(struct xrxe_devpage *dp)
{
	int n = 0;

	for (unsigned i = 1; i < XRXE_GID_TABLE_LEN; i++) {
		if (dp->marked & (1u << i)) {
			clear_slot(dp->page, i);
			n++;
		}
	}
	dp->marked = 0;
	return n;
}

int xrxe_devpage_gid(const struct xrxe_devpage *dp, unsigned index, union ibv_gid *gid)
{
	if (index >= XRXE_GID_TABLE_LEN || !dp->page->gids[index].valid)
		return -EINVAL;
	*gid = dp->page->gids[index].gid;
	return 0;
}

bool xrxe_devpage_is_local_v4(const struct xrxe_devpage *dp, const struct in_addr *a)
{
	union ibv_gid gid;

	xrxe_gid_from_v4(&gid, a);
	return find_gid(dp->page, &gid) >= 0;
}

bool xrxe_devpage_is_local_v6(const struct xrxe_devpage *dp, const struct in6_addr *a)
{
	union ibv_gid gid;

	memcpy(gid.raw, a, 16);
	return find_gid(dp->page, &gid) >= 0;
}

bool xrxe_devpage_port_active(const struct xrxe_devpage *dp)
{
	return dp->page->port_attr.state == IBV_PORT_ACTIVE;
}

void xrxe_devpage_mac(const struct xrxe_devpage *dp, uint8_t mac[6])
{
	memcpy(mac, dp->page->mac, 6);
}

unsigned xrxe_devpage_gid_count(const struct xrxe_devpage *dp)
{
	unsigned n = 0;

	for (unsigned i = 0; i < XRXE_GID_TABLE_LEN; i++)
		n += dp->page->gids[i].valid != 0;
	return n;
}
