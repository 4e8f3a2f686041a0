# SPDX-License-Identifier: MIT
# Unit tests: one Check program per module.
UNIT_TESTS = \
	tests/unit/test_rbtree \
	tests/unit/test_sbitmap \
	tests/unit/test_deadline \
	tests/unit/test_tags \
	tests/unit/test_plug \
	tests/unit/test_dispatch \
	tests/unit/test_elevator_switch \
	tests/unit/test_stress \
	tests/unit/test_fault \
	tests/unit/test_uring \
	tests/unit/test_uring_poll \
	tests/unit/test_complete_task \
	tests/unit/test_soak \
	tests/unit/test_submit

if HAVE_CHECK
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)
endif

UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -I$(top_srcdir)/sched
UNIT_LDADD = $(CORE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/unit/t_util.h tests/unit/t_uring.h

tests_unit_test_rbtree_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rbtree_LDADD = $(UNIT_LDADD)
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
tests_unit_test_stress_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_stress_LDADD = $(UNIT_LDADD)
tests_unit_test_fault_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_fault_LDADD = $(UNIT_LDADD)
tests_unit_test_uring_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_uring_LDADD = $(UNIT_LDADD)
tests_unit_test_uring_poll_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_uring_poll_LDADD = $(UNIT_LDADD)
tests_unit_test_complete_task_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_complete_task_LDADD = $(UNIT_LDADD)
tests_unit_test_soak_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_soak_LDADD = $(UNIT_LDADD)
tests_unit_test_submit_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_submit_LDADD = $(UNIT_LDADD)

AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(top_srcdir)'; export top_srcdir; \
	top_builddir='$(top_builddir)'; export top_builddir; \
	CK_VERBOSITY=$${CK_VERBOSITY:-normal}; export CK_VERBOSITY; \
	CK_DEFAULT_TIMEOUT=$${CK_DEFAULT_TIMEOUT:-60}; export CK_DEFAULT_TIMEOUT;

# The layers, checked on the archives' symbols.
TESTS += tests/layers.sh
EXTRA_DIST += tests/layers.sh

# The filesystem's unit tests and the integration scripts, one fragment
# per module group.
include tests/unit/super.mk
include tests/unit/journal.mk
include tests/unit/alloc.mk
include tests/unit/extent.mk
include tests/unit/dir.mk
include tests/unit/fsck.mk
include tests/unit/powerloss.mk
include tests/unit/wback.mk
include tests/unit/fuse.mk
include tests/integration/local.mk
