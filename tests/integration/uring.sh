#!/bin/sh
# SPDX-License-Identifier: MIT
# Every mounting integration script once more, on FUSE over io_uring:
# MQFS_TRANSPORT=uring is the daemon's default transport for their
# mounts, and transport=uring mounts nothing unless every ring started,
# so a script that passes here ran on the rings.  FUSE over io_uring is
# switched on for the run (/sys/module/fuse/parameters/enable_uring) and
# put back after, under a lock that transport.sh shares.  Skipped (77)
# where the kernel has no FUSE over io_uring; the tools-*.sh scripts
# mount nothing and are not repeated.
. "$(dirname "$0")/lib.sh"
t_init
t_uring_on
fails=0 ran=0 skipped=0
for s in "$T_HERE"/*.sh; do
	n=$(basename "$s" .sh)
	case $n in
	lib | uring | transport | tools-*) continue ;;
	esac
	# Each bounded on its own, so that a hang names its script.
	MQFS_TRANSPORT=uring timeout --kill-after=30 600 sh "$s" \
		>"$T_DIR/$n.log" 2>&1 9>&- </dev/null
	rc=$?
	case $rc in
	0) ran=$((ran + 1)); t_say "$n: ok" ;;
	77) skipped=$((skipped + 1)); t_say "$n: $(grep SKIP "$T_DIR/$n.log")" ;;
	*) fails=$((fails + 1)); t_say "$n: FAIL (exit $rc)"
	   sed 's/^/  | /' "$T_DIR/$n.log" | tail -n 40 ;;
	esac
done
t_say "$ran passed, $skipped skipped, $fails failed on transport=uring"
[ "$fails" = 0 ] || exit 1
[ "$ran" -gt 0 ] || t_fail "no script ran on the rings"
