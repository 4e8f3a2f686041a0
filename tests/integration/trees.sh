#!/bin/sh
# SPDX-License-Identifier: MIT
# Tree work on the default mount (cache=kernel): an untar of a few
# hundred files, a listing and a walk cost no FLUSH per close and no
# OPENDIR per directory (each is answered ENOSYS once, then the kernel
# sends none); the kernel's write-back of the files' pages goes through
# the write-behind (closes and utimensat do not wait for the device),
# last pages that end mid-block included.  Files appended to and
# rewritten after their first write-back keep exact sizes and contents
# across a remount; a dontcache file (user.mqfs.cache) of the same mount
# reads back after its close; fsck-clean.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 256M

SRC=$T_DIR/src
mkdir -p "$SRC" || t_fail "mkdir"
tar -C /usr/include -cf - linux | tar -C "$SRC" -xf - ||
	t_fail "source tree"
[ "$(find "$SRC" -type f | wc -l)" -ge 200 ] ||
	t_skip "/usr/include/linux has too few files for the test"

t_mount
# Requests served so far, of opcode $1 (.mqfs/fuse/ops).
ops() {
	awk -v op="$1" '$1 == op { n = $2 } END { print n + 0 }' \
		"$T_MNT/.mqfs/fuse/ops"
}
tar -C "$SRC" -cf - . | tar -C "$T_MNT" -xf - || t_fail "untar"
find "$T_MNT" -type f | wc -l >/dev/null || t_fail "find"
ls -lR "$T_MNT" >/dev/null && ls -lR "$T_MNT" >/dev/null || t_fail "ls -R"
t_py "$T_MNT" <<'PY'
import os, sys
m = sys.argv[1]
# Appends and rewrites: the kernel writes the last page again, with more
# bytes each time, and the middle pages of a rewritten file.
for n, sizes in enumerate([(1, 4095, 4097), (1000, 3000, 9000),
                           (4096, 1, 12287)]):
    p = os.path.join(m, 'grow%d' % n)
    want = b''
    for i, s in enumerate(sizes):
        chunk = bytes([65 + i + n]) * s
        with open(p, 'ab') as f:
            f.write(chunk)
        want += chunk
    with open(p, 'r+b') as f:
        f.seek(len(want) // 2)
        f.write(b'middle')
    want = want[:len(want) // 2] + b'middle' + want[len(want) // 2 + 6:]
    with open(p + '.want', 'wb') as f:
        f.write(want)
# A dontcache directory on this cache=kernel mount.
os.mkdir(m + '/dc')
os.setxattr(m + '/dc', 'user.mqfs.cache', b'dontcache')
data = os.urandom(3 << 20)
with open(m + '/dc/f', 'wb') as f:
    f.write(data)
with open(m + '/dc/f', 'rb') as f:
    assert f.read() == data, 'dontcache file reads back wrong'
PY
sync
flushes=$(ops FLUSH)
opendirs=$(ops OPENDIR)
creates=$(ops CREATE)
[ "$creates" -ge 200 ] || t_fail "only $creates CREATE requests counted"
[ "$flushes" -le 1 ] || t_fail "$flushes FLUSH requests for $creates creates"
[ "$opendirs" -le 1 ] || t_fail "$opendirs OPENDIR requests"
taken=$(awk '$1 == "buffered_writes" { print $2 }' "$T_MNT/.mqfs/fs/dontcache")
[ "${taken:-0}" -ge 200 ] ||
	t_fail "the write-behind took ${taken:-0} of the kernel's write-backs"
t_say "$creates creates: $flushes FLUSH, $opendirs OPENDIR," \
	"$taken write-backs through the write-behind"
t_umount
t_fsck

t_mount
diff -r "$SRC" "$T_MNT" -x grow\* -x dc >"$T_DIR/diff.out" 2>&1 ||
	{ head -20 "$T_DIR/diff.out"; t_fail "the tree differs after remount"; }
for n in 0 1 2; do
	cmp "$T_MNT/grow$n" "$T_MNT/grow$n.want" || t_fail "grow$n differs"
done
t_umount
t_fsck
t_say "ok"
