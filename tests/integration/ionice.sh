#!/bin/sh
# SPDX-License-Identifier: MIT
# ionice works through the mount: the daemon gives the bios that serve a
# request its caller's I/O priority class, and mq-deadline counts them in
# that level (.mqfs/queue/iosched/prio_stat).  ionice -c3 direct writes
# and reads land in IDLE, ionice -c2 -n0 in BE, ionice -c1 (root) in RT;
# a cache=dontcache idle writer's write-behind is written back as IDLE;
# a directory's user.mqfs.ioprio (checked, inherited, kept across a
# remount; rt refused to an unprivileged user) gives its files' I/O its
# class, and an rt caller there does not escape an idle policy;
# with sched=none there are no levels and no prio files.
. "$(dirname "$0")/lib.sh"
t_init
command -v ionice >/dev/null || t_fail "ionice (util-linux) is needed"
command -v setpriv >/dev/null || t_fail "setpriv (util-linux) is needed"
t_mkfs 256M

# level CLASS COLUMN: a count of prio_stat (inserted=2 ... completed=5).
level() {
	awk -v c="$1" -v f="$2" '$1 == c { print $f }' \
		"$T_MNT/.mqfs/queue/iosched/prio_stat"
}

# expect_moved CLASS MIN WHAT: the class's inserted count grew by >= MIN
# since the last snapshot; the other classes named in $quiet did not.
snapshot() {
	rt0=$(level RT 2); be0=$(level BE 2); idle0=$(level IDLE 2)
}
moved() {	# CLASS -> inserted since the snapshot
	case $1 in
	RT) echo $(($(level RT 2) - rt0)) ;;
	BE) echo $(($(level BE 2) - be0)) ;;
	IDLE) echo $(($(level IDLE 2) - idle0)) ;;
	esac
}
expect_moved() {
	got=$(moved "$1")
	[ "$got" -ge "$2" ] || t_fail "$3: $1 moved by $got, want >= $2"
}
expect_still() {
	got=$(moved "$1")
	[ "$got" = 0 ] || t_fail "$2: $1 moved by $got, want 0"
}

t_mount -o cache=none
[ -r "$T_MNT/.mqfs/queue/iosched/prio_stat" ] ||
	t_fail "no prio_stat under mq-deadline"
head -1 "$T_MNT/.mqfs/queue/iosched/prio_stat" |
	grep -q '^class inserted merged dispatched completed$' ||
	t_fail "prio_stat header"

snapshot
ionice -c3 dd if=/dev/zero of="$T_MNT/idle" bs=1M count=16 oflag=direct \
	status=none || t_fail "idle dd write"
expect_moved IDLE 16 "ionice -c3 direct write"
expect_still RT "ionice -c3 direct write"

# read_as "IONICE ARGS" CLASS OTHER...: a 16 MiB direct read under that
# priority lands in CLASS and in none of the OTHERs.
read_as() {
	args=$1 want=$2
	shift 2
	snapshot
	# shellcheck disable=SC2086
	ionice $args dd if="$T_MNT/idle" of=/dev/null bs=1M iflag=direct \
		status=none || t_fail "ionice $args dd read"
	expect_moved "$want" 16 "ionice $args direct read"
	for other; do
		expect_still "$other" "ionice $args direct read"
	done
}
read_as "-c2 -n0" BE IDLE RT
read_as "-c1 -n4" RT IDLE

# Every request inserted completes; queued and owned_by_driver say so.
sync
[ "$(cat "$T_MNT/.mqfs/queue/iosched/queued")" = "0 0 0" ] ||
	t_fail "queued: $(cat "$T_MNT/.mqfs/queue/iosched/queued")"
"$T_BIN/mqfsctl" stat "$T_MNT" 0.1 1 >"$T_DIR/stat.out" ||
	t_fail "mqfsctl stat"
grep -q '^IDLE ' "$T_DIR/stat.out" || t_fail "mqfsctl stat shows no IDLE"
t_umount

# Write-behind: answered at once, written back later by the flusher,
# still as IDLE.
t_mount -o cache=dontcache
snapshot
ionice -c3 dd if=/dev/zero of="$T_MNT/wb" bs=1M count=16 status=none ||
	t_fail "idle dontcache write"
sync "$T_MNT/wb"
expect_moved IDLE 4 "ionice -c3 write-behind"
expect_still RT "ionice -c3 write-behind"
t_umount

# The directory policy: inherited, kept on disk, the lower class wins;
# rt only for who may ioprio_set it.
chmod 755 "$T_DIR"	# nobody walks to the mount point
t_mount -o cache=none,allow_other
mkdir "$T_MNT/backup" "$T_MNT/open"
chmod 777 "$T_MNT/open"
t_py "$T_MNT" <<'PY'
import errno, os, sys
mnt = sys.argv[1]
d = os.path.join(mnt, 'backup')
for bad in (b'low', b'idle:3', b'be:8'):
    try:
        os.setxattr(d, 'user.mqfs.ioprio', bad)
        sys.exit('took %r' % bad)
    except OSError as e:
        assert e.errno == errno.EINVAL, e
os.setxattr(d, 'user.mqfs.ioprio', b'idle')
os.mkdir(os.path.join(d, 'sub'))
assert os.getxattr(os.path.join(d, 'sub'), 'user.mqfs.ioprio') == b'idle'
os.setxattr(os.path.join(mnt, 'open'), 'user.mqfs.ioprio', b'rt')
assert os.getxattr(os.path.join(mnt, 'open'), 'user.mqfs.ioprio') == b'rt:4'
PY
# The system's python: a user's own (pyenv) may be closed to nobody.
setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import errno, os, sys
d = sys.argv[1]
os.mkdir(d + "/mine")
os.setxattr(d + "/mine", "user.mqfs.ioprio", b"idle")
try:
    os.setxattr(d + "/mine", "user.mqfs.ioprio", b"rt")
    sys.exit("nobody set rt")
except OSError as e:
    assert e.errno == errno.EPERM, e
' "$T_MNT/open" || t_fail "an unprivileged rt policy"
t_umount
t_mount -o cache=none
snapshot
dd if=/dev/zero of="$T_MNT/backup/sub/f" bs=1M count=16 oflag=direct \
	status=none || t_fail "dd into the idle directory"
expect_moved IDLE 16 "default writer in an idle directory"
expect_still RT "default writer in an idle directory"
snapshot
ionice -c1 dd if="$T_MNT/backup/sub/f" of=/dev/null bs=1M iflag=direct \
	status=none || t_fail "rt dd in the idle directory"
expect_moved IDLE 16 "rt reader in an idle directory"
expect_still RT "rt reader in an idle directory"
t_umount

t_mount -o cache=none,sched=none
[ ! -e "$T_MNT/.mqfs/queue/iosched/prio_stat" ] ||
	t_fail "prio_stat under elevator none"
t_umount
t_fsck
t_say "ok"
