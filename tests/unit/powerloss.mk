# SPDX-License-Identifier: MIT
# The power-loss runner: every scenario cut at each of its writes.
FS_TESTS_POWERLOSS = tests/unit/test_powerloss
if HAVE_CHECK
check_PROGRAMS += $(FS_TESTS_POWERLOSS)
TESTS += $(FS_TESTS_POWERLOSS)
endif
tests_unit_test_powerloss_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/fs
tests_unit_test_powerloss_LDADD = $(UNIT_LDADD)

# The full sweep: each cut point with 16 torn patterns.
check-powerloss: tests/unit/test_powerloss
	MQFS_PL_SEEDS=$${MQFS_PL_SEEDS:-16} ./tests/unit/test_powerloss
.PHONY: check-powerloss
