// SPDX-License-Identifier: MIT
/*
 * alloc.c - allocation groups: block and inode allocation from the AG
 * bitmaps (FORMAT.md §2, §4, §5).
 *
 * Each AG has its own mutex, so threads allocating in different AGs never
 * meet; a thread without a goal gets an AG of its own (round robin over
 * threads) for the same reason.  Under the AG lock the AG header and the
 * bitmap buffers are changed and dirtied in the caller's transaction.
 *
 * Handle credits: a run never crosses an AG, so one mqfs_alloc_blocks,
 * mqfs_free_blocks, mqfs_ialloc or mqfs_ifree dirties at most two
 * buffers (the AG header and one bitmap).  Callers reserve 2 per call.
 * An AG not yet initialised (lazy AGs) is written by the first
 * allocation in it, which extends the handle itself (alloc_ag.c).
 *
 * Busy blocks: a run freed in transaction S must not be handed out again
 * before S is durable, or data written into it could overwrite the old
 * owner's blocks while a crash would still bring the old owner back.  A
 * per-AG busy bitmap (only while something is busy) is OR-ed into the
 * bitmap during every search; the ranges and their sequence numbers are
 * kept so mqfs_alloc_txn_committed() can clear them.  A busy block is
 * counted free (the AG header says so), so an AG whose free blocks are
 * all busy returns -ENOSPC until the commit: mqfs_retry_enospc().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_i.h"

#define AG_WORDS	(MQFS_BITMAP_BITS / 64)

_Static_assert(MQFS_BITMAP_BITS % 64 == 0, "bitmap words");

/* ---- bitmap words ------------------------------------------------------- */

static inline uint64_t *ag_words(struct mqfs_buf *b)
{
	return (uint64_t *)((char *)b->data + MQFS_HDR_SIZE);
}

static inline uint64_t bits_mask(uint32_t off, uint32_t n)
{
	return (n == 64 ? ~0ull : (1ull << n) - 1) << off;
}

static void bits_change(uint64_t *m, uint32_t from, uint32_t len, bool set)
{
	while (len) {
		uint32_t off = from % 64, n = MQ_MIN(len, 64 - off);
		uint64_t mask = bits_mask(off, n);

		if (set)
			m[from / 64] |= mask;
		else
			m[from / 64] &= ~mask;
		from += n;
		len -= n;
	}
}

/* Is every bit of [from, from+len) equal to @set? */
static bool bits_all(const uint64_t *m, uint32_t from, uint32_t len, bool set)
{
	while (len) {
		uint32_t off = from % 64, n = MQ_MIN(len, 64 - off);
		uint64_t mask = bits_mask(off, n);
		uint64_t v = m[from / 64] & mask;

		if (v != (set ? mask : 0))
			return false;
		from += n;
		len -= n;
	}
	return true;
}

static inline bool bit_test(const uint64_t *m, uint32_t i)
{
	return (m[i / 64] >> (i % 64)) & 1;
}

/* The bitmap as a search sees it: used bits plus busy bits. */
struct ag_scan {
	const uint64_t *map;
	const uint64_t *busy;		/* NULL: nothing busy */
	uint32_t limit;			/* bits of this AG */
};

static inline uint64_t scan_word(const struct ag_scan *s, uint32_t w)
{
	return s->map[w] | (s->busy ? s->busy[w] : 0);
}

/* First bit >= @from (and < @end) that is clear (@used false) or set. */
static uint32_t scan_next(const struct ag_scan *s, uint32_t from,
			  uint32_t end, bool used)
{
	while (from < end) {
		uint32_t w = from / 64;
		uint64_t v = scan_word(s, w);

		v = (used ? v : ~v) & (~0ull << (from % 64));
		if (v) {
			uint32_t b = w * 64 + (uint32_t)__builtin_ctzll(v);

			return b < end ? b : end;
		}
		from = (w + 1) * 64;
	}
	return end;
}

