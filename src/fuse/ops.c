/* SPDX-License-Identifier: MIT */
/*
 * ops.c - the FUSE low-level operations: one thin handler per request
 * that decodes it, calls include/mqfs/fs.h inside a block-layer plug, and
 * answers it exactly once.
 *
 * Error replies all go through reply_err(), which turns the core's
 * negative errno into fuse_reply_err().  Replies that hand the kernel a
 * lookup count or an open file give it back when the reply does not
 * arrive (interrupted request, connection gone), as libfuse's high-level
 * layer does.  Reads and writes are asynchronous: the handler submits
 * and returns, the completion replies (from the driver's reaper thread),
 * so the queue depth is not bounded by the number of FUSE threads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuse_i.h"

#define OPS_PLUG_IOS	32
#define OPS_MAX_WRITE	(1u << 20)
/*
 * Entry and attribute timeout, seconds.  The kernel is the only way to
 * change a mounted mqfs and it invalidates what it changes, so cached
 * names and attributes stay right for as long as it keeps them.
 */
#define OPS_TIMEOUT	60.0
/* Control names come and go with the elevator (queue/iosched/). */
#define OPS_CTL_TIMEOUT	1.0

/* One request's context: the daemon, the filesystem, the plug. */
struct op {
	struct mqfs_daemon *d;
	struct mqfs_fs *fs;
	struct mq_plug plug;
};

static void op_start(struct op *o, fuse_req_t req)
{
	o->d = fuse_req_userdata(req);
	o->fs = o->d->fs;
	if (o->d->plug)
		mq_start_plug(&o->plug, OPS_PLUG_IOS);
}

static void op_finish(struct op *o)
{
	if (o->d->plug)
		mq_finish_plug(&o->plug);
}

/*
 * The control surface (ctl.c) when @ino is one of its inodes, else NULL:
 * the handlers dispatch on it before starting a plug.
 */
static struct mqfs_ctl *ctl_ino(fuse_req_t req, uint64_t ino)
{
	struct mqfs_daemon *d = fuse_req_userdata(req);

	return mqfs_ctl_owns(&d->ctl, ino) ? &d->ctl : NULL;
}

/* @name in @parent belongs to the control surface: 0 when it does not. */
static int ctl_name_err(fuse_req_t req, uint64_t parent, const char *name)
{
	struct mqfs_daemon *d = fuse_req_userdata(req);

	if (!mqfs_ctl_claims(&d->ctl, parent, name))
		return 0;
	return mqfs_ctl_owns(&d->ctl, parent) ? -EPERM : -EEXIST;
}

/* Give back lookup counts: the filesystem's only (control: none kept). */
static void forget_ino(fuse_req_t req, uint64_t ino, uint64_t nlookup)
{
	struct mqfs_daemon *d = fuse_req_userdata(req);

	if (!mqfs_ctl_owns(&d->ctl, ino))
		mqfs_forget(d->fs, ino, nlookup);
}

/* ---- replies ------------------------------------------------------------ */

