# SPDX-License-Identifier: MIT
include tests/unit/local.mk

AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(top_srcdir)'; export top_srcdir; \
	top_builddir='$(top_builddir)'; export top_builddir; \
	CK_VERBOSITY=$${CK_VERBOSITY:-normal}; export CK_VERBOSITY; \
	CK_DEFAULT_TIMEOUT=$${CK_DEFAULT_TIMEOUT:-60}; export CK_DEFAULT_TIMEOUT;

# The layers, checked on the archives' symbols.
TESTS += tests/layers.sh
EXTRA_DIST += tests/layers.sh

include tests/integration/local.mk
include tests/nvme/local.mk
