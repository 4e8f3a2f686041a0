/* SPDX-License-Identifier: MIT */
/*
 * null.c - the null device: completes every request without moving data,
 * at once or after a fixed latency, with a fixed number of slots so that
 * requests back up like on a real device.  It is the block layer's
 * overhead benchmark (the kernel's null_blk with irqmode 0 and 2) and,
 * in MANUAL mode, the deterministic device of the unit tests.
 *
 * With a latency, requests complete in issue order (they all take the
 * same time) from one "interrupt" thread per device that sleeps until the
 * oldest request is due and then completes everything that is due as one
 * batch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include "mqfs/clock.h"
#include "mqfs/kthread.h"
#include "dev_i.h"
#include "mqfs/dev/null.h"

#define NULL_BATCH	64

struct null_cmd {
	uint64_t due_ns;
	struct mq_request *next;	/* device FIFO */
};

struct null_queue {
	struct dev_done_batch done;	/* IRQ_NONE: completed in queue_rq */
};

struct null_dev {
	struct mq_dev dev;
	struct mq_null_config cfg;
	struct mq_kthread timer;	/* its lock: the FIFO (a leaf) */
	pthread_mutex_t irq_lock;	/* held while the timer completes */
	struct mq_request *head, *tail;
	_Atomic unsigned inflight;
};

static struct null_dev *to_null(struct mq_dev *dev)
{
	return mq_container_of(dev, struct null_dev, dev);
}

static int null_queue_init(struct mq_dev *dev, unsigned index, void **priv)
{
	struct null_queue *nq = calloc(1, sizeof(*nq));

	if (!nq)
		return -ENOMEM;
	if (dev_done_init(&nq->done, NULL_BATCH)) {
		free(nq);
		return -ENOMEM;
	}
	*priv = nq;
	return 0;
}

static void null_queue_exit(struct mq_dev *dev, unsigned index, void *priv)
{
	struct null_dev *nd = to_null(dev);
	struct null_queue *nq = priv;

	/*
	 * As synchronize_irq(): the queue's last completion may still be
	 * returning through the core (touching the queue after dropping its
	 * usage reference) on the timer thread; the queue is freed next.
	 */
	pthread_mutex_lock(&nd->irq_lock);
	pthread_mutex_unlock(&nd->irq_lock);
	dev_done_exit(&nq->done);
	free(nq);
}

static void null_fifo_push(struct null_dev *nd, struct mq_request *rq)
{
	struct null_cmd *cmd = mq_rq_pdu(rq);
	bool was_empty;

	cmd->due_ns = rq->start_ns + nd->cfg.latency_ns;
	cmd->next = NULL;
	mq_kthread_lock(&nd->timer);
	was_empty = !nd->head;
	if (nd->tail)
		((struct null_cmd *)mq_rq_pdu(nd->tail))->next = rq;
	else
		nd->head = rq;
	nd->tail = rq;
	if (was_empty)
		mq_kthread_kick_locked(&nd->timer);
	mq_kthread_unlock(&nd->timer);
}

static int null_queue_rq(struct mq_hw_queue *hctx, struct mq_request *rq,
			 bool last)
{
	struct null_dev *nd = to_null(mq_hctx_dev(hctx));
	struct null_queue *nq = mq_hctx_driver_data(hctx);

	if (nd->cfg.irqmode == MQ_NULL_IRQ_NONE) {
		dev_done_add(&nq->done, rq, 0, last);
		return 0;
	}
	atomic_fetch_add_explicit(&nd->inflight, 1, memory_order_relaxed);
	null_fifo_push(nd, rq);
	return 0;
}

static void null_commit_rqs(struct mq_hw_queue *hctx)
{
	struct null_queue *nq = mq_hctx_driver_data(hctx);

	dev_done_flush(&nq->done);
}

/* Pop up to @max requests due at @now (lock held). */
static unsigned null_pop_due(struct null_dev *nd, uint64_t now,
			     struct mq_request **out, unsigned max)
{
	unsigned n = 0;

	while (n < max && nd->head) {
		struct null_cmd *cmd = mq_rq_pdu(nd->head);

		if (cmd->due_ns > now)
			break;
		out[n++] = nd->head;
		nd->head = cmd->next;
		if (!nd->head)
			nd->tail = NULL;
	}
	return n;
}

