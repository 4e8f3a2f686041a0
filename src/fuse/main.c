/* SPDX-License-Identifier: MIT */
/*
 * main.c - mqfs DEVICE MOUNTPOINT [-o options]: open the device through
 * the io_uring driver, build its queue, mount the filesystem, serve FUSE
 * until unmounted, and take it all down in reverse order.
 *
 * Exit status: 0 only when the filesystem was unmounted cleanly; 1 for a
 * bad command line, a failure before the mount (nothing is left mounted),
 * an error at unmount, or a mount that went read-only on corruption.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include "fuse_i.h"

struct mqfs_run {
	struct mqfs_config cfg;
	struct mqfs_daemon d;
	struct fuse_session *se;
	struct mq_dev *dev;
	struct mq_queue *q;
	int lock_fd;			/* holds the device's flock, or -1 */
	bool handlers;			/* libfuse's signal handlers set */
	struct mqfs_wback_stats wback;	/* at unmount, for stats= */
};

/*
 * One daemon per device: a second mount of the same image would corrupt
 * it.  Block devices are opened O_EXCL by the driver; image files get an
 * exclusive flock, held until exit.
 */
static int run_lock_device(struct mqfs_run *r)
{
	const char *dev = r->cfg.device;

	r->lock_fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (r->lock_fd < 0)
		return 0;	/* the driver reports why it cannot open it */
	if (!flock(r->lock_fd, LOCK_EX | LOCK_NB))
		return 0;
	if (errno == EWOULDBLOCK) {
		fprintf(stderr, "mqfs: %s is in use (mounted already?)\n", dev);
		return -EBUSY;
	}
	return 0;	/* no flock here (some network filesystems) */
}

/* Device, queue, tunables, filesystem: everything before the FUSE mount. */
static int run_open(struct mqfs_run *r)
{
	const char *dev = r->cfg.device;
	int ret = run_lock_device(r);

	if (ret)
		return ret;
	r->dev = mq_uring_open(dev, &r->cfg.uring, &ret);
	if (!r->dev) {
		fprintf(stderr, "mqfs: cannot open %s: %s\n", dev,
			strerror(-ret));
		return ret;
	}
	r->q = mq_queue_create(r->dev, &r->cfg.queue);
	if (!r->q) {
		fprintf(stderr, "mqfs: %s: cannot create the I/O queue "
			"(sched=%s)\n", dev, r->cfg.queue.elevator);
		return -ENOMEM;
	}
	ret = mqfs_config_tune_queue(&r->cfg, r->q);
	if (ret)
		return ret;
	ret = mqfs_mount(r->q, &r->cfg.mount, &r->d.fs);
	if (ret) {
		fprintf(stderr, "mqfs: %s: cannot mount: %s\n", dev,
			strerror(-ret));
		return ret;
	}
	ret = mqfs_ctl_init(&r->d.ctl, r->d.fs);
	if (ret)
		fprintf(stderr, "mqfs: %s: control surface: %s\n", dev,
			strerror(-ret));
	return ret;
}

static int run_mount(struct mqfs_run *r)
{
	if (fuse_set_signal_handlers(r->se)) {
		fprintf(stderr, "mqfs: cannot set the signal handlers\n");
		return -EIO;
	}
	r->handlers = true;
	if (fuse_session_mount(r->se, r->cfg.cmd.mountpoint)) {
		fprintf(stderr, "mqfs: cannot mount %s on %s\n", r->cfg.device,
			r->cfg.cmd.mountpoint);
		return -EIO;
	}
	return 0;
}

static int run_serve(struct mqfs_run *r)
{
	const struct fuse_cmdline_opts *cmd = &r->cfg.cmd;
	struct fuse_loop_config *lc;
	int ret;

	if (cmd->singlethread)
		return fuse_session_loop(r->se);
	lc = fuse_loop_cfg_create();
	if (!lc)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(lc, (unsigned)cmd->clone_fd);
	fuse_loop_cfg_set_max_threads(lc, cmd->max_threads);
	if (cmd->max_idle_threads != UINT_MAX)
		fuse_loop_cfg_set_idle_threads(lc, cmd->max_idle_threads);
	ret = fuse_session_loop_mt(r->se, lc);
	fuse_loop_cfg_destroy(lc);
	return ret;
}

