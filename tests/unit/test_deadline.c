/* SPDX-License-Identifier: MIT */
/*
 * test_deadline.c - Check unit tests for the mq-deadline elevator
 * (sched/mq-deadline.c), driven the way the block layer core drives it:
 * requests are built by hand from a static pool, the elevator lock is
 * taken around insert/dispatch/merge, finish_request runs unlocked, and
 * the fake clock makes every deadline and aging decision deterministic.
 * One test case per scheduling rule; the fixture's teardown drains and
 * completes everything and checks that the balance counters agree and that
 * exit_sched has nothing to complain about.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elv_i.h"
#include "t_main.h"

/* From sched/mq-deadline.c: [RT/BE/IDLE][ins, merged, disp, done]. */
extern void mq_dd_stats(struct mq_elevator *e, uint64_t out[3][4]);

enum { ST_INS, ST_MERGED, ST_DISP, ST_DONE };
enum { P_RT, P_BE, P_IDLE };

#define NR_RQ		32
#define NR_XBIO		8
#define MS		1000000ull
#define T0		(1000ull * 1000 * MS)	/* fake clock start: 1000 s */
#define NR_REQUESTS	64

static struct mq_elevator *e;
static struct mq_request rqs[NR_RQ];
static struct mq_bio bios[NR_RQ];
static struct mq_bio xbios[NR_XBIO];	/* bios merged into requests */
static bool live[NR_RQ];		/* inserted, not yet finished */

static const struct mq_elevator_ops *ops(void)
{
	return e->type->ops;
}

static struct mq_elevator *new_elv(void)
{
	struct mq_elevator *el = mq_elv_alloc(&mq_elv_deadline, NULL,
					      NR_REQUESTS, 512 * 1024, 128,
					      false);

	ck_assert_ptr_nonnull(el);
	return el;
}

/* A request of one bio, as the core builds it from a submitted bio. */
static struct mq_request *mkrq(int i, enum mq_op op, uint64_t sector,
			       unsigned nsect, enum mq_prio_class prio)
{
	struct mq_request *rq = &rqs[i];
	struct mq_bio *bio = &bios[i];

	memset(rq, 0, sizeof(*rq));
	mq_bio_init(bio, op, sector, NULL, nsect << MQ_SECTOR_SHIFT, NULL,
		    NULL);
	bio->prio_class = prio;
	rq->bio = rq->biotail = bio;
	rq->nr_segs = 1;
	rq->nr_bytes = bio->size;
	rq->sector = sector;
	rq->op = op;
	rq->prio_class = prio;
	rq->internal_tag = i;
	rq->tag = -1;
	mq_list_init(&rq->queuelist);
	mq_hlist_node_init(&rq->hash);
	mq_rb_clear_node(&rq->rb_node);
	if (ops()->prepare_request)
		ops()->prepare_request(e, rq);
	return rq;
}

static struct mq_request *rd(int i, uint64_t sector)
{
	return mkrq(i, MQ_OP_READ, sector, 8, MQ_PRIO_NONE);
}

static struct mq_request *wr(int i, uint64_t sector)
{
	return mkrq(i, MQ_OP_WRITE, sector, 8, MQ_PRIO_NONE);
}

static struct mq_bio *xbio(int i, enum mq_op op, uint64_t sector,
			   unsigned nsect)
{
	mq_bio_init(&xbios[i], op, sector, NULL, nsect << MQ_SECTOR_SHIFT,
		    NULL, NULL);
	return &xbios[i];
}

/* Insert @n requests in one call; returns how many went to `free`. */
static int insert_arr(struct mq_request **v, int n, bool at_head,
		      struct mq_request **freed)
{
	struct mq_list_head list, free;
	struct mq_request *rq;
	int nfreed = 0;

