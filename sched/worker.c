/* SPDX-License-Identifier: MIT */
/*
 * worker.c - the per-hardware-queue worker thread (the kernel's kblockd
 * run_work).  Only queue runs that cannot happen in the caller go here:
 * a busy queue, a delayed restart after a driver resource shortage, or
 * the async_run A/B switch.  Each hand-off costs a context switch, which
 * is why the synchronous run is the default.
 */
#include <errno.h>
#include <time.h>
#include "blk_i.h"

static void worker_deadline(struct timespec *ts, uint64_t until_ns)
{
	/* Condition variables below use CLOCK_MONOTONIC. */
	ts->tv_sec = (time_t)(until_ns / 1000000000ull);
	ts->tv_nsec = (long)(until_ns % 1000000000ull);
}

static void *worker_main(void *arg)
{
	struct mq_hw_queue *hctx = arg;

	pthread_mutex_lock(&hctx->wlock);
	while (!hctx->wstop) {
		uint64_t now = mq_clock_real_ns();
		struct timespec ts;

		if (!hctx->wpending) {
			pthread_cond_wait(&hctx->wcond, &hctx->wlock);
			continue;
		}
		if (hctx->wdelay_until > now) {
			worker_deadline(&ts, hctx->wdelay_until);
			pthread_cond_timedwait(&hctx->wcond, &hctx->wlock, &ts);
			continue;
		}
		hctx->wpending = false;
		pthread_mutex_unlock(&hctx->wlock);
		mq_run_hw_queue_worker(hctx);
		pthread_mutex_lock(&hctx->wlock);
	}
	pthread_mutex_unlock(&hctx->wlock);
	return NULL;
}

int mq_hctx_worker_start(struct mq_hw_queue *hctx)
{
	pthread_condattr_t ca;
	int ret;

	pthread_mutex_init(&hctx->wlock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&hctx->wcond, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&hctx->worker, NULL, worker_main, hctx);
	if (ret) {
		pthread_cond_destroy(&hctx->wcond);
		pthread_mutex_destroy(&hctx->wlock);
		return -ret;
	}
	return 0;
}

void mq_hctx_worker_stop(struct mq_hw_queue *hctx)
{
	pthread_mutex_lock(&hctx->wlock);
	hctx->wstop = true;
	pthread_cond_signal(&hctx->wcond);
	pthread_mutex_unlock(&hctx->wlock);
	pthread_join(hctx->worker, NULL);
	pthread_cond_destroy(&hctx->wcond);
	pthread_mutex_destroy(&hctx->wlock);
}

/* Ask the worker for a run, at once or after @delay_ns. */
void mq_hctx_kick_worker(struct mq_hw_queue *hctx, uint64_t delay_ns)
{
	uint64_t until = delay_ns ? mq_clock_real_ns() + delay_ns : 0;

	pthread_mutex_lock(&hctx->wlock);
	if (!hctx->wpending || until < hctx->wdelay_until) {
		hctx->wdelay_until = until;
		if (!hctx->wpending)
			hctx->wpending = true;
		pthread_cond_signal(&hctx->wcond);
	}
	pthread_mutex_unlock(&hctx->wlock);
}
