/* SPDX-License-Identifier: MIT */
/*
 * test_dispatch.c - Check unit tests for running a hardware queue
 * (sched/dispatch.c, with sched/complete.c and sched/worker.c).
 *
 * Tested: while the device is full, mq-deadline dequeues only until a
 * driver tag is missing, so a sequential stream keeps merging in the
 * elevator and goes out as large requests after completions, whereas
 * eager_dispatch empties the elevator onto the dispatch list where
 * nothing merges any more; leftovers on hctx->dispatch are retried
 * before the elevator is touched; a completion that frees a driver tag
 * restarts a stalled queue (sched_restart); a lower priority held back
 * behind a higher one in flight is dispatched once that completes;
 * unplugged inserts run the queue synchronously, and only async_run or
 * a busy queue hands runs to the worker; dispatch_busy follows the EWMA
 * (weight 8, factor 4) up and back down to 0; a driver that answers
 * MQ_DEV_BUSY loses no request and completes none twice.  The null
 * device runs in MANUAL irq mode under the fake clock, so requests leave
 * the device only when the test completes them.
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

/* From sched/mq-deadline.c: [RT/BE/IDLE][inserted, merged, dispatched, done]. */

#define FAR	(1024 * T_SECT_KB)	/* 1 MiB apart: never merge */
#define BS	(4 * T_KB)
#define BS_SECT	(BS >> MQ_SECTOR_SHIFT)

struct rig {
	struct mq_dev *dev;
	struct mq_queue *q;
	struct mq_hw_queue *hctx;
	struct t_bio_pool p;
};

static void rig_open(struct rig *r, unsigned qd,
		     const struct mq_queue_config *cfg, unsigned nr_bios)
{
	t_clock_fake();
	r->dev = t_null_open(qd, 1);
	r->q = t_queue_create(r->dev, cfg);
	r->hctx = r->q->hctxs[0];
	t_pool_init(&r->p, nr_bios, 0);
}

static void rig_close(struct rig *r)
{
	t_null_finish(r->q, r->dev, &r->p);
	t_pool_check_done(&r->p, 0, r->p.submitted);
	t_teardown(r->q, r->dev);
	t_pool_free(&r->p);
}

static void wr(struct rig *r, unsigned i, uint64_t sector)
{
	t_submit(r->q, &r->p, i, MQ_OP_WRITE, sector, BS);
}

static uint64_t dd_be(struct mq_queue *q, int field)
{
	uint64_t st[3][4];

	t_dd_stats(q, st);
	return st[1][field];
}

enum { DD_INS, DD_MERGED, DD_DISP, DD_DONE };

/*
 * Wait for @n requests on hctx->dispatch.  A worker pass that only
 * retries leftovers takes the list for a moment, so this is waited for
 * rather than sampled.
 */
static void wait_leftovers(struct rig *r, unsigned n)
{
	t_check(t_wait_until(t_nr_dispatch(r->q, 0) == n &&
			     t_queue_idle(r->q)),
		"dispatch list holds %u, want %u", t_nr_dispatch(r->q, 0), n);
}

/* Wait for the device to hold @n and every run of the queue to end. */
static void wait_device(struct rig *r, unsigned n)
{
	t_check(t_wait_until(mq_null_inflight(r->dev) == n &&
			     t_queue_idle(r->q)),
		"device holds %u, want %u", mq_null_inflight(r->dev), n);
}

/* The lone sequential stream, by default and with eager_dispatch. */
static const struct stream_case {
	bool eager;
	unsigned nr_requests;	/* eager: one scheduler tag per write */
	unsigned merges, leftovers, after_restart, requests;
} stream_cases[] = {
	{ false, 0, 58, 1, 2, 6 },
	{ true, 64, 0, 60, 4, 64 },
};

/*
 * Queue depth 4, 64 sequential unplugged 4 KiB writes.  By default 4 go
 * to the device, the 5th is dequeued without a driver tag and waits on
 * the dispatch list, and the 59 others merge into one elevator request
 * that leaves only when completions free tags.  With eager_dispatch
 * every run empties the elevator (the test lets each run finish), so
 * nothing merges and 64 small requests go out.
 */