	mq_list_init(&list);
	mq_list_init(&free);
	for (int i = 0; i < n; i++) {
		mq_list_add_tail(&v[i]->queuelist, &list);
		live[v[i]->internal_tag] = true;
	}
	pthread_mutex_lock(&e->lock);
	ops()->insert_requests(e, &list, at_head, &free);
	pthread_mutex_unlock(&e->lock);
	ck_assert(mq_list_empty(&list));
	/*
	 * Not mq_list_for_each_entry_safe: it forms a request pointer from
	 * the list head, which UBSan flags (struct mq_request is 64-aligned).
	 */
	while (!mq_list_empty(&free)) {
		rq = mq_list_first_entry(&free, struct mq_request, queuelist);
		mq_list_del_init(&rq->queuelist);
		if (freed)
			freed[nfreed] = rq;
		nfreed++;
	}
	return nfreed;
}

static int insert(struct mq_request *rq)
{
	return insert_arr(&rq, 1, false, NULL);
}

static int insert_head(struct mq_request *rq)
{
	return insert_arr(&rq, 1, true, NULL);
}

static struct mq_request *dispatch(void)
{
	struct mq_request *rq;

	pthread_mutex_lock(&e->lock);
	rq = ops()->dispatch_request(e);
	pthread_mutex_unlock(&e->lock);
	if (rq)
		ck_assert(mq_list_empty(&rq->queuelist));
	return rq;
}

/* Dispatch one request and check its start sector; returns it. */
static struct mq_request *expect_sector(uint64_t sector)
{
	struct mq_request *rq = dispatch();

	ck_assert_msg(rq != NULL, "expected sector %" PRIu64 ", got NULL",
		      sector);
	ck_assert_msg(rq->sector == sector,
		      "expected sector %" PRIu64 ", got %" PRIu64, sector,
		      rq->sector);
	return rq;
}

static void finish(struct mq_request *rq)
{
	ops()->finish_request(e, rq);
	live[rq->internal_tag] = false;
}

static bool bio_merge(struct mq_bio *bio, struct mq_request **absorbed)
{
	bool merged;

	pthread_mutex_lock(&e->lock);
	merged = mq_elv_bio_merge(e, bio, absorbed);
	pthread_mutex_unlock(&e->lock);
	return merged;
}

static void store_ok(const char *name, const char *value)
{
	ck_assert_int_eq(mq_elv_attr_store(e, name, value), 0);
}

static void show_eq(const char *name, const char *want)
{
	char buf[64];

	ck_assert_int_eq(mq_elv_attr_show(e, name, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, want);
}

/* Free @el with stderr captured; returns what exit_sched printed. */
static const char *free_capturing_stderr(struct mq_elevator *el)
{
	static char out[1024];
	FILE *tmp = tmpfile();
	int saved;
	size_t n;

	ck_assert_ptr_nonnull(tmp);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fileno(tmp), STDERR_FILENO);
	mq_elv_free(el);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, sizeof(out) - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
	return out;
}

static void setup(void)
{
	memset(rqs, 0, sizeof(rqs));
	memset(live, 0, sizeof(live));
	mq_clock_fake_start(T0);
	e = new_elv();
}

/*
 * Complete what the test left in flight or merged away, drain the rest,
 * then every level must balance and exit_sched must stay silent.
 */
static void teardown(void)
{
	uint64_t st[3][4];
	struct mq_request *rq;

	for (int i = 0; i < NR_RQ; i++)
		if (live[i] && ((rqs[i].rq_flags & MQ_RQF_STARTED) ||
				!rqs[i].bio))
			finish(&rqs[i]);
	while ((rq = dispatch()) != NULL)
		finish(rq);
	ck_assert(!ops()->has_work(e));
	for (int i = 0; i < NR_RQ; i++)
		ck_assert_msg(!live[i], "request %d never came back", i);
	mq_dd_stats(e, st);
	for (int p = 0; p < 3; p++)
		ck_assert_uint_eq(st[p][ST_INS], st[p][ST_DONE]);
	ck_assert_str_eq(free_capturing_stderr(e), "");
	e = NULL;
}

/* ---- sort order and batches ----------------------------------------- */

