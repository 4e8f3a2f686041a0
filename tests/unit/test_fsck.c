// SPDX-License-Identifier: MIT
/*
 * test_fsck.c - the checker (src/fs/fsck*.c) on ram-device filesystems
 * populated through the public API: a clean image passes untouched;
 * each kind of damage (superblock, inode table, directory block, bitmap,
 * link count, extent outside the fs, doubly claimed block, a resealed
 * xattr entry the daemon would refuse) is reported
 * by -n without a single write, repaired by -y (or -p when safe), and
 * the repaired image checks clean, mounts and still reads the files
 * that survived.  Random damage to any metadata block, and sealed damage
 * (checksums made valid again) structure by structure.  Crash images:
 * the journal (also one carrying a bad superblock copy) and the orphan
 * list.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "t_fs.h"
#include "t_fsio.h"
#include "t_jforge.h"
#include "t_main.h"
#include "mqfs/dev/fault.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

#define TF_SIZE		(64 * T_FS_MIB)
#define TF_FILES	40u
#define TF_FILE_BYTES	(3 * MQFS_BLOCK_SIZE)

struct tf {
	struct t_fs t;
	uint64_t dir, sub, a, b, sym;
	uint64_t f[TF_FILES];
	uint8_t *snap;
};

/* ---- file I/O (t_fsio.h) ------------------------------------------------ */

static void tf_fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i / 512);
}

/* Write @len bytes of pattern @seed at @off. */
static void tf_pwrite(struct t_fs *t, uint64_t ino, uint64_t off,
		      unsigned seed, size_t len)
{
	uint8_t *buf = malloc(len);
	struct mqfs_file *f;

	tf_fill(buf, len, seed);
	ck_assert_int_eq(mqfs_open(t->fs, ino, O_WRONLY, &f), 0);
	ck_assert_int_eq(t_write(t->fs, f, off, buf, len), (ssize_t)len);
	ck_assert_int_eq(mqfs_release(t->fs, f), 0);
	free(buf);
}

static void tf_write_file(struct t_fs *t, uint64_t ino, unsigned seed,
			  size_t len)
{
	tf_pwrite(t, ino, 0, seed, len);
}

/* Do the @len bytes at @off hold pattern @seed (and, with @eof, end
 * the file there)? */
static bool tf_pread_is(struct t_fs *t, uint64_t ino, uint64_t off,
			unsigned seed, size_t len, bool eof)
{
	uint8_t *want = malloc(len), *got = calloc(1, len + 1);
	struct mqfs_file *f;
	ssize_t n;
	bool same;

	tf_fill(want, len, seed);
	ck_assert_int_eq(mqfs_open(t->fs, ino, O_RDONLY, &f), 0);
	n = t_read(t->fs, f, off, got, len + (eof ? 1 : 0));
	same = n == (ssize_t)len && !memcmp(want, got, len);
	ck_assert_int_eq(mqfs_release(t->fs, f), 0);
	free(want);
	free(got);
	return same;
}

/* Does file @ino hold exactly @len bytes of pattern @seed? */
static bool tf_file_is(struct t_fs *t, uint64_t ino, unsigned seed,
		       size_t len)
{
	return tf_pread_is(t, ino, 0, seed, len, true);
}

/* ---- building the test filesystem --------------------------------------- */

static uint64_t tf_mk(struct t_fs *t, uint64_t parent, const char *name,
		      mode_t mode)
{
	struct mqfs_entry e;

	ck_assert_int_eq(mqfs_mknod(t->fs, parent, name, mode, 0, 0, 0, &e),
			 0);
	mqfs_forget(t->fs, e.ino, 1);
	return e.ino;
}

/* Inode number of @name in @parent, 0 when missing. */
static uint64_t tf_lookup(struct t_fs *t, uint64_t parent, const char *name)
{
	struct mqfs_entry e;

	if (mqfs_lookup(t->fs, parent, name, &e))
		return 0;
	mqfs_forget(t->fs, e.ino, 1);
	return e.ino;
}

static char tf_target[300];

/*
 * / : dir/ (f00..f39, sub/, a2 -> a), a (8 KiB), b (4 KiB), s (a long
 * symlink, one data block); then unmounted cleanly.
 */
