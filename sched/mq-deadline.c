/* SPDX-License-Identifier: MIT */
/*
 * mq-deadline.c - the deadline I/O scheduler with I/O priority levels,
 * restating the behaviour of the Linux kernel's block/mq-deadline.c.
 *
 * Requests are kept per priority level (RT, BE, IDLE; NONE is served as
 * BE).  Within a level every queued request sits on two structures per
 * direction: a sort tree keyed by start sector and a FIFO ordered by
 * arrival, each entry carrying a soft deadline.  Dispatch runs batches of
 * up to fifo_batch requests in ascending sector order, continuing from the
 * last dispatched position of the direction (a lower-bound lookup, so
 * requests inserted behind a running batch are picked up correctly).  Only
 * when a batch ends or the sorted scan runs dry are the direction
 * (writes_starved) and the FIFO deadline re-examined.  A lower priority is
 * served only when no higher priority has requests queued or in flight,
 * unless a request of it has waited longer than prio_aging_expire.
 *
 * The core takes e->lock around every op that says "lock held"; nothing
 * here locks, except mq_dd_stats() which is not an op.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include "mqfs/elevator.h"
#include "merge.h"

#define DD_NS_PER_MS		1000000ll

/* Index of the per-priority state; the order is the service order. */
enum dd_prio {
	DD_RT_PRIO = 0,
	DD_BE_PRIO,
	DD_IDLE_PRIO,
	DD_PRIO_COUNT
};

static const char *const dd_prio_name[DD_PRIO_COUNT] = { "RT", "BE", "IDLE" };

/*
 * Balance counters.  completed is bumped by finish_request, which runs
 * without the elevator lock, hence atomic; the others change under it.
 */
struct dd_stats {
	uint64_t inserted;
	uint64_t merged;
	uint64_t dispatched;
	_Atomic uint64_t completed;
};

struct dd_per_prio {
	struct mq_list_head dispatch;		/* at-head inserts, served first */
	struct mq_rb_root sort_list[MQ_DIR_COUNT];	/* by start sector */
	struct mq_list_head fifo_list[MQ_DIR_COUNT];	/* by arrival */
	uint64_t latest_pos[MQ_DIR_COUNT];	/* start of last dispatched */
	struct dd_stats stats;
};

/*
 * Tunables are int64_t because the core's generic attribute code reads and
 * writes them as such; times are kept in nanoseconds, shown in ms.
 */
struct deadline_data {
	struct dd_per_prio per_prio[DD_PRIO_COUNT];
	enum mq_dir last_dir;		/* direction of the running batch */
	int64_t batching;		/* requests dispatched in this batch */
	int64_t starved;		/* times reads won while writes waited */

	int64_t fifo_expire[MQ_DIR_COUNT];
	int64_t fifo_batch;
	int64_t writes_starved;
	int64_t front_merges;
	int64_t async_depth;
	int64_t prio_aging_expire;
	int64_t idle_depth;		/* IDLE in flight while others run */
	uint64_t others_ns;		/* last RT or BE insert */
	unsigned nr_requests;		/* scheduler tags, for async_depth */
};

/* How long after an RT or BE request IDLE stays held to idle_depth. */
#define DD_IDLE_RECENT_NS	(10 * DD_NS_PER_MS)

/* Statistics export for tests and debug output (not an op). */
void mq_dd_stats(struct mq_elevator *e, uint64_t out[3][4]);

/* Wrap-safe clock comparisons, as the kernel's time_after() on jiffies. */
static bool dd_time_after(uint64_t a, uint64_t b)
{
	return (int64_t)(b - a) < 0;
}

static bool dd_time_after_eq(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) >= 0;
}

static enum dd_prio dd_class_prio(uint8_t prio_class)
{
	switch (prio_class) {
	case MQ_PRIO_RT:
		return DD_RT_PRIO;
	case MQ_PRIO_IDLE:
		return DD_IDLE_PRIO;
	default:			/* NONE and BE */
		return DD_BE_PRIO;
	}
}