START_TEST(test_sector_order)
{
	insert(rd(0, 300));
	insert(rd(1, 100));
	insert(rd(2, 400));
	insert(rd(3, 200));
	insert(rd(4, 250));
	insert(rd(5, 250));	/* duplicate key: after its twin */
	ck_assert(ops()->has_work(e));

	expect_sector(100);
	expect_sector(200);
	ck_assert_ptr_eq(expect_sector(250), &rqs[4]);
	ck_assert_ptr_eq(expect_sector(250), &rqs[5]);
	expect_sector(300);
	expect_sector(400);
	ck_assert_ptr_null(dispatch());
	ck_assert(!ops()->has_work(e));
}
END_TEST

/* The batch resumes at the first request >= the last position, so
 * requests inserted mid-batch above it join, those below wait. */
START_TEST(test_batch_latest_pos)
{
	insert(rd(0, 100));
	insert(rd(1, 200));
	insert(rd(2, 300));
	expect_sector(100);
	insert(rd(3, 50));
	insert(rd(4, 150));
	expect_sector(150);
	expect_sector(200);
	expect_sector(300);
	insert(rd(5, 300));	/* exactly the last position: still ahead */
	ck_assert_ptr_eq(expect_sector(300), &rqs[5]);
	expect_sector(50);	/* scan ran dry: restart from the FIFO */
	ck_assert_ptr_null(dispatch());
}
END_TEST

/* After fifo_batch requests the direction is re-chosen; with nothing
 * expired the sector scan simply goes on. */
START_TEST(test_fifo_batch_no_expiry)
{
	store_ok("fifo_batch", "2");
	insert(rd(0, 1000));
	mq_clock_fake_advance(1 * MS);
	insert(rd(1, 10));
	insert(rd(2, 20));
	insert(rd(3, 30));
	insert(rd(4, 40));
	expect_sector(10);
	expect_sector(20);
	expect_sector(30);
	expect_sector(40);
	expect_sector(1000);
}
END_TEST

/* Expiry is noticed only when the batch ends; then the oldest goes. */
START_TEST(test_fifo_batch_expiry)
{
	store_ok("fifo_batch", "2");
	insert(rd(0, 1000));
	mq_clock_fake_advance(1 * MS);
	insert(rd(1, 10));
	insert(rd(2, 20));
	insert(rd(3, 30));
	insert(rd(4, 40));
	expect_sector(10);
	mq_clock_fake_advance(600 * MS);	/* everything expired */
	expect_sector(20);			/* mid-batch: not checked */
	expect_sector(1000);			/* batch over: FIFO head */
	expect_sector(30);	/* nothing above 1000: FIFO head again */
	expect_sector(40);
	ck_assert_ptr_null(dispatch());
}
END_TEST

/* ---- deadlines ------------------------------------------------------ */

static const struct {
	enum mq_op op;
	const char *read_expire;	/* NULL: default */
	uint64_t wait_ms;		/* after the first insert */
	uint64_t first;			/* expected first sector */
} expire_cases[] = {
	{ MQ_OP_READ, NULL, 499, 100 },
	{ MQ_OP_READ, NULL, 500, 900 },
	{ MQ_OP_WRITE, NULL, 4999, 100 },
	{ MQ_OP_WRITE, NULL, 5000, 900 },
	{ MQ_OP_READ, "100", 99, 100 },
	{ MQ_OP_READ, "100", 100, 900 },
	{ MQ_OP_WRITE, "100", 100, 100 },	/* read_expire: reads only */
};

/*
 * A primer of the other direction ends the initial batch, so the next
 * dispatch starts a batch in the tested direction and looks at the FIFO.
 */
START_TEST(test_expire)
{
	enum mq_op op = expire_cases[_i].op;
	enum mq_op other = op == MQ_OP_READ ? MQ_OP_WRITE : MQ_OP_READ;

	if (expire_cases[_i].read_expire)
		store_ok("read_expire", expire_cases[_i].read_expire);
	insert(mkrq(0, other, 5000, 8, MQ_PRIO_NONE));
	finish(expect_sector(5000));
	insert(mkrq(1, op, 900, 8, MQ_PRIO_NONE));
	mq_clock_fake_advance(1 * MS);
	insert(mkrq(2, op, 100, 8, MQ_PRIO_NONE));
	mq_clock_fake_advance((expire_cases[_i].wait_ms - 1) * MS);
	expect_sector(expire_cases[_i].first);
}
END_TEST

