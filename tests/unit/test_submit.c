/* SPDX-License-Identifier: MIT */
/*
 * test_submit.c - mq_submit_bio's checks and the submissions that used to
 * deadlock a live elevator switch.
 *
 * Bio checks (the kernel's bio_check_eod and alignment): a bio that is not
 * a whole number of logical blocks, has an unknown op, or reaches past the
 * device's end - including a sector so large that sector << 9 wraps to the
 * device's start (a review found it wrote byte 0) - ends at once with an
 * error and never reaches the driver.
 *
 * Regressions of the 2026-11-30 review: an end_io that submits new I/O
 * while a switch freezes the queue (inline and task-context completion),
 * and a thread holding a plug that stores a tunable while another thread
 * switches - both hung before.
 *
 * The thread's priority class reaches its data bios, not its metadata.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "blk_i.h"
#include "mqfs/mq_dev.h"
#include "t_main.h"
#include "mqfs/dev/null.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

#define HANG_SEC	10

static _Atomic unsigned done_count;
static _Atomic int last_status;

static void count_end_io(struct mq_bio *bio)
{
	atomic_store(&last_status, bio->status);
	atomic_fetch_add(&done_count, 1);
}

/* Submit one bio and return its status (ends inline on the ram device). */
static int submit_one(struct mq_queue *q, enum mq_op op, uint64_t sector,
		      void *buf, uint32_t size)
{
	struct mq_bio bio;
	unsigned before = atomic_load(&done_count);

	mq_bio_init(&bio, op, sector, buf, size, count_end_io, NULL);
	mq_submit_bio(q, &bio);
	mq_queue_drain(q);
	ck_assert_uint_eq(atomic_load(&done_count), before + 1);
	return atomic_load(&last_status);
}

START_TEST(test_bio_checks)
{
	struct mq_dev *dev = t_dev_ram(1 << 20, 16);
	struct mq_queue_config cfg = { .elevator = _i ? "none" : "mq-deadline" };
	struct mq_queue *q = t_queue_new(dev, &cfg);
	unsigned char *ram = mq_ram_data(dev);
	static unsigned char buf[8192];
	struct mq_bio bad_op;

	memset(buf, 0xab, sizeof(buf));
	/* sector << 9 wraps to 0: must fail, not write the device's start. */
	ck_assert_int_eq(submit_one(q, MQ_OP_WRITE, 1ull << 55, buf, 4096), -EIO);
	ck_assert_uint_eq(ram[0], 0);
	ck_assert_int_eq(submit_one(q, MQ_OP_WRITE, (1 << 20) >> 9, buf, 512),
			 -EIO);
	ck_assert_int_eq(submit_one(q, MQ_OP_READ, ((1 << 20) >> 9) - 1, buf,
				    1024), -EIO);
	ck_assert_int_eq(submit_one(q, MQ_OP_WRITE, 0, buf, 100), -EINVAL);
	ck_assert_int_eq(submit_one(q, MQ_OP_WRITE, 0, buf, 0), -EINVAL);
	mq_bio_init(&bad_op, MQ_OP_READ, 0, buf, 512, count_end_io, NULL);
	bad_op.op = MQ_OP_COUNT;
	mq_submit_bio(q, &bad_op);
	ck_assert_int_eq(bad_op.status, -EINVAL);
	/* The last whole block is fine; a flush has no range. */
	ck_assert_int_eq(submit_one(q, MQ_OP_WRITE, ((1 << 20) >> 9) - 8, buf,
				    4096), 0);
	ck_assert_int_eq(submit_one(q, MQ_OP_FLUSH, 0, NULL, 0), 0);
	ck_assert_uint_eq(ram[0], 0);
	mq_queue_destroy(q);
	mq_dev_close(dev);
}
END_TEST

/* ---- an end_io that submits while a switch freezes the queue ------- */

struct chain {
	struct mq_queue *q;
	struct mq_bio first, second;
};

