// SPDX-License-Identifier: MIT
/*
 * buf.c - the metadata buffer cache: one 4 KiB buffer per cached block,
 * found through a hash on the block number, read and verified once.
 *
 * One mutex (the cache lock, innermost in the lock order) guards the
 * hash, the LRU list, the counters and the private BUF_READING bit.  A
 * buffer's reference count only goes from 0 to 1 and from 1 to 0 under
 * that lock, which is what keeps the LRU list exactly "the buffers
 * nobody holds"; the other changes are lock-free.  The journal holds a
 * reference on every DIRTY or CHECKPOINT buffer, so those are never on
 * the LRU list and can never be evicted; eviction still checks the
 * flags, cheaply, in case a caller broke that rule.
 *
 * Reads: the first thread to want a block that is not up to date marks
 * it BUF_READING and reads it without any lock held; the others wait on
 * the cache's condition variable.  A block that fails its check is
 * never marked up to date, so the next reader tries the device again
 * (and reports the error again) instead of trusting a cached bad copy.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"
#include "mqfs/lock.h"

/* Private flag bits, beside the public MQFS_BUF_* ones. */
enum {
	BUF_READING	= 1u << 8,	/* a thread is reading it in */
	BUF_FORGOTTEN	= 1u << 9,	/* block freed: drop at the last put */
};

#define BC_DEFAULT_BYTES	(32ull << 20)	/* as meta_cache_bytes 0 */
#define BC_MIN_BUCKETS		64u
#define BC_PINNED	(MQFS_BUF_DIRTY | MQFS_BUF_CHECKPOINT | BUF_READING)

struct mqfs_bcache {
	struct mqfs_fs *fs;
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t io_done;		/* some BUF_READING was cleared */
	struct mqfs_buf **hash;
	unsigned shift;			/* log2 of the bucket count */
	struct mq_list_head lru;	/* unreferenced buffers, oldest first */
	uint64_t max_blocks;
	uint64_t nr;			/* buffers in the hash */
	uint64_t hits, misses;
	/* Headers and blocks churn with every eviction: not malloc's. */
	struct mqfs_slab heads, blocks;
};

static const char *const bc_type_names[MQFS_T_COUNT] = {
	[MQFS_T_SUPER] = "super", [MQFS_T_AG] = "AG header",
	[MQFS_T_BBITMAP] = "block bitmap", [MQFS_T_IBITMAP] = "inode bitmap",
	[MQFS_T_ITABLE] = "inode table", [MQFS_T_EXTENT] = "extent",
	[MQFS_T_DIR] = "directory", [MQFS_T_XATTR] = "xattr",
	[MQFS_T_JDESC] = "journal descriptor",
	[MQFS_T_JCOMMIT] = "journal commit", [MQFS_T_AGINIT] = "AG-init map",
};

static const char *bc_type_name(unsigned type)
{
	if (type < MQFS_T_COUNT && bc_type_names[type])
		return bc_type_names[type];
	return "unknown";
}

/* ---- buffers -------------------------------------------------------- */

/* A buffer and the cache it belongs to (mqfs_buf_put finds it here). */
struct bc_buf {
	struct mqfs_buf b;
	struct mqfs_bcache *c;
};

static struct mqfs_bcache *buf_cache(struct mqfs_buf *b)
{
	return mq_container_of(b, struct bc_buf, b)->c;
}

static struct mqfs_buf *buf_alloc(struct mqfs_bcache *c, uint64_t blocknr)
{
	struct bc_buf *bb = mqfs_slab_alloc(&c->heads);
	struct mqfs_buf *b;

	if (!bb)
		return NULL;
	memset(bb, 0, sizeof(*bb));
	b = &bb->b;
	b->data = mqfs_slab_alloc(&c->blocks);
	if (!b->data) {
		mqfs_slab_free(&c->heads, bb);
		return NULL;
	}
	memset(b->data, 0, MQFS_BLOCK_SIZE);
	bb->c = c;
	b->blocknr = blocknr;
	pthread_mutex_init(&b->lock, NULL);
	atomic_init(&b->refcount, 1);
	atomic_init(&b->flags, 0);
	mq_list_init(&b->lru);
	mq_list_init(&b->txn_link);
	return b;
}

static void buf_free(struct mqfs_buf *b)
{
	struct mqfs_bcache *c = buf_cache(b);

	pthread_mutex_destroy(&b->lock);
	mqfs_slab_free(&c->blocks, b->data);
	mqfs_slab_free(&c->heads, mq_container_of(b, struct bc_buf, b));
}

