#!/bin/sh
# SPDX-License-Identifier: MIT
# The command line: unknown options, bad scheduler names, bad numbers and
# sizes, options that need another one, a missing or wrong device or
# mount point (a file is no mount point) - each is refused with exit 1
# and a message naming the culprit, in the foreground and in the
# background, and nothing is left mounted; so is a second mount of an
# image already mounted, and a driver that does not fit the device
# (driver=nvme on an image).  The generic mount(8) options are accepted
# and ignored; every valid option together mounts; -h and -V exit 0.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 32M
ERR=$T_DIR/stderr

# refuse WORD ARGS...: mqfs ARGS must exit 1, print WORD, mount nothing.
refuse() {
	word=$1
	shift
	timeout 20 "$MQFS" "$@" >/dev/null 2>"$ERR"
	rc=$?
	[ "$rc" = 1 ] || { cat "$ERR"; t_fail "'$*': exit $rc, want 1"; }
	grep -qi -e "$word" "$ERR" ||
		{ cat "$ERR"; t_fail "'$*': no message naming '$word'"; }
	! t_is_mounted "$T_MNT" || t_fail "'$*' left a mount"
}

refuse "bogus" "$T_IMG" "$T_MNT" -f -o bogus
refuse "bogus" "$T_IMG" "$T_MNT" -f -o sched=none,bogus=1
refuse "sched" "$T_IMG" "$T_MNT" -f -o sched=cfq
refuse "sched" "$T_IMG" "$T_MNT" -f -o sched
refuse "queue_depth" "$T_IMG" "$T_MNT" -f -o queue_depth=abc
refuse "queue_depth" "$T_IMG" "$T_MNT" -f -o queue_depth=0
refuse "queue_depth" "$T_IMG" "$T_MNT" -f -o queue_depth=12x
refuse "nr_requests" "$T_IMG" "$T_MNT" -f -o nr_requests=-1
refuse "nr_hw_queues" "$T_IMG" "$T_MNT" -f -o nr_hw_queues=1000
refuse "plug" "$T_IMG" "$T_MNT" -f -o plug=2
refuse "uring_reap" "$T_IMG" "$T_MNT" -f -o uring_reap=kernel
refuse "uring_pin" "$T_IMG" "$T_MNT" -f -o uring_pin=both
refuse "complete_delay_us" "$T_IMG" "$T_MNT" -f -o complete_delay_us=x
refuse "read_expire" "$T_IMG" "$T_MNT" -f -o read_expire=soon
refuse "fifo_batch" "$T_IMG" "$T_MNT" -f -o fifo_batch=-5
refuse "front_merges" "$T_IMG" "$T_MNT" -f -o front_merges=2
refuse "async_depth" "$T_IMG" "$T_MNT" -f -o async_depth=0
refuse "read_expire" "$T_IMG" "$T_MNT" -f -o sched=none,read_expire=10
refuse "cache" "$T_IMG" "$T_MNT" -f -o cache=sometimes
refuse "errors" "$T_IMG" "$T_MNT" -f -o errors=panic
refuse "meta_cache" "$T_IMG" "$T_MNT" -f -o meta_cache=12X
refuse "meta_cache" "$T_IMG" "$T_MNT" -f -o meta_cache=1K
refuse "commit" "$T_IMG" "$T_MNT" -f -o commit=-1
refuse "commit" "$T_IMG" "$T_MNT" -f -o commit=never
refuse "driver" "$T_IMG" "$T_MNT" -f -o driver=spdk
# NVMe commands on an image file, or on a char device that is no NVMe
# namespace: refused, naming the device and why.
refuse "ngXnY" "$T_IMG" "$T_MNT" -f -o driver=nvme
refuse "no namespace ID" /dev/null "$T_MNT" -f -o driver=nvme
refuse "ngXnY" /dev/null "$T_MNT" -f
refuse "--bogus" "$T_IMG" "$T_MNT" -f --bogus
refuse "device" -f
refuse "mount point" "$T_IMG" -f
refuse "$T_DIR/missing" "$T_DIR/missing" "$T_MNT" -f
refuse "$T_DIR/nodir" "$T_IMG" "$T_DIR/nodir" -f
# A mount point that is a file: the kernel would mount there, and every
# request would fail with EIO.  The cleanup unmounts it if it was not
# refused.
: >"$T_DIR/file"
T_BGMNT=$T_DIR/file
refuse "not a directory" "$T_IMG" "$T_DIR/file"
refuse "not a directory" "$T_IMG" "$T_DIR/file" -f
! t_is_mounted "$T_DIR/file" || t_fail "mounted on a file"
truncate -s 16M "$T_DIR/zeros"
refuse "mqfs" "$T_DIR/zeros" "$T_MNT" -f
# In the background the parent still reports the child's failure.
refuse "sched" "$T_IMG" "$T_MNT" -o sched=cfq
refuse "mqfs" "$T_DIR/zeros" "$T_MNT"

"$MQFS" -h >"$T_DIR/help" 2>&1 || t_fail "-h: exit $?"
grep -q "sched=" "$T_DIR/help" || t_fail "-h does not list sched="
"$MQFS" -V >/dev/null 2>&1 || t_fail "-V: exit $?"

# mount(8)'s generic options are taken and dropped.
t_mount -o defaults,auto,noauto,nofail,_netdev,user,nouser,users,rw
# One daemon per image: a second mount of it is refused.
mkdir "$T_DIR/mnt2" || t_fail "mkdir"
timeout 20 "$MQFS" "$T_IMG" "$T_DIR/mnt2" -f >/dev/null 2>"$ERR"
rc=$?
[ "$rc" = 1 ] || { cat "$ERR"; t_fail "second mount of the image: exit $rc"; }
grep -q "in use" "$ERR" || { cat "$ERR"; t_fail "second mount: no message"; }
! t_is_mounted "$T_DIR/mnt2" || { t_force_unmount "$T_DIR/mnt2"; t_fail "mounted twice"; }
t_umount

# Every option with a valid value, at once.
t_mount -o "sched=mq-deadline,read_expire=100,write_expire=1000,fifo_batch=8,writes_starved=1,front_merges=0,async_depth=32,prio_aging_expire=500,queue_depth=64,nr_requests=128,nr_hw_queues=2,plug=0,complete_delay_us=0,sqpoll,driver=uring,cache=none,errors=continue,meta_cache=4M,commit=1"
echo data >"$T_MNT/f" && [ "$(cat "$T_MNT/f")" = data ] || t_fail "I/O"
t_umount
t_mount -o sched=none,plug=1,cache=kernel,errors=remount-ro,meta_cache=1G
echo data >"$T_MNT/g" && [ "$(cat "$T_MNT/f" "$T_MNT/g")" = "data
data" ] || t_fail "I/O with sched=none"
t_umount
t_fsck
t_say "ok"