static struct dd_per_prio *dd_rq_per_prio(struct deadline_data *dd,
					  const struct mq_request *rq)
{
	return &dd->per_prio[dd_class_prio(rq->prio_class)];
}

/* Requests inserted and not yet completed: queued *or in flight*. */
static uint64_t dd_queued(struct deadline_data *dd, enum dd_prio prio)
{
	struct dd_stats *st = &dd->per_prio[prio].stats;

	return st->inserted - atomic_load_explicit(&st->completed,
						   memory_order_relaxed);
}

/* ---- sort tree and FIFO helpers ------------------------------------- */

/* Equal start sectors go to the right, so ties keep arrival order. */
static void deadline_add_rq_rb(struct dd_per_prio *pp, struct mq_request *rq)
{
	struct mq_rb_root *root = &pp->sort_list[mq_rq_dir(rq)];
	struct mq_rb_node **link = &root->node, *parent = NULL;

	while (*link) {
		struct mq_request *cur = mq_rb_entry(*link, struct mq_request,
						     rb_node);

		parent = *link;
		link = rq->sector < cur->sector ? &parent->left : &parent->right;
	}
	mq_rb_link_node(&rq->rb_node, parent, link);
	mq_rb_insert_color(&rq->rb_node, root);
}

/* Clear after erasing: merges test tree membership with node_empty. */
static void deadline_del_rq_rb(struct dd_per_prio *pp, struct mq_request *rq)
{
	if (mq_rb_node_empty(&rq->rb_node))
		return;
	mq_rb_erase(&rq->rb_node, &pp->sort_list[mq_rq_dir(rq)]);
	mq_rb_clear_node(&rq->rb_node);
}

/*
 * First request (leftmost among equals) starting at or after @pos.  This
 * lower bound, not a cached "next" pointer, is what lets a batch pick up
 * requests inserted after it started.
 */
static struct mq_request *deadline_from_pos(struct dd_per_prio *pp,
					    enum mq_dir dir, uint64_t pos)
{
	struct mq_rb_node *n = pp->sort_list[dir].node;
	struct mq_request *res = NULL;

