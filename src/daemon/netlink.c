// SPDX-License-Identifier: MIT
#include "daemon/netlink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

/* Probe an unresolved neighbour again after this long (the kernel retransmits
 * ARP/NS itself each second; this only restarts a FAILED entry). */
#define PROBE_INTERVAL_NS (200ull * 1000 * 1000)
#define DISCARD_PORT 9

struct xrxe_nl {
	struct xrxe_evsrc ev;      /* subscription socket */
	struct mnl_socket *evsock;
	struct mnl_socket *req;
	unsigned req_portid;
	unsigned seq;
	struct xrxe_nl_config cfg;
	int udp4, udp6;            /* neighbour-resolution triggers, bound to the device */
	bool link_up;
	uint32_t mtu;
	/* last probe, to pace them */
	struct in6_addr probe_addr;
	uint64_t probe_ns;
	struct xrxe_nl_stats st;
	char buf[32768]; /* > MNL_SOCKET_BUFFER_SIZE: the kernel never sends more per datagram */
};

/* Attribute table of one message, attributes past max ignored. */
#define TB_LEN 128
_Static_assert(IFLA_MAX < TB_LEN && RTA_MAX < TB_LEN && NDA_MAX < TB_LEN && IFA_MAX < TB_LEN,
	       "attribute table too small");
struct attrs {
	const struct nlattr *tb[TB_LEN];
	unsigned max;
};

static int attr_cb(const struct nlattr *attr, void *data)
{
	struct attrs *a = data;
	uint16_t type = mnl_attr_get_type(attr);

	if (type <= a->max && type < TB_LEN)
		a->tb[type] = attr;
	return MNL_CB_OK;
}

static void parse_attrs(const struct nlmsghdr *nlh, size_t hdrlen, unsigned max, struct attrs *a)
{
	memset(a, 0, sizeof(*a));
	a->max = max;
	mnl_attr_parse(nlh, (unsigned)hdrlen, attr_cb, a);
}

/* Payload of attribute t if it is exactly len bytes. */
static const void *attr_exact(const struct attrs *a, unsigned t, size_t len)
{
	if (!a->tb[t] || mnl_attr_get_payload_len(a->tb[t]) != len)
		return NULL;
	return mnl_attr_get_payload(a->tb[t]);
}

/* --- request socket ------------------------------------------------------ */

/* Send one request and run cb over every answer until the kernel says done
 * (dumps) or the one answer/ack has arrived. 0, or -errno (the kernel's, e.g.
 * -ENOENT for a missing neighbour, -ENETUNREACH for a missing route). */
static int nl_request(struct xrxe_nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	unsigned seq = ++nl->seq;
	int ret;

	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(nl->req, nlh, nlh->nlmsg_len) < 0)
		return errno ? -errno : -EIO;
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl->req, nl->buf, sizeof(nl->buf));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		ret = mnl_cb_run(nl->buf, (size_t)n, seq, nl->req_portid, cb, data);
		if (ret == MNL_CB_ERROR)
			return errno ? -errno : -EIO;
		if (ret == MNL_CB_STOP)
			return 0;
		/* MNL_CB_OK: a dump continues in the next datagram; a single answer
		 * without NLM_F_MULTI is followed by nothing, so stop after it. */
		if (!(nlh->nlmsg_flags & NLM_F_DUMP))
			return 0;
	}
}

/* --- link and addresses --------------------------------------------------- */

static void port_event(struct xrxe_nl *nl, enum ibv_event_type ev)
{
	if (nl->cfg.port_event)
		nl->cfg.port_event(nl->cfg.user, ev);
}

