/* SPDX-License-Identifier: MIT */
/*
 * test_stress.c - a randomized stress test of the whole block layer
 * (sched/ and its null and ram drivers) that must end with every
 * balance counter at zero.
 *
 * Four submitting threads, each with its own bios, issue a random mix of
 * reads and writes (random and sequential offsets, 512 B..64 KiB in 512 B
 * steps, random I/O priority), occasional flushes and discards, sometimes
 * inside a plug with a random batch size and request preallocation, while
 * a controller thread switches the elevator (none <-> mq-deadline) at
 * random intervals and, while mq-deadline is attached, changes its
 * tunables (fifo_batch, writes_starved, read_expire).  Against (a) a null
 * device in TIMER mode with a random latency of 20-200 us and queue depth
 * 4-32, and (b) a ram device where each thread owns a region, stamps every
 * 512-byte sector of a write with its thread id and write sequence, and
 * verifies the last-written content with reads that race the switches
 * (and, at the end, with a read-back of the whole region and a look at the
 * device memory).
 *
 * Before half of the switches the controller freezes the queue and checks
 * the balance counters mid-run (no tag held, nothing in flight,
 * mq-deadline's inserted == completed before the instance goes away).
 *
 * Every bio must complete exactly once with status 0.  After the threads
 * stop and the queue is drained: no driver or scheduler tag is held, no
 * software context holds a usage reference, nothing is in flight,
 * dispatched == completed per direction, mq-deadline's inserted ==
 * completed per priority, and mq_queue_destroy() asserts the rest.  A
 * watchdog reports a stall (deadlock or lost wakeup) with a dump of the
 * queue state instead of hanging.
 *
 * Environment: T_STRESS_SCALE (default 1) multiplies the number of I/Os;
 * T_STRESS_SEED overrides the fixed base seed, which every failure
 * message prints.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blk_i.h"
#include "mqfs/clock.h"
#include "mqfs/mq_dev.h"

#include "t_util.h"
#include "t_main.h"
#include "mqfs/dev/null.h"
#include "mqfs/dev/ram.h"
#include "t_dev.h"

/* From sched/mq-deadline.c: [RT/BE/IDLE][ins, merged, disp, done]. */

#define BASE_SEED	0x6d7166735eedull
#define NR_WORKERS	4
#define WINDOW		24		/* bios in flight per thread */
#define MAX_BATCH	16		/* bios per plug */
#define MAX_SECTS	128		/* 64 KiB */
#define NULL_OPS	10000		/* per thread, scale 1 */
#define RAM_OPS		8000
#define NULL_REGION	(1ull << 21)	/* sectors per thread: 1 GiB */
#define RAM_REGION	8192u		/* sectors per thread: 4 MiB */
#define STALL_NS	(15ull * 1000000000ull)
#define NR_NULL_RUNS	3
#define NR_RAM_RUNS	2

/* One bio of a worker, with what the worker needs to check it. */
struct sbio {
	struct mq_bio bio;
	atomic_int done;
	int status;
	struct sbio *next_done;
	uint64_t rel;			/* first sector inside the region */
	uint32_t nsect;
	uint8_t op;
};

struct run;

struct worker {
	struct run *run;
	unsigned id;
	pthread_t thr;
	uint64_t rng;
	struct sbio *bios;
	unsigned nr_bios, nr_random, issued, reaped;
	uint64_t base, cursor;		/* region start, sequential cursor */
	uint32_t seq;			/* last write sequence used */
	uint32_t *sect_seq;		/* ram: sequence of each sector, 0 zero */
	uint8_t *busy;			/* ram: sector has an op in flight */
	pthread_mutex_t lock;		/* done_list */
	pthread_cond_t cond;
	struct sbio *done_list;
};

struct run {
	uint64_t seed;
	bool ram;
	struct mq_dev *dev;
	struct mq_queue *q;
	unsigned latency_us, depth, hw_queues;
	struct worker w[NR_WORKERS];
	pthread_t ctl;
	uint64_t ctl_rng;
	atomic_bool stop;
	atomic_uint workers_done;
	atomic_ulong submitted, completed;
	atomic_ulong switches, tunes;
	atomic_int ctl_phase;		/* 0 idle, 1 switching, 2 tuning */
	pthread_mutex_t err_lock;
	unsigned long nerr;
	char err[512];
};