static void tf_populate(struct tf *x)
{
	struct t_fs *t = &x->t;
	struct mqfs_entry e;
	char name[16];

	memset(x, 0, sizeof(*x));
	t_fs_make(t, TF_SIZE);
	x->dir = tf_mk(t, MQFS_ROOT_INO, "dir", S_IFDIR | 0755);
	x->sub = tf_mk(t, x->dir, "sub", S_IFDIR | 0755);
	for (unsigned i = 0; i < TF_FILES; i++) {
		snprintf(name, sizeof(name), "f%02u", i);
		x->f[i] = tf_mk(t, x->dir, name, S_IFREG | 0644);
		tf_write_file(t, x->f[i], i, TF_FILE_BYTES);
	}
	x->a = tf_mk(t, MQFS_ROOT_INO, "a", S_IFREG | 0644);
	tf_write_file(t, x->a, 100, 2 * MQFS_BLOCK_SIZE);
	x->b = tf_mk(t, MQFS_ROOT_INO, "b", S_IFREG | 0644);
	tf_write_file(t, x->b, 101, MQFS_BLOCK_SIZE);
	ck_assert_int_eq(mqfs_link(t->fs, x->a, x->dir, "a2", &e), 0);
	mqfs_forget(t->fs, e.ino, 1);
	memset(tf_target, 'x', sizeof(tf_target) - 1);
	ck_assert_int_eq(mqfs_symlink(t->fs, MQFS_ROOT_INO, "s", tf_target,
				      0, 0, &e), 0);
	mqfs_forget(t->fs, e.ino, 1);
	x->sym = e.ino;
	t_fs_unmount(t);
}

static void tf_destroy(struct tf *x)
{
	free(x->snap);
	t_fs_destroy(&x->t);
}

/* ---- raw access ---------------------------------------------------------- */

static struct mqfs_super *tf_sb(struct t_fs *t)
{
	return (struct mqfs_super *)t_fs_raw_block(t, 0);
}

static struct mqfs_layout tf_layout(struct t_fs *t)
{
	const struct mqfs_super *sb = tf_sb(t);

	return (struct mqfs_layout){
		.block_count = sb->block_count, .ag_count = sb->ag_count,
		.ag_blocks = sb->ag_blocks,
		.inodes_per_ag = sb->inodes_per_ag,
		.itable_blocks = sb->itable_blocks,
		.journal_start = sb->journal_start,
		.journal_blocks = sb->journal_blocks };
}

static uint64_t tf_itable_blk(struct t_fs *t, uint64_t ino)
{
	struct mqfs_layout l = tf_layout(t);
	uint64_t idx = (ino - 1) % l.inodes_per_ag;

	return mqfs_ag_meta_start(&l, (uint32_t)((ino - 1) / l.inodes_per_ag)) +
	       3 + idx / MQFS_INODES_PER_BLOCK;
}

static struct mqfs_inode *tf_inode(struct t_fs *t, uint64_t ino)
{
	uint64_t idx = (ino - 1) % tf_sb(t)->inodes_per_ag;

	return (struct mqfs_inode *)(t_fs_raw_block(t, tf_itable_blk(t, ino)) +
		mqfs_itable_offset((unsigned)(idx % MQFS_INODES_PER_BLOCK)));
}

/* Re-seal block @blk after a deliberate change of its payload. */
static void tf_reseal(struct t_fs *t, uint64_t blk)
{
	struct mqfs_blk_hdr *h = (void *)t_fs_raw_block(t, blk);

	mqfs_blk_seal(h, h->type, blk, h->gen);
}

static void tf_inode_changed(struct t_fs *t, uint64_t ino)
{
	tf_reseal(t, tf_itable_blk(t, ino));
}

static uint64_t tf_dev_bytes(struct t_fs *t)
{
	return mq_queue_size_bytes(t->q);
}

static void tf_snapshot(struct tf *x)
{
	free(x->snap);
	x->snap = malloc(tf_dev_bytes(&x->t));
	memcpy(x->snap, mq_ram_data(x->t.ram), tf_dev_bytes(&x->t));
}

