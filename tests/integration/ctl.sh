#!/bin/sh
# SPDX-License-Identifier: MIT
# The control surface MNT/.mqfs and mqfsctl: hidden from readdir, found
# by lookup; the scheduler and tunables read and written (bad values:
# EINVAL, nothing changed; other users: refused); the elevator switched
# back and forth under a running fio verify job with no error; the
# queue/stat figures agree with fio's own counts within 1%; namespace
# changes in the control directories refused.  Then unmount (exit 0)
# and fsck clean.
. "$(dirname "$0")/lib.sh"
t_init
command -v fio >/dev/null || t_fail "fio is needed"
CTL=$T_BIN/mqfsctl
[ -x "$CTL" ] || t_fail "$CTL is not built"
t_mkfs 512M
# commit=600: no timed commit adds metadata writes to the counted run.
t_mount -o cache=none,allow_other,commit=600
Q=$T_MNT/.mqfs/queue

t_say "hidden but found"
ls -a "$T_MNT" | grep -qx '.mqfs' && t_fail "readdir lists .mqfs"
ls "$Q" >"$T_DIR/ls.out" || t_fail "ls $Q"
for f in scheduler nr_requests complete_delay_us stat iosched; do
	grep -qx "$f" "$T_DIR/ls.out" || t_fail "$f missing from queue/"
done
for f in read_expire write_expire fifo_batch writes_starved front_merges \
	 async_depth prio_aging_expire; do
	[ -f "$Q/iosched/$f" ] || t_fail "iosched/$f missing"
done
for f in dispatched run requeues dispatch_busy tags io; do
	[ -n "$(cat "$T_MNT/.mqfs/hctx0/$f")" ] || t_fail "hctx0/$f unread"
done
grep -q '^blocks_free ' "$T_MNT/.mqfs/fs/space" || t_fail "fs/space"
grep -q '^commits ' "$T_MNT/.mqfs/fs/journal" || t_fail "fs/journal"
grep -q '^hits ' "$T_MNT/.mqfs/fs/cache" || t_fail "fs/cache"
grep -q '^requests ' "$T_MNT/.mqfs/fuse/stat" || t_fail "fuse/stat"
grep -q '^protocol 7\.' "$T_MNT/.mqfs/fuse/conn" || t_fail "fuse/conn"
grep -q '^INIT 1$' "$T_MNT/.mqfs/fuse/ops" || t_fail "fuse/ops has no INIT 1"
# Control files carry no extended attributes: an empty list, no EIO.
t_py "$T_MNT/.mqfs/fs/space" <<'EOF'
import errno, os, sys
assert os.listxattr(sys.argv[1]) == [], os.listxattr(sys.argv[1])
try:
    os.getxattr(sys.argv[1], 'user.x')
    raise SystemExit('getxattr found something')
except OSError as e:
    assert e.errno == errno.ENODATA, e
EOF
[ "$(cat "$Q/scheduler")" = "none [mq-deadline]" ] ||
	t_fail "scheduler: $(cat "$Q/scheduler")"

t_say "writes: values, refusals, namespace"
t_py "$T_MNT" <<'EOF'
import errno, os, sys
mnt = sys.argv[1]
q = mnt + '/.mqfs/queue/'

def get(p):
    with open(q + p) as f:
        return f.read().strip()

def put(p, v):
    fd = os.open(q + p, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, v.encode())
    finally:
        os.close(fd)

def refused(code, fn, *a):
    try:
        fn(*a)
    except OSError as e:
        assert e.errno == code, f'{fn.__name__}{a}: {e}, want {code}'
        return
    raise AssertionError(f'{fn.__name__}{a}: succeeded')

put('scheduler', 'none\n')
assert get('scheduler') == '[none] mq-deadline', get('scheduler')
assert 'read_expire' not in os.listdir(q + 'iosched')
put('scheduler', 'mq-deadline')
assert get('scheduler') == 'none [mq-deadline]'
put('iosched/fifo_batch', '8\n')
assert get('iosched/fifo_batch') == '8'
for p, bad in (('scheduler', 'bogus'), ('iosched/fifo_batch', '-1'),
               ('iosched/fifo_batch', '12abc'), ('nr_requests', 'x'),
               ('complete_delay_us', '99999999999')):
    before = get(p)
    refused(errno.EINVAL, put, p, bad)
    assert get(p) == before, (p, get(p), before)
refused(errno.EACCES, put, 'queue_depth', '4')
refused(errno.EPERM, os.unlink, q + 'stat')
refused(errno.EPERM, os.mkdir, q + 'x')
refused(errno.EPERM, os.rename, mnt + '/.mqfs', mnt + '/y')
refused(errno.EPERM, os.chmod, q + 'scheduler', 0o666)
refused(errno.EEXIST, os.mkdir, mnt + '/.mqfs')
for bad in ('x', 'y'):
    refused(errno.EPERM, open, q + bad, 'w')
EOF

# Another user: the mount allows others, the temp dir must let them in.
chmod 755 "$T_DIR"
as_nobody() {
	if setpriv --reuid=65534 --regid=65534 --clear-groups true \
		2>/dev/null; then
		setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "$1"
	else
		su nobody -s /bin/sh -c "$1"
	fi
}
if as_nobody "cat '$Q/scheduler'" >/dev/null 2>&1; then
	as_nobody "echo none > '$Q/scheduler'" 2>/dev/null &&
		t_fail "another user switched the elevator"
	[ "$(cat "$Q/scheduler")" = "none [mq-deadline]" ] ||
		t_fail "another user changed the scheduler"
	t_say "another user: refused"
