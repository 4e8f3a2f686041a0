/* SPDX-License-Identifier: MIT */
/*
 * test_uring_submit.c - Check unit tests for the io_uring driver's
 * doorbell when the ring refuses a batch: io_uring_submit() failing with
 * an error no retry mends (EBADFD here, as an R_DISABLED ring's enter
 * returns), which the driver once answered with abort().
 *
 * liburing's io_uring_submit is interposed (t_uring.h): a broken submit
 * publishes the SQEs, as liburing does, then fails.  Tested, with a
 * reaper and caller-reaped: every request of the refused batch ends once
 * with -EIO through the completion path, the others are untouched; the
 * refused SQEs never reach the kernel later (the next batches complete
 * once each and their data is on the file); the ring owes no CQE for them
 * (the queue drains and tears down, caller-reaped teardown included).
 * A ring that still refuses at teardown (the reaper's stop cannot be
 * submitted) is left to its reaper after a bounded wait: the unmount
 * ends instead of hanging.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

static const char *const g_prog = "test_uring_submit";

#include "t_uring.h"

#define US_BS		(4 * KiB)
#define US_NR		8u		/* bios per batch */
#define US_SEED		14

struct us_ring {
	struct mq_dev *dev;
	struct mq_queue *q;
	bool polled;
	char path[PATH_MAX];
};

static void us_open(struct us_ring *r, bool caller_reap)
{
	struct mq_uring_config uc = { .caller_reap = caller_reap };

	ur_file(r->path, sizeof(r->path), "submit", 1 * MiB);
	r->polled = caller_reap;
	r->dev = ur_open(r->path, &uc);
	r->q = ur_queue(r->dev, "none", 1, 32);
}

static void us_close(struct us_ring *r)
{
	mq_queue_destroy(r->q);
	mq_dev_close(r->dev);
}

/* Every bio of @p ended (polling the queue when nothing else reaps it). */
static bool us_wait(struct us_ring *r, struct ur_pool *p)
{
	return t_wait_until((r->polled ? (void)mq_queue_poll(r->q, 0) :
					 (void)0,
			     atomic_load(&p->ended) >= p->submitted));
}

/* Where bio @i of a batch at @off writes: a gap between two, no merge. */
static uint64_t us_off(uint64_t off, unsigned i)
{
	return off + 2ull * i * US_BS;
}

/* US_NR pattern writes from @off in one plugged batch: one submit. */
static void us_write_batch(struct us_ring *r, struct ur_pool *p,
			   unsigned char *buf, uint64_t off)
{
	struct mq_plug pl;

	mq_start_plug(&pl, US_NR);
	for (unsigned i = 0; i < US_NR; i++) {
		unsigned char *b = buf + (size_t)i * US_BS;

		pat_fill(b, US_BS, us_off(off, i), US_SEED);
		ur_submit(r->q, p, MQ_OP_WRITE, us_off(off, i), US_BS, b, 0);
	}
	mq_finish_plug(&pl);
}

static void us_check_failed(struct ur_pool *p, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++) {
		t_check(atomic_load(&p->done[i]) == 1, "bio %u ended %u times",
			i, atomic_load(&p->done[i]));
		t_check(p->bios[i].status == -EIO, "bio %u: status %d", i,
			p->bios[i].status);
	}
}

/* A refused batch fails whole; the next one is written, once. */
START_TEST(test_batch_refused)
{
	unsigned char *buf = ur_alloc(2 * US_NR * US_BS);
	struct ur_pool bad, good;
	struct us_ring r;

	T_BEGIN();
	us_open(&r, _i);
	t_check(ur_pool_init(&bad, US_NR) && ur_pool_init(&good, US_NR),
		"pool");
	atomic_store(&g_submit_breaks, 1);
	us_write_batch(&r, &bad, buf, 0);
	t_check(us_wait(&r, &bad), "%u of %u refused bios ended",
		atomic_load(&bad.ended), bad.submitted);
	us_check_failed(&bad, 0, US_NR);
	t_check_u64(atomic_load(&g_submit_breaks), 0, "breaks left");

	/* Its requests are reused: stale SQEs would complete them twice. */
	us_write_batch(&r, &good, buf + US_NR * US_BS, US_BS);
	t_check(us_wait(&r, &good), "the batch after a refused one hung");
	ur_pool_check(&good, "after the refusal");
	mq_queue_drain(r.q);
	us_check_failed(&bad, 0, US_NR);
	for (unsigned i = 0; i < US_NR; i++)
		file_check_pattern(r.path, (off_t)us_off(US_BS, i), US_BS,
				   US_SEED, "batch after the refusal");
	us_close(&r);
	ur_pool_free(&bad);
	ur_pool_free(&good);
	free(buf);
}
END_TEST

/* Unplugged, one submit per bio: only the refused one fails. */
START_TEST(test_one_refused)
{
	unsigned char *buf = ur_alloc(US_NR * US_BS);
	struct ur_pool p;
	struct us_ring r;

	T_BEGIN();
	us_open(&r, _i);
	t_check(ur_pool_init(&p, US_NR), "pool");
	pat_fill(buf, US_NR * US_BS, 0, US_SEED);
	atomic_store(&g_submit_breaks, 1);
	for (unsigned i = 0; i < US_NR; i++)
		ur_submit(r.q, &p, MQ_OP_WRITE, i * US_BS, US_BS,
			  buf + (size_t)i * US_BS, 0);
	t_check(us_wait(&r, &p), "%u of %u bios ended",
		atomic_load(&p.ended), p.submitted);
	us_check_failed(&p, 0, 1);
	for (unsigned i = 1; i < US_NR; i++)
		t_check(p.bios[i].status == 0 &&
			atomic_load(&p.done[i]) == 1,
			"bio %u: status %d, ended %u times", i,
			p.bios[i].status, atomic_load(&p.done[i]));
	file_check_pattern(r.path, US_BS, (US_NR - 1) * US_BS, US_SEED,
			   "the bios after the refused one");
	us_close(&r);
	ur_pool_free(&p);
	free(buf);
}
END_TEST

/* Teardown while every submit is refused: bounded, with a reaper. */
START_TEST(test_teardown_refused)
{
	uint64_t t0;
	struct us_ring r;

	T_BEGIN();
	us_open(&r, false);
	atomic_store(&g_submit_breaks, 1000);
	t0 = mq_clock_real_ns();
	us_close(&r);
	atomic_store(&g_submit_breaks, 0);
	t_check(mq_clock_real_ns() - t0 < 10ull * 1000 * T_MS,
		"teardown took %" PRIu64 " ms",
		(uint64_t)((mq_clock_real_ns() - t0) / T_MS));
}
END_TEST

static Suite *submit_suite(void)
{
	Suite *s = suite_create("uring_submit");
	TCase *tc = t_tcase(s, "refused", 120);

	/* Loop index: 0 with a reaper, 1 caller-reaped. */
	tcase_add_loop_test(tc, test_batch_refused, 0, 2);
	tcase_add_loop_test(tc, test_one_refused, 0, 2);
	tcase_add_test(tc, test_teardown_refused);
	return s;
}

UR_MAIN(submit_suite)
