// SPDX-License-Identifier: MIT
/*
 * test_file.c - file data (src/fs/file.c, fspace.c) through the public
 * calls, with synchronous wrappers around the asynchronous read and
 * write, checked against a reference copy of every file: aligned and
 * unaligned I/O, sparse files, reads across many extents, O_APPEND,
 * truncate down and up, every fallocate mode, SEEK_DATA/SEEK_HOLE, EOF,
 * the size limit, read-only mounts, ENOSPC on a small fs (short count,
 * then ENOSPC, and a consistent fs), random operations across remounts,
 * and threads; overwrites write from the caller's aligned memory and
 * keep their times in memory until a commit, fsync, unmount or eviction
 * writes them.
 *
 * Failures name the test, the step and the seed (T_FILE_SEED reruns).
 */
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "t_fs.h"
#include "t_fsio.h"
#include "t_main.h"
#include "mqfs/dev/fault.h"

#define T_SIZE		(64 * T_FS_MIB)
#define T_MODEL_MAX	(4 * T_FS_MIB)	/* bytes a model file may hold */
#define T_KIB		1024ull

/* ---- files and their models -------------------------------------------- */

struct t_file {
	struct mqfs_fs **fsp;		/* follows remounts */
	uint64_t ino;
	int flags;
	struct mqfs_file *f;
	uint8_t *model;			/* T_MODEL_MAX bytes */
	uint64_t size;
	const char *what;
	unsigned step, seed;
};

#define t_ok(tf, cond, fmt, ...)					\
	ck_assert_msg((cond), "%s step %u (seed %u): " fmt, (tf)->what,	\
		      (tf)->step, (tf)->seed, ##__VA_ARGS__)

static unsigned t_seed(unsigned dflt)
{
	const char *s = getenv("T_FILE_SEED");

	return s ? (unsigned)strtoul(s, NULL, 0) : dflt;
}

static void t_file_create(struct t_fs *t, struct t_file *tf, const char *name,
			  int flags)
{
	struct mqfs_entry e;

	memset(tf, 0, sizeof(*tf));
	tf->fsp = &t->fs;
	tf->what = name;
	ck_assert_int_eq(mqfs_mknod(t->fs, MQFS_ROOT_INO, name,
				    S_IFREG | 0644, 0, 0, 0, &e), 0);
	tf->ino = e.ino;
	tf->flags = flags;
	ck_assert_int_eq(mqfs_open(t->fs, tf->ino, flags, &tf->f), 0);
	tf->model = calloc(1, T_MODEL_MAX);
	ck_assert_ptr_nonnull(tf->model);
}

static void t_file_close(struct t_file *tf)
{
	if (tf->f)
		ck_assert_int_eq(mqfs_release(*tf->fsp, tf->f), 0);
	tf->f = NULL;
}

static void t_file_reopen(struct t_file *tf)
{
	ck_assert_int_eq(mqfs_open(*tf->fsp, tf->ino, tf->flags, &tf->f), 0);
}

static void t_file_free(struct t_file *tf)
{
	t_file_close(tf);
	free(tf->model);
	tf->model = NULL;
}

static void t_remount(struct t_fs *t, struct t_file **files, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		t_file_close(files[i]);
	t_fs_remount(t);
	for (unsigned i = 0; i < n; i++)
		t_file_reopen(files[i]);
}

/* Unmount, fsck must find nothing, mount again. */
static void t_fsck(struct t_fs *t, struct t_file **files, unsigned n)
{
	struct mqfs_fsck_opts fo = { .mode = MQFS_FSCK_NO, .force = true };

	for (unsigned i = 0; i < n; i++)
		t_file_close(files[i]);
	t_fs_unmount(t);
	ck_assert_int_eq(mqfs_fsck(t->q, &fo), MQFS_FSCK_OK);
	t_fs_mount(t);
	for (unsigned i = 0; i < n; i++)
		t_file_reopen(files[i]);
}

static void t_rand_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rand() >> 7);
}

static struct stat t_stat(struct t_file *tf)
{
	struct stat st;

	ck_assert_int_eq(mqfs_getattr(*tf->fsp, tf->ino, &st), 0);
	return st;
}

/* Write through the fs and into the model; the whole count expected. */
static void t_mwrite(struct t_file *tf, uint64_t off, const void *buf,
		     size_t n)
{
	ssize_t r = t_write(*tf->fsp, tf->f, off, buf, n);

	if (tf->flags & O_APPEND)
		off = tf->size;
	t_ok(tf, r == (ssize_t)n, "write %" PRIu64 "+%zu returned %zd", off,
	     n, r);
	ck_assert_uint_le(off + n, T_MODEL_MAX);
	memcpy(tf->model + off, buf, n);
	tf->size = MQ_MAX(tf->size, off + n);
}

static void t_mtruncate(struct t_file *tf, uint64_t size)
{
	struct stat a = { .st_size = (off_t)size }, out;

	ck_assert_uint_le(size, T_MODEL_MAX);
	t_ok(tf, mqfs_setattr(*tf->fsp, tf->ino, &a, MQFS_SET_SIZE, &out) == 0,
	     "truncate %" PRIu64, size);
	if (size < tf->size)
		memset(tf->model + size, 0, tf->size - size);
	tf->size = size;
}

/* The whole file, read in one go and in random slices, equals the model. */
static void t_check(struct t_file *tf)
{
	uint8_t *buf = malloc(T_MODEL_MAX + 8192);
	struct stat st = t_stat(tf);
	ssize_t r;

	ck_assert_ptr_nonnull(buf);
	t_ok(tf, (uint64_t)st.st_size == tf->size, "size %jd, model %" PRIu64,
	     (intmax_t)st.st_size, tf->size);
	r = t_read(*tf->fsp, tf->f, 0, buf, tf->size + 8192);
	t_ok(tf, r == (ssize_t)tf->size, "read of all got %zd", r);
	if (memcmp(buf, tf->model, tf->size)) {
		uint64_t i = 0;

		while (buf[i] == tf->model[i])
			i++;
		t_ok(tf, false, "byte %" PRIu64 " is %02x, model %02x", i,
		     buf[i], tf->model[i]);
	}
	for (int k = 0; k < 4 && tf->size; k++) {
		uint64_t off = (uint64_t)rand() % tf->size;
		size_t n = 1 + (size_t)rand() % (64 * 1024);

		r = t_read(*tf->fsp, tf->f, off, buf, n);
		t_ok(tf, r == (ssize_t)MQ_MIN(n, tf->size - off),
		     "read %" PRIu64 "+%zu got %zd", off, n, r);
		t_ok(tf, !memcmp(buf, tf->model + off, (size_t)r),
		     "read %" PRIu64 "+%zu differs", off, n);
	}
	free(buf);
}

static uint64_t t_free_blocks(struct t_fs *t)
{
	return atomic_load(&t->fs->free_blocks);
}

static uint64_t t_blocks(struct t_file *tf)
{
	return (uint64_t)t_stat(tf).st_blocks / (MQFS_BLOCK_SIZE / 512);
}

static int t_count_fn(void *ctx, const struct mqfs_extent *x, uint64_t blk)
{
	uint64_t *n = ctx;

	n[x ? 0 : 1] += x ? x->len : 1;
	return 0;
}

