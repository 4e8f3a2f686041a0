# SPDX-License-Identifier: MIT
# Unit tests of mkfs and mount (src/fs/mkfs.c, super.c).
FS_TESTS_SUPER = tests/unit/test_super
if HAVE_CHECK
check_PROGRAMS += $(FS_TESTS_SUPER)
TESTS += $(FS_TESTS_SUPER)
endif
EXTRA_DIST += tests/unit/t_fs.h tests/unit/t_fs_double.h tests/unit/t_fsio.h \
	tests/unit/t_jforge.h
tests_unit_test_super_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_super_LDADD = $(UNIT_LDADD)