/* ---- small helpers --------------------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned rnd_range(uint64_t *s, unsigned lo, unsigned hi)
{
	return lo + (unsigned)(rnd(s) % (hi - lo + 1));
}

static double stress_scale(void)
{
	const char *e = getenv("T_STRESS_SCALE");
	double v = e ? strtod(e, NULL) : 1.0;

	return v > 0.01 ? v : 1.0;
}

static uint64_t base_seed(void)
{
	const char *e = getenv("T_STRESS_SEED");

	return e ? strtoull(e, NULL, 0) : BASE_SEED;
}

static void run_error(struct run *r, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&r->err_lock);
	if (!r->nerr++) {
		va_start(ap, fmt);
		vsnprintf(r->err, sizeof(r->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&r->err_lock);
}

static unsigned long run_nerr(struct run *r)
{
	unsigned long n;

	pthread_mutex_lock(&r->err_lock);
	n = r->nerr;
	pthread_mutex_unlock(&r->err_lock);
	return n;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000,
			       .tv_nsec = (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* ---- data pattern (ram) ---------------------------------------------- */

static uint64_t pat_word(unsigned tid, uint32_t seq, uint64_t sector,
			 unsigned i)
{
	uint64_t s = ((uint64_t)tid << 56) ^ ((uint64_t)seq << 20) ^
		     (sector << 7) ^ i;

	return rnd(&s);
}

/* Every sector: thread id and sequence, its own number, then noise. */
static void pat_fill(uint64_t *w, unsigned tid, uint32_t seq, uint64_t sector)
{
	w[0] = ((uint64_t)tid << 32) | seq;
	w[1] = sector;
	for (unsigned i = 2; i < MQ_SECTOR_SIZE / 8; i++)
		w[i] = pat_word(tid, seq, sector, i);
}

/* 0 when the sector holds the expected content (all zero for seq 0). */
static int pat_check(const void *data, unsigned tid, uint32_t seq,
		     uint64_t sector)
{
	uint64_t want[MQ_SECTOR_SIZE / 8];

	if (seq)
		pat_fill(want, tid, seq, sector);
	else
		memset(want, 0, sizeof(want));
	return memcmp(data, want, sizeof(want));
}

static void pat_describe(const void *data, char *out, size_t len)
{
	const uint64_t *w = data;

	snprintf(out, len, "tid %u seq %u sector %" PRIu64,
		 (unsigned)(w[0] >> 32), (unsigned)w[0], w[1]);
}

/* ---- completion side ------------------------------------------------- */