/* Free buffers collected (through their lru link) by the caller. */
static void buf_free_list(struct mq_list_head *list)
{
	struct mqfs_buf *b;

	mq_list_for_each_entry_safe(b, list, lru) {
		mq_list_del_init(&b->lru);
		buf_free(b);
	}
}

static bool buf_is_zero(const void *data)
{
	const uint64_t *w = data;

	for (size_t i = 0; i < MQFS_BLOCK_SIZE / sizeof(*w); i++)
		if (w[i])
			return false;
	return true;
}

/* ---- hash and LRU (cache lock held) ----------------------------------- */

static size_t bc_bucket(const struct mqfs_bcache *c, uint64_t blocknr)
{
	return (size_t)((blocknr * 0x9e3779b97f4a7c15ull) >> (64 - c->shift));
}

static struct mqfs_buf *bc_lookup_locked(struct mqfs_bcache *c,
					 uint64_t blocknr)
{
	struct mqfs_buf *b = c->hash[bc_bucket(c, blocknr)];

	while (b && b->blocknr != blocknr)
		b = b->hash_next;
	return b;
}

static void bc_insert_locked(struct mqfs_bcache *c, struct mqfs_buf *b)
{
	struct mqfs_buf **head = &c->hash[bc_bucket(c, b->blocknr)];

	b->hash_next = *head;
	*head = b;
	c->nr++;
}

/* Unhash and unlink @b (refcount 0); the caller frees it. */
static void bc_remove_locked(struct mqfs_bcache *c, struct mqfs_buf *b)
{
	struct mqfs_buf **pp = &c->hash[bc_bucket(c, b->blocknr)];

	while (*pp != b)
		pp = &(*pp)->hash_next;
	*pp = b->hash_next;
	b->hash_next = NULL;
	mq_list_del_init(&b->lru);
	c->nr--;
}

/* Take a reference on a hashed buffer; 0 -> 1 takes it off the LRU. */
static void bc_hold_locked(struct mqfs_buf *b)
{
	if (atomic_fetch_add(&b->refcount, 1) == 0)
		mq_list_del_init(&b->lru);
}

/* Move the oldest unpinned buffers to @victims until under the bound. */
static void bc_evict_locked(struct mqfs_bcache *c,
			    struct mq_list_head *victims)
{
	struct mqfs_buf *b;

	mq_list_for_each_entry_safe(b, &c->lru, lru) {
		if (c->nr <= c->max_blocks)
			break;
		if (atomic_load(&b->refcount) ||
		    (atomic_load(&b->flags) & BC_PINNED))
			continue;
		bc_remove_locked(c, b);
		mq_list_add_tail(&b->lru, victims);
	}
}

/* ---- the cache -------------------------------------------------------- */

int mqfs_bcache_create(struct mqfs_fs *fs, uint64_t max_bytes)
{
	struct mqfs_bcache *c = calloc(1, sizeof(*c));
	uint64_t buckets = BC_MIN_BUCKETS;

	if (!c)
		return -ENOMEM;
	if (!max_bytes)
		max_bytes = BC_DEFAULT_BYTES;
	c->max_blocks = MQ_MAX(max_bytes / MQFS_BLOCK_SIZE, 1u);
	c->shift = 6;
	while (buckets < c->max_blocks && c->shift < 24) {
		buckets <<= 1;
		c->shift++;
	}
	c->hash = calloc(buckets, sizeof(*c->hash));
	if (!c->hash) {
		free(c);
		return -ENOMEM;
	}
	mqfs_slab_init(&c->heads, sizeof(struct bc_buf), 64);
	mqfs_slab_init(&c->blocks, MQFS_BLOCK_SIZE, MQFS_BLOCK_SIZE);
	c->fs = fs;
	mq_lock_init_short(&c->lock);
	pthread_cond_init(&c->io_done, NULL);
	mq_list_init(&c->lru);
	fs->bcache = c;
	return 0;
}

