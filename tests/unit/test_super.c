// SPDX-License-Identifier: MIT
/*
 * test_super.c - mkfs layouts, mount and unmount, the superblock's
 * states, the backup copy and the refusal of bad superblocks.
 */
#include <check.h>
#include <stdlib.h>

#include "t_fs.h"
#include "t_main.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

/* The layout of a size must hold its metadata and never exceed it. */
START_TEST(test_layout_sizes)
{
	static const uint64_t sizes[] = { 2, 3, 16, 64, 127, 128, 129, 256,
					  1024, 100000 };
	struct mqfs_mkfs_opts o = { 0 };
	struct mqfs_layout l;
	uint64_t blocks = sizes[_i] * T_FS_MIB / MQFS_BLOCK_SIZE;

	ck_assert_int_eq(mqfs_layout_compute(blocks, &o, &l), 0);
	ck_assert_uint_le(l.block_count, blocks);
	ck_assert_uint_ge(l.block_count, blocks > MQFS_AG_MAX_BLOCKS ?
			  blocks - MQFS_AG_MAX_BLOCKS : 0);
	ck_assert_uint_eq(l.ag_count,
			  (l.block_count + l.ag_blocks - 1) / l.ag_blocks);
	ck_assert_uint_eq(l.itable_blocks * MQFS_INODES_PER_BLOCK,
			  l.inodes_per_ag);
	ck_assert_uint_le(l.inodes_per_ag, MQFS_BITMAP_BITS);
	ck_assert_uint_ge(l.journal_blocks, 64);
	ck_assert_uint_lt(mqfs_ag_meta_start(&l, 0) + 3 + l.itable_blocks,
			  l.ag_count > 1 ? l.ag_blocks : l.block_count - 1);
}
END_TEST

/*
 * -N on a size whose short last AG is cut off: the inodes asked for
 * still all fit (16 GiB with a million inodes was refused with EINVAL).
 */
START_TEST(test_layout_inodes_after_cut)
{
	struct mqfs_mkfs_opts o = { .inodes = 1000000 };
	uint64_t blocks = (16ull << 30) / MQFS_BLOCK_SIZE;
	struct mqfs_layout l;

	ck_assert_int_eq(mqfs_layout_compute(blocks, &o, &l), 0);
	ck_assert_uint_lt(l.block_count, blocks);	/* the cut happened */
	ck_assert_uint_ge((uint64_t)l.inodes_per_ag * l.ag_count, o.inodes);
	ck_assert_uint_eq(l.itable_blocks * MQFS_INODES_PER_BLOCK,
			  l.inodes_per_ag);
	o.inodes = 2200000;
	ck_assert_int_eq(mqfs_layout_compute(blocks, &o, &l), 0);
	ck_assert_uint_ge((uint64_t)l.inodes_per_ag * l.ag_count, o.inodes);
}
END_TEST

START_TEST(test_layout_rejects)
{
	struct mqfs_mkfs_opts o = { 0 };
	struct mqfs_layout l;

	ck_assert_int_eq(mqfs_layout_compute(MQFS_MIN_BLOCKS - 1, &o, &l),
			 -ENOSPC);
	o.ag_blocks = 10;
	ck_assert_int_eq(mqfs_layout_compute(1 << 20, &o, &l), -EINVAL);
	o.ag_blocks = 0;
	o.journal_bytes = 4096;		/* one block: too small */
	ck_assert_int_eq(mqfs_layout_compute(1 << 20, &o, &l), -EINVAL);
	/* -J 100M on 8 MiB is refused, not cut to 2 MiB; 2 MiB fits. */
	o.journal_bytes = 100 << 20;
	ck_assert_int_eq(mqfs_layout_compute(2048, &o, &l), -EINVAL);
	o.journal_bytes = mqfs_mkfs_journal_max(8 << 20, &o);
	ck_assert_uint_eq(o.journal_bytes, 2 << 20);
	ck_assert_int_eq(mqfs_layout_compute(2048, &o, &l), 0);
	ck_assert_uint_eq(l.journal_blocks, 512);
	o.journal_bytes = 0;
	o.inodes = 1000;
	ck_assert_int_eq(mqfs_layout_compute(1 << 20, &o, &l), 0);
	ck_assert_uint_ge((uint64_t)l.inodes_per_ag * l.ag_count, 1000);
}
END_TEST

