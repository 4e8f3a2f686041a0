/* SPDX-License-Identifier: MIT */
/*
 * test_plug.c - Check unit tests for per-thread plugging (sched/plug.c,
 * with sched/submit.c and sched/merge.c).
 *
 * Tested, with mq-deadline and with "none" (loop index 0 and 1): a bio
 * back- or front-merges into the plug's tail request; requests of
 * different operations (or priority classes) never merge and only the
 * tail is tried while the plug holds one queue; the plug is flushed when
 * a 33rd request arrives, when a request is added behind a tail of
 * 128 KiB, at mq_finish_plug and at mq_flush_plug(), while a nested
 * mq_start_plug is ignored but for its hint (an outer plug of 1 claims
 * one tag per one-bio request, and a nested plug of n raises the batch
 * to n while nothing is cached); one thread's plug on a queue with two
 * hardware queues stays on its thread's queue (limit 32), and a plug over
 * two queues uses the 64 limit and tries every request for a merge; data
 * written through merged requests on the ram device reads back intact.
 * Flushes are observed on a null device in MANUAL irq mode (fake clock):
 * what it holds was issued, and nothing completes behind the test's back.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "t_util.h"
#include "t_main.h"
#include "mqfs/dev/null.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

#define FAR	(1024 * T_SECT_KB)	/* 1 MiB apart: never merge */
#define BS	(4 * T_KB)
#define BS_SECT	(BS >> MQ_SECTOR_SHIFT)

static const char *const elv_names[] = { "mq-deadline", "none" };

struct rig {
	struct mq_dev *dev;
	struct mq_queue *q;
	struct t_bio_pool p;
};

static void rig_open(struct rig *r, const char *elv, unsigned nr_bios)
{
	struct mq_queue_config cfg = { .elevator = elv };

	t_clock_fake();
	r->dev = t_null_open(128, 1);
	r->q = t_queue_create(r->dev, &cfg);
	t_pool_init(&r->p, nr_bios, 0);
}

static void rig_close(struct rig *r)
{
	t_null_finish(r->q, r->dev, &r->p);
	t_pool_check_done(&r->p, 0, r->p.submitted);
	t_teardown(r->q, r->dev);
	t_pool_free(&r->p);
}

/* Write bio @i, 4 KiB at @sector. */
static void wr(struct rig *r, unsigned i, uint64_t sector)
{
	t_submit(r->q, &r->p, i, MQ_OP_WRITE, sector, BS);
}

/* @n far-apart 4 KiB writes, bios [first, first + n). */
static void wr_far(struct rig *r, unsigned first, unsigned n)
{
	for (unsigned i = first; i < first + n; i++)
		wr(r, i, (uint64_t)i * FAR);
}

static uint64_t plug_merges(struct mq_queue *q)
{
	return t_stats(q, -1).plug_merges;
}

/* Tail back merge and front merge inside the plug. */
START_TEST(test_merge_back_front)
{
	struct mq_plug plug;
	struct mq_request *a, *b;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 4);
	mq_start_plug(&plug, 4);
	wr(&r, 0, 0);
	wr(&r, 1, BS_SECT);			/* back: 0..8 + 8..16 */
	t_check_u64(plug_merges(r.q), 1, "after back merge");
	wr(&r, 2, 1000);
	wr(&r, 3, 1000 - BS_SECT);		/* front: 992..1000 */
	t_check_u64(plug_merges(r.q), 2, "after front merge");
	t_check_u64(plug.rq_count, 2, "requests in plug");
	a = plug.mq_list.head;
	b = plug.mq_list.tail;
	t_check(a->sector == 0 && a->nr_bytes == 2 * BS && a->nr_segs == 2 &&
		a->bio == &r.p.bios[0] && a->biotail == &r.p.bios[1],
		"back-merged request: sector %" PRIu64 " bytes %u",
		a->sector, a->nr_bytes);
	t_check(b->sector == 1000 - BS_SECT && b->nr_bytes == 2 * BS &&
		b->bio == &r.p.bios[3] && b->biotail == &r.p.bios[2],
		"front-merged request: sector %" PRIu64 " bytes %u",
		b->sector, b->nr_bytes);
	mq_finish_plug(&plug);
	t_check_u64(mq_null_inflight(r.dev), 2, "issued at unplug");
	t_null_finish(r.q, r.dev, &r.p);
	t_check_u64(t_stats(r.q, -1).ios[MQ_DIR_WRITE], 2, "write requests");
	t_check_u64(t_stats(r.q, -1).merges[MQ_DIR_WRITE], 2, "merges");
	rig_close(&r);
}
END_TEST

