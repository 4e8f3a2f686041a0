/* SPDX-License-Identifier: MIT */
/*
 * test_complete_task.c - Check unit tests for completion in task context
 * (sched/complete_task.c with sched/complete.c): bios flagged
 * MQ_REQ_COMPLETE_IN_TASK end in their hardware queue's completion
 * worker, after complete_delay_us, in batches.
 *
 * Tested, on the null device (MANUAL irq mode and the fake clock unless
 * said otherwise), with mq-deadline and none: flagged bios end in a thread
 * that is neither the completing nor the submitting one, one worker per
 * hardware queue, with the status and completion time the core set, and
 * every end_io has run when mq_queue_drain() returns; with
 * complete_delay_us=0 a wake-up drains everything queued (a worker held
 * inside an end_io finds the 10 completions that arrived meanwhile and
 * ends them in one more run, without another wake-up); with 50000 us a
 * burst of 64 completions costs one wake-up and one run, no end_io runs
 * before the delay, and completions arriving in two calls inside the
 * delay still make one run; the tunable rejects bad values (-EINVAL, value
 * unchanged) and round-trips good ones; bios without the flag end inline
 * in the completing thread (the test's, the timer thread, or the
 * submitter's with irqmode NONE) and never wake the worker; flagged and
 * unflagged bios mixed, also merged into one request (the flag sticks to
 * the request, so all its bios go to the task); mq_queue_destroy() and an
 * elevator switch wait for pending task completions (run under ASan for
 * use after free); an end_io in the task may submit new I/O; and a
 * concurrent mix from four threads on a timer-driven device.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t_util.h"
#include "t_main.h"
#include "mqfs/dev/null.h"
#include "t_dev.h"

#define BS		(4 * T_KB)
#define FAR		(1024 * T_SECT_KB)	/* 1 MiB apart: never merge */

static const char *const elv_names[] = { "mq-deadline", "none" };

/* ---- bios that remember where and when they ended ------------------- */

struct rec {
	pthread_t thr;			/* thread that ran end_io */
	uint64_t real_ns;		/* real clock in end_io */
	uint64_t done_ns;		/* bio->done_ns seen in end_io */
	int status;
	int hctx;			/* submitter's hardware queue */
	bool flagged;
};

struct ct_pool {
	unsigned nr;
	atomic_uint submitted;
	struct mq_bio *bios;
	struct rec *recs;
	atomic_uint *done;
	atomic_uint ended;		/* incremented last in end_io */
	/* bio @gate's end_io waits for @gate_open */
	int gate;
	atomic_bool gate_entered, gate_open;
	/* end_io of a flagged bio submits bio i + @follow_off (unflagged) */
	struct mq_queue *follow_q;
	unsigned follow_off;
};

static void ct_submit_at(struct mq_queue *q, struct ct_pool *p, unsigned i,
			 uint64_t sector, unsigned flags);

static void ct_end_io(struct mq_bio *bio)
{
	struct ct_pool *p = bio->private;
	unsigned i = (unsigned)(bio - p->bios);
	struct rec *r = &p->recs[i];

	r->thr = pthread_self();
	r->real_ns = mq_clock_real_ns();
	r->done_ns = bio->done_ns;
	r->status = bio->status;
	if ((int)i == p->gate) {
		uint64_t end = mq_clock_real_ns() + T_WAIT_NS;

		atomic_store(&p->gate_entered, true);
		while (!atomic_load(&p->gate_open) && mq_clock_real_ns() < end)
			sched_yield();
	}
	if (p->follow_q && r->flagged && i < p->follow_off)
		ct_submit_at(p->follow_q, p, i + p->follow_off,
			     bio->sector + 8, 0);
	atomic_fetch_add(&p->done[i], 1);
	atomic_fetch_add(&p->ended, 1);		/* last touch of @p */
}

static void ct_pool_init(struct ct_pool *p, unsigned nr)
{
	memset(p, 0, sizeof(*p));
	p->nr = nr;
	p->gate = -1;
	p->bios = calloc(nr, sizeof(*p->bios));
	p->recs = calloc(nr, sizeof(*p->recs));
	p->done = calloc(nr, sizeof(*p->done));
	t_check(p->bios && p->recs && p->done, "pool allocation");
}

static void ct_pool_free(struct ct_pool *p)
{
	free(p->bios);
	free(p->recs);
	free((void *)p->done);
	memset(p, 0, sizeof(*p));
}

/* Bio @i: a 4 KiB write at @sector with @flags. */
static void ct_submit_at(struct mq_queue *q, struct ct_pool *p, unsigned i,
			 uint64_t sector, unsigned flags)
{
	struct mq_bio *bio = &p->bios[i];

	mq_bio_init(bio, MQ_OP_WRITE, sector, NULL, BS, ct_end_io, p);
	bio->flags = (uint16_t)flags;
	p->recs[i].flagged = flags & MQ_REQ_COMPLETE_IN_TASK;
	p->recs[i].hctx = -1;
	atomic_fetch_add(&p->submitted, 1);
	mq_submit_bio(q, bio);
	p->recs[i].hctx = (int)mq_ctx_current(q)->hctx->index;
}

