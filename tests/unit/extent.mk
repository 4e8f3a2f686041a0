# SPDX-License-Identifier: MIT
# Unit tests of the filesystem's extent module(s): the extent map
# (src/fs/extent.c) and file data (src/fs/file.c).
FS_TESTS_EXTENT = tests/unit/test_extent tests/unit/test_file
if HAVE_CHECK
check_PROGRAMS += $(FS_TESTS_EXTENT)
TESTS += $(FS_TESTS_EXTENT)
endif
tests_unit_test_extent_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_extent_LDADD = $(UNIT_LDADD)
tests_unit_test_file_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_file_LDADD = $(UNIT_LDADD)
