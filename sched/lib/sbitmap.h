/* SPDX-License-Identifier: MIT */
/*
 * sbitmap.h - scalable bitmap allocator and tag wait queue, private to the
 * block layer.  Request tags must be allocated and freed millions of times
 * per second per thread, so the map is split into a few cache-line-sized
 * words that different submitters start in (via a per-thread hint), frees
 * are deferred into a separate "cleared" word so completions never bounce
 * the line allocators are scanning, and the wait queue on top stays off the
 * hot path entirely until somebody actually sleeps for a tag.
 */
#ifndef MQFS_SCHED_SBITMAP_H
#define MQFS_SCHED_SBITMAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mqfs/compiler.h"

/* One word of the map: allocations set bits in @word, frees in @cleared. */
struct mq_sbitmap_word {
	_Atomic unsigned long word;
	/* Own line: completions on other CPUs write here, not on @word. */
	_Atomic unsigned long cleared mq_cacheline_aligned;
	/* Set while one allocator moves @cleared into @word. */
	_Atomic unsigned int swapping;
} mq_cacheline_aligned;

/*
 * depth/shift/map_nr are plain fields: they change only in init/resize,
 * which the caller runs with the map quiesced (queue frozen).
 */
struct mq_sbitmap {
	unsigned int depth;		/* usable bits */
	unsigned int shift;		/* log2(bits per word) */
	unsigned int map_nr;		/* words in use for @depth */
	unsigned int map_alloc;		/* words allocated (resize limit) */
	bool round_robin;		/* strict ordering, no hint reuse */
	struct mq_sbitmap_word *map;
};

int mq_sbitmap_init(struct mq_sbitmap *sb, unsigned int depth, int shift,
		    bool round_robin);
void mq_sbitmap_exit(struct mq_sbitmap *sb);
/* @depth must fit the words allocated at init; caller quiesces the map. */
void mq_sbitmap_resize(struct mq_sbitmap *sb, unsigned int depth);

/* Bit number >= 0, or -1 when nothing is free.  Updates *@hint. */
int mq_sbitmap_get(struct mq_sbitmap *sb, unsigned int *hint);
/* Like get, but only the first @shallow_depth bits of each word count. */
int mq_sbitmap_get_shallow(struct mq_sbitmap *sb, unsigned int *hint,
			   unsigned int shallow_depth);
/*
 * Claim a contiguous run of up to @nr (<= bits per long) free bits inside
 * one word.  Returns the mask (bit 0 = tag *@offset) or 0.  Call again for
 * more; always 0 for round-robin maps.
 */
unsigned long mq_sbitmap_get_batch(struct mq_sbitmap *sb, unsigned int *hint,
				   unsigned int nr, unsigned int *offset);

/* Deferred frees: only mark @cleared; an allocator folds them when needed. */
void mq_sbitmap_clear(struct mq_sbitmap *sb, unsigned int bit);
/* The same with the memory order given (the queue's free: seq_cst). */
static inline void mq_sbitmap_clear_ordered(struct mq_sbitmap *sb,
					    unsigned int bit,
					    memory_order order)
{
	unsigned int index = bit >> sb->shift;

	MQ_ASSERT(index < sb->map_alloc);
	atomic_fetch_or_explicit(&sb->map[index].cleared,
				 1UL << (bit & ((1U << sb->shift) - 1)), order);
}
void mq_sbitmap_clear_mask(struct mq_sbitmap *sb, unsigned int word_index,
			   unsigned long mask);
/* After freeing @bit, point the caller's hint at it (cache-hot reuse). */
void mq_sbitmap_put_hint(const struct mq_sbitmap *sb, unsigned int bit,
			 unsigned int *hint);
unsigned int mq_sbitmap_random_hint(const struct mq_sbitmap *sb,
				    unsigned int seed);
/* Bits in use right now (word & ~cleared); a snapshot under concurrency. */
unsigned int mq_sbitmap_weight(const struct mq_sbitmap *sb);

/* ---------------------------------------------------------------------- */

#define MQ_SBQ_WAIT_QUEUES	8
#define MQ_SBQ_WAKE_BATCH	8
#define MQ_SBQ_BACKSTOP_NS	5000000L	/* 5 ms, see mq_sbq_sleep() */

struct mq_sbq_link {
	struct mq_sbq_link *next, *prev;
};

/*
 * One wait list; its mutex is taken only by sleepers and their wakers.
 * Not over-aligned, so the queue can live in calloc()ed structures.
 */
struct mq_sbq_wait_state {
	pthread_mutex_t lock;
	_Atomic unsigned int nr_waiters;	/* lets wakers skip empty lists */
	struct mq_sbq_link head;
};

/*
 * A sleeping allocator; lives on its stack.  Set up with mq_sbq_waiter_init()
 * (or MQ_SBQ_WAITER_INIT) before the first prepare_to_wait.
 */