/* The one place a negative errno (or 0: success, no data) is answered. */
static void reply_err(fuse_req_t req, int ret)
{
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

static void entry_param(const struct mqfs_entry *e,
			struct fuse_entry_param *ep)
{
	*ep = (struct fuse_entry_param){
		.ino = e->ino, .generation = e->generation, .attr = e->st,
		.attr_timeout = OPS_TIMEOUT, .entry_timeout = OPS_TIMEOUT,
	};
}

/* @e carries one lookup; it goes back if the kernel does not take it. */
static void reply_entry(fuse_req_t req, struct mqfs_fs *fs, int ret,
			const struct mqfs_entry *e)
{
	struct fuse_entry_param ep;

	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	entry_param(e, &ep);
	if (fuse_reply_entry(req, &ep))
		forget_ino(req, e->ino, 1);
}

static void reply_attr(fuse_req_t req, int ret, const struct stat *st)
{
	if (ret < 0)
		reply_err(req, ret);
	else
		fuse_reply_attr(req, st, OPS_TIMEOUT);
}

/* A get/list xattr result: a size when @size is 0, else the bytes. */
static void reply_xattr(fuse_req_t req, ssize_t ret, const void *buf,
			size_t size)
{
	if (ret < 0)
		reply_err(req, (int)ret);
	else if (!size)
		fuse_reply_xattr(req, (size_t)ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
}

/* ---- the connection ----------------------------------------------------- */

static void conn_want(struct fuse_conn_info *conn, uint64_t caps)
{
	conn->want |= (unsigned)caps & conn->capable;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct mqfs_daemon *d = userdata;

	conn->max_write = OPS_MAX_WRITE;
	conn->max_background = d->max_background;
	conn->congestion_threshold = d->max_background * 3 / 4;
	/*
	 * No splice (handlers want memory buffers); O_TRUNC as a setattr;
	 * the kernel clears suid/sgid itself; no one but the kernel changes
	 * the files, so no invalidation on attribute changes.
	 */
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE |
				  FUSE_CAP_ATOMIC_O_TRUNC |
				  FUSE_CAP_HANDLE_KILLPRIV |
				  FUSE_CAP_AUTO_INVAL_DATA);
	conn_want(conn, FUSE_CAP_ASYNC_READ | FUSE_CAP_ASYNC_DIO |
		  FUSE_CAP_PARALLEL_DIROPS);
	if (d->cache == MQFS_CACHE_KERNEL)
		conn_want(conn, FUSE_CAP_WRITEBACK_CACHE |
			  FUSE_CAP_CACHE_SYMLINKS);
	d->writeback = conn->want & FUSE_CAP_WRITEBACK_CACHE;
	d->dont_mask = conn->want & FUSE_CAP_DONT_MASK;
}

/* No request follows: make everything durable before the teardown. */
static void op_destroy(void *userdata)
{
	struct mqfs_daemon *d = userdata;
	struct mq_plug plug;
	int ret;

	if (!d->fs || mqfs_is_readonly(d->fs))
		return;
	mq_start_plug(&plug, OPS_PLUG_IOS);
	ret = mqfs_sync(d->fs);
	mq_finish_plug(&plug);
	if (ret)
		fprintf(stderr, "mqfs: sync at destroy: %s\n", strerror(-ret));
}

/* ---- names and attributes ----------------------------------------------- */

/* A control name: no negative entry (tunables appear with an elevator). */
static void ctl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mqfs_daemon *d = fuse_req_userdata(req);
	struct fuse_entry_param ep;
	struct mqfs_entry e;
	int ret;

	ret = mqfs_ctl_lookup(&d->ctl, parent, name, &e);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	entry_param(&e, &ep);
	ep.attr_timeout = ep.entry_timeout = OPS_CTL_TIMEOUT;
	fuse_reply_entry(req, &ep);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mqfs_entry e;
	struct op o;
	int ret;

	if (ctl_name_err(req, parent, name)) {
		ctl_lookup(req, parent, name);
		return;
	}
	op_start(&o, req);
	ret = mqfs_lookup(o.fs, parent, name, &e);
	op_finish(&o);
	if (ret == -ENOENT) {
		/* A negative entry: the kernel caches the absence too. */
		struct fuse_entry_param ep = { .entry_timeout = OPS_TIMEOUT };

		fuse_reply_entry(req, &ep);
		return;
	}
	reply_entry(req, o.fs, ret, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct op o;

	op_start(&o, req);
	forget_ino(req, ino, nlookup);
	op_finish(&o);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct op o;

	op_start(&o, req);
	for (size_t i = 0; i < count; i++)
		forget_ino(req, forgets[i].ino, forgets[i].nlookup);
	op_finish(&o);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct mqfs_ctl *c = ctl_ino(req, ino);
	struct stat st;
	struct op o;
	int ret;

	if (c) {
		reply_attr(req, mqfs_ctl_getattr(c, ino, &st), &st);
		return;
	}
	op_start(&o, req);
	ret = mqfs_getattr(o.fs, ino, &st);
	op_finish(&o);
	reply_attr(req, ret, &st);
}

static unsigned setattr_bits(int to_set)
{
	static const struct { int fuse; unsigned mqfs; } map[] = {
		{ FUSE_SET_ATTR_MODE, MQFS_SET_MODE },
		{ FUSE_SET_ATTR_UID, MQFS_SET_UID },
		{ FUSE_SET_ATTR_GID, MQFS_SET_GID },
		{ FUSE_SET_ATTR_SIZE, MQFS_SET_SIZE },
		{ FUSE_SET_ATTR_ATIME, MQFS_SET_ATIME },
		{ FUSE_SET_ATTR_MTIME, MQFS_SET_MTIME },
		{ FUSE_SET_ATTR_ATIME_NOW, MQFS_SET_ATIME_NOW },
		{ FUSE_SET_ATTR_MTIME_NOW, MQFS_SET_MTIME_NOW },
		{ FUSE_SET_ATTR_CTIME, MQFS_SET_CTIME },
	};
	unsigned out = 0;

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (to_set & map[i].fuse)
			out |= map[i].mqfs;
	return out;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct mqfs_ctl *c = ctl_ino(req, ino);
	struct stat st;
	struct op o;
	int ret;

	if (c) {
		ret = mqfs_ctl_setattr(c, ino, fuse_req_ctx(req)->uid, attr,
				       setattr_bits(to_set), &st);
		reply_attr(req, ret, &st);
		return;
	}
	op_start(&o, req);
	ret = mqfs_setattr(o.fs, ino, attr, setattr_bits(to_set), &st);
	op_finish(&o);
	reply_attr(req, ret, &st);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	struct op o;
	int ret;

	if (ctl_ino(req, ino)) {
		reply_err(req, -EINVAL);
		return;
	}
	op_start(&o, req);
	ret = mqfs_readlink(o.fs, ino, buf, sizeof(buf));
	op_finish(&o);
	if (ret < 0)
		reply_err(req, ret);
	else
		fuse_reply_readlink(req, buf);
}

/*
 * Owner and mode of a new inode: the caller's ids; the umask when the
 * kernel left it to us; BSD group semantics in a setgid directory (the
 * group of the directory, and new directories stay setgid).
 */
static int new_owner(struct op *o, fuse_req_t req, fuse_ino_t parent,
		     mode_t *mode, uid_t *uid, gid_t *gid)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct stat dir;
	int ret;

	ret = mqfs_getattr(o->fs, parent, &dir);
	if (ret)
		return ret;
	*uid = ctx->uid;
	*gid = ctx->gid;
	if (o->d->dont_mask && !S_ISLNK(*mode))
		*mode &= ~(ctx->umask & 0777);
	if (dir.st_mode & S_ISGID) {
		*gid = dir.st_gid;
		if (S_ISDIR(*mode))
			*mode |= S_ISGID;
	}
	return 0;
}

