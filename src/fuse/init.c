/* SPDX-License-Identifier: MIT */
/*
 * init.c - FUSE_INIT: what mqfs asks of the kernel for the connection.
 *
 * Asked for, when the kernel offers it:
 * - ASYNC_READ, ASYNC_DIO: reads and direct I/O reach the daemon many at
 *   a time (the engine answers them asynchronously);
 * - PARALLEL_DIROPS, DO_READDIRPLUS + READDIRPLUS_AUTO (what libfuse asks
 *   for a filesystem with readdirplus), BIG_WRITES, MAX_PAGES: 256 pages,
 *   1 MiB writes;
 * - DIRECT_IO_ALLOW_MMAP (7.39): shared mmap of FOPEN_DIRECT_IO files,
 *   which cache=none and cache=dontcache open: the map goes through the
 *   page cache, and the kernel writes it back and invalidates it around
 *   the file's direct reads and writes;
 * - WRITEBACK_CACHE and CACHE_SYMLINKS for cache=kernel;
 * - HANDLE_KILLPRIV_V2: mqfs drops suid/sgid and file capabilities on
 *   write, truncate and chown (FUSE_WRITE_KILL_SUIDGID,
 *   FATTR_KILL_SUIDGID), and the kernel marks the superblock SB_NOSEC.
 *   Without it every buffered write of a cache=kernel mount first asked
 *   the daemon for security.capability (a GETXATTR round trip per write:
 *   4k random buffered writes went at a quarter of ext4's pace).
 * - EXPORT_SUPPORT: file handles (name_to_handle_at, NFS export) that
 *   outlive the kernel's inode: a node id is the inode number, which
 *   never changes, and the generation tells a reused number apart;
 *   LOOKUP of "." and ".." serves the kernel's export operations (ops.c).
 * - OVER_IO_URING (7.42) when the rings are prepared (transport=auto or
 *   uring): the INIT reply grants it, then every ring registers
 *   (ring.c); from then on the requests come over the rings.
 * - POSIX_ACL and DONT_MASK unless -o noacl: the kernel reads the ACLs
 *   (GETXATTR system.posix_acl_*, cached) and checks access with them;
 *   it then leaves the umask to mqfs (sent in the create requests),
 *   which applies it unless a default ACL decides (src/fs/acl_fs.c).
 * - SETXATTR_EXT, required (every kernel mqfs serves offers it): the
 *   longer fuse_setxattr_in, whose setxattr_flags carry
 *   SETXATTR_ACL_KILL_SGID (decode.c reads that layout only).
 * Left out: ATOMIC_O_TRUNC (O_TRUNC comes as a setattr), AUTO_INVAL_DATA
 * (only the kernel changes the files), SPLICE_* (the handlers want
 * memory), POSIX and FLOCK locks (the kernel keeps them locally), and
 * everything needing a feature mqfs lacks.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "fuse_i.h"

static uint64_t init_want(const struct mqfs_daemon *d)
{
	uint64_t want = FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_ASYNC_DIO |
			FUSE_PARALLEL_DIROPS | FUSE_MAX_PAGES |
			FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO |
			FUSE_HANDLE_KILLPRIV_V2 | FUSE_INIT_EXT |
			FUSE_DIRECT_IO_ALLOW_MMAP | FUSE_SETXATTR_EXT |
			FUSE_EXPORT_SUPPORT;

	if (d->cache == MQFS_CACHE_KERNEL)
		want |= FUSE_WRITEBACK_CACHE | FUSE_CACHE_SYMLINKS;
	if (d->rings.prepared)
		want |= FUSE_OVER_IO_URING;
	if (d->acl)
		want |= FUSE_POSIX_ACL | FUSE_DONT_MASK;
	return want;
}

/* The kernel's offer: flags, and flags2 above bit 31 since 7.36 (proto.h). */
static uint64_t init_offered(const struct mqfs_req *r)
{
	const struct fuse_init_in *in = r->m.arg;
	uint64_t flags = in->flags;

	if ((flags & FUSE_INIT_EXT) &&
	    r->m.arg_len >= offsetof(struct fuse_init_in, unused))
		flags |= (uint64_t)in->flags2 << 32;
	return flags;
}

/* A kernel of another major: answer ours and wait for its next INIT. */
static void init_other_major(struct mqfs_req *r)
{
	struct mqfs_fuse_init_out out = { .major = FUSE_KERNEL_VERSION,
					  .minor = MQFS_FUSE_MINOR };

	mqfs_reply(r, &out, sizeof(out));
}