struct ag_run {
	uint32_t start, len;
};

/*
 * Find up to @want free bits: exactly at @goal if it is free, else the
 * first run of @want from @goal onwards (wrapping to 0), else the longest
 * run seen.  len 0: nothing free.
 */
static struct ag_run scan_find(const struct ag_scan *s, uint32_t goal,
			       uint32_t want)
{
	struct ag_run best = { 0, 0 };
	uint32_t from[2] = { goal, 0 }, to[2] = { s->limit, goal };

	if (goal < s->limit && !bit_test(s->map, goal) &&
	    !(s->busy && bit_test(s->busy, goal))) {
		uint32_t e = scan_next(s, goal, s->limit, true);

		return (struct ag_run){ goal, MQ_MIN(e - goal, want) };
	}
	for (int pass = 0; pass < 2; pass++) {
		uint32_t b = from[pass];

		while ((b = scan_next(s, b, to[pass], false)) < to[pass]) {
			uint32_t e = scan_next(s, b, s->limit, true);

			if (e - b >= want)
				return (struct ag_run){ b, want };
			if (e - b > best.len)
				best = (struct ag_run){ b, e - b };
			b = e;
		}
	}
	return best;
}

/* ---- geometry --------------------------------------------------------- */

/*
 * Does [start, start+len) (bits of @ag) touch a block that is never
 * data: superblock, journal, the AG's metadata, the backup superblock?
 * Only a corrupt bitmap (or a caller's bug) gets here.
 */
static bool ag_overlaps_meta(struct mqfs_fs *fs, struct mqfs_ag_info *ag,
			     uint32_t start, uint32_t len)
{
	uint64_t s = ag->first_block + start, e = s + len;
	uint64_t meta_end = ag->meta + ag->meta_len;

	if (s < meta_end && e > ag->meta)
		return true;
	if (ag->index == 0 && s < 1 + (uint64_t)fs->journal_blocks)
		return true;
	return e > fs->block_count - 1;
}

static struct mqfs_ag_info *ag_of_block(struct mqfs_fs *fs, uint64_t blk)
{
	return &fs->ags[blk / fs->ag_blocks];
}

/* ---- busy runs ----------------------------------------------------------- */

/* Make room for one more busy run before anything is changed. */
static int busy_reserve_locked(struct mqfs_ag_info *ag)
{
	unsigned n = atomic_load(&ag->nbusy);

	if (!ag->busy_map) {
		ag->busy_map = calloc(AG_WORDS, sizeof(uint64_t));
		if (!ag->busy_map)
			return -ENOMEM;
	}
	return mqfs_array_reserve(&ag->busy, &ag->busy_cap, n,
				  sizeof(*ag->busy), 16);
}

static void busy_add_locked(struct mqfs_ag_info *ag, uint32_t start,
			    uint32_t len, uint64_t seq)
{
	unsigned n = atomic_load(&ag->nbusy);
	struct ag_busy *last = n ? &ag->busy[n - 1] : NULL;

	bits_change(ag->busy_map, start, len, true);
	/* Freeing a file's extents one by one makes adjacent runs. */
	if (last && last->seq == seq && last->start + last->len == start) {
		last->len += len;
		return;
	}
	ag->busy[n] = (struct ag_busy){ start, len, seq };
	atomic_store(&ag->nbusy, n + 1);
}

static void busy_release_locked(struct mqfs_ag_info *ag, uint64_t seq)
{
	unsigned n = atomic_load(&ag->nbusy), kept = 0;

	for (unsigned i = 0; i < n; i++) {
		if (ag->busy[i].seq <= seq)
			bits_change(ag->busy_map, ag->busy[i].start,
				    ag->busy[i].len, false);
		else
			ag->busy[kept++] = ag->busy[i];
	}
	atomic_store(&ag->nbusy, kept);
	if (!kept) {
		free(ag->busy_map);
		ag->busy_map = NULL;
	}
}

