// SPDX-License-Identifier: MIT
/*
 * xrxed's report for XRXE_CTRL_STATS (`xrxe stats`, `xrxe qp`).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ctrl.h"
#include "daemon/devpage.h"
#include "daemon/evsrc.h"
#include "daemon/netdev.h"
#include "daemon/netlink.h"
#include "daemon/steer.h"
#include "daemon/xsk_io.h"
#include "transport/transport.h"
#include "util/log.h"
#include "xrxe/wire.h"

#include "daemon/xrxed.h"
#include "util/log.h"

/* --- stats (XRXE_CTRL_STATS) ------------------------------------------------ */

/* A tiny emitter for both formats: text "section.name value" lines, or one
 * JSON object of sections. */
struct emit {
	FILE *out;
	bool json;
	bool first_section, first_key;
	const char *section;
};

static void emit_section(struct emit *e, const char *name)
{
	if (e->json) {
		if (!e->first_key)
			fputs("}", e->out);
		fprintf(e->out, "%s\"%s\":{", e->first_section ? "" : ",", name);
	}
	e->first_section = false;
	e->first_key = true;
	e->section = name;
}

static void emit_u64(struct emit *e, const char *name, uint64_t v)
{
	if (e->json)
		fprintf(e->out, "%s\"%s\":%" PRIu64, e->first_key ? "" : ",", name, v);
	else
		fprintf(e->out, "%s.%s %" PRIu64 "\n", e->section, name, v);
	e->first_key = false;
}

static void emit_str(struct emit *e, const char *name, const char *v)
{
	if (e->json)
		fprintf(e->out, "%s\"%s\":\"%s\"", e->first_key ? "" : ",", name, v);
	else
		fprintf(e->out, "%s.%s %s\n", e->section, name, v);
	e->first_key = false;
}

/* Counter tables ({name, offset, size}, rxe_hw_counters.c's idea): one list
 * per struct drives the report, and the size check below fails the build
 * when a field of the struct is missing from its list or listed twice. An
 * array field is one entry whose elements are named by a function (NULL:
 * an element not shown, e.g. an opcode the table does not know, which
 * nothing can count). */
struct counter {
	const char *name;
	size_t off;
	uint8_t size;  /* of one element */
	uint16_t n;    /* elements: 1 for a scalar */
	const char *(*elem_name)(unsigned i, char *buf, size_t len);
};
#define COUNTER(type, f) { #f, offsetof(type, f), sizeof(((type *)0)->f), 1, NULL },
#define COUNTER_ARRAY(type, f, namer)                                                          \
	{ #f, offsetof(type, f), sizeof(((type *)0)->f[0]),                                     \
	  sizeof(((type *)0)->f) / sizeof(((type *)0)->f[0]), namer },
#define COUNTER_SIZE(type, f) +sizeof(((type *)0)->f)
#define COUNTER_ARRAY_SIZE(type, f, namer) +sizeof(((type *)0)->f)

#define TP_STATS(X, T)                                                                         \
	X(T, rx_packets) X(T, tx_packets) X(T, rx_drop_no_qp) X(T, rx_drop_bad_state)          \
	X(T, rx_drop_bad_pkey) X(T, rx_drop_bad_qkey) X(T, rx_drop_bad_opcode)                 \
	X(T, rx_drop_bad_av) X(T, rx_drop_no_mcast) X(T, gsi_rx) X(T, gsi_tx)                  \
	X(T, rx_drop_gsi) X(T, rx_drop_ud_no_wqe) X(T, rx_drop_ud_too_long) X(T, tx_no_buffer) X(T, qps) X(T, cqs) X(T, mrs) X(T, pds)           \
	X(T, ahs) X(T, srqs) X(T, mcast_grps) X(T, mws) X(T, cnp_sent) X(T, cnp_rcvd)          \
	X(T, ecn_ce_qp) X(T, cnp_rcvd_no_qp) X(T, cnp_suppressed) X(T, paced)                  \
	X(T, odp_read_bytes) X(T, odp_write_bytes) X(T, odp_faults) X(T, raw_tx) X(T, raw_rx)  \
	X(T, raw_rx_no_flow) X(T, raw_rx_drop) X(T, raw_tx_bad_len) X(T, raw_flows)     \
	X(T, tm_rndv) X(T, tm_rndv_bad)
