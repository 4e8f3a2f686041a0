# SPDX-License-Identifier: MIT
# Unit tests of the dontcache write-behind (src/fs/wback.c).
FS_TESTS_WBACK = tests/unit/test_wback
if HAVE_CHECK
check_PROGRAMS += $(FS_TESTS_WBACK)
TESTS += $(FS_TESTS_WBACK)
endif
tests_unit_test_wback_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_wback_LDADD = $(UNIT_LDADD)

# The read-ahead window of dontcache files (src/fs/readahead.c).
FS_TESTS_RA = tests/unit/test_readahead
if HAVE_CHECK
check_PROGRAMS += $(FS_TESTS_RA)
TESTS += $(FS_TESTS_RA)
endif
tests_unit_test_readahead_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_readahead_LDADD = $(UNIT_LDADD)
