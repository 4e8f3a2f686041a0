/* SPDX-License-Identifier: MIT */
/*
 * namei_i.h - what the namespace calls (namei.c) and rename (rename.c)
 * share: credits and limits, small helpers (inline), and the sets of
 * inodes locked in number order with the lookups that fill them.
 */
#ifndef MQFS_NAMEI_I_H
#define MQFS_NAMEI_I_H

#include <dirent.h>
#include <errno.h>
#include <string.h>

#include "fs_i.h"

#define NM_LINK_MAX		65000u	/* st_nlink limit of one inode */
/*
 * Handle credits beyond one mqfs_dir_add (mqfs_dir_credits, which has
 * the directory's inode): creation dirties the inode bitmap and AG
 * header (2), the superblock (inode_gen, orphan head) and the new
 * inode's table block, and on failure the orphan list (2); a removal
 * one directory block, two inodes and the superblock; a rename one
 * more block and up to four inodes.
 */
#define NM_CREATE_CREDITS	8u
#define NM_LINK_CREDITS		2u
#define NM_REMOVE_CREDITS	6u
#define NM_RENAME_CREDITS	8u

/* ---- small helpers ----------------------------------------------------- */

static inline int nm_name(const char *name, size_t *len)
{
	*len = strlen(name);
	if (!*len)
		return -ENOENT;
	return *len > MQFS_NAME_MAX ? -ENAMETOOLONG : 0;
}

static inline bool nm_is_dot(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/* The type bits never change, but chmod rewrites the field (meta_lock). */
static inline mode_t nm_mode(struct mqfs_ino *ip)
{
	mode_t mode;

	pthread_mutex_lock(&ip->meta_lock);
	mode = ip->d.mode;
	pthread_mutex_unlock(&ip->meta_lock);
	return mode;
}

static inline unsigned nm_dtype(struct mqfs_ino *ip)
{
	return IFTODT(nm_mode(ip));
}

static inline bool nm_is_dir(struct mqfs_ino *ip)
{
	return S_ISDIR(nm_mode(ip));
}

/* Credits of a handle that may add one entry (@add) and @extra more. */
static inline unsigned nm_credits(struct mqfs_fs *fs, bool add,
				  unsigned extra)
{
	return (add ? mqfs_dir_credits(fs) : 0) + extra;
}

static inline int nm_iget_dir(struct mqfs_fs *fs, uint64_t ino,
			      struct mqfs_ino **out)
{
	int err = mqfs_iget(fs, ino, out);

	if (!err && !nm_is_dir(*out)) {
		mqfs_iput(fs, *out);
		err = -ENOTDIR;
	}
	return err;
}

/*
 * Link counts and parent pointers change under ip->lock (exclusive)
 * and also under meta_lock, because mqfs_inode_stat() reads a snapshot
 * under meta_lock alone (lookup stats a child without its lock).
 */
static inline void nm_nlink_add(struct mqfs_ino *ip, int delta)
{
	pthread_mutex_lock(&ip->meta_lock);
	ip->d.nlink = (uint32_t)((int64_t)ip->d.nlink + delta);
	pthread_mutex_unlock(&ip->meta_lock);
}

static inline void nm_nlink_set(struct mqfs_ino *ip, uint32_t nlink)
{
	pthread_mutex_lock(&ip->meta_lock);
	ip->d.nlink = nlink;
	pthread_mutex_unlock(&ip->meta_lock);
}

/* What to create. */
struct nm_new {
	mode_t mode;
	mode_t umask;			/* unless a default ACL decides */
	dev_t rdev;
	uid_t uid;
	gid_t gid;
	const char *target;		/* symlinks */
	size_t tlen;
};

/*
 * A new inode for @dp's tree in @h (NM_CREATE_CREDITS and, but for
 * symlinks, MQFS_XATTR_INHERIT_CREDITS; @dp locked), not yet named:
 * *out is set once the number is taken, and the caller's mqfs_iput
 * (after the handle) frees it if it never gets a link.
 */
int mqfs_nm_new_inode(struct mqfs_handle *h, struct mqfs_ino *dp,
		      const struct nm_new *nw, struct mqfs_ino **out);
/* No links, on the orphan list: a crash before the last user lets go
 * cannot leak it (2 credits); the first error. */
int mqfs_nm_orphan(struct mqfs_handle *h, struct mqfs_ino *ip);

/* ---- sets of inodes locked in number order ------------------------------ */

struct nm_set {
	struct mqfs_ino *ip[4];
	unsigned n;
};

/* Add @ip (NULL: nothing) to @s, kept in inode number order. */
void mqfs_nm_set_add(struct nm_set *s, struct mqfs_ino *ip);
void mqfs_nm_set_lock(struct nm_set *s);
void mqfs_nm_set_unlock(struct nm_set *s);
/* mqfs_inode_dirty() on each inode of @s; the first error. */
int mqfs_nm_set_dirty(struct mqfs_handle *h, struct nm_set *s);
/* @name's inode in @dp, referenced (NULL: none, and @may_miss). */
int mqfs_nm_resolve(struct mqfs_fs *fs, struct mqfs_ino *dp, const char *name,
		    size_t len, bool may_miss, struct mqfs_ino **out);
/* With @dp locked: does @name still name @ip (NULL: nothing)?  0 yes,
 * 1 no (start over), or -errno. */
int mqfs_nm_still(struct mqfs_fs *fs, struct mqfs_ino *dp, const char *name,
		  size_t len, struct mqfs_ino *ip);
/* One link of @ip is gone; without links it goes on the orphan list. */
int mqfs_nm_drop_link(struct mqfs_handle *h, struct mqfs_ino *ip);

#endif /* MQFS_NAMEI_I_H */
