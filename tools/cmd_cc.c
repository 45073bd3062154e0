// SPDX-License-Identifier: MIT
/*
 * xrxe cc: show and change the congestion-control (DCQCN) parameters of an
 * interface's daemon over its control socket (abi.h XRXE_CTRL_CC, no HELLO).
 * Names and ranges come from the transport's own table (cc_params.c), so a
 * bad assignment is a usage error here, before the daemon is asked; the
 * daemon checks again (it trusts no client).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "daemon/ctrl_msg.h"
#include "transport/transport.h"

static int cc_call(const char *ifname, unsigned action, const char *text,
		   struct xrxe_ctrl_cc_reply *rep)
{
	static struct xrxe_ctrl_cc req;
	ssize_t n;
	int sock;

	memset(&req, 0, sizeof(req));
	req.hdr = (struct xrxe_ctrl_hdr){ .op = XRXE_CTRL_CC, .flags = (uint16_t)action, .seq = 1 };
	if (text)
		snprintf(req.text, sizeof(req.text), "%s", text);
	sock = xrxe_ctrl_connect(ifname);
	if (sock < 0)
		return sock;
	n = xrxe_ctrl_call(sock, &req, sizeof(req), NULL, 0, rep, sizeof(*rep), NULL, NULL);
	close(sock);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(rep->hdr))
		return -EPROTO;
	if (rep->hdr.status)
		return rep->hdr.status;
	if ((size_t)n != sizeof(*rep) || rep->len >= sizeof(rep->text))
		return -EPROTO;
	rep->text[rep->len] = 0;
	return 0;
}

/* The reply's "name value" lines, with units and meanings from the table. */
static void print_params(const char *ifname, const char *text, bool json)
{
	char *copy = strdup(text), *save = NULL, *line;
	bool first = true;

	if (!copy)
		return;
	if (json)
		printf("{\"interface\":");
	if (json)
		xrxe_json_string(stdout, ifname);
	if (json)
		printf(",\"params\":{");
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *val = strchr(line, ' ');
		const struct xrxe_cc_param_desc *d;

		if (!val)
			continue;
		*val++ = 0;
		d = xrxe_cc_param_find(line);
		if (json) {
			printf("%s\"%s\":", first ? "" : ",", line);
			if (strspn(val, "0123456789") == strlen(val) && *val)
				fputs(val, stdout);
			else
				xrxe_json_string(stdout, val);
		} else {
			printf("%-30s %-7s %-7s %s\n", line, val, d ? d->unit : "", d ? d->help : "");
		}
		first = false;
	}
	if (json)
		printf("}}\n");
	free(copy);
}

static const char *cc_strerror(int err)
{
	switch (err) {
	case -ENOENT:
	case -ECONNREFUSED:
		return "no xrxed runs for this interface";
	case -EPERM:
		return "permission denied: changing congestion control needs root";
	case -EINVAL:
		return "the daemon refused the values (see its log)";
	default:
		return strerror(-err);
	}
}

