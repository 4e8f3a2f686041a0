#!/bin/sh
# SPDX-License-Identifier: MIT
# Access times, on cache=kernel and cache=none: relatime by default (the
# first read after a change moves atime, a second one does not, a read
# after a write does again; the same for listing a directory), noatime
# (nothing moves), strictatime (every read), nodiratime (directories
# stay), and atime kept across an unmount.  Reads go O_DIRECT: a read
# served from the page cache never reaches the daemon (man mqfs: atime).
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 64M

# check PHASE CACHE: the Python checks of one mount, by phase.
check() {
	t_py "$T_MNT" "$1" "$2" "$T_DIR/atime" <<'EOF'
import mmap, os, sys, time
mnt, phase, cache, saved = sys.argv[1:5]
f, d = os.path.join(mnt, "f"), os.path.join(mnt, "d")

def at(p):
    return os.stat(p).st_atime_ns

def dread(p):
    """A read that reaches the daemon in every cache mode."""
    fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
    try:
        os.readv(fd, [mmap.mmap(-1, 65536)])
    finally:
        os.close(fd)

def tick():
    time.sleep(0.02)        # past the clock's tick (1-4 ms)

def expect(what, moved, before, after):
    if (after != before) != moved:
        sys.exit("cache=%s %s: %s: atime %d -> %d" % (cache, phase, what,
                 before, after))

if phase == "relatime":
    with open(f, "wb") as o:
        o.write(os.urandom(65536))
    os.mkdir(d)
    open(os.path.join(d, "e"), "w").close()
    tick()
    a0 = at(f); dread(f); a1 = at(f)
    expect("first read after the create", True, a0, a1)
    tick(); dread(f); a2 = at(f)
    expect("second read", False, a1, a2)
    with open(f, "r+b") as o:
        o.write(b"changed")
    tick(); dread(f); a3 = at(f)
    expect("read after a write", True, a2, a3)
    d0 = at(d); tick(); os.listdir(d); d1 = at(d)
    expect("first listing", True, d0, d1)
    tick(); os.listdir(d); d2 = at(d)
    expect("second listing", False, d1, d2)
    with open(saved, "w") as o:
        o.write("%d %d" % (a3, d2))
elif phase == "noatime":
    a, da = (int(x) for x in open(saved).read().split())
    expect("file atime across the unmount", False, a, at(f))
    expect("directory atime across the unmount", False, da, at(d))
    with open(f, "r+b") as o:
        o.write(b"again")
    tick(); dread(f); os.listdir(d)
    expect("read after a write (noatime)", False, a, at(f))
    expect("listing (noatime)", False, da, at(d))
else:   # strictatime,nodiratime
    a0 = at(f); tick(); dread(f); a1 = at(f)
    expect("read", True, a0, a1)
    tick(); dread(f); a2 = at(f)
    expect("second read", True, a1, a2)
    d0 = at(d); tick(); os.listdir(d)
    expect("listing (nodiratime)", False, d0, at(d))
EOF
}

for cache in kernel none; do
	t_mount -o "cache=$cache"
	check relatime "$cache"
	t_umount
	t_mount -o "cache=$cache,noatime"
	check noatime "$cache"
	t_umount
	t_mount -o "cache=$cache,strictatime,nodiratime"
	check strictatime "$cache"
	rm -rf "$T_MNT/f" "$T_MNT/d"
	t_umount
done
t_fsck
t_say "ok"