static void chain_second_end_io(struct mq_bio *bio)
{
	atomic_fetch_add(&done_count, 1);
}

static void chain_first_end_io(struct mq_bio *bio)
{
	struct chain *c = bio->private;

	atomic_fetch_add(&done_count, 1);
	mq_bio_init(&c->second, MQ_OP_READ, 8, NULL, 4096,
		    chain_second_end_io, c);
	mq_submit_bio(c->q, &c->second);
}

static void *switch_main(void *p)
{
	struct mq_queue *q = p;

	ck_assert_int_eq(mq_queue_switch_elevator(q, "none"), 0);
	return NULL;
}

static void join_or_fail(pthread_t t, const char *what)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += HANG_SEC;
	ck_assert_msg(pthread_timedjoin_np(t, NULL, &ts) == 0, "%s hung", what);
}

static void wait_frozen(struct mq_queue *q)
{
	for (unsigned i = 0; i < 1000000 && !atomic_load(&q->frozen); i++)
		sched_yield();
	ck_assert(atomic_load(&q->frozen));
}

/* Loop index 0: inline completion; 1: task-context completion. */
START_TEST(test_end_io_submits_during_switch)
{
	struct mq_null_config nc = { .latency_ns = 20000000 };
	struct mq_dev *dev = t_dev_null(&nc);
	struct mq_queue_config cfg = { .elevator = "mq-deadline" };
	struct mq_queue *q = t_queue_new(dev, &cfg);
	struct chain c = { .q = q };
	pthread_t t;

	atomic_store(&done_count, 0);
	mq_queue_attr_store(q, "complete_delay_us", "0");
	mq_bio_init(&c.first, MQ_OP_READ, 0, NULL, 4096, chain_first_end_io, &c);
	if (_i)
		c.first.flags |= MQ_REQ_COMPLETE_IN_TASK;
	mq_submit_bio(q, &c.first);
	pthread_create(&t, NULL, switch_main, q);
	wait_frozen(q);
	join_or_fail(t, "the switch");
	mq_queue_drain(q);
	ck_assert_uint_eq(atomic_load(&done_count), 2);
	ck_assert_str_eq(mq_queue_elevator_name(q), "none");
	mq_queue_destroy(q);
	mq_dev_close(dev);
}
END_TEST

/* ---- a plug holder stores a tunable while another thread switches ---- */

struct plugger {
	struct mq_queue *q;
	_Atomic int stage;
	int ret;
};

static void *plugger_main(void *p)
{
	struct plugger *pl = p;
	struct mq_plug plug;
	struct mq_bio bio;

	mq_start_plug(&plug, 8);
	mq_bio_init(&bio, MQ_OP_READ, 0, NULL, 4096, count_end_io, NULL);
	mq_submit_bio(pl->q, &bio);	/* held in the plug: a reference */
	atomic_store(&pl->stage, 1);
	while (atomic_load(&pl->stage) != 2)
		sched_yield();
	pl->ret = mq_queue_attr_store(pl->q, "fifo_batch", "4");
	mq_finish_plug(&plug);
	mq_queue_drain(pl->q);
	return NULL;
}

START_TEST(test_tunable_store_with_plug_during_switch)
{
	struct mq_null_config nc = { 0 };
	struct mq_dev *dev = t_dev_null(&nc);
	struct mq_queue_config cfg = { .elevator = "mq-deadline" };
	struct mq_queue *q = t_queue_new(dev, &cfg);
	struct plugger pl = { .q = q };
	pthread_t p, s;

	atomic_store(&done_count, 0);
	pthread_create(&p, NULL, plugger_main, &pl);
	while (atomic_load(&pl.stage) != 1)
		sched_yield();
	pthread_create(&s, NULL, switch_main, q);
	wait_frozen(q);
	atomic_store(&pl.stage, 2);
	join_or_fail(s, "the switch");
	join_or_fail(p, "the tunable store");
	/* The store ran after the switch to none: no such tunable. */
	ck_assert_int_eq(pl.ret, -ENOENT);
	ck_assert_uint_eq(atomic_load(&done_count), 1);
	mq_queue_destroy(q);
	mq_dev_close(dev);
}
END_TEST

