// SPDX-License-Identifier: MIT
/*
 * test_xattr.c - extended attributes (src/fs/xattr.c) through fs.h:
 * round trip, flags, names, size limits (values up to XATTR_SIZE_MAX),
 * the chain's life (a block allocated with the first attribute, freed
 * with the last or with the inode), 5,000 attributes on one inode with
 * listxattr's size probe and fsck clean after, persistence across remount, and the cache policy (user.mqfs.cache):
 * only its values, inherited at creation, kept across remount; the I/O
 * priority policy (user.mqfs.ioprio) the same way, stored canonical,
 * and the class it gives a file's data I/O against the caller's; and the
 * privileges a write drops (security.capability, suid/sgid), decided
 * without the inode lock when there is nothing to drop.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/xattr.h>

#include "t_fs.h"
#include "t_fsio.h"
#include "t_main.h"
#include "t_util.h"

#define TX_ROOT		MQFS_ROOT_INO

static uint64_t tx_file(struct t_fs *t, const char *name, mode_t mode)
{
	struct mqfs_entry e;

	ck_assert_int_eq(mqfs_mknod(t->fs, TX_ROOT, name, mode, 0, 0, 0, &e),
			 0);
	mqfs_forget(t->fs, e.ino, 1);
	return e.ino;
}

static uint64_t tx_blk(struct t_fs *t, uint64_t ino)
{
	struct mqfs_ino *ip;
	uint64_t blk;

	ck_assert_int_eq(mqfs_iget(t->fs, ino, &ip), 0);
	blk = ip->d.xattr_blk;
	mqfs_iput(t->fs, ip);
	return blk;
}

static bool tx_in_use(struct t_fs *t, uint64_t blk)
{
	bool used;

	ck_assert_int_eq(mqfs_block_in_use(t->fs, blk, &used), 0);
	return used;
}

static uint64_t tx_free_blocks(struct t_fs *t)
{
	struct statvfs st;

	ck_assert_int_eq(mqfs_statfs(t->fs, &st), 0);
	return st.f_bfree;
}

/*
 * A fresh filesystem of @mib MiB with a new file "f" in it: its inode;
 * *bfree, the free blocks before the file was made.
 */
static uint64_t tx_fresh_file(struct t_fs *t, uint64_t mib, uint64_t *bfree)
{
	struct mqfs_entry e;

	t_fs_make(t, mib * T_FS_MIB);
	tx_file(t, "keep", S_IFREG);	/* root's block, for good */
	t_fs_remount(t);
	*bfree = tx_free_blocks(t);
	ck_assert_int_eq(mqfs_mknod(t->fs, TX_ROOT, "f", S_IFREG | 0644, 0, 0,
				    0, &e), 0);
	return e.ino;
}

static void tx_get_eq(struct t_fs *t, uint64_t ino, const char *name,
		      const void *want, size_t len)
{
	static char buf[MQFS_XATTR_VALUE_MAX];

	ck_assert_int_eq(mqfs_getxattr(t->fs, ino, name, NULL, 0),
			 (ssize_t)len);
	ck_assert_int_eq(mqfs_getxattr(t->fs, ino, name, buf, sizeof(buf)),
			 (ssize_t)len);
	ck_assert_int_eq(memcmp(buf, want, len), 0);
}

