// SPDX-License-Identifier: MIT
/*
 * test_wback.c - the dontcache write-behind (src/fs/wback.c) through the
 * public calls: writes answered before they reach the device and read
 * back right after, sizes that grow before the write-back, rewrites of
 * pending bytes, random operations mixing write-behind with direct
 * writes, truncate and punch against a reference copy, remounts, a power
 * cut after fsync (everything there) and without it (no block ever
 * shows bytes that were not written to it), the memory bound under four
 * writers, files created, written, closed and unlinked by four threads
 * while the flusher works, plain opens bypassing it, EIO and ENOSPC
 * reported by fsync and close and nothing lost that was answered
 * otherwise; the flusher writes with the writer's priority class; the
 * kernel's write-back of a cached file, its last page ending mid-block.
 *
 * Failures name the step and the seed (T_WBACK_SEED reruns).
 */
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "t_fs.h"
#include "t_fsio.h"
#include "t_main.h"
#include "mqfs/dev/fault.h"

#define T_SIZE		(64 * T_FS_MIB)
#define T_KIB		1024ull
#define T_BS		4096u

static unsigned t_seed(unsigned dflt)
{
	const char *s = getenv("T_WBACK_SEED");

	return s ? (unsigned)strtoul(s, NULL, 0) : dflt;
}

/* Deterministic bytes of (@tag, @off): each write is recognisable. */
static void t_fill(uint8_t *buf, size_t len, uint64_t off, unsigned tag)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t x = (off + i) * 0x9e3779b97f4a7c15ull + tag * 131u;

		buf[i] = (uint8_t)(x >> 56);
	}
}

static uint64_t t_create(struct mqfs_fs *fs, uint64_t dir, const char *name)
{
	struct mqfs_entry e;
	int err = mqfs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &e);

	ck_assert_msg(err == 0, "mknod %s: %d", name, err);
	mqfs_forget(fs, e.ino, 1);
	return e.ino;
}

static struct mqfs_file *t_open(struct mqfs_fs *fs, uint64_t ino,
				bool dontcache)
{
	struct mqfs_file *f;
	int err = mqfs_open(fs, ino, O_RDWR, &f);

	ck_assert_msg(err == 0, "open %" PRIu64 ": %d", ino, err);
	if (dontcache)
		mqfs_file_set_dontcache(f);
	return f;
}

static uint64_t t_size(struct mqfs_fs *fs, uint64_t ino)
{
	struct stat st;

	ck_assert_int_eq(mqfs_getattr(fs, ino, &st), 0);
	return (uint64_t)st.st_size;
}

static void t_expect(struct mqfs_fs *fs, struct mqfs_file *f,
		     const uint8_t *model, uint64_t size, const char *what)
{
	uint8_t *buf = malloc(size + 1);
	ssize_t n = t_read(fs, f, 0, buf, size + 1);

	uint64_t i = 0;

	ck_assert_msg(n == (ssize_t)size, "%s: read %zd of %" PRIu64, what,
		      n, size);
	/* One assertion, not one per byte: Check records each it runs. */
	if (memcmp(buf, model, size))
		while (buf[i] == model[i])
			i++;
	else
		i = size;
	ck_assert_msg(i == size, "%s: byte %" PRIu64 " is %u, want %u",
		      what, i, buf[MQ_MIN(i, size - 1)],
		      model[MQ_MIN(i, size - 1)]);
	free(buf);
}

/* ---- write-behind basics ------------------------------------------------ */

