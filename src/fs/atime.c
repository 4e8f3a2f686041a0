// SPDX-License-Identifier: MIT
/*
 * atime.c - access times as a kernel filesystem keeps them.  A read of a
 * file's data and a listing of a directory that reach the daemon move
 * atime, by the mount's mode: relatime (the default, the kernel's rule:
 * when atime is not after mtime or ctime, or is a day old), strictatime
 * (every access), noatime (never); nodiratime leaves directories alone.
 * The kernel keeps no atime of its own for FUSE (its inodes are
 * S_NOATIME), so a read served from its page cache moves nothing.
 *
 * An access changes the in-core inode only and queues it on the lazy
 * list (inode.c), whose records the next commit writes - the commit
 * interval's, an fsync's, unmount's: a read costs no journal handle, as
 * with the lazytime option, and a crash may lose the access times since
 * the last commit.
 */
#include <sys/stat.h>

#include "fs_i.h"

#define ATIME_DAY_SEC	(24 * 60 * 60)

/* a - b, in the order of the timestamps: < 0, 0, > 0. */
static int atime_cmp(uint64_t a_sec, uint32_t a_nsec, uint64_t b_sec,
		     uint32_t b_nsec)
{
	if (a_sec != b_sec)
		return (int64_t)(a_sec - b_sec) < 0 ? -1 : 1;
	return a_nsec < b_nsec ? -1 : a_nsec > b_nsec;
}

bool mqfs_atime_due(enum mqfs_atime_mode mode, const struct mqfs_inode *d,
		    uint64_t sec, uint32_t nsec)
{
	if (mode == MQFS_ATIME_NONE ||
	    !atime_cmp(d->atime_sec, d->atime_nsec, sec, nsec))
		return false;
	if (mode == MQFS_ATIME_STRICT)
		return true;
	/* relatime, as the kernel's relatime_need_update(). */
	if (atime_cmp(d->mtime_sec, d->mtime_nsec, d->atime_sec,
		      d->atime_nsec) >= 0 ||
	    atime_cmp(d->ctime_sec, d->ctime_nsec, d->atime_sec,
		      d->atime_nsec) >= 0)
		return true;
	return (int64_t)(sec - d->atime_sec) >= ATIME_DAY_SEC;
}

void mqfs_ino_accessed(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	enum mqfs_atime_mode mode = fs->opts.atime;
	uint64_t sec;
	uint32_t nsec;
	bool due;

	if (mode == MQFS_ATIME_NONE ||
	    (fs->opts.nodiratime && S_ISDIR(ip->d.mode)) ||
	    mqfs_fs_writable(fs))
		return;
	mqfs_now(&sec, &nsec);
	pthread_mutex_lock(&ip->meta_lock);
	due = mqfs_atime_due(mode, &ip->d, sec, nsec);
	if (due) {
		ip->d.atime_sec = sec;
		ip->d.atime_nsec = nsec;
	}
	pthread_mutex_unlock(&ip->meta_lock);
	if (due)
		mqfs_ino_queue_lazy(fs, ip);
}
