/* SPDX-License-Identifier: MIT */
/*
 * t_dev.h - the block layer's constructors as tests use them: the
 * device or queue, or NULL with the error in t_dev_err, so a test can
 * check for NULL in an expression and still print why.
 */
#ifndef MQFS_TESTS_T_DEV_H
#define MQFS_TESTS_T_DEV_H

#include "mqfs/blk.h"
#include "mqfs/dev/fault.h"
#include "mqfs/dev/null.h"
#include "mqfs/dev/ram.h"
#include "mqfs/dev/uring.h"
#include "mqfs/compiler.h"

static _Thread_local int t_dev_err mq_unused;

static inline struct mq_dev *t_dev_ram(uint64_t size_bytes,
				       unsigned queue_depth)
{
	struct mq_dev *dev;

	t_dev_err = mq_ram_open(size_bytes, queue_depth, &dev);
	return dev;
}

static inline struct mq_dev *t_dev_null(const struct mq_null_config *cfg)
{
	struct mq_dev *dev;

	t_dev_err = mq_null_open(cfg, &dev);
	return dev;
}

static inline struct mq_dev *t_dev_fault(struct mq_dev *lower,
					 const struct mq_fault_config *cfg)
{
	struct mq_dev *dev;

	t_dev_err = mq_fault_open(lower, cfg, &dev);
	return dev;
}

static inline struct mq_dev *t_dev_uring(const char *path,
					 const struct mq_uring_config *cfg,
					 int *err)
{
	struct mq_dev *dev;

	*err = t_dev_err = mq_uring_open(path, cfg, &dev);
	return dev;
}

static inline struct mq_queue *t_queue_new(struct mq_dev *dev,
					   const struct mq_queue_config *cfg)
{
	struct mq_queue *q;

	t_dev_err = mq_queue_create(dev, cfg, &q);
	return q;
}

#endif /* MQFS_TESTS_T_DEV_H */