START_TEST(test_xattr_roundtrip)
{
	struct t_fs t;
	struct stat st;
	struct mqfs_ino *ip;
	char bin[100], buf[256];
	uint64_t f, blk;
	unsigned i;

	for (i = 0; i < sizeof(bin); i++)
		bin[i] = (char)(i * 7);	/* zeroes included */
	t_fs_make(&t, 32 * T_FS_MIB);
	f = tx_file(&t, "f", S_IFREG | 0644);
	ck_assert_int_eq(mqfs_listxattr(t.fs, f, NULL, 0), 0);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.a", "hello", 5, 0), 0);
	blk = tx_blk(&t, f);
	ck_assert_uint_ne(blk, 0);
	ck_assert(tx_in_use(&t, blk));
	ck_assert_int_eq(mqfs_getattr(t.fs, f, &st), 0);
	ck_assert_uint_eq(st.st_blocks, 8);
	tx_get_eq(&t, f, "user.a", "hello", 5);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, "user.a", buf, 4), -ERANGE);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "trusted.b", bin, sizeof(bin),
				       0), 0);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "security.c", "s", 1, 0), 0);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "system.d", NULL, 0, 0), 0);
	tx_get_eq(&t, f, "system.d", "", 0);
	/* Replace with a longer value; the others stay. */
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.a", "hello, world", 12,
				       0), 0);
	tx_get_eq(&t, f, "user.a", "hello, world", 12);
	tx_get_eq(&t, f, "trusted.b", bin, sizeof(bin));
	/* The list: names NUL-terminated, ERANGE when short. */
	ck_assert_int_eq(mqfs_listxattr(t.fs, f, NULL, 0), 7 + 10 + 11 + 9);
	ck_assert_int_eq(mqfs_listxattr(t.fs, f, buf, 36), -ERANGE);
	ck_assert_int_eq(mqfs_listxattr(t.fs, f, buf, sizeof(buf)), 37);
	ck_assert_int_eq(memcmp(buf, "trusted.b\0security.c\0system.d\0user.a",
				37), 0);
	t_fs_remount(&t);
	tx_get_eq(&t, f, "user.a", "hello, world", 12);
	tx_get_eq(&t, f, "trusted.b", bin, sizeof(bin));
	tx_get_eq(&t, f, "security.c", "s", 1);
	ck_assert_int_eq(mqfs_listxattr(t.fs, f, NULL, 0), 37);
	/* The last removal frees the block. */
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, "user.a"), 0);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, "user.a", buf, sizeof(buf)),
			 -ENODATA);
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, "trusted.b"), 0);
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, "security.c"), 0);
	ck_assert_uint_eq(tx_blk(&t, f), blk);
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, "system.d"), 0);
	ck_assert_uint_eq(tx_blk(&t, f), 0);
	ck_assert_int_eq(mqfs_listxattr(t.fs, f, buf, sizeof(buf)), 0);
	ck_assert_int_eq(mqfs_getattr(t.fs, f, &st), 0);
	ck_assert_uint_eq(st.st_blocks, 0);
	t_fs_remount(&t);
	ck_assert(!tx_in_use(&t, blk));
	ck_assert_uint_eq(tx_blk(&t, f), 0);
	ck_assert_int_eq(mqfs_iget(t.fs, f, &ip), 0);
	ck_assert_uint_eq(ip->d.blocks, 0);
	mqfs_iput(t.fs, ip);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_xattr_flags)
{
	struct t_fs t;
	char buf[16];
	uint64_t f;

	t_fs_make(&t, 32 * T_FS_MIB);
	f = tx_file(&t, "f", S_IFREG | 0644);
	/* No block yet. */
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, "user.x", buf, sizeof(buf)),
			 -ENODATA);
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, "user.x"), -ENODATA);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.x", "1", 1,
				       XATTR_REPLACE), -ENODATA);
	ck_assert_uint_eq(tx_blk(&t, f), 0);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.x", "1", 1,
				       XATTR_CREATE), 0);
	/* With a block. */
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.x", "2", 1,
				       XATTR_CREATE), -EEXIST);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.y", "2", 1,
				       XATTR_REPLACE), -ENODATA);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.x", "3", 1,
				       XATTR_REPLACE), 0);
	tx_get_eq(&t, f, "user.x", "3", 1);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.x", "4", 1,
				       XATTR_CREATE | XATTR_REPLACE), -EINVAL);
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, "user.y"), -ENODATA);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, "user.y", buf, sizeof(buf)),
			 -ENODATA);
	ck_assert_int_eq(mqfs_getxattr(t.fs, 999999, "user.x", buf,
				       sizeof(buf)), -ENOENT);
	/* Read-only: reads work, changes do not. */
	t.mount.readonly = true;
	t_fs_remount(&t);
	tx_get_eq(&t, f, "user.x", "3", 1);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.z", "1", 1, 0), -EROFS);
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, "user.x"), -EROFS);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_xattr_names)
{
	struct t_fs t;
	char name[MQFS_NAME_MAX + 2];
	uint64_t f;

	t_fs_make(&t, 32 * T_FS_MIB);
	f = tx_file(&t, "f", S_IFREG | 0644);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "foo", "1", 1, 0),
			 -EOPNOTSUPP);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "userx", "1", 1, 0),
			 -EOPNOTSUPP);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, "os2.x", NULL, 0),
			 -EOPNOTSUPP);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.", "1", 1, 0), -EINVAL);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "", "1", 1, 0), -ERANGE);
	memcpy(name, "user.", 5);
	memset(name + 5, 'n', sizeof(name) - 6);
	name[MQFS_NAME_MAX + 1] = '\0';
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, name, "1", 1, 0), -ERANGE);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, name, NULL, 0), -ERANGE);
	name[MQFS_NAME_MAX] = '\0';
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, name, "1", 1, 0), 0);
	tx_get_eq(&t, f, name, "1", 1);
	ck_assert_int_eq(mqfs_listxattr(t.fs, f, NULL, 0), MQFS_NAME_MAX + 1);
	t_fs_destroy(&t);
}
END_TEST

