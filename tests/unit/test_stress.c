/* SPDX-License-Identifier: MIT */
/*
 * test_stress.c - a randomized stress test of the whole block layer
 * (sched/ and its null and ram drivers) that must end with every
 * balance counter at zero.
 *
 * Four submitting threads, each with its own bios, issue a random mix of
 * reads and writes (random and sequential offsets, 512 B..64 KiB in 512 B
 * steps, random I/O priority), occasional flushes and discards, sometimes
 * inside a plug with a random batch size and request preallocation, while
 * a controller thread switches the elevator (none <-> mq-deadline) at
 * random intervals and, while mq-deadline is attached, changes its
 * tunables (fifo_batch, writes_starved, read_expire).  Against (a) a null
 * device in TIMER mode with a random latency of 20-200 us and queue depth
 * 4-32, and (b) a ram device where each thread owns a region, stamps every
 * 512-byte sector of a write with its thread id and write sequence, and
 * verifies the last-written content with reads that race the switches
 * (and, at the end, with a read-back of the whole region and a look at the
 * device memory).
 *
 * Before half of the switches the controller freezes the queue and checks
 * the balance counters mid-run (no tag held, nothing in flight,
 * mq-deadline's inserted == completed before the instance goes away).
 *
 * Every bio must complete exactly once with status 0.  After the threads
 * stop and the queue is drained: no driver or scheduler tag is held, no
 * software context holds a usage reference, nothing is in flight,
 * dispatched == completed per direction, mq-deadline's inserted ==
 * completed per priority, and mq_queue_destroy() asserts the rest.  A
 * watchdog reports a stall (deadlock or lost wakeup) with a dump of the
 * queue state instead of hanging.
 *
 * Environment: T_STRESS_SCALE (default 1) multiplies the number of I/Os;
 * T_STRESS_SEED overrides the fixed base seed, which every failure
 * message prints.
 *
 * One program from three files sharing stress_fixture.h: this one (the
 * run: set-up, watchdog, final checks, the tests), stress_worker.c (the
 * submitting threads) and stress_ctl.c (the controller).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqfs/clock.h"

#include "stress_fixture.h"
#include "t_util.h"
#include "t_main.h"
#include "mqfs/dev/null.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

/* From sched/mq-deadline.c: [RT/BE/IDLE][ins, merged, disp, done]. */

#define BASE_SEED	0x6d7166735eedull
#define NULL_OPS	10000		/* per thread, scale 1 */
#define RAM_OPS		8000
#define STALL_NS	(15ull * 1000000000ull)
#define NR_NULL_RUNS	3
#define NR_RAM_RUNS	2

/* ---- small helpers --------------------------------------------------- */

static double stress_scale(void)
{
	const char *e = getenv("T_STRESS_SCALE");
	double v = e ? strtod(e, NULL) : 1.0;

	return v > 0.01 ? v : 1.0;
}

static uint64_t base_seed(void)
{
	const char *e = getenv("T_STRESS_SEED");

	return e ? strtoull(e, NULL, 0) : BASE_SEED;
}

