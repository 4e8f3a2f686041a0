// SPDX-License-Identifier: MIT
/*
 * csum.c - metadata block headers and their XXH3-64 checksums.
 *
 * The checksum covers bytes 8..4095: everything but itself, so the
 * block number, type and generation in the header are protected with
 * the content (FORMAT.md, "Metadata blocks").
 */
#include <errno.h>
#include <xxhash.h>

#include "fs_i.h"

uint64_t mqfs_hash(const void *data, size_t len)
{
	return XXH3_64bits(data, len);
}

void mqfs_blk_update_csum(void *blk)
{
	struct mqfs_blk_hdr *h = blk;

	h->csum = XXH3_64bits((const char *)blk + sizeof(h->csum),
			      MQFS_BLOCK_SIZE - sizeof(h->csum));
}

void mqfs_blk_seal(void *blk, unsigned type, uint64_t blocknr, uint64_t gen)
{
	struct mqfs_blk_hdr *h = blk;

	h->magic = MQFS_MAGIC;
	h->type = (uint16_t)type;
	h->flags = 0;
	h->blocknr = blocknr;
	h->gen = gen;
	mqfs_blk_update_csum(blk);
}

int mqfs_blk_verify(const void *blk, unsigned type, uint64_t blocknr)
{
	const struct mqfs_blk_hdr *h = blk;
	uint64_t sum;

	if (h->magic != MQFS_MAGIC || h->type != type || h->blocknr != blocknr)
		return -EUCLEAN;
	sum = XXH3_64bits((const char *)blk + sizeof(h->csum),
			  MQFS_BLOCK_SIZE - sizeof(h->csum));
	return sum == h->csum ? 0 : -EUCLEAN;
}
