/* SPDX-License-Identifier: MIT */
/*
 * test_sbitmap.c - Check unit tests for the scalable bitmap tag allocator
 * and its wait queue (sched/sbitmap.h).  Single-threaded cases pin down the
 * map geometry, the deferred-clear, hint, shallow and batch semantics the
 * block layer relies on; threaded cases check that sleepers are woken by
 * frees (joining with deadlines, never sleeping to "let things happen"),
 * that the 5 ms backstop shows up in the statistics, and that concurrent
 * get/clear never hands one tag to two owners.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/sbitmap.h"
#include "t_main.h"

#define LONG_BITS	((unsigned int)(sizeof(unsigned long) * 8))
#define JOIN_TIMEOUT_S	5

/* ------------------------------- helpers ------------------------------- */

/* Typed loads: keep Check's failure messages readable. */
static unsigned int ldu(_Atomic unsigned int *p) { return atomic_load(p); }
static uint32_t ldu32(_Atomic uint32_t *p) { return atomic_load(p); }
static int ldi(_Atomic int *p) { return atomic_load(p); }
static unsigned long ldul(_Atomic unsigned long *p) { return atomic_load(p); }
static uint64_t ld64(_Atomic uint64_t *p) { return atomic_load(p); }

static unsigned long raw_word(const struct mq_sbitmap *sb, unsigned int i)
{
	return atomic_load(&sb->map[i].word);
}

static unsigned long raw_cleared(const struct mq_sbitmap *sb, unsigned int i)
{
	return atomic_load(&sb->map[i].cleared);
}

/* Take every free bit; check each comes once and lies below depth. */
static unsigned int drain(struct mq_sbitmap *sb, unsigned int *hint,
			  unsigned char *seen)
{
	unsigned int n = 0;
	int bit;

	while ((bit = mq_sbitmap_get(sb, hint)) >= 0) {
		ck_assert_uint_lt((unsigned int)bit, sb->depth);
		ck_assert_msg(!seen[bit], "bit %d handed out twice", bit);
		seen[bit] = 1;
		n++;
		ck_assert_uint_le(n, sb->depth);
	}
	return n;
}

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

