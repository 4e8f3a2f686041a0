// SPDX-License-Identifier: MIT
/*
 * fsck_crash.c - test_fsck's crash images: power cut after an unlink of
 * an open file (journal and orphan list), a committed transaction
 * carrying a bad superblock copy, and cuts in the middle of churn
 * (MQFS_FSCK_CRASH reruns one round).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "fsck_fixture.h"
#include "t_jforge.h"
#include "mqfs/dev/fault.h"

/* ---- crash images -------------------------------------------------------- */

/* Cut the power and reopen the device without mounting it. */
static void tf_crash_unmounted(struct t_fs *t)
{
	mq_fault_power_cut(t->fault, MQ_FAULT_CUT_LOSE);
	(void)mqfs_unmount(t->fs);
	t->fs = NULL;
	t_fs_close_queue(t);
	t_fs_open_queue(t, true);
}

START_TEST(test_journal_and_orphan)
{
	struct tf x;
	struct mqfs_file *f;
	uint64_t c, o;
	struct mqfs_fsck_opts fo = { .mode = MQFS_FSCK_NO, .force = false };

	memset(&x, 0, sizeof(x));
	t_fs_make_opts(&x.t, TF_SIZE, 0, true);
	c = tf_mk(&x.t, MQFS_ROOT_INO, "c", S_IFREG | 0644);
	tf_write_file(&x.t, c, 7, 5 * MQFS_BLOCK_SIZE);
	o = tf_mk(&x.t, MQFS_ROOT_INO, "o", S_IFREG | 0644);
	tf_write_file(&x.t, o, 8, 2 * MQFS_BLOCK_SIZE);
	ck_assert_int_eq(mqfs_open(x.t.fs, o, O_RDONLY, &f), 0);
	ck_assert_int_eq(mqfs_unlink(x.t.fs, MQFS_ROOT_INO, "o"), 0);
	ck_assert_int_eq(mqfs_sync(x.t.fs), 0);
	ck_assert_uint_eq(mqfs_sb(x.t.fs)->orphan_head, o);
	tf_crash_unmounted(&x.t);	/* its teardown released @f */
	/* Not clean: checked even without -f; routine work is no error. */
	tf_snapshot(&x);
	ck_assert_int_eq(mqfs_fsck(x.t.q, &fo), MQFS_FSCK_OK);
	ck_assert(tf_unchanged(&x));
	ck_assert_int_eq(tf_fsck(&x.t, MQFS_FSCK_PREEN, false), MQFS_FSCK_OK);
	ck_assert_uint_eq(tf_sb(&x.t)->orphan_head, 0);
	ck_assert_uint_eq(tf_inode(&x.t, o)->mode, 0);
	tf_check_n(&x, MQFS_FSCK_OK);
	t_fs_mount(&x.t);
	ck_assert_uint_eq(tf_lookup(&x.t, MQFS_ROOT_INO, "c"), c);
	ck_assert(tf_file_is(&x.t, c, 7, 5 * MQFS_BLOCK_SIZE));
	tf_destroy(&x);
}
END_TEST

/*
 * The hostile campaign's lost filesystem: a crash leaves a committed,
 * checksum-valid transaction whose superblock copy is bad.  fsck -n
 * says so without writing; a mount replays the rest, keeps block 0,
 * flags the error and never lets the bad copy reach the backup; fsck -y
 * then ends clean and the files are there.
 */
