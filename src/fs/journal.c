// SPDX-License-Identifier: MIT
/*
 * journal.c - transactions and the physical redo journal.
 *
 * Every metadata change happens inside a handle (mqfs_trans_start ..
 * mqfs_trans_stop); the buffers it changes join the one running
 * transaction.  A commit takes the commit rwlock exclusively, so it sees
 * no handle half way through, snapshots every dirty buffer into a
 * private copy (sealed with the transaction's sequence), and lets new
 * handles run on the next transaction while it writes:
 *
 *   journal_start: D0 copies... [D1 copies...] C
 *
 * descriptors (struct mqfs_jdesc) each followed by the copies they list,
 * FLUSH, then the commit block (struct mqfs_jcommit), FLUSH: now the
 * transaction is durable.  Then the checkpoint writes each copy to its
 * home block and FLUSHes, and only then may the next transaction reuse
 * the journal.  So the journal holds one transaction at most, and
 * replay is "apply the transaction at journal_start if its commit is
 * valid", which is idempotent.
 *
 * commit body_csum: XXH3-64 (seed 0) of the descriptor and copy blocks
 * concatenated in journal order, i.e. of the blocks journal_start ..
 * commit - 1 (they are contiguous on disk; commits hash them in one
 * call, replay streams them block by block: the same value).
 *
 * Blocks freed in transaction N become allocatable again
 * (fs->checkpointed: mqfs_alloc_txn_committed) only after N's checkpoint, not when N is
 * durable: N may carry a copy of a block it freed, and a checkpoint
 * write landing after that block's new owner wrote data there would
 * destroy the data.  Waiters (fsync, sync handles) are released at
 * durability.
 *
 * An I/O error while writing the journal or checkpointing aborts the
 * journal: the fs is told (mqfs_fs_error), later transactions are
 * discarded, waiters get -EIO, new handles -EROFS, and the journal is
 * never cleared, so the next mount replays what reached it.
 *
 * Locks: commit_mutex (one commit at a time, held through the
 * checkpoint and the fs->checkpointed call) -> commit_rw ->
 * buffer locks -> j->lock (mqfs_trans_dirty takes it under a buffer
 * lock) -> buffer-cache lock; the commit thread's own lock (j->kt) is
 * a leaf, taken under j->lock only to kick it.  Handles do not nest: a
 * thread holds at most one, since a writer-preferring rwlock deadlocks
 * on a nested read lock while a commit waits; for the same reason a
 * thread holding a handle must not commit or wait for a commit, and
 * nobody may wait for a commit while holding a lock that
 * fs->checkpointed takes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"
#include "journal_i.h"
#include "mqfs/clock.h"
#include "mqfs/kthread.h"

#define JNL_DEFAULT_INTERVAL_MS	5000u
#define JNL_IO_CHUNK		64u	/* blocks per journal write bio */

struct mqfs_journal {
	struct mqfs_fs *fs;
	pthread_mutex_t commit_mutex;	/* one commit, checkpoint included */
	pthread_rwlock_t commit_rw;	/* handles shared, snapshot exclusive */
	pthread_rwlock_t hook_rw;	/* fs->pre_commit: calls shared */
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t cond;		/* seqs moved, reservations dropped */
	struct mq_list_head running;	/* DIRTY buffers, by txn_link */
	unsigned nr_bufs;		/* on @running */
	unsigned reserved;		/* credits of open handles, unused */
	unsigned limit;			/* most buffers in one transaction */
	unsigned start_waiters;		/* handles waiting for room */
	uint64_t running_seq;
	uint64_t durable_seq;
	bool aborted;
	unsigned interval_ms;
	struct mq_kthread kt;		/* the commit thread */
	uint64_t commits, blocks_logged;
};

/* A transaction being committed: the journal image and its buffers. */
struct jtxn {
	uint64_t seq;
	unsigned nr, ndesc;
	struct mqfs_buf **bufs;		/* sorted by home block */
	void *area;			/* nr + ndesc + 1 blocks, as on disk */
	uint64_t err_blk;		/* where an I/O error happened */
	const char *err_what;
};

static struct mqfs_journal *jnl_of(struct mqfs_fs *fs)
{
	return fs->journal;
}

/* ---- geometry of a transaction in the journal ------------------------ */

