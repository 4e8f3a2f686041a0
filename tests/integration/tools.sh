#!/bin/sh
# SPDX-License-Identifier: MIT
# The programs' manners, as e2fsprogs and util-linux have them: every
# program answers --help on stdout (exit 0, within 80 columns) and
# -V/--version with one line "PROG (mqfs) VERSION"; a usage error is one
# line naming the program and the problem, then "Try 'PROG --help'", with
# the program's usage code (mqfs 1, mkfs.mqfs 1, fsck.mqfs 16, mqfsctl,
# mqfs-bench and mqfs-load 2).  On a mounted image (type fuse.mqfs, the
# image as its source): mkfs.mqfs and fsck.mqfs -y refuse at once with
# their own prefix, naming the mount; mqfsctl works from a subdirectory,
# refuses a path outside any mqfs mount, calls queue_depth read-only,
# suggests a close setting name, names the device and keeps stat and top
# within 80 columns; the daemon's start line says what is mounted where,
# in plain words.  mkfs.mqfs -J larger than fits is refused, not cut.
. "$(dirname "$0")/lib.sh"
t_init
CTL=$T_BIN/mqfsctl
BENCH=$T_BIN/mqfs-bench
LOAD=$T_BIN/mqfs-load
OUT=$T_DIR/out
ERR=$T_DIR/err
for b in "$CTL" "$BENCH" "$LOAD"; do
	[ -x "$b" ] || t_fail "$b is not built"
done

# run CODE WHAT CMD...: CMD, without standard input and for 20 s at
# most, must exit CODE; its output is in $OUT and $ERR.
run() {
	want=$1 what=$2
	shift 2
	timeout 20 "$@" </dev/null >"$OUT" 2>"$ERR"
	rc=$?
	[ "$rc" = "$want" ] ||
		{ cat "$OUT" "$ERR"; t_fail "$what: exit $rc, want $want"; }
}
# has FILE PATTERN WHAT: a line of FILE matches the grep PATTERN.
has() {
	grep -q -- "$2" "$1" || { cat "$1"; t_fail "$3: no '$2'"; }
}
# lines FILE N WHAT: FILE has N lines.
lines() {
	[ "$(wc -l <"$1")" = "$2" ] ||
		{ cat "$1"; t_fail "$3: $(wc -l <"$1") lines, want $2"; }
}
# narrow FILE WHAT: no line of FILE passes 80 columns.
narrow() {
	awk 'length($0) > 80 { print length($0) ": " $0; bad = 1 }
	     END { exit bad }' "$1" || t_fail "$2: lines wider than 80 columns"
}
# usage_error CODE PROG WHAT CMD...: CMD exits CODE with one line
# "PROG: ..." and the hint to --help, nothing on stdout.
usage_error() {
	code=$1 prog=$2 what=$3
	shift 3
	run "$code" "$what" "$@"
	lines "$ERR" 2 "$what"
	has "$ERR" "^$prog: " "$what"
	has "$ERR" "^Try '$prog --help' for more information.$" "$what"
	[ ! -s "$OUT" ] || t_fail "$what: printed on stdout"
}

t_say "--help, --version, usage errors"
for p in "mqfs $MQFS 1" "mkfs.mqfs $MKFS 1" "fsck.mqfs $FSCK 16" \
	 "mqfsctl $CTL 2" "mqfs-bench $BENCH 2" "mqfs-load $LOAD 2"; do
	set -- $p
	prog=$1 bin=$2 code=$3
	run 0 "$prog --help" "$bin" --help
	has "$OUT" "^[Uu]sage: $prog" "$prog --help"
	[ ! -s "$ERR" ] || { cat "$ERR"; t_fail "$prog --help: stderr"; }
	narrow "$OUT" "$prog --help"
	for v in -V --version; do
		run 0 "$prog $v" "$bin" $v
		lines "$OUT" 1 "$prog $v"
		has "$OUT" "^$prog (mqfs) [0-9][0-9.]*" "$prog $v"
	done
	[ "$prog" = mqfs ] && continue	# libfuse names its unknown options
	usage_error "$code" "$prog" "$prog --bogus" "$bin" --bogus
	has "$ERR" "unrecognized option '--bogus'" "$prog --bogus"
done
usage_error 1 mkfs.mqfs "mkfs.mqfs -Z" "$MKFS" -Z
has "$ERR" "invalid option -- 'Z'" "mkfs.mqfs -Z"
usage_error 1 mkfs.mqfs "mkfs.mqfs -J" "$MKFS" -J
has "$ERR" "requires an argument -- 'J'" "mkfs.mqfs -J"
usage_error 1 mkfs.mqfs "mkfs.mqfs alone" "$MKFS"
usage_error 16 fsck.mqfs "fsck.mqfs alone" "$FSCK"
usage_error 16 fsck.mqfs "fsck.mqfs -Z" "$FSCK" -Z "$T_IMG"
usage_error 2 mqfsctl "mqfsctl alone" "$CTL"
usage_error 2 mqfsctl "mqfsctl bogus" "$CTL" bogus "$T_DIR"
usage_error 2 mqfsctl "mqfsctl stat alone" "$CTL" stat
usage_error 2 mqfs-load "mqfs-load alone" "$LOAD"
usage_error 2 mqfs-bench "mqfs-bench x" "$BENCH" x
usage_error 1 mqfs "mqfs without a device" "$MQFS"
usage_error 1 mqfs "mqfs without a mount point" "$MQFS" "$T_DIR/img"
has "$ERR" "no mount point given" "mqfs without a mount point"

