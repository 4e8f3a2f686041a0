// SPDX-License-Identifier: MIT
/*
 * file.c - file data: read and write.  Truncate, fallocate and
 * SEEK_DATA/HOLE are fspace.c's; the helpers both use are in file_i.h.
 *
 * Data never enters the buffer cache: every read and write is built as
 * bios on 4 KiB-aligned bounce buffers (real devices use O_DIRECT), at
 * most 1 MiB each, submitted inside a plug.
 *
 * Reads and overwrites of written blocks are asynchronous: the mapping
 * is looked up under the inode lock (shared), the I/O is counted with
 * mqfs_ino_dio_start() so truncate and punch wait for it, the lock is
 * dropped and the last bio to complete replies.  Completion does no
 * metadata work (the overwrite's time update is journaled before the
 * submit), so it may run in any thread.
 *
 * Everything that changes the mapping runs synchronously under the
 * exclusive lock, a handle's worth at a time: allocate the holes, write
 * the data and wait for it, then insert the extents (or mark unwritten
 * ones written) and set the size in that same handle.  The data is on
 * the device before the transaction that points at it can commit
 * (ordered data), and a crash never leaves allocated blocks without an
 * owner.  Each handle does at most mqfs_file_ops_per_handle() extent changes,
 * so its credits fit even the smallest journal.
 *
 * The size limit is MQFS_MAX_FILE_BYTES (64 TiB).  Timestamps: writes,
 * truncate and fallocate set mtime/ctime; a read moves atime by the
 * mount's atime mode, in memory, for the next commit to write (atime.c):
 * no metadata update per read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file_i.h"

#define FILE_CHUNK_BLOCKS	256u	/* blocks written per handle */
#define FILE_MAX_RUNS		32u	/* mapping pieces per chunk */
#define FILE_AIO_INLINE		4u	/* bios carried in the request */

/* ---- asynchronous reads and overwrites --------------------------------- */

/*
 * One read or overwrite in flight, in the caller's struct mqfs_io.  The
 * bios point into the caller's memory (@buf); only a write of data not
 * 4 KiB-aligned in memory goes through a bounce buffer of its own.
 */
struct file_aio {
	struct mqfs_fs *fs;
	struct mqfs_ino *ip;
	struct mqfs_file *f;		/* a read's file, counted in f->reads */
	bool is_write;
	mqfs_read_done_t read_done;
	mqfs_write_done_t write_done;
	void *arg;
	char *buf;			/* whole blocks, 4 KiB aligned */
	char *bounce;			/* @buf when it is ours, or NULL */
	uint64_t nblocks;		/* @buf's size */
	size_t skew, len;		/* the caller's bytes within @buf */
	uint16_t bio_flags;		/* MQ_REQ_SYNC, perhaps POLLED */
	struct mqfs_bioset set;
	struct mq_bio inline_bios[FILE_AIO_INLINE];
};

_Static_assert(sizeof(struct file_aio) <= sizeof(struct mqfs_io),
	       "struct file_aio must fit in struct mqfs_io");
_Static_assert(_Alignof(struct file_aio) <= _Alignof(struct mqfs_io),
	       "struct mqfs_io is aligned for struct file_aio");

static void file_aio_done(struct mqfs_bioset *s);

static struct file_aio *file_aio_init(struct mqfs_io *io, struct mqfs_fs *fs,
				      struct mqfs_ino *ip, void *buf,
				      uint64_t nblocks)
{
	struct file_aio *a = (struct file_aio *)io->opaque;

	/*
	 * The caller's own I/O: only its completion (and the inode's I/O
	 * count, whose waiters poll) waits for it, so it may go to the
	 * caller's poll queue (a FUSE ring thread's: ring.c).
	 */
	*a = (struct file_aio){ .fs = fs, .ip = ip, .buf = buf,
				.nblocks = nblocks,
				.bio_flags = MQ_REQ_SYNC | MQ_REQ_POLLED };
	mqfs_bioset_init(&a->set, a->inline_bios, FILE_AIO_INLINE,
			 file_aio_done);
	return a;
}

/* Only what the request allocated beyond its struct mqfs_io. */
static void file_aio_free(struct file_aio *a)
{
	mqfs_bioset_release(&a->set);
	if (a->bounce)
		file_buf_free(a->fs, a->bounce, a->nblocks);
}

void mqfs_file_reads_init(struct mqfs_file *f)
{
	pthread_mutex_init(&f->reads_lock, NULL);
	pthread_cond_init(&f->reads_cond, NULL);
	f->reads = 0;
}