/* Data blocks mapped (st_blocks also counts extent tree blocks). */
static uint64_t t_data_blocks(struct t_file *tf)
{
	struct mqfs_ino *ip;
	uint64_t n[2] = { 0, 0 };

	ck_assert_int_eq(mqfs_iget(*tf->fsp, tf->ino, &ip), 0);
	pthread_rwlock_rdlock(&ip->lock);
	ck_assert_int_eq(mqfs_extent_walk(*tf->fsp, ip, t_count_fn, n), 0);
	ck_assert_uint_eq(ip->d.blocks, n[0] + n[1]);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(*tf->fsp, ip);
	return n[0];
}

/* ---- basic I/O --------------------------------------------------------- */

START_TEST(test_aligned)
{
	uint8_t *buf = malloc(256 * T_KIB);
	struct t_file tf;
	struct t_fs t;
	struct stat st0, st1;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "aligned", O_RDWR);
	t_rand_bytes(buf, 256 * T_KIB);
	t_mwrite(&tf, 0, buf, 256 * T_KIB);
	ck_assert_uint_eq(t_blocks(&tf), 64);
	t_check(&tf);
	/* An overwrite inside the file (the asynchronous path). */
	st0 = t_stat(&tf);
	usleep(2000);
	t_rand_bytes(buf, 64 * T_KIB);
	t_mwrite(&tf, 64 * T_KIB, buf, 64 * T_KIB);
	st1 = t_stat(&tf);
	ck_assert(st1.st_mtim.tv_sec > st0.st_mtim.tv_sec ||
		  st1.st_mtim.tv_nsec != st0.st_mtim.tv_nsec);
	ck_assert_uint_eq(t_blocks(&tf), 64);
	t_check(&tf);
	{
		struct t_file *all[] = { &tf };

		t_remount(&t, all, 1);
	}
	t_check(&tf);
	/* A 1 MiB+ write spans several bios. */
	buf = realloc(buf, 1300 * T_KIB);
	t_rand_bytes(buf, 1300 * T_KIB);
	t_mwrite(&tf, 512 * T_KIB, buf, 1300 * T_KIB);
	t_check(&tf);
	free(buf);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_unaligned_random)
{
	uint8_t *buf = malloc(200 * T_KIB);
	struct t_file tf;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "unaligned", O_RDWR);
	tf.seed = t_seed(1234 + (unsigned)_i);
	srand(tf.seed);
	for (tf.step = 0; tf.step < 250; tf.step++) {
		uint64_t off = (uint64_t)rand() % (2 * T_FS_MIB);
		size_t n = 1 + (size_t)rand() % (rand() % 4 ? 9000 : 200000);

		t_rand_bytes(buf, n);
		t_mwrite(&tf, off, buf, n);
		if (tf.step % 10 == 0)
			t_check(&tf);
		if (tf.step == 125) {
			struct t_file *all[] = { &tf };

			t_remount(&t, all, 1);
			t_check(&tf);
		}
	}
	t_check(&tf);
	free(buf);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_eof_and_empty)
{
	uint8_t buf[8192];
	struct t_file tf;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "eof", O_RDWR);
	ck_assert_int_eq(t_read(t.fs, tf.f, 0, buf, sizeof(buf)), 0);
	ck_assert_int_eq(t_write(t.fs, tf.f, 100, buf, 0), 0);
	ck_assert_uint_eq(t_stat(&tf).st_size, 0);
	memset(buf, 0x5a, sizeof(buf));
	t_mwrite(&tf, 0, buf, 5000);
	ck_assert_int_eq(t_read(t.fs, tf.f, 5000, buf, 10), 0);
	ck_assert_int_eq(t_read(t.fs, tf.f, 9999, buf, 10), 0);
	ck_assert_int_eq(t_read(t.fs, tf.f, 4990, buf, 100), 10);
	ck_assert_int_eq(t_read(t.fs, tf.f, 0, buf, 0), 0);
	t_check(&tf);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_sparse)
{
	uint8_t buf[4096];
	struct t_file tf;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "sparse", O_RDWR);
	memset(buf, 0x11, sizeof(buf));
	t_mwrite(&tf, 0, buf, 4096);
	memset(buf, 0x22, sizeof(buf));
	t_mwrite(&tf, T_FS_MIB + 100, buf, 4096);
	ck_assert_uint_eq(tf.size, T_FS_MIB + 4196);
	/* Blocks 0, 256 and 257 only. */
	ck_assert_uint_eq(t_blocks(&tf), 3);
	t_check(&tf);
	/* Writing into the hole fills exactly that. */
	memset(buf, 0x33, sizeof(buf));
	t_mwrite(&tf, 300 * T_KIB + 7, buf, 10);
	ck_assert_uint_eq(t_blocks(&tf), 4);
	t_check(&tf);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

/* Two files written block by block in turn: every block an extent. */
START_TEST(test_across_extents)
{
	uint8_t *buf = malloc(2 * T_FS_MIB);
	struct t_file a, b;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &a, "a", O_RDWR);
	t_file_create(&t, &b, "b", O_RDWR);
	a.seed = b.seed = t_seed(99);
	srand(a.seed);
	for (a.step = 0; a.step < 300; a.step++) {
		t_rand_bytes(buf, 4096);
		t_mwrite(&a, a.step * 4096ull, buf, 4096);
		t_rand_bytes(buf, 4096);
		t_mwrite(&b, a.step * 4096ull, buf, 4096);
	}
	t_check(&a);
	t_check(&b);
	/* One overwrite across them all, then an unaligned one. */
	t_rand_bytes(buf, 1100 * T_KIB);
	t_mwrite(&a, 4096, buf, 1100 * T_KIB);
	t_rand_bytes(buf, 700 * T_KIB);
	t_mwrite(&b, 333, buf, 700 * T_KIB);
	t_check(&a);
	t_check(&b);
	free(buf);
	t_file_free(&a);
	t_file_free(&b);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_append)
{
	uint8_t buf[10000];
	struct t_file tf;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "append", O_WRONLY | O_APPEND);
	tf.seed = 5;
	srand(tf.seed);
	for (tf.step = 0; tf.step < 20; tf.step++) {
		size_t n = tf.step % 2 ? 4096 : 1 + (size_t)rand() % 9999;

		t_rand_bytes(buf, n);
		/* The offset is ignored: even an aligned one inside the file. */
		t_mwrite(&tf, 0, buf, n);
	}
	t_file_close(&tf);
	tf.flags = O_RDONLY;
	t_file_reopen(&tf);
	t_check(&tf);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_truncate)
{
	uint8_t buf[3 * 4096];
	struct t_file tf;
	struct t_fs t;
	uint64_t free0;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "trunc", O_RDWR);
	free0 = t_free_blocks(&t);
	memset(buf, 0xaa, sizeof(buf));
	t_mwrite(&tf, 0, buf, sizeof(buf));
	ck_assert_uint_eq(t_blocks(&tf), 3);
	t_mtruncate(&tf, 5000);
	ck_assert_uint_eq(t_blocks(&tf), 2);
	t_check(&tf);
	/* Growing exposes zeroes, not the old bytes, and allocates nothing. */
	t_mtruncate(&tf, 3 * 4096);
	ck_assert_uint_eq(t_blocks(&tf), 2);
	t_check(&tf);
	t_mtruncate(&tf, 100 * T_KIB * 10);
	t_check(&tf);
	memset(buf, 0xbb, 100);
	t_mwrite(&tf, 999 * T_KIB, buf, 100);
	t_mtruncate(&tf, 4096);
	ck_assert_uint_eq(t_blocks(&tf), 1);
	t_check(&tf);
	t_mtruncate(&tf, 0);
	ck_assert_uint_eq(t_blocks(&tf), 0);
	t_check(&tf);
	ck_assert_uint_eq(t_free_blocks(&t), free0);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

