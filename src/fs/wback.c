// SPDX-License-Identifier: MIT
/*
 * wback.c - dontcache write-behind: uncached buffered writes, and the
 * kernel's write-back of cache=kernel pages.  This file takes writes
 * and waits for them; wback_flush.c writes them back.
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
#include <string.h>

#include "wback_i.h"

/* ---- the buffers ------------------------------------------------------ */

void mqfs_wb_buf_put_locked(struct mqfs_wback *wb, struct wb_entry *e)
{
	mqfs_bufpool_put(wb->pool, e->buf, e->len);
	e->buf = NULL;
	pthread_cond_broadcast(&wb->room);
}

/* ---- the inode's tree of entries --------------------------------------- */

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
void mqfs_wb_queue_locked(struct mqfs_wback *wb, struct mqfs_ino *ip)
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
	mqfs_bioset_init(&e->set, &e->bio1, 1, mqfs_wb_entry_done);
	e->set.prio_class = (uint8_t)mq_task_prio();
	return e;
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
void mqfs_wb_release_locked(struct mqfs_wback *wb, struct wb_entry *e)
{
	if (e->buf)
		mqfs_wb_buf_put_locked(wb, e);
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
		mqfs_wb_release_locked(wb, e);
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
 * @writeback: the kernel's write-back of its page cache.  Its last page
 * ends the file, so a partial last block is taken, padded with zeroes
 * (only the caller can know that: a write into the middle of a block
 * must not be); and the kernel keeps the file's mtime and ctime itself.
 */
bool mqfs_wback_write(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t off,
		      const void *data, size_t size, bool writeback,
		      mqfs_write_done_t done, void *arg)
{
	struct mqfs_wback *wb = fs->wback;
	struct wb_entry *e = NULL, *to;
	size_t len = writeback ? (size + WB_MASK) & ~(size_t)WB_MASK : size;

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
	if (!writeback)
		mqfs_touch(ip, false, true, true);
	mqfs_ino_data_changed(ip);
	done(arg, (ssize_t)size);
	memcpy(to->buf, data, size);
	memset((char *)to->buf + size, 0, len - size);
	pthread_mutex_lock(&wb->lock);
	to->state = WB_DIRTY;
	pthread_cond_broadcast(&wb->filled);
	mqfs_wb_queue_locked(wb, ip);
	pthread_mutex_unlock(&wb->lock);
	return true;
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
	mqfs_wb_write_back(fs, ip, 0);
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
	err = mq_kthread_start(&wb->flusher, "mqfs-flusher", mqfs_wb_flusher, wb);
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