static int make_node(struct op *o, fuse_req_t req, fuse_ino_t parent,
		     const char *name, mode_t mode, dev_t rdev,
		     struct mqfs_entry *e)
{
	uid_t uid;
	gid_t gid;
	int ret;

	ret = ctl_name_err(req, parent, name);
	if (!ret)
		ret = new_owner(o, req, parent, &mode, &uid, &gid);
	if (ret)
		return ret;
	return mqfs_mknod(o->fs, parent, name, mode, rdev, uid, gid, e);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	struct mqfs_entry e;
	struct op o;
	int ret;

	op_start(&o, req);
	ret = make_node(&o, req, parent, name, mode, rdev, &e);
	op_finish(&o);
	reply_entry(req, o.fs, ret, &e);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct mqfs_entry e;
	struct op o;
	int ret;

	op_start(&o, req);
	ret = make_node(&o, req, parent, name, S_IFDIR | (mode & 07777), 0,
			&e);
	op_finish(&o);
	reply_entry(req, o.fs, ret, &e);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	mode_t mode = S_IFLNK | 0777;
	struct mqfs_entry e;
	struct op o;
	uid_t uid;
	gid_t gid;
	int ret;

	op_start(&o, req);
	ret = ctl_name_err(req, parent, name);
	if (!ret)
		ret = new_owner(&o, req, parent, &mode, &uid, &gid);
	if (!ret)
		ret = mqfs_symlink(o.fs, parent, name, target, uid, gid, &e);
	op_finish(&o);
	reply_entry(req, o.fs, ret, &e);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct mqfs_entry e;
	struct op o;
	int ret;

