// SPDX-License-Identifier: MIT
/*
 * fsck_ag.c - the allocation groups' headers and bitmaps: pass 3 checks
 * each AG header and bitmap block (checksum, fields against the
 * geometry) and marks the fixed metadata in use; pass 7 compares the
 * bitmaps and counts that passes 3 to 6 computed with the disk and
 * rewrites what differs.  Apart from fsck.c (driver, block access): the
 * two passes share fk_ag_size and the damage pass 3 records (FK_AG_*).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsck_i.h"

/* ---- pass 3: AG headers and bitmaps ----------------------------------- */

static uint32_t fk_ag_size(const struct fsck *f, uint32_t ag)
{
	uint64_t first = (uint64_t)ag * f->l.ag_blocks;
	uint64_t end = first + f->l.ag_blocks;

	return (uint32_t)((end < f->l.block_count ? end : f->l.block_count) -
			  first);
}

const char *mqfs_fk_ag_header_bad(const struct fsck *f, uint32_t ag,
				  const struct mqfs_ag *h)
{
	uint64_t meta = mqfs_ag_meta_start(&f->l, ag);

	if (h->ag_index != ag || h->block_count != fk_ag_size(f, ag) ||
	    h->first_block != (uint64_t)ag * f->l.ag_blocks ||
	    h->bbitmap_blk != meta + 1 || h->ibitmap_blk != meta + 2 ||
	    h->itable_blk != meta + 3)
		return "fields do not match the geometry";
	if (h->fs_tag != f->l.ag_tag)
		return "its fs_tag is another filesystem's";
	return NULL;
}

static void fk_mark_range(struct fsck *f, uint64_t from, uint64_t n)
{
	for (uint64_t b = from; b < from + n; b++)
		fk_set_used(f, b, true);
}

static int fk_check_ag(struct fsck *f, uint32_t ag, uint8_t *buf)
{
	uint64_t meta = mqfs_ag_meta_start(&f->l, ag);
	const char *why = NULL;
	int err;

	fk_mark_range(f, meta, mqfs_ag_meta_len(&f->l, ag));
	if (f->ag_bad[ag] & FK_AG_UNINIT)
		return 0;	/* never written: nothing to read */
	err = mqfs_fk_read_meta(f, meta, MQFS_T_AG, buf);
	if (err == -EUCLEAN)
		why = "bad checksum or header";
	else if (err)
		return err;
	else
		why = mqfs_fk_ag_header_bad(f, ag, (const void *)buf);
	if (why) {
		f->ag_bad[ag] |= FK_AG_HDR;
		mqfs_fk_problem(f, FK_SAFE, "rebuilt", "AG %u header (block "
				"%llu): %s", ag, (unsigned long long)meta, why);
	}
	for (unsigned i = 1; i <= 2; i++) {
		unsigned type = i == 1 ? MQFS_T_BBITMAP : MQFS_T_IBITMAP;

		err = mqfs_fk_read_meta(f, meta + i, type, buf);
		if (err && err != -EUCLEAN)
			return err;
		if (!err)
			continue;
		f->ag_bad[ag] |= i == 1 ? FK_AG_BBITMAP : FK_AG_IBITMAP;
		mqfs_fk_problem(f, FK_SAFE, "rebuilt", "AG %u %s bitmap (block "
				"%llu): bad checksum or header", ag,
				i == 1 ? "block" : "inode",
				(unsigned long long)(meta + i));
	}
	return 0;
}

int mqfs_fk_pass_ags(struct fsck *f)
{
	uint8_t *buf = mqfs_alloc_blocks_mem(1);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	mqfs_fk_verbose(f, "Pass 3: allocation groups");
	mqfs_fk_progress_pass(f, 0, 5);
	/* Superblock, journal, the copies: never data. */
	fk_mark_range(f, 0, 1 + (uint64_t)f->l.journal_blocks);
	{
		uint64_t at[MQFS_SB_COPIES_MAX];
		unsigned n = mqfs_sb_copies(f->sb, at, MQ_ARRAY_SIZE(at));

		for (unsigned i = 0; i < n; i++)
			fk_set_used(f, at[i], true);
	}
	err = mqfs_fk_aginit_load(f);
	for (uint32_t ag = 0; ag < f->l.ag_count && !err; ag++) {
		err = fk_check_ag(f, ag, buf);
		mqfs_fk_progress(f, ag + 1, f->l.ag_count);
	}
	free(buf);
	return err;
}

/* ---- pass 7: bitmaps and counts ----------------------------------------- */

