// SPDX-License-Identifier: MIT
/*
 * wback.c - dontcache write-behind: uncached buffered writes.
 *
 * The kernel refuses RWF_DONTCACHE on FUSE files, so a cache=dontcache
 * file is opened FOPEN_DIRECT_IO (nothing stays in the page cache) and
 * the semantics are built here, after the kernel's: a write is copied
 * into a buffer of ours and answered at once; the flusher writes the
 * buffers back in plugged batches, where adjacent writes merge into large
 * requests; each buffer is dropped by its bio's end_io, which runs in the
 * block layer's completion worker (MQ_REQ_COMPLETE_IN_TASK) with its
 * delayed batching.  The buffers never exceed the mount's bound
 * (dontcache_dirty): a writer that would pass it waits for a drop.
 *
 * A batch runs under the inode's exclusive lock from planning to the
 * last extent update, so truncate, fallocate and readers (who take the
 * lock) never see a half-written batch, and nothing else is needed to
 * order them against it:
 *   1. the inode's not-yet-submitted entries are taken in offset order;
 *   2. holes get blocks, inserted as unwritten extents in short handles
 *      (a crash before step 4 leaves zeroes, never stale blocks);
 *   3. the data goes out in one plug and the flusher waits for it;
 *   4. the unwritten extents become written and the size and times are
 *      journaled - the data is on the device before its mapping commits.
 * No handle is open while data is in flight.
 *
 * Entries stay in the inode's tree until their batch is done.  A reader
 * or another write that overlaps one, and truncate, fallocate, fsync and
 * close, first write the inode's entries back (mqfs_wback_sync); a write
 * of exactly the bytes of an entry not yet submitted replaces its data.
 * A write-back error (EIO, ENOSPC) loses that write's data, as a failed
 * page-cache writeback does, and is reported by the next fsync or close.
 *
 * The bios of an entry carry the I/O priority class of the write that
 * filled it (the flusher's own is NONE): an idle-class writer's
 * write-behind stays idle.
 *
 * Buffers come from a pool of power-of-two classes (4 KiB - 1 MiB,
 * databuf.c) kept within the bound: a drop returns the buffer to its
 * class, so a steady stream allocates nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- the buffers ------------------------------------------------------ */

static void wb_buf_put_locked(struct mqfs_wback *wb, struct wb_entry *e)
{
	mqfs_bufpool_put(wb->pool, e->buf, e->len);
	e->buf = NULL;
	pthread_cond_broadcast(&wb->room);
}

/* ---- the inode's tree of entries --------------------------------------- */

static struct wb_entry *wb_node_entry(struct mq_rb_node *n)
{
	return n ? mq_rb_entry(n, struct wb_entry, node) : NULL;
}

/* The entry overlapping [off, end), if any (entries are disjoint). */
static struct wb_entry *wb_find_locked(struct mqfs_ino *ip, uint64_t off,
				       uint64_t end)
{
	struct mq_rb_node *n = ip->wb.entries.node;
	struct wb_entry *best = NULL;

	while (n) {
		struct wb_entry *e = wb_node_entry(n);

		if (e->off < end) {
			best = e;
			n = n->right;
		} else {
			n = n->left;
		}
	}
	return best && best->off + best->len > off ? best : NULL;
}

static void wb_insert_locked(struct mqfs_ino *ip, struct wb_entry *e)
{
	struct mq_rb_node **link = &ip->wb.entries.node, *parent = NULL;

	while (*link) {
		parent = *link;
		link = e->off < wb_node_entry(parent)->off ? &parent->left :
							     &parent->right;
	}
	mq_rb_link_node(&e->node, parent, link);
	mq_rb_insert_color(&e->node, &ip->wb.entries);
}

/* Hand @ip to the flusher (dirty entries, or a pin to drop). */
/*
 * The flusher is kicked when the queue was empty (it then sleeps until
 * the head is due) or the backlog is a batch's worth; else it is awake
 * or will wake at a deadline already.
 */
static void wb_queue_locked(struct mqfs_wback *wb, struct mqfs_ino *ip)
{
	bool was_empty = mq_list_empty(&wb->queue);

	if (ip->wb.queued)
		return;
	ip->wb.queued = true;
	ip->wb.queued_ns = mq_clock_real_ns();
	mq_list_add_tail(&ip->wb.qlink, &wb->queue);
	if (was_empty || wb->dirty >= wb->limit / 4)
		mq_kthread_kick(&wb->flusher);
}

