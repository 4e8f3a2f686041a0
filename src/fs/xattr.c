// SPDX-License-Identifier: MIT
/*
 * xattr.c - extended attributes: the calls, the names, and the values
 * mqfs gives a meaning to.  Where they are stored, a chain of blocks
 * from d.xattr_blk, is xattr_chain.c's; a value takes up to
 * XATTR_SIZE_MAX bytes (E2BIG past it) and an inode as many attributes
 * as the disk has room for.
 *
 * Locking: ip->lock shared to read, exclusive to change.
 *
 * MQFS_CACHE_XATTR (user.mqfs.cache) is the cache policy: only its three
 * values are accepted; new files and directories get their directory's
 * in the creating transaction; the inode caches it (ip->policy).
 * MQFS_IOPRIO_XATTR (user.mqfs.ioprio) is the I/O priority policy, kept
 * the same way (ip->ioprio) and stored in its canonical form; who may
 * set rt is the front end's to check (it knows the caller).
 * system.posix_acl_access and _default are POSIX ACLs: set and
 * inherited through acl_fs.c, which keeps the mode in step.
 */
#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#include "mqfs/compiler.h"
#include "acl_i.h"
#include "fs_i.h"

#define XA_CANON_SIZE	16u	/* a policy's value in canonical form */

static const char *const xa_prefixes[] = {
	"user.", "trusted.", "security.", "system.",
};

/* Full names only, in a namespace the kernel knows; 0 or -errno. */
static int xa_check_name(const char *name, size_t *len)
{
	size_t i;

	*len = strlen(name);
	if (!*len || *len > MQFS_NAME_MAX)
		return -ERANGE;
	for (i = 0; i < MQ_ARRAY_SIZE(xa_prefixes); i++) {
		size_t plen = strlen(xa_prefixes[i]);

		if (!strncmp(name, xa_prefixes[i], plen))
			return *len > plen ? 0 : -EINVAL;
	}
	return -EOPNOTSUPP;
}

/* ---- the cache policy ---------------------------------------------------- */

static const char *const xa_policies[] = {
	[MQFS_CACHE_KERNEL] = "kernel",
	[MQFS_CACHE_NONE] = "none",
	[MQFS_CACHE_DONTCACHE] = "dontcache",
};

const char *mqfs_cache_mode_name(enum mqfs_cache_mode m)
{
	return m >= MQFS_CACHE_KERNEL && m <= MQFS_CACHE_DONTCACHE
		? xa_policies[m] : "unset";
}

static bool xa_is_policy(const char *name)
{
	return !strcmp(name, MQFS_CACHE_XATTR);
}

/* The mode @value names (a trailing NUL or newline allowed), or UNSET. */
static enum mqfs_cache_mode xa_policy_parse(const char *value, size_t size)
{
	while (size && (value[size - 1] == '\0' || value[size - 1] == '\n'))
		size--;
	for (unsigned m = MQFS_CACHE_KERNEL; m <= MQFS_CACHE_DONTCACHE; m++)
		if (strlen(xa_policies[m]) == size &&
		    !memcmp(xa_policies[m], value, size))
			return (enum mqfs_cache_mode)m;
	return MQFS_CACHE_UNSET;
}

enum mqfs_cache_mode mqfs_xattr_policy(struct mqfs_fs *fs,
				       struct mqfs_ino *ip)
{
	uint8_t cached = atomic_load(&ip->policy);
	enum mqfs_cache_mode m = MQFS_CACHE_UNSET;
	char v[16];
	ssize_t n = -ENODATA;

	if (cached)
		return (enum mqfs_cache_mode)(cached - 1);
	if (ip->d.xattr_blk)
		n = mqfs_xattr_get_locked(fs, ip, MQFS_CACHE_XATTR,
				  strlen(MQFS_CACHE_XATTR), v, sizeof(v));
	if (n > 0)
		m = xa_policy_parse(v, (size_t)n);
	/* An I/O error is not an answer: ask again next time. */
	if (n >= 0 || n == -ENODATA || n == -ERANGE)
		atomic_store(&ip->policy, (uint8_t)(m + 1));
	return m;
}

