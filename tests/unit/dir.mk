# SPDX-License-Identifier: MIT
# Unit tests of the filesystem's dir module(s): directory entries
# (src/fs/dir.c), the namespace calls (namei.c) and xattrs (xattr.c).
FS_TESTS_DIR = tests/unit/test_dir tests/unit/test_namei \
	tests/unit/test_xattr
if HAVE_CHECK
check_PROGRAMS += $(FS_TESTS_DIR)
TESTS += $(FS_TESTS_DIR)
endif
tests_unit_test_dir_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_dir_LDADD = $(UNIT_LDADD)
tests_unit_test_namei_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_namei_LDADD = $(UNIT_LDADD)
tests_unit_test_xattr_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_xattr_LDADD = $(UNIT_LDADD)
