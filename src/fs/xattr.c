// SPDX-License-Identifier: MIT
/*
 * xattr.c - extended attributes: at most one MQFS_T_XATTR block per
 * inode (d.xattr_blk), entries packed after a small header (FORMAT.md,
 * "Extended attributes").  One block keeps every attribute call to a
 * single metadata read; what does not fit gets ENOSPC, and a value that
 * could never fit, E2BIG.
 *
 * Locking: ip->lock shared to read, exclusive to change; the buffer
 * lock around every look at the block's bytes.  The block is allocated
 * with the first attribute and freed with the last.  d.blocks counts
 * it, like ext4's i_blocks counts its xattr block.
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

#define XA_BASE		(MQFS_HDR_SIZE + sizeof(struct mqfs_xattr_hdr))
#define XA_ENT_LEN(nl, vl) \
	((MQFS_XATTR_ENTRY_HDR + (nl) + (vl) + 3u) & ~3u)
#define XA_CREDITS	5u	/* xattr block, inode, bitmap, AG header, sb */
#define XA_CANON_SIZE	16u	/* a policy's value in canonical form */

/* The packed entry of format.h; @name is followed by the value. */
struct xa_ent {
	uint8_t name_len;
	uint8_t reserved;
	uint16_t value_len;
	char name[];
};
_Static_assert(sizeof(struct xa_ent) == MQFS_XATTR_ENTRY_HDR, "xa_ent");

static const char *const xa_prefixes[] = {
	"user.", "trusted.", "security.", "system.",
};

static struct mqfs_xattr_hdr *xa_hdr(void *data)
{
	return (struct mqfs_xattr_hdr *)((char *)data + MQFS_HDR_SIZE);
}

/* Entry at byte @off of the entry area. */
static struct xa_ent *xa_ent(void *data, unsigned off)
{
	return (struct xa_ent *)((char *)data + XA_BASE + off);
}

static unsigned xa_len(const struct xa_ent *e)
{
	return XA_ENT_LEN(e->name_len, e->value_len);
}

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

/*
 * Do the header and the entries agree?  (The checksum was verified.)
 * Pure, on the block's bytes: fsck applies the same rule, so a block
 * the daemon refuses is one fsck repairs.
 */
const char *mqfs_xattr_why_bad(const void *data)
{
	const struct mqfs_xattr_hdr *xh = xa_hdr((void *)data);
	unsigned off = 0, i;

	if (!xh->count || xh->used > MQFS_XATTR_SPACE)
		return "has impossible counts";
	for (i = 0; i < xh->count; i++) {
		const struct xa_ent *e = xa_ent((void *)data, off);

		if (off + MQFS_XATTR_ENTRY_HDR > xh->used)
			return "has fewer entries than it counts";
		if (!e->name_len || off + xa_len(e) > xh->used)
			return "has an entry that runs past its end";
		off += xa_len(e);
	}
	return off == xh->used ? NULL : "has more bytes than its entries";
}

static int xa_verify(struct mqfs_fs *fs, struct mqfs_ino *ip,
		     struct mqfs_buf *b)
{
	const char *why = mqfs_xattr_why_bad(b->data);

	if (!why)
		return 0;
	mqfs_fs_error(fs, b->blocknr, "xattr: inode %llu: the block %s",
		      (unsigned long long)ip->ino, why);
	return -EUCLEAN;
}

/* Offset of the entry called @name, or -ENODATA. */
static int xa_find(void *data, const char *name, size_t len)
{
	const struct mqfs_xattr_hdr *xh = xa_hdr(data);
	unsigned off;

	for (off = 0; off < xh->used; off += xa_len(xa_ent(data, off))) {
		const struct xa_ent *e = xa_ent(data, off);

		if (e->name_len == len && !memcmp(e->name, name, len))
			return (int)off;
	}
	return -ENODATA;
}

/* Read, lock and check the inode's attribute block. */
static int xa_read_locked(struct mqfs_fs *fs, struct mqfs_ino *ip,
			  struct mqfs_buf **out)
{
	int err;

	if (!ip->d.xattr_blk)
		return -ENODATA;
	err = mqfs_buf_read(fs, ip->d.xattr_blk, MQFS_T_XATTR, out);
	if (err)
		return err;
	mqfs_buf_lock(*out);
	err = xa_verify(fs, ip, *out);
	if (err) {
		mqfs_buf_unlock(*out);
		mqfs_buf_put(*out);
	}
	return err;
}

static void xa_release(struct mqfs_buf *b)
{
	mqfs_buf_unlock(b);
	mqfs_buf_put(b);
}

