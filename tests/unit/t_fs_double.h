/* SPDX-License-Identifier: MIT */
/*
 * t_fs_double.h - for the tests of the buffer cache and the journal,
 * which run those modules on a bare struct mqfs_fs without the rest of
 * the filesystem: raw access to the ram device underneath.  Errors they
 * report are counted in the struct (fs->errors, fs->last_error_blk) by
 * the real mqfs_fs_error (fs_err.c, a leaf).
 */
#ifndef MQFS_TESTS_T_FS_DOUBLE_H
#define MQFS_TESTS_T_FS_DOUBLE_H

#include <string.h>

#include "fs_i.h"
#include "mqfs/mq_dev.h"
#include "mqfs/dev/ram.h"

/* Block @blk of the ram device, bypassing every cache. */
static inline void *t_ram_blk(struct mq_dev *ram, uint64_t blk)
{
	return (char *)mq_ram_data(ram) + blk * MQFS_BLOCK_SIZE;
}

/* A sealed metadata block of @type at @blk whose payload bytes are @v. */
static inline void t_put_meta(struct mq_dev *ram, uint64_t blk,
			      unsigned type, uint8_t v)
{
	unsigned char *p = t_ram_blk(ram, blk);

	memset(p, v, MQFS_BLOCK_SIZE);
	mqfs_blk_seal(p, type, blk, 1);
}

#endif /* MQFS_TESTS_T_FS_DOUBLE_H */
