/* SPDX-License-Identifier: MIT */
/*
 * ops.c - the FUSE operations: one thin handler per opcode that takes
 * the decoded request, calls include/mqfs/fs.h and answers it exactly
 * once (engine.c's mqfs_reply*).
 *
 * Two tables: the filesystem's, and the control surface's for requests
 * whose node is one of its inodes (ops_ctl.c, ctl.c): the routing is
 * done once, in mqfs_ops_dispatch.  Names in the root that the control
 * surface claims (.mqfs) are the only place the filesystem's handlers
 * look at it.
 *
 * Replies that hand the kernel a lookup count or an open file give it
 * back when the reply does not arrive (interrupted, connection gone).
 * Reads and writes are asynchronous: the handler submits and returns,
 * the completion answers (from the driver's reaper thread), so the queue
 * depth is not bounded by the number of workers.  The data moves
 * without a copy: writes go to the device from the request slot, reads
 * land in it and are answered from there.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "ops_i.h"

/* Scratch for replies that carry data, past anything the request holds. */
static char *req_scratch(const struct mqfs_req *r, size_t *cap)
{
	*cap = MQFS_SLOT_PAYLOAD - MQFS_SLOT_SCRATCH;
	return r->payload + MQFS_SLOT_SCRATCH;
}

static struct mqfs_file *file_of(uint64_t fh)
{
	return (struct mqfs_file *)(uintptr_t)fh;
}

/* Give back lookup counts: the filesystem's only (control: none kept). */
static void forget_ino(struct mqfs_daemon *d, uint64_t ino, uint64_t n)
{
	if (!mqfs_ctl_owns(&d->ctl, ino))
		mqfs_forget(d->fs, ino, n);
}

static void forget_one(void *arg, uint64_t ino)
{
	forget_ino(arg, ino, 1);
}

/* @name in @parent is the control surface's: 0 when it is not. */
static int ctl_name_err(struct mqfs_req *r, uint64_t parent, const char *name)
{
	struct mqfs_ctl *c = &r->d->ctl;

	if (!mqfs_ctl_claims(c, parent, name))
		return 0;
	return mqfs_ctl_owns(c, parent) ? -EPERM : -EEXIST;
}

/* ---- replies -------------------------------------------------------------- */

/* @e carries one lookup; it goes back if the kernel does not take it. */
static void reply_entry(struct mqfs_req *r, int ret, const struct mqfs_entry *e)
{
	if (ret < 0)
		mqfs_reply_err(r, ret);
	else if (mqfs_reply_entry(r, e, OPS_TIMEOUT))
		forget_ino(r->d, e->ino, 1);
}

static void reply_attr(struct mqfs_req *r, int ret, const struct stat *st)
{
	if (ret < 0)
		mqfs_reply_err(r, ret);
	else
		mqfs_reply_attr(r, st, OPS_TIMEOUT);
}

/* ---- names and attributes ----------------------------------------------- */

/*
 * "." comes only from a file handle the kernel no longer has an inode
 * for (fuse_get_dentry): the node is any inode number, of any type,
 * perhaps never looked up.  ".." of a directory, from a handle too
 * (fuse_get_parent), is the filesystem's usual lookup.
 */
static void op_lookup(struct mqfs_req *r)
{
	const char *name = r->m.name[0];
	struct mqfs_entry e;
	int ret;

	if (mqfs_ctl_claims(&r->d->ctl, req_ino(r), name)) {
		mqfs_ops_ctl_lookup(r);
		return;
	}
	if (!strcmp(name, "."))
		ret = mqfs_lookup_handle(r->d->fs, req_ino(r), &e);
	else
		ret = mqfs_lookup(r->d->fs, req_ino(r), name, &e);
	if (ret == -ENOENT)
		mqfs_reply_noent(r, OPS_TIMEOUT);
	else
		reply_entry(r, ret, &e);
}

static void op_forget(struct mqfs_req *r)
{
	const struct fuse_forget_in *in = req_arg(r);

	forget_ino(r->d, req_ino(r), in->nlookup);
	mqfs_reply_none(r);
}

