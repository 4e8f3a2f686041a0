/* SPDX-License-Identifier: MIT */
/*
 * test_buf.c - Check unit tests for the metadata buffer cache
 * (src/fs/buf.c) on a ram device, with a hand-built struct mqfs_fs.
 *
 * Tested: a read is verified, cached and hit; a corrupted block (a
 * flipped byte, a block sealed for another address, a wrong type) gives
 * -EUCLEAN and one mqfs_fs_error naming the block, and is not cached as
 * good (fixed on the device, it reads fine); an all-zero inode table
 * block is accepted and no other all-zero block is; device errors give
 * -EIO; the cache keeps its bound, may exceed it only by held buffers,
 * and never drops held, DIRTY or CHECKPOINT ones; buf_new zeroes a
 * cached copy; forget drops a clean copy at once or at its last put;
 * concurrent readers read each block from the device exactly once.
 *
 * mqfs_fs_error belongs to super.c: this program defines a test double
 * that counts calls instead of linking the whole filesystem.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "t_util.h"
#include "fs_i.h"
#include "t_fs_double.h"
#include "t_main.h"
#include "mqfs/dev/fault.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

#define RIG_BLOCKS	1024u			/* 4 MiB */
#define BS		MQFS_BLOCK_SIZE

/* ---- rig: ram device (optionally under a fault device) + fs ---------- */

struct rig {
	struct mq_dev *ram, *dev;
	struct mq_queue *q;
	struct mqfs_fs fs;
};

static void rig_open(struct rig *r, uint64_t cache_bytes,
		     const struct mq_fault_config *fault)
{
	struct mq_queue_config qc = { .elevator = "none" };

	memset(r, 0, sizeof(*r));
	r->ram = t_dev_ram((uint64_t)RIG_BLOCKS * BS, 64);
	t_check(r->ram != NULL, "mq_ram_open");
	r->dev = r->ram;
	if (fault) {
		r->dev = t_dev_fault(r->ram, fault);
		t_check(r->dev != NULL, "mq_fault_open");
	}
	r->q = t_queue_create(r->dev, &qc);
	r->fs.q = r->q;
	r->fs.block_count = RIG_BLOCKS;
	r->fs.journal_start = 1;
	r->fs.journal_blocks = 16;
	t_check(mqfs_bcache_create(&r->fs, cache_bytes) == 0, "bcache_create");
	t_check(r->fs.bcache != NULL, "fs->bcache set");
}

static void rig_close(struct rig *r)
{
	mqfs_bcache_destroy(&r->fs);
	t_check(r->fs.bcache == NULL, "fs->bcache cleared");
	mq_queue_destroy(r->q);
	if (r->dev != r->ram)
		mq_dev_close(r->dev);
	mq_dev_close(r->ram);
}

struct bstats {
	uint64_t cached, hits, misses;
};

static struct bstats bstats(struct rig *r)
{
	struct bstats s;

	mqfs_bcache_stats(&r->fs, &s.cached, &s.hits, &s.misses);
	return s;
}

static const unsigned char *payload(const struct mqfs_buf *b)
{
	return (const unsigned char *)b->data + MQFS_HDR_SIZE;
}

static bool payload_is(const struct mqfs_buf *b, uint8_t v)
{
	for (unsigned i = 0; i < MQFS_PAYLOAD; i++)
		if (payload(b)[i] != v)
			return false;
	return true;
}

/* ---- reading and verifying ------------------------------------------- */

