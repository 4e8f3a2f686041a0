#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job on an embedded default: build, then drive the block layer
# with mqfs-bench - on the null device (the layer's own cost), and on a
# 256 MiB image file through the io_uring driver - and print the results
# with the scheduler's statistics.  (The mounted filesystem comes later.)
set -eu
cd "$(dirname "$0")/../.."
sh contrib/scripts/build.sh
img=$(mktemp "${TMPDIR:-/var/tmp}/mqfs-demo.XXXXXX")
trap 'rm -f "$img"' EXIT INT TERM

echo "== 4k randread, qd 32, mq-deadline, null device"
./mqfs-bench --dev null --sched mq-deadline --rw randread --bs 4k --qd 32 --runtime 2
echo "== 4k sequential writes from 8 jobs, device qd 4, 50 us latency: merging"
./mqfs-bench --dev null --dev-lat-us 50 --dev-qd 4 --sched mq-deadline \
	--rw write --bs 4k --qd 32 --jobs 8 --plug 0 --runtime 2
echo "== image file $img (256 MiB), io_uring, O_DIRECT, mq-deadline"
truncate -s 256M "$img"
./mqfs-bench --dev "$img" --sched mq-deadline --rw randwrite --bs 4k --qd 32 --runtime 2
./mqfs-bench --dev "$img" --sched mq-deadline --rw randread --bs 4k --qd 32 --runtime 2
