/* SPDX-License-Identifier: MIT */
/*
 * core.c - the driver contract's own code (mq_dev.h): the check every
 * driver's ops table passes before a queue is built on it (as elevator
 * types are checked at registration), the accessors drivers use on a
 * hardware queue, and closing a device whatever its driver.
 */
#include <errno.h>
#include <stdio.h>
#include "../blk_i.h"

int mq_dev_check_ops(const struct mq_dev *dev)
{
	const struct mq_dev_ops *o = dev->ops;
	const char *missing = NULL;

	if (!o)
		missing = "an ops table";
	else if (!o->name)
		missing = "a name";
	else if (!o->queue_init || !o->queue_exit)
		missing = "queue_init and queue_exit";
	else if (!o->queue_rq)
		missing = "queue_rq";
	else if (!o->close)
		missing = "close";
	else if (dev->polled && !o->poll)
		missing = "poll (the device is polled)";
	else if (dev->geo.nr_poll_queues && !o->poll)
		missing = "poll (it offers poll queues)";
	if (!missing)
		return 0;
	fprintf(stderr, "mqfs: %s: the driver%s%s has no %s\n", dev->name,
		o && o->name ? " " : "", o && o->name ? o->name : "", missing);
	return -EINVAL;
}

void *mq_hctx_driver_data(const struct mq_hw_queue *hctx)
{
	return hctx->driver_data;
}

struct mq_dev *mq_hctx_dev(const struct mq_hw_queue *hctx)
{
	return hctx->q->dev;
}

void mq_dev_close(struct mq_dev *dev)
{
	dev->ops->close(dev);
}