START_TEST(test_write_read_back)
{
	const size_t chunk = 64 * T_KIB, n = 256;
	uint8_t *model = calloc(1, chunk * n), *buf = malloc(chunk);
	struct mqfs_wback_stats st;
	struct mqfs_file *f;
	struct t_fs t;
	uint64_t ino;

	t_fs_make(&t, T_SIZE);
	ino = t_create(t.fs, MQFS_ROOT_INO, "a");
	f = t_open(t.fs, ino, true);
	for (size_t i = 0; i < n; i++) {
		t_fill(buf, chunk, i * chunk, 1);
		ck_assert_int_eq(t_write(t.fs, f, i * chunk, buf, chunk),
				 (ssize_t)chunk);
		memcpy(model + i * chunk, buf, chunk);
		/* The size counts pending writes at once. */
		ck_assert_uint_eq(t_size(t.fs, ino), (i + 1) * chunk);
	}
	/* Rewrite some pending and written ranges. */
	for (size_t i = 0; i < n; i += 7) {
		t_fill(buf, chunk, i * chunk, 2);
		ck_assert_int_eq(t_write(t.fs, f, i * chunk, buf, chunk),
				 (ssize_t)chunk);
		memcpy(model + i * chunk, buf, chunk);
	}
	t_expect(t.fs, f, model, chunk * n, "before sync");
	ck_assert_int_eq(mqfs_flush(t.fs, f), 0);
	mqfs_get_wback_stats(t.fs, &st);
	ck_assert_uint_eq(st.dirty_bytes, 0);
	ck_assert_uint_ge(st.buffered_writes, n);
	ck_assert_uint_eq(st.direct_writes, 0);
	ck_assert_uint_ge(st.write_batches, 1);
	ck_assert_uint_le(st.buffers_dropped, st.buffered_writes);
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	t_fs_remount(&t);
	f = t_open(t.fs, ino, false);
	t_expect(t.fs, f, model, chunk * n, "after remount");
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	t_fs_destroy(&t);
	free(buf);
	free(model);
}
END_TEST

/*
 * The kernel's write-back of a cached file (cache=kernel) is taken by
 * the write-behind, its last page too, which ends the file mid-block:
 * the size is the write's end, not the block's, before and after the
 * write-back; the page written again with more bytes (an append) moves
 * it.  close owes nothing for a cached file; fsync writes it back.
 */
START_TEST(test_kernel_writeback_tail)
{
	uint8_t model[3 * T_BS], buf[3 * T_BS];
	struct mqfs_wback_stats st;
	struct mqfs_file *f;
	struct t_fs t;
	uint64_t ino;

	t_fs_make(&t, T_SIZE);
	ino = t_create(t.fs, MQFS_ROOT_INO, "c");
	f = t_open(t.fs, ino, false);
	t_fill(model, sizeof(model), 0, 3);
	ck_assert_int_eq(t_writeback(t.fs, f, 0, model, 1000), 1000);
	ck_assert_uint_eq(t_size(t.fs, ino), 1000);
	t_expect(t.fs, f, model, 1000, "tail pending");
	ck_assert_int_eq(t_writeback(t.fs, f, 0, model, T_BS), T_BS);
	ck_assert_int_eq(t_writeback(t.fs, f, T_BS, model + T_BS, 5000 - T_BS),
			 5000 - T_BS);
	ck_assert_uint_eq(t_size(t.fs, ino), 5000);
	mqfs_get_wback_stats(t.fs, &st);
	ck_assert_uint_eq(st.buffered_writes, 3);
	ck_assert_uint_eq(st.direct_writes, 0);
	ck_assert_int_eq(mqfs_flush(t.fs, f), 0);
	ck_assert_int_eq(mqfs_fsync(t.fs, ino, false), 0);
	mqfs_get_wback_stats(t.fs, &st);
	ck_assert_uint_eq(st.dirty_bytes, 0);
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	t_fs_remount(&t);
	ck_assert_uint_eq(t_size(t.fs, ino), 5000);
	f = t_open(t.fs, ino, false);
	t_expect(t.fs, f, model, 5000, "after remount");
	/* The block's bytes past the end read as zeroes once it grows. */
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(t_write(t.fs, f, 3 * T_BS - 1, buf, 1), 1);
	memcpy(buf, model, 5000);
	t_expect(t.fs, f, buf, 3 * T_BS, "grown past the tail");
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	t_fs_destroy(&t);
}
END_TEST

