/* SPDX-License-Identifier: MIT */
/*
 * test_fault.c - Check unit tests for the fault-injection device
 * (sched/dev/fault.c) stacked on a ram device, data checked byte for byte.
 *
 * Tested: plain pass-through; EIO by LBA range (exactly the requests
 * touching it fail, and never reach the ram device), by op mask, every
 * Nth candidate (exactly), and by probability (the same seed fails the
 * same set twice, another seed a different one), rules changed at run
 * time; added latency with the fake clock (nothing completes a nanosecond
 * early, completions in due order) and with the real clock; the volatile
 * cache (reads see the cache while the ram still holds old data; flush
 * and FUA write down; discard caches zeroes); power cut LOSE (exactly the
 * unflushed sectors are lost) and TORN (the same seed loses the same
 * sectors, whatever the write history, every sector whole old or whole
 * new); all I/O failing after a cut, requests in flight at the cut
 * failing once; merged multi-bio requests; threads with a model.  Every
 * test checks that each bio ended exactly once and the queue tears down
 * clean.  Sync I/O: each bio is waited for before the next is sent, so
 * requests never merge unless a test plugs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "t_util.h"
#include "t_main.h"
#include "mqfs/dev/fault.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

#define DEV_SECT	8192u				/* 4 MiB ram device */
#define DEV_BYTES	((uint64_t)DEV_SECT * MQ_SECTOR_SIZE)
#define BUF_BYTES	(32 * T_KB)			/* data per pool bio */
#define BS		(4 * T_KB)
#define BS_SECT		(BS >> MQ_SECTOR_SHIFT)
#define OP(op)		(1u << (op))

struct rig {
	struct mq_dev *ram, *dev;
	struct mq_queue *q;
	struct t_bio_pool p;
};

/* ---- data patterns: every sector names its version (tag) and place ---- */

/* Tag 0 is the ram device's initial zeroes. */
static void fill_sector(unsigned char *b, unsigned tag, uint64_t sector)
{
	if (!tag) {
		memset(b, 0, MQ_SECTOR_SIZE);
		return;
	}
	for (unsigned k = 0; k < MQ_SECTOR_SIZE; k++)
		b[k] = (unsigned char)(tag * 73 + sector * 151 + k * 7 + 1);
	memcpy(b, &tag, sizeof(tag));
	memcpy(b + sizeof(tag), &sector, sizeof(sector));
}

static void fill(void *buf, unsigned tag, uint64_t sector, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		fill_sector((unsigned char *)buf + i * MQ_SECTOR_SIZE, tag,
			    sector + i);
}

static bool sector_is(const void *b, unsigned tag, uint64_t sector)
{
	unsigned char want[MQ_SECTOR_SIZE];

	fill_sector(want, tag, sector);
	return !memcmp(b, want, MQ_SECTOR_SIZE);
}

/* @n sectors from @sector in @buf hold version @tag. */
static void check_tag(const void *buf, unsigned tag, uint64_t sector,
		      unsigned n, const char *what)
{
	for (unsigned i = 0; i < n; i++)
		t_check(sector_is((const char *)buf + i * MQ_SECTOR_SIZE, tag,
				  sector + i),
			"%s: sector %" PRIu64 " is not version %u", what,
			sector + i, tag);
}

static unsigned char *ram_at(struct mq_dev *ram, uint64_t sector)
{
	return (unsigned char *)mq_ram_data(ram) + sector * MQ_SECTOR_SIZE;
}

/* ---- rig ------------------------------------------------------------ */

static void rig_open_on(struct rig *r, struct mq_dev *ram,
			const struct mq_fault_config *cfg, const char *elv,
			unsigned nr_bios)
{
	struct mq_queue_config qc = { .elevator = elv,
				      .no_merges = !strcmp(elv, "none") };

	r->ram = ram;
	r->dev = t_dev_fault(ram, cfg);
	t_check(r->dev != NULL, "mq_fault_open failed");
	r->q = t_queue_create(r->dev, &qc);
	t_pool_init(&r->p, nr_bios, BUF_BYTES);
}

static void rig_open(struct rig *r, const struct mq_fault_config *cfg,
		     unsigned nr_bios)
{
	struct mq_dev *ram = t_dev_ram(DEV_BYTES, 64);

	t_check(ram != NULL, "mq_ram_open failed");
	rig_open_on(r, ram, cfg, "none", nr_bios);
}

/* Every bio ended exactly once; tear down all but the ram device. */
static void rig_close_fault(struct rig *r)
{
	mq_queue_drain(r->q);
	for (unsigned i = 0; i < r->p.submitted; i++)
		t_check(t_done(&r->p, i) == 1, "bio %u ended %u times", i,
			t_done(&r->p, i));
	t_teardown(r->q, r->dev);
	t_pool_free(&r->p);
}

