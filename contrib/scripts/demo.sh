#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job on the embedded default: build, then drive the block
# layer with mqfs-bench on the null device - a 4k random read and a
# sequential write through mq-deadline - and print the results and the
# scheduler's statistics.  (The mounted filesystem is not built yet.)
set -eu
cd "$(dirname "$0")/../.."
sh contrib/scripts/build.sh
echo "== 4k randread, qd 32, mq-deadline, null device"
./mqfs-bench --dev null --sched mq-deadline --rw randread --bs 4k --qd 32 --runtime 2
echo "== 4k sequential write from 8 jobs, device qd 4, 50 us latency: merging"
./mqfs-bench --dev null --dev-lat-us 50 --dev-qd 4 --sched mq-deadline \
	--rw write --bs 4k --qd 32 --jobs 8 --runtime 2
