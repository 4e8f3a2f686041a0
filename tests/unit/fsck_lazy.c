// SPDX-License-Identifier: MIT
/*
 * fsck_lazy.c - fsck and lazy AGs (INCOMPAT_LAZY_AGS): an uninitialised
 * AG's blocks are never demanded, even full of garbage or of a stale
 * header of another filesystem; an extent into one makes -y initialise
 * it; an AG whose bit in the AG-init map was lost gets it back without
 * losing a file.  Each on a fresh 64 MiB image of 16 AGs where only the
 * AGs the test names have been used.
 */
#include <string.h>

#include "fsck_fixture.h"

#define TL_SIZE		(64 * T_FS_MIB)

/* A file of @len bytes of pattern @seed in the root (in AG 0). */
static uint64_t tl_file(struct t_fs *t, const char *name, unsigned seed,
			size_t len)
{
	uint64_t ino = tf_mk(t, MQFS_ROOT_INO, name, S_IFREG | 0644);

	tf_write_file(t, ino, seed, len);
	return ino;
}

/* Garbage over AG @ag's header, bitmaps and inode table. */
static void tl_poison(struct t_fs *t, uint32_t ag)
{
	struct mqfs_layout l = tf_layout(t);
	uint64_t meta = mqfs_ag_meta_start(&l, ag);

	for (uint64_t b = meta; b < meta + mqfs_ag_meta_len(&l, ag); b++)
		memset(t_fs_raw_block(t, b), 0x5a, MQFS_BLOCK_SIZE);
}

static uint8_t *tl_map(struct t_fs *t)
{
	return t_fs_raw_block(t, tf_sb(t)->aginit_blk);
}

/*
 * Garbage, and a sealed AG header that matches the geometry but carries
 * another filesystem's fs_tag (a re-mkfs over an older mqfs), in AGs
 * never initialised: -n is clean, writes nothing, and they stay so.
 */
START_TEST(test_lazy_uninit_not_read)
{
	struct t_fs t;
	struct mqfs_layout l;
	struct mqfs_ag *h;

	t_fs_make(&t, TL_SIZE);
	tl_file(&t, "f", 1, 5 * MQFS_BLOCK_SIZE);
	ck_assert(mqfs_ag_uninit(t.fs, 6) && mqfs_ag_uninit(t.fs, 7));
	t_fs_unmount(&t);
	l = tf_layout(&t);
	tl_poison(&t, 6);
	h = (struct mqfs_ag *)t_fs_raw_block(&t, mqfs_ag_meta_start(&l, 7));
	memset(h, 0, MQFS_BLOCK_SIZE);
	mqfs_ag_fresh_header(&l, 7, mqfs_ag_fresh_free_blocks(&l, 7), h);
	h->fs_tag = l.ag_tag ^ 1;
	mqfs_blk_seal(h, MQFS_T_AG, mqfs_ag_meta_start(&l, 7), 3);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_NO, true), MQFS_FSCK_OK);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_YES, true), MQFS_FSCK_OK);
	t_fs_mount(&t);
	ck_assert(mqfs_ag_uninit(t.fs, 6) && mqfs_ag_uninit(t.fs, 7));
	t_fs_destroy(&t);
}
END_TEST

/*
 * A file's extent moved into an uninitialised AG (AG 9): -n reports it,
 * -y initialises the AG (inode table zeroed, the blocks marked in use),
 * and the image is then clean, mounts with the AG initialised, and
 * takes new files.
 */