void mqfs_alloc_txn_committed(struct mqfs_fs *fs, uint64_t seq)
{
	if (!fs->ags)
		return;
	for (uint32_t i = 0; i < fs->ag_count; i++) {
		struct mqfs_ag_info *ag = &fs->ags[i];

		if (!atomic_load(&ag->nbusy))
			continue;
		pthread_mutex_lock(&ag->lock);
		busy_release_locked(ag, seq);
		pthread_mutex_unlock(&ag->lock);
	}
}

/* ---- AG header counts ------------------------------------------------------ */

/*
 * Apply count deltas to the AG header (and its cached copy) within @h.
 * A count that would leave its range means the header disagrees with
 * the bitmap: corruption.
 */
static int ag_update_header_locked(struct mqfs_handle *h,
				   struct mqfs_ag_info *ag, int64_t dblocks,
				   int64_t dinodes, int64_t ddirs)
{
	struct mqfs_fs *fs = h->fs;
	struct mqfs_buf *b;
	struct mqfs_ag *hd;
	int64_t nb, ni, nd;
	int err;

	err = mqfs_buf_read(fs, ag->meta, MQFS_T_AG, &b);
	if (err)
		return err;
	mqfs_buf_lock(b);
	hd = b->data;
	nb = (int64_t)hd->free_blocks + dblocks;
	ni = (int64_t)hd->free_inodes + dinodes;
	nd = (int64_t)hd->dirs + ddirs;
	if (nb < 0 || nb > ag->block_count || ni < 0 ||
	    ni > fs->inodes_per_ag || nd < 0) {
		mqfs_buf_unlock(b);
		mqfs_buf_put(b);
		mqfs_fs_error(fs, ag->meta, "AG %u: header counts disagree "
			      "with the bitmaps", ag->index);
		return -EUCLEAN;
	}
	hd->free_blocks = (uint32_t)nb;
	hd->free_inodes = (uint32_t)ni;
	hd->dirs = (uint32_t)nd;
	mqfs_trans_dirty(h, b);
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	atomic_store(&ag->free_blocks, (unsigned)nb);
	atomic_store(&ag->free_inodes, (unsigned)ni);
	atomic_store(&ag->dirs, (unsigned)nd);
	return 0;
}

/* ---- blocks ------------------------------------------------------------- */

/* The AG a thread without a goal allocates in: one per thread, in turn. */
static uint32_t alloc_thread_ag(struct mqfs_fs *fs)
{
	static atomic_uint next_slot;
	static _Thread_local unsigned slot;

	if (!slot)
		slot = atomic_fetch_add(&next_slot, 1) + 1;
	return (slot - 1) % fs->ag_count;
}

/* Find and mark a run in the bitmap buffer @b (locked) of @ag. */
static int ag_take_run_locked(struct mqfs_handle *h, struct mqfs_ag_info *ag,
			      struct mqfs_buf *b, uint32_t goal, uint32_t want,
			      struct ag_run *run)
{
	struct ag_scan s = { .map = ag_words(b), .busy = ag->busy_map,
			     .limit = ag->block_count };

	*run = scan_find(&s, goal, want);
	if (!run->len)
		return -ENOSPC;
	if (ag_overlaps_meta(h->fs, ag, run->start, run->len)) {
		mqfs_fs_error(h->fs, ag->meta + 1, "AG %u: block bitmap "
			      "marks metadata block %llu free", ag->index,
			      (unsigned long long)(ag->first_block +
						   run->start));
		return -EUCLEAN;
	}
	bits_change(ag_words(b), run->start, run->len, true);
	mqfs_trans_dirty(h, b);
	return 0;
}

