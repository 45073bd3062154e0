// SPDX-License-Identifier: MIT
/*
 * The option table of xrxe and xrxed (options.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/options.h"
#include "daemon/quota.h"

const struct xrxe_opt_def xrxe_opt_defs[XRXE_OPT_COUNT] = {
	[XRXE_OPT_MODE] = {
		"mode", 'm', "native|skb",
		"        XDP attach mode. native: the driver runs the program\n"
		"        (XDP_FLAGS_DRV_MODE). skb: generic XDP, after the kernel has built\n"
		"        an skb; works on any interface, slower. drv and generic are\n"
		"        accepted as synonyms. Given, exactly that mode or an error.\n",
		NULL,
	},
	[XRXE_OPT_PORT] = {
		"port", 'p', "PORT",
		"        steer UDP destination port PORT instead of 4791.\n",
		NULL,
	},
	[XRXE_OPT_PRIORITY] = {
		"priority", 'P', "N",
		"        libxdp run priority 1-1000 instead of 50 (lower runs first).\n",
		NULL,
	},
	[XRXE_OPT_QUEUES] = {
		"queues", 'q', "N",
		"        bind the first N RX queues only (default all).\n",
		NULL,
	},
	[XRXE_OPT_KEEP_XDP] = {
		"keep-xdp", 'k', NULL,
		"        leave the steering program attached on exit (it is then not\n"
		"        marked as the daemon's).\n",
		NULL,
	},
	[XRXE_OPT_CC] = {
		"cc", 'c', "NAME=VALUE",
		"        congestion control (DCQCN) parameter, repeatable; names, units\n"
		"        and defaults: 'xrxe cc show IFACE' (e.g. --cc\n"
		"        np_min_time_between_cnps=2, --cc enabled=0). 'xrxe cc set'\n"
		"        changes them while the daemon runs.\n",
		NULL,
	},
	[XRXE_OPT_REXMIT] = {
		"rexmit", 0, "adaptive|fixed",
		"        RC retransmission. adaptive (default): a QP that recovers from a\n"
		"        loss (after a NAK or a timeout), or has at most 16 PSNs\n"
		"        outstanding, resends after a few silent round trips (srtt + 4\n"
		"        rttvar, at least 2 ms, doubling) instead of waiting out the Local\n"
		"        ACK Timeout: a resent packet lost again, or a lost last packet,\n"
		"        draws no NAK. These retries leave retry_cnt alone. fixed: the\n"
		"        Local ACK Timeout only, as rxe.\n",
		NULL,
	},
	[XRXE_OPT_SELECTIVE_REPEAT] = {
		"selective-repeat", 0, "off|cm|on",
		"        RC selective repeat between xrxe peers (docs/selective-repeat.md):\n"
		"        the receiver keeps packets past a loss, the sender resends only\n"
		"        what is missing. cm (default): agreed per connection through\n"
		"        ECE in the CM's REQ/REP, go-back-N with any other peer. on: also\n"
		"        for QPs connected without the CM (perftest without -R), whose\n"
		"        peer must then be xrxed with --selective-repeat on too. off:\n"
		"        never.\n",
		NULL,
	},
	[XRXE_OPT_LIMIT] = {
		"limit", 'l', "NAME=VALUE",
		"        per-user quota, repeatable: what each ordinary user (uid other\n"
		"        than 0) may hold in this daemon. Ordinary users together get at\n"
		"        most three quarters of each device table, descriptor and mapping\n"
		"        budget; root is exempt and keeps the rest. A request beyond the\n"
		"        user's limit fails with EDQUOT, beyond the shared pool with EAGAIN\n"
		"        (counted under 'quota' in 'xrxe stats'). Byte values may end in\n"
		"        k, M or G. NAME and default:\n",
		xrxe_quota_help,
	},
	[XRXE_OPT_RT_PRIORITY] = {
		"rt-priority", 'r', "PRIO",
		"        run under SCHED_FIFO at PRIO (1-99) so that no normal task delays\n"
		"        a frame, an ACK or a CNP: for hosts whose cores busy-polling\n"
		"        applications share with xrxed. It then naps instead of spinning\n"
		"        while its QPs only wait for the network; kernel RT throttling\n"
		"        (kernel.sched_rt_runtime_us) still bounds it. Needs CAP_SYS_NICE\n"
		"        or RLIMIT_RTPRIO.\n",
		NULL,
	},
	[XRXE_OPT_JSON] = {
		"json", 'j', NULL,
		"        JSON instead of text:\n",
		NULL,
	},
	[XRXE_OPT_VERBOSE] = {
		"verbose", 'v', NULL,
		"        log at debug level (same as XRXE_LOG=debug).\n",
		NULL,
	},
	[XRXE_OPT_HELP] = {
		"help", 'h', NULL,
		"        show this page.\n",
		NULL,
	},
};

void xrxe_opt_parser_init(struct xrxe_opt_parser *p, const enum xrxe_opt_id *ids)
{
	size_t n = 0, s = 0;

	memset(p, 0, sizeof(*p));
	for (; *ids < XRXE_OPT_COUNT && n < XRXE_OPT_COUNT; ids++, n++) {
		const struct xrxe_opt_def *d = &xrxe_opt_defs[*ids];

		p->longopts[n] = (struct option){
			.name = d->name,
			.has_arg = d->arg ? required_argument : no_argument,
			.val = d->letter ? d->letter : XRXE_OPT_VAL(*ids),
		};
		if (d->letter) {
			p->shortopts[s++] = d->letter;
			if (d->arg)
				p->shortopts[s++] = ':';
		}
	}
}

int xrxe_opt_id_of(int c)
{
	if (c >= XRXE_OPT_VAL(0) && c < XRXE_OPT_VAL(XRXE_OPT_COUNT))
		return c - XRXE_OPT_VAL(0);
	for (int i = 0; i < XRXE_OPT_COUNT; i++)
		if (xrxe_opt_defs[i].letter && xrxe_opt_defs[i].letter == c)
			return i;
	return -1;
}

void xrxe_opt_print_help(FILE *out, const enum xrxe_opt_id *ids, const char *const *extra)
{
	for (; *ids < XRXE_OPT_COUNT; ids++) {
		const struct xrxe_opt_def *d = &xrxe_opt_defs[*ids];

		fputs("    ", out);
		if (d->letter)
			fprintf(out, "-%c, ", d->letter);
		fprintf(out, "--%s%s%s\n", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
		fputs(d->help, out);
		if (d->help_more)
			d->help_more(out);
		if (extra && extra[*ids])
			fputs(extra[*ids], out);
	}
}

int xrxe_opt_parse_mode(const char *arg, enum xrxe_steer_mode *mode, char *err, size_t len)
{
	/* as xdp-loader names them, and its synonyms */
	if (!strcmp(arg, "native") || !strcmp(arg, "drv")) {
		*mode = XRXE_STEER_MODE_NATIVE;
		return 0;
	}
	if (!strcmp(arg, "skb") || !strcmp(arg, "generic")) {
		*mode = XRXE_STEER_MODE_SKB;
		return 0;
	}
	snprintf(err, len, "--mode: '%s' is not native or skb (or drv, generic)", arg);
	return -EINVAL;
}

int xrxe_opt_parse_uint(enum xrxe_opt_id id, const char *arg, unsigned long min,
			unsigned long max, unsigned long *out, char *err, size_t len)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || v < min || v > max) {
		snprintf(err, len, "--%s: '%s' is not a number from %lu to %lu",
			 xrxe_opt_defs[id].name, arg, min, max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}
