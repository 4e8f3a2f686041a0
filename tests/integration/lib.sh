# SPDX-License-Identifier: MIT
# lib.sh - shared helpers of the integration scripts (sourced, not run).
#
# A script calls t_init (probe: exit 77 without a usable /dev/fuse or
# without root; temp dir; the cleanup trap; t_init_tools for the tools'
# scripts, which mount nothing), t_mkfs, t_mount, acts and
# asserts, then t_umount (the daemon must exit 0) and t_fsck.  The EXIT
# trap always unmounts, stops the daemon by its PID and removes the temp
# dir, whatever happened.  Binaries come from $top_builddir (set by make;
# default: the tree above this script); MQFS_DAEMON=PATH runs another
# build of the daemon (a sanitizer build, say).

T_NAME=$(basename "$0" .sh)
T_HERE=$(cd "$(dirname "$0")" && pwd)
T_BIN=$(cd "${top_builddir:-$T_HERE/../..}" && pwd)
T_SRC=$(cd "${top_srcdir:-$T_HERE/../..}" && pwd)
MQFS=${MQFS_DAEMON:-$T_BIN/mqfs}
MKFS=$T_BIN/mkfs.mqfs
FSCK=$T_BIN/fsck.mqfs

T_DIR='' T_IMG='' T_MNT='' T_LOG='' T_PID='' T_BGMNT='' T_TMPFS=''

t_say() { printf '%s: %s\n' "$T_NAME" "$*"; }
t_skip() { t_say "SKIP: $*"; exit 77; }
t_fail() { t_say "FAIL: $*" >&2; exit 1; }

t_probe() {
	[ "$(id -u)" = 0 ] || t_skip "not root: cannot mount"
	[ -c /dev/fuse ] || t_skip "/dev/fuse missing"
	(exec 3<>/dev/fuse) 2>/dev/null || t_skip "/dev/fuse not usable"
	for b in "$MQFS" "$MKFS" "$FSCK"; do
		[ -x "$b" ] || t_fail "$b is not built"
	done
	command -v python3 >/dev/null || t_fail "python3 is needed"
}

t_init() {
	t_probe
	T_DIR=$(mktemp -d "${TMPDIR:-/var/tmp}/mqfs-$T_NAME.XXXXXX") ||
		t_fail "mktemp"
	T_IMG=$T_DIR/img
	T_MNT=$T_DIR/mnt
	T_LOG=$T_DIR/daemon.log
	mkdir "$T_MNT" || t_fail "mkdir $T_MNT"
	: >"$T_LOG"
	trap t_cleanup EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# t_init_tools: for the tools-*.sh scripts, which run mkfs.mqfs and
# fsck.mqfs on image files and mount nothing (no root, no /dev/fuse
# needed): the temp dir (also as $tmp) and the cleanup trap; they count
# failures with fail and expect, and end with t_tools_done.
t_init_tools() {
	for b in "$MKFS" "$FSCK"; do
		[ -x "$b" ] || t_fail "$b is not built"
	done
	T_DIR=$(mktemp -d "${TMPDIR:-/tmp}/mqfs-$T_NAME.XXXXXX") ||
		t_fail "mktemp"
	tmp=$T_DIR
	failures=0
	trap t_cleanup EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# expect CODE DESCRIPTION CMD...: run CMD, compare its exit status.
expect() {
	want=$1 what=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ne "$want" ]; then
		fail "$what: exit $got, expected $want"
		sed 's/^/  | /' "$tmp/out" "$tmp/err" >&2
	fi
}

t_tools_done() {
	[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
}

# Is $1 a mount point?  From mountinfo: stat on a dead FUSE mount fails.
t_is_mounted() {
	awk -v p="$1" '$5 == p { f = 1 } END { exit !f }' /proc/self/mountinfo
}

# Is process $1 running (a zombie does not count)?
t_alive() {
	[ -n "$1" ] || return 1
	s=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$s" ] && [ "$s" != Z ]
}

t_unmount_cmd() {
	if command -v fusermount3 >/dev/null; then
		fusermount3 -u "$1"
	else
		umount "$1"
	fi
}

# Unmount $1 by any means (cleanup only).
t_force_unmount() {
	[ -n "$1" ] && t_is_mounted "$1" || return 0
	t_unmount_cmd "$1" 2>/dev/null || umount "$1" 2>/dev/null ||
		umount -l "$1" 2>/dev/null
}

# Wait up to $2 tenths of a second for process $1 to end.
t_wait_exit() {
	i=0
	while t_alive "$1"; do
		[ "$i" -lt "$2" ] || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 0
}

# Stop the daemon $1 (cleanup only): TERM, then KILL.
t_kill_daemon() {
	t_alive "$1" || return 0
	t_wait_exit "$1" 30 && return 0
	kill "$1" 2>/dev/null
	t_wait_exit "$1" 50 || kill -9 "$1" 2>/dev/null
}

t_cleanup() {
	rc=$?
	trap - EXIT HUP INT TERM
	if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -s "$T_LOG" ]; then
		t_say "daemon log (last 40 lines):"
		tail -n 40 "$T_LOG"
		# A sanitizer report's stack is above its last 40 lines.
		if grep -q "^==[0-9]*==ERROR" "$T_LOG"; then
			t_say "sanitizer report:"
			sed -n '/^==[0-9]*==ERROR/,/^SUMMARY/p' "$T_LOG" |
				head -n 120
		fi
	fi
	t_force_unmount "$T_MNT"
	[ -z "$T_BGMNT" ] || t_force_unmount "$T_BGMNT"
	t_kill_daemon "$T_PID"
	[ -z "$T_PID" ] || wait "$T_PID" 2>/dev/null
	[ -z "$T_URING_OLD" ] || echo "$T_URING_OLD" >"$T_URING_PARAM"
	# After the daemon: the image may live there.
	[ -z "$T_TMPFS" ] || umount "$T_TMPFS" 2>/dev/null ||
		umount -l "$T_TMPFS" 2>/dev/null
	if [ -n "$T_DIR" ]; then
		if t_is_mounted "$T_MNT"; then
			t_say "$T_MNT is still mounted: $T_DIR left behind"
		else
			rm -rf --one-file-system "$T_DIR"
		fi
	fi
	exit "$rc"
}

# t_mkfs SIZE [mkfs.mqfs options]: a fresh image at $T_IMG.
t_mkfs() {
	size=$1
	shift
	rm -f "$T_IMG"
	"$MKFS" -s "$size" "$@" "$T_IMG" >"$T_DIR/mkfs.out" 2>&1 || {
		cat "$T_DIR/mkfs.out"
		t_fail "mkfs.mqfs -s $size $*"
	}
}

# t_tmpfs SIZE: the image on a tmpfs of SIZE (unmounted by the cleanup),
# so that a test of a huge sparse image cannot fill the host's disk.
t_tmpfs() {
	T_TMPFS=$T_DIR/tmpfs
	mkdir "$T_TMPFS" || t_fail "mkdir $T_TMPFS"
	mount -t tmpfs -o "size=$1" tmpfs "$T_TMPFS" || {
		T_TMPFS=''
		t_skip "cannot mount a tmpfs"
	}
	T_IMG=$T_TMPFS/img
}

# Wait until $1 is mounted (10 s), or the daemon $2 gave up.
t_wait_mounted() {
	i=0
	until t_is_mounted "$1"; do
		if [ "$i" -ge 100 ] || { [ -n "$2" ] && ! t_alive "$2"; }; then
			return 1
		fi
		sleep 0.1
		i=$((i + 1))
	done
}

# t_mount [daemon options]: start the daemon in the foreground, keep its
# PID, wait for the mount.  Its output goes to $T_LOG.
t_mount() {
	echo "== mqfs $T_IMG $T_MNT -f $*" >>"$T_LOG"
	"$MQFS" "$T_IMG" "$T_MNT" -f "$@" >>"$T_LOG" 2>&1 9>&- &
	T_PID=$!
	t_wait_mounted "$T_MNT" "$T_PID" ||
		t_fail "not mounted with '$*' (daemon $(t_alive "$T_PID" &&
			echo running || echo exited))"
}

