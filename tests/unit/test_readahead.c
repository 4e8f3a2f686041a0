// SPDX-License-Identifier: MIT
/*
 * test_readahead.c - the read-ahead window of dontcache files
 * (src/fs/readahead.c): a sequential reader is served from windows (far
 * fewer device reads than reads) with the right bytes up to EOF; a write
 * through another open, a write-behind write, truncate and punch never
 * let a window answer with old bytes; random readers start no window;
 * close with a window in flight waits for it.
 */
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdlib.h>

#include "t_fs.h"
#include "t_fsio.h"
#include "t_main.h"

#define T_SIZE	(64 * T_FS_MIB)
#define T_FILE	(4 * T_FS_MIB + 12345)	/* ends inside a block */
#define T_RD	(64 * 1024)

static void t_fill(uint8_t *buf, size_t len, uint64_t off, unsigned tag)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(((off + i) * 2654435761u) >> 13) ^
			 (uint8_t)tag;
}

struct t_ra {
	struct t_fs t;
	uint64_t ino;
	struct mqfs_file *rd, *wr;	/* dontcache reader, plain writer */
	uint8_t *model, *buf;
};

static void t_ra_setup(struct t_ra *r)
{
	struct mqfs_entry e;

	t_fs_make(&r->t, T_SIZE);
	ck_assert_int_eq(mqfs_mknod(r->t.fs, MQFS_ROOT_INO, "f",
				    S_IFREG | 0644, 0, 0, 0, &e), 0);
	mqfs_forget(r->t.fs, e.ino, 1);
	r->ino = e.ino;
	ck_assert_int_eq(mqfs_open(r->t.fs, e.ino, O_RDWR, &r->wr), 0);
	ck_assert_int_eq(mqfs_open(r->t.fs, e.ino, O_RDONLY, &r->rd), 0);
	mqfs_file_set_dontcache(r->rd);
	r->model = malloc(T_FILE);
	r->buf = malloc(2 * T_RD);
	t_fill(r->model, T_FILE, 0, 1);
	ck_assert_int_eq(t_write(r->t.fs, r->wr, 0, r->model, T_FILE),
			 T_FILE);
}

static void t_ra_teardown(struct t_ra *r)
{
	mqfs_release(r->t.fs, r->rd);
	mqfs_release(r->t.fs, r->wr);
	t_fs_destroy(&r->t);
	free(r->buf);
	free(r->model);
}

static uint64_t t_device_reads(struct t_ra *r)
{
	struct mq_queue_stats s;

	mq_queue_get_stats(r->t.q, -1, &s);
	return s.ios[MQ_DIR_READ];
}

/* Read [off, off+len) through the reader; it must match the model. */
static void t_ra_check(struct t_ra *r, uint64_t off, size_t len,
		       uint64_t size)
{
	size_t want = off >= size ? 0 : (size_t)MQ_MIN(len, size - off);
	ssize_t n = t_read(r->t.fs, r->rd, off, r->buf, len);

	ck_assert_msg(n == (ssize_t)want, "read at %" PRIu64 ": %zd, want %zu",
		      off, n, want);
	ck_assert_msg(!memcmp(r->buf, r->model + off, want),
		      "stale or wrong bytes at %" PRIu64, off);
}

START_TEST(test_sequential_served)
{
	struct t_ra r;
	uint64_t before, reads = 0;

	t_ra_setup(&r);
	mqfs_release(r.t.fs, r.rd);
	mqfs_release(r.t.fs, r.wr);
	t_fs_remount(&r.t);	/* nothing cached in the buffer layer */
	ck_assert_int_eq(mqfs_open(r.t.fs, r.ino, O_RDWR, &r.wr), 0);
	ck_assert_int_eq(mqfs_open(r.t.fs, r.ino, O_RDONLY, &r.rd), 0);
	mqfs_file_set_dontcache(r.rd);
	before = t_device_reads(&r);
	for (uint64_t off = 0; off < T_FILE + T_RD; off += T_RD, reads++)
		t_ra_check(&r, off, T_RD, T_FILE);
	ck_assert_msg(t_device_reads(&r) - before < reads / 2,
		      "%" PRIu64 " device reads for %" PRIu64 " reads",
		      t_device_reads(&r) - before, reads);
	t_ra_teardown(&r);
}
END_TEST

