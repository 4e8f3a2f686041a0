#!/bin/sh
# SPDX-License-Identifier: MIT
# Read-only mount (-o ro): everything reads as written, every kind of
# change fails with EROFS, the daemon exits 0, and the image is left
# byte for byte as it was.
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
t_say "ok"
