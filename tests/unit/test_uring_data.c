/* SPDX-License-Identifier: MIT */
/*
 * test_uring_data.c - data through the io_uring driver and the whole
 * block layer: patterns written and read back by 4 threads over 1..4
 * hardware queues (one ring each), with mq-deadline and none, in plugged
 * batches of 32 (merged into multi-bio vectored requests) and unplugged,
 * with and without fixed files, compared byte for byte both through the
 * driver and with pread() of the file; flush and FUA writes; discard
 * (punched hole: zeros read back, SEEK_HOLE, fewer blocks, size kept)
 * and write-zeroes; reads that cross or lie beyond end of file (finished
 * synchronously, zero-filled, single and multi-bio, block-aligned and
 * unaligned end of file).
 *
 * Files live in a mkdtemp directory under $TMPDIR (default /var/tmp),
 * removed at exit; the program exits 77 only when mq_uring_probe() says
 * io_uring is unusable here (t_uring.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>

static const char *const g_prog = "test_uring_data";

#include "t_uring.h"
#include "mqfs/dev/uring.h"

/* ---- data patterns over 1..4 hardware queues -------------------------- */

#define PAT_THREADS	4
#define PAT_BIOS	128
#define PAT_REGION	(2 * MiB)	/* per thread, > PAT_BIOS * 16 KiB */

struct pat_thread {
	pthread_t thr;
	struct mq_queue *q;
	unsigned idx;
	bool plug;
	uint64_t base, seed, bytes;
	unsigned nr;
	unsigned char *wbuf, *rbuf;
	int hctx;			/* where this thread's requests went */
	char err[256];
};

/* 4..16 KiB: varied segments in the merged requests. */
static uint32_t pat_len(unsigned idx, unsigned k)
{
	return 4 * KiB * (1 + (k * 7 + idx) % 4);
}

static bool pat_pass(struct pat_thread *t, enum mq_op op, unsigned char *buf)
{
	struct ur_pool p;
	uint64_t off = t->base;
	unsigned k = 0;

	if (!ur_pool_init(&p, t->nr)) {
		snprintf(t->err, sizeof(t->err), "pool allocation");
		return false;
	}
	while (k < t->nr) {
		struct mq_plug pl;

		if (t->plug)
			mq_start_plug(&pl, 32);
		for (unsigned j = 0; j < (t->plug ? 32u : 1u) && k < t->nr;
		     j++, k++) {
			uint32_t len = pat_len(t->idx, k);

			ur_submit(t->q, &p, op, off, len, buf + (off - t->base),
				  0);
			if (t->hctx < 0)
				t->hctx = (int)mq_ctx_current(t->q)->hctx->index;
			off += len;
		}
		if (t->plug)
			mq_finish_plug(&pl);
	}
	t->bytes = off - t->base;
	if (!ur_pool_wait(&p)) {
		snprintf(t->err, sizeof(t->err), "%s: only %u of %u ended",
			 op == MQ_OP_READ ? "read" : "write",
			 atomic_load(&p.ended), p.submitted);
		return false;	/* the pool leaks: the test fails anyway */
	}
	for (unsigned i = 0; i < p.submitted; i++)
		if (atomic_load(&p.done[i]) != 1 || p.bios[i].status) {
			snprintf(t->err, sizeof(t->err),
				 "%s bio %u: ended %u times, status %d",
				 op == MQ_OP_READ ? "read" : "write", i,
				 atomic_load(&p.done[i]), p.bios[i].status);
			ur_pool_free(&p);
			return false;
		}
	ur_pool_free(&p);
	return true;
}

static void *pat_main(void *arg)
{
	struct pat_thread *t = arg;
	long d;

	pat_fill(t->wbuf, PAT_REGION, t->base, t->seed);
	memset(t->rbuf, 0x5a, PAT_REGION);
	if (!pat_pass(t, MQ_OP_WRITE, t->wbuf) ||
	    !pat_pass(t, MQ_OP_READ, t->rbuf))
		return NULL;
	d = pat_diff(t->rbuf, t->bytes, t->base, t->seed);
	if (d >= 0)
		snprintf(t->err, sizeof(t->err),
			 "read back through the driver: byte %" PRIu64
			 " differs", t->base + (uint64_t)d);
	return NULL;
}