static void rig_close(struct rig *r)
{
	rig_close_fault(r);
	mq_dev_close(r->ram);
}

/* Submit the pool's next bio; writes carry version @tag. */
static struct mq_bio *io_start(struct rig *r, enum mq_op op, uint64_t sector,
			       uint32_t bytes, unsigned tag, uint16_t flags)
{
	struct mq_bio *bio = t_bio_prep(&r->p, r->p.submitted, op, sector,
					bytes);

	t_check(bytes <= BUF_BYTES, "bio of %u bytes", bytes);
	bio->flags = flags;
	if (op == MQ_OP_WRITE)
		fill(bio->buf, tag, sector, bytes >> MQ_SECTOR_SHIFT);
	else if (op != MQ_OP_READ)
		bio->buf = NULL;
	t_submit_bio(r->q, &r->p, bio);
	return bio;
}

static int io_wait(struct rig *r, struct mq_bio *bio)
{
	unsigned i = (unsigned)(bio - r->p.bios);

	t_check(t_wait_until(t_done(&r->p, i) >= 1), "bio %u never ended", i);
	return bio->status;
}

/* Synchronous I/O: the status. */
static int io(struct rig *r, enum mq_op op, uint64_t sector, uint32_t bytes,
	      unsigned tag)
{
	return io_wait(r, io_start(r, op, sector, bytes, tag, 0));
}

/* Synchronous read of @n sectors; the data. */
static const void *rd(struct rig *r, uint64_t sector, unsigned n, int *status)
{
	struct mq_bio *bio = io_start(r, MQ_OP_READ, sector,
				      n << MQ_SECTOR_SHIFT, 0, 0);

	*status = io_wait(r, bio);
	return bio->buf;
}

static struct mq_fault_stats stats(struct rig *r)
{
	struct mq_fault_stats s;

	mq_fault_get_stats(r->dev, &s);
	return s;
}

/* Put version @tag straight onto the ram device (the "old" data). */
static void ram_fill(struct mq_dev *ram, unsigned tag, uint64_t sector,
		     unsigned n)
{
	fill(ram_at(ram, sector), tag, sector, n);
}

/* ---- pass-through and EIO rules ------------------------------------- */

START_TEST(test_passthrough)
{
	struct mq_fault_config cfg = { .seed = 1 };
	struct rig r;
	int st;

	T_BEGIN();
	rig_open(&r, &cfg, 64);
	for (unsigned i = 0; i < 16; i++)
		t_check(io(&r, MQ_OP_WRITE, i * 3 * BS_SECT, BS, 2) == 0,
			"write %u", i);
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == 0, "flush");
	for (unsigned i = 0; i < 16; i++) {
		uint64_t s = i * 3 * BS_SECT;

		check_tag(rd(&r, s, BS_SECT, &st), 2, s, BS_SECT, "read");
		t_check(st == 0, "read %u: %d", i, st);
		check_tag(ram_at(r.ram, s), 2, s, BS_SECT, "ram");
		check_tag(ram_at(r.ram, s + BS_SECT), 0, s + BS_SECT,
			  2 * BS_SECT, "ram between");
	}
	t_check_u64(stats(&r).forwarded, 33, "forwarded");
	t_check_u64(stats(&r).injected, 0, "injected");
	t_check(mq_fault_power_cut(r.dev, (enum mq_fault_cut)7) == -EINVAL,
		"bad cut mode");
	rig_close(&r);
}
END_TEST

/* Only requests touching [61, 67) fail, and they never reach the ram. */
START_TEST(test_eio_range)
{
	struct mq_fault_config cfg = { .seed = 1, .eio_sector_start = 61,
				       .eio_sector_end = 67 };
	struct rig r;
	int st;

	T_BEGIN();
	rig_open(&r, &cfg, 128);
	for (unsigned i = 0; i < 16; i++) {
		bool hit = i == 7 || i == 8;	/* 56..64 and 64..72 */

		t_check(io(&r, MQ_OP_WRITE, i * BS_SECT, BS, 2) ==
			(hit ? -EIO : 0), "write %u", i);
		check_tag(ram_at(r.ram, i * BS_SECT), hit ? 0 : 2, i * BS_SECT,
			  BS_SECT, "ram after write");
	}
	for (unsigned i = 0; i < 16; i++) {
		bool hit = i == 7 || i == 8;
		const void *b = rd(&r, i * BS_SECT, BS_SECT, &st);

		t_check(st == (hit ? -EIO : 0), "read %u: %d", i, st);
		if (!hit)
			check_tag(b, 2, i * BS_SECT, BS_SECT, "read back");
	}
	/* One-sector I/O around the edges: exactly 61..66 fail. */
	for (uint64_t s = 50; s < 80; s++)
		t_check(io(&r, MQ_OP_WRITE, s, MQ_SECTOR_SIZE, 3) ==
			(s >= 61 && s < 67 ? -EIO : 0), "sector %" PRIu64, s);
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == 0, "flush touches no range");
	t_check(io(&r, MQ_OP_DISCARD, 60, 2 * MQ_SECTOR_SIZE, 0) == -EIO,
		"discard over 60..62");
	t_check_u64(stats(&r).injected, 2 + 2 + 6 + 1, "injected");
	t_check_u64(stats(&r).forwarded, 14 + 14 + 24 + 1, "forwarded");
	rig_close(&r);
}
END_TEST

