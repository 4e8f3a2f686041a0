/* SPDX-License-Identifier: MIT */
/*
 * sbitmap_queue.c - the wait queue of the scalable bitmap (sbitmap.c):
 * tag allocators sleep here when the map is full.  Batched wake-ups (one
 * per wake_batch frees, spread over eight wait lists) cost the free path
 * a single load while nobody is waiting.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sbitmap.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * Frees per wake-up: an eighth (one per wait list) of the tags the
 * shallowest user can hold, at most 8.  Sized on the shallow depth because
 * only those tags are guaranteed to be in flight and come back as frees
 * while such a user sleeps; a larger batch could strand it.
 */
static unsigned int sbq_calc_wake_batch(const struct mq_sbitmap_queue *sbq,
					unsigned int depth)
{
	unsigned int shift = sbq->sb.shift;
	unsigned int shallow = MQ_MIN(1U << shift, sbq->min_shallow_depth);
	unsigned int usable = (depth >> shift) * shallow +
			      MQ_MIN(depth & ((1U << shift) - 1), shallow);
	unsigned int batch = usable / MQ_SBQ_WAIT_QUEUES;

	return MQ_MAX(1U, MQ_MIN(batch, (unsigned int)MQ_SBQ_WAKE_BATCH));
}

static void sbq_update_wake_batch(struct mq_sbitmap_queue *sbq,
				  unsigned int depth)
{
	__atomic_store_n(&sbq->wake_batch, sbq_calc_wake_batch(sbq, depth),
			 __ATOMIC_RELAXED);
}

static int sbq_init_ws(struct mq_sbitmap_queue *sbq)
{
	unsigned int i;
	int ret;

	for (i = 0; i < MQ_SBQ_WAIT_QUEUES; i++) {
		struct mq_sbq_wait_state *ws = &sbq->ws[i];

		ret = pthread_mutex_init(&ws->lock, NULL);
		if (ret) {
			while (i--)
				pthread_mutex_destroy(&sbq->ws[i].lock);
			return -ret;
		}
		atomic_init(&ws->nr_waiters, 0);
		ws->head.next = ws->head.prev = &ws->head;
	}
	return 0;
}

int mq_sbq_init(struct mq_sbitmap_queue *sbq, unsigned int depth, int shift,
		bool round_robin)
{
	int ret = mq_sbitmap_init(&sbq->sb, depth, shift, round_robin);

	if (ret)
		return ret;
	ret = sbq_init_ws(sbq);
	if (ret) {
		mq_sbitmap_exit(&sbq->sb);
		return ret;
	}
	sbq->min_shallow_depth = UINT_MAX;
	sbq->wake_batch = sbq_calc_wake_batch(sbq, depth);
	atomic_init(&sbq->ws_active, 0);
	atomic_init(&sbq->completion_cnt, 0);
	atomic_init(&sbq->wakeup_cnt, 0);
	atomic_init(&sbq->wake_index, 0);
	atomic_init(&sbq->waits, 0);
	atomic_init(&sbq->wakeups, 0);
	atomic_init(&sbq->backstop_timeouts, 0);
	return 0;
}

void mq_sbq_exit(struct mq_sbitmap_queue *sbq)
{
	unsigned int i;

	MQ_ASSERT(atomic_load(&sbq->ws_active) == 0);
	for (i = 0; i < MQ_SBQ_WAIT_QUEUES; i++) {
		MQ_ASSERT(atomic_load(&sbq->ws[i].nr_waiters) == 0);
		pthread_mutex_destroy(&sbq->ws[i].lock);
	}
	mq_sbitmap_exit(&sbq->sb);
}

void mq_sbq_resize(struct mq_sbitmap_queue *sbq, unsigned int depth)
{
	unsigned int old = sbq->sb.depth;

	sbq_update_wake_batch(sbq, depth);
	mq_sbitmap_resize(&sbq->sb, depth);
	/* New tags appeared without any free: nobody would wake the sleepers. */
	if (depth > old)
		mq_sbq_wake_all(sbq);
}

void mq_sbq_min_shallow_depth(struct mq_sbitmap_queue *sbq,
			      unsigned int min_shallow_depth)
{
	sbq->min_shallow_depth = min_shallow_depth;
	sbq_update_wake_batch(sbq, sbq->sb.depth);
}