t_say "mkfs.mqfs -J larger than fits"
run 1 "-J 100M on 8 MiB" "$MKFS" -s 8M -J 100M "$T_DIR/j.img"
has "$ERR" "^mkfs.mqfs: .*-J 100.0 MiB is too large.* at most 2.0 MiB" \
	"-J 100M on 8 MiB"
[ ! -e "$T_DIR/j.img" ] || t_fail "-J 100M left an image behind"
run 0 "-J 2M on 8 MiB" "$MKFS" -q -s 8M -J 2M "$T_DIR/j.img"

t_say "on a mounted image"
t_mkfs 64M
t_mount
img=$(realpath "$T_IMG")
mnt=$(realpath "$T_MNT")
# mountinfo: "... MOUNTPOINT OPTS [TAGS] - TYPE SOURCE SUPEROPTS".
awk -v m="$mnt" '$5 == m {
	for (i = 7; $i != "-"; i++) ;
	print $(i + 1), $(i + 2)
}' /proc/self/mountinfo >"$OUT"
[ "$(cat "$OUT")" = "fuse.mqfs $img" ] ||
	t_fail "mountinfo type and source: '$(cat "$OUT")'"
start="^mqfs: $img mounted on $mnt: cache=kernel, scheduler mq-deadline,"
has "$T_LOG" "$start FUSE requests over " "the start line"
! grep -q "writeback limits" "$T_LOG" || t_fail "jargon in the start line"

# Refused at once (no wait for the lock), with the tool's own prefix.
run 1 "mkfs.mqfs -f, mounted" timeout 3 "$MKFS" -f "$T_IMG"
lines "$ERR" 1 "mkfs.mqfs -f, mounted"
has "$ERR" "^mkfs.mqfs: .* is mounted on $mnt" "mkfs.mqfs -f, mounted"
run 8 "fsck.mqfs -y, mounted" timeout 3 "$FSCK" -y "$T_IMG"
lines "$ERR" 1 "fsck.mqfs -y, mounted"
has "$ERR" "^fsck.mqfs: .* is mounted on $mnt" "fsck.mqfs -y, mounted"
run 0 "fsck.mqfs -n, mounted" timeout 10 "$FSCK" -n "$T_IMG"
has "$ERR" "^fsck.mqfs: warning: .* is mounted on $mnt" "fsck.mqfs -n, mounted"

mkdir -p "$T_MNT/sub/dir" || t_fail "mkdir in the mount"
run 0 "mqfsctl stat from a subdirectory" "$CTL" stat "$T_MNT/sub/dir" 0.1 2
has "$OUT" "^Device: $img on $mnt$" "mqfsctl stat"
narrow "$OUT" "mqfsctl stat"
# The class table: every line as wide as its header.
sed -n '/^requests by I\/O priority class/,/^$/p' "$OUT" | sed '1d;/^$/d' \
	>"$T_DIR/classes"
lines "$T_DIR/classes" 4 "the class table"
[ "$(awk '{ print length($0) }' "$T_DIR/classes" | sort -u | wc -l)" = 1 ] ||
	{ cat "$T_DIR/classes"; t_fail "the class table is not aligned"; }
# top until SIGINT: each screen within 80 columns.
run 0 "mqfsctl top" timeout --preserve-status -s INT 2.5 "$CTL" top \
	"$T_MNT/sub"
has "$OUT" "Device: $img on $mnt$" "mqfsctl top"
narrow "$OUT" "mqfsctl top"
run 0 "mqfsctl set from a subdirectory" "$CTL" set "$T_MNT/sub" read_expire=250
[ "$(cat "$T_MNT/.mqfs/queue/iosched/read_expire")" = 250 ] ||
	t_fail "read_expire not set from a subdirectory"
run 1 "mqfsctl set queue_depth" "$CTL" set "$T_MNT" queue_depth=64
has "$ERR" "^mqfsctl: queue_depth: read-only setting" "queue_depth=64"
run 1 "mqfsctl set read_expir" "$CTL" set "$T_MNT" read_expir=100
has "$ERR" \
	"^mqfsctl: read_expir: no such setting; did you mean 'read_expire'?" \
	"read_expir=100"
run 1 "mqfsctl set nosuchkey" "$CTL" set "$T_MNT" nosuchkey=1
has "$ERR" "^mqfsctl: nosuchkey: no such setting" "nosuchkey=1"
! grep -q "did you mean" "$ERR" || t_fail "nosuchkey: a far-fetched guess"
for c in "stat $T_DIR" "set $T_DIR scheduler=none" "top $T_DIR"; do
	set -- $c
	run 1 "mqfsctl $1 outside the mount" "$CTL" "$@"
	lines "$ERR" 1 "mqfsctl $1 outside the mount"
	has "$ERR" "^mqfsctl: $T_DIR: not an mqfs mount$" "mqfsctl $1 outside"
done
t_umount
t_fsck
t_say "ok"
