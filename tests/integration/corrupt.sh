#!/bin/sh
# SPDX-License-Identifier: MIT
# Corrupted images.  A bad superblock: the mount is refused with a clear
# message and nothing is mounted; fsck -y restores it from the backup.
# A bad inode table block or directory block: the mount works, the first
# access fails, the daemon logs the block number and (errors=remount-ro)
# the filesystem turns read-only while the rest stays readable; with
# errors=continue it stays writable; either way the daemon exits 1 and
# asks for fsck.  fsck -n reports what was damaged.
# Block addresses come from the superblock and inodes (format.h), read
# with Python.
. "$(dirname "$0")/lib.sh"
t_init

# geom.py IMG itable-block INO | first-block INO | flip BLOCK OFFSET
cat >"$T_DIR/geom.py" <<'EOF'
import struct, sys

BS = 4096
img, cmd = sys.argv[1], sys.argv[2]
with open(img, 'rb') as f:
    sb = f.read(BS)
(version, bsize, count, ag_count, ag_blocks, ipa, itb, icount, jstart,
 jblocks) = struct.unpack_from('<IIQIIIIQQI', sb, 32)


def inode_loc(ino):
    ag, i = divmod(ino - 1, ipa)
    meta = jstart + jblocks if ag == 0 else ag * ag_blocks
    return meta + 3 + i // 16, 32 + (i % 16) * 240


def read_inode(ino):
    blk, off = inode_loc(ino)
    with open(img, 'rb') as f:
        f.seek(blk * BS + off)
        return f.read(240)


if cmd == 'itable-block':
    print(inode_loc(int(sys.argv[3]))[0])
elif cmd == 'first-block':
    ino = read_inode(int(sys.argv[3]))
    iflags = struct.unpack_from('<H', ino, 2)[0]
    if iflags & 1:      # a tree root: node header, then entries
        depth, nr = struct.unpack_from('<HH', ino, 120)
        assert depth == 0 and nr > 0, 'directory too big for this test'
        lblk, pblk, length, flags = struct.unpack_from('<QQII', ino, 128)
    else:
        lblk, pblk, length, flags = struct.unpack_from('<QQII', ino, 120)
    assert lblk == 0 and length > 0 and pblk > 0, (lblk, pblk, length)
    print(pblk)
elif cmd == 'flip':
    blk, off = int(sys.argv[3]), int(sys.argv[4])
    with open(img, 'r+b') as f:
        f.seek(blk * BS + off)
        b = f.read(1)
        f.seek(blk * BS + off)
        f.write(bytes([b[0] ^ 0x5a]))
EOF
geom() { python3 "$T_DIR/geom.py" "$T_IMG" "$@" || t_fail "geom $*"; }

# Unmount after an error: the daemon exits by itself with status $1
# (1 after corrupt metadata, with either errors= mode), and says why.
umount_after_error() {
	t_unmount_cmd "$T_MNT" || t_fail "cannot unmount"
	t_wait_exit "$T_PID" 300 || t_fail "daemon still running"
	wait "$T_PID"
	rc=$?
	T_PID=
	[ "$rc" = "$1" ] || t_fail "daemon exited with $rc after the error, want $1"
	[ "$1" = 0 ] || logged "had errors.*run fsck" || t_fail "no exit message"
}

# Has the daemon logged $1 since the last log_mark?
logged() { tail -c +$((MARK + 1)) "$T_LOG" | grep -q "$1"; }
log_mark() { MARK=$(wc -c <"$T_LOG"); }

fsck_finds_errors() {
	"$FSCK" -n -f "$T_IMG" >"$T_DIR/fsck.out" 2>&1
	rc=$?
	[ $((rc & 4)) = 4 ] || {
		cat "$T_DIR/fsck.out"
		t_fail "fsck -n after corrupting $1: exit $rc, want 4"
	}
}

