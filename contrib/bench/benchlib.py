# SPDX-License-Identifier: MIT
"""Helpers shared by the Python benchmarks in contrib/bench: building
another revision beside this tree, mounting mqfs, ext4 on a loop device
and fuse2fs, FUSE over io_uring switched on under the machine's lock,
the metadata phases (create, stat, unlink of empty files) and the record
of how a run was made.  Every mount and loop device made here is undone
by Cleanup, also on a signal."""
import concurrent.futures, contextlib, datetime, fcntl, os, signal
import subprocess, sys, time

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), '..', '..'))


def die(msg):
    print('%s: %s' % (os.path.basename(sys.argv[0]), msg), file=sys.stderr)
    sys.exit(1)


def say(msg):
    print('[%s] %s' % (time.strftime('%T'), msg), file=sys.stderr,
          flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def git_rev(rev):
    return run(['git', '-C', TOP, 'rev-parse', '--short', rev],
               capture_output=True, text=True).stdout.strip()


def tree_state():
    """HEAD, with -dirty when tracked files differ from it."""
    dirty = subprocess.run(['git', '-C', TOP, 'status', '--porcelain',
                            '--untracked-files=no'], capture_output=True,
                           text=True).stdout.strip()
    return git_rev('HEAD') + ('-dirty' if dirty else '')


def default_outdir(name):
    return os.path.join(TOP, 'contrib', 'bench', 'results',
                        datetime.date.today().isoformat(), name)


def build_rev(rev, work, log):
    """Check @rev out in a worktree at @work and build mqfs there."""
    say('building %s in %s' % (rev, work))
    run(['git', '-C', TOP, 'worktree', 'add', '--detach', '-f', work, rev],
        stdout=log, stderr=log)
    for cmd in (['autoreconf', '-fi'], ['./configure', '-q'],
                ['make', '-j%d' % os.cpu_count(), 'mqfs', 'mkfs.mqfs']):
        run(cmd, cwd=work, stdout=log, stderr=log)
    return work


def mkfs_ext4(target, log, extended='nodiscard'):
    """ext4 on @target (an image file or a block device)."""
    run(['mkfs.ext4', '-F', '-q', '-E', extended, target], stdout=log,
        stderr=log)


URING_PARAM = '/sys/module/fuse/parameters/enable_uring'
# Every user of the switch on this machine (tests, benchmarks) takes it.
URING_LOCK = '/var/tmp/mqfs-enable-uring.lock'


def has_fuse_uring():
    return os.path.exists(URING_PARAM)


def _lock_within(fd, wait_s):
    """flock(LOCK_EX) on @fd, queued behind those waiting already, for
    at most @wait_s seconds."""
    def give_up(*_):
        raise TimeoutError
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        say('waiting for %s (FUSE over io_uring is in use)' % URING_LOCK)
    old = signal.signal(signal.SIGALRM, give_up)
    signal.alarm(wait_s)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except TimeoutError:
        die('%s still held by another user after %d s' % (URING_LOCK,
                                                          wait_s))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def fuse_uring(wait_s=900):
    """FUSE over io_uring switched on for the block, under the machine's
    lock, and off (N) again after it; gives up after @wait_s seconds of
    waiting for the lock."""
    fd = os.open(URING_LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        _lock_within(fd, wait_s)
        with open(URING_PARAM, 'w') as f:
            f.write('Y\n')
        try:
            yield
        finally:
            with open(URING_PARAM, 'w') as f:
                f.write('N\n')
    finally:
        os.close(fd)


META_PHASES = ['create', 'stat', 'stat-cached', 'unlink']


def _meta_create(names):
    for p in names:
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))


def _meta_stat(names):
    for p in names:
        os.lstat(p)


def _meta_unlink(names):
    for p in names:
        os.unlink(p)


