/* SPDX-License-Identifier: MIT */
/*
 * fs_i.h - the filesystem's private objects and the interfaces between
 * its modules (src/fs).  One section per module; each .c file implements
 * exactly its section.
 *
 * Lock order (DESIGN.md §16), outermost first:
 *   fs->rename_lock (cross-directory renames only)
 *   -> inode rwlocks (ascending inode number)
 *   -> transaction handle (journal commit rwlock, shared)
 *   -> AG lock -> fs->sb_lock -> inode-cache lock -> buffer lock
 *   -> ip->meta_lock or the buffer-cache lock (leaves: nothing is taken
 *      under either).
 * The write-behind lock (wback.c) nests inside inode locks and is held
 * only around its own lists; under it only the inode-cache lock (to pin
 * an inode), its buffer pool's lock (databuf.c) and the flusher's kick
 * lock are taken.
 * The commit takes the commit rwlock exclusively and never an inode lock.
 * The commit thread's and the flusher's own locks (mqfs/kthread.h) are
 * leaves: held only to kick or to sleep.
 */
#ifndef MQFS_FS_I_H
#define MQFS_FS_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "mqfs/blk.h"
#include "mqfs/format.h"
#include "mqfs/inflight.h"
#include "mqfs/fs.h"
#include "mqfs/list.h"
#include "mqfs/rbtree.h"

struct mqfs_bcache;
struct mqfs_journal;
struct mqfs_icache;
struct mqfs_ag_info;
struct mqfs_dir_index;
struct mqfs_wback;
struct mqfs_bufpool;

/* ---- the mounted filesystem (super.c) ---------------------------------- */

/*
 * What the inode cache needs of the modules above it when an inode goes
 * (the kernel's ->evict_inode): set by the mount (super.c), so that
 * the inode cache (inode.c, orphan.c) calls none of the modules that
 * call it.
 */
struct mqfs_handle;
struct mqfs_ino;
struct mqfs_ino_ops {
	/* Free every block of a deleted inode (fspace.c, ip->lock held). */
	int (*free_data)(struct mqfs_fs *fs, struct mqfs_ino *ip);
	/* Finish a truncate a crash cut short (fspace.c, ip->lock held). */
	int (*truncate)(struct mqfs_fs *fs, struct mqfs_ino *ip,
			uint64_t size);
	/* Free all but the head of a deleted inode's xattr chain, in
	 * handles of its own (xattr_chain.c, ip->lock held). */
	int (*trim_xattrs)(struct mqfs_fs *fs, struct mqfs_ino *ip);
	/* Free the block left of a deleted inode's xattr chain, in @h
	 * (xattr_chain.c). */
	int (*drop_xattrs)(struct mqfs_handle *h, struct mqfs_ino *ip);
	/* Free a directory's in-core index (dir.c). */
	void (*free_dir_index)(struct mqfs_ino *dir);
};

struct mqfs_fs {
	struct mq_queue *q;
	struct mqfs_mount_opts opts;
	/* Geometry, copied from the superblock at mount; never changes. */
	uint64_t block_count;
	uint32_t ag_count, ag_blocks, inodes_per_ag, itable_blocks;
	uint64_t inode_count;
	uint64_t journal_start;
	uint32_t journal_blocks;
	uint32_t aginit_blocks;		/* AG-init map (lazy AGs); 0: none */
	uint32_t ag_tag;		/* what AG headers' fs_tag must be */
	struct mqfs_buf *sb_buf;	/* block 0, pinned while mounted */
	struct mqfs_super *sb0;		/* block 0 as mount read it: replay */
	struct mqfs_bcache *bcache;
	struct mqfs_journal *journal;
	struct mqfs_icache *icache;
	struct mqfs_ag_info *ags;	/* ag_count of them */
	struct mqfs_wback *wback;	/* dontcache write-behind (wback.c) */
	struct mqfs_bufpool *databuf;	/* large data buffers (databuf.c) */
	pthread_mutex_t sb_lock;	/* orphan list, inode_gen */
	pthread_mutex_t rename_lock;	/* cross-directory renames (rename.c) */
	/*
	 * Files open now (attr.c): an aborted connection never sends their
	 * RELEASE, and unmount releases what is left.
	 */
	pthread_mutex_t files_lock;
	struct mq_list_head open_files;
	atomic_uint_fast64_t free_blocks, free_inodes;
	atomic_bool readonly;		/* ro mount or errors=remount-ro hit */
	atomic_bool error_seen;
	/* mqfs_fs_error calls, and the block the last one named. */
	atomic_uint_fast64_t errors, last_error_blk;
	/*
	 * Called before a commit takes the running transaction (fsync, sync,
	 * the commit thread with @wait false, the final commit): records
	 * kept in memory join it there (mqfs_ino_write_lazy).  May be NULL;
	 * changed only through mqfs_journal_set_pre_commit.
	 */
	int (*pre_commit)(struct mqfs_fs *fs, bool wait);
	/*
	 * Called when transaction @seq is checkpointed (its frees may be
	 * reused: the allocator's busy blocks, alloc.c), with the commit
	 * mutex held.  Set before the journal is created; may be NULL.
	 * A callback, so that the journal (mechanism) does not call the
	 * allocator (policy), as jbd2 calls back into ext4.
	 */
	void (*checkpointed)(struct mqfs_fs *fs, uint64_t seq);
	/* What the inode cache asks of the modules above it (super.c). */
	const struct mqfs_ino_ops *ino_ops;
};

static inline struct mqfs_super *mqfs_sb(struct mqfs_fs *fs);

/* ---- mount-wide state (fs_err.c) ---------------------------------------- */

/*
 * Record a filesystem error (bad checksum at @blocknr, impossible
 * structure): log it with the block number, set MQFS_STATE_ERRORS in
 * the next commit and, with errors=remount-ro, make the mount read-only.
 */