/* ---- accepting a write ------------------------------------------------- */

static void wb_entry_done(struct mqfs_bioset *s);

static struct wb_entry *wb_entry_new(struct mqfs_ino *ip, uint64_t off,
				     size_t len, size_t bytes)
{
	struct wb_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ip = ip;
	e->off = off;
	e->len = (uint32_t)len;
	e->bytes = (uint32_t)bytes;
	/* The flusher writes it with the priority of the write it holds. */
	mqfs_bioset_init(&e->set, &e->bio1, 1, wb_entry_done);
	e->set.prio_class = (uint8_t)mq_task_prio();
	return e;
}

static int wb_entry_error(struct wb_entry *e)
{
	return mqfs_bioset_error(&e->set);
}

static void wb_entry_free(struct wb_entry *e)
{
	mqfs_bioset_release(&e->set);
	free(e);
}

/* Room for @e: space promised and a buffer; may wait.  0 or -errno. */
static int wb_admit_locked(struct mqfs_wback *wb, struct wb_entry *e)
{
	uint64_t blocks = e->len / WB_BS;
	bool waited = false;
	int err;

	if (atomic_load(&wb->fs->free_blocks) <
	    wb->dirty / WB_BS + blocks + WB_RESERVE_SLACK)
		return -ENOSPC;
	while ((err = mqfs_bufpool_get(wb->pool, e->len,
				       &e->buf)) == -EAGAIN) {
		if (!waited) {
			wb->st.throttled++;
			wb->hurry++;
			mq_kthread_kick(&wb->flusher);
		}
		waited = true;
		pthread_cond_wait(&wb->room, &wb->lock);
	}
	if (waited)
		wb->hurry--;
	if (err)
		return err;
	wb->dirty += e->len;
	return 0;
}

/* Undo wb_admit_locked (the entry leaves). */
static void wb_release_locked(struct mqfs_wback *wb, struct wb_entry *e)
{
	if (e->buf)
		wb_buf_put_locked(wb, e);
	wb->dirty -= e->len;
}

/*
 * Put @e in the tree, FILLING; or, when it rewrites exactly the bytes of
 * an entry not yet submitted, mark that one FILLING instead and let @e
 * go.  The entry to copy the data into, or NULL when @e overlaps an
 * entry it cannot take the place of: the caller writes the inode back
 * and tries again.
 */
static struct wb_entry *wb_enter_locked(struct mqfs_wback *wb,
					struct mqfs_ino *ip,
					struct wb_entry *e)
{
	struct wb_entry *old = wb_find_locked(ip, e->off, e->off + e->len);

	if (old && (old->state != WB_DIRTY || old->off != e->off ||
		    old->len != e->len))
		return NULL;
	if (old) {			/* a rewrite of pending bytes */
		old->state = WB_FILLING;
		old->bytes = e->bytes;
		old->set.prio_class = e->set.prio_class;
		wb_release_locked(wb, e);
		wb_entry_free(e);
		return old;
	}
	if (!ip->wb.nentries && !ip->wb.pinned) {
		mqfs_igrab(wb->fs, ip);	/* until the flusher unpins it */
		ip->wb.pinned = true;
	}
	e->state = WB_FILLING;
	wb_insert_locked(ip, e);
	ip->wb.nentries++;
	ip->wb.ndirty++;
	if (atomic_load(&ip->wb.size) < e->off + e->bytes)
		atomic_store(&ip->wb.size, e->off + e->bytes);
	return e;
}

/* The direct way for this write (@e, if any, was not admitted). */
static bool wb_decline(struct mqfs_wback *wb, struct wb_entry *e)
{
	wb->st.direct_writes++;
	pthread_mutex_unlock(&wb->lock);
	if (e)
		wb_entry_free(e);
	return false;
}

/*
 * The reply goes before the copy: the request's data stays valid until
 * the handler returns, and the entry is already in the tree (FILLING),
 * so a read, fsync or overlapping write that comes meanwhile waits for
 * the copy.  The kernel serialises direct writes to one file, so the
 * next one reaches another daemon thread while this one copies.
 *
 * @tail: the write ends the file (the kernel's write-back of its last
 * page): a partial last block is taken, padded with zeroes.  Only the
 * caller can know that; a write into the middle of a block must not be.
 */
