/* SPDX-License-Identifier: MIT */
/*
 * file_i.h - what file data (file.c) and a file's space (fspace.c)
 * share: block arithmetic, bounce buffers, the mapping lookup.
 */
#ifndef MQFS_FILE_I_H
#define MQFS_FILE_I_H

#include <stdint.h>

#include "fs_i.h"

#define FILE_BS			((uint64_t)MQFS_BLOCK_SIZE)
#define FILE_MASK		(FILE_BS - 1)

static inline uint64_t file_blk(uint64_t off)
{
	return off >> MQFS_BLOCK_SHIFT;
}

static inline uint64_t file_blk_up(uint64_t off)
{
	return (off + FILE_MASK) >> MQFS_BLOCK_SHIFT;
}

/* Bounce buffers: whole blocks, from the mount's pool (databuf.c). */
static inline void *file_buf_alloc(struct mqfs_fs *fs, uint64_t nblocks)
{
	if (nblocks > SIZE_MAX / FILE_BS)
		return NULL;
	return mqfs_databuf_get(fs, (size_t)(nblocks * FILE_BS));
}

static inline void file_buf_free(struct mqfs_fs *fs, void *p,
				 uint64_t nblocks)
{
	mqfs_databuf_put(fs, p, (size_t)(nblocks * FILE_BS));
}

static inline int file_map(struct mqfs_fs *fs, struct mqfs_ino *ip,
			   uint64_t lblk, uint64_t max, struct mqfs_map *m)
{
	return mqfs_extent_map(fs, ip, lblk,
			       (uint32_t)MQ_MIN(max, (uint64_t)UINT32_MAX), m);
}

#endif /* MQFS_FILE_I_H */
