// SPDX-License-Identifier: MIT
/*
 * file_io.c - test_file's basic I/O cases, checked against the model:
 * aligned and unaligned reads and writes, EOF and empty files, sparse
 * files, reads across many extents, O_APPEND, truncate down and up;
 * every fallocate mode and SEEK_DATA/SEEK_HOLE.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "file_fixture.h"
#include "t_fsio.h"

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
	t_next_tick();
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

void file_add_io_tests(TCase *tc)
{
	tcase_add_test(tc, test_aligned);
	tcase_add_loop_test(tc, test_unaligned_random, 0, 2);
	tcase_add_test(tc, test_eof_and_empty);
	tcase_add_test(tc, test_sparse);
	tcase_add_test(tc, test_across_extents);
	tcase_add_test(tc, test_append);
	tcase_add_test(tc, test_truncate);
	tcase_add_test(tc, test_fallocate_modes);
	tcase_add_test(tc, test_seek_data_hole);
}
