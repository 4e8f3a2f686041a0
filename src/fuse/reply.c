/* SPDX-License-Identifier: MIT */
/*
 * reply.c - the replies that carry structures: attributes, entries,
 * opens, statfs, and directory listings in the kernel's dirent and
 * direntplus records.  Everything goes out through mqfs_reply*().
 */
#include <dirent.h>
#include <string.h>
#include "fuse_i.h"

void mqfs_fill_attr(struct fuse_attr *a, const struct stat *st)
{
	*a = (struct fuse_attr){
		.ino = st->st_ino,
		.size = (uint64_t)st->st_size,
		.blocks = (uint64_t)st->st_blocks,
		.atime = (uint64_t)st->st_atim.tv_sec,
		.mtime = (uint64_t)st->st_mtim.tv_sec,
		.ctime = (uint64_t)st->st_ctim.tv_sec,
		.atimensec = (uint32_t)st->st_atim.tv_nsec,
		.mtimensec = (uint32_t)st->st_mtim.tv_nsec,
		.ctimensec = (uint32_t)st->st_ctim.tv_nsec,
		.mode = st->st_mode,
		.nlink = (uint32_t)st->st_nlink,
		.uid = st->st_uid,
		.gid = st->st_gid,
		/* The kernel's encoding is the low 32 bits of glibc's. */
		.rdev = (uint32_t)st->st_rdev,
		.blksize = (uint32_t)st->st_blksize,
	};
}

static void reply_entry_out(struct fuse_entry_out *o,
			    const struct mqfs_entry *e, unsigned timeout)
{
	memset(o, 0, sizeof(*o));
	o->nodeid = e->ino;
	o->generation = e->generation;
	o->entry_valid = timeout;
	o->attr_valid = timeout;
	mqfs_fill_attr(&o->attr, &e->st);
}

int mqfs_reply_entry(struct mqfs_req *r, const struct mqfs_entry *e,
		     unsigned timeout)
{
	struct fuse_entry_out o;

	reply_entry_out(&o, e, timeout);
	return mqfs_reply(r, &o, sizeof(o));
}

/* A negative entry: the kernel caches the name's absence too. */
int mqfs_reply_noent(struct mqfs_req *r, unsigned timeout)
{
	struct fuse_entry_out o = { .entry_valid = timeout };

	return mqfs_reply(r, &o, sizeof(o));
}

int mqfs_reply_attr(struct mqfs_req *r, const struct stat *st,
		    unsigned timeout)
{
	struct fuse_attr_out o = { .attr_valid = timeout };

	mqfs_fill_attr(&o.attr, st);
	return mqfs_reply(r, &o, sizeof(o));
}

int mqfs_reply_open(struct mqfs_req *r, uint64_t fh, uint32_t open_flags)
{
	struct fuse_open_out o = { .fh = fh, .open_flags = open_flags };

	return mqfs_reply(r, &o, sizeof(o));
}

int mqfs_reply_create(struct mqfs_req *r, const struct mqfs_entry *e,
		      unsigned timeout, uint64_t fh, uint32_t open_flags)
{
	struct {
		struct fuse_entry_out entry;
		struct fuse_open_out open;
	} o;

	_Static_assert(sizeof(o) == sizeof(o.entry) + sizeof(o.open),
		       "CREATE reply without padding");
	reply_entry_out(&o.entry, e, timeout);
	o.open = (struct fuse_open_out){ .fh = fh, .open_flags = open_flags };
	return mqfs_reply(r, &o, sizeof(o));
}

int mqfs_reply_statfs(struct mqfs_req *r, const struct statvfs *sv)
{
	struct fuse_statfs_out o = { .st = {
		.blocks = sv->f_blocks, .bfree = sv->f_bfree,
		.bavail = sv->f_bavail, .files = sv->f_files,
		.ffree = sv->f_ffree, .bsize = (uint32_t)sv->f_bsize,
		.namelen = (uint32_t)sv->f_namemax,
		.frsize = (uint32_t)sv->f_frsize,
	} };

	return mqfs_reply(r, &o, sizeof(o));
}

/* ---- directory listings --------------------------------------------------- */

/*
 * Add one record; false when it does not fit (it is offered again at
 * the next READDIR).  Plus records carry the entry the filesystem
 * looked up (e->ino 0 for "." and "..": the kernel links nothing then).
 */
bool mqfs_dirbuf_add(struct mqfs_dirbuf *b, const char *name, uint64_t ino,
		     unsigned type, uint64_t next, const struct mqfs_entry *e)
{
	size_t namelen = strlen(name);
	size_t head = b->plus ? FUSE_NAME_OFFSET_DIRENTPLUS : FUSE_NAME_OFFSET;
	size_t rec = FUSE_DIRENT_ALIGN(head + namelen);
	struct fuse_dirent *de;
	char *p = b->buf + b->len;

	if (rec > b->size - b->len)
		return false;
	memset(p, 0, rec);
	if (b->plus) {
		struct fuse_direntplus *dp = (struct fuse_direntplus *)p;

		if (e && e->ino)
			reply_entry_out(&dp->entry_out, e, b->timeout);
		de = &dp->dirent;
	} else {
		de = (struct fuse_dirent *)p;
	}
	de->ino = ino;
	de->off = next;
	de->namelen = (uint32_t)namelen;
	de->type = type;
	memcpy(de->name, name, namelen);
	b->len += rec;
	return true;
}

void mqfs_dirbuf_forget(const struct mqfs_dirbuf *b,
			void (*forget)(void *arg, uint64_t ino), void *arg)
{
	size_t off = 0;

	while (b->plus && off < b->len) {
		const struct fuse_direntplus *dp =
			(const struct fuse_direntplus *)(b->buf + off);

		if (dp->entry_out.nodeid)
			forget(arg, dp->entry_out.nodeid);
		off += FUSE_DIRENTPLUS_SIZE(dp);
	}
}

/* A get/list xattr result: a size when @size is 0, else the bytes. */
void mqfs_reply_xattr(struct mqfs_req *r, ssize_t ret, const void *buf,
		      size_t size)
{
	struct fuse_getxattr_out o = { .size = (uint32_t)ret };

	if (ret < 0)
		mqfs_reply_err(r, (int)ret);
	else if (!size)
		mqfs_reply(r, &o, sizeof(o));
	else
		mqfs_reply(r, buf, (size_t)ret);
}
