/* SPDX-License-Identifier: MIT */
/*
 * ops_i.h - what the filesystem's handlers (ops.c) and the control
 * surface's (ops_ctl.c) share: the handler type, the cache times, the
 * request accessors, and the handlers both tables name.
 */
#ifndef MQFS_FUSE_OPS_I_H
#define MQFS_FUSE_OPS_I_H

#include "fuse_i.h"

/*
 * Entry and attribute timeout, seconds.  The kernel is the only way to
 * change a mounted mqfs and it invalidates what it changes, so cached
 * names and attributes stay right for as long as it keeps them.
 */
#define OPS_TIMEOUT	60u
/* Control names come and go with the elevator (queue/iosched/). */
#define OPS_CTL_TIMEOUT	1u

typedef void (*mqfs_op_fn)(struct mqfs_req *r);

static inline uint64_t req_ino(const struct mqfs_req *r)
{
	return r->m.h->nodeid;
}

static inline const void *req_arg(const struct mqfs_req *r)
{
	return r->m.arg;
}

/* Handlers of ops.c that serve control inodes too. */
void mqfs_ops_ok(struct mqfs_req *r);
void mqfs_ops_statfs(struct mqfs_req *r);
void mqfs_ops_opendir(struct mqfs_req *r);
void mqfs_ops_readdir(struct mqfs_req *r);
void mqfs_ops_readdirplus(struct mqfs_req *r);

/* ops_ctl.c: LOOKUP of a name the control surface claims, and the table
 * for requests whose node is a control inode. */
void mqfs_ops_ctl_lookup(struct mqfs_req *r);
extern const mqfs_op_fn mqfs_ops_ctl[MQFS_FUSE_OPCODE_MAX];

#endif /* MQFS_FUSE_OPS_I_H */