else
	t_say "no way to run as another user: that check skipped"
fi

t_say "queue/stat against fio"
dd if=/dev/zero of="$T_MNT/laid" bs=1M count=32 oflag=direct 2>/dev/null ||
	t_fail "dd"
sync "$T_MNT/laid"
sync -f "$T_MNT"
cp "$Q/stat" "$T_DIR/stat.0"
fio --name=count --filename="$T_MNT/laid" --ioengine=io_uring --direct=1 \
	--rw=randrw --bs=4k --iodepth=16 --size=32m --io_size=48m \
	--output-format=json --output="$T_DIR/count.json" \
	>"$T_DIR/fio.err" 2>&1 || { cat "$T_DIR/fio.err"; t_fail "fio count"; }
cp "$Q/stat" "$T_DIR/stat.1"
t_py "$T_DIR" <<'EOF'
import json, sys
d = sys.argv[1]
a = [int(x) for x in open(d + '/stat.0').read().split()]
b = [int(x) for x in open(d + '/stat.1').read().split()]
assert len(a) == len(b) == 17, (len(a), len(b))
delta = [y - x for x, y in zip(a, b)]
j = json.load(open(d + '/count.json'))['jobs'][0]
for name, ios, merges, sect in (('read', 0, 1, 2), ('write', 4, 5, 6)):
    fio_ios = j[name]['total_ios']
    fio_bytes = j[name]['io_kbytes'] * 1024
    ops = delta[ios] + delta[merges]
    nbytes = delta[sect] * 512
    print(f'{name}: fio {fio_ios} ios {fio_bytes} B; stat {ops} ios {nbytes} B')
    assert fio_ios > 1000, fio_ios
    assert abs(ops - fio_ios) <= fio_ios / 100, (name, ops, fio_ios)
    assert abs(nbytes - fio_bytes) <= fio_bytes / 100, (name, nbytes, fio_bytes)
EOF

t_say "switching under fio (verify=crc32c)"
fio --name=switch --directory="$T_MNT" --filename=switch.dat \
	--ioengine=io_uring --direct=1 --rw=randwrite --bs=4k --iodepth=16 \
	--size=48m --verify=crc32c --do_verify=1 --verify_fatal=1 \
	--verify_state_save=0 \
	--output-format=json --output="$T_DIR/switch.json" \
	>"$T_DIR/fio.err" 2>&1 &
FIO=$!
n=0
while kill -0 "$FIO" 2>/dev/null; do
	for s in none mq-deadline; do
		echo "$s" >"$Q/scheduler" || t_fail "switch to $s"
		n=$((n + 1))
		sleep 0.05
	done
done
wait "$FIO" || { cat "$T_DIR/fio.err"; t_fail "fio failed under switches"; }
[ "$n" -ge 4 ] || t_fail "only $n switches while fio ran"
python3 - "$T_DIR/switch.json" <<'EOF' || t_fail "fio under switches"
import json, sys
j = json.load(open(sys.argv[1]))['jobs'][0]
assert j['error'] == 0, j['error']
assert j['write']['io_bytes'] == 48 << 20, j['write']['io_bytes']
assert j['read']['io_bytes'] == 48 << 20, j['read']['io_bytes']
EOF
t_say "$n switches, fio verified"

t_say "mqfsctl"
"$CTL" stat "$T_MNT" 0.2 2 >"$T_DIR/ctl.out" || t_fail "mqfsctl stat"
# The device, the header and two samples, then (mq-deadline) the counts
# per priority.
[ "$(sed '/^$/q' "$T_DIR/ctl.out" | grep -c .)" = 4 ] ||
	t_fail "mqfsctl stat: $(cat "$T_DIR/ctl.out")"
grep -q 'r_await' "$T_DIR/ctl.out" || t_fail "mqfsctl stat: no header"
grep -q '^FUSE transport: ' "$T_DIR/ctl.out" || t_fail "mqfsctl stat: no transport"
if [ -e "$Q/iosched/prio_stat" ]; then
	grep -q '^IDLE  *[0-9]' "$T_DIR/ctl.out" ||
		t_fail "mqfsctl stat: no priority counts"
fi
"$CTL" set "$T_MNT" read_expire=250 nr_requests=64 || t_fail "mqfsctl set"
[ "$(cat "$Q/iosched/read_expire")" = 250 ] || t_fail "read_expire not set"
[ "$(cat "$Q/nr_requests")" = 64 ] || t_fail "nr_requests not set"
"$CTL" set "$T_MNT" fifo_batch=-3 2>"$T_DIR/ctl.err" &&
	t_fail "mqfsctl set took fifo_batch=-3"
grep -q fifo_batch "$T_DIR/ctl.err" || t_fail "error does not name the key"
"$CTL" set "$T_MNT" nosuchkey=1 2>"$T_DIR/ctl.err" &&
	t_fail "mqfsctl set took nosuchkey"
grep -q nosuchkey "$T_DIR/ctl.err" || t_fail "error does not name nosuchkey"

t_umount
t_fsck
t_say "ok"
