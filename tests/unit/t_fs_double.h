/* SPDX-License-Identifier: MIT */
/*
 * t_fs_double.h - for the tests of the buffer cache and the journal,
 * which run those modules on a bare struct mqfs_fs without the rest of
 * the filesystem: a test double of mqfs_fs_error() that counts, and raw
 * access to the ram device underneath.  Include once per test program.
 */
#ifndef MQFS_TESTS_T_FS_DOUBLE_H
#define MQFS_TESTS_T_FS_DOUBLE_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "fs_i.h"
#include "mqfs/mq_dev.h"

static atomic_uint t_errors;
static _Atomic uint64_t t_error_blk;

void mqfs_fs_error(struct mqfs_fs *fs, uint64_t blocknr, const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add(&t_errors, 1);
	atomic_store(&t_error_blk, blocknr);
	atomic_store(&fs->error_seen, true);
	va_start(ap, fmt);
	fprintf(stderr, "test double mqfs_fs_error(block %" PRIu64 "): ",
		blocknr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

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
