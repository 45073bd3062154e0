# shellcheck shell=bash
# The Linux kernel Soft-RoCE peer (rdma_rxe) as a QEMU guest, for the interop
# suite. Debian's stock kernel boots under TCG (no KVM needed) with the host's
# root filesystem mounted read-only over 9p plus a tmpfs overlay, so the
# same ibverbs-utils, perftest and tests/verbs binaries run on both sides.
#
#   source tests/interop/lib/rxe_vm.sh
#   rxe_vm_unavailable           prints why QEMU cannot run here (empty: it can)
#   rxe_vm_prepare               kernel + modules + initrd into $RXE_VM_CACHE (once)
#   rxe_vm_boot SHARE TAP MAC NS pid in RXE_VM_PID; the guest runs SHARE/init.sh
#                                with eth0 = the (existing) tap TAP in namespace NS
#
# The NIC has no option ROM (romfile=): the kernel is loaded directly, no
# network boot, a faster start.
# The cache survives between runs (/var/tmp); a fresh machine fills it
# automatically from the Debian mirror through apt (linux-image-amd64).
# Preparation holds a lock, so parallel test runs do not race on it.

RXE_VM_CACHE=${RXE_VM_CACHE:-/var/tmp/xrxe-rxe-vm}
RXE_VM_KPKG=${RXE_VM_KPKG:-linux-image-amd64}

rxe_vm_unavailable() {
	command -v qemu-system-x86_64 >/dev/null || { echo "no qemu-system-x86_64 (make deps)"; return; }
	[ -c /dev/net/tun ] || { echo "no /dev/net/tun"; return; }
	command -v busybox >/dev/null || { echo "no busybox (make deps)"; return; }
	[ -e /usr/bin/busybox ] || echo "busybox is not /usr/bin/busybox (busybox-static)"
}

# Modules the initrd loads before the root filesystem exists: virtio PCI,
# virtio-net, 9p over virtio, overlayfs. Order matters (dependencies first).
RXE_VM_EARLY_MODULES="drivers/virtio/virtio_ring drivers/virtio/virtio
	drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev
	drivers/virtio/virtio_pci net/core/failover drivers/net/net_failover
	drivers/net/virtio_net net/9p/9pnet net/9p/9pnet_virtio fs/netfs/netfs
	fs/fscache/fscache fs/9p/9p fs/overlayfs/overlay"

_rxe_vm_build() {
	local c=$RXE_VM_CACHE deb kver m names=""
	rm -rf "$c/tmp" && mkdir -p "$c/tmp" || return 1
	# The concrete image package linux-image-amd64 depends on today.
	deb=$(apt-cache depends "$RXE_VM_KPKG" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	if [ -z "$deb" ]; then
		apt-get update -qq >/dev/null 2>&1
		deb=$(apt-cache depends "$RXE_VM_KPKG" | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	fi
	[ -n "$deb" ] || { echo "rxe_vm: cannot resolve $RXE_VM_KPKG" >&2; return 1; }
	(cd "$c/tmp" && apt-get download "$deb" >/dev/null 2>&1) ||
		{ echo "rxe_vm: apt-get download $deb failed" >&2; return 1; }
	dpkg-deb -x "$c"/tmp/"$deb"_*.deb "$c/tmp/root" || return 1
	kver=$(ls "$c/tmp/root/lib/modules")
	depmod -b "$c/tmp/root" "$kver" || return 1
	mkdir -p "$c"/tmp/initrd/{bin,mod,proc,sys,dev,lower,upper,newroot}
	cp /usr/bin/busybox "$c/tmp/initrd/bin/" || return 1
	for m in $RXE_VM_EARLY_MODULES; do
		cp "$c/tmp/root/lib/modules/$kver/kernel/$m.ko" "$c/tmp/initrd/mod/" || return 1
		names+=" ${m##*/}"
	done
	# Stage 1: load the modules, build / = host root (ro, 9p) + tmpfs
	# overlay, mount the kernel's modules and the share, hand over to
	# SHARE/init.sh (the test's own guest script) as PID 1.
	cat >"$c/tmp/initrd/init" <<-INIT
	#!/bin/busybox sh
	/bin/busybox --install -s /bin
	mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
	for m in $names; do insmod /mod/\$m.ko || echo "initrd: insmod \$m failed"; done
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /lower
	mount -t tmpfs tmpfs /upper; mkdir -p /upper/u /upper/w
	mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w /newroot
	mkdir -p /newroot/lib/modules /newroot/share
	mount -t 9p -o trans=virtio,version=9p2000.L,ro mods /newroot/lib/modules
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share /newroot/share
	umount /proc /sys; mount --move /dev /newroot/dev 2>/dev/null
	exec switch_root /newroot /share/init.sh
	INIT
	chmod +x "$c/tmp/initrd/init"
	(cd "$c/tmp/initrd" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 >../initrd.gz) || return 1
	cp "$c/tmp/root/boot/vmlinuz-$kver" "$c/tmp/vmlinuz" || return 1
	rm -rf "$c/root" "$c/initrd.gz" "$c/vmlinuz" "$c"/tmp/initrd "$c"/tmp/*.deb
	mv "$c/tmp/root" "$c/root" && mv "$c/tmp/initrd.gz" "$c/initrd.gz" && mv "$c/tmp/vmlinuz" "$c/vmlinuz"
	rm -rf "$c/tmp"
}

rxe_vm_prepare() {
	mkdir -p "$RXE_VM_CACHE" || return 1
	(
		flock 9
		[ -s "$RXE_VM_CACHE/vmlinuz" ] && [ -s "$RXE_VM_CACHE/initrd.gz" ] && exit 0
		_rxe_vm_build
	) 9>"$RXE_VM_CACHE/.lock"
}

# rxe_vm_boot SHARE TAP MAC NS: start QEMU in the background (console output
# to SHARE/console.log). The guest's PID 1 is SHARE/init.sh; it must power
# the guest off when done (echo o > /proc/sysrq-trigger).
#
# QEMU runs at nice -10 (RXE_VM_NICE; root only, else nice warns and runs it
# as it is): the guest is the peer on a timer budget. A host task that takes
# its CPU stops the guest's whole kernel, rxe's ACKs with it, and xrxe gives
# up after 7 Local ACK Timeouts (~0.5 s at perftest's 67 ms) where a real
# peer would have answered; make test runs the other suites beside it.
RXE_VM_NICE=${RXE_VM_NICE:--10}
rxe_vm_boot() {
	local share=$1 tap=$2 mac=$3 ns=$4
	ip netns exec "$ns" nice -n "$RXE_VM_NICE" qemu-system-x86_64 -accel tcg -cpu max -m 1024 -smp 1 \
		-nographic -no-reboot -nodefaults -serial "file:$share/console.log" \
		-kernel "$RXE_VM_CACHE/vmlinuz" -initrd "$RXE_VM_CACHE/initrd.gz" \
		-append "console=ttyS0 panic=-1 quiet" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$RXE_VM_CACHE/root/lib/modules,mount_tag=mods,security_model=none,readonly=on" \
		-virtfs "local,path=$share,mount_tag=share,security_model=none" \
		-netdev "tap,id=n0,ifname=$tap,script=no,downscript=no" \
		-device "virtio-net-pci,netdev=n0,mac=$mac,romfile=" </dev/null >"$share/qemu.log" 2>&1 &
	# shellcheck disable=SC2034 # the result, for the caller
	RXE_VM_PID=$!
}