/* A write past pending data leaves a hole that reads as zeroes. */
START_TEST(test_sparse_and_truncate)
{
	uint8_t buf[T_BS], zero[T_BS] = { 0 }, got[T_BS];
	struct mqfs_file *f;
	struct t_fs t;
	uint64_t ino;

	t_fs_make(&t, T_SIZE);
	ino = t_create(t.fs, MQFS_ROOT_INO, "s");
	f = t_open(t.fs, ino, true);
	t_fill(buf, T_BS, 0, 3);
	ck_assert_int_eq(t_write(t.fs, f, 1024 * T_KIB, buf, T_BS), T_BS);
	ck_assert_uint_eq(t_size(t.fs, ino), 1024 * T_KIB + T_BS);
	ck_assert_int_eq(t_read(t.fs, f, 0, got, T_BS), T_BS);
	ck_assert_mem_eq(got, zero, T_BS);
	ck_assert_int_eq(t_read(t.fs, f, 1024 * T_KIB, got, T_BS), T_BS);
	ck_assert_mem_eq(got, buf, T_BS);
	/* Truncate below pending data, then grow: zeroes come back. */
	ck_assert_int_eq(t_write(t.fs, f, 8 * T_BS, buf, T_BS), T_BS);
	{
		struct stat a = { .st_size = 8 * T_BS };

		ck_assert_int_eq(mqfs_setattr(t.fs, ino, &a, MQFS_SET_SIZE,
					      NULL), 0);
		a.st_size = 16 * T_BS;
		ck_assert_int_eq(mqfs_setattr(t.fs, ino, &a, MQFS_SET_SIZE,
					      NULL), 0);
	}
	ck_assert_int_eq(t_read(t.fs, f, 8 * T_BS, got, T_BS), T_BS);
	ck_assert_mem_eq(got, zero, T_BS);
	ck_assert_uint_eq(t_size(t.fs, ino), 16 * T_BS);
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	t_fs_destroy(&t);
}
END_TEST

/* ---- random operations against a model ---------------------------------- */

#define T_MODEL_MAX	(4 * T_FS_MIB)

struct t_rand {
	struct t_fs t;
	uint64_t ino;
	struct mqfs_file *wb, *direct;	/* two opens of one inode */
	uint8_t *model, *buf;
	uint64_t size;
	unsigned seed, step;
};

static uint64_t t_pick_off(struct t_rand *r, bool aligned)
{
	uint64_t off = (uint64_t)rand_r(&r->seed) % (T_MODEL_MAX / 2);

	return aligned ? off & ~(uint64_t)(T_BS - 1) : off;
}

static void t_rand_write(struct t_rand *r, bool via_wb, bool aligned)
{
	static const size_t sizes[] = { 4096, 8192, 65536, 131072, 1 << 20 };
	size_t len = aligned ? sizes[rand_r(&r->seed) % 5] :
			       1 + (size_t)rand_r(&r->seed) % 100000;
	uint64_t off = t_pick_off(r, aligned);
	ssize_t n;

	t_fill(r->buf, len, off, r->step);
	n = t_write(r->t.fs, via_wb ? r->wb : r->direct, off, r->buf, len);
	ck_assert_msg(n == (ssize_t)len, "step %u seed %u: write %zd",
		      r->step, r->seed, n);
	if (off > r->size)
		memset(r->model + r->size, 0, off - r->size);
	memcpy(r->model + off, r->buf, len);
	r->size = MQ_MAX(r->size, off + len);
}

static void t_rand_read(struct t_rand *r)
{
	uint64_t off = t_pick_off(r, false);
	size_t len = 1 + (size_t)rand_r(&r->seed) % 300000;
	size_t want = off >= r->size ? 0 : MQ_MIN(len, r->size - off);
	ssize_t n = t_read(r->t.fs, r->wb, off, r->buf, len);

	ck_assert_msg(n == (ssize_t)want, "step %u: read %zd want %zu",
		      r->step, n, want);
	ck_assert_msg(!memcmp(r->buf, r->model + off, want),
		      "step %u (seed env T_WBACK_SEED): data differs at %"
		      PRIu64, r->step, off);
}

static void t_rand_resize(struct t_rand *r, bool punch)
{
	uint64_t off = t_pick_off(r, false);

	if (punch) {
		uint64_t len = 1 + (uint64_t)rand_r(&r->seed) % 200000;

		ck_assert_int_eq(mqfs_fallocate(r->t.fs, r->ino,
				 FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				 off, len), 0);
		if (off < r->size)
			memset(r->model + off, 0,
			       MQ_MIN(len, r->size - off));
		return;
	}
	{
		struct stat a = { .st_size = (off_t)off };

		ck_assert_int_eq(mqfs_setattr(r->t.fs, r->ino, &a,
					      MQFS_SET_SIZE, NULL), 0);
	}
	if (off > r->size)
		memset(r->model + r->size, 0, off - r->size);
	r->size = off;
}