/*
 * Most buffers one transaction may hold: what fits with its descriptors
 * and commit block, less an eighth kept for handles that dirty more
 * than they reserved (logged as a bug, but still committed).
 */
static unsigned jnl_limit(uint32_t journal_blocks)
{
	unsigned n = journal_blocks > 2 ? journal_blocks - 2 : 0;

	while (n && n + jnl_ndesc(n) + 1 > journal_blocks)
		n--;
	return n - n / 8;
}

/* ---- the sequence ------------------------------------------------------ */

/* Raw reads: at mount there is no sb_buf yet. */
uint64_t mqfs_journal_sb_seq(struct mqfs_fs *fs)
{
	uint64_t where[2] = { 0, fs->block_count - 1 };
	struct mqfs_super *sb = mqfs_alloc_blocks_mem(1);
	uint64_t seq = 0;

	if (!sb)
		return 0;
	for (unsigned i = 0; i < 2 && fs->block_count; i++) {
		if (mqfs_bio_sync(fs->q, MQ_OP_READ, where[i], sb, 1,
				  MQ_REQ_META | MQ_REQ_SYNC) ||
		    mqfs_blk_verify(sb, MQFS_T_SUPER, where[i]))
			continue;
		seq = sb->journal_seq;
		break;
	}
	free(sb);
	return seq;
}

void mqfs_journal_raise_seq(struct mqfs_fs *fs, uint64_t next)
{
	struct mqfs_journal *j = jnl_of(fs);

	pthread_mutex_lock(&j->lock);
	if (next > j->running_seq) {
		j->running_seq = next;
		j->durable_seq = next - 1;
	}
	pthread_mutex_unlock(&j->lock);
}

/* ---- handles ----------------------------------------------------------- */

static bool jnl_room_locked(struct mqfs_journal *j, unsigned credits)
{
	return j->nr_bufs + j->reserved + credits <= j->limit;
}

/* A handle if there is room now: 0, -EAGAIN (none), -EROFS (aborted). */
static int jnl_try_reserve(struct mqfs_journal *j, unsigned credits,
			   struct mqfs_handle *h, uint64_t *seq)
{
	pthread_rwlock_rdlock(&j->commit_rw);
	pthread_mutex_lock(&j->lock);
	if (j->aborted) {
		pthread_mutex_unlock(&j->lock);
		pthread_rwlock_unlock(&j->commit_rw);
		return -EROFS;
	}
	if (jnl_room_locked(j, credits)) {
		j->reserved += credits;
		h->seq = j->running_seq;
		pthread_mutex_unlock(&j->lock);
		return 0;
	}
	/* Full: let the commit take it. */
	*seq = j->running_seq;
	mq_kthread_kick(&j->kt);
	pthread_mutex_unlock(&j->lock);
	pthread_rwlock_unlock(&j->commit_rw);
	return -EAGAIN;
}

static int jnl_handle_init(struct mqfs_journal *j, struct mqfs_fs *fs,
			   unsigned credits, struct mqfs_handle *h)
{
	*h = (struct mqfs_handle){ .fs = fs, .credits = credits };
	if (credits > j->limit) {
		fprintf(stderr, "mqfs: journal: a handle of %u credits cannot "
			"fit in a journal of %u\n", credits, j->limit);
		return -ENOSPC;
	}
	return 0;
}

int mqfs_trans_start(struct mqfs_fs *fs, unsigned credits,
		     struct mqfs_handle *h)
{
	struct mqfs_journal *j = jnl_of(fs);
	uint64_t seq;
	int err = jnl_handle_init(j, fs, credits, h);

	if (err)
		return err;
	while ((err = jnl_try_reserve(j, credits, h, &seq)) == -EAGAIN) {
		pthread_mutex_lock(&j->lock);
		j->start_waiters++;
		while (j->running_seq == seq && !j->aborted &&
		       !jnl_room_locked(j, credits))
			pthread_cond_wait(&j->cond, &j->lock);
		j->start_waiters--;
		pthread_mutex_unlock(&j->lock);
	}
	return err;
}

int mqfs_trans_try_start(struct mqfs_fs *fs, unsigned credits,
			 struct mqfs_handle *h)
{
	struct mqfs_journal *j = jnl_of(fs);
	uint64_t seq;
	int err = jnl_handle_init(j, fs, credits, h);

