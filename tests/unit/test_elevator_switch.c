/* SPDX-License-Identifier: MIT */
/*
 * test_elevator_switch.c - Check unit tests for the live elevator switch
 * and the queue's tunables (sched/queue.c, sched/sysfs.c, sched/elevator.c
 * with sched/mq-deadline.c), driven through the public queue API.
 *
 * Covered: switching none <-> mq-deadline on an idle queue, the alias
 * "deadline", unknown names (-EINVAL, nothing changes) and the
 * "scheduler" attribute that follows the switch; a switch started from
 * another thread while requests are in flight and queued in the elevator
 * on a null device in MANUAL mode (fake clock): the switch must drain,
 * i.e. not finish while some requests are still outstanding, a bio
 * submitted during the switch must wait for it and then go through the
 * new elevator; a switch while another thread's plug holds requests and
 * preallocated ones (no deadlock); requests mq-deadline holds back (a
 * lower priority behind one in flight, reads after read_expire was
 * lowered) are not stranded and do not hang a switch; data written
 * through mq-deadline on a ram device survives switches and reads back
 * byte for byte; mq-deadline tunables accept valid values, reject bad
 * ones with -EINVAL and stay unchanged, the queue's own attributes are
 * read-only, the elevator's attributes vanish with "none" (-ENOENT) and
 * come back with their defaults.
 * Deterministic: progress is awaited by polling state, never by sleeping;
 * waits that could hang on a bug are bounded in real time and fail.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
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

enum { ST_INS, ST_MERGED, ST_DISP, ST_DONE };
enum { P_RT, P_BE, P_IDLE };

#define T0		(1000ull * 1000000000ull)	/* fake clock: 1000 s */
#define LAT		1000000ull			/* device latency 1 ms */
#define QD		4				/* driver tags */
#define SPIN_MAX	20000000ul			/* polls before giving up */
#define NR_TB		16
#define RAM_SIZE	(1u << 20)

/* A bio with its own completion record. */
struct tbio {
	struct mq_bio bio;
	atomic_int done;
	int status;
};

static struct mq_dev *dev;
static struct mq_queue *q;
static struct tbio tbs[NR_TB];

/* ---- helpers --------------------------------------------------------- */

static void tb_end_io(struct mq_bio *bio)
{
	struct tbio *tb = mq_container_of(bio, struct tbio, bio);

	tb->status = bio->status;
	atomic_fetch_add(&tb->done, 1);
}

/* A 4 KiB read at slot @i: slots are far apart, so nothing merges. */
static void tb_read_prio(unsigned i, enum mq_prio_class prio)
{
	struct tbio *tb = &tbs[i];

	memset(tb, 0, sizeof(*tb));
	mq_bio_init(&tb->bio, MQ_OP_READ, (uint64_t)i * 1024, NULL, 4096,
		    tb_end_io, NULL);
	tb->bio.prio_class = prio;
	mq_submit_bio(q, &tb->bio);
}

static void tb_read(unsigned i)
{
	tb_read_prio(i, MQ_PRIO_NONE);
}

static unsigned tb_count_done(unsigned from, unsigned to)
{
	unsigned n = 0;

	for (unsigned i = from; i < to; i++) {
		int d = atomic_load(&tbs[i].done);

		ck_assert_int_le(d, 1);
		ck_assert_int_eq(tbs[i].status, 0);
		n += (unsigned)d;
	}
	return n;
}

static struct mq_queue *new_queue(const char *elv)
{
	struct mq_queue_config cfg = { .elevator = elv, .queue_depth = QD };
	struct mq_queue *nq = t_queue_new(dev, &cfg);

	ck_assert_ptr_nonnull(nq);
	return nq;
}

static void open_null_manual(const char *elv)
{
	struct mq_null_config nc = { .latency_ns = LAT, .queue_depth = QD,
				     .irqmode = MQ_NULL_IRQ_MANUAL };

	dev = t_dev_null(&nc);
	ck_assert_ptr_nonnull(dev);
	q = new_queue(elv);
}

/* Advance the fake clock and complete until bios [from, to) are done. */
static void complete_until_done(unsigned from, unsigned to)
{
	unsigned long spins = 0;

	while (tb_count_done(from, to) < to - from) {
		mq_clock_fake_advance(LAT);
		if (!mq_null_complete_due(dev))
			sched_yield();
		ck_assert_uint_lt(++spins, SPIN_MAX);
	}
}

static void spin_until_frozen(void)
{
	unsigned long spins = 0;

	while (!atomic_load(&q->frozen)) {
		sched_yield();
		ck_assert_uint_lt(++spins, SPIN_MAX);
	}
}

