// SPDX-License-Identifier: MIT
/*
 * fsck_damage.c - test_fsck's cases of one damage at a time: a clean
 * image passes untouched, a device without mqfs is refused; each kind of
 * damage (superblock and its copies, inode table, directory block,
 * bitmap, link count, the next inode generation, extent outside the fs,
 * doubly claimed block, a resealed xattr entry, a broken chain of xattr
 * blocks or value fragments, corruption the daemon refuses to serve, an
 * extent tree block) is reported by -n without a write, repaired by -y
 * (or -p when safe), and the repaired image checks clean and still
 * reads the files that survived; and the image churn leaves is clean.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fsck_fixture.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

/* ---- clean images -------------------------------------------------------- */

START_TEST(test_clean)
{
	struct tf x;

	tf_populate(&x);
	tf_check_n(&x, MQFS_FSCK_OK);
	tf_snapshot(&x);
	ck_assert_int_eq(tf_fsck(&x.t, MQFS_FSCK_YES, true), MQFS_FSCK_OK);
	ck_assert_msg(tf_unchanged(&x), "fsck -y rewrote a clean image");
	ck_assert_int_eq(tf_fsck(&x.t, MQFS_FSCK_PREEN, false), MQFS_FSCK_OK);
	ck_assert_msg(tf_unchanged(&x), "fsck -p rewrote a clean image");
	tf_destroy(&x);
}
END_TEST

START_TEST(test_not_mqfs)
{
	struct t_fs t = { 0 };

	t.ram = t_dev_ram(TF_SIZE, 64);
	t.q = t_fs_queue(t.ram);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_NO, true), MQFS_FSCK_ERROR);
	ck_assert_int_eq(tf_fsck(&t, MQFS_FSCK_YES, true), MQFS_FSCK_ERROR);
	t_fs_destroy(&t);
}
END_TEST

/* ---- damage -------------------------------------------------------------- */

START_TEST(test_superblock)
{
	struct tf x;

	tf_populate(&x);
	t_fs_raw_block(&x.t, 0)[200] ^= 0x5a;
	tf_repair(&x, MQFS_FSCK_YES);
	t_fs_mount(&x.t);
	ck_assert_uint_eq(tf_lookup(&x.t, MQFS_ROOT_INO, "dir"), x.dir);
	ck_assert(tf_file_is(&x.t, x.a, 100, 2 * MQFS_BLOCK_SIZE));
	tf_check_files(&x, NULL, 0);
	tf_destroy(&x);
}
END_TEST

/*
 * Superblock copies (defect 2 of issue 13): mkfs and every clean unmount
 * write one at the end of the device and one at the end of AGs 1, 3, 5,
 * 7, 9 (of 16 here), each the primary's content sealed for its block.
 * With block 0 damaged and the end copy gone fsck -y works from an AG
 * copy (where block 0's geometry, or mkfs's default one, puts them);
 * with block 0 zeroed and AGs of a size it cannot guess, -b names one;
 * with every copy gone it gives up (exit 8).
 */
static void tf_zero_block(struct t_fs *t, uint64_t blk)
{
	memset(t_fs_raw_block(t, blk), 0, MQFS_BLOCK_SIZE);
}