def meta_phases(dirs, n):
    """ops/s of each of META_PHASES on @n empty files in each directory of
    @dirs, one thread per directory, the threads starting each phase
    together: create (open O_CREAT|O_EXCL, close), stat (the first lstat
    of each file after the creates), stat again (what the kernel
    cached), unlink."""
    names = [[os.path.join(d, 'f%06d' % i) for i in range(n)] for d in dirs]
    ops = dict(zip(META_PHASES, (_meta_create, _meta_stat, _meta_stat,
                                 _meta_unlink)))
    out = {}
    with concurrent.futures.ThreadPoolExecutor(len(dirs)) as pool:
        for phase in META_PHASES:
            t = time.perf_counter()
            list(pool.map(ops[phase], names))	# raises what a thread did
            out[phase] = n * len(dirs) / (time.perf_counter() - t)
    return out


def is_mounted(path):
    with open('/proc/self/mountinfo') as f:
        return any(l.split()[4] == path for l in f)


def drop_caches():
    os.sync()
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('3\n')


class Daemon:
    """A FUSE daemon started in the foreground on @mnt."""

    def __init__(self, cmd, mnt, log):
        self.mnt = mnt
        self.p = subprocess.Popen(cmd, stdout=log, stderr=log)
        for _ in range(200):
            if is_mounted(mnt):
                return
            if self.p.poll() is not None:
                die('%s exited before mounting (see the log)' % cmd[0])
            time.sleep(0.05)
        die('no mount after 10 s: %s' % ' '.join(cmd))

    def cpu(self):
        """utime + stime of all its threads so far, seconds."""
        with open('/proc/%d/stat' % self.p.pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')

    def close(self):
        run(['fusermount3', '-u', self.mnt])
        if self.p.wait(timeout=300) != 0:
            die('the daemon on %s exited with %d' % (self.mnt,
                                                     self.p.returncode))
        self.p = None


def mqfs_mount(tree, img, mnt, log, opts=None, mkfs=True):
    if mkfs:
        run([os.path.join(tree, 'mkfs.mqfs'), '-f', '-q', img],
            stdout=log, stderr=log)
    cmd = [os.path.join(tree, 'mqfs'), img, mnt, '-f']
    return Daemon(cmd + (['-o', opts] if opts else []), mnt, log)


def fuse2fs_mount(img, mnt, log):
    return Daemon(['fuse2fs', img, mnt, '-f'], mnt, log)


class Cleanup:
    """What a run made, undone at exit in reverse order."""

    def __init__(self):
        self.daemons, self.mounts, self.loops, self.worktrees = [], [], [], []
        self.restore = []	# (path, value): written back at exit
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        signal.signal(signal.SIGHUP, lambda *_: sys.exit(129))

    def loop(self, img):
        dev = run(['losetup', '--direct-io=on', '--find', '--show', img],
                  capture_output=True, text=True).stdout.strip()
        self.loops.append(dev)
        return dev

    def ext4(self, dev, mnt, mkfs=True, log=None, extended='nodiscard'):
        # The image is written beside the loop device too (fuse2fs, mkfs
        # of mqfs): nothing of the device's page cache may survive that.
        run(['blockdev', '--flushbufs', dev])
        if mkfs:
            mkfs_ext4(dev, log, extended)
        run(['mount', '-t', 'ext4', dev, mnt])
        self.mounts.append(mnt)

    def umount(self, mnt):
        run(['umount', mnt])
        self.mounts.remove(mnt)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for d in self.daemons:
            if d.p and is_mounted(d.mnt):
                subprocess.run(['fusermount3', '-u', d.mnt])
            if d.p:
                d.p.wait()
        for m in reversed(self.mounts):
            subprocess.run(['umount', m])
        for dev in self.loops:
            subprocess.run(['losetup', '-d', dev])
        for w in self.worktrees:
            subprocess.run(['git', '-C', TOP, 'worktree', 'remove', '-f', w],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        for path, value in reversed(self.restore):
            with open(path, 'w') as f:
                f.write(value + '\n')
        return False