populate() {
	t_mkfs 64M
	t_mount
	python3 - "$T_MNT" <<'EOF' || t_fail "populate"
import os, sys
r = sys.argv[1]
for i in range(40):
    with open(os.path.join(r, 'f%02d' % i), 'wb') as f:
        f.write(b'%d' % i * 100)
os.mkdir(os.path.join(r, 'd'))
for i in range(20):
    open(os.path.join(r, 'd', 'entry%d' % i), 'wb').close()
EOF
	LOW=$(stat -c %i "$T_MNT/f00")
	HIGH=$(stat -c %i "$T_MNT/f39")
	DIR=$(stat -c %i "$T_MNT/d")
	t_umount
	t_fsck
}

# 1. The superblock.
populate
geom flip 0 300
timeout 30 "$MQFS" "$T_IMG" "$T_MNT" -f >"$T_DIR/err" 2>&1
rc=$?
cat "$T_DIR/err" >>"$T_LOG"
[ "$rc" = 1 ] || t_fail "bad superblock: exit $rc, want 1"
! t_is_mounted "$T_MNT" || t_fail "bad superblock: mounted"
grep -qi "superblock" "$T_DIR/err" ||
	{ cat "$T_DIR/err"; t_fail "bad superblock: the message does not say so"; }
fsck_finds_errors "the superblock"
"$FSCK" -y -f "$T_IMG" >"$T_DIR/fsck.out" 2>&1
rc=$?
[ "$rc" -le 1 ] || { cat "$T_DIR/fsck.out"; t_fail "fsck -y: exit $rc"; }
t_fsck
t_mount
[ "$(cat "$T_MNT/f07")" = "$(python3 -c 'print("7" * 100)')" ] ||
	t_fail "data after the superblock repair"
t_umount

# 2. An inode table block (not the root's).
LOWBLK=$(geom itable-block "$LOW")
BLK=$(geom itable-block "$HIGH")
[ "$BLK" != "$LOWBLK" ] || t_fail "inodes $LOW and $HIGH share a block"
geom flip "$BLK" 1000
log_mark
t_mount
python3 - "$T_MNT" <<'EOF' || t_fail "bad inode table block"
import errno, os, sys
r = sys.argv[1]
try:
    os.stat(os.path.join(r, 'f39'))
    raise AssertionError('stat of an inode in a corrupt block worked')
except OSError as e:
    assert e.errno in (errno.EUCLEAN, errno.EIO), e
with open(os.path.join(r, 'f00'), 'rb') as f:        # still readable
    assert f.read() == b'0' * 100
try:
    open(os.path.join(r, 'new'), 'wb').close()
    raise AssertionError('still writable after the error')
except OSError as e:
    assert e.errno == errno.EROFS, e
EOF
logged "block $BLK\b" || t_fail "the log does not name inode table block $BLK"
umount_after_error 1
fsck_finds_errors "inode table block $BLK"

# errors=continue: the error is reported, the filesystem stays writable,
# and the daemon still exits 1 at unmount, asking for fsck.
t_mount -o errors=continue
python3 - "$T_MNT" <<'EOF' || t_fail "errors=continue"
import os, sys
r = sys.argv[1]
try:
    os.stat(os.path.join(r, 'f39'))
    raise AssertionError('stat of an inode in a corrupt block worked')
except OSError:
    pass
with open(os.path.join(r, 'still-writable'), 'wb') as f:
    f.write(b'yes')
EOF
umount_after_error 1

# 3. A directory block.
populate
BLK=$(geom first-block "$DIR")
geom flip "$BLK" 2000
log_mark
t_mount
python3 - "$T_MNT" <<'EOF' || t_fail "bad directory block"
import errno, os, sys
r = sys.argv[1]
try:
    os.listdir(os.path.join(r, 'd'))
    raise AssertionError('listing a corrupt directory worked')
except OSError as e:
    assert e.errno in (errno.EUCLEAN, errno.EIO), e
with open(os.path.join(r, 'f05'), 'rb') as f:
    assert f.read() == b'5' * 100
try:
    os.mkdir(os.path.join(r, 'newdir'))
    raise AssertionError('still writable after the error')
except OSError as e:
    assert e.errno == errno.EROFS, e
EOF
logged "block $BLK\b" || t_fail "the log does not name directory block $BLK"
umount_after_error 1
fsck_finds_errors "directory block $BLK"
t_say "ok"
