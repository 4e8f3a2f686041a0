/* SPDX-License-Identifier: MIT */
/*
 * t_fsio.h - synchronous wrappers around the filesystem's asynchronous
 * mqfs_read/mqfs_write, for the src/fs unit tests.  Prefix t_.
 */
#ifndef MQFS_TESTS_T_FSIO_H
#define MQFS_TESTS_T_FSIO_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mqfs/fs.h"

struct t_wait {
	pthread_mutex_t m;
	pthread_cond_t c;
	bool done;
	int calls;
	ssize_t res;
	uint8_t *dst;
	size_t cap;
};

static inline void t_wait_init(struct t_wait *w, void *dst, size_t cap)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->m, NULL);
	pthread_cond_init(&w->c, NULL);
	w->dst = dst;
	w->cap = cap;
}

static inline void t_wait_signal(struct t_wait *w, ssize_t res)
{
	pthread_mutex_lock(&w->m);
	w->res = res;
	w->calls++;
	w->done = true;
	pthread_cond_broadcast(&w->c);
	pthread_mutex_unlock(&w->m);
}

/*
 * The device reads into aligned memory the caller provides (a FUSE
 * request slot in the daemon); the reply is copied out to @dst.
 */
static inline void *t_read_room(uint64_t off, size_t size)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, (size_t)MQFS_READ_ROOM(off, size) + 4096))
		return NULL;
	return p;
}

/*
 * Wait for the reply.  It must come exactly once: a second call would
 * find calls > 1 (when it comes before we look) -> -EPROTO.  No Check
 * assertion here: worker threads use it too.
 */
static inline ssize_t t_wait_end(struct t_wait *w)
{
	ssize_t res;

	pthread_mutex_lock(&w->m);
	while (!w->done)
		pthread_cond_wait(&w->c, &w->m);
	res = w->calls == 1 ? w->res : -EPROTO;
	pthread_mutex_unlock(&w->m);
	pthread_cond_destroy(&w->c);
	pthread_mutex_destroy(&w->m);
	return res;
}

static inline void t_read_done(void *arg, const void *data, ssize_t res)
{
	struct t_wait *w = arg;

	/* Never more than asked; checked by the caller through res. */
	if (res > 0 && data && (size_t)res <= w->cap)
		memcpy(w->dst, data, (size_t)res);
	t_wait_signal(w, res);
}

static inline void t_write_done(void *arg, ssize_t res)
{
	t_wait_signal(arg, res);
}

static inline ssize_t t_read(struct mqfs_fs *fs, struct mqfs_file *f,
			     uint64_t off, void *buf, size_t size)
{
	void *room = t_read_room(off, size);
	struct mqfs_io io;
	struct t_wait w;
	ssize_t res;

	if (!room)
		return -ENOMEM;
	t_wait_init(&w, buf, size);
	mqfs_read(fs, f, off, size, room, &io, t_read_done, &w);
	res = t_wait_end(&w);
	free(room);
	return res > (ssize_t)size ? -EOVERFLOW : res;
}

/* A write; @short_err (may be NULL) gets why it stopped short. */
static inline ssize_t t_write_why(struct mqfs_fs *fs, struct mqfs_file *f,
				  uint64_t off, const void *buf, size_t size,
				  int *short_err)
{
	struct mqfs_io io = { .short_err = 1 };	/* never a real value */
	struct t_wait w;
	ssize_t res;

	t_wait_init(&w, NULL, 0);
	mqfs_write(fs, f, off, buf, size, &io, t_write_done, &w);
	res = t_wait_end(&w);
	if (short_err)
		*short_err = io.short_err;
	return res;
}

static inline ssize_t t_write(struct mqfs_fs *fs, struct mqfs_file *f,
			      uint64_t off, const void *buf, size_t size)
{
	return t_write_why(fs, f, off, buf, size, NULL);
}

/* The kernel's write-back of its page cache (FUSE_WRITE_CACHE). */
static inline ssize_t t_writeback(struct mqfs_fs *fs, struct mqfs_file *f,
				  uint64_t off, const void *buf, size_t size)
{
	struct mqfs_io io = { .writeback = true };
	struct t_wait w;

	t_wait_init(&w, NULL, 0);
	mqfs_write(fs, f, off, buf, size, &io, t_write_done, &w);
	return t_wait_end(&w);
}

#endif /* MQFS_TESTS_T_FSIO_H */
