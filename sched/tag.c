/* SPDX-License-Identifier: MIT */
/*
 * tag.c - tag spaces and request allocation (the kernel's blk-mq-tag.c
 * and the allocation half of blk-mq.c).
 *
 * Two tag spaces per hardware queue, as in the kernel: driver tags
 * (queue_depth: slots on the device) and, with an elevator, scheduler tags
 * (nr_requests: requests alive in the elevator).  A request comes from the
 * scheduler space when there is an elevator and takes a driver tag only
 * at dispatch; without one it is allocated straight from driver tags.
 *
 * A plug that knows it needs N requests allocates them in batches into
 * its request cache, looping over bitmap words until it has N or none are
 * free, as the kernel does since commit 152c331bcd80 ("block: plug
 * attempts to batch allocate tags multiple times", 2025).  A shallow
 * (throttled) allocation never batches, as blk_mq_get_tags() refuses it.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "blk_i.h"

struct mq_tags *mq_tags_alloc(unsigned depth, size_t pdu_size)
{
	struct mq_tags *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->depth = depth;
	t->rq_size = MQ_ALIGN_UP(sizeof(struct mq_request) + pdu_size,
				 (size_t)MQ_CACHELINE);
	if (mq_sbq_init(&t->bitmap, depth, -1, false))
		goto err_free;
	t->static_rqs = aligned_alloc(MQ_CACHELINE, t->rq_size * depth);
	t->rqs = calloc(depth, sizeof(*t->rqs));
	if (!t->static_rqs || !t->rqs)
		goto err_sbq;
	memset(t->static_rqs, 0, t->rq_size * depth);
	for (unsigned i = 0; i < depth; i++) {
		struct mq_request *rq = mq_tags_rq(t, i);

		rq->tag = -1;
		rq->internal_tag = -1;
	}
	return t;
err_sbq:
	free(t->static_rqs);
	free(t->rqs);
	mq_sbq_exit(&t->bitmap);
err_free:
	free(t);
	return NULL;
}

void mq_tags_free(struct mq_tags *t)
{
	if (!t)
		return;
	mq_sbq_exit(&t->bitmap);
	free(t->static_rqs);
	free(t->rqs);
	free(t);
}

bool mq_tags_have_free(struct mq_tags *t)
{
	return mq_sbitmap_weight(&t->bitmap.sb) < t->depth;
}

/* Per-word shallow depth for a whole-space limit, as dd_to_word_depth. */
static unsigned tag_word_depth(const struct mq_tags *t, unsigned shallow)
{
	unsigned bits = 1u << t->bitmap.sb.shift;

	return MQ_MAX(1u, MQ_DIV_ROUND_UP(shallow * bits, t->depth));
}

static void rq_init(struct mq_request *rq, struct mq_queue *q,
		    struct mq_sw_ctx *ctx, struct mq_tags *t, int tag,
		    bool elv)
{
	rq->q = q;
	rq->ctx = ctx;
	rq->hctx = ctx->hctx;
	rq->rq_flags = elv ? MQ_RQF_ELV : 0;
	if (elv) {
		rq->internal_tag = tag;
		rq->tag = -1;
	} else {
		rq->tag = tag;
		rq->internal_tag = -1;
		t->rqs[tag] = rq;
	}
}

/* Fill the plug's cache with up to plug->nr_ios requests. */
static unsigned tag_alloc_batch(struct mq_queue *q, struct mq_sw_ctx *ctx,
				struct mq_tags *t, unsigned *hint,
				struct mq_plug *plug, bool elv)
{
	unsigned want = plug->nr_ios, got = 0, calls = 0;

	/* The submitter's reference covers the first request. */
	mq_queue_ref_get(ctx, want - 1);
	while (got < want) {
		unsigned off;
		unsigned long mask = mq_sbq_get_batch(&t->bitmap, hint,
						      want - got, &off);

		calls++;
		if (!mask)
			break;
		for (unsigned b = 0; mask; b++, mask >>= 1) {
			if (!(mask & 1))
				continue;
			struct mq_request *rq = mq_tags_rq(t, off + b);

			rq_init(rq, q, ctx, t, (int)(off + b), elv);
			mq_rq_list_add_tail(&plug->cached_rqs, rq);
			got++;
		}
	}
	if (got < want)
		mq_queue_exit(q, ctx, got ? want - got : want - 1);
	plug->nr_ios = (unsigned short)(want - got);
	plug->cached_q = q;
	mq_stat_inc_shared(&ctx->stats.tag_alloc_calls, calls);
	mq_stat_inc_shared(&ctx->stats.tags_allocated, got);
	return got;
}

