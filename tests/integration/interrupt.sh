#!/bin/sh
# SPDX-License-Identifier: MIT
# Interrupted requests: a reader killed while its read waits in the
# daemon.  The daemon is put in a block cgroup that throttles reads of
# the image's device to 64 KiB/s, so a 1 MiB O_DIRECT read waits there
# some 16 s; the reader gets SIGKILL after half a second, the kernel
# sends FUSE_INTERRUPT, and the daemon answers the read EINTR at once:
# the reader must be gone within 3 s (without the answer it would wait
# for the device).  The I/O completes into its slot later; the mount
# keeps serving (the same file reads back whole once the throttle is
# lifted), .mqfs/fuse/stat counts the interrupt, the daemon exits 0 and
# the image is fsck-clean.  On FUSE over io_uring (MQFS_TRANSPORT=uring,
# uring.sh) a read cannot be answered before its I/O ends (ring.c): the
# reader goes when the throttle is lifted, and the INTERRUPT is still
# counted.  Skipped (77) where no block cgroup can
# throttle the image's device (cgroup v1 blkio or v2 io).
. "$(dirname "$0")/lib.sh"
t_init
command -v dd >/dev/null || t_fail "dd is needed"

T_CG=''
cg_cleanup() {
	[ -n "$T_CG" ] || return 0
	[ -n "$T_PID" ] && echo "$T_PID" >"$T_CG_ROOT/cgroup.procs" 2>/dev/null
	rmdir "$T_CG" 2>/dev/null
	T_CG=''
}
trap 'cg_cleanup; t_cleanup' EXIT

# A throttle on @dev for a new cgroup: sets T_CG, T_CG_ROOT, T_CG_SET.
cg_make() {
	dev=$1
	if [ -w /sys/fs/cgroup/blkio/cgroup.procs ]; then
		T_CG_ROOT=/sys/fs/cgroup/blkio
		T_CG=$T_CG_ROOT/mqfs-$T_NAME-$$
		mkdir "$T_CG" 2>/dev/null || return 1
		T_CG_SET="$T_CG/blkio.throttle.read_bps_device"
		echo "$dev 65536" >"$T_CG_SET" 2>/dev/null || return 1
		T_CG_OFF="$dev 0"
	elif grep -qw io /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		T_CG_ROOT=/sys/fs/cgroup
		grep -qw io "$T_CG_ROOT/cgroup.subtree_control" ||
			echo +io >"$T_CG_ROOT/cgroup.subtree_control" 2>/dev/null ||
			return 1
		T_CG=$T_CG_ROOT/mqfs-$T_NAME-$$
		mkdir "$T_CG" 2>/dev/null || return 1
		T_CG_SET="$T_CG/io.max"
		echo "$dev rbps=65536" >"$T_CG_SET" 2>/dev/null || return 1
		T_CG_OFF="$dev rbps=max"
	else
		return 1
	fi
}

dev=$(stat -c '%Hd:%Ld' "$T_DIR")
case $dev in 0:*) t_skip "$T_DIR is on no block device ($dev)" ;; esac
cg_make "$dev" || { cg_cleanup; t_skip "cannot throttle $dev with a block cgroup"; }

t_mkfs 256M
t_mount -o cache=none
dd if=/dev/urandom of="$T_DIR/data" bs=1M count=1 status=none
cp "$T_DIR/data" "$T_MNT/f" || t_fail "cp"
sync
echo "$T_PID" >"$T_CG/cgroup.procs" || t_fail "cannot move the daemon"

dd if="$T_MNT/f" of=/dev/null bs=1M count=1 iflag=direct status=none &
reader=$!
sleep 0.5
t_alive "$reader" || t_fail "the throttled read did not wait (throttle ineffective?)"
kill -9 "$reader"
stat_of() { awk -v k="$1" '$1 == k { print $2 }' "$T_MNT/.mqfs/fuse/stat"; }
if grep -qx 'transport uring' "$T_MNT/.mqfs/fuse/conn"; then
	# A ring entry's buffers are the kernel's again once it is answered,
	# and the device still reads into them: the read runs to its end.
	sleep 1
	t_alive "$reader" || t_fail "uring: the read was answered before its I/O"
	echo "$T_CG_OFF" >"$T_CG_SET" || t_fail "cannot lift the throttle"
	t_wait_exit "$reader" 30 || t_fail "uring: the killed reader still waits"
	wait "$reader" 2>/dev/null
	[ "$(stat_of interrupts)" -ge 1 ] || t_fail "uring: no INTERRUPT came"
	cancelled="none, transport uring: at its I/O's end"
else
	t_wait_exit "$reader" 30 || t_fail "the killed reader still waits after 3 s"
	wait "$reader" 2>/dev/null
	cancelled=$(stat_of cancelled)
	[ "${cancelled:-0}" -ge 1 ] || t_fail "no request was answered by an interrupt"
fi

echo "$T_CG_OFF" >"$T_CG_SET" || t_fail "cannot lift the throttle"
cmp "$T_MNT/f" "$T_DIR/data" || t_fail "the file reads back wrong"
dd if="$T_MNT/f" of="$T_DIR/back" bs=1M iflag=direct status=none ||
	t_fail "an O_DIRECT read after the interrupt"
cmp "$T_DIR/back" "$T_DIR/data" || t_fail "O_DIRECT read back wrong"
cg_cleanup
t_umount
t_fsck
t_say "ok: the killed reader went at once ($cancelled answered by interrupt)"
