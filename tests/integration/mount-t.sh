#!/bin/sh
# SPDX-License-Identifier: MIT
# mount(8) integration: `mount -t fuse.mqfs IMG DIR -o opts` (mount.fuse3
# runs `mqfs IMG DIR -o opts`, which goes to the background), an fstab
# line with mqfs and generic options, the atime options (strictatime,
# noatime) through mount(8), a bad option refused through mount(8) with
# nothing mounted, and umount(8); the daemon exits after each unmount
# and the image is fsck-clean.
. "$(dirname "$0")/lib.sh"
# mount.fuse3 runs `mqfs` from the standard PATH (mount(8) resets it):
# the script runs in a private mount namespace where the built daemon is
# bound over /usr/local/sbin, so nothing outside sees it.
if [ -z "${MQFS_TEST_MOUNT_NS:-}" ]; then
	t_probe
	command -v unshare >/dev/null || t_fail "unshare is needed"
	MQFS_TEST_MOUNT_NS=1 exec unshare -m --propagation private sh "$0"
fi
t_init
command -v mount.fuse3 >/dev/null || [ -x /sbin/mount.fuse3 ] ||
	t_fail "mount.fuse3 is needed"
t_mkfs 64M
mkdir "$T_DIR/bin" && ln -s "$MQFS" "$T_DIR/bin/mqfs" &&
	mount --bind "$T_DIR/bin" /usr/local/sbin || t_fail "bind $T_DIR/bin"
T_BGMNT=$T_MNT

# The background daemon serving $T_MNT (found by its arguments).
bg_pid() {
	for p in /proc/[0-9]*; do
		tr '\0' ' ' <"$p/cmdline" 2>/dev/null |
			grep -q "mqfs $T_IMG $T_MNT" && echo "${p#/proc/}" && return
	done
}

# umount(8), then the daemon must go away by itself.
bg_umount() {
	pid=$(bg_pid)
	[ -n "$pid" ] || t_fail "no daemon process for $T_MNT"
	umount "$T_MNT" || t_fail "umount"
	t_wait_exit "$pid" 300 || t_fail "daemon $pid still running"
}

mount -t fuse.mqfs -o sched=none,commit=2,allow_other "$T_IMG" "$T_MNT" ||
	t_fail "mount -t fuse.mqfs"
t_is_mounted "$T_MNT" || t_fail "not mounted"
grep " $T_MNT " /proc/mounts | grep -q "^$T_IMG $T_MNT fuse.mqfs " || {
	grep " $T_MNT " /proc/mounts
	t_fail "/proc/mounts does not show $T_IMG as fuse.mqfs"
}
echo hello >"$T_MNT/hello" || t_fail "write"
bg_umount
t_fsck

cat >"$T_DIR/fstab" <<EOF
$T_IMG $T_MNT fuse.mqfs defaults,noauto,nofail,_netdev,cache=none,read_expire=50 0 0
EOF
mount -T "$T_DIR/fstab" "$T_MNT" || t_fail "mount from an fstab line"
t_is_mounted "$T_MNT" || t_fail "fstab: not mounted"
[ "$(cat "$T_MNT/hello")" = hello ] || t_fail "data after remount"
bg_umount

# The atime options reach the daemon through mount(8) and mount.fuse3:
# with strictatime every read (cache=none: each reaches the daemon)
# moves atime, with noatime none does.
for opt in strictatime noatime; do
	mount -t fuse.mqfs -o "$opt,cache=none" "$T_IMG" "$T_MNT" ||
		t_fail "mount -t fuse.mqfs -o $opt"
	t_py "$T_MNT/hello" "$opt" <<'EOF'
import os, sys, time
p, opt = sys.argv[1], sys.argv[2]
for i in range(2):
    a = os.stat(p).st_atime_ns
    time.sleep(0.02)
    open(p).read()
    if (os.stat(p).st_atime_ns != a) != (opt == "strictatime"):
        sys.exit("mount -t fuse.mqfs -o %s: read %d, atime %d -> %d"
                 % (opt, i, a, os.stat(p).st_atime_ns))
EOF
	bg_umount
done

! mount -t fuse.mqfs -o sched=bogus "$T_IMG" "$T_MNT" 2>"$T_DIR/err" ||
	t_fail "mount with sched=bogus succeeded"
grep -q sched "$T_DIR/err" || { cat "$T_DIR/err"; t_fail "no message"; }
! t_is_mounted "$T_MNT" || t_fail "sched=bogus left a mount"
t_fsck
t_say "ok"