static void file_reads_begin(struct mqfs_file *f)
{
	pthread_mutex_lock(&f->reads_lock);
	f->reads++;
	pthread_mutex_unlock(&f->reads_lock);
}

/* The last thing a read does with @f: it may be freed at once after. */
static void file_reads_end(struct mqfs_file *f)
{
	pthread_mutex_lock(&f->reads_lock);
	MQ_ASSERT(f->reads > 0);
	if (!--f->reads)
		pthread_cond_broadcast(&f->reads_cond);
	pthread_mutex_unlock(&f->reads_lock);
}

void mqfs_file_reads_drain(struct mqfs_fs *fs, struct mqfs_file *f)
{
	bool polled = mq_queue_polls_used(fs->q);

	/* A read we wait for may sit in this thread's plug. */
	mq_flush_plug();
	pthread_mutex_lock(&f->reads_lock);
	while (f->reads) {
		if (!polled) {
			pthread_cond_wait(&f->reads_cond, &f->reads_lock);
			continue;
		}
		pthread_mutex_unlock(&f->reads_lock);
		mq_queue_poll_polled_nap(fs->q);
		pthread_mutex_lock(&f->reads_lock);
	}
	pthread_mutex_unlock(&f->reads_lock);
	pthread_cond_destroy(&f->reads_cond);
	pthread_mutex_destroy(&f->reads_lock);
}

/*
 * All bios are done.  The inode's I/O count drops before the reply: the
 * reply may let the front end release (and free) the inode.  A read may
 * be answered early (interrupted) and its file released meanwhile: the
 * release waits for the file's read count, dropped last.  Nothing of @a
 * is touched after the callback: it may reuse the memory at once.
 */
static void file_aio_done(struct mqfs_bioset *s)
{
	struct file_aio *a = mq_container_of(s, struct file_aio, set);
	int err = mqfs_bioset_error(s);
	mqfs_write_done_t write_done = a->write_done;
	mqfs_read_done_t read_done = a->read_done;
	const char *data = a->buf + a->skew;
	ssize_t res = err ? err : (ssize_t)a->len;
	struct mqfs_file *f = a->f;
	void *arg = a->arg;

	mqfs_ino_dio_end(a->ip);
	if (a->is_write)
		mqfs_ino_data_changed(a->ip);
	file_aio_free(a);
	if (write_done) {
		write_done(arg, res);
	} else {
		read_done(arg, err ? NULL : data, res);
		file_reads_end(f);
	}
}

/* Bios for the written blocks of [first, first+nblk); zeroes elsewhere. */
static int file_read_map(struct mqfs_fs *fs, struct file_aio *a,
			 uint64_t first, uint64_t nblk)
{
	for (uint64_t i = 0; i < nblk;) {
		struct mqfs_map m;
		int err = file_map(fs, a->ip, first + i, nblk - i, &m);

		if (err)
			return err;
		if (m.pblk && !m.unwritten)
			err = mqfs_bioset_add(&a->set, MQ_OP_READ, m.pblk,
					      a->buf + i * FILE_BS, m.len,
					      a->bio_flags);
		else
			memset(a->buf + i * FILE_BS, 0, m.len * FILE_BS);
		if (err)
			return err;
		i += m.len;
	}
	return 0;
}

/*
 * The class of @f's data I/O from here on (mq_set_task_prio): its
 * policy's when the caller has none, the lower of the two otherwise.
 * Returns the caller's, to put back.
 */
static enum mq_prio_class file_prio_begin(const struct mqfs_file *f)
{
	static const uint8_t rank[] = {
		[MQ_PRIO_NONE] = 2, [MQ_PRIO_RT] = 3, [MQ_PRIO_BE] = 2,
		[MQ_PRIO_IDLE] = 1,
	};
	enum mq_prio_class caller = mq_task_prio();

	if (f->prio != MQ_PRIO_NONE &&
	    (caller == MQ_PRIO_NONE || rank[f->prio] < rank[caller]))
		mq_set_task_prio((enum mq_prio_class)f->prio);
	return caller;
}

static void file_read_device(struct mqfs_fs *fs, struct mqfs_file *f,
			     uint64_t off, size_t size, void *buf,
			     struct mqfs_io *io, mqfs_read_done_t done,
			     void *arg, bool own);