/* Bio @i far from every other one. */
static void ct_submit(struct mq_queue *q, struct ct_pool *p, unsigned i,
		      unsigned flags)
{
	ct_submit_at(q, p, i, (uint64_t)i * FAR, flags);
}

static unsigned ct_done(struct ct_pool *p, unsigned i)
{
	return atomic_load(&p->done[i]);
}

/* Bios [from, to) ended exactly once with status 0 (no waiting). */
static void ct_check_done(struct ct_pool *p, unsigned from, unsigned to,
			  const char *what)
{
	for (unsigned i = from; i < to; i++) {
		t_check(ct_done(p, i) == 1, "%s: bio %u ended %u times", what, i,
			ct_done(p, i));
		t_check(p->recs[i].status == 0, "%s: bio %u status %d", what, i,
			p->recs[i].status);
	}
}

/* ---- rigs --------------------------------------------------------------- */

struct rig {
	struct mq_dev *dev;
	struct mq_queue *q;
	unsigned nhw;
};

static void rig_open(struct rig *r, const char *elv, unsigned nhw)
{
	struct mq_queue_config cfg = { .elevator = elv, .nr_hw_queues = nhw };

	t_clock_fake();
	r->nhw = nhw;
	r->dev = t_null_open(128, nhw);
	r->q = t_queue_create(r->dev, &cfg);
}

static void set_delay(struct mq_queue *q, const char *us)
{
	char buf[32];

	t_check(mq_queue_attr_store(q, "complete_delay_us", us) == 0,
		"store complete_delay_us=%s", us);
	t_check(mq_queue_attr_show(q, "complete_delay_us", buf, sizeof(buf))
		== 0, "show complete_delay_us");
	t_check(!strcmp(buf, us), "complete_delay_us shows %s, stored %s", buf,
		us);
}

/* Complete what is due from a thread of our own; returns its id. */
struct irq_arg {
	pthread_t self;
	struct mq_dev *dev;
	unsigned n;
};

static void *irq_main(void *arg)
{
	struct irq_arg *a = arg;

	a->self = pthread_self();
	a->n = t_complete_due(a->dev);
	return NULL;
}

static pthread_t complete_from_thread(struct mq_dev *dev, unsigned *n)
{
	struct irq_arg a = { .dev = dev };
	pthread_t t;

	t_check(pthread_create(&t, NULL, irq_main, &a) == 0, "pthread_create");
	pthread_join(t, NULL);
	if (n)
		*n = a.n;
	return a.self;
}

/* Submit bios [first, first + n) with @flags from a new thread. */
struct sub_arg {
	pthread_t thr;
	struct mq_queue *q;
	struct ct_pool *p;
	unsigned first, n, flags;
	int hctx;
};

static void *sub_main(void *arg)
{
	struct sub_arg *a = arg;

	for (unsigned i = a->first; i < a->first + a->n; i++)
		ct_submit(a->q, a->p, i, a->flags);
	a->hctx = (int)mq_ctx_current(a->q)->hctx->index;
	return NULL;
}

/*
 * @nthreads submitters, each @per bios (bio index = thread * per + k);
 * hctx[t] receives the hardware queue of thread t.  Threads run one after
 * the other, so they take consecutive context slots.
 */
static void submit_from_threads(struct mq_queue *q, struct ct_pool *p,
				unsigned nthreads, unsigned per, unsigned flags,
				int *hctx)
{
	for (unsigned t = 0; t < nthreads; t++) {
		struct sub_arg a = { .q = q, .p = p, .first = t * per,
				     .n = per, .flags = flags };

		t_check(pthread_create(&a.thr, NULL, sub_main, &a) == 0,
			"pthread_create");
		pthread_join(a.thr, NULL);
		hctx[t] = a.hctx;
	}
}

static bool same_thread(pthread_t a, pthread_t b)
{
	return pthread_equal(a, b) != 0;
}

/*
 * After a drain the worker still passes its drain loop once more before
 * it sleeps; a completion arriving in that window is taken without a
 * wake-up.  Give it time to go to sleep before counting wake-ups.
 */
static void worker_settle(void)
{
	usleep(10 * 1000);
}

/* ---- flagged bios end in the worker ----------------------------------- */

