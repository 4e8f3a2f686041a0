// SPDX-License-Identifier: MIT
/*
 * file_crash.c - test_file's power cuts and device errors: each block
 * of a file cut in the middle of overwrites is one version or the other,
 * I/O errors reach the caller and leave a consistent fs, and a truncate
 * interrupted by a cut is finished at the next mount.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>

#include "file_fixture.h"
#include "t_fsio.h"
#include "mqfs/dev/fault.h"

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

void file_add_crash_tests(TCase *tc)
{
	tcase_add_test(tc, test_crash_consistency);
	tcase_add_test(tc, test_io_errors);
	tcase_add_test(tc, test_truncate_interrupted);
}
