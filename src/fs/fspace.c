// SPDX-License-Identifier: MIT
/*
 * fspace.c - a file's space: truncate, fallocate (preallocate, punch a
 * hole, zero a range) and SEEK_DATA/SEEK_HOLE.  These allocate, free or
 * look up a file's blocks and move no data but a partial block's zeroes,
 * each under the exclusive (lseek: shared) inode lock.  Apart from the
 * read and write paths (file.c), with which they share file_i.h; XFS
 * too keeps its xfs_*_file_space calls apart from its I/O paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "file_i.h"

/* Zero bytes [off, off+len) of one block on the device, if written. */
static int file_zero_partial(struct mqfs_fs *fs, struct mqfs_ino *ip,
			     uint64_t off, uint64_t len)
{
	struct mqfs_map m;
	char *blk;
	int err = file_map(fs, ip, file_blk(off), 1, &m);

	if (err || !m.pblk || m.unwritten)
		return err;	/* holes and unwritten blocks read as zeroes */
	blk = file_buf_alloc(fs, 1);
	if (!blk)
		return -ENOMEM;
	err = mqfs_bio_sync(fs->q, MQ_OP_READ, m.pblk, blk, 1, 0);
	if (!err) {
		memset(blk + (off & FILE_MASK), 0, (size_t)len);
		err = mqfs_bio_sync(fs->q, MQ_OP_WRITE, m.pblk, blk, 1, 0);
	}
	file_buf_free(fs, blk, 1);
	return err;
}

/* ---- truncate and freeing ---------------------------------------------- */

/* Where the first @ops extents at or after @lblk (below @end) end. */
static int file_ops_end(struct mqfs_fs *fs, struct mqfs_ino *ip,
			uint64_t lblk, uint64_t end, unsigned ops,
			uint64_t *stop, unsigned *found)
{
	unsigned n = 0;

	while (lblk < end) {
		struct mqfs_map m;
		int err = file_map(fs, ip, lblk, end - lblk, &m);

		if (err)
			return err;
		if (m.pblk) {
			if (n == ops)
				break;
			n++;
		}
		lblk += m.len;
	}
	*stop = lblk;
	*found = n;
	return 0;
}

/* Unmap and free blocks [start, end), a handle per few extents. */
static int file_remove_range(struct mqfs_fs *fs, struct mqfs_ino *ip,
			     uint64_t start, uint64_t end)
{
	unsigned ops = mqfs_file_ops_per_handle(fs);

	while (start < end) {
		struct mqfs_handle h;
		uint64_t stop;
		unsigned n;
		int err;

		err = file_ops_end(fs, ip, start, end, ops, &stop, &n);
		if (err || !n)
			return err;
		err = mqfs_trans_start(fs, mqfs_file_credits(fs, ops), &h);
		if (err)
			return err;
		err = mqfs_trans_finish(&h, mqfs_extent_remove(&h, ip, start,
							       stop - start));
		if (err)
			return err;
		start = stop;
	}
	return 0;
}

/*
 * The new size, and with @orphan the inode onto the orphan list, in one
 * handle: if the removals that follow are cut short (crash, I/O error),
 * mount finds the inode there and frees the blocks left past the end,
 * which still hold the old data a later growth would expose.
 */
static int file_size_write(struct mqfs_fs *fs, struct mqfs_ino *ip,
			   bool orphan)
{
	struct mqfs_handle h;
	int err = mqfs_trans_start(fs, MQFS_CREDITS_ORPHAN +
				   MQFS_CREDITS_INODE, &h);

	if (err)
		return err;
	if (orphan)
		err = mqfs_orphan_add(&h, ip);
	if (!err)
		err = mqfs_inode_dirty(&h, ip);
	return mqfs_trans_finish(&h, err);
}

/* The truncate is complete: off the orphan list again. */
static int file_orphan_done(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	return mqfs_trans_one(fs, MQFS_CREDITS_ORPHAN, mqfs_orphan_del, ip);
}

