/* SPDX-License-Identifier: MIT */
/*
 * sbitmap.c - scalable bitmap allocator for request tags and the wait queue
 * that tag allocators sleep on when the map is full.  The allocator is
 * lock-free: a get claims one bit with a single atomic OR in the word its
 * caller's hint points at, and a free only ORs the bit into the word's
 * separate "cleared" mask, so the common get+clear pair is two uncontended
 * atomic operations.  Frees are folded back into the map lazily by the first
 * allocator that finds a word full.  The queue adds batched wake-ups
 * (one wake-up per wake_batch frees, spread over eight wait lists) and costs
 * the free path a single load while nobody is waiting.
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

#define SB_LONG_BITS	((unsigned int)(sizeof(unsigned long) * CHAR_BIT))
#define SB_MAX_SHIFT	((unsigned int)__builtin_ctz(SB_LONG_BITS))

_Static_assert(sizeof(struct mq_sbitmap_word) == 2 * MQ_CACHELINE,
	       "word and cleared must sit on separate cache lines");

/* Low @n bits set, for n in [0, SB_LONG_BITS]. */
static inline unsigned long sb_low_mask(unsigned int n)
{
	return n >= SB_LONG_BITS ? ~0UL : (1UL << n) - 1;
}

static inline unsigned int sb_bit_mask(const struct mq_sbitmap *sb)
{
	return (1U << sb->shift) - 1;
}

/* Usable bits in word @index: only the last word may be partial. */
static inline unsigned int sb_word_depth(const struct mq_sbitmap *sb,
					 unsigned int index)
{
	if (index == sb->map_nr - 1)
		return sb->depth - (index << sb->shift);
	return 1U << sb->shift;
}

static inline unsigned int sb_words_for(unsigned int depth, unsigned int shift)
{
	return (depth >> shift) + ((depth & ((1U << shift) - 1)) != 0);
}

static inline void sb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * Spread the map over about four words, so that submitters starting at
 * different hints rarely share a cache line, yet a small map is not spread
 * so thin that a scan crosses many lines.
 */
static unsigned int sb_calc_shift(unsigned int depth)
{
	unsigned int shift = SB_MAX_SHIFT;

	if (depth >= 4)
		while ((4U << shift) > depth)
			shift--;
	return shift;
}

static struct mq_sbitmap_word *sb_alloc_words(unsigned int nr)
{
	struct mq_sbitmap_word *map;
	void *mem;
	unsigned int i;

	if (posix_memalign(&mem, MQ_CACHELINE, (size_t)nr * sizeof(*map)))
		return NULL;
	map = mem;
	for (i = 0; i < nr; i++) {
		atomic_init(&map[i].word, 0);
		atomic_init(&map[i].cleared, 0);
		atomic_init(&map[i].swapping, 0);
	}
	return map;
}

int mq_sbitmap_init(struct mq_sbitmap *sb, unsigned int depth, int shift,
		    bool round_robin)
{
	unsigned int map_nr;

	if (shift < 0)
		shift = (int)sb_calc_shift(depth);
	if ((unsigned int)shift > SB_MAX_SHIFT)
		return -EINVAL;
	map_nr = sb_words_for(depth, (unsigned int)shift);
	sb->map = NULL;
	if (map_nr) {
		sb->map = sb_alloc_words(map_nr);
		if (!sb->map)
			return -ENOMEM;
	}
	sb->depth = depth;
	sb->shift = (unsigned int)shift;
	sb->map_nr = map_nr;
	sb->map_alloc = map_nr;
	sb->round_robin = round_robin;
	return 0;
}

void mq_sbitmap_exit(struct mq_sbitmap *sb)
{
	free(sb->map);
	sb->map = NULL;
	sb->depth = sb->map_nr = sb->map_alloc = 0;
}

/*
 * Move deferred frees into the word, unless another thread is doing so.
 * @swapping tells a concurrent allocator that sees @cleared already empty
 * but @word still full that the bits are in flight, so it waits instead of
 * reporting a full map (which would strand a sleeper whose wake-up was
 * already spent on this free).  A flag rather than a counter: the unlock
 * is then a plain release store.
 */
