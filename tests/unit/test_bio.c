// SPDX-License-Identifier: MIT
/*
 * test_bio.c - the filesystem's I/O helpers (src/fs/bio.c, databuf.c):
 * a set of bios grows past its inline ones, splits at MQFS_BIO_BLOCKS,
 * ends once with its first error and where it hit, and an empty or
 * failed set ends at once; a batch waited for reports its first error
 * and the block it hit; synchronous I/O round-trips; the mount's buffer
 * pool hands out aligned memory, reuses a class's buffers (the last put
 * first), keeps no more than its 32 MiB cache, and maps the largest
 * directly; a bounded pool shrinks its cache for room, says -EAGAIN when
 * full and lets one oversized buffer through when idle.
 */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"
#include "mqfs/dev/fault.h"
#include "mqfs/dev/ram.h"
#include "t_main.h"
#include "t_dev.h"

#define TB_BLOCKS	256u
#define TB_MIB		(1024u * 1024)

static struct mq_queue *tb_queue(struct mq_dev *dev)
{
	struct mq_queue_config cfg = { .elevator = "none" };
	struct mq_queue *q = t_queue_new(dev, &cfg);

	ck_assert_ptr_nonnull(q);
	return q;
}

/* Writes, a read back, a flush; then a batch with one failing block. */
START_TEST(test_batch)
{
	struct mq_dev *ram = t_dev_ram(TB_BLOCKS * MQFS_BLOCK_SIZE, 16);
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
	fault = t_dev_fault(ram, &fc);
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

struct tb_set {
	struct mqfs_bioset set;
	struct mq_bio inline_bios[2];
	atomic_int ended;
};

static void tb_set_done(struct mqfs_bioset *s)
{
	struct tb_set *t = mq_container_of(s, struct tb_set, set);

	atomic_fetch_add(&t->ended, 1);
}

static void tb_set_wait(struct tb_set *t)
{
	mq_flush_plug();
	while (!atomic_load(&t->ended))
		sched_yield();
}

/* Growth, splitting, priority, the first error and its place. */
START_TEST(test_bioset)
{
	struct mq_dev *ram = t_dev_ram(TB_BLOCKS * 4 * MQFS_BLOCK_SIZE, 16);
	struct mq_fault_config fc = {
		.eio_sector_start = mqfs_blk_to_sector(700),
		.eio_sector_end = mqfs_blk_to_sector(701),
		.eio_op_mask = 1u << MQ_OP_WRITE, .seed = 1,
	};
	uint8_t *buf = mqfs_alloc_blocks_mem(600);
	struct tb_set t = { 0 };
	struct mq_dev *fault;
	struct mq_queue *q;

	ck_assert(ram && buf);
	fault = t_dev_fault(ram, &fc);
	ck_assert_ptr_nonnull(fault);
	q = tb_queue(fault);
	mqfs_bioset_init(&t.set, t.inline_bios, 2, tb_set_done);
	t.set.prio_class = MQ_PRIO_IDLE;
	/* 600 blocks: 256 + 256 + 88, the third past the inline two. */
	ck_assert_int_eq(mqfs_bioset_add(&t.set, MQ_OP_WRITE, 0, buf, 600,
					 MQ_REQ_SYNC), 0);
	ck_assert_uint_eq(t.set.nbios, 3);
	ck_assert_ptr_ne(t.set.bios, t.inline_bios);
	ck_assert_uint_eq(t.set.bios[1].sector, mqfs_blk_to_sector(256));
	ck_assert_ptr_eq(t.set.bios[2].buf, buf + 512 * MQFS_BLOCK_SIZE);
	ck_assert_uint_eq(t.set.bios[2].size, 88 * MQFS_BLOCK_SIZE);
	ck_assert_uint_eq(t.set.bios[2].prio_class, MQ_PRIO_IDLE);
	ck_assert_int_eq(mqfs_bioset_add(&t.set, MQ_OP_WRITE, 650, buf, 100,
					 0), 0);
	mqfs_bioset_submit(q, &t.set);
	tb_set_wait(&t);
	ck_assert_int_eq(mqfs_bioset_error(&t.set), -EIO);
	/* The failing bio's start: 650 + 0 (one bio of 100 blocks). */
	ck_assert_uint_eq(t.set.error_sector, mqfs_blk_to_sector(650));
	mqfs_bioset_release(&t.set);
	ck_assert_int_eq(atomic_load(&t.ended), 1);

	/* Empty, and failed before submission: done at once, once. */
	t.ended = 0;
	mqfs_bioset_init(&t.set, t.inline_bios, 2, tb_set_done);
	mqfs_bioset_submit(q, &t.set);
	ck_assert_int_eq(atomic_load(&t.ended), 1);
	ck_assert_int_eq(mqfs_bioset_error(&t.set), 0);
	t.ended = 0;
	mqfs_bioset_init(&t.set, t.inline_bios, 2, tb_set_done);
	ck_assert_int_eq(mqfs_bioset_add(&t.set, MQ_OP_READ, 0, buf, 8, 0), 0);
	mqfs_bioset_fail(&t.set, -ENOSPC);
	mqfs_bioset_submit(q, &t.set);
	ck_assert_int_eq(atomic_load(&t.ended), 1);
	ck_assert_int_eq(mqfs_bioset_error(&t.set), -ENOSPC);
	mq_queue_destroy(q);
	mq_dev_close(fault);
	mq_dev_close(ram);
	free(buf);
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

/* A pool bounded at 64 KiB of 4-32 KiB buffers. */
START_TEST(test_bufpool_bound)
{
	const struct mqfs_bufpool_cfg cfg = {
		.min_shift = 12, .nr_classes = 4,
		.limit = 64 * 1024, .cache_max = 64 * 1024,
	};
	const struct mqfs_bufpool_cfg bad = { .min_shift = 12 };
	struct mqfs_bufpool_stats st;
	struct mqfs_bufpool *bp;
	void *a, *b, *c, *big;

	ck_assert_int_eq(mqfs_bufpool_create(&bad, &bp), -EINVAL);
	ck_assert_int_eq(mqfs_bufpool_create(&cfg, &bp), 0);
	ck_assert_int_eq(mqfs_bufpool_get(bp, 32 * 1024, &a), 0);
	ck_assert_int_eq(mqfs_bufpool_get(bp, 20 * 1024, &b), 0); /* 32 K */
	ck_assert(tb_aligned(a) && tb_aligned(b));
	ck_assert_int_eq(mqfs_bufpool_get(bp, 4096, &c), -EAGAIN);
	mqfs_bufpool_put(bp, b, 20 * 1024);
	mqfs_bufpool_stats(bp, &st);
	ck_assert_uint_eq(st.held, 64 * 1024);
	ck_assert_uint_eq(st.cached, 32 * 1024);
	ck_assert_uint_eq(st.in_use, 32 * 1024);
	/* A 4 KiB buffer: the cached 32 KiB one is freed to make room. */
	ck_assert_int_eq(mqfs_bufpool_get(bp, 4096, &c), 0);
	mqfs_bufpool_stats(bp, &st);
	ck_assert_uint_eq(st.held, 36 * 1024);
	ck_assert_uint_eq(st.cached, 0);
	mqfs_bufpool_put(bp, c, 4096);
	mqfs_bufpool_put(bp, a, 32 * 1024);
	/* Larger than the bound: only when nothing is in use. */
	ck_assert_int_eq(mqfs_bufpool_get(bp, 4096, &c), 0);
	ck_assert_int_eq(mqfs_bufpool_get(bp, 128 * 1024, &big), -EAGAIN);
	mqfs_bufpool_put(bp, c, 4096);
	ck_assert_int_eq(mqfs_bufpool_get(bp, 128 * 1024, &big), 0);
	memset(big, 9, 128 * 1024);
	mqfs_bufpool_stats(bp, &st);
	ck_assert_uint_eq(st.held, 128 * 1024);
	ck_assert_uint_eq(st.held_peak, 128 * 1024);
	mqfs_bufpool_put(bp, big, 128 * 1024);	/* freed, not cached */
	mqfs_bufpool_stats(bp, &st);
	ck_assert_uint_eq(st.held, 0);
	ck_assert_uint_eq(st.in_use, 0);
	mqfs_bufpool_destroy(bp);
}
END_TEST

static Suite *bio_suite(void)
{
	Suite *s = suite_create("bio");
	TCase *tc = t_tcase(s, "bio", 60);

	tcase_add_test(tc, test_bioset);
	tcase_add_test(tc, test_batch);
	tcase_add_test(tc, test_databuf);
	tcase_add_test(tc, test_bufpool_bound);
	return s;
}

T_MAIN(bio_suite)
