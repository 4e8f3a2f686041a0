/* SPDX-License-Identifier: MIT */
/*
 * test_tags.c - Check unit tests for tag spaces and request allocation
 * (sched/tag.c, with sched/plug.c and sched/sbitmap.c underneath).
 *
 * Tested: a request comes from the scheduler tag space with mq-deadline
 * and takes a driver tag only at dispatch, but straight from driver tags
 * with "none"; a plug started for N requests fills its request cache with
 * batched allocations that loop over bitmap words (few calls, many tags
 * per call), unless the queue asks for single allocations or the
 * allocation is throttled (mq-deadline async_depth for writes, which
 * must also keep to the shallow part of every word); cached requests a
 * plug did not use go back at mq_finish_plug; a thread that sleeps on an
 * exhausted tag space wakes when completions free tags.  Devices are a
 * null device in MANUAL irq mode under the fake clock, so nothing
 * completes before the test says so.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "t_util.h"
#include "t_main.h"
#include "mqfs/dev/null.h"

#define FAR	(1024 * T_SECT_KB)	/* 1 MiB apart: never merge */

static const char *const elv_names[] = { "mq-deadline", "none" };

/* Length of a request list (plug list or plug cache). */
static unsigned rq_list_len(const struct mq_rq_list *l)
{
	unsigned n = 0;

	for (struct mq_request *rq = l->head; rq; rq = rq->rq_next)
		n++;
	return n;
}

/* Submit @n 4 KiB writes (or reads) far apart, bios [first, first+n). */
static void submit_far(struct mq_queue *q, struct t_bio_pool *p,
		       unsigned first, unsigned n, enum mq_op op)
{
	for (unsigned i = first; i < first + n; i++)
		t_submit(q, p, i, op, (uint64_t)i * FAR, 4 * T_KB);
}

/* Every request in the plug carries the tags of its tag space. */
static void check_plug_rq_tags(struct mq_plug *plug, bool elv)
{
	unsigned k = 0;

	for (struct mq_request *rq = plug->mq_list.head; rq;
	     rq = rq->rq_next, k++) {
		if (elv) {
			t_check(rq->rq_flags & MQ_RQF_ELV, "rq %u: no ELV", k);
			t_check(rq->internal_tag >= 0 && rq->tag == -1,
				"rq %u: tag %d internal %d", k, rq->tag,
				rq->internal_tag);
		} else {
			t_check(!(rq->rq_flags & MQ_RQF_ELV), "rq %u: ELV", k);
			t_check(rq->tag >= 0 && rq->internal_tag == -1,
				"rq %u: tag %d internal %d", k, rq->tag,
				rq->internal_tag);
			t_check(rq->hctx->tags->rqs[rq->tag] == rq,
				"rq %u: driver tag map", k);
		}
	}
}

/*
 * mq-deadline: scheduler tags at allocation, a driver tag at dispatch;
 * none: driver tags at allocation, no scheduler tag space at all.
 */
START_TEST(test_tag_spaces)
{
	bool elv = _i == 0;
	struct mq_queue_config cfg = { .elevator = elv_names[_i] };
	struct mq_dev *dev;
	struct mq_queue *q;
	struct t_bio_pool p;
	struct mq_plug plug;

	T_BEGIN();
	t_clock_fake();
	dev = t_null_open(4, 1);
	q = t_queue_create(dev, &cfg);
	t_pool_init(&p, 8, 0);
	t_check((q->hctxs[0]->sched_tags != NULL) == elv, "sched tag space");

	mq_start_plug(&plug, 3);
	submit_far(q, &p, 0, 3, MQ_OP_WRITE);
	check_plug_rq_tags(&plug, elv);
	t_check_u64(t_sched_tags_used(q, 0), elv ? 3 : 0, "sched tags in plug");
	t_check_u64(t_driver_tags_used(q, 0), elv ? 0 : 3, "driver tags in plug");
	mq_finish_plug(&plug);
	t_check_u64(mq_null_inflight(dev), 3, "on device after unplug");
	t_check_u64(t_driver_tags_used(q, 0), 3, "driver tags after dispatch");
	t_check_u64(t_sched_tags_used(q, 0), elv ? 3 : 0, "sched tags held");

	/* Only mq-deadline can hold a request without a driver tag. */
	submit_far(q, &p, 3, elv ? 2 : 1, MQ_OP_WRITE);
	t_check_u64(mq_null_inflight(dev), 4, "device full");
	t_check_u64(t_driver_tags_used(q, 0), 4, "driver tags, device full");
	t_check_u64(t_sched_tags_used(q, 0), elv ? 5 : 0, "sched tags, full");
	t_check_u64(t_nr_dispatch(q, 0), elv ? 1 : 0, "waiting for a tag");

	t_null_finish(q, dev, &p);
	t_pool_check_done(&p, 0, p.submitted);
	t_teardown(q, dev);
	t_pool_free(&p);
}
END_TEST

