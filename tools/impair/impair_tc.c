// SPDX-License-Identifier: MIT
/*
 * Loading and finding the tc impairment program (see impair_tc.h).
 *
 * Our filter is the one at clsact egress with handle XRXE_IMPAIR_TC_HANDLE and
 * priority XRXE_IMPAIR_TC_PRIO whose program is named xrxe_impair and has our
 * maps. Its settings live in its own map, so a second `xrxe-impair IFACE ...`
 * rewrites that map instead of reattaching (counters and the phantom queue
 * carry on). Whether the clsact qdisc was ours to create is kept in the same
 * map, the only place that lives exactly as long as the filter.
 */
#include "impair_tc.h"

#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <libmnl/libmnl.h>
#include <linux/gen_stats.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include "daemon/bpf_log.h"
#include "util/log.h"
#include "xrxe_impair.skel.h"

static const char *const counter_names[] = {
	[XRXE_IMPAIR_SEEN] = "seen",
	[XRXE_IMPAIR_DROPPED] = "dropped",
	[XRXE_IMPAIR_DUPLICATED] = "duplicated",
	[XRXE_IMPAIR_CORRUPTED] = "corrupted",
	[XRXE_IMPAIR_ECN_MARKED] = "ecn_marked",
	[XRXE_IMPAIR_ECN_ALREADY_CE] = "ecn_already_ce",
	[XRXE_IMPAIR_NOT_ECT_OVER] = "not_ect_over_threshold",
	[XRXE_IMPAIR_NOT_IP] = "not_ip",
};
_Static_assert(sizeof(counter_names) / sizeof(counter_names[0]) == XRXE_IMPAIR_COUNTER_COUNT,
	       "a counter without a name");

const char *impair_counter_name(enum xrxe_impair_counter c)
{
	return (unsigned)c < XRXE_IMPAIR_COUNTER_COUNT ? counter_names[c] : "?";
}

static const char *perm_hint(int err)
{
	return err == -EPERM || err == -EACCES ? " (needs root: CAP_BPF and CAP_NET_ADMIN)" : "";
}

int impair_ifindex(const char *ifname, unsigned int *ifindex)
{
	/* if_nametoindex would truncate a long name into somebody else's. */
	if (!ifname || !*ifname || strlen(ifname) >= IF_NAMESIZE) {
		xrxe_err("%s: no such interface", ifname ? ifname : "(null)");
		return -ENODEV;
	}
	*ifindex = if_nametoindex(ifname);
	if (*ifindex)
		return 0;
	if (errno == ENODEV || errno == ENXIO) {
		xrxe_err("%s: no such interface", ifname);
		return -ENODEV;
	}
	xrxe_err("%s: cannot look up the interface: %s", ifname, strerror(errno));
	return -errno;
}

static void handle_init(struct impair_handle *h, unsigned int ifindex)
{
	h->ifindex = ifindex;
	h->prog_id = 0;
	h->cfg_fd = h->queue_fd = h->stats_fd = h->flows_fd = -1;
}

void impair_close(struct impair_handle *h)
{
	int *fds[] = { &h->cfg_fd, &h->queue_fd, &h->stats_fd, &h->flows_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* Reopen the maps of program prog_fd by id, recognising ours by name, type
 * and value size. 0 when all four were found. */
static int open_maps(int prog_fd, struct impair_handle *h)
{
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info), ids[8];
	static const struct {
		const char *name;
		__u32 type, value_size;
		size_t fd_off;
	} want[] = {
		{ XRXE_IMPAIR_CFG_MAP, BPF_MAP_TYPE_ARRAY, sizeof(struct xrxe_impair_cfg),
		  offsetof(struct impair_handle, cfg_fd) },
		{ XRXE_IMPAIR_QUEUE_MAP, BPF_MAP_TYPE_ARRAY, sizeof(struct xrxe_impair_queue),
		  offsetof(struct impair_handle, queue_fd) },
		{ XRXE_IMPAIR_STATS_MAP, BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(struct xrxe_impair_stat),
		  offsetof(struct impair_handle, stats_fd) },
		{ XRXE_IMPAIR_FLOWS_MAP, BPF_MAP_TYPE_PERCPU_HASH, sizeof(struct xrxe_impair_flow),
		  offsetof(struct impair_handle, flows_fd) },
	};
	int err;

	info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	info.map_ids = (__u64)(unsigned long)ids;
	err = bpf_obj_get_info_by_fd(prog_fd, &info, &info_len);
	if (err)
		return err;
	if (info.nr_map_ids > sizeof(ids) / sizeof(ids[0]))
		info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	for (__u32 i = 0; i < info.nr_map_ids; i++) {
		struct bpf_map_info mi = { 0 };
		__u32 mi_len = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]), kept = 0;

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &mi, &mi_len)) {
			for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
				int *slot = (int *)((char *)h + want[w].fd_off);

				if (*slot < 0 && mi.type == want[w].type &&
				    mi.value_size == want[w].value_size && !strcmp(mi.name, want[w].name)) {
					*slot = fd;
					kept = 1;
					break;
				}
			}
		}
		if (!kept)
			close(fd);
	}
	if (h->cfg_fd < 0 || h->queue_fd < 0 || h->stats_fd < 0 || h->flows_fd < 0) {
		impair_close(h);
		return -ENOENT;
	}
	return 0;
}

