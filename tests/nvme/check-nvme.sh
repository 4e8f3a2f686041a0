#!/bin/sh
# SPDX-License-Identifier: MIT
# check-nvme.sh - make check-nvme (and a test of make check): the NVMe
# driver on an emulated NVMe controller.  This kernel has no NVMe driver,
# so a QEMU guest (TCG) boots Debian 12's cloud kernel with an initramfs
# made here - busybox-static, fuse.ko, the mqfs programs, nvme_check and
# fio with the shared libraries they need, guest-init.sh as /init - and
# one NVMe namespace on a sparse image; guest-init.sh says what runs.
#
# Needs qemu-system-x86_64, busybox (static), cpio, and the guest kernel
# (contrib/scripts/guest-kernel.sh fetches it into
# $top_builddir/tests/nvme/kernel when missing; MQFS_GUEST_KERNEL=DIR
# names another).  Without them: exit 77, saying which is missing.
# The console goes to tests/nvme/guest/console.log; results, the
# passthrough / block-path IOPS ratios and the failures are printed.
set -u
NAME=check-nvme
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${top_builddir:-$HERE/../..}" && pwd)
SRC=$(cd "${top_srcdir:-$HERE/../..}" && pwd)
KDIR=${MQFS_GUEST_KERNEL:-$BIN/tests/nvme/kernel}
WORK=$BIN/tests/nvme/guest
TIMEOUT_S=${MQFS_NVME_TIMEOUT:-1200}
# mqfs-bench in the guest: seconds per run, rounds (contrib/bench/nvme-guest).
BENCH_ARGS="mqfs_bench_s=${MQFS_NVME_BENCH_S:-2} mqfs_bench_reps=${MQFS_NVME_BENCH_REPS:-1}"
# MQFS_NVME_MORE=1: nvme_check --more (fault stacking, iopoll; see there).
BENCH_ARGS="$BENCH_ARGS mqfs_more=${MQFS_NVME_MORE:-0}"

say() { printf '%s: %s\n' "$NAME" "$*"; }
skip() { say "SKIP: $*"; exit 77; }
fail() { say "FAIL: $*" >&2; exit 1; }

probe() {
	[ "$(uname -m)" = x86_64 ] || skip "the guest is x86_64"
	command -v qemu-system-x86_64 >/dev/null ||
		skip "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
	for t in cpio timeout; do
		command -v $t >/dev/null || skip "$t missing"
	done
	BUSYBOX=$(command -v busybox) || skip "busybox missing (busybox-static)"
	ldd "$BUSYBOX" >/dev/null 2>&1 &&
		skip "$BUSYBOX is not static (apt-get install busybox-static)"
	FIO=$(command -v fio) || skip "fio missing"
	for b in mqfs mkfs.mqfs fsck.mqfs mqfsctl mqfs-bench tests/nvme/nvme_check; do
		[ -x "$BIN/$b" ] || fail "$BIN/$b is not built"
	done
	sh "$SRC/contrib/scripts/guest-kernel.sh" "$KDIR" >&2 ||
		skip "no guest kernel (contrib/scripts/guest-kernel.sh failed)"
}

# Copy program $1 to $ROOT/bin with every library ldd names, at its path.
add_program() {
	cp "$1" "$ROOT/bin/" || fail "copy $1"
	ldd "$1" | awk '/=>/ { print $3 } /^[ \t]*\// { print $1 }' |
	while read -r lib; do
		[ -e "$ROOT$lib" ] && continue
		mkdir -p "$ROOT$(dirname "$lib")"
		cp -L "$lib" "$ROOT$lib" || exit 1
	done || fail "libraries of $1"
}

make_initramfs() {
	ROOT=$WORK/root
	rm -rf "$ROOT"
	mkdir -p "$ROOT/bin" "$ROOT/lib/modules" "$ROOT/data/sub" \
		"$ROOT/dev" "$ROOT/proc" "$ROOT/sys" "$ROOT/tmp" "$ROOT/mnt"
	cp "$BUSYBOX" "$ROOT/bin/busybox"
	cp "$KDIR/fuse.ko" "$ROOT/lib/modules/"
	for b in mqfs mkfs.mqfs fsck.mqfs mqfsctl mqfs-bench tests/nvme/nvme_check; do
		add_program "$BIN/$b"
	done
	add_program "$FIO"
	cp "$HERE/guest-init.sh" "$ROOT/init"
	chmod +x "$ROOT/init"
	# The file workload's tree: programs, a nested dir, a symlink.
	cp "$BIN/mqfs" "$BIN/mkfs.mqfs" "$ROOT/data/"
	cp "$KDIR/fuse.ko" "$ROOT/data/sub/"
	ln -s ../mqfs "$ROOT/data/sub/link"
	(cd "$ROOT" && find . | cpio -o -H newc --quiet) >"$WORK/initramfs" ||
		fail "cpio"
}

boot() {
	rm -f "$WORK/nvme.img"
	truncate -s 1G "$WORK/nvme.img" || fail "truncate"
	say "booting the guest ($(cat "$KDIR/package" 2>/dev/null), TCG)"
	timeout "$TIMEOUT_S" qemu-system-x86_64 -machine q35 -smp 2 -m 2048 \
		-nographic -no-reboot -kernel "$KDIR/vmlinuz" \
		-initrd "$WORK/initramfs" \
		-append "console=ttyS0 panic=-1 oops=panic quiet nvme.poll_queues=1 $BENCH_ARGS" \
		-drive file="$WORK/nvme.img",if=none,id=nv0,format=raw \
		-device nvme,serial=mqfs0,drive=nv0 \
		</dev/null >"$WORK/console.log" 2>&1
	QEMU_RC=$?
}

# ng0n1 IOPS over nvme0n1 IOPS, per scheduler and workload (the sums
# over the rounds).
ratios() {
	grep -a 'MQFS-NVME-BENCH' "$WORK/console.log" | tr -d '\r' |
	sed 's/.*MQFS-NVME-BENCH //' |
	awk -v reps="${MQFS_NVME_BENCH_REPS:-1}" '
		{ iops[$1 " " $2 " " $3] += $4; key[$2 " " $3] = 1 }
		END { for (k in key) {
			split(k, f, " ")
			ng = iops["/dev/ng0n1 " k]; blk = iops["/dev/nvme0n1 " k]
			printf "  %-11s %-9s passthrough %7d IOPS, block path %7d: %.2fx\n",
				f[1], f[2], ng / reps, blk / reps, blk ? ng / blk : 0 } }' |
	sort
}

report() {
	log=$WORK/console.log
	grep -a 'MQFS-NVME-RESULT' "$log" | tr -d '\r' | sed 's/.*MQFS-NVME-RESULT /  /'
	say "QD32 4k IOPS, NVMe passthrough (ng0n1) over the block path (nvme0n1), same boot:"
	ratios
	done_line=$(grep -a 'MQFS-NVME-DONE' "$log" | tr -d '\r' | tail -n 1)
	case $done_line in
	*"fail=0"*) ;;
	*)
		grep -a -E 'FAIL|mqfs|nvme_check|fio:|error' "$log" | tr -d '\r' |
			tail -n 60 >&2
		[ -n "$done_line" ] || tail -n 40 "$log" >&2
		fail "guest ${done_line:-did not finish (qemu exit $QEMU_RC)}; console: $log"
		;;
	esac
	say "PASS: ${done_line#*MQFS-NVME-DONE }"
	rm -f "$WORK/nvme.img"
}

probe
mkdir -p "$WORK"
start=$(date +%s)
make_initramfs
boot
report
say "$(($(date +%s) - start)) s"
