#!/bin/sh
# SPDX-License-Identifier: MIT
# Set up, build with warnings as errors, and run every test.
set -eu
cd "$(dirname "$0")/../.."
sh contrib/scripts/build.sh --enable-werror
if ! make check; then
	cat tests/unit/*.log 2>/dev/null | tail -n 200
	exit 1
fi
