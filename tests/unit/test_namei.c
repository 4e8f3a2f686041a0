// SPDX-License-Identifier: MIT
/*
 * test_namei.c - the namespace calls of fs.h (src/fs/namei.c,
 * rename.c): lookup, mknod of every type, symlinks, hard links, unlink
 * and rmdir with the orphan list, O_TMPFILE, file handles' lookups,
 * readlink and readdir cookies, and
 * rename under concurrent namespace changes, on a ram-device
 * filesystem; every errno the calls document.  Rename's own forms are
 * test_rename.c's.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysmacros.h>

#include "t_fs.h"
#include "t_main.h"
#include "t_namei.h"

#define TN_LINK_MAX	65000u

/* ---- helpers ----------------------------------------------------------- */

static uint64_t tn_nlookup(struct t_fs *t, uint64_t ino)
{
	struct mqfs_ino *ip;
	uint64_t n;

	ck_assert_int_eq(mqfs_iget(t->fs, ino, &ip), 0);
	n = ip->nlookup;
	mqfs_iput(t->fs, ip);
	return n;
}

static uint64_t tn_free_inodes(struct t_fs *t)
{
	struct statvfs st;

	ck_assert_int_eq(mqfs_statfs(t->fs, &st), 0);
	return st.f_ffree;
}

static uint64_t tn_free_blocks(struct t_fs *t)
{
	struct statvfs st;

	ck_assert_int_eq(mqfs_statfs(t->fs, &st), 0);
	return st.f_bfree;
}

/* Set an inode's link count in core, to reach the limits quickly. */
static unsigned tn_force_nlink(struct t_fs *t, uint64_t ino, unsigned nlink)
{
	struct mqfs_ino *ip;
	unsigned old;

	ck_assert_int_eq(mqfs_iget(t->fs, ino, &ip), 0);
	pthread_rwlock_wrlock(&ip->lock);
	old = ip->d.nlink;
	ip->d.nlink = nlink;
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(t->fs, ip);
	return old;
}

/* ---- lookup and mknod -------------------------------------------------- */