START_TEST(test_eio_op_mask)
{
	struct mq_fault_config cfg = { .seed = 1,
				       .eio_op_mask = OP(MQ_OP_WRITE) };
	struct rig r;
	int st;

	T_BEGIN();
	rig_open(&r, &cfg, 64);
	ram_fill(r.ram, 1, 0, 64);
	for (unsigned i = 0; i < 8; i++) {
		t_check(io(&r, MQ_OP_WRITE, i * BS_SECT, BS, 2) == -EIO,
			"write %u", i);
		check_tag(rd(&r, i * BS_SECT, BS_SECT, &st), 1, i * BS_SECT,
			  BS_SECT, "read");
		t_check(st == 0, "read %u: %d", i, st);
	}
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == 0, "flush");
	cfg.eio_op_mask = OP(MQ_OP_FLUSH) | OP(MQ_OP_DISCARD);
	t_check(mq_fault_set_eio(r.dev, &cfg) == 0, "set_eio");
	t_check(io(&r, MQ_OP_WRITE, 0, BS, 2) == 0, "write after set_eio");
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == -EIO, "flush after set_eio");
	t_check(io(&r, MQ_OP_DISCARD, 8, BS, 0) == -EIO, "discard");
	t_check(io(&r, MQ_OP_WRITE_ZEROES, 16, BS, 0) == 0, "write-zeroes");
	check_tag(ram_at(r.ram, 0), 2, 0, BS_SECT, "ram written");
	check_tag(ram_at(r.ram, 8), 1, 8, BS_SECT, "ram not discarded");
	check_tag(ram_at(r.ram, 16), 0, 16, BS_SECT, "ram zeroed");
	cfg.eio_op_mask = 1u << MQ_OP_COUNT;
	t_check(mq_fault_set_eio(r.dev, &cfg) == -EINVAL, "bad mask");
	cfg.eio_op_mask = 0;
	t_check(mq_fault_set_eio(r.dev, &cfg) == 0, "clear rules");
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == 0, "flush after clear");
	t_check_u64(stats(&r).injected, 8 + 2, "injected");
	rig_close(&r);
}
END_TEST

/* Exactly every Nth candidate; only candidates count. */
START_TEST(test_eio_every_nth)
{
	struct mq_fault_config cfg = { .seed = 1, .eio_every_nth = 3 };
	struct rig r;

	T_BEGIN();
	rig_open(&r, &cfg, 128);
	for (unsigned i = 0; i < 30; i++)
		t_check(io(&r, MQ_OP_WRITE, i * BS_SECT, BS, 2) ==
			((i + 1) % 3 == 0 ? -EIO : 0), "write %u", i);
	cfg.eio_every_nth = 2;
	cfg.eio_op_mask = OP(MQ_OP_READ);
	t_check(mq_fault_set_eio(r.dev, &cfg) == 0, "set_eio");
	for (unsigned i = 0; i < 20; i++) {
		int st;

		t_check(io(&r, MQ_OP_WRITE, i * BS_SECT, BS, 3) == 0,
			"write %u between reads", i);
		rd(&r, i * BS_SECT, BS_SECT, &st);
		t_check(st == (i % 2 ? -EIO : 0), "read %u: %d", i, st);
	}
	t_check_u64(stats(&r).injected, 10 + 10, "injected");
	rig_close(&r);
}
END_TEST

/* One run of 200 writes with probability rules; the failing set. */
static unsigned prob_run(uint64_t seed, double p, bool *failed)
{
	struct mq_fault_config cfg = { .seed = seed, .eio_probability = p };
	struct rig r;
	unsigned n = 0;

	rig_open(&r, &cfg, 256);
	t_check_u64(stats(&r).seed, seed, "seed in use");
	for (unsigned i = 0; i < 200; i++) {
		failed[i] = io(&r, MQ_OP_WRITE, i * BS_SECT, BS, 2) != 0;
		n += failed[i];
		check_tag(ram_at(r.ram, i * BS_SECT), failed[i] ? 0 : 2,
			  i * BS_SECT, BS_SECT, "ram");
	}
	t_check_u64(stats(&r).injected, n, "injected");
	rig_close(&r);
	return n;
}

