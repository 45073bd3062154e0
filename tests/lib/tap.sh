# shellcheck shell=bash
# TAP output for shell test scripts: tests/run.sh counts "ok", "not ok" and
# "# SKIP" lines. Source this file, then call the functions below.

# Debian's own programs first: the tests run Debian's python3 (the one with
# python3-pyverbs) and tools. A user's PATH may put others ahead -- pyenv's
# python3 shim, a shell script that took 6 s per start at load 8 on 2 cores.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH

TAP_FAILED=0

tap_ok()   { echo "ok - $*"; }
tap_fail() { echo "not ok - $*"; TAP_FAILED=1; }
# tap_skip DESCRIPTION REASON
tap_skip() { echo "ok - $1 # SKIP $2"; }
# tap_check DESCRIPTION COMMAND...: ok if the command succeeds; its output is
# shown (as TAP comments) only when it fails.
tap_check() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then
		tap_ok "$desc"
	else
		tap_fail "$desc"
		printf '%s\n' "$out" | sed 's/^/#   /' | tail -n 30
	fi
}
# tap_diag TEXT: a comment line
tap_diag() { printf '%s\n' "$*" | sed 's/^/# /'; }

# Skip the whole script (one SKIP line) unless we are root.
tap_require_root() {
	if [ "$(id -u)" -ne 0 ]; then
		tap_skip "$1" "needs root (network namespaces, XDP)"
		exit 0
	fi
}
