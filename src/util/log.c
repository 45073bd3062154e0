// SPDX-License-Identifier: MIT
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const char *log_progname = "xrxe";
static enum xrxe_log_level log_level = XRXE_LOG_INFO;

static const char *const level_names[] = {
	[XRXE_LOG_ERROR] = "error",
	[XRXE_LOG_WARN] = "warn",
	[XRXE_LOG_INFO] = "info",
	[XRXE_LOG_DEBUG] = "debug",
};

void xrxe_log_init(const char *progname)
{
	const char *env = getenv("XRXE_LOG");

	if (progname)
		log_progname = progname;
	if (!env)
		return;
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (!strcasecmp(env, level_names[i])) {
			log_level = (enum xrxe_log_level)i;
			return;
		}
	}
	fprintf(stderr, "%s: XRXE_LOG=%s is not a level (error, warn, info, debug); using info\n",
		log_progname, env);
}

void xrxe_log_set_level(enum xrxe_log_level level)
{
	log_level = level;
}

enum xrxe_log_level xrxe_log_get_level(void)
{
	return log_level;
}

void xrxe_log(enum xrxe_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	/* Errors read as "prog: message", like every Linux tool; other levels are tagged. */
	if (level == XRXE_LOG_ERROR)
		fprintf(stderr, "%s: ", log_progname);
	else
		fprintf(stderr, "%s: %s: ", log_progname, level_names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int xrxe_log_rl_allow(struct xrxe_log_rl *rl, enum xrxe_log_level level)
{
	struct timespec ts;
	long w;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	w = (long)ts.tv_sec / XRXE_LOG_RL_WINDOW_S;
	if (w != rl->window) {
		if (rl->suppressed)
			xrxe_log(level, "(%u similar messages suppressed in the last %d s)",
				 rl->suppressed, XRXE_LOG_RL_WINDOW_S);
		rl->window = w;
		rl->n = 0;
		rl->suppressed = 0;
	}
	if (rl->n < XRXE_LOG_RL_BURST) {
		rl->n++;
		return 1;
	}
	rl->suppressed++;
	return 0;
}
