#!/bin/sh
# SPDX-License-Identifier: MIT
# SQLite in WAL mode on every cache mode: the -shm index is a shared map
# (on cache=none and cache=dontcache a FOPEN_DIRECT_IO file), the -wal
# log is appended and fsync'd.  5000 inserts in transactions of 50 while
# a second process reads, then PRAGMA integrity_check; after a remount
# the database opens, checks ok and holds every row.  Uses the sqlite3
# module of Debian's python3 (the system's libsqlite3).
. "$(dirname "$0")/lib.sh"
t_init
python3 -c 'import sqlite3' 2>/dev/null || t_fail "python3's sqlite3 module is needed"
t_mkfs 256M

for cache in kernel none dontcache; do
	t_mount -o "cache=$cache"
	t_py "$T_MNT/db" <<'EOF'
import sqlite3, subprocess, sys
path = sys.argv[1]
db = sqlite3.connect(path)
assert db.execute('pragma journal_mode=wal').fetchone()[0] == 'wal'
db.execute('create table t(id integer primary key, v text, n integer)')
db.execute('create index t_n on t(n)')
reader = subprocess.Popen([sys.executable, '-c', '''
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
last = 0
for _ in range(200):
    n = db.execute("select count(*) from t").fetchone()[0]
    assert n >= last, (n, last)
    last = n
    time.sleep(0.005)
''', path])
for i in range(5000):
    db.execute('insert into t(v, n) values(?, ?)', ('row %d ' % i * 3, i % 97))
    if i % 50 == 49:
        db.commit()
db.commit()
assert reader.wait() == 0, 'the reader failed'
assert db.execute('pragma integrity_check').fetchone()[0] == 'ok'
assert db.execute('select count(*) from t').fetchone()[0] == 5000
db.close()
EOF
	t_umount
	t_mount -o "cache=$cache"
	t_py "$T_MNT/db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute('pragma integrity_check').fetchone()[0] == 'ok'
assert db.execute('select count(*), sum(n) from t').fetchone() == \
    (5000, sum(i % 97 for i in range(5000)))
db.close()
EOF
	rm -f "$T_MNT"/db*
	t_umount
	t_fsck
	t_say "cache=$cache: WAL database ok"
done
t_say "ok"
