/* SPDX-License-Identifier: MIT */
/*
 * The `xrxe` command line: the subcommand table entry, exit statuses and the
 * small helpers every subcommand shares. Each subcommand lives in its own
 * tools/cmd_*.c and exports one `struct xrxe_command`; tools/xrxe.c lists them.
 */
#ifndef XRXE_TOOLS_CLI_H
#define XRXE_TOOLS_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "daemon/options.h"

#ifndef XRXE_VERSION
#define XRXE_VERSION "0.1.0"
#endif

/* Exit statuses, the same for every subcommand (documented in each help page). */
enum {
	XRXE_EXIT_OK = 0,
	XRXE_EXIT_FAILURE = 1, /* the command ran and failed */
	XRXE_EXIT_USAGE = 2,   /* bad command line: nothing was done */
};

struct xrxe_command {
	const char *name;
	const char *summary; /* one line for `xrxe --help` */
	const char *help;    /* the full page: `xrxe help NAME`, `xrxe NAME --help` */
	/* Options from the shared table (src/daemon/options.h), ending in
	 * XRXE_OPT_COUNT, or NULL: their --help entries go right after the
	 * page's "OPTIONS" heading; opt_extra[id] adds a paragraph to one. */
	const enum xrxe_opt_id *opts;
	const char *const *opt_extra;
	/* argv[0] is the command name, as in main(). Returns an exit status. */
	int (*run)(int argc, char **argv);
};

extern const struct xrxe_command xrxe_cmd_attach;
extern const struct xrxe_command xrxe_cmd_detach;
extern const struct xrxe_command xrxe_cmd_status;
extern const struct xrxe_command xrxe_cmd_stats;
extern const struct xrxe_command xrxe_cmd_run;
extern const struct xrxe_command xrxe_cmd_qp;
extern const struct xrxe_command xrxe_cmd_cm;
extern const struct xrxe_command xrxe_cmd_cc;

/* Ask the xrxed of ifname for its report (abi.h XRXE_STATS_F_* flags) and
 * write it to out (JSON without its trailing newline). 0, or -errno:
 * -ENOENT / -ECONNREFUSED when no daemon serves ifname. (tools/cmd_daemon.c) */
int xrxe_daemon_report(const char *ifname, unsigned flags, FILE *out);

/* Print "xrxe: CMD: message" and a pointer to the help page; returns
 * XRXE_EXIT_USAGE. */
int xrxe_cli_usage(const struct xrxe_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * getopt_long for a subcommand, with the shared conventions: -h/--help prints
 * the page and ends the program (status 0); an unknown option or a missing
 * argument is one line on stderr. Returns the option character, -1 at the end
 * of options, or '?' after reporting a usage error (the caller returns
 * XRXE_EXIT_USAGE). shortopts must not start with ':' (added here).
 */
int xrxe_cli_getopt(const struct xrxe_command *cmd, int argc, char **argv, const char *shortopts,
		    const struct option *longopts);

/* xrxe_cli_getopt with the command's own options (cmd->opts, from the
 * shared table); prefix goes in front of the short options ("+": stop at
 * the first non-option). */
int xrxe_cli_getopt_cmd(const struct xrxe_command *cmd, int argc, char **argv,
			const char *prefix);

/* The positional arguments after options: min..max of them, else a usage
 * error naming `what` (returns false after printing it). */
bool xrxe_cli_positionals(const struct xrxe_command *cmd, int argc, unsigned min, unsigned max,
			  const char *what);

/* The command's page: help with the table's option entries (opts). */
void xrxe_cli_print_help(const struct xrxe_command *cmd, FILE *out);

/* Write s as a JSON string literal (quotes included). */
void xrxe_json_string(FILE *out, const char *s);

#endif /* XRXE_TOOLS_CLI_H */
