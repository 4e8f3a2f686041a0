// SPDX-License-Identifier: MIT
/*
 * test_rename.c - mqfs_rename (src/fs/rename.c) in all its forms on a
 * ram-device filesystem: files and directories, over a target or not,
 * across directories with ".." and the link counts moved along,
 * RENAME_NOREPLACE, RENAME_EXCHANGE and RENAME_WHITEOUT, and every errno
 * it documents.
 */
#include <check.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "t_fs.h"
#include "t_main.h"
#include "t_namei.h"

START_TEST(test_rename_files)
{
	struct t_fs t;
	struct mqfs_entry e;
	uint64_t a, c, d;

	t_fs_make(&t, 32 * T_FS_MIB);
	a = tn_mk(&t, TN_ROOT, "a", S_IFREG | 0644);
	c = tn_mk(&t, TN_ROOT, "c", S_IFREG | 0644);
	d = tn_mk(&t, TN_ROOT, "d", S_IFDIR | 0755);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "a", TN_ROOT, "b", 0), 0);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "a"), 0);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "b"), a);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "a", TN_ROOT, "x", 0),
			 -ENOENT);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "b", TN_ROOT, "b", 0), 0);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "b"), a);
	/* NOREPLACE */
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "b", TN_ROOT, "c",
				     RENAME_NOREPLACE), -EEXIST);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "b", d, "b",
				     RENAME_NOREPLACE), 0);
	ck_assert_uint_eq(tn_ino(&t, d, "b"), a);
	ck_assert_uint_eq(tn_nlink(&t, d), 2);
	/* Over an existing file: the target loses its link. */
	ck_assert_int_eq(mqfs_rename(t.fs, d, "b", TN_ROOT, "c", 0), 0);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "c"), a);
	ck_assert_uint_eq(tn_ino(&t, d, "b"), 0);
	ck_assert_uint_eq(tn_nlink(&t, c), 0);
	ck_assert_uint_eq(mqfs_sb(t.fs)->orphan_head, c);
	mqfs_forget(t.fs, c, 1);
	ck_assert(tn_gone(&t, c));
	/* Two links of one inode: nothing happens. */
	ck_assert_int_eq(mqfs_link(t.fs, a, d, "hl", &e), 0);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "c", d, "hl", 0), 0);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "c"), a);
	ck_assert_uint_eq(tn_ino(&t, d, "hl"), a);
	ck_assert_uint_eq(tn_nlink(&t, a), 2);
	/* Bad arguments. */
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "c", TN_ROOT, "z", 4),
			 -EINVAL);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "c", TN_ROOT, "z",
				     RENAME_NOREPLACE | RENAME_EXCHANGE),
			 -EINVAL);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, ".", TN_ROOT, "z", 0),
			 -EBUSY);
	ck_assert_int_eq(mqfs_rename(t.fs, a, "x", TN_ROOT, "z", 0), -ENOTDIR);
	t_fs_remount(&t);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "c"), a);
	ck_assert_uint_eq(tn_nlink(&t, a), 2);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_rename_dirs)
{
	struct t_fs t;
	uint64_t A, B, x, e, f, full;

	t_fs_make(&t, 32 * T_FS_MIB);
	A = tn_mk(&t, TN_ROOT, "A", S_IFDIR | 0755);
	B = tn_mk(&t, TN_ROOT, "B", S_IFDIR | 0755);
	x = tn_mk(&t, A, "x", S_IFDIR | 0755);
	tn_mk(&t, x, "inner", S_IFREG);
	ck_assert_uint_eq(tn_nlink(&t, A), 3);
	/* Across directories: ".." and the link counts follow. */
	ck_assert_int_eq(mqfs_rename(t.fs, A, "x", B, "y", 0), 0);
	ck_assert_uint_eq(tn_ino(&t, B, "y"), x);
	ck_assert_uint_eq(tn_ino(&t, x, ".."), B);
	ck_assert_uint_eq(tn_parent(&t, x), B);
	ck_assert_uint_eq(tn_nlink(&t, A), 2);
	ck_assert_uint_eq(tn_nlink(&t, B), 3);
	ck_assert_uint_ne(tn_ino(&t, x, "inner"), 0);
	/* Within one directory nothing but the name changes. */
	ck_assert_int_eq(mqfs_rename(t.fs, B, "y", B, "x", 0), 0);
	ck_assert_uint_eq(tn_nlink(&t, B), 3);
	ck_assert_uint_eq(tn_parent(&t, x), B);
	/* Over an empty directory, which is removed. */
	e = tn_mk(&t, A, "e", S_IFDIR | 0755);
	ck_assert_uint_eq(tn_nlink(&t, A), 3);
	ck_assert_int_eq(mqfs_rename(t.fs, B, "x", A, "e", 0), 0);
	ck_assert_uint_eq(tn_ino(&t, A, "e"), x);
	ck_assert_uint_eq(tn_nlink(&t, A), 3);
	ck_assert_uint_eq(tn_nlink(&t, B), 2);
	ck_assert_uint_eq(tn_nlink(&t, e), 0);
	mqfs_forget(t.fs, e, 1);
	ck_assert(tn_gone(&t, e));
	/* Over a non-empty directory; type mismatches. */
	full = tn_mk(&t, B, "full", S_IFDIR | 0755);
	tn_mk(&t, full, "something", S_IFREG);
	f = tn_mk(&t, B, "file", S_IFREG);
	ck_assert_int_eq(mqfs_rename(t.fs, A, "e", B, "full", 0), -ENOTEMPTY);
	ck_assert_int_eq(mqfs_rename(t.fs, A, "e", B, "file", 0), -ENOTDIR);
	ck_assert_int_eq(mqfs_rename(t.fs, B, "file", A, "e", 0), -EISDIR);
	ck_assert_uint_eq(tn_ino(&t, B, "file"), f);
	/* Never into its own subtree. */
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "A", x, "sub", 0),
			 -EINVAL);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "A", A, "self", 0),
			 -EINVAL);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "B", full, "deep", 0),
			 -EINVAL);
	/* A directory onto its own ancestor: that one is not empty. */
	ck_assert_int_eq(mqfs_rename(t.fs, A, "e", TN_ROOT, "A", 0),
			 -ENOTEMPTY);
	/* Down into a sibling subtree is fine. */
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "B", x, "B", 0), 0);
	ck_assert_uint_eq(tn_parent(&t, B), x);
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), 3);
	ck_assert_uint_eq(tn_nlink(&t, x), 3);
	t_fs_remount(&t);
	ck_assert_uint_eq(tn_ino(&t, x, "B"), B);
	ck_assert_uint_eq(tn_ino(&t, B, ".."), x);
	ck_assert_uint_eq(tn_nlink(&t, x), 3);
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), 3);
	t_fs_destroy(&t);
}
END_TEST