START_TEST(test_eio_probability)
{
	bool a[200], b[200], c[200];
	unsigned na, nb, nc;

	T_BEGIN();
	na = prob_run(12345, 0.3, a);
	nb = prob_run(12345, 0.3, b);
	nc = prob_run(777, 0.3, c);
	t_check(na == nb && !memcmp(a, b, sizeof(a)),
		"same seed, different failures (%u, %u)", na, nb);
	t_check(memcmp(a, c, sizeof(a)), "another seed, same failures");
	t_check(na > 30 && na < 100, "%u of 200 failed at p = 0.3", na);
	t_check(nc > 30 && nc < 100, "%u of 200 failed at p = 0.3", nc);
	t_check(prob_run(5, 1.0, a) == 200, "p = 1 fails all");
	t_check(prob_run(5, 0.0, a) == 0, "p = 0 fails none");
}
END_TEST

/* Seed 0: a fresh seed, reported; invalid rules refuse to open. */
START_TEST(test_seed_and_config)
{
	struct mq_fault_config cfg = { .eio_probability = 1.5 };
	struct mq_dev *ram = t_dev_ram(DEV_BYTES, 64);
	struct mq_dev *dev;
	struct rig r;

	T_BEGIN();
	t_check(mq_fault_open(ram, &cfg, &dev) == -EINVAL && !dev,
		"probability 1.5");
	cfg = (struct mq_fault_config){ .eio_sector_start = 8,
					.eio_sector_end = 8 };
	t_check(mq_fault_open(ram, &cfg, &dev) == -EINVAL, "empty range");
	cfg = (struct mq_fault_config){ .queue_depth = 7 };
	dev = t_dev_fault(ram, &cfg);
	t_check(dev && dev->geo.queue_depth == 7 &&
		dev->geo.size_bytes == DEV_BYTES && dev->geo.max_segments <= 32,
		"geometry");
	mq_dev_close(dev);
	rig_open_on(&r, ram, &cfg, "none", 4);
	t_check(stats(&r).seed != 0, "a seed was chosen");
	rig_close(&r);
}
END_TEST

/* ---- latency -------------------------------------------------------- */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Fake clock: not a nanosecond early, then all at once in due order. */
START_TEST(test_latency_fake_clock)
{
	struct mq_fault_config cfg = { .seed = 1, .latency_ns = 50 * T_MS };
	struct mq_bio *bios[8];
	struct rig r;

	T_BEGIN();
	t_clock_fake();
	rig_open(&r, &cfg, 16);
	for (unsigned i = 0; i < 8; i++)
		bios[i] = io_start(&r, i % 2 ? MQ_OP_READ : MQ_OP_WRITE,
				   i * BS_SECT, BS, 2, 0);
	sleep_ms(30);
	t_check_u64(atomic_load(&r.p.completed), 0, "completed at once");
	mq_clock_fake_advance(50 * T_MS - 1);
	sleep_ms(30);
	t_check_u64(atomic_load(&r.p.completed), 0, "completed 1 ns early");
	mq_clock_fake_advance(1);
	for (unsigned i = 0; i < 8; i++) {
		t_check(io_wait(&r, bios[i]) == 0, "bio %u", i);
		t_check_u64(bios[i]->done_ns, T_T0 + 50 * T_MS, "done_ns");
		t_check_u64(atomic_load(&r.p.order[i]), i + 1, "order");
	}
	rig_close(&r);
	mq_clock_fake_stop();
}
END_TEST

START_TEST(test_latency_real_clock)
{
	struct mq_fault_config cfg = { .seed = 1, .latency_ns = 20 * T_MS,
				       .eio_sector_end = 1 };
	struct rig r;

	T_BEGIN();
	rig_open(&r, &cfg, 8);
	for (unsigned i = 0; i < 4; i++) {
		uint64_t t0 = mq_clock_real_ns();
		int st = io(&r, MQ_OP_WRITE, i * BS_SECT, BS, 2);

		/* Injected errors are delayed as well (sector 0). */
		t_check(st == (i ? 0 : -EIO), "write %u: %d", i, st);
		t_check(mq_clock_real_ns() - t0 >= 20 * T_MS,
			"write %u completed early", i);
		t_check(r.p.bios[i].done_ns - t0 >= 20 * T_MS, "done_ns");
	}
	rig_close(&r);
}
END_TEST

/* ---- volatile cache ------------------------------------------------- */