/*
 * Loop index: bits 0-1 hardware queues - 1, bit 2 elevator, bit 3 plug,
 * bit 4 no fixed files.
 */
START_TEST(test_patterns)
{
	unsigned nhw = 1 + (_i & 3);
	const char *elv = elv_names[(_i >> 2) & 1];
	bool plug = (_i >> 3) & 1;
	struct mq_uring_config uc = { .no_fixed_files = (_i >> 4) & 1 };
	struct pat_thread th[PAT_THREADS];
	uint64_t wbios = 0, wsect = 0;
	uint64_t hsect[4] = { 0 }, hbios[4] = { 0 };
	bool used[4] = { false };
	unsigned distinct = 0;
	struct mq_queue_stats s;
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	ur_file(path, sizeof(path), "pat", PAT_THREADS * PAT_REGION);
	dev = ur_open(path, &uc);
	q = ur_queue(dev, elv, nhw, 0);
	for (unsigned i = 0; i < PAT_THREADS; i++) {
		th[i] = (struct pat_thread){
			.q = q, .idx = i, .plug = plug, .hctx = -1,
			.base = (uint64_t)i * PAT_REGION,
			.seed = 1000u * (unsigned)_i + i + 1, .nr = PAT_BIOS,
			.wbuf = ur_alloc(PAT_REGION), .rbuf = ur_alloc(PAT_REGION),
		};
		t_check(pthread_create(&th[i].thr, NULL, pat_main, &th[i]) == 0,
			"pthread_create");
	}
	for (unsigned i = 0; i < PAT_THREADS; i++)
		pthread_join(th[i].thr, NULL);
	for (unsigned i = 0; i < PAT_THREADS; i++)
		t_check(!th[i].err[0], "thread %u (%s, %u hw queues, %s): %s",
			i, elv, nhw, plug ? "plugged" : "unplugged", th[i].err);
	mq_queue_drain(q);

	/* What the file holds, read around the driver. */
	for (unsigned i = 0; i < PAT_THREADS; i++) {
		file_check_pattern(path, (off_t)th[i].base, th[i].bytes,
				   th[i].seed, "pread after write");
		t_check(th[i].hctx >= 0 && th[i].hctx < (int)nhw,
			"thread %u on hctx %d", i, th[i].hctx);
		used[th[i].hctx] = true;
		hsect[th[i].hctx] += th[i].bytes >> MQ_SECTOR_SHIFT;
		hbios[th[i].hctx] += th[i].nr;
		wbios += th[i].nr;
		wsect += th[i].bytes >> MQ_SECTOR_SHIFT;
	}
	/* 4 threads take consecutive context slots: every ring was used. */
	for (unsigned h = 0; h < nhw; h++)
		distinct += used[h];
	t_check_u64(distinct, nhw, "hardware queues used");

	s = t_stats(q, -1);
	t_check_u64(s.nr_hw_queues, nhw, "nr_hw_queues");
	t_check_u64(s.bios[MQ_DIR_WRITE], wbios, "write bios");
	t_check_u64(s.bios[MQ_DIR_READ], wbios, "read bios");
	t_check_u64(s.sectors[MQ_DIR_WRITE], wsect, "write sectors");
	t_check_u64(s.sectors[MQ_DIR_READ], wsect, "read sectors");
	t_check_u64(s.errors, 0, "errors");
	t_check_u64(s.ios[MQ_DIR_WRITE] + s.ios[MQ_DIR_READ],
		    2 * wbios - s.merges[MQ_DIR_WRITE] - s.merges[MQ_DIR_READ]
		    - s.rq_merges, "requests = bios - merges");
	t_check_u64(s.dispatched[MQ_DIR_WRITE], s.ios[MQ_DIR_WRITE],
		    "writes dispatched");
	t_check_u64(s.dispatched[MQ_DIR_READ], s.ios[MQ_DIR_READ],
		    "reads dispatched");
	if (plug) {
		/* Batches of 32 contiguous bios: multi-bio vectored requests. */
		t_check(s.merges[MQ_DIR_WRITE] > 0 && s.merges[MQ_DIR_READ] > 0,
			"plugged: merges w %" PRIu64 " r %" PRIu64,
			s.merges[MQ_DIR_WRITE], s.merges[MQ_DIR_READ]);
		t_check(s.plug_merges > 0, "plugged: no plug merges");
		t_check(s.ios[MQ_DIR_WRITE] <= wbios / 16,
			"plugged: %" PRIu64 " write requests for %" PRIu64
			" bios", s.ios[MQ_DIR_WRITE], wbios);
	} else if (!strcmp(elv, "none")) {
		t_check_u64(s.merges[MQ_DIR_WRITE] + s.merges[MQ_DIR_READ], 0,
			    "unplugged none: merges");
		t_check_u64(s.ios[MQ_DIR_WRITE], wbios, "unplugged none: writes");
	}
	for (unsigned h = 0; h < nhw; h++) {
		struct mq_queue_stats hs = t_stats(q, (int)h);

		t_check_u64(hs.sectors[MQ_DIR_WRITE], hsect[h],
			    "write sectors of a hw queue");
		t_check_u64(hs.sectors[MQ_DIR_READ], hsect[h],
			    "read sectors of a hw queue");
		t_check_u64(hs.bios[MQ_DIR_WRITE], hbios[h],
			    "write bios of a hw queue");
	}
	t_teardown(q, dev);
	for (unsigned i = 0; i < PAT_THREADS; i++) {
		free(th[i].wbuf);
		free(th[i].rbuf);
	}
	unlink(path);
}
END_TEST

