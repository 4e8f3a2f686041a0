/* SPDX-License-Identifier: MIT */
/*
 * journal_i.h - what the journal's two files share (journal.c: handles,
 * commits, the commit thread, the sequence; journal_replay.c: replay at
 * mount, which calls into journal.c and never the reverse): where the
 * blocks of a transaction lie, and the sequence calls.
 */
#ifndef MQFS_JOURNAL_I_H
#define MQFS_JOURNAL_I_H

#include "fs_i.h"

/* Descriptors of a transaction of @nr copies. */
static inline unsigned jnl_ndesc(unsigned nr)
{
	return MQ_DIV_ROUND_UP(nr, (unsigned)MQFS_JDESC_MAX);
}

/* Journal position of copy @i and of descriptor @k. */
static inline unsigned jnl_copy_pos(unsigned i)
{
	return i + i / (unsigned)MQFS_JDESC_MAX + 1;
}

static inline unsigned jnl_desc_pos(unsigned k)
{
	return k * ((unsigned)MQFS_JDESC_MAX + 1);
}

static inline void *jnl_blk(void *area, unsigned pos)
{
	return (char *)area + (size_t)pos * MQFS_BLOCK_SIZE;
}

/* journal_seq of the primary superblock, else the backup; 0: neither. */
uint64_t mqfs_journal_sb_seq(struct mqfs_fs *fs);
/* Never hand out a sequence below @next (replay saw it). */
void mqfs_journal_raise_seq(struct mqfs_fs *fs, uint64_t next);

#endif /* MQFS_JOURNAL_I_H */