static void sbio_end_io(struct mq_bio *bio)
{
	struct sbio *sb = mq_container_of(bio, struct sbio, bio);
	struct worker *w = bio->private;

	sb->status = bio->status;
	if (atomic_fetch_add(&sb->done, 1) != 0) {
		run_error(w->run, "seed %#" PRIx64 ": thread %u bio %td completed twice",
			  w->run->seed, w->id, sb - w->bios);
		return;
	}
	atomic_fetch_add(&w->run->completed, 1);
	pthread_mutex_lock(&w->lock);
	sb->next_done = w->done_list;
	w->done_list = sb;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void verify_read(struct worker *w, struct sbio *sb)
{
	const unsigned char *buf = sb->bio.buf;

	for (uint32_t i = 0; i < sb->nsect; i++) {
		uint64_t rel = sb->rel + i;
		const void *d = buf + (size_t)i * MQ_SECTOR_SIZE;
		char got[96];

		if (!pat_check(d, w->id, w->sect_seq[rel], w->base + rel))
			continue;
		pat_describe(d, got, sizeof(got));
		run_error(w->run, "seed %#" PRIx64 ": thread %u sector %" PRIu64
			  ": want seq %u, read %s", w->run->seed, w->id,
			  w->base + rel, w->sect_seq[rel], got);
		return;
	}
}

/* The submitting thread's half of a completion: check, unbusy, free. */
static void reap_one(struct worker *w, struct sbio *sb)
{
	if (sb->status)
		run_error(w->run, "seed %#" PRIx64 ": thread %u bio %td status %d",
			  w->run->seed, w->id, sb - w->bios, sb->status);
	if (w->run->ram) {
		if (sb->op == MQ_OP_READ && !sb->status)
			verify_read(w, sb);
		if (sb->op != MQ_OP_FLUSH)
			memset(w->busy + sb->rel, 0, sb->nsect);
	}
	free(sb->bio.buf);
	sb->bio.buf = NULL;
	w->reaped++;
}

/* Reap what completed; with @wait, sleep for at least one completion. */
static void reap(struct worker *w, bool wait)
{
	struct sbio *list;

	pthread_mutex_lock(&w->lock);
	while (wait && !w->done_list)
		pthread_cond_wait(&w->cond, &w->lock);
	list = w->done_list;
	w->done_list = NULL;
	pthread_mutex_unlock(&w->lock);
	while (list) {
		struct sbio *next = list->next_done;

		reap_one(w, list);
		list = next;
	}
}

/* Wait for a completion; plugged requests go out first (the contract). */
static void reap_wait(struct worker *w, bool plugged)
{
	if (plugged)
		mq_flush_plug();
	reap(w, true);
}

/* ---- submission side ------------------------------------------------- */

struct op {
	uint8_t op, prio;
	uint16_t flags;
	uint64_t rel;
	uint32_t nsect;
};

static uint8_t gen_prio(struct worker *w)
{
	unsigned r = rnd_range(&w->rng, 0, 99);

	if (r < 3)
		return MQ_PRIO_RT;
	if (r < 4)
		return MQ_PRIO_IDLE;
	return r < 20 ? MQ_PRIO_BE : MQ_PRIO_NONE;
}

static uint8_t gen_opcode(struct worker *w)
{
	unsigned r = rnd_range(&w->rng, 0, 99);

	if (r < 3)
		return MQ_OP_FLUSH;
	if (r < 7)
		return MQ_OP_DISCARD;
	return r < 52 ? MQ_OP_READ : MQ_OP_WRITE;
}

static uint64_t region_sectors(const struct worker *w)
{
	return w->run->ram ? RAM_REGION : NULL_REGION;
}

static void gen_op(struct worker *w, struct op *o)
{
	uint64_t size = region_sectors(w);

	o->op = gen_opcode(w);
	o->prio = gen_prio(w);
	o->flags = rnd_range(&w->rng, 0, 3) ? 0 : MQ_REQ_SYNC;
	o->nsect = o->op == MQ_OP_FLUSH ? 0 : rnd_range(&w->rng, 1, MAX_SECTS);
	o->rel = rnd_range(&w->rng, 0, 1) ? w->cursor
					  : rnd(&w->rng) % size;
	if (o->rel + o->nsect > size)
		o->rel = 0;
	if (o->op == MQ_OP_FLUSH)
		o->rel = 0;
	else
		w->cursor = (o->rel + o->nsect) % size;
}

static bool ram_range_busy(const struct worker *w, const struct op *o)
{
	for (uint32_t i = 0; i < o->nsect; i++)
		if (w->busy[o->rel + i])
			return true;
	return false;
}

/* Ram: buffer, busy marks and the expected content after this op. */
static void *ram_prepare(struct worker *w, const struct op *o)
{
	size_t bytes = (size_t)o->nsect * MQ_SECTOR_SIZE;
	unsigned char *buf = NULL;

	memset(w->busy + o->rel, 1, o->nsect);
	if (o->op == MQ_OP_READ || o->op == MQ_OP_WRITE) {
		buf = malloc(bytes);
		if (!buf)
			abort();	/* no ck_assert off the test's thread */
		memset(buf, 0xee, bytes);
	}
	if (o->op == MQ_OP_WRITE)
		w->seq++;
	for (uint32_t i = 0; i < o->nsect && o->op != MQ_OP_READ; i++) {
		uint64_t rel = o->rel + i;

		w->sect_seq[rel] = o->op == MQ_OP_WRITE ? w->seq : 0;
		if (o->op == MQ_OP_WRITE)
			pat_fill((uint64_t *)(buf + (size_t)i * MQ_SECTOR_SIZE),
				 w->id, w->seq, w->base + rel);
	}
	return buf;
}

static void issue(struct worker *w, const struct op *o)
{
	struct sbio *sb = &w->bios[w->issued++];
	void *buf = NULL;

	if (w->run->ram && o->op != MQ_OP_FLUSH)
		buf = ram_prepare(w, o);
	memset(sb, 0, sizeof(*sb));
	mq_bio_init(&sb->bio, o->op, o->op == MQ_OP_FLUSH ? 0 : w->base + o->rel,
		    buf, o->nsect * MQ_SECTOR_SIZE, sbio_end_io, w);
	sb->bio.prio_class = o->prio;
	sb->bio.flags = o->flags;
	sb->rel = o->rel;
	sb->nsect = o->nsect;
	sb->op = o->op;
	atomic_fetch_add(&w->run->submitted, 1);
	mq_submit_bio(w->run->q, &sb->bio);
}

/* Issue one random op; false when its range is busy (ram). */
static bool issue_random(struct worker *w)
{
	struct op o;

	for (int tries = 0; tries < 4; tries++) {
		gen_op(w, &o);
		if (!w->run->ram || !ram_range_busy(w, &o)) {
			issue(w, &o);
			return true;
		}
	}
	return false;
}

/* A batch of 1 (unplugged) or up to MAX_BATCH bios under a plug. */
static void worker_batch(struct worker *w)
{
	bool plugged = rnd_range(&w->rng, 0, 2) == 0;
	unsigned n = plugged ? rnd_range(&w->rng, 1, MAX_BATCH) : 1;
	struct mq_plug plug;

	if (plugged)
		mq_start_plug(&plug, rnd_range(&w->rng, 1, 32));
	for (unsigned k = 0; k < n && w->issued < w->nr_random; k++) {
		reap(w, false);
		while (w->issued - w->reaped >= WINDOW)
			reap_wait(w, plugged);
		if (!issue_random(w)) {
			reap_wait(w, plugged);
			break;
		}
	}
	if (plugged)
		mq_finish_plug(&plug);
}

/* Ram: read the whole region back in 64 KiB pieces and verify it. */
static void worker_readback(struct worker *w)
{
	for (uint64_t rel = 0; rel < RAM_REGION; rel += MAX_SECTS) {
		struct op o = { .op = MQ_OP_READ, .rel = rel,
				.nsect = MAX_SECTS };

		while (w->issued - w->reaped >= WINDOW)
			reap_wait(w, false);
		issue(w, &o);
	}
}

static void *worker_main(void *p)
{
	struct worker *w = p;

	while (w->issued < w->nr_random && !run_nerr(w->run))
		worker_batch(w);
	while (w->reaped < w->issued)
		reap_wait(w, false);
	if (w->run->ram && !run_nerr(w->run)) {
		worker_readback(w);
		while (w->reaped < w->issued)
			reap_wait(w, false);
	}
	atomic_fetch_add(&w->run->workers_done, 1);
	return NULL;
}

/* ---- controller ------------------------------------------------------ */

struct tunable {
	const char *name;
	int lo, hi;
	const char *bad;
};

static const struct tunable tunables[] = {
	{ "fifo_batch", 0, 64, "-1" },
	{ "writes_starved", -1, 4, "x" },
};

static int rnd_int(uint64_t *s, int lo, int hi)
{
	return lo + (int)(rnd(s) % (uint64_t)(hi - lo + 1));
}

/* Store @val, read it back; errors go to the run. */
static void ctl_store(struct run *r, const char *name, int val)
{
	char v[32], shown[32];
	int ret;

	snprintf(v, sizeof(v), "%d", val);
	ret = mq_queue_attr_store(r->q, name, v);
	if (!ret)
		ret = mq_queue_attr_show(r->q, name, shown, sizeof(shown));
	if (ret || strcmp(v, shown))
		run_error(r, "seed %#" PRIx64 ": store %s=%s: %d", r->seed,
			  name, v, ret);
}

static void ctl_store_bad(struct run *r, const char *name, const char *bad)
{
	int ret = mq_queue_attr_store(r->q, name, bad);

	if (ret != -EINVAL)
		run_error(r, "seed %#" PRIx64 ": store %s=%s: %d, want -EINVAL",
			  r->seed, name, bad, ret);
}

static int ctl_show_int(struct run *r, const char *name)
{
	char buf[32];

	if (mq_queue_attr_show(r->q, name, buf, sizeof(buf))) {
		run_error(r, "seed %#" PRIx64 ": show %s failed", r->seed, name);
		return 500;
	}
	return atoi(buf);
}

/*
 * read_expire: a lower value holds reads already queued back until their
 * recomputed start time (the kernel's started_after()), so a big drop
 * would stall a drain for up to the old value.  Walk in small steps down,
 * larger ones up, and sometimes pulse a tiny value (1-5 ms) for a moment:
 * reads inserted meanwhile carry expired deadlines.
 */
static void ctl_tune_read_expire(struct run *r)
{
	int cur = ctl_show_int(r, "read_expire");

	if (rnd(&r->ctl_rng) % 4 == 0) {
		ctl_store(r, "read_expire", rnd_int(&r->ctl_rng, 1, 5));
		ctl_store(r, "read_expire", cur);
		return;
	}
	cur += rnd_int(&r->ctl_rng, -25, 100);
	ctl_store(r, "read_expire", MQ_MIN(MQ_MAX(cur, 1), 1000));
	ctl_store_bad(r, "read_expire", "-5");
}

static void ctl_tune(struct run *r)
{
	unsigned i = (unsigned)(rnd(&r->ctl_rng) % (MQ_ARRAY_SIZE(tunables) + 1));

	if (i == MQ_ARRAY_SIZE(tunables)) {
		ctl_tune_read_expire(r);
	} else {
		const struct tunable *t = &tunables[i];

		ctl_store(r, t->name, rnd_int(&r->ctl_rng, t->lo, t->hi));
		ctl_store_bad(r, t->name, t->bad);
	}
	atomic_fetch_add(&r->tunes, 1);
}

/*
 * Freeze (every request completed, new ones held off) and look at the
 * balance counters mid-run: tags, dispatch lists, in-flight requests,
 * and mq-deadline's inserted == completed before the instance goes away.
 */
static void ctl_check_frozen(struct run *r)
{
	struct mq_queue *q = r->q;
	struct mq_queue_stats s;
	uint64_t st[3][4];

	mq_queue_freeze(q);
	if (t_dd_stats(q, st)) {
		for (int p = 0; p < 3; p++)
			if (st[p][0] != st[p][3])
				run_error(r, "seed %#" PRIx64 ": frozen: prio %d "
					  "inserted %" PRIu64 " completed %" PRIu64,
					  r->seed, p, st[p][0], st[p][3]);
	}
	for (unsigned i = 0; i < q->nr_hw_queues; i++) {
		struct mq_hw_queue *h = q->hctxs[i];

		if (mq_sbitmap_weight(&h->tags->bitmap.sb) ||
		    (h->sched_tags && mq_sbitmap_weight(&h->sched_tags->bitmap.sb)) ||
		    atomic_load(&h->nr_dispatch))
			run_error(r, "seed %#" PRIx64 ": frozen: hctx %u holds "
				  "requests", r->seed, i);
	}
	mq_queue_get_stats(q, -1, &s);
	if (s.in_flight)
		run_error(r, "seed %#" PRIx64 ": frozen: in_flight %" PRIu64,
			  r->seed, s.in_flight);
	mq_queue_unfreeze(q);
}

static void ctl_switch(struct run *r)
{
	bool none = !strcmp(mq_queue_elevator_name(r->q), "none");
	const char *to = none ? (rnd(&r->ctl_rng) & 1 ? "mq-deadline"
						     : "deadline") : "none";
	const char *want = none ? "mq-deadline" : "none";
	int ret;

	if (rnd(&r->ctl_rng) & 1)
		ctl_check_frozen(r);
	ret = mq_queue_switch_elevator(r->q, to);
	if (ret || strcmp(mq_queue_elevator_name(r->q), want))
		run_error(r, "seed %#" PRIx64 ": switch to %s: %d, now %s",
			  r->seed, to, ret, mq_queue_elevator_name(r->q));
	atomic_fetch_add(&r->switches, 1);
}

static void *controller_main(void *p)
{
	struct run *r = p;

	while (!atomic_load(&r->stop)) {
		sleep_us(rnd_range(&r->ctl_rng, 100, 2000));
		if (atomic_load(&r->stop))
			break;
		if (!strcmp(mq_queue_elevator_name(r->q), "none") ||
		    rnd(&r->ctl_rng) % 3 == 0) {
			atomic_store(&r->ctl_phase, 1);
			ctl_switch(r);
		} else {
			atomic_store(&r->ctl_phase, 2);
			ctl_tune(r);
		}
		atomic_store(&r->ctl_phase, 0);
	}
	return NULL;
}

/* ---- set up and tear down -------------------------------------------- */

static void worker_init(struct run *r, struct worker *w, unsigned id,
			unsigned nr_random)
{
	w->run = r;
	w->id = id;
	w->rng = r->seed * 0x100000001b3ull + id + 1;
	w->nr_random = nr_random;
	w->nr_bios = nr_random + (r->ram ? RAM_REGION / MAX_SECTS : 0);
	w->bios = calloc(w->nr_bios, sizeof(*w->bios));
	w->base = (uint64_t)id * region_sectors(w);
	ck_assert_ptr_nonnull(w->bios);
	if (r->ram) {
		w->sect_seq = calloc(RAM_REGION, sizeof(*w->sect_seq));
		w->busy = calloc(RAM_REGION, 1);
		ck_assert(w->sect_seq && w->busy);
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
}

static void worker_free(struct worker *w)
{
	for (unsigned i = 0; i < w->issued; i++)
		free(w->bios[i].bio.buf);
	free(w->bios);
	free(w->sect_seq);
	free(w->busy);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
}

static struct mq_dev *run_open_dev(struct run *r)
{
	struct mq_null_config nc = {
		.latency_ns = (uint64_t)r->latency_us * 1000,
		.queue_depth = r->depth, .nr_hw_queues = r->hw_queues,
		.irqmode = MQ_NULL_IRQ_TIMER,
	};

	if (r->ram)
		return t_dev_ram((uint64_t)NR_WORKERS * RAM_REGION *
				   MQ_SECTOR_SIZE, r->depth);
	return t_dev_null(&nc);
}

static struct run *run_new(uint64_t seed, bool ram)
{
	struct run *r = calloc(1, sizeof(*r));
	struct mq_queue_config cfg = { 0 };
	unsigned ops = (unsigned)((ram ? RAM_OPS : NULL_OPS) * stress_scale());

	ck_assert_ptr_nonnull(r);
	r->seed = seed;
	r->ram = ram;
	r->ctl_rng = seed ^ 0xc0ffeeull;
	r->latency_us = rnd_range(&r->ctl_rng, 20, 200);
	r->depth = rnd_range(&r->ctl_rng, 4, 32);
	r->hw_queues = rnd_range(&r->ctl_rng, 1, 2);
	pthread_mutex_init(&r->err_lock, NULL);
	r->dev = run_open_dev(r);
	ck_assert_msg(r->dev != NULL, "seed %#" PRIx64 ": open device", seed);
	cfg.elevator = rnd(&r->ctl_rng) & 1 ? "none" : "mq-deadline";
	cfg.queue_depth = r->depth;
	cfg.nr_hw_queues = r->hw_queues;
	r->q = t_queue_new(r->dev, &cfg);
	ck_assert_msg(r->q != NULL, "seed %#" PRIx64 ": create queue", seed);
	for (unsigned i = 0; i < NR_WORKERS; i++)
		worker_init(r, &r->w[i], i, MQ_MAX(ops, 16u));
	return r;
}

static void run_free(struct run *r)
{
	mq_queue_destroy(r->q);
	mq_dev_close(r->dev);
	for (unsigned i = 0; i < NR_WORKERS; i++)
		worker_free(&r->w[i]);
	pthread_mutex_destroy(&r->err_lock);
	free(r);
}

/* ---- watchdog -------------------------------------------------------- */

static void dump_hctx(struct mq_hw_queue *h)
{
	fprintf(stderr, "  hctx %u: run_state %d restart %d nr_dispatch %u "
		"tags %u sched_tags %u busy %u wpending %d\n", h->index,
		atomic_load(&h->run_state), atomic_load(&h->sched_restart),
		atomic_load(&h->nr_dispatch),
		mq_sbitmap_weight(&h->tags->bitmap.sb),
		h->sched_tags ? mq_sbitmap_weight(&h->sched_tags->bitmap.sb)
			      : 0, h->dispatch_busy, h->wpending);
}

static bool tag_bit_set(const struct mq_sbitmap *sb, unsigned bit)
{
	const struct mq_sbitmap_word *w = &sb->map[bit >> sb->shift];
	unsigned long m = 1ul << (bit & ((1u << sb->shift) - 1));

	return (atomic_load(&w->word) & ~atomic_load(&w->cleared)) & m;
}

static void dump_tags(const char *what, struct mq_tags *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->depth; i++) {
		struct mq_request *rq = mq_tags_rq(t, i);

		if (!tag_bit_set(&t->bitmap.sb, i))
			continue;
		fprintf(stderr, "    %s %u: rq_flags %#x op %u prio %u sector %"
			PRIu64 " bytes %u ctx %u tag %d itag %d ql %s rb %s\n",
			what, i, rq->rq_flags, rq->op, rq->prio_class,
			rq->sector, rq->nr_bytes, rq->ctx ? rq->ctx->index : 99,
			rq->tag, rq->internal_tag,
			mq_list_empty(&rq->queuelist) ? "empty" : "linked",
			mq_rb_node_empty(&rq->rb_node) ? "no" : "yes");
	}
}

static void dump_elv(struct mq_queue *q)
{
	struct mq_elevator *e = q->hctxs[0]->elevator;
	uint64_t st[3][4];

	if (!e)
		return;
	if (pthread_mutex_trylock(&e->lock)) {
		fprintf(stderr, "  mq-deadline: lock held\n");
		return;
	}
	pthread_mutex_unlock(&e->lock);
	mq_dd_stats(e, st);
	fprintf(stderr, "  mq-deadline has_work %d", e->type->ops->has_work(e));
	for (int p = 0; p < 3; p++)
		fprintf(stderr, " [%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "]",
			st[p][0], st[p][1], st[p][2], st[p][3]);
	fprintf(stderr, "\n");
}

