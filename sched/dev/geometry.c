/* SPDX-License-Identifier: MIT */
/*
 * geometry.c - what a file or block device offers for direct I/O: block
 * sizes, capacity, discard, hardware queues.  Block devices answer through
 * ioctls and sysfs; regular files through statx (STATX_DIOALIGN tells the
 * direct-I/O alignment on kernels that know it).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "geometry.h"

long long mq_sysfs_number(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Read a number from /sys/dev/block/MAJ:MIN/@attr; -1 when absent. */
static long long sysfs_dev_number(dev_t rdev, const char *attr)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%s",
		 major(rdev), minor(rdev), attr);
	return mq_sysfs_number(path);
}

/* Hardware queues of a blk-mq device: the entries of its mq/ folder. */
static unsigned sysfs_nr_hw_queues(dev_t rdev)
{
	char path[128];
	unsigned n;

	for (n = 0; n < 1024; n++) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/mq/%u",
			 major(rdev), minor(rdev), n);
		if (access(path, F_OK))
			break;
	}
	return n ? n : 1;
}

static int geo_blockdev(int fd, const struct stat *st, struct mq_dev_geometry *g,
			bool *is_bdev)
{
	int lbs = 0;
	unsigned pbs = 0;
	uint64_t size = 0;
	long long v;

	if (ioctl(fd, BLKSSZGET, &lbs) || ioctl(fd, BLKPBSZGET, &pbs) ||
	    ioctl(fd, BLKGETSIZE64, &size))
		return -errno;
	g->logical_block_size = (uint32_t)lbs;
	g->physical_block_size = pbs;
	g->size_bytes = size;
	v = sysfs_dev_number(st->st_rdev, "queue/discard_max_bytes");
	g->discard = v > 0;
	v = sysfs_dev_number(st->st_rdev, "queue/write_zeroes_max_bytes");
	g->write_zeroes = true;	/* BLKZEROOUT falls back to writing zeroes */
	v = sysfs_dev_number(st->st_rdev, "queue/max_sectors_kb");
	g->max_hw_sectors = v > 0 ? (uint32_t)(v * 2) : 2048;
	v = sysfs_dev_number(st->st_rdev, "queue/fua");
	g->fua = v > 0;
	g->nr_hw_queues = sysfs_nr_hw_queues(st->st_rdev);
	*is_bdev = true;
	return 0;
}

static int geo_file(int fd, const struct stat *st, struct mq_dev_geometry *g)
{
	struct statx sx;
	uint32_t align = 0;

	if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) &&
	    (sx.stx_mask & STATX_DIOALIGN))
		align = sx.stx_dio_offset_align;
	/* Unknown: the file system block is always safe. */
	g->logical_block_size = align ? align : (uint32_t)st->st_blksize;
	g->physical_block_size = (uint32_t)st->st_blksize;
	g->size_bytes = (uint64_t)st->st_size;
	g->discard = true;	/* punch hole */
	g->write_zeroes = true;	/* zero range */
	g->fua = false;
	g->max_hw_sectors = 2048;
	g->nr_hw_queues = 16;	/* rings are cheap; the default is one */
	return 0;
}

int mq_geometry_probe(int fd, struct mq_dev_geometry *g, bool *is_bdev)
{
	struct stat st;

	memset(g, 0, sizeof(*g));
	*is_bdev = false;
	if (fstat(fd, &st))
		return -errno;
	g->flush = true;
	if (S_ISBLK(st.st_mode))
		return geo_blockdev(fd, &st, g, is_bdev);
	if (S_ISREG(st.st_mode))
		return geo_file(fd, &st, g);
	return -ENOTBLK;
}

bool mq_geometry_poll_capable(int fd)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISBLK(st.st_mode))
		return false;
	return sysfs_dev_number(st.st_rdev, "queue/io_poll") > 0;
}
