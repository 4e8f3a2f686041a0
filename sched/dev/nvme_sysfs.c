/* SPDX-License-Identifier: MIT */
/*
 * nvme_sysfs.c - what the kernel says of an NVMe namespace behind its
 * generic device /dev/ngXnY: its block device in sysfs (limits, queues,
 * poll queues), a claim on that block device, and the kernel's version
 * where a feature of passthrough depends on it.
 *
 * /sys/dev/char/M:m links to .../nvmeX/ngXnY; the controller's directory
 * beside it holds the namespace's block device: nvmeXnY, or with native
 * multipath the hidden path device nvmeXcCnY.  Either may be missing (a
 * format the kernel cannot use as a block device is exactly when ngXnY
 * matters): then nothing here is known and the callers assume limits
 * that every NVMe PCI controller takes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "geometry.h"
#include "nvme_i.h"

/* The kernel's NVMe PCI limit: 127 segments, one 4 KiB page each, less one. */
#define NVME_SAFE_MAX_BYTES	(126u * 4096)

/* Is @name the block device of namespace @ns of controller @ctrl? */
static bool nvme_is_ns_block(const char *name, unsigned ctrl, unsigned ns)
{
	unsigned c, p, n;
	char end;

	if (sscanf(name, "nvme%un%u%c", &c, &n, &end) == 2)
		return c == ctrl && n == ns;
	/* A multipath path device: subsystem C, controller P. */
	return sscanf(name, "nvme%uc%un%u%c", &c, &p, &n, &end) == 3 &&
	       n == ns;
}

int mq_nvme_sysfs_find(dev_t rdev, char *dir, size_t len)
{
	char path[96], link[PATH_MAX], *name;
	unsigned ctrl, ns;
	struct dirent *e;
	ssize_t n;
	DIR *d;

	dir[0] = '\0';
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u", major(rdev),
		 minor(rdev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return -ENOENT;
	link[n] = '\0';
	name = strrchr(link, '/');
	name = name ? name + 1 : link;
	if (sscanf(name, "ng%un%u", &ctrl, &ns) != 2)
		return -ENOENT;
	snprintf(link, sizeof(link), "%s/device", path);
	d = opendir(link);
	if (!d)
		return -ENOENT;
	while ((e = readdir(d)))
		if (nvme_is_ns_block(e->d_name, ctrl, ns)) {
			snprintf(dir, len, "%s/%s", link, e->d_name);
			break;
		}
	closedir(d);
	return dir[0] ? 0 : -ENOENT;
}

long long mq_nvme_sysfs_number(const char *dir, const char *attr)
{
	char path[PATH_MAX];

	if (!dir[0])
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	return mq_sysfs_number(path);
}

unsigned mq_nvme_sysfs_hw_queues(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	unsigned n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/mq", dir);
	d = dir[0] ? opendir(path) : NULL;
	if (!d)
		return 4;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n ? n : 1;
}

uint64_t mq_nvme_sysfs_kernel_max(const char *dir)
{
	long long kb = mq_nvme_sysfs_number(dir, "queue/max_hw_sectors_kb");
	long long segs = mq_nvme_sysfs_number(dir, "queue/max_segments");
	uint64_t max = kb > 0 ? (uint64_t)kb * 1024 : NVME_SAFE_MAX_BYTES;

	/* A buffer of 4 KiB pages not physically contiguous: one each. */
	if (segs > 1 && (uint64_t)(segs - 1) * 4096 < max)
		max = (uint64_t)(segs - 1) * 4096;
	else if (segs <= 1 && max > NVME_SAFE_MAX_BYTES)
		max = NVME_SAFE_MAX_BYTES;
	return max;
}

int mq_nvme_sysfs_claim(const char *dir)
{
	char path[PATH_MAX];
	long long maj = -1, min = -1;
	struct stat st;
	FILE *f;
	int fd;

	if (!dir[0])
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/dev", dir);
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	if (fscanf(f, "%lld:%lld", &maj, &min) != 2)
		maj = -1;
	fclose(f);
	snprintf(path, sizeof(path), "/dev/%s", strrchr(dir, '/') + 1);
	if (maj < 0 || stat(path, &st) || !S_ISBLK(st.st_mode) ||
	    st.st_rdev != makedev((unsigned)maj, (unsigned)min))
		return -ENOENT;		/* no node of it here: nothing to hold */
	fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

bool mq_nvme_kernel_at_least(unsigned major_want, unsigned minor_want,
			     char *release, size_t len)
{
	struct utsname u;
	unsigned maj = 0, min = 0;

	if (uname(&u) || sscanf(u.release, "%u.%u", &maj, &min) != 2)
		snprintf(u.release, sizeof(u.release), "unknown");
	snprintf(release, len, "%s", u.release);
	return maj > major_want || (maj == major_want && min >= minor_want);
}