/* A filesystem with directories A and B in the root. */
static void tr_make_ab(struct t_fs *t, uint64_t *A, uint64_t *B)
{
	t_fs_make(t, 32 * T_FS_MIB);
	*A = tn_mk(t, TN_ROOT, "A", S_IFDIR | 0755);
	*B = tn_mk(t, TN_ROOT, "B", S_IFDIR | 0755);
}

START_TEST(test_rename_exchange)
{
	struct t_fs t;
	uint64_t A, B, f, d, g;

	tr_make_ab(&t, &A, &B);
	f = tn_mk(&t, A, "f", S_IFREG | 0644);
	d = tn_mk(&t, B, "d", S_IFDIR | 0755);
	g = tn_mk(&t, A, "g", S_IFREG | 0644);
	ck_assert_int_eq(mqfs_rename(t.fs, A, "f", B, "missing",
				     RENAME_EXCHANGE), -ENOENT);
	ck_assert_int_eq(mqfs_rename(t.fs, A, "f", B, "d", RENAME_EXCHANGE),
			 0);
	ck_assert_uint_eq(tn_ino(&t, A, "f"), d);
	ck_assert_uint_eq(tn_ino(&t, B, "d"), f);
	ck_assert_uint_eq(tn_parent(&t, d), A);
	ck_assert_uint_eq(tn_nlink(&t, A), 3);
	ck_assert_uint_eq(tn_nlink(&t, B), 2);
	ck_assert_uint_eq(tn_nlink(&t, f), 1);
	ck_assert_uint_eq(tn_nlink(&t, d), 2);
	/* In one directory. */
	ck_assert_int_eq(mqfs_rename(t.fs, A, "f", A, "g", RENAME_EXCHANGE),
			 0);
	ck_assert_uint_eq(tn_ino(&t, A, "g"), d);
	ck_assert_uint_eq(tn_ino(&t, A, "f"), g);
	ck_assert_uint_eq(tn_nlink(&t, A), 3);
	/* Two directories; then one that would land inside itself. */
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "B", A, "g",
				     RENAME_EXCHANGE), 0);
	ck_assert_uint_eq(tn_ino(&t, TN_ROOT, "B"), d);
	ck_assert_uint_eq(tn_ino(&t, A, "g"), B);
	ck_assert_uint_eq(tn_parent(&t, d), TN_ROOT);
	ck_assert_uint_eq(tn_parent(&t, B), A);
	ck_assert_uint_eq(tn_nlink(&t, A), 3);
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), 4);
	ck_assert_int_eq(mqfs_rename(t.fs, TN_ROOT, "A", A, "g",
				     RENAME_EXCHANGE), -EINVAL);
	ck_assert_int_eq(mqfs_rename(t.fs, A, "g", TN_ROOT, "A",
				     RENAME_EXCHANGE), -EINVAL);
	t_fs_remount(&t);
	ck_assert_uint_eq(tn_ino(&t, A, "g"), B);
	ck_assert_uint_eq(tn_ino(&t, B, ".."), A);
	ck_assert_uint_eq(tn_nlink(&t, TN_ROOT), 4);
	t_fs_destroy(&t);
}
END_TEST

