/* SPDX-License-Identifier: MIT */
/*
 * blk_i.h - the block layer core's private state: queues, hardware and
 * software contexts, tag spaces, and the limits of block/blk.h.
 *
 * Lock order (outer first): q->attr_lock; q->freeze_lock; e->lock;
 * hctx->lock (dispatch list); sbitmap wait-queue locks.  The run of a
 * hardware queue is serialised by hctx->run_state (no lock is held while
 * the driver runs), so completions may re-enter and only mark a re-run.
 */
#ifndef MQFS_SCHED_BLK_I_H
#define MQFS_SCHED_BLK_I_H

#include <pthread.h>
#include <stdatomic.h>
#include "mqfs/blk.h"
#include "mqfs/elevator.h"
#include "mqfs/kthread.h"
#include "mqfs/mq_dev.h"
#include "merge.h"
#include "lib/sbitmap.h"

#define MQ_PLUG_MAX_RQS		32	/* BLK_MAX_REQUEST_COUNT */
#define MQ_PLUG_MAX_RQS_MULTI	64	/* plug spanning several queues */
#define MQ_PLUG_FLUSH_SIZE	(128u * 1024)
#define MQ_DEFAULT_RQ		128	/* BLKDEV_DEFAULT_RQ */
#define MQ_NR_CTX		64	/* software contexts (thread slots) */
#define MQ_MAX_HW_QUEUES	64
/* Past the thread slots, one context per poll queue. */
#define MQ_ALL_CTX		(MQ_NR_CTX + MQ_MAX_HW_QUEUES)
#define MQ_RESOURCE_DELAY_NS	3000000	/* BLK_MQ_RESOURCE_DELAY */
#define MQ_DEFAULT_MAX_SECTORS_KB 512
#define MQ_COMPLETE_DELAY_NS	1000000	/* complete_delay_us = 1000 */
#define MQ_MIN_NR_REQUESTS	4	/* BLKDEV_MIN_RQ */
#define MQ_MAX_NR_REQUESTS	16384

/* A tag space: the bitmap and the request pool indexed by it. */
struct mq_tags {
	struct mq_sbitmap_queue bitmap;
	unsigned depth;
	size_t rq_size;			/* request + driver pdu, aligned */
	char *static_rqs;		/* depth * rq_size */
	struct mq_request **rqs;	/* driver tag -> request using it */
};

static inline struct mq_request *mq_tags_rq(const struct mq_tags *t,
					    unsigned tag)
{
	return (struct mq_request *)(t->static_rqs + (size_t)tag * t->rq_size);
}

/* Counters a submitting thread updates (per software context). */
struct mq_ctx_stats {
	_Atomic uint64_t bios[MQ_DIR_COUNT];
	_Atomic uint64_t merges[MQ_DIR_COUNT];
	_Atomic uint64_t plug_merges, elv_merges, rq_merges;
	_Atomic uint64_t tag_alloc_calls, tags_allocated, tag_waits;
};

/* A software context: one per submitting-thread slot, as per CPU. */
struct mq_sw_ctx {
	_Atomic long usage;		/* queue references taken here */
	struct mq_hw_queue *hctx;
	unsigned index;
	unsigned tag_hint;		/* sbitmap hints owned by this slot */
	unsigned sched_tag_hint;
	struct mq_ctx_stats stats;
} mq_cacheline_aligned;

/* Counters written only inside the serialised run of a hw queue. */
struct mq_run_stats {
	_Atomic uint64_t dispatched[MQ_DIR_COUNT];
	_Atomic uint64_t dispatch_runs;
	_Atomic uint64_t dispatch_hist[MQ_DISPATCH_HIST];
	_Atomic uint64_t requeues;
	_Atomic uint64_t run_sync, run_async;
	_Atomic uint64_t queue_ns[MQ_DIR_COUNT];
};

/* Counters updated at completion, from any thread. */
struct mq_done_stats {
	_Atomic uint64_t ios[MQ_DIR_COUNT];
	_Atomic uint64_t sectors[MQ_DIR_COUNT];
	_Atomic uint64_t device_ns[MQ_DIR_COUNT];
	_Atomic uint64_t errors;
	_Atomic uint64_t completion_batches;
	_Atomic uint64_t busy_stamp_ns;		/* last busy-time update */
	_Atomic uint64_t busy_ns;		/* time with I/O in flight */
} mq_cacheline_aligned;

