/* SPDX-License-Identifier: MIT */
/*
 * bdi.c - the writeback throttle of the mount's backing device.
 *
 * The kernel gives every FUSE mount's bdi strict_limit=1 and max_ratio=1
 * (fs/fuse/inode.c, fuse_bdi_init): a daemon it does not trust may not
 * hold more than 1 % of the dirty memory.  For cache=kernel that means
 * buffered writers are throttled to a trickle of dirty pages long
 * before the device is busy (4k random writes at QD1: 15-60 % more with
 * the limits lifted; DESIGN.md §17).  mqfs
 * is root's daemon on root's device, so it sets its own "roomy" limits:
 * strict_limit 0 and max_ratio from the bdi_max_ratio= option.
 *
 * The page cache takes a write(2) without asking the filesystem, so a
 * write the filesystem has no room for fails only at write-back, after
 * the writer was told it succeeded.  To keep that loss small the limit
 * follows the free space: while the free space is less than the roomy
 * limits let the kernel hold, strict_limit goes to 1 and max_bytes to
 * the free space, rounded down (at least MQFS_BDI_MIN_CAP), so the
 * dirty pages always fit and, once the
 * filesystem is full, at most about MQFS_BDI_MIN_CAP of them can be
 * lost (reported by write, fsync and close: ops.c).  The
 * bdi is "0:MINOR", the mount's device number, read from
 * /proc/self/mountinfo.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuse_i.h"

/* How often the kernel's dirty threshold is read again (it moves with
 * the memory in use). */
#define BDI_THRESH_SECONDS	10

/* mountinfo writes space, tab, newline and backslash as \ooo. */
static void bdi_unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* The "MAJOR:MINOR" of the mount at @path (mountinfo's third field). */
static int bdi_find(const char *path, char *dev, size_t cap)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[8192], mnt[PATH_MAX + 1], mm[32];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* id parent MAJ:MIN root mountpoint options ... */
		if (sscanf(line, "%*u %*u %31s %*s %4096s", mm, mnt) != 2)
			continue;
		bdi_unescape(mnt);
		if (!strcmp(mnt, path)) {
			snprintf(dev, cap, "%s", mm);
			ret = 0;	/* the last one is the top mount */
		}
	}
	fclose(f);
	return ret;
}

static int bdi_write(const char *dev, const char *file, uint64_t value)
{
	char path[128], val[32];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), "/sys/class/bdi/%s/%s", dev, file);
	n = snprintf(val, sizeof(val), "%" PRIu64 "\n", value);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, (size_t)n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * Bytes of dirty page cache the roomy limits let the mount hold: the
 * global threshold (nr_dirty_threshold; a real-time writer may go a
 * quarter over it), or its max_ratio share under the kernel's strict
 * limits.  A guess of 1 GiB if vmstat cannot be read.
 */
static uint64_t bdi_roomy_bytes(unsigned max_ratio)
{
	FILE *f = fopen("/proc/vmstat", "r");
	uint64_t pages = 0, bytes = 1ull << 30;
	char line[128];

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "nr_dirty_threshold %" SCNu64,
				   &pages) == 1)
				break;
		fclose(f);
	}
	if (pages)
		bytes = pages * (uint64_t)sysconf(_SC_PAGESIZE);
	bytes += bytes / 4;
	return max_ratio ? bytes : bytes / 100;
}

static uint64_t bdi_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec;
}

uint64_t mqfs_bdi_cap(uint64_t roomy, uint64_t free_bytes)
{
	uint64_t step = MQFS_BDI_MIN_CAP;

	if (free_bytes >= roomy)
		return 0;
	if (free_bytes < 2 * MQFS_BDI_MIN_CAP)
		return MQFS_BDI_MIN_CAP;
	while (step <= free_bytes / 8)
		step <<= 1;
	return free_bytes / step * step;
}