static long sbq_futex(_Atomic uint32_t *addr, int op, uint32_t val,
		      const struct timespec *abs_timeout, uint32_t bitset)
{
	return syscall(SYS_futex, addr, op | FUTEX_PRIVATE_FLAG, val,
		       abs_timeout, NULL, bitset);
}

static void sbq_list_add_tail(struct mq_sbq_wait_state *ws,
			      struct mq_sbq_waiter *w)
{
	w->link.prev = ws->head.prev;
	w->link.next = &ws->head;
	ws->head.prev->next = &w->link;
	ws->head.prev = &w->link;
	w->ws = ws;
	atomic_fetch_add(&ws->nr_waiters, 1);
}

static void sbq_list_del(struct mq_sbq_wait_state *ws,
			 struct mq_sbq_waiter *w)
{
	w->link.prev->next = w->link.next;
	w->link.next->prev = w->link.prev;
	w->link.next = w->link.prev = NULL;
	w->ws = NULL;
	atomic_fetch_sub(&ws->nr_waiters, 1);
}

/*
 * Called with ws->lock held, @w already unlinked.  Once the state reads
 * WOKEN the waiter may return and reuse its stack, so only the futex
 * address is touched afterwards; a FUTEX_WAKE on a stale address is at
 * worst a spurious wake-up, which every sleeper tolerates.
 */
static void sbq_wake_one(struct mq_sbq_waiter *w)
{
	if (atomic_exchange(&w->state, MQ_SBQ_W_WOKEN) == MQ_SBQ_W_SLEEPING)
		sbq_futex(&w->state, FUTEX_WAKE, 1, NULL, 0);
}

/* Wake up to @nr waiters of @ws in FIFO order; returns how many. */
static unsigned int sbq_ws_wake(struct mq_sbitmap_queue *sbq,
				struct mq_sbq_wait_state *ws, unsigned int nr)
{
	unsigned int woken = 0;

	pthread_mutex_lock(&ws->lock);
	while (woken < nr && ws->head.next != &ws->head) {
		struct mq_sbq_waiter *w = mq_container_of(ws->head.next,
							  struct mq_sbq_waiter,
							  link);

		sbq_list_del(ws, w);
		sbq_wake_one(w);
		woken++;
	}
	pthread_mutex_unlock(&ws->lock);
	if (woken)
		atomic_fetch_add_explicit(&sbq->wakeups, woken,
					  memory_order_relaxed);
	return woken;
}

/* Wake up to @nr waiters, round robin over the lists from wake_index. */
static unsigned int sbq_wake_nr(struct mq_sbitmap_queue *sbq, unsigned int nr)
{
	unsigned int idx = atomic_load_explicit(&sbq->wake_index,
						memory_order_relaxed);
	unsigned int start = idx, woken = 0, i;

	for (i = 0; i < MQ_SBQ_WAIT_QUEUES && woken < nr; i++) {
		struct mq_sbq_wait_state *ws = &sbq->ws[idx];

		/* Advance first so one long list cannot starve the others. */
		idx = (idx + 1) % MQ_SBQ_WAIT_QUEUES;
		if (atomic_load(&ws->nr_waiters))
			woken += sbq_ws_wake(sbq, ws, nr - woken);
	}
	if (idx != start)
		atomic_store_explicit(&sbq->wake_index, idx,
				      memory_order_relaxed);
	return woken;
}

/*
 * Every wake_batch frees (counted only while someone waits) buy one batch
 * of wake-ups; the cmpxchg on wakeup_cnt lets exactly one freeing thread
 * spend each batch.  Stops when the lists run dry and keeps the remaining
 * credit for the next sleeper.
 */
static void sbq_wake_up_slow(struct mq_sbitmap_queue *sbq, unsigned int nr)
{
	unsigned int batch = __atomic_load_n(&sbq->wake_batch,
					     __ATOMIC_RELAXED);
	unsigned int done;

	atomic_fetch_add(&sbq->completion_cnt, nr);
	done = atomic_load(&sbq->wakeup_cnt);
	for (;;) {
		if (atomic_load(&sbq->completion_cnt) - done < batch)
			return;
		if (!atomic_compare_exchange_weak(&sbq->wakeup_cnt, &done,
						  done + batch))
			continue;
		if (sbq_wake_nr(sbq, batch) < batch)
			return;
		done += batch;
	}
}

