# SPDX-License-Identifier: MIT
bin_PROGRAMS += mqfs-bench
mqfs_bench_SOURCES = %reldir%/bench/mqfs-bench.c %reldir%/bench/bench_i.h \
	%reldir%/bench/hist.c %reldir%/bench/bench_opts.c %reldir%/bench/report.c
mqfs_bench_LDADD = libmqcli.a $(CORE_LIBS)
include %reldir%/load/local.mk

# The filesystem (src/fs): libmqfs.a, over libmqblk.a.  It may reference
# no symbol of the FUSE front end (tests/layers.sh).
noinst_LIBRARIES += libmqfs.a
libmqfs_a_SOURCES = \
	%reldir%/fs/fs_i.h \
	%reldir%/fs/acl_i.h \
	%reldir%/fs/acl.c \
	%reldir%/fs/acl_fs.c \
	%reldir%/fs/aginit.c \
	%reldir%/fs/alloc.c \
	%reldir%/fs/alloc_ag.c \
	%reldir%/fs/alloc_i.h \
	%reldir%/fs/array.c \
	%reldir%/fs/attr.c \
	%reldir%/fs/bio.c \
	%reldir%/fs/buf.c \
	%reldir%/fs/csum.c \
	%reldir%/fs/databuf.c \
	%reldir%/fs/dir.c \
	%reldir%/fs/dir_i.h \
	%reldir%/fs/dir_index.c \
	%reldir%/fs/extent.c \
	%reldir%/fs/extent_edit.c \
	%reldir%/fs/extent_i.h \
	%reldir%/fs/file.c \
	%reldir%/fs/file_i.h \
	%reldir%/fs/fmap.c \
	%reldir%/fs/fs_err.c \
	%reldir%/fs/fsclock.c \
	%reldir%/fs/atime.c \
	%reldir%/fs/fsck.c \
	%reldir%/fs/fsck_ag.c \
	%reldir%/fs/fsck_aginit.c \
	%reldir%/fs/fsck_dir.c \
	%reldir%/fs/fsck_i.h \
	%reldir%/fs/fsck_acl.c \
	%reldir%/fs/fsck_inode.c \
	%reldir%/fs/fsck_io.c \
	%reldir%/fs/fsck_repair.c \
	%reldir%/fs/fsck_super.c \
	%reldir%/fs/fsck_xattr.c \
	%reldir%/fs/fspace.c \
	%reldir%/fs/icache_i.h \
	%reldir%/fs/inode.c \
	%reldir%/fs/itable.c \
	%reldir%/fs/layout.c \
	%reldir%/fs/journal.c \
	%reldir%/fs/journal_i.h \
	%reldir%/fs/journal_replay.c \
	%reldir%/fs/lookups.c \
	%reldir%/fs/mkfs.c \
	%reldir%/fs/namei.c \
	%reldir%/fs/namei_i.h \
	%reldir%/fs/orphan.c \
	%reldir%/fs/readahead.c \
	%reldir%/fs/rename.c \
	%reldir%/fs/sbcheck.c \
	%reldir%/fs/slab.c \
	%reldir%/fs/super.c \
	%reldir%/fs/wback.c \
	%reldir%/fs/wback_flush.c \
	%reldir%/fs/wback_i.h \
	%reldir%/fs/xattr.c \
	%reldir%/fs/xattr_chain.c

include %reldir%/fuse/local.mk
include %reldir%/tools/local.mk
include %reldir%/ctl/local.mk
