// SPDX-License-Identifier: MIT
/*
 * tools.c - what mkfs.mqfs and fsck.mqfs share: size arguments, opening a
 * device through the block layer, and a waited read for probing.
 *
 * The tools use the same block layer as the daemon (io_uring driver,
 * direct I/O), so an image that mkfs.mqfs could write is one the daemon
 * can open.
 */
#include <ctype.h>
#include <limits.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mqfs/blk.h"
#include "mqfs/cli.h"
#include "mqfs/mq_dev.h"
#include "mqfs/dev/uring.h"
#include "tools_i.h"

int tool_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && (!strcmp(end, "iB") || !strcmp(end, "ib")))
		end += 2;
	else if (toupper((unsigned char)*end) == 'B')
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

/*
 * Is @path the device of a mounted mqfs?  From mountinfo first, which
 * names the mount point; then from the daemon's lock (a mount whose
 * fsname= was changed), which does not wait for it.
 */
static bool tool_mounted(const char *path, char *where, size_t size)
{
	struct mqfs_cli_mount m;

	if (mqfs_cli_mount_of_device(path, &m) == 1) {
		snprintf(where, size, " on %s", m.dir);
		return true;
	}
	where[0] = '\0';
	return mq_uring_in_use(path) == 1;
}

/*
 * A writer refuses a mounted device at once, as e2fsprogs does; a
 * reader warns and goes on.  0, or -EBUSY after the message.
 */
static int tool_check_mounted(const char *prog, const char *path,
			      enum tool_access access)
{
	char where[PATH_MAX + 8];

	if (!tool_mounted(path, where, sizeof(where)))
		return 0;
	if (access == TOOL_READ_SHARED) {
		fprintf(stderr, "%s: warning: %s is mounted%s (in use): it "
			"changes while it is read, the answer may be stale\n",
			prog, path, where);
		return 0;
	}
	fprintf(stderr, "%s: %s is mounted%s (in use): unmount it first\n",
		prog, path, where);
	return -EBUSY;
}

int tool_open(const char *prog, const char *path, enum tool_access access,
	      struct tool_dev *td)
{
	struct mq_uring_config uc = {
		.readonly = access == TOOL_READ_SHARED,
		.exclusive = access == TOOL_EXCLUSIVE,
	};
	struct mq_queue_config qc = { .elevator = "none" };
	int err = 0;

	td->q = NULL;
	err = tool_check_mounted(prog, path, access);
	if (err)
		return err;
	err = mq_uring_open(path, &uc, &td->dev);
	if (err) {
		fprintf(stderr, "%s: cannot open %s: %s%s\n", prog, path,
			strerror(-err), mq_uring_open_hint(err));
		return err;
	}
	err = mq_queue_create(td->dev, &qc, &td->q);
	if (err) {
		fprintf(stderr, "%s: %s: cannot create the I/O queue: %s\n",
			prog, path, strerror(-err));
		mq_dev_close(td->dev);
		td->dev = NULL;
		return err;
	}
	return 0;
}

void tool_close(struct tool_dev *td)
{
	if (td->q)
		mq_queue_destroy(td->q);
	if (td->dev)
		mq_dev_close(td->dev);
	td->q = NULL;
	td->dev = NULL;
}

struct tool_wait {
	struct mq_bio bio;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void tool_end_io(struct mq_bio *bio)
{
	struct tool_wait *w = mq_container_of(bio, struct tool_wait, bio);

	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int tool_read_blocks(struct mq_queue *q, uint64_t blk, void *buf,
		     uint32_t nblocks)
{
	struct tool_wait w = { .done = false };
	int ret;

	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	mq_bio_init(&w.bio, MQ_OP_READ, blk * 8, buf, nblocks * 4096u,
		    tool_end_io, NULL);
	w.bio.flags = MQ_REQ_SYNC | MQ_REQ_META;
	mq_submit_bio(q, &w.bio);
	mq_flush_plug();
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	ret = w.bio.status;
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return ret;
}

const char *tool_human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB",
					    "PiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

const char *tool_operand(const char *prog, int code, const char *what,
			 int argc, char **argv)
{
	if (optind == argc - 1)
		return argv[optind];
	mqfs_cli_usage_error(prog, code, "%s", optind >= argc ? what
						   : "too many arguments");
	return NULL;
}