int mqfs_file_truncate(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t size)
{
	uint64_t old = ip->d.size;
	/* Unlinked inodes are on the list already and must stay there. */
	bool orphan = size <= old && ip->d.nlink;
	int err = mqfs_fs_writable(fs);

	if (err)
		return err;
	if (size > MQFS_MAX_FILE_BYTES)
		return -EFBIG;
	mqfs_ino_dio_wait(fs, ip);
	mqfs_ino_data_changed(ip);
	/* Bytes past the new end must read as zeroes if it grows again. */
	if (size < old && size & FILE_MASK) {
		err = file_zero_partial(fs, ip, size,
					FILE_BS - (size & FILE_MASK));
		if (err)
			return err;
	}
	ip->d.size = size;
	if (size != old)
		mqfs_touch(ip, false, true, true);
	err = file_size_write(fs, ip, orphan);
	if (err) {
		ip->d.size = old;
		return err;
	}
	/*
	 * The size is committed first: a crash in the middle leaves blocks
	 * past the end, never a hole inside; the orphan list (see
	 * file_size_write) gets rid of them at the next mount.
	 */
	if (size <= old)
		err = file_remove_range(fs, ip, file_blk_up(size),
					MQFS_MAX_FILE_BLOCKS);
	if (!err && orphan)
		err = file_orphan_done(fs, ip);
	return err;
}

int mqfs_file_free_all(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	if (ip->d.iflags & MQFS_IF_INLINE_DATA)
		return 0;
	return file_remove_range(fs, ip, 0, MQFS_MAX_FILE_BLOCKS);
}

/* ---- fallocate --------------------------------------------------------- */

/* Unwritten extents for the holes of [*lblk, end): a handle's worth. */
static int file_prealloc_some(struct mqfs_fs *fs, struct mqfs_handle *h,
			      struct mqfs_ino *ip, uint64_t *lblkp,
			      uint64_t end, unsigned max_ops)
{
	uint64_t lblk = *lblkp, goal = 0;
	unsigned ops = 0;
	int err = 0;

	while (lblk < end && ops < max_ops) {
		struct mqfs_map m;
		uint64_t start;
		uint32_t got;

		err = file_map(fs, ip, lblk, end - lblk, &m);
		if (err)
			break;
		if (m.pblk) {
			goal = m.pblk + m.len;
			lblk += m.len;
			continue;
		}
		if (!goal)
			goal = mqfs_file_goal(fs, ip, lblk);
		err = mqfs_alloc_blocks(h, goal, m.len, &start, &got);
		if (err)
			break;
		err = mqfs_extent_insert(h, ip, lblk, start, got,
					 MQFS_EXT_UNWRITTEN);
		if (err) {
			mqfs_free_blocks(h, start, got);
			break;
		}
		ops++;
		goal = start + got;
		lblk += got;
	}
	*lblkp = lblk;
	return err;
}

/* fallocate 0 / KEEP_SIZE: holes of [off, off+len) become unwritten. */
static int file_prealloc(struct mqfs_fs *fs, struct mqfs_ino *ip,
			 uint64_t off, uint64_t len, bool keep)
{
	uint64_t lblk = file_blk(off), end = file_blk_up(off + len);
	unsigned max_ops = mqfs_file_ops_per_handle(fs);
	bool retried = false;
	int err;

	do {
		struct mqfs_handle h;
		bool grow = false;
		uint64_t size;
		int err2;

		err = mqfs_trans_start(fs, mqfs_file_credits(fs, max_ops), &h);
		if (err)
			return err;
		err = file_prealloc_some(fs, &h, ip, &lblk, end, max_ops);
		size = MQ_MIN(off + len, lblk * FILE_BS);
		if (!keep && size > ip->d.size) {
			ip->d.size = size;
			grow = true;
		}
		mqfs_touch(ip, false, grow, true);
		err2 = mqfs_inode_dirty(&h, ip);
		err = mqfs_trans_finish(&h, err ? err : err2);
		if (mqfs_retry_enospc(fs, err, &retried))
			err = 0;
	} while (!err && lblk < end);
	return err;
}

