# SPDX-License-Identifier: MIT
# Integration scripts: mount the real filesystem through /dev/fuse.  Each
# exits 77 (skip) without root or a usable /dev/fuse.  They need mqfs,
# mkfs.mqfs and fsck.mqfs built, python3, and fio (fio.sh).  tools-*.sh
# run mkfs.mqfs and fsck.mqfs on image files, mounting nothing.
FUSE_INTEGRATION_TESTS = \
	tests/integration/basic.sh \
	tests/integration/persist.sh \
	tests/integration/bigdir.sh \
	tests/integration/enospc.sh \
	tests/integration/readonly.sh \
	tests/integration/badopts.sh \
	tests/integration/corrupt.sh \
	tests/integration/stress.sh \
	tests/integration/fio.sh \
	tests/integration/mount-t.sh \
	tests/integration/load.sh \
	tests/integration/bench.sh \
	tests/integration/ctl.sh \
	tests/integration/dontcache.sh \
	tests/integration/mmap.sh \
	tests/integration/sqlite.sh \
	tests/integration/interrupt.sh \
	tests/integration/killpriv.sh \
	tests/integration/acl.sh \
	tests/integration/clock.sh \
	tests/integration/atime.sh \
	tests/integration/xattr.sh \
	tests/integration/exclusive.sh \
	tests/integration/crash.sh \
	tests/integration/ionice.sh \
	tests/integration/transport.sh \
	tests/integration/trees.sh \
	tests/integration/coherence.sh \
	tests/integration/uring.sh \
	tests/integration/handles.sh \
	tests/integration/tmpfile.sh \
	tests/integration/renameat2.sh \
	tests/integration/tools-mkfs.sh \
	tests/integration/tools-fsck.sh \
	tests/integration/tools.sh \
	tests/integration/lazy-mkfs.sh

TESTS += $(FUSE_INTEGRATION_TESTS)
EXTRA_DIST += $(FUSE_INTEGRATION_TESTS) tests/integration/lib.sh \
	contrib/fio/verify-seqwrite-1m-qd4.fio \
	contrib/fio/verify-randwrite-4k-qd16.fio \
	contrib/fio/verify-randwrite-64k-qd8-4jobs.fio \
	contrib/fio/verify-direct-randwrite-4k-qd16.fio \
	contrib/fio/verify-direct-1file-4k-qd8-8jobs.fio \
	contrib/fio/randread-4k-qd32.fio \
	contrib/fio/seqwrite-1m-qd8.fio

# The kill -9 campaign: crash.sh with 50 kills per cache mode (about
# 8 minutes on 2 cores); make check runs 3 per mode.
check-crash: all
	CRASH_ROUNDS=$${CRASH_ROUNDS:-50} top_srcdir='$(top_srcdir)' \
		top_builddir='$(top_builddir)' \
		$(SHELL) $(top_srcdir)/tests/integration/crash.sh
.PHONY: check-crash

# The fuzzer (tests/fuzz/fuzz.sh): clang's libFuzzer over the metadata
# parsers and fsck + mount of damaged images, FUZZ_SECONDS (60 in make
# check) from the corpus in tests/fuzz/corpus.
TESTS += tests/fuzz/fuzz.sh
EXTRA_DIST += tests/fuzz/fuzz.sh tests/fuzz/fuzz_meta.c tests/fuzz/corpus