static const struct counter tp_counters[] = { TP_STATS(COUNTER, struct xrxe_tp_stats) };
_Static_assert(0 TP_STATS(COUNTER_SIZE, struct xrxe_tp_stats) == sizeof(struct xrxe_tp_stats),
	       "tp_counters must list every field of struct xrxe_tp_stats once");

#define CTRL_STATS(X, T)                                                                       \
	X(T, conns) X(T, accepted) X(T, closed) X(T, refused) X(T, hello_timeouts)             \
	X(T, accept_paused) X(T, requests) X(T, failed_requests) X(T, bad_requests)            \
	X(T, cq_events) X(T, cq_event_drops) X(T, async_events) X(T, async_drops) X(T, pds)    \
	X(T, mrs) X(T, cqs) X(T, qps) X(T, ahs) X(T, channels) X(T, srqs)                    \
	X(T, doorbells) X(T, doorbell_bad) X(T, doorbell_overflows)
static const struct counter ctrl_counters[] = { CTRL_STATS(COUNTER, struct xrxe_ctrl_stats) };
_Static_assert(0 CTRL_STATS(COUNTER_SIZE, struct xrxe_ctrl_stats) ==
		       sizeof(struct xrxe_ctrl_stats),
	       "ctrl_counters must list every field of struct xrxe_ctrl_stats once");

/* The daemon's own counters (xrxed.h struct daemon_counters). */
static const char *rx_opcode_name(unsigned i, char *buf, size_t len)
{
	const struct xrxe_opcode_info *op = xrxe_opcode_info((uint8_t)i);

	if (!op)
		return NULL;
	snprintf(buf, len, "rx_op_%s", op->name);
	for (char *p = buf; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	return buf;
}

static const char *rx_error_name(unsigned i, char *buf, size_t len)
{
	if (i == XRXE_PARSE_OK)
		return NULL; /* rx_ok */
	snprintf(buf, len, "rx_drop_%s", xrxe_parse_strerror((enum xrxe_parse_error)i));
	for (char *p = buf; *p; p++)
		if (*p == '-')
			*p = '_';
	return buf;
}

static const char *rx_lag_name(unsigned i, char *buf, size_t len)
{
	static const char *const names[RX_LAG_BUCKETS] = {
		"rx_lag_le_10us", "rx_lag_le_100us", "rx_lag_le_1ms", "rx_lag_le_10ms",
		"rx_lag_gt_10ms",
	};

	(void)buf, (void)len;
	return i < RX_LAG_BUCKETS ? names[i] : NULL;
}

#define DAEMON_STATS(X, A, T)                                                                  \
	X(T, rx_ok) A(T, rx_error, rx_error_name) X(T, tx_frames) X(T, tx_ring_full)           \
	X(T, tx_bad) X(T, loop_frames) X(T, loop_drops) X(T, loop_parse_errors) X(T, sleeps)   \
	X(T, wakeups_doorbell_race) X(T, sq_wait_spins) X(T, sq_wait_sleeps) X(T, naps)        \
	X(T, shared_cpu_seen) X(T, idle_yields) X(T, idle_yields_ran) X(T, idle_yields_slow)   \
	X(T, ecn_ce_rx)                                                                        \
	A(T, rx_lag, rx_lag_name) X(T, rx_lag_max_ns) A(T, rx_by_opcode, rx_opcode_name)
static const struct counter daemon_counters[] = {
	DAEMON_STATS(COUNTER, COUNTER_ARRAY, struct daemon_counters)
};
_Static_assert(0 DAEMON_STATS(COUNTER_SIZE, COUNTER_ARRAY_SIZE, struct daemon_counters) ==
		       sizeof(struct daemon_counters),
	       "daemon_counters must list every field of struct daemon_counters once");

/* One AF_XDP socket's counters, ours and the kernel's (xsk_io.h). */
#define XSK_STATS(X, T)                                                                        \
	X(T, rx_frames) X(T, rx_bytes) X(T, rx_stamped) X(T, rx_dropped_too_many_frags)        \
	X(T, rx_bad_desc) X(T, rx_bad_release) X(T, tx_frames) X(T, tx_bytes)                  \
	X(T, tx_no_frames) X(T, tx_bad_frame) X(T, tx_kicks) X(T, tx_kick_errors)              \
	X(T, comp_bad_addr) X(T, k_rx_dropped) X(T, k_rx_invalid_descs)                        \
	X(T, k_tx_invalid_descs) X(T, k_rx_ring_full) X(T, k_rx_fill_ring_empty)               \
	X(T, k_tx_ring_empty)
static const struct counter xsk_counters[] = { XSK_STATS(COUNTER, struct xrxe_xsk_stats) };
_Static_assert(0 XSK_STATS(COUNTER_SIZE, struct xrxe_xsk_stats) == sizeof(struct xrxe_xsk_stats),
	       "xsk_counters must list every field of struct xrxe_xsk_stats once");

static uint64_t counter_value(const uint8_t *p, uint8_t size)
{
	uint64_t v;

	if (size == 8) {
		memcpy(&v, p, 8);
	} else {
		uint32_t v32;

		memcpy(&v32, p, 4);
		v = v32;
	}
	return v;
}

static void emit_table(struct emit *e, const struct counter *t, size_t n, const void *base)
{
	char name[64];

	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = (const uint8_t *)base + t[i].off;

		if (!t[i].elem_name) {
			emit_u64(e, t[i].name, counter_value(p, t[i].size));
			continue;
		}
		for (unsigned k = 0; k < t[i].n; k++) {
			const char *en = t[i].elem_name(k, name, sizeof(name));

			if (en)
				emit_u64(e, en, counter_value(p + (size_t)k * t[i].size, t[i].size));
		}
	}
}

