// SPDX-License-Identifier: MIT
/*
 * xrxe attach / detach / status / stats: the XDP steering program on the
 * command line. All the work is in src/daemon/steer.c, which also prints the
 * one-line reason of any failure; this file parses options and formats output.
 */
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "daemon/ctrl_msg.h"
#include "daemon/steer.h"
#include "xrxe/abi.h"

/* --- output ---------------------------------------------------------------------- */

static void counters_text(FILE *out, const struct xrxe_steer_stat c[XRXE_STEER_COUNTER_COUNT],
			  const char *indent)
{
	fprintf(out, "%s%-14s %14s %16s\n", indent, "counter", "packets", "bytes");
	for (int i = 0; i < XRXE_STEER_COUNTER_COUNT; i++)
		fprintf(out, "%s%-14s %14" PRIu64 " %16" PRIu64 "\n", indent,
		       xrxe_steer_counter_name((enum xrxe_steer_counter)i), (uint64_t)c[i].packets,
		       (uint64_t)c[i].bytes);
}

static void counters_json(FILE *out, const struct xrxe_steer_stat c[XRXE_STEER_COUNTER_COUNT])
{
	fputs("{", out);
	for (int i = 0; i < XRXE_STEER_COUNTER_COUNT; i++)
		fprintf(out, "%s\"%s\":{\"packets\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", i ? "," : "",
		       xrxe_steer_counter_name((enum xrxe_steer_counter)i), (uint64_t)c[i].packets,
		       (uint64_t)c[i].bytes);
	fputs("}", out);
}

static int read_counters(const char *ifname, struct xrxe_steer_stat c[XRXE_STEER_COUNTER_COUNT])
{
	struct xrxe_steer_maps maps;
	int err;

	err = xrxe_steer_open_maps(ifname, &maps);
	if (err)
		return err;
	err = xrxe_steer_read_stats(&maps, c);
	xrxe_steer_close_maps(&maps);
	return err;
}

/* --- attach ---------------------------------------------------------------------- */

static const enum xrxe_opt_id attach_opts[] = {
	XRXE_OPT_MODE, XRXE_OPT_PORT, XRXE_OPT_PRIORITY, XRXE_OPT_HELP, XRXE_OPT_COUNT,
};
static const char *const attach_opt_extra[XRXE_OPT_COUNT] = {
	[XRXE_OPT_MODE] = "        Without it: native.\n",
};

static int run_attach(int argc, char **argv)
{
	const struct xrxe_command *cmd = &xrxe_cmd_attach;
	enum xrxe_steer_mode mode = XRXE_STEER_MODE_NATIVE;
	unsigned long prio = 0;
	struct xrxe_steer_state st;
	unsigned long port = XRXE_STEER_DEFAULT_UDP_PORT;
	const char *ifname;
	char err[160];
	bool already;
	int c, bad;

	while ((c = xrxe_cli_getopt_cmd(cmd, argc, argv, "")) != -1) {
		switch (xrxe_opt_id_of(c)) {
		case XRXE_OPT_MODE:
			bad = xrxe_opt_parse_mode(optarg, &mode, err, sizeof(err));
			break;
		case XRXE_OPT_PORT:
			bad = xrxe_opt_parse_uint(XRXE_OPT_PORT, optarg, 1, 65535, &port, err,
						  sizeof(err));
			break;
		case XRXE_OPT_PRIORITY:
			bad = xrxe_opt_parse_uint(XRXE_OPT_PRIORITY, optarg, 1, 1000, &prio, err,
						  sizeof(err));
			break;
		default:
			return XRXE_EXIT_USAGE;
		}
		if (bad)
			return xrxe_cli_usage(cmd, "%s", err);
	}
	if (!xrxe_cli_positionals(cmd, argc, 1, 1, "IFACE"))
		return XRXE_EXIT_USAGE;
	ifname = argv[optind];

	struct xrxe_steer_attach_opts ao = {
		.mode = mode,
		.udp_port = (uint16_t)port,
		.priority = (uint32_t)prio,
	};

	if (xrxe_steer_attach_with(ifname, &ao, &already))
		return XRXE_EXIT_FAILURE;
	if (xrxe_steer_query(ifname, &st))
		return XRXE_EXIT_FAILURE;
	printf("%s: xrxe steering %s (%s mode, prog id %u, UDP port %u)\n", ifname,
	       already ? "already attached" : "attached", xrxe_steer_mode_name(st.mode), st.prog_id,
	       st.udp_port);
	return XRXE_EXIT_OK;
}