	return err ? err : jnl_try_reserve(j, credits, h, &seq);
}

int mqfs_trans_extend(struct mqfs_handle *h, unsigned credits)
{
	struct mqfs_journal *j = jnl_of(h->fs);
	int err = -EAGAIN;

	pthread_mutex_lock(&j->lock);
	if (jnl_room_locked(j, credits)) {
		j->reserved += credits;
		h->credits += credits;
		err = 0;
	}
	pthread_mutex_unlock(&j->lock);
	return err;
}

void mqfs_trans_dirty(struct mqfs_handle *h, struct mqfs_buf *b)
{
	struct mqfs_journal *j = jnl_of(h->fs);
	unsigned old = atomic_fetch_or(&b->flags, MQFS_BUF_DIRTY);

	if (old & MQFS_BUF_DIRTY)
		return;		/* already in the running transaction */
	MQ_ASSERT(b->type > 0 && b->type < MQFS_T_COUNT);
	mqfs_buf_get(b);
	pthread_mutex_lock(&j->lock);
	b->txn_seq = j->running_seq;
	mq_list_add_tail(&b->txn_link, &j->running);
	j->nr_bufs++;
	if (h->credits) {
		h->credits--;
		j->reserved--;
	} else {
		fprintf(stderr, "mqfs: journal: handle dirtied block %" PRIu64
			" beyond its credits\n", b->blocknr);
	}
	if (j->nr_bufs == j->limit / 2 + 1)
		mq_kthread_kick(&j->kt);
	pthread_mutex_unlock(&j->lock);
}

int mqfs_trans_stop(struct mqfs_handle *h)
{
	struct mqfs_journal *j = jnl_of(h->fs);
	bool aborted;

	pthread_mutex_lock(&j->lock);
	j->reserved -= h->credits;
	h->credits = 0;
	if (j->start_waiters)
		pthread_cond_broadcast(&j->cond);
	aborted = j->aborted;
	pthread_mutex_unlock(&j->lock);
	pthread_rwlock_unlock(&j->commit_rw);
	if (aborted)
		return -EIO;	/* this handle's changes will not be written */
	return h->sync ? mqfs_journal_wait_seq(h->fs, h->seq) : 0;
}

int mqfs_trans_finish(struct mqfs_handle *h, int err)
{
	int err2 = mqfs_trans_stop(h);

	return err ? err : err2;
}

int mqfs_trans_one(struct mqfs_fs *fs, unsigned credits,
		   int (*change)(struct mqfs_handle *h, struct mqfs_ino *ip),
		   struct mqfs_ino *ip)
{
	struct mqfs_handle h;
	int err = mqfs_trans_start(fs, credits, &h);

	return err ? err : mqfs_trans_finish(&h, change(&h, ip));
}

/* ---- commit: snapshot ----------------------------------------------------- */

static int jnl_cmp_buf(const void *a, const void *b)
{
	uint64_t x = (*(struct mqfs_buf *const *)a)->blocknr;
	uint64_t y = (*(struct mqfs_buf *const *)b)->blocknr;

	return x < y ? -1 : x > y;
}

/* Copy @b into the journal image at @pos, sealed, and hand it over. */
static void jnl_snap_buf(struct mqfs_buf *b, void *copy, uint64_t seq)
{
	mqfs_buf_lock(b);
	/*
	 * journal_seq is the journal's own field: every commit carrying the
	 * superblock records the next sequence, so numbering goes on across
	 * clean unmounts (whose final commit always carries it).
	 */
	if (b->type == MQFS_T_SUPER && b->blocknr == 0)
		((struct mqfs_super *)b->data)->journal_seq = seq + 1;
	memcpy(copy, b->data, MQFS_BLOCK_SIZE);
	mqfs_blk_seal(copy, b->type, b->blocknr, seq);
	/* The live buffer carries the header it was committed with. */
	memcpy(b->data, copy, MQFS_HDR_SIZE);
	atomic_fetch_or(&b->flags, MQFS_BUF_CHECKPOINT);
	atomic_fetch_and(&b->flags, ~(unsigned)MQFS_BUF_DIRTY);
	mqfs_buf_unlock(b);
}

