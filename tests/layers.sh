#!/bin/sh
# SPDX-License-Identifier: MIT
# The layers, enforced on the objects: the block layer (libmqblk.a)
# references no symbol the filesystem (libmqfs.a) or the FUSE front end
# (libmqfuse.a) defines, and the filesystem none of the front end's.  A
# call upwards would make the archives a cycle that only link order
# hides; it fails here with the object and the symbol.  Each archive's
# global symbols stay in its namespace (mq_ for the block layer, mqfs_
# above it), so helpers shared between a module's files cannot collide
# with a program's.
set -eu
b=${top_builddir:-.}
command -v nm >/dev/null || { echo "layers: nm (binutils) is needed" >&2; exit 1; }
for a in libmqblk.a libmqfs.a libmqfuse.a; do
	[ -r "$b/$a" ] || { echo "layers: $b/$a not built" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mqfs-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# defined ARCHIVE: the global symbols its objects define.
defined() { nm -g --defined-only "$b/$1" 2>/dev/null |
	awk 'NF == 3 { print $3 }' | sort -u; }
# wanted ARCHIVE: "object symbol" for each symbol an object leaves undefined.
wanted() { nm -u -A "$b/$1" 2>/dev/null |
	sed -n 's/^[^:]*:\([^:]*\):[[:space:]]*U \(.*\)$/\1 \2/p' | sort -k2; }

bad=0
check() {	# LOWER UPPER
	defined "$2" >"$tmp/up"
	wanted "$1" >"$tmp/want"
	awk 'NR == FNR { up[$1] = 1; next } ($2 in up) { print }' \
		"$tmp/up" "$tmp/want" >"$tmp/hits"
	if [ -s "$tmp/hits" ]; then
		echo "layers: $1 references symbols of $2:"
		sed 's/^/  /' "$tmp/hits"
		bad=1
	fi
	n=$(wc -l <"$tmp/want")
	echo "layers: $1 -> $2: $n undefined references checked"
}
check libmqblk.a libmqfs.a
check libmqblk.a libmqfuse.a
check libmqfs.a libmqfuse.a

namespace() {	# ARCHIVE PREFIX
	# __*: the implementation's own (sanitizers' __odr_asan.*, ...).
	defined "$1" | grep -v -e "^$2" -e '^__' >"$tmp/out" || true
	if [ -s "$tmp/out" ]; then
		echo "layers: $1 defines global symbols outside $2*:"
		sed 's/^/  /' "$tmp/out"
		bad=1
	fi
}
namespace libmqblk.a mq_
namespace libmqfs.a mqfs_
namespace libmqfuse.a mqfs_
[ "$bad" = 0 ] && echo "layers: ok"
exit "$bad"
