# SPDX-License-Identifier: MIT
# Unit tests of the filesystem's alloc module(s): allocation groups
# (src/fs/alloc.c), in-core inodes and attributes (inode.c, attr.c).
FS_TESTS_ALLOC = tests/unit/test_alloc tests/unit/test_inode
if HAVE_CHECK
check_PROGRAMS += $(FS_TESTS_ALLOC)
TESTS += $(FS_TESTS_ALLOC)
endif
tests_unit_test_alloc_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_alloc_LDADD = $(UNIT_LDADD)
tests_unit_test_inode_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_inode_LDADD = $(UNIT_LDADD)
