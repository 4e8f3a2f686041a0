/* SPDX-License-Identifier: MIT */
/*
 * test_soak.c - a time-bounded randomized soak of the whole stack: the
 * block layer (sched/), the fault-injection stacking device (fault.c) and
 * the io_uring (uring.c) or ram driver under it.
 *
 * For T_SOAK_SECONDS (default 20; the long run is T_SOAK_SECONDS=600) the
 * test runs rounds of 2-5 s, each with new parameters drawn from a seeded
 * PRNG.  A round builds a stack: the lower device is an io_uring device
 * on a 64 MiB temporary file (O_DIRECT, aligned buffers) with a small
 * ring (4-16 slots, sometimes SQPOLL) under a queue of 16-64 driver tags,
 * so the ring fills up, or a ram device; over it 1-3 fault devices, each
 * failing with -EIO every request that touches its one "bad" sector range
 * (optionally only for some ops), sometimes one more failing every flush,
 * each adding 0-100 us of completion latency; on top a queue with
 * no_merges, so one bio is one request and EIO attribution is exact,
 * elevator none or mq-deadline.  Without io_uring only ram is used.
 *
 * Four threads submit random reads, writes and flushes (4-64 KiB, 4 KiB
 * aligned, random plugs, priorities and flags, each thread in its own
 * quarter of the device, biased towards the edges of bad ranges), and a
 * controller switches the top queue's elevator and tunables at random.
 * Every bio knows the status it must end with: -EIO when the first fault
 * layer that matches it (op mask, range) fails it, else 0; and it must end
 * exactly once.  Writes stamp every 512-byte sector with thread, sequence
 * and sector; reads are checked against the thread's model at completion,
 * reads that failed must leave the buffer untouched, and at the end of the
 * round every thread reads its region back, after which the lower
 * device's content (ram memory or the file) must equal the model sector by
 * sector, bad ranges included (a failed write never reaches it).
 *
 * After the round: every queue of the stack (the inner ones found by
 * wrapping each device's queue_rq) is drained and balanced - nothing in
 * flight, dispatched == completed == expected per direction, errors ==
 * the EIOs failed at or below it, no driver or scheduler tag held, no
 * usage reference - and each fault device injected exactly the bios
 * attributed to it and forwarded the rest.  A watchdog dumps the stack
 * instead of hanging.  One line per round goes to stdout.
 *
 * Environment: T_SOAK_SECONDS; T_SOAK_SEED (default: from the clock,
 * printed; round 0 runs exactly this seed, so a failed round replays with
 * its printed seed); T_SOAK_LOWER=ram|uring to use only one lower device.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <liburing.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "t_util.h"
#include "t_main.h"
#include "mqfs/dev/fault.h"
#include "mqfs/dev/ram.h"
#include "mqfs/dev/uring.h"
#include "t_dev.h"

#define NR_THREADS	4
#define DEV_BYTES	(64ull << 20)
#define DEV_SECT	(DEV_BYTES >> MQ_SECTOR_SHIFT)
#define BLK		4096u			/* I/O granule and alignment */
#define BLK_SECT	(BLK >> MQ_SECTOR_SHIFT)
#define REGION_SECT	(DEV_SECT / NR_THREADS)
#define REGION_BLKS	(REGION_SECT / BLK_SECT)
#define MAX_BLKS	16u			/* 64 KiB */
#define MAX_BYTES	(MAX_BLKS * BLK)
#define MAX_WINDOW	32u			/* bios in flight per thread */
#define MAX_LAYERS	5			/* fault devices in a stack */
#define DEFAULT_SECONDS	20
#define STALL_NS	(30ull * 1000000000ull)
#define SEC_NS		1000000000ull
#define OPBIT(op)	(1u << (op))

/* ---- io_uring: watch the ring fill up; ordering for TSan -------------- */

/*
 * uring.c calls liburing's io_uring_submit() and io_uring_peek_batch_cqe()
 * (shared library functions): the test interposes both to see ring-full
 * conditions - a submit entered with no free SQ slot (the driver's
 * get_sqe failed), a submit refused with -EBUSY/-EAGAIN, a reap that
 * finds the kernel's CQ-overflow flag set - and, in TSan builds, to tell
 * TSan that a CQE is ordered after its SQE (the kernel is in between): a
 * submit releases the ring, a reap acquires it.
 */
static int (*real_uring_submit)(struct io_uring *);
static unsigned (*real_uring_peek)(struct io_uring *, struct io_uring_cqe **,
				   unsigned);
static atomic_ulong g_sq_full;		/* submits with a full SQ ring */
static atomic_ulong g_ring_busy;	/* submits refused: -EBUSY/-EAGAIN */
static atomic_ulong g_cq_overflow;	/* reaps that saw CQ overflow */

#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define tsan_acquire(p)	__tsan_acquire(p)
#define tsan_release(p)	__tsan_release(p)
#else
#define tsan_acquire(p)	do { } while (0)
#define tsan_release(p)	do { } while (0)
#endif

int io_uring_submit(struct io_uring *ring)
{
	int ret;

	if (!io_uring_sq_space_left(ring))
		atomic_fetch_add_explicit(&g_sq_full, 1, memory_order_relaxed);
	tsan_release(ring);
	ret = real_uring_submit(ring);
	if (ret == -EBUSY || ret == -EAGAIN)
		atomic_fetch_add_explicit(&g_ring_busy, 1, memory_order_relaxed);
	return ret;
}

unsigned io_uring_peek_batch_cqe(struct io_uring *ring,
				 struct io_uring_cqe **cqes, unsigned count)
{
	unsigned n = real_uring_peek(ring, cqes, count);

	tsan_acquire(ring);
	if (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_CQ_OVERFLOW)
		atomic_fetch_add_explicit(&g_cq_overflow, 1,
					  memory_order_relaxed);
	return n;
}

static bool uring_hooks_init(void)
{
	real_uring_submit = (int (*)(struct io_uring *))
		dlsym(RTLD_NEXT, "io_uring_submit");
	real_uring_peek = (unsigned (*)(struct io_uring *,
					struct io_uring_cqe **, unsigned))
		dlsym(RTLD_NEXT, "io_uring_peek_batch_cqe");
	return real_uring_submit && real_uring_peek;
}

/* ---- environment -------------------------------------------------------- */

static bool g_uring_ok;			/* io_uring usable, O_DIRECT dir made */
static bool g_sqpoll_ok;
static char g_dir[PATH_MAX / 2];
static char g_file[PATH_MAX];		/* exists between create and unlink */
static pid_t g_main_pid;

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rnd(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix64(*s);
}

/* Uniform in [lo, hi]. */
static unsigned rnd_range(uint64_t *s, unsigned lo, unsigned hi)
{
	return lo + (unsigned)(rnd(s) % ((uint64_t)hi - lo + 1));
}

static bool rnd_pct(uint64_t *s, unsigned pct)
{
	return rnd(s) % 100 < pct;
}

static uint64_t soak_seconds(void)
{
	const char *e = getenv("T_SOAK_SECONDS");
	long long v = e ? atoll(e) : DEFAULT_SECONDS;

	return v > 0 ? (uint64_t)v : DEFAULT_SECONDS;
}

static uint64_t soak_seed(void)
{
	const char *e = getenv("T_SOAK_SEED");
	uint64_t s;

	if (e && *e)
		return strtoull(e, NULL, 0);
	s = mix64(mq_clock_real_ns() ^ ((uint64_t)getpid() << 40));
	return s ? s : 1;
}

