#!/bin/bash
# PID 1 of the kernel-rxe guest (copied to SHARE/init.sh by the interop test).
# Brings up eth0 and the rxe0 device, then runs jobs the host drops into
# SHARE/jobs: N.cmd (a bash script) is started in the background as soon as
# it appears, its output goes to N.out and its exit status to N.rc (written
# last, by rename, so N.rc existing means N.out is complete). Jobs run in
# numeric order of arrival; SHARE/jobs/stop ends the loop and powers off.
S=/share
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
exec >"$S/guest.log" 2>&1
# shellcheck source=/dev/null
source "$S/env" # GUEST_IP4 GUEST_IP6 GUEST_MTU [XRXE_SRC]
mount -t proc proc /proc; mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmpfs /run
# The checkout (XRXE_SRC: the guest-xrxed rows run its xrxed) may live
# under /tmp -- CI clones there -- which the guest's own tmpfs is about to
# cover: bind it under /run first.
if [ -n "${XRXE_SRC:-}" ]; then
	mkdir -p /run/xrxe-src && mount --bind "$XRXE_SRC" /run/xrxe-src
fi
mount -t tmpfs tmpfs /tmp
# libxdp keeps its dispatcher state in a bpffs.
mount -t bpf bpf /sys/fs/bpf
ip link set lo up
set -x
ip link set eth0 mtu "$GUEST_MTU" up
ip addr add "$GUEST_IP4/24" dev eth0
ip -6 addr add "$GUEST_IP6/64" dev eth0 nodad
modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0
# The kernel's connection manager for the librdmacm rows: rdma_ucm (the
# /dev/infiniband/rdma_cm stock librdmacm talks to) pulls in rdma_cm and ib_cm.
modprobe rdma_ucm
# Loss injection (netem on egress, ifb + netem on ingress) and counters.
for m in sch_netem ifb act_mirred cls_matchall sch_ingress; do modprobe "$m"; done
rdma link show
set +x
touch "$S/guest.ready"
# The loop waits without a process: under TCG every fork costs the one
# emulated CPU ~0.2 s, so a `sleep 0.1` per turn kept the guest busy while
# idle, taking that CPU from the jobs (and a host core from the host).
# read -t on a FIFO nobody writes to is bash's own timed wait.
if mkfifo /run/idle && exec 9<>/run/idle; then
	idle() { read -r -t 0.05 -u 9 _; }
else
	idle() { sleep 0.1; }
fi
n=1
while [ ! -e "$S/jobs/stop" ]; do
	if [ -e "$S/jobs/$n.cmd" ]; then
		(bash "$S/jobs/$n.cmd" >"$S/jobs/$n.out" 2>&1; echo $? >"$S/jobs/$n.rc.tmp"
		 mv "$S/jobs/$n.rc.tmp" "$S/jobs/$n.rc") &
		n=$((n + 1))
		continue
	fi
	idle
done
sync
echo o >/proc/sysrq-trigger
sleep 10