/* Racy snapshot for a human: the run is stuck anyway. */
static void dump_state(struct run *r)
{
	struct mq_queue *q = r->q;

	fprintf(stderr, "STALL seed %#" PRIx64 " %s lat %u us depth %u hwq %u: "
		"frozen %d quiesced %d usage_waiters %d ctl_phase %d "
		"submitted %lu completed %lu switches %lu\n", r->seed,
		r->ram ? "ram" : "null", r->latency_us, r->depth, r->hw_queues,
		atomic_load(&q->frozen), atomic_load(&q->quiesced),
		atomic_load(&q->usage_waiters), atomic_load(&r->ctl_phase),
		atomic_load(&r->submitted), atomic_load(&r->completed),
		atomic_load(&r->switches));
	for (unsigned i = 0; i < MQ_NR_CTX; i++)
		if (atomic_load(&q->ctxs[i].usage))
			fprintf(stderr, "  ctx %u: usage %ld\n", i,
				atomic_load(&q->ctxs[i].usage));
	for (unsigned i = 0; i < q->nr_hw_queues; i++) {
		dump_hctx(q->hctxs[i]);
		dump_tags("tag", q->hctxs[i]->tags);
		dump_tags("stag", q->hctxs[i]->sched_tags);
	}
	dump_elv(q);
	for (unsigned i = 0; i < NR_WORKERS; i++)
		fprintf(stderr, "  worker %u: issued %u reaped %u\n", i,
			r->w[i].issued, r->w[i].reaped);
	if (!r->ram)
		fprintf(stderr, "  null device holds %u\n",
			mq_null_inflight(r->dev));
}