/*
 * The free path.  seq_cst on the load (a plain mov on x86) pairs with the
 * seq_cst free before it and with prepare_to_wait: either we see the
 * sleeper, or its retried get sees our free.
 */
static inline void sbq_wake_up(struct mq_sbitmap_queue *sbq, unsigned int nr)
{
	if (mq_likely(!atomic_load(&sbq->ws_active)))
		return;
	sbq_wake_up_slow(sbq, nr);
}

void mq_sbq_clear(struct mq_sbitmap_queue *sbq, unsigned int bit,
		  unsigned int *hint)
{
	mq_sbitmap_clear_ordered(&sbq->sb, bit, memory_order_seq_cst);
	if (hint)
		mq_sbitmap_put_hint(&sbq->sb, bit, hint);
	sbq_wake_up(sbq, 1);
}

#define SBQ_CLEAR_WORDS	8

/* Per-word masks of a batch free, flushed with one atomic OR each. */
struct sbq_clear_acc {
	unsigned int nr;
	struct {
		unsigned int index;
		unsigned long mask;
	} w[SBQ_CLEAR_WORDS];
};

static void sbq_flush_masks(struct mq_sbitmap_queue *sbq,
			    struct sbq_clear_acc *acc)
{
	unsigned int i;

	for (i = 0; i < acc->nr; i++) {
		MQ_ASSERT(acc->w[i].index < sbq->sb.map_alloc);
		/* seq_cst like mq_sbq_clear: pairs with prepare_to_wait. */
		atomic_fetch_or(&sbq->sb.map[acc->w[i].index].cleared,
				acc->w[i].mask);
	}
	acc->nr = 0;
}

/* Merge @mask into word @index's entry; tags of a batch span few words. */
static void sbq_clear_add(struct mq_sbitmap_queue *sbq,
			  struct sbq_clear_acc *acc, unsigned int index,
			  unsigned long mask)
{
	unsigned int i;

	for (i = 0; i < acc->nr; i++) {
		if (acc->w[i].index == index) {
			acc->w[i].mask |= mask;
			return;
		}
	}
	if (acc->nr == SBQ_CLEAR_WORDS)
		sbq_flush_masks(sbq, acc);
	acc->w[acc->nr].index = index;
	acc->w[acc->nr].mask = mask;
	acc->nr++;
}

/*
 * Free a batch with one atomic per distinct word (tags from a batched get
 * share words), then account all the frees in one wake-up call.  The run
 * of tags in the current word is collected in a register.
 */
void mq_sbq_clear_batch(struct mq_sbitmap_queue *sbq, const int *tags,
			unsigned int n)
{
	struct sbq_clear_acc acc;
	unsigned int shift = sbq->sb.shift, bits = (1U << shift) - 1;
	unsigned int i, cur = UINT_MAX;
	unsigned long mask = 0;

	acc.nr = 0;
	for (i = 0; i < n; i++) {
		unsigned int tag = (unsigned int)tags[i];

		if (mq_unlikely(tag >> shift != cur)) {
			if (mask)
				sbq_clear_add(sbq, &acc, cur, mask);
			cur = tag >> shift;
			mask = 0;
		}
		mask |= 1UL << (tag & bits);
	}
	if (mask)
		sbq_clear_add(sbq, &acc, cur, mask);
	sbq_flush_masks(sbq, &acc);
	if (n)
		sbq_wake_up(sbq, n);
}

struct mq_sbq_wait_state *mq_sbq_wait_ptr(struct mq_sbitmap_queue *sbq,
					  unsigned int *wait_index)
{
	unsigned int i = *wait_index % MQ_SBQ_WAIT_QUEUES;

	*wait_index = (i + 1) % MQ_SBQ_WAIT_QUEUES;
	return &sbq->ws[i];
}

/*
 * Register and queue @w.  The seq_cst increments pair with the free path
 * (see sbq_wake_up); the caller must retry its get after this.
 */