START_TEST(test_merge_while_full)
{
	const struct stream_case *sc = &stream_cases[_i];
	struct mq_queue_config cfg = { .eager_dispatch = sc->eager,
				       .nr_requests = sc->nr_requests };
	struct mq_elevator *e;
	struct mq_queue_stats s;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 4, &cfg, 64);
	e = r.q->hctxs[0]->elevator;
	for (unsigned i = 0; i < 64; i++) {
		wr(&r, i, (uint64_t)i * BS_SECT);
		t_check(!sc->eager ||
			t_wait_until(!e->type->ops->has_work(e)),
			"bio %u: eager run left the elevator busy", i);
	}
	wait_device(&r, 4);
	s = t_stats(r.q, -1);
	t_check_u64(s.dispatched[MQ_DIR_WRITE], 4, "dispatched while full");
	wait_leftovers(&r, sc->leftovers);
	t_check_u64(s.elv_merges, sc->merges, "elevator merges");
	t_check_u64(s.merges[MQ_DIR_WRITE], sc->merges, "write merges");
	t_check_u64(dd_be(r.q, DD_INS), 64 - sc->merges, "requests inserted");

	t_check_u64(t_complete_due(r.dev), 4, "first completions");
	wait_device(&r, sc->after_restart);
	t_check_u64(t_stats(r.q, -1).dispatched[MQ_DIR_WRITE],
		    4 + sc->after_restart, "dispatched after the restart");
	t_null_finish(r.q, r.dev, &r.p);
	s = t_stats(r.q, -1);
	t_check_u64(s.ios[MQ_DIR_WRITE], sc->requests, "write requests");
	t_check_u64(s.sectors[MQ_DIR_WRITE], 64 * BS_SECT, "sectors");
	/* Default: what went out after the stall, 240 KiB in 2 requests. */
	t_check(sc->eager || (s.sectors[MQ_DIR_WRITE] - 4 * BS_SECT) /
		(s.ios[MQ_DIR_WRITE] - 4) >= 64 * T_SECT_KB,
		"average size after the stall too small");
	rig_close(&r);
}
END_TEST

/*
 * 16 far writes in one plug on a queue of depth 4, then one 4 KiB write
 * behind each.  By default the flush dequeues 5 (one waits for a tag)
 * and 11 stay to absorb their follow-ups; eager_dispatch pulls all 16
 * out, so no follow-up merges: 32 small requests instead of 21.
 */
START_TEST(test_eager_dispatch)
{
	bool eager = _i == 1;
	struct mq_queue_config cfg = { .nr_requests = 64,
				       .eager_dispatch = eager };
	struct mq_queue_stats s;
	struct mq_plug plug;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 4, &cfg, 32);
	mq_start_plug(&plug, 16);
	for (unsigned i = 0; i < 16; i++)
		wr(&r, i, (uint64_t)i * FAR);
	mq_finish_plug(&plug);
	wait_device(&r, 4);
	wait_leftovers(&r, eager ? 12 : 1);
	t_check_u64(dd_be(r.q, DD_DISP), eager ? 16 : 5, "left the elevator");

	for (unsigned i = 0; i < 16; i++)
		wr(&r, 16 + i, (uint64_t)i * FAR + BS_SECT);
	s = t_stats(r.q, -1);
	t_check_u64(s.elv_merges, eager ? 0 : 11, "follow-ups merged");
	t_null_finish(r.q, r.dev, &r.p);
	s = t_stats(r.q, -1);
	t_check_u64(s.ios[MQ_DIR_WRITE], eager ? 32 : 21, "write requests");
	t_check_u64(s.sectors[MQ_DIR_WRITE], 32 * BS_SECT, "sectors");
	rig_close(&r);
}
END_TEST

/*
 * A request waiting on hctx->dispatch blocks the elevator: runs while
 * the device is full leave the elevator alone, and the tag freed by one
 * completion goes to the leftover, not to the elevator's lower sectors.
 */
