/* SPDX-License-Identifier: MIT */
/*
 * dev/uring.h - the io_uring driver (sched/dev/uring.c): direct I/O on
 * a regular file or a block device, or NVMe commands on an NVMe generic
 * character device (/dev/ngXnY, sched/dev/nvme.c): the kernel's block
 * layer is then bypassed and mqfs's is the only one.
 */
#ifndef MQFS_DEV_URING_H
#define MQFS_DEV_URING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "mqfs/mq_dev.h"

/* What the rings carry. */
enum mq_uring_driver {
	MQ_URING_DRIVER_AUTO = 0,	/* from the path: ngXnY -> nvme */
	MQ_URING_DRIVER_RW,		/* "uring": O_DIRECT read/write */
	MQ_URING_DRIVER_NVME,		/* "nvme": NVMe passthrough */
};

/* How the io_uring driver opens a path and drives its rings. */
struct mq_uring_config {
	enum mq_uring_driver driver;
	unsigned queue_depth;		/* ring slots per queue; default 128 */
	bool sqpoll;			/* kernel submission thread */
	bool iopoll;			/* polled completions (poll queues) */
	bool no_fixed_files;		/* do not register the fd */
	bool readonly;			/* O_RDONLY: every write fails EBADF */
	/*
	 * Have the device to ourselves: a block device opened O_EXCL, an
	 * image file under an exclusive flock (held until close).  -EBUSY
	 * when someone has it, after waiting @lock_wait_ms for it (the
	 * daemon waits out an unmounting one).
	 */
	bool exclusive;
	unsigned lock_wait_ms;
	/*
	 * No reaper thread: completions are reaped by the threads that wait
	 * for them, through mq_queue_poll() (and the core's own waits).  The
	 * device is then mq_dev.polled; it combines with iopoll.
	 */
	bool caller_reap;
};

/*
 * Open @path in *@out: 0 or -errno.  A path that cannot be opened is
 * the caller's to report (strerror + mq_uring_open_hint), so the user
 * reads one line naming the tool; a bad configuration the driver names.
 */
int mq_uring_open(const char *path, const struct mq_uring_config *cfg,
		  struct mq_dev **out);
/* What to add to strerror() of an mq_uring_open() error: "" or " (..)". */
const char *mq_uring_open_hint(int err);
/* 0 when io_uring works with every opcode the driver issues. */
int mq_uring_probe(void);
/*
 * Does someone have @path to itself (a mounted mqfs)?  1 yes, 0 no, or
 * -errno.  For a reader that goes on anyway (fsck -n), to say so.
 */
int mq_uring_in_use(const char *path);
/*
 * Doorbell batching for a thread that serves work in batches (a FUSE
 * ring thread): between mq_uring_batch_begin() and mq_uring_batch_end()
 * (they nest), the calling thread's submissions to poll queues
 * (mq_queue_config.nr_poll_queues) only make their SQEs visible to the
 * kernel, and the end enters each such ring once (a ring another thread
 * is polling at that moment is entered at once).  Safe because every
 * waiter for poll-queue I/O polls, and a poll enters for visible SQEs.
 * Other queues ring at once.
 */
void mq_uring_batch_begin(void);
void mq_uring_batch_end(void);
struct iovec;
/*
 * Register the caller's I/O memory with every ring (io_uring fixed
 * buffers): single-bio requests inside it then skip the per-I/O page
 * pinning.  Call before mq_queue_create() on @dev; the memory must stay
 * allocated until the device is closed.  0 or -errno.
 */
int mq_uring_register_buffers(struct mq_dev *dev, const struct iovec *iov,
			      unsigned nr);

#endif /* MQFS_DEV_URING_H */
