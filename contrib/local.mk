# SPDX-License-Identifier: MIT
EXTRA_DIST += \
	contrib/bench/blk-mechanisms \
	contrib/bench/fs-vs-raw \
	contrib/bench/uring-vs-fio \
	contrib/scripts/build.sh \
	contrib/scripts/demo.sh \
	contrib/scripts/setup-debian.sh \
	contrib/scripts/test.sh