void run_error(struct run *r, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&r->err_lock);
	if (!r->nerr++) {
		va_start(ap, fmt);
		vsnprintf(r->err, sizeof(r->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&r->err_lock);
}

unsigned long run_nerr(struct run *r)
{
	unsigned long n;

	pthread_mutex_lock(&r->err_lock);
	n = r->nerr;
	pthread_mutex_unlock(&r->err_lock);
	return n;
}

/* ---- set up and tear down -------------------------------------------- */

static struct mq_dev *run_open_dev(struct run *r)
{
	struct mq_null_config nc = {
		.latency_ns = (uint64_t)r->latency_us * 1000,
		.queue_depth = r->depth, .nr_hw_queues = r->hw_queues,
		.irqmode = MQ_NULL_IRQ_TIMER,
	};

	if (r->ram)
		return t_dev_ram((uint64_t)NR_WORKERS * RAM_REGION *
				   MQ_SECTOR_SIZE, r->depth);
	return t_dev_null(&nc);
}

static struct run *run_new(uint64_t seed, bool ram)
{
	struct run *r = calloc(1, sizeof(*r));
	struct mq_queue_config cfg = { 0 };
	unsigned ops = (unsigned)((ram ? RAM_OPS : NULL_OPS) * stress_scale());

	ck_assert_ptr_nonnull(r);
	r->seed = seed;
	r->ram = ram;
	r->ctl_rng = seed ^ 0xc0ffeeull;
	r->latency_us = rnd_range(&r->ctl_rng, 20, 200);
	r->depth = rnd_range(&r->ctl_rng, 4, 32);
	r->hw_queues = rnd_range(&r->ctl_rng, 1, 2);
	pthread_mutex_init(&r->err_lock, NULL);
	r->dev = run_open_dev(r);
	ck_assert_msg(r->dev != NULL, "seed %#" PRIx64 ": open device", seed);
	cfg.elevator = rnd(&r->ctl_rng) & 1 ? "none" : "mq-deadline";
	cfg.queue_depth = r->depth;
	cfg.nr_hw_queues = r->hw_queues;
	r->q = t_queue_new(r->dev, &cfg);
	ck_assert_msg(r->q != NULL, "seed %#" PRIx64 ": create queue", seed);
	for (unsigned i = 0; i < NR_WORKERS; i++)
		worker_init(r, &r->w[i], i, MQ_MAX(ops, 16u));
	return r;
}

static void run_free(struct run *r)
{
	mq_queue_destroy(r->q);
	mq_dev_close(r->dev);
	for (unsigned i = 0; i < NR_WORKERS; i++)
		worker_free(&r->w[i]);
	pthread_mutex_destroy(&r->err_lock);
	free(r);
}

/* ---- watchdog -------------------------------------------------------- */

static void dump_hctx(struct mq_hw_queue *h)
{
	fprintf(stderr, "  hctx %u: run_state %d restart %d nr_dispatch %u "
		"tags %u sched_tags %u busy %u wpending %d\n", h->index,
		atomic_load(&h->run_state), atomic_load(&h->sched_restart),
		atomic_load(&h->nr_dispatch),
		mq_sbitmap_weight(&h->tags->bitmap.sb),
		h->sched_tags ? mq_sbitmap_weight(&h->sched_tags->bitmap.sb)
			      : 0, h->dispatch_busy, h->wpending);
}

static bool tag_bit_set(const struct mq_sbitmap *sb, unsigned bit)
{
	const struct mq_sbitmap_word *w = &sb->map[bit >> sb->shift];
	unsigned long m = 1ul << (bit & ((1u << sb->shift) - 1));

	return (atomic_load(&w->word) & ~atomic_load(&w->cleared)) & m;
}

static void dump_tags(const char *what, struct mq_tags *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->depth; i++) {
		struct mq_request *rq = mq_tags_rq(t, i);

		if (!tag_bit_set(&t->bitmap.sb, i))
			continue;
		fprintf(stderr, "    %s %u: rq_flags %#x op %u prio %u sector %"
			PRIu64 " bytes %u ctx %u tag %d itag %d ql %s rb %s\n",
			what, i, rq->rq_flags, rq->op, rq->prio_class,
			rq->sector, rq->nr_bytes, rq->ctx ? rq->ctx->index : 99,
			rq->tag, rq->internal_tag,
			mq_list_empty(&rq->queuelist) ? "empty" : "linked",
			mq_rb_node_empty(&rq->rb_node) ? "no" : "yes");
	}
}

static void dump_elv(struct mq_queue *q)
{
	struct mq_elevator *e = q->hctxs[0]->elevator;
	uint64_t st[3][4];

	if (!e)
		return;
	if (pthread_mutex_trylock(&e->lock)) {
		fprintf(stderr, "  mq-deadline: lock held\n");
		return;
	}
	pthread_mutex_unlock(&e->lock);
	mq_dd_stats(e, st);
	fprintf(stderr, "  mq-deadline has_work %d", e->type->ops->has_work(e));
	for (int p = 0; p < 3; p++)
		fprintf(stderr, " [%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "]",
			st[p][0], st[p][1], st[p][2], st[p][3]);
	fprintf(stderr, "\n");
}

/* Racy snapshot for a human: the run is stuck anyway. */
static void dump_state(struct run *r)
{
	struct mq_queue *q = r->q;

	fprintf(stderr, "STALL seed %#" PRIx64 " %s lat %u us depth %u hwq %u: "
		"frozen %d quiesced %d usage_waiters %d ctl_phase %d "
		"submitted %lu completed %lu switches %lu\n", r->seed,
		r->ram ? "ram" : "null", r->latency_us, r->depth, r->hw_queues,
		atomic_load(&q->frozen), atomic_load(&q->quiesced),
		atomic_load(&q->usage_waiters), atomic_load(&r->ctl_phase),
		atomic_load(&r->submitted), atomic_load(&r->completed),
		atomic_load(&r->switches));
	for (unsigned i = 0; i < MQ_NR_CTX; i++)
		if (atomic_load(&q->ctxs[i].usage))
			fprintf(stderr, "  ctx %u: usage %ld\n", i,
				atomic_load(&q->ctxs[i].usage));
	for (unsigned i = 0; i < q->nr_hw_queues; i++) {
		dump_hctx(q->hctxs[i]);
		dump_tags("tag", q->hctxs[i]->tags);
		dump_tags("stag", q->hctxs[i]->sched_tags);
	}
	dump_elv(q);
	for (unsigned i = 0; i < NR_WORKERS; i++)
		fprintf(stderr, "  worker %u: issued %u reaped %u\n", i,
			r->w[i].issued, r->w[i].reaped);
	if (!r->ram)
		fprintf(stderr, "  null device holds %u\n",
			mq_null_inflight(r->dev));
}

