/* SPDX-License-Identifier: MIT */
/*
 * queue.c - a request queue's life: creation on a device, the software
 * and hardware contexts, freezing (drain and hold off new requests), the
 * live elevator switch (tunables and statistics are in sysfs.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include "blk_i.h"
#include "elv_i.h"
#include "mqfs/lock.h"

static _Thread_local int task_slot = -1;
static atomic_uint next_task_slot;

/* Threads get slots in arrival order, as CPUs have numbers. */
struct mq_sw_ctx *mq_ctx_current(struct mq_queue *q)
{
	if (mq_unlikely(task_slot < 0))
		task_slot = (int)(atomic_fetch_add(&next_task_slot, 1) %
				  MQ_NR_CTX);
	return &q->ctxs[task_slot];
}

static _Thread_local int task_poll_queue = -1;

int mq_set_task_poll_queue(int index)
{
	int old = task_poll_queue;

	task_poll_queue = index < 0 ? -1 : index;
	return old;
}

struct mq_sw_ctx *mq_ctx_poll(struct mq_queue *q)
{
	if (task_poll_queue < 0 || !q->nr_poll_queues)
		return NULL;
	return &q->ctxs[MQ_NR_CTX + (unsigned)task_poll_queue %
					q->nr_poll_queues];
}

unsigned mq_queue_nr_poll_queues(const struct mq_queue *q)
{
	return q->nr_poll_queues;
}

bool mq_queue_polls_used(const struct mq_queue *q)
{
	return atomic_load_explicit(&q->polls_used, memory_order_acquire);
}

_Thread_local unsigned mq_in_completion;

void mq_queue_enter(struct mq_queue *q, struct mq_sw_ctx *ctx, long nr)
{
	if (mq_unlikely(mq_in_completion)) {
		/* Safe: our completion's reference keeps the freeze waiting. */
		mq_queue_ref_get(ctx, nr);
		return;
	}
	for (;;) {
		/* Dekker with the freezer: count first, then look. */
		atomic_fetch_add(&ctx->usage, nr);
		if (mq_likely(!atomic_load(&q->frozen)))
			return;
		/* A freeze started: step back and wait it out. */
		mq_queue_exit(q, ctx, nr);
		/* Our plugged and cached requests hold references too. */
		mq_flush_plug();
		pthread_mutex_lock(&q->freeze_lock);
		while (atomic_load(&q->frozen))
			pthread_cond_wait(&q->freeze_cond, &q->freeze_lock);
		pthread_mutex_unlock(&q->freeze_lock);
	}
}

void mq_queue_exit(struct mq_queue *q, struct mq_sw_ctx *ctx, long nr)
{
	/* seq_cst: pairs with the waiter's usage_waiters++ then sum. */
	long left = atomic_fetch_sub(&ctx->usage, nr) - nr;

	MQ_ASSERT(left >= 0);
	if (left == 0)
		mq_queue_wake_waiters(q);
}

/* A counter a freeze or drain waits on reached zero. */
void mq_queue_wake_waiters(struct mq_queue *q)
{
	if (!atomic_load(&q->usage_waiters))
		return;
	pthread_mutex_lock(&q->freeze_lock);
	pthread_cond_broadcast(&q->freeze_cond);
	pthread_mutex_unlock(&q->freeze_lock);
}

static long queue_usage(struct mq_queue *q)
{
	long sum = 0;

	for (unsigned i = 0; i < mq_queue_nr_ctxs(q); i++)
		sum += atomic_load(&q->ctxs[i].usage);
	return sum;
}

/*
 * A polled queue's requests complete only when polled: reap them here.
 * Nothing in flight (references held by plugs, the dispatch list or the
 * completion worker): wait for a wake-up, but not for long, since a
 * request issued meanwhile (by the queue worker) needs polling again.
 */
static void queue_poll_wait_locked(struct mq_queue *q)
{
	struct timespec ts;
	unsigned n;

	pthread_mutex_unlock(&q->freeze_lock);
	n = mq_queue_poll_all(q);
	pthread_mutex_lock(&q->freeze_lock);
	if (n)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 1000000;		/* 1 ms */
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_nsec -= 1000000000L;
		ts.tv_sec++;
	}
	pthread_cond_timedwait(&q->freeze_cond, &q->freeze_lock, &ts);
}

