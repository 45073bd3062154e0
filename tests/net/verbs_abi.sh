#!/usr/bin/env bash
# The verbs shim ($BUILD/lib/xrxe/libibverbs.so.1) as a drop-in for rdma-core
# 44's libibverbs.so.1 (docs/facts/verbs-abi.md):
#  1. its export table equals the installed library's: every name@version,
#     default (@@) or compat (@), with the same symbol type;
#  2. every stock client loads with it: ibverbs-utils, perftest (which pulls
#     in the real libmlx5/libefa and their PRIVATE_34 imports), rdmacm-utils,
#     every pyverbs module; no "symbol lookup error", "version ... not found"
#     or "no version information", and the library really is ours;
#  3. with no daemon: ibv_devices prints an empty list, perftest, the
#     pingpongs and pyverbs report "no device" without crashing;
#  4. the device-independent exports (strings, rate tables, sysfs and
#     kernel-ABI helpers) answer exactly like the real library, input by input;
#  5. with a daemon (root, $BUILD/bin/xrxed built): in a namespace the device
#     is listed and queried by the stock tools, devices of other namespaces
#     are not, ibv_rc_pingpong runs between two namespaces, and
#     tests/net/verbs_post.py checks the posting rules and each opcode's data
#     on a QP connected to itself.
#
#   tests/net/verbs_abi.sh       (BUILD=build-san etc. to test another build)
set -u
XRXE_ROOT=${XRXE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/lib/tap.sh
source "$XRXE_ROOT/tests/lib/tap.sh"

BUILD=${BUILD:-build}
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$XRXE_ROOT/$BUILD ;; esac
SHIM_DIR=$BDIR/lib/xrxe
SHIM=$SHIM_DIR/libibverbs.so.1
REAL=/usr/lib/x86_64-linux-gnu/libibverbs.so.1
PY=/usr/bin/python3 # pyverbs is only installed for Debian's interpreter

if [ ! -f "$SHIM" ]; then
	tap_fail "the shim is built ($SHIM; make)"
	exit 1
fi
if [ ! -f "$REAL" ]; then
	tap_skip "verbs ABI" "rdma-core's libibverbs.so.1 is not installed"
	exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
EMPTY_RUN=$TMP/run # no daemon sockets: the "no device" world
mkdir -p "$EMPTY_RUN"

# --- 1. export table -----------------------------------------------------------

# "TYPE name@VER" / "TYPE name@@VER" for every defined, versioned dynamic symbol.
exports() {
	readelf --dyn-syms -W "$1" | awk '$7 != "UND" && $8 ~ /@/ { print $4, $8 }' | sort -u
}
exports "$REAL" >"$TMP/real"
exports "$SHIM" >"$TMP/ours"
if diff -u "$TMP/real" "$TMP/ours" >"$TMP/diff"; then
	tap_ok "export table identical to rdma-core 44: $(wc -l <"$TMP/ours") symbols," \
		"$(grep -c '@@' "$TMP/ours") default, $(grep -vc '@@' "$TMP/ours") compat"
else
	tap_fail "export table differs from $REAL (- real, + ours)"
	tap_diag "$(tail -n +3 "$TMP/diff" | head -40)"
fi
nodes=$(readelf -V -W "$SHIM" | sed -n '/Version definition/,/Version needs/p' |
	grep -o 'Name: [A-Z_0-9.]*' | awk '{print $2}' | grep -v '^libibverbs' | sort | tr '\n' ' ')
want=$(readelf -V -W "$REAL" | sed -n '/Version definition/,/Version needs/p' |
	grep -o 'Name: [A-Z_0-9.]*' | awk '{print $2}' | grep -v '^libibverbs' | sort | tr '\n' ' ')
if [ "$nodes" = "$want" ]; then
	tap_ok "the 14 version nodes: $nodes"
else
	tap_fail "version nodes: got '$nodes', want '$want'"
fi
soname=$(readelf -d "$SHIM" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
needed=$(readelf -d "$SHIM" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
if [ "$soname" = libibverbs.so.1 ] && [ "$needed" = "libc.so.6 " ]; then
	tap_ok "SONAME libibverbs.so.1, NEEDED only libc.so.6"
else
	tap_fail "SONAME '$soname', NEEDED '$needed'"
fi
# Nothing but the versioned API leaks out (internal xrxe_ helpers are hidden).
leaks=$(readelf --dyn-syms -W "$SHIM" | awk '$7 != "UND" && $8 !~ /@/ && $4 != "SECTION" && NR > 3 && $8 != "" && $8 !~ /^IBVERBS_/ {print $8}')
if [ -z "$leaks" ]; then
	tap_ok "no unversioned exports"
else
	tap_fail "unversioned exports: $leaks"
fi
if readelf -lW "$SHIM" | grep -q 'GNU_STACK.*RWE'; then
	tap_fail "the shim asks for an executable stack"
else
	tap_ok "non-executable stack"
fi

# --- 2. every client loads with it ---------------------------------------------

LOADER_ERRORS='symbol lookup error|version `[^'"'"']*'"'"' not found|no version information|undefined symbol|cannot open shared object|error while loading'

# A timeout (124) or death by a signal (128+N); exit(-1) is 255 and fine.
crashed() { [ "$1" -eq 124 ] || { [ "$1" -gt 128 ] && [ "$1" -lt 160 ]; }; }

# load_check DESC COMMAND...: run with the shim and no daemons; fail on a
# loader complaint, a crash (signal), or if the loader picked another library.
load_check() {
	local desc=$1 out rc
	shift
	out=$(XRXE_RUN_DIR=$EMPTY_RUN LD_LIBRARY_PATH=$SHIM_DIR timeout 20 "$@" 2>&1 </dev/null)
	rc=$?
	if grep -Eq "$LOADER_ERRORS" <<<"$out"; then
		tap_fail "$desc loads with the shim"
		tap_diag "$(grep -E "$LOADER_ERRORS" <<<"$out" | head -5)"
	elif crashed "$rc"; then
		tap_fail "$desc loads with the shim (exit status $rc: timeout or signal)"
		tap_diag "$(tail -5 <<<"$out")"
	else
		tap_ok "$desc loads with the shim"
	fi
}

# The loader must resolve libibverbs.so.1 to the shim for every binary.
resolves_to_shim() {
	local bin=$1 path
	path=$(LD_LIBRARY_PATH=$SHIM_DIR ldd "$bin" 2>/dev/null | awk '$1 == "libibverbs.so.1" {print $3}')
	[ "$(readlink -f "$path")" = "$(readlink -f "$SHIM")" ]
}

clients=()
for b in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong \
	ibv_srq_pingpong ibv_xsrq_pingpong ibv_asyncwatch \
	ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat \
	ib_atomic_bw ib_atomic_lat rping udaddy ucmatose rdma_server rdma_client fi_info ucx_info; do
	p=$(command -v "$b") && clients+=("$p")
done
# What links libibverbs.so.1: the programs, except those that load it
# through a plugin -- UCX's ucx_info links only UCX, whose IB transport
# plugin links libibverbs -- where the plugin is what must resolve to it.
linkers=()
for p in "${clients[@]}"; do
	[ "$(basename "$p")" = ucx_info ] || linkers+=("$p")
done
for p in /usr/lib/*/ucx/libuct_ib.so.*; do
	[ -e "$p" ] && linkers+=("$p")
done
bad=()
for p in "${linkers[@]}"; do
	resolves_to_shim "$p" || bad+=("$(basename "$p")")
done
if [ ${#bad[@]} -eq 0 ]; then
	tap_ok "LD_LIBRARY_PATH resolves libibverbs.so.1 to the shim for ${#linkers[@]} programs and plugins"
else
	tap_fail "libibverbs.so.1 does not resolve to the shim for: ${bad[*]}"
fi
# An unknown option makes each print its usage and exit: it has loaded (all
# are BIND_NOW, so every import resolved) and nothing waits for a peer.
for p in "${clients[@]}"; do
	case $(basename "$p") in
	ibv_devices | ibv_devinfo) load_check "$(basename "$p")" "$p" ;;
	ib_*) load_check "$(basename "$p") -h (with the real libmlx5/libefa)" "$p" -h ;;
	fi_info | ucx_info) load_check "$(basename "$p")" "$p" -h ;;
	*) load_check "$(basename "$p") (usage)" "$p" --xrxe-no-such-option ;;
	esac
done
if [ -x "$PY" ] && [ -d /usr/lib/python3/dist-packages/pyverbs ]; then
	mapfile -t mods < <(cd /usr/lib/python3/dist-packages && find pyverbs -name '*.so' |
		sed 's/\.cpython.*//; s#/#.#g' | sort)
	out=$(XRXE_RUN_DIR=$EMPTY_RUN LD_LIBRARY_PATH=$SHIM_DIR "$PY" - "${mods[@]}" 2>&1 <<'EOF'
import importlib, sys
failed = []
for m in sys.argv[1:]:
    try:
        importlib.import_module(m)
    except Exception as e:
        failed.append("%s: %s" % (m, e))
maps = open("/proc/self/maps").read()
print("shim-loaded" if "lib/xrxe/libibverbs.so.1" in maps else "shim-NOT-loaded")
print("imported %d of %d" % (len(sys.argv) - 1 - len(failed), len(sys.argv) - 1))
for f in failed:
    print("FAILED", f)
EOF
)
	if grep -q '^shim-loaded' <<<"$out" && ! grep -q FAILED <<<"$out"; then
		tap_ok "pyverbs: $(grep imported <<<"$out") modules with the shim"
	else
		tap_fail "pyverbs modules import with the shim"
		tap_diag "$(head -20 <<<"$out")"
	fi
else
	tap_skip "pyverbs imports" "python3-pyverbs not installed"
fi

# --- 3. no daemon ------------------------------------------------------------------

run_nodev() {
	XRXE_RUN_DIR=$EMPTY_RUN LD_LIBRARY_PATH=$SHIM_DIR timeout 20 "$@" 2>&1 </dev/null
}
out=$(run_nodev ibv_devices)
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c . <<<"$out")" -eq 2 ] && grep -q 'node GUID' <<<"$out"; then
	tap_ok "no daemon: ibv_devices prints an empty list (exit 0)"
else
	tap_fail "no daemon: ibv_devices (exit $rc)"
	tap_diag "$out"
fi
out=$(run_nodev ibv_devinfo)
rc=$?
if ! crashed $rc && grep -q 'No IB devices found' <<<"$out"; then
	tap_ok "no daemon: ibv_devinfo says 'No IB devices found' (exit $rc)"
else
	tap_fail "no daemon: ibv_devinfo (exit $rc)"
	tap_diag "$out"
fi
for t in ib_write_lat ib_read_lat ib_atomic_lat ib_send_bw; do
	# The _lat tools crashed on a NULL list with an unset count (§5.3 #1).
	out=$(run_nodev "$t")
	rc=$?
	if ! crashed $rc && grep -q 'Did not detect devices' <<<"$out"; then
		tap_ok "no daemon: $t says 'Did not detect devices' (exit $rc, no crash)"
	else
		tap_fail "no daemon: $t (exit $rc)"
		tap_diag "$(head -5 <<<"$out")"
	fi
done
out=$(run_nodev ibv_rc_pingpong)
rc=$?
if ! crashed $rc && grep -q 'No IB devices found' <<<"$out"; then
	tap_ok "no daemon: ibv_rc_pingpong says 'No IB devices found' (exit $rc)"
else
	tap_fail "no daemon: ibv_rc_pingpong (exit $rc)"
	tap_diag "$out"
fi
if [ -x "$PY" ] && [ -d /usr/lib/python3/dist-packages/pyverbs ]; then
	out=$(run_nodev "$PY" -c 'import pyverbs.device as d; print(len(d.get_device_list()))')
	if [ "$out" = 0 ]; then
		tap_ok "no daemon: pyverbs get_device_list() is empty"
	else
		tap_fail "no daemon: pyverbs get_device_list()"
		tap_diag "$out"
	fi
fi
# A stale socket (a daemon that died without unlinking it) is not a device.
"$PY" -c 'import socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1])' \
	"$EMPTY_RUN/stale0.sock" 2>/dev/null
out=$(run_nodev ibv_devices)
if [ -S "$EMPTY_RUN/stale0.sock" ] && ! grep -q xrxe_stale0 <<<"$out"; then
	tap_ok "a stale socket (nobody listening) is not listed"
else
	tap_fail "a stale socket is not listed"
	tap_diag "$out"
fi
rm -f "$EMPTY_RUN/stale0.sock"

# --- 4. device-independent exports: same answers as rdma-core ----------------------

out=$("$PY" - "$REAL" "$SHIM" 2>&1 <<'EOF'
import ctypes, os, random, sys
real, ours = (ctypes.CDLL(p) for p in sys.argv[1:3])
bad = []
n = 0
def same(name, args, restype=ctypes.c_int, argtypes=None):
    global n
    fr, fo = getattr(real, name), getattr(ours, name)
    for f in (fr, fo):
        f.restype = restype
        if argtypes: f.argtypes = argtypes
    for a in args:
        n += 1
        r, o = fr(a), fo(a)
        if r != o:
            bad.append("%s(%r): real %r, ours %r" % (name, a, r, o))
for fn in ("ibv_wc_status_str", "ibv_event_type_str", "ibv_node_type_str", "ibv_port_state_str"):
    same(fn, range(-3, 64), ctypes.c_char_p, [ctypes.c_int])
same("ibv_rate_to_mult", range(-3, 64), argtypes=[ctypes.c_int])
same("ibv_rate_to_mbps", range(-3, 64), argtypes=[ctypes.c_int])
f = real.ibv_rate_to_mbps; f.restype = ctypes.c_int
mbps = sorted({f(i) for i in range(64)} | {0, 1, 2400, 50000, 100000, 400000, 10**7})
same("mbps_to_ibv_rate", mbps, argtypes=[ctypes.c_int])
f = real.ibv_rate_to_mult; f.restype = ctypes.c_int
mult = sorted({f(i) for i in range(64)} | set(range(-2, 600, 1)))
same("mult_to_ibv_rate", mult, argtypes=[ctypes.c_int])
for lib in (real, ours):
    lib.ibv_get_sysfs_path.restype = ctypes.c_char_p
n += 1
if real.ibv_get_sysfs_path() != ours.ibv_get_sysfs_path():
    bad.append("ibv_get_sysfs_path")
# ibv_read_sysfs_file: result and buffer, with and without room.
for d, fl in (("/proc/sys/kernel", "ostype"), ("/proc/sys/kernel", "osrelease"),
              ("/proc/sys/kernel", "no-such-file"), ("/proc", "version")):
    for size in (1, 4, 6, 256):
        res = []
        for lib in (real, ours):
            buf = ctypes.create_string_buffer(b"\xaa" * 300, 300)
            ctypes.set_errno(0)
            lib.ibv_read_sysfs_file.restype = ctypes.c_int
            r = lib.ibv_read_sysfs_file(d.encode(), fl.encode(), buf, ctypes.c_size_t(size))
            res.append((r, buf.raw[:size + 1]))
        n += 1
        if res[0] != res[1]:
            bad.append("ibv_read_sysfs_file(%s/%s, %d): real %r, ours %r" % (d, fl, size, res[0], res[1]))
# Kernel-ABI copies (librdmacm): random source, zeroed destination.
rnd = random.Random(4791)
for fn in ("ibv_copy_ah_attr_from_kern", "ibv_copy_qp_attr_from_kern",
           "ibv_copy_path_rec_from_kern", "ibv_copy_path_rec_to_kern"):
    for _ in range(20):
        src = bytes(rnd.getrandbits(8) for _ in range(512))
        outs = []
        for lib in (real, ours):
            s = ctypes.create_string_buffer(src, 512)
            d = ctypes.create_string_buffer(512)
            getattr(lib, fn)(d, s)
            outs.append(d.raw)
        n += 1
        if outs[0] != outs[1]:
            diff = [i for i in range(512) if outs[0][i] != outs[1][i]]
            bad.append("%s: bytes %s differ" % (fn, diff[:12]))
            break
for lib in (real, ours):
    lib.ibv_fork_init.restype = ctypes.c_int
n += 1
if ours.ibv_fork_init() != 0:
    bad.append("ibv_fork_init")
ours.ibv_is_fork_initialized.restype = ctypes.c_int
if ours.ibv_is_fork_initialized() != 2:  # IBV_FORK_UNNEEDED
    bad.append("ibv_is_fork_initialized != IBV_FORK_UNNEEDED")
print("checked %d inputs" % n)
for b in bad[:20]:
    print("MISMATCH", b)
EOF
)
if grep -q '^checked' <<<"$out" && ! grep -q MISMATCH <<<"$out"; then
	tap_ok "strings, rate tables, sysfs and kernel-ABI helpers match rdma-core ($(grep -o 'checked [0-9]* inputs' <<<"$out"))"
else
	tap_fail "device-independent exports match rdma-core"
	tap_diag "$out"
fi

# --- 5. against a daemon -------------------------------------------------------------

XRXED=$BDIR/bin/xrxed
if [ "$(id -u)" -ne 0 ]; then
	tap_skip "shim against a daemon" "needs root (namespaces)"
	exit 0
fi
if [ ! -x "$XRXED" ]; then
	tap_skip "shim against a daemon" "$XRXED not built"
	exit 0
fi
# shellcheck source=tests/lib/netns.sh
source "$XRXE_ROOT/tests/lib/netns.sh"
trap 'rm -rf "$TMP"; netns_cleanup' EXIT
netns_reap_stale
netns_pair 41 1500
ns_bg "$NS_A" bash -c "exec '$XRXED' -m skb '$IF_A' >'$TMP/xrxed-a.log' 2>&1"
ns_bg "$NS_B" bash -c "exec '$XRXED' -m skb '$IF_B' >'$TMP/xrxed-b.log' 2>&1"
for _ in $(seq 100); do
	[ -S "/run/xrxe/$IF_A.sock" ] && [ -S "/run/xrxe/$IF_B.sock" ] && break
	sleep 0.1
done
export LD_LIBRARY_PATH=$SHIM_DIR
out=$(ns_exec "$NS_A" ibv_devices 2>/dev/null)
if grep -q "xrxe_$IF_A" <<<"$out" && ! grep -q "xrxe_$IF_B" <<<"$out"; then
	tap_ok "ibv_devices in A lists xrxe_$IF_A and not B's device (another namespace)"
else
	tap_fail "ibv_devices in A lists only A's device"
	tap_diag "$out"
fi
out=$(XRXE_ALL_NETNS=1 ns_exec "$NS_A" ibv_devices 2>/dev/null)
if grep -q "xrxe_$IF_A" <<<"$out" && grep -q "xrxe_$IF_B" <<<"$out"; then
	tap_ok "XRXE_ALL_NETNS=1 lists both"
else
	tap_fail "XRXE_ALL_NETNS=1 lists both"
	tap_diag "$out"
fi
out=$(ns_exec "$NS_A" ibv_devinfo -v -d "xrxe_$IF_A" 2>&1)
if grep -q 'PORT_ACTIVE' <<<"$out" && grep -q 'link_layer:.*Ethernet' <<<"$out" &&
	grep -q "::ffff:$IP4_A, RoCE v2" <<<"$out" && grep -q 'transport:.*InfiniBand (0)' <<<"$out"; then
	tap_ok "ibv_devinfo -v: port active, Ethernet, GID ::ffff:$IP4_A RoCE v2"
else
	tap_fail "ibv_devinfo -v against the daemon"
	tap_diag "$(head -60 <<<"$out")"
fi
# One stock ping-pong across the veth: the whole shim data path (rings,
# doorbell, CQ polling, registered memory) against the real daemon.
ns_exec "$NS_B" timeout 30 ibv_rc_pingpong -g 1 -d "xrxe_$IF_B" -n 50 >"$TMP/srv" 2>&1 &
srv=$!
sleep 0.5
out=$(ns_exec "$NS_A" timeout 30 ibv_rc_pingpong -g 1 -d "xrxe_$IF_A" -n 50 "$IP4_B" 2>&1)
rc=$?
wait $srv
src=$?
if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q '50 iters' <<<"$out"; then
	tap_ok "ibv_rc_pingpong A -> B: $(grep iters <<<"$out")"
else
	tap_fail "ibv_rc_pingpong A -> B (client $rc, server $src)"
	tap_diag "$out"
	tap_diag "$(cat "$TMP/srv")"
fi
# Posting rules and every opcode's data, on a QP connected to itself (pyverbs).
if [ -x "$PY" ] && [ -d /usr/lib/python3/dist-packages/pyverbs ]; then
	out=$(ns_exec "$NS_A" timeout 60 "$PY" "$XRXE_ROOT/tests/net/verbs_post.py" "xrxe_$IF_A" 1 2>&1)
	rc=$?
	grep -E '^(ok|not ok) ' <<<"$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$out"; then
		tap_fail "verbs_post.py exited with status $rc"
		tap_diag "$(tail -15 <<<"$out")"
	fi
fi
exit 0
