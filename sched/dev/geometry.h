/* SPDX-License-Identifier: MIT */
/*
 * geometry.h - probing a file or block device for direct I/O.
 */
#ifndef MQFS_SCHED_DEV_GEOMETRY_H
#define MQFS_SCHED_DEV_GEOMETRY_H

#include <stdbool.h>
#include "mqfs/mq_dev.h"

/* Fill @g for @fd; *is_bdev tells a block device.  0 or -errno. */
int mq_geometry_probe(int fd, struct mq_dev_geometry *g, bool *is_bdev);
/* The number in sysfs file @path; -1 when absent or not a number. */
long long mq_sysfs_number(const char *path);
/* Whether the block device has poll queues (IOPOLL can work). */
bool mq_geometry_poll_capable(int fd);

#endif /* MQFS_SCHED_DEV_GEOMETRY_H */