/*
 * The limits are the kernel's: E2BIG past XATTR_SIZE_MAX, values up to
 * it stored whole (in fragments) under the longest name; more small
 * attributes than one block holds (the old limit, about 127) chain.
 */
START_TEST(test_xattr_limits)
{
	/* + 3: a value is also read from val + 3 (an unaligned source). */
	static char val[MQFS_XATTR_VALUE_MAX + 3], back[MQFS_XATTR_VALUE_MAX];
	char name[MQFS_NAME_MAX + 1];
	struct t_fs t;
	uint64_t f, d, bfree;
	unsigned i;

	for (i = 0; i < sizeof(val); i++)
		val[i] = (char)(i * 7 + i / 251);
	t_fs_make(&t, 32 * T_FS_MIB);
	f = tx_file(&t, "f", S_IFREG | 0644);
	d = tx_file(&t, "d", S_IFDIR | 0755);
	bfree = tx_free_blocks(&t);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.big", val,
				       MQFS_XATTR_VALUE_MAX + 1, 0), -E2BIG);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.big", val,
				       MQFS_XATTR_VALUE_MAX, 0), 0);
	memset(name, 'n', MQFS_NAME_MAX);
	memcpy(name, "user.", 5);
	name[MQFS_NAME_MAX] = '\0';
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, name, val + 3,
				       MQFS_XATTR_VALUE_MAX, 0), 0);
	/* Replaced by another as large, then by a small one. */
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.big", val + 1,
				       MQFS_XATTR_VALUE_MAX, 0), 0);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.mid", val, 5000, 0), 0);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "user.k%04u", i);
		ck_assert_int_eq(mqfs_setxattr(t.fs, d, name, val + i, 50, 0),
				 0);
	}
	t_fs_remount(&t);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, "user.big", back,
				       MQFS_XATTR_VALUE_MAX - 1), -ERANGE);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, "user.big", back,
				       sizeof(back)), MQFS_XATTR_VALUE_MAX);
	ck_assert_int_eq(memcmp(back, val + 1, MQFS_XATTR_VALUE_MAX), 0);
	tx_get_eq(&t, f, "user.mid", val, 5000);
	/* Removing them all gives every block back. */
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "user.k%04u", i);
		tx_get_eq(&t, d, name, val + i, 50);
		ck_assert_int_eq(mqfs_removexattr(t.fs, d, name), 0);
	}
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, "user.big"), 0);
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, "user.mid"), 0);
	ck_assert_uint_gt(bfree, tx_free_blocks(&t));
	memset(name, 'n', MQFS_NAME_MAX);
	memcpy(name, "user.", 5);
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, name), 0);
	ck_assert_uint_eq(tx_blk(&t, f), 0);
	ck_assert_uint_eq(tx_blk(&t, d), 0);
	ck_assert_uint_eq(tx_free_blocks(&t), bfree);
	t_fs_destroy(&t);
}
END_TEST