/* -1: both kinds; 0: ram only; 1: io_uring only (when usable). */
static int soak_lower_choice(void)
{
	const char *e = getenv("T_SOAK_LOWER");

	if (!e || !*e)
		return -1;
	return strcmp(e, "ram") ? 1 : 0;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000,
			       .tv_nsec = (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* ---- a queue_rq wrapper: finds the inner queues, counts busy ---------- */

/*
 * Installed on a device before any queue exists on it: the device's ops
 * pointer is redirected to a copy whose queue_rq records the queue it is
 * called for (a fault device creates its lower queue itself) and counts
 * the driver's answers.  Everything else is the driver's own function,
 * called with the driver's own device.
 */
struct spy {
	struct mq_dev *dev;
	const struct mq_dev_ops *orig;
	struct mq_dev_ops ops;
	_Atomic(struct mq_queue *) q;
	atomic_bool foreign;		/* called for a second queue */
	atomic_ulong accepted, busy, failed;
};

static int spy_queue_rq(struct mq_hw_queue *hctx, struct mq_request *rq,
			bool last)
{
	struct mq_dev *dev = mq_hctx_dev(hctx);
	struct spy *s = mq_container_of((struct mq_dev_ops *)dev->ops,
					struct spy, ops);
	struct mq_queue *q = NULL;
	int ret;

	if (!atomic_compare_exchange_strong(&s->q, &q, hctx->q) &&
	    q != hctx->q)
		atomic_store(&s->foreign, true);
	ret = s->orig->queue_rq(hctx, rq, last);
	if (ret == 0)
		atomic_fetch_add(&s->accepted, 1);
	else if (ret == MQ_DEV_BUSY || ret == -EAGAIN)
		atomic_fetch_add(&s->busy, 1);
	else
		atomic_fetch_add(&s->failed, 1);
	return ret;
}

static void spy_install(struct spy *s, struct mq_dev *dev)
{
	s->dev = dev;
	s->orig = dev->ops;
	s->ops = *dev->ops;
	s->ops.queue_rq = spy_queue_rq;
	dev->ops = &s->ops;
}

/* ---- the round ---------------------------------------------------------- */

struct soak_round;

enum { SIO_FREE = 0, SIO_INFLIGHT, SIO_DONE };

/* One slot of a thread's window: the bio and what it must end with. */
struct sio {
	struct mq_bio bio;
	struct soak_thread *t;
	_Atomic int state;
	int status;			/* seen by end_io */
	int expect;			/* 0 or -EIO */
	unsigned stop;			/* layer failing it; nr_layers: none */
	uint8_t op;
	uint32_t blk, nblk;		/* region-relative 4 KiB blocks */
	uint32_t seq;			/* writes */
	uint64_t nr;			/* issue number in the thread */
	unsigned char *buf;		/* MAX_BYTES, 4 KiB aligned, owned */
	struct sio *next_done;
};

struct soak_thread {
	struct soak_round *r;
	unsigned id;
	pthread_t thr;
	uint64_t rng;
	uint64_t base;			/* first sector of the region */
	uint64_t cursor;		/* sequential stream, blocks */
	struct sio slots[MAX_WINDOW];
	unsigned free_idx[MAX_WINDOW], nr_free;
	uint32_t seq;
	uint32_t *shadow;		/* per sector: seq written, 0 zeroes */
	uint8_t *busy;			/* per block: an op in flight */
	pthread_mutex_t lock;		/* done_list */
	pthread_cond_t cond;
	struct sio *done_list;
	/* Counters, this thread only. */
	uint64_t issued, reaped;
	uint64_t ops[3];		/* read, write, flush */
	uint64_t stop_dir[MAX_LAYERS + 1][MQ_DIR_COUNT];
	uint64_t verified;		/* sectors compared by reads */
};

struct layer {
	struct mq_fault_config cfg;
	struct mq_dev *dev;
	struct spy spy;			/* sees the queue of the layer above */
};

struct soak_round {
	unsigned index;
	uint64_t seed, prng;
	uint64_t end_ns;		/* random I/O stops */
	unsigned ms;
	/* lower device */
	bool uring, sqpoll, fixed;
	unsigned ring, lower_tags;
	struct mq_dev *lower;
	struct spy lower_spy;
	int verify_fd;
	char path[PATH_MAX];
	/* fault layers, [0] under the top queue */
	unsigned nr_layers;
	struct layer layers[MAX_LAYERS];
	/* top queue */
	struct mq_queue *q;
	struct mq_queue_config qcfg;
	/* workload */
	unsigned window, flush_pct, write_pct, fua_pct, task_pct, plug_pct;
	unsigned near_pct, seq_pct, sync_pct;
	unsigned char *bufs;
	struct soak_thread t[NR_THREADS];
	/* controller */
	pthread_t ctl;
	uint64_t ctl_rng;
	atomic_bool stop;
	atomic_int ctl_phase;
	atomic_ulong switches, tunes, freezes;
	/* progress */
	atomic_uint threads_done;
	atomic_ulong completed;
	unsigned long ring0[3];		/* sq_full, ring_busy, cq_overflow */
	pthread_mutex_t err_lock;
	unsigned long nerr;
	char err[1024];
};

struct soak_totals {
	unsigned rounds, uring_rounds;
	uint64_t ios, injected, switches, tunes, freezes, busy;
	uint64_t ring[3];		/* sq_full, ring_busy, cq_overflow */
	uint64_t verified;
};

static void round_error(struct soak_round *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	pthread_mutex_lock(&r->err_lock);
	if (!r->nerr++) {
		n = snprintf(r->err, sizeof(r->err), "round %u seed %#" PRIx64
			     ": ", r->index, r->seed);
		va_start(ap, fmt);
		vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&r->err_lock);
}

static unsigned long round_nerr(struct soak_round *r)
{
	unsigned long n;

	pthread_mutex_lock(&r->err_lock);
	n = r->nerr;
	pthread_mutex_unlock(&r->err_lock);
	return n;
}

/* ---- data pattern ------------------------------------------------------- */

/* A sector written by thread @tid as its write @seq: header, then noise. */
static void pat_fill(uint64_t *w, uint64_t rseed, unsigned tid, uint32_t seq,
		     uint64_t sector)
{
	uint64_t x = mix64(rseed ^ ((uint64_t)tid << 56) ^
			   ((uint64_t)seq << 24) ^ (sector * 0x9e37ull)) | 1;

	w[0] = 0x534f414bull << 32 | (uint64_t)tid << 24;
	w[1] = seq;
	w[2] = sector;
	w[3] = rseed;
	for (unsigned i = 4; i < MQ_SECTOR_SIZE / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		w[i] = x;
	}
}

/* 0 when @data holds what the model says (all zeroes for seq 0). */
static int pat_check(const void *data, uint64_t rseed, unsigned tid,
		     uint32_t seq, uint64_t sector)
{
	uint64_t want[MQ_SECTOR_SIZE / 8];

	if (seq)
		pat_fill(want, rseed, tid, seq, sector);
	else
		memset(want, 0, sizeof(want));
	return memcmp(data, want, sizeof(want));
}

static void pat_describe(const void *data, char *out, size_t len)
{
	const uint64_t *w = data;

	if ((w[0] >> 32) != 0x534f414bull) {
		snprintf(out, len, "no stamp (%#" PRIx64 " %#" PRIx64 ")",
			 w[0], w[1]);
		return;
	}
	snprintf(out, len, "thread %u seq %" PRIu64 " sector %" PRIu64,
		 (unsigned)(w[0] >> 24) & 0xff, w[1], w[2]);
}

/* ---- expected status ---------------------------------------------------- */

/* The documented rule of one fault device (mq_dev.h), restated. */
static bool rule_hits(const struct mq_fault_config *c, unsigned op,
		      uint64_t sector, uint64_t end)
{
	if (!c->eio_sector_end && !c->eio_op_mask)
		return false;
	if (c->eio_op_mask && !(c->eio_op_mask & OPBIT(op)))
		return false;
	if (!c->eio_sector_end)
		return true;
	if (op == MQ_OP_FLUSH)		/* a flush touches no range */
		return false;
	return sector < c->eio_sector_end && end > c->eio_sector_start;
}

/* The first layer (top down) that fails the I/O, or nr_layers. */
static unsigned stop_layer(const struct soak_round *r, unsigned op,
			   uint64_t sector, uint64_t end)
{
	for (unsigned i = 0; i < r->nr_layers; i++)
		if (rule_hits(&r->layers[i].cfg, op, sector, end))
			return i;
	return r->nr_layers;
}

/* ---- completion side ---------------------------------------------------- */

static const char *op_name(unsigned op)
{
	return op == MQ_OP_READ ? "read" : op == MQ_OP_WRITE ? "write"
					 : op == MQ_OP_FLUSH ? "flush" : "?";
}

static void sio_end_io(struct mq_bio *bio)
{
	struct sio *s = bio->private;
	struct soak_thread *t = s->t;
	int want = SIO_INFLIGHT;

	if (!atomic_compare_exchange_strong(&s->state, &want, SIO_DONE)) {
		round_error(t->r, "thread %u slot %td: end_io in state %d "
			    "(completed twice or never issued)", t->id,
			    s - t->slots, want);
		return;
	}
	s->status = bio->status;
	atomic_fetch_add(&t->r->completed, 1);
	pthread_mutex_lock(&t->lock);
	s->next_done = t->done_list;
	t->done_list = s;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void verify_read(struct soak_thread *t, struct sio *s)
{
	struct soak_round *r = t->r;

	for (uint32_t i = 0; i < s->nblk * BLK_SECT; i++) {
		uint64_t rel = (uint64_t)s->blk * BLK_SECT + i;
		const unsigned char *d = s->buf + (size_t)i * MQ_SECTOR_SIZE;
		char got[128];

		if (!pat_check(d, r->seed, t->id, t->shadow[rel], t->base + rel))
			continue;
		pat_describe(d, got, sizeof(got));
		round_error(r, "thread %u read #%" PRIu64 " sector %" PRIu64
			    ": want seq %u, read %s", t->id, s->nr,
			    t->base + rel, t->shadow[rel], got);
		return;
	}
	t->verified += s->nblk * BLK_SECT;
}

/* A failed read never reached a device: the poison must be intact. */
static void verify_untouched(struct soak_thread *t, struct sio *s)
{
	size_t n = (size_t)s->nblk * BLK;

	for (size_t i = 0; i < n; i++)
		if (s->buf[i] != 0xa5) {
			round_error(t->r, "thread %u read #%" PRIu64 " sector %"
				    PRIu64 " failed with %d but its buffer "
				    "changed at byte %zu", t->id, s->nr,
				    s->bio.sector, s->status, i);
			return;
		}
}

static void reap_one(struct soak_thread *t, struct sio *s)
{
	struct soak_round *r = t->r;
	int st = atomic_load(&s->state);

	if (st != SIO_DONE)
		round_error(r, "thread %u slot %td reaped in state %d", t->id,
			    s - t->slots, st);
	if (s->status != s->expect)
		round_error(r, "thread %u %s #%" PRIu64 " sectors %" PRIu64
			    "+%u: status %d, want %d (stop layer %u of %u)",
			    t->id, op_name(s->op), s->nr, s->bio.sector,
			    s->nblk * BLK_SECT, s->status, s->expect, s->stop,
			    r->nr_layers);
	else if (s->op == MQ_OP_READ && !s->status)
		verify_read(t, s);
	else if (s->op == MQ_OP_READ)
		verify_untouched(t, s);
	if (s->op != MQ_OP_FLUSH)
		memset(t->busy + s->blk, 0, s->nblk);
	atomic_store(&s->state, SIO_FREE);
	t->free_idx[t->nr_free++] = (unsigned)(s - t->slots);
	t->reaped++;
}

static void reap(struct soak_thread *t, bool wait)
{
	struct sio *list;

	pthread_mutex_lock(&t->lock);
	while (wait && !t->done_list)
		pthread_cond_wait(&t->cond, &t->lock);
	list = t->done_list;
	t->done_list = NULL;
	pthread_mutex_unlock(&t->lock);
	while (list) {
		struct sio *next = list->next_done;

		reap_one(t, list);
		list = next;
	}
}

/* Wait for one completion; our plugged requests go out first. */
static void reap_wait(struct soak_thread *t)
{
	if (t->issued == t->reaped)
		return;
	mq_flush_plug();
	reap(t, true);
}

/* ---- submission side ---------------------------------------------------- */

static void issue(struct soak_thread *t, unsigned op, uint32_t blk,
		  uint32_t nblk, uint16_t flags, uint8_t prio)
{
	struct soak_round *r = t->r;
	struct sio *s = &t->slots[t->free_idx[--t->nr_free]];
	uint64_t sector = op == MQ_OP_FLUSH ? 0
			  : t->base + (uint64_t)blk * BLK_SECT;
	uint32_t bytes = op == MQ_OP_FLUSH ? 0 : nblk * BLK;

	s->op = (uint8_t)op;
	s->blk = blk;
	s->nblk = op == MQ_OP_FLUSH ? 0 : nblk;
	s->stop = stop_layer(r, op, sector, sector + bytes / MQ_SECTOR_SIZE);
	s->expect = s->stop < r->nr_layers ? -EIO : 0;
	s->status = 1;
	s->nr = t->issued;
	s->seq = 0;
	if (op != MQ_OP_FLUSH)
		memset(t->busy + blk, 1, nblk);
	if (op == MQ_OP_WRITE) {
		s->seq = ++t->seq;
		for (uint32_t i = 0; i < nblk * BLK_SECT; i++) {
			uint64_t rel = (uint64_t)blk * BLK_SECT + i;

			pat_fill((uint64_t *)(s->buf + (size_t)i * MQ_SECTOR_SIZE),
				 r->seed, t->id, s->seq, t->base + rel);
			if (!s->expect)
				t->shadow[rel] = s->seq;
		}
	} else if (op == MQ_OP_READ) {
		memset(s->buf, 0xa5, bytes);
	}
	mq_bio_init(&s->bio, (enum mq_op)op, sector,
		    op == MQ_OP_FLUSH ? NULL : s->buf, bytes, sio_end_io, s);
	s->bio.flags = flags;
	s->bio.prio_class = prio;
	t->ops[op == MQ_OP_READ ? 0 : op == MQ_OP_WRITE ? 1 : 2]++;
	t->stop_dir[s->stop][mq_op_dir(op)]++;
	t->issued++;
	atomic_store(&s->state, SIO_INFLIGHT);
	mq_submit_bio(r->q, &s->bio);
}

static bool range_busy(const struct soak_thread *t, uint32_t blk,
		       uint32_t nblk)
{
	for (uint32_t i = 0; i < nblk; i++)
		if (t->busy[blk + i])
			return true;
	return false;
}

/* A block near an edge of a bad range inside our region, if any. */
static bool pick_near(struct soak_thread *t, uint32_t nblk, uint32_t *blk)
{
	struct soak_round *r = t->r;
	unsigned i = rnd_range(&t->rng, 0, r->nr_layers - 1);
	const struct mq_fault_config *c = &r->layers[i].cfg;
	uint64_t edge;
	int64_t b;

	if (!c->eio_sector_end)
		return false;
	edge = rnd(&t->rng) & 1 ? c->eio_sector_start : c->eio_sector_end;
	if (edge + MAX_BYTES / MQ_SECTOR_SIZE < t->base ||
	    edge >= t->base + REGION_SECT + MAX_BYTES / MQ_SECTOR_SIZE)
		return false;
	b = ((int64_t)edge - (int64_t)t->base) / BLK_SECT;
	b += (int64_t)rnd_range(&t->rng, 0, 2 * MAX_BLKS) - MAX_BLKS;
	if (b < 0)
		b = 0;
	if (b + nblk > (int64_t)REGION_BLKS)
		b = (int64_t)(REGION_BLKS - nblk);
	*blk = (uint32_t)b;
	return true;
}

static uint8_t gen_prio(struct soak_thread *t)
{
	unsigned v = rnd_range(&t->rng, 0, 99);

	if (v < 3)
		return MQ_PRIO_RT;
	if (v < 5)
		return MQ_PRIO_IDLE;
	return v < 25 ? MQ_PRIO_BE : MQ_PRIO_NONE;
}

/* One random op; false when four tries only found busy ranges. */
static bool issue_random(struct soak_thread *t)
{
	struct soak_round *r = t->r;
	uint16_t flags = 0;
	uint8_t prio = gen_prio(t);

	if (rnd_pct(&t->rng, r->sync_pct))
		flags |= MQ_REQ_SYNC;
	if (rnd_pct(&t->rng, r->task_pct))
		flags |= MQ_REQ_COMPLETE_IN_TASK;
	if (rnd_pct(&t->rng, r->flush_pct)) {
		issue(t, MQ_OP_FLUSH, 0, 0, flags & MQ_REQ_COMPLETE_IN_TASK,
		      prio);
		return true;
	}
	for (int tries = 0; tries < 4; tries++) {
		unsigned op = rnd_pct(&t->rng, r->write_pct) ? MQ_OP_WRITE
							      : MQ_OP_READ;
		uint32_t nblk = rnd_range(&t->rng, 0, 3) ? rnd_range(&t->rng, 1, 4)
						     : rnd_range(&t->rng, 1, MAX_BLKS);
		uint32_t blk;

		if (rnd_pct(&t->rng, r->near_pct) && pick_near(t, nblk, &blk))
			;
		else if (rnd_pct(&t->rng, r->seq_pct))
			blk = (uint32_t)t->cursor;
		else
			blk = (uint32_t)(rnd(&t->rng) % REGION_BLKS);
		if (blk + nblk > REGION_BLKS)
			blk = REGION_BLKS - nblk;
		if (range_busy(t, blk, nblk))
			continue;
		t->cursor = (blk + nblk) % REGION_BLKS;
		if (op == MQ_OP_WRITE && rnd_pct(&t->rng, r->fua_pct))
			flags |= MQ_REQ_FUA;
		issue(t, op, blk, nblk, flags, prio);
		return true;
	}
	return false;
}

/* One bio unplugged, or a batch of 1-16 under a plug. */
static void thread_batch(struct soak_thread *t)
{
	struct soak_round *r = t->r;
	bool plugged = rnd_pct(&t->rng, r->plug_pct);
	unsigned n = plugged ? rnd_range(&t->rng, 1, 16) : 1;
	struct mq_plug plug;

	if (plugged)
		mq_start_plug(&plug, rnd_range(&t->rng, 1, 32));
	for (unsigned k = 0; k < n; k++) {
		reap(t, false);
		while (!t->nr_free)
			reap_wait(t);
		if (!issue_random(t)) {
			reap_wait(t);
			break;
		}
	}
	if (plugged)
		mq_finish_plug(&plug);
}

static void thread_wait_all(struct soak_thread *t)
{
	while (t->reaped < t->issued)
		reap_wait(t);
}

static void issue_read_back(struct soak_thread *t, uint32_t blk, uint32_t nblk)
{
	while (!t->nr_free)
		reap_wait(t);
	issue(t, MQ_OP_READ, blk, nblk, MQ_REQ_SYNC, MQ_PRIO_NONE);
	reap(t, false);
}

/*
 * Read the whole region back in 64 KiB pieces; a piece the model says
 * fails is read again block by block, so only blocks that really touch
 * a bad range go unread (the device check at the end covers them).
 */
static void thread_readback(struct soak_thread *t)
{
	struct soak_round *r = t->r;

	for (uint32_t blk = 0; blk < REGION_BLKS; blk += MAX_BLKS) {
		uint64_t sector = t->base + (uint64_t)blk * BLK_SECT;

		if (stop_layer(r, MQ_OP_READ, sector,
			       sector + MAX_BLKS * BLK_SECT) == r->nr_layers) {
			issue_read_back(t, blk, MAX_BLKS);
			continue;
		}
		for (uint32_t b = blk; b < blk + MAX_BLKS; b++)
			issue_read_back(t, b, 1);
	}
}

static void *thread_main(void *p)
{
	struct soak_thread *t = p;
	struct soak_round *r = t->r;

	while (mq_clock_real_ns() < r->end_ns && !round_nerr(r))
		thread_batch(t);
	thread_wait_all(t);
	if (!round_nerr(r)) {
		thread_readback(t);
		thread_wait_all(t);
	}
	atomic_fetch_add(&r->threads_done, 1);
	return NULL;
}

/* ---- controller --------------------------------------------------------- */

static bool top_has_deadline(struct soak_round *r)
{
	return strcmp(mq_queue_elevator_name(r->q), "none") != 0;
}

static int show_int(struct soak_round *r, const char *name, int dflt)
{
	char buf[64];

	if (mq_queue_attr_show(r->q, name, buf, sizeof(buf))) {
		round_error(r, "show %s failed", name);
		return dflt;
	}
	return atoi(buf);
}

/* Store, then read back the same text. */
static void ctl_store(struct soak_round *r, const char *name, int val)
{
	char v[32], shown[64];
	int ret;

	snprintf(v, sizeof(v), "%d", val);
	ret = mq_queue_attr_store(r->q, name, v);
	if (!ret)
		ret = mq_queue_attr_show(r->q, name, shown, sizeof(shown));
	if (ret || strcmp(v, shown))
		round_error(r, "store %s=%s: %d, shows %s", name, v, ret,
			    ret ? "?" : shown);
	atomic_fetch_add(&r->tunes, 1);
}

static void ctl_store_expect(struct soak_round *r, const char *name,
			     const char *val, int want)
{
	int ret = mq_queue_attr_store(r->q, name, val);

	if (ret != want)
		round_error(r, "store %s=%s: %d, want %d", name, val, ret,
			    want);
}

/*
 * Deadlines only walk: a read or write queued under a long expiry is
 * held back until its recomputed start when the expiry drops a lot
 * (dd_started_after), which would only slow the round down.
 */
static void ctl_walk(struct soak_round *r, const char *name, int lo, int hi)
{
	int cur = show_int(r, name, lo);

	cur += rnd_range(&r->ctl_rng, 0, 125) - 25;
	ctl_store(r, name, MQ_MIN(MQ_MAX(cur, lo), hi));
}

static void ctl_tune_deadline(struct soak_round *r)
{
	switch (rnd_range(&r->ctl_rng, 0, 7)) {
	case 0:
		ctl_walk(r, "read_expire", 1, 1000);
		break;
	case 1:
		ctl_walk(r, "write_expire", 1, 5000);
		break;
	case 2:
		ctl_store(r, "fifo_batch", (int)rnd_range(&r->ctl_rng, 1, 64));
		ctl_store_expect(r, "fifo_batch", "-1", -EINVAL);
		break;
	case 3:
		ctl_store(r, "writes_starved",
			  (int)rnd_range(&r->ctl_rng, 0, 5) - 1);
		break;
	case 4:
		ctl_store(r, "front_merges", (int)rnd_range(&r->ctl_rng, 0, 1));
		break;
	case 5:
		ctl_store(r, "async_depth", (int)rnd_range(&r->ctl_rng, 1,
				(unsigned)show_int(r, "nr_requests", 1)));
		ctl_store_expect(r, "async_depth", "0", -EINVAL);
		break;
	case 6:
		ctl_store(r, "prio_aging_expire",
			  (int)rnd_range(&r->ctl_rng, 1, 10000));
		break;
	default:
		ctl_store_expect(r, "no_such_tunable", "1", -ENOENT);
		break;
	}
}

static void ctl_switch(struct soak_round *r)
{
	bool none = !top_has_deadline(r);
	const char *to = none ? (rnd(&r->ctl_rng) & 1 ? "mq-deadline"
						     : "deadline") : "none";
	const char *want = none ? "mq-deadline" : "none";
	int ret = rnd(&r->ctl_rng) & 1 ? mq_queue_switch_elevator(r->q, to)
				       : mq_queue_attr_store(r->q, "scheduler",
							     to);

	if (ret || strcmp(mq_queue_elevator_name(r->q), want))
		round_error(r, "switch to %s: %d, now %s", to, ret,
			    mq_queue_elevator_name(r->q));
	else
		atomic_fetch_add(&r->switches, 1);
}

/*
 * mq-deadline saw every request it inserted complete, and merged none
 * (no_merges).  From the controller (@async) errors go to the round.
 */
static void check_deadline_balance(struct soak_round *r, struct mq_queue *q,
				   unsigned j, bool async)
{
	static const char *const prio[] = { "RT", "BE", "IDLE" };
	uint64_t st[3][4];

	if (!t_dd_stats(q, st))
		return;
	for (int p = 0; p < 3; p++) {
		if (st[p][0] == st[p][3] && !st[p][1])
			continue;
		if (async) {
			round_error(r, "queue %u mq-deadline %s: inserted %"
				    PRIu64 " merged %" PRIu64 " completed %"
				    PRIu64, j, prio[p], st[p][0], st[p][1],
				    st[p][3]);
			return;
		}
		ck_abort_msg("round %u seed %#" PRIx64 ": queue %u mq-deadline "
			     "%s: inserted %" PRIu64 " merged %" PRIu64
			     " completed %" PRIu64, r->index, r->seed, j,
			     prio[p], st[p][0], st[p][1], st[p][3]);
	}
}

/* Frozen: every request of the top queue has completed and let go. */
static void ctl_check_frozen(struct soak_round *r)
{
	struct mq_queue *q = r->q;
	struct mq_queue_stats s;

	mq_queue_freeze(q);
	for (unsigned h = 0; h < q->nr_hw_queues; h++)
		if (t_driver_tags_used(q, h) || t_sched_tags_used(q, h) ||
		    t_nr_dispatch(q, h))
			round_error(r, "frozen: hctx %u holds driver %u sched %u "
				    "dispatch %u", h, t_driver_tags_used(q, h),
				    t_sched_tags_used(q, h), t_nr_dispatch(q, h));
	mq_queue_get_stats(q, -1, &s);
	if (s.in_flight)
		round_error(r, "frozen: in_flight %" PRIu64, s.in_flight);
	check_deadline_balance(r, q, 0, true);
	mq_queue_unfreeze(q);
	atomic_fetch_add(&r->freezes, 1);
}

static void *ctl_main(void *p)
{
	struct soak_round *r = p;

	while (!atomic_load(&r->stop) && !round_nerr(r)) {
		unsigned v;

		sleep_us(rnd_range(&r->ctl_rng, 200, 20000));
		if (atomic_load(&r->stop))
			break;
		v = rnd_range(&r->ctl_rng, 0, 99);
		atomic_store(&r->ctl_phase, 1 + (int)v);
		if (v < 35 || (v >= 55 && !top_has_deadline(r))) {
			ctl_switch(r);
		} else if (v < 45) {
			ctl_store(r, "complete_delay_us",
				  (int)rnd_range(&r->ctl_rng, 0, 2000));
		} else if (v < 50) {
			ctl_check_frozen(r);
		} else if (v < 55) {
			/* Read-only while the queue lives: merges stay off. */
			ctl_store_expect(r, "nomerges", "0", -EACCES);
			ctl_store_expect(r, "queue_depth", "1", -EACCES);
			ctl_store_expect(r, "scheduler", "bfq", -EINVAL);
		} else {
			ctl_tune_deadline(r);
		}
		atomic_store(&r->ctl_phase, 0);
	}
	return NULL;
}

/* ---- building the stack ------------------------------------------------- */

static const char *lower_name(const struct soak_round *r)
{
	return r->uring ? "uring" : "ram";
}

/* The queue on layer @j's device (j = nr_layers: the lower device). */
static struct mq_queue *round_queue(struct soak_round *r, unsigned j)
{
	if (j == 0)
		return r->q;
	if (j == r->nr_layers)
		return atomic_load(&r->lower_spy.q);
	return atomic_load(&r->layers[j].spy.q);
}

static struct spy *round_spy(struct soak_round *r, unsigned j)
{
	return j == r->nr_layers ? &r->lower_spy : &r->layers[j].spy;
}

static void round_params(struct soak_round *r, uint64_t max_ms)
{
	uint64_t *g = &r->prng;
	int lower = soak_lower_choice();
	unsigned ranges;

	r->ms = rnd_range(g, 2000, 5000);	/* MQ_MIN evaluates twice */
	r->ms = (unsigned)MQ_MIN((uint64_t)r->ms, max_ms);
	r->uring = g_uring_ok && (lower < 0 ? rnd(g) & 1 : lower == 1);
	r->ring = rnd_range(g, 4, 16);
	r->lower_tags = rnd_range(g, 16, 64);
	r->sqpoll = g_sqpoll_ok && rnd_pct(g, 25);
	r->fixed = !rnd_pct(g, 25);

	ranges = rnd_range(g, 1, 3);
	for (unsigned i = 0; i < ranges; i++) {
		struct mq_fault_config *c = &r->layers[r->nr_layers++].cfg;
		uint64_t len = rnd_pct(g, 30) ? rnd_range(g, 1, 8)
					      : rnd_range(g, 8, 512);
		unsigned m = rnd_range(g, 0, 99);

		c->eio_sector_start = rnd(g) % (DEV_SECT - len);
		/* Block-aligned edges: I/O that ends or starts right there. */
		if (rnd(g) & 1) {
			c->eio_sector_start &= ~(uint64_t)(BLK_SECT - 1);
			len = MQ_ALIGN_UP(len, (uint64_t)BLK_SECT);
		}
		c->eio_sector_end = c->eio_sector_start + len;
		c->eio_op_mask = m < 45 ? 0 : m < 65 ? OPBIT(MQ_OP_WRITE)
			       : m < 85 ? OPBIT(MQ_OP_READ)
			       : OPBIT(MQ_OP_READ) | OPBIT(MQ_OP_WRITE);
		/* A flush in the mask changes nothing: it touches no range. */
		if (c->eio_op_mask && rnd_pct(g, 20))
			c->eio_op_mask |= OPBIT(MQ_OP_FLUSH);
	}
	/* Sometimes a layer failing every flush, or one that never fires. */
	if (rnd_pct(g, 20) || rnd_pct(g, 10)) {
		unsigned at = rnd_range(g, 0, r->nr_layers);
		bool flush = rnd(g) & 1;

		memmove(&r->layers[at + 1], &r->layers[at],
			(r->nr_layers - at) * sizeof(r->layers[0]));
		memset(&r->layers[at], 0, sizeof(r->layers[at]));
		r->layers[at].cfg.eio_op_mask = flush ? OPBIT(MQ_OP_FLUSH)
						      : OPBIT(MQ_OP_DISCARD);
		r->nr_layers++;
	}
	for (unsigned i = 0; i < r->nr_layers; i++) {
		struct mq_fault_config *c = &r->layers[i].cfg;

		c->latency_ns = rnd_pct(g, 30) ? 0
			      : (uint64_t)rnd_range(g, 1, 100) * 1000;
		c->seed = r->seed + i + 1;	/* non-zero: nothing printed */
		c->queue_depth = rnd_pct(g, 50) ? 0 : rnd_range(g, 8, 64);
	}

	r->qcfg.elevator = rnd(g) & 1 ? "none" : "mq-deadline";
	r->qcfg.queue_depth = rnd_range(g, 4, 64);
	r->qcfg.nr_hw_queues = rnd_range(g, 1, 2);
	r->qcfg.nr_requests = rnd_pct(g, 50) ? 0 : rnd_range(g, 4, 128);
	r->qcfg.no_merges = true;
	r->qcfg.eager_dispatch = rnd_pct(g, 10);
	r->qcfg.single_tag_alloc = rnd_pct(g, 10);
	r->qcfg.async_run = rnd_pct(g, 5);

	r->window = rnd_range(g, 1, MAX_WINDOW);
	r->flush_pct = rnd_range(g, 0, 4);
	r->write_pct = rnd_range(g, 30, 70);
	r->fua_pct = rnd_range(g, 0, 3);
	r->task_pct = rnd_pct(g, 50) ? 0 : rnd_range(g, 1, 40);
	r->plug_pct = rnd_range(g, 0, 60);
	r->near_pct = rnd_range(g, 5, 40);
	r->seq_pct = rnd_range(g, 0, 50);
	r->sync_pct = rnd_range(g, 0, 100);
}

static void open_lower(struct soak_round *r)
{
	if (r->uring) {
		struct mq_uring_config uc = {
			.queue_depth = r->ring, .sqpoll = r->sqpoll,
			.no_fixed_files = !r->fixed,
		};
		int fd, err = 0;

		snprintf(r->path, sizeof(r->path), "%s/soak.%d.%u", g_dir,
			 (int)getpid(), r->index);
		snprintf(g_file, sizeof(g_file), "%s", r->path);
		fd = open(r->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			g_file[0] = '\0';
		ck_assert_msg(fd >= 0, "create %s: %s", r->path, strerror(errno));
		ck_assert_msg(ftruncate(fd, (off_t)DEV_BYTES) == 0,
			      "ftruncate %s: %s", r->path, strerror(errno));
		r->verify_fd = fd;
		r->lower = t_dev_uring(r->path, &uc, &err);
		/* Both descriptors keep the file: nothing to leak on a crash. */
		unlink(r->path);
		g_file[0] = '\0';
		ck_assert_msg(r->lower != NULL, "round %u seed %#" PRIx64
			      ": mq_uring_open: %s", r->index, r->seed,
			      strerror(-err));
		/* The fault device's queue takes the geometry's depth. */
		r->lower->geo.queue_depth = r->lower_tags;
	} else {
		r->verify_fd = -1;
		r->lower = t_dev_ram(DEV_BYTES, r->lower_tags);
		ck_assert_msg(r->lower != NULL, "mq_ram_open");
	}
	spy_install(&r->lower_spy, r->lower);
}

/* Bottom up: each fault device over the one below, wrapped before use. */
static void open_stack(struct soak_round *r)
{
	struct mq_dev *below = r->lower;

	for (unsigned i = r->nr_layers; i-- > 0;) {
		struct layer *l = &r->layers[i];

		l->dev = t_dev_fault(below, &l->cfg);
		ck_assert_msg(l->dev != NULL, "round %u seed %#" PRIx64
			      ": mq_fault_open layer %u", r->index, r->seed, i);
		if (i)
			spy_install(&l->spy, l->dev);
		below = l->dev;
	}
	r->q = t_queue_new(r->layers[0].dev, &r->qcfg);
	ck_assert_msg(r->q != NULL, "round %u seed %#" PRIx64
		      ": mq_queue_create", r->index, r->seed);
}

static struct soak_round *round_new(unsigned index, uint64_t seed,
				    uint64_t max_ms)
{
	struct soak_round *r = calloc(1, sizeof(*r));
	void *bufs = NULL;

	ck_assert_ptr_nonnull(r);
	r->index = index;
	r->seed = seed;
	r->prng = seed;
	r->ctl_rng = seed ^ 0xc0c0c0c0ull;
	pthread_mutex_init(&r->err_lock, NULL);
	round_params(r, max_ms);
	ck_assert_int_eq(posix_memalign(&bufs, BLK, (size_t)NR_THREADS *
					MAX_WINDOW * MAX_BYTES), 0);
	r->bufs = bufs;
	for (unsigned i = 0; i < NR_THREADS; i++) {
		struct soak_thread *t = &r->t[i];

		t->r = r;
		t->id = i;
		t->rng = mix64(seed + 0x1000 * (i + 1));
		t->base = (uint64_t)i * REGION_SECT;
		t->shadow = calloc(REGION_SECT, sizeof(*t->shadow));
		t->busy = calloc(REGION_BLKS, 1);
		ck_assert(t->shadow && t->busy);
		for (unsigned k = 0; k < MAX_WINDOW; k++) {
			t->slots[k].t = t;
			t->slots[k].buf = r->bufs +
				((size_t)i * MAX_WINDOW + k) * MAX_BYTES;
		}
		for (unsigned k = 0; k < r->window; k++)
			t->free_idx[t->nr_free++] = r->window - 1 - k;
		pthread_mutex_init(&t->lock, NULL);
		pthread_cond_init(&t->cond, NULL);
	}
	open_lower(r);
	open_stack(r);
	return r;
}

static void round_free(struct soak_round *r)
{
	for (unsigned i = 0; i < NR_THREADS; i++) {
		free(r->t[i].shadow);
		free(r->t[i].busy);
		pthread_mutex_destroy(&r->t[i].lock);
		pthread_cond_destroy(&r->t[i].cond);
	}
	free(r->bufs);
	pthread_mutex_destroy(&r->err_lock);
	free(r);
}

/* ---- watchdog ----------------------------------------------------------- */

static void dump_queue(const char *what, struct mq_queue *q)
{
	struct mq_queue_stats s;

	if (!q) {
		fprintf(stderr, "  %s: (never used)\n", what);
		return;
	}
	mq_queue_get_stats(q, -1, &s);
	fprintf(stderr, "  %s %s: frozen %d quiesced %d in_flight %" PRIu64
		" disp %" PRIu64 "/%" PRIu64 " ios %" PRIu64 "/%" PRIu64
		" requeues %" PRIu64 " task_pending %ld\n", what,
		mq_queue_elevator_name(q), atomic_load(&q->frozen),
		atomic_load(&q->quiesced), s.in_flight, s.dispatched[0],
		s.dispatched[1], s.ios[0], s.ios[1], s.requeues,
		atomic_load(&q->task_pending));
	for (unsigned h = 0; h < q->nr_hw_queues; h++) {
		struct mq_hw_queue *hc = q->hctxs[h];

		fprintf(stderr, "    hctx %u: run_state %d restart %d "
			"nr_dispatch %u tags %u sched_tags %u busy %u\n", h,
			atomic_load(&hc->run_state),
			atomic_load(&hc->sched_restart),
			atomic_load(&hc->nr_dispatch), t_driver_tags_used(q, h),
			t_sched_tags_used(q, h), atomic_load(&hc->dispatch_busy));
	}
	for (unsigned i = 0; i < MQ_NR_CTX; i++)
		if (atomic_load(&q->ctxs[i].usage))
			fprintf(stderr, "    ctx %u: usage %ld\n", i,
				atomic_load(&q->ctxs[i].usage));
}

/* Racy snapshot for a human: the round is stuck anyway. */
static void dump_round(struct soak_round *r)
{
	char what[32];

	fprintf(stderr, "STALL round %u seed %#" PRIx64 " lower %s ring %u "
		"ltags %u layers %u: completed %lu ctl_phase %d switches %lu\n",
		r->index, r->seed, lower_name(r), r->ring, r->lower_tags,
		r->nr_layers, atomic_load(&r->completed),
		atomic_load(&r->ctl_phase), atomic_load(&r->switches));
	for (unsigned j = 0; j <= r->nr_layers; j++) {
		snprintf(what, sizeof(what), "queue %u", j);
		dump_queue(what, round_queue(r, j));
	}
	for (unsigned i = 0; i < r->nr_layers; i++) {
		struct mq_fault_stats fs;

		mq_fault_get_stats(r->layers[i].dev, &fs);
		fprintf(stderr, "  fault %u: injected %" PRIu64 " forwarded %"
			PRIu64 "\n", i, fs.injected, fs.forwarded);
	}
	for (unsigned i = 0; i < NR_THREADS; i++)
		fprintf(stderr, "  thread %u: issued %" PRIu64 " reaped %"
			PRIu64 "\n", i, r->t[i].issued, r->t[i].reaped);
}

static void round_run(struct soak_round *r)
{
	uint64_t last = 0, since = mq_clock_real_ns();

	r->ring0[0] = atomic_load(&g_sq_full);
	r->ring0[1] = atomic_load(&g_ring_busy);
	r->ring0[2] = atomic_load(&g_cq_overflow);
	r->end_ns = mq_clock_real_ns() + (uint64_t)r->ms * 1000000ull;
	for (unsigned i = 0; i < NR_THREADS; i++)
		ck_assert_int_eq(pthread_create(&r->t[i].thr, NULL,
						thread_main, &r->t[i]), 0);
	ck_assert_int_eq(pthread_create(&r->ctl, NULL, ctl_main, r), 0);
	while (atomic_load(&r->threads_done) < NR_THREADS) {
		uint64_t now = mq_clock_real_ns(), c;

		sleep_us(20000);
		c = atomic_load(&r->completed);
		if (c != last) {
			last = c;
			since = now;
		} else if (now - since > STALL_NS) {
			dump_round(r);
			ck_abort_msg("round %u seed %#" PRIx64 ": no completion "
				     "for %llu s (deadlock or lost wakeup), see "
				     "stderr", r->index, r->seed,
				     STALL_NS / SEC_NS);
		}
	}
	for (unsigned i = 0; i < NR_THREADS; i++)
		pthread_join(r->t[i].thr, NULL);
	atomic_store(&r->stop, true);
	pthread_join(r->ctl, NULL);
}

/* ---- end of round: balance ---------------------------------------------- */

static void check_threads(struct soak_round *r)
{
	ck_assert_msg(round_nerr(r) == 0, "%lu errors, first: %s",
		      round_nerr(r), r->err);
	for (unsigned i = 0; i < NR_THREADS; i++) {
		struct soak_thread *t = &r->t[i];

		ck_assert_msg(t->issued == t->reaped && t->nr_free == r->window,
			      "round %u seed %#" PRIx64 ": thread %u issued %"
			      PRIu64 " reaped %" PRIu64 " free %u of %u",
			      r->index, r->seed, i, t->issued, t->reaped,
			      t->nr_free, r->window);
		for (unsigned k = 0; k < MAX_WINDOW; k++)
			ck_assert_msg(atomic_load(&t->slots[k].state) == SIO_FREE,
				      "round %u seed %#" PRIx64 ": thread %u "
				      "slot %u state %d", r->index, r->seed, i,
				      k, atomic_load(&t->slots[k].state));
	}
}

/* Bios of direction @d stopped at layer >= @from and < @to. */
static uint64_t count_stops(struct soak_round *r, unsigned from, unsigned to,
			    int d)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < NR_THREADS; i++)
		for (unsigned s = from; s < to; s++)
			n += r->t[i].stop_dir[s][d];
	return n;
}

#define round_assert(r, cond, fmt, ...)					\
	ck_assert_msg((cond), "round %u seed %#" PRIx64 ": " fmt,	\
		      (r)->index, (r)->seed, ##__VA_ARGS__)

/*
 * Queue @j (on layer j's device) saw every bio that no layer above j
 * failed; it failed those stopped at j or below, and holds nothing now.
 */
static void check_queue(struct soak_round *r, unsigned j)
{
	struct mq_queue *q = round_queue(r, j);
	struct spy *sp = j ? round_spy(r, j) : NULL;
	uint64_t want[MQ_DIR_COUNT], errs = 0;
	struct mq_queue_stats s;

	for (int d = 0; d < MQ_DIR_COUNT; d++) {
		want[d] = count_stops(r, j, r->nr_layers + 1, d);
		errs += count_stops(r, j, r->nr_layers, d);
	}
	if (!q) {
		round_assert(r, !want[0] && !want[1], "queue %u never ran, "
			     "want %" PRIu64 " reads %" PRIu64 " writes", j,
			     want[0], want[1]);
		return;
	}
	mq_queue_drain(q);
	round_assert(r, t_wait_until(t_queue_idle(q)),
		     "queue %u runs never settled", j);
	ck_assert_int_eq(mq_queue_get_stats(q, -1, &s), 0);
	round_assert(r, s.in_flight == 0, "queue %u in_flight %" PRIu64, j,
		     s.in_flight);
	for (int d = 0; d < MQ_DIR_COUNT; d++) {
		round_assert(r, s.bios[d] == want[d] && s.ios[d] == want[d] &&
			     s.dispatched[d] == want[d],
			     "queue %u dir %d: bios %" PRIu64 " ios %" PRIu64
			     " dispatched %" PRIu64 ", want %" PRIu64, j, d,
			     s.bios[d], s.ios[d], s.dispatched[d], want[d]);
		round_assert(r, s.merges[d] == 0, "queue %u dir %d merges %"
			     PRIu64 " with no_merges", j, d, s.merges[d]);
	}
	round_assert(r, s.errors == errs, "queue %u errors %" PRIu64
		     ", want %" PRIu64, j, s.errors, errs);
	for (unsigned h = 0; h < q->nr_hw_queues; h++) {
		struct mq_hw_queue *hc = q->hctxs[h];

		round_assert(r, !t_driver_tags_used(q, h) &&
			     !t_sched_tags_used(q, h) && !t_nr_dispatch(q, h) &&
			     mq_list_empty(&hc->dispatch),
			     "queue %u hctx %u holds driver %u sched %u "
			     "dispatch %u", j, h, t_driver_tags_used(q, h),
			     t_sched_tags_used(q, h), t_nr_dispatch(q, h));
		round_assert(r, (hc->sched_tags != NULL) == (hc->elevator != NULL) &&
			     (hc->elevator != NULL) == (q->elv_type != NULL),
			     "queue %u hctx %u: sched_tags %d instance %d type %d",
			     j, h, hc->sched_tags != NULL, hc->elevator != NULL,
			     q->elv_type != NULL);
	}
	for (unsigned i = 0; i < MQ_NR_CTX; i++)
		round_assert(r, atomic_load(&q->ctxs[i].usage) == 0,
			     "queue %u ctx %u usage %ld", j, i,
			     atomic_load(&q->ctxs[i].usage));
	round_assert(r, atomic_load(&q->task_pending) == 0,
		     "queue %u task_pending %ld", j,
		     atomic_load(&q->task_pending));
	check_deadline_balance(r, q, j, false);
	if (sp) {
		round_assert(r, !atomic_load(&sp->foreign),
			     "layer %u device served two queues", j);
		round_assert(r, atomic_load(&sp->accepted) == want[0] + want[1] &&
			     !atomic_load(&sp->failed),
			     "queue %u: driver accepted %lu failed %lu, want %"
			     PRIu64, j, atomic_load(&sp->accepted),
			     atomic_load(&sp->failed), want[0] + want[1]);
	}
}

/* Layer i injected exactly the bios attributed to it, forwarded the rest. */
static uint64_t check_faults(struct soak_round *r)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < r->nr_layers; i++) {
		struct mq_fault_stats fs;
		uint64_t inj = count_stops(r, i, i + 1, 0) +
			       count_stops(r, i, i + 1, 1);
		uint64_t fwd = count_stops(r, i + 1, r->nr_layers + 1, 0) +
			       count_stops(r, i + 1, r->nr_layers + 1, 1);

		mq_fault_get_stats(r->layers[i].dev, &fs);
		round_assert(r, fs.injected == inj, "fault layer %u injected %"
			     PRIu64 ", want %" PRIu64, i, fs.injected, inj);
		round_assert(r, fs.forwarded == fwd, "fault layer %u forwarded %"
			     PRIu64 ", want %" PRIu64, i, fs.forwarded, fwd);
		round_assert(r, !fs.cached && !fs.powered_off &&
			     !fs.dirty_sectors, "fault layer %u: cached %"
			     PRIu64 " powered_off %" PRIu64 " dirty %" PRIu64,
			     i, fs.cached, fs.powered_off, fs.dirty_sectors);
		total += fs.injected;
	}
	return total;
}

/* The lower device holds exactly the model: @data is the whole device. */
static void check_content(struct soak_round *r, const unsigned char *data)
{
	for (unsigned i = 0; i < NR_THREADS; i++) {
		struct soak_thread *t = &r->t[i];

		for (uint64_t rel = 0; rel < REGION_SECT; rel++) {
			uint64_t sector = t->base + rel;
			const unsigned char *d = data + sector * MQ_SECTOR_SIZE;
			char got[128];

			if (!pat_check(d, r->seed, t->id, t->shadow[rel], sector))
				continue;
			pat_describe(d, got, sizeof(got));
			ck_abort_msg("round %u seed %#" PRIx64 ": %s sector %"
				     PRIu64 " (thread %u) holds %s, want seq %u%s",
				     r->index, r->seed, lower_name(r), sector, i,
				     got, t->shadow[rel],
				     stop_layer(r, MQ_OP_WRITE, sector, sector + 1)
				     < r->nr_layers ? " (in a bad range)" : "");
		}
	}
}

static void check_file(struct soak_round *r)
{
	unsigned char *data = malloc(DEV_BYTES);
	size_t done = 0;

	ck_assert_ptr_nonnull(data);
	while (done < DEV_BYTES) {
		ssize_t n = pread(r->verify_fd, data + done, DEV_BYTES - done,
				  (off_t)done);

		ck_assert_msg(n > 0, "pread %s: %s", r->path,
			      n ? strerror(errno) : "end of file");
		done += (size_t)n;
	}
	check_content(r, data);
	free(data);
}

/* Queues first, then the fault devices top down, then the lower device. */
static void round_teardown(struct soak_round *r)
{
	mq_queue_destroy(r->q);
	r->q = NULL;
	for (unsigned i = 0; i < r->nr_layers; i++)
		mq_dev_close(r->layers[i].dev);
	if (!r->uring)
		check_content(r, mq_ram_data(r->lower));
	mq_dev_close(r->lower);
	if (r->uring) {
		check_file(r);
		close(r->verify_fd);
	}
}

static void describe_layers(const struct soak_round *r, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < r->nr_layers && off < len; i++) {
		const struct mq_fault_config *c = &r->layers[i].cfg;

		if (c->eio_sector_end)
			off += (size_t)snprintf(out + off, len - off,
				"%s[%" PRIu64 ",%" PRIu64 ")m%x/%" PRIu64 "us",
				i ? " " : "", c->eio_sector_start,
				c->eio_sector_end, c->eio_op_mask,
				c->latency_ns / 1000);
		else
			off += (size_t)snprintf(out + off, len - off,
				"%sm%x/%" PRIu64 "us", i ? " " : "",
				c->eio_op_mask, c->latency_ns / 1000);
	}
}

