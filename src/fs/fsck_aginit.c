// SPDX-License-Identifier: MIT
/*
 * fsck_aginit.c - the AG-init map and the AGs it calls uninitialised
 * (INCOMPAT_LAZY_AGS, FORMAT.md §5a).  Pass 3 reads the map; an
 * uninitialised AG's header, bitmaps and inode table are then neither
 * read nor demanded (they were never written), pass 4 skips its inode
 * table, and pass 7 asks only whether anything uses its blocks: nothing
 * does on a sound filesystem, and its counts are those of a fresh AG
 * (aginit.c).  When something does (an extent points there), the AG
 * is initialised as the allocator would have: its inode table zeroed,
 * its bit set, and its bitmaps and header rebuilt by pass 7 from what
 * was counted.  fsck's own repairs allocate no block and no inode in
 * such an AG (fk_avail, mqfs_fk_alloc_inode).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsck_i.h"

static uint8_t *fk_map_block(const struct fsck *f, uint32_t k)
{
	return f->aginit + (size_t)k * MQFS_BLOCK_SIZE;
}

#define FK_HDR_RUN	256u	/* AG headers read at once */

/*
 * Which of AGs [@first, @first + @n) have a header this filesystem
 * wrote (checksum, geometry and fs_tag)?  Those were initialised,
 * whatever the map says: a stale header of an earlier filesystem on the
 * device has another fs_tag.  Bit i of @ours for AG @first + i.
 */
static int fk_headers_ours(struct fsck *f, uint32_t first, uint32_t n,
			   uint8_t *buf, uint64_t *ours)
{
	uint64_t at[FK_HDR_RUN];
	int err;

	for (uint32_t i = 0; i < n; i++)
		at[i] = mqfs_ag_meta_start(&f->l, first + i);
	err = mqfs_fk_read_blocks(f, at, n, buf);
	memset(ours, 0, FK_HDR_RUN / 8);
	for (uint32_t i = 0; i < n && !err; i++) {
		const void *h = buf + (size_t)i * MQFS_BLOCK_SIZE;

		if (!mqfs_blk_verify(h, MQFS_T_AG, at[i]) &&
		    !mqfs_fk_ag_header_bad(f, first + i, h))
			ours[i / 64] |= 1ull << (i % 64);
	}
	return err;
}

static bool fk_bit64(const uint64_t *bits, uint32_t i)
{
	return bits[i / 64] >> (i % 64) & 1;
}

/*
 * A map block that cannot be read: an AG whose header checks out was
 * initialised, the rest are taken as not (pass 7 initialises any of
 * those that something uses).
 */
static int fk_map_guess(struct fsck *f, uint32_t k, uint8_t *map,
			uint8_t *buf)
{
	uint32_t first = k * MQFS_BITMAP_BITS;
	uint32_t end = MQ_MIN(f->l.ag_count, first + MQFS_BITMAP_BITS);
	uint64_t ours[FK_HDR_RUN / 64];
	int err = 0;

	mqfs_fk_problem(f, FK_SAFE, "rebuilt", "AG-init map block %llu: bad "
			"checksum or header", (unsigned long long)
			(mqfs_aginit_start(&f->l) + k));
	memset(map, 0, MQFS_BLOCK_SIZE);
	for (uint32_t ag = first; ag < end && !err; ag += FK_HDR_RUN) {
		uint32_t n = MQ_MIN(FK_HDR_RUN, end - ag);

		err = fk_headers_ours(f, ag, n, buf, ours);
		for (uint32_t i = 0; i < n && !err; i++)
			if (fk_bit64(ours, i))
				mqfs_aginit_set(map, ag + i);
	}
	f->aginit_changed = true;
	return err;
}

/*
 * Every AG the map calls uninitialised is marked so for the passes,
 * unless its header is this filesystem's: then it lost its bit.
 */
static int fk_map_lost_bits(struct fsck *f, uint8_t *buf)
{
	uint64_t ours[FK_HDR_RUN / 64];
	int err = 0;

	for (uint32_t ag = 1; ag < f->l.ag_count && !err; ag += FK_HDR_RUN) {
		uint32_t n = MQ_MIN(FK_HDR_RUN, f->l.ag_count - ag);

		err = fk_headers_ours(f, ag, n, buf, ours);
		for (uint32_t i = 0; i < n && !err; i++) {
			uint32_t g = ag + i;
			uint8_t *map = fk_map_block(f, mqfs_aginit_block(g));

			if (mqfs_aginit_test(map, g))
				continue;
			if (!fk_bit64(ours, i)) {
				f->ag_bad[g] |= FK_AG_UNINIT;
				continue;
			}
			mqfs_fk_problem(f, FK_SAFE, "fixed", "AG %u: "
					"initialised, but marked uninitialised"
					" in the AG-init map", g);
			mqfs_aginit_set(map, g);
			f->aginit_changed = true;
		}
	}
	return err;
}