START_TEST(test_cache_read_your_writes)
{
	struct mq_fault_config cfg = { .seed = 1, .volatile_cache = true };
	struct rig r;
	const void *b;
	int st;

	T_BEGIN();
	rig_open(&r, &cfg, 32);
	ram_fill(r.ram, 1, 0, 64);
	t_check(io(&r, MQ_OP_WRITE, 8, BS, 2) == 0, "write 8..16");
	t_check(io(&r, MQ_OP_WRITE, 20, MQ_SECTOR_SIZE, 2) == 0, "write 20");
	t_check(io(&r, MQ_OP_WRITE, 30, 4 * MQ_SECTOR_SIZE, 2) == 0,
		"write 30..34");
	t_check(io(&r, MQ_OP_WRITE, 31, MQ_SECTOR_SIZE, 3) == 0,
		"overwrite 31");
	t_check(io(&r, MQ_OP_DISCARD, 40, BS, 0) == 0, "discard 40..48");
	t_check(io(&r, MQ_OP_WRITE, DEV_SECT - 1, BS, 2) == -EIO,
		"write past the end");
	t_check_u64(stats(&r).dirty_sectors, 8 + 1 + 4 + 8, "dirty");
	b = rd(&r, 0, 64, &st);
	t_check(st == 0, "read: %d", st);
	for (unsigned s = 0; s < 64; s++) {
		unsigned want = (s >= 8 && s < 16) || s == 20 ||
				(s >= 30 && s < 34) ? 2 : 1;

		want = s == 31 ? 3 : s >= 40 && s < 48 ? 0 : want;
		check_tag((const char *)b + s * MQ_SECTOR_SIZE, want, s, 1,
			  "read through the cache");
	}
	check_tag(ram_at(r.ram, 0), 1, 0, 64, "ram before flush");
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == 0, "flush");
	t_check_u64(stats(&r).dirty_sectors, 0, "dirty after flush");
	t_check(!memcmp(ram_at(r.ram, 0), b, 64 * MQ_SECTOR_SIZE),
		"ram after flush");
	t_check(!memcmp(rd(&r, 0, 64, &st), b, 64 * MQ_SECTOR_SIZE) && !st,
		"read after flush");
	t_check_u64(stats(&r).cached, 5, "cached writes");
	rig_close(&r);
}
END_TEST

/* A FUA write makes its own sectors durable, and only those. */
START_TEST(test_cache_fua)
{
	struct mq_fault_config cfg = { .seed = 1, .volatile_cache = true };
	struct rig r;

	T_BEGIN();
	rig_open(&r, &cfg, 8);
	ram_fill(r.ram, 1, 0, 64);
	t_check(r.dev->geo.flush && r.dev->geo.fua, "flush and fua");
	t_check(io(&r, MQ_OP_WRITE, 0, BS, 2) == 0, "write");
	t_check(io_wait(&r, io_start(&r, MQ_OP_WRITE, 16, BS, 3,
				     MQ_REQ_FUA)) == 0, "fua write");
	check_tag(ram_at(r.ram, 16), 3, 16, BS_SECT, "fua sectors");
	check_tag(ram_at(r.ram, 0), 1, 0, BS_SECT, "other sectors");
	t_check_u64(stats(&r).dirty_sectors, BS_SECT, "dirty");
	rig_close(&r);
}
END_TEST

/* ---- power cut ------------------------------------------------------ */

START_TEST(test_cut_lose)
{
	struct mq_fault_config cfg = { .seed = 1, .volatile_cache = true };
	struct mq_fault_config plain = { .seed = 1 };
	struct mq_dev *ram;
	struct rig r;
	const void *b;
	int st;

	T_BEGIN();
	rig_open(&r, &cfg, 16);
	ram = r.ram;
	ram_fill(ram, 1, 0, 128);
	t_check(io(&r, MQ_OP_WRITE, 0, 2 * BS, 2) == 0, "write 0..16");
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == 0, "flush");
	t_check(io(&r, MQ_OP_WRITE, 8, 2 * BS, 3) == 0, "write 8..24");
	t_check(io(&r, MQ_OP_WRITE, 100, MQ_SECTOR_SIZE, 3) == 0, "write 100");
	t_check(mq_fault_power_cut(r.dev, MQ_FAULT_CUT_LOSE) == 16 + 1,
		"sectors lost");
	t_check(mq_fault_power_cut(r.dev, MQ_FAULT_CUT_LOSE) == -EALREADY,
		"second cut");
	rd(&r, 0, 8, &st);
	t_check(st == -EIO, "read after cut: %d", st);
	t_check(io(&r, MQ_OP_WRITE, 0, BS, 4) == -EIO, "write after cut");
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == -EIO, "flush after cut");
	t_check_u64(stats(&r).powered_off, 3, "powered off");
	rig_close_fault(&r);
	check_tag(ram_at(ram, 0), 2, 0, 16, "flushed");
	check_tag(ram_at(ram, 16), 1, 16, 112, "old");
	/* Power on: the lower device again, through a new fault device. */
	rig_open_on(&r, ram, &plain, "none", 4);
	b = rd(&r, 0, 32, &st);
	t_check(st == 0, "read after power on: %d", st);
	check_tag(b, 2, 0, 16, "after power on");
	check_tag((const char *)b + 16 * MQ_SECTOR_SIZE, 1, 16, 16,
		  "after power on");
	rig_close(&r);
}
END_TEST

