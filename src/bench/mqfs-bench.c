/* SPDX-License-Identifier: MIT */
/*
 * mqfs-bench - a fio-like driver of the mqfs block layer.
 *
 * Each job is a thread that keeps --qd bios in flight on one shared queue,
 * submitting whatever has completed in plugged batches of --plug bios.
 * Completions run wherever the device reaps them; they hand the bio back
 * to its job through a lock-free stack and wake the job only when it
 * sleeps.  With --poll nothing reaps but the jobs: one that waits calls
 * mq_queue_poll() on its own hardware queue instead of sleeping, and the
 * completions run in its thread.  Results: IOPS, bandwidth, latency
 * percentiles and the block layer's own statistics (merges, dispatch
 * size, tags per allocation call), with context switches and CPU time
 * per I/O from getrusage.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "mqfs/clock.h"
#include "mqfs/mq_dev.h"
#include "bench_i.h"
#include "mqfs/dev/null.h"
#include "mqfs/dev/ram.h"
#include "mqfs/dev/uring.h"

struct bench_io {
	struct mq_bio bio;
	struct bench_job *job;
	uint64_t start_ns;
	struct bench_io *next;		/* free stack */
};

struct bench_job {
	struct bench *b;
	unsigned id;
	pthread_t thread;
	struct bench_io *ios;
	void *bufs;
	_Atomic(struct bench_io *) done;	/* completed, not yet reused */
	_Atomic uint32_t waiting;
	uint64_t rng, next_off, base, span;
	struct bench_hist lat[MQ_DIR_COUNT];
	_Atomic uint64_t errors;
};

struct bench {
	struct bench_opts o;
	struct mq_dev *dev;
	struct mq_queue *q;
	uint64_t end_ns;
	struct bench_job *jobs;
};

static long futex(_Atomic uint32_t *addr, int op, uint32_t val,
		  const struct timespec *timeout)
{
	return syscall(SYS_futex, addr, op, val, timeout, NULL, 0);
}

static void bench_end_io(struct mq_bio *bio)
{
	struct bench_io *io = mq_container_of(bio, struct bench_io, bio);
	struct bench_job *job = io->job;
	struct bench_io *head = atomic_load_explicit(&job->done,
						     memory_order_relaxed);

	/* In task context the caller sees the bio end now, not at reap. */
	uint64_t end = bio->flags & MQ_REQ_COMPLETE_IN_TASK ? mq_clock_ns()
							   : bio->done_ns;

	hist_add(&job->lat[mq_op_dir(bio->op)], end - io->start_ns);
	if (mq_unlikely(bio->status))
		atomic_fetch_add(&job->errors, 1);
	do {
		io->next = head;
	} while (!atomic_compare_exchange_weak_explicit(&job->done, &head, io,
			memory_order_release, memory_order_relaxed));
	if (atomic_load_explicit(&job->waiting, memory_order_seq_cst) &&
	    atomic_exchange(&job->waiting, 0))
		futex(&job->waiting, FUTEX_WAKE_PRIVATE, 1, NULL);
}

static uint64_t bench_rand(struct bench_job *job)
{
	uint64_t x = job->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return job->rng = x;
}

static bool bench_is_read(struct bench_job *job)
{
	switch (job->b->o.rw) {
	case BENCH_READ:
	case BENCH_RANDREAD:
		return true;
	case BENCH_RANDRW:
		return bench_rand(job) % 100 < job->b->o.rwmixread;
	default:
		return false;
	}
}

static uint64_t bench_offset(struct bench_job *job)
{
	const struct bench_opts *o = &job->b->o;
	uint64_t off;

	if (o->rw == BENCH_READ || o->rw == BENCH_WRITE) {
		off = job->next_off;
		job->next_off = (off + o->bs) % job->span;
		return job->base + off;
	}
	return job->base + (bench_rand(job) % (job->span / o->bs)) * o->bs;
}

static void bench_submit_one(struct bench_job *job, struct bench_io *io,
			     uint64_t now)
{
	const struct bench_opts *o = &job->b->o;
	enum mq_op op = bench_is_read(job) ? MQ_OP_READ : MQ_OP_WRITE;

	mq_bio_init(&io->bio, op, bench_offset(job) >> MQ_SECTOR_SHIFT,
		    io->bio.buf, o->bs, bench_end_io, NULL);
	if (o->complete_in_task)
		io->bio.flags |= MQ_REQ_COMPLETE_IN_TASK;
	io->start_ns = now;
	mq_submit_bio(job->b->q, &io->bio);
}

/* Submit every free bio, --plug of them per plug. */
static void bench_submit(struct bench_job *job, struct bench_io *list,
			 uint64_t now)
{
	unsigned per_plug = job->b->o.plug;

	while (list) {
		struct mq_plug plug;
		unsigned n = 0;

		if (per_plug)
			mq_start_plug(&plug, per_plug);
		while (list && (!per_plug || n < per_plug)) {
			struct bench_io *io = list;

			list = list->next;
			bench_submit_one(job, io, now);
			n++;
		}
		if (per_plug)
			mq_finish_plug(&plug);
	}
}

