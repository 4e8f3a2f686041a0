// SPDX-License-Identifier: MIT
/*
 * rename.c - mqfs_rename: both names found and all four inodes locked in
 * number order, the checks (flags, types, emptiness, a directory moved
 * under itself), then a plain move (leaving a whiteout at the old name
 * with RENAME_WHITEOUT) or an exchange in one handle.  Apart
 * from namei.c, the largest of the namespace calls and the only one that
 * takes fs->rename_lock; the helpers it shares with the others are in
 * namei_i.h, the locking rules in namei.c's header comment.
 */
#include <errno.h>
#include <stdio.h>

#include "namei_i.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE	(1u << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE		(1u << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT		(1u << 2)
#endif

struct nm_rename {
	struct mqfs_fs *fs;
	struct mqfs_ino *odp, *ndp;	/* old and new parent */
	struct mqfs_ino *oip, *nip;	/* source, target (NULL: none) */
	const char *oname, *nname;
	size_t olen, nlen;
	unsigned flags;
	uid_t wuid;			/* RENAME_WHITEOUT: its owner */
	gid_t wgid;
	struct mqfs_ino *wip;		/* the whiteout, dropped last */
	struct nm_set s;
};

/*
 * -EINVAL when @anc is @dir or one of its ancestors.  Parent pointers
 * change only in cross-directory renames, which hold fs->rename_lock
 * like our caller, so the chain read here is stable.
 */
static int nm_check_subtree(struct mqfs_fs *fs, struct mqfs_ino *dir,
			    uint64_t anc)
{
	uint64_t cur = dir->ino, parent = dir->d.parent, steps = 0;

	for (;;) {
		struct mqfs_ino *ip;
		int err;

		if (cur == anc)
			return -EINVAL;
		if (cur == MQFS_ROOT_INO)
			return 0;
		if (++steps > fs->inode_count) {
			mqfs_fs_error(fs, 0, "namei: parent loop above inode "
				      "%llu", (unsigned long long)dir->ino);
			return -EUCLEAN;
		}
		cur = parent;
		if (cur == anc || cur == MQFS_ROOT_INO)
			continue;
		err = mqfs_iget(fs, cur, &ip);
		if (err)
			return err;
		parent = ip->d.parent;
		mqfs_iput(fs, ip);
	}
}

/* Find both names and lock all four inodes; retry if entries moved. */
static int nm_rename_lock(struct nm_rename *r)
{
	for (;;) {
		int err = mqfs_nm_resolve(r->fs, r->odp, r->oname, r->olen,
					  false, &r->oip);

		if (!err)
			err = mqfs_nm_resolve(r->fs, r->ndp, r->nname, r->nlen,
					      true, &r->nip);
		if (err) {
			if (r->oip)
				mqfs_iput(r->fs, r->oip);
			r->oip = NULL;
			return err;
		}
		r->s.n = 0;
		mqfs_nm_set_add(&r->s, r->odp);
		mqfs_nm_set_add(&r->s, r->ndp);
		mqfs_nm_set_add(&r->s, r->oip);
		mqfs_nm_set_add(&r->s, r->nip);
		mqfs_nm_set_lock(&r->s);
		err = mqfs_nm_still(r->fs, r->odp, r->oname, r->olen, r->oip);
		if (!err)
			err = mqfs_nm_still(r->fs, r->ndp, r->nname, r->nlen,
					    r->nip);
		if (!err)
			return 0;
		mqfs_nm_set_unlock(&r->s);
		mqfs_iput(r->fs, r->oip);
		if (r->nip)
			mqfs_iput(r->fs, r->nip);
		r->oip = r->nip = NULL;
		if (err < 0)
			return err;
	}
}