/* An armed cut: before the 3rd write-like request from the arming. */
START_TEST(test_cut_armed)
{
	struct mq_fault_config cfg = { .seed = 1, .volatile_cache = true };
	struct mq_dev *ram;
	struct rig r;
	int st;

	T_BEGIN();
	rig_open(&r, &cfg, 16);
	ram = r.ram;
	ram_fill(ram, 1, 0, 128);
	t_check(mq_fault_arm_cut(r.dev, 3, 7) == -EINVAL, "bad mode");
	t_check(mq_fault_arm_cut(r.dev, 3, MQ_FAULT_CUT_LOSE) == 0, "arm");
	t_check(io(&r, MQ_OP_WRITE, 0, BS, 2) == 0, "write 1");
	(void)rd(&r, 0, 8, &st);
	t_check(st == 0, "a read does not count: %d", st);
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == 0, "flush (2)");
	t_check(!mq_fault_powered_off(r.dev), "power still on");
	t_check(io(&r, MQ_OP_WRITE, 16, BS, 3) == -EIO, "write 3: the cut");
	t_check(mq_fault_powered_off(r.dev), "power off");
	t_check(io(&r, MQ_OP_WRITE, 32, BS, 3) == -EIO, "after the cut");
	t_check_u64(stats(&r).writes, 4, "write-like requests");
	t_check(mq_fault_power_cut(r.dev, MQ_FAULT_CUT_LOSE) == -EALREADY,
		"already off");
	rig_close_fault(&r);
	check_tag(ram_at(ram, 0), 2, 0, BS_SECT, "flushed before the cut");
	check_tag(ram_at(ram, 16), 1, 16, 112, "never written");
	mq_dev_close(ram);
}
END_TEST

#define TORN_SECT	256

/*
 * Old data 1 on [0, 256), 2 flushed on [0, 128), 3 cached on [64, 192)
 * (written backwards with @reverse), then a torn cut with @seed.
 */
static int torn_run(uint64_t seed, bool reverse, unsigned char *disk)
{
	struct mq_fault_config cfg = { .seed = seed, .volatile_cache = true };
	struct rig r;
	int lost;

	rig_open(&r, &cfg, 64);
	ram_fill(r.ram, 1, 0, TORN_SECT);
	for (unsigned i = 0; i < 128 / BS_SECT; i++)
		t_check(io(&r, MQ_OP_WRITE, i * BS_SECT, BS, 2) == 0, "write");
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == 0, "flush");
	for (unsigned k = 0; k < 128 / BS_SECT; k++) {
		unsigned i = reverse ? 128 / BS_SECT - 1 - k : k;

		t_check(io(&r, MQ_OP_WRITE, 64 + i * BS_SECT, BS, 3) == 0,
			"write");
	}
	t_check_u64(stats(&r).dirty_sectors, 128, "dirty before the cut");
	lost = mq_fault_power_cut(r.dev, MQ_FAULT_CUT_TORN);
	t_check_u64(stats(&r).dirty_sectors, 0, "dirty after the cut");
	rig_close_fault(&r);
	memcpy(disk, ram_at(r.ram, 0), TORN_SECT * MQ_SECTOR_SIZE);
	mq_dev_close(r.ram);
	return lost;
}

/* Each sector whole old or whole new; the new ones are 128 - lost. */
static void torn_check(const unsigned char *disk, int lost)
{
	unsigned landed = 0;

	for (unsigned s = 0; s < TORN_SECT; s++) {
		const unsigned char *b = disk + s * MQ_SECTOR_SIZE;
		unsigned old = s < 128 ? 2 : 1;
		bool cached = s >= 64 && s < 192;

		t_check(sector_is(b, old, s) || (cached && sector_is(b, 3, s)),
			"sector %u is neither old nor new", s);
		landed += cached && sector_is(b, 3, s);
	}
	t_check(lost > 0 && lost < 128, "lost %d of 128", lost);
	t_check_u64(landed, 128 - (unsigned)lost, "sectors written down");
}