static bool sb_try_swap(struct mq_sbitmap_word *w)
{
	unsigned long mask;

	if (atomic_exchange_explicit(&w->swapping, 1, memory_order_acquire))
		return false;
	mask = atomic_exchange(&w->cleared, 0);
	if (mask)
		atomic_fetch_and(&w->word, ~mask);
	atomic_store_explicit(&w->swapping, 0, memory_order_release);
	return true;
}

static void sb_backoff(unsigned int *spins)
{
	if (++*spins < 128)
		sb_cpu_relax();
	else
		sched_yield();	/* the swapper was preempted */
}

static void sb_swap_cleared(struct mq_sbitmap_word *w)
{
	unsigned int spins = 0;

	while (!sb_try_swap(w))
		sb_backoff(&spins);
}

void mq_sbitmap_resize(struct mq_sbitmap *sb, unsigned int depth)
{
	unsigned int map_nr = sb_words_for(depth, sb->shift);
	unsigned int i;

	MQ_ASSERT(map_nr <= sb->map_alloc);
	/* Settle every word so the new geometry starts from exact state. */
	for (i = 0; i < sb->map_alloc; i++)
		sb_swap_cleared(&sb->map[i]);
	sb->depth = depth;
	sb->map_nr = map_nr;
}

/*
 * Called when a word looked full.  Returns true if the caller should scan
 * the word again: frees were folded in, or bits in [@from, @depth) are free
 * after all (another allocator folded them while we were looking).
 */
static bool sb_deferred_clear(struct mq_sbitmap_word *w, unsigned int depth,
			      unsigned int from)
{
	unsigned long range = sb_low_mask(depth) & ~sb_low_mask(from);
	unsigned int spins = 0;

	for (;;) {
		if (atomic_load(&w->cleared)) {
			if (sb_try_swap(w))
				return true;
		} else if (!atomic_load(&w->swapping)) {
			return (atomic_load(&w->word) & range) != range;
		}
		sb_backoff(&spins);
	}
}

/*
 * Acquire: pairs with the release of the bit's last free.  Written so that
 * GCC emits "lock bts" on x86: any other use of the old value turns the
 * fetch_or into a cmpxchg loop, which costs as much again.
 */
static inline bool sb_test_and_set(_Atomic unsigned long *word,
				   unsigned long nr)
{
	unsigned long mask = 1UL << nr;

	return (atomic_fetch_or_explicit(word, mask, memory_order_acquire) &
		mask) != 0;
}

/*
 * Claim one free bit below @depth, preferring bits at or above @off; with
 * @wrap, fall back to the bits below @off.
 */
static inline __attribute__((always_inline))
int sb_get_word(struct mq_sbitmap_word *w, unsigned int depth,
		unsigned int off, bool wrap)
{
	unsigned long valid = sb_low_mask(depth);
	unsigned long above = ~0UL << off;
	unsigned long val = atomic_load_explicit(&w->word,
						 memory_order_relaxed);

	for (;;) {
		unsigned long free = ~val & valid;
		unsigned long pick = free & above;
		unsigned int nr;

		if (!pick) {
			if (!wrap || !free)
				return -1;
			pick = free;
		}
		nr = (unsigned int)__builtin_ctzl(pick);
		if (!sb_test_and_set(&w->word, nr))
			return (int)nr;
		val = atomic_load_explicit(&w->word, memory_order_relaxed);
	}
}

static int sb_find_in_word(struct mq_sbitmap_word *w, unsigned int depth,
			   unsigned int off, bool wrap)
{
	for (;;) {
		int nr = sb_get_word(w, depth, off, wrap);

		if (nr >= 0 || !sb_deferred_clear(w, depth, wrap ? 0 : off))
			return nr;
	}
}

/*
 * Scan from tag @h, every word limited to @limit bits.  Without @wrap
 * (round robin) the first word is searched only from the hint up, so the
 * scan ends by visiting it once more from bit 0.
 */