static void apply_link(struct xrxe_nl *nl, const struct nlmsghdr *nlh)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct attrs a;
	bool up;
	uint32_t mtu = nl->mtu;

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*ifi) || (unsigned)ifi->ifi_index != nl->cfg.ifindex)
		return;
	parse_attrs(nlh, sizeof(*ifi), IFLA_MAX, &a);
	if (attr_exact(&a, IFLA_MTU, 4))
		mtu = mnl_attr_get_u32(a.tb[IFLA_MTU]);
	/* IFF_RUNNING is the kernel's operational state (carrier): a veth whose
	 * peer is down is UP but not RUNNING. */
	up = nlh->nlmsg_type == RTM_NEWLINK && (ifi->ifi_flags & IFF_UP) &&
	     (ifi->ifi_flags & IFF_RUNNING);
	if (nlh->nlmsg_type == RTM_DELLINK)
		xrxe_warn("%s: interface removed", nl->cfg.ifname);
	if (mtu != nl->mtu && nl->mtu)
		xrxe_info("%s: MTU %u -> %u", nl->cfg.ifname, nl->mtu, mtu);
	nl->mtu = mtu;
	if (xrxe_devpage_set_link(nl->cfg.dp, up, mtu) || up != nl->link_up) {
		xrxe_info("%s: port %s", nl->cfg.ifname, up ? "ACTIVE" : "DOWN");
		nl->link_up = up;
		port_event(nl, up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
	}
}

static void apply_addr(struct xrxe_nl *nl, const struct nlmsghdr *nlh, bool log)
{
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	char txt[INET6_ADDRSTRLEN];
	const void *addr;
	struct attrs a;
	size_t alen;
	int slot;

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*ifa) || ifa->ifa_index != nl->cfg.ifindex)
		return;
	if (ifa->ifa_family == AF_INET)
		alen = 4;
	else if (ifa->ifa_family == AF_INET6)
		alen = 16;
	else
		return;
	parse_attrs(nlh, sizeof(*ifa), IFA_MAX, &a);
	/* IFA_LOCAL is the local address where the two differ (point-to-point:
	 * IFA_ADDRESS is then the peer). */
	addr = attr_exact(&a, IFA_LOCAL, alen);
	if (!addr)
		addr = attr_exact(&a, IFA_ADDRESS, alen);
	if (!addr)
		return;
	inet_ntop(ifa->ifa_family, addr, txt, sizeof(txt));
	/* An IPv6 address still in duplicate address detection is not usable
	 * yet; the kernel announces it again without the flag when it is. */
	if (nlh->nlmsg_type == RTM_NEWADDR &&
	    !(ifa->ifa_flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED))) {
		int before = (int)xrxe_devpage_gid_count(nl->cfg.dp);

		slot = xrxe_devpage_gid_add(nl->cfg.dp, ifa->ifa_family, addr);
		if (slot == -ENOSPC)
			xrxe_warn("%s: GID table full (%d entries), %s not added", nl->cfg.ifname,
				  XRXE_GID_TABLE_LEN, txt);
		else if (slot >= 0 && (int)xrxe_devpage_gid_count(nl->cfg.dp) != before) {
			if (log)
				xrxe_info("%s: GID %d = %s", nl->cfg.ifname, slot, txt);
			port_event(nl, IBV_EVENT_GID_CHANGE);
		}
	} else {
		slot = xrxe_devpage_gid_del(nl->cfg.dp, ifa->ifa_family, addr);
		if (slot > 0) {
			xrxe_info("%s: GID %d (%s) removed", nl->cfg.ifname, slot, txt);
			port_event(nl, IBV_EVENT_GID_CHANGE);
		}
	}
}

static int dump_cb(const struct nlmsghdr *nlh, void *data)
{
	struct xrxe_nl *nl = data;

	switch (nlh->nlmsg_type) {
	case RTM_NEWLINK:
		apply_link(nl, nlh);
		break;
	case RTM_NEWADDR:
		apply_addr(nl, nlh, true);
		break;
	}
	return MNL_CB_OK;
}

static int read_link(struct xrxe_nl *nl)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = (int)nl->cfg.ifindex;
	return nl_request(nl, nlh, dump_cb, nl);
}

static int dump_addrs(struct xrxe_nl *nl, int family)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifaddrmsg *ifa;

	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (uint8_t)family;
	ifa->ifa_index = nl->cfg.ifindex;
	return nl_request(nl, nlh, dump_cb, nl);
}

/* Full state from scratch: at start, and after the subscription socket lost
 * events (ENOBUFS). Addresses gone meanwhile are swept. */
static int sync_all(struct xrxe_nl *nl)
{
	int err, swept;

	err = read_link(nl);
	if (err) {
		xrxe_err("%s: netlink: reading the link: %s", nl->cfg.ifname, strerror(-err));
		return err;
	}
	xrxe_devpage_gid_mark_all(nl->cfg.dp);
	err = dump_addrs(nl, AF_INET);
	if (!err)
		err = dump_addrs(nl, AF_INET6);
	if (err) {
		xrxe_err("%s: netlink: dumping addresses: %s", nl->cfg.ifname, strerror(-err));
		return err;
	}
	swept = xrxe_devpage_gid_sweep(nl->cfg.dp);
	if (swept)
		port_event(nl, IBV_EVENT_GID_CHANGE);
	return 0;
}