static void queue_wait_unused(struct mq_queue *q)
{
	mq_flush_plug();
	atomic_fetch_add(&q->usage_waiters, 1);
	pthread_mutex_lock(&q->freeze_lock);
	while (queue_usage(q) != 0 || atomic_load(&q->task_pending)) {
		if (q->polled || mq_queue_polls_used(q))
			queue_poll_wait_locked(q);
		else
			pthread_cond_wait(&q->freeze_cond, &q->freeze_lock);
	}
	pthread_mutex_unlock(&q->freeze_lock);
	atomic_fetch_sub(&q->usage_waiters, 1);
}

void mq_queue_drain(struct mq_queue *q)
{
	queue_wait_unused(q);
}

void mq_queue_freeze(struct mq_queue *q)
{
	atomic_store(&q->frozen, true);
	queue_wait_unused(q);
}

void mq_queue_unfreeze(struct mq_queue *q)
{
	pthread_mutex_lock(&q->freeze_lock);
	atomic_store(&q->frozen, false);
	pthread_cond_broadcast(&q->freeze_cond);
	pthread_mutex_unlock(&q->freeze_lock);
}

/* No queue run may touch the elevator while it is replaced. */
static void queue_quiesce(struct mq_queue *q)
{
	atomic_store(&q->quiesced, true);
	for (unsigned i = 0; i < q->nr_hw_queues; i++)
		while (atomic_load(&q->hctxs[i]->run_state) != MQ_RUN_IDLE)
			sched_yield();
}

static void queue_unquiesce(struct mq_queue *q)
{
	atomic_store(&q->quiesced, false);
	mq_run_hw_queues(q, false);
}

static void hctx_elv_detach(struct mq_hw_queue *hctx)
{
	if (hctx->elevator)
		mq_elv_free(hctx->elevator);
	hctx->elevator = NULL;
	mq_tags_free(hctx->sched_tags);
	hctx->sched_tags = NULL;
}

static void elv_detach(struct mq_queue *q)
{
	for (unsigned i = 0; i < q->nr_hw_queues; i++)
		hctx_elv_detach(q->hctxs[i]);
	q->elv_type = NULL;
}

/*
 * One elevator instance per hardware queue, each with its own lock and
 * scheduler tags: threads mapped to different hardware queues never share
 * a lock, and a run dispatches only its own queue's requests.
 */
static int hctx_elv_attach(struct mq_hw_queue *hctx,
			   const struct mq_elevator_type *t)
{
	struct mq_queue *q = hctx->q;

	hctx->sched_tags = mq_tags_alloc(q->nr_requests, q->dev->rq_pdu_size);
	if (!hctx->sched_tags)
		return -ENOMEM;
	hctx->elevator = mq_elv_alloc(t, q, q->nr_requests, q->limits.max_bytes,
				      q->limits.max_segs, q->cfg.no_merges);
	if (!hctx->elevator) {
		hctx_elv_detach(hctx);
		return -ENOMEM;
	}
	mq_tags_update_shallow(hctx);
	return 0;
}

static int elv_attach(struct mq_queue *q, const struct mq_elevator_type *t)
{
	if (!t)
		return 0;
	for (unsigned i = 0; i < q->nr_hw_queues; i++) {
		if (hctx_elv_attach(q->hctxs[i], t)) {
			elv_detach(q);
			return -ENOMEM;
		}
	}
	q->elv_type = t;
	return 0;
}

/* "none" is the absence of an elevator; NULL type with 0 for it. */
static int elv_lookup(const char *name, const struct mq_elevator_type **t)
{
	char buf[32];
	size_t n = strcspn(name, " \n");

	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, name, n);
	buf[n] = '\0';
	*t = NULL;
	if (!strcmp(buf, "none"))
		return 0;
	*t = mq_elv_find(buf);
	return *t ? 0 : -EINVAL;
}

int mq_queue_switch_elevator(struct mq_queue *q, const char *name)
{
	const struct mq_elevator_type *t;
	int ret = elv_lookup(name, &t);

	if (ret)
		return ret;
	mq_flush_plug();	/* another switch may wait for our plug */
	pthread_mutex_lock(&q->attr_lock);
	/* The elevator already in place stays, tunables and all. */
	if (t != q->elv_type) {
		mq_queue_freeze(q);
		queue_quiesce(q);
		elv_detach(q);
		ret = elv_attach(q, t);
		queue_unquiesce(q);
		mq_queue_unfreeze(q);
	}
	pthread_mutex_unlock(&q->attr_lock);
	return ret;
}

/*
 * nr_requests: the scheduler tag space of every hardware queue is
 * reallocated with the queue frozen (no request alive, so no tag held),
 * and each elevator instance hears the new depth (mq-deadline resets
 * async_depth to it, as the kernel does).
 */
