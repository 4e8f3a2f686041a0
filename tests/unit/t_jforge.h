/* SPDX-License-Identifier: MIT */
/*
 * t_jforge.h - forge a checksum-valid journal: damage the superblock
 * copy of the committed transaction at the start of the journal, reseal
 * it and recompute the commit block's body checksum, as a hostile or
 * buggy writer would leave it.  For the journal and fsck tests.
 */
#ifndef MQFS_TESTS_T_JFORGE_H
#define MQFS_TESTS_T_JFORGE_H

#include <check.h>
#include <stdint.h>
#include <xxhash.h>

#include "mqfs/format.h"
#include "fs_i.h"

/*
 * @journal points at journal block 0, which is device block @jstart;
 * the transaction there has one descriptor listing the superblock.
 */
static inline void t_jforge_super(uint8_t *journal, uint64_t jstart,
				  void (*damage)(struct mqfs_super *))
{
	const struct mqfs_jdesc *d = (const void *)journal;
	struct mqfs_jcommit *c =
		(void *)(journal + (size_t)(1 + d->nr) * MQFS_BLOCK_SIZE);
	struct mqfs_super *copy = NULL;

	ck_assert_msg(!mqfs_blk_verify(d, MQFS_T_JDESC, jstart),
		      "no transaction in the journal");
	for (unsigned i = 0; i < d->nr; i++)
		if (d->home[i] == 0)
			copy = (void *)(journal + (size_t)(1 + i) *
					MQFS_BLOCK_SIZE);
	ck_assert_msg(copy != NULL, "the transaction has no superblock");
	damage(copy);
	mqfs_blk_seal(copy, MQFS_T_SUPER, 0, copy->hdr.gen);
	c->body_csum = XXH3_64bits(d, (size_t)(1 + d->nr) * MQFS_BLOCK_SIZE);
	mqfs_blk_seal(c, MQFS_T_JCOMMIT, jstart + 1 + d->nr, c->hdr.gen);
}

/* The damage the hostile campaign used, and a foreign superblock. */
static inline void t_jforge_bad_geometry(struct mqfs_super *sb)
{
	sb->block_size = 4097;
	sb->root_ino = 1ull << 63;
}

static inline void t_jforge_other_fs(struct mqfs_super *sb)
{
	sb->uuid[0] ^= 0xff;
}

#endif /* MQFS_TESTS_T_JFORGE_H */
