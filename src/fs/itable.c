// SPDX-License-Identifier: MIT
/*
 * itable.c - inode records in the inode tables: where one lives, what
 * makes a live one unusable, reading one for the cache and writing an
 * in-core inode's back within a handle.  Apart from the cache (inode.c)
 * because it is the on-disk side alone and knows no cache entry, as XFS
 * keeps xfs_inode_buf.c apart from xfs_icache.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "icache_i.h"

/* Where inode @ino's record lives (FORMAT.md §6). */
static void ic_locate(struct mqfs_fs *fs, uint64_t ino, uint64_t *blk,
		      size_t *off)
{
	uint32_t ag = (uint32_t)((ino - 1) / fs->inodes_per_ag);
	uint32_t i = (uint32_t)((ino - 1) % fs->inodes_per_ag);

	*blk = mqfs_fs_ag_meta(fs, ag) + 3 + i / MQFS_INODES_PER_BLOCK;
	*off = mqfs_itable_offset(i % MQFS_INODES_PER_BLOCK);
}

const char *mqfs_inode_why_bad(const struct mqfs_inode *d)
{
	const uint16_t known = MQFS_IF_EXTENT_TREE | MQFS_IF_INLINE_DATA;

	switch (d->mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		break;
	default:
		return "has an invalid mode";
	}
	if (d->iflags & ~known || (d->iflags & known) == known)
		return "has invalid flags";
	if (d->iflags & MQFS_IF_INLINE_DATA &&
	    (!S_ISLNK(d->mode) || !d->size || d->size > MQFS_INODE_DATA))
		return "has bad inline data";
	if (S_ISLNK(d->mode) && (!d->size || d->size > MQFS_SYMLINK_MAX))
		return "is a symlink of impossible length";
	return NULL;
}

bool mqfs_inode_size_ok(const struct mqfs_inode *d)
{
	return d->size <= MQFS_MAX_FILE_BYTES;
}

/*
 * Read inode @ino's record: -ENOENT when it is free, -EUCLEAN (logged,
 * the filesystem flagged) when it is live but impossible.
 */
int mqfs_ic_read_record(struct mqfs_fs *fs, uint64_t ino,
			  struct mqfs_inode *d)
{
	const char *why;
	struct mqfs_buf *b;
	uint64_t blk;
	size_t off;
	int err;

	/* Never written, not even zeroed: no inode lives there. */
	if (mqfs_ag_uninit(fs, (uint32_t)((ino - 1) / fs->inodes_per_ag)))
		return -ENOENT;
	ic_locate(fs, ino, &blk, &off);
	err = mqfs_buf_read(fs, blk, MQFS_T_ITABLE, &b);
	if (err)
		return err;
	mqfs_buf_lock(b);
	memcpy(d, (char *)b->data + off, sizeof(*d));
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	if (!d->mode)
		return -ENOENT;
	why = mqfs_inode_why_bad(d);
	if (!why && !mqfs_inode_size_ok(d))
		why = "has a size past the largest file";
	if (!why)
		return 0;
	mqfs_fs_error(fs, blk, "inode %" PRIu64 " %s (mode 0%o, size %" PRIu64
		      "); run fsck.mqfs", ino, why, d->mode, d->size);
	return -EUCLEAN;
}

int mqfs_inode_dirty(struct mqfs_handle *h, struct mqfs_ino *ip)
{
	struct mqfs_buf *b;
	uint64_t blk;
	size_t off;
	int err;

	if (ip->deleted)
		return -ENOENT;
	ic_locate(h->fs, ip->ino, &blk, &off);
	err = mqfs_buf_read(h->fs, blk, MQFS_T_ITABLE, &b);
	if (err)
		return err;
	mqfs_buf_lock(b);
	pthread_mutex_lock(&ip->meta_lock);
	memcpy((char *)b->data + off, &ip->d, sizeof(ip->d));
	pthread_mutex_unlock(&ip->meta_lock);
	mqfs_trans_dirty(h, b);
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
	return 0;
}