const struct xrxe_command xrxe_cmd_attach = {
	.name = "attach",
	.summary = "load the XDP steering program on an interface",
	.run = run_attach,
	.opts = attach_opts,
	.opt_extra = attach_opt_extra,
	.help =
	"NAME\n"
	"    xrxe attach - load the XDP steering program on an interface\n"
	"\n"
	"SYNOPSIS\n"
	"    xrxe attach IFACE [--mode native|skb] [--port PORT] [--priority N]\n"
	"\n"
	"DESCRIPTION\n"
	"    Loads xrxe's XDP program (xrxe_steer) and attaches it to IFACE. The\n"
	"    program redirects RoCEv2 frames (UDP destination port 4791, over IPv4 or\n"
	"    IPv6, with at most one VLAN tag) to the AF_XDP socket that xrxed(8) binds\n"
	"    on the receiving queue, and passes everything else to the kernel, so\n"
	"    ARP, ping, TCP and other UDP keep working. It drops RoCEv2 frames too\n"
	"    short for UDP + BTH + ICRC or with a BTH transport version other than 0,\n"
	"    and counts every frame it sees (see xrxe status). While no xrxed socket\n"
	"    is bound, RoCEv2 frames go to the kernel and count as no_socket. IPv4\n"
	"    fragments and IPv6 packets with extension headers always go to the\n"
	"    kernel.\n"
	"\n"
	"    Attaching is idempotent: if xrxe's program is already attached in the\n"
	"    same mode, nothing changes and the status is 0.\n"
	"\n"
	"    Other XDP programs: the program is attached through libxdp's\n"
	"    multi-program dispatcher, as xdp-loader(8) and xdp-filter(8) attach\n"
	"    theirs, so they run on the same interface in the order of their\n"
	"    priorities (lower first; xrxe's is 50, xdp-filter's 10). Frames xrxe\n"
	"    passes to the kernel go on to the next program; steered and dropped\n"
	"    ones stop. libxdp keeps the dispatcher's state in a bpffs shared by\n"
	"    its users: LIBXDP_BPFFS, else /sys/fs/bpf. Where none is mounted (as\n"
	"    inside 'ip netns exec', which gives each command its own /sys), the\n"
	"    program is attached alone, as before libxdp, and a line says so. The\n"
	"    kernel must support freplace programs (BPF_PROG_TYPE_EXT) for the\n"
	"    dispatcher; otherwise libxdp attaches the program alone too. A program\n"
	"    attached without the dispatcher (by anyone) is never replaced: detach\n"
	"    it first. The program's maps are pinned as\n"
	"    /sys/fs/bpf/xrxe/IFACE/stats and .../xsks for bpftool(8); bpffs is\n"
	"    mounted at /sys/fs/bpf if it is not (pinning is best effort, and pins\n"
	"    made inside 'ip netns exec' vanish when that command ends).\n"
	"\n"
	"OPTIONS\n"
	"\n"
	"EXIT STATUS\n"
	"    0  attached, or already attached in this mode\n"
	"    1  failed: no such interface, not root, another XDP program attached,\n"
	"       or the kernel refused (its reason is on the error line)\n"
	"    2  usage error\n"
	"\n"
	"EXAMPLES\n"
	"    xrxe attach eth0\n"
	"    xrxe attach veth1 --mode skb\n"
	"    ip netns exec blue xrxe attach veth-blue\n"
	"\n"
	"SEE ALSO\n"
	"    xrxe detach, xrxe status, xrxed(8), ip-link(8), bpftool-net(8)\n",
};

/* --- detach ---------------------------------------------------------------------- */