START_TEST(test_mknod_types)
{
	static const struct { mode_t mode; dev_t rdev; unsigned dt; } types[] = {
		{ S_IFREG | 0644, 0, DT_REG },
		{ S_IFDIR | 0755, 0, DT_DIR },
		{ S_IFIFO | 0600, 0, DT_FIFO },
		{ S_IFSOCK | 0600, 0, DT_SOCK },
		{ S_IFCHR | 0600, 0, DT_CHR },
		{ S_IFBLK | 0600, 0, DT_BLK },
	};
	struct t_fs t;
	struct mqfs_entry e, l;
	char name[16];
	unsigned i;

	t_fs_make(&t, 32 * T_FS_MIB);
	for (i = 0; i < MQ_ARRAY_SIZE(types); i++) {
		dev_t rdev = S_ISCHR(types[i].mode) ? makedev(1, 3) :
			     S_ISBLK(types[i].mode) ? makedev(8, 1) : 0;

		snprintf(name, sizeof(name), "n%u", i);
		ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, name, types[i].mode,
					    rdev, 12, 34, &e), 0);
		ck_assert_uint_eq(e.st.st_mode, types[i].mode);
		ck_assert_uint_eq(e.st.st_ino, e.ino);
		ck_assert_uint_eq(e.st.st_uid, 12);
		ck_assert_uint_eq(e.st.st_gid, 34);
		ck_assert_uint_eq(e.st.st_rdev, rdev);
		ck_assert_uint_eq(e.st.st_nlink, S_ISDIR(types[i].mode) ? 2 : 1);
		ck_assert_uint_eq(tn_nlookup(&t, e.ino), 1);
		ck_assert_int_eq(mqfs_lookup(t.fs, TN_ROOT, name, &l), 0);
		ck_assert_uint_eq(l.ino, e.ino);
		ck_assert_uint_eq(l.generation, e.generation);
		ck_assert_uint_eq(l.st.st_mode, types[i].mode);
		ck_assert_uint_eq(tn_nlookup(&t, e.ino), 2);
		mqfs_forget(t.fs, e.ino, 2);
	}
	/* Type 0 is a regular file; a symlink needs mqfs_symlink. */
	ck_assert_uint_eq(tn_stat(&t, tn_mk(&t, TN_ROOT, "plain", 0600)).st_mode,
			  S_IFREG | 0600);
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, "l", S_IFLNK | 0777, 0, 0,
				    0, &e), -EINVAL);
	/* The directory: parent link, "." and "..". */
	e.ino = tn_ino(&t, TN_ROOT, "n1");
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), 3);
	ck_assert_uint_eq(tn_parent(&t, e.ino), TN_ROOT);
	ck_assert_uint_eq(tn_ino(&t, e.ino, ".."), TN_ROOT);
	ck_assert_uint_eq(tn_ino(&t, e.ino, "."), e.ino);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, ".."), TN_ROOT);
	/* Everything is still there after a remount. */
	t_fs_remount(&t);
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), 3);
	for (i = 0; i < MQ_ARRAY_SIZE(types); i++) {
		snprintf(name, sizeof(name), "n%u", i);
		ck_assert_int_eq(mqfs_lookup(t.fs, TN_ROOT, name, &l), 0);
		ck_assert_uint_eq(l.st.st_mode, types[i].mode);
		if (S_ISBLK(types[i].mode))
			ck_assert_uint_eq(l.st.st_rdev, makedev(8, 1));
		mqfs_forget(t.fs, l.ino, 1);
	}
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_mknod_errors)
{
	struct t_fs t;
	struct mqfs_entry e;
	char big[MQFS_NAME_MAX + 2];
	uint64_t file, dir;
	unsigned old;

	t_fs_make(&t, 32 * T_FS_MIB);
	file = tn_mk(&t, TN_ROOT, "f", S_IFREG | 0644);
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, "f", S_IFREG, 0, 0, 0, &e),
			 -EEXIST);
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, "f", S_IFDIR, 0, 0, 0, &e),
			 -EEXIST);
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, ".", S_IFDIR, 0, 0, 0, &e),
			 -EEXIST);
	memset(big, 'n', sizeof(big) - 1);
	big[MQFS_NAME_MAX + 1] = '\0';
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, big, S_IFREG, 0, 0, 0, &e),
			 -ENAMETOOLONG);
	ck_assert_int_eq(mqfs_lookup(t.fs, TN_ROOT, big, &e), -ENAMETOOLONG);
	big[MQFS_NAME_MAX] = '\0';
	tn_mk(&t, TN_ROOT, big, S_IFREG);
	ck_assert_uint_ne(tn_ino(&t, TN_ROOT, big), 0);
	/* A file is no parent. */
	ck_assert_int_eq(mqfs_mknod(t.fs, file, "x", S_IFREG, 0, 0, 0, &e),
			 -ENOTDIR);
	ck_assert_int_eq(mqfs_lookup(t.fs, file, "x", &e), -ENOTDIR);
	ck_assert_int_eq(mqfs_lookup(t.fs, TN_ROOT, "nope", &e), -ENOENT);
	ck_assert_int_eq(mqfs_lookup(t.fs, TN_ROOT, "", &e), -ENOENT);
	ck_assert_int_eq(mqfs_mknod(t.fs, 999999, "x", S_IFREG, 0, 0, 0, &e),
			 -ENOENT);
	/* The parent's link count limit applies to subdirectories only. */
	old = tn_force_nlink(&t, TN_ROOT, TN_LINK_MAX - 1);
	dir = tn_mk(&t, TN_ROOT, "last", S_IFDIR | 0755);
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), TN_LINK_MAX);
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, "over", S_IFDIR, 0, 0, 0,
				    &e), -EMLINK);
	tn_mk(&t, TN_ROOT, "file-ok", S_IFREG);
	ck_assert_int_eq(mqfs_rmdir(t.fs, TN_ROOT, "last"), 0);
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), TN_LINK_MAX - 1);
	tn_force_nlink(&t, TN_ROOT, old);
	tn_mk(&t, TN_ROOT, "rewrites-root", S_IFREG);
	/* A removed directory takes no new entries. */
	ck_assert_int_eq(mqfs_mknod(t.fs, dir, "x", S_IFREG, 0, 0, 0, &e),
			 -ENOENT);
	mqfs_forget(t.fs, dir, 1);
	ck_assert(tn_gone(&t, dir));
	/* Read-only: every change is refused, lookups work. */
	t.mount.readonly = true;
	t_fs_remount(&t);
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, "g", S_IFREG, 0, 0, 0, &e),
			 -EROFS);
	ck_assert_int_eq(mqfs_symlink(t.fs, TN_ROOT, "s", "t", 0, 0, &e),
			 -EROFS);
	ck_assert_int_eq(mqfs_link(t.fs, file, TN_ROOT, "f2", &e), -EROFS);
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "f"), -EROFS);
	ck_assert_int_eq(mqfs_rmdir(t.fs, TN_ROOT, "f"), -EROFS);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "f", TN_ROOT, "h", 0),
			 -EROFS);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "f"), file);
	t_fs_destroy(&t);
}
END_TEST

/*
 * A file handle names an inode by number and generation; the kernel
 * asks for it by number (LOOKUP of ".") once it has forgotten it, and
 * for a directory's parent (".."), cached or not.  Stale: a free
 * number, and an inode without links that no open file keeps; a reused
 * number has another generation.
 */
static int tn_handle(struct t_fs *t, uint64_t ino, struct mqfs_entry *e)
{
	int err = mqfs_lookup_handle(t->fs, ino, e);

	if (!err)
		mqfs_forget(t->fs, ino, 1);
	return err;
}