static int event_cb(const struct nlmsghdr *nlh, void *data)
{
	struct xrxe_nl *nl = data;

	nl->st.events++;
	switch (nlh->nlmsg_type) {
	case RTM_NEWLINK:
	case RTM_DELLINK:
		apply_link(nl, nlh);
		break;
	case RTM_NEWADDR:
	case RTM_DELADDR:
		apply_addr(nl, nlh, true);
		break;
	}
	return MNL_CB_OK;
}

static void nl_events(struct xrxe_evsrc *src, uint32_t events)
{
	struct xrxe_nl *nl = (struct xrxe_nl *)src;

	(void)events;
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl->evsock, nl->buf, sizeof(nl->buf));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			if (errno == ENOBUFS) {
				/* The kernel dropped notifications: our view may be
				 * stale, so read everything again. */
				nl->st.resyncs++;
				xrxe_warn("%s: netlink events lost, resynchronising", nl->cfg.ifname);
				sync_all(nl);
				continue;
			}
			xrxe_err("%s: netlink: %s", nl->cfg.ifname, strerror(errno));
			return;
		}
		/* Notifications carry seq 0 and the kernel's port id 0. */
		mnl_cb_run(nl->buf, (size_t)n, 0, 0, event_cb, nl);
	}
}

struct xrxe_evsrc *xrxe_nl_evsrc(struct xrxe_nl *nl)
{
	return &nl->ev;
}

/* --- address vector resolution ------------------------------------------- */

struct route_ans {
	unsigned family;
	bool found;
	uint8_t type;
	uint32_t oif;
	bool has_gw;
	uint8_t gw[16];
	uint8_t hoplimit; /* RTAX_HOPLIMIT of the route, 0 if it has none */
};

/* RTAX_HOPLIMIT inside a route's RTA_METRICS nest, 0 if absent. */
static uint8_t route_metric_hoplimit(const struct nlattr *metrics)
{
	const struct nlattr *m;

	mnl_attr_for_each_nested(m, metrics) {
		if (mnl_attr_get_type(m) == RTAX_HOPLIMIT &&
		    mnl_attr_get_payload_len(m) == sizeof(uint32_t)) {
			uint32_t v = mnl_attr_get_u32(m);

			return v > 255 ? 255 : (uint8_t)v;
		}
	}
	return 0;
}

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	struct route_ans *r = data;
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	size_t alen = r->family == AF_INET ? 4 : 16;
	const void *gw;
	struct attrs a;

	if (nlh->nlmsg_type != RTM_NEWROUTE || mnl_nlmsg_get_payload_len(nlh) < sizeof(*rtm))
		return MNL_CB_OK;
	parse_attrs(nlh, sizeof(*rtm), RTA_MAX, &a);
	r->found = true;
	r->type = rtm->rtm_type;
	if (attr_exact(&a, RTA_OIF, 4))
		r->oif = mnl_attr_get_u32(a.tb[RTA_OIF]);
	gw = attr_exact(&a, RTA_GATEWAY, alen);
	if (gw) {
		r->has_gw = true;
		memcpy(r->gw, gw, alen);
	}
	if (a.tb[RTA_METRICS] && mnl_attr_validate(a.tb[RTA_METRICS], MNL_TYPE_NESTED) == 0)
		r->hoplimit = route_metric_hoplimit(a.tb[RTA_METRICS]);
	return MNL_CB_OK;
}

/* The hop limit the kernel would use on a route without its own: IPv4's
 * net.ipv4.ip_default_ttl, IPv6's per-interface hop_limit (both per network
 * namespace: /proc/sys/net is the reader's). 64 if unreadable. */
static uint8_t default_hop_limit(const struct xrxe_nl *nl, int family)
{
	char path[96], buf[16];
	unsigned long v;
	ssize_t n;
	int fd;

	if (family == AF_INET)
		snprintf(path, sizeof(path), "/proc/sys/net/ipv4/ip_default_ttl");
	else
		snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/hop_limit",
			 nl->cfg.ifname);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 64;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 64;
	buf[n] = 0;
	v = strtoul(buf, NULL, 10);
	return v >= 1 && v <= 255 ? (uint8_t)v : 64;
}

