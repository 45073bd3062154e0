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

pass=0 fail=0 skip=0
failed_names=()

# run_tap NAME COMMAND...: run, log, count its TAP lines.
run_tap() {
	local name=$1 log rc p f s
	shift
	log=$LOGS/${name//\//_}.log
	local t0=$SECONDS
	"$@" >"$log" 2>&1
	rc=$?
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
		for t in tests/"$suite"/*.sh; do
			[ -x "$t" ] && run_tap "$(basename "$t")" "$t"
		done ;;
	fuzz)
		for t in "$BUILD"/tests/fuzz/fuzz_*; do
			[ -x "$t" ] && run_tap "$(basename "$t")" fuzz_smoke "$t"
		done ;;
	*)
		echo "tests/run.sh: unknown suite '$suite' (unit, sanitize, net, interop, fuzz)" >&2
		exit 2 ;;
	esac
done

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