static bool tf_unchanged(struct tf *x)
{
	return !memcmp(x->snap, mq_ram_data(x->t.ram), tf_dev_bytes(&x->t));
}

static int tf_fsck(struct t_fs *t, enum mqfs_fsck_mode mode, bool force)
{
	struct mqfs_fsck_opts o = { .mode = mode, .force = force };

	fflush(stdout);
	return mqfs_fsck(t->q, &o);
}

/* -n reports @want and writes nothing. */
static void tf_check_n(struct tf *x, int want)
{
	tf_snapshot(x);
	ck_assert_int_eq(tf_fsck(&x->t, MQFS_FSCK_NO, true), want);
	ck_assert_msg(tf_unchanged(x), "fsck -n wrote to the device");
}

/* The usual cycle: -n finds it, @mode fixes it, -n is clean again. */
static void tf_repair(struct tf *x, enum mqfs_fsck_mode mode)
{
	tf_check_n(x, MQFS_FSCK_UNCORRECTED);
	ck_assert_int_eq(tf_fsck(&x->t, mode, true), MQFS_FSCK_FIXED);
	tf_check_n(x, MQFS_FSCK_OK);
	ck_assert_uint_ne(tf_sb(&x->t)->state & MQFS_STATE_CLEAN, 0);
	ck_assert_uint_eq(tf_sb(&x->t)->state & MQFS_STATE_ERRORS, 0);
}

/* Files not named in @lost still read back. */
static void tf_check_files(struct tf *x, const uint64_t *lost, unsigned nlost)
{
	for (unsigned i = 0; i < TF_FILES; i++) {
		bool gone = false;

		for (unsigned k = 0; k < nlost; k++)
			gone |= lost[k] == x->f[i];
		if (!gone)
			ck_assert_msg(tf_file_is(&x->t, x->f[i], i,
						 TF_FILE_BYTES),
				      "file f%02u (inode %llu) damaged", i,
				      (unsigned long long)x->f[i]);
	}
}

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
	tf_reseal(&x.t, blk);
	tf_repair(&x, MQFS_FSCK_YES);
	t_fs_mount(&x.t);
	ck_assert_int_eq(mqfs_getxattr(x.t.fs, x.b, "user.one", got,
				       sizeof(got)), -ENODATA);
	ck_assert_int_eq(mqfs_setxattr(x.t.fs, x.b, "user.one", val,
				       sizeof(val), 0), 0);
	ck_assert(!mqfs_is_readonly(x.t.fs));
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
#define TF_TREE_EXT	300u

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

/* One namespace or data call chosen by @k among @dirs. */
static void tf_churn_op(struct t_fs *t, const uint64_t *dirs, unsigned ndirs,
			unsigned k)
{
	uint64_t dir = dirs[k % ndirs], dir2 = dirs[(k / 8) % ndirs];
	struct mqfs_entry e;
	char name[32], to[32];

	snprintf(name, sizeof(name), "n%u", (k / 64) % 50);
	snprintf(to, sizeof(to), "n%u", (k / 4096) % 50);
	switch (k % 7) {
	case 0:
	case 1:
		if (!mqfs_mknod(t->fs, dir, name, S_IFREG | 0600, 0, 0, 0, &e)) {
			tf_pwrite(t, e.ino, (k % 5) * 8192, k, 1 + k % 20000);
			mqfs_forget(t->fs, e.ino, 1);
		}
		break;
	case 2:
		(void)mqfs_unlink(t->fs, dir, name);
		break;
	case 3:
		(void)mqfs_rename(t->fs, dir, name, dir2, to, 0);
		break;
	case 4:
		if (!mqfs_lookup(t->fs, dir, name, &e)) {
			uint64_t ino = e.ino;

			if (S_ISREG(e.st.st_mode) &&
			    !mqfs_link(t->fs, ino, dir2, to, &e))
				mqfs_forget(t->fs, e.ino, 1);
			mqfs_forget(t->fs, ino, 1);
		}
		break;
	case 5:
		if (!mqfs_symlink(t->fs, dir, name, k % 2 ? "short" : tf_target,
				  0, 0, &e))
			mqfs_forget(t->fs, e.ino, 1);
		break;
	default:
		if (!mqfs_mknod(t->fs, dir, name, S_IFDIR | 0700, 0, 0, 0, &e))
			mqfs_forget(t->fs, e.ino, 1);
		else
			(void)mqfs_rmdir(t->fs, dir, name);
		break;
	}
}