/* Random offsets: every answer right, and no window is read. */
START_TEST(test_random_no_window)
{
	struct t_ra r;
	unsigned seed = 5;
	uint64_t before;

	t_ra_setup(&r);
	before = t_device_reads(&r);
	for (unsigned i = 0; i < 64; i++) {
		uint64_t off = ((uint64_t)rand_r(&seed) % (T_FILE / T_RD)) *
			       T_RD + T_RD / 2;

		t_ra_check(&r, off, T_RD, T_FILE);
	}
	ck_assert_uint_le(t_device_reads(&r) - before, 64 + 2);
	t_ra_teardown(&r);
}
END_TEST

/* Start a window by reading the first two pieces sequentially. */
static void t_ra_prime(struct t_ra *r)
{
	t_ra_check(r, 0, T_RD, T_FILE);
	t_ra_check(r, T_RD, T_RD, T_FILE);
}

START_TEST(test_write_invalidates)
{
	struct t_ra r;
	struct mqfs_file *wb;

	t_ra_setup(&r);
	t_ra_prime(&r);
	/* A plain write into the window's stretch. */
	t_fill(r.model + 2 * T_RD, T_RD, 2 * T_RD, 2);
	ck_assert_int_eq(t_write(r.t.fs, r.wr, 2 * T_RD, r.model + 2 * T_RD,
				 T_RD), T_RD);
	t_ra_check(&r, 2 * T_RD, T_RD, T_FILE);
	/* A write-behind write (pending) further on. */
	ck_assert_int_eq(mqfs_open(r.t.fs, r.ino, O_RDWR, &wb), 0);
	mqfs_file_set_dontcache(wb);
	t_ra_check(&r, 3 * T_RD, T_RD, T_FILE);
	t_fill(r.model + 4 * T_RD, T_RD, 4 * T_RD, 3);
	ck_assert_int_eq(t_write(r.t.fs, wb, 4 * T_RD, r.model + 4 * T_RD,
				 T_RD), T_RD);
	t_ra_check(&r, 4 * T_RD, T_RD, T_FILE);
	t_ra_check(&r, 5 * T_RD, T_RD, T_FILE);
	mqfs_release(r.t.fs, wb);
	t_ra_teardown(&r);
}
END_TEST

START_TEST(test_truncate_and_punch)
{
	struct t_ra r;
	struct stat a = { .st_size = 3 * T_RD + 100 };

	t_ra_setup(&r);
	t_ra_prime(&r);
	ck_assert_int_eq(mqfs_setattr(r.t.fs, r.ino, &a, MQFS_SET_SIZE, NULL),
			 0);
	t_ra_check(&r, 2 * T_RD, T_RD, (uint64_t)a.st_size);
	t_ra_check(&r, 3 * T_RD, T_RD, (uint64_t)a.st_size);
	/* Grow back: the cut bytes read as zeroes, not the window's. */
	a.st_size = T_FILE;
	ck_assert_int_eq(mqfs_setattr(r.t.fs, r.ino, &a, MQFS_SET_SIZE, NULL),
			 0);
	memset(r.model + 3 * T_RD + 100, 0, T_FILE - (3 * T_RD + 100));
	t_ra_check(&r, 0, T_RD, T_FILE);
	t_ra_check(&r, T_RD, T_RD, T_FILE);
	ck_assert_int_eq(mqfs_fallocate(r.t.fs, r.ino,
					FALLOC_FL_PUNCH_HOLE |
					FALLOC_FL_KEEP_SIZE, 2 * T_RD, T_RD),
			 0);
	memset(r.model + 2 * T_RD, 0, T_RD);
	t_ra_check(&r, 2 * T_RD, T_RD, T_FILE);
	t_ra_check(&r, 3 * T_RD, T_RD, T_FILE);
	t_ra_teardown(&r);
}
END_TEST

/* Close right after a window started: release waits for its read. */
START_TEST(test_close_in_flight)
{
	struct t_ra r;

	t_ra_setup(&r);
	for (unsigned i = 0; i < 50; i++) {
		struct mqfs_file *f;

		ck_assert_int_eq(mqfs_open(r.t.fs, r.ino, O_RDONLY, &f), 0);
		mqfs_file_set_dontcache(f);
		ck_assert_int_eq(t_read(r.t.fs, f, 0, r.buf, T_RD), T_RD);
		ck_assert_int_eq(mqfs_release(r.t.fs, f), 0);
	}
	t_ra_teardown(&r);
}
END_TEST

static Suite *ra_suite(void)
{
	Suite *s = suite_create("readahead");
	TCase *tc = t_tcase(s, "core", 60);

	tcase_add_test(tc, test_sequential_served);
	tcase_add_test(tc, test_random_no_window);
	tcase_add_test(tc, test_write_invalidates);
	tcase_add_test(tc, test_truncate_and_punch);
	tcase_add_test(tc, test_close_in_flight);
	return s;
}

T_MAIN(ra_suite)
