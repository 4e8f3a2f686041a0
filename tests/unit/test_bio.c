// SPDX-License-Identifier: MIT
/*
 * test_bio.c - the filesystem's I/O helpers (src/fs/bio.c, databuf.c):
 * a batch of bios waited for together reports its first error and the
 * block it hit; synchronous I/O round-trips; the data-buffer pool hands
 * out aligned memory, reuses a class's buffers (the last put first),
 * keeps no more than its 32 MiB cache, and maps the largest directly.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"
#include "mqfs/dev/fault.h"
#include "mqfs/dev/ram.h"
#include "t_main.h"

#define TB_BLOCKS	256u
#define TB_MIB		(1024u * 1024)

static struct mq_queue *tb_queue(struct mq_dev *dev)
{
	struct mq_queue_config cfg = { .elevator = "none" };
	struct mq_queue *q = mq_queue_create(dev, &cfg);

	ck_assert_ptr_nonnull(q);
	return q;
}

/* Writes, a read back, a flush; then a batch with one failing block. */
START_TEST(test_batch)
{
	struct mq_dev *ram = mq_ram_open(TB_BLOCKS * MQFS_BLOCK_SIZE, 16);
	struct mq_fault_config fc = {
		.eio_sector_start = mqfs_blk_to_sector(40),
		.eio_sector_end = mqfs_blk_to_sector(41),
		.eio_op_mask = 1u << MQ_OP_WRITE, .seed = 1,
	};
	uint8_t *buf = mqfs_alloc_blocks_mem(8), *back = mqfs_alloc_blocks_mem(8);
	struct mqfs_bio_batch b;
	struct mq_dev *fault;
	struct mq_queue *q;

	ck_assert_ptr_nonnull(ram);
	ck_assert(buf && back);
	for (unsigned i = 0; i < 8 * MQFS_BLOCK_SIZE; i++)
		ck_assert_uint_eq(buf[i], 0);		/* zeroed */
	memset(buf, 0x5c, 8 * MQFS_BLOCK_SIZE);
	fault = mq_fault_open(ram, &fc);
	ck_assert_ptr_nonnull(fault);
	q = tb_queue(fault);
	ck_assert_int_eq(mqfs_bio_sync(q, MQ_OP_WRITE, 8, buf, 8, 0), 0);
	ck_assert_int_eq(mqfs_bio_sync(q, MQ_OP_READ, 8, back, 8, 0), 0);
	ck_assert(!memcmp(buf, back, 8 * MQFS_BLOCK_SIZE));
	ck_assert_int_eq(mqfs_flush_device(q), 0);
	mqfs_batch_init(&b);
	for (unsigned i = 0; i < 4; i++)
		mqfs_batch_add(q, &b, MQ_OP_WRITE, 30 + 5 * i, buf, 1, 0);
	mqfs_batch_add(q, &b, MQ_OP_WRITE, 60, buf, 4, 0);
	ck_assert_int_eq(mqfs_batch_wait(&b), -EIO);
	ck_assert_uint_eq(b.error_blk, 40);	/* the one in the bad range */
	mq_queue_destroy(q);
	mq_dev_close(fault);
	mq_dev_close(ram);
	free(buf);
	free(back);
}
END_TEST

static bool tb_aligned(const void *p)
{
	return !((uintptr_t)p % MQFS_BLOCK_SIZE);
}

/* Small, class and direct buffers; reuse and the cache's bound. */
START_TEST(test_databuf)
{
	enum { N = 40 };
	struct mqfs_fs fs = { 0 };
	void *p, *q, *mine[N], *again[N];
	unsigned kept = 0;

	ck_assert_int_eq(mqfs_databuf_create(&fs), 0);
	p = mqfs_databuf_get(&fs, 4096);		/* malloc'd */
	ck_assert(p && tb_aligned(p));
	memset(p, 1, 4096);
	mqfs_databuf_put(&fs, p, 4096);
	p = mqfs_databuf_get(&fs, 8 * TB_MIB);	/* past the classes */
	ck_assert(p && tb_aligned(p));
	memset(p, 2, 8 * TB_MIB);
	mqfs_databuf_put(&fs, p, 8 * TB_MIB);
	p = mqfs_databuf_get(&fs, 200 * 1024);	/* the 256 KiB class */
	ck_assert(p && tb_aligned(p));
	memset(p, 3, 256 * 1024);
	mqfs_databuf_put(&fs, p, 200 * 1024);
	q = mqfs_databuf_get(&fs, 256 * 1024);
	ck_assert_ptr_eq(q, p);			/* the class's cached one */
	mqfs_databuf_put(&fs, q, 256 * 1024);
	/*
	 * 40 MiB given back: what is kept keeps its bytes, what was unmapped
	 * comes back as fresh zeroes (the address may be the same).
	 */
	for (unsigned i = 0; i < N; i++) {
		mine[i] = mqfs_databuf_get(&fs, TB_MIB);
		ck_assert_ptr_nonnull(mine[i]);
		memset((char *)mine[i] + 64, 0x7e, 64);
	}
	for (unsigned i = 0; i < N; i++)
		mqfs_databuf_put(&fs, mine[i], TB_MIB);
	for (unsigned i = 0; i < N; i++) {
		again[i] = mqfs_databuf_get(&fs, TB_MIB);
		ck_assert(again[i] && tb_aligned(again[i]));
		kept += ((unsigned char *)again[i])[64] == 0x7e;
	}
	/* 32 MiB less the 256 KiB buffer still cached: 31 of them. */
	ck_assert_uint_eq(kept, 31);
	for (unsigned i = 0; i < N; i++)
		mqfs_databuf_put(&fs, again[i], TB_MIB);
	mqfs_databuf_destroy(&fs);
	ck_assert_ptr_null(fs.databuf);
}
END_TEST

static Suite *bio_suite(void)
{
	Suite *s = suite_create("bio");
	TCase *tc = t_tcase(s, "bio", 60);

	tcase_add_test(tc, test_batch);
	tcase_add_test(tc, test_databuf);
	return s;
}

T_MAIN(bio_suite)
