#!/bin/sh
# SPDX-License-Identifier: MIT
# Running out of space: on a small image, writes end with ENOSPC (from
# write, fsync or close: the kernel's writeback cache may report it
# late); everything written before stays readable; after deleting the
# files the space is usable again to about the same amount, in both
# cache modes, and at once: creates, mkdir, symlinks and xattrs right
# after a delete wait for the freed blocks' checkpoint instead of failing.
# Then inodes run out the same way.  Under cache=kernel a write loop
# gets ENOSPC from write() itself, a bounded amount past the free space
# (the dirty limit follows the free space: src/fuse/bdi.c), and a write
# past 64 TiB fails with EFBIG from fsync and the next write().
# io_uring direct writes that run out of space get ENOSPC, not EIO.
# fsck-clean throughout.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 24M -N 512

cat >"$T_DIR/fill.py" <<'EOF'
import errno, hashlib, json, os, sys

cmd, root, state = sys.argv[1:4]
CHUNK = 256 << 10


def fill():
    done, full = {}, False
    i = 0
    while not full:
        path = os.path.join(root, 'fill%03d' % i)
        data = hashlib.sha256(b'%d' % i).digest() * (CHUNK // 32)
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
        written = 0
        try:
            for _ in range(4):
                written += os.write(fd, data)
            os.fsync(fd)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
            full = True
        try:
            os.close(fd)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
            full = True
        if not full:
            done[path] = written
        i += 1
        assert i < 1000, 'never ran out of space'
    return done


def check(done):
    for path, size in done.items():
        i = int(path[-3:])
        data = hashlib.sha256(b'%d' % i).digest() * (CHUNK // 32)
        with open(path, 'rb') as f:
            got = f.read()
        assert got == data * (size // CHUNK), path


if cmd == 'fill':
    sv0 = os.statvfs(root)
    done = fill()
    sv = os.statvfs(root)
    total = sum(done.values())
    # Nearly all the free space went to the files.
    unit = sv0.f_frsize or sv0.f_bsize
    assert total >= sv0.f_bavail * unit * 0.8, (total, sv0)
    assert sv.f_bavail * unit < (2 << 20), sv
    check(done)
    # Still usable when full: reads, stat, unlink.
    os.listdir(root)
    with open(state, 'w') as f:
        json.dump({'total': total, 'done': done}, f)
    print('filled %d MiB in %d files' % (total >> 20, len(done)))
elif cmd == 'check':
    with open(state) as f:
        check(json.load(f)['done'])
elif cmd == 'empty':
    for name in os.listdir(root):
        os.unlink(os.path.join(root, name))
    with open(os.path.join(root, 'afterwards'), 'wb') as f:
        f.write(b'ok')
elif cmd == 'delete':
    # Right after the delete the freed blocks wait for a checkpoint; a
    # create, mkdir, symlink or xattr must wait for it, not fail.
    for name in os.listdir(root):
        os.unlink(os.path.join(root, name))
    for i in range(20):
        d = os.path.join(root, 'd%02d' % i)
        os.mkdir(d)
        with open(os.path.join(d, 'f'), 'wb') as f:
            f.write(b'x' * 8192)
        os.symlink('y' * 300, os.path.join(d, 'long-link'))
        os.setxattr(d, 'user.k', b'v' * 64)
    for i in range(20):
        d = os.path.join(root, 'd%02d' % i)
        for name in os.listdir(d):
            os.unlink(os.path.join(d, name))
        os.rmdir(d)
    with open(os.path.join(root, 'afterwards'), 'wb') as f:
        f.write(b'ok')
elif cmd == 'refill':
    with open(state) as f:
        before = json.load(f)['total']
    total = sum(fill().values())
    assert abs(total - before) <= max(before // 10, 2 << 20), (before, total)
    print('refilled %d MiB' % (total >> 20))
elif cmd == 'loop':
    sv = os.statvfs(root)
    free = sv.f_bavail * sv.f_frsize
    path = os.path.join(root, 'loop')
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    buf, n = b'z' * (1 << 20), 0
    try:
        while True:
            n += os.write(fd, buf)
            assert n < free + (64 << 20), 'write() never failed'
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    # What write() took beyond the space: the dirty limit's floor
    # (MQFS_BDI_MIN_CAP, 1 MiB) and the writes in flight.
    over = n - free
    assert over <= (4 << 20), 'write() took %d bytes, %d free' % (n, free)
    try:
        os.fsync(fd)
        raise AssertionError('fsync after a lost write-back succeeded')
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    try:
        os.close(fd)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    os.unlink(path)
    print('write() failed after %d MiB, %d KiB past the %d MiB free'
          % (n >> 20, over >> 10, free >> 20))
elif cmd == 'efbig':
    # The page cache takes the first write (FUSE fixes the kernel's
    # largest file at MAX_LFS_FILESIZE); its write-back fails, and fsync
    # and the next write() say so.
    path = os.path.join(root, 'big')
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    os.pwrite(fd, b'x' * 4096, 1 << 62)
    for what in ('fsync', 'pwrite'):
        try:
            if what == 'fsync':
                os.fsync(fd)
            else:
                os.pwrite(fd, b'y' * 4096, (1 << 62) + 8192)
            raise AssertionError('%s past 64 TiB succeeded' % what)
        except OSError as e:
            assert e.errno == errno.EFBIG, (what, e)
    os.close(fd)
    os.unlink(path)
elif cmd == 'inodes':
    n = 0
    try:
        while True:
            os.close(os.open(os.path.join(root, 'i%05d' % n),
                             os.O_CREAT | os.O_WRONLY, 0o644))
            n += 1
            assert n < 100000, 'inodes never ran out'
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    assert 400 <= n <= 512, n
    assert os.statvfs(root).f_ffree == 0
    for i in range(n):
        os.unlink(os.path.join(root, 'i%05d' % i))
    os.mkdir(os.path.join(root, 'again'))
    print('%d inodes' % n)
EOF
fill() { python3 "$T_DIR/fill.py" "$1" "$T_MNT" "$T_DIR/state.json" || t_fail "$1"; }

t_mount
fill fill
t_umount
t_fsck

t_mount -o cache=none
fill check
fill empty
t_umount
t_fsck

t_mount -o cache=none
fill refill
fill delete
fill refill
fill empty
fill inodes
t_umount
t_fsck

# Asynchronous direct writes (io_uring) into the last free blocks: a
# request that fits only in part must fail with ENOSPC, not EIO (the
# kernel turns a short asynchronous write into EIO, whatever the cause).
if command -v fio >/dev/null; then
	t_mount -o cache=none
	fio --name=full --filename="$T_MNT/aio" --size=64m --rw=write \
		--bs=1m --ioengine=io_uring --direct=1 --iodepth=8 \
		--fallocate=none \
		>"$T_DIR/aio.log" 2>&1 && t_fail "fio filled more than the fs holds"
	grep -q 'io_u error.*No space left on device' "$T_DIR/aio.log" ||
		t_fail "no ENOSPC: $(grep -m 3 error "$T_DIR/aio.log")"
	grep -q 'Input/output error' "$T_DIR/aio.log" &&
		t_fail "EIO at ENOSPC: $(grep -m 3 error "$T_DIR/aio.log")"
	rm "$T_MNT/aio"
	t_umount
	t_fsck
fi

t_mount
fill loop
fill efbig
t_umount
t_fsck
t_say "ok"