void mqfs_read(struct mqfs_fs *fs, struct mqfs_file *f, uint64_t off,
	       size_t size, void *buf, struct mqfs_io *io,
	       mqfs_read_done_t done, void *arg)
{
	enum mq_prio_class caller = file_prio_begin(f);
	struct mqfs_ra_win *w = NULL;

	/* Answered, the read may be released meanwhile: not before this. */
	file_reads_begin(f);
	mqfs_ino_accessed(fs, f->ip);
	if (f->dontcache) {
		if (mqfs_ra_serve(fs, f, off, size, done, arg))
			goto out;
		w = mqfs_ra_note(fs, f, off, size);
	}
	file_read_device(fs, f, off, size, buf, io, done, arg, true);
	mqfs_ra_start(fs, f, w);
out:
	mq_set_task_prio(caller);
	file_reads_end(f);
}

/*
 * @own: the caller's read, not a read-ahead window, which readers of
 * the window wait for without polling (readahead.c).
 */
static void file_read_device(struct mqfs_fs *fs, struct mqfs_file *f,
			     uint64_t off, size_t size, void *buf,
			     struct mqfs_io *io, mqfs_read_done_t done,
			     void *arg, bool own)
{
	struct mqfs_ino *ip = f->ip;
	struct file_aio *a;
	uint64_t len, first, nblk;
	int err;

	mqfs_file_lock(ip, false);
	while (mqfs_wback_conflict(fs, ip, off, size)) {
		pthread_rwlock_unlock(&ip->lock);
		mqfs_wback_sync(fs, ip);
		mqfs_file_lock(ip, false);
	}
	if (!size || off >= ip->d.size) {
		pthread_rwlock_unlock(&ip->lock);
		done(arg, "", 0);
		return;
	}
	len = MQ_MIN((uint64_t)size, ip->d.size - off);
	first = file_blk(off);
	nblk = file_blk_up(off + len) - first;
	a = file_aio_init(io, fs, ip, buf, nblk);
	if (!own)
		a->bio_flags = MQ_REQ_SYNC;
	a->skew = off & FILE_MASK;
	a->len = (size_t)len;
	a->read_done = done;
	a->arg = arg;
	err = file_read_map(fs, a, first, nblk);
	if (err) {
		pthread_rwlock_unlock(&ip->lock);
		file_aio_free(a);
		done(arg, NULL, err);
		return;
	}
	mqfs_ino_dio_start(ip);
	pthread_rwlock_unlock(&ip->lock);
	a->f = f;
	file_reads_begin(f);
	/* @a may be ended and reused before this returns. */
	mqfs_bioset_submit(fs->q, &a->set);
}

void mqfs_file_read_device(struct mqfs_fs *fs, struct mqfs_file *f,
			   uint64_t off, size_t size, void *buf,
			   struct mqfs_io *io, mqfs_read_done_t done,
			   void *arg)
{
	file_read_device(fs, f, off, size, buf, io, done, arg, false);
}

/* 1 when all of [first, first+nblk) is written blocks (bios added). */
static int file_write_map(struct mqfs_fs *fs, struct file_aio *a,
			  uint64_t first, uint64_t nblk)
{
	for (uint64_t i = 0; i < nblk;) {
		struct mqfs_map m;
		int err = file_map(fs, a->ip, first + i, nblk - i, &m);

		if (err)
			return err;
		if (!m.pblk || m.unwritten)
			return 0;
		err = mqfs_bioset_add(&a->set, MQ_OP_WRITE, m.pblk,
				      a->buf + i * FILE_BS, m.len,
				      a->bio_flags);
		if (err)
			return err;
		i += m.len;
	}
	return 1;
}

/*
 * The memory the device writes from: the caller's data where it lies
 * when it is block-aligned (the FUSE front end receives it so), else a
 * copy.  NULL only when no bounce buffer could be had.
 */
static char *file_write_mem(struct file_aio *a, const void *data, size_t size)
{
	if (!((uintptr_t)data & FILE_MASK))
		return (char *)data;
	a->bounce = file_buf_alloc(a->fs, a->nblocks);
	if (a->bounce)
		memcpy(a->bounce, data, size);
	return a->bounce;
}

/*
 * The fast path: whole blocks, inside the file, all written already.
 * Only the times change, in memory: the next commit writes them
 * (mqfs_ino_touch_lazy).  False when the write needs the synchronous
 * path.
 */
