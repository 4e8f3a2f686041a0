/* SPDX-License-Identifier: MIT */
/*
 * wback_i.h - what the write-behind's two files share (wback.c: taking
 * writes, the inodes' trees, the buffers, waiting, set-up; wback_flush.c:
 * writing batches back and the flusher thread): the entry, the batch,
 * the mount's state, and the calls between them.
 */
#ifndef MQFS_WBACK_I_H
#define MQFS_WBACK_I_H

#include <stdlib.h>

#include "fs_i.h"
#include "mqfs/clock.h"
#include "mqfs/kthread.h"

#define WB_BS			((uint64_t)MQFS_BLOCK_SIZE)
#define WB_MASK			(WB_BS - 1)
#define WB_NR_CLASSES		9u		/* buffers of 4 KiB .. 1 MiB */
#define WB_MAX_WRITE		(WB_BS << (WB_NR_CLASSES - 1))
#define WB_BATCH_ENTRIES	4096u
#define WB_FLUSH_ROUNDS		8u		/* batches per flusher turn */
#define WB_SMALL_ENTRIES	4u		/* an inode flushed in a group */
#define WB_GROUP		32u		/* small inodes per plug */
#define WB_GROUP_SCAN		128u		/* queued inodes looked at */
/* A small backlog waits this long for more (and for its file's setattrs). */
#define WB_DELAY_NS		(10ull * 1000 * 1000)
#define WB_DEFAULT_LIMIT	(64ull << 20)
#define WB_BIO_FLAGS		(MQ_REQ_COMPLETE_IN_TASK | MQ_REQ_DONTCACHE)
/* Blocks kept out of reach of write-behind for its own metadata. */
#define WB_RESERVE_SLACK	1024u

/*
 * FILLING: in the tree and answered, its data being copied in (a batch
 * waits for it); DIRTY: ready; INFLIGHT: in a batch.
 */
enum wb_state { WB_FILLING, WB_DIRTY, WB_INFLIGHT };

struct wb_batch;

/*
 * One accepted write: block-aligned bytes [off, off+len) in @buf, of
 * which the first @bytes are the write's (an end-of-file tail is padded
 * with zeroes to its block; the file ends at off + bytes).
 */
struct wb_entry {
	struct mq_rb_node node;		/* in ip->wb.entries */
	struct wb_entry *next;		/* in a batch */
	struct mqfs_ino *ip;
	uint64_t off;
	uint32_t len;
	uint32_t bytes;
	uint8_t state;			/* enum wb_state */
	bool convert;			/* has unwritten blocks to mark */
	void *buf;
	struct wb_batch *batch;
	struct mqfs_bioset set;		/* its bios; their error is its */
	struct mq_bio bio1;
};

/* What one flusher pass writes for one inode. */
struct wb_batch {
	struct mqfs_wback *wb;
	struct wb_entry *head;
	unsigned pending;		/* entries not yet dropped (wb lock) */
};

struct mqfs_wback {
	struct mqfs_fs *fs;
	pthread_mutex_t lock;
	pthread_cond_t room;		/* writers: a buffer was dropped */
	pthread_cond_t done;		/* batch owners: an entry finished */
	pthread_cond_t idle;		/* sync_all: an inode was finished */
	pthread_cond_t filled;		/* batches: an entry was filled */
	struct mq_list_head queue;	/* inodes with work for the flusher */
	uint64_t limit;			/* dontcache_dirty */
	struct mqfs_bufpool *pool;	/* the entries' buffers, in @limit */
	uint64_t dirty;			/* bytes of live entries: their
					 * blocks are the space promised */
	unsigned active;		/* batches being written */
	unsigned hurry;			/* waiters for the flusher: no delay */
	struct mq_kthread flusher;	/* kicked under @lock: a leaf */
	struct mqfs_wback_stats st;	/* counters (lock) */
};

static inline struct wb_entry *wb_node_entry(struct mq_rb_node *n)
{
	return n ? mq_rb_entry(n, struct wb_entry, node) : NULL;
}

static inline int wb_entry_error(struct wb_entry *e)
{
	return mqfs_bioset_error(&e->set);
}

static inline void wb_entry_free(struct wb_entry *e)
{
	mqfs_bioset_release(&e->set);
	free(e);
}

/* wback.c */
void mqfs_wb_buf_put_locked(struct mqfs_wback *wb, struct wb_entry *e);
/* Put @ip on the flusher's queue (kicking it when that is needed). */
void mqfs_wb_queue_locked(struct mqfs_wback *wb, struct mqfs_ino *ip);
/* Undo the admission of @e (it leaves): its buffer and promise. */
void mqfs_wb_release_locked(struct mqfs_wback *wb, struct wb_entry *e);

/* wback_flush.c */
/* Completion worker: @s's entry is on the device (or failed). */
void mqfs_wb_entry_done(struct mqfs_bioset *s);
/* Write @ip's dirty entries back (its lock held exclusively), @rounds
 * batches at most (0: all); false when there was nothing. */
bool mqfs_wb_write_back(struct mqfs_fs *fs, struct mqfs_ino *ip,
			unsigned rounds);
void *mqfs_wb_flusher(void *arg);

#endif /* MQFS_WBACK_I_H */
