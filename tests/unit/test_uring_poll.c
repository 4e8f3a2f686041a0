/* SPDX-License-Identifier: MIT */
/*
 * test_uring_poll.c - Check unit tests for polled queues: the io_uring
 * driver with caller_reap (no reaper thread) and mq_queue_poll(), driven
 * through the whole block layer.
 *
 * Tested: data patterns written and read back (through the driver and
 * with pread) by one thread, by four threads on four hardware queues
 * (each polling its own: every end_io runs in the thread that submitted
 * it) and by four threads sharing one (they reap each other's), with
 * mq-deadline and none, plugged and unplugged, with and without fixed
 * files; the figures (completions all reaped by polls, no reaper context
 * switches); min_complete: 0 never blocks, N returns at least N while N
 * are in flight and fewer - without blocking - once the queue runs dry,
 * an idle queue returns 0 at once, the caller's plug is flushed first;
 * 200 bios through a ring of 4 (completion ring 8) on queue depth 32, one
 * plugged submitter (tag waits poll) and four unplugged ones sharing the
 * queue: no bio lost or ended twice; end_io callbacks that submit more
 * I/O than there are tags (polls nested in the polling thread); drain,
 * elevator switch (freeze) and queue teardown with bios nobody polled;
 * an SQPOLL ring; -EOPNOTSUPP from mq_queue_poll on a reaper-mode ring,
 * the ram and the null device, and a fault device refused over a polled
 * one; and, when we are root with loop devices, the same data through a
 * loop device made with losetup --direct-io=on.
 *
 * Helpers (temp directory, patterns, bio pool, loop fixture, the TSan
 * model of io_uring ordering) are shared with the other io_uring
 * programs in t_uring.h.
 * Exits 77 only when mq_uring_probe() says io_uring is unusable here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>

static const char *const g_prog = "test_uring_poll";

#include "t_uring.h"
#include "t_main.h"
#include "mqfs/dev/fault.h"
#include "mqfs/dev/null.h"
#include "mqfs/dev/ram.h"
#include "mqfs/dev/uring.h"
#include "t_dev.h"

/* ---- polling helpers -------------------------------------------------- */

