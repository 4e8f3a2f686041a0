#!/bin/sh
# SPDX-License-Identifier: MIT
# guest-kernel.sh DIR - the kernel of make check-nvme's QEMU guest into
# DIR: Debian 12's cloud kernel (NVMe, io_uring built in; FUSE a module),
# downloaded with apt-get download and unpacked - never installed, which
# would pull in udev and write to /boot.  Leaves DIR/vmlinuz and
# DIR/fuse.ko; nothing when it fails (exit 1, the reason on stderr).
set -eu
dir=${1:?usage: guest-kernel.sh DIR}
[ -f "$dir/vmlinuz" ] && [ -f "$dir/fuse.ko" ] && exit 0
pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
	sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n 1)
if [ -z "$pkg" ]; then
	echo "guest-kernel: apt knows no linux-image-cloud-amd64" \
		"(run apt-get update)" >&2
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mqfs-guest-kernel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# _apt cannot write to a root-owned temp dir: download as ourselves.
if ! (cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download "$pkg") \
	>"$tmp/log" 2>&1; then
	cat "$tmp/log" >&2
	echo "guest-kernel: cannot download $pkg" >&2
	exit 1
fi
mkdir "$tmp/x"
dpkg-deb --fsys-tarfile "$tmp"/*.deb |
	tar -x -C "$tmp/x" --wildcards './boot/vmlinuz-*' \
		'./lib/modules/*/kernel/fs/fuse/fuse.ko'
mkdir -p "$dir"
cp "$tmp"/x/boot/vmlinuz-* "$dir/vmlinuz.part"
cp "$tmp"/x/lib/modules/*/kernel/fs/fuse/fuse.ko "$dir/fuse.ko"
echo "$pkg" >"$dir/package"
mv "$dir/vmlinuz.part" "$dir/vmlinuz"
echo "guest-kernel: $pkg in $dir"