static int nm_rename_check(struct nm_rename *r)
{
	bool cross = r->odp != r->ndp, xchg = r->flags & RENAME_EXCHANGE;
	bool odir = nm_is_dir(r->oip), ndir = r->nip && nm_is_dir(r->nip);
	int err;

	if (!r->odp->d.nlink || !r->ndp->d.nlink)
		return -ENOENT;
	if (r->nip && (r->flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (!r->nip && xchg)
		return -ENOENT;
	if (r->nip && !xchg) {
		if (odir != ndir)
			return odir ? -ENOTDIR : -EISDIR;
		err = ndir ? mqfs_dir_is_empty(r->fs, r->nip) : 1;
		if (err <= 0)
			return err ? err : -ENOTEMPTY;
	}
	if (!cross)
		return 0;
	err = odir ? nm_check_subtree(r->fs, r->ndp, r->oip->ino) : 0;
	if (!err && xchg && ndir)
		err = nm_check_subtree(r->fs, r->odp, r->nip->ino);
	if (err)
		return err;
	if (odir && !ndir && r->ndp->d.nlink >= NM_LINK_MAX)
		return -EMLINK;
	if (xchg && ndir && !odir && r->odp->d.nlink >= NM_LINK_MAX)
		return -EMLINK;
	return 0;
}

/* Directory @ip moves from @from to @to: its ".." link moves along. */
static void nm_move_dir(struct mqfs_ino *ip, struct mqfs_ino *from,
			struct mqfs_ino *to)
{
	pthread_mutex_lock(&ip->meta_lock);
	ip->d.parent = to->ino;
	pthread_mutex_unlock(&ip->meta_lock);
	nm_nlink_add(from, -1);
	nm_nlink_add(to, 1);
}

static int nm_rename_exchange(struct mqfs_handle *h, struct nm_rename *r)
{
	int err = mqfs_dir_replace(h, r->odp, r->oname, r->olen, r->nip->ino,
				   nm_dtype(r->nip));

	if (err)
		return err;
	err = mqfs_dir_replace(h, r->ndp, r->nname, r->nlen, r->oip->ino,
			       nm_dtype(r->oip));
	if (err) {
		mqfs_dir_replace(h, r->odp, r->oname, r->olen, r->oip->ino,
				 nm_dtype(r->oip));
		return err;
	}
	if (r->odp == r->ndp)
		return 0;
	if (nm_is_dir(r->oip))
		nm_move_dir(r->oip, r->odp, r->ndp);
	if (nm_is_dir(r->nip))
		nm_move_dir(r->nip, r->ndp, r->odp);
	return 0;
}

/*
 * The old name goes, or with RENAME_WHITEOUT names a new whiteout: a
 * character device 0/0 with no permission bits, as the kernel's
 * filesystems make it for overlayfs.
 */
static int nm_rename_leave(struct mqfs_handle *h, struct nm_rename *r)
{
	const struct nm_new wo = { .mode = S_IFCHR, .uid = r->wuid,
				   .gid = r->wgid };
	int err;

	if (!(r->flags & RENAME_WHITEOUT))
		return mqfs_dir_remove(h, r->odp, r->oname, r->olen);
	err = mqfs_nm_new_inode(h, r->odp, &wo, &r->wip);
	if (err)
		return err;
	err = mqfs_dir_replace(h, r->odp, r->oname, r->olen, r->wip->ino,
			       DT_CHR);
	if (err)
		mqfs_nm_orphan(h, r->wip);
	return err;
}

/* Plain rename (maybe over a target): new entry first, then the old. */
static int nm_rename_move(struct mqfs_handle *h, struct nm_rename *r)
{
	unsigned otype = nm_dtype(r->oip);
	int err;

	if (r->nip)
		err = mqfs_dir_replace(h, r->ndp, r->nname, r->nlen,
				       r->oip->ino, otype);
	else
		err = mqfs_dir_add(h, r->ndp, r->nname, r->nlen, r->oip->ino,
				   otype);
	if (err)
		return err;
	err = nm_rename_leave(h, r);
	if (err) {
		if (r->nip)
			mqfs_dir_replace(h, r->ndp, r->nname, r->nlen,
					 r->nip->ino, nm_dtype(r->nip));
		else
			mqfs_dir_remove(h, r->ndp, r->nname, r->nlen);
		return err;
	}
	if (r->nip) {
		if (nm_is_dir(r->nip))
			nm_nlink_add(r->ndp, -1);
		err = mqfs_nm_drop_link(h, r->nip);
	}
	if (nm_is_dir(r->oip) && r->odp != r->ndp)
		nm_move_dir(r->oip, r->odp, r->ndp);
	return err;
}

/* A whiteout is a new inode in the same handle. */
static unsigned nm_rename_credits(const struct nm_rename *r)
{
	unsigned extra = r->flags & RENAME_WHITEOUT ? NM_CREATE_CREDITS : 0;

	return nm_credits(r->fs, true, NM_RENAME_CREDITS + extra);
}

static int nm_rename_locked(struct nm_rename *r)
{
	struct mqfs_handle h;
	int err;

	if (r->oip == r->nip)	/* two links of one inode: nothing to do */
		return r->flags & RENAME_NOREPLACE ? -EEXIST : 0;
	err = nm_rename_check(r);
	if (!err)
		err = mqfs_trans_start(r->fs, nm_rename_credits(r), &h);
	if (err)
		return err;
	if (r->flags & RENAME_EXCHANGE)
		err = nm_rename_exchange(&h, r);
	else
		err = nm_rename_move(&h, r);
	if (err)
		return mqfs_trans_finish(&h, err);
	mqfs_touch(r->oip, false, false, true);
	if (r->nip)
		mqfs_touch(r->nip, false, false, true);
	mqfs_touch(r->odp, false, true, true);
	mqfs_touch(r->ndp, false, true, true);
	return mqfs_trans_finish(&h, mqfs_nm_set_dirty(&h, &r->s));
}

static int nm_rename_names(const char *name, const char *newname,
			   size_t *olen, size_t *nlen, unsigned flags)
{
	int err;

	if ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) ||
	    (flags & RENAME_EXCHANGE &&
	     flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)))
		return -EINVAL;
	err = nm_name(name, olen);
	if (!err)
		err = nm_name(newname, nlen);
	if (!err && (nm_is_dot(name) || nm_is_dot(newname)))
		err = -EBUSY;
	return err;
}