static unsigned tf_next(uint64_t *rng)
{
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(*rng >> 33);
}

/* A small tree of directories to churn in: dirs[0] is the root. */
static void tf_churn_dirs(struct t_fs *t, uint64_t *dirs, unsigned n)
{
	char name[16];

	dirs[0] = MQFS_ROOT_INO;
	for (unsigned i = 1; i < n; i++) {
		snprintf(name, sizeof(name), "d%u", i);
		dirs[i] = tf_mk(t, dirs[(i - 1) / 2], name, S_IFDIR | 0755);
	}
}

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

/* ---- random damage --------------------------------------------------------- */

struct tf_dirent {
	uint64_t ino;
	unsigned type;
};

struct tf_list {
	struct tf_dirent v[512];
	unsigned n;
};

static int tf_list_fill(void *ctx, const char *name, uint64_t ino,
			unsigned type, uint64_t next_pos,
			const struct mqfs_entry *e)
{
	struct tf_list *l = ctx;

	(void)next_pos, (void)e;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	ck_assert_uint_lt(l->n, MQ_ARRAY_SIZE(l->v));
	l->v[l->n++] = (struct tf_dirent){ ino, type };
	return 0;
}

/* Read everything below @dir: every call must succeed.  Entries seen. */
static unsigned tf_walk(struct t_fs *t, uint64_t dir, unsigned depth)
{
	struct tf_list *l = calloc(1, sizeof(*l));
	unsigned seen;

	ck_assert_uint_lt(depth, 16);
	ck_assert_int_eq(mqfs_readdir(t->fs, dir, 0, false, tf_list_fill, l),
			 0);
	seen = l->n;
	for (unsigned i = 0; i < l->n; i++) {
		struct stat st;
		char buf[MQFS_BLOCK_SIZE];

		ck_assert_int_eq(mqfs_getattr(t->fs, l->v[i].ino, &st), 0);
		ck_assert_uint_eq(IFTODT(st.st_mode), l->v[i].type);
		if (S_ISDIR(st.st_mode))
			seen += tf_walk(t, l->v[i].ino, depth + 1);
		else if (S_ISLNK(st.st_mode))
			ck_assert_int_ge(mqfs_readlink(t->fs, l->v[i].ino, buf,
						       sizeof(buf)), 0);
		else if (S_ISREG(st.st_mode) && st.st_size)
			(void)tf_pread_is(t, l->v[i].ino, 0, 0,
					  (size_t)MQ_MIN(st.st_size, 65536),
					  false);
	}
	free(l);
	return seen;
}

/* The metadata blocks of the image (any that verify where they lie). */
static unsigned tf_meta_blocks(struct t_fs *t, uint64_t *v, unsigned max)
{
	uint64_t blocks = tf_sb(t)->block_count;
	unsigned n = 0;

	for (uint64_t b = 0; b < blocks && n < max; b++) {
		const struct mqfs_blk_hdr *h = (void *)t_fs_raw_block(t, b);

		if (h->magic == MQFS_MAGIC && h->type < MQFS_T_JDESC &&
		    !mqfs_blk_verify(h, h->type, b))
			v[n++] = b;
	}
	return n;
}

#define TF_DAMAGE_ROUNDS	300u

/* More shapes for the damage to hit: an extent tree, a directory of
 * several blocks, a deeper path, extended attributes. */
