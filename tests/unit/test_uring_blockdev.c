/* SPDX-License-Identifier: MIT */
/*
 * test_uring_blockdev.c - the io_uring driver on a block device: when the
 * machine has loop devices and we are root, a loop device made with
 * losetup --direct-io=on: geometry, exclusive open (-EBUSY), data,
 * flush, FUA, discard and write-zeroes through the BLK* ioctls, reopen
 * after close.  The loop device is attached by an unchecked fixture (in
 * the parent process) and detached in its teardown even when the test
 * failed.
 *
 * Files live in a mkdtemp directory under $TMPDIR (default /var/tmp),
 * removed at exit; the program exits 77 when no loop device can be made
 * here (not root, no /dev/loop-control or no losetup) or when
 * mq_uring_probe() says io_uring is unusable (t_uring.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/fs.h>
#include <sys/ioctl.h>

static const char *const g_prog = "test_uring_blockdev";

#include "t_uring.h"
#include "mqfs/dev/uring.h"

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

static Suite *uring_blockdev_suite(void)
{
	Suite *s = suite_create("uring_blockdev");
	TCase *c = ur_tcase(s, "blockdev", test_blockdev, 2, 120);

	tcase_add_unchecked_fixture(c, loop_setup, loop_teardown);
	return s;
}

int main(void)
{
	const char *why = loop_unavailable();

	if (why) {
		printf("%s: blockdev test skipped: %s\n", g_prog, why);
		return 77;
	}
	return ur_main(uring_blockdev_suite);
}
