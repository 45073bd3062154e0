# shellcheck shell=bash
# connect_delay_build WHAT: build tests/lib/connect_delay.c (an LD_PRELOAD
# whose rdma_connect waits XRXE_CONNECT_DELAY_MS, default 500, before the
# real one) into $TMP and set CONNECT_DELAY to its path and CONNECT_DELAY_ENV
# to the command prefix that preloads it (`env LD_PRELOAD=...`). A client
# that would otherwise win a server's race to rdma_listen (perftest -R,
# qperf -cm1; connect_delay.c says why) runs as "${CONNECT_DELAY_ENV[@]}"
# PROGRAM. If the compiler fails, both are empty and a TAP comment says that
# WHAT runs without it. Needs TMP, XRXE_ROOT and tests/lib/tap.sh.
connect_delay_build() {
	CONNECT_DELAY=$TMP/connect_delay.so
	CONNECT_DELAY_ENV=(env LD_PRELOAD="$CONNECT_DELAY")
	if ! ${CC:-cc} -O2 -shared -fPIC -o "$CONNECT_DELAY" \
		"$XRXE_ROOT/tests/lib/connect_delay.c" -ldl >"$TMP/connect_delay.log" 2>&1; then
		tap_diag "connect_delay.so not built, $1 without it: $(head -n 3 "$TMP/connect_delay.log")"
		CONNECT_DELAY=
		CONNECT_DELAY_ENV=()
	fi
}
