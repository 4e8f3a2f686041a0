// SPDX-License-Identifier: MIT
/*
 * namei.c - the namespace calls of fs.h: lookup, creation, links,
 * removal, readlink and readdir, on top of dir.c's entries and inode.c's
 * in-core inodes; rename is rename.c's, and what the two share is in
 * namei_i.h.
 *
 * Locking (fs_i.h lock order): inode locks are taken in ascending inode
 * number.  A call that changes a directory and a child it finds there
 * therefore looks the child up first (directory lock shared, child
 * referenced), drops the lock, takes every inode it needs exclusively
 * in number order, and then checks that the entry still names the same
 * inode, starting over when it does not.  A rename between two
 * directories holds fs->rename_lock around all of it, so no other
 * directory moves while it checks that a directory is not being moved
 * under itself (parent pointers change only there).  The transaction
 * handle is started after the inode locks and stopped before them;
 * references are dropped last, after the locks, because dropping the
 * last reference of an unlinked inode frees it with its own handles.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqfs/compiler.h"
#include "namei_i.h"

/* ---- small helpers ----------------------------------------------------- */

/* Fill @e for the caller and count the lookup the front end now holds. */
static void nm_entry(struct mqfs_fs *fs, struct mqfs_ino *ip,
		     struct mqfs_entry *e)
{
	if (!e)
		return;
	memset(e, 0, sizeof(*e));
	e->ino = ip->ino;
	e->generation = ip->d.generation;
	mqfs_inode_stat(fs, ip, &e->st);
	mqfs_ino_lookup_inc(fs, ip);
}

/* ---- sets of inodes locked in number order ------------------------------ */

void mqfs_nm_set_add(struct nm_set *s, struct mqfs_ino *ip)
{
	unsigned i;

	if (!ip)
		return;
	for (i = 0; i < s->n; i++)
		if (s->ip[i] == ip)
			return;
	MQ_ASSERT(s->n < MQ_ARRAY_SIZE(s->ip));
	for (i = s->n++; i && s->ip[i - 1]->ino > ip->ino; i--)
		s->ip[i] = s->ip[i - 1];
	s->ip[i] = ip;
}

void mqfs_nm_set_lock(struct nm_set *s)
{
	unsigned i;

	for (i = 0; i < s->n; i++)
		pthread_rwlock_wrlock(&s->ip[i]->lock);
}

void mqfs_nm_set_unlock(struct nm_set *s)
{
	unsigned i;

	for (i = s->n; i--;)
		pthread_rwlock_unlock(&s->ip[i]->lock);
}

/* Write every inode of the set; the first error. */
int mqfs_nm_set_dirty(struct mqfs_handle *h, struct nm_set *s)
{
	unsigned i;
	int err = 0, e;

	for (i = 0; i < s->n; i++) {
		e = mqfs_inode_dirty(h, s->ip[i]);
		if (!err)
			err = e;
	}
	return err;
}

/*
 * The inode entry @name of @dp names: a free one there is corruption
 * (a zeroed inode table block, a lost unlink), reported as such, not
 * a plain ENOENT that leaves the name visible in readdir for ever.
 */
static int nm_iget_entry(struct mqfs_fs *fs, struct mqfs_ino *dp,
			 const char *name, size_t len, uint64_t ino,
			 struct mqfs_ino **out)
{
	int err = mqfs_iget(fs, ino, out);

	if (err != -ENOENT)
		return err;
	mqfs_fs_error(fs, 0, "namei: directory %llu: \"%.*s\" names free "
		      "inode %llu; run fsck.mqfs", (unsigned long long)dp->ino,
		      (int)len, name, (unsigned long long)ino);
	return -EUCLEAN;
}

/*
 * Look @name up in @dp (shared lock) and take a reference on its inode;
 * *out is NULL when there is no such entry and @may_miss.
 */
int mqfs_nm_resolve(struct mqfs_fs *fs, struct mqfs_ino *dp,
		      const char *name, size_t len, bool may_miss,
		      struct mqfs_ino **out)
{
	uint64_t ino;
	int err;