static int run_detach(int argc, char **argv)
{
	const struct xrxe_command *cmd = &xrxe_cmd_detach;

	if (xrxe_cli_getopt_cmd(cmd, argc, argv, "") != -1)
		return XRXE_EXIT_USAGE;
	if (!xrxe_cli_positionals(cmd, argc, 1, 1, "IFACE"))
		return XRXE_EXIT_USAGE;
	if (xrxe_steer_detach(argv[optind]))
		return XRXE_EXIT_FAILURE;
	printf("%s: xrxe steering detached\n", argv[optind]);
	return XRXE_EXIT_OK;
}

static const enum xrxe_opt_id detach_opts[] = { XRXE_OPT_HELP, XRXE_OPT_COUNT };

const struct xrxe_command xrxe_cmd_detach = {
	.name = "detach",
	.summary = "remove the XDP steering program from an interface",
	.run = run_detach,
	.opts = detach_opts,
	.help =
	"NAME\n"
	"    xrxe detach - remove the XDP steering program from an interface\n"
	"\n"
	"SYNOPSIS\n"
	"    xrxe detach IFACE\n"
	"\n"
	"DESCRIPTION\n"
	"    Detaches xrxe's XDP program from IFACE, in whichever mode it runs, and\n"
	"    removes its pins under /sys/fs/bpf/xrxe/IFACE. The interface is left as\n"
	"    it was before 'xrxe attach'. A running xrxed(8) on IFACE stops receiving\n"
	"    RoCEv2 frames. Another XDP program is never detached: from libxdp's\n"
	"    dispatcher only xrxe's program is removed, the others keep running in\n"
	"    their order (libxdp removes the dispatcher with its last program).\n"
	"\n"
	"OPTIONS\n"
	"\n"
	"EXIT STATUS\n"
	"    0  detached\n"
	"    1  failed: no such interface, no XDP program attached, the attached\n"
	"       program is not xrxe's, or not root\n"
	"    2  usage error\n"
	"\n"
	"EXAMPLES\n"
	"    xrxe detach eth0\n"
	"\n"
	"SEE ALSO\n"
	"    xrxe attach, xrxe status\n",
};

/* --- status ---------------------------------------------------------------------- */

/* Whether an xrxed answers on IFACE's control socket (connecting is
 * harmless: the daemon drops a connection that sends nothing). */
static bool daemon_runs(const char *ifname)
{
	int fd = xrxe_ctrl_connect(ifname);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Who loaded our program, and whether it is orphaned: loaded by an xrxed
 * that is no longer there (killed), so nobody will remove it. */
static void owner_text(FILE *out, const char *ifname, const struct xrxe_steer_state *st,
		       bool daemon)
{
	if (!st->by_daemon)
		fprintf(out, "    loaded by xrxe attach (or xrxed --keep-xdp), stays until xrxe "
			"detach; %s\n", daemon ? "xrxed runs" : "no xrxed runs");
	else if (daemon)
		fprintf(out, "    loaded by xrxed, which runs and removes it when it stops\n");
	else
		fprintf(out, "    ORPHANED: loaded by an xrxed that is gone; 'xrxed %s' adopts it "
			"(and removes it when it stops), 'xrxe detach %s' removes it\n", ifname,
			ifname);
}

static void components_text(FILE *out, const struct xrxe_steer_state *st)
{
	fprintf(out, "    libxdp dispatcher (prog id %u), run order:\n", st->attached_id);
	fprintf(out, "      %-8s %-16s %s\n", "priority", "program", "prog id");
	for (unsigned i = 0; i < st->ncomponents; i++)
		fprintf(out, "      %-8u %-16s %u%s\n", st->components[i].priority,
			st->components[i].name, st->components[i].prog_id,
			st->components[i].ours ? "  (xrxe)" : "");
}

static void components_json(FILE *out, const struct xrxe_steer_state *st)
{
	if (!st->dispatcher) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"prog_id\":%u,\"programs\":[", st->attached_id);
	for (unsigned i = 0; i < st->ncomponents; i++) {
		fprintf(out, "%s{\"prog_id\":%u,\"priority\":%u,\"ours\":%s,\"name\":", i ? "," : "",
			st->components[i].prog_id, st->components[i].priority,
			st->components[i].ours ? "true" : "false");
		xrxe_json_string(out, st->components[i].name);
		fputs("}", out);
	}
	fputs("]}", out);
}