START_TEST(test_lookup_handle)
{
	struct mqfs_entry e, h;
	struct mqfs_file *of;
	uint64_t f, d, sub;
	struct t_fs t;

	t_fs_make(&t, 32 * T_FS_MIB);
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, "f", S_IFREG | 0644, 0, 0,
				    0, &e), 0);
	f = e.ino;
	mqfs_forget(t.fs, f, 1);
	d = tn_mk(&t, TN_ROOT, "d", S_IFDIR | 0755);
	sub = tn_mk(&t, d, "sub", S_IFDIR | 0755);
	mqfs_forget(t.fs, d, 1);
	t_fs_remount(&t);
	/* Any type, never looked up on this mount, counted like a lookup. */
	ck_assert_int_eq(mqfs_lookup_handle(t.fs, f, &h), 0);
	ck_assert_uint_eq(h.ino, f);
	ck_assert_uint_eq(h.generation, e.generation);
	ck_assert_uint_eq(tn_nlookup(&t, f), 1);
	mqfs_forget(t.fs, f, 1);
	ck_assert_int_eq(tn_handle(&t, sub, &h), 0);
	ck_assert(S_ISDIR(h.st.st_mode));
	ck_assert_uint_eq(tn_ino(&t, sub, ".."), d);
	ck_assert_uint_eq(tn_ino(&t, d, ".."), TN_ROOT);
	/* Numbers that name nothing. */
	ck_assert_int_eq(tn_handle(&t, 0, &h), -ESTALE);
	ck_assert_int_eq(tn_handle(&t, sub + 1, &h), -ESTALE);
	ck_assert_int_eq(tn_handle(&t, UINT64_MAX, &h), -ESTALE);
	/* Unlinked: stale unless an open file keeps it. */
	ck_assert_int_eq(mqfs_open(t.fs, f, O_RDWR, &of), 0);
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "f"), 0);
	ck_assert_int_eq(tn_handle(&t, f, &h), 0);
	ck_assert_int_eq(mqfs_lookup_handle(t.fs, f, &h), 0);	/* held */
	ck_assert_int_eq(mqfs_release(t.fs, of), 0);
	ck_assert_int_eq(tn_handle(&t, f, &h), -ESTALE);
	mqfs_forget(t.fs, f, 1);
	ck_assert(tn_gone(&t, f));
	ck_assert_int_eq(tn_handle(&t, f, &h), -ESTALE);
	/* A removed directory: stale, and no parent to name. */
	ck_assert_int_eq(mqfs_lookup_handle(t.fs, sub, &h), 0);	/* held */
	ck_assert_int_eq(mqfs_rmdir(t.fs, d, "sub"), 0);
	ck_assert_int_eq(tn_handle(&t, sub, &h), -ESTALE);
	ck_assert_int_eq(mqfs_lookup(t.fs, sub, "..", &h), -ENOENT);
	mqfs_forget(t.fs, sub, 1);
	/* The number again, another generation: the old handle is stale. */
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, "g", S_IFREG | 0644, 0, 0,
				    0, &h), 0);
	ck_assert_uint_eq(h.ino, f);
	ck_assert_uint_ne(h.generation, e.generation);
	mqfs_forget(t.fs, f, 1);
	t_fs_remount(&t);
	ck_assert_int_eq(tn_handle(&t, f, &h), 0);
	ck_assert_uint_ne(h.generation, e.generation);
	t_fs_destroy(&t);
}
END_TEST

/*
 * O_TMPFILE: a file born without links, on the orphan list; a link
 * takes it off, a last forget without one frees it, and so does the
 * mount after a crash.
 */
START_TEST(test_tmpfile)
{
	struct mqfs_entry e, l;
	uint64_t ffree, d;
	struct t_fs t;

	t_fs_make_opts(&t, 32 * T_FS_MIB, 0, true);
	ffree = tn_free_inodes(&t);
	d = tn_mk(&t, TN_ROOT, "d", S_IFDIR | 02775);
	ck_assert_int_eq(mqfs_tmpfile(t.fs, d, 0640, 0, 7, 8, &e), 0);
	ck_assert_uint_eq(e.st.st_nlink, 0);
	ck_assert_uint_eq(e.st.st_mode, S_IFREG | 0640);
	ck_assert_uint_eq(e.st.st_uid, 7);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, e.ino);
	ck_assert_uint_eq(tn_ino(&t, d, ".."), TN_ROOT);	/* no entry */
	ck_assert_int_eq(mqfs_link(t.fs, e.ino, d, "named", &l), 0);
	ck_assert_uint_eq(l.st.st_nlink, 1);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	mqfs_forget(t.fs, e.ino, 2);
	t_fs_remount(&t);
	ck_assert_uint_eq(tn_ino(&t, d, "named"), e.ino);
	ck_assert_uint_eq(tn_nlink(&t, e.ino), 1);
	/* Never linked: freed at the last forget. */
	ck_assert_int_eq(mqfs_tmpfile(t.fs, d, 0600, 0, 0, 0, &e), 0);
	ck_assert_uint_eq(tn_free_inodes(&t), ffree - 3);
	mqfs_forget(t.fs, e.ino, 1);
	ck_assert(tn_gone(&t, e.ino));
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	ck_assert_uint_eq(tn_free_inodes(&t), ffree - 2);
	/* Held at a crash: freed by the next mount. */
	ck_assert_int_eq(mqfs_tmpfile(t.fs, d, 0600, 0, 0, 0, &e), 0);
	ck_assert_int_eq(mqfs_sync(t.fs), 0);
	t_fs_crash(&t);
	ck_assert(tn_gone(&t, e.ino));
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	ck_assert_uint_eq(tn_free_inodes(&t), ffree - 2);
	/* Not in a removed directory, nor in a file. */
	ck_assert_int_eq(mqfs_tmpfile(t.fs, tn_ino(&t, d, "named"), 0600, 0, 0,
				      0, &e), -ENOTDIR);
	ck_assert_int_eq(mqfs_unlink(t.fs, d, "named"), 0);
	ck_assert_int_eq(mqfs_lookup_handle(t.fs, d, &l), 0);	/* held */
	ck_assert_int_eq(mqfs_rmdir(t.fs, TN_ROOT, "d"), 0);
	ck_assert_int_eq(mqfs_tmpfile(t.fs, d, 0600, 0, 0, 0, &e), -ENOENT);
	mqfs_forget(t.fs, d, 1);
	t_fs_destroy(&t);
}
END_TEST

