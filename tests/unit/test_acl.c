// SPDX-License-Identifier: MIT
/*
 * test_acl.c - POSIX ACLs (src/fs/acl.c, acl_fs.c): the value checks of
 * the kernel's posix_acl_valid, the mode an access ACL gives and when it
 * is only the mode, chmod's rewrite of the base entries, the masks of a
 * new inode under a default ACL; and through fs.h: setxattr of an ACL
 * sets the mode (a minimal one stored as nothing), chmod updates the
 * stored ACL, KILL_SGID, a default ACL inherited by files and
 * directories with the umask ignored (applied without one), noacl.
 */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "acl_i.h"
#include "t_fs.h"
#include "t_main.h"

#define TA_ROOT		MQFS_ROOT_INO
#define TA_X		MQFS_ACL_UNDEFINED_ID

/* An ACL value of @n entries {tag, perm, id} into @buf; its size. */
struct ta_ent {
	uint16_t tag, perm;
	uint32_t id;
};

static size_t ta_acl(void *buf, const struct ta_ent *e, unsigned n)
{
	struct mqfs_acl_header h = { MQFS_ACL_VERSION };

	memcpy(buf, &h, sizeof(h));
	for (unsigned i = 0; i < n; i++) {
		struct mqfs_acl_entry x = { e[i].tag, e[i].perm, e[i].id };

		memcpy((char *)buf + MQFS_ACL_SIZE(i), &x, sizeof(x));
	}
	return MQFS_ACL_SIZE(n);
}

#define TA_ACL(buf, ...)						\
	ta_acl(buf, (const struct ta_ent[]){ __VA_ARGS__ },		\
	       sizeof((const struct ta_ent[]){ __VA_ARGS__ }) /		\
	       sizeof(struct ta_ent))

static uint16_t ta_perm(const void *buf, size_t size, unsigned tag)
{
	for (size_t off = 4; off < size; off += MQFS_ACL_ENTRY_SIZE) {
		struct mqfs_acl_entry e;

		memcpy(&e, (const char *)buf + off, sizeof(e));
		if (e.tag == tag)
			return e.perm;
	}
	return 0xffff;
}

/* The owner, mask, group and other perms of @buf are these. */
static void ta_base_eq(const void *buf, size_t size, unsigned u, unsigned m,
		       unsigned g, unsigned o)
{
	ck_assert_uint_eq(ta_perm(buf, size, MQFS_ACL_USER_OBJ), u);
	ck_assert_uint_eq(ta_perm(buf, size, MQFS_ACL_MASK), m);
	ck_assert_uint_eq(ta_perm(buf, size, MQFS_ACL_GROUP_OBJ), g);
	ck_assert_uint_eq(ta_perm(buf, size, MQFS_ACL_OTHER), o);
}