/* ---- direction choice ------------------------------------------------ */

static const struct {
	const char *writes_starved;
	const char *order;		/* R/W per dispatch */
} starved_cases[] = {
	{ "2", "WRRWRRWRRR" },
	{ "0", "WWWRRRRRRR" },
	{ "1", "WRWRWRRRRR" },
};

/* fifo_batch=1: every dispatch re-chooses the direction.  The very first
 * one continues the initial (write) batch. */
START_TEST(test_writes_starved)
{
	const char *order = starved_cases[_i].order;
	int r = 0, w = 0;

	store_ok("fifo_batch", "1");
	store_ok("writes_starved", starved_cases[_i].writes_starved);
	for (int i = 0; i < 7; i++)
		insert(rd(i, 100 * (i + 1)));
	for (int i = 0; i < 3; i++)
		insert(wr(7 + i, 1100 + 100 * i));
	for (size_t k = 0; k < strlen(order); k++) {
		struct mq_request *rq = dispatch();

		ck_assert_ptr_nonnull(rq);
		ck_assert_msg(mq_rq_dir(rq) == (order[k] == 'W' ?
						MQ_DIR_WRITE : MQ_DIR_READ),
			      "dispatch %zu: expected %c", k, order[k]);
		/* each direction still goes in sector order */
		if (order[k] == 'W')
			ck_assert_uint_eq(rq->sector, 1100 + 100 * w++);
		else
			ck_assert_uint_eq(rq->sector, 100 * ++r);
		finish(rq);
	}
	ck_assert_ptr_null(dispatch());
}
END_TEST

/* ---- at-head inserts ------------------------------------------------- */

START_TEST(test_at_head)
{
	struct mq_request *absorbed;

	insert(rd(0, 100));
	insert(rd(1, 200));
	insert_head(wr(2, 5000));
	insert_head(rd(3, 50));
	/* not in the merge structures */
	ck_assert(!bio_merge(xbio(0, MQ_OP_WRITE, 5008, 8), &absorbed));
	ck_assert_ptr_eq(expect_sector(50), &rqs[3]);	/* latest first */
	ck_assert_ptr_eq(expect_sector(5000), &rqs[2]);
	expect_sector(100);
	expect_sector(200);
	ck_assert_ptr_null(dispatch());
}
END_TEST

/* ---- merges ---------------------------------------------------------- */

/* A goes in first so the one-hit last_merge cache never points at B and
 * only the elevator's sort-tree lookup can find the front merge. */
START_TEST(test_front_merge)
{
	bool on = _i == 1;
	struct mq_request *absorbed = (void *)1, *b;
	struct mq_bio *bio;

	store_ok("front_merges", on ? "1" : "0");
	insert(rd(0, 1000));
	b = rd(1, 100);
	insert(b);
	insert(mkrq(2, MQ_OP_READ, 94, 2, MQ_PRIO_NONE));
	bio = xbio(0, MQ_OP_READ, 92, 8);
	ck_assert(bio_merge(bio, &absorbed) == on);
	ck_assert_ptr_null(absorbed);
	if (on) {
		ck_assert_uint_eq(b->sector, 92);
		ck_assert_uint_eq(b->nr_bytes, 16 * 512);
		ck_assert_uint_eq(b->nr_segs, 2);
		ck_assert_ptr_eq(b->bio, bio);
		/* re-keyed in the sort tree: 92 before 94 */
		ck_assert_ptr_eq(expect_sector(92), b);
		expect_sector(94);
	} else {
		ck_assert_uint_eq(b->sector, 100);
		ck_assert_uint_eq(b->nr_segs, 1);
		expect_sector(94);
		ck_assert_ptr_eq(expect_sector(100), b);
	}
	expect_sector(1000);
}
END_TEST

