// SPDX-License-Identifier: MIT
/*
 * wback_flush.c - writing the write-behind back (see wback.c for the
 * whole design): a batch of an inode's entries planned (holes get
 * unwritten extents), sent in one plug, waited for, marked written and
 * retired; the flusher thread that runs batches inode by inode, small
 * files in groups, after a short hold of a small backlog.
 */
#include <errno.h>
#include <string.h>

#include "wback_i.h"

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
void mqfs_wb_entry_done(struct mqfs_bioset *s)
{
	struct wb_entry *e = mq_container_of(s, struct wb_entry, set);
	struct mqfs_wback *wb = e->batch->wb;

	pthread_mutex_lock(&wb->lock);
	mqfs_wb_buf_put_locked(wb, e);
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
		mqfs_wb_release_locked(wb, e);
		wb_entry_free(e);
	}
	if (!ip->wb.nentries) {
		atomic_store(&ip->wb.size, 0);
		if (ip->wb.pinned)
			mqfs_wb_queue_locked(wb, ip);	/* to unpin it */
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
bool mqfs_wb_write_back(struct mqfs_fs *fs, struct mqfs_ino *ip,
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

/* An inode wb_next or wb_next_small counted active is done with. */
static void wb_inode_done(struct mqfs_wback *wb)
{
	pthread_mutex_lock(&wb->lock);
	wb->active--;
	pthread_cond_broadcast(&wb->idle);
	pthread_mutex_unlock(&wb->lock);
}

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
		mqfs_wb_queue_locked(wb, ip);
	}
	pthread_mutex_unlock(&wb->lock);
	if (unpin)
		mqfs_iput(wb->fs, ip);
}

/* A few batches of @ip, then other inodes get their turn. */
static void wb_flush_inode(struct mqfs_wback *wb, struct mqfs_ino *ip)
{
	mqfs_file_lock(ip, true);
	mqfs_wb_write_back(wb->fs, ip, WB_FLUSH_ROUNDS);
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
		if (i)				/* @first is the caller's */
			wb_inode_done(wb);
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
void *mqfs_wb_flusher(void *arg)
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
		wb_inode_done(wb);
	}
	return NULL;
}
