/* SPDX-License-Identifier: MIT */
/*
 * dev/null.h - the null driver (sched/dev/null.c): no data; requests
 * complete at once, after a latency from a timer, or when a test says.
 */
#ifndef MQFS_DEV_NULL_H
#define MQFS_DEV_NULL_H

#include <stdbool.h>
#include <stdint.h>
#include "mqfs/mq_dev.h"

enum mq_null_irqmode {
	MQ_NULL_IRQ_NONE = 0,	/* complete inside queue_rq */
	MQ_NULL_IRQ_TIMER,	/* complete from a timer thread after latency */
	MQ_NULL_IRQ_MANUAL,	/* tests complete with mq_null_complete_due() */
};

struct mq_null_config {
	uint64_t size_bytes;		/* default 1 TiB */
	uint64_t latency_ns;		/* 0: at once */
	unsigned queue_depth;		/* default 128 */
	unsigned nr_hw_queues;		/* default 1 */
	enum mq_null_irqmode irqmode;	/* TIMER when latency_ns > 0 */
};

/* A null device in *@out: 0, -ENOMEM or the timer thread's error. */
int mq_null_open(const struct mq_null_config *cfg, struct mq_dev **out);
/* MANUAL mode: complete every request whose latency has passed. */
unsigned mq_null_complete_due(struct mq_dev *dev);
/* Requests the device holds right now (all queues). */
unsigned mq_null_inflight(struct mq_dev *dev);

#endif /* MQFS_DEV_NULL_H */
