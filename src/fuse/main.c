/* SPDX-License-Identifier: MIT */
/*
 * main.c - mqfs DEVICE MOUNTPOINT [-o options]: open the device through
 * the io_uring driver, build its queue, mount the filesystem, serve FUSE
 * (engine.c) until unmounted or signalled (SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT: unmount), and take it all down in reverse order.
 *
 * Exit status: 0 only when the filesystem was unmounted cleanly; 1 for a
 * bad command line, a failure before the mount (nothing is left mounted),
 * an error at unmount, or a mount that met corrupt metadata (read-only
 * with errors=remount-ro, or not with errors=continue).
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fuse_i.h"
#include "mqfs/dev/uring.h"

struct mqfs_run {
	struct mqfs_config cfg;
	struct mqfs_daemon d;
	struct fuse_session *se;
	struct mq_dev *dev;
	struct mq_queue *q;
	char *mnt;			/* the mount point, resolved */
	FILE *stats;			/* stats=PATH, opened at start */
	bool mounted;
	unsigned ring_depth;		/* entries per ring; 0: no rings */
	struct mqfs_wback_stats wback;	/* at unmount, for stats= */
};

/* How long the mount waits for the kernel's INIT to be served. */
#define RUN_INIT_WAIT_MS	30000u

/* How long a mount waits for an unmounted daemon still finishing. */
#define RUN_LOCK_WAIT_MS	5000u

/*
 * One daemon per device: a second mount (or mkfs, fsck -y) of the same
 * image would corrupt it, so the driver has it to itself (O_EXCL for a
 * block device, an flock for an image file), waiting a few seconds for
 * a daemon that was just unmounted.  -o ro on media that cannot be
 * written (a read-only mount, a 0444 image) opens it read-only; on
 * writable media read-write, so that a journal can still be recovered.
 */
static int run_open_device(struct mqfs_run *r)
{
	const char *dev = r->cfg.device;
	int ret;

	r->cfg.uring.exclusive = true;
	r->cfg.uring.lock_wait_ms = RUN_LOCK_WAIT_MS;
	ret = mq_uring_open(dev, &r->cfg.uring, &r->dev);
	if (ret && r->cfg.mount.readonly &&
	    (ret == -EROFS || ret == -EACCES || ret == -EPERM)) {
		r->cfg.uring.readonly = true;
		ret = mq_uring_open(dev, &r->cfg.uring, &r->dev);
	}
	if (ret)
		fprintf(stderr, "mqfs: cannot open %s: %s%s\n", dev,
			strerror(-ret), mq_uring_open_hint(ret));
	return ret;
}

/*
 * Will the FUSE requests come over rings?  transport=dev: no; auto: when
 * the kernel has io_uring on (else the reason is kept for .mqfs); uring:
 * yes, or the mount fails here, before anything is mounted.  Sets
 * @r->ring_depth, and the slots beyond the workers' in @extra: the
 * rings' entries, or fuse_bufs for /dev/fuse.
 */
static int run_plan_transport(struct mqfs_run *r, unsigned *extra)
{
	const struct mqfs_config *c = &r->cfg;
	char *note = r->d.transport_note;
	size_t size = sizeof(r->d.transport_note);
	unsigned nq = mqfs_ring_nr_queues(), depth, ents;
	int on = 0;

	*extra = c->fuse_bufs;
	if (c->transport == MQFS_TRANSPORT_DEV)
		return 0;
	on = mqfs_ring_probe(note, size);
	depth = c->uring_depth ? c->uring_depth
		: mqfs_ring_default_depth(c->queue.queue_depth ?
					  c->queue.queue_depth : 128, nq);
	ents = mqfs_ring_entries(depth, c->uring_spill, nq);
	if (on == 1 && (!nq || c->workers + nq * ents > 1000)) {
		snprintf(note, size, "%u rings of %u entries exceed the 1000 "
			 "request slots (lower uring_depth or uring_spill)", nq,
			 ents);
		on = -EINVAL;
	}
	if (on == 1) {
		note[0] = '\0';
		r->ring_depth = depth;
		*extra = nq * ents;
		return 0;
	}
	if (c->transport == MQFS_TRANSPORT_AUTO)
		return 0;
	fprintf(stderr, "mqfs: transport=uring: %s\n", note);
	return on ? on : -EOPNOTSUPP;
}

/*
 * The request slots, registered with every ring of the device as one
 * fixed buffer before its queues exist: writes go out of them and reads
 * land in them without the kernel pinning pages per I/O.
 */
