# SPDX-License-Identifier: MIT
# Unit tests: one Check program per module, in three groups by the layer
# they test: the block layer (sched/), the filesystem (src/fs, its
# private header too) and the FUSE engine (src/fuse).  Each program
# gets its group's flags here; nothing else registers unit tests.
# A program too big for one file is built from test_<name>.c (its suite
# and main), <name>_<part>.c files (its case groups, or the parts of its
# machinery) and <name>_fixture.h (with <name>_fixture.c when what they
# share is functions); its _SOURCES list them all.
BLK_UNIT_TESTS = \
	tests/unit/test_kthread \
	tests/unit/test_loghist \
	tests/unit/test_rbtree \
	tests/unit/test_sbitmap \
	tests/unit/test_deadline \
	tests/unit/test_tags \
	tests/unit/test_plug \
	tests/unit/test_dispatch \
	tests/unit/test_elevator_switch \
	tests/unit/test_stress \
	tests/unit/test_fault \
	tests/unit/test_uring_open \
	tests/unit/test_uring_data \
	tests/unit/test_uring_rings \
	tests/unit/test_uring_blockdev \
	tests/unit/test_uring_poll \
	tests/unit/test_poll_queue \
	tests/unit/test_uring_submit \
	tests/unit/test_nvme \
	tests/unit/test_complete_task \
	tests/unit/test_soak \
	tests/unit/test_submit
FS_UNIT_TESTS = \
	tests/unit/test_array \
	tests/unit/test_bio \
	tests/unit/test_super \
	tests/unit/test_buf \
	tests/unit/test_journal \
	tests/unit/test_alloc \
	tests/unit/test_inode \
	tests/unit/test_extent \
	tests/unit/test_file \
	tests/unit/test_dir \
	tests/unit/test_namei \
	tests/unit/test_rename \
	tests/unit/test_xattr \
	tests/unit/test_acl \
	tests/unit/test_fsck \
	tests/unit/test_powerloss \
	tests/unit/test_wback \
	tests/unit/test_readahead \
	tests/unit/test_fsclock
FUSE_UNIT_TESTS = tests/unit/test_fuse
UNIT_TESTS = $(BLK_UNIT_TESTS) $(FS_UNIT_TESTS) $(FUSE_UNIT_TESTS)

if HAVE_CHECK
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)
endif

UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -I$(top_srcdir)/sched
UNIT_LDADD = $(CORE_LIBS) $(CHECK_LIBS)
FS_UNIT_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
EXTRA_DIST += tests/unit/t_util.h tests/unit/t_uring.h tests/unit/t_main.h \
	tests/unit/t_fs.h tests/unit/t_fs_double.h tests/unit/t_fsio.h \
	tests/unit/t_jforge.h tests/unit/t_dev.h tests/unit/t_namei.h

tests_unit_test_kthread_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_kthread_LDADD = $(UNIT_LDADD)
tests_unit_test_loghist_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_loghist_LDADD = $(UNIT_LDADD)
tests_unit_test_rbtree_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rbtree_LDADD = $(UNIT_LDADD)
tests_unit_test_sbitmap_SOURCES = tests/unit/test_sbitmap.c \
	tests/unit/sbitmap_fixture.h tests/unit/sbitmap_map.c \
	tests/unit/sbitmap_queue.c tests/unit/sbitmap_stress.c
tests_unit_test_sbitmap_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_sbitmap_LDADD = $(UNIT_LDADD)
tests_unit_test_deadline_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_deadline_LDADD = $(UNIT_LDADD)
tests_unit_test_tags_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_tags_LDADD = $(UNIT_LDADD)
tests_unit_test_plug_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_plug_LDADD = $(UNIT_LDADD)
tests_unit_test_dispatch_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_dispatch_LDADD = $(UNIT_LDADD)
tests_unit_test_elevator_switch_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_elevator_switch_LDADD = $(UNIT_LDADD)
tests_unit_test_stress_SOURCES = tests/unit/test_stress.c \
	tests/unit/stress_fixture.h tests/unit/stress_worker.c \
	tests/unit/stress_ctl.c
