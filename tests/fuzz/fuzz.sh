#!/bin/sh
# SPDX-License-Identifier: MIT
# Build tests/fuzz/fuzz_meta.c with clang's libFuzzer (every core source
# instrumented, ASan and UBSan on) and run it for FUZZ_SECONDS (default
# 60) from the corpus in tests/fuzz/corpus; any crash, sanitizer report
# or leak fails.  Exit 77 when clang cannot build a fuzzer here (the
# probe compiles one).  FUZZ_MERGE=1 merges what the run found back into
# the tree's corpus (to commit, small).
set -u
T_HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "${top_srcdir:-$T_HERE/../..}" && pwd)
BLD=$(cd "${top_builddir:-$T_HERE/../..}" && pwd)
SECS=${FUZZ_SECONDS:-60}
CLANG=${CLANG:-clang}

fail() { echo "fuzz: FAIL: $*" >&2; exit 1; }

command -v "$CLANG" >/dev/null || { echo "fuzz: SKIP: no clang"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/mqfs-fuzz.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)\n{ return 0; }\n' \
	>"$tmp/probe.c"
"$CLANG" -fsanitize=fuzzer "$tmp/probe.c" -o "$tmp/probe" 2>/dev/null || {
	echo "fuzz: SKIP: $CLANG cannot build a libFuzzer program"
	exit 77
}

CFLAGS="-std=gnu11 -g -O1 -D_GNU_SOURCE -DHAVE_CONFIG_H -pthread \
-I$BLD -I$SRC/include -I$SRC/sched -I$SRC/src/fs \
-fsanitize=address,undefined -fno-sanitize-recover=undefined \
-Wno-unused-command-line-argument"
objs=''
for c in "$SRC"/sched/*.c "$SRC"/sched/lib/*.c "$SRC"/sched/dev/*.c \
	 "$SRC"/src/fs/*.c; do
	o=$tmp/$(echo "${c#"$SRC"/}" | tr / _).o
	# shellcheck disable=SC2086
	"$CLANG" $CFLAGS -fsanitize=fuzzer-no-link -c "$c" -o "$o" ||
		fail "cannot compile $c"
	objs="$objs $o"
done
# shellcheck disable=SC2086
"$CLANG" $CFLAGS -fsanitize=fuzzer "$SRC/tests/fuzz/fuzz_meta.c" $objs \
	-luring -lxxhash -lm -o "$tmp/fuzz_meta" || fail "cannot link"
# FUZZ_KEEP=PATH: keep the binary (to replay a finding: PATH FILE).
[ -z "${FUZZ_KEEP:-}" ] || cp "$tmp/fuzz_meta" "$FUZZ_KEEP"

mkdir "$tmp/corpus"
cp "$SRC"/tests/fuzz/corpus/* "$tmp/corpus/" 2>/dev/null
# Seeds from the harness's own pristine image: one block of each type.
MQFS_FUZZ_SEEDS=$tmp/corpus "$tmp/fuzz_meta" -runs=0 -close_fd_mask=3 \
	"$tmp/corpus" >/dev/null 2>&1 || fail "the seeds"
# Leaks are findings; the daemon's messages go nowhere (-close_fd_mask).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
UBSAN_OPTIONS=print_stacktrace=1 \
	"$tmp/fuzz_meta" -max_total_time="$SECS" -max_len=4200 -len_control=20 -timeout=20 \
	-rss_limit_mb=1536 -close_fd_mask=3 -print_final_stats=1 \
	-artifact_prefix="$tmp/" "$tmp/corpus" >"$tmp/log" 2>&1
rc=$?
grep -E "stat::number_of_executed_units|cov:|ft:" "$tmp/log" | tail -n 3
if [ "$rc" != 0 ]; then
	tail -n 60 "$tmp/log"
	for a in "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-*; do
		[ -e "$a" ] || continue
		mkdir -p "$BLD/tests/fuzz/findings"
		cp "$a" "$BLD/tests/fuzz/findings/"
		echo "fuzz: input kept in tests/fuzz/findings/$(basename "$a")"
	done
	fail "the fuzzer found something (exit $rc)"
fi
if [ "${FUZZ_MERGE:-0}" = 1 ]; then
	mkdir -p "$SRC/tests/fuzz/corpus"
	"$tmp/fuzz_meta" -merge=1 -close_fd_mask=3 "$SRC/tests/fuzz/corpus" \
		"$tmp/corpus" >/dev/null 2>&1 || fail "merge"
fi
echo "fuzz: ok: $SECS s, no crash, no leak"
