/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c - running a hardware queue: from the dispatch list and the
 * elevator to the driver (the kernel's blk-mq-sched.c dispatch and
 * blk_mq_dispatch_rq_list).
 *
 * Rules kept from the kernel:
 *  - leftovers on hctx->dispatch go first, and while they cannot all be
 *    issued the elevator is not touched ("once we pull requests out of the
 *    IO scheduler, we can no longer merge or sort them");
 *  - the elevator is dequeued one request at a time and dequeuing stops the
 *    moment no driver tag is free, so queued requests keep merging;
 *  - dispatch_busy is an EWMA (weight 8, factor 4) of busy outcomes; a busy
 *    queue dispatches one request per pass;
 *  - a completion that frees a tag re-runs a queue marked SCHED_RESTART.
 *
 * One run of a hardware queue at a time: run_state is a three-state flag,
 * and whoever finds a run in progress only asks it for another pass.  No
 * lock is held while the driver runs, so completions may arrive inline.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "blk_i.h"
#include "elv_i.h"

#define DISPATCH_EWMA_WEIGHT	8
#define DISPATCH_EWMA_FACTOR	4

/* Written only by the runner; submitters read it without a lock. */
static void dispatch_update_busy(struct mq_hw_queue *hctx, bool busy)
{
	unsigned ewma = atomic_load_explicit(&hctx->dispatch_busy,
					     memory_order_relaxed);

	if (!ewma && !busy)
		return;
	ewma *= DISPATCH_EWMA_WEIGHT - 1;
	if (busy)
		ewma += 1u << DISPATCH_EWMA_FACTOR;
	atomic_store_explicit(&hctx->dispatch_busy, ewma / DISPATCH_EWMA_WEIGHT,
			      memory_order_relaxed);
}

static unsigned dispatch_hist_bucket(unsigned n)
{
	unsigned b = 0;

	while (n && b < MQ_DISPATCH_HIST - 1) {
		n >>= 1;
		b++;
	}
	return b;
}

static void dispatch_account(struct mq_hw_queue *hctx, struct mq_request *rq,
			     uint64_t now)
{
	enum mq_dir dir = mq_rq_dir(rq);

	rq->start_ns = now;
	rq->rq_flags |= MQ_RQF_STARTED;
	mq_stat_add(&hctx->rstats.dispatched[dir], 1);
	mq_stat_add(&hctx->rstats.queue_ns[dir], now - rq->alloc_ns);
}

/* Has @hctx requests at the driver (for the busy time)? */
static bool dispatch_hctx_busy(struct mq_hw_queue *hctx)
{
	uint64_t disp = 0, done = 0;

	for (int d = 0; d < MQ_DIR_COUNT; d++) {
		disp += atomic_load_explicit(&hctx->rstats.dispatched[d],
					     memory_order_relaxed);
		done += atomic_load_explicit(&hctx->dstats.ios[d],
					     memory_order_relaxed);
	}
	return disp > done;
}

/* The driver refused @rq: take back what dispatch_account() counted. */
static void dispatch_unaccount(struct mq_hw_queue *hctx,
			       struct mq_request *rq, uint64_t now)
{
	enum mq_dir dir = mq_rq_dir(rq);

	rq->rq_flags &= ~MQ_RQF_STARTED;
	mq_stat_add(&hctx->rstats.dispatched[dir], (uint64_t)-1);
	mq_stat_add(&hctx->rstats.queue_ns[dir], -(now - rq->alloc_ns));
}

/* Put leftovers back at the head of the dispatch list. */
static void dispatch_requeue(struct mq_hw_queue *hctx, struct mq_rq_list *l)
{
	struct mq_list_head tmp;
	struct mq_request *rq;
	unsigned n = 0;

	mq_list_init(&tmp);
	while ((rq = mq_rq_list_pop(l))) {
		mq_list_add_tail(&rq->queuelist, &tmp);
		n++;
	}
	pthread_mutex_lock(&hctx->lock);
	mq_list_splice_tail_init(&hctx->dispatch, &tmp);
	mq_list_splice_tail_init(&tmp, &hctx->dispatch);
	atomic_fetch_add(&hctx->nr_dispatch, n);
	pthread_mutex_unlock(&hctx->lock);
	mq_stat_add(&hctx->rstats.requeues, n);
}

/*
 * Leftovers wait for a completion to free a tag.  Mark the restart, then
 * look again: a tag freed between our failure and the mark would
 * otherwise restart nobody.
 */
static bool dispatch_mark_restart(struct mq_hw_queue *hctx, bool no_tag)
{
	atomic_store(&hctx->sched_restart, true);
	atomic_thread_fence(memory_order_seq_cst);
	if (no_tag)
		return mq_tags_have_free(hctx->tags);
	/*
	 * Driver busy: it may hold nothing of ours to complete, and the tag
	 * count cannot tell (the requeued requests keep their driver tags),
	 * so retry later, as the kernel does for BLK_STS_RESOURCE.
	 */
	mq_hctx_kick_worker(hctx, MQ_RESOURCE_DELAY_NS);
	return false;
}

/*
 * Issue @list to the driver.  Returns true when everything was issued;
 * otherwise the rest is back on hctx->dispatch and *rerun says whether to
 * try again at once.
 */
static bool dispatch_rq_list(struct mq_hw_queue *hctx, struct mq_rq_list *list,
			     bool *rerun)
{
	const struct mq_dev_ops *ops = hctx->q->dev->ops;
	uint64_t now = mq_clock_ns();
	struct mq_request *rq;
	bool no_tag = false, busy = false, need_commit = false;
	unsigned queued = 0;

	if (list->head)
		mq_busy_update(&hctx->dstats, now, dispatch_hctx_busy(hctx));

	while ((rq = list->head)) {
		int ret;

		if (!mq_get_driver_tag(rq)) {
			no_tag = true;
			break;
		}
		mq_rq_list_pop(list);
		dispatch_account(hctx, rq, now);
		ret = ops->queue_rq(hctx, rq, list->head == NULL);
		if (ret == 0) {
			queued++;
			need_commit = list->head != NULL;
			continue;
		}
		if (ret == MQ_DEV_BUSY || ret == -EAGAIN) {
			dispatch_unaccount(hctx, rq, now);
			mq_rq_list_add_head(list, rq);
			busy = true;
			break;
		}
		mq_complete_request(rq, ret);
	}
	if (need_commit && ops->commit_rqs)
		ops->commit_rqs(hctx);
	if (queued) {
		mq_stat_add(&hctx->rstats.dispatch_runs, 1);
		mq_stat_add(&hctx->rstats.dispatch_hist[dispatch_hist_bucket(queued)], 1);
	}
	dispatch_update_busy(hctx, busy || no_tag);
	if (mq_rq_list_empty(list))
		return true;
	dispatch_requeue(hctx, list);
	*rerun = dispatch_mark_restart(hctx, no_tag);
	return false;
}

/* Issue a list that did not go through an elevator (plug fast path). */
static bool dispatch_list_direct(struct mq_hw_queue *hctx,
				 struct mq_rq_list *list)
{
	bool rerun = false;

	dispatch_rq_list(hctx, list, &rerun);
	return rerun;
}

static bool dispatch_take_leftovers(struct mq_hw_queue *hctx,
				    struct mq_rq_list *l)
{
	struct mq_request *rq;

	if (!atomic_load_explicit(&hctx->nr_dispatch, memory_order_acquire))
		return false;
	pthread_mutex_lock(&hctx->lock);
	mq_list_for_each_entry_safe(rq, &hctx->dispatch, queuelist) {
		mq_list_del_init(&rq->queuelist);
		mq_rq_list_add_tail(l, rq);
	}
	atomic_store(&hctx->nr_dispatch, 0);
	pthread_mutex_unlock(&hctx->lock);
	return !mq_rq_list_empty(l);
}

/*
 * The elevator has work but gave none (it holds a lower priority back
 * while a higher one is in flight): no completion is bound to re-run us,
 * so retry after a delay, as the kernel's BLK_MQ_BUDGET_DELAY run.
 */
static void dispatch_held_back(struct mq_hw_queue *hctx,
			       struct mq_elevator *e)
{
	if (e->type->ops->has_work(e))
		mq_hctx_kick_worker(hctx, MQ_RESOURCE_DELAY_NS);
}

/*
 * Dequeue from the elevator until it is empty, the device is busy or
 * leftovers appeared.  Returns true when another pass is wanted.
 */
static bool dispatch_sched(struct mq_hw_queue *hctx)
{
	struct mq_queue *q = hctx->q;
	struct mq_elevator *e = hctx->elevator;

	for (;;) {
		unsigned max = hctx->dispatch_busy ? 1 : q->nr_requests;
		struct mq_rq_list list = { 0 };
		struct mq_request *rq;
		unsigned count = 0;
		bool rerun = false;

		if (!e->type->ops->has_work(e))
			return false;
		pthread_mutex_lock(&e->lock);
		while (count < max &&
		       !atomic_load_explicit(&hctx->nr_dispatch,
					     memory_order_relaxed) &&
		       (rq = e->type->ops->dispatch_request(e))) {
			mq_rq_list_add_tail(&list, rq);
			count++;
			if (!mq_get_driver_tag(rq))
				break;
		}
		pthread_mutex_unlock(&e->lock);
		if (!count) {
			dispatch_held_back(hctx, e);
			return false;
		}
		if (!dispatch_rq_list(hctx, &list, &rerun))
			return rerun;
	}
}

static void issue_to_dispatch_list(struct mq_hw_queue *hctx,
				   struct mq_rq_list *list);

/*
 * The eager_dispatch A/B switch: what dispatch did before the kernel
 * learned to leave requests in the elevator while the device is busy -
 * pull everything out onto the dispatch list, where it can no longer
 * merge or be sorted.
 */
static void dispatch_drain_elevator(struct mq_hw_queue *hctx)
{
	struct mq_elevator *e = hctx->elevator;
	struct mq_rq_list list = { 0 };
	struct mq_request *rq;

	pthread_mutex_lock(&e->lock);
	while ((rq = e->type->ops->dispatch_request(e)))
		mq_rq_list_add_tail(&list, rq);
	pthread_mutex_unlock(&e->lock);
	if (!mq_rq_list_empty(&list))
		issue_to_dispatch_list(hctx, &list);
	dispatch_held_back(hctx, e);
}

/* One pass: leftovers first, then the elevator.  True: pass again. */
static bool dispatch_once(struct mq_hw_queue *hctx)
{
	struct mq_rq_list left = { 0 };
	bool rerun = false;
	bool eager = hctx->elevator && hctx->q->cfg.eager_dispatch;

	if (eager)
		dispatch_drain_elevator(hctx);

	if (dispatch_take_leftovers(hctx, &left)) {
		atomic_store(&hctx->sched_restart, true);
		if (!dispatch_rq_list(hctx, &left, &rerun))
			return rerun;
		atomic_store(&hctx->sched_restart, false);
	}
	if (hctx->elevator && !eager)
		return dispatch_sched(hctx);
	return false;
}

static bool hctx_has_work(struct mq_hw_queue *hctx)
{
	struct mq_elevator *e = hctx->elevator;

	return atomic_load(&hctx->nr_dispatch) ||
	       (e && e->type->ops->has_work(e));
}

/* Become the runner, or ask the current runner for another pass. */
static bool run_claim(struct mq_hw_queue *hctx)
{
	int s = atomic_load(&hctx->run_state);

	for (;;) {
		int want = s == MQ_RUN_IDLE ? MQ_RUN_RUNNING : MQ_RUN_RERUN;

		if (s == MQ_RUN_RERUN)
			return false;
		if (atomic_compare_exchange_weak(&hctx->run_state, &s, want))
			return s == MQ_RUN_IDLE;
	}
}

/* Give up the run unless someone asked for another pass meanwhile. */
static bool run_release(struct mq_hw_queue *hctx)
{
	int s = MQ_RUN_RUNNING;

	if (atomic_compare_exchange_strong(&hctx->run_state, &s, MQ_RUN_IDLE))
		return true;
	atomic_store(&hctx->run_state, MQ_RUN_RUNNING);
	return false;
}


/*
 * We own the run: issue @direct (a plug batch that bypassed the elevator)
 * unless leftovers must go first, then pass until nothing is left to do
 * and nobody asked for another pass.
 */
static void run_owned(struct mq_hw_queue *hctx, struct mq_rq_list *direct)
{
	bool again = false;

	if (mq_unlikely(atomic_load(&hctx->q->quiesced))) {
		if (direct)
			issue_to_dispatch_list(hctx, direct);
		atomic_store(&hctx->run_state, MQ_RUN_IDLE);
		return;
	}
	if (direct) {
		if (atomic_load(&hctx->nr_dispatch))
			issue_to_dispatch_list(hctx, direct);
		else
			again = dispatch_list_direct(hctx, direct);
	}
	do {
		while (again || hctx_has_work(hctx)) {
			again = dispatch_once(hctx);
			if (!again)
				break;
		}
		again = false;
	} while (!run_release(hctx));
}

static void run_sync(struct mq_hw_queue *hctx)
{
	if (run_claim(hctx))
		run_owned(hctx, NULL);
}

void mq_run_hw_queue(struct mq_hw_queue *hctx, bool async)
{
	if (!hctx_has_work(hctx))
		return;
	if (async || hctx->q->cfg.async_run) {
		mq_hctx_kick_worker(hctx, 0);
		return;
	}
	mq_stat_inc_shared(&hctx->rstats.run_sync, 1);
	run_sync(hctx);
}

/* The queue worker's pass (async run). */
void mq_run_hw_queue_worker(struct mq_hw_queue *hctx)
{
	mq_stat_inc_shared(&hctx->rstats.run_async, 1);
	run_sync(hctx);
}

void mq_run_hw_queues(struct mq_queue *q, bool async)
{
	for (unsigned i = 0; i < q->nr_hw_queues; i++)
		mq_run_hw_queue(q->hctxs[i], async);
}

/* Move @list to the dispatch list (another thread is running the queue). */
static void issue_to_dispatch_list(struct mq_hw_queue *hctx,
				   struct mq_rq_list *list)
{
	struct mq_request *rq;
	unsigned n = 0;

	pthread_mutex_lock(&hctx->lock);
	while ((rq = mq_rq_list_pop(list))) {
		mq_list_add_tail(&rq->queuelist, &hctx->dispatch);
		n++;
	}
	atomic_fetch_add(&hctx->nr_dispatch, n);
	pthread_mutex_unlock(&hctx->lock);
}

/*
 * No elevator: hand the batch straight to the driver (one doorbell), as
 * the kernel's plug fast path.  If another thread is running the queue,
 * the batch goes on the dispatch list first and the runner is asked for
 * another pass, so nothing is lost and order is kept.
 */
void mq_issue_list(struct mq_hw_queue *hctx, struct mq_rq_list *list)
{
	if (hctx->q->cfg.async_run) {
		issue_to_dispatch_list(hctx, list);
		mq_hctx_kick_worker(hctx, 0);
		return;
	}
	mq_stat_inc_shared(&hctx->rstats.run_sync, 1);
	if (run_claim(hctx)) {
		run_owned(hctx, list);
		return;
	}
	issue_to_dispatch_list(hctx, list);
	run_sync(hctx);
}

/*
 * Elevator path: insert the batch under one hold of the elevator lock,
 * free what merged at insert, then run the queue - synchronously from the
 * inserting thread unless the queue is busy: punting every run to a worker
 * cost one context switch per I/O.  The kernel's unplugged inserts did so
 * after commit 9cbbac29d752 ("block: Remove redundant plug in
 * __submit_bio()"); the 2026 patch "blk-mq: run the hw queue synchronously
 * for unplugged scheduler inserts" (Message-ID
 * 20260930-bug-blk-mq-noplug-sched-dispatch-v1-1-ff1e49e52b00@gmail.com)
 * runs them synchronously; no merged commit of it was found.
 */
void mq_insert_requests(struct mq_hw_queue *hctx, struct mq_rq_list *list,
			bool at_head, bool run_async)
{
	struct mq_queue *q = hctx->q;
	struct mq_sw_ctx *ctx = mq_ctx_current(q);
	struct mq_elevator *e = hctx->elevator;
	struct mq_list_head lh, freed;
	struct mq_request *rq;

	/*
	 * Once inserted, the requests may complete and drop the last usage
	 * reference before the run below looks at the elevator, which a
	 * switch may then free: hold a reference of our own meanwhile, as
	 * blk_mq_dispatch_plug_list() does.  The requests hold references,
	 * so no freeze can have completed: no need to wait for one.
	 */
	mq_queue_ref_get(ctx, 1);
	mq_list_init(&lh);
	mq_list_init(&freed);
	while ((rq = mq_rq_list_pop(list)))
		mq_list_add_tail(&rq->queuelist, &lh);
	pthread_mutex_lock(&e->lock);
	e->type->ops->insert_requests(e, &lh, at_head, &freed);
	pthread_mutex_unlock(&e->lock);
	mq_list_for_each_entry_safe(rq, &freed, queuelist) {
		mq_list_del_init(&rq->queuelist);
		mq_stat_inc_shared(&rq->ctx->stats.rq_merges, 1);
		mq_free_request(rq);
	}
	mq_run_hw_queue(hctx, run_async || hctx->dispatch_busy);
	mq_queue_exit(q, ctx, 1);
}