/* Batched allocation configurations: elevator, device depth, calls. */
static const struct batch_case {
	const char *elv;
	unsigned qd;		/* driver tags; scheduler tags 2 * qd */
	unsigned calls;		/* allocation calls for 32 tags */
} batch_cases[] = {
	{ "mq-deadline", 32, 2 },	/* 64 sched tags: 4 words of 16 */
	{ "none", 64, 2 },		/* 64 driver tags: 4 words of 16 */
	{ "mq-deadline", 128, 1 },	/* 256 sched tags: 4 words of 64 */
};

/*
 * mq_start_plug(&p, 32) + 32 bios: the first allocation fills the plug's
 * cache with 32 requests, looping over bitmap words when one word holds
 * fewer; the other 31 bios take cached requests without any allocation.
 */
START_TEST(test_batch_alloc)
{
	const struct batch_case *bc = &batch_cases[_i];
	struct mq_queue_config cfg = { .elevator = bc->elv };
	bool elv = bc->elv[0] == 'm';
	struct mq_queue_stats s;
	struct mq_dev *dev;
	struct mq_queue *q;
	struct t_bio_pool p;
	struct mq_plug plug;

	T_BEGIN();
	t_clock_fake();
	dev = t_null_open(bc->qd, 1);
	q = t_queue_create(dev, &cfg);
	t_pool_init(&p, 32, 0);

	mq_start_plug(&plug, 32);
	submit_far(q, &p, 0, 1, MQ_OP_WRITE);
	t_check_u64(rq_list_len(&plug.cached_rqs), 31, "cached after first bio");
	t_check(plug.cached_q == q, "cache belongs to the queue");
	t_check_u64(elv ? t_sched_tags_used(q, 0) : t_driver_tags_used(q, 0),
		    32, "tags taken by the batch");
	submit_far(q, &p, 1, 31, MQ_OP_WRITE);
	s = t_stats(q, -1);
	t_check_u64(s.tag_alloc_calls, bc->calls, "tag_alloc_calls");
	t_check_u64(s.tags_allocated, 32, "tags_allocated");
	t_check(s.tags_allocated >= 16 * s.tag_alloc_calls,
		"%" PRIu64 " tags in %" PRIu64 " calls", s.tags_allocated,
		s.tag_alloc_calls);
	t_check_u64(plug.rq_count, 32, "requests in the plug");
	t_check_u64(rq_list_len(&plug.cached_rqs), 0, "cache used up");
	t_check_u64(mq_null_inflight(dev), 0, "nothing issued while plugged");
	mq_finish_plug(&plug);
	t_check_u64(mq_null_inflight(dev), 32, "issued at unplug");

	t_null_finish(q, dev, &p);
	t_pool_check_done(&p, 0, 32);
	t_teardown(q, dev);
	t_pool_free(&p);
}
END_TEST

