// SPDX-License-Identifier: MIT
/*
 * The congestion-control parameter table: NVIDIA/mlx5 debugfs names
 * (drivers/infiniband/hw/mlx5/cong.c), units and defaults from
 * docs/facts/dcqcn.md §1.6, plus xrxe's own switch and data marking. One table
 * serves `xrxed --cc name=value`, the XRXE_CTRL_CC op and `xrxe cc`, so the
 * three can never disagree about a name or a range.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"

#define F(field) offsetof(struct xrxe_tp_cc_params, field)

static const struct xrxe_cc_param_desc table[] = {
	{ "enabled", "bool", "congestion control on (ECN-capable data, CNPs, pacing)", F(enabled), 0, 1 },
	{ "rp_clamp_tgt_rate", "bool", "target rate = current rate on every decrease", F(rp_clamp_tgt_rate), 0, 1 },
	{ "rp_clamp_tgt_rate_ati", "bool", "... also when the last increase was timer-driven", F(rp_clamp_tgt_rate_ati), 0, 1 },
	{ "rp_time_reset", "us", "rate-increase timer", F(rp_time_reset), 1, 1000000 },
	{ "rp_byte_reset", "bytes", "rate-increase byte counter", F(rp_byte_reset), 1, 0xffffffffu },
	{ "rp_threshold", "count", "F: increase events before additive, then hyper increase", F(rp_threshold), 1, 31 },
	{ "rp_ai_rate", "Mb/s", "additive increase step", F(rp_ai_rate), 1, 1000000 },
	{ "rp_hai_rate", "Mb/s", "hyper increase step", F(rp_hai_rate), 1, 1000000 },
	{ "rp_max_rate", "Mb/s", "rate ceiling (0 = line rate)", F(rp_max_rate), 0, 1000000 },
	{ "rp_min_dec_fac", "%", "a decrease keeps at least this share of the rate", F(rp_min_dec_fac), 1, 100 },
	{ "rp_min_rate", "Mb/s", "rate floor", F(rp_min_rate), 1, 1000000 },
	{ "rp_rate_to_set_on_first_cnp", "Mb/s", "rate on the first CNP (0 = current rate)", F(rp_rate_to_set_on_first_cnp), 0, 1000000 },
	{ "rp_dce_tcp_g", "1/1024", "alpha gain g: alpha = g*alpha/1024 (+ (1024-g) with a CNP)", F(rp_dce_tcp_g), 0, 1023 },
	{ "rp_dce_tcp_rtt", "us", "alpha update period", F(rp_dce_tcp_rtt), 1, 1000000 },
	{ "rp_rate_reduce_monitor_period", "us", "at most one rate decrease per period", F(rp_rate_reduce_monitor_period), 0, 1000000 },
	{ "rp_initial_alpha_value", "1/1024", "alpha at the first CNP (1023 ~ 1.0)", F(rp_initial_alpha_value), 0, 1023 },
	{ "rp_gd", "log2", "decrease: rate -= rate*alpha/2^rp_gd", F(rp_gd), 1, 15 },
	{ "np_min_time_between_cnps", "us", "per QP, CNPs at most this often (0 = per CE packet)", F(np_min_time_between_cnps), 0, 1000000 },
	{ "np_cnp_dscp", "dscp", "DSCP of CNPs", F(np_cnp_dscp), 0, 63 },
	{ "np_cnp_prio_mode", "bool", "1: CNP PCP from the marked packet, 0: np_cnp_prio", F(np_cnp_prio_mode), 0, 1 },
	{ "np_cnp_prio", "pcp", "802.1p priority of CNPs (VLAN frames; setting it sets np_cnp_prio_mode=0)", F(np_cnp_prio), 0, 7 },
	{ "data_dscp", "dscp", "DSCP of all other packets (app = the application's traffic class)", F(data_dscp), 0, XRXE_CC_DSCP_APP },
	{ "data_ecn", "ecn", "ECN of data while enabled: 0 Not-ECT, 1 ECT(1), 2 ECT(0)", F(data_ecn), 0, 2 },
	{ "line_rate_pacing", "bool", "the port paces all QPs together at the ceiling (rp_max_rate): a port of that speed", F(line_rate_pacing), 0, 1 },
};
#define NPARAMS (sizeof(table) / sizeof(table[0]))

void xrxe_tp_cc_defaults(struct xrxe_tp_cc_params *p)
{
	*p = (struct xrxe_tp_cc_params){
		.enabled = 1,
		/* docs/facts/dcqcn.md §1.6, NVIDIA defaults */
		.rp_clamp_tgt_rate = 0,
		.rp_clamp_tgt_rate_ati = 1,
		.rp_time_reset = 300,
		.rp_byte_reset = 32767,
		.rp_threshold = 1,
		.rp_ai_rate = 5,
		.rp_hai_rate = 50,
		.rp_max_rate = 0,
		.rp_min_dec_fac = 50,
		.rp_min_rate = 1,
		.rp_rate_to_set_on_first_cnp = 0,
		.rp_dce_tcp_g = 1019,
		.rp_dce_tcp_rtt = 1,
		.rp_rate_reduce_monitor_period = 4,
		.rp_initial_alpha_value = 1023,
		.rp_gd = 11,
		/* 4 us: the default the public tuning table starts from
		 * ("4 -> 0~2 us", docs/facts/dcqcn.md §1.6 [S14]); one ConnectX
		 * dump showed 2 [S8]. */
		.np_min_time_between_cnps = 4,
		.np_cnp_dscp = 48,
		.np_cnp_prio_mode = 1,
		.np_cnp_prio = 6,
		.data_dscp = XRXE_CC_DSCP_APP,
		.data_ecn = 2, /* ECT(0): only ECN-capable packets get CE (docs/facts/dcqcn.md §2.2) */
		.line_rate_pacing = 0, /* a real port serialises at its speed by itself */
	};
}