static int ag_alloc_blocks(struct mqfs_handle *h, struct mqfs_ag_info *ag,
			   uint32_t goal, uint32_t want, uint64_t *start,
			   uint32_t *got)
{
	struct mqfs_buf *b;
	struct ag_run run;
	int err;

	pthread_mutex_lock(&ag->lock);
	err = mqfs_ag_ready_locked(h, ag);
	if (!err)
		err = mqfs_buf_read(h->fs, ag->meta + 1, MQFS_T_BBITMAP, &b);
	if (err)
		goto out;
	mqfs_buf_lock(b);
	err = ag_take_run_locked(h, ag, b, goal, want, &run);
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	if (!err)
		err = ag_update_header_locked(h, ag, -(int64_t)run.len, 0, 0);
	if (!err) {
		atomic_fetch_sub(&h->fs->free_blocks, run.len);
		*start = ag->first_block + run.start;
		*got = run.len;
	}
out:
	pthread_mutex_unlock(&ag->lock);
	return err;
}

int mqfs_alloc_blocks(struct mqfs_handle *h, uint64_t goal, uint32_t want,
		      uint64_t *start, uint32_t *got)
{
	struct mqfs_fs *fs = h->fs;
	uint32_t first, goal_bit = 0;

	if (!want)
		return -EINVAL;
	want = MQ_MIN(want, MQFS_AG_MAX_BLOCKS);
	if (goal && goal < fs->block_count) {
		first = (uint32_t)(goal / fs->ag_blocks);
		goal_bit = (uint32_t)(goal - (uint64_t)first * fs->ag_blocks);
	} else {
		first = alloc_thread_ag(fs);
	}
	for (uint32_t i = 0; i < fs->ag_count; i++) {
		struct mqfs_ag_info *ag = &fs->ags[(first + i) % fs->ag_count];
		int err;

		if (!atomic_load(&ag->free_blocks))
			continue;
		err = ag_alloc_blocks(h, ag, i ? 0 : goal_bit, want, start,
				      got);
		if (err != -ENOSPC)
			return err;
	}
	return -ENOSPC;
}

/*
 * ENOSPC is tried once more, after two waits.  First for the forgets on
 * their way (mqfs_mount_opts.await_forgets): a file unlinked just now
 * gives its blocks and inode back only at its forget.  Then, while
 * blocks are busy, for the checkpoint: blocks freed by transactions not
 * yet checkpointed cannot be allocated (busy, above) but statfs counts
 * them free, so commit and wait for the checkpoint (mqfs_journal_sync:
 * a commit the commit thread already made durable may still be writing
 * home), as ext4 does.  Tried again even when nothing is busy by then:
 * a checkpoint may have freed the busy blocks the attempt met since.
 */
static bool alloc_any_busy(struct mqfs_fs *fs)
{
	for (uint32_t i = 0; i < fs->ag_count; i++)
		if (atomic_load(&fs->ags[i].nbusy))
			return true;
	return false;
}

bool mqfs_retry_enospc(struct mqfs_fs *fs, int err, bool *retried)
{
	if (err != -ENOSPC || *retried)
		return false;
	*retried = true;
	if (fs->opts.await_forgets)
		fs->opts.await_forgets(fs->opts.await_forgets_arg);
	return !alloc_any_busy(fs) || mqfs_journal_sync(fs) == 0;
}

/* A run to free must be inside the filesystem, in one AG, not metadata. */
static int free_check_range(struct mqfs_fs *fs, uint64_t start,
			    uint32_t count)
{
	struct mqfs_ag_info *ag;

	if (!count || start >= fs->block_count ||
	    count > fs->block_count - start ||
	    start / fs->ag_blocks != (start + count - 1) / fs->ag_blocks)
		goto bad;
	ag = ag_of_block(fs, start);
	if (atomic_load(&ag->uninit) ||
	    ag_overlaps_meta(fs, ag, (uint32_t)(start - ag->first_block),
			     count))
		goto bad;
	return 0;
bad:
	mqfs_fs_error(fs, start, "freeing an impossible run of %u blocks",
		      count);
	return -EUCLEAN;
}

