/* SPDX-License-Identifier: MIT */
/*
 * uring_i.h - the io_uring driver's device, shared by its files.
 */
#ifndef MQFS_SCHED_DEV_URING_I_H
#define MQFS_SCHED_DEV_URING_I_H

#include <stdbool.h>
#include <sys/uio.h>
#include "mqfs/mq_dev.h"
#include "mqfs/dev/uring.h"

struct uring_queue;

struct uring_dev {
	struct mq_dev dev;
	struct mq_uring_config cfg;
	int fd;
	bool is_bdev;
	bool fixed_file;
	struct uring_queue **queues;
	struct iovec *bufs;		/* registered buffers, by address */
	unsigned nr_bufs;
};

#endif /* MQFS_SCHED_DEV_URING_I_H */
