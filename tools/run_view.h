/* SPDX-License-Identifier: MIT */
/*
 * The device view of `xrxe run` (tools/run_view.c): a private mount namespace
 * in which /sys/class/infiniband, /sys/class/infiniband_verbs and
 * /dev/infiniband show the xrxe devices of this network namespace as a kernel
 * RDMA device shows itself, for the stacks that look there before they call
 * libibverbs (UCX, Open MPI, hwloc, GID pickers). docs/ucx-mpi.md.
 */
#ifndef XRXE_TOOLS_RUN_VIEW_H
#define XRXE_TOOLS_RUN_VIEW_H

#include <stddef.h>

/*
 * Enter a private mount namespace (for a non-root caller inside a new user
 * namespace that maps only the caller's own uid and gid) and mount the view of
 * the devices the shim in shim_dir lists. Must be called while the process is
 * single-threaded. 0, or -errno with a one-line reason in why; on failure the
 * process may be in the new namespaces with part of the view mounted, which
 * is harmless (nothing outside it changes).
 */
int xrxe_run_view_enter(const char *shim_dir, char *why, size_t why_len);

#endif /* XRXE_TOOLS_RUN_VIEW_H */
