/* SPDX-License-Identifier: MIT */
/*
 * sbitmap_queue.c - test_sbitmap's cases of the wait queue
 * (mq_sbitmap_queue): wake batch and resize, wait-queue round robin,
 * wake-up accounting, and sleepers woken by frees (threads joined with
 * deadlines, never slept on to "let things happen"), the 5 ms backstop
 * in the statistics, wake_all and clear_batch.
 */
#include "sbitmap_fixture.h"

#define JOIN_TIMEOUT_S	5

static struct timespec deadline_after(int seconds)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += seconds;
	return ts;
}

static void join_or_fail(pthread_t t)
{
	struct timespec ts = deadline_after(JOIN_TIMEOUT_S);

	ck_assert_msg(pthread_timedjoin_np(t, NULL, &ts) == 0,
		      "thread did not finish within %d s", JOIN_TIMEOUT_S);
}

static unsigned int queued_waiters(struct mq_sbitmap_queue *q)
{
	unsigned int i, n = 0;

	for (i = 0; i < MQ_SBQ_WAIT_QUEUES; i++)
		n += ldu(&q->ws[i].nr_waiters);
	return n;
}

/* Spin (yielding) until @n waiters sit on the lists; fail after 5 s. */
static void wait_for_sleepers(struct mq_sbitmap_queue *q, unsigned int n)
{
	time_t end = time(NULL) + JOIN_TIMEOUT_S;

	while (queued_waiters(q) != n) {
		ck_assert_msg(time(NULL) <= end, "waiters never queued");
		sched_yield();
	}
}

struct waiter_arg {
	struct mq_sbitmap_queue *q;
	unsigned int wait_index;
	int tag;
};

static void *waiter_thread(void *p)
{
	struct waiter_arg *a = p;
	unsigned int hint = 0;

	a->tag = blocking_get(a->q, &hint, &a->wait_index);
	return NULL;
}

static void fill_queue(struct mq_sbitmap_queue *q)
{
	unsigned int hint = 0, i;

	for (i = 0; i < q->sb.depth; i++)
		ck_assert_int_ge(mq_sbq_get(q, &hint), 0);
	ck_assert_int_eq(mq_sbq_get(q, &hint), -1);
}

/* ---------------------------- sbitmap_queue ---------------------------- */

START_TEST(test_wake_batch)
{
	static const struct {
		unsigned int depth, min_shallow, expect;
	} c[] = {
		{ 1,    UINT_MAX, 1 },
		{ 8,    UINT_MAX, 1 },
		{ 16,   UINT_MAX, 2 },
		{ 32,   UINT_MAX, 4 },
		{ 64,   UINT_MAX, 8 },
		{ 256,  UINT_MAX, 8 },
		{ 1000, UINT_MAX, 8 },
		{ 256,  4,        2 },	/* 4 words x 4 = 16 -> 2 */
		{ 256,  16,       8 },	/* 4 x 16 = 64 -> 8 */
		{ 64,   1,        1 },
		{ 100,  8,        6 },	/* 6 x 8 + min(4, 8) = 52 -> 6 */
		{ 1000, 3,        6 },	/* 15 x 3 + 3 = 48 -> 6 */
	};
	unsigned int k;

	for (k = 0; k < MQ_ARRAY_SIZE(c); k++) {
		struct mq_sbitmap_queue q;

		ck_assert_int_eq(mq_sbq_init(&q, c[k].depth, -1, false), 0);
		ck_assert_uint_eq(q.min_shallow_depth, UINT_MAX);
		if (c[k].min_shallow != UINT_MAX)
			mq_sbq_min_shallow_depth(&q, c[k].min_shallow);
		ck_assert_msg(q.wake_batch == c[k].expect,
			      "depth %u min_shallow %u: wake_batch %u, want %u",
			      c[k].depth, c[k].min_shallow, q.wake_batch,
			      c[k].expect);
		mq_sbq_exit(&q);
	}
}
END_TEST

