/* SPDX-License-Identifier: MIT */
/*
 * run.c - mqfs-load's jobs: one thread per file, I/O through psync
 * (pwritev2/preadv2, one at a time) or an io_uring of its own (qd in
 * flight, submitted in batches), the verify pattern and the latency
 * histogram.  A failing job prints why, sets its exit status and stops
 * the others; nothing here exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include "load_i.h"
#include "mqfs/loghist.h"

#define GOLDEN		0x9e3779b97f4a7c15ULL
#define REAP_BATCH	64

static atomic_bool load_stop;

void load_stop_all(void)
{
	atomic_store_explicit(&load_stop, true, memory_order_relaxed);
}

uint64_t load_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- histogram ---- */

void hist_init(struct load_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

static unsigned hist_index(uint64_t v)
{
	return mq_loghist_index(v, HIST_SUB_BITS);
}

static uint64_t hist_value(unsigned idx)
{
	return mq_loghist_value(idx, HIST_SUB_BITS);
}

void hist_add(struct load_hist *h, uint64_t ns)
{
	h->b[hist_index(ns)]++;
	h->n++;
	h->sum += (double)ns;
	if (ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
}

void hist_merge(struct load_hist *to, const struct load_hist *from)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		to->b[i] += from->b[i];
	to->n += from->n;
	to->sum += from->sum;
	if (from->min < to->min)
		to->min = from->min;
	if (from->max > to->max)
		to->max = from->max;
}

/* The smallest latency that @pct percent of the samples do not exceed. */
uint64_t hist_percentile(const struct load_hist *h, double pct)
{
	uint64_t rank = (uint64_t)((double)h->n * pct / 100.0 + 0.999999);
	uint64_t seen = 0, v;
	unsigned i;

	if (!h->n)
		return 0;
	if (rank < 1)
		rank = 1;
	for (i = 0; i < HIST_BUCKETS - 1; i++) {
		seen += h->b[i];
		if (seen >= rank)
			break;
	}
	v = hist_value(i);
	/* The exact extremes are known: a bucket's middle cannot pass them. */
	return v < h->min ? h->min : v > h->max ? h->max : v;
}

/* ---- offsets and the verify pattern ---- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* splitmix64: reproducible from --seed, cheap, good enough for offsets. */
static uint64_t rng_next(uint64_t *state)
{
	*state += GOLDEN;
	return mix64(*state);
}

/*
 * The 8-byte word at file offset @off depends on (seed, off) only, so a
 * file written with one block size verifies with any other, and a block
 * at the wrong offset is caught.
 */
static uint64_t pattern_word(uint64_t seed, uint64_t off)
{
	return mix64((seed * GOLDEN) ^ off ^ 0x6d7166736c6f6164ULL);
}

static void pattern_fill(char *buf, uint64_t off, uint32_t len, uint64_t seed)
{
	uint64_t *w = (uint64_t *)(void *)buf;

	for (uint32_t i = 0; i < len / 8; i++)
		w[i] = pattern_word(seed, off + (uint64_t)i * 8);
}

static int pattern_check(struct load_job *j, const struct load_slot *s)
{
	const uint64_t *w = (const uint64_t *)(const void *)s->buf;
	uint64_t seed = j->o->seed;

	for (uint32_t i = 0; i < j->o->bs / 8; i++) {
		uint64_t off = s->off + (uint64_t)i * 8;
		uint64_t want = pattern_word(seed, off);

		if (w[i] == want)
			continue;
		load_stop_all();
		if (j->status)		/* one report per job: its first */
			return -EILSEQ;
		fprintf(stderr, "mqfs-load: %s: verify failed at offset %" PRIu64
			" (block at %" PRIu64 "): expected 0x%016" PRIx64
			", read 0x%016" PRIx64 "\n", j->path, off, s->off, want, w[i]);
		j->status = LOAD_EXIT_FAIL;
		return -EILSEQ;
	}
	return 0;
}

/*
 * Random modes visit each block once per pass, in an order drawn from
 * the seed (fio's random map does the same): that keeps "size/bs I/Os"
 * a full pass and lets a random write be verified afterwards.  The order
 * is a keyed bijection on the smallest power of two >= nblocks (odd
 * multiply, xorshift and add, each invertible mod 2^bits), walked by a
 * counter; values past nblocks are skipped, at most half of them.
 */
static void perm_init(struct load_job *j)
{
	unsigned bits = 1;

	while (bits < 64 && (1ULL << bits) < j->nblocks)
		bits++;
	j->perm_mask = bits == 64 ? UINT64_MAX : (1ULL << bits) - 1;
	j->perm_shift = bits / 2 ? bits / 2 : 1;
	for (int i = 0; i < 3; i++) {
		j->perm_key[i] = rng_next(&j->rng) & j->perm_mask;
		j->perm_mul[i] = (rng_next(&j->rng) | 1) & j->perm_mask;
	}
	j->perm_ctr = 0;
}

static uint64_t perm_apply(const struct load_job *j, uint64_t x)
{
	for (int i = 0; i < 3; i++) {
		x = (x * j->perm_mul[i]) & j->perm_mask;
		x ^= x >> j->perm_shift;
		x = (x + j->perm_key[i]) & j->perm_mask;
	}
	return x;
}

static uint64_t perm_next_block(struct load_job *j)
{
	uint64_t b;

	do
		b = perm_apply(j, j->perm_ctr++);
	while (b >= j->nblocks);
	return b;
}

/* ---- setup ---- */

int load_path(const struct load_opts *o, unsigned idx, char *buf, size_t len)
{
	int n = o->jobs > 1 ? snprintf(buf, len, "%s.%u", o->file, idx)
			    : snprintf(buf, len, "%s", o->file);

	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr, "mqfs-load: %s: name too long\n", o->file);
		return -ENAMETOOLONG;
	}
	return 0;
}