static void spin_until_inflight(unsigned n)
{
	unsigned long spins = 0;

	while (mq_null_inflight(dev) != n) {
		sched_yield();
		ck_assert_uint_lt(++spins, SPIN_MAX);
	}
}

static void show(const char *attr, char *buf, size_t len)
{
	ck_assert_int_eq(mq_queue_attr_show(q, attr, buf, len), 0);
}

static void assert_attr(const char *attr, const char *want)
{
	char buf[128];

	show(attr, buf, sizeof(buf));
	ck_assert_msg(!strcmp(buf, want), "%s: \"%s\", want \"%s\"", attr,
		      buf, want);
}

static void assert_elevator(const char *name, const char *sched_attr)
{
	ck_assert_str_eq(mq_queue_elevator_name(q), name);
	assert_attr("scheduler", sched_attr);
	if (strcmp(name, "none")) {
		ck_assert_ptr_nonnull(q->hctxs[0]->elevator);
		ck_assert_ptr_nonnull(q->hctxs[0]->sched_tags);
	} else {
		ck_assert_ptr_null(q->hctxs[0]->elevator);
		ck_assert_ptr_null(q->hctxs[0]->sched_tags);
	}
}

static void dd_stats(uint64_t st[3][4])
{
	ck_assert(t_dd_stats(q, st));
}

static void assert_stats_balanced(uint64_t reads)
{
	struct mq_queue_stats s;

	ck_assert_int_eq(mq_queue_get_stats(q, -1, &s), 0);
	ck_assert_uint_eq(s.in_flight, 0);
	ck_assert_uint_eq(s.ios[MQ_DIR_READ], reads);
	ck_assert_uint_eq(s.dispatched[MQ_DIR_READ], reads);
	ck_assert_uint_eq(s.dispatched[MQ_DIR_WRITE], s.ios[MQ_DIR_WRITE]);
	ck_assert_uint_eq(s.errors, 0);
}

/* ---- threads --------------------------------------------------------- */

struct switch_arg {
	pthread_t thr;
	const char *name;
	int ret;
};

static void *switch_main(void *p)
{
	struct switch_arg *a = p;

	a->ret = mq_queue_switch_elevator(q, a->name);
	return NULL;
}

static void switch_start(struct switch_arg *a, const char *name)
{
	a->name = name;
	a->ret = -1;
	ck_assert_int_eq(pthread_create(&a->thr, NULL, switch_main, a), 0);
}

static void *submit_main(void *p)
{
	tb_read((unsigned)(uintptr_t)p);
	return NULL;
}

static pthread_t submit_start(unsigned i)
{
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, submit_main,
					(void *)(uintptr_t)i), 0);
	return t;
}

static void join(pthread_t t)
{
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}

/* Join a switch that must finish: fail instead of hanging. */
static void join_switch(struct switch_arg *a)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	ck_assert_msg(pthread_timedjoin_np(a->thr, NULL, &ts) == 0,
		      "switch to %s never finished", a->name);
	ck_assert_int_eq(a->ret, 0);
}

/* ---- fixtures -------------------------------------------------------- */

static void setup(void)
{
	dev = NULL;
	q = NULL;
	memset(tbs, 0, sizeof(tbs));
	mq_clock_fake_start(T0);
}

static void teardown(void)
{
	if (q)
		mq_queue_destroy(q);
	if (dev)
		mq_dev_close(dev);
	q = NULL;
	dev = NULL;
	mq_clock_fake_stop();
}

/* ---- idle switches --------------------------------------------------- */

START_TEST(test_idle_switch)
{
	open_null_manual("none");
	assert_elevator("none", "[none] mq-deadline");
	ck_assert_int_eq(mq_queue_switch_elevator(q, "mq-deadline"), 0);
	assert_elevator("mq-deadline", "none [mq-deadline]");
	ck_assert_int_eq(mq_queue_switch_elevator(q, "none"), 0);
	assert_elevator("none", "[none] mq-deadline");
	/* The queue still works after the round trip. */
	tb_read(0);
	complete_until_done(0, 1);
	assert_stats_balanced(1);
}
END_TEST