	op_start(&o, req);
	ret = ctl_ino(req, ino) ? -EPERM :
	      ctl_name_err(req, newparent, newname);
	if (!ret)
		ret = mqfs_link(o.fs, ino, newparent, newname, &e);
	op_finish(&o);
	reply_entry(req, o.fs, ret, &e);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct op o;
	int ret;

	op_start(&o, req);
	ret = ctl_name_err(req, parent, name) ? -EPERM :
	      mqfs_unlink(o.fs, parent, name);
	op_finish(&o);
	reply_err(req, ret);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct op o;
	int ret;

	op_start(&o, req);
	ret = ctl_name_err(req, parent, name) ? -EPERM :
	      mqfs_rmdir(o.fs, parent, name);
	op_finish(&o);
	reply_err(req, ret);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct op o;
	int ret;

	op_start(&o, req);
	if (ctl_name_err(req, parent, name) ||
	    ctl_name_err(req, newparent, newname))
		ret = -EPERM;
	else
		ret = mqfs_rename(o.fs, parent, name, newparent, newname,
				  flags);
	op_finish(&o);
	reply_err(req, ret);
}

/* ---- open files --------------------------------------------------------- */

static struct mqfs_file *file_of(const struct fuse_file_info *fi)
{
	return (struct mqfs_file *)(uintptr_t)fi->fh;
}

/*
 * The flags the filesystem sees.  The kernel resolves O_APPEND offsets
 * itself (and with the writeback cache writes pages back at their own
 * offsets); with the writeback cache it also reads pages of files opened
 * write-only.
 */