/* PUNCH_HOLE: zero the partial edges on the device, unmap the rest. */
static int file_punch(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t off,
		      uint64_t len)
{
	uint64_t end = off + len;
	int err = 0;

	if (file_blk(off) == file_blk(end - 1) && (off | end) & FILE_MASK) {
		err = file_zero_partial(fs, ip, off, len);
	} else {
		if (off & FILE_MASK)
			err = file_zero_partial(fs, ip, off,
						FILE_BS - (off & FILE_MASK));
		if (!err && end & FILE_MASK)
			err = file_zero_partial(fs, ip, end & ~FILE_MASK,
						end & FILE_MASK);
		if (!err && file_blk_up(off) < file_blk(end))
			err = file_remove_range(fs, ip, file_blk_up(off),
						file_blk(end));
	}
	if (err)
		return err;
	mqfs_touch(ip, false, true, true);
	return mqfs_inode_write(fs, ip);
}

int mqfs_fallocate(struct mqfs_fs *fs, uint64_t ino, int mode, uint64_t off,
		   uint64_t len)
{
	int base = mode & ~FALLOC_FL_KEEP_SIZE;
	bool keep = mode & FALLOC_FL_KEEP_SIZE;
	struct mqfs_ino *ip;
	int err;

	if (base && base != FALLOC_FL_ZERO_RANGE &&
	    mode != (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	if (!len)
		return -EINVAL;
	if (off >= MQFS_MAX_FILE_BYTES || len > MQFS_MAX_FILE_BYTES - off)
		return -EFBIG;
	err = mqfs_fs_writable(fs);
	if (err)
		return err;
	err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	if (!S_ISREG(ip->d.mode)) {
		err = S_ISDIR(ip->d.mode) ? -EISDIR : -ENODEV;
		mqfs_iput(fs, ip);
		return err;
	}
	mqfs_file_lock(ip, true);
	mqfs_wback_sync_locked(fs, ip);
	mqfs_ino_dio_wait(fs, ip);
	mqfs_ino_data_changed(ip);
	if (base == FALLOC_FL_PUNCH_HOLE) {
		err = file_punch(fs, ip, off, len);
	} else if (base == FALLOC_FL_ZERO_RANGE) {
		err = file_punch(fs, ip, off, len);
		if (!err)
			err = file_prealloc(fs, ip, off, len, keep);
	} else {
		err = file_prealloc(fs, ip, off, len, keep);
	}
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return err;
}

/* ---- SEEK_DATA / SEEK_HOLE --------------------------------------------- */

/* First data (@data) or hole at or after @off, below @size. */
static int file_seek(struct mqfs_fs *fs, struct mqfs_ino *ip, uint64_t off,
		     uint64_t size, bool data, uint64_t *out)
{
	uint64_t lblk = file_blk(off), end = file_blk_up(size);

	while (lblk < end) {
		struct mqfs_map m;
		int err = file_map(fs, ip, lblk, end - lblk, &m);

		if (err)
			return err;
		if ((m.pblk && !m.unwritten) == data) {
			*out = MQ_MAX(off, lblk * FILE_BS);
			return 0;
		}
		lblk += m.len;
	}
	if (data)
		return -ENXIO;
	*out = size;		/* the implicit hole at the end */
	return 0;
}

int mqfs_lseek(struct mqfs_fs *fs, uint64_t ino, uint64_t off, int whence,
	       uint64_t *out)
{
	struct mqfs_ino *ip;
	int err;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	mqfs_wback_sync(fs, ip);
	mqfs_file_lock(ip, false);
	if (off >= ip->d.size)
		err = -ENXIO;
	else
		err = file_seek(fs, ip, off, ip->d.size, whence == SEEK_DATA,
				out);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return err;
}