static void hook_init(struct bpf_tc_hook *hook, unsigned int ifindex)
{
	memset(hook, 0, sizeof(*hook));
	hook->sz = sizeof(*hook);
	hook->ifindex = (int)ifindex;
	hook->attach_point = BPF_TC_EGRESS;
}

int impair_find(const char *ifname, unsigned int ifindex, struct impair_handle *h)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XRXE_IMPAIR_TC_HANDLE,
			    .priority = XRXE_IMPAIR_TC_PRIO);
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info);
	struct bpf_tc_hook hook;
	int prog_fd, err;

	handle_init(h, ifindex);
	xrxe_bpf_quiet_begin();
	hook_init(&hook, ifindex);
	err = bpf_tc_query(&hook, &opts);
	/* No clsact qdisc at all comes back as EINVAL ("parent not found"). */
	if (err == -ENOENT || err == -EINVAL)
		return -ENOENT;
	if (err) {
		xrxe_err("%s: cannot query tc filters: %s%s%s", ifname, strerror(-err),
			 xrxe_bpf_extack_suffix(), perm_hint(err));
		return err;
	}
	prog_fd = bpf_prog_get_fd_by_id(opts.prog_id);
	if (prog_fd < 0) {
		err = -errno;
		xrxe_err("%s: cannot open tc program id %u: %s%s", ifname, opts.prog_id,
			 strerror(-err), perm_hint(err));
		return err;
	}
	err = bpf_obj_get_info_by_fd(prog_fd, &info, &info_len);
	if (!err && (strcmp(info.name, XRXE_IMPAIR_PROG_NAME) || open_maps(prog_fd, h))) {
		xrxe_err("%s: the tc egress filter at handle 0x%x prio %u is not xrxe-impair's "
			 "(program id %u, '%s'); leaving it", ifname, XRXE_IMPAIR_TC_HANDLE,
			 XRXE_IMPAIR_TC_PRIO, opts.prog_id, info.name);
		err = -EBUSY;
	} else if (err) {
		xrxe_err("%s: cannot read tc program id %u: %s", ifname, opts.prog_id,
			 strerror(-err));
	}
	close(prog_fd);
	if (!err)
		h->prog_id = opts.prog_id;
	return err;
}

static int write_cfg(const char *ifname, int cfg_fd, const struct xrxe_impair_cfg *cfg)
{
	__u32 key = 0;

	/* One syscall replaces the whole value; a packet in flight reads the
	 * old or the new settings. (It may see a torn mix of the two for one
	 * packet: harmless for probabilities, and documented.) */
	if (bpf_map_update_elem(cfg_fd, &key, cfg, BPF_ANY)) {
		int err = -errno;

		xrxe_err("%s: cannot write the settings: %s", ifname, strerror(-err));
		return err;
	}
	return 0;
}

