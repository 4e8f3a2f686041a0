// SPDX-License-Identifier: MIT
/*
 * super.c - mounting and unmounting: the superblock, the order in which
 * the other modules come up and go down, errors, statfs and sync.
 *
 * Mount order: check the superblock (raw read), buffer cache, journal
 * (replay before anything is cached), the superblock buffer, inodes,
 * allocation groups, orphans, then mark the filesystem in use.
 * Unmount runs it backwards and marks it clean last.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"

#define SUPER_META_CACHE_DEF	(32ull << 20)

/*
 * The superblock must describe a filesystem that fits the device (the
 * rule fsck applies), with no feature this mqfs does not know: unknown
 * incompatible features refuse the mount, unknown read-only compatible
 * ones a read-write mount.
 */
static int super_check(const struct mqfs_super *sb, uint64_t dev_bytes,
		       bool readonly)
{
	const char *why = mqfs_super_why_bad(sb, dev_bytes / MQFS_BLOCK_SIZE);
	int feat;

	if (!why && !mqfs_super_layout_ok(sb))
		why = "geometry differs from the layout mkfs makes";

	if (why) {
		fprintf(stderr, "mqfs: superblock: %s; run fsck.mqfs (it "
			"restores it from a copy)\n", why);
		return sb->format_version != MQFS_FORMAT_VERSION ? -EINVAL
								 : -EUCLEAN;
	}
	feat = mqfs_super_unknown_features(sb);
	if (feat == MQFS_FEAT_UNREADABLE) {
		fprintf(stderr, "mqfs: the filesystem has incompatible "
			"features this mqfs does not know (0x%x)\n",
			sb->feature_incompat & ~MQFS_FEATURE_INCOMPAT_SUPP);
		return -EOPNOTSUPP;
	}
	if (feat == MQFS_FEAT_READ_ONLY && !readonly) {
		fprintf(stderr, "mqfs: the filesystem has features this mqfs "
			"can read but not write (0x%x): mount it with -o ro\n",
			sb->feature_ro_compat & ~MQFS_FEATURE_RO_COMPAT_SUPP);
		return -EROFS;
	}
	return 0;
}

/* Read block 0 raw and check it: is this an mqfs filesystem at all? */
static int super_read_raw(struct mq_queue *q, struct mqfs_super *sb,
			  bool readonly)
{
	int err;

	if (mq_queue_logical_block_size(q) > MQFS_BLOCK_SIZE) {
		fprintf(stderr, "mqfs: device sectors of %u bytes are larger "
			"than the 4096-byte block\n",
			mq_queue_logical_block_size(q));
		return -EINVAL;
	}
	if (mq_queue_size_bytes(q) < (uint64_t)MQFS_MIN_BLOCKS * MQFS_BLOCK_SIZE) {
		fprintf(stderr, "mqfs: the device has %" PRIu64 " bytes, too "
			"small for an mqfs filesystem (%u at least): not one\n",
			mq_queue_size_bytes(q), MQFS_MIN_BLOCKS * MQFS_BLOCK_SIZE);
		return -EINVAL;
	}
	err = mqfs_bio_sync(q, MQ_OP_READ, 0, sb, 1, MQ_REQ_META);
	if (err) {
		fprintf(stderr, "mqfs: cannot read the superblock: %s\n",
			strerror(-err));
		return err;
	}
	if (sb->hdr.magic != MQFS_MAGIC || sb->hdr.type != MQFS_T_SUPER) {
		fprintf(stderr, "mqfs: no mqfs superblock at block 0 (bad "
			"magic): if this was an mqfs filesystem, fsck.mqfs can "
			"restore it from a copy; else make one with "
			"mkfs.mqfs\n");
		return -EINVAL;
	}
	if (mqfs_blk_verify(sb, MQFS_T_SUPER, 0)) {
		fprintf(stderr, "mqfs: superblock checksum mismatch at block "
			"0; run fsck.mqfs (it restores it from a copy)\n");
		return -EUCLEAN;
	}
	return super_check(sb, mq_queue_size_bytes(q), readonly);
}

static void super_fill_geometry(struct mqfs_fs *fs, const struct mqfs_super *sb)
{
	fs->block_count = sb->block_count;
	fs->ag_count = sb->ag_count;
	fs->ag_blocks = sb->ag_blocks;
	fs->inodes_per_ag = sb->inodes_per_ag;
	fs->itable_blocks = sb->itable_blocks;
	fs->inode_count = sb->inode_count;
	fs->journal_start = sb->journal_start;
	fs->journal_blocks = sb->journal_blocks;
	fs->aginit_blocks = sb->aginit_blocks;
	fs->ag_tag = mqfs_sb_ag_tag(sb);
}

