#!/bin/sh
# SPDX-License-Identifier: MIT
# POSIX ACLs as ext4 has them (issue 34, item 1): setfacl/getfacl; an
# access ACL sets the mode and a minimal one is only the mode (no '+');
# chmod moves the mask; another user (nobody, through allow_other) let
# in and kept out by a named entry; a default ACL inherited by files
# and directories (the umask not applied then, applied otherwise);
# `cp -a` of a tree keeps its modes and adds no ACLs; a `tar --acls`
# round trip (and `rsync -aA` when rsync is installed); an invalid value refused (EINVAL) and another user's
# setfacl refused (EPERM); S_ISGID dropped where the kernel would;
# -o noacl refusing ACLs (EOPNOTSUPP); fsck clean after it all.
. "$(dirname "$0")/lib.sh"
t_init
for c in setfacl getfacl setpriv tar; do
	command -v "$c" >/dev/null || t_fail "$c is needed (package acl, util-linux, tar)"
done
t_mkfs 128M
chmod 755 "$T_DIR"	# nobody walks to the mount point
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@" </dev/null; }
expect_mode() {	# FILE MODE WHAT
	got=$(stat -c %a "$1")
	[ "$got" = "$2" ] || t_fail "$3: mode $got, want $2"
}
# The ACL as getfacl prints it, without comments, on one line.
acl_of() { getfacl -cp "$1" 2>/dev/null | grep -v '^$' | tr '\n' ' '; }
expect_acl() {	# FILE ACL WHAT
	got=$(acl_of "$1")
	[ "$got" = "$2" ] || t_fail "$3: ACL '$got', want '$2'"
}
# set_acl_expect bad|minimal FILE ERRNO: a raw setxattr of an access ACL
# (without a USER_OBJ, or only the base entries) fails with ERRNO.
set_acl_expect() {
	t_py "$@" <<'EOF'
import errno, os, struct, sys
kind, path, want = sys.argv[1:]
ents = ((4, 6),) if kind == 'bad' else ((1, 6), (4, 4), (32, 4))
acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, p, 0xffffffff)
                                      for t, p in ents)
try:
    os.setxattr(path, 'system.posix_acl_access', acl)
except OSError as e:
    if e.errno != getattr(errno, want):
        sys.exit('%s ACL: errno %d, want %s' % (kind, e.errno, want))
else:
    sys.exit('%s ACL: set, want %s' % (kind, want))
EOF
}
# Has the file an ACL beyond its mode (ls's '+')?
has_acl() { ls -ld "$1" | cut -c11 | grep -q '+'; }

t_mount -o allow_other
m=$T_MNT

# An access ACL: the mode follows it; a named entry lets nobody in.
echo secret >"$m/f"
chmod 600 "$m/f"
as_nobody cat "$m/f" >/dev/null 2>&1 && t_fail "nobody reads a 0600 file"
setfacl -m u:nobody:r "$m/f" || t_fail "setfacl -m u:nobody:r"
expect_mode "$m/f" 640 "mode after adding u:nobody:r (group bits = mask)"
has_acl "$m/f" || t_fail "no '+' after setfacl -m u:nobody:r"
as_nobody cat "$m/f" >/dev/null || t_fail "nobody denied despite u:nobody:r"
# chmod moves the mask, which then keeps nobody out.
chmod 600 "$m/f"
expect_acl "$m/f" "user::rw- user:nobody:r--	#effective:--- group::--- mask::--- other::--- " \
	"ACL after chmod 600"
as_nobody cat "$m/f" >/dev/null 2>&1 && t_fail "nobody reads with mask ---"
chmod 640 "$m/f"
as_nobody cat "$m/f" >/dev/null || t_fail "nobody denied after chmod 640"
# A named entry denies what other allows.
echo open >"$m/g"
chmod 644 "$m/g"
setfacl -m u:nobody:- "$m/g"
as_nobody cat "$m/g" >/dev/null 2>&1 && t_fail "nobody reads despite u:nobody:---"
# Only the owner sets an ACL.
as_nobody setfacl -m u:nobody:rw "$m/g" 2>/dev/null &&
	t_fail "nobody set an ACL on root's file"
# A minimal ACL is the mode: stored as nothing.
setfacl -b "$m/g" || t_fail "setfacl -b"
has_acl "$m/g" && t_fail "'+' after setfacl -b"
setfacl -m u::rwx,g::r-x,o::--x "$m/g"
expect_mode "$m/g" 751 "mode after setting a minimal ACL"
has_acl "$m/g" && t_fail "a minimal ACL left a '+'"
# A value the kernel would never send is refused by mqfs too: only the
# daemon sees a raw setxattr of a bad value on a FUSE mount.
set_acl_expect bad "$m/g" EINVAL

# Default ACLs: inherited, the umask not applied under one.
mkdir "$m/d"
setfacl -d -m u:nobody:rwx,g::rx,o::- "$m/d" || t_fail "setfacl -d"
(umask 077 && : >"$m/d/file" && mkdir "$m/d/sub") ||
	t_fail "create under a default ACL"