int impair_attach(const char *ifname, unsigned int ifindex, struct xrxe_impair_cfg *cfg,
		  struct impair_handle *h)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XRXE_IMPAIR_TC_HANDLE,
			    .priority = XRXE_IMPAIR_TC_PRIO);
	struct xrxe_impair *skel;
	struct bpf_tc_hook hook;
	bool created = false;
	int err;

	handle_init(h, ifindex);
	xrxe_bpf_quiet_begin();
	skel = xrxe_impair__open_and_load();
	if (!skel) {
		err = -errno;
		xrxe_err("%s: the kernel refused the tc program: %s%s (XRXE_LOG=debug shows the "
			 "verifier log)", ifname, strerror(-err), perm_hint(err));
		return err;
	}

	hook_init(&hook, ifindex);
	err = bpf_tc_hook_create(&hook);
	if (!err) {
		created = true;
	} else if (err != -EEXIST) {
		xrxe_err("%s: cannot create the clsact qdisc: %s%s%s", ifname, strerror(-err),
			 xrxe_bpf_extack_suffix(), perm_hint(err));
		goto out;
	}
	cfg->flags = (cfg->flags & ~XRXE_IMPAIR_F_OWN_CLSACT) |
		     (created ? XRXE_IMPAIR_F_OWN_CLSACT : 0);
	err = write_cfg(ifname, bpf_map__fd(skel->maps.impair_cfg), cfg);
	if (err)
		goto out_hook;

	opts.prog_fd = bpf_program__fd(skel->progs.xrxe_impair);
	xrxe_bpf_extack_clear();
	/* No BPF_TC_F_REPLACE: never take over a filter that appeared since
	 * impair_find() looked. */
	err = bpf_tc_attach(&hook, &opts);
	if (err) {
		if (err == -EINVAL && !created)
			xrxe_err("%s: cannot attach to clsact egress: %s%s (is the existing ingress "
				 "qdisc a plain 'ingress' rather than 'clsact'?)", ifname,
				 strerror(-err), xrxe_bpf_extack_suffix());
		else
			xrxe_err("%s: cannot attach the tc filter: %s%s%s", ifname, strerror(-err),
				 xrxe_bpf_extack_suffix(), perm_hint(err));
		goto out_hook;
	}
	h->prog_id = opts.prog_id;
	err = open_maps(opts.prog_fd, h);
	if (err)
		xrxe_err("%s: attached, but cannot reopen the program's maps: %s", ifname,
			 strerror(-err));
	goto out;

out_hook:
	if (created) {
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		bpf_tc_hook_destroy(&hook);
	}
out:
	/* Attached, the filter holds the program, and the program its maps. */
	xrxe_impair__destroy(skel);
	return err;
}

int impair_configure(const char *ifname, const struct impair_handle *h,
		     struct xrxe_impair_cfg *cfg)
{
	struct xrxe_impair_cfg old;
	__u32 key = 0;

	if (bpf_map_lookup_elem(h->cfg_fd, &key, &old)) {
		int err = -errno;

		xrxe_err("%s: cannot read the settings: %s", ifname, strerror(-err));
		return err;
	}
	cfg->flags = (cfg->flags & ~XRXE_IMPAIR_F_OWN_CLSACT) |
		     (old.flags & XRXE_IMPAIR_F_OWN_CLSACT);
	return write_cfg(ifname, h->cfg_fd, cfg);
}

/* --- counting the filters left on clsact (netlink dump, as `tc filter show`) */

static int filter_cb(const struct nlmsghdr *nlh, void *data)
{
	if (nlh->nlmsg_type == RTM_NEWTFILTER)
		(*(unsigned *)data)++;
	return MNL_CB_OK;
}

/* One rtnetlink dump of tc objects (RTM_GETTFILTER, RTM_GETQDISC) on
 * ifindex, parent as given (0: any), each answer through cb. */
static int tc_dump(uint16_t type, unsigned int ifindex, __u32 parent, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct tcmsg *tcm;
	unsigned int seq = (unsigned int)time(NULL), portid;
	ssize_t ret;
	int err = 0;

	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	tcm = mnl_nlmsg_put_extra_header(nlh, sizeof(*tcm));
	tcm->tcm_family = AF_UNSPEC;
	tcm->tcm_ifindex = (int)ifindex; /* the kernel dumps only this device */
	tcm->tcm_parent = parent;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		err = -errno;
		goto out;
	}
	for (;;) {
		ret = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (ret < 0) {
			err = -errno;
			break;
		}
		ret = mnl_cb_run(buf, (size_t)ret, seq, portid, cb, data);
		if (ret <= MNL_CB_STOP) {
			if (ret < 0)
				err = -errno;
			break;
		}
	}
out:
	mnl_socket_close(nl);
	return err;
}

static int count_filters(unsigned int ifindex, __u32 parent, unsigned *n)
{
	*n = 0;
	return tc_dump(RTM_GETTFILTER, ifindex, parent, filter_cb, n);
}

