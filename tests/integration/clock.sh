#!/bin/sh
# SPDX-License-Identifier: MIT
# Timestamps from one clock: files created one after the other, every
# other one written (with the writeback cache the kernel stamps those
# itself) and every third one chmod'ed (the daemon stamps the ctime),
# have ctimes and mtimes that never go backwards from one file to the
# next, on cache=kernel and cache=none.  The daemon once stamped from
# the precise clock and the kernel from its coarse one, a tick behind:
# a file written after another was created could look older.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 64M

for cache in kernel none; do
	t_mount -o "cache=$cache"
	mkdir "$T_MNT/d" || t_fail "mkdir"
	t_py "$T_MNT/d" "$cache" <<'EOF'
import os, sys
d, cache = sys.argv[1], sys.argv[2]
names = []
for i in range(600):
    p = os.path.join(d, "f%04d" % i)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
    if i % 2:
        os.write(fd, b"x" * 100)
    os.close(fd)
    if i % 3 == 0:
        os.chmod(p, 0o600)
    names.append(p)
prev = None
for p in names:
    st = os.stat(p)
    t = (st.st_ctime_ns, st.st_mtime_ns)
    if prev and (t[0] < prev[1][0] or t[1] < prev[1][1]):
        sys.exit("cache=%s: %s has ctime %d mtime %d, before %s's "
                 "ctime %d mtime %d" % (cache, p, t[0], t[1], prev[0],
                                        prev[1][0], prev[1][1]))
    prev = (p, t)
EOF
	rm -rf "$T_MNT/d"
	t_umount
done
t_fsck
t_say "ok"