START_TEST(test_alias_and_newline)
{
	open_null_manual("none");
	ck_assert_int_eq(mq_queue_switch_elevator(q, "deadline"), 0);
	assert_elevator("mq-deadline", "none [mq-deadline]");
	ck_assert_int_eq(mq_queue_switch_elevator(q, "none\n"), 0);
	assert_elevator("none", "[none] mq-deadline");
	/* sysfs style: echo mq-deadline > scheduler */
	ck_assert_int_eq(mq_queue_attr_store(q, "scheduler", "mq-deadline\n"),
			 0);
	assert_elevator("mq-deadline", "none [mq-deadline]");
	ck_assert_int_eq(mq_queue_attr_store(q, "scheduler", "none"), 0);
	assert_elevator("none", "[none] mq-deadline");
}
END_TEST

static const char *const bad_names[] = {
	"bfq", "kyber", "", "mq-deadlin", "Deadline", "mq-deadline-x",
	"a-name-much-longer-than-any-elevator-name",
};

START_TEST(test_unknown_name)
{
	open_null_manual("mq-deadline");
	ck_assert_int_eq(mq_queue_attr_store(q, "read_expire", "123"), 0);
	for (size_t i = 0; i < MQ_ARRAY_SIZE(bad_names); i++) {
		ck_assert_int_eq(mq_queue_switch_elevator(q, bad_names[i]),
				 -EINVAL);
		ck_assert_int_eq(mq_queue_attr_store(q, "scheduler",
						     bad_names[i]), -EINVAL);
	}
	/* Same instance: the tunable kept its value, nothing re-attached. */
	assert_elevator("mq-deadline", "none [mq-deadline]");
	assert_attr("read_expire", "123");
	ck_assert_int_eq(mq_queue_switch_elevator(q, "none"), 0);
	ck_assert_int_eq(mq_queue_switch_elevator(q, "bfq"), -EINVAL);
	assert_elevator("none", "[none] mq-deadline");
}
END_TEST

START_TEST(test_create_unknown_elevator)
{
	struct mq_queue_config cfg = { .elevator = "bfq" };
	struct mq_null_config nc = { .irqmode = MQ_NULL_IRQ_MANUAL };

	dev = t_dev_null(&nc);
	ck_assert_ptr_nonnull(dev);
	ck_assert_int_eq(mq_queue_create(dev, &cfg, &q), -EINVAL);
	ck_assert_ptr_null(q);
	cfg.elevator = NULL;		/* default: mq-deadline */
	q = t_queue_new(dev, &cfg);
	ck_assert_ptr_nonnull(q);
	assert_elevator("mq-deadline", "none [mq-deadline]");
}
END_TEST

/* A driver whose ops table lacks a required op gets no queue. */
START_TEST(test_create_incomplete_driver)
{
	struct mq_queue_config cfg = { .elevator = "none" };
	struct mq_null_config nc = { .irqmode = MQ_NULL_IRQ_MANUAL };
	const struct mq_dev_ops *real;
	struct mq_dev_ops broken;

	dev = t_dev_null(&nc);
	ck_assert_ptr_nonnull(dev);
	real = dev->ops;
	ck_assert_int_eq(mq_dev_check_ops(dev), 0);
	broken = *real;
	broken.queue_rq = NULL;
	dev->ops = &broken;
	ck_assert_int_eq(mq_dev_check_ops(dev), -EINVAL);
	ck_assert_int_eq(mq_queue_create(dev, &cfg, &q), -EINVAL);
	broken = *real;
	broken.poll = NULL;
	dev->polled = true;
	ck_assert_int_eq(mq_queue_create(dev, &cfg, &q), -EINVAL);
	ck_assert_ptr_null(q);
	dev->polled = false;
	dev->ops = real;
	q = t_queue_new(dev, &cfg);
	ck_assert_ptr_nonnull(q);
}
END_TEST

/* ---- switches with I/O outstanding ----------------------------------- */

/*
 * mq-deadline -> none: QD requests in the device, QD more queued in the
 * elevator (no driver tag).  The switch waits while any is outstanding;
 * a bio submitted during the switch waits too, then bypasses the
 * (gone) elevator.
 */