/* Report the failed @call on @j's file; -errno, taken before printing. */
static int load_errno(const struct load_job *j, const char *call)
{
	int err = -errno;

	fprintf(stderr, "mqfs-load: %s: %s: %s\n", j->path, call,
		strerror(-err));
	return err;
}
static int job_open(struct load_job *j)
{
	const struct load_opts *o = j->o;
	int flags = O_CLOEXEC;

	if (load_mode_reads(o->mode) && load_mode_writes(o->mode))
		flags |= O_RDWR;
	else if (load_mode_writes(o->mode))
		flags |= O_WRONLY | O_CREAT;
	else
		flags |= O_RDONLY;
	if (o->flags == LOAD_DIRECT)
		flags |= O_DIRECT;
	j->fd = open(j->path, flags, 0644);
	if (j->fd >= 0)
		return 0;
	if (errno == EINVAL && o->flags == LOAD_DIRECT) {
		fprintf(stderr, "mqfs-load: %s: O_DIRECT not supported by this "
			"filesystem (EINVAL)\n", j->path);
		return -EINVAL;
	}
	return load_errno(j, "open");
}

/* Reading past the end would return nothing; the user must write first. */
static int job_check_size(struct load_job *j)
{
	const struct load_opts *o = j->o;
	struct stat st;

	if (!load_mode_reads(o->mode))
		return 0;
	if (fstat(j->fd, &st))
		return load_errno(j, "stat");
	if ((uint64_t)st.st_size >= o->size)
		return 0;
	fprintf(stderr, "mqfs-load: %s: %jd bytes, shorter than --size %" PRIu64
		": write it first (-m write with the same --size%s)\n", j->path,
		(intmax_t)st.st_size, o->size, o->jobs > 1 ? " and --jobs" : "");
	return -ENODATA;
}

/* Buffers 4 KiB aligned (O_DIRECT), each slot's its own. */
static int job_alloc(struct load_job *j)
{
	const struct load_opts *o = j->o;
	size_t stride = ((size_t)o->bs + 4095) & ~(size_t)4095;
	uint64_t junk = o->seed;

	if (posix_memalign((void **)&j->bufs, 4096, stride * o->qd)) {
		j->bufs = NULL;
		goto nomem;
	}
	j->slots = calloc(o->qd, sizeof(*j->slots));
	j->free_slots = calloc(o->qd, sizeof(*j->free_slots));
	if (!j->slots || !j->free_slots)
		goto nomem;
	for (size_t i = 0; i < stride * o->qd / 8; i++)
		((uint64_t *)(void *)j->bufs)[i] = rng_next(&junk);
	for (unsigned i = 0; i < o->qd; i++) {
		j->slots[i].buf = j->bufs + stride * i;
		j->free_slots[i] = o->qd - 1 - i;
	}
	j->nr_free = o->qd;
	return 0;
nomem:
	fprintf(stderr, "mqfs-load: %s: cannot allocate %u buffers of %u bytes\n",
		j->path, o->qd, o->bs);
	return -ENOMEM;
}

static int job_ring(struct load_job *j)
{
	int ret;

	if (j->o->engine != LOAD_URING)
		return 0;
	ret = io_uring_queue_init(j->o->qd, &j->ring, 0);
	if (ret < 0) {
		fprintf(stderr, "mqfs-load: io_uring_queue_init(%u): %s\n",
			j->o->qd, strerror(-ret));
		return ret;
	}
	j->ring_ok = true;
	return 0;
}

