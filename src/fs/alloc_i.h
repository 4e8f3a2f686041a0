/* SPDX-License-Identifier: MIT */
/*
 * alloc_i.h - the allocator's per-AG state, shared by alloc.c (block
 * and inode allocation) and alloc_ag.c (AGs coming into being: their
 * state loaded at mount, an uninitialised AG written at its first use).
 */
#ifndef MQFS_ALLOC_I_H
#define MQFS_ALLOC_I_H

#include "fs_i.h"

/* A run freed in transaction @seq, in bits of its AG. */
struct ag_busy {
	uint32_t start;
	uint32_t len;
	uint64_t seq;
};

struct mqfs_ag_info {
	pthread_mutex_t lock;
	uint32_t index;
	uint32_t block_count;		/* blocks in this AG */
	uint64_t first_block;		/* bit 0 of the block bitmap */
	uint64_t meta;			/* AG header; bitmaps at +1, +2 */
	uint32_t meta_len;		/* blocks of metadata from @meta */
	/* Not written yet (INCOMPAT_LAZY_AGS): cleared under @lock by the
	 * first allocation, read anywhere. */
	atomic_bool uninit;
	/* Copies of the AG header's counts: written under @lock, read
	 * anywhere as hints (which AG to try). */
	atomic_uint free_blocks, free_inodes, dirs;
	/* Busy runs (under @lock); @busy_map is NULL while none is busy. */
	uint64_t *busy_map;
	struct ag_busy *busy;
	atomic_uint nbusy;
	size_t busy_cap;
};

/*
 * Make @ag (its lock held) ready for an allocation in @h: initialise it
 * if it is not (alloc_ag.c).  -ENOSPC when the journal has no room for
 * that now: the caller passes the AG over.
 */
int mqfs_ag_ready_locked(struct mqfs_handle *h, struct mqfs_ag_info *ag);

#endif /* MQFS_ALLOC_I_H */
