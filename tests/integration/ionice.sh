#!/bin/sh
# SPDX-License-Identifier: MIT
# ionice works through the mount: the daemon gives the bios that serve a
# request its caller's I/O priority class, and mq-deadline counts them in
# that level (.mqfs/queue/iosched/prio_stat).  ionice -c3 direct writes
# and reads land in IDLE, ionice -c2 -n0 in BE, ionice -c1 (root) in RT;
# a cache=dontcache idle writer's write-behind is written back as IDLE;
# with sched=none there are no levels and no prio files.
. "$(dirname "$0")/lib.sh"
t_init
command -v ionice >/dev/null || t_fail "ionice (util-linux) is needed"
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

t_mount -o cache=none,sched=none
[ ! -e "$T_MNT/.mqfs/queue/iosched/prio_stat" ] ||
	t_fail "prio_stat under elevator none"
t_umount
t_fsck
t_say "ok"