int load_job_setup(struct load_job *j, const struct load_opts *o, unsigned idx)
{
	int ret;

	*j = (struct load_job){ .o = o, .idx = idx, .fd = -1 };
	hist_init(&j->lat);
	j->nblocks = o->size / o->bs;
	j->rng = mix64(o->seed + (uint64_t)idx * GOLDEN);
	ret = load_path(o, idx, j->path, sizeof(j->path));
	if (!ret)
		ret = job_open(j);
	if (!ret)
		ret = job_check_size(j);
	if (!ret)
		ret = job_alloc(j);
	if (!ret)
		ret = job_ring(j);
	return ret;
}

/* The ring goes first: exiting it waits for I/O still using the buffers. */
void load_job_teardown(struct load_job *j)
{
	if (j->ring_ok)
		io_uring_queue_exit(&j->ring);
	j->ring_ok = false;
	free(j->bufs);
	free(j->slots);
	free(j->free_slots);
	j->bufs = NULL;
	j->slots = NULL;
	j->free_slots = NULL;
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
}

/* ---- the I/O common to both engines ---- */

static int job_rwf(const struct load_job *j)
{
	return j->o->flags == LOAD_DONTCACHE ? RWF_DONTCACHE : 0;
}

static bool job_draw_write(struct load_job *j)
{
	switch (j->o->mode) {
	case LOAD_WRITE:
	case LOAD_RANDWRITE:
		return true;
	case LOAD_RW:
		return rng_next(&j->rng) % 100 >= j->o->mix;
	default:
		return false;
	}
}

/*
 * Fill @s with the job's next I/O; false when there is none: the pass is
 * over (without --loops), the time is up or another job failed.
 */
static bool job_next(struct load_job *j, struct load_slot *s)
{
	const struct load_opts *o = j->o;

	if (atomic_load_explicit(&load_stop, memory_order_relaxed))
		return false;
	if (j->deadline && load_now_ns() >= j->deadline)
		return false;
	if (j->issued >= j->nblocks) {
		if (!o->loops)
			return false;
		j->issued = 0;
	}
	if (o->mode != LOAD_RANDWRITE && o->mode != LOAD_RANDREAD)
		s->off = j->issued * o->bs;
	else {
		if (!j->issued)
			perm_init(j);
		s->off = perm_next_block(j) * o->bs;
	}
	j->issued++;
	s->write = job_draw_write(j);
	s->done = 0;
	if (s->write && o->verify)
		pattern_fill(s->buf, s->off, o->bs, o->seed);
	s->t0 = load_now_ns();
	return true;
}

static int job_io_error(struct load_job *j, const struct load_slot *s, int err)
{
	load_stop_all();
	if (j->status)			/* one report per job: its first */
		return err ? -err : -ENODATA;
	if (err == EOPNOTSUPP && j->o->flags == LOAD_DONTCACHE) {
		fprintf(stderr, "mqfs-load: %s: RWF_DONTCACHE not supported by "
			"this filesystem (EOPNOTSUPP)\n", j->path);
		j->status = LOAD_EXIT_USAGE;
		return -err;
	}
	fprintf(stderr, "mqfs-load: %s: %s at offset %" PRIu64 ": %s\n", j->path,
		s->write ? "write" : "read", s->off + s->done,
		err ? strerror(err) : "end of file (was the file truncated?)");
	j->status = LOAD_EXIT_FAIL;
	return err ? -err : -ENODATA;
}

/*
 * An I/O of @s returned @res: 1 when the rest must be issued again (short
 * transfer, EAGAIN), 0 when it is done (and verified), < 0 when it failed.
 */
static int job_complete(struct load_job *j, struct load_slot *s, int res)
{
	uint32_t bs = j->o->bs;

	if (res == -EAGAIN || res == -EINTR)
		return 1;
	if (res <= 0)
		return job_io_error(j, s, -res);
	s->done += (uint32_t)res;
	if (s->done < bs)
		return 1;
	hist_add(&j->lat, load_now_ns() - s->t0);
	j->ios++;
	if (s->write) {
		j->wbytes += bs;
		return 0;
	}
	j->rbytes += bs;
	return j->o->verify ? pattern_check(j, s) : 0;
}

/* ---- psync ---- */

