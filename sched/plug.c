/* SPDX-License-Identifier: MIT */
/*
 * plug.c - per-thread plugs (the kernel's blk_plug).
 *
 * A plug collects a thread's requests so they reach the driver or the
 * elevator in batches.  A bio first tries to merge with the plug's tail
 * request (with every request when the plug spans several queues).  The
 * plug is flushed at 32 requests (64 when it spans queues), when the tail
 * request has reached 128 KiB, at unplug, and before the thread waits.
 *
 * Flush paths, as blk_mq_flush_plug_list(): no elevator and one queue ->
 * the whole batch to the driver with one doorbell; no elevator and several
 * queues -> split per queue and batch each (the kernel's path since commit
 * 9712c57ec111, "block: avoid hctx spinlock for plug with multiple
 * queues", 2025); with an elevator -> insert the batch, then run the queue
 * from this thread.
 * Nested plugs do not start a batch of their own: the outermost owns the
 * thread.  But the inner caller is the one that knows how many requests
 * it will issue, so while the plug has no requests cached its hint is
 * raised to the inner one's (the outer plug of a FUSE request starts at
 * 1, so a one-bio request claims one tag, not a batch it gives back).
 */
#include <string.h>
#include "blk_i.h"

static _Thread_local struct mq_plug *current_plug;

struct mq_plug *mq_current_plug(void)
{
	return current_plug;
}

static unsigned short plug_hint(unsigned nr_ios)
{
	return (unsigned short)MQ_MIN(MQ_MAX(nr_ios, 1u),
				      (unsigned)MQ_PLUG_MAX_RQS);
}

void mq_start_plug(struct mq_plug *plug, unsigned nr_ios)
{
	struct mq_plug *outer = current_plug;

	if (outer) {
		if (mq_rq_list_empty(&outer->cached_rqs) &&
		    plug_hint(nr_ios) > outer->nr_ios)
			outer->nr_ios = plug_hint(nr_ios);
		return;
	}
	memset(plug, 0, sizeof(*plug));
	plug->nr_ios = plug_hint(nr_ios);
	current_plug = plug;
}

/* Take every request of @hctx out of @from, keeping their order. */
static void plug_split_hctx(struct mq_rq_list *from, struct mq_hw_queue *hctx,
			    struct mq_rq_list *to)
{
	struct mq_rq_list rest = { 0 };
	struct mq_request *rq;

	while ((rq = mq_rq_list_pop(from)))
		mq_rq_list_add_tail(rq->hctx == hctx ? to : &rest, rq);
	*from = rest;
}

static void plug_issue(struct mq_hw_queue *hctx, struct mq_rq_list *list)
{
	if (list->head->rq_flags & MQ_RQF_ELV)
		mq_insert_requests(hctx, list, false, hctx->q->cfg.async_run);
	else
		mq_issue_list(hctx, list);
}

static void plug_flush(struct mq_plug *plug)
{
	struct mq_rq_list list = plug->mq_list;
	bool multiple = plug->multiple_queues;

	if (!plug->rq_count)
		return;
	plug->mq_list = (struct mq_rq_list){ 0 };
	plug->rq_count = 0;
	plug->multiple_queues = false;
	plug->has_elevator = false;
	plug->cur_ns = 0;
	if (!multiple) {
		plug_issue(list.head->hctx, &list);
		return;
	}
	while (!mq_rq_list_empty(&list)) {
		struct mq_rq_list one = { 0 };
		struct mq_hw_queue *hctx = list.head->hctx;

		plug_split_hctx(&list, hctx, &one);
		plug_issue(hctx, &one);
	}
}

/* Unused preallocated requests go back; their tags and usage refs too. */
static void plug_free_cached(struct mq_plug *plug)
{
	struct mq_request *rq;

	while ((rq = mq_rq_list_pop(&plug->cached_rqs)))
		mq_free_request(rq);
	plug->cached_q = NULL;
}

/*
 * Flush until the plug stays empty: issuing may run a driver that submits
 * bios of its own from this thread (a stacking driver), and those land in
 * this same plug.
 */
static void plug_flush_all(struct mq_plug *plug)
{
	while (plug->rq_count)
		plug_flush(plug);
}

/*
 * Before a thread blocks, as the kernel's __blk_flush_plug(): issue the
 * batch and give back the cached requests, whose usage references would
 * otherwise keep a freeze (elevator switch, drain) waiting for ever.
 */
void mq_flush_plug(void)
{
	if (current_plug) {
		plug_flush_all(current_plug);
		plug_free_cached(current_plug);
	}
}

void mq_finish_plug(struct mq_plug *plug)
{
	if (plug != current_plug)
		return;
	plug_flush_all(plug);
	plug_free_cached(plug);
	current_plug = NULL;
}

static bool plug_try_merge_rq(struct mq_request *rq, struct mq_bio *bio)
{
	struct mq_queue *q = rq->q;

	switch (mq_rq_try_merge(rq, bio, &q->limits)) {
	case MQ_ELV_BACK_MERGE:
		mq_rq_back_merge_bio(rq, bio);
		return true;
	case MQ_ELV_FRONT_MERGE:
		mq_rq_front_merge_bio(rq, bio);
		return true;
	default:
		return false;
	}
}

bool mq_attempt_plug_merge(struct mq_plug *plug, struct mq_queue *q,
			   struct mq_bio *bio)
{
	struct mq_request *rq = plug->mq_list.tail;

	if (!rq)
		return false;
	if (rq->q == q && plug_try_merge_rq(rq, bio))
		return true;
	if (!plug->multiple_queues)
		return false;
	for (rq = plug->mq_list.head; rq; rq = rq->rq_next)
		if (rq->q == q && plug_try_merge_rq(rq, bio))
			return true;
	return false;
}

void mq_add_rq_to_plug(struct mq_plug *plug, struct mq_request *rq)
{
	struct mq_request *last = plug->mq_list.tail;
	unsigned limit = plug->multiple_queues ? MQ_PLUG_MAX_RQS_MULTI
					       : MQ_PLUG_MAX_RQS;

	if (last && (plug->rq_count >= limit ||
		     (!rq->q->cfg.no_merges &&
		      last->nr_bytes >= MQ_PLUG_FLUSH_SIZE))) {
		plug_flush(plug);
		last = NULL;
	}
	if (last && last->hctx != rq->hctx)
		plug->multiple_queues = true;
	if (rq->rq_flags & MQ_RQF_ELV)
		plug->has_elevator = true;
	mq_rq_list_add_tail(&plug->mq_list, rq);
	plug->rq_count++;
}