/* ---- fallocate and seeking --------------------------------------------- */

static int t_falloc(struct t_file *tf, int mode, uint64_t off, uint64_t len)
{
	return mqfs_fallocate(*tf->fsp, tf->ino, mode, off, len);
}

START_TEST(test_fallocate_modes)
{
	uint8_t buf[64 * 1024];
	struct t_file tf;
	struct t_fs t;
	struct mqfs_entry d;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "falloc", O_RDWR);
	/* Mode 0: allocated, size grows, reads as zeroes. */
	ck_assert_int_eq(t_falloc(&tf, 0, 0, 64 * T_KIB), 0);
	tf.size = 64 * T_KIB;
	ck_assert_uint_eq(t_data_blocks(&tf), 16);
	t_check(&tf);
	/* A small write into it: the rest of its block stays zero. */
	memset(buf, 0x77, 100);
	t_mwrite(&tf, 1000, buf, 100);
	ck_assert_uint_eq(t_data_blocks(&tf), 16);
	t_check(&tf);
	/* KEEP_SIZE: blocks past the end, size unchanged. */
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_KEEP_SIZE, 64 * T_KIB,
				  64 * T_KIB), 0);
	ck_assert_uint_eq(t_stat(&tf).st_size, 64 * T_KIB);
	ck_assert_uint_eq(t_data_blocks(&tf), 32);
	/* Fill the file, then punch with unaligned edges. */
	t_rand_bytes(buf, sizeof(buf));
	t_mwrite(&tf, 0, buf, sizeof(buf));
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, 1050, 3 * 4096), 0);
	memset(tf.model + 1050, 0, 3 * 4096);
	/* Blocks 1 and 2 are whole inside [1050, 13338): gone. */
	ck_assert_uint_eq(t_data_blocks(&tf), 30);
	t_check(&tf);
	/* Punch inside one block, and past the end (nothing there). */
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, 20000, 10), 0);
	memset(tf.model + 20000, 0, 10);
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, 1 << 20, 4096), 0);
	t_check(&tf);
	/* ZERO_RANGE: zeroes and allocated again (the punched blocks too). */
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_ZERO_RANGE, 500, 30000), 0);
	memset(tf.model + 500, 0, 30000);
	ck_assert_uint_eq(t_data_blocks(&tf), 32);
	t_check(&tf);
	/* ZERO_RANGE past the end grows the file; with KEEP_SIZE it does not. */
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_ZERO_RANGE, 60 * T_KIB,
				  20 * T_KIB), 0);
	memset(tf.model + 60 * T_KIB, 0, 20 * T_KIB);
	tf.size = 80 * T_KIB;
	t_check(&tf);
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_ZERO_RANGE |
				  FALLOC_FL_KEEP_SIZE, 80 * T_KIB,
				  20 * T_KIB), 0);
	t_check(&tf);
	ck_assert_uint_eq(t_data_blocks(&tf), 32);	/* all inside [0, 128K) */
	/* Writing into the KEEP_SIZE area past the end. */
	memset(buf, 0x99, 5000);
	t_mwrite(&tf, 90 * T_KIB, buf, 5000);
	ck_assert_uint_eq(t_data_blocks(&tf), 32);
	t_check(&tf);
	/* What is refused. */
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_PUNCH_HOLE, 0, 4096),
			 -EOPNOTSUPP);
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_COLLAPSE_RANGE, 0, 4096),
			 -EOPNOTSUPP);
	ck_assert_int_eq(t_falloc(&tf, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(t_falloc(&tf, 0, MQFS_MAX_FILE_BYTES - 10, 4096),
			 -EFBIG);
	ck_assert_int_eq(mqfs_mknod(t.fs, MQFS_ROOT_INO, "dir", S_IFDIR | 0755,
				    0, 0, 0, &d), 0);
	ck_assert_int_eq(mqfs_fallocate(t.fs, d.ino, 0, 0, 4096), -EISDIR);
	{
		struct t_file *all[] = { &tf };

		t_fsck(&t, all, 1);
	}
	t_check(&tf);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

static uint64_t t_seek(struct t_file *tf, uint64_t off, int whence, int want)
{
	uint64_t out = ~0ull;
	int err = mqfs_lseek(*tf->fsp, tf->ino, off, whence, &out);

	ck_assert_msg(err == want, "lseek(%" PRIu64 ", %d) = %d, want %d",
		      off, whence, err, want);
	return out;
}

START_TEST(test_seek_data_hole)
{
	const uint64_t M = T_FS_MIB;
	uint8_t buf[8192];
	struct t_file tf;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "seek", O_RDWR);
	memset(buf, 1, sizeof(buf));
	/* data [0,4K) hole [4K,1M) data [1M,1M+8K) unwritten [..+16K) data */
	t_mwrite(&tf, 0, buf, 4096);
	t_mwrite(&tf, M, buf, 8192);
	ck_assert_int_eq(t_falloc(&tf, 0, M + 8192, 8192), 0);
	t_mwrite(&tf, M + 16384, buf, 4096);
	ck_assert_uint_eq(t_seek(&tf, 0, SEEK_DATA, 0), 0);
	ck_assert_uint_eq(t_seek(&tf, 100, SEEK_DATA, 0), 100);
	ck_assert_uint_eq(t_seek(&tf, 0, SEEK_HOLE, 0), 4096);
	ck_assert_uint_eq(t_seek(&tf, 4096, SEEK_DATA, 0), M);
	ck_assert_uint_eq(t_seek(&tf, 5000, SEEK_DATA, 0), M);
	ck_assert_uint_eq(t_seek(&tf, 5000, SEEK_HOLE, 0), 5000);
	ck_assert_uint_eq(t_seek(&tf, M, SEEK_HOLE, 0), M + 8192);
	ck_assert_uint_eq(t_seek(&tf, M + 8192, SEEK_DATA, 0), M + 16384);
	ck_assert_uint_eq(t_seek(&tf, M + 9000, SEEK_HOLE, 0), M + 9000);
	/* The implicit hole at the end. */
	ck_assert_uint_eq(t_seek(&tf, M + 16384, SEEK_HOLE, 0), M + 20480);
	ck_assert_uint_eq(t_seek(&tf, M + 20479, SEEK_DATA, 0), M + 20479);
	t_seek(&tf, M + 20480, SEEK_DATA, -ENXIO);
	t_seek(&tf, M + 20480, SEEK_HOLE, -ENXIO);
	t_seek(&tf, 0, SEEK_SET, -EINVAL);
	/* A trailing hole from a truncate up: no data after the last. */
	t_mtruncate(&tf, 2 * M);
	t_seek(&tf, M + 20480, SEEK_DATA, -ENXIO);
	ck_assert_uint_eq(t_seek(&tf, M + 16385, SEEK_HOLE, 0), M + 20480);
	ck_assert_uint_eq(t_seek(&tf, 2 * M - 1, SEEK_HOLE, 0), 2 * M - 1);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

/* ---- limits ------------------------------------------------------------ */

START_TEST(test_size_limit)
{
	const uint64_t max = MQFS_MAX_FILE_BYTES;
	uint8_t buf[100];
	struct stat a = { 0 }, out;
	struct t_file tf;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "big", O_RDWR);
	memset(buf, 0x42, sizeof(buf));
	ck_assert_int_eq(t_write(t.fs, tf.f, max, buf, 1), -EFBIG);
	/* Up to the limit: a short write. */
	ck_assert_int_eq(t_write(t.fs, tf.f, max - 10, buf, 100), 10);
	ck_assert_uint_eq(t_stat(&tf).st_size, max);
	ck_assert_int_eq(t_read(t.fs, tf.f, max - 10, buf, 100), 10);
	ck_assert_uint_eq(t_blocks(&tf), 1);
	a.st_size = (off_t)(max + 1);
	ck_assert_int_eq(mqfs_setattr(t.fs, tf.ino, &a, MQFS_SET_SIZE, &out),
			 -EFBIG);
	ck_assert_uint_eq(t_seek(&tf, 0, SEEK_DATA, 0), max - 4096);
	a.st_size = 0;
	ck_assert_int_eq(mqfs_setattr(t.fs, tf.ino, &a, MQFS_SET_SIZE, &out),
			 0);
	ck_assert_uint_eq(t_blocks(&tf), 0);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_readonly)
{
	uint8_t buf[4096] = { 1 };
	struct t_file tf;
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "ro", O_RDWR);
	t_mwrite(&tf, 0, buf, sizeof(buf));
	t_file_close(&tf);
	t.mount.readonly = true;
	t_fs_remount(&t);
	tf.flags = O_RDONLY;
	t_file_reopen(&tf);
	ck_assert_int_eq(t_write(t.fs, tf.f, 0, buf, sizeof(buf)), -EROFS);
	ck_assert_int_eq(t_falloc(&tf, 0, 0, 4096), -EROFS);
	t_check(&tf);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

/* A 4 MiB fs fills up: a short write, then ENOSPC, then all is well. */
START_TEST(test_enospc)
{
	size_t big = 8 * T_FS_MIB;
	uint8_t *buf = malloc(big), *back = malloc(big);
	struct mqfs_fsck_opts fo = { .mode = MQFS_FSCK_NO, .force = true };
	struct t_file tf;
	struct t_fs t;
	uint64_t free0;
	ssize_t r;

	t_fs_make(&t, 4 * T_FS_MIB);
	t_file_create(&t, &tf, "full", O_RDWR);
	free0 = t_free_blocks(&t);	/* the root has its first block now */
	srand(3);
	t_rand_bytes(buf, big);
	r = t_write(t.fs, tf.f, 0, buf, big);
	ck_assert_int_gt(r, 0);
	ck_assert_int_lt(r, (ssize_t)big);
	ck_assert_int_eq(r % 4096, 0);
	ck_assert_int_eq(t_write(t.fs, tf.f, (uint64_t)r, buf, 4096), -ENOSPC);
	ck_assert_int_eq(t_falloc(&tf, 0, (uint64_t)r, 4096), -ENOSPC);
	/* Overwrites need no space. */
	ck_assert_int_eq(t_write(t.fs, tf.f, 8192, buf + 100, 5000), 5000);
	memcpy(buf + 8192, buf + 100, 5000);
	ck_assert_int_eq(t_read(t.fs, tf.f, 0, back, big), r);
	ck_assert(!memcmp(back, buf, (size_t)r));
	ck_assert_uint_eq(t_stat(&tf).st_size, (uint64_t)r);
	/* Consistent on disk: fsck finds nothing. */
	t_file_close(&tf);
	t_fs_unmount(&t);
	ck_assert_int_eq(mqfs_fsck(t.q, &fo), MQFS_FSCK_OK);
	t_fs_mount(&t);
	t_file_reopen(&tf);
	ck_assert_int_eq(t_read(t.fs, tf.f, 0, back, big), r);
	ck_assert(!memcmp(back, buf, (size_t)r));
	/* Deleting gives every block back; then the space is usable again. */
	t_file_close(&tf);
	ck_assert_int_eq(mqfs_unlink(t.fs, MQFS_ROOT_INO, "full"), 0);
	ck_assert_uint_eq(t_free_blocks(&t), free0);
	free(tf.model);
	t_file_create(&t, &tf, "again", O_RDWR);
	ck_assert_int_eq(t_write(t.fs, tf.f, 0, buf, (size_t)r / 2), r / 2);
	t_file_free(&tf);
	t_fs_destroy(&t);
	free(buf);
	free(back);
}
END_TEST

/*
 * Space freed by a transaction the commit thread is checkpointing is
 * busy still; a write that hits ENOSPC waits for the checkpoint (not
 * only for durability) before it retries, so it gets the whole space.
 */
START_TEST(test_enospc_busy_retry)
{
	size_t big = 8 * T_FS_MIB;
	uint8_t *buf = malloc(big);
	struct stat a = { .st_size = 0 };
	struct t_file tf;
	struct t_fs t;
	ssize_t full;

	t_fs_make(&t, 4 * T_FS_MIB);
	t.mount.commit_interval_ms = 1;	/* commits all the time */
	t_fs_remount(&t);
	t_file_create(&t, &tf, "busy", O_RDWR);
	srand(5);
	t_rand_bytes(buf, big);
	full = t_write(t.fs, tf.f, 0, buf, big);
	ck_assert_int_gt(full, 0);
	for (int i = 0; i < 40; i++) {
		ssize_t r;

		ck_assert_int_eq(mqfs_setattr(t.fs, tf.ino, &a, MQFS_SET_SIZE,
					      NULL), 0);
		/* Let the commit thread take the frees, as it would. */
		usleep(500 + (unsigned)(i % 8) * 250);
		r = t_write(t.fs, tf.f, 0, buf, (size_t)full);
		/* A few blocks may go to extent tree nodes this time. */
		ck_assert_msg(r > full - 4 * 4096, "round %d: wrote %zd of "
			      "%zd", i, r, full);
	}
	t_file_free(&tf);
	t_fs_destroy(&t);
	free(buf);
}
END_TEST

/* ---- power cuts -------------------------------------------------------- */

/* Each block of [off, off+len) of the file equals one of @a, @b. */
static void t_blocks_either(struct t_file *tf, uint64_t off, uint64_t len,
			    const uint8_t *a, const uint8_t *b)
{
	uint8_t *got = malloc(len);

	ck_assert_int_eq(t_read(*tf->fsp, tf->f, off, got, len), (ssize_t)len);
	for (uint64_t i = 0; i < len; i += 4096) {
		size_t n = (size_t)MQ_MIN(4096, len - i);

		ck_assert_msg(!memcmp(got + i, a + i, n) ||
			      (b && !memcmp(got + i, b + i, n)),
			      "%s: block at %" PRIu64 " is neither version",
			      tf->what, off + i);
	}
	free(got);
}

START_TEST(test_crash_consistency)
{
	const uint64_t M = T_FS_MIB;
	uint8_t *a = malloc(M), *b = malloc(M), *c = malloc(64 * T_KIB);
	struct t_file tf;
	struct t_fs t;
	struct t_file *all[] = { &tf };
	uint64_t size;

	t_fs_make_opts(&t, T_SIZE, 0, true);
	t_file_create(&t, &tf, "crash", O_RDWR);
	srand(11);
	t_rand_bytes(a, M);
	t_rand_bytes(b, M);
	t_rand_bytes(c, 64 * T_KIB);
	/* Durable: A.  Then, not synced: B appended, C over A's head. */
	ck_assert_int_eq(t_write(t.fs, tf.f, 0, a, M), (ssize_t)M);
	ck_assert_int_eq(mqfs_fsync(t.fs, tf.ino, false), 0);
	ck_assert_int_eq(t_write(t.fs, tf.f, M, b, M), (ssize_t)M);
	ck_assert_int_eq(t_write(t.fs, tf.f, 0, c, 64 * T_KIB),
			 (ssize_t)(64 * T_KIB));
	t_file_close(&tf);
	t_fs_crash(&t);
	t_file_reopen(&tf);
	size = (uint64_t)t_stat(&tf).st_size;
	ck_assert_msg(size == M || size == 2 * M, "size %" PRIu64, size);
	t_blocks_either(&tf, 0, 64 * T_KIB, a, c);
	t_blocks_either(&tf, 64 * T_KIB, M - 64 * T_KIB, a + 64 * T_KIB, NULL);
	if (size == 2 * M)
		t_blocks_either(&tf, M, M, b, NULL);
	/* Synced this time: everything survives. */
	ck_assert_int_eq(t_write(t.fs, tf.f, M, b, M), (ssize_t)M);
	ck_assert_int_eq(t_write(t.fs, tf.f, 0, c, 64 * T_KIB),
			 (ssize_t)(64 * T_KIB));
	ck_assert_int_eq(mqfs_fsync(t.fs, tf.ino, true), 0);
	t_file_close(&tf);
	t_fs_crash(&t);
	t_file_reopen(&tf);
	ck_assert_uint_eq(t_stat(&tf).st_size, 2 * M);
	t_blocks_either(&tf, 0, 64 * T_KIB, c, NULL);
	t_blocks_either(&tf, 64 * T_KIB, M - 64 * T_KIB, a + 64 * T_KIB, NULL);
	t_blocks_either(&tf, M, M, b, NULL);
	/* A truncate and a punch cut off by the power: old or new, never torn. */
	t_mtruncate(&tf, M / 2 + 100);
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, 4096, 8192), 0);
	t_file_close(&tf);
	t_fs_crash(&t);
	t_file_reopen(&tf);
	size = (uint64_t)t_stat(&tf).st_size;
	ck_assert_msg(size == 2 * M || size == M / 2 + 100, "size %" PRIu64,
		      size);
	memset(b, 0, 8192);
	t_blocks_either(&tf, 4096, 8192, c + 4096, b);
	t_blocks_either(&tf, 64 * T_KIB, M / 2 + 100 - 64 * T_KIB,
			a + 64 * T_KIB, NULL);
	t_fsck(&t, all, 1);
	t_file_free(&tf);
	t_fs_destroy(&t);
	free(a);
	free(b);
	free(c);
}
END_TEST