static int psync_io(struct load_job *j, struct load_slot *s)
{
	struct iovec iov = { s->buf + s->done, j->o->bs - s->done };
	off_t off = (off_t)(s->off + s->done);
	ssize_t r;

	if (s->write)
		r = pwritev2(j->fd, &iov, 1, off, job_rwf(j));
	else
		r = preadv2(j->fd, &iov, 1, off, job_rwf(j));
	return r < 0 ? -errno : (int)r;
}

static int psync_run(struct load_job *j)
{
	struct load_slot *s = &j->slots[0];
	int ret;

	while (job_next(j, s)) {
		do
			ret = job_complete(j, s, psync_io(j, s));
		while (ret == 1);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ---- io_uring ---- */

/* Queue the rest of slot @idx's I/O; the ring has room for every slot. */
static void uring_prep(struct load_job *j, unsigned idx)
{
	struct load_slot *s = &j->slots[idx];
	struct io_uring_sqe *sqe = io_uring_get_sqe(&j->ring);
	unsigned len = j->o->bs - s->done;
	uint64_t off = s->off + s->done;

	if (!sqe) {
		io_uring_submit(&j->ring);
		sqe = io_uring_get_sqe(&j->ring);
	}
	if (s->write)
		io_uring_prep_write(sqe, j->fd, s->buf + s->done, len, off);
	else
		io_uring_prep_read(sqe, j->fd, s->buf + s->done, len, off);
	sqe->rw_flags = job_rwf(j);
	io_uring_sqe_set_data64(sqe, idx);
}

/*
 * Take free slots for new I/Os; false when the job has no more work.
 * Their latency starts at the submit that follows, not while later slots
 * of the batch are being filled: the slots taken are still named in
 * free_slots[nr_free..] until the next reap, so they are stamped there.
 */
static bool uring_refill(struct load_job *j, unsigned *inflight)
{
	unsigned top = j->nr_free;
	bool more = true;
	uint64_t now;

	while (j->nr_free) {
		unsigned idx = j->free_slots[j->nr_free - 1];

		if (!job_next(j, &j->slots[idx])) {
			more = false;
			break;
		}
		j->nr_free--;
		uring_prep(j, idx);
		(*inflight)++;
	}
	now = load_now_ns();
	for (unsigned i = j->nr_free; i < top; i++)
		j->slots[j->free_slots[i]].t0 = now;
	return more;
}

static int uring_reap(struct load_job *j, unsigned *inflight)
{
	struct io_uring_cqe *cqes[REAP_BATCH];
	unsigned n = io_uring_peek_batch_cqe(&j->ring, cqes, REAP_BATCH);
	int ret, err = 0;

	if (!n) {
		ret = io_uring_wait_cqe(&j->ring, &cqes[0]);
		if (ret == -EINTR || ret == -EAGAIN)
			return 0;
		if (ret < 0) {
			fprintf(stderr, "mqfs-load: %s: io_uring_wait_cqe: %s\n",
				j->path, strerror(-ret));
			j->status = LOAD_EXIT_FAIL;
			return ret;
		}
		n = 1;
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned idx = (unsigned)io_uring_cqe_get_data64(cqes[i]);

		ret = job_complete(j, &j->slots[idx], cqes[i]->res);
		if (ret == 1 && !err) {
			uring_prep(j, idx);
			continue;
		}
		if (ret < 0 && !err)
			err = ret;
		j->free_slots[j->nr_free++] = idx;
		(*inflight)--;
	}
	io_uring_cq_advance(&j->ring, n);
	return err;
}

static int uring_run(struct load_job *j)
{
	unsigned inflight = 0;
	bool more = true;
	int ret;

	for (;;) {
		if (more)
			more = uring_refill(j, &inflight);
		if (!inflight)
			return 0;
		ret = io_uring_submit(&j->ring);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN) {
			fprintf(stderr, "mqfs-load: %s: io_uring_submit: %s\n",
				j->path, strerror(-ret));
			j->status = LOAD_EXIT_FAIL;
			return ret;
		}
		ret = uring_reap(j, &inflight);
		if (ret < 0)
			return ret;
	}
}

/* ---- the thread ---- */

static int job_fsync(struct load_job *j)
{
	if (!fsync(j->fd))
		return 0;
	j->status = LOAD_EXIT_FAIL;
	return load_errno(j, "fsync");
}

void *load_job_run(void *arg)
{
	struct load_job *j = arg;
	int ret;

	if (j->o->engine == LOAD_URING)
		ret = uring_run(j);
	else
		ret = psync_run(j);
	if (!ret && j->o->fsync_end)
		ret = job_fsync(j);
	if (ret < 0 && !j->status)
		j->status = LOAD_EXIT_FAIL;
	return NULL;
}
