/* SPDX-License-Identifier: MIT */
/*
 * The command-line options of `xrxe` (tools/) and `xrxed` (src/daemon/xrxed.c)
 * in one table: each option's long name, short letter, argument, value check
 * and --help entry are defined once here, so that an option means the same
 * thing wherever it is accepted (`xrxe attach --mode drv` and `xrxed --mode
 * drv` both work) and a letter is never two options. The man pages are made
 * from --help (scripts/mkman.sh), so they follow.
 */
#ifndef XRXE_DAEMON_OPTIONS_H
#define XRXE_DAEMON_OPTIONS_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "daemon/steer.h"

enum xrxe_opt_id {
	XRXE_OPT_MODE,             /* -m, --mode native|skb    (xrxe attach, xrxed) */
	XRXE_OPT_PORT,             /* -p, --port PORT          (xrxe attach) */
	XRXE_OPT_PRIORITY,         /* -P, --priority N         (xrxe attach) */
	XRXE_OPT_QUEUES,           /* -q, --queues N           (xrxed) */
	XRXE_OPT_KEEP_XDP,         /* -k, --keep-xdp           (xrxed) */
	XRXE_OPT_CC,               /* -c, --cc NAME=VALUE      (xrxed) */
	XRXE_OPT_REXMIT,           /* --rexmit adaptive|fixed  (xrxed) */
	XRXE_OPT_SELECTIVE_REPEAT, /* --selective-repeat off|cm|on (xrxed) */
	XRXE_OPT_LIMIT,            /* -l, --limit NAME=VALUE   (xrxed) */
	XRXE_OPT_RT_PRIORITY,      /* -r, --rt-priority PRIO   (xrxed) */
	XRXE_OPT_JSON,             /* -j, --json               (xrxe stats, status, qp, cm, cc) */
	XRXE_OPT_VERBOSE,          /* -v, --verbose            (xrxed) */
	XRXE_OPT_HELP,             /* -h, --help               (everywhere) */
	XRXE_OPT_COUNT,            /* also ends a list of ids */
};

struct xrxe_opt_def {
	const char *name; /* long name, without "--" */
	char letter;      /* short name, 0 for none */
	const char *arg;  /* the argument as --help shows it; NULL: a flag */
	const char *help; /* the description: lines of 8 spaces + text + "\n" */
	/* printed after help (e.g. the list of quota names), or NULL */
	void (*help_more)(FILE *out);
};

extern const struct xrxe_opt_def xrxe_opt_defs[XRXE_OPT_COUNT];

/* getopt_long's tables for a list of ids ending in XRXE_OPT_COUNT. An
 * option's getopt value is its letter, or XRXE_OPT_VAL(id) without one. */
#define XRXE_OPT_VAL(id) (0x100 + (int)(id))
struct xrxe_opt_parser {
	struct option longopts[XRXE_OPT_COUNT + 1];
	char shortopts[3 * XRXE_OPT_COUNT + 1];
};
void xrxe_opt_parser_init(struct xrxe_opt_parser *p, const enum xrxe_opt_id *ids);

/* The id getopt_long's return value c stands for, or -1. */
int xrxe_opt_id_of(int c);

/* The --help entries of a list of ids, in order: "    -m, --mode ARG\n"
 * then the description; extra[id], when given and non-NULL, is one more
 * program-specific paragraph (same layout) after it (e.g. the default). */
void xrxe_opt_print_help(FILE *out, const enum xrxe_opt_id *ids, const char *const *extra);

/* Value checks, the same message wherever the option is given ("--mode:
 * 'x' is not native or skb"); 0, or -EINVAL with the message in err. */
int xrxe_opt_parse_mode(const char *arg, enum xrxe_steer_mode *mode, char *err, size_t len);
int xrxe_opt_parse_uint(enum xrxe_opt_id id, const char *arg, unsigned long min,
			unsigned long max, unsigned long *out, char *err, size_t len);

#endif /* XRXE_DAEMON_OPTIONS_H */