START_TEST(test_sbq_resize)
{
	struct mq_sbitmap_queue q;

	ck_assert_int_eq(mq_sbq_init(&q, 256, -1, false), 0);
	ck_assert_uint_eq(q.wake_batch, 8);
	mq_sbq_resize(&q, 16);
	ck_assert_uint_eq(q.sb.depth, 16);
	ck_assert_uint_eq(q.wake_batch, 2);
	mq_sbq_resize(&q, 256);
	ck_assert_uint_eq(q.wake_batch, 8);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_wait_ptr_round_robin)
{
	struct mq_sbitmap_queue q;
	unsigned int idx = 6, i;

	ck_assert_int_eq(mq_sbq_init(&q, 64, -1, false), 0);
	for (i = 0; i < 2 * MQ_SBQ_WAIT_QUEUES; i++)
		ck_assert_ptr_eq(mq_sbq_wait_ptr(&q, &idx),
				 &q.ws[(6 + i) % MQ_SBQ_WAIT_QUEUES]);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_sbq_clear_no_waiters)
{
	struct mq_sbitmap_queue q;
	unsigned int hint = 0;
	int tag;

	ck_assert_int_eq(mq_sbq_init(&q, 64, -1, false), 0);
	tag = mq_sbq_get(&q, &hint);
	mq_sbq_clear(&q, (unsigned int)tag, &hint);
	ck_assert_uint_eq(hint, (unsigned int)tag);
	mq_sbq_clear(&q, (unsigned int)mq_sbq_get(&q, &hint), NULL);
	/* Nobody waits: the free path must not touch the counters. */
	ck_assert_uint_eq(ldu(&q.completion_cnt), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&q.sb), 0);
	mq_sbq_exit(&q);
}
END_TEST

