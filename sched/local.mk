# SPDX-License-Identifier: MIT
# The block layer and its drivers: libmqblk.a, the bottom layer.  It may
# reference no symbol of the filesystem or the front end (tests/layers.sh).
noinst_LIBRARIES += libmqblk.a
libmqblk_a_SOURCES = \
	%reldir%/sysfs.c \
	%reldir%/blk_i.h \
	%reldir%/complete.c \
	%reldir%/complete_task.c \
	%reldir%/dispatch.c \
	%reldir%/elevator.c \
	%reldir%/elv_i.h \
	%reldir%/merge.c \
	%reldir%/merge.h \
	%reldir%/mq-deadline.c \
	%reldir%/plug.c \
	%reldir%/poll.c \
	%reldir%/queue.c \
	%reldir%/stats_print.c \
	%reldir%/submit.c \
	%reldir%/tag.c \
	%reldir%/worker.c \
	%reldir%/lib/clock.c \
	%reldir%/lib/kthread.c \
	%reldir%/lib/rbtree.c \
	%reldir%/lib/sbitmap.c \
	%reldir%/lib/sbitmap_queue.c \
	%reldir%/lib/sbitmap.h \
	%reldir%/lib/thread_stats.c \
	%reldir%/dev/core.c \
	%reldir%/dev/dev_i.h \
	%reldir%/dev/fault.c \
	%reldir%/dev/geometry.c \
	%reldir%/dev/geometry.h \
	%reldir%/dev/uring.c \
	%reldir%/dev/uring_open.c \
	%reldir%/dev/uring_rw.c \
	%reldir%/dev/uring_i.h \
	%reldir%/dev/uring_probe.c \
	%reldir%/dev/null.c \
	%reldir%/dev/nvme.c \
	%reldir%/dev/nvme_cmd.c \
	%reldir%/dev/nvme_i.h \
	%reldir%/dev/nvme_sysfs.c \
	%reldir%/dev/ram.c