static void xa_append(void *data, const char *name, size_t len,
		      const void *value, size_t size)
{
	struct mqfs_xattr_hdr *xh = xa_hdr(data);
	struct xa_ent *e = xa_ent(data, xh->used);
	unsigned elen = XA_ENT_LEN(len, size);

	e->name_len = (uint8_t)len;
	e->reserved = 0;
	e->value_len = (uint16_t)size;
	memcpy(e->name, name, len);
	if (size)
		memcpy(e->name + len, value, size);
	memset(e->name + len + size, 0,
	       elen - MQFS_XATTR_ENTRY_HDR - len - size);
	xh->used += elen;
	xh->count++;
}

static void xa_delete(void *data, unsigned off)
{
	struct mqfs_xattr_hdr *xh = xa_hdr(data);
	unsigned elen = xa_len(xa_ent(data, off));
	char *at = (char *)xa_ent(data, off);

	memmove(at, at + elen, xh->used - off - elen);
	xh->used -= elen;
	xh->count--;
	memset((char *)xa_ent(data, xh->used), 0, elen);
}

/* The value of @name in the (valid) block @data: its entry's offset. */
int mqfs_xattr_lookup(void *data, const char *name, const void **value,
		      size_t *size)
{
	int off = xa_find(data, name, strlen(name));
	const struct xa_ent *e;

	if (off < 0)
		return off;
	e = xa_ent(data, (unsigned)off);
	*value = e->name + e->name_len;
	*size = e->value_len;
	return off;
}

/* Remove the entry at @off of @data (fsck: the daemon has its own path). */
unsigned mqfs_xattr_cut(void *data, unsigned off)
{
	xa_delete(data, off);
	return xa_hdr(data)->count;
}

/* ---- set --------------------------------------------------------------- */

static int xa_new_block(struct mqfs_handle *h, struct mqfs_ino *ip,
			const char *name, size_t len, const void *value,
			size_t size)
{
	struct mqfs_fs *fs = h->fs;
	uint64_t goal = (ip->ino - 1) / fs->inodes_per_ag * (uint64_t)fs->ag_blocks;
	struct mqfs_buf *b;
	uint64_t blk;
	uint32_t got;
	int err = mqfs_alloc_blocks(h, goal, 1, &blk, &got);

	if (err)
		return err;
	err = mqfs_buf_new(fs, blk, MQFS_T_XATTR, &b);
	if (err) {
		mqfs_free_blocks(h, blk, 1);
		return err;
	}
	mqfs_buf_lock(b);
	xa_append(b->data, name, len, value, size);
	mqfs_trans_dirty(h, b);
	xa_release(b);
	pthread_mutex_lock(&ip->meta_lock);	/* mqfs_inode_stat reads it */
	ip->d.xattr_blk = blk;
	ip->d.blocks++;
	pthread_mutex_unlock(&ip->meta_lock);
	return 0;
}

int mqfs_xattr_set_locked(struct mqfs_handle *h, struct mqfs_ino *ip,
			 const char *name, size_t len, const void *value,
			 size_t size, int flags)
{
	struct mqfs_buf *b;
	unsigned old = 0;
	int off, err;

	if (!ip->d.xattr_blk)
		return flags & XATTR_REPLACE ? -ENODATA :
		       xa_new_block(h, ip, name, len, value, size);
	err = xa_read_locked(h->fs, ip, &b);
	if (err)
		return err;
	off = xa_find(b->data, name, len);
	if (off >= 0 && (flags & XATTR_CREATE))
		err = -EEXIST;
	else if (off < 0 && (flags & XATTR_REPLACE))
		err = -ENODATA;
	if (off >= 0)
		old = xa_len(xa_ent(b->data, (unsigned)off));
	if (!err && xa_hdr(b->data)->used - old + XA_ENT_LEN(len, size) >
		    MQFS_XATTR_SPACE)
		err = -ENOSPC;
	if (!err) {
		if (off >= 0)
			xa_delete(b->data, (unsigned)off);
		xa_append(b->data, name, len, value, size);
		mqfs_trans_dirty(h, b);
	}
	xa_release(b);
	return err;
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

/* *allocs: the attempt needed a new block (its ENOSPC may pass). */
static int xa_set_once(struct mqfs_fs *fs, uint64_t ino, const char *name,
		       const void *value, size_t size, int flags,
		       bool *allocs)
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
	if (!err && (size > MQFS_XATTR_SPACE ||
		     XA_ENT_LEN(len, size) > MQFS_XATTR_SPACE))
		err = -E2BIG;
	if (!err)
		err = mqfs_fs_writable(fs);
	if (!err)
		err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	pthread_rwlock_wrlock(&ip->lock);
	*allocs = !ip->d.xattr_blk;
	err = mqfs_trans_start(fs, XA_CREDITS, &h);
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
	bool retried = false, allocs = false;
	int err;

	/* A full xattr block is ENOSPC too, and no commit frees room in it. */
	do
		err = xa_set_once(fs, ino, name, value, size, flags, &allocs);
	while (allocs && mqfs_retry_enospc(fs, err, &retried));
	return err;
}