/*
 * Device busy time (io_ticks of /sys/block/DEV/stat), as the kernel's
 * update_io_ticks: at every dispatch and completion batch the time since
 * the previous update counts as busy when a request was in flight over
 * it.  One compare-and-swap per batch, not per request.
 */
static inline void mq_busy_update(struct mq_done_stats *d, uint64_t now,
				  bool busy)
{
	uint64_t stamp = atomic_load_explicit(&d->busy_stamp_ns,
					      memory_order_relaxed);

	if (now > stamp &&
	    atomic_compare_exchange_strong(&d->busy_stamp_ns, &stamp, now) &&
	    busy)
		atomic_fetch_add_explicit(&d->busy_ns, now - stamp,
					  memory_order_relaxed);
}

enum {
	MQ_RUN_IDLE = 0,
	MQ_RUN_RUNNING,
	MQ_RUN_RERUN,		/* running, and someone asked for another pass */
};

struct mq_hw_queue {
	struct mq_queue *q;
	unsigned index;
	void *driver_data;
	struct mq_tags *tags;		/* driver tags (queue_depth) */
	struct mq_tags *sched_tags;	/* scheduler tags, with an elevator */
	struct mq_elevator *elevator;	/* this queue's instance; NULL: none */
	bool polled;			/* completes only through ->poll */

	_Atomic int run_state mq_cacheline_aligned;
	_Atomic bool sched_restart;	/* a completion must re-run us */
	_Atomic unsigned nr_dispatch;	/* length of @dispatch, lockless peek */
	_Atomic unsigned dispatch_busy;	/* EWMA of "device was busy" */
	unsigned dispatch_tag_hint;	/* driver-tag hint of the run */
	struct mq_run_stats rstats;

	pthread_mutex_t lock mq_cacheline_aligned;
	struct mq_list_head dispatch;	/* leftovers, retried first */

	/* The queue worker: only runs punted by a busy queue go here. */
	struct mq_kthread worker;
	bool wpending;			/* under the worker's lock */
	uint64_t wdelay_until;		/* likewise */

	struct mq_done_stats dstats;

	struct mq_task_worker *task;	/* task-context completions */
};

struct mq_queue {
	struct mq_dev *dev;
	struct mq_queue_config cfg;
	unsigned nr_hw_queues;		/* poll queues included */
	unsigned nr_poll_queues;	/* the last ones; 0: none */
	_Atomic bool polls_used;	/* a bio went to one (submit.c) */
	unsigned queue_depth;
	unsigned nr_requests;
	bool polled;			/* every queue: only through ->poll */
	struct mq_merge_limits limits;
	/* The elevator type; one instance per hardware queue.  NULL: none. */
	const struct mq_elevator_type *elv_type;
	struct mq_hw_queue *hctxs[MQ_MAX_HW_QUEUES];

	_Atomic bool frozen;
	_Atomic bool quiesced;		/* no queue runs while switching */
	_Atomic int usage_waiters;	/* freeze or drain waiting for 0 */
	_Atomic long task_pending;	/* bios waiting for the task worker */
	_Atomic uint64_t complete_delay_ns;
	pthread_mutex_t freeze_lock;
	pthread_mutex_t attr_lock;	/* elevator switch vs tunables */
	pthread_cond_t freeze_cond;

	/* The thread slots', then the poll queues' (mq_queue_nr_ctxs). */
	struct mq_sw_ctx ctxs[MQ_ALL_CTX];
};

/* The calling thread's software context on @q. */
struct mq_sw_ctx *mq_ctx_current(struct mq_queue *q);
/* The context of the poll queue the thread is bound to, or NULL. */
struct mq_sw_ctx *mq_ctx_poll(struct mq_queue *q);

static inline unsigned mq_queue_nr_ctxs(const struct mq_queue *q)
{
	return MQ_NR_CTX + q->nr_poll_queues;
}