/* Back merges come from the core's end-sector hash, front_merges or not. */
START_TEST(test_back_merge)
{
	struct mq_request *absorbed, *b;
	struct mq_bio *bio;
	uint64_t st[3][4];

	store_ok("front_merges", "0");
	insert(rd(0, 1000));
	b = rd(1, 100);
	insert(b);
	ck_assert(!bio_merge(xbio(0, MQ_OP_WRITE, 108, 8), &absorbed));
	bio = xbio(1, MQ_OP_READ, 108, 8);
	ck_assert(bio_merge(bio, &absorbed));
	ck_assert_ptr_null(absorbed);
	ck_assert_uint_eq(b->sector, 100);
	ck_assert_uint_eq(b->nr_bytes, 16 * 512);
	ck_assert_uint_eq(b->nr_segs, 2);
	ck_assert_ptr_eq(b->biotail, bio);
	mq_dd_stats(e, st);
	ck_assert_uint_eq(st[P_BE][ST_MERGED], 0);	/* bio merges not counted */
	ck_assert_ptr_eq(expect_sector(100), b);
	expect_sector(1000);
}
END_TEST

/*
 * A bio fills the gap between A (100..108) and C (116..124): C grows
 * forward, then absorbs into A.  A keeps the older deadline (C's) and
 * C's FIFO slot, ahead of D, so after expiry A goes before lower D.
 */
START_TEST(test_merge_neighbours)
{
	struct mq_request *a, *c, *d, *absorbed = NULL;
	struct mq_bio *bio = xbio(0, MQ_OP_READ, 108, 8);
	uint64_t st[3][4];

	c = rd(2, 116);
	insert(c);
	mq_clock_fake_advance(1 * MS);
	d = rd(3, 50);
	insert(d);
	mq_clock_fake_advance(1 * MS);
	a = rd(0, 100);
	insert(a);
	ck_assert(bio_merge(bio, &absorbed));
	ck_assert_ptr_eq(absorbed, c);
	ck_assert_uint_eq(a->sector, 100);
	ck_assert_uint_eq(a->nr_bytes, 24 * 512);
	ck_assert_uint_eq(a->nr_segs, 3);
	ck_assert_ptr_eq(a->bio, &bios[0]);
	ck_assert_ptr_eq(a->bio->next, bio);
	ck_assert_ptr_eq(bio->next, &bios[2]);
	ck_assert_uint_eq(a->fifo_time, T0 + 500 * MS);
	ck_assert(mq_rb_node_empty(&c->rb_node));
	ck_assert(mq_list_empty(&c->queuelist));
	mq_dd_stats(e, st);
	ck_assert_uint_eq(st[P_BE][ST_MERGED], 1);

	mq_clock_fake_advance(600 * MS);
	ck_assert_ptr_eq(expect_sector(100), a);
	ck_assert_ptr_eq(expect_sector(50), d);
	ck_assert_ptr_null(dispatch());
}
END_TEST

START_TEST(test_insert_merge)
{
	struct mq_request *freed[4], *v[2];
	uint64_t st[3][4];

	insert(rd(0, 100));
	ck_assert_int_eq(insert_arr((struct mq_request *[]){ rd(1, 108) }, 1,
				    false, freed), 1);
	ck_assert_ptr_eq(freed[0], &rqs[1]);
	ck_assert_uint_eq(rqs[0].nr_bytes, 16 * 512);
	ck_assert_ptr_null(rqs[1].bio);
	/* within one insert call too */
	v[0] = rd(2, 200);
	v[1] = rd(3, 208);
	ck_assert_int_eq(insert_arr(v, 2, false, freed), 1);
	ck_assert_ptr_eq(freed[0], &rqs[3]);
	/* a write never joins a read */
	ck_assert_int_eq(insert(wr(4, 116)), 0);
	mq_dd_stats(e, st);
	ck_assert_uint_eq(st[P_BE][ST_INS], 5);
	ck_assert_uint_eq(st[P_BE][ST_MERGED], 2);

	/* the initial batch direction is WRITE, so the write goes first */
	ck_assert_ptr_eq(expect_sector(116), &rqs[4]);
	ck_assert_ptr_eq(expect_sector(100), &rqs[0]);
	ck_assert_ptr_eq(expect_sector(200), &rqs[2]);
	ck_assert_ptr_null(dispatch());
}
END_TEST

