// SPDX-License-Identifier: MIT
/*
 * acl_fs.c - POSIX ACLs in the filesystem, as ext4 keeps them: stored as
 * the xattrs system.posix_acl_access and system.posix_acl_default in
 * the inode's attribute block (xattr.c), in the kernel's value format
 * (acl.c).  The kernel does the permission checks with them (the front
 * end asks FUSE_POSIX_ACL); mqfs keeps them and the mode in step:
 *
 * - an access ACL set by setxattr gives the mode its permission bits,
 *   in the same transaction; one that says no more than the mode (only
 *   the three base entries) is not stored at all, as ext4 does;
 * - chmod gives a stored access ACL's owner, mask (else group) and
 *   other entries the new bits, in chmod's transaction;
 * - a new inode under a directory with a default ACL takes its mode
 *   and access ACL from it (the umask not applied), and a directory the
 *   default ACL too; without one the umask applies (the kernel sends it
 *   unapplied: FUSE_DONT_MASK).
 *
 * Who may set an ACL (the owner or CAP_FOWNER) and whether the value is
 * valid the kernel checks before the request comes (fs/posix_acl.c,
 * set_posix_acl); the value is checked here again, as anything written
 * to the disk is.  Locking: the inode's, as xattr.c's.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "acl_i.h"
#include "fs_i.h"

static const char *const acl_names[] = {
	[MQFS_ACL_TYPE_ACCESS] = MQFS_ACL_ACCESS_XATTR,
	[MQFS_ACL_TYPE_DEFAULT] = MQFS_ACL_DEFAULT_XATTR,
};

bool mqfs_acl_hidden(struct mqfs_fs *fs, const char *name, size_t len)
{
	if (!fs->opts.noacl)
		return false;
	for (int type = MQFS_ACL_TYPE_ACCESS; type <= MQFS_ACL_TYPE_DEFAULT;
	     type++)
		if (strlen(acl_names[type]) == len &&
		    !memcmp(acl_names[type], name, len))
			return true;
	return false;
}

int mqfs_acl_refused(struct mqfs_fs *fs, const char *name)
{
	return mqfs_acl_hidden(fs, name, strlen(name)) ? -EOPNOTSUPP : 0;
}

int mqfs_acl_check(struct mqfs_fs *fs, int type, const void *value,
		   size_t size)
{
	if (type == MQFS_ACL_TYPE_NONE)
		return 0;
	if (fs->opts.noacl)
		return -EOPNOTSUPP;
	return mqfs_acl_valid(value, size);
}

static ssize_t acl_get_locked(struct mqfs_fs *fs, struct mqfs_ino *ip,
			      int type, void *buf, size_t size)
{
	const char *name = acl_names[type];

	if (!ip->d.xattr_blk)
		return -ENODATA;
	return mqfs_xattr_get_locked(fs, ip, name, strlen(name), buf, size);
}

static int acl_store_locked(struct mqfs_handle *h, struct mqfs_ino *ip,
			    int type, const void *value, size_t size)
{
	const char *name = acl_names[type];

	return mqfs_xattr_set_locked(h, ip, name, strlen(name), value, size,
				     0);
}

static int acl_drop_locked(struct mqfs_handle *h, struct mqfs_ino *ip,
			   int type)
{
	const char *name = acl_names[type];
	int err = 0;

	if (ip->d.xattr_blk)
		err = mqfs_xattr_remove_locked(h, ip, name, strlen(name));
	return err == -ENODATA ? 0 : err;
}

/* The permission bits of @ip become @perm (and S_ISGID may go). */
static void acl_set_mode(struct mqfs_ino *ip, mode_t perm, bool kill_sgid)
{
	pthread_mutex_lock(&ip->meta_lock);	/* mqfs_inode_stat reads it */
	ip->d.mode = (uint16_t)((ip->d.mode & ~(mode_t)MQFS_ACL_RWX_UGO) | perm);
	if (kill_sgid)
		ip->d.mode &= (uint16_t)~S_ISGID;
	pthread_mutex_unlock(&ip->meta_lock);
}

int mqfs_acl_set_locked(struct mqfs_handle *h, struct mqfs_ino *ip, int type,
			const void *value, size_t size, int flags)
{
	mode_t perm;
	int err;

	if (S_ISLNK(ip->d.mode))
		return -EOPNOTSUPP;	/* as the VFS: no ACLs on symlinks */
	if (type == MQFS_ACL_TYPE_DEFAULT)
		return S_ISDIR(ip->d.mode) ?
		       acl_store_locked(h, ip, type, value, size) : -EACCES;
	if (mqfs_acl_equiv_mode(value, size, &perm))
		err = acl_store_locked(h, ip, type, value, size);
	else
		err = acl_drop_locked(h, ip, type);
	if (!err)
		acl_set_mode(ip, perm, flags & MQFS_XATTR_ACL_KILL_SGID);
	return err;
}

int mqfs_acl_chmod_locked(struct mqfs_handle *h, struct mqfs_ino *ip)
{
	char buf[MQFS_ACL_SIZE(MQFS_ACL_MAX_ENTRIES)];
	ssize_t n = acl_get_locked(h->fs, ip, MQFS_ACL_TYPE_ACCESS, buf,
				   sizeof(buf));

	if (n == -ENODATA)
		return 0;
	if (n < 0)
		return (int)n;
	mqfs_acl_chmod(buf, (size_t)n, ip->d.mode);
	return acl_store_locked(h, ip, MQFS_ACL_TYPE_ACCESS, buf, (size_t)n);
}

/* @dir's default ACL into @buf: its size, 0 for none, or -errno. */
static ssize_t acl_default_of(struct mqfs_fs *fs, struct mqfs_ino *dir,
			      void *buf, size_t size)
{
	ssize_t n;

	if (fs->opts.noacl)
		return 0;
	n = acl_get_locked(fs, dir, MQFS_ACL_TYPE_DEFAULT, buf, size);
	if (n == -ENODATA)
		return 0;
	if (n > 0 && mqfs_acl_valid(buf, (size_t)n)) {
		mqfs_fs_error(fs, dir->d.xattr_blk, "acl: inode %llu: its "
			      "default ACL is not a valid ACL",
			      (unsigned long long)dir->ino);
		return -EUCLEAN;
	}
	return n;
}

int mqfs_acl_inherit(struct mqfs_handle *h, struct mqfs_ino *dir,
		     struct mqfs_ino *ip, mode_t umask)
{
	char buf[MQFS_ACL_SIZE(MQFS_ACL_MAX_ENTRIES)];
	mode_t mode = ip->d.mode;
	ssize_t n;
	int err = 0;

	if (S_ISLNK(mode))
		return 0;		/* no ACLs, no umask: always 0777 */
	n = acl_default_of(h->fs, dir, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (!n) {
		acl_set_mode(ip, mode & ~umask & MQFS_ACL_RWX_UGO, false);
		return 0;
	}
	if (S_ISDIR(mode))
		err = acl_store_locked(h, ip, MQFS_ACL_TYPE_DEFAULT, buf,
				       (size_t)n);
	if (!err && mqfs_acl_create(buf, (size_t)n, &mode))
		err = acl_store_locked(h, ip, MQFS_ACL_TYPE_ACCESS, buf,
				       (size_t)n);
	if (!err)
		acl_set_mode(ip, mode & MQFS_ACL_RWX_UGO, false);
	return err;
}