	*out = NULL;
	pthread_rwlock_rdlock(&dp->lock);
	err = mqfs_dir_lookup(fs, dp, name, len, &ino, NULL);
	if (err == -ENOENT && may_miss) {
		err = 0;
	} else if (!err && ino == dp->ino) {
		mqfs_fs_error(fs, 0, "namei: directory %llu names itself",
			      (unsigned long long)dp->ino);
		err = -EUCLEAN;
	} else if (!err) {
		err = nm_iget_entry(fs, dp, name, len, ino, out);
	}
	pthread_rwlock_unlock(&dp->lock);
	return err;
}

/* With @dp locked: does @name still name @ip (NULL: nothing)? */
int mqfs_nm_still(struct mqfs_fs *fs, struct mqfs_ino *dp,
		    const char *name, size_t len, struct mqfs_ino *ip)
{
	uint64_t ino;
	int err = mqfs_dir_lookup(fs, dp, name, len, &ino, NULL);

	if (err == -ENOENT)
		return ip ? 1 : 0;
	if (err)
		return err;
	return ip && ip->ino == ino ? 0 : 1;
}

/* ---- lookup ------------------------------------------------------------ */

/* A removed directory has no parent left to name (a handle's ".."). */
static int nm_parent_of(struct mqfs_ino *dp, uint64_t *ino)
{
	*ino = dp->d.parent;
	return dp->d.nlink ? 0 : -ENOENT;
}

int mqfs_lookup(struct mqfs_fs *fs, uint64_t parent, const char *name,
		struct mqfs_entry *e)
{
	struct mqfs_ino *dp, *ip = NULL;
	uint64_t ino = 0;
	size_t len;
	int err = nm_name(name, &len);

	if (!err)
		err = nm_iget_dir(fs, parent, &dp);
	if (err)
		return err;
	pthread_rwlock_rdlock(&dp->lock);
	if (!strcmp(name, "."))
		ino = dp->ino;
	else if (!strcmp(name, ".."))
		err = nm_parent_of(dp, &ino);
	else
		err = mqfs_dir_lookup(fs, dp, name, len, &ino, NULL);
	if (!err)
		err = nm_iget_entry(fs, dp, name, len, ino, &ip);
	pthread_rwlock_unlock(&dp->lock);
	if (!err)
		nm_entry(fs, ip, e);
	if (ip)
		mqfs_iput(fs, ip);
	mqfs_iput(fs, dp);
	return err;
}

/*
 * The inode a file handle names, when the kernel no longer has it:
 * any inode number, whether or not the front end ever looked it up.
 * A free number, or an inode whose last link is gone and which no
 * open file keeps, is stale; the kernel compares the generation.
 */
int mqfs_lookup_handle(struct mqfs_fs *fs, uint64_t ino, struct mqfs_entry *e)
{
	struct mqfs_ino *ip;
	int err = mqfs_iget(fs, ino, &ip);

	if (err)
		return err == -ENOENT ? -ESTALE : err;
	pthread_rwlock_rdlock(&ip->lock);
	if (!ip->d.nlink && !mqfs_ino_is_open(fs, ip))
		err = -ESTALE;
	else
		nm_entry(fs, ip, e);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return err;
}

/* ---- creation ---------------------------------------------------------- */

/* Can @dp (locked) take a new entry @name (of a directory when @dir)? */
static int nm_may_add(struct mqfs_fs *fs, struct mqfs_ino *dp,
		      const char *name, size_t len, bool dir)
{
	uint64_t ino;
	int err;

	if (!dp->d.nlink)
		return -ENOENT;		/* removed while we waited */
	err = mqfs_dir_lookup(fs, dp, name, len, &ino, NULL);
	if (!err)
		return -EEXIST;
	if (err != -ENOENT)
		return err;
	return dir && dp->d.nlink >= NM_LINK_MAX ? -EMLINK : 0;
}

/*
 * A long symlink target goes into one data block, written to the
 * device before the extent that points at it is inserted: the handle
 * is still open, so the transaction naming the block commits after
 * the data is on the device (ordered data).
 */
