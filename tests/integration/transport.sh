#!/bin/sh
# SPDX-License-Identifier: MIT
# The FUSE transports: what transport=auto|uring|dev takes with FUSE
# over io_uring off and on (.mqfs/fuse/conn says, the -f line says), a
# ring that cannot register (MQFS_FAULT_RING_REGISTER: its payload buffer
# too small, the kernel refuses it) ending the mount with a clear error
# under uring and on /dev/fuse under auto, who completes the rings'
# device I/O (uring_reap=ring: the ring threads, through poll queues that
# a size change waiting for reads in flight polls too; =reaper: the
# driver's threads; with each, size changes during QD32 O_DIRECT reads
# neither hang nor change the data), uring_pin=auto moving a ring thread
# off its callers' CPU under QD32 reads, spill entries (uring_spill:
# every thread serving a deep queue, checked data; a refused queue served
# by the others' spill entries), and the rings' teardown: an
# umount -f (the connection aborted) and a SIGKILLed daemon while fio runs, a remount at
# once (fsck clean after), and mount/unmount cycles, each daemon with
# exactly one ring thread per queue and gone at unmount, with exit 0.  Skipped (77) where the kernel
# has no FUSE over io_uring.
. "$(dirname "$0")/lib.sh"
t_init
command -v fio >/dev/null || t_skip "fio is not installed"
t_uring_on
unset MQFS_TRANSPORT
t_mkfs 512M
conn() { cat "$T_MNT/.mqfs/fuse/conn"; }
transport_is() {
	conn | grep -qx "transport $1" ||
		t_fail "$2: want transport $1, got: $(conn | tr '\n' ' ')"
}
# The daemon's ring threads, by name.
ring_threads() { cat /proc/"$T_PID"/task/*/comm 2>/dev/null | grep -c '^mqfs-ring'; }
# mqfs -f with @opts must fail (exit 1) within 20 s, mounting nothing.
mount_fails() {
	what=$1
	shift
	timeout 20 "$@" >"$T_DIR/fail.log" 2>&1 9>&-
	rc=$?
	[ "$rc" = 1 ] || { cat "$T_DIR/fail.log"; t_fail "$what: exit $rc, want 1"; }
	! t_is_mounted "$T_MNT" || t_fail "$what: left a mount"
}

# ---- off: auto takes /dev/fuse and says why; uring refuses -----------------
t_uring_set N
t_mount -o transport=auto
transport_is dev "auto, io_uring off"
conn | grep -q '^transport_note .*enable_uring' || t_fail "no note on enable_uring"
echo data >"$T_MNT/a"
t_umount
mount_fails "uring, io_uring off" "$MQFS" "$T_IMG" "$T_MNT" -f -o transport=uring
grep -q 'enable_uring' "$T_DIR/fail.log" || t_fail "the error does not say how"

# ---- on: auto and uring take the rings, dev stays on /dev/fuse --------------
t_uring_set Y
t_mount -o transport=auto
transport_is uring "auto, io_uring on"
nq=$(grep '^ring_queues ' "$T_MNT/.mqfs/fuse/conn" | cut -d' ' -f2)
[ -n "$nq" ] && [ "$nq" -ge 1 ] || t_fail "ring_queues: '$nq'"
[ "$(ring_threads)" = "$nq" ] || t_fail "$(ring_threads) ring threads for $nq queues"
grep -q "FUSE requests over io_uring ($nq rings)" "$T_LOG" ||
	t_fail "the -f line does not say io_uring"
[ "$(cat "$T_MNT/a")" = data ] || t_fail "data over the rings"
grep -q '^ring_requests [1-9]' "$T_MNT/.mqfs/fuse/stat" || t_fail "no ring requests counted"
t_umount
t_mount -o transport=dev
transport_is dev "dev, io_uring on"
grep -q '^transport_note' "$T_MNT/.mqfs/fuse/conn" && t_fail "dev chosen: no note wanted"
t_umount

# ---- who reaps the rings' device I/O; size changes during O_DIRECT reads ----
device_reaped() { grep '^ring_device_reaped ' "$T_MNT/.mqfs/fuse/stat" | cut -d' ' -f2; }
# Each size change waits for the file's reads in flight (mqfs_ino_dio_wait):
# with uring_reap=ring it polls the other ring's poll queue while that
# thread, inside its doorbell batch, may wait for the inode lock.
size_changes_during_reads() {
	head -c 32M /dev/urandom >"$T_MNT/r"
	sum=$(md5sum <"$T_MNT/r")
	fio --name=grow --filename="$T_MNT/r" --size=32m --rw=randread \
		--bs=4k --direct=1 --ioengine=io_uring --iodepth=32 \
		--runtime=3 --time_based >"$T_DIR/grow.log" 2>&1 &
	fp=$!
	n=0
	while kill -0 "$fp" 2>/dev/null; do
		timeout 10 truncate -s +4K "$T_MNT/r" ||
			t_fail "$1: truncate during reads"
		n=$((n + 1))
	done
	wait "$fp" || t_fail "$1: fio during size changes: $(tail -n 3 "$T_DIR/grow.log")"
	[ "$n" -ge 10 ] || t_fail "$1: only $n size changes during the reads"
	[ "$(timeout 60 head -c 32M "$T_MNT/r" | md5sum)" = "$sum" ] ||
		t_fail "$1: data changed"
	rm -f "$T_MNT/r"
}
t_mount -o transport=uring
conn | grep -qx 'ring_reap ring' || t_fail "ring_reap: $(conn | grep ring_reap)"
size_changes_during_reads "uring_reap=ring"
[ "$(device_reaped)" -gt 0 ] || t_fail "the rings reaped no device I/O"
# uring_pin=auto (the default) moves the ring of a QD32 reader kept on
# CPU 0 (its requests, and io-wq's, all go to queue 0) off that CPU.
conn | grep -qx 'ring_pin auto' || t_fail "ring_pin: $(conn | grep ring_pin)"
conn | grep -qx 'ring_doorbell auto' || t_fail "ring_doorbell: $(conn | grep ring_doorbell)"
if [ "$(nproc)" -ge 2 ]; then
	head -c 8M /dev/zero >"$T_MNT/p"
	taskset -c 0 fio --name=pin --filename="$T_MNT/p" --size=8m \
		--rw=randread --bs=4k --direct=1 --ioengine=io_uring \
		--iodepth=32 --runtime=2 --time_based >"$T_DIR/pin.log" 2>&1 ||
		t_fail "fio on CPU 0: $(tail -n 3 "$T_DIR/pin.log")"
	grep -q '^ring_moves [1-9]' "$T_MNT/.mqfs/fuse/stat" ||
		t_fail "uring_pin=auto: no move under QD32 reads"
	rm -f "$T_MNT/p"
fi
t_umount
# uring_doorbell=request: every request's device I/O goes at once, and
# the device is reaped between the requests of a batch.
t_mount -o transport=uring,uring_doorbell=request
conn | grep -qx 'ring_doorbell request' || t_fail "ring_doorbell: $(conn | grep ring_doorbell)"
size_changes_during_reads "uring_doorbell=request"
grep -q '^ring_doorbell_requests [1-9]' "$T_MNT/.mqfs/fuse/stat" ||
	t_fail "uring_doorbell=request: no doorbell rung per request"
t_umount
t_mount -o transport=uring,uring_doorbell=batch
size_changes_during_reads "uring_doorbell=batch"
grep -q '^ring_doorbell_requests 0$' "$T_MNT/.mqfs/fuse/stat" ||
	t_fail "uring_doorbell=batch: $(grep ring_doorbell_requests "$T_MNT/.mqfs/fuse/stat")"
t_umount
t_mount -o transport=uring,uring_reap=reaper
conn | grep -qx 'ring_reap reaper' || t_fail "uring_reap=reaper: $(conn | grep ring_reap)"
size_changes_during_reads "uring_reap=reaper"
[ "$(device_reaped)" = 0 ] || t_fail "uring_reap=reaper: the rings reaped $(device_reaped)"
t_umount

# ---- spill entries: a deep queue shared by every ring thread ----------------
# uring_spill=4: each thread also registers 4 entries on every other
# queue, and uring_pin=auto becomes own.  A QD64 writer kept on one CPU
# fills that CPU's queue past its own 8 entries: the other threads serve
# part of it; fio reads every block back and checks it.  Where the slots
# would pass the 1000 bound (many possible CPUs), not run.
spill_cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
if [ "$nq" -ge 2 ] && [ $((nq * (32 + 4 * (nq - 1)) + 16)) -le 1000 ]; then
	t_mount -o transport=uring,uring_depth=8,uring_spill=4
	conn | grep -qx 'ring_spill 4' || t_fail "ring_spill: $(conn | grep ring_spill)"
	conn | grep -qx 'ring_pin own' || t_fail "spill, auto: $(conn | grep ring_pin)"
	taskset -c "$spill_cpu" fio --name=spill --filename="$T_MNT/s" \
		--size=16m --rw=randwrite --bs=64k --direct=1 --ioengine=io_uring \
		--iodepth=64 --verify=crc32c --verify_fatal=1 \
		--verify_state_save=0 \
		>"$T_DIR/spill.log" 2>&1 ||
		t_fail "fio with spill entries: $(tail -n 3 "$T_DIR/spill.log")"
	grep -q '^ring_spilled [1-9]' "$T_MNT/.mqfs/fuse/stat" ||
		t_fail "no request spilled: $(grep ring_spilled "$T_MNT/.mqfs/fuse/stat")"
	t_umount
	t_fsck
	# Thread 0's entries refused, its queue served by the others' spill
	# entries: auto says so and serves, and the mount comes down.
	MQFS_FAULT_RING_REGISTER=0 t_mount -o transport=auto,uring_spill=2
	conn | grep -q '^transport_note io_uring did not start' ||
		t_fail "spill, queue 0 refused: no note"
	echo spilled >"$T_MNT/c"
	[ "$(cat "$T_MNT/c")" = spilled ] || t_fail "data with queue 0 refused"
	t_umount
else
	t_say "spill entries: not run ($nq possible CPUs)"
fi

# ---- a queue that cannot register -------------------------------------------
for q in 0 $((nq - 1)); do
	MQFS_FAULT_RING_REGISTER=$q mount_fails "uring, queue $q refused" \
		"$MQFS" "$T_IMG" "$T_MNT" -f -o transport=uring
	grep -q "queue $q: REGISTER" "$T_DIR/fail.log" ||
		{ cat "$T_DIR/fail.log"; t_fail "the error does not name queue $q"; }
done
MQFS_FAULT_RING_REGISTER=0 t_mount -o transport=auto
transport_is dev "auto, a queue refused"
[ "$(ring_threads)" = 0 ] || t_fail "rings kept that the kernel can never use"
conn | grep -q '^transport_note io_uring did not start' || t_fail "no note on the refusal"
echo more >"$T_MNT/b"
[ "$(cat "$T_MNT/b")" = more ] || t_fail "data after the fallback"
t_umount
t_fsck

# ---- teardown under load ------------------------------------------------------
fio_bg() {
	fio --name=load --filename="$T_MNT/load" --size=64M --rw=randrw \
		--bs=4k --iodepth=16 --ioengine=io_uring --direct=1 \
		--runtime=30 --time_based >"$T_DIR/fio.log" 2>&1 &
	T_FIO=$!
	sleep 1
	t_alive "$T_FIO" || { cat "$T_DIR/fio.log"; t_fail "fio did not start"; }
}
fio_gone() {
	i=0
	while t_alive "$T_FIO"; do
		[ "$i" -lt 100 ] || { kill -9 "$T_FIO"; t_fail "fio hangs after $1"; }
		sleep 0.1
		i=$((i + 1))
	done
	wait "$T_FIO" 2>/dev/null
}
t_mount -o transport=uring
fio_bg
umount -f "$T_MNT" 2>/dev/null	# aborts the connection (EBUSY: fio is in it)
fio_gone "umount -f"
t_wait_exit "$T_PID" 100 || t_fail "daemon still running after the abort"
wait "$T_PID"
rc=$?
T_PID=
[ "$rc" = 0 ] || t_fail "the daemon exited with $rc after the abort"
t_force_unmount "$T_MNT"
t_fsck

t_mount -o transport=uring
fio_bg
kill -9 "$T_PID"
fio_gone "the daemon was killed"
t_drop_dead_mount
t_mount -o transport=uring		# at once: the journal is replayed
transport_is uring "after a SIGKILL"
[ "$(cat "$T_MNT/b")" = more ] || t_fail "data after the SIGKILL"
t_umount
t_fsck

# ---- cycles: each daemon its rings, and gone with exit 0 at unmount --------------
for i in $(seq 1 15); do
	t_mount -o transport=uring
	ls "$T_MNT" >/dev/null
	[ "$(ring_threads)" = "$nq" ] || t_fail "cycle $i: $(ring_threads) ring threads"
	t_umount
done
t_fsck
t_say "ok"