/* ---- flush, FUA, discard, write-zeroes -------------------------------- */

START_TEST(test_flush_fua)
{
	struct mq_uring_config uc = { 0 };
	const uint64_t seed = 500 + (unsigned)_i;
	unsigned char *buf = ur_alloc(256 * KiB);
	struct mq_queue_stats s;
	char path[PATH_MAX];
	struct ur_pool p;
	struct mq_plug pl;
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	ur_file(path, sizeof(path), "fua", 1 * MiB);
	dev = ur_open(path, &uc);
	q = ur_queue(dev, elv_names[_i], 1, 0);

	t_check(ur_sync(q, MQ_OP_FLUSH, 0, 0, NULL, 0) == 0, "empty flush");
	/* FUA on a merged (vectored) request: RWF_DSYNC on the writev. */
	pat_fill(buf, 128 * KiB, 0, seed);
	ur_rw_range(q, MQ_OP_WRITE, 0, 128 * KiB, 4 * KiB, buf, true,
		    MQ_REQ_FUA, "plugged FUA writes");
	s = t_stats(q, -1);
	t_check(s.merges[MQ_DIR_WRITE] > 0, "FUA writes did not merge");
	/* A lone FUA write. */
	pat_fill(buf + 128 * KiB, 4 * KiB, 512 * KiB, seed);
	t_check(ur_sync(q, MQ_OP_WRITE, 512 * KiB, 4 * KiB, buf + 128 * KiB,
			MQ_REQ_FUA | MQ_REQ_SYNC) == 0, "single FUA write");
	/* Write, flush, write inside one plug. */
	pat_fill(buf + 192 * KiB, 8 * KiB, 768 * KiB, seed);
	t_check(ur_pool_init(&p, 3), "pool");
	mq_start_plug(&pl, 3);
	ur_submit(q, &p, MQ_OP_WRITE, 768 * KiB, 4 * KiB, buf + 192 * KiB, 0);
	ur_submit(q, &p, MQ_OP_FLUSH, 0, 0, NULL, 0);
	ur_submit(q, &p, MQ_OP_WRITE, 772 * KiB, 4 * KiB, buf + 196 * KiB, 0);
	mq_finish_plug(&pl);
	ur_pool_check(&p, "write, flush, write");
	ur_pool_free(&p);
	t_check(ur_sync(q, MQ_OP_FLUSH, 0, 0, NULL, 0) == 0, "final flush");

	file_check_pattern(path, 0, 128 * KiB, seed, "FUA writes");
	file_check_pattern(path, 512 * KiB, 4 * KiB, seed, "single FUA write");
	file_check_pattern(path, 768 * KiB, 8 * KiB, seed, "around the flush");
	s = t_stats(q, -1);
	t_check_u64(s.errors, 0, "errors");
	t_teardown(q, dev);
	free(buf);
	unlink(path);
}
END_TEST