bool mqfs_wback_write(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t off,
		      const void *data, size_t size, bool tail,
		      mqfs_write_done_t done, void *arg)
{
	struct mqfs_wback *wb = fs->wback;
	struct wb_entry *e = NULL, *to;
	size_t len = tail ? (size + WB_MASK) & ~(size_t)WB_MASK : size;

	if (!((off | len) & WB_MASK) && size && len <= WB_MAX_WRITE &&
	    off + len <= MQFS_MAX_FILE_BYTES)
		e = wb_entry_new(ip, off, len, size);
	/* A throttled writer sleeps: nothing may wait in its plug (and the
	 * flush must come first: a synchronous end_io takes wb->lock). */
	mq_flush_plug();
	pthread_mutex_lock(&wb->lock);
	if (!e || wb_admit_locked(wb, e))
		return wb_decline(wb, e);
	while (!(to = wb_enter_locked(wb, ip, e))) {
		pthread_mutex_unlock(&wb->lock);
		mqfs_wback_sync(fs, ip);
		pthread_mutex_lock(&wb->lock);
	}
	wb->st.buffered_writes++;
	wb->st.buffered_bytes += size;
	pthread_mutex_unlock(&wb->lock);
	mqfs_touch(ip, false, true, true);
	mqfs_ino_data_changed(ip);
	done(arg, (ssize_t)size);
	memcpy(to->buf, data, size);
	memset((char *)to->buf + size, 0, len - size);
	pthread_mutex_lock(&wb->lock);
	to->state = WB_DIRTY;
	pthread_cond_broadcast(&wb->filled);
	wb_queue_locked(wb, ip);
	pthread_mutex_unlock(&wb->lock);
	return true;
}

/* ---- writing a batch back ---------------------------------------------- */

/*
 * Take up to a batch of @ip's dirty entries, in offset order: a quarter
 * of the bound, so with two batches in flight writers still have half.
 */
static unsigned wb_collect(struct mqfs_wback *wb, struct mqfs_ino *ip,
			   struct wb_batch *b)
{
	struct wb_entry **tail = &b->head;
	uint64_t bytes = 0;
	unsigned n = 0;
	struct mq_rb_node *nd;

	pthread_mutex_lock(&wb->lock);
	nd = mq_rb_first(&ip->wb.entries);
	while (nd && n < WB_BATCH_ENTRIES && bytes < wb->limit / 4) {
		struct wb_entry *e = wb_node_entry(nd);

		if (e->state == WB_FILLING) {
			/* A copy of microseconds; @nd stays (only batches,
			 * under ip->lock, remove entries). */
			pthread_cond_wait(&wb->filled, &wb->lock);
			continue;
		}
		nd = mq_rb_next(nd);
		if (e->state != WB_DIRTY)
			continue;
		e->state = WB_INFLIGHT;
		e->batch = b;
		*tail = e;
		tail = &e->next;
		bytes += e->len;
		n++;
	}
	*tail = NULL;
	ip->wb.ndirty -= n;
	b->pending = n;
	if (n)
		wb->active++;
	pthread_mutex_unlock(&wb->lock);
	return n;
}

/* Completion worker: the data is on the device (or failed); drop it. */
static void wb_entry_done(struct mqfs_bioset *s)
{
	struct wb_entry *e = mq_container_of(s, struct wb_entry, set);
	struct mqfs_wback *wb = e->batch->wb;

	pthread_mutex_lock(&wb->lock);
	wb_buf_put_locked(wb, e);
	wb->st.buffers_dropped++;
	if (--e->batch->pending == 0)
		pthread_cond_broadcast(&wb->done);
	pthread_mutex_unlock(&wb->lock);
}

/* A handle in which one more extent change fits. */
struct wb_tx {
	struct mqfs_fs *fs;
	struct mqfs_handle h;
	bool open;
	unsigned ops, max_ops;
};

static int wb_tx_stop(struct wb_tx *t)
{
	if (!t->open)
		return 0;
	t->open = false;
	return mqfs_trans_stop(&t->h);
}

