// SPDX-License-Identifier: MIT
/*
 * xrxe qp, and the daemon part of xrxe stats: both ask the running xrxed of an
 * interface over its control socket (abi.h XRXE_CTRL_STATS, no HELLO needed),
 * which answers with a sealed memfd holding text or JSON.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "daemon/ctrl_msg.h"

int xrxe_daemon_report(const char *ifname, unsigned flags, FILE *out)
{
	union {
		struct xrxe_ctrl_stats_reply rep;
		uint8_t raw[XRXE_MAX_CTRL_MSG];
	} u;
	struct xrxe_ctrl_hdr req = { .op = XRXE_CTRL_STATS, .flags = (uint16_t)flags, .seq = 1 };
	int fds[XRXE_MAX_CTRL_FDS];
	unsigned nfds = 0;
	char *text = NULL;
	ssize_t n;
	int sock, err = 0;

	sock = xrxe_ctrl_connect(ifname);
	if (sock < 0)
		return sock;
	n = xrxe_ctrl_call(sock, &req, sizeof(req), NULL, 0, &u, sizeof(u), fds, &nfds);
	close(sock);
	if (n < 0)
		return (int)n;
	if ((size_t)n != sizeof(u.rep) || u.rep.hdr.status || nfds != 1) {
		err = u.rep.hdr.status ? u.rep.hdr.status : -EPROTO;
		goto out;
	}
	if (u.rep.size > (64u << 20)) { /* our own daemon never writes that much */
		err = -EFBIG;
		goto out;
	}
	text = malloc(u.rep.size + 1);
	if (!text) {
		err = -ENOMEM;
		goto out;
	}
	if (pread(fds[0], text, u.rep.size, 0) != (ssize_t)u.rep.size) {
		err = -EIO;
		goto out;
	}
	/* JSON comes with its own newline; drop it so callers can embed it. */
	while (u.rep.size && text[u.rep.size - 1] == '\n')
		u.rep.size--;
	fwrite(text, 1, u.rep.size, out);
out:
	free(text);
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	return err;
}

/* xrxe qp / xrxe cm: one report of the daemon, text or JSON. */
static int run_report(const struct xrxe_command *cmd, unsigned flag, int argc, char **argv)
{
	bool json = false;
	int c, err;

	while ((c = xrxe_cli_getopt_cmd(cmd, argc, argv, "")) != -1) {
		if (c != 'j')
			return XRXE_EXIT_USAGE;
		json = true;
	}
	if (!xrxe_cli_positionals(cmd, argc, 1, 1, "IFACE"))
		return XRXE_EXIT_USAGE;
	err = xrxe_daemon_report(argv[optind], flag | (json ? XRXE_STATS_F_JSON : 0), stdout);
	if (err) {
		fprintf(stderr, "xrxe: %s: %s: %s\n", cmd->name, argv[optind],
			err == -ENOENT || err == -ECONNREFUSED ? "no xrxed runs for this interface"
								: strerror(-err));
		return XRXE_EXIT_FAILURE;
	}
	fputc('\n', stdout);
	return XRXE_EXIT_OK;
}

static int run_qp(int argc, char **argv)
{
	return run_report(&xrxe_cmd_qp, XRXE_STATS_F_QP, argc, argv);
}

static int run_cm(int argc, char **argv)
{
	return run_report(&xrxe_cmd_cm, XRXE_STATS_F_CM, argc, argv);
}

static const enum xrxe_opt_id cm_opts[] = { XRXE_OPT_JSON, XRXE_OPT_HELP, XRXE_OPT_COUNT };
static const char *const cm_opt_extra[XRXE_OPT_COUNT] = {
	[XRXE_OPT_JSON] =
		"        {\"counters\": {...}, \"ids\": [{\"pid\", \"ps\", \"state\", ...}]}\n",
};