/* Wait for the workers; fail (without joining) if completions stop. */
static void run_wait(struct run *r)
{
	uint64_t last = atomic_load(&r->completed);
	uint64_t since = mq_clock_real_ns();

	while (atomic_load(&r->workers_done) < NR_WORKERS) {
		uint64_t now = mq_clock_real_ns(), c;

		sleep_us(20000);
		c = atomic_load(&r->completed);
		if (c != last) {
			last = c;
			since = now;
		} else if (now - since > STALL_NS) {
			dump_state(r);
			ck_abort_msg("seed %#" PRIx64 ": no completion for %llu s "
				     "(deadlock or lost wakeup), see stderr",
				     r->seed, STALL_NS / 1000000000ull);
		}
	}
}

static void run_go(struct run *r)
{
	for (unsigned i = 0; i < NR_WORKERS; i++)
		ck_assert_int_eq(pthread_create(&r->w[i].thr, NULL,
						worker_main, &r->w[i]), 0);
	ck_assert_int_eq(pthread_create(&r->ctl, NULL, controller_main, r),
			 0);
	run_wait(r);
	for (unsigned i = 0; i < NR_WORKERS; i++)
		pthread_join(r->w[i].thr, NULL);
	atomic_store(&r->stop, true);
	pthread_join(r->ctl, NULL);
}

/* ---- final checks ---------------------------------------------------- */

static void check_bios(struct run *r)
{
	ck_assert_msg(run_nerr(r) == 0, "%lu errors, first: %s", run_nerr(r),
		      r->err);
	for (unsigned i = 0; i < NR_WORKERS; i++) {
		struct worker *w = &r->w[i];

		ck_assert_msg(w->issued == w->nr_bios && w->reaped == w->issued,
			      "seed %#" PRIx64 ": thread %u issued %u reaped %u of %u",
			      r->seed, i, w->issued, w->reaped, w->nr_bios);
		for (unsigned b = 0; b < w->issued; b++)
			ck_assert_msg(atomic_load(&w->bios[b].done) == 1 &&
				      w->bios[b].status == 0,
				      "seed %#" PRIx64 ": thread %u bio %u done %d status %d",
				      r->seed, i, b,
				      atomic_load(&w->bios[b].done),
				      w->bios[b].status);
	}
	ck_assert_msg(atomic_load(&r->completed) == atomic_load(&r->submitted),
		      "seed %#" PRIx64 ": completed %lu submitted %lu", r->seed,
		      atomic_load(&r->completed), atomic_load(&r->submitted));
}

static void check_tags(struct run *r)
{
	struct mq_queue *q = r->q;

	for (unsigned i = 0; i < q->nr_hw_queues; i++) {
		struct mq_hw_queue *h = q->hctxs[i];

		ck_assert_msg(mq_sbitmap_weight(&h->tags->bitmap.sb) == 0,
			      "seed %#" PRIx64 ": hctx %u driver tags %u", r->seed,
			      i, mq_sbitmap_weight(&h->tags->bitmap.sb));
		ck_assert_msg((h->sched_tags != NULL) == (h->elevator != NULL),
			      "seed %#" PRIx64 ": sched_tags without elevator",
			      r->seed);
		if (h->sched_tags)
			ck_assert_msg(!mq_sbitmap_weight(&h->sched_tags->bitmap.sb),
				      "seed %#" PRIx64 ": hctx %u sched tags %u",
				      r->seed, i,
				      mq_sbitmap_weight(&h->sched_tags->bitmap.sb));
		ck_assert_msg(atomic_load(&h->nr_dispatch) == 0 &&
			      mq_list_empty(&h->dispatch),
			      "seed %#" PRIx64 ": hctx %u dispatch list not empty",
			      r->seed, i);
	}
	for (unsigned i = 0; i < MQ_NR_CTX; i++)
		ck_assert_msg(atomic_load(&q->ctxs[i].usage) == 0,
			      "seed %#" PRIx64 ": ctx %u usage %ld", r->seed, i,
			      atomic_load(&q->ctxs[i].usage));
}

