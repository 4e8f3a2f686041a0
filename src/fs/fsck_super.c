// SPDX-License-Identifier: MIT
/*
 * fsck_super.c - fsck's pass 1: the superblock and its copies.  Block 0
 * is taken when it is a sealed, sane superblock whose geometry mkfs
 * could make and whose AG 0 header is where it says; otherwise (or with
 * -b) the first usable copy where block 0's geometry or mkfs's default
 * one puts them.  Every copy is checked against the result and a bad
 * one rewritten at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck_i.h"

/* ---- pass 1: the superblock ------------------------------------------- */

static void fk_sb_layout(struct fsck *f)
{
	mqfs_super_layout(f->sb, &f->l);
	f->inode_count = f->sb->inode_count;
}

/* Is @blk where @sb keeps a copy of itself? */
static bool fk_sb_copy_at(const struct mqfs_super *sb, uint64_t blk)
{
	uint64_t at[MQFS_SB_COPIES_MAX];
	unsigned n = mqfs_sb_copies(sb, at, MQ_ARRAY_SIZE(at));

	for (unsigned i = 0; i < n; i++)
		if (at[i] == blk)
			return true;
	return false;
}

/* Read a superblock copy at @blk and check it; 0 when usable. */
static int fk_sb_candidate(struct fsck *f, uint64_t blk, void *buf)
{
	const struct mqfs_super *sb = buf;
	int err;

	if (!blk || blk >= f->dev_blocks)
		return -EINVAL;
	err = mqfs_bio_sync(f->q, MQ_OP_READ, blk, buf, 1, MQ_REQ_META);
	if (err)
		return err;
	if (mqfs_blk_verify(buf, MQFS_T_SUPER, blk) ||
	    mqfs_super_why_bad(sb, f->dev_blocks) ||
	    !mqfs_super_layout_ok(sb) || !fk_sb_copy_at(sb, blk))
		return -EUCLEAN;
	return 0;
}

/* The copy places of a filesystem of @blocks blocks in AGs of @ag_blocks. */
static unsigned fk_sb_places(uint64_t blocks, uint32_t ag_blocks,
			     uint64_t *out, unsigned max)
{
	struct mqfs_super g = {
		.block_count = blocks, .ag_blocks = ag_blocks,
		.ag_count = (uint32_t)((blocks + ag_blocks - 1) / ag_blocks),
		.feature_ro_compat = MQFS_FEATURE_RO_COMPAT_SB_BACKUPS,
	};

	return mqfs_sb_copies(&g, out, max);
}

/*
 * Where copies may be when block 0 cannot say: those of @bad's geometry
 * (if it is sane enough: its end first, then its AG copies), then those
 * of mkfs's default geometry on this device.  How many in @out.
 */
static unsigned fk_sb_guesses(struct fsck *f, const struct mqfs_super *bad,
			      uint64_t *out, unsigned max)
{
	unsigned n = 0;

	if (bad->hdr.magic == MQFS_MAGIC && bad->block_count &&
	    bad->block_count <= f->dev_blocks && bad->ag_blocks >= 64 &&
	    bad->ag_blocks <= MQFS_AG_MAX_BLOCKS)
		n = fk_sb_places(bad->block_count, bad->ag_blocks, out, max);
	return n + fk_sb_places(f->dev_blocks, MQFS_AG_MAX_BLOCKS, out + n,
				max - n);
}

/* Work from the copy at @blk in @buf (from -b or a guess). */
static void fk_sb_use(struct fsck *f, const void *buf, uint64_t blk,
		      const char *why)
{
	memcpy(f->sb, buf, MQFS_BLOCK_SIZE);
	/* The copy is as of the last clean unmount: recount. */
	f->sb->state &= ~MQFS_STATE_CLEAN;
	f->sb_changed = true;
	f->sb_restored = true;
	mqfs_fk_problem(f, FK_UNSAFE, "restored", "superblock (block 0): %s; "
			"using the copy in block %llu", why,
			(unsigned long long)blk);
}

/* The primary is bad (@why), or -b names a copy: find one to work from. */
static int fk_sb_restore(struct fsck *f, const char *why)
{
	uint64_t cand[2 * MQFS_SB_COPIES_MAX + 1];
	uint8_t *buf = mqfs_alloc_blocks_mem(1);
	bool magic = f->sb->hdr.magic == MQFS_MAGIC;
	unsigned n = 0;

	if (!buf)
		return -ENOMEM;
	if (f->o.sb_block)
		cand[n++] = f->o.sb_block;
	else
		n = fk_sb_guesses(f, f->sb, cand, MQ_ARRAY_SIZE(cand));
	for (unsigned i = 0; i < n; i++) {
		if ((i && cand[i] == cand[i - 1]) ||
		    fk_sb_candidate(f, cand[i], buf))
			continue;
		fk_sb_use(f, buf, cand[i], why);
		free(buf);
		return 0;
	}
	free(buf);
	if (f->o.sb_block)
		fprintf(stderr, "fsck.mqfs: block %llu holds no valid "
			"superblock copy\n",
			(unsigned long long)f->o.sb_block);
	else if (!magic)
		fprintf(stderr, "fsck.mqfs: no mqfs filesystem on this device "
			"(no superblock at block 0, no copy where copies are "
			"kept)\n");
	else
		fprintf(stderr, "fsck.mqfs: superblock (block 0): %s, and no "
			"valid copy was found\n", why);
	return -EINVAL;
}