/* The inode cache's calls upwards (fs_i.h, struct mqfs_ino_ops). */
static const struct mqfs_ino_ops super_ino_ops = {
	.free_data = mqfs_file_free_all,
	.truncate = mqfs_file_truncate,
	.trim_xattrs = mqfs_xattr_trim,
	.drop_xattrs = mqfs_xattr_drop,
	.free_dir_index = mqfs_dir_index_free,
};

static struct mqfs_fs *super_alloc(struct mq_queue *q,
				   const struct mqfs_mount_opts *o)
{
	struct mqfs_fs *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->q = q;
	fs->ino_ops = &super_ino_ops;
	if (o)
		fs->opts = *o;
	if (!fs->opts.meta_cache_bytes)
		fs->opts.meta_cache_bytes = SUPER_META_CACHE_DEF;
	if (!fs->opts.commit_interval_ms)
		fs->opts.commit_interval_ms = 5000;
	pthread_mutex_init(&fs->sb_lock, NULL);
	pthread_mutex_init(&fs->rename_lock, NULL);
	pthread_mutex_init(&fs->files_lock, NULL);
	mq_list_init(&fs->open_files);
	atomic_store(&fs->readonly, fs->opts.readonly);
	return fs;
}

static void super_free(struct mqfs_fs *fs)
{
	pthread_mutex_destroy(&fs->sb_lock);
	pthread_mutex_destroy(&fs->rename_lock);
	pthread_mutex_destroy(&fs->files_lock);
	free(fs->sb0);
	free(fs);
}

/* Change the superblock inside a transaction (mount and unmount). */
static int super_update(struct mqfs_fs *fs, bool mounting)
{
	struct mqfs_super *sb = mqfs_sb(fs);
	struct mqfs_handle h;
	uint32_t nsec;
	uint64_t now;
	int err;

	err = mqfs_trans_start(fs, MQFS_CREDITS_SUPER, &h);
	if (err)
		return err;
	mqfs_now(&now, &nsec);
	pthread_mutex_lock(&fs->sb_lock);
	mqfs_buf_lock(fs->sb_buf);
	if (mounting) {
		sb->mount_count++;
		sb->mount_time = now;
		sb->state &= ~MQFS_STATE_CLEAN;
	} else {
		sb->write_time = now;
		sb->free_blocks = atomic_load(&fs->free_blocks);
		sb->free_inodes = atomic_load(&fs->free_inodes);
		if (!atomic_load(&fs->error_seen))
			sb->state |= MQFS_STATE_CLEAN;
	}
	if (atomic_load(&fs->error_seen))
		sb->state |= MQFS_STATE_ERRORS;
	mqfs_trans_dirty(&h, fs->sb_buf);
	mqfs_buf_unlock(fs->sb_buf);
	pthread_mutex_unlock(&fs->sb_lock);
	err = mqfs_trans_stop(&h);
	return err ? err : mqfs_journal_commit(fs);
}

/*
 * Block 0 after the journal replay: still this filesystem (replay never
 * writes a superblock copy that is not: sbcheck.c), checked again so no
 * path can leave the mount with a geometry it did not check.
 */
static int super_check_replayed(struct mqfs_fs *fs)
{
	const struct mqfs_super *sb = mqfs_sb(fs);
	const char *why = mqfs_super_why_bad(sb, fs->block_count);

	if (!why && !mqfs_super_same_fs(sb, fs->sb0))
		why = "it describes another filesystem";
	if (!why && mqfs_super_unknown_features(sb) >
		    (fs->opts.readonly ? MQFS_FEAT_READ_ONLY : MQFS_FEAT_KNOWN))
		why = "it has features this mqfs cannot use";
	if (!why)
		return 0;
	fprintf(stderr, "mqfs: superblock after journal recovery: %s; run "
		"fsck.mqfs\n", why);
	return -EUCLEAN;
}