static void op_batch_forget(struct mqfs_req *r)
{
	const struct fuse_forget_one *one = r->m.data;
	size_t n = r->m.data_len / sizeof(*one);

	for (size_t i = 0; i < n; i++)
		forget_ino(r->d, one[i].nodeid, one[i].nlookup);
	mqfs_reply_none(r);
}

/*
 * With the writeback cache a write(2) of a file whose attributes are
 * invalid asks for them first, with the writer's handle: the moment to
 * report a write-back of the file that failed (write_done).
 */
static void op_getattr(struct mqfs_req *r)
{
	const struct fuse_getattr_in *in = req_arg(r);
	struct stat st;
	int err = 0;

	if (in->getattr_flags & FUSE_GETATTR_FH && r->d->conn.writeback)
		err = mqfs_file_take_cache_error(file_of(in->fh));
	if (err)
		mqfs_reply_err(r, err);
	else
		reply_attr(r, mqfs_getattr(r->d->fs, req_ino(r), &st), &st);
}

/*
 * One that changes nothing is the VFS dropping privileges before a change
 * of content that carries no kill flag, fallocate say (DESIGN.md, INIT):
 * the kernel asks so of root only for capabilities.
 */
static void op_setattr(struct mqfs_req *r)
{
	struct stat attr, st;
	unsigned bits = mqfs_setattr_decode(req_arg(r), &attr);
	int err = bits ? 0 : mqfs_kill_priv(r->d->fs, req_ino(r),
					    r->m.h->uid != 0);

	if (err >= 0)
		err = mqfs_setattr(r->d->fs, req_ino(r), &attr, bits, &st);
	reply_attr(r, err, &st);
}

static void op_readlink(struct mqfs_req *r)
{
	size_t cap;
	char *buf = req_scratch(r, &cap);
	int ret = mqfs_readlink(r->d->fs, req_ino(r), buf, PATH_MAX + 1);

	if (ret < 0)
		mqfs_reply_err(r, ret);
	else
		mqfs_reply(r, buf, strlen(buf));
}

/*
 * Owner of a new inode: the caller's ids, with BSD group semantics in a
 * setgid directory (the group of the directory, and new directories stay
 * setgid).
 */
static int new_owner(struct mqfs_req *r, uint64_t parent, mode_t *mode,
		     uid_t *uid, gid_t *gid)
{
	struct stat dir;
	int ret = mqfs_getattr(r->d->fs, parent, &dir);

	if (ret)
		return ret;
	*uid = r->m.h->uid;
	*gid = r->m.h->gid;
	if (dir.st_mode & S_ISGID) {
		*gid = dir.st_gid;
		if (S_ISDIR(*mode))
			*mode |= S_ISGID;
	}
	return 0;
}

/*
 * The kernel sends the umask unapplied when ACLs are on (FUSE_DONT_MASK,
 * init.c): the filesystem applies it unless a default ACL decides.  The
 * kernel already dropped a requested S_ISGID the caller may not set in
 * a setgid directory (vfs_prepare_mode's mode_strip_sgid).
 */
static int make_node(struct mqfs_req *r, mode_t mode, mode_t umask,
		     dev_t rdev, struct mqfs_entry *e)
{
	uint64_t parent = req_ino(r);
	const char *name = r->m.name[0];
	uid_t uid;
	gid_t gid;
	int ret = ctl_name_err(r, parent, name);

	if (!ret)
		ret = new_owner(r, parent, &mode, &uid, &gid);
	if (ret)
		return ret;
	return mqfs_mknod_umask(r->d->fs, parent, name, mode, umask & 0777,
				rdev, uid, gid, e);
}

static void op_mknod(struct mqfs_req *r)
{
	const struct fuse_mknod_in *in = req_arg(r);
	struct mqfs_entry e;

	reply_entry(r, make_node(r, in->mode, in->umask, in->rdev, &e), &e);
}

static void op_mkdir(struct mqfs_req *r)
{
	const struct fuse_mkdir_in *in = req_arg(r);
	struct mqfs_entry e;

	reply_entry(r, make_node(r, S_IFDIR | (in->mode & 07777), in->umask, 0,
				 &e), &e);
}

