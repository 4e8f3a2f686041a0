// SPDX-License-Identifier: MIT
/*
 * alloc_ag.c - allocation groups coming into being: at mount, each AG's
 * counts from its header or, for an AG the AG-init map calls
 * uninitialised (INCOMPAT_LAZY_AGS, FORMAT.md §5a), from what mkfs
 * would have written (aginit.c), without a read; and the first
 * allocation in an uninitialised AG writing it.  Apart from alloc.c,
 * which only allocates from AGs that are there.
 */
#include <errno.h>
#include <stdlib.h>

#include "alloc_i.h"
#include "mqfs/lock.h"

/* ---- load / unload -------------------------------------------------------- */

static int ag_check_header(struct mqfs_fs *fs, struct mqfs_ag_info *ag,
			   const struct mqfs_ag *h)
{
	if (h->ag_index != ag->index || h->block_count != ag->block_count ||
	    h->first_block != ag->first_block ||
	    h->bbitmap_blk != ag->meta + 1 || h->ibitmap_blk != ag->meta + 2 ||
	    h->itable_blk != ag->meta + 3 || h->fs_tag != fs->ag_tag ||
	    h->free_blocks > ag->block_count ||
	    h->free_inodes > fs->inodes_per_ag ||
	    h->dirs > fs->inodes_per_ag - h->free_inodes) {
		mqfs_fs_error(fs, ag->meta, "AG %u: header does not match "
			      "the geometry or its counts are impossible",
			      ag->index);
		return -EUCLEAN;
	}
	return 0;
}

/* The counts of an AG no one has written: its fresh header's. */
static void ag_load_uninit(struct mqfs_fs *fs, struct mqfs_ag_info *ag)
{
	struct mqfs_layout l;

	mqfs_fs_layout(fs, &l);
	atomic_store(&ag->uninit, true);
	atomic_store(&ag->free_blocks,
		     mqfs_ag_fresh_free_blocks(&l, ag->index));
	atomic_store(&ag->free_inodes, fs->inodes_per_ag);
	atomic_store(&ag->dirs, 0);
}

static int ag_load_one(struct mqfs_fs *fs, uint32_t i, bool uninit)
{
	struct mqfs_ag_info *ag = &fs->ags[i];
	uint64_t end;
	struct mqfs_buf *b;
	int err;

	ag->index = i;
	ag->first_block = (uint64_t)i * fs->ag_blocks;
	end = MQ_MIN(ag->first_block + fs->ag_blocks, fs->block_count);
	ag->block_count = (uint32_t)(end - ag->first_block);
	ag->meta = mqfs_fs_ag_meta(fs, i);
	ag->meta_len = 3 + fs->itable_blocks + (i ? 0 : fs->aginit_blocks);
	if (uninit) {
		ag_load_uninit(fs, ag);
		return 0;
	}
	err = mqfs_buf_read(fs, ag->meta, MQFS_T_AG, &b);
	if (err)
		return err;
	mqfs_buf_lock(b);
	err = ag_check_header(fs, ag, b->data);
	if (!err) {
		const struct mqfs_ag *h = b->data;

		atomic_store(&ag->free_blocks, h->free_blocks);
		atomic_store(&ag->free_inodes, h->free_inodes);
		atomic_store(&ag->dirs, h->dirs);
	}
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	return err;
}

/* Block @k of the AG-init map, read and checked. */
static int ag_read_map(struct mqfs_fs *fs, uint32_t k, struct mqfs_buf **b)
{
	struct mqfs_layout l;

	mqfs_fs_layout(fs, &l);
	return mqfs_buf_read(fs, mqfs_aginit_start(&l) + k, MQFS_T_AGINIT, b);
}

/*
 * Load AGs [@from, @to), all in block @k of the AG-init map (or all
 * initialised on a filesystem without one).  AG 0 must be initialised:
 * it holds the root.
 */
static int ag_load_range(struct mqfs_fs *fs, uint32_t from, uint32_t to)
{
	struct mqfs_buf *map = NULL;
	int err = 0;

	if (fs->aginit_blocks)
		err = ag_read_map(fs, mqfs_aginit_block(from), &map);
	for (uint32_t i = from; i < to && !err; i++) {
		bool uninit = map && !mqfs_aginit_test(map->data, i);

		if (uninit && i == 0) {
			mqfs_fs_error(fs, map->blocknr, "AG 0 is marked "
				      "uninitialised; run fsck.mqfs");
			err = -EUCLEAN;
		} else {
			err = ag_load_one(fs, i, uninit);
		}
	}
	if (map)
		mqfs_buf_put(map);
	return err;
}

