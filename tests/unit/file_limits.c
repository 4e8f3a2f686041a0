// SPDX-License-Identifier: MIT
/*
 * file_limits.c - test_file's limits: the maximum file size, a
 * read-only mount, ENOSPC on a small filesystem (a short count that
 * says why, then ENOSPC, and a consistent fs) and a retry while blocks
 * are busy.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "file_fixture.h"
#include "t_fsio.h"

/* ---- limits ------------------------------------------------------------ */

START_TEST(test_size_limit)
{
	const uint64_t max = MQFS_MAX_FILE_BYTES;
	uint8_t buf[100];
	struct stat a = { 0 }, out;
	struct t_file tf;
	struct t_fs t;
	int why;

	t_fs_make(&t, T_SIZE);
	t_file_create(&t, &tf, "big", O_RDWR);
	memset(buf, 0x42, sizeof(buf));
	ck_assert_int_eq(t_write(t.fs, tf.f, max, buf, 1), -EFBIG);
	/* Up to the limit: a short write, which says why. */
	ck_assert_int_eq(t_write_why(t.fs, tf.f, max - 10, buf, 100, &why), 10);
	ck_assert_int_eq(why, -EFBIG);
	ck_assert_int_eq(t_write_why(t.fs, tf.f, max - 10, buf, 10, &why), 10);
	ck_assert_int_eq(why, 0);
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
	int why;

	t_fs_make(&t, 4 * T_FS_MIB);
	t_file_create(&t, &tf, "full", O_RDWR);
	free0 = t_free_blocks(&t);	/* the root has its first block now */
	srand(3);
	t_rand_bytes(buf, big);
	r = t_write_why(t.fs, tf.f, 0, buf, big, &why);
	ck_assert_int_gt(r, 0);
	ck_assert_int_lt(r, (ssize_t)big);
	ck_assert_int_eq(why, -ENOSPC);
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

void file_add_limits_tests(TCase *tc)
{
	tcase_add_test(tc, test_size_limit);
	tcase_add_test(tc, test_readonly);
	tcase_add_test(tc, test_enospc);
	tcase_add_test(tc, test_enospc_busy_retry);
}
