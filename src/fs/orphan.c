// SPDX-License-Identifier: MIT
/*
 * orphan.c - what becomes of an unlinked inode: its deletion when the
 * last user lets go, and the on-disk orphan list through which the next
 * mount finishes a deletion or a truncate a crash cut short (ext4 keeps
 * the list in fs/ext4/orphan.c).  Apart from the cache (inode.c), whose
 * last put calls in here and whose references these take and drop: the
 * two meet in icache_i.h.
 *
 * Deletion: when the last of the counts that keep an inode cached
 * (inode.c) drops on an inode with no links left, the thread that
 * dropped it frees the data (fspace.c), the xattr chain, takes it off
 * the orphan list, clears the record and frees the number.  mqfs_iput
 * therefore must not be called with a transaction handle open or an
 * inode lock held.  If the deletion fails (I/O error, read-only), the
 * inode stays on the on-disk orphan list and the next mount finishes it.
 *
 * Orphan list: the superblock's orphan_head and each inode's
 * orphan_next, changed under fs->sb_lock (which sits between the
 * transaction handle and the icache lock in the lock order).  A cached
 * inode's orphan_next is changed in its in-core record, which is the
 * one every later mqfs_inode_dirty() writes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icache_i.h"

/*
 * Deleting an inode in one handle: xattr block freed (2), orphan list
 * (superblock or predecessor, and the inode: 2), the cleared record
 * (1), the inode bitmap and AG header (2); with room to spare.
 */
#define IC_DELETE_CREDITS	12u

/* ---- deletion ------------------------------------------------------------ */

/* Regular files, directories and block symlinks map data extents. */
static bool ic_has_extents(const struct mqfs_inode *d)
{
	if (d->iflags & MQFS_IF_INLINE_DATA)
		return false;
	return S_ISREG(d->mode) || S_ISDIR(d->mode) || S_ISLNK(d->mode);
}

/* Everything but the data, in one handle. */
static int ic_delete_record(struct mqfs_fs *fs, struct ic_ent *e)
{
	struct mqfs_ino *ip = &e->ip;
	bool was_dir = S_ISDIR(ip->d.mode);
	struct mqfs_handle h;
	int err;

	err = mqfs_trans_start(fs, IC_DELETE_CREDITS, &h);
	if (err)
		return err;
	if (ip->d.xattr_blk)
		err = fs->ino_ops->drop_xattrs(&h, ip);
	if (!err)
		err = mqfs_orphan_del(&h, ip);
	if (!err) {
		pthread_mutex_lock(&ip->meta_lock);
		memset(&ip->d, 0, sizeof(ip->d));
		pthread_mutex_unlock(&ip->meta_lock);
		err = mqfs_inode_dirty(&h, ip);
	}
	if (!err) {
		/* Out of the cache before the number can be handed out. */
		ip->deleted = true;
		pthread_mutex_lock(&fs->icache->lock);
		mqfs_ic_unhash_locked(fs->icache, ip);
		pthread_mutex_unlock(&fs->icache->lock);
		err = mqfs_ifree(&h, ip->ino, was_dir);
	}
	return mqfs_trans_finish(&h, err);
}

/*
 * Delete @e (marked dying; the caller's reference is consumed).  On
 * failure the inode leaves the cache but stays on the on-disk orphan
 * list for the next mount.
 */
int mqfs_ic_delete(struct mqfs_fs *fs, struct ic_ent *e)
{
	struct mqfs_ino *ip = &e->ip;
	int err = 0;

	/* Before any handle (the lock order): nothing writes it again. */
	mqfs_ic_lazy_drop(fs->icache, ip);
	pthread_rwlock_wrlock(&ip->lock);
	if (ic_has_extents(&ip->d))
		err = fs->ino_ops->free_data(fs, ip);
	if (!err && ip->d.xattr_blk)
		err = fs->ino_ops->trim_xattrs(fs, ip);
	pthread_rwlock_unlock(&ip->lock);
	if (!err)
		err = ic_delete_record(fs, e);
	if (err)
		fprintf(stderr, "mqfs: inode %" PRIu64 ": delete failed "
			"(%d); it stays on the orphan list\n", ip->ino, err);
	mqfs_ic_unhash_put(fs, e);
	return err;
}

