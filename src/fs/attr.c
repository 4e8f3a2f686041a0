// SPDX-License-Identifier: MIT
/*
 * attr.c - the public attribute and open-file calls: getattr, setattr,
 * forget (in inode.c, beside the counts it drops), open and release.
 *
 * Locking: getattr takes the inode lock shared; setattr and an O_TRUNC
 * open take it exclusively, then a handle (the lock order of fs_i.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "fs_i.h"

#define ATTR_CHANGES	(MQFS_SET_MODE | MQFS_SET_UID | MQFS_SET_GID | \
			 MQFS_SET_SIZE | MQFS_SET_ATIME | MQFS_SET_MTIME | \
			 MQFS_SET_ATIME_NOW | MQFS_SET_MTIME_NOW | \
			 MQFS_SET_CTIME | MQFS_SET_KILL_SUIDGID)

int mqfs_getattr(struct mqfs_fs *fs, uint64_t ino, struct stat *st)
{
	struct mqfs_ino *ip;
	int err;

	err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	pthread_rwlock_rdlock(&ip->lock);
	mqfs_inode_stat(fs, ip, st);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return 0;
}

/* Truncate (ip->lock held exclusively); *changed: the size moved. */
static int attr_set_size(struct mqfs_fs *fs, struct mqfs_ino *ip,
			 uint64_t size, bool *changed)
{
	int err;

	*changed = false;
	if (S_ISDIR(ip->d.mode))
		return -EISDIR;
	if (!S_ISREG(ip->d.mode))
		return -EINVAL;
	/* Pending write-behind lands first: it may have extended the file. */
	mqfs_wback_sync_locked(fs, ip);
	if (size == ip->d.size)
		return 0;
	/* In-flight unlocked I/O must not land in blocks being freed. */
	mqfs_ino_dio_wait(fs, ip);
	err = mqfs_file_truncate(fs, ip, size);
	*changed = !err;
	return err;
}

static void attr_set_time(uint64_t *sec, uint32_t *nsec,
			  const struct timespec *ts)
{
	*sec = (uint64_t)ts->tv_sec;
	*nsec = (uint32_t)ts->tv_nsec;
}

/* Apply the non-size changes to ip->d (under meta_lock). */
static void attr_apply(struct mqfs_ino *ip, const struct stat *a,
		       unsigned to_set, bool size_changed)
{
	struct mqfs_inode *d = &ip->d;
	struct timespec now;
	uint64_t sec;
	uint32_t nsec;

	mqfs_now(&sec, &nsec);
	now.tv_sec = (time_t)sec;
	now.tv_nsec = nsec;
	pthread_mutex_lock(&ip->meta_lock);
	if (to_set & MQFS_SET_MODE)
		d->mode = (uint16_t)((d->mode & S_IFMT) | (a->st_mode & 07777));
	if (to_set & MQFS_SET_KILL_SUIDGID && !S_ISDIR(d->mode)) {
		d->mode &= (uint16_t)~S_ISUID;
		if (d->mode & S_IXGRP)
			d->mode &= (uint16_t)~S_ISGID;
	}
	if (to_set & MQFS_SET_UID)
		d->uid = a->st_uid;
	if (to_set & MQFS_SET_GID)
		d->gid = a->st_gid;
	if (to_set & MQFS_SET_ATIME_NOW)
		attr_set_time(&d->atime_sec, &d->atime_nsec, &now);
	else if (to_set & MQFS_SET_ATIME)
		attr_set_time(&d->atime_sec, &d->atime_nsec, &a->st_atim);
	if (to_set & MQFS_SET_MTIME_NOW)
		attr_set_time(&d->mtime_sec, &d->mtime_nsec, &now);
	else if (to_set & MQFS_SET_MTIME)
		attr_set_time(&d->mtime_sec, &d->mtime_nsec, &a->st_mtim);
	if (to_set & MQFS_SET_MTIME && !(to_set & MQFS_SET_MTIME_NOW))
		mqfs_clock_saw(d->mtime_sec, d->mtime_nsec);
	else if (size_changed)
		attr_set_time(&d->mtime_sec, &d->mtime_nsec, &now);
	if (to_set & MQFS_SET_CTIME) {
		attr_set_time(&d->ctime_sec, &d->ctime_nsec, &a->st_ctim);
		mqfs_clock_saw(d->ctime_sec, d->ctime_nsec);
	} else
		attr_set_time(&d->ctime_sec, &d->ctime_nsec, &now);
	pthread_mutex_unlock(&ip->meta_lock);
}