static int open_flags(const struct mqfs_daemon *d, int flags)
{
	flags &= ~O_APPEND;
	if (d->writeback && (flags & O_ACCMODE) == O_WRONLY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	return flags;
}

/*
 * The file's own policy (user.mqfs.cache) or the mount's cache= mode;
 * O_DIRECT always takes the direct way.  none and dontcache:
 * FOPEN_DIRECT_IO, every read and write comes here and nothing of it
 * stays in the page cache (the kernel writes back and invalidates other
 * openers' cached pages around such I/O); dontcache writes then go
 * through the write-behind.  kernel: the page cache stays valid across
 * opens, as only the kernel changes the data (written back by the
 * kernel only on a cache=kernel mount, else written through).
 */
static void open_reply_info(struct mqfs_fs *fs, const struct mqfs_daemon *d,
			    struct fuse_file_info *fi, struct mqfs_file *f)
{
	enum mqfs_cache_mode m = mqfs_file_policy(fs, f);

	if (m == MQFS_CACHE_UNSET)
		m = d->cache;
	if (fi->flags & O_DIRECT)
		m = MQFS_CACHE_NONE;
	fi->fh = (uintptr_t)f;
	if (m == MQFS_CACHE_KERNEL)
		fi->keep_cache = 1;
	else
		fi->direct_io = 1;
	if (m == MQFS_CACHE_DONTCACHE)
		mqfs_file_set_dontcache(f);
}

/* A control file: its text in the handle, never in the page cache. */
static void ctl_open(fuse_req_t req, struct mqfs_ctl *c, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	struct mqfs_ctl_file *f = NULL;
	int ret;

	ret = mqfs_ctl_open(c, ino, fi->flags, fuse_req_ctx(req)->uid, &f);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	fi->fh = (uintptr_t)f;
	fi->direct_io = 1;
	fi->nonseekable = 0;
	if (fuse_reply_open(req, fi))
		mqfs_ctl_release(f);
}

static struct mqfs_ctl_file *ctl_file_of(const struct fuse_file_info *fi)
{
	return (struct mqfs_ctl_file *)(uintptr_t)fi->fh;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mqfs_ctl *c = ctl_ino(req, ino);
	struct mqfs_file *f = NULL;
	struct op o;
	int ret;

	if (c) {
		ctl_open(req, c, ino, fi);
		return;
	}
	op_start(&o, req);
	ret = mqfs_open(o.fs, ino, open_flags(o.d, fi->flags), &f);
	op_finish(&o);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	open_reply_info(o.fs, o.d, fi, f);
	if (fuse_reply_open(req, fi))
		mqfs_release(o.fs, f);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param ep;
	struct mqfs_file *f = NULL;
	struct mqfs_entry e;
	struct op o;
	int ret;

	op_start(&o, req);
	ret = make_node(&o, req, parent, name, S_IFREG | (mode & 07777), 0,
			&e);
	if (!ret) {
		ret = mqfs_open(o.fs, e.ino, open_flags(o.d, fi->flags), &f);
		if (ret)
			forget_ino(req, e.ino, 1);
	}
	op_finish(&o);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	open_reply_info(o.fs, o.d, fi, f);
	entry_param(&e, &ep);
	if (fuse_reply_create(req, &ep, fi)) {
		mqfs_release(o.fs, f);
		forget_ino(req, e.ino, 1);
	}
}

/* Asynchronous I/O in flight, so the teardown can wait for its replies. */
static void io_begin(struct mqfs_daemon *d)
{
	pthread_mutex_lock(&d->lock);
	d->inflight++;
	pthread_mutex_unlock(&d->lock);
}

static void io_end(struct mqfs_daemon *d)
{
	pthread_mutex_lock(&d->lock);
	if (--d->inflight == 0)
		pthread_cond_broadcast(&d->idle);
	pthread_mutex_unlock(&d->lock);
}

/* Completion of mqfs_read: any thread, possibly before it returned. */
static void read_done(void *arg, const void *data, ssize_t res)
{
	fuse_req_t req = arg;
	struct mqfs_daemon *d = fuse_req_userdata(req);

	if (res < 0)
		reply_err(req, (int)res);
	else
		fuse_reply_buf(req, data, (size_t)res);
	io_end(d);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct op o;

	if (ctl_ino(req, ino)) {
		const char *data;
		size_t n = mqfs_ctl_read(ctl_file_of(fi), (uint64_t)off, size,
					 &data);

		fuse_reply_buf(req, data, n);
		return;
	}
	op_start(&o, req);
	io_begin(o.d);
	mqfs_read(o.fs, file_of(fi), (uint64_t)off, size, read_done, req);
	op_finish(&o);
}

static void write_done(void *arg, ssize_t res)
{
	fuse_req_t req = arg;
	struct mqfs_daemon *d = fuse_req_userdata(req);

	if (res < 0)
		reply_err(req, (int)res);
	else
		fuse_reply_write(req, (size_t)res);
	io_end(d);
}

/* A writeback write (the kernel's page cache flushing) being served. */
struct wb_write {
	fuse_req_t req;
	size_t size;
};

/*
 * The kernel takes a short writeback write for a complete one and the
 * missing bytes would be lost without a word; the filesystem stops short
 * only on ENOSPC or an error, so report it as ENOSPC (fsync and close
 * then fail, as for a local filesystem).
 */
static void writeback_done(void *arg, ssize_t res)
{
	struct wb_write *w = arg;
	fuse_req_t req = w->req;

	if (res >= 0 && (size_t)res < w->size)
		res = -ENOSPC;
	free(w);
	write_done(req, res);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	mqfs_write_done_t done = write_done;
	struct mqfs_ctl *c = ctl_ino(req, ino);
	void *arg = req;
	struct op o;

	if (c) {
		ssize_t n = mqfs_ctl_write(c, ctl_file_of(fi),
					   fuse_req_ctx(req)->uid, buf, size);

		if (n < 0)
			reply_err(req, (int)n);
		else
			fuse_reply_write(req, (size_t)n);
		return;
	}
	if (fi->writepage) {
		struct wb_write *w = malloc(sizeof(*w));

		if (!w) {
			reply_err(req, -ENOMEM);
			return;
		}
		*w = (struct wb_write){ .req = req, .size = size };
		done = writeback_done;
		arg = w;
	}
	op_start(&o, req);
	io_begin(o.d);
	mqfs_write(o.fs, file_of(fi), (uint64_t)off, buf, size, done, arg);
	op_finish(&o);
}

/*
 * Without splice the data is one memory buffer and goes as it is; any
 * other vector (a pipe, several pieces) is gathered first.
 */
static void op_write_buf(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_bufvec *bufv, off_t off,
			 struct fuse_file_info *fi)
{
	const struct fuse_buf *b = &bufv->buf[bufv->idx];
	size_t size = fuse_buf_size(bufv);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	ssize_t n;

	if (bufv->count == 1 && bufv->idx == 0 && !bufv->off &&
	    !(b->flags & FUSE_BUF_IS_FD)) {
		op_write(req, ino, b->mem, b->size, off, fi);
		return;
	}
	dst.buf[0].mem = malloc(size ? size : 1);
	if (!dst.buf[0].mem) {
		reply_err(req, -ENOMEM);
		return;
	}
	n = fuse_buf_copy(&dst, bufv, 0);
	if (n < 0)
		reply_err(req, (int)n);
	else
		op_write(req, ino, dst.buf[0].mem, (size_t)n, off, fi);
	free(dst.buf[0].mem);
}

/*
 * close() is not a durability point (fsync is), but with write-behind
 * it writes the file's pending data back and reports a lost write, as
 * NFS does (close-to-open).
 */
static void op_flush(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	struct op o;
	int ret;

	if (ctl_ino(req, ino)) {
		reply_err(req, 0);
		return;
	}
	op_start(&o, req);
	ret = mqfs_flush(o.fs, file_of(fi));
	op_finish(&o);
	reply_err(req, ret);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct op o;
	int ret;

	if (ctl_ino(req, ino)) {
		mqfs_ctl_release(ctl_file_of(fi));
		reply_err(req, 0);
		return;
	}
	op_start(&o, req);
	ret = mqfs_release(o.fs, file_of(fi));
	op_finish(&o);
	reply_err(req, ret);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct op o;
	int ret;

	if (ctl_ino(req, ino)) {
		reply_err(req, 0);	/* nothing to make durable */
		return;
	}
	op_start(&o, req);
	ret = mqfs_fsync(o.fs, ino, datasync != 0);
	op_finish(&o);
	reply_err(req, ret);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			 off_t off, off_t len, struct fuse_file_info *fi)
{
	struct op o;
	int ret;

	if (ctl_ino(req, ino)) {
		reply_err(req, -EPERM);
		return;
	}
	op_start(&o, req);
	ret = mqfs_fallocate(o.fs, ino, mode, (uint64_t)off, (uint64_t)len);
	op_finish(&o);
	reply_err(req, ret);
}

/* Only SEEK_DATA and SEEK_HOLE come here; the kernel does the rest. */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	uint64_t pos = 0;
	struct op o;
	int ret = -EINVAL;

	/*
	 * With the writeback cache, dirty pages the kernel has not sent yet
	 * are data the filesystem cannot see: ENOSYS makes the kernel fall
	 * back to its generic lseek (all data, a hole at EOF) for this mount,
	 * which is coarse but never wrong.
	 */
	if (((struct mqfs_daemon *)fuse_req_userdata(req))->writeback) {
		reply_err(req, -ENOSYS);
		return;
	}
	if (ctl_ino(req, ino)) {
		reply_err(req, -EINVAL);
		return;
	}
	op_start(&o, req);
	if (whence == SEEK_DATA || whence == SEEK_HOLE)
		ret = mqfs_lseek(o.fs, ino, (uint64_t)off, whence, &pos);
	op_finish(&o);
	if (ret < 0)
		reply_err(req, ret);
	else
		fuse_reply_lseek(req, (off_t)pos);
}