/* Loop index: bit 0 elevator, bit 1 two hardware queues. */
START_TEST(test_task_thread)
{
	const unsigned per = 16;
	unsigned nhw = 1 + ((unsigned)_i >> 1), nthreads = nhw, n, nr;
	pthread_t irq, worker[2];
	bool have[2] = { false, false };
	int hctx[2] = { -1, -1 };
	struct mq_queue_stats s;
	uint64_t when;
	struct ct_pool p;
	struct rig r;
	char buf[32];

	T_BEGIN();
	rig_open(&r, elv_names[_i & 1], nhw);
	t_check(mq_queue_attr_show(r.q, "complete_delay_us", buf, sizeof(buf))
		== 0 && !strcmp(buf, "1000"), "default delay %s", buf);
	nr = nthreads * per;
	ct_pool_init(&p, nr);
	submit_from_threads(r.q, &p, nthreads, per, MQ_REQ_COMPLETE_IN_TASK,
			    hctx);
	if (nhw == 2)
		t_check(hctx[0] != hctx[1], "both submitters on hctx %d",
			hctx[0]);
	t_check_u64(mq_null_inflight(r.dev), nr, "requests on the device");

	irq = complete_from_thread(r.dev, &n);
	when = mq_clock_ns();
	t_check_u64(n, nr, "requests completed by the irq thread");
	mq_queue_drain(r.q);
	/* No waiting here: drain returned, so every end_io has run. */
	ct_check_done(&p, 0, nr, "after drain");

	for (unsigned i = 0; i < nr; i++) {
		struct rec *rc = &p.recs[i];
		int h = rc->hctx;

		t_check(!same_thread(rc->thr, irq),
			"flagged bio %u ended in the completing thread", i);
		t_check(!same_thread(rc->thr, pthread_self()),
			"flagged bio %u ended in the test thread", i);
		t_check_u64(rc->done_ns, when, "done_ns of a task completion");
		t_check(h >= 0 && h < (int)nhw, "bio %u hctx %d", i, h);
		if (!have[h]) {
			worker[h] = rc->thr;
			have[h] = true;
		}
		t_check(same_thread(rc->thr, worker[h]),
			"hctx %d: bios ended in two task threads", h);
	}
	if (nhw == 2)
		t_check(!same_thread(worker[0], worker[1]),
			"two hardware queues share a completion worker");

	s = t_stats(r.q, -1);
	t_check_u64(s.task_completions, nr, "task_completions");
	t_check(s.task_wakeups >= nhw && s.task_wakeups <= s.task_runs &&
		s.task_runs <= nr, "wakeups %" PRIu64 " runs %" PRIu64,
		s.task_wakeups, s.task_runs);
	t_check(s.task_worker_cs > 0, "worker context switches not counted");
	t_check_u64(s.ios[MQ_DIR_WRITE], nr, "write requests");
	for (unsigned h = 0; h < nhw; h++) {
		struct mq_queue_stats hs = t_stats(r.q, (int)h);

		t_check_u64(hs.task_completions, per, "task_completions of a hctx");
		t_check(hs.task_wakeups >= 1, "hctx %u never woke", h);
	}
	t_teardown(r.q, r.dev);
	ct_pool_free(&p);
}
END_TEST

/* ---- complete_delay_us=0: a wake-up drains what is there --------------- */

START_TEST(test_delay_zero)
{
	struct mq_queue_stats s;
	uint64_t runs;
	struct ct_pool p;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 1);
	set_delay(r.q, "0");
	ct_pool_init(&p, 32);

	/* Hold the worker inside the first end_io... */
	p.gate = 0;
	ct_submit(r.q, &p, 0, MQ_REQ_COMPLETE_IN_TASK);
	t_check_u64(t_complete_due(r.dev), 1, "first completion");
	t_check(t_wait_until(atomic_load(&p.gate_entered)),
		"the worker never ran the first end_io");
	s = t_stats(r.q, -1);
	t_check_u64(s.task_wakeups, 1, "wake-ups with the worker held");
	t_check_u64(s.task_completions, 0, "completions with the worker held");

	/* ...while ten more arrive: the list is not empty, no new wake-up. */
	for (unsigned i = 1; i <= 10; i++)
		ct_submit(r.q, &p, i, MQ_REQ_COMPLETE_IN_TASK);
	t_check_u64(t_complete_due(r.dev), 10, "ten completions");
	t_check_u64(atomic_load(&p.ended), 0, "ended with the worker held");
	atomic_store(&p.gate_open, true);
	mq_queue_drain(r.q);
	ct_check_done(&p, 0, 11, "after the gate");
	s = t_stats(r.q, -1);
	t_check_u64(s.task_runs, 2, "runs: the held one, then all ten at once");
	t_check_u64(s.task_completions, 11, "task_completions");
	t_check_u64(s.task_wakeups, 1, "wake-ups");

	/* One at a time: each completion is one more run. */
	runs = s.task_runs;
	for (unsigned i = 11; i < 16; i++) {
		ct_submit(r.q, &p, i, MQ_REQ_COMPLETE_IN_TASK);
		t_check_u64(t_complete_due(r.dev), 1, "single completion");
		mq_queue_drain(r.q);
		ct_check_done(&p, i, i + 1, "single");
		s = t_stats(r.q, -1);
		t_check_u64(s.task_runs, ++runs, "runs, one at a time");
		t_check_u64(s.task_completions, i + 1, "completions, one at a time");
	}
	/*
	 * Wake-ups are not counted exactly here: drain returns once the last
	 * end_io ran, and the worker may still find the next completion in
	 * its drain loop, without sleeping in between.
	 */
	t_check(s.task_wakeups >= 1 && s.task_wakeups <= s.task_runs - 1,
		"wake-ups %" PRIu64 " for %" PRIu64 " runs", s.task_wakeups,
		s.task_runs);
	t_teardown(r.q, r.dev);
	ct_pool_free(&p);
}
END_TEST