static int wb_tx_room(struct wb_tx *t)
{
	int err;

	if (t->open && t->ops < t->max_ops)
		return 0;
	err = wb_tx_stop(t);
	if (!err)
		err = mqfs_trans_start(t->fs, mqfs_file_credits(t->fs,
								t->max_ops),
				       &t->h);
	t->open = !err;
	t->ops = 0;
	return err;
}

/* Blocks for the hole at [lblk, lblk+len): an unwritten extent. */
static int wb_alloc_hole(struct wb_tx *t, struct mqfs_ino *ip, uint64_t lblk,
			 uint32_t len, uint64_t *goal, uint64_t *pblk,
			 uint32_t *got)
{
	bool retried = false;
	int err;

	for (;;) {
		err = wb_tx_room(t);
		if (!err)
			err = mqfs_alloc_blocks(&t->h, *goal, len, pblk, got);
		if (!err || err != -ENOSPC)
			break;
		err = wb_tx_stop(t);
		if (err || !mqfs_retry_enospc(t->fs, -ENOSPC, &retried))
			return err ? err : -ENOSPC;
	}
	if (err)
		return err;
	err = mqfs_extent_insert(&t->h, ip, lblk, *pblk, *got,
				 MQFS_EXT_UNWRITTEN);
	if (err) {
		mqfs_free_blocks(&t->h, *pblk, *got);
		return err;
	}
	t->ops++;
	*goal = *pblk + *got;
	return 0;
}

/* Map (allocating holes) the blocks of @e and build its bios. */
static int wb_plan_entry(struct wb_tx *t, struct mqfs_ino *ip,
			 struct wb_entry *e, uint64_t *goal)
{
	uint64_t first = e->off / WB_BS, n = e->len / WB_BS;

	for (uint64_t i = 0; i < n;) {
		struct mqfs_map m;
		uint64_t pblk;
		uint32_t len;
		int err = mqfs_extent_map(t->fs, ip, first + i,
					  (uint32_t)(n - i), &m);

		if (!err && !m.pblk) {
			if (!*goal)
				*goal = mqfs_file_goal(t->fs, ip, first + i);
			err = wb_alloc_hole(t, ip, first + i, m.len, goal,
					    &pblk, &len);
			m.pblk = pblk;
			m.len = len;
			m.unwritten = true;
		}
		if (!err)
			err = mqfs_bioset_add(&e->set, MQ_OP_WRITE, m.pblk,
					      (char *)e->buf + i * WB_BS,
					      m.len, WB_BIO_FLAGS);
		if (err)
			return err;
		e->convert |= m.unwritten;
		*goal = m.pblk + m.len;
		i += m.len;
	}
	return 0;
}

/* Plan every entry; one that cannot be planned fails alone. */
static void wb_plan(struct mqfs_fs *fs, struct mqfs_ino *ip,
		    struct wb_batch *b)
{
	struct wb_tx t = { .fs = fs, .max_ops = mqfs_file_ops_per_handle(fs) };
	uint64_t goal = 0;
	int err;

	for (struct wb_entry *e = b->head; e; e = e->next) {
		err = mqfs_fs_writable(fs);
		if (!err)
			err = wb_plan_entry(&t, ip, e, &goal);
		if (err)
			mqfs_bioset_fail(&e->set, err);
	}
	err = wb_tx_stop(&t);
	for (struct wb_entry *e = b->head; err && e; e = e->next)
		if (!wb_entry_error(e))
			mqfs_bioset_fail(&e->set, err);
}

/* Send every planned bio in one plug; failed entries drop at once. */
static void wb_submit(struct mqfs_fs *fs, struct wb_batch *b)
{
	struct mq_plug plug;
	unsigned n = 0;

	for (struct wb_entry *e = b->head; e; e = e->next)
		n += e->set.nbios;
	mq_start_plug(&plug, n);
	for (struct wb_entry *e = b->head, *next; e; e = next) {
		next = e->next;		/* @e may be dropped at once */
		mqfs_bioset_submit(fs->q, &e->set);
	}
	mq_finish_plug(&plug);
}