START_TEST(test_mount_states)
{
	struct t_fs t;
	struct mqfs_super *raw;
	struct statvfs st;

	t_fs_make(&t, 64 * T_FS_MIB);
	raw = mqfs_sb(t.fs);
	/* Mounted: in use (the crash test shows it reached the device). */
	ck_assert_uint_eq(raw->state & MQFS_STATE_CLEAN, 0);
	ck_assert_uint_eq(raw->mount_count, 1);
	ck_assert_int_eq(mqfs_statfs(t.fs, &st), 0);
	ck_assert_uint_eq(st.f_bsize, MQFS_BLOCK_SIZE);
	ck_assert_uint_eq(st.f_blocks, raw->block_count);
	ck_assert_uint_gt(st.f_bfree, st.f_blocks / 2);
	ck_assert_uint_eq(st.f_ffree, raw->inode_count - 1);
	t_fs_unmount(&t);
	raw = (struct mqfs_super *)t_fs_raw_block(&t, 0);
	ck_assert_int_eq(mqfs_blk_verify(raw, MQFS_T_SUPER, 0), 0);
	ck_assert_uint_ne(raw->state & MQFS_STATE_CLEAN, 0);
	ck_assert_uint_eq(raw->free_blocks, st.f_bfree);
	/* The backup equals the primary but for its own block number. */
	{
		uint64_t last = raw->block_count - 1;
		struct mqfs_super *b = (struct mqfs_super *)
			t_fs_raw_block(&t, last);

		ck_assert_int_eq(mqfs_blk_verify(b, MQFS_T_SUPER, last), 0);
		ck_assert_uint_eq(b->mount_count, raw->mount_count);
		ck_assert_uint_eq(b->state, raw->state);
	}
	t_fs_mount(&t);
	ck_assert_uint_eq(mqfs_sb(t.fs)->mount_count, 2);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_mount_refuses_bad_super)
{
	struct t_fs t;
	struct mqfs_fs *fs;
	uint8_t *raw;

	t_fs_make(&t, 16 * T_FS_MIB);
	t_fs_unmount(&t);
	raw = t_fs_raw_block(&t, 0);
	raw[200] ^= 0x40;			/* a flipped bit */
	ck_assert_int_eq(mqfs_mount(t.q, &t.mount, &fs), -EUCLEAN);
	raw[200] ^= 0x40;
	raw[8] ^= 0xff;				/* the magic */
	ck_assert_int_eq(mqfs_mount(t.q, &t.mount, &fs), -EINVAL);
	raw[8] ^= 0xff;
	t_fs_mount(&t);
	t_fs_destroy(&t);
}
END_TEST

/* Set feature word @which (0 compat, 1 ro_compat, 2 incompat) of block 0. */
static void ts_set_feature(struct t_fs *t, unsigned which, uint32_t bits)
{
	struct mqfs_super *sb = (struct mqfs_super *)t_fs_raw_block(t, 0);
	uint32_t *word[3] = { &sb->feature_compat, &sb->feature_ro_compat,
			      &sb->feature_incompat };
	/* mkfs's own features (sb_backups, lazy AGs) stay. */
	const uint32_t keep[3] = { 0, MQFS_FEATURE_RO_COMPAT_SUPP,
				   MQFS_FEATURE_INCOMPAT_SUPP };

	*word[which] = (*word[which] & keep[which]) | bits;
	mqfs_blk_seal(sb, MQFS_T_SUPER, 0, sb->hdr.gen);
}