/* ---- priorities ------------------------------------------------------ */

/* RT, then BE (NONE counts as BE), then IDLE; a level with a request in
 * flight blocks the levels below it. */
START_TEST(test_prio_order)
{
	struct mq_request *rt, *b1, *b2;
	uint64_t st[3][4];

	insert(mkrq(0, MQ_OP_READ, 10, 8, MQ_PRIO_IDLE));
	insert(mkrq(1, MQ_OP_READ, 20, 8, MQ_PRIO_BE));
	insert(mkrq(2, MQ_OP_READ, 30, 8, MQ_PRIO_NONE));
	insert(mkrq(3, MQ_OP_READ, 40, 8, MQ_PRIO_RT));
	mq_dd_stats(e, st);
	ck_assert_uint_eq(st[P_RT][ST_INS], 1);
	ck_assert_uint_eq(st[P_BE][ST_INS], 2);
	ck_assert_uint_eq(st[P_IDLE][ST_INS], 1);

	rt = expect_sector(40);
	ck_assert_ptr_null(dispatch());		/* RT in flight */
	ck_assert(ops()->has_work(e));
	finish(rt);
	b1 = expect_sector(20);
	b2 = expect_sector(30);			/* own level: no block */
	ck_assert_ptr_null(dispatch());		/* BE in flight */
	finish(b1);
	ck_assert_ptr_null(dispatch());
	finish(b2);
	expect_sector(10);
}
END_TEST

/*
 * A reader between two requests leaves the device to IDLE for a moment:
 * only idle_depth IDLE requests may go then (10 ms after the last RT or
 * BE insert), so the reader's next one waits behind little; once the
 * others are quiet, or with idle_depth 0 (the kernel's way), all go.
 */
START_TEST(test_idle_depth)
{
	struct mq_request *b, *i1;

	for (int i = 0; i < 4; i++)
		insert(mkrq(i, MQ_OP_WRITE, 100 + 8 * (uint64_t)i * 2, 8,
			    MQ_PRIO_IDLE));
	insert(rd(4, 10));
	b = expect_sector(10);
	ck_assert_ptr_null(dispatch());		/* BE in flight */
	finish(b);
	i1 = expect_sector(100);
	ck_assert_ptr_null(dispatch());		/* held: BE was just here */
	ck_assert(ops()->has_work(e));
	finish(i1);
	expect_sector(116);
	mq_clock_fake_advance(11 * MS);		/* the reader went quiet */
	expect_sector(132);
	expect_sector(148);
	ck_assert_ptr_null(dispatch());
	/* idle_depth 0: as the kernel, IDLE fills the gap. */
	store_ok("idle_depth", "0");
	for (int i = 5; i < 8; i++)
		insert(mkrq(i, MQ_OP_WRITE, 1000 + 8 * (uint64_t)i * 2, 8,
			    MQ_PRIO_IDLE));
	insert(rd(8, 20));
	finish(expect_sector(20));
	expect_sector(1080);
	expect_sector(1096);
	expect_sector(1112);
}
END_TEST

START_TEST(test_prio_aging)
{
	struct mq_request *r;

	insert(mkrq(0, MQ_OP_READ, 100, 8, MQ_PRIO_RT));
	insert(mkrq(1, MQ_OP_READ, 200, 8, MQ_PRIO_RT));
	insert(mkrq(2, MQ_OP_READ, 300, 8, MQ_PRIO_RT));
	insert(mkrq(3, MQ_OP_READ, 50, 8, MQ_PRIO_BE));
	finish(expect_sector(100));
	mq_clock_fake_advance(9999 * MS);
	r = expect_sector(200);			/* BE not old enough */
	mq_clock_fake_advance(1 * MS);
	ck_assert_ptr_eq(expect_sector(50), &rqs[3]);	/* aged: RT busy */
	finish(r);
	expect_sector(300);
}
END_TEST

/* ---- depth, tunables ------------------------------------------------- */