/* ---- the I/O priority policy ---------------------------------------------- */

static const char *const xa_ioprio_classes[] = {
	[MQ_PRIO_RT] = "rt", [MQ_PRIO_BE] = "be", [MQ_PRIO_IDLE] = "idle",
};

static bool xa_is_ioprio(const char *name)
{
	return !strcmp(name, MQFS_IOPRIO_XATTR);
}

int mqfs_ioprio_parse(const char *value, size_t size)
{
	while (size && (value[size - 1] == '\0' || value[size - 1] == '\n'))
		size--;
	for (int c = MQ_PRIO_RT; c <= MQ_PRIO_IDLE; c++) {
		size_t n = strlen(xa_ioprio_classes[c]);
		int level = 4;		/* the kernel's default level */

		if (size < n || memcmp(value, xa_ioprio_classes[c], n))
			continue;
		if (size == n + 2 && value[n] == ':' && c != MQ_PRIO_IDLE &&
		    value[n + 1] >= '0' && value[n + 1] <= '7')
			level = value[n + 1] - '0';
		else if (size != n)
			return -EINVAL;
		if (c == MQ_PRIO_IDLE)
			level = 0;	/* idle has no levels */
		return c << MQFS_IOPRIO_CLASS_SHIFT | level;
	}
	return -EINVAL;
}

size_t mqfs_ioprio_format(int ioprio, char *buf, size_t size)
{
	int c = ioprio >> MQFS_IOPRIO_CLASS_SHIFT;
	int n;

	if (c < MQ_PRIO_RT || c > MQ_PRIO_IDLE)
		n = snprintf(buf, size, "none");
	else if (c == MQ_PRIO_IDLE)
		n = snprintf(buf, size, "idle");
	else
		n = snprintf(buf, size, "%s:%d", xa_ioprio_classes[c],
			     ioprio & 7);
	return n < 0 ? 0 : MQ_MIN((size_t)n, size ? size - 1 : 0);
}

int mqfs_xattr_ioprio(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	uint16_t cached = atomic_load(&ip->ioprio);
	char v[16];
	ssize_t n = -ENODATA;
	int p = 0;

	if (cached)
		return cached - 1;
	if (ip->d.xattr_blk)
		n = mqfs_xattr_get_locked(fs, ip, MQFS_IOPRIO_XATTR,
				  strlen(MQFS_IOPRIO_XATTR), v, sizeof(v));
	if (n > 0)
		p = mqfs_ioprio_parse(v, (size_t)n);
	if (p < 0)
		p = 0;			/* not a value mqfs wrote: none */
	/* An I/O error is not an answer: ask again next time. */
	if (n >= 0 || n == -ENODATA || n == -ERANGE)
		atomic_store(&ip->ioprio, (uint16_t)(p + 1));
	return p;
}

/* ---- inheritance ------------------------------------------------------------ */

int mqfs_xattr_inherit(struct mqfs_handle *h, struct mqfs_ino *dir,
		       struct mqfs_ino *ip)
{
	enum mqfs_cache_mode m;
	char v[16];
	int err = 0, p;

	if (!S_ISREG(ip->d.mode) && !S_ISDIR(ip->d.mode))
		return 0;
	m = mqfs_xattr_policy(h->fs, dir);
	if (m != MQFS_CACHE_UNSET) {
		err = mqfs_xattr_set_locked(h, ip, MQFS_CACHE_XATTR,
				    strlen(MQFS_CACHE_XATTR), xa_policies[m],
				    strlen(xa_policies[m]), 0);
		if (!err)
			atomic_store(&ip->policy, (uint8_t)(m + 1));
	}
	p = mqfs_xattr_ioprio(h->fs, dir);
	if (!err && p) {
		err = mqfs_xattr_set_locked(h, ip, MQFS_IOPRIO_XATTR,
				    strlen(MQFS_IOPRIO_XATTR), v,
				    mqfs_ioprio_format(p, v, sizeof(v)), 0);
		if (!err)
			atomic_store(&ip->ioprio, (uint16_t)(p + 1));
	}
	return err;
}

/* ---- file capabilities --------------------------------------------------- */

