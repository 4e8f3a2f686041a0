// SPDX-License-Identifier: MIT
/*
 * aginit.c - an allocation group as it is born, and the AG-init map
 * (FORMAT.md §2, §4, §5, §5a).
 *
 * mkfs writes AG 0 and, with INCOMPAT_LAZY_AGS, nothing else of the
 * other AGs (as ext4's uninit_bg and lazy_itable_init): their bit in
 * the AG-init map stays clear, and everyone who would read their
 * header or bitmaps - the mount's counts, the allocator, fsck - takes
 * them from here instead.  The allocator writes them from here too, in
 * the transaction of the AG's first allocation (alloc.c), and fsck
 * compares an uninitialised AG's computed bitmaps with these.  One
 * definition, so that the four can never disagree.  Pure: no I/O.
 */
#include <string.h>

#include "fs_i.h"

static void ag_bits_set(uint8_t *bits, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* Does AG @ag end with a superblock copy (the device's last block, or
 * a sparse backup)? */
static bool ag_has_copy(const struct mqfs_layout *l, uint32_t ag)
{
	return ag == l->ag_count - 1 || mqfs_ag_has_sb_copy(ag, l->ag_count);
}

uint32_t mqfs_ag_fresh_free_blocks(const struct mqfs_layout *l, uint32_t ag)
{
	return mqfs_layout_ag_size(l, ag) -
	       (uint32_t)mqfs_layout_ag_overhead(l, ag) -
	       (ag_has_copy(l, ag) ? 1 : 0);
}

uint32_t mqfs_ag_fresh_bbitmap(const struct mqfs_layout *l, uint32_t ag,
			       void *blk)
{
	uint8_t *bits = (uint8_t *)blk + MQFS_HDR_SIZE;
	uint64_t first = (uint64_t)ag * l->ag_blocks;
	uint64_t meta = mqfs_ag_meta_start(l, ag) - first;
	uint32_t size = mqfs_layout_ag_size(l, ag);

	ag_bits_set(bits, size, MQFS_BITMAP_BITS);
	if (ag == 0)
		ag_bits_set(bits, 0, 1 + l->journal_blocks);
	ag_bits_set(bits, meta, meta + mqfs_ag_meta_len(l, ag));
	if (ag_has_copy(l, ag))
		ag_bits_set(bits, size - 1, size);
	return mqfs_ag_fresh_free_blocks(l, ag);
}

void mqfs_ag_fresh_ibitmap(const struct mqfs_layout *l, void *blk)
{
	ag_bits_set((uint8_t *)blk + MQFS_HDR_SIZE, l->inodes_per_ag,
		    MQFS_BITMAP_BITS);
}

void mqfs_ag_fresh_header(const struct mqfs_layout *l, uint32_t ag,
			  uint32_t free_blocks, void *blk)
{
	struct mqfs_ag *h = blk;
	uint64_t meta = mqfs_ag_meta_start(l, ag);

	h->ag_index = ag;
	h->block_count = mqfs_layout_ag_size(l, ag);
	h->first_block = (uint64_t)ag * l->ag_blocks;
	h->bbitmap_blk = meta + 1;
	h->ibitmap_blk = meta + 2;
	h->itable_blk = meta + 3;
	h->free_blocks = free_blocks;
	h->free_inodes = l->inodes_per_ag;
	h->dirs = 0;
	h->fs_tag = l->ag_tag;
}

uint32_t mqfs_ag_tag(const uint8_t uuid[16], bool lazy)
{
	return lazy ? (uint32_t)mqfs_hash(uuid, 16) : 0;
}

bool mqfs_aginit_test(const void *map, uint32_t ag)
{
	uint32_t i = ag % MQFS_BITMAP_BITS;

	return ((const uint8_t *)map)[MQFS_HDR_SIZE + i / 8] >> (i % 8) & 1;
}

void mqfs_aginit_set(void *map, uint32_t ag)
{
	uint32_t i = ag % MQFS_BITMAP_BITS;

	((uint8_t *)map)[MQFS_HDR_SIZE + i / 8] |= (uint8_t)(1u << (i % 8));
}