START_TEST(test_switch_drains_deadline_to_none)
{
	struct switch_arg sw;
	pthread_t sub;

	open_null_manual("mq-deadline");
	for (unsigned i = 0; i < 2 * QD; i++)
		tb_read(i);
	spin_until_inflight(QD);
	ck_assert_uint_eq(tb_count_done(0, 2 * QD), 0);

	switch_start(&sw, "none");
	spin_until_frozen();
	sub = submit_start(2 * QD);
	ck_assert_int_eq(pthread_tryjoin_np(sw.thr, NULL), EBUSY);

	/* The first wave is due; the second is dispatched by the restart. */
	mq_clock_fake_advance(LAT);
	ck_assert_uint_eq(mq_null_complete_due(dev), QD);
	ck_assert_uint_eq(tb_count_done(0, 2 * QD), QD);
	ck_assert_int_eq(pthread_tryjoin_np(sw.thr, NULL), EBUSY);
	ck_assert_int_eq(pthread_tryjoin_np(sub, NULL), EBUSY);
	ck_assert(atomic_load(&q->frozen));

	complete_until_done(0, 2 * QD);
	join_switch(&sw);
	assert_elevator("none", "[none] mq-deadline");

	/* The waiting bio went straight to a driver tag. */
	join(sub);
	spin_until_inflight(1);
	ck_assert_uint_eq(mq_sbitmap_weight(&q->hctxs[0]->tags->bitmap.sb), 1);
	complete_until_done(2 * QD, 2 * QD + 1);
	assert_stats_balanced(2 * QD + 1);
}
END_TEST

/*
 * none -> mq-deadline: two waves in the device with different due times.
 * After the first wave completes the switch still waits; afterwards both
 * the bio that waited and new I/O are counted by the new mq-deadline.
 */
START_TEST(test_switch_drains_none_to_deadline)
{
	uint64_t st[3][4];
	struct switch_arg sw;
	pthread_t sub;

	open_null_manual("none");
	tb_read(0);
	tb_read(1);
	mq_clock_fake_advance(LAT / 2);
	tb_read(2);
	tb_read(3);
	ck_assert_uint_eq(mq_null_inflight(dev), 4);

	switch_start(&sw, "deadline");
	spin_until_frozen();
	sub = submit_start(4);
	mq_clock_fake_advance(LAT / 2);
	ck_assert_uint_eq(mq_null_complete_due(dev), 2);
	ck_assert_uint_eq(tb_count_done(0, 4), 2);
	ck_assert_int_eq(pthread_tryjoin_np(sw.thr, NULL), EBUSY);
	ck_assert_int_eq(pthread_tryjoin_np(sub, NULL), EBUSY);
	ck_assert_str_eq(mq_queue_elevator_name(q), "none");

	complete_until_done(0, 4);
	join_switch(&sw);
	assert_elevator("mq-deadline", "none [mq-deadline]");
	join(sub);
	complete_until_done(4, 5);
	tb_read(5);
	complete_until_done(5, 6);

	dd_stats(st);
	ck_assert_uint_eq(st[P_BE][ST_INS], 2);
	ck_assert_uint_eq(st[P_BE][ST_DISP], 2);
	ck_assert_uint_eq(st[P_BE][ST_DONE], 2);
	ck_assert_uint_eq(st[P_RT][ST_INS] + st[P_IDLE][ST_INS], 0);
	assert_stats_balanced(6);
}
END_TEST

/*
 * Complete whatever becomes due until bios [from, to) are done, for at
 * most @sec seconds of real time: for requests the elevator holds back,
 * which only a later queue run (not a completion) can dispatch.
 */
static bool complete_within(unsigned from, unsigned to, unsigned sec)
{
	uint64_t end = mq_clock_real_ns() + sec * 1000000000ull;

	while (tb_count_done(from, to) < to - from) {
		if (mq_clock_real_ns() > end)
			return false;
		mq_clock_fake_advance(LAT);
		if (!mq_null_complete_due(dev))
			sched_yield();
	}
	return true;
}

/*
 * An IDLE request waits in mq-deadline while a BE request is in flight
 * (dispatch_request refuses it).  The BE completion does not restart the
 * queue, so a later run must come from somewhere (the kernel re-runs the
 * queue after BLK_MQ_BUDGET_DELAY when the elevator had work but gave
 * nothing): otherwise it is stranded, and a switch, which drains, hangs.
 */
START_TEST(test_held_back_request_not_stranded)
{
	struct switch_arg sw;

	open_null_manual("mq-deadline");
	tb_read_prio(0, MQ_PRIO_BE);
	tb_read_prio(1, MQ_PRIO_IDLE);
	spin_until_inflight(1);
	ck_assert_uint_eq(tb_count_done(0, 2), 0);
	switch_start(&sw, "none");
	spin_until_frozen();

	mq_clock_fake_advance(LAT);
	ck_assert_uint_eq(mq_null_complete_due(dev), 1);
	ck_assert_msg(complete_within(1, 2, 10),
		      "IDLE request stranded in mq-deadline (device holds %u)",
		      mq_null_inflight(dev));
	join_switch(&sw);
	assert_elevator("none", "[none] mq-deadline");
	assert_stats_balanced(2);
}
END_TEST

/*
 * Lowering read_expire while a read is queued makes mq-deadline refuse it
 * until its (recomputed) start time (the kernel's started_after()); it
 * must still go out once that time has come, with no new submission.
 */