/* Wait for the workers; fail (without joining) if completions stop. */
static void run_wait(struct run *r)
{
	uint64_t last = atomic_load(&r->completed);
	uint64_t since = mq_clock_real_ns();

	while (atomic_load(&r->workers_done) < NR_WORKERS) {
		uint64_t now = mq_clock_real_ns(), c;

		sleep_us(20000);
		c = atomic_load(&r->completed);
		if (c != last) {
			last = c;
			since = now;
		} else if (now - since > STALL_NS) {
			dump_state(r);
			ck_abort_msg("seed %#" PRIx64 ": no completion for %llu s "
				     "(deadlock or lost wakeup), see stderr",
				     r->seed, STALL_NS / 1000000000ull);
		}
	}
}

static void run_go(struct run *r)
{
	for (unsigned i = 0; i < NR_WORKERS; i++)
		ck_assert_int_eq(pthread_create(&r->w[i].thr, NULL,
						worker_main, &r->w[i]), 0);
	ck_assert_int_eq(pthread_create(&r->ctl, NULL, controller_main, r),
			 0);
	run_wait(r);
	for (unsigned i = 0; i < NR_WORKERS; i++)
		pthread_join(r->w[i].thr, NULL);
	atomic_store(&r->stop, true);
	pthread_join(r->ctl, NULL);
}