/* ---- the task's priority class ------------------------------------- */

/* Submit one bio with @flags and @prio_class; its class as submitted. */
static uint8_t submit_prio(struct mq_queue *q, uint16_t flags,
			   uint8_t prio_class)
{
	static unsigned char buf[4096];
	struct mq_bio bio;

	mq_bio_init(&bio, MQ_OP_READ, 8, buf, sizeof(buf), count_end_io, NULL);
	bio.flags = flags;
	bio.prio_class = prio_class;
	mq_submit_bio(q, &bio);
	mq_queue_drain(q);
	return bio.prio_class;
}

/*
 * A data bio without a class takes the thread's (ionice through the
 * mount); metadata and a bio with a class of its own keep theirs; the
 * elevator counts each in its level; "none" keeps no levels.
 */
START_TEST(test_task_prio)
{
	struct mq_dev *dev = t_dev_ram(1 << 20, 16);
	struct mq_queue_config cfg = { .elevator = "mq-deadline" };
	struct mq_queue *q = t_queue_new(dev, &cfg);
	struct mq_prio_stats ps;

	ck_assert_int_eq(mq_task_prio(), MQ_PRIO_NONE);
	ck_assert_uint_eq(submit_prio(q, MQ_REQ_SYNC, MQ_PRIO_NONE),
			  MQ_PRIO_NONE);
	ck_assert_int_eq(mq_set_task_prio(MQ_PRIO_IDLE), MQ_PRIO_NONE);
	ck_assert_uint_eq(submit_prio(q, MQ_REQ_SYNC, MQ_PRIO_NONE),
			  MQ_PRIO_IDLE);
	ck_assert_uint_eq(submit_prio(q, MQ_REQ_SYNC, MQ_PRIO_NONE),
			  MQ_PRIO_IDLE);
	ck_assert_uint_eq(submit_prio(q, MQ_REQ_META, MQ_PRIO_NONE),
			  MQ_PRIO_NONE);
	ck_assert_uint_eq(submit_prio(q, 0, MQ_PRIO_RT), MQ_PRIO_RT);
	ck_assert_int_eq(mq_set_task_prio(MQ_PRIO_NONE), MQ_PRIO_IDLE);
	ck_assert_int_eq(mq_queue_prio_stats(q, &ps), 0);
	ck_assert_uint_eq(ps.level[0].inserted, 1);	/* RT */
	ck_assert_uint_eq(ps.level[1].inserted, 2);	/* BE and NONE */
	ck_assert_uint_eq(ps.level[2].inserted, 2);	/* IDLE */
	for (int l = 0; l < 3; l++) {
		ck_assert_uint_eq(ps.level[l].dispatched, ps.level[l].inserted);
		ck_assert_uint_eq(ps.level[l].completed, ps.level[l].inserted);
	}
	ck_assert_int_eq(mq_queue_switch_elevator(q, "none"), 0);
	ck_assert_int_eq(mq_queue_prio_stats(q, &ps), -ENOENT);
	mq_queue_destroy(q);
	mq_dev_close(dev);
}
END_TEST

static Suite *submit_suite(void)
{
	Suite *s = suite_create("submit");
	TCase *tc = t_tcase(s, "submit", 60);

	tcase_add_loop_test(tc, test_bio_checks, 0, 2);
	tcase_add_loop_test(tc, test_end_io_submits_during_switch, 0, 2);
	tcase_add_test(tc, test_tunable_store_with_plug_during_switch);
	tcase_add_test(tc, test_task_prio);
	return s;
}

T_MAIN(submit_suite)
