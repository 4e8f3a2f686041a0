#!/bin/sh
# SPDX-License-Identifier: MIT
# Persistence: a tree (files of many sizes, sparse files, directories,
# hard and symbolic links, xattrs, modes, owners, nanosecond times)
# survives unmount + mount and is fsck-clean; changes made on the second
# mount survive a third and a read-only mount; SIGTERM stops the daemon
# cleanly.  Then a crash: files fsynced before the daemon is killed with
# SIGKILL are there after the journal replay, and the image is
# fsck-clean after the next clean unmount.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 128M
MANIFEST=$T_DIR/manifest.json

# tree.py make|check|change|check2 ROOT MANIFEST
cat >"$T_DIR/tree.py" <<'EOF'
import hashlib, json, os, random, stat, sys

cmd, root, manifest = sys.argv[1:4]
rng = random.Random(7)


def digest(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def record(root):
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            e = {'mode': st.st_mode, 'uid': st.st_uid, 'gid': st.st_gid,
                 'mtime': st.st_mtime_ns, 'nlink': st.st_nlink,
                 'xattrs': {k: os.getxattr(p, k, follow_symlinks=False).hex()
                            for k in os.listxattr(p, follow_symlinks=False)}}
            if stat.S_ISREG(st.st_mode):
                e['size'] = st.st_size
                e['sha'] = digest(p)
                e['ino'] = st.st_ino
            elif stat.S_ISLNK(st.st_mode):
                e['target'] = os.readlink(p)
            out[os.path.relpath(p, root)] = e
    return out


def make():
    os.makedirs(os.path.join(root, 'a/b/c'))
    for i, size in enumerate([0, 1, 4095, 4096, 4097, 65536, 1 << 20,
                              (3 << 20) + 17]):
        with open(os.path.join(root, 'a/f%d' % i), 'wb') as f:
            f.write(rng.randbytes(size))
    for i in range(40):
        with open(os.path.join(root, 'a/b/small%02d' % i), 'wb') as f:
            f.write(b'%d' % i * i)
    with open(os.path.join(root, 'sparse'), 'wb') as f:
        f.seek(10 << 20)
        f.write(b'end')
    os.link(os.path.join(root, 'a/f3'), os.path.join(root, 'a/b/c/hard'))
    os.symlink('../f1', os.path.join(root, 'a/b/sym'))
    os.symlink('L' * 3000, os.path.join(root, 'longsym'))
    os.setxattr(os.path.join(root, 'a/f2'), 'user.color', b'blue')
    os.setxattr(os.path.join(root, 'a/b'), 'user.dir', rng.randbytes(500))
    os.chmod(os.path.join(root, 'a/f4'), 0o4711)
    os.chown(os.path.join(root, 'a/f5'), 1000, 2000)
    os.utime(os.path.join(root, 'a/f6'), ns=(123456789, 987654321012))
    os.mkfifo(os.path.join(root, 'fifo'))
    os.mkdir(os.path.join(root, 'empty'))


def change():
    os.unlink(os.path.join(root, 'a/f0'))
    os.rename(os.path.join(root, 'a/f7'), os.path.join(root, 'a/b/c/moved'))
    for i in range(0, 40, 2):
        os.unlink(os.path.join(root, 'a/b/small%02d' % i))
    with open(os.path.join(root, 'a/f6'), 'r+b') as f:
        f.seek(1000)
        f.write(b'changed')
    os.truncate(os.path.join(root, 'a/f5'), 100)
    os.removexattr(os.path.join(root, 'a/f2'), 'user.color')
    os.setxattr(os.path.join(root, 'a/f2'), 'user.shape', b'round')
    os.rmdir(os.path.join(root, 'empty'))
    os.makedirs(os.path.join(root, 'new/dir'))


def check_blocks(root, have):
    # Allocation is exact (no preallocation); a few blocks of extent tree
    # at most.  Only checked on a fresh mount: the writer's kernel may
    # not have seen the writeback allocate yet.
    bad = 0
    for k, e in have.items():
        if 'size' not in e:
            continue
        want = 8 if k == 'sparse' else (e['size'] + 4095) // 4096 * 8
        blocks = os.lstat(os.path.join(root, k)).st_blocks
        if not want <= blocks <= want + 16:
            bad += 1
            print('BLOCKS %s: size %d, st_blocks %d, want %d' %
                  (k, e['size'], blocks, want))
    return bad


def compare(want, have):
    bad = check_blocks(root, have)
    for k in sorted(set(want) | set(have)):
        if want.get(k) != have.get(k):
            bad += 1
            print('MISMATCH %s:\n  want %s\n  have %s' % (k, want.get(k),
                                                      have.get(k)))
    if bad:
        sys.exit(1)


if cmd == 'make':
    make()
elif cmd == 'change':
    change()
if cmd in ('make', 'change'):
    with open(manifest, 'w') as f:
        json.dump(record(root), f)
else:
    with open(manifest) as f:
        compare(json.load(f), record(root))
EOF

tree() { python3 "$T_DIR/tree.py" "$1" "$T_MNT" "$MANIFEST" || t_fail "tree $1"; }

t_mount
tree make
t_umount
t_fsck

t_mount
tree check
tree change
t_umount
t_fsck

t_mount -o ro
tree check
t_umount

# SIGTERM is a clean stop: the daemon unmounts and exits 0.
t_mount
echo term >"$T_MNT/term" || t_fail "write"
kill -TERM "$T_PID"
t_wait_exit "$T_PID" 300 || t_fail "the daemon ignored SIGTERM"
wait "$T_PID"
rc=$?
T_PID=
[ "$rc" = 0 ] || t_fail "SIGTERM: exit $rc"
! t_is_mounted "$T_MNT" || t_fail "SIGTERM left the mount behind"
t_fsck
t_mount
[ "$(cat "$T_MNT/term")" = term ] || t_fail "data written before SIGTERM"
rm "$T_MNT/term"
t_umount

# A crash: SIGKILL after fsync; the journal must bring the files back.
t_mount -o commit=60
python3 - "$T_MNT" <<'EOF' || t_fail "crash: writing"
import os, sys
root = sys.argv[1]
for i in range(20):
    with open(os.path.join(root, 'synced%d' % i), 'wb') as f:
        f.write(bytes([i]) * (10000 * (i + 1)))
        f.flush()
        os.fsync(f.fileno())
os.mkdir(os.path.join(root, 'synced-dir'))
fd = os.open(root, os.O_RDONLY)
os.fsync(fd)
os.close(fd)
EOF
kill -9 "$T_PID"
t_drop_dead_mount
t_mount
python3 - "$T_MNT" <<'EOF' || t_fail "crash: files lost"
import os, sys
root = sys.argv[1]
for i in range(20):
    with open(os.path.join(root, 'synced%d' % i), 'rb') as f:
        assert f.read() == bytes([i]) * (10000 * (i + 1)), i
assert os.path.isdir(os.path.join(root, 'synced-dir'))
EOF
t_umount
t_fsck
t_say "ok"
