/* SPDX-License-Identifier: MIT */
/*
 * complete_task.c - completion in task context with delayed batching
 * (the kernel's BIO_COMPLETE_IN_TASK for dontcache writeback: commit
 * 77e73fa61b38, "block: add task-context bio completion infrastructure",
 * 2026).
 *
 * Some end_io work must not run where completions are reaped: dropping
 * write-behind buffers, extent and size updates, journal bookkeeping.  A
 * bio flagged MQ_REQ_COMPLETE_IN_TASK is queued to its hardware queue's
 * completion worker instead.  The worker is woken only when the list goes
 * from empty to non-empty, then waits complete_delay_us (default 1000, 0
 * allowed) so completions arrive in batches, then drains everything that
 * accumulated - swap the list out, end each bio, repeat until empty -
 * yielding between large batches.  Completions per run and wake-ups are
 * counted: they are the figures the kernel discussion was decided on.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "blk_i.h"
#include "mqfs/thread_stats.h"

#define TASK_YIELD_BATCH	256

struct mq_task_worker {
	struct mq_hw_queue *hctx;
	struct mq_kthread kt;
	struct mq_bio *head, *tail;	/* under kt's lock */
	long nr;
	_Atomic pid_t tid;		/* set by the worker; read by stats */
	_Atomic uint64_t runs, completed, wakeups;
};

static void task_sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts))
		;
}

/* End every bio of @bio's chain; returns how many. */
static long task_end_chain(struct mq_bio *bio)
{
	long n = 0;

	mq_in_completion++;
	while (bio) {
		struct mq_bio *next = bio->next;

		bio->next = NULL;
		bio->end_io(bio);
		bio = next;
		if (++n % TASK_YIELD_BATCH == 0)
			sched_yield();
	}
	mq_in_completion--;
	return n;
}

static void task_drain(struct mq_task_worker *w)
{
	struct mq_queue *q = w->hctx->q;

	for (;;) {
		struct mq_bio *list;
		long n;

		mq_kthread_lock(&w->kt);
		list = w->head;
		w->head = w->tail = NULL;
		w->nr = 0;
		mq_kthread_unlock(&w->kt);
		if (!list)
			return;
		n = task_end_chain(list);
		mq_stat_inc_shared(&w->runs, 1);
		mq_stat_inc_shared(&w->completed, (uint64_t)n);
		if (atomic_fetch_sub(&q->task_pending, n) == n)
			mq_queue_wake_waiters(q);
	}
}

static void *task_worker_main(void *arg)
{
	struct mq_task_worker *w = arg;
	struct mq_queue *q = w->hctx->q;

	atomic_store(&w->tid, mq_thread_id());
	mq_kthread_lock(&w->kt);
	for (;;) {
		/* A stop still drains what was queued. */
		while (!w->head && mq_kthread_wait_locked(&w->kt, 0))
			;
		if (!w->head)
			break;
		mq_kthread_unlock(&w->kt);
		mq_stat_inc_shared(&w->wakeups, 1);
		/* Let completions pile up: one wake-up for a batch. */
		uint64_t delay = atomic_load(&q->complete_delay_ns);

		if (delay)
			task_sleep_ns(delay);
		task_drain(w);
		mq_kthread_lock(&w->kt);
	}
	mq_kthread_unlock(&w->kt);
	return NULL;
}

void mq_task_defer(struct mq_hw_queue *hctx, struct mq_bio *head,
		   struct mq_bio *tail, long nr)
{
	struct mq_task_worker *w = hctx->task;
	bool was_empty;

	atomic_fetch_add(&hctx->q->task_pending, nr);
	mq_kthread_lock(&w->kt);
	was_empty = !w->head;
	if (w->tail)
		w->tail->next = head;
	else
		w->head = head;
	w->tail = tail;
	w->nr += nr;
	if (was_empty)
		mq_kthread_kick_locked(&w->kt);
	mq_kthread_unlock(&w->kt);
}

struct mq_task_worker *mq_task_worker_start(struct mq_hw_queue *hctx)
{
	struct mq_task_worker *w = calloc(1, sizeof(*w));
	char name[16];

	if (!w)
		return NULL;
	w->hctx = hctx;
	snprintf(name, sizeof(name), "mq-done%u", hctx->index);
	mq_kthread_init(&w->kt);
	if (mq_kthread_start(&w->kt, name, task_worker_main, w)) {
		mq_kthread_stop(&w->kt);
		free(w);
		return NULL;
	}
	return w;
}

void mq_task_worker_stop(struct mq_task_worker *w)
{
	if (!w)
		return;
	mq_kthread_stop(&w->kt);
	free(w);
}

void mq_task_worker_stats(struct mq_task_worker *w, struct mq_queue_stats *s)
{
	s->task_runs += atomic_load(&w->runs);
	s->task_completions += atomic_load(&w->completed);
	s->task_wakeups += atomic_load(&w->wakeups);
	s->task_worker_cs += mq_thread_cs(atomic_load(&w->tid));
}