/* The allocation loop of the block layer: prepare, retry, sleep. */
static int blocking_get(struct mq_sbitmap_queue *q, unsigned int *hint,
			unsigned int *wait_index)
{
	struct mq_sbq_waiter w = MQ_SBQ_WAITER_INIT;
	struct mq_sbq_wait_state *ws;
	int tag = mq_sbq_get(q, hint);

	if (tag >= 0)
		return tag;
	ws = mq_sbq_wait_ptr(q, wait_index);
	for (;;) {
		mq_sbq_prepare_to_wait(q, ws, &w);
		tag = mq_sbq_get(q, hint);
		if (tag >= 0)
			break;
		mq_sbq_sleep(&w);
	}
	mq_sbq_finish_wait(q, ws, &w);
	return tag;
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

/* ------------------------------- layout -------------------------------- */

static const struct {
	unsigned int depth, shift, map_nr, last_bits;
} layouts[] = {
	{ 1,    6, 1,  1 },
	{ 3,    6, 1,  3 },
	{ 64,   4, 4,  16 },
	{ 128,  5, 4,  32 },
	{ 256,  6, 4,  64 },
	{ 1000, 6, 16, 40 },
};

START_TEST(test_layout_default_shift)
{
	struct mq_sbitmap sb;
	unsigned int depth = layouts[_i].depth;

	ck_assert_int_eq(mq_sbitmap_init(&sb, depth, -1, false), 0);
	ck_assert_uint_eq(sb.depth, depth);
	ck_assert_uint_eq(sb.shift, layouts[_i].shift);
	ck_assert_uint_eq(sb.map_nr, layouts[_i].map_nr);
	ck_assert_uint_eq(depth - ((sb.map_nr - 1) << sb.shift),
			  layouts[_i].last_bits);
	ck_assert_uint_eq((uintptr_t)sb.map % MQ_CACHELINE, 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 0);
	mq_sbitmap_exit(&sb);
	ck_assert_ptr_null(sb.map);
}
END_TEST

START_TEST(test_layout_word_struct)
{
	ck_assert_uint_eq(sizeof(struct mq_sbitmap_word), 2 * MQ_CACHELINE);
	ck_assert_uint_eq(offsetof(struct mq_sbitmap_word, cleared),
			  MQ_CACHELINE);
	ck_assert_uint_eq(_Alignof(struct mq_sbitmap_word), MQ_CACHELINE);
}
END_TEST

/* The block layer embeds the queue in calloc()ed tag sets. */
START_TEST(test_layout_queue_embeddable)
{
	struct mq_sbitmap_queue *q = calloc(1, sizeof(*q));
	unsigned int hint = 0;
	int tag;

	ck_assert_uint_le(_Alignof(struct mq_sbitmap_queue),
			  _Alignof(max_align_t));
	ck_assert_uint_ge(offsetof(struct mq_sbitmap_queue, ws_active) -
			  offsetof(struct mq_sbitmap_queue, min_shallow_depth),
			  MQ_CACHELINE);
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(mq_sbq_init(q, 128, -1, false), 0);
	tag = mq_sbq_get(q, &hint);
	ck_assert_int_eq(tag, 0);
	mq_sbq_clear(q, (unsigned int)tag, &hint);
	mq_sbq_wake_all(q);
	mq_sbq_exit(q);
	free(q);
}
END_TEST

START_TEST(test_layout_explicit_shift)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 100, 3, false), 0);
	ck_assert_uint_eq(sb.shift, 3);
	ck_assert_uint_eq(sb.map_nr, 13);
	mq_sbitmap_exit(&sb);

	ck_assert_int_eq(mq_sbitmap_init(&sb, 100, 7, false), -EINVAL);
	ck_assert_int_eq(mq_sbitmap_init(&sb, 100, 99, false), -EINVAL);

	ck_assert_int_eq(mq_sbitmap_init(&sb, 0, -1, false), 0);
	ck_assert_uint_eq(sb.map_nr, 0);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);
	ck_assert_int_eq(mq_sbitmap_get_shallow(&sb, &hint, 4), -1);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 0);
	ck_assert_uint_eq(mq_sbitmap_random_hint(&sb, 7), 0);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_random_hint)
{
	struct mq_sbitmap sb;
	unsigned int seed, words = 0;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	for (seed = 0; seed < 64; seed++) {
		unsigned int h = mq_sbitmap_random_hint(&sb, seed);

		ck_assert_uint_lt(h, 256);
		ck_assert_uint_eq(h, mq_sbitmap_random_hint(&sb, seed));
		words |= 1U << (h >> sb.shift);
	}
	ck_assert_uint_eq(words, 0xf);	/* 64 seeds reach all 4 words */
	mq_sbitmap_exit(&sb);
}
END_TEST

/* --------------------------------- get --------------------------------- */

START_TEST(test_get_until_full)
{
	static const unsigned int depths[] = { 1, 3, 64, 100, 128, 256, 1000 };
	unsigned int d;

	for (d = 0; d < MQ_ARRAY_SIZE(depths); d++) {
		struct mq_sbitmap sb;
		unsigned int depth = depths[d];
		unsigned int hint = depth / 2;
		unsigned char *seen = calloc(depth, 1);

		ck_assert_ptr_nonnull(seen);
		ck_assert_int_eq(mq_sbitmap_init(&sb, depth, -1, _i), 0);
		ck_assert_uint_eq(drain(&sb, &hint, seen), depth);
		ck_assert_uint_eq(hint, 0);	/* full map resets the hint */
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);
		ck_assert_uint_eq(mq_sbitmap_weight(&sb), depth);
		mq_sbitmap_exit(&sb);
		free(seen);
	}
}
END_TEST