START_TEST(test_read_expire_lowered_while_queued)
{
	open_null_manual("mq-deadline");
	tb_read_prio(0, MQ_PRIO_BE);
	tb_read_prio(1, MQ_PRIO_BE);
	spin_until_inflight(2);
	tb_read_prio(2, MQ_PRIO_IDLE);		/* queued: BE in flight */
	ck_assert_int_eq(mq_queue_attr_store(q, "read_expire", "1"), 0);
	mq_clock_fake_advance(LAT);
	ck_assert_uint_eq(mq_null_complete_due(dev), 2);
	ck_assert_uint_eq(mq_null_inflight(dev), 0);
	ck_assert_msg(complete_within(2, 3, 10),
		      "read held back for good after read_expire was lowered");
	assert_stats_balanced(3);
}
END_TEST

/* A thread that submits under a plug, pausing while the plug holds I/O. */
struct plugger {
	pthread_t thr;
	atomic_int stage;		/* 1: plugged and paused, 2: go on */
};

static void *plugger_main(void *p)
{
	struct plugger *pl = p;
	struct mq_plug plug;

	mq_start_plug(&plug, 8);	/* preallocates: cached requests */
	tb_read(0);
	tb_read(1);
	atomic_store(&pl->stage, 1);
	while (atomic_load(&pl->stage) != 2)
		sched_yield();
	tb_read(2);			/* the queue is frozen meanwhile */
	mq_finish_plug(&plug);
	return NULL;
}

/*
 * A switch starts while another thread's plug holds requests and cached
 * (preallocated) ones, each with a queue usage reference.  When that
 * thread submits again it finds the queue frozen: it must give its plug
 * up before it waits (the kernel flushes the plug when a task sleeps), or
 * the switch waits for it and it for the switch, for ever.
 */
START_TEST(test_switch_with_plugged_requests)
{
	const char *from = _i ? "none" : "mq-deadline";
	struct plugger pl = { 0 };
	struct switch_arg sw;

	open_null_manual(from);
	ck_assert_int_eq(pthread_create(&pl.thr, NULL, plugger_main, &pl), 0);
	while (atomic_load(&pl.stage) != 1)
		sched_yield();
	ck_assert_uint_eq(mq_null_inflight(dev), 0);
	switch_start(&sw, _i ? "mq-deadline" : "none");
	spin_until_frozen();
	atomic_store(&pl.stage, 2);

	ck_assert_msg(complete_within(0, 2, 10),
		      "plugged requests never issued: switch deadlocked");
	join_switch(&sw);
	join(pl.thr);
	ck_assert_msg(complete_within(2, 3, 10), "bio after the switch lost");
	assert_elevator(_i ? "mq-deadline" : "none", _i ? "none [mq-deadline]"
							: "[none] mq-deadline");
	assert_stats_balanced(3);
}
END_TEST

/* A switch that finds nothing in flight returns at once, repeatedly. */
START_TEST(test_switch_back_and_forth_with_io)
{
	open_null_manual("none");
	for (unsigned i = 0; i < NR_TB; i++) {
		ck_assert_int_eq(mq_queue_switch_elevator(q, i % 2 ?
				 "none" : "mq-deadline"), 0);
		tb_read(i);
		complete_until_done(i, i + 1);
	}
	assert_elevator("none", "[none] mq-deadline");
	assert_stats_balanced(NR_TB);
}
END_TEST

/* ---- data survives switches (ram device) ----------------------------- */

#define RAM_BIO		(8u * 1024)
#define RAM_NR_BIO	(RAM_SIZE / 2 / RAM_BIO)

static struct tbio ram_tbs[RAM_NR_BIO];

static void fill_pattern(unsigned char *buf, size_t len, unsigned gen)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)((i * 31 + gen * 7 + (i >> 9)) ^ gen);
}

/* Submit one bio per RAM_BIO chunk of @buf, plugged so they merge. */
static void ram_io(enum mq_op op, unsigned char *buf)
{
	struct mq_plug plug;

	mq_start_plug(&plug, 16);
	for (unsigned i = 0; i < RAM_NR_BIO; i++) {
		struct tbio *tb = &ram_tbs[i];

		memset(tb, 0, sizeof(*tb));
		mq_bio_init(&tb->bio, op, (uint64_t)i * (RAM_BIO >> 9),
			    buf + (size_t)i * RAM_BIO, RAM_BIO, tb_end_io,
			    NULL);
		mq_submit_bio(q, &tb->bio);
	}
	mq_finish_plug(&plug);
	mq_queue_drain(q);
	for (unsigned i = 0; i < RAM_NR_BIO; i++) {
		ck_assert_int_eq(atomic_load(&ram_tbs[i].done), 1);
		ck_assert_int_eq(ram_tbs[i].status, 0);
	}
}