static int tag_try_get(struct mq_hw_queue *hctx, struct mq_sbitmap_queue *sbq,
		       unsigned *hint, unsigned shallow)
{
	int tag = shallow ? mq_sbq_get_shallow(sbq, hint, shallow)
			  : mq_sbq_get(sbq, hint);

	if (tag < 0) {
		/* Requests may sit in the elevator; let them go. */
		mq_run_hw_queue(hctx, false);
		tag = shallow ? mq_sbq_get_shallow(sbq, hint, shallow)
			      : mq_sbq_get(sbq, hint);
	}
	return tag;
}

/*
 * A polled queue frees tags only when someone polls: reap here while the
 * hardware queue has requests in flight.  Only when it has none (the
 * tags are held by plugs or wait on the dispatch list) does the caller
 * sleep, and the sleep's backstop bounds that.
 */
static int tag_poll(struct mq_hw_queue *hctx, struct mq_sbitmap_queue *sbq,
		    unsigned *hint, unsigned shallow)
{
	int tag;

	do {
		tag = tag_try_get(hctx, sbq, hint, shallow);
	} while (tag < 0 && mq_hctx_poll(hctx, 1) > 0);
	return tag;
}

/* Sleep until a tag frees up; the plug is flushed first (it may hold
 * the very requests whose completion we wait for). */
static int tag_wait(struct mq_hw_queue *hctx, struct mq_tags *t,
		    unsigned *hint, unsigned shallow)
{
	struct mq_sbitmap_queue *sbq = &t->bitmap;
	unsigned wait_index = 0;
	int tag;

	mq_flush_plug();
	for (;;) {
		struct mq_sbq_wait_state *ws = mq_sbq_wait_ptr(sbq, &wait_index);
		struct mq_sbq_waiter w;

		if (hctx->polled) {
			tag = tag_poll(hctx, sbq, hint, shallow);
			if (tag >= 0)
				return tag;
		}
		mq_sbq_waiter_init(&w);
		mq_sbq_prepare_to_wait(sbq, ws, &w);
		tag = tag_try_get(hctx, sbq, hint, shallow);
		if (tag < 0)
			mq_sbq_sleep(&w);
		mq_sbq_finish_wait(sbq, ws, &w);
		if (tag >= 0)
			return tag;
	}
}

static unsigned tag_limit(struct mq_hw_queue *hctx, struct mq_tags *t,
			  uint8_t op, uint32_t flags)
{
	struct mq_elevator *e = hctx->elevator;
	struct mq_alloc_data d = { .op = op, .cmd_flags = flags };

	if (!e || !e->type->ops->limit_depth)
		return 0;
	e->type->ops->limit_depth(e, &d);
	if (!d.shallow_depth || d.shallow_depth >= t->depth)
		return 0;
	return tag_word_depth(t, d.shallow_depth);
}

static unsigned tag_shallow_depth(struct mq_hw_queue *hctx, struct mq_tags *t,
				  const struct mq_bio *bio)
{
	return tag_limit(hctx, t, bio->op, bio->flags);
}

/*
 * Tell the scheduler tags' wait queue how shallow throttled allocations
 * go, so it wakes waiters in batches they can use (the kernel's
 * min_shallow_depth; a write is the throttled case).  Call after the
 * elevator, its tunables or nr_requests change.
 */
void mq_tags_update_shallow(struct mq_hw_queue *hctx)
{
	struct mq_tags *t = hctx->sched_tags;
	unsigned wd;

	if (!t)
		return;
	wd = tag_limit(hctx, t, MQ_OP_WRITE, 0);
	mq_sbq_min_shallow_depth(&t->bitmap, wd ? wd : UINT_MAX);
}

/* The caller holds one queue usage reference for the request. */
struct mq_request *mq_alloc_request(struct mq_queue *q, struct mq_sw_ctx *ctx,
				    const struct mq_bio *bio,
				    struct mq_plug *plug)
{
	struct mq_hw_queue *hctx = ctx->hctx;
	bool elv = hctx->elevator != NULL;
	struct mq_tags *t = elv ? hctx->sched_tags : hctx->tags;
	unsigned *hint = elv ? &ctx->sched_tag_hint : &ctx->tag_hint;
	unsigned shallow;
	int tag;