START_TEST(test_leftovers_first)
{
	struct mq_queue_config cfg = { .nr_requests = 64 };
	uint64_t requeues;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 4, &cfg, 7);
	for (unsigned i = 0; i < 4; i++) {
		wr(&r, i, (uint64_t)i * FAR);
		mq_clock_fake_advance(T_MS);
	}
	wr(&r, 4, 100 * FAR);			/* L: no driver tag */
	wr(&r, 5, 50 * FAR);			/* E1, E2: lower sectors */
	wr(&r, 6, 60 * FAR);
	wait_device(&r, 4);
	wait_leftovers(&r, 1);
	t_check_u64(dd_be(r.q, DD_DISP), 5, "left the elevator");

	requeues = t_stats(r.q, -1).requeues;
	mq_run_hw_queue(r.hctx, false);
	mq_run_hw_queue(r.hctx, false);
	t_check(t_wait_until(t_stats(r.q, -1).requeues >= requeues + 1),
		"runs did not retry the leftover");
	wait_leftovers(&r, 1);
	t_check_u64(dd_be(r.q, DD_DISP), 5, "elevator touched while full");

	mq_clock_fake_advance(T_LAT - 4 * T_MS);	/* X0 due, X1.. not */
	t_check_u64(mq_null_complete_due(r.dev), 1, "one completion");
	wait_device(&r, 4);
	t_check_u64(dd_be(r.q, DD_DISP), 6, "one more out of the elevator");
	wait_leftovers(&r, 1);
	t_null_finish(r.q, r.dev, &r.p);
	for (unsigned i = 5; i < 7; i++)
		t_check(atomic_load(&r.p.order[4]) < atomic_load(&r.p.order[i]),
			"leftover not completed before elevator bio %u", i);
	rig_close(&r);
}
END_TEST

/* A completion that frees driver tags restarts the stalled queue. */
START_TEST(test_sched_restart)
{
	struct mq_queue_config cfg = { 0 };
	struct rig r;

	T_BEGIN();
	rig_open(&r, 4, &cfg, 8);
	for (unsigned i = 0; i < 8; i++)
		wr(&r, i, (uint64_t)i * FAR);
	wait_device(&r, 4);
	wait_leftovers(&r, 1);
	t_check(atomic_load(&r.hctx->sched_restart), "restart not marked");
	t_check(r.q->hctxs[0]->elevator->type->ops->has_work(r.q->hctxs[0]->elevator),
		"elevator empty");

	t_check_u64(t_complete_due(r.dev), 4, "completions");
	wait_device(&r, 4);
	t_check(!atomic_load(&r.hctx->sched_restart), "restart still marked");
	wait_leftovers(&r, 0);
	t_check(!r.q->hctxs[0]->elevator->type->ops->has_work(r.q->hctxs[0]->elevator),
		"elevator not emptied");
	t_check_u64(t_complete_due(r.dev), 4, "second completions");
	t_check_u64(atomic_load(&r.p.completed), 8, "bios completed");
	rig_close(&r);
}
END_TEST

/*
 * A BE write held back behind an RT write in flight goes out after it
 * (loop index 1: with eager_dispatch).
 */
START_TEST(test_prio_held_back)
{
	struct mq_queue_config cfg = { .eager_dispatch = _i == 1 };
	struct mq_bio *bio;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 4, &cfg, 2);
	bio = t_bio_prep(&r.p, 0, MQ_OP_WRITE, 0, BS);
	bio->prio_class = MQ_PRIO_RT;
	t_submit_bio(r.q, &r.p, bio);
	wr(&r, 1, FAR);
	t_check_u64(mq_null_inflight(r.dev), 1, "BE dispatched beside RT");
	t_check_u64(t_complete_due(r.dev), 1, "RT completion");
	wait_device(&r, 1);
	t_check_u64(t_done(&r.p, 1), 0, "BE done early");
	rig_close(&r);
}
END_TEST