static int ag_free_bits_locked(struct mqfs_handle *h, struct mqfs_ag_info *ag,
			       uint32_t bit, uint32_t count)
{
	struct mqfs_buf *b;
	int err;

	err = mqfs_buf_read(h->fs, ag->meta + 1, MQFS_T_BBITMAP, &b);
	if (err)
		return err;
	mqfs_buf_lock(b);
	if (!bits_all(ag_words(b), bit, count, true)) {
		err = -EUCLEAN;
	} else {
		bits_change(ag_words(b), bit, count, false);
		mqfs_trans_dirty(h, b);
	}
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	if (err)
		mqfs_fs_error(h->fs, ag->first_block + bit, "freeing %u "
			      "blocks that are not all in use", count);
	return err;
}

int mqfs_free_blocks(struct mqfs_handle *h, uint64_t start, uint32_t count)
{
	struct mqfs_fs *fs = h->fs;
	struct mqfs_ag_info *ag;
	uint32_t bit;
	int err;

	err = free_check_range(fs, start, count);
	if (err)
		return err;
	ag = ag_of_block(fs, start);
	bit = (uint32_t)(start - ag->first_block);
	pthread_mutex_lock(&ag->lock);
	err = busy_reserve_locked(ag);
	if (!err)
		err = ag_free_bits_locked(h, ag, bit, count);
	if (err) {
		pthread_mutex_unlock(&ag->lock);
		return err;
	}
	busy_add_locked(ag, bit, count, h->seq);
	err = ag_update_header_locked(h, ag, count, 0, 0);
	if (!err)
		atomic_fetch_add(&fs->free_blocks, count);
	pthread_mutex_unlock(&ag->lock);
	/* A cached copy of a freed metadata block must not be read again. */
	for (uint32_t i = 0; i < count; i++)
		mqfs_buf_forget(fs, start + i);
	return err;
}

/* mqfs_block_in_use in an uninitialised AG: its fresh bitmap says. */
static int ag_fresh_in_use(struct mqfs_fs *fs, struct mqfs_ag_info *ag,
			   uint64_t blk, bool *used)
{
	uint64_t *map = mqfs_alloc_blocks_mem(1);
	struct mqfs_layout l;

	if (!map)
		return -ENOMEM;
	mqfs_fs_layout(fs, &l);
	mqfs_ag_fresh_bbitmap(&l, ag->index, map);
	*used = bit_test(map + MQFS_HDR_SIZE / sizeof(*map),
			 (uint32_t)(blk - ag->first_block));
	free(map);
	return 0;
}

int mqfs_block_in_use(struct mqfs_fs *fs, uint64_t blk, bool *used)
{
	struct mqfs_ag_info *ag;
	struct mqfs_buf *b;
	int err;

	if (blk >= fs->block_count)
		return -EINVAL;
	ag = ag_of_block(fs, blk);
	if (atomic_load(&ag->uninit))
		return ag_fresh_in_use(fs, ag, blk, used);
	err = mqfs_buf_read(fs, ag->meta + 1, MQFS_T_BBITMAP, &b);
	if (err)
		return err;
	mqfs_buf_lock(b);
	*used = bit_test(ag_words(b), (uint32_t)(blk - ag->first_block));
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	return 0;
}

/* ---- inodes ----------------------------------------------------------- */