/* ---- a long delay batches a burst into one run ----------------------- */

#define BURST		64
#define LONG_DELAY_US	"50000"
#define LONG_DELAY_NS	(50 * T_MS)

/* Loop index: bit 0 elevator, bit 1 two hardware queues. */
START_TEST(test_delay_batches)
{
	unsigned nhw = 1 + ((unsigned)_i >> 1);
	unsigned nr = nhw * BURST;
	int hctx[2] = { -1, -1 };
	struct mq_queue_stats s, hs;
	uint64_t t0, t1;
	struct ct_pool p;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i & 1], nhw);
	set_delay(r.q, LONG_DELAY_US);
	ct_pool_init(&p, 3 * nr);

	for (unsigned burst = 0; burst < 2; burst++) {
		worker_settle();
		/* This burst's bios from nhw threads, one per hctx. */
		for (unsigned t = 0; t < nhw; t++) {
			struct sub_arg a = {
				.q = r.q, .p = &p,
				.first = burst * nr + t * BURST, .n = BURST,
				.flags = MQ_REQ_COMPLETE_IN_TASK,
			};

			t_check(pthread_create(&a.thr, NULL, sub_main, &a) == 0,
				"create");
			pthread_join(a.thr, NULL);
			hctx[t] = a.hctx;
		}
		if (nhw == 2)
			t_check(hctx[0] != hctx[1], "submitters share hctx %d",
				hctx[0]);
		t0 = mq_clock_real_ns();
		t_check_u64(t_complete_due(r.dev), nr, "burst completed");
		mq_queue_drain(r.q);
		ct_check_done(&p, burst * nr, (burst + 1) * nr, "burst");
		for (unsigned i = burst * nr; i < (burst + 1) * nr; i++)
			t_check(p.recs[i].real_ns >= t0 + LONG_DELAY_NS,
				"bio %u ended %" PRIu64 " us after completion, "
				"before the %s us delay", i,
				(p.recs[i].real_ns - t0) / 1000, LONG_DELAY_US);
		for (unsigned h = 0; h < nhw; h++) {
			hs = t_stats(r.q, (int)h);
			t_check_u64(hs.task_runs, burst + 1, "runs of a hctx");
			t_check_u64(hs.task_wakeups, burst + 1,
				    "wake-ups of a hctx");
			t_check_u64(hs.task_completions, (burst + 1) * BURST,
				    "completions of a hctx");
		}
	}

	/* Two completion calls inside one delay window: still one run. */
	worker_settle();
	for (unsigned t = 0; t < nhw; t++) {
		struct sub_arg a = { .q = r.q, .p = &p,
				     .first = 2 * nr + t * BURST, .n = BURST / 2,
				     .flags = MQ_REQ_COMPLETE_IN_TASK };

		t_check(pthread_create(&a.thr, NULL, sub_main, &a) == 0,
			"create");
		pthread_join(a.thr, NULL);
	}
	t0 = mq_clock_real_ns();
	t_complete_due(r.dev);
	for (unsigned t = 0; t < nhw; t++) {
		struct sub_arg a = { .q = r.q, .p = &p,
				     .first = 2 * nr + t * BURST + BURST / 2,
				     .n = BURST / 2,
				     .flags = MQ_REQ_COMPLETE_IN_TASK };

		t_check(pthread_create(&a.thr, NULL, sub_main, &a) == 0,
			"create");
		pthread_join(a.thr, NULL);
	}
	t_complete_due(r.dev);
	t1 = mq_clock_real_ns();
	mq_queue_drain(r.q);
	ct_check_done(&p, 2 * nr, 3 * nr, "two calls");
	s = t_stats(r.q, -1);
	t_check_u64(s.task_completions, 3 * nr, "task_completions");
	if (t1 - t0 < LONG_DELAY_NS / 2) {
		for (unsigned h = 0; h < nhw; h++) {
			hs = t_stats(r.q, (int)h);
			t_check_u64(hs.task_runs, 3, "runs after two calls");
			t_check_u64(hs.task_wakeups, 3, "wake-ups after two calls");
		}
	} else {
		printf("test_complete_task: two-call window took %" PRIu64
		       " us: batching not asserted\n", (t1 - t0) / 1000);
	}
	t_check(s.task_worker_cs > 0, "worker context switches");
	t_teardown(r.q, r.dev);
	ct_pool_free(&p);
}
END_TEST

/* ---- the tunable ------------------------------------------------------ */

