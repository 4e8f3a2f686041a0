// SPDX-License-Identifier: MIT
/*
 * databuf.c - the mount's large data buffers (bounce buffers of reads and
 * writes, read-ahead windows).
 *
 * They are big (128 KiB - 4 MiB), short-lived and freed by other threads
 * than the ones that took them.  From malloc that pattern grows the
 * process without bound: glibc raises its mmap threshold after the first
 * free of a large chunk, and from then on serves them from per-thread
 * arenas that fragment (measured: a 1 GiB sequential read at 1 MiB x 8
 * left the daemon at 350 MiB RSS).  Here they are mmap()ed in
 * power-of-two classes and kept on a free list per class, up to
 * DB_CACHE_BYTES in all, so a steady stream maps nothing and memory is
 * what is in flight plus that cache.  Smaller buffers stay with malloc.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "fs_i.h"

#define DB_MIN_SHIFT	17u			/* 128 KiB */
#define DB_NR_CLASSES	6u			/* .. 4 MiB */
#define DB_CACHE_BYTES	(32u << 20)

struct mqfs_databuf {
	pthread_mutex_t lock;
	void *free_list[DB_NR_CLASSES];		/* linked in place */
	size_t cached;
};

int mqfs_databuf_create(struct mqfs_fs *fs)
{
	struct mqfs_databuf *db = calloc(1, sizeof(*db));

	if (!db)
		return -ENOMEM;
	pthread_mutex_init(&db->lock, NULL);
	fs->databuf = db;
	return 0;
}

static size_t db_class_bytes(unsigned c)
{
	return (size_t)1 << (DB_MIN_SHIFT + c);
}

/* The class of @bytes (>= the minimum), or DB_NR_CLASSES when larger. */
static unsigned db_class(size_t bytes)
{
	unsigned c = 0;

	while (c < DB_NR_CLASSES && db_class_bytes(c) < bytes)
		c++;
	return c;
}

static void *db_map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void mqfs_databuf_destroy(struct mqfs_fs *fs)
{
	struct mqfs_databuf *db = fs->databuf;

	if (!db)
		return;
	for (unsigned c = 0; c < DB_NR_CLASSES; c++)
		while (db->free_list[c]) {
			void *p = db->free_list[c];

			db->free_list[c] = *(void **)p;
			munmap(p, db_class_bytes(c));
		}
	pthread_mutex_destroy(&db->lock);
	free(db);
	fs->databuf = NULL;
}

void *mqfs_databuf_get(struct mqfs_fs *fs, size_t bytes)
{
	struct mqfs_databuf *db = fs->databuf;
	unsigned c;
	void *p;

	if (bytes < db_class_bytes(0))
		return posix_memalign(&p, MQFS_BLOCK_SIZE, bytes ? bytes : 1) ?
		       NULL : p;
	c = db_class(bytes);
	if (c == DB_NR_CLASSES)
		return db_map(bytes);
	pthread_mutex_lock(&db->lock);
	p = db->free_list[c];
	if (p) {
		db->free_list[c] = *(void **)p;
		db->cached -= db_class_bytes(c);
	}
	pthread_mutex_unlock(&db->lock);
	return p ? p : db_map(db_class_bytes(c));
}

void mqfs_databuf_put(struct mqfs_fs *fs, void *p, size_t bytes)
{
	struct mqfs_databuf *db = fs->databuf;
	bool keep = false;
	unsigned c;

	if (!p)
		return;
	if (bytes < db_class_bytes(0)) {
		free(p);
		return;
	}
	c = db_class(bytes);
	if (c == DB_NR_CLASSES) {
		munmap(p, bytes);
		return;
	}
	pthread_mutex_lock(&db->lock);
	if (db->cached + db_class_bytes(c) <= DB_CACHE_BYTES) {
		*(void **)p = db->free_list[c];
		db->free_list[c] = p;
		db->cached += db_class_bytes(c);
		keep = true;
	}
	pthread_mutex_unlock(&db->lock);
	if (!keep)
		munmap(p, db_class_bytes(c));
}