static void ram_check(const unsigned char *want, unsigned char *rbuf)
{
	size_t len = (size_t)RAM_NR_BIO * RAM_BIO;

	ck_assert(!memcmp(mq_ram_data(dev), want, len));
	memset(rbuf, 0xa5, len);
	ram_io(MQ_OP_READ, rbuf);
	ck_assert(!memcmp(rbuf, want, len));
}

START_TEST(test_ram_data_across_switches)
{
	size_t len = (size_t)RAM_NR_BIO * RAM_BIO;
	unsigned char *wbuf = malloc(len), *rbuf = malloc(len);
	struct mq_queue_config cfg = { .elevator = "mq-deadline" };
	struct mq_queue_stats s;

	ck_assert(wbuf && rbuf);
	dev = t_dev_ram(RAM_SIZE, 16);
	ck_assert_ptr_nonnull(dev);
	q = t_queue_new(dev, &cfg);
	ck_assert_ptr_nonnull(q);

	fill_pattern(wbuf, len, 1);
	ram_io(MQ_OP_WRITE, wbuf);
	ck_assert_int_eq(mq_queue_switch_elevator(q, "none"), 0);
	ram_check(wbuf, rbuf);
	ck_assert_int_eq(mq_queue_switch_elevator(q, "mq-deadline"), 0);
	fill_pattern(wbuf, len, 2);
	ram_io(MQ_OP_WRITE, wbuf);
	ram_check(wbuf, rbuf);
	ck_assert_int_eq(mq_queue_switch_elevator(q, "none"), 0);
	ram_check(wbuf, rbuf);

	ck_assert_int_eq(mq_queue_get_stats(q, -1, &s), 0);
	ck_assert_uint_eq(s.in_flight, 0);
	ck_assert_uint_eq(s.bios[MQ_DIR_WRITE], 2 * RAM_NR_BIO);
	ck_assert_uint_eq(s.bios[MQ_DIR_READ], 3 * RAM_NR_BIO);
	ck_assert_uint_eq(s.errors, 0);
	ck_assert_uint_gt(s.merges[MQ_DIR_WRITE] + s.merges[MQ_DIR_READ], 0);
	free(wbuf);
	free(rbuf);
}
END_TEST

/* ---- tunables -------------------------------------------------------- */

struct dd_default {
	const char *name, *value;
};

static const struct dd_default dd_defaults[] = {
	{ "read_expire", "500" },	{ "write_expire", "5000" },
	{ "writes_starved", "2" },	{ "front_merges", "1" },
	{ "fifo_batch", "16" },		{ "async_depth", "8" },
	{ "prio_aging_expire", "10000" },	{ "idle_depth", "1" },
};

static void assert_dd_defaults(void)
{
	for (size_t i = 0; i < MQ_ARRAY_SIZE(dd_defaults); i++)
		assert_attr(dd_defaults[i].name, dd_defaults[i].value);
}

struct store_case {
	const char *attr, *value;
	int ret;
	const char *shown;	/* afterwards */
};

static const struct store_case store_cases[] = {
	{ "read_expire", "250", 0, "250" },
	{ "read_expire", "0", 0, "0" },
	{ "read_expire", "300\n", 0, "300" },
	{ "read_expire", "-1", -EINVAL, "300" },
	{ "read_expire", "abc", -EINVAL, "300" },
	{ "read_expire", "", -EINVAL, "300" },
	{ "read_expire", "12abc", -EINVAL, "300" },
	{ "read_expire", "2147483648", -EINVAL, "300" },
	{ "read_expire", "99999999999999999999", -EINVAL, "300" },
	{ "write_expire", "1000", 0, "1000" },
	{ "write_expire", "-5", -EINVAL, "1000" },
	{ "fifo_batch", "1", 0, "1" },
	{ "fifo_batch", "64", 0, "64" },
	{ "fifo_batch", "-1", -EINVAL, "64" },
	{ "fifo_batch", "x", -EINVAL, "64" },
	{ "writes_starved", "5", 0, "5" },
	{ "writes_starved", "-3", 0, "-3" },
	{ "writes_starved", "2147483648", -EINVAL, "-3" },
	{ "writes_starved", "1.5", -EINVAL, "-3" },
	{ "front_merges", "0", 0, "0" },
	{ "front_merges", "2", -EINVAL, "0" },
	{ "async_depth", "3", 0, "3" },
	{ "async_depth", "0", -EINVAL, "3" },
	{ "prio_aging_expire", "20", 0, "20" },
	{ "prio_aging_expire", "-20", -EINVAL, "20" },
};