/*
 * stats=PATH: the scheduler's statistics of the whole mount, written
 * when the filesystem is down and every I/O has completed.
 */
static void run_write_stats(struct mqfs_run *r)
{
	FILE *f;

	if (!r->cfg.stats_path || !r->q)
		return;
	f = fopen(r->cfg.stats_path, "w");
	if (!f) {
		fprintf(stderr, "mqfs: stats=%s: %s\n", r->cfg.stats_path,
			strerror(errno));
		return;
	}
	fprintf(f, "mqfs %s: ", r->cfg.device);
	mq_queue_stats_print(r->q, f);
	fprintf(f, "dontcache write-behind: %" PRIu64 " writes (%" PRIu64
		" bytes) buffered, %" PRIu64 " direct, %" PRIu64
		" buffers dropped, %" PRIu64 " batches, %" PRIu64
		" throttled, bound %" PRIu64 " bytes\n",
		r->wback.buffered_writes, r->wback.buffered_bytes,
		r->wback.direct_writes, r->wback.buffers_dropped,
		r->wback.write_batches, r->wback.throttled,
		r->wback.dirty_limit);
	fclose(f);
}

/* The FUSE session first (its destroy op syncs), then fs, queue, device. */
static int run_close(struct mqfs_run *r)
{
	int ret = 0;

	if (r->se) {
		fuse_session_unmount(r->se);
		if (r->handlers)
			fuse_remove_signal_handlers(r->se);
		fuse_session_destroy(r->se);
		r->se = NULL;
	}
	if (r->d.fs) {
		/* The session's destroy wrote everything back already. */
		mqfs_get_wback_stats(r->d.fs, &r->wback);
		ret = mqfs_unmount(r->d.fs);
		if (ret)
			fprintf(stderr, "mqfs: %s: unmount: %s\n",
				r->cfg.device, strerror(-ret));
		r->d.fs = NULL;
	}
	run_write_stats(r);
	if (r->q)
		mq_queue_destroy(r->q);
	if (r->dev)
		mq_dev_close(r->dev);
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	return ret;
}

static int run(struct mqfs_run *r, struct fuse_args *args)
{
	bool went_ro;
	int ret, loop;

	r->se = fuse_session_new(args, &mqfs_ll_ops, sizeof(mqfs_ll_ops),
				 &r->d);
	if (!r->se) {
		/* libfuse named the option; ours are checked already. */
		fprintf(stderr, "mqfs: see mqfs -h for the options\n");
		return -EINVAL;
	}
	ret = mqfs_bg_start(r->cfg.cmd.foreground);
	if (ret)
		goto out;
	mqfs_signals_block();
	ret = run_open(r);
	if (!ret)
		ret = run_mount(r);
	mqfs_bg_ready(ret ? 1 : 0);
	if (ret)
		goto out;
	if (chdir("/"))
		fprintf(stderr, "mqfs: chdir /: %s\n", strerror(errno));
	mqfs_signals_unblock();
	loop = run_serve(r);
	if (loop < 0)
		fprintf(stderr, "mqfs: %s: session loop: %s\n",
			r->cfg.device, strerror(-loop));
	/* Every asynchronous read and write answers before the session goes. */
	mqfs_daemon_drain(&r->d);
	/* A rw mount that is read-only now met corrupt metadata. */
	went_ro = !r->cfg.mount.readonly && mqfs_is_readonly(r->d.fs);
	ret = run_close(r);
	if (went_ro) {
		fprintf(stderr, "mqfs: %s: the filesystem had errors and went "
			"read-only; run fsck.mqfs\n", r->cfg.device);
		ret = ret ? ret : -EUCLEAN;
	}
	return ret ? ret : loop < 0 ? loop : 0;
out:
	run_close(r);
	return ret;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct mqfs_run r = { .lock_fd = -1 };
	int ret;

	ret = mqfs_config_parse(&args, &r.cfg);
	if (ret) {
		fuse_opt_free_args(&args);
		return ret > 0 ? 0 : 1;
	}
	mqfs_daemon_init(&r.d, &r.cfg);
	ret = run(&r, &args);
	mqfs_daemon_destroy(&r.d);
	mqfs_config_free(&r.cfg);
	fuse_opt_free_args(&args);
	mqfs_bg_finish();
	return ret ? 1 : 0;
}