/* Free every buffer; any still held or not yet written is a leak. */
void mqfs_bcache_destroy(struct mqfs_fs *fs)
{
	struct mqfs_bcache *c = fs->bcache;
	unsigned leaks = 0;

	if (!c)
		return;
	for (size_t i = 0; i < (size_t)1 << c->shift; i++) {
		while (c->hash[i]) {
			struct mqfs_buf *b = c->hash[i];
			unsigned flags = atomic_load(&b->flags);
			unsigned ref = atomic_load(&b->refcount);

			if (ref || (flags & BC_PINNED)) {
				fprintf(stderr, "mqfs: buf: block %" PRIu64
					" still in use at teardown (ref %u, "
					"flags %#x)\n", b->blocknr, ref, flags);
				leaks++;
			}
			c->hash[i] = b->hash_next;
			c->nr--;
			buf_free(b);
		}
	}
	if (leaks)
		fprintf(stderr, "mqfs: buf: %u buffers leaked\n", leaks);
	MQ_ASSERT(c->nr == 0);
	pthread_cond_destroy(&c->io_done);
	pthread_mutex_destroy(&c->lock);
	mqfs_slab_destroy(&c->blocks);
	mqfs_slab_destroy(&c->heads);
	free(c->hash);
	free(c);
	fs->bcache = NULL;
}

/*
 * Find or insert the buffer of @blocknr with a reference, waiting out a
 * read in progress.  *must_read: the caller now owns BUF_READING and
 * must read the block in (and call bc_read_done).  With @fresh the
 * caller will zero it instead: a new buffer is born up to date.
 */
static int bc_get(struct mqfs_bcache *c, uint64_t blocknr, bool fresh,
		  struct mqfs_buf **out, bool *must_read)
{
	struct mq_list_head victims = MQ_LIST_HEAD_INIT(victims);
	struct mqfs_buf *b, *nb = NULL;