START_TEST(test_journal_bad_super)
{
	struct tf x;
	uint64_t c, backup;
	uint8_t *bk;

	memset(&x, 0, sizeof(x));
	t_fs_make_opts(&x.t, TF_SIZE, 0, true);
	c = tf_mk(&x.t, MQFS_ROOT_INO, "c", S_IFREG | 0644);
	tf_write_file(&x.t, c, 7, 5 * MQFS_BLOCK_SIZE);
	ck_assert_int_eq(mqfs_sync(x.t.fs), 0);
	tf_crash_unmounted(&x.t);
	backup = tf_sb(&x.t)->block_count - 1;
	bk = malloc(MQFS_BLOCK_SIZE);
	memcpy(bk, t_fs_raw_block(&x.t, backup), MQFS_BLOCK_SIZE);
	t_jforge_super(t_fs_raw_block(&x.t, tf_sb(&x.t)->journal_start),
		       tf_sb(&x.t)->journal_start, t_jforge_bad_geometry);
	tf_check_n(&x, MQFS_FSCK_UNCORRECTED);
	t_fs_mount(&x.t);
	ck_assert(mqfs_is_readonly(x.t.fs));
	ck_assert_uint_eq(tf_lookup(&x.t, MQFS_ROOT_INO, "c"), c);
	ck_assert(tf_file_is(&x.t, c, 7, 5 * MQFS_BLOCK_SIZE));
	t_fs_unmount_unclean(&x.t);
	ck_assert_uint_eq(tf_sb(&x.t)->block_size, MQFS_BLOCK_SIZE);
	ck_assert_uint_ne(tf_sb(&x.t)->state & MQFS_STATE_ERRORS, 0);
	ck_assert_msg(!memcmp(bk, t_fs_raw_block(&x.t, backup),
			      MQFS_BLOCK_SIZE), "the backup was rewritten");
	ck_assert_int_eq(tf_fsck(&x.t, MQFS_FSCK_YES, false), MQFS_FSCK_FIXED);
	tf_check_n(&x, MQFS_FSCK_OK);
	t_fs_mount(&x.t);
	ck_assert(!mqfs_is_readonly(x.t.fs));
	ck_assert(tf_file_is(&x.t, c, 7, 5 * MQFS_BLOCK_SIZE));
	free(bk);
	tf_destroy(&x);
}
END_TEST

#define TF_CRASH_ROUNDS		12u

/*
 * Power cuts in the middle of churn: whatever the journal holds, the
 * image must check clean with -n (as if replayed), replay with -p
 * without finding a problem, and mount.  A failing round prints its
 * number; MQFS_FSCK_CRASH=i reruns just that one.
 */
START_TEST(test_crash_churn)
{
	unsigned first = 0, rounds = TF_CRASH_ROUNDS;

	if (getenv("MQFS_FSCK_CRASH")) {
		first = (unsigned)atoi(getenv("MQFS_FSCK_CRASH"));
		rounds = first + 1;
	}
	for (unsigned round = first; round < rounds; round++) {
		uint64_t dirs[6], rng = 777 + round;
		struct tf x;
		unsigned ops;
		int ret;

		memset(&x, 0, sizeof(x));
		t_fs_make_opts(&x.t, TF_SIZE, 0, true);
		tf_churn_dirs(&x.t, dirs, MQ_ARRAY_SIZE(dirs));
		ops = 50 + tf_next(&rng) % 400;
		for (unsigned op = 0; op < ops; op++) {
			tf_churn_op(&x.t, dirs, MQ_ARRAY_SIZE(dirs),
				    tf_next(&rng));
			if (tf_next(&rng) % 37 == 0)
				ck_assert_int_eq(mqfs_sync(x.t.fs), 0);
		}
		tf_crash_unmounted(&x.t);
		fprintf(stderr, "crash round %u: %u ops\n", round, ops);
		tf_snapshot(&x);
		ret = tf_fsck(&x.t, MQFS_FSCK_NO, false);
		ck_assert_msg(ret == MQFS_FSCK_OK, "crash round %u: -n "
			      "returned %d", round, ret);
		ck_assert(tf_unchanged(&x));
		ret = tf_fsck(&x.t, MQFS_FSCK_PREEN, false);
		ck_assert_msg(ret == MQFS_FSCK_OK, "crash round %u: -p "
			      "returned %d", round, ret);
		tf_check_n(&x, MQFS_FSCK_OK);
		t_fs_mount(&x.t);
		(void)tf_walk(&x.t, MQFS_ROOT_INO, 0);
		t_fs_unmount(&x.t);
		tf_check_n(&x, MQFS_FSCK_OK);
		tf_destroy(&x);
	}
}
END_TEST

void fsck_add_crash_tests(TCase *tc)
{
	tcase_add_test(tc, test_journal_and_orphan);
	tcase_add_test(tc, test_journal_bad_super);
	tcase_add_test(tc, test_crash_churn);
}
