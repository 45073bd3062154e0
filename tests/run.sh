#!/usr/bin/env bash
# Run the test suites and print one summary line: "N passed, N failed, N skipped".
#
#   tests/run.sh [SUITE...]     SUITE: unit sanitize net interop fuzz (default: all)
#
# "sanitize" runs the unit test binaries of the ASan + UBSan build (build-san/,
# made by `make SANITIZE=1 unit-tests`).
#
# Every test speaks TAP: criterion binaries (--tap), shell scripts through
# tests/lib/tap.sh, the fuzz smoke runs through this script. A script that exits
# non-zero without reporting a failure counts as one failure, so a crash is
# never silent. Full output goes to $BUILD/test-logs/; failures are echoed.
#
# The interop suite (a QEMU/TCG guest: its host side mostly waits for the
# guest's one emulated CPU) runs in the background beside the other suites
# when any other is asked for too: it starts first, and its line comes when
# it has ended and the others have. XRXE_TEST_SERIAL=1 runs the suites one
# after the other instead, in the order given.
set -u
cd "$(dirname "$0")/.."
# Debian's own programs first: the tests run Debian's python3 (the one with
# python3-pyverbs) and tools. A user's PATH may put others ahead -- pyenv's
# python3 shim, a shell script that took 6 s per start at load 8 on 2 cores.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
BUILD=${BUILD:-build}
LOGS=$BUILD/test-logs
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
mkdir -p "$LOGS"
export BUILD XRXE_ROOT=$PWD
# Sanitizer reports fail the test that triggered them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(unit sanitize net interop fuzz)

for suite in "${suites[@]}"; do
	case $suite in
	unit | sanitize | net | interop | fuzz) ;;
	*)
		echo "tests/run.sh: unknown suite '$suite' (unit, sanitize, net, interop, fuzz)" >&2
		exit 2 ;;
	esac
done

pass=0 fail=0 skip=0
failed_names=()

# run_tap NAME COMMAND...: run, log, count its TAP lines.
run_tap() {
	local name=$1 t0=$SECONDS
	shift
	"$@" >"$LOGS/${name//\//_}.log" 2>&1
	tap_tally "$suite" "$name" "$?" "$t0"
}

# tap_tally SUITE NAME STATUS T0: count a finished test's TAP lines (its log),
# print its summary line, echo its failures and skips.
tap_tally() {
	local suite=$1 name=$2 rc=$3 t0=$4 log p f s
	log=$LOGS/${name//\//_}.log
	s=$(grep -cE '^ok .*# ?SKIP' "$log")
	p=$(( $(grep -cE '^ok ' "$log") - s ))
	f=$(grep -cE '^not ok ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name exited with status $rc" >>"$log"
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	printf '%-8s %-40s %4d passed %3d failed %3d skipped  (%ds)\n' \
		"$suite" "$name" "$p" "$f" "$s" $((SECONDS - t0))
	if [ "$f" -gt 0 ]; then
		failed_names+=("$name")
		grep -E -A12 '^not ok ' "$log" | sed 's/^/    /' | head -n 60
	fi
	grep -E '^ok .*# ?SKIP' "$log" | sed 's/^/    /'
}

# The fuzz smoke run of one libFuzzer target, as a TAP line.
fuzz_smoke() {
	local bin=$1 name corpus
	name=$(basename "$bin")
	corpus=tests/fuzz/corpus/${name#fuzz_}
	local work=$BUILD/fuzz-work/$name
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts"
	[ -d "$corpus" ] && cp -r "$corpus"/. "$work/corpus"/
	if "$bin" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$work/artifacts/" "$work/corpus" 2>&1; then
		echo "ok - $name: ${FUZZ_SECONDS}s without a crash or sanitizer report"
	else
		echo "not ok - $name found a crash: reproducer in $work/artifacts/"
	fi
}

# bg_start SUITE: SUITE's scripts one after the other in a background job;
# each one's log as run_tap writes it, its exit status and time in
# $LOGS/NAME.status. (Asynchronous commands of a non-interactive shell ignore
# SIGINT, so an interrupted run ends the job through its TERM trap.)
BG_PID="" BG_SUITE=""
bg_start() {
	BG_SUITE=$1
	(
		child=""
		trap '[ -n "$child" ] && kill "$child" 2>/dev/null; wait; exit 143' TERM
		for t in tests/"$BG_SUITE"/*.sh; do
			[ -x "$t" ] || continue
			name=$(basename "$t") t0=$EPOCHSECONDS
			rm -f "$LOGS/$name.status"
			"$t" >"$LOGS/$name.log" 2>&1 &
			child=$!
			wait "$child"
			echo "$? $((EPOCHSECONDS - t0))" >"$LOGS/$name.status"
		done
	) &
	BG_PID=$!
	printf '%-8s %s\n' "$BG_SUITE" "(in the background, beside the other suites: its lines come at the end)"
}
# bg_finish: wait for the background suite, then count each of its scripts.
bg_finish() {
	local t name rc secs
	wait "$BG_PID"
	BG_PID=""
	for t in tests/"$BG_SUITE"/*.sh; do
		[ -x "$t" ] || continue
		name=$(basename "$t")
		read -r rc secs 2>/dev/null <"$LOGS/$name.status" || rc=1 secs=0
		tap_tally "$BG_SUITE" "$name" "$rc" $((SECONDS - secs))
	done
}
# shellcheck disable=SC2317 # run by the traps
bg_stop() { [ -z "$BG_PID" ] || { kill "$BG_PID" 2>/dev/null; wait "$BG_PID" 2>/dev/null; }; }
trap bg_stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "${XRXE_TEST_SERIAL:-0}" != 1 ] && [ ${#suites[@]} -gt 1 ]; then
	for suite in "${suites[@]}"; do
		[ "$suite" = interop ] && bg_start interop && break
	done
fi

for suite in "${suites[@]}"; do
	case $suite in
	unit)
		for t in "$BUILD"/tests/unit/test_*; do
			[ -x "$t" ] && run_tap "$(basename "$t")" "$t" --tap=- --ascii -j1
		done
		for t in tests/unit/*.sh; do
			[ -x "$t" ] && run_tap "$(basename "$t")" "$t"
		done ;;
	sanitize)
		for t in build-san/tests/unit/test_*; do
			[ -x "$t" ] && run_tap "san:$(basename "$t")" "$t" --tap=- --ascii -j1
		done ;;
	net | interop)
		[ "$suite" = "$BG_SUITE" ] && continue
		for t in tests/"$suite"/*.sh; do
			[ -x "$t" ] && run_tap "$(basename "$t")" "$t"
		done ;;
	fuzz)
		for t in "$BUILD"/tests/fuzz/fuzz_*; do
			[ -x "$t" ] && run_tap "$(basename "$t")" fuzz_smoke "$t"
		done ;;
	esac
done
[ -z "$BG_PID" ] || bg_finish

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