/* Bring the modules up in order; on failure take down what came up. */
static int super_start(struct mqfs_fs *fs)
{
	bool replayed = false;
	int err;

	err = mqfs_bcache_create(fs, fs->opts.meta_cache_bytes);
	if (err)
		return err;
	fs->checkpointed = mqfs_alloc_txn_committed;
	err = mqfs_journal_create(fs);
	if (err)
		goto out_bcache;
	if (!fs->opts.no_replay) {
		err = mqfs_journal_replay(fs, &replayed);
		if (err)
			goto out_journal;
		if (replayed)
			fprintf(stderr, "mqfs: recovered the journal\n");
	}
	err = mqfs_buf_read(fs, 0, MQFS_T_SUPER, &fs->sb_buf);
	if (err)
		goto out_journal;
	err = super_check_replayed(fs);
	if (err)
		goto out_sb;
	err = mqfs_icache_create(fs);
	if (err)
		goto out_sb;
	mqfs_journal_set_pre_commit(fs, mqfs_ino_write_lazy);
	err = mqfs_alloc_load(fs);
	if (err)
		goto out_icache;
	err = mqfs_databuf_create(fs);
	if (err)
		goto out_alloc;
	err = mqfs_wback_create(fs, fs->opts.dontcache_dirty_bytes);
	if (err)
		goto out_databuf;
	return 0;
out_databuf:
	mqfs_databuf_destroy(fs);
out_alloc:
	mqfs_alloc_unload(fs);
out_icache:
	mqfs_icache_destroy(fs);
out_sb:
	mqfs_buf_put(fs->sb_buf);
	fs->sb_buf = NULL;
out_journal:
	mqfs_journal_destroy(fs);
out_bcache:
	mqfs_bcache_destroy(fs);
	return err;
}

static void super_stop(struct mqfs_fs *fs)
{
	mqfs_wback_destroy(fs);
	mqfs_icache_destroy(fs);
	mqfs_databuf_destroy(fs);
	mqfs_alloc_unload(fs);
	mqfs_journal_destroy(fs);
	mqfs_buf_put(fs->sb_buf);
	fs->sb_buf = NULL;
	mqfs_bcache_destroy(fs);
}

int mqfs_mount(struct mq_queue *q, const struct mqfs_mount_opts *o,
	       struct mqfs_fs **out)
{
	struct mqfs_super *raw = mqfs_alloc_blocks_mem(1);
	bool readonly = o && o->readonly;
	struct mqfs_fs *fs;
	int err;

	if (!raw)
		return -ENOMEM;
	if (mq_queue_read_only(q) && !readonly) {
		fprintf(stderr, "mqfs: the device is open read-only: mount "
			"with -o ro\n");
		free(raw);
		return -EROFS;
	}
	err = super_read_raw(q, raw, readonly);
	if (err) {
		free(raw);
		return err;
	}
	fs = super_alloc(q, o);
	if (!fs) {
		free(raw);
		return -ENOMEM;
	}
	super_fill_geometry(fs, raw);
	fs->sb0 = raw;		/* what replay must keep to (sbcheck.c) */
	if (raw->state & MQFS_STATE_ERRORS)
		fprintf(stderr, "mqfs: warning: the filesystem has errors; "
			"run fsck.mqfs\n");
	err = super_start(fs);
	if (err)
		goto fail;
	if (!mqfs_is_readonly(fs)) {
		err = mqfs_orphan_recover(fs);
		if (!err)
			err = super_update(fs, true);
		if (err) {
			super_stop(fs);
			goto fail;
		}
	}
	*out = fs;
	return 0;
fail:
	super_free(fs);
	return err;
}

int mqfs_super_write_copies(struct mq_queue *q, const struct mqfs_super *sb)
{
	uint64_t at[MQFS_SB_COPIES_MAX];
	unsigned n = mqfs_sb_copies(sb, at, MQ_ARRAY_SIZE(at));
	uint8_t *copy = mqfs_alloc_blocks_mem(1);
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (unsigned i = 0; i < n && !err; i++) {
		memcpy(copy, sb, MQFS_BLOCK_SIZE);
		mqfs_blk_seal(copy, MQFS_T_SUPER, at[i], sb->hdr.gen);
		err = mqfs_bio_sync(q, MQ_OP_WRITE, at[i], copy, 1,
				    MQ_REQ_META);
	}
	free(copy);
	return err;
}

/*
 * Write the backup superblocks: copies of block 0, but only of a block 0
 * that still describes this filesystem.  The backups are what fsck falls
 * back on: a bad copy there loses the filesystem.
 */
