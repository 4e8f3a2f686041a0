/* SPDX-License-Identifier: MIT */
/*
 * sbitmap.c - scalable bitmap allocator for request tags and the wait queue
 * that tag allocators sleep on when the map is full.  The allocator is
 * lock-free: a get claims one bit with a single atomic OR in the word its
 * caller's hint points at, and a free only ORs the bit into the word's
 * separate "cleared" mask, so the common get+clear pair is two uncontended
 * atomic operations.  Frees are folded back into the map lazily by the first
 * allocator that finds a word full.  The wait queue on top of it is
 * sbitmap_queue.c.
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

void mq_sbitmap_clear(struct mq_sbitmap *sb, unsigned int bit)
{
	mq_sbitmap_clear_ordered(sb, bit, memory_order_release);
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