START_TEST(test_deadline_tunables)
{
	open_null_manual("mq-deadline");
	assert_dd_defaults();
	for (size_t i = 0; i < MQ_ARRAY_SIZE(store_cases); i++) {
		const struct store_case *c = &store_cases[i];

		ck_assert_msg(mq_queue_attr_store(q, c->attr, c->value) ==
			      c->ret, "store %s=\"%s\": want %d", c->attr,
			      c->value, c->ret);
		assert_attr(c->attr, c->shown);
	}
	ck_assert_int_eq(mq_queue_attr_store(q, "no_such_attr", "1"),
			 -ENOENT);
	/* The queue still runs with the odd values (fifo_batch 64 etc.). */
	tb_read(0);
	complete_until_done(0, 1);
}
END_TEST

START_TEST(test_readonly_queue_attrs)
{
	static const char *const ro[] = {
		"queue_depth", "nr_hw_queues", "max_sectors_kb", "nomerges",
	};

	open_null_manual("mq-deadline");
	for (size_t i = 0; i < MQ_ARRAY_SIZE(ro); i++) {
		char before[64], after[64];

		show(ro[i], before, sizeof(before));
		ck_assert_msg(mq_queue_attr_store(q, ro[i], "7") < 0,
			      "%s accepted a store", ro[i]);
		show(ro[i], after, sizeof(after));
		ck_assert_str_eq(before, after);
	}
	assert_attr("nr_requests", "8");
	assert_attr("queue_depth", "4");
	assert_attr("nr_hw_queues", "1");
	assert_attr("max_sectors_kb", "512");
	assert_attr("nomerges", "0");
}
END_TEST

/* nr_requests is writable: scheduler tags reallocated, async_depth reset. */
START_TEST(test_nr_requests_store)
{
	static const char *const bad[] = { "0", "3", "-8", "abc", "", "99999999" };

	open_null_manual("mq-deadline");
	ck_assert_int_eq(mq_queue_attr_store(q, "async_depth", "5"), 0);
	ck_assert_int_eq(mq_queue_attr_store(q, "nr_requests", "32\n"), 0);
	assert_attr("nr_requests", "32");
	assert_attr("async_depth", "32");
	ck_assert_uint_eq(q->hctxs[0]->sched_tags->depth, 32);
	for (size_t i = 0; i < MQ_ARRAY_SIZE(bad); i++)
		ck_assert_msg(mq_queue_attr_store(q, "nr_requests", bad[i]) ==
			      -EINVAL, "nr_requests took '%s'", bad[i]);
	assert_attr("nr_requests", "32");
	/* A new elevator gets the stored depth. */
	ck_assert_int_eq(mq_queue_switch_elevator(q, "none"), 0);
	ck_assert_int_eq(mq_queue_switch_elevator(q, "mq-deadline"), 0);
	ck_assert_uint_eq(q->hctxs[0]->sched_tags->depth, 32);
	assert_attr("async_depth", "32");
}
END_TEST

/*
 * A shallow async_depth shrinks the scheduler tags' wake batch (the
 * kernel's min_shallow_depth), so throttled writers are woken in batches
 * they can use; raising it back restores the batch.
 */
static unsigned sched_wake_batch(void)
{
	return __atomic_load_n(&q->hctxs[0]->sched_tags->bitmap.wake_batch,
			       __ATOMIC_RELAXED);
}

START_TEST(test_async_depth_wake_batch)
{
	unsigned full;

	open_null_manual("mq-deadline");
	ck_assert_int_eq(mq_queue_attr_store(q, "nr_requests", "64"), 0);
	full = sched_wake_batch();
	ck_assert_uint_eq(full, 8);
	ck_assert_int_eq(mq_queue_attr_store(q, "async_depth", "2"), 0);
	ck_assert_uint_lt(sched_wake_batch(), full);
	ck_assert_int_eq(mq_queue_attr_store(q, "async_depth", "64"), 0);
	ck_assert_uint_eq(sched_wake_batch(), full);
}
END_TEST