int impair_clear(const char *ifname, const struct impair_handle *h, bool *removed_qdisc)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XRXE_IMPAIR_TC_HANDLE,
			    .priority = XRXE_IMPAIR_TC_PRIO);
	struct xrxe_impair_cfg cfg = { 0 };
	struct bpf_tc_hook hook;
	unsigned n_in = 0, n_eg = 0;
	__u32 key = 0;
	int err;

	*removed_qdisc = false;
	xrxe_bpf_quiet_begin();
	bpf_map_lookup_elem(h->cfg_fd, &key, &cfg); /* unreadable: flags 0, keep the qdisc */
	hook_init(&hook, h->ifindex);
	err = bpf_tc_detach(&hook, &opts);
	if (err) {
		xrxe_err("%s: cannot remove the tc filter: %s%s%s", ifname, strerror(-err),
			 xrxe_bpf_extack_suffix(), perm_hint(err));
		return err;
	}
	if (!(cfg.flags & XRXE_IMPAIR_F_OWN_CLSACT))
		return 0;
	/* Ours, but somebody may have added filters to it since: keep it then. */
	if (count_filters(h->ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS), &n_in) ||
	    count_filters(h->ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS), &n_eg)) {
		xrxe_warn("%s: cannot list the remaining tc filters; keeping the clsact qdisc",
			  ifname);
		return 0;
	}
	if (n_in || n_eg) {
		xrxe_info("%s: keeping the clsact qdisc xrxe-impair created: %u other filter(s) "
			  "use it", ifname, n_in + n_eg);
		return 0;
	}
	hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
	err = bpf_tc_hook_destroy(&hook);
	if (err) {
		xrxe_err("%s: filter removed, but cannot delete the clsact qdisc: %s%s", ifname,
			 strerror(-err), xrxe_bpf_extack_suffix());
		return err;
	}
	*removed_qdisc = true;
	return 0;
}

/* --- the root qdisc's statistics (RTM_GETQDISC dump, as `tc -s qdisc show`) */

struct qdisc_dump {
	unsigned int ifindex;
	struct impair_qdisc_stats *st;
	bool found;
};

static int qdisc_stats2_cb(const struct nlattr *attr, void *data)
{
	struct impair_qdisc_stats *st = data;

	/* Sizes checked: a short attribute is ignored, never read past. */
	if (mnl_attr_get_type(attr) == TCA_STATS_BASIC &&
	    mnl_attr_get_payload_len(attr) >= sizeof(struct gnet_stats_basic)) {
		struct gnet_stats_basic b;

		memcpy(&b, mnl_attr_get_payload(attr), sizeof(b));
		st->bytes = b.bytes;
		st->packets = b.packets;
	} else if (mnl_attr_get_type(attr) == TCA_STATS_QUEUE &&
		   mnl_attr_get_payload_len(attr) >= sizeof(struct gnet_stats_queue)) {
		struct gnet_stats_queue q;

		memcpy(&q, mnl_attr_get_payload(attr), sizeof(q));
		st->drops = q.drops;
		st->backlog = q.backlog;
		st->qlen = q.qlen;
	}
	return MNL_CB_OK;
}

static int qdisc_attr_cb(const struct nlattr *attr, void *data)
{
	struct impair_qdisc_stats *st = data;

	if (mnl_attr_get_type(attr) == TCA_KIND && !mnl_attr_validate(attr, MNL_TYPE_STRING))
		snprintf(st->kind, sizeof(st->kind), "%s", mnl_attr_get_str(attr));
	else if (mnl_attr_get_type(attr) == TCA_STATS2)
		mnl_attr_parse_nested(attr, qdisc_stats2_cb, st);
	return MNL_CB_OK;
}

static int qdisc_cb(const struct nlmsghdr *nlh, void *data)
{
	struct qdisc_dump *d = data;
	const struct tcmsg *tcm;

	if (nlh->nlmsg_type != RTM_NEWQDISC || nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*tcm)))
		return MNL_CB_OK;
	tcm = mnl_nlmsg_get_payload(nlh);
	if ((unsigned int)tcm->tcm_ifindex != d->ifindex || tcm->tcm_parent != TC_H_ROOT ||
	    d->found)
		return MNL_CB_OK;
	d->found = true;
	mnl_attr_parse(nlh, sizeof(*tcm), qdisc_attr_cb, d->st);
	return MNL_CB_OK;
}