/* ---- symlinks ---------------------------------------------------------- */

START_TEST(test_symlink)
{
	static const size_t lens[] = { 1, 3, MQFS_INODE_DATA,
				       MQFS_INODE_DATA + 1, 1000, 4095 };
	struct t_fs t;
	struct mqfs_entry e;
	char target[4097], buf[4200], name[16];
	uint64_t ino[MQ_ARRAY_SIZE(lens)], bfree;
	unsigned i, pass;

	t_fs_make(&t, 32 * T_FS_MIB);
	for (i = 0; i < sizeof(target) - 1; i++)
		target[i] = (char)('a' + i % 26);
	tn_mk(&t, TN_ROOT, "keep", S_IFREG);	/* root's block, for good */
	bfree = tn_free_blocks(&t);
	for (i = 0; i < MQ_ARRAY_SIZE(lens); i++) {
		target[lens[i]] = '\0';
		snprintf(name, sizeof(name), "s%u", i);
		ck_assert_int_eq(mqfs_symlink(t.fs, TN_ROOT, name, target, 5,
					      6, &e), 0);
		target[lens[i]] = (char)('a' + lens[i] % 26);
		ino[i] = e.ino;
		ck_assert_uint_eq(e.st.st_mode, S_IFLNK | 0777);
		ck_assert_uint_eq(e.st.st_size, lens[i]);
		ck_assert_uint_eq(e.st.st_blocks,
				  lens[i] > MQFS_INODE_DATA ? 8 : 0);
		ck_assert_uint_eq(e.st.st_uid, 5);
		mqfs_forget(t.fs, e.ino, 1);
	}
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < MQ_ARRAY_SIZE(lens); i++) {
			ck_assert_int_eq(mqfs_readlink(t.fs, ino[i], buf,
						       sizeof(buf)), 0);
			ck_assert_uint_eq(strlen(buf), lens[i]);
			ck_assert_int_eq(memcmp(buf, target, lens[i]), 0);
			/* Truncated to the buffer, NUL-terminated. */
			ck_assert_int_eq(mqfs_readlink(t.fs, ino[i], buf, 2),
					 0);
			ck_assert_str_eq(buf, "a");
		}
		t_fs_remount(&t);
	}
	target[4096] = '\0';
	ck_assert_int_eq(mqfs_symlink(t.fs, TN_ROOT, "long", target, 0, 0,
				      &e), -ENAMETOOLONG);
	ck_assert_int_eq(mqfs_symlink(t.fs, TN_ROOT, "empty", "", 0, 0, &e),
			 -ENOENT);
	ck_assert_int_eq(mqfs_symlink(t.fs, TN_ROOT, "s0", "x", 0, 0, &e),
			 -EEXIST);
	ck_assert_int_eq(mqfs_readlink(t.fs, TN_ROOT, buf, sizeof(buf)),
			 -EINVAL);
	/* Removing them gives every block back. */
	for (i = 0; i < MQ_ARRAY_SIZE(lens); i++) {
		snprintf(name, sizeof(name), "s%u", i);
		ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, name), 0);
		ck_assert(tn_gone(&t, ino[i]));
	}
	t_fs_remount(&t);	/* freed blocks count once committed */
	ck_assert_uint_eq(tn_free_blocks(&t), bfree);
	t_fs_destroy(&t);
}
END_TEST

/* ---- links, unlink, rmdir ---------------------------------------------- */

