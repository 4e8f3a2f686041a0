#!/bin/sh
# SPDX-License-Identifier: MIT
# mqfs-load on plain files in a temp dir (nothing mounted): write+verify
# and read+verify round trips for psync and io_uring, buffered, direct
# and dontcache (each flag only where a probe with mqfs-load itself says
# this filesystem takes it), random writes verified in full, rw mode,
# two jobs, a time limit with --loops, a corrupted block found by offset
# (exit 1), a short file refused, RWF_DONTCACHE refused on tmpfs (exit
# 2), bad options (exit 2).
. "$(dirname "$0")/lib.sh"
LOAD=$T_BIN/mqfs-load
[ -x "$LOAD" ] || t_fail "$LOAD is not built"
L_SHM=''

l_cleanup() {
	rc=$?
	[ -z "$L_SHM" ] || rm -rf "$L_SHM"
	(exit "$rc")
	t_cleanup
}

T_DIR=$(mktemp -d "${TMPDIR:-/var/tmp}/mqfs-$T_NAME.XXXXXX") || t_fail "mktemp"
trap l_cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
OUT=$T_DIR/out
ERR=$T_DIR/err

# l_load RC WHAT ARGS...: run mqfs-load, which must exit RC; its output
# stays in $OUT and $ERR.
l_load() {
	want=$1 what=$2
	shift 2
	"$LOAD" "$@" >"$OUT" 2>"$ERR"
	got=$?
	[ "$got" = "$want" ] && return 0
	cat "$OUT" "$ERR" >&2
	t_fail "$what: exit $got, expected $want (mqfs-load $*)"
}

# l_json KEY: a number from the --json report in $OUT.
l_json() {
	sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$OUT" | head -n 1
}

# l_expect KEY VALUE: the --json report says KEY is VALUE.
l_expect() {
	got=$(l_json "$1")
	[ "$got" = "$2" ] || { cat "$OUT" >&2; t_fail "$1 is '$got', not $2"; }
}

l_err_has() {
	grep -q -- "$1" "$ERR" || { cat "$ERR" >&2; t_fail "no '$1' in stderr"; }
}

# l_probe FLAGS: does this filesystem take them?  0 yes, 1 no (said why).
l_probe() {
	"$LOAD" -e psync -f "$1" -s 4k -b 4k "$T_DIR/probe" >"$OUT" 2>"$ERR"
	rc=$?
	rm -f "$T_DIR/probe"
	case $rc in
	0) return 0 ;;
	1|2) t_say "skip -f $1 here: $(cat "$ERR")"; return 1 ;;
	*) cat "$ERR" >&2; t_fail "probe -f $1: exit $rc" ;;
	esac
}

FLAGS=buffered
for f in direct dontcache; do
	l_probe "$f" && FLAGS="$FLAGS $f"
done

t_say "round trips ($FLAGS)"
F=$T_DIR/f
seed=10
for eng in psync io_uring; do
	qd=1
	[ "$eng" = io_uring ] && qd=8
	for fl in $FLAGS; do
		seed=$((seed + 1))
		rm -f "$F"
		what="$eng $fl"
		l_load 0 "write $what" -e "$eng" -q "$qd" -f "$fl" -s 2m -b 64k \
			--verify --seed "$seed" --json "$F"
		l_expect bytes 2097152
		l_expect write_bytes 2097152
		l_expect ios 32
		# Another block size: the pattern follows the file offset.
		l_load 0 "read $what" -m read -e "$eng" -q "$qd" -f "$fl" \
			-b 16k --verify --seed "$seed" --json "$F"
		l_expect read_bytes 2097152
		l_expect ios 128
		l_load 1 "read $what, wrong seed" -m read -e "$eng" -q "$qd" \
			-f "$fl" --verify --seed 999 "$F"
		# The first mismatch to complete: any block with qd > 1.
		l_err_has "verify failed at offset "
	done
done

t_say "random writes cover every block once per pass"
rm -f "$F"
l_load 0 "randwrite" -m randwrite -q 16 -b 4k -s 1m --verify --fsync-end \
	--json "$F"
l_expect ios 256
l_load 0 "read after randwrite" -m read -e psync -b 4k --verify "$F"
l_load 0 "randread" -m randread -q 4 -b 8k --verify --json "$F"
l_expect ios 128