static int sb_find(struct mq_sbitmap *sb, unsigned int h, unsigned int limit,
		   bool wrap)
{
	unsigned int index = h >> sb->shift;
	unsigned int off = h & sb_bit_mask(sb);
	unsigned int rounds = sb->map_nr + (!wrap && off);
	unsigned int i;

	for (i = 0; i < rounds; i++) {
		unsigned int depth = MQ_MIN(sb_word_depth(sb, index), limit);
		int nr = sb_find_in_word(&sb->map[index], depth, off, wrap);

		if (nr >= 0)
			return nr + (int)(index << sb->shift);
		off = 0;
		if (++index >= sb->map_nr)
			index = 0;
	}
	return -1;
}

/* Start tag for a search; a hint left over from a larger map is folded in. */
static inline bool sb_start(const struct mq_sbitmap *sb, unsigned int *hint,
			    unsigned int *h)
{
	*h = *hint;
	if (mq_unlikely(*h >= sb->depth)) {
		if (!sb->depth)
			return false;
		*h = *h % sb->depth;
		*hint = *h;
	}
	return true;
}

/*
 * Advance the hint only when we got exactly the hinted bit (or in round
 * robin): a thread then walks its word sequentially, while a hint that
 * mq_sbitmap_put_hint() set to a just-freed bit is left for reuse.
 */
static inline void sb_update_hint(const struct mq_sbitmap *sb,
				  unsigned int *hint, unsigned int h, int nr)
{
	if (mq_unlikely(nr < 0))
		*hint = 0;
	else if ((unsigned int)nr == h || sb->round_robin)
		*hint = (unsigned int)nr + 1 < sb->depth ? (unsigned int)nr + 1 : 0;
}

static __attribute__((noinline, cold))
int sb_get_slow(struct mq_sbitmap *sb, unsigned int *hint)
{
	unsigned int h;
	int nr;

	if (!sb_start(sb, hint, &h))
		return -1;
	nr = sb_find(sb, h, UINT_MAX, !sb->round_robin);
	sb_update_hint(sb, hint, h, nr);
	return nr;
}

/*
 * The hot path: one load and one "lock bts" in the hinted word.  A full
 * word (or a stale hint) goes to the full scan, which starts over at the
 * same word and folds its deferred frees first.
 */
int mq_sbitmap_get(struct mq_sbitmap *sb, unsigned int *hint)
{
	unsigned int h = *hint, index = h >> sb->shift;
	int nr;

	if (mq_unlikely(h >= sb->depth))
		return sb_get_slow(sb, hint);
	nr = sb_get_word(&sb->map[index], sb_word_depth(sb, index),
			 h & sb_bit_mask(sb), !sb->round_robin);
	if (mq_unlikely(nr < 0))
		return sb_get_slow(sb, hint);
	nr += (int)(index << sb->shift);
	sb_update_hint(sb, hint, h, nr);
	return nr;
}

int mq_sbitmap_get_shallow(struct mq_sbitmap *sb, unsigned int *hint,
			   unsigned int shallow_depth)
{
	unsigned int h;
	int nr;

	if (!shallow_depth || !sb_start(sb, hint, &h))
		return -1;
	nr = sb_find(sb, h, shallow_depth, true);
	sb_update_hint(sb, hint, h, nr);
	return nr;
}

/* Length of the run of ones at bit 0 of @v. */
static inline unsigned int sb_run_len(unsigned long v)
{
	return ~v ? (unsigned int)__builtin_ctzl(~v) : SB_LONG_BITS;
}

/*
 * Claim the run of free bits that starts at the word's first zero bit, at
 * most @nr long.  Returns the claimed mask in word position, or 0.
 */