static bool zero_check(const unsigned char *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/*
 * The pool this thread waits for: an end_io of another pool's bio in
 * this thread was reaped for a thread sharing the hardware queue.
 */
static _Thread_local struct ur_pool *urp_mine;
static atomic_uint urp_foreign;

static void urp_end_io(struct mq_bio *bio)
{
	if (bio->private != urp_mine)
		atomic_fetch_add(&urp_foreign, 1);
	ur_end_io(bio);
}

/* A pool whose bios end in urp_end_io, owned by the calling thread. */
static bool urp_pool_init(struct ur_pool *p, unsigned nr)
{
	if (!ur_pool_init(p, nr))
		return false;
	p->end_io = urp_end_io;
	urp_mine = p;
	return true;
}

/*
 * Poll until every submitted bio of @p ended: 0, -ETIMEDOUT after
 * T_WAIT_NS, or mq_queue_poll's error.
 */
static int urp_wait(struct mq_queue *q, struct ur_pool *p)
{
	uint64_t end = mq_clock_real_ns() + T_WAIT_NS;

	while (atomic_load(&p->ended) < p->submitted) {
		int n = mq_queue_poll(q, 1);

		if (n < 0)
			return n;
		if (mq_clock_real_ns() > end)
			return -ETIMEDOUT;
	}
	return 0;
}

static void urp_wait_check(struct mq_queue *q, struct ur_pool *p,
			   const char *what)
{
	int ret = urp_wait(q, p);

	t_check(ret == 0, "%s: %s; %u of %u ended", what, strerror(-ret),
		atomic_load(&p->ended), p->submitted);
	ur_pool_check(p, what);
}

static struct mq_dev *urp_open(const char *path, struct mq_uring_config uc)
{
	struct mq_dev *dev;

	uc.caller_reap = true;
	dev = ur_open(path, &uc);
	t_check(dev->polled, "caller_reap device not polled");
	return dev;
}

/* [off, off + len) in @bs-byte bios, plugged (batches of 32) or not. */
static void urp_rw_range(struct mq_queue *q, enum mq_op op, uint64_t off,
			 uint32_t len, uint32_t bs, unsigned char *buf,
			 bool plug, const char *what)
{
	struct ur_pool p;

	t_check(urp_pool_init(&p, len / bs), "pool");
	ur_submit_range(q, &p, op, off, len, bs, buf, plug, 0);
	urp_wait_check(q, &p, what);
	ur_pool_free(&p);
}

/* Everything completed went through the polls; no reaper ever ran. */
static void urp_check_stats(struct mq_queue *q)
{
	struct mq_queue_stats s = t_stats(q, -1);

	t_check_u64(s.reaped, s.ios[MQ_DIR_READ] + s.ios[MQ_DIR_WRITE],
		    "requests reaped by polls");
	t_check(s.reaper_runs > 0 && s.reaper_runs <= s.reaped,
		"reap runs %" PRIu64 " for %" PRIu64, s.reaper_runs, s.reaped);
	t_check_u64(s.reaper_cs, 0, "reaper context switches");
	t_check_u64(s.errors, 0, "errors");
}

/* ---- data patterns ---------------------------------------------------- */

#define PP_THREADS	4
#define PP_BIOS		128
#define PP_REGION	(2 * MiB)	/* per thread, > PP_BIOS * 16 KiB */

struct pp_thread {
	pthread_t thr;
	struct mq_queue *q;
	unsigned idx;
	bool plug;
	uint64_t base, seed, bytes;
	unsigned char *wbuf, *rbuf;
	int hctx;			/* where this thread's requests went */
	char err[256];
};

/* 4..16 KiB: plugged runs merge into multi-bio requests. */
static uint32_t pp_len(unsigned idx, unsigned k)
{
	return (4u + 4u * ((idx * 7u + k * 3u) % 4u)) * KiB;
}

static bool pp_pass(struct pp_thread *t, enum mq_op op, unsigned char *buf)
{
	const char *what = op == MQ_OP_READ ? "read" : "write";
	uint64_t off = t->base;
	struct ur_pool p;
	unsigned k = 0;
	int ret;

	if (!urp_pool_init(&p, PP_BIOS)) {
		snprintf(t->err, sizeof(t->err), "pool allocation");
		return false;
	}
	while (k < PP_BIOS) {
		struct mq_plug pl;

		if (t->plug)
			mq_start_plug(&pl, 32);
		for (unsigned j = 0; j < (t->plug ? 32u : 1u) && k < PP_BIOS;
		     j++, k++) {
			uint32_t len = pp_len(t->idx, k);

			ur_submit(t->q, &p, op, off, len, buf + (off - t->base),
				  0);
			off += len;
		}
		if (t->plug)
			mq_finish_plug(&pl);
	}
	t->hctx = (int)mq_ctx_current(t->q)->hctx->index;
	t->bytes = off - t->base;
	ret = urp_wait(t->q, &p);
	if (ret) {
		snprintf(t->err, sizeof(t->err), "%s: %s, %u of %u ended", what,
			 strerror(-ret), atomic_load(&p.ended), p.submitted);
		return false;	/* the pool leaks: the test fails anyway */
	}
	for (unsigned i = 0; i < p.submitted; i++)
		if (atomic_load(&p.done[i]) != 1 || p.bios[i].status) {
			snprintf(t->err, sizeof(t->err),
				 "%s bio %u: ended %u times, status %d", what,
				 i, atomic_load(&p.done[i]), p.bios[i].status);
			ur_pool_free(&p);
			return false;
		}
	ur_pool_free(&p);
	return true;
}

static void *pp_main(void *arg)
{
	struct pp_thread *t = arg;

	pat_fill(t->wbuf, PP_REGION, t->base, t->seed);
	memset(t->rbuf, 0x5a, PP_REGION);
	if (!pp_pass(t, MQ_OP_WRITE, t->wbuf) ||
	    !pp_pass(t, MQ_OP_READ, t->rbuf))
		return NULL;
	if (memcmp(t->wbuf, t->rbuf, t->bytes))
		snprintf(t->err, sizeof(t->err), "read back differs at %ld",
			 pat_diff(t->rbuf, t->bytes, t->base, t->seed));
	return NULL;
}

/*
 * Loop index: bit 0 elevator; bit 1 plugged; bit 2 no fixed files;
 * (index >> 3): 0 one thread, 1 four threads on four hardware queues,
 * 2 four threads sharing one.
 */
START_TEST(test_poll_patterns)
{
	unsigned mode = (unsigned)_i >> 3;
	unsigned nthreads = mode ? PP_THREADS : 1;
	unsigned nr_hw = mode == 1 ? PP_THREADS : 1;
	struct mq_uring_config uc = { .no_fixed_files = _i & 4 };
	struct pp_thread th[PP_THREADS];
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	atomic_store(&urp_foreign, 0);
	ur_file(path, sizeof(path), "pp", (off_t)PP_THREADS * PP_REGION);
	dev = urp_open(path, uc);
	q = ur_queue(dev, elv_names[_i & 1], nr_hw, 0);
	for (unsigned t = 0; t < nthreads; t++) {
		th[t] = (struct pp_thread){
			.q = q, .idx = t, .plug = _i & 2, .hctx = -1,
			.base = (uint64_t)t * PP_REGION,
			.seed = 300 + (unsigned)_i * 8 + t,
			.wbuf = ur_alloc(PP_REGION), .rbuf = ur_alloc(PP_REGION),
		};
		t_check(pthread_create(&th[t].thr, NULL, pp_main, &th[t]) == 0,
			"pthread_create");
	}
	for (unsigned t = 0; t < nthreads; t++) {
		pthread_join(th[t].thr, NULL);
		t_check(!th[t].err[0], "thread %u: %s", t, th[t].err);
		file_check_pattern(path, (off_t)th[t].base, th[t].bytes,
				   th[t].seed, "pread");
		for (unsigned u = 0; mode == 1 && u < t; u++)
			t_check(th[t].hctx != th[u].hctx,
				"threads %u and %u share hardware queue %d", u,
				t, th[t].hctx);
	}
	/* Own queues: every end_io ran in the thread that polled for it. */
	if (mode != 2)
		t_check_u64(atomic_load(&urp_foreign), 0,
			    "end_io run by another thread");
	urp_check_stats(q);
	t_check(mq_queue_poll(q, 0) == 0, "poll of an idle queue");
	t_teardown(q, dev);
	for (unsigned t = 0; t < nthreads; t++) {
		free(th[t].wbuf);
		free(th[t].rbuf);
	}
	unlink(path);
}
END_TEST

/* ---- min_complete ----------------------------------------------------- */

#define MC_STRIDE	(8 * KiB)	/* gaps: nothing merges */

static void mc_submit(struct mq_queue *q, struct ur_pool *p, unsigned nr,
		      unsigned char *buf)
{
	for (unsigned i = 0; i < nr; i++) {
		unsigned k = p->submitted;

		ur_submit(q, p, MQ_OP_READ, (uint64_t)k * MC_STRIDE, 4 * KiB,
			  buf + (size_t)k * 4 * KiB, 0);
	}
}

/* Loop index: the elevator. */
START_TEST(test_poll_min_complete)
{
	struct mq_uring_config uc = { 0 };
	unsigned char *buf = ur_alloc(64 * 4 * KiB);
	uint64_t t0, got = 0;
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;
	struct ur_pool p;
	struct mq_plug pl;
	int n;

	T_BEGIN();
	ur_file(path, sizeof(path), "mc", 64 * MC_STRIDE);
	dev = urp_open(path, uc);
	q = ur_queue(dev, elv_names[_i], 1, 0);
	t_check(urp_pool_init(&p, 64), "pool");

	/* Idle: nothing owed, nothing to wait for. */
	t0 = mq_clock_real_ns();
	t_check(mq_queue_poll(q, 0) == 0, "idle poll(0)");
	t_check(mq_queue_poll(q, 1) == 0, "idle poll(1)");
	t_check(mq_queue_poll(q, 64) == 0, "idle poll(64)");
	t_check(mq_clock_real_ns() - t0 < 1000 * T_MS, "idle polls blocked");

	/* Exactly what is in flight: all of it. */
	mc_submit(q, &p, 8, buf);
	n = mq_queue_poll(q, 8);
	t_check(n == 8, "poll(8) with 8 in flight: %d", n);
	t_check_u64(atomic_load(&p.ended), 8, "ended after poll(8)");

	/* Part, then more than is left: returns what there was. */
	mc_submit(q, &p, 8, buf);
	n = mq_queue_poll(q, 3);
	t_check(n >= 3 && n <= 8, "poll(3) with 8 in flight: %d", n);
	t_check_u64(atomic_load(&p.ended), 8 + (unsigned)n, "ended after poll(3)");
	n += mq_queue_poll(q, 50);
	t_check(n == 8, "poll(3) + poll(50) with 8 in flight: %d", n);
	t_check_u64(atomic_load(&p.ended), 16, "ended after poll(50)");

	/* The plug holds them: the poll flushes it first. */
	mq_start_plug(&pl, 32);
	mc_submit(q, &p, 4, buf);
	t_check_u64(atomic_load(&p.ended), 16, "plugged bios ended");
	n = mq_queue_poll(q, 4);
	t_check(n == 4, "poll(4) with 4 plugged: %d", n);
	mq_finish_plug(&pl);

	/* 0 never blocks; repeated, it still takes everything. */
	mc_submit(q, &p, 16, buf);
	t0 = mq_clock_real_ns();
	while (atomic_load(&p.ended) < p.submitted &&
	       mq_clock_real_ns() - t0 < T_WAIT_NS) {
		n = mq_queue_poll(q, 0);
		t_check(n >= 0 && n <= 16, "poll(0): %d", n);
		got += (unsigned)n;
	}
	t_check_u64(got, 16, "completions counted by poll(0)");
	ur_pool_check(&p, "min_complete reads");
	t_check_u64(atomic_load(&urp_foreign), 0, "end_io in another thread");
	urp_check_stats(q);
	t_teardown(q, dev);
	ur_pool_free(&p);
	free(buf);
	unlink(path);
}
END_TEST

/* ---- a ring smaller than the queue depth ------------------------------ */

#define RF_BIOS		200
#define RF_BS		(4 * KiB)
#define RF_STRIDE	(8 * KiB)	/* gaps: nothing merges */

struct rf_thread {
	pthread_t thr;
	struct mq_queue *q;
	enum mq_op op;
	bool plug;
	unsigned first, nr;
	uint64_t base;			/* file offset of bio 0 */
	unsigned char *buf;
	struct ur_pool p;
	int ret;
};

static void *rf_main(void *arg)
{
	struct rf_thread *t = arg;
	struct mq_plug pl;

	urp_mine = &t->p;
	if (t->plug)
		mq_start_plug(&pl, 32);
	for (unsigned i = t->first; i < t->first + t->nr; i++)
		ur_submit(t->q, &t->p, t->op, t->base + (uint64_t)i * RF_STRIDE,
			  RF_BS, t->buf + (size_t)i * RF_BS, 0);
	if (t->plug)
		mq_finish_plug(&pl);
	t->ret = urp_wait(t->q, &t->p);
	return NULL;
}

/*
 * A ring of 4 SQEs and 8 CQEs under 32 driver tags: more in flight than
 * the completion ring holds (the kernel keeps the overflow), SQ-full
 * submits mid-batch.  Loop index: bit 0 elevator; bit 1: four unplugged
 * submitters sharing the queue, else one plugged (its 33rd bio waits for
 * a tag, polling).  Passes: write, read back, read a hole (completes
 * inside the submit: the completion ring overflows for sure).
 */
START_TEST(test_poll_ring_full)
{
	bool shared = _i & 2;
	unsigned nthreads = shared ? 4 : 1;
	struct mq_uring_config uc = { .queue_depth = 4 };
	const uint64_t seed = 500 + (unsigned)_i;
	size_t bytes = (size_t)RF_BIOS * RF_BS;
	unsigned char *wbuf = ur_alloc(bytes), *rbuf = ur_alloc(bytes);
	struct rf_thread th[4];
	struct mq_queue_stats s;
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	atomic_store(&g_sq_full, 0);
	atomic_store(&g_cq_overflow, 0);
	ur_file(path, sizeof(path), "rf", (off_t)2 * RF_BIOS * RF_STRIDE);
	dev = urp_open(path, uc);
	q = ur_queue(dev, elv_names[_i & 1], 1, 32);
	for (unsigned i = 0; i < RF_BIOS; i++)
		pat_fill(wbuf + (size_t)i * RF_BS, RF_BS,
			 (uint64_t)i * RF_STRIDE, seed);
	memset(rbuf, 0x5a, bytes);
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 2) {
			t_check(!memcmp(rbuf, wbuf, bytes), "read back differs");
			memset(rbuf, 0x5a, bytes);
		}
		for (unsigned t = 0; t < nthreads; t++) {
			th[t] = (struct rf_thread){
				.q = q, .op = pass ? MQ_OP_READ : MQ_OP_WRITE,
				.plug = !shared, .buf = pass ? rbuf : wbuf,
				.first = t * (RF_BIOS / nthreads),
				.nr = RF_BIOS / nthreads,
				.base = pass == 2 ? RF_BIOS * RF_STRIDE : 0,
			};
			t_check(urp_pool_init(&th[t].p, th[t].nr), "pool");
			t_check(pthread_create(&th[t].thr, NULL, rf_main,
					       &th[t]) == 0, "pthread_create");
		}
		for (unsigned t = 0; t < nthreads; t++) {
			pthread_join(th[t].thr, NULL);
			t_check(th[t].ret == 0, "pass %d thread %u: %s", pass,
				t, strerror(-th[t].ret));
			ur_pool_check(&th[t].p, pass ? "reads" : "writes");
			ur_pool_free(&th[t].p);
		}
	}
	t_check(zero_check(rbuf, bytes), "hole read back not zero");
	file_check_pattern(path, 0, RF_BS, seed, "pread first");
	file_check_pattern(path, (off_t)(RF_BIOS - 1) * RF_STRIDE, RF_BS, seed,
			   "pread last");
	s = t_stats(q, -1);
	t_check_u64(s.ios[MQ_DIR_WRITE], RF_BIOS, "write requests");
	t_check_u64(s.ios[MQ_DIR_READ], 2 * RF_BIOS, "read requests");
	t_check_u64(s.in_flight, 0, "in flight");
	if (!shared) {
		/* Unplugged, each bio rings the doorbell alone. */
		t_check(atomic_load(&g_sq_full) > 0, "SQ ring never full");
		t_check(s.tag_waits > 0, "no tag waits: %u bios on depth 32",
			RF_BIOS);
		t_check(atomic_load(&g_cq_overflow) > 0, "CQ never overflowed");
	}
	urp_check_stats(q);
	t_teardown(q, dev);
	free(wbuf);
	free(rbuf);
	unlink(path);
}
END_TEST