static int nm_rename_once(struct nm_rename r, uint64_t parent,
			  uint64_t newparent)
{
	struct mqfs_fs *fs = r.fs;
	int err = nm_rename_names(r.oname, r.nname, &r.olen, &r.nlen, r.flags);

	if (!err)
		err = mqfs_fs_writable(fs);
	if (!err)
		err = nm_iget_dir(fs, parent, &r.odp);
	if (err)
		return err;
	err = nm_iget_dir(fs, newparent, &r.ndp);
	if (err) {
		mqfs_iput(fs, r.odp);
		return err;
	}
	if (r.odp != r.ndp)
		pthread_mutex_lock(&fs->rename_lock);
	err = nm_rename_lock(&r);
	if (!err) {
		err = nm_rename_locked(&r);
		mqfs_nm_set_unlock(&r.s);
	}
	if (r.odp != r.ndp)
		pthread_mutex_unlock(&fs->rename_lock);
	if (r.nip)
		mqfs_iput(fs, r.nip);
	if (r.oip)
		mqfs_iput(fs, r.oip);
	if (r.wip)
		mqfs_iput(fs, r.wip);
	mqfs_iput(fs, r.ndp);
	mqfs_iput(fs, r.odp);
	return err;
}

static int nm_rename(const struct nm_rename *r, uint64_t parent,
		     uint64_t newparent)
{
	bool retried = false;
	int err;

	do
		err = nm_rename_once(*r, parent, newparent);
	while (mqfs_retry_enospc(r->fs, err, &retried));
	return err;
}

int mqfs_rename(struct mqfs_fs *fs, uint64_t parent, const char *name,
		uint64_t newparent, const char *newname, unsigned flags)
{
	const struct nm_rename r = { .fs = fs, .oname = name,
				     .nname = newname, .flags = flags };

	/* A whiteout needs an owner: mqfs_rename_whiteout. */
	return flags & RENAME_WHITEOUT ? -EINVAL : nm_rename(&r, parent,
							      newparent);
}

int mqfs_rename_whiteout(struct mqfs_fs *fs, uint64_t parent,
			 const char *name, uint64_t newparent,
			 const char *newname, unsigned flags, uid_t uid,
			 gid_t gid)
{
	const struct nm_rename r = { .fs = fs, .oname = name,
				     .nname = newname, .flags = flags,
				     .wuid = uid, .wgid = gid };

	return flags & RENAME_WHITEOUT ? nm_rename(&r, parent, newparent) :
					 -EINVAL;
}