void mqfs_fs_error(struct mqfs_fs *fs, uint64_t blocknr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* -EROFS when the mount is (or has become) read-only. */
int mqfs_fs_writable(struct mqfs_fs *fs);

/* ---- the filesystem's clock (fsclock.c) -------------------------------- */

/* Now, for a timestamp: the kernel's clock (coarse), never below a kernel
 * stamp seen. */
void mqfs_now(uint64_t *sec, uint32_t *nsec);
/* A time the kernel set (SETATTR of mtime or ctime): one it stamped from
 * its clock, if not in the future. */
void mqfs_clock_saw(uint64_t sec, uint32_t nsec);

/* ---- what a superblock and a journal copy must be (sbcheck.c) ---------- */

/* Why @sb cannot describe a filesystem on @dev_blocks blocks, or NULL. */
const char *mqfs_super_why_bad(const struct mqfs_super *sb,
			       uint64_t dev_blocks);
/* What the feature words allow this mqfs (feature_compat: anything). */
enum {
	MQFS_FEAT_KNOWN,		/* read and write */
	MQFS_FEAT_READ_ONLY,		/* an unknown ro_compat bit */
	MQFS_FEAT_UNREADABLE,		/* an unknown incompat bit */
};
int mqfs_super_unknown_features(const struct mqfs_super *sb);
/*
 * Superblock copies (MQFS_FEATURE_RO_COMPAT_SB_BACKUPS): does AG @ag of
 * @ag_count hold one in its last block?  And every copy of @sb's, the
 * last block of the device first, into @out (at most @max): how many.
 */
#define MQFS_SB_COPIES_MAX	64
bool mqfs_ag_has_sb_copy(uint32_t ag, uint32_t ag_count);
unsigned mqfs_sb_copies(const struct mqfs_super *sb, uint64_t *out,
			unsigned max);
/* Write @sb's copies (mqfs_sb_copies), each sealed for its block. */
int mqfs_super_write_copies(struct mq_queue *q, const struct mqfs_super *sb);
/* Same geometry and uuid: the same filesystem. */
bool mqfs_super_same_fs(const struct mqfs_super *a, const struct mqfs_super *b);
/*
 * Why a block transaction @seq carries to @home must not go there, or
 * NULL (the filesystem is @sb's).  Replay and fsck apply this same rule.
 */
const char *mqfs_jcopy_why_bad(const struct mqfs_super *sb, uint64_t dev_blocks,
			       uint64_t seq, uint64_t home, const void *blk);
/* The reasons a sealed copy of the transaction is corrupt, not torn. */
bool mqfs_jcopy_corrupt(const char *why);

/* ---- fixed-size objects of the churning caches (slab.c) ---------------- */

struct mqfs_slab {
	pthread_mutex_t lock;
	size_t size;			/* of an object, rounded to its align */
	void *free;			/* free objects, linked in place */
	void *chunks;			/* mapped chunks, linked by slot 0 */
	size_t nr_chunks, in_use;
};
/* Objects of @size at @align (a power of two, at most 4096). */
int mqfs_slab_init(struct mqfs_slab *s, size_t size, size_t align);
void *mqfs_slab_alloc(struct mqfs_slab *s);	/* not zeroed; NULL */
void mqfs_slab_free(struct mqfs_slab *s, void *p);
/* Every object must be free already. */
void mqfs_slab_destroy(struct mqfs_slab *s);

/* ---- block I/O helpers (bio.c) ----------------------------------------- */

static inline uint64_t mqfs_blk_to_sector(uint64_t blk)
{
	return blk << (MQFS_BLOCK_SHIFT - MQ_SECTOR_SHIFT);
}

/* ---- sets of bios in flight (bio.c) ------------------------------------ */

#define MQFS_BIO_BLOCKS		256u	/* 1 MiB: the largest bio we build */
#define MQFS_BATCH_INLINE	8u	/* bios a waited batch carries */

struct mqfs_bioset;
/* The set's last bio ended; the set may be freed or reused at once. */
typedef void (*mqfs_bioset_done_t)(struct mqfs_bioset *s);

/*
 * Bios collected, submitted together and ended together.  The owner
 * embeds the set and its inline bios; @prio_class (default NONE: the
 * submitting thread's) goes to every bio added after it is set.
 */
struct mqfs_bioset {
	atomic_uint pending;
	atomic_int error;		/* the first error */
	uint64_t error_sector;		/* where it happened */
	unsigned nbios, cap;
	struct mq_bio *bios;		/* @inline_bios or grown */
	struct mq_bio *inline_bios;
	mqfs_bioset_done_t done;
	uint8_t prio_class;
};

void mqfs_bioset_init(struct mqfs_bioset *s, struct mq_bio *inline_bios,
		      unsigned n_inline, mqfs_bioset_done_t done);
/*
 * Bios for @nblocks at @blk from @buf, MQFS_BIO_BLOCKS at most each
 * (one empty bio for a flush).  0 or -ENOMEM, which is also recorded as
 * the set's error.
 */
int mqfs_bioset_add(struct mqfs_bioset *s, enum mq_op op, uint64_t blk,
		    void *buf, uint32_t nblocks, uint16_t flags);
/* Forget the bios not yet submitted; @err is the set's error. */
void mqfs_bioset_fail(struct mqfs_bioset *s, int err);
/*
 * Submit all under one plug (or call done at once when there is none).
 * The set may be ended and reused before this returns.
 */
void mqfs_bioset_submit(struct mq_queue *q, struct mqfs_bioset *s);
static inline int mqfs_bioset_error(struct mqfs_bioset *s)
{
	return atomic_load(&s->error);
}
/* Free what the set grew (after done). */
void mqfs_bioset_release(struct mqfs_bioset *s);

/* A set of bios waited for together. */
struct mqfs_bio_batch {
	struct mqfs_bioset set;
	struct mq_bio inline_bios[MQFS_BATCH_INLINE];
	struct mq_queue *q;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;
	int error;			/* first error (after the wait) */
	uint64_t error_blk;
};

void mqfs_batch_init(struct mqfs_bio_batch *b);
/* Add a bio of @nblocks at @blk (op READ/WRITE/FLUSH/DISCARD/...). */
void mqfs_batch_add(struct mq_queue *q, struct mqfs_bio_batch *b,
		    enum mq_op op, uint64_t blk, void *buf, uint32_t nblocks,
		    uint16_t flags);
/*
 * Submit what was added, flush the caller's plug, wait for all, destroy;
 * 0 or the first error.
 */
int mqfs_batch_wait(struct mqfs_bio_batch *b);
/* One synchronous I/O. */
int mqfs_bio_sync(struct mq_queue *q, enum mq_op op, uint64_t blk,
		  void *buf, uint32_t nblocks, uint16_t flags);
int mqfs_flush_device(struct mq_queue *q);
/* Make @nblocks at @blk read as zeroes, synchronously (bio.c). */
int mqfs_bio_zeroout(struct mq_queue *q, uint64_t blk, uint32_t nblocks);
/* 4 KiB-aligned zeroed memory of @nblocks blocks (free with free()). */
void *mqfs_alloc_blocks_mem(size_t nblocks);

/* ---- pools of data buffers (databuf.c) --------------------------------- */

struct mqfs_bufpool_cfg {
	unsigned min_shift;		/* smallest class: 1 << min_shift */
	unsigned nr_classes;		/* power-of-two classes from there */
	uint64_t limit;			/* bound on held bytes; 0: none */
	uint64_t cache_max;		/* bound on cached bytes */
};

struct mqfs_bufpool_stats {
	uint64_t held;			/* in use + cached */
	uint64_t held_peak;
	uint64_t in_use;
	uint64_t cached;
};

/* 0, -EINVAL (a bad configuration) or -ENOMEM. */
int mqfs_bufpool_create(const struct mqfs_bufpool_cfg *cfg,
			struct mqfs_bufpool **out);
/* Frees the cache; buffers still out must not come back. */
void mqfs_bufpool_destroy(struct mqfs_bufpool *bp);
/*
 * A 4 KiB-aligned buffer of at least @bytes, not zeroed: 0, -EAGAIN
 * (the bound is reached while buffers are out: wait for a put) or
 * -ENOMEM.  Give it back with the same @bytes.
 */
int mqfs_bufpool_get(struct mqfs_bufpool *bp, size_t bytes, void **out);
void mqfs_bufpool_put(struct mqfs_bufpool *bp, void *p, size_t bytes);
void mqfs_bufpool_stats(struct mqfs_bufpool *bp,
			struct mqfs_bufpool_stats *out);

/* The mount's large buffers (read/write bounces, read-ahead windows). */
int mqfs_databuf_create(struct mqfs_fs *fs);
void mqfs_databuf_destroy(struct mqfs_fs *fs);
/* As mqfs_bufpool_get(); NULL when out of memory. */
void *mqfs_databuf_get(struct mqfs_fs *fs, size_t bytes);
void mqfs_databuf_put(struct mqfs_fs *fs, void *p, size_t bytes);

/* ---- metadata checksums (csum.c) ------------------------------------------ */

/* Fill the header (magic, type, blocknr, gen) and the checksum. */
void mqfs_blk_seal(void *blk, unsigned type, uint64_t blocknr, uint64_t gen);
/* Recompute only the checksum (header already filled). */
void mqfs_blk_update_csum(void *blk);
/* 0, or -EUCLEAN when magic, type, blocknr or checksum is wrong. */
int mqfs_blk_verify(const void *blk, unsigned type, uint64_t blocknr);
uint64_t mqfs_hash(const void *data, size_t len);

/*
 * Room for one more element in the array *@arrayp (a T ** passed as
 * void *) of *@cap elements of @elem bytes, @n of them used: doubled
 * when full (@first elements when empty).  0, or -ENOMEM with the array
 * and *@cap as they were.
 */
int mqfs_array_reserve(void *arrayp, size_t *cap, size_t n, size_t elem,
		       size_t first);

/* ---- metadata buffer cache (buf.c) -------------------------------------- */

enum {
	MQFS_BUF_UPTODATE	= 1u << 0,
	MQFS_BUF_DIRTY		= 1u << 1,	/* in the running transaction */
	MQFS_BUF_CHECKPOINT	= 1u << 2,	/* home write still pending */
};

/*
 * One cached metadata block.  @lock guards @data: hold it to read or
 * change the content.  A buffer with references, DIRTY or CHECKPOINT is
 * never evicted.
 */
struct mqfs_buf {
	uint64_t blocknr;
	void *data;			/* MQFS_BLOCK_SIZE, 4 KiB aligned */
	pthread_mutex_t lock;
	atomic_uint refcount;
	atomic_uint flags;		/* MQFS_BUF_* */
	uint64_t txn_seq;		/* transaction it is dirty in */
	uint16_t type;			/* enum mqfs_blk_type */
	/* Buffer-cache linkage (buf.c). */
	struct mqfs_buf *hash_next;
	struct mq_list_head lru;
	struct mq_list_head txn_link;	/* journal.c: running txn list */
};

int mqfs_bcache_create(struct mqfs_fs *fs, uint64_t max_bytes);
void mqfs_bcache_destroy(struct mqfs_fs *fs);
/*
 * Get block @blocknr read from the device and verified as @type (a bad
 * checksum calls mqfs_fs_error and returns -EUCLEAN).  Takes a reference.
 */
int mqfs_buf_read(struct mqfs_fs *fs, uint64_t blocknr, unsigned type,
		  struct mqfs_buf **out);
/* Get a buffer for a freshly allocated block: zeroed, not read. */
int mqfs_buf_new(struct mqfs_fs *fs, uint64_t blocknr, unsigned type,
		 struct mqfs_buf **out);
void mqfs_buf_get(struct mqfs_buf *b);
void mqfs_buf_put(struct mqfs_buf *b);
void mqfs_buf_lock(struct mqfs_buf *b);
void mqfs_buf_unlock(struct mqfs_buf *b);
/* Drop a clean, unreferenced cached copy of @blocknr (freed block). */
void mqfs_buf_forget(struct mqfs_fs *fs, uint64_t blocknr);
/* Figures for statfs / the control surface. */
void mqfs_bcache_stats(struct mqfs_fs *fs, uint64_t *cached,
		       uint64_t *hits, uint64_t *misses);

/* ---- journal and transactions (journal.c) ------------------------------- */

/*
 * A handle brackets one metadata operation: every buffer it changes is
 * dirtied in the running transaction, which commits as a whole.
 * @credits bounds the buffers the operation may dirty; start waits while
 * the running transaction cannot take that many more.
 */
struct mqfs_handle {
	struct mqfs_fs *fs;
	uint64_t seq;			/* transaction joined */
	unsigned credits;
	bool sync;			/* commit at stop (O_SYNC, dirsync) */
};

int mqfs_journal_create(struct mqfs_fs *fs);
/* Commit what is running, stop the commit thread, free. */
int mqfs_journal_destroy(struct mqfs_fs *fs);
/* Apply the transaction at journal_start if its commit is valid. */
int mqfs_journal_replay(struct mqfs_fs *fs, bool *replayed);
/* Invalidate the journal after the final checkpoint (clean unmount). */
int mqfs_journal_clear(struct mqfs_fs *fs);

int mqfs_trans_start(struct mqfs_fs *fs, unsigned credits,
		     struct mqfs_handle *h);
/* Set (or, with NULL, clear and wait out) fs->pre_commit. */
void mqfs_journal_set_pre_commit(struct mqfs_fs *fs,
				 int (*fn)(struct mqfs_fs *fs, bool wait));
/* As mqfs_trans_start, but -EAGAIN instead of waiting for room. */
int mqfs_trans_try_start(struct mqfs_fs *fs, unsigned credits,
			 struct mqfs_handle *h);
/*
 * @credits more for @h, in the same transaction, if the journal has
 * room now (jbd2_journal_extend): 0 or -EAGAIN.  For a need found only
 * under locks a commit may wait on (the first allocation in an AG).
 */
int mqfs_trans_extend(struct mqfs_handle *h, unsigned credits);
/* The caller changed @b (holding its lock): make it part of h's txn. */
void mqfs_trans_dirty(struct mqfs_handle *h, struct mqfs_buf *b);
/*
 * Handle credits of the small changes: the buffers each may dirty.
 * Larger operations count theirs (mqfs_file_credits, nm_credits, ...).
 */
#define MQFS_CREDITS_INODE	1u	/* mqfs_inode_dirty: a table block */
#define MQFS_CREDITS_SUPER	1u	/* the superblock */
#define MQFS_CREDITS_ORPHAN	2u	/* mqfs_orphan_add or _del */

/* Stop @h; @err if it is one, else the stop's result. */
int mqfs_trans_finish(struct mqfs_handle *h, int err);
/* Start a handle of @credits, make one @change to @ip in it, finish it. */
int mqfs_trans_one(struct mqfs_fs *fs, unsigned credits,
		   int (*change)(struct mqfs_handle *h, struct mqfs_ino *ip),
		   struct mqfs_ino *ip);
/* End the handle; with h->sync, wait for its commit.  0 or -errno. */
int mqfs_trans_stop(struct mqfs_handle *h);
/*
 * Commit the running transaction (if it has anything) and wait until
 * it is durable (journal written and flushed).  For fsync and sync.
 */
int mqfs_journal_commit(struct mqfs_fs *fs);
/*
 * As mqfs_journal_commit, then wait until every durable transaction is
 * checkpointed: blocks freed in a transaction are allocatable only then
 * (mqfs_alloc_txn_committed runs after the checkpoint).  For an
 * allocator retrying after -ENOSPC, and for unmount.
 */
int mqfs_journal_sync(struct mqfs_fs *fs);
/* Sequence of the last durable transaction. */
uint64_t mqfs_journal_durable_seq(struct mqfs_fs *fs);
/* Wait until transaction @seq is durable (committing it if needed). */
int mqfs_journal_wait_seq(struct mqfs_fs *fs, uint64_t seq);
/* Transactions committed and blocks journaled since create. */
void mqfs_journal_stats(struct mqfs_fs *fs, uint64_t *commits,
			uint64_t *blocks);

/*
 * ---- allocation groups (alloc.c, alloc_ag.c) -----------------------------
 * Credits: each alloc/free/ialloc/ifree call dirties at most 2 buffers
 * (one AG header and one bitmap: a run never crosses an AG).  The first
 * allocation in an uninitialised AG extends the handle by what it
 * writes besides (mqfs_trans_extend).
 */

/* Read the AG headers (of initialised AGs) and counts. */
int mqfs_alloc_load(struct mqfs_fs *fs);
void mqfs_alloc_unload(struct mqfs_fs *fs);
/*
 * Allocate up to @want contiguous blocks near @goal (0: anywhere);
 * *got >= 1 on success, -ENOSPC when nothing is free.  Blocks freed in
 * a transaction that has not committed are never handed out.
 */
int mqfs_alloc_blocks(struct mqfs_handle *h, uint64_t goal, uint32_t want,
		      uint64_t *start, uint32_t *got);
/* Free a run (journaled); reusable once h's transaction commits. */
int mqfs_free_blocks(struct mqfs_handle *h, uint64_t start, uint32_t count);
/* Transaction @seq is checkpointed: its freed blocks are free at last
 * (fs->checkpointed, set at mount). */
void mqfs_alloc_txn_committed(struct mqfs_fs *fs, uint64_t seq);
/*
 * After @err: true when it was -ENOSPC, the first time (per @retried),
 * and the waits for what may free space succeeded (the forgets on their
 * way, the checkpoint of busy blocks: alloc.c): the caller tries again,
 * with no lock held that a commit or a forget needs.  Data writes,
 * creates, links, renames and xattrs.
 */
bool mqfs_retry_enospc(struct mqfs_fs *fs, int err, bool *retried);
/* Allocate an inode number in @parent's AG (directories spread out). */
int mqfs_ialloc(struct mqfs_handle *h, uint64_t parent, bool is_dir,
		uint64_t *ino);
int mqfs_ifree(struct mqfs_handle *h, uint64_t ino, bool was_dir);
/* Has AG @ag never been written (INCOMPAT_LAZY_AGS)?  Then it has no
 * inode in use and its inode table is not to be read. */
bool mqfs_ag_uninit(struct mqfs_fs *fs, uint32_t ag);
/* Is @blk / @ino marked in use?  (fsck, tests) */
int mqfs_block_in_use(struct mqfs_fs *fs, uint64_t blk, bool *used);

/* ---- in-core inodes (inode.c) ------------------------------------------- */

/*
 * An inode's dontcache write-behind, under the mount's write-behind lock
 * (wback.c).  Zeroed memory is the idle state.
 */
struct mqfs_wb_ino {
	struct mq_rb_root entries;	/* pending writes by offset, disjoint */
	struct mq_list_head qlink;	/* on the flusher's queue */
	unsigned nentries, ndirty;	/* all / not yet submitted */
	bool queued;			/* on the flusher's queue */
	bool pinned;			/* holds a reference (entries exist) */
	int error;			/* first lost write, for fsync/close */
	_Atomic uint64_t size;		/* the size pending writes give */
	uint64_t queued_ns;		/* when it joined the queue (real) */
};

/*
 * An inode in memory.  @lock is the i_rwsem: shared for reads and for
 * I/O to mapped blocks, exclusive for anything that changes the mapping,
 * the size or a directory's entries.  @d is the on-disk record; change
 * it with @lock held exclusively (or @meta_lock for times-only updates)
 * and write it with mqfs_inode_dirty().
 */
struct mqfs_ino {
	uint64_t ino;
	pthread_rwlock_t lock;
	pthread_mutex_t meta_lock;	/* @d fields changed under a shared lock */
	struct mqfs_inode d;
	/* Reference counts, under the icache lock. */
	unsigned refcount;		/* in-core users (calls in progress) */
	uint64_t nlookup;		/* FUSE lookups not yet forgotten */
	unsigned open_count;
	bool deleted;			/* freed: must not be written again */
	/* An O_TMPFILE never linked: the one inode without links that
	 * mqfs_link names (the kernel's I_LINKABLE); under @lock. */
	bool linkable;
	/* Data I/O in flight without the lock (mqfs_ino_dio_*). */
	struct mq_inflight dio;
	/* Times changed in memory only: on the icache's lazy list (inode.c,
	 * IC_LAZY_*), written by the next commit. */
	atomic_uint lazy;
	struct mq_list_head lazy_link;
	struct mqfs_dir_index *dir_index;	/* dir.c's cache, or NULL */
	struct mqfs_wb_ino wb;			/* wback.c's */
	/* Threads sleeping in mqfs_file_lock: the flusher yields to them. */
	atomic_uint lock_waiters;
	/* Bumped by every data change: read-ahead windows go stale. */
	atomic_uint_fast64_t data_gen;
	/* The user.mqfs.cache policy + 1; 0 until xattr.c has read it. */
	_Atomic uint8_t policy;
	/* The user.mqfs.ioprio value + 1 (1: none); 0 until read. */
	_Atomic uint16_t ioprio;
	/* security.capability: XA_CAPS_* (xattr.c); 0 until it looked. */
	_Atomic uint8_t caps;
	/* A write the front end's page cache lost, for its next writer
	 * (attr.c, mqfs_file_take_cache_error): -errno or 0. */
	atomic_int cache_err;
	struct mqfs_ino *hash_next;
};

/*
 * Lookup counts of inodes the kernel holds and the inode cache evicted
 * (lookups.c); the caller serialises (the icache lock).
 */
struct mqfs_lookup_slot {
	uint64_t ino;			/* 0: empty */
	uint32_t nlookup;		/* more: the inode stays in core */
} __attribute__((packed, aligned(4)));
struct mqfs_lookups {
	struct mqfs_lookup_slot *slot;
	size_t nslots, count;			/* nslots a power of two */
};
/* Add @nlookup to @ino's count; 0, or -ENOMEM or -EOVERFLOW (past
 * 2^32 - 1: keep the inode in core), nothing changed. */
int mqfs_lookups_add(struct mqfs_lookups *t, uint64_t ino, uint64_t nlookup);
/* Remove @ino and return its count (0: not there). */
uint64_t mqfs_lookups_take(struct mqfs_lookups *t, uint64_t ino);
/* Forget @nlookup of @ino's (*had: what it had); false if not there. */
bool mqfs_lookups_forget(struct mqfs_lookups *t, uint64_t ino,
			 uint64_t nlookup, uint64_t *had);
void mqfs_lookups_free(struct mqfs_lookups *t);

int mqfs_icache_create(struct mqfs_fs *fs);
/* Inodes cached, and evicted ones whose lookups alone are kept. */
void mqfs_icache_counts(struct mqfs_fs *fs, size_t *cached, size_t *held);
void mqfs_icache_destroy(struct mqfs_fs *fs);
/* Get the in-core inode (reading it if needed); -ENOENT if free. */
int mqfs_iget(struct mqfs_fs *fs, uint64_t ino, struct mqfs_ino **out);
/*
 * Drop a reference.  When nothing refers to an unlinked inode any more
 * (refcount, nlookup and open_count all 0 and nlink 0) its blocks and
 * number are freed and it leaves the orphan list.  Since it may delete
 * (with handles of its own), call it with no handle open and no lock
 * held on that inode.
 */
void mqfs_iput(struct mqfs_fs *fs, struct mqfs_ino *ip);
/* Set up a newly allocated inode number as an in-core inode (ref 1). */
int mqfs_inew(struct mqfs_handle *h, uint64_t ino, mode_t mode, uid_t uid,
	      gid_t gid, struct mqfs_ino **out);
void mqfs_inode_stat(struct mqfs_fs *fs, struct mqfs_ino *ip,
		     struct stat *st);
/* Take another reference on an inode the caller holds one on. */
void mqfs_igrab(struct mqfs_fs *fs, struct mqfs_ino *ip);
/* Lookup count and open count changes, for the front-end calls. */
void mqfs_ino_lookup_inc(struct mqfs_fs *fs, struct mqfs_ino *ip);
void mqfs_ino_open_inc(struct mqfs_fs *fs, struct mqfs_ino *ip);
void mqfs_ino_open_dec(struct mqfs_fs *fs, struct mqfs_ino *ip);
/* Does an open file keep @ip (open_count, under the cache lock)? */
bool mqfs_ino_is_open(struct mqfs_fs *fs, struct mqfs_ino *ip);
void mqfs_ino_dio_start(struct mqfs_ino *ip);
void mqfs_ino_dio_end(struct mqfs_ino *ip);
/* Wait for unlocked I/O to drain (caller holds ip->lock exclusively). */
void mqfs_ino_dio_wait(struct mqfs_fs *fs, struct mqfs_ino *ip);
/* Take two inode locks exclusively in inode-number order (a may == b). */
void mqfs_ino_lock2(struct mqfs_ino *a, struct mqfs_ino *b);
void mqfs_ino_unlock2(struct mqfs_ino *a, struct mqfs_ino *b);
void mqfs_touch(struct mqfs_ino *ip, bool atime, bool mtime, bool ctime);
/*
 * An overwrite's mtime/ctime: set in memory at once (stat sees them) and
 * queued for the next commit, which writes the record (fsync and sync
 * commit; eviction and unmount write it too).  No handle per write.
 */
void mqfs_ino_touch_lazy(struct mqfs_fs *fs, struct mqfs_ino *ip);
/* The same for times already set in memory (under meta_lock). */
void mqfs_ino_queue_lazy(struct mqfs_fs *fs, struct mqfs_ino *ip);
/*
 * @ip was read (data, or a directory listed): its atime as the mount's
 * atime mode says (atime.c), kept in memory and queued as above.
 */
void mqfs_ino_accessed(struct mqfs_fs *fs, struct mqfs_ino *ip);
/* Whether an access at @sec.@nsec moves atime under @mode (meta_lock). */
bool mqfs_atime_due(enum mqfs_atime_mode mode, const struct mqfs_inode *d,
		    uint64_t sec, uint32_t nsec);
/*
 * Write the records of the queued inodes into the running transaction
 * (fs->pre_commit).  With @wait false it never waits for journal room:
 * the commit thread calls it, and room comes only from its commit.
 */
int mqfs_ino_write_lazy(struct mqfs_fs *fs, bool wait);
/* Write ip->d in a handle of its own. */
int mqfs_inode_write(struct mqfs_fs *fs, struct mqfs_ino *ip);

/* ---- inode records in the inode tables (itable.c) ------------------------ */

/*
 * Why the live inode record @d cannot be used (type, flags, inline data,
 * symlink length), or NULL; mqfs_iget refuses it, fsck clears it.  A
 * size past MQFS_MAX_FILE_BYTES is refused too; fsck caps it there.
 */
const char *mqfs_inode_why_bad(const struct mqfs_inode *d);
bool mqfs_inode_size_ok(const struct mqfs_inode *d);
/* Write ip->d into its inode table block within @h. */
int mqfs_inode_dirty(struct mqfs_handle *h, struct mqfs_ino *ip);

/* ---- unlinked inodes: deletion, the orphan list (orphan.c) --------------- */

/* Orphan list (superblock head, inode orphan_next chain). */
int mqfs_orphan_add(struct mqfs_handle *h, struct mqfs_ino *ip);
int mqfs_orphan_del(struct mqfs_handle *h, struct mqfs_ino *ip);
/* At mount: free every inode on the orphan list. */
int mqfs_orphan_recover(struct mqfs_fs *fs);

/* ---- extent map (extent.c) ---------------------------------------------- */

/* What logical block @lblk maps to: a run of @len blocks. */
struct mqfs_map {
	uint64_t lblk;
	uint64_t pblk;			/* 0: hole */
	uint32_t len;			/* run length (hole: up to next extent) */
	bool unwritten;
};

/* Caller holds ip->lock (either mode).  @max bounds m->len. */
int mqfs_extent_map(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t lblk,
		    uint32_t max, struct mqfs_map *m);
/* Map [lblk, lblk+len) to @pblk; the range must be a hole.  Exclusive. */
int mqfs_extent_insert(struct mqfs_handle *h, struct mqfs_ino *ip,
		       uint64_t lblk, uint64_t pblk, uint32_t len,
		       uint32_t flags);
/* Unmap [lblk, lblk+len) and free its blocks (and emptied tree blocks). */
int mqfs_extent_remove(struct mqfs_handle *h, struct mqfs_ino *ip,
		       uint64_t lblk, uint64_t len);
/* Clear MQFS_EXT_UNWRITTEN on [lblk, lblk+len) (splitting extents). */
int mqfs_extent_mark_written(struct mqfs_handle *h, struct mqfs_ino *ip,
			     uint64_t lblk, uint32_t len);
/*
 * Visit every extent in order (and every tree block with @ext NULL);
 * stop when @fn returns nonzero and return it.  The tests' view of a
 * file's map (test_extent, test_file).
 */
typedef int (*mqfs_extent_fn)(void *ctx, const struct mqfs_extent *ext,
			      uint64_t tree_blk);
int mqfs_extent_walk(struct mqfs_fs *fs, struct mqfs_ino *ip,
		     mqfs_extent_fn fn, void *ctx);
/* Worst-case buffers one insert/remove dirties (handle credits). */
unsigned mqfs_extent_credits(struct mqfs_fs *fs);

/* ---- directories (dir.c) ----------------------------------------------- */

/* Caller holds dir->lock shared (lookup/iterate) or exclusive (changes). */
int mqfs_dir_lookup(struct mqfs_fs *fs, struct mqfs_ino *dir,
		    const char *name, size_t len, uint64_t *ino,
		    unsigned *type);
int mqfs_dir_add(struct mqfs_handle *h, struct mqfs_ino *dir,
		 const char *name, size_t len, uint64_t ino, unsigned type);
int mqfs_dir_remove(struct mqfs_handle *h, struct mqfs_ino *dir,
		    const char *name, size_t len);
/* Point an existing entry at another inode (rename over, exchange). */
int mqfs_dir_replace(struct mqfs_handle *h, struct mqfs_ino *dir,
		     const char *name, size_t len, uint64_t ino,
		     unsigned type);
/* 1 when empty, 0 when not, -errno. */
int mqfs_dir_is_empty(struct mqfs_fs *fs, struct mqfs_ino *dir);
/*
 * Visit entries from cookie @pos (byte position in the directory; ".."
 * and "." are the caller's).  @fn returns nonzero to stop; the entry it
 * stopped on is offered again from the cookie it was given.
 */
typedef int (*mqfs_dir_fn)(void *ctx, const char *name, size_t len,
			   uint64_t ino, unsigned type, uint64_t next_pos);
int mqfs_dir_iterate(struct mqfs_fs *fs, struct mqfs_ino *dir, uint64_t pos,
		     mqfs_dir_fn fn, void *ctx);
void mqfs_dir_index_free(struct mqfs_ino *dir);
unsigned mqfs_dir_credits(struct mqfs_fs *fs);
/*
 * Why live entry @de (sound record bounds) must not be served, or NULL:
 * a name with '/' or NUL, "." or "..", an inode number outside the
 * table, the root.  The daemon skips and reports it; fsck removes it.
 */
const char *mqfs_dirent_why_bad(const struct mqfs_dirent *de,
				uint64_t inode_count);

/* ---- extended attributes (xattr.c, stored by xattr_chain.c) ------------- */
/*
 * Implement the public mqfs_*xattr calls.  Freeing on inode delete: every
 * block but the chain's head, a handle each (trim), then the head in the
 * handle that clears the record (drop).
 */
int mqfs_xattr_trim(struct mqfs_fs *fs, struct mqfs_ino *ip);
int mqfs_xattr_drop(struct mqfs_handle *h, struct mqfs_ino *ip);
/*
 * File capabilities (security.capability), which a write or truncate by
 * a caller without CAP_FSETID and any chown drop, as the VFS does (the
 * front end asks FUSE_HANDLE_KILLPRIV_V2).  The answer is cached in the
 * inode; caller holds ip->lock (either mode).
 */
bool mqfs_xattr_has_caps(struct mqfs_fs *fs, struct mqfs_ino *ip);
/*
 * True when the cached answer is "none" (no lock needed): a check before
 * the lock, as the kernel's IS_NOSEC, which a later setxattr may change
 * as it may after the locked check.
 */
bool mqfs_xattr_no_caps_cached(struct mqfs_ino *ip);
/* Remove them (ip->lock held exclusively; a handle of its own). */
int mqfs_xattr_kill_caps(struct mqfs_fs *fs, struct mqfs_ino *ip);
/* The cache policy (MQFS_CACHE_XATTR) of @ip; caller holds ip->lock. */
enum mqfs_cache_mode mqfs_xattr_policy(struct mqfs_fs *fs,
				       struct mqfs_ino *ip);
/* The I/O priority policy of @ip, 0 for none; caller holds ip->lock. */
int mqfs_xattr_ioprio(struct mqfs_fs *fs, struct mqfs_ino *ip);
/*
 * A new file or directory @ip in @dir inherits @dir's policies, in the
 * creating handle (MQFS_XATTR_INHERIT_CREDITS more); both locked.
 */
#define MQFS_XATTR_INHERIT_CREDITS	5u
int mqfs_xattr_inherit(struct mqfs_handle *h, struct mqfs_ino *dir,
		       struct mqfs_ino *ip);
/* Why the (sealed) xattr block @data is unusable, or NULL; fsck too. */
const char *mqfs_xattr_why_bad(const void *data);
/* In a valid block's bytes (fsck): @name's whole value, or -ENODATA. */
int mqfs_xattr_lookup(void *data, const char *name, const void **value,
		      size_t *size);
/* Remove the entry at @off; the entries left. */
unsigned mqfs_xattr_cut(void *data, unsigned off);
/* A chain block's next block (0: none); make @data a link to @next. */
uint64_t mqfs_xattr_next(const void *data);
void mqfs_xattr_set_next(void *data, uint64_t next);
/* Entries a value of @size under a name of @len bytes is stored in. */
unsigned mqfs_xattr_frags(size_t len, size_t size);
/*
 * In the (valid) blocks of a chain, in order: remove every fragment of
 * each value whose fragments are not whole (@changed[i] set for a block
 * changed), naming it to @report; the values removed.
 */
typedef void (*mqfs_xattr_report_fn)(void *arg, const char *name);
unsigned mqfs_xattr_fix_frags(void *const *blocks, unsigned n, bool *changed,
			      mqfs_xattr_report_fn report, void *arg);
/* Credits of storing @size bytes under that name, @old (or -errno) before. */
unsigned mqfs_xattr_credits(size_t len, size_t size, ssize_t old);
/*
 * One attribute of @ip by its full @name (@len bytes), ip->lock held
 * (exclusively to change it): for the ACLs of acl_fs.c.
 */
ssize_t mqfs_xattr_get_locked(struct mqfs_fs *fs, struct mqfs_ino *ip,
			      const char *name, size_t len, void *value,
			      size_t size);
int mqfs_xattr_set_locked(struct mqfs_handle *h, struct mqfs_ino *ip,
			  const char *name, size_t len, const void *value,
			  size_t size, int flags);
int mqfs_xattr_remove_locked(struct mqfs_handle *h, struct mqfs_ino *ip,
			     const char *name, size_t len);
/* The names, each NUL-terminated; @size 0 measures (listxattr). */
ssize_t mqfs_xattr_list_locked(struct mqfs_fs *fs, struct mqfs_ino *ip,
			       char *list, size_t size);

/* ---- POSIX ACLs (acl_fs.c; the values: acl.c, acl_i.h) ------------------- */
/* @name is an ACL this mount refuses (noacl): EOPNOTSUPP, else 0. */
int mqfs_acl_refused(struct mqfs_fs *fs, const char *name);
/* The same for a name of @len bytes: listxattr leaves it out, as ext4. */
bool mqfs_acl_hidden(struct mqfs_fs *fs, const char *name, size_t len);
/* Before a set: refused, or a value that is not a valid ACL (EINVAL). */
int mqfs_acl_check(struct mqfs_fs *fs, int type, const void *value,
		   size_t size);
/*
 * Set ACL @type on @ip (locked exclusively) in @h: an access ACL sets
 * the mode's permission bits and is stored only when it says more than
 * the mode (else removed); MQFS_XATTR_ACL_KILL_SGID in @flags drops
 * S_ISGID.  A default ACL only on a directory (EACCES), none on a
 * symlink (EOPNOTSUPP).
 */
int mqfs_acl_set_locked(struct mqfs_handle *h, struct mqfs_ino *ip, int type,
			const void *value, size_t size, int flags);
/* chmod: a stored access ACL takes the new mode's bits (one block). */
#define MQFS_ACL_CHMOD_CREDITS		1u
int mqfs_acl_chmod_locked(struct mqfs_handle *h, struct mqfs_ino *ip);
/*
 * A new inode @ip in @dir: @dir's default ACL, or else @umask, decides
 * its mode; inherited ACLs are set in the creating handle (within
 * MQFS_XATTR_INHERIT_CREDITS, the same block).  Both locked.
 */
int mqfs_acl_inherit(struct mqfs_handle *h, struct mqfs_ino *dir,
		     struct mqfs_ino *ip, mode_t umask);

/* ---- file data (file.c) ------------------------------------------------- */

/*
 * One read-ahead window: [off, off+len) of the file at @data, inside
 * @buf.  While it is READING, @io carries its device read (the window
 * is the request: nothing is allocated per read ahead).
 */
struct mqfs_ra_win {
	int state;
	void *buf;
	size_t cap;			/* @buf's size (databuf.c) */
	const char *data;		/* @buf + off % 4096 */
	uint64_t off;
	size_t len;
	bool eof;			/* the file ends inside it */
	uint64_t gen;			/* ip->data_gen when it was read */
	struct mqfs_fs *fs;
	struct mqfs_ra *ra;
	struct mqfs_io io;
};

/* An open file's read-ahead (readahead.c), under @lock. */
/* How read-ahead reads a window: file.c's device read, handed in at open
 * (readahead.c calls no module that calls it). */
typedef void (*mqfs_ra_read_t)(struct mqfs_fs *fs, struct mqfs_file *f,
			       uint64_t off, size_t size, void *buf,
			       struct mqfs_io *io, mqfs_read_done_t done,
			       void *arg);

struct mqfs_ra {
	mqfs_ra_read_t read;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a window's read came back */
	uint64_t next;			/* where a sequential read goes on */
	unsigned streak;		/* sequential reads in a row */
	struct mqfs_ra_win win[2];	/* the one being read from, the next */
};

struct mqfs_file {
	struct mqfs_ino *ip;
	struct mq_list_head open_node;	/* on fs->open_files */
	int flags;			/* open(2) flags */
	bool dontcache;			/* write-behind and read-ahead */
	uint8_t prio;			/* its policy's class, from open */
	struct mqfs_ra ra;
	/*
	 * Reads of this file still running.  An interrupted read is
	 * answered before its device I/O ends, so the close may come
	 * first: mqfs_release waits for them (under the lock, so the
	 * last one is done with the file before it is freed).
	 */
	pthread_mutex_t reads_lock;
	pthread_cond_t reads_cond;
	unsigned reads;
};

/* Release every file still open (unmount: attr.c). */
void mqfs_release_all(struct mqfs_fs *fs);
void mqfs_file_reads_init(struct mqfs_file *f);
/* Until no read of @f runs; then the counter is gone. */
void mqfs_file_reads_drain(struct mqfs_fs *fs, struct mqfs_file *f);

/*
 * Largest file: 64 TiB (2^34 blocks).  Writes, truncates and fallocate
 * beyond it get -EFBIG; no extent may reach past it (fsck checks).
 */
#define MQFS_MAX_FILE_BYTES	(1ull << 46)
/* The longest symlink target: one block, NUL-free. */
#define MQFS_SYMLINK_MAX	(MQFS_BLOCK_SIZE - 1)
#define MQFS_MAX_FILE_BLOCKS	(MQFS_MAX_FILE_BYTES >> MQFS_BLOCK_SHIFT)

/* mqfs_read without the read-ahead window: from the device. */
void mqfs_file_read_device(struct mqfs_fs *fs, struct mqfs_file *f,
			   uint64_t off, size_t size, void *buf,
			   struct mqfs_io *io, mqfs_read_done_t done,
			   void *arg);
/* The data of @ip changes (before the change and before its answer). */
static inline void mqfs_ino_data_changed(struct mqfs_ino *ip)
{
	atomic_fetch_add(&ip->data_gen, 1);
}

/* ---- a file's space (fspace.c) ------------------------------------------- */

/* Change the size: free blocks past it, zero the tail of the last one. */
int mqfs_file_truncate(struct mqfs_fs *fs, struct mqfs_ino *ip,
		       uint64_t size);
/* Free every block of an inode being deleted (its own handles). */
int mqfs_file_free_all(struct mqfs_fs *fs, struct mqfs_ino *ip);

/* ---- what the two data writers share (fmap.c) -------------------------- */

/*
 * Take ip->lock; a thread that must sleep for it flushes its plug first
 * (the holder may wait for bios in that plug).
 */
void mqfs_file_lock(struct mqfs_ino *ip, bool excl);
/* Extent changes one data handle may make, and that handle's credits. */
unsigned mqfs_file_ops_per_handle(struct mqfs_fs *fs);
unsigned mqfs_file_credits(struct mqfs_fs *fs, unsigned ops);
/* Allocation goal for @lblk: after the block before it (lock held). */
uint64_t mqfs_file_goal(struct mqfs_fs *fs, struct mqfs_ino *ip,
			uint64_t lblk);

/* ---- read-ahead of dontcache files (readahead.c) ------------------------ */

void mqfs_ra_init(struct mqfs_ra *ra, mqfs_ra_read_t read);
/* Wait for the windows' reads, free them (close). */
void mqfs_ra_release(struct mqfs_fs *fs, struct mqfs_ra *ra);
/* Answer a read from @f's window (true), or leave it (false). */
bool mqfs_ra_serve(struct mqfs_fs *fs, struct mqfs_file *f, uint64_t off,
		   size_t size, mqfs_read_done_t done, void *arg);
/*
 * A read goes to the device: note it, and when reads follow on claim a
 * window to read ahead (NULL: none).  Call it before the read is sent:
 * the reply may let the front end release @f, and release waits for a
 * claimed window, which keeps @f alive for mqfs_ra_start.
 */
struct mqfs_ra_win *mqfs_ra_note(struct mqfs_fs *fs, struct mqfs_file *f,
				 uint64_t off, size_t size);
/* Start reading a claimed window (NULL: nothing). */
void mqfs_ra_start(struct mqfs_fs *fs, struct mqfs_file *f,
		   struct mqfs_ra_win *w);

/*
 * ---- dontcache write-behind (wback.c) ------------------------------------
 * A write to a dontcache file is copied into a bounded buffer and
 * answered; a flusher writes the buffers back in plugged batches under
 * the inode's exclusive lock and drops each one in the completion worker.
 * Anything that must see the data on the device first (reads of it,
 * other writes, truncate, fallocate, fsync) writes back the inode's
 * pending data with mqfs_wback_sync().
 */
int mqfs_wback_create(struct mqfs_fs *fs, uint64_t limit_bytes);
/* Write everything back, stop the flusher, free the buffers. */
void mqfs_wback_destroy(struct mqfs_fs *fs);
/*
 * Take a write: answer it through @done (before this returns; @data is
 * read until then) and return true; or return false, having done
 * nothing, when it must go the direct way (unaligned, too large, space
 * short; O_SYNC/O_DSYNC is the caller's test).  @writeback: the kernel's
 * write-back of its page cache, which may end the file mid-block (taken,
 * zero-padded) and whose mtime and ctime the kernel keeps.
 */
bool mqfs_wback_write(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t off,
		      const void *data, size_t size, bool writeback,
		      mqfs_write_done_t done, void *arg);
/*
 * Blocks promised to accepted writes not yet written back (statfs counts
 * them as used, as ext4 does its delayed allocations).
 */
uint64_t mqfs_wback_promised_blocks(struct mqfs_fs *fs);
/* Pending write-behind on @ip (a hint, no lock). */
bool mqfs_wback_pending(struct mqfs_ino *ip);
/* A read of [off, off+len) needs the pending data written first
 * (caller holds ip->lock). */
bool mqfs_wback_conflict(struct mqfs_fs *fs, struct mqfs_ino *ip,
			 uint64_t off, uint64_t len);
/*
 * Write back @ip's pending data and wait (no lock on @ip held); errors
 * stay recorded for mqfs_wback_take_error.
 */
void mqfs_wback_sync(struct mqfs_fs *fs, struct mqfs_ino *ip);
/* The same with ip->lock held exclusively (truncate, fallocate). */
void mqfs_wback_sync_locked(struct mqfs_fs *fs, struct mqfs_ino *ip);
/* Write back everything pending on the mount and wait (sync). */
void mqfs_wback_sync_all(struct mqfs_fs *fs);
/* The first write-behind error of @ip since the last call (cleared). */
int mqfs_wback_take_error(struct mqfs_fs *fs, struct mqfs_ino *ip);

/* ---- the geometry (layout.c) -------------------------------------------- */

/* Geometry mkfs derives from a size; shared with fsck's sanity checks. */
struct mqfs_layout {
	uint64_t block_count;
	uint32_t ag_count, ag_blocks, inodes_per_ag, itable_blocks;
	uint64_t journal_start;
	uint32_t journal_blocks;
	uint32_t aginit_blocks;		/* the AG-init map; 0: no lazy AGs */
	uint32_t ag_tag;		/* AG headers' fs_tag (aginit.c) */
};
int mqfs_layout_compute(uint64_t block_count, const struct mqfs_mkfs_opts *o,
			struct mqfs_layout *l);
/*
 * Is @sb's geometry what mkfs computes for its size and the options it
 * records?  A sealed superblock whose numbers agree with each other but
 * not with mkfs's sends the mount and fsck to the wrong blocks, and
 * fsck -y would wreck a sound filesystem "repairing" them (found by
 * tests/fuzz).  The mount and fsck both refuse such a block 0.
 */
bool mqfs_super_layout_ok(const struct mqfs_super *sb);
/* The geometry @sb records (checked or not). */
void mqfs_super_layout(const struct mqfs_super *sb, struct mqfs_layout *l);
/* Blocks in AG @ag (the last may be short), and those its metadata
 * (and in AG 0 the superblock and the journal) take before any data. */
uint32_t mqfs_layout_ag_size(const struct mqfs_layout *l, uint32_t ag);
uint64_t mqfs_layout_ag_overhead(const struct mqfs_layout *l, uint32_t ag);
/* First block of AG @ag's own metadata (AG header): after the journal
 * in AG 0, the AG's first block elsewhere. */
static inline uint64_t mqfs_ag_meta_start(const struct mqfs_layout *l,
					  uint32_t ag)
{
	return ag == 0 ? 1 + (uint64_t)l->journal_blocks
		       : (uint64_t)ag * l->ag_blocks;
}

/* The same for a mounted filesystem. */
static inline uint64_t mqfs_fs_ag_meta(const struct mqfs_fs *fs, uint32_t ag)
{
	return ag == 0 ? 1 + (uint64_t)fs->journal_blocks
		       : (uint64_t)ag * fs->ag_blocks;
}

/* Blocks of AG @ag's own metadata from mqfs_ag_meta_start: header,
 * bitmaps, inode table and, in AG 0, the AG-init map after them. */
static inline uint64_t mqfs_ag_meta_len(const struct mqfs_layout *l,
					uint32_t ag)
{
	return 3 + (uint64_t)l->itable_blocks + (ag ? 0 : l->aginit_blocks);
}

/* First block of the AG-init map (INCOMPAT_LAZY_AGS). */
static inline uint64_t mqfs_aginit_start(const struct mqfs_layout *l)
{
	return mqfs_ag_meta_start(l, 0) + 3 + l->itable_blocks;
}

/* A mounted filesystem's geometry: its superblock's as mounted. */
static inline void mqfs_fs_layout(const struct mqfs_fs *fs,
				  struct mqfs_layout *l)
{
	mqfs_super_layout(fs->sb0, l);
}

/* ---- an AG as it is born, and the AG-init map (aginit.c) ---------------- */

/*
 * The blocks of AG @ag as mkfs writes them and lazy initialisation
 * makes them (payload and fields; the caller seals): the block bitmap
 * with every non-data block set (returns the free blocks), the inode
 * bitmap with the bits past inodes_per_ag set, the header with these
 * counts.  mqfs_ag_fresh_free_blocks counts without a bitmap.
 */
uint32_t mqfs_ag_fresh_bbitmap(const struct mqfs_layout *l, uint32_t ag,
			       void *blk);
void mqfs_ag_fresh_ibitmap(const struct mqfs_layout *l, void *blk);
void mqfs_ag_fresh_header(const struct mqfs_layout *l, uint32_t ag,
			  uint32_t free_blocks, void *blk);
uint32_t mqfs_ag_fresh_free_blocks(const struct mqfs_layout *l, uint32_t ag);
/* The fs_tag of the AG headers of a filesystem of @uuid, with or
 * without lazy AGs (then 0). */
uint32_t mqfs_ag_tag(const uint8_t uuid[16], bool lazy);
static inline uint32_t mqfs_sb_ag_tag(const struct mqfs_super *sb)
{
	return mqfs_ag_tag(sb->uuid, sb->feature_incompat &
				     MQFS_FEATURE_INCOMPAT_LAZY_AGS);
}
/* AG @ag's bit in the AG-init map block that holds it (@map: the
 * block); mqfs_aginit_block: which block of the map that is. */
bool mqfs_aginit_test(const void *map, uint32_t ag);
void mqfs_aginit_set(void *map, uint32_t ag);
static inline uint32_t mqfs_aginit_block(uint32_t ag)
{
	return ag / MQFS_BITMAP_BITS;
}

static inline struct mqfs_super *mqfs_sb(struct mqfs_fs *fs)
{
	return (struct mqfs_super *)fs->sb_buf->data;
}

#endif /* MQFS_FS_I_H */
