// SPDX-License-Identifier: MIT
/*
 * xrxe: the command line of the xrxe RoCEv2 endpoint, git-style:
 * `xrxe [--version | --help] COMMAND [ARGS]`. Subcommands are entries of the
 * table below; adding one (run, qp, cc, ...) is a tools/cmd_NAME.c exporting a
 * `struct xrxe_command` plus one line here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "cli.h"
#include "util/log.h"

static const struct xrxe_command *const commands[] = {
	&xrxe_cmd_attach,
	&xrxe_cmd_detach,
	&xrxe_cmd_status,
	&xrxe_cmd_stats,
	&xrxe_cmd_run,
	&xrxe_cmd_qp,
	&xrxe_cmd_cm,
	&xrxe_cmd_cc,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char main_help_head[] =
	"NAME\n"
	"    xrxe - control the xrxe software RoCEv2 endpoint\n"
	"\n"
	"SYNOPSIS\n"
	"    xrxe COMMAND [ARGS...]\n"
	"    xrxe help [COMMAND]\n"
	"    xrxe --help | --version\n"
	"\n"
	"DESCRIPTION\n"
	"    xrxe runs RDMA over Converged Ethernet v2 (RoCEv2, UDP port 4791) in user\n"
	"    space. An XDP program on the interface steers RoCEv2 frames to AF_XDP\n"
	"    sockets of the transport daemon, xrxed(8), and passes all other traffic\n"
	"    (ARP, ICMP, TCP, other UDP) to the kernel untouched. This command attaches\n"
	"    and detaches that program and shows what it has seen.\n"
	"\n"
	"COMMANDS\n";

static const char main_help_tail[] =
	"\n"
	"    'xrxe help COMMAND' or 'xrxe COMMAND --help' shows a command's page.\n"
	"\n"
	"OPTIONS\n"
	"    -h, --help     show this page\n"
	"    -V, --version  show the version and the libbpf it runs with\n"
	"\n"
	"ENVIRONMENT\n"
	"    XRXE_LOG       message level: error, warn, info (default) or debug.\n"
	"                   debug also shows libbpf's messages and the verifier log.\n"
	"\n"
	"EXIT STATUS\n"
	"    0  success\n"
	"    1  the command failed (the reason is one line on stderr)\n"
	"    2  usage error: unknown command or option, missing argument\n"
	"\n"
	"EXAMPLES\n"
	"    xrxe attach eth0          steer RoCEv2 on eth0 (native XDP)\n"
	"    xrxe status               every interface, with the steering counters\n"
	"    xrxe stats eth0 --json    counters of eth0 for scripts\n"
	"    xrxe detach eth0          remove the program again\n";

static void main_help(FILE *out)
{
	fputs(main_help_head, out);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "    %-8s %s\n", commands[i]->name, commands[i]->summary);
	fputs(main_help_tail, out);
}

static const struct xrxe_command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

static int unknown_command(const char *name)
{
	fprintf(stderr, "xrxe: '%s' is not an xrxe command (see 'xrxe --help')\n", name);
	return XRXE_EXIT_USAGE;
}

/* `xrxe help [COMMAND]` */
static int run_help(int argc, char **argv)
{
	const struct xrxe_command *cmd;

	if (argc < 2) {
		main_help(stdout);
		return XRXE_EXIT_OK;
	}
	if (argc > 2) {
		fprintf(stderr, "xrxe: help: too many arguments (see 'xrxe --help')\n");
		return XRXE_EXIT_USAGE;
	}
	cmd = find_command(argv[1]);
	if (!cmd)
		return unknown_command(argv[1]);
	xrxe_cli_print_help(cmd, stdout);
	return XRXE_EXIT_OK;
}

/* A failed write to stdout (full disk, closed pipe) must not exit 0. */
static int finish(int status)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "xrxe: cannot write the output\n");
		return XRXE_EXIT_FAILURE;
	}
	return status;
}

int main(int argc, char **argv)
{
	const struct xrxe_command *cmd;
	const char *name;

	xrxe_log_init("xrxe");
	if (argc < 2) {
		fprintf(stderr, "usage: xrxe COMMAND [ARGS...] (see 'xrxe --help')\n");
		return XRXE_EXIT_USAGE;
	}
	name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
		main_help(stdout);
		return finish(XRXE_EXIT_OK);
	}
	if (!strcmp(name, "-V") || !strcmp(name, "--version")) {
		printf("xrxe %s (libbpf %u.%u)\n", XRXE_VERSION, libbpf_major_version(),
		       libbpf_minor_version());
		return finish(XRXE_EXIT_OK);
	}
	if (!strcmp(name, "help"))
		return finish(run_help(argc - 1, argv + 1));
	if (name[0] == '-') {
		fprintf(stderr, "xrxe: unknown option '%s' (see 'xrxe --help')\n", name);
		return XRXE_EXIT_USAGE;
	}
	cmd = find_command(name);
	if (!cmd)
		return unknown_command(name);
	return finish(cmd->run(argc - 1, argv + 1));
}