static int run_cc(int argc, char **argv)
{
	const struct xrxe_command *cmd = &xrxe_cmd_cc;
	static struct xrxe_ctrl_cc_reply rep;
	char text[XRXE_CC_TEXT_MAX] = "";
	const char *verb, *ifname;
	unsigned action;
	bool json = false;
	int c, err;

	while ((c = xrxe_cli_getopt_cmd(cmd, argc, argv, "+")) != -1) {
		if (c != 'j')
			return XRXE_EXIT_USAGE;
		json = true;
	}
	if (!xrxe_cli_positionals(cmd, argc, 2, 1000, "show|set|enable|disable IFACE"))
		return XRXE_EXIT_USAGE;
	verb = argv[optind];
	ifname = argv[optind + 1];
	if (!strcmp(verb, "show")) {
		action = XRXE_CC_SHOW;
	} else if (!strcmp(verb, "set")) {
		action = XRXE_CC_SET;
	} else if (!strcmp(verb, "enable")) {
		action = XRXE_CC_ENABLE;
	} else if (!strcmp(verb, "disable")) {
		action = XRXE_CC_DISABLE;
	} else {
		return xrxe_cli_usage(cmd, "'%s' is not show, set, enable or disable", verb);
	}
	if (action == XRXE_CC_SET) {
		struct xrxe_tp_cc_params scratch;
		size_t used = 0;

		if (argc - optind < 3)
			return xrxe_cli_usage(cmd, "set: missing NAME=VALUE");
		xrxe_tp_cc_defaults(&scratch);
		for (int i = optind + 2; i < argc; i++) {
			char why[160];
			int n;

			if (xrxe_cc_param_parse(&scratch, argv[i], why, sizeof(why)))
				return xrxe_cli_usage(cmd, "%s", why);
			n = snprintf(text + used, sizeof(text) - used, "%s%s", used ? " " : "", argv[i]);
			if (n < 0 || (size_t)n >= sizeof(text) - used)
				return xrxe_cli_usage(cmd, "set: too many assignments at once");
			used += (size_t)n;
		}
	} else if (argc - optind != 2) {
		return xrxe_cli_usage(cmd, "%s takes IFACE only", verb);
	}
	err = cc_call(ifname, action, text, &rep);
	if (err) {
		fprintf(stderr, "xrxe: cc: %s: %s\n", ifname, cc_strerror(err));
		return XRXE_EXIT_FAILURE;
	}
	if (action == XRXE_CC_SHOW || json)
		print_params(ifname, rep.text, json);
	return XRXE_EXIT_OK;
}

static const enum xrxe_opt_id cc_opts[] = { XRXE_OPT_JSON, XRXE_OPT_HELP, XRXE_OPT_COUNT };
static const char *const cc_opt_extra[XRXE_OPT_COUNT] = {
	[XRXE_OPT_JSON] =
		"        {\"interface\": IFACE, \"params\": {NAME: VALUE, ...}}\n",
};

const struct xrxe_command xrxe_cmd_cc = {
	.name = "cc",
	.summary = "show or set congestion control (DCQCN) of an interface's daemon",
	.run = run_cc,
	.opts = cc_opts,
	.opt_extra = cc_opt_extra,
	.help =
	"NAME\n"
	"    xrxe cc - show or set congestion control (DCQCN) of an interface's daemon\n"
	"\n"
	"SYNOPSIS\n"
	"    xrxe cc show IFACE [--json]\n"
	"    xrxe cc set IFACE NAME=VALUE...\n"
	"    xrxe cc enable IFACE\n"
	"    xrxe cc disable IFACE\n"
	"\n"
	"DESCRIPTION\n"
	"    xrxed(8) runs DCQCN per queue pair: a CE-marked packet makes the receiver\n"
	"    send a CNP (at most one per np_min_time_between_cnps per QP), a CNP makes\n"
	"    the sender cut its rate, and a timer and a byte counter raise it again;\n"
	"    the QP's packets are paced to that rate. Parameters carry the NVIDIA\n"
	"    mlx5 names, units and defaults; `show` lists them with their units.\n"
	"    `set` changes any of them (all or nothing), `disable` turns congestion\n"
	"    control off (data leaves Not-ECT, no CNPs, no pacing) and `enable` back\n"
	"    on. Changes need root; they last until the daemon stops (start it with\n"
	"    --cc NAME=VALUE to make them stick).\n"
	"\n"
	"OPTIONS\n"
	"\n"
	"EXIT STATUS\n"
	"    0  done\n"
	"    1  failed: no daemon runs for IFACE, or not root (permission denied)\n"
	"    2  usage error: unknown NAME, VALUE out of range, bad command line\n"
	"\n"
	"EXAMPLES\n"
	"    xrxe cc show eth0\n"
	"    xrxe cc set eth0 np_min_time_between_cnps=2 rp_time_reset=55\n"
	"    xrxe cc set eth0 data_dscp=26    # data DSCP 26 (ToS 106 with ECT(0))\n"
	"    xrxe cc disable eth0\n"
	"\n"
	"SEE ALSO\n"
	"    xrxe qp (per-QP rate, alpha, CNPs), xrxe stats (cc section), xrxed(8)\n",
};