static bool file_write_fast(struct mqfs_fs *fs, struct mqfs_file *f,
			    uint64_t off, const void *data, size_t size,
			    struct mqfs_io *io, mqfs_write_done_t done,
			    void *arg)
{
	struct mqfs_ino *ip = f->ip;
	struct file_aio *a;

	if ((off | size) & FILE_MASK || f->flags & (O_APPEND | O_DSYNC))
		return false;
	mqfs_file_lock(ip, false);
	if (off + size > ip->d.size)
		goto slow;		/* extends the file */
	a = file_aio_init(io, fs, ip, NULL, size / FILE_BS);
	a->buf = file_write_mem(a, data, size);
	if (!a->buf || file_write_map(fs, a, file_blk(off), a->nblocks) != 1) {
		file_aio_free(a);
		goto slow;
	}
	if (!io->writeback)
		mqfs_ino_touch_lazy(fs, ip);
	mqfs_ino_dio_start(ip);
	pthread_rwlock_unlock(&ip->lock);
	a->is_write = true;
	a->len = size;
	a->write_done = done;
	a->arg = arg;
	mqfs_bioset_submit(fs->q, &a->set);
	return true;
slow:
	pthread_rwlock_unlock(&ip->lock);
	return false;
}

/* ---- the synchronous write path ---------------------------------------- */

struct file_wr {
	struct mqfs_fs *fs;
	struct mqfs_ino *ip;
	const char *data;
	uint64_t off, end;		/* bytes of the whole write */
	unsigned max_ops;
	bool keep_cmtime;		/* struct mqfs_io's writeback */
};

enum file_run_kind { RUN_WRITTEN, RUN_UNWRITTEN, RUN_NEW };

/* A piece of the chunk: blocks [lblk, lblk+len) at @pblk. */
struct file_run {
	uint64_t lblk, pblk;
	uint32_t len;
	enum file_run_kind kind;
};

/* What one handle writes: blocks [first, end). */
struct file_chunk {
	uint64_t first, end;
	unsigned nruns;
	struct file_run run[FILE_MAX_RUNS];
};

/*
 * Map the chunk from c->first on, allocating its holes, until it is
 * FILE_CHUNK_BLOCKS long, has max_ops extent changes, or space runs out
 * (then c->end stops there; a chunk of nothing returns -ENOSPC).
 */
static int file_plan(struct file_wr *w, struct mqfs_handle *h,
		     struct file_chunk *c)
{
	uint64_t lblk = c->first, goal = 0;
	uint64_t limit = MQ_MIN(file_blk_up(w->end),
				c->first + FILE_CHUNK_BLOCKS);
	unsigned ops = 0;
	int err = 0;

	while (lblk < limit && c->nruns < FILE_MAX_RUNS) {
		struct file_run *r = &c->run[c->nruns];
		struct mqfs_map m;

		err = file_map(w->fs, w->ip, lblk, limit - lblk, &m);
		if (err)
			break;
		*r = (struct file_run){ .lblk = lblk, .pblk = m.pblk,
					.len = m.len, .kind = RUN_WRITTEN };
		if (!m.pblk || m.unwritten) {
			if (ops == w->max_ops)
				break;
			ops++;
			r->kind = RUN_UNWRITTEN;
		}
		if (!m.pblk) {
			if (!goal)
				goal = mqfs_file_goal(w->fs, w->ip, lblk);
			err = mqfs_alloc_blocks(h, goal, m.len, &r->pblk,
						&r->len);
			if (err)
				break;
			r->kind = RUN_NEW;
		}
		goal = r->pblk + r->len;
		lblk += r->len;
		c->nruns++;
	}
	c->end = lblk;
	if (err == -ENOSPC && c->end > c->first)
		err = 0;	/* a short write */
	return err;
}

/* Give back the blocks of runs allocated but not (yet) mapped. */
static void file_unplan(struct mqfs_handle *h, struct file_chunk *c)
{
	for (unsigned i = 0; i < c->nruns; i++)
		if (c->run[i].kind == RUN_NEW)
			mqfs_free_blocks(h, c->run[i].pblk, c->run[i].len);
}

/* Old contents of a partially written block: read, or zeroes. */
static int file_fill_edge(struct file_wr *w, const struct file_chunk *c,
			  char *buf, uint64_t lblk)
{
	char *dst = buf + (lblk - c->first) * FILE_BS;

	for (unsigned i = 0; i < c->nruns; i++) {
		const struct file_run *r = &c->run[i];

		if (lblk < r->lblk || lblk >= r->lblk + r->len)
			continue;
		if (r->kind != RUN_WRITTEN)
			break;
		return mqfs_bio_sync(w->fs->q, MQ_OP_READ,
				     r->pblk + (lblk - r->lblk), dst, 1, 0);
	}
	memset(dst, 0, MQFS_BLOCK_SIZE);
	return 0;
}