static int attr_write(struct mqfs_fs *fs, struct mqfs_ino *ip,
		      const struct stat *a, unsigned to_set, bool size_changed)
{
	bool chmod = to_set & MQFS_SET_MODE;
	struct mqfs_handle h;
	int err = mqfs_trans_start(fs, MQFS_CREDITS_INODE +
				   (chmod ? MQFS_ACL_CHMOD_CREDITS : 0), &h);

	if (err)
		return err;
	attr_apply(ip, a, to_set, size_changed);
	/* The access ACL's base entries follow the mode, in one commit. */
	err = chmod ? mqfs_acl_chmod_locked(&h, ip) : 0;
	if (!err)
		err = mqfs_inode_dirty(&h, ip);
	return mqfs_trans_finish(&h, err);
}

int mqfs_setattr(struct mqfs_fs *fs, uint64_t ino, const struct stat *attr,
		 unsigned to_set, struct stat *out)
{
	bool size_changed = false;
	struct mqfs_ino *ip;
	int err;

	/* Bits beyond ours (FUSE's file-handle hints) change nothing. */
	to_set &= ATTR_CHANGES;
	if (to_set) {
		err = mqfs_fs_writable(fs);
		if (err)
			return err;
	}
	err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	pthread_rwlock_wrlock(&ip->lock);
	if (to_set & MQFS_SET_SIZE)
		err = attr_set_size(fs, ip, (uint64_t)attr->st_size,
				    &size_changed);
	if (!err && to_set)
		err = attr_write(fs, ip, attr, to_set, size_changed);
	if (!err && to_set & MQFS_SET_KILL_SUIDGID)
		err = mqfs_xattr_kill_caps(fs, ip);
	if (!err && out)
		mqfs_inode_stat(fs, ip, out);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_iput(fs, ip);
	return err;
}

/* Caps only (a writer with CAP_FSETID): under the exclusive lock. */
static int attr_kill_caps(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	int err;

	mqfs_file_lock(ip, true);
	err = mqfs_xattr_kill_caps(fs, ip);	/* ctime with it */
	pthread_rwlock_unlock(&ip->lock);
	return err;
}

/* With @suid: a suid or an executable sgid bit to drop (meta_lock)? */
static bool attr_has_suid(struct mqfs_ino *ip, bool suid)
{
	uint16_t mode;

	if (!suid)
		return false;
	pthread_mutex_lock(&ip->meta_lock);
	mode = ip->d.mode;
	pthread_mutex_unlock(&ip->meta_lock);
	return mode & S_ISUID ||
	       (mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP);
}

/*
 * Every write asks.  The usual answer (nothing to drop) comes from the
 * mode and the cached capability state without the inode lock, which a
 * write-behind batch holds for the length of its I/O: taking it made
 * each dontcache write wait for the previous one's batch.
 */
static int attr_kill_priv(struct mqfs_fs *fs, struct mqfs_ino *ip, bool suid)
{
	struct stat none = { 0 };
	bool some;
	int err;

	some = attr_has_suid(ip, suid);
	if (!some && mqfs_xattr_no_caps_cached(ip))
		return 0;
	if (!some) {
		mqfs_file_lock(ip, false);
		some = mqfs_xattr_has_caps(fs, ip);
		pthread_rwlock_unlock(&ip->lock);
	}
	if (!some)
		return 0;
	if (suid)
		err = mqfs_setattr(fs, ip->ino, &none, MQFS_SET_KILL_SUIDGID,
				   NULL);
	else
		err = attr_kill_caps(fs, ip);
	return err ? err : 1;
}

int mqfs_file_kill_priv(struct mqfs_fs *fs, struct mqfs_file *f, bool suid)
{
	return attr_kill_priv(fs, f->ip, suid);
}

