/* SPDX-License-Identifier: MIT */
/*
 * dev/ram.h - the ram driver (sched/dev/ram.c): a device in memory, for tests.
 */
#ifndef MQFS_DEV_RAM_H
#define MQFS_DEV_RAM_H

#include <stdbool.h>
#include <stdint.h>
#include "mqfs/mq_dev.h"

/* A device of @size_bytes in memory in *@out: 0 or -ENOMEM. */
int mq_ram_open(uint64_t size_bytes, unsigned queue_depth,
		struct mq_dev **out);
void *mq_ram_data(struct mq_dev *dev);

#endif /* MQFS_DEV_RAM_H */