static void t_rand_step(struct t_rand *r)
{
	unsigned op = (unsigned)rand_r(&r->seed) % 100;

	if (op < 45)
		t_rand_write(r, true, true);
	else if (op < 55)
		t_rand_write(r, op < 50, false);
	else if (op < 60)
		t_rand_write(r, false, true);
	else if (op < 85)
		t_rand_read(r);
	else if (op < 90)
		t_rand_resize(r, op < 87);
	else if (op < 95)
		ck_assert_int_eq(mqfs_fsync(r->t.fs, r->ino, false), 0);
	else
		ck_assert_uint_eq(t_size(r->t.fs, r->ino), r->size);
}

START_TEST(test_random_ops)
{
	struct t_rand r = { .seed = t_seed(11) };

	t_fs_make(&r.t, T_SIZE);
	r.model = calloc(1, T_MODEL_MAX);
	r.buf = malloc(T_MODEL_MAX);
	r.ino = t_create(r.t.fs, MQFS_ROOT_INO, "r");
	r.wb = t_open(r.t.fs, r.ino, true);
	r.direct = t_open(r.t.fs, r.ino, false);
	for (r.step = 0; r.step < 1500; r.step++)
		t_rand_step(&r);
	ck_assert_uint_eq(t_size(r.t.fs, r.ino), r.size);
	t_expect(r.t.fs, r.direct, r.model, r.size, "end");
	ck_assert_int_eq(mqfs_release(r.t.fs, r.wb), 0);
	ck_assert_int_eq(mqfs_release(r.t.fs, r.direct), 0);
	t_fs_remount(&r.t);
	r.direct = t_open(r.t.fs, r.ino, false);
	t_expect(r.t.fs, r.direct, r.model, r.size, "remounted");
	ck_assert_int_eq(mqfs_release(r.t.fs, r.direct), 0);
	t_fs_destroy(&r.t);
	free(r.buf);
	free(r.model);
}
END_TEST

/* ---- power cuts ---------------------------------------------------------- */

START_TEST(test_crash_after_fsync)
{
	const size_t len = 4 * T_FS_MIB;
	uint8_t *model = malloc(len);
	struct mqfs_file *f;
	struct t_fs t;
	uint64_t ino;

	t_fs_make_opts(&t, T_SIZE, 0, true);
	ino = t_create(t.fs, MQFS_ROOT_INO, "c");
	f = t_open(t.fs, ino, true);
	t_fill(model, len, 0, 5);
	for (size_t off = 0; off < len; off += 128 * T_KIB)
		ck_assert_int_eq(t_write(t.fs, f, off, model + off,
					 128 * T_KIB), 128 * T_KIB);
	ck_assert_int_eq(mqfs_fsync(t.fs, ino, false), 0);
	mqfs_release(t.fs, f);
	t_fs_crash(&t);
	f = t_open(t.fs, ino, false);
	t_expect(t.fs, f, model, len, "after the power cut");
	mqfs_release(t.fs, f);
	t_fs_destroy(&t);
	free(model);
}
END_TEST

/*
 * No fsync: after the cut every block of the file holds the old bytes
 * (tag 6), the new ones (tag 7) or zeroes - never anything else.
 */
START_TEST(test_crash_without_fsync)
{
	const size_t len = 2 * T_FS_MIB, half = len / 2;
	uint8_t *old = malloc(len), *neu = malloc(len), *got = malloc(len);
	uint8_t zero[T_BS] = { 0 };
	struct mqfs_file *f;
	struct t_fs t;
	uint64_t ino;
	ssize_t n;

	t_fs_make_opts(&t, T_SIZE, 0, true);
	ino = t_create(t.fs, MQFS_ROOT_INO, "n");
	f = t_open(t.fs, ino, true);
	t_fill(old, len, 0, 6);
	t_fill(neu, len, 0, 7);
	ck_assert_int_eq(t_write(t.fs, f, 0, old, half), (ssize_t)half);
	ck_assert_int_eq(mqfs_fsync(t.fs, ino, false), 0);
	for (size_t off = 0; off < len; off += 64 * T_KIB)
		ck_assert_int_eq(t_write(t.fs, f, off, neu + off, 64 * T_KIB),
				 64 * T_KIB);
	mqfs_release(t.fs, f);
	t_fs_crash(&t);
	f = t_open(t.fs, ino, false);
	n = t_read(t.fs, f, 0, got, len);
	ck_assert_msg(n >= (ssize_t)half && n <= (ssize_t)len, "size %zd", n);
	for (size_t b = 0; b < (size_t)n; b += T_BS) {
		size_t k = MQ_MIN((size_t)T_BS, (size_t)n - b);

		ck_assert_msg(!memcmp(got + b, neu + b, k) ||
			      (b < half && !memcmp(got + b, old + b, k)) ||
			      !memcmp(got + b, zero, k),
			      "block at %zu holds bytes never written there",
			      b);
	}
	mqfs_release(t.fs, f);
	t_fs_destroy(&t);
	free(got);
	free(neu);
	free(old);
}
END_TEST

