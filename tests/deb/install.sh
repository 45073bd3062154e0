#!/usr/bin/env bash
# make test-deb: the Debian package (make deb) in a clean Debian 12 root.
#
# mmdebstrap makes a minimal bookworm root from Debian's mirror (kept in
# /var/tmp/xrxe-deb-root.tar.zst between runs: a clean copy is unpacked each
# time). In it:
#   - apt installs the package with its dependencies; the files are where the
#     FHS and the package say (programs, shims under /usr/lib/MULTIARCH/xrxe,
#     BPF objects, man pages, unit), and rdma-core's libibverbs.so.1 is still
#     what the dynamic linker finds;
#   - reinstalling it over itself (dpkg -i, the upgrade path) works;
#   - the unit's ExecStart line, run as systemd would in a network namespace
#     (chroot, without systemd), brings up xrxe_IFACE, and ibv_rc_pingpong
#     through the installed `xrxe run` talks to a daemon on the host;
#   - purge leaves the root exactly as before the package (every file).
# Not part of `make test`: building the root takes minutes and needs the
# mirror. Says SKIP with the reason when the mirror or mmdebstrap is missing.
#
#   tests/deb/install.sh     (root; after make deb)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"
tap_require_root "deb/install"
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"
BUILD=${BUILD:-build}
B=$XRXE_ROOT/$BUILD/bin
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