/* Different op, priority class or a non-tail request: no plug merge. */
START_TEST(test_no_merge_across_ops)
{
	struct mq_plug plug;
	struct mq_bio *bio;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 6);
	mq_start_plug(&plug, 8);
	wr(&r, 0, 0);
	t_submit(r.q, &r.p, 1, MQ_OP_READ, BS_SECT, BS);	/* after the write */
	wr(&r, 2, BS_SECT);		/* joins the write, but it is not tail */
	t_submit(r.q, &r.p, 3, MQ_OP_DISCARD, 2 * BS_SECT, BS);
	wr(&r, 4, 3 * BS_SECT);		/* after the discard */
	bio = t_bio_prep(&r.p, 5, MQ_OP_WRITE, 4 * BS_SECT, BS);
	bio->prio_class = MQ_PRIO_RT;	/* after a BE write */
	t_submit_bio(r.q, &r.p, bio);
	t_check_u64(plug_merges(r.q), 0, "plug merges");
	t_check_u64(plug.rq_count, 6, "requests in plug");
	t_check_u64(mq_null_inflight(r.dev), 0, "nothing issued");
	mq_finish_plug(&plug);
	rig_close(&r);
}
END_TEST

/* The 33rd request flushes the 32 before it; the plug stays open. */
START_TEST(test_flush_at_32)
{
	struct mq_plug plug;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 33);
	mq_start_plug(&plug, 32);
	wr_far(&r, 0, 32);
	t_check_u64(plug.rq_count, 32, "requests in plug");
	t_check_u64(mq_null_inflight(r.dev), 0, "issued before the limit");
	wr_far(&r, 32, 1);
	t_check_u64(mq_null_inflight(r.dev), 32, "issued by the 33rd");
	t_check_u64(t_stats(r.q, -1).dispatched[MQ_DIR_WRITE], 32, "dispatched");
	t_check_u64(plug.rq_count, 1, "requests in plug after flush");
	t_check(mq_current_plug() == &plug, "plug closed by a flush");
	mq_finish_plug(&plug);
	t_check_u64(mq_null_inflight(r.dev), 33, "issued at unplug");
	rig_close(&r);
}
END_TEST

/* A new request behind a tail of 128 KiB flushes; behind 124 KiB not. */
START_TEST(test_flush_at_128k)
{
	struct mq_plug plug;
	unsigned b = 0;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 64);
	mq_start_plug(&plug, 32);
	for (unsigned k = 0; k < 31; k++, b++)
		wr(&r, b, (uint64_t)k * BS_SECT);		/* 124 KiB */
	t_check_u64(plug.mq_list.tail->nr_bytes, 124 * T_KB, "first tail");
	wr(&r, b++, FAR);
	t_check_u64(plug.rq_count, 2, "no flush behind 124 KiB");
	t_check_u64(mq_null_inflight(r.dev), 0, "issued behind 124 KiB");
	for (unsigned k = 1; k < 32; k++, b++)
		wr(&r, b, FAR + (uint64_t)k * BS_SECT);	/* 128 KiB */
	t_check_u64(plug.mq_list.tail->nr_bytes, 128 * T_KB, "second tail");
	t_check_u64(plug.rq_count, 2, "merging never flushes");
	wr(&r, b++, 2 * FAR);
	t_check_u64(mq_null_inflight(r.dev), 2, "flushed behind 128 KiB");
	t_check_u64(plug.rq_count, 1, "new request alone in plug");
	t_check_u64(plug_merges(r.q), 30 + 31, "plug merges");
	mq_finish_plug(&plug);
	t_check_u64(mq_null_inflight(r.dev), 3, "issued at unplug");
	rig_close(&r);
}
END_TEST

/* mq_finish_plug issues what the plug holds. */
START_TEST(test_flush_at_finish)
{
	struct mq_plug plug;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 5);
	mq_start_plug(&plug, 5);
	t_check(mq_current_plug() == &plug, "plug not current");
	wr_far(&r, 0, 5);
	t_check_u64(mq_null_inflight(r.dev), 0, "issued while plugged");
	mq_finish_plug(&plug);
	t_check(mq_current_plug() == NULL, "plug still current");
	t_check_u64(mq_null_inflight(r.dev), 5, "issued at unplug");
	rig_close(&r);
}
END_TEST