static void wb_wait(struct mqfs_wback *wb, struct wb_batch *b)
{
	mq_flush_plug();	/* an outer plug (the caller's) holds them */
	pthread_mutex_lock(&wb->lock);
	while (b->pending)
		pthread_cond_wait(&wb->done, &wb->lock);
	pthread_mutex_unlock(&wb->lock);
}

/*
 * Mark the unwritten extents of blocks [lblk, end) written, one extent
 * change per op: a range may cover many (a fragmented allocation), and
 * each is a split or merge that needs its credits.
 */
static int wb_mark_range(struct wb_tx *t, struct mqfs_ino *ip, uint64_t lblk,
			 uint64_t end)
{
	while (lblk < end) {
		struct mqfs_map m;
		int err = mqfs_extent_map(t->fs, ip, lblk,
					  (uint32_t)MQ_MIN(end - lblk,
							   (uint64_t)UINT32_MAX),
					  &m);

		if (!err && m.pblk && m.unwritten) {
			err = wb_tx_room(t);
			if (!err)
				err = mqfs_extent_mark_written(&t->h, ip, lblk,
							       m.len);
			t->ops++;
		}
		if (err)
			return err;
		lblk += m.len;
	}
	return 0;
}

/*
 * The data is on the device: mark its unwritten blocks written (adjacent
 * entries as one range), then the size and times, in short handles.  A
 * failed entry still counts for the size, as a failed page-cache
 * writeback does: its blocks read as zeroes.
 */
static int wb_finish(struct mqfs_fs *fs, struct mqfs_ino *ip,
		     struct wb_batch *b)
{
	struct wb_tx t = { .fs = fs, .max_ops = mqfs_file_ops_per_handle(fs) };
	uint64_t end = ip->d.size;
	int err = 0, err2;

	for (struct wb_entry *e = b->head; e; e = e->next)
		end = MQ_MAX(end, e->off + e->bytes);
	for (struct wb_entry *e = b->head; e && !err; e = e->next) {
		uint64_t start = e->off, stop = e->off + e->len;

		if (wb_entry_error(e) || !e->convert)
			continue;
		while (e->next && !wb_entry_error(e->next) &&
		       e->next->convert && e->next->off == stop) {
			e = e->next;
			stop = e->off + e->len;
		}
		err = wb_mark_range(&t, ip, start / WB_BS, stop / WB_BS);
	}
	/* Every data handle has a credit for the inode; else one of its own. */
	if (!err && !t.open) {
		err = mqfs_trans_start(fs, MQFS_CREDITS_INODE, &t.h);
		t.open = !err;
	}
	if (!err) {
		ip->d.size = end;
		err = mqfs_inode_dirty(&t.h, ip);
	}
	err2 = wb_tx_stop(&t);
	return err ? err : err2;
}

/* The batch is over: entries leave the tree; errors go to the inode. */
static void wb_retire(struct mqfs_wback *wb, struct mqfs_ino *ip,
		      struct wb_batch *b, int err)
{
	struct wb_entry *e, *next;

	pthread_mutex_lock(&wb->lock);
	for (e = b->head; e; e = next) {
		next = e->next;
		if (!ip->wb.error)
			ip->wb.error = wb_entry_error(e) ?: err;
		mq_rb_erase(&e->node, &ip->wb.entries);
		ip->wb.nentries--;
		wb_release_locked(wb, e);
		wb_entry_free(e);
	}
	if (!ip->wb.nentries) {
		atomic_store(&ip->wb.size, 0);
		if (ip->wb.pinned)
			wb_queue_locked(wb, ip);	/* to unpin it */
	}
	wb->st.write_batches++;
	wb->active--;
	pthread_cond_broadcast(&wb->idle);
	pthread_mutex_unlock(&wb->lock);
}

/* Take a batch of @ip's dirty entries and send it; false: none. */
static bool wb_start(struct mqfs_fs *fs, struct mqfs_ino *ip,
		     struct wb_batch *b)
{
	*b = (struct wb_batch){ .wb = fs->wback };
	if (!wb_collect(fs->wback, ip, b))
		return false;
	wb_plan(fs, ip, b);
	wb_submit(fs, b);
	return true;
}

/* Wait for a batch, map what it wrote, let its entries go. */
static void wb_end(struct mqfs_fs *fs, struct mqfs_ino *ip, struct wb_batch *b)
{
	int err;

	wb_wait(fs->wback, b);
	err = wb_finish(fs, ip, b);
	wb_retire(fs->wback, ip, b, err);
}