/* ---- end_io that submits ---------------------------------------------- */

#define FAN_TOTAL	96

/*
 * Each ended bio submits two more until FAN_TOTAL: more than the tags, so
 * an end_io waits for a tag and polls from inside the poll that runs it.
 */
struct fan {
	struct mq_queue *q;
	struct ur_pool p;
	unsigned char *buf;
	unsigned depth, max_depth;	/* nested end_io calls */
};

static void fan_submit(struct fan *f)
{
	unsigned k = f->p.submitted;

	ur_submit(f->q, &f->p, MQ_OP_READ, (uint64_t)k * 8 * KiB, 4 * KiB,
		  f->buf + (size_t)k * 4 * KiB, 0);
}

static struct fan *g_fan;

static void fan_end_io(struct mq_bio *bio)
{
	struct fan *f = g_fan;

	f->depth++;
	f->max_depth = MQ_MAX(f->max_depth, f->depth);
	for (int i = 0; i < 2 && f->p.submitted < FAN_TOTAL; i++)
		fan_submit(f);
	f->depth--;
	urp_end_io(bio);
}

/* Loop index: the elevator.  Queue depth 2: end_io waits for tags. */
START_TEST(test_poll_endio_submits)
{
	struct mq_uring_config uc = { .queue_depth = 2 };
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct fan f = { 0 };

	T_BEGIN();
	ur_file(path, sizeof(path), "fan", FAN_TOTAL * 8 * KiB);
	dev = urp_open(path, uc);
	f.q = ur_queue(dev, elv_names[_i], 1, 2);
	f.buf = ur_alloc(FAN_TOTAL * 4 * KiB);
	t_check(urp_pool_init(&f.p, FAN_TOTAL), "pool");
	f.p.end_io = fan_end_io;
	g_fan = &f;
	fan_submit(&f);
	/* Ends only when no bio submits another any more. */
	while (atomic_load(&f.p.ended) < f.p.submitted ||
	       f.p.submitted < FAN_TOTAL)
		t_check(urp_wait(f.q, &f.p) == 0, "fan: %u of %u ended",
			atomic_load(&f.p.ended), f.p.submitted);
	ur_pool_check(&f.p, "fan reads");
	t_check_u64(f.p.submitted, FAN_TOTAL, "bios submitted");
	t_check(f.max_depth >= 2, "no end_io polled from inside an end_io");
	t_check_u64(atomic_load(&urp_foreign), 0, "end_io in another thread");
	urp_check_stats(f.q);
	t_teardown(f.q, dev);
	ur_pool_free(&f.p);
	free(f.buf);
	unlink(path);
}
END_TEST