/* One interface, text or JSON. Returns 0, or -errno after the error line. */
static int status_one(FILE *out, const char *ifname, bool json, bool first, bool *ours)
{
	struct xrxe_steer_stat ctr[XRXE_STEER_COUNTER_COUNT];
	struct xrxe_steer_state st;
	bool daemon = false;
	int err;

	err = xrxe_steer_query(ifname, &st);
	if (err)
		return err;
	if (st.ours) {
		err = read_counters(ifname, ctr);
		if (err)
			return err;
		*ours = true;
		daemon = daemon_runs(ifname);
	}

	if (!json) {
		if (!st.attached)
			fprintf(out, "%s: no XDP program\n", ifname);
		else if (!st.ours && st.dispatcher) {
			fprintf(out, "%s: libxdp dispatcher without xrxe's program (%s mode, prog id %u)\n",
				ifname, xrxe_steer_mode_name(st.mode), st.attached_id);
			components_text(out, &st);
		} else if (!st.ours)
			fprintf(out, "%s: foreign XDP program '%s' (%s mode, prog id %u)\n", ifname,
			       st.prog_name, xrxe_steer_mode_name(st.mode), st.prog_id);
		else {
			fprintf(out, "%s: xrxe steering (%s mode, prog id %u, UDP port %u)\n", ifname,
			       xrxe_steer_mode_name(st.mode), st.prog_id, st.udp_port);
			if (st.native_refused)
				fprintf(out, "    fallback: the driver refused native XDP, so xrxed "
					"attached in generic (skb) mode\n");
			owner_text(out, ifname, &st, daemon);
			if (st.dispatcher)
				components_text(out, &st);
			else
				fprintf(out, "    attached alone (no libxdp dispatcher)\n");
			counters_text(out, ctr, "    ");
		}
		return 0;
	}

	fprintf(out, "%s{\"name\":", first ? "" : ",");
	xrxe_json_string(out, ifname);
	fprintf(out, ",\"ifindex\":%u,\"xdp\":", st.ifindex);
	if (!st.attached) {
		fputs("null}", out);
		return 0;
	}
	fprintf(out, "{\"ours\":%s,\"mode\":\"%s\",\"prog_id\":%u,\"prog_name\":",
	       st.ours ? "true" : "false", xrxe_steer_mode_name(st.mode), st.prog_id);
	xrxe_json_string(out, st.prog_name);
	fputs(",\"dispatcher\":", out);
	components_json(out, &st);
	if (st.ours) {
		fprintf(out, ",\"udp_port\":%u,\"loaded_by\":\"%s\",\"daemon\":%s,\"orphaned\":%s,"
			"\"native_refused\":%s},\"counters\":", st.udp_port,
			st.by_daemon ? "xrxed" : "attach", daemon ? "true" : "false",
			st.by_daemon && !daemon ? "true" : "false",
			st.native_refused ? "true" : "false");
		counters_json(out, ctr);
		fputs("}", out);
	} else {
		fputs("}}", out);
	}
	return 0;
}

/* Every interface of the namespace. */
static int status_all(FILE *out, bool json, bool *ours)
{
	struct if_nameindex *ifs;
	bool first = true;
	int err = 0;

	ifs = if_nameindex();
	if (!ifs) {
		err = -errno;
		fprintf(stderr, "xrxe: cannot list the interfaces: %s\n", strerror(-err));
		return err;
	}
	for (struct if_nameindex *i = ifs; i->if_index; i++) {
		err = status_one(out, i->if_name, json, first, ours);
		/* An interface that vanished meanwhile is no failure; being unable
		 * to read one program is (the next one would say the same). */
		if (err == -ENODEV) {
			err = 0;
			continue;
		}
		if (err)
			break;
		first = false;
	}
	if_freenameindex(ifs);
	if (!err && !json && !*ours)
		fprintf(out, "xrxe steering is not attached to any interface\n");
	return err;
}