static void op_symlink(struct mqfs_req *r)
{
	uint64_t parent = req_ino(r);
	const char *name = r->m.name[0];
	mode_t mode = S_IFLNK | 0777;
	struct mqfs_entry e;
	uid_t uid;
	gid_t gid;
	int ret = ctl_name_err(r, parent, name);

	if (!ret)
		ret = new_owner(r, parent, &mode, &uid, &gid);
	if (!ret)
		ret = mqfs_symlink(r->d->fs, parent, name, r->m.name[1], uid,
				   gid, &e);
	reply_entry(r, ret, &e);
}

static void op_link(struct mqfs_req *r)
{
	const struct fuse_link_in *in = req_arg(r);
	const char *name = r->m.name[0];
	struct mqfs_entry e;
	int ret;

	ret = mqfs_ctl_owns(&r->d->ctl, in->oldnodeid) ? -EPERM :
	      ctl_name_err(r, req_ino(r), name);
	if (!ret)
		ret = mqfs_link(r->d->fs, in->oldnodeid, req_ino(r), name, &e);
	reply_entry(r, ret, &e);
}

static void op_unlink(struct mqfs_req *r)
{
	const char *name = r->m.name[0];

	mqfs_reply_err(r, ctl_name_err(r, req_ino(r), name) ? -EPERM :
		       mqfs_unlink(r->d->fs, req_ino(r), name));
}

static void op_rmdir(struct mqfs_req *r)
{
	const char *name = r->m.name[0];

	mqfs_reply_err(r, ctl_name_err(r, req_ino(r), name) ? -EPERM :
		       mqfs_rmdir(r->d->fs, req_ino(r), name));
}

/*
 * RENAME_WHITEOUT's whiteout is a new inode at the old name, owned as a
 * node made there (the kernel checked CAP_MKNOD).
 */
static int rename_whiteout(struct mqfs_req *r, uint64_t newdir,
			   unsigned flags)
{
	mode_t mode = S_IFCHR;
	uid_t uid;
	gid_t gid;
	int ret = new_owner(r, req_ino(r), &mode, &uid, &gid);

	if (!ret)
		ret = mqfs_rename_whiteout(r->d->fs, req_ino(r), r->m.name[0],
					   newdir, r->m.name[1], flags, uid,
					   gid);
	return ret;
}

static void rename_common(struct mqfs_req *r, uint64_t newdir, unsigned flags)
{
	const char *name = r->m.name[0], *newname = r->m.name[1];
	int ret;

	if (ctl_name_err(r, req_ino(r), name) ||
	    ctl_name_err(r, newdir, newname))
		ret = -EPERM;
	else if (flags & RENAME_WHITEOUT)
		ret = rename_whiteout(r, newdir, flags);
	else
		ret = mqfs_rename(r->d->fs, req_ino(r), name, newdir, newname,
				  flags);
	mqfs_reply_err(r, ret);
}

static void op_rename(struct mqfs_req *r)
{
	const struct fuse_rename_in *in = req_arg(r);

	rename_common(r, in->newdir, 0);
}

static void op_rename2(struct mqfs_req *r)
{
	const struct fuse_rename2_in *in = req_arg(r);

	rename_common(r, in->newdir, in->flags);
}

/* ---- open files --------------------------------------------------------- */

/*
 * The flags the filesystem sees.  The kernel resolves O_APPEND offsets
 * itself (and with the writeback cache writes pages back at their own
 * offsets); with the writeback cache it also reads pages of files opened
 * write-only.
 */
/* ---- free space and the writeback limits -------------------------------- */

uint64_t mqfs_daemon_free_bytes(struct mqfs_daemon *d)
{
	struct statvfs st;

	if (mqfs_statfs(d->fs, &st))
		return 0;
	return (uint64_t)st.f_bavail * st.f_frsize;
}

/* Only the writeback cache holds writes the filesystem has not seen. */
static void follow_space(struct mqfs_daemon *d)
{
	if (d->conn.writeback)
		mqfs_bdi_follow(&d->bdi, mqfs_daemon_free_bytes(d));
}

