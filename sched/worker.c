/* SPDX-License-Identifier: MIT */
/*
 * worker.c - the per-hardware-queue worker thread (the kernel's kblockd
 * run_work).  Only queue runs that cannot happen in the caller go here:
 * a busy queue, a delayed restart after a driver resource shortage, or
 * the async_run A/B switch.  Each hand-off costs a context switch, which
 * is why the synchronous run is the default.
 *
 * wpending and wdelay_until live under the worker's own lock (a leaf).
 */
#include <stdio.h>
#include "blk_i.h"

static void *worker_main(void *arg)
{
	struct mq_hw_queue *hctx = arg;
	struct mq_kthread *kt = &hctx->worker;

	mq_kthread_lock(kt);
	while (!mq_kthread_should_stop_locked(kt)) {
		if (!hctx->wpending ||
		    hctx->wdelay_until > mq_clock_real_ns()) {
			mq_kthread_wait_locked(kt, hctx->wpending ?
						   hctx->wdelay_until : 0);
			continue;
		}
		hctx->wpending = false;
		mq_kthread_unlock(kt);
		mq_run_hw_queue_worker(hctx);
		mq_kthread_lock(kt);
	}
	mq_kthread_unlock(kt);
	return NULL;
}

int mq_hctx_worker_start(struct mq_hw_queue *hctx)
{
	char name[16];
	int ret;

	snprintf(name, sizeof(name), "mq-run%u", hctx->index);
	mq_kthread_init(&hctx->worker);
	ret = mq_kthread_start(&hctx->worker, name, worker_main, hctx);
	if (ret)
		mq_kthread_stop(&hctx->worker);
	return ret;
}

void mq_hctx_worker_stop(struct mq_hw_queue *hctx)
{
	mq_kthread_stop(&hctx->worker);
}

/* Ask the worker for a run, at once or after @delay_ns. */
void mq_hctx_kick_worker(struct mq_hw_queue *hctx, uint64_t delay_ns)
{
	uint64_t until = delay_ns ? mq_clock_real_ns() + delay_ns : 0;

	mq_kthread_lock(&hctx->worker);
	if (!hctx->wpending || until < hctx->wdelay_until) {
		hctx->wdelay_until = until;
		hctx->wpending = true;
		mq_kthread_kick_locked(&hctx->worker);
	}
	mq_kthread_unlock(&hctx->worker);
}