/* Bits past the last AG are 0. */
static void fk_map_tail(struct fsck *f, uint32_t k, uint8_t *map)
{
	uint32_t first = k * MQFS_BITMAP_BITS, bad = 0;

	for (uint32_t i = 0; i < MQFS_BITMAP_BITS; i++) {
		if (first + i < f->l.ag_count ||
		    !mqfs_aginit_test(map, first + i))
			continue;
		map[MQFS_HDR_SIZE + i / 8] &= (uint8_t)~(1u << (i % 8));
		bad++;
	}
	if (!bad)
		return;
	mqfs_fk_problem(f, FK_SAFE, "fixed", "AG-init map block %llu: %u "
			"bits past the last AG set", (unsigned long long)
			(mqfs_aginit_start(&f->l) + k), bad);
	f->aginit_changed = true;
}

int mqfs_fk_aginit_load(struct fsck *f)
{
	uint64_t start = mqfs_aginit_start(&f->l);
	uint8_t *buf;
	int err = 0;

	if (!f->l.aginit_blocks)
		return 0;
	f->aginit = mqfs_alloc_blocks_mem(f->l.aginit_blocks);
	buf = mqfs_alloc_blocks_mem(FK_HDR_RUN);
	if (!f->aginit || !buf) {
		free(buf);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < f->l.aginit_blocks && !err; k++) {
		uint8_t *map = fk_map_block(f, k);

		err = mqfs_fk_read_meta(f, start + k, MQFS_T_AGINIT, map);
		if (err == -EUCLEAN)
			err = fk_map_guess(f, k, map, buf);
		else if (!err)
			fk_map_tail(f, k, map);
	}
	if (!err && !mqfs_aginit_test(f->aginit, 0)) {
		mqfs_fk_problem(f, FK_SAFE, "fixed", "AG-init map: AG 0, which "
				"holds the root, marked uninitialised");
		mqfs_aginit_set(f->aginit, 0);
		f->aginit_changed = true;
	}
	if (!err)
		err = fk_map_lost_bits(f, buf);
	free(buf);
	return err;
}

/* Blocks set in [from, from + n) of the computed block map. */
static uint64_t fk_count_used(const struct fsck *f, uint64_t from, uint64_t n)
{
	uint64_t count = 0, end = from + n;

	for (uint64_t b = from; b < end; ) {
		unsigned off = (unsigned)(b % 64);
		uint64_t take = MQ_MIN(64 - off, end - b);
		uint64_t w = f->used[b / 64] >> off;

		if (take < 64)
			w &= (1ull << take) - 1;
		count += (uint64_t)__builtin_popcountll(w);
		b += take;
	}
	return count;
}

int mqfs_fk_uninit_check(struct fsck *f, uint32_t ag, bool *in_use)
{
	uint32_t size = mqfs_layout_ag_size(&f->l, ag);
	uint64_t used = fk_count_used(f, (uint64_t)ag * f->l.ag_blocks, size);
	uint64_t fresh = size - mqfs_ag_fresh_free_blocks(&f->l, ag);
	uint64_t itable = mqfs_ag_meta_start(&f->l, ag) + 3;
	uint8_t *zero;
	int err = 0;

	*in_use = used != fresh;
	if (!*in_use)
		return 0;
	mqfs_fk_problem(f, FK_SAFE, "initialised", "AG %u: not initialised, "
			"but %llu of its blocks are in use", ag,
			(unsigned long long)(used - fresh));
	zero = mqfs_alloc_blocks_mem(1);
	if (!zero)
		return -ENOMEM;
	for (uint32_t i = 0; i < f->l.itable_blocks && !err; i++)
		err = mqfs_fk_write(f, itable + i, zero, 0);
	free(zero);
	f->ag_bad[ag] = FK_AG_HDR | FK_AG_BBITMAP | FK_AG_IBITMAP;
	mqfs_aginit_set(fk_map_block(f, mqfs_aginit_block(ag)), ag);
	f->aginit_changed = true;
	return err;
}

int mqfs_fk_aginit_write(struct fsck *f)
{
	uint64_t start = mqfs_aginit_start(&f->l);
	int err = 0;

	if (!f->aginit_changed)
		return 0;
	for (uint32_t k = 0; k < f->l.aginit_blocks && !err; k++)
		err = mqfs_fk_write(f, start + k, fk_map_block(f, k),
				    MQFS_T_AGINIT);
	return err;
}