START_TEST(test_discard)
{
	struct mq_uring_config uc = { 0 };
	const uint64_t seed = 600 + (unsigned)_i;
	unsigned char *buf = ur_alloc(1 * MiB);
	struct stat before, after;
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;
	long d;
	int fd;

	T_BEGIN();
	ur_file(path, sizeof(path), "discard", 1 * MiB);
	dev = ur_open(path, &uc);
	q = ur_queue(dev, elv_names[_i], 1, 0);
	pat_fill(buf, 1 * MiB, 0, seed);
	ur_rw_range(q, MQ_OP_WRITE, 0, 1 * MiB, 64 * KiB, buf, true, 0,
		    "fill");
	t_check(ur_sync(q, MQ_OP_FLUSH, 0, 0, NULL, 0) == 0, "flush");
	before = ur_stat(path);
	t_check(before.st_blocks >= (blkcnt_t)(1 * MiB / 512),
		"written file has %lld blocks", (long long)before.st_blocks);

	t_check(ur_sync(q, MQ_OP_DISCARD, 256 * KiB, 256 * KiB, NULL, 0) == 0,
		"discard");
	after = ur_stat(path);
	t_check_u64(after.st_size, 1 * MiB, "size after discard");
	t_check(after.st_blocks <= before.st_blocks - (blkcnt_t)(256 * KiB / 512),
		"discard freed nothing: %lld -> %lld blocks",
		(long long)before.st_blocks, (long long)after.st_blocks);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	t_check(fd >= 0, "open");
	t_check_u64(lseek(fd, 256 * KiB, SEEK_HOLE), 256 * KiB, "SEEK_HOLE");
	t_check_u64(lseek(fd, 256 * KiB, SEEK_DATA), 512 * KiB, "SEEK_DATA");
	close(fd);

	/* Zeros in the hole, the data around it intact: driver and pread. */
	memset(buf, 0xa5, 1 * MiB);
	ur_rw_range(q, MQ_OP_READ, 0, 1 * MiB, 32 * KiB, buf, true, 0,
		    "read back");
	d = zero_diff(buf + 256 * KiB, 256 * KiB);
	t_check(d < 0, "discarded byte %ld reads non-zero", 256 * (long)KiB + d);
	t_check(pat_diff(buf, 256 * KiB, 0, seed) < 0, "data before the hole");
	t_check(pat_diff(buf + 512 * KiB, 512 * KiB, 512 * KiB, seed) < 0,
		"data after the hole");
	file_check_zero(path, 256 * KiB, 256 * KiB, "discarded range");
	file_check_pattern(path, 0, 256 * KiB, seed, "before the hole");
	file_check_pattern(path, 512 * KiB, 512 * KiB, seed, "after the hole");

	/*
	 * Past the device's end (the file's size at open) a bio fails with
	 * -EIO before it reaches the driver, as the kernel's bio_check_eod,
	 * and the file keeps its size.
	 */
	t_check(ur_sync(q, MQ_OP_DISCARD, 1 * MiB, 64 * KiB, NULL, 0) == -EIO,
		"discard past the device's end");
	t_check_u64(ur_stat(path).st_size, 1 * MiB, "size after discard past EOF");
	t_teardown(q, dev);
	free(buf);
	unlink(path);
}
END_TEST