START_TEST(test_read_hit)
{
	struct mqfs_buf *a, *b;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 1 << 20, NULL);
	t_put_meta(r.ram, 100, MQFS_T_DIR, 0x5a);
	t_check(mqfs_buf_read(&r.fs, 100, MQFS_T_DIR, &a) == 0, "read");
	t_check(a->blocknr == 100 && a->type == MQFS_T_DIR, "identity");
	t_check(atomic_load(&a->flags) & MQFS_BUF_UPTODATE, "uptodate");
	t_check(((uintptr_t)a->data & (BS - 1)) == 0, "4 KiB aligned");
	t_check(payload_is(a, 0x5a), "content");
	t_check_u64(bstats(&r).misses, 1, "misses");
	/* Changing the device behind the cache shows: it is a hit. */
	t_put_meta(r.ram, 100, MQFS_T_DIR, 0x11);
	t_check(mqfs_buf_read(&r.fs, 100, MQFS_T_DIR, &b) == 0, "read again");
	t_check(a == b && payload_is(b, 0x5a), "same cached buffer");
	t_check_u64(bstats(&r).hits, 1, "hits");
	t_check_u64(atomic_load(&a->refcount), 2, "two references");
	mqfs_buf_put(b);
	mqfs_buf_get(a);
	mqfs_buf_put(a);
	mqfs_buf_put(a);
	t_check_u64(atomic_load(&a->refcount), 0, "released");
	t_check_u64(bstats(&r).cached, 1, "still cached");
	t_check_u64(atomic_load(&r.fs.errors), 0, "no errors");
	rig_close(&r);
}
END_TEST

START_TEST(test_corrupt)
{
	struct mqfs_buf *b = (void *)1;
	unsigned char *p;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 1 << 20, NULL);
	t_put_meta(r.ram, 200, MQFS_T_EXTENT, 0x33);
	p = t_ram_blk(r.ram, 200);
	p[1000] ^= 0x04;
	t_check(mqfs_buf_read(&r.fs, 200, MQFS_T_EXTENT, &b) == -EUCLEAN,
		"flipped bit");
	t_check(b == NULL, "no buffer on error");
	t_check_u64(atomic_load(&r.fs.errors), 1, "fs_error calls");
	t_check_u64(atomic_load(&r.fs.last_error_blk), 200, "fs_error block");
	/* Not cached as good: the second read goes to the device again. */
	t_check(mqfs_buf_read(&r.fs, 200, MQFS_T_EXTENT, &b) == -EUCLEAN,
		"still bad");
	t_check_u64(atomic_load(&r.fs.errors), 2, "fs_error calls");
	t_check_u64(bstats(&r).cached, 0, "bad block not cached");
	p[1000] ^= 0x04;
	t_check(mqfs_buf_read(&r.fs, 200, MQFS_T_EXTENT, &b) == 0, "fixed");
	t_check(payload_is(b, 0x33), "content after the fix");
	mqfs_buf_put(b);

	/* Sealed for block 201 but found at 202: a misdirected write. */
	t_put_meta(r.ram, 201, MQFS_T_DIR, 1);
	memcpy(t_ram_blk(r.ram, 202), t_ram_blk(r.ram, 201), BS);
	t_check(mqfs_buf_read(&r.fs, 202, MQFS_T_DIR, &b) == -EUCLEAN,
		"misdirected");
	t_check_u64(atomic_load(&r.fs.last_error_blk), 202, "fs_error block");
	/* The right block read as the wrong type, uncached and cached. */
	t_check(mqfs_buf_read(&r.fs, 201, MQFS_T_XATTR, &b) == -EUCLEAN,
		"wrong type from the device");
	t_check(mqfs_buf_read(&r.fs, 201, MQFS_T_DIR, &b) == 0, "right type");
	mqfs_buf_put(b);
	t_check(mqfs_buf_read(&r.fs, 201, MQFS_T_XATTR, &b) == -EUCLEAN,
		"wrong type from the cache");
	t_check(mqfs_buf_read(&r.fs, RIG_BLOCKS, MQFS_T_DIR, &b) == -EUCLEAN,
		"past the end");
	t_check_u64(atomic_load(&r.fs.errors), 6, "fs_error calls");
	rig_close(&r);
}
END_TEST

START_TEST(test_zero_itable)
{
	struct mqfs_buf *b;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 1 << 20, NULL);
	t_check(mqfs_buf_read(&r.fs, 300, MQFS_T_ITABLE, &b) == 0,
		"zero inode table block");
	t_check(b->type == MQFS_T_ITABLE && payload_is(b, 0), "empty table");
	mqfs_buf_put(b);
	for (unsigned t = MQFS_T_SUPER; t < MQFS_T_COUNT; t++) {
		if (t == MQFS_T_ITABLE)
			continue;
		t_check(mqfs_buf_read(&r.fs, 301 + t, t, &b) == -EUCLEAN,
			"zero block of type %u", t);
	}
	t_check_u64(atomic_load(&r.fs.errors), MQFS_T_COUNT - 2, "fs_errors");
	/* One nonzero byte and it is no longer "mkfs's zeroes". */
	((unsigned char *)t_ram_blk(r.ram, 320))[4095] = 1;
	t_check(mqfs_buf_read(&r.fs, 320, MQFS_T_ITABLE, &b) == -EUCLEAN,
		"almost zero inode table block");
	rig_close(&r);
}
END_TEST