/* ---- directories -------------------------------------------------------- */

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	fi->fh = 0;	/* readdir is stateless: the cookie says where */
	fuse_reply_open(req, fi);
}

/* A readdir reply being filled. */
struct rd_buf {
	fuse_req_t req;
	struct mqfs_fs *fs;
	char *buf;
	size_t size, len;
	bool plus;
	/* readdirplus: inodes whose lookup the reply hands over. */
	uint64_t *inos;
	size_t nr_inos, max_inos;
};

static bool is_dot(const char *name)
{
	return name[0] == '.' &&
	       (!name[1] || (name[1] == '.' && !name[2]));
}

static size_t rd_add_plus(struct rd_buf *rb, const char *name, uint64_t ino,
			  unsigned type, uint64_t next,
			  const struct mqfs_entry *e)
{
	struct fuse_entry_param ep = {
		.attr.st_ino = ino, .attr.st_mode = DTTOIF(type),
	};
	size_t room = rb->size - rb->len, n;

	/* The kernel takes no lookup for "." and ".." (ino 0: none given). */
	if (e && !is_dot(name))
		entry_param(e, &ep);
	n = fuse_add_direntry_plus(rb->req, rb->buf + rb->len, room, name,
				   &ep, (off_t)next);
	if (n <= room && ep.ino && rb->nr_inos < rb->max_inos)
		rb->inos[rb->nr_inos++] = ep.ino;
	return n;
}

