/* SPDX-License-Identifier: MIT */
/*
 * bdi.c - the writeback throttle of the mount's backing device.
 *
 * The kernel gives every FUSE mount's bdi strict_limit=1 and max_ratio=1
 * (fs/fuse/inode.c, fuse_bdi_init): a daemon it does not trust may not
 * hold more than 1 % of the dirty memory.  For cache=kernel that means
 * buffered writers are throttled to a trickle of dirty pages long
 * before the device is busy (4k random writes at QD1: 15-60 % more with
 * the limits lifted, measured 2026-12-01).  mqfs is root's daemon on
 * root's device, so it sets its own: strict_limit 0 and max_ratio from
 * the bdi_max_ratio= option.  The bdi is "0:MINOR", the mount's device
 * number, read from /proc/self/mountinfo.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuse_i.h"

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

static int bdi_write(const char *dev, const char *file, unsigned value)
{
	char path[128], val[16];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), "/sys/class/bdi/%s/%s", dev, file);
	n = snprintf(val, sizeof(val), "%u\n", value);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, (size_t)n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

void mqfs_bdi_set(const char *path, unsigned max_ratio, char *report,
		  size_t cap)
{
	char dev[32];
	int ret;

	if (!max_ratio) {
		snprintf(report, cap, "kernel defaults kept");
		return;
	}
	ret = bdi_find(path, dev, sizeof(dev));
	if (!ret)
		ret = bdi_write(dev, "strict_limit", 0);
	if (!ret)
		ret = bdi_write(dev, "max_ratio", max_ratio);
	if (ret)
		snprintf(report, cap, "not set (%s)", strerror(-ret));
	else
		snprintf(report, cap, "%s strict_limit=0 max_ratio=%u", dev,
			 max_ratio);
}