START_TEST(test_device_error)
{
	struct mq_fault_config fc = {
		.seed = 1, .eio_op_mask = 1u << MQ_OP_READ,
		.eio_sector_start = 400 * MQFS_SECTORS_PER_BLOCK,
		.eio_sector_end = 401 * MQFS_SECTORS_PER_BLOCK,
	};
	struct mqfs_buf *b;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 1 << 20, &fc);
	t_put_meta(r.ram, 400, MQFS_T_DIR, 7);
	t_put_meta(r.ram, 401, MQFS_T_DIR, 8);
	t_check(mqfs_buf_read(&r.fs, 400, MQFS_T_DIR, &b) == -EIO, "EIO");
	t_check_u64(atomic_load(&r.fs.errors), 0, "no fs_error for EIO");
	t_check(mqfs_buf_read(&r.fs, 401, MQFS_T_DIR, &b) == 0, "neighbour");
	t_check(payload_is(b, 8), "neighbour content");
	mqfs_buf_put(b);
	t_check_u64(bstats(&r).cached, 1, "failed block not cached");
	rig_close(&r);
}
END_TEST

/* ---- the bound and pinning -------------------------------------------- */

#define SMALL_CACHE	(16u * BS)

START_TEST(test_evict_bound)
{
	struct mqfs_buf *b, *held[24];
	struct rig r;

	T_BEGIN();
	rig_open(&r, SMALL_CACHE, NULL);
	for (unsigned i = 0; i < 300; i++)
		t_put_meta(r.ram, 500 + i, MQFS_T_EXTENT, (uint8_t)i);
	for (unsigned i = 0; i < 100; i++) {
		t_check(mqfs_buf_read(&r.fs, 500 + i, MQFS_T_EXTENT, &b) == 0,
			"read %u", i);
		t_check(payload_is(b, (uint8_t)i), "content %u", i);
		mqfs_buf_put(b);
		t_check(bstats(&r).cached <= 16, "bound after %u: %" PRIu64,
			i, bstats(&r).cached);
	}
	/* LRU: the most recent 16 are still there, the oldest are not. */
	t_check(mqfs_buf_read(&r.fs, 599, MQFS_T_EXTENT, &b) == 0, "recent");
	mqfs_buf_put(b);
	t_check_u64(bstats(&r).hits, 1, "recent block was a hit");
	t_check(mqfs_buf_read(&r.fs, 500, MQFS_T_EXTENT, &b) == 0, "old");
	mqfs_buf_put(b);
	t_check_u64(bstats(&r).misses, 101, "old block was evicted");

	/* Held buffers may exceed the bound and survive any pressure. */
	for (unsigned i = 0; i < 24; i++)
		t_check(mqfs_buf_read(&r.fs, 700 + i, MQFS_T_EXTENT,
				      &held[i]) == 0, "hold %u", i);
	t_check(bstats(&r).cached >= 24, "held beyond the bound");
	for (unsigned i = 0; i < 50; i++) {
		t_check(mqfs_buf_read(&r.fs, 600 + i, MQFS_T_EXTENT, &b) == 0,
			"pressure %u", i);
		mqfs_buf_put(b);
	}
	t_check_u64(bstats(&r).cached, 24, "only the held ones remain");
	for (unsigned i = 0; i < 24; i++) {
		t_check(payload_is(held[i], (uint8_t)(200 + i)), "held %u", i);
		mqfs_buf_put(held[i]);
	}
	t_check_u64(bstats(&r).cached, 16, "back to the bound");
	rig_close(&r);
}
END_TEST

/*
 * DIRTY and CHECKPOINT buffers are never evicted.  (The journal holds a
 * reference on them; here the flags are set on unheld buffers to check
 * eviction itself.)
 */