static int rd_fill(void *ctx, const char *name, uint64_t ino, unsigned type,
		   uint64_t next, const struct mqfs_entry *e)
{
	struct rd_buf *rb = ctx;
	size_t room = rb->size - rb->len, n;

	if (rb->plus) {
		n = rd_add_plus(rb, name, ino, type, next, e);
	} else {
		struct stat st = { .st_ino = ino, .st_mode = DTTOIF(type) };

		n = fuse_add_direntry(rb->req, rb->buf + rb->len, room, name,
				      &st, (off_t)next);
	}
	if (n > room)
		return 1;	/* full: offered again at the next call */
	rb->len += n;
	return 0;
}

/* The smallest readdirplus record: entry_out, dirent, an 8-byte name. */
#define RD_MIN_PLUS	(128 + 24 + 8)

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, bool plus)
{
	struct rd_buf rb = { .req = req, .size = size, .plus = plus };
	struct mqfs_ctl *c = ctl_ino(req, ino);
	struct op o;
	int ret;

	rb.buf = malloc(size ? size : 1);
	rb.max_inos = plus ? size / RD_MIN_PLUS + 1 : 0;
	rb.inos = plus ? calloc(rb.max_inos, sizeof(*rb.inos)) : NULL;
	if (!rb.buf || (plus && !rb.inos)) {
		reply_err(req, -ENOMEM);
		goto out;
	}
	op_start(&o, req);
	rb.fs = o.fs;
	if (c)
		ret = mqfs_ctl_readdir(c, ino, (uint64_t)off, plus, rd_fill,
				       &rb);
	else
		ret = mqfs_readdir(o.fs, ino, (uint64_t)off, plus, rd_fill,
				   &rb);
	op_finish(&o);
	/* Entries already filled go out; the error comes at the next call. */
	if (ret < 0 && !rb.len)
		reply_err(req, ret);
	else if (fuse_reply_buf(req, rb.buf, rb.len))
		for (size_t i = 0; i < rb.nr_inos; i++)
			forget_ino(req, rb.inos[i], 1);
out:
	free(rb.inos);
	free(rb.buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	op_fsync(req, ino, datasync, fi);
}

/* ---- the filesystem and extended attributes ----------------------------- */

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	struct op o;
	int ret;

	op_start(&o, req);
	ret = mqfs_statfs(o.fs, &st);
	op_finish(&o);
	if (ret < 0)
		reply_err(req, ret);
	else
		fuse_reply_statfs(req, &st);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	struct op o;
	int ret;

	if (ctl_ino(req, ino)) {
		reply_err(req, -EPERM);
		return;
	}
	op_start(&o, req);
	ret = mqfs_setxattr(o.fs, ino, name, value, size, flags);
	op_finish(&o);
	reply_err(req, ret);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	struct op o;
	ssize_t ret;

	if (size && !buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	op_start(&o, req);
	ret = ctl_ino(req, ino) ? -ENODATA :
	      mqfs_getxattr(o.fs, ino, name, buf, size);
	op_finish(&o);
	reply_xattr(req, ret, buf, size);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	struct op o;
	ssize_t ret;

	if (size && !buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	op_start(&o, req);
	ret = ctl_ino(req, ino) ? 0 : mqfs_listxattr(o.fs, ino, buf, size);
	op_finish(&o);
	reply_xattr(req, ret, buf, size);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct op o;
	int ret;

	if (ctl_ino(req, ino)) {
		reply_err(req, -EPERM);
		return;
	}
	op_start(&o, req);
	ret = mqfs_removexattr(o.fs, ino, name);
	op_finish(&o);
	reply_err(req, ret);
}

/* access is absent: default_permissions makes the kernel check. */
const struct fuse_lowlevel_ops mqfs_ll_ops = {
	.init		= op_init,
	.destroy	= op_destroy,
	.lookup		= op_lookup,
	.forget		= op_forget,
	.forget_multi	= op_forget_multi,
	.getattr	= op_getattr,
	.setattr	= op_setattr,
	.readlink	= op_readlink,
	.mknod		= op_mknod,
	.mkdir		= op_mkdir,
	.unlink		= op_unlink,
	.rmdir		= op_rmdir,
	.symlink	= op_symlink,
	.rename		= op_rename,
	.link		= op_link,
	.open		= op_open,
	.read		= op_read,
	.write		= op_write,
	.write_buf	= op_write_buf,
	.flush		= op_flush,
	.release	= op_release,
	.fsync		= op_fsync,
	.opendir	= op_opendir,
	.readdir	= op_readdir,
	.readdirplus	= op_readdirplus,
	.releasedir	= op_releasedir,
	.fsyncdir	= op_fsyncdir,
	.statfs		= op_statfs,
	.setxattr	= op_setxattr,
	.getxattr	= op_getxattr,
	.listxattr	= op_listxattr,
	.removexattr	= op_removexattr,
	.create		= op_create,
	.fallocate	= op_fallocate,
	.lseek		= op_lseek,
};

void mqfs_daemon_init(struct mqfs_daemon *d, const struct mqfs_config *cfg)
{
	unsigned qd = cfg->queue.queue_depth ? cfg->queue.queue_depth : 128;

	*d = (struct mqfs_daemon){
		.plug = cfg->plug, .cache = cfg->cache,
		/* Enough background reads and writebacks to fill the queue. */
		.max_background = qd < 16 ? 16 : qd > 1024 ? 1024 : qd,
	};
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->idle, NULL);
}

void mqfs_daemon_drain(struct mqfs_daemon *d)
{
	pthread_mutex_lock(&d->lock);
	while (d->inflight)
		pthread_cond_wait(&d->idle, &d->lock);
	pthread_mutex_unlock(&d->lock);
}

void mqfs_daemon_destroy(struct mqfs_daemon *d)
{
	mqfs_ctl_destroy(&d->ctl);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->idle);
}
