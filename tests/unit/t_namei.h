/* SPDX-License-Identifier: MIT */
/*
 * t_namei.h - helpers of the namespace tests (test_namei.c,
 * test_rename.c) on a t_fs filesystem: create a node, look a name up,
 * an inode's attributes, link count and parent.  Prefix tn_.
 */
#ifndef MQFS_TESTS_T_NAMEI_H
#define MQFS_TESTS_T_NAMEI_H

#include <check.h>

#include "t_fs.h"

#define TN_ROOT		MQFS_ROOT_INO

static inline uint64_t tn_mk(struct t_fs *t, uint64_t parent, const char *name,
		      mode_t mode)
{
	struct mqfs_entry e;

	ck_assert_int_eq(mqfs_mknod(t->fs, parent, name, mode, 0, 0, 0, &e),
			 0);
	return e.ino;
}

/* The inode @name names in @parent (counted lookup, forgotten again). */
static inline uint64_t tn_ino(struct t_fs *t, uint64_t parent, const char *name)
{
	struct mqfs_entry e;
	int err = mqfs_lookup(t->fs, parent, name, &e);

	if (err)
		return 0;
	mqfs_forget(t->fs, e.ino, 1);
	return e.ino;
}

static inline struct stat tn_stat(struct t_fs *t, uint64_t ino)
{
	struct mqfs_ino *ip;
	struct stat st;

	ck_assert_int_eq(mqfs_iget(t->fs, ino, &ip), 0);
	mqfs_inode_stat(t->fs, ip, &st);
	mqfs_iput(t->fs, ip);
	return st;
}

static inline unsigned tn_nlink(struct t_fs *t, uint64_t ino)
{
	return (unsigned)tn_stat(t, ino).st_nlink;
}

static inline uint64_t tn_parent(struct t_fs *t, uint64_t ino)
{
	struct mqfs_ino *ip;
	uint64_t p;

	ck_assert_int_eq(mqfs_iget(t->fs, ino, &ip), 0);
	p = ip->d.parent;
	mqfs_iput(t->fs, ip);
	return p;
}

/* Is inode @ino gone (freed)? */
static inline bool tn_gone(struct t_fs *t, uint64_t ino)
{
	struct mqfs_ino *ip;
	int err = mqfs_iget(t->fs, ino, &ip);

	if (!err)
		mqfs_iput(t->fs, ip);
	return err == -ENOENT;
}

#endif /* MQFS_TESTS_T_NAMEI_H */