START_TEST(test_clear_is_deferred)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, i;
	unsigned char seen[64] = { 0 };

	ck_assert_int_eq(mq_sbitmap_init(&sb, 64, -1, false), 0);
	ck_assert_uint_eq(drain(&sb, &hint, seen), 64);

	mq_sbitmap_clear(&sb, 21);	/* word 1, bit 5 */
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 63);
	ck_assert_uint_eq(raw_word(&sb, 1), 0xffff);	/* still set */
	ck_assert_uint_eq(raw_cleared(&sb, 1), 1UL << 5);

	/* The next get finds the map full, folds the free and reuses it. */
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 21);
	ck_assert_uint_eq(raw_cleared(&sb, 1), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 64);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);

	for (i = 0; i < 64; i++)
		mq_sbitmap_clear(&sb, i);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 0);
	memset(seen, 0, sizeof(seen));
	ck_assert_uint_eq(drain(&sb, &hint, seen), 64);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_deferred_clear_in_hinted_word)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, i;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	for (i = 0; i < 64; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	mq_sbitmap_clear(&sb, 10);
	/* Word 0 is full but has a deferred free: reused before word 1. */
	hint = 3;
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 10);
	ck_assert_uint_eq(hint, 3);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_hint_sequential)
{
	struct mq_sbitmap sb;
	unsigned int hint = 70, i;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	for (i = 0; i < 10; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)(70 + i));
	ck_assert_uint_eq(hint, 80);

	/* Within a word the search wraps below the hint before moving on. */
	hint = 120;
	for (i = 120; i < 128; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	ck_assert_uint_eq(hint, 128);	/* crosses words; wraps only at depth */
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_hint_wraps_in_word)
{
	struct mq_sbitmap sb;
	unsigned int hint = 60, i;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	for (i = 60; i < 64; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	ck_assert_uint_eq(hint, 64);
	hint = 61;			/* bits 61..63 busy: wrap to bit 0 */
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 0);
	ck_assert_uint_eq(hint, 61);	/* not the hinted bit: unchanged */
	hint = 255;
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 255);
	ck_assert_uint_eq(hint, 0);	/* wraps at depth */
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_hint_out_of_range)
{
	struct mq_sbitmap sb;
	unsigned int hint = 5000;
	int bit;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 100, -1, false), 0);
	bit = mq_sbitmap_get(&sb, &hint);
	ck_assert_int_eq(bit, 5000 % 100);
	ck_assert_uint_lt(hint, 100);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_put_hint)
{
	struct mq_sbitmap sb, rr;
	unsigned int hint = 0;
	int a, b, c;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	a = mq_sbitmap_get(&sb, &hint);
	b = mq_sbitmap_get(&sb, &hint);
	c = mq_sbitmap_get(&sb, &hint);
	ck_assert_int_eq(c, 2);
	mq_sbitmap_clear(&sb, (unsigned int)b);
	mq_sbitmap_put_hint(&sb, (unsigned int)b, &hint);
	ck_assert_uint_eq(hint, (unsigned int)b);
	/* Deferred: the next get continues right after the freed bit. */
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 3);
	mq_sbitmap_put_hint(&sb, 999, &hint);	/* out of range: ignored */
	ck_assert_uint_eq(hint, (unsigned int)b);
	(void)a;
	mq_sbitmap_exit(&sb);

	ck_assert_int_eq(mq_sbitmap_init(&rr, 256, -1, true), 0);
	hint = 7;
	mq_sbitmap_put_hint(&rr, 3, &hint);
	ck_assert_uint_eq(hint, 7);		/* round robin: no reuse */
	mq_sbitmap_exit(&rr);
}
END_TEST

START_TEST(test_put_hint_reuses_after_wrap)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, i;
	int bit;

	/* One 16-bit word per 64 bits of depth: a word fills quickly. */
	ck_assert_int_eq(mq_sbitmap_init(&sb, 16, 4, false), 0);
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	mq_sbitmap_clear(&sb, 9);
	mq_sbitmap_put_hint(&sb, 9, &hint);
	bit = mq_sbitmap_get(&sb, &hint);
	ck_assert_int_eq(bit, 9);		/* cache-hot tag comes back */
	ck_assert_uint_eq(hint, 10);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_round_robin)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, i;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 8, -1, true), 0);
	ck_assert_uint_eq(sb.shift, 1);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	mq_sbitmap_clear(&sb, 1);
	mq_sbitmap_clear(&sb, 0);
	/* Strict order: freed low bits wait until the hint comes around. */
	for (i = 3; i < 8; i++)
		ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), (int)i);
	ck_assert_uint_eq(hint, 0);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 0);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 1);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);

	/* A free below the hint in the hint's own word is still found. */
	mq_sbitmap_clear(&sb, 4);
	hint = 5;
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 4);
	mq_sbitmap_exit(&sb);
}
END_TEST

/* ------------------------------- shallow ------------------------------- */