static void null_complete(struct null_dev *nd, struct mq_request **rqs,
			  unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		rqs[i]->status = 0;
	atomic_fetch_sub_explicit(&nd->inflight, n, memory_order_relaxed);
	mq_complete_batch(rqs, n);
}

static void *null_timer_main(void *arg)
{
	struct null_dev *nd = arg;
	struct mq_request *batch[NULL_BATCH];

	/* Microsecond latencies need a tight timer, not the 50 us default. */
	prctl(PR_SET_TIMERSLACK, 1000UL);
	mq_kthread_lock(&nd->timer);
	while (!mq_kthread_should_stop_locked(&nd->timer)) {
		unsigned n;

		if (!nd->head) {
			mq_kthread_wait_locked(&nd->timer, 0);
			continue;
		}
		n = null_pop_due(nd, mq_clock_ns(), batch, NULL_BATCH);
		if (!n) {
			mq_kthread_wait_locked(&nd->timer, ((struct null_cmd *)
					       mq_rq_pdu(nd->head))->due_ns);
			continue;
		}
		mq_kthread_unlock(&nd->timer);
		pthread_mutex_lock(&nd->irq_lock);
		null_complete(nd, batch, n);
		pthread_mutex_unlock(&nd->irq_lock);
		mq_kthread_lock(&nd->timer);
	}
	mq_kthread_unlock(&nd->timer);
	return NULL;
}

unsigned mq_null_complete_due(struct mq_dev *dev)
{
	struct null_dev *nd = to_null(dev);
	struct mq_request *batch[NULL_BATCH];
	unsigned n, total = 0;

	do {
		mq_kthread_lock(&nd->timer);
		n = null_pop_due(nd, mq_clock_ns(), batch, NULL_BATCH);
		mq_kthread_unlock(&nd->timer);
		if (n)
			null_complete(nd, batch, n);
		total += n;
	} while (n);
	return total;
}

unsigned mq_null_inflight(struct mq_dev *dev)
{
	return atomic_load(&to_null(dev)->inflight);
}

static void null_close(struct mq_dev *dev)
{
	struct null_dev *nd = to_null(dev);

	mq_kthread_stop(&nd->timer);
	pthread_mutex_destroy(&nd->irq_lock);
	free(nd);
}

static const struct mq_dev_ops null_ops = {
	.name = "null",
	.queue_init = null_queue_init,
	.queue_exit = null_queue_exit,
	.queue_rq = null_queue_rq,
	.commit_rqs = null_commit_rqs,
	.close = null_close,
};

static void null_set_geometry(struct null_dev *nd)
{
	struct mq_null_config *c = &nd->cfg;

	if (!c->size_bytes)
		c->size_bytes = 1ull << 40;
	if (!c->queue_depth)
		c->queue_depth = 128;
	if (!c->nr_hw_queues)
		c->nr_hw_queues = 1;
	if (c->latency_ns && c->irqmode == MQ_NULL_IRQ_NONE)
		c->irqmode = MQ_NULL_IRQ_TIMER;
	nd->dev.geo = (struct mq_dev_geometry){
		.logical_block_size = 512, .physical_block_size = 4096,
		.size_bytes = c->size_bytes, .max_hw_sectors = 2048,
		.max_segments = 256, .nr_hw_queues = c->nr_hw_queues,
		.queue_depth = c->queue_depth, .flush = true,
		.discard = true, .write_zeroes = true,
	};
}

int mq_null_open(const struct mq_null_config *cfg, struct mq_dev **out)
{
	struct null_dev *nd = calloc(1, sizeof(*nd));
	int err;

	*out = NULL;
	if (!nd)
		return -ENOMEM;
	nd->cfg = *cfg;
	nd->dev.ops = &null_ops;
	nd->dev.rq_pdu_size = sizeof(struct null_cmd);
	snprintf(nd->dev.name, sizeof(nd->dev.name), "null");
	null_set_geometry(nd);
	/* MANUAL mode keeps the FIFO under the lock, with no thread. */
	mq_kthread_init(&nd->timer);
	pthread_mutex_init(&nd->irq_lock, NULL);
	if (nd->cfg.irqmode == MQ_NULL_IRQ_TIMER) {
		err = mq_kthread_start(&nd->timer, "null-timer",
				       null_timer_main, nd);
		if (err) {
			null_close(&nd->dev);
			return err;
		}
	}
	*out = &nd->dev;
	return 0;
}