static int ag_ialloc(struct mqfs_handle *h, struct mqfs_ag_info *ag,
		     bool is_dir, uint64_t *ino)
{
	struct mqfs_fs *fs = h->fs;
	struct ag_scan s = { .limit = fs->inodes_per_ag };
	struct mqfs_buf *b;
	uint32_t i;
	int err;

	pthread_mutex_lock(&ag->lock);
	if (!atomic_load(&ag->free_inodes)) {
		err = -ENOSPC;
		goto out;
	}
	err = mqfs_ag_ready_locked(h, ag);
	if (!err)
		err = mqfs_buf_read(fs, ag->meta + 2, MQFS_T_IBITMAP, &b);
	if (err)
		goto out;
	mqfs_buf_lock(b);
	s.map = ag_words(b);
	i = scan_next(&s, 0, s.limit, false);
	if (i < s.limit) {
		bits_change(ag_words(b), i, 1, true);
		mqfs_trans_dirty(h, b);
	}
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	if (i == s.limit) {
		mqfs_fs_error(fs, ag->meta + 2, "AG %u: inode bitmap is full "
			      "but the header counts free inodes", ag->index);
		err = -EUCLEAN;
		goto out;
	}
	err = ag_update_header_locked(h, ag, 0, -1, is_dir ? 1 : 0);
	if (!err) {
		atomic_fetch_sub(&fs->free_inodes, 1);
		*ino = (uint64_t)ag->index * fs->inodes_per_ag + i + 1;
	}
out:
	pthread_mutex_unlock(&ag->lock);
	return err;
}

/* Directories spread out: the AG with the most free inodes. */
static uint32_t ialloc_dir_ag(struct mqfs_fs *fs)
{
	uint32_t best = 0, best_free = 0;

	for (uint32_t i = 0; i < fs->ag_count; i++) {
		uint32_t f = atomic_load(&fs->ags[i].free_inodes);

		if (f > best_free) {
			best = i;
			best_free = f;
		}
	}
	return best;
}

int mqfs_ialloc(struct mqfs_handle *h, uint64_t parent, bool is_dir,
		uint64_t *ino)
{
	struct mqfs_fs *fs = h->fs;
	uint32_t first;

	if (is_dir)
		first = ialloc_dir_ag(fs);
	else if (parent && parent <= fs->inode_count)
		first = (uint32_t)((parent - 1) / fs->inodes_per_ag);
	else
		first = alloc_thread_ag(fs);
	for (uint32_t i = 0; i < fs->ag_count; i++) {
		struct mqfs_ag_info *ag = &fs->ags[(first + i) % fs->ag_count];
		int err = ag_ialloc(h, ag, is_dir, ino);

		if (err != -ENOSPC)
			return err;
	}
	return -ENOSPC;
}

int mqfs_ifree(struct mqfs_handle *h, uint64_t ino, bool was_dir)
{
	struct mqfs_fs *fs = h->fs;
	struct mqfs_ag_info *ag;
	struct mqfs_buf *b;
	uint32_t i;
	int err;

	if (!ino || ino > fs->inode_count || ino == MQFS_ROOT_INO) {
		mqfs_fs_error(fs, 0, "freeing impossible inode %llu",
			      (unsigned long long)ino);
		return -EUCLEAN;
	}
	ag = &fs->ags[(ino - 1) / fs->inodes_per_ag];
	i = (uint32_t)((ino - 1) % fs->inodes_per_ag);
	pthread_mutex_lock(&ag->lock);
	if (atomic_load(&ag->uninit)) {
		err = -EUCLEAN;		/* it has no inode in use */
		goto not_used;
	}
	err = mqfs_buf_read(fs, ag->meta + 2, MQFS_T_IBITMAP, &b);
	if (err)
		goto out;
	mqfs_buf_lock(b);
	if (bit_test(ag_words(b), i)) {
		bits_change(ag_words(b), i, 1, false);
		mqfs_trans_dirty(h, b);
	} else {
		err = -EUCLEAN;
	}
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
not_used:
	if (err) {
		mqfs_fs_error(fs, ag->meta + 2, "freeing inode %llu, which "
			      "is not in use", (unsigned long long)ino);
		goto out;
	}
	err = ag_update_header_locked(h, ag, 0, 1, was_dir ? -1 : 0);
	if (!err)
		atomic_fetch_add(&fs->free_inodes, 1);
out:
	pthread_mutex_unlock(&ag->lock);
	return err;
}