/* The model of one inode's attributes in test_xattr_scale. */
#define TX_SCALE	5000u
struct tx_model {
	uint32_t seed[TX_SCALE];	/* the value's bytes; its size: */
	uint32_t size[TX_SCALE];	/* UINT32_MAX: not set */
};

static void tx_value(uint32_t seed, uint32_t size, uint8_t *v)
{
	for (uint32_t i = 0; i < size; i++) {
		seed = seed * 1103515245u + 12345u;
		v[i] = (uint8_t)(seed >> 16);
	}
}

/* Mostly small values, some of a few KiB, now and then XATTR_SIZE_MAX. */
static uint32_t tx_size(unsigned r)
{
	if (r % 97 == 0)
		return MQFS_XATTR_VALUE_MAX;
	if (r % 13 == 0)
		return r % 6000;
	return r % 120;
}

static void tx_scale_set(struct t_fs *t, uint64_t ino, struct tx_model *m,
			 unsigned i, unsigned r)
{
	static uint8_t v[MQFS_XATTR_VALUE_MAX];
	char name[32];

	snprintf(name, sizeof(name), "user.attr.%05u", i);
	m->seed[i] = r;
	m->size[i] = tx_size(r);
	tx_value(m->seed[i], m->size[i], v);
	ck_assert_int_eq(mqfs_setxattr(t->fs, ino, name, v, m->size[i], 0), 0);
}

/* Every attribute as the model has it, and the list names just those. */
static void tx_scale_check(struct t_fs *t, uint64_t ino,
			   const struct tx_model *m)
{
	static uint8_t v[MQFS_XATTR_VALUE_MAX], want[MQFS_XATTR_VALUE_MAX];
	static char list[TX_SCALE * 17];
	char name[32];
	ssize_t n = mqfs_listxattr(t->fs, ino, NULL, 0);
	size_t names = 0;

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(mqfs_listxattr(t->fs, ino, list, (size_t)n - 1),
			 -ERANGE);
	ck_assert_int_eq(mqfs_listxattr(t->fs, ino, list, sizeof(list)), n);
	for (unsigned i = 0; i < TX_SCALE; i++) {
		ssize_t got;

		snprintf(name, sizeof(name), "user.attr.%05u", i);
		got = mqfs_getxattr(t->fs, ino, name, v, sizeof(v));
		if (m->size[i] == UINT32_MAX) {
			ck_assert_int_eq(got, -ENODATA);
			continue;
		}
		names += strlen(name) + 1;
		ck_assert_int_eq(got, (ssize_t)m->size[i]);
		tx_value(m->seed[i], m->size[i], want);
		ck_assert_int_eq(memcmp(v, want, m->size[i]), 0);
	}
	ck_assert_uint_eq((size_t)n, names);
}

/*
 * 5,000 attributes with random values on one inode; a fifth replaced, a
 * fifth removed; all listed and read back, across a remount, fsck clean;
 * and the inode's deletion gives every block back.
 */