START_TEST(test_shallow_limits_each_word)
{
	static const struct {
		unsigned int depth, shallow, expect;
	} c[] = {
		{ 256, 5,  20 },	/* 4 words x 5 */
		{ 256, 64, 256 },
		{ 256, 99, 256 },	/* above the word size: no limit */
		{ 100, 6,  40 },	/* 6 x 16-bit words + 4-bit tail */
		{ 64,  1,  4 },
	};
	unsigned int k;

	for (k = 0; k < MQ_ARRAY_SIZE(c); k++) {
		struct mq_sbitmap sb;
		unsigned int hint = 13, n = 0, bits;
		int bit;

		ck_assert_int_eq(mq_sbitmap_init(&sb, c[k].depth, -1, false), 0);
		bits = 1U << sb.shift;
		while ((bit = mq_sbitmap_get_shallow(&sb, &hint,
						     c[k].shallow)) >= 0) {
			ck_assert_uint_lt((unsigned int)bit % bits,
					  c[k].shallow);
			n++;
		}
		ck_assert_uint_eq(n, c[k].expect);
		ck_assert_uint_eq(mq_sbitmap_weight(&sb), c[k].expect);
		ck_assert_int_eq(mq_sbitmap_get_shallow(&sb, &hint, 0), -1);
		/* A normal get still sees the rest of the map. */
		if (c[k].expect < c[k].depth)
			ck_assert_int_ge(mq_sbitmap_get(&sb, &hint), 0);
		mq_sbitmap_exit(&sb);
	}
}
END_TEST

START_TEST(test_shallow_uses_deferred_frees)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	while (mq_sbitmap_get_shallow(&sb, &hint, 2) >= 0)
		;
	mq_sbitmap_clear(&sb, 129);
	ck_assert_int_eq(mq_sbitmap_get_shallow(&sb, &hint, 2), 129);
	mq_sbitmap_exit(&sb);
}
END_TEST

/* -------------------------------- batch -------------------------------- */

static unsigned int run_len(unsigned long mask)
{
	unsigned int n = 0;

	while (mask & 1) {
		mask >>= 1;
		n++;
	}
	ck_assert_msg(mask == 0, "batch mask is not a contiguous run");
	return n;
}

START_TEST(test_batch_contiguous)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, off = 0;
	unsigned long mask;
	int bit;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	hint = 5;
	bit = mq_sbitmap_get(&sb, &hint);
	ck_assert_int_eq(bit, 5);

	hint = 0;
	mask = mq_sbitmap_get_batch(&sb, &hint, 32, &off);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(mask, 0x1f);		/* stops at busy bit 5 */
	ck_assert_uint_eq(hint, 5);

	mask = mq_sbitmap_get_batch(&sb, &hint, 32, &off);
	ck_assert_uint_eq(off, 6);
	ck_assert_uint_eq(run_len(mask), 32);
	ck_assert_uint_eq(raw_word(&sb, 0), (1UL << 38) - 1);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 38);
	mq_sbitmap_exit(&sb);
}
END_TEST

/* The block layer's loop: call until @want tags or a call returns 0. */
static unsigned int batch_collect(struct mq_sbitmap *sb, unsigned int *hint,
				  unsigned int want, int *tags,
				  unsigned int *calls)
{
	unsigned int n = 0, off;
	unsigned long mask;

	*calls = 0;
	while (n < want &&
	       (mask = mq_sbitmap_get_batch(sb, hint, want - n, &off))) {
		unsigned int len = run_len(mask), i;

		ck_assert_uint_le(len, want - n);
		/* A run never crosses a word. */
		ck_assert_uint_eq(off >> sb->shift,
				  (off + len - 1) >> sb->shift);
		for (i = 0; i < len; i++)
			tags[n++] = (int)(off + i);
		(*calls)++;
	}
	return n;
}