/* ---- final checks ---------------------------------------------------- */

static void check_bios(struct run *r)
{
	ck_assert_msg(run_nerr(r) == 0, "%lu errors, first: %s", run_nerr(r),
		      r->err);
	for (unsigned i = 0; i < NR_WORKERS; i++) {
		struct worker *w = &r->w[i];

		ck_assert_msg(w->issued == w->nr_bios && w->reaped == w->issued,
			      "seed %#" PRIx64 ": thread %u issued %u reaped %u of %u",
			      r->seed, i, w->issued, w->reaped, w->nr_bios);
		for (unsigned b = 0; b < w->issued; b++)
			ck_assert_msg(atomic_load(&w->bios[b].done) == 1 &&
				      w->bios[b].status == 0,
				      "seed %#" PRIx64 ": thread %u bio %u done %d status %d",
				      r->seed, i, b,
				      atomic_load(&w->bios[b].done),
				      w->bios[b].status);
	}
	ck_assert_msg(atomic_load(&r->completed) == atomic_load(&r->submitted),
		      "seed %#" PRIx64 ": completed %lu submitted %lu", r->seed,
		      atomic_load(&r->completed), atomic_load(&r->submitted));
}

static void check_tags(struct run *r)
{
	struct mq_queue *q = r->q;

	for (unsigned i = 0; i < q->nr_hw_queues; i++) {
		struct mq_hw_queue *h = q->hctxs[i];

		ck_assert_msg(mq_sbitmap_weight(&h->tags->bitmap.sb) == 0,
			      "seed %#" PRIx64 ": hctx %u driver tags %u", r->seed,
			      i, mq_sbitmap_weight(&h->tags->bitmap.sb));
		ck_assert_msg((h->sched_tags != NULL) == (h->elevator != NULL),
			      "seed %#" PRIx64 ": sched_tags without elevator",
			      r->seed);
		if (h->sched_tags)
			ck_assert_msg(!mq_sbitmap_weight(&h->sched_tags->bitmap.sb),
				      "seed %#" PRIx64 ": hctx %u sched tags %u",
				      r->seed, i,
				      mq_sbitmap_weight(&h->sched_tags->bitmap.sb));
		ck_assert_msg(atomic_load(&h->nr_dispatch) == 0 &&
			      mq_list_empty(&h->dispatch),
			      "seed %#" PRIx64 ": hctx %u dispatch list not empty",
			      r->seed, i);
	}
	for (unsigned i = 0; i < MQ_NR_CTX; i++)
		ck_assert_msg(atomic_load(&q->ctxs[i].usage) == 0,
			      "seed %#" PRIx64 ": ctx %u usage %ld", r->seed, i,
			      atomic_load(&q->ctxs[i].usage));
}