tests_unit_test_stress_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_stress_LDADD = $(UNIT_LDADD)
tests_unit_test_nvme_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_nvme_LDADD = $(UNIT_LDADD)
tests_unit_test_fault_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_fault_LDADD = $(UNIT_LDADD)
tests_unit_test_uring_open_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_uring_open_LDADD = $(UNIT_LDADD)
tests_unit_test_uring_data_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_uring_data_LDADD = $(UNIT_LDADD)
tests_unit_test_uring_rings_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_uring_rings_LDADD = $(UNIT_LDADD)
tests_unit_test_uring_blockdev_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_uring_blockdev_LDADD = $(UNIT_LDADD)
tests_unit_test_uring_poll_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_uring_poll_LDADD = $(UNIT_LDADD)
tests_unit_test_poll_queue_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_poll_queue_LDADD = $(UNIT_LDADD)
tests_unit_test_uring_submit_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_uring_submit_LDADD = $(UNIT_LDADD)
tests_unit_test_complete_task_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_complete_task_LDADD = $(UNIT_LDADD)
tests_unit_test_soak_SOURCES = tests/unit/test_soak.c \
	tests/unit/soak_fixture.h tests/unit/soak_stack.c tests/unit/soak_io.c \
	tests/unit/soak_ctl.c tests/unit/soak_check.c
tests_unit_test_soak_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_soak_LDADD = $(UNIT_LDADD)
tests_unit_test_submit_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_submit_LDADD = $(UNIT_LDADD)
tests_unit_test_array_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_array_LDADD = $(UNIT_LDADD)
tests_unit_test_bio_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_bio_LDADD = $(UNIT_LDADD)
tests_unit_test_super_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_super_LDADD = $(UNIT_LDADD)
tests_unit_test_buf_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_buf_LDADD = $(UNIT_LDADD)
tests_unit_test_journal_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_journal_LDADD = $(UNIT_LDADD)
tests_unit_test_alloc_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_alloc_LDADD = $(UNIT_LDADD)
tests_unit_test_inode_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_inode_LDADD = $(UNIT_LDADD)
tests_unit_test_extent_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_extent_LDADD = $(UNIT_LDADD)
tests_unit_test_file_SOURCES = tests/unit/test_file.c \
	tests/unit/file_fixture.h tests/unit/file_fixture.c \
	tests/unit/file_io.c tests/unit/file_limits.c tests/unit/file_crash.c \
	tests/unit/file_random.c tests/unit/file_times.c \
	tests/unit/file_release.c
tests_unit_test_file_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_file_LDADD = $(UNIT_LDADD)
tests_unit_test_dir_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_dir_LDADD = $(UNIT_LDADD)
tests_unit_test_namei_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_namei_LDADD = $(UNIT_LDADD)
tests_unit_test_rename_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_rename_LDADD = $(UNIT_LDADD)
tests_unit_test_xattr_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_xattr_LDADD = $(UNIT_LDADD)
tests_unit_test_acl_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_acl_LDADD = $(UNIT_LDADD)
tests_unit_test_fsclock_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_fsclock_LDADD = $(UNIT_LDADD)
tests_unit_test_fsck_SOURCES = tests/unit/test_fsck.c \
	tests/unit/fsck_fixture.h tests/unit/fsck_fixture.c \
	tests/unit/fsck_damage.c tests/unit/fsck_random.c \
	tests/unit/fsck_crash.c tests/unit/fsck_lazy.c
tests_unit_test_fsck_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_fsck_LDADD = $(UNIT_LDADD)
tests_unit_test_powerloss_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_powerloss_LDADD = $(UNIT_LDADD)
tests_unit_test_wback_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_wback_LDADD = $(UNIT_LDADD)
tests_unit_test_readahead_CFLAGS = $(FS_UNIT_CFLAGS)
tests_unit_test_readahead_LDADD = $(UNIT_LDADD)
tests_unit_test_fuse_CFLAGS = $(FS_UNIT_CFLAGS) $(FUSE_CFLAGS) \
	-I$(top_srcdir)/src/fuse
tests_unit_test_fuse_LDADD = libmqfuse.a libmqcli.a $(UNIT_LDADD) $(FUSE_LIBS)

# The full power-loss sweep: 16 torn patterns per cut (make check runs 1).
check-powerloss: tests/unit/test_powerloss
	MQFS_PL_SEEDS=$${MQFS_PL_SEEDS:-16} ./tests/unit/test_powerloss
.PHONY: check-powerloss