START_TEST(test_delay_attr)
{
	static const char *const bad[] = {
		"-1", "-0", "abc", "", "1000001", "12abc", "1.5", "0x10",
		"4294967296", "99999999999999999999", "1 2", "- 1", "+-1",
	};
	static const struct { const char *in, *shown; } good[] = {
		{ "0", "0" }, { "1", "1" }, { "1000000", "1000000" },
		{ "250\n", "250" }, { "42 ", "42" }, { "007", "7" },
		{ "1000", "1000" },
	};
	const char *names[64];
	struct mq_queue_stats s;
	bool listed = false;
	char buf[32];
	struct rig r;
	int n;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 1);
	/* Statistics of a fresh queue: nothing ran. */
	s = t_stats(r.q, -1);
	t_check_u64(s.task_runs + s.task_completions + s.task_wakeups, 0,
		    "task statistics of a new queue");
	t_check(mq_queue_attr_show(r.q, "complete_delay_us", buf, sizeof(buf))
		== 0, "show");
	t_check(!strcmp(buf, "1000"), "default %s", buf);
	t_check_u64(atomic_load(&r.q->complete_delay_ns), 1000 * 1000,
		    "default delay ns");
	n = mq_queue_attr_list(r.q, names, 64);
	for (int i = 0; i < n; i++)
		listed |= !strcmp(names[i], "complete_delay_us");
	t_check(listed, "complete_delay_us not listed");

	set_delay(r.q, "777");
	for (size_t i = 0; i < MQ_ARRAY_SIZE(bad); i++) {
		int ret = mq_queue_attr_store(r.q, "complete_delay_us", bad[i]);

		t_check(ret == -EINVAL, "\"%s\" gave %d, want -EINVAL", bad[i],
			ret);
		t_check(mq_queue_attr_show(r.q, "complete_delay_us", buf,
					   sizeof(buf)) == 0, "show");
		t_check(!strcmp(buf, "777"), "\"%s\" changed the delay to %s",
			bad[i], buf);
		t_check_u64(atomic_load(&r.q->complete_delay_ns), 777 * 1000,
			    "delay ns after a rejected value");
	}
	for (size_t i = 0; i < MQ_ARRAY_SIZE(good); i++) {
		t_check(mq_queue_attr_store(r.q, "complete_delay_us",
					    good[i].in) == 0,
			"\"%s\" rejected", good[i].in);
		t_check(mq_queue_attr_show(r.q, "complete_delay_us", buf,
					   sizeof(buf)) == 0, "show");
		t_check(!strcmp(buf, good[i].shown), "\"%s\" shows %s, want %s",
			good[i].in, buf, good[i].shown);
		t_check_u64(atomic_load(&r.q->complete_delay_ns),
			    strtoull(good[i].shown, NULL, 10) * 1000,
			    "delay ns");
	}
	t_teardown(r.q, r.dev);
}
END_TEST

/*
 * A value of blanks only has no number in it: -EINVAL, as kstrtoul and
 * the empty string, not a silent delay of 0.
 */
START_TEST(test_delay_attr_blank)
{
	static const char *const blank[] = { " ", "\n", "  \n", " \n " };
	char buf[32];
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 1);
	set_delay(r.q, "777");
	for (size_t i = 0; i < MQ_ARRAY_SIZE(blank); i++) {
		int ret = mq_queue_attr_store(r.q, "complete_delay_us", blank[i]);

		t_check(mq_queue_attr_show(r.q, "complete_delay_us", buf,
					   sizeof(buf)) == 0, "show");
		t_check(ret == -EINVAL && !strcmp(buf, "777"),
			"blank value %zu (\"%s\") gave %d and set the delay "
			"to %s", i, blank[i], ret, buf);
	}
	t_teardown(r.q, r.dev);
}
END_TEST

/* ---- unflagged bios end inline --------------------------------------- */

START_TEST(test_unflagged_inline)
{
	struct mq_null_config nc = { .irqmode = MQ_NULL_IRQ_NONE };
	struct mq_queue_config cfg = { .elevator = elv_names[_i] };
	struct mq_queue_stats s;
	struct ct_pool p;
	pthread_t irq;
	struct rig r;
	unsigned n;

	T_BEGIN();
	/* MANUAL: end_io runs inside the completing thread's call. */
	rig_open(&r, elv_names[_i], 1);
	ct_pool_init(&p, 16);
	for (unsigned i = 0; i < 16; i++)
		ct_submit(r.q, &p, i, MQ_REQ_SYNC);
	irq = complete_from_thread(r.dev, &n);
	t_check_u64(n, 16, "completed");
	/* Joined the completing thread: all ended, no drain needed. */
	ct_check_done(&p, 0, 16, "inline");
	for (unsigned i = 0; i < 16; i++)
		t_check(same_thread(p.recs[i].thr, irq),
			"unflagged bio %u ended outside the completing thread", i);
	mq_queue_drain(r.q);
	s = t_stats(r.q, -1);
	t_check_u64(s.task_runs + s.task_completions + s.task_wakeups, 0,
		    "the task worker was involved");
	t_teardown(r.q, r.dev);
	ct_pool_free(&p);

	/* irqmode NONE: inside mq_submit_bio, on the submitter. */
	r.dev = t_dev_null(&nc);
	t_check(r.dev != NULL, "mq_null_open");
	r.q = t_queue_create(r.dev, &cfg);
	set_delay(r.q, "200000");
	ct_pool_init(&p, 2);
	ct_submit(r.q, &p, 0, 0);
	t_check_u64(ct_done(&p, 0), 1, "unflagged ended inside submit");
	t_check(same_thread(p.recs[0].thr, pthread_self()),
		"unflagged bio ended outside the submitter");
	ct_submit(r.q, &p, 1, MQ_REQ_COMPLETE_IN_TASK);
	t_check_u64(ct_done(&p, 1), 0, "flagged bio ended before the delay");
	mq_queue_drain(r.q);
	ct_check_done(&p, 0, 2, "irqmode none");
	t_check(!same_thread(p.recs[1].thr, pthread_self()),
		"flagged bio ended in the submitter");
	s = t_stats(r.q, -1);
	t_check_u64(s.task_completions, 1, "task_completions");
	t_teardown(r.q, r.dev);
	ct_pool_free(&p);
}
END_TEST