/* mq_flush_plug() issues the current plug and leaves it open. */
START_TEST(test_flush_plug_call)
{
	struct mq_plug plug;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 8);
	mq_flush_plug();			/* no plug: nothing happens */
	mq_start_plug(&plug, 8);
	wr_far(&r, 0, 5);
	mq_flush_plug();
	t_check_u64(mq_null_inflight(r.dev), 5, "issued by mq_flush_plug");
	t_check_u64(plug.rq_count, 0, "plug emptied");
	t_check(mq_current_plug() == &plug, "plug closed by mq_flush_plug");
	wr_far(&r, 5, 3);
	t_check_u64(plug.rq_count, 3, "plug collects again");
	t_check_u64(mq_null_inflight(r.dev), 5, "issued after the flush");
	mq_finish_plug(&plug);
	t_check_u64(mq_null_inflight(r.dev), 8, "issued at unplug");
	rig_close(&r);
}
END_TEST

/* A nested plug is ignored: the inner finish flushes nothing. */
START_TEST(test_nested_plug)
{
	struct mq_plug outer, inner;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 3);
	mq_start_plug(&outer, 8);
	mq_start_plug(&inner, 8);
	t_check(mq_current_plug() == &outer, "inner plug became current");
	wr_far(&r, 0, 3);
	t_check_u64(outer.rq_count, 3, "requests in the outer plug");
	mq_finish_plug(&inner);
	t_check(mq_current_plug() == &outer, "inner finish ended the plug");
	t_check_u64(mq_null_inflight(r.dev), 0, "inner finish flushed");
	mq_finish_plug(&outer);
	t_check_u64(mq_null_inflight(r.dev), 3, "outer finish");
	rig_close(&r);
}
END_TEST

static uint64_t tags_allocated(struct mq_queue *q)
{
	return t_stats(q, -1).tags_allocated;
}

/*
 * The plug hint: a request plug of 1 around one-bio requests claims one
 * tag each (a plug of 32 would claim a batch and give 31 back); a nested
 * plug that knows it issues 4 raises the batch to 4, and one started
 * with requests cached leaves the hint alone.
 */
START_TEST(test_plug_hint)
{
	struct mq_plug outer, inner;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 16);
	for (unsigned i = 0; i < 4; i++) {
		mq_start_plug(&outer, 1);
		wr(&r, i, (uint64_t)i * FAR);
		mq_finish_plug(&outer);
	}
	t_check_u64(tags_allocated(r.q), 4, "one tag per one-bio request");
	mq_start_plug(&outer, 1);
	mq_start_plug(&inner, 4);
	t_check_u64(outer.nr_ios, 4, "the nested plug raised the hint");
	wr_far(&r, 4, 1);
	t_check_u64(tags_allocated(r.q), 8, "a batch of four claimed");
	mq_start_plug(&inner, 16);
	t_check_u64(outer.nr_ios, 0, "hint left alone while requests are cached");
	wr_far(&r, 5, 3);
	mq_finish_plug(&inner);
	mq_finish_plug(&outer);
	t_check_u64(tags_allocated(r.q), 8, "the batch served all four");
	rig_close(&r);
}
END_TEST

struct submitter {
	struct rig *r;
	unsigned first, n;
	unsigned ctx, hctx;		/* where this thread's slot maps */
};

static void *submitter_main(void *arg)
{
	struct submitter *s = arg;
	struct mq_sw_ctx *ctx = mq_ctx_current(s->r->q);
	struct mq_plug plug;

	s->ctx = ctx->index;
	s->hctx = ctx->hctx->index;
	mq_start_plug(&plug, s->n);
	wr_far(s->r, s->first, s->n);
	mq_finish_plug(&plug);
	return NULL;
}

/*
 * Two hardware queues: a thread's slot maps to one of them, so one
 * thread's plug never spans both and keeps the 32 limit; another thread
 * lands where its slot maps.
 */