/* The chunk's blocks in @buf: bytes [pos, bend) new, the edges old. */
static int file_fill(struct file_wr *w, const struct file_chunk *c,
		     char *buf, uint64_t pos, uint64_t bend)
{
	int err = 0;

	if (pos & FILE_MASK)
		err = file_fill_edge(w, c, buf, file_blk(pos));
	if (!err && bend & FILE_MASK &&
	    (file_blk(bend) != file_blk(pos) || !(pos & FILE_MASK)))
		err = file_fill_edge(w, c, buf, file_blk(bend));
	if (!err)
		memcpy(buf + (pos - c->first * FILE_BS),
		       w->data + (pos - w->off), (size_t)(bend - pos));
	return err;
}

/* Write every run of the chunk and wait: the data precedes its mapping. */
static int file_write_runs(struct file_wr *w, const struct file_chunk *c,
			   char *buf)
{
	struct mqfs_bio_batch b;
	struct mq_plug plug;
	int err;

	mqfs_batch_init(&b);
	mq_start_plug(&plug, c->nruns);
	for (unsigned i = 0; i < c->nruns; i++) {
		const struct file_run *r = &c->run[i];

		mqfs_batch_add(w->fs->q, &b, MQ_OP_WRITE, r->pblk,
			       buf + (r->lblk - c->first) * FILE_BS, r->len,
			       MQ_REQ_SYNC);
	}
	err = mqfs_batch_wait(&b);
	mq_finish_plug(&plug);
	return err;
}

/* Map the written runs: new extents, unwritten ones now written. */
static int file_map_runs(struct file_wr *w, struct mqfs_handle *h,
			 struct file_chunk *c)
{
	for (unsigned i = 0; i < c->nruns; i++) {
		struct file_run *r = &c->run[i];
		int err = 0;

		if (r->kind == RUN_NEW)
			err = mqfs_extent_insert(h, w->ip, r->lblk, r->pblk,
						 r->len, 0);
		else if (r->kind == RUN_UNWRITTEN)
			err = mqfs_extent_mark_written(h, w->ip, r->lblk,
						       r->len);
		if (err)
			return err;
		r->kind = RUN_WRITTEN;
	}
	return 0;
}

/* One handle's worth of the write from byte @pos: bytes done or -errno. */
static ssize_t file_write_chunk(struct file_wr *w, uint64_t pos)
{
	struct file_chunk c = { .first = file_blk(pos) };
	struct mqfs_ino *ip = w->ip;
	struct mqfs_handle h;
	uint64_t bend = 0;
	char *buf = NULL;
	int err;

	err = mqfs_trans_start(w->fs, mqfs_file_credits(w->fs, w->max_ops), &h);
	if (err)
		return err;
	err = file_plan(w, &h, &c);
	if (!err) {
		bend = MQ_MIN(w->end, c.end * FILE_BS);
		buf = file_buf_alloc(w->fs, c.end - c.first);
		err = buf ? file_fill(w, &c, buf, pos, bend) : -ENOMEM;
	}
	if (!err)
		err = file_write_runs(w, &c, buf);
	if (!err)
		err = file_map_runs(w, &h, &c);
	if (!err) {
		if (bend > ip->d.size)
			ip->d.size = bend;
		if (!w->keep_cmtime)
			mqfs_touch(ip, false, true, true);
		err = mqfs_inode_dirty(&h, ip);
	}
	if (err)
		file_unplan(&h, &c);
	err = mqfs_trans_finish(&h, err);
	if (buf)
		file_buf_free(w->fs, buf, c.end - c.first);
	return err ? err : (ssize_t)(bend - pos);
}

/* Written synchronously; short: @io->short_err says why. */
static ssize_t file_write_slow(struct mqfs_fs *fs, struct mqfs_file *f,
			       uint64_t off, const void *data, size_t size,
			       struct mqfs_io *io)
{
	struct mqfs_ino *ip = f->ip;
	struct file_wr w = { .fs = fs, .ip = ip, .data = data,
			     .max_ops = mqfs_file_ops_per_handle(fs),
			     .keep_cmtime = io->writeback };
	bool retried = false;
	ssize_t err = 0;
	uint64_t pos;