/*
 * Write @ip's dirty entries back (ip->lock held exclusively), @rounds
 * batches at most (0: until none is left), two at a time: the next batch
 * is planned and sent while the one before is in flight, so the device
 * does not idle through a batch's completion delay and its finish.  The
 * batches are disjoint (entries in the tree never overlap), so their
 * order on the device does not matter.  A bounded turn (the flusher's)
 * ends early when someone waits for the inode lock: a reader should not
 * sit through eight batches.  False when there was nothing.
 */
static bool wb_write_back(struct mqfs_fs *fs, struct mqfs_ino *ip,
			  unsigned rounds)
{
	struct wb_batch b[2], *prev = NULL;
	unsigned n = 0;

	for (;;) {
		struct wb_batch *cur = &b[n & 1];
		bool more = !rounds || (n < rounds &&
					(!n || !atomic_load(&ip->lock_waiters)));
		bool started = more && wb_start(fs, ip, cur);

		if (prev)
			wb_end(fs, ip, prev);
		if (!started)
			return n > 0;
		prev = cur;
		n++;
	}
}

/* ---- the flusher --------------------------------------------------------- */

/*
 * After a turn of @ip (its lock given back): drop its pin if it has
 * nothing left, else queue it again if it has dirty entries.
 */
static void wb_turn_done(struct mqfs_wback *wb, struct mqfs_ino *ip)
{
	bool unpin;

	pthread_mutex_lock(&wb->lock);
	unpin = !ip->wb.nentries && ip->wb.pinned;
	if (unpin) {
		/* Another thread's batch may have queued it again meanwhile:
		 * the queue must not keep an inode we no longer hold. */
		ip->wb.pinned = false;
		if (ip->wb.queued) {
			mq_list_del_init(&ip->wb.qlink);
			ip->wb.queued = false;
		}
	} else if (ip->wb.ndirty) {
		wb_queue_locked(wb, ip);
	}
	pthread_mutex_unlock(&wb->lock);
	if (unpin)
		mqfs_iput(wb->fs, ip);
}

/* A few batches of @ip, then other inodes get their turn. */
static void wb_flush_inode(struct mqfs_wback *wb, struct mqfs_ino *ip)
{
	mqfs_file_lock(ip, true);
	wb_write_back(wb->fs, ip, WB_FLUSH_ROUNDS);
	pthread_rwlock_unlock(&ip->lock);
	wb_turn_done(wb, ip);
}

/*
 * A queued inode with a small write-behind (a small file's, written
 * back by the kernel or by a dontcache writer) whose lock is free,
 * taken off the queue locked and counted active; NULL when the first
 * WB_GROUP_SCAN queued inodes hold none.  The lock is only tried: the
 * flusher holds other inodes' locks already.
 */
static struct mqfs_ino *wb_next_small(struct mqfs_wback *wb)
{
	struct mqfs_ino *ip, *got = NULL;
	unsigned scanned = 0;

	pthread_mutex_lock(&wb->lock);
	mq_list_for_each_entry(ip, &wb->queue, wb.qlink) {
		if (++scanned > WB_GROUP_SCAN)
			break;
		if (ip->wb.ndirty > WB_SMALL_ENTRIES ||
		    pthread_rwlock_trywrlock(&ip->lock))
			continue;
		mq_list_del_init(&ip->wb.qlink);
		ip->wb.queued = false;
		wb->active++;
		got = ip;
		break;
	}
	pthread_mutex_unlock(&wb->lock);
	return got;
}

static bool wb_is_small(struct mqfs_wback *wb, struct mqfs_ino *ip)
{
	bool small;

	pthread_mutex_lock(&wb->lock);
	small = ip->wb.ndirty <= WB_SMALL_ENTRIES;
	pthread_mutex_unlock(&wb->lock);
	return small;
}

/*
 * One batch each of @first and of up to WB_GROUP - 1 other small queued
 * inodes, sent in one plug and then waited for together: an untar's
 * thousands of one-block files are written as few large requests (their
 * blocks are allocated side by side), with one completion delay for the
 * group instead of one per file.
 */
