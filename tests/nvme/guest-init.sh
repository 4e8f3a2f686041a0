#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# guest-init.sh - /init of make check-nvme's QEMU guest (check-nvme.sh
# builds the initramfs): busybox, fuse.ko, the mqfs programs and fio.
# The guest has one emulated NVMe namespace, /dev/ng0n1 (generic) and
# /dev/nvme0n1 (its block device), and runs, each step reported on the
# console as "MQFS-NVME-RESULT PASS|FAIL step":
#   - the driver's own test (nvme_check) on ng0n1 (NVMe commands) and on
#     nvme0n1 (the block path);
#   - mqfs-bench 4k randread and randwrite at QD32 on both paths, none and
#     mq-deadline ("MQFS-NVME-BENCH path sched rw iops" lines);
#   - the product on each path: mkfs.mqfs, mount, an fio verify job
#     (buffered and O_DIRECT), a file workload, unmount (the daemon must
#     exit 0), fsck.mqfs clean, remount and verify again, unmount, fsck.
# Then "MQFS-NVME-DONE ok=N fail=M" and power off.
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
ok=0 fail=0

step() {
	name=$1
	shift
	echo "MQFS-NVME-STEP $name"
	if "$@"; then
		echo "MQFS-NVME-RESULT PASS $name"
		ok=$((ok + 1))
	else
		echo "MQFS-NVME-RESULT FAIL $name"
		fail=$((fail + 1))
	fi
}

# mqfs_bench_s and mqfs_bench_reps come from the kernel command line
# (check-nvme.sh): seconds per run, and rounds, the two paths alternating.
bench() {
	for rep in $(seq 1 "${mqfs_bench_reps:-1}"); do
	for sched in none mq-deadline; do
		for rw in randread randwrite; do
			for dev in /dev/ng0n1 /dev/nvme0n1; do
				out=$(mqfs-bench --dev "$dev" --sched "$sched" \
					--rw "$rw" --bs 4k --qd 32 \
					--runtime "${mqfs_bench_s:-2}" \
					--size 256m --fixedbufs) || return 1
				iops=$(echo "$out" | sed -n 's/^ *iops=\([0-9]*\).*/\1/p')
				errors=$(echo "$out" | sed -n 's/.* errors=\([0-9]*\).*/\1/p')
				[ -n "$iops" ] && [ "$errors" = 0 ] || {
					echo "$out"; return 1; }
				echo "MQFS-NVME-BENCH $dev $sched $rw $iops"
			done
		done
	done
	done
}

# mqfs on $1 mounted at /mnt in the foreground daemon $pid.
mount_mqfs() {
	mqfs -f "$1" /mnt -o stats=/tmp/stats &
	pid=$!
	for i in $(seq 1 600); do
		grep -q " /mnt " /proc/mounts && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "mqfs did not mount $1"
	return 1
}

umount_mqfs() {
	umount /mnt || return 1
	wait "$pid"
	rc=$?
	[ "$rc" = 0 ] || echo "mqfs exited $rc"
	return "$rc"
}

FIO_BUF="--name=buffered --filename=/mnt/fio-buffered --size=16m --bs=4k \
--rw=randwrite --ioengine=psync --verify=crc32c --verify_fatal=1"
FIO_DIRECT="--name=direct --filename=/mnt/fio-direct --size=16m --bs=4k \
--rw=randwrite --ioengine=io_uring --iodepth=16 --direct=1 \
--verify=crc32c --verify_fatal=1"

files() {
	cp -a /data /mnt/tree || return 1
	mkdir /mnt/many || return 1
	for i in $(seq 1 300); do echo "file $i" >"/mnt/many/$i"; done
	mv /mnt/tree /mnt/tree2 && rm /mnt/many/1* &&
		diff -r /data /mnt/tree2 && [ "$(ls /mnt/many | wc -l)" = 189 ]
}

files_again() {
	diff -r /data /mnt/tree2 && [ "$(ls /mnt/many | wc -l)" = 189 ] &&
		[ "$(cat /mnt/many/299)" = "file 299" ]
}

# The whole product on $1, the driver it must use $2.
product() {
	mkfs.mqfs -f "$1" || return 1
	mount_mqfs "$1" || return 1
	# shellcheck disable=SC2086
	fio $FIO_BUF >/tmp/fio.log && fio $FIO_DIRECT >>/tmp/fio.log || {
		cat /tmp/fio.log; umount_mqfs; return 1; }
	files || { echo "file workload failed"; umount_mqfs; return 1; }
	mqfsctl stat /mnt | head -3
	umount_mqfs || return 1
	grep "driver" /tmp/stats
	grep -q "driver $2" /tmp/stats || { echo "not driver $2"; return 1; }
	fsck.mqfs -n "$1" || return 1
	mount_mqfs "$1" || return 1
	# shellcheck disable=SC2086
	fio $FIO_BUF --verify_only >/tmp/fio.log &&
		fio $FIO_DIRECT --verify_only >>/tmp/fio.log || {
		cat /tmp/fio.log; umount_mqfs; return 1; }
	files_again || { echo "files differ after remount"; umount_mqfs;
		return 1; }
	umount_mqfs && fsck.mqfs -n "$1"
}

echo "MQFS-NVME-BEGIN $(uname -r)"
step insmod insmod /lib/modules/fuse.ko
mkdir -p /mnt
# mqfs_more=1 (MQFS_NVME_MORE=1 on the host): fault stacking and iopoll
# too, which hang now and then under TCG (nvme_check.c says more).
more=
[ "${mqfs_more:-0}" = 1 ] && more=--more
step driver-ng0n1 nvme_check /dev/ng0n1 nvme $more
step driver-nvme0n1 nvme_check /dev/nvme0n1 uring $more
step bench bench
step product-ng0n1 product /dev/ng0n1 nvme
step product-nvme0n1 product /dev/nvme0n1 uring
echo "MQFS-NVME-DONE ok=$ok fail=$fail"
poweroff -f