static int run_engine(struct mqfs_run *r)
{
	struct mqfs_engine *e = &r->d.eng;
	struct iovec iov;
	unsigned extra;
	int ret;

	ret = run_plan_transport(r, &extra);
	if (ret)
		return ret;
	ret = mqfs_engine_init(e, r->cfg.workers, extra, r->cfg.cmd.debug);
	if (ret) {
		fprintf(stderr, "mqfs: %u request buffers: %s\n",
			r->cfg.workers + extra, strerror(-ret));
		return ret;
	}
	iov = (struct iovec){ .iov_base = e->pool.arena,
			      .iov_len = e->pool.bytes };
	ret = mq_uring_register_buffers(r->dev, &iov, 1);
	if (ret)
		fprintf(stderr, "mqfs: %s: request buffers not registered: "
			"%s\n", r->cfg.device, strerror(-ret));
	return 0;
}

/*
 * Rings planned: a poll queue of the device for each, which its thread
 * reaps itself (ring.c; with more rings than the driver offers queues,
 * rings share them), unless uring_reap=reaper or the device cannot: a
 * polled device has nothing but poll queues already.  The reapers then
 * complete the rings' I/O, as for /dev/fuse.  The queues stay unused
 * when the kernel later refuses the rings.
 */
static void run_plan_poll_queues(struct mqfs_run *r)
{
	unsigned nq = mqfs_ring_nr_queues();

	if (!r->ring_depth || r->cfg.uring_reaper || r->dev->polled)
		return;
	r->cfg.queue.nr_poll_queues = MQ_MIN(nq, r->dev->geo.nr_poll_queues);
}

/* Device, queue, tunables, filesystem: everything before the FUSE mount. */
static int run_open(struct mqfs_run *r)
{
	const char *dev = r->cfg.device;
	int ret;

	/* Now, not at unmount: a bad path is an error of the command. */
	if (r->cfg.stats_path && !(r->stats = fopen(r->cfg.stats_path, "w"))) {
		ret = -errno;
		fprintf(stderr, "mqfs: stats=%s: %s\n", r->cfg.stats_path,
			strerror(-ret));
		return ret;
	}
	ret = run_open_device(r);
	if (ret)
		return ret;
	ret = run_engine(r);
	if (ret)
		return ret;
	run_plan_poll_queues(r);
	ret = mq_queue_create(r->dev, &r->cfg.queue, &r->q);
	if (ret) {
		fprintf(stderr, "mqfs: %s: cannot create the I/O queue "
			"(sched=%s): %s\n", dev, r->cfg.queue.elevator,
			strerror(-ret));
		return ret;
	}
	ret = mqfs_config_tune_queue(&r->cfg, r->q);
	if (ret)
		return ret;
	r->cfg.mount.await_forgets = mqfs_engine_await_forgets;
	r->cfg.mount.await_forgets_arg = &r->d.eng;
	ret = mqfs_mount(r->q, &r->cfg.mount, &r->d.fs);
	if (ret) {
		fprintf(stderr, "mqfs: %s: cannot mount: %s\n", dev,
			strerror(-ret));
		return ret;
	}
	ret = mqfs_ctl_init(&r->d.ctl, r->d.fs, &r->d);
	if (ret)
		fprintf(stderr, "mqfs: %s: control surface: %s\n", dev,
			strerror(-ret));
	return ret;
}

/*
 * The rings, before the kernel's INIT is served (its reply grants
 * io_uring only if they are there); with transport=auto a failure
 * leaves the mount on /dev/fuse.
 */
static int run_rings(struct mqfs_run *r)
{
	struct mqfs_daemon *d = &r->d;
	int ret;

	if (!r->ring_depth)
		return 0;
	ret = mqfs_rings_prepare(&d->rings, d, fuse_session_fd(r->se),
				 &(struct mqfs_rings_shape){
					.depth = r->ring_depth,
					.spill = r->cfg.uring_spill,
					.pin = r->cfg.uring_pin,
					.doorbell = r->cfg.uring_doorbell });
	if (!ret)
		return 0;
	snprintf(d->transport_note, sizeof(d->transport_note),
		 "no rings: %s", d->rings.why);
	fprintf(stderr, "mqfs: %s%s\n", d->transport_note,
		d->transport == MQFS_TRANSPORT_URING ? "" :
		": serving /dev/fuse");
	return d->transport == MQFS_TRANSPORT_URING ? ret : 0;
}

/* How the FUSE requests come, in the start-up line's words. */
static void run_describe_requests(struct mqfs_run *r, char *buf,
				  size_t size)
{
	struct mqfs_daemon *d = &r->d;

	if (d->conn.uring)
		snprintf(buf, size, "FUSE requests over io_uring (%u rings)",
			 d->rings.nr_queues);
	else
		snprintf(buf, size, "FUSE requests over /dev/fuse%s%s",
			 d->transport_note[0] ? "; " : "", d->transport_note);
}