static void round_one(unsigned index, uint64_t seed, uint64_t max_ms,
		      struct soak_totals *tot)
{
	struct soak_round *r = round_new(index, seed, max_ms);
	uint64_t ios = 0, ops[3] = { 0 }, injected, busy, verified = 0;
	unsigned long ring[3];
	struct mq_queue_stats ls = { 0 };
	char layers[256];
	uint64_t t0 = mq_clock_real_ns();

	round_run(r);
	check_threads(r);
	for (unsigned j = 0; j <= r->nr_layers; j++)
		check_queue(r, j);
	injected = check_faults(r);
	if (round_queue(r, r->nr_layers))
		mq_queue_get_stats(round_queue(r, r->nr_layers), -1, &ls);
	busy = atomic_load(&r->lower_spy.busy);
	ring[0] = atomic_load(&g_sq_full) - r->ring0[0];
	ring[1] = atomic_load(&g_ring_busy) - r->ring0[1];
	ring[2] = atomic_load(&g_cq_overflow) - r->ring0[2];
	for (unsigned i = 0; i < NR_THREADS; i++) {
		ios += r->t[i].issued;
		verified += r->t[i].verified;
		for (int k = 0; k < 3; k++)
			ops[k] += r->t[i].ops[k];
	}
	describe_layers(r, layers, sizeof(layers));
	round_teardown(r);