START_TEST(test_write_zeroes)
{
	struct mq_uring_config uc = { 0 };
	const uint64_t seed = 700 + (unsigned)_i;
	unsigned char *buf = ur_alloc(1 * MiB);
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	ur_file(path, sizeof(path), "wzero", 1 * MiB);
	dev = ur_open(path, &uc);
	q = ur_queue(dev, elv_names[_i], 1, 0);
	pat_fill(buf, 1 * MiB, 0, seed);
	ur_rw_range(q, MQ_OP_WRITE, 0, 1 * MiB, 128 * KiB, buf, false, 0,
		    "fill");
	t_check(ur_sync(q, MQ_OP_WRITE_ZEROES, 64 * KiB, 128 * KiB, NULL, 0)
		== 0, "write-zeroes");
	/* Across the device's end: -EIO, nothing written, size kept. */
	t_check(ur_sync(q, MQ_OP_WRITE_ZEROES, 1 * MiB - 64 * KiB, 128 * KiB,
			NULL, 0) == -EIO, "write-zeroes across the device's end");
	/* Up to the end: zeros. */
	t_check(ur_sync(q, MQ_OP_WRITE_ZEROES, 1 * MiB - 64 * KiB, 64 * KiB,
			NULL, 0) == 0, "write-zeroes up to the end");
	t_check_u64(ur_stat(path).st_size, 1 * MiB, "size after write-zeroes");

	memset(buf, 0xa5, 1 * MiB);
	ur_rw_range(q, MQ_OP_READ, 0, 1 * MiB, 64 * KiB, buf, true, 0,
		    "read back");
	t_check(pat_diff(buf, 64 * KiB, 0, seed) < 0, "data before zeroes");
	t_check(zero_diff(buf + 64 * KiB, 128 * KiB) < 0, "zeroed range");
	t_check(pat_diff(buf + 192 * KiB, 1 * MiB - 256 * KiB, 192 * KiB,
			 seed) < 0, "data between");
	t_check(zero_diff(buf + 1 * MiB - 64 * KiB, 64 * KiB) < 0,
		"zeroed tail");
	file_check_pattern(path, 0, 64 * KiB, seed, "before zeroes");
	file_check_zero(path, 64 * KiB, 128 * KiB, "zeroed range");
	file_check_pattern(path, 192 * KiB, 1 * MiB - 256 * KiB, seed,
			   "between");
	file_check_zero(path, 1 * MiB - 64 * KiB, 64 * KiB, "zeroed tail");
	t_teardown(q, dev);
	free(buf);
	unlink(path);
}
END_TEST

/* ---- reads at and beyond end of file ---------------------------------- */

/* Write @len pattern bytes at @off with plain pwrite, then fsync. */
static void file_write_pattern(const char *path, off_t off, size_t len,
			       uint64_t seed)
{
	size_t alloc = MQ_ALIGN_UP(len, (size_t)8);
	unsigned char *buf = malloc(alloc);
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	t_check(buf && fd >= 0, "open %s", path);
	pat_fill(buf, alloc, (uint64_t)off, seed);
	t_check(pwrite(fd, buf, len, off) == (ssize_t)len, "pwrite");
	t_check(fsync(fd) == 0, "fsync");
	close(fd);
	free(buf);
}

/* @len bytes at @off: data up to @eof, zeros after it. */
static void check_eof_read(const unsigned char *buf, uint64_t off,
			   uint32_t len, uint64_t eof, uint64_t seed,
			   const char *what)
{
	uint64_t data = eof > off ? MQ_MIN((uint64_t)len, eof - off) : 0;
	long d;

	d = pat_diff(buf, data, off, seed);
	t_check(d < 0, "%s: byte %" PRIu64 " before EOF differs", what,
		off + (uint64_t)d);
	d = zero_diff(buf + data, len - data);
	t_check(d < 0, "%s: byte %" PRIu64 " past EOF (%" PRIu64
		") is not zero", what, off + data + (uint64_t)d, eof);
}

/* Read [off, off + n * bs) as n plugged (merged) bios. */
static void eof_read_plugged(struct mq_queue *q, unsigned char *buf,
			     uint64_t off, unsigned n, uint32_t bs)
{
	memset(buf, 0xa5, (size_t)n * bs);
	ur_rw_range(q, MQ_OP_READ, off, n * bs, bs, buf, true, 0,
		    "plugged read across EOF");
}

