# SPDX-License-Identifier: MIT
# Unit tests of the FUSE engine's kernel-free parts (src/fuse).
FUSE_UNIT_TESTS = tests/unit/test_fuse
if HAVE_CHECK
check_PROGRAMS += $(FUSE_UNIT_TESTS)
TESTS += $(FUSE_UNIT_TESTS)
endif
tests_unit_test_fuse_CFLAGS = $(UNIT_CFLAGS) $(FUSE_CFLAGS) \
	-I$(top_srcdir)/src/fuse -I$(top_srcdir)/src/fs
tests_unit_test_fuse_LDADD = libmqfuse.a $(UNIT_LDADD) $(FUSE_LIBS)
