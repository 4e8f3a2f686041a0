// SPDX-License-Identifier: MIT
/*
 * databuf.c - pools of data buffers: power-of-two classes, each with a
 * free list linked in place, and a bound of each pool's own.
 *
 * Two users, one mechanism.  The mount's large buffers (bounce buffers
 * of reads and writes, read-ahead windows; 128 KiB - 4 MiB) are short-
 * lived and freed by other threads than the ones that took them: from
 * malloc that pattern grows the process without bound (glibc raises its
 * mmap threshold after the first free of a large chunk and from then on
 * serves them from per-thread arenas that fragment; measured: a 1 GiB
 * sequential read at 1 MiB x 8 left the daemon at 350 MiB RSS).  Their
 * pool caches up to 32 MiB and bounds nothing else.  The dontcache
 * write-behind buffers (4 KiB - 1 MiB) are bounded by dontcache_dirty:
 * held memory (in use + cached) never passes it, the cache shrinks to
 * make room, and a taker that still does not fit is told to wait
 * (-EAGAIN) for a put.  Either way a steady stream allocates nothing.
 *
 * Buffers of 128 KiB (glibc's initial mmap threshold) and more are
 * mmap()ed, smaller ones come from posix_memalign; sizes outside the
 * classes are served and freed directly, counted but not cached.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "fs_i.h"

#define BP_MAX_CLASSES	12u
#define BP_MMAP_MIN	(128u << 10)

struct mqfs_bufpool {
	pthread_mutex_t lock;
	struct mqfs_bufpool_cfg cfg;
	struct mqfs_bufpool_stats st;
	void *free_list[BP_MAX_CLASSES];	/* linked in place */
};

int mqfs_bufpool_create(const struct mqfs_bufpool_cfg *cfg,
			struct mqfs_bufpool **out)
{
	struct mqfs_bufpool *bp;

	if (!cfg->nr_classes || cfg->nr_classes > BP_MAX_CLASSES ||
	    cfg->min_shift < MQFS_BLOCK_SHIFT)
		return -EINVAL;
	bp = calloc(1, sizeof(*bp));
	if (!bp)
		return -ENOMEM;
	pthread_mutex_init(&bp->lock, NULL);
	bp->cfg = *cfg;
	*out = bp;
	return 0;
}

static size_t bp_class_bytes(const struct mqfs_bufpool *bp, unsigned c)
{
	return (size_t)1 << (bp->cfg.min_shift + c);
}

/* The class of @bytes, or nr_classes when it is outside them. */
static unsigned bp_class(const struct mqfs_bufpool *bp, size_t bytes)
{
	unsigned c = 0;

	if (bytes < bp_class_bytes(bp, 0))
		return bp->cfg.nr_classes;
	while (c < bp->cfg.nr_classes && bp_class_bytes(bp, c) < bytes)
		c++;
	return c;
}