/* ---- nobody polls: drain, freeze, teardown ---------------------------- */

/*
 * Loop index: bit 0 elevator; (index >> 1): 0 mq_queue_drain, 1 an
 * elevator switch (freeze), 2 queue teardown with the bios in flight.
 * Each waits by polling, so the end_io callbacks run in this thread.
 */
START_TEST(test_poll_drain)
{
	unsigned how = (unsigned)_i >> 1;
	const char *elv = elv_names[_i & 1];
	struct mq_uring_config uc = { 0 };
	unsigned char *buf = ur_alloc(64 * 4 * KiB);
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;
	struct ur_pool p;

	T_BEGIN();
	ur_file(path, sizeof(path), "drain", 64 * MC_STRIDE);
	dev = urp_open(path, uc);
	q = ur_queue(dev, elv, 1, 16);
	t_check(urp_pool_init(&p, 64), "pool");
	for (unsigned k = 0; k < 64; k++)
		pat_fill(buf + (size_t)k * 4 * KiB, 4 * KiB,
			 (uint64_t)k * MC_STRIDE, 77);
	for (unsigned k = 0; k < 64; k++)
		ur_submit(q, &p, MQ_OP_WRITE, (uint64_t)k * MC_STRIDE, 4 * KiB,
			  buf + (size_t)k * 4 * KiB, 0);
	if (how == 0) {
		mq_queue_drain(q);
	} else if (how == 1) {
		t_check(mq_queue_switch_elevator(q, elv_names[!(_i & 1)]) == 0,
			"switch");
	} else {
		/* With them in flight: destroy drains first. */
		mq_queue_destroy(q);
		mq_dev_close(dev);
		q = NULL;
	}
	t_check_u64(atomic_load(&p.ended), 64, "bios ended by the wait");
	ur_pool_check(&p, "writes");
	t_check_u64(atomic_load(&urp_foreign), 0, "end_io in another thread");
	if (q) {
		/* The queue still works. */
		ur_pool_free(&p);
		memset(buf, 0, 8 * 4 * KiB);
		t_check(urp_pool_init(&p, 8), "pool");
		for (unsigned k = 0; k < 8; k++)
			ur_submit(q, &p, MQ_OP_READ, (uint64_t)k * MC_STRIDE,
				  4 * KiB, buf + (size_t)k * 4 * KiB, 0);
		urp_wait_check(q, &p, "reads after the wait");
		for (unsigned k = 0; k < 8; k++)
			t_check(pat_diff(buf + (size_t)k * 4 * KiB, 4 * KiB,
					 (uint64_t)k * MC_STRIDE, 77) < 0,
				"bio %u read back", k);
		urp_check_stats(q);
		t_teardown(q, dev);
	}
	for (unsigned k = 0; k < 8; k++)
		file_check_pattern(path, (off_t)k * MC_STRIDE, 4 * KiB,
				   77, "pread");
	ur_pool_free(&p);
	free(buf);
	unlink(path);
}
END_TEST

