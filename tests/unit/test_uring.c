/* SPDX-License-Identifier: MIT */
/*
 * test_uring.c - Check unit tests for the io_uring driver
 * (sched/dev/uring.c, uring_probe.c and geometry.c) driven through the
 * whole block layer.
 *
 * Tested: opening a regular file (geometry: size, logical block size from
 * statx STATX_DIOALIGN, discard and write-zeroes offered, the driver's
 * segment and depth limits); a missing path (-ENOENT), a directory and a
 * character device (-ENOTBLK), iopoll on a regular file (-EOPNOTSUPP),
 * each with a message on stderr and no descriptor leaked; data patterns
 * written and read back by 4 threads over 1..4 hardware queues (one ring
 * each), with mq-deadline and none, in plugged batches of 32 (merged into
 * multi-bio vectored requests) and unplugged, with and without fixed
 * files, compared byte for byte both through the driver and with pread()
 * of the file; flush and FUA writes; discard (punched hole: zeros read
 * back, SEEK_HOLE, fewer blocks, size kept) and write-zeroes; reads that
 * cross or lie beyond end of file (finished synchronously, zero-filled,
 * single and multi-bio, block-aligned and unaligned end of file); 200
 * bios outstanding on queue depth 8 (tag waits), also with a ring
 * smaller than the queue depth; an SQPOLL ring; open/close cycles; and,
 * when the machine has loop devices and we are root, a loop device made
 * with losetup --direct-io=on: geometry, exclusive open (-EBUSY), data,
 * flush, FUA, discard and write-zeroes through the BLK* ioctls, reopen
 * after close.  The loop device is attached by an unchecked fixture (in
 * the parent process) and detached in its teardown even when the test
 * failed.
 *
 * Files live in a mkdtemp directory under $TMPDIR (default /var/tmp),
 * removed at exit.  The program exits 77 only when mq_uring_probe() says
 * io_uring is unusable here.  Built with -fsanitize=thread, it interposes
 * two liburing calls to tell ThreadSanitizer about the ordering the kernel
 * gives between submission and completion (t_uring.h).  The caller-reaped
 * (polled) mode has its own program, test_uring_poll.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <linux/fs.h>
#include <pthread.h>
#include <sys/ioctl.h>

static const char *const g_prog = "test_uring";

#include "t_uring.h"
#include "t_main.h"
#include "mqfs/dev/uring.h"
#include "t_dev.h"

static const char *const elv_names[] = { "mq-deadline", "none" };

/* ---- small helpers ---------------------------------------------------- */

static struct stat ur_stat(const char *path)
{
	struct stat st;