int mqfs_kill_priv(struct mqfs_fs *fs, uint64_t ino, bool suid)
{
	struct mqfs_ino *ip;
	int err;

	err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	err = S_ISREG(ip->d.mode) ? attr_kill_priv(fs, ip, suid) : 0;
	mqfs_iput(fs, ip);
	return err;
}

void mqfs_file_set_cache_error(struct mqfs_file *f, int err)
{
	atomic_store(&f->ip->cache_err, err);
}

int mqfs_file_take_cache_error(struct mqfs_file *f)
{
	if ((f->flags & O_ACCMODE) == O_RDONLY ||
	    !atomic_load_explicit(&f->ip->cache_err, memory_order_relaxed))
		return 0;
	return atomic_exchange(&f->ip->cache_err, 0);
}

/* O_TRUNC: empty a regular file and set its times (lock exclusive). */
static int attr_open_trunc(struct mqfs_fs *fs, struct mqfs_ino *ip)
{
	struct stat unused = { 0 };
	bool changed;
	int err;

	pthread_rwlock_wrlock(&ip->lock);
	err = attr_set_size(fs, ip, 0, &changed);
	if (!err && changed)
		err = attr_write(fs, ip, &unused, MQFS_SET_MTIME_NOW, true);
	pthread_rwlock_unlock(&ip->lock);
	return err;
}

int mqfs_open(struct mqfs_fs *fs, uint64_t ino, int flags,
	      struct mqfs_file **out)
{
	bool writing = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
	struct mqfs_file *f;
	struct mqfs_ino *ip;
	int err;

	*out = NULL;
	err = mqfs_iget(fs, ino, &ip);
	if (err)
		return err;
	if (writing && S_ISDIR(ip->d.mode))
		err = -EISDIR;
	else if (writing)
		err = mqfs_fs_writable(fs);
	if (!err && (flags & O_TRUNC) && S_ISREG(ip->d.mode))
		err = attr_open_trunc(fs, ip);
	f = err ? NULL : calloc(1, sizeof(*f));
	if (!err && !f)
		err = -ENOMEM;
	if (err) {
		mqfs_iput(fs, ip);
		return err;
	}
	f->ip = ip;
	f->flags = flags;
	mqfs_file_lock(ip, false);
	f->prio = (uint8_t)(mqfs_xattr_ioprio(fs, ip) >> MQFS_IOPRIO_CLASS_SHIFT);
	pthread_rwlock_unlock(&ip->lock);
	mqfs_ra_init(&f->ra, mqfs_file_read_device);
	mqfs_file_reads_init(f);
	mqfs_ino_open_inc(fs, ip);
	pthread_mutex_lock(&fs->files_lock);
	mq_list_add(&f->open_node, &fs->open_files);
	pthread_mutex_unlock(&fs->files_lock);
	*out = f;
	return 0;
}

int mqfs_release(struct mqfs_fs *fs, struct mqfs_file *f)
{
	pthread_mutex_lock(&fs->files_lock);
	mq_list_del_init(&f->open_node);
	pthread_mutex_unlock(&fs->files_lock);
	mqfs_file_reads_drain(fs, f);
	mqfs_ra_release(fs, &f->ra);
	mqfs_ino_open_dec(fs, f->ip);
	mqfs_iput(fs, f->ip);
	free(f);
	return 0;
}

/*
 * At unmount: the files whose RELEASE never came (the connection was
 * aborted: umount -f, fusectl's abort), as the kernel's last fput would
 * have released them.  Nothing else runs by then.
 */
void mqfs_release_all(struct mqfs_fs *fs)
{
	unsigned n = 0;

	for (;;) {
		struct mqfs_file *f = NULL;

		pthread_mutex_lock(&fs->files_lock);
		if (!mq_list_empty(&fs->open_files))
			f = mq_list_entry(fs->open_files.next,
					  struct mqfs_file, open_node);
		pthread_mutex_unlock(&fs->files_lock);
		if (!f)
			break;
		mqfs_release(fs, f);
		n++;
	}
	if (n)
		fprintf(stderr, "mqfs: %u files still open at unmount (the "
			"connection was aborted): released\n", n);
}
