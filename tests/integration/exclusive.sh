#!/bin/sh
# SPDX-License-Identifier: MIT
# One writer per image, as e2fsprogs keeps it: while mounted, mkfs.mqfs
# -f, fsck.mqfs -y/-p and a second mount are refused (one clear line,
# non-zero exit, the image untouched); fsck.mqfs -n reads it but says it
# is mounted and may be stale.  A mount waits a few seconds for a daemon
# that still holds the image; open errors print one line; stats= in a
# missing directory fails at mount; a zero-length image is "too small".
. "$(dirname "$0")/lib.sh"
t_init
command -v flock >/dev/null || t_skip "flock(1) missing"
t_mkfs 64M

t_mount
python3 - "$T_MNT" <<'EOF' || t_fail "populate"
import os, sys
for i in range(50):
    with open(os.path.join(sys.argv[1], 'f%02d' % i), 'wb') as f:
        f.write(bytes([i]) * 8192)
        os.fsync(f.fileno())
EOF
mkdir "$T_DIR/mnt2"

# refused CMD...: must fail, with one line saying the image is in use.
refused() {
	"$@" >"$T_DIR/out" 2>&1 && t_fail "'$*' on a mounted image succeeded"
	grep -q "in use" "$T_DIR/out" || {
		cat "$T_DIR/out"
		t_fail "'$*': no 'in use' in the message"
	}
}
refused "$MKFS" -f -J 4M "$T_IMG"
refused "$FSCK" -y -f "$T_IMG"
refused "$FSCK" -p -f "$T_IMG"
refused "$MQFS" "$T_IMG" "$T_DIR/mnt2" -f
[ "$(grep -c "cannot open" "$T_DIR/out")" = 1 ] ||
	{ cat "$T_DIR/out"; t_fail "an open failure printed other than 1 line"; }
"$FSCK" -n "$T_IMG" >"$T_DIR/out" 2>&1 ||
	{ cat "$T_DIR/out"; t_fail "fsck -n on a mounted image"; }
grep -q "mounted.*stale" "$T_DIR/out" ||
	{ cat "$T_DIR/out"; t_fail "fsck -n did not say it is mounted"; }
python3 - "$T_MNT" <<'EOF' || t_fail "files changed while the tools ran"
import os, sys
for i in range(50):
    with open(os.path.join(sys.argv[1], 'f%02d' % i), 'rb') as f:
        assert f.read() == bytes([i]) * 8192, i
EOF
t_umount
t_fsck

# Someone holds the image for 1.5 s (a daemon finishing its unmount):
# the mount waits and says so.
flock -x "$T_IMG" -c 'sleep 1.5' &
holder=$!
sleep 0.3
t_mount
wait "$holder"
grep -q "waiting" "$T_LOG" || t_fail "the mount did not say it waited"
t_umount

# stats= whose directory does not exist: refused before mounting.
"$MQFS" "$T_IMG" "$T_MNT" -f -o stats="$T_DIR/no-dir/stats" \
	>"$T_DIR/out" 2>&1 && t_fail "stats= in a missing directory mounted"
t_is_mounted "$T_MNT" && t_fail "mounted with a bad stats= path"
grep -q "stats=" "$T_DIR/out" || { cat "$T_DIR/out"; t_fail "stats= message"; }

# A zero-length image: not an mqfs filesystem, said so.
: >"$T_DIR/empty"
"$MQFS" "$T_DIR/empty" "$T_MNT" -f >"$T_DIR/out" 2>&1 &&
	t_fail "a zero-length image mounted"
grep -q "too small" "$T_DIR/out" || { cat "$T_DIR/out"; t_fail "empty image"; }
grep -q "Input/output error" "$T_DIR/out" && t_fail "empty image: EIO"
"$FSCK" -n "$T_DIR/empty" >"$T_DIR/out" 2>&1
[ $? = 8 ] || t_fail "fsck -n of an empty image: not exit 8"
t_say "ok"
