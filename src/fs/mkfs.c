// SPDX-License-Identifier: MIT
/*
 * mkfs.c - lay out and write a new filesystem (the library half of
 * mkfs.mqfs; FORMAT.md "Layout").
 *
 * Every write goes through the block layer like any other I/O.  Inode
 * tables are not written block by block: one WRITE_ZEROES makes one
 * all-zero, which the buffer cache and fsck read as "all inodes free".
 * By default only AG 0 is written at all, and the AG-init map that says
 * so (INCOMPAT_LAZY_AGS, aginit.c): the other AGs are initialised by
 * their first allocation, as ext4's uninit_bg and lazy_itable_init, so
 * that mkfs writes a few blocks per 32512 AGs whatever the size.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "fs_i.h"

static void mkfs_root_inode(struct mqfs_inode *d, uint64_t now)
{
	memset(d, 0, sizeof(*d));
	d->mode = S_IFDIR | 0755;
	d->nlink = 2;
	d->uid = (uint32_t)getuid();
	d->gid = (uint32_t)getgid();
	d->atime_sec = d->mtime_sec = d->ctime_sec = d->crtime_sec = now;
	d->parent = MQFS_ROOT_INO;
}

struct mkfs_ctx {
	struct mq_queue *q;
	const struct mqfs_layout *l;
	struct mqfs_bio_batch batch;
	uint8_t *mem;			/* one block per AG-metadata write */
	uint8_t *zeroes;		/* inode-table zeroes, NULL: WRITE_ZEROES */
	uint64_t now;
};

/* Write AG @ag's header and bitmaps (3 blocks of ctx->mem), and zero
 * its inode table. */
static void mkfs_write_ag(struct mkfs_ctx *c, uint32_t ag)
{
	const struct mqfs_layout *l = c->l;
	uint64_t meta = mqfs_ag_meta_start(l, ag);
	uint8_t *blk = c->mem;
	struct mqfs_ag *h = (struct mqfs_ag *)blk;
	uint32_t free_blocks;

	memset(blk, 0, 3 * MQFS_BLOCK_SIZE);
	free_blocks = mqfs_ag_fresh_bbitmap(l, ag, blk + MQFS_BLOCK_SIZE);
	mqfs_ag_fresh_ibitmap(l, blk + 2 * MQFS_BLOCK_SIZE);
	mqfs_ag_fresh_header(l, ag, free_blocks, blk);
	if (ag == 0) {
		/* The root: inode 1, bit 0 of AG 0's inode bitmap. */
		blk[2 * MQFS_BLOCK_SIZE + MQFS_HDR_SIZE] |= 1;
		h->free_inodes--;
		h->dirs = 1;
	}
	mqfs_blk_seal(blk, MQFS_T_AG, meta, 0);
	mqfs_blk_seal(blk + MQFS_BLOCK_SIZE, MQFS_T_BBITMAP, meta + 1, 0);
	mqfs_blk_seal(blk + 2 * MQFS_BLOCK_SIZE, MQFS_T_IBITMAP, meta + 2, 0);
	mqfs_batch_add(c->q, &c->batch, MQ_OP_WRITE, meta, blk, 3, 0);
	if (c->zeroes)
		mqfs_batch_add(c->q, &c->batch, MQ_OP_WRITE, meta + 3,
			       c->zeroes, l->itable_blocks, 0);
	else
		mqfs_batch_add(c->q, &c->batch, MQ_OP_WRITE_ZEROES, meta + 3,
			       NULL, l->itable_blocks, 0);
}

/*
 * The AG-init map of a lazy filesystem: only AG 0 is initialised.  Its
 * last block's bits past ag_count stay clear (FORMAT.md §5a).
 */
static int mkfs_write_aginit(struct mkfs_ctx *c)
{
	const struct mqfs_layout *l = c->l;
	uint64_t start = mqfs_aginit_start(l);
	uint8_t *map = mqfs_alloc_blocks_mem(l->aginit_blocks);
	int err;

	if (!map)
		return -ENOMEM;
	mqfs_aginit_set(map, 0);
	for (uint32_t k = 0; k < l->aginit_blocks; k++)
		mqfs_blk_seal(map + (size_t)k * MQFS_BLOCK_SIZE, MQFS_T_AGINIT,
			      start + k, 0);
	err = mqfs_bio_sync(c->q, MQ_OP_WRITE, start, map, l->aginit_blocks, 0);
	free(map);
	return err;
}

