/* SPDX-License-Identifier: MIT */
/*
 * sbitmap_fixture.h - what the case files of test_sbitmap share: typed
 * atomic loads for readable Check messages, raw access to a map word,
 * the block layer's batch and blocking allocation loops, and each file's
 * registration function (called in this order by test_sbitmap.c).
 */
#ifndef MQFS_TESTS_SBITMAP_FIXTURE_H
#define MQFS_TESTS_SBITMAP_FIXTURE_H

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

/* Typed loads: keep Check's failure messages readable. */
static inline unsigned int ldu(_Atomic unsigned int *p)
{
	return atomic_load(p);
}

static inline uint32_t ldu32(_Atomic uint32_t *p)
{
	return atomic_load(p);
}

static inline int ldi(_Atomic int *p)
{
	return atomic_load(p);
}

static inline unsigned long ldul(_Atomic unsigned long *p)
{
	return atomic_load(p);
}

static inline uint64_t ld64(_Atomic uint64_t *p)
{
	return atomic_load(p);
}

static inline unsigned long raw_word(const struct mq_sbitmap *sb,
				     unsigned int i)
{
	return atomic_load(&sb->map[i].word);
}

static inline unsigned long raw_cleared(const struct mq_sbitmap *sb,
					unsigned int i)
{
	return atomic_load(&sb->map[i].cleared);
}

static inline unsigned int run_len(unsigned long mask)
{
	unsigned int n = 0;

	while (mask & 1) {
		mask >>= 1;
		n++;
	}
	ck_assert_msg(mask == 0, "batch mask is not a contiguous run");
	return n;
}

/* The block layer's loop: call until @want tags or a call returns 0. */
static inline unsigned int batch_collect(struct mq_sbitmap *sb,
					 unsigned int *hint, unsigned int want,
					 int *tags, unsigned int *calls)
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

/* The allocation loop of the block layer: prepare, retry, sleep. */
static inline int blocking_get(struct mq_sbitmap_queue *q,
			       unsigned int *hint, unsigned int *wait_index)
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

/* sbitmap_map.c: layout, get, shallow, batch, resize. */
void sbitmap_add_map_tcases(Suite *s);
/* sbitmap_queue.c: the wait queue, single- and multi-threaded. */
void sbitmap_add_queue_tcases(Suite *s);
/* sbitmap_stress.c: concurrent get/clear, one owner per tag. */
void sbitmap_add_stress_tcases(Suite *s);

#endif /* MQFS_TESTS_SBITMAP_FIXTURE_H */
