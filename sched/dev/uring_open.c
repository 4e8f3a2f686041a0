/* SPDX-License-Identifier: MIT */
/*
 * uring_open.c - opening a device for the io_uring driver: the command
 * set that serves the path (by its type, or as -o driver= forces), the
 * open (O_DIRECT where the set wants it, O_EXCL or an flock so that two
 * users never share it), the set's own setup, and whether a path is in
 * use.  The rings themselves are uring.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "uring_i.h"

/*
 * An image file's exclusive flock, retried every 100 ms for @wait_ms:
 * an unmounted daemon may hold it for a moment while it finishes.
 */
static int uring_lock_file(int fd, const char *path, unsigned wait_ms)
{
	bool said = false;

	for (unsigned waited = 0;; waited += 100) {
		if (!flock(fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK)
			return 0;	/* no flock here (some network fs) */
		if (waited >= wait_ms)
			return -EBUSY;
		if (!said)
			fprintf(stderr, "mqfs: %s is in use; waiting up to %u "
				"s for it\n", path, (wait_ms + 999) / 1000);
		said = true;
		usleep(100 * 1000);
	}
}

/*
 * Which command set serves @st under @c->driver: -ENOTBLK when none can
 * (a char device that is not an NVMe generic one, a directory...), or
 * when the one forced does not fit the path.  NVMe is asked first: a
 * generic device is a char device the files' set would not take anyway.
 */
static int uring_pick_cmdset(const struct stat *st,
			     const struct mq_uring_config *c,
			     const struct uring_cmdset **cs)
{
	switch (c->driver) {
	case MQ_URING_DRIVER_RW:
		*cs = &mq_uring_rw_cmdset;
		return (*cs)->serves(st) ? 0 : -ENOTBLK;
	case MQ_URING_DRIVER_NVME:	/* even where sysfs cannot tell */
		*cs = &mq_uring_nvme_cmdset;
		return S_ISCHR(st->st_mode) ? 0 : -ENOTBLK;
	case MQ_URING_DRIVER_AUTO:
		break;
	}
	*cs = &mq_uring_nvme_cmdset;
	if ((*cs)->serves(st))
		return 0;
	*cs = &mq_uring_rw_cmdset;
	return (*cs)->serves(st) ? 0 : -ENOTBLK;
}

/*
 * O_DIRECT, read-write unless asked otherwise; with @c->exclusive two
 * users must never share the device: O_EXCL for a block device, a flock
 * for an image file or an NVMe generic device (whose open has no O_EXCL;
 * the flock keeps two mqfs programs apart, not other users).
 */
static int uring_open_fd(const char *path, const struct mq_uring_config *c,
			 bool *is_bdev, const struct uring_cmdset **cs)
{
	int flags = (c->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	struct stat st;
	int fd, err;

	if (stat(path, &st))
		return -errno;
	err = uring_pick_cmdset(&st, c, cs);
	if (err)
		return err;
	*is_bdev = S_ISBLK(st.st_mode);
	if ((*cs)->direct)
		flags |= O_DIRECT;
	if (*is_bdev && c->exclusive)
		flags |= O_EXCL;
	fd = open(path, flags);
	if (fd < 0)
		return -errno;
	if (!*is_bdev && c->exclusive) {
		err = uring_lock_file(fd, path, c->lock_wait_ms);
		if (err) {
			close(fd);
			return err;
		}
	}
	return fd;
}

const char *mq_uring_open_hint(int err)
{
	switch (err) {
	case -ENOTBLK:
		return " (not a regular file, block device or NVMe generic "
		       "device /dev/ngXnY)";
	case -EBUSY:
		return " (mounted or in use: unmount it first)";
	case -EROFS:
	case -EACCES:
		return " (read-only here: mount with -o ro, check with -n)";
	default:
		return "";
	}
}

int mq_uring_in_use(const char *path)
{
	struct stat st;
	int fd, ret = 0;

	if (stat(path, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
		if (fd < 0)
			return errno == EBUSY ? 1 : -errno;
		close(fd);
		return 0;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_SH | LOCK_NB))
		ret = errno == EWOULDBLOCK ? 1 : 0;
	close(fd);
	/* An NVMe namespace is also in use when its block device is. */
	if (!ret && mq_uring_nvme_cmdset.serves(&st))
		ret = mq_uring_nvme_cmdset.in_use(&st);
	return ret;
}

int mq_uring_open(const char *path, const struct mq_uring_config *cfg,
		  struct mq_dev **out)
{
	struct uring_dev *ud = calloc(1, sizeof(*ud));
	bool is_bdev = false;
	int ret;

	*out = NULL;
	if (!ud)
		return -ENOMEM;
	ud->cfg = *cfg;
	if (!ud->cfg.queue_depth)
		ud->cfg.queue_depth = 128;
	snprintf(ud->dev.name, sizeof(ud->dev.name), "%s", path);
	ret = mq_uring_probe();
	if (ret)
		goto err_free;
	ret = ud->fd = uring_open_fd(path, cfg, &is_bdev, &ud->cs);
	if (ret < 0)
		goto err_free;		/* the caller says why: open_hint */
	ret = ud->cs->setup(ud);
	if (ret)
		goto err_close;
	ud->dev.geo.read_only = cfg->readonly;
	ud->fixed_file = !ud->cfg.no_fixed_files;
	ud->dev.geo.queue_depth = ud->cfg.queue_depth;
	if (!ud->dev.geo.max_segments)
		ud->dev.geo.max_segments = URING_MAX_SEGS;
	ud->ops = mq_uring_ops;
	ud->ops.name = ud->cs->name;
	ud->dev.ops = &ud->ops;
	ud->dev.rq_pdu_size = ud->cs->pdu_size;
	ud->dev.polled = ud->cfg.caller_reap;
	ud->dev.geo.nr_poll_queues = URING_MAX_POLL_QUEUES;
	ud->queues = calloc(ud->dev.geo.nr_hw_queues + URING_MAX_POLL_QUEUES,
			    sizeof(*ud->queues));
	if (!ud->queues) {
		ret = -ENOMEM;
		goto err_close;
	}
	*out = &ud->dev;
	return 0;
err_close:
	if (ud->cs->free)
		ud->cs->free(ud);
	close(ud->fd);
err_free:
	free(ud);
	return ret;
}