static int run_status(int argc, char **argv)
{
	const struct xrxe_command *cmd = &xrxe_cmd_status;
	bool json = false, ours = false;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	int c, err;

	while ((c = xrxe_cli_getopt_cmd(cmd, argc, argv, "")) != -1) {
		if (c != 'j')
			return XRXE_EXIT_USAGE;
		json = true;
	}
	if (!xrxe_cli_positionals(cmd, argc, 0, 1, "IFACE"))
		return XRXE_EXIT_USAGE;

	/* Buffered, so a failure half-way leaves stdout empty rather than
	 * holding half a JSON document. */
	out = open_memstream(&buf, &len);
	if (!out) {
		fprintf(stderr, "xrxe: out of memory\n");
		return XRXE_EXIT_FAILURE;
	}
	if (json)
		fputs("{\"interfaces\":[", out);
	if (optind < argc)
		err = status_one(out, argv[optind], json, true, &ours);
	else
		err = status_all(out, json, &ours);
	if (json)
		fputs("]}\n", out);
	if (fclose(out)) {
		fprintf(stderr, "xrxe: out of memory\n");
		err = -ENOMEM;
	}
	if (!err)
		fwrite(buf, 1, len, stdout);
	free(buf);
	return err ? XRXE_EXIT_FAILURE : XRXE_EXIT_OK;
}

static const enum xrxe_opt_id status_opts[] = { XRXE_OPT_JSON, XRXE_OPT_HELP, XRXE_OPT_COUNT };
static const char *const status_opt_extra[XRXE_OPT_COUNT] = {
	[XRXE_OPT_JSON] =
		"        one JSON object: {\"interfaces\":[{\"name\", \"ifindex\", \"xdp\": null or\n"
		"        {\"ours\", \"mode\", \"prog_id\", \"prog_name\", \"dispatcher\": null or\n"
		"        {\"prog_id\", \"programs\": [{\"prog_id\", \"priority\", \"ours\", \"name\"}]},\n"
		"        \"udp_port\", \"loaded_by\": \"xrxed\" or \"attach\", \"daemon\", \"orphaned\",\n"
		"        \"native_refused\"},\n"
		"        \"counters\": {NAME: {\"packets\", \"bytes\"}}}]}; counters only for\n"
		"        xrxe's program.\n",
};

const struct xrxe_command xrxe_cmd_status = {
	.name = "status",
	.summary = "show XDP programs and steering counters",
	.run = run_status,
	.opts = status_opts,
	.opt_extra = status_opt_extra,
	.help =
	"NAME\n"
	"    xrxe status - show XDP programs and steering counters\n"
	"\n"
	"SYNOPSIS\n"
	"    xrxe status [IFACE] [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    For IFACE, or for every interface of the network namespace when none is\n"
	"    given: whether an XDP program is attached, whether it is xrxe's steering\n"
	"    program or a foreign one, its mode (native, skb or hw) and program id,\n"
	"    and, for xrxe's program, the UDP port it steers, who loaded it and its\n"
	"    counters. Under libxdp's dispatcher every program it runs is listed with\n"
	"    its priority, in run order. A program loaded by xrxed(8) whose daemon\n"
	"    is gone (killed) is shown as ORPHANED: the next xrxed on the interface\n"
	"    adopts it and removes it when it stops; 'xrxe detach' removes it now.\n"
	"    A program xrxed attached in generic (skb) mode because the driver\n"
	"    refused native XDP says so (fallback).\n"
	"    Counters are summed over all CPUs (packets and bytes, bytes being whole\n"
	"    frames from the Ethernet header):\n"
	"\n"
	"      steered       RoCEv2 frames redirected to an xrxed AF_XDP socket\n"
	"      passed        other traffic, handed to the kernel\n"
	"      drop_short    RoCEv2 port, but too short for UDP + BTH + ICRC: dropped\n"
	"      drop_bad_bth  BTH transport version (TVer) not 0: dropped\n"
	"      no_socket     RoCEv2, but no socket on the queue: handed to the kernel\n"
	"      ecn_ce        RoCEv2 frames marked Congestion Experienced (also counted\n"
	"                    as steered or no_socket)\n"
	"      raw_flow      other frames a raw packet QP's flow (ibv_create_flow)\n"
	"                    matched: redirected to the xrxed AF_XDP socket\n"
	"\n"
	"    Without IFACE, a last line says so when xrxe's program is attached\n"
	"    nowhere. Identifying attached programs needs root.\n"
	"\n"
	"OPTIONS\n"
	"\n"
	"EXIT STATUS\n"
	"    0  shown (also when nothing is attached)\n"
	"    1  failed: no such interface, or not root\n"
	"    2  usage error\n"
	"\n"
	"EXAMPLES\n"
	"    xrxe status\n"
	"    xrxe status eth0 --json | jq .interfaces[0].counters.steered\n"
	"\n"
	"SEE ALSO\n"
	"    xrxe stats, xrxe attach, bpftool-net(8)\n",
};