static void tf_enrich(struct tf *x)
{
	struct t_fs *t = &x->t;
	uint64_t ino, big, deep;
	char name[32];

	t_fs_mount(t);
	ino = tf_mk(t, MQFS_ROOT_INO, "sparse", S_IFREG | 0644);
	for (unsigned i = 0; i < TF_TREE_EXT; i++)
		tf_pwrite(t, ino, 2ull * i * MQFS_BLOCK_SIZE, i,
			  MQFS_BLOCK_SIZE);
	big = tf_mk(t, MQFS_ROOT_INO, "big", S_IFDIR | 0755);
	for (unsigned i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "entry-with-a-long-name-%03u", i);
		ino = tf_mk(t, big, name, i % 50 ? S_IFREG | 0644
						 : S_IFDIR | 0755);
		if (i % 7 == 0)
			ck_assert_int_eq(mqfs_setxattr(t->fs, ino, "user.k",
						       name, strlen(name), 0),
					 0);
	}
	deep = x->sub;
	for (unsigned i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "deep%u", i);
		deep = tf_mk(t, deep, name, S_IFDIR | 0755);
	}
	tf_write_file(t, tf_mk(t, deep, "leaf", S_IFREG | 0644), 3, 12345);
	t_fs_unmount(t);
}

/*
 * Damage at @off of block @p: a flipped bit, a random byte, a random
 * 64-bit word, or a word set to a small number (a pointer to another
 * real block or inode: the nastiest lie).
 */
static void tf_damage(uint8_t *p, unsigned off, uint64_t r, uint64_t blocks)
{
	unsigned w = off & ~7u;
	uint64_t v;

	switch ((r >> 40) % 4) {
	case 0:
		p[off] ^= (uint8_t)(1u << ((r >> 28) % 8));
		break;
	case 1:
		p[off] = (uint8_t)(r >> 20);
		break;
	case 2:
		v = r * 0xff51afd7ed558ccdull;
		memcpy(p + w, &v, sizeof(v));
		break;
	default:
		v = (r >> 8) % blocks;
		memcpy(p + w, &v, sizeof(v));
		break;
	}
}

/*
 * After fsck -y returned @ret on a damaged image: it repaired (or found
 * nothing), the image is clean, mounts, reads entirely, takes a new file
 * and is clean after that use.  @what and @round name a failure.
 */
static void tf_check_repaired(struct tf *x, int ret, const char *what,
			      unsigned round)
{
	ck_assert_msg(ret == MQFS_FSCK_OK || ret == MQFS_FSCK_FIXED,
		      "%s %u: fsck -y returned %d", what, round, ret);
	ck_assert_msg(tf_fsck(&x->t, MQFS_FSCK_NO, true) == MQFS_FSCK_OK,
		      "%s %u: not clean after fsck -y", what, round);
	t_fs_mount(&x->t);
	(void)tf_walk(&x->t, MQFS_ROOT_INO, 0);
	tf_pwrite(&x->t, tf_mk(&x->t, MQFS_ROOT_INO, "after", S_IFREG | 0644),
		  0, 9, 20000);
	t_fs_unmount(&x->t);
	ck_assert_msg(tf_fsck(&x->t, MQFS_FSCK_NO, true) == MQFS_FSCK_OK,
		      "%s %u: not clean after use", what, round);
}

/*
 * Each round damages one to three metadata blocks of the populated image
 * (bytes flipped; half the time the block is resealed so only its
 * meaning is wrong).  Whatever it is, fsck -y must leave a filesystem
 * that checks clean, mounts, can be read entirely, and is still clean
 * after being used.  A failing round prints its number and blocks.
 */