	if (plug && plug->cached_q == q && !mq_rq_list_empty(&plug->cached_rqs) &&
	    plug->cached_rqs.head->hctx == hctx) {
		/* A cached request holds its own usage reference. */
		mq_queue_exit(q, ctx, 1);
		return mq_rq_list_pop(&plug->cached_rqs);
	}
	shallow = tag_shallow_depth(hctx, t, bio);
	if (plug && plug->nr_ios > 1 && !shallow && !q->cfg.single_tag_alloc &&
	    mq_rq_list_empty(&plug->cached_rqs) &&
	    tag_alloc_batch(q, ctx, t, hint, plug, elv))
		return mq_rq_list_pop(&plug->cached_rqs);

	tag = shallow ? mq_sbq_get_shallow(&t->bitmap, hint, shallow)
		      : mq_sbq_get(&t->bitmap, hint);
	if (tag < 0) {
		mq_stat_inc_shared(&ctx->stats.tag_waits, 1);
		tag = tag_wait(hctx, t, hint, shallow);
	}
	mq_stat_inc_shared(&ctx->stats.tag_alloc_calls, 1);
	mq_stat_inc_shared(&ctx->stats.tags_allocated, 1);
	struct mq_request *rq = mq_tags_rq(t, (unsigned)tag);

	rq_init(rq, q, ctx, t, tag, elv);
	return rq;
}

bool mq_get_driver_tag(struct mq_request *rq)
{
	struct mq_hw_queue *hctx = rq->hctx;
	int tag;

	if (rq->tag >= 0)
		return true;
	tag = mq_sbq_get(&hctx->tags->bitmap, &hctx->dispatch_tag_hint);
	if (tag < 0)
		return false;
	rq->tag = tag;
	hctx->tags->rqs[tag] = rq;
	return true;
}

/*
 * Return the tags of @rq; the elevator hears of it first.  The request is
 * reset before its bits are cleared: once a bit is free another thread may
 * allocate and initialise the slot, and a late store would clobber it.
 */
static void rq_release(struct mq_request *rq)
{
	struct mq_hw_queue *hctx = rq->hctx;
	struct mq_elevator *e = hctx->elevator;
	int tag = rq->tag, internal_tag = rq->internal_tag;

	if (rq->rq_flags & MQ_RQF_ELVPRIV && e->type->ops->finish_request)
		e->type->ops->finish_request(e, rq);
	rq->tag = rq->internal_tag = -1;
	rq->rq_flags = 0;
	if (tag >= 0)
		mq_sbq_clear(&hctx->tags->bitmap, (unsigned)tag, NULL);
	if (internal_tag >= 0)
		mq_sbq_clear(&hctx->sched_tags->bitmap, (unsigned)internal_tag,
			     NULL);
}

void mq_free_request(struct mq_request *rq)
{
	struct mq_queue *q = rq->q;
	struct mq_sw_ctx *ctx = rq->ctx;

	/* Once released the slot may be reused: read first. */
	rq_release(rq);
	mq_queue_exit(q, ctx, 1);
}

/*
 * Release a completion batch: tags of consecutive requests of one hardware
 * queue go back in one clear per bitmap word.
 */
void mq_release_requests_batch(struct mq_request **rqs, unsigned nr)
{
	int dtags[64], stags[64];
	unsigned i = 0;

	while (i < nr) {
		struct mq_hw_queue *hctx = rqs[i]->hctx;
		struct mq_elevator *e = hctx->elevator;
		unsigned nd = 0, ns = 0;

		for (; i < nr && rqs[i]->hctx == hctx && nd < 64; i++) {
			struct mq_request *rq = rqs[i];

			if (rq->rq_flags & MQ_RQF_ELVPRIV &&
			    e->type->ops->finish_request)
				e->type->ops->finish_request(e, rq);
			if (rq->tag >= 0)
				dtags[nd++] = rq->tag;
			if (rq->internal_tag >= 0)
				stags[ns++] = rq->internal_tag;
			rq->tag = rq->internal_tag = -1;
			rq->rq_flags = 0;
		}
		if (nd)
			mq_sbq_clear_batch(&hctx->tags->bitmap, dtags, nd);
		if (ns)
			mq_sbq_clear_batch(&hctx->sched_tags->bitmap, stags, ns);
	}
}