START_TEST(test_evict_pinned)
{
	unsigned pin[2] = { MQFS_BUF_DIRTY, MQFS_BUF_CHECKPOINT };
	struct mqfs_buf *b, *p[2];
	struct rig r;

	T_BEGIN();
	rig_open(&r, SMALL_CACHE, NULL);
	for (unsigned i = 0; i < 2; i++) {
		t_put_meta(r.ram, 10 + i, MQFS_T_DIR, 0x40);
		t_check(mqfs_buf_read(&r.fs, 10 + i, MQFS_T_DIR, &p[i]) == 0,
			"read");
		atomic_fetch_or(&p[i]->flags, pin[i]);
		memset((char *)p[i]->data + MQFS_HDR_SIZE, 0x41, MQFS_PAYLOAD);
		mqfs_buf_put(p[i]);
	}
	for (unsigned i = 0; i < 100; i++) {
		t_put_meta(r.ram, 500 + i, MQFS_T_DIR, 1);
		t_check(mqfs_buf_read(&r.fs, 500 + i, MQFS_T_DIR, &b) == 0,
			"pressure %u", i);
		mqfs_buf_put(b);
	}
	for (unsigned i = 0; i < 2; i++) {
		t_check(mqfs_buf_read(&r.fs, 10 + i, MQFS_T_DIR, &b) == 0,
			"pinned %u", i);
		t_check(b == p[i] && payload_is(b, 0x41),
			"pinned buffer %u kept with its changes", i);
		atomic_fetch_and(&b->flags, ~pin[i]);
		mqfs_buf_put(b);
	}
	rig_close(&r);
}
END_TEST

/* ---- new and forget ----------------------------------------------------- */

START_TEST(test_new_forget)
{
	struct mqfs_buf *a, *b;
	struct rig r;

	T_BEGIN();
	rig_open(&r, 1 << 20, NULL);
	t_put_meta(r.ram, 50, MQFS_T_DIR, 0x77);
	t_check(mqfs_buf_new(&r.fs, 60, MQFS_T_EXTENT, &a) == 0, "new");
	t_check(payload_is(a, 0) && a->type == MQFS_T_EXTENT, "zeroed");
	t_check(atomic_load(&a->flags) & MQFS_BUF_UPTODATE, "uptodate");
	memset(a->data, 0x12, BS);
	mqfs_buf_put(a);
	t_check(mqfs_buf_read(&r.fs, 60, MQFS_T_EXTENT, &b) == 0,
		"read of a new block comes from the cache");
	t_check(b == a && payload_is(b, 0x12), "cached content");
	mqfs_buf_put(b);

	/* A cached block reallocated with another type: zeroed, retyped. */
	t_check(mqfs_buf_read(&r.fs, 50, MQFS_T_DIR, &a) == 0, "read");
	mqfs_buf_put(a);
	t_check(mqfs_buf_new(&r.fs, 50, MQFS_T_XATTR, &b) == 0, "renew");
	t_check(a == b && payload_is(b, 0) && b->type == MQFS_T_XATTR,
		"reused, zeroed, retyped");
	t_check_u64(bstats(&r).misses, 1, "buf_new never reads");
	mqfs_buf_put(b);
	t_check(mqfs_buf_new(&r.fs, RIG_BLOCKS, MQFS_T_DIR, &b) == -EINVAL,
		"new past the end");

	/* forget: clean and unheld goes at once... */
	t_check_u64(bstats(&r).cached, 2, "cached");
	mqfs_buf_forget(&r.fs, 60);
	t_check_u64(bstats(&r).cached, 1, "forgotten");
	mqfs_buf_forget(&r.fs, 61);	/* never cached: nothing happens */
	/* ...held goes at its last put; the holder keeps a valid buffer. */
	t_check(mqfs_buf_read(&r.fs, 50, MQFS_T_XATTR, &a) == 0, "hold");
	mqfs_buf_forget(&r.fs, 50);
	t_check_u64(bstats(&r).cached, 1, "held: kept");
	t_check(payload_is(a, 0), "still readable");
	mqfs_buf_put(a);
	t_check_u64(bstats(&r).cached, 0, "dropped at the last put");
	/* Read again: from the device (which still has the DIR block). */
	t_check(mqfs_buf_read(&r.fs, 50, MQFS_T_DIR, &a) == 0, "reread");
	t_check(payload_is(a, 0x77), "device content");
	mqfs_buf_put(a);
	rig_close(&r);
}
END_TEST

