#!/bin/sh
# SPDX-License-Identifier: MIT
# A big directory: 10,000 files created in one directory, then on a fresh
# mount (nothing cached in the kernel) listed, looked up one by one and
# read, renamed within the directory, removed; the directory is empty
# and removable, and the image fsck-clean at each step.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 256M
N=10000

t_mount
python3 - "$T_MNT" "$N" <<'EOF' || t_fail "create"
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
d = os.path.join(root, 'big')
os.mkdir(d)
for i in range(n):
    fd = os.open(os.path.join(d, 'file-%05d-%s' % (i, 'x' * (i % 40))),
                 os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, b'%d' % i)
    os.close(fd)
EOF
t_umount
t_fsck

t_mount
python3 - "$T_MNT" "$N" <<'EOF' || t_fail "list, look up, rename"
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
d = os.path.join(root, 'big')
names = ['file-%05d-%s' % (i, 'x' * (i % 40)) for i in range(n)]
listed = os.listdir(d)
assert len(listed) == n, len(listed)
assert set(listed) == set(names), 'listing differs'
assert os.stat(d).st_nlink == 2
order = list(range(n))
random.Random(1).shuffle(order)
for i in order:
    p = os.path.join(d, names[i])
    st = os.stat(p)
    assert st.st_size == len(b'%d' % i), names[i]
    with open(p, 'rb') as f:
        assert f.read() == b'%d' % i, names[i]
for name in ('file-99999', 'file-00001', 'nothing'):
    assert not os.path.exists(os.path.join(d, name)), name
for i in range(0, n, 10):
    os.rename(os.path.join(d, names[i]), os.path.join(d, 'renamed-%d' % i))
listed = set(os.listdir(d))
assert len(listed) == n and 'renamed-0' in listed and names[0] not in listed
EOF
t_umount
t_fsck

t_mount
python3 - "$T_MNT" <<'EOF' || t_fail "remove"
import os, sys
d = os.path.join(sys.argv[1], 'big')
for name in os.listdir(d):
    os.unlink(os.path.join(d, name))
assert os.listdir(d) == []
os.rmdir(d)
assert os.listdir(sys.argv[1]) == []
EOF
t_umount
t_fsck
t_say "ok"