/* Device block of the file's logical block @lblk (0: a hole). */
static uint64_t t_pblk(struct t_file *tf, uint64_t lblk)
{
	struct mqfs_ino *ip;
	struct mqfs_map m;

	ck_assert_int_eq(mqfs_iget(*tf->fsp, tf->ino, &ip), 0);
	pthread_rwlock_rdlock(&ip->lock);
	ck_assert_int_eq(mqfs_extent_map(*tf->fsp, ip, lblk, 1, &m), 0);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(*tf->fsp, ip);
	return m.pblk;
}

static void t_eio(struct t_fs *t, uint64_t first, uint64_t end, unsigned ops)
{
	struct mq_fault_config fc = {
		.eio_sector_start = mqfs_blk_to_sector(first),
		.eio_sector_end = mqfs_blk_to_sector(end), .eio_op_mask = ops };

	ck_assert_int_eq(mq_fault_set_eio(t->fault, &fc), 0);
}

/* Device errors come back as -EIO; a failed write leaves no trace. */
START_TEST(test_io_errors)
{
	const unsigned rw = 1u << MQ_OP_READ | 1u << MQ_OP_WRITE;
	uint8_t *a = malloc(64 * T_KIB), *b = malloc(64 * T_KIB);
	struct t_file *all[1];
	struct t_file tf;
	struct t_fs t;
	uint64_t p0, free0, blocks0;

	t_fs_make_opts(&t, T_SIZE, 0, true);
	t_file_create(&t, &tf, "eio", O_RDWR);
	all[0] = &tf;
	srand(8);
	t_rand_bytes(a, 64 * T_KIB);
	t_rand_bytes(b, 64 * T_KIB);
	t_mwrite(&tf, 0, a, 64 * T_KIB);
	ck_assert_int_eq(mqfs_fsync(t.fs, tf.ino, false), 0);
	p0 = t_pblk(&tf, 0);
	ck_assert_uint_eq(t_pblk(&tf, 15), p0 + 15);
	free0 = t_free_blocks(&t);
	blocks0 = t_blocks(&tf);
	/* The file's own blocks fail: reads, RMW edges, overwrites. */
	t_eio(&t, p0, p0 + 16, rw);
	ck_assert_int_eq(t_read(t.fs, tf.f, 0, b, 64 * T_KIB), -EIO);
	ck_assert_int_eq(t_read(t.fs, tf.f, 3 * 4096 + 5, b, 10), -EIO);
	ck_assert_int_eq(t_write(t.fs, tf.f, 0, b, 4096), -EIO);
	ck_assert_int_eq(t_write(t.fs, tf.f, 5, b, 10), -EIO);
	ck_assert_int_eq(t_falloc(&tf, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, 100, 10), -EIO);
	/* Every block after them fails writes: new blocks cannot be filled. */
	t_eio(&t, p0 + 16, t.fs->block_count, 1u << MQ_OP_WRITE);
	ck_assert_int_eq(t_write(t.fs, tf.f, 64 * T_KIB, b, 64 * T_KIB),
			 -EIO);
	ck_assert_uint_eq(t_stat(&tf).st_size, 64 * T_KIB);
	ck_assert_uint_eq(t_blocks(&tf), blocks0);
	ck_assert_uint_eq(t_free_blocks(&t), free0);
	ck_assert_uint_eq(t_pblk(&tf, 16), 0);
	/* Healthy again: nothing was lost or half done. */
	t_eio(&t, 0, 0, 0);
	t_check(&tf);
	t_mwrite(&tf, 64 * T_KIB, b, 64 * T_KIB);
	t_check(&tf);
	t_fsck(&t, all, 1);
	t_check(&tf);
	t_file_free(&tf);
	t_fs_destroy(&t);
	free(a);
	free(b);
}
END_TEST