START_TEST(test_two_hw_queues_one_thread)
{
	struct mq_queue_config cfg = { .elevator = elv_names[_i],
				       .nr_hw_queues = 2 };
	struct submitter s2 = { 0 };
	struct mq_sw_ctx *ctx;
	struct mq_plug plug;
	pthread_t thr;
	struct rig r;

	T_BEGIN();
	t_clock_fake();
	r.dev = t_null_open(128, 2);
	r.q = t_queue_create(r.dev, &cfg);
	t_pool_init(&r.p, 43, 0);
	t_check_u64(r.q->nr_hw_queues, 2, "hardware queues");
	ctx = mq_ctx_current(r.q);
	t_check(ctx->hctx == r.q->hctxs[ctx->index % 2], "slot mapping");

	mq_start_plug(&plug, 32);
	wr_far(&r, 0, 33);
	t_check(!plug.multiple_queues, "one thread spans hardware queues");
	t_check_u64(t_stats(r.q, (int)ctx->hctx->index).dispatched[MQ_DIR_WRITE],
		    32, "own queue: flushed at 32");
	t_check_u64(t_stats(r.q, !ctx->hctx->index).dispatched[MQ_DIR_WRITE],
		    0, "other queue");
	mq_finish_plug(&plug);

	s2 = (struct submitter){ .r = &r, .first = 33, .n = 10 };
	t_check(pthread_create(&thr, NULL, submitter_main, &s2) == 0, "create");
	t_check(pthread_join(thr, NULL) == 0, "join");
	t_check(r.q->ctxs[s2.ctx].hctx == r.q->hctxs[s2.ctx % 2],
		"thread slot %u mapping", s2.ctx);
	t_check_u64(t_stats(r.q, (int)s2.hctx).dispatched[MQ_DIR_WRITE],
		    10 + (s2.hctx == ctx->hctx->index ? 33 : 0),
		    "thread's queue");
	rig_close(&r);
}
END_TEST

/* Complete everything on two MANUAL null devices. */
static void finish2(struct mq_queue *q1, struct mq_dev *d1,
		    struct mq_queue *q2, struct mq_dev *d2,
		    struct t_bio_pool *p)
{
	bool ok = t_wait_until((t_complete_due(d1), t_complete_due(d2),
				atomic_load(&p->completed) >= p->submitted));

	t_check(ok, "only %u of %u bios completed",
		atomic_load(&p->completed), p->submitted);
	mq_queue_drain(q1);
	mq_queue_drain(q2);
	t_check(t_wait_until(t_queue_idle(q1) && t_queue_idle(q2)), "settle");
}

/*
 * One plug over two queues: every request is tried for a merge (not only
 * the tail), and the flush limit is 64.
 */
START_TEST(test_two_queues)
{
	struct mq_queue_config cfg = { .elevator = elv_names[_i] };
	struct mq_dev *d1, *d2;
	struct mq_queue *q1, *q2;
	struct mq_plug plug;
	struct t_bio_pool p;
	unsigned b = 0;

	T_BEGIN();
	t_clock_fake();
	d1 = t_null_open(128, 1);
	d2 = t_null_open(128, 1);
	q1 = t_queue_create(d1, &cfg);
	q2 = t_queue_create(d2, &cfg);
	t_pool_init(&p, 68, 0);

	mq_start_plug(&plug, 32);
	t_submit(q1, &p, b++, MQ_OP_WRITE, 0, BS);
	t_submit(q2, &p, b++, MQ_OP_WRITE, 0, BS);
	t_check(plug.multiple_queues, "plug over two queues");
	t_submit(q1, &p, b++, MQ_OP_WRITE, BS_SECT, BS);	/* not the tail */
	t_submit(q2, &p, b++, MQ_OP_WRITE, BS_SECT, BS);	/* the tail */
	t_check_u64(plug_merges(q1), 1, "q1 merge with a non-tail request");
	t_check_u64(plug_merges(q2), 1, "q2 tail merge");
	t_check_u64(plug.rq_count, 2, "requests in plug");
	for (unsigned k = 1; k <= 31; k++) {
		t_submit(q1, &p, b++, MQ_OP_WRITE, (uint64_t)k * FAR, BS);
		t_submit(q2, &p, b++, MQ_OP_WRITE, (uint64_t)k * FAR, BS);
	}
	t_check_u64(plug.rq_count, 64, "requests in plug");
	t_check_u64(mq_null_inflight(d1) + mq_null_inflight(d2), 0,
		    "issued below 64");
	t_submit(q1, &p, b++, MQ_OP_WRITE, 32 * FAR, BS);
	t_check_u64(mq_null_inflight(d1), 32, "q1 issued by the 65th");
	t_check_u64(mq_null_inflight(d2), 32, "q2 issued by the 65th");
	t_check_u64(plug.rq_count, 1, "requests after the flush");
	mq_finish_plug(&plug);
	t_check_u64(mq_null_inflight(d1), 33, "q1 at unplug");

	finish2(q1, d1, q2, d2, &p);
	t_pool_check_done(&p, 0, b);
	t_check_u64(t_stats(q1, -1).ios[MQ_DIR_WRITE], 33, "q1 requests");
	t_check_u64(t_stats(q2, -1).ios[MQ_DIR_WRITE], 32, "q2 requests");
	t_teardown(q1, d1);
	t_teardown(q2, d2);
	t_pool_free(&p);
}
END_TEST