/* Run context: elevator and the async_run switch. */
static const struct run_case {
	const char *elv;
	bool async_run;
} run_cases[] = {
	{ "mq-deadline", false },
	{ "mq-deadline", true },
	{ "none", false },
	{ "none", true },
};

/* Unplugged submissions run the queue in the caller unless async_run. */
START_TEST(test_run_context)
{
	const struct run_case *rc = &run_cases[_i];
	struct mq_queue_config cfg = { .elevator = rc->elv,
				       .async_run = rc->async_run };
	struct mq_queue_stats s;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 128, &cfg, 10);
	for (unsigned i = 0; i < 10; i++)
		wr(&r, i, (uint64_t)i * FAR);
	wait_device(&r, 10);
	s = t_stats(r.q, -1);
	t_check_u64(s.run_sync, rc->async_run ? 0 : 10, "run_sync");
	if (rc->async_run)
		t_check(s.run_async >= 1, "no worker run");
	else
		t_check_u64(s.run_async, 0, "run_async");
	rig_close(&r);
}
END_TEST

/* A busy queue (dispatch_busy > 0) hands insert runs to the worker. */
START_TEST(test_busy_runs_async)
{
	struct mq_queue_config cfg = { .nr_requests = 8 };
	struct mq_queue_stats s;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 1, &cfg, 3);
	wr(&r, 0, 0);
	wr(&r, 1, FAR);				/* no tag: busy */
	s = t_stats(r.q, -1);
	t_check_u64(s.dispatch_busy, 2, "dispatch_busy");
	t_check_u64(s.run_sync, 2, "run_sync");
	t_check_u64(s.run_async, 0, "run_async before busy");
	wr(&r, 2, 2 * FAR);
	t_check(t_wait_until(t_stats(r.q, -1).run_async >= 1 &&
			     t_queue_idle(r.q)), "busy insert not punted");
	t_check_u64(t_stats(r.q, -1).run_sync, 2, "run_sync after busy");
	rig_close(&r);
}
END_TEST

/*
 * dispatch_busy = (busy_ewma * 7 + 16 * busy) / 8: from 0 one busy
 * outcome gives 2, repeated ones saturate at 9; non-busy dispatches
 * decay 9 -> 7 -> 6 ... -> 0.
 */
START_TEST(test_dispatch_busy_ewma)
{
	static const unsigned up[] = { 3, 4, 5, 6, 7, 8, 9, 9 };
	static const unsigned down[] = { 6, 5, 4, 3, 2, 1, 0, 0 };
	struct mq_queue_config cfg = { .nr_requests = 8 };
	unsigned b = 0;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 1, &cfg, 2 + MQ_ARRAY_SIZE(down));
	wr(&r, b++, 0);
	t_check_u64(t_stats(r.q, -1).dispatch_busy, 0, "after a dispatch");
	wr(&r, b++, FAR);
	t_check_u64(t_stats(r.q, -1).dispatch_busy, 2, "after one busy");
	for (unsigned k = 0; k < MQ_ARRAY_SIZE(up); k++) {
		mq_run_hw_queue(r.hctx, false);
		t_check(t_stats(r.q, -1).dispatch_busy == up[k],
			"busy run %u: %u, want %u", k,
			t_stats(r.q, -1).dispatch_busy, up[k]);
	}
	t_check_u64(t_complete_due(r.dev), 1, "first completion");
	wait_device(&r, 1);
	t_check_u64(t_stats(r.q, -1).dispatch_busy, 7, "after the restart");
	for (unsigned k = 0; k < MQ_ARRAY_SIZE(down); k++) {
		t_check_u64(t_complete_due(r.dev), 1, "completion");
		wr(&r, b, (uint64_t)(b + 1) * FAR);
		b++;
		wait_device(&r, 1);
		t_check(t_stats(r.q, -1).dispatch_busy == down[k],
			"decay step %u: %u, want %u", k,
			t_stats(r.q, -1).dispatch_busy, down[k]);
	}
	rig_close(&r);
}
END_TEST

/* ---- a driver that is busy for its first N queue_rq calls ------------ */

#define BUSY_QD		8