START_TEST(test_link)
{
	struct t_fs t;
	struct mqfs_entry e;
	uint64_t f, d, sub;
	unsigned old;

	t_fs_make(&t, 32 * T_FS_MIB);
	f = tn_mk(&t, TN_ROOT, "a", S_IFREG | 0644);
	d = tn_mk(&t, TN_ROOT, "d", S_IFDIR | 0755);
	sub = tn_mk(&t, d, "sub", S_IFDIR | 0755);
	ck_assert_int_eq(mqfs_link(t.fs, f, d, "b", &e), 0);
	ck_assert_uint_eq(e.ino, f);
	ck_assert_uint_eq(e.st.st_nlink, 2);
	ck_assert_uint_eq(tn_nlookup(&t, f), 2);
	ck_assert_uint_eq(tn_ino(&t, d, "b"), f);
	ck_assert_int_eq(mqfs_link(t.fs, f, d, "b", &e), -EEXIST);
	ck_assert_int_eq(mqfs_link(t.fs, f, d, "..", &e), -EEXIST);
	ck_assert_int_eq(mqfs_link(t.fs, sub, TN_ROOT, "s", &e), -EPERM);
	ck_assert_int_eq(mqfs_link(t.fs, f, f, "x", &e), -ENOTDIR);
	ck_assert_int_eq(mqfs_link(t.fs, 999999, d, "x", &e), -ENOENT);
	/* The link count limit. */
	old = tn_force_nlink(&t, f, TN_LINK_MAX);
	ck_assert_int_eq(mqfs_link(t.fs, f, d, "c", &e), -EMLINK);
	tn_force_nlink(&t, f, old);
	/* One name goes, the inode stays; both go, no new links. */
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "a"), 0);
	ck_assert_uint_eq(tn_nlink(&t, f), 1);
	ck_assert_uint_eq(tn_ino(&t, d, "b"), f);
	ck_assert_int_eq(mqfs_unlink(t.fs, d, "b"), 0);
	ck_assert_uint_eq(tn_nlink(&t, f), 0);
	ck_assert_int_eq(mqfs_link(t.fs, f, d, "again", &e), -ENOENT);
	mqfs_forget(t.fs, f, 2);
	ck_assert(tn_gone(&t, f));
	t_fs_destroy(&t);
}
END_TEST

/*
 * The last unlink of an inode FUSE still knows puts it on the orphan
 * list; the forget frees it.  Unmount frees what is still unlinked (also
 * behind a file never released), and a crash leaves it for the next
 * mount's orphan recovery.
 */
START_TEST(test_unlink_orphan)
{
	struct t_fs t;
	struct mqfs_entry e;
	struct mqfs_file *of;
	uint64_t f, g, ffree;

	t_fs_make_opts(&t, 32 * T_FS_MIB, 0, true);
	ffree = tn_free_inodes(&t);
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, "f", S_IFREG | 0644, 0, 0,
				    0, &e), 0);
	f = e.ino;
	ck_assert_uint_eq(tn_free_inodes(&t), ffree - 1);
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "f"), 0);
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "f"), -ENOENT);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, f);
	ck_assert(!tn_gone(&t, f));
	ck_assert_uint_eq(tn_nlink(&t, f), 0);
	ck_assert_uint_eq(tn_free_inodes(&t), ffree - 1);
	mqfs_forget(t.fs, f, 1);
	ck_assert(tn_gone(&t, f));
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	ck_assert_uint_eq(tn_free_inodes(&t), ffree);
	/* Errors of unlink. */
	tn_mk(&t, TN_ROOT, "dir", S_IFDIR | 0755);
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "dir"), -EISDIR);
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "."), -EISDIR);
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "nope"), -ENOENT);
	/* Still referenced at unmount: freed by the unmount. */
	g = tn_mk(&t, TN_ROOT, "g", S_IFREG);
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "g"), 0);
	t_fs_remount(&t);
	ck_assert(tn_gone(&t, g));
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	/* Open and never released (an aborted connection sends no
	 * RELEASE): the unmount frees the inode and releases the file
	 * (before e2f1c7d the file leaked: an ASan build says so). */
	g = tn_mk(&t, TN_ROOT, "o", S_IFREG);
	ck_assert_int_eq(mqfs_open(t.fs, g, O_RDWR, &of), 0);
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "o"), 0);
	mqfs_forget(t.fs, g, 1);
	ck_assert(!tn_gone(&t, g));
	t_fs_unmount(&t);
	/* Freed by that unmount, not left to the next mount's recovery. */
	ck_assert_uint_eq(((struct mqfs_super *)t_fs_raw_block(&t, 0))
			  ->orphan_head, 0);
	t_fs_mount(&t);
	ck_assert(tn_gone(&t, g));
	/* Still referenced at a crash: freed by the next mount. */
	g = tn_mk(&t, TN_ROOT, "h", S_IFREG);
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "h"), 0);
	ck_assert_int_eq(mqfs_sync(t.fs), 0);
	t_fs_crash(&t);
	ck_assert(tn_gone(&t, g));
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, 0);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "h"), 0);
	ck_assert_uint_ne(tn_ino(&t, TN_ROOT, "dir"), 0);
	t_fs_destroy(&t);
}
END_TEST

/*
 * The forget that frees an unlinked inode may reach the daemon after a
 * create that needs it (FUSE over io_uring sends forgets on /dev/fuse,
 * the create on a ring): a create meeting ENOSPC first awaits the
 * forgets on their way (mqfs_mount_opts.await_forgets, here a stand-in
 * that serves the one pending), then tries again.
 */
static struct tn_forgets {
	struct mqfs_fs *fs;
	uint64_t pending;	/* an inode whose forget is on its way */
	unsigned calls;
} tn_forgets;

