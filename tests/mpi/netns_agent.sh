#!/usr/bin/env bash
# A launch agent for mpirun (--mca plm_rsh_agent, or MPICH's -launcher-exec)
# that treats network namespaces as hosts: called as `AGENT [ssh options]
# HOST COMMAND...`, like ssh, it runs COMMAND through `xrxe run` in the
# namespace that XRXE_MPI_HOSTS maps HOST to, so every rank started there
# uses that namespace's xrxe device.
#
#   XRXE_MPI_HOSTS="ha=NS_A hb=NS_B"   host name -> network namespace
#   XRXE_MPI_XRXE=/path/to/xrxe        the xrxe binary
#   XRXE_MPI_USER=NAME                 optional: run COMMAND as this user
#                                      (setpriv), the agent itself being root
set -u
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
	case $1 in -l | -p | -o | -i) shift 2 ;; *) shift ;; esac
done
host=${1:?usage: netns_agent.sh HOST COMMAND...}
shift
ns=""
for m in ${XRXE_MPI_HOSTS:-}; do
	[ "${m%%=*}" = "$host" ] && ns=${m#*=}
done
if [ -z "$ns" ]; then
	echo "netns_agent: unknown host '$host' (XRXE_MPI_HOSTS='${XRXE_MPI_HOSTS:-}')" >&2
	exit 255
fi
as_user=()
if [ -n "${XRXE_MPI_USER:-}" ]; then
	as_user=(setpriv --reuid="$XRXE_MPI_USER" --regid="$(id -g "$XRXE_MPI_USER")" --clear-groups
		env HOME=/tmp USER="$XRXE_MPI_USER")
fi
# A host has its own host name, IPC objects and processes: UTS, IPC and PID
# namespaces. UCX reaches a peer through System V or POSIX shared memory only
# if both share the IPC namespace, and through CMA (process_vm_readv) only if
# both share the PID namespace (uct_iface_local_is_reachable); otherwise the
# ranks of two "hosts" on this one kernel would bypass the network. Ranks
# started on the same host share them, as on a real host (and a /proc of
# their own: UCX names its POSIX segments by /proc/PID/fd). ssh hands the
# remote shell one command line: so do we.
exec ip netns exec "$ns" unshare --uts --ipc --pid --fork --kill-child --mount-proc \
	sh -c 'hostname "$0" && exec "$@"' "$host" \
	"${as_user[@]}" "${XRXE_MPI_XRXE:-xrxe}" run -- sh -c "$*"
