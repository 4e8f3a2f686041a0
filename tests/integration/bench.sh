#!/bin/sh
# SPDX-License-Identifier: MIT
# mqfs-bench, nothing mounted: the null and ram devices with both
# schedulers and an image file through the io_uring driver each run and
# report I/O done without errors (JSON: ios and iops > 0, errors 0,
# ordered percentiles); a file that cannot be opened, an
# unknown scheduler and a bad option fail with a message and a non-zero
# exit.  The benchmarks (contrib/bench) depend on all of these.
. "$(dirname "$0")/lib.sh"
BENCH=$T_BIN/mqfs-bench
[ -x "$BENCH" ] || t_fail "$BENCH is not built"
command -v python3 >/dev/null || t_fail "python3 is needed"
T_DIR=$(mktemp -d "${TMPDIR:-/var/tmp}/mqfs-$T_NAME.XXXXXX") || t_fail "mktemp"
trap t_cleanup EXIT
OUT=$T_DIR/out
ERR=$T_DIR/err

# b_ok WHAT ARGS...: a run that must succeed with I/O and no errors.
b_ok() {
	what=$1
	shift
	"$BENCH" --runtime 1 --json "$@" >"$OUT" 2>"$ERR" || {
		cat "$OUT" "$ERR" >&2
		t_fail "$what: mqfs-bench $* failed"
	}
	python3 - "$OUT" "$what" <<'EOF' || t_fail "$what: bad report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ios"] > 0 and r["errors"] == 0 and r["iops"] > 0, r
assert r["lat_ns"]["p50"] <= r["lat_ns"]["p99"] <= r["lat_ns"]["p99.9"], r
EOF
}

# b_fails WHAT PATTERN ARGS...: a run that must fail, saying PATTERN.
b_fails() {
	what=$1 pat=$2
	shift 2
	if "$BENCH" --runtime 1 "$@" >"$OUT" 2>"$ERR"; then
		t_fail "$what: mqfs-bench $* succeeded"
	fi
	grep -q "$pat" "$ERR" || {
		cat "$ERR" >&2
		t_fail "$what: no '$pat' in the message"
	}
}

for s in none mq-deadline; do
	b_ok "null $s" --dev null --sched "$s"
	b_ok "ram $s" --dev ram --sched "$s" --rw randrw
done
truncate -s 64M "$T_DIR/img" || t_fail "truncate"
b_ok "image file" --dev "$T_DIR/img" --rw randwrite --qd 8
b_fails "missing file" "cannot open device" --dev "$T_DIR/none"
b_fails "unknown scheduler" "cannot create queue" --sched bfq
b_fails "bad option" "unrecognized option" --bogus
t_say "ok"