static void tn_serve_forgets(void *arg)
{
	struct tn_forgets *f = arg;

	f->calls++;
	if (f->pending)
		mqfs_forget(f->fs, f->pending, 1);
	f->pending = 0;
}

START_TEST(test_enospc_awaits_forget)
{
	uint64_t first = 0, ffree;
	struct mqfs_entry e;
	struct t_fs t;
	char name[16];
	unsigned n;
	int err;

	t_fs_make(&t, 4 * T_FS_MIB);
	t.mount.await_forgets = tn_serve_forgets;
	t.mount.await_forgets_arg = &tn_forgets;
	t_fs_remount(&t);
	tn_forgets = (struct tn_forgets){ .fs = t.fs };
	ffree = tn_free_inodes(&t);
	for (n = 0;; n++) {
		snprintf(name, sizeof(name), "i%u", n);
		err = mqfs_mknod(t.fs, TN_ROOT, name, S_IFREG | 0644, 0, 0, 0,
				 &e);
		if (err)
			break;
		if (!first)
			first = e.ino;
	}
	/* Nothing on its way: asked once, and still ENOSPC. */
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_uint_eq(n, ffree);
	ck_assert_uint_eq(tn_forgets.calls, 1);
	/* Unlinked, still held by the kernel: the inode is not free yet. */
	ck_assert_int_eq(mqfs_unlink(t.fs, TN_ROOT, "i0"), 0);
	ck_assert_uint_eq(tn_free_inodes(&t), 0);
	tn_forgets.pending = first;
	ck_assert_int_eq(mqfs_mknod(t.fs, TN_ROOT, "again", S_IFREG | 0644, 0,
				    0, 0, &e), 0);
	ck_assert_uint_eq(tn_forgets.calls, 2);
	ck_assert_uint_eq(tn_forgets.pending, 0);
	ck_assert_uint_eq(e.ino, first);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_rmdir)
{
	struct t_fs t;
	uint64_t d, f, ffree;

	t_fs_make(&t, 32 * T_FS_MIB);
	ffree = tn_free_inodes(&t);
	d = tn_mk(&t, TN_ROOT, "d", S_IFDIR | 0755);
	f = tn_mk(&t, d, "f", S_IFREG | 0644);
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), 3);
	ck_assert_int_eq(mqfs_rmdir(t.fs, TN_ROOT, "d"), -ENOTEMPTY);
	ck_assert_int_eq(mqfs_rmdir(t.fs, d, "f"), -ENOTDIR);
	ck_assert_int_eq(mqfs_rmdir(t.fs, d, "."), -EINVAL);
	ck_assert_int_eq(mqfs_rmdir(t.fs, d, ".."), -ENOTEMPTY);
	ck_assert_int_eq(mqfs_rmdir(t.fs, d, "nope"), -ENOENT);
	ck_assert_int_eq(mqfs_rmdir(t.fs, f, "x"), -ENOTDIR);
	ck_assert_int_eq(mqfs_unlink(t.fs, d, "f"), 0);
	mqfs_forget(t.fs, f, 1);
	/* Emptied (its block stays): now it goes. */
	ck_assert_int_eq(mqfs_rmdir(t.fs, TN_ROOT, "d"), 0);
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), 2);
	ck_assert_uint_eq(tn_nlink(&t, d), 0);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, d);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "d"), 0);
	mqfs_forget(t.fs, d, 1);
	ck_assert(tn_gone(&t, d));
	ck_assert_uint_eq(tn_free_inodes(&t), ffree);
	t_fs_remount(&t);
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), 2);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "d"), 0);
	t_fs_destroy(&t);
}
END_TEST

/* ---- readdir ----------------------------------------------------------- */

struct tn_rd {
	struct t_fs *t;
	char names[64][16];
	uint64_t ino[64], next[64];
	bool had_e[64];
	unsigned n, stop_at;		/* refuse entry number stop_at */
};

static int tn_fill(void *ctx, const char *name, uint64_t ino, unsigned type,
		   uint64_t next_pos, const struct mqfs_entry *e)
{
	struct tn_rd *r = ctx;

	(void)type;
	if (r->n == r->stop_at)
		return 1;
	ck_assert_uint_lt(r->n, 64);
	snprintf(r->names[r->n], sizeof(r->names[0]), "%s", name);
	r->ino[r->n] = ino;
	r->next[r->n] = next_pos;
	r->had_e[r->n] = e != NULL;
	if (e && strcmp(name, ".") && strcmp(name, "..")) {
		ck_assert_uint_eq(e->ino, ino);
		ck_assert_uint_eq(e->st.st_ino, ino);
	} else if (e) {
		ck_assert_uint_eq(e->ino, 0);
	}
	r->n++;
	return 0;
}