/* Each copy must be a valid one describing the same filesystem. */
static int fk_sb_check_backup(struct fsck *f)
{
	uint64_t at[MQFS_SB_COPIES_MAX];
	unsigned n = mqfs_sb_copies(f->sb, at, MQ_ARRAY_SIZE(at));
	uint8_t *buf = mqfs_alloc_blocks_mem(1);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (unsigned i = 0; i < n && !err; i++) {
		err = fk_sb_candidate(f, at[i], buf);
		if (err != -EUCLEAN &&
		    (err || mqfs_super_same_fs(f->sb, (void *)buf)))
			continue;
		f->backup_bad = true;
		f->sb_changed = true;
		mqfs_fk_problem(f, FK_SAFE, "rewritten", "superblock copy "
				"(block %llu): %s", (unsigned long long)at[i],
				err ? "bad checksum or header" : "describes "
				"another filesystem");
		err = 0;
	}
	free(buf);
	return err;
}

/* Does AG 0's header sit where @sb puts it (sealed, AG 0 at block 0)? */
static bool fk_sb_finds_ag0(struct fsck *f, const struct mqfs_super *sb)
{
	uint64_t at = sb->journal_start + sb->journal_blocks;
	uint8_t *buf = mqfs_alloc_blocks_mem(1);
	const struct mqfs_ag *ag = (const void *)buf;
	bool ok;

	if (!buf)
		return true;		/* no opinion */
	ok = at < f->dev_blocks &&
	     !mqfs_bio_sync(f->q, MQ_OP_READ, at, buf, 1, MQ_REQ_META) &&
	     !mqfs_blk_verify(buf, MQFS_T_AG, at) && !ag->ag_index &&
	     !ag->first_block;
	free(buf);
	return ok;
}

/*
 * A sealed block 0 whose geometry is self-consistent and one mkfs could
 * make, but not this filesystem's (a changed journal size moves every
 * AG 0 block): AG 0's header is not where it says.  If a copy's geometry
 * finds it, that copy is the filesystem; else block 0 stays (AG 0's
 * header may be what is damaged) and pass 3 rebuilds the header.
 */
static int fk_sb_misplaced(struct fsck *f)
{
	uint64_t cand[2 * MQFS_SB_COPIES_MAX];
	uint8_t *buf;
	unsigned n;

	if (fk_sb_finds_ag0(f, f->sb))
		return 0;
	buf = mqfs_alloc_blocks_mem(1);
	if (!buf)
		return -ENOMEM;
	n = fk_sb_guesses(f, f->sb, cand, MQ_ARRAY_SIZE(cand));
	for (unsigned i = 0; i < n; i++) {
		if (fk_sb_candidate(f, cand[i], buf) ||
		    !memcmp(buf + MQFS_HDR_SIZE, (uint8_t *)f->sb + MQFS_HDR_SIZE,
			    offsetof(struct mqfs_super, state) - MQFS_HDR_SIZE) ||
		    !fk_sb_finds_ag0(f, (void *)buf))
			continue;
		fk_sb_use(f, buf, cand[i], "its geometry does not find AG 0's "
			  "header, a copy's does");
		free(buf);
		return 1;
	}
	free(buf);
	return 0;
}

/*
 * Block 0 has features this fsck does not know: a newer mqfs, or damage
 * the checksum does not show.  A copy without them is named for -b but
 * never taken unasked: a newer mqfs may have set them after the copies
 * were last written (at a clean unmount), and dropping an incompat
 * feature would misread everything that depends on it.
 */
static void fk_sb_hint_copy(struct fsck *f)
{
	uint64_t cand[2 * MQFS_SB_COPIES_MAX];
	uint8_t *buf = mqfs_alloc_blocks_mem(1);
	unsigned n;

	if (!buf)
		return;
	n = fk_sb_guesses(f, f->sb, cand, MQ_ARRAY_SIZE(cand));
	for (unsigned i = 0; i < n; i++) {
		if (fk_sb_candidate(f, cand[i], buf) ||
		    mqfs_super_unknown_features((void *)buf) != MQFS_FEAT_KNOWN)
			continue;
		fprintf(stderr, "fsck.mqfs: the superblock copy in block %llu "
			"has none of them: if block 0 is damaged, "
			"'fsck.mqfs -b %llu' works from that copy\n",
			(unsigned long long)cand[i],
			(unsigned long long)cand[i]);
		break;
	}
	free(buf);
}

int mqfs_fk_pass_super(struct fsck *f)
{
	const char *why;
	int err;

	mqfs_fk_verbose(f, "Pass 1: superblock");
	err = mqfs_bio_sync(f->q, MQ_OP_READ, 0, f->sb, 1, MQ_REQ_META);
	if (err) {
		fprintf(stderr, "fsck.mqfs: cannot read the superblock: %s\n",
			strerror(-err));
		return err;
	}
	why = mqfs_blk_verify(f->sb, MQFS_T_SUPER, 0) ?
		"bad checksum or header" : mqfs_super_why_bad(f->sb, f->dev_blocks);
	if (!why && !mqfs_super_layout_ok(f->sb))
		why = "geometry differs from the layout mkfs makes";
	if (!why && f->o.sb_block)
		why = "not used (-b)";
	err = why ? fk_sb_restore(f, why) : fk_sb_misplaced(f);
	if (err < 0)
		return err;
	if (err)
		why = "misplaced";
	if (mqfs_super_unknown_features(f->sb) != MQFS_FEAT_KNOWN) {
		/* Even ro_compat: what it adds, fsck could not check. */
		fprintf(stderr, "fsck.mqfs: the filesystem has features this "
			"fsck does not know (incompat 0x%x, ro_compat 0x%x)\n",
			f->sb->feature_incompat, f->sb->feature_ro_compat);
		if (!f->sb_restored)
			fk_sb_hint_copy(f);
		return -EOPNOTSUPP;
	}
	fk_sb_layout(f);
	f->gen = f->sb->journal_seq;
	return why ? 0 : fk_sb_check_backup(f);
}