struct neigh_ans {
	bool found;
	uint16_t state;
	bool has_mac;
	uint8_t mac[6];
};

static int neigh_cb(const struct nlmsghdr *nlh, void *data)
{
	struct neigh_ans *n = data;
	const struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);
	const void *ll;
	struct attrs a;

	if (nlh->nlmsg_type != RTM_NEWNEIGH || mnl_nlmsg_get_payload_len(nlh) < sizeof(*ndm))
		return MNL_CB_OK;
	parse_attrs(nlh, sizeof(*ndm), NDA_MAX, &a);
	n->found = true;
	n->state = ndm->ndm_state;
	ll = attr_exact(&a, NDA_LLADDR, 6);
	if (ll) {
		n->has_mac = true;
		memcpy(n->mac, ll, 6);
	}
	return MNL_CB_OK;
}

static int get_route(struct xrxe_nl *nl, int family, const void *dst, struct route_ans *r)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rtm;

	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)family;
	rtm->rtm_dst_len = family == AF_INET ? 32 : 128;
	mnl_attr_put(nlh, RTA_DST, family == AF_INET ? 4 : 16, dst);
	/* We can only transmit on our interface: ask for the route through it
	 * (also gives IPv6 link-local destinations their scope). */
	mnl_attr_put_u32(nlh, RTA_OIF, nl->cfg.ifindex);
	*r = (struct route_ans){ .family = (unsigned)family };
	return nl_request(nl, nlh, route_cb, r);
}

static int get_neigh(struct xrxe_nl *nl, int family, const void *addr, struct neigh_ans *n)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ndmsg *ndm;

	nlh->nlmsg_type = RTM_GETNEIGH;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = (uint8_t)family;
	ndm->ndm_ifindex = (int)nl->cfg.ifindex;
	mnl_attr_put(nlh, NDA_DST, family == AF_INET ? 4 : 16, addr);
	*n = (struct neigh_ans){ 0 };
	return nl_request(nl, nlh, neigh_cb, n);
}

/* Make the kernel resolve the neighbour behind dst: a zero-length UDP
 * datagram to the discard port from a socket bound to our interface goes
 * through the neighbour subsystem (ARP / neighbour solicitation), which is
 * all we need from it. */
static void probe(struct xrxe_nl *nl, int family, const void *dst, uint64_t now_ns)
{
	struct in6_addr key = { 0 };
	ssize_t r;

	memcpy(&key, dst, family == AF_INET ? 4 : 16);
	if (!memcmp(&key, &nl->probe_addr, sizeof(key)) && now_ns - nl->probe_ns < PROBE_INTERVAL_NS)
		return;
	nl->probe_addr = key;
	nl->probe_ns = now_ns;
	nl->st.neigh_probes++;
	if (family == AF_INET) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(DISCARD_PORT) };

		memcpy(&sin.sin_addr, dst, 4);
		r = sendto(nl->udp4, "", 0, MSG_DONTWAIT, (struct sockaddr *)&sin, sizeof(sin));
	} else {
		struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6,
					     .sin6_port = htons(DISCARD_PORT) };

		memcpy(&sin6.sin6_addr, dst, 16);
		if (IN6_IS_ADDR_LINKLOCAL(&sin6.sin6_addr))
			sin6.sin6_scope_id = nl->cfg.ifindex;
		r = sendto(nl->udp6, "", 0, MSG_DONTWAIT, (struct sockaddr *)&sin6, sizeof(sin6));
	}
	if (r < 0)
		xrxe_dbg("%s: neighbour probe: %s", nl->cfg.ifname, strerror(errno));
}

int xrxe_nl_resolve(struct xrxe_nl *nl, const struct ibv_ah_attr *ah, uint64_t now_ns,
		    struct xrxe_av *av)
{
	const union ibv_gid *dgid = &ah->grh.dgid;
	union ibv_gid sgid;
	struct route_ans r;
	struct neigh_ans n;
	const void *hop;
	int family, err;