START_TEST(test_batch_loop_across_words)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, calls, i;
	int tags[64];

	ck_assert_int_eq(mq_sbitmap_init(&sb, 128, -1, false), 0);
	ck_assert_uint_eq(sb.shift, 5);
	ck_assert_uint_eq(batch_collect(&sb, &hint, 48, tags, &calls), 48);
	ck_assert_uint_eq(calls, 2);
	for (i = 0; i < 48; i++)
		ck_assert_int_eq(tags[i], (int)i);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 48);

	/* nr above the word size is capped by one word per call. */
	ck_assert_uint_eq(batch_collect(&sb, &hint, 64, tags, &calls), 64);
	ck_assert_uint_ge(calls, 3);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_batch_full_and_partial_word)
{
	struct mq_sbitmap sb;
	unsigned int hint = 96, off = 0, calls;
	unsigned long mask;
	int tags[128];

	/* depth 100: six 16-bit words and a 4-bit tail word. */
	ck_assert_int_eq(mq_sbitmap_init(&sb, 100, -1, false), 0);
	mask = mq_sbitmap_get_batch(&sb, &hint, 32, &off);
	ck_assert_uint_eq(off, 96);
	ck_assert_uint_eq(mask, 0xf);
	ck_assert_uint_eq(hint, 0);

	ck_assert_uint_eq(batch_collect(&sb, &hint, 128, tags, &calls), 96);
	ck_assert_uint_eq(mq_sbitmap_get_batch(&sb, &hint, 8, &off), 0);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 100);

	/* A deferred free is folded in before the batch scan. */
	mq_sbitmap_clear(&sb, 40);
	mq_sbitmap_clear(&sb, 41);
	mask = mq_sbitmap_get_batch(&sb, &hint, 8, &off);
	ck_assert_uint_eq(off, 40);
	ck_assert_uint_eq(mask, 0x3);
	ck_assert_uint_eq(mq_sbitmap_get_batch(&sb, &hint, 0, &off), 0);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_batch_round_robin)
{
	struct mq_sbitmap sb;
	unsigned int hint = 0, off = 0;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, true), 0);
	ck_assert_uint_eq(mq_sbitmap_get_batch(&sb, &hint, 8, &off), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 0);
	mq_sbitmap_exit(&sb);
}
END_TEST

START_TEST(test_clear_mask)
{
	struct mq_sbitmap sb;
	unsigned int hint = 64, off = 0;
	unsigned long mask;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	mask = mq_sbitmap_get_batch(&sb, &hint, 32, &off);
	ck_assert_uint_eq(off, 64);
	ck_assert_uint_eq(mask, 0xffffffffUL);
	mq_sbitmap_clear_mask(&sb, off >> sb.shift, 0xff0UL << (off & 63));
	ck_assert_uint_eq(raw_cleared(&sb, 1), 0xff0UL);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 24);
	/* Next batch in that word folds the frees and starts at bit 4. */
	hint = 64;
	mask = mq_sbitmap_get_batch(&sb, &hint, 32, &off);
	ck_assert_uint_eq(off, 68);
	ck_assert_uint_eq(mask, 0xff);
	ck_assert_uint_eq(raw_cleared(&sb, 1), 0);
	mq_sbitmap_exit(&sb);
}
END_TEST

/* -------------------------------- resize ------------------------------- */

START_TEST(test_resize)
{
	struct mq_sbitmap sb;
	unsigned char seen[256] = { 0 };
	unsigned int hint = 0, i;

	ck_assert_int_eq(mq_sbitmap_init(&sb, 256, -1, false), 0);
	mq_sbitmap_resize(&sb, 100);
	ck_assert_uint_eq(sb.depth, 100);
	ck_assert_uint_eq(sb.shift, 6);		/* geometry kept */
	ck_assert_uint_eq(sb.map_nr, 2);
	ck_assert_uint_eq(drain(&sb, &hint, seen), 100);

	hint = 200;				/* stale hint from old depth */
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), -1);

	mq_sbitmap_clear(&sb, 99);
	mq_sbitmap_resize(&sb, 256);		/* folds pending frees */
	ck_assert_uint_eq(raw_cleared(&sb, 1), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 99);
	seen[99] = 0;
	ck_assert_uint_eq(drain(&sb, &hint, seen), 157);
	for (i = 0; i < 256; i++)
		ck_assert(seen[i]);

	/* Shrink while tags are held; freeing them afterwards is fine. */
	mq_sbitmap_resize(&sb, 64);
	ck_assert_uint_eq(mq_sbitmap_weight(&sb), 64);
	mq_sbitmap_clear(&sb, 200);
	mq_sbitmap_clear(&sb, 3);
	ck_assert_int_eq(mq_sbitmap_get(&sb, &hint), 3);
	mq_sbitmap_exit(&sb);
}
END_TEST

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

/* -------------------------------- stress ------------------------------- */

