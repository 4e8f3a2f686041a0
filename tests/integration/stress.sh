#!/bin/sh
# SPDX-License-Identifier: MIT
# Concurrency: six processes at once for a few seconds per cache mode,
# each changing its own directory against an in-memory model (create,
# write, append, overwrite, truncate, rename, link, unlink, mkdir, rmdir,
# xattrs) while all of them race on the same names in a shared directory
# (only the errors such races allow are accepted).  Every model must
# match the filesystem after a remount, and fsck must find nothing.
. "$(dirname "$0")/lib.sh"
t_init
t_mkfs 256M
SECONDS_PER_MODE=${MQFS_STRESS_SECONDS:-6}

cat >"$T_DIR/stress.py" <<'EOF'
import errno, json, multiprocessing as mp, os, random, sys, time

cmd, root, state = sys.argv[1:4]
WORKERS = 6
RACE_OK = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR,
           errno.ENOTDIR}


def own_step(rng, d, model):
    names = sorted(model)
    op = rng.randrange(9)
    name = 'f%d' % rng.randrange(40)
    p = os.path.join(d, name)
    if op == 0 or not names:                    # create or replace
        data = rng.randbytes(rng.choice([0, 1, 100, 4096, 5000, 70000]))
        with open(p, 'wb') as f:
            f.write(data)
        model[name] = data
        return
    old = rng.choice(names)
    q = os.path.join(d, old)
    if op == 1:                                 # append
        extra = rng.randbytes(rng.randrange(1, 9000))
        with open(q, 'ab') as f:
            f.write(extra)
        model[old] += extra
    elif op == 2:                               # overwrite in place
        data, off = model[old], rng.randrange(0, len(model[old]) + 5000)
        piece = rng.randbytes(rng.randrange(1, 20000))
        fd = os.open(q, os.O_WRONLY)
        os.pwrite(fd, piece, off)
        os.close(fd)
        data = data + b'\0' * max(0, off - len(data))
        model[old] = data[:off] + piece + data[off + len(piece):]
    elif op == 3:                               # truncate
        size = rng.randrange(0, len(model[old]) + 10000)
        os.truncate(q, size)
        data = model[old]
        model[old] = data[:size] + b'\0' * max(0, size - len(data))
    elif op == 4:                               # rename (maybe over one)
        os.rename(q, p)
        model[name] = model.pop(old)
    elif op == 5 and name not in model:         # hard link
        os.link(q, p)
        model[name] = model[old]                # same bytes from now on:
        with open(p, 'ab') as f:                # break the link again
            pass
        os.unlink(p)
        del model[name]
    elif op == 6:                               # unlink
        os.unlink(q)
        del model[old]
    elif op == 7:                               # a directory comes and goes
        sub = os.path.join(d, 'dir%d' % rng.randrange(3))
        try:
            os.mkdir(sub)
            os.rmdir(sub)
        except FileExistsError:
            pass
    else:                                       # xattr
        os.setxattr(q, 'user.v', rng.randbytes(rng.randrange(1, 300)))


def race_step(rng, d):
    a = os.path.join(d, 's%d' % rng.randrange(12))
    b = os.path.join(d, 's%d' % rng.randrange(12))
    op = rng.randrange(6)
    try:
        if op == 0:
            with open(a, 'ab') as f:
                f.write(b'x' * rng.randrange(1, 10000))
        elif op == 1:
            os.rename(a, b)
        elif op == 2:
            os.unlink(a)
        elif op == 3:
            os.mkdir(a)
        elif op == 4:
            os.rmdir(a)
        else:
            os.link(a, b)
    except OSError as e:
        if e.errno not in RACE_OK and not (op == 5 and e.errno == errno.EPERM):
            raise


def worker(i, seconds, out):
    rng = random.Random(i * 7919 + int(time.time()))
    d = os.path.join(root, 'w%d' % i)
    os.makedirs(d, exist_ok=True)
    model = {}
    end = time.time() + seconds
    steps = 0
    while time.time() < end:
        own_step(rng, d, model)
        race_step(rng, os.path.join(root, 'shared'))
        steps += 1
    out.put((i, steps, {k: v.hex() for k, v in model.items()}))


if cmd == 'run':
    os.makedirs(os.path.join(root, 'shared'), exist_ok=True)
    q = mp.Queue()
    ps = [mp.Process(target=worker, args=(i, float(sys.argv[4]), q))
          for i in range(WORKERS)]
    for p in ps:
        p.start()
    results = [q.get() for _ in ps]
    for p in ps:
        p.join()
        assert p.exitcode == 0, 'a worker failed'
    models = {'w%d' % i: m for i, _, m in results}
    with open(state, 'w') as f:
        json.dump(models, f)
    print('%d operations' % sum(s for _, s, _ in results))
else:
    with open(state) as f:
        models = json.load(f)
    bad = 0
    for w, model in models.items():
        d = os.path.join(root, w)
        have = sorted(n for n in os.listdir(d) if not n.startswith('dir'))
        if have != sorted(model):
            print('%s: names differ: %s' % (w, set(have) ^ set(model)))
            bad += 1
        for name, data in model.items():
            with open(os.path.join(d, name), 'rb') as f:
                if f.read() != bytes.fromhex(data):
                    print('%s/%s: content differs' % (w, name))
                    bad += 1
    os.listdir(os.path.join(root, 'shared'))
    sys.exit(1 if bad else 0)
EOF

for cache in kernel none; do
	t_mount -o "cache=$cache"
	python3 "$T_DIR/stress.py" run "$T_MNT" "$T_DIR/state.json" \
		"$SECONDS_PER_MODE" || t_fail "stress (cache=$cache)"
	t_umount
	t_fsck
	t_mount
	python3 "$T_DIR/stress.py" check "$T_MNT" "$T_DIR/state.json" ||
		t_fail "models differ after remount (cache=$cache)"
	rm -rf "$T_MNT"/w* "$T_MNT/shared" || t_fail "cleanup (cache=$cache)"
	t_umount
	t_fsck
done
t_say "ok"