int mq_queue_set_nr_requests(struct mq_queue *q, unsigned nr)
{
	int ret = 0;

	if (nr < MQ_MIN_NR_REQUESTS || nr > MQ_MAX_NR_REQUESTS)
		return -EINVAL;
	mq_flush_plug();	/* another switch may wait for our plug */
	pthread_mutex_lock(&q->attr_lock);
	mq_queue_freeze(q);
	queue_quiesce(q);
	for (unsigned i = 0; i < q->nr_hw_queues && !ret; i++) {
		struct mq_hw_queue *hctx = q->hctxs[i];
		struct mq_tags *t;

		if (!hctx->elevator)
			continue;
		t = mq_tags_alloc(nr, q->dev->rq_pdu_size);
		if (!t) {
			ret = -ENOMEM;
			break;
		}
		mq_tags_free(hctx->sched_tags);
		hctx->sched_tags = t;
		if (hctx->elevator->type->ops->depth_updated)
			hctx->elevator->type->ops->depth_updated(hctx->elevator,
								 nr);
		mq_tags_update_shallow(hctx);
	}
	if (!ret)
		q->nr_requests = nr;
	queue_unquiesce(q);
	mq_queue_unfreeze(q);
	pthread_mutex_unlock(&q->attr_lock);
	return ret;
}

const char *mq_queue_elevator_name(const struct mq_queue *q)
{
	return q->elv_type ? q->elv_type->name : "none";
}

uint64_t mq_queue_size_bytes(const struct mq_queue *q)
{
	return q->dev->geo.size_bytes;
}

bool mq_queue_read_only(const struct mq_queue *q)
{
	return q->dev->geo.read_only;
}

uint32_t mq_queue_logical_block_size(const struct mq_queue *q)
{
	return q->dev->geo.logical_block_size ? q->dev->geo.logical_block_size
					      : MQ_SECTOR_SIZE;
}

static int hctx_alloc(struct mq_queue *q, unsigned index,
		      struct mq_hw_queue **out)
{
	struct mq_hw_queue *hctx = aligned_alloc(MQ_CACHELINE,
				MQ_ALIGN_UP(sizeof(*hctx), (size_t)MQ_CACHELINE));
	int err = -ENOMEM;

	if (!hctx)
		return -ENOMEM;
	memset(hctx, 0, sizeof(*hctx));
	hctx->q = q;
	hctx->index = index;
	hctx->polled = mq_dev_queue_polled(q->dev, index);
	mq_lock_init_short(&hctx->lock);
	mq_list_init(&hctx->dispatch);
	hctx->tags = mq_tags_alloc(q->queue_depth, q->dev->rq_pdu_size);
	if (!hctx->tags)
		goto err_free;
	err = q->dev->ops->queue_init(q->dev, index, &hctx->driver_data);
	if (err)
		goto err_tags;
	err = mq_hctx_worker_start(hctx);
	if (err)
		goto err_exit;
	hctx->task = mq_task_worker_start(hctx);
	err = -ENOMEM;
	if (!hctx->task)
		goto err_worker;
	*out = hctx;
	return 0;
err_worker:
	mq_hctx_worker_stop(hctx);
err_exit:
	q->dev->ops->queue_exit(q->dev, index, hctx->driver_data);
err_tags:
	mq_tags_free(hctx->tags);
err_free:
	pthread_mutex_destroy(&hctx->lock);
	free(hctx);
	return err < 0 ? err : -EIO;
}

static void hctx_free(struct mq_hw_queue *hctx)
{
	struct mq_queue *q = hctx->q;

	mq_task_worker_stop(hctx->task);
	mq_hctx_worker_stop(hctx);
	q->dev->ops->queue_exit(q->dev, hctx->index, hctx->driver_data);
	MQ_ASSERT(mq_list_empty(&hctx->dispatch));
	MQ_ASSERT(mq_sbitmap_weight(&hctx->tags->bitmap.sb) == 0);
	mq_tags_free(hctx->tags);
	pthread_mutex_destroy(&hctx->lock);
	free(hctx);
}

static void queue_set_limits(struct mq_queue *q)
{
	const struct mq_dev_geometry *g = &q->dev->geo;
	uint64_t kb = q->cfg.max_sectors_kb ? q->cfg.max_sectors_kb
					    : MQ_DEFAULT_MAX_SECTORS_KB;
	uint64_t bytes = kb * 1024;

	if (g->max_hw_sectors && bytes > (uint64_t)g->max_hw_sectors << 9)
		bytes = (uint64_t)g->max_hw_sectors << 9;
	q->limits.max_bytes = (uint32_t)bytes;
	q->limits.max_segs = g->max_segments ? g->max_segments : 128;
}