START_TEST(test_readdir)
{
	struct t_fs t;
	struct tn_rd r;
	uint64_t d, ino[20], f;
	char name[16];
	unsigned i, j, seen;

	t_fs_make(&t, 32 * T_FS_MIB);
	d = tn_mk(&t, TN_ROOT, "d", S_IFDIR | 0755);
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "e%u", i);
		ino[i] = tn_mk(&t, d, name, S_IFREG);
		mqfs_forget(t.fs, ino[i], 1);
	}
	/* Plain: ".", "..", then every entry once. */
	memset(&r, 0, sizeof(r));
	r.stop_at = UINT32_MAX;
	ck_assert_int_eq(mqfs_readdir(t.fs, d, 0, false, tn_fill, &r), 0);
	ck_assert_uint_eq(r.n, 22);
	ck_assert_str_eq(r.names[0], ".");
	ck_assert_uint_eq(r.ino[0], d);
	ck_assert_uint_eq(r.next[0], 1);
	ck_assert_str_eq(r.names[1], "..");
	ck_assert_uint_eq(r.ino[1], TN_ROOT);
	ck_assert_uint_eq(r.next[1], 2);
	for (i = 0, seen = 0; i < 20; i++)
		for (j = 2; j < r.n; j++)
			if (r.ino[j] == ino[i]) {
				snprintf(name, sizeof(name), "e%u", i);
				ck_assert_str_eq(r.names[j], name);
				ck_assert(!r.had_e[j]);
				seen++;
			}
	ck_assert_uint_eq(seen, 20);
	/* A full buffer: the refused entry comes again from its cookie. */
	memset(&r, 0, sizeof(r));
	r.stop_at = 5;
	ck_assert_int_eq(mqfs_readdir(t.fs, d, 0, true, tn_fill, &r), 0);
	ck_assert_uint_eq(r.n, 5);
	ck_assert(r.had_e[0] && r.had_e[2]);
	for (i = 2; i < 5; i++)
		ck_assert_uint_eq(tn_nlookup(&t, r.ino[i]), 1);
	f = r.next[4];
	memset(&r, 0, sizeof(r));
	r.stop_at = UINT32_MAX;
	ck_assert_int_eq(mqfs_readdir(t.fs, d, f, true, tn_fill, &r), 0);
	ck_assert_uint_eq(r.n, 17);
	for (i = 0; i < r.n; i++) {
		ck_assert_uint_eq(tn_nlookup(&t, r.ino[i]), 1);
		mqfs_forget(t.fs, r.ino[i], 1);
	}
	/* "." and ".." count no lookups. */
	ck_assert_uint_eq(tn_nlookup(&t, d), 1);
	/* Resuming from the cookies of "." and "..". */
	memset(&r, 0, sizeof(r));
	r.stop_at = UINT32_MAX;
	ck_assert_int_eq(mqfs_readdir(t.fs, d, 1, false, tn_fill, &r), 0);
	ck_assert_uint_eq(r.n, 21);
	ck_assert_str_eq(r.names[0], "..");
	memset(&r, 0, sizeof(r));
	r.stop_at = UINT32_MAX;
	ck_assert_int_eq(mqfs_readdir(t.fs, d, 2, false, tn_fill, &r), 0);
	ck_assert_uint_eq(r.n, 20);
	ck_assert_int_eq(mqfs_readdir(t.fs, ino[0], 0, false, tn_fill, &r),
			 -ENOTDIR);
	t_fs_destroy(&t);
}
END_TEST

/* ---- concurrency --------------------------------------------------------- */

#define TN_DIRS		4u
#define TN_NAMES	12u
#define TN_THREADS	4u
#define TN_OPS		3000u

struct tn_worker {
	struct t_fs *t;
	uint64_t dirs[TN_DIRS];
	uint64_t seed;
	unsigned ok, bad;		/* calls that worked, unexpected errors */
	int last_bad;
};

static unsigned tn_rand(struct tn_worker *w, unsigned n)
{
	w->seed = w->seed * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(w->seed >> 33) % n;
}

/* Errors the namespace calls give for a race lost, never for a bug. */
static bool tn_expected(int err)
{
	return !err || err == -ENOENT || err == -EEXIST || err == -ENOTEMPTY ||
	       err == -EISDIR || err == -ENOTDIR || err == -EPERM;
}

static void tn_one_op(struct tn_worker *w)
{
	struct mqfs_fs *fs = w->t->fs;
	uint64_t d1 = w->dirs[tn_rand(w, TN_DIRS)];
	uint64_t d2 = w->dirs[tn_rand(w, TN_DIRS)];
	char n1[8], n2[8];
	struct mqfs_entry e;
	int err = 0;

	snprintf(n1, sizeof(n1), "n%u", tn_rand(w, TN_NAMES));
	snprintf(n2, sizeof(n2), "n%u", tn_rand(w, TN_NAMES));
	switch (tn_rand(w, 8)) {
	case 0:
		err = mqfs_mknod(fs, d1, n1, S_IFREG | 0644, 0, 0, 0, NULL);
		break;
	case 1:
		err = mqfs_mknod(fs, d1, n1, S_IFDIR | 0755, 0, 0, 0, NULL);
		break;
	case 2:
		err = mqfs_unlink(fs, d1, n1);
		break;
	case 3:
		err = mqfs_rmdir(fs, d1, n1);
		break;
	case 4:
		err = mqfs_lookup(fs, d1, n1, &e);
		if (!err) {
			err = mqfs_link(fs, e.ino, d2, n2, NULL);
			mqfs_forget(fs, e.ino, 1);
		}
		break;
	case 5:
		err = mqfs_rename(fs, d1, n1, d2, n2, RENAME_EXCHANGE);
		break;
	default:
		err = mqfs_rename(fs, d1, n1, d2, n2, 0);
		break;
	}
	if (!err)
		w->ok++;
	if (!tn_expected(err)) {
		w->bad++;
		w->last_bad = err;
	}
}