/* --poll: reap our hardware queue; completions of this call or -errno. */
static int bench_poll(struct bench_job *job)
{
	int ret = mq_queue_poll(job->b->q, 1);

	if (ret < 0) {
		fprintf(stderr, "mqfs-bench: job %u: poll: %s\n", job->id,
			strerror(-ret));
		exit(1);
	}
	return ret;
}

/*
 * Take completed bios; when there are none, poll (--poll) or sleep until
 * one completes.  A poll that completed nothing means our bios are not
 * in the ring: in the completion worker (--complete-in-task), or reaped
 * by a job sharing the queue.  Sleep then, but only 1 ms at a time with
 * --poll, in case some were still in flight with nobody left to poll.
 */
static struct bench_io *bench_reap(struct bench_job *job, bool wait)
{
	static const struct timespec poll_nap = { .tv_nsec = 1000000 };
	bool poll = job->b->o.poll;
	struct bench_io *list;

	for (;;) {
		list = atomic_exchange_explicit(&job->done, NULL,
						memory_order_acquire);
		if (list || !wait)
			return list;
		if (poll && bench_poll(job) > 0)
			continue;
		atomic_store(&job->waiting, 1);
		if (atomic_load(&job->done)) {
			atomic_store(&job->waiting, 0);
			continue;
		}
		futex(&job->waiting, FUTEX_WAIT_PRIVATE, 1,
		      poll ? &poll_nap : NULL);
		atomic_store(&job->waiting, 0);
	}
}

static void *bench_job_main(void *arg)
{
	struct bench_job *job = arg;
	unsigned qd = job->b->o.qd, done = 0;
	struct bench_io *list = NULL;

	for (unsigned i = 0; i < qd; i++) {
		job->ios[i].next = list;
		list = &job->ios[i];
	}
	for (;;) {
		uint64_t now = mq_clock_ns();

		if (now >= job->b->end_ns)
			break;
		bench_submit(job, list, now);
		list = bench_reap(job, true);
	}
	/* Drain: every bio comes back before the job ends. */
	for (struct bench_io *io = list; io; io = io->next)
		done++;
	while (done < qd)
		for (list = bench_reap(job, true); list; list = list->next)
			done++;
	return NULL;
}

static int bench_jobs_alloc(struct bench *b)
{
	const struct bench_opts *o = &b->o;
	uint64_t span = o->size / o->jobs / o->bs * o->bs;

	if (span < o->bs) {
		fprintf(stderr, "mqfs-bench: --size too small for %u jobs\n",
			o->jobs);
		return -EINVAL;
	}
	b->jobs = calloc(o->jobs, sizeof(*b->jobs));
	if (!b->jobs)
		return -ENOMEM;
	for (unsigned j = 0; j < o->jobs; j++) {
		struct bench_job *job = &b->jobs[j];

		job->b = b;
		job->id = j;
		job->base = span * j;
		job->span = span;
		job->rng = (o->seed + 1) * 0x9E3779B97F4A7C15ull + j * 7919 + 1;
		job->ios = calloc(o->qd, sizeof(*job->ios));
		if (!job->ios)
			return -ENOMEM;
		if (strcmp(o->dev, "null") &&
		    posix_memalign(&job->bufs, 4096, (size_t)o->qd * o->bs))
			return -ENOMEM;
		if (job->bufs)
			memset(job->bufs, 0x5a, (size_t)o->qd * o->bs);
		for (unsigned i = 0; i < o->qd; i++) {
			job->ios[i].job = job;
			job->ios[i].bio.buf = job->bufs ?
				(char *)job->bufs + (size_t)i * o->bs : NULL;
		}
	}
	return 0;
}

static void bench_jobs_free(struct bench *b)
{
	for (unsigned j = 0; b->jobs && j < b->o.jobs; j++) {
		free(b->jobs[j].ios);
		free(b->jobs[j].bufs);
	}
	free(b->jobs);
}

/* --fixedbufs: every job's buffers become io_uring fixed buffers. */
static int bench_register_bufs(struct bench *b)
{
	struct iovec *iov = calloc(b->o.jobs, sizeof(*iov));
	int ret;

	if (!iov)
		return -ENOMEM;
	for (unsigned j = 0; j < b->o.jobs; j++) {
		iov[j].iov_base = b->jobs[j].bufs;
		iov[j].iov_len = (size_t)b->o.qd * b->o.bs;
	}
	ret = mq_uring_register_buffers(b->dev, iov, b->o.jobs);
	free(iov);
	if (ret)
		fprintf(stderr, "mqfs-bench: --fixedbufs needs a path device: %s\n",
			strerror(-ret));
	return ret;
}

/* A ram or null device: @dev, or a message when it could not be made. */
static struct mq_dev *bench_made(int err, struct mq_dev *dev,
				 const char *what)
{
	if (err)
		fprintf(stderr, "mqfs-bench: cannot create the %s device: "
			"%s\n", what, strerror(-err));
	return dev;
}