static unsigned long sb_claim_run(struct mq_sbitmap_word *w,
				  unsigned int depth, unsigned int nr,
				  unsigned int *first)
{
	unsigned long valid = sb_low_mask(depth);
	unsigned long val;

	/* Opportunistic: a batch may come up short, single gets follow. */
	if (atomic_load_explicit(&w->cleared, memory_order_relaxed))
		sb_try_swap(w);
	val = atomic_load_explicit(&w->word, memory_order_relaxed);
	for (;;) {
		unsigned long free = ~val & valid, mask;
		unsigned int fz, len;

		if (!free)
			return 0;
		fz = (unsigned int)__builtin_ctzl(free);
		len = sb_run_len(free >> fz);
		mask = sb_low_mask(MQ_MIN(len, nr)) << fz;
		if (atomic_compare_exchange_weak_explicit(&w->word, &val,
							  val | mask,
							  memory_order_acquire,
							  memory_order_relaxed)) {
			*first = fz;
			return mask;
		}
	}
}

unsigned long mq_sbitmap_get_batch(struct mq_sbitmap *sb, unsigned int *hint,
				   unsigned int nr, unsigned int *offset)
{
	unsigned int h, index, i, first;

	if (sb->round_robin || !nr || !sb_start(sb, hint, &h))
		return 0;
	nr = MQ_MIN(nr, SB_LONG_BITS);
	index = h >> sb->shift;
	for (i = 0; i < sb->map_nr; i++) {
		unsigned long mask = sb_claim_run(&sb->map[index],
						  sb_word_depth(sb, index),
						  nr, &first);

		if (mask) {
			unsigned int tag = (index << sb->shift) + first;
			unsigned int next = tag + sb_run_len(mask >> first);

			*offset = tag;
			*hint = next < sb->depth ? next : 0;
			return mask >> first;
		}
		if (++index >= sb->map_nr)
			index = 0;
	}
	*hint = 0;
	return 0;
}

static inline void sb_clear_bit(struct mq_sbitmap *sb, unsigned int bit,
				memory_order order)
{
	unsigned int index = bit >> sb->shift;

	MQ_ASSERT(index < sb->map_alloc);
	atomic_fetch_or_explicit(&sb->map[index].cleared,
				 1UL << (bit & sb_bit_mask(sb)), order);
}

void mq_sbitmap_clear(struct mq_sbitmap *sb, unsigned int bit)
{
	sb_clear_bit(sb, bit, memory_order_release);
}

void mq_sbitmap_clear_mask(struct mq_sbitmap *sb, unsigned int word_index,
			   unsigned long mask)
{
	MQ_ASSERT(word_index < sb->map_alloc);
	atomic_fetch_or_explicit(&sb->map[word_index].cleared, mask,
				 memory_order_release);
}

void mq_sbitmap_put_hint(const struct mq_sbitmap *sb, unsigned int bit,
			 unsigned int *hint)
{
	/* Round robin promises strict order, so no reuse of hot tags there. */
	if (mq_likely(!sb->round_robin && bit < sb->depth))
		*hint = bit;
}

unsigned int mq_sbitmap_random_hint(const struct mq_sbitmap *sb,
				    unsigned int seed)
{
	uint32_t x = seed;

	/* Integer hash so that seeds 0, 1, 2... land in different words. */
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return (unsigned int)(((uint64_t)x * sb->depth) >> 32);
}

unsigned int mq_sbitmap_weight(const struct mq_sbitmap *sb)
{
	unsigned int i, n = 0;

	for (i = 0; i < sb->map_nr; i++) {
		const struct mq_sbitmap_word *w = &sb->map[i];
		unsigned long used = atomic_load_explicit(&w->word,
							  memory_order_relaxed);

		used &= ~atomic_load_explicit(&w->cleared, memory_order_relaxed);
		used &= sb_low_mask(sb_word_depth(sb, i));
		n += (unsigned int)__builtin_popcountl(used);
	}
	return n;
}

/* ---------------------------- sbitmap_queue ---------------------------- */

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
	sb_clear_bit(&sbq->sb, bit, memory_order_seq_cst);
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
	unsigned int shift = sbq->sb.shift, bits = sb_bit_mask(&sbq->sb);
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