/* The last extent tree block of the file (0: none). */
static int t_last_tree_fn(void *ctx, const struct mqfs_extent *x, uint64_t blk)
{
	if (!x)
		*(uint64_t *)ctx = blk;
	return 0;
}

/*
 * A truncate cut short (an I/O error mid-way, then the power) committed
 * the new size but not every removal: the blocks left past the end hold
 * the old data and must not come back when the file grows again.  The
 * truncating inode sits on the orphan list; mount finishes the job.
 */
START_TEST(test_truncate_interrupted)
{
	const unsigned n = 600;	/* one-block extents: a tree of leaves */
	uint8_t *buf = malloc(2 * n * 4096ull), *got = malloc(2 * n * 4096ull);
	struct t_file *all[1];
	struct t_file tf;
	struct t_fs t;
	struct mqfs_ino *ip;
	uint64_t leaf = 0, size = 2ull * n * 4096;
	struct stat a = { .st_size = 0 };

	t_fs_make_opts(&t, T_SIZE, 0, true);
	t_file_create(&t, &tf, "cut", O_RDWR);
	all[0] = &tf;
	srand(21);
	t_rand_bytes(buf, 4096);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(t_write(t.fs, tf.f, 2ull * i * 4096 + 4096,
					 buf, 4096), 4096);
	ck_assert_uint_eq(t_stat(&tf).st_size, size);
	ck_assert_int_eq(mqfs_iget(t.fs, tf.ino, &ip), 0);
	pthread_rwlock_rdlock(&ip->lock);
	ck_assert_int_eq(mqfs_extent_walk(t.fs, ip, t_last_tree_fn, &leaf), 0);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(t.fs, ip);
	ck_assert_uint_ne(leaf, 0);
	t_remount(&t, all, 1);		/* a cold cache: tree blocks are read */
	t_eio(&t, leaf, leaf + 1, 1u << MQ_OP_READ);
	ck_assert_int_eq(mqfs_setattr(t.fs, tf.ino, &a, MQFS_SET_SIZE, NULL),
			 -EIO);
	t_eio(&t, 0, 0, 0);
	ck_assert_int_eq(mqfs_sync(t.fs), 0);
	t_file_close(&tf);
	t_fs_crash(&t);
	t_file_reopen(&tf);
	ck_assert_uint_eq(t_stat(&tf).st_size, 0);
	ck_assert_uint_eq(t_data_blocks(&tf), 0);
	a.st_size = (off_t)size;
	ck_assert_int_eq(mqfs_setattr(t.fs, tf.ino, &a, MQFS_SET_SIZE, NULL),
			 0);
	memset(buf, 0, size);
	ck_assert_int_eq(t_read(t.fs, tf.f, 0, got, size), (ssize_t)size);
	ck_assert_msg(!memcmp(got, buf, size), "old data past the end is back");
	t_fsck(&t, all, 1);
	t_file_free(&tf);
	t_fs_destroy(&t);
	free(buf);
	free(got);
}
END_TEST