static int nm_symlink_block(struct mqfs_handle *h, struct mqfs_ino *ip,
			    const struct nm_new *nw)
{
	struct mqfs_fs *fs = h->fs;
	uint64_t goal = (ip->ino - 1) / fs->inodes_per_ag * (uint64_t)fs->ag_blocks;
	uint64_t pblk;
	uint32_t got;
	void *buf = mqfs_alloc_blocks_mem(1);
	int err;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, nw->target, nw->tlen);
	err = mqfs_alloc_blocks(h, goal, 1, &pblk, &got);
	if (!err) {
		err = mqfs_bio_sync(fs->q, MQ_OP_WRITE, pblk, buf, 1, 0);
		if (!err)
			err = mqfs_extent_insert(h, ip, 0, pblk, 1, 0);
		if (err)
			mqfs_free_blocks(h, pblk, 1);
	}
	free(buf);
	return err;
}

/* Type-specific setup of the new inode @ip (nobody else knows it yet). */
static int nm_init_inode(struct mqfs_handle *h, struct mqfs_ino *dp,
			 struct mqfs_ino *ip, const struct nm_new *nw)
{
	int err = mqfs_acl_inherit(h, dp, ip, nw->umask);

	if (!err)
		err = mqfs_xattr_inherit(h, dp, ip);
	if (err)
		return err;
	ip->d.nlink = 1;
	if (S_ISDIR(nw->mode)) {
		ip->d.nlink = 2;
		ip->d.parent = dp->ino;
	} else if (S_ISCHR(nw->mode) || S_ISBLK(nw->mode)) {
		ip->d.rdev = nw->rdev;
	} else if (S_ISLNK(nw->mode) && nw->tlen <= MQFS_INODE_DATA) {
		memcpy(ip->d.u.symlink, nw->target, nw->tlen);
		ip->d.iflags |= MQFS_IF_INLINE_DATA;
		ip->d.size = nw->tlen;
	} else if (S_ISLNK(nw->mode)) {
		pthread_rwlock_wrlock(&ip->lock);
		err = nm_symlink_block(h, ip, nw);
		pthread_rwlock_unlock(&ip->lock);
		ip->d.size = nw->tlen;
	}
	return err ? err : mqfs_inode_dirty(h, ip);
}

/*
 * A half-made inode undone, or an O_TMPFILE's: the caller's final
 * mqfs_iput() (or the last user's) frees it and whatever blocks it got.
 */
int mqfs_nm_orphan(struct mqfs_handle *h, struct mqfs_ino *ip)
{
	int err, e;

	nm_nlink_set(ip, 0);
	err = mqfs_orphan_add(h, ip);
	e = mqfs_inode_dirty(h, ip);
	return err ? err : e;
}

int mqfs_nm_new_inode(struct mqfs_handle *h, struct mqfs_ino *dp,
		      const struct nm_new *nw, struct mqfs_ino **out)
{
	bool dir = S_ISDIR(nw->mode);
	uint64_t ino;
	int err = mqfs_ialloc(h, dp->ino, dir, &ino);

	if (err)
		return err;
	err = mqfs_inew(h, ino, nw->mode, nw->uid, nw->gid, out);
	if (err) {
		mqfs_ifree(h, ino, dir);
		return err;
	}
	err = nm_init_inode(h, dp, *out, nw);
	if (err)
		mqfs_nm_orphan(h, *out);
	return err;
}

static int nm_create_locked(struct mqfs_fs *fs, struct mqfs_ino *dp,
			    const char *name, size_t len,
			    const struct nm_new *nw, struct mqfs_ino **out)
{
	bool dir = S_ISDIR(nw->mode);
	struct mqfs_handle h;
	struct mqfs_ino *ip;
	int err = nm_may_add(fs, dp, name, len, dir);

	if (err)
		return err;
	err = mqfs_trans_start(fs, nm_credits(fs, true, NM_CREATE_CREDITS) +
			       (S_ISLNK(nw->mode) ? mqfs_extent_credits(fs) :
						    MQFS_XATTR_INHERIT_CREDITS),
			       &h);
	if (err)
		return err;
	err = mqfs_nm_new_inode(&h, dp, nw, out);
	if (err)
		return mqfs_trans_finish(&h, err);
	ip = *out;		/* the caller's mqfs_iput frees it on error */
	err = mqfs_dir_add(&h, dp, name, len, ip->ino, nm_dtype(ip));
	if (err) {
		mqfs_nm_orphan(&h, ip);
		return mqfs_trans_finish(&h, err);
	}
	if (dir)
		nm_nlink_add(dp, 1);
	mqfs_touch(dp, false, true, true);
	return mqfs_trans_finish(&h, mqfs_inode_dirty(&h, dp));
}