/* --- stats ----------------------------------------------------------------------- */

static int run_stats(int argc, char **argv)
{
	const struct xrxe_command *cmd = &xrxe_cmd_stats;
	struct xrxe_steer_stat ctr[XRXE_STEER_COUNTER_COUNT];
	bool json = false;
	int c;

	while ((c = xrxe_cli_getopt_cmd(cmd, argc, argv, "")) != -1) {
		if (c != 'j')
			return XRXE_EXIT_USAGE;
		json = true;
	}
	if (!xrxe_cli_positionals(cmd, argc, 1, 1, "IFACE"))
		return XRXE_EXIT_USAGE;
	if (read_counters(argv[optind], ctr))
		return XRXE_EXIT_FAILURE;
	if (json) {
		fputs("{\"name\":", stdout);
		xrxe_json_string(stdout, argv[optind]);
		fputs(",\"counters\":", stdout);
		counters_json(stdout, ctr);
		/* The daemon's counters when one runs (tools/cmd_daemon.c). */
		fputs(",\"daemon\":", stdout);
		if (xrxe_daemon_report(argv[optind], XRXE_STATS_F_JSON, stdout))
			fputs("null", stdout);
		fputs("}\n", stdout);
	} else {
		counters_text(stdout, ctr, "");
		fputs("\n", stdout);
		if (xrxe_daemon_report(argv[optind], 0, stdout))
			fputs("(no xrxed runs for this interface)", stdout);
		fputs("\n", stdout);
	}
	return XRXE_EXIT_OK;
}

static const enum xrxe_opt_id stats_opts[] = { XRXE_OPT_JSON, XRXE_OPT_HELP, XRXE_OPT_COUNT };
static const char *const stats_opt_extra[XRXE_OPT_COUNT] = {
	[XRXE_OPT_JSON] =
		"        {\"name\": IFACE, \"counters\": {NAME: {\"packets\", \"bytes\"}},\n"
		"         \"daemon\": {SECTION: {NAME: VALUE}} or null}\n",
};

const struct xrxe_command xrxe_cmd_stats = {
	.name = "stats",
	.summary = "show the steering counters of an interface",
	.run = run_stats,
	.opts = stats_opts,
	.opt_extra = stats_opt_extra,
	.help =
	"NAME\n"
	"    xrxe stats - show the steering counters of an interface\n"
	"\n"
	"SYNOPSIS\n"
	"    xrxe stats IFACE [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    The counters of xrxe's XDP program on IFACE, summed over all CPUs: the\n"
	"    counters part of 'xrxe status IFACE' (see there for their meaning).\n"
	"    When xrxed(8) serves IFACE, its counters follow: port, AF_XDP sockets\n"
	"    (xskN), frames verified and dropped by reason (daemon), the transport,\n"
	"    control connections and objects (ctrl), netlink. 'xrxe qp' lists QPs.\n"
	"\n"
	"OPTIONS\n"
	"\n"
	"EXIT STATUS\n"
	"    0  shown\n"
	"    1  failed: no such interface, xrxe's program not attached, or not root\n"
	"    2  usage error\n"
	"\n"
	"EXAMPLES\n"
	"    xrxe stats eth0\n"
	"    watch -n1 xrxe stats eth0\n"
	"\n"
	"SEE ALSO\n"
	"    xrxe status\n",
};
