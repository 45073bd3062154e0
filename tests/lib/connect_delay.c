// SPDX-License-Identifier: MIT
/*
 * LD_PRELOAD for librdmacm clients whose server tells them to connect
 * before it listens: rdma_connect() waits XRXE_CONNECT_DELAY_MS (default
 * 500) and then calls the real one (xrxe's librdmacm, found with RTLD_NEXT).
 * The delay only moves the REQ past the server's listen; the exchange on
 * the wire is unchanged. Built and preloaded by tests/lib/connect_delay.sh.
 * Used by:
 *
 * - qperf -cm1 (tests/net/rdmacm_apps.sh): qperf 0.4.11 (Debian 12) sends
 *   the server's CM port to the client before it calls rdma_listen (fixed
 *   upstream after the release, "Fix rdmacm race", linux-rdma/qperf
 *   118a571), so on a loaded host a REQ can beat the listen and is
 *   rejected (REJ 8, invalid service ID), as over the kernel.
 * - the perftest client of the interop suite's `-R` rows, the host's with
 *   kernel rxe as the server and the guest's with xrxe as the server
 *   (tests/interop/kernel_rxe.sh; a loaded host's server loses the race
 *   as well: CI 2026-12-02, load 5-9). perftest
 *   4.5-0.17 (Debian 12) syncs client and server over its rdma_cm side
 *   channel and then, without waiting for each other again, the server
 *   creates its data listener while the client connects. The client here
 *   is native and fast, the server a TCG guest: the client's REQ came 9 ms
 *   after the sync, the guest listened later than that in 2 runs of 8, and
 *   the kernel answered the REQ with REJ "invalid service ID" (reason 8),
 *   as it must. perftest then retries, and its retry path crashes on a
 *   destroyed cm_id (rdma_resolve_addr on a freed ID; fixed upstream in
 *   perftest 3d9d8d0, "Fix crashes and logical flaws in RDMA CM connection
 *   retry", not in 4.5-0.17).
 * - every perftest -R client between two xrxe daemons (tests/net/rdmacm.sh,
 *   rdmacm_abi.sh, loss.sh): the same race on one host, lost by the client
 *   four tries in a row in a clean-clone run beside two CPU hogs (load 3-4,
 *   2026-12-03).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	static int (*real)(struct rdma_cm_id *, struct rdma_conn_param *);
	const char *ms = getenv("XRXE_CONNECT_DELAY_MS");

	if (!real)
		real = (int (*)(struct rdma_cm_id *, struct rdma_conn_param *))dlsym(RTLD_NEXT,
										     "rdma_connect");
	if (!real)
		abort();
	usleep((useconds_t)(ms ? atoi(ms) : 500) * 1000);
	return real(id, conn_param);
}