/*
 * An open file without a name: born with no links and on the orphan
 * list, as an unlinked file still open, so that a crash frees it and
 * its last user's release deletes it; mqfs_link names it.
 */
static int nm_tmpfile_locked(struct mqfs_fs *fs, struct mqfs_ino *dp,
			     const struct nm_new *nw, struct mqfs_ino **out)
{
	struct mqfs_handle h;
	int err;

	if (!dp->d.nlink)
		return -ENOENT;		/* removed while we waited */
	err = mqfs_trans_start(fs, NM_CREATE_CREDITS +
			       MQFS_XATTR_INHERIT_CREDITS, &h);
	if (err)
		return err;
	err = mqfs_nm_new_inode(&h, dp, nw, out);
	if (!err)
		err = mqfs_nm_orphan(&h, *out);
	if (!err)
		(*out)->linkable = true;
	return mqfs_trans_finish(&h, err);
}

static int nm_create_once(struct mqfs_fs *fs, uint64_t parent,
			  const char *name, const struct nm_new *nw,
			  struct mqfs_entry *e)
{
	struct mqfs_ino *dp, *ip = NULL;
	size_t len = 0;
	int err = name ? nm_name(name, &len) : 0;

	if (!err && name && nm_is_dot(name))
		err = -EEXIST;
	if (!err)
		err = mqfs_fs_writable(fs);
	if (!err)
		err = nm_iget_dir(fs, parent, &dp);
	if (err)
		return err;
	pthread_rwlock_wrlock(&dp->lock);
	if (name)
		err = nm_create_locked(fs, dp, name, len, nw, &ip);
	else
		err = nm_tmpfile_locked(fs, dp, nw, &ip);
	if (!err)
		nm_entry(fs, ip, e);
	pthread_rwlock_unlock(&dp->lock);
	if (ip)
		mqfs_iput(fs, ip);
	mqfs_iput(fs, dp);
	return err;
}

/*
 * @name in @parent, or no name (O_TMPFILE).  A failed attempt left
 * nothing behind: ENOSPC may try again.
 */
static int nm_create(struct mqfs_fs *fs, uint64_t parent, const char *name,
		     const struct nm_new *nw, struct mqfs_entry *e)
{
	bool retried = false;
	int err;

	do
		err = nm_create_once(fs, parent, name, nw, e);
	while (mqfs_retry_enospc(fs, err, &retried));
	return err;
}

int mqfs_mknod(struct mqfs_fs *fs, uint64_t parent, const char *name,
	       mode_t mode, dev_t rdev, uid_t uid, gid_t gid,
	       struct mqfs_entry *e)
{
	return mqfs_mknod_umask(fs, parent, name, mode, 0, rdev, uid, gid, e);
}

int mqfs_mknod_umask(struct mqfs_fs *fs, uint64_t parent, const char *name,
		     mode_t mode, mode_t umask, dev_t rdev, uid_t uid,
		     gid_t gid, struct mqfs_entry *e)
{
	struct nm_new nw = { .mode = mode, .umask = umask, .rdev = rdev,
			     .uid = uid, .gid = gid };

	if (!(mode & S_IFMT))
		nw.mode |= S_IFREG;
	switch (nw.mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFIFO: case S_IFSOCK:
	case S_IFCHR: case S_IFBLK:
		break;
	default:
		return -EINVAL;		/* symlinks come through mqfs_symlink */
	}
	return nm_create(fs, parent, name, &nw, e);
}

int mqfs_symlink(struct mqfs_fs *fs, uint64_t parent, const char *name,
		 const char *target, uid_t uid, gid_t gid,
		 struct mqfs_entry *e)
{
	struct nm_new nw = { .mode = S_IFLNK | 0777, .uid = uid, .gid = gid,
			     .target = target, .tlen = strlen(target) };

