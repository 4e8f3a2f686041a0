#!/bin/sh
# SPDX-License-Identifier: MIT
# Extended attributes at scale (issue 34, item 2) on a real mount:
# thousands of attributes on one file through python's os.setxattr (the
# old limit was about 127, one block's worth), values of XATTR_SIZE_MAX
# (64 KiB) through setfattr and read back whole with getfattr, replace
# and remove; listxattr of the whole set through FUSE's size probe, and
# E2BIG (the kernel's answer) once the names pass its 64 KiB list limit;
# all of it kept across a remount, fsck clean, and every block given
# back when the file goes.
. "$(dirname "$0")/lib.sh"
t_init
for c in setfattr getfattr; do
	command -v "$c" >/dev/null || t_fail "$c is needed (package attr)"
done
t_mkfs 256M
t_mount
m=$T_MNT
: >"$m/keep"	# the root directory's block, for good
before=$(stat -f -c %f "$m")
: >"$m/f"

# 3,000 attributes with varied values, a tenth replaced, a tenth removed;
# the list (39 KiB of names) whole through the size probe.
t_py "$m/f" <<'PY'
import errno, os, sys
f = sys.argv[1]
def val(i, gen): return (b'%d-%d:' % (i, gen)) * (1 + i % 37)
for i in range(3000):
    os.setxattr(f, 'user.a.%05d' % i, val(i, 0))
for i in range(0, 3000, 10):
    os.setxattr(f, 'user.a.%05d' % i, val(i, 1), os.XATTR_REPLACE)
    os.removexattr(f, 'user.a.%05d' % (i + 1))
try:
    os.setxattr(f, 'user.a.00002', b'x', os.XATTR_CREATE)
    sys.exit('XATTR_CREATE over an existing attribute worked')
except OSError as e:
    if e.errno != errno.EEXIST: raise
names = sorted(n for n in os.listxattr(f) if n.startswith('user.a.'))
want = sorted('user.a.%05d' % i for i in range(3000) if i % 10 != 1)
if names != want:
    sys.exit('listxattr: %d names, want %d' % (len(names), len(want)))
for i in range(3000):
    n = 'user.a.%05d' % i
    if i % 10 == 1:
        continue
    if os.getxattr(f, n) != val(i, 1 if i % 10 == 0 else 0):
        sys.exit('%s: wrong value' % n)
PY

# Values of XATTR_SIZE_MAX through setfattr/getfattr, one replaced.
python3 -c 'import sys; sys.stdout.write("a" * 65536)' >"$T_DIR/big1"
python3 -c 'import sys; sys.stdout.write("".join(chr(97 + i % 26) for i in range(65536)))' >"$T_DIR/big2"
setfattr -n user.big -v "$(cat "$T_DIR/big1")" "$m/f" </dev/null ||
	t_fail "setfattr of a 64 KiB value"
setfattr -n user.big2 -v "$(cat "$T_DIR/big1")" "$m/f" </dev/null ||
	t_fail "setfattr of a second 64 KiB value"
setfattr -n user.big -v "$(cat "$T_DIR/big2")" "$m/f" </dev/null ||
	t_fail "setfattr replacing a 64 KiB value"
setfattr -x user.big2 "$m/f" </dev/null || t_fail "setfattr -x of a 64 KiB value"
getfattr --only-values -n user.big "$m/f" >"$T_DIR/got" </dev/null ||
	t_fail "getfattr of a 64 KiB value"
cmp -s "$T_DIR/got" "$T_DIR/big2" || t_fail "the 64 KiB value read back differs"
t_umount

# After a remount, over /dev/fuse (the first mount took the default,
# io_uring where the kernel has it on): the same; then names past the
# 64 KiB list limit.
t_fsck
t_mount -o transport=dev
grep -qx 'transport dev' "$m/.mqfs/fuse/conn" || t_fail "not over /dev/fuse"
t_py "$m/f" "$T_DIR/big2" <<'PY'
import errno, os, sys
f, big = sys.argv[1:]
if os.getxattr(f, 'user.big') != open(big, 'rb').read():
    sys.exit('user.big after a remount differs')
if len([n for n in os.listxattr(f) if n.startswith('user.a.')]) != 2700:
    sys.exit('user.a.* after a remount: not 2700 names')
for i in range(2500):
    os.setxattr(f, 'user.long-name-to-pass-the-list-limit.%05d' % i, b'v')
try:
    os.listxattr(f)
    sys.exit('listxattr of %d bytes of names worked' % (2500 * 43 + 2700 * 13))
except OSError as e:
    if e.errno != errno.E2BIG:
        sys.exit('listxattr past 64 KiB: %s, want E2BIG' % errno.errorcode[e.errno])
if os.getxattr(f, 'user.a.00000') != b'0-1:':
    sys.exit('user.a.00000 differs')
PY
rm "$m/f" || t_fail "rm"
t_umount
t_fsck
t_mount
after=$(stat -f -c %f "$m")
[ "$after" = "$before" ] || t_fail "free blocks: $before before the file, $after after it"
t_umount
t_fsck
t_say "ok"