static int ts_fsck_n(struct t_fs *t)
{
	struct mqfs_fsck_opts o = { .mode = MQFS_FSCK_NO, .force = true };

	fflush(stdout);
	return mqfs_fsck(t->q, &o);
}

/*
 * Feature words as ext4's: an unknown compat bit mounts read-write, an
 * unknown ro_compat bit only read-only, an unknown incompat bit not at
 * all; fsck checks only what it fully knows.
 */
START_TEST(test_mount_features)
{
	struct mqfs_mount_opts ro;
	struct mqfs_fs *fs;
	struct t_fs t;

	t_fs_make(&t, 16 * T_FS_MIB);
	t_fs_unmount(&t);
	ro = t.mount;
	ro.readonly = true;
	ts_set_feature(&t, 0, 1u << 31);
	t_fs_mount(&t);
	ck_assert(!mqfs_is_readonly(t.fs));
	t_fs_unmount(&t);
	ck_assert_int_eq(ts_fsck_n(&t), MQFS_FSCK_OK);
	ts_set_feature(&t, 0, 0);
	ts_set_feature(&t, 1, 1u << 3);
	ck_assert_int_eq(mqfs_mount(t.q, &t.mount, &fs), -EROFS);
	ck_assert_int_eq(mqfs_mount(t.q, &ro, &fs), 0);
	ck_assert(mqfs_is_readonly(fs));
	ck_assert_int_eq(mqfs_unmount(fs), 0);
	ck_assert_int_eq(ts_fsck_n(&t), MQFS_FSCK_ERROR);
	ts_set_feature(&t, 1, 0);
	ts_set_feature(&t, 2, 1u << 31);	/* bits 0, 1 are known */
	ck_assert_int_eq(mqfs_mount(t.q, &t.mount, &fs), -EOPNOTSUPP);
	ck_assert_int_eq(mqfs_mount(t.q, &ro, &fs), -EOPNOTSUPP);
	ck_assert_int_eq(ts_fsck_n(&t), MQFS_FSCK_ERROR);
	ts_set_feature(&t, 2, 0);
	t_fs_mount(&t);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_mkfs_too_small)
{
	struct mq_dev *ram = t_dev_ram(MQFS_MIN_BLOCKS * 4096ull - 4096, 8);
	struct mq_queue *q = t_fs_queue(ram);
	struct mqfs_mkfs_opts o = { 0 };

	ck_assert_int_eq(mqfs_mkfs(q, &o, NULL), -ENOSPC);
	o.size_bytes = 1ull << 40;		/* larger than the device */
	ck_assert_int_eq(mqfs_mkfs(q, &o, NULL), -ENOSPC);
	mq_queue_destroy(q);
	mq_dev_close(ram);
}
END_TEST

/* Everything mount wrote before a power cut survives it. */
START_TEST(test_crash_after_mount)
{
	struct t_fs t;
	struct mqfs_super *raw;

	t_fs_make_opts(&t, 32 * T_FS_MIB, 0, true);
	t_fs_crash(&t);
	raw = (struct mqfs_super *)mqfs_sb(t.fs);
	ck_assert_uint_eq(raw->mount_count, 2);
	ck_assert_uint_eq(raw->state & MQFS_STATE_CLEAN, 0);
	t_fs_destroy(&t);
}
END_TEST

static Suite *super_suite(void)
{
	Suite *s = suite_create("super");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_layout_sizes, 0, 10);
	tcase_add_test(tc, test_layout_inodes_after_cut);
	tcase_add_test(tc, test_layout_rejects);
	tcase_add_test(tc, test_mount_states);
	tcase_add_test(tc, test_mount_refuses_bad_super);
	tcase_add_test(tc, test_mount_features);
	tcase_add_test(tc, test_mkfs_too_small);
	tcase_add_test(tc, test_crash_after_mount);
	suite_add_tcase(s, tc);
	return s;
}

T_MAIN(super_suite)