/* The whiteout at @name in @dir: a character device 0/0, mode 0. */
static void tr_is_whiteout(struct t_fs *t, uint64_t dir, const char *name,
			   uid_t uid)
{
	struct stat st = tn_stat(t, tn_ino(t, dir, name));

	ck_assert_uint_eq(st.st_mode, S_IFCHR);
	ck_assert_uint_eq(st.st_rdev, 0);
	ck_assert_uint_eq(st.st_nlink, 1);
	ck_assert_uint_eq(st.st_uid, uid);
}

static uint64_t tr_free_inodes(struct t_fs *t)
{
	struct statvfs st;

	ck_assert_int_eq(mqfs_statfs(t->fs, &st), 0);
	return st.f_ffree;
}

/*
 * RENAME_WHITEOUT: the rename, and a whiteout at the old name in the
 * same transaction; with NOREPLACE over a name, nothing at all.
 */
START_TEST(test_rename_whiteout)
{
	const struct mqfs_fsck_opts fo = { .force = true };
	uint64_t A, B, f, g, d, ffree;
	struct t_fs t;

	tr_make_ab(&t, &A, &B);
	f = tn_mk(&t, A, "f", S_IFREG | 0644);
	g = tn_mk(&t, B, "g", S_IFREG | 0644);
	d = tn_mk(&t, A, "d", S_IFDIR | 0755);
	ck_assert_int_eq(mqfs_rename_whiteout(t.fs, A, "f", B, "f2",
					      RENAME_WHITEOUT, 5, 6), 0);
	ck_assert_uint_eq(tn_ino(&t, B, "f2"), f);
	tr_is_whiteout(&t, A, "f", 5);
	/* Over a target, which goes. */
	ck_assert_int_eq(mqfs_rename_whiteout(t.fs, B, "f2", B, "g",
					      RENAME_WHITEOUT, 0, 0), 0);
	ck_assert_uint_eq(tn_ino(&t, B, "g"), f);
	ck_assert_uint_eq(tn_nlink(&t, g), 0);
	tr_is_whiteout(&t, B, "f2", 0);
	/* NOREPLACE over a name: refused, and no whiteout was made. */
	ffree = tr_free_inodes(&t);
	ck_assert_int_eq(mqfs_rename_whiteout(t.fs, B, "g", A, "f",
				RENAME_WHITEOUT | RENAME_NOREPLACE, 0, 0),
			 -EEXIST);
	ck_assert_uint_eq(tr_free_inodes(&t), ffree);
	ck_assert_uint_eq(tn_ino(&t, B, "g"), f);
	/* A directory across: its ".." and both link counts move. */
	ck_assert_int_eq(mqfs_rename_whiteout(t.fs, A, "d", B, "d",
				RENAME_WHITEOUT | RENAME_NOREPLACE, 0, 0), 0);
	tr_is_whiteout(&t, A, "d", 0);
	ck_assert_uint_eq(tn_parent(&t, d), B);
	ck_assert_uint_eq(tn_ino(&t, d, ".."), B);
	ck_assert_uint_eq(tn_nlink(&t, A), 2);
	ck_assert_uint_eq(tn_nlink(&t, B), 3);
	/* Flags that do not go together, and a whiteout without owner. */
	ck_assert_int_eq(mqfs_rename_whiteout(t.fs, B, "g", A, "f",
				RENAME_WHITEOUT | RENAME_EXCHANGE, 0, 0),
			 -EINVAL);
	ck_assert_int_eq(mqfs_rename(t.fs, B, "g", A, "x", RENAME_WHITEOUT),
			 -EINVAL);
	ck_assert_int_eq(mqfs_rename_whiteout(t.fs, B, "g", A, "x", 0, 0, 0),
			 -EINVAL);
	t_fs_remount(&t);
	tr_is_whiteout(&t, A, "f", 5);
	tr_is_whiteout(&t, A, "d", 0);
	ck_assert_uint_eq(tn_ino(&t, B, "d"), d);
	t_fs_unmount(&t);
	ck_assert_int_eq(mqfs_fsck(t.q, &fo), MQFS_FSCK_OK);
	t_fs_mount(&t);
	t_fs_destroy(&t);
}
END_TEST

static Suite *rename_suite(void)
{
	Suite *s = suite_create("rename");
	TCase *tc = t_tcase(s, "core", 60);

	tcase_add_test(tc, test_rename_files);
	tcase_add_test(tc, test_rename_dirs);
	tcase_add_test(tc, test_rename_exchange);
	tcase_add_test(tc, test_rename_whiteout);
	return s;
}

T_MAIN(rename_suite)