	mqfs_file_lock(ip, true);
	if (f->flags & O_APPEND)
		off = ip->d.size;
	if (off >= MQFS_MAX_FILE_BYTES) {
		pthread_rwlock_unlock(&ip->lock);
		return -EFBIG;
	}
	w.off = off;
	w.end = off + MQ_MIN((uint64_t)size, MQFS_MAX_FILE_BYTES - off);
	for (pos = off; pos < w.end;) {
		ssize_t n = file_write_chunk(&w, pos);

		if (n >= 0)
			pos += (uint64_t)n;
		else if (!mqfs_retry_enospc(fs, (int)n, &retried)) {
			err = n;
			break;
		}
	}
	pthread_rwlock_unlock(&ip->lock);
	if (pos == off)
		return err;
	/* Short on ENOSPC or an error: report what was written. */
	if (pos < off + size)
		io->short_err = err ? (int)err : -EFBIG;
	if (f->flags & O_DSYNC) {
		int e = mqfs_fsync(fs, ip->ino, false);

		if (e)
			return e;
	}
	return (ssize_t)(pos - off);
}

static void file_write(struct mqfs_fs *fs, struct mqfs_file *f, uint64_t off,
		       const void *data, size_t size, struct mqfs_io *io,
		       mqfs_write_done_t done, void *arg)
{
	int err = mqfs_fs_writable(fs);
	ssize_t n;

	io->short_err = 0;
	if (err || !size) {
		done(arg, err);
		return;
	}
	mqfs_ino_data_changed(f->ip);
	/*
	 * The kernel's write-back of its page cache is answered from the
	 * write-behind as dontcache writes are: the kernel already holds the
	 * data, and its writer (a close, a utimensat, the flusher) need not
	 * wait for the device; fsync does.  Its last page may end the file
	 * mid-block (the kernel sends up to i_size).
	 */
	if ((f->dontcache || io->writeback) &&
	    !(f->flags & (O_DSYNC | O_SYNC)) &&
	    mqfs_wback_write(fs, f->ip, off, data, size, io->writeback, done,
			     arg))
		return;
	/* The direct way must not be overtaken by older write-behind. */
	mqfs_wback_sync(fs, f->ip);
	if (file_write_fast(fs, f, off, data, size, io, done, arg))
		return;
	n = file_write_slow(fs, f, off, data, size, io);
	mqfs_ino_data_changed(f->ip);
	done(arg, n);
}

void mqfs_write(struct mqfs_fs *fs, struct mqfs_file *f, uint64_t off,
		const void *data, size_t size, struct mqfs_io *io,
		mqfs_write_done_t done, void *arg)
{
	enum mq_prio_class caller = file_prio_begin(f);

	/* Answered, @f may be released: nothing of it is touched after. */
	file_write(fs, f, off, data, size, io, done, arg);
	mq_set_task_prio(caller);
}

int mqfs_fsync(struct mqfs_fs *fs, uint64_t ino, bool datasync)
{
	struct mqfs_ino *ip;
	int err, err2, err3;

	/*
	 * Direct data writes completed before they were answered, the
	 * write-behind is written back here; the journal holds the
	 * metadata.  The flush covers overwrites that changed no metadata
	 * (the commit may have had nothing to write).
	 */
	(void)datasync;
	err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	mqfs_wback_sync(fs, ip);
	err = mqfs_wback_take_error(fs, ip);
	mqfs_iput(fs, ip);
	err2 = mqfs_journal_commit(fs);
	err3 = mqfs_flush_device(fs->q);
	return err ? err : err2 ? err2 : err3;
}

int mqfs_flush(struct mqfs_fs *fs, struct mqfs_file *f)
{
	if (!f->dontcache)
		return 0;
	mqfs_wback_sync(fs, f->ip);
	return mqfs_wback_take_error(fs, f->ip);
}

enum mqfs_cache_mode mqfs_file_policy(struct mqfs_fs *fs,
				      struct mqfs_file *f)
{
	enum mqfs_cache_mode m;

	mqfs_file_lock(f->ip, false);
	m = mqfs_xattr_policy(fs, f->ip);
	pthread_rwlock_unlock(&f->ip->lock);
	return m;
}

void mqfs_file_set_dontcache(struct mqfs_file *f)
{
	f->dontcache = true;
}

bool mqfs_file_is_dontcache(const struct mqfs_file *f)
{
	return f->dontcache;
}