/*
 * After the INIT reply: the rings register, or the mount is settled on
 * /dev/fuse.  A REGISTER the kernel refused turns io_uring off for the
 * connection (fs/fuse/dev_uring.c: fc->io_uring = 0), so requests keep
 * coming on /dev/fuse: transport=auto goes on there, transport=uring
 * fails the mount.  The ring threads stay, serving whatever reaches them,
 * unless a queue has no entry: then the kernel's ring is never ready.
 */
static int init_transport(struct mqfs_daemon *d)
{
	struct mqfs_conn *c = &d->conn;
	char *note = d->transport_note;
	size_t size = sizeof(d->transport_note);
	int err;

	/* Not prepared: main.c said why (and uring never gets here). */
	if (!(c->flags & FUSE_OVER_IO_URING)) {
		if (!d->rings.prepared)
			return 0;
		snprintf(note, size, "the kernel did not offer io_uring at INIT");
		if (d->transport != MQFS_TRANSPORT_URING)
			return 0;
		fprintf(stderr, "mqfs: transport=uring: %s\n", note);
		return -EOPNOTSUPP;
	}
	err = mqfs_rings_start(&d->rings);
	if (!err) {
		c->uring = true;
		return 0;
	}
	snprintf(note, size, "io_uring did not start (%s)", d->rings.why);
	if (d->transport != MQFS_TRANSPORT_URING) {
		fprintf(stderr, "mqfs: %s: serving /dev/fuse\n", note);
		/* A queue without an entry: the kernel never uses the rings,
		 * and their slots serve /dev/fuse's requests instead. */
		if (d->rings.never_ready)
			mqfs_rings_stop(&d->rings);
		return 0;
	}
	fprintf(stderr, "mqfs: transport=uring: %s\n", note);
	return err;
}

void mqfs_fuse_init(struct mqfs_req *r)
{
	const struct fuse_init_in *in = r->m.arg;
	struct mqfs_daemon *d = r->d;
	struct mqfs_conn *c = &d->conn;
	struct mqfs_fuse_init_out out = { 0 };
	uint64_t granted;

	if (atomic_load(&d->eng.initialized)) {
		mqfs_reply_err(r, -EPROTO);
		return;
	}
	if (in->major > FUSE_KERNEL_VERSION) {
		init_other_major(r);
		return;
	}
	if (in->major < FUSE_KERNEL_VERSION || in->minor < MQFS_FUSE_MINOR_MIN) {
		fprintf(stderr, "mqfs: the kernel speaks FUSE %u.%u; mqfs "
			"needs 7.%u or later\n", in->major, in->minor,
			MQFS_FUSE_MINOR_MIN);
		mqfs_reply_err(r, -EPROTO);
		mqfs_engine_init_done(&d->eng, -EPROTO);
		return;
	}
	granted = init_want(d) & init_offered(r);
	if (!(granted & FUSE_SETXATTR_EXT)) {
		/* Every kernel of 7.33 on offers it; decode.c relies on it. */
		fprintf(stderr, "mqfs: the kernel did not offer "
			"FUSE_SETXATTR_EXT\n");
		mqfs_reply_err(r, -EPROTO);
		mqfs_engine_init_done(&d->eng, -EPROTO);
		return;
	}
	*c = (struct mqfs_conn){
		.minor = MQFS_FUSE_MINOR < in->minor ? MQFS_FUSE_MINOR
						     : in->minor,
		.flags = granted, .max_write = MQFS_FUSE_MAX_WRITE,
		.max_background = d->max_background,
		.writeback = granted & FUSE_WRITEBACK_CACHE,
		.mmap_direct = granted & FUSE_DIRECT_IO_ALLOW_MMAP,
	};
	out = (struct mqfs_fuse_init_out){
		.major = FUSE_KERNEL_VERSION, .minor = MQFS_FUSE_MINOR,
		.max_readahead = in->max_readahead,
		.flags = (uint32_t)granted,
		.flags2 = (uint32_t)(granted >> 32),
		.max_background = (uint16_t)c->max_background,
		.congestion_threshold = (uint16_t)(c->max_background * 3 / 4),
		.max_write = c->max_write, .time_gran = 1,
		.max_pages = MQFS_FUSE_MAX_PAGES,
	};
	/* Requests wait for this reply, so the flags are set before it. */
	atomic_store(&d->eng.initialized, true);
	if (mqfs_reply(r, &out, sizeof(out))) {
		fprintf(stderr, "mqfs: fuse: the INIT reply did not arrive\n");
		mqfs_engine_init_done(&d->eng, -ENOTCONN);
		return;
	}
	mqfs_engine_init_done(&d->eng, init_transport(d));
}
