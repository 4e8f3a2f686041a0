/* SPDX-License-Identifier: MIT */
/*
 * t_fs.h - a filesystem on a ram device for the src/fs unit tests.
 *
 * t_fs_make() formats and mounts; t_fs_remount() unmounts cleanly and
 * mounts again (what survives is what reached the device).  With
 * @crashable the queue runs on a fault device with a volatile write
 * cache over the ram device: t_fs_crash() cuts the power (unflushed
 * writes are lost), tears the mount down without the clean path, and
 * mounts the surviving image again: replay and orphan recovery run as
 * after a real crash.
 *
 * Use with -I$(top_srcdir)/src/fs (fs_i.h).  Prefix t_fs_.
 */
#ifndef MQFS_TESTS_T_FS_H
#define MQFS_TESTS_T_FS_H

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fs_i.h"
#include "mqfs/mq_dev.h"
#include "mqfs/dev/fault.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

#define T_FS_MIB	(1024ull * 1024)
#define T_FS_AG_BLOCKS	1024u	/* small AGs: tests see several of them */

struct t_fs {
	struct mq_dev *ram;
	struct mq_dev *fault;		/* NULL unless crashable */
	struct mq_queue *q;
	struct mqfs_fs *fs;
	struct mqfs_mkfs_opts mkfs;
	struct mqfs_mount_opts mount;
	uint64_t fault_seed;		/* the fault device's; 0: 1 */
	const char *elevator;		/* NULL: "none" */
};

static inline struct mq_queue *t_fs_queue_elv(struct mq_dev *dev,
					      const char *elevator)
{
	struct mq_queue_config cfg = { .elevator = elevator ? elevator
							    : "none" };
	struct mq_queue *q = t_queue_new(dev, &cfg);

	ck_assert_msg(q != NULL, "t_fs: queue");
	return q;
}

static inline struct mq_queue *t_fs_queue(struct mq_dev *dev)
{
	return t_fs_queue_elv(dev, NULL);
}

static inline void t_fs_open_queue(struct t_fs *t, bool crashable)
{
	if (crashable) {
		struct mq_fault_config fc = { .volatile_cache = true,
					      .seed = t->fault_seed ?
						      t->fault_seed : 1 };

		t->fault = t_dev_fault(t->ram, &fc);
		ck_assert_msg(t->fault != NULL, "t_fs: fault device");
		t->q = t_fs_queue_elv(t->fault, t->elevator);
	} else {
		t->q = t_fs_queue_elv(t->ram, t->elevator);
	}
}

static inline void t_fs_close_queue(struct t_fs *t)
{
	mq_queue_destroy(t->q);
	t->q = NULL;
	if (t->fault) {
		mq_dev_close(t->fault);
		t->fault = NULL;
	}
}

static inline void t_fs_mount(struct t_fs *t)
{
	int err = mqfs_mount(t->q, &t->mount, &t->fs);

	ck_assert_msg(err == 0, "t_fs: mount: %d", err);
}

static inline void t_fs_unmount(struct t_fs *t)
{
	int err = mqfs_unmount(t->fs);

	t->fs = NULL;
	ck_assert_msg(err == 0, "t_fs: unmount: %d", err);
}

/* Format @size_bytes (AGs of @ag_blocks, 0: T_FS_AG_BLOCKS) and mount. */
static inline void t_fs_make_opts(struct t_fs *t, uint64_t size_bytes,
				  uint32_t ag_blocks, bool crashable)
{
	int err;

	memset(t, 0, sizeof(*t));
	t->ram = t_dev_ram(size_bytes, 64);
	ck_assert_msg(t->ram != NULL, "t_fs: ram device");
	t->mkfs.ag_blocks = ag_blocks ? ag_blocks : T_FS_AG_BLOCKS;
	t->mkfs.now_sec = 1700000000;
	t_fs_open_queue(t, crashable);
	err = mqfs_mkfs(t->q, &t->mkfs, NULL);
	ck_assert_msg(err == 0, "t_fs: mkfs: %d", err);
	/* The commit thread stays out of the way unless a test commits. */
	t->mount.commit_interval_ms = 3600 * 1000;
	t_fs_mount(t);
}

static inline void t_fs_make(struct t_fs *t, uint64_t size_bytes)
{
	t_fs_make_opts(t, size_bytes, 0, false);
}

static inline void t_fs_remount(struct t_fs *t)
{
	t_fs_unmount(t);
	t_fs_mount(t);
}

/*
 * Power cut: writes not covered by a completed flush are lost.  The
 * dying mount is torn down (its errors ignored: every I/O fails now),
 * then the surviving image is mounted on a new fault device.
 */
static inline void t_fs_crash(struct t_fs *t)
{
	ck_assert_msg(t->fault != NULL, "t_fs: not crashable");
	mq_fault_power_cut(t->fault, MQ_FAULT_CUT_LOSE);
	(void)mqfs_unmount(t->fs);
	t->fs = NULL;
	t_fs_close_queue(t);
	t_fs_open_queue(t, true);
	t_fs_mount(t);
}

/* Remount on a queue with @elevator (the priority levels: mq-deadline). */
static inline void t_fs_use_elevator(struct t_fs *t, const char *elevator)
{
	bool crashable = t->fault != NULL;

	t_fs_unmount(t);
	t_fs_close_queue(t);
	t->elevator = elevator;
	t_fs_open_queue(t, crashable);
	t_fs_mount(t);
}

/* Unmount (cleanly) if mounted and free the devices. */
/* Unmount a mount that met corruption: it says so (-EUCLEAN). */
static inline void t_fs_unmount_unclean(struct t_fs *t)
{
	int err = mqfs_unmount(t->fs);

	t->fs = NULL;
	ck_assert_msg(err == -EUCLEAN, "t_fs: unmount after an error: %d",
		      err);
}

static inline void t_fs_destroy(struct t_fs *t)
{
	if (t->fs)
		t_fs_unmount(t);
	t_fs_close_queue(t);
	mq_dev_close(t->ram);
	t->ram = NULL;
}

/* Raw block @blk of the device, for corruption tests (ram only). */
static inline uint8_t *t_fs_raw_block(struct t_fs *t, uint64_t blk)
{
	return (uint8_t *)mq_ram_data(t->ram) + blk * MQFS_BLOCK_SIZE;
}

/* Is raw block @blk all zero? */
static inline bool t_fs_raw_zero(struct t_fs *t, uint64_t blk)
{
	const uint8_t *p = t_fs_raw_block(t, blk);

	for (unsigned i = 0; i < MQFS_BLOCK_SIZE; i++)
		if (p[i])
			return false;
	return true;
}

#endif /* MQFS_TESTS_T_FS_H */
