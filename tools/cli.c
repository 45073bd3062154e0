// SPDX-License-Identifier: MIT
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int xrxe_cli_usage(const struct xrxe_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "xrxe: %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'xrxe help %s')\n", cmd->name);
	return XRXE_EXIT_USAGE;
}

int xrxe_cli_getopt(const struct xrxe_command *cmd, int argc, char **argv, const char *shortopts,
		    const struct option *longopts)
{
	char spec[64];
	int c;

	/* Leading ':' tells a missing argument (':') from an unknown option ('?');
	 * opterr = 0 because getopt's own messages carry argv[0], which is the
	 * subcommand name here, not "xrxe". */
	snprintf(spec, sizeof(spec), ":%sh", shortopts);
	opterr = 0;
	c = getopt_long(argc, argv, spec, longopts, NULL);
	switch (c) {
	case 'h':
		xrxe_cli_print_help(cmd, stdout);
		exit(fflush(stdout) ? XRXE_EXIT_FAILURE : XRXE_EXIT_OK);
	case ':':
		if (optopt)
			xrxe_cli_usage(cmd, "option '-%c' needs an argument", optopt);
		else
			xrxe_cli_usage(cmd, "option '%s' needs an argument", argv[optind - 1]);
		return '?';
	case '?':
		if (optopt)
			xrxe_cli_usage(cmd, "unknown option '-%c'", optopt);
		else
			xrxe_cli_usage(cmd, "unknown option '%s'", argv[optind - 1]);
		return '?';
	default:
		return c;
	}
}

int xrxe_cli_getopt_cmd(const struct xrxe_command *cmd, int argc, char **argv,
			const char *prefix)
{
	/* getopt_long keeps pointing into these between calls */
	static struct xrxe_opt_parser p;
	static const struct xrxe_command *built;
	char spec[64];

	if (built != cmd) {
		xrxe_opt_parser_init(&p, cmd->opts);
		built = cmd;
	}
	snprintf(spec, sizeof(spec), "%s%s", prefix, p.shortopts);
	return xrxe_cli_getopt(cmd, argc, argv, spec, p.longopts);
}

bool xrxe_cli_positionals(const struct xrxe_command *cmd, int argc, unsigned min, unsigned max,
			  const char *what)
{
	unsigned n = argc > optind ? (unsigned)(argc - optind) : 0;

	if (n < min) {
		xrxe_cli_usage(cmd, "missing %s", what);
		return false;
	}
	if (n > max) {
		xrxe_cli_usage(cmd, "too many arguments");
		return false;
	}
	return true;
}

void xrxe_cli_print_help(const struct xrxe_command *cmd, FILE *out)
{
	static const char heading[] = "\nOPTIONS\n";
	const char *at = cmd->opts ? strstr(cmd->help, heading) : NULL;

	if (!at) {
		fputs(cmd->help, out);
		return;
	}
	at += sizeof(heading) - 1;
	fwrite(cmd->help, 1, (size_t)(at - cmd->help), out);
	xrxe_opt_print_help(out, cmd->opts, cmd->opt_extra);
	fputs(at, out);
}

void xrxe_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}