	nl->st.resolves++;
	/* RoCE has no LIDs: every address carries a GRH (IBA A17.4.5.1). */
	if (!ah->is_global || (ah->port_num && ah->port_num != 1))
		return -EINVAL;
	if (xrxe_devpage_gid(nl->cfg.dp, ah->grh.sgid_index, &sgid))
		return -EINVAL;
	if (xrxe_gid_is_v4(&sgid) != xrxe_gid_is_v4(dgid))
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	av->tclass = ah->grh.traffic_class;
	av->hop_limit = ah->grh.hop_limit; /* kept for multicast; a route replaces it below */
	av->flow_label = ah->grh.flow_label & 0xfffff;
	xrxe_devpage_mac(nl->cfg.dp, av->smac);
	if (xrxe_gid_is_v4(dgid)) {
		family = AF_INET;
		av->ip_version = 4;
		memcpy(&av->saddr.v4, &sgid.raw[12], 4);
		memcpy(&av->daddr.v4, &dgid->raw[12], 4);
		if (!av->daddr.v4.s_addr)
			return -EINVAL;
		if (IN_MULTICAST(ntohl(av->daddr.v4.s_addr))) {
			/* RFC 1112 6.4: 01:00:5e + the low 23 bits of the group */
			static const uint8_t pfx[3] = { 0x01, 0x00, 0x5e };

			memcpy(av->dmac, pfx, 3);
			memcpy(av->dmac + 3, &dgid->raw[13], 3);
			av->dmac[3] &= 0x7f;
			return 0;
		}
		if (xrxe_devpage_is_local_v4(nl->cfg.dp, &av->daddr.v4))
			goto local;
	} else {
		family = AF_INET6;
		av->ip_version = 6;
		memcpy(&av->saddr.v6, sgid.raw, 16);
		memcpy(&av->daddr.v6, dgid->raw, 16);
		if (IN6_IS_ADDR_UNSPECIFIED(&av->daddr.v6))
			return -EINVAL;
		if (IN6_IS_ADDR_MULTICAST(&av->daddr.v6)) {
			/* RFC 2464 7: 33:33 + the last 32 bits of the group */
			av->dmac[0] = av->dmac[1] = 0x33;
			memcpy(av->dmac + 2, &dgid->raw[12], 4);
			return 0;
		}
		if (xrxe_devpage_is_local_v6(nl->cfg.dp, &av->daddr.v6))
			goto local;
	}

	err = get_route(nl, family, &av->daddr, &r);
	if (err == -ENETUNREACH || err == -EHOSTUNREACH || err == -ENODEV || (!err && !r.found))
		return -ENETUNREACH;
	if (err) {
		xrxe_warn_rl("%s: route lookup: %s", nl->cfg.ifname, strerror(-err));
		return -EIO;
	}
	if (r.type != RTN_UNICAST || r.oif != nl->cfg.ifindex)
		return -ENETUNREACH;
	hop = r.has_gw ? (const void *)r.gw : (const void *)&av->daddr;
	/* The hop limit comes from the route, not the application, as the
	 * kernel's RDMA core does for every RoCE address vector
	 * (ib_resolve_eth_dmac -> rdma_addr_find_l2_eth_by_grh: the route's
	 * ip4_dst_hoplimit / ip6_dst_hoplimit). ibv_rc_pingpong asks for 1,
	 * which would stop at the first router. */
	av->hop_limit = r.hoplimit ? r.hoplimit : default_hop_limit(nl, family);

	err = get_neigh(nl, family, hop, &n);
	if (err && err != -ENOENT) {
		xrxe_warn_rl("%s: neighbour lookup: %s", nl->cfg.ifname, strerror(-err));
		return -EIO;
	}
	if (!err && n.found && n.has_mac &&
	    (n.state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT))) {
		/* A stale entry is still our best guess; the kernel re-validates it
		 * only when something sends through it, so give it a reason. */
		if (n.state & NUD_STALE)
			probe(nl, family, &av->daddr, now_ns);
		memcpy(av->dmac, n.mac, 6);
		return 0;
	}
	nl->st.resolve_again++;
	probe(nl, family, &av->daddr, now_ns);
	return -EAGAIN;

local:
	/* One host, two QPs: the daemon loops these frames back itself. The
	 * kernel's route to a local address has no hop-limit metric either. */
	memcpy(av->dmac, av->smac, 6);
	av->hop_limit = default_hop_limit(nl, family);
	return 0;
}

