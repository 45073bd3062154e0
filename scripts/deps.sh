#!/usr/bin/env bash
# Debian 12 packages xrxe needs to build, test and demo.
#
#   scripts/deps.sh list      print the package list
#   scripts/deps.sh missing   print the packages not installed
#   scripts/deps.sh ensure    install only what is missing (quiet when nothing is)
#   scripts/deps.sh install   same, always reporting what it did
#   ... deb                   with any of them: also what `make deb` needs
#
# Installing needs root; without it the missing list is printed and the exit
# status is 1, so `make test` fails with a clear message instead of half-running.
set -euo pipefail

PACKAGES=(
	# build
	build-essential pkg-config clang llvm libclang-rt-14-dev
	libbpf-dev bpftool libxdp-dev xdp-tools libelf-dev zlib1g-dev
	libisal-dev libibverbs-dev librdmacm-dev libmnl-dev libpcap-dev
	# tests
	libcriterion-dev iproute2 iputils-ping iperf3 tshark python3 kmod
	# real verbs clients (the shim's users) and the kernel-rxe peer
	ibverbs-utils perftest rdmacm-utils python3-pyverbs libfabric-bin qperf
	# the guest runs kernel rxe through rdma-core's rxe provider (only a Recommends of libibverbs1)
	qemu-system-x86 busybox-static ibverbs-providers
	# UCX and MPI over xrxe (tests/net/ucx_mpi.sh, tests/bench/mpi.sh); both MPIs are
	# installed, so the tests call mpicc.openmpi / mpirun.openmpi and mpicc.mpich /
	# mpirun.mpich, never the update-alternatives names mpicc / mpirun
	ucx-utils openmpi-bin libopenmpi-dev python3-mpi4py mpich libmpich-dev
	# plots
	gnuplot-nox
	# operations: man pages (groff), the unit (systemd-analyze)
	groff-base systemd
)
# Only `make deb` and `make test-deb` need these (`scripts/deps.sh ensure deb`):
# `make test` does not build the package, so a CI machine does not fetch them.
DEB_PACKAGES=(debhelper lintian mmdebstrap zstd)
[ "${2:-}" = deb ] && PACKAGES+=("${DEB_PACKAGES[@]}")

# One dpkg-query for the whole list (one per package took seconds of every
# `make test` on a loaded machine).
missing() {
	local p name status
	local -A ok=()
	while read -r name status; do
		[ "$status" = "install ok installed" ] && ok[$name]=1
	done < <(dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null)
	for p in "${PACKAGES[@]}"; do
		[ -n "${ok[$p]:-}" ] || echo "$p"
	done
}

install_missing() {
	local verbose=$1 need
	mapfile -t need < <(missing)
	if [ ${#need[@]} -eq 0 ]; then
		[ "$verbose" = 1 ] && echo "deps: all ${#PACKAGES[@]} packages present"
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: missing packages (run 'make deps' as root): ${need[*]}" >&2
		return 1
	fi
	echo "deps: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# tshark asks whether non-root users may capture; the answer does not matter here.
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	mapfile -t need < <(missing)
	if [ ${#need[@]} -ne 0 ]; then
		echo "deps: still missing after apt-get: ${need[*]}" >&2
		return 1
	fi
}

case ${1:-ensure} in
list) printf '%s\n' "${PACKAGES[@]}" ;;
missing) missing ;;
ensure) install_missing 0 ;;
install) install_missing 1 ;;
*) echo "usage: scripts/deps.sh list|missing|ensure|install [deb]" >&2; exit 2 ;;
esac
