#!/bin/sh
# SPDX-License-Identifier: MIT
# kill -9 of the daemon under fsync'd writes with create/unlink traffic
# beside them, on every cache mode: no fsync'd file may be lost.
#
# Each round mounts, checks every file the last round made durable
# (contents by SHA-256, after the journal replay), deletes them, starts
# a writer and a churner, kills the daemon at a random moment and drops
# the dead mount.  The writer makes 2 MiB files from mixed writes
# (1000 B, 4 KiB, 64 KiB, 1 MiB), fsyncs each, fsyncs the directory,
# renames it, fsyncs the directory again, and only then records it
# (outside the mount, fsync'd).  The churner creates, writes, truncates
# and unlinks small files in a second directory.  fsck -n after the last
# round must be clean.  CRASH_ROUNDS rounds per mode (default 3; the
# campaign is `make check-crash`, 50 per mode); CRASH_SEED seeds the
# kill times.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 256M
ROUNDS=${CRASH_ROUNDS:-3}
SEED=${CRASH_SEED:-$$}

cat >"$T_DIR/work.py" <<'EOF'
import hashlib, json, os, random, sys, threading

role, root, log, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rng = random.Random(seed)
SIZES = (1000, 4096, 65536, 1 << 20)
FILES = 60		# 120 MiB a round: the 256 MiB never fills


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd, data):
    while data:		# a direct write may be short (ENOSPC next)
        data = data[os.write(fd, data):]


def writer():
    d = os.path.join(root, 'w')
    os.makedirs(d, exist_ok=True)
    fsync_dir(root)
    out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for n in range(FILES):
        tmp, name = os.path.join(d, 't%d' % n), 'f%d-%d' % (seed, n)
        h, size = hashlib.sha256(), 0
        fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644)
        while size < (2 << 20):
            chunk = min(rng.choice(SIZES), (2 << 20) - size)
            data = rng.randbytes(chunk)
            write_all(fd, data)
            h.update(data)
            size += chunk
        os.fsync(fd)
        os.close(fd)
        fsync_dir(d)
        os.rename(tmp, os.path.join(d, name))
        fsync_dir(d)
        rec = json.dumps({'name': name, 'size': size,
                          'sha': h.hexdigest()}) + '\n'
        os.write(out, rec.encode())
        os.fsync(out)


def churner():
    d = os.path.join(root, 'c')
    os.makedirs(d, exist_ok=True)
    for n in range(100000):
        p = os.path.join(d, 'c%d' % (n % 64))
        if os.path.exists(p) and rng.random() < 0.5:
            os.unlink(p)
            continue
        with open(p, 'ab') as f:
            f.write(rng.randbytes(rng.choice((100, 5000, 70000))))
            if rng.random() < 0.2:
                f.truncate(rng.randrange(1, 70000))


def check():
    try:
        with open(log) as f:
            recs = [json.loads(line) for line in f if line.endswith('\n')]
    except FileNotFoundError:
        recs = []
    for r in recs:
        p = os.path.join(root, 'w', r['name'])
        with open(p, 'rb') as f:
            data = f.read()
        assert len(data) == r['size'] and \
            hashlib.sha256(data).hexdigest() == r['sha'], \
            '%s: %d bytes, wrong content (fsync\'d %d)' % (
                r['name'], len(data), r['size'])
    for r in recs:
        os.unlink(os.path.join(root, 'w', r['name']))
    if os.path.exists(log):
        os.unlink(log)
    print(len(recs))


try:
    {'writer': writer, 'churner': churner, 'check': check}[role]()
except OSError:
    if role == 'check':
        raise
    sys.exit(0)		# the daemon is gone
EOF

# round MODE N: check the last round, then write until killed.
round() {
	t_mount -o "cache=$1"
	n=$(python3 "$T_DIR/work.py" check "$T_MNT" "$T_DIR/durable" 0) ||
		t_fail "cache=$1 round $2: fsync'd files lost"
	CHECKED=$((CHECKED + n))
	python3 "$T_DIR/work.py" writer "$T_MNT" "$T_DIR/durable" \
		"$(( SEED + $2 ))" &
	w=$!
	python3 "$T_DIR/work.py" churner "$T_MNT" "$T_DIR/churn" \
		"$(( SEED + $2 + 7 ))" &
	c=$!
	# 0.3-2.3 s: inside a file, between its fsyncs, or in a rename.
	sleep "$(python3 -c "import random; r = random.Random($SEED * 131 + $2)
print('%.2f' % (0.3 + 2 * r.random()))")"
	kill -9 "$T_PID"
	wait "$w" "$c"
	t_drop_dead_mount
}

for mode in kernel none dontcache; do
	CHECKED=0
	rm -f "$T_DIR/durable"
	rnd=1	# not i: lib.sh's waits use it
	while [ "$rnd" -le "$ROUNDS" ]; do
		round "$mode" "$rnd"
		rnd=$((rnd + 1))
	done
	t_mount -o "cache=$mode"
	n=$(python3 "$T_DIR/work.py" check "$T_MNT" "$T_DIR/durable" 0) ||
		t_fail "cache=$mode last round: fsync'd files lost"
	CHECKED=$((CHECKED + n))
	t_umount
	t_fsck
	t_say "cache=$mode: $ROUNDS kills, $CHECKED fsync'd files checked, none lost (seed $SEED)"
done
t_say "ok"
