/* SPDX-License-Identifier: MIT */
/*
 * poll.c - polled queues: completions reaped by the threads that wait for
 * them (the kernel's HCTX_TYPE_POLL queues with io_uring's iopoll, where
 * the submitter reaps in io_uring_enter).
 *
 * A device that sets mq_dev.polled completes nothing unless someone calls
 * its ->poll: no reaper thread, so no wake-up of a reaper and then of the
 * waiting submitter per batch.  The price is that every wait for a
 * completion must poll: mq_queue_poll() for callers, and the block
 * layer's own waits (a tag, a drain or freeze) through the helpers here.
 *
 * A device may instead offer poll queues beside its reaped ones (the
 * kernel's nvme poll_queues): only bios flagged MQ_REQ_POLLED by a thread
 * bound to one go there (submit.c), and only pollers complete them - the
 * bound thread in its own loop, woken through the queue's poll fd, and the
 * threads that wait for such I/O without having submitted it.
 */
#include <errno.h>
#include <time.h>
#include "blk_i.h"
#include "mqfs/inflight.h"

int mq_hctx_poll(struct mq_hw_queue *hctx, unsigned min_complete)
{
	return hctx->q->dev->ops->poll(hctx, min_complete);
}

int mq_queue_poll(struct mq_queue *q, unsigned min_complete)
{
	if (!q->polled)
		return -EOPNOTSUPP;
	/* The plug may hold the very requests the caller waits for. */
	mq_flush_plug();
	return mq_hctx_poll(mq_ctx_current(q)->hctx, min_complete);
}

/*
 * Each hardware queue's requests complete by themselves in the kernel, so
 * blocking on one queue while it has some in flight cannot wait for
 * another queue; a queue with nothing in flight returns at once.
 */
unsigned mq_queue_poll_all(struct mq_queue *q)
{
	unsigned done = 0;

	for (unsigned i = 0; i < q->nr_hw_queues; i++) {
		int n = q->hctxs[i]->polled ? mq_hctx_poll(q->hctxs[i], 1) : 0;

		if (n > 0)
			done += (unsigned)n;
	}
	return done;
}

static struct mq_hw_queue *poll_queue(struct mq_queue *q, unsigned index)
{
	if (index >= q->nr_poll_queues)
		return NULL;
	return q->hctxs[q->nr_hw_queues - q->nr_poll_queues + index];
}

int mq_queue_poll_queue(struct mq_queue *q, unsigned index,
			unsigned min_complete)
{
	struct mq_hw_queue *hctx = poll_queue(q, index);

	if (!hctx)
		return -EOPNOTSUPP;
	mq_flush_plug();
	return mq_hctx_poll(hctx, min_complete);
}

int mq_queue_poll_fd(struct mq_queue *q, unsigned index)
{
	struct mq_hw_queue *hctx = poll_queue(q, index);
	int fd;

	if (!hctx || !q->dev->ops->poll_fd)
		return -EOPNOTSUPP;
	fd = q->dev->ops->poll_fd(hctx);
	/*
	 * A thread that will bind: from now on waiters poll, so none that
	 * looked before its first bio can be found blocking on it.
	 */
	if (fd >= 0)
		atomic_store(&q->polls_used, true);
	return fd;
}

/*
 * One round for a thread that waits for polled I/O it did not submit:
 * reap every poll queue; a short nap when none completed anything (the
 * awaited I/O may not have reached the device yet: a plug, an elevator).
 */
void mq_queue_poll_polled_nap(struct mq_queue *q)
{
	struct timespec nap = { 0, 100 * 1000 };

	if (!mq_queue_poll_polled(q))
		nanosleep(&nap, NULL);
}

void mq_queue_inflight_wait(struct mq_queue *q, struct mq_inflight *f)
{
	/* The I/O waited for may sit in this thread's plug. */
	mq_flush_plug();
	if (!mq_queue_polls_used(q)) {
		mq_inflight_wait(f);
		return;
	}
	while (mq_inflight_count(f))
		mq_queue_poll_polled_nap(q);
}

unsigned mq_queue_poll_polled(struct mq_queue *q)
{
	unsigned done = 0;

	mq_flush_plug();
	for (unsigned i = 0; i < q->nr_poll_queues; i++) {
		int n = mq_hctx_poll(poll_queue(q, i), 1);

		if (n > 0)
			done += (unsigned)n;
	}
	return done;
}