/*
 * Collect the unlinked inodes into an array, not a list through e->lru:
 * mqfs_ic_delete's orphan walk takes references (mqfs_ic_hold_locked) on other
 * orphans, which unlinks them from whatever list e->lru is on.
 */
static size_t ic_collect_unlinked(struct mqfs_icache *c, struct ic_ent ***out)
{
	struct ic_ent **v = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nbuckets; i++) {
		for (struct mqfs_ino *ip = c->hash[i]; ip; ip = ip->hash_next) {
			struct ic_ent *e = ic_ent(ip);

			if (ip->d.nlink || e->dying)
				continue;
			if (mqfs_array_reserve(&v, &cap, n, sizeof(*v), 64))
				goto out;	/* the next mount frees the rest */
			/* One reference for mqfs_ic_delete, one to free it here
			 * even if the front end still holds some. */
			mqfs_ic_hold_locked(c, ip);
			ip->refcount++;
			e->dying = true;
			v[n++] = e;
		}
	}
out:
	pthread_mutex_unlock(&c->lock);
	*out = v;
	return n;
}

void mqfs_ic_delete_unlinked(struct mqfs_fs *fs)
{
	struct mqfs_icache *c = fs->icache;
	struct ic_ent **v;
	size_t n = ic_collect_unlinked(c, &v);

	for (size_t i = 0; i < n; i++) {
		struct ic_ent *e = v[i];

		mqfs_ic_delete(fs, e);
		if (e->ip.refcount > 1)
			fprintf(stderr, "mqfs: inode %" PRIu64 ": still "
				"referenced at teardown\n", e->ip.ino);
		mqfs_ic_free(c, e);
	}
	free(v);
}

/* ---- orphan list ----------------------------------------------------------- */

static uint64_t ic_orphan_next(struct mqfs_ino *ip)
{
	uint64_t next;

	pthread_mutex_lock(&ip->meta_lock);
	next = ip->d.orphan_next;
	pthread_mutex_unlock(&ip->meta_lock);
	return next;
}

static void ic_set_orphan_next(struct mqfs_ino *ip, uint64_t next)
{
	pthread_mutex_lock(&ip->meta_lock);
	ip->d.orphan_next = next;
	pthread_mutex_unlock(&ip->meta_lock);
}

static void ic_set_orphan_head(struct mqfs_handle *h, uint64_t ino)
{
	struct mqfs_fs *fs = h->fs;

	mqfs_buf_lock(fs->sb_buf);
	mqfs_sb(fs)->orphan_head = ino;
	mqfs_trans_dirty(h, fs->sb_buf);
	mqfs_buf_unlock(fs->sb_buf);
}

/*
 * Find the orphan before @ino (sb_lock held): *prev NULL when @ino is
 * the head, else a reference the caller drops with mqfs_ic_put(.., false).
 * -ENOENT: @ino is not on the list.  The walk is bounded, so a cycle
 * on disk is reported instead of followed forever.
 */
static int orphan_find_prev(struct mqfs_fs *fs, uint64_t ino,
			    struct mqfs_ino **prev)
{
	uint64_t cur = mqfs_sb(fs)->orphan_head, steps = 0;
	struct mqfs_ino *p;
	int err;

	*prev = NULL;
	if (cur == ino)
		return 0;
	while (cur) {
		uint64_t next;

		if (++steps > fs->inode_count) {
			mqfs_fs_error(fs, 0, "orphan list has a cycle");
			return -EUCLEAN;
		}
		err = mqfs_iget(fs, cur, &p);
		if (err) {
			mqfs_fs_error(fs, 0, "orphan list: inode %" PRIu64
				      " unreadable (%d)", cur, err);
			return err == -ENOENT ? -EUCLEAN : err;
		}
		next = ic_orphan_next(p);
		if (next == ino) {
			*prev = p;
			return 0;
		}
		mqfs_ic_put(fs, p, false);
		cur = next;
	}
	return -ENOENT;
}

