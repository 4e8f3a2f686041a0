/* SPDX-License-Identifier: MIT */
/*
 * submit.c - mq_submit_bio(): from a bio to a request on its way (the
 * kernel's blk_mq_submit_bio).
 *
 * Merge first (plug tail, then the elevator), else allocate a request
 * (from the plug's cache when it has one), then either add it to the plug
 * or - unplugged - insert it into the elevator and run the queue from this
 * thread, or issue it directly when there is no elevator.
 *
 * The submitter holds a queue usage reference from the start, so a live
 * elevator switch can never free the elevator under a merge attempt; the
 * reference passes to the request, or is dropped when the bio merged.
 */
#include <errno.h>
#include "blk_i.h"
#include "elv_i.h"

static _Thread_local enum mq_prio_class task_prio;

enum mq_prio_class mq_set_task_prio(enum mq_prio_class c)
{
	enum mq_prio_class old = task_prio;

	task_prio = c;
	return old;
}

enum mq_prio_class mq_task_prio(void)
{
	return task_prio;
}

static void submit_count_merge(struct mq_sw_ctx *ctx, const struct mq_bio *bio,
			       _Atomic uint64_t *kind)
{
	mq_stat_inc_shared(&ctx->stats.merges[mq_op_dir(bio->op)], 1);
	mq_stat_inc_shared(kind, 1);
}

static bool submit_elv_merge(struct mq_queue *q, struct mq_sw_ctx *ctx,
			     struct mq_bio *bio)
{
	struct mq_elevator *e = ctx->hctx->elevator;
	struct mq_request *absorbed;
	bool merged;

	pthread_mutex_lock(&e->lock);
	merged = mq_elv_bio_merge(e, bio, &absorbed);
	pthread_mutex_unlock(&e->lock);
	if (absorbed) {
		mq_stat_inc_shared(&ctx->stats.rq_merges, 1);
		mq_free_request(absorbed);
	}
	if (merged)
		submit_count_merge(ctx, bio, &ctx->stats.elv_merges);
	return merged;
}

static bool submit_try_merge(struct mq_queue *q, struct mq_sw_ctx *ctx,
			     struct mq_plug *plug, struct mq_bio *bio)
{
	if (q->cfg.no_merges || (bio->op != MQ_OP_READ && bio->op != MQ_OP_WRITE))
		return false;
	if (plug && mq_attempt_plug_merge(plug, q, bio)) {
		submit_count_merge(ctx, bio, &ctx->stats.plug_merges);
		return true;
	}
	/*
	 * Nothing queued, nothing to merge with: skip the elevator lock.  The
	 * peek is racy and can only miss a merge, which is allowed.
	 */
	struct mq_elevator *e = ctx->hctx->elevator;

	return e && e->type->ops->has_work(e) && submit_elv_merge(q, ctx, bio);
}

static void rq_fill(struct mq_request *rq, struct mq_bio *bio, uint64_t now)
{
	rq->op = bio->op;
	rq->prio_class = bio->prio_class;
	rq->cmd_flags = bio->flags;
	rq->sector = bio->sector;
	rq->nr_bytes = bio->size;
	rq->nr_segs = 1;
	bio->next = NULL;
	rq->bio = rq->biotail = bio;
	rq->status = 0;
	rq->alloc_ns = now;
	rq->start_ns = 0;
	rq->rq_next = NULL;
	rq->fifo_time = 0;
	rq->elv_priv[0] = rq->elv_priv[1] = NULL;
	mq_list_init(&rq->queuelist);
	mq_rb_clear_node(&rq->rb_node);
	mq_hlist_node_init(&rq->hash);
}

static uint64_t submit_now(struct mq_plug *plug)
{
	if (!plug)
		return mq_clock_ns();
	if (!plug->cur_ns)
		plug->cur_ns = mq_clock_ns();
	return plug->cur_ns;
}

/*
 * The kernel's bio_check_eod and alignment checks: a bio must be a whole
 * number of logical blocks and end inside the device.
 */
static int submit_check_bio(struct mq_queue *q, const struct mq_bio *bio)
{
	const struct mq_dev_geometry *g = &q->dev->geo;
	uint64_t lbs = g->logical_block_size ? g->logical_block_size : 512;
	uint64_t start;

	if (bio->op >= MQ_OP_COUNT)
		return -EINVAL;
	if (bio->op == MQ_OP_FLUSH)
		return 0;
	/* Before the shift: a huge sector must not wrap to the start. */
	if (bio->sector > g->size_bytes >> MQ_SECTOR_SHIFT)
		return -EIO;
	start = bio->sector << MQ_SECTOR_SHIFT;
	if (start % lbs || bio->size % lbs || !bio->size)
		return -EINVAL;
	if (start > g->size_bytes || bio->size > g->size_bytes - start)
		return -EIO;
	return 0;
}

static void submit_fail_bio(struct mq_bio *bio, int status)
{
	bio->next = NULL;
	bio->status = status;
	bio->done_ns = mq_clock_ns();
	bio->end_io(bio);
}

void mq_submit_bio(struct mq_queue *q, struct mq_bio *bio)
{
	struct mq_sw_ctx *ctx = mq_ctx_current(q);
	struct mq_plug *plug = mq_current_plug();
	struct mq_rq_list one = { 0 };
	struct mq_request *rq;

	int bad = submit_check_bio(q, bio);

	if (mq_unlikely(bad)) {
		submit_fail_bio(bio, bad);
		return;
	}
	if (bio->prio_class == MQ_PRIO_NONE && !(bio->flags & MQ_REQ_META))
		bio->prio_class = (uint8_t)task_prio;
	if (bio->flags & MQ_REQ_POLLED) {
		struct mq_sw_ctx *pctx = mq_ctx_poll(q);

		if (pctx) {
			ctx = pctx;
			/* Before the bio is queued: a waiter that sees it
			 * in flight sees the flag. */
			if (mq_unlikely(!atomic_load_explicit(&q->polls_used,
						memory_order_relaxed)))
				atomic_store(&q->polls_used, true);
		} else {
			bio->flags &= (uint16_t)~MQ_REQ_POLLED;
		}
	}
	mq_queue_enter(q, ctx, 1);
	mq_stat_inc_shared(&ctx->stats.bios[mq_op_dir(bio->op)], 1);
	if (submit_try_merge(q, ctx, plug, bio)) {
		mq_queue_exit(q, ctx, 1);
		return;
	}
	rq = mq_alloc_request(q, ctx, bio, plug);
	rq_fill(rq, bio, submit_now(plug));
	if (rq->hctx->elevator && rq->hctx->elevator->type->ops->prepare_request)
		rq->hctx->elevator->type->ops->prepare_request(rq->hctx->elevator,
							       rq);
	if (plug) {
		mq_add_rq_to_plug(plug, rq);
		return;
	}
	mq_rq_list_add_tail(&one, rq);
	if (rq->rq_flags & MQ_RQF_ELV)
		mq_insert_requests(rq->hctx, &one, false, q->cfg.async_run);
	else
		mq_issue_list(rq->hctx, &one);
}