static void *tn_worker_main(void *arg)
{
	struct tn_worker *w = arg;

	for (unsigned i = 0; i < TN_OPS; i++)
		tn_one_op(w);
	return NULL;
}

struct tn_census {
	struct t_fs *t;
	uint64_t dir;
	unsigned subdirs;
	uint64_t *links;		/* names per inode number */
};

static int tn_census_fill(void *ctx, const char *name, uint64_t ino,
			  unsigned type, uint64_t next_pos,
			  const struct mqfs_entry *e)
{
	struct tn_census *c = ctx;

	(void)next_pos, (void)e;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	c->links[ino]++;
	if (type == DT_DIR) {
		c->subdirs++;
		ck_assert_uint_eq(tn_parent(c->t, ino), c->dir);
		ck_assert_uint_eq(tn_nlink(c->t, ino), 2);
	}
	ck_assert_uint_eq(tn_stat(c->t, ino).st_mode & S_IFMT,
			  (mode_t)DTTOIF(type));
	return 0;
}

/* Every directory's and file's link count matches the names it has. */
static void tn_check_tree(struct t_fs *t, const uint64_t *dirs)
{
	uint64_t n = t->fs->inode_count + 1, ino;
	struct tn_census c = { .t = t, .links = calloc(n, sizeof(uint64_t)) };
	unsigned i;

	ck_assert_ptr_nonnull(c.links);
	for (i = 0; i < TN_DIRS; i++) {
		c.dir = dirs[i];
		c.subdirs = 0;
		ck_assert_int_eq(mqfs_readdir(t->fs, dirs[i], 0, false,
					      tn_census_fill, &c), 0);
		ck_assert_uint_eq(tn_nlink(t, dirs[i]), 2 + c.subdirs);
	}
	for (ino = 1; ino < n; ino++) {
		struct stat st;

		if (!c.links[ino])
			continue;
		st = tn_stat(t, ino);
		if (!S_ISDIR(st.st_mode))
			ck_assert_uint_eq(st.st_nlink, c.links[ino]);
	}
	free(c.links);
}

/*
 * Threads create, link, remove and rename (plain and exchange) among
 * four directories at random; nothing deadlocks, no call fails
 * unexpectedly, and afterwards (and after a remount) every link count
 * and parent pointer agrees with the entries.
 */
START_TEST(test_concurrent_namespace)
{
	struct tn_worker w[TN_THREADS];
	pthread_t th[TN_THREADS];
	uint64_t dirs[TN_DIRS];
	struct t_fs t;
	char name[8];
	unsigned i;

	t_fs_make(&t, 64 * T_FS_MIB);
	for (i = 0; i < TN_DIRS; i++) {
		snprintf(name, sizeof(name), "D%u", i);
		dirs[i] = tn_mk(&t, TN_ROOT, name, S_IFDIR | 0755);
	}
	for (i = 0; i < TN_THREADS; i++) {
		w[i] = (struct tn_worker){ .t = &t, .seed = 1000 + i };
		memcpy(w[i].dirs, dirs, sizeof(dirs));
		ck_assert_int_eq(pthread_create(&th[i], NULL, tn_worker_main,
						&w[i]), 0);
	}
	for (i = 0; i < TN_THREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(!w[i].bad, "thread %u: %u unexpected errors, "
			      "last %d", i, w[i].bad, w[i].last_bad);
		ck_assert_uint_gt(w[i].ok, TN_OPS / 8);
	}
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), 2 + TN_DIRS);
	tn_check_tree(&t, dirs);
	t_fs_remount(&t);
	tn_check_tree(&t, dirs);
	t_fs_destroy(&t);
}
END_TEST

static Suite *namei_suite(void)
{
	Suite *s = suite_create("namei");
	TCase *tc = t_tcase(s, "core", 60);

	tcase_add_test(tc, test_mknod_types);
	tcase_add_test(tc, test_mknod_errors);
	tcase_add_test(tc, test_lookup_handle);
	tcase_add_test(tc, test_tmpfile);
	tcase_add_test(tc, test_symlink);
	tcase_add_test(tc, test_link);
	tcase_add_test(tc, test_unlink_orphan);
	tcase_add_test(tc, test_enospc_awaits_forget);
	tcase_add_test(tc, test_rmdir);
	tcase_add_test(tc, test_readdir);
	tcase_add_test(tc, test_concurrent_namespace);
	return s;
}

T_MAIN(namei_suite)