static void fk_bit_set(uint8_t *bits, uint32_t i)
{
	bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

static bool fk_bit(const uint8_t *bits, uint32_t i)
{
	return (bits[i / 8] >> (i % 8)) & 1;
}

struct fk_bitdiff {
	uint32_t missing, extra;	/* set in expected only / disk only */
	uint32_t first_missing, first_extra;
};

/* Differences of @want and @disk, except bits set in @ignore. */
static void fk_bits_compare(const uint8_t *want, const uint8_t *disk,
			    const uint8_t *ignore, uint32_t nbits,
			    struct fk_bitdiff *d)
{
	memset(d, 0, sizeof(*d));
	for (uint32_t i = 0; i < nbits; i++) {
		bool w = fk_bit(want, i), h = fk_bit(disk, i);

		if (w == h || fk_bit(ignore, i))
			continue;
		if (w && !d->missing++)
			d->first_missing = i;
		if (!w && !d->extra++)
			d->first_extra = i;
	}
}

/*
 * Compare the bitmap block @blk (whose expected payload is in @want)
 * with the disk and rewrite it when it differs.  Bits set in @ignore
 * were changed by fsck's own repairs (already reported).  @what names
 * the objects ("blocks"/"inodes"), @base is the number of bit 0.
 */
static int fk_sync_bitmap(struct fsck *f, uint32_t ag, uint64_t blk,
			  unsigned type, uint8_t *want, uint8_t *disk,
			  const uint8_t *ignore, bool bad, const char *what,
			  uint64_t base)
{
	struct fk_bitdiff d;
	int err;

	if (!bad) {
		err = mqfs_fk_read(f, blk, disk, 1);
		if (err)
			return err;
		if (!memcmp(want + MQFS_HDR_SIZE, disk + MQFS_HDR_SIZE,
			    MQFS_PAYLOAD))
			return 0;
		fk_bits_compare(want + MQFS_HDR_SIZE, disk + MQFS_HDR_SIZE,
				ignore, MQFS_BITMAP_BITS, &d);
		if (d.missing)
			mqfs_fk_problem(f, FK_SAFE, "fixed", "AG %u %s bitmap "
				"(block %llu): %u %s in use marked free (first "
				"%llu)", ag, type == MQFS_T_BBITMAP ? "block" :
				"inode", (unsigned long long)blk, d.missing,
				what,
				(unsigned long long)(base + d.first_missing));
		if (d.extra)
			mqfs_fk_problem(f, FK_SAFE, "fixed", "AG %u %s bitmap "
				"(block %llu): %u free %s marked in use (first "
				"%llu)", ag, type == MQFS_T_BBITMAP ? "block" :
				"inode", (unsigned long long)blk, d.extra, what,
				(unsigned long long)(base + d.first_extra));
	}
	return mqfs_fk_write(f, blk, want, type);
}

struct fk_agcount {
	uint32_t free_blocks, free_inodes, dirs;
};

static int fk_sync_block_bitmap(struct fsck *f, uint32_t ag, uint8_t *want,
				uint8_t *disk, uint8_t *ignore,
				struct fk_agcount *c)
{
	uint64_t first = (uint64_t)ag * f->l.ag_blocks;
	uint32_t size = fk_ag_size(f, ag);
	uint8_t *bits = want + MQFS_HDR_SIZE;

	memset(want, 0, MQFS_BLOCK_SIZE);
	memset(ignore, 0, MQFS_PAYLOAD);
	c->free_blocks = 0;
	for (uint32_t i = 0; i < MQFS_BITMAP_BITS; i++) {
		uint64_t b = first + i;

		if (i >= size || fk_used(f, b))
			fk_bit_set(bits, i);
		else
			c->free_blocks++;
		if (i < size && (f->touched[b / 64] >> (b % 64)) & 1)
			fk_bit_set(ignore, i);
	}
	return fk_sync_bitmap(f, ag, mqfs_ag_meta_start(&f->l, ag) + 1,
			      MQFS_T_BBITMAP, want, disk, ignore,
			      f->ag_bad[ag] & FK_AG_BBITMAP, "blocks", first);
}

static int fk_sync_inode_bitmap(struct fsck *f, uint32_t ag, uint8_t *want,
				uint8_t *disk, uint8_t *ignore,
				struct fk_agcount *c)
{
	uint64_t base = (uint64_t)ag * f->l.inodes_per_ag + 1;
	uint8_t *bits = want + MQFS_HDR_SIZE;

	memset(want, 0, MQFS_BLOCK_SIZE);
	memset(ignore, 0, MQFS_PAYLOAD);
	c->free_inodes = c->dirs = 0;
	for (uint32_t i = 0; i < MQFS_BITMAP_BITS; i++) {
		const struct fk_ino *fi = &f->ino[base + i];

		if (i >= f->l.inodes_per_ag) {
			fk_bit_set(bits, i);
			continue;
		}
		if (fi->flags & FK_I_LIVE)
			fk_bit_set(bits, i);
		else
			c->free_inodes++;
		if ((fi->flags & (FK_I_LIVE | FK_I_DIR)) ==
		    (FK_I_LIVE | FK_I_DIR))
			c->dirs++;
		if (fi->flags & FK_I_TOUCHED)
			fk_bit_set(ignore, i);
	}
	return fk_sync_bitmap(f, ag, mqfs_ag_meta_start(&f->l, ag) + 2,
			      MQFS_T_IBITMAP, want, disk, ignore,
			      f->ag_bad[ag] & FK_AG_IBITMAP, "inodes", base);
}

static int fk_sync_ag_header(struct fsck *f, uint32_t ag, uint8_t *buf,
			     const struct fk_agcount *c)
{
	uint64_t meta = mqfs_ag_meta_start(&f->l, ag);
	struct mqfs_ag *h = (struct mqfs_ag *)buf;
	int err = mqfs_fk_read(f, meta, buf, 1);

	if (err)
		return err;
	if (!(f->ag_bad[ag] & FK_AG_HDR)) {
		const struct fk_agdelta *d = &f->agd[ag];

		if (h->free_blocks == c->free_blocks &&
		    h->free_inodes == c->free_inodes && h->dirs == c->dirs)
			return 0;
		/* Off only by what fsck freed and allocated: no report. */
		if (h->free_blocks + d->free_blocks != c->free_blocks ||
		    h->free_inodes + d->free_inodes != c->free_inodes ||
		    h->dirs + d->dirs != c->dirs)
			mqfs_fk_problem(f, FK_SAFE, "fixed", "AG %u header "
				"(block %llu): free blocks %u, free inodes %u, "
				"directories %u; counted %u, %u, %u", ag,
				(unsigned long long)meta, h->free_blocks,
				h->free_inodes, h->dirs,
				c->free_blocks - (uint32_t)d->free_blocks,
				c->free_inodes - (uint32_t)d->free_inodes,
				c->dirs - (uint32_t)d->dirs);
	}
	memset(buf, 0, MQFS_BLOCK_SIZE);
	h->ag_index = ag;
	h->block_count = fk_ag_size(f, ag);
	h->first_block = (uint64_t)ag * f->l.ag_blocks;
	h->bbitmap_blk = meta + 1;
	h->ibitmap_blk = meta + 2;
	h->itable_blk = meta + 3;
	h->free_blocks = c->free_blocks;
	h->free_inodes = c->free_inodes;
	h->dirs = c->dirs;
	h->fs_tag = f->l.ag_tag;
	return mqfs_fk_write(f, meta, buf, MQFS_T_AG);
}

/*
 * One AG's bitmaps and header to the disk where they differ.  An
 * uninitialised AG nothing uses has none: its counts are a fresh AG's.
 */
static int fk_sync_ag(struct fsck *f, uint32_t ag, uint8_t *want,
		      uint8_t *disk, uint8_t *ignore, struct fk_agcount *c)
{
	bool in_use = true;
	int err = 0;

	if (f->ag_bad[ag] & FK_AG_UNINIT)
		err = mqfs_fk_uninit_check(f, ag, &in_use);
	if (err)
		return err;
	if (!in_use) {
		c->free_blocks = mqfs_ag_fresh_free_blocks(&f->l, ag);
		c->free_inodes = f->l.inodes_per_ag;
		c->dirs = 0;
		return 0;
	}
	err = fk_sync_block_bitmap(f, ag, want, disk, ignore, c);
	if (!err)
		err = fk_sync_inode_bitmap(f, ag, want, disk, ignore, c);
	if (!err)
		err = fk_sync_ag_header(f, ag, want, c);
	return err;
}

int mqfs_fk_pass_bitmaps(struct fsck *f)
{
	uint8_t *want = mqfs_alloc_blocks_mem(3);
	uint8_t *disk = want + MQFS_BLOCK_SIZE, *ignore = disk + MQFS_BLOCK_SIZE;
	uint64_t free_blocks = 0, free_inodes = 0;
	int64_t dblocks = 0, dinodes = 0;
	struct mqfs_super *sb = f->sb;
	int err = 0;

	if (!want)
		return -ENOMEM;
	mqfs_fk_verbose(f, "Pass 7: bitmaps and counts");
	mqfs_fk_progress_pass(f, 95, 5);
	for (uint32_t ag = 0; ag < f->l.ag_count && !err; ag++) {
		struct fk_agcount c = { 0 };

		err = fk_sync_ag(f, ag, want, disk, ignore, &c);
		free_blocks += c.free_blocks;
		free_inodes += c.free_inodes;
		dblocks += f->agd[ag].free_blocks;
		dinodes += f->agd[ag].free_inodes;
		mqfs_fk_progress(f, ag + 1, f->l.ag_count);
	}
	free(want);
	if (!err)
		err = mqfs_fk_aginit_write(f);
	if (err)
		return err;
	if (sb->free_blocks != free_blocks || sb->free_inodes != free_inodes) {
		/* Exact only at a clean unmount: otherwise just refresh. */
		if (sb->state & MQFS_STATE_CLEAN &&
		    (sb->free_blocks + (uint64_t)dblocks != free_blocks ||
		     sb->free_inodes + (uint64_t)dinodes != free_inodes))
			mqfs_fk_problem(f, FK_SAFE, "fixed", "superblock: free "
					"blocks %llu, free inodes %llu; "
					"counted %llu, %llu",
					(unsigned long long)sb->free_blocks,
					(unsigned long long)sb->free_inodes,
					(unsigned long long)(free_blocks -
						(uint64_t)dblocks),
					(unsigned long long)(free_inodes -
						(uint64_t)dinodes));
		sb->free_blocks = free_blocks;
		sb->free_inodes = free_inodes;
		f->sb_changed = true;
	}
	return 0;
}