/* Descriptors and the commit block, once the copies are in place. */
static void jnl_build(struct mqfs_journal *j, struct jtxn *t)
{
	uint64_t start = j->fs->journal_start;
	struct mqfs_jcommit *c;
	uint64_t sec;
	struct timespec ts;

	for (unsigned k = 0; k < t->ndesc; k++) {
		struct mqfs_jdesc *d = jnl_blk(t->area, jnl_desc_pos(k));
		unsigned first = k * (unsigned)MQFS_JDESC_MAX;

		d->nr = MQ_MIN(t->nr - first, (unsigned)MQFS_JDESC_MAX);
		d->index = k;
		for (unsigned i = 0; i < d->nr; i++)
			d->home[i] = t->bufs[first + i]->blocknr;
		mqfs_blk_seal(d, MQFS_T_JDESC, start + jnl_desc_pos(k), t->seq);
	}
	c = jnl_blk(t->area, t->nr + t->ndesc);
	c->nr_blocks = t->nr;
	c->nr_desc = t->ndesc;
	c->body_csum = mqfs_hash(t->area,
				 (size_t)(t->nr + t->ndesc) * MQFS_BLOCK_SIZE);
	clock_gettime(CLOCK_REALTIME, &ts);
	sec = (uint64_t)ts.tv_sec;
	c->commit_sec = sec;
	c->commit_nsec = (uint32_t)ts.tv_nsec;
	mqfs_blk_seal(c, MQFS_T_JCOMMIT, start + t->nr + t->ndesc, t->seq);
}

/* Move the running list into @t (j->lock held); the seq moves on. */
static void jnl_take_running_locked(struct mqfs_journal *j, struct jtxn *t)
{
	struct mqfs_buf *b;
	unsigned i = 0;

	mq_list_for_each_entry_safe(b, &j->running, txn_link) {
		mq_list_del_init(&b->txn_link);
		t->bufs[i++] = b;
	}
	MQ_ASSERT(i == t->nr);
	j->nr_bufs = 0;
	t->seq = j->running_seq++;
	pthread_cond_broadcast(&j->cond);
}

/*
 * After an abort: drop the running transaction's buffers unwritten (the
 * journal keeps an older transaction; the next mount replays that).
 */
static void jnl_discard_locked(struct mqfs_journal *j)
{
	struct mqfs_buf *b;

	mq_list_for_each_entry_safe(b, &j->running, txn_link) {
		mq_list_del_init(&b->txn_link);
		atomic_fetch_and(&b->flags, ~(unsigned)MQFS_BUF_DIRTY);
		mqfs_buf_put(b);
	}
	j->nr_bufs = 0;
	j->running_seq++;
	pthread_cond_broadcast(&j->cond);
}

/*
 * Take the running transaction: 1 when there is none, 0 with @t filled
 * (copies sealed, buffers CHECKPOINT), -ENOMEM with nothing changed,
 * -EIO when the journal is aborted (the transaction is discarded).
 */
static int jnl_snapshot(struct mqfs_journal *j, struct jtxn *t)
{
	int ret = 1;

	pthread_rwlock_wrlock(&j->commit_rw);
	pthread_mutex_lock(&j->lock);
	MQ_ASSERT(j->reserved == 0);
	if (j->nr_bufs && j->aborted) {
		jnl_discard_locked(j);
		ret = -EIO;
	} else if (j->nr_bufs) {
		t->nr = j->nr_bufs;
		t->ndesc = jnl_ndesc(t->nr);
		t->bufs = malloc(t->nr * sizeof(*t->bufs));
		t->area = mqfs_alloc_blocks_mem(t->nr + t->ndesc + 1);
		ret = t->bufs && t->area ? 0 : -ENOMEM;
		if (!ret)
			jnl_take_running_locked(j, t);
	}
	pthread_mutex_unlock(&j->lock);
	if (!ret) {
		qsort(t->bufs, t->nr, sizeof(*t->bufs), jnl_cmp_buf);
		for (unsigned i = 0; i < t->nr; i++)
			jnl_snap_buf(t->bufs[i], jnl_blk(t->area, jnl_copy_pos(i)),
				     t->seq);
	}
	pthread_rwlock_unlock(&j->commit_rw);
	if (ret) {
		free(t->bufs);
		free(t->area);
		t->bufs = NULL;
		t->area = NULL;
		t->nr = 0;
	}
	return ret;
}

/* ---- commit: I/O ---------------------------------------------------------- */

