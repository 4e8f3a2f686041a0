# SPDX-License-Identifier: MIT
# Unit tests of the filesystem's fsck module(s).
FS_TESTS_FSCK = tests/unit/test_fsck
if HAVE_CHECK
check_PROGRAMS += $(FS_TESTS_FSCK)
TESTS += $(FS_TESTS_FSCK)
endif
tests_unit_test_fsck_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_fsck_LDADD = $(UNIT_LDADD)

# Command-line behaviour of mkfs.mqfs and fsck.mqfs on image files.
TESTS += tests/integration/tools-mkfs.sh tests/integration/tools-fsck.sh
EXTRA_DIST += tests/integration/tools-mkfs.sh tests/integration/tools-fsck.sh \
	tests/integration/tools-lib.sh