struct busy_dev {
	struct mq_dev dev;
	pthread_mutex_t lock;
	unsigned busy_left;		/* queue_rq calls still to refuse */
	unsigned calls, refused, nr_held;
	struct mq_request *held[BUSY_QD];
};

static struct busy_dev *to_busy(struct mq_dev *dev)
{
	return mq_container_of(dev, struct busy_dev, dev);
}

static int busy_queue_init(struct mq_dev *dev, unsigned index, void **priv)
{
	*priv = NULL;
	return 0;
}

static void busy_queue_exit(struct mq_dev *dev, unsigned index, void *priv)
{
}

static int busy_queue_rq(struct mq_hw_queue *hctx, struct mq_request *rq,
			 bool last)
{
	struct busy_dev *bd = to_busy(mq_hctx_dev(hctx));
	int ret = 0;

	pthread_mutex_lock(&bd->lock);
	bd->calls++;
	if (bd->busy_left) {
		bd->busy_left--;
		bd->refused++;
		ret = MQ_DEV_BUSY;
	} else if (bd->nr_held < BUSY_QD) {
		bd->held[bd->nr_held++] = rq;
	} else {
		ret = -EIO;		/* more than its tags: a core bug */
	}
	pthread_mutex_unlock(&bd->lock);
	return ret;
}

static void busy_close(struct mq_dev *dev)
{
	struct busy_dev *bd = to_busy(dev);

	pthread_mutex_destroy(&bd->lock);
	free(bd);
}

static const struct mq_dev_ops busy_ops = {
	.name = "busy",
	.queue_init = busy_queue_init,
	.queue_exit = busy_queue_exit,
	.queue_rq = busy_queue_rq,
	.close = busy_close,
};

static struct busy_dev *busy_open(unsigned busy_first)
{
	struct busy_dev *bd = calloc(1, sizeof(*bd));

	t_check(bd != NULL, "busy_open");
	pthread_mutex_init(&bd->lock, NULL);
	bd->busy_left = busy_first;
	bd->dev.ops = &busy_ops;
	snprintf(bd->dev.name, sizeof(bd->dev.name), "busy");
	bd->dev.geo = (struct mq_dev_geometry){
		.logical_block_size = 512, .physical_block_size = 4096,
		.size_bytes = 1ull << 30, .max_hw_sectors = 2048,
		.max_segments = 128, .nr_hw_queues = 1,
		.queue_depth = BUSY_QD,
	};
	return bd;
}

static unsigned busy_held(struct busy_dev *bd)
{
	unsigned n;

	pthread_mutex_lock(&bd->lock);
	n = bd->nr_held;
	pthread_mutex_unlock(&bd->lock);
	return n;
}

/* Complete everything the driver accepted, as one batch. */
static void busy_complete_all(struct busy_dev *bd)
{
	struct mq_request *rqs[BUSY_QD];
	unsigned n;

	pthread_mutex_lock(&bd->lock);
	n = bd->nr_held;
	memcpy(rqs, bd->held, n * sizeof(rqs[0]));
	bd->nr_held = 0;
	pthread_mutex_unlock(&bd->lock);
	for (unsigned i = 0; i < n; i++)
		rqs[i]->status = 0;
	if (n)
		mq_complete_batch(rqs, n);
}

static const struct busy_case {
	const char *elv;
	unsigned nr_bios, busy_first;
} busy_cases[] = {
	{ "mq-deadline", 1, 3 },
	{ "mq-deadline", 6, 3 },
	{ "none", 1, 3 },
	{ "none", 6, 3 },
};

/*
 * The driver refuses its first calls with MQ_DEV_BUSY: every request is
 * requeued and retried (also with nothing in flight to complete), and
 * every bio ends exactly once.
 */
