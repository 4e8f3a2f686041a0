# SPDX-License-Identifier: MIT
EXTRA_DIST += \
	contrib/bench/benchlib.py \
	contrib/bench/blk-mechanisms \
	contrib/bench/compare \
	contrib/bench/cpu-per-req \
	contrib/bench/dontcache \
	contrib/bench/inode-memory \
	contrib/bench/fs-vs-raw \
	contrib/bench/meta \
	contrib/bench/nvme-guest \
	contrib/bench/uring-vs-fio \
	contrib/fio/compare-fill.fio \
	contrib/fio/compare-randread-4k-qd32.fio \
	contrib/fio/compare-randrw-64k-qd32.fio \
	contrib/fio/compare-randwrite-4k-qd1-buffered.fio \
	contrib/fio/compare-randwrite-4k-qd32.fio \
	contrib/fio/compare-seqwrite-128k-qd128.fio \
	contrib/fio/compare-showcase-randread-4k-qd1-2writers.fio \
	contrib/fio/compare-showcase-ioprio.fio \
	contrib/fio/compare-write-128k-qd1-buffered.fio \
	contrib/fio/cpu-randread-4k-qd1.fio \
	contrib/fio/cpu-randwrite-4k-qd1.fio \
	contrib/fio/dontcache-A.fio \
	contrib/fio/dontcache-A-direct.fio \
	contrib/fio/dontcache-B.fio \
	contrib/fio/dontcache-B-direct.fio \
	contrib/fio/dontcache-C.fio \
	contrib/fio/dontcache-C-direct.fio \
	contrib/fio/dontcache-D.fio \
	contrib/fio/dontcache-D-direct.fio \
	contrib/fio/dontcache-F.fio \
	contrib/fio/dontcache-F-direct.fio \
	contrib/scripts/build.sh \
	contrib/scripts/demo.sh \
	contrib/scripts/guest-kernel.sh \
	contrib/scripts/setup-debian.sh \
	contrib/scripts/test.sh