#define XA_CAPS_NAME	"security.capability"
enum { XA_CAPS_UNKNOWN = 0, XA_CAPS_NONE, XA_CAPS_SOME };

static bool xa_is_caps(const char *name)
{
	return !strcmp(name, XA_CAPS_NAME);
}

bool mqfs_xattr_no_caps_cached(struct mqfs_ino *ip)
{
	return atomic_load(&ip->caps) == XA_CAPS_NONE;
}

bool mqfs_xattr_has_caps(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	uint8_t cached = atomic_load(&ip->caps);
	ssize_t n;

	if (!ip->d.xattr_blk) {
		/* Known now; setting the attribute makes it SOME (xa_done). */
		atomic_store(&ip->caps, XA_CAPS_NONE);
		return false;
	}
	if (cached)
		return cached == XA_CAPS_SOME;
	n = mqfs_xattr_get_locked(fs, ip, XA_CAPS_NAME, strlen(XA_CAPS_NAME),
				  NULL, 0);
	/* An I/O error is not an answer: ask again next time. */
	if (n >= 0 || n == -ENODATA)
		atomic_store(&ip->caps, n >= 0 ? XA_CAPS_SOME : XA_CAPS_NONE);
	return n >= 0;
}

/*
 * End an attribute change of @name made in @h (@err its result): on
 * success the cached policy becomes @policy (for the policy's name) or
 * the cached capability state follows (@removed), and ctime moves; the
 * inode and the handle close it.
 */
static int xa_done(struct mqfs_handle *h, struct mqfs_ino *ip, int err,
		   const char *name, bool removed, enum mqfs_cache_mode policy)
{
	if (!err && xa_is_policy(name))
		atomic_store(&ip->policy, (uint8_t)(policy + 1));
	if (!err && xa_is_caps(name))
		atomic_store(&ip->caps, removed ? XA_CAPS_NONE : XA_CAPS_SOME);
	if (!err && xa_is_ioprio(name))
		atomic_store(&ip->ioprio, 0);	/* read again at next open */
	if (!err) {
		mqfs_touch(ip, false, false, true);
		err = mqfs_inode_dirty(h, ip);
	}
	return mqfs_trans_finish(h, err);
}

/* ---- set ----------------------------------------------------------------- */

/*
 * What @name may hold: one of the policies' values (stored in canonical
 * form, in @canon), a valid ACL for the ACL names, anything else.
 */
static int xa_check_value(struct mqfs_fs *fs, const char *name,
			  const void **value, size_t *size, char *canon,
			  enum mqfs_cache_mode *policy)
{
	int p;

	if (xa_is_policy(name)) {
		*policy = xa_policy_parse(*value, *size);
		return *policy == MQFS_CACHE_UNSET ? -EINVAL : 0;
	}
	if (xa_is_ioprio(name)) {
		/* Stored as mqfs writes it ("be" becomes "be:4"). */
		p = mqfs_ioprio_parse(*value, *size);
		if (p < 0)
			return p;
		*size = mqfs_ioprio_format(p, canon, XA_CANON_SIZE);
		*value = canon;
		return 0;
	}
	return mqfs_acl_check(fs, mqfs_acl_type(name), *value, *size);
}

/* The credits of setting @name to @size bytes, or removing it (0). */
static unsigned xa_credits_locked(struct mqfs_fs *fs, struct mqfs_ino *ip,
				  const char *name, size_t len, size_t size)
{
	ssize_t old = mqfs_xattr_get_locked(fs, ip, name, len, NULL, 0);

	return mqfs_xattr_credits(len, size, old);
}

/* What no inode could store: a value past XATTR_SIZE_MAX, a long ACL. */
static int xa_check_size(const char *name, size_t len, size_t size)
{
	if (size > MQFS_XATTR_VALUE_MAX)
		return -E2BIG;
	/* An ACL is one whole entry, which fsck's check reads in place. */
	if (mqfs_acl_type(name) && mqfs_xattr_frags(len, size) > 1)
		return -E2BIG;
	return 0;
}

