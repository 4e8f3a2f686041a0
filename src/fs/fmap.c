// SPDX-License-Identifier: MIT
/*
 * fmap.c - what the two writers of file data share: the synchronous
 * path (file.c) and the dontcache write-behind (wback.c) size their
 * handles, choose where new blocks go and take the inode's lock the
 * same way.  Here rather than in one of them, so neither calls the
 * other for it.
 */
#include "fs_i.h"

#define FMAP_MAX_OPS		8u	/* extent changes per handle */

/* Extent changes one handle may make: a quarter of the journal at most. */
unsigned mqfs_file_ops_per_handle(struct mqfs_fs *fs)
{
	unsigned k = fs->journal_blocks / (4 * mqfs_extent_credits(fs));

	return MQ_MAX(1u, MQ_MIN(k, FMAP_MAX_OPS));
}

/* Each change with its data allocation (alloc.c: 2), plus the inode. */
unsigned mqfs_file_credits(struct mqfs_fs *fs, unsigned ops)
{
	return ops * (mqfs_extent_credits(fs) + 2) + 1;
}

/* Allocation goal for @lblk: right after the block before it, if any. */
uint64_t mqfs_file_goal(struct mqfs_fs *fs, struct mqfs_ino *ip,
			  uint64_t lblk)
{
	struct mqfs_map m;

	if (lblk && !mqfs_extent_map(fs, ip, lblk - 1, 1, &m) && m.pblk)
		return m.pblk + 1;
	return 0;	/* the allocator's choice: this thread's AG */
}

/* The holder may be a truncate waiting for bios in this thread's plug. */
void mqfs_file_lock(struct mqfs_ino *ip, bool excl)
{
	if (!(excl ? pthread_rwlock_trywrlock(&ip->lock) :
		     pthread_rwlock_tryrdlock(&ip->lock)))
		return;
	mq_flush_plug();
	atomic_fetch_add(&ip->lock_waiters, 1);
	if (excl)
		pthread_rwlock_wrlock(&ip->lock);
	else
		pthread_rwlock_rdlock(&ip->lock);
	atomic_fetch_sub(&ip->lock_waiters, 1);
}