	t_check(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
	return st;
}

static unsigned ur_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static long zero_diff(const void *buf, size_t len)
{
	const unsigned char *b = buf;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return (long)i;
	return -1;
}

static void file_check_zero(const char *path, off_t off, size_t len,
			    const char *what)
{
	unsigned char *buf = malloc(len);
	long d;

	t_check(buf != NULL, "malloc");
	file_read(path, buf, len, off);
	d = zero_diff(buf, len);
	t_check(d < 0, "%s: file byte %lld is not zero", what,
		(long long)off + d);
	free(buf);
}

/* Capture what is written to stderr between cap_start and cap_end. */
struct cap {
	FILE *tmp;
	int saved;
};

static void cap_start(struct cap *c)
{
	fflush(stderr);
	c->tmp = tmpfile();
	t_check(c->tmp != NULL, "tmpfile: %s", strerror(errno));
	c->saved = dup(STDERR_FILENO);
	dup2(fileno(c->tmp), STDERR_FILENO);
}

static void cap_end(struct cap *c, char *out, size_t len)
{
	size_t n;

	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	rewind(c->tmp);
	n = fread(out, 1, len - 1, c->tmp);
	out[n] = '\0';
	fclose(c->tmp);
}

/* One bio, waited for; returns its status. */
static int ur_sync(struct mq_queue *q, enum mq_op op, uint64_t off,
		   uint32_t len, void *buf, unsigned flags)
{
	struct ur_pool p;
	int st;

	t_check(ur_pool_init(&p, 1), "pool");
	ur_submit(q, &p, op, off, len, buf, flags);
	t_check(ur_pool_wait(&p), "op %d at %" PRIu64 " never ended", op, off);
	t_check(atomic_load(&p.done[0]) == 1, "ended %u times",
		atomic_load(&p.done[0]));
	st = p.bios[0].status;
	ur_pool_free(&p);
	return st;
}

/* [off, off + len) in @bs-byte bios, plugged (batches of 32) or not. */
static void ur_rw_range(struct mq_queue *q, enum mq_op op, uint64_t off,
			uint32_t len, uint32_t bs, unsigned char *buf,
			bool plug, unsigned flags, const char *what)
{
	unsigned nr = len / bs;
	struct ur_pool p;

	t_check(ur_pool_init(&p, nr), "pool");
	for (unsigned i = 0; i < nr;) {
		struct mq_plug pl;

		if (plug)
			mq_start_plug(&pl, 32);
		for (unsigned j = 0; j < (plug ? 32u : 1u) && i < nr; j++, i++)
			ur_submit(q, &p, op, off + (uint64_t)i * bs, bs,
				  buf + (size_t)i * bs, flags);
		if (plug)
			mq_finish_plug(&pl);
	}
	ur_pool_check(&p, what);
	ur_pool_free(&p);
}

/*
 * Expect mq_uring_open to fail with @want (or @alt), and its message
 * (the driver's, or its caller's with mq_uring_open_hint) to say why.
 */
static void ur_open_fails(const char *path, const struct mq_uring_config *uc,
			  int want, int alt, const char *needle)
{
	unsigned fds = ur_count_fds();
	struct mq_dev *dev;
	char msg[1024];
	struct cap c;
	int err = 0;

	cap_start(&c);
	dev = t_dev_uring(path, uc, &err);
	cap_end(&c, msg, sizeof(msg));
	if (dev)
		mq_dev_close(dev);
	t_check(dev == NULL, "mq_uring_open(%s) succeeded", path);
	t_check(err == want || (alt && err == alt),
		"mq_uring_open(%s): err %d (%s), want %d (%s)", path, err,
		strerror(-err), want, strerror(-want));
	/* The caller reports a failed open, as main.c and tools.c do. */
	if (!msg[0])
		snprintf(msg, sizeof(msg), "%s: %s%s", path, strerror(-err),
			 mq_uring_open_hint(err));
	t_check(strstr(msg, needle) != NULL,
		"mq_uring_open(%s): message \"%s\" lacks \"%s\"", path, msg,
		needle);
	t_check(ur_count_fds() == fds, "mq_uring_open(%s) leaked %d fds",
		path, (int)(ur_count_fds() - fds));
}

/* ---- open, geometry, errors ------------------------------------------- */

START_TEST(test_open_geometry)
{
	struct mq_uring_config uc = { 0 };
	char path[PATH_MAX], buf[32];
	const struct mq_dev_geometry *g;
	struct statx sx;
	struct stat st;
	struct mq_dev *dev;
	struct mq_queue *q;
	uint32_t want_lbs;

	T_BEGIN();
	ur_file(path, sizeof(path), "geo", 3 * MiB + 64 * KiB);
	st = ur_stat(path);
	want_lbs = (uint32_t)st.st_blksize;
	if (!statx(AT_FDCWD, path, 0, STATX_DIOALIGN, &sx) &&
	    (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align)
		want_lbs = sx.stx_dio_offset_align;

	dev = ur_open(path, &uc);
	g = &dev->geo;
	t_check(!strcmp(dev->name, path), "name %s", dev->name);
	t_check_u64(g->size_bytes, 3 * MiB + 64 * KiB, "size_bytes");
	t_check_u64(g->logical_block_size, want_lbs, "logical_block_size");
	t_check_u64(g->physical_block_size, st.st_blksize, "physical_block_size");
	t_check(g->logical_block_size >= 512 &&
		!(g->logical_block_size & (g->logical_block_size - 1)),
		"lbs %u not a power of two >= 512", g->logical_block_size);
	t_check(g->discard, "discard (punch hole) not offered");
	t_check(g->write_zeroes, "write_zeroes (zero range) not offered");
	t_check(g->flush, "flush not offered");
	t_check(!g->fua, "fua claimed on a regular file");
	t_check_u64(g->queue_depth, 128, "default queue_depth");
	t_check_u64(g->max_segments, 128, "max_segments");
	t_check(g->max_hw_sectors >= 8, "max_hw_sectors %u", g->max_hw_sectors);
	t_check(g->nr_hw_queues >= 1, "nr_hw_queues %u", g->nr_hw_queues);
	t_check(dev->rq_pdu_size >= 128 * sizeof(struct iovec),
		"rq_pdu_size %zu cannot hold the iovec", dev->rq_pdu_size);

	/* Queues are capped by what the device offers: one ring each. */
	q = ur_queue(dev, "none", g->nr_hw_queues + 5, 0);
	t_check(mq_queue_attr_show(q, "nr_hw_queues", buf, sizeof(buf)) == 0,
		"show nr_hw_queues");
	t_check_u64(strtoul(buf, NULL, 10), g->nr_hw_queues, "nr_hw_queues");
	t_check(mq_queue_attr_show(q, "queue_depth", buf, sizeof(buf)) == 0,
		"show queue_depth");
	t_check_u64(strtoul(buf, NULL, 10), 128, "queue depth from the ring");
	t_teardown(q, dev);

	/* The ring depth becomes the device's default queue depth. */
	uc.queue_depth = 32;
	dev = ur_open(path, &uc);
	t_check_u64(dev->geo.queue_depth, 32, "configured queue_depth");
	mq_dev_close(dev);
	unlink(path);
}
END_TEST

START_TEST(test_open_errors)
{
	struct mq_uring_config uc = { 0 };
	char path[PATH_MAX];

	T_BEGIN();
	snprintf(path, sizeof(path), "%s/does-not-exist", g_dir);
	ur_open_fails(path, &uc, -ENOENT, 0, "does-not-exist");
	snprintf(path, sizeof(path), "%s/no-dir/file", g_dir);
	ur_open_fails(path, &uc, -ENOENT, 0, "no-dir/file");
	/* A directory is neither a file nor a block device. */
	ur_open_fails(g_dir, &uc, -ENOTBLK, -EISDIR, g_dir);
	/* Nor is a character device. */
	ur_open_fails("/dev/null", &uc, -ENOTBLK, 0, "/dev/null");
}
END_TEST

/*
 * An exclusive open of an image file takes its flock: a second one is
 * refused (EBUSY, after its wait), mq_uring_in_use says so, a plain
 * reader still opens it; a read-only open reads and refuses to write.
 */
START_TEST(test_exclusive_readonly)
{
	struct mq_uring_config ex = { .exclusive = true, .lock_wait_ms = 200 };
	struct mq_uring_config ro = { .readonly = true };
	unsigned char *buf = ur_alloc(4 * KiB);
	char path[PATH_MAX];
	struct mq_dev *dev, *rd;
	struct mq_queue *q;

	T_BEGIN();
	ur_file(path, sizeof(path), "excl", 1 * MiB);
	t_check(mq_uring_in_use(path) == 0, "a free file is in use");
	dev = ur_open(path, &ex);
	t_check(mq_uring_in_use(path) == 1, "in use not seen");
	ur_open_fails(path, &ex, -EBUSY, 0, "in use");
	rd = ur_open(path, &ro);
	q = ur_queue(rd, "none", 1, 0);
	t_check(ur_sync(q, MQ_OP_READ, 0, 4 * KiB, buf, 0) == 0,
		"a read-only device reads");
	t_check(ur_sync(q, MQ_OP_WRITE, 0, 4 * KiB, buf, 0) == -EBADF,
		"a read-only device wrote");
	mq_queue_destroy(q);
	mq_dev_close(rd);
	mq_dev_close(dev);
	t_check(mq_uring_in_use(path) == 0, "the lock outlived the close");
	free(buf);
}
END_TEST

START_TEST(test_config_errors)
{
	struct mq_uring_config uc = { .iopoll = true };
	char path[PATH_MAX];
	struct mq_dev *dev;

	T_BEGIN();
	ur_file(path, sizeof(path), "cfg", 1 * MiB);
	/* Polled completions need a block device with poll queues. */
	ur_open_fails(path, &uc, -EOPNOTSUPP, 0, "iopoll");
	uc.sqpoll = true;
	ur_open_fails(path, &uc, -EOPNOTSUPP, 0, "iopoll");
	/* The same file opens without it. */
	uc = (struct mq_uring_config){ 0 };
	dev = ur_open(path, &uc);
	mq_dev_close(dev);
	unlink(path);
}
END_TEST

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

/* ---- many requests in flight on a shallow queue ----------------------- */

#define INF_BIOS	200
#define INF_BS		(4 * KiB)
#define INF_STRIDE	(8 * KiB)	/* gaps: nothing merges */

struct inf_thread {
	pthread_t thr;
	struct mq_queue *q;
	enum mq_op op;
	bool plug;
	unsigned first, nr;
	unsigned char *buf;
	struct ur_pool p;
	char err[160];
};

static void inf_submit(struct inf_thread *t)
{
	struct mq_plug pl;

	if (t->plug)
		mq_start_plug(&pl, 32);
	for (unsigned i = t->first; i < t->first + t->nr; i++)
		ur_submit(t->q, &t->p, t->op, (uint64_t)i * INF_STRIDE, INF_BS,
			  t->buf + (size_t)i * INF_BS, 0);
	if (t->plug)
		mq_finish_plug(&pl);
}

static void *inf_main(void *arg)
{
	struct inf_thread *t = arg;

	inf_submit(t);
	if (!ur_pool_wait(&t->p))
		snprintf(t->err, sizeof(t->err), "only %u of %u ended",
			 atomic_load(&t->p.ended), t->p.submitted);
	return NULL;
}

/*
 * Loop index: bit 0 elevator; (index >> 1): 0 one plugged submitter,
 * ring 8 = queue depth 8 (the 9th request must wait for a tag: the plug
 * holds the first 8); 1 four unplugged submitters, depth 8; 2 one plugged
 * submitter, queue depth 32 on a ring of 4 (more in flight than the
 * completion ring holds).
 */
START_TEST(test_many_inflight)
{
	const char *elv = elv_names[_i & 1];
	unsigned mode = (unsigned)_i >> 1;
	unsigned nthreads = mode == 1 ? 4 : 1;
	struct mq_uring_config uc = { .queue_depth = mode == 2 ? 4 : 8 };
	unsigned qd = mode == 2 ? 32 : 8;
	const uint64_t seed = 900 + (unsigned)_i;
	size_t bytes = (size_t)INF_BIOS * INF_BS;
	unsigned char *wbuf = ur_alloc(bytes), *rbuf = ur_alloc(bytes);
	struct inf_thread th[4];
	struct mq_queue_stats s;
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	ur_file(path, sizeof(path), "inflight", (off_t)INF_BIOS * INF_STRIDE);
	dev = ur_open(path, &uc);
	q = ur_queue(dev, elv, 1, qd);
	for (unsigned i = 0; i < INF_BIOS; i++)
		pat_fill(wbuf + (size_t)i * INF_BS, INF_BS,
			 (uint64_t)i * INF_STRIDE, seed);
	memset(rbuf, 0x5a, bytes);

	for (int pass = 0; pass < 2; pass++) {
		enum mq_op op = pass ? MQ_OP_READ : MQ_OP_WRITE;

		for (unsigned t = 0; t < nthreads; t++) {
			th[t] = (struct inf_thread){
				.q = q, .op = op, .plug = mode != 1,
				.first = t * (INF_BIOS / nthreads),
				.nr = INF_BIOS / nthreads,
				.buf = pass ? rbuf : wbuf,
			};
			t_check(ur_pool_init(&th[t].p, th[t].nr), "pool");
			t_check(pthread_create(&th[t].thr, NULL, inf_main,
					       &th[t]) == 0, "pthread_create");
		}
		for (unsigned t = 0; t < nthreads; t++) {
			pthread_join(th[t].thr, NULL);
			t_check(!th[t].err[0], "%s pass, thread %u: %s",
				pass ? "read" : "write", t, th[t].err);
			ur_pool_check(&th[t].p, pass ? "reads" : "writes");
			ur_pool_free(&th[t].p);
		}
	}
	for (unsigned i = 0; i < INF_BIOS; i++) {
		t_check(!memcmp(rbuf + (size_t)i * INF_BS,
				wbuf + (size_t)i * INF_BS, INF_BS),
			"bio %u read back differs", i);
		file_check_pattern(path, (off_t)i * INF_STRIDE, INF_BS, seed,
				   "pread");
	}
	mq_queue_drain(q);
	s = t_stats(q, -1);
	t_check_u64(s.ios[MQ_DIR_WRITE], INF_BIOS, "write requests");
	t_check_u64(s.ios[MQ_DIR_READ], INF_BIOS, "read requests");
	t_check_u64(s.dispatched[MQ_DIR_WRITE] + s.dispatched[MQ_DIR_READ],
		    2 * INF_BIOS, "dispatched");
	t_check_u64(s.errors, 0, "errors");
	if (mode != 1)
		t_check(s.tag_waits > 0, "no tag waits with %u bios on depth %u",
			INF_BIOS, qd);
	t_teardown(q, dev);
	free(wbuf);
	free(rbuf);
	unlink(path);
}
END_TEST

/* ---- other ring set-ups ----------------------------------------------- */

/* Kernel submission thread, with and without fixed files. */
START_TEST(test_sqpoll)
{
	struct mq_uring_config uc = { .sqpoll = true, .no_fixed_files = _i };
	const uint64_t seed = 1100 + (unsigned)_i;
	unsigned char *w = ur_alloc(512 * KiB), *r = ur_alloc(512 * KiB);
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	ur_file(path, sizeof(path), "sqpoll", 1 * MiB);
	dev = ur_open(path, &uc);
	q = ur_queue(dev, "none", 2, 0);
	pat_fill(w, 512 * KiB, 256 * KiB, seed);
	ur_rw_range(q, MQ_OP_WRITE, 256 * KiB, 512 * KiB, 16 * KiB, w, true, 0,
		    "sqpoll writes");
	ur_rw_range(q, MQ_OP_READ, 256 * KiB, 512 * KiB, 4 * KiB, r, false, 0,
		    "sqpoll reads");
	t_check(!memcmp(w, r, 512 * KiB), "sqpoll read back differs");
	file_check_pattern(path, 256 * KiB, 512 * KiB, seed, "sqpoll pread");
	t_teardown(q, dev);
	free(w);
	free(r);
	unlink(path);
}
END_TEST

/* Rings, reapers and the file come and go without leaking. */
START_TEST(test_reopen_cycles)
{
	struct mq_uring_config uc = { .queue_depth = 16 };
	unsigned char *buf = ur_alloc(64 * KiB);
	char path[PATH_MAX];
	unsigned fds;

	T_BEGIN();
	ur_file(path, sizeof(path), "cycles", 1 * MiB);
	fds = ur_count_fds();
	for (unsigned c = 0; c < 8; c++) {
		struct mq_dev *dev = ur_open(path, &uc);
		struct mq_queue *q = ur_queue(dev, elv_names[c & 1], 1 + c % 4, 0);

		pat_fill(buf, 64 * KiB, (uint64_t)c * 64 * KiB, c + 1);
		ur_rw_range(q, MQ_OP_WRITE, (uint64_t)c * 64 * KiB, 64 * KiB,
			    8 * KiB, buf, c & 2, 0, "cycle write");
		t_teardown(q, dev);
	}
	t_check_u64(ur_count_fds(), fds, "descriptors after 8 cycles");
	for (unsigned c = 0; c < 8; c++)
		file_check_pattern(path, (off_t)c * 64 * KiB, 64 * KiB, c + 1,
				   "cycle data");
	free(buf);
	unlink(path);
}
END_TEST

static long long sysfs_num(const char *dev, const char *attr)
{
	char path[PATH_MAX];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/block/%s/%s", strrchr(dev, '/') + 1,
		 attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static unsigned sysfs_mq_count(const char *dev)
{
	char path[PATH_MAX];
	unsigned n = 0;

	for (;; n++) {
		snprintf(path, sizeof(path), "/sys/block/%s/mq/%u",
			 strrchr(dev, '/') + 1, n);
		if (access(path, F_OK))
			break;
	}
	return n ? n : 1;
}

START_TEST(test_blockdev)
{
	struct mq_uring_config uc = { .exclusive = true };
	const uint64_t seed = 1200 + (unsigned)_i;
	const uint64_t base = 1 * MiB;
	unsigned char *buf = ur_alloc(1 * MiB);
	const struct mq_dev_geometry *g;
	struct stat before, after;
	unsigned pbs = 0;
	int lbs = 0, fd;
	uint64_t size = 0;
	struct mq_dev *dev, *dev2;
	struct mq_queue *q;

	T_BEGIN();
	if (!g_loop[0]) {
		printf("%s: blockdev: skipped (%s)\n", g_prog, g_loop_why);
		free(buf);
		return;
	}
	fd = open(g_loop, O_RDONLY | O_CLOEXEC);
	t_check(fd >= 0, "open %s: %s", g_loop, strerror(errno));
	t_check(!ioctl(fd, BLKSSZGET, &lbs) && !ioctl(fd, BLKPBSZGET, &pbs) &&
		!ioctl(fd, BLKGETSIZE64, &size), "block ioctls");
	close(fd);

	dev = ur_open(g_loop, &uc);
	g = &dev->geo;
	t_check_u64(g->size_bytes, size, "bdev size_bytes");
	t_check_u64(g->size_bytes, LOOP_SIZE, "loop size");
	t_check_u64(g->logical_block_size, (unsigned)lbs, "bdev lbs");
	t_check_u64(g->physical_block_size, pbs, "bdev pbs");
	t_check(g->discard == (sysfs_num(g_loop, "queue/discard_max_bytes") > 0),
		"discard %d", g->discard);
	t_check(g->write_zeroes, "write_zeroes");
	t_check_u64(g->nr_hw_queues, sysfs_mq_count(g_loop), "bdev hw queues");
	t_check_u64(g->max_hw_sectors,
		    2 * sysfs_num(g_loop, "queue/max_sectors_kb"),
		    "max_hw_sectors");

	/* Exclusive: a second open of the same device is refused. */
	ur_open_fails(g_loop, &uc, -EBUSY, 0, g_loop);
	uc.iopoll = true;	/* a loop device has no poll queues */
	ur_open_fails(g_loop, &uc, -EBUSY, -EOPNOTSUPP, g_loop);
	uc.iopoll = false;

	q = ur_queue(dev, elv_names[_i], 2, 0);
	/* Merged writes, a flush, a FUA write; read back both ways. */
	pat_fill(buf, 1 * MiB, base, seed);
	ur_rw_range(q, MQ_OP_WRITE, base, 1 * MiB - 64 * KiB, 4 * KiB, buf,
		    true, 0, "bdev writes");
	t_check(t_stats(q, -1).merges[MQ_DIR_WRITE] > 0, "bdev: no merges");
	t_check(ur_sync(q, MQ_OP_WRITE, base + 1 * MiB - 64 * KiB, 64 * KiB,
			buf + 1 * MiB - 64 * KiB, MQ_REQ_FUA) == 0,
		"bdev FUA write");
	t_check(ur_sync(q, MQ_OP_FLUSH, 0, 0, NULL, 0) == 0, "bdev flush");
	memset(buf, 0x5a, 1 * MiB);
	ur_rw_range(q, MQ_OP_READ, base, 1 * MiB, 64 * KiB, buf, false, 0,
		    "bdev reads");
	t_check(pat_diff(buf, 1 * MiB, base, seed) < 0, "bdev read back");
	file_check_pattern(g_loop_file, (off_t)base, 1 * MiB, seed,
			   "backing file");

	/* Discard (BLKDISCARD: a hole in the backing file), write-zeroes. */
	before = ur_stat(g_loop_file);
	if (g->discard) {
		t_check(ur_sync(q, MQ_OP_DISCARD, base + 256 * KiB, 256 * KiB,
				NULL, 0) == 0, "bdev discard");
		after = ur_stat(g_loop_file);
		t_check(after.st_blocks < before.st_blocks,
			"bdev discard freed nothing in the backing file");
	}
	t_check(ur_sync(q, MQ_OP_WRITE_ZEROES, base + 640 * KiB, 128 * KiB,
			NULL, 0) == 0, "bdev write-zeroes");
	memset(buf, 0x5a, 1 * MiB);
	ur_rw_range(q, MQ_OP_READ, base, 1 * MiB, 32 * KiB, buf, true, 0,
		    "bdev reads after discard");
	t_check(pat_diff(buf, 256 * KiB, base, seed) < 0, "before discard");
	if (g->discard) {
		t_check(zero_diff(buf + 256 * KiB, 256 * KiB) < 0,
			"bdev discarded range not zero");
		file_check_zero(g_loop_file, (off_t)(base + 256 * KiB),
				256 * KiB, "backing file hole");
	}
	t_check(pat_diff(buf + 512 * KiB, 128 * KiB, base + 512 * KiB, seed)
		< 0, "between discard and zeroes");
	t_check(zero_diff(buf + 640 * KiB, 128 * KiB) < 0,
		"bdev zeroed range not zero");
	t_check(pat_diff(buf + 768 * KiB, 256 * KiB, base + 768 * KiB, seed)
		< 0, "after zeroes");
	file_check_zero(g_loop_file, (off_t)(base + 640 * KiB), 128 * KiB,
			"backing file zeroes");
	t_check_u64(t_stats(q, -1).errors, 0, "bdev errors");
	t_teardown(q, dev);

	/* The claim went with the close: the device opens again at once. */
	dev2 = ur_open(g_loop, &uc);
	q = ur_queue(dev2, "none", 1, 0);
	t_check(ur_sync(q, MQ_OP_READ, base, 4 * KiB, buf, 0) == 0,
		"read after reopen");
	t_check(pat_diff(buf, 4 * KiB, base, seed) < 0, "data after reopen");
	t_teardown(q, dev2);
	free(buf);
}
END_TEST

/* ---- the program -------------------------------------------------------- */

static TCase *tc(Suite *s, const char *name, const TTest *t, int loops,
		 int timeout)
{
	TCase *c = tcase_create(name);

	tcase_set_timeout(c, timeout);
	tcase_add_loop_test(c, t, 0, loops);
	suite_add_tcase(s, c);
	return c;
}

static Suite *uring_suite(void)
{
	Suite *s = suite_create("uring");
	const char *why = loop_unavailable();
	TCase *c;

	tc(s, "open_geometry", test_open_geometry, 1, 30);
	tc(s, "open_errors", test_open_errors, 1, 30);
	tc(s, "exclusive_readonly", test_exclusive_readonly, 1, 30);
	tc(s, "config_errors", test_config_errors, 1, 30);
	tc(s, "patterns", test_patterns, 32, 120);
	tc(s, "flush_fua", test_flush_fua, 2, 60);
	tc(s, "discard", test_discard, 2, 60);
	tc(s, "write_zeroes", test_write_zeroes, 2, 60);
	tc(s, "read_past_eof", test_read_past_eof, 2, 60);
	tc(s, "many_inflight", test_many_inflight, 6, 120);
	tc(s, "sqpoll", test_sqpoll, 2, 60);
	tc(s, "reopen_cycles", test_reopen_cycles, 1, 60);
	if (why) {
		printf("%s: blockdev test skipped: %s\n", g_prog, why);
	} else {
		c = tc(s, "blockdev", test_blockdev, 2, 120);
		tcase_add_unchecked_fixture(c, loop_setup, loop_teardown);
	}
	return s;
}

int main(void)
{
	int ret, failed;

	ur_hooks_init();
	ret = mq_uring_probe();
	if (ret) {
		fprintf(stderr, "%s: io_uring unusable here (%s): "
			"skipped\n", g_prog, strerror(-ret));
		return 77;
	}
	g_main_pid = getpid();
	if (make_dir())
		return 99;
	atexit(cleanup);
	failed = t_run(uring_suite()) != EXIT_SUCCESS;
	cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