static int xa_set_once(struct mqfs_fs *fs, uint64_t ino, const char *name,
		       const void *value, size_t size, int flags)
{
	enum mqfs_cache_mode policy = MQFS_CACHE_UNSET;
	int how = flags & ~MQFS_XATTR_ACL_KILL_SGID, acl = mqfs_acl_type(name);
	struct mqfs_handle h;
	struct mqfs_ino *ip;
	char canon[XA_CANON_SIZE];
	size_t len;
	int err = xa_check_name(name, &len);

	if (!err)
		err = xa_check_value(fs, name, &value, &size, canon, &policy);
	if (!err && ((how & ~(XATTR_CREATE | XATTR_REPLACE)) ||
		     how == (XATTR_CREATE | XATTR_REPLACE)))
		err = -EINVAL;
	if (!err)
		err = xa_check_size(name, len, size);
	if (!err)
		err = mqfs_fs_writable(fs);
	if (!err)
		err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	pthread_rwlock_wrlock(&ip->lock);
	err = mqfs_trans_start(fs, xa_credits_locked(fs, ip, name, len, size),
			       &h);
	if (!err) {
		err = acl ? mqfs_acl_set_locked(&h, ip, acl, value, size, flags)
			  : mqfs_xattr_set_locked(&h, ip, name, len, value,
						  size, how);
		err = xa_done(&h, ip, err, name, false, policy);
	}
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return err;
}

int mqfs_setxattr(struct mqfs_fs *fs, uint64_t ino, const char *name,
		  const void *value, size_t size, int flags)
{
	bool retried = false;
	int err;

	do
		err = xa_set_once(fs, ino, name, value, size, flags);
	while (mqfs_retry_enospc(fs, err, &retried));
	return err;
}

ssize_t mqfs_getxattr(struct mqfs_fs *fs, uint64_t ino, const char *name,
		      void *value, size_t size)
{
	struct mqfs_ino *ip;
	size_t len;
	ssize_t ret;
	int err = xa_check_name(name, &len);

	if (!err)
		err = mqfs_acl_refused(fs, name);
	if (!err)
		err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	pthread_rwlock_rdlock(&ip->lock);
	ret = mqfs_xattr_get_locked(fs, ip, name, len, value, size);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return ret;
}

ssize_t mqfs_listxattr(struct mqfs_fs *fs, uint64_t ino, char *list,
		       size_t size)
{
	struct mqfs_ino *ip;
	ssize_t ret;
	int err = mqfs_iget(fs, ino, &ip);

	if (err)
		return err;
	pthread_rwlock_rdlock(&ip->lock);
	ret = mqfs_xattr_list_locked(fs, ip, list, size);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return ret;
}

int mqfs_removexattr(struct mqfs_fs *fs, uint64_t ino, const char *name)
{
	struct mqfs_handle h;
	struct mqfs_ino *ip;
	size_t len;
	int err = xa_check_name(name, &len);

	if (!err)
		err = mqfs_acl_refused(fs, name);
	if (!err)
		err = mqfs_fs_writable(fs);
	if (!err)
		err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	pthread_rwlock_wrlock(&ip->lock);
	err = ip->d.xattr_blk ? mqfs_trans_start(fs,
			xa_credits_locked(fs, ip, name, len, 0), &h) : -ENODATA;
	if (!err) {
		err = mqfs_xattr_remove_locked(&h, ip, name, len);
		err = xa_done(&h, ip, err, name, true, MQFS_CACHE_UNSET);
	}
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return err;
}

int mqfs_xattr_kill_caps(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	struct mqfs_handle h;
	int err;

	if (!mqfs_xattr_has_caps(fs, ip))
		return 0;
	err = mqfs_trans_start(fs, xa_credits_locked(fs, ip, XA_CAPS_NAME,
				strlen(XA_CAPS_NAME), 0), &h);
	if (err)
		return err;
	err = mqfs_xattr_remove_locked(&h, ip, XA_CAPS_NAME,
				       strlen(XA_CAPS_NAME));
	if (err == -ENODATA)
		err = 0;
	return xa_done(&h, ip, err, XA_CAPS_NAME, true, MQFS_CACHE_UNSET);
}
