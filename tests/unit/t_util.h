/* SPDX-License-Identifier: MIT */
/*
 * t_util.h - helpers shared by the block-layer unit tests (Check).
 *
 * Deterministic devices: the null device in MQ_NULL_IRQ_MANUAL mode with
 * the fake clock, so a request completes only when the test advances the
 * clock past the device latency and calls t_complete_due(); or the ram
 * device, which completes inside queue_rq.  A bio pool counts completions
 * per bio, so a lost or doubly completed bio is caught.  Messages of
 * t_check()/t_check_u64() name the test case and loop index set by T_BEGIN.
 *
 * Everything here is prefixed t_ / T_; the header is shared by several
 * test programs, so only add to it.
 */
#ifndef MQFS_TESTS_T_UTIL_H
#define MQFS_TESTS_T_UTIL_H

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blk_i.h"
#include "mqfs/clock.h"
#include "mqfs/mq_dev.h"
#include "mqfs/dev/null.h"
#include "t_dev.h"

#define T_MS		1000000ull
#define T_T0		(1000ull * 1000 * T_MS)	/* fake clock start: 1000 s */
#define T_LAT		(10 * T_MS)		/* null device latency (fake) */
#define T_KB		1024u
#define T_SECT_KB	2u			/* sectors per KiB */
#define T_WAIT_NS	(20ull * 1000 * T_MS)	/* real-time bound of waits */

/* The running test case and loop index, for failure messages. */
static const char *t_case mq_unused = "?";
static int t_iter mq_unused;

/* First statement of a START_TEST body. */
#define T_BEGIN()	do { t_case = __func__; t_iter = _i; } while (0)