# Unmount; the daemon must then exit, with status 0.
t_umount() {
	t_unmount_cmd "$T_MNT" || t_fail "cannot unmount $T_MNT"
	t_wait_exit "$T_PID" 300 || t_fail "daemon still running after unmount"
	wait "$T_PID"
	rc=$?
	T_PID=
	[ "$rc" = 0 ] || t_fail "daemon exited with $rc after unmount"
}

# The daemon was killed (crash test): drop its dead mount.
t_drop_dead_mount() {
	t_wait_exit "$T_PID" 50 || t_fail "daemon $T_PID did not die"
	wait "$T_PID" 2>/dev/null
	T_PID=
	t_unmount_cmd "$T_MNT" 2>/dev/null || umount -l "$T_MNT" ||
		t_fail "cannot drop the dead mount"
}

# fsck.mqfs -n -f must find nothing.
t_fsck() {
	"$FSCK" -n -f "$T_IMG" >"$T_DIR/fsck.out" 2>&1
	rc=$?
	[ "$rc" = 0 ] || {
		cat "$T_DIR/fsck.out"
		t_fail "fsck.mqfs -n -f: exit $rc"
	}
}

# FUSE over io_uring on for this script (exit 77 where the kernel has
# none), the old value put back by the cleanup.  Scripts that change the
# parameter hold a lock for their whole run: make -j check may run them
# side by side, and the kernel reads the value at each mount's INIT.
T_URING_PARAM=/sys/module/fuse/parameters/enable_uring
T_URING_OLD=''
t_uring_on() {
	[ -w "$T_URING_PARAM" ] ||
		t_skip "no FUSE over io_uring in this kernel ($T_URING_PARAM)"
	command -v flock >/dev/null || t_fail "flock is needed"
	# fd 9 holds it; t_mount's daemons do not inherit it (9>&-).
	exec 9>"${TMPDIR:-/var/tmp}/mqfs-enable-uring.lock"
	flock -w 900 9 || t_fail "the enable_uring lock is held for 15 minutes"
	T_URING_OLD=$(cat "$T_URING_PARAM")
	t_uring_set Y
}

t_uring_set() {
	echo "$1" >"$T_URING_PARAM" || t_fail "cannot write $T_URING_PARAM"
}

# t_py ARGS... <<EOF: a Python check; its failure fails the script.
t_py() {
	python3 - "$@" || t_fail "python check failed (see above)"
}
