# SPDX-License-Identifier: MIT
noinst_HEADERS += \
	%reldir%/mqfs/format.h \
	%reldir%/mqfs/fs.h \
	%reldir%/mqfs/inflight.h \
	%reldir%/mqfs/kthread.h \
	%reldir%/mqfs/blk.h \
	%reldir%/mqfs/cli.h \
	%reldir%/mqfs/clock.h \
	%reldir%/mqfs/compiler.h \
	%reldir%/mqfs/elevator.h \
	%reldir%/mqfs/list.h \
	%reldir%/mqfs/lock.h \
	%reldir%/mqfs/loghist.h \
	%reldir%/mqfs/mq_dev.h \
	%reldir%/mqfs/dev/fault.h \
	%reldir%/mqfs/dev/null.h \
	%reldir%/mqfs/dev/ram.h \
	%reldir%/mqfs/dev/uring.h \
	%reldir%/mqfs/rbtree.h \
	%reldir%/mqfs/thread_stats.h
