// SPDX-License-Identifier: MIT
/*
 * readahead.c - the read-ahead windows of dontcache files.
 *
 * A dontcache file keeps nothing in the page cache (FOPEN_DIRECT_IO), so
 * the kernel reads nothing ahead: every read(2) of a sequential reader
 * waits for the device.  Each open file gets up to two windows instead:
 * once reads follow each other, the next stretch of the file (four
 * reads' worth, 256 KiB to 2 MiB) is read from the device, and while the
 * reader is answered from one window the one after it is being read, as
 * the kernel's async read-ahead does.  The windows are the only data
 * kept after a reply; each is dropped when consumed, when the reader
 * goes elsewhere, and at close.
 *
 * Locking: ra->lock is taken by the reaper (a window's read completing),
 * so it is never held while waiting for anything that needs I/O to
 * complete - no inode lock is taken under it.
 *
 * Staleness: every change of an inode's data (a write, at its start and
 * again before it is answered; truncate and fallocate, under the
 * exclusive lock once in-flight reads have drained) bumps ip->data_gen.
 * A window is served only if the generation is the one it was started
 * at, so a write that overlapped its life in any way discards it; one
 * that ended before it started is on the device (direct ways) or would
 * be found pending - and no window starts while the inode has
 * write-behind pending.
 */
#include <errno.h>
#include <string.h>

#include "fs_i.h"

#define RA_MIN		(256u << 10)
#define RA_MAX		(2u << 20)
#define RA_PER_READ	4u		/* a window: this many reads */

enum { RA_NONE, RA_READING, RA_READY };

void mqfs_ra_init(struct mqfs_ra *ra, mqfs_ra_read_t read)
{
	memset(ra, 0, sizeof(*ra));
	ra->read = read;
	pthread_mutex_init(&ra->lock, NULL);
	pthread_cond_init(&ra->cond, NULL);
}

static void ra_drop(struct mqfs_fs *fs, struct mqfs_ra_win *w)
{
	mqfs_databuf_put(fs, w->buf, w->cap);
	w->buf = NULL;
	w->state = RA_NONE;
}

void mqfs_ra_release(struct mqfs_fs *fs, struct mqfs_ra *ra)
{
	pthread_mutex_lock(&ra->lock);
	for (unsigned i = 0; i < 2; i++) {
		while (ra->win[i].state == RA_READING)
			pthread_cond_wait(&ra->cond, &ra->lock);
		ra_drop(fs, &ra->win[i]);
	}
	pthread_mutex_unlock(&ra->lock);
	pthread_cond_destroy(&ra->cond);
	pthread_mutex_destroy(&ra->lock);
}

/* A window's device read is back (any thread, maybe before the call
 * that started it returned): the data is in place, at @data. */
static void ra_fill_done(void *arg, const void *data, ssize_t res)
{
	struct mqfs_ra_win *w = arg;
	struct mqfs_ra *ra = w->ra;

	pthread_mutex_lock(&ra->lock);
	if (res > 0) {
		w->data = data;
		w->eof = (size_t)res < w->len;
		w->len = (size_t)res;
		w->state = RA_READY;
	} else {
		ra_drop(w->fs, w);	/* EOF, or an error the reader meets */
	}
	pthread_cond_broadcast(&ra->cond);
	pthread_mutex_unlock(&ra->lock);
}

/* The window holding [off, off+size) (or all of it up to EOF), if any. */
static struct mqfs_ra_win *ra_find(struct mqfs_ra *ra, uint64_t off,
				   size_t size)
{
	for (unsigned i = 0; i < 2; i++) {
		struct mqfs_ra_win *w = &ra->win[i];

		if (w->state != RA_NONE && off >= w->off &&
		    off < w->off + w->len &&
		    (off + size <= w->off + w->len || w->eof))
			return w;
	}
	return NULL;
}

/*
 * Claim a free window after everything read or being read ahead, for a
 * reader of @size: the window to start reading once ra->lock is
 * dropped, or NULL.
 */
static struct mqfs_ra_win *ra_prepare(struct mqfs_fs *fs, struct mqfs_ra *ra,
				      struct mqfs_ino *ip, size_t size)
{
	size_t len = MQ_MIN(MQ_MAX((size_t)RA_MIN, size * RA_PER_READ),
			    (size_t)RA_MAX);
	uint64_t start = ra->next;
	struct mqfs_ra_win *w = NULL;
	size_t cap;
	void *buf;