t_say "rw mode"
l_load 0 "rw" -m rw --mix 30 -q 4 -b 4k --verify --json "$F"
l_expect bytes 1048576
r=$(l_json read_bytes) w=$(l_json write_bytes)
[ "$r" -gt 0 ] || t_fail "rw: nothing read"
[ "$w" -gt 0 ] || t_fail "rw: nothing written"
[ "$r" -lt "$w" ] || t_fail "rw --mix 30: read $r >= written $w"
l_load 0 "read after rw" -m read --verify -b 4k "$F"

t_say "two jobs, one file each"
l_load 0 "write -j 2" -j 2 -q 4 -s 1m -b 32k --verify --json "$T_DIR/j"
l_expect bytes 2097152
l_expect jobs 2
for i in 0 1; do
	[ "$(stat -c %s "$T_DIR/j.$i")" = 1048576 ] || t_fail "j.$i: wrong size"
done
l_load 0 "read -j 2" -m randread -j 2 -e psync -b 32k --verify "$T_DIR/j"

t_say "time limit"
l_load 0 "randread -t --loops" -m randread -q 8 -b 4k -t 0.3 --loops \
	--json "$F"
ios=$(l_json ios)
[ "$ios" -gt 256 ] || t_fail "--loops: only $ios I/Os in 0.3 s"
l_load 0 "text report" -m read -t 0.3 "$F"
for k in bandwidth latency p99.9 ctxsw cpu; do
	grep -q "$k" "$OUT" || { cat "$OUT"; t_fail "text report: no $k"; }
done

t_say "a corrupted block is found by its offset"
C=$T_DIR/c
l_load 0 "write c" -s 1m -b 4k --verify "$C"
dd if=/dev/zero of="$C" bs=4096 seek=37 count=1 conv=notrunc 2>/dev/null ||
	t_fail "dd"
l_load 1 "read corrupted (64k)" -m read -b 64k --verify "$C"
l_err_has "verify failed at offset 151552 "
l_load 1 "read corrupted (io_uring qd 8)" -m randread -q 8 -b 4k --verify "$C"
l_err_has "offset 151552 "
[ "$(grep -c 'verify failed' "$ERR")" = 1 ] || t_fail "more than one report"
l_load 0 "read corrupted, no verify" -m read -b 64k "$C"

t_say "a short file is refused"
l_load 1 "read past the end" -m read -s 4m "$C"
l_err_has "write it first"
l_load 1 "read a missing file" -m read "$T_DIR/none"
l_err_has "write it first"

if [ -d /dev/shm ] && [ -w /dev/shm ] &&
   [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
	t_say "RWF_DONTCACHE on tmpfs"
	L_SHM=$(mktemp -d /dev/shm/mqfs-load.XXXXXX) || t_fail "mktemp shm"
	"$LOAD" -e psync -f dontcache -s 4k -b 4k "$L_SHM/f" >"$OUT" 2>"$ERR"
	rc=$?
	case $rc in
	0) t_say "tmpfs takes RWF_DONTCACHE on this kernel" ;;
	2) l_err_has "RWF_DONTCACHE not supported by this filesystem (EOPNOTSUPP)" ;;
	*) cat "$ERR" >&2; t_fail "dontcache on tmpfs: exit $rc" ;;
	esac
	rm -rf "$L_SHM"
	L_SHM=''
fi

t_say "bad options"
for args in "-m bogus" "-b 1000" "-b 0" "-q 0" "-e psync -q 4" "-e spdk" \
	    "-f sync" "--mix 101" "-t -1" "-t 1x" "--loops" "-s 3k -b 2k" \
	    "-j 0" "-s 0" "--nope" "-s 1q"; do
	# shellcheck disable=SC2086 # the words are the options
	l_load 2 "mqfs-load $args" $args "$F"
	grep -q "^Try 'mqfs-load --help'" "$ERR" || t_fail "$args: no hint to --help"
done
l_load 2 "no FILE"
l_load 2 "two FILEs" "$F" "$F"
l_load 2 "write without --size" "$T_DIR/none"
[ ! -e "$T_DIR/none" ] || t_fail "a refused run created its file"
l_load 0 "--help" --help
grep -q -- '--fsync-end' "$OUT" || t_fail "--help lists no --fsync-end"
l_load 0 "--version" --version
grep -q '^mqfs-load (mqfs) ' "$OUT" || t_fail "--version: $(cat "$OUT")"
t_say "ok"
