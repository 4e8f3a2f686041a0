// SPDX-License-Identifier: MIT
/*
 * fs_err.c - the mount-wide state every module asks about: errors met
 * (logged with their block, counted, the mount turned read-only under
 * errors=remount-ro), whether the mount takes changes.  A leaf: it
 * calls no other module, so the buffer cache and the journal are tested
 * without the rest of the filesystem.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "fs_i.h"

void mqfs_fs_error(struct mqfs_fs *fs, uint64_t blocknr, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "mqfs: error: block %llu: %s\n",
		(unsigned long long)blocknr, msg);
	atomic_store(&fs->last_error_blk, blocknr);
	atomic_fetch_add(&fs->errors, 1);
	atomic_store(&fs->error_seen, true);
	if (fs->opts.errors == MQFS_ERRORS_REMOUNT_RO &&
	    !atomic_exchange(&fs->readonly, true))
		fprintf(stderr, "mqfs: filesystem is now read-only "
			"(errors=remount-ro); run fsck.mqfs\n");
}

int mqfs_fs_writable(struct mqfs_fs *fs)
{
	return atomic_load(&fs->readonly) ? -EROFS : 0;
}

bool mqfs_is_readonly(const struct mqfs_fs *fs)
{
	return atomic_load(&fs->readonly);
}

bool mqfs_had_errors(const struct mqfs_fs *fs)
{
	return atomic_load(&fs->error_seen);
}

struct mq_queue *mqfs_queue(struct mqfs_fs *fs)
{
	return fs->q;
}