int mqfs_alloc_load(struct mqfs_fs *fs)
{
	uint64_t free_blocks = 0, free_inodes = 0;
	uint32_t i;
	int err = 0;

	fs->ags = calloc(fs->ag_count, sizeof(*fs->ags));
	if (!fs->ags)
		return -ENOMEM;
	for (i = 0; i < fs->ag_count; i++)
		mq_lock_init_short(&fs->ags[i].lock);
	for (i = 0; i < fs->ag_count && !err; i += MQFS_BITMAP_BITS)
		err = ag_load_range(fs, i, MQ_MIN(fs->ag_count,
						  i + MQFS_BITMAP_BITS));
	if (err) {
		mqfs_alloc_unload(fs);
		return err;
	}
	for (i = 0; i < fs->ag_count; i++) {
		free_blocks += atomic_load(&fs->ags[i].free_blocks);
		free_inodes += atomic_load(&fs->ags[i].free_inodes);
	}
	atomic_store(&fs->free_blocks, free_blocks);
	atomic_store(&fs->free_inodes, free_inodes);
	return 0;
}

void mqfs_alloc_unload(struct mqfs_fs *fs)
{
	if (!fs->ags)
		return;
	for (uint32_t i = 0; i < fs->ag_count; i++) {
		struct mqfs_ag_info *ag = &fs->ags[i];

		free(ag->busy_map);
		free(ag->busy);
		pthread_mutex_destroy(&ag->lock);
	}
	free(fs->ags);
	fs->ags = NULL;
}

/* ---- first use of an uninitialised AG ----------------------------------- */

/* AG header, both bitmaps and the AG-init map block that holds its bit. */
#define AG_INIT_CREDITS		4u

/* Fill the fresh buffers of AG @ag's header and bitmaps, dirty them. */
static void ag_init_fill(struct mqfs_handle *h, uint32_t ag,
			 struct mqfs_buf *const b[3])
{
	struct mqfs_layout l;
	uint32_t free_blocks;

	mqfs_fs_layout(h->fs, &l);
	for (unsigned i = 0; i < 3; i++)
		mqfs_buf_lock(b[i]);
	free_blocks = mqfs_ag_fresh_bbitmap(&l, ag, b[1]->data);
	mqfs_ag_fresh_ibitmap(&l, b[2]->data);
	mqfs_ag_fresh_header(&l, ag, free_blocks, b[0]->data);
	for (unsigned i = 0; i < 3; i++) {
		mqfs_trans_dirty(h, b[i]);
		mqfs_buf_unlock(b[i]);
	}
}

/*
 * The first allocation in an uninitialised AG writes it, in the
 * caller's transaction: its header and bitmaps as mkfs would have made
 * them and its bit in the AG-init map.  Its inode table is zeroed on
 * the device first, synchronously: the commit that makes the AG
 * initialised comes after that write (and the flush before every
 * commit block), and a crash before the commit leaves the AG as it
 * was, uninitialised, with zeroes no one reads.  Without journal room
 * for the four blocks now the AG is skipped like a full one, and the
 * caller's retry after -ENOSPC (mqfs_retry_enospc) finds it again
 * after a commit.
 */
static int ag_init_locked(struct mqfs_handle *h, struct mqfs_ag_info *ag)
{
	static const unsigned type[3] = { MQFS_T_AG, MQFS_T_BBITMAP,
					  MQFS_T_IBITMAP };
	struct mqfs_fs *fs = h->fs;
	struct mqfs_buf *b[3] = { NULL, NULL, NULL }, *map = NULL;
	int err;

	if (mqfs_trans_extend(h, AG_INIT_CREDITS))
		return -ENOSPC;
	err = mqfs_bio_zeroout(fs->q, ag->meta + 3, fs->itable_blocks);
	if (!err)
		err = ag_read_map(fs, mqfs_aginit_block(ag->index), &map);
	for (unsigned i = 0; i < 3 && !err; i++)
		err = mqfs_buf_new(fs, ag->meta + i, type[i], &b[i]);
	if (!err) {
		ag_init_fill(h, ag->index, b);
		mqfs_buf_lock(map);
		mqfs_aginit_set(map->data, ag->index);
		mqfs_trans_dirty(h, map);
		mqfs_buf_unlock(map);
		atomic_store(&ag->uninit, false);
	}
	for (unsigned i = 0; i < 3; i++)
		if (b[i])
			mqfs_buf_put(b[i]);
	if (map)
		mqfs_buf_put(map);
	return err;
}

int mqfs_ag_ready_locked(struct mqfs_handle *h, struct mqfs_ag_info *ag)
{
	return atomic_load(&ag->uninit) ? ag_init_locked(h, ag) : 0;
}

bool mqfs_ag_uninit(struct mqfs_fs *fs, uint32_t ag)
{
	return atomic_load(&fs->ags[ag].uninit);
}