START_TEST(test_xattr_scale)
{
	struct mqfs_fsck_opts fo = { .mode = MQFS_FSCK_NO, .force = true };
	static struct tx_model m;
	struct t_fs t;
	uint64_t bfree, ino;
	unsigned i, r = 1;

	ino = tx_fresh_file(&t, 256, &bfree);
	for (i = 0; i < TX_SCALE; i++)
		tx_scale_set(&t, ino, &m, i, r = r * 48271u % 2147483647u);
	for (i = 0; i < TX_SCALE; i += 5) {
		char name[32];

		tx_scale_set(&t, ino, &m, i, r = r * 48271u % 2147483647u);
		snprintf(name, sizeof(name), "user.attr.%05u", i + 1);
		ck_assert_int_eq(mqfs_removexattr(t.fs, ino, name), 0);
		ck_assert_int_eq(mqfs_removexattr(t.fs, ino, name), -ENODATA);
		m.size[i + 1] = UINT32_MAX;
	}
	tx_scale_check(&t, ino, &m);
	t_fs_unmount(&t);
	ck_assert_int_eq(mqfs_fsck(t.q, &fo), MQFS_FSCK_OK);
	t_fs_mount(&t);
	tx_scale_check(&t, ino, &m);
	ck_assert_int_eq(mqfs_unlink(t.fs, TX_ROOT, "f"), 0);
	mqfs_forget(t.fs, ino, 1);
	t_fs_remount(&t);
	ck_assert_uint_eq(tx_free_blocks(&t), bfree);
	t_fs_unmount(&t);
	ck_assert_int_eq(mqfs_fsck(t.q, &fo), MQFS_FSCK_OK);
	t_fs_mount(&t);
	t_fs_destroy(&t);
}
END_TEST

/* Deleting the inode frees its attribute block. */
START_TEST(test_xattr_drop)
{
	struct t_fs t;
	uint64_t f, blk, bfree;

	f = tx_fresh_file(&t, 32, &bfree);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.a", "1", 1, 0), 0);
	blk = tx_blk(&t, f);
	ck_assert_uint_eq(tx_free_blocks(&t), bfree - 1);
	ck_assert_int_eq(mqfs_unlink(t.fs, TX_ROOT, "f"), 0);
	/* Still looked up: the attributes are still there. */
	tx_get_eq(&t, f, "user.a", "1", 1);
	ck_assert(tx_in_use(&t, blk));
	mqfs_forget(t.fs, f, 1);
	t_fs_remount(&t);
	ck_assert(!tx_in_use(&t, blk));
	ck_assert_uint_eq(tx_free_blocks(&t), bfree);
	t_fs_destroy(&t);
}
END_TEST

static enum mqfs_cache_mode tx_policy(struct t_fs *t, uint64_t ino)
{
	struct mqfs_file *f;
	enum mqfs_cache_mode m;

	ck_assert_int_eq(mqfs_open(t->fs, ino, O_RDONLY, &f), 0);
	m = mqfs_file_policy(t->fs, f);
	ck_assert_int_eq(mqfs_release(t->fs, f), 0);
	return m;
}

static uint64_t tx_make(struct t_fs *t, uint64_t dir, const char *name,
			mode_t mode)
{
	struct mqfs_entry e;

	if (S_ISLNK(mode))
		ck_assert_int_eq(mqfs_symlink(t->fs, dir, name, "target", 0, 0,
					      &e), 0);
	else
		ck_assert_int_eq(mqfs_mknod(t->fs, dir, name, mode, 0, 0, 0,
					    &e), 0);
	mqfs_forget(t->fs, e.ino, 1);
	return e.ino;
}