static int super_write_backup(struct mqfs_fs *fs)
{
	uint8_t *copy = mqfs_alloc_blocks_mem(1);
	const char *why;
	int err;

	if (!copy)
		return -ENOMEM;
	mqfs_buf_lock(fs->sb_buf);
	memcpy(copy, fs->sb_buf->data, MQFS_BLOCK_SIZE);
	mqfs_buf_unlock(fs->sb_buf);
	why = mqfs_super_why_bad((void *)copy, fs->block_count);
	if (!why && !mqfs_super_same_fs((void *)copy, fs->sb0))
		why = "it describes another filesystem";
	if (why) {
		mqfs_fs_error(fs, 0, "superblock: %s; the backup is kept as "
			      "it was", why);
		free(copy);
		return -EUCLEAN;
	}
	err = mqfs_super_write_copies(fs->q, (struct mqfs_super *)copy);
	free(copy);
	return err;
}

/*
 * A mount that went read-only after an error still records the error in
 * the superblock (as ext4 does), so the next mount and fsck see it.
 */
static void super_record_error(struct mqfs_fs *fs)
{
	uint8_t *copy = mqfs_alloc_blocks_mem(1);
	struct mqfs_super *sb = (struct mqfs_super *)copy;

	if (!copy)
		return;
	mqfs_buf_lock(fs->sb_buf);
	memcpy(copy, fs->sb_buf->data, MQFS_BLOCK_SIZE);
	mqfs_buf_unlock(fs->sb_buf);
	sb->state = (sb->state & ~MQFS_STATE_CLEAN) | MQFS_STATE_ERRORS;
	mqfs_blk_seal(copy, MQFS_T_SUPER, 0, sb->hdr.gen);
	if (!mqfs_bio_sync(fs->q, MQ_OP_WRITE, 0, copy, 1, MQ_REQ_FUA))
		mqfs_flush_device(fs->q);
	free(copy);
}

int mqfs_unmount(struct mqfs_fs *fs)
{
	bool writable = !mqfs_is_readonly(fs);
	int err = 0, err2;

	/* Files the kernel never closed, pending write-behind, then the
	 * last references (which delete the inodes still open but
	 * unlinked). */
	mqfs_release_all(fs);
	mqfs_wback_destroy(fs);
	mqfs_icache_destroy(fs);
	if (writable)
		err = super_update(fs, false);
	err2 = mqfs_journal_destroy(fs);
	if (!err)
		err = err2;
	if (writable && !err) {
		err = super_write_backup(fs);
		if (!err)
			err = mqfs_journal_clear(fs);
	}
	if (!writable && !fs->opts.readonly && atomic_load(&fs->error_seen))
		super_record_error(fs);
	mqfs_databuf_destroy(fs);
	mqfs_alloc_unload(fs);
	mqfs_buf_put(fs->sb_buf);
	fs->sb_buf = NULL;
	mqfs_bcache_destroy(fs);
	/* Corruption met, up to the end: the caller asks for fsck. */
	if (!err && atomic_load(&fs->error_seen))
		err = -EUCLEAN;
	super_free(fs);
	return err;
}

int mqfs_statfs(struct mqfs_fs *fs, struct statvfs *st)
{
	struct mqfs_super *sb = mqfs_sb(fs);
	uint64_t free, promised;

	memset(st, 0, sizeof(*st));
	st->f_bsize = MQFS_BLOCK_SIZE;
	st->f_frsize = MQFS_BLOCK_SIZE;
	st->f_blocks = fs->block_count;
	free = atomic_load(&fs->free_blocks);
	promised = mqfs_wback_promised_blocks(fs);
	st->f_bfree = free > promised ? free - promised : 0;
	st->f_bavail = st->f_bfree;
	st->f_files = fs->inode_count;
	st->f_ffree = atomic_load(&fs->free_inodes);
	st->f_favail = st->f_ffree;
	memcpy(&st->f_fsid, sb->uuid, sizeof(st->f_fsid));
	st->f_namemax = MQFS_NAME_MAX;
	if (mqfs_is_readonly(fs))
		st->f_flag |= ST_RDONLY;
	return 0;
}

uint64_t mqfs_inode_count(const struct mqfs_fs *fs)
{
	return fs->inode_count;
}

void mqfs_get_stats(struct mqfs_fs *fs, struct mqfs_fs_stats *out)
{
	mqfs_bcache_stats(fs, &out->cache_blocks, &out->cache_hits,
			  &out->cache_misses);
	mqfs_journal_stats(fs, &out->journal_commits, &out->journal_blocks);
}

int mqfs_sync(struct mqfs_fs *fs)
{
	int err;

	mqfs_wback_sync_all(fs);
	err = mqfs_journal_commit(fs);

	return err ? err : mqfs_flush_device(fs->q);
}