/* Waiters driven from this thread: wake-up accounting without timing. */
START_TEST(test_wake_accounting)
{
	struct mq_sbitmap_queue q;
	struct mq_sbq_waiter w = MQ_SBQ_WAITER_INIT;
	unsigned int i;

	ck_assert_int_eq(mq_sbq_init(&q, 64, -1, false), 0);
	fill_queue(&q);
	mq_sbq_prepare_to_wait(&q, &q.ws[0], &w);
	mq_sbq_prepare_to_wait(&q, &q.ws[0], &w);	/* idempotent */
	ck_assert_int_eq(ldi(&q.ws_active), 1);
	ck_assert_uint_eq(ldu(&q.ws[0].nr_waiters), 1);

	for (i = 0; i < 7; i++)
		mq_sbq_clear(&q, i, NULL);
	ck_assert_uint_eq(ldu(&q.completion_cnt), 7);
	ck_assert_uint_eq(ldu32(&w.state), MQ_SBQ_W_QUEUED);
	ck_assert_uint_eq(ld64(&q.wakeups), 0);

	mq_sbq_clear(&q, 7, NULL);			/* the 8th free */
	ck_assert_uint_eq(ldu32(&w.state), MQ_SBQ_W_WOKEN);
	ck_assert_uint_eq(ldu(&q.wakeup_cnt), 8);
	ck_assert_uint_eq(ld64(&q.wakeups), 1);
	ck_assert_uint_eq(queued_waiters(&q), 0);

	mq_sbq_sleep(&w);				/* returns at once */
	ck_assert_uint_eq(ld64(&q.waits), 1);
	ck_assert_uint_eq(ld64(&q.backstop_timeouts), 0);
	mq_sbq_finish_wait(&q, &q.ws[0], &w);
	ck_assert_int_eq(ldi(&q.ws_active), 0);
	ck_assert_ptr_null(w.sbq);

	/* Without waiters nothing is counted. */
	mq_sbq_clear(&q, 8, NULL);
	ck_assert_uint_eq(ldu(&q.completion_cnt), 8);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_wake_round_robin)
{
	static const unsigned int lists[3] = { 2, 3, 5 };
	struct mq_sbitmap_queue q;
	struct mq_sbq_waiter w[3];
	unsigned int i, j;

	ck_assert_int_eq(mq_sbq_init(&q, 8, -1, false), 0);
	fill_queue(&q);
	for (i = 0; i < 3; i++) {
		mq_sbq_waiter_init(&w[i]);
		mq_sbq_prepare_to_wait(&q, &q.ws[lists[i]], &w[i]);
	}
	ck_assert_int_eq(ldi(&q.ws_active), 3);
	for (i = 0; i < 3; i++) {
		mq_sbq_clear(&q, i, NULL);		/* wake_batch 1 */
		for (j = 0; j < 3; j++)
			ck_assert_uint_eq(ldu32(&w[j].state),
					  j <= i ? MQ_SBQ_W_WOKEN
						 : MQ_SBQ_W_QUEUED);
		ck_assert_uint_eq(ldu(&q.wake_index),
				  (lists[i] + 1) % MQ_SBQ_WAIT_QUEUES);
	}
	for (i = 0; i < 3; i++)
		mq_sbq_finish_wait(&q, &q.ws[lists[i]], &w[i]);
	ck_assert_int_eq(ldi(&q.ws_active), 0);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_clear_batch_accounting)
{
	struct mq_sbitmap_queue q;
	struct mq_sbq_waiter w[2] = { MQ_SBQ_WAITER_INIT, MQ_SBQ_WAITER_INIT };
	int tags[16];
	unsigned int i;

	ck_assert_int_eq(mq_sbq_init(&q, 64, -1, false), 0);
	fill_queue(&q);
	for (i = 0; i < 2; i++)
		mq_sbq_prepare_to_wait(&q, &q.ws[4], &w[i]);
	for (i = 0; i < 16; i++)
		tags[i] = (int)(i * 4);			/* all four words */
	mq_sbq_clear_batch(&q, tags, 16);
	ck_assert_uint_eq(ldu(&q.completion_cnt), 16);
	ck_assert_uint_eq(ld64(&q.wakeups), 2);
	/* One batch spent on two waiters; the other stays as credit. */
	ck_assert_uint_eq(ldu(&q.wakeup_cnt), 8);
	for (i = 0; i < 2; i++) {
		ck_assert_uint_eq(ldu32(&w[i].state), MQ_SBQ_W_WOKEN);
		mq_sbq_finish_wait(&q, &q.ws[4], &w[i]);
	}
	ck_assert_uint_eq(mq_sbitmap_weight(&q.sb), 48);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_finish_wait_unqueues)
{
	struct mq_sbitmap_queue q;
	struct mq_sbq_waiter w;
	unsigned int idx = 0;
	struct mq_sbq_wait_state *ws;

	ck_assert_int_eq(mq_sbq_init(&q, 64, -1, false), 0);
	mq_sbq_waiter_init(&w);
	ws = mq_sbq_wait_ptr(&q, &idx);
	mq_sbq_prepare_to_wait(&q, ws, &w);
	ck_assert_uint_eq(queued_waiters(&q), 1);
	mq_sbq_finish_wait(&q, ws, &w);
	ck_assert_uint_eq(queued_waiters(&q), 0);
	ck_assert_int_eq(ldi(&q.ws_active), 0);
	mq_sbq_finish_wait(&q, ws, &w);			/* harmless twice */
	ck_assert_int_eq(ldi(&q.ws_active), 0);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_resize_grow_wakes)
{
	struct mq_sbitmap_queue q;
	struct mq_sbq_waiter w = MQ_SBQ_WAITER_INIT;

	ck_assert_int_eq(mq_sbq_init(&q, 256, -1, false), 0);
	mq_sbq_resize(&q, 64);
	fill_queue(&q);
	mq_sbq_prepare_to_wait(&q, &q.ws[7], &w);
	mq_sbq_resize(&q, 32);				/* shrink: no wake */
	ck_assert_uint_eq(ldu32(&w.state), MQ_SBQ_W_QUEUED);
	mq_sbq_resize(&q, 128);		/* new tags with no free: wake */
	ck_assert_uint_eq(ldu32(&w.state), MQ_SBQ_W_WOKEN);
	ck_assert_uint_eq(ld64(&q.wakeups), 1);
	mq_sbq_finish_wait(&q, &q.ws[7], &w);
	mq_sbq_exit(&q);
}
END_TEST