START_TEST(test_sb_copies)
{
	struct mqfs_fsck_opts o = { .mode = MQFS_FSCK_YES };
	uint64_t at[MQFS_SB_COPIES_MAX];
	const uint64_t want[] = { 16383, 2047, 4095, 6143, 8191, 10239 };
	unsigned n;
	struct tf x;

	tf_populate(&x);
	n = mqfs_sb_copies(tf_sb(&x.t), at, MQ_ARRAY_SIZE(at));
	ck_assert_uint_eq(n, MQ_ARRAY_SIZE(want));
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *c = t_fs_raw_block(&x.t, at[i]);

		ck_assert_uint_eq(at[i], want[i]);
		ck_assert_int_eq(mqfs_blk_verify(c, MQFS_T_SUPER, at[i]), 0);
		/* The content of the last clean unmount's block 0. */
		ck_assert(!memcmp(c + MQFS_HDR_SIZE,
				  t_fs_raw_block(&x.t, 0) + MQFS_HDR_SIZE,
				  MQFS_PAYLOAD));
	}
	/* Block 0 damaged, the end copy gone: an AG copy brings it back. */
	t_fs_raw_block(&x.t, 0)[300] ^= 0x11;
	tf_zero_block(&x.t, at[0]);
	tf_repair(&x, MQFS_FSCK_YES);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(mqfs_blk_verify(t_fs_raw_block(&x.t, at[i]),
						 MQFS_T_SUPER, at[i]), 0);
	t_fs_mount(&x.t);
	tf_check_files(&x, NULL, 0);
	t_fs_unmount(&x.t);
	/* Block 0 zeroed, 1024-block AGs: no guess finds a copy but -b. */
	tf_zero_block(&x.t, 0);
	tf_zero_block(&x.t, at[0]);
	ck_assert_int_eq(mqfs_fsck(x.t.q, &o), MQFS_FSCK_ERROR);
	o.sb_block = at[3];
	ck_assert_int_eq(mqfs_fsck(x.t.q, &o), MQFS_FSCK_FIXED);
	tf_check_n(&x, MQFS_FSCK_OK);
	o.sb_block = at[3] + 1;			/* no copy there */
	ck_assert_int_eq(mqfs_fsck(x.t.q, &o), MQFS_FSCK_ERROR);
	/* Every copy gone: nothing to start from. */
	tf_zero_block(&x.t, 0);
	for (unsigned i = 0; i < n; i++)
		tf_zero_block(&x.t, at[i]);
	o.sb_block = 0;
	ck_assert_int_eq(mqfs_fsck(x.t.q, &o), MQFS_FSCK_ERROR);
	tf_destroy(&x);
}
END_TEST

/*
 * Found by tests/fuzz: block 0 resealed with another journal size, which
 * mkfs could have made: every number agrees with every other, but AG 0's
 * blocks are not where it says, and fsck -y "repaired" the filesystem
 * away (inode tables zeroed, the root recreated empty).  A copy whose
 * geometry finds AG 0's header must win, and nothing be lost.
 */
START_TEST(test_sb_misplaced)
{
	struct mqfs_super *sb;
	struct tf x;

	tf_populate(&x);
	for (int delta = -1; delta <= 8; delta += 9) {
		sb = tf_sb(&x.t);
		sb->journal_blocks = (uint32_t)((int)sb->journal_blocks + delta);
		/* AG 0's metadata, the AG-init map with it, moves too. */
		sb->aginit_blk = (uint64_t)((int64_t)sb->aginit_blk + delta);
		tf_reseal(&x.t, 0);
		ck_assert_ptr_null(mqfs_super_why_bad(sb, 16384));
		tf_repair(&x, MQFS_FSCK_YES);
		t_fs_mount(&x.t);
		ck_assert_uint_eq(tf_lookup(&x.t, MQFS_ROOT_INO, "dir"), x.dir);
		tf_check_files(&x, NULL, 0);
		t_fs_unmount(&x.t);
	}
	tf_destroy(&x);
}
END_TEST

/* A file whose inode table block holds none of the directories. */
static unsigned tf_victim(struct tf *x)
{
	uint64_t keep[] = { MQFS_ROOT_INO, x->dir, x->sub, x->a, x->b, x->sym };

	for (unsigned i = TF_FILES; i-- > 0; ) {
		bool ok = true;

		for (unsigned k = 0; k < MQ_ARRAY_SIZE(keep); k++)
			ok &= tf_itable_blk(&x->t, keep[k]) !=
			      tf_itable_blk(&x->t, x->f[i]);
		if (ok)
			return i;
	}
	ck_abort_msg("no inode table block holds only plain files");
	return 0;
}

