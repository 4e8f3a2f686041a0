#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job on an embedded default: build, make a 1 GiB image file,
# mount it with mqfs (mq-deadline, direct I/O), run a short fio job on the
# mounted path, write a file uncached through a dontcache directory,
# unmount, and show the scheduler's statistics for the whole mount and a
# clean fsck.  Everything is removed at the end.
set -eu
cd "$(dirname "$0")/../.."
sh contrib/scripts/build.sh

dir=$(mktemp -d "${TMPDIR:-/var/tmp}/mqfs-demo.XXXXXX")
img=$dir/mqfs.img
mnt=$dir/mnt
pid=
cleanup() {
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" || umount -l "$mnt" || true
	fi
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "== mkfs.mqfs: a 1 GiB image file"
./mkfs.mqfs -s 1G -L demo "$img"
mkdir "$mnt"

echo "== mqfs $img $mnt -o sched=mq-deadline,cache=none"
./mqfs "$img" "$mnt" -f -o sched=mq-deadline,cache=none,stats="$dir/stats.txt" &
pid=$!
i=0
until mountpoint -q "$mnt"; do
	i=$((i + 1))
	if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "demo: mqfs did not mount" >&2
		exit 1
	fi
	sleep 0.1
done

echo "== fio: 4k random read/write 70/30, io_uring, qd 32, 10 s, on the mount"
fio --name=demo --directory="$mnt" --size=256M --bs=4k --rw=randrw \
	--rwmixread=70 --ioengine=io_uring --iodepth=32 --direct=1 \
	--runtime=10 --time_based --group_reporting

echo "== dontcache: a directory with user.mqfs.cache=dontcache, 256 MiB written"
mkdir "$mnt/stream"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.mqfs.cache", b"dontcache")' "$mnt/stream"
dd if=/dev/zero of="$mnt/stream/file" bs=1M count=256 status=none
fincore "$mnt/stream/file"	# nothing of it is in the page cache
cat "$mnt/.mqfs/fs/dontcache"
df -h "$mnt"

echo "== unmount"
fusermount3 -u "$mnt"
wait "$pid"
pid=
echo "== the scheduler's statistics for the mount"
cat "$dir/stats.txt"
echo "== fsck.mqfs -f"
./fsck.mqfs -f "$img"