/* tag.c */
struct mq_tags *mq_tags_alloc(unsigned depth, size_t pdu_size);
void mq_tags_free(struct mq_tags *t);
struct mq_request *mq_alloc_request(struct mq_queue *q, struct mq_sw_ctx *ctx,
				    const struct mq_bio *bio,
				    struct mq_plug *plug);
bool mq_get_driver_tag(struct mq_request *rq);
void mq_tags_update_shallow(struct mq_hw_queue *hctx);
bool mq_tags_have_free(struct mq_tags *t);
void mq_free_request(struct mq_request *rq);
/* Release tags of a completion batch; the caller drops the usage refs. */
void mq_release_requests_batch(struct mq_request **rqs, unsigned nr);

/*
 * queue.c: freeze / usage.  A request holds one usage reference, counted
 * on the software context that allocated it and dropped there again, so
 * the counters stay on their threads' cache lines (the kernel's
 * percpu_ref) and each one is never negative.
 */
void mq_queue_enter(struct mq_queue *q, struct mq_sw_ctx *ctx, long nr);
/* More references for a holder of one: never waits for a freeze. */
static inline void mq_queue_ref_get(struct mq_sw_ctx *ctx, long nr)
{
	atomic_fetch_add_explicit(&ctx->usage, nr, memory_order_relaxed);
}
void mq_queue_exit(struct mq_queue *q, struct mq_sw_ctx *ctx, long nr);

/*
 * Non-zero while this thread runs bio end_io callbacks.  A submission from
 * there must not wait for a freeze: the freeze may be waiting for the very
 * completion that is running (its reference is dropped after end_io).
 */
extern _Thread_local unsigned mq_in_completion;
void mq_queue_freeze(struct mq_queue *q);
int mq_queue_set_nr_requests(struct mq_queue *q, unsigned nr);
void mq_queue_unfreeze(struct mq_queue *q);

/* dispatch.c */
void mq_run_hw_queue(struct mq_hw_queue *hctx, bool async);
void mq_run_hw_queues(struct mq_queue *q, bool async);
void mq_run_hw_queue_worker(struct mq_hw_queue *hctx);
void mq_issue_list(struct mq_hw_queue *hctx, struct mq_rq_list *list);
void mq_insert_requests(struct mq_hw_queue *hctx, struct mq_rq_list *list,
			bool at_head, bool run_async);

/* worker.c: the hardware queue's worker thread (async runs). */
int mq_hctx_worker_start(struct mq_hw_queue *hctx);
void mq_hctx_worker_stop(struct mq_hw_queue *hctx);
void mq_hctx_kick_worker(struct mq_hw_queue *hctx, uint64_t delay_ns);

/* complete_task.c: end_io in task context, with delayed batching. */
struct mq_task_worker *mq_task_worker_start(struct mq_hw_queue *hctx);
void mq_task_worker_stop(struct mq_task_worker *w);
/* Queue a request's bio chain (status and done_ns already set). */
void mq_task_defer(struct mq_hw_queue *hctx, struct mq_bio *head,
		   struct mq_bio *tail, long nr);
void mq_task_worker_stats(struct mq_task_worker *w, struct mq_queue_stats *s);
void mq_queue_wake_waiters(struct mq_queue *q);

/*
 * poll.c: polled queues (mq_dev.polled).  Nothing reaps them but the
 * threads that wait, so every wait for a completion polls instead of
 * sleeping while the hardware queue has requests in flight.
 */
/* ->poll of @hctx: requests completed or -errno. */
int mq_hctx_poll(struct mq_hw_queue *hctx, unsigned min_complete);
/*
 * Poll every hardware queue, blocking on each only while it has requests
 * in flight; returns the requests completed (0: nothing was in flight).
 */
unsigned mq_queue_poll_all(struct mq_queue *q);

/* plug.c */
bool mq_attempt_plug_merge(struct mq_plug *plug, struct mq_queue *q,
			   struct mq_bio *bio);
void mq_add_rq_to_plug(struct mq_plug *plug, struct mq_request *rq);

/* statistics helpers: single-writer counters (no locked instruction). */
static inline void mq_stat_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed)
			      + n, memory_order_relaxed);
}

/* Counters several threads update. */
static inline void mq_stat_inc_shared(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

#endif /* MQFS_SCHED_BLK_I_H */