static struct mq_dev *bench_open_dev(struct bench_opts *o)
{
	struct mq_dev *dev;
	int err;

	if (!strcmp(o->dev, "ram")) {
		if (!o->size)
			o->size = 256u << 20;
		err = mq_ram_open(o->size, o->dev_qd, &dev);
		return bench_made(err, dev, "ram");
	}
	if (!strcmp(o->dev, "null")) {
		struct mq_null_config nc = {
			.latency_ns = o->dev_lat_us * 1000,
			.queue_depth = o->dev_qd,
			.nr_hw_queues = MQ_MAX(o->nr_hw_queues, 1u),
		};

		if (!o->size)
			o->size = 1ull << 30;
		err = mq_null_open(&nc, &dev);
		return bench_made(err, dev, "null");
	}
	struct mq_uring_config uc = { .queue_depth = o->dev_qd,
				      .sqpoll = o->sqpoll,
				      .iopoll = o->iopoll,
				      .caller_reap = o->poll,
				      .exclusive = true };

	err = mq_uring_open(o->dev, &uc, &dev);
	if (err) {
		fprintf(stderr, "mqfs-bench: cannot open device %s: %s%s\n",
			o->dev, strerror(-err), mq_uring_open_hint(err));
		return NULL;
	}
	if (!o->size || o->size > dev->geo.size_bytes)
		o->size = dev->geo.size_bytes;
	return dev;
}

/* The device may offer fewer queues than asked: --poll jobs then share. */
static void bench_check_queues(struct bench *b)
{
	char buf[32];

	if (!b->o.poll || mq_queue_attr_show(b->q, "nr_hw_queues", buf,
					     sizeof(buf)))
		return;
	if (strtoul(buf, NULL, 10) < b->o.jobs)
		fprintf(stderr, "mqfs-bench: %s offers %lu hardware queue(s) "
			"for %u jobs: polling jobs share them and reap each "
			"other's completions\n", b->o.dev,
			strtoul(buf, NULL, 10), b->o.jobs);
}

static int bench_open(struct bench *b)
{
	const struct bench_opts *o = &b->o;
	struct mq_queue_config qc = {
		.elevator = o->sched, .nr_hw_queues = o->nr_hw_queues,
		.queue_depth = o->queue_depth, .nr_requests = o->nr_requests,
		.eager_dispatch = o->eager_dispatch, .async_run = o->async_run,
		.single_tag_alloc = o->single_tag, .no_merges = o->nomerges,
	};
	char delay[32];
	int err;

	b->dev = bench_open_dev(&b->o);
	if (!b->dev)
		return -ENODEV;		/* said why */
	if (bench_jobs_alloc(b) || (o->fixedbufs && bench_register_bufs(b)))
		return -ENOMEM;
	err = mq_queue_create(b->dev, &qc, &b->q);
	if (err) {
		fprintf(stderr, "mqfs-bench: cannot create queue (scheduler "
			"'%s'): %s\n", o->sched, strerror(-err));
		mq_dev_close(b->dev);
		return err;
	}
	bench_check_queues(b);
	snprintf(delay, sizeof(delay), "%u", o->complete_delay_us);
	return mq_queue_attr_store(b->q, "complete_delay_us", delay);
}

static void bench_collect(struct bench *b, struct bench_result *r)
{
	for (unsigned j = 0; j < b->o.jobs; j++) {
		for (int d = 0; d < MQ_DIR_COUNT; d++) {
			hist_merge(&r->lat[d], &b->jobs[j].lat[d]);
			hist_merge(&r->all, &b->jobs[j].lat[d]);
		}
		r->errors += atomic_load(&b->jobs[j].errors);
	}
	mq_queue_get_stats(b->q, -1, &r->st);
}

int main(int argc, char **argv)
{
	struct bench b = { 0 };
	struct bench_result *r;
	uint64_t t0;
	int ret;

	if (bench_parse_opts(argc, argv, &b.o))
		return 2;
	if (bench_open(&b))
		return 1;
	r = calloc(1, sizeof(*r));
	if (!r) {
		fprintf(stderr, "mqfs-bench: out of memory\n");
		return 1;
	}
	getrusage(RUSAGE_SELF, &r->ru0);
	t0 = mq_clock_ns();
	b.end_ns = t0 + (uint64_t)(b.o.runtime * 1e9);
	for (unsigned j = 0; j < b.o.jobs; j++)
		pthread_create(&b.jobs[j].thread, NULL, bench_job_main, &b.jobs[j]);
	for (unsigned j = 0; j < b.o.jobs; j++)
		pthread_join(b.jobs[j].thread, NULL);
	r->elapsed_s = (double)(mq_clock_ns() - t0) / 1e9;
	getrusage(RUSAGE_SELF, &r->ru1);
	bench_collect(&b, r);
	ret = bench_report(&b.o, r);
	mq_queue_destroy(b.q);
	mq_dev_close(b.dev);
	bench_jobs_free(&b);
	free(r);
	return ret;
}
