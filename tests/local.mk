# SPDX-License-Identifier: MIT
include tests/unit/local.mk

AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(top_srcdir)'; export top_srcdir; \
	top_builddir='$(top_builddir)'; export top_builddir; \
	CK_VERBOSITY=$${CK_VERBOSITY:-normal}; export CK_VERBOSITY; \
	CK_DEFAULT_TIMEOUT=$${CK_DEFAULT_TIMEOUT:-60}; export CK_DEFAULT_TIMEOUT;

# Every test, program or script, runs under timeout(1): one that hangs
# fails after MQFS_TEST_TIMEOUT seconds (default 1500: uring.sh runs
# every mounting script again, each bounded to 600 s itself) with its
# log kept, instead of holding CI past its limit.  timeout signals the test's
# whole process group (TERM, KILL 30 s later); the scripts' TERM trap
# unmounts and stops their daemons.  Standard input is /dev/null, as it
# is in CI: a test that would wait on it fails here too.
LOG_COMPILER = $(top_srcdir)/tests/run-bounded.sh
EXTRA_DIST += tests/run-bounded.sh

# The layers, checked on the archives' symbols.
TESTS += tests/layers.sh
EXTRA_DIST += tests/layers.sh

include tests/integration/local.mk
include tests/nvme/local.mk
