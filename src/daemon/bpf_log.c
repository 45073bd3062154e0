// SPDX-License-Identifier: MIT
/*
 * libbpf prints warnings for every failure it sees, several lines each (and
 * the whole verifier log on a rejected load). Our callers report each failure
 * in one line, so while they run libbpf's output goes to the debug level; the
 * one line worth showing, the kernel's extack text ("Kernel error message:
 * ..."), is kept and folded into their error.
 */
#include "daemon/bpf_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "util/log.h"

static char extack[256];
static char suffix[sizeof(extack) + 16];
static unsigned quiet_depth;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	static const char tag[] = "Kernel error message: ";
	char *msg = NULL, *hit;
	size_t len;

	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	len = strlen(msg);
	while (len && msg[len - 1] == '\n')
		msg[--len] = '\0';
	hit = strstr(msg, tag);
	if (hit)
		snprintf(extack, sizeof(extack), "%s", hit + sizeof(tag) - 1);
	if (level == LIBBPF_WARN && !quiet_depth && !hit)
		xrxe_warn("%s", msg);
	else
		xrxe_dbg("%s", msg);
	free(msg);
	return 0;
}

/* The hook is installed on every call (cheap) rather than behind a
 * once-flag. */
void xrxe_bpf_quiet_begin(void)
{
	libbpf_set_print(libbpf_print);
	quiet_depth++;
	extack[0] = '\0';
}

void xrxe_bpf_quiet_end(void)
{
	if (quiet_depth)
		quiet_depth--;
}

void xrxe_bpf_extack_clear(void)
{
	extack[0] = '\0';
}

const char *xrxe_bpf_extack_suffix(void)
{
	if (!extack[0])
		return "";
	snprintf(suffix, sizeof(suffix), " (kernel: %s)", extack);
	return suffix;
}