/* ---- everything at random ---------------------------------------------- */

static void t_random_op(struct t_file *tf, uint8_t *buf)
{
	unsigned r = (unsigned)rand() % 20;
	uint64_t off = (uint64_t)rand() % (3 * T_FS_MIB);
	uint64_t len = 1 + (uint64_t)rand() % (rand() % 3 ? 20000 : 400000);

	len = MQ_MIN(len, T_MODEL_MAX - off);
	if (r < 10) {
		t_rand_bytes(buf, len);
		t_mwrite(tf, off, buf, len);
	} else if (r < 12) {
		t_mtruncate(tf, off);
	} else if (r < 14) {
		t_ok(tf, t_falloc(tf, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, off, len) == 0, "punch");
		if (off < tf->size)
			memset(tf->model + off, 0,
			       MQ_MIN(len, tf->size - off));
	} else if (r < 16) {
		int keep = rand() % 2 ? FALLOC_FL_KEEP_SIZE : 0;

		t_ok(tf, t_falloc(tf, FALLOC_FL_ZERO_RANGE | keep, off, len)
		     == 0, "zero range");
		memset(tf->model + off, 0, len);
		if (!keep)
			tf->size = MQ_MAX(tf->size, off + len);
	} else if (r < 18) {
		int keep = rand() % 2 ? FALLOC_FL_KEEP_SIZE : 0;

		t_ok(tf, t_falloc(tf, keep, off, len) == 0, "fallocate");
		if (!keep)
			tf->size = MQ_MAX(tf->size, off + len);
	} else {
		uint8_t *got = malloc(len);
		ssize_t n = t_read(*tf->fsp, tf->f, off, got, len);

		t_ok(tf, n == (ssize_t)(off < tf->size ?
					MQ_MIN(len, tf->size - off) : 0),
		     "read %" PRIu64 "+%" PRIu64 " got %zd", off, len, n);
		t_ok(tf, n <= 0 || !memcmp(got, tf->model + off, (size_t)n),
		     "read %" PRIu64 "+%" PRIu64 " differs", off, len);
		free(got);
	}
}

START_TEST(test_random_ops)
{
	uint8_t *buf = malloc(T_MODEL_MAX);
	struct t_file tf;
	struct t_fs t;
	uint64_t free0;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "random", O_RDWR);
	free0 = t_free_blocks(&t);
	tf.seed = t_seed(4242 + (unsigned)_i);
	srand(tf.seed);
	for (tf.step = 0; tf.step < 300; tf.step++) {
		t_random_op(&tf, buf);
		if (tf.step % 15 == 0)
			t_check(&tf);
		if (tf.step % 100 == 99) {
			struct t_file *all[] = { &tf };

			t_fsck(&t, all, 1);
			t_check(&tf);
		}
	}
	t_check(&tf);
	t_mtruncate(&tf, 0);
	ck_assert_uint_eq(t_blocks(&tf), 0);
	ck_assert_uint_eq(t_free_blocks(&t), free0);
	free(buf);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

/* ---- threads ----------------------------------------------------------- */

struct t_worker {
	pthread_t tid;
	struct t_file tf;
	uint8_t *buf;
};