	*must_read = false;
	pthread_mutex_lock(&c->lock);
	b = bc_lookup_locked(c, blocknr);
	if (!b) {
		pthread_mutex_unlock(&c->lock);
		nb = buf_alloc(c, blocknr);
		if (!nb)
			return -ENOMEM;
		pthread_mutex_lock(&c->lock);
		b = bc_lookup_locked(c, blocknr);
	}
	if (!b) {
		b = nb;
		nb = NULL;
		atomic_store(&b->flags, fresh ? MQFS_BUF_UPTODATE : BUF_READING);
		*must_read = !fresh;
		c->misses += !fresh;
		bc_insert_locked(c, b);
		bc_evict_locked(c, &victims);
	} else {
		bc_hold_locked(b);
		while (atomic_load(&b->flags) & BUF_READING)
			pthread_cond_wait(&c->io_done, &c->lock);
		if (fresh) {
			atomic_fetch_and(&b->flags, ~(unsigned)BUF_FORGOTTEN);
			atomic_fetch_or(&b->flags, MQFS_BUF_UPTODATE);
		} else if (atomic_load(&b->flags) & MQFS_BUF_UPTODATE) {
			c->hits++;
		} else {
			atomic_fetch_or(&b->flags, BUF_READING);
			*must_read = true;
			c->misses++;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (nb)
		buf_free(nb);
	buf_free_list(&victims);
	*out = b;
	return 0;
}

static void bc_read_done(struct mqfs_bcache *c, struct mqfs_buf *b,
			 unsigned type, bool ok)
{
	pthread_mutex_lock(&c->lock);
	if (ok) {
		b->type = (uint16_t)type;
		atomic_fetch_or(&b->flags, MQFS_BUF_UPTODATE);
	}
	atomic_fetch_and(&b->flags, ~(unsigned)BUF_READING);
	pthread_cond_broadcast(&c->io_done);
	pthread_mutex_unlock(&c->lock);
}

/*
 * Read @b's block and check it as @type.  An all-zero inode table
 * block is what mkfs's WRITE_ZEROES left: an empty table, accepted.
 */
static int buf_fill(struct mqfs_fs *fs, struct mqfs_buf *b, unsigned type)
{
	int err = mqfs_bio_sync(fs->q, MQ_OP_READ, b->blocknr, b->data, 1,
				MQ_REQ_META | MQ_REQ_SYNC);

	if (err) {
		fprintf(stderr, "mqfs: buf: reading block %" PRIu64
			" failed: %d\n", b->blocknr, err);
		return -EIO;
	}
	if (!mqfs_blk_verify(b->data, type, b->blocknr))
		return 0;
	if (type == MQFS_T_ITABLE && buf_is_zero(b->data))
		return 0;
	return -EUCLEAN;
}

int mqfs_buf_read(struct mqfs_fs *fs, uint64_t blocknr, unsigned type,
		  struct mqfs_buf **out)
{
	struct mqfs_buf *b;
	bool must_read;
	int err;

	*out = NULL;
	if (blocknr >= fs->block_count) {
		mqfs_fs_error(fs, blocknr, "%s block number past the end of "
			      "the filesystem", bc_type_name(type));
		return -EUCLEAN;
	}
	err = bc_get(fs->bcache, blocknr, false, &b, &must_read);
	if (err)
		return err;
	if (must_read) {
		err = buf_fill(fs, b, type);
		bc_read_done(fs->bcache, b, type, !err);
		if (err == -EUCLEAN)
			mqfs_fs_error(fs, blocknr, "bad checksum/header for %s "
				      "block", bc_type_name(type));
	} else if (b->type != type) {
		/* Cached as another type: a pointer to the wrong block. */
		mqfs_fs_error(fs, blocknr, "%s block read as a %s block",
			      bc_type_name(b->type), bc_type_name(type));
		err = -EUCLEAN;
	}
	if (err) {
		mqfs_buf_put(b);
		return err;
	}
	*out = b;
	return 0;
}

int mqfs_buf_new(struct mqfs_fs *fs, uint64_t blocknr, unsigned type,
		 struct mqfs_buf **out)
{
	struct mqfs_buf *b;
	bool must_read;
	int err;

	*out = NULL;
	if (blocknr >= fs->block_count)
		return -EINVAL;
	err = bc_get(fs->bcache, blocknr, true, &b, &must_read);
	if (err)
		return err;
	pthread_mutex_lock(&b->lock);
	memset(b->data, 0, MQFS_BLOCK_SIZE);
	b->type = (uint16_t)type;
	pthread_mutex_unlock(&b->lock);
	*out = b;
	return 0;
}

void mqfs_buf_get(struct mqfs_buf *b)
{
	unsigned old = atomic_fetch_add(&b->refcount, 1);

	MQ_ASSERT(old > 0);
}

/* Drop the last reference under the cache lock (see the file comment). */
static void bc_put_last(struct mqfs_bcache *c, struct mqfs_buf *b)
{
	struct mq_list_head victims = MQ_LIST_HEAD_INIT(victims);
	unsigned old, flags;

	pthread_mutex_lock(&c->lock);
	old = atomic_fetch_sub(&b->refcount, 1);
	MQ_ASSERT(old > 0);
	flags = atomic_load(&b->flags);
	if (old == 1) {
		if ((!(flags & MQFS_BUF_UPTODATE) || (flags & BUF_FORGOTTEN)) &&
		    !(flags & BC_PINNED)) {
			bc_remove_locked(c, b);
			mq_list_add_tail(&b->lru, &victims);
		} else {
			mq_list_add_tail(&b->lru, &c->lru);
			bc_evict_locked(c, &victims);
		}
	}
	pthread_mutex_unlock(&c->lock);
	buf_free_list(&victims);
}

void mqfs_buf_put(struct mqfs_buf *b)
{
	unsigned v = atomic_load(&b->refcount);

	/* Not the last reference: no lock needed. */
	while (v > 1)
		if (atomic_compare_exchange_weak(&b->refcount, &v, v - 1))
			return;
	bc_put_last(buf_cache(b), b);
}

void mqfs_buf_lock(struct mqfs_buf *b)
{
	pthread_mutex_lock(&b->lock);
}

void mqfs_buf_unlock(struct mqfs_buf *b)
{
	pthread_mutex_unlock(&b->lock);
}

void mqfs_buf_forget(struct mqfs_fs *fs, uint64_t blocknr)
{
	struct mqfs_bcache *c = fs->bcache;
	struct mqfs_buf *b;
	bool drop = false;

	pthread_mutex_lock(&c->lock);
	b = bc_lookup_locked(c, blocknr);
	if (b && !atomic_load(&b->refcount) &&
	    !(atomic_load(&b->flags) & BC_PINNED)) {
		bc_remove_locked(c, b);
		drop = true;
	} else if (b) {
		/* Still held or not yet home: drop it at the last put. */
		atomic_fetch_or(&b->flags, BUF_FORGOTTEN);
	}
	pthread_mutex_unlock(&c->lock);
	if (drop)
		buf_free(b);
}

/* @cached counts blocks (buffers in the cache), held ones included. */
void mqfs_bcache_stats(struct mqfs_fs *fs, uint64_t *cached,
		       uint64_t *hits, uint64_t *misses)
{
	struct mqfs_bcache *c = fs->bcache;

	pthread_mutex_lock(&c->lock);
	*cached = c->nr;
	*hits = c->hits;
	*misses = c->misses;
	pthread_mutex_unlock(&c->lock);
}
