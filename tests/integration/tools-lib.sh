# SPDX-License-Identifier: MIT
# Shared by the tools-*.sh scripts (mkfs.mqfs and fsck.mqfs on image
# files, nothing mounted): the binaries, a temp dir removed on exit, and
# failure counting.  Source it with T_NAME set; end with t_tools_done.

builddir=${top_builddir:-.}
MKFS=$builddir/mkfs.mqfs
FSCK=$builddir/fsck.mqfs
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mqfs-$T_NAME.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# expect CODE DESCRIPTION CMD...: run CMD, compare its exit status.
expect() {
	want=$1 what=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ne "$want" ]; then
		fail "$what: exit $got, expected $want"
		sed 's/^/  | /' "$tmp/out" "$tmp/err" >&2
	fi
}

t_tools_done() {
	[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
}