START_TEST(test_acl_valid)
{
	char b[256];
	size_t n;

	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 6, TA_X },
		   { MQFS_ACL_GROUP_OBJ, 4, TA_X }, { MQFS_ACL_OTHER, 4, TA_X });
	ck_assert_int_eq(mqfs_acl_valid(b, n), 0);
	ck_assert_int_eq(mqfs_acl_valid(b, n - 1), -EINVAL);	/* torn */
	ck_assert_int_eq(mqfs_acl_valid(b, 4), -EINVAL);	/* empty */
	b[0] = 1;						/* version */
	ck_assert_int_eq(mqfs_acl_valid(b, n), -EINVAL);
	/* Named entries need a mask; sorted by tag, then by id. */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 6, TA_X }, { MQFS_ACL_USER, 4, 7 },
		   { MQFS_ACL_GROUP_OBJ, 4, TA_X }, { MQFS_ACL_OTHER, 4, TA_X });
	ck_assert_int_eq(mqfs_acl_valid(b, n), -EINVAL);
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 6, TA_X }, { MQFS_ACL_USER, 4, 7 },
		   { MQFS_ACL_USER, 4, 9 }, { MQFS_ACL_GROUP_OBJ, 4, TA_X },
		   { MQFS_ACL_GROUP, 1, 3 }, { MQFS_ACL_MASK, 7, TA_X },
		   { MQFS_ACL_OTHER, 0, TA_X });
	ck_assert_int_eq(mqfs_acl_valid(b, n), 0);
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 6, TA_X }, { MQFS_ACL_USER, 4, 9 },
		   { MQFS_ACL_USER, 4, 7 }, { MQFS_ACL_GROUP_OBJ, 4, TA_X },
		   { MQFS_ACL_MASK, 7, TA_X }, { MQFS_ACL_OTHER, 0, TA_X });
	ck_assert_int_eq(mqfs_acl_valid(b, n), -EINVAL);	/* ids */
	n = TA_ACL(b, { MQFS_ACL_GROUP_OBJ, 4, TA_X },
		   { MQFS_ACL_USER_OBJ, 6, TA_X }, { MQFS_ACL_OTHER, 4, TA_X });
	ck_assert_int_eq(mqfs_acl_valid(b, n), -EINVAL);	/* order */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 6, TA_X },
		   { MQFS_ACL_USER_OBJ, 6, TA_X },
		   { MQFS_ACL_GROUP_OBJ, 4, TA_X }, { MQFS_ACL_OTHER, 4, TA_X });
	ck_assert_int_eq(mqfs_acl_valid(b, n), -EINVAL);	/* twice */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 6, TA_X },
		   { MQFS_ACL_GROUP_OBJ, 4, TA_X });
	ck_assert_int_eq(mqfs_acl_valid(b, n), -EINVAL);	/* no other */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 8, TA_X },
		   { MQFS_ACL_GROUP_OBJ, 4, TA_X }, { MQFS_ACL_OTHER, 4, TA_X });
	ck_assert_int_eq(mqfs_acl_valid(b, n), -EINVAL);	/* perm */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 6, TA_X }, { 0x40, 4, TA_X },
		   { MQFS_ACL_GROUP_OBJ, 4, TA_X }, { MQFS_ACL_OTHER, 4, TA_X });
	ck_assert_int_eq(mqfs_acl_valid(b, n), -EINVAL);	/* tag */
}
END_TEST

START_TEST(test_acl_mode)
{
	char b[256];
	mode_t perm;
	size_t n;

	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 7, TA_X },
		   { MQFS_ACL_GROUP_OBJ, 5, TA_X }, { MQFS_ACL_OTHER, 1, TA_X });
	ck_assert_int_eq(mqfs_acl_equiv_mode(b, n, &perm), 0);
	ck_assert_uint_eq(perm, 0751);
	/* With a mask the group bits are the mask's, and it is stored. */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 6, TA_X }, { MQFS_ACL_USER, 4, 7 },
		   { MQFS_ACL_GROUP_OBJ, 0, TA_X }, { MQFS_ACL_MASK, 4, TA_X },
		   { MQFS_ACL_OTHER, 0, TA_X });
	ck_assert_int_eq(mqfs_acl_equiv_mode(b, n, &perm), 1);
	ck_assert_uint_eq(perm, 0640);
	ck_assert(mqfs_acl_matches_mode(b, n, S_IFREG | 0640));
	ck_assert(!mqfs_acl_matches_mode(b, n, S_IFREG | 0600));
	/* chmod 0705: owner 7, mask (not group) 0, other 5. */
	mqfs_acl_chmod(b, n, 0705);
	ta_base_eq(b, n, 7, 0, 0, 5);
	ck_assert_uint_eq(ta_perm(b, n, MQFS_ACL_USER), 4);
	/* Without a mask chmod sets the group entry. */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 7, TA_X },
		   { MQFS_ACL_GROUP_OBJ, 5, TA_X }, { MQFS_ACL_OTHER, 1, TA_X });
	mqfs_acl_chmod(b, n, 0642);
	ck_assert_uint_eq(ta_perm(b, n, MQFS_ACL_GROUP_OBJ), 4);
}
END_TEST