/* ---- the bound ------------------------------------------------------------ */

struct t_writer {
	struct mqfs_fs *fs;
	struct mqfs_file *f;
	unsigned tag;
	int err;
};

#define T_WRITER_BYTES	(8 * T_FS_MIB)
#define T_WRITER_CHUNK	(128 * T_KIB)

static void *t_writer_run(void *arg)
{
	struct t_writer *w = arg;
	uint8_t *buf = malloc(T_WRITER_CHUNK);

	for (uint64_t off = 0; off < T_WRITER_BYTES && !w->err;
	     off += T_WRITER_CHUNK) {
		t_fill(buf, T_WRITER_CHUNK, off, w->tag);
		if (t_write(w->fs, w->f, off, buf, T_WRITER_CHUNK) !=
		    T_WRITER_CHUNK)
			w->err = -EIO;
	}
	free(buf);
	return NULL;
}

START_TEST(test_bound_four_writers)
{
	uint8_t *model = malloc(T_WRITER_BYTES);
	struct t_writer w[4];
	pthread_t th[4];
	struct mqfs_wback_stats st;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	t.mount.dontcache_dirty_bytes = 1 * T_FS_MIB;
	t_fs_remount(&t);
	for (unsigned i = 0; i < 4; i++) {
		char name[8] = { 'w', (char)('0' + i), 0 };

		w[i] = (struct t_writer){ .fs = t.fs, .tag = 10 + i,
			.f = t_open(t.fs, t_create(t.fs, MQFS_ROOT_INO, name),
				    true) };
		ck_assert_int_eq(pthread_create(&th[i], NULL, t_writer_run,
						&w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(w[i].err, 0);
	}
	mqfs_get_wback_stats(t.fs, &st);
	ck_assert_uint_le(st.held_peak, 1 * T_FS_MIB);
	ck_assert_uint_gt(st.throttled, 0);
	ck_assert_uint_eq(st.buffered_bytes, 4 * T_WRITER_BYTES);
	for (unsigned i = 0; i < 4; i++) {
		t_fill(model, T_WRITER_BYTES, 0, 10 + i);
		t_expect(t.fs, w[i].f, model, T_WRITER_BYTES, "writer");
		mqfs_release(t.fs, w[i].f);
	}
	t_fs_destroy(&t);
	free(model);
}
END_TEST

/*
 * Files come and go while the flusher works: write, read back (which
 * writes back in this thread), close, unlink, from four threads.  The
 * flusher's queue and pins must never keep a freed inode (ASan run).
 */
struct t_churn {
	struct mqfs_fs *fs;
	unsigned id;
	int err;
};

static void *t_churn_run(void *arg)
{
	struct t_churn *c = arg;
	uint8_t buf[2 * T_BS], got[2 * T_BS];

	for (unsigned i = 0; i < 200 && !c->err; i++) {
		char name[32];
		struct mqfs_entry e;
		struct mqfs_file *f;

		snprintf(name, sizeof(name), "churn%u.%u", c->id, i);
		t_fill(buf, sizeof(buf), i, c->id);
		c->err = mqfs_mknod(c->fs, MQFS_ROOT_INO, name, S_IFREG | 0644,
				    0, 0, 0, &e);
		if (!c->err)
			c->err = mqfs_open(c->fs, e.ino, O_RDWR, &f);
		if (c->err)
			break;
		mqfs_forget(c->fs, e.ino, 1);
		mqfs_file_set_dontcache(f);
		if (t_write(c->fs, f, 0, buf, sizeof(buf)) != sizeof(buf) ||
		    (i & 1 && (t_read(c->fs, f, 0, got, sizeof(got)) !=
			       sizeof(got) || memcmp(got, buf, sizeof(got)))))
			c->err = -EIO;
		if (!c->err && i % 3)
			c->err = mqfs_flush(c->fs, f);
		mqfs_release(c->fs, f);
		if (!c->err)
			c->err = mqfs_unlink(c->fs, MQFS_ROOT_INO, name);
	}
	return NULL;
}

START_TEST(test_churn_unlink)
{
	struct t_churn c[4];
	pthread_t th[4];
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	for (unsigned i = 0; i < 4; i++) {
		c[i] = (struct t_churn){ .fs = t.fs, .id = i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, t_churn_run,
						&c[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(c[i].err == 0, "thread %u: %d", i, c[i].err);
	}
	t_fs_destroy(&t);
}
END_TEST

/* Only opens marked dontcache use the write-behind. */
START_TEST(test_plain_open_writes_direct)
{
	uint8_t buf[T_BS];
	struct mqfs_wback_stats st;
	struct mqfs_file *f;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	f = t_open(t.fs, t_create(t.fs, MQFS_ROOT_INO, "p"), false);
	t_fill(buf, T_BS, 0, 4);
	for (unsigned i = 0; i < 16; i++)
		ck_assert_int_eq(t_write(t.fs, f, i * T_BS, buf, T_BS), T_BS);
	mqfs_get_wback_stats(t.fs, &st);
	ck_assert_uint_eq(st.buffered_writes, 0);
	ck_assert_uint_eq(st.held_peak, 0);
	mqfs_release(t.fs, f);
	t_fs_destroy(&t);
}
END_TEST

/* ---- errors ----------------------------------------------------------------- */

/* Where the file's first block lives, for an EIO rule over its data. */
static uint64_t t_first_pblk(struct mqfs_fs *fs, uint64_t ino)
{
	struct mqfs_ino *ip;
	struct mqfs_map m;

	ck_assert_int_eq(mqfs_iget(fs, ino, &ip), 0);
	pthread_rwlock_rdlock(&ip->lock);
	ck_assert_int_eq(mqfs_extent_map(fs, ip, 0, 1, &m), 0);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	ck_assert(m.pblk != 0);
	return m.pblk;
}

START_TEST(test_eio_reported_once)
{
	const uint64_t len = T_FS_MIB;
	uint8_t *buf = malloc(len), *got = malloc(len), *zero = calloc(1, len);
	struct mq_fault_config fc = { .eio_op_mask = 1u << MQ_OP_WRITE };
	struct mqfs_file *f;
	struct t_fs t;
	uint64_t ino, pblk;

	t_fs_make_opts(&t, T_SIZE, 0, true);
	ino = t_create(t.fs, MQFS_ROOT_INO, "e");
	ck_assert_int_eq(mqfs_fallocate(t.fs, ino, 0, 0, len), 0);
	pblk = t_first_pblk(t.fs, ino);
	fc.eio_sector_start = mqfs_blk_to_sector(pblk);
	fc.eio_sector_end = mqfs_blk_to_sector(pblk + len / T_BS);
	ck_assert_int_eq(mq_fault_set_eio(t.fault, &fc), 0);
	f = t_open(t.fs, ino, true);
	t_fill(buf, len, 0, 8);
	ck_assert_int_eq(t_write(t.fs, f, 0, buf, len), (ssize_t)len);
	ck_assert_int_eq(mqfs_fsync(t.fs, ino, false), -EIO);
	ck_assert_int_eq(mqfs_fsync(t.fs, ino, false), 0);	/* reported */
	/* The lost write left the blocks unwritten: zeroes, not garbage. */
	ck_assert_int_eq(t_read(t.fs, f, 0, got, len), (ssize_t)len);
	ck_assert_mem_eq(got, zero, len);
	/* close reports it too. */
	ck_assert_int_eq(t_write(t.fs, f, 0, buf, T_BS), T_BS);
	ck_assert_int_eq(mqfs_flush(t.fs, f), -EIO);
	fc = (struct mq_fault_config){ 0 };
	ck_assert_int_eq(mq_fault_set_eio(t.fault, &fc), 0);
	ck_assert_int_eq(t_write(t.fs, f, 0, buf, len), (ssize_t)len);
	ck_assert_int_eq(mqfs_flush(t.fs, f), 0);
	t_expect(t.fs, f, buf, len, "after the fault cleared");
	mqfs_release(t.fs, f);
	t_fs_destroy(&t);
	free(zero);
	free(got);
	free(buf);
}
END_TEST

/*
 * Fill a small filesystem through the write-behind: near the end the
 * writes go the direct way and get ENOSPC there; what was answered
 * with success is on the device, and the filesystem stays consistent.
 */
START_TEST(test_enospc)
{
	const size_t chunk = 128 * T_KIB;
	uint8_t *buf = malloc(chunk), *got = malloc(chunk);
	struct mqfs_file *f;
	struct t_fs t;
	uint64_t ino, off;
	ssize_t n = 0;
	int err;

	t_fs_make(&t, 24 * T_FS_MIB);
	ino = t_create(t.fs, MQFS_ROOT_INO, "full");
	f = t_open(t.fs, ino, true);
	for (off = 0; off < 64 * T_FS_MIB; off += (uint64_t)n) {
		t_fill(buf, chunk, off, 9);
		n = t_write(t.fs, f, off, buf, chunk);
		if (n <= 0)
			break;
	}
	ck_assert_msg(n == -ENOSPC, "the fill ended with %zd", n);
	err = mqfs_flush(t.fs, f);
	ck_assert_msg(err == 0 || err == -ENOSPC, "flush %d", err);
	for (uint64_t o = 0; err == 0 && o < off; o += chunk) {
		ck_assert_int_eq(t_read(t.fs, f, o, got, chunk),
				 (ssize_t)MQ_MIN(chunk, off - o));
		t_fill(buf, chunk, o, 9);
		ck_assert_msg(!memcmp(got, buf, MQ_MIN(chunk, off - o)),
			      "data at %" PRIu64, o);
	}
	mqfs_release(t.fs, f);
	t_fs_unmount(&t);
	{
		struct mqfs_fsck_opts o = { .mode = MQFS_FSCK_NO,
					    .force = true };

		ck_assert_int_eq(mqfs_fsck(t.q, &o), MQFS_FSCK_OK);
	}
	t_fs_destroy(&t);
	free(got);
	free(buf);
}
END_TEST

/*
 * Write-behind keeps the writer's priority: the flusher writes an
 * idle-class writer's data as idle, a default writer's as NONE (BE).
 */
START_TEST(test_writer_priority)
{
	const size_t chunk = 64 * T_KIB;
	uint8_t *buf = malloc(chunk);
	struct mq_prio_stats ps;
	struct mqfs_file *f;
	struct t_fs t;
	uint64_t ino;

	t_fs_make(&t, T_SIZE);
	t_fs_use_elevator(&t, "mq-deadline");
	ino = t_create(t.fs, MQFS_ROOT_INO, "idle");
	f = t_open(t.fs, ino, true);
	t_fill(buf, chunk, 0, 3);
	ck_assert_int_eq(mq_set_task_prio(MQ_PRIO_IDLE), MQ_PRIO_NONE);
	for (size_t i = 0; i < 16; i++)
		ck_assert_int_eq(t_write(t.fs, f, i * chunk, buf, chunk),
				 (ssize_t)chunk);
	mq_set_task_prio(MQ_PRIO_NONE);
	ck_assert_int_eq(mqfs_flush(t.fs, f), 0);
	ck_assert_int_eq(mq_queue_prio_stats(t.q, &ps), 0);
	/* Merged into few requests, but idle ones. */
	ck_assert_uint_ge(ps.level[2].inserted, 1);
	ck_assert_uint_eq(ps.level[0].inserted, 0);
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	t_fs_destroy(&t);
	free(buf);
}
END_TEST

static Suite *wback_suite(void)
{
	Suite *s = suite_create("wback");
	TCase *tc = t_tcase(s, "core", 120);

	tcase_add_test(tc, test_write_read_back);
	tcase_add_test(tc, test_kernel_writeback_tail);
	tcase_add_test(tc, test_sparse_and_truncate);
	tcase_add_test(tc, test_random_ops);
	tcase_add_test(tc, test_crash_after_fsync);
	tcase_add_test(tc, test_crash_without_fsync);
	tcase_add_test(tc, test_bound_four_writers);
	tcase_add_test(tc, test_churn_unlink);
	tcase_add_test(tc, test_plain_open_writes_direct);
	tcase_add_test(tc, test_eio_reported_once);
	tcase_add_test(tc, test_enospc);
	tcase_add_test(tc, test_writer_priority);
	return s;
}

T_MAIN(wback_suite)