deb=$(ls "$XRXE_ROOT/$BUILD"/deb/xrxe_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || { tap_fail "make deb built the package ($BUILD/deb/)"; exit 1; }
command -v mmdebstrap >/dev/null || { tap_skip "the package in a clean Debian 12 root" "no mmdebstrap (make deps)"; exit 0; }

netns_reap_stale
netns_tmpdir TMP
R=$TMP/root
CACHE=/var/tmp/xrxe-deb-root.tar.zst
if [ ! -s "$CACHE" ]; then
	tap_diag "building a clean bookworm root with mmdebstrap (once; cached in $CACHE)"
	if ! mmdebstrap --variant=apt --include=ca-certificates bookworm "$CACHE.tmp.tar.zst" \
		"deb http://deb.debian.org/debian bookworm main" \
		"deb http://deb.debian.org/debian bookworm-updates main" \
		"deb http://deb.debian.org/debian-security bookworm-security main" >"$TMP/mmdebstrap.log" 2>&1; then
		tap_skip "the package in a clean Debian 12 root" "mmdebstrap failed (mirror unreachable?): $(tail -n 1 "$TMP/mmdebstrap.log")"
		exit 0
	fi
	mv "$CACHE.tmp.tar.zst" "$CACHE"
fi
mkdir -p "$R" && tar -C "$R" --zstd -xf "$CACHE" || { tap_fail "the cached root unpacks"; exit 1; }
cp /etc/resolv.conf "$R/etc/resolv.conf"
cp "$deb" "$R/tmp/"
debname=$(basename "$deb")

# in_root CMD...: run in the root with /proc, /sys and /dev (a private mount
# namespace, so nothing stays mounted).
in_root() {
	unshare --mount --propagation private sh -c '
		r=$0
		mount -t proc proc "$r/proc" && mount -t sysfs sys "$r/sys" && mount --rbind /dev "$r/dev" &&
		exec chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive "$@"' "$R" "$@"
}
# in_root_ns NS CMD...: the same in network namespace NS (with its own /sys).
in_root_ns() {
	local ns=$1
	shift
	ip netns exec "$ns" unshare --mount --propagation private sh -c '
		r=$0
		mount -t proc proc "$r/proc" && mount -t sysfs sys "$r/sys" && mount --rbind /dev "$r/dev" &&
		exec chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"' "$R" "$@"
}

# Everything in the root but dpkg's and apt's own records and logs.
snapshot() {
	(cd "$R" && find . -xdev \( -path ./var/lib/dpkg -o -path ./var/lib/apt -o -path ./var/cache \
		-o -path ./var/log -o -path ./tmp -o -path ./proc -o -path ./sys -o -path ./dev \) -prune \
		-o -printf '%p %m %s %U\n' | sort)
}

tap_check "apt installs the package and its dependencies in the clean root" \
	in_root sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends /tmp/$debname ibverbs-utils iproute2"
tap_check "the package's files are in their places" in_root sh -c "
	set -e
	test -x /usr/sbin/xrxed && test -x /usr/bin/xrxe && test -x /usr/sbin/xrxe-impair
	test -f /usr/lib/$MA/xrxe/libibverbs.so.1 && test -f /usr/lib/$MA/xrxe/librdmacm.so.1
	test -f /usr/lib/$MA/xrxe/bpf/xrxe_steer.bpf.o && test -f /usr/lib/$MA/xrxe/bpf/xrxe_impair.bpf.o
	for m in man8/xrxe.8 man8/xrxed.8 man8/xrxe-impair.8 man7/xrxe.7; do test -f /usr/share/man/\$m.gz; done
	test -f /lib/systemd/system/xrxed@.service
	test -f /usr/share/doc/xrxe/copyright && test -f /usr/share/doc/xrxe/examples/netns.conf &&
	test -f /usr/share/doc/xrxe/examples/nonroot.conf"
tap_check "rdma-core's libibverbs.so.1 and librdmacm.so.1 are still the linker's" in_root sh -c "
	ldconfig -p | grep -E 'lib(ibverbs|rdmacm)\\.so\\.1 ' | grep -v /xrxe/ | grep -q libibverbs &&
	! ldconfig -p | grep -q /xrxe/ &&
	dpkg -S \$(readlink -f /usr/lib/$MA/libibverbs.so.1) | grep -q '^libibverbs1'"
tap_check "man xrxed renders from the package" in_root sh -c 'zcat /usr/share/man/man8/xrxed.8.gz | grep -q "^.TH \"XRXED\""'

# Purge, then the state every later check compares with.
tap_check "dpkg --purge removes it" in_root dpkg --purge xrxe
S0=$(snapshot)
tap_check "dpkg -i installs it again (dependencies present)" in_root dpkg -i "/tmp/$debname"
tap_check "dpkg -i over itself (the upgrade path)" in_root dpkg -i "/tmp/$debname"

# The unit's ExecStart in a namespace, as systemd would run it.
netns_pair 1 1500
line=$(sed -n 's/^ExecStart=//p' "$R/lib/systemd/system/xrxed@.service" | sed "s/%i/$IF_B/g; s/\$XRXED_OPTS//")
tap_diag "ExecStart: $line"
ns_bg "$NS_A" sh -c "exec '$B/xrxed' '$IF_A' >>'$TMP/xrxed-a.log' 2>&1"
# shellcheck disable=SC2086 # the unit's line splits into words
ns_bg "$NS_B" unshare --mount --propagation private sh -c '
	r=$0
	mount -t proc proc "$r/proc" && mount -t sysfs sys "$r/sys" && mount --rbind /dev "$r/dev" &&
	exec chroot "$r" "$@" >>"$r/../xrxed-b.log" 2>&1' "$R" $line
SVC=$NETNS_LAST_PID
netns_wait_file "/run/xrxe/$IF_A.sock" 30
tap_check "the installed xrxed serves $IF_B (its socket appears in the root's /run)" \
	netns_wait_file "$R/run/xrxe/$IF_B.sock" 60
export -f in_root_ns
export R IF_B
tap_check "the installed xrxe run lists xrxe_$IF_B" bash -c \
	'"$@" | grep -q "xrxe_$IF_B"' _ in_root_ns "$NS_B" /usr/bin/xrxe run -- ibv_devices
PORT=18790
in_root_ns "$NS_B" timeout 60 /usr/bin/xrxe run -- ibv_rc_pingpong -g 1 -n 20 -s 2048 -p $PORT \
	>"$TMP/pp-server.log" 2>&1 &
spid=$!
for i in $(seq 200); do
	ip netns exec "$NS_B" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
	sleep 0.1
done
if ip netns exec "$NS_A" timeout 60 "$B/xrxe" run -- ibv_rc_pingpong -g 1 -n 20 -s 2048 -p $PORT "$IP4_B" \
	>"$TMP/pp-client.log" 2>&1 && wait $spid; then
	tap_ok "ibv_rc_pingpong: the packaged device (server) and the host's build (client)"
else
	tap_fail "ibv_rc_pingpong: the packaged device and the host's build"
	tail -n 5 "$TMP/pp-server.log" "$TMP/pp-client.log" | sed 's/^/#   /'
fi
kill -TERM "$SVC"
wait "$SVC"
tap_check "the installed xrxed stops cleanly on SIGTERM" test $? = 0

tap_check "dpkg --purge removes it again" in_root dpkg --purge xrxe
S1=$(snapshot)
tap_check "after purge the root is as before: no file left, none changed" \
	diff <(echo "$S0") <(echo "$S1")
