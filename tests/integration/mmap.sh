#!/bin/sh
# SPDX-License-Identifier: MIT
# Shared mmap on every cache mode (cache=none and cache=dontcache open
# FOPEN_DIRECT_IO files, whose MAP_SHARED maps need
# FUSE_DIRECT_IO_ALLOW_MMAP): what a map shows equals what read(2) shows;
# a store through the map reaches read(2) after msync; pwrite(2) reaches
# an existing map; two processes' maps of one file agree; then 3000
# random operations mixing map stores + msync, map loads, pread, pwrite
# and ftruncate are checked against a model, and after a remount the
# file is the model.  The daemon exits 0 and the image is fsck-clean.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 256M

for cache in kernel none dontcache; do
	t_mount -o "cache=$cache"
	t_py "$T_MNT/m" "$T_DIR/model" <<'EOF'
import mmap, os, random, subprocess, sys
path, model_path = sys.argv[1], sys.argv[2]
PG = 4096
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, bytes(range(256)) * 256, 0)           # 64 KiB
m = mmap.mmap(fd, 65536, mmap.MAP_SHARED)
assert m[:] == os.pread(fd, 65536, 0), 'map and read(2) differ'
m[100:104] = b'MAPD'
m.flush()
assert os.pread(fd, 4, 100) == b'MAPD', 'msync did not reach read(2)'
os.pwrite(fd, b'PWRT', 8192)
assert m[8192:8196] == b'PWRT', 'pwrite(2) did not reach the map'
# Another process maps it and stores; this map sees it.
child = '''
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 65536, mmap.MAP_SHARED)
assert m[100:104] == b"MAPD", m[100:104]
m[200:204] = b"KIDS"
m.flush()
'''
subprocess.run([sys.executable, '-c', child, path], check=True)
assert m[200:204] == b'KIDS', 'a second map differs'
m.close()

# Random operations against a model (an fsx of a few kinds).
rng = random.Random(7)
size = 65536
model = bytearray(os.pread(fd, size, 0))
MAX = 256 * 1024
for step in range(3000):
    op = rng.randrange(6)
    off = rng.randrange(MAX)
    n = rng.randrange(1, 16384)
    if op == 0:                       # pwrite
        data = bytes(rng.randrange(256) for _ in range(min(n, 64))) * (n // 64 + 1)
        data = data[:n]
        os.pwrite(fd, data, off)
        end = off + n
        if end > len(model):
            model.extend(bytes(end - len(model)))
        model[off:end] = data
    elif op == 1:                     # pread
        got = os.pread(fd, n, off)
        want = bytes(model[off:off + n])
        assert got == want, 'step %d: pread %d+%d differs' % (step, off, n)
    elif op == 2 and len(model) >= PG:  # store through a map, msync
        maplen = len(model) // PG * PG
        mm = mmap.mmap(fd, maplen, mmap.MAP_SHARED)
        o = rng.randrange(maplen)
        k = min(n, maplen - o)
        data = bytes([rng.randrange(256)]) * k
        mm[o:o + k] = data
        model[o:o + k] = data
        mm.flush()
        mm.close()
    elif op == 3 and len(model) >= PG:  # load through a map
        maplen = len(model) // PG * PG
        mm = mmap.mmap(fd, maplen, mmap.MAP_SHARED, mmap.PROT_READ)
        o = rng.randrange(maplen)
        k = min(n, maplen - o)
        assert mm[o:o + k] == bytes(model[o:o + k]), \
            'step %d: map load %d+%d differs' % (step, o, k)
        mm.close()
    elif op == 4 and rng.randrange(8) == 0:  # ftruncate
        new = rng.randrange(MAX)
        os.ftruncate(fd, new)
        if new < len(model):
            del model[new:]
        else:
            model.extend(bytes(new - len(model)))
    elif op == 5:
        assert os.fstat(fd).st_size == len(model), 'step %d: size' % step
os.fsync(fd)
os.close(fd)
open(model_path, 'wb').write(model)
EOF
	t_umount
	t_mount -o "cache=$cache"
	cmp "$T_MNT/m" "$T_DIR/model" || t_fail "cache=$cache: the file is not the model after a remount"
	rm -f "$T_MNT/m"
	t_umount
	t_fsck
	t_say "cache=$cache: shared mmap coherent"
done
t_say "ok"
