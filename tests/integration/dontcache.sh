#!/bin/sh
# SPDX-License-Identifier: MIT
# cache=dontcache and the per-directory policy, on a real mount:
# - a 192 MiB file written through the write-behind is byte-exact, has no
#   page in the page cache (fincore) before or after reading it back, and
#   the buffers never passed the bound (held_peak in .mqfs/fs/dontcache);
# - four concurrent writers (mqfs-load, io_uring qd 16) under an 8 MiB
#   bound: the bound holds, writers were throttled, data verifies; then
#   mixed reads and writes at qd 32 on one file finish;
# - data fsynced before the daemon is killed (SIGKILL) is there after the
#   next mount; the image is fsck-clean;
# - user.mqfs.cache on a directory of a cache=kernel mount: files made
#   under it (also in subdirectories) inherit it, stay out of the page
#   cache, keep the policy across remount; a bad value is refused;
#   "kernel" on a cache=dontcache mount brings the page cache back;
# - the stats= report carries the write-behind line.
. "$(dirname "$0")/lib.sh"
t_init
LOAD=$T_BIN/mqfs-load
[ -x "$LOAD" ] || t_fail "$LOAD is not built"
command -v fincore >/dev/null || t_fail "fincore (util-linux) is needed"
t_mkfs 768M
DC=$T_MNT/.mqfs/fs/dontcache

# Resident pages of file $1 (fincore).
pages() {
	fincore --noheadings --raw --output PAGES "$1" ||
		t_fail "fincore $1"
}

# Field $1 of .mqfs/fs/dontcache.
dc() {
	awk -v k="$1" '$1 == k { print $2 }' "$DC"
}

t_mount -o cache=dontcache,dontcache_dirty=8M
head -c 192M /dev/urandom >"$T_DIR/src" || t_fail "source file"
dd if="$T_DIR/src" of="$T_MNT/big" bs=1M status=none || t_fail "dd write"
[ "$(pages "$T_MNT/big")" = 0 ] || t_fail "pages cached after the write"
cmp "$T_DIR/src" "$T_MNT/big" || t_fail "read back differs"
[ "$(pages "$T_MNT/big")" = 0 ] || t_fail "pages cached after the read"
[ "$(dc buffered_bytes)" -ge $((192 << 20)) ] ||
	t_fail "write-behind took $(dc buffered_bytes) bytes"
[ "$(dc held_peak)" -le $((8 << 20)) ] ||
	t_fail "held_peak $(dc held_peak) over the 8 MiB bound"
[ "$(dc dirty_bytes)" = 0 ] || t_fail "dirty after close: $(dc dirty_bytes)"

throttled=$(dc throttled)
"$LOAD" -m write -f buffered -e io_uring -q 16 -b 128k -j 4 -s 48m \
	--verify "$T_MNT/w" >"$T_DIR/load.out" 2>&1 ||
	{ cat "$T_DIR/load.out"; t_fail "four writers"; }
[ "$(dc held_peak)" -le $((8 << 20)) ] ||
	t_fail "held_peak $(dc held_peak) over the bound with four writers"
[ "$(dc throttled)" -gt "$throttled" ] || t_fail "no writer was throttled"
"$LOAD" -m read -f buffered -e io_uring -q 8 -b 64k -j 4 -s 48m \
	--verify "$T_MNT/w" >"$T_DIR/load.out" 2>&1 ||
	{ cat "$T_DIR/load.out"; t_fail "four files verify"; }
# Mixed sequential reads and writes at depth on one file: read-ahead
# windows, write-behind batches and the reaper all meet (this hung once:
# a window answered under the inode lock the flusher held).
timeout 60 "$LOAD" -m rw --mix 50 -f buffered -e io_uring -q 32 -b 64k \
	-s 48m -t 3 --loops "$T_MNT/w.0" >"$T_DIR/load.out" 2>&1 ||
	{ cat "$T_DIR/load.out"; t_fail "mixed rw at qd 32 (hung or failed)"; }