START_TEST(test_lazy_extent_into_uninit)
{
	struct t_fs t;
	struct mqfs_layout l;
	struct mqfs_inode *d;
	uint64_t ino, target;

	t_fs_make(&t, TL_SIZE);
	ino = tl_file(&t, "f", 2, 2 * MQFS_BLOCK_SIZE);
	t_fs_unmount(&t);
	l = tf_layout(&t);
	tl_poison(&t, 9);
	target = mqfs_ag_meta_start(&l, 9) + mqfs_ag_meta_len(&l, 9) + 40;
	d = tf_inode(&t, ino);
	ck_assert_uint_eq(d->u.ext[0].len, 2);
	memcpy(t_fs_raw_block(&t, target), t_fs_raw_block(&t, d->u.ext[0].pblk),
	       2 * MQFS_BLOCK_SIZE);
	d->u.ext[0].pblk = target;
	tf_inode_changed(&t, ino);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_NO, true), MQFS_FSCK_UNCORRECTED);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_YES, true), MQFS_FSCK_FIXED);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_NO, true), MQFS_FSCK_OK);
	ck_assert(t_fs_raw_zero(&t, mqfs_ag_meta_start(&l, 9) + 3));
	t_fs_mount(&t);
	ck_assert(!mqfs_ag_uninit(t.fs, 9));
	ck_assert(tf_file_is(&t, ino, 2, 2 * MQFS_BLOCK_SIZE));
	tl_file(&t, "g", 3, 3 * MQFS_BLOCK_SIZE);
	t_fs_unmount(&t);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_NO, true), MQFS_FSCK_OK);
	t_fs_destroy(&t);
}
END_TEST

/*
 * An initialised AG whose bit in the AG-init map was cleared (the map
 * resealed): -p sets it again, and no file in the AG is lost.
 */
START_TEST(test_lazy_map_bit_lost)
{
	struct t_fs t;
	uint64_t dir, ino;
	uint32_t ag;

	t_fs_make(&t, TL_SIZE);
	dir = tf_mk(&t, MQFS_ROOT_INO, "d", S_IFDIR | 0755);
	ino = tf_mk(&t, dir, "f", S_IFREG | 0644);
	tf_write_file(&t, ino, 4, 3 * MQFS_BLOCK_SIZE);
	ag = (uint32_t)((ino - 1) / t.fs->inodes_per_ag);
	ck_assert_uint_ne(ag, 0);
	t_fs_unmount(&t);
	tl_map(&t)[MQFS_HDR_SIZE + ag / 8] &= (uint8_t)~(1u << (ag % 8));
	tf_reseal(&t, tf_sb(&t)->aginit_blk);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_PREEN, true), MQFS_FSCK_FIXED);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_NO, true), MQFS_FSCK_OK);
	t_fs_mount(&t);
	ck_assert_uint_eq(tf_lookup(&t, dir, "f"), ino);
	ck_assert(tf_file_is(&t, ino, 4, 3 * MQFS_BLOCK_SIZE));
	t_fs_destroy(&t);
}
END_TEST

/* The map block unreadable: rebuilt from the AG headers that are ours. */
START_TEST(test_lazy_map_unreadable)
{
	struct t_fs t;
	uint64_t dir, ino;

	t_fs_make(&t, TL_SIZE);
	dir = tf_mk(&t, MQFS_ROOT_INO, "d", S_IFDIR | 0755);
	ino = tf_mk(&t, dir, "f", S_IFREG | 0644);
	tf_write_file(&t, ino, 5, MQFS_BLOCK_SIZE);
	t_fs_unmount(&t);
	memset(tl_map(&t) + 100, 0xff, 64);	/* checksum broken */
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_YES, true), MQFS_FSCK_FIXED);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_NO, true), MQFS_FSCK_OK);
	t_fs_mount(&t);
	ck_assert(tf_file_is(&t, ino, 5, MQFS_BLOCK_SIZE));
	ck_assert(mqfs_ag_uninit(t.fs, 12));
	t_fs_destroy(&t);
}
END_TEST

void fsck_add_lazy_tests(TCase *tc)
{
	tcase_add_test(tc, test_lazy_uninit_not_read);
	tcase_add_test(tc, test_lazy_extent_into_uninit);
	tcase_add_test(tc, test_lazy_map_bit_lost);
	tcase_add_test(tc, test_lazy_map_unreadable);
}