/* single_tag_alloc: one tag per call even inside a plug for 32. */
START_TEST(test_single_tag_alloc)
{
	struct mq_queue_config cfg = { .elevator = elv_names[_i],
				       .single_tag_alloc = true };
	struct mq_queue_stats s;
	struct mq_dev *dev;
	struct mq_queue *q;
	struct t_bio_pool p;
	struct mq_plug plug;

	T_BEGIN();
	t_clock_fake();
	dev = t_null_open(64, 1);
	q = t_queue_create(dev, &cfg);
	t_pool_init(&p, 32, 0);

	mq_start_plug(&plug, 32);
	for (unsigned i = 0; i < 32; i++) {
		submit_far(q, &p, i, 1, MQ_OP_WRITE);
		s = t_stats(q, -1);
		t_check(s.tag_alloc_calls == i + 1 && s.tags_allocated == i + 1,
			"bio %u: %" PRIu64 " calls, %" PRIu64 " tags", i,
			s.tag_alloc_calls, s.tags_allocated);
		t_check_u64(rq_list_len(&plug.cached_rqs), 0, "nothing cached");
	}
	mq_finish_plug(&plug);

	t_null_finish(q, dev, &p);
	t_pool_check_done(&p, 0, 32);
	t_teardown(q, dev);
	t_pool_free(&p);
}
END_TEST

/*
 * mq-deadline with async_depth 16 of 64 scheduler tags throttles writes
 * (shallow allocation): no batching, and every tag lies in the first
 * 16 * 16 / 64 = 4 bits of its word.  Reads are not throttled and batch.
 */
START_TEST(test_shallow_no_batch)
{
	struct mq_queue_config cfg = { .elevator = "mq-deadline" };
	struct mq_queue_stats s;
	struct mq_dev *dev;
	struct mq_queue *q;
	struct t_bio_pool p;
	struct mq_plug plug;
	char buf[32];

	T_BEGIN();
	t_clock_fake();
	dev = t_null_open(32, 1);
	q = t_queue_create(dev, &cfg);
	t_pool_init(&p, 16, 0);
	t_check(mq_queue_attr_store(q, "async_depth", "16") == 0, "store");
	t_check(mq_queue_attr_show(q, "async_depth", buf, sizeof(buf)) == 0 &&
		!strcmp(buf, "16"), "async_depth shows \"%s\"", buf);
	t_check_u64(q->hctxs[0]->sched_tags->bitmap.sb.shift, 4, "word shift");

	mq_start_plug(&plug, 32);
	submit_far(q, &p, 0, 8, MQ_OP_WRITE);
	s = t_stats(q, -1);
	t_check_u64(s.tag_alloc_calls, 8, "write calls");
	t_check_u64(s.tags_allocated, 8, "write tags");
	t_check_u64(rq_list_len(&plug.cached_rqs), 0, "nothing cached");
	for (struct mq_request *rq = plug.mq_list.head; rq; rq = rq->rq_next)
		t_check((rq->internal_tag & 15) < 4, "write tag %d not shallow",
			rq->internal_tag);
	mq_finish_plug(&plug);
	t_null_finish(q, dev, &p);

	mq_start_plug(&plug, 8);
	submit_far(q, &p, 8, 8, MQ_OP_READ);
	mq_finish_plug(&plug);
	s = t_stats(q, -1);
	t_check_u64(s.tag_alloc_calls, 8 + 1, "read batch: one call");
	t_check_u64(s.tags_allocated, 8 + 8, "read tags");

	t_null_finish(q, dev, &p);
	t_pool_check_done(&p, 0, 16);
	t_teardown(q, dev);
	t_pool_free(&p);
}
END_TEST

/* Unused cached requests go back at mq_finish_plug: tags and refs. */
START_TEST(test_cache_returned)
{
	bool elv = _i == 0;
	struct mq_queue_config cfg = { .elevator = elv_names[_i] };
	struct mq_dev *dev;
	struct mq_queue *q;
	struct t_bio_pool p;
	struct mq_plug plug;
	unsigned (*used)(struct mq_queue *, unsigned) =
		elv ? t_sched_tags_used : t_driver_tags_used;

	T_BEGIN();
	t_clock_fake();
	dev = t_null_open(64, 1);
	q = t_queue_create(dev, &cfg);
	t_pool_init(&p, 4, 0);

	mq_start_plug(&plug, 32);
	submit_far(q, &p, 0, 4, MQ_OP_WRITE);
	t_check_u64(used(q, 0), 32, "tags while plugged");
	t_check_u64(rq_list_len(&plug.cached_rqs), 28, "cached, unused");
	mq_finish_plug(&plug);
	t_check(mq_current_plug() == NULL, "plug still current");
	t_check_u64(used(q, 0), 4, "tags after unplug: in flight only");
	t_check_u64(t_driver_tags_used(q, 0), 4, "driver tags in flight");
	t_check_u64(mq_null_inflight(dev), 4, "on device");

	t_null_finish(q, dev, &p);
	t_check_u64(used(q, 0), 0, "tags after completion");
	t_pool_check_done(&p, 0, 4);
	t_teardown(q, dev);
	t_pool_free(&p);
}
END_TEST