START_TEST(test_random_damage)
{
	struct tf x;
	uint64_t meta[2048], rng;
	unsigned nmeta, rounds = TF_DAMAGE_ROUNDS, first = 0;
	uint8_t *pristine;
	size_t bytes;

	/* Longer runs: MQFS_FSCK_ROUNDS=n; one round: MQFS_FSCK_ROUND=i. */
	if (getenv("MQFS_FSCK_ROUNDS"))
		rounds = (unsigned)atoi(getenv("MQFS_FSCK_ROUNDS"));
	if (getenv("MQFS_FSCK_ROUND")) {
		first = (unsigned)atoi(getenv("MQFS_FSCK_ROUND"));
		rounds = first + 1;
	}

	tf_populate(&x);
	tf_enrich(&x);
	tf_check_n(&x, MQFS_FSCK_OK);
	bytes = tf_dev_bytes(&x.t);
	pristine = malloc(bytes);
	memcpy(pristine, mq_ram_data(x.t.ram), bytes);
	nmeta = tf_meta_blocks(&x.t, meta, MQ_ARRAY_SIZE(meta));
	ck_assert_uint_gt(nmeta, 10);
	for (unsigned round = 0; round < rounds; round++) {
		uint64_t last = tf_sb(&x.t)->block_count - 1;
		bool primary = false, backup = false;
		unsigned nd;
		int ret;

		/* Every round's damage follows from its number alone. */
		rng = (round + 1) * 0x9e3779b97f4a7c15ull;
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		if (round < first)
			continue;
		memcpy(mq_ram_data(x.t.ram), pristine, bytes);
		nd = 1 + (unsigned)(rng >> 60) % 3;
		for (unsigned k = 0; k < nd; k++) {
			uint64_t r, blk;
			uint8_t *p;
			unsigned off;

			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			r = rng >> 16;
			blk = meta[r % nmeta];
			/* Half the time where the headers and first records are. */
			off = MQFS_HDR_SIZE + (unsigned)((r >> 12) %
				((r >> 46) & 1 ? 256 : MQFS_PAYLOAD));
			p = t_fs_raw_block(&x.t, blk);
			primary |= blk == 0;
			backup |= blk == last;
			tf_damage(p, off, r, last + 1);
			if ((r >> 32) & 1 && blk)
				tf_reseal(&x.t, blk);
			fprintf(stderr, "round %u: block %llu byte %u mode %u%s\n",
				round, (unsigned long long)blk, off,
				(unsigned)(r >> 40) % 4,
				(r >> 32) & 1 && blk ? " (resealed)" : "");
		}
		ret = tf_fsck(&x.t, MQFS_FSCK_YES, true);
		/* Both superblocks damaged: nothing to start from. */
		if (primary && backup && ret == MQFS_FSCK_ERROR)
			continue;
		tf_check_repaired(&x, ret, "round", round);
	}
	free(pristine);
	tf_destroy(&x);
}
END_TEST

/*
 * Sealed damage, one structure at a time: each round changes one to
 * three fields of one block of the structure and seals it again, so
 * every checksum holds and only the meaning is wrong (what a bug or a
 * misdirected write of our own would leave).  Blocks and damage follow
 * from the round number.  The summary line per structure says how often
 * fsck repaired something and how often the change was harmless (fsck
 * clean, and the filesystem mounted, read and used without an error).
 */
static const struct {
	uint16_t type;
	const char *name;
} tf_structs[] = {
	{ MQFS_T_SUPER, "superblock" },
	{ MQFS_T_AG, "AG header" },
	{ MQFS_T_BBITMAP, "block bitmap" },
	{ MQFS_T_IBITMAP, "inode bitmap" },
	{ MQFS_T_ITABLE, "inode table" },
	{ MQFS_T_EXTENT, "extent node" },
	{ MQFS_T_DIR, "directory" },
	{ MQFS_T_XATTR, "xattr block" },
};

#define TF_SEALED_ROUNDS	40u