START_TEST(test_attrs_vanish_with_none)
{
	char buf[64];

	open_null_manual("mq-deadline");
	ck_assert_int_eq(mq_queue_attr_store(q, "fifo_batch", "3"), 0);
	ck_assert_int_eq(mq_queue_attr_store(q, "read_expire", "42"), 0);
	ck_assert_int_eq(mq_queue_switch_elevator(q, "none"), 0);
	for (size_t i = 0; i < MQ_ARRAY_SIZE(dd_defaults); i++) {
		const char *n = dd_defaults[i].name;

		ck_assert_int_eq(mq_queue_attr_show(q, n, buf, sizeof(buf)),
				 -ENOENT);
		ck_assert_int_eq(mq_queue_attr_store(q, n, "1"), -ENOENT);
	}
	/* Queue attributes stay. */
	assert_attr("queue_depth", "4");
	ck_assert_int_eq(mq_queue_switch_elevator(q, "mq-deadline"), 0);
	assert_dd_defaults();
}
END_TEST

static bool names_have(const char **names, int n, const char *want)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], want))
			return true;
	return false;
}

START_TEST(test_attr_list)
{
	static const char *const qattrs[] = {
		"scheduler", "nr_requests", "queue_depth", "nr_hw_queues",
		"max_sectors_kb", "nomerges", "complete_delay_us", "driver",
	};
	const char *names[32];
	int n;

	open_null_manual("none");
	/* The device's driver, read-only. */
	assert_attr("driver", "null");
	ck_assert_int_eq(mq_queue_attr_store(q, "driver", "ram"), -EACCES);
	n = mq_queue_attr_list(q, names, MQ_ARRAY_SIZE(names));
	ck_assert_int_eq(n, (int)MQ_ARRAY_SIZE(qattrs));
	for (size_t i = 0; i < MQ_ARRAY_SIZE(qattrs); i++)
		ck_assert(names_have(names, n, qattrs[i]));
	ck_assert(!names_have(names, n, "read_expire"));

	ck_assert_int_eq(mq_queue_switch_elevator(q, "mq-deadline"), 0);
	n = mq_queue_attr_list(q, names, MQ_ARRAY_SIZE(names));
	ck_assert_int_eq(n, (int)(MQ_ARRAY_SIZE(qattrs) +
				  MQ_ARRAY_SIZE(dd_defaults)));
	for (size_t i = 0; i < MQ_ARRAY_SIZE(dd_defaults); i++)
		ck_assert(names_have(names, n, dd_defaults[i].name));
	/* Every listed name can be shown. */
	for (int i = 0; i < n; i++) {
		char buf[128];

		ck_assert_int_eq(mq_queue_attr_show(q, names[i], buf,
						    sizeof(buf)), 0);
	}
	/* A short array is filled, not overrun. */
	ck_assert_int_eq(mq_queue_attr_list(q, names, 3), 3);
}
END_TEST

/* ---- suite ----------------------------------------------------------- */

static TCase *new_case(Suite *s, const char *name)
{
	TCase *c = tcase_create(name);

	tcase_add_checked_fixture(c, setup, teardown);
	tcase_set_timeout(c, 60);
	suite_add_tcase(s, c);
	return c;
}

static void add_case(Suite *s, const char *name, const TTest *const *tests,
		     size_t n)
{
	TCase *c = new_case(s, name);

	for (size_t i = 0; i < n; i++)
		tcase_add_test(c, tests[i]);
}

static Suite *switch_suite(void)
{
	const TTest *const idle[] = {
		test_idle_switch, test_alias_and_newline, test_unknown_name,
		test_create_unknown_elevator, test_create_incomplete_driver,
	};
	const TTest *const busy[] = {
		test_switch_drains_deadline_to_none,
		test_switch_drains_none_to_deadline,
		test_switch_back_and_forth_with_io,
		test_held_back_request_not_stranded,
		test_read_expire_lowered_while_queued,
	};
	const TTest *const data[] = { test_ram_data_across_switches };
	const TTest *const attrs[] = {
		test_deadline_tunables, test_readonly_queue_attrs,
		test_nr_requests_store, test_async_depth_wake_batch,
		test_attrs_vanish_with_none, test_attr_list,
	};
	Suite *s = suite_create("elevator_switch");

	add_case(s, "idle", idle, MQ_ARRAY_SIZE(idle));
	add_case(s, "busy", busy, MQ_ARRAY_SIZE(busy));
	/* From mq-deadline to none, and back. */
	tcase_add_loop_test(new_case(s, "plugged"),
			    test_switch_with_plugged_requests, 0, 2);
	add_case(s, "data", data, MQ_ARRAY_SIZE(data));
	add_case(s, "attrs", attrs, MQ_ARRAY_SIZE(attrs));
	return s;
}

T_MAIN(switch_suite)