static void mkfs_fill_super(const struct mqfs_layout *l,
			    const struct mqfs_mkfs_opts *o, uint64_t now,
			    const uint8_t *uuid, uint64_t free_blocks,
			    struct mqfs_super *sb)
{
	memset(sb, 0, MQFS_BLOCK_SIZE);
	sb->format_version = MQFS_FORMAT_VERSION;
	sb->block_size = MQFS_BLOCK_SIZE;
	sb->block_count = l->block_count;
	sb->ag_count = l->ag_count;
	sb->ag_blocks = l->ag_blocks;
	sb->inodes_per_ag = l->inodes_per_ag;
	sb->itable_blocks = l->itable_blocks;
	sb->inode_count = (uint64_t)l->ag_count * l->inodes_per_ag;
	sb->journal_start = l->journal_start;
	sb->journal_blocks = l->journal_blocks;
	sb->feature_ro_compat = MQFS_FEATURE_RO_COMPAT_SB_BACKUPS;
	if (l->aginit_blocks) {
		sb->feature_incompat = MQFS_FEATURE_INCOMPAT_LAZY_AGS;
		sb->aginit_blk = mqfs_aginit_start(l);
		sb->aginit_blocks = l->aginit_blocks;
	}
	sb->state = MQFS_STATE_CLEAN;
	sb->root_ino = MQFS_ROOT_INO;
	sb->free_blocks = free_blocks;
	sb->free_inodes = sb->inode_count - 1;
	sb->mkfs_time = sb->write_time = now;
	memcpy(sb->uuid, uuid, sizeof(sb->uuid));
	if (o->label)
		strncpy(sb->label, o->label, sizeof(sb->label) - 1);
	sb->journal_seq = 1;
	sb->inode_gen = 1;
}

static uint64_t mkfs_free_blocks(const struct mqfs_layout *l)
{
	uint64_t free_blocks = 0;

	for (uint32_t ag = 0; ag < l->ag_count; ag++)
		free_blocks += mqfs_ag_fresh_free_blocks(l, ag);
	return free_blocks;
}

/* Root inode table block, journal head, superblock (its copies later). */
static void mkfs_write_fixed(struct mkfs_ctx *c, const struct mqfs_mkfs_opts *o,
			     const uint8_t *uuid)
{
	const struct mqfs_layout *l = c->l;
	uint8_t *itab = c->mem, *jblk = c->mem + MQFS_BLOCK_SIZE;
	uint8_t *sb = c->mem + 2 * MQFS_BLOCK_SIZE;
	uint64_t itable0 = mqfs_ag_meta_start(l, 0) + 3;

	memset(c->mem, 0, 3 * MQFS_BLOCK_SIZE);
	mkfs_root_inode((struct mqfs_inode *)(itab + mqfs_itable_offset(0)),
			c->now);
	mqfs_blk_seal(itab, MQFS_T_ITABLE, itable0, 0);
	mkfs_fill_super(l, o, c->now, uuid, mkfs_free_blocks(l),
			(struct mqfs_super *)sb);
	mqfs_blk_seal(sb, MQFS_T_SUPER, 0, 0);
	mqfs_batch_add(c->q, &c->batch, MQ_OP_WRITE, itable0, itab, 1, 0);
	mqfs_batch_add(c->q, &c->batch, MQ_OP_WRITE, l->journal_start, jblk,
		       1, 0);
	/* The primary superblock goes last, after everything it describes. */
	c->mem = sb;
}