START_TEST(test_itable_block)
{
	struct tf x;
	uint64_t lost[TF_FILES], blk;
	unsigned v, nlost = 0;
	char name[16];

	tf_populate(&x);
	v = tf_victim(&x);
	blk = tf_itable_blk(&x.t, x.f[v]);
	for (unsigned i = 0; i < TF_FILES; i++)
		if (tf_itable_blk(&x.t, x.f[i]) == blk)
			lost[nlost++] = x.f[i];
	t_fs_raw_block(&x.t, blk)[1000] ^= 0xff;
	/* -p may not drop inodes: nothing changes but the error flag. */
	tf_snapshot(&x);
	ck_assert_int_eq(tf_fsck(&x.t, MQFS_FSCK_PREEN, true),
			 MQFS_FSCK_UNCORRECTED);
	ck_assert_uint_ne(tf_sb(&x.t)->state & MQFS_STATE_ERRORS, 0);
	ck_assert_int_eq(memcmp(x.snap + MQFS_BLOCK_SIZE,
				t_fs_raw_block(&x.t, 1),
				tf_dev_bytes(&x.t) - MQFS_BLOCK_SIZE), 0);
	tf_repair(&x, MQFS_FSCK_YES);
	t_fs_mount(&x.t);
	snprintf(name, sizeof(name), "f%02u", v);
	ck_assert_uint_eq(tf_lookup(&x.t, x.dir, name), 0);
	tf_check_files(&x, lost, nlost);
	tf_destroy(&x);
}
END_TEST

START_TEST(test_dir_block)
{
	struct tf x;
	uint64_t blk, lf;
	char name[32];

	tf_populate(&x);
	blk = tf_inode(&x.t, x.dir)->u.ext[0].pblk;
	ck_assert_uint_ne(blk, 0);
	t_fs_raw_block(&x.t, blk)[100] ^= 0x01;
	tf_repair(&x, MQFS_FSCK_YES);
	t_fs_mount(&x.t);
	lf = tf_lookup(&x.t, MQFS_ROOT_INO, "lost+found");
	ck_assert_uint_ne(lf, 0);
	/* The entries of that block went; their inodes are in lost+found. */
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)x.f[0]);
	ck_assert_uint_eq(tf_lookup(&x.t, lf, name), x.f[0]);
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)x.sub);
	ck_assert_uint_eq(tf_lookup(&x.t, lf, name), x.sub);
	ck_assert_uint_eq(tf_lookup(&x.t, x.dir, "f00"), 0);
	ck_assert(tf_file_is(&x.t, x.f[0], 0, TF_FILE_BYTES));
	tf_check_files(&x, NULL, 0);
	tf_destroy(&x);
}
END_TEST

/* Bit @blk of its AG's block bitmap flipped (and the bitmap resealed). */
static void tf_flip_bbit(struct t_fs *t, uint64_t blk)
{
	struct mqfs_layout l = tf_layout(t);
	uint32_t ag = (uint32_t)(blk / l.ag_blocks);
	uint64_t bm = mqfs_ag_meta_start(&l, ag) + 1;
	uint32_t bit = (uint32_t)(blk - (uint64_t)ag * l.ag_blocks);

	t_fs_raw_block(t, bm)[MQFS_HDR_SIZE + bit / 8] ^= (uint8_t)(1u << (bit % 8));
	tf_reseal(t, bm);
}

START_TEST(test_bitmap)
{
	struct tf x;
	uint64_t used, spare;

	tf_populate(&x);
	used = tf_inode(&x.t, x.a)->u.ext[0].pblk;
	spare = tf_sb(&x.t)->block_count - 2;	/* free: before the backup */
	tf_flip_bbit(&x.t, used);
	tf_flip_bbit(&x.t, spare);
	tf_repair(&x, MQFS_FSCK_PREEN);
	t_fs_mount(&x.t);
	ck_assert(tf_file_is(&x.t, x.a, 100, 2 * MQFS_BLOCK_SIZE));
	tf_destroy(&x);
}
END_TEST

