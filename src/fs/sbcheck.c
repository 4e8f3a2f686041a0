// SPDX-License-Identifier: MIT
/*
 * sbcheck.c - what makes a superblock, or a block a journal transaction
 * carries home, acceptable: one set of rules for the mount, the journal
 * replay and fsck, so that none of them trusts what another refuses.
 *
 * A checksum only says a block is what someone wrote; it does not say
 * that what they wrote makes sense.  A sealed transaction carrying a
 * superblock of block size 4097 would be replayed, kept and, at the next
 * clean unmount, copied over the backup.
 */
#include <string.h>

#include "fs_i.h"

const char *mqfs_super_why_bad(const struct mqfs_super *sb,
			       uint64_t dev_blocks)
{
	uint64_t last_first, last_size, meta0;

	if (sb->format_version != MQFS_FORMAT_VERSION)
		return "unknown format version";
	if (sb->block_size != MQFS_BLOCK_SIZE)
		return "block size is not 4096";
	if (sb->block_count < MQFS_MIN_BLOCKS || sb->block_count > dev_blocks)
		return "block count does not fit the device";
	if (sb->ag_blocks < 64 || sb->ag_blocks > MQFS_AG_MAX_BLOCKS ||
	    sb->ag_count != (sb->block_count + sb->ag_blocks - 1) /
			    sb->ag_blocks)
		return "impossible allocation groups";
	if (!sb->inodes_per_ag || sb->inodes_per_ag % MQFS_INODES_PER_BLOCK ||
	    sb->inodes_per_ag > MQFS_BITMAP_BITS ||
	    sb->itable_blocks != sb->inodes_per_ag / MQFS_INODES_PER_BLOCK ||
	    sb->inode_count != (uint64_t)sb->ag_count * sb->inodes_per_ag)
		return "impossible inode counts";
	meta0 = 1 + (uint64_t)sb->journal_blocks;
	if (sb->journal_start != 1 || !sb->journal_blocks ||
	    meta0 + 3 + sb->itable_blocks + sb->aginit_blocks >=
	    MQ_MIN((uint64_t)sb->ag_blocks, sb->block_count))
		return "the journal does not fit";
	if (sb->feature_incompat & MQFS_FEATURE_INCOMPAT_LAZY_AGS ?
	    sb->aginit_blocks != (sb->ag_count - 1) / MQFS_BITMAP_BITS + 1 ||
	    sb->aginit_blk != meta0 + 3 + sb->itable_blocks :
	    sb->aginit_blocks || sb->aginit_blk)
		return "impossible AG-init map";
	if (sb->reserved)
		return "reserved field is not zero";
	last_first = (uint64_t)(sb->ag_count - 1) * sb->ag_blocks;
	last_size = sb->block_count - last_first;
	if (sb->ag_count > 1 && last_size < 3 + (uint64_t)sb->itable_blocks + 1)
		return "the last allocation group is too small";
	if (sb->root_ino != MQFS_ROOT_INO)
		return "root inode is not 1";
	return NULL;
}

int mqfs_super_unknown_features(const struct mqfs_super *sb)
{
	if (sb->feature_incompat & ~MQFS_FEATURE_INCOMPAT_SUPP)
		return MQFS_FEAT_UNREADABLE;
	if (sb->feature_ro_compat & ~MQFS_FEATURE_RO_COMPAT_SUPP)
		return MQFS_FEAT_READ_ONLY;
	return MQFS_FEAT_KNOWN;
}

/* 1, or a power of 3, 5 or 7 (as ext4's sparse_super groups). */
static bool sbc_sparse(uint32_t ag)
{
	static const uint32_t base[] = { 3, 5, 7 };

	if (ag == 1)
		return true;
	for (unsigned i = 0; i < MQ_ARRAY_SIZE(base); i++) {
		uint64_t p = base[i];

		while (p < ag)
			p *= base[i];
		if (p == ag)
			return true;
	}
	return false;
}

bool mqfs_ag_has_sb_copy(uint32_t ag, uint32_t ag_count)
{
	/* Not the last AG: its last block is the device's copy. */
	return ag >= 1 && ag + 1 < ag_count && sbc_sparse(ag);
}

unsigned mqfs_sb_copies(const struct mqfs_super *sb, uint64_t *out,
			unsigned max)
{
	unsigned n = 0;

	if (max)
		out[n++] = sb->block_count - 1;
	if (!(sb->feature_ro_compat & MQFS_FEATURE_RO_COMPAT_SB_BACKUPS))
		return n;
	for (uint32_t ag = 1; ag < sb->ag_count && n < max; ag++)
		if (mqfs_ag_has_sb_copy(ag, sb->ag_count))
			out[n++] = ((uint64_t)ag + 1) * sb->ag_blocks - 1;
	return n;
}

bool mqfs_super_same_fs(const struct mqfs_super *a, const struct mqfs_super *b)
{
	return a->block_count == b->block_count &&
	       a->ag_blocks == b->ag_blocks &&
	       a->inodes_per_ag == b->inodes_per_ag &&
	       a->journal_blocks == b->journal_blocks &&
	       !memcmp(a->uuid, b->uuid, sizeof(a->uuid));
}

static const char *const sbc_corrupt[] = {
	"a superblock copy and its home disagree",
	"it carries a bad superblock",
	"it carries the superblock of another filesystem",
};

bool mqfs_jcopy_corrupt(const char *why)
{
	for (unsigned i = 0; why && i < MQ_ARRAY_SIZE(sbc_corrupt); i++)
		if (why == sbc_corrupt[i])
			return true;
	return false;
}

const char *mqfs_jcopy_why_bad(const struct mqfs_super *sb, uint64_t dev_blocks,
			       uint64_t seq, uint64_t home, const void *blk)
{
	const struct mqfs_blk_hdr *h = blk;
	uint64_t js = sb->journal_start, last = sb->block_count - 1;
	bool super_home = home == 0 || home == last;

	if (home >= sb->block_count ||
	    (home >= js && home < js + sb->journal_blocks))
		return "its home is outside the filesystem or in the journal";
	if (!mqfs_blk_type_home(h->type) || h->gen != seq ||
	    mqfs_blk_verify(blk, h->type, home))
		return "it is not a sealed block of this transaction";
	if (super_home != (h->type == MQFS_T_SUPER))
		return sbc_corrupt[0];
	if (!super_home)
		return NULL;
	if (mqfs_super_why_bad(blk, dev_blocks) ||
	    mqfs_super_unknown_features(blk) == MQFS_FEAT_UNREADABLE)
		return sbc_corrupt[1];
	if (!mqfs_super_same_fs(blk, sb))
		return sbc_corrupt[2];
	return NULL;
}