/* ---- get and list ------------------------------------------------------ */

ssize_t mqfs_xattr_get_locked(struct mqfs_fs *fs, struct mqfs_ino *ip,
			     const char *name, size_t len, void *value,
			     size_t size)
{
	struct mqfs_buf *b;
	ssize_t ret;
	int off = xa_read_locked(fs, ip, &b);

	if (off)
		return off;
	off = xa_find(b->data, name, len);
	if (off < 0) {
		ret = off;
	} else {
		const struct xa_ent *e = xa_ent(b->data, (unsigned)off);

		ret = e->value_len;
		if (size && size < e->value_len)
			ret = -ERANGE;
		else if (size)
			memcpy(value, e->name + e->name_len, e->value_len);
	}
	xa_release(b);
	return ret;
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

/* Names, each NUL-terminated; @size 0 only measures. */
static ssize_t xa_list_locked(struct mqfs_fs *fs, struct mqfs_ino *ip,
			      char *list, size_t size)
{
	struct mqfs_buf *b;
	size_t total = 0;
	unsigned off;
	int err = xa_read_locked(fs, ip, &b);

	if (err)
		return err == -ENODATA ? 0 : err;
	for (off = 0; off < xa_hdr(b->data)->used;
	     off += xa_len(xa_ent(b->data, off))) {
		const struct xa_ent *e = xa_ent(b->data, off);

		if (mqfs_acl_hidden(fs, e->name, e->name_len))
			continue;
		if (size && total + e->name_len + 1 > size) {
			xa_release(b);
			return -ERANGE;
		}
		if (size) {
			memcpy(list + total, e->name, e->name_len);
			list[total + e->name_len] = '\0';
		}
		total += e->name_len + 1u;
	}
	xa_release(b);
	return (ssize_t)total;
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
	ret = xa_list_locked(fs, ip, list, size);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return ret;
}

/* ---- remove ------------------------------------------------------------ */

/* Give the block back (last attribute gone, or the inode is deleted). */
static int xa_free_block(struct mqfs_handle *h, struct mqfs_ino *ip)
{
	uint64_t blk = ip->d.xattr_blk;
	int err = mqfs_free_blocks(h, blk, 1);

	if (err)
		return err;
	mqfs_buf_forget(h->fs, blk);
	pthread_mutex_lock(&ip->meta_lock);	/* mqfs_inode_stat reads it */
	ip->d.xattr_blk = 0;
	if (ip->d.blocks)
		ip->d.blocks--;
	pthread_mutex_unlock(&ip->meta_lock);
	return 0;
}

int mqfs_xattr_remove_locked(struct mqfs_handle *h, struct mqfs_ino *ip,
			    const char *name, size_t len)
{
	struct mqfs_buf *b;
	bool last = false;
	int off = xa_read_locked(h->fs, ip, &b);

	if (off)
		return off;
	off = xa_find(b->data, name, len);
	if (off >= 0 && xa_hdr(b->data)->count == 1) {
		last = true;	/* the block goes; leave its bytes alone */
	} else if (off >= 0) {
		xa_delete(b->data, (unsigned)off);
		mqfs_trans_dirty(h, b);
	}
	xa_release(b);
	if (off < 0)
		return off;
	return last ? xa_free_block(h, ip) : 0;
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
	err = ip->d.xattr_blk ? mqfs_trans_start(fs, XA_CREDITS, &h) : -ENODATA;
	if (!err) {
		err = mqfs_xattr_remove_locked(&h, ip, name, len);
		err = xa_done(&h, ip, err, name, true, MQFS_CACHE_UNSET);
	}
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return err;
}

/* The inode is being deleted: free its block; the caller writes @ip. */
int mqfs_xattr_drop(struct mqfs_handle *h, struct mqfs_ino *ip)
{
	return ip->d.xattr_blk ? xa_free_block(h, ip) : 0;
}

int mqfs_xattr_kill_caps(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	struct mqfs_handle h;
	int err;

	if (!mqfs_xattr_has_caps(fs, ip))
		return 0;
	err = mqfs_trans_start(fs, XA_CREDITS, &h);
	if (err)
		return err;
	err = mqfs_xattr_remove_locked(&h, ip, XA_CAPS_NAME,
				       strlen(XA_CAPS_NAME));
	if (err == -ENODATA)
		err = 0;
	return xa_done(&h, ip, err, XA_CAPS_NAME, true, MQFS_CACHE_UNSET);
}
