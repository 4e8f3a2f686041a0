#!/bin/sh
# SPDX-License-Identifier: MIT
# O_TMPFILE, on cache=kernel and cache=none: an open file without a
# name (no links), linked into the tree by linkat of /proc/self/fd/N
# and by linkat(AT_EMPTY_PATH), its contents there after a remount; one
# opened with O_EXCL cannot be linked (ENOENT); one never linked gives
# its space back at close.  Then a crash: the daemon killed with a
# tmpfile open, fsck finds the image consistent, the next mount frees
# the file, and fsck is clean after.
. "$(dirname "$0")/lib.sh"
t_init

# tmp.py link|unlinked|crash MOUNT [DAEMON_PID]
cat >"$T_DIR/tmp.py" <<'EOF'
import ctypes, errno, os, signal, sys, time

cmd, mnt = sys.argv[1:3]
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH = -100, 0x400, 0x1000
DATA = bytes(range(256)) * 4096 + b'tail'


def p(name):
    return os.path.join(mnt, name)


def tmpfile(extra=0):
    fd = os.open(mnt, os.O_TMPFILE | os.O_RDWR | extra, 0o640)
    os.write(fd, DATA)
    if os.fstat(fd).st_nlink != 0:
        sys.exit('a new tmpfile has links')
    return fd


def link(src, dst, flags):
    if libc.linkat(AT_FDCWD, src, AT_FDCWD, p(dst).encode(), flags):
        return ctypes.get_errno()
    return 0


def proc_fd(fd):
    return b'/proc/self/fd/%d' % fd


def free_blocks():
    return os.statvfs(mnt).f_bfree


def cmd_link():
    fd = tmpfile()
    err = link(proc_fd(fd), 'by-proc', AT_SYMLINK_FOLLOW)
    if err:
        sys.exit('linkat(/proc/self/fd): %s' % os.strerror(err))
    if os.fstat(fd).st_nlink != 1:
        sys.exit('linked tmpfile: nlink %d' % os.fstat(fd).st_nlink)
    os.close(fd)
    fd = tmpfile()
    if libc.linkat(fd, b'', AT_FDCWD, p('by-fd').encode(), AT_EMPTY_PATH):
        sys.exit('linkat(AT_EMPTY_PATH): %s' %
                 os.strerror(ctypes.get_errno()))
    os.close(fd)
    fd = tmpfile(os.O_EXCL)
    err = link(proc_fd(fd), 'excl', AT_SYMLINK_FOLLOW)
    if err != errno.ENOENT:
        sys.exit('O_EXCL tmpfile: linkat gave %s' % os.strerror(err))
    os.close(fd)


def cmd_check():
    for name in ('by-proc', 'by-fd'):
        with open(p(name), 'rb') as f:
            if f.read() != DATA:
                sys.exit('%s: other contents' % name)
        if os.stat(p(name)).st_nlink != 1:
            sys.exit('%s: nlink %d' % (name, os.stat(p(name)).st_nlink))
    if os.path.exists(p('excl')):
        sys.exit('excl exists')


def cmd_unlinked():
    before = free_blocks()
    fd = tmpfile()
    os.fsync(fd)
    if free_blocks() >= before:
        sys.exit('a tmpfile with data took no space')
    os.close(fd)
    for _ in range(100):            # release and forget come async: 5 s
        if free_blocks() == before:
            return
        time.sleep(0.05)
    sys.exit('a closed tmpfile kept its space: %d free, %d before' %
             (free_blocks(), before))


def cmd_crash():
    fd = tmpfile()
    os.fsync(fd)                    # the orphan list entry is durable
    os.kill(int(sys.argv[3]), signal.SIGKILL)


{'link': cmd_link, 'check': cmd_check, 'unlinked': cmd_unlinked,
 'crash': cmd_crash}[cmd]()
EOF
tmp() { python3 "$T_DIR/tmp.py" "$@" </dev/null || t_fail "$1"; }

for cache in kernel none; do
	t_mkfs 64M
	t_mount -o cache=$cache
	tmp link "$T_MNT"
	tmp check "$T_MNT"
	tmp unlinked "$T_MNT"
	t_umount
	t_fsck
	t_mount -o cache=$cache
	tmp check "$T_MNT"
	t_umount
done

# A crash with a tmpfile open: the orphan list frees it at the next mount.
t_mount
free=$(stat -f -c %f "$T_MNT")
tmp crash "$T_MNT" "$T_PID"
t_drop_dead_mount
t_fsck
t_mount
after=$(stat -f -c %f "$T_MNT")
[ "$after" = "$free" ] ||
	t_fail "after the crash: $after free blocks, $free before the tmpfile"
tmp check "$T_MNT"
t_umount
t_fsck
t_say "ok"
