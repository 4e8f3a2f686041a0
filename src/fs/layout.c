// SPDX-License-Identifier: MIT
/*
 * layout.c - the geometry mkfs makes (FORMAT.md "Layout"): the journal's
 * and every AG's place and size from the device size and the options,
 * and the check that a superblock describes exactly such a geometry,
 * which the mount, the journal replay and fsck all apply.  Pure
 * arithmetic: no I/O, no other module.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fs_i.h"

#define MKFS_JOURNAL_MIN	64u	/* blocks */
#define MKFS_JOURNAL_DEF_MIN	256u	/* 1 MiB */
#define MKFS_JOURNAL_DEF_MAX	8192u	/* 32 MiB */
#define MKFS_AG_MIN		64u
#define MKFS_DATA_MIN		8u	/* data blocks an AG must keep */
#define MKFS_BYTES_PER_INODE	16384u

uint32_t mqfs_layout_ag_size(const struct mqfs_layout *l, uint32_t ag)
{
	uint64_t first = (uint64_t)ag * l->ag_blocks;
	uint64_t end = first + l->ag_blocks;

	if (end > l->block_count)
		end = l->block_count;
	return (uint32_t)(end - first);
}

/* Blocks AG @ag needs before any data: its metadata (and sb, journal). */
uint64_t mqfs_layout_ag_overhead(const struct mqfs_layout *l, uint32_t ag)
{
	uint64_t n = mqfs_ag_meta_len(l, ag);

	if (ag == 0)
		n += 1 + l->journal_blocks;
	return n;
}

/* The largest journal: a quarter of the filesystem, half an AG. */
static uint64_t layout_journal_max(uint64_t blocks, uint32_t ag_blocks)
{
	return MQ_MIN(blocks / 4, ag_blocks / 2);
}

static uint32_t layout_ag_blocks(const struct mqfs_mkfs_opts *o)
{
	return o->ag_blocks ? o->ag_blocks : MQFS_AG_MAX_BLOCKS;
}

uint64_t mqfs_mkfs_journal_max(uint64_t size_bytes,
			       const struct mqfs_mkfs_opts *o)
{
	return layout_journal_max(size_bytes / MQFS_BLOCK_SIZE,
				  layout_ag_blocks(o)) * MQFS_BLOCK_SIZE;
}

/* The default (1/64, 1-32 MiB) is cut to what fits; -J is not (compute). */
static uint32_t layout_journal(uint64_t blocks, const struct mqfs_mkfs_opts *o,
			       uint32_t ag_blocks)
{
	uint64_t j = o->journal_bytes / MQFS_BLOCK_SIZE;

	if (!o->journal_bytes) {
		j = blocks / 64;
		if (j < MKFS_JOURNAL_DEF_MIN)
			j = MKFS_JOURNAL_DEF_MIN;
		if (j > MKFS_JOURNAL_DEF_MAX)
			j = MKFS_JOURNAL_DEF_MAX;
	}
	return (uint32_t)MQ_MIN(j, layout_journal_max(blocks, ag_blocks));
}

/* A filesystem smaller than one AG sizes its inodes by what it has. */
static uint32_t layout_inodes_per_ag(const struct mqfs_mkfs_opts *o,
				     uint64_t blocks, uint32_t ag_count,
				     uint32_t ag_blocks)
{
	uint64_t per_ag = blocks < ag_blocks ? blocks : ag_blocks;
	uint64_t n = o->inodes ? (o->inodes + ag_count - 1) / ag_count
			       : per_ag * MQFS_BLOCK_SIZE /
				 MKFS_BYTES_PER_INODE;
	uint64_t max = MQFS_BITMAP_BITS / MQFS_INODES_PER_BLOCK *
		       MQFS_INODES_PER_BLOCK;

	n = (n + MQFS_INODES_PER_BLOCK - 1) / MQFS_INODES_PER_BLOCK *
	    MQFS_INODES_PER_BLOCK;
	if (n < MQFS_INODES_PER_BLOCK)
		n = MQFS_INODES_PER_BLOCK;
	return (uint32_t)(n > max ? max : n);
}

int mqfs_layout_compute(uint64_t block_count, const struct mqfs_mkfs_opts *o,
			struct mqfs_layout *l)
{
	uint32_t ag_blocks = layout_ag_blocks(o);
	uint32_t last;

