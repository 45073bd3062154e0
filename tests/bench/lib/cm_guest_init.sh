#!/bin/bash
# PID 1 of the CM bench's guest (tests/bench/cm.sh copies it to SHARE/init.sh;
# Debian's kernel under QEMU, booted by tests/interop/lib/rxe_vm.sh). Adapted
# from tests/interop/lib/guest_init.sh, kept separate so the two can change
# apart. Brings up eth0 and rxe0 (rdma_rxe) with the kernel's connection
# manager (rdma_ucm: /dev/infiniband/rdma_cm for rdma-core's librdmacm), then
# runs the jobs the host drops into SHARE/jobs: N.cmd (a bash script) runs in
# the background as soon as it appears, its output goes to N.out and its exit
# status to N.rc (written last, by rename: N.rc existing means N.out is
# complete). SHARE/jobs/stop ends the loop and powers the guest off.
S=/share
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc; mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp; mount -t tmpfs tmpfs /run
# xrxed pins its maps here (it would mount it itself, but say it once).
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
ip link set lo up
exec >"$S/guest.log" 2>&1
# shellcheck source=/dev/null
source "$S/env" # GUEST_IP4 GUEST_MTU
set -x
ip link set eth0 mtu "$GUEST_MTU" up
ip addr add "$GUEST_IP4/24" dev eth0
modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0
modprobe rdma_ucm
rdma link show
set +x
touch "$S/guest.ready"
n=1
while [ ! -e "$S/jobs/stop" ]; do
	if [ -e "$S/jobs/$n.cmd" ]; then
		(bash "$S/jobs/$n.cmd" >"$S/jobs/$n.out" 2>&1; echo $? >"$S/jobs/$n.rc.tmp"
		 mv "$S/jobs/$n.rc.tmp" "$S/jobs/$n.rc") &
		n=$((n + 1))
		continue
	fi
	sleep 0.1
done
sync
echo o >/proc/sysrq-trigger
sleep 10