/* A timer-driven device: inline = the timer thread. */
START_TEST(test_timer_irq)
{
	struct mq_null_config nc = { .latency_ns = 20000,
				     .irqmode = MQ_NULL_IRQ_TIMER };
	struct mq_queue_config cfg = { .elevator = elv_names[_i] };
	pthread_t timer = 0, worker = 0;
	bool have_timer = false, have_worker = false;
	struct mq_queue_stats s;
	struct mq_dev *dev;
	struct mq_queue *q;
	struct ct_pool p;

	T_BEGIN();
	mq_clock_fake_stop();		/* the timer thread sleeps for real */
	dev = t_dev_null(&nc);
	t_check(dev != NULL, "mq_null_open");
	q = t_queue_create(dev, &cfg);
	set_delay(q, "100");
	ct_pool_init(&p, 64);
	for (unsigned i = 0; i < 64; i++)
		ct_submit(q, &p, i, i % 3 ? 0 : MQ_REQ_COMPLETE_IN_TASK);
	t_check(t_wait_until(atomic_load(&p.ended) == 64), "only %u ended",
		atomic_load(&p.ended));
	mq_queue_drain(q);
	ct_check_done(&p, 0, 64, "timer");
	for (unsigned i = 0; i < 64; i++) {
		struct rec *rc = &p.recs[i];
		pthread_t *want = rc->flagged ? &worker : &timer;
		bool *have = rc->flagged ? &have_worker : &have_timer;

		t_check(!same_thread(rc->thr, pthread_self()),
			"bio %u ended in the submitter", i);
		if (!*have) {
			*want = rc->thr;
			*have = true;
		}
		t_check(same_thread(rc->thr, *want), "%s bio %u ended in a "
			"second thread", rc->flagged ? "flagged" : "unflagged", i);
	}
	t_check(have_timer && have_worker, "both kinds ended");
	t_check(!same_thread(timer, worker),
		"flagged and unflagged bios ended in the same thread");
	s = t_stats(q, -1);
	t_check_u64(s.task_completions, 22, "task_completions");
	t_teardown(q, dev);
	ct_pool_free(&p);
}
END_TEST

/* ---- mixing ------------------------------------------------------------- */

START_TEST(test_mixed)
{
	pthread_t irq, worker = 0;
	bool have = false;
	struct mq_queue_stats s;
	struct ct_pool p;
	struct mq_plug plug;
	struct rig r;
	unsigned n;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 1);
	ct_pool_init(&p, 68);
	for (unsigned i = 0; i < 64; i++)
		ct_submit(r.q, &p, i, i % 2 ? 0 : MQ_REQ_COMPLETE_IN_TASK);
	/*
	 * Merged: the flag sticks to the request, so an unflagged bio that
	 * shares a request with a flagged one ends in the task too.
	 */
	mq_start_plug(&plug, 4);
	ct_submit_at(r.q, &p, 64, 100 * FAR, 0);
	ct_submit_at(r.q, &p, 65, 100 * FAR + BS / 512,
		     MQ_REQ_COMPLETE_IN_TASK);
	ct_submit_at(r.q, &p, 66, 200 * FAR, MQ_REQ_COMPLETE_IN_TASK);
	ct_submit_at(r.q, &p, 67, 200 * FAR + BS / 512, 0);
	mq_finish_plug(&plug);
	s = t_stats(r.q, -1);
	t_check_u64(s.plug_merges, 2, "plug merges");

	irq = complete_from_thread(r.dev, &n);
	t_check_u64(n, 64 + 2, "requests completed");
	mq_queue_drain(r.q);
	ct_check_done(&p, 0, 68, "mixed");
	for (unsigned i = 0; i < 68; i++) {
		struct rec *rc = &p.recs[i];
		bool in_task = i >= 64 || rc->flagged;

		if (!in_task) {
			t_check(same_thread(rc->thr, irq),
				"unflagged bio %u not ended inline", i);
			continue;
		}
		t_check(!same_thread(rc->thr, irq) &&
			!same_thread(rc->thr, pthread_self()),
			"bio %u (%s) not ended in the task", i,
			rc->flagged ? "flagged" : "merged with a flagged one");
		if (!have) {
			worker = rc->thr;
			have = true;
		}
		t_check(same_thread(rc->thr, worker), "bio %u: second worker", i);
	}
	s = t_stats(r.q, -1);
	t_check_u64(s.task_completions, 32 + 4, "task_completions");
	t_check_u64(s.ios[MQ_DIR_WRITE], 66, "write requests");
	t_teardown(r.q, r.dev);
	ct_pool_free(&p);
}
END_TEST