	if (ag_blocks < MKFS_AG_MIN || ag_blocks > MQFS_AG_MAX_BLOCKS)
		return -EINVAL;
	if (block_count < MQFS_MIN_BLOCKS)
		return -ENOSPC;
	/* A journal larger than fits is refused, never silently cut. */
	if (o->journal_bytes / MQFS_BLOCK_SIZE >
	    layout_journal_max(block_count, ag_blocks))
		return -EINVAL;
	memset(l, 0, sizeof(*l));
	l->block_count = block_count;
	l->ag_blocks = ag_blocks;
	l->ag_count = (uint32_t)((block_count + ag_blocks - 1) / ag_blocks);
	l->journal_start = 1;
	l->journal_blocks = layout_journal(block_count, o, ag_blocks);
	if (l->journal_blocks < MKFS_JOURNAL_MIN)
		return o->journal_bytes ? -EINVAL : -ENOSPC;
	l->inodes_per_ag = layout_inodes_per_ag(o, block_count, l->ag_count,
						 ag_blocks);
	l->itable_blocks = l->inodes_per_ag / MQFS_INODES_PER_BLOCK;
	/* A short last AG that cannot hold its own metadata is cut off. */
	last = l->ag_count - 1;
	if (last > 0 && mqfs_layout_ag_size(l, last) <
	    mqfs_layout_ag_overhead(l, last) + 1 + MKFS_DATA_MIN) {
		l->ag_count--;
		l->block_count = (uint64_t)l->ag_count * ag_blocks;
		last--;
		/* -N: the inodes the cut AG would have held go to the rest. */
		l->inodes_per_ag = layout_inodes_per_ag(o, l->block_count,
							 l->ag_count, ag_blocks);
		l->itable_blocks = l->inodes_per_ag / MQFS_INODES_PER_BLOCK;
	}
	if (!o->init_all_ags)
		l->aginit_blocks = mqfs_aginit_block(l->ag_count - 1) + 1;
	if (mqfs_layout_ag_size(l, last) <
	    mqfs_layout_ag_overhead(l, last) + (last == 0 ? 1 : 0) + 1 +
	    MKFS_DATA_MIN)
		return -ENOSPC;
	/* AG 0 carries the journal too (-J and -N can ask too much). */
	if (last > 0 && mqfs_layout_ag_size(l, 0) <
	    mqfs_layout_ag_overhead(l, 0) + 1 + MKFS_DATA_MIN)
		return -EINVAL;
	if (o->inodes && (uint64_t)l->inodes_per_ag * l->ag_count < o->inodes)
		return -EINVAL;
	return 0;
}

void mqfs_super_layout(const struct mqfs_super *sb, struct mqfs_layout *l)
{
	*l = (struct mqfs_layout){
		.block_count = sb->block_count, .ag_count = sb->ag_count,
		.ag_blocks = sb->ag_blocks, .inodes_per_ag = sb->inodes_per_ag,
		.itable_blocks = sb->itable_blocks,
		.journal_start = sb->journal_start,
		.journal_blocks = sb->journal_blocks,
		.aginit_blocks = sb->aginit_blocks,
		.ag_tag = mqfs_sb_ag_tag(sb),
	};
}

bool mqfs_super_layout_ok(const struct mqfs_super *sb)
{
	struct mqfs_mkfs_opts mo = {
		.inodes = sb->inode_count,
		.journal_bytes = (uint64_t)sb->journal_blocks * MQFS_BLOCK_SIZE,
		.ag_blocks = sb->ag_blocks,
		.init_all_ags = !(sb->feature_incompat &
				  MQFS_FEATURE_INCOMPAT_LAZY_AGS),
	};
	struct mqfs_layout l;

	return !mqfs_layout_compute(sb->block_count, &mo, &l) &&
	       l.block_count == sb->block_count && l.ag_count == sb->ag_count &&
	       l.inodes_per_ag == sb->inodes_per_ag &&
	       l.itable_blocks == sb->itable_blocks &&
	       l.journal_start == sb->journal_start &&
	       l.journal_blocks == sb->journal_blocks &&
	       l.aginit_blocks == sb->aginit_blocks &&
	       (l.aginit_blocks ? mqfs_aginit_start(&l) : 0) == sb->aginit_blk;
}