t_say "write-behind: $(dc buffered_writes) writes, peak $(dc held_peak) B," \
	"$(dc throttled) throttled, $(dc completions_per_run) per worker run"

# fsync, then the daemon dies: what fsync covered is there.
t_py "$T_MNT/synced" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
for i in range(64):
    os.pwrite(fd, bytes([i]) * 131072, i * 131072)
os.fsync(fd)
os.close(fd)
PY
kill -9 "$T_PID"
t_drop_dead_mount
t_mount -o cache=dontcache,stats="$T_DIR/stats"
t_py "$T_MNT/synced" <<'PY'
import sys
d = open(sys.argv[1], 'rb').read()
assert len(d) == 64 * 131072, len(d)
for i in range(64):
    assert d[i * 131072:(i + 1) * 131072] == bytes([i]) * 131072, i
PY
cmp "$T_DIR/src" "$T_MNT/big" || t_fail "big file after the crash"
t_umount
t_fsck
grep -q "^dontcache write-behind: .* buffered" "$T_DIR/stats" ||
	t_fail "stats= has no write-behind line"

# The per-directory policy on a cache=kernel mount.
t_mount -o cache=kernel
mkdir -p "$T_MNT/stream" "$T_MNT/plain" || t_fail "mkdir"
t_py "$T_MNT" <<'PY'
import errno, os, sys
m = sys.argv[1]
os.setxattr(m + '/stream', 'user.mqfs.cache', b'dontcache')
try:
    os.setxattr(m + '/plain', 'user.mqfs.cache', b'sometimes')
    raise SystemExit('a bad policy value was accepted')
except OSError as e:
    assert e.errno == errno.EINVAL, e
os.mkdir(m + '/stream/sub')
assert os.getxattr(m + '/stream/sub', 'user.mqfs.cache') == b'dontcache'
PY
for f in stream/a stream/sub/b plain/c; do
	dd if="$T_DIR/src" of="$T_MNT/$f" bs=1M count=32 status=none ||
		t_fail "dd $f"
done
sync
head -c 32M "$T_DIR/src" >"$T_DIR/src32"
for f in stream/a stream/sub/b plain/c; do
	cmp "$T_DIR/src32" "$T_MNT/$f" || t_fail "$f reads back wrong"
done
[ "$(pages "$T_MNT/stream/a")" = 0 ] || t_fail "stream/a is cached"
[ "$(pages "$T_MNT/stream/sub/b")" = 0 ] || t_fail "stream/sub/b is cached"
[ "$(pages "$T_MNT/plain/c")" -gt 0 ] || t_fail "plain/c is not cached"
t_umount
t_mount -o cache=kernel
cat "$T_MNT/stream/sub/b" "$T_MNT/plain/c" >/dev/null || t_fail "read"
[ "$(pages "$T_MNT/stream/sub/b")" = 0 ] ||
	t_fail "the policy did not survive the remount"
[ "$(pages "$T_MNT/plain/c")" -gt 0 ] || t_fail "plain/c read uncached"
t_umount

# "kernel" on a cache=dontcache mount: that tree is cached again.
t_mount -o cache=dontcache
setpolicy() {
	python3 -c "import os,sys; os.setxattr(sys.argv[1], 'user.mqfs.cache', sys.argv[2].encode())" "$1" "$2" ||
		t_fail "setxattr $1"
}
setpolicy "$T_MNT/plain" kernel
cat "$T_MNT/plain/c" >/dev/null || t_fail "read plain/c"
[ "$(pages "$T_MNT/plain/c")" = 0 ] ||
	t_fail "plain/c cached: its own policy is unset, the mount's applies"
dd if="$T_DIR/src" of="$T_MNT/plain/d" bs=1M count=8 status=none ||
	t_fail "dd plain/d"
cat "$T_MNT/plain/d" >/dev/null || t_fail "read plain/d"
[ "$(pages "$T_MNT/plain/d")" -gt 0 ] || t_fail "plain/d is not cached"
t_umount
t_fsck
t_say "ok"