/*
 * The -f start-up line, in plain words: what is mounted where and how.
 * With -d a second line gives the driver, the rings' shape, the workers
 * and the writeback limits.
 */
static void run_say_started(struct mqfs_run *r)
{
	struct mqfs_daemon *d = &r->d;
	struct mqfs_ring_stats s;
	char how[224], bdi[160];

	run_describe_requests(r, how, sizeof(how));
	fprintf(stderr, "mqfs: %s mounted on %s: cache=%s, scheduler %s, "
		"%s\n", r->cfg.device, r->mnt, mqfs_cache_mode_name(d->cache),
		mq_queue_elevator_name(r->q), how);
	if (!r->cfg.cmd.debug)
		return;
	mqfs_rings_get_stats(&d->rings, &s);
	mqfs_bdi_describe(&d->bdi, bdi, sizeof(bdi));
	if (d->conn.uring)
		snprintf(how, sizeof(how), "rings of %u entries, device I/O "
			 "reaped by %s; ", d->rings.depth, s.dev_polled ?
			 "the rings" : "the driver's threads");
	else
		how[0] = '\0';
	fprintf(stderr, "mqfs: driver %s; %sup to %u workers, %u request "
		"buffers; writeback limits: %s\n", r->dev->ops->name, how,
		d->eng.max_workers, d->eng.pool.nr, bdi);
}

/*
 * The mount point, resolved before the device is opened: once mounted, a
 * stat of it waits for the workers.  It must be a directory: the kernel
 * would mount on a file too (with the file's type as the root's), and
 * every request would then meet a root of another type and fail (EIO).
 */
static int run_resolve_mountpoint(struct mqfs_run *r)
{
	const char *path = r->cfg.cmd.mountpoint;
	struct stat st;
	int ret;

	r->mnt = realpath(path, NULL);
	if (!r->mnt || stat(r->mnt, &st)) {
		ret = -errno;		/* before printing changes it */
		fprintf(stderr, "mqfs: mount point %s: %s\n", path,
			strerror(-ret));
		return ret;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "mqfs: mount point %s: not a directory\n",
			path);
		return -ENOTDIR;
	}
	return 0;
}

/* The FUSE mount, its writeback limits, and the workers serving it. */
static int run_mount(struct mqfs_run *r)
{
	int ret;

	if (fuse_session_mount(r->se, r->mnt)) {
		fprintf(stderr, "mqfs: cannot mount %s on %s\n", r->cfg.device,
			r->mnt);
		return -EIO;
	}
	r->mounted = true;
	mqfs_bdi_attach(&r->d.bdi, r->mnt);
	/* Only the writeback cache (cache=kernel) needs the limit to follow
	 * the space; INIT, which grants it, comes later. */
	if (r->d.cache == MQFS_CACHE_KERNEL)
		mqfs_bdi_follow(&r->d.bdi, mqfs_daemon_free_bytes(&r->d));
	ret = run_rings(r);
	if (ret)
		return ret;
	ret = mqfs_engine_start(&r->d.eng, &r->d, fuse_session_fd(r->se));
	if (ret) {
		fprintf(stderr, "mqfs: cannot start the FUSE workers: %s\n",
			strerror(-ret));
		return ret;
	}
	/* The mount is up when INIT is answered and the transport chosen. */
	ret = mqfs_engine_wait_init(&r->d.eng, RUN_INIT_WAIT_MS);
	if (ret == -ETIMEDOUT) {
		fprintf(stderr, "mqfs: %s: no FUSE INIT from the kernel in %u "
			"s\n", r->mnt, RUN_INIT_WAIT_MS / 1000);
		return ret;
	}
	if (ret) {
		fprintf(stderr, "mqfs: %s: the FUSE connection did not start: "
			"%s\n", r->mnt, strerror(-ret));
		return ret;
	}
	if (r->cfg.cmd.foreground)
		run_say_started(r);
	return 0;
}

/* The libfuse unmount: lazy, as fusermount3 -u -z. */
static void run_unmount(struct mqfs_run *r)
{
	if (r->mounted) {
		fuse_session_unmount(r->se);
		r->mounted = false;
	}
}

/*
 * Serve until the connection goes (fusermount3 -u, umount) or a signal
 * asks for the unmount; a worker that ends tells us through the engine's
 * eventfd.  Then every worker and every asynchronous request is done.
 */