/* ---- teardown and freeze wait for the worker --------------------------- */

/*
 * Loop index: bit 0 elevator; bit 1 clear: destroy the queue with task
 * completions pending; set: switch the elevator with them pending.
 */
START_TEST(test_pending_at_destroy)
{
	const char *elv = elv_names[_i & 1];
	bool destroy = !((unsigned)_i & 2);
	struct mq_queue_stats s;
	uint64_t t0, t1;
	struct ct_pool p;
	struct rig r;

	T_BEGIN();
	rig_open(&r, elv, 2);
	set_delay(r.q, "100000");
	ct_pool_init(&p, 32);
	for (unsigned i = 0; i < 32; i++)
		ct_submit(r.q, &p, i, i % 4 ? MQ_REQ_COMPLETE_IN_TASK : 0);
	t0 = mq_clock_real_ns();
	t_check_u64(t_complete_due(r.dev), 32, "completed");
	t_check(atomic_load(&p.ended) <= 8, "%u ended before the delay",
		atomic_load(&p.ended));
	if (destroy) {
		/* No drain first: destroy itself must wait. */
		mq_queue_destroy(r.q);
		t1 = mq_clock_real_ns();
		ct_check_done(&p, 0, 32, "after destroy");
		mq_dev_close(r.dev);
	} else {
		t_check(mq_queue_switch_elevator(r.q, elv_names[!(_i & 1)])
			== 0, "switch");
		t1 = mq_clock_real_ns();
		ct_check_done(&p, 0, 32, "after the switch");
		s = t_stats(r.q, -1);
		t_check_u64(s.task_completions, 24, "task_completions");
		t_teardown(r.q, r.dev);
	}
	for (unsigned i = 0; i < 32; i++)
		if (p.recs[i].flagged)
			t_check(p.recs[i].real_ns >= t0 + 100 * T_MS &&
				p.recs[i].real_ns <= t1,
				"bio %u ended at +%" PRIu64 " us (returned at +%"
				PRIu64 " us)", i, (p.recs[i].real_ns - t0) / 1000,
				(t1 - t0) / 1000);
	ct_pool_free(&p);
}
END_TEST

/* ---- an end_io in the task submits more I/O ---------------------------- */

START_TEST(test_resubmit_from_task)
{
	const unsigned nr = 16;
	struct mq_queue_stats s;
	struct ct_pool p;
	struct rig r;
	bool ok;

	T_BEGIN();
	rig_open(&r, elv_names[_i], 2);
	set_delay(r.q, "0");
	ct_pool_init(&p, 2 * nr);
	p.follow_q = r.q;
	p.follow_off = nr;
	for (unsigned i = 0; i < nr; i++)
		ct_submit(r.q, &p, i, MQ_REQ_COMPLETE_IN_TASK);
	/* The follow-ups come from the worker: keep completing. */
	ok = t_wait_until((t_complete_due(r.dev),
			   atomic_load(&p.ended) >= 2 * nr));
	t_check(ok, "only %u of %u ended", atomic_load(&p.ended), 2 * nr);
	mq_queue_drain(r.q);
	ct_check_done(&p, 0, 2 * nr, "with follow-ups");
	for (unsigned i = nr; i < 2 * nr; i++)
		t_check(same_thread(p.recs[i].thr, pthread_self()),
			"follow-up %u not ended inline in the completer", i);
	s = t_stats(r.q, -1);
	t_check_u64(s.task_completions, nr, "task_completions");
	t_check_u64(s.ios[MQ_DIR_WRITE], 2 * nr, "write requests");
	t_teardown(r.q, r.dev);
	ct_pool_free(&p);
}
END_TEST

/* ---- four threads, a timer device, flags mixed at random -------------- */

#define CC_THREADS	4
#define CC_BIOS		400
#define CC_WINDOW	32

struct cc_thread {
	pthread_t thr;
	struct mq_queue *q;
	struct ct_pool p;
	unsigned seed, flagged;
	char err[128];
};

