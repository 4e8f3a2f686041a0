/* SPDX-License-Identifier: MIT */
/*
 * test_uring_open.c - the io_uring driver (sched/dev/uring.c,
 * uring_probe.c and geometry.c) opening and closing: a regular file's
 * geometry (size, logical block size from statx STATX_DIOALIGN, discard
 * and write-zeroes offered, the driver's segment and depth limits); a
 * missing path (-ENOENT), a directory and a character device
 * (-ENOTBLK), iopoll on a regular file (-EOPNOTSUPP), each with a
 * message on stderr and no descriptor leaked; exclusive and read-only
 * opens; configurations refused; open/close cycles without a leak.
 *
 * Files live in a mkdtemp directory under $TMPDIR (default /var/tmp),
 * removed at exit; the program exits 77 only when mq_uring_probe() says
 * io_uring is unusable here (t_uring.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

static const char *const g_prog = "test_uring_open";

#include "t_uring.h"
#include "mqfs/dev/uring.h"

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

/* ---- the program -------------------------------------------------------- */

static Suite *uring_open_suite(void)
{
	Suite *s = suite_create("uring_open");

	ur_tcase(s, "open_geometry", test_open_geometry, 1, 30);
	ur_tcase(s, "open_errors", test_open_errors, 1, 30);
	ur_tcase(s, "exclusive_readonly", test_exclusive_readonly, 1, 30);
	ur_tcase(s, "config_errors", test_config_errors, 1, 30);
	ur_tcase(s, "reopen_cycles", test_reopen_cycles, 1, 60);
	return s;
}

UR_MAIN(uring_open_suite)