static int jnl_io_error(struct jtxn *t, int err, uint64_t blk,
			const char *what)
{
	if (!t->err_what) {
		t->err_blk = blk;
		t->err_what = what;
	}
	return err;
}

static int jnl_flush(struct mqfs_journal *j, struct jtxn *t,
		     const char *what)
{
	int err = mqfs_flush_device(j->fs->q);

	return err ? jnl_io_error(t, err, 0, what) : 0;
}

/* Descriptors and copies, FLUSH, commit block, FLUSH. */
static int jnl_write(struct mqfs_journal *j, struct jtxn *t)
{
	struct mq_queue *q = j->fs->q;
	uint64_t start = j->fs->journal_start;
	unsigned body = t->nr + t->ndesc;
	struct mqfs_bio_batch batch;
	struct mq_plug plug;
	int err;

	if (body + 1 > j->fs->journal_blocks)
		return jnl_io_error(t, -ENOSPC, start,
				    "transaction larger than the journal");
	mqfs_batch_init(&batch);
	mq_start_plug(&plug, MQ_DIV_ROUND_UP(body, JNL_IO_CHUNK));
	for (unsigned pos = 0; pos < body; pos += JNL_IO_CHUNK)
		mqfs_batch_add(q, &batch, MQ_OP_WRITE, start + pos,
			       jnl_blk(t->area, pos),
			       MQ_MIN(JNL_IO_CHUNK, body - pos),
			       MQ_REQ_META | MQ_REQ_SYNC);
	err = mqfs_batch_wait(&batch);
	mq_finish_plug(&plug);
	if (err)
		return jnl_io_error(t, err, batch.error_blk, "journal write");
	err = jnl_flush(j, t, "journal flush");
	if (err)
		return err;
	err = mqfs_bio_sync(q, MQ_OP_WRITE, start + body,
			    jnl_blk(t->area, body), 1, MQ_REQ_META);
	if (err)
		return jnl_io_error(t, err, start + body, "journal commit write");
	return jnl_flush(j, t, "journal commit flush");
}

/* Every copy to its home block (sorted: neighbours merge), FLUSH. */
static int jnl_checkpoint(struct mqfs_journal *j, struct jtxn *t)
{
	struct mqfs_bio_batch batch;
	struct mq_plug plug;
	int err;

	mqfs_batch_init(&batch);
	mq_start_plug(&plug, t->nr);
	for (unsigned i = 0; i < t->nr; i++)
		mqfs_batch_add(j->fs->q, &batch, MQ_OP_WRITE,
			       t->bufs[i]->blocknr,
			       jnl_blk(t->area, jnl_copy_pos(i)), 1,
			       MQ_REQ_META | MQ_REQ_SYNC);
	err = mqfs_batch_wait(&batch);
	mq_finish_plug(&plug);
	if (err)
		return jnl_io_error(t, err, batch.error_blk, "checkpoint write");
	return jnl_flush(j, t, "checkpoint flush");
}

/* The buffers are home (or given up): unpin them, free the image. */
static void jnl_release(struct jtxn *t)
{
	for (unsigned i = 0; i < t->nr; i++) {
		atomic_fetch_and(&t->bufs[i]->flags,
				 ~(unsigned)MQFS_BUF_CHECKPOINT);
		mqfs_buf_put(t->bufs[i]);
	}
	free(t->bufs);
	free(t->area);
}

static bool jnl_aborted(struct mqfs_journal *j)
{
	bool aborted;

	pthread_mutex_lock(&j->lock);
	aborted = j->aborted;
	pthread_mutex_unlock(&j->lock);
	return aborted;
}