	for (unsigned i = 0; i < 2; i++) {
		struct mqfs_ra_win *x = &ra->win[i];

		if (x->state == RA_NONE)
			w = x;
		else if (x->eof)
			return NULL;	/* the file ends in a window */
		else
			start = MQ_MAX(start, x->off + x->len);
	}
	if (!w || mqfs_wback_pending(ip))
		return NULL;
	cap = (size_t)MQFS_READ_ROOM(start, len);
	buf = mqfs_databuf_get(fs, cap);
	if (!buf)
		return NULL;
	w->state = RA_READING;
	w->buf = buf;
	w->cap = cap;
	w->data = NULL;
	w->off = start;
	w->len = len;
	w->eof = false;
	w->gen = atomic_load(&ip->data_gen);
	w->fs = fs;
	w->ra = ra;
	return w;
}

void mqfs_ra_start(struct mqfs_fs *fs, struct mqfs_file *f,
		   struct mqfs_ra_win *w)
{
	if (w)
		f->ra.read(fs, f, w->off, w->len, w->buf, &w->io, ra_fill_done,
			   w);
}

/*
 * Answer from @w if it is current: bytes answered, or -ESTALE (the data
 * changed since the window was read: the caller reads).  No inode lock
 * (ra->lock is held, and the reaper may need it while the holder of the
 * inode lock waits for I/O): the window was clipped at EOF when it was
 * read, and the generation says nothing changed since - a truncate
 * racing with this read may come after it.
 */
static ssize_t ra_answer(struct mqfs_ra_win *w, struct mqfs_ino *ip,
			 uint64_t off, size_t size, mqfs_read_done_t done,
			 void *arg)
{
	ssize_t n;

	if (w->gen != atomic_load(&ip->data_gen))
		return -ESTALE;
	n = (ssize_t)(MQ_MIN(off + size, w->off + w->len) - off);
	done(arg, w->data + (off - w->off), n);
	return n;
}

/* Wait for the window of [off, off+size) if it is being read. */
static struct mqfs_ra_win *ra_wait(struct mqfs_ra *ra, uint64_t off,
				   size_t size)
{
	struct mqfs_ra_win *w;

	while ((w = ra_find(ra, off, size)) && w->state == RA_READING)
		pthread_cond_wait(&ra->cond, &ra->lock);
	return w;
}

bool mqfs_ra_serve(struct mqfs_fs *fs, struct mqfs_file *f, uint64_t off,
		   size_t size, mqfs_read_done_t done, void *arg)
{
	struct mqfs_ra *ra = &f->ra;
	struct mqfs_ra_win *w, *next = NULL;
	ssize_t n = -ENOENT;	/* no window */

	pthread_mutex_lock(&ra->lock);
	w = ra_wait(ra, off, size);
	if (w)
		n = ra_answer(w, f->ip, off, size, done, arg);
	if (n >= 0) {
		ra->next = off + (uint64_t)n;
		if (ra->next >= w->off + w->len)
			ra_drop(fs, w);		/* used up */
		if (n > 0)
			next = ra_prepare(fs, ra, f->ip, size);
	} else {
		/* Stale, or the reader went elsewhere: ready ones go. */
		for (unsigned i = 0; i < 2; i++)
			if (ra->win[i].state == RA_READY)
				ra_drop(fs, &ra->win[i]);
	}
	pthread_mutex_unlock(&ra->lock);
	mqfs_ra_start(fs, f, next);	/* @f lives: release waits for it */
	return n >= 0;
}

struct mqfs_ra_win *mqfs_ra_note(struct mqfs_fs *fs, struct mqfs_file *f,
				 uint64_t off, size_t size)
{
	struct mqfs_ra *ra = &f->ra;
	struct mqfs_ra_win *w = NULL;

	pthread_mutex_lock(&ra->lock);
	ra->streak = off == ra->next ? ra->streak + 1 : 0;
	ra->next = off + size;
	if (ra->streak)
		w = ra_prepare(fs, ra, f->ip, size);
	pthread_mutex_unlock(&ra->lock);
	return w;
}