START_TEST(test_cache_policy)
{
	struct t_fs t;
	uint64_t d, sub, f, g, l, late;

	t_fs_make(&t, 32 * T_FS_MIB);
	d = tx_make(&t, TX_ROOT, "d", S_IFDIR | 0755);
	ck_assert_int_eq(tx_policy(&t, d), MQFS_CACHE_UNSET);
	ck_assert_int_eq(mqfs_setxattr(t.fs, d, MQFS_CACHE_XATTR, "fast", 4,
				       0), -EINVAL);
	ck_assert_int_eq(mqfs_setxattr(t.fs, d, MQFS_CACHE_XATTR, "", 0, 0),
			 -EINVAL);
	ck_assert_int_eq(mqfs_setxattr(t.fs, d, MQFS_CACHE_XATTR,
				       "dontcache\n", 10, 0), 0);
	ck_assert_int_eq(tx_policy(&t, d), MQFS_CACHE_DONTCACHE);
	sub = tx_make(&t, d, "sub", S_IFDIR | 0755);
	f = tx_make(&t, sub, "f", S_IFREG | 0644);
	l = tx_make(&t, d, "l", S_IFLNK | 0777);
	tx_get_eq(&t, sub, MQFS_CACHE_XATTR, "dontcache", 9);
	ck_assert_int_eq(mqfs_getxattr(t.fs, l, MQFS_CACHE_XATTR, NULL, 0),
			 -ENODATA);
	ck_assert_int_eq(mqfs_setxattr(t.fs, sub, MQFS_CACHE_XATTR, "none",
				       4, 0), 0);
	g = tx_make(&t, sub, "g", S_IFREG | 0644);
	t_fs_remount(&t);
	ck_assert_int_eq(tx_policy(&t, f), MQFS_CACHE_DONTCACHE);
	ck_assert_int_eq(tx_policy(&t, g), MQFS_CACHE_NONE);
	ck_assert_int_eq(tx_policy(&t, sub), MQFS_CACHE_NONE);
	/* Removing it stops inheritance; what was made keeps its own. */
	ck_assert_int_eq(mqfs_removexattr(t.fs, sub, MQFS_CACHE_XATTR), 0);
	ck_assert_int_eq(tx_policy(&t, sub), MQFS_CACHE_UNSET);
	late = tx_make(&t, sub, "late", S_IFREG | 0644);
	ck_assert_int_eq(tx_policy(&t, late), MQFS_CACHE_UNSET);
	ck_assert_int_eq(tx_policy(&t, g), MQFS_CACHE_NONE);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, MQFS_CACHE_XATTR, "kernel",
				       6, 0), 0);
	ck_assert_int_eq(tx_policy(&t, f), MQFS_CACHE_KERNEL);
	t_fs_destroy(&t);
}
END_TEST

/* ---- the I/O priority policy ---------------------------------------- */

START_TEST(test_ioprio_parse)
{
	static const struct { const char *in; int want; const char *out; } v[] = {
		{ "rt", 1 << 13 | 4, "rt:4" }, { "rt:0", 1 << 13, "rt:0" },
		{ "be:7", 2 << 13 | 7, "be:7" }, { "be\n", 2 << 13 | 4, "be:4" },
		{ "idle", 3 << 13, "idle" }, { "idle:3", -EINVAL, NULL },
		{ "be:8", -EINVAL, NULL }, { "be:", -EINVAL, NULL },
		{ "rt:44", -EINVAL, NULL }, { "none", -EINVAL, NULL },
		{ "", -EINVAL, NULL }, { "BE", -EINVAL, NULL },
	};
	char buf[16];

	for (size_t i = 0; i < MQ_ARRAY_SIZE(v); i++) {
		int p = mqfs_ioprio_parse(v[i].in, strlen(v[i].in));

		ck_assert_msg(p == v[i].want, "%s: %d", v[i].in, p);
		if (p < 0)
			continue;
		ck_assert_uint_eq(mqfs_ioprio_format(p, buf, sizeof(buf)),
				  strlen(v[i].out));
		ck_assert_str_eq(buf, v[i].out);
	}
}
END_TEST

/* The class a new open of @ino gets from its policy. */
static unsigned tx_open_prio(struct t_fs *t, uint64_t ino)
{
	struct mqfs_file *f;
	unsigned p;

	ck_assert_int_eq(mqfs_open(t->fs, ino, O_RDONLY, &f), 0);
	p = f->prio;
	ck_assert_int_eq(mqfs_release(t->fs, f), 0);
	return p;
}

/*
 * Checked and stored in its canonical form, inherited by new files and
 * directories, kept across a remount; removing it stops inheritance.
 */