	if (!nw.tlen)
		return -ENOENT;
	if (nw.tlen > MQFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	return nm_create(fs, parent, name, &nw, e);
}

int mqfs_tmpfile(struct mqfs_fs *fs, uint64_t parent, mode_t mode,
		 mode_t umask, uid_t uid, gid_t gid, struct mqfs_entry *e)
{
	const struct nm_new nw = { .mode = S_IFREG | (mode & 07777),
				   .umask = umask, .uid = uid, .gid = gid };

	return nm_create(fs, parent, NULL, &nw, e);
}

/* ---- hard links -------------------------------------------------------- */

static int nm_link_locked(struct mqfs_fs *fs, struct mqfs_ino *ip,
			  struct mqfs_ino *dp, const char *name, size_t len)
{
	struct mqfs_handle h;
	struct nm_set s = { .n = 0 };
	int err;

	if (!ip->d.nlink && !ip->linkable)
		return -ENOENT;
	if (ip->d.nlink >= NM_LINK_MAX)
		return -EMLINK;
	err = nm_may_add(fs, dp, name, len, false);
	if (!err)
		err = mqfs_trans_start(fs, nm_credits(fs, true,
				NM_LINK_CREDITS + MQFS_CREDITS_ORPHAN), &h);
	if (err)
		return err;
	/* No links: an O_TMPFILE, named now. */
	err = ip->d.nlink ? 0 : mqfs_orphan_del(&h, ip);
	if (!err) {
		err = mqfs_dir_add(&h, dp, name, len, ip->ino, nm_dtype(ip));
		if (err && !ip->d.nlink)
			mqfs_orphan_add(&h, ip);
	}
	if (err)
		return mqfs_trans_finish(&h, err);
	nm_nlink_add(ip, 1);
	ip->linkable = false;
	mqfs_touch(ip, false, false, true);
	mqfs_touch(dp, false, true, true);
	mqfs_nm_set_add(&s, ip);
	mqfs_nm_set_add(&s, dp);
	return mqfs_trans_finish(&h, mqfs_nm_set_dirty(&h, &s));
}

static int nm_link_once(struct mqfs_fs *fs, uint64_t ino, uint64_t newparent,
			const char *newname, struct mqfs_entry *e)
{
	struct mqfs_ino *ip, *dp;
	size_t len;
	int err = nm_name(newname, &len);

	if (!err && nm_is_dot(newname))
		err = -EEXIST;
	if (!err)
		err = mqfs_fs_writable(fs);
	if (!err)
		err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	err = nm_is_dir(ip) ? -EPERM : nm_iget_dir(fs, newparent, &dp);
	if (err) {
		mqfs_iput(fs, ip);
		return err;
	}
	mqfs_ino_lock2(ip, dp);
	err = nm_link_locked(fs, ip, dp, newname, len);
	if (!err)
		nm_entry(fs, ip, e);
	mqfs_ino_unlock2(ip, dp);
	mqfs_iput(fs, dp);
	mqfs_iput(fs, ip);
	return err;
}

int mqfs_link(struct mqfs_fs *fs, uint64_t ino, uint64_t newparent,
	      const char *newname, struct mqfs_entry *e)
{
	bool retried = false;
	int err;

	do
		err = nm_link_once(fs, ino, newparent, newname, e);
	while (mqfs_retry_enospc(fs, err, &retried));
	return err;
}

/* ---- unlink and rmdir -------------------------------------------------- */

/*
 * One link of @ip is gone (a directory's only one).  An inode without
 * links goes on the orphan list: FUSE still holds it (lookup count,
 * open files), and mqfs_iput() frees it when the last user leaves, or
 * mount does after a crash.
 */
int mqfs_nm_drop_link(struct mqfs_handle *h, struct mqfs_ino *ip)
{
	if (nm_is_dir(ip) || ip->d.nlink <= 1)
		nm_nlink_set(ip, 0);
	else
		nm_nlink_add(ip, -1);
	mqfs_touch(ip, false, false, true);
	return ip->d.nlink ? 0 : mqfs_orphan_add(h, ip);
}

/* Find @name in @dp and lock both exclusively, in inode number order. */
static int nm_lock_child(struct mqfs_fs *fs, struct mqfs_ino *dp,
			 const char *name, size_t len, struct nm_set *s,
			 struct mqfs_ino **out)
{
	for (;;) {
		int err = mqfs_nm_resolve(fs, dp, name, len, false, out);

		if (err)
			return err;
		s->n = 0;
		mqfs_nm_set_add(s, dp);
		mqfs_nm_set_add(s, *out);
		mqfs_nm_set_lock(s);
		err = mqfs_nm_still(fs, dp, name, len, *out);
		if (!err)
			return 0;
		mqfs_nm_set_unlock(s);
		mqfs_iput(fs, *out);
		if (err < 0)
			return err;
	}
}

static int nm_remove_locked(struct mqfs_fs *fs, struct mqfs_ino *dp,
			    const char *name, size_t len, struct mqfs_ino *ip,
			    struct nm_set *s, bool rmdir)
{
	struct mqfs_handle h;
	int err, err2;