static int open_flags(const struct mqfs_daemon *d, int flags)
{
	flags &= ~O_APPEND;
	if (d->conn.writeback && (flags & O_ACCMODE) == O_WRONLY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	return flags;
}

/*
 * The file's own policy (user.mqfs.cache) or the mount's cache= mode;
 * O_DIRECT always takes the direct way.  kernel: the page cache stays
 * valid across opens, as only the kernel changes the data.  none and
 * dontcache: FOPEN_DIRECT_IO, every read and write comes here, and
 * writes to one file may run in parallel (PARALLEL_DIRECT_WRITES: the
 * filesystem orders them itself); a shared mmap of such a file goes
 * through the page cache (DIRECT_IO_ALLOW_MMAP), which the kernel writes
 * back and invalidates around the direct I/O.  dontcache writes then go
 * through the write-behind, whose close (FUSE flush) writes them back.
 */
static uint32_t open_cache_flags(struct mqfs_daemon *d, struct mqfs_file *f,
				 int flags)
{
	enum mqfs_cache_mode m = mqfs_file_policy(d->fs, f);

	if (m == MQFS_CACHE_UNSET)
		m = d->cache;
	if (flags & O_DIRECT)
		m = MQFS_CACHE_NONE;
	if (m == MQFS_CACHE_DONTCACHE) {
		mqfs_file_set_dontcache(f);
		return FOPEN_DIRECT_IO | FOPEN_PARALLEL_DIRECT_WRITES;
	}
	/*
	 * Only write-behind needs the close: without the writeback cache
	 * (which ignores it) FOPEN_NOFLUSH saves a round trip per close.
	 */
	flags = d->conn.writeback ? 0 : FOPEN_NOFLUSH;
	if (m == MQFS_CACHE_KERNEL)
		return (uint32_t)flags | FOPEN_KEEP_CACHE;
	return (uint32_t)flags | FOPEN_DIRECT_IO | FOPEN_PARALLEL_DIRECT_WRITES;
}

static void op_open(struct mqfs_req *r)
{
	const struct fuse_open_in *in = req_arg(r);
	struct mqfs_daemon *d = r->d;
	struct mqfs_file *f = NULL;
	int ret = mqfs_open(d->fs, req_ino(r), open_flags(d, (int)in->flags),
			    &f);

	if (ret < 0) {
		mqfs_reply_err(r, ret);
		return;
	}
	if ((in->flags & O_ACCMODE) != O_RDONLY)
		follow_space(d);
	if (mqfs_reply_open(r, (uintptr_t)f,
			    open_cache_flags(d, f, (int)in->flags)))
		mqfs_release(d->fs, f);
}

/* O_TMPFILE: a file without a name in the node's directory (no links). */
static int make_tmpfile(struct mqfs_req *r, mode_t mode, mode_t umask,
			struct mqfs_entry *e)
{
	uid_t uid;
	gid_t gid;
	int ret = new_owner(r, req_ino(r), &mode, &uid, &gid);

	if (!ret)
		ret = mqfs_tmpfile(r->d->fs, req_ino(r), mode, umask & 0777,
				   uid, gid, e);
	return ret;
}

/* CREATE and TMPFILE: the new file, opened. */
static void create_open(struct mqfs_req *r, bool tmpfile)
{
	const struct fuse_create_in *in = req_arg(r);
	mode_t mode = S_IFREG | (in->mode & 07777);
	struct mqfs_daemon *d = r->d;
	struct mqfs_file *f = NULL;
	struct mqfs_entry e;
	uint32_t fopen;
	int ret;

	ret = tmpfile ? make_tmpfile(r, mode, in->umask, &e)
		      : make_node(r, mode, in->umask, 0, &e);
	if (!ret) {
		ret = mqfs_open(d->fs, e.ino, open_flags(d, (int)in->flags), &f);
		if (ret)
			forget_ino(d, e.ino, 1);
	}
	if (ret < 0) {
		mqfs_reply_err(r, ret);
		return;
	}
	fopen = open_cache_flags(d, f, (int)in->flags);
	follow_space(d);
	if (mqfs_reply_create(r, &e, OPS_TIMEOUT, (uintptr_t)f, fopen)) {
		mqfs_release(d->fs, f);
		forget_ino(d, e.ino, 1);
	}
}

static void op_create(struct mqfs_req *r)
{
	create_open(r, false);
}

static void op_tmpfile(struct mqfs_req *r)
{
	create_open(r, true);
}

/* ---- data ------------------------------------------------------------------ */

/* Completion of mqfs_read: any thread, possibly before it returned. */
static void read_done(void *arg, const void *data, ssize_t res)
{
	struct mqfs_req *r = arg;

	if (res < 0)
		mqfs_reply_err(r, (int)res);
	else
		mqfs_reply(r, data, (size_t)res);
	mqfs_req_complete(r);
}

/* Straight into the slot; an interrupt may answer it first. */
static void op_read(struct mqfs_req *r)
{
	const struct fuse_read_in *in = req_arg(r);
	size_t size = in->size;

	/* max_pages bounds the kernel's reads; this bounds anything else. */
	if (MQFS_READ_ROOM(in->offset, size) > MQFS_SLOT_PAYLOAD)
		size = MQFS_FUSE_MAX_WRITE;
	mqfs_req_async(r, true);
	mqfs_read(r->d->fs, file_of(in->fh), in->offset, size, r->payload,
		  &r->io, read_done, r);
}

/*
 * A write-back of the kernel's page cache ended: its writer was told
 * long ago that the write succeeded.  A failure is kept for the file's
 * next write(2), told to look (its attributes made invalid: it asks with
 * its handle, op_getattr), and fsync and close report it too (the
 * kernel's mapping error).  Then the dirty limit follows the space left.
 */
static void writeback_done(struct mqfs_req *r, ssize_t res)
{
	const struct fuse_write_in *in = req_arg(r);

	if (res < 0) {
		mqfs_file_set_cache_error(file_of(in->fh), (int)res);
		mqfs_notify_inval_attr(r, req_ino(r));
	}
	follow_space(r->d);
}

/*
 * A write stops short only on an error (space ran out, the device
 * failed, the largest file size): it is answered with that error.  The
 * kernel takes a short writeback write for a complete one (the missing
 * bytes would be lost without a word: with the error, fsync and close
 * fail, as on a local filesystem) and a short asynchronous direct write
 * (io_uring, libaio) for EIO, whatever the cause.  A synchronous one
 * returns the bytes of its earlier requests, or the error when its first
 * came short (a local filesystem would return the partial count: the
 * price, DESIGN.md section 17).  What was written stays, so the file may
 * have grown: the kernel is told to read its attributes again.
 */
static ssize_t write_short(struct mqfs_req *r)
{
	int err = r->io.short_err;

	if (!r->writeback)
		mqfs_notify_inval_attr(r, req_ino(r));
	return err ? err : -EIO;
}

static void write_done(void *arg, ssize_t res)
{
	struct mqfs_req *r = arg;
	struct fuse_write_out o = { 0 };

	if (res >= 0 && (size_t)res < r->size)
		res = write_short(r);
	if (r->writeback)
		writeback_done(r, res);
	if (res < 0) {
		mqfs_reply_err(r, (int)res);
	} else {
		o.size = (uint32_t)res;
		mqfs_reply(r, &o, sizeof(o));
	}
	mqfs_req_complete(r);
}

/*
 * From the slot, where the data is page-aligned: no copy.  A write drops
 * the file's capabilities, and for a writer without CAP_FSETID its
 * suid/sgid bits, first (mqfs handles kill-priv: FUSE_HANDLE_KILLPRIV_V2,
 * see init.c).
 */
static void op_write(struct mqfs_req *r)
{
	const struct fuse_write_in *in = req_arg(r);
	int err;

	err = mqfs_file_kill_priv(r->d->fs, file_of(in->fh),
				  in->write_flags & FUSE_WRITE_KILL_SUIDGID);
	if (err < 0) {
		mqfs_reply_err(r, err);
		return;
	}
	/* The kernel keeps the mode it had (writeback cache). */
	if (err)
		mqfs_notify_inval_attr(r, req_ino(r));
	r->writeback = in->write_flags & FUSE_WRITE_CACHE;
	/* The kernel stamps what it caches and sends the times after. */
	r->io.writeback = r->writeback;
	r->size = r->m.data_len;
	mqfs_req_async(r, false);
	mqfs_write(r->d->fs, file_of(in->fh), in->offset, r->m.data,
		   r->m.data_len, &r->io, write_done, r);
}

/*
 * close() is not a durability point (fsync is), but a dontcache file's
 * close writes its write-behind back and reports a lost write, as NFS
 * does (close-to-open).  Any other file's close owes nothing: without
 * the writeback cache it is opened FOPEN_NOFLUSH; with it (which ignores
 * that flag) ENOSYS tells the kernel to send no FLUSH again (it still
 * writes the file's dirty pages back first), a round trip saved on every
 * close.  From then on a dontcache file of a cache=kernel mount (by its
 * user.mqfs.cache) is written back by the flusher and fsync, as the
 * cached files are.
 */
static void op_flush(struct mqfs_req *r)
{
	const struct fuse_flush_in *in = req_arg(r);
	struct mqfs_file *f = file_of(in->fh);

	if (r->d->conn.writeback && !mqfs_file_is_dontcache(f))
		mqfs_reply_err(r, -ENOSYS);
	else
		mqfs_reply_err(r, mqfs_flush(r->d->fs, f));
}

static void op_release(struct mqfs_req *r)
{
	const struct fuse_release_in *in = req_arg(r);

	mqfs_reply_err(r, mqfs_release(r->d->fs, file_of(in->fh)));
}

static void op_fsync(struct mqfs_req *r)
{
	const struct fuse_fsync_in *in = req_arg(r);

	mqfs_reply_err(r, mqfs_fsync(r->d->fs, req_ino(r),
				     in->fsync_flags & FUSE_FSYNC_FDATASYNC));
}

static void op_fallocate(struct mqfs_req *r)
{
	const struct fuse_fallocate_in *in = req_arg(r);

	mqfs_reply_err(r, mqfs_fallocate(r->d->fs, req_ino(r), (int)in->mode,
					 in->offset, in->length));
}

/* Only SEEK_DATA and SEEK_HOLE come here; the kernel does the rest. */
static void op_lseek(struct mqfs_req *r)
{
	const struct fuse_lseek_in *in = req_arg(r);
	struct fuse_lseek_out o = { 0 };
	int ret = -EINVAL;

	/*
	 * With the writeback cache, dirty pages the kernel has not sent yet
	 * are data the filesystem cannot see: ENOSYS makes the kernel fall
	 * back to its generic lseek (all data, a hole at EOF) for this mount,
	 * which is coarse but never wrong.
	 */
	if (r->d->conn.writeback) {
		mqfs_reply_err(r, -ENOSYS);
		return;
	}
	if (in->whence == SEEK_DATA || in->whence == SEEK_HOLE)
		ret = mqfs_lseek(r->d->fs, req_ino(r), in->offset,
				 (int)in->whence, &o.offset);
	if (ret < 0)
		mqfs_reply_err(r, ret);
	else
		mqfs_reply(r, &o, sizeof(o));
}

/* ---- directories -------------------------------------------------------- */

/*
 * READDIR is stateless (the offset is the cookie), so a directory needs
 * no open: ENOSYS tells the kernel to send no OPENDIR or RELEASEDIR
 * again (fc->no_opendir), two round trips saved per directory listed
 * (find, rm -r, git status).  The control files' directories too.
 */
void mqfs_ops_opendir(struct mqfs_req *r)
{
	mqfs_reply_err(r, -ENOSYS);
}

static int rd_fill(void *ctx, const char *name, uint64_t ino, unsigned type,
		   uint64_t next, const struct mqfs_entry *e)
{
	return mqfs_dirbuf_add(ctx, name, ino, type, next, e) ? 0 : 1;
}

static void readdir_common(struct mqfs_req *r, bool plus)
{
	const struct fuse_read_in *in = req_arg(r);
	struct mqfs_daemon *d = r->d;
	bool ctl = mqfs_ctl_owns(&d->ctl, req_ino(r));
	struct mqfs_dirbuf b = { .plus = plus };
	int ret;

	b.buf = req_scratch(r, &b.size);
	b.size = MQ_MIN(b.size, (size_t)in->size);
	b.timeout = ctl ? OPS_CTL_TIMEOUT : OPS_TIMEOUT;
	if (ctl)
		ret = mqfs_ctl_readdir(&d->ctl, req_ino(r), in->offset, plus,
				       rd_fill, &b);
	else
		ret = mqfs_readdir(d->fs, req_ino(r), in->offset, plus,
				   rd_fill, &b);
	/* Entries already filled go out; the error comes at the next call. */
	if (ret < 0 && !b.len)
		mqfs_reply_err(r, ret);
	else if (mqfs_reply(r, b.buf, b.len))
		mqfs_dirbuf_forget(&b, forget_one, d);
}

void mqfs_ops_readdir(struct mqfs_req *r)
{
	readdir_common(r, false);
}

void mqfs_ops_readdirplus(struct mqfs_req *r)
{
	readdir_common(r, true);
}

void mqfs_ops_ok(struct mqfs_req *r)
{
	mqfs_reply_err(r, 0);
}

static void op_fsyncdir(struct mqfs_req *r)
{
	op_fsync(r);
}

/* ---- the filesystem and extended attributes ----------------------------- */

void mqfs_ops_statfs(struct mqfs_req *r)
{
	struct statvfs st;
	int ret = mqfs_statfs(r->d->fs, &st);

	if (ret < 0)
		mqfs_reply_err(r, ret);
	else
		mqfs_reply_statfs(r, &st);
}

static void op_syncfs(struct mqfs_req *r)
{
	mqfs_reply_err(r, mqfs_sync(r->d->fs));
}

/* Only fuseblk mounts get it; no request follows. */
static void op_destroy(struct mqfs_req *r)
{
	int ret = mqfs_is_readonly(r->d->fs) ? 0 : mqfs_sync(r->d->fs);

	if (ret)
		fprintf(stderr, "mqfs: sync at destroy: %s\n", strerror(-ret));
	mqfs_reply_err(r, 0);
}

/*
 * An rt I/O priority policy lifts every caller's I/O in the directory to
 * the real-time class: only who may ioprio_set(rt) may set it.
 */
static int setxattr_may(struct mqfs_req *r)
{
	int p;

	if (strcmp(r->m.name[0], MQFS_IOPRIO_XATTR))
		return 0;
	p = mqfs_ioprio_parse(r->m.data, r->m.data_len);
	if (p < 0 || mqfs_ioprio_class(p) != MQ_PRIO_RT ||
	    mqfs_ioprio_may_rt((pid_t)r->m.h->pid))
		return 0;		/* a bad value: the filesystem says EINVAL */
	return -EPERM;
}

static void op_setxattr(struct mqfs_req *r)
{
	const struct fuse_setxattr_in *in = req_arg(r);
	int flags = (int)in->flags, err = setxattr_may(r);

	/* Setting an access ACL drops S_ISGID where the kernel says so. */
	if (in->setxattr_flags & FUSE_SETXATTR_ACL_KILL_SGID)
		flags |= MQFS_XATTR_ACL_KILL_SGID;
	if (!err)
		err = mqfs_setxattr(r->d->fs, req_ino(r), r->m.name[0],
				    r->m.data, r->m.data_len, flags);
	mqfs_reply_err(r, err);
}

/* GETXATTR (@name) and LISTXATTR (NULL): the value or list, or its size. */
static void xattr_read(struct mqfs_req *r, const char *name)
{
	const struct fuse_getxattr_in *in = req_arg(r);
	size_t cap, size;
	char *buf = req_scratch(r, &cap);
	void *dst;
	ssize_t ret;

	size = MQ_MIN((size_t)in->size, cap);
	dst = size ? buf : NULL;
	ret = name ? mqfs_getxattr(r->d->fs, req_ino(r), name, dst, size)
		   : mqfs_listxattr(r->d->fs, req_ino(r), dst, size);
	mqfs_reply_xattr(r, ret, buf, size);
}

static void op_getxattr(struct mqfs_req *r)
{
	xattr_read(r, r->m.name[0]);
}

static void op_listxattr(struct mqfs_req *r)
{
	xattr_read(r, NULL);
}

static void op_removexattr(struct mqfs_req *r)
{
	mqfs_reply_err(r, mqfs_removexattr(r->d->fs, req_ino(r),
					   r->m.name[0]));
}

/* ---- the tables ------------------------------------------------------------ */

/* ACCESS is absent: default_permissions makes the kernel check. */
static const mqfs_op_fn fs_ops[MQFS_FUSE_OPCODE_MAX] = {
	[FUSE_LOOKUP] = op_lookup,
	[FUSE_FORGET] = op_forget,
	[FUSE_GETATTR] = op_getattr,
	[FUSE_SETATTR] = op_setattr,
	[FUSE_READLINK] = op_readlink,
	[FUSE_SYMLINK] = op_symlink,
	[FUSE_MKNOD] = op_mknod,
	[FUSE_MKDIR] = op_mkdir,
	[FUSE_UNLINK] = op_unlink,
	[FUSE_RMDIR] = op_rmdir,
	[FUSE_RENAME] = op_rename,
	[FUSE_LINK] = op_link,
	[FUSE_OPEN] = op_open,
	[FUSE_READ] = op_read,
	[FUSE_WRITE] = op_write,
	[FUSE_STATFS] = mqfs_ops_statfs,
	[FUSE_RELEASE] = op_release,
	[FUSE_FSYNC] = op_fsync,
	[FUSE_SETXATTR] = op_setxattr,
	[FUSE_GETXATTR] = op_getxattr,
	[FUSE_LISTXATTR] = op_listxattr,
	[FUSE_REMOVEXATTR] = op_removexattr,
	[FUSE_FLUSH] = op_flush,
	[FUSE_OPENDIR] = mqfs_ops_opendir,
	[FUSE_READDIR] = mqfs_ops_readdir,
	[FUSE_RELEASEDIR] = mqfs_ops_ok,
	[FUSE_FSYNCDIR] = op_fsyncdir,
	[FUSE_CREATE] = op_create,
	[FUSE_DESTROY] = op_destroy,
	[FUSE_BATCH_FORGET] = op_batch_forget,
	[FUSE_FALLOCATE] = op_fallocate,
	[FUSE_READDIRPLUS] = mqfs_ops_readdirplus,
	[FUSE_RENAME2] = op_rename2,
	[FUSE_LSEEK] = op_lseek,
	[FUSE_SYNCFS] = op_syncfs,
	[FUSE_TMPFILE] = op_tmpfile,
};

void mqfs_ops_dispatch(struct mqfs_req *r)
{
	uint32_t op = r->m.h->opcode;
	bool ctl = mqfs_ctl_owns(&r->d->ctl, req_ino(r));
	mqfs_op_fn fn = (ctl ? mqfs_ops_ctl : fs_ops)[op];

	if (fn)
		fn(r);
	else
		mqfs_reply_err(r, ctl && fs_ops[op] ? -EPERM : -ENOSYS);
}

void mqfs_daemon_init(struct mqfs_daemon *d, const struct mqfs_config *cfg)
{
	unsigned qd = cfg->queue.queue_depth ? cfg->queue.queue_depth : 128;

	*d = (struct mqfs_daemon){
		.plug = cfg->plug, .cache = cfg->cache,
		.acl = !cfg->mount.noacl,
		/* Enough background reads and writebacks to fill the queue. */
		.max_background = qd < 16 ? 16 : qd > 1024 ? 1024 : qd,
	};
	d->eng.done_fd = -1;
	d->transport = cfg->transport;
	mqfs_rings_init(&d->rings);
	mqfs_bdi_init(&d->bdi, cfg->bdi_max_ratio);
	mqfs_ioprio_init(&d->ioprio, NULL, NULL);
}

void mqfs_daemon_destroy(struct mqfs_daemon *d)
{
	mqfs_ctl_destroy(&d->ctl);
	mqfs_rings_destroy(&d->rings);
	mqfs_engine_destroy(&d->eng);
	mqfs_bdi_destroy(&d->bdi);
	mqfs_ioprio_destroy(&d->ioprio);
}