static void wb_flush_group(struct mqfs_wback *wb, struct mqfs_ino *first)
{
	struct mqfs_ino *ips[WB_GROUP];
	struct wb_batch b[WB_GROUP];
	bool sent[WB_GROUP];
	struct mq_plug plug;
	unsigned n = 1;

	mqfs_file_lock(first, true);
	ips[0] = first;
	while (n < WB_GROUP && (ips[n] = wb_next_small(wb)))
		n++;
	mq_start_plug(&plug, n);
	for (unsigned i = 0; i < n; i++)
		sent[i] = wb_start(wb->fs, ips[i], &b[i]);
	mq_finish_plug(&plug);
	for (unsigned i = 0; i < n; i++) {
		if (sent[i])
			wb_end(wb->fs, ips[i], &b[i]);
		pthread_rwlock_unlock(&ips[i]->lock);
		wb_turn_done(wb, ips[i]);
		if (i) {			/* @first is the caller's */
			pthread_mutex_lock(&wb->lock);
			wb->active--;
			pthread_cond_broadcast(&wb->idle);
			pthread_mutex_unlock(&wb->lock);
		}
	}
}

/* The first queued inode, taken off the queue; NULL when there is none. */
/*
 * When the queue's head may wait (its deadline), or 0: a small backlog
 * nobody waits for is held for WB_DELAY_NS, so that an untar's files
 * are written in groups and not under their own setattrs' feet (a
 * batch holds the inode's lock).  Pressure, a waiter (sync_all, a
 * throttled writer) and a stopping flusher take it at once.
 */
static uint64_t wb_head_due_locked(struct mqfs_wback *wb,
				   struct mqfs_ino *ip, bool stopping)
{
	uint64_t due = ip->wb.queued_ns + WB_DELAY_NS;

	if (stopping || wb->hurry || wb->dirty >= wb->limit / 4 ||
	    mq_clock_real_ns() >= due)
		return 0;
	return due;
}

/*
 * The first queued inode, taken off the queue; NULL when there is none
 * or it is not due yet (*due: when it is).
 */
static struct mqfs_ino *wb_next(struct mqfs_wback *wb, bool stopping,
				uint64_t *due)
{
	struct mqfs_ino *ip = NULL;

	*due = 0;
	pthread_mutex_lock(&wb->lock);
	if (!mq_list_empty(&wb->queue)) {
		ip = mq_list_first_entry(&wb->queue, struct mqfs_ino, wb.qlink);
		*due = wb_head_due_locked(wb, ip, stopping);
		if (*due) {
			ip = NULL;
		} else {
			mq_list_del_init(&ip->wb.qlink);
			ip->wb.queued = false;
			wb->active++;	/* sync_all waits for it too */
		}
	}
	pthread_mutex_unlock(&wb->lock);
	return ip;
}

/* Told to stop, the flusher still empties the queue before it exits. */
static void *wb_flusher(void *arg)
{
	struct mqfs_wback *wb = arg;
	bool run = true;
	struct mqfs_ino *ip;
	uint64_t due;

	while ((ip = wb_next(wb, !run, &due)) || run) {
		if (!ip) {
			run = mq_kthread_wait(&wb->flusher, due);
			continue;
		}
		if (wb_is_small(wb, ip))
			wb_flush_group(wb, ip);
		else
			wb_flush_inode(wb, ip);
		pthread_mutex_lock(&wb->lock);
		wb->active--;
		pthread_cond_broadcast(&wb->idle);
		pthread_mutex_unlock(&wb->lock);
	}
	return NULL;
}

/* ---- waiting for the write-behind -------------------------------------- */

uint64_t mqfs_wback_promised_blocks(struct mqfs_fs *fs)
{
	struct mqfs_wback *wb = fs->wback;
	uint64_t bytes;

	if (!wb)
		return 0;
	pthread_mutex_lock(&wb->lock);
	bytes = wb->dirty;
	pthread_mutex_unlock(&wb->lock);
	return bytes / WB_BS;
}

bool mqfs_wback_pending(struct mqfs_ino *ip)
{
	return atomic_load(&ip->wb.size) != 0;
}