const struct xrxe_command xrxe_cmd_cm = {
	.name = "cm",
	.summary = "show the connection manager of an interface's daemon",
	.run = run_cm,
	.opts = cm_opts,
	.opt_extra = cm_opt_extra,
	.help =
	"NAME\n"
	"    xrxe cm - show the connection manager of an interface's daemon\n"
	"\n"
	"SYNOPSIS\n"
	"    xrxe cm IFACE [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    Asks the xrxed(8) serving IFACE for its RDMA connection manager (the\n"
	"    IB CM on QP1 and the rdma_cm layer librdmacm programs use): counters\n"
	"    of CM MADs sent, received and resent, by message (REQ, REP, RTU, REJ,\n"
	"    MRA, DREQ, DREP, SIDR_REQ, SIDR_REP), MADs dropped and why (malformed\n"
	"    by reason, unknown communication ID, wrong state, duplicate,\n"
	"    unsupported), REJs for requests nobody listens for or a full backlog,\n"
	"    timeouts, events delivered and dropped; then one line per CM ID: the\n"
	"    owning process, port space, rdma_cm state and IB CM state, local and\n"
	"    remote address, communication IDs and QPNs. IDs of exited processes\n"
	"    that are still closing their connection (DREQ sent, TimeWait) show\n"
	"    pid 0.\n"
	"\n"
	"OPTIONS\n"
	"\n"
	"EXIT STATUS\n"
	"    0  shown\n"
	"    1  failed: no daemon runs for IFACE\n"
	"    2  usage error\n"
	"\n"
	"EXAMPLES\n"
	"    xrxe cm eth0\n"
	"    xrxe cm eth0 --json | jq .counters\n"
	"\n"
	"SEE ALSO\n"
	"    xrxe qp, xrxe stats, xrxed(8), rdma_cm(7)\n",
};

static const enum xrxe_opt_id qp_opts[] = { XRXE_OPT_JSON, XRXE_OPT_HELP, XRXE_OPT_COUNT };
static const char *const qp_opt_extra[XRXE_OPT_COUNT] = {
	[XRXE_OPT_JSON] =
		"        {\"interface\": IFACE, \"qps\": [{\"qpn\", \"type\", \"state\", ...}]}\n"
		"        Loss recovery besides: \"resent_packets\" (requester packets sent\n"
		"        again: go-back-N resends, probes; responder READ response packets\n"
		"        replayed), \"out_of_sequence\" (requests dropped for a PSN past the\n"
		"        expected one), \"recoveries\" (episodes: a loss learnt until what\n"
		"        was sent before it is acknowledged), \"probes\" (loss probe packets)\n"
		"        and \"cwnd\" (the send window in PSNs).\n",
};

const struct xrxe_command xrxe_cmd_qp = {
	.name = "qp",
	.summary = "show the queue pairs of an interface's daemon",
	.run = run_qp,
	.opts = qp_opts,
	.opt_extra = qp_opt_extra,
	.help =
	"NAME\n"
	"    xrxe qp - show the queue pairs of an interface's daemon\n"
	"\n"
	"SYNOPSIS\n"
	"    xrxe qp IFACE [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    Asks the xrxed(8) serving IFACE for every queue pair it runs: QPN, type,\n"
	"    state, the peer's QPN, the next PSN to send, the oldest unacknowledged\n"
	"    PSN, the next PSN expected, packet and byte counters, retransmissions\n"
	"    (rexmit: the retries that use the QP's retry_cnt), local ACK timeouts,\n"
	"    fast retransmissions (probe rounds of adaptive retransmission, before\n"
	"    the timeout; xrxed(8) --rexmit), the smoothed round-trip time in\n"
	"    microseconds (0: not measured yet), RNR and sequence NAKs\n"
	"    received/sent, and duplicates.\n"
	"\n"
	"OPTIONS\n"
	"\n"
	"EXIT STATUS\n"
	"    0  shown\n"
	"    1  failed: no daemon runs for IFACE\n"
	"    2  usage error\n"
	"\n"
	"EXAMPLES\n"
	"    xrxe qp eth0\n"
	"    watch -n1 xrxe qp eth0\n"
	"\n"
	"SEE ALSO\n"
	"    xrxe stats, xrxed(8)\n",
};