/* Credits: 2 (the superblock, the inode's table block). */
int mqfs_orphan_add(struct mqfs_handle *h, struct mqfs_ino *ip)
{
	struct mqfs_fs *fs = h->fs;
	struct ic_ent *e = ic_ent(ip);
	struct mqfs_ino *prev;
	uint64_t head;
	int err = 0;

	pthread_mutex_lock(&fs->sb_lock);
	if (e->orphan == IC_ORPH_UNKNOWN) {
		err = orphan_find_prev(fs, ip->ino, &prev);
		if (!err) {
			e->orphan = IC_ORPH_ON;
			if (prev)
				mqfs_ic_put(fs, prev, false);
		} else if (err == -ENOENT) {
			e->orphan = IC_ORPH_OFF;
			err = 0;
		}
	}
	if (err || e->orphan == IC_ORPH_ON)
		goto out;
	/* The inode first: the head never points at a stale link. */
	head = mqfs_sb(fs)->orphan_head;
	ic_set_orphan_next(ip, head);
	err = mqfs_inode_dirty(h, ip);
	if (err) {
		ic_set_orphan_next(ip, 0);
		goto out;
	}
	ic_set_orphan_head(h, ip->ino);
	e->orphan = IC_ORPH_ON;
out:
	pthread_mutex_unlock(&fs->sb_lock);
	return err;
}

/* Credits: 2 (the superblock or the predecessor, and the inode). */
int mqfs_orphan_del(struct mqfs_handle *h, struct mqfs_ino *ip)
{
	struct mqfs_fs *fs = h->fs;
	struct ic_ent *e = ic_ent(ip);
	struct mqfs_ino *prev;
	uint64_t next;
	int err;

	pthread_mutex_lock(&fs->sb_lock);
	if (e->orphan == IC_ORPH_OFF) {
		pthread_mutex_unlock(&fs->sb_lock);
		return 0;
	}
	err = orphan_find_prev(fs, ip->ino, &prev);
	if (err == -ENOENT) {
		e->orphan = IC_ORPH_OFF;
		err = 0;
		goto out;
	}
	if (err)
		goto out;
	next = ic_orphan_next(ip);
	if (prev) {
		ic_set_orphan_next(prev, next);
		err = mqfs_inode_dirty(h, prev);
		mqfs_ic_put(fs, prev, false);
	} else {
		ic_set_orphan_head(h, next);
	}
	if (!err) {
		ic_set_orphan_next(ip, 0);
		err = mqfs_inode_dirty(h, ip);
		e->orphan = IC_ORPH_OFF;
	}
out:
	pthread_mutex_unlock(&fs->sb_lock);
	return err;
}

/*
 * An orphan that still has links: a truncate cut short by the crash.
 * Finish it (free the blocks past the end; mqfs_file_truncate takes it
 * off the list), or for other types just unlist it.
 */
static int orphan_unlist(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	int err;

	if (S_ISREG(ip->d.mode)) {
		pthread_rwlock_wrlock(&ip->lock);
		err = fs->ino_ops->truncate(fs, ip, ip->d.size);
		pthread_rwlock_unlock(&ip->lock);
		return err;
	}
	return mqfs_trans_one(fs, MQFS_CREDITS_ORPHAN, mqfs_orphan_del, ip);
}

int mqfs_orphan_recover(struct mqfs_fs *fs)
{
	uint64_t ino, steps = 0, done = 0;
	struct mqfs_ino *ip;
	int err;

	if (mqfs_fs_writable(fs))
		return 0;	/* read-only: the next rw mount does it */
	for (;;) {
		pthread_mutex_lock(&fs->sb_lock);
		ino = mqfs_sb(fs)->orphan_head;
		pthread_mutex_unlock(&fs->sb_lock);
		if (!ino)
			break;
		if (++steps > fs->inode_count) {
			mqfs_fs_error(fs, 0, "orphan list has a cycle");
			return -EUCLEAN;
		}
		err = mqfs_iget(fs, ino, &ip);
		if (err) {
			mqfs_fs_error(fs, 0, "orphan list: inode %" PRIu64
				      " unreadable (%d)", ino, err);
			return err == -ENOENT ? -EUCLEAN : err;
		}
		if (!ip->d.nlink) {
			pthread_mutex_lock(&fs->icache->lock);
			ic_ent(ip)->dying = true;
			pthread_mutex_unlock(&fs->icache->lock);
			err = mqfs_ic_delete(fs, ic_ent(ip));
			done++;
		} else {
			err = orphan_unlist(fs, ip);
			mqfs_iput(fs, ip);
		}
		if (err)
			return err;
	}
	if (done)
		fprintf(stderr, "mqfs: deleted %" PRIu64 " orphan inodes\n",
			done);
	return 0;
}