bool mqfs_wback_conflict(struct mqfs_fs *fs, struct mqfs_ino *ip,
			 uint64_t off, uint64_t len)
{
	struct mqfs_wback *wb = fs->wback;
	bool hit;

	if (!mqfs_wback_pending(ip))
		return false;
	/* Between the on-disk size and the size pending writes give, a
	 * read would stop short: the data must be written back first. */
	if (off + len > ip->d.size && off < atomic_load(&ip->wb.size))
		return true;
	pthread_mutex_lock(&wb->lock);
	hit = wb_find_locked(ip, off, off + len) != NULL;
	pthread_mutex_unlock(&wb->lock);
	return hit;
}

void mqfs_wback_sync_locked(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	wb_write_back(fs, ip, 0);
}

void mqfs_wback_sync(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	if (!mqfs_wback_pending(ip))
		return;
	mqfs_file_lock(ip, true);
	mqfs_wback_sync_locked(fs, ip);
	pthread_rwlock_unlock(&ip->lock);
}

void mqfs_wback_sync_all(struct mqfs_fs *fs)
{
	struct mqfs_wback *wb = fs->wback;

	pthread_mutex_lock(&wb->lock);
	wb->hurry++;
	mq_kthread_kick(&wb->flusher);
	while (wb->dirty || wb->active)
		pthread_cond_wait(&wb->idle, &wb->lock);
	wb->hurry--;
	pthread_mutex_unlock(&wb->lock);
}

int mqfs_wback_take_error(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	struct mqfs_wback *wb = fs->wback;
	int err;

	pthread_mutex_lock(&wb->lock);
	err = ip->wb.error;
	ip->wb.error = 0;
	pthread_mutex_unlock(&wb->lock);
	return err;
}

/* ---- set-up and figures ------------------------------------------------ */

int mqfs_wback_create(struct mqfs_fs *fs, uint64_t limit_bytes)
{
	struct mqfs_wback *wb = calloc(1, sizeof(*wb));
	struct mqfs_bufpool_cfg pool = {
		.min_shift = MQFS_BLOCK_SHIFT, .nr_classes = WB_NR_CLASSES,
	};
	int err;

	if (!wb)
		return -ENOMEM;
	wb->fs = fs;
	wb->limit = limit_bytes ? limit_bytes : WB_DEFAULT_LIMIT;
	pool.limit = pool.cache_max = wb->limit;
	err = mqfs_bufpool_create(&pool, &wb->pool);
	if (err) {
		free(wb);
		return err;
	}
	pthread_mutex_init(&wb->lock, NULL);
	pthread_cond_init(&wb->room, NULL);
	pthread_cond_init(&wb->done, NULL);
	pthread_cond_init(&wb->idle, NULL);
	pthread_cond_init(&wb->filled, NULL);
	mq_list_init(&wb->queue);
	fs->wback = wb;
	mq_kthread_init(&wb->flusher);
	err = mq_kthread_start(&wb->flusher, "mqfs-flusher", wb_flusher, wb);
	if (err) {
		mq_kthread_stop(&wb->flusher);
		fs->wback = NULL;
		mqfs_bufpool_destroy(wb->pool);
		free(wb);
	}
	return err;
}

void mqfs_wback_destroy(struct mqfs_fs *fs)
{
	struct mqfs_wback *wb = fs->wback;

	if (!wb)
		return;
	mq_kthread_stop(&wb->flusher);
	MQ_ASSERT(!wb->active && !wb->dirty);
	mqfs_bufpool_destroy(wb->pool);
	pthread_cond_destroy(&wb->filled);
	pthread_cond_destroy(&wb->idle);
	pthread_cond_destroy(&wb->done);
	pthread_cond_destroy(&wb->room);
	pthread_mutex_destroy(&wb->lock);
	free(wb);
	fs->wback = NULL;
}

void mqfs_get_wback_stats(struct mqfs_fs *fs, struct mqfs_wback_stats *out)
{
	struct mqfs_wback *wb = fs->wback;
	struct mqfs_bufpool_stats bp;

	mqfs_bufpool_stats(wb->pool, &bp);
	pthread_mutex_lock(&wb->lock);
	*out = wb->st;
	out->dirty_bytes = wb->dirty;
	out->dirty_limit = wb->limit;
	out->held_bytes = bp.held;
	out->held_peak = bp.held_peak;
	pthread_mutex_unlock(&wb->lock);
}