static unsigned shallow(enum mq_op op)
{
	struct mq_alloc_data d = { .op = op };

	ops()->limit_depth(e, &d);
	return d.shallow_depth;
}

START_TEST(test_limit_depth)
{
	ck_assert_uint_eq(shallow(MQ_OP_READ), 0);
	ck_assert_uint_eq(shallow(MQ_OP_WRITE), 0);	/* == nr_requests */
	store_ok("async_depth", "16");
	ck_assert_uint_eq(shallow(MQ_OP_READ), 0);
	ck_assert_uint_eq(shallow(MQ_OP_WRITE), 16);
	ck_assert_uint_eq(shallow(MQ_OP_FLUSH), 16);
	ops()->depth_updated(e, 128);
	show_eq("async_depth", "128");
	ck_assert_uint_eq(shallow(MQ_OP_WRITE), 0);
	store_ok("async_depth", "100");
	ck_assert_uint_eq(shallow(MQ_OP_WRITE), 100);
}
END_TEST

START_TEST(test_tunables)
{
	static const struct { const char *name, *value; } bad[] = {
		{ "front_merges", "2" }, { "front_merges", "-1" },
		{ "fifo_batch", "-1" }, { "async_depth", "0" },
		{ "read_expire", "abc" }, { "write_expire", "-5" },
		{ "prio_aging_expire", "2147483648" }, { "fifo_batch", "" },
		{ "writes_starved", "3x" },
	};
	char buf[32];

	show_eq("read_expire", "500");
	show_eq("write_expire", "5000");
	show_eq("writes_starved", "2");
	show_eq("front_merges", "1");
	show_eq("fifo_batch", "16");
	show_eq("async_depth", "64");
	show_eq("prio_aging_expire", "10000");
	show_eq("idle_depth", "1");
	for (size_t i = 0; i < MQ_ARRAY_SIZE(bad); i++) {
		char before[32];

		ck_assert_int_eq(mq_elv_attr_show(e, bad[i].name, before,
						  sizeof(before)), 0);
		ck_assert_int_eq(mq_elv_attr_store(e, bad[i].name,
						   bad[i].value), -EINVAL);
		show_eq(bad[i].name, before);
	}
	ck_assert_int_eq(mq_elv_attr_store(e, "nope", "1"), -ENOENT);
	ck_assert_int_eq(mq_elv_attr_show(e, "nope", buf, sizeof(buf)),
			 -ENOENT);
	store_ok("read_expire", "250\n");
	show_eq("read_expire", "250");
	store_ok("writes_starved", "-5");
	show_eq("writes_starved", "-5");
	store_ok("front_merges", "0");
	show_eq("front_merges", "0");
	store_ok("prio_aging_expire", "0");
	show_eq("prio_aging_expire", "0");
	/* the stored ms reach the deadline of the next insert */
	insert(rd(0, 100));
	ck_assert_uint_eq(rqs[0].fifo_time, T0 + 250 * MS);
}
END_TEST

/* ---- balance ---------------------------------------------------------- */

/*
 * A mixed load over all levels and both directions: pairs of neighbours
 * merge at insert, a bio merge absorbs a request, a flush goes at head.
 * Everything dispatched is finished at once, as a fast device would.
 */