static const char *qp_type_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
		return "RC";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_UD:
		return "UD";
	case IBV_QPT_XRC_SEND:
		return "XRC_SEND"; /* docs/xrc.md */
	case IBV_QPT_XRC_RECV:
		return "XRC_RECV";
	case IBV_QPT_RAW_PACKET:
		return "RAW_PACKET"; /* also WQs and RSS QPs (ctrl_raw.c) */
	default:
		return "?";
	}
}

static const char *qp_state_name(enum ibv_qp_state s)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS",	   [IBV_QPS_SQD] = "SQD",   [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) && names[s] ? names[s] : "?";
}

struct qp_emit {
	FILE *out;
	bool json;
	unsigned n;
	const struct xrxe_ctrl *ctrl;
	uid_t uid; /* who asked: an ordinary user sees its own QPs only */
};

static int emit_qp(void *arg, const struct xrxe_tp_qp_info *q)
{
	struct qp_emit *e = arg;

	if (!xrxe_ctrl_qp_visible(e->ctrl, q->qpn, e->uid))
		return 0;

	const char *fmt_json =
		"%s{\"qpn\":%u,\"type\":\"%s\",\"state\":\"%s\",\"dest_qpn\":%u,\"sq_psn\":%u,"
		"\"acked_psn\":%u,\"rq_psn\":%u,\"tx_packets\":%" PRIu64 ",\"rx_packets\":%" PRIu64
		",\"tx_bytes\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"retransmits\":%" PRIu64
		",\"timeouts\":%" PRIu64 ",\"fast_retransmits\":%" PRIu64 ",\"srtt_us\":%.1f"
		",\"rnr_naks_rcvd\":%" PRIu64 ",\"rnr_naks_sent\":%" PRIu64
		",\"seq_naks_rcvd\":%" PRIu64 ",\"seq_naks_sent\":%" PRIu64 ",\"duplicates\":%" PRIu64;
	const char *fmt_text =
		"%s%-8u %-4s %-5s %8u %8u %8u %8u %10" PRIu64 " %10" PRIu64 " %12" PRIu64
		" %12" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %8.1f %5" PRIu64 "/%-5" PRIu64
		" %5" PRIu64 "/%-5" PRIu64 " %6" PRIu64;

	fprintf(e->out, e->json ? fmt_json : fmt_text, e->json && e->n ? "," : "", q->qpn,
		qp_type_name(q->qp_type), qp_state_name(q->state), q->dest_qpn, q->sq_psn,
		q->acked_psn, q->rq_psn, q->tx_packets, q->rx_packets, q->tx_bytes, q->rx_bytes,
		q->retransmits, q->timeouts, q->fast_retransmits, q->srtt_ns / 1e3, q->rnr_naks_rcvd,
		q->rnr_naks_sent, q->seq_naks_rcvd, q->seq_naks_sent, q->duplicates);
	/* loss recovery (src/transport/rto.c) */
	if (e->json)
		fprintf(e->out,
			",\"resent_packets\":%" PRIu64 ",\"out_of_sequence\":%" PRIu64
			",\"recoveries\":%" PRIu64 ",\"probes\":%" PRIu64 ",\"cwnd\":%u"
			",\"selective_repeat\":%s,\"ooo_held\":%" PRIu64,
			q->resent_packets, q->out_of_sequence, q->recoveries, q->probes,
			q->cwnd, q->selective_repeat ? "true" : "false", q->ooo_held);
	/* DCQCN: rates in Mb/s, alpha as a fraction (alpha_fp: the mlx5
	 * 10-bit fixed point it is kept in) */
	if (e->json)
		fprintf(e->out,
			",\"cc\":{\"rate_mbps\":%.3f,\"target_mbps\":%.3f,\"min_rate_mbps\":%.3f,"
			"\"alpha\":%.4f,"
			"\"alpha_fp\":%u,\"limited\":%s,\"cnps_sent\":%" PRIu64
			",\"cnps_handled\":%" PRIu64 ",\"ecn_marked\":%" PRIu64 "}}",
			q->cc_rate_bps / 1e6, q->cc_target_bps / 1e6, q->cc_rate_min_bps / 1e6,
			q->cc_alpha / 1024.0,
			q->cc_alpha, q->cc_limited ? "true" : "false", q->cnps_sent,
			q->cnps_handled, q->ecn_marked);
	else
		fprintf(e->out, " %10.1f%s %10.1f %6.4f %6" PRIu64 "/%-6" PRIu64 " %7" PRIu64 "\n",
			q->cc_rate_bps / 1e6, q->cc_limited ? "*" : " ", q->cc_target_bps / 1e6,
			q->cc_alpha / 1024.0, q->cnps_sent, q->cnps_handled, q->ecn_marked);
	e->n++;
	return 0;
}