#define STRESS_THREADS	4
#define STRESS_ITERS	200000
#define STRESS_HOLD	3
#define STRESS_MAXDEPTH	64

struct stress {
	struct mq_sbitmap_queue q;
	_Atomic int owner[STRESS_MAXDEPTH];
	_Atomic unsigned long errors;
	bool blocking;
};

struct stress_arg {
	struct stress *s;
	int id;
};

static void stress_take(struct stress *s, int tag, int id)
{
	int expect = 0;

	if (tag < 0 || tag >= (int)s->q.sb.depth ||
	    !atomic_compare_exchange_strong(&s->owner[tag], &expect, id))
		atomic_fetch_add(&s->errors, 1);
}

static void stress_give(struct stress *s, int tag, int id)
{
	int expect = id;

	if (!atomic_compare_exchange_strong(&s->owner[tag], &expect, 0))
		atomic_fetch_add(&s->errors, 1);
}

static int stress_get(struct stress *s, unsigned int *hint,
		      unsigned int *wait_index)
{
	int tag;

	if (s->blocking)
		return blocking_get(&s->q, hint, wait_index);
	while ((tag = mq_sbq_get(&s->q, hint)) < 0)
		sched_yield();
	return tag;
}

/*
 * Each thread keeps up to STRESS_HOLD tags and frees the oldest before
 * taking another, now and then all at once through clear_batch.
 */
static void *stress_thread(void *p)
{
	struct stress_arg *a = p;
	struct stress *s = a->s;
	unsigned int hint = mq_sbitmap_random_hint(&s->q.sb, (unsigned)a->id);
	unsigned int wait_index = (unsigned int)a->id, head = 0, n = 0, i;
	int held[STRESS_HOLD];

	for (i = 0; i < STRESS_ITERS; i++) {
		if (n == STRESS_HOLD && (i & 63) == 0) {
			for (n = 0; n < STRESS_HOLD; n++)
				stress_give(s, held[n], a->id);
			mq_sbq_clear_batch(&s->q, held, STRESS_HOLD);
			n = head = 0;
		} else if (n == STRESS_HOLD) {
			stress_give(s, held[head], a->id);
			mq_sbq_clear(&s->q, (unsigned int)held[head], &hint);
			n--;
			head = (head + 1) % STRESS_HOLD;
		}
		held[(head + n) % STRESS_HOLD] = stress_get(s, &hint,
							    &wait_index);
		stress_take(s, held[(head + n) % STRESS_HOLD], a->id);
		n++;
	}
	for (; n; n--, head = (head + 1) % STRESS_HOLD) {
		stress_give(s, held[head], a->id);
		mq_sbq_clear(&s->q, (unsigned int)held[head], NULL);
	}
	return NULL;
}

static void run_stress(unsigned int depth, bool blocking)
{
	static struct stress s;
	struct stress_arg args[STRESS_THREADS];
	pthread_t t[STRESS_THREADS];
	unsigned int i;

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(mq_sbq_init(&s.q, depth, -1, false), 0);
	s.blocking = blocking;
	for (i = 0; i < STRESS_THREADS; i++) {
		args[i] = (struct stress_arg){ .s = &s, .id = (int)i + 1 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, stress_thread,
						&args[i]), 0);
	}
	for (i = 0; i < STRESS_THREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_uint_eq(ldul(&s.errors), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&s.q.sb), 0);
	for (i = 0; i < depth; i++)
		ck_assert_int_eq(ldi(&s.owner[i]), 0);
	ck_assert_int_eq(ldi(&s.q.ws_active), 0);
	if (blocking)
		fprintf(stderr, "sbitmap stress depth %u: %llu sleeps, "
			"%llu wake-ups, %llu backstop timeouts\n", depth,
			(unsigned long long)ld64(&s.q.waits),
			(unsigned long long)ld64(&s.q.wakeups),
			(unsigned long long)ld64(&s.q.backstop_timeouts));
	mq_sbq_exit(&s.q);
}

/* Plenty of tags: contention on the words, no waiting. */
START_TEST(test_stress_spin)
{
	run_stress(STRESS_MAXDEPTH, false);
}
END_TEST

/* 4 x 3 held > 10 tags: the map fills, deferred frees race with gets. */
START_TEST(test_stress_full_map)
{
	run_stress(10, false);
}
END_TEST