/* ---- other set-ups ---------------------------------------------------- */

/* Kernel submission thread, the submitter still reaps. */
START_TEST(test_poll_sqpoll)
{
	struct mq_uring_config uc = { .sqpoll = true };
	unsigned char *w = ur_alloc(512 * KiB), *r = ur_alloc(512 * KiB);
	char path[PATH_MAX];
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	ur_file(path, sizeof(path), "sqpoll", 1 * MiB);
	dev = urp_open(path, uc);
	q = ur_queue(dev, "none", 1, 0);
	pat_fill(w, 512 * KiB, 256 * KiB, 1100);
	urp_rw_range(q, MQ_OP_WRITE, 256 * KiB, 512 * KiB, 16 * KiB, w, true,
		     "sqpoll writes");
	urp_rw_range(q, MQ_OP_READ, 256 * KiB, 512 * KiB, 4 * KiB, r, false,
		     "sqpoll reads");
	t_check(!memcmp(w, r, 512 * KiB), "sqpoll read back differs");
	file_check_pattern(path, 256 * KiB, 512 * KiB, 1100, "sqpoll pread");
	urp_check_stats(q);
	t_teardown(q, dev);
	free(w);
	free(r);
	unlink(path);
}
END_TEST

/* Queues that are not polled say so; their I/O completes as before. */
START_TEST(test_poll_unsupported)
{
	struct mq_uring_config uc = { 0 };
	struct mq_fault_config fc = { 0 };
	unsigned char *buf = ur_alloc(64 * KiB);
	struct mq_null_config nc = { 0 };
	char path[PATH_MAX];
	struct mq_dev *dev, *fault;
	struct mq_queue *q;
	struct ur_pool p;
	struct mq_plug pl;

	T_BEGIN();
	ur_file(path, sizeof(path), "nopoll", 1 * MiB);
	dev = ur_open(path, &uc);
	t_check(!dev->polled, "reaper-mode device claims polled");
	q = ur_queue(dev, "none", 1, 0);
	t_check(urp_pool_init(&p, 16), "pool");
	mq_start_plug(&pl, 16);
	for (unsigned k = 0; k < 16; k++)
		ur_submit(q, &p, MQ_OP_READ, (uint64_t)k * 4 * KiB, 4 * KiB,
			  buf + (size_t)k * 4 * KiB, 0);
	t_check(mq_queue_poll(q, 1) == -EOPNOTSUPP, "poll of a reaper ring");
	t_check(mq_queue_poll(q, 0) == -EOPNOTSUPP, "poll(0), reaper ring");
	mq_finish_plug(&pl);
	ur_pool_check(&p, "reaper-mode reads");	/* the reaper ended them */
	ur_pool_free(&p);
	t_teardown(q, dev);

	dev = t_dev_ram(1 * MiB, 0);
	t_check(dev != NULL, "ram");
	q = ur_queue(dev, "mq-deadline", 1, 0);
	t_check(mq_queue_poll(q, 1) == -EOPNOTSUPP, "poll of the ram device");
	t_teardown(q, dev);
	dev = t_dev_null(&nc);
	t_check(dev != NULL, "null");
	q = ur_queue(dev, "none", 1, 0);
	t_check(mq_queue_poll(q, 0) == -EOPNOTSUPP, "poll of the null device");
	t_teardown(q, dev);

	/* Nothing would poll the fault device's clones: refused. */
	uc.caller_reap = true;
	dev = ur_open(path, &uc);
	fault = t_dev_fault(dev, &fc);
	t_check(fault == NULL, "fault device over a polled device");
	mq_dev_close(dev);
	free(buf);
	unlink(path);
}
END_TEST