static void *t_worker_run(void *arg)
{
	struct t_worker *w = arg;

	srand(w->tf.seed);
	for (w->tf.step = 0; w->tf.step < 120; w->tf.step++) {
		uint64_t off = (uint64_t)(rand() % 128) * 4096;
		size_t n = rand() % 2 ? 4096 * (1 + (size_t)(rand() % 8)) :
			   1 + (size_t)(rand() % 10000);
		ssize_t r;

		if (rand() % 3) {
			t_rand_bytes(w->buf, n);
			r = t_write(*w->tf.fsp, w->tf.f, off, w->buf, n);
			if (r != (ssize_t)n)
				return "write failed";
			memcpy(w->tf.model + off, w->buf, n);
			w->tf.size = MQ_MAX(w->tf.size, off + n);
		} else {
			r = t_read(*w->tf.fsp, w->tf.f, off, w->buf, n);
			if (r != (ssize_t)(off < w->tf.size ?
					   MQ_MIN(n, w->tf.size - off) : 0) ||
			    (r > 0 && memcmp(w->buf, w->tf.model + off,
					     (size_t)r)))
				return "read differs";
		}
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct t_worker w[4];
	struct t_fs t;

	t_fs_make(&t, T_SIZE);
	for (unsigned i = 0; i < 4; i++) {
		char name[8] = "t0";

		name[1] = (char)('0' + i);
		t_file_create(&t, &w[i].tf, name, O_RDWR);
		w[i].tf.seed = 700 + i;
		w[i].buf = malloc(64 * 1024);
		ck_assert_int_eq(pthread_create(&w[i].tid, NULL, t_worker_run,
						&w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		void *res;

		ck_assert_int_eq(pthread_join(w[i].tid, &res), 0);
		ck_assert_msg(res == NULL, "worker %u: %s", i,
			      res ? (char *)res : "");
	}
	{
		struct t_file *all[] = { &w[0].tf, &w[1].tf, &w[2].tf,
					 &w[3].tf };

		t_fsck(&t, all, 4);
	}
	for (unsigned i = 0; i < 4; i++) {
		t_check(&w[i].tf);
		free(w[i].buf);
		t_file_free(&w[i].tf);
	}
	t_fs_destroy(&t);
}
END_TEST


/* mtime of @ino as its record in the inode table has it now. */
static struct timespec t_record_mtime(struct mqfs_fs *fs, uint64_t ino)
{
	uint32_t ag = (uint32_t)((ino - 1) / fs->inodes_per_ag);
	uint32_t i = (uint32_t)((ino - 1) % fs->inodes_per_ag);
	uint64_t blk = mqfs_fs_ag_meta(fs, ag) + 3 + i / MQFS_INODES_PER_BLOCK;
	struct mqfs_inode d;
	struct mqfs_buf *b;

	ck_assert_int_eq(mqfs_buf_read(fs, blk, MQFS_T_ITABLE, &b), 0);
	memcpy(&d, (char *)b->data +
	       mqfs_itable_offset(i % MQFS_INODES_PER_BLOCK), sizeof(d));
	mqfs_buf_put(b);
	return (struct timespec){ .tv_sec = (time_t)d.mtime_sec,
				  .tv_nsec = d.mtime_nsec };
}

static bool t_ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* @n empty files in the root, their lookups given back (unused). */
static void t_make_others(struct t_fs *t, const char *prefix, int n)
{
	struct mqfs_entry e;
	char name[32];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%d", prefix, i);
		ck_assert_int_eq(mqfs_mknod(t->fs, MQFS_ROOT_INO, name,
					    S_IFREG | 0644, 0, 0, 0, &e), 0);
		mqfs_forget(t->fs, e.ino, 1);
	}
}

/* One aligned 4 KiB overwrite at 0; the mtime stat sees right after. */
static struct timespec t_overwrite(struct t_file *tf, uint8_t *blk, int v)
{
	memset(blk, v, 4096);
	ck_assert_int_eq(t_write(*tf->fsp, tf->f, 0, blk, 4096), 4096);
	return t_stat(tf).st_mtim;
}

/*
 * The times of an overwrite: visible at once, in the record only once a
 * commit takes them - fsync (then they survive a power cut), unmount,
 * and eviction of the unused inode from the cache.
 */
START_TEST(test_lazy_times)
{
	struct timespec m0, m1, m2, m3;
	struct mqfs_entry e;
	struct t_file tf;
	struct t_fs t;
	uint8_t *blk;

	ck_assert_int_eq(posix_memalign((void **)&blk, 4096, 4096), 0);
	t_fs_make_opts(&t, T_SIZE, 0, true);
	t_file_create(&t, &tf, "lazy", O_RDWR);
	m0 = t_overwrite(&tf, blk, 1);		/* allocating: journaled */
	ck_assert_int_eq(mqfs_fsync(t.fs, tf.ino, false), 0);
	ck_assert(t_ts_eq(t_record_mtime(t.fs, tf.ino), m0));
	m1 = t_overwrite(&tf, blk, 2);
	ck_assert(!t_ts_eq(m1, m0));
	ck_assert_msg(t_ts_eq(t_record_mtime(t.fs, tf.ino), m0),
		      "an overwrite wrote its inode record");
	ck_assert_int_eq(mqfs_fsync(t.fs, tf.ino, true), 0);
	ck_assert(t_ts_eq(t_record_mtime(t.fs, tf.ino), m1));
	t_file_close(&tf);
	t_fs_crash(&t);
	t_file_reopen(&tf);
	ck_assert_msg(t_ts_eq(t_stat(&tf).st_mtim, m1), "fsync'd mtime lost");
	/* Unmount writes them. */
	m2 = t_overwrite(&tf, blk, 3);
	t_file_close(&tf);
	t_fs_remount(&t);
	t_file_reopen(&tf);
	ck_assert_msg(t_ts_eq(t_stat(&tf).st_mtim, m2), "lost at unmount");
	/* Nor are they lost in a small cache (it keeps 512 unused inodes):
	 * pushed by 600 others, the unused inode with its times in memory
	 * stays cached; a commit writes it, and then it may go. */
	t_file_close(&tf);
	t_fs_unmount(&t);
	t.mount.meta_cache_bytes = 256 * T_KIB;
	t_fs_mount(&t);
	t_file_reopen(&tf);
	m3 = t_overwrite(&tf, blk, 4);
	t_file_close(&tf);
	t_make_others(&t, "other", 600);
	ck_assert_msg(t_ts_eq(t_stat(&tf).st_mtim, m3),
		      "an inode with times in memory was evicted");
	ck_assert_int_eq(mqfs_sync(t.fs), 0);
	ck_assert(t_ts_eq(t_record_mtime(t.fs, tf.ino), m3));
	t_make_others(&t, "more", 600);
	ck_assert_int_eq(mqfs_lookup(t.fs, MQFS_ROOT_INO, "lazy", &e), 0);
	ck_assert(t_ts_eq(e.st.st_mtim, m3));
	mqfs_forget(t.fs, e.ino, 1);
	t_file_reopen(&tf);
	t_file_free(&tf);
	t_fs_destroy(&t);
	free(blk);
}
END_TEST


/* ---- lazy times under load: no deadlock ------------------------------- */

struct t_storm {
	struct t_fs *t;
	struct mqfs_file *f;
	uint64_t ino;
	unsigned id;
	atomic_bool *stop;
	unsigned rounds;
	int err;
};

/* Overwrite (lazy times) and fsync, or create/overwrite/unlink (deletes). */
static void *t_storm_run(void *arg)
{
	struct t_storm *s = arg;
	struct mqfs_fs *fs = s->t->fs;
	uint8_t *blk = NULL;
	char name[32];

	if (posix_memalign((void **)&blk, 4096, 4096))
		return (void *)"no memory";
	memset(blk, (int)s->id, 4096);
	while (!atomic_load(s->stop) && !s->err) {
		struct mqfs_entry e;
		struct mqfs_file *f;

		if (s->f) {
			ssize_t n = t_write(fs, s->f, (s->rounds % 16) * 4096,
					    blk, 4096);

			if (n != 4096)
				s->err = n < 0 ? (int)n : -EIO;
			else if (s->rounds % 4 == 0)
				s->err = mqfs_fsync(fs, s->ino, false);
		} else {
			snprintf(name, sizeof(name), "storm%u.%u", s->id,
				 s->rounds);
			s->err = mqfs_mknod(fs, MQFS_ROOT_INO, name,
					    S_IFREG | 0644, 0, 0, 0, &e);
			if (!s->err)
				s->err = mqfs_open(fs, e.ino, O_RDWR, &f);
			if (!s->err) {
				if (t_write(fs, f, 0, blk, 4096) != 4096 ||
				    t_write(fs, f, 0, blk, 4096) != 4096)
					s->err = -EIO;
				mqfs_release(fs, f);
			}
			if (!s->err)
				s->err = mqfs_unlink(fs, MQFS_ROOT_INO, name);
			if (!s->err)
				mqfs_forget(fs, e.ino, 1);
		}
		s->rounds++;
	}
	free(blk);
	return NULL;
}

/*
 * Overwrites keep their times on the lazy list while other threads
 * fsync (each fsync writes the list in handles of its own), delete
 * overwritten files (a deletion takes its inode off the list) and the
 * commit thread runs every 5 ms with a journal small enough to be full
 * often: every thread must get through (a lock-order cycle between the
 * list and the journal hung fsync for good once), and the image checks
 * clean afterwards.
 */
START_TEST(test_lazy_times_storm)
{
	static uint8_t zero[64 * 1024];
	struct t_storm s[4];
	atomic_bool stop = false;
	struct t_file tf[2];
	pthread_t tid[4];
	struct t_fs t;

	t_fs_make_opts(&t, T_SIZE, 0, false);
	t_fs_unmount(&t);
	t.mkfs.journal_bytes = 64 * 4096;
	ck_assert_int_eq(mqfs_mkfs(t.q, &t.mkfs, NULL), 0);
	t.mount.commit_interval_ms = 5;
	t_fs_mount(&t);
	for (unsigned i = 0; i < 4; i++) {
		s[i] = (struct t_storm){ .t = &t, .id = i, .stop = &stop };
		if (i >= 2)
			continue;
		t_file_create(&t, &tf[i], i ? "storm-b" : "storm-a", O_RDWR);
		t_mwrite(&tf[i], 0, zero, sizeof(zero));	/* allocated */
		s[i].f = tf[i].f;
		s[i].ino = tf[i].ino;
	}
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&tid[i], NULL, t_storm_run,
						&s[i]), 0);
	usleep(1500 * 1000);
	atomic_store(&stop, true);
	for (unsigned i = 0; i < 4; i++) {
		struct timespec due;

		clock_gettime(CLOCK_REALTIME, &due);
		due.tv_sec += 20;
		ck_assert_msg(pthread_timedjoin_np(tid[i], NULL, &due) == 0,
			      "storm thread %u hangs (round %u)", i,
			      s[i].rounds);
		ck_assert_msg(!s[i].err, "storm thread %u: %d", i, s[i].err);
		ck_assert_uint_gt(s[i].rounds, 10);
	}
	t_file_free(&tf[0]);
	t_file_free(&tf[1]);
	t_fs_unmount(&t);
	{
		struct mqfs_fsck_opts fo = { .mode = MQFS_FSCK_NO,
					     .force = true };

		ck_assert_int_eq(mqfs_fsck(t.q, &fo), MQFS_FSCK_OK);
	}
	t_fs_destroy(&t);
}
END_TEST

