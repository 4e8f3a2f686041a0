#!/bin/sh
# SPDX-License-Identifier: MIT
# The test driver's LOG_COMPILER: run one test (a program or a script)
# with a wall-clock bound and no standard input.  See tests/local.mk.
limit=${MQFS_TEST_TIMEOUT:-1500}
timeout --kill-after=30 "$limit" "$@" </dev/null
rc=$?
# timeout's own codes: 124 after TERM, 137 after the KILL that follows.
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "run-bounded: $1 did not finish within $limit s (exit $rc)" >&2
fi
exit "$rc"