START_TEST(test_ioprio_policy)
{
	struct t_fs t;
	uint64_t d, sub, f, late;

	t_fs_make(&t, 32 * T_FS_MIB);
	d = tx_make(&t, TX_ROOT, "d", S_IFDIR | 0755);
	ck_assert_uint_eq(tx_open_prio(&t, d), MQ_PRIO_NONE);
	ck_assert_int_eq(mqfs_setxattr(t.fs, d, MQFS_IOPRIO_XATTR, "low", 3, 0),
			 -EINVAL);
	ck_assert_int_eq(mqfs_setxattr(t.fs, d, MQFS_IOPRIO_XATTR, "idle\n", 5,
				       0), 0);
	tx_get_eq(&t, d, MQFS_IOPRIO_XATTR, "idle", 4);
	ck_assert_uint_eq(tx_open_prio(&t, d), MQ_PRIO_IDLE);
	sub = tx_make(&t, d, "sub", S_IFDIR | 0755);
	f = tx_make(&t, sub, "f", S_IFREG | 0644);
	ck_assert_uint_eq(tx_open_prio(&t, f), MQ_PRIO_IDLE);
	ck_assert_int_eq(mqfs_setxattr(t.fs, sub, MQFS_IOPRIO_XATTR, "be", 2, 0),
			 0);
	tx_get_eq(&t, sub, MQFS_IOPRIO_XATTR, "be:4", 4);
	t_fs_remount(&t);
	ck_assert_uint_eq(tx_open_prio(&t, f), MQ_PRIO_IDLE);
	ck_assert_uint_eq(tx_open_prio(&t, sub), MQ_PRIO_BE);
	late = tx_make(&t, sub, "late", S_IFREG | 0644);
	tx_get_eq(&t, late, MQFS_IOPRIO_XATTR, "be:4", 4);
	ck_assert_int_eq(mqfs_removexattr(t.fs, sub, MQFS_IOPRIO_XATTR), 0);
	ck_assert_uint_eq(tx_open_prio(&t, sub), MQ_PRIO_NONE);
	late = tx_make(&t, sub, "later", S_IFREG | 0644);
	ck_assert_uint_eq(tx_open_prio(&t, late), MQ_PRIO_NONE);
	t_fs_destroy(&t);
}
END_TEST

struct tx_kill {
	struct t_fs *t;
	struct mqfs_file *f;
	atomic_int ret;			/* INT_MIN until it returned */
};

static void *tx_kill_main(void *arg)
{
	struct tx_kill *k = arg;

	atomic_store(&k->ret, mqfs_file_kill_priv(k->t->fs, k->f, true));
	return NULL;
}

/*
 * A write's kill-priv check: with nothing to drop it answers while
 * another thread holds the inode lock (a write-behind batch does, for
 * its whole I/O); capabilities and suid bits are still dropped.
 */