const struct xrxe_cc_param_desc *xrxe_cc_param_table(unsigned *n)
{
	*n = NPARAMS;
	return table;
}

const struct xrxe_cc_param_desc *xrxe_cc_param_find(const char *name)
{
	for (unsigned i = 0; i < NPARAMS; i++)
		if (!strcmp(table[i].name, name))
			return &table[i];
	return NULL;
}

static uint32_t *field(struct xrxe_tp_cc_params *p, const struct xrxe_cc_param_desc *d)
{
	return (uint32_t *)((char *)p + d->offset);
}

static uint32_t cfield(const struct xrxe_tp_cc_params *p, const struct xrxe_cc_param_desc *d)
{
	return *(const uint32_t *)((const char *)p + d->offset);
}

int xrxe_cc_param_parse(struct xrxe_tp_cc_params *p, const char *assignment, char *err,
			size_t errlen)
{
	const struct xrxe_cc_param_desc *d;
	const char *eq = strchr(assignment, '=');
	char name[64], *end;
	unsigned long long v;
	size_t nlen;

	if (!eq || eq == assignment) {
		snprintf(err, errlen, "'%s' is not name=value", assignment);
		return -EINVAL;
	}
	nlen = (size_t)(eq - assignment);
	if (nlen >= sizeof(name)) {
		snprintf(err, errlen, "unknown parameter '%.*s'", (int)nlen, assignment);
		return -EINVAL;
	}
	memcpy(name, assignment, nlen);
	name[nlen] = 0;
	d = xrxe_cc_param_find(name);
	if (!d) {
		snprintf(err, errlen, "unknown parameter '%s'", name);
		return -EINVAL;
	}
	eq++;
	if (d->offset == F(data_dscp) && !strcmp(eq, "app")) {
		p->data_dscp = XRXE_CC_DSCP_APP;
		return 0;
	}
	if (!strcmp(d->unit, "bool") && (!strcmp(eq, "true") || !strcmp(eq, "false"))) {
		*field(p, d) = eq[0] == 't';
		return 0;
	}
	errno = 0;
	v = strtoull(eq, &end, 0);
	if (!*eq || *end || errno || eq[0] == '-' || v < d->min || v > d->max) {
		snprintf(err, errlen, "%s: '%s' is not a number from %u to %u%s", name, eq, d->min,
			 d->max, d->offset == F(data_dscp) ? " or 'app'" : "");
		return -EINVAL;
	}
	*field(p, d) = (uint32_t)v;
	/* mlx5 cong.c: writing np_cnp_prio selects it (cnp_prio_mode = 0) */
	if (d->offset == F(np_cnp_prio))
		p->np_cnp_prio_mode = 0;
	return 0;
}

int xrxe_cc_param_check(const struct xrxe_tp_cc_params *p, char *err, size_t errlen)
{
	for (unsigned i = 0; i < NPARAMS; i++) {
		uint32_t v = cfield(p, &table[i]);

		if (v < table[i].min || v > table[i].max) {
			snprintf(err, errlen, "%s: %u is not from %u to %u", table[i].name, v,
				 table[i].min, table[i].max);
			return -EINVAL;
		}
	}
	return 0;
}

void xrxe_cc_param_format(const struct xrxe_tp_cc_params *p, FILE *out)
{
	for (unsigned i = 0; i < NPARAMS; i++) {
		uint32_t v = cfield(p, &table[i]);

		if (table[i].offset == F(data_dscp) && v == XRXE_CC_DSCP_APP)
			fprintf(out, "%s app\n", table[i].name);
		else
			fprintf(out, "%s %u\n", table[i].name, v);
	}
}