START_TEST(test_cut_torn)
{
	size_t bytes = TORN_SECT * MQ_SECTOR_SIZE;
	unsigned char *a = malloc(bytes), *b = malloc(bytes);
	unsigned char *c = malloc(bytes);
	int la, lb, lc;

	T_BEGIN();
	la = torn_run(0xfeedULL, false, a);
	lb = torn_run(0xfeedULL, true, b);
	lc = torn_run(0xbeefULL, false, c);
	torn_check(a, la);
	torn_check(b, lb);
	torn_check(c, lc);
	t_check(la == lb && !memcmp(a, b, bytes),
		"same seed, different torn sectors (%d, %d lost)", la, lb);
	t_check(memcmp(a, c, bytes), "another seed, same torn sectors");
	free(a);
	free(b);
	free(c);
}
END_TEST

/* Requests in flight at the cut end once, with -EIO, at once. */
START_TEST(test_cut_inflight)
{
	struct mq_fault_config cfg = { .seed = 1, .volatile_cache = true,
				       .latency_ns = 10000 * T_MS };
	uint64_t t0 = mq_clock_real_ns();
	struct rig r;
	int lost;

	T_BEGIN();
	rig_open(&r, &cfg, 32);
	for (unsigned i = 0; i < 16; i++)
		io_start(&r, i % 2 ? MQ_OP_READ : MQ_OP_WRITE,
			 i * 2 * BS_SECT, BS, 2, 0);
	t_check(t_wait_until(stats(&r).cached == 8), "writes not cached");
	lost = mq_fault_power_cut(r.dev, MQ_FAULT_CUT_LOSE);
	t_check(lost == 8 * BS_SECT, "lost %d", lost);
	t_check(t_wait_until(atomic_load(&r.p.completed) == 16),
		"%u of 16 ended", atomic_load(&r.p.completed));
	t_check_u64(atomic_load(&r.p.errors), 16, "failed");
	for (unsigned i = 0; i < 16; i++)
		t_check(r.p.bios[i].status == -EIO, "bio %u: %d", i,
			r.p.bios[i].status);
	t_check_u64(stats(&r).powered_off, 16, "powered off");
	t_check(mq_clock_real_ns() - t0 < 5000 * T_MS, "waited for latency");
	check_tag(ram_at(r.ram, 0), 0, 0, 64 * BS_SECT, "ram untouched");
	rig_close(&r);
}
END_TEST

/* ---- merged requests and threads ------------------------------------ */

/* A plug merges 8 bios into one request: 8 clones, data intact. */
START_TEST(test_merged_requests)
{
	struct mq_fault_config cfg = { .seed = 1, .volatile_cache = _i };
	struct mq_dev *ram = t_dev_ram(DEV_BYTES, 64);
	struct mq_bio *w[8], *rb[8];
	struct mq_plug plug;
	struct rig r;

	T_BEGIN();
	rig_open_on(&r, ram, &cfg, "mq-deadline", 16);
	mq_start_plug(&plug, 8);
	for (unsigned i = 0; i < 8; i++)
		w[i] = io_start(&r, MQ_OP_WRITE, 100 + i * BS_SECT, BS, 2, 0);
	mq_finish_plug(&plug);
	for (unsigned i = 0; i < 8; i++)
		t_check(io_wait(&r, w[i]) == 0, "write %u", i);
	mq_start_plug(&plug, 8);
	for (unsigned i = 0; i < 8; i++)
		rb[i] = io_start(&r, MQ_OP_READ, 100 + i * BS_SECT, BS, 0, 0);
	mq_finish_plug(&plug);
	for (unsigned i = 0; i < 8; i++) {
		t_check(io_wait(&r, rb[i]) == 0, "read %u", i);
		check_tag(rb[i]->buf, 2, 100 + i * BS_SECT, BS_SECT, "read");
	}
	t_check_u64(t_stats(r.q, -1).ios[MQ_DIR_WRITE], 1, "write requests");
	t_check_u64(t_stats(r.q, -1).ios[MQ_DIR_READ], 1, "read requests");
	t_check_u64(stats(&r).forwarded, _i ? 1 : 2, "forwarded");
	check_tag(ram_at(ram, 100), _i ? 0 : 2, 100, 8 * BS_SECT, "ram");
	rig_close(&r);
}
END_TEST

#define NR_THREADS	4
#define REGION		256u	/* sectors per thread */
#define OPS		300

struct worker {
	struct rig *r;		/* shared device and queue */
	struct t_bio_pool p;	/* own bios */
	unsigned idx;
	unsigned tag[REGION];	/* model: version of each sector */
	uint64_t rng;
	unsigned ended_twice, bad_data;
};

static unsigned wk_rand(struct worker *w, unsigned n)
{
	w->rng = w->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((w->rng >> 33) % n);
}

