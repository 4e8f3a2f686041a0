# SPDX-License-Identifier: MIT
# Unit tests of the filesystem's journal module(s): the metadata buffer
# cache (src/fs/buf.c) and the journal (src/fs/journal.c).  Both link
# test doubles of mqfs_fs_error and mqfs_alloc_txn_committed, so they
# run on a hand-built struct mqfs_fs without the rest of the fs.
FS_TESTS_JOURNAL = tests/unit/test_buf tests/unit/test_journal
if HAVE_CHECK
check_PROGRAMS += $(FS_TESTS_JOURNAL)
TESTS += $(FS_TESTS_JOURNAL)
endif
tests_unit_test_buf_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_buf_LDADD = $(UNIT_LDADD)
tests_unit_test_journal_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_journal_LDADD = $(UNIT_LDADD)