static int run_serve(struct mqfs_run *r)
{
	struct pollfd pfd[2] = {
		{ .fd = -1, .events = POLLIN },
		{ .fd = r->d.eng.done_fd, .events = POLLIN },
	};
	sigset_t set;
	int ret = 0;

	mqfs_signals_set(&set);
	pfd[0].fd = signalfd(-1, &set, SFD_CLOEXEC);
	if (pfd[0].fd < 0) {
		ret = -errno;
		fprintf(stderr, "mqfs: signalfd: %s\n", strerror(-ret));
	}
	while (poll(pfd, 2, -1) < 0 && errno == EINTR)
		;
	if (pfd[0].fd >= 0)
		close(pfd[0].fd);
	run_unmount(r);
	mqfs_engine_stop(&r->d.eng);
	return ret;
}

/*
 * stats=PATH: the scheduler's statistics of the whole mount, written
 * when the filesystem is down and every I/O has completed.
 */
static void run_write_stats(struct mqfs_run *r)
{
	FILE *f = r->stats;

	if (!f)
		return;
	r->stats = NULL;
	if (r->q) {
		fprintf(f, "mqfs %s: ", r->cfg.device);
		mq_queue_stats_print(r->q, f);
		fprintf(f, "dontcache write-behind: %" PRIu64 " writes (%"
			PRIu64 " bytes) buffered, %" PRIu64 " direct, %" PRIu64
			" buffers dropped, %" PRIu64 " batches, %" PRIu64
			" throttled, bound %" PRIu64 " bytes\n",
			r->wback.buffered_writes, r->wback.buffered_bytes,
			r->wback.direct_writes, r->wback.buffers_dropped,
			r->wback.write_batches, r->wback.throttled,
			r->wback.dirty_limit);
	}
	if (fclose(f))
		fprintf(stderr, "mqfs: stats=%s: %s\n", r->cfg.stats_path,
			strerror(errno));
}

/* The FUSE session first, then fs, queue, device. */
static int run_close(struct mqfs_run *r)
{
	int ret = 0;

	if (r->se) {
		run_unmount(r);
		mqfs_engine_stop(&r->d.eng);
		fuse_session_destroy(r->se);
		r->se = NULL;
	}
	if (r->d.fs) {
		mqfs_get_wback_stats(r->d.fs, &r->wback);
		ret = mqfs_unmount(r->d.fs);
		if (ret && ret != -EUCLEAN)	/* that one run() explains */
			fprintf(stderr, "mqfs: %s: unmount: %s\n",
				r->cfg.device, strerror(-ret));
		r->d.fs = NULL;
	}
	run_write_stats(r);
	if (r->q)
		mq_queue_destroy(r->q);
	if (r->dev)
		mq_dev_close(r->dev);
	free(r->mnt);
	return ret;
}

static int run(struct mqfs_run *r, struct fuse_args *args)
{
	/* libfuse mounts and unmounts; the requests are mqfs's (engine.c). */
	static const struct fuse_lowlevel_ops no_ops;
	bool went_ro, had_errors;
	int ret, serve;

	r->se = fuse_session_new(args, &no_ops, sizeof(no_ops), NULL);
	if (!r->se) {
		/* libfuse named the option; ours are checked already. */
		fprintf(stderr, "Try 'mqfs --help' for more information.\n");
		return -EINVAL;
	}
	ret = mqfs_bg_start(r->cfg.cmd.foreground);
	if (ret)
		goto out;
	/* Every thread started from here on inherits the blocked mask. */
	mqfs_signals_block();
	signal(SIGPIPE, SIG_IGN);
	ret = run_resolve_mountpoint(r);
	if (!ret)
		ret = run_open(r);
	if (!ret)
		ret = run_mount(r);
	mqfs_bg_ready(ret ? 1 : 0);
	if (ret)
		goto out;
	if (chdir("/"))
		fprintf(stderr, "mqfs: chdir /: %s\n", strerror(errno));
	serve = run_serve(r);
	if (!serve)
		serve = atomic_load(&r->d.eng.failed);
	/* Corrupt metadata met, whatever errors= made of it: say so. */
	had_errors = mqfs_had_errors(r->d.fs);
	went_ro = !r->cfg.mount.readonly && mqfs_is_readonly(r->d.fs);
	ret = run_close(r);
	if (had_errors || ret == -EUCLEAN) {
		fprintf(stderr, "mqfs: %s: the filesystem had errors%s; run "
			"fsck.mqfs\n", r->cfg.device,
			went_ro ? " and went read-only" : "");
		ret = ret ? ret : -EUCLEAN;
	}
	return ret ? ret : serve;
out:
	run_close(r);
	return ret;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct mqfs_run r = { 0 };
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