START_TEST(test_balance)
{
	struct mq_request *rq, *absorbed = NULL;
	uint64_t st[3][4], tot[4] = { 0 };
	int n = 0, nfreed = 0;

	for (int i = 0; i < 24; i++)
		nfreed += insert(mkrq(i, (i / 4) % 2 ? MQ_OP_WRITE : MQ_OP_READ,
				      (uint64_t)(i % 8) * 8 + (i / 8) * 1000,
				      8, (enum mq_prio_class)((i / 2) % 4)));
	ck_assert_int_eq(nfreed, 12);
	insert_head(mkrq(24, MQ_OP_FLUSH, 0, 0, MQ_PRIO_NONE));
	insert(rd(25, 9000));
	insert(rd(26, 9016));
	ck_assert(bio_merge(xbio(0, MQ_OP_READ, 9008, 8), &absorbed));
	ck_assert_ptr_eq(absorbed, &rqs[26]);
	for (int i = 0; i < NR_RQ; i++)
		if (live[i] && !rqs[i].bio)
			finish(&rqs[i]);	/* merged away: the core frees */
	/* a requeued request is inserted again but counted once */
	rq = dispatch();
	ck_assert_ptr_nonnull(rq);
	rq->rq_flags &= ~MQ_RQF_STARTED;
	insert_head(rq);
	/* a request that bypassed the elevator does not count as completed */
	ops()->finish_request(e, mkrq(27, MQ_OP_READ, 7, 8, MQ_PRIO_NONE));
	while ((rq = dispatch()) != NULL) {
		finish(rq);
		n++;
	}
	ck_assert(!ops()->has_work(e));
	mq_dd_stats(e, st);
	for (int p = 0; p < 3; p++) {
		ck_assert_uint_eq(st[p][ST_INS], st[p][ST_DONE]);
		tot[ST_INS] += st[p][ST_INS];
		tot[ST_MERGED] += st[p][ST_MERGED];
		tot[ST_DISP] += st[p][ST_DISP];
	}
	ck_assert_uint_eq(tot[ST_INS], 27);
	ck_assert_uint_eq(tot[ST_MERGED], 13);
	/* every survivor once, the requeued one twice */
	ck_assert_uint_eq(tot[ST_DISP], 27 - 13 + 1);
	ck_assert_int_eq(n, 27 - 13);
}
END_TEST

/* exit_sched names the counters of a level that does not balance. */
START_TEST(test_balance_warning)
{
	const char *out;

	mq_clock_fake_start(T0);
	e = new_elv();
	insert(rd(0, 100));
	insert(mkrq(1, MQ_OP_READ, 300, 8, MQ_PRIO_RT));
	finish(expect_sector(300));
	expect_sector(100);		/* dispatched, never finished */
	out = free_capturing_stderr(e);
	e = NULL;
	ck_assert_ptr_nonnull(strstr(out, "BE"));
	ck_assert_ptr_nonnull(strstr(out, "inserted 1"));
	ck_assert_ptr_nonnull(strstr(out, "dispatched 1"));
	ck_assert_ptr_nonnull(strstr(out, "completed 0"));
	ck_assert_ptr_null(strstr(out, "RT"));
}
END_TEST

static TCase *tc(Suite *s, const char *name, const TTest *t, int loops)
{
	TCase *c = tcase_create(name);

	tcase_add_checked_fixture(c, setup, teardown);
	if (loops)
		tcase_add_loop_test(c, t, 0, loops);
	else
		tcase_add_test(c, t);
	suite_add_tcase(s, c);
	return c;
}

static Suite *deadline_suite(void)
{
	Suite *s = suite_create("mq-deadline");
	TCase *c;

	tc(s, "sector_order", test_sector_order, 0);
	tc(s, "batch_latest_pos", test_batch_latest_pos, 0);
	c = tc(s, "fifo_batch", test_fifo_batch_no_expiry, 0);
	tcase_add_test(c, test_fifo_batch_expiry);
	tc(s, "expire", test_expire, (int)MQ_ARRAY_SIZE(expire_cases));
	tc(s, "writes_starved", test_writes_starved,
	   (int)MQ_ARRAY_SIZE(starved_cases));
	tc(s, "at_head", test_at_head, 0);
	tc(s, "front_merge", test_front_merge, 2);
	tc(s, "back_merge", test_back_merge, 0);
	tc(s, "merge_neighbours", test_merge_neighbours, 0);
	tc(s, "insert_merge", test_insert_merge, 0);
	c = tc(s, "priority", test_prio_order, 0);
	tcase_add_test(c, test_prio_aging);
	tcase_add_test(c, test_idle_depth);
	tc(s, "limit_depth", test_limit_depth, 0);
	tc(s, "tunables", test_tunables, 0);
	tc(s, "balance", test_balance, 0);
	c = tcase_create("balance_warning");
	tcase_add_test(c, test_balance_warning);
	suite_add_tcase(s, c);
	return s;
}

T_MAIN(deadline_suite)
