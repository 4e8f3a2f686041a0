// SPDX-License-Identifier: MIT
/*
 * fsck_acl.c - pass 4, the POSIX ACLs in an inode's (valid) xattr block
 * (FORMAT.md §9, "POSIX ACLs").  A value the daemon would refuse to
 * store (mqfs_acl_valid), an ACL on a symlink, or a default ACL on
 * anything but a directory is removed; the mode's permission bits are
 * made the access ACL's where they disagree, since the daemon changes
 * both in one transaction and the kernel checks access with the ACL.
 */
#include <sys/stat.h>

#include "acl_i.h"
#include "fsck_i.h"

/* Why the stored ACL @type of inode @d cannot stay, or NULL. */
static const char *fk_acl_why_bad(const struct mqfs_inode *d, int type,
				  const void *value, size_t size)
{
	if (S_ISLNK(d->mode))
		return "is on a symlink";
	if (type == MQFS_ACL_TYPE_DEFAULT && !S_ISDIR(d->mode))
		return "is a default ACL on a non-directory";
	return mqfs_acl_valid(value, size) ? "is not a valid ACL" : NULL;
}

/* The mode's permission bits follow a stored access ACL's. */
static void fk_acl_mode(struct fsck *f, uint64_t ino, struct mqfs_inode *d,
			const void *value, size_t size, bool *dirty)
{
	mode_t perm;

	mqfs_acl_equiv_mode(value, size, &perm);
	if (perm == (d->mode & MQFS_ACL_RWX_UGO))
		return;
	mqfs_fk_problem(f, FK_SAFE, "fixed", "inode %llu: mode 0%o disagrees "
			"with its access ACL (0%o)", (unsigned long long)ino,
			d->mode & 07777u, (unsigned)perm);
	d->mode = (uint16_t)((d->mode & ~MQFS_ACL_RWX_UGO) | perm);
	*dirty = true;
}

int mqfs_fk_check_acls(struct fsck *f, uint64_t ino, struct mqfs_inode *d,
		       void *xblock, bool *dirty, bool *cut)
{
	static const char *const names[] = {
		[MQFS_ACL_TYPE_ACCESS] = MQFS_ACL_ACCESS_XATTR,
		[MQFS_ACL_TYPE_DEFAULT] = MQFS_ACL_DEFAULT_XATTR,
	};
	unsigned left = 1;

	*cut = false;
	for (int type = MQFS_ACL_TYPE_ACCESS; type <= MQFS_ACL_TYPE_DEFAULT;
	     type++) {
		const void *value;
		const char *why;
		size_t size;
		int off = left ? mqfs_xattr_lookup(xblock, names[type], &value,
						   &size) : -1;

		if (off < 0)
			continue;
		why = fk_acl_why_bad(d, type, value, size);
		if (!why) {
			if (type == MQFS_ACL_TYPE_ACCESS)
				fk_acl_mode(f, ino, d, value, size, dirty);
			continue;
		}
		mqfs_fk_problem(f, FK_UNSAFE, "removed", "inode %llu: %s %s",
				(unsigned long long)ino, names[type], why);
		left = mqfs_xattr_cut(xblock, (unsigned)off);
		*cut = true;
	}
	return (int)left;
}