static void check_stats(struct run *r)
{
	struct mq_queue_stats s;

	ck_assert_int_eq(mq_queue_get_stats(r->q, -1, &s), 0);
	ck_assert_msg(s.in_flight == 0, "seed %#" PRIx64 ": in_flight %" PRIu64,
		      r->seed, s.in_flight);
	for (int d = 0; d < MQ_DIR_COUNT; d++)
		ck_assert_msg(s.dispatched[d] == s.ios[d],
			      "seed %#" PRIx64 ": dir %d dispatched %" PRIu64
			      " ios %" PRIu64, r->seed, d, s.dispatched[d],
			      s.ios[d]);
	ck_assert_msg(s.bios[MQ_DIR_READ] + s.bios[MQ_DIR_WRITE] ==
		      atomic_load(&r->submitted),
		      "seed %#" PRIx64 ": stats bios %" PRIu64 " submitted %lu",
		      r->seed, s.bios[MQ_DIR_READ] + s.bios[MQ_DIR_WRITE],
		      atomic_load(&r->submitted));
	ck_assert_msg(s.errors == 0, "seed %#" PRIx64 ": %" PRIu64 " errors",
		      r->seed, s.errors);
}

static void check_deadline(struct run *r)
{
	static const char *const prio[] = { "RT", "BE", "IDLE" };
	uint64_t st[3][4];

	if (!t_dd_stats(r->q, st))
		return;
	for (int p = 0; p < 3; p++)
		ck_assert_msg(st[p][0] == st[p][3],
			      "seed %#" PRIx64 ": mq-deadline %s inserted %" PRIu64
			      " completed %" PRIu64, r->seed, prio[p], st[p][0],
			      st[p][3]);
}

