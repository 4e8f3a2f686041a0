#!/bin/sh
# SPDX-License-Identifier: MIT
# Read-only mount (-o ro): everything reads as written, every kind of
# change fails with EROFS, the daemon exits 0, and the image is left
# byte for byte as it was.  Read-only media (the image on a read-only
# bind mount, or 0444 for a user who may only read it): -o ro and
# fsck.mqfs -n work, a read-write mount and fsck -y say why they cannot,
# and a journal that needs recovery is refused rather than ignored.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 64M

t_mount
python3 - "$T_MNT" <<'EOF' || t_fail "populate"
import os, sys
r = sys.argv[1]
os.mkdir(os.path.join(r, 'dir'))
with open(os.path.join(r, 'dir/file'), 'wb') as f:
    f.write(b'read only' * 1000)
os.symlink('dir/file', os.path.join(r, 'link'))
os.setxattr(os.path.join(r, 'dir/file'), 'user.x', b'y')
EOF
t_umount
t_fsck
before=$(sha256sum "$T_IMG" | cut -d' ' -f1)

t_mount -o ro
grep " $T_MNT " /proc/mounts | grep -q '[ ,]ro[ ,]' ||
	t_fail "the kernel mount is not read-only"
python3 - "$T_MNT" <<'EOF' || t_fail "read-only behaviour"
import errno, os, sys
r = sys.argv[1]
f = os.path.join(r, 'dir/file')
with open(f, 'rb') as fh:
    assert fh.read() == b'read only' * 1000
assert os.readlink(os.path.join(r, 'link')) == 'dir/file'
assert os.getxattr(f, 'user.x') == b'y'
assert os.listdir(os.path.join(r, 'dir')) == ['file']
os.statvfs(r)
changes = [
    lambda: open(f, 'ab'),
    lambda: open(os.path.join(r, 'new'), 'wb'),
    lambda: os.mkdir(os.path.join(r, 'newdir')),
    lambda: os.unlink(f),
    lambda: os.rmdir(os.path.join(r, 'dir')),
    lambda: os.rename(f, os.path.join(r, 'moved')),
    lambda: os.link(f, os.path.join(r, 'hard')),
    lambda: os.symlink('x', os.path.join(r, 'sym')),
    lambda: os.chmod(f, 0o600),
    lambda: os.chown(f, 1, 1),
    lambda: os.utime(f, (1, 1)),
    lambda: os.truncate(f, 0),
    lambda: os.setxattr(f, 'user.z', b'1'),
    lambda: os.removexattr(f, 'user.x'),
    lambda: os.mkfifo(os.path.join(r, 'fifo')),
]
for i, change in enumerate(changes):
    try:
        change()
        raise AssertionError('change %d succeeded' % i)
    except OSError as e:
        assert e.errno == errno.EROFS, (i, e)
EOF
t_umount
after=$(sha256sum "$T_IMG" | cut -d' ' -f1)
[ "$before" = "$after" ] || t_fail "a read-only mount changed the image"
t_fsck

# fails WHAT NEEDLE CMD...: CMD must fail and its output name NEEDLE.
fails() {
	what=$1 needle=$2
	shift 2
	"$@" >"$T_DIR/out" 2>&1 && t_fail "$what succeeded"
	grep -q -- "$needle" "$T_DIR/out" ||
		{ cat "$T_DIR/out"; t_fail "$what: no '$needle' in the message"; }
}

ro=$T_DIR/ro
mkdir "$ro" && mount --bind "$T_DIR" "$ro" || t_fail "bind mount"
T_BGMNT=$ro
mount -o remount,bind,ro "$ro" || t_fail "read-only bind mount"
rw_img=$T_IMG
T_IMG=$ro/img
fails "a read-write mount of read-only media" "with -o ro" \
	"$MQFS" "$T_IMG" "$T_MNT" -f
t_is_mounted "$T_MNT" && t_fail "mounted read-write from read-only media"
t_mount -o ro
python3 - "$T_MNT" <<'EOF' || t_fail "read from read-only media"
import os, sys
with open(os.path.join(sys.argv[1], 'dir/file'), 'rb') as fh:
    assert fh.read() == b'read only' * 1000
EOF
t_umount
t_fsck
"$FSCK" -y -f "$T_IMG" >"$T_DIR/out" 2>&1
[ $? = 8 ] || { cat "$T_DIR/out"; t_fail "fsck -y on read-only media: not 8"; }

# A crash leaves a journal to recover: -o ro on read-only media cannot
# replay it, and says so instead of serving the stale filesystem.
T_IMG=$rw_img
t_mount
python3 - "$T_MNT" <<'EOF' || t_fail "write before the crash"
import os, sys
with open(os.path.join(sys.argv[1], 'dir/new'), 'wb') as f:
    f.write(b'after the crash' * 100)
    os.fsync(f.fileno())
EOF
kill -9 "$T_PID"
t_drop_dead_mount
fails "-o ro with a journal to recover on read-only media" "recovery" \
	"$MQFS" "$ro/img" "$T_MNT" -f -o ro
t_mount -o ro		# writable media: recovered, as ext4 does
[ -f "$T_MNT/dir/new" ] || t_fail "recovered file missing"
t_umount
t_fsck

# 0444 and not the owner: a plain user can still check it.
chmod 711 "$T_DIR"
chmod 0444 "$T_IMG"
setpriv --reuid=65534 --regid=65534 --clear-groups "$FSCK" -n -f "$T_IMG" \
	>"$T_DIR/out" 2>&1 ||
	{ cat "$T_DIR/out"; t_fail "fsck -n of a 0444 image as nobody"; }
chmod 0644 "$T_IMG"
t_say "ok"