START_TEST(test_sealed_damage)
{
	unsigned type = tf_structs[_i].type, fixed = 0, harmless = 0, by_b = 0;
	uint64_t blocks[2048], rng = (_i + 1) * 0xd1b54a32d192ed03ull, copy;
	unsigned n = 0, nmeta, rounds = TF_SEALED_ROUNDS;
	uint8_t *pristine;
	struct tf x;
	size_t bytes;

	/* Longer campaigns: MQFS_SEALED_ROUNDS=n. */
	if (getenv("MQFS_SEALED_ROUNDS"))
		rounds = (unsigned)atoi(getenv("MQFS_SEALED_ROUNDS"));
	tf_populate(&x);
	tf_enrich(&x);
	bytes = tf_dev_bytes(&x.t);
	pristine = malloc(bytes);
	memcpy(pristine, mq_ram_data(x.t.ram), bytes);
	nmeta = tf_meta_blocks(&x.t, blocks, MQ_ARRAY_SIZE(blocks));
	for (unsigned k = 0; k < nmeta; k++)
		if (((struct mqfs_blk_hdr *)t_fs_raw_block(&x.t,
				blocks[k]))->type == type)
			blocks[n++] = blocks[k];
	ck_assert_msg(n > 0, "no %s block to damage", tf_structs[_i].name);
	ck_assert_uint_gt(mqfs_sb_copies(tf_sb(&x.t), &copy, 1), 0);
	for (unsigned round = 0; round < rounds; round++) {
		/* The primary superblock half the time: copies are fallbacks. */
		uint64_t blk = blocks[round % 2 ? round / 2 % n : 0];
		unsigned nd;
		int ret;

		if (type != MQFS_T_SUPER)
			blk = blocks[round % n];
		memcpy(mq_ram_data(x.t.ram), pristine, bytes);
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		nd = 1 + (unsigned)(rng >> 60) % 3;
		for (unsigned k = 0; k < nd; k++) {
			uint64_t r;
			unsigned off;

			rng = rng * 6364136223846793005ull +
			      1442695040888963407ull;
			r = rng >> 16;
			off = MQFS_HDR_SIZE + (unsigned)((r >> 12) %
				((r >> 46) & 1 ? 256 : MQFS_PAYLOAD));
			tf_damage(t_fs_raw_block(&x.t, blk), off, r,
				  tf_sb(&x.t)->block_count);
			fprintf(stderr, "%s round %u: block %llu byte %u "
				"mode %u (resealed)\n", tf_structs[_i].name,
				round, (unsigned long long)blk, off,
				(unsigned)(r >> 40) % 4);
		}
		tf_reseal(&x.t, blk);
		ret = tf_fsck(&x.t, MQFS_FSCK_YES, true);
		/*
		 * Unknown features in block 0 may be a newer mqfs's: fsck
		 * refuses and names a copy for -b, which must then work.
		 */
		if (ret == MQFS_FSCK_ERROR && !blk &&
		    mqfs_super_unknown_features(tf_sb(&x.t)) !=
			    MQFS_FEAT_KNOWN) {
			struct mqfs_fsck_opts o = { .mode = MQFS_FSCK_YES,
						    .sb_block = copy };

			ret = mqfs_fsck(x.t.q, &o);
			by_b++;
		}
		fixed += ret == MQFS_FSCK_FIXED;
		harmless += ret == MQFS_FSCK_OK;
		tf_check_repaired(&x, ret, tf_structs[_i].name, round);
	}
	fprintf(stderr, "sealed damage: %s: %u blocks, %u rounds: %u repaired "
		"(%u with -b), %u harmless\n", tf_structs[_i].name, n,
		rounds, fixed, by_b, harmless);
	free(pristine);
	tf_destroy(&x);
}
END_TEST

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
	tf_crash_unmounted(&x.t);
	free(f);	/* the mount it belonged to is gone */
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

#define TF_CRASH_ROUNDS		12u

/*
 * Power cuts in the middle of churn: whatever the journal holds, the
 * image must check clean with -n (as if replayed), replay with -p
 * without finding a problem, and mount.  A failing round prints its
 * number; MQFS_FSCK_CRASH=i reruns just that one.
 */
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

static Suite *fsck_suite(void)
{
	Suite *s = suite_create("fsck");
	TCase *tc = t_tcase(s, "fsck", 60);

	tcase_add_test(tc, test_clean);
	tcase_add_test(tc, test_not_mqfs);
	tcase_add_test(tc, test_superblock);
	tcase_add_test(tc, test_sb_copies);
	tcase_add_test(tc, test_sb_misplaced);
	tcase_add_test(tc, test_itable_block);
	tcase_add_test(tc, test_dir_block);
	tcase_add_test(tc, test_bitmap);
	tcase_add_test(tc, test_link_count);
	tcase_add_test(tc, test_extent_outside);
	tcase_add_test(tc, test_double_claim);
	tcase_add_loop_test(tc, test_xattr_entry, 0, 3);
	tcase_add_loop_test(tc, test_served_corruption, 0, 6);
	tcase_add_test(tc, test_extent_tree_block);
	tcase_add_test(tc, test_after_churn);
	tcase_add_test(tc, test_random_damage);
	tcase_add_loop_test(tc, test_sealed_damage, 0,
			    MQ_ARRAY_SIZE(tf_structs));
	tcase_add_test(tc, test_journal_and_orphan);
	tcase_add_test(tc, test_journal_bad_super);
	tcase_add_test(tc, test_crash_churn);
	return s;
}

T_MAIN(fsck_suite)