/* The device memory holds exactly the last write of every sector. */
static void check_ram_data(struct run *r)
{
	const unsigned char *data = mq_ram_data(r->dev);

	for (unsigned i = 0; i < NR_WORKERS; i++) {
		struct worker *w = &r->w[i];

		for (uint64_t rel = 0; rel < RAM_REGION; rel++) {
			uint64_t sector = w->base + rel;

			ck_assert_msg(!pat_check(data + sector * MQ_SECTOR_SIZE,
						 w->id, w->sect_seq[rel], sector),
				      "seed %#" PRIx64 ": sector %" PRIu64
				      " lost write seq %u", r->seed, sector,
				      w->sect_seq[rel]);
		}
	}
}

static void run_check(struct run *r)
{
	check_bios(r);
	mq_queue_drain(r->q);
	check_tags(r);
	check_stats(r);
	check_deadline(r);
	if (r->ram)
		check_ram_data(r);
	ck_assert_msg(atomic_load(&r->switches) > 0,
		      "seed %#" PRIx64 ": no elevator switch happened", r->seed);
}

static void run_one(uint64_t seed, bool ram)
{
	struct run *r = run_new(seed, ram);

	run_go(r);
	run_check(r);
	fprintf(stderr, "stress %s seed %#" PRIx64 ": lat %u us depth %u hwq %u, "
		"%lu bios, %lu switches, %lu tunes\n", ram ? "ram" : "null",
		seed, ram ? 0 : r->latency_us, r->depth, r->hw_queues,
		atomic_load(&r->submitted), atomic_load(&r->switches),
		atomic_load(&r->tunes));
	run_free(r);
}

/* ---- tests ----------------------------------------------------------- */

START_TEST(test_stress_null_timer)
{
	run_one(base_seed() + (uint64_t)_i, false);
}
END_TEST

START_TEST(test_stress_ram)
{
	run_one(base_seed() + 0x100 + (uint64_t)_i, true);
}
END_TEST

static Suite *stress_suite(void)
{
	Suite *s = suite_create("stress");
	TCase *c = tcase_create("null_timer");

	tcase_set_timeout(c, 240);
	tcase_add_loop_test(c, test_stress_null_timer, 0, NR_NULL_RUNS);
	suite_add_tcase(s, c);
	c = tcase_create("ram");
	tcase_set_timeout(c, 240);
	tcase_add_loop_test(c, test_stress_ram, 0, NR_RAM_RUNS);
	suite_add_tcase(s, c);
	return s;
}

T_MAIN(stress_suite)