/* A loop device (losetup --direct-io=on), when we are root. */
START_TEST(test_poll_blockdev)
{
	struct mq_uring_config uc = { 0 };
	const uint64_t seed = 1300 + (unsigned)_i;
	unsigned char *w = ur_alloc(1 * MiB), *r = ur_alloc(1 * MiB);
	struct mq_dev *dev;
	struct mq_queue *q;

	T_BEGIN();
	if (!g_loop[0]) {
		printf("%s: blockdev: skipped (%s)\n", g_prog, g_loop_why);
		free(w);
		free(r);
		return;
	}
	dev = urp_open(g_loop, uc);
	q = ur_queue(dev, elv_names[_i], 1, 0);
	pat_fill(w, 1 * MiB, 2 * MiB, seed);
	urp_rw_range(q, MQ_OP_WRITE, 2 * MiB, 1 * MiB, 4 * KiB, w, true,
		     "bdev writes");
	urp_rw_range(q, MQ_OP_READ, 2 * MiB, 1 * MiB, 4 * KiB, r, false,
		     "bdev reads");
	t_check(!memcmp(w, r, 1 * MiB), "bdev read back differs");
	urp_check_stats(q);
	t_teardown(q, dev);
	file_check_pattern(g_loop_file, 2 * MiB, 1 * MiB, seed,
			   "backing file");
	free(w);
	free(r);
}
END_TEST

/* ---- the program -------------------------------------------------------- */

static Suite *poll_suite(void)
{
	Suite *s = suite_create("uring_poll");
	const char *why = loop_unavailable();
	TCase *c;

	ur_tcase(s, "patterns", test_poll_patterns, 24, 120);
	ur_tcase(s, "min_complete", test_poll_min_complete, 2, 60);
	ur_tcase(s, "ring_full", test_poll_ring_full, 4, 120);
	ur_tcase(s, "endio_submits", test_poll_endio_submits, 2, 60);
	ur_tcase(s, "drain", test_poll_drain, 6, 60);
	ur_tcase(s, "sqpoll", test_poll_sqpoll, 1, 60);
	ur_tcase(s, "unsupported", test_poll_unsupported, 1, 60);
	if (why) {
		printf("%s: blockdev test skipped: %s\n", g_prog, why);
	} else {
		c = ur_tcase(s, "blockdev", test_poll_blockdev, 2, 120);
		tcase_add_unchecked_fixture(c, loop_setup, loop_teardown);
	}
	return s;
}

UR_MAIN(poll_suite)
