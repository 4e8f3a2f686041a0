#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian 12 packages mqfs needs, only when one is missing.
# Non-interactive: CI has no standard input.
#
#   setup-debian.sh            build and test (make check, the demo;
#                              QEMU, busybox-static and cpio for the
#                              NVMe guest of make check-nvme)
#   setup-debian.sh --bench    and the benchmarks' references (fuse2fs,
#                              ext4 tools, gnuplot, git for the builds of
#                              other revisions)
set -eu

PKGS="build-essential autoconf automake pkg-config libfuse3-dev fuse3 \
liburing-dev libxxhash-dev check fio python3 libcap2-bin clang acl attr \
qemu-system-x86 busybox-static cpio"
case ${1:-} in
--bench) PKGS="$PKGS fuse2fs e2fsprogs gnuplot-nox git" ;;
'') ;;
*) echo "usage: $0 [--bench]" >&2; exit 2 ;;
esac

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
