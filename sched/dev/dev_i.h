/* SPDX-License-Identifier: MIT */
/*
 * dev_i.h - helpers shared by the in-memory drivers (null, ram): requests
 * that complete inside queue_rq are gathered and completed as one batch
 * when the core says the batch is over (last, or commit_rqs), the way a
 * polled driver reaps a batch of completions.
 */
#ifndef MQFS_SCHED_DEV_I_H
#define MQFS_SCHED_DEV_I_H

#include <stdlib.h>
#include "mqfs/mq_dev.h"

struct dev_done_batch {
	unsigned nr, cap;
	struct mq_request **rqs;
};

static inline int dev_done_init(struct dev_done_batch *b, unsigned cap)
{
	b->nr = 0;
	b->cap = cap;
	b->rqs = calloc(cap, sizeof(*b->rqs));
	return b->rqs ? 0 : -ENOMEM;
}

static inline void dev_done_exit(struct dev_done_batch *b)
{
	free(b->rqs);
}

static inline void dev_done_flush(struct dev_done_batch *b)
{
	unsigned nr = b->nr;

	/* Reset first: completions may re-enter queue_rq via a restart. */
	b->nr = 0;
	if (nr)
		mq_complete_batch(b->rqs, nr);
}

/* Called from queue_rq (serialised per queue). */
static inline void dev_done_add(struct dev_done_batch *b,
				struct mq_request *rq, int status, bool last)
{
	rq->status = status;
	b->rqs[b->nr++] = rq;
	if (last || b->nr == b->cap)
		dev_done_flush(b);
}

#endif /* MQFS_SCHED_DEV_I_H */