struct mq_sbq_waiter {
	_Atomic uint32_t state;			/* futex word, MQ_SBQ_W_* */
	struct mq_sbq_link link;
	struct mq_sbq_wait_state *ws;		/* list we are on; ws->lock */
	struct mq_sbitmap_queue *sbq;		/* set while counted in ws_active */
};

enum {
	MQ_SBQ_W_QUEUED = 0,			/* on a list, not yet asleep */
	MQ_SBQ_W_SLEEPING = 1,			/* in futex_wait */
	MQ_SBQ_W_WOKEN = 2,			/* taken off the list by a waker */
};

#define MQ_SBQ_WAITER_INIT	{ .state = MQ_SBQ_W_QUEUED }

static inline void mq_sbq_waiter_init(struct mq_sbq_waiter *w)
{
	atomic_init(&w->state, MQ_SBQ_W_QUEUED);
	w->link.next = w->link.prev = NULL;
	w->ws = NULL;
	w->sbq = NULL;
}

/*
 * Without waiters nothing here is written.  With waiters, the counters are
 * written on every free, so a full line of padding (not alignment: the
 * queue is embedded in plainly allocated structures, and a 64-byte gap
 * separates lines whatever the base address) keeps them away from the
 * read-mostly map geometry every get reads.
 */
struct mq_sbitmap_queue {
	struct mq_sbitmap sb;
	unsigned int wake_batch;	/* frees per wake-up; __atomic access */
	unsigned int min_shallow_depth;	/* UINT_MAX: no shallow users */
	char pad[MQ_CACHELINE];

	_Atomic int ws_active;		/* the one load of a free's fast path */
	_Atomic unsigned int completion_cnt;
	_Atomic unsigned int wakeup_cnt;
	_Atomic unsigned int wake_index;

	_Atomic uint64_t waits;			/* mq_sbq_sleep calls */
	_Atomic uint64_t wakeups;		/* waiters woken by frees */
	_Atomic uint64_t backstop_timeouts;	/* sleeps ended by the backstop */

	struct mq_sbq_wait_state ws[MQ_SBQ_WAIT_QUEUES];
};

int mq_sbq_init(struct mq_sbitmap_queue *sbq, unsigned int depth, int shift,
		bool round_robin);
void mq_sbq_exit(struct mq_sbitmap_queue *sbq);
/* Caller quiesces allocations; growing the map wakes all waiters. */
void mq_sbq_resize(struct mq_sbitmap_queue *sbq, unsigned int depth);
/* Smallest shallow depth any caller will pass; shrinks wake_batch. */
void mq_sbq_min_shallow_depth(struct mq_sbitmap_queue *sbq,
			      unsigned int min_shallow_depth);

static inline int mq_sbq_get(struct mq_sbitmap_queue *sbq, unsigned int *hint)
{
	return mq_sbitmap_get(&sbq->sb, hint);
}

/* @shallow_depth must be >= the value given to mq_sbq_min_shallow_depth. */
static inline int mq_sbq_get_shallow(struct mq_sbitmap_queue *sbq,
				     unsigned int *hint,
				     unsigned int shallow_depth)
{
	return mq_sbitmap_get_shallow(&sbq->sb, hint, shallow_depth);
}

static inline unsigned long mq_sbq_get_batch(struct mq_sbitmap_queue *sbq,
					     unsigned int *hint,
					     unsigned int nr,
					     unsigned int *offset)
{
	return mq_sbitmap_get_batch(&sbq->sb, hint, nr, offset);
}

/* Free @bit, optionally steer *@hint (may be NULL) to it, account wake-ups. */
void mq_sbq_clear(struct mq_sbitmap_queue *sbq, unsigned int bit,
		  unsigned int *hint);
void mq_sbq_clear_batch(struct mq_sbitmap_queue *sbq, const int *tags,
			unsigned int n);

/*
 * Sleeping for a tag:
 *
 *	ws = mq_sbq_wait_ptr(sbq, &wait_index);
 *	for (;;) {
 *		mq_sbq_prepare_to_wait(sbq, ws, &w);
 *		tag = mq_sbq_get(sbq, &hint);	// retry: a free may have raced
 *		if (tag >= 0)
 *			break;
 *		mq_sbq_sleep(&w);
 *	}
 *	mq_sbq_finish_wait(sbq, ws, &w);
 */
struct mq_sbq_wait_state *mq_sbq_wait_ptr(struct mq_sbitmap_queue *sbq,
					  unsigned int *wait_index);
void mq_sbq_prepare_to_wait(struct mq_sbitmap_queue *sbq,
			    struct mq_sbq_wait_state *ws,
			    struct mq_sbq_waiter *w);
void mq_sbq_sleep(struct mq_sbq_waiter *w);
void mq_sbq_finish_wait(struct mq_sbitmap_queue *sbq,
			struct mq_sbq_wait_state *ws,
			struct mq_sbq_waiter *w);
void mq_sbq_wake_all(struct mq_sbitmap_queue *sbq);

#endif /* MQFS_SCHED_SBITMAP_H */
