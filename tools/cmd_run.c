// SPDX-License-Identifier: MIT
/*
 * `xrxe run -- PROG [ARGS...]`: run an unmodified rdma-core program on the
 * xrxe shims. The dynamic loader picks libibverbs.so.1 and librdmacm.so.1
 * from LD_LIBRARY_PATH before the system path (rdma-core clients carry no
 * RPATH, docs/verbs-shim.md), so prepending the shims' directory is all it
 * takes.
 */
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "run_view.h"

/* A packaged install names its shim directory at build time (make
 * SHIM_DIR=/usr/lib/MULTIARCH/xrxe, debian/rules); a source tree or
 * `make install` finds it next to the binary. */
#ifdef XRXE_SHIM_DIR_DEFAULT
#define SHIM_DIR_TEXT XRXE_SHIM_DIR_DEFAULT
#else
#define SHIM_DIR_TEXT "../lib/xrxe next to the xrxe binary"
#endif

static const char run_help[] =
	"NAME\n"
	"    xrxe run - run an unmodified verbs or librdmacm program on xrxe\n"
	"\n"
	"SYNOPSIS\n"
	"    xrxe run [--shim-dir DIR] [--no-view] [--] PROG [ARGS...]\n"
	"\n"
	"DESCRIPTION\n"
	"    Runs PROG with the xrxe shims (drop-in libibverbs.so.1 and librdmacm.so.1)\n"
	"    ahead of rdma-core's on LD_LIBRARY_PATH. PROG then sees one verbs device,\n"
	"    xrxe_IFACE, per running xrxed(8) daemon in its network namespace, and its\n"
	"    rdma_cm calls go to those daemons' connection managers. Use '--' when\n"
	"    PROG's own options could be taken for xrxe's.\n"
	"\n"
	"    PROG runs in a private mount namespace (for a non-root user, inside a\n"
	"    user namespace that maps only that user) in which /sys/class/infiniband,\n"
	"    /sys/class/infiniband_verbs and /dev/infiniband show those devices as a\n"
	"    kernel RDMA device shows itself: ports, GIDs with their types and\n"
	"    netdevs, state, rate, node GUID, NUMA node, and a device node per\n"
	"    device. UCX, Open MPI and hwloc look there before they use a device.\n"
	"    Nothing outside the namespace changes. When the view cannot be made\n"
	"    (no unprivileged user namespaces, a container without the right to\n"
	"    mount) PROG runs without it after a one-line warning.\n"
	"\n"
	"OPTIONS\n"
	"    --shim-dir DIR  the directory holding the shims' libibverbs.so.1 and\n"
	"                    librdmacm.so.1\n"
	"                    (default: $XRXE_SHIM_DIR when set, else\n"
	"                    " SHIM_DIR_TEXT ")\n"
	"    --no-view       no private namespace and device view: PROG sees the\n"
	"                    host's /sys and /dev as they are\n"
	"    -h, --help      show this page\n"
	"\n"
	"EXIT STATUS\n"
	"    PROG's exit status; 1 if PROG cannot be started; 2 on a usage error.\n"
	"\n"
	"EXAMPLES\n"
	"    xrxe run -- ibv_devices\n"
	"    xrxe run -- ibv_rc_pingpong -g 1 10.0.0.2\n"
	"    xrxe run -- ib_write_bw -s 65536\n"
	"    xrxe run -- rping -s -a 10.0.0.1 -v\n"
	"    xrxe run -- ib_send_bw -R 10.0.0.1\n";

/* <dir of /proc/self/exe>/../lib/xrxe, or the packaged directory */
static int default_shim_dir(char *buf, size_t len)
{
#ifdef XRXE_SHIM_DIR_DEFAULT
	if ((size_t)snprintf(buf, len, "%s", XRXE_SHIM_DIR_DEFAULT) >= len)
		return -ENAMETOOLONG;
#else
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0)
		return -errno;
	exe[n] = '\0';
	if ((size_t)snprintf(buf, len, "%s/../lib/xrxe", dirname(exe)) >= len)
		return -ENAMETOOLONG;
#endif
	return 0;
}

static int run_run(int argc, char **argv)
{
	char dir[PATH_MAX], lib[PATH_MAX + 32];
	const char *shim_dir = getenv("XRXE_SHIM_DIR"), *old;
	char *path, why[256];
	bool view = true;
	int i;

	/* Options end at PROG, whose own options must reach it untouched, so
	 * this is parsed by hand rather than with getopt (which permutes). */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(run_help, stdout);
			return XRXE_EXIT_OK;
		} else if (!strcmp(argv[i], "--shim-dir")) {
			if (++i >= argc)
				return xrxe_cli_usage(&xrxe_cmd_run, "option '--shim-dir' needs an argument");
			shim_dir = argv[i];
		} else if (!strcmp(argv[i], "--no-view")) {
			view = false;
		} else if (!strncmp(argv[i], "--shim-dir=", 11)) {
			shim_dir = argv[i] + 11;
		} else if (argv[i][0] == '-') {
			return xrxe_cli_usage(&xrxe_cmd_run, "unknown option '%s'", argv[i]);
		} else {
			break;
		}
	}
	if (i >= argc)
		return xrxe_cli_usage(&xrxe_cmd_run, "missing PROG");
	if (!shim_dir) {
		int err = default_shim_dir(dir, sizeof(dir));

		if (err) {
			fprintf(stderr, "xrxe: run: cannot locate the shim: %s\n", strerror(-err));
			return XRXE_EXIT_FAILURE;
		}
		shim_dir = dir;
	}
	snprintf(lib, sizeof(lib), "%s/libibverbs.so.1", shim_dir);
	if (access(lib, R_OK)) {
		fprintf(stderr, "xrxe: run: %s: %s (build it with 'make')\n", lib, strerror(errno));
		return XRXE_EXIT_FAILURE;
	}
	old = getenv("LD_LIBRARY_PATH");
	if (asprintf(&path, "%s%s%s", shim_dir, old && *old ? ":" : "", old ? old : "") < 0)
		return XRXE_EXIT_FAILURE;
	setenv("LD_LIBRARY_PATH", path, 1);
	free(path);
	if (view && xrxe_run_view_enter(shim_dir, why, sizeof(why)))
		fprintf(stderr, "xrxe: run: no device view (%s); running without it\n", why);
	execvp(argv[i], argv + i);
	fprintf(stderr, "xrxe: run: %s: %s\n", argv[i], strerror(errno));
	return XRXE_EXIT_FAILURE;
}

const struct xrxe_command xrxe_cmd_run = {
	.name = "run",
	.summary = "run an unmodified verbs program on the xrxe shim",
	.help = run_help,
	.run = run_run,
};