/*
 * An interrupted reader is answered before its device read ends, and its
 * close may then reach the filesystem with the read still in flight:
 * mqfs_release must wait for it (the read ends in the file's inode and,
 * with dontcache, its read-ahead windows).  The device here takes 200 ms
 * per completion, so a release that does not wait returns first.
 */
START_TEST(test_release_waits_for_reads)
{
	struct mq_fault_config fc = { .latency_ns = 200 * 1000 * 1000ull,
				      .seed = 1 };
	bool dontcache = _i;
	uint8_t buf[64 * 1024];
	struct t_file tf;
	struct mqfs_io io;
	struct t_wait w;
	struct t_fs t;
	void *room;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "inflight", O_RDWR);
	memset(buf, 0x6b, sizeof(buf));
	ck_assert_int_eq(t_write(t.fs, tf.f, 0, buf, sizeof(buf)),
			 (ssize_t)sizeof(buf));
	t_file_close(&tf);
	t_fs_unmount(&t);
	t_fs_close_queue(&t);
	t.fault = mq_fault_open(t.ram, &fc);
	ck_assert_ptr_nonnull(t.fault);
	t.q = t_fs_queue(t.fault);
	t_fs_mount(&t);
	t_file_reopen(&tf);
	if (dontcache)
		mqfs_file_set_dontcache(tf.f);
	room = t_read_room(0, sizeof(buf));
	ck_assert_ptr_nonnull(room);
	memset(buf, 0, sizeof(buf));
	t_wait_init(&w, buf, sizeof(buf));
	mqfs_read(t.fs, tf.f, 0, sizeof(buf), room, &io, t_read_done, &w);
	t_file_close(&tf);
	pthread_mutex_lock(&w.m);
	ck_assert_msg(w.done, "release returned with the read in flight");
	pthread_mutex_unlock(&w.m);
	ck_assert_int_eq(t_wait_end(&w), (ssize_t)sizeof(buf));
	ck_assert_uint_eq(buf[0], 0x6b);
	ck_assert_uint_eq(buf[sizeof(buf) - 1], 0x6b);
	free(room);
	t_file_free(&tf);
	t_fs_destroy(&t);
}
END_TEST

static Suite *file_suite(void)
{
	Suite *s = suite_create("file");
	TCase *tc = t_tcase(s, "file", 120);

	tcase_add_test(tc, test_aligned);
	tcase_add_loop_test(tc, test_unaligned_random, 0, 2);
	tcase_add_test(tc, test_eof_and_empty);
	tcase_add_test(tc, test_sparse);
	tcase_add_test(tc, test_across_extents);
	tcase_add_test(tc, test_append);
	tcase_add_test(tc, test_truncate);
	tcase_add_test(tc, test_fallocate_modes);
	tcase_add_test(tc, test_seek_data_hole);
	tcase_add_test(tc, test_size_limit);
	tcase_add_test(tc, test_readonly);
	tcase_add_test(tc, test_enospc);
	tcase_add_test(tc, test_enospc_busy_retry);
	tcase_add_test(tc, test_crash_consistency);
	tcase_add_test(tc, test_io_errors);
	tcase_add_test(tc, test_truncate_interrupted);
	tcase_add_loop_test(tc, test_random_ops, 0, 2);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_lazy_times);
	tcase_add_test(tc, test_lazy_times_storm);
	tcase_add_loop_test(tc, test_release_waits_for_reads, 0, 2);
	return s;
}

T_MAIN(file_suite)
