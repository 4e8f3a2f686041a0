// SPDX-License-Identifier: MIT
/*
 * file_fixture.c - the helpers test_file's case files share
 * (file_fixture.h): files of the filesystem under test and their
 * models.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "file_fixture.h"
#include "t_fsio.h"

/* ---- files and their models -------------------------------------------- */

unsigned t_seed(unsigned dflt)
{
	const char *s = getenv("T_FILE_SEED");

	return s ? (unsigned)strtoul(s, NULL, 0) : dflt;
}

void t_file_create(struct t_fs *t, struct t_file *tf, const char *name,
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

void t_file_close(struct t_file *tf)
{
	if (tf->f)
		ck_assert_int_eq(mqfs_release(*tf->fsp, tf->f), 0);
	tf->f = NULL;
}

void t_file_reopen(struct t_file *tf)
{
	ck_assert_int_eq(mqfs_open(*tf->fsp, tf->ino, tf->flags, &tf->f), 0);
}

void t_file_free(struct t_file *tf)
{
	t_file_close(tf);
	free(tf->model);
	tf->model = NULL;
}

void t_remount(struct t_fs *t, struct t_file **files, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		t_file_close(files[i]);
	t_fs_remount(t);
	for (unsigned i = 0; i < n; i++)
		t_file_reopen(files[i]);
}

/* Unmount, fsck must find nothing, mount again. */
void t_fsck(struct t_fs *t, struct t_file **files, unsigned n)
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

void t_rand_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rand() >> 7);
}

void t_next_tick(void)
{
	struct timespec a, b, ms = { .tv_nsec = 1000000 };

	clock_gettime(CLOCK_REALTIME_COARSE, &a);
	for (int i = 0; i < 1000; i++) {
		nanosleep(&ms, NULL);
		clock_gettime(CLOCK_REALTIME_COARSE, &b);
		if (a.tv_sec != b.tv_sec || a.tv_nsec != b.tv_nsec)
			return;
	}
	ck_abort_msg("CLOCK_REALTIME_COARSE did not move in 1000 ms");
}

struct stat t_stat(struct t_file *tf)
{
	struct stat st;

	ck_assert_int_eq(mqfs_getattr(*tf->fsp, tf->ino, &st), 0);
	return st;
}

/* Write through the fs and into the model; the whole count expected. */
void t_mwrite(struct t_file *tf, uint64_t off, const void *buf, size_t n)
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

void t_mtruncate(struct t_file *tf, uint64_t size)
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
void t_check(struct t_file *tf)
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

uint64_t t_free_blocks(struct t_fs *t)
{
	return atomic_load(&t->fs->free_blocks);
}

uint64_t t_blocks(struct t_file *tf)
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
uint64_t t_data_blocks(struct t_file *tf)
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

int t_falloc(struct t_file *tf, int mode, uint64_t off, uint64_t len)
{
	return mqfs_fallocate(*tf->fsp, tf->ino, mode, off, len);
}

uint64_t t_seek(struct t_file *tf, uint64_t off, int whence, int want)
{
	uint64_t out = ~0ull;
	int err = mqfs_lseek(*tf->fsp, tf->ino, off, whence, &out);

	ck_assert_msg(err == want, "lseek(%" PRIu64 ", %d) = %d, want %d",
		      off, whence, err, want);
	return out;
}