START_TEST(test_acl_create_masks)
{
	char b[256];
	mode_t mode = S_IFREG | 0666;
	size_t n;

	/* Default u::rwx,u:7:rwx,g::r-x,m::rwx,o::--- and open(0666). */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 7, TA_X }, { MQFS_ACL_USER, 7, 7 },
		   { MQFS_ACL_GROUP_OBJ, 5, TA_X }, { MQFS_ACL_MASK, 7, TA_X },
		   { MQFS_ACL_OTHER, 0, TA_X });
	ck_assert_int_eq(mqfs_acl_create(b, n, &mode), 1);
	ck_assert_uint_eq(mode, S_IFREG | 0660);
	ta_base_eq(b, n, 6, 6, 5, 0);
	ck_assert_uint_eq(ta_perm(b, n, MQFS_ACL_USER), 7);
	/* Only base entries: the mode is all there is. */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 7, TA_X },
		   { MQFS_ACL_GROUP_OBJ, 5, TA_X }, { MQFS_ACL_OTHER, 5, TA_X });
	mode = S_IFDIR | S_ISGID | 0777;
	ck_assert_int_eq(mqfs_acl_create(b, n, &mode), 0);
	ck_assert_uint_eq(mode, S_IFDIR | S_ISGID | 0755);
}
END_TEST

/* ---- through fs.h --------------------------------------------------------- */

static uint64_t ta_mk(struct t_fs *t, uint64_t dir, const char *name,
		      mode_t mode, mode_t umask)
{
	struct mqfs_entry e;

	ck_assert_int_eq(mqfs_mknod_umask(t->fs, dir, name, mode, umask, 0, 0,
					  0, &e), 0);
	mqfs_forget(t->fs, e.ino, 1);
	return e.ino;
}

static mode_t ta_mode(struct t_fs *t, uint64_t ino)
{
	struct stat st;

	ck_assert_int_eq(mqfs_getattr(t->fs, ino, &st), 0);
	return st.st_mode;
}

START_TEST(test_acl_setxattr_mode)
{
	struct stat a = { .st_mode = 0600 }, st;
	char b[256], got[256];
	struct mqfs_entry e;
	struct t_fs t;
	uint64_t f;
	size_t n;

	t_fs_make(&t, 32 * T_FS_MIB);
	f = ta_mk(&t, TA_ROOT, "f", S_IFREG | 06755, 0);
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 6, TA_X }, { MQFS_ACL_USER, 4, 7 },
		   { MQFS_ACL_GROUP_OBJ, 0, TA_X }, { MQFS_ACL_MASK, 4, TA_X },
		   { MQFS_ACL_OTHER, 0, TA_X });
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, b, n,
				       MQFS_XATTR_ACL_KILL_SGID), 0);
	ck_assert_uint_eq(ta_mode(&t, f), S_IFREG | S_ISUID | 0640);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, got,
				       sizeof(got)), (ssize_t)n);
	/* chmod rewrites owner, mask and other, in the stored value. */
	ck_assert_int_eq(mqfs_setattr(t.fs, f, &a, MQFS_SET_MODE, &st), 0);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, got,
				       sizeof(got)), (ssize_t)n);
	ck_assert_uint_eq(ta_perm(got, n, MQFS_ACL_MASK), 0);
	ck_assert_uint_eq(ta_perm(got, n, MQFS_ACL_USER_OBJ), 6);
	t_fs_remount(&t);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, got,
				       sizeof(got)), (ssize_t)n);
	ck_assert_uint_eq(ta_perm(got, n, MQFS_ACL_MASK), 0);
	/* A minimal ACL is the mode only: stored as nothing. */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 7, TA_X },
		   { MQFS_ACL_GROUP_OBJ, 5, TA_X }, { MQFS_ACL_OTHER, 1, TA_X });
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, b, n,
				       0), 0);
	ck_assert_uint_eq(ta_mode(&t, f), S_IFREG | 0751);	/* chmod 0600 */
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, NULL,
				       0), -ENODATA);
	/* Bad values, and a default ACL on a file. */
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, b,
				       n - 2, 0), -EINVAL);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, MQFS_ACL_DEFAULT_XATTR, b, n,
				       0), -EACCES);
	ck_assert_int_eq(mqfs_symlink(t.fs, TA_ROOT, "l", "f", 0, 0, &e), 0);
	mqfs_forget(t.fs, e.ino, 1);
	ck_assert_int_eq(mqfs_setxattr(t.fs, e.ino, MQFS_ACL_ACCESS_XATTR, b,
				       n, 0), -EOPNOTSUPP);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_acl_inherit)
{
	char b[256], got[256];
	struct t_fs t;
	uint64_t d, f, sub, plain;
	size_t n;

	t_fs_make(&t, 32 * T_FS_MIB);
	d = ta_mk(&t, TA_ROOT, "d", S_IFDIR | 0777, 022);
	ck_assert_uint_eq(ta_mode(&t, d), S_IFDIR | 0755);	/* umask */
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 7, TA_X }, { MQFS_ACL_USER, 7, 7 },
		   { MQFS_ACL_GROUP_OBJ, 5, TA_X }, { MQFS_ACL_MASK, 7, TA_X },
		   { MQFS_ACL_OTHER, 0, TA_X });
	ck_assert_int_eq(mqfs_setxattr(t.fs, d, MQFS_ACL_DEFAULT_XATTR, b, n,
				       0), 0);
	/* The umask (077) is not applied under a default ACL. */
	f = ta_mk(&t, d, "f", S_IFREG | 0666, 077);
	ck_assert_uint_eq(ta_mode(&t, f), S_IFREG | 0660);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, got,
				       sizeof(got)), (ssize_t)n);
	ck_assert_uint_eq(ta_perm(got, n, MQFS_ACL_MASK), 6);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, MQFS_ACL_DEFAULT_XATTR, NULL,
				       0), -ENODATA);
	sub = ta_mk(&t, d, "sub", S_IFDIR | 0777, 077);
	ck_assert_uint_eq(ta_mode(&t, sub), S_IFDIR | 0770);
	ck_assert_int_eq(mqfs_getxattr(t.fs, sub, MQFS_ACL_DEFAULT_XATTR, got,
				       sizeof(got)), (ssize_t)n);
	ck_assert_int_eq(memcmp(got, b, n), 0);
	ck_assert_int_eq(mqfs_getxattr(t.fs, sub, MQFS_ACL_ACCESS_XATTR, got,
				       sizeof(got)), (ssize_t)n);
	/* Outside it, the umask again. */
	plain = ta_mk(&t, TA_ROOT, "p", S_IFREG | 0666, 027);
	ck_assert_uint_eq(ta_mode(&t, plain), S_IFREG | 0640);
	t_fs_destroy(&t);
}
END_TEST