#define t_check(cond, fmt, ...)						\
	ck_assert_msg((cond), "%s[%d]: " fmt, t_case, t_iter, ##__VA_ARGS__)

#define t_check_u64(got, want, what)					\
	do {								\
		uint64_t t_g_ = (uint64_t)(got), t_w_ = (uint64_t)(want); \
		ck_assert_msg(t_g_ == t_w_, "%s[%d]: %s = %" PRIu64	\
			      ", want %" PRIu64, t_case, t_iter, (what),	\
			      t_g_, t_w_);				\
	} while (0)

/*
 * Poll @cond (re-evaluated) until true or T_WAIT_NS of real time passed;
 * yields true if it became true.  Returns at once when @cond already holds.
 */
#define t_wait_until(cond)						\
	({								\
		uint64_t t_end_ = mq_clock_real_ns() + T_WAIT_NS;	\
		bool t_ok_;						\
		while (!(t_ok_ = (cond)) && mq_clock_real_ns() < t_end_) \
			sched_yield();					\
		t_ok_;							\
	})

/* ---- clock and devices ------------------------------------------------ */

static inline void t_clock_fake(void)
{
	mq_clock_fake_start(T_T0);
}

/* Null device, MANUAL irq mode, latency T_LAT; 0 takes the defaults. */
static inline struct mq_dev *t_null_open(unsigned queue_depth,
					 unsigned nr_hw_queues)
{
	struct mq_null_config c = {
		.latency_ns = T_LAT, .queue_depth = queue_depth,
		.nr_hw_queues = nr_hw_queues, .irqmode = MQ_NULL_IRQ_MANUAL,
	};
	struct mq_dev *dev = t_dev_null(&c);

	t_check(dev != NULL, "mq_null_open failed");
	return dev;
}

static inline struct mq_queue *t_queue_create(struct mq_dev *dev,
					      const struct mq_queue_config *cfg)
{
	struct mq_queue *q = t_queue_new(dev, cfg);

	t_check(q != NULL, "mq_queue_create failed");
	return q;
}

/* Advance the fake clock by the latency and complete what is due. */
static inline unsigned t_complete_due(struct mq_dev *dev)
{
	mq_clock_fake_advance(T_LAT);
	return mq_null_complete_due(dev);
}

/*
 * Store tunable @name = @val, then read it back into @shown: 0, the
 * store's or show's error, or -EBADMSG when it shows something else.
 */
static inline int t_attr_roundtrip(struct mq_queue *q, const char *name,
				   int val, char *shown, size_t len)
{
	char v[32];
	int ret;

	snprintf(v, sizeof(v), "%d", val);
	ret = mq_queue_attr_store(q, name, v);
	if (!ret)
		ret = mq_queue_attr_show(q, name, shown, len);
	return ret ? ret : strcmp(v, shown) ? -EBADMSG : 0;
}

/* ---- private state -------------------------------------------------- */

static inline unsigned t_driver_tags_used(struct mq_queue *q, unsigned h)
{
	return mq_sbitmap_weight(&q->hctxs[h]->tags->bitmap.sb);
}

static inline unsigned t_sched_tags_used(struct mq_queue *q, unsigned h)
{
	struct mq_tags *t = q->hctxs[h]->sched_tags;

	return t ? mq_sbitmap_weight(&t->bitmap.sb) : 0;
}

static inline unsigned t_nr_dispatch(struct mq_queue *q, unsigned h)
{
	return atomic_load(&q->hctxs[h]->nr_dispatch);
}

/* No run in progress and none pending on the worker (a snapshot). */
static inline bool t_hctx_idle(struct mq_hw_queue *hctx)
{
	bool pending;

	mq_kthread_lock(&hctx->worker);
	pending = hctx->wpending;
	mq_kthread_unlock(&hctx->worker);
	return !pending && atomic_load(&hctx->run_state) == MQ_RUN_IDLE;
}

static inline bool t_queue_idle(struct mq_queue *q)
{
	for (unsigned i = 0; i < q->nr_hw_queues; i++)
		if (!t_hctx_idle(q->hctxs[i]))
			return false;
	return true;
}

static inline struct mq_queue_stats t_stats(struct mq_queue *q, int hctx)
{
	struct mq_queue_stats s;

	t_check(mq_queue_get_stats(q, hctx, &s) == 0, "get_stats(%d)", hctx);
	return s;
}

/* ---- bio pool ------------------------------------------------------- */

struct t_bio_pool {
	unsigned nr;
	struct mq_bio *bios;
	atomic_uint *done;		/* end_io calls per bio */
	atomic_uint *order;		/* 1-based completion rank per bio */
	atomic_uint completed;		/* end_io calls in all */
	atomic_uint errors;		/* bios ended with status != 0 */
	unsigned submitted;		/* by t_submit, submitting thread only */
	size_t buf_bytes;		/* data per bio, 0: none */
	unsigned char *buf;		/* nr * buf_bytes */
};

static inline void t_end_io(struct mq_bio *bio)
{
	struct t_bio_pool *p = bio->private;
	unsigned i = (unsigned)(bio - p->bios);
	unsigned rank = atomic_fetch_add(&p->completed, 1) + 1;

	atomic_store(&p->order[i], rank);
	if (bio->status)
		atomic_fetch_add(&p->errors, 1);
	atomic_fetch_add(&p->done[i], 1);
}

/* @buf_bytes of data per bio (0: no buffers). */
static inline void t_pool_init(struct t_bio_pool *p, unsigned nr,
			       size_t buf_bytes)
{
	memset(p, 0, sizeof(*p));
	p->nr = nr;
	p->bios = calloc(nr, sizeof(*p->bios));
	p->done = calloc(nr, sizeof(*p->done));
	p->order = calloc(nr, sizeof(*p->order));
	p->buf_bytes = buf_bytes;
	if (buf_bytes)
		p->buf = calloc(nr, buf_bytes);
	t_check(p->bios && p->done && p->order && (!buf_bytes || p->buf),
		"pool allocation");
}

static inline void t_pool_free(struct t_bio_pool *p)
{
	free(p->bios);
	free((void *)p->done);
	free((void *)p->order);
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

static inline void *t_pool_buf(struct t_bio_pool *p, unsigned i)
{
	return p->buf ? p->buf + (size_t)i * p->buf_bytes : NULL;
}

/* Set up bio @i of the pool (@op at @sector, @bytes long), unsubmitted. */
static inline struct mq_bio *t_bio_prep(struct t_bio_pool *p, unsigned i,
					enum mq_op op, uint64_t sector,
					uint32_t bytes)
{
	struct mq_bio *bio;

	t_check(i < p->nr, "bio %u beyond pool of %u", i, p->nr);
	bio = &p->bios[i];
	mq_bio_init(bio, op, sector, t_pool_buf(p, i), bytes, t_end_io, p);
	return bio;
}

/* Submit a bio of the pool prepared with t_bio_prep(). */
static inline void t_submit_bio(struct mq_queue *q, struct t_bio_pool *p,
				struct mq_bio *bio)
{
	p->submitted++;
	mq_submit_bio(q, bio);
}

/* Submit bio @i of the pool: @op at @sector, @bytes long. */
static inline struct mq_bio *t_submit(struct mq_queue *q, struct t_bio_pool *p,
				      unsigned i, enum mq_op op,
				      uint64_t sector, uint32_t bytes)
{
	struct mq_bio *bio = t_bio_prep(p, i, op, sector, bytes);

	t_submit_bio(q, p, bio);
	return bio;
}

static inline unsigned t_done(struct t_bio_pool *p, unsigned i)
{
	return atomic_load(&p->done[i]);
}

/* Bios [from, to) each completed exactly once, without error. */
static inline void t_pool_check_done(struct t_bio_pool *p, unsigned from,
				     unsigned to)
{
	for (unsigned i = from; i < to; i++)
		t_check(t_done(p, i) == 1, "bio %u completed %u times", i,
			t_done(p, i));
	t_check(atomic_load(&p->errors) == 0, "%u bios failed",
		atomic_load(&p->errors));
}

/*
 * Complete everything submitted so far on a MANUAL null device: advance
 * the clock and reap until every submitted bio has ended (queue runs
 * that completions restart may issue more, possibly from the worker).
 */
static inline void t_null_finish(struct mq_queue *q, struct mq_dev *dev,
				 struct t_bio_pool *p)
{
	bool ok = t_wait_until((t_complete_due(dev),
				atomic_load(&p->completed) >= p->submitted));

	t_check(ok, "only %u of %u bios completed (device holds %u)",
		atomic_load(&p->completed), p->submitted,
		mq_null_inflight(dev));
	mq_queue_drain(q);
	t_check(t_wait_until(t_queue_idle(q)), "queue runs never settled");
}

/* The end of every test: nothing left anywhere, then tear down. */
static inline void t_teardown(struct mq_queue *q, struct mq_dev *dev)
{
	struct mq_queue_stats s = t_stats(q, -1);

	t_check_u64(s.in_flight, 0, "stats in_flight at teardown");
	for (unsigned h = 0; h < q->nr_hw_queues; h++) {
		t_check_u64(t_nr_dispatch(q, h), 0, "dispatch list at teardown");
		t_check_u64(t_driver_tags_used(q, h), 0, "driver tags at teardown");
		t_check_u64(t_sched_tags_used(q, h), 0, "sched tags at teardown");
	}
	mq_queue_destroy(q);
	mq_dev_close(dev);
}

/* mq-deadline's per-prio {inserted, merged, dispatched, completed}. */
void mq_dd_stats(struct mq_elevator *e, uint64_t out[3][4]);

/*
 * The same summed over every hardware queue's elevator instance.  False
 * (and zeros) when the queue has no elevator.
 */
static inline bool t_dd_stats(struct mq_queue *q, uint64_t st[3][4])
{
	memset(st, 0, sizeof(uint64_t) * 12);
	if (!q->elv_type)
		return false;
	for (unsigned i = 0; i < q->nr_hw_queues; i++) {
		uint64_t one[3][4];

		mq_dd_stats(q->hctxs[i]->elevator, one);
		for (int p = 0; p < 3; p++)
			for (int f = 0; f < 4; f++)
				st[p][f] += one[p][f];
	}
	return true;
}

#endif /* MQFS_TESTS_T_UTIL_H */