	printf("soak round %u seed %#" PRIx64 ": %s ring %u%s ltags %u | "
	       "faults %s | top %s tags %u hwq %u window %u | %.1f s: %" PRIu64
	       " I/Os (r %" PRIu64 " w %" PRIu64 " f %" PRIu64 "), injected %"
	       PRIu64 ", driver busy %" PRIu64 " requeues %" PRIu64 ", ring: "
	       "sq-full %lu ebusy %lu cq-overflow %lu, switches %lu tunes %lu "
	       "freezes %lu: ok\n", r->index, r->seed,
	       lower_name(r), r->uring ? r->ring : 0,
	       r->uring && r->sqpoll ? " sqpoll" : "", r->lower_tags, layers,
	       r->qcfg.elevator, r->qcfg.queue_depth, r->qcfg.nr_hw_queues,
	       r->window, (double)(mq_clock_real_ns() - t0) / 1e9, ios, ops[0],
	       ops[1], ops[2], injected, busy, ls.requeues, ring[0], ring[1],
	       ring[2],
	       atomic_load(&r->switches), atomic_load(&r->tunes),
	       atomic_load(&r->freezes));
	fflush(stdout);

	tot->rounds++;
	tot->uring_rounds += r->uring;
	tot->ios += ios;
	tot->injected += injected;
	tot->switches += atomic_load(&r->switches);
	tot->tunes += atomic_load(&r->tunes);
	tot->freezes += atomic_load(&r->freezes);
	tot->busy += busy;
	for (int k = 0; k < 3; k++)
		tot->ring[k] += ring[k];
	tot->verified += verified;
	round_free(r);
}