START_TEST(test_kill_priv)
{
	static const char caps[20] = { 1, 0, 0, 2 };
	struct tx_kill k = { .ret = INT_MIN };
	struct stat st, suid = { .st_mode = S_IFREG | 04755 };
	struct mqfs_file *f;
	pthread_t th;
	uint64_t ino;
	struct t_fs t;

	t_fs_make(&t, 32 * T_FS_MIB);
	ino = tx_file(&t, "f", S_IFREG | 0755);
	ck_assert_int_eq(mqfs_open(t.fs, ino, O_RDWR, &f), 0);
	ck_assert_int_eq(mqfs_file_kill_priv(t.fs, f, true), 0);
	k = (struct tx_kill){ .t = &t, .f = f, .ret = INT_MIN };
	pthread_rwlock_wrlock(&f->ip->lock);
	ck_assert_int_eq(pthread_create(&th, NULL, tx_kill_main, &k), 0);
	ck_assert_msg(t_wait_until(atomic_load(&k.ret) != INT_MIN),
		      "kill-priv waited for the inode lock");
	pthread_rwlock_unlock(&f->ip->lock);
	pthread_join(th, NULL);
	ck_assert_int_eq(atomic_load(&k.ret), 0);
	ck_assert_int_eq(mqfs_setxattr(t.fs, ino, "security.capability", caps,
				       sizeof(caps), 0), 0);
	ck_assert_int_eq(mqfs_file_kill_priv(t.fs, f, false), 1);
	ck_assert_int_eq(mqfs_getxattr(t.fs, ino, "security.capability",
				       NULL, 0), -ENODATA);
	ck_assert_int_eq(mqfs_setattr(t.fs, ino, &suid, MQFS_SET_MODE, NULL),
			 0);
	ck_assert_int_eq(mqfs_file_kill_priv(t.fs, f, true), 1);
	ck_assert_int_eq(mqfs_getattr(t.fs, ino, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(mqfs_release(t.fs, f), 0);
	t_fs_destroy(&t);
}
END_TEST

/* Write 64 KiB to @ino as a caller of class @caller; where it landed. */
static struct mq_prio_stats tx_write_as(struct t_fs *t, uint64_t ino,
					enum mq_prio_class caller)
{
	static char buf[64 * 1024];
	struct mq_prio_stats before, after;
	struct mqfs_file *f;

	ck_assert_int_eq(mqfs_open(t->fs, ino, O_RDWR, &f), 0);
	ck_assert_int_eq(mq_queue_prio_stats(t->q, &before), 0);
	mq_set_task_prio(caller);
	ck_assert_int_eq(t_write(t->fs, f, 0, buf, sizeof(buf)),
			 (ssize_t)sizeof(buf));
	ck_assert_int_eq(mq_set_task_prio(MQ_PRIO_NONE), caller);
	ck_assert_int_eq(mqfs_release(t->fs, f), 0);
	ck_assert_int_eq(mq_queue_prio_stats(t->q, &after), 0);
	for (int l = 0; l < 3; l++)
		after.level[l].inserted -= before.level[l].inserted;
	return after;
}

/* A write by a @caller lands in level @want (0 RT, 2 IDLE), not @other. */
static void tx_expect_level(struct t_fs *t, uint64_t ino,
			    enum mq_prio_class caller, int want, int other)
{
	struct mq_prio_stats ps = tx_write_as(t, ino, caller);

	ck_assert_uint_ge(ps.level[want].inserted, 1);
	ck_assert_uint_eq(ps.level[other].inserted, 0);
}

/* The policy for callers without a class; the lower of the two else. */
START_TEST(test_ioprio_applies)
{
	uint64_t idle, rt;
	struct t_fs t;

	t_fs_make(&t, 32 * T_FS_MIB);
	t_fs_use_elevator(&t, "mq-deadline");
	idle = tx_make(&t, TX_ROOT, "idle", S_IFREG | 0644);
	rt = tx_make(&t, TX_ROOT, "rt", S_IFREG | 0644);
	ck_assert_int_eq(mqfs_setxattr(t.fs, idle, MQFS_IOPRIO_XATTR, "idle", 4,
				       0), 0);
	ck_assert_int_eq(mqfs_setxattr(t.fs, rt, MQFS_IOPRIO_XATTR, "rt", 2, 0),
			 0);
	tx_expect_level(&t, idle, MQ_PRIO_NONE, 2, 0);
	tx_expect_level(&t, idle, MQ_PRIO_RT, 2, 0);	/* cannot escape */
	tx_expect_level(&t, rt, MQ_PRIO_NONE, 0, 2);
	tx_expect_level(&t, rt, MQ_PRIO_IDLE, 2, 0);	/* may undercut */
	t_fs_destroy(&t);
}
END_TEST

static Suite *xattr_suite(void)
{
	Suite *s = suite_create("xattr");
	TCase *tc = t_tcase(s, "core", 60);

	tcase_add_test(tc, test_xattr_roundtrip);
	tcase_add_test(tc, test_xattr_flags);
	tcase_add_test(tc, test_xattr_names);
	tcase_add_test(tc, test_xattr_limits);
	tcase_add_test(tc, test_xattr_scale);
	tcase_add_test(tc, test_xattr_drop);
	tcase_add_test(tc, test_cache_policy);
	tcase_add_test(tc, test_ioprio_parse);
	tcase_add_test(tc, test_ioprio_policy);
	tcase_add_test(tc, test_ioprio_applies);
	tcase_add_test(tc, test_kill_priv);
	return s;
}

T_MAIN(xattr_suite)