/* -EOPNOTSUPP: more poll queues asked for than the device offers. */
static int queue_set_depths(struct mq_queue *q)
{
	const struct mq_dev_geometry *g = &q->dev->geo;

	q->nr_hw_queues = q->cfg.nr_hw_queues ? q->cfg.nr_hw_queues : 1;
	if (g->nr_hw_queues && q->nr_hw_queues > g->nr_hw_queues)
		q->nr_hw_queues = g->nr_hw_queues;
	if (q->cfg.nr_poll_queues > g->nr_poll_queues ||
	    q->cfg.nr_poll_queues >= MQ_MAX_HW_QUEUES)
		return -EOPNOTSUPP;
	q->nr_poll_queues = q->cfg.nr_poll_queues;
	if (q->nr_hw_queues > MQ_MAX_HW_QUEUES - q->nr_poll_queues)
		q->nr_hw_queues = MQ_MAX_HW_QUEUES - q->nr_poll_queues;
	/* The poll queues come after the others; the driver hears where. */
	q->dev->poll_base = q->nr_poll_queues ? q->nr_hw_queues : 0;
	q->nr_hw_queues += q->nr_poll_queues;
	q->queue_depth = q->cfg.queue_depth ? q->cfg.queue_depth
					    : (g->queue_depth ? g->queue_depth : 64);
	q->nr_requests = q->cfg.nr_requests ? q->cfg.nr_requests
			 : 2 * MQ_MIN(q->queue_depth, (unsigned)MQ_DEFAULT_RQ);
	return 0;
}

/* Thread slots onto the queues before the poll queues, then one context
 * for each poll queue. */
static void queue_map_ctxs(struct mq_queue *q)
{
	unsigned nr_default = q->nr_hw_queues - q->nr_poll_queues;

	for (unsigned i = 0; i < mq_queue_nr_ctxs(q); i++) {
		struct mq_sw_ctx *ctx = &q->ctxs[i];

		ctx->index = i;
		ctx->hctx = q->hctxs[i < MQ_NR_CTX ? i % nr_default
						   : nr_default + i - MQ_NR_CTX];
		/* Spread the slots' starting points over the bitmap. */
		ctx->tag_hint = (i * 2654435761u) % q->queue_depth;
		ctx->sched_tag_hint = (i * 2654435761u) % q->nr_requests;
	}
}

int mq_queue_create(struct mq_dev *dev, const struct mq_queue_config *cfg,
		    struct mq_queue **out)
{
	const struct mq_elevator_type *t;
	struct mq_queue *q;
	unsigned i;
	int err;

	*out = NULL;
	err = mq_dev_check_ops(dev);
	if (!err)
		err = elv_lookup(cfg->elevator ? cfg->elevator : "mq-deadline",
				 &t);
	if (err)
		return err;
	q = aligned_alloc(MQ_CACHELINE,
			  MQ_ALIGN_UP(sizeof(*q), (size_t)MQ_CACHELINE));
	if (!q)
		return -ENOMEM;
	memset(q, 0, sizeof(*q));
	q->dev = dev;
	q->cfg = *cfg;
	q->polled = dev->polled;
	atomic_store(&q->complete_delay_ns, MQ_COMPLETE_DELAY_NS);
	err = queue_set_depths(q);
	if (err) {
		free(q);
		return err;
	}
	queue_set_limits(q);
	pthread_mutex_init(&q->freeze_lock, NULL);
	pthread_mutex_init(&q->attr_lock, NULL);
	pthread_cond_init(&q->freeze_cond, NULL);
	for (i = 0; i < q->nr_hw_queues; i++) {
		err = hctx_alloc(q, i, &q->hctxs[i]);
		if (err)
			goto err;
	}
	queue_map_ctxs(q);
	err = elv_attach(q, t);
	if (err)
		goto err;
	*out = q;
	return 0;
err:
	while (i-- > 0)
		hctx_free(q->hctxs[i]);
	free(q);
	return err;
}

void mq_queue_destroy(struct mq_queue *q)
{
	mq_queue_drain(q);
	queue_quiesce(q);
	elv_detach(q);
	for (unsigned i = 0; i < q->nr_hw_queues; i++)
		hctx_free(q->hctxs[i]);
	MQ_ASSERT(queue_usage(q) == 0);
	pthread_mutex_destroy(&q->freeze_lock);
	pthread_mutex_destroy(&q->attr_lock);
	pthread_cond_destroy(&q->freeze_cond);
	free(q);
}