/* ---- the test ----------------------------------------------------------- */

START_TEST(test_soak)
{
	uint64_t seconds = soak_seconds(), master = soak_seed();
	uint64_t start = mq_clock_real_ns(), deadline = start + seconds * SEC_NS;
	struct soak_totals tot = { 0 };

	int lower = soak_lower_choice();

	printf("soak: seed %#" PRIx64 " (T_SOAK_SEED), %" PRIu64 " s, lower "
	       "%s%s\n", master, seconds, !g_uring_ok || !lower ? "ram only"
	       : lower > 0 ? "io_uring only" : "io_uring and ram",
	       g_uring_ok && lower && !g_sqpoll_ok ? " (no SQPOLL)" : "");
	fflush(stdout);
	for (unsigned i = 0; i == 0 || mq_clock_real_ns() < deadline; i++) {
		uint64_t now = mq_clock_real_ns();
		uint64_t left_ms = now < deadline ? (deadline - now) / 1000000 : 0;

		round_one(i, i ? mix64(master + i) : master,
			  MQ_MAX(left_ms, (uint64_t)500), &tot);
	}
	printf("soak: seed %#" PRIx64 ": %u rounds (%u io_uring) in %.1f s, %"
	       PRIu64 " I/Os, %" PRIu64 " injected EIO, %" PRIu64 " elevator "
	       "switches, %" PRIu64 " tunes, %" PRIu64 " freezes, %" PRIu64
	       " driver busy, ring: %" PRIu64 " sq-full %" PRIu64 " ebusy %"
	       PRIu64 " cq-overflow, %" PRIu64 " sectors verified by reads: "
	       "PASS\n", master, tot.rounds,
	       tot.uring_rounds, (double)(mq_clock_real_ns() - start) / 1e9,
	       tot.ios, tot.injected, tot.switches, tot.tunes, tot.freezes,
	       tot.busy, tot.ring[0], tot.ring[1], tot.ring[2], tot.verified);
	fflush(stdout);
	ck_assert_msg(tot.switches > 0, "seed %#" PRIx64 ": no elevator switch",
		      master);
}
END_TEST

