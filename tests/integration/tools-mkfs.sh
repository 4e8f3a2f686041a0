#!/bin/sh
# SPDX-License-Identifier: MIT
# mkfs.mqfs on image files: creation with -s, refusal to overwrite a
# signature without -f, option errors, -L/-U/-N/-J/-q, -E lazy_ags=0,
# the warning for a sparse image larger than its filesystem's room.
set -u

. "$(dirname "$0")/lib.sh"
t_init_tools

# expect_nonzero DESCRIPTION CMD...
expect_nonzero() {
	what=$1
	shift
	if "$@" >"$tmp/out" 2>"$tmp/err"; then
		fail "$what: succeeded"
	fi
}

grep_out() {
	grep -q -- "$1" "$tmp/out" "$tmp/err" || fail "missing '$1' in output"
}

# Write the bytes of printf format $3 into file $1 at offset $2.
poke() {
	printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}


# The tools need io_uring; a kernel without it cannot run them at all.
img=$tmp/a.img
if ! "$MKFS" -q -s 64M "$img" >"$tmp/out" 2>"$tmp/err"; then
	if grep -qi "uring" "$tmp/err"; then
		echo "SKIP: io_uring unavailable" >&2
		exit 77
	fi
	fail "mkfs -s 64M on a new image"
	cat "$tmp/err" >&2
fi
[ "$(stat -c %s "$img")" = 67108864 ] || fail "image size is not 64 MiB"
expect 0 "fsck of a fresh image" "$FSCK" -f -n "$img"

# A missing image needs -s; nothing is created.
expect 1 "missing image without -s" "$MKFS" "$tmp/missing.img"
[ -e "$tmp/missing.img" ] && fail "missing image was created"

# An existing filesystem is kept without -f.
expect 1 "existing mqfs without -f" "$MKFS" "$img"
grep_out "mqfs filesystem"
expect 0 "existing mqfs with -f" "$MKFS" -f -q "$img"

# Other signatures: ext4 (mkfs.ext4 when present, else the magic).
sig=$tmp/sig.img
truncate -s 64M "$sig"
if command -v mkfs.ext4 >/dev/null 2>&1; then
	mkfs.ext4 -q -F "$sig" >/dev/null 2>&1 || poke "$sig" 1080 '\123\357'
else
	poke "$sig" 1080 '\123\357'
fi
expect 1 "ext4 signature without -f" "$MKFS" "$sig"
grep_out "ext2/ext3/ext4"
expect 8 "fsck of an ext4 image" "$FSCK" -n "$sig"
expect 0 "ext4 signature with -f" "$MKFS" -f -q "$sig"
expect 0 "fsck after overwriting ext4" "$FSCK" -f -n "$sig"

for s in "0 XFSB XFS" "4086 SWAPSPACE2 swap" "65600 _BHRfS_M btrfs" \
	 "0 LUKS\272\276 LUKS"; do
	set -- $s
	rm -f "$sig"
	truncate -s 64M "$sig"
	poke "$sig" "$1" "$2"
	expect 1 "$3 signature without -f" "$MKFS" "$sig"
	grep_out "$3"
done

# Bad options and sizes.
expect 1 "no arguments" "$MKFS"
expect 1 "two devices" "$MKFS" "$img" "$img"
expect 1 "unknown option" "$MKFS" -Z "$img"
expect 1 "bad size" "$MKFS" -s 12Q "$tmp/b.img"
# A size that is not a multiple of the block size is rounded down (it
# used to create the image and then refuse it as too small).
expect 0 "-s not a multiple of 4096" "$MKFS" -q -s 67110000 "$tmp/u.img"
expect 1 "size too small" "$MKFS" -s 1M "$tmp/b.img"
[ -e "$tmp/b.img" ] && fail "image created for a rejected size"
expect 1 "bad uuid" "$MKFS" -f -U not-a-uuid "$img"
expect 1 "long label" "$MKFS" -f \
	-L 0123456789012345678901234567890123456789012345678901234567890123 "$img"
expect 1 "-s larger than the file" "$MKFS" -f -s 128M "$img"
expect 1 "journal too small" "$MKFS" -s 4M -J 4K "$tmp/c.img"
[ -e "$tmp/c.img" ] && fail "image left behind by a failed mkfs"

# Labels, UUIDs, inode and journal sizes, quiet.
uuid=12345678-9abc-4def-8123-456789abcdef
expect 0 "mkfs -L -U -N -J" "$MKFS" -f -L scratch -U "$uuid" -N 2000 \
	-J 2M "$img"
grep_out "$uuid"
grep_out "scratch"
grep_out "journal:  2.0 MiB (512 blocks)"
expect 0 "fsck after -N -J" "$FSCK" -f -n "$img"
expect 0 "mkfs -q" "$MKFS" -f -q -s 32M "$img"
[ -s "$tmp/out" ] && fail "-q printed something"
expect 0 "fsck of a smaller fs in a larger file" "$FSCK" -f -n "$img"

# Every AG written now, without the lazy_ags feature: the inode tables
# of its 16 AGs (2 MiB each) are allocated; lazily, only AG 0's.
expect 0 "mkfs -E lazy_ags=0" "$MKFS" -q -E lazy_ags=0 -s 2G "$tmp/e.img"
expect 0 "fsck after -E lazy_ags=0" "$FSCK" -f -n "$tmp/e.img"
[ "$(du -k "$tmp/e.img" | cut -f1)" -ge 16384 ] ||
	fail "-E lazy_ags=0 did not write the inode tables"
expect 0 "mkfs -E lazy_ags=1" "$MKFS" -f -q -E lazy_ags=1 "$tmp/e.img"
expect 1 "unknown -E option" "$MKFS" -f -E nosuch "$tmp/e.img"
rm -f "$tmp/e.img"

# A sparse image larger than its filesystem can hold: a warning, and
# the image is made; one that fits: none.  (Sizes past ext4's 16 TiB
# largest file are left out.)
free_k=$(df -Pk "$tmp" | awk 'NR == 2 { print $4 }')
big_k=$((free_k + 1048576))
if [ "$big_k" -lt 17179869184 ]; then
	expect 0 "mkfs of an image larger than its room" "$MKFS" \
		-s "${big_k}K" "$tmp/w.img"
	grep_out "warning: .* has room for"
	rm -f "$tmp/w.img"
fi
expect 0 "mkfs of a small image" "$MKFS" -s 64M "$tmp/w.img"
grep -q warning "$tmp/err" && fail "warning for an image that fits"
rm -f "$tmp/w.img"

t_tools_done
exit 0
