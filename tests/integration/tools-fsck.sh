#!/bin/sh
# SPDX-License-Identifier: MIT
# fsck.mqfs on image files: e2fsck exit codes for clean, damaged and
# foreign images, usage errors, progress lines.
set -u

. "$(dirname "$0")/lib.sh"
t_init_tools

grep_out() {
	grep -q -- "$1" "$tmp/out" "$tmp/err" || fail "missing '$1' in output"
}

poke() {
	printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}


img=$tmp/fs.img
if ! "$MKFS" -q -s 64M "$img" >"$tmp/out" 2>"$tmp/err"; then
	if grep -qi "uring" "$tmp/err"; then
		echo "SKIP: io_uring unavailable" >&2
		exit 77
	fi
	cat "$tmp/err" >&2
	exit 1
fi

# Clean: skipped without -f, checked with it, untouched by every mode.
cp "$img" "$tmp/orig.img"
expect 0 "clean image" "$FSCK" "$img"
grep_out "clean"
for m in -n -y -p -a; do
	expect 0 "clean image, -f $m" "$FSCK" -f $m "$img"
done
cmp -s "$img" "$tmp/orig.img" || fail "a clean check changed the image"

# Usage errors: 16.
expect 16 "no device" "$FSCK"
expect 16 "-n with -y" "$FSCK" -n -y "$img"
expect 16 "unknown option" "$FSCK" -Z "$img"
expect 16 "two devices" "$FSCK" "$img" "$img"
expect 16 "bad -C" "$FSCK" -C x "$img"
expect 16 "bad -b" "$FSCK" -b x "$img"
expect 16 "-b 0" "$FSCK" -b 0 "$img"

# Operational errors: 8.
expect 8 "missing device" "$FSCK" -n "$tmp/none.img"
truncate -s 16M "$tmp/zero.img"
expect 8 "not an mqfs image" "$FSCK" -n "$tmp/zero.img"
grep_out "no mqfs filesystem"
expect 8 "a directory" "$FSCK" -n "$tmp"

# A damaged superblock (a byte of the label): 4, then 1, then 0.
poke "$img" 200 '\377'
cp "$img" "$tmp/bad.img"
expect 4 "damaged superblock, -n" "$FSCK" -n "$img"
grep_out "superblock (block 0)"
cmp -s "$img" "$tmp/bad.img" || fail "fsck -n changed the image"
expect 4 "damaged superblock, -p" "$FSCK" -p "$img"
expect 1 "damaged superblock, -y" "$FSCK" -y "$img"
expect 0 "repaired superblock" "$FSCK" -f -n "$img"

# A block bitmap byte (blocks 16000-16007, free) marked in use: -p.
# AG 0's metadata follows the superblock and the 256-block journal.
poke "$img" $((258 * 4096 + 32 + 2000)) '\377'
expect 4 "damaged bitmap, -n" "$FSCK" -f -n "$img"
grep_out "block bitmap"
expect 1 "damaged bitmap, -p" "$FSCK" -f -p "$img"
expect 0 "repaired bitmap" "$FSCK" -f -n "$img"

# Superblock copies: 400 MiB is 4 AGs, a copy at the end of AG 1 (block
# 65023) and of the device.  Block 0 and the end copy zeroed: fsck finds
# the AG copy; -b names it, or a block without one (8).
big=$tmp/big.img
"$MKFS" -q -s 400M "$big" || fail "mkfs 400M"
expect 4 "-b copy of a clean image, -n" "$FSCK" -n -b 65023 "$big"
grep_out "copy in block 65023"
expect 8 "-b where no copy is" "$FSCK" -n -b 65024 "$big"
dd if=/dev/zero of="$big" bs=4096 count=1 conv=notrunc 2>/dev/null
dd if=/dev/zero of="$big" bs=4096 seek=102399 count=1 conv=notrunc \
	2>/dev/null
expect 4 "no block 0, no end copy, -n" "$FSCK" -n "$big"
grep_out "copy in block 65023"
expect 1 "no block 0, no end copy, -y" "$FSCK" -y "$big"
expect 0 "restored from the AG copy" "$FSCK" -f -n "$big"
rm -f "$big"

# Progress lines with -C 0.
expect 0 "progress" "$FSCK" -f -n -C 0 "$img"
grep -q '^fsck.mqfs: 100%$' "$tmp/err" || fail "no progress lines on stderr"

t_tools_done
exit 0