struct waiter {
	struct mq_queue *q;
	struct t_bio_pool *p;
	unsigned bio;
	atomic_bool returned;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	t_submit(w->q, w->p, w->bio, MQ_OP_WRITE, (uint64_t)w->bio * FAR,
		 4 * T_KB);
	atomic_store(&w->returned, true);
	return NULL;
}

static int join_within(pthread_t t, unsigned sec)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += sec;
	return pthread_timedjoin_np(t, NULL, &ts);
}

/*
 * Exhaust the tag space a request needs (driver tags for none, scheduler
 * tags for mq-deadline), let a second thread block on it, and complete
 * from this thread: the sleeper must wake, submit and return.
 */
START_TEST(test_tag_wait_wakes)
{
	bool elv = _i == 0;
	struct mq_queue_config cfg = { .elevator = elv_names[_i] };
	unsigned fill = elv ? 8 : 4;	/* nr_requests 8 / queue_depth 4 */
	struct mq_sbitmap_queue *sbq;
	struct waiter w = { 0 };
	struct mq_dev *dev;
	struct mq_queue *q;
	struct t_bio_pool p;
	pthread_t thr;

	T_BEGIN();
	t_clock_fake();
	dev = t_null_open(4, 1);
	q = t_queue_create(dev, &cfg);
	t_pool_init(&p, fill + 1, 0);
	sbq = elv ? &q->hctxs[0]->sched_tags->bitmap : &q->hctxs[0]->tags->bitmap;

	submit_far(q, &p, 0, fill, MQ_OP_WRITE);
	t_check_u64(mq_sbitmap_weight(&sbq->sb), fill, "tag space full");
	t_check_u64(mq_null_inflight(dev), 4, "device full");

	w = (struct waiter){ .q = q, .p = &p, .bio = fill };
	t_check(pthread_create(&thr, NULL, waiter_main, &w) == 0, "create");
	t_check(t_wait_until(atomic_load(&sbq->waits) >= 1),
		"waiter never slept");
	t_check(!atomic_load(&w.returned), "submit returned without a tag");
	t_check_u64(t_stats(q, -1).tag_waits, 1, "tag_waits");

	t_check_u64(t_complete_due(dev), 4, "completed");
	t_check(join_within(thr, 20) == 0, "waiter not woken by the frees");
	t_check(atomic_load(&w.returned), "waiter returned");
	t_check(atomic_load(&sbq->wakeups) >= 1, "no wake-up counted");

	t_null_finish(q, dev, &p);
	t_pool_check_done(&p, 0, fill + 1);
	t_teardown(q, dev);
	t_pool_free(&p);
}
END_TEST

static TCase *tc(Suite *s, const char *name, const TTest *t, int loops)
{
	TCase *c = tcase_create(name);

	tcase_set_timeout(c, 60);
	if (loops)
		tcase_add_loop_test(c, t, 0, loops);
	else
		tcase_add_test(c, t);
	suite_add_tcase(s, c);
	return c;
}

static Suite *tags_suite(void)
{
	Suite *s = suite_create("tags");

	tc(s, "tag_spaces", test_tag_spaces, 2);
	tc(s, "batch_alloc", test_batch_alloc, (int)MQ_ARRAY_SIZE(batch_cases));
	tc(s, "single_tag_alloc", test_single_tag_alloc, 2);
	tc(s, "shallow_no_batch", test_shallow_no_batch, 0);
	tc(s, "cache_returned", test_cache_returned, 2);
	tc(s, "tag_wait_wakes", test_tag_wait_wakes, 2);
	return s;
}

T_MAIN(tags_suite)
