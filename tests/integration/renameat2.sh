#!/bin/sh
# SPDX-License-Identifier: MIT
# renameat2(2) flags through the mount (python3 ctypes, syscall 316:
# Debian 12's mv has no --exchange): RENAME_EXCHANGE of files and of
# directories across directories (contents swapped, ".." and the link
# counts right), RENAME_WHITEOUT (the old name becomes a character
# device 0/0, for files and directories, over a target or not) and
# RENAME_NOREPLACE (EEXIST, nothing changed).  fsck-clean after each
# step, and everything as left after a remount.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 64M

# r2.py exchange|check-exchange|whiteout|check-whiteout|noreplace MOUNT
cat >"$T_DIR/r2.py" <<'EOF'
import ctypes, errno, os, stat, sys

cmd, mnt = sys.argv[1:3]
libc = ctypes.CDLL(None, use_errno=True)
SYS_renameat2, AT_FDCWD = 316, -100
NOREPLACE, EXCHANGE, WHITEOUT = 1, 2, 4


def p(name):
    return os.path.join(mnt, name)


def renameat2(old, new, flags):
    if libc.syscall(SYS_renameat2, AT_FDCWD, p(old).encode(), AT_FDCWD,
                    p(new).encode(), flags):
        return ctypes.get_errno()
    return 0


def must(old, new, flags):
    err = renameat2(old, new, flags)
    if err:
        sys.exit('renameat2(%s, %s, %d): %s' % (old, new, flags,
                                                os.strerror(err)))


def put(name, data):
    with open(p(name), 'w') as f:
        f.write(data)


def get(name):
    with open(p(name)) as f:
        return f.read()


def expect(what, got, want):
    if got != want:
        sys.exit('%s: %r, expected %r' % (what, got, want))


def cmd_exchange():
    os.makedirs(p('A/da/sub'))
    os.makedirs(p('B/db'))
    put('A/f', 'from A')
    put('B/g', 'from B')
    put('A/da/inside', 'da')
    must('A/f', 'B/g', EXCHANGE)
    must('A/da', 'B/db', EXCHANGE)
    must('A/da', 'B/g', EXCHANGE)           # a directory and a file


def same_dir(a, b):
    expect(a + ' is ' + b, os.stat(p(a)).st_ino, os.stat(p(b)).st_ino)


def cmd_check_exchange():
    # A/f <-> B/g, then A/da <-> B/db, then A/da (was B/db) <-> B/g.
    expect('A/f', get('A/f'), 'from B')
    expect('A/da', get('A/da'), 'from A')
    expect('B/db/inside', get('B/db/inside'), 'da')
    same_dir('B/db/..', 'B')
    same_dir('B/g/..', 'B')
    same_dir('B/db/sub/..', 'B/db')
    expect('nlink of A', os.stat(p('A')).st_nlink, 2)
    expect('nlink of B', os.stat(p('B')).st_nlink, 4)
    expect('nlink of B/db', os.stat(p('B/db')).st_nlink, 3)


def whiteout(name):
    st = os.lstat(p(name))
    expect(name + ' is a character device', stat.S_ISCHR(st.st_mode), True)
    expect(name + ' mode', stat.S_IMODE(st.st_mode), 0)
    expect(name + ' rdev', st.st_rdev, 0)


def cmd_whiteout():
    os.makedirs(p('W/dir/x'))
    put('W/file', 'w')
    put('W/target', 'gone')
    must('W/file', 'W/moved', WHITEOUT)
    must('W/moved', 'W/target', WHITEOUT)   # over a target
    must('W/dir', 'B/wdir', WHITEOUT | NOREPLACE)


def cmd_check_whiteout():
    for name in ('W/file', 'W/moved', 'W/dir'):
        whiteout(name)
    expect('W/target', get('W/target'), 'w')
    same_dir('B/wdir/..', 'B')
    expect('nlink of W', os.stat(p('W')).st_nlink, 2)
    expect('nlink of B', os.stat(p('B')).st_nlink, 5)


def cmd_noreplace():
    put('n1', 'one')
    put('n2', 'two')
    expect('NOREPLACE over a name', renameat2('n1', 'n2', NOREPLACE),
           errno.EEXIST)
    expect('n1', get('n1'), 'one')
    expect('n2', get('n2'), 'two')
    expect('EXCHANGE with WHITEOUT', renameat2('n1', 'n2',
                                               EXCHANGE | WHITEOUT),
           errno.EINVAL)
    must('n1', 'n3', NOREPLACE)


{'exchange': cmd_exchange, 'check-exchange': cmd_check_exchange,
 'whiteout': cmd_whiteout, 'check-whiteout': cmd_check_whiteout,
 'noreplace': cmd_noreplace}[cmd]()
EOF
r2() { python3 "$T_DIR/r2.py" "$1" "$T_MNT" </dev/null || t_fail "$1"; }

# step CMD CHECK: CMD, then CHECK now, after a remount, and fsck clean.
step() {
	t_mount
	r2 "$1"
	[ -z "$2" ] || r2 "$2"
	t_umount
	t_fsck
	[ -z "$2" ] && return
	t_mount
	r2 "$2"
	t_umount
}

step exchange check-exchange
step whiteout check-whiteout
step noreplace ''
t_say "ok"