/* ---- set-up ------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	remove(path);
	return 0;
}

/* In the main process only: forked test children run atexit too. */
static void cleanup(void)
{
	if (getpid() != g_main_pid || !g_dir[0])
		return;
	nftw(g_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	g_dir[0] = '\0';
}

/*
 * Interrupted (a long run stopped by hand): remove what exists, then die
 * of the signal.  Only async-signal-safe calls; the directory is empty
 * except for a moment around each round's file creation.
 */
static void on_signal(int sig)
{
	if (g_file[0])
		unlink(g_file);
	if (g_dir[0])
		rmdir(g_dir);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

	for (size_t i = 0; i < MQ_ARRAY_SIZE(sigs); i++)
		signal(sigs[i], on_signal);
	/* Output into a closed pipe must not skip the clean-up. */
	signal(SIGPIPE, SIG_IGN);
}

/* A temp directory whose file system takes O_DIRECT; false otherwise. */
static bool make_dir(void)
{
	const char *base = getenv("TMPDIR");
	char probe[PATH_MAX];
	int fd;

	if (!base || !*base)
		base = "/var/tmp";
	snprintf(g_dir, sizeof(g_dir), "%s/mqfs-test-soak.XXXXXX", base);
	if (!mkdtemp(g_dir)) {
		fprintf(stderr, "test_soak: mkdtemp %s: %s: ram only\n", g_dir,
			strerror(errno));
		g_dir[0] = '\0';
		return false;
	}
	snprintf(probe, sizeof(probe), "%s/odirect", g_dir);
	fd = open(probe, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0)
		fprintf(stderr, "test_soak: %s does not take O_DIRECT (%s): "
			"ram only; set TMPDIR to a disk file system\n", base,
			strerror(errno));
	else
		close(fd);
	unlink(probe);
	return fd >= 0;
}

static bool sqpoll_works(void)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_SQPOLL,
				     .sq_thread_idle = 10 };

	if (io_uring_queue_init_params(4, &ring, &p))
		return false;
	io_uring_queue_exit(&ring);
	return true;
}

static Suite *soak_suite(void)
{
	Suite *s = suite_create("soak");
	TCase *c = t_tcase(s, "soak", (double)soak_seconds() + 120);

	tcase_add_test(c, test_soak);
	return s;
}

int main(void)
{
	int failed;

	g_main_pid = getpid();
	if (!uring_hooks_init()) {
		fprintf(stderr, "test_soak: liburing symbols not found\n");
		return 99;
	}
	if (mq_uring_probe() == 0) {
		g_uring_ok = make_dir();
		g_sqpoll_ok = g_uring_ok && sqpoll_works();
		atexit(cleanup);
		catch_signals();
	} else {
		fprintf(stderr, "test_soak: io_uring unusable: ram only\n");
	}
	failed = t_run(soak_suite()) != EXIT_SUCCESS;
	cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
