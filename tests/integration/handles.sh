#!/bin/sh
# SPDX-License-Identifier: MIT
# File handles (name_to_handle_at, open_by_handle_at: what NFS export,
# fanotify with FIDs and backup tools keep), on cache=kernel and
# cache=none.  Handles of files and directories (nested, so that the
# kernel reconnects them through ".."), taken on one mount, open the
# same file after an unmount and the next mount: the contents and the
# directory listings match.  A deleted file's handle is stale (ESTALE),
# and so is the handle of a deleted file whose inode number a new file
# now has (the generation differs).  A file unlinked while open still
# opens by handle, as on the kernel's filesystems.  fsck-clean after.
. "$(dirname "$0")/lib.sh"
t_init
STATE=$T_DIR/handles.json

# fh.py take|check|stale|reuse|open-unlinked MOUNT STATE
cat >"$T_DIR/fh.py" <<'EOF'
import ctypes, errno, hashlib, json, os, sys

cmd, mnt, state = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
MAX_HANDLE_SZ = 128


class FileHandle(ctypes.Structure):
    _fields_ = [('handle_bytes', ctypes.c_uint), ('handle_type', ctypes.c_int),
                ('f_handle', ctypes.c_ubyte * MAX_HANDLE_SZ)]


def take(path):
    fh = FileHandle(handle_bytes=MAX_HANDLE_SZ)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(AT_FDCWD, path.encode(), ctypes.byref(fh),
                              ctypes.byref(mount_id), 0):
        e = ctypes.get_errno()
        sys.exit('name_to_handle_at %s: %s' % (path, os.strerror(e)))
    return [fh.handle_type, bytes(fh.f_handle[:fh.handle_bytes]).hex()]


def open_handle(h, flags):
    raw = bytes.fromhex(h[1])
    fh = FileHandle(handle_bytes=len(raw), handle_type=h[0])
    ctypes.memmove(fh.f_handle, raw, len(raw))
    mfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = libc.open_by_handle_at(mfd, ctypes.byref(fh), flags)
        return fd if fd >= 0 else -ctypes.get_errno()
    finally:
        os.close(mfd)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def p(name):
    return os.path.join(mnt, name)


def make():
    os.makedirs(p('d1/d2/d3'))
    files = {'top': 5000, 'd1/mid': 1, 'd1/d2/d3/deep': 70000,
             'gone': 10, 'reused': 20}
    for name, size in files.items():
        with open(p(name), 'wb') as f:
            f.write(os.urandom(size))
    for i in range(5):
        open(p('d1/d2/e%d' % i), 'w').close()


def cmd_take():
    make()
    out = {'files': {}, 'dirs': {}, 'ino': {}}
    for name in ('top', 'd1/mid', 'd1/d2/d3/deep', 'gone', 'reused'):
        with open(p(name), 'rb') as f:
            out['files'][name] = [take(p(name)), sha(f.read())]
        out['ino'][name] = os.stat(p(name)).st_ino
    for name in ('d1', 'd1/d2', 'd1/d2/d3'):
        out['dirs'][name] = [take(p(name)), sorted(os.listdir(p(name)))]
    json.dump(out, open(state, 'w'))


def cmd_check():
    st = json.load(open(state))
    for name, (h, digest) in st['files'].items():
        if name in ('gone', 'reused'):
            continue
        fd = open_handle(h, os.O_RDONLY)
        if fd < 0:
            sys.exit('open_by_handle_at(%s): %s' % (name, os.strerror(-fd)))
        with os.fdopen(fd, 'rb') as f:
            if sha(f.read()) != digest:
                sys.exit('%s: other contents by handle' % name)
    for name, (h, names) in st['dirs'].items():
        fd = open_handle(h, os.O_RDONLY | os.O_DIRECTORY)
        if fd < 0:
            sys.exit('open_by_handle_at(%s/): %s' % (name, os.strerror(-fd)))
        try:
            if sorted(os.listdir(fd)) != names:
                sys.exit('%s/: other entries by handle' % name)
        finally:
            os.close(fd)


def expect_stale(name):
    h = json.load(open(state))['files'][name][0]
    fd = open_handle(h, os.O_RDONLY)
    if fd >= 0:
        sys.exit('%s: a deleted file opened by handle' % name)
    if fd != -errno.ESTALE:
        sys.exit('%s: %s, expected ESTALE' % (name, os.strerror(-fd)))


def cmd_remove():
    os.unlink(p('gone'))
    os.unlink(p('reused'))


def cmd_reuse():
    # The freed number goes to one of the next new files.
    want = json.load(open(state))['ino']['reused']
    for i in range(64):
        with open(p('new%d' % i), 'wb') as f:
            f.write(b'new')
        if os.stat(p('new%d' % i)).st_ino == want:
            return
    sys.exit('inode %d was not reused by 64 new files' % want)


def cmd_stale():
    expect_stale('gone')
    expect_stale('reused')


def cmd_open_unlinked():
    with open(p('held'), 'wb') as f:
        f.write(b'still here')
    h = take(p('held'))
    keep = os.open(p('held'), os.O_RDONLY)
    os.unlink(p('held'))
    fd = open_handle(h, os.O_RDONLY)
    os.close(keep)
    if fd < 0:
        sys.exit('unlinked open file by handle: %s' % os.strerror(-fd))
    with os.fdopen(fd, 'rb') as f:
        if f.read() != b'still here':
            sys.exit('unlinked open file: other contents by handle')


{'take': cmd_take, 'check': cmd_check, 'remove': cmd_remove,
 'reuse': cmd_reuse, 'stale': cmd_stale,
 'open-unlinked': cmd_open_unlinked}[cmd]()
EOF
fh() { python3 "$T_DIR/fh.py" "$1" "$T_MNT" "$STATE" </dev/null ||
	t_fail "$1 ($2)"; }

for cache in kernel none; do
	t_mkfs 64M
	t_mount -o cache=$cache
	fh take $cache
	fh open-unlinked $cache
	t_umount
	# The kernel has none of the inodes now: LOOKUP "." and ".." serve.
	t_mount -o cache=$cache
	fh check $cache
	fh remove $cache
	t_umount
	t_mount -o cache=$cache
	fh stale "$cache, deleted"
	fh reuse $cache
	t_umount
	t_mount -o cache=$cache
	fh stale "$cache, inode number reused"
	fh check "$cache, after the deletions"
	t_umount
	t_fsck
done
t_say "ok"