#define RAM_BIOS	16
#define RAM_FRONT	512		/* sector where region B ends */

static void fill_pattern(unsigned char *buf, unsigned i)
{
	for (unsigned k = 0; k < BS; k++)
		buf[k] = (unsigned char)(i * 37 + k * 7 + 1);
}

/* Region A ascending (back merges), region B descending (front merges). */
static uint64_t ram_sector(unsigned i)
{
	return i < RAM_BIOS ? (uint64_t)i * BS_SECT
			    : RAM_FRONT - (uint64_t)(i - RAM_BIOS + 1) * BS_SECT;
}

static void ram_pass(struct mq_queue *q, struct t_bio_pool *p, unsigned first,
		     enum mq_op op)
{
	struct mq_plug plug;
	uint64_t merges = plug_merges(q);

	mq_start_plug(&plug, 2 * RAM_BIOS);
	for (unsigned i = 0; i < 2 * RAM_BIOS; i++)
		t_submit(q, p, first + i, op, ram_sector(i), BS);
	t_check_u64(plug.rq_count, 2, "requests in plug");
	t_check_u64(plug_merges(q) - merges, 2 * RAM_BIOS - 2, "plug merges");
	mq_finish_plug(&plug);
	t_check_u64(atomic_load(&p->completed), first + 2 * RAM_BIOS,
		    "ram completes at issue");
}

/* Data written through merged requests reads back intact. */
START_TEST(test_ram_merged_data)
{
	struct mq_queue_config cfg = { .elevator = elv_names[_i] };
	struct mq_queue_stats s;
	unsigned char *disk;
	struct t_bio_pool p;
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	t_clock_fake();
	dev = t_dev_ram(1 << 20, 0);
	t_check(dev != NULL, "mq_ram_open");
	q = t_queue_create(dev, &cfg);
	t_pool_init(&p, 4 * RAM_BIOS, BS);
	disk = mq_ram_data(dev);
	memset(disk, 0xee, 1 << 20);
	for (unsigned i = 0; i < 2 * RAM_BIOS; i++)
		fill_pattern(t_pool_buf(&p, i), i);

	ram_pass(q, &p, 0, MQ_OP_WRITE);
	for (unsigned i = 0; i < 2 * RAM_BIOS; i++)
		t_check(!memcmp(disk + ram_sector(i) * MQ_SECTOR_SIZE,
				t_pool_buf(&p, i), BS), "disk data of bio %u", i);
	t_check(disk[RAM_BIOS * BS] == 0xee, "write beyond region A");
	ram_pass(q, &p, 2 * RAM_BIOS, MQ_OP_READ);
	for (unsigned i = 0; i < 2 * RAM_BIOS; i++)
		t_check(!memcmp(t_pool_buf(&p, 2 * RAM_BIOS + i),
				t_pool_buf(&p, i), BS), "read back bio %u", i);
	s = t_stats(q, -1);
	t_check_u64(s.ios[MQ_DIR_WRITE], 2, "write requests");
	t_check_u64(s.ios[MQ_DIR_READ], 2, "read requests");
	t_pool_check_done(&p, 0, 4 * RAM_BIOS);
	mq_queue_drain(q);
	t_teardown(q, dev);
	t_pool_free(&p);
}
END_TEST

static void tc(Suite *s, const char *name, const TTest *t)
{
	TCase *c = tcase_create(name);

	tcase_set_timeout(c, 60);
	tcase_add_loop_test(c, t, 0, (int)MQ_ARRAY_SIZE(elv_names));
	suite_add_tcase(s, c);
}

static Suite *plug_suite(void)
{
	Suite *s = suite_create("plug");

	tc(s, "merge_back_front", test_merge_back_front);
	tc(s, "no_merge_across_ops", test_no_merge_across_ops);
	tc(s, "flush_at_32", test_flush_at_32);
	tc(s, "flush_at_128k", test_flush_at_128k);
	tc(s, "flush_at_finish", test_flush_at_finish);
	tc(s, "flush_plug_call", test_flush_plug_call);
	tc(s, "nested_plug", test_nested_plug);
	tc(s, "plug_hint", test_plug_hint);
	tc(s, "two_hw_queues_one_thread", test_two_hw_queues_one_thread);
	tc(s, "two_queues", test_two_queues);
	tc(s, "ram_merged_data", test_ram_merged_data);
	return s;
}

T_MAIN(plug_suite)