static void stats_qps(struct daemon *d, FILE *out, bool json, uid_t uid)
{
	struct qp_emit e = { .out = out, .json = json, .ctrl = d->ctrl, .uid = uid };

	if (json)
		fprintf(out, "{\"interface\":\"%s\",\"qps\":[", d->opts.ifname);
	else
		fprintf(out, "%-8s %-4s %-5s %8s %8s %8s %8s %10s %10s %12s %12s %7s %7s %7s %8s"
			     " %11s %11s %6s %11s %10s %6s %13s %7s\n",
			"qpn", "type", "state", "dest_qpn", "sq_psn", "acked", "rq_psn", "tx_pkts",
			"rx_pkts", "tx_bytes", "rx_bytes", "rexmit", "timeout", "fast", "srtt_us",
			"rnr rcv/snt", "seq rcv/snt", "dups", "rate Mb/s", "target", "alpha",
			"cnp snt/hdl", "ecn_ce");
	xrxe_tp_qp_foreach(d->tp, emit_qp, &e);
	if (json)
		fputs("]}\n", out);
}

void xrxe_daemon_stats(void *user, FILE *out, unsigned flags, uid_t uid)
{
	struct daemon *d = user;
	bool json = flags & XRXE_STATS_F_JSON;
	struct emit e = { .out = out, .json = json, .first_section = true, .first_key = true };
	struct xrxe_steer_stat steer[XRXE_STEER_COUNTER_COUNT];
	struct xrxe_tp_stats tps;
	struct xrxe_ctrl_stats cs;
	struct xrxe_nl_stats ns;
	char name[64];

	if (flags & XRXE_STATS_F_QP) {
		stats_qps(d, out, json, uid);
		return;
	}
	if (json)
		fputs("{", out);
	emit_section(&e, "port");
	emit_str(&e, "interface", d->opts.ifname);
	emit_str(&e, "state", xrxe_devpage_port_active(d->dp) ? "ACTIVE" : "DOWN");
	emit_u64(&e, "active_mtu",
		 xrxe_ib_mtu_bytes(xrxe_devpage_page(d->dp)->port_attr.active_mtu));
	emit_u64(&e, "gids", xrxe_devpage_gid_count(d->dp));
	/* The fallbacks a kernel or driver forced (each also logged once). */
	emit_str(&e, "xdp_mode", xrxe_steer_mode_name(d->opts.mode));
	emit_u64(&e, "xdp_native_refused", d->native_refused);
	emit_u64(&e, "xsk_multi_buffer", d->nxsk && xrxe_xsk_is_multi_buffer(d->xsk[0]));
	emit_u64(&e, "max_path_mtu", d->max_path_mtu);

	if (xrxe_steer_read_stats(&d->maps, steer) == 0) {
		emit_section(&e, "xdp");
		for (int i = 0; i < XRXE_STEER_COUNTER_COUNT; i++) {
			const char *cn = xrxe_steer_counter_name((enum xrxe_steer_counter)i);

			snprintf(name, sizeof(name), "%s_packets", cn);
			emit_u64(&e, name, steer[i].packets);
			snprintf(name, sizeof(name), "%s_bytes", cn);
			emit_u64(&e, name, steer[i].bytes);
		}
	}
	for (unsigned q = 0; q < d->nxsk; q++) {
		struct xrxe_xsk_stats xs;

		xrxe_xsk_get_stats(d->xsk[q], &xs);
		snprintf(name, sizeof(name), "xsk%u", q);
		emit_section(&e, name);
		emit_table(&e, xsk_counters, sizeof(xsk_counters) / sizeof(xsk_counters[0]), &xs);
	}

	emit_section(&e, "daemon");
	emit_table(&e, daemon_counters, sizeof(daemon_counters) / sizeof(daemon_counters[0]),
		   &d->ctr);
	emit_u64(&e, "rt_priority", (uint64_t)d->opts.rt_priority);

	xrxe_tp_get_stats(d->tp, &tps);
	emit_section(&e, "transport");
	emit_table(&e, tp_counters, sizeof(tp_counters) / sizeof(tp_counters[0]), &tps);

	/* congestion control: ecn_ce_rx is the daemon's count of every CE
	 * frame received (the XDP program's ecn_ce counts the same frames);
	 * ecn_ce_qp those that reached a QP */
	struct xrxe_tp_cc_params ccp;

	xrxe_tp_cc_get(d->tp, &ccp);
	emit_section(&e, "cc");
	emit_u64(&e, "enabled", ccp.enabled);
	emit_u64(&e, "line_rate_mbps", xrxe_tp_cc_max_bps(d->tp) / 1000000);
	emit_u64(&e, "cnp_sent", tps.cnp_sent);
	emit_u64(&e, "cnp_rcvd", tps.cnp_rcvd);
	emit_u64(&e, "ecn_ce_rx", d->ctr.ecn_ce_rx);
	emit_u64(&e, "ecn_ce_qp", tps.ecn_ce_qp);
	emit_u64(&e, "cnp_suppressed", tps.cnp_suppressed);
	emit_u64(&e, "cnp_rcvd_no_qp", tps.cnp_rcvd_no_qp);
	emit_u64(&e, "paced", tps.paced);

	xrxe_ctrl_get_stats(d->ctrl, &cs);
	emit_section(&e, "ctrl");
	emit_table(&e, ctrl_counters, sizeof(ctrl_counters) / sizeof(ctrl_counters[0]), &cs);

	/* Per-user quotas (quota.h): the limits, the pool all ordinary users
	 * share, what they and root use now, refusals. */
	if (d->quota) {
		struct xrxe_quota_stat qs;

		emit_section(&e, "limits");
		for (int i = 0; i < XRXE_Q_COUNT; i++) {
			xrxe_quota_get(d->quota, (enum xrxe_quota_res)i, &qs);
			emit_u64(&e, xrxe_quota_name((enum xrxe_quota_res)i), qs.limit);
		}
		emit_section(&e, "quota");
		emit_u64(&e, "users", xrxe_quota_users(d->quota));
		for (int i = 0; i < XRXE_Q_COUNT; i++) {
			const char *qn = xrxe_quota_name((enum xrxe_quota_res)i);

			xrxe_quota_get(d->quota, (enum xrxe_quota_res)i, &qs);
			snprintf(name, sizeof(name), "%s_pool", qn);
			emit_u64(&e, name, qs.pool);
			snprintf(name, sizeof(name), "%s_used", qn);
			emit_u64(&e, name, qs.used);
			snprintf(name, sizeof(name), "%s_root", qn);
			emit_u64(&e, name, qs.root_used);
			snprintf(name, sizeof(name), "%s_refused", qn);
			emit_u64(&e, name, qs.refused);
		}
	}

	xrxe_nl_get_stats(d->nl, &ns);
	emit_section(&e, "netlink");
	emit_u64(&e, "events", ns.events);
	emit_u64(&e, "resyncs", ns.resyncs);
	emit_u64(&e, "resolves", ns.resolves);
	emit_u64(&e, "resolve_again", ns.resolve_again);
	emit_u64(&e, "neigh_probes", ns.neigh_probes);
	if (json)
		fputs("}}\n", out);
}

