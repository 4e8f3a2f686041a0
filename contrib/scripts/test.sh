#!/bin/sh
# SPDX-License-Identifier: MIT
# Set up, build with warnings as errors, and run every test.
set -eu
cd "$(dirname "$0")/../.."
sh contrib/scripts/build.sh --enable-werror
if ! make check </dev/null; then
	# CI keeps only this output: show every failing test's own log
	# (unit and integration alike), not just the summary.
	for t in $(sed -n 's/^FAIL: //p; s/^ERROR: //p' test-suite.log); do
		echo "=== $t.log (last 150 lines)"
		tail -n 150 "$t.log"
	done
	exit 1
fi