static void *cc_main(void *arg)
{
	struct cc_thread *t = arg;
	unsigned x = t->seed;

	for (unsigned i = 0; i < CC_BIOS; i++) {
		unsigned flags;
		struct mq_plug plug;
		bool plugged;

		x = x * 1103515245u + 12345u;
		flags = (x >> 16) & 1 ? MQ_REQ_COMPLETE_IN_TASK : 0;
		plugged = (x >> 17) & 1;
		t->flagged += flags != 0;
		while (i >= CC_WINDOW &&
		       atomic_load(&t->p.ended) < i - CC_WINDOW)
			sched_yield();
		if (plugged)
			mq_start_plug(&plug, 1);
		ct_submit(t->q, &t->p, i, flags);
		if (plugged)
			mq_finish_plug(&plug);
	}
	if (!t_wait_until(atomic_load(&t->p.ended) >= CC_BIOS))
		snprintf(t->err, sizeof(t->err), "only %u of %u ended",
			 atomic_load(&t->p.ended), CC_BIOS);
	return NULL;
}

/* Loop index: bit 0 elevator, bit 1 delay 0 or 200 us. */
START_TEST(test_concurrent_mix)
{
	struct mq_null_config nc = { .latency_ns = 20000, .nr_hw_queues = 2,
				     .irqmode = MQ_NULL_IRQ_TIMER };
	struct mq_queue_config cfg = { .elevator = elv_names[_i & 1],
				       .nr_hw_queues = 2 };
	struct cc_thread th[CC_THREADS];
	pthread_t timer = 0;
	bool have_timer = false;
	uint64_t flagged = 0;
	struct mq_queue_stats s;
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	mq_clock_fake_stop();
	dev = t_dev_null(&nc);
	t_check(dev != NULL, "mq_null_open");
	q = t_queue_create(dev, &cfg);
	set_delay(q, _i & 2 ? "200" : "0");
	for (unsigned t = 0; t < CC_THREADS; t++) {
		th[t] = (struct cc_thread){ .q = q, .seed = 77 + t * 1000 + _i };
		ct_pool_init(&th[t].p, CC_BIOS);
		t_check(pthread_create(&th[t].thr, NULL, cc_main, &th[t]) == 0,
			"pthread_create");
	}
	for (unsigned t = 0; t < CC_THREADS; t++)
		pthread_join(th[t].thr, NULL);
	mq_queue_drain(q);
	for (unsigned t = 0; t < CC_THREADS; t++) {
		t_check(!th[t].err[0], "thread %u: %s", t, th[t].err);
		ct_check_done(&th[t].p, 0, CC_BIOS, "concurrent");
		flagged += th[t].flagged;
	}
	/* Unflagged: all in the timer thread; flagged: never there. */
	for (unsigned t = 0; t < CC_THREADS; t++)
		for (unsigned i = 0; i < CC_BIOS; i++) {
			struct rec *rc = &th[t].p.recs[i];

			if (rc->flagged)
				continue;
			if (!have_timer) {
				timer = rc->thr;
				have_timer = true;
			}
			t_check(same_thread(rc->thr, timer),
				"unflagged bio %u of thread %u: second thread",
				i, t);
		}
	for (unsigned t = 0; t < CC_THREADS; t++)
		for (unsigned i = 0; i < CC_BIOS; i++) {
			struct rec *rc = &th[t].p.recs[i];

			if (rc->flagged)
				t_check(!same_thread(rc->thr, timer) &&
					!same_thread(rc->thr, th[t].thr),
					"flagged bio %u of thread %u ended "
					"inline", i, t);
		}
	s = t_stats(q, -1);
	t_check_u64(s.task_completions, flagged, "task_completions");
	t_check(s.task_wakeups <= s.task_runs && s.task_runs <= flagged,
		"wake-ups %" PRIu64 " runs %" PRIu64, s.task_wakeups,
		s.task_runs);
	t_check_u64(s.bios[MQ_DIR_WRITE], CC_THREADS * CC_BIOS, "bios");
	t_teardown(q, dev);
	for (unsigned t = 0; t < CC_THREADS; t++)
		ct_pool_free(&th[t].p);
}
END_TEST

/* ---- the program -------------------------------------------------------- */

static void tc(Suite *s, const char *name, const TTest *t, int loops,
	       int timeout)
{
	TCase *c = tcase_create(name);

	tcase_set_timeout(c, timeout);
	tcase_add_loop_test(c, t, 0, loops);
	suite_add_tcase(s, c);
}

static Suite *complete_task_suite(void)
{
	Suite *s = suite_create("complete_task");

	tc(s, "task_thread", test_task_thread, 4, 30);
	tc(s, "delay_zero", test_delay_zero, 2, 30);
	tc(s, "delay_batches", test_delay_batches, 4, 30);
	tc(s, "delay_attr", test_delay_attr, 2, 30);
	tc(s, "delay_attr_blank", test_delay_attr_blank, 2, 30);
	tc(s, "unflagged_inline", test_unflagged_inline, 2, 30);
	tc(s, "timer_irq", test_timer_irq, 2, 30);
	tc(s, "mixed", test_mixed, 2, 30);
	tc(s, "pending_at_destroy", test_pending_at_destroy, 4, 30);
	tc(s, "resubmit_from_task", test_resubmit_from_task, 2, 30);
	tc(s, "concurrent_mix", test_concurrent_mix, 4, 60);
	return s;
}

T_MAIN(complete_task_suite)