/*
 * Threaded cases.  A sleeper can always also leave through the 5 ms
 * backstop (if this thread is descheduled, say), so a wake-up is required
 * only when no backstop fired.
 */
START_TEST(test_waiter_woken_by_clear)
{
	struct mq_sbitmap_queue q;
	struct waiter_arg a = { .wait_index = 3, .tag = -1 };
	pthread_t t;

	ck_assert_int_eq(mq_sbq_init(&q, 8, -1, false), 0);
	ck_assert_uint_eq(q.wake_batch, 1);
	fill_queue(&q);
	a.q = &q;
	ck_assert_int_eq(pthread_create(&t, NULL, waiter_thread, &a), 0);
	wait_for_sleepers(&q, 1);
	ck_assert_int_eq(ldi(&q.ws_active), 1);
	ck_assert_uint_eq(ldu(&q.ws[3].nr_waiters), 1);

	mq_sbq_clear(&q, 5, NULL);
	join_or_fail(t);
	ck_assert_int_eq(a.tag, 5);
	if (ld64(&q.backstop_timeouts) == 0)
		ck_assert_uint_eq(ld64(&q.wakeups), 1);
	ck_assert_int_eq(ldi(&q.ws_active), 0);
	ck_assert_uint_eq(queued_waiters(&q), 0);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_waiter_needs_wake_batch)
{
	struct mq_sbitmap_queue q;
	struct waiter_arg a = { .wait_index = 0, .tag = -1 };
	pthread_t t;
	unsigned int i;

	ck_assert_int_eq(mq_sbq_init(&q, 64, -1, false), 0);
	ck_assert_uint_eq(q.wake_batch, 8);
	fill_queue(&q);
	a.q = &q;
	ck_assert_int_eq(pthread_create(&t, NULL, waiter_thread, &a), 0);
	wait_for_sleepers(&q, 1);

	for (i = 0; i < 7; i++)
		mq_sbq_clear(&q, i, NULL);
	ck_assert_uint_eq(ld64(&q.wakeups), 0);	/* batch not met */
	mq_sbq_clear(&q, 7, NULL);
	join_or_fail(t);
	ck_assert_int_ge(a.tag, 0);
	ck_assert_int_lt(a.tag, 8);
	if (ld64(&q.backstop_timeouts) == 0)
		ck_assert_uint_eq(ld64(&q.wakeups), 1);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_backstop_counts_lost_wakeup)
{
	struct mq_sbitmap_queue q;
	struct waiter_arg a = { .wait_index = 0, .tag = -1 };
	pthread_t t;

	ck_assert_int_eq(mq_sbq_init(&q, 64, -1, false), 0);
	fill_queue(&q);
	a.q = &q;
	ck_assert_int_eq(pthread_create(&t, NULL, waiter_thread, &a), 0);
	wait_for_sleepers(&q, 1);

	/* One free < wake_batch: no wake-up, the backstop must rescue. */
	mq_sbq_clear(&q, 42, NULL);
	join_or_fail(t);
	ck_assert_int_eq(a.tag, 42);
	ck_assert_uint_eq(ld64(&q.wakeups), 0);
	ck_assert_uint_ge(ld64(&q.backstop_timeouts), 1);
	ck_assert_uint_ge(ld64(&q.waits), 1);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_wake_all)
{
	struct mq_sbitmap_queue q;
	struct waiter_arg a[2] = {
		{ .wait_index = 1, .tag = -1 },
		{ .wait_index = 6, .tag = -1 },
	};
	pthread_t t[2];
	unsigned int i;

	ck_assert_int_eq(mq_sbq_init(&q, 8, -1, false), 0);
	fill_queue(&q);
	for (i = 0; i < 2; i++) {
		a[i].q = &q;
		ck_assert_int_eq(pthread_create(&t[i], NULL, waiter_thread,
						&a[i]), 0);
	}
	wait_for_sleepers(&q, 2);
	mq_sbq_wake_all(&q);
	ck_assert_uint_eq(ld64(&q.wakeups), 2);

	/* Still full: they go back to sleep until tags really free up. */
	mq_sbq_clear(&q, 2, NULL);
	mq_sbq_clear(&q, 6, NULL);
	for (i = 0; i < 2; i++)
		join_or_fail(t[i]);
	ck_assert((a[0].tag == 2 && a[1].tag == 6) ||
		  (a[0].tag == 6 && a[1].tag == 2));
	ck_assert_int_eq(ldi(&q.ws_active), 0);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_clear_batch)
{
	struct mq_sbitmap_queue q;
	unsigned int hint = 0, i, calls;
	int tags[400];

	ck_assert_int_eq(mq_sbq_init(&q, 1000, -1, false), 0);
	ck_assert_uint_eq(batch_collect(&q.sb, &hint, 64, tags, &calls), 64);
	mq_sbq_clear_batch(&q, tags, 64);
	ck_assert_uint_eq(mq_sbitmap_weight(&q.sb), 0);
	ck_assert_uint_eq(raw_cleared(&q.sb, 0), ~0UL);	/* one word mask */

	/* Tags from 12 words in scrambled order: more than the 8 slots. */
	for (i = 0; i < 400; i++) {
		tags[i] = (int)((i * 37) % 768);
		mq_sbitmap_clear(&q.sb, 0);		/* keep word 0 busy */
	}
	hint = 0;
	while (mq_sbq_get(&q, &hint) >= 0)
		;
	ck_assert_uint_eq(mq_sbitmap_weight(&q.sb), 1000);
	mq_sbq_clear_batch(&q, tags, 400);	/* 400 distinct tags < 768 */
	ck_assert_uint_eq(mq_sbitmap_weight(&q.sb), 600);
	for (i = 0; i < 400; i++) {
		unsigned int tag = (unsigned int)tags[i];

		ck_assert(raw_cleared(&q.sb, tag >> 6) & (1UL << (tag & 63)));
	}
	mq_sbq_clear_batch(&q, tags, 0);
	mq_sbq_exit(&q);
}
END_TEST

