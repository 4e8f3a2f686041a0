#!/bin/sh
# SPDX-License-Identifier: MIT
# Privileges dropped as a local filesystem drops them (mqfs handles
# kill-priv itself: FUSE_HANDLE_KILLPRIV_V2): a write by a user without
# CAP_FSETID clears S_ISUID, and S_ISGID when the group may execute (not
# otherwise), on cache=kernel (through the page cache) and cache=none;
# a truncate or a fallocate (allocate, punch a hole, zero a range) by
# such a user clears them too; chown clears them even for root; root's
# own writes and fallocates keep them; a write or a fallocate drops file
# capabilities (when setcap is there to set some).  And cache=kernel buffered writes
# ask nothing per write: no GETXATTR reaches the daemon (the kernel
# marks the mount SB_NOSEC).  Runs as nobody through allow_other.
. "$(dirname "$0")/lib.sh"
t_init
command -v setpriv >/dev/null || t_fail "setpriv (util-linux) is needed"
t_mkfs 128M
chmod 755 "$T_DIR"	# nobody walks to the mount point
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
mode_of() { stat -c %a "$1"; }
expect_mode() {	# FILE MODE WHAT
	got=$(mode_of "$1")
	[ "$got" = "$2" ] || t_fail "$3: mode $got, want $2"
}

for cache in kernel none; do
	t_mount -o "cache=$cache,allow_other"
	f=$T_MNT/f
	: >"$f"
	chmod 4777 "$f"
	as_nobody sh -c "echo x >> '$f'" || t_fail "nobody cannot write"
	sync "$f" 2>/dev/null || sync
	expect_mode "$f" 777 "suid after a write by nobody (cache=$cache)"
	chmod 2777 "$f"
	as_nobody sh -c "echo x >> '$f'"
	expect_mode "$f" 777 "executable sgid after nobody's write (cache=$cache)"
	chmod 2767 "$f"
	as_nobody sh -c "echo x >> '$f'"
	expect_mode "$f" 2767 "sgid without group x after a write (cache=$cache)"
	chmod 4777 "$f"
	echo x >>"$f"
	expect_mode "$f" 4777 "suid after root's write (cache=$cache)"
	as_nobody truncate -s 1 "$f" || t_fail "nobody cannot truncate"
	expect_mode "$f" 777 "suid after nobody's truncate (cache=$cache)"
	# fallocate in each of its modes changes content as a write does.
	chmod 4777 "$f"
	as_nobody fallocate -l 8192 "$f" || t_fail "nobody cannot fallocate"
	expect_mode "$f" 777 "suid after nobody's fallocate (cache=$cache)"
	chmod 6777 "$f"
	as_nobody fallocate -p -o 0 -l 4096 "$f" || t_fail "punch hole"
	expect_mode "$f" 777 "suid/sgid after nobody's hole punch (cache=$cache)"
	chmod 6666 "$f"
	as_nobody fallocate -z -o 4096 -l 4096 "$f" || t_fail "zero range"
	expect_mode "$f" 2666 "suid after nobody's zero range (cache=$cache)"
	chmod 4777 "$f"
	fallocate -l 16384 "$f"
	expect_mode "$f" 4777 "suid after root's fallocate (cache=$cache)"
	chmod 6755 "$f"
	chown 65534:65534 "$f"
	expect_mode "$f" 755 "suid/sgid after chown (cache=$cache)"
	if command -v setcap >/dev/null && command -v getcap >/dev/null &&
	   setcap cap_net_raw+ep "$f" 2>/dev/null; then
		[ -n "$(getcap "$f")" ] || t_fail "setcap did not stick"
		chmod 0777 "$f"
		as_nobody sh -c "echo x >> '$f'"
		[ -z "$(getcap "$f")" ] || t_fail "capabilities kept after nobody's write (cache=$cache)"
		setcap cap_net_raw+ep "$f"
		echo x >>"$f"
		[ -z "$(getcap "$f")" ] || t_fail "capabilities kept after root's write (cache=$cache)"
		setcap cap_net_raw+ep "$f"
		chmod 4777 "$f"
		fallocate -l 65536 "$f"
		[ -z "$(getcap "$f")" ] || t_fail "capabilities kept after root's fallocate (cache=$cache)"
		expect_mode "$f" 4777 "suid after root's fallocate of a file with capabilities (cache=$cache)"
	fi
	rm -f "$f"
	t_umount
done

# No GETXATTR per buffered write on cache=kernel: count with -d.
rm -f "$T_LOG"
"$MQFS" "$T_IMG" "$T_MNT" -f -d >"$T_DIR/debug.log" 2>&1 &
T_PID=$!
t_wait_mounted "$T_MNT" "$T_PID" || t_fail "not mounted with -d"
t_py "$T_MNT/g" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(2000):
    os.pwrite(fd, b'y' * 4096, (i * 7919 % 2000) * 4096)
os.close(fd)
EOF
t_umount
n=$(grep -c 'opcode: GETXATTR' "$T_DIR/debug.log" || true)
[ "$n" -le 2 ] || t_fail "$n GETXATTR requests for 2000 buffered writes"
t_fsck
t_say "ok"
