#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian 12 packages mqfs needs to build, test and benchmark,
# only when one is missing.  Non-interactive: CI has no standard input.
set -eu

PKGS="build-essential autoconf automake pkg-config libfuse3-dev fuse3 \
liburing-dev libxxhash-dev check fio valgrind python3 fuse2fs e2fsprogs gnuplot-nox"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing:$missing"
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: run as root (or install:$missing)" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# shellcheck disable=SC2086
	apt-get install -y --no-install-recommends $missing
fi
