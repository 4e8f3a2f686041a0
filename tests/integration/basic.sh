#!/bin/sh
# SPDX-License-Identifier: MIT
# Basic POSIX operations through the mounted filesystem, in both cache
# modes: create/read/write/append/truncate, chmod/chown, timestamps with
# nanoseconds, rename and its RENAME_NOREPLACE/EXCHANGE variants, hard
# and symbolic links (inline and block targets), xattrs, special files,
# directories, statfs/df, sparse files with SEEK_DATA/HOLE, fallocate,
# O_DIRECT, mmap, unlinked-but-open files, setgid directories and the
# kernel's permission checks (default_permissions).  Then unmount (exit
# 0) and fsck clean.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 256M

for cache in kernel none; do
	t_mount -o "cache=$cache,allow_other"
	t_say "cache=$cache"
	t_py "$T_MNT/$cache" "$cache" <<'EOF'
import ctypes, errno, mmap, os, stat, sys, time

root, cache = sys.argv[1], sys.argv[2]
os.mkdir(root)
os.chdir(root)
os.umask(0o022)
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                           ctypes.c_int64]
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                           ctypes.c_char_p, ctypes.c_uint]


def oserr(ret):
    if ret:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def expect_err(codes, fn, *a):
    codes = codes if isinstance(codes, tuple) else (codes,)
    try:
        fn(*a)
    except OSError as e:
        assert e.errno in codes, f"{fn.__name__}{a}: {e} (want {codes})"
        return
    raise AssertionError(f"{fn.__name__}{a}: succeeded, want {codes}")


def put(path, data, mode='wb'):
    with open(path, mode) as f:
        f.write(data)


def get(path):
    with open(path, 'rb') as f:
        return f.read()