START_TEST(test_link_count)
{
	struct tf x;
	struct stat st;

	tf_populate(&x);
	tf_inode(&x.t, x.b)->nlink = 7;
	tf_inode_changed(&x.t, x.b);
	tf_inode(&x.t, x.dir)->nlink = 2;	/* has one subdirectory */
	tf_inode_changed(&x.t, x.dir);
	tf_repair(&x, MQFS_FSCK_PREEN);
	t_fs_mount(&x.t);
	ck_assert_int_eq(mqfs_getattr(x.t.fs, x.b, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 1);
	ck_assert_int_eq(mqfs_getattr(x.t.fs, x.dir, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 3);
	ck_assert_int_eq(mqfs_getattr(x.t.fs, x.a, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 2);
	tf_destroy(&x);
}
END_TEST

/* A next inode generation an inode already has: raised above them all. */
START_TEST(test_inode_gen)
{
	const uint64_t *ino;
	struct tf x;

	tf_populate(&x);
	tf_sb(&x.t)->inode_gen = tf_inode(&x.t, x.b)->generation;
	tf_reseal(&x.t, 0);
	tf_repair(&x, MQFS_FSCK_PREEN);
	for (ino = (uint64_t[]){ x.a, x.b, x.dir, 0 }; *ino; ino++)
		ck_assert_uint_gt(tf_sb(&x.t)->inode_gen,
				  tf_inode(&x.t, *ino)->generation);
	tf_destroy(&x);
}
END_TEST

START_TEST(test_extent_outside)
{
	struct tf x;
	struct stat st;

	tf_populate(&x);
	tf_inode(&x.t, x.a)->u.ext[0].pblk = tf_sb(&x.t)->block_count + 5;
	tf_inode_changed(&x.t, x.a);
	tf_repair(&x, MQFS_FSCK_YES);
	t_fs_mount(&x.t);
	ck_assert_int_eq(mqfs_getattr(x.t.fs, x.a, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(st.st_blocks, 0);
	ck_assert(tf_file_is(&x.t, x.b, 101, MQFS_BLOCK_SIZE));
	tf_destroy(&x);
}
END_TEST

/* Block @blk damaged: reseal it, fsck -y, mount what is left. */
static void tf_repair_mount(struct tf *x, uint64_t blk)
{
	tf_reseal(&x->t, blk);
	tf_repair(x, MQFS_FSCK_YES);
	t_fs_mount(&x->t);
}

/*
 * An xattr entry damaged and the block resealed (name_len 0, value_len
 * past the end, one entry more counted): the daemon refuses the block,
 * so fsck must find it, and after -y the mount must not meet it again.
 */
START_TEST(test_xattr_entry)
{
	static const char val[] = "some value";
	struct mqfs_xattr_hdr *xh;
	struct tf x;
	uint64_t blk;
	uint8_t *b;
	char got[32];

	tf_populate(&x);
	t_fs_mount(&x.t);
	ck_assert_int_eq(mqfs_setxattr(x.t.fs, x.b, "user.one", val,
				       sizeof(val), 0), 0);
	ck_assert_int_eq(mqfs_setxattr(x.t.fs, x.b, "user.two", val,
				       sizeof(val), 0), 0);
	t_fs_unmount(&x.t);
	tf_check_n(&x, MQFS_FSCK_OK);
	blk = tf_inode(&x.t, x.b)->xattr_blk;
	ck_assert_uint_ne(blk, 0);
	b = t_fs_raw_block(&x.t, blk);
	xh = (void *)(b + MQFS_HDR_SIZE);
	switch (_i) {
	case 0:
		b[MQFS_HDR_SIZE + sizeof(*xh)] = 0;		/* name_len */
		break;
	case 1:
		b[MQFS_HDR_SIZE + sizeof(*xh) + 2] = 0xff;	/* value_len */
		break;
	default:
		xh->count++;
		break;
	}
	tf_repair_mount(&x, blk);
	ck_assert_int_eq(mqfs_getxattr(x.t.fs, x.b, "user.one", got,
				       sizeof(got)), -ENODATA);
	ck_assert_int_eq(mqfs_setxattr(x.t.fs, x.b, "user.one", val,
				       sizeof(val), 0), 0);
	ck_assert(!mqfs_is_readonly(x.t.fs));
	ck_assert(tf_file_is(&x.t, x.b, 101, MQFS_BLOCK_SIZE));
	tf_destroy(&x);
}
END_TEST

/* Block @n (0: the head) of inode @ino's xattr chain. */
static uint64_t tf_xchain_blk(struct t_fs *t, uint64_t ino, unsigned n)
{
	uint64_t blk = tf_inode(t, ino)->xattr_blk;

	while (n--)
		blk = mqfs_xattr_next(t_fs_raw_block(t, blk));
	ck_assert_uint_ne(blk, 0);
	return blk;
}

/*
 * A chain of xattr blocks (a 20000-byte value in 5 fragment blocks at
 * the head, 150 small attributes after them) damaged and resealed: a
 * link out of the filesystem (case 0: the chain is cut after the head,
 * and the value, no longer whole, goes with it), a fragment out of
 * order (case 1: the value goes, the small ones stay), a cycle (case
 * 2: cut where it closes).  fsck -y repairs each and the mount serves
 * the rest; fsck finds nothing after it.
 */
START_TEST(test_xattr_chain)
{
	static char big[20000], got[sizeof(big)];
	struct tf x;
	uint64_t blk;
	uint8_t *b;
	char name[32];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i % 251);
	tf_populate(&x);
	t_fs_mount(&x.t);
	for (int k = 0; k < 150; k++) {
		snprintf(name, sizeof(name), "user.s.%03d", k);
		ck_assert_int_eq(mqfs_setxattr(x.t.fs, x.b, name, big + k, 50,
					       0), 0);
	}
	ck_assert_int_eq(mqfs_setxattr(x.t.fs, x.b, "user.big", big,
				       sizeof(big), 0), 0);
	t_fs_unmount(&x.t);
	tf_check_n(&x, MQFS_FSCK_OK);
	blk = tf_xchain_blk(&x.t, x.b, _i == 2 ? 2 : _i);
	b = t_fs_raw_block(&x.t, blk);
	if (_i == 0)
		mqfs_xattr_set_next(b, tf_sb(&x.t)->block_count + 5);
	else if (_i == 1)
		b[MQFS_HDR_SIZE + sizeof(struct mqfs_xattr_hdr) + 1] = 0x83;
	else
		mqfs_xattr_set_next(b, tf_xchain_blk(&x.t, x.b, 0));
	tf_repair_mount(&x, blk);
	ck_assert_int_eq(mqfs_getxattr(x.t.fs, x.b, "user.big", got,
				       sizeof(got)), -ENODATA);
	ck_assert_int_eq(mqfs_getxattr(x.t.fs, x.b, "user.s.000", got,
				       sizeof(got)), _i == 1 ? 50 : -ENODATA);
	ck_assert_int_eq(mqfs_setxattr(x.t.fs, x.b, "user.big", big,
				       sizeof(big), 0), 0);
	ck_assert(!mqfs_is_readonly(x.t.fs));
	t_fs_unmount(&x.t);
	tf_check_n(&x, MQFS_FSCK_OK);
	t_fs_mount(&x.t);
	ck_assert(tf_file_is(&x.t, x.b, 101, MQFS_BLOCK_SIZE));
	tf_destroy(&x);
}
END_TEST

/*
 * A stored access ACL (FORMAT.md §9) damaged and the block resealed: a
 * bad tag (case 0, another attribute keeps the block; case 1, the ACL
 * was alone and the block goes), or the mode's bits changed under it
 * (case 2: the mode follows the ACL again).  fsck -n finds each, -y
 * repairs it, and the mount serves the result.
 */
START_TEST(test_acl_stored)
{
	/* u::rw-, u:7:r--, g::---, m::r--, o::--- : mode 0640 */
	static const uint16_t ents[][2] = { { 0x01, 6 }, { 0x02, 4 },
					    { 0x04, 0 }, { 0x10, 4 },
					    { 0x20, 0 } };
	uint8_t acl[4 + sizeof(ents) / 4 * 8], *b;
	const void *v;
	struct stat st;
	struct tf x;
	size_t n;

	memset(acl, 0, sizeof(acl));
	acl[0] = 2;
	for (unsigned i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
		memcpy(acl + 4 + i * 8, ents[i], 4);
		acl[4 + i * 8 + 4] = i == 1 ? 7 : 0xff;
		memset(acl + 4 + i * 8 + 5, i == 1 ? 0 : 0xff, 3);
	}
	tf_populate(&x);
	t_fs_mount(&x.t);
	if (_i != 1)
		ck_assert_int_eq(mqfs_setxattr(x.t.fs, x.b, "user.keep", "k",
					       1, 0), 0);
	ck_assert_int_eq(mqfs_setxattr(x.t.fs, x.b, "system.posix_acl_access",
				       acl, sizeof(acl), 0), 0);
	t_fs_unmount(&x.t);
	tf_check_n(&x, MQFS_FSCK_OK);
	if (_i == 2) {
		tf_inode(&x.t, x.b)->mode = S_IFREG | 0604;
		tf_inode_changed(&x.t, x.b);
	} else {
		uint64_t blk = tf_inode(&x.t, x.b)->xattr_blk;

		b = t_fs_raw_block(&x.t, blk);
		ck_assert_int_ge(mqfs_xattr_lookup(b, "system.posix_acl_access",
						   &v, &n), 0);
		((uint8_t *)v)[4] = 0x40;		/* no such tag */
		tf_reseal(&x.t, blk);
	}
	tf_repair(&x, MQFS_FSCK_YES);
	t_fs_mount(&x.t);
	ck_assert_int_eq(mqfs_getattr(x.t.fs, x.b, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0640);
	ck_assert_int_eq(mqfs_getxattr(x.t.fs, x.b, "system.posix_acl_access",
				       NULL, 0), _i == 2 ? (ssize_t)sizeof(acl)
							 : -ENODATA);
	ck_assert_int_eq(mqfs_getxattr(x.t.fs, x.b, "user.keep", NULL, 0),
			 _i == 1 ? -ENODATA : 1);
	ck_assert(tf_file_is(&x.t, x.b, 101, MQFS_BLOCK_SIZE));
	tf_destroy(&x);
}
END_TEST

/* The root directory's record named @name in its first block. */
static struct mqfs_dirent *tf_root_entry(struct tf *x, const char *name,
					 uint64_t *blk)
{
	uint8_t *b;

	*blk = tf_inode(&x->t, MQFS_ROOT_INO)->u.ext[0].pblk;
	b = t_fs_raw_block(&x->t, *blk);
	for (unsigned off = MQFS_HDR_SIZE; off < MQFS_BLOCK_SIZE;) {
		struct mqfs_dirent *de = (void *)(b + off);

		if (de->ino && de->name_len == strlen(name) &&
		    !memcmp(de->name, name, de->name_len))
			return de;
		ck_assert_uint_ne(de->rec_len, 0);
		off += de->rec_len;
	}
	ck_abort_msg("no entry %s in the root", name);
	return NULL;
}

static int tf_count_fill(void *ctx, const char *name, uint64_t ino,
			 unsigned type, uint64_t next_pos,
			 const struct mqfs_entry *e)
{
	(void)name, (void)ino, (void)type, (void)next_pos, (void)e;
	++*(unsigned *)ctx;
	return 0;
}

/*
 * Sealed damage the daemon meets while serving (the campaign's defect
 * 5): an inode of no valid type, one past the largest size, an entry
 * naming a free inode, the root, ".", or a name with '/'.  Each access
 * fails with EUCLEAN (or the entry is skipped and the rest of the
 * directory served), the error is reported and flags the filesystem
 * (read-only: errors=remount-ro); fsck -y repairs it and -n is clean.
 */
START_TEST(test_served_corruption)
{
	struct mqfs_entry e;
	struct mqfs_dirent *de;
	struct stat st;
	unsigned n = 0;
	uint64_t blk;
	struct tf x;

	tf_populate(&x);
	switch (_i) {
	case 0:
		tf_inode(&x.t, x.b)->mode = 0170644;
		tf_inode_changed(&x.t, x.b);
		break;
	case 1:
		tf_inode(&x.t, x.b)->size = 1ull << 63;
		tf_inode_changed(&x.t, x.b);
		break;
	default:
		de = tf_root_entry(&x, "b", &blk);
		if (_i == 2)
			de->ino = tf_sb(&x.t)->inode_count - 1;	/* free */
		else if (_i == 3)
			de->ino = MQFS_ROOT_INO;
		else
			de->name[0] = _i == 4 ? '.' : '/';
		tf_reseal(&x.t, blk);
		break;
	}
	t_fs_mount(&x.t);
	ck_assert(!mqfs_had_errors(x.t.fs));
	if (_i < 2)
		ck_assert_int_eq(mqfs_getattr(x.t.fs, x.b, &st), -EUCLEAN);
	else if (_i == 2)
		ck_assert_int_eq(mqfs_lookup(x.t.fs, MQFS_ROOT_INO, "b", &e),
				 -EUCLEAN);
	ck_assert_int_eq(mqfs_readdir(x.t.fs, MQFS_ROOT_INO, 0, false,
				      tf_count_fill, &n), 0);
	/* ".", "..", dir, a, s and b unless its entry is skipped. */
	ck_assert_uint_eq(n, _i >= 3 ? 5 : 6);
	/* readdirplus reads the inodes: a bad one is skipped, not a stop. */
	n = 0;
	ck_assert_int_eq(mqfs_readdir(x.t.fs, MQFS_ROOT_INO, 0, true,
				      tf_count_fill, &n), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert(mqfs_had_errors(x.t.fs));
	ck_assert(mqfs_is_readonly(x.t.fs));
	ck_assert(tf_file_is(&x.t, x.a, 100, 2 * MQFS_BLOCK_SIZE));
	t_fs_unmount_unclean(&x.t);
	ck_assert_uint_ne(tf_sb(&x.t)->state & MQFS_STATE_ERRORS, 0);
	ck_assert_int_eq(tf_fsck(&x.t, MQFS_FSCK_YES, true), MQFS_FSCK_FIXED);
	tf_check_n(&x, MQFS_FSCK_OK);
	t_fs_mount(&x.t);
	ck_assert_int_eq(mqfs_readdir(x.t.fs, MQFS_ROOT_INO, 0, false,
				      tf_count_fill, &n), 0);
	ck_assert(!mqfs_had_errors(x.t.fs));
	tf_destroy(&x);
}
END_TEST

START_TEST(test_double_claim)
{
	struct tf x;
	struct mqfs_extent *eb;

	tf_populate(&x);
	/* b's block now also names a's first block. */
	eb = &tf_inode(&x.t, x.b)->u.ext[0];
	ck_assert_uint_eq(eb->len, 1);
	eb->pblk = tf_inode(&x.t, x.a)->u.ext[0].pblk;
	tf_inode_changed(&x.t, x.b);
	tf_repair(&x, MQFS_FSCK_YES);
	t_fs_mount(&x.t);
	ck_assert(tf_file_is(&x.t, x.a, 100, 2 * MQFS_BLOCK_SIZE));
	/* b got a copy of the shared block: a's first 4 KiB. */
	ck_assert(tf_file_is(&x.t, x.b, 100, MQFS_BLOCK_SIZE));
	ck_assert_uint_ne(tf_inode(&x.t, x.b)->u.ext[0].pblk,
			  tf_inode(&x.t, x.a)->u.ext[0].pblk);
	tf_destroy(&x);
}
END_TEST

/*
 * A file of TF_TREE_EXT one-block extents (every other block) has an
 * extent tree of two leaves; a bad second leaf cuts the file where the
 * first one ends.
 */

START_TEST(test_extent_tree_block)
{
	struct tf x;
	const struct mqfs_ext_node *root, *leaf;
	const struct mqfs_ext_index *ix;
	const struct mqfs_extent *ex;
	struct mqfs_inode *d;
	struct stat st;
	uint64_t ino, cut;

	tf_populate(&x);
	t_fs_mount(&x.t);
	ino = tf_mk(&x.t, MQFS_ROOT_INO, "sparse", S_IFREG | 0644);
	for (unsigned i = 0; i < TF_TREE_EXT; i++)
		tf_pwrite(&x.t, ino, 2ull * i * MQFS_BLOCK_SIZE, i,
			  MQFS_BLOCK_SIZE);
	t_fs_unmount(&x.t);
	d = tf_inode(&x.t, ino);
	ck_assert_uint_ne(d->iflags & MQFS_IF_EXTENT_TREE, 0);
	root = (const void *)d->u.root;
	ck_assert_uint_eq(root->depth, 1);
	ck_assert_uint_ge(root->nr, 2);
	ix = (const void *)(root + 1);
	/* The file ends up where the leaf before the last one ends. */
	leaf = (const void *)(t_fs_raw_block(&x.t, ix[root->nr - 2].child) +
			      MQFS_HDR_SIZE);
	ex = (const void *)(leaf + 1);
	cut = ex[leaf->nr - 1].lblk + ex[leaf->nr - 1].len;
	t_fs_raw_block(&x.t, ix[root->nr - 1].child)[2000] ^= 0x10;
	tf_repair(&x, MQFS_FSCK_YES);
	t_fs_mount(&x.t);
	ck_assert_int_eq(mqfs_getattr(x.t.fs, ino, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, cut * MQFS_BLOCK_SIZE);
	for (unsigned i = 0; 2ull * i < cut; i++)
		ck_assert_msg(tf_pread_is(&x.t, ino, 2ull * i * MQFS_BLOCK_SIZE,
					  i, MQFS_BLOCK_SIZE, false),
			      "block %u of the cut file", 2 * i);
	tf_check_files(&x, NULL, 0);
	/* The file can grow again over the blocks it lost. */
	tf_pwrite(&x.t, ino, cut * MQFS_BLOCK_SIZE, 5, 3 * MQFS_BLOCK_SIZE);
	t_fs_unmount(&x.t);
	tf_check_n(&x, MQFS_FSCK_OK);
	tf_destroy(&x);
}
END_TEST

/* ---- what the other modules leave behind --------------------------------- */

/* After a deterministic mix of namespace and data calls: clean. */
START_TEST(test_after_churn)
{
	struct tf x;
	uint64_t dirs[8], rng = 12345;

	tf_populate(&x);
	t_fs_mount(&x.t);
	tf_churn_dirs(&x.t, dirs, MQ_ARRAY_SIZE(dirs));
	for (unsigned op = 0; op < 600; op++)
		tf_churn_op(&x.t, dirs, MQ_ARRAY_SIZE(dirs), tf_next(&rng));
	t_fs_unmount(&x.t);
	tf_check_n(&x, MQFS_FSCK_OK);
	tf_destroy(&x);
}
END_TEST

void fsck_add_damage_tests(TCase *tc)
{
	tcase_add_test(tc, test_clean);
	tcase_add_test(tc, test_not_mqfs);
	tcase_add_test(tc, test_superblock);
	tcase_add_test(tc, test_sb_copies);
	tcase_add_test(tc, test_sb_misplaced);
	tcase_add_test(tc, test_itable_block);
	tcase_add_test(tc, test_dir_block);
	tcase_add_test(tc, test_bitmap);
	tcase_add_test(tc, test_link_count);
	tcase_add_test(tc, test_inode_gen);
	tcase_add_test(tc, test_extent_outside);
	tcase_add_test(tc, test_double_claim);
	tcase_add_loop_test(tc, test_xattr_entry, 0, 3);
	tcase_add_loop_test(tc, test_xattr_chain, 0, 3);
	tcase_add_loop_test(tc, test_acl_stored, 0, 3);
	tcase_add_loop_test(tc, test_served_corruption, 0, 6);
	tcase_add_test(tc, test_extent_tree_block);
	tcase_add_test(tc, test_after_churn);
}
