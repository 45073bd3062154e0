# shellcheck shell=bash
# The CM bench's QEMU guest (Debian's kernel with rdma_rxe, booted by
# tests/interop/lib/rxe_vm.sh, which is only sourced here): start it in a
# namespace of its own on a tap, and run jobs in it through the shared
# directory (tests/bench/lib/cm_guest_init.sh is its PID 1).
#
#   source tests/lib/netns.sh; source tests/bench/lib/cm_guest.sh
#   cm_guest_boot SHARE NS TAP IP4 [TIMEOUT_S]   0 once the guest is up (QEMU's
#                                                threads at nice CM_GUEST_NICE, -10)
#   cm_guest_run SCRIPT [TIMEOUT_S]              the job's output on stdout,
#                                                its exit status (124: no end)
#   cm_guest_stop                                power off, wait for QEMU
#
# The guest sees the host's root filesystem read-only, so every Debian tool
# is there; /tmp and /run are its own, and SHARE is /share inside.

# shellcheck source=../../interop/lib/rxe_vm.sh
source "$XRXE_ROOT/tests/interop/lib/rxe_vm.sh"

CM_GUEST_SHARE='' CM_GUEST_PID=''

cm_guest_boot() {
	local share=$1 ns=$2 tap=$3 ip4=$4 lim=${5:-180} t
	CM_GUEST_SHARE=$share
	mkdir -p "$share/jobs" || return 1
	cp "$XRXE_ROOT/tests/bench/lib/cm_guest_init.sh" "$share/init.sh" || return 1
	printf 'GUEST_IP4=%s\nGUEST_MTU=1500\n' "$ip4" >"$share/env"
	echo 0 >"$share/jobs/.last"
	ip netns add "$ns" || return 1
	NETNS_CREATED+=("$ns")
	ip -n "$ns" link set lo up &&
		ip -n "$ns" tuntap add dev "$tap" mode tap &&
		ip -n "$ns" link set "$tap" up || return 1
	rxe_vm_boot "$share" "$tap" 52:54:00:77:42:01 "$ns"
	CM_GUEST_PID=$RXE_VM_PID
	netns_at_exit "cm_guest_stop"
	t=$SECONDS
	while [ ! -e "$share/guest.ready" ] && kill -0 "$CM_GUEST_PID" 2>/dev/null &&
		[ $((SECONDS - t)) -lt "$lim" ]; do
		sleep 0.2
	done
	[ -e "$share/guest.ready" ] || return 1
	# The guest is the measuring instrument for both stacks: give its
	# threads (the TCG vCPU is one; threads started later inherit it)
	# priority over whatever else runs on the host, so the other jobs on
	# the machine shake it less.
	if [ "${CM_GUEST_NICE:--10}" != 0 ]; then
		for t in /proc/"$CM_GUEST_PID"/task/*; do
			renice -n "${CM_GUEST_NICE:--10}" -p "${t##*/}" >/dev/null 2>&1
		done
	fi
}

# cm_guest_run SCRIPT [TIMEOUT_S]: queue a job, wait for its end.
cm_guest_run() {
	local s=$CM_GUEST_SHARE job lim=$((${2:-120} * 10)) i=0 t0=$SECONDS rc
	job=$(($(cat "$s/jobs/.last") + 1))
	echo "$job" >"$s/jobs/.last"
	printf '%s\n' "$1" >"$s/jobs/.tmp"
	mv "$s/jobs/.tmp" "$s/jobs/$job.cmd"
	while [ ! -e "$s/jobs/$job.rc" ]; do
		i=$((i + 1))
		if [ $i -gt "$lim" ] || ! kill -0 "$CM_GUEST_PID" 2>/dev/null; then
			cat "$s/jobs/$job.out" 2>/dev/null
			return 124
		fi
		sleep 0.1
	done
	cat "$s/jobs/$job.out"
	rc=$(cat "$s/jobs/$job.rc")
	# what each job cost, for a slow run (CM_KEEP keeps it)
	echo "job $job: $((SECONDS - t0)) s, exit $rc: $1" >>"$s/jobs.log"
	return "$rc"
}

cm_guest_stop() {
	[ -n "$CM_GUEST_PID" ] || return 0
	touch "$CM_GUEST_SHARE/jobs/stop"
	local i
	for i in $(seq 100); do
		kill -0 "$CM_GUEST_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill "$CM_GUEST_PID" 2>/dev/null
	wait "$CM_GUEST_PID" 2>/dev/null
	CM_GUEST_PID=
}