/* ---- concurrency ------------------------------------------------------------ */

#define CR_THREADS	8
#define CR_BLOCKS	64

struct cr_arg {
	struct rig *r;
	unsigned id;
	int bad;
};

static void *cr_reader(void *p)
{
	struct cr_arg *a = p;

	for (unsigned n = 0; n < 2000; n++) {
		unsigned i = (n * 7 + a->id * 13) % CR_BLOCKS;
		struct mqfs_buf *b;

		if (mqfs_buf_read(&a->r->fs, 800 + i, MQFS_T_DIR, &b)) {
			a->bad++;
			continue;
		}
		if (n % 3 == 0)
			mqfs_buf_get(b), mqfs_buf_put(b);
		mqfs_buf_lock(b);
		a->bad += !payload_is(b, (uint8_t)(i + 1));
		mqfs_buf_unlock(b);
		mqfs_buf_put(b);
	}
	return NULL;
}

/* Every block read from the device once, however many threads race. */
START_TEST(test_concurrent_readers)
{
	struct cr_arg a[CR_THREADS];
	pthread_t th[CR_THREADS];
	struct rig r;

	T_BEGIN();
	rig_open(&r, 1 << 20, NULL);
	for (unsigned i = 0; i < CR_BLOCKS; i++)
		t_put_meta(r.ram, 800 + i, MQFS_T_DIR, (uint8_t)(i + 1));
	for (unsigned t = 0; t < CR_THREADS; t++) {
		a[t] = (struct cr_arg){ .r = &r, .id = t };
		t_check(pthread_create(&th[t], NULL, cr_reader, &a[t]) == 0,
			"thread");
	}
	for (unsigned t = 0; t < CR_THREADS; t++) {
		pthread_join(th[t], NULL);
		t_check(a[t].bad == 0, "thread %u saw %d bad reads", t,
			a[t].bad);
	}
	t_check_u64(bstats(&r).misses, CR_BLOCKS, "one device read per block");
	t_check_u64(bstats(&r).hits, CR_THREADS * 2000 - CR_BLOCKS, "hits");
	rig_close(&r);
}
END_TEST

/* Concurrent readers under eviction pressure with a tiny cache. */
START_TEST(test_concurrent_evict)
{
	struct cr_arg a[CR_THREADS];
	pthread_t th[CR_THREADS];
	struct rig r;

	T_BEGIN();
	rig_open(&r, 4 * BS, NULL);
	for (unsigned i = 0; i < CR_BLOCKS; i++)
		t_put_meta(r.ram, 800 + i, MQFS_T_DIR, (uint8_t)(i + 1));
	for (unsigned t = 0; t < CR_THREADS; t++) {
		a[t] = (struct cr_arg){ .r = &r, .id = t };
		t_check(pthread_create(&th[t], NULL, cr_reader, &a[t]) == 0,
			"thread");
	}
	for (unsigned t = 0; t < CR_THREADS; t++) {
		pthread_join(th[t], NULL);
		t_check(a[t].bad == 0, "thread %u saw %d bad reads", t,
			a[t].bad);
	}
	t_check(bstats(&r).cached <= 4, "bound: %" PRIu64, bstats(&r).cached);
	rig_close(&r);
}
END_TEST

static Suite *buf_suite(void)
{
	Suite *s = suite_create("buf");
	TCase *c = t_tcase(s, "core", 60);

	tcase_add_test(c, test_read_hit);
	tcase_add_test(c, test_corrupt);
	tcase_add_test(c, test_zero_itable);
	tcase_add_test(c, test_device_error);
	tcase_add_test(c, test_evict_bound);
	tcase_add_test(c, test_evict_pinned);
	tcase_add_test(c, test_new_forget);
	tcase_add_test(c, test_concurrent_readers);
	tcase_add_test(c, test_concurrent_evict);
	return s;
}

T_MAIN(buf_suite)