def t_create_read_write():
    put('a', b'hello')
    assert get('a') == b'hello'
    st = os.stat('a')
    assert stat.S_ISREG(st.st_mode) and st.st_size == 5 and st.st_nlink == 1
    assert stat.S_IMODE(st.st_mode) == 0o644, oct(st.st_mode)   # umask
    assert st.st_uid == 0 and st.st_gid == 0
    data = os.urandom(3 << 20) + b'tail'
    put('big', data)
    assert get('big') == data
    fd = os.open('big', os.O_RDWR)
    os.pwrite(fd, b'X' * 5000, 4000)
    want = data[3999:4000] + b'X' * 5000 + data[9000:9001]
    assert os.pread(fd, 5002, 3999) == want
    assert os.pread(fd, 100, len(data)) == b''                # at EOF
    os.close(fd)
    expect_err(errno.EEXIST, os.open, 'a', os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    expect_err(errno.ENOENT, os.open, 'nope', os.O_RDONLY)


def t_append():
    put('ap', b'one')
    put('ap', b'two', 'ab')
    fd = os.open('ap', os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'three')
    os.pwrite(fd, b'!', 0)          # O_APPEND: pwrite appends on Linux
    os.close(fd)
    assert get('ap') == b'onetwothree!', get('ap')


def t_truncate():
    put('tr', b'x' * 10000)
    os.truncate('tr', 100)
    assert get('tr') == b'x' * 100
    os.truncate('tr', 9000)
    assert get('tr') == b'x' * 100 + b'\0' * 8900
    fd = os.open('tr', os.O_RDWR)
    os.ftruncate(fd, 0)
    os.close(fd)
    assert os.stat('tr').st_size == 0
    put('tr2', b'abc')
    os.close(os.open('tr2', os.O_WRONLY | os.O_TRUNC))
    assert get('tr2') == b''
    os.truncate('tr2', 5 << 30)                # sparse 5 GiB
    assert os.stat('tr2').st_size == 5 << 30
    os.truncate('tr2', 0)


def t_chmod_chown():
    os.chmod('a', 0o640)
    assert stat.S_IMODE(os.stat('a').st_mode) == 0o640
    os.chmod('a', 0o1755)
    assert stat.S_IMODE(os.stat('a').st_mode) == 0o1755
    os.chown('a', 1234, 5678)
    st = os.stat('a')
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    os.chown('a', -1, 42)
    assert (os.stat('a').st_uid, os.stat('a').st_gid) == (1234, 42)
    os.chown('a', 0, 0)
    os.chmod('a', 0o644)


def t_times():
    a, m = 1_500_000_000_123_456_789, 1_600_000_000_987_654_321
    os.utime('a', ns=(a, m))
    st = os.stat('a')
    assert (st.st_atime_ns, st.st_mtime_ns) == (a, m), st
    os.utime('a', ns=(0, 1))
    assert os.stat('a').st_mtime_ns == 1
    before = time.time()
    os.utime('a')
    st = os.stat('a')
    assert abs(st.st_mtime - before) < 5 and abs(st.st_ctime - before) < 5
    old = st.st_mtime_ns
    time.sleep(0.02)
    put('a', b'!', 'ab')
    assert os.stat('a').st_mtime_ns > old
    os.mkdir('tdir')
    d0 = os.stat('tdir').st_mtime_ns
    time.sleep(0.02)
    put('tdir/f', b'')
    assert os.stat('tdir').st_mtime_ns > d0     # entry added: dir mtime


def renameat2(a, b, flags):
    oserr(libc.renameat2(-100, a.encode(), -100, b.encode(), flags))


def t_rename():
    put('r1', b'1')
    os.rename('r1', 'r2')
    assert not os.path.exists('r1') and get('r2') == b'1'
    put('r3', b'3')
    os.rename('r2', 'r3')                       # over an existing file
    assert get('r3') == b'1' and not os.path.exists('r2')
    os.mkdir('d1')
    os.mkdir('d2')
    os.rename('r3', 'd1/r')
    assert get('d1/r') == b'1'
    os.rename('d1', 'd2/d1')                    # a directory moves
    assert get('d2/d1/r') == b'1' and os.stat('d2').st_nlink == 3
    assert os.stat('d2/d1/..').st_ino == os.stat('d2').st_ino
    os.mkdir('e1')
    os.mkdir('e2')
    os.rename('e1', 'e2')                       # over an empty directory
    assert not os.path.exists('e1') and os.path.isdir('e2')
    os.mkdir('n1')
    os.mkdir('n2')
    put('n2/f', b'')
    expect_err((errno.ENOTEMPTY, errno.EEXIST), os.rename, 'n1', 'n2')
    expect_err(errno.ENOTDIR, os.rename, 'n1', 'n2/f')
    expect_err(errno.EISDIR, os.rename, 'n2/f', 'n1')
    expect_err(errno.EINVAL, os.rename, 'd2', 'd2/d1/x')
    os.rename('n2/f', 'n2/f')                   # same name: nothing
    put('x1', b'x1')
    put('x2', b'x2')
    expect_err(errno.EEXIST, renameat2, 'x1', 'x2', 1)     # NOREPLACE
    renameat2('x1', 'x3', 1)
    assert get('x3') == b'x1'
    renameat2('x2', 'x3', 2)                                # EXCHANGE
    assert get('x3') == b'x2' and get('x2') == b'x1'
    os.mkdir('xd')
    put('xd/in', b'in')
    renameat2('x2', 'xd', 2)                    # a file and a directory
    assert get('x2/in') == b'in' and get('xd') == b'x1'
    expect_err(errno.ENOENT, renameat2, 'x2', 'nothere', 2)


def t_hard_links():
    put('h1', b'hard')
    os.link('h1', 'h2')
    s1, s2 = os.stat('h1'), os.stat('h2')
    assert s1.st_nlink == 2 and s1.st_ino == s2.st_ino
    os.unlink('h1')
    assert os.stat('h2').st_nlink == 1 and get('h2') == b'hard'
    expect_err(errno.EPERM, os.link, 'd2', 'dirlink')
    expect_err(errno.EEXIST, os.link, 'h2', 'a')
    os.mkdir('hl')
    os.link('h2', 'hl/h3')                      # into another directory
    assert os.stat('h2').st_nlink == 2


def t_symlinks():
    os.symlink('a', 's1')
    assert os.readlink('s1') == 'a' and get('s1') == get('a')
    st = os.lstat('s1')
    assert stat.S_ISLNK(st.st_mode) and st.st_size == 1
    for n in (1, 119, 120, 121, 1000, 4095):    # inline, then in a block
        target = ('t%d/' % n + 'x' * n)[:n]
        os.symlink(target, 'sl%d' % n)
        assert os.readlink('sl%d' % n) == target, n
        assert os.lstat('sl%d' % n).st_size == n
    os.symlink('missing', 'dangling')
    expect_err(errno.ENOENT, os.stat, 'dangling')
    os.symlink('d2/d1', 'sdir')
    assert get('sdir/r') == b'1'
    expect_err(errno.EEXIST, os.symlink, 'x', 's1')


def t_xattrs():
    os.setxattr('a', 'user.k', b'v1')
    assert os.getxattr('a', 'user.k') == b'v1'
    os.setxattr('a', 'user.k', b'v2', os.XATTR_REPLACE)
    assert os.getxattr('a', 'user.k') == b'v2'
    expect_err(errno.EEXIST, os.setxattr, 'a', 'user.k', b'x', os.XATTR_CREATE)
    expect_err(errno.ENODATA, os.setxattr, 'a', 'user.no', b'x', os.XATTR_REPLACE)
    expect_err(errno.ENODATA, os.getxattr, 'a', 'user.no')
    big = os.urandom(2000)
    os.setxattr('a', 'user.big', big)
    assert os.getxattr('a', 'user.big') == big
    os.setxattr('a', 'user.empty', b'')
    assert os.getxattr('a', 'user.empty') == b''
    os.setxattr('a', 'trusted.t', b'root only')
    names = set(os.listxattr('a'))
    assert {'user.k', 'user.big', 'user.empty', 'trusted.t'} <= names, names
    os.removexattr('a', 'user.k')
    expect_err(errno.ENODATA, os.getxattr, 'a', 'user.k')
    expect_err(errno.ENODATA, os.removexattr, 'a', 'user.k')
    os.setxattr('d2', 'user.dir', b'1')
    assert os.getxattr('d2', 'user.dir') == b'1'
    # 20 KB of attributes: more than one block holds, so a chain.
    for i in range(200):
        os.setxattr('a', 'user.fill%d' % i, b'y' * 100)
    assert {'user.fill%d' % i for i in range(200)} <= set(os.listxattr('a'))
    for i in range(200):
        os.removexattr('a', 'user.fill%d' % i)
    expect_err(errno.E2BIG, os.setxattr, 'a', 'user.huge', b'z' * 65537)
    assert os.getxattr('a', 'user.big') == big  # still intact


def t_special_files():
    os.mkfifo('fifo', 0o600)
    assert stat.S_ISFIFO(os.stat('fifo').st_mode)
    fd = os.open('fifo', os.O_RDONLY | os.O_NONBLOCK)
    os.close(fd)
    os.mknod('chr', stat.S_IFCHR | 0o600, os.makedev(1, 3))
    st = os.stat('chr')
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    os.mknod('blk', stat.S_IFBLK | 0o600, os.makedev(7, 200))
    assert os.stat('blk').st_rdev == os.makedev(7, 200)
    os.mknod('sock', stat.S_IFSOCK | 0o600)
    assert stat.S_ISSOCK(os.stat('sock').st_mode)


def t_directories():
    os.mkdir('dd', 0o750)
    st = os.stat('dd')
    assert stat.S_ISDIR(st.st_mode) and st.st_nlink == 2
    assert stat.S_IMODE(st.st_mode) == 0o750
    parent = os.stat('.').st_nlink
    os.mkdir('dd/sub')
    assert os.stat('dd').st_nlink == 3 and os.stat('.').st_nlink == parent
    names = {'f%d' % i for i in range(300)}
    for n in names:
        put('dd/' + n, n.encode())
    assert set(os.listdir('dd')) == names | {'sub'}
    assert {e.name for e in os.scandir('dd') if e.is_file()} == names
    expect_err(errno.ENOTEMPTY, os.rmdir, 'dd')
    expect_err((errno.EISDIR, errno.EPERM), os.unlink, 'dd')
    expect_err(errno.ENOTDIR, os.rmdir, 'dd/f1')
    expect_err(errno.ENOTDIR, os.stat, 'dd/f1/x')
    for n in names:
        os.unlink('dd/' + n)
    os.rmdir('dd/sub')
    assert os.stat('dd').st_nlink == 2 and os.listdir('dd') == []
    os.rmdir('dd')
    expect_err(errno.ENOENT, os.stat, 'dd')
    n255 = 'n' * 255
    put(n255, b'x')
    assert get(n255) == b'x' and n255 in os.listdir('.')
    os.unlink(n255)
    expect_err(errno.ENAMETOOLONG, put, 'n' * 256, b'x')
    expect_err(errno.ENAMETOOLONG, os.mkdir, 'm' * 300)
    expect_err(errno.ENAMETOOLONG, os.stat, 'q' * 256)


def t_statfs():
    # Unlinked files of the checks before are freed when the kernel's
    # FORGET comes, which may be in the middle of this one: evict the
    # unused inodes first, so those frees come now.
    os.sync()
    try:
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('2\n')
        time.sleep(0.5)
    except OSError:
        pass
    sv = os.statvfs('.')
    assert sv.f_bsize == 4096 and sv.f_blocks > 60000, sv
    assert 0 < sv.f_bfree <= sv.f_blocks and sv.f_bavail <= sv.f_bfree
    assert 0 < sv.f_ffree <= sv.f_files and sv.f_namemax == 255, sv
    fd = os.open('space', os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, os.urandom(8 << 20))
    os.fsync(fd)
    os.close(fd)
    after = os.statvfs('.')
    assert sv.f_bfree - after.f_bfree >= 2048, (sv.f_bfree, after.f_bfree)
    assert after.f_ffree < sv.f_ffree


def t_sparse_seek():
    fd = os.open('sparse', os.O_CREAT | os.O_RDWR, 0o644)
    os.pwrite(fd, b'a' * 4096, 0)
    os.pwrite(fd, b'b' * 4096, 1 << 20)
    os.fsync(fd)
    assert os.fstat(fd).st_size == (1 << 20) + 4096
    assert os.pread(fd, 4096, 8192) == b'\0' * 4096
    assert os.lseek(fd, 0, os.SEEK_DATA) == 0
    if cache == 'kernel':
        # The writeback cache may hold data the daemon has not seen, so
        # mqfs leaves SEEK_DATA/HOLE to the kernel's generic version:
        # everything is data, the only hole is at EOF.
        assert os.lseek(fd, 0, os.SEEK_HOLE) == (1 << 20) + 4096
    else:
        assert os.lseek(fd, 0, os.SEEK_HOLE) == 4096
        assert os.lseek(fd, 4096, os.SEEK_DATA) == 1 << 20
        assert os.lseek(fd, 1 << 20, os.SEEK_HOLE) == (1 << 20) + 4096
    expect_err(errno.ENXIO, os.lseek, fd, (1 << 20) + 4096, os.SEEK_DATA)
    expect_err(errno.ENXIO, os.lseek, fd, 5 << 20, os.SEEK_HOLE)
    os.close(fd)


def t_fallocate():
    fd = os.open('fa', os.O_CREAT | os.O_RDWR, 0o644)
    os.posix_fallocate(fd, 0, 1 << 20)
    assert os.fstat(fd).st_size == 1 << 20
    assert os.pread(fd, 100, 5000) == b'\0' * 100
    oserr(libc.fallocate(fd, 1, 1 << 20, 1 << 20))          # KEEP_SIZE
    assert os.fstat(fd).st_size == 1 << 20
    os.pwrite(fd, b'z' * (1 << 20), 0)
    os.fsync(fd)
    oserr(libc.fallocate(fd, 3, 4096, 8192))                # PUNCH_HOLE
    want = b'z' * 4096 + b'\0' * 8192 + b'z' * 4096
    assert os.pread(fd, 4 * 4096, 0) == want
    if cache != 'kernel':
        assert os.lseek(fd, 4096, os.SEEK_HOLE) == 4096
    if libc.fallocate(fd, 0x10, 100, 5000):                 # ZERO_RANGE
        assert ctypes.get_errno() == errno.EOPNOTSUPP
    else:
        assert os.pread(fd, 5100, 0) == b'z' * 100 + b'\0' * 5000
    os.close(fd)


def t_odirect():
    n = 1 << 16
    wbuf = mmap.mmap(-1, n)
    wbuf.write(os.urandom(n))
    put('od', b'c' * n)                 # cached first: O_DIRECT must see it
    fd = os.open('od', os.O_RDWR | os.O_DIRECT)
    rbuf = mmap.mmap(-1, n)
    assert os.preadv(fd, [rbuf], 0) == n and rbuf[:] == b'c' * n
    assert os.pwritev(fd, [wbuf], 0) == n
    assert os.pwrite(fd, b'q' * 100, 10) == 100         # unaligned
    os.close(fd)
    want = wbuf[:10] + b'q' * 100 + wbuf[110:]
    assert get('od') == want


def t_odirect_coherence():
    # O_DIRECT and buffered I/O on one file see each other's data.
    put('coh', b'o' * 65536)
    fd = os.open('coh', os.O_RDWR)
    os.pwrite(fd, b'n' * 4096, 0)               # dirty in the page cache
    dfd = os.open('coh', os.O_RDWR | os.O_DIRECT)
    buf = mmap.mmap(-1, 4096)
    os.preadv(dfd, [buf], 0)
    assert buf[:] == b'n' * 4096, 'O_DIRECT read missed a buffered write'
    buf[:] = b'd' * 4096
    os.pwritev(dfd, [buf], 4096)
    assert os.pread(fd, 4096, 4096) == b'd' * 4096, 'stale page cache'
    os.close(dfd)
    os.close(fd)


def t_mmap():
    put('mm', b'\0' * 8192)
    with open('mm', 'r+b') as f:
        m = mmap.mmap(f.fileno(), 8192)
        m[100:105] = b'mmap!'
        m.flush()
        m.close()
    assert get('mm')[100:105] == b'mmap!'


def t_unlinked_open():
    put('orph', b'still here')
    fd = os.open('orph', os.O_RDWR)
    os.unlink('orph')
    expect_err(errno.ENOENT, os.stat, 'orph')
    assert os.pread(fd, 100, 0) == b'still here'
    os.pwrite(fd, b'!', 10)
    assert os.fstat(fd).st_nlink == 0 and os.pread(fd, 100, 0) == b'still here!'
    os.close(fd)


def t_setgid_dir():
    os.mkdir('sg')
    os.chown('sg', 0, 4321)
    os.chmod('sg', 0o2775)
    put('sg/f', b'')
    os.mkdir('sg/sub')
    assert os.stat('sg/f').st_gid == 4321
    st = os.stat('sg/sub')
    assert st.st_gid == 4321 and st.st_mode & stat.S_ISGID


def t_permissions():
    # The kernel checks (default_permissions): nobody may not read 0600.
    put('secret', b's')
    os.chmod('secret', 0o600)
    put('public', b'p')
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            try:
                open('secret', 'rb')
                code = 2
            except PermissionError:
                pass
            if open('public', 'rb').read() != b'p':
                code = 3
            try:
                open('newfile', 'wb')
                code = 4
            except PermissionError:
                pass
        except Exception:
            code = 5
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, 'permission check %d' % status


tests = [t_create_read_write, t_append, t_truncate, t_chmod_chown, t_times,
         t_rename, t_hard_links, t_symlinks, t_xattrs, t_special_files,
         t_directories, t_statfs, t_sparse_seek, t_fallocate, t_odirect,
         t_odirect_coherence,
         t_unlinked_open, t_setgid_dir, t_permissions]
if cache == 'kernel':
    tests.append(t_mmap)        # shared mmap needs the page cache
failed = 0
for t in tests:
    try:
        t()
    except Exception as e:
        failed += 1
        print('FAIL %s (cache=%s): %r' % (t.__name__, cache, e))
print('%d of %d checks passed' % (len(tests) - failed, len(tests)))
sys.exit(1 if failed else 0)
EOF
	# The same through the shell tools, attr's included when present.
	d=$T_MNT/$cache
	echo shell >"$d/sh1" && grep -qx shell "$d/sh1" ||
		t_fail "echo/cat"
	cp "$d/big" "$d/big.copy" && cmp "$d/big" "$d/big.copy" ||
		t_fail "cp/cmp"
	mv "$d/big.copy" "$d/x2/" && [ -f "$d/x2/big.copy" ] || t_fail "mv"
	df -P "$T_MNT" | grep -q "$T_MNT" || t_fail "df"
	touch -d '2001-02-03 04:05:06.123456789' "$d/sh1" &&
		[ "$(stat -c %y "$d/sh1")" = "2001-02-03 04:05:06.123456789 $(date -d '2001-02-03' +%z)" ] ||
		t_fail "touch -d with nanoseconds: $(stat -c %y "$d/sh1")"
	if command -v setfattr >/dev/null && command -v getfattr >/dev/null; then
		setfattr -n user.tool -v works "$d/sh1" &&
			getfattr -n user.tool --only-values "$d/sh1" | grep -qx works ||
			t_fail "setfattr/getfattr"
	fi
	t_umount
	t_fsck
done
t_say "ok"
