#!/bin/sh
# SPDX-License-Identifier: MIT
# mkfs that scales (lazy allocation groups): mkfs.mqfs -s 10T of a
# sparse image finishes in under 10 s and allocates at most 64 MiB, and
# fsck is clean.  Then a 1 TiB image: mounted, directories with files
# made in several AGs (each directory goes to a new AG, initialising
# it), unmounted, fsck clean, remounted, every byte as written.  The
# images live on a tmpfs capped at 512 MiB: a mkfs that writes what the
# size allows fails on the cap and cannot fill the host's disk.
. "$(dirname "$0")/lib.sh"
t_init
t_tmpfs 512M

start=$(date +%s%N)
"$MKFS" -s 10T "$T_IMG" </dev/null >"$T_DIR/mkfs.out" 2>&1 || {
	cat "$T_DIR/mkfs.out"
	t_fail "mkfs.mqfs -s 10T"
}
ms=$((($(date +%s%N) - start) / 1000000))
kib=$(du -k "$T_IMG" | cut -f1)
t_say "mkfs.mqfs -s 10T: $ms ms, $kib KiB allocated"
[ "$ms" -lt 10000 ] || t_fail "mkfs.mqfs -s 10T took $ms ms (limit 10 s)"
[ "$kib" -le 65536 ] || t_fail "mkfs.mqfs -s 10T allocated $kib KiB"
t_fsck
rm -f "$T_IMG"

t_mkfs 1T
# inodes_per_ag from mkfs's report: "inodes: N" over "groups: G of ...".
ipa=$(awk '/groups:/ { g = $2 } /inodes:/ { n = $2 } END { print n / g }' \
	"$T_DIR/mkfs.out")
t_mount
t_py "$T_MNT" "$ipa" <<'PY'
import hashlib, json, os, random, sys
root, ipa = sys.argv[1], int(sys.argv[2])
rng = random.Random(34)
sums, ags = {}, set()
for i in range(8):
    d = os.path.join(root, 'd%d' % i)
    os.mkdir(d)
    ags.add((os.stat(d).st_ino - 1) // ipa)
    for j in range(3):
        p = os.path.join(d, 'f%d' % j)
        data = rng.randbytes(65536 * (j + 1) + i)
        with open(p, 'wb') as f:
            f.write(data)
        sums[p] = hashlib.sha256(data).hexdigest()
assert len(ags) >= 6, 'directories in AGs %s: not spread' % sorted(ags)
with open(os.path.join(root, '..', 'sums.json'), 'w') as f:
    json.dump(sums, f)
PY
t_umount
t_fsck
t_mount
t_py "$T_MNT" <<'PY'
import hashlib, json, os, sys
root = sys.argv[1]
with open(os.path.join(root, '..', 'sums.json')) as f:
    sums = json.load(f)
for p, s in sums.items():
    with open(p, 'rb') as f:
        assert hashlib.sha256(f.read()).hexdigest() == s, p + ' changed'
print('%d files intact' % len(sums))
PY
t_umount
t_fsck
t_say "ok"
