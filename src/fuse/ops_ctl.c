/* SPDX-License-Identifier: MIT */
/*
 * ops_ctl.c - the FUSE operations on the control surface's inodes
 * (.mqfs, ctl.c): statistics to read and tunables to write, with short
 * cache times, no lookup counts and no page cache.  mqfs_ops_dispatch
 * (ops.c) routes a request here when its node is a control inode.
 */
#include <errno.h>
#include <stdint.h>
#include "ops_i.h"

/* A control name: no negative entry (tunables appear with an elevator). */
void mqfs_ops_ctl_lookup(struct mqfs_req *r)
{
	struct mqfs_entry e;
	int ret = mqfs_ctl_lookup(&r->d->ctl, req_ino(r), r->m.name[0], &e);

	if (ret < 0)
		mqfs_reply_err(r, ret);
	else
		mqfs_reply_entry(r, &e, OPS_CTL_TIMEOUT);
}

static void ctl_getattr(struct mqfs_req *r)
{
	struct stat st;
	int ret = mqfs_ctl_getattr(&r->d->ctl, req_ino(r), &st);

	if (ret < 0)
		mqfs_reply_err(r, ret);
	else
		mqfs_reply_attr(r, &st, OPS_CTL_TIMEOUT);
}

static void ctl_setattr(struct mqfs_req *r)
{
	struct stat attr, st;
	unsigned bits = mqfs_setattr_decode(req_arg(r), &attr);
	int ret = mqfs_ctl_setattr(&r->d->ctl, req_ino(r), r->m.h->uid,
				   &attr, bits, &st);

	if (ret < 0)
		mqfs_reply_err(r, ret);
	else
		mqfs_reply_attr(r, &st, OPS_CTL_TIMEOUT);
}

/* A control file: its text in the handle, never in the page cache. */
static void ctl_open(struct mqfs_req *r)
{
	const struct fuse_open_in *in = req_arg(r);
	uint64_t fh = 0;
	int ret = mqfs_ctl_open(&r->d->ctl, req_ino(r), (int)in->flags,
				r->m.h->uid, &fh);

	if (ret < 0)
		mqfs_reply_err(r, ret);
	else if (mqfs_reply_open(r, fh, FOPEN_DIRECT_IO))
		mqfs_ctl_release(&r->d->ctl, fh);
}

static void ctl_read(struct mqfs_req *r)
{
	const struct fuse_read_in *in = req_arg(r);
	/* A copy: a killed reader's RELEASE may free the file meanwhile. */
	ssize_t n = mqfs_ctl_read(&r->d->ctl, in->fh, in->offset,
				  MQ_MIN((size_t)in->size, MQFS_SLOT_PAYLOAD),
				  r->payload);

	if (n < 0)
		mqfs_reply_err(r, (int)n);
	else
		mqfs_reply(r, r->payload, (size_t)n);
}

static void ctl_write(struct mqfs_req *r)
{
	const struct fuse_write_in *in = req_arg(r);
	struct fuse_write_out o = { 0 };
	ssize_t n = mqfs_ctl_write(&r->d->ctl, in->fh, r->m.h->uid,
				   r->m.data, r->m.data_len);

	if (n < 0) {
		mqfs_reply_err(r, (int)n);
	} else {
		o.size = (uint32_t)n;
		mqfs_reply(r, &o, sizeof(o));
	}
}

static void ctl_release(struct mqfs_req *r)
{
	const struct fuse_release_in *in = req_arg(r);

	mqfs_ctl_release(&r->d->ctl, in->fh);
	mqfs_reply_err(r, 0);
}

static void ctl_forget(struct mqfs_req *r)
{
	mqfs_reply_none(r);	/* control nodes keep no lookup counts */
}

static void ctl_einval(struct mqfs_req *r)
{
	mqfs_reply_err(r, -EINVAL);
}

static void ctl_getxattr(struct mqfs_req *r)
{
	mqfs_reply_err(r, -ENODATA);
}

/* No attributes: a size of 0, or an empty list. */
static void ctl_listxattr(struct mqfs_req *r)
{
	const struct fuse_getxattr_in *in = req_arg(r);

	mqfs_reply_xattr(r, 0, r->payload, in->size);
}

/* On a control inode; any other filesystem operation there: EPERM. */
const mqfs_op_fn mqfs_ops_ctl[MQFS_FUSE_OPCODE_MAX] = {
	[FUSE_LOOKUP] = mqfs_ops_ctl_lookup,
	[FUSE_FORGET] = ctl_forget,
	[FUSE_GETATTR] = ctl_getattr,
	[FUSE_SETATTR] = ctl_setattr,
	[FUSE_READLINK] = ctl_einval,
	[FUSE_OPEN] = ctl_open,
	[FUSE_READ] = ctl_read,
	[FUSE_WRITE] = ctl_write,
	[FUSE_STATFS] = mqfs_ops_statfs,
	[FUSE_RELEASE] = ctl_release,
	[FUSE_FSYNC] = mqfs_ops_ok,		/* nothing to make durable */
	[FUSE_GETXATTR] = ctl_getxattr,
	[FUSE_LISTXATTR] = ctl_listxattr,
	[FUSE_FLUSH] = mqfs_ops_ok,
	[FUSE_OPENDIR] = mqfs_ops_opendir,
	[FUSE_READDIR] = mqfs_ops_readdir,
	[FUSE_RELEASEDIR] = mqfs_ops_ok,
	[FUSE_FSYNCDIR] = mqfs_ops_ok,
	[FUSE_READDIRPLUS] = mqfs_ops_readdirplus,
	[FUSE_LSEEK] = ctl_einval,
};