void mq_sbq_prepare_to_wait(struct mq_sbitmap_queue *sbq,
			    struct mq_sbq_wait_state *ws,
			    struct mq_sbq_waiter *w)
{
	if (!w->sbq) {
		w->sbq = sbq;
		atomic_fetch_add(&sbq->ws_active, 1);
	}
	pthread_mutex_lock(&ws->lock);
	if (!w->ws) {
		atomic_store_explicit(&w->state, MQ_SBQ_W_QUEUED,
				      memory_order_relaxed);
		sbq_list_add_tail(ws, w);
	}
	MQ_ASSERT(w->ws == ws);
	pthread_mutex_unlock(&ws->lock);
}

static void sbq_deadline(struct timespec *ts, long ns)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_nsec += ns;
	while (ts->tv_nsec >= 1000000000L) {
		ts->tv_nsec -= 1000000000L;
		ts->tv_sec++;
	}
}

/*
 * The backstop fired.  Leave @w queued (state back to QUEUED) so the
 * caller's prepare/retry loop goes on; if a waker won the race this was a
 * real wake-up and is not counted.
 */
static void sbq_backstop(struct mq_sbitmap_queue *sbq, struct mq_sbq_waiter *w)
{
	uint32_t expect = MQ_SBQ_W_SLEEPING;

	if (atomic_compare_exchange_strong(&w->state, &expect,
					   MQ_SBQ_W_QUEUED))
		atomic_fetch_add_explicit(&sbq->backstop_timeouts, 1,
					  memory_order_relaxed);
}

/*
 * Sleep until a waker takes @w off its list, or for at most 5 ms: batched
 * wake-ups may legitimately leave a sleeper behind when fewer than
 * wake_batch frees follow; the backstop bounds that and counts it.
 */
void mq_sbq_sleep(struct mq_sbq_waiter *w)
{
	struct mq_sbitmap_queue *sbq = w->sbq;
	uint32_t expect = MQ_SBQ_W_QUEUED;
	struct timespec deadline;

	MQ_ASSERT(sbq);
	atomic_fetch_add_explicit(&sbq->waits, 1, memory_order_relaxed);
	if (!atomic_compare_exchange_strong(&w->state, &expect,
					    MQ_SBQ_W_SLEEPING))
		return;			/* already woken */
	sbq_deadline(&deadline, MQ_SBQ_BACKSTOP_NS);
	while (atomic_load_explicit(&w->state, memory_order_acquire) ==
	       MQ_SBQ_W_SLEEPING) {
		if (sbq_futex(&w->state, FUTEX_WAIT_BITSET, MQ_SBQ_W_SLEEPING,
			      &deadline, FUTEX_BITSET_MATCH_ANY) == -1 &&
		    errno == ETIMEDOUT) {
			sbq_backstop(sbq, w);
			return;
		}
	}
}

void mq_sbq_finish_wait(struct mq_sbitmap_queue *sbq,
			struct mq_sbq_wait_state *ws,
			struct mq_sbq_waiter *w)
{
	/* WOKEN: a waker unlinked us under ws->lock already; skip the lock. */
	if (atomic_load_explicit(&w->state, memory_order_acquire) !=
	    MQ_SBQ_W_WOKEN) {
		pthread_mutex_lock(&ws->lock);
		if (w->ws) {
			MQ_ASSERT(w->ws == ws);
			sbq_list_del(ws, w);
		}
		pthread_mutex_unlock(&ws->lock);
	}
	if (w->sbq) {
		MQ_ASSERT(w->sbq == sbq);
		atomic_fetch_sub(&sbq->ws_active, 1);
		w->sbq = NULL;
	}
}

void mq_sbq_wake_all(struct mq_sbitmap_queue *sbq)
{
	unsigned int idx = atomic_load(&sbq->wake_index);
	unsigned int i;

	/* Lock every list, even empty-looking ones: callers need certainty. */
	for (i = 0; i < MQ_SBQ_WAIT_QUEUES; i++) {
		sbq_ws_wake(sbq, &sbq->ws[idx], UINT_MAX);
		idx = (idx + 1) % MQ_SBQ_WAIT_QUEUES;
	}
}