START_TEST(test_clear_batch_wakes)
{
	struct mq_sbitmap_queue q;
	struct waiter_arg a = { .wait_index = 2, .tag = -1 };
	int tags[8] = { 3, 4, 5, 6, 40, 41, 42, 43 };
	pthread_t t;

	ck_assert_int_eq(mq_sbq_init(&q, 64, -1, false), 0);
	fill_queue(&q);
	a.q = &q;
	ck_assert_int_eq(pthread_create(&t, NULL, waiter_thread, &a), 0);
	wait_for_sleepers(&q, 1);
	mq_sbq_clear_batch(&q, tags, 8);	/* one accounting of 8 */
	ck_assert_uint_eq(ldu(&q.completion_cnt), 8);
	join_or_fail(t);
	ck_assert_int_ge(a.tag, 3);
	if (ld64(&q.backstop_timeouts) == 0)
		ck_assert_uint_eq(ld64(&q.wakeups), 1);
	mq_sbq_exit(&q);
}
END_TEST

void sbitmap_add_queue_tcases(Suite *s)
{
	TCase *tc;

	tc = tcase_create("queue");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_wake_batch);
	tcase_add_test(tc, test_sbq_resize);
	tcase_add_test(tc, test_wait_ptr_round_robin);
	tcase_add_test(tc, test_sbq_clear_no_waiters);
	tcase_add_test(tc, test_wake_accounting);
	tcase_add_test(tc, test_wake_round_robin);
	tcase_add_test(tc, test_clear_batch_accounting);
	tcase_add_test(tc, test_finish_wait_unqueues);
	tcase_add_test(tc, test_resize_grow_wakes);
	tcase_add_test(tc, test_waiter_woken_by_clear);
	tcase_add_test(tc, test_waiter_needs_wake_batch);
	tcase_add_test(tc, test_backstop_counts_lost_wakeup);
	tcase_add_test(tc, test_wake_all);
	tcase_add_test(tc, test_clear_batch);
	tcase_add_test(tc, test_clear_batch_wakes);
	suite_add_tcase(s, tc);
}