int impair_root_qdisc_stats(unsigned int ifindex, struct impair_qdisc_stats *st)
{
	struct qdisc_dump d = { .ifindex = ifindex, .st = st };

	memset(st, 0, sizeof(*st));
	return tc_dump(RTM_GETQDISC, ifindex, 0, qdisc_cb, &d);
}

/* --- reading ---------------------------------------------------------------- */

static int sum_flows(const struct impair_handle *h, int ncpus, struct impair_snapshot *s)
{
	struct xrxe_impair_flow_key key, next, *prev = NULL;
	struct xrxe_impair_flow *percpu;
	size_t cap = 0;
	int err = 0;

	percpu = calloc((size_t)ncpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	while (!bpf_map_get_next_key(h->flows_fd, prev, &next)) {
		struct impair_flow_sample *f;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(h->flows_fd, &key, percpu))
			continue; /* deleted meanwhile */
		if (s->nflows == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct impair_flow_sample *grown = realloc(s->flows, ncap * sizeof(*grown));

			if (!grown) {
				err = -ENOMEM;
				break;
			}
			s->flows = grown;
			cap = ncap;
		}
		f = &s->flows[s->nflows++];
		memset(f, 0, sizeof(*f));
		f->key = key;
		for (int c = 0; c < ncpus; c++) {
			f->val.packets += percpu[c].packets;
			f->val.bytes += percpu[c].bytes;
			f->val.marked += percpu[c].marked;
		}
	}
	free(percpu);
	return err;
}

int impair_read(const struct impair_handle *h, bool with_flows, struct impair_snapshot *s)
{
	struct xrxe_impair_stat *percpu;
	struct xrxe_impair_queue q;
	int ncpus, err = 0;
	__u32 key = 0;

	memset(s, 0, sizeof(*s));
	if (bpf_map_lookup_elem(h->cfg_fd, &key, &s->cfg))
		return -errno;
	/* BPF_F_LOCK: a consistent copy, taken under the program's own lock. */
	if (bpf_map_lookup_elem_flags(h->queue_fd, &key, &q, BPF_F_LOCK))
		return -errno;
	s->backlog = q.backlog;
	s->max_backlog = q.max_backlog;
	s->last_ns = q.last_ns;

	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 0)
		return ncpus;
	percpu = calloc((size_t)ncpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	for (key = 0; key < XRXE_IMPAIR_COUNTER_COUNT; key++) {
		if (bpf_map_lookup_elem(h->stats_fd, &key, percpu)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpus; c++) {
			s->counters[key].packets += percpu[c].packets;
			s->counters[key].bytes += percpu[c].bytes;
		}
	}
	free(percpu);
	if (!err && with_flows)
		err = sum_flows(h, ncpus, s);
	if (err)
		impair_snapshot_free(s);
	return err;
}

void impair_snapshot_free(struct impair_snapshot *s)
{
	free(s->flows);
	s->flows = NULL;
	s->nflows = 0;
}

int impair_reset(const struct impair_handle *h)
{
	struct xrxe_impair_flow_key key;
	struct xrxe_impair_queue q = { 0 };
	void *zeros;
	int ncpus;
	__u32 k = 0;

	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 0)
		return ncpus;
	zeros = calloc((size_t)ncpus, sizeof(struct xrxe_impair_stat));
	if (!zeros)
		return -ENOMEM;
	for (k = 0; k < XRXE_IMPAIR_COUNTER_COUNT; k++) {
		if (bpf_map_update_elem(h->stats_fd, &k, zeros, BPF_ANY)) {
			int err = -errno;

			free(zeros);
			return err;
		}
	}
	free(zeros);
	/* Delete flows one at a time: get_next_key(NULL) is always a live one. */
	while (!bpf_map_get_next_key(h->flows_fd, NULL, &key))
		if (bpf_map_delete_elem(h->flows_fd, &key) && errno != ENOENT)
			return -errno;
	/* An empty phantom queue too, so that each run starts from an idle
	 * link: written whole under the program's lock. last_ns 0 makes the
	 * next packet see a long idle time, which leaves the queue empty. */
	k = 0;
	if (bpf_map_update_elem(h->queue_fd, &k, &q, BPF_F_LOCK))
		return -errno;
	return 0;
}