static void check_stats(struct run *r)
{
	struct mq_queue_stats s;

	ck_assert_int_eq(mq_queue_get_stats(r->q, -1, &s), 0);
	ck_assert_msg(s.in_flight == 0, "seed %#" PRIx64 ": in_flight %" PRIu64,
		      r->seed, s.in_flight);
	for (int d = 0; d < MQ_DIR_COUNT; d++)
		ck_assert_msg(s.dispatched[d] == s.ios[d],
			      "seed %#" PRIx64 ": dir %d dispatched %" PRIu64
			      " ios %" PRIu64, r->seed, d, s.dispatched[d],
			      s.ios[d]);
	ck_assert_msg(s.bios[MQ_DIR_READ] + s.bios[MQ_DIR_WRITE] ==
		      atomic_load(&r->submitted),
		      "seed %#" PRIx64 ": stats bios %" PRIu64 " submitted %lu",
		      r->seed, s.bios[MQ_DIR_READ] + s.bios[MQ_DIR_WRITE],
		      atomic_load(&r->submitted));
	ck_assert_msg(s.errors == 0, "seed %#" PRIx64 ": %" PRIu64 " errors",
		      r->seed, s.errors);
}

static void check_deadline(struct run *r)
{
	static const char *const prio[] = { "RT", "BE", "IDLE" };
	uint64_t st[3][4];

	if (!t_dd_stats(r->q, st))
		return;
	for (int p = 0; p < 3; p++)
		ck_assert_msg(st[p][0] == st[p][3],
			      "seed %#" PRIx64 ": mq-deadline %s inserted %" PRIu64
			      " completed %" PRIu64, r->seed, prio[p], st[p][0],
			      st[p][3]);
}

/* The device memory holds exactly the last write of every sector. */
static void check_ram_data(struct run *r)
{
	const unsigned char *data = mq_ram_data(r->dev);

	for (unsigned i = 0; i < NR_WORKERS; i++) {
		struct worker *w = &r->w[i];

		for (uint64_t rel = 0; rel < RAM_REGION; rel++) {
			uint64_t sector = w->base + rel;

			ck_assert_msg(!pat_check(data + sector * MQ_SECTOR_SIZE,
						 w->id, w->sect_seq[rel], sector),
				      "seed %#" PRIx64 ": sector %" PRIu64
				      " lost write seq %u", r->seed, sector,
				      w->sect_seq[rel]);
		}
	}
}

static void run_check(struct run *r)
{
	check_bios(r);
	mq_queue_drain(r->q);
	check_tags(r);
	check_stats(r);
	check_deadline(r);
	if (r->ram)
		check_ram_data(r);
	ck_assert_msg(atomic_load(&r->switches) > 0,
		      "seed %#" PRIx64 ": no elevator switch happened", r->seed);
}

static void run_one(uint64_t seed, bool ram)
{
	struct run *r = run_new(seed, ram);

	run_go(r);
	run_check(r);
	fprintf(stderr, "stress %s seed %#" PRIx64 ": lat %u us depth %u hwq %u, "
		"%lu bios, %lu switches, %lu tunes\n", ram ? "ram" : "null",
		seed, ram ? 0 : r->latency_us, r->depth, r->hw_queues,
		atomic_load(&r->submitted), atomic_load(&r->switches),
		atomic_load(&r->tunes));
	run_free(r);
}

/* ---- tests ----------------------------------------------------------- */

START_TEST(test_stress_null_timer)
{
	run_one(base_seed() + (uint64_t)_i, false);
}
END_TEST

START_TEST(test_stress_ram)
{
	run_one(base_seed() + 0x100 + (uint64_t)_i, true);
}
END_TEST

static Suite *stress_suite(void)
{
	Suite *s = suite_create("stress");
	TCase *c = tcase_create("null_timer");

	tcase_set_timeout(c, 240);
	tcase_add_loop_test(c, test_stress_null_timer, 0, NR_NULL_RUNS);
	suite_add_tcase(s, c);
	c = tcase_create("ram");
	tcase_set_timeout(c, 240);
	tcase_add_loop_test(c, test_stress_ram, 0, NR_RAM_RUNS);
	suite_add_tcase(s, c);
	return s;
}

T_MAIN(stress_suite)