static void mkfs_uuid(const struct mqfs_mkfs_opts *o, uint8_t *uuid)
{
	if (o->uuid) {
		memcpy(uuid, o->uuid, 16);
		return;
	}
	if (getrandom(uuid, 16, 0) != 16) {
		uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;

		memcpy(uuid, &t, 8);
		memcpy(uuid + 8, &t, 8);
	}
	uuid[6] = (uuid[6] & 0x0f) | 0x40;	/* version 4 */
	uuid[8] = (uuid[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
}

static int mkfs_check_device(struct mq_queue *q, const struct mqfs_mkfs_opts *o,
			     uint64_t *blocks)
{
	uint64_t dev_bytes = mq_queue_size_bytes(q);
	uint64_t size = o->size_bytes ? o->size_bytes : dev_bytes;

	if (mq_queue_logical_block_size(q) > MQFS_BLOCK_SIZE)
		return -EINVAL;
	if (size > dev_bytes)
		return -ENOSPC;
	*blocks = size / MQFS_BLOCK_SIZE;
	return 0;
}

#define MKFS_AG_CHUNK	256u	/* AGs written per batch */

/*
 * Write the AGs' metadata, MKFS_AG_CHUNK AGs per batch to bound memory:
 * every AG's, or with lazy AGs AG 0's and the AG-init map.
 */
static int mkfs_write_ags(struct mkfs_ctx *c, uint8_t *mem)
{
	uint32_t count = c->l->aginit_blocks ? 1 : c->l->ag_count;
	int err = 0;

	if (c->l->aginit_blocks)
		err = mkfs_write_aginit(c);
	for (uint32_t ag = 0; ag < count && !err; ) {
		struct mq_plug plug;
		uint32_t end = ag + MKFS_AG_CHUNK;

		if (end > count)
			end = count;
		mqfs_batch_init(&c->batch);
		mq_start_plug(&plug, 32);
		for (uint32_t i = 0; ag < end; ag++, i++) {
			c->mem = mem + 3 * (size_t)i * MQFS_BLOCK_SIZE;
			mkfs_write_ag(c, ag);
		}
		mq_finish_plug(&plug);
		err = mqfs_batch_wait(&c->batch);
	}
	return err;
}

/*
 * Devices and files without write-zeroes (tmpfs has no ZERO_RANGE) get
 * the inode tables written with zeroes instead, as the kernel's
 * blkdev_issue_zeroout falls back to writing.
 */
static int mkfs_probe_zeroes(struct mkfs_ctx *c)
{
	uint64_t itable0 = mqfs_ag_meta_start(c->l, 0) + 3;
	int err = mqfs_bio_sync(c->q, MQ_OP_WRITE_ZEROES, itable0, NULL,
				c->l->itable_blocks, 0);

	if (err != -EOPNOTSUPP && err != -EINVAL)
		return err;
	c->zeroes = mqfs_alloc_blocks_mem(c->l->itable_blocks);
	return c->zeroes ? 0 : -ENOMEM;
}

static void mkfs_report(const struct mqfs_layout *l, const uint8_t *uuid,
			struct mqfs_mkfs_report *rep)
{
	rep->block_count = l->block_count;
	rep->inode_count = (uint64_t)l->ag_count * l->inodes_per_ag;
	rep->ag_count = l->ag_count;
	rep->ag_blocks = l->ag_blocks;
	rep->journal_blocks = l->journal_blocks;
	memcpy(rep->uuid, uuid, 16);
	rep->nr_sb_copies = 0;
	for (uint32_t ag = 1; ag < l->ag_count; ag++) {
		if (!mqfs_ag_has_sb_copy(ag, l->ag_count))
			continue;
		if (rep->nr_sb_copies < MQFS_REPORT_COPIES)
			rep->sb_copy[rep->nr_sb_copies] =
				((uint64_t)ag + 1) * l->ag_blocks - 1;
		rep->nr_sb_copies++;
	}
	if (rep->nr_sb_copies < MQFS_REPORT_COPIES)
		rep->sb_copy[rep->nr_sb_copies] = l->block_count - 1;
	rep->nr_sb_copies++;
}

int mqfs_mkfs(struct mq_queue *q, const struct mqfs_mkfs_opts *o,
	      struct mqfs_mkfs_report *rep)
{
	struct mqfs_layout l;
	struct mkfs_ctx c = { .q = q, .l = &l };
	uint8_t uuid[16], *mem;
	uint64_t blocks;
	int err;

	err = mkfs_check_device(q, o, &blocks);
	if (!err)
		err = mqfs_layout_compute(blocks, o, &l);
	if (err)
		return err;
	mem = mqfs_alloc_blocks_mem(3 * MKFS_AG_CHUNK);
	if (!mem)
		return -ENOMEM;
	c.now = o->now_sec ? o->now_sec : (uint64_t)time(NULL);
	mkfs_uuid(o, uuid);
	l.ag_tag = mqfs_ag_tag(uuid, l.aginit_blocks != 0);
	/* No old superblock may describe a half-written new layout. */
	err = mqfs_bio_sync(q, MQ_OP_WRITE, 0, mem, 1, 0);
	if (!err)
		err = mkfs_probe_zeroes(&c);
	if (!err)
		err = mkfs_write_ags(&c, mem);
	if (!err) {
		mqfs_batch_init(&c.batch);
		c.mem = mem;
		mkfs_write_fixed(&c, o, uuid);
		err = mqfs_batch_wait(&c.batch);
	}
	if (!err)
		err = mqfs_super_write_copies(q, (struct mqfs_super *)c.mem);
	if (!err)
		err = mqfs_flush_device(q);
	if (!err)
		err = mqfs_bio_sync(q, MQ_OP_WRITE, 0, c.mem, 1, MQ_REQ_FUA);
	if (!err)
		err = mqfs_flush_device(q);
	free(mem);
	free(c.zeroes);
	if (!err && rep)
		mkfs_report(&l, uuid, rep);
	return err;
}