/* Same, but sleepers: exercises prepare/retry/sleep against the frees. */
START_TEST(test_stress_sleepers)
{
	run_stress(10, true);
}
END_TEST

static void *batch_stress_thread(void *p)
{
	struct stress_arg *a = p;
	struct stress *s = a->s;
	unsigned int hint = mq_sbitmap_random_hint(&s->q.sb, (unsigned)a->id);
	unsigned int i, off, b;

	for (i = 0; i < STRESS_ITERS / 4; i++) {
		unsigned long mask = mq_sbq_get_batch(&s->q, &hint, 4, &off);

		if (!mask) {
			sched_yield();
			continue;
		}
		for (b = 0; mask >> b; b++)
			stress_take(s, (int)(off + b), a->id);
		for (b = 0; mask >> b; b++)
			stress_give(s, (int)(off + b), a->id);
		mq_sbitmap_clear_mask(&s->q.sb, off >> s->q.sb.shift,
				      mask << (off & ((1U << s->q.sb.shift) - 1)));
	}
	return NULL;
}

START_TEST(test_stress_batch)
{
	static struct stress s;
	struct stress_arg args[STRESS_THREADS];
	pthread_t t[STRESS_THREADS];
	unsigned int i;

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(mq_sbq_init(&s.q, 24, -1, false), 0);
	for (i = 0; i < STRESS_THREADS; i++) {
		args[i] = (struct stress_arg){ .s = &s, .id = (int)i + 1 };
		ck_assert_int_eq(pthread_create(&t[i], NULL,
						batch_stress_thread,
						&args[i]), 0);
	}
	for (i = 0; i < STRESS_THREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_uint_eq(ldul(&s.errors), 0);
	ck_assert_uint_eq(mq_sbitmap_weight(&s.q.sb), 0);
	mq_sbq_exit(&s.q);
}
END_TEST

static void add_map_tcases(Suite *s)
{
	TCase *tc;

	tc = tcase_create("layout");
	tcase_add_loop_test(tc, test_layout_default_shift, 0,
			    (int)MQ_ARRAY_SIZE(layouts));
	tcase_add_test(tc, test_layout_word_struct);
	tcase_add_test(tc, test_layout_queue_embeddable);
	tcase_add_test(tc, test_layout_explicit_shift);
	tcase_add_test(tc, test_random_hint);
	suite_add_tcase(s, tc);

	tc = tcase_create("get");
	tcase_add_loop_test(tc, test_get_until_full, 0, 2);	/* rr off/on */
	tcase_add_test(tc, test_clear_is_deferred);
	tcase_add_test(tc, test_deferred_clear_in_hinted_word);
	tcase_add_test(tc, test_hint_sequential);
	tcase_add_test(tc, test_hint_wraps_in_word);
	tcase_add_test(tc, test_hint_out_of_range);
	tcase_add_test(tc, test_put_hint);
	tcase_add_test(tc, test_put_hint_reuses_after_wrap);
	tcase_add_test(tc, test_round_robin);
	suite_add_tcase(s, tc);

	tc = tcase_create("shallow");
	tcase_add_test(tc, test_shallow_limits_each_word);
	tcase_add_test(tc, test_shallow_uses_deferred_frees);
	suite_add_tcase(s, tc);

	tc = tcase_create("batch");
	tcase_add_test(tc, test_batch_contiguous);
	tcase_add_test(tc, test_batch_loop_across_words);
	tcase_add_test(tc, test_batch_full_and_partial_word);
	tcase_add_test(tc, test_batch_round_robin);
	tcase_add_test(tc, test_clear_mask);
	suite_add_tcase(s, tc);

	tc = tcase_create("resize");
	tcase_add_test(tc, test_resize);
	suite_add_tcase(s, tc);
}

static void add_queue_tcases(Suite *s)
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

	tc = tcase_create("stress");
	/* Thread sanitizer runs these ~20x slower. */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_stress_spin);
	tcase_add_test(tc, test_stress_full_map);
	tcase_add_test(tc, test_stress_sleepers);
	tcase_add_test(tc, test_stress_batch);
	suite_add_tcase(s, tc);
}

static Suite *sbitmap_suite(void)
{
	Suite *s = suite_create("sbitmap");

	add_map_tcases(s);
	add_queue_tcases(s);
	return s;
}

T_MAIN(sbitmap_suite)