START_TEST(test_read_past_eof)
{
	struct mq_uring_config uc = { 0 };
	const uint64_t seed = 800 + (unsigned)_i;
	uint64_t eof = 64 * KiB;
	unsigned char *buf = ur_alloc(64 * KiB);
	struct mq_queue_stats s0, s;
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	ur_file(path, sizeof(path), "eof", 0);
	file_write_pattern(path, 0, eof, seed);
	/*
	 * The device's size is the file's at open (512 KiB); the file then
	 * shrinks under it, so reads inside the device run past end of file
	 * and come back short: the driver finishes them and zero-fills.
	 */
	t_check(truncate(path, 512 * KiB) == 0, "grow");
	dev = ur_open(path, &uc);
	q = ur_queue(dev, elv_names[_i], 1, 0);
	t_check(truncate(path, (off_t)eof) == 0, "shrink");

	/* Straddling end of file: short read finished, tail zero-filled. */
	memset(buf, 0xa5, 16 * KiB);
	t_check(ur_sync(q, MQ_OP_READ, 56 * KiB, 16 * KiB, buf, 0) == 0,
		"read across EOF");
	check_eof_read(buf, 56 * KiB, 16 * KiB, eof, seed, "across EOF");
	/* Entirely beyond end of file: all zeros, no error. */
	memset(buf, 0xa5, 16 * KiB);
	t_check(ur_sync(q, MQ_OP_READ, 128 * KiB, 16 * KiB, buf, 0) == 0,
		"read beyond EOF");
	check_eof_read(buf, 128 * KiB, 16 * KiB, eof, seed, "beyond EOF");
	/* At end of file exactly. */
	memset(buf, 0xa5, 4 * KiB);
	t_check(ur_sync(q, MQ_OP_READ, eof, 4 * KiB, buf, 0) == 0,
		"read at EOF");
	check_eof_read(buf, eof, 4 * KiB, eof, seed, "at EOF");

	/* A readv whose end of file falls on a bio boundary... */
	s0 = t_stats(q, -1);
	eof_read_plugged(q, buf, 48 * KiB, 4, 8 * KiB);
	check_eof_read(buf, 48 * KiB, 32 * KiB, eof, seed, "4 x 8K readv");
	/* ...and inside a bio. */
	eof_read_plugged(q, buf, 44 * KiB, 3, 12 * KiB);
	check_eof_read(buf, 44 * KiB, 36 * KiB, eof, seed, "3 x 12K readv");
	/* Wholly beyond, vectored. */
	eof_read_plugged(q, buf, 256 * KiB, 4, 4 * KiB);
	check_eof_read(buf, 256 * KiB, 16 * KiB, eof, seed, "readv beyond");
	s = t_stats(q, -1);
	t_check_u64(s.merges[MQ_DIR_READ] - s0.merges[MQ_DIR_READ], 3 + 2 + 3,
		    "bios merged into the readvs");
	t_check_u64(s.ios[MQ_DIR_READ] - s0.ios[MQ_DIR_READ], 3,
		    "readv requests");
	t_check_u64(ur_stat(path).st_size, eof, "size after reads");

	/* End of file not on a block boundary. */
	file_write_pattern(path, (off_t)eof, 100, seed);
	eof += 100;
	memset(buf, 0xa5, 8 * KiB);
	t_check(ur_sync(q, MQ_OP_READ, 64 * KiB, 8 * KiB, buf, 0) == 0,
		"read across unaligned EOF");
	check_eof_read(buf, 64 * KiB, 8 * KiB, eof, seed, "unaligned EOF");
	memset(buf, 0xa5, 16 * KiB);
	t_check(ur_sync(q, MQ_OP_READ, 56 * KiB, 16 * KiB, buf, 0) == 0,
		"read across unaligned EOF (2)");
	check_eof_read(buf, 56 * KiB, 16 * KiB, eof, seed, "unaligned EOF (2)");
	eof_read_plugged(q, buf, 48 * KiB, 4, 8 * KiB);
	check_eof_read(buf, 48 * KiB, 32 * KiB, eof, seed,
		       "readv across unaligned EOF");
	/* Past the device's end: -EIO, never sent. */
	t_check(ur_sync(q, MQ_OP_READ, 512 * KiB, 4 * KiB, buf, 0) == -EIO,
		"read past the device's end");

	s = t_stats(q, -1);
	t_check_u64(s.errors, 0, "errors");
	/* Past the device's end: -EIO, never sent. */
	t_check(ur_sync(q, MQ_OP_READ, 512 * KiB, 4 * KiB, buf, 0) == -EIO,
		"read past the device's end");
	t_teardown(q, dev);
	free(buf);
	unlink(path);
}
END_TEST

/* ---- the program -------------------------------------------------------- */

static Suite *uring_data_suite(void)
{
	Suite *s = suite_create("uring_data");

	ur_tcase(s, "patterns", test_patterns, 32, 120);
	ur_tcase(s, "flush_fua", test_flush_fua, 2, 60);
	ur_tcase(s, "discard", test_discard, 2, 60);
	ur_tcase(s, "write_zeroes", test_write_zeroes, 2, 60);
	ur_tcase(s, "read_past_eof", test_read_past_eof, 2, 60);
	return s;
}

UR_MAIN(uring_data_suite)