	if (rmdir && !nm_is_dir(ip))
		return -ENOTDIR;
	if (!rmdir && nm_is_dir(ip))
		return -EISDIR;
	if (rmdir) {
		err = mqfs_dir_is_empty(fs, ip);
		if (err <= 0)
			return err ? err : -ENOTEMPTY;
	}
	err = mqfs_trans_start(fs, nm_credits(fs, false, NM_REMOVE_CREDITS),
			       &h);
	if (err)
		return err;
	err = mqfs_dir_remove(&h, dp, name, len);
	if (err)
		return mqfs_trans_finish(&h, err);
	if (rmdir)
		nm_nlink_add(dp, -1);
	mqfs_touch(dp, false, true, true);
	err = mqfs_nm_drop_link(&h, ip);
	err2 = mqfs_nm_set_dirty(&h, s);
	return mqfs_trans_finish(&h, err ? err : err2);
}

static int nm_remove(struct mqfs_fs *fs, uint64_t parent, const char *name,
		     bool rmdir)
{
	struct mqfs_ino *dp, *ip;
	struct nm_set s;
	size_t len;
	int err = nm_name(name, &len);

	if (!err && !strcmp(name, "."))
		err = rmdir ? -EINVAL : -EISDIR;
	if (!err && !strcmp(name, ".."))
		err = rmdir ? -ENOTEMPTY : -EISDIR;
	if (!err)
		err = mqfs_fs_writable(fs);
	if (!err)
		err = nm_iget_dir(fs, parent, &dp);
	if (err)
		return err;
	err = nm_lock_child(fs, dp, name, len, &s, &ip);
	if (!err) {
		err = nm_remove_locked(fs, dp, name, len, ip, &s, rmdir);
		mqfs_nm_set_unlock(&s);
		mqfs_iput(fs, ip);
	}
	mqfs_iput(fs, dp);
	return err;
}

int mqfs_unlink(struct mqfs_fs *fs, uint64_t parent, const char *name)
{
	return nm_remove(fs, parent, name, false);
}

int mqfs_rmdir(struct mqfs_fs *fs, uint64_t parent, const char *name)
{
	return nm_remove(fs, parent, name, true);
}

/* ---- readlink ---------------------------------------------------------- */

static int nm_read_target(struct mqfs_fs *fs, struct mqfs_ino *ip,
			  char *buf, size_t n)
{
	struct mqfs_map m;
	void *blk;
	int err;

	if (ip->d.iflags & MQFS_IF_INLINE_DATA) {
		memcpy(buf, ip->d.u.symlink, n);
		return 0;
	}
	err = mqfs_extent_map(fs, ip, 0, 1, &m);
	if (err)
		return err;
	if (!m.pblk) {
		mqfs_fs_error(fs, 0, "namei: symlink %llu has no block",
			      (unsigned long long)ip->ino);
		return -EUCLEAN;
	}
	blk = mqfs_alloc_blocks_mem(1);
	if (!blk)
		return -ENOMEM;
	err = mqfs_bio_sync(fs->q, MQ_OP_READ, m.pblk, blk, 1, 0);
	if (!err)
		memcpy(buf, blk, n);
	free(blk);
	return err;
}

int mqfs_readlink(struct mqfs_fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct mqfs_ino *ip;
	uint64_t len;
	int err;

	if (!size)
		return -ERANGE;
	err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	pthread_rwlock_rdlock(&ip->lock);
	len = ip->d.size;
	if (!S_ISLNK(ip->d.mode)) {
		err = -EINVAL;
	} else if (len > MQFS_SYMLINK_MAX || ((ip->d.iflags & MQFS_IF_INLINE_DATA) &&
					    len > MQFS_INODE_DATA)) {
		mqfs_fs_error(fs, 0, "namei: symlink %llu: bad size %llu",
			      (unsigned long long)ino, (unsigned long long)len);
		err = -EUCLEAN;
	} else {
		len = MQ_MIN(len, size - 1);
		err = nm_read_target(fs, ip, buf, len);
		if (!err)
			buf[len] = '\0';
	}
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return err;
}

/* ---- readdir ----------------------------------------------------------- */

struct nm_readdir {
	struct mqfs_fs *fs;
	struct mqfs_ino *dp;
	bool plus;
	mqfs_fill_t fill;
	void *ctx;
	int err;
};

/*
 * One entry to the front end.  In plus mode the lookup is counted only
 * when @fill took the entry (nonzero: it did not fit and comes again).
 */
static int nm_rd_entry(void *ctx, const char *name, size_t len, uint64_t ino,
		       unsigned type, uint64_t next_pos)
{
	struct nm_readdir *rd = ctx;
	struct mqfs_entry e;
	struct mqfs_ino *ip;
	char cname[MQFS_NAME_MAX + 1];
	int stop;

	memcpy(cname, name, len);
	cname[len] = '\0';
	if (!rd->plus)
		return rd->fill(rd->ctx, cname, ino, type, next_pos, NULL);
	rd->err = nm_iget_entry(rd->fs, rd->dp, name, len, ino, &ip);
	if (rd->err == -EUCLEAN) {
		rd->err = 0;	/* reported; the rest of the directory goes on */
		return 0;
	}
	if (rd->err)
		return 1;
	memset(&e, 0, sizeof(e));
	e.ino = ip->ino;
	e.generation = ip->d.generation;
	mqfs_inode_stat(rd->fs, ip, &e.st);
	stop = rd->fill(rd->ctx, cname, ino, type, next_pos, &e);
	if (!stop)
		mqfs_ino_lookup_inc(rd->fs, ip);
	mqfs_iput(rd->fs, ip);
	return stop;
}

/*
 * "." and "..": in plus mode they carry no inode (e.ino 0) and count no
 * lookup, because the kernel never links (nor forgets) them.
 */
static int nm_rd_dot(struct nm_readdir *rd, const char *name, uint64_t ino,
		     uint64_t next_pos)
{
	struct mqfs_entry e;

	if (!rd->plus)
		return rd->fill(rd->ctx, name, ino, DT_DIR, next_pos, NULL);
	memset(&e, 0, sizeof(e));
	e.st.st_ino = ino;
	e.st.st_mode = S_IFDIR;
	return rd->fill(rd->ctx, name, ino, DT_DIR, next_pos, &e);
}

int mqfs_readdir(struct mqfs_fs *fs, uint64_t ino, uint64_t pos, bool plus,
		 mqfs_fill_t fill, void *ctx)
{
	struct nm_readdir rd = { .fs = fs, .plus = plus, .fill = fill,
				 .ctx = ctx };
	struct mqfs_ino *dp;
	int err = nm_iget_dir(fs, ino, &dp);

	if (err)
		return err;
	rd.dp = dp;
	pthread_rwlock_rdlock(&dp->lock);
	if (pos == 0 && nm_rd_dot(&rd, ".", dp->ino, 1))
		goto out;
	if (pos <= 1 && nm_rd_dot(&rd, "..", dp->d.parent, 2))
		goto out;
	err = mqfs_dir_iterate(fs, dp, pos, nm_rd_entry, &rd);
out:
	mqfs_ino_accessed(fs, dp);
	pthread_rwlock_unlock(&dp->lock);
	mqfs_iput(fs, dp);
	return err ? err : rd.err;
}
