#!/bin/sh
# SPDX-License-Identifier: MIT
# Set up and build mqfs in the source tree: packages, configure, make.
# Extra arguments go to configure; a tree configured with other
# arguments is configured again.
set -eu
cd "$(dirname "$0")/../.."
sh contrib/scripts/setup-debian.sh
[ -x configure ] || autoreconf -fi
want="$*"
have=$( [ -x config.status ] && ./config.status --config 2>/dev/null | tr -d "'" || echo none)
if [ ! -f Makefile ] || [ "$have" != "$want" ]; then
	./configure "$@"
fi
make -j"$(nproc)"