/* The cap for @free_bytes, with the dirty threshold read now and then. */
static uint64_t bdi_cap_for(struct mqfs_bdi *b, uint64_t free_bytes)
{
	uint64_t now = bdi_now();

	if (now - atomic_load(&b->roomy_at) >= BDI_THRESH_SECONDS) {
		atomic_store(&b->roomy, bdi_roomy_bytes(b->max_ratio));
		atomic_store(&b->roomy_at, now);
	}
	return mqfs_bdi_cap(atomic_load(&b->roomy), free_bytes);
}

/* Set the limits for @cap (as bdi_cap_for); @old is what is set now. */
static int bdi_apply(struct mqfs_bdi *b, uint64_t old, uint64_t cap)
{
	int ret = 0;

	if (cap) {
		if (!old)
			ret = bdi_write(b->dev, "strict_limit", 1);
		if (!ret)
			ret = bdi_write(b->dev, "max_bytes", cap);
	} else if (b->max_ratio) {
		ret = bdi_write(b->dev, "max_ratio", b->max_ratio);
		if (!ret)
			ret = bdi_write(b->dev, "strict_limit", 0);
	} else {
		ret = bdi_write(b->dev, "max_ratio", 1);	/* the kernel's */
	}
	return ret;
}

void mqfs_bdi_init(struct mqfs_bdi *b, unsigned max_ratio)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
	b->max_ratio = max_ratio;
	snprintf(b->error, sizeof(b->error), "not mounted");
}

void mqfs_bdi_attach(struct mqfs_bdi *b, const char *path)
{
	int ret;

	ret = bdi_find(path, b->dev, sizeof(b->dev));
	if (!ret && b->max_ratio)
		ret = bdi_apply(b, 1, 0);
	pthread_mutex_lock(&b->lock);
	if (ret)
		snprintf(b->error, sizeof(b->error), "not set (%s)",
			 strerror(-ret));
	else
		b->error[0] = '\0';
	pthread_mutex_unlock(&b->lock);
	if (ret)
		return;
	atomic_store(&b->roomy_at, bdi_now() - BDI_THRESH_SECONDS);
	atomic_store(&b->live, true);
}

void mqfs_bdi_follow(struct mqfs_bdi *b, uint64_t free_bytes)
{
	uint64_t cap, old;
	int ret;

	if (!atomic_load_explicit(&b->live, memory_order_relaxed))
		return;
	cap = bdi_cap_for(b, free_bytes);
	if (cap == atomic_load_explicit(&b->cap, memory_order_relaxed) ||
	    pthread_mutex_trylock(&b->lock))
		return;		/* nothing to do, or another thread does it */
	old = atomic_load(&b->cap);
	if (cap != old && atomic_load(&b->live)) {
		ret = bdi_apply(b, old, cap);
		if (ret) {
			fprintf(stderr, "mqfs: bdi %s: cannot set its limits "
				"(%s): left as they are\n", b->dev,
				strerror(-ret));
			snprintf(b->error, sizeof(b->error),
				 "stuck (%s)", strerror(-ret));
			atomic_store(&b->live, false);
		} else {
			atomic_store(&b->cap, cap);
			atomic_fetch_add(&b->changes, 1);
		}
	}
	pthread_mutex_unlock(&b->lock);
}

void mqfs_bdi_describe(struct mqfs_bdi *b, char *buf, size_t size)
{
	uint64_t cap = atomic_load(&b->cap);

	pthread_mutex_lock(&b->lock);
	if (b->error[0])
		snprintf(buf, size, "%s", b->error);
	else if (cap)
		snprintf(buf, size, "%s strict_limit=1 max_bytes=%" PRIu64
			 " (free space low), %" PRIu64 " changes", b->dev, cap,
			 (uint64_t)atomic_load(&b->changes));
	else if (b->max_ratio)
		snprintf(buf, size, "%s strict_limit=0 max_ratio=%u, %" PRIu64
			 " changes", b->dev, b->max_ratio,
			 (uint64_t)atomic_load(&b->changes));
	else
		snprintf(buf, size, "%s kernel limits, %" PRIu64 " changes",
			 b->dev, (uint64_t)atomic_load(&b->changes));
	pthread_mutex_unlock(&b->lock);
}

void mqfs_bdi_destroy(struct mqfs_bdi *b)
{
	pthread_mutex_destroy(&b->lock);
}