START_TEST(test_busy_driver)
{
	const struct busy_case *bc = &busy_cases[_i];
	struct mq_queue_config cfg = { .elevator = bc->elv };
	struct busy_dev *bd = busy_open(bc->busy_first);
	struct mq_queue_stats s;
	struct t_bio_pool p;
	struct mq_queue *q;

	T_BEGIN();
	t_clock_fake();
	q = t_queue_create(&bd->dev, &cfg);
	t_pool_init(&p, bc->nr_bios, 0);
	for (unsigned i = 0; i < bc->nr_bios; i++)
		t_submit(q, &p, i, MQ_OP_WRITE, (uint64_t)i * FAR, BS);
	t_check(t_wait_until(busy_held(bd) == bc->nr_bios), "driver holds %u"
		" of %u after %u refusals", busy_held(bd), bc->nr_bios,
		bd->refused);
	busy_complete_all(bd);
	mq_queue_drain(q);
	t_check(t_wait_until(t_queue_idle(q)), "queue runs never settled");
	t_pool_check_done(&p, 0, bc->nr_bios);
	s = t_stats(q, -1);
	t_check_u64(bd->refused, bc->busy_first, "refused calls");
	t_check_u64(bd->calls, bc->busy_first + bc->nr_bios, "queue_rq calls");
	t_check(s.requeues >= bc->busy_first, "requeues %" PRIu64, s.requeues);
	t_check_u64(s.dispatched[MQ_DIR_WRITE], bc->nr_bios, "dispatched");
	t_check_u64(s.ios[MQ_DIR_WRITE], bc->nr_bios, "completed requests");
	t_check_u64(s.errors, 0, "errors");
	t_teardown(q, &bd->dev);
	t_pool_free(&p);
}
END_TEST

/*
 * Busy time (io_ticks): only intervals with a request at the device
 * count - two 10 ms services around 50 ms of idleness give 20 ms, and two
 * overlapping requests count their overlap once.
 */
START_TEST(test_busy_time)
{
	struct mq_queue_config cfg = { .elevator = "none" };
	struct t_bio_pool p;
	struct mq_queue *q;
	struct mq_dev *dev;

	T_BEGIN();
	t_clock_fake();
	dev = t_null_open(0, 1);
	q = t_queue_create(dev, &cfg);
	t_pool_init(&p, 3, 0);
	t_submit(q, &p, 0, MQ_OP_READ, 0, 4096);
	t_check_u64(t_complete_due(dev), 1, "first completion");
	mq_clock_fake_advance(50 * T_MS);
	t_submit(q, &p, 1, MQ_OP_READ, 64, 4096);
	t_submit(q, &p, 2, MQ_OP_WRITE, 128, 4096);
	t_check_u64(t_complete_due(dev), 2, "overlapping completions");
	t_pool_check_done(&p, 0, 3);
	t_check_u64(t_stats(q, -1).busy_ns, 2 * T_LAT, "busy_ns");
	t_teardown(q, dev);
	t_pool_free(&p);
}
END_TEST

static void tc(Suite *s, const char *name, const TTest *t, int loops)
{
	TCase *c = tcase_create(name);

	tcase_set_timeout(c, 60);
	if (loops)
		tcase_add_loop_test(c, t, 0, loops);
	else
		tcase_add_test(c, t);
	suite_add_tcase(s, c);
}

static Suite *dispatch_suite(void)
{
	Suite *s = suite_create("dispatch");

	tc(s, "merge_while_full", test_merge_while_full,
	   (int)MQ_ARRAY_SIZE(stream_cases));
	tc(s, "eager_dispatch", test_eager_dispatch, 2);
	tc(s, "leftovers_first", test_leftovers_first, 0);
	tc(s, "sched_restart", test_sched_restart, 0);
	tc(s, "prio_held_back", test_prio_held_back, 2);
	tc(s, "run_context", test_run_context, (int)MQ_ARRAY_SIZE(run_cases));
	tc(s, "busy_runs_async", test_busy_runs_async, 0);
	tc(s, "dispatch_busy_ewma", test_dispatch_busy_ewma, 0);
	tc(s, "busy_driver", test_busy_driver, (int)MQ_ARRAY_SIZE(busy_cases));
	tc(s, "busy_time", test_busy_time, 0);
	return s;
}

T_MAIN(dispatch_suite)