static void *bp_alloc(size_t bytes)
{
	void *p;

	if (bytes >= BP_MMAP_MIN) {
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	return posix_memalign(&p, MQFS_BLOCK_SIZE, bytes ? bytes : 1) ?
	       NULL : p;
}

static void bp_free(void *p, size_t bytes)
{
	if (bytes >= BP_MMAP_MIN)
		munmap(p, bytes);
	else
		free(p);
}

/* Free cached buffers, largest first, until @need more fits the bound. */
static void bp_trim_locked(struct mqfs_bufpool *bp, uint64_t need)
{
	for (unsigned c = bp->cfg.nr_classes; c-- > 0;) {
		while (bp->free_list[c] &&
		       bp->st.held + need > bp->cfg.limit) {
			void *p = bp->free_list[c];

			bp->free_list[c] = *(void **)p;
			bp_free(p, bp_class_bytes(bp, c));
			bp->st.held -= bp_class_bytes(bp, c);
			bp->st.cached -= bp_class_bytes(bp, c);
		}
	}
}

void mqfs_bufpool_destroy(struct mqfs_bufpool *bp)
{
	if (!bp)
		return;
	bp->cfg.limit = 0;
	bp_trim_locked(bp, 1);
	pthread_mutex_destroy(&bp->lock);
	free(bp);
}

/*
 * Whether @size more fits the bound, the cache shrunk for it.  One
 * buffer larger than the whole bound is let through when nothing is in
 * use, so a tiny bound still makes progress.
 */
static bool bp_room_locked(struct mqfs_bufpool *bp, size_t size)
{
	if (!bp->cfg.limit || bp->st.held + size <= bp->cfg.limit)
		return true;
	bp_trim_locked(bp, size);
	return bp->st.held + size <= bp->cfg.limit || !bp->st.in_use;
}

static size_t bp_size(const struct mqfs_bufpool *bp, unsigned c,
		      size_t bytes)
{
	return c < bp->cfg.nr_classes ? bp_class_bytes(bp, c) : bytes;
}

int mqfs_bufpool_get(struct mqfs_bufpool *bp, size_t bytes, void **out)
{
	unsigned c = bp_class(bp, bytes);
	size_t size = bp_size(bp, c, bytes);
	void *p = NULL;

	pthread_mutex_lock(&bp->lock);
	if (c < bp->cfg.nr_classes && bp->free_list[c]) {
		p = bp->free_list[c];
		bp->free_list[c] = *(void **)p;
		bp->st.cached -= size;
	} else if (bp_room_locked(bp, size)) {
		/* Reserved now, mapped unlocked below. */
		bp->st.held += size;
		bp->st.held_peak = MQ_MAX(bp->st.held_peak, bp->st.held);
	} else {
		pthread_mutex_unlock(&bp->lock);
		return -EAGAIN;
	}
	bp->st.in_use += size;
	pthread_mutex_unlock(&bp->lock);
	if (!p && !(p = bp_alloc(size))) {
		pthread_mutex_lock(&bp->lock);
		bp->st.held -= size;
		bp->st.in_use -= size;
		pthread_mutex_unlock(&bp->lock);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void mqfs_bufpool_put(struct mqfs_bufpool *bp, void *p, size_t bytes)
{
	unsigned c = bp_class(bp, bytes);
	size_t size = bp_size(bp, c, bytes);
	bool keep;

	if (!p)
		return;
	pthread_mutex_lock(&bp->lock);
	bp->st.in_use -= size;
	keep = c < bp->cfg.nr_classes &&
	       bp->st.cached + size <= bp->cfg.cache_max &&
	       (!bp->cfg.limit || bp->st.held <= bp->cfg.limit);
	if (keep) {
		*(void **)p = bp->free_list[c];
		bp->free_list[c] = p;
		bp->st.cached += size;
	} else {
		bp->st.held -= size;
	}
	pthread_mutex_unlock(&bp->lock);
	if (!keep)
		bp_free(p, size);
}

void mqfs_bufpool_stats(struct mqfs_bufpool *bp,
			struct mqfs_bufpool_stats *out)
{
	pthread_mutex_lock(&bp->lock);
	*out = bp->st;
	pthread_mutex_unlock(&bp->lock);
}

/* ---- the mount's large buffers ----------------------------------------- */

int mqfs_databuf_create(struct mqfs_fs *fs)
{
	static const struct mqfs_bufpool_cfg cfg = {
		.min_shift = 17,		/* 128 KiB */
		.nr_classes = 6,		/* .. 4 MiB */
		.cache_max = 32u << 20,
	};

	return mqfs_bufpool_create(&cfg, &fs->databuf);
}

void mqfs_databuf_destroy(struct mqfs_fs *fs)
{
	mqfs_bufpool_destroy(fs->databuf);
	fs->databuf = NULL;
}

void *mqfs_databuf_get(struct mqfs_fs *fs, size_t bytes)
{
	void *p;

	return mqfs_bufpool_get(fs->databuf, bytes, &p) ? NULL : p;
}

void mqfs_databuf_put(struct mqfs_fs *fs, void *p, size_t bytes)
{
	mqfs_bufpool_put(fs->databuf, p, bytes);
}