	while (n) {
		struct mq_request *rq = mq_rb_entry(n, struct mq_request,
						    rb_node);

		if (rq->sector >= pos) {
			res = rq;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return res;
}

static struct mq_request *deadline_fifo_head(struct dd_per_prio *pp,
					     enum mq_dir dir)
{
	if (mq_list_empty(&pp->fifo_list[dir]))
		return NULL;
	return mq_list_first_entry(&pp->fifo_list[dir], struct mq_request,
				   queuelist);
}

/* Has the oldest request of @dir reached its deadline?  FIFO non-empty. */
static bool deadline_fifo_expired(struct dd_per_prio *pp, enum mq_dir dir,
				  uint64_t now)
{
	return dd_time_after_eq(now, deadline_fifo_head(pp, dir)->fifo_time);
}

/* Forget @rq everywhere: FIFO or dispatch list, sort tree, merge state. */
static void deadline_remove_request(struct mq_elevator *e,
				    struct dd_per_prio *pp,
				    struct mq_request *rq)
{
	mq_list_del_init(&rq->queuelist);
	deadline_del_rq_rb(pp, rq);
	mq_elv_remove_request(e, rq);
}

/* ---- dispatch -------------------------------------------------------- */

/*
 * Insert time of @rq, recovered from its deadline, is later than
 * @latest_start: too young for an aged dispatch.
 */
static bool dd_started_after(struct deadline_data *dd,
			     const struct mq_request *rq, uint64_t latest_start)
{
	uint64_t start = rq->fifo_time -
			 (uint64_t)dd->fifo_expire[mq_rq_dir(rq)];

	return dd_time_after(start, latest_start);
}

/*
 * Pick the direction of a new batch.  Reads win unless writes are waiting
 * and reads have already won writes_starved times in a row.
 */
static bool dd_choose_dir(struct deadline_data *dd, struct dd_per_prio *pp,
			  enum mq_dir *dir)
{
	bool reads = !mq_list_empty(&pp->fifo_list[MQ_DIR_READ]);
	bool writes = !mq_list_empty(&pp->fifo_list[MQ_DIR_WRITE]);

	if (reads && !(writes && dd->starved++ >= dd->writes_starved)) {
		*dir = MQ_DIR_READ;
		return true;
	}
	if (!writes)
		return false;
	dd->starved = 0;
	*dir = MQ_DIR_WRITE;
	return true;
}

/*
 * Start a new batch: continue in sector order from the last position of
 * the chosen direction, unless the oldest request has expired or nothing
 * lies above that position; then restart from the FIFO head.
 */
static struct mq_request *dd_start_batch(struct deadline_data *dd,
					 struct dd_per_prio *pp, uint64_t now)
{
	struct mq_request *rq;
	enum mq_dir dir;

	if (!dd_choose_dir(dd, pp, &dir))
		return NULL;
	rq = deadline_from_pos(pp, dir, pp->latest_pos[dir]);
	if (!rq || deadline_fifo_expired(pp, dir, now))
		rq = deadline_fifo_head(pp, dir);
	dd->last_dir = dir;
	dd->batching = 0;
	return rq;
}

/* @rq leaves the scheduler: remember where the direction stands. */
static struct mq_request *dd_mark_dispatched(struct mq_elevator *e,
					     struct dd_per_prio *pp,
					     struct mq_request *rq)
{
	deadline_remove_request(e, pp, rq);
	pp->latest_pos[mq_rq_dir(rq)] = rq->sector;
	pp->stats.dispatched++;
	rq->rq_flags |= MQ_RQF_STARTED;
	return rq;
}

/*
 * One request of priority level @pp, or NULL.  Requests inserted after
 * @latest_start are refused (aged dispatch passes now - prio_aging_expire,
 * normal dispatch passes now).  Deadlines are checked against @now only
 * when a batch ends or the sorted scan runs dry.
 */
static struct mq_request *dd_dispatch_from_prio(struct mq_elevator *e,
						struct dd_per_prio *pp,
						uint64_t now,
						uint64_t latest_start)
{
	struct deadline_data *dd = e->data;
	struct mq_request *rq;

	if (!mq_list_empty(&pp->dispatch)) {
		rq = mq_list_first_entry(&pp->dispatch, struct mq_request,
					 queuelist);
		if (dd_started_after(dd, rq, latest_start))
			return NULL;
		return dd_mark_dispatched(e, pp, rq);
	}
	rq = deadline_from_pos(pp, dd->last_dir, pp->latest_pos[dd->last_dir]);
	if (!rq || dd->batching >= dd->fifo_batch) {
		rq = dd_start_batch(dd, pp, now);
		if (!rq)
			return NULL;
	}
	if (dd_started_after(dd, rq, latest_start))
		return NULL;
	dd->batching++;
	return dd_mark_dispatched(e, pp, rq);
}

/*
 * When at least two levels hold requests, let BE and IDLE requests that
 * have waited prio_aging_expire go first, so RT cannot starve them.
 */
static struct mq_request *dd_dispatch_prio_aged(struct mq_elevator *e,
						uint64_t now)
{
	struct deadline_data *dd = e->data;
	uint64_t latest_start = now - (uint64_t)dd->prio_aging_expire;
	int busy = 0;

	for (int prio = 0; prio < DD_PRIO_COUNT; prio++)
		busy += dd_queued(dd, prio) > 0;
	if (busy < 2)
		return NULL;
	for (int prio = DD_BE_PRIO; prio < DD_PRIO_COUNT; prio++) {
		struct mq_request *rq;

		rq = dd_dispatch_from_prio(e, &dd->per_prio[prio], now,
					   latest_start);
		if (rq)
			return rq;
	}
	return NULL;
}

/*
 * IDLE may go now, but RT or BE requests came within DD_IDLE_RECENT_NS
 * (a reader between two requests): keep at most idle_depth IDLE
 * requests at the device, so the next one waits behind little.  Not
 * the kernel's: its idle class may fill the device in such a gap, and
 * the reader then waits for all of it (DESIGN.md §9).
 */
static bool dd_idle_held(struct deadline_data *dd, uint64_t now)
{
	const struct dd_stats *st = &dd->per_prio[DD_IDLE_PRIO].stats;
	uint64_t owned = st->dispatched + st->merged -
			 atomic_load_explicit(&st->completed,
					      memory_order_relaxed);

	return dd->idle_depth && now - dd->others_ns < DD_IDLE_RECENT_NS &&
	       owned >= (uint64_t)dd->idle_depth;
}

/*
 * A level with anything queued or in flight blocks the levels below it:
 * an in-flight RT request keeps BE waiting even with RT's lists empty.
 */
static struct mq_request *dd_dispatch_request(struct mq_elevator *e)
{
	struct deadline_data *dd = e->data;
	uint64_t now = mq_clock_coarse_ns();
	struct mq_request *rq = dd_dispatch_prio_aged(e, now);

	if (rq)
		return rq;
	for (int prio = 0; prio < DD_PRIO_COUNT; prio++) {
		if (prio == DD_IDLE_PRIO && dd_idle_held(dd, now))
			break;
		rq = dd_dispatch_from_prio(e, &dd->per_prio[prio], now, now);
		if (rq || dd_queued(dd, prio))
			break;
	}
	return rq;
}

/* Racy by design (no lock): a stale answer only delays or repeats a run. */
static bool dd_list_busy(const struct mq_list_head *h)
{
	return __atomic_load_n(&h->next, __ATOMIC_RELAXED) != h;
}

static bool dd_has_work(struct mq_elevator *e)
{
	struct deadline_data *dd = e->data;

	for (int prio = 0; prio < DD_PRIO_COUNT; prio++) {
		struct dd_per_prio *pp = &dd->per_prio[prio];

		if (dd_list_busy(&pp->dispatch) ||
		    dd_list_busy(&pp->fifo_list[MQ_DIR_READ]) ||
		    dd_list_busy(&pp->fifo_list[MQ_DIR_WRITE]))
			return true;
	}
	return false;
}

/* ---- insert ---------------------------------------------------------- */

static void dd_insert_request(struct mq_elevator *e, struct mq_request *rq,
			      bool at_head, struct mq_list_head *free)
{
	struct deadline_data *dd = e->data;
	struct dd_per_prio *pp = dd_rq_per_prio(dd, rq);
	enum mq_dir dir = mq_rq_dir(rq);
	uint64_t now = mq_clock_coarse_ns();

	/* Merge code tests membership; links may be stale from reuse. */
	mq_rb_clear_node(&rq->rb_node);
	mq_hlist_node_init(&rq->hash);
	/* A requeued request comes back: count it only the first time. */
	if (!(rq->rq_flags & MQ_RQF_ELVPRIV)) {
		rq->rq_flags |= MQ_RQF_ELVPRIV;
		pp->stats.inserted++;
	}
	if (pp != &dd->per_prio[DD_IDLE_PRIO])
		dd->others_ns = now;
	if (mq_elv_attempt_insert_merge(e, rq)) {
		mq_list_add_tail(&rq->queuelist, free);
		return;
	}
	if (at_head) {
		/* Head of the list: the latest at-head insert goes first. */
		mq_list_add(&rq->queuelist, &pp->dispatch);
		rq->fifo_time = now;
		return;
	}
	deadline_add_rq_rb(pp, rq);
	if (mq_rq_mergeable(rq))
		mq_elv_rqhash_add(e, rq);
	rq->fifo_time = now + (uint64_t)dd->fifo_expire[dir];
	mq_list_add_tail(&rq->queuelist, &pp->fifo_list[dir]);
}

static void dd_insert_requests(struct mq_elevator *e, struct mq_list_head *list,
			       bool at_head, struct mq_list_head *free)
{
	while (!mq_list_empty(list)) {
		struct mq_request *rq = mq_list_first_entry(list,
							     struct mq_request,
							     queuelist);

		mq_list_del_init(&rq->queuelist);
		dd_insert_request(e, rq, at_head, free);
	}
}

/* ---- merge hooks ----------------------------------------------------- */

/*
 * Front merge: a queued request of the bio's level and direction starting
 * where the bio ends.  Among equal start sectors take the first one the
 * merge rules accept (the kernel stops at any equal node).
 */
static enum mq_elv_merge dd_request_merge(struct mq_elevator *e,
					  struct mq_request **out,
					  const struct mq_bio *bio)
{
	struct deadline_data *dd = e->data;
	struct dd_per_prio *pp = &dd->per_prio[dd_class_prio(bio->prio_class)];
	struct mq_merge_limits lim = { .max_bytes = e->max_rq_bytes,
				       .max_segs = e->max_segs };
	uint64_t end = mq_bio_end_sector(bio);
	struct mq_request *rq;

	if (!dd->front_merges)
		return MQ_ELV_NO_MERGE;
	rq = deadline_from_pos(pp, mq_op_dir(bio->op), end);
	while (rq && rq->sector == end) {
		struct mq_rb_node *n;

		if (mq_rq_try_merge(rq, bio, &lim) == MQ_ELV_FRONT_MERGE) {
			*out = rq;
			return MQ_ELV_FRONT_MERGE;
		}
		n = mq_rb_next(&rq->rb_node);
		rq = n ? mq_rb_entry(n, struct mq_request, rb_node) : NULL;
	}
	return MQ_ELV_NO_MERGE;
}

/* A front merge moved the start sector: re-key the sort tree. */
static void dd_request_merged(struct mq_elevator *e, struct mq_request *rq,
			      enum mq_elv_merge type)
{
	struct dd_per_prio *pp = dd_rq_per_prio(e->data, rq);

	if (type != MQ_ELV_FRONT_MERGE || mq_rb_node_empty(&rq->rb_node))
		return;
	deadline_del_rq_rb(pp, rq);
	deadline_add_rq_rb(pp, rq);
}

/*
 * @next was absorbed into @rq.  @rq inherits the earlier deadline and
 * next's FIFO slot, so merging never delays the older I/O.  @next may
 * never have been inserted (insert-time merge): removal checks membership.
 */
static void dd_requests_merged(struct mq_elevator *e, struct mq_request *rq,
			       struct mq_request *next)
{
	struct dd_per_prio *pp = dd_rq_per_prio(e->data, next);

	pp->stats.merged++;
	if (!mq_list_empty(&rq->queuelist) &&
	    !mq_list_empty(&next->queuelist) &&
	    dd_time_after(rq->fifo_time, next->fifo_time)) {
		mq_list_del_init(&rq->queuelist);
		mq_list_add(&rq->queuelist, &next->queuelist);
		rq->fifo_time = next->fifo_time;
	}
	deadline_remove_request(e, pp, next);
}

static struct mq_request *dd_rb_neighbour(struct mq_request *rq, bool prev)
{
	struct mq_rb_node *n;

	if (mq_rb_node_empty(&rq->rb_node))
		return NULL;
	n = prev ? mq_rb_prev(&rq->rb_node) : mq_rb_next(&rq->rb_node);
	return n ? mq_rb_entry(n, struct mq_request, rb_node) : NULL;
}

static struct mq_request *dd_former_request(struct mq_elevator *e,
					    struct mq_request *rq)
{
	return dd_rb_neighbour(rq, true);
}

static struct mq_request *dd_latter_request(struct mq_elevator *e,
					    struct mq_request *rq)
{
	return dd_rb_neighbour(rq, false);
}

/* ---- request life cycle, depth --------------------------------------- */

static void dd_prepare_request(struct mq_elevator *e, struct mq_request *rq)
{
	rq->elv_priv[0] = NULL;
	rq->elv_priv[1] = NULL;
	mq_rb_clear_node(&rq->rb_node);
}

/* Only requests that went through insert were counted as inserted. */
static void dd_finish_request(struct mq_elevator *e, struct mq_request *rq)
{
	struct dd_per_prio *pp = dd_rq_per_prio(e->data, rq);

	if (rq->rq_flags & MQ_RQF_ELVPRIV)
		atomic_fetch_add_explicit(&pp->stats.completed, 1,
					  memory_order_relaxed);
}

/*
 * Sync reads are never throttled; writes and async I/O get at most
 * async_depth tags so they cannot starve reads of scheduler tags.
 */
static void dd_limit_depth(struct mq_elevator *e, struct mq_alloc_data *d)
{
	struct deadline_data *dd = e->data;
	/* Unlocked: a tunable store may race; relaxed atomics on both sides. */
	int64_t depth = __atomic_load_n(&dd->async_depth, __ATOMIC_RELAXED);

	if (d->op == MQ_OP_READ)
		return;
	if (depth < (int64_t)dd->nr_requests)
		d->shallow_depth = (unsigned)depth;
}

static void dd_depth_updated(struct mq_elevator *e, unsigned nr_requests)
{
	struct deadline_data *dd = e->data;

	dd->nr_requests = nr_requests;
	dd->async_depth = nr_requests;
}

/* ---- init / exit ----------------------------------------------------- */

static int dd_init_sched(struct mq_elevator *e, unsigned nr_requests)
{
	struct deadline_data *dd = calloc(1, sizeof(*dd));

	if (!dd)
		return -ENOMEM;
	for (int prio = 0; prio < DD_PRIO_COUNT; prio++) {
		struct dd_per_prio *pp = &dd->per_prio[prio];

		mq_list_init(&pp->dispatch);
		for (int dir = 0; dir < MQ_DIR_COUNT; dir++) {
			mq_list_init(&pp->fifo_list[dir]);
			pp->sort_list[dir] = (struct mq_rb_root)MQ_RB_ROOT_INIT;
		}
	}
	dd->last_dir = MQ_DIR_WRITE;
	dd->fifo_expire[MQ_DIR_READ] = 500 * DD_NS_PER_MS;
	dd->fifo_expire[MQ_DIR_WRITE] = 5000 * DD_NS_PER_MS;
	dd->writes_starved = 2;
	dd->front_merges = 1;
	dd->fifo_batch = 16;
	dd->prio_aging_expire = 10000 * DD_NS_PER_MS;
	dd->idle_depth = 1;
	dd->nr_requests = nr_requests;
	dd->async_depth = nr_requests;
	e->data = dd;
	return 0;
}

/* Leftovers mean a lost request or a missed finish_request: say which. */
static void dd_exit_sched(struct mq_elevator *e)
{
	struct deadline_data *dd = e->data;

	for (int prio = 0; prio < DD_PRIO_COUNT; prio++) {
		struct dd_per_prio *pp = &dd->per_prio[prio];
		struct dd_stats *st = &pp->stats;
		uint64_t completed = atomic_load(&st->completed);

		if (!mq_list_empty(&pp->dispatch) ||
		    !mq_list_empty(&pp->fifo_list[MQ_DIR_READ]) ||
		    !mq_list_empty(&pp->fifo_list[MQ_DIR_WRITE]))
			fprintf(stderr, "mq-deadline: %s: requests still queued at exit\n",
				dd_prio_name[prio]);
		if (st->inserted != completed)
			fprintf(stderr, "mq-deadline: %s: unbalanced at exit: inserted %" PRIu64
				" merged %" PRIu64 " dispatched %" PRIu64
				" completed %" PRIu64 "\n", dd_prio_name[prio],
				st->inserted, st->merged, st->dispatched,
				completed);
	}
	free(dd);
	e->data = NULL;
}

void mq_dd_stats(struct mq_elevator *e, uint64_t out[3][4])
{
	struct deadline_data *dd = e->data;

	pthread_mutex_lock(&e->lock);
	for (int prio = 0; prio < DD_PRIO_COUNT; prio++) {
		struct dd_stats *st = &dd->per_prio[prio].stats;

		out[prio][0] = st->inserted;
		out[prio][1] = st->merged;
		out[prio][2] = st->dispatched;
		out[prio][3] = atomic_load(&st->completed);
	}
	pthread_mutex_unlock(&e->lock);
}

static void dd_prio_stats(struct mq_elevator *e, struct mq_prio_stats *sum)
{
	uint64_t st[DD_PRIO_COUNT][4];

	mq_dd_stats(e, st);
	for (int prio = 0; prio < DD_PRIO_COUNT; prio++) {
		sum->level[prio].inserted += st[prio][0];
		sum->level[prio].merged += st[prio][1];
		sum->level[prio].dispatched += st[prio][2];
		sum->level[prio].completed += st[prio][3];
	}
}

/* ---- registration ---------------------------------------------------- */

#define DD_ATTR(n, field, lo, hi, sc, h)				\
	{ .name = (n), .offset = offsetof(struct deadline_data, field),	\
	  .min = (lo), .max = (hi), .scale = (sc), .help = (h) }

static const struct mq_elv_attr dd_attrs[] = {
	DD_ATTR("read_expire", fifo_expire[MQ_DIR_READ], 0, INT_MAX,
		DD_NS_PER_MS, "soft deadline of a read, ms"),
	DD_ATTR("write_expire", fifo_expire[MQ_DIR_WRITE], 0, INT_MAX,
		DD_NS_PER_MS, "soft deadline of a write, ms"),
	DD_ATTR("writes_starved", writes_starved, INT_MIN, INT_MAX, 1,
		"read batches allowed while writes wait"),
	DD_ATTR("front_merges", front_merges, 0, 1, 1,
		"look up front merges in the sort tree"),
	DD_ATTR("fifo_batch", fifo_batch, 0, INT_MAX, 1,
		"requests per batch before deadlines are checked"),
	DD_ATTR("async_depth", async_depth, 1, INT_MAX, 1,
		"tags available to writes and async I/O"),
	DD_ATTR("prio_aging_expire", prio_aging_expire, 0, INT_MAX,
		DD_NS_PER_MS, "wait after which lower priorities go first, ms"),
	DD_ATTR("idle_depth", idle_depth, 0, INT_MAX, 1,
		"idle-class requests at the device while others run (0: any)"),
};

static const struct mq_elevator_ops dd_ops = {
	.init_sched		= dd_init_sched,
	.exit_sched		= dd_exit_sched,
	.limit_depth		= dd_limit_depth,
	.depth_updated		= dd_depth_updated,
	.insert_requests	= dd_insert_requests,
	.dispatch_request	= dd_dispatch_request,
	.has_work		= dd_has_work,
	.request_merge		= dd_request_merge,
	.request_merged		= dd_request_merged,
	.requests_merged	= dd_requests_merged,
	.former_request		= dd_former_request,
	.latter_request		= dd_latter_request,
	.prepare_request	= dd_prepare_request,
	.finish_request		= dd_finish_request,
	.prio_stats		= dd_prio_stats,
};

const struct mq_elevator_type mq_elv_deadline = {
	.name		= "mq-deadline",
	.alias		= "deadline",
	.ops		= &dd_ops,
	.attrs		= dd_attrs,
	.nr_attrs	= MQ_ARRAY_SIZE(dd_attrs),
};