static int wk_io(struct worker *w, unsigned i, enum mq_op op, uint64_t sector,
		 uint32_t bytes)
{
	struct mq_bio *bio = t_bio_prep(&w->p, i, op, sector, bytes);

	if (op == MQ_OP_WRITE)
		fill(bio->buf, i + 2, sector, bytes >> MQ_SECTOR_SHIFT);
	t_submit_bio(w->r->q, &w->p, bio);
	while (!t_done(&w->p, i))
		sched_yield();
	return bio->status;
}

/* Sync I/O against the model: writes that fail leave the data alone. */
static void *wk_main(void *arg)
{
	struct worker *w = arg;
	uint64_t base = (uint64_t)w->idx * REGION;

	for (unsigned i = 0; i < OPS; i++) {
		unsigned op = wk_rand(w, 8), n = 1 + wk_rand(w, 16);
		unsigned s = wk_rand(w, REGION - n);
		int st;

		if (op == 0) {
			wk_io(w, i, MQ_OP_FLUSH, 0, 0);
		} else if (op < 4) {
			st = wk_io(w, i, MQ_OP_WRITE, base + s,
				   n << MQ_SECTOR_SHIFT);
			for (unsigned k = 0; !st && k < n; k++)
				w->tag[s + k] = i + 2;
		} else if (!wk_io(w, i, MQ_OP_READ, base + s,
				  n << MQ_SECTOR_SHIFT)) {
			for (unsigned k = 0; k < n; k++)
				w->bad_data += !sector_is(
					(char *)t_pool_buf(&w->p, i) +
					k * MQ_SECTOR_SIZE, w->tag[s + k],
					base + s + k);
		}
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct mq_fault_config cfg = { .seed = 99, .volatile_cache = true,
				       .latency_ns = 20000,
				       .eio_probability = 0.05 };
	struct mq_dev *ram = t_dev_ram(DEV_BYTES, 64);
	struct worker *w = calloc(NR_THREADS, sizeof(*w));
	pthread_t th[NR_THREADS];
	struct rig r;

	T_BEGIN();
	rig_open_on(&r, ram, &cfg, "mq-deadline", 1);
	for (unsigned t = 0; t < NR_THREADS; t++) {
		w[t] = (struct worker){ .r = &r, .idx = t, .rng = t + 1 };
		t_pool_init(&w[t].p, OPS, 16 * MQ_SECTOR_SIZE);
		pthread_create(&th[t], NULL, wk_main, &w[t]);
	}
	for (unsigned t = 0; t < NR_THREADS; t++)
		pthread_join(th[t], NULL);
	cfg.eio_probability = 0;
	t_check(mq_fault_set_eio(r.dev, &cfg) == 0, "set_eio");
	t_check(io(&r, MQ_OP_FLUSH, 0, 0, 0) == 0, "final flush");
	for (unsigned t = 0; t < NR_THREADS; t++) {
		t_check(w[t].bad_data == 0, "thread %u: %u bad sectors", t,
			w[t].bad_data);
		for (unsigned i = 0; i < OPS; i++)
			t_check(t_done(&w[t].p, i) == 1, "thread %u bio %u", t,
				i);
		for (unsigned s = 0; s < REGION; s++)
			check_tag(ram_at(ram, t * REGION + s), w[t].tag[s],
				  t * REGION + s, 1, "ram after flush");
		t_pool_free(&w[t].p);
	}
	t_check(stats(&r).injected > 0, "nothing injected");
	free(w);
	rig_close(&r);
}
END_TEST

static void tc(Suite *s, const char *name, const TTest *t, int loops)
{
	TCase *c = tcase_create(name);

	tcase_set_timeout(c, 120);
	tcase_add_loop_test(c, t, 0, loops);
	suite_add_tcase(s, c);
}

static Suite *fault_suite(void)
{
	Suite *s = suite_create("fault");

	tc(s, "passthrough", test_passthrough, 1);
	tc(s, "eio_range", test_eio_range, 1);
	tc(s, "eio_op_mask", test_eio_op_mask, 1);
	tc(s, "eio_every_nth", test_eio_every_nth, 1);
	tc(s, "eio_probability", test_eio_probability, 1);
	tc(s, "seed_and_config", test_seed_and_config, 1);
	tc(s, "latency_fake_clock", test_latency_fake_clock, 1);
	tc(s, "latency_real_clock", test_latency_real_clock, 1);
	tc(s, "cache_read_your_writes", test_cache_read_your_writes, 1);
	tc(s, "cache_fua", test_cache_fua, 1);
	tc(s, "cut_lose", test_cut_lose, 1);
	tc(s, "cut_torn", test_cut_torn, 1);
	tc(s, "cut_armed", test_cut_armed, 1);
	tc(s, "cut_inflight", test_cut_inflight, 1);
	tc(s, "merged_requests", test_merged_requests, 2);
	tc(s, "threads", test_threads, 1);
	return s;
}

T_MAIN(fault_suite)