expect_mode "$m/d/file" 660 "file under a default ACL (umask 077 ignored)"
expect_acl "$m/d/file" "user::rw- user:nobody:rwx	#effective:rw- group::r-x	#effective:r-- mask::rw- other::--- " \
	"file's inherited ACL"
expect_mode "$m/d/sub" 770 "dir under a default ACL"
getfacl -cpd "$m/d/sub" | grep -q '^user:nobody:rwx' ||
	t_fail "a new directory did not inherit the default ACL"
as_nobody sh -c "echo x >'$m/d/file'" ||
	t_fail "nobody cannot write through the inherited entry"
# Without a default ACL the umask applies, and no ACL appears.
(umask 027 && : >"$m/plain" && mkdir "$m/plaindir")
expect_mode "$m/plain" 640 "file without a default ACL (umask 027)"
expect_mode "$m/plaindir" 750 "dir without a default ACL (umask 027)"
has_acl "$m/plain" && t_fail "'+' on a file made without default ACL"

# A setgid directory: nobody's S_ISGID request on a group-executable
# file is dropped (nobody is not in the group), with and without a
# default ACL on the directory.
mkdir "$m/sg" "$m/sgacl"
chmod 2777 "$m/sg" "$m/sgacl"
setfacl -d -m u::rwx,g::rwx,o::rwx "$m/sgacl"
setfacl -d -m u:nobody:rwx "$m/sgacl"
for dir in sg sgacl; do
	as_nobody /usr/bin/python3 -c "import os,sys; os.close(os.open(sys.argv[1], os.O_CREAT|os.O_WRONLY, 0o2775))" \
		"$m/$dir/f" || t_fail "nobody cannot create in $dir"
	[ $(( 0$(stat -c %a "$m/$dir/f") & 02000 )) = 0 ] ||
		t_fail "S_ISGID kept on nobody's file in $dir ($(stat -c %a "$m/$dir/f"))"
done
# Setting an ACL on a setgid file of a group nobody is not in drops it.
as_nobody sh -c ": >'$m/sg/own'"
chgrp 0 "$m/sg/own"
chmod 2770 "$m/sg/own"
as_nobody setfacl -m u:nobody:rwx "$m/sg/own" || t_fail "the owner's setfacl"
[ $(( 0$(stat -c %a "$m/sg/own") & 02000 )) = 0 ] ||
	t_fail "S_ISGID kept by an ACL set outside the file's group"

# cp -a of a tree keeps modes, adds nothing; tar --acls round trip.
src=$T_DIR/src
mkdir -p "$src/a/b"
echo 1 >"$src/a/one"
echo 2 >"$src/a/b/two"
chmod 640 "$src/a/one"
chmod 750 "$src/a/b"
chmod 604 "$src/a/b/two"
cp -a "$src/a" "$m/copy" || t_fail "cp -a"
expect_mode "$m/copy/one" 640 "cp -a: file mode"
expect_mode "$m/copy/b" 750 "cp -a: dir mode"
expect_mode "$m/copy/b/two" 604 "cp -a: nested file mode"
for p in copy copy/one copy/b copy/b/two; do
	has_acl "$m/$p" && t_fail "cp -a left a '+' on $p"
done
setfacl -m u:nobody:r "$m/copy/one"
setfacl -d -m u:nobody:rx "$m/copy/b"
(cd "$m" && tar --acls -cf "$T_DIR/t.tar" copy) || t_fail "tar --acls -c"
rm -rf "$m/copy"
(cd "$m" && tar --acls -xpf "$T_DIR/t.tar") || t_fail "tar --acls -x"
getfacl -cp "$m/copy/one" | grep -q '^user:nobody:r--' ||
	t_fail "tar --acls lost the access ACL"
getfacl -cpd "$m/copy/b" | grep -q '^user:nobody:r-x' ||
	t_fail "tar --acls lost the default ACL"
expect_mode "$m/copy/one" 640 "tar --acls: file mode"
# rsync -A, where rsync is installed (it is optional).
if command -v rsync >/dev/null; then
	rsync -aA "$m/copy/" "$m/rcopy/" </dev/null || t_fail "rsync -aA"
	getfacl -cp "$m/rcopy/one" | grep -q '^user:nobody:r--' ||
		t_fail "rsync -A lost the access ACL"
	getfacl -cpd "$m/rcopy/b" | grep -q '^user:nobody:r-x' ||
		t_fail "rsync -A lost the default ACL"
	has_acl "$m/rcopy/b/two" && t_fail "rsync -A added an ACL to b/two"
fi
t_umount

# What was set is still there after a remount, and fsck finds it sound.
t_fsck
t_mount -o allow_other
as_nobody cat "$m/f" >/dev/null || t_fail "the ACL did not survive a remount"
t_umount

# -o noacl: ACLs refused.
t_mount -o noacl
setfacl -m u:nobody:r "$m/plain" 2>/dev/null && t_fail "setfacl worked with noacl"
set_acl_expect minimal "$m/plain" EOPNOTSUPP
t_umount
t_fsck
t_say "ok"
