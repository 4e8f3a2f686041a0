#!/bin/sh
# SPDX-License-Identifier: MIT
# fio smoke: the verify jobs of contrib/fio (crc32c on every block) on the
# mounted filesystem, with cache=kernel, cache=none and cache=dontcache
# (with a small write-behind bound), among them 8 jobs writing one file
# with O_DIRECT at once; every job must finish without error,
# having written and read back its data; the daemon exits 0 and the image
# is fsck-clean afterwards.
. "$(dirname "$0")/lib.sh"
t_init
command -v fio >/dev/null || t_fail "fio is needed"
t_mkfs 512M
JOBS="verify-seqwrite-1m-qd4 verify-randwrite-4k-qd16
      verify-randwrite-64k-qd8-4jobs verify-direct-randwrite-4k-qd16
      verify-direct-1file-4k-qd8-8jobs"

for cache in kernel none dontcache; do
	t_mount -o "cache=$cache,dontcache_dirty=4M"
	mkdir -p "$T_MNT/fio" || t_fail "mkdir"
	for job in $JOBS; do
		out=$T_DIR/$job-$cache.json
		MQFS_FIO_DIR=$T_MNT/fio MQFS_FIO_SIZE=32m MQFS_FIO_RUNTIME=120 \
			fio --output-format=json --output="$out" \
			"$T_SRC/contrib/fio/$job.fio" >"$T_DIR/fio.err" 2>&1 ||
			{ cat "$T_DIR/fio.err" "$out"; t_fail "$job (cache=$cache)"; }
		python3 - "$out" <<'EOF' || t_fail "$job (cache=$cache): results"
import json, sys
text = open(sys.argv[1]).read()
jobs = json.loads(text[text.index('{'):])['jobs']   # fio may warn first
assert jobs, 'no job ran'
for j in jobs:
    assert j['error'] == 0, j['error']
    assert j['write']['io_bytes'] == 32 << 20, j['write']['io_bytes']
    assert j['read']['io_bytes'] == 32 << 20, 'verified %d bytes' % j['read']['io_bytes']
EOF
		python3 -c "import json,sys; t=open(sys.argv[1]).read(); j=json.loads(t[t.index('{'):])['jobs'][0]; print(sys.argv[2], j['job_runtime'], 'ms', int(j['write']['iops']), 'w iops', int(j['read']['iops']), 'r iops')" "$out" "$job-$cache"
		rm -f "$T_MNT/fio/"*
	done
	t_umount
	t_fsck
	t_say "cache=$cache: $(echo "$JOBS" | wc -w) jobs verified"
done
t_say "ok"