START_TEST(test_acl_noacl)
{
	char b[128];
	struct t_fs t;
	uint64_t f;
	size_t n;

	t_fs_make(&t, 32 * T_FS_MIB);
	f = ta_mk(&t, TA_ROOT, "f", S_IFREG | 0644, 0);
	n = TA_ACL(b, { MQFS_ACL_USER_OBJ, 7, TA_X }, { MQFS_ACL_USER, 4, 7 },
		   { MQFS_ACL_GROUP_OBJ, 5, TA_X }, { MQFS_ACL_MASK, 5, TA_X },
		   { MQFS_ACL_OTHER, 1, TA_X });
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, b, n,
				       0), 0);
	ck_assert_int_eq(mqfs_listxattr(t.fs, f, NULL, 0),
			 (ssize_t)sizeof(MQFS_ACL_ACCESS_XATTR));
	/* A noacl mount neither serves nor lists an ACL stored before. */
	t.mount.noacl = true;
	t_fs_remount(&t);
	ck_assert_int_eq(mqfs_listxattr(t.fs, f, NULL, 0), 0);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, b, n,
				       0), -EOPNOTSUPP);
	ck_assert_int_eq(mqfs_getxattr(t.fs, f, MQFS_ACL_ACCESS_XATTR, NULL,
				       0), -EOPNOTSUPP);
	ck_assert_int_eq(mqfs_removexattr(t.fs, f, MQFS_ACL_DEFAULT_XATTR),
			 -EOPNOTSUPP);
	ck_assert_int_eq(mqfs_setxattr(t.fs, f, "user.x", "1", 1, 0), 0);
	t_fs_destroy(&t);
}
END_TEST

static Suite *acl_suite(void)
{
	Suite *s = suite_create("acl");
	TCase *tc = t_tcase(s, "values", 10);

	tcase_add_test(tc, test_acl_valid);
	tcase_add_test(tc, test_acl_mode);
	tcase_add_test(tc, test_acl_create_masks);
	tc = t_tcase(s, "fs", 60);
	tcase_add_test(tc, test_acl_setxattr_mode);
	tcase_add_test(tc, test_acl_inherit);
	tcase_add_test(tc, test_acl_noacl);
	return s;
}

T_MAIN(acl_suite)
