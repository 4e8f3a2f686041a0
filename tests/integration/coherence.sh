#!/bin/sh
# SPDX-License-Identifier: MIT
# The kernel keeps names and attributes for 60 s (entry and attribute
# timeouts, negative entries too): nothing may go stale behind its copy.
# One process keeps a set of names cached (stat in a loop, missing names
# included), another renames over them, unlinks and re-creates them with
# other modes, owners, sizes and times, creates the missing ones, and
# does it through another path to the same files (a bind mount of the
# mount); after each change the first process must see exactly the new
# state at once.  Both cache modes of the kernel's side: cache=kernel
# (writeback cache) and cache=none.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 64M
BIND=$T_DIR/bind
mkdir -p "$BIND" || t_fail "mkdir"

cat >"$T_DIR/race.py" <<'EOF2'
import os, sys, time

a, b = sys.argv[1], sys.argv[2]     # the same directory by two paths
names = ['n%02d' % i for i in range(16)]
rd, wr = os.pipe()
rd2, wr2 = os.pipe()
pid = os.fork()
if pid == 0:
    # The watcher: caches every name, then answers what it sees on demand.
    os.close(wr); os.close(rd2)
    for n in names:
        try:
            os.stat(os.path.join(a, n))
        except FileNotFoundError:
            pass
    os.write(wr2, b'r')
    while True:
        n = os.read(rd, 64).decode()
        if not n or n == 'quit':
            os._exit(0)
        try:
            st = os.stat(os.path.join(a, n))
            got = '%d %o %d %d %d' % (st.st_ino, st.st_mode, st.st_uid,
                                      st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            got = 'missing'
        os.write(wr2, got.encode())
os.close(rd); os.close(wr2)
assert os.read(rd2, 1) == b'r'


def truth(n):
    # What the changer's own path says; the watcher must agree.
    try:
        st = os.stat(os.path.join(b, n))
        return '%d %o %d %d %d' % (st.st_ino, st.st_mode, st.st_uid,
                                   st.st_size, st.st_mtime_ns)
    except FileNotFoundError:
        return 'missing'


def check(n, step):
    os.write(wr, n.encode())
    seen = os.read(rd2, 256).decode()
    want = truth(n)
    assert seen == want, '%s %s: watcher sees %s, truth %s' % (
        step, n, seen, want)


for rnd in range(40):
    n = names[rnd % len(names)]
    p = os.path.join(b, n)
    k = rnd % 5
    if k == 0:                      # create (or replace) with new attrs
        with open(p + '.tmp', 'wb') as f:
            f.write(b'x' * (rnd * 100 + 1))
        os.chmod(p + '.tmp', 0o600 + rnd % 8)
        os.rename(p + '.tmp', p)
    elif k == 1 and os.path.exists(p):
        os.unlink(p)
    elif k == 2:                    # re-create under another owner
        if os.path.exists(p):
            os.unlink(p)
        with open(p, 'wb') as f:
            f.write(b'y' * rnd)
        os.chown(p, 1000 + rnd, 1000)
    elif k == 3 and os.path.exists(p):
        os.truncate(p, rnd * 7)
        os.utime(p, ns=(rnd * 10**9, rnd * 10**9 + 5))
    elif k == 4:                    # rename another name over this one
        o = os.path.join(b, names[(rnd + 1) % len(names)])
        if os.path.exists(o):
            os.rename(o, p)
            check(names[(rnd + 1) % len(names)], 'rename source')
    check(n, 'round %d kind %d' % (rnd, k))
os.write(wr, b'quit')
os.waitpid(pid, 0)
print('ok')
EOF2

for mode in kernel none; do
	t_mount -o cache=$mode
	mkdir "$T_MNT/d" || t_fail "mkdir d"
	mount --bind "$T_MNT" "$BIND" || t_skip "no bind mounts here"
	T_BGMNT=$BIND			# the cleanup unmounts it
	timeout 120 python3 "$T_DIR/race.py" "$T_MNT/d" "$BIND/d" ||
		t_fail "stale entry or attribute, cache=$mode"
	umount "$BIND" || t_fail "umount bind"
	T_BGMNT=
	rm -rf "$T_MNT/d"
	t_umount
done
t_fsck
t_say "ok"