static void jnl_abort(struct mqfs_journal *j)
{
	pthread_mutex_lock(&j->lock);
	j->aborted = true;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

static void jnl_durable(struct mqfs_journal *j, struct jtxn *t)
{
	pthread_mutex_lock(&j->lock);
	j->durable_seq = t->seq;
	j->commits++;
	j->blocks_logged += t->nr;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

/* One whole commit (commit_mutex held): 0, 1 when empty, or -errno. */
static int jnl_commit_locked(struct mqfs_journal *j, struct jtxn *t)
{
	int err = jnl_snapshot(j, t);

	if (err)
		return err;
	jnl_build(j, t);
	err = jnl_write(j, t);
	if (!err) {
		jnl_durable(j, t);
		err = jnl_checkpoint(j, t);
	}
	if (err)
		jnl_abort(j);
	else if (j->fs->checkpointed)
		j->fs->checkpointed(j->fs, t->seq);
	jnl_release(t);
	return err;
}

/* Commit the running transaction, if any.  0 or -errno. */
static int jnl_commit_run(struct mqfs_journal *j)
{
	struct jtxn t = { 0 };
	int err;

	pthread_mutex_lock(&j->commit_mutex);
	err = jnl_commit_locked(j, &t);
	pthread_mutex_unlock(&j->commit_mutex);
	/* No journal lock held: the error path may start a handle. */
	if (t.err_what)
		mqfs_fs_error(j->fs, t.err_blk, "%s of transaction %" PRIu64
			      " failed (%d), journal aborted", t.err_what,
			      t.seq, err);
	return err == 1 ? 0 : err;
}

/* ---- waiting ------------------------------------------------------------ */

int mqfs_journal_wait_seq(struct mqfs_fs *fs, uint64_t seq)
{
	struct mqfs_journal *j = jnl_of(fs);
	int err = 0;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		if (j->durable_seq >= seq)
			break;
		if (j->aborted) {
			err = -EIO;
			break;
		}
		if (seq >= j->running_seq) {
			if (mq_list_empty(&j->running))
				break;	/* nothing to make durable */
			pthread_mutex_unlock(&j->lock);
			err = jnl_commit_run(j);
			pthread_mutex_lock(&j->lock);
			if (err)
				break;
			continue;
		}
		pthread_cond_wait(&j->cond, &j->lock);	/* being committed */
	}
	pthread_mutex_unlock(&j->lock);
	return err;
}

/*
 * Records kept in memory join the running transaction (fs->pre_commit).
 * The hook's owner may go away (unmount frees the inode cache first):
 * calls hold hook_rw shared, mqfs_journal_set_pre_commit exclusive; the
 * commit thread only tries, and skips the hook while it changes.
 */
static int jnl_pre_commit(struct mqfs_journal *j, bool wait)
{
	struct mqfs_fs *fs = j->fs;
	int err = 0;

	if (wait)
		pthread_rwlock_rdlock(&j->hook_rw);
	else if (pthread_rwlock_tryrdlock(&j->hook_rw))
		return 0;
	if (fs->pre_commit)
		err = fs->pre_commit(fs, wait);
	pthread_rwlock_unlock(&j->hook_rw);
	return err;
}

void mqfs_journal_set_pre_commit(struct mqfs_fs *fs,
				 int (*fn)(struct mqfs_fs *fs, bool wait))
{
	struct mqfs_journal *j = jnl_of(fs);

	if (j)
		pthread_rwlock_wrlock(&j->hook_rw);
	fs->pre_commit = fn;
	if (j)
		pthread_rwlock_unlock(&j->hook_rw);
}

int mqfs_journal_commit(struct mqfs_fs *fs)
{
	struct mqfs_journal *j = jnl_of(fs);
	uint64_t seq;
	int err = jnl_pre_commit(j, true);

	if (err)
		return err;
	pthread_mutex_lock(&j->lock);
	seq = j->running_seq;
	if (mq_list_empty(&j->running))
		seq--;		/* a commit in flight may hold the caller's */
	pthread_mutex_unlock(&j->lock);
	return mqfs_journal_wait_seq(fs, seq);
}

/*
 * The checkpoint runs under commit_mutex: once we hold it, every durable
 * transaction is home and its freed blocks are released.
 */
int mqfs_journal_sync(struct mqfs_fs *fs)
{
	struct mqfs_journal *j = jnl_of(fs);
	int err = mqfs_journal_commit(fs);

	pthread_mutex_lock(&j->commit_mutex);
	if (!err && jnl_aborted(j))
		err = -EIO;
	pthread_mutex_unlock(&j->commit_mutex);
	return err;
}

uint64_t mqfs_journal_durable_seq(struct mqfs_fs *fs)
{
	struct mqfs_journal *j = jnl_of(fs);
	uint64_t seq;

	pthread_mutex_lock(&j->lock);
	seq = j->durable_seq;
	pthread_mutex_unlock(&j->lock);
	return seq;
}

void mqfs_journal_stats(struct mqfs_fs *fs, uint64_t *commits,
			uint64_t *blocks)
{
	struct mqfs_journal *j = jnl_of(fs);

	pthread_mutex_lock(&j->lock);
	*commits = j->commits;
	*blocks = j->blocks_logged;
	pthread_mutex_unlock(&j->lock);
}

/* ---- the commit thread ------------------------------------------------------ */

/* Commit every interval (counted from the last commit), or when kicked. */
static void *jnl_thread(void *arg)
{
	struct mqfs_journal *j = arg;
	uint64_t interval_ns = j->interval_ms * 1000000ull;

	while (mq_kthread_wait(&j->kt, mq_clock_real_ns() + interval_ns)) {
		jnl_pre_commit(j, false);
		jnl_commit_run(j);
	}
	return NULL;
}

/* ---- life cycle --------------------------------------------------------- */

static void jnl_init_locks(struct mqfs_journal *j)
{
	pthread_rwlockattr_t ra;

	pthread_rwlockattr_init(&ra);
	/* Writer preference: a stream of handles must not starve commits. */
	pthread_rwlockattr_setkind_np(&ra,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&j->commit_rw, &ra);
	pthread_rwlock_init(&j->hook_rw, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_cond_init(&j->cond, NULL);
	pthread_mutex_init(&j->lock, NULL);
	pthread_mutex_init(&j->commit_mutex, NULL);
}

static void jnl_free(struct mqfs_journal *j)
{
	MQ_ASSERT(mq_list_empty(&j->running));
	pthread_mutex_destroy(&j->commit_mutex);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	pthread_rwlock_destroy(&j->commit_rw);
	pthread_rwlock_destroy(&j->hook_rw);
	free(j);
}

int mqfs_journal_create(struct mqfs_fs *fs)
{
	struct mqfs_journal *j;
	uint64_t seq;
	int err;

	if (fs->journal_blocks < 3 || !fs->journal_start ||
	    fs->journal_start + fs->journal_blocks > fs->block_count)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->fs = fs;
	jnl_init_locks(j);
	mq_list_init(&j->running);
	j->limit = jnl_limit(fs->journal_blocks);
	j->interval_ms = fs->opts.commit_interval_ms ?
			 fs->opts.commit_interval_ms : JNL_DEFAULT_INTERVAL_MS;
	seq = mqfs_journal_sb_seq(fs);
	j->running_seq = seq ? seq : 1;
	j->durable_seq = j->running_seq - 1;
	mq_kthread_init(&j->kt);
	err = mq_kthread_start(&j->kt, "mqfs-commit", jnl_thread, j);
	if (err) {
		mq_kthread_stop(&j->kt);
		jnl_free(j);
		return err;
	}
	fs->journal = j;
	return 0;
}

int mqfs_journal_destroy(struct mqfs_fs *fs)
{
	struct mqfs_journal *j = jnl_of(fs);
	int err, pre;

	if (!j)
		return 0;
	pre = jnl_pre_commit(j, true);
	err = jnl_commit_run(j);
	if (err == -ENOMEM) {
		/* Cannot write it, cannot keep it: give it up, loudly. */
		mqfs_fs_error(fs, fs->journal_start, "journal: no memory for "
			      "the final commit, changes lost");
		jnl_abort(j);
		jnl_commit_run(j);
	}
	mq_kthread_stop(&j->kt);
	if (!err && jnl_aborted(j))
		err = -EIO;
	if (!err)
		err = pre;
	fs->journal = NULL;
	jnl_free(j);
	return err;
}

int mqfs_journal_clear(struct mqfs_fs *fs)
{
	struct mqfs_journal *j = jnl_of(fs);
	void *zero = mqfs_alloc_blocks_mem(1);
	int err;

	if (!zero)
		return -ENOMEM;
	if (j)
		pthread_mutex_lock(&j->commit_mutex);	/* no checkpoint runs */
	err = j && jnl_aborted(j) ? -EIO : 0;
	if (!err)
		err = mqfs_bio_sync(fs->q, MQ_OP_WRITE, fs->journal_start, zero,
				    1, MQ_REQ_META);
	if (!err)
		err = mqfs_flush_device(fs->q);
	if (j)
		pthread_mutex_unlock(&j->commit_mutex);
	free(zero);
	return err;
}