int xrxe_nl_mcast(struct xrxe_nl *nl, const union ibv_gid *gid, bool join)
{
	int r;

	/* A membership held by our device-bound UDP socket: the kernel then
	 * programs the group's MAC into the NIC's filter and answers IGMP/MLD
	 * queries; the frames themselves go to AF_XDP (the XDP program steers
	 * UDP 4791 whatever the destination). */
	if (xrxe_gid_is_v4(gid)) {
		struct ip_mreqn mr = { .imr_ifindex = (int)nl->cfg.ifindex };

		memcpy(&mr.imr_multiaddr, &gid->raw[12], 4);
		r = setsockopt(nl->udp4, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP,
			       &mr, sizeof(mr));
	} else {
		struct ipv6_mreq mr = { .ipv6mr_interface = nl->cfg.ifindex };

		memcpy(&mr.ipv6mr_multiaddr, gid->raw, 16);
		r = setsockopt(nl->udp6, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP,
			       &mr, sizeof(mr));
	}
	if (r < 0) {
		r = -errno;
		xrxe_warn_rl("%s: multicast %s: %s", nl->cfg.ifname, join ? "join" : "leave",
			  strerror(errno));
		return r;
	}
	return 0;
}

/* --- setup ------------------------------------------------------------------- */

static int udp_socket(int family, const char *ifname)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname) + 1) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int xrxe_nl_open(const struct xrxe_nl_config *cfg, struct xrxe_nl **out)
{
	struct xrxe_nl *nl;
	struct timeval tv = { .tv_sec = 1 };
	int rcvbuf = 1 << 20, one = 1, err;

	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl->cfg = *cfg;
	nl->udp4 = nl->udp6 = -1;

	/* Subscribe first, then dump: a change between the two shows up as an
	 * event and is applied twice, which is harmless (add/del are idempotent);
	 * the other order could lose it. */
	nl->evsock = mnl_socket_open2(NETLINK_ROUTE, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (!nl->evsock || mnl_socket_bind(nl->evsock, RTMGRP_LINK | RTMGRP_IPV4_IFADDR |
						       RTMGRP_IPV6_IFADDR, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		xrxe_err("%s: netlink subscribe: %s", cfg->ifname, strerror(errno));
		goto err_free;
	}
	/* A burst of address changes must not overflow the default buffer. */
	setsockopt(mnl_socket_get_fd(nl->evsock), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
		   sizeof(rcvbuf));
	nl->ev.fd = mnl_socket_get_fd(nl->evsock);
	nl->ev.fn = nl_events;

	nl->req = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl->req || mnl_socket_bind(nl->req, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		xrxe_err("%s: netlink socket: %s", cfg->ifname, strerror(errno));
		goto err_free;
	}
	nl->req_portid = mnl_socket_get_portid(nl->req);
	/* Strict checking makes RTM_GETROUTE honour RTA_OIF filters exactly and
	 * lets the kernel reject malformed requests instead of guessing. */
	mnl_socket_setsockopt(nl->req, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
	setsockopt(mnl_socket_get_fd(nl->req), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	nl->udp4 = udp_socket(AF_INET, cfg->ifname);
	nl->udp6 = udp_socket(AF_INET6, cfg->ifname);
	if (nl->udp4 < 0 || nl->udp6 < 0) {
		err = nl->udp4 < 0 ? nl->udp4 : nl->udp6;
		xrxe_err("%s: neighbour probe socket: %s", cfg->ifname, strerror(-err));
		goto err_free;
	}
	nl->seq = (unsigned)time(NULL);
	err = sync_all(nl);
	if (err)
		goto err_free;
	*out = nl;
	return 0;

err_free:
	xrxe_nl_close(nl);
	return err;
}

void xrxe_nl_close(struct xrxe_nl *nl)
{
	if (!nl)
		return;
	if (nl->evsock)
		mnl_socket_close(nl->evsock);
	if (nl->req)
		mnl_socket_close(nl->req);
	if (nl->udp4 >= 0)
		close(nl->udp4);
	if (nl->udp6 >= 0)
		close(nl->udp6);
	free(nl);
}

void xrxe_nl_get_stats(const struct xrxe_nl *nl, struct xrxe_nl_stats *st)
{
	*st = nl->st;
}
